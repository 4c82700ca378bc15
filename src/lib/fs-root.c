/* The root the file API works in (fs.h): a running sandbox's merged root
 * comes from its monitor as an fd; an ended one's is mounted here, in a
 * private mount namespace of the calling process, under the sandbox's fs
 * lock (shared and read-only for callers that only read, exclusive for the
 * ones that write: `sbx rm` takes it too). */
#include "config.h"
#include "fs.h"
#include "client.h"
#include "sandbox.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <unistd.h>

int
sbx_fs_root_running (const sbx_store *st, const char *id, int *ret, sbx_error **err)
{
  _cleanup_close_ int fd = -1;
  if (sbx_client_rootfd (st, id, &fd, err) < 0)
    return -1;
  /* Its record says the ids its files have on the host (userns.h). */
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (sbx_sandbox_load (st, id, &sb, err) < 0)
    return -1;
  sbx_fs_set_userns ((uint32_t) sb->userns_base);
  *ret = steal_fd (&fd);
  return 0;
}

int
sbx_fs_root (const sbx_store *st, const char *id, bool write, int *ret, sbx_error **err)
{
  sbx_error *e = NULL;
  if (sbx_fs_root_running (st, id, ret, &e) == 0)
    return 0;
  if (e->code != SBX_E_SANDBOX_NOT_RUNNING)
    {
      *err = e;
      return -1;
    }
  sbx_error_free (e);
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (sbx_sandbox_get (st, id, &sb, err) < 0)
    return -1;
  if (!sbx_state_is_final (sb->state))
    return sbx_error_set (err, SBX_E_SANDBOX_NOT_RUNNING, 0, "sandbox %s is %s", id, sbx_state_name (sb->state));
  _cleanup_free_ char *lockp = sbx_store_path (st, "sandboxes/%s/fs.lock", id);
  int lock = lock_path (lockp, write ? LOCK_EX : LOCK_SH, err);
  if (lock < 0)
    return -1;
  /* The lock fd stays open (not CLOEXEC-closed before exit) for the call's life. */
  _cleanup_close_ int cwd = open (".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (unshare (CLONE_NEWNS) < 0 || mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return sbx_error_errno (err, errno, "a private mount namespace");
  sbx_fs_set_userns ((uint32_t) sb->userns_base);
  int r = sbx_sandbox_mount_root (st, sb, !write, err);
  if (cwd >= 0 && fchdir (cwd) < 0)
    r = r < 0 ? r : sbx_error_errno (err, errno, "fchdir");
  if (r < 0)
    return sbx_error_wrap (err, "mount the files of ended sandbox %s", id);
  _cleanup_free_ char *merged = sbx_store_path (st, "sandboxes/%s/rootfs", id);
  int fd = open (merged, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open `%s`", merged);
  *ret = fd;
  return 0;
}
