/* Pulling an image from a registry into the store (pull.h): the reference
 * resolved, the manifest read (an index resolved to one platform), every
 * document bounded, each missing layer streamed from the registry through
 * a pipe into the layer import (hashed as it goes, checked against its
 * descriptor and the config's diff_id) and installed as soon as it is
 * complete, up to SBX_PULL_PARALLEL at once.
 *
 * Threads: each download is a pair, one thread moving the blob from libcurl
 * into a pipe (sbx_registry_get_blob) and one staging it from the pipe
 * (sbx_layer_stage, which forks its extraction helper: that child only
 * runs the extraction and closes every descriptor it was not given). The
 * steps that touch the layer store's names (check, extract verdict,
 * install, alias) run under one mutex. Progress events are sent from the
 * calling thread only. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "imageref.h"
#include "json.h"
#include "layer-internal.h"
#include "layer.h"
#include "lifecycle.h"
#include "oci-internal.h"
#include "pull.h"
#include "registry.h"
#include "util.h"

/* The most entries an image index may have: more is RESOURCE_EXHAUSTED
 * (real multi-platform images have a few dozen at most). */
#define SBX_PULL_INDEX_MAX 256
#define PULLED_FILE "images/pulled.json"
#define PULLED_MAX 4096 /* entries kept in PULLED_FILE */
#define PLATFORM_PART_MAX 32

#define MT_SCHEMA1 "application/vnd.docker.distribution.manifest.v1+json"
#define MT_SCHEMA1_SIGNED "application/vnd.docker.distribution.manifest.v1+prettyjws"

int
sbx_pull_policy_parse (const char *s, sbx_pull_policy *ret, sbx_error **err)
{
  if (s && strcmp (s, "missing") == 0)
    *ret = SBX_PULL_MISSING;
  else if (s && strcmp (s, "always") == 0)
    *ret = SBX_PULL_ALWAYS;
  else if (s && strcmp (s, "never") == 0)
    *ret = SBX_PULL_NEVER;
  else
    {
      _cleanup_free_ char *shown = printable_escaped (s ? s : "", 64);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid pull policy `%s`: one of missing, always, never",
                            shown);
    }
  return 0;
}

/* ---- platforms ---- */

typedef struct platform {
  char os[PLATFORM_PART_MAX + 1], arch[PLATFORM_PART_MAX + 1], variant[PLATFORM_PART_MAX + 1];
} platform;

static bool
part_ok (const char *s, size_t n)
{
  if (n == 0 || n > PLATFORM_PART_MAX)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
      return false;
  return true;
}

/* "OS/ARCH[/VARIANT]"; NULL: linux and this host's architecture. */
static int
platform_parse (const char *s, platform *ret, sbx_error **err)
{
  *ret = (platform){ 0 };
  if (s == NULL)
    {
      strcpy (ret->os, "linux");
      snprintf (ret->arch, sizeof ret->arch, "%s", sbx_oci_host_arch ());
      return 0;
    }
  const char *a = strchr (s, '/');
  const char *v = a ? strchr (a + 1, '/') : NULL;
  size_t al = a ? (size_t) ((v ? v : a + 1 + strlen (a + 1)) - (a + 1)) : 0;
  if (a == NULL || !part_ok (s, (size_t) (a - s)) || !part_ok (a + 1, al) || (v && !part_ok (v + 1, strlen (v + 1))))
    {
      _cleanup_free_ char *shown = printable_escaped (s, 100);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                            "invalid platform `%s`: OS/ARCH[/VARIANT] (linux/amd64, linux/arm64/v8)", shown);
    }
  memcpy (ret->os, s, (size_t) (a - s));
  memcpy (ret->arch, a + 1, al);
  if (v)
    strcpy (ret->variant, v + 1);
  return 0;
}

static char *
platform_string (const platform *p)
{
  return xasprintf ("%s/%s%s%s", p->os, p->arch, p->variant[0] ? "/" : "", p->variant);
}

/* The variant an unspecified one means (as containerd normalizes). */
static const char *
default_variant (const char *arch)
{
  return strcmp (arch, "arm64") == 0 ? "v8" : "";
}

/* ---- the documents ---- */

static const char *
str_at (yajl_val obj, const char *key)
{
  yajl_val v = j_get (obj, key);
  return YAJL_IS_STRING (v) ? v->u.string : NULL;
}

