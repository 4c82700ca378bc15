/* Egress policy: which chains, sets and rules sbx's nftables table and each
 * sandbox get (the shape is described in egress.h), built with nft.h's
 * batches, one nf_tables transaction per call.
 *
 * A call that reads the ruleset before changing it (apply, remove) sends the
 * generation id it read with its batch: if anything changed the ruleset in
 * between, the kernel refuses the batch whole and the call starts again. */
#include "config.h"
#include "egress.h"
#include "egress-internal.h"
#include "nft.h"
#include "sha256.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#define PRIO_RAW (-300)
#define PRIO_FILTER 0
#define PRIO_SRCNAT 100

#define RETRIES 30

/* Always refused, whatever the allow-list, the operator's opened ranges or
 * observe mode say (DESIGN.md section 5). */
static const char *const refused_v4[] = {
  "169.254.0.0/16",                /* link-local: most clouds' metadata service */
  "168.63.129.16/32",              /* Azure's wire server */
  "192.0.0.0/24",                  /* IETF protocol assignments, some clouds' metadata */
  "127.0.0.0/8",      "0.0.0.0/8", /* "this network": reaches the host itself */
};
/* AWS's IPv6 metadata address lies inside fc00::/7: refused here, so that
 * neither an opened ULA range nor observe mode reaches it. */
static const char *const refused_v6[] = { "::1/128", "fe80::/10", "fd00:ec2::254/128" };
/* Private: refused unless the operator opened them or the table observes. */
static const char *const private_v4[] = {
  "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
  "100.64.0.0/10", /* carrier-grade NAT, also used for cloud internals */
};
static const char *const private_v6[] = { "fc00::/7" };
/* The same IPv4 ranges reached through IPv6: v4-mapped, and NAT64's
 * well-known prefix (a NAT64 gateway would carry them to IPv4). */
static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
static const uint8_t nat64_prefix[12] = { 0, 0x64, 0xff, 0x9b };

/* V4 embedded after a 96-bit PREFIX. */
static sbx_cidr
cidr_embed_v4 (const uint8_t prefix[12], const sbx_cidr *v4)
{
  sbx_cidr c = { .family = AF_INET6, .prefix = 96 + v4->prefix };
  memcpy (c.addr, prefix, 12);
  memcpy (c.addr + 12, v4->addr, 4);
  return c;
}

/* C into R4 or R6; an IPv4 range also into R6 in its v4-mapped and NAT64
 * forms, the ways IPv6 can reach it. */
static void
ranges_push_all_forms (ranges *r4, ranges *r6, const sbx_cidr *c)
{
  if (c->family == AF_INET6)
    {
      ranges_push (r6, c);
      return;
    }
  sbx_cidr m = cidr_embed_v4 (v4mapped_prefix, c), t = cidr_embed_v4 (nat64_prefix, c);
  ranges_push (r4, c);
  ranges_push (r6, &m);
  ranges_push (r6, &t);
}

static void
ranges_push_consts (ranges *r4, ranges *r6, const char *const *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      sbx_cidr c = sbx_cidr_const (v[i]);
      ranges_push_all_forms (r4, r6, &c);
    }
}

static void
ranges_merge_both (ranges *r4, ranges *r6)
{
  r4->n = ranges_merge (r4->v, r4->n, 4);
  r6->n = ranges_merge (r6->v, r6->n, 16);
}

/* What every sandbox is refused: the constant ranges and the pools. */
static void
refused_ranges (const sbx_egress_pool *pool, ranges *r4, ranges *r6)
{
  ranges_push_consts (r4, r6, refused_v4, ARRAY_SIZE (refused_v4));
  ranges_push_consts (r4, r6, refused_v6, ARRAY_SIZE (refused_v6));
  ranges_push_all_forms (r4, r6, &pool->v4);
  if (pool->v6.family == AF_INET6)
    ranges_push (r6, &pool->v6);
  ranges_merge_both (r4, r6);
}

static void
private_ranges (ranges *r4, ranges *r6)
{
  ranges_push_consts (r4, r6, private_v4, ARRAY_SIZE (private_v4));
  ranges_push_consts (r4, r6, private_v6, ARRAY_SIZE (private_v6));
  ranges_merge_both (r4, r6);
}

/* The operator's opened destinations (checked by check_pool). */
static void
open_ranges (const sbx_egress_pool *pool, ranges *r4, ranges *r6)
{
  for (size_t i = 0; i < pool->nopen; i++)
    ranges_push_all_forms (r4, r6, &pool->open[i]);
  ranges_merge_both (r4, r6);
}

/* ---- Names ---- */

char *
sbx_egress_chain_name (const char *sandbox_id)
{
  return xasprintf (CHAIN_PREFIX "%s", sandbox_id);
}

static int
check_table (const char *table, sbx_error **err)
{
  if (!name_is_valid (table))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid nftables table name `%s`", table ? table : "(null)");
  return 0;
}

/* What the kernel takes for an interface name, short of the odd ones. */
static bool
ifname_valid (const char *s, size_t max)
{
  size_t n = s ? strlen (s) : 0;
  if (n == 0 || n > max || strcmp (s, ".") == 0 || strcmp (s, "..") == 0)
    return false;
  for (size_t i = 0; i < n; i++)
    {
      char c = s[i];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-'
            || c == '.'))
        return false;
    }
  return true;
}

static int
check_ids (const char *table, const char *sandbox_id, const char *ifname, bool need_ifname, sbx_error **err)
{
  if (check_table (table, err) < 0)
    return -1;
  if (!name_is_valid (sandbox_id))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid sandbox id `%s`",
                          sandbox_id ? sandbox_id : "(null)");
  if ((ifname || need_ifname) && !ifname_valid (ifname, IFNAMSIZ - 1))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid interface name `%s`", ifname ? ifname : "(null)");
  return 0;
}

/* OPTIONAL: family 0 stands for "none". */
static int
check_pool_cidr (const sbx_cidr *c, int family, bool optional, const char *what, sbx_error **err)
{
  if (optional && c->family == 0)
    return 0;
  if (c->family != family || !sbx_cidr_valid (c))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "egress: the %s is not an IPv%d CIDR", what,
                          family == AF_INET6 ? 6 : 4);
  return 0;
}

static int
check_pool (const sbx_egress_pool *pool, sbx_error **err)
{
  if (pool == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "egress: no sandbox pool");
  if (check_pool_cidr (&pool->v4, AF_INET, false, "IPv4 pool", err) < 0
      || check_pool_cidr (&pool->v6, AF_INET6, true, "IPv6 pool", err) < 0
      || check_pool_cidr (&pool->gateway4, AF_INET, true, "IPv4 gateway", err) < 0
      || check_pool_cidr (&pool->gateway6, AF_INET6, true, "IPv6 gateway", err) < 0)
    return -1;
  if (pool->ifprefix && !ifname_valid (pool->ifprefix, IFNAMSIZ - 2))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "egress: invalid interface prefix `%s`", pool->ifprefix);
  if (pool->nopen && pool->open == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "egress: %zu opened destinations but no array", pool->nopen);
  if (pool->nopen > SBX_EGRESS_ALLOW_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "egress: %zu opened destinations, at most %d", pool->nopen,
                          SBX_EGRESS_ALLOW_MAX);
  for (size_t i = 0; i < pool->nopen; i++)
    if (!sbx_cidr_valid (&pool->open[i]))
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                            "egress: opened destination %zu is not a CIDR (family, prefix, host bits)", i + 1);
  return 0;
}

