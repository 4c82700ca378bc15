/* Cgroups sbx's sandboxes live in: "sbx-TAG/ID" under every v1 controller
 * (or the unified tree on v2). The runtimes create them from the spec's
 * cgroupsPath; sbx reads their counters and reaps what a crash left. */
#ifndef SBX_CGROUP_H
#define SBX_CGROUP_H

#include <stdint.h>

#include "error.h"

typedef struct sbx_cgroup_stats {
  int64_t oom_kills;
  int64_t pids_limit_hits;
  int64_t memory_peak;
  int64_t memory_current;
  int64_t pids_current;
} sbx_cgroup_stats;

/* 1 or 2. */
int sbx_cgroup_version (void);
/* REL is the OCI cgroupsPath ("/sbx-TAG/ID"). Missing files read as 0. */
void sbx_cgroup_stats_read (const char *rel, sbx_cgroup_stats *ret);
/* Kills what is left in REL's cgroups and removes them, in every
 * hierarchy. Missing cgroups are not an error. */
int sbx_cgroup_remove (const char *rel, sbx_error **err);
/* Names of the children of "/sbx-TAG" in any hierarchy (strv). */
char **sbx_cgroup_children (const char *parent_rel);
/* Removes "/sbx-TAG" itself when empty. */
void sbx_cgroup_remove_parent (const char *parent_rel);

#endif
