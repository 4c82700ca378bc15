/* Memory snapshots under runsc (sbx snapshot, restore, snapshots, rmsnap).
 *
 * A snapshot is ROOT/snapshots/ID/{checkpoint/, snapshot.json}: runsc's
 * checkpoint of the sandbox (its processes and memory) and the files it had
 * (its image's layers plus one layer of what it wrote), with the options
 * to start it again. IDs are snap-XXXXXXXXXXXX (12 lowercase hex digits). */
#ifndef SBX_SNAPSHOT_H
#define SBX_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "sbx-limits.h"
#include "store.h"

/* Whether S has the form of a snapshot id. */
bool sbx_snapshot_id_valid (const char *s);

/* Checkpoints running sandbox ID (runsc only: RUNTIME_UNAVAILABLE under
 * runc, with why) and stores its files as one more layer; the sandbox ends.
 * *ret_snap: the new snapshot's id. */
int sbx_snapshot_create (const sbx_store *st, const char *id, char **ret_snap, sbx_error **err);

/* Starts COUNT (1..SBX_RESTORE_COUNT_MAX) sandboxes from snapshot SNAP, with
 * the options of the sandbox it was made from, checked as create checks
 * them. All or nothing: when one fails, those started before it are ended
 * and removed. *ret_ids: their ids, NULL-terminated. */
int sbx_snapshot_restore (const sbx_store *st, const char *snap, int64_t count, char ***ret_ids, sbx_error **err);

typedef struct sbx_snapshot_info {
  char *id;
  char *sandbox;   /* the sandbox it was made from; may be NULL */
  int64_t created; /* unix seconds */
} sbx_snapshot_info;

/* The snapshots in the store (unreadable ones left out), in directory
 * order; *ret_n entries. */
int sbx_snapshot_list (const sbx_store *st, sbx_snapshot_info **ret, size_t *ret_n, sbx_error **err);
void sbx_snapshot_info_free (sbx_snapshot_info *v, size_t n);

/* Removes snapshot SNAP (NOT_FOUND when there is none). Its layers stay
 * until sbx_layers_gc. */
int sbx_snapshot_remove (const sbx_store *st, const char *snap, sbx_error **err);

#endif
