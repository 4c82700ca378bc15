/* Notifications of a sandbox cgroup's limit events (cgroup-watch.h). */
#include "config.h"
#include "cgroup-watch.h"
#include "cgroup.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define CG_ROOT "/sys/fs/cgroup"

/* v1: an eventfd the kernel signals on each OOM under REL. The
 * registration holds what it needs: oom_control's fd closes here. */
static int
watch_v1 (const char *rel, sbx_cgroup_watch *w, sbx_error **err)
{
  _cleanup_free_ char *oc = xasprintf (CG_ROOT "/memory%s/memory.oom_control", rel);
  _cleanup_free_ char *ec = xasprintf (CG_ROOT "/memory%s/cgroup.event_control", rel);
  _cleanup_close_ int ocfd = open (oc, O_RDONLY | O_CLOEXEC);
  if (ocfd < 0)
    return sbx_error_errno (err, errno, "open `%s`", oc);
  _cleanup_close_ int efd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0)
    return sbx_error_errno (err, errno, "eventfd");
  _cleanup_close_ int ecfd = open (ec, O_WRONLY | O_CLOEXEC);
  if (ecfd < 0)
    return sbx_error_errno (err, errno, "open `%s`", ec);
  char line[32];
  int len = snprintf (line, sizeof line, "%d %d", efd, ocfd);
  if (write_all (ecfd, line, (size_t) len) < 0)
    return sbx_error_errno (err, errno, "register an OOM eventfd in `%s`", ec);
  w->fd[w->n] = steal_fd (&efd);
  w->events[w->n++] = POLLIN;
  return 0;
}

/* v2: FILE under REL, read once so that POLLPRI means a change since. */
static int
watch_v2_file (const char *rel, const char *file, sbx_cgroup_watch *w, sbx_error **err)
{
  _cleanup_free_ char *path = xasprintf (CG_ROOT "%s/%s", rel, file);
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open `%s`", path);
  w->fd[w->n] = fd;
  w->events[w->n] = POLLPRI;
  sbx_cgroup_watch_ack (w, w->n++);
  return 0;
}

int
sbx_cgroup_watch_open (const char *rel, sbx_cgroup_watch *ret, sbx_error **err)
{
  sbx_cgroup_watch w = { .fd = { -1, -1 } };
  int r = sbx_cgroup_version () == 2
              ? (watch_v2_file (rel, "memory.events", &w, err) < 0 ? -1 : watch_v2_file (rel, "pids.events", &w, err))
              : watch_v1 (rel, &w, err);
  if (r < 0)
    {
      sbx_cgroup_watch_close (&w);
      return -1;
    }
  *ret = w;
  return 0;
}

void
sbx_cgroup_watch_ack (const sbx_cgroup_watch *w, size_t i)
{
  char buf[512];
  if (w->events[i] == POLLIN)
    {
      uint64_t v;
      ssize_t r = read (w->fd[i], &v, sizeof v);
      (void) r; /* EAGAIN: already taken */
      return;
    }
  /* kernfs re-arms POLLPRI once the file is read from its start. */
  if (lseek (w->fd[i], 0, SEEK_SET) == 0)
    while (read (w->fd[i], buf, sizeof buf) > 0)
      ;
}

void
sbx_cgroup_watch_close (sbx_cgroup_watch *w)
{
  for (size_t i = 0; i < w->n; i++)
    close (w->fd[i]);
  w->n = 0;
}
