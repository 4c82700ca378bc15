/* Sandbox records: state.json, liveness by flock, names, ids. */
#include "config.h"
#include "sandbox.h"
#include "cgroup.h"
#include "disk.h"
#include "json.h"
#include "userns.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <sys/mount.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#define STATE_JSON_MAX (1 << 20)

static const char *const state_names[SBX_STATE__MAX] = {
  "creating", "running", "terminating", "terminated", "failed",
};

const char *
sbx_state_name (sbx_state s)
{
  return s < SBX_STATE__MAX ? state_names[s] : "unknown";
}

static int
state_from_name (const char *n, sbx_state *ret)
{
  for (int i = 0; i < SBX_STATE__MAX; i++)
    if (strcmp (n, state_names[i]) == 0)
      {
        *ret = (sbx_state) i;
        return 0;
      }
  return -1;
}

bool
sbx_state_is_final (sbx_state s)
{
  return s == SBX_STATE_TERMINATED || s == SBX_STATE_FAILED;
}

/* "ADDRESS NAME MS" entries as [{"address", "name", "expires_in_ms"}]. */
static void
sbx_sandbox_domain_addrs_gen (yajl_gen g, char *const *v)
{
  j_str (g, "domain_addresses");
  j_arr (g);
  for (size_t i = 0; v[i]; i++)
    {
      _cleanup_free_ char *s = xstrdup (v[i]);
      char *name = strchr (s, ' '), *ms = name ? strchr (name + 1, ' ') : NULL;
      int64_t left = 0;
      if (ms == NULL)
        continue;
      *name++ = '\0';
      *ms++ = '\0';
      parse_int64 (ms, 0, INT64_MAX, &left);
      j_map (g);
      j_kstr (g, "address", s);
      j_kstr (g, "name", name);
      j_kint (g, "expires_in_ms", left);
      j_endmap (g);
    }
  j_endarr (g);
}

void
sbx_sandbox_opts_clear (sbx_sandbox_opts *o)
{
  free (o->name);
  free (o->image_ref);
  free (o->runtime);
  strv_free (o->env);
  strv_free (o->allow);
  strv_free (o->ports);
  free (o->cwd);
  strv_free (o->volumes);
  strv_free (o->mounts);
  strv_free (o->secrets);
  strv_free (o->secret_files);
  strv_free (o->copy_in);
  strv_free (o->cmd);
  strv_free (o->allow_domains);
  free (o->gpus);
  free (o->namespace);
  free (o->pool);
  memset (o, 0, sizeof *o);
}

void
sbx_sandbox_free (sbx_sandbox *sb)
{
  if (sb == NULL)
    return;
  free (sb->id);
  sbx_sandbox_opts_clear (&sb->opts);
  free (sb->image_id);
  free (sb->restore_from);
  strv_free (sb->layers);
  strv_free (sb->image_env);
  free (sb->image_workdir);
  free (sb->userns_off);
  free (sb->reason);
  free (sb->error);
  free (sb->net_mode);
  strv_free (sb->net_allow);
  strv_free (sb->net_domains);
  strv_free (sb->net_domain_addrs);
  free (sb->net_stack);
  free (sb->net_addr4);
  free (sb->net_addr6);
  free (sb->net_gateway4);
  free (sb->net_gateway6);
  strv_free (sb->urls);
  free (sb->gpu_mode);
  strv_free (sb->gpu_list);
  strv_free (sb->gpu_env);
  free (sb);
}

char *
sbx_sandbox_dir (const sbx_store *st, const char *id)
{
  return sbx_store_path (st, "sandboxes/%s", id);
}

char *
sbx_sandbox_run_dir (const sbx_store *st, const char *id)
{
  return sbx_store_run_path (st, "sandboxes/%s", id);
}

char *
sbx_sandbox_new_id (void)
{
  _cleanup_free_ char *hex = random_hex (6);
  return xasprintf ("sb-%s", hex);
}