/* Whether IFNAME may ask the gateway's resolver. Taking it away adds the
 * element and deletes it in the same transaction: deleting a missing
 * element is an error, and adding one that is there is not. */
static void
b_dns (batch *b, const char *ifname, bool allow)
{
  char key[IFNAMSIZ] = { 0 };
  memcpy (key, ifname, strnlen (ifname, IFNAMSIZ - 1));
  _cleanup_nftnl_ (nftnl_set) struct nftnl_set *s = set_new (b, SET_DNS);
  set_add_key (s, key, sizeof key, false, false);
  nftnl_set_elems_nlmsg_build_payload (batch_msg (b, NFT_MSG_NEWSETELEM, NLM_F_CREATE), s);
  batch_next (b, "add %s to set " SET_DNS, key);
  if (allow)
    return;
  nftnl_set_elems_nlmsg_build_payload (batch_msg (b, NFT_MSG_DELSETELEM, 0), s);
  batch_next (b, "delete %s from set " SET_DNS, key);
}

/* The destination is private and the operator did not open it. */
static void
m_private_not_open (struct nftnl_rule *r, int family)
{
  bool v6 = family == AF_INET6;
  m_addr_in_set (r, family, true, v6 ? SET_PRIVATE6 : SET_PRIVATE4);
  e_payload (r, NFT_PAYLOAD_NETWORK_HEADER, v6 ? 24 : 16, v6 ? 16 : 4);
  e_lookup_not (r, v6 ? SET_OPEN6 : SET_OPEN4);
}

/* ---- The table's shared chains ---- */

/* A refused connection fails at once: a reset for tcp, an ICMP
 * "administratively prohibited" for the rest. */
static void
b_refuse_chain (batch *b)
{
  b_chain (b, CHAIN_REFUSE, NULL, 0, 0);
  b_rule_del (b, CHAIN_REFUSE, NULL);
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *tcp = rule_new (b, CHAIN_REFUSE);
  m_u8 (tcp, NFT_META_L4PROTO, IPPROTO_TCP);
  e_reject (tcp, NFT_REJECT_TCP_RST, 0);
  b_rule_add (b, tcp, "tcp reset");
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *other = rule_new (b, CHAIN_REFUSE);
  e_reject (other, NFT_REJECT_ICMPX_UNREACH, NFT_REJECT_ICMPX_ADMIN_PROHIBITED);
  b_rule_add (b, other, "icmpx admin-prohibited");
}

/* Traffic to a sandbox: replies only; nothing unsolicited is forwarded in,
 * and what is refused fails at once (another sandbox's attempt too). */
static void
b_inbound_chain (batch *b, const char *pfx)
{
  b_chain (b, CHAIN_INBOUND, "filter", NF_INET_FORWARD, PRIO_FILTER);
  b_rule_del (b, CHAIN_INBOUND, NULL);
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *replies = rule_new (b, CHAIN_INBOUND);
  m_ifname (replies, NFT_META_OIFNAME, pfx, true, NFT_CMP_EQ);
  m_ct_established (replies);
  e_verdict (replies, NF_ACCEPT, NULL);
  b_rule_add (b, replies, "replies to sandboxes");
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *rest = rule_new (b, CHAIN_INBOUND);
  m_ifname (rest, NFT_META_OIFNAME, pfx, true, NFT_CMP_EQ);
  e_verdict (rest, NFT_GOTO, CHAIN_REFUSE);
  b_rule_add (b, rest, "nothing else into sandboxes (refused at once)");
}

/* `fib daddr . iif type local`: the destination is an address of the
 * interface the packet came in by. On a sandbox's interface that is its own
 * gateway and nothing else: another sandbox's gateway is local to the host
 * too, but on that sandbox's interface. */
static void
m_local_on_iif (struct nftnl_rule *r)
{
  uint32_t local = RTN_LOCAL;
  struct nftnl_expr *e = expr_add (r, "fib");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_FIB_DREG, NFT_REG_1);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_FIB_RESULT, NFT_FIB_RESULT_ADDRTYPE);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_FIB_FLAGS, NFTA_FIB_F_DADDR | NFTA_FIB_F_IIF);
  e_cmp (r, NFT_CMP_EQ, &local, sizeof local);
}

static void
b_dns_rules (batch *b, const sbx_cidr *to)
{
  static const uint8_t protos[] = { IPPROTO_UDP, IPPROTO_TCP };
  uint16_t port = htons (53);
  for (size_t i = 0; i < ARRAY_SIZE (protos); i++)
    {
      _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *r = rule_new (b, CHAIN_INPUT);
      e_meta (r, NFT_META_IIFNAME);
      e_lookup (r, SET_DNS);
      m_addr_in_cidr (r, true, to);
      m_local_on_iif (r);
      m_u8 (r, NFT_META_L4PROTO, protos[i]);
      m_th (r, 2, &port, sizeof port);
      e_verdict (r, NF_ACCEPT, NULL);
      b_rule_add (b, r, "DNS to the sandbox's own gateway");
    }
}

/* An echo request to the sandbox's own gateway, from an interface in
 * dns-ifnames: ping works as it does on any network (without CAP_NET_RAW,
 * through an ICMP datagram socket). */
static void
b_ping_rule (batch *b, int family)
{
  bool v6 = family == AF_INET6;
  uint8_t echo = v6 ? 128 : 8;
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *r = rule_new (b, CHAIN_INPUT);
  e_meta (r, NFT_META_IIFNAME);
  e_lookup (r, SET_DNS);
  m_u8 (r, NFT_META_NFPROTO, v6 ? NFPROTO_IPV6 : NFPROTO_IPV4);
  m_local_on_iif (r);
  m_u8 (r, NFT_META_L4PROTO, v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP);
  m_th (r, 0, &echo, 1);
  e_verdict (r, NF_ACCEPT, NULL);
  b_rule_add (b, r, "ping to the sandbox's own gateway");
}

/* From a sandbox to the host itself: replies, neighbour discovery, DNS and
 * ping to its own gateway for the interfaces in dns-ifnames; the rest
 * refused. */
