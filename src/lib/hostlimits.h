/* The host's limits that bound how many idle sandboxes fit (sbx info):
 * each with the host's value, what one idle sandbox takes of it under
 * each runtime, and so how many sandboxes it allows. sbx raises none of
 * them: they are the host's settings, reported for its owner to raise. */
#ifndef SBX_HOSTLIMITS_H
#define SBX_HOSTLIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"

/* Host tasks (processes and threads) of one idle sandbox, its monitor
 * included, as bench-density.sh counts them: runc's is sbx-init alone,
 * runsc's its sandbox and gofer processes and their threads (Debian's
 * 2022 runsc, ptrace platform, measured on the development machine). */
#define SBX_TASKS_RUNC 2
#define SBX_TASKS_RUNSC 37

typedef struct sbx_host_limit {
  const char *name;    /* pid_max, threads_max, address_pool */
  const char *what;    /* where it comes from */
  int64_t value;       /* -1: unknown */
  int64_t runc, runsc; /* sandboxes it allows under each; -1: unknown */
} sbx_host_limit;

#define SBX_HOST_LIMITS_MAX 3

/* The limits into RET (SBX_HOST_LIMITS_MAX); CONF NULL: no address pool. */
size_t sbx_host_limits_probe (const sbx_conf *conf, sbx_host_limit *ret);
/* How many sandboxes a host value allows at PER each: VALUE / PER. */
int64_t sbx_host_limit_allows (int64_t value, int64_t per);

#endif
