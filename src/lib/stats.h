/* What sandboxes are and use, read for the commands that report it (sbx
 * status, ls, wait, stats): a sandbox's record with its cgroup's live
 * counters folded in, every sandbox at once, the count by state, and one
 * sandbox's use now (CPU, memory, pids, disk, network). */
#ifndef SBX_STATS_H
#define SBX_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sandbox.h"
#include "store.h"

/* Sandbox ID's record; a running one's counters (oom kills, pid limit hits,
 * memory peak) read live from its cgroup. */
int sbx_sandbox_get_live (const sbx_store *st, const char *id, sbx_sandbox **ret, sbx_error **err);

/* The addresses sandbox ID's domain rules allow now, read from its
 * nftables sets: "ADDRESS NAME MILLISECONDS-LEFT" each, sorted; empty when
 * none or when they cannot be read. */
char **sbx_sandbox_domain_addrs (const char *id);

/* Every sandbox that can be read (one being removed meanwhile is left
 * out), in the store's order: *RET_N records in a NULL-terminated array
 * that sbx_sandboxes_free frees. */
int sbx_sandbox_get_all (const sbx_store *st, sbx_sandbox ***ret, size_t *ret_n, sbx_error **err);
void sbx_sandboxes_free (sbx_sandbox **v);

/* How many sandboxes are in each state. */
typedef struct sbx_state_counts {
  long n[SBX_STATE__MAX];
  long total;
} sbx_state_counts;
int sbx_sandbox_count (const sbx_store *st, sbx_state_counts *ret, sbx_error **err);

/* What one sandbox uses now. CPU time, memory and pids are known only while
 * it runs (RUNNING); the rest stays known after it ends. */
typedef struct sbx_stats {
  sbx_state state;
  bool paused;
  bool running;
  int64_t cpu_time_ns;
  int64_t memory; /* bytes now */
  int64_t pids;
  int64_t memory_peak; /* bytes, the highest seen while it ran */
  int64_t disk;        /* bytes: its disk image's use with a limit, else the files it wrote */
  int64_t disk_limit;  /* bytes, 0: none */
  int64_t net_rx_bytes;
  int64_t net_tx_bytes; /* its interfaces but loopback */
} sbx_stats;
int sbx_sandbox_stats (const sbx_store *st, const char *id, sbx_stats *ret, sbx_error **err);

/* The text of sandbox ID's log ("" when it has none yet), NUL-terminated. */
int sbx_sandbox_log_read (const sbx_store *st, const char *id, char **ret, size_t *ret_len, sbx_error **err);

#endif
