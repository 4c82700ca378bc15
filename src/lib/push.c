/* sbx push (pull.h sbx_push): a local image to a registry as the OCI image
 * export writes (oci-export.c makes the gzip layers, the config and the
 * manifest; this file sends them). Each layer's blob is asked for with HEAD
 * first and sent only when the registry lacks it. What a layer compressed
 * to (blob digest, size, diff_id) is kept next to it in the store, in
 * ROOT/layers/sha256/HEX/push-gzip, so that a second push to a registry
 * that has the blob neither recompresses nor sends it; the record goes with
 * the layer. */
#include "config.h"
#include "imageref.h"
#include "oci-internal.h"
#include "pull.h"
#include "registry.h"
#include "sha256.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define PUSH_CACHE "push-gzip"
#define PUSH_CACHE_MAX 256

typedef struct push {
  const sbx_store *st;
  sbx_registry *reg;
  const sbx_pull_opts *o;
  int workfd;
  unsigned index, n_layers;
  const char *digest; /* the blob being sent, for events */
} push;

static bool
cancelled (const push *p)
{
  return p->o && p->o->cancel && *p->o->cancel;
}

static void
event (push *p, sbx_pull_event_kind kind, uint64_t done, uint64_t total)
{
  if (p->o == NULL || p->o->progress == NULL)
    return;
  sbx_pull_event ev = { .kind = kind,
                        .digest = p->digest,
                        .index = p->index,
                        .n_layers = p->n_layers,
                        .done = done,
                        .total = total };
  p->o->progress (p->o->ud, &ev);
}

static int
upload_progress (void *ud, uint64_t done, uint64_t total)
{
  push *p = ud;
  event (p, SBX_PULL_EV_LAYER_PROGRESS, done, total);
  return cancelled (p) ? 1 : 0;
}

/* The record of what layer DIGEST compressed to; false when there is none
 * or it does not read right (then the layer is compressed again). */
static bool
cache_get (const char *root, const char *digest, oci_blob *b)
{
  _cleanup_free_ char *dir = sbx_layer_dir (root, digest);
  _cleanup_free_ char *path = dir ? xasprintf ("%s/" PUSH_CACHE, dir) : NULL;
  _cleanup_free_ char *text = NULL;
  if (path == NULL || read_file (path, PUSH_CACHE_MAX, &text, NULL, NULL) < 0)
    return false;
  char blob[72], diff[72];
  uint64_t size;
  if (sscanf (text, "%71s %" SCNu64 " %71s", blob, &size, diff) != 3 || strncmp (blob, DIGEST_PREFIX, 7) != 0
      || strlen (blob) != 7 + 64 || !is_lower_hex (blob + 7, 64) || strncmp (diff, DIGEST_PREFIX, 7) != 0
      || strlen (diff) != 7 + 64 || !is_lower_hex (diff + 7, 64))
    return false;
  memcpy (b->hex, blob + 7, 65);
  b->size = size;
  b->diff_id = xstrdup (diff);
  return true;
}

/* Best effort: without it the next push compresses again. */
static void
cache_put (const char *root, const char *digest, const oci_blob *b)
{
  _cleanup_free_ char *dir = sbx_layer_dir (root, digest);
  if (dir == NULL)
    return;
  _cleanup_free_ char *path = xasprintf ("%s/" PUSH_CACHE, dir);
  _cleanup_free_ char *text = xasprintf (DIGEST_PREFIX "%s %" PRIu64 " %s\n", b->hex, b->size, b->diff_id);
  write_file_replace (path, text, strlen (text), 0600, NULL);
}

/* Sends blob B unless the registry has it (B's fd is read from offset 0). */
static int
send_blob (push *p, const oci_blob *b, bool *ret_present, sbx_error **err)
{
  _cleanup_free_ char *digest = xasprintf (DIGEST_PREFIX "%s", b->hex);
  bool present = false;
  if (sbx_registry_blob_exists (p->reg, digest, &present, err) < 0)
    return -1;
  *ret_present = present;
  if (present)
    return 0;
  if (b->fd < 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "blob %s: nothing to send", digest);
  return sbx_registry_put_blob (p->reg, digest, b->size, b->fd, upload_progress, p, err);
}

/* Layer I as blob B, sent when the registry lacks it. */
static int
push_layer (push *p, const char *layer, oci_blob *b, sbx_error **err)
{
  const char *root = p->st->root;
  bool present = false;
  b->fd = -1;
  if (cache_get (root, layer, b))
    {
      _cleanup_free_ char *digest = xasprintf (DIGEST_PREFIX "%s", b->hex);
      p->digest = digest;
      if (sbx_registry_blob_exists (p->reg, digest, &present, err) < 0)
        return -1;
      if (present)
        {
          event (p, SBX_PULL_EV_LAYER_PRESENT, b->size, b->size);
          return 0;
        }
      free (b->diff_id);
      b->diff_id = NULL;
    }
  if (oci_layer_blob (root, layer, SBX_OCI_GZIP, p->workfd, b, err) < 0)
    return -1;
  cache_put (root, layer, b);
  _cleanup_free_ char *digest = xasprintf (DIGEST_PREFIX "%s", b->hex);
  p->digest = digest;
  event (p, SBX_PULL_EV_LAYER_START, 0, b->size);
  if (send_blob (p, b, &present, err) < 0)
    return -1;
  event (p, present ? SBX_PULL_EV_LAYER_PRESENT : SBX_PULL_EV_LAYER_DONE, b->size, b->size);
  /* The compressed copy is not needed any more: its space goes now. */
  closep (&b->fd);
  return 0;
}