void
sbx_sandbox_opts_gen (void *gp, const sbx_sandbox_opts *o)
{
  yajl_gen g = gp;
  j_map (g);
  j_kstr (g, "image", o->image_ref);
  j_kstr (g, "runtime", o->runtime);
  j_str (g, "cpu");
  j_double (g, o->cpu);
  j_kbool (g, "cpu_default", o->cpu_default);
  j_kint (g, "memory", (long long) o->memory);
  j_kbool (g, "memory_default", o->memory_default);
  j_kint (g, "pids", o->pids);
  j_kint (g, "disk", o->disk);
  j_kbool (g, "block_network", o->block_network);
  j_kstrv (g, "allow", o->allow);
  j_kstrv (g, "ports", o->ports);
  j_kbool (g, "public", o->public_ports);
  j_kint (g, "keep_warm", o->keep_warm);
  j_kstr (g, "on_idle", o->on_idle_pause ? "pause" : "terminate");
  j_kint (g, "timeout", o->timeout);
  j_kstrv (g, "env", o->env);
  j_kstr (g, "cwd", o->cwd);
  j_kstrv (g, "volumes", o->volumes);
  j_kstrv (g, "mounts", o->mounts);
  /* Secrets by name only: their values are never in a record. */
  j_kstrv (g, "secrets", o->secrets);
  j_kstrv (g, "secret_files", o->secret_files);
  j_kbool (g, "allow_secrets", o->allow_secrets);
  j_kstrv (g, "copy_in", o->copy_in);
  j_kstrv (g, "cmd", o->cmd);
  j_kbool (g, "exit_with_cmd", o->exit_with_cmd);
  j_kstrv (g, "allow_domains", o->allow_domains);
  j_kstr (g, "gpus", o->gpus);
  j_kbool (g, "docker", o->docker);
  j_kstr (g, "namespace", o->namespace);
  j_kint (g, "priority", o->priority);
  j_kstr (g, "pool", o->pool);
  j_endmap (g);
}

static void
gen_record (yajl_gen g, const sbx_sandbox *sb, bool full)
{
  j_map (g);
  j_kstr (g, "id", sb->id);
  j_kstr (g, "name", sb->opts.name);
  j_kstr (g, "state", sbx_state_name (sb->state));
  j_kstr (g, "reason", sb->reason);
  j_kstr (g, "error", sb->error);
  j_str (g, "exit_code");
  if (sb->has_exit_code)
    j_int (g, sb->exit_code);
  else
    j_null (g);
  j_kstr (g, "image", sb->image_id);
  /* The view's: the namespace it is in ("options" has it as given). */
  if (!full)
    j_kstr (g, "namespace", sb->opts.namespace ? sb->opts.namespace : "default");
  j_kint (g, "created_at", sb->created_at);
  if (full)
    j_kint (g, "created_ns", sb->created_ns);
  j_kint (g, "started_at", sb->started_at);
  j_kint (g, "ended_at", sb->ended_at);
  j_kint (g, "deadline", sb->deadline);
  j_kint (g, "keep_warm_until", sb->keep_warm_until);
  j_kbool (g, "paused", sb->paused);
  j_kbool (g, "parked", sb->parked);
  j_kstr (g, "restored_from", sb->restore_from);
  j_kint (g, "chan_base", sb->chan_base);
  j_str (g, "cmd_pid");
  if (sb->cmd_pid > 0)
    j_int (g, sb->cmd_pid);
  else
    j_null (g);
  j_kint (g, "oom_kills", sb->oom_kills);
  if (full || sbx_sandbox_pids_hits_known (sb))
    j_kint (g, "pids_limit_hits", sb->pids_limit_hits);
  else
    {
      j_str (g, "pids_limit_hits");
      j_null (g);
    }
  j_kint (g, "memory_peak", sb->memory_peak);
  if (!full && sb->disk_used >= 0)
    j_kint (g, "disk_used", sb->disk_used);
  j_str (g, "user_namespace");
  if (sb->userns_base > 0)
    {
      j_map (g);
      j_kint (g, "host_id", sb->userns_base);
      j_kint (g, "size", sb->userns_size);
      j_endmap (g);
    }
  else
    j_null (g);
  if (sb->userns_off)
    j_kstr (g, "user_namespace_off", sb->userns_off);
  j_str (g, "options");
  sbx_sandbox_opts_gen (g, &sb->opts);
  j_str (g, "network");
  j_map (g);
  j_kstr (g, "mode", sb->net_mode);
  j_kstrv (g, "allow", sb->net_allow);
  j_kstrv (g, "domains", sb->net_domains);
  if (!full && sb->net_domain_addrs)
    sbx_sandbox_domain_addrs_gen (g, sb->net_domain_addrs);
  j_kstr (g, "stack", sb->net_stack);
  j_kstr (g, "address", sb->net_addr4);
  j_kstr (g, "address6", sb->net_addr6);
  j_kstr (g, "gateway", sb->net_gateway4);
  j_kstr (g, "gateway6", sb->net_gateway6);
  j_kstrv (g, "urls", sb->urls);
  j_kint (g, "private_connections_seen", sb->net_private_seen);
  j_endmap (g);
  if (sb->gpu_mode)
    {
      j_str (g, "gpus");
      j_map (g);
      j_kstr (g, "passed", sb->gpu_mode);
      j_kstrv (g, "devices", sb->gpu_list);
      j_kstrv (g, "env", sb->gpu_env);
      j_endmap (g);
    }
  if (full)
    {
      j_kint (g, "monitor_pid", sb->monitor_pid);
      j_kstrv (g, "layers", sb->layers);
      j_kstrv (g, "image_env", sb->image_env);
      j_kstr (g, "image_workdir", sb->image_workdir);
    }
  j_endmap (g);
}

