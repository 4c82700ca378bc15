/* GPUs (--gpu, issue 21): the request's grammar, the host's NVIDIA GPUs
 * (the driver's /proc/driver/nvidia/gpus, nvidia-smi for their memory),
 * the Container Device Interface specs the vendor tooling writes (/etc/cdi,
 * /var/run/cdi; YAML or JSON, parsed strictly and bounded: they are outside
 * input), and what a sandbox's spec gains for the GPUs it got: device nodes
 * and their cgroup rules, read-only mounts, environment and hooks. Without
 * a CDI spec the edits are made directly: the driver's device nodes and
 * its user-space libraries as `ldconfig -p` lists them.
 *
 * Test-only environment (honoured for root alone, never set in
 * production): SBX_DEV_ROOT (the host's /dev), SBX_CDI_DIRS (colon-separated
 * spec directories), SBX_NVIDIA_PROC (/proc/driver/nvidia), SBX_LDCONFIG
 * (the program run as `PROG -p`), SBX_NVIDIA_SMI (nvidia-smi's path) and
 * SBX_RUNSC_NVPROXY (1 or 0: whether runsc has --nvproxy). */
#ifndef SBX_GPU_H
#define SBX_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sandbox.h"
#include "store.h"

#define SBX_GPUS_MAX 64                /* GPUs in a request or on a host */
#define SBX_CDI_SIZE_MAX (1024 * 1024) /* one spec file */
#define SBX_CDI_FILES_MAX 64           /* spec files read from the directories */
#define SBX_CDI_DEVICES_MAX 256        /* devices of one spec */
#define SBX_CDI_LIST_MAX 1024          /* entries of one list (env, nodes, mounts, hooks, args) */
#define SBX_CDI_STR_MAX 4096           /* one string */
#define SBX_CDI_NODES_MAX 200000       /* YAML nodes of one spec */
#define SBX_CDI_STRINGS_MAX 100000     /* strings read from one spec, aliases counted each time */
#define SBX_CDI_KIND "nvidia.com/gpu"

typedef enum sbx_gpu_req_kind {
  SBX_GPU_REQ_ALL,     /* all */
  SBX_GPU_REQ_COUNT,   /* N: any N */
  SBX_GPU_REQ_INDEXES, /* INDEX,INDEX[,...] (one INDEX is written `INDEX,`) */
  SBX_GPU_REQ_UUID,    /* GPU-... */
  SBX_GPU_REQ_TYPE,    /* TYPE[:N], matched against the model names */
} sbx_gpu_req_kind;

typedef struct sbx_gpu_request {
  sbx_gpu_req_kind kind;
  unsigned count; /* COUNT; TYPE's N (1 when not given) */
  unsigned indexes[SBX_GPUS_MAX];
  size_t nindexes;
  char *name; /* UUID or TYPE */
} sbx_gpu_request;

/* INVALID_ARGUMENT for anything outside the grammar (a count of 0 or over
 * SBX_GPUS_MAX, an index given twice, an empty TYPE). */
int sbx_gpu_request_parse (const char *s, sbx_gpu_request *ret, sbx_error **err);
void sbx_gpu_request_clear (sbx_gpu_request *r);
/* The same, for a check alone. */
int sbx_gpu_request_check (const char *s, sbx_error **err);

/* A CDI spec, as far as sbx reads it. */
typedef struct sbx_cdi_node {
  char *path;           /* in the sandbox */
  char *host_path;      /* on the host (default: path) */
  char type;            /* 'c' or 'b'; 0: from the host node */
  int64_t major, minor; /* -1: from the host node */
  int64_t file_mode;    /* -1: the host node's */
  int64_t uid, gid;     /* -1: 0 */
  char *permissions;    /* of "rwm"; NULL: rwm */
} sbx_cdi_node;

typedef struct sbx_cdi_mount {
  char *host_path, *container_path;
  char **options; /* NULL: bind, ro, nosuid, nodev */
} sbx_cdi_mount;

typedef struct sbx_cdi_hook {
  char *hook_name; /* prestart, createRuntime, createContainer, startContainer, poststart, poststop */
  char *path;
  char **args, **env;
  int64_t timeout; /* seconds, -1: none */
} sbx_cdi_hook;

typedef struct sbx_cdi_edits {
  char **env; /* KEY=VALUE; NULL when none */
  sbx_cdi_node *nodes;
  size_t nnodes;
  sbx_cdi_mount *mounts;
  size_t nmounts;
  sbx_cdi_hook *hooks;
  size_t nhooks;
} sbx_cdi_edits;

typedef struct sbx_cdi_device {
  char *name;
  sbx_cdi_edits edits;
} sbx_cdi_device;

