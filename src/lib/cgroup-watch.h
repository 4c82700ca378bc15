/* Notifications of a sandbox cgroup's limit events, so that a monitor
 * sleeps until the kernel has something to say instead of reading the
 * counters on a tick. v1: memory.oom_control through an eventfd
 * registered in cgroup.event_control (the kernel signals it on each OOM
 * in the cgroup or below). v2: memory.events and pids.events, which the
 * kernel marks POLLPRI when a count changes. v1's pids.events is never
 * notified (checked on 6.1 and 6.18): its count is read on demand. */
#ifndef SBX_CGROUP_WATCH_H
#define SBX_CGROUP_WATCH_H

#include <stddef.h>

#include "error.h"

#define SBX_CGROUP_WATCH_MAX 2

typedef struct sbx_cgroup_watch {
  int fd[SBX_CGROUP_WATCH_MAX];
  short events[SBX_CGROUP_WATCH_MAX]; /* what to poll each for */
  size_t n;
} sbx_cgroup_watch;

/* Watches REL ("/sbx-TAG/ID"): *RET's fds, each to poll for its events;
 * on failure none stays open. */
int sbx_cgroup_watch_open (const char *rel, sbx_cgroup_watch *ret, sbx_error **err);
/* Takes the notification of fd I, so that it waits for the next one. */
void sbx_cgroup_watch_ack (const sbx_cgroup_watch *w, size_t i);
void sbx_cgroup_watch_close (sbx_cgroup_watch *w);

#endif
