/* Images from registries (sbx-pull(1)): `sbx pull`, `sbx push` and the
 * --image REF / --pull POLICY of create, run and a blueprint's base.
 *
 * A pull resolves the reference (imageref.h), fetches the manifest (an index
 * or manifest list is resolved to the entry for the platform asked, default
 * this host's), refuses schema 1 and foreign media types by name, bounds
 * every document and count (SBX_PULL_LAYERS_MAX, the index's entries, the
 * expanded size by sbx.conf image_size_max), and streams each layer blob
 * once, hashed while it goes into the layer import (layer.h
 * sbx_layer_stage): a digest or size mismatch removes what was written.
 * Layers the store has (by blob digest or diff id) are not downloaded; up to
 * SBX_PULL_PARALLEL download at once; each layer is installed when it is
 * complete, so an interrupted pull keeps the finished layers and the next
 * one resumes from them. The image is stored with its config (env, workdir,
 * entrypoint+cmd, user) and tagged with its full reference; the manifest's
 * digest is recorded so a pull of an image already present makes one
 * request. */
#ifndef SBX_PULL_H
#define SBX_PULL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "error.h"
#include "image.h"
#include "store.h"

#define SBX_PULL_LAYERS_MAX 128
#define SBX_PULL_PARALLEL 3

typedef enum sbx_pull_policy {
  SBX_PULL_MISSING, /* default: pull when the store does not have it */
  SBX_PULL_ALWAYS,  /* ask the registry every time (a local-only name is used as it is) */
  SBX_PULL_NEVER,   /* NOT_FOUND when the store does not have it */
} sbx_pull_policy;

/* "missing", "always", "never"; anything else is INVALID_ARGUMENT. */
int sbx_pull_policy_parse (const char *s, sbx_pull_policy *ret, sbx_error **err);

typedef enum sbx_pull_event_kind {
  SBX_PULL_EV_MANIFEST, /* the manifest was read: n_layers is known */
  SBX_PULL_EV_LAYER_START,
  SBX_PULL_EV_LAYER_PROGRESS,
  SBX_PULL_EV_LAYER_PRESENT, /* in the store already: not downloaded */
  SBX_PULL_EV_LAYER_DONE,
} sbx_pull_event_kind;

typedef struct sbx_pull_event {
  sbx_pull_event_kind kind;
  const char *digest; /* the blob */
  unsigned index;     /* the layer's place, 0 = bottom */
  unsigned n_layers;
  uint64_t done, total; /* bytes of this blob */
} sbx_pull_event;

typedef void (*sbx_pull_progress_fn) (void *ud, const sbx_pull_event *ev);

typedef struct sbx_pull_opts {
  const char *platform;          /* "linux/amd64[/VARIANT]"; NULL: this host's */
  sbx_pull_progress_fn progress; /* NULL: none; called from the calling thread */
  void *ud;
  volatile sig_atomic_t *cancel; /* non-zero: stop at once (INTERNAL, ECANCELED), keep finished layers */
} sbx_pull_opts;

/* Pulls REF into the store; *ret_img is the stored image, *ret_ref its full
 * reference (either may be NULL). The caller holds nothing; the pull takes
 * the store's layer lock as an import does. */
int sbx_pull (const sbx_store *st, const sbx_conf *conf, const char *ref, const sbx_pull_opts *o, sbx_image **ret_img,
              char **ret_ref, sbx_error **err);

/* What --image REF means on create, run and a blueprint's base: a local
 * name (a tag, an id or the built-in busybox) is used as it is; otherwise
 * REF is normalized and looked up as a full reference in the store, and
 * pulled when POLICY says so. SBX_PULL_MISSING with the image present sends
 * no request. */
int sbx_image_obtain (const sbx_store *st, const sbx_conf *conf, const char *ref, sbx_pull_policy policy,
                      const sbx_pull_opts *o, sbx_image **ret, sbx_error **err);

/* Pushes local image IMAGE (a tag or id) to registry reference DEST as an OCI
 * image (gzip layers, an OCI config and manifest) that podman pulls and
 * runs; blobs the registry has are not sent again. *ret_digest: the
 * manifest's digest. */
int sbx_push (const sbx_store *st, const sbx_conf *conf, const char *image, const char *dest, const sbx_pull_opts *o,
              char **ret_digest, sbx_error **err);

#endif
