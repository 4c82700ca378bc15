/* Images: an ordered list of layers plus a config (env, workdir, cmd, user),
 * stored as ROOT/images/HEX.json and named by the sha256 of that document;
 * tags in ROOT/images/tags.json. The built-in `busybox` image is made on
 * first use from the host's busybox-static. */
#ifndef SBX_IMAGE_H
#define SBX_IMAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "store.h"

typedef struct sbx_image {
  char *id;      /* "sha256:HEX" */
  char **layers; /* digests, bottom first */
  char **env;
  char *workdir;
  char **cmd;
  char *user;
  int64_t created;
  uint64_t size;
} sbx_image;

void sbx_image_free (sbx_image *img);
static inline void
sbx_image_freep (sbx_image **i)
{
  sbx_image_free (*i);
}
#define _cleanup_image_ __attribute__ ((cleanup (sbx_image_freep)))

/* Writes IMG (layers and config; id and created are filled in) and returns
 * its id. Idempotent: the same content is the same id. */
int sbx_image_store (const sbx_store *st, sbx_image *img, sbx_error **err);
/* REF: a tag (a name or a full reference), a full id ("sha256:HEX" or HEX) or a unique prefix of at
 * least 12 hex chars. `busybox` is built on first use. NOT_FOUND otherwise. */
int sbx_image_resolve (const sbx_store *st, const char *ref, sbx_image **ret, sbx_error **err);
/* The same without making the built-in image or checking its layers. */
int sbx_image_resolve_existing (const sbx_store *st, const char *ref, sbx_image **ret, sbx_error **err);
int sbx_image_load (const sbx_store *st, const char *id, sbx_image **ret, sbx_error **err);
/* Every image id in the store (strv). */
int sbx_image_list (const sbx_store *st, char ***ret_ids, sbx_error **err);

/* A tag is a plain name (util.h name_is_valid: "myimage") or a full,
 * normalized registry reference (imageref.h sbx_imageref_is_canonical:
 * "docker.io/library/python:3.12-slim"), the tag a pull gives an image. */
bool sbx_tag_name_is_valid (const char *s);
int sbx_tag_set (const sbx_store *st, const char *name, const char *id, sbx_error **err);
/* The name REF has in the store, as podman reads a short name: REF itself
 * when it is a tag there; else the full reference REF normalizes to
 * (UNQUALIFIED, NULL: docker.io, is the registry of a name without one:
 * python:3.12-slim is docker.io/library/python:3.12-slim) when that is a
 * tag, or when REF is not a plain name (a plain name may be an id prefix
 * or `busybox`); else REF. Reads the store only. Caller frees. */
char *sbx_image_local_ref (const sbx_store *st, const char *ref, const char *unqualified);
/* Tags naming ID (strv, possibly empty). */
int sbx_tags_of (const sbx_store *st, const char *id, char ***ret, sbx_error **err);
int sbx_tag_lookup (const sbx_store *st, const char *name, char **ret_id, sbx_error **err);

/* Ensures the built-in busybox image exists and is tagged `busybox`. */
int sbx_image_builtin_busybox (const sbx_store *st, char **ret_id, sbx_error **err);

#endif