static void
b_input_chain (batch *b, const sbx_egress_pool *pool, const char *pfx)
{
  b_chain (b, CHAIN_INPUT, "filter", NF_INET_LOCAL_IN, PRIO_FILTER);
  b_rule_del (b, CHAIN_INPUT, NULL);
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *replies = rule_new (b, CHAIN_INPUT);
  m_ifname (replies, NFT_META_IIFNAME, pfx, true, NFT_CMP_EQ);
  m_ct_established (replies);
  e_verdict (replies, NF_ACCEPT, NULL);
  b_rule_add (b, replies, "replies from sandboxes");
  static const uint8_t nd[] = { 135, 136 }; /* neighbour solicitation, advertisement */
  for (size_t i = 0; i < ARRAY_SIZE (nd); i++)
    {
      _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *r = rule_new (b, CHAIN_INPUT);
      m_ifname (r, NFT_META_IIFNAME, pfx, true, NFT_CMP_EQ);
      m_u8 (r, NFT_META_L4PROTO, IPPROTO_ICMPV6);
      m_th (r, 0, &nd[i], 1);
      e_verdict (r, NF_ACCEPT, NULL);
      b_rule_add (b, r, "IPv6 neighbour discovery");
    }
  if (pool->dns)
    {
      b_dns_rules (b, pool->gateway4.family ? &pool->gateway4 : &pool->v4);
      if (pool->v6.family)
        b_dns_rules (b, pool->gateway6.family ? &pool->gateway6 : &pool->v6);
    }
  b_ping_rule (b, AF_INET);
  if (pool->v6.family)
    b_ping_rule (b, AF_INET6);
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *rest = rule_new (b, CHAIN_INPUT);
  m_ifname (rest, NFT_META_IIFNAME, pfx, true, NFT_CMP_EQ);
  e_verdict (rest, NFT_GOTO, CHAIN_REFUSE);
  b_rule_add (b, rest, "nothing else from sandboxes to the host");
}

/* What sandboxes do with private destinations the operator did not open:
 * refused, or under observe nothing here (each sandbox's chain counts them
 * on return). Every sandbox chain jumps here, so init switches them all. */
static void
b_private_chain (batch *b, const sbx_egress_pool *pool)
{
  static const int families[] = { AF_INET, AF_INET6 };
  b_chain (b, CHAIN_PRIVATE, NULL, 0, 0);
  b_rule_del (b, CHAIN_PRIVATE, NULL);
  for (size_t i = 0; !pool->observe && i < ARRAY_SIZE (families); i++)
    {
      _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *r = rule_new (b, CHAIN_PRIVATE);
      m_private_not_open (r, families[i]);
      e_verdict (r, NFT_GOTO, CHAIN_REFUSE);
      b_rule_add (b, r, "private, not opened");
    }
}

static void
b_postrouting_chain (batch *b, const sbx_egress_pool *pool, const char *pfx)
{
  b_chain (b, CHAIN_POSTROUTING, "nat", NF_INET_POST_ROUTING, PRIO_SRCNAT);
  b_rule_del (b, CHAIN_POSTROUTING, NULL);
  const sbx_cidr *pools[] = { &pool->v4, &pool->v6 };
  for (size_t i = 0; i < ARRAY_SIZE (pools); i++)
    {
      if (pools[i]->family == 0)
        continue;
      _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *r = rule_new (b, CHAIN_POSTROUTING);
      m_addr_in_cidr (r, false, pools[i]);
      m_ifname (r, NFT_META_OIFNAME, pfx, true, NFT_CMP_NEQ);
      expr_add (r, "masq");
      b_rule_add (b, r, "masquerade the pool");
    }
}

/* The table remembers the pool it was made from: an empty chain named
 * after a digest of it (and of this layout's version), replaced by every
 * init that changes anything. */
#define CONFIG_MARKER_PREFIX "config-"
#define CONFIG_MARKER_LEN (sizeof CONFIG_MARKER_PREFIX + 16)

static void
config_marker (const sbx_egress_pool *pool, const char *pfx, char out[CONFIG_MARKER_LEN])
{
  sha256_ctx c;
  sha256_init (&c);
  static const char version[] = "sbx egress layout 3";
  sha256_update (&c, version, sizeof version);
  const sbx_cidr *cs[] = { &pool->v4, &pool->v6, &pool->gateway4, &pool->gateway6 };
  for (size_t i = 0; i < ARRAY_SIZE (cs); i++)
    {
      char s[SBX_CIDR_STRLEN] = "none";
      if (cs[i]->family)
        sbx_cidr_format (cs[i], s);
      sha256_update (&c, s, strlen (s) + 1);
    }
  for (size_t i = 0; i < pool->nopen; i++)
    {
      char s[SBX_CIDR_STRLEN];
      sbx_cidr_format (&pool->open[i], s);
      sha256_update (&c, s, strlen (s) + 1);
    }
  uint8_t flags[2] = { pool->dns, pool->observe };
  sha256_update (&c, flags, sizeof flags);
  sha256_update (&c, pfx, strlen (pfx) + 1);
  char hex[65];
  sha256_ctx_hex_final (&c, hex);
  snprintf (out, CONFIG_MARKER_LEN, "%s%.16s", CONFIG_MARKER_PREFIX, hex);
}

static void backoff (int attempt);

/* One try: 0 done, 1 the ruleset changed since it was read (another init
 * or apply: nothing applied, read again), -1 refused. */
static int
init_once (const char *table, const sbx_egress_pool *pool, const char *pfx, const char *marker, sbx_error **err)
{
  _cleanup_nft_ nft n = { 0 };
  _cleanup_tstate_ tstate t = { .table = table };
  if (nft_open (&n, err) < 0)
    return -1;
  int r = chains_read (&n, &t, err);
  if (r != 0)
    return r;
  /* Made already, from this very pool: nothing to do (the common case, on
   * the path of every `sbx create`). */
  if (strv_has (t.chains, marker))
    return 0;

  _cleanup_ranges_ ranges r4 = { 0 }, r6 = { 0 }, p4 = { 0 }, p6 = { 0 }, o4 = { 0 }, o6 = { 0 };
  refused_ranges (pool, &r4, &r6);
  private_ranges (&p4, &p6);
  open_ranges (pool, &o4, &o6);
  _cleanup_batch_ batch b = { 0 };
  /* Under the generation read: a concurrent init (another pool, another
   * sbx) that deleted a marker chain seen here makes this one start
   * again, not fail on the missing chain. */
  batch_start (&b, &n, table, (1 << 16) + (o4.n + o6.n) * 256, t.chains ? &t.genid : NULL);
  b_table (&b);
  for (size_t i = 0; t.chains && t.chains[i]; i++)
    if (strncmp (t.chains[i], CONFIG_MARKER_PREFIX, strlen (CONFIG_MARKER_PREFIX)) == 0)
      b_chain_del (&b, t.chains[i]);
  b_refuse_chain (&b);
  b_interval_set (&b, SET_REFUSED4, AF_INET, &r4);
  b_interval_set (&b, SET_REFUSED6, AF_INET6, &r6);
  b_interval_set (&b, SET_PRIVATE4, AF_INET, &p4);
  b_interval_set (&b, SET_PRIVATE6, AF_INET6, &p6);
  b_interval_set (&b, SET_OPEN4, AF_INET, &o4);
  b_interval_set (&b, SET_OPEN6, AF_INET6, &o6);
  b_private_chain (&b, pool);
  /* These hold per-sandbox state: created, never flushed here. */
  b_set (&b, SET_DNS, NFT_TYPE_IFNAME, IFNAMSIZ, 0);
  b_chain (&b, CHAIN_FORWARD, "filter", NF_INET_FORWARD, PRIO_FILTER);
  b_chain (&b, CHAIN_SOURCE, "filter", NF_INET_PRE_ROUTING, PRIO_RAW);
  b_inbound_chain (&b, pfx);
  b_input_chain (&b, pool, pfx);
  b_postrouting_chain (&b, pool, pfx);
  b_chain (&b, marker, NULL, 0, 0);
  batch_end (&b);
  return batch_send (&n, &b, err);
}