bool
sbx_sandbox_pids_hits_known (const sbx_sandbox *sb)
{
  return sb->pids_limit_hits > 0 || sb->opts.runtime == NULL || strcmp (sb->opts.runtime, "runsc") != 0;
}

void
sbx_sandbox_gen (void *gp, const sbx_sandbox *sb)
{
  gen_record ((yajl_gen) gp, sb, false);
}

int
sbx_sandbox_save (const sbx_store *st, const sbx_sandbox *sb, sbx_error **err)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (true);
  gen_record (g, sb, true);
  size_t len;
  _cleanup_free_ char *doc = j_take (g, &len);
  _cleanup_free_ char *path = sbx_store_path (st, "sandboxes/%s/state.json", sb->id);
  return write_file_replace (path, doc, len, 0600, err);
}

static int
dup_str (yajl_val obj, const char *key, char **out, sbx_error **err)
{
  const char *s = NULL;
  if (j_get_str (obj, key, false, &s, err) < 0)
    return -1;
  if (s)
    *out = xstrdup (s);
  return 0;
}

int
sbx_sandbox_opts_parse (const void *obj, sbx_sandbox_opts *opts, sbx_error **err)
{
  yajl_val o = (yajl_val) obj;
  yajl_val cpu = j_get (o, "cpu");
  if (cpu && YAJL_IS_NUMBER (cpu))
    opts->cpu = YAJL_GET_DOUBLE (cpu);
  int64_t n;
  if (dup_str (o, "image", &opts->image_ref, err) < 0 || dup_str (o, "runtime", &opts->runtime, err) < 0
      || dup_str (o, "cwd", &opts->cwd, err) < 0 || j_get_strv (o, "env", false, &opts->env, err) < 0)
    return -1;
  if ((n = (int64_t) opts->memory, j_get_int (o, "memory", false, &n, err)) < 0)
    return -1;
  opts->memory = (uint64_t) n;
  if (j_get_bool (o, "cpu_default", false, &opts->cpu_default, err) < 0
      || j_get_bool (o, "memory_default", false, &opts->memory_default, err) < 0)
    return -1;
  if (j_get_int (o, "pids", false, &opts->pids, err) < 0 || j_get_int (o, "disk", false, &opts->disk, err) < 0
      || j_get_int (o, "keep_warm", false, &opts->keep_warm, err) < 0
      || j_get_int (o, "timeout", false, &opts->timeout, err) < 0
      || j_get_bool (o, "block_network", false, &opts->block_network, err) < 0
      || j_get_strv (o, "allow", false, &opts->allow, err) < 0 || j_get_strv (o, "ports", false, &opts->ports, err) < 0
      || j_get_bool (o, "public", false, &opts->public_ports, err) < 0)
    return -1;
  if (j_get_strv (o, "volumes", false, &opts->volumes, err) < 0
      || j_get_strv (o, "mounts", false, &opts->mounts, err) < 0
      || j_get_strv (o, "secrets", false, &opts->secrets, err) < 0
      || j_get_strv (o, "secret_files", false, &opts->secret_files, err) < 0
      || j_get_bool (o, "allow_secrets", false, &opts->allow_secrets, err) < 0
      || j_get_strv (o, "copy_in", false, &opts->copy_in, err) < 0 || j_get_strv (o, "cmd", false, &opts->cmd, err) < 0
      || j_get_bool (o, "exit_with_cmd", false, &opts->exit_with_cmd, err) < 0
      || j_get_strv (o, "allow_domains", false, &opts->allow_domains, err) < 0)
    return -1;
  /* A record from before --priority existed has the default. */
  opts->priority = SBX_PRIORITY_DEFAULT;
  if (dup_str (o, "gpus", &opts->gpus, err) < 0 || j_get_bool (o, "docker", false, &opts->docker, err) < 0
      || dup_str (o, "namespace", &opts->namespace, err) < 0
      || j_get_int (o, "priority", false, &opts->priority, err) < 0 || dup_str (o, "pool", &opts->pool, err) < 0)
    return -1;
  const char *on_idle = NULL;
  if (j_get_str (o, "on_idle", false, &on_idle, err) < 0)
    return -1;
  if (on_idle)
    opts->on_idle_pause = strcmp (on_idle, "pause") == 0;
  return 0;
}