static bool
digest_ok (const char *d)
{
  return d && strncmp (d, "sha256:", 7) == 0 && strlen (d) == 71 && is_lower_hex (d + 7, 64);
}

typedef enum doc_kind {
  DOC_INDEX,
  DOC_MANIFEST,
} doc_kind;

/* What BODY (served as MT) is; schema 1 and other media types are refused
 * by name. */
static int
doc_kind_of (const char *ref, const char *mt, yajl_val v, doc_kind *ret, sbx_error **err)
{
  int64_t version = 0;
  yajl_val sv = j_get (v, "schemaVersion");
  if (YAJL_IS_INTEGER (sv))
    version = YAJL_GET_INTEGER (sv);
  if (strcmp (mt, MT_SCHEMA1) == 0 || strcmp (mt, MT_SCHEMA1_SIGNED) == 0 || version == 1)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "%s: a Docker schema 1 manifest (%s), which sbx does not pull: push it again with a "
                          "current tool",
                          ref, mt[0] ? mt : MT_SCHEMA1);
  const char *body_mt = str_at (v, "mediaType");
  const char *use = mt_is_index (mt) || mt_is_manifest (mt) ? mt : body_mt;
  if (use && mt_is_index (use))
    *ret = DOC_INDEX;
  else if (use && mt_is_manifest (use))
    *ret = DOC_MANIFEST;
  else
    {
      _cleanup_free_ char *shown = printable_masked (mt[0] ? mt : (body_mt ? body_mt : "none"), 120, "none");
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                            "%s: a manifest of media type `%s`, which sbx does not pull", ref, shown);
    }
  return 0;
}

/* The entry of index V for platform P: its digest and size. None is
 * INVALID_ARGUMENT listing what there is. */
static int
index_pick (const char *ref, yajl_val v, const platform *p, char **ret_digest, uint64_t *ret_size, sbx_error **err)
{
  yajl_val m = j_get (v, "manifests");
  if (!YAJL_IS_ARRAY (m))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: an index without manifests", ref);
  if (m->u.array.len > SBX_PULL_INDEX_MAX)
    return sbx_error_set (err, SBX_E_RESOURCE_EXHAUSTED, 0, "%s: an index of %zu entries, over %d", ref, m->u.array.len,
                          SBX_PULL_INDEX_MAX);
  const char *want_variant = p->variant[0] ? p->variant : default_variant (p->arch);
  yajl_val best = NULL;
  _cleanup_free_ char *seen = xstrdup ("");
  for (size_t i = 0; i < m->u.array.len; i++)
    {
      yajl_val e = m->u.array.values[i], pl = j_get (e, "platform");
      const char *os = YAJL_IS_OBJECT (pl) ? str_at (pl, "os") : NULL;
      const char *arch = YAJL_IS_OBJECT (pl) ? str_at (pl, "architecture") : NULL;
      const char *variant = YAJL_IS_OBJECT (pl) ? str_at (pl, "variant") : NULL;
      if (!YAJL_IS_OBJECT (e) || os == NULL || arch == NULL || strcmp (os, "unknown") == 0)
        continue; /* attestations, and entries that name no platform */
      if (strlen (seen) < 400 && part_ok (os, strlen (os)) && part_ok (arch, strlen (arch)))
        {
          char *n = xasprintf ("%s%s%s/%s%s%s", seen, seen[0] ? ", " : "", os, arch,
                               variant && part_ok (variant, strlen (variant)) ? "/" : "",
                               variant && part_ok (variant, strlen (variant)) ? variant : "");
          free (seen);
          seen = n;
        }
      if (strcmp (os, p->os) != 0 || strcmp (arch, p->arch) != 0)
        continue;
      const char *have = variant ? variant : default_variant (arch);
      if (strcmp (have, want_variant) == 0 || (best == NULL && !p->variant[0]))
        {
          if (best == NULL || strcmp (have, want_variant) == 0)
            best = e;
          if (strcmp (have, want_variant) == 0)
            break;
        }
    }
  if (best == NULL)
    {
      _cleanup_free_ char *want = platform_string (p);
      return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "%s: no image for %s; the index has: %s (--platform)", ref, want,
                            seen[0] ? seen : "none");
    }
  const char *digest = str_at (best, "digest");
  const char *mt = str_at (best, "mediaType");
  yajl_val sz = j_get (best, "size");
  if (!digest_ok (digest) || !YAJL_IS_INTEGER (sz) || YAJL_GET_INTEGER (sz) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: an index entry without a sha256 digest and size", ref);
  if (mt && mt_is_index (mt))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: an index inside an index", ref);
  if (YAJL_GET_INTEGER (sz) > SBX_REGISTRY_MANIFEST_MAX)
    return sbx_error_set (err, SBX_E_RESOURCE_EXHAUSTED, 0, "%s: a manifest over %d MiB", ref,
                          SBX_REGISTRY_MANIFEST_MAX >> 20);
  *ret_digest = xstrdup (digest);
  *ret_size = (uint64_t) YAJL_GET_INTEGER (sz);
  return 0;
}

