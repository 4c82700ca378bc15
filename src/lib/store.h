/* The store: ROOT (persistent, default /var/lib/sbx) and RUN (runtime files,
 * default /run/sbx), their layout (DESIGN.md section 3), and the names sbx
 * gives host resources so that two roots never collide. */
#ifndef SBX_STORE_H
#define SBX_STORE_H

#include <stdbool.h>

#include "error.h"

#define SBX_DEFAULT_ROOT "/var/lib/sbx"
#define SBX_DEFAULT_RUN_ROOT "/run/sbx"

typedef struct sbx_store {
  char *root;
  char *run_root;
  /* 8 hex chars of sha256(realpath(ROOT)): every host resource sbx makes
   * carries it (cgroups "sbx-TAG/ID"), so gc finds exactly its own. */
  char *tag;
} sbx_store;

/* Opens (and with CREATE makes, mode 0700) the store at ROOT and RUN. */
int sbx_store_open (const char *root, const char *run_root, bool create, sbx_store **ret, sbx_error **err);
void sbx_store_free (sbx_store *st);
static inline void
sbx_store_freep (sbx_store **st)
{
  sbx_store_free (*st);
}
#define _cleanup_store_ __attribute__ ((cleanup (sbx_store_freep)))

char *sbx_store_path (const sbx_store *st, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
char *sbx_store_run_path (const sbx_store *st, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
/* The cgroup path (relative, for OCI cgroupsPath) of sandbox ID. */
char *sbx_store_cgroup_path (const sbx_store *st, const char *id);
/* The parent cgroup "/sbx-TAG" is shared by the store's sandboxes. A monitor
 * holds ROOT/cgroup.lock shared from making its cgroup until its runtime has
 * made its own child there; whoever removes the parent when it looks empty
 * must get it exclusively first, or a runtime between mkdir and use finds
 * its parent gone. */
/* The layer lock: held shared by whoever is about to reference layers
 * (import, build, create: from making or resolving them to recording the
 * image or sandbox that names them), exclusively to collect unreferenced
 * ones. OP: LOCK_SH or LOCK_EX, optionally | LOCK_NB. Returns the fd. */
int sbx_store_layers_lock (const sbx_store *st, int op, sbx_error **err);
int sbx_store_cgroup_hold (const sbx_store *st, sbx_error **err);
/* Removes "/sbx-TAG" if it is empty and no sandbox is being set up. */
void sbx_store_cgroup_release_parent (const sbx_store *st);

/* Before an operation that writes the store (OP, for the message: create,
 * import, build, commit, snapshot, restore): refused with
 * RESOURCE_EXHAUSTED when the store's filesystem has less free than
 * sbx.conf's store_reserve, before anything is written; and sbx.conf's
 * image_size_max applied to the layers this process makes. */
int sbx_store_begin_write (const sbx_store *st, const char *op, sbx_error **err);

/* The directory of the read-only top layer sbx puts over every image:
 * dev, proc, sys, etc/hosts, etc/resolv.conf and .sbx/init. Made on demand. */
int sbx_store_top_layer (const sbx_store *st, const char *init_path, char **ret_path, sbx_error **err);

/* ROOT/top/base: sbx's bottom layer, below the image's: an empty
 * /workspace (0755), so that every image has one unless it has its own (of
 * any type: the image's entry, above it, hides it), with the image's own
 * owner and mode. Being a layer, it is never in a sandbox's upper dir: a
 * commit or an export of a sandbox that did not touch it does not gain it.
 * Made when missing, by every mount of a sandbox's root. */
#define SBX_STORE_WORKSPACE "workspace"
int sbx_store_base_layer (const sbx_store *st, sbx_error **err);

#endif