static int
parse_record (yajl_val v, sbx_sandbox *sb, sbx_error **err)
{
  const char *state = NULL;
  int64_t pid = 0;
  if (j_get_str (v, "state", true, &state, err) < 0)
    return -1;
  if (state_from_name (state, &sb->state) < 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "unknown state `%s`", state);
  if (dup_str (v, "name", &sb->opts.name, err) < 0 || dup_str (v, "reason", &sb->reason, err) < 0
      || dup_str (v, "error", &sb->error, err) < 0 || dup_str (v, "image", &sb->image_id, err) < 0
      || dup_str (v, "image_workdir", &sb->image_workdir, err) < 0
      || j_get_strv (v, "layers", false, &sb->layers, err) < 0
      || j_get_strv (v, "image_env", false, &sb->image_env, err) < 0
      || j_get_int (v, "created_at", false, &sb->created_at, err) < 0
      || j_get_int (v, "created_ns", false, &sb->created_ns, err) < 0
      || j_get_int (v, "started_at", false, &sb->started_at, err) < 0
      || j_get_int (v, "ended_at", false, &sb->ended_at, err) < 0
      || j_get_int (v, "deadline", false, &sb->deadline, err) < 0
      || j_get_int (v, "keep_warm_until", false, &sb->keep_warm_until, err) < 0
      || j_get_int (v, "oom_kills", false, &sb->oom_kills, err) < 0
      || j_get_int (v, "pids_limit_hits", false, &sb->pids_limit_hits, err) < 0
      || j_get_int (v, "memory_peak", false, &sb->memory_peak, err) < 0
      || j_get_int (v, "monitor_pid", false, &pid, err) < 0 || j_get_bool (v, "paused", false, &sb->paused, err) < 0
      || j_get_bool (v, "parked", false, &sb->parked, err) < 0
      || dup_str (v, "restored_from", &sb->restore_from, err) < 0
      || j_get_int (v, "chan_base", false, &sb->chan_base, err) < 0)
    return -1;
  yajl_val cmd_pid = j_get (v, "cmd_pid");
  if (cmd_pid && YAJL_IS_INTEGER (cmd_pid) && YAJL_GET_INTEGER (cmd_pid) > 0)
    sb->cmd_pid = YAJL_GET_INTEGER (cmd_pid);
  sb->monitor_pid = (pid_t) pid;
  yajl_val code = j_get (v, "exit_code");
  if (code && YAJL_IS_INTEGER (code))
    {
      sb->has_exit_code = true;
      sb->exit_code = YAJL_GET_INTEGER (code);
    }
  yajl_val uns = j_get (v, "user_namespace");
  if (uns && YAJL_IS_OBJECT (uns)
      && (j_get_int (uns, "host_id", true, &sb->userns_base, err) < 0
          || j_get_int (uns, "size", true, &sb->userns_size, err) < 0))
    return -1;
  if (sb->userns_base < 0 || sb->userns_base > UINT32_MAX - 1 || sb->userns_size < 0 || sb->userns_size > 65536)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "invalid user_namespace");
  if (dup_str (v, "user_namespace_off", &sb->userns_off, err) < 0)
    return -1;
  yajl_val net = j_get (v, "network");
  if (net && YAJL_IS_OBJECT (net)
      && (dup_str (net, "mode", &sb->net_mode, err) < 0 || j_get_strv (net, "allow", false, &sb->net_allow, err) < 0
          || j_get_strv (net, "domains", false, &sb->net_domains, err) < 0
          || dup_str (net, "stack", &sb->net_stack, err) < 0 || dup_str (net, "address", &sb->net_addr4, err) < 0
          || dup_str (net, "address6", &sb->net_addr6, err) < 0 || dup_str (net, "gateway", &sb->net_gateway4, err) < 0
          || dup_str (net, "gateway6", &sb->net_gateway6, err) < 0
          || j_get_strv (net, "urls", false, &sb->urls, err) < 0
          || j_get_int (net, "private_connections_seen", false, &sb->net_private_seen, err) < 0))
    return -1;
  yajl_val gpus = j_get (v, "gpus");
  if (gpus && YAJL_IS_OBJECT (gpus)
      && (dup_str (gpus, "passed", &sb->gpu_mode, err) < 0
          || j_get_strv (gpus, "devices", false, &sb->gpu_list, err) < 0
          || j_get_strv (gpus, "env", false, &sb->gpu_env, err) < 0))
    return -1;
  return sbx_sandbox_opts_parse (j_get (v, "options"), &sb->opts, err);
}