/* The manifest: its layer count bounded first, then parsed; foreign
 * (non-distributable Windows) layers refused by name. */
static int
manifest_parse (const char *ref, const char *body, size_t len, yajl_val v, sbx_oci_manifest **ret, sbx_error **err)
{
  yajl_val layers = j_get (v, "layers");
  if (YAJL_IS_ARRAY (layers) && layers->u.array.len > SBX_PULL_LAYERS_MAX)
    return sbx_error_set (err, SBX_E_RESOURCE_EXHAUSTED, 0, "%s: %zu layers, over %d", ref, layers->u.array.len,
                          SBX_PULL_LAYERS_MAX);
  for (size_t i = 0; YAJL_IS_ARRAY (layers) && i < layers->u.array.len; i++)
    {
      const char *mt = str_at (layers->u.array.values[i], "mediaType");
      if (mt && strstr (mt, "foreign"))
        {
          _cleanup_free_ char *shown = printable_masked (mt, 120, "");
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                                "%s: layer %zu is a foreign layer (%s), which sbx does not pull", ref, i + 1, shown);
        }
    }
  if (sbx_oci_parse_manifest (body, len, ret, err) < 0)
    return sbx_error_wrap (err, "%s", ref);
  if ((*ret)->n_layers == 0)
    {
      sbx_oci_manifest_free (*ret);
      *ret = NULL;
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: a manifest without layers", ref);
    }
  return 0;
}

/* ---- what was pulled: ROOT/images/pulled.json ---- */

/* {"REGISTRY/REPO@DIGEST PLATFORM": "IMAGE-ID"}: the image a document
 * (a manifest or index) gave, so that pulling it again is one request. */
static char *
pulled_key (const sbx_imageref *r, const char *digest, const platform *p)
{
  _cleanup_free_ char *ps = platform_string (p);
  return xasprintf ("%s/%s@%s %s", r->registry, r->repository, digest, ps);
}

static char *
pulled_lookup (const sbx_store *st, const char *key)
{
  _cleanup_free_ char *path = sbx_store_path (st, PULLED_FILE);
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (j_read_file (path, 4 << 20, "pulled.json", "", &v, NULL) < 0 || !YAJL_IS_OBJECT (v))
    return NULL;
  const char *id = str_at (v, key);
  return id ? xstrdup (id) : NULL;
}

static int
pulled_record (const sbx_store *st, const char *key, const char *id, sbx_error **err)
{
  _cleanup_free_ char *lockp = sbx_store_path (st, "images/pulled.lock");
  _cleanup_close_ int lk = lock_path (lockp, LOCK_EX, err);
  if (lk < 0)
    return -1;
  _cleanup_free_ char *path = sbx_store_path (st, PULLED_FILE);
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (j_read_file (path, 4 << 20, "pulled.json", "", &v, NULL) < 0 || !YAJL_IS_OBJECT (v))
    v = NULL;
  _cleanup_yajl_gen_ yajl_gen g = j_new (true);
  j_map (g);
  size_t n = v ? v->u.object.len : 0, kept = 0;
  /* The newest PULLED_MAX - 1 others, of images still there. */
  for (size_t i = n > PULLED_MAX - 1 ? n - (PULLED_MAX - 1) : 0; i < n; i++)
    {
      const char *k = v->u.object.keys[i];
      yajl_val val = v->u.object.values[i];
      if (strcmp (k, key) == 0 || !YAJL_IS_STRING (val))
        continue;
      _cleanup_image_ sbx_image *img = NULL;
      if (sbx_image_load (st, val->u.string, &img, NULL) < 0)
        continue;
      j_kstr (g, k, val->u.string);
      kept++;
    }
  j_kstr (g, key, id);
  j_endmap (g);
  size_t len;
  _cleanup_free_ char *text = j_take (g, &len);
  return write_file_atomic (path, text, len, 0600, err);
}

