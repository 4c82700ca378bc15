/* Memory snapshots under runsc: made, restored, listed, removed.
 *
 * A snapshot is ROOT/snapshots/ID/{checkpoint/, snapshot.json}: runsc's
 * checkpoint of the sandbox (its processes and memory) and the files it had
 * (its image's layers plus one layer of what it wrote), with the options
 * to start it again. It is made in ROOT/snapshots/.tmp-ID and renamed into
 * place whole: a snapshot interrupted half-way is never listed. */
#include "config.h"
#include "snapshot.h"
#include "build.h"
#include "client.h"
#include "image.h"
#include "json.h"
#include "layer.h"
#include "lifecycle.h"
#include "runtime.h"
#include "sandbox.h"
#include "spawn.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

bool
sbx_snapshot_id_valid (const char *s)
{
  if (strncmp (s, "snap-", 5) != 0 || strlen (s) != 5 + 12)
    return false;
  for (const char *p = s + 5; *p; p++)
    if (!strchr ("0123456789abcdef", *p))
      return false;
  return true;
}

static void
snapshot_doc (yajl_gen g, const char *snap, const sbx_sandbox *sb, char *const *layers, int64_t chan_base,
              yajl_val procs)
{
  const sbx_sandbox_opts *o = &sb->opts;
  j_map (g);
  j_kstr (g, "id", snap);
  j_kint (g, "created", now_unix ());
  j_kstr (g, "sandbox", sb->id);
  j_kstr (g, "runtime", o->runtime);
  j_kstrv (g, "layers", layers);
  j_kstrv (g, "env", sb->image_env);
  j_kstr (g, "workdir", sb->image_workdir);
  j_kint (g, "chan_base", chan_base);
  /* What the monitor's process table held (mon_restore_procs in monitor-proc.c). */
  j_str (g, "procs");
  if (procs && YAJL_IS_ARRAY (procs))
    j_val (g, procs);
  else
    {
      j_arr (g);
      j_endarr (g);
    }
  j_str (g, "options");
  sbx_sandbox_opts_gen (g, o);
  j_endmap (g);
}

/* runc checkpoints through CRIU: say why that is not on offer here. */
static int
refuse_runtime (const char *id, const char *runtime, sbx_error **err)
{
  static const char *const where[] = { "/usr/sbin/criu", "/sbin/criu", "/usr/bin/criu", "/usr/local/sbin/criu" };
  const char *criu = NULL;
  for (size_t i = 0; i < ARRAY_SIZE (where) && criu == NULL; i++)
    if (access (where[i], X_OK) == 0)
      criu = where[i];
  char *check[] = { (char *) criu, (char *) "check", NULL };
  _cleanup_free_ char *out = NULL, *errtext = NULL;
  int status = -1;
  bool have = criu && sbx_spawn_capture (check, 1 << 16, &out, &errtext, &status, NULL) == 0 && status != 127;
  const char *why = !have         ? "CRIU is not installed"
                    : status != 0 ? "`criu check` fails on this kernel"
                                  : "sbx restores runsc checkpoints only";
  char first[256] = "";
  if (have && status != 0 && errtext)
    snprintf (first, sizeof first, " (%.*s)", (int) strcspn (errtext, "\n"), errtext);
  return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0,
                        "sandbox %s runs on %s: memory snapshots need runsc here: %s%s", id, runtime, why, first);
}

