/* Running a host program: fork, exec, and what it wrote. The one place
 * sbx starts a helper binary (a runtime, mkfs, criu, busybox, debootstrap):
 * argv as an array, never a shell string; stdin from /dev/null; every fd
 * but stdio closed before the exec. */
#include "config.h"
#include "spawn.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

static void
child_exec (char *const *argv, int out, int errfd)
{
  int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || dup2 (null, 0) < 0 || dup2 (out >= 0 ? out : null, 1) < 0 || dup2 (errfd >= 0 ? errfd : null, 2) < 0)
    _exit (127);
  close_fds_except (NULL, 0);
  signal (SIGPIPE, SIG_DFL);
  execv (argv[0], argv);
  _exit (127);
}

/* Appends what is readable on FD to *buf, bounded by MAX; returns 0 at EOF. */
static int
drain (int fd, char **buf, size_t *len, size_t max)
{
  char tmp[4096];
  ssize_t r = read (fd, tmp, sizeof tmp);
  if (r < 0)
    return errno == EINTR || errno == EAGAIN ? 1 : 0;
  if (r == 0)
    return 0;
  size_t take = *len + (size_t) r > max ? max - *len : (size_t) r;
  *buf = xrealloc (*buf, *len + take + 1);
  memcpy (*buf + *len, tmp, take);
  *len += take;
  (*buf)[*len] = '\0';
  return 1;
}

static bool reap_all_children;

void
sbx_spawn_reap_all (bool on)
{
  reap_all_children = on;
}

/* Reaps without blocking; records PID's status when it is among them. */
static bool
reap (pid_t pid, int *status)
{
  bool got = false;
  pid_t w;
  int s;
  while ((w = waitpid (reap_all_children ? -1 : pid, &s, WNOHANG)) > 0)
    if (w == pid)
      {
        *status = s;
        got = true;
      }
  return got;
}

int
sbx_spawn_capture (char *const *argv, size_t max, char **ret_out, char **ret_err, int *ret_status, sbx_error **err)
{
  int op[2], ep[2];
  if (pipe2 (op, O_CLOEXEC) < 0)
    return sbx_error_errno (err, errno, "pipe");
  if (pipe2 (ep, O_CLOEXEC) < 0)
    {
      close (op[0]);
      close (op[1]);
      return sbx_error_errno (err, errno, "pipe");
    }
  pid_t pid = fork ();
  if (pid < 0)
    return sbx_error_errno (err, errno, "fork");
  if (pid == 0)
    child_exec (argv, op[1], ep[1]);
  close (op[1]);
  close (ep[1]);
  char *out = xmalloc0 (1), *errs = xmalloc0 (1);
  size_t olen = 0, elen = 0;
  struct pollfd pf[2] = { { op[0], POLLIN, 0 }, { ep[0], POLLIN, 0 } };
  int open_fds = 2, status = 0;
  bool exited = false;
  while (open_fds > 0 || !exited)
    {
      /* A subreaper must keep reaping while it waits: runsc waits for its
       * sandbox process to die, and that process is our zombie. */
      if (poll (pf, 2, reap_all_children || open_fds == 0 ? 10 : -1) < 0 && errno != EINTR)
        break;
      if (!exited && (reap_all_children || open_fds == 0))
        exited = reap (pid, &status);
      for (int i = 0; i < 2; i++)
        if (pf[i].fd >= 0 && (pf[i].revents & (POLLIN | POLLHUP | POLLERR))
            && drain (pf[i].fd, i == 0 ? &out : &errs, i == 0 ? &olen : &elen, max) == 0)
          {
            close (pf[i].fd);
            pf[i].fd = -1;
            open_fds--;
          }
    }
  *ret_status = WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
  if (ret_out)
    *ret_out = out;
  else
    free (out);
  if (ret_err)
    *ret_err = errs;
  else
    free (errs);
  return 0;
}
