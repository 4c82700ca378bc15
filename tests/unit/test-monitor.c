/* Unit tests of the monitor's start (src/lib/monitor.c) where no sandbox is
 * needed: when fork fails, sbx_monitor_spawn reports it and leaves no fd
 * behind (its sync pipe was leaked). fork is made to fail with EAGAIN, as
 * under a full process table, by a seccomp filter in a child process of
 * the test; the test itself keeps its own fork. No root needed. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "monitor.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <seccomp.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static int
count_fds (void)
{
  DIR *d = opendir ("/proc/self/fd");
  if (d == NULL)
    return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    if (de->d_name[0] != '.')
      n++;
  closedir (d);
  return n - 1; /* the directory's own */
}

/* In a child: fork fails; what sbx_monitor_spawn returns and leaves.
 * Exit status: 0 all well, 2 no error, 3 not the fork's error, 4 fds left. */
static int
spawn_without_fork (void)
{
  scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ALLOW);
  if (ctx == NULL || seccomp_rule_add (ctx, SCMP_ACT_ERRNO (EAGAIN), SCMP_SYS (clone), 0) < 0
      || seccomp_rule_add (ctx, SCMP_ACT_ERRNO (ENOSYS), SCMP_SYS (clone3), 0) < 0
      || seccomp_rule_add (ctx, SCMP_ACT_ERRNO (EAGAIN), SCMP_SYS (fork), 0) < 0
      || seccomp_rule_add (ctx, SCMP_ACT_ERRNO (EAGAIN), SCMP_SYS (vfork), 0) < 0 || seccomp_load (ctx) < 0)
    return 5;
  seccomp_release (ctx);
  sbx_store st = { .root = (char *) "/nonexistent", .run_root = (char *) "/nonexistent", .tag = (char *) "00000000" };
  sbx_sandbox sb = { .id = (char *) "sb-000000000001" };
  int before = count_fds ();
  sbx_error *err = NULL;
  int r = sbx_monitor_spawn (&st, &sb, -1, &err);
  int after = count_fds ();
  if (r == 0)
    return 2;
  if (err == NULL || err->errnum != EAGAIN || strstr (err->msg, "fork") == NULL)
    return 3;
  sbx_error_free (err);
  return after == before ? 0 : 4;
}

int
main (void)
{
  tap_plan (1);
  fflush (stdout);
  pid_t pid = fork ();
  if (pid < 0)
    return 1;
  if (pid == 0)
    _exit (spawn_without_fork ());
  int status = 0;
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;
  int code = WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
  tap_ok (code == 0,
          "a monitor whose fork fails is an error with the fork's errno, and leaves no fd open (status %d: "
          "2 no error, 3 wrong error, 4 fds left, 5 no seccomp)",
          code);
  return tap_done ();
}
