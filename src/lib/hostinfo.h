/* What this host supports (sbx info): the runtimes sbx finds, the kernel
 * features it relies on, the egress enforcement and the network settings
 * of sbx.conf, probed once into one struct that renders as JSON or as text.
 * A failed probe is a fact to report (a false, an `*_error`), never an
 * error of the call. */
#ifndef SBX_HOSTINFO_H
#define SBX_HOSTINFO_H

#include <stdbool.h>

#include "hostlimits.h"
#include "gpu.h"
#include "store.h"

typedef struct sbx_host_runtime {
  const char *name; /* "runsc" or "runc" */
  bool available;
  char *path; /* NULL: not found */
  char *version;
  char *error; /* why it is not available, or NULL */
} sbx_host_runtime;

typedef struct sbx_host_info {
  const char *version; /* sbx's */
  char *kernel;
  char *root, *run_root;
  sbx_host_runtime runtimes[2]; /* runsc, runc */
  const char *default_runtime;
  bool overlayfs, openat2, nftables, kvm;
  int cgroup_version;
  bool seccomp_profile_ok;
  char *seccomp_error;
  bool egress_enforcement;
  char *egress_error;
  /* sbx.conf's network settings, or why it could not be read. */
  bool network_ok;
  char *network_config; /* its path, or "(defaults)" */
  char *pool4, *pool6;  /* pool6: "off" when none */
  const char *private_policy;
  char *expose_address;
  char *network_config_error;
  /* The host's limits on idle sandboxes (hostlimits.h). */
  sbx_host_limit limits[SBX_HOST_LIMITS_MAX];
  size_t nlimits;
  /* GPUs (gpu.h): what discovery found, or why it failed; whether runsc
   * has --nvproxy; sbx.conf's gpu_runtime. */
  sbx_gpu_host gpu;
  char *gpu_error;
  bool runsc_nvproxy;
  const char *gpu_runtime;
} sbx_host_info;

void sbx_host_info_probe (const sbx_store *st, sbx_host_info *ret);
void sbx_host_info_clear (sbx_host_info *hi);
/* One JSON object (the document of `sbx info --json`) into a yajl_gen. */
void sbx_host_info_gen (void *yajl_gen_g, const sbx_host_info *hi);
/* The same as `key: value` lines, nested keys dotted ("runtimes.runc:
 * available=yes path=..."); the caller frees it. */
char *sbx_host_info_text (const sbx_host_info *hi);

#endif