typedef struct sbx_cdi_spec {
  char *path; /* the file, or the name given to sbx_cdi_parse */
  char *version, *kind;
  sbx_cdi_device *devices;
  size_t ndevices;
  sbx_cdi_edits edits; /* the spec's own, with any of its devices */
} sbx_cdi_spec;

/* TEXT (LEN bytes, JSON when it opens with `{`, else YAML) as a CDI spec;
 * NAME is used in messages. INVALID_ARGUMENT, naming the field, for a key
 * sbx does not know, a mistyped value, an edit sbx cannot honour (netDevices,
 * intelRdt, additionalGIDs), or anything over the bounds above. */
int sbx_cdi_parse (const char *name, const char *text, size_t len, sbx_cdi_spec **ret, sbx_error **err);
void sbx_cdi_spec_free (sbx_cdi_spec *s);
void sbx_cdi_edits_clear (sbx_cdi_edits *e);

typedef struct sbx_gpu {
  unsigned index;  /* nvidia-smi's: the order of the PCI bus ids */
  char *bus;       /* PCI bus id; NULL when only a CDI spec named it */
  char *model;     /* NULL: not known */
  char *uuid;      /* NULL: not known */
  uint64_t memory; /* bytes; 0: not known (no nvidia-smi) */
  int64_t minor;   /* of /dev/nvidiaMINOR; -1: not known */
} sbx_gpu;

typedef struct sbx_gpu_host {
  sbx_gpu *gpus;
  size_t ngpus;
  sbx_cdi_spec **specs; /* of kind nvidia.com/gpu */
  size_t nspecs;
  bool cdi;    /* passed through CDI (a spec exists), else directly */
  char *found; /* what discovery saw, for messages: "2 GPUs: 0 NVIDIA H200 (GPU-...), ..." */
} sbx_gpu_host;

/* The host's GPUs and CDI specs. A spec that cannot be read or parsed is
 * an error (INVALID_ARGUMENT naming the file): a GPU is then not passed
 * at all rather than passed without what the vendor said it needs. */
int sbx_gpu_host_probe (sbx_gpu_host *ret, sbx_error **err);
void sbx_gpu_host_clear (sbx_gpu_host *h);

/* The GPUs REQ picks on H, as positions in H->gpus (*ret_n of them, in
 * index order). RUNTIME_UNAVAILABLE, saying what was found, when the host
 * does not have them. */
int sbx_gpu_select (const sbx_gpu_host *h, const sbx_gpu_request *req, size_t *ret_pos, size_t *ret_n, sbx_error **err);

/* The edits that pass the GPUs at POS (N of them) on H: from the CDI specs
 * (RUNTIME_UNAVAILABLE when they name no device for one), or directly.
 * Every node's host path is checked: a device of the type, major and minor
 * it is said to be. */
int sbx_gpu_edits (const sbx_gpu_host *h, const size_t *pos, size_t n, sbx_cdi_edits *ret, sbx_error **err);

/* Whether runsc at PATH has --nvproxy (`runsc flags`). */
bool sbx_gpu_runsc_nvproxy (const char *runsc_path);

/* What a sandbox got at create: MODE "cdi" or "direct"; LIST, each GPU as
 * "INDEX UUID MODEL" ("-" for what is not known); ENV, the CDI spec's
 * environment for its commands. */
typedef struct sbx_gpu_got {
  char *mode;
  char **list;
  char **env;
} sbx_gpu_got;
void sbx_gpu_got_clear (sbx_gpu_got *g);
#define _cleanup_gpu_got_ __attribute__ ((cleanup (sbx_gpu_got_clear)))

/* At create, for o->gpus: the runtime rule, then the GPUs. A sandbox that
 * names no runtime goes to runc when sbx.conf says gpu_runtime = runc; on
 * runsc it needs --nvproxy; else RUNTIME_UNAVAILABLE, saying both ways
 * out. Never a silent switch: the runtime it gets is in its record. */
int sbx_gpu_assign (const sbx_store *st, sbx_sandbox_opts *o, sbx_gpu_got *ret, sbx_error **err);

/* In the monitor: the edits for what SB got at create, the same GPUs
 * (checked by UUID) or an error. */
int sbx_gpu_sandbox_edits (const sbx_sandbox *sb, sbx_cdi_edits *ret, sbx_error **err);

/* The devices.allow lines ("c 195:0 rwm") of E's nodes. */
char **sbx_gpu_device_rules (const sbx_cdi_edits *e);

/* sbx info's view: one JSON array of the GPUs and the mode; the text lines. */
void sbx_gpu_host_gen (void *yajl_gen_g, const sbx_gpu_host *h);

#endif
