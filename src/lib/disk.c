/* A sandbox's disk: its sparse ext4 image, the template it is copied from,
 * the loop mount (disk.h says why an image). */
#include "config.h"
#include "disk.h"
#include "runtime.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

int
sbx_disk_parse (const char *s, uint64_t *ret_bytes)
{
  uint64_t v;
  if (s && strcmp (s, "0") == 0)
    {
      *ret_bytes = 0;
      return 0;
    }
  if (parse_memory (s, &v) < 0 || v < SBX_DISK_MIN || v > SBX_DISK_MAX)
    return -EINVAL;
  *ret_bytes = v;
  return 0;
}

static const char *
mkfs_path (void)
{
  static const char *const paths[] = { "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4", "/usr/sbin/mke2fs", "/sbin/mke2fs" };
  for (size_t i = 0; i < ARRAY_SIZE (paths); i++)
    if (access (paths[i], X_OK) == 0)
      return paths[i];
  return NULL;
}

/* ROOT/disk/ext4-SIZE.img, formatted once: no journal (the writable layer
 * is volatile, as the overlay on it), no room kept for root or for online
 * growth, inode tables left to be zeroed never (mounted noinit_itable) so
 * that the image stays sparse. Made under a temporary name and renamed.
 * JOURNAL (a volume's, which outlives every sandbox):
 * ROOT/disk/ext4-journal-SIZE.img, with a journal, left unzeroed too. */
static int
template_path (const sbx_store *st, uint64_t size, bool journal, char **ret, sbx_error **err)
{
  _cleanup_free_ char *dir = sbx_store_path (st, "disk");
  _cleanup_free_ char *path = xasprintf ("%s/ext4-%s%llu.img", dir, journal ? "journal-" : "",
                                         (unsigned long long) size);
  if (access (path, R_OK) == 0)
    {
      *ret = steal_pointer (&path);
      return 0;
    }
  const char *mkfs = mkfs_path ();
  if (mkfs == NULL)
    return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0,
                          "a disk limit needs mkfs.ext4 (e2fsprogs), not found in /usr/sbin or /sbin "
                          "(or create the sandbox with --disk 0)");
  if (mkdir_p (dir, 0700, err) < 0)
    return -1;
  _cleanup_free_ char *rnd = random_hex (6);
  _cleanup_free_ char *tmp = xasprintf ("%s/.ext4-%llu.%s.img", dir, (unsigned long long) size, rnd);
  _cleanup_close_ int fd = open (tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return sbx_error_errno (err, errno, "create `%s`", tmp);
  if (ftruncate (fd, (off_t) size) < 0)
    {
      int e = errno;
      unlink (tmp);
      return sbx_error_errno (err, e, "size `%s`", tmp);
    }
  char *argv[] = { (char *) mkfs,
                   (char *) "-q",
                   (char *) "-F",
                   (char *) "-t",
                   (char *) "ext4",
                   (char *) "-O",
                   (char *) (journal ? "^resize_inode" : "^has_journal,^resize_inode"),
                   (char *) "-E",
                   (char *) (journal ? "lazy_itable_init=1,lazy_journal_init=1,nodiscard,root_owner=0:0"
                                     : "lazy_itable_init=1,nodiscard,root_owner=0:0"),
                   (char *) "-m",
                   (char *) "0",
                   (char *) "-L",
                   (char *) (journal ? "sbx-volume" : "sbx-disk"),
                   tmp,
                   NULL };
  _cleanup_free_ char *out = NULL, *errs = NULL;
  int status = -1;
  int r = sbx_spawn_capture (argv, 65536, &out, &errs, &status, err);
  if (r == 0 && status != 0)
    {
      size_t l = errs ? strlen (errs) : 0;
      while (l && errs[l - 1] == '\n')
        errs[--l] = '\0';
      r = sbx_error_set (err, SBX_E_INTERNAL, 0, "%s failed (status %d): %s", mkfs, status, errs ? errs : "");
    }
  if (r == 0 && rename (tmp, path) < 0)
    r = sbx_error_errno (err, errno, "rename `%s`", tmp);
  if (r < 0)
    {
      unlink (tmp);
      return sbx_error_wrap (err, "format a %llu-byte disk template", (unsigned long long) size);
    }
  *ret = steal_pointer (&path);
  return 0;
}