int
sbx_snapshot_create (const sbx_store *st, const char *id, char **ret_snap, sbx_error **err)
{
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (sbx_sandbox_get (st, id, &sb, err) < 0 || sbx_store_begin_write (st, "snapshot", err) < 0)
    return -1;
  if (strcmp (sb->opts.runtime, "runsc") != 0)
    return refuse_runtime (id, sb->opts.runtime, err);
  if (sb->state != SBX_STATE_RUNNING)
    return sbx_error_set (err, SBX_E_SANDBOX_NOT_RUNNING, 0, "sandbox %s is %s", id, sbx_state_name (sb->state));
  _cleanup_close_ int layers_lock = sbx_store_layers_lock (st, LOCK_SH, err);
  if (layers_lock < 0)
    return -1;
  /* What the sandbox wrote reaches its files before its memory is saved. */
  char *sync_argv[] = { (char *) "/.sbx/init", (char *) "--sync", NULL };
  sbx_exec_opts eo = { .argv = sync_argv };
  int status = 0;
  if (sbx_client_exec (st, id, &eo, -1, -1, 2, &status, err) < 0)
    return -1;
  _cleanup_free_ char *rnd = random_hex (6);
  _cleanup_free_ char *snap = xasprintf ("snap-%s", rnd);
  _cleanup_free_ char *tmp = sbx_store_path (st, "snapshots/.tmp-%s", snap);
  _cleanup_free_ char *ckpt = xasprintf ("%s/checkpoint", tmp);
  _cleanup_free_ char *final = sbx_store_path (st, "snapshots/%s", snap);
  if (mkdir_p (ckpt, 0700, err) < 0)
    return -1;
  /* Locked while it is made: gc removes only unlocked leftovers. */
  _cleanup_close_ int tmplock = open (tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (tmplock < 0 || flock (tmplock, LOCK_EX) < 0)
    return sbx_error_errno (err, errno, "lock `%s`", tmp);
  int r = 0;
  _cleanup_yajl_val_ yajl_val v = NULL;
  int64_t next_chan = 0;
  if (sbx_client_snapshot (st, id, ckpt, &v, err) < 0)
    r = -1;
  else
    j_get_int (v, "next_chan", false, &next_chan, NULL);
  /* The checkpoint ended it: once its monitor is done, its files are still. */
  if (r == 0 && sbx_sandbox_terminate (st, id, 60000, err) < 0)
    r = -1;
  _cleanup_free_ char *digest = NULL;
  uint64_t size = 0;
  if (r == 0 && sbx_layer_from_upper (st, id, &digest, &size, err) < 0)
    r = -1;
  if (r == 0)
    {
      _cleanup_strv_ char **layers = strv_dup (sb->layers);
      strv_push (&layers, digest);
      _cleanup_yajl_gen_ yajl_gen g = j_new (true);
      snapshot_doc (g, snap, sb, layers, next_chan, j_get (v, "procs"));
      size_t len;
      _cleanup_free_ char *doc = j_take (g, &len);
      _cleanup_free_ char *path = xasprintf ("%s/snapshot.json", tmp);
      if (write_file_atomic (path, doc, len, 0600, err) < 0 || rename (tmp, final) < 0)
        r = r < 0 ? r : sbx_error_errno (err, errno, "store snapshot %s", snap);
    }
  if (r < 0)
    {
      rm_rf (tmp, NULL);
      return sbx_error_wrap (err, "snapshot %s", id);
    }
  *ret_snap = steal_pointer (&snap);
  return 0;
}

static int
load_snapshot (const sbx_store *st, const char *snap, yajl_val *ret, sbx_error **err)
{
  if (!sbx_snapshot_id_valid (snap))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is not a snapshot id (snap-XXXXXXXXXXXX)", snap);
  _cleanup_free_ char *path = sbx_store_path (st, "snapshots/%s/snapshot.json", snap);
  _cleanup_free_ char *msg = xasprintf ("snapshot %s not found", snap);
  return j_read_file (path, SBX_SNAPSHOT_JSON_MAX, "snapshot", msg, ret, err);
}

/* The create options a snapshot's sandboxes get: the source's (read by
 * the reader of state.json's, next to their writer in sandbox.c). */
static int
restore_opts (yajl_val v, sbx_sandbox_opts *o, sbx_error **err)
{
  memset (o, 0, sizeof *o);
  yajl_val opts = j_get (v, "options");
  if (opts == NULL || !YAJL_IS_OBJECT (opts))
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "snapshot without options");
  o->keep_warm = SBX_KEEP_WARM_DEFAULT;
  o->timeout = SBX_TIMEOUT_DEFAULT;
  o->disk = -1; /* a snapshot from before disk limits: sbx.conf's default */
  if (sbx_sandbox_opts_parse (opts, o, err) < 0)
    {
      sbx_sandbox_opts_clear (o);
      return -1;
    }
  free (o->runtime);
  o->runtime = xstrdup ("runsc");
  if (o->env == NULL)
    o->env = xmalloc0 (sizeof (char *));
  return 0;
}