int
sbx_sandbox_load (const sbx_store *st, const char *id, sbx_sandbox **ret, sbx_error **err)
{
  if (!name_is_valid (id))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid sandbox id `%s`", id);
  _cleanup_free_ char *path = sbx_store_path (st, "sandboxes/%s/state.json", id);
  _cleanup_free_ char *missing = xasprintf ("sandbox `%s` not found", id);
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (j_read_file (path, STATE_JSON_MAX, "state.json", missing, &v, err) < 0)
    return -1;
  sbx_sandbox *sb = xmalloc0 (sizeof *sb);
  sb->id = xstrdup (id);
  sb->disk_used = -1;
  if (parse_record (v, sb, err) < 0)
    {
      sbx_sandbox_free (sb);
      return sbx_error_wrap (err, "sandbox %s: state.json", id);
    }
  *ret = sb;
  return 0;
}

bool
sbx_sandbox_monitor_alive (const sbx_store *st, const char *id)
{
  _cleanup_free_ char *path = sbx_store_path (st, "sandboxes/%s/lock", id);
  _cleanup_close_ int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return false;
  if (flock (fd, LOCK_SH | LOCK_NB) < 0)
    return errno == EWOULDBLOCK;
  return false;
}

int
sbx_sandbox_get (const sbx_store *st, const char *id, sbx_sandbox **ret, sbx_error **err)
{
  sbx_sandbox *sb = NULL;
  if (sbx_sandbox_load (st, id, &sb, err) < 0)
    return -1;
  if (!sbx_state_is_final (sb->state) && !sbx_sandbox_monitor_alive (st, id))
    {
      /* Re-read: the monitor may have written its final state and exited
       * between our read and the lock probe. */
      sbx_sandbox *again = NULL;
      if (sbx_sandbox_load (st, id, &again, NULL) == 0)
        {
          sbx_sandbox_free (sb);
          sb = again;
        }
      if (!sbx_state_is_final (sb->state))
        {
          sb->state = SBX_STATE_FAILED;
          free (sb->reason);
          sb->reason = xstrdup (SBX_REASON_MONITOR_LOST);
        }
    }
  *ret = sb;
  return 0;
}