/* The image ID names, when it is there with all its layers. */
static int
image_usable (const sbx_store *st, const char *id, sbx_image **ret)
{
  _cleanup_image_ sbx_image *img = NULL;
  if (id == NULL || sbx_image_load (st, id, &img, NULL) < 0)
    return -1;
  for (size_t i = 0; img->layers && img->layers[i]; i++)
    if (sbx_layer_check (st->root, img->layers[i], NULL) < 0)
      return -1;
  *ret = steal_pointer (&img);
  return 0;
}

/* ---- layers ---- */

typedef struct pull_ctx pull_ctx;

typedef enum job_state {
  JOB_WAITING,
  JOB_PRESENT, /* in the store: not downloaded */
  JOB_RUNNING,
  JOB_DONE,
  JOB_FAILED,
} job_state;

typedef struct job {
  pull_ctx *ctx;
  unsigned index;
  const sbx_oci_desc *desc;
  const char *diff_id;
  job_state state;
  bool reported_start, joined;
  pthread_t thread;
  uint64_t done; /* bytes so far: under ctx->lock */
  char *name;    /* the layer in the store */
  uint64_t size; /* its files */
  sbx_error *err;
  /* the download half */
  int wfd;
  sbx_error *dl_err;
} job;

struct pull_ctx {
  const char *root;
  sbx_registry *reg;
  const sbx_pull_opts *o;
  pthread_mutex_t lock;  /* job states and counters */
  pthread_cond_t cond;   /* a job finished */
  pthread_mutex_t store; /* the layer store's names */
  volatile int stop;     /* another layer failed: stop the downloads */
};

static bool
o_cancelled (const sbx_pull_opts *o)
{
  return o && o->cancel && *o->cancel;
}

static bool
cancelled (const pull_ctx *c)
{
  return c->stop || (c->o && c->o->cancel && *c->o->cancel);
}

static int
job_progress (void *ud, uint64_t done, uint64_t total)
{
  job *j = ud;
  (void) total;
  pthread_mutex_lock (&j->ctx->lock);
  j->done = done;
  pthread_mutex_unlock (&j->ctx->lock);
  return cancelled (j->ctx) ? 1 : 0;
}

static void *
download_thread (void *arg)
{
  job *j = arg;
  sbx_registry_get_blob (j->ctx->reg, j->desc->digest, j->desc->size, 0, j->wfd, job_progress, j, &j->dl_err);
  closep (&j->wfd);
  return NULL;
}

/* The layer J names, when the store has it: by diff_id, or by an alias
 * (of the diff_id: an export's tar; of the blob: an earlier pull). */
static char *
layer_present (const char *root, const job *j)
{
  if (sbx_layer_check (root, j->diff_id, NULL) == 0)
    return xstrdup (j->diff_id);
  char *t = alias_target (root, j->diff_id);
  return t ? t : alias_target (root, j->desc->digest);
}