int
sbx_egress_init (const char *table, const sbx_egress_pool *pool, sbx_error **err)
{
  if (check_table (table, err) < 0 || check_pool (pool, err) < 0)
    return -1;
  const char *pfx = pool->ifprefix ? pool->ifprefix : "sbx";
  char marker[CONFIG_MARKER_LEN];
  config_marker (pool, pfx, marker);
  for (int attempt = 0; attempt < RETRIES; attempt++)
    {
      int r = init_once (table, pool, pfx, marker, err);
      if (r < 0)
        return sbx_error_wrap (err, "egress: set up table inet %s", table);
      if (r == 0)
        return 0;
      backoff (attempt);
    }
  return sbx_error_set (err, SBX_E_BUSY, 0, "egress: set up table inet %s: the ruleset kept changing", table);
}

/* ---- Per sandbox ---- */

/* After a batch lost the race against another change of the ruleset: wait
 * a random while, longer each time, so that concurrent writers (each commit
 * waits for the one before) spread out instead of colliding again. */
static void
backoff (int attempt)
{
  static unsigned seed;
  if (seed == 0)
    seed = (unsigned) getpid () ^ (unsigned) now_ms_monotonic ();
  long ms = 1 + rand_r (&seed) % (4L << (attempt < 5 ? attempt : 5));
  struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
  nanosleep (&ts, NULL);
}

typedef struct names {
  char *chain, *set4, *set6, *counter, *dset4, *dset6;
} names;

static void
names_init (names *nm, const char *sandbox_id)
{
  nm->chain = sbx_egress_chain_name (sandbox_id);
  nm->set4 = xasprintf ("%s-v4", nm->chain);
  nm->set6 = xasprintf ("%s-v6", nm->chain);
  nm->counter = xasprintf ("%s" COUNTER_SUFFIX, nm->chain);
  nm->dset4 = xasprintf ("%s" DSET4_SUFFIX, nm->chain);
  nm->dset6 = xasprintf ("%s" DSET6_SUFFIX, nm->chain);
}

static void
names_free (names *nm)
{
  free (nm->chain);
  free (nm->set4);
  free (nm->set6);
  free (nm->counter);
  free (nm->dset4);
  free (nm->dset6);
}
#define _cleanup_names_ __attribute__ ((cleanup (names_free)))

/* Domain rules: a connection this chain accepted for an address of the
 * domain sets (marked MARK) stays accepted once the address expires; a new
 * one needs the address in the set, and gets the mark. After the refused
 * and private ranges, so that neither reaches them. */
static void
b_domain_rules (batch *b, const names *nm, uint32_t mark)
{
  const char *sets[] = { nm->dset4, nm->dset6 };
  const int families[] = { AF_INET, AF_INET6 };
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *est = rule_new (b, nm->chain);
  m_ct_mark (est, mark);
  e_verdict (est, NF_ACCEPT, NULL);
  b_rule_add (b, est, "connections allowed by a domain rule");
  for (size_t i = 0; i < 2; i++)
    {
      _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *r = rule_new (b, nm->chain);
      m_addr_in_set (r, families[i], true, sets[i]);
      e_ct_mark_set (r, mark);
      e_verdict (r, NF_ACCEPT, NULL);
      b_rule_add (b, r, "addresses resolved for a domain rule");
    }
}

/* Elements per message: the element list is one attribute of at most 64 KiB,
 * and each may carry a name of up to 253 bytes. */
#define ELEMS_PER_MSG 128

/* Adds ELEMS to the domain sets; REFRESH first adds and deletes each, so
 * that one already there takes the new timeout (adding an element that
 * exists changes nothing, deleting one that does not is an error). */
static void
b_domain_elems (batch *b, const names *nm, const sbx_egress_elem *elems, size_t n, bool refresh)
{
  const char *sets[] = { nm->dset4, nm->dset6 };
  for (size_t f = 0; f < 2; f++)
    {
      int family = f ? AF_INET6 : AF_INET;
      size_t len = f ? 16 : 4;
      for (size_t first = 0; first < n; first += ELEMS_PER_MSG)
        {
          _cleanup_nftnl_ (nftnl_set) struct nftnl_set *plain = set_new (b, sets[f]);
          _cleanup_nftnl_ (nftnl_set) struct nftnl_set *timed = set_new (b, sets[f]);
          size_t count = 0;
          for (size_t i = first; i < n && i < first + ELEMS_PER_MSG; i++)
            if (elems[i].addr.family == family)
              {
                set_add_timed (plain, elems[i].addr.addr, len, 0, NULL);
                set_add_timed (timed, elems[i].addr.addr, len, elems[i].timeout_ms,
                               elems[i].name[0] ? elems[i].name : NULL);
                count++;
              }
          if (count == 0)
            continue;
          if (refresh)
            {
              nftnl_set_elems_nlmsg_build_payload (batch_msg (b, NFT_MSG_NEWSETELEM, NLM_F_CREATE), plain);
              batch_next (b, "add to set %s", sets[f]);
              nftnl_set_elems_nlmsg_build_payload (batch_msg (b, NFT_MSG_DELSETELEM, 0), plain);
              batch_next (b, "delete from set %s", sets[f]);
            }
          nftnl_set_elems_nlmsg_build_payload (batch_msg (b, NFT_MSG_NEWSETELEM, NLM_F_CREATE), timed);
          batch_next (b, "add to set %s with a timeout", sets[f]);
        }
    }
}

/* The sandbox's chain: the refused ranges first, whatever the state of the
 * connection; then the private ranges the operator did not open, as the
 * shared chain says (refused, or under observe counted here); then the
 * mode. Nothing here accepts established traffic on its own, so a
 * destination the new rules refuse is cut at once. */
