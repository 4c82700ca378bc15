/* Egress: what a sandbox may reach, as nftables rules made with libnftnl
 * (DESIGN.md section 5), from CIDRs parsed by cidr.h.
 *
 * All of sbx's rules live in one inet table (normally "sbx"):
 *
 *   set refused4, refused6   always refused, whatever the allow-list, the
 *                            opened ranges or observe mode say: link-local
 *                            and cloud metadata (fd00:ec2::254 included),
 *                            loopback, 0/8, the sandbox pools, and the IPv4
 *                            ones as v4-mapped and NAT64 addresses
 *   set private4, private6   10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7
 *                            (and the IPv4 ones as v4-mapped and NAT64)
 *   set open4, open6         the private destinations the operator opened
 *   set dns-ifnames          sandbox interfaces that may ask the gateway's
 *                            resolver and ping it (not those in block mode)
 *   chain refuse             tcp reset, else icmpx admin-prohibited: a
 *                            refused connection fails at once, not by timeout
 *   chain forward            hook forward: only `iifname IF jump sandbox-ID`
 *   chain inbound            hook forward: to a sandbox interface only
 *                            established/related traffic, nothing unsolicited
 *   chain input              hook input: from a sandbox interface to the host
 *                            only replies, neighbour discovery, DNS and echo
 *                            requests to its own gateway (an address of the
 *                            interface it came in by: `fib daddr . iif type
 *                            local`, so not another sandbox's resolver); the
 *                            rest refused
 *   chain source             hook prerouting, priority raw: per sandbox
 *                            interface, a packet whose source is not the
 *                            sandbox's own address is dropped, whatever its
 *                            protocol, before conntrack sees it (IPv6 also
 *                            lets link-local and, for ICMPv6, the
 *                            unspecified address through: neighbour
 *                            discovery; without an IPv6 address, no IPv6)
 *   chain postrouting        nat: masquerade the pool leaving by any interface
 *                            that is not a sandbox's
 *   chain private            private and not opened: refused; under observe,
 *                            empty (every sandbox chain jumps here, so one
 *                            init switches them all)
 *   chain sandbox-ID         per sandbox: refused ranges first, then `jump
 *                            private`, then new connections to private, not
 *                            opened destinations counted (only reached under
 *                            observe), then the mode
 *   set sandbox-ID-v4, -v6   per sandbox: its allow-list (intervals)
 *   counter sandbox-ID-private  per sandbox: those observed connections
 *   set sandbox-ID-dns4, -dns6  per sandbox with domain rules: the addresses
 *                            its resolver returned for listed names, each
 *                            with a timeout; a new connection to one is
 *                            accepted and its conntrack entry marked with
 *                            the chain's mark, and a connection so marked
 *                            stays accepted after the element expires (a
 *                            new mark at every apply, so `sbx net` cuts
 *                            what the new rules do not allow)
 *
 * Each call is one nf_tables transaction: it applies whole or not at all. */
#ifndef SBX_EGRESS_H
#define SBX_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cidr.h"
#include "error.h"

#define SBX_EGRESS_TABLE "sbx"
/* The longest allow-list one sandbox may have. */
#define SBX_EGRESS_ALLOW_MAX 4096

typedef enum sbx_egress_mode {
  SBX_EGRESS_BLOCK, /* nothing out, no DNS */
  SBX_EGRESS_ALLOW, /* only the allow-list, plus DNS to the gateway */
  SBX_EGRESS_OPEN,  /* the internet through NAT, plus DNS to the gateway */
} sbx_egress_mode;

typedef struct sbx_egress_pool {
  sbx_cidr v4;          /* the sandboxes' IPv4 pool (required) */
  sbx_cidr v6;          /* their IPv6 pool; family 0 when they get none */
  const char *ifprefix; /* host ends of sandbox veths are IFPREFIX…; NULL: "sbx" */
  bool dns;             /* accept DNS (udp and tcp 53) to the gateway */
  sbx_cidr gateway4;    /* where the resolver listens; family 0: any host */
  sbx_cidr gateway6;    /*   address inside the pool (v4, v6) */
  const sbx_cidr *open; /* private destinations the operator opened: not */
  size_t nopen;         /*   refused, the mode decides (at most ALLOW_MAX) */
  bool observe;         /* private destinations not refused: each new
                           connection to one counted per sandbox, then the
                           mode decides */
} sbx_egress_pool;