/* Downloads, stages, checks and installs layer J. */
static int
job_run (job *j, sbx_error **err)
{
  pull_ctx *c = j->ctx;
  int p[2];
  if (pipe2 (p, O_CLOEXEC) < 0)
    return sbx_error_errno (err, errno, "pipe");
  _cleanup_close_ int rfd = p[0];
  j->wfd = p[1];
  pthread_t dl;
  if (thread_start_quiet (&dl, download_thread, j) != 0)
    {
      closep (&j->wfd);
      return sbx_error_errno (err, EAGAIN, "start a download");
    }
  _cleanup_layer_staged_ sbx_layer_staged *s = NULL;
  sbx_error *serr = NULL;
  int rc = sbx_layer_stage (c->root, rfd, j->diff_id, &s, &serr);
  closep (&rfd); /* a download still going gets EPIPE and stops */
  pthread_join (dl, NULL);
  if (j->dl_err && (j->dl_err->errnum != EPIPE || rc == 0))
    {
      sbx_error_free (serr);
      *err = steal_pointer (&j->dl_err);
      return -1;
    }
  if (rc < 0)
    {
      *err = serr;
      return -1;
    }
  uint64_t size;
  const char *blob = sbx_layer_staged_blob (s, &size);
  if (strcmp (blob, j->desc->digest) != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "digest mismatch: the blob of %s is %s", j->desc->digest,
                          blob);
  if (size != j->desc->size)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the blob has %llu bytes, its descriptor says %llu",
                          (unsigned long long) size, (unsigned long long) j->desc->size);
  if (strcmp (sbx_layer_staged_digest (s), j->diff_id) != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "digest mismatch: its tar is %s, the config's diff_id says %s", sbx_layer_staged_digest (s),
                          j->diff_id);
  pthread_mutex_lock (&c->store);
  rc = sbx_layer_staged_extract (c->root, s, err);
  if (rc == 0)
    rc = sbx_layer_staged_install (c->root, s, &j->size, err);
  if (rc == 0)
    {
      j->name = xstrdup (sbx_layer_staged_name (s));
      sbx_layer_alias (c->root, j->name, j->desc->digest, NULL);
    }
  pthread_mutex_unlock (&c->store);
  return rc;
}

static void *
job_thread (void *arg)
{
  job *j = arg;
  sbx_error *e = NULL;
  int rc = job_run (j, &e);
  pthread_mutex_lock (&j->ctx->lock);
  if (rc < 0)
    {
      j->err = e;
      j->state = JOB_FAILED;
      j->ctx->stop = 1;
    }
  else
    j->state = JOB_DONE;
  pthread_cond_signal (&j->ctx->cond);
  pthread_mutex_unlock (&j->ctx->lock);
  return NULL;
}

static void
emit (const pull_ctx *c, sbx_pull_event_kind kind, const job *j, unsigned n, uint64_t done)
{
  if (c->o == NULL || c->o->progress == NULL)
    return;
  sbx_pull_event ev = { .kind = kind,
                        .digest = j ? j->desc->digest : NULL,
                        .index = j ? j->index : 0,
                        .n_layers = n,
                        .done = done,
                        .total = j ? j->desc->size : 0 };
  c->o->progress (c->o->ud, &ev);
}

/* Runs the jobs, SBX_PULL_PARALLEL at once, sending events from here. */
static int
run_jobs (pull_ctx *c, job *jobs, unsigned n, sbx_error **err)
{
  unsigned next = 0, running = 0;
  pthread_mutex_lock (&c->lock);
  for (;;)
    {
      while (running < SBX_PULL_PARALLEL && next < n && !cancelled (c))
        {
          job *j = &jobs[next++];
          if (j->state != JOB_WAITING)
            continue;
          if (thread_start_quiet (&j->thread, job_thread, j) != 0)
            {
              j->state = JOB_FAILED;
              j->joined = true;
              sbx_error_set (&j->err, SBX_E_INTERNAL, EAGAIN, "start a thread");
              c->stop = 1;
              break;
            }
          j->state = JOB_RUNNING;
          running++;
        }
      /* Events, outside the lock. */
      uint64_t done[SBX_PULL_LAYERS_MAX];
      job_state st[SBX_PULL_LAYERS_MAX];
      for (unsigned i = 0; i < n; i++)
        done[i] = jobs[i].done, st[i] = jobs[i].state;
      pthread_mutex_unlock (&c->lock);
      for (unsigned i = 0; i < n; i++)
        {
          job *j = &jobs[i];
          if ((st[i] == JOB_RUNNING || st[i] == JOB_DONE) && !j->reported_start)
            {
              j->reported_start = true;
              emit (c, SBX_PULL_EV_LAYER_START, j, n, 0);
            }
          if (st[i] == JOB_RUNNING)
            emit (c, SBX_PULL_EV_LAYER_PROGRESS, j, n, done[i]);
          if ((st[i] == JOB_DONE || st[i] == JOB_FAILED) && !j->joined)
            {
              pthread_join (j->thread, NULL);
              j->joined = true;
              running--;
              if (st[i] == JOB_DONE)
                emit (c, SBX_PULL_EV_LAYER_DONE, j, n, j->desc->size);
            }
        }
      pthread_mutex_lock (&c->lock);
      if (running == 0 && (next >= n || cancelled (c)))
        break;
      struct timespec until;
      clock_gettime (CLOCK_REALTIME, &until);
      until.tv_nsec += 200 * 1000 * 1000;
      if (until.tv_nsec >= 1000000000)
        until.tv_sec++, until.tv_nsec -= 1000000000;
      pthread_cond_timedwait (&c->cond, &c->lock, &until);
    }
  pthread_mutex_unlock (&c->lock);
  /* The first failure that is not the stop it caused in the others. */
  sbx_error *first = NULL;
  for (unsigned i = 0; i < n; i++)
    if (jobs[i].err && (first == NULL || (first->errnum == ECANCELED && jobs[i].err->errnum != ECANCELED)))
      first = jobs[i].err;
  if (first && !(first->errnum == ECANCELED && c->o && c->o->cancel && *c->o->cancel))
    {
      for (unsigned i = 0; i < n; i++)
        if (jobs[i].err == first)
          {
            *err = steal_pointer (&jobs[i].err);
            return sbx_error_wrap (err, "layer %u (%s)", i + 1, jobs[i].desc->digest);
          }
    }
  if (c->o && c->o->cancel && *c->o->cancel)
    return sbx_error_set (err, SBX_E_INTERNAL, ECANCELED, "pull interrupted; finished layers are kept");
  return 0;
}

