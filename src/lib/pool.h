/* Warm pools without a daemon (sbx pool, create --pool): a pool is a set
 * of sandboxes started from its options and parked (no lifetime running,
 * network cut, hidden from sbx ls), which a claim takes one at a time and
 * turns into an ordinary sandbox (monitor-pool.c). Its state is files:
 *
 *   ROOT/pools/NAME/pool.json     the pool: size, image id, create options
 *   ROOT/pools/NAME/lock          flock: every change of the two lists
 *   ROOT/pools/NAME/fill.lock     flock: held by the one process filling it
 *   ROOT/pools/NAME/parked/ID     a member ready to be claimed
 *   ROOT/pools/NAME/creating/ID   a member being made (its id chosen first)
 *   ROOT/pools/NAME/claiming/ID   a member taken, its claim under way
 *
 * A claim moves a parked/ID entry to claiming/ under the lock: two claims never get
 * one member. A member is in creating/ or parked/ at every moment, so that
 * a filler killed at any point leaves entries that the next fill or gc,
 * holding fill.lock, settles: a parked member running is parked, anything
 * else is removed. */
#ifndef SBX_POOL_H
#define SBX_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sandbox.h"
#include "store.h"

#define SBX_POOL_SIZE_MAX 256

typedef struct sbx_pool {
  char *name;
  int64_t size;
  char *image_id;
  int64_t created_at;
  sbx_sandbox_opts opts; /* the members' create options, as given (no name, no command) */
  /* Not saved: counted by sbx_pool_get. */
  size_t parked, creating;
} sbx_pool;

void sbx_pool_free (sbx_pool *p);
static inline void
sbx_pool_freep (sbx_pool **p)
{
  sbx_pool_free (*p);
}
#define _cleanup_pool_ __attribute__ ((cleanup (sbx_pool_freep)))

/* Records pool NAME (BUSY if it exists) of SIZE members made from OPTS
 * (copied) and the image IMAGE_ID. Its members are made by sbx_pool_fill. */
int sbx_pool_create (const sbx_store *st, const char *name, int64_t size, const sbx_sandbox_opts *opts,
                     const char *image_id, sbx_error **err);
/* The pool with its counts; NOT_FOUND. */
int sbx_pool_get (const sbx_store *st, const char *name, sbx_pool **ret, sbx_error **err);
int sbx_pool_list (const sbx_store *st, char ***ret_names, sbx_error **err);
/* Makes members until the pool has its size, holding fill.lock (waiting
 * for it when another process fills). *RET_MADE: how many it made. */
int sbx_pool_fill (const sbx_store *st, const char *name, int *ret_made, sbx_error **err);
/* Takes a parked member whose monitor is alive: *RET_ID, or NULL when
 * the pool has none. NOT_FOUND without the pool. The member moves to
 * claiming/ until its claimer calls sbx_pool_claimed (gc removes one left
 * there by a claimer that died, still parked). */
int sbx_pool_take (const sbx_store *st, const char *name, char **ret_id, sbx_error **err);
void sbx_pool_claimed (const sbx_store *st, const char *name, const char *id);
/* Ends and removes member ID (one taken whose claim failed). */
void sbx_pool_discard (const sbx_store *st, const char *id);
/* Removes the pool and its parked members (claimed ones are left
 * alone); *RET_REMOVED: how many. */
int sbx_pool_remove (const sbx_store *st, const char *name, int *ret_removed, sbx_error **err);
/* gc: settles what killed fillers left, ends parked sandboxes whose pool
 * is gone, removes half-removed pools. The count of sandboxes removed. */
int sbx_pool_gc (const sbx_store *st);
/* The options of a claim of P: A (the claimer's; GIVEN the long names of
 * the options given, IMAGE_ID what its --image resolved to) over the
 * pool's. What a started sandbox cannot change must be the pool's, or
 * INVALID_ARGUMENT names the option; an initial command is refused.
 * *RET (the caller clears it): the sandbox's options as if made cold,
 * copy-in the pool's and the claimer's. */
int sbx_pool_claim_opts (const sbx_pool *p, const sbx_sandbox_opts *a, char *const *given, const char *image_id,
                         sbx_sandbox_opts *ret, sbx_error **err);
/* A deep copy of O (through its serializer). */
void sbx_sandbox_opts_copy (const sbx_sandbox_opts *o, sbx_sandbox_opts *ret);

#endif