bool
sbx_sandbox_merge_stats (sbx_sandbox *sb, const sbx_cgroup_stats *cs)
{
  bool changed = cs->oom_kills > sb->oom_kills || cs->pids_limit_hits > sb->pids_limit_hits;
  if (cs->oom_kills > sb->oom_kills)
    sb->oom_kills = cs->oom_kills;
  if (cs->pids_limit_hits > sb->pids_limit_hits)
    sb->pids_limit_hits = cs->pids_limit_hits;
  if (cs->memory_peak > sb->memory_peak)
    sb->memory_peak = cs->memory_peak;
  return changed;
}

/* The sandbox id a name points to, or NULL. */
static char *
name_target (const sbx_store *st, const char *name)
{
  _cleanup_free_ char *path = sbx_store_path (st, "names/%s", name);
  char target[128];
  ssize_t n = readlink (path, target, sizeof target - 1);
  if (n <= 0)
    return NULL;
  target[n] = '\0';
  return name_is_valid (target) ? xstrdup (target) : NULL;
}

int
sbx_name_reserve (const sbx_store *st, const char *name, const char *id, sbx_error **err)
{
  _cleanup_free_ char *path = sbx_store_path (st, "names/%s", name);
  if (symlink (id, path) == 0)
    return 0;
  if (errno != EEXIST)
    return sbx_error_errno (err, errno, "reserve name `%s`", name);
  /* A name whose sandbox is gone may be taken over. */
  _cleanup_free_ char *target = name_target (st, name);
  _cleanup_free_ char *dir = target ? sbx_sandbox_dir (st, target) : NULL;
  if (dir && !path_exists (dir))
    {
      _cleanup_free_ char *tmp = sbx_store_path (st, "names/.%s.%s", name, id);
      unlink (tmp);
      if (symlink (id, tmp) == 0 && rename (tmp, path) == 0)
        return 0;
      unlink (tmp);
    }
  return sbx_error_set (err, SBX_E_BUSY, 0, "the name `%s` is already in use", name);
}

void
sbx_name_release (const sbx_store *st, const char *name, const char *id)
{
  _cleanup_free_ char *target = name_target (st, name);
  _cleanup_free_ char *path = sbx_store_path (st, "names/%s", name);
  if (target && strcmp (target, id) == 0)
    unlink (path);
}

int
sbx_sandbox_resolve (const sbx_store *st, const char *ref, char **ret_id, sbx_error **err)
{
  if (!name_is_valid (ref))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid sandbox id or name `%s`", ref);
  _cleanup_free_ char *dir = sbx_sandbox_dir (st, ref);
  if (path_exists (dir))
    {
      *ret_id = xstrdup (ref);
      return 0;
    }
  _cleanup_free_ char *target = name_target (st, ref);
  _cleanup_free_ char *tdir = target ? sbx_sandbox_dir (st, target) : NULL;
  if (tdir && path_exists (tdir))
    {
      *ret_id = steal_pointer (&target);
      return 0;
    }
  return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "sandbox `%s` not found", ref);
}

