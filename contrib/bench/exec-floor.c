/* exec-floor: run inside a sandbox (by bench-exec-floor.sh), it times the
 * two ways an agent can start a command, N rounds, interleaved:
 *
 *   vfork     vfork + execve + waitpid, what sbx-init does for an EXEC;
 *             also split at the parent's return from vfork (the child has
 *             exec'ed) into "to exec" and "exec to reaped";
 *   prefork   a child forked ahead of the request, blocked on a pipe; the
 *             request is one byte on that pipe, then its execve + waitpid
 *             (timed); the fork ahead of it is timed apart, as it would be
 *             paid off the critical path.
 *
 * and prints the medians, in ms, as one line of NAME=VALUE. A static
 * binary with libc only, so that it runs on any rootfs. */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

extern char **environ;

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static double
median (double *v, int n)
{
  qsort (v, (size_t) n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int
reap (pid_t pid)
{
  int st;
  while (waitpid (pid, &st, 0) < 0)
    ;
  return WIFEXITED (st) && WEXITSTATUS (st) == 0 ? 0 : -1;
}

/* One vfork round: total and the time until vfork returned. */
static int
round_vfork (char **argv, double *ret_total, double *ret_to_exec)
{
  double t0 = now_ms (), t1;
  pid_t pid = vfork ();

  if (pid == 0)
    {
      execve (argv[0], argv, environ);
      _exit (127);
    }
  if (pid < 0)
    return -1;
  t1 = now_ms ();
  if (reap (pid) < 0)
    return -1;
  *ret_total = now_ms () - t0;
  *ret_to_exec = t1 - t0;
  return 0;
}

/* One prefork round: the fork ahead, a pause (the agent idle between
 * requests), then the request and the exec. */
static int
round_prefork (char **argv, double *ret_total, double *ret_ahead)
{
  int p[2];
  double t0, t1;
  pid_t pid;
  char c = 'x';

  if (pipe2 (p, O_CLOEXEC) < 0)
    return -1;
  t0 = now_ms ();
  pid = fork ();
  if (pid == 0)
    {
      if (read (p[0], &c, 1) != 1)
        _exit (126);
      execve (argv[0], argv, environ);
      _exit (127);
    }
  *ret_ahead = now_ms () - t0;
  close (p[0]);
  if (pid < 0)
    return -1;
  usleep (5000);
  t1 = now_ms ();
  if (write (p[1], &c, 1) != 1)
    return -1;
  close (p[1]);
  if (reap (pid) < 0)
    return -1;
  *ret_total = now_ms () - t1;
  return 0;
}

int
main (int argc, char **argv)
{
  double *v, *vx, *rest, *pf, *ahead;
  int n;

  if (argc < 3 || (n = atoi (argv[1])) < 1 || argv[2][0] != '/')
    {
      fprintf (stderr, "usage: exec-floor N /ABS/PROGRAM [ARG...]\n");
      return 2;
    }
  v = calloc ((size_t) n, sizeof *v);
  vx = calloc ((size_t) n, sizeof *vx);
  rest = calloc ((size_t) n, sizeof *rest);
  pf = calloc ((size_t) n, sizeof *pf);
  ahead = calloc ((size_t) n, sizeof *ahead);
  if (v == NULL || vx == NULL || rest == NULL || pf == NULL || ahead == NULL)
    return 1;
  for (int i = 0; i < n; i++)
    if (round_vfork (argv + 2, &v[i], &vx[i]) < 0 || round_prefork (argv + 2, &pf[i], &ahead[i]) < 0)
      {
        fprintf (stderr, "exec-floor: round %d: %s did not run or did not exit 0\n", i, argv[2]);
        return 1;
      }
    else
      rest[i] = v[i] - vx[i];
  printf ("n=%d vfork=%.2f vfork_to_exec=%.2f vfork_exec_to_reaped=%.2f prefork=%.2f prefork_ahead=%.2f\n", n,
          median (v, n), median (vx, n), median (rest, n), median (pf, n), median (ahead, n));
  return 0;
}
