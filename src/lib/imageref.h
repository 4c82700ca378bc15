/* Image references as registries name them (the OCI distribution spec and
 * docker's grammar): [REGISTRY/]NAME[:TAG][@sha256:DIGEST]. A name without a
 * registry part (no `/`-separated first component holding `.` or `:`, or
 * equal to `localhost`) resolves through sbx.conf's `unqualified_registry`
 * (default docker.io, whose single-component names get `library/`), as
 * podman's unqualified-search-registries does. A reference with neither tag
 * nor digest gets the tag `latest`. */
#ifndef SBX_IMAGEREF_H
#define SBX_IMAGEREF_H

#include <stdbool.h>

#include "error.h"

#define SBX_IMAGEREF_MAX 1024 /* the whole reference, as given */
#define SBX_IMAGEREF_TAG_MAX 128

typedef struct sbx_imageref {
  char *registry;   /* "docker.io", "localhost:5000", "[::1]:5000" */
  char *repository; /* "library/python": lowercase path components */
  char *tag;        /* "3.12-slim"; NULL when only a digest was given */
  char *digest;     /* "sha256:HEX"; NULL when none was given */
} sbx_imageref;

/* Parses S into *RET. UNQUALIFIED (NULL: "docker.io") is the registry of a
 * name without one. Anything outside the grammar (upper case in the name,
 * empty components, a tag over 128 characters or with characters outside
 * [A-Za-z0-9_.-], a digest that is not sha256 and 64 lowercase hex digits,
 * control characters, over SBX_IMAGEREF_MAX) is INVALID_ARGUMENT naming what
 * is wrong. */
int sbx_imageref_parse (const char *s, const char *unqualified, sbx_imageref **ret, sbx_error **err);

/* The full, normalized reference: REGISTRY/REPOSITORY[:TAG][@DIGEST]
 * ("docker.io/library/python:3.12-slim"). This is the tag a pulled image
 * gets in the store and what `sbx images` shows. Caller frees. */
char *sbx_imageref_string (const sbx_imageref *r);

/* True when S is written as a full, normalized reference that names a
 * registry (what sbx_imageref_string returns): the store keeps such names
 * as tags next to plain names (util.h name_is_valid). */
bool sbx_imageref_is_canonical (const char *s);

void sbx_imageref_free (sbx_imageref *r);
static inline void
sbx_imageref_freep (sbx_imageref **r)
{
  sbx_imageref_free (*r);
}
#define _cleanup_imageref_ __attribute__ ((cleanup (sbx_imageref_freep)))

#endif
