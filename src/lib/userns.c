/* User namespaces for runc sandboxes: the leases of host id ranges under
 * SBX_USERNS_DIR (made and reaped as the network's leases are, net.c), the
 * namespaces that carry a mapping for idmapped mounts, and the host probe.
 * runc 1.1 makes no idmapped mounts itself: sbx mounts the root, the
 * volumes and the host directories already idmapped (monitor.c). */
#include "config.h"
#include "userns.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* --- namespaces and idmapped mounts -------------------------------------- */

static int
write_map (pid_t pid, const char *which, uint32_t inside, uint32_t base, uint32_t size)
{
  char path[64], line[64];
  snprintf (path, sizeof path, "/proc/%d/%s", (int) pid, which);
  int n = snprintf (line, sizeof line, "%" PRIu32 " %" PRIu32 " %" PRIu32 "\n", inside, base, size);
  _cleanup_close_ int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write (fd, line, (size_t) n) != n)
    return -errno;
  return 0;
}

/* A child unshares its user namespace, the parent maps it and keeps an fd
 * of it; the child then exits (the namespace lives on with the fd). The
 * child makes only async-signal-safe calls: the monitor has threads. */
int
sbx_userns_open (uint32_t base, uint32_t size, int *ret_fd, sbx_error **err)
{
  return sbx_userns_open_map (0, base, size, ret_fd, err);
}

int
sbx_userns_open_map (uint32_t inside, uint32_t base, uint32_t size, int *ret_fd, sbx_error **err)
{
  int ready[2], go[2];
  if (pipe2 (ready, O_CLOEXEC) < 0)
    return sbx_error_errno (err, errno, "pipe");
  if (pipe2 (go, O_CLOEXEC) < 0)
    {
      int e = errno;
      close (ready[0]);
      close (ready[1]);
      return sbx_error_errno (err, e, "pipe");
    }
  pid_t pid = fork ();
  if (pid == 0)
    {
      close (ready[0]);
      close (go[1]);
      char c = unshare (CLONE_NEWUSER) == 0 ? 'y' : 'n';
      if (write (ready[1], &c, 1) != 1)
        _exit (1);
      (void) !read (go[0], &c, 1);
      _exit (0);
    }
  close (ready[1]);
  close (go[0]);
  int e = pid < 0 ? errno : 0;
  char c = 'n';
  if (pid > 0 && read (ready[0], &c, 1) != 1)
    e = EIO;
  close (ready[0]);
  int fd = -1;
  if (pid > 0 && c != 'y' && e == 0)
    e = EPERM;
  if (e == 0)
    {
      int r = write_map (pid, "uid_map", inside, base, size);
      if (r == 0)
        r = write_map (pid, "gid_map", inside, base, size);
      char path[64];
      snprintf (path, sizeof path, "/proc/%d/ns/user", (int) pid);
      if (r == 0 && (fd = open (path, O_RDONLY | O_CLOEXEC)) < 0)
        r = -errno;
      e = -r;
    }
  close (go[1]);
  if (pid > 0)
    while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
      ;
  if (e != 0)
    return sbx_error_errno (err, e, "make a user namespace mapping %" PRIu32 "-%" PRIu32 " to %" PRIu32, inside,
                            inside + size - 1, base);
  *ret_fd = fd;
  return 0;
}

int
sbx_idmap_clone (int dirfd, const char *path, int userns_fd, uint64_t attrs, int *ret_tree, sbx_error **err)
{
  _cleanup_close_ int tree = open_tree (dirfd, path,
                                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (path[0] ? 0 : AT_EMPTY_PATH));
  if (tree < 0)
    return sbx_error_errno (err, errno, "open_tree `%s`", path);
  struct mount_attr attr = { .attr_set = attrs | MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t) userns_fd };
  if (mount_setattr (tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
    return sbx_error_errno (err, errno, "idmapped mount of `%s`", path);
  *ret_tree = steal_fd (&tree);
  return 0;
}

int
sbx_idmap_remount (const char *path, int userns_fd, sbx_error **err)
{
  _cleanup_close_ int tree = -1;
  if (sbx_idmap_clone (AT_FDCWD, path, userns_fd, 0, &tree, err) < 0)
    return -1;
  if (umount2 (path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
    return sbx_error_errno (err, errno, "unmount `%s`", path);
  if (move_mount (tree, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH) < 0)
    return sbx_error_errno (err, errno, "move_mount on `%s`", path);
  return 0;
}

int
sbx_userns_probe (const sbx_store *st, sbx_error **err)
{
  _cleanup_free_ char *max = NULL;
  if (read_file ("/proc/sys/user/max_user_namespaces", 32, &max, NULL, NULL) == 0 && strtoul (max, NULL, 10) == 0)
    return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0,
                          "runc needs a user namespace and this host allows none (user.max_user_namespaces is 0)");
  _cleanup_close_ int ns = -1;
  _cleanup_error_ sbx_error *e = NULL;
  if (sbx_userns_open (SBX_USERNS_SIZE, SBX_USERNS_SIZE, &ns, &e) < 0)
    return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, e->errnum, "runc needs a user namespace: %s", e->msg);
  /* The image layers are mounted idmapped: their filesystem must allow it. */
  _cleanup_close_ int tree = -1;
  if (sbx_idmap_clone (AT_FDCWD, st->root, ns, 0, &tree, &e) < 0)
    return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, e->errnum,
                          "runc needs idmapped mounts of the store's filesystem (%s), which this host refuses: %s",
                          st->root, e->msg);
  return 0;
}