static void
b_sandbox_rules (batch *b, const names *nm, sbx_egress_mode mode, uint32_t mark)
{
  const char *refused[] = { SET_REFUSED4, SET_REFUSED6 }, *allowed[] = { nm->set4, nm->set6 };
  const int families[] = { AF_INET, AF_INET6 };
  for (size_t i = 0; i < 2; i++)
    {
      _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *r = rule_new (b, nm->chain);
      m_addr_in_set (r, families[i], true, refused[i]);
      e_verdict (r, NFT_GOTO, CHAIN_REFUSE);
      b_rule_add (b, r, "always refused");
    }
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *priv = rule_new (b, nm->chain);
  e_verdict (priv, NFT_JUMP, CHAIN_PRIVATE);
  b_rule_add (b, priv, "private destinations");
  for (size_t i = 0; i < 2; i++)
    {
      _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *r = rule_new (b, nm->chain);
      m_private_not_open (r, families[i]);
      m_ct_state (r, NF_CT_STATE_BIT (IP_CT_NEW));
      e_counter_ref (r, nm->counter);
      b_rule_add (b, r, "observed private destinations");
    }
  if (mark)
    b_domain_rules (b, nm, mark);
  for (size_t i = 0; mode == SBX_EGRESS_ALLOW && i < 2; i++)
    {
      _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *r = rule_new (b, nm->chain);
      m_addr_in_set (r, families[i], true, allowed[i]);
      e_verdict (r, NF_ACCEPT, NULL);
      b_rule_add (b, r, "allow-list");
    }
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *last = rule_new (b, nm->chain);
  if (mode == SBX_EGRESS_OPEN)
    e_verdict (last, NF_ACCEPT, NULL);
  else
    e_verdict (last, NFT_GOTO, CHAIN_REFUSE);
  b_rule_add (b, last, mode == SBX_EGRESS_OPEN ? "open" : "nothing else");
}

/* A rule of chain source for IFNAME, its comment naming the OWNER's chain,
 * so that a remove without the interface's name finds it too. */
static struct nftnl_rule *
source_rule_new (const batch *b, const char *ifname, const char *owner)
{
  struct nftnl_rule *r = rule_new (b, CHAIN_SOURCE);
  struct nftnl_udata_buf *u = nftnl_udata_buf_alloc (NFT_USERDATA_MAXLEN);
  if (u == NULL || !nftnl_udata_put_strz (u, NFTNL_UDATA_RULE_COMMENT, owner))
    abort ();
  nftnl_rule_set_data (r, NFTNL_RULE_USERDATA, nftnl_udata_buf_data (u), nftnl_udata_buf_len (u));
  nftnl_udata_buf_free (u);
  m_ifname (r, NFT_META_IIFNAME, ifname, false, NFT_CMP_EQ);
  return r;
}

/* The sandbox's interface takes only packets from the sandbox's own
 * addresses, in any protocol: no forged source leaves the host (a
 * reflection attack) or reaches another sandbox (injected traffic). IPv6
 * also needs link-local sources for neighbour discovery and the
 * unspecified address for duplicate address detection (ICMPv6 only); the
 * kernel forwards neither. Dropped before conntrack: a forged packet leaves
 * no entry behind. */
static void
b_source_rules (batch *b, const char *ifname, const char *owner, const sbx_egress_source *src)
{
  static const uint8_t unspec[16], ll[16] = { 0xfe, 0x80 }, ll_mask[16] = { 0xff, 0xc0 };
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *v4 = source_rule_new (b, ifname, owner);
  m_addr_load (v4, AF_INET, false);
  e_cmp (v4, NFT_CMP_NEQ, src->v4.addr, 4);
  e_verdict (v4, NF_DROP, NULL);
  b_rule_add (b, v4, "IPv4 from another source");
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *v6 = source_rule_new (b, ifname, owner);
  if (src->v6.family != AF_INET6)
    {
      m_u8 (v6, NFT_META_NFPROTO, NFPROTO_IPV6);
      e_verdict (v6, NF_DROP, NULL);
      b_rule_add (b, v6, "IPv6: the sandbox has no IPv6 address");
      return;
    }
  m_addr_load (v6, AF_INET6, false);
  e_cmp (v6, NFT_CMP_NEQ, src->v6.addr, 16);
  e_cmp (v6, NFT_CMP_NEQ, unspec, 16);
  e_bitwise (v6, ll_mask, 16);
  e_cmp (v6, NFT_CMP_NEQ, ll, 16);
  e_verdict (v6, NF_DROP, NULL);
  b_rule_add (b, v6, "IPv6 from another source");
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *dad = source_rule_new (b, ifname, owner);
  m_addr_load (dad, AF_INET6, false);
  e_cmp (dad, NFT_CMP_EQ, unspec, 16);
  e_meta (dad, NFT_META_L4PROTO);
  uint8_t icmp6 = IPPROTO_ICMPV6;
  e_cmp (dad, NFT_CMP_NEQ, &icmp6, 1);
  e_verdict (dad, NF_DROP, NULL);
  b_rule_add (b, dad, "IPv6 from the unspecified address but for ICMPv6");
}

/* Deletes the forward rules found for this sandbox or interface, the
 * interface's source rules, and the DNS permission of interfaces other than
 * KEEP. */
static void
b_forward_cleanup (batch *b, const tstate *t, const char *keep)
{
  for (size_t i = 0; i < t->nsrc; i++)
    b_rule_del (b, CHAIN_SOURCE, &t->src_handles[i]);
  for (size_t i = 0; i < t->nrules; i++)
    {
      b_rule_del (b, CHAIN_FORWARD, &t->handles[i]);
      const char *ifn = t->rule_ifnames[i];
      if (*ifn && (keep == NULL || strcmp (ifn, keep) != 0) && strv_has (t->sets, SET_DNS))
        b_dns (b, ifn, false);
    }
}

typedef struct dom_args {
  bool on;
  const sbx_egress_elem *elems;
  size_t n;
} dom_args;

/* A fresh connection mark for a sandbox's domain rules: never 0 (a
 * connection nothing marked). */
static uint32_t
fresh_mark (void)
{
  uint32_t m = 0;
  while (m == 0)
    if (getrandom (&m, sizeof m, 0) != (ssize_t) sizeof m)
      m = (uint32_t) now_ms_monotonic () ^ (uint32_t) getpid ();
  return m;
}

static int
apply_once (const char *table, const names *nm, const char *ifname, const sbx_egress_source *src, sbx_egress_mode mode,
            const ranges *a4, const ranges *a6, const dom_args *dom, sbx_error **err)
{
  _cleanup_nft_ nft n = { 0 };
  _cleanup_tstate_ tstate t = { .table = table, .target = nm->chain, .ifname = ifname };
  if (nft_open (&n, err) < 0)
    return -1;
  int r = tstate_read (&n, &t, err);
  if (r != 0)
    return r;
  if (!strv_has (t.chains, CHAIN_FORWARD))
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "nftables table inet %s is not set up (no forward chain)", table);
  if (!strv_has (t.chains, CHAIN_PRIVATE) || !strv_has (t.chains, CHAIN_SOURCE))
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0,
                          "nftables table inet %s was set up by an older sbx (no " CHAIN_PRIVATE " or " CHAIN_SOURCE
                          " chain)",
                          table);

  _cleanup_batch_ batch b = { 0 };
  batch_start (&b, &n, table, (1 << 16) + (a4->n + a6->n + 1) * 256 + dom->n * 512, &t.genid);
  b_forward_cleanup (&b, &t, ifname);
  b_chain (&b, nm->chain, NULL, 0, 0);
  b_rule_del (&b, nm->chain, NULL);
  b_interval_set (&b, nm->set4, AF_INET, a4);
  b_interval_set (&b, nm->set6, AF_INET6, a6);
  b_counter (&b, nm->counter);
  if (dom->on)
    {
      b_set (&b, nm->dset4, NFT_TYPE_IPADDR, 4, NFT_SET_TIMEOUT);
      b_set (&b, nm->dset6, NFT_TYPE_IP6ADDR, 16, NFT_SET_TIMEOUT);
      b_set_flush (&b, nm->dset4);
      b_set_flush (&b, nm->dset6);
      b_domain_elems (&b, nm, dom->elems, dom->n, false);
    }
  b_sandbox_rules (&b, nm, mode, dom->on ? fresh_mark () : 0);
  /* After the chain's old rules, which may refer to them. */
  if (!dom->on && strv_has (t.sets, nm->dset4))
    b_set_del (&b, nm->dset4);
  if (!dom->on && strv_has (t.sets, nm->dset6))
    b_set_del (&b, nm->dset6);
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *jump = rule_new (&b, CHAIN_FORWARD);
  m_ifname (jump, NFT_META_IIFNAME, ifname, false, NFT_CMP_EQ);
  e_verdict (jump, NFT_JUMP, nm->chain);
  b_rule_add (&b, jump, ifname);
  b_source_rules (&b, ifname, nm->chain, src);
  b_dns (&b, ifname, mode != SBX_EGRESS_BLOCK);
  batch_end (&b);
  return batch_send (&n, &b, err);
}

