/* Unit tests for sbx_openat2, the one openat2 wrapper: the RESOLVE_* flags
 * sbx relies on, on a temporary tree with the links an untrusted tree can
 * hold (absolute, escaping with `..`, through /proc), the flags it adds,
 * and ENOSYS where the kernel has no openat2 (simulated with seccomp in a
 * child). */
#include "config.h"
#include "tap.h"
#include "openat.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char tmp[] = "/tmp/sbx-test-openat-XXXXXX";
static int root = -1;

static bool
same_file (int fd, const char *rel)
{
  struct stat a, b;
  return fd >= 0 && fstat (fd, &a) == 0 && fstatat (root, rel, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev
         && a.st_ino == b.st_ino;
}

/* Opens REL under ROOT with RESOLVE; the fd (closed) and errno. */
static int
try_open (const char *rel, int flags, uint64_t resolve, int *ret_errno, bool *ret_is_file)
{
  errno = 0;
  int fd = sbx_openat2 (root, rel, flags, 0, resolve);
  *ret_errno = fd < 0 ? errno : 0;
  if (ret_is_file)
    *ret_is_file = same_file (fd, "dir/file");
  if (fd >= 0)
    close (fd);
  return fd;
}

static void
make_tree (void)
{
  if (mkdtemp (tmp) == NULL)
    abort ();
  root = open (tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0 || mkdirat (root, "dir", 0755) < 0)
    abort ();
  int f = openat (root, "dir/file", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (f < 0)
    abort ();
  close (f);
  if (symlinkat ("/dir/file", root, "abs") < 0 || symlinkat ("../../../../../..", root, "up") < 0
      || symlinkat ("dir/file", root, "rel") < 0 || symlinkat ("/proc/self/root", root, "magic") < 0)
    abort ();
}

static void
test_in_root (void)
{
  int e;
  bool is;
  tap_ok (try_open ("abs", O_RDONLY, RESOLVE_IN_ROOT, &e, &is) >= 0 && is,
          "IN_ROOT: an absolute symlink resolves inside the root");
  tap_ok (try_open ("up/dir/file", O_RDONLY, RESOLVE_IN_ROOT, &e, &is) >= 0 && is,
          "IN_ROOT: a symlink climbing out with .. stops at the root");
  tap_ok (try_open ("../../../dir/file", O_RDONLY, RESOLVE_IN_ROOT, &e, &is) >= 0 && is,
          "IN_ROOT: a path climbing out with .. stops at the root");
  tap_ok (try_open ("/dir/file", O_RDONLY, RESOLVE_IN_ROOT, &e, &is) >= 0 && is,
          "IN_ROOT: an absolute path is taken from the root");
  tap_ok (try_open ("abs", O_RDONLY | O_NOFOLLOW, RESOLVE_IN_ROOT, &e, NULL) < 0 && e == ELOOP,
          "IN_ROOT with O_NOFOLLOW: a final symlink is ELOOP");
  tap_ok (try_open ("nothing/here", O_RDONLY, RESOLVE_IN_ROOT, &e, NULL) < 0 && e == ENOENT,
          "IN_ROOT: a missing path is ENOENT");
}

static void
test_beneath (void)
{
  int e;
  bool is;
  tap_ok (try_open ("rel", O_RDONLY, RESOLVE_BENEATH, &e, &is) >= 0 && is,
          "BENEATH: a relative symlink inside is followed");
  tap_ok (try_open ("abs", O_RDONLY, RESOLVE_BENEATH, &e, NULL) < 0 && e == EXDEV,
          "BENEATH: an absolute symlink is EXDEV");
  tap_ok (try_open ("up/dir/file", O_RDONLY, RESOLVE_BENEATH, &e, NULL) < 0 && e == EXDEV,
          "BENEATH: a symlink climbing out is EXDEV");
  tap_ok (try_open ("../x", O_RDONLY, RESOLVE_BENEATH, &e, NULL) < 0 && e == EXDEV,
          "BENEATH: a .. out of the directory is EXDEV");
  tap_ok (try_open ("dir/../dir/file", O_RDONLY, RESOLVE_BENEATH, &e, &is) >= 0 && is,
          "BENEATH: a .. that stays inside is allowed");
  tap_ok (try_open ("rel", O_RDONLY, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, &e, NULL) < 0 && e == ELOOP,
          "NO_SYMLINKS: any symlink is ELOOP");
}

static void
test_magiclinks_xdev (void)
{
  int e;
  errno = 0;
  int fd = sbx_openat2 (AT_FDCWD, "/proc/self/root/etc", O_PATH, 0, RESOLVE_NO_MAGICLINKS);
  e = errno;
  if (fd >= 0)
    close (fd);
  tap_ok (fd < 0 && e == ELOOP, "NO_MAGICLINKS: /proc/self/root is ELOOP (errno %d)", e);
  /* A plain symlink to a magic link: the magic link is still refused. */
  tap_ok (try_open ("magic", O_PATH, RESOLVE_NO_MAGICLINKS, &e, NULL) < 0 && e == ELOOP,
          "NO_MAGICLINKS: a symlink to a magic link is ELOOP");
  fd = sbx_openat2 (AT_FDCWD, "/proc/self", O_PATH, 0, RESOLVE_NO_XDEV);
  e = errno;
  if (fd >= 0)
    close (fd);
  tap_ok (fd < 0 && e == EXDEV, "NO_XDEV: crossing into /proc is EXDEV");
  tap_ok (try_open ("dir/file", O_RDONLY, RESOLVE_NO_XDEV | RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, &e, NULL) >= 0,
          "NO_XDEV: the same mount is fine");
}

static void
test_flags (void)
{
  int fd = sbx_openat2 (root, "dir/file", O_RDONLY, 0, RESOLVE_IN_ROOT);
  int fl = fd >= 0 ? fcntl (fd, F_GETFD) : -1;
  tap_ok (fd >= 0 && (fl & FD_CLOEXEC), "O_CLOEXEC is added");
  if (fd >= 0)
    close (fd);
  mode_t old = umask (0);
  fd = sbx_openat2 (root, "dir/new", O_WRONLY | O_CREAT | O_EXCL, 0640, RESOLVE_IN_ROOT);
  umask (old);
  struct stat st;
  tap_ok (fd >= 0 && fstat (fd, &st) == 0 && (st.st_mode & 07777) == 0640, "O_CREAT takes MODE");
  if (fd >= 0)
    close (fd);
  fd = sbx_openat2 (root, "dir/new", O_WRONLY | O_CREAT | O_EXCL, 0640, RESOLVE_IN_ROOT);
  tap_ok (fd < 0 && errno == EEXIST, "O_EXCL on an existing file is EEXIST");
  tap_ok (sbx_have_openat2 (), "sbx_have_openat2 where openat2 works");
}

/* Where the kernel has no openat2 (ENOSYS through seccomp in a child):
 * -1 with ENOSYS, no retry loop, and sbx_have_openat2 says no. */
static void
test_enosys (void)
{
  pid_t pid = fork ();
  if (pid == 0)
    {
      scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ALLOW);
      if (ctx == NULL || seccomp_rule_add (ctx, SCMP_ACT_ERRNO (ENOSYS), SCMP_SYS (openat2), 0) < 0
          || seccomp_load (ctx) < 0)
        _exit (3);
      /* A new process: sbx_have_openat2's answer is not cached yet there
       * (the parent asks only after this child has run). */
      int fd = sbx_openat2 (root, "dir/file", O_RDONLY, 0, RESOLVE_IN_ROOT);
      if (fd >= 0 || errno != ENOSYS)
        _exit (1);
      _exit (sbx_have_openat2 () ? 2 : 0);
    }
  int status = -1;
  waitpid (pid, &status, 0);
  tap_ok (WIFEXITED (status) && WEXITSTATUS (status) == 0,
          "ENOSYS is passed up and sbx_have_openat2 is false (status %d)",
          WIFEXITED (status) ? WEXITSTATUS (status) : -1);
}

int
main (void)
{
  int probe = sbx_openat2 (AT_FDCWD, "/", O_PATH, 0, RESOLVE_IN_ROOT);
  if (probe < 0 && errno == ENOSYS)
    tap_skip_all ("this kernel has no openat2 (Linux < 5.6)");
  close (probe);
  make_tree ();
  tap_plan (21);
  test_in_root ();
  test_beneath ();
  test_magiclinks_xdev ();
  test_enosys ();
  test_flags ();
  rm_rf (tmp, NULL);
  return tap_done ();
}
