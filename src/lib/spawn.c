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

/* In the child: stdio from IO, every other fd closed, SIGPIPE as a new
 * program expects it, then the exec; 127 when any of it fails, as a shell
 * says "command not found". */
static __attribute__ ((noreturn)) void
child_exec (char *const *argv, const sbx_spawn_io *io)
{
  int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || dup2 (io->in_fd >= 0 ? io->in_fd : null, 0) < 0 || dup2 (io->out_fd >= 0 ? io->out_fd : null, 1) < 0
      || dup2 (io->err_fd >= 0 ? io->err_fd : null, 2) < 0)
    _exit (127);
  if (close_fds_except (NULL, 0) < 0)
    _exit (127);
  signal (SIGPIPE, SIG_DFL);
  if (strchr (argv[0], '/'))
    execv (argv[0], argv);
  else
    execvp (argv[0], argv);
  _exit (127);
}

int
sbx_spawn (char *const *argv, const sbx_spawn_io *io, pid_t *ret_pid, sbx_error **err)
{
  static const sbx_spawn_io none = { -1, -1, -1 };
  pid_t pid = fork ();
  if (pid < 0)
    return sbx_error_errno (err, errno, "fork `%s`", argv[0]);
  if (pid == 0)
    child_exec (argv, io ? io : &none);
  *ret_pid = pid;
  return 0;
}

int
sbx_spawn_wait (pid_t pid, int *ret_status)
{
  int status;
  while (waitpid (pid, &status, 0) < 0)
    if (errno != EINTR)
      return -errno;
  *ret_status = status;
  return 0;
}

int
sbx_exit_code (int wstatus)
{
  return WIFEXITED (wstatus) ? WEXITSTATUS (wstatus) : 128 + WTERMSIG (wstatus);
}

int
sbx_spawn_run (char *const *argv, const sbx_spawn_io *io, int *ret_status, sbx_error **err)
{
  _cleanup_pid_ pid_t pid = -1;
  if (sbx_spawn (argv, io, &pid, err) < 0)
    return -1;
  int status = 0, r = sbx_spawn_wait (pid, &status);
  if (r < 0)
    return sbx_error_errno (err, -r, "wait for `%s`", argv[0]);
  steal_pid (&pid);
  *ret_status = sbx_exit_code (status);
  return 0;
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
  _cleanup_pipe_ int op[2] = SBX_PIPE_INIT;
  _cleanup_pipe_ int ep[2] = SBX_PIPE_INIT;
  if (pipe2 (op, O_CLOEXEC) < 0 || pipe2 (ep, O_CLOEXEC) < 0)
    return sbx_error_errno (err, errno, "pipe");
  _cleanup_pid_ pid_t pid = -1;
  if (sbx_spawn (argv, &(sbx_spawn_io){ .in_fd = -1, .out_fd = op[1], .err_fd = ep[1] }, &pid, err) < 0)
    return -1;
  closep (&op[1]);
  closep (&ep[1]);
  _cleanup_free_ char *out = xmalloc0 (1), *errs = xmalloc0 (1);
  size_t olen = 0, elen = 0;
  struct pollfd pf[2] = { { op[0], POLLIN, 0 }, { ep[0], POLLIN, 0 } };
  int *ends[2] = { &op[0], &ep[0] };
  int open_fds = 2, status = 0;
  bool exited = false;
  while (open_fds > 0 || !exited)
    {
      /* A subreaper must keep reaping while it waits: runsc waits for its
       * sandbox process to die, and that process is our zombie. */
      if (poll (pf, 2, reap_all_children || open_fds == 0 ? 10 : -1) < 0 && errno != EINTR)
        return sbx_error_errno (err, errno, "read the output of `%s`", argv[0]);
      if (!exited && (reap_all_children || open_fds == 0))
        exited = reap (pid, &status);
      for (int i = 0; i < 2; i++)
        if (pf[i].fd >= 0 && (pf[i].revents & (POLLIN | POLLHUP | POLLERR))
            && drain (pf[i].fd, i == 0 ? &out : &errs, i == 0 ? &olen : &elen, max) == 0)
          {
            closep (ends[i]);
            pf[i].fd = -1;
            open_fds--;
          }
    }
  steal_pid (&pid);
  *ret_status = sbx_exit_code (status);
  if (ret_out)
    *ret_out = steal_pointer (&out);
  if (ret_err)
    *ret_err = steal_pointer (&errs);
  return 0;
}
