/* The OCI runtime spec (config.json) sbx hands runc and runsc: one hardened
 * spec for both runtimes (DESIGN.md section 6), generated with yajl. */
#ifndef SBX_SPEC_H
#define SBX_SPEC_H

#include "error.h"
#include "sandbox.h"
#include "store.h"

#define SBX_INIT_IN_SANDBOX "/.sbx/init"

/* A bind mount the monitor prepared at SOURCE (a path of its own, in its
 * mount namespace), shown in the sandbox at DEST. */
typedef struct sbx_spec_bind {
  char *source;
  char *dest;
  bool readonly;
} sbx_spec_bind;

typedef struct sbx_spec_params {
  const sbx_sandbox *sb;
  const char *rootfs;         /* host path of the merged root */
  const char *cgroup_path;    /* OCI cgroupsPath */
  const char *runtime;        /* "runc" or "runsc" */
  const char *netns_path;     /* the network namespace to join (runc); NULL: a new one */
  const char *resolv_conf;    /* bound read-only on /etc/resolv.conf; NULL: the image's */
  const sbx_spec_bind *binds; /* the extra bind mounts (volumes), after sbx's own */
  size_t n_binds;
} sbx_spec_params;

/* The default capability set: the container ecosystem's, nothing more. */
extern const char *const sbx_default_caps[];

int sbx_spec_generate (const sbx_spec_params *p, char **ret_json, size_t *ret_len, sbx_error **err);
int sbx_spec_write (const sbx_spec_params *p, const char *bundle_dir, sbx_error **err);

#endif
