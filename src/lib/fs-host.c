/* Copies between the host and a sandbox's root (fs.h): a file written
 * from an fd, a host file uploaded, a sandbox file downloaded, each
 * replacing its target atomically. */
#include "config.h"
#include "fs.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
sbx_fs_write_fd (int root, const char *path, int in, mode_t mode, bool keep_mode, uint64_t *ret_size, sbx_error **err)
{
  sbx_fs_writer w;
  if (sbx_fs_write_begin (root, path, mode, keep_mode, &w, err) < 0)
    return -1;
  if (sbx_fs_copy (in, w.fd, err) < 0)
    {
      sbx_fs_write_abort (&w);
      return sbx_error_wrap (err, "write `%s` (the old file is intact)", path);
    }
  struct stat st;
  fstat (w.fd, &st);
  if (sbx_fs_write_commit (&w, err) < 0)
    return -1;
  *ret_size = (uint64_t) st.st_size;
  return 0;
}

int
sbx_fs_upload (int root, const char *host, const char *path, char **ret_path, uint64_t *ret_size, sbx_error **err)
{
  /* Into an existing directory: under the host file's own name, as cp(1). */
  _cleanup_free_ char *inside = NULL;
  int d = -1;
  if (sbx_fs_open (root, path, O_PATH | O_DIRECTORY, true, &d, NULL) == 0)
    {
      close (d);
      _cleanup_free_ char *copy = xstrdup (host);
      size_t l = strlen (path);
      inside = xasprintf ("%s%s%s", path, l && path[l - 1] == '/' ? "" : "/", basename (copy));
    }
  else
    inside = xstrdup (path);
  _cleanup_close_ int in = open (host, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (in < 0)
    return sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, errno, "open `%s`", host);
  struct stat st;
  if (fstat (in, &st) < 0 || !S_ISREG (st.st_mode))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "upload: `%s` is not a regular file", host);
  if (sbx_fs_write_fd (root, inside, in, st.st_mode & 0777, false, ret_size, err) < 0)
    return -1;
  *ret_path = steal_pointer (&inside);
  return 0;
}

/* The host side of download: a temporary file beside HOST, renamed over it
 * once complete (a directory HOST gets the file's own name inside). */
int
sbx_fs_download (int root, const char *path, const char *host, char **ret_target, uint64_t *ret_size, sbx_error **err)
{
  struct stat st, hs;
  _cleanup_close_ int in = -1;
  if (sbx_fs_open_read (root, path, &st, &in, err) < 0)
    return -1;
  _cleanup_free_ char *target = NULL;
  if (stat (host, &hs) == 0 && S_ISDIR (hs.st_mode))
    {
      _cleanup_free_ char *copy = xstrdup (path);
      target = xasprintf ("%s/%s", host, basename (copy));
    }
  else
    target = xstrdup (host);
  _cleanup_free_ char *dcopy = xstrdup (target);
  const char *dir = dirname (dcopy);
  _cleanup_free_ char *rnd = random_hex (6);
  _cleanup_free_ char *tmp = xasprintf ("%s/.sbx-download-%s", dir, rnd);
  /* A new host file as any program makes one, 0666 less the umask: never
   * the sandbox's mode (0777, setuid, sticky: whatever it chose). */
  _cleanup_close_ int out = open (tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (out < 0)
    return sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, errno,
                          "download: create a file in `%s`", dir);
  int r = sbx_fs_copy (in, out, err);
  if (r == 0 && rename (tmp, target) < 0)
    r = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, errno, "download: rename to `%s`", target);
  if (r < 0)
    {
      unlink (tmp);
      return -1;
    }
  *ret_target = steal_pointer (&target);
  *ret_size = (uint64_t) st.st_size;
  return 0;
}