/* --- leases -------------------------------------------------------------- */

static char *
lease_path (uint32_t base)
{
  return xasprintf ("%s/%" PRIu32, SBX_USERNS_DIR, base);
}

/* A locked temp file linked to each candidate name in turn: a lease exists
 * only locked, so that a gc can take the lock only once its monitor is
 * gone (the network's leases, net.c). */
int
sbx_userns_lease_take (const sbx_conf *conf, const sbx_store *st, const char *id, uint32_t *ret_base, int *ret_fd,
                       sbx_error **err)
{
  if (mkdir_p (SBX_USERNS_DIR, 0700, err) < 0)
    return -1;
  _cleanup_free_ char *tmp = xasprintf ("%s/.tmp-%s", SBX_USERNS_DIR, id);
  _cleanup_close_ int fd = open (tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return sbx_error_errno (err, errno, "create `%s`", tmp);
  /* The id and the store's tag: whose it is, for a person and the tests. */
  _cleanup_free_ char *text = xasprintf ("%s %s\n", id, st->tag);
  if (flock (fd, LOCK_EX | LOCK_NB) < 0 || write_all (fd, text, strlen (text)) < 0)
    {
      int e = errno;
      unlink (tmp);
      return sbx_error_errno (err, e, "lock `%s`", tmp);
    }
  uint64_t start = 0;
  for (const char *p = id; *p; p++)
    start = start * 31 + (unsigned char) *p;
  uint32_t n = conf->userns_count;
  for (uint32_t k = 0; k < n; k++)
    {
      uint32_t base = conf->userns_base + (uint32_t) ((start + k) % n) * SBX_USERNS_SIZE;
      _cleanup_free_ char *path = lease_path (base);
      if (link (tmp, path) == 0)
        {
          unlink (tmp);
          *ret_base = base;
          *ret_fd = steal_fd (&fd);
          return 0;
        }
      if (errno != EEXIST)
        {
          int e = errno;
          unlink (tmp);
          return sbx_error_errno (err, e, "link `%s`", path);
        }
    }
  unlink (tmp);
  return sbx_error_set (err, SBX_E_BUSY, 0, "no free user id range (%" PRIu32 " of %u ids each, sbx.conf userns_count)",
                        n, SBX_USERNS_SIZE);
}

void
sbx_userns_lease_release (uint32_t base, int fd)
{
  if (fd < 0)
    return;
  _cleanup_free_ char *path = lease_path (base);
  unlink (path);
  close (fd);
}

/* Removes lease NAME of directory D unless a monitor holds it: 1 when
 * removed. */
static int
reap_at (int d, const char *name)
{
  _cleanup_close_ int fd = openat (d, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 || flock (fd, LOCK_EX | LOCK_NB) < 0)
    return 0; /* its monitor lives */
  /* Still the file we locked, not a new lease made under its name since
   * we opened it. */
  struct stat a, b;
  if (fstat (fd, &a) < 0 || fstatat (d, name, &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_ino != b.st_ino)
    return 0;
  return unlinkat (d, name, 0) == 0 ? 1 : 0;
}

int
sbx_userns_gc (sbx_error **err)
{
  _cleanup_closedir_ DIR *d = opendir (SBX_USERNS_DIR);
  if (d == NULL)
    return errno == ENOENT ? 0 : sbx_error_errno (err, errno, "open `%s`", SBX_USERNS_DIR);
  int reaped = 0;
  struct dirent *e;
  while ((e = readdir (d)) != NULL)
    if (strcmp (e->d_name, ".") != 0 && strcmp (e->d_name, "..") != 0)
      reaped += reap_at (dirfd (d), e->d_name);
  return reaped;
}

void
sbx_userns_reap (uint32_t base)
{
  if (base == 0)
    return;
  _cleanup_close_ int d = open (SBX_USERNS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char name[16];
  snprintf (name, sizeof name, "%" PRIu32, base);
  if (d >= 0)
    reap_at (d, name);
}

int
sbx_userns_plan (const sbx_store *st, const char *runtime, char **ret_off, sbx_error **err)
{
  *ret_off = NULL;
  if (runtime == NULL || strcmp (runtime, "runc") != 0)
    return 0;
  sbx_error *e = NULL;
  if (sbx_userns_probe (st, &e) == 0)
    return 0;
  _cleanup_conf_ sbx_conf *conf = NULL;
  if (sbx_conf_load (NULL, &conf, err) < 0)
    {
      sbx_error_free (e);
      return -1;
    }
  if (conf->runc_userns_optional)
    {
      /* runc_userns = optional: it runs as before, and says so. */
      *ret_off = xstrdup (e->msg);
      sbx_error_free (e);
      return 0;
    }
  *err = e;
  return sbx_error_wrap (err, "--runtime runc (sbx.conf runc_userns = required)");
}