/* Creates the table and its shared chains and sets where missing and
 * rewrites their rules and the shared sets from POOL, leaving every
 * sandbox's chain, sets, counter and forward jump alone: a change of the
 * opened ranges or of observe reaches every sandbox at once. Idempotent;
 * one transaction. */
int sbx_egress_init (const char *table, const sbx_egress_pool *pool, sbx_error **err);

/* The addresses a sandbox's packets may come from: its own. */
typedef struct sbx_egress_source {
  sbx_cidr v4; /* its IPv4 address, a /32 (required) */
  sbx_cidr v6; /* its IPv6 address, a /128; family 0 when it has none */
} sbx_egress_source;

/* (Re)makes the sandbox's chain and allow sets for MODE and ALLOW (ignored
 * unless MODE is ALLOW), its private counter (kept if it exists), the
 * forward rule `iifname IFNAME jump sandbox-ID` and the source check of
 * IFNAME in chain source (SRC), replacing any earlier rules of this sandbox
 * or of IFNAME in one transaction. The refused ranges are checked before anything is
 * accepted, established connections included, so a destination refused by
 * the new rules stops at once (a reset or an ICMP error). The table must
 * have been made by sbx_egress_init (NOT_FOUND otherwise). */
int sbx_egress_apply (const char *table, const char *sandbox_id, const char *ifname, const sbx_egress_source *src,
                      sbx_egress_mode mode, const sbx_cidr *allow, size_t nallow, sbx_error **err);

/* Domain rules: the addresses resolved for listed names. */
typedef struct sbx_egress_elem {
  sbx_cidr addr;       /* a /32 or a /128 */
  uint64_t timeout_ms; /* given: how long it is allowed; read: how long is left */
  char name[254];      /* the name it was resolved for ("" if none) */
} sbx_egress_elem;

/* The most addresses a sandbox's domain sets hold, per family. */
#define SBX_EGRESS_DOMAIN_ADDRS_MAX 65536

/* sbx_egress_apply, and with DOMAINS the sandbox's domain sets (made empty
 * with ELEMS in them, N of them) and their rules, whatever MODE (under
 * ALLOW: both lists allowed). */
int sbx_egress_apply_domains (const char *table, const char *sandbox_id, const char *ifname,
                              const sbx_egress_source *src, sbx_egress_mode mode, const sbx_cidr *allow, size_t nallow,
                              bool domains, const sbx_egress_elem *elems, size_t n, sbx_error **err);

/* Allows the N addresses of ELEMS for the sandbox for their timeout (an
 * address already there gets the new timeout), in one transaction. Its
 * domain sets must exist (NOT_FOUND otherwise). */
int sbx_egress_domain_add (const char *table, const char *sandbox_id, const sbx_egress_elem *elems, size_t n,
                           sbx_error **err);

/* The addresses in the sandbox's domain sets now, with the time each has
 * left; none when it has no such sets. */
int sbx_egress_domain_list (const char *table, const char *sandbox_id, sbx_egress_elem **ret, size_t *ret_n,
                            sbx_error **err);

/* Why a sandbox may never reach ADDR (a host address) under POOL whatever
 * a domain rule says: "always refused" (metadata, link-local, loopback,
 * the pools) or "private" (not opened by the operator); NULL when it may. */
const char *sbx_egress_addr_refused (const sbx_egress_pool *pool, const sbx_cidr *addr);

/* Removes the sandbox's chain, sets, counter, forward rule and DNS permission;
 * IFNAME (may be NULL) also drops the forward and source rules matching that
 * interface (the source rules are found by it alone).
 * Nothing to remove (or no table) is success. */
int sbx_egress_remove (const char *table, const char *sandbox_id, const char *ifname, sbx_error **err);

/* Deletes TABLE when no sandbox has a chain, set or counter in it (its
 * shared chains and sets go with it; sbx_egress_init makes them again).
 * 1: dropped; 0: kept, or there was none. */
int sbx_egress_drop (const char *table, sbx_error **err);

/* The ids of the sandboxes that have a chain, sets or a counter in TABLE,
 * sorted; an empty vector when the table does not exist. */
int sbx_egress_list (const char *table, char ***ret_ids, sbx_error **err);

/* The packets of new connections to private, not opened destinations the
 * sandbox made under observe (counter sandbox-ID-private; apply creates it
 * and keeps its count). 0 when there is no such counter or table. */
int sbx_egress_private_count (const char *table, const char *sandbox_id, uint64_t *ret_packets, sbx_error **err);

/* The names sbx gives a sandbox's objects (caller frees). */
char *sbx_egress_chain_name (const char *sandbox_id);

#endif