/* A document blob goes up from an unnamed file like a layer. */
static int
push_doc (push *p, oci_blob *b, sbx_error **err)
{
  b->fd = openat (p->workfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (b->fd < 0)
    return sbx_error_errno (err, errno, "temp file");
  int r = write_all (b->fd, b->data, b->size);
  if (r < 0)
    return sbx_error_errno (err, -r, "write temp file");
  if (lseek (b->fd, 0, SEEK_SET) < 0)
    return sbx_error_errno (err, errno, "seek temp file");
  bool present;
  return send_blob (p, b, &present, err);
}

static void
blobs_free (oci_blob *v, size_t n)
{
  for (size_t i = 0; v && i < n; i++)
    oci_blob_clear (&v[i]);
  free (v);
}

static int
push_image (push *p, const sbx_image *img, const char *reference, char **ret_digest, sbx_error **err)
{
  size_t n = strv_len (img->layers);
  oci_blob *layers = xmalloc0 ((n ? n : 1) * sizeof (oci_blob));
  _cleanup_oci_blob_ oci_blob config = { .fd = -1 };
  _cleanup_oci_blob_ oci_blob manifest = { .fd = -1 };
  int r = 0;
  for (size_t i = 0; i < n; i++)
    layers[i].fd = -1;
  p->n_layers = (unsigned) n;
  event (p, SBX_PULL_EV_MANIFEST, 0, 0);
  for (size_t i = 0; i < n && r == 0; i++)
    {
      p->index = (unsigned) i;
      if (cancelled (p))
        r = sbx_error_set (err, SBX_E_INTERNAL, ECANCELED, "interrupted");
      else if (push_layer (p, img->layers[i], &layers[i], err) < 0)
        r = sbx_error_wrap (err, "layer %s", img->layers[i]);
    }
  if (r == 0)
    {
      size_t len;
      char *doc = oci_config_doc (img, layers, n, &len);
      oci_blob_doc (&config, doc, len);
      doc = oci_manifest_doc (&config, layers, n, SBX_OCI_GZIP, &len);
      oci_blob_doc (&manifest, doc, len);
      if (push_doc (p, &config, err) < 0)
        r = sbx_error_wrap (err, "the image config");
      else if (sbx_registry_put_manifest (p->reg, reference, MT_OCI_MANIFEST, manifest.data, manifest.size, err) < 0)
        r = sbx_error_wrap (err, "the manifest");
    }
  blobs_free (layers, n);
  if (r == 0)
    *ret_digest = xasprintf (DIGEST_PREFIX "%s", manifest.hex);
  return r;
}

int
sbx_push (const sbx_store *st, const sbx_conf *conf, const char *image, const char *dest, const sbx_pull_opts *o,
          char **ret_digest, sbx_error **err)
{
  _cleanup_imageref_ sbx_imageref *ir = NULL;
  if (sbx_imageref_parse (dest, conf ? conf->unqualified_registry : NULL, &ir, err) < 0)
    return -1;
  if (ir->digest)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "push to `%s`: a pushed image is named by a tag, not a digest (its digest is what push "
                          "prints)",
                          dest);
  _cleanup_free_ char *canon = sbx_imageref_string (ir);
  /* Held from resolving the image to the last layer read: gc leaves them. */
  _cleanup_close_ int layers_lock = sbx_store_layers_lock (st, LOCK_SH, err);
  _cleanup_image_ sbx_image *img = NULL;
  _cleanup_free_ char *local = sbx_image_local_ref (st, image, conf ? conf->unqualified_registry : NULL);
  if (layers_lock < 0 || sbx_image_resolve (st, local, &img, err) < 0)
    return -1;
  if (img->layers == NULL || img->layers[0] == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "push `%s`: the image has no layers", image);
  if (sbx_archive_load (err) < 0)
    return -1;
  _cleanup_registry_ sbx_registry *reg = NULL;
  _cleanup_workdir_ sbx_workdir w = SBX_WORKDIR_INIT;
  if (sbx_registry_open (st->root, conf, ir, true, &reg, err) < 0 || sbx_workdir_new (st->root, &w, err) < 0)
    return sbx_error_wrap (err, "push to `%s`", canon);
  push p = { .st = st, .reg = reg, .o = o, .workfd = w.dfd };
  _cleanup_free_ char *digest = NULL;
  if (push_image (&p, img, ir->tag ? ir->tag : "latest", &digest, err) < 0)
    return sbx_error_wrap (err, "push to `%s`", canon);
  *ret_digest = steal_pointer (&digest);
  return 0;
}