/* Copies the data of IN (the template) to OUT, leaving its holes holes. */
static int
copy_sparse (int in, int out, off_t size, sbx_error **err)
{
  if (ftruncate (out, size) < 0)
    return sbx_error_errno (err, errno, "size the disk image");
  off_t data = 0;
  while ((data = lseek (in, data, SEEK_DATA)) >= 0)
    {
      off_t hole = lseek (in, data, SEEK_HOLE);
      if (hole < 0)
        return sbx_error_errno (err, errno, "seek the disk template");
      off_t a = data, b = data;
      while (a < hole)
        {
          ssize_t n = copy_file_range (in, &a, out, &b, (size_t) (hole - a), 0);
          if (n < 0 && errno == EINTR)
            continue;
          if (n > 0)
            continue;
          if (n == 0)
            return sbx_error_set (err, SBX_E_INTERNAL, 0, "the disk template is shorter than it says");
          if (errno != EXDEV && errno != ENOSYS && errno != EOPNOTSUPP && errno != EINVAL)
            return sbx_error_errno (err, errno, "copy the disk template");
          /* Another filesystem or an old kernel: by hand. */
          char buf[65536];
          size_t want = (size_t) (hole - a) < sizeof buf ? (size_t) (hole - a) : sizeof buf;
          ssize_t got = pread (in, buf, want, a);
          if (got <= 0)
            return sbx_error_errno (err, got < 0 ? errno : EIO, "read the disk template");
          if (pwrite (out, buf, (size_t) got, b) != got)
            return sbx_error_errno (err, errno, "write the disk image");
          a += got, b += got;
        }
      data = hole;
    }
  if (errno != ENXIO)
    return sbx_error_errno (err, errno, "seek the disk template");
  return 0;
}

int
sbx_disk_make (const sbx_store *st, const char *id, uint64_t size, sbx_error **err)
{
  _cleanup_free_ char *img = sbx_store_path (st, "sandboxes/%s/disk.img", id);
  if (sbx_disk_make_image (st, img, size, false, err) < 0)
    return sbx_error_wrap (err, "make the disk of sandbox %s", id);
  return 0;
}