int
sbx_sandbox_list (const sbx_store *st, char ***ret_ids, sbx_error **err)
{
  _cleanup_free_ char *dir = sbx_store_path (st, "sandboxes");
  _cleanup_closedir_ DIR *d = opendir (dir);
  if (d == NULL)
    return sbx_error_errno (err, errno, "open `%s`", dir);
  char **ids = xmalloc0 (sizeof (char *));
  struct dirent *de;
  while ((de = readdir (d)))
    if (de->d_name[0] != '.' && name_is_valid (de->d_name))
      strv_push (&ids, de->d_name);
  *ret_ids = ids;
  return 0;
}

char *
sbx_sandbox_upper_rel (const sbx_sandbox *sb)
{
  return sb->opts.disk > 0 ? xasprintf ("sandboxes/%s/disk/upper", sb->id) : xasprintf ("sandboxes/%s/upper", sb->id);
}

int
sbx_sandbox_mount_root (const sbx_store *st, const sbx_sandbox *sb, bool readonly, sbx_error **err)
{
  return sbx_sandbox_mount_root_att (st, sb, readonly, NULL, err);
}

/* A sandbox in a user namespace sees the image's layers and sbx's own
 * through idmapped mounts (uid N on the disk is BASE+N), so that the layers
 * stay shared and unchanged; overlayfs takes each as a detached mount by
 * its fd (it keeps a private clone of each). The upper dir is not mapped:
 * what the sandbox writes is owned by its range on the host. */
struct idmap_lowers {
  int userns;
  int *fds;
  size_t n;
};

static void
idmap_lowers_free (struct idmap_lowers *il)
{
  for (size_t i = 0; i < il->n; i++)
    close (il->fds[i]);
  free (il->fds);
  if (il->userns >= 0)
    close (il->userns);
}

static int
idmap_lowers_begin (struct idmap_lowers *il, const sbx_sandbox *sb, sbx_error **err)
{
  return sbx_userns_open ((uint32_t) sb->userns_base, (uint32_t) sb->userns_size, &il->userns, err);
}

/* REL (relative to the store's root, the cwd) as a lowerdir. */
static int
lower_dir (struct idmap_lowers *il, const char *rel, char **ret, sbx_error **err)
{
  if (il->userns < 0)
    {
      *ret = xstrdup (rel);
      return 0;
    }
  int tree;
  if (sbx_idmap_clone (AT_FDCWD, rel, il->userns, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID, &tree, err)
      < 0)
    return -1;
  il->fds = xrealloc (il->fds, (il->n + 1) * sizeof *il->fds);
  il->fds[il->n++] = tree;
  *ret = xasprintf ("/proc/self/fd/%d", tree);
  return 0;
}

