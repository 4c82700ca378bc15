/* Create, terminate, remove, reap, gc. */
#include "config.h"
#include "lifecycle.h"
#include "pool.h"
#include "domain.h"
#include "conf.h"
#include "userns.h"
#include "copyin.h"
#include "disk.h"
#include "docker.h"
#include "hostmount.h"
#include "net.h"
#include "cgroup.h"
#include "image.h"
#include "imageref.h"
#include "json.h"
#include "layer.h"
#include "monitor.h"
#include "namespace.h"
#include "runtime.h"
#include "gpu.h"
#include "client.h"
#include "secret.h"
#include "util.h"
#include "volume.h"

#include <stdint.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>

/* --image: a tag, an id, or a reference a registry could have. */
static int
validate_image_ref (const char *ref, sbx_error **err)
{
  if (ref == NULL || sbx_tag_name_is_valid (ref))
    return 0;
  _cleanup_imageref_ sbx_imageref *ir = NULL;
  if (sbx_imageref_parse (ref, NULL, &ir, err) < 0)
    return sbx_error_wrap (err, "--image");
  return 0;
}

int
sbx_limits_validate (double cpu, uint64_t memory, int64_t pids, sbx_error **err)
{
  if (cpu != 0 && !(cpu >= SBX_CPU_MIN && cpu <= SBX_CPU_MAX))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "cpu limit %g is not 0 (no limit) or between %g and %d cores",
                          cpu, SBX_CPU_MIN, SBX_CPU_MAX);
  if (memory != 0 && (memory < SBX_MEMORY_MIN || memory > SBX_MEMORY_MAX))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "memory limit %llu is not 0 (no limit) or between 6Mi and 4Ti", (unsigned long long) memory);
  if (pids != 0 && (pids < SBX_PIDS_MIN || pids > SBX_PIDS_MAX))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "process limit %lld is not between %d and %d",
                          (long long) pids, SBX_PIDS_MIN, SBX_PIDS_MAX);
  return 0;
}

int
sbx_lifetimes_validate (int64_t keep_warm, int64_t timeout, sbx_error **err)
{
  if (timeout < 1 || timeout > SBX_TIMEOUT_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the timeout must be between 1 and %d seconds",
                          SBX_TIMEOUT_MAX);
  if (keep_warm < -1 || keep_warm == 0 || keep_warm > SBX_TIMEOUT_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the keep-warm time must be -1 or between 1 and %d seconds",
                          SBX_TIMEOUT_MAX);
  return 0;
}

int
sbx_sandbox_opts_validate (const sbx_sandbox_opts *o, sbx_error **err)
{
  if (validate_image_ref (o->image_ref, err) < 0)
    return -1;
  if (o->name && !name_is_valid (o->name))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "invalid name `%s`: use [A-Za-z0-9][A-Za-z0-9_.+-]*, at most %d", o->name, SBX_NAME_MAX);
  if (o->name && strncmp (o->name, "sb-", 3) == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid name `%s`: the prefix sb- is for ids", o->name);
  if (!sbx_runtime_name_valid (o->runtime))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "unknown runtime `%s` (expected runsc or runc)", o->runtime);
  if (o->disk > 0 && ((uint64_t) o->disk < SBX_DISK_MIN || (uint64_t) o->disk > SBX_DISK_MAX))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "disk limit %lld is not 0 or between 16Mi and 64Ti",
                          (long long) o->disk);
  for (size_t i = 0; o->env && o->env[i]; i++)
    if (!env_entry_is_valid (o->env[i]))
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid environment entry `%s`: expected KEY=VALUE",
                            o->env[i]);
  if (o->cmd && o->cmd[0] && o->cmd[0][0] == '\0')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the initial command's name is empty");
  if (o->exit_with_cmd && (o->cmd == NULL || o->cmd[0] == NULL))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "--exit-with-cmd needs an initial command (sbx create [OPTIONS] -- CMD..., or --run-cmd)");
  if (o->cwd && o->cwd[0] != '/')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the working directory `%s` is not an absolute path", o->cwd);
  if (sbx_lifetimes_validate (o->keep_warm, o->timeout, err) < 0)
    return -1;
  if (o->gpus && sbx_gpu_request_check (o->gpus, err) < 0)
    return -1;
  if (sbx_namespace_validate (o->namespace, err) < 0)
    return -1;
  if (o->priority < 0 || o->priority > 9)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "priority %lld is not between 0 and 9",
                          (long long) o->priority);
  /* The bounds the options' parsers apply: here too for options that did
   * not come through them (a snapshot's, read back from the store). */
  if (sbx_limits_validate (o->cpu, o->memory, o->pids, err) < 0)
    return -1;
  if (o->ports && strv_len (o->ports) > SBX_PORTS_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%zu ports: at most %d ports", strv_len (o->ports),
                          SBX_PORTS_MAX);
  if (sbx_secret_opts_validate (o, err) < 0)
    return -1;
  if (o->block_network && o->allow && o->allow[0])
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "--block-network and --allow contradict each other: with no network nothing is allowed");
  if (o->block_network && o->allow_domains && o->allow_domains[0])
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "--block-network and --allow-domain contradict each other: with no network nothing is "
                          "allowed");
  _cleanup_free_ sbx_cidr *cidrs = NULL;
  size_t n;
  if (sbx_net_parse_allow (o->allow, &cidrs, &n, err) < 0 || sbx_domain_rules_parse (o->allow_domains, NULL, err) < 0)
    return -1;
  if (o->copy_in && strv_len (o->copy_in) > SBX_COPY_IN_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--copy-in: at most %d trees", SBX_COPY_IN_MAX);
  for (size_t i = 0; o->copy_in && o->copy_in[i]; i++)
    if (sbx_copyin_check (o->copy_in[i], err) < 0)
      return -1;
  for (size_t i = 0; o->ports && o->ports[i]; i++)
    {
      int64_t port;
      if (parse_int64 (o->ports[i], 1, 65535, &port) < 0)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "port `%s` is not in 1..65535", o->ports[i]);
    }
  if (sbx_volume_specs_check (o->volumes, err) < 0)
    return -1;
  return sbx_hostmounts_validate (o->mounts, err);
}

