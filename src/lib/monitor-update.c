/* `sbx update`: a running sandbox's limits (its cgroup, and under runsc what
 * sbx shows gVisor) and lifetimes (the monitor's timers) changed at once.
 * Every value is checked first, with create's bounds (sbx-limits.h), and a
 * memory limit below what the sandbox uses now is refused with the figure:
 * a refused update changes nothing. */
#include "config.h"
#include "monitor-internal.h"
#include "priority.h"

#include <errno.h>
#include <math.h>
#include <string.h>

int
mon_update_parse (yajl_val req, struct mon_update *u, sbx_error **err)
{
  static const char *const keys[] = { "op", "cpu", "memory", "pids", "keep_warm", "timeout", "priority", NULL };
  if (j_check_keys (req, keys, "update request", err) < 0)
    return -1;
  yajl_val cpu = j_get (req, "cpu");
  if (cpu)
    {
      if (!YAJL_IS_NUMBER (cpu) || !isfinite (YAJL_GET_DOUBLE (cpu)))
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "update: cpu must be a number");
      u->has_cpu = true;
      u->cpu = YAJL_GET_DOUBLE (cpu);
    }
  int64_t mem = -1;
  u->pids = u->keep_warm = u->timeout = u->priority = INT64_MIN;
  if (j_get_int (req, "memory", false, &mem, err) < 0 || j_get_int (req, "pids", false, &u->pids, err) < 0
      || j_get_int (req, "keep_warm", false, &u->keep_warm, err) < 0
      || j_get_int (req, "timeout", false, &u->timeout, err) < 0
      || j_get_int (req, "priority", false, &u->priority, err) < 0)
    return -1;
  if (j_get (req, "memory"))
    {
      if (mem < 0)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "update: memory must not be negative");
      u->has_memory = true;
      u->memory = (uint64_t) mem;
    }
  u->has_pids = u->pids != INT64_MIN;
  u->has_keep_warm = u->keep_warm != INT64_MIN;
  u->has_timeout = u->timeout != INT64_MIN;
  u->has_priority = u->priority != INT64_MIN;
  if (!u->has_cpu && !u->has_memory && !u->has_pids && !u->has_keep_warm && !u->has_timeout && !u->has_priority)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "update: nothing to change (--cpu, --memory, --pids, --keep-warm, --timeout or --priority)");
  if (u->has_priority && (u->priority < 0 || u->priority > 9))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "update: priority %lld is not between 0 and 9",
                          (long long) u->priority);
  return 0;
}

/* The checks, before anything changes: create's bounds on the values as
 * they will be, what the runtime can change, and the memory in use. */
int
mon_update_check (struct mon *m, const struct mon_update *u, sbx_error **err)
{
  const sbx_sandbox_opts *o = &m->sb->opts;
  if (sbx_limits_validate (u->has_cpu ? u->cpu : o->cpu, u->has_memory ? u->memory : o->memory,
                           u->has_pids ? u->pids : o->pids, err)
          < 0
      || sbx_lifetimes_validate (u->has_keep_warm ? u->keep_warm : o->keep_warm,
                                 u->has_timeout ? u->timeout : o->timeout, err)
             < 0)
    return sbx_error_wrap (err, "update");
  if (u->has_pids && u->pids == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "update: --pids must be between %d and %d", SBX_PIDS_MIN,
                          SBX_PIDS_MAX);
  /* gVisor's process limit is the RLIMIT_NPROC its init started with
   * (spec.c), which nothing outside can change. */
  if (u->has_pids && u->pids != o->pids && m->rt->own_cgroups)
    return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0,
                          "update: --pids cannot change under runsc: gVisor's process limit (RLIMIT_NPROC inside the "
                          "sandbox) is fixed when it starts; runc sandboxes can change it");
  if (u->has_memory && u->memory > 0)
    {
      sbx_cgroup_stats cs;
      sbx_cgroup_stats_read (m->cgroup, &cs);
      if (cs.memory_current > 0 && u->memory < (uint64_t) cs.memory_current)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                              "update: memory limit %llu bytes (%.1f MiB) is below the %lld bytes (%.1f MiB) the "
                              "sandbox uses now",
                              (unsigned long long) u->memory, (double) u->memory / 1048576.0,
                              (long long) cs.memory_current, (double) cs.memory_current / 1048576.0);
    }
  return 0;
}

/* The host pids limit as prepare_runtime sets it (runc: the limit itself). */
static int64_t
host_pids (int64_t pids)
{
  return pids > 0 ? pids : SBX_PIDS_DEFAULT;
}