int
sbx_disk_make_image (const sbx_store *st, const char *img, uint64_t size, bool journal, sbx_error **err)
{
  _cleanup_free_ char *tpl = NULL;
  _cleanup_close_ int in = -1;
  /* Twice: gc may remove the template between the look and the open. */
  for (int i = 0; i < 2 && in < 0; i++)
    {
      free (steal_pointer (&tpl));
      if (template_path (st, size, journal, &tpl, err) < 0)
        return -1;
      in = open (tpl, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (in < 0 && (errno != ENOENT || i == 1))
        return sbx_error_errno (err, errno, "open `%s`", tpl);
    }
  _cleanup_close_ int out = open (img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (out < 0)
    return sbx_error_errno (err, errno, "create `%s`", img);
  if (copy_sparse (in, out, (off_t) size, err) < 0)
    {
      unlink (img);
      return -1;
    }
  return 0;
}

/* Binds FD to a free loop device that clears itself when its last user
 * goes; returns the device's fd and its path in DEV. */
static int
loop_attach (int fd, bool readonly, char *dev, size_t devlen, sbx_error **err)
{
  _cleanup_close_ int ctl = open ("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (ctl < 0)
    return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, errno,
                          "a disk limit needs loop devices: open /dev/loop-control");
  for (int tries = 0; tries < 64; tries++)
    {
      int nr = ioctl (ctl, LOOP_CTL_GET_FREE);
      if (nr < 0)
        return sbx_error_errno (err, errno, "find a free loop device");
      snprintf (dev, devlen, "/dev/loop%d", nr);
      int lfd = open (dev, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
      if (lfd < 0)
        return sbx_error_errno (err, errno, "open `%s`", dev);
      struct loop_config cfg;
      memset (&cfg, 0, sizeof cfg);
      cfg.fd = (unsigned) fd;
      /* Direct I/O to the image: the sandbox's writes are cached once, in
       * its own ext4's pages (charged to its memory cgroup), not a second
       * time in the host's cache of the image file, outside every limit.
       * With that second copy a plain volume's writes ran at 0.13-0.22 of
       * the root's (contrib/bench/bench-volume.sh, docs/performance.md).
       * The kernel falls back to buffered I/O where the image's
       * filesystem cannot do direct I/O. */
      cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO | (readonly ? LO_FLAGS_READ_ONLY : 0);
      if (ioctl (lfd, LOOP_CONFIGURE, &cfg) == 0)
        return lfd;
      int e = errno;
      close (lfd);
      /* Taken by someone else between GET_FREE and here: the next one. */
      if (e != EBUSY)
        return sbx_error_errno (err, e, "configure `%s`", dev);
    }
  return sbx_error_set (err, SBX_E_BUSY, 0, "no free loop device after 64 tries");
}

/* Mounts DEV (its fd LFD, bound to the image) at MNT. */
static int
mount_loop (int lfd, const char *dev, const char *mnt, bool readonly, sbx_error **err)
{
  if (lfd < 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "no loop device");
  if (mkdir (mnt, 0700) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", mnt);
  /* discard: what the sandbox deletes goes back to the host (holes
   * punched in the image). noinit_itable: nothing writes the unused inode
   * tables, which would fill the image's holes. */
  unsigned long flags = MS_NODEV | MS_NOSUID | (readonly ? MS_RDONLY : 0);
  if (mount (dev, mnt, "ext4", flags, readonly ? "noinit_itable" : "noinit_itable,discard") < 0)
    return sbx_error_errno (err, errno, "mount `%s` on `%s`", dev, mnt);
  /* The mount holds the device now; closing ours lets it clear with it. */
  return 0;
}

/* Mounts the image open (and locked) on IMGFD at MNT. */
static int
mount_image (int imgfd, const char *mnt, bool readonly, sbx_error **err)
{
  char dev[64];
  _cleanup_close_ int lfd = loop_attach (imgfd, readonly, dev, sizeof dev, err);
  if (lfd < 0)
    return -1;
  return mount_loop (lfd, dev, mnt, readonly, err);
}

/* Whether a loop device is bound to the image open on FD: then an ext4 of
 * it is mounted somewhere, or being unmounted (a mounter's flock goes when
 * its process's files close, before its namespace and mounts go). Its
 * path (/dev/loopN) in DEV when DEV is not NULL. */
static bool
image_loop (int fd, char *dev, size_t devlen)
{
  struct stat img;
  if (fstat (fd, &img) < 0)
    return false;
  _cleanup_closedir_ DIR *d = opendir ("/sys/block");
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    {
      if (strncmp (de->d_name, "loop", 4) != 0)
        continue;
      _cleanup_free_ char *bf = xasprintf ("/sys/block/%s/loop/backing_file", de->d_name);
      _cleanup_free_ char *path = NULL;
      size_t len = 0;
      if (read_file (bf, 8192, &path, &len, NULL) < 0)
        continue; /* not bound */
      while (len > 0 && path[len - 1] == '\n')
        path[--len] = '\0';
      struct stat s;
      if (stat (path, &s) == 0 && s.st_dev == img.st_dev && s.st_ino == img.st_ino)
        {
          size_t l = strlen (de->d_name);
          if (dev && l + 6 > devlen)
            continue;
          if (dev)
            {
              memcpy (dev, "/dev/", 5);
              memcpy (dev + 5, de->d_name, l + 1);
            }
          return true;
        }
    }
  return false;
}

static bool
image_attached (int fd)
{
  return image_loop (fd, NULL, 0);
}

#define LOCK_WAIT_MS 5000

/* The image open and flocked (shared to read, exclusive to write), and
 * bound to no loop device. WAIT: a holder may be on its way out (an ended
 * sandbox's monitor, a finished `sbx fs`): wait for it, up to 5 s. */
static int
open_locked (const char *img, bool readonly, bool wait, int *ret, sbx_error **err)
{
  _cleanup_close_ int fd = open (img, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INTERNAL, errno, "open `%s`", img);
  for (int ms = 0;; ms += 10)
    {
      if (flock (fd, (readonly ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0)
        break;
      if (errno != EWOULDBLOCK)
        return sbx_error_errno (err, errno, "lock `%s`", img);
      if (!wait || ms >= LOCK_WAIT_MS)
        return sbx_error_set (err, SBX_E_BUSY, 0, "the disk `%s` is in use elsewhere", img);
      usleep (10000);
    }
  for (int ms = 0; image_attached (fd); ms += 10)
    {
      if (!wait || ms >= LOCK_WAIT_MS)
        return sbx_error_set (err, SBX_E_BUSY, 0, "the disk `%s` is still mounted elsewhere", img);
      usleep (10000);
    }
  *ret = steal_fd (&fd);
  return 0;
}

/* The loop device bound to the image open on IMGFD, opened and checked
 * to be bound to it still (an open fd keeps it from clearing itself), its
 * path in DEV; -1 when there is none. */
static int
loop_find (int imgfd, char *dev, size_t devlen)
{
  struct stat img;
  if (fstat (imgfd, &img) < 0 || !image_loop (imgfd, dev, devlen))
    return -1;
  _cleanup_close_ int lfd = open (dev, O_RDWR | O_CLOEXEC);
  struct loop_info64 info;
  if (lfd < 0 || ioctl (lfd, LOOP_GET_STATUS64, &info) < 0 || info.lo_device != (uint64_t) img.st_dev
      || info.lo_inode != (uint64_t) img.st_ino || (info.lo_flags & LO_FLAGS_READ_ONLY))
    return -1;
  return steal_fd (&lfd);
}

int
sbx_disk_mount_shared (const char *img, const char *mnt, sbx_error **err)
{
  /* The lock on an open of its own: the loop device keeps the file it is
   * given open, and a flock lives as long as its open file does. */
  _cleanup_close_ int lock = open (img, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (lock < 0)
    return sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INTERNAL, errno, "open `%s`", img);
  while (flock (lock, LOCK_EX) < 0)
    if (errno != EINTR)
      return sbx_error_errno (err, errno, "lock `%s`", img);
  _cleanup_close_ int fd = open (img, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open `%s`", img);
  char dev[64];
  _cleanup_close_ int lfd = loop_find (fd, dev, sizeof dev);
  if (lfd < 0 && (lfd = loop_attach (fd, false, dev, sizeof dev, err)) < 0)
    return -1;
  return mount_loop (lfd, dev, mnt, false, err);
}

void
sbx_disk_attach (const sbx_store *st, const char *id, bool readonly, sbx_disk_att *a)
{
  *a = (sbx_disk_att){ .lock = -1, .loop = -1, .readonly = readonly, .done = true };
  _cleanup_free_ char *img = sbx_store_path (st, "sandboxes/%s/disk.img", id);
  if (open_locked (img, readonly, true, &a->lock, &a->err) == 0)
    a->loop = loop_attach (a->lock, readonly, a->dev, sizeof a->dev, &a->err);
}

void
sbx_disk_att_clear (sbx_disk_att *a)
{
  closep (&a->loop);
  closep (&a->lock);
  sbx_error_free (a->err);
  a->err = NULL;
  a->done = false;
}

int
sbx_disk_mount (const sbx_store *st, const char *id, bool readonly, int *ret_lock, sbx_error **err)
{
  return sbx_disk_mount_att (st, id, readonly, NULL, ret_lock, err);
}

int
sbx_disk_mount_att (const sbx_store *st, const char *id, bool readonly, sbx_disk_att *pre, int *ret_lock,
                    sbx_error **err)
{
  _cleanup_free_ char *mnt = sbx_store_path (st, "sandboxes/%s/disk", id);
  sbx_disk_att own = { .lock = -1, .loop = -1 };
  sbx_disk_att *a = pre && pre->done && pre->readonly == readonly ? pre : &own;
  if (!a->done)
    sbx_disk_attach (st, id, readonly, a);
  int r = 0;
  if (a->err)
    {
      if (err)
        *err = steal_pointer (&a->err);
      r = -1;
    }
  if (r == 0)
    r = mount_loop (a->loop, a->dev, mnt, readonly, err);
  closep (&a->loop);
  _cleanup_close_ int fd = steal_fd (&a->lock);
  sbx_disk_att_clear (a);
  if (r < 0)
    return sbx_error_wrap (err, "mount the disk of sandbox %s", id);
  if (!readonly)
    {
      static const char *const dirs[] = { "upper", "work" };
      for (size_t i = 0; i < ARRAY_SIZE (dirs); i++)
        {
          _cleanup_free_ char *p = xasprintf ("%s/%s", mnt, dirs[i]);
          if (mkdir (p, i == 0 ? 0755 : 0700) < 0 && errno != EEXIST)
            return sbx_error_errno (err, errno, "mkdir `%s`", p);
        }
    }
  *ret_lock = steal_fd (&fd);
  return 0;
}

static int
send_fd (int sock, int fd)
{
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE (sizeof (int))];
  } cm = { 0 };
  char byte = 0;
  struct iovec iov = { &byte, 1 };
  struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof cm.buf };
  struct cmsghdr *c = CMSG_FIRSTHDR (&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN (sizeof (int));
  memcpy (CMSG_DATA (c), &fd, sizeof (int));
  return sendmsg (sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

static int
recv_fd (int sock)
{
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE (sizeof (int))];
  } cm;
  char byte;
  struct iovec iov = { &byte, 1 };
  struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf, .msg_controllen = sizeof cm.buf };
  ssize_t n;
  do
    n = recvmsg (sock, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  int fd = -1;
  for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR (&msg) : NULL; c; c = CMSG_NXTHDR (&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN (sizeof (int)))
      memcpy (&fd, CMSG_DATA (c), sizeof fd);
  return fd;
}

/* What a child with a mount namespace of its own mounts and opens: the
 * fd of a directory, sent back to the parent. */
typedef int child_open_fn (void *arg, int *ret_fd, sbx_error **err);

struct upper_arg {
  const char *img_mnt;
  int imgfd;
};

/* The image (locked on IMGFD) mounted read-only, its upper directory. */
static int
open_upper_fn (void *arg, int *ret_fd, sbx_error **err)
{
  struct upper_arg *a = arg;
  if (mount_image (a->imgfd, a->img_mnt, true, err) < 0)
    return -1;
  _cleanup_free_ char *upper = xasprintf ("%s/upper", a->img_mnt);
  int fd = open (upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open `%s`", upper);
  *ret_fd = fd;
  return 0;
}

/* FN in a child with a mount namespace of its own; the fd it opens is sent
 * back. The fd outlives the namespace: the mount goes with the last fd. */
static int
open_in_child (child_open_fn *fn, void *arg, int *ret, sbx_error **err)
{
  _cleanup_pipe_ int sp[2] = SBX_PIPE_INIT;
  _cleanup_pipe_ int ep[2] = SBX_PIPE_INIT;
  if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
    return sbx_error_errno (err, errno, "socketpair");
  if (pipe2 (ep, O_CLOEXEC) < 0)
    return sbx_error_errno (err, errno, "pipe");
  _cleanup_pid_ pid_t pid = fork ();
  if (pid < 0)
    return sbx_error_errno (err, errno, "fork");
  if (pid == 0)
    {
      close (sp[0]);
      close (ep[0]);
      sbx_error *e = NULL;
      int r = 0, fd = -1;
      if (unshare (CLONE_NEWNS) < 0 || mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        r = sbx_error_errno (&e, errno, "a private mount namespace");
      if (r == 0)
        r = fn (arg, &fd, &e);
      if (r == 0 && send_fd (sp[1], fd) < 0)
        r = sbx_error_errno (&e, errno, "send the directory");
      if (r < 0)
        {
          _cleanup_free_ char *t = sbx_error_text (e);
          write_all (ep[1], t, strlen (t));
        }
      _exit (r < 0 ? 1 : 0);
    }
  closep (&sp[1]);
  closep (&ep[1]);
  int fd = recv_fd (sp[0]);
  char msg[1024];
  ssize_t n = read_all (ep[0], msg, sizeof msg - 1);
  int status;
  sbx_spawn_wait (steal_pid (&pid), &status);
  if (fd < 0)
    {
      msg[n > 0 ? n : 0] = '\0';
      return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s", n > 0 ? msg : "the disk mounter died");
    }
  *ret = fd;
  return 0;
}

struct shared_arg {
  const char *img, *mnt;
};

static int
open_shared_fn (void *arg, int *ret_fd, sbx_error **err)
{
  struct shared_arg *a = arg;
  if (sbx_disk_mount_shared (a->img, a->mnt, err) < 0)
    return -1;
  int fd = open (a->mnt, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open `%s`", a->mnt);
  *ret_fd = fd;
  return 0;
}

int
sbx_disk_open_shared (const char *img, const char *mnt, int *ret_fd, sbx_error **err)
{
  struct shared_arg a = { img, mnt };
  return open_in_child (open_shared_fn, &a, ret_fd, err);
}

int
sbx_disk_open_upper (const sbx_store *st, const sbx_sandbox *sb, int *ret_fd, int *ret_lock, sbx_error **err)
{
  if (sb->opts.disk == 0)
    {
      _cleanup_free_ char *upper = sbx_store_path (st, "sandboxes/%s/upper", sb->id);
      int fd = open (upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0)
        return sbx_error_errno (err, errno, "open `%s`", upper);
      *ret_fd = fd;
      *ret_lock = -1;
      return 0;
    }
  _cleanup_free_ char *img = sbx_store_path (st, "sandboxes/%s/disk.img", sb->id);
  _cleanup_free_ char *mnt = sbx_store_path (st, "sandboxes/%s/disk", sb->id);
  _cleanup_close_ int lock = -1;
  _cleanup_error_ sbx_error *e = NULL;
  bool running = sb->monitor_pid > 0 && sbx_sandbox_monitor_alive (st, sb->id);
  if (open_locked (img, true, !running, &lock, &e) < 0)
    {
      if (e->code != SBX_E_BUSY || !running)
        {
          *err = steal_pointer (&e);
          return sbx_error_wrap (err, "the disk of sandbox %s", sb->id);
        }
      /* Mounted by its monitor, which runs: seen from its namespace. */
      _cleanup_free_ char *p = xasprintf ("/proc/%d/root%s/upper", (int) sb->monitor_pid, mnt);
      int fd = open (p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0)
        return sbx_error_set (err, SBX_E_SANDBOX_NOT_RUNNING, errno, "open the writable layer of sandbox %s", sb->id);
      *ret_fd = fd;
      *ret_lock = -1;
      return 0;
    }
  int fd = -1;
  struct upper_arg ua = { mnt, lock };
  if (open_in_child (open_upper_fn, &ua, &fd, err) < 0)
    return sbx_error_wrap (err, "mount the disk of sandbox %s", sb->id);
  *ret_fd = fd;
  *ret_lock = steal_fd (&lock);
  return 0;
}

int64_t
sbx_disk_used (const sbx_store *st, const sbx_sandbox *sb)
{
  /* Running: its filesystem's own count, which has what is still in the
   * page cache; the image's blocks lag behind until it is written back. */
  if (sb->monitor_pid > 0 && sbx_sandbox_monitor_alive (st, sb->id))
    {
      _cleanup_free_ char *mnt = sbx_store_path (st, "sandboxes/%s/disk", sb->id);
      _cleanup_free_ char *p = xasprintf ("/proc/%d/root%s", (int) sb->monitor_pid, mnt);
      struct statvfs sv;
      if (statvfs (p, &sv) == 0 && sv.f_blocks >= sv.f_bfree && sv.f_blocks > 0)
        return (int64_t) ((sv.f_blocks - sv.f_bfree) * sv.f_frsize);
    }
  _cleanup_free_ char *img = sbx_store_path (st, "sandboxes/%s/disk.img", sb->id);
  struct stat s;
  if (stat (img, &s) < 0)
    return -1;
  return (int64_t) s.st_blocks * 512;
}

void
sbx_disk_gc (const sbx_store *st, uint64_t keep_size)
{
  _cleanup_free_ char *dir = sbx_store_path (st, "disk");
  _cleanup_free_ char *keep = xasprintf ("ext4-%llu.img", (unsigned long long) keep_size);
  _cleanup_closedir_ DIR *d = opendir (dir);
  struct dirent *de;
  int64_t now = now_unix ();
  while (d && (de = readdir (d)) != NULL)
    {
      struct stat s;
      bool tmp = strncmp (de->d_name, ".ext4-", 6) == 0;
      if ((!tmp && strncmp (de->d_name, "ext4-", 5) != 0) || strcmp (de->d_name, keep) == 0
          || fstatat (dirfd (d), de->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG (s.st_mode))
        continue;
      /* One being formatted is left its hour. */
      if (tmp && now - (int64_t) s.st_mtime < 3600)
        continue;
      unlinkat (dirfd (d), de->d_name, 0);
    }
}