/* A host address: a /32 or a /128. */
static bool
cidr_is_host (const sbx_cidr *c, int family)
{
  return c->family == family && sbx_cidr_valid (c) && c->prefix == sbx_cidr_width (c);
}

int
sbx_egress_apply (const char *table, const char *sandbox_id, const char *ifname, const sbx_egress_source *src,
                  sbx_egress_mode mode, const sbx_cidr *allow, size_t nallow, sbx_error **err)
{
  return sbx_egress_apply_domains (table, sandbox_id, ifname, src, mode, allow, nallow, false, NULL, 0, err);
}

static int
check_elems (const sbx_egress_elem *elems, size_t n, sbx_error **err)
{
  if (n && elems == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "egress: %zu domain addresses but no array", n);
  if (n > SBX_EGRESS_DOMAIN_ADDRS_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "egress: %zu domain addresses, at most %d", n,
                          SBX_EGRESS_DOMAIN_ADDRS_MAX);
  for (size_t i = 0; i < n; i++)
    if (!cidr_is_host (&elems[i].addr, AF_INET) && !cidr_is_host (&elems[i].addr, AF_INET6))
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "egress: domain address %zu is not a /32 or a /128", i + 1);
  return 0;
}

int
sbx_egress_apply_domains (const char *table, const char *sandbox_id, const char *ifname, const sbx_egress_source *src,
                          sbx_egress_mode mode, const sbx_cidr *allow, size_t nallow, bool domains,
                          const sbx_egress_elem *elems, size_t nelems, sbx_error **err)
{
  dom_args dom = { .on = domains, .elems = elems, .n = domains ? nelems : 0 };
  if (check_elems (dom.elems, dom.n, err) < 0)
    return -1;
  if (check_ids (table, sandbox_id, ifname, true, err) < 0)
    return -1;
  if (src == NULL || !cidr_is_host (&src->v4, AF_INET) || (src->v6.family && !cidr_is_host (&src->v6, AF_INET6)))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "egress: the sandbox's source addresses are not an IPv4 /32 and an optional IPv6 /128");
  if (mode != SBX_EGRESS_BLOCK && mode != SBX_EGRESS_ALLOW && mode != SBX_EGRESS_OPEN)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "egress: unknown mode %d", (int) mode);
  if (mode != SBX_EGRESS_ALLOW)
    nallow = 0;
  if (nallow > SBX_EGRESS_ALLOW_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "egress: %zu allowed destinations, at most %d", nallow,
                          SBX_EGRESS_ALLOW_MAX);
  _cleanup_ranges_ ranges a4 = { 0 }, a6 = { 0 };
  for (size_t i = 0; i < nallow; i++)
    {
      if (!sbx_cidr_valid (&allow[i]))
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                              "egress: allowed destination %zu is not a CIDR (family, prefix, host bits)", i + 1);
      ranges_push (allow[i].family == AF_INET6 ? &a6 : &a4, &allow[i]);
    }
  a4.n = ranges_merge (a4.v, a4.n, 4);
  a6.n = ranges_merge (a6.v, a6.n, 16);

  _cleanup_names_ names nm = { 0 };
  names_init (&nm, sandbox_id);
  for (int attempt = 0; attempt < RETRIES; attempt++)
    {
      int r = apply_once (table, &nm, ifname, src, mode, &a4, &a6, &dom, err);
      if (r < 0)
        return sbx_error_wrap (err, "egress rules of sandbox %s", sandbox_id);
      if (r == 0)
        return 0;
      backoff (attempt);
    }
  return sbx_error_set (err, SBX_E_BUSY, 0, "egress rules of sandbox %s: the ruleset kept changing", sandbox_id);
}

static int
remove_once (const char *table, const names *nm, const char *ifname, sbx_error **err)
{
  _cleanup_nft_ nft n = { 0 };
  _cleanup_tstate_ tstate t = { .table = table, .target = nm->chain, .ifname = ifname };
  if (nft_open (&n, err) < 0)
    return -1;
  int r = tstate_read (&n, &t, err);
  if (r != 0)
    return r;

  _cleanup_batch_ batch b = { 0 };
  batch_start (&b, &n, table, 1 << 16, &t.genid);
  b_forward_cleanup (&b, &t, NULL);
  if (strv_has (t.chains, nm->chain))
    {
      b_rule_del (&b, nm->chain, NULL);
      b_chain_del (&b, nm->chain);
    }
  if (strv_has (t.sets, nm->set4))
    b_set_del (&b, nm->set4);
  if (strv_has (t.sets, nm->set6))
    b_set_del (&b, nm->set6);
  if (strv_has (t.sets, nm->dset4))
    b_set_del (&b, nm->dset4);
  if (strv_has (t.sets, nm->dset6))
    b_set_del (&b, nm->dset6);
  /* After the chain: its rules refer to the counter. */
  if (strv_has (t.counters, nm->counter))
    b_counter_del (&b, nm->counter);
  bool done = false;
  for (size_t i = 0; ifname && i < t.nrules; i++)
    done = done || strcmp (t.rule_ifnames[i], ifname) == 0;
  if (ifname && !done && strv_has (t.sets, SET_DNS))
    b_dns (&b, ifname, false);
  if (b.nwhat == 0)
    return 0;
  batch_end (&b);
  return batch_send (&n, &b, err);
}

int
sbx_egress_remove (const char *table, const char *sandbox_id, const char *ifname, sbx_error **err)
{
  if (check_ids (table, sandbox_id, ifname, false, err) < 0)
    return -1;
  _cleanup_names_ names nm = { 0 };
  names_init (&nm, sandbox_id);
  for (int attempt = 0; attempt < RETRIES; attempt++)
    {
      int r = remove_once (table, &nm, ifname, err);
      if (r < 0)
        return sbx_error_wrap (err, "remove the egress rules of sandbox %s", sandbox_id);
      if (r == 0)
        return 0;
      backoff (attempt);
    }
  return sbx_error_set (err, SBX_E_BUSY, 0, "remove the egress rules of sandbox %s: the ruleset kept changing",
                        sandbox_id);
}