/* ---- the pull ---- */

static int
image_from (const sbx_oci_config *cfg, job *jobs, unsigned n, sbx_image **ret)
{
  _cleanup_image_ sbx_image *img = xmalloc0 (sizeof *img);
  img->layers = xmalloc0 (sizeof (char *));
  for (unsigned i = 0; i < n; i++)
    {
      strv_push (&img->layers, jobs[i].name);
      img->size += jobs[i].size;
    }
  img->env = cfg->env ? strv_dup (cfg->env) : xmalloc0 (sizeof (char *));
  if (strv_env_get (img->env, "PATH") == NULL)
    strv_push (&img->env, "PATH=" SBX_DEFAULT_PATH);
  img->workdir = xstrdup (cfg->workdir ? cfg->workdir : "/");
  img->cmd = cfg->cmd && cfg->cmd[0] ? strv_dup (cfg->cmd) : NULL;
  img->user = cfg->user ? xstrdup (cfg->user) : NULL;
  *ret = steal_pointer (&img);
  return 0;
}

/* The size of layer NAME the store has (its size file). */
static uint64_t
layer_size (const char *root, const char *name)
{
  _cleanup_free_ char *dir = sbx_layer_dir (root, name);
  _cleanup_free_ char *path = dir ? xasprintf ("%s/size", dir) : NULL;
  _cleanup_free_ char *text = NULL;
  int64_t v = 0;
  if (path && read_file (path, 64, &text, NULL, NULL) == 0)
    {
      text[strcspn (text, "\n")] = '\0';
      if (parse_int64 (text, 0, INT64_MAX, &v) < 0)
        v = 0;
    }
  return (uint64_t) v;
}

static void
jobs_free (job *jobs, unsigned n)
{
  for (unsigned i = 0; jobs && i < n; i++)
    {
      free (jobs[i].name);
      sbx_error_free (jobs[i].err);
      sbx_error_free (jobs[i].dl_err);
    }
  free (jobs);
}

/* The layers of M (with CFG's diff_ids) into the store; *ret_img then
 * holds them with CFG's settings. The caller holds the layer lock. */
static int
pull_layers (const sbx_store *st, sbx_registry *reg, const sbx_pull_opts *o, const sbx_oci_manifest *m,
             const sbx_oci_config *cfg, sbx_image **ret_img, sbx_error **err)
{
  unsigned n = (unsigned) m->n_layers;
  job *jobs = xmalloc0 (n * sizeof *jobs);
  pull_ctx c = { .root = st->root, .reg = reg, .o = o };
  pthread_mutex_init (&c.lock, NULL);
  pthread_mutex_init (&c.store, NULL);
  pthread_cond_init (&c.cond, NULL);
  /* Loaded here, not first in a thread. */
  int rc = sbx_archive_load (err);
  for (unsigned i = 0; rc == 0 && i < n; i++)
    {
      job *j = &jobs[i];
      *j = (job){ .ctx = &c, .index = i, .desc = &m->layers[i], .diff_id = cfg->diff_ids[i], .wfd = -1 };
      j->name = layer_present (st->root, j);
      if (j->name)
        {
          j->state = JOB_PRESENT;
          j->size = layer_size (st->root, j->name);
          emit (&c, SBX_PULL_EV_LAYER_PRESENT, j, n, j->desc->size);
        }
    }
  if (rc == 0)
    rc = run_jobs (&c, jobs, n, err);
  bool any = false;
  for (unsigned i = 0; i < n; i++)
    any |= jobs[i].state == JOB_DONE;
  if (any)
    sbx_layer_settle_later (st->root);
  if (rc == 0)
    image_from (cfg, jobs, n, ret_img);
  jobs_free (jobs, n);
  pthread_cond_destroy (&c.cond);
  pthread_mutex_destroy (&c.store);
  pthread_mutex_destroy (&c.lock);
  return rc;
}