int
sbx_snapshot_restore (const sbx_store *st, const char *snap, int64_t count, char ***ret_ids, sbx_error **err)
{
  if (count < 1 || count > SBX_RESTORE_COUNT_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "restore: the count must be between 1 and %d",
                          SBX_RESTORE_COUNT_MAX);
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (load_snapshot (st, snap, &v, err) < 0)
    return -1;
  _cleanup_image_ sbx_image *img = xmalloc0 (sizeof *img);
  const char *workdir = NULL;
  int64_t chan_base = 0;
  if (j_get_strv (v, "layers", true, &img->layers, err) < 0 || j_get_strv (v, "env", false, &img->env, err) < 0
      || j_get_str (v, "workdir", false, &workdir, err) < 0 || j_get_int (v, "chan_base", false, &chan_base, err) < 0)
    return -1;
  img->workdir = xstrdup (workdir ? workdir : "/");
  for (size_t i = 0; img->layers[i]; i++)
    if (sbx_layer_check (st->root, img->layers[i], err) < 0)
      return sbx_error_wrap (err, "restore %s", snap);
  _cleanup_free_ char *ckpt = sbx_store_path (st, "snapshots/%s/checkpoint", snap);
  /* All or nothing: the ids are returned once every restore ran; when one
   * fails, those restored before it are ended and removed. */
  _cleanup_strv_ char **ids = xmalloc0 (sizeof (char *));
  for (int64_t i = 0; i < count; i++)
    {
      sbx_sandbox_opts o;
      _cleanup_sandbox_ sbx_sandbox *sb = NULL;
      if (restore_opts (v, &o, err) < 0 || sbx_sandbox_restore (st, &o, img, ckpt, chan_base, &sb, err) < 0)
        {
          sbx_sandbox_opts_clear (&o);
          for (size_t j = 0; ids[j]; j++)
            {
              sbx_sandbox_terminate (st, ids[j], -1, NULL);
              sbx_sandbox_remove (st, ids[j], NULL);
            }
          if (ids[0])
            return sbx_error_wrap (err, "restore %s (the %zu restored before were ended and removed)", snap,
                                   strv_len (ids));
          return sbx_error_wrap (err, "restore %s", snap);
        }
      sbx_sandbox_opts_clear (&o);
      strv_push (&ids, sb->id);
    }
  *ret_ids = steal_pointer (&ids);
  return 0;
}

void
sbx_snapshot_info_free (sbx_snapshot_info *v, size_t n)
{
  for (size_t i = 0; v && i < n; i++)
    {
      free (v[i].id);
      free (v[i].sandbox);
    }
  free (v);
}

int
sbx_snapshot_list (const sbx_store *st, sbx_snapshot_info **ret, size_t *ret_n, sbx_error **err)
{
  _cleanup_free_ char *dir = sbx_store_path (st, "snapshots");
  _cleanup_strv_ char **ids = xmalloc0 (sizeof (char *));
  _cleanup_closedir_ DIR *d = opendir (dir);
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    if (sbx_snapshot_id_valid (de->d_name))
      strv_push (&ids, de->d_name);
  sbx_snapshot_info *v = xmalloc0 ((strv_len (ids) + 1) * sizeof *v);
  size_t n = 0;
  for (size_t i = 0; ids[i]; i++)
    {
      _cleanup_yajl_val_ yajl_val doc = NULL;
      if (load_snapshot (st, ids[i], &doc, NULL) < 0)
        continue;
      const char *from = NULL;
      int64_t created = 0;
      j_get_str (doc, "sandbox", false, &from, NULL);
      j_get_int (doc, "created", false, &created, NULL);
      v[n].id = xstrdup (ids[i]);
      v[n].sandbox = from ? xstrdup (from) : NULL;
      v[n].created = created;
      n++;
    }
  *ret = v;
  *ret_n = n;
  return 0;
}

int
sbx_snapshot_remove (const sbx_store *st, const char *snap, sbx_error **err)
{
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (load_snapshot (st, snap, &v, err) < 0)
    return -1;
  _cleanup_free_ char *dir = sbx_store_path (st, "snapshots/%s", snap);
  _cleanup_free_ char *gone = sbx_store_path (st, "snapshots/.rm-%s", snap);
  if (rename (dir, gone) < 0 || rm_rf (gone, err) < 0)
    return errno ? sbx_error_errno (err, errno, "remove snapshot %s", snap) : -1;
  return 0;
}