/* The cgroup's limits; what was changed is put back when a later one fails. */
int
mon_update_limits (struct mon *m, const struct mon_update *u, sbx_error **err)
{
  sbx_sandbox_opts *o = &m->sb->opts;
  bool mem = u->has_memory && u->memory != o->memory, cpu = u->has_cpu && u->cpu != o->cpu,
       pids = u->has_pids && u->pids != o->pids;
  if (mem && sbx_cgroup_set_memory (m->cgroup, o->memory, u->memory, err) < 0)
    {
      /* The use grew past it since the check, and the kernel could not
       * reclaim the difference (v1). */
      if (err && *err && (*err)->errnum == EBUSY)
        {
          sbx_error_free (*err);
          *err = NULL;
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                                "update: memory limit %llu bytes is below what the sandbox uses now (the kernel could "
                                "not reclaim the difference)",
                                (unsigned long long) u->memory);
        }
      return sbx_error_wrap (err, "update: memory limit");
    }
  if (cpu && sbx_cgroup_set_cpu (m->cgroup, u->cpu, err) < 0)
    {
      if (mem)
        sbx_cgroup_set_memory (m->cgroup, u->memory, o->memory, NULL);
      return sbx_error_wrap (err, "update: cpu limit");
    }
  if (pids && sbx_cgroup_set_pids (m->cgroup, host_pids (u->pids), err) < 0)
    {
      if (mem)
        sbx_cgroup_set_memory (m->cgroup, u->memory, o->memory, NULL);
      if (cpu)
        sbx_cgroup_set_cpu (m->cgroup, o->cpu, NULL);
      return sbx_error_wrap (err, "update: process limit");
    }
  if (mem && m->rt->own_cgroups)
    {
      _cleanup_error_ sbx_error *e = NULL;
      if (mon_runsc_meminfo_update (m, u->memory, &e) < 0)
        mon_log (m, "update: gVisor's meminfo: %s", e->msg);
    }
  if (mem)
    {
      o->memory = u->memory;
      o->memory_default = false;
    }
  if (cpu)
    {
      o->cpu = u->cpu;
      o->cpu_default = false;
    }
  if (pids)
    {
      o->pids = u->pids;
      m->pids_host_limit = host_pids (u->pids);
    }
  return 0;
}

/* Lifetimes: --keep-warm counts from the last activity (this request is
 * one), --timeout from now, as `sbx ttl` does. */
void
mon_update_lifetimes (struct mon *m, const struct mon_update *u)
{
  if (u->has_keep_warm)
    m->sb->opts.keep_warm = u->keep_warm;
  if (u->has_timeout)
    {
      m->sb->opts.timeout = u->timeout;
      mon_set_deadline (m, u->timeout);
    }
}

static void
reply_update (struct mon *m, struct client *c)
{
  const sbx_sandbox_opts *o = &m->sb->opts;
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_str (g, "cpu");
  j_double (g, o->cpu);
  j_kint (g, "memory", (long long) o->memory);
  j_kint (g, "pids", o->pids);
  j_kint (g, "keep_warm", o->keep_warm);
  j_kint (g, "timeout", o->timeout);
  j_kint (g, "priority", o->priority);
  j_kint (g, "deadline", m->sb->deadline);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  mon_reply_json (c, s);
}

/* --priority: the CPU weight and the oom_score_adj of every process now
 * (priority.h); first, as what is put back if a limit fails. */
static int
apply_priority (struct mon *m, struct mon_update *u, sbx_error **err)
{
  u->old_priority = m->sb->opts.priority;
  if (!u->has_priority || u->priority == u->old_priority)
    return 0;
  if (sbx_priority_update (m->cgroup, u->priority, err) < 0)
    {
      sbx_priority_update (m->cgroup, u->old_priority, NULL);
      return sbx_error_wrap (err, "update: priority");
    }
  m->sb->opts.priority = u->priority;
  return 0;
}

void
mon_handle_update (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  _cleanup_error_ sbx_error *err = NULL;
  struct mon_update u = { .has_cpu = false };
  if (mon_update_parse (req, &u, &err) < 0 || mon_update_check (m, &u, &err) < 0 || apply_priority (m, &u, &err) < 0)
    {
      mon_reply_error (c, err->code, err->msg);
      return;
    }
  if (mon_update_limits (m, &u, &err) < 0)
    {
      if (u.has_priority && u.priority != u.old_priority)
        {
          sbx_priority_update (m->cgroup, u.old_priority, NULL);
          m->sb->opts.priority = u.old_priority;
        }
      mon_reply_error (c, err->code, err->msg);
      return;
    }
  mon_update_lifetimes (m, &u);
  mon_save_state (m);
  mon_log (m, "updated: cpu %g, memory %llu, pids %lld, keep-warm %lld s, timeout %lld s, priority %lld",
           m->sb->opts.cpu, (unsigned long long) m->sb->opts.memory, (long long) m->sb->opts.pids,
           (long long) m->sb->opts.keep_warm, (long long) m->sb->opts.timeout, (long long) m->sb->opts.priority);
  reply_update (m, c);
  c->closing = true;
}
