/* The operator's config file, /etc/sbx/sbx.conf (sbx.conf(5)): the address
 * pools, upstream resolvers, opened private destinations, the private-range
 * policy and where exposed ports listen, read strictly into one struct. Also
 * the nameservers of the host's resolv.conf, the resolvers used when the
 * file names none.
 *
 * The format is `key = value` lines; anything not understood exactly (an
 * unknown key, a value outside its grammar, a key given twice that may be
 * given once) is INVALID_ARGUMENT with "FILE:LINE: KEY: why", never a
 * silently ignored line. */
#ifndef SBX_CONF_H
#define SBX_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx-limits.h"
#include "egress.h" /* sbx_cidr, sbx_cidr_parse */
#include "error.h"

#define SBX_CONF_PATH_DEFAULT "/etc/sbx/sbx.conf"

/* The limits of the file and of its lists. */
#define SBX_CONF_SIZE_MAX (1024 * 1024)
#define SBX_CONF_LINE_MAX 4096
#define SBX_CONF_DNS_MAX 8
#define SBX_CONF_OPEN_MAX 256
#define SBX_CONF_OPEN_NAME_MAX 63
#define SBX_CONF_HOST_MAX 253
#define SBX_RESOLV_MAX 8
#define SBX_CONF_HEAD_TIMEOUT_MAX 300 /* seconds, expose_head_timeout */
#define SBX_CONF_MOUNT_PATHS_MAX 256  /* mount_deny, mount_allow: paths in each */

/* The limits of a sandbox created without --memory or --cpu, unless the
 * file says otherwise (default_memory, default_cpu): what a hosted sandbox
 * gets, rather than the whole host. */
#define SBX_CONF_DEFAULT_MEMORY (1ULL << 30)
#define SBX_CONF_DEFAULT_CPU 1.0

/* The shipped defaults of the disk keys (sbx.conf(5)). */
#define SBX_DISK_DEFAULT (10ULL << 30)
#define SBX_IMAGE_SIZE_MAX_DEFAULT (20ULL << 30)
#define SBX_STORE_RESERVE_DEFAULT (1ULL << 30)

typedef struct sbx_conf_open {
  char *name;    /* 1-63 of [a-z0-9_-], unique in the file */
  sbx_cidr cidr; /* inside 10/8, 172.16/12, 192.168/16, 100.64/10 or fc00::/7 */
} sbx_conf_open;

/* A registry sbx.conf says something about: `registry_mirror = HOST MIRROR`
 * (repeatable, tried in order before HOST for pulls) and `registry_insecure =
 * HOST` (plain HTTP or unverified TLS allowed for HOST only). HOST is
 * "NAME[:PORT]" as image references write it. */
typedef struct sbx_conf_registry {
  char *host;
  char **mirrors; /* strv of HOST[:PORT]; NULL when none */
  bool insecure;
} sbx_conf_registry;

#define SBX_CONF_REGISTRIES_MAX 64
#define SBX_CONF_MIRRORS_MAX 8
#define SBX_CONF_STALL_TIMEOUT_DEFAULT 30 /* seconds, registry_stall_timeout */
#define SBX_CONF_STALL_TIMEOUT_MAX 3600
/* Domain rules: an address an answer gives is allowed for its TTL plus
 * domain_ttl_grace, kept within domain_ttl_min..domain_ttl_max (seconds);
 * the answer's TTLs are lowered to domain_ttl_max - domain_ttl_grace (at
 * least 1), so that no client keeps a record longer than its address is
 * allowed. */
#define SBX_CONF_DOMAIN_TTL_GRACE_DEFAULT 10
#define SBX_CONF_DOMAIN_TTL_MIN_DEFAULT 30
#define SBX_CONF_DOMAIN_TTL_MAX_DEFAULT 3600
#define SBX_CONF_DOMAIN_TTL_LIMIT 86400
/* runc's user namespaces (userns.h): ranges of 65536 host ids from
 * userns_base, userns_count of them; all below 2^32 - 1. */
#define SBX_CONF_USERNS_BASE_DEFAULT 1000000000u
#define SBX_CONF_USERNS_COUNT_DEFAULT 1024u
#define SBX_CONF_USERNS_BASE_MIN 65536u

/* A namespace's quotas (`namespace_max_sandboxes = NAME N` and the like,
 * sbx.conf(5)); -1 where the file sets none. */
typedef struct sbx_conf_namespace {
  char *name;            /* a sandbox name's grammar (util.h name_is_valid) */
  int64_t max_sandboxes; /* live sandboxes (creating, running, paused) */
  double max_cpu;        /* cores, the sum of their --cpu */
  int64_t max_memory;    /* bytes, the sum of their --memory */
  int64_t max_gpus;      /* GPUs, the sum of what their --gpu asks for */
} sbx_conf_namespace;

