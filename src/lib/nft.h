/* The nftables plumbing under egress.c: a libmnl netlink socket, requests
 * and dumps, one-transaction batches whose every message is acked and named
 * (so an error says which step the kernel refused), builders for the
 * table's objects (chains, rules, sets, interval sets, counters), and rule
 * expressions. It knows nothing of sbx's policy: egress.c decides which
 * chains, sets and rules a table gets.
 *
 * Internal to egress: nothing but egress*.c includes it. */
#ifndef SBX_NFT_H
#define SBX_NFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/gen.h>
#include <libnftnl/object.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <libnftnl/udata.h>

#include "cidr.h"
#include "error.h"

/* nft's datatype numbers, so that `nft list` prints the keys as addresses. */
#define NFT_TYPE_IPADDR 7
#define NFT_TYPE_IP6ADDR 8
#define NFT_TYPE_IFNAME 41

#define DEFINE_NFTNL_FREEP(type)                    \
  static inline void type##_freep (struct type **p) \
  {                                                 \
    if (*p)                                         \
      type##_free (*p);                             \
  }
DEFINE_NFTNL_FREEP (nftnl_table)
DEFINE_NFTNL_FREEP (nftnl_chain)
DEFINE_NFTNL_FREEP (nftnl_rule)
DEFINE_NFTNL_FREEP (nftnl_set)
DEFINE_NFTNL_FREEP (nftnl_gen)
DEFINE_NFTNL_FREEP (nftnl_obj)
#define _cleanup_nftnl_(type) __attribute__ ((cleanup (type##_freep)))

/* ---- Intervals ---- */

/* An inclusive range of addresses, big-endian; IPv4 in the first 4 bytes. */
typedef struct range {
  uint8_t lo[16], hi[16];
} range;

typedef struct ranges {
  range *v;
  size_t n;
} ranges;

#define _cleanup_ranges_ __attribute__ ((cleanup (ranges_freep)))

/* Sorts R and merges overlapping and adjacent ranges; returns the count. */
size_t ranges_merge (range *r, size_t n, size_t len);
void ranges_push (ranges *rs, const sbx_cidr *c);
void ranges_freep (ranges *rs);

/* ---- Netlink ---- */

typedef struct nft {
  struct mnl_socket *nl;
  uint32_t portid;
  uint32_t seq;
  char *buf;
} nft;

#define _cleanup_nft_ __attribute__ ((cleanup (nft_close)))

void nft_close (nft *n);
int nft_open (nft *n, sbx_error **err);
struct nlmsghdr *req_hdr (nft *n, char *buf, uint16_t type, uint16_t family, uint16_t flags);
/* Sends the request NLH and runs CB on each answer until the end of the
 * dump (or the ack). Returns 1 when the ruleset changed during the dump. */
int nft_talk (nft *n, struct nlmsghdr *nlh, mnl_cb_t cb, void *data, const char *what, sbx_error **err);
/* A mnl callback: the generation id into *(uint32_t *) DATA. */
int gen_cb (const struct nlmsghdr *nlh, void *data);

/* ---- Batches ---- */

/* One transaction: begin, the messages, end. Every message asks for an
 * ack, and WHAT names each (what[i] is message seq0 + 1 + i), so that an
 * error says which step the kernel refused. */
typedef struct batch {
  char *buf;
  struct mnl_nlmsg_batch *b;
  const char *table;
  uint32_t seq0, seq, set_id;
  char **what;
  size_t nwhat;
  bool overflow;
} batch;

#define _cleanup_batch_ __attribute__ ((cleanup (batch_free)))

void batch_free (batch *b);
/* LIMIT: the most the messages may take; GENID, when given, the
 * generation the batch must apply to. */
void batch_start (batch *b, nft *n, const char *table, size_t limit, const uint32_t *genid);
/* A message of the batch: build its payload into what batch_msg returns,
 * then name it with batch_next. */
struct nlmsghdr *batch_msg (batch *b, uint16_t type, uint16_t flags);
void batch_next (batch *b, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
void batch_end (batch *b);
/* 0: applied; 1: the ruleset changed since the generation id the batch
 * carries (nothing applied: read again and retry); -1: refused. */
int batch_send (nft *n, batch *b, sbx_error **err);

/* ---- Batch messages ---- */

void b_table (batch *b);
void b_chain (batch *b, const char *name, const char *type, uint32_t hook, int32_t prio);
void b_chain_del (batch *b, const char *name);
struct nftnl_rule *rule_new (const batch *b, const char *chain);
void b_rule_del (batch *b, const char *chain, const uint64_t *handle);
void b_rule_add (batch *b, struct nftnl_rule *r, const char *what);
struct nftnl_set *set_new (const batch *b, const char *name);
void b_set (batch *b, const char *name, uint32_t key_type, uint32_t key_len, uint32_t flags);
void b_set_del (batch *b, const char *name);
/* Deletes every element of set NAME. */
void b_set_flush (batch *b, const char *name);
void set_add_key (struct nftnl_set *s, const void *key, size_t len, bool end, bool open);
void b_interval_set (batch *b, const char *name, int family, const ranges *rs);
void b_counter (batch *b, const char *name);
void b_counter_del (batch *b, const char *name);

/* ---- Rule expressions ---- */

struct nftnl_expr *expr_add (struct nftnl_rule *r, const char *name);
void e_meta (struct nftnl_rule *r, uint32_t key);
void e_cmp (struct nftnl_rule *r, uint32_t op, const void *data, uint32_t len);
void e_payload (struct nftnl_rule *r, uint32_t base, uint32_t offset, uint32_t len);
void e_bitwise (struct nftnl_rule *r, const void *mask, uint32_t len);
struct nftnl_expr *e_lookup (struct nftnl_rule *r, const char *set);
void e_lookup_not (struct nftnl_rule *r, const char *set);
void e_counter_ref (struct nftnl_rule *r, const char *name);
void e_verdict (struct nftnl_rule *r, int verdict, const char *chain);
void e_reject (struct nftnl_rule *r, uint32_t type, uint8_t code);
void m_ifname (struct nftnl_rule *r, uint32_t key, const char *name, bool prefix, uint32_t op);
void m_u8 (struct nftnl_rule *r, uint32_t meta_key, uint8_t v);
void m_addr_load (struct nftnl_rule *r, int family, bool dst);
void m_addr_in_set (struct nftnl_rule *r, int family, bool dst, const char *set);
void m_addr_in_cidr (struct nftnl_rule *r, bool dst, const sbx_cidr *c);
void m_ct_state (struct nftnl_rule *r, uint32_t mask);
void m_ct_established (struct nftnl_rule *r);
void m_th (struct nftnl_rule *r, uint32_t offset, const void *v, uint32_t len);
/* `ct mark MARK`, and `ct mark set MARK`. */
void m_ct_mark (struct nftnl_rule *r, uint32_t mark);
void e_ct_mark_set (struct nftnl_rule *r, uint32_t mark);

/* ---- Elements with timeouts ---- */

/* One element of a set of single addresses (KEY of LEN bytes) that expires
 * after TIMEOUT_MS, with COMMENT (may be NULL) in its user data, added to S. */
void set_add_timed (struct nftnl_set *s, const void *key, size_t len, uint64_t timeout_ms, const char *comment);

#endif
