/* openat2(2), with one retry policy: the kernel answers EAGAIN when a
 * rename anywhere on the system raced with a RESOLVE_IN_ROOT or
 * RESOLVE_BENEATH lookup (it cannot prove the result stayed inside), and
 * EINTR when a signal came first. Both are tried again a bounded number of
 * times, so a rename storm in a sandbox costs its own requests a BUSY error
 * and never spins the caller forever. */
#include "config.h"
#include "openat.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int
sbx_openat2 (int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve)
{
  struct open_how how = { .flags = (uint64_t) (unsigned) (flags | O_CLOEXEC), .resolve = resolve };
  if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
    how.mode = mode;
  for (int i = 0; i < SBX_OPENAT2_RETRIES; i++)
    {
      long fd = syscall (SYS_openat2, dirfd, path, &how, sizeof how);
      if (fd >= 0)
        return (int) fd;
      if (errno != EAGAIN && errno != EINTR)
        return -1;
    }
  errno = EAGAIN;
  return -1;
}

bool
sbx_have_openat2 (void)
{
  /* 0: not asked yet, 1: yes, 2: no. A race between threads asks twice and
   * gets the same answer. */
  static int have;
  int h = __atomic_load_n (&have, __ATOMIC_RELAXED);
  if (h == 0)
    {
      int fd = sbx_openat2 (AT_FDCWD, "/", O_RDONLY | O_DIRECTORY, 0, RESOLVE_IN_ROOT);
      h = fd >= 0 ? 1 : 2;
      if (fd >= 0)
        close (fd);
      __atomic_store_n (&have, h, __ATOMIC_RELAXED);
    }
  return h == 1;
}