int
sbx_sandbox_opts_check_host (const sbx_store *st, const sbx_sandbox_opts *o, const sbx_conf *conf, sbx_error **err)
{
  if (o->mounts == NULL || o->mounts[0] == NULL)
    return 0;
  _cleanup_conf_ sbx_conf *own = NULL;
  if (conf == NULL && sbx_conf_load (NULL, &own, err) < 0)
    return -1;
  return sbx_hostmounts_check (o->mounts, conf ? conf : own, st, err);
}

static void
discard (const sbx_store *st, const char *id, const char *name)
{
  _cleanup_free_ char *dir = sbx_sandbox_dir (st, id);
  _cleanup_free_ char *run = sbx_sandbox_run_dir (st, id);
  rm_rf (dir, NULL);
  rm_rf (run, NULL);
  if (name)
    sbx_name_release (st, name, id);
}

/* Makes ROOT/sandboxes/ID with its lock held and state `creating`. */
static int
make_record (const sbx_store *st, sbx_sandbox *sb, int *ret_lock, sbx_error **err)
{
  _cleanup_free_ char *dir = sbx_sandbox_dir (st, sb->id);
  if (mkdir (dir, 0700) < 0)
    return sbx_error_errno (err, errno, "mkdir `%s`", dir);
  _cleanup_free_ char *lockp = xasprintf ("%s/lock", dir);
  int lk = lock_path (lockp, LOCK_EX | LOCK_NB, err);
  if (lk < 0)
    return -1;
  sb->state = SBX_STATE_CREATING;
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  sb->created_at = ts.tv_sec;
  sb->created_ns = (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
  if (sbx_sandbox_save (st, sb, err) < 0)
    {
      close (lk);
      return -1;
    }
  *ret_lock = lk;
  return 0;
}

static void
fill_from_image (sbx_sandbox *sb, const sbx_image *img)
{
  sb->image_id = img->id ? xstrdup (img->id) : NULL;
  sb->layers = strv_dup (img->layers);
  sb->image_env = strv_dup (img->env);
  sb->image_workdir = xstrdup (img->workdir && img->workdir[0] ? img->workdir : "/");
}

int
sbx_sandbox_create (const sbx_store *st, sbx_sandbox_opts *opts, sbx_sandbox **ret, sbx_error **err)
{
  return sbx_sandbox_create_from (st, opts, NULL, ret, err);
}

/* How a sandbox starts other than plainly: restored from a checkpoint
 * (restore_from, chan_base), or as a warm pool's parked member (id chosen
 * by the pool, parked). */
struct create_how {
  const char *restore_from;
  int64_t chan_base;
  const char *id;
  bool parked;
};
static int create_common (const sbx_store *st, sbx_sandbox_opts *opts, const sbx_image *image,
                          const struct create_how *how, sbx_sandbox **ret, sbx_error **err);

int
sbx_sandbox_create_from (const sbx_store *st, sbx_sandbox_opts *opts, const sbx_image *image, sbx_sandbox **ret,
                         sbx_error **err)
{
  struct create_how how = { .restore_from = NULL };
  return create_common (st, opts, image, &how, ret, err);
}

int
sbx_sandbox_create_parked (const sbx_store *st, sbx_sandbox_opts *opts, const sbx_image *image, const char *id,
                           sbx_sandbox **ret, sbx_error **err)
{
  struct create_how how = { .id = id, .parked = true };
  return create_common (st, opts, image, &how, ret, err);
}

int
sbx_sandbox_restore (const sbx_store *st, sbx_sandbox_opts *opts, const sbx_image *image, const char *checkpoint,
                     int64_t chan_base, sbx_sandbox **ret, sbx_error **err)
{
  struct create_how how = { .restore_from = checkpoint, .chan_base = chan_base };
  return create_common (st, opts, image, &how, ret, err);
}

/* The limits not given at create are sbx.conf's defaults (sbx.conf(5)),
 * fixed in the record from here on; the file is read once for all of
 * them. A restore keeps its snapshot's cpu and memory, defaults included. */
static int
apply_default_limits (sbx_sandbox_opts *o, bool restore, sbx_error **err)
{
  bool cpu = !restore && o->cpu_default, memory = !restore && o->memory_default;
  if (!cpu && !memory && o->disk >= 0)
    return 0;
  _cleanup_conf_ sbx_conf *conf = NULL;
  if (sbx_conf_load (NULL, &conf, err) < 0)
    return -1;
  if (cpu)
    o->cpu = conf->default_cpu;
  if (memory)
    o->memory = conf->default_memory;
  if (o->disk < 0)
    o->disk = (int64_t) conf->disk;
  return 0;
}

/* Recorded before the monitor reads a value: no sandbox gets a secret that
 * the audit log does not name. */
static int
audit_secrets (const sbx_store *st, const sbx_sandbox *sb, sbx_error **err)
{
  if (!sbx_secret_opts_any (&sb->opts))
    return 0;
  _cleanup_strv_ char **names = sbx_secret_opts_names (&sb->opts);
  if (sbx_audit_append (st, SBX_AUDIT_EVENT_SECRETS, sb->id, names, err) < 0)
    return sbx_error_wrap (err, "audit log");
  return 0;
}

static int
create_common (const sbx_store *st, sbx_sandbox_opts *opts, const sbx_image *image, const struct create_how *how,
               sbx_sandbox **ret, sbx_error **err)
{
  const char *restore_from = how->restore_from;
  /* A restore's files hold what was copied in: nothing is copied again,
   * nor is the host directory looked for. */
  if (restore_from)
    {
      strv_free (opts->copy_in);
      opts->copy_in = NULL;
    }
  if (apply_default_limits (opts, restore_from != NULL, err) < 0 || sbx_sandbox_opts_validate (opts, err) < 0
      || sbx_sandbox_opts_check_host (st, opts, NULL, err) < 0 || sbx_store_begin_write (st, "create", err) < 0)
    return -1;
  /* Its layers stay referenced from here on: by this resolution until the
   * record names them (the record is saved before the lock goes). */
  _cleanup_close_ int layers_lock = sbx_store_layers_lock (st, LOCK_SH, err);
  if (layers_lock < 0)
    return -1;
  _cleanup_image_ sbx_image *resolved = NULL;
  const sbx_image *img = image;
  if (img == NULL && sbx_image_resolve (st, opts->image_ref ? opts->image_ref : "busybox", &resolved, err) < 0)
    return -1;
  if (img == NULL)
    img = resolved;
  /* Refused here, before anything exists, rather than by the monitor
   * (which reads the values at its setup). */
  if (sbx_secret_opts_check (st, opts, err) < 0)
    return -1;
  /* The runtime rule for GPUs may name runc (sbx.conf's gpu_runtime). */
  _cleanup_gpu_got_ sbx_gpu_got gpus = { NULL };
  if (sbx_gpu_assign (st, opts, &gpus, err) < 0)
    return -1;
  sbx_runtime *rt = NULL;
  if (sbx_runtime_find (st, opts->runtime, &rt, err) < 0)
    return -1;
  sbx_runtime_free (rt);
  _cleanup_free_ char *userns_off = NULL;
  if (sbx_docker_check (opts, NULL, err) < 0)
    return -1;
  /* dockerd on runc needs host root's mounts, cgroups and device nodes
   * (docker.h): the policy that allowed it (docker_runtime, audited)
   * allowed it without a user namespace. */
  if (opts->docker)
    userns_off = xstrdup ("--docker: dockerd makes mounts, cgroups and device nodes a user namespace cannot");
  else if (sbx_userns_plan (st, opts->runtime, &userns_off, err) < 0)
    return -1;

  _cleanup_sandbox_ sbx_sandbox *sb = xmalloc0 (sizeof *sb);
  sb->id = how->id ? xstrdup (how->id) : sbx_sandbox_new_id ();
  sb->parked = how->parked;
  if (opts->name && sbx_name_reserve (st, opts->name, sb->id, err) < 0)
    return -1;
  sb->opts = *opts;
  memset (opts, 0, sizeof *opts);
  fill_from_image (sb, img);
  sb->gpu_mode = steal_pointer (&gpus.mode);
  sb->gpu_list = steal_pointer (&gpus.list);
  sb->gpu_env = steal_pointer (&gpus.env);
  sb->restore_from = restore_from ? xstrdup (restore_from) : NULL;
  sb->chan_base = how->chan_base;
  sb->userns_off = steal_pointer (&userns_off);
  _cleanup_close_ int lk = -1, quota = -1;
  /* Counted against its namespace's quotas from the record on: the quota
   * lock is held until the record is saved (make_record). */
  if (sbx_quota_admit (st, NULL, &sb->opts, NULL, &quota, err) < 0)
    {
      if (sb->opts.name)
        sbx_name_release (st, sb->opts.name, sb->id);
      return -1;
    }
  /* Its volumes (made if missing) stay until the record names them. */
  sbx_volume_holds vh = { NULL };
  if (sbx_volumes_hold (st, sb->opts.volumes, &vh, err) < 0)
    {
      if (sb->opts.name)
        sbx_name_release (st, sb->opts.name, sb->id);
      return sbx_error_wrap (err, "create sandbox");
    }
  int made = make_record (st, sb, &lk, err);
  sbx_volumes_release (&vh);
  if (quota >= 0)
    close (steal_fd (&quota));
  if (made < 0 || (sb->opts.disk > 0 && sbx_disk_make (st, sb->id, (uint64_t) sb->opts.disk, err) < 0)
      || audit_secrets (st, sb, err) < 0 || sbx_docker_audit (st, sb, err) < 0)
    {
      discard (st, sb->id, sb->opts.name);
      return sbx_error_wrap (err, "create sandbox");
    }
  if (sbx_monitor_spawn (st, sb, lk, err) < 0)
    {
      _cleanup_free_ char *log = sbx_store_path (st, "sandboxes/%s/log", sb->id);
      _cleanup_free_ char *text = NULL;
      read_file (log, 16384, &text, NULL, NULL);
      discard (st, sb->id, sb->opts.name);
      if (text && *text && err && *err)
        {
          char *m = xasprintf ("%s\n%s", (*err)->msg, text);
          free ((*err)->msg);
          (*err)->msg = m;
          size_t l = strlen (m);
          while (l && m[l - 1] == '\n')
            m[--l] = '\0';
        }
      return -1;
    }
  /* The monitor wrote the running state; read it back for the caller. */
  return sbx_sandbox_get (st, sb->id, ret, err);
}

int
sbx_sandbox_reap (const sbx_store *st, const char *id, sbx_error **err)
{
  _cleanup_free_ char *lockp = sbx_store_path (st, "sandboxes/%s/lock", id);
  _cleanup_close_ int lk = lock_path (lockp, LOCK_EX | LOCK_NB, NULL);
  if (lk < 0)
    return 0; /* the monitor (or another reaper) holds it */
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (sbx_sandbox_load (st, id, &sb, err) < 0)
    return -1;
  /* A final state is written by a monitor after its teardown. */
  if (sbx_state_is_final (sb->state))
    return 0;
  _cleanup_runtime_ sbx_runtime *rt = NULL;
  if (sb->opts.runtime && sbx_runtime_find (st, sb->opts.runtime, &rt, NULL) == 0)
    sbx_runtime_destroy (rt, id, true, NULL);
  _cleanup_free_ char *cg = sbx_store_cgroup_path (st, id);
  _cleanup_free_ char *own = xasprintf ("%s" SBX_CGROUP_MONITOR_SUFFIX, cg);
  if (sbx_cgroup_remove (cg, err) < 0 || sbx_cgroup_remove (own, err) < 0)
    return -1;
  sbx_store_cgroup_release_parent (st);
  sbx_net_reap (id);
  sbx_userns_reap ((uint32_t) sb->userns_base);
  _cleanup_free_ char *run = sbx_sandbox_run_dir (st, id);
  rm_rf (run, NULL);
  strv_free (sb->urls);
  sb->urls = NULL;
  sb->state = SBX_STATE_FAILED;
  free (sb->reason);
  sb->reason = xstrdup (SBX_REASON_MONITOR_LOST);
  sb->ended_at = now_unix ();
  if (sbx_sandbox_save (st, sb, err) < 0)
    return -1;
  return 1;
}

/* Waits (up to 10 s) for ID's monitor to let go of its lock: its connection
 * closing comes just after, so the first look mostly finds it gone. */
static void
monitor_gone (const sbx_store *st, const char *id)
{
  uint64_t until = now_ms_monotonic () + 10000;
  for (useconds_t nap = 100; sbx_sandbox_monitor_alive (st, id) && now_ms_monotonic () < until;
       nap = nap < 2000 ? nap * 2 : 2000)
    usleep (nap);
}

int
sbx_sandbox_wait (const sbx_store *st, sbx_sandbox **sb, int64_t timeout_ms, sbx_error **err)
{
  if (sbx_state_is_final ((*sb)->state))
    return 0;
  _cleanup_error_ sbx_error *e = NULL;
  if (sbx_client_wait (st, (*sb)->id, timeout_ms, &e) < 0 && e->code != SBX_E_SANDBOX_NOT_RUNNING)
    {
      *err = steal_pointer (&e);
      return -1;
    }
  /* The final record is written before the monitor lets go of its lock. */
  monitor_gone (st, (*sb)->id);
  _cleanup_free_ char *id = xstrdup ((*sb)->id);
  sbx_sandbox_free (*sb);
  *sb = NULL;
  return sbx_sandbox_get (st, id, sb, err);
}

int
sbx_sandbox_terminate (const sbx_store *st, const char *id, int64_t timeout_ms, sbx_error **err)
{
  _cleanup_error_ sbx_error *e = NULL;
  if (sbx_client_terminate (st, id, timeout_ms, &e) < 0)
    {
      if (e->code != SBX_E_SANDBOX_NOT_RUNNING)
        {
          *err = steal_pointer (&e);
          return -1;
        }
    }
  /* Wait for the monitor to release its lock (it does so before it closes
   * our connection, so this is mostly free), then make sure. */
  monitor_gone (st, id);
  if (sbx_sandbox_reap (st, id, err) < 0)
    return -1;
  return 0;
}

/* Waits until nobody holds ID's lock exclusively: its monitor has finished
 * its teardown and written the final state (or removed the sandbox, for
 * `sbx run --rm`). A lock file that is gone is a sandbox removed. */
static void
wait_lock_free (const sbx_store *st, const char *id)
{
  _cleanup_free_ char *path = sbx_store_path (st, "sandboxes/%s/lock", id);
  _cleanup_close_ int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return;
  while (flock (fd, LOCK_SH) < 0 && errno == EINTR)
    ;
}

int
sbx_sandbox_remove_files (const sbx_store *st, const sbx_sandbox *sb, sbx_error **err)
{
  /* Not under a file call that has its files mounted (cmd-fs.c). */
  _cleanup_free_ char *fslock = sbx_store_path (st, "sandboxes/%s/fs.lock", sb->id);
  _cleanup_close_ int lk = open (fslock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lk >= 0 && flock (lk, LOCK_EX | LOCK_NB) < 0)
    return sbx_error_set (err, SBX_E_BUSY, 0, "sandbox %s: a file call (sbx fs) is using its files", sb->id);
  _cleanup_free_ char *dir = sbx_sandbox_dir (st, sb->id);
  _cleanup_free_ char *tmp = sbx_store_path (st, "sandboxes/.rm-%s", sb->id);
  if (rename (dir, tmp) < 0)
    return errno == ENOENT ? 0 : sbx_error_errno (err, errno, "remove sandbox %s", sb->id);
  if (sb->opts.name)
    sbx_name_release (st, sb->opts.name, sb->id);
  return rm_rf (tmp, err);
}

int
sbx_sandbox_remove (const sbx_store *st, const char *id, sbx_error **err)
{
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (sbx_sandbox_get (st, id, &sb, err) < 0)
    return -1;
  /* Ending already (sbx run returned, its monitor tears down): wait for
   * the end rather than refuse; a run --rm's monitor may remove it first. */
  if (sb->state == SBX_STATE_TERMINATING)
    {
      wait_lock_free (st, id);
      sbx_sandbox_free (steal_pointer (&sb));
      _cleanup_error_ sbx_error *e = NULL;
      if (sbx_sandbox_get (st, id, &sb, &e) < 0)
        {
          if (e->code == SBX_E_NOT_FOUND)
            return 0;
          *err = steal_pointer (&e);
          return -1;
        }
    }
  if (!sbx_state_is_final (sb->state))
    return sbx_error_set (err, SBX_E_BUSY, 0, "sandbox %s is %s: terminate it first (or use --force)", id,
                          sbx_state_name (sb->state));
  if (sbx_sandbox_reap (st, id, err) < 0)
    return -1;
  return sbx_sandbox_remove_files (st, sb, err);
}

/* --- sandboxes tearing down ---------------------------------------------- */

/* RUN/ending/ID: one file per sandbox whose monitor is tearing it down,
 * flocked by that monitor until it is done. Made as .ID and renamed once
 * locked, so that a reader never takes a fresh one for a stale one. */
static char *
ending_dir (const sbx_store *st)
{
  return xasprintf ("%s/ending", st->run_root);
}

int
sbx_teardown_begin (const sbx_store *st, const char *id)
{
  _cleanup_free_ char *dir = ending_dir (st);
  if (mkdir (dir, 0700) < 0 && errno != EEXIST)
    return -1;
  _cleanup_free_ char *tmp = xasprintf ("%s/.%s", dir, id);
  _cleanup_free_ char *path = xasprintf ("%s/%s", dir, id);
  _cleanup_close_ int fd = open (tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 || flock (fd, LOCK_EX) < 0 || rename (tmp, path) < 0)
    {
      unlink (tmp);
      return -1;
    }
  return steal_fd (&fd);
}

void
sbx_teardown_end (const sbx_store *st, const char *id, int fd)
{
  if (fd < 0)
    return;
  _cleanup_free_ char *path = xasprintf ("%s/ending/%s", st->run_root, id);
  unlink (path);
  close (fd);
}

/* The entries of RUN/ending still held; a stale one (its monitor died) is
 * removed. Waits for the first WAIT of those held to be let go of (SIZE_MAX:
 * all of them; 0: none). */
static size_t
ending_scan (const sbx_store *st, size_t wait)
{
  _cleanup_free_ char *dir = ending_dir (st);
  _cleanup_closedir_ DIR *d = opendir (dir);
  if (d == NULL)
    return 0;
  size_t held = 0;
  struct dirent *de;
  while ((de = readdir (d)))
    {
      if (de->d_name[0] == '.')
        continue;
      _cleanup_close_ int fd = openat (dirfd (d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      if (fd < 0)
        continue;
      if (flock (fd, LOCK_SH | LOCK_NB) == 0)
        {
          unlinkat (dirfd (d), de->d_name, 0);
          continue;
        }
      held++;
      while (held <= wait && flock (fd, LOCK_SH) < 0 && errno == EINTR)
        ;
    }
  return held;
}

size_t
sbx_teardown_count (const sbx_store *st)
{
  return ending_scan (st, 0);
}

void
sbx_teardown_throttle (const sbx_store *st, size_t max)
{
  if (ending_scan (st, 0) < max)
    return;
  /* Woken when any of them is over (its monitor unlinks its entry), or
   * every 100 ms to look again: a dead monitor's entry is not unlinked
   * until a scan finds it stale. */
  _cleanup_free_ char *dir = ending_dir (st);
  _cleanup_close_ int in = inotify_init1 (IN_CLOEXEC | IN_NONBLOCK);
  if (in >= 0 && inotify_add_watch (in, dir, IN_DELETE | IN_MOVED_FROM) < 0)
    {
      close (in);
      in = -1;
    }
  while (ending_scan (st, 0) >= max)
    {
      struct pollfd pf = { in, POLLIN, 0 };
      if (in < 0 || poll (&pf, 1, 100) < 0)
        usleep (20000);
      char buf[4096];
      while (in >= 0 && read (in, buf, sizeof buf) > 0)
        ;
    }
}

void
sbx_teardown_wait_all (const sbx_store *st)
{
  ending_scan (st, SIZE_MAX);
}

static int
cmp_str_ptr (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* KNOWN: the sandboxes whose monitors lived a moment ago, sorted. A
 * runtime whose state root holds only theirs has no orphan, and is not
 * started to list them. */
static void
gc_orphan_containers (const sbx_store *st, char *const *known, sbx_gc_report *rep)
{
  static const char *const names[] = { "runc", "runsc" };
  size_t nknown = strv_len (known);
  for (size_t r = 0; r < ARRAY_SIZE (names); r++)
    {
      _cleanup_runtime_ sbx_runtime *rt = NULL;
      _cleanup_strv_ char **ids = NULL;
      if (sbx_runtime_find (st, names[r], &rt, NULL) < 0 || sbx_runtime_root_within (rt, known, nknown)
          || sbx_runtime_list (rt, &ids, NULL) < 0)
        continue;
      for (size_t i = 0; ids[i]; i++)
        {
          bool owned = false;
          for (size_t k = 0; known[k] && !owned; k++)
            owned = strcmp (known[k], ids[i]) == 0 && sbx_sandbox_monitor_alive (st, ids[i]);
          if (!owned && sbx_runtime_destroy (rt, ids[i], true, NULL) == 0)
            rep->orphans++;
        }
    }
}

static void
gc_orphan_cgroups (const sbx_store *st, sbx_gc_report *rep)
{
  _cleanup_free_ char *parent = xasprintf ("/sbx-%s", st->tag);
  _cleanup_strv_ char **kids = sbx_cgroup_children (parent);
  for (size_t i = 0; kids[i]; i++)
    {
      /* "ID" is the sandbox's, "ID.monitor" its monitor's own. */
      _cleanup_free_ char *id = xstrdup (kids[i]);
      size_t l = strlen (id), sl = strlen (SBX_CGROUP_MONITOR_SUFFIX);
      if (l > sl && strcmp (id + l - sl, SBX_CGROUP_MONITOR_SUFFIX) == 0)
        id[l - sl] = '\0';
      if (name_is_valid (id) && sbx_sandbox_monitor_alive (st, id))
        continue;
      _cleanup_free_ char *cg = xasprintf ("%s/%s", parent, kids[i]);
      if (sbx_cgroup_remove (cg, NULL) == 0)
        rep->orphans++;
    }
  sbx_store_cgroup_release_parent (st);
}

/* Leftovers of interrupted removals (sandboxes/.rm-ID). */
static void
gc_leftovers (const sbx_store *st)
{
  sbx_secret_gc (st);
  _cleanup_free_ char *sdir = sbx_store_path (st, "sandboxes");
  _cleanup_closedir_ DIR *d = opendir (sdir);
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir (d)))
    if (strncmp (de->d_name, ".rm-", 4) == 0)
      rm_rf_at (dirfd (d), de->d_name, NULL);
  /* Snapshots a killed `sbx snapshot` left half-made (unlocked), or a
   * killed `sbx rmsnap` half-removed. */
  _cleanup_free_ char *snaps = sbx_store_path (st, "snapshots");
  _cleanup_closedir_ DIR *sd = opendir (snaps);
  if (sd == NULL)
    return;
  while ((de = readdir (sd)))
    {
      if (strncmp (de->d_name, ".rm-", 4) == 0)
        rm_rf_at (dirfd (sd), de->d_name, NULL);
      else if (strncmp (de->d_name, ".tmp-", 5) == 0)
        {
          _cleanup_close_ int fd = openat (dirfd (sd), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
          if (fd >= 0 && flock (fd, LOCK_EX | LOCK_NB) == 0)
            rm_rf_at (dirfd (sd), de->d_name, NULL);
        }
    }
}

/* Temp dirs of imports a killed process left: unlocked and over a minute
 * old (the age closes the window between mkdir and flock). */
static void
gc_layer_tmp (const sbx_store *st)
{
  _cleanup_free_ char *tdir = sbx_store_path (st, "layers/tmp");
  _cleanup_closedir_ DIR *d = opendir (tdir);
  if (d == NULL)
    return;
  struct dirent *de;
  while ((de = readdir (d)))
    {
      struct stat s;
      if (de->d_name[0] == '.' || fstatat (dirfd (d), de->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0)
        continue;
      /* The tar a killed build or commit was writing: hours old. */
      if (S_ISREG (s.st_mode) && s.st_mtime < now_unix () - 3600)
        unlinkat (dirfd (d), de->d_name, 0);
      if (!S_ISDIR (s.st_mode) || s.st_mtime > now_unix () - 60)
        continue;
      _cleanup_close_ int fd = openat (dirfd (d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
      if (fd >= 0 && flock (fd, LOCK_EX | LOCK_NB) == 0)
        rm_rf_at (dirfd (d), de->d_name, NULL);
    }
}

int
sbx_gc (const sbx_store *st, sbx_gc_report *ret, sbx_error **err)
{
  sbx_gc_report rep = { 0 };
  _cleanup_strv_ char **ids = NULL;
  /* Sandboxes whose monitors are tearing them down (sbx run returned
   * before that): their end, and a run --rm's removal, come first. */
  sbx_teardown_wait_all (st);
  /* Warm pools: what killed fillers and claimers left, parked sandboxes
   * no pool lists (ended and removed here). */
  rep.removed += sbx_pool_gc (st);
  if (sbx_sandbox_list (st, &ids, err) < 0)
    return -1;
  for (size_t i = 0; ids[i]; i++)
    {
      int r = sbx_sandbox_reap (st, ids[i], NULL);
      if (r > 0)
        rep.reaped++;
      _cleanup_sandbox_ sbx_sandbox *sb = NULL;
      if (sbx_sandbox_get (st, ids[i], &sb, NULL) < 0)
        {
          /* A record without a readable state: a CLI killed mid-create. */
          if (!sbx_sandbox_monitor_alive (st, ids[i]))
            {
              _cleanup_free_ char *dir = sbx_sandbox_dir (st, ids[i]);
              if (rm_rf (dir, NULL) == 0)
                rep.removed++;
            }
          continue;
        }
      if (sbx_state_is_final (sb->state) && sbx_sandbox_remove (st, ids[i], NULL) == 0)
        rep.removed++;
    }
  /* Network leftovers: leases nobody holds (any store's), and what this
   * store's ended sandboxes left without one. */
  _cleanup_strv_ char **dead = xmalloc0 (sizeof (char *)), **live = xmalloc0 (sizeof (char *));
  for (size_t i = 0; ids[i]; i++)
    strv_push (sbx_sandbox_monitor_alive (st, ids[i]) ? &live : &dead, ids[i]);
  qsort (live, strv_len (live), sizeof *live, cmp_str_ptr);
  int nn = sbx_net_gc (dead, NULL);
  rep.networks = nn > 0 ? nn : 0;
  sbx_net_gc_idle (NULL);
  sbx_userns_gc (NULL);
  gc_orphan_containers (st, live, &rep);
  gc_orphan_cgroups (st, &rep);
  gc_leftovers (st);
  gc_layer_tmp (st);
  sbx_volumes_gc (st);
  _cleanup_conf_ sbx_conf *conf = NULL;
  if (sbx_conf_load (NULL, &conf, NULL) == 0)
    sbx_disk_gc (st, conf->disk);
  sbx_layer_settle (st->root);
  int nl = sbx_layers_gc (st, NULL);
  rep.layers = nl > 0 ? nl : 0;
  *ret = rep;
  return 0;
}

static void
add_refs (char ***refs, char *const *layers)
{
  for (size_t i = 0; layers && layers[i]; i++)
    strv_push (refs, layers[i]);
}

int
sbx_layers_gc (const sbx_store *st, sbx_error **err)
{
  _cleanup_close_ int lk = sbx_store_layers_lock (st, LOCK_EX | LOCK_NB, NULL);
  if (lk < 0)
    return 0; /* an import, build or create is under way: next time */
  _cleanup_strv_ char **refs = xmalloc0 (sizeof (char *));
  _cleanup_strv_ char **images = NULL, **sandboxes = NULL;
  if (sbx_image_list (st, &images, err) < 0 || sbx_sandbox_list (st, &sandboxes, err) < 0)
    return -1;
  for (size_t i = 0; images[i]; i++)
    {
      _cleanup_image_ sbx_image *img = NULL;
      if (sbx_image_load (st, images[i], &img, NULL) < 0)
        return 0; /* an image we cannot read might need any layer */
      add_refs (&refs, img->layers);
    }
  for (size_t i = 0; sandboxes[i]; i++)
    {
      _cleanup_sandbox_ sbx_sandbox *sb = NULL;
      if (sbx_sandbox_get (st, sandboxes[i], &sb, NULL) < 0)
        return 0;
      add_refs (&refs, sb->layers);
    }
  /* Snapshots hold their files as layers too. */
  _cleanup_free_ char *snaps = sbx_store_path (st, "snapshots");
  _cleanup_closedir_ DIR *sd = opendir (snaps);
  struct dirent *se;
  while (sd && (se = readdir (sd)) != NULL)
    {
      if (strncmp (se->d_name, "snap-", 5) != 0)
        continue;
      _cleanup_free_ char *p = xasprintf ("%s/%s/snapshot.json", snaps, se->d_name);
      _cleanup_yajl_val_ yajl_val v = NULL;
      _cleanup_strv_ char **layers = NULL;
      if (j_read_file (p, 1 << 20, "snapshot", NULL, &v, NULL) < 0 || j_get_strv (v, "layers", true, &layers, NULL) < 0)
        return 0; /* unreadable: it might need any layer */
      add_refs (&refs, layers);
    }
  _cleanup_free_ char *dir = sbx_store_path (st, "layers/sha256");
  _cleanup_closedir_ DIR *d = opendir (dir);
  if (d == NULL)
    return 0;
  int removed = 0;
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      if (de->d_name[0] == '.')
        continue;
      _cleanup_free_ char *digest = xasprintf ("sha256:%s", de->d_name);
      bool used = false;
      for (size_t i = 0; refs[i] && !used; i++)
        used = strcmp (refs[i], digest) == 0 || strcmp (refs[i], de->d_name) == 0;
      if (!used && sbx_layer_remove (st->root, digest, NULL) == 0)
        removed++;
    }
  sbx_layer_alias_gc (st->root);
  return removed;
}

int
sbx_image_remove (const sbx_store *st, const char *ref, bool force, char **ret_id, bool *ret_untagged, sbx_error **err)
{
  *ret_untagged = false;
  _cleanup_image_ sbx_image *img = NULL;
  _cleanup_free_ char *tagged = NULL;
  if (sbx_tag_lookup (st, ref, &tagged, NULL) == 0)
    {
      if (sbx_image_load (st, tagged, &img, err) < 0)
        return -1;
    }
  else if (sbx_image_resolve_existing (st, ref, &img, err) < 0)
    return -1;
  _cleanup_strv_ char **tags = NULL;
  if (sbx_tags_of (st, img->id, &tags, err) < 0)
    return -1;
  *ret_id = xstrdup (img->id);
  if (tagged && strv_len (tags) > 1)
    {
      *ret_untagged = true;
      return sbx_tag_set (st, ref, NULL, err);
    }
  _cleanup_strv_ char **ids = NULL;
  if (sbx_sandbox_list (st, &ids, err) < 0)
    return -1;
  _cleanup_free_ char *users = xstrdup ("");
  for (size_t i = 0; ids[i]; i++)
    {
      _cleanup_sandbox_ sbx_sandbox *sb = NULL;
      if (sbx_sandbox_get (st, ids[i], &sb, NULL) == 0 && sb->image_id && strcmp (sb->image_id, img->id) == 0)
        {
          char *u = xasprintf ("%s%s%s", users, users[0] ? ", " : "", sb->id);
          free (users);
          users = u;
        }
    }
  if (users[0] && !force)
    return sbx_error_set (err, SBX_E_BUSY, 0, "image %s is used by sandbox %s (remove them first, or --force)", img->id,
                          users);
  for (size_t i = 0; tags[i]; i++)
    if (sbx_tag_set (st, tags[i], NULL, err) < 0)
      return -1;
  _cleanup_free_ char *path = sbx_store_path (st, "images/%s.json", img->id + 7);
  if (unlink (path) < 0 && errno != ENOENT)
    return sbx_error_errno (err, errno, "remove `%s`", path);
  sbx_layers_gc (st, NULL);
  return 0;
}