#define SBX_CONF_NAMESPACES_MAX 1024
#define SBX_CONF_NS_SANDBOXES_MAX 1000000
#define SBX_CONF_NS_GPUS_MAX 4096

typedef struct sbx_conf {
  char *path;          /* the file read, or NULL when none existed (defaults) */
  sbx_cidr pool4;      /* default 10.200.0.0/16; prefix 8..28 */
  sbx_cidr pool6;      /* family 0 = IPv6 off in sandboxes (default); prefix 48..120 */
  sbx_cidr *dns;       /* upstream resolvers (host addresses, /32 or /128), in file order; */
  size_t ndns;         /*   empty: none configured */
  sbx_conf_open *open; /* operator-opened private destinations, in file order */
  size_t nopen;
  bool observe;                    /* private_policy = observe (default: drop) */
  bool docker_enforce;             /* docker_runtime = enforce: --docker on runc refused (default: log) */
  char *expose_address;            /* address exposed ports listen on; default "127.0.0.1"; an IPv4 or IPv6 literal */
  char *expose_host;               /* host name printed in URLs; default: expose_address (IPv6 in brackets) */
  unsigned expose_head_timeout_ms; /* a new connection's first request head, within; default 10000 */
  uint64_t default_memory;         /* bytes, 0 = no limit; default SBX_CONF_DEFAULT_MEMORY */
  double default_cpu;              /* cores, 0 = no limit; default SBX_CONF_DEFAULT_CPU */
  uint64_t disk;                   /* a sandbox's disk limit when create has no --disk; 0 = none */
  uint64_t image_size_max;         /* the most an import or a build may expand to (its layers' files) */
  uint64_t store_reserve;          /* store operations refuse to start with less free on the store's filesystem */
  char *unqualified_registry;      /* the registry of a name without one; NULL: "docker.io" */
  char *registry_certs_dir;        /* HOST[:PORT]/ *.crt CA files; NULL: "/etc/sbx/certs.d" */
  unsigned registry_stall_timeout; /* seconds without a byte before a transfer is TIMEOUT; 0: the default */
  unsigned domain_ttl_grace;       /* seconds; see SBX_CONF_DOMAIN_TTL_* */
  unsigned domain_ttl_min, domain_ttl_max;
  sbx_conf_registry *registries;
  size_t nregistries;
  /* Host directories (--mount, hostmount.h): absolute normal paths, each
   * refusing (deny) or, when the list is not empty, allowing only (allow)
   * itself and what is below it; deny wins. NULL: none. */
  char **mount_deny;
  char **mount_allow;
  /* gpu_runtime = runc: a GPU sandbox that names no runtime runs under
   * runc (default runsc, which needs --nvproxy; gpu.h). */
  bool gpu_runtime_runc;
  sbx_conf_namespace *namespaces; /* in file order, each name once */
  size_t nnamespaces;
  uint32_t userns_base;      /* the first host id of runc sandboxes' ranges */
  uint32_t userns_count;     /* how many ranges of 65536 ids */
  bool runc_userns_optional; /* runc_userns = optional: runc without a user namespace where the host has none */
} sbx_conf;

/* The entry for registry HOST, or NULL. */
const sbx_conf_registry *sbx_conf_registry_find (const sbx_conf *c, const char *host);

/* The quotas of namespace NAME, or NULL when the file sets none. */
const sbx_conf_namespace *sbx_conf_namespace_find (const sbx_conf *c, const char *name);

/* PATH NULL: $SBX_CONF if set and not empty, else SBX_CONF_PATH_DEFAULT
 * (symlinks are followed). A missing file gives the defaults (path NULL);
 * an unreadable one or any error in it is INVALID_ARGUMENT with
 * "FILE:LINE: ..." naming the key ("FILE: ..." for what concerns the whole
 * file: unreadable, over 1 MiB). */
int sbx_conf_load (const char *path, sbx_conf **ret, sbx_error **err);

/* Parse from memory (for tests and the fuzzer); NAME (NULL: "sbx.conf") is
 * used in messages and becomes the result's path. TEXT need not be
 * NUL-terminated. */
int sbx_conf_parse (const char *name, const char *text, size_t len, sbx_conf **ret, sbx_error **err);

void sbx_conf_free (sbx_conf *c);
static inline void
sbx_conf_freep (sbx_conf **c)
{
  sbx_conf_free (*c);
}
#define _cleanup_conf_ __attribute__ ((cleanup (sbx_conf_freep)))

/* The nameservers of a resolv.conf (PATH NULL: /etc/resolv.conf): "nameserver
 * ADDR" lines, IPv4 or IPv6 (a %scope suffix is dropped), in file order,
 * duplicates once, at most 8; a line whose address does not parse is skipped,
 * as the C library does. A missing file or none listed gives an empty list
 * (*ret NULL), not an error. */
int sbx_resolv_conf_nameservers (const char *path, sbx_cidr **ret, size_t *ret_n, sbx_error **err);

#endif