/* ---- Domain sets ---- */

int
sbx_egress_domain_add (const char *table, const char *sandbox_id, const sbx_egress_elem *elems, size_t n,
                       sbx_error **err)
{
  if (check_ids (table, sandbox_id, NULL, false, err) < 0 || check_elems (elems, n, err) < 0)
    return -1;
  if (n == 0)
    return 0;
  _cleanup_names_ names nm = { 0 };
  names_init (&nm, sandbox_id);
  _cleanup_nft_ nft nl = { 0 };
  if (nft_open (&nl, err) < 0)
    return sbx_error_wrap (err, "allow the addresses of a domain rule");
  _cleanup_batch_ batch b = { 0 };
  /* No generation: adding to the sandbox's own sets commutes with any
   * other change; if its sets are gone, the kernel says so (ENOENT). */
  batch_start (&b, &nl, table, (1 << 12) + n * 1024, NULL);
  b_domain_elems (&b, &nm, elems, n, true);
  batch_end (&b);
  int r = batch_send (&nl, &b, err);
  if (r < 0)
    {
      if ((*err)->code == SBX_E_INTERNAL && (*err)->errnum == ENOENT)
        (*err)->code = SBX_E_NOT_FOUND;
      return sbx_error_wrap (err, "allow the addresses of a domain rule for sandbox %s", sandbox_id);
    }
  if (r > 0)
    return sbx_error_set (err, SBX_E_BUSY, 0, "allow the addresses of a domain rule: interrupted");
  return 0;
}

typedef struct elems_read {
  int family;
  sbx_egress_elem *v;
  size_t n;
} elems_read;

static int
comment_cb (const struct nftnl_udata *attr, void *data)
{
  if (nftnl_udata_type (attr) == NFTNL_UDATA_SET_ELEM_COMMENT)
    {
      char *name = data;
      size_t len = nftnl_udata_len (attr);
      const char *v = nftnl_udata_get (attr);
      if (len > 253)
        len = 253;
      memcpy (name, v, len);
      name[len] = '\0';
      name[strnlen (name, len)] = '\0';
    }
  return 0;
}

static int
elems_cb (const struct nlmsghdr *nlh, void *data)
{
  elems_read *er = data;
  _cleanup_nftnl_ (nftnl_set) struct nftnl_set *s = nftnl_set_alloc ();
  if (s == NULL)
    abort ();
  if (nftnl_set_elems_nlmsg_parse (nlh, s) < 0)
    {
      errno = EPROTO;
      return MNL_CB_ERROR;
    }
  struct nftnl_set_elems_iter *it = nftnl_set_elems_iter_create (s);
  if (it == NULL)
    abort ();
  for (struct nftnl_set_elem *e = nftnl_set_elems_iter_next (it); e; e = nftnl_set_elems_iter_next (it))
    {
      uint32_t klen = 0;
      const void *key = nftnl_set_elem_get (e, NFTNL_SET_ELEM_KEY, &klen);
      size_t want = er->family == AF_INET6 ? 16 : 4;
      if (key == NULL || klen != want || er->n >= SBX_EGRESS_DOMAIN_ADDRS_MAX)
        continue;
      er->v = xrealloc (er->v, (er->n + 1) * sizeof *er->v);
      sbx_egress_elem *x = &er->v[er->n++];
      memset (x, 0, sizeof *x);
      x->addr.family = er->family;
      x->addr.prefix = (uint8_t) (want * 8);
      memcpy (x->addr.addr, key, want);
      if (nftnl_set_elem_is_set (e, NFTNL_SET_ELEM_EXPIRATION))
        x->timeout_ms = nftnl_set_elem_get_u64 (e, NFTNL_SET_ELEM_EXPIRATION);
      uint32_t ulen = 0;
      const void *u = nftnl_set_elem_get (e, NFTNL_SET_ELEM_USERDATA, &ulen);
      if (u && ulen)
        nftnl_udata_parse (u, ulen, comment_cb, x->name);
    }
  nftnl_set_elems_iter_destroy (it);
  return MNL_CB_OK;
}

int
sbx_egress_domain_list (const char *table, const char *sandbox_id, sbx_egress_elem **ret, size_t *ret_n,
                        sbx_error **err)
{
  if (check_ids (table, sandbox_id, NULL, false, err) < 0)
    return -1;
  _cleanup_names_ names nm = { 0 };
  names_init (&nm, sandbox_id);
  _cleanup_nft_ nft n = { 0 };
  if (nft_open (&n, err) < 0)
    return sbx_error_wrap (err, "read the domain sets of sandbox %s", sandbox_id);
  elems_read er = { 0 };
  const char *sets[] = { nm.dset4, nm.dset6 };
  for (size_t i = 0; i < 2; i++)
    {
      _cleanup_nftnl_ (nftnl_set) struct nftnl_set *s = nftnl_set_alloc ();
      if (s == NULL)
        abort ();
      nftnl_set_set_str (s, NFTNL_SET_TABLE, table);
      nftnl_set_set_str (s, NFTNL_SET_NAME, sets[i]);
      er.family = i ? AF_INET6 : AF_INET;
      char buf[8192];
      struct nlmsghdr *nlh = req_hdr (&n, buf, NFT_MSG_GETSETELEM, NFPROTO_INET, NLM_F_DUMP | NLM_F_ACK);
      nftnl_set_elems_nlmsg_build_payload (nlh, s);
      /* No table or no set (ENOENT): no addresses. */
      int r = nft_talk (&n, nlh, elems_cb, &er, "read a set", err);
      if (r != 0)
        {
          free (er.v);
          if (r > 0)
            return sbx_error_set (err, SBX_E_BUSY, 0, "read the domain sets of sandbox %s: interrupted", sandbox_id);
          return sbx_error_wrap (err, "read the domain sets of sandbox %s", sandbox_id);
        }
    }
  *ret = er.v;
  *ret_n = er.n;
  return 0;
}

static bool
ranges_hold (const ranges *rs, const uint8_t *a, size_t len)
{
  for (size_t i = 0; i < rs->n; i++)
    if (memcmp (a, rs->v[i].lo, len) >= 0 && memcmp (a, rs->v[i].hi, len) <= 0)
      return true;
  return false;
}

const char *
sbx_egress_addr_refused (const sbx_egress_pool *pool, const sbx_cidr *addr)
{
  _cleanup_ranges_ ranges r4 = { 0 }, r6 = { 0 }, p4 = { 0 }, p6 = { 0 }, o4 = { 0 }, o6 = { 0 };
  refused_ranges (pool, &r4, &r6);
  private_ranges (&p4, &p6);
  open_ranges (pool, &o4, &o6);
  bool v6 = addr->family == AF_INET6;
  size_t len = v6 ? 16 : 4;
  if (ranges_hold (v6 ? &r6 : &r4, addr->addr, len))
    return "always refused (link-local, cloud metadata, loopback, this network or the sandboxes' pools)";
  if (ranges_hold (v6 ? &p6 : &p4, addr->addr, len) && !ranges_hold (v6 ? &o6 : &o4, addr->addr, len))
    return "a private range the operator did not open";
  return NULL;
}

