/* The OCI runtime spec (config.json) sbx hands runc and runsc: one hardened
 * spec for both runtimes (DESIGN.md section 6), generated with yajl. */
#ifndef SBX_SPEC_H
#define SBX_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <yajl/yajl_gen.h>

#include "error.h"
#include "sandbox.h"
#include "store.h"

#define SBX_INIT_IN_SANDBOX "/.sbx/init"

/* A bind mount the spec adds after its own (host directories, volumes):
 * SOURCE, a host path of sbx's own (the runtime opens it by path), on
 * DESTINATION in the sandbox; nosuid, nodev, not recursive, read-only when
 * READONLY. */
typedef struct sbx_spec_bind {
  char *source;
  char *destination;
  bool readonly;
} sbx_spec_bind;

void sbx_spec_binds_free (sbx_spec_bind *binds, size_t n);

/* Where the runtime or sbx mounts its own (/proc, /sys, /dev, /.sbx): an
 * extra bind's DESTINATION (normal, absolute) at or below one of them would
 * hide sbx's agent or the kernel's view of the sandbox. Returns that
 * directory, or NULL when DESTINATION is free. */
const char *sbx_spec_reserved_dest (const char *destination);

typedef struct sbx_spec_params {
  const sbx_sandbox *sb;
  const char *rootfs;         /* host path of the merged root */
  const char *cgroup_path;    /* OCI cgroupsPath */
  const char *runtime;        /* "runc" or "runsc" */
  const char *netns_path;     /* the network namespace to join (runc); NULL: a new one */
  const char *resolv_conf;    /* bound read-only on /etc/resolv.conf; NULL: the image's */
  const char *sysfs;          /* a sysfs of the sandbox's network bound on /sys; NULL: the runtime mounts one */
  const sbx_spec_bind *binds; /* extra bind mounts, in order, after sbx's own */
  size_t nbinds;
  const struct sbx_cdi_edits *gpu; /* the GPUs' device nodes, mounts and hooks (gpu.h); NULL: none */
} sbx_spec_params;

/* The default capability set: the container ecosystem's, nothing more. */
extern const char *const sbx_default_caps[];

/* One rule of linux.resources.devices (MAJOR, MINOR -1: any; TYPE NULL: all). */
void sbx_spec_gen_device_rule (yajl_gen g, bool allow, const char *type, long major, long minor, const char *access);

int sbx_spec_generate (const sbx_spec_params *p, char **ret_json, size_t *ret_len, sbx_error **err);
int sbx_spec_write (const sbx_spec_params *p, const char *bundle_dir, sbx_error **err);

#endif
