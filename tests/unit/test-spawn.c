/* Unit tests for spawn.c, the one fork/exec/capture helper: output and
 * status captured, output bounded, no fd of the caller reaching the
 * program, stdio redirected, and a failed fork (seccomp makes every fork
 * fail with EAGAIN, as RLIMIT_NPROC would, in a child) leaking no pipe. */
#include "config.h"
#include "tap.h"
#include "spawn.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

/* How many fds this process has open. */
static int
count_fds (void)
{
  DIR *d = opendir ("/proc/self/fd");
  int n = 0;
  for (struct dirent *de; d && (de = readdir (d));)
    n += de->d_name[0] != '.';
  if (d)
    closedir (d);
  return n;
}

static void
test_capture (void)
{
  char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) "echo out; echo err >&2; exit 3", NULL };
  _cleanup_free_ char *out = NULL, *errs = NULL;
  int status = -1, before = count_fds ();
  tap_ok (sbx_spawn_capture (argv, 4096, &out, &errs, &status, NULL) == 0 && strcmp (out, "out\n") == 0
              && strcmp (errs, "err\n") == 0 && status == 3,
          "capture: stdout, stderr and the exit status");
  tap_ok (count_fds () == before, "capture: no fd left open in the caller");
  char *sig[] = { (char *) "/bin/sh", (char *) "-c", (char *) "kill -TERM $$", NULL };
  tap_ok (sbx_spawn_capture (sig, 4096, NULL, NULL, &status, NULL) == 0 && status == 128 + SIGTERM,
          "capture: a signal is 128 + its number (%d)", status);
  char *big[] = { (char *) "/bin/sh", (char *) "-c", (char *) "head -c 100000 /dev/zero | tr '\\0' x", NULL };
  free (out);
  out = NULL;
  tap_ok (sbx_spawn_capture (big, 1000, &out, NULL, &status, NULL) == 0 && strlen (out) == 1000 && status == 0,
          "capture: output bounded by MAX, the program still runs to its end");
  char *missing[] = { (char *) "/nonexistent/sbx-test", NULL };
  tap_ok (sbx_spawn_capture (missing, 1000, NULL, NULL, &status, NULL) == 0 && status == 127,
          "capture: a program that cannot run is 127");
}

static void
test_no_inherited_fds (void)
{
  /* An fd without CLOEXEC, high: the program must not get it. */
  int fd = open ("/dev/null", O_RDONLY);
  int high = fd >= 0 ? dup2 (fd, 1000) : -1;
  char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) "ls /proc/$$/fd", NULL };
  _cleanup_free_ char *out = NULL;
  int status = -1;
  tap_ok (high == 1000 && sbx_spawn_capture (argv, 4096, &out, NULL, &status, NULL) == 0 && status == 0
              && strstr (out, "1000") == NULL && strstr (out, "2\n") != NULL,
          "the program gets stdio and none of the caller's fds");
  close (fd);
  close (high);
}

static void
test_run_io (void)
{
  char path[] = "/tmp/sbx-test-spawn-XXXXXX";
  int fd = mkostemp (path, O_CLOEXEC);
  char *argv[] = { (char *) "sh", (char *) "-c", (char *) "echo to-file; echo e >&2; exit 5", NULL };
  int status = -1;
  sbx_spawn_io io = { .in_fd = -1, .out_fd = fd, .err_fd = fd };
  int r = fd >= 0 ? sbx_spawn_run (argv, &io, &status, NULL) : -1;
  char buf[64] = "";
  ssize_t n = fd >= 0 ? pread (fd, buf, sizeof buf - 1, 0) : -1;
  tap_ok (r == 0 && status == 5 && n == 10 && strcmp (buf, "to-file\ne\n") == 0,
          "run: stdout and stderr to the caller's fd, argv[0] found in PATH, status");
  unlink (path);
  if (fd >= 0)
    close (fd);
  pid_t pid = -1;
  char *cat[] = { (char *) "/bin/cat", NULL };
  int wr = -1;
  /* stdin from /dev/null when IO is NULL: cat ends at once. */
  tap_ok (sbx_spawn (cat, NULL, &pid, NULL) == 0 && sbx_spawn_wait (pid, &wr) == 0 && WIFEXITED (wr)
              && WEXITSTATUS (wr) == 0,
          "spawn + wait: stdin from /dev/null");
}

/* Every fork fails (EAGAIN from clone, clone3, fork, vfork): the capture
 * and the run report it and leave no pipe open. */
static void
test_fork_fails (void)
{
  pid_t pid = fork ();
  if (pid == 0)
    {
      scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ALLOW);
      if (ctx == NULL)
        _exit (10);
      int sys[] = { SCMP_SYS (clone), SCMP_SYS (clone3), SCMP_SYS (fork), SCMP_SYS (vfork) };
      for (size_t i = 0; i < ARRAY_SIZE (sys); i++)
        if (sys[i] >= 0 && seccomp_rule_add (ctx, SCMP_ACT_ERRNO (EAGAIN), sys[i], 0) < 0)
          _exit (11);
      if (seccomp_load (ctx) < 0)
        _exit (12);
      int before = count_fds ();
      char *argv[] = { (char *) "/bin/true", NULL };
      sbx_error *err = NULL;
      int status = -1;
      if (sbx_spawn_capture (argv, 100, NULL, NULL, &status, &err) == 0 || err == NULL || err->errnum != EAGAIN)
        _exit (1);
      sbx_error_free (err);
      err = NULL;
      if (count_fds () != before)
        _exit (2);
      if (sbx_spawn_run (argv, NULL, &status, &err) == 0 || err == NULL || err->errnum != EAGAIN)
        _exit (3);
      sbx_error_free (err);
      _exit (count_fds () == before ? 0 : 4);
    }
  int status = -1;
  waitpid (pid, &status, 0);
  tap_ok (WIFEXITED (status) && WEXITSTATUS (status) == 0,
          "a failed fork is an error with its errno and leaks no pipe (child status %d)",
          WIFEXITED (status) ? WEXITSTATUS (status) : -1);
}

int
main (void)
{
  tap_plan (9);
  test_capture ();
  test_no_inherited_fds ();
  test_run_io ();
  test_fork_fails ();
  return tap_done ();
}