static int
strv_cmp (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* The sandbox id in NAME (a chain, or a set or counter with SUFFIX), added
 * to IDS. */
static void
collect_id (char ***ids, const char *name, const char *suffix)
{
  size_t pl = strlen (CHAIN_PREFIX), n = strlen (name), sl = suffix ? strlen (suffix) : 0;
  if (n <= pl + sl || strncmp (name, CHAIN_PREFIX, pl) != 0 || (sl && strcmp (name + n - sl, suffix) != 0))
    return;
  _cleanup_free_ char *id = xstrndup (name + pl, n - pl - sl);
  if (name_is_valid (id) && !strv_has (*ids, id))
    strv_push (ids, id);
}

/* Every sandbox id that has a chain, set or counter in the table read. */
static char **
table_ids (const tstate *t)
{
  char **ids = xmalloc0 (sizeof (char *));
  for (size_t i = 0; t->chains && t->chains[i]; i++)
    collect_id (&ids, t->chains[i], NULL);
  for (size_t i = 0; t->sets && t->sets[i]; i++)
    {
      collect_id (&ids, t->sets[i], "-v4");
      collect_id (&ids, t->sets[i], "-v6");
      collect_id (&ids, t->sets[i], DSET4_SUFFIX);
      collect_id (&ids, t->sets[i], DSET6_SUFFIX);
    }
  for (size_t i = 0; t->counters && t->counters[i]; i++)
    collect_id (&ids, t->counters[i], COUNTER_SUFFIX);
  return ids;
}

/* The table when no sandbox has anything in it: 1 dropped, 0 kept (a
 * sandbox's chain, set or counter is there, or no table), -1 error. Under
 * the generation read with it, so nothing made meanwhile is lost. */
static int
drop_once (const char *table, sbx_error **err)
{
  _cleanup_nft_ nft n = { 0 };
  _cleanup_tstate_ tstate t = { .table = table };
  if (nft_open (&n, err) < 0)
    return -1;
  int r = tstate_read (&n, &t, err);
  if (r != 0)
    return r > 0 ? 2 : -1;
  if (t.chains == NULL || t.chains[0] == NULL)
    return 0;
  _cleanup_strv_ char **ids = table_ids (&t);
  if (ids[0])
    return 0;
  _cleanup_nftnl_ (nftnl_table) struct nftnl_table *tb = nftnl_table_alloc ();
  if (tb == NULL)
    abort ();
  nftnl_table_set_str (tb, NFTNL_TABLE_NAME, table);
  _cleanup_batch_ batch b = { 0 };
  batch_start (&b, &n, table, 1 << 12, &t.genid);
  nftnl_table_nlmsg_build_payload (batch_msg (&b, NFT_MSG_DELTABLE, 0), tb);
  batch_next (&b, "delete the table");
  batch_end (&b);
  r = batch_send (&n, &b, err);
  return r < 0 ? -1 : r > 0 ? 2 : 1;
}

int
sbx_egress_drop (const char *table, sbx_error **err)
{
  if (check_table (table, err) < 0)
    return -1;
  for (int attempt = 0; attempt < RETRIES; attempt++)
    {
      int r = drop_once (table, err);
      if (r != 2)
        return r < 0 ? sbx_error_wrap (err, "drop table inet %s", table) : r;
      backoff (attempt);
    }
  return 0; /* kept changing: somebody uses it */
}

int
sbx_egress_list (const char *table, char ***ret_ids, sbx_error **err)
{
  if (check_table (table, err) < 0)
    return -1;
  for (int attempt = 0; attempt < RETRIES; attempt++)
    {
      _cleanup_nft_ nft n = { 0 };
      _cleanup_tstate_ tstate t = { .table = table };
      if (nft_open (&n, err) < 0)
        return sbx_error_wrap (err, "list egress rules in table inet %s", table);
      int r = tstate_read (&n, &t, err);
      if (r < 0)
        return sbx_error_wrap (err, "list egress rules in table inet %s", table);
      if (r > 0)
        {
          backoff (attempt);
          continue;
        }
      _cleanup_strv_ char **ids = table_ids (&t);
      qsort (ids, strv_len (ids), sizeof *ids, strv_cmp);
      *ret_ids = steal_pointer (&ids);
      return 0;
    }
  return sbx_error_set (err, SBX_E_BUSY, 0, "list egress rules in table inet %s: the ruleset kept changing", table);
}

static int
counter_cb (const struct nlmsghdr *nlh, void *data)
{
  _cleanup_nftnl_ (nftnl_obj) struct nftnl_obj *o = nftnl_obj_alloc ();
  if (o == NULL)
    abort ();
  if (nftnl_obj_nlmsg_parse (nlh, o) < 0)
    {
      errno = EPROTO;
      return MNL_CB_ERROR;
    }
  if (nftnl_obj_is_set (o, NFTNL_OBJ_CTR_PKTS))
    *(uint64_t *) data = nftnl_obj_get_u64 (o, NFTNL_OBJ_CTR_PKTS);
  return MNL_CB_OK;
}

int
sbx_egress_private_count (const char *table, const char *sandbox_id, uint64_t *ret_packets, sbx_error **err)
{
  if (check_ids (table, sandbox_id, NULL, false, err) < 0)
    return -1;
  _cleanup_names_ names nm = { 0 };
  names_init (&nm, sandbox_id);
  _cleanup_nft_ nft n = { 0 };
  if (nft_open (&n, err) < 0)
    return sbx_error_wrap (err, "read counter %s in table inet %s", nm.counter, table);
  _cleanup_nftnl_ (nftnl_obj) struct nftnl_obj *o = nftnl_obj_alloc ();
  if (o == NULL)
    abort ();
  nftnl_obj_set_str (o, NFTNL_OBJ_TABLE, table);
  nftnl_obj_set_str (o, NFTNL_OBJ_NAME, nm.counter);
  nftnl_obj_set_u32 (o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
  char buf[8192];
  struct nlmsghdr *nlh = req_hdr (&n, buf, NFT_MSG_GETOBJ, NFPROTO_INET, NLM_F_ACK);
  nftnl_obj_nlmsg_build_payload (nlh, o);
  /* No table or no counter (ENOENT) reads as 0. */
  uint64_t packets = 0;
  int r = nft_talk (&n, nlh, counter_cb, &packets, "read a counter", err);
  if (r < 0)
    return sbx_error_wrap (err, "read counter %s in table inet %s", nm.counter, table);
  if (r > 0)
    return sbx_error_set (err, SBX_E_BUSY, 0, "read counter %s in table inet %s: interrupted", nm.counter, table);
  *ret_packets = packets;
  return 0;
}
