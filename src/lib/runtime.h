/* The runtime driver: which OCI runtimes are here, and the argv sbx runs
 * them with. Each store has its own runtime state dir (RUN/runtime/NAME) so
 * two roots never see each other's containers. No silent fallback: a runtime
 * that is missing or broken is RUNTIME_UNAVAILABLE. */
#ifndef SBX_RUNTIME_H
#define SBX_RUNTIME_H

#include <stdbool.h>

#include "error.h"
#include "spawn.h"
#include "store.h"

typedef struct sbx_runtime {
  char *name;    /* "runsc" or "runc" */
  char *path;    /* absolute path of the binary */
  char *version; /* first line of `--version` */
  char *state_root;
  bool host_network; /* runsc: --network=host, run inside the netns sbx made */
  bool own_cgroups;  /* runsc: --ignore-cgroups, sbx places its processes */
  bool nvproxy;      /* runsc: --nvproxy, for a sandbox with GPUs (gpu.h) */
} sbx_runtime;

void sbx_runtime_free (sbx_runtime *rt);
static inline void
sbx_runtime_freep (sbx_runtime **r)
{
  sbx_runtime_free (*r);
}
#define _cleanup_runtime_ __attribute__ ((cleanup (sbx_runtime_freep)))

/* INVALID_ARGUMENT for a name that is not runsc/runc; RUNTIME_UNAVAILABLE
 * when it is not installed. The binary comes
 * from $SBX_RUNC / $SBX_RUNSC when set, else from PATH. */
int sbx_runtime_find (const sbx_store *st, const char *name, sbx_runtime **ret, sbx_error **err);
bool sbx_runtime_name_valid (const char *name);
/* Asks the runtime for its version (fills rt->version); RUNTIME_UNAVAILABLE
 * when it does not answer. */
int sbx_runtime_probe (sbx_runtime *rt, sbx_error **err);

/* argv for `RUNTIME [global flags] VERB ARGS...` (NULL-terminated ARGS). */
char **sbx_runtime_argv (const sbx_runtime *rt, const char *verb, const char *const *args);
/* Runs the runtime with ARGS, stdio to /dev/null except stderr captured
 * into *ret_stderr (may be NULL). Returns its exit status or -1. */
int sbx_runtime_call (const sbx_runtime *rt, const char *verb, const char *const *args, char **ret_stderr,
                      sbx_error **err);
/* Force-removes container ID (kill -9 and delete); ignores "does not exist". */
int sbx_runtime_destroy (const sbx_runtime *rt, const char *id, bool kill_first, sbx_error **err);
/* Ids of the containers in this store's runtime state dir. */
int sbx_runtime_list (const sbx_runtime *rt, char ***ret_ids, sbx_error **err);
/* Whether every container in RT's state root is one of IDS (sorted with
 * strcmp), read from the directory without starting the runtime (whose
 * `list` costs ~100 ms and grows with the containers): runc's directory
 * per container, runsc's ID_sandbox:ID.state and .lock files. Any other
 * entry: false, and the caller asks the runtime. */
bool sbx_runtime_root_within (const sbx_runtime *rt, char *const *ids, size_t n);

#endif
