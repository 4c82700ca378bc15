/* Resolver: the DNS forwarder a sandbox's monitor runs for it, inside the
 * monitor's one poll loop. It listens on the sandbox's gateway address (UDP
 * and TCP, port 53) and relays each query to the host's upstream resolvers,
 * tried in order, and the answer back.
 *
 * Everything a sandbox sends is untrusted: a query must be one well-formed
 * question (sbx_dns_query_check) or it is refused; every table, buffer and
 * connection count has a bound; every fd is nonblocking, so a silent
 * upstream or a client that never reads only ever costs a timeout.
 *
 * UDP queries go to the upstream from one connected UDP socket per upstream,
 * each try under a fresh random id; a reply is taken only from that
 * upstream's address and port, for an outstanding id, with the same
 * question, and goes back with the client's id restored. TCP queries go to
 * the upstream over a new TCP connection each (not UDP: a client asks over
 * TCP because the UDP answer was truncated, and only TCP carries it whole).
 * Each try has its own timeout (2 s); then the next upstream is tried, and
 * after the last the client gets a SERVFAIL made here.
 *
 * With domain rules (sbx_resolver_set_domains) a query for a name no rule
 * matches is answered REFUSED here and never leaves; the answer to one that
 * matches is read (sbx_dns_answer_addrs) and its addresses handed to the
 * caller, which allows them in the sandbox's nftables set, before the
 * answer goes back. */
#ifndef SBX_RESOLVER_H
#define SBX_RESOLVER_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "dns.h"
#include "egress.h"
#include "error.h"

/* Upstreams beyond the first 8 are ignored (resolv.conf has at most 3). */
#define SBX_RESOLVER_UPSTREAM_MAX 8
/* Addresses sbx_resolver_listen accepts, each with a UDP and a TCP socket. */
#define SBX_RESOLVER_LISTEN_MAX 4
/* Queries outstanding at once, UDP and TCP together; beyond: SERVFAIL. */
#define SBX_RESOLVER_PENDING_MAX 512
/* TCP client connections; more are closed as soon as they are accepted. */
#define SBX_RESOLVER_CONN_MAX 64
/* TCP queries in flight per client connection and in all: beyond, the
 * connection is not read until one finishes. */
#define SBX_RESOLVER_CONN_INFLIGHT 4
#define SBX_RESOLVER_TCP_INFLIGHT 64
/* The most pollfds sbx_resolver_pollfds ever fills. */
#define SBX_RESOLVER_POLLFDS_MAX \
  (2 * SBX_RESOLVER_LISTEN_MAX + SBX_RESOLVER_UPSTREAM_MAX + SBX_RESOLVER_CONN_MAX + SBX_RESOLVER_TCP_INFLIGHT)
/* The largest UDP query taken; larger ones are refused as malformed. */
#define SBX_DNS_UDP_MAX 4096
#define SBX_RESOLVER_TIMEOUT_MS 2000 /* per upstream try */
#define SBX_RESOLVER_IDLE_MS 10000   /* a TCP client without a whole exchange */

typedef struct sbx_resolver sbx_resolver;

/* UPSTREAMS: addresses (prefix ignored), tried in order; PORT normally 53
 * (tests use another). Entries of another family are skipped. Never fails:
 * sockets to the upstreams are made on first use. */
sbx_resolver *sbx_resolver_new (const sbx_cidr *upstreams, size_t n, uint16_t upstream_port);

/* Listens (UDP and TCP) on ADDR (family AF_INET/AF_INET6, struct
 * in_addr/in6_addr) port PORT; may be called for a v4 and a v6 address.
 * Uses IP_FREEBIND/IPV6_FREEBIND so the address need not be up yet. PORT 0
 * takes one free port for both sockets. An upstream equal to a listening
 * address and port is never forwarded to (it would loop). */
int sbx_resolver_listen (sbx_resolver *r, int family, const void *addr, uint16_t port, sbx_error **err);

/* Fills at most MAX pollfds (fd, events) for the loop; returns how many.
 * SBX_RESOLVER_POLLFDS_MAX is always enough; with fewer, the listening and
 * upstream sockets come first and some connections wait. */
size_t sbx_resolver_pollfds (sbx_resolver *r, struct pollfd *pf, size_t max);

/* Handles the revents of the N pollfds it filled last (same order). Call it
 * after every poll, also one that timed out: it also handles the deadlines
 * (tries that time out, idle TCP clients). */
void sbx_resolver_dispatch (sbx_resolver *r, const struct pollfd *pf, size_t n);

/* Milliseconds until its next deadline (a query timing out, an idle TCP
 * client to close), -1 if none. */
int sbx_resolver_timeout_ms (const sbx_resolver *r);

/* Queries answered, failed (timeout/SERVFAIL made by us), refused as
 * malformed. */
void sbx_resolver_counts (const sbx_resolver *r, uint64_t *answered, uint64_t *failed, uint64_t *malformed);

void sbx_resolver_free (sbx_resolver *r);

/* Domain rules (--allow-domain). Called with the addresses an answer gives
 * for the query's name and the names its CNAMEs lead to, before the answer
 * reaches the client; -1 means they could not be allowed, and the client
 * gets SERVFAIL instead. */
typedef int (*sbx_resolver_allow_fn) (void *data, const char *qname, const sbx_dns_addr *addrs, size_t n);

/* The most addresses of one answer passed to the allow function. */
#define SBX_RESOLVER_ANSWER_ADDRS_MAX 64

/* With RULES (normalized by sbx_domain_rules_parse; copied), the resolver
 * answers only names they match: any other name is REFUSED without being
 * sent upstream, so that no query name carries anything out. Answers of
 * listed names go through ALLOW first, their TTLs capped at TTL_MAX. RULES
 * NULL: every name is forwarded (no domain rules). Takes effect for
 * answers that arrive from now on too. */
void sbx_resolver_set_domains (sbx_resolver *r, char *const *rules, uint32_t ttl_max, sbx_resolver_allow_fn allow,
                               void *data);

/* Queries refused because no domain rule matched their name. */
uint64_t sbx_resolver_refused_count (const sbx_resolver *r);

/* For tests: the timeout of one upstream try, and the idle time after
 * which a TCP client is closed (milliseconds, at least 1). */
void sbx_resolver_set_timeout_ms (sbx_resolver *r, int ms);
void sbx_resolver_set_idle_ms (sbx_resolver *r, int ms);

#endif