static int
config_check (const char *ref, const sbx_oci_config *cfg, const sbx_oci_manifest *m, const platform *p, sbx_error **err)
{
  if ((cfg->os && strcmp (cfg->os, p->os) != 0) || (cfg->arch && strcmp (cfg->arch, p->arch) != 0))
    {
      _cleanup_free_ char *os = printable_masked (cfg->os, 32, "?"), *arch = printable_masked (cfg->arch, 32, "?");
      _cleanup_free_ char *want = platform_string (p);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: the image is for %s/%s, not %s", ref, os, arch, want);
    }
  size_t nd = cfg->diff_ids ? strv_len (cfg->diff_ids) : 0;
  if (nd != m->n_layers)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "%s: the config has %zu diff_ids for the manifest's %zu layers", ref, nd, m->n_layers);
  return 0;
}

static int
image_size_check (const sbx_image *img, sbx_error **err)
{
  uint64_t max = sbx_layer_size_max ();
  if (max > 0 && img->size > max)
    return sbx_error_set (err, SBX_E_RESOURCE_EXHAUSTED, 0,
                          "the image's %zu layers expand to %llu MiB, past %llu MiB (image_size_max in sbx.conf)",
                          strv_len (img->layers), (unsigned long long) (img->size >> 20),
                          (unsigned long long) (max >> 20));
  return 0;
}

typedef struct pull_run {
  const sbx_store *st;
  const sbx_conf *conf;
  const sbx_pull_opts *o;
  sbx_imageref *ref;
  char *full;
  platform plat;
  sbx_registry *reg;
} pull_run;

/* The manifest for the run's platform: BODY, parsed; *ret_top the digest
 * of the first document (the index, or the manifest itself). */
static int
resolve_manifest (pull_run *p, char **ret_top, char **ret_body, size_t *ret_len, sbx_image **ret_present,
                  sbx_error **err)
{
  _cleanup_free_ char *body = NULL, *mt = NULL, *digest = NULL;
  size_t len;
  const char *reference = p->ref->digest ? p->ref->digest : p->ref->tag;
  if (sbx_registry_get_manifest (p->reg, reference, &body, &len, &mt, &digest, err) < 0)
    return sbx_error_wrap (err, "pull %s", p->full);
  /* Pulled before: one request. */
  _cleanup_free_ char *key = pulled_key (p->ref, digest, &p->plat);
  _cleanup_free_ char *id = pulled_lookup (p->st, key);
  if (id && image_usable (p->st, id, ret_present) == 0)
    {
      *ret_top = steal_pointer (&digest);
      return 0;
    }
  for (int depth = 0;; depth++)
    {
      _cleanup_yajl_val_ yajl_val v = NULL;
      doc_kind kind = DOC_MANIFEST;
      if (parse_json (body, len, p->full, &v, err) < 0 || doc_kind_of (p->full, mt, v, &kind, err) < 0)
        return -1;
      if (kind == DOC_MANIFEST)
        break;
      if (depth > 0)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: an index inside an index", p->full);
      _cleanup_free_ char *pick = NULL;
      uint64_t size = 0;
      if (index_pick (p->full, v, &p->plat, &pick, &size, err) < 0)
        return -1;
      if (*ret_top == NULL)
        *ret_top = xstrdup (digest);
      free (body), free (mt), free (digest);
      body = mt = digest = NULL;
      if (sbx_registry_get_manifest (p->reg, pick, &body, &len, &mt, &digest, err) < 0)
        return sbx_error_wrap (err, "pull %s", p->full);
      if (len != size)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: the manifest has %zu bytes, the index says %llu",
                              p->full, len, (unsigned long long) size);
    }
  if (*ret_top == NULL)
    *ret_top = xstrdup (digest);
  *ret_body = steal_pointer (&body);
  *ret_len = len;
  return 0;
}

