/* --priority 0-9 (default 5): how a sandbox fares against the others when
 * the host is short of CPU or memory. Each step is a factor of sqrt(2) in
 * CPU weight, so two steps double it and priorities 8 and 2 split a busy
 * core 8:1; and each step down makes the sandbox's processes 100 points
 * likelier to be the OOM killer's choice (oom_score_adj 500 at 5, sbx's
 * value before priorities existed; 1000 at 0, 100 at 9). */
#ifndef SBX_PRIORITY_H
#define SBX_PRIORITY_H

#include <stdint.h>

#include "error.h"

/* cgroup v1 cpu.shares (1024 at 5: the kernel's default). */
uint64_t sbx_priority_cpu_shares (int64_t priority);
/* cgroup v2 cpu.weight (100 at 5: the kernel's default). */
uint64_t sbx_priority_cpu_weight (int64_t priority);
/* The oom_score_adj of the sandbox's processes. */
int sbx_priority_oom_score_adj (int64_t priority);

/* Sets REL's CPU weight (cgroup.h's REL: "/sbx-TAG/ID") for PRIORITY. */
int sbx_priority_apply_cgroup (const char *rel, int64_t priority, sbx_error **err);
/* A running sandbox's priority changed (sbx update --priority): REL's CPU
 * weight, and the oom_score_adj of every process in REL and below it (what
 * they fork from now on inherits it). */
int sbx_priority_update (const char *rel, int64_t priority, sbx_error **err);
/* Writes ADJ to /proc/self/oom_score_adj, inherited by what the caller
 * forks and execs. Async-signal-safe (a child between fork and exec);
 * -errno. */
int sbx_priority_oom_self (int adj);

#endif
