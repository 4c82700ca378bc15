/* Cgroups sbx's sandboxes live in: "sbx-TAG/ID" under every v1 controller
 * (or the unified tree on v2). The runtime's own cgroup is a child of it,
 * REL/ctr: made by the runtime from the spec's cgroupsPath (runc), or by
 * sbx when sbx places the runtime's processes itself (runsc, monitor.c).
 * sbx reads their counters and reaps what a crash left. */
#ifndef SBX_CGROUP_H
#define SBX_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct sbx_cgroup_stats {
  int64_t oom_kills;
  int64_t pids_limit_hits;
  int64_t memory_peak;
  int64_t memory_current;
  int64_t pids_current;
  int64_t pids_peak;
  int64_t cpu_usage_ns; /* CPU time of everything in it */
} sbx_cgroup_stats;

/* 1 or 2. */
int sbx_cgroup_version (void);
typedef struct sbx_cgroup_limits {
  uint64_t memory;      /* bytes, 0 = none */
  int64_t pids;         /* 0 = none */
  double cpu;           /* cores, 0 = none */
  bool devices;         /* v1: the standard devices only, at REL itself */
  char **extra_devices; /* with devices: also these devices.allow lines ("c 195:0 rwm"; a GPU's) */
  bool leaf;            /* make REL/ctr too, for sbx_cgroup_join */
} sbx_cgroup_limits;

/* The devices a sandbox may use: character devices MAJOR:MINOR (MINOR -1:
 * any), read, write and mknod. The spec's allow-list, and REL's under
 * runsc. */
typedef struct sbx_device {
  long major, minor;
} sbx_device;
extern const sbx_device sbx_std_devices[];
extern const size_t sbx_std_devices_n;

/* Makes REL ("/sbx-TAG/ID") in the memory, pids, cpu and cpuacct
 * hierarchies (and devices, with LIMITS->devices) with LIMITS. sbx owns
 * this cgroup and the runtime gets a child of it (REL/ctr): the limits are
 * hit, and their counters kept, here, where they outlive the runtime's own
 * cgroup (deleted with the container). */
int sbx_cgroup_create (const char *rel, const sbx_cgroup_limits *limits, sbx_error **err);
/* REL's CPU limit: CORES of CPU time per 100 ms period (0: none). */
int sbx_cgroup_set_cpu (const char *rel, double cores, sbx_error **err);
/* REL's CPU weight against its siblings: cpu.shares SHARES on v1,
 * cpu.weight WEIGHT on v2. */
int sbx_cgroup_set_cpu_weight (const char *rel, uint64_t shares, uint64_t weight, sbx_error **err);
/* REL's memory limit changed from OLD to BYTES (0: none), and memory plus
 * swap with it where the kernel counts swap (v1). A limit below what REL
 * uses fails (EBUSY) when the kernel cannot reclaim the difference. */
int sbx_cgroup_set_memory (const char *rel, uint64_t old, uint64_t bytes, sbx_error **err);
/* REL's pids.max (0: none). */
int sbx_cgroup_set_pids (const char *rel, int64_t pids, sbx_error **err);
/* The files of REL/ctr, in every hierarchy it was made in, that a
 * single-threaded process writes "0" to to move itself there (strv): on v1
 * `tasks`, as moving the calling thread alone takes no global lock (~0.3
 * ms, where a write to cgroup.procs waits for an RCU grace period: 7-15 ms
 * here); cgroup.procs on v2. */
char **sbx_cgroup_join_files (const char *rel);
/* Moves the calling process, single-threaded, into each of PROCS
 * (sbx_cgroup_join_files's). Async-signal-safe: made for a child between
 * fork and exec. -errno. */
int sbx_cgroup_join (char *const *procs);

/* REL is sbx's cgroup of a sandbox ("/sbx-TAG/ID"); the runtime's child
 * (REL/ctr), where this kernel may count the events, is read too and the
 * higher values kept. Missing files read as 0. */
void sbx_cgroup_stats_read (const char *rel, sbx_cgroup_stats *ret);
/* Kills what is left in REL's cgroups and removes them, in every
 * hierarchy. Missing cgroups are not an error. */
int sbx_cgroup_remove (const char *rel, sbx_error **err);
/* The monitor's own cgroup is REL = "/sbx-TAG/ID" SBX_CGROUP_MONITOR_SUFFIX,
 * beside its sandbox's (not in it: the sandbox's limits and counters are
 * the sandbox's alone), in the memory and pids hierarchies on v1. */
#define SBX_CGROUP_MONITOR_SUFFIX ".monitor"
/* Makes REL and moves the calling process, single-threaded, into it; the
 * parent ("/sbx-TAG") exists. *RET_BACK: what sbx_cgroup_leave needs to
 * move it back to where it was. */
int sbx_cgroup_enter (const char *rel, char ***ret_back, sbx_error **err);
/* Moves the calling process, single-threaded, back where it was, or else
 * to the hierarchy's root, and removes REL. A process still in REL (moving
 * failed, or a thread stayed) is left there, and REL with it, for sbx gc
 * to remove once it has exited. */
void sbx_cgroup_leave (const char *rel, char *const *back);
/* Names of the children of "/sbx-TAG" in any hierarchy (strv). */
char **sbx_cgroup_children (const char *parent_rel);
/* Removes "/sbx-TAG" itself when empty. */
void sbx_cgroup_remove_parent (const char *parent_rel);

#endif
