/* Sandbox lifecycle operations shared by the commands: create (validate,
 * reserve, spawn the monitor), terminate, remove, and the reaping of what a
 * crashed monitor or CLI left behind (gc). */
#ifndef SBX_LIFECYCLE_H
#define SBX_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sandbox.h"
#include "store.h"

/* Validates OPTS (taking ownership of its fields on success), creates the
 * sandbox and returns it running. On any error nothing is left behind. */
int sbx_sandbox_create (const sbx_store *st, sbx_sandbox_opts *opts, sbx_sandbox **ret, sbx_error **err);
/* The checks create makes of OPTS before anything is made (INVALID_ARGUMENT
 * naming the option): for a caller with work to do first (pulling the
 * image), so that bad input is refused before it. */
int sbx_sandbox_opts_validate (const sbx_sandbox_opts *opts, sbx_error **err);
/* What create checks of OPTS on the host before anything is made: each
 * host directory (--mount) opened and checked as hostmount.h says
 * (POLICY_REFUSED, NOT_FOUND, PATH_INVALID). CONF NULL: sbx.conf is read.
 * The monitor checks again the fds it binds. */
struct sbx_conf;
int sbx_sandbox_opts_check_host (const sbx_store *st, const sbx_sandbox_opts *opts, const struct sbx_conf *conf,
                                 sbx_error **err);
/* The same from IMAGE (layers and config; its id may be NULL: an image
 * being built) rather than OPTS->image_ref. */
struct sbx_image;
int sbx_sandbox_create_from (const sbx_store *st, sbx_sandbox_opts *opts, const struct sbx_image *image,
                             sbx_sandbox **ret, sbx_error **err);
/* The same as a warm pool's parked member (pool.h), with the id ID the
 * pool chose: started with no lifetime running and its network cut, until
 * a claim. */
int sbx_sandbox_create_parked (const sbx_store *st, sbx_sandbox_opts *opts, const struct sbx_image *image,
                               const char *id, sbx_sandbox **ret, sbx_error **err);
/* The same, started by restoring the runsc checkpoint in CHECKPOINT (its
 * files must be IMAGE's); exec channels start after CHAN_BASE. */
int sbx_sandbox_restore (const sbx_store *st, sbx_sandbox_opts *opts, const struct sbx_image *image,
                         const char *checkpoint, int64_t chan_base, sbx_sandbox **ret, sbx_error **err);
/* Asks the monitor to end the sandbox and waits until it has (TIMEOUT_MS,
 * -1 forever). A sandbox whose monitor is gone is reaped instead. */
int sbx_sandbox_terminate (const sbx_store *st, const char *id, int64_t timeout_ms, sbx_error **err);
/* Waits until the sandbox SB (a live record, replaced by its final one) has
 * ended (TIMEOUT_MS, -1 forever; TIMEOUT when it has not) and its monitor
 * is gone. */
int sbx_sandbox_wait (const sbx_store *st, sbx_sandbox **sb, int64_t timeout_ms, sbx_error **err);
/* Removes a sandbox in a final state (BUSY otherwise) and its files; one
 * that is terminating is waited for first (its monitor may remove it: sbx
 * run --rm, then this is 0). */
int sbx_sandbox_remove (const sbx_store *st, const char *id, sbx_error **err);
/* The files of SB, ended, whose lock the caller holds or knows free (the
 * monitor of sbx run --rm, at the end of its teardown): BUSY while a file
 * call uses them. */
int sbx_sandbox_remove_files (const sbx_store *st, const sbx_sandbox *sb, sbx_error **err);
/* The bounds of create's limits and lifetimes (sbx-limits.h), for every
 * caller that sets them (create, validate_opts, sbx update's monitor). */
int sbx_limits_validate (double cpu, uint64_t memory, int64_t pids, sbx_error **err);
int sbx_lifetimes_validate (int64_t keep_warm, int64_t timeout, sbx_error **err);

/* Sandboxes tearing down: a monitor registers its teardown
 * (RUN/ending/ID, flocked: an fd, -1 on failure) when the sandbox begins to
 * end and lets go of it when the teardown is over, so that sbx run, which
 * returns before that, can bound how many are under way, and gc can wait
 * for them. */
int sbx_teardown_begin (const sbx_store *st, const char *id);
void sbx_teardown_end (const sbx_store *st, const char *id, int fd);
/* How many of this store's sandboxes are tearing down now. */
size_t sbx_teardown_count (const sbx_store *st);
/* Waits while MAX or more are (sbx run, SBX_TEARDOWNS_MAX). */
void sbx_teardown_throttle (const sbx_store *st, size_t max);
/* Waits until every teardown under way now is over. */
void sbx_teardown_wait_all (const sbx_store *st);
/* Reaps the host resources of ID if its monitor is gone; records it as
 * failed (monitor lost). 1 if it reaped, 0 if the monitor is alive. */
int sbx_sandbox_reap (const sbx_store *st, const char *id, sbx_error **err);

typedef struct sbx_gc_report {
  int reaped;   /* sandboxes whose monitor was lost */
  int removed;  /* ended sandboxes removed */
  int orphans;  /* runtime containers / cgroups with no sandbox */
  int layers;   /* unreferenced layers removed */
  int networks; /* sandboxes whose namespace, veth or rules were left */
} sbx_gc_report;
int sbx_gc (const sbx_store *st, sbx_gc_report *ret, sbx_error **err);

/* Removes the layers that no image and no sandbox record names; skipped
 * (0) while an import, build or create holds the layer lock. Returns the
 * count removed. */
int sbx_layers_gc (const sbx_store *st, sbx_error **err);

/* rmi: REF's image, unless REF is one of several tags of it (then only
 * that tag goes: *ret_untagged). An image that a sandbox (running or
 * ended, not removed) was made from is BUSY unless FORCE; its layers then
 * stay until that sandbox is removed. */
int sbx_image_remove (const sbx_store *st, const char *ref, bool force, char **ret_id, bool *ret_untagged,
                      sbx_error **err);

#endif
