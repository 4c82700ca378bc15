/* sbx build: a blueprint into layers, with a cache (DESIGN.md section 3).
 *
 * Each step that changes files runs in a build sandbox made from the image
 * so far; what it wrote (the sandbox's overlay upper dir, whiteouts and
 * opaque directories included) becomes one layer. The cache maps the hash
 * of (the parent's key, the canonical step, what it depends on: the
 * environment and working directory in effect, the digests of copied files)
 * to the layer it made, in ROOT/build-cache/KEY. */
#ifndef SBX_BUILD_H
#define SBX_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "blueprint.h"
#include "error.h"
#include "store.h"

typedef enum sbx_build_step_how {
  SBX_BUILD_STEP_RUN,
  SBX_BUILD_STEP_CACHED,
  SBX_BUILD_STEP_CONFIG,
} sbx_build_step_how;

typedef struct sbx_build_opts {
  const char *context; /* the host directory `files` steps copy from (NULL: none) */
  const char *runtime; /* of the build sandboxes */
  bool no_cache;
  int out_fd; /* where the steps' own output goes */
  /* Progress: one call per step: a layer made now (RUN), one from the cache
   * (CACHED), or a step that only sets the image's config (CONFIG). */
  void (*progress) (void *data, size_t step, size_t nsteps, const char *what, sbx_build_step_how how);
  /* Asked before each step that is not cached: true stops the build there
   * (the caller was interrupted). */
  bool (*stop) (void *data);
  void *data;
  /* How a base that is a registry reference is pulled (NULL: quietly). */
  const struct sbx_pull_opts *pull;
} sbx_build_opts;

/* Builds BP; *ret_id: the image's id. A failed step leaves no layer, no
 * cache entry and no image; its output went to OUT_FD. */
int sbx_build (const sbx_store *st, const sbx_blueprint *bp, const sbx_build_opts *o, char **ret_id, sbx_error **err);

/* What sandbox ID wrote (its upper dir) as a layer. The caller makes sure
 * nothing writes there meanwhile (ended, or paused). */
int sbx_layer_from_upper (const sbx_store *st, const char *id, char **ret_digest, uint64_t *ret_size, sbx_error **err);

#endif
