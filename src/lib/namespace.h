/* Namespaces and their quotas (issue 21): every sandbox is in one namespace
 * (--namespace, "default" when none is given), and sbx.conf may cap what a
 * namespace's live sandboxes hold together: their number, their --cpu,
 * their --memory and the GPUs their --gpu asks for (sbx.conf(5)). A create,
 * and an update that raises a limit, is admitted under ROOT/quota.lock,
 * held from the count until the new record (or the new limit) is saved,
 * so that concurrent creates cannot both take the last place. */
#ifndef SBX_NAMESPACE_H
#define SBX_NAMESPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "error.h"
#include "sandbox.h"
#include "store.h"

#define SBX_NAMESPACE_DEFAULT "default"

/* O's namespace: its --namespace, or "default". */
const char *sbx_namespace_of (const sbx_sandbox_opts *o);
/* A namespace name has a sandbox name's grammar; INVALID_ARGUMENT if not. */
int sbx_namespace_validate (const char *name, sbx_error **err);

/* How many GPUs a --gpu value asks for, from its words alone: all (every
 * /dev/nvidiaN under $SBX_DEV_ROOT or /dev), N, INDEX,INDEX... (one each),
 * a UUID (GPU-...: one), TYPE (one) or TYPE:N. NULL or "" asks for none.
 * -1 when SPEC is none of these. The GPU code resolves the devices
 * themselves; this is the count a quota charges. */
int64_t sbx_gpus_count_request (const char *spec);

/* Whether a sandbox in state S counts against its namespace's quotas: from
 * its record's making (creating) until it begins to end (terminating). */
bool sbx_state_counts_for_quota (sbx_state s);

/* What the live sandboxes of one namespace hold. An unlimited --cpu counts
 * as the host's online CPUs, an unlimited --memory as its physical memory:
 * what such a sandbox may take. */
typedef struct sbx_ns_usage {
  char *name;
  int64_t sandboxes;
  double cpu;
  uint64_t memory;
  int64_t gpus;
} sbx_ns_usage;

/* Adds what a sandbox with options O holds to U. */
void sbx_ns_usage_add (sbx_ns_usage *u, const sbx_sandbox_opts *o);
/* Every namespace that has a sandbox (any state) or a quota in CONF, with
 * what its live sandboxes hold; sorted by name. */
int sbx_ns_usage_all (const sbx_store *st, const sbx_conf *conf, sbx_ns_usage **ret, size_t *ret_n, sbx_error **err);
void sbx_ns_usage_free (sbx_ns_usage *v, size_t n);

/* Admits a sandbox with options O into its namespace: with the namespace's
 * quotas (CONF NULL: sbx.conf read now) taken with O added. OLD is NULL at
 * create; at an update it is the sandbox's record as it is, left out of
 * the count, and only the quotas that O's cpu or memory grow over OLD's are
 * checked (lowering a limit is never refused). Over one: POLICY_REFUSED
 * naming the quota and the current use. *RET_LOCK: the quota lock, held,
 * to be closed once the record says what was admitted; -1 when the
 * namespace has no quota (nothing to hold). */
int sbx_quota_admit (const sbx_store *st, const sbx_conf *conf, const sbx_sandbox_opts *o, const sbx_sandbox *old,
                     int *ret_lock, sbx_error **err);

#endif
