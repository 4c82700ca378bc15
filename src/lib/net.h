/* A sandbox's network (DESIGN.md section 5): its namespace, its veth pair
 * and addresses, its egress rules, and the lease that holds them together.
 *
 * Every sandbox with a network owns a lease: a file LEASES/ADDR named by its
 * /30 (and /126) in the pool, holding its id, that its monitor keeps an
 * exclusive flock on for its life. A lease is made before anything else and
 * removed after everything else, so a lease nobody holds names exactly what
 * a crash left behind (the netns, the host's veth end, the nft chain), and
 * any `sbx gc`, of any store, may reap it. The namespace, the interface and
 * the chain are named after the sandbox's id, which is unique on the host. */
#ifndef SBX_NET_H
#define SBX_NET_H

#include <stdbool.h>

#include "conf.h"
#include "egress.h"
#include "error.h"
#include "netns.h"

#define SBX_LEASES_DIR "/run/sbx/leases"
/* Held shared by a monitor from the shared rules' init until its lease
 * exists, exclusive by a gc that removes what no sandbox uses any more. */
#define SBX_NET_LOCK "/run/sbx/net.lock"
/* The host end of a sandbox's veth: "sbx" and the id's hex. */
#define SBX_NET_IFPREFIX "sbx"

typedef struct sbx_net {
  char *id;
  int nsfd;     /* the namespace, O_RDONLY */
  int lease_fd; /* flocked for the sandbox's life */
  char host_if[SBX_IFNAME_MAX + 1];
  sbx_cidr addr4, gw4; /* the sandbox's address and its gateway (the host end), /30 */
  sbx_cidr addr6, gw6; /* family 0 when IPv6 is off */
} sbx_net;

/* The egress pool of CONF, as sbx_egress_init wants it. OPEN is filled from
 * CONF and lives as long as it. */
void sbx_net_pool (const sbx_conf *conf, sbx_egress_pool *pool, sbx_cidr **ret_open);

/* The host end of ID's veth. */
void sbx_net_ifname (const char *id, char buf[SBX_IFNAME_MAX + 1]);

/* Makes ID's lease, namespace, veth pair, addresses and routes (and the
 * host's forwarding), and installs the egress rules for MODE/ALLOW (and,
 * with DOMAINS, the empty domain sets and their rules). Undoes
 * what it did on failure. (A sandbox without a network has none of this:
 * gVisor's own loopback, or the namespace runc makes.) */
int sbx_net_setup (const sbx_conf *conf, const char *id, sbx_egress_mode mode, const sbx_cidr *allow, size_t nallow,
                   bool domains, sbx_net **ret, sbx_error **err);
/* Replaces the rules (one transaction); with DOMAINS, the domain sets hold
 * ELEMS afterwards (sbx_egress_apply_domains). */
int sbx_net_apply (const sbx_net *net, sbx_egress_mode mode, const sbx_cidr *allow, size_t nallow, bool domains,
                   const sbx_egress_elem *elems, size_t nelems, sbx_error **err);
/* Removes everything of NET (rules, veth, namespace, lease) and frees it. */
void sbx_net_teardown (sbx_net *net);

/* Reaps what sandboxes whose monitor is gone left: every lease nobody holds
 * with the namespace, veth and rules it names, and for the ids KNOWN_DEAD
 * (sandboxes of the caller's store that are over) a namespace, veth or
 * chain left without a lease. Returns how many sandboxes' leftovers were
 * removed. */
int sbx_net_gc (char *const *known_dead, sbx_error **err);

/* A shared hold on SBX_NET_LOCK (an fd to close), while the shared rules
 * are made and a lease is taken. */
int sbx_net_hold (sbx_error **err);

/* With no lease left (no sandbox with a network on this host): the table
 * inet sbx and the bind mount of the namespace directory go, as nothing of
 * sbx's should stay on an idle host. Skipped while a monitor holds the
 * lock. 1 when something was removed. */
int sbx_net_gc_idle (sbx_error **err);

/* Removes what ID's network left, unless its lease is held (its monitor
 * lives: 0). 1 when it looked and removed whatever was there. */
int sbx_net_reap (const char *id);

/* The address of C, without its prefix (caller frees): the same as
 * sbx_cidr_address_text. */
char *sbx_net_addr_str (const sbx_cidr *c);

/* Parses CIDR strings; INVALID_ARGUMENT names the bad one. */
int sbx_net_parse_allow (char *const *strs, sbx_cidr **ret, size_t *ret_n, sbx_error **err);

const char *sbx_egress_mode_name (sbx_egress_mode m);

#endif