static int
pull_image (pull_run *p, sbx_image **ret_img, sbx_error **err)
{
  _cleanup_free_ char *top = NULL, *body = NULL;
  size_t len = 0;
  _cleanup_image_ sbx_image *img = NULL;
  if (resolve_manifest (p, &top, &body, &len, &img, err) < 0)
    return -1;
  if (img == NULL)
    {
      _cleanup_yajl_val_ yajl_val v = NULL;
      _cleanup_oci_manifest_ sbx_oci_manifest *m = NULL;
      if (parse_json (body, len, p->full, &v, err) < 0 || manifest_parse (p->full, body, len, v, &m, err) < 0)
        return -1;
      if (o_cancelled (p->o))
        return sbx_error_set (err, SBX_E_INTERNAL, ECANCELED, "pull interrupted");
      _cleanup_free_ char *ctext = NULL;
      size_t clen;
      _cleanup_oci_config_ sbx_oci_config *cfg = NULL;
      if (sbx_registry_get_small_blob (p->reg, m->config.digest, m->config.size, &ctext, &clen, err) < 0)
        return sbx_error_wrap (err, "pull %s: config", p->full);
      if (sbx_oci_parse_config (ctext, clen, &cfg, err) < 0)
        return sbx_error_wrap (err, "pull %s: config", p->full);
      if (config_check (p->full, cfg, m, &p->plat, err) < 0)
        return -1;
      if (p->o && p->o->progress)
        {
          sbx_pull_event ev = { .kind = SBX_PULL_EV_MANIFEST, .n_layers = (unsigned) m->n_layers };
          p->o->progress (p->o->ud, &ev);
        }
      if (pull_layers (p->st, p->reg, p->o, m, cfg, &img, err) < 0)
        return sbx_error_wrap (err, "pull %s", p->full);
      if (image_size_check (img, err) < 0 || sbx_image_store (p->st, img, err) < 0)
        return -1;
    }
  _cleanup_free_ char *key = pulled_key (p->ref, top, &p->plat);
  /* Already pulled and still tagged so: nothing to write (each write is an
   * fsync, slow while the disk is busy, as right after a large pull). */
  _cleanup_free_ char *tagged = NULL, *recorded = pulled_lookup (p->st, key);
  bool same = recorded && strcmp (recorded, img->id) == 0 && sbx_tag_lookup (p->st, p->full, &tagged, NULL) == 0
              && strcmp (tagged, img->id) == 0;
  if (!same && (sbx_tag_set (p->st, p->full, img->id, err) < 0 || pulled_record (p->st, key, img->id, err) < 0))
    return -1;
  *ret_img = steal_pointer (&img);
  return 0;
}

static void
pull_run_clear (pull_run *p)
{
  sbx_registry_free (p->reg);
  sbx_imageref_free (p->ref);
  free (p->full);
}

int
sbx_pull (const sbx_store *st, const sbx_conf *conf, const char *ref, const sbx_pull_opts *o, sbx_image **ret_img,
          char **ret_ref, sbx_error **err)
{
  __attribute__ ((cleanup (pull_run_clear))) pull_run p = { .st = st, .conf = conf, .o = o };
  if (sbx_imageref_parse (ref, conf ? conf->unqualified_registry : NULL, &p.ref, err) < 0
      || platform_parse (o ? o->platform : NULL, &p.plat, err) < 0)
    return -1;
  p.full = sbx_imageref_string (p.ref);
  if (sbx_store_begin_write (st, "pull", err) < 0 || sbx_registry_open (st->root, conf, p.ref, false, &p.reg, err) < 0)
    return -1;
  _cleanup_image_ sbx_image *img = NULL;
  _cleanup_close_ int layers_lock = sbx_store_layers_lock (st, LOCK_SH, err);
  if (layers_lock < 0 || pull_image (&p, &img, err) < 0)
    return -1;
  if (ret_img)
    *ret_img = steal_pointer (&img);
  if (ret_ref)
    *ret_ref = steal_pointer (&p.full);
  return 0;
}