int
sbx_sandbox_mount_root_att (const sbx_store *st, const sbx_sandbox *sb, bool readonly, struct sbx_disk_att *pre,
                            sbx_error **err)
{
  /* Relative lowerdirs keep the option string short for deep images. */
  if (chdir (st->root) < 0)
    return sbx_error_errno (err, errno, "chdir `%s`", st->root);
  if (sbx_store_base_layer (st, err) < 0)
    return -1;
  size_t nl = strv_len (sb->layers);
  _cleanup_free_ char *upper_rel = sbx_sandbox_upper_rel (sb);
  _cleanup_free_ char *disk_rel = xasprintf ("sandboxes/%s/%s", sb->id, sb->opts.disk > 0 ? "disk/" : "");
  /* Read-only: its upper dir becomes the top lower layer (whiteouts and
   * opaque directories keep their meaning there), and nothing is written. */
  __attribute__ ((cleanup (idmap_lowers_free))) struct idmap_lowers il = { .userns = -1 };
  if (sb->userns_base > 0 && idmap_lowers_begin (&il, sb, err) < 0)
    return -1;
  _cleanup_free_ char *top = NULL;
  if (lower_dir (&il, "top/v1", &top, err) < 0)
    return -1;
  _cleanup_free_ char *opts = readonly ? xasprintf ("lowerdir=%s:%s", upper_rel, top) : xasprintf ("lowerdir=%s", top);
  for (size_t i = nl; i > 0; i--)
    {
      const char *d = sb->layers[i - 1];
      const char *hex = strncmp (d, "sha256:", 7) == 0 ? d + 7 : d;
      _cleanup_free_ char *rel = xasprintf ("layers/sha256/%s/rootfs", hex);
      _cleanup_free_ char *lower = NULL;
      if (lower_dir (&il, rel, &lower, err) < 0)
        return -1;
      char *o = xasprintf ("%s:%s", opts, lower);
      free (opts);
      opts = o;
    }
  /* sbx's bottom layer (/workspace) below the image's (store.h). */
  _cleanup_free_ char *base = NULL;
  if (lower_dir (&il, "top/base", &base, err) < 0)
    return -1;
  char *with_base = xasprintf ("%s:%s", opts, base);
  free (opts);
  opts = with_base;
  if (!readonly)
    {
      char *o = xasprintf ("%s,upperdir=%s,workdir=%swork", opts, upper_rel, disk_rel);
      free (opts);
      opts = o;
    }
  if (strlen (opts) >= 4000)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "image has too many layers (%zu)", nl);
  _cleanup_free_ char *dir = sbx_sandbox_dir (st, sb->id);
  static const char *const dirs[] = { "upper", "work", "rootfs" };
  for (size_t i = sb->opts.disk > 0 ? 2 : 0; i < ARRAY_SIZE (dirs); i++)
    {
      _cleanup_free_ char *p = xasprintf ("%s/%s", dir, dirs[i]);
      if (mkdir (p, 0700) < 0 && errno != EEXIST)
        return sbx_error_errno (err, errno, "mkdir `%s`", p);
    }
  if (sb->opts.disk > 0)
    {
      /* Its lock is held as long as this process (and its mount) lives. */
      int lock;
      if (sbx_disk_mount_att (st, sb->id, readonly, pre, &lock, err) < 0)
        return -1;
    }
  else
    {
      _cleanup_free_ char *upper = xasprintf ("%s/upper", dir);
      chmod (upper, 0755);
    }
  /* The root directory is the upper dir's: the sandbox's root owns it. */
  if (sb->userns_base > 0 && !readonly && chown (upper_rel, (uid_t) sb->userns_base, (gid_t) sb->userns_base) < 0)
    return sbx_error_errno (err, errno, "chown `%s`", upper_rel);
  _cleanup_free_ char *rootfs = xasprintf ("%s/rootfs", dir);
  /* nodev: a device node in an image or planted by the sandbox is inert
   * through this mount, for sbx as for anyone. volatile (Linux 5.10): the
   * writable layer is never synced to disk, neither by the sandbox's fsync
   * nor at unmount (~1-5 ms of every sandbox's end). A sandbox does not
   * survive a host crash anyway (its monitor is lost); what must, sbx writes
   * and syncs itself (commit and snapshot layers, state). podman does the
   * same for --rm containers, CRI-O for all. */
  unsigned long flags = MS_NODEV | MS_NOSUID | (readonly ? MS_RDONLY : 0);
  if (!readonly)
    {
      /* A volatile mount leaves work/work/incompat/volatile behind, and
       * overlayfs refuses that work dir until it is removed: a writable
       * remount of an ended sandbox's files (sbx fs) removes it. Its files
       * are whole unless the host crashed while it ran, in which case the
       * sandbox failed (monitor lost) and its last writes may be missing. */
      _cleanup_free_ char *incompat = xasprintf ("%swork/work/incompat", disk_rel);
      if (path_exists (incompat) && rm_rf (incompat, err) < 0)
        return sbx_error_wrap (err, "clear the volatile mark of `%s/%swork`", st->root, disk_rel);
      _cleanup_free_ char *vopts = xasprintf ("%s,volatile", opts);
      if (mount ("overlay", rootfs, "overlay", flags, vopts) == 0)
        return 0;
      if (errno != EINVAL)
        return sbx_error_errno (err, errno, "mount the overlay root");
      /* A kernel without volatile: the same mount, synced. */
    }
  if (mount ("overlay", rootfs, "overlay", flags, opts) < 0)
    return sbx_error_errno (err, errno, "mount the overlay root");
  return 0;
}
