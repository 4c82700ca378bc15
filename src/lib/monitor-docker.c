/* --docker in the monitor: dockerd started inside the sandbox as the last
 * step of the setup but the initial command, and waited for until its API
 * answers (`docker version` inside), so that a create that returns has a
 * Docker that works from `sbx exec`, and one whose dockerd cannot start
 * fails with dockerd's own last lines. Which runtime may have it, and with
 * what, is docker.c's. */
#include "config.h"
#include "docker.h"
#include "monitor-internal.h"
#include "util.h"

#include <string.h>

/* dockerd's output, the last lines of it, into the sandbox's log: a failed
 * create shows that log in its error. */
static void
log_dockerd_tail (struct mon *m, uint32_t chan)
{
  struct proc *pr = mon_proc_by_chan (m, chan);
  if (pr == NULL)
    return;
  _cleanup_free_ char *buf = xmalloc (pr->log.cap + 1);
  char tail[4096];
  size_t tl = 0;
  uint64_t off = 0;
  uint8_t type;
  ssize_t n;
  while ((n = sbx_ring_read (&pr->log, &off, &type, buf, pr->log.cap)) >= 0)
    {
      size_t k = (size_t) n > sizeof tail ? sizeof tail : (size_t) n;
      if (tl + k > sizeof tail)
        {
          memmove (tail, tail + (tl + k - sizeof tail), sizeof tail - k);
          tl = sizeof tail - k;
        }
      memcpy (tail + tl, buf + (size_t) n - k, k);
      tl += k;
    }
  /* Whole lines, one log line each: the first, cut, is dropped. */
  char *p = memchr (tail, '\n', tl), *end = tail + tl;
  p = p && tl == sizeof tail ? p + 1 : tail;
  mon_log (m, "dockerd's last output:");
  while (p < end)
    {
      char *nl = memchr (p, '\n', (size_t) (end - p));
      size_t len = nl ? (size_t) (nl - p) : (size_t) (end - p);
      if (len > 0)
        mon_log (m, "dockerd: %.*s", (int) len, p);
      p += len + 1;
    }
}

int
mon_docker_start (struct mon *m, sbx_error **err)
{
  if (!m->sb->opts.docker || m->sb->restore_from)
    return 0;
  _cleanup_strv_ char **argv = sbx_docker_daemon_argv (m->rt->name);
  struct mon_exec x = { .argv = argv, .flags = SBX_EXEC_F_DETACH };
  uint32_t chan, probe;
  if (mon_exec_start (m, &x, &chan, err) < 0)
    return -1;
  if (mon_wait_chan (m, chan, false, "dockerd", HELLO_TIMEOUT_MS, err) < 0)
    {
      if ((*err)->code == SBX_E_NOT_FOUND)
        {
          sbx_error_free (*err);
          *err = NULL;
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                                "the image has no dockerd: build one from a blueprint with {\"with_docker\": true} "
                                "(sbx-blueprint(5))");
        }
      return -1;
    }
  struct proc *pr = mon_proc_by_chan (m, chan);
  _cleanup_free_ char *script = sbx_docker_probe_script (pr->pid);
  char *pargv[] = { (char *) "/bin/sh", (char *) "-c", script, NULL };
  struct mon_exec px = { .argv = pargv, .flags = SBX_EXEC_F_DETACH, .timeout_ms = SBX_DOCKER_START_TIMEOUT_MS };
  if (mon_exec_start (m, &px, &probe, err) < 0
      || mon_wait_chan (m, probe, true, "the wait for dockerd", SBX_DOCKER_START_TIMEOUT_MS + HELLO_TIMEOUT_MS, err)
             < 0)
    return -1;
  pr = mon_proc_by_chan (m, probe);
  int32_t code = pr->exit_code;
  if (code == 0)
    {
      mon_log (m, "dockerd answers (pid %u)", mon_proc_by_chan (m, chan)->pid);
      return 0;
    }
  log_dockerd_tail (m, chan);
  if (code == 124)
    return sbx_error_set (err, SBX_E_TIMEOUT, 0, "dockerd did not answer within %d s",
                          SBX_DOCKER_START_TIMEOUT_MS / 1000);
  if (code == SBX_DOCKER_PROBE_NO_CLIENT)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "the image has dockerd but no docker client: build it from a blueprint with "
                          "{\"with_docker\": true} (sbx-blueprint(5))");
  return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0, "dockerd exited before its API answered under %s",
                        m->rt->name);
}
