/* Egress rules: sbx's nftables table, made and changed with libnftnl over a
 * libmnl socket, one nf_tables transaction per call, and the strict CIDR
 * parser that turns --allow arguments into the intervals of the sets. The
 * shape of the ruleset is described in egress.h.
 *
 * A call that reads the ruleset before changing it (apply, remove) sends the
 * generation id it read with its batch: if anything changed the ruleset in
 * between, the kernel refuses the batch whole and the call starts again. */
#include "config.h"
#include "egress.h"
#include "sha256.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

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

#define CHAIN_PREFIX "sandbox-"
#define CHAIN_REFUSE "refuse"
#define CHAIN_FORWARD "forward"
#define CHAIN_INBOUND "inbound"
#define CHAIN_INPUT "input"
#define CHAIN_POSTROUTING "postrouting"
#define CHAIN_PRIVATE "private"
#define CHAIN_SOURCE "source"
#define SET_REFUSED4 "refused4"
#define SET_REFUSED6 "refused6"
#define SET_PRIVATE4 "private4"
#define SET_PRIVATE6 "private6"
#define SET_OPEN4 "open4"
#define SET_OPEN6 "open6"
#define COUNTER_SUFFIX "-private"
#define SET_DNS "dns-ifnames"

/* nft's datatype numbers, so that `nft list` prints the keys as addresses. */
#define NFT_TYPE_IPADDR 7
#define NFT_TYPE_IP6ADDR 8
#define NFT_TYPE_IFNAME 41

#define PRIO_RAW (-300)
#define PRIO_FILTER 0
#define PRIO_SRCNAT 100

#define NL_BUFSZ (1u << 16)
#define RETRIES 30

/* Always refused, whatever the allow-list, the operator's opened ranges or
 * observe mode say (DESIGN.md section 5). */
static const char *const refused_v4[] = {
  "169.254.0.0/16",   /* link-local: most clouds' metadata service */
  "168.63.129.16/32", /* Azure's wire server */
  "192.0.0.0/24",     /* IETF protocol assignments, some clouds' metadata */
  "127.0.0.0/8",
  "0.0.0.0/8",        /* "this network": reaches the host itself */
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

#define DEFINE_NFTNL_FREEP(type)                                                                             \
  static inline void type##_freep (struct type **p)                                                          \
  {                                                                                                          \
    if (*p)                                                                                                  \
      type##_free (*p);                                                                                      \
  }
DEFINE_NFTNL_FREEP (nftnl_table)
DEFINE_NFTNL_FREEP (nftnl_chain)
DEFINE_NFTNL_FREEP (nftnl_rule)
DEFINE_NFTNL_FREEP (nftnl_set)
DEFINE_NFTNL_FREEP (nftnl_gen)
DEFINE_NFTNL_FREEP (nftnl_obj)
#define _cleanup_nftnl_(type) __attribute__ ((cleanup (type##_freep)))

/* ---- CIDR ---- */

static unsigned
cidr_width (const sbx_cidr *c)
{
  return c->family == AF_INET6 ? 128 : 32;
}

static bool
cidr_bit (const sbx_cidr *c, unsigned bit)
{
  return c->addr[bit / 8] & (0x80 >> (bit % 8));
}

static bool
host_bits_clear (const sbx_cidr *c)
{
  for (unsigned bit = c->prefix; bit < cidr_width (c); bit++)
    if (cidr_bit (c, bit))
      return false;
  return true;
}

static void
clear_host_bits (sbx_cidr *c)
{
  for (unsigned bit = c->prefix; bit < cidr_width (c); bit++)
    c->addr[bit / 8] &= (uint8_t) ~(0x80 >> (bit % 8));
}

/* The input as it goes into a message: quoted, at most 60 characters, the
 * bytes that are not printable ASCII as \xNN. */
static char *
quote_input (const char *s)
{
  size_t n = strlen (s);
  bool cut = n > 60;
  if (cut)
    n = 60;
  char *out = xmalloc (n * 4 + 8), *p = out;
  *p++ = '`';
  for (size_t i = 0; i < n; i++)
    {
      unsigned char c = (unsigned char) s[i];
      if (c >= 0x20 && c < 0x7f)
        *p++ = (char) c;
      else
        p += sprintf (p, "\\x%02x", c);
    }
  if (cut)
    p = stpcpy (p, "...");
  *p++ = '`';
  *p = '\0';
  return out;
}

static int
cidr_fail (sbx_error **err, const char *s, const char *why)
{
  _cleanup_free_ char *q = quote_input (s);
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid CIDR %s: %s", q, why);
}

enum { DEC_OK, DEC_EMPTY, DEC_NOT_DIGIT, DEC_LEADING_ZERO, DEC_TOO_BIG };
static const char *const dec_why[] = {
  [DEC_EMPTY] = "is empty",
  [DEC_NOT_DIGIT] = "is not a decimal number",
  [DEC_LEADING_ZERO] = "has a leading zero (octal-looking numbers are refused)",
};

/* S[0..N) as a decimal number: digits only, no sign, no leading zero. */
static int
parse_dec (const char *s, size_t n, unsigned max, unsigned *ret)
{
  if (n == 0)
    return DEC_EMPTY;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return DEC_NOT_DIGIT;
  if (n > 1 && s[0] == '0')
    return DEC_LEADING_ZERO;
  if (n > 3)
    return DEC_TOO_BIG;
  unsigned v = 0;
  for (size_t i = 0; i < n; i++)
    v = v * 10 + (unsigned) (s[i] - '0');
  if (v > max)
    return DEC_TOO_BIG;
  *ret = v;
  return DEC_OK;
}

/* Exactly four decimal octets. On error, WHY says what is wrong. */
static bool
parse_v4 (const char *s, size_t n, uint8_t out[4], char *why, size_t wl)
{
  size_t i = 0;
  for (int k = 0; k < 4; k++)
    {
      size_t start = i;
      while (i < n && s[i] != '.')
        i++;
      unsigned v = 0;
      int r = parse_dec (s + start, i - start, 255, &v);
      if (r != DEC_OK)
        {
          snprintf (why, wl, "octet %d %s", k + 1, r == DEC_TOO_BIG ? "is over 255" : dec_why[r]);
          return false;
        }
      out[k] = (uint8_t) v;
      if (k < 3 && i == n)
        {
          snprintf (why, wl, "an IPv4 address has four octets");
          return false;
        }
      if (k < 3)
        i++;
    }
  if (i != n)
    {
      snprintf (why, wl, "an IPv4 address has four octets");
      return false;
    }
  return true;
}

static bool
parse_v6 (const char *s, size_t n, uint8_t out[16], char *why, size_t wl)
{
  char buf[INET6_ADDRSTRLEN];
  if (n >= sizeof buf)
    {
      snprintf (why, wl, "too long for an IPv6 address");
      return false;
    }
  for (size_t i = 0; i < n; i++)
    {
      char c = s[i];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.'))
        {
          snprintf (why, wl, "not an IPv6 address (character %zu)", i + 1);
          return false;
        }
    }
  memcpy (buf, s, n);
  buf[n] = '\0';
  /* An embedded IPv4 tail (::ffff:a.b.c.d) gets the IPv4 rules too. */
  char *colon = strrchr (buf, ':');
  if (colon && strchr (colon, '.'))
    {
      uint8_t v4[4];
      char sub[96];
      if (!parse_v4 (colon + 1, strlen (colon + 1), v4, sub, sizeof sub))
        {
          snprintf (why, wl, "embedded IPv4 address: %s", sub);
          return false;
        }
    }
  if (inet_pton (AF_INET6, buf, out) != 1)
    {
      snprintf (why, wl, "not an IPv6 address");
      return false;
    }
  return true;
}

int
sbx_cidr_parse (const char *s, sbx_cidr *ret, sbx_error **err)
{
  char why[160];
  if (s == NULL || *s == '\0')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid CIDR: empty");
  size_t len = strlen (s);
  if (len > 128)
    return cidr_fail (err, s, "too long");
  if (strpbrk (s, " \t\n\r\v\f"))
    return cidr_fail (err, s, "stray whitespace");

  const char *slash = strchr (s, '/');
  size_t alen = slash ? (size_t) (slash - s) : len;
  if (alen == 0)
    return cidr_fail (err, s, "the address is empty");
  sbx_cidr c = { 0 };
  c.family = memchr (s, ':', alen) ? AF_INET6 : AF_INET;
  bool ok = c.family == AF_INET6 ? parse_v6 (s, alen, c.addr, why, sizeof why)
                                 : parse_v4 (s, alen, c.addr, why, sizeof why);
  if (!ok)
    return cidr_fail (err, s, why);

  unsigned width = cidr_width (&c);
  c.prefix = width;
  if (slash)
    {
      int r = parse_dec (slash + 1, len - alen - 1, width, &c.prefix);
      if (r == DEC_TOO_BIG)
        snprintf (why, sizeof why, "the prefix is over %u", width);
      else if (r != DEC_OK)
        snprintf (why, sizeof why, "the prefix %s", dec_why[r]);
      if (r != DEC_OK)
        return cidr_fail (err, s, why);
    }
  if (!host_bits_clear (&c))
    {
      sbx_cidr net = c;
      char buf[SBX_CIDR_STRLEN];
      clear_host_bits (&net);
      sbx_cidr_format (&net, buf);
      snprintf (why, sizeof why, "host bits set beyond /%u (the network is %s)", c.prefix, buf);
      return cidr_fail (err, s, why);
    }
  *ret = c;
  return 0;
}

void
sbx_cidr_format (const sbx_cidr *c, char buf[SBX_CIDR_STRLEN])
{
  char a[INET6_ADDRSTRLEN];
  if ((c->family != AF_INET && c->family != AF_INET6) || !inet_ntop (c->family, c->addr, a, sizeof a))
    {
      snprintf (buf, SBX_CIDR_STRLEN, "none");
      return;
    }
  snprintf (buf, SBX_CIDR_STRLEN, "%s/%u", a, c->prefix);
}

bool
sbx_cidr_equal (const sbx_cidr *a, const sbx_cidr *b)
{
  return a->family == b->family && a->prefix == b->prefix && memcmp (a->addr, b->addr, sizeof a->addr) == 0;
}

/* A CIDR handed in as a struct: a family, a prefix within it, no host bits,
 * nothing past an IPv4 address. */
static bool
cidr_valid (const sbx_cidr *c)
{
  static const uint8_t zero[12];
  if (c->family != AF_INET && c->family != AF_INET6)
    return false;
  if (c->prefix > cidr_width (c) || !host_bits_clear (c))
    return false;
  return c->family == AF_INET6 || memcmp (c->addr + 4, zero, sizeof zero) == 0;
}

/* ---- Intervals ---- */

/* An inclusive range of addresses, big-endian; IPv4 in the first 4 bytes. */
typedef struct range {
  uint8_t lo[16], hi[16];
} range;

static void
range_of (const sbx_cidr *c, range *r)
{
  memset (r, 0, sizeof *r);
  memcpy (r->lo, c->addr, cidr_width (c) / 8);
  memcpy (r->hi, c->addr, cidr_width (c) / 8);
  for (unsigned bit = c->prefix; bit < cidr_width (c); bit++)
    r->hi[bit / 8] |= (uint8_t) (0x80 >> (bit % 8));
}

static int
range_cmp (const void *a, const void *b)
{
  return memcmp (((const range *) a)->lo, ((const range *) b)->lo, 16);
}

/* A + 1 over its first LEN bytes; false when it wraps past all ones. */
static bool
addr_inc (uint8_t *a, size_t len)
{
  for (size_t i = len; i-- > 0;)
    if (++a[i] != 0)
      return true;
  return false;
}

/* Sorts R and merges overlapping and adjacent ranges: the kernel refuses
 * overlapping intervals, and nft prints merged ones. Returns the count. */
static size_t
ranges_merge (range *r, size_t n, size_t len)
{
  if (n == 0)
    return 0;
  qsort (r, n, sizeof *r, range_cmp);
  size_t out = 0;
  for (size_t i = 1; i < n; i++)
    {
      uint8_t next[16];
      memcpy (next, r[out].hi, sizeof next);
      bool to_end = !addr_inc (next, len);
      if (to_end || memcmp (r[i].lo, next, 16) <= 0)
        {
          if (memcmp (r[i].hi, r[out].hi, 16) > 0)
            memcpy (r[out].hi, r[i].hi, 16);
        }
      else
        r[++out] = r[i];
    }
  return out + 1;
}

typedef struct ranges {
  range *v;
  size_t n;
} ranges;

static void
ranges_push (ranges *rs, const sbx_cidr *c)
{
  rs->v = xrealloc (rs->v, (rs->n + 1) * sizeof *rs->v);
  range_of (c, &rs->v[rs->n++]);
}

static void
ranges_freep (ranges *rs)
{
  free (rs->v);
}
#define _cleanup_ranges_ __attribute__ ((cleanup (ranges_freep)))

static sbx_cidr
cidr_const (const char *s)
{
  sbx_cidr c;
  if (sbx_cidr_parse (s, &c, NULL) < 0)
    abort ();
  return c;
}

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
      sbx_cidr c = cidr_const (v[i]);
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
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid nftables table name `%s`",
                          table ? table : "(null)");
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
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' ||
            c == '.'))
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
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid interface name `%s`",
                          ifname ? ifname : "(null)");
  return 0;
}

/* OPTIONAL: family 0 stands for "none". */
static int
check_pool_cidr (const sbx_cidr *c, int family, bool optional, const char *what, sbx_error **err)
{
  if (optional && c->family == 0)
    return 0;
  if (c->family != family || !cidr_valid (c))
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
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "egress: %zu opened destinations but no array",
                          pool->nopen);
  if (pool->nopen > SBX_EGRESS_ALLOW_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "egress: %zu opened destinations, at most %d",
                          pool->nopen, SBX_EGRESS_ALLOW_MAX);
  for (size_t i = 0; i < pool->nopen; i++)
    if (!cidr_valid (&pool->open[i]))
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                            "egress: opened destination %zu is not a CIDR (family, prefix, host bits)", i + 1);
  return 0;
}

/* ---- Netlink ---- */

typedef struct nft {
  struct mnl_socket *nl;
  uint32_t portid;
  uint32_t seq;
  char *buf;
} nft;

static void
nft_close (nft *n)
{
  if (n->nl)
    mnl_socket_close (n->nl);
  free (n->buf);
  n->nl = NULL;
  n->buf = NULL;
}
#define _cleanup_nft_ __attribute__ ((cleanup (nft_close)))

/* No permission, or no nf_tables here: egress cannot be enforced. */
static sbx_code
code_for (int errnum)
{
  switch (errnum)
    {
    case EPERM:
    case EACCES:
    case EPROTONOSUPPORT:
    case EAFNOSUPPORT:
    case EOPNOTSUPP:
      return SBX_E_NETWORK_BLOCK_UNAVAILABLE;
    default:
      return SBX_E_INTERNAL;
    }
}

static int
nft_open (nft *n, sbx_error **err)
{
  n->nl = mnl_socket_open2 (NETLINK_NETFILTER, SOCK_CLOEXEC);
  if (n->nl == NULL)
    {
      int e = errno;
      return sbx_error_set (err, code_for (e), e, "nftables: open a netlink socket");
    }
  if (mnl_socket_bind (n->nl, 0, MNL_SOCKET_AUTOPID) < 0)
    {
      int e = errno;
      return sbx_error_set (err, code_for (e), e, "nftables: bind the netlink socket");
    }
  n->portid = mnl_socket_get_portid (n->nl);
  n->seq = (uint32_t) time (NULL);
  n->buf = xmalloc (NL_BUFSZ);
  /* Errors without a copy of the (possibly large) message they answer. */
  int one = 1;
  (void) mnl_socket_setsockopt (n->nl, NETLINK_CAP_ACK, &one, sizeof one);
  /* Room for every answer to a batch: losing one would leave its outcome unknown. */
  int fd = mnl_socket_get_fd (n->nl), size = 4 << 20;
  if (setsockopt (fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
    (void) setsockopt (fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  return 0;
}

static struct nlmsghdr *
req_hdr (nft *n, char *buf, uint16_t type, uint16_t family, uint16_t flags)
{
  return nftnl_nlmsg_build_hdr (buf, type, family, flags, ++n->seq);
}

/* Sends the request NLH and runs CB on each answer until the end of the
 * dump (or the ack). Returns 1 when the ruleset changed during the dump. */
static int
nft_talk (nft *n, struct nlmsghdr *nlh, mnl_cb_t cb, void *data, const char *what, sbx_error **err)
{
  if (mnl_socket_sendto (n->nl, nlh, nlh->nlmsg_len) < 0)
    {
      int e = errno;
      return sbx_error_set (err, code_for (e), e, "nftables: %s", what);
    }
  for (;;)
    {
      ssize_t r = mnl_socket_recvfrom (n->nl, n->buf, NL_BUFSZ);
      int ret = r < 0 ? MNL_CB_ERROR : mnl_cb_run (n->buf, (size_t) r, nlh->nlmsg_seq, n->portid, cb, data);
      if (ret == MNL_CB_STOP)
        return 0;
      if (ret == MNL_CB_ERROR && errno == EINTR)
        return 1;
      if (ret == MNL_CB_ERROR && errno == ENOENT)
        return 0;
      if (ret == MNL_CB_ERROR)
        {
          int e = errno;
          return sbx_error_set (err, code_for (e), e, "nftables: %s", what);
        }
    }
}

static int
gen_cb (const struct nlmsghdr *nlh, void *data)
{
  _cleanup_nftnl_ (nftnl_gen) struct nftnl_gen *g = nftnl_gen_alloc ();
  if (g == NULL)
    abort ();
  if (nftnl_gen_nlmsg_parse (nlh, g) < 0)
    {
      errno = EPROTO;
      return MNL_CB_ERROR;
    }
  *(uint32_t *) data = nftnl_gen_get_u32 (g, NFTNL_GEN_ID);
  return MNL_CB_OK;
}

/* What apply and remove need to know of the table before changing it. */
typedef struct tstate {
  const char *table;
  const char *target; /* forward rules jumping here are this sandbox's */
  const char *ifname; /* forward rules for this interface too */
  uint32_t genid;
  char **chains;
  char **sets;
  char **counters; /* the table's named counters */
  uint64_t *handles; /* the forward rules to delete */
  char (*rule_ifnames)[IFNAMSIZ];
  size_t nrules;
  uint64_t *src_handles; /* IFNAME's rules in chain source */
  size_t nsrc;
} tstate;

static void
tstate_free (tstate *t)
{
  strv_free (t->chains);
  strv_free (t->sets);
  strv_free (t->counters);
  free (t->handles);
  free (t->rule_ifnames);
  free (t->src_handles);
}
#define _cleanup_tstate_ __attribute__ ((cleanup (tstate_free)))

static bool
strv_has (char *const *v, const char *s)
{
  for (size_t i = 0; v && v[i]; i++)
    if (strcmp (v[i], s) == 0)
      return true;
  return false;
}

static int
chain_cb (const struct nlmsghdr *nlh, void *data)
{
  tstate *t = data;
  _cleanup_nftnl_ (nftnl_chain) struct nftnl_chain *c = nftnl_chain_alloc ();
  if (c == NULL)
    abort ();
  if (nftnl_chain_nlmsg_parse (nlh, c) < 0)
    {
      errno = EPROTO;
      return MNL_CB_ERROR;
    }
  const char *table = nftnl_chain_get_str (c, NFTNL_CHAIN_TABLE), *name = nftnl_chain_get_str (c, NFTNL_CHAIN_NAME);
  if (table && name && strcmp (table, t->table) == 0 && nftnl_chain_get_u32 (c, NFTNL_CHAIN_FAMILY) == NFPROTO_INET)
    strv_push (&t->chains, name);
  return MNL_CB_OK;
}

static int
set_cb (const struct nlmsghdr *nlh, void *data)
{
  tstate *t = data;
  _cleanup_nftnl_ (nftnl_set) struct nftnl_set *s = nftnl_set_alloc ();
  if (s == NULL)
    abort ();
  if (nftnl_set_nlmsg_parse (nlh, s) < 0)
    {
      errno = EPROTO;
      return MNL_CB_ERROR;
    }
  const char *table = nftnl_set_get_str (s, NFTNL_SET_TABLE), *name = nftnl_set_get_str (s, NFTNL_SET_NAME);
  if (table && name && strcmp (table, t->table) == 0 && nftnl_set_get_u32 (s, NFTNL_SET_FAMILY) == NFPROTO_INET)
    strv_push (&t->sets, name);
  return MNL_CB_OK;
}

static int
obj_cb (const struct nlmsghdr *nlh, void *data)
{
  tstate *t = data;
  _cleanup_nftnl_ (nftnl_obj) struct nftnl_obj *o = nftnl_obj_alloc ();
  if (o == NULL)
    abort ();
  if (nftnl_obj_nlmsg_parse (nlh, o) < 0)
    {
      errno = EPROTO;
      return MNL_CB_ERROR;
    }
  const char *table = nftnl_obj_get_str (o, NFTNL_OBJ_TABLE), *name = nftnl_obj_get_str (o, NFTNL_OBJ_NAME);
  if (table && name && strcmp (table, t->table) == 0 && nftnl_obj_get_u32 (o, NFTNL_OBJ_FAMILY) == NFPROTO_INET
      && nftnl_obj_get_u32 (o, NFTNL_OBJ_TYPE) == NFT_OBJECT_COUNTER)
    strv_push (&t->counters, name);
  return MNL_CB_OK;
}

/* The interface a rule matches with `iifname NAME` (into IFN, "" if none)
 * and the chain it jumps to (NULL if none, valid while R lives). */
static const char *
rule_scan (struct nftnl_rule *r, char ifn[IFNAMSIZ])
{
  const char *target = NULL;
  bool iif_loaded = false;
  ifn[0] = '\0';
  struct nftnl_expr_iter *it = nftnl_expr_iter_create (r);
  if (it == NULL)
    abort ();
  for (struct nftnl_expr *e = nftnl_expr_iter_next (it); e; e = nftnl_expr_iter_next (it))
    {
      const char *name = nftnl_expr_get_str (e, NFTNL_EXPR_NAME);
      bool was_iif = iif_loaded;
      iif_loaded = false;
      if (strcmp (name, "meta") == 0)
        iif_loaded = nftnl_expr_get_u32 (e, NFTNL_EXPR_META_KEY) == NFT_META_IIFNAME;
      else if (strcmp (name, "cmp") == 0 && was_iif && nftnl_expr_get_u32 (e, NFTNL_EXPR_CMP_OP) == NFT_CMP_EQ)
        {
          uint32_t len = 0;
          const char *d = nftnl_expr_get (e, NFTNL_EXPR_CMP_DATA, &len);
          size_t l = d ? strnlen (d, len < IFNAMSIZ - 1 ? len : IFNAMSIZ - 1) : 0;
          memcpy (ifn, d ? d : "", l);
          ifn[l] = '\0';
        }
      else if (strcmp (name, "immediate") == 0 && nftnl_expr_is_set (e, NFTNL_EXPR_IMM_CHAIN))
        target = nftnl_expr_get_str (e, NFTNL_EXPR_IMM_CHAIN);
    }
  nftnl_expr_iter_destroy (it);
  return target;
}

typedef struct comment {
  const char *s;
  uint32_t len;
} comment;

static int
comment_cb (const struct nftnl_udata *attr, void *data)
{
  if (nftnl_udata_type (attr) == NFTNL_UDATA_RULE_COMMENT)
    {
      comment *c = data;
      c->s = nftnl_udata_get (attr);
      c->len = nftnl_udata_len (attr);
    }
  return 0;
}

/* Whether R's comment is NAME (sbx marks a sandbox's source rules so). */
static bool
rule_comment_is (struct nftnl_rule *r, const char *name)
{
  uint32_t len = 0;
  const void *u = nftnl_rule_is_set (r, NFTNL_RULE_USERDATA) ? nftnl_rule_get_data (r, NFTNL_RULE_USERDATA, &len) : NULL;
  comment c = { 0 };
  if (u == NULL || nftnl_udata_parse (u, len, comment_cb, &c) < 0 || c.s == NULL)
    return false;
  return c.len == strlen (name) + 1 && memcmp (c.s, name, c.len) == 0;
}

static int
rule_cb (const struct nlmsghdr *nlh, void *data)
{
  tstate *t = data;
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *r = nftnl_rule_alloc ();
  if (r == NULL)
    abort ();
  if (nftnl_rule_nlmsg_parse (nlh, r) < 0)
    {
      errno = EPROTO;
      return MNL_CB_ERROR;
    }
  const char *table = nftnl_rule_get_str (r, NFTNL_RULE_TABLE), *chain = nftnl_rule_get_str (r, NFTNL_RULE_CHAIN);
  if (!table || !chain || strcmp (table, t->table) != 0)
    return MNL_CB_OK;
  char ifn[IFNAMSIZ];
  const char *target = rule_scan (r, ifn);
  if (strcmp (chain, CHAIN_SOURCE) == 0)
    {
      if (!(t->ifname && strcmp (ifn, t->ifname) == 0) && !(t->target && rule_comment_is (r, t->target)))
        return MNL_CB_OK;
      t->src_handles = xrealloc (t->src_handles, (t->nsrc + 1) * sizeof *t->src_handles);
      t->src_handles[t->nsrc++] = nftnl_rule_get_u64 (r, NFTNL_RULE_HANDLE);
      return MNL_CB_OK;
    }
  if (strcmp (chain, CHAIN_FORWARD) != 0)
    return MNL_CB_OK;
  bool ours = (target && strcmp (target, t->target) == 0) || (t->ifname && strcmp (ifn, t->ifname) == 0);
  if (!ours)
    return MNL_CB_OK;
  t->handles = xrealloc (t->handles, (t->nrules + 1) * sizeof *t->handles);
  t->rule_ifnames = xrealloc (t->rule_ifnames, (t->nrules + 1) * sizeof *t->rule_ifnames);
  t->handles[t->nrules] = nftnl_rule_get_u64 (r, NFTNL_RULE_HANDLE);
  memcpy (t->rule_ifnames[t->nrules], ifn, IFNAMSIZ);
  t->nrules++;
  return MNL_CB_OK;
}

/* The rules of CHAIN, through rule_cb. */
static int
rules_read (nft *n, tstate *t, const char *chain, sbx_error **err)
{
  char buf[8192];
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *rule = nftnl_rule_alloc ();
  if (rule == NULL)
    abort ();
  nftnl_rule_set_str (rule, NFTNL_RULE_TABLE, t->table);
  nftnl_rule_set_str (rule, NFTNL_RULE_CHAIN, chain);
  struct nlmsghdr *nlh = req_hdr (n, buf, NFT_MSG_GETRULE, NFPROTO_INET, NLM_F_DUMP);
  nftnl_rule_nlmsg_build_payload (nlh, rule);
  _cleanup_free_ char *what = xasprintf ("list the rules of chain %s", chain);
  return nft_talk (n, nlh, rule_cb, t, what, err);
}

/* Reads the generation id, then the table's chains. 1: changed meanwhile. */
static int
chains_read (nft *n, tstate *t, sbx_error **err)
{
  char buf[8192];
  struct nlmsghdr *nlh = req_hdr (n, buf, NFT_MSG_GETGEN, AF_UNSPEC, NLM_F_ACK);
  int r = nft_talk (n, nlh, gen_cb, &t->genid, "read the ruleset generation", err);
  if (r != 0)
    return r;
  nlh = req_hdr (n, buf, NFT_MSG_GETCHAIN, NFPROTO_INET, NLM_F_DUMP);
  return nft_talk (n, nlh, chain_cb, t, "list chains", err);
}

/* Reads the generation id, then the table's chains, sets and counters, then
 * the forward and source rules of that sandbox (TARGET: by jump or comment)
 * or interface (IFNAME). 1: changed meanwhile. */
static int
tstate_read (nft *n, tstate *t, sbx_error **err)
{
  char buf[8192]; /* one request, no elements */
  int r = chains_read (n, t, err);
  if (r != 0)
    return r;

  _cleanup_nftnl_ (nftnl_set) struct nftnl_set *s = nftnl_set_alloc ();
  if (s == NULL)
    abort ();
  nftnl_set_set_str (s, NFTNL_SET_TABLE, t->table);
  struct nlmsghdr *nlh = req_hdr (n, buf, NFT_MSG_GETSET, NFPROTO_INET, NLM_F_DUMP);
  nftnl_set_nlmsg_build_payload (nlh, s);
  r = nft_talk (n, nlh, set_cb, t, "list sets", err);
  if (r != 0)
    return r;

  _cleanup_nftnl_ (nftnl_obj) struct nftnl_obj *o = nftnl_obj_alloc ();
  if (o == NULL)
    abort ();
  nftnl_obj_set_str (o, NFTNL_OBJ_TABLE, t->table);
  nlh = req_hdr (n, buf, NFT_MSG_GETOBJ, NFPROTO_INET, NLM_F_DUMP);
  nftnl_obj_nlmsg_build_payload (nlh, o);
  r = nft_talk (n, nlh, obj_cb, t, "list stateful objects", err);
  if (r == 0 && t->target && strv_has (t->chains, CHAIN_FORWARD))
    r = rules_read (n, t, CHAIN_FORWARD, err);
  if (r == 0 && (t->ifname || t->target) && strv_has (t->chains, CHAIN_SOURCE))
    r = rules_read (n, t, CHAIN_SOURCE, err);
  return r;
}

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

static void
batch_free (batch *b)
{
  if (b->b)
    mnl_nlmsg_batch_stop (b->b);
  free (b->buf);
  for (size_t i = 0; i < b->nwhat; i++)
    free (b->what[i]);
  free (b->what);
}
#define _cleanup_batch_ __attribute__ ((cleanup (batch_free)))

/* LIMIT: the most the messages may take; the buffer holds twice that, as
 * libmnl asks, so that the message that crosses it is still whole. */
static void
batch_start (batch *b, nft *n, const char *table, size_t limit, const uint32_t *genid)
{
  b->buf = xmalloc (limit * 2);
  b->b = mnl_nlmsg_batch_start (b->buf, limit);
  if (b->b == NULL)
    abort ();
  b->table = table;
  b->seq0 = b->seq = ++n->seq;
  struct nlmsghdr *nlh = nftnl_batch_begin (mnl_nlmsg_batch_current (b->b), b->seq0);
  if (genid)
    mnl_attr_put_u32 (nlh, NFNL_BATCH_GENID, htonl (*genid));
  if (!mnl_nlmsg_batch_next (b->b))
    b->overflow = true;
}

static struct nlmsghdr *
batch_msg (batch *b, uint16_t type, uint16_t flags)
{
  return nftnl_nlmsg_build_hdr (mnl_nlmsg_batch_current (b->b), type, NFPROTO_INET, flags | NLM_F_ACK, ++b->seq);
}

static void batch_next (batch *b, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
static void
batch_next (batch *b, const char *fmt, ...)
{
  va_list ap;
  char *s = NULL;
  va_start (ap, fmt);
  if (vasprintf (&s, fmt, ap) < 0)
    abort ();
  va_end (ap);
  b->what = xrealloc (b->what, (b->nwhat + 1) * sizeof *b->what);
  b->what[b->nwhat++] = s;
  if (!mnl_nlmsg_batch_next (b->b))
    b->overflow = true;
}

static void
batch_end (batch *b)
{
  nftnl_batch_end (mnl_nlmsg_batch_current (b->b), ++b->seq);
  if (!mnl_nlmsg_batch_next (b->b))
    b->overflow = true;
}

static const char *
batch_what (const batch *b, uint32_t seq)
{
  if (seq == b->seq0)
    return "commit the transaction";
  if (seq > b->seq0 && seq - b->seq0 - 1 < b->nwhat)
    return b->what[seq - b->seq0 - 1];
  return "answer to an unknown message";
}

/* Reads the acks of the batch just sent: every message asked for one; a
 * failed batch answers its failed messages (or, refused at commit, only the
 * first) and nothing more, so after an error, what is queued is all. */
static int
batch_answers (nft *n, batch *b, sbx_error **err)
{
  int fd = mnl_socket_get_fd (n->nl), first = 0;
  uint32_t first_seq = 0;
  size_t acks = 0;
  while (acks < b->nwhat)
    {
      ssize_t r = recv (fd, n->buf, NL_BUFSZ, MSG_DONTWAIT);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        {
          if (first)
            break;
          struct pollfd p = { .fd = fd, .events = POLLIN };
          if (poll (&p, 1, 10000) == 0)
            return sbx_error_set (err, SBX_E_TIMEOUT, 0, "nftables: no answer to the batch for table inet %s",
                                  b->table);
          continue;
        }
      if (r < 0)
        {
          int e = errno;
          return sbx_error_set (err, code_for (e), e, "nftables: read the answers for table inet %s", b->table);
        }
      int len = (int) r;
      for (const struct nlmsghdr *h = (const void *) n->buf; mnl_nlmsg_ok (h, len); h = mnl_nlmsg_next (h, &len))
        {
          if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_seq < b->seq0 || h->nlmsg_seq > b->seq)
            continue;
          const struct nlmsgerr *e = mnl_nlmsg_get_payload (h);
          acks++;
          if (e->error != 0 && first == 0)
            {
              first = -e->error;
              first_seq = h->nlmsg_seq;
            }
        }
    }
  if (first == 0)
    return 0;
  if (first == ERESTART && first_seq == b->seq0)
    return 1;
  return sbx_error_set (err, code_for (first), first, "nftables: table inet %s: %s", b->table,
                        batch_what (b, first_seq));
}

/* 0: applied; 1: the ruleset changed since the generation id the batch
 * carries (nothing applied: read again and retry); -1: refused. */
static int
batch_send (nft *n, batch *b, sbx_error **err)
{
  if (b->overflow)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "nftables: the batch for table inet %s is too large", b->table);
  size_t len = mnl_nlmsg_batch_size (b->b);
  int fd = mnl_socket_get_fd (n->nl);
  if (len > (128u << 10))
    {
      int size = (int) len + 4096;
      if (setsockopt (fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size) < 0)
        (void) setsockopt (fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    }
  if (mnl_socket_sendto (n->nl, mnl_nlmsg_batch_head (b->b), len) < 0)
    {
      int e = errno;
      return sbx_error_set (err, code_for (e), e, "nftables: send the batch for table inet %s", b->table);
    }
  n->seq = b->seq;
  return batch_answers (n, b, err);
}

/* ---- Batch messages ---- */

static void
b_table (batch *b)
{
  _cleanup_nftnl_ (nftnl_table) struct nftnl_table *t = nftnl_table_alloc ();
  if (t == NULL)
    abort ();
  nftnl_table_set_str (t, NFTNL_TABLE_NAME, b->table);
  nftnl_table_nlmsg_build_payload (batch_msg (b, NFT_MSG_NEWTABLE, NLM_F_CREATE), t);
  batch_next (b, "create the table");
}

static struct nftnl_chain *
chain_new (const batch *b, const char *name)
{
  struct nftnl_chain *c = nftnl_chain_alloc ();
  if (c == NULL)
    abort ();
  nftnl_chain_set_str (c, NFTNL_CHAIN_TABLE, b->table);
  nftnl_chain_set_str (c, NFTNL_CHAIN_NAME, name);
  return c;
}

/* Creates chain NAME if missing; with a TYPE, a base chain on HOOK at PRIO
 * whose policy is accept. */
static void
b_chain (batch *b, const char *name, const char *type, uint32_t hook, int32_t prio)
{
  _cleanup_nftnl_ (nftnl_chain) struct nftnl_chain *c = chain_new (b, name);
  if (type)
    {
      nftnl_chain_set_str (c, NFTNL_CHAIN_TYPE, type);
      nftnl_chain_set_u32 (c, NFTNL_CHAIN_HOOKNUM, hook);
      nftnl_chain_set_s32 (c, NFTNL_CHAIN_PRIO, prio);
      nftnl_chain_set_u32 (c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
    }
  nftnl_chain_nlmsg_build_payload (batch_msg (b, NFT_MSG_NEWCHAIN, NLM_F_CREATE), c);
  batch_next (b, "create chain %s", name);
}

static void
b_chain_del (batch *b, const char *name)
{
  _cleanup_nftnl_ (nftnl_chain) struct nftnl_chain *c = chain_new (b, name);
  nftnl_chain_nlmsg_build_payload (batch_msg (b, NFT_MSG_DELCHAIN, 0), c);
  batch_next (b, "delete chain %s", name);
}

static struct nftnl_rule *
rule_new (const batch *b, const char *chain)
{
  struct nftnl_rule *r = nftnl_rule_alloc ();
  if (r == NULL)
    abort ();
  nftnl_rule_set_str (r, NFTNL_RULE_TABLE, b->table);
  nftnl_rule_set_str (r, NFTNL_RULE_CHAIN, chain);
  nftnl_rule_set_u32 (r, NFTNL_RULE_FAMILY, NFPROTO_INET);
  return r;
}

/* Without a handle: every rule of the chain. */
static void
b_rule_del (batch *b, const char *chain, const uint64_t *handle)
{
  _cleanup_nftnl_ (nftnl_rule) struct nftnl_rule *r = rule_new (b, chain);
  if (handle)
    nftnl_rule_set_u64 (r, NFTNL_RULE_HANDLE, *handle);
  nftnl_rule_nlmsg_build_payload (batch_msg (b, NFT_MSG_DELRULE, 0), r);
  if (handle)
    batch_next (b, "delete rule %llu of chain %s", (unsigned long long) *handle, chain);
  else
    batch_next (b, "flush chain %s", chain);
}

static void
b_rule_add (batch *b, struct nftnl_rule *r, const char *what)
{
  nftnl_rule_nlmsg_build_payload (batch_msg (b, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND), r);
  batch_next (b, "add rule to chain %s (%s)", nftnl_rule_get_str (r, NFTNL_RULE_CHAIN), what);
}

static struct nftnl_set *
set_new (const batch *b, const char *name)
{
  struct nftnl_set *s = nftnl_set_alloc ();
  if (s == NULL)
    abort ();
  nftnl_set_set_str (s, NFTNL_SET_TABLE, b->table);
  nftnl_set_set_str (s, NFTNL_SET_NAME, name);
  nftnl_set_set_u32 (s, NFTNL_SET_FAMILY, NFPROTO_INET);
  return s;
}

/* nft's byte orders, which it keeps in a set's user data to print keys. */
#define NFT_BYTEORDER_HOST 1
#define NFT_BYTEORDER_BIG 2

/* Creates set NAME if missing. */
static void
b_set (batch *b, const char *name, uint32_t key_type, uint32_t key_len, uint32_t flags)
{
  _cleanup_nftnl_ (nftnl_set) struct nftnl_set *s = set_new (b, name);
  struct nftnl_udata_buf *u = nftnl_udata_buf_alloc (16);
  if (u == NULL)
    abort ();
  nftnl_udata_put_u32 (u, NFTNL_UDATA_SET_KEYBYTEORDER,
                       key_type == NFT_TYPE_IFNAME ? NFT_BYTEORDER_HOST : NFT_BYTEORDER_BIG);
  nftnl_set_set_data (s, NFTNL_SET_USERDATA, nftnl_udata_buf_data (u), nftnl_udata_buf_len (u));
  nftnl_udata_buf_free (u);
  nftnl_set_set_u32 (s, NFTNL_SET_KEY_TYPE, key_type);
  nftnl_set_set_u32 (s, NFTNL_SET_KEY_LEN, key_len);
  nftnl_set_set_u32 (s, NFTNL_SET_FLAGS, flags);
  nftnl_set_set_u32 (s, NFTNL_SET_ID, ++b->set_id);
  nftnl_set_nlmsg_build_payload (batch_msg (b, NFT_MSG_NEWSET, NLM_F_CREATE), s);
  batch_next (b, "create set %s", name);
}

/* Built by hand: some libnftnl versions send an empty element list, which
 * deletes nothing, instead of no list, which flushes. */
static void
b_set_flush (batch *b, const char *name)
{
  struct nlmsghdr *nlh = batch_msg (b, NFT_MSG_DELSETELEM, 0);
  mnl_attr_put_strz (nlh, NFTA_SET_ELEM_LIST_TABLE, b->table);
  mnl_attr_put_strz (nlh, NFTA_SET_ELEM_LIST_SET, name);
  batch_next (b, "flush set %s", name);
}

static void
b_set_del (batch *b, const char *name)
{
  _cleanup_nftnl_ (nftnl_set) struct nftnl_set *s = set_new (b, name);
  nftnl_set_nlmsg_build_payload (batch_msg (b, NFT_MSG_DELSET, 0), s);
  batch_next (b, "delete set %s", name);
}

static void
set_add_key (struct nftnl_set *s, const void *key, size_t len, bool end, bool open)
{
  struct nftnl_set_elem *e = nftnl_set_elem_alloc ();
  if (e == NULL)
    abort ();
  nftnl_set_elem_set (e, NFTNL_SET_ELEM_KEY, key, (uint32_t) len);
  if (end)
    nftnl_set_elem_set_u32 (e, NFTNL_SET_ELEM_FLAGS, NFT_SET_ELEM_INTERVAL_END);
  if (open)
    {
      /* As nft marks an interval that runs to the last address, so that
       * `nft list` prints it as a prefix rather than a lone start. */
      struct nftnl_udata_buf *u = nftnl_udata_buf_alloc (16);
      if (u == NULL)
        abort ();
      nftnl_udata_put_u32 (u, NFTNL_UDATA_SET_ELEM_FLAGS, NFTNL_SET_ELEM_F_INTERVAL_OPEN);
      nftnl_set_elem_set (e, NFTNL_SET_ELEM_USERDATA, nftnl_udata_buf_data (u), nftnl_udata_buf_len (u));
      nftnl_udata_buf_free (u);
    }
  nftnl_set_elem_add (s, e);
}

/* Ranges per element message: the element list is one attribute, whose
 * length (16 bits) holds about 1000 IPv6 elements. */
#define RANGES_PER_MSG 256

/* Creates, flushes and fills the interval set NAME with merged ranges, in
 * the kernel's encoding: a start element, then an end element one past the
 * last address (none when it is the last of all), and an end element at
 * zero first when the first range does not start there. */
static void
b_interval_set (batch *b, const char *name, int family, const ranges *rs)
{
  size_t len = family == AF_INET6 ? 16 : 4;
  b_set (b, name, family == AF_INET6 ? NFT_TYPE_IP6ADDR : NFT_TYPE_IPADDR, (uint32_t) len, NFT_SET_INTERVAL);
  b_set_flush (b, name);
  static const uint8_t zero[16];
  for (size_t first = 0; first < rs->n; first += RANGES_PER_MSG)
    {
      _cleanup_nftnl_ (nftnl_set) struct nftnl_set *s = set_new (b, name);
      if (first == 0 && memcmp (rs->v[0].lo, zero, len) != 0)
        set_add_key (s, zero, len, true, false);
      size_t last = first + RANGES_PER_MSG < rs->n ? first + RANGES_PER_MSG : rs->n;
      for (size_t i = first; i < last; i++)
        {
          uint8_t end[16];
          memcpy (end, rs->v[i].hi, sizeof end);
          bool open = !addr_inc (end, len);
          set_add_key (s, rs->v[i].lo, len, false, open);
          if (!open)
            set_add_key (s, end, len, true, false);
        }
      nftnl_set_elems_nlmsg_build_payload (batch_msg (b, NFT_MSG_NEWSETELEM, NLM_F_CREATE), s);
      if (rs->n <= RANGES_PER_MSG)
        batch_next (b, "fill set %s (%zu ranges)", name, rs->n);
      else
        batch_next (b, "fill set %s (ranges %zu to %zu of %zu)", name, first + 1, last, rs->n);
    }
}

static struct nftnl_obj *
counter_new (const batch *b, const char *name)
{
  struct nftnl_obj *o = nftnl_obj_alloc ();
  if (o == NULL)
    abort ();
  nftnl_obj_set_str (o, NFTNL_OBJ_TABLE, b->table);
  nftnl_obj_set_str (o, NFTNL_OBJ_NAME, name);
  nftnl_obj_set_u32 (o, NFTNL_OBJ_TYPE, NFT_OBJECT_COUNTER);
  nftnl_obj_set_u32 (o, NFTNL_OBJ_FAMILY, NFPROTO_INET);
  return o;
}

/* Creates the named counter NAME if missing; one that exists keeps its
 * counts. */
static void
b_counter (batch *b, const char *name)
{
  _cleanup_nftnl_ (nftnl_obj) struct nftnl_obj *o = counter_new (b, name);
  nftnl_obj_nlmsg_build_payload (batch_msg (b, NFT_MSG_NEWOBJ, NLM_F_CREATE), o);
  batch_next (b, "create counter %s", name);
}

static void
b_counter_del (batch *b, const char *name)
{
  _cleanup_nftnl_ (nftnl_obj) struct nftnl_obj *o = counter_new (b, name);
  nftnl_obj_nlmsg_build_payload (batch_msg (b, NFT_MSG_DELOBJ, 0), o);
  batch_next (b, "delete counter %s", name);
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

/* ---- Rule expressions ---- */

static struct nftnl_expr *
expr_add (struct nftnl_rule *r, const char *name)
{
  struct nftnl_expr *e = nftnl_expr_alloc (name);
  if (e == NULL)
    abort ();
  nftnl_rule_add_expr (r, e);
  return e;
}

static void
e_meta (struct nftnl_rule *r, uint32_t key)
{
  struct nftnl_expr *e = expr_add (r, "meta");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_META_KEY, key);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_META_DREG, NFT_REG_1);
}

static void
e_cmp (struct nftnl_rule *r, uint32_t op, const void *data, uint32_t len)
{
  struct nftnl_expr *e = expr_add (r, "cmp");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_CMP_OP, op);
  nftnl_expr_set (e, NFTNL_EXPR_CMP_DATA, data, len);
}

static void
e_payload (struct nftnl_rule *r, uint32_t base, uint32_t offset, uint32_t len)
{
  struct nftnl_expr *e = expr_add (r, "payload");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_PAYLOAD_BASE, base);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_PAYLOAD_LEN, len);
}

static void
e_bitwise (struct nftnl_rule *r, const void *mask, uint32_t len)
{
  static const uint8_t zero[16];
  struct nftnl_expr *e = expr_add (r, "bitwise");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_BITWISE_LEN, len);
  nftnl_expr_set (e, NFTNL_EXPR_BITWISE_MASK, mask, len);
  nftnl_expr_set (e, NFTNL_EXPR_BITWISE_XOR, zero, len);
}

static struct nftnl_expr *
e_lookup (struct nftnl_rule *r, const char *set)
{
  struct nftnl_expr *e = expr_add (r, "lookup");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_LOOKUP_SREG, NFT_REG_1);
  nftnl_expr_set_str (e, NFTNL_EXPR_LOOKUP_SET, set);
  return e;
}

/* Matches when the register is NOT in SET. */
static void
e_lookup_not (struct nftnl_rule *r, const char *set)
{
  nftnl_expr_set_u32 (e_lookup (r, set), NFTNL_EXPR_LOOKUP_FLAGS, NFT_LOOKUP_F_INV);
}

/* `counter name NAME`: counts into the table's named counter. */
static void
e_counter_ref (struct nftnl_rule *r, const char *name)
{
  struct nftnl_expr *e = expr_add (r, "objref");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_OBJREF_IMM_TYPE, NFT_OBJECT_COUNTER);
  nftnl_expr_set_str (e, NFTNL_EXPR_OBJREF_IMM_NAME, name);
}

/* NF_ACCEPT, NF_DROP, or NFT_JUMP / NFT_GOTO to CHAIN. */
static void
e_verdict (struct nftnl_rule *r, int verdict, const char *chain)
{
  struct nftnl_expr *e = expr_add (r, "immediate");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_IMM_VERDICT, (uint32_t) verdict);
  if (chain)
    nftnl_expr_set_str (e, NFTNL_EXPR_IMM_CHAIN, chain);
}

static void
e_reject (struct nftnl_rule *r, uint32_t type, uint8_t code)
{
  struct nftnl_expr *e = expr_add (r, "reject");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_REJECT_TYPE, type);
  nftnl_expr_set_u8 (e, NFTNL_EXPR_REJECT_CODE, code);
}

/* iifname/oifname: the whole name, or with PREFIX its first bytes ("sbx*"). */
static void
m_ifname (struct nftnl_rule *r, uint32_t key, const char *name, bool prefix, uint32_t op)
{
  char buf[IFNAMSIZ] = { 0 };
  size_t l = strnlen (name, IFNAMSIZ - 1);
  memcpy (buf, name, l);
  e_meta (r, key);
  e_cmp (r, op, buf, prefix ? (uint32_t) l : IFNAMSIZ);
}

static void
m_u8 (struct nftnl_rule *r, uint32_t meta_key, uint8_t v)
{
  e_meta (r, meta_key);
  e_cmp (r, NFT_CMP_EQ, &v, 1);
}

/* Loads ip/ip6 saddr or daddr, after checking the family. */
static void
m_addr_load (struct nftnl_rule *r, int family, bool dst)
{
  m_u8 (r, NFT_META_NFPROTO, family == AF_INET6 ? NFPROTO_IPV6 : NFPROTO_IPV4);
  if (family == AF_INET6)
    e_payload (r, NFT_PAYLOAD_NETWORK_HEADER, dst ? 24 : 8, 16);
  else
    e_payload (r, NFT_PAYLOAD_NETWORK_HEADER, dst ? 16 : 12, 4);
}

static void
m_addr_in_set (struct nftnl_rule *r, int family, bool dst, const char *set)
{
  m_addr_load (r, family, dst);
  e_lookup (r, set);
}

static void
m_addr_in_cidr (struct nftnl_rule *r, bool dst, const sbx_cidr *c)
{
  uint32_t len = cidr_width (c) / 8;
  m_addr_load (r, c->family, dst);
  if (c->prefix == 0)
    return;
  if (c->prefix < cidr_width (c))
    {
      sbx_cidr mask = { .family = c->family, .prefix = cidr_width (c) };
      memset (mask.addr, 0xff, len);
      mask.prefix = c->prefix;
      clear_host_bits (&mask);
      e_bitwise (r, mask.addr, len);
    }
  e_cmp (r, NFT_CMP_EQ, c->addr, len);
}

/* `ct state` is one of the states in MASK. */
static void
m_ct_state (struct nftnl_rule *r, uint32_t mask)
{
  uint32_t zero = 0;
  struct nftnl_expr *e = expr_add (r, "ct");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_CT_KEY, NFT_CT_STATE);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
  e_bitwise (r, &mask, sizeof mask);
  e_cmp (r, NFT_CMP_NEQ, &zero, sizeof zero);
}

static void
m_ct_established (struct nftnl_rule *r)
{
  m_ct_state (r, NF_CT_STATE_BIT (IP_CT_ESTABLISHED) | NF_CT_STATE_BIT (IP_CT_RELATED));
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

/* The transport header's byte at OFFSET (icmpv6 type) or port (dport). */
static void
m_th (struct nftnl_rule *r, uint32_t offset, const void *v, uint32_t len)
{
  e_payload (r, NFT_PAYLOAD_TRANSPORT_HEADER, offset, len);
  e_cmp (r, NFT_CMP_EQ, v, len);
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
  char *chain, *set4, *set6, *counter;
} names;

static void
names_init (names *nm, const char *sandbox_id)
{
  nm->chain = sbx_egress_chain_name (sandbox_id);
  nm->set4 = xasprintf ("%s-v4", nm->chain);
  nm->set6 = xasprintf ("%s-v6", nm->chain);
  nm->counter = xasprintf ("%s" COUNTER_SUFFIX, nm->chain);
}

static void
names_free (names *nm)
{
  free (nm->chain);
  free (nm->set4);
  free (nm->set6);
  free (nm->counter);
}
#define _cleanup_names_ __attribute__ ((cleanup (names_free)))

/* The sandbox's chain: the refused ranges first, whatever the state of the
 * connection; then the private ranges the operator did not open, as the
 * shared chain says (refused, or under observe counted here); then the
 * mode. Nothing here accepts established traffic on its own, so a
 * destination the new rules refuse is cut at once. */
static void
b_sandbox_rules (batch *b, const names *nm, sbx_egress_mode mode)
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

static int
apply_once (const char *table, const names *nm, const char *ifname, const sbx_egress_source *src,
            sbx_egress_mode mode, const ranges *a4, const ranges *a6, sbx_error **err)
{
  _cleanup_nft_ nft n = { 0 };
  _cleanup_tstate_ tstate t = { .table = table, .target = nm->chain, .ifname = ifname };
  if (nft_open (&n, err) < 0)
    return -1;
  int r = tstate_read (&n, &t, err);
  if (r != 0)
    return r;
  if (!strv_has (t.chains, CHAIN_FORWARD))
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "nftables table inet %s is not set up (no forward chain)",
                          table);
  if (!strv_has (t.chains, CHAIN_PRIVATE) || !strv_has (t.chains, CHAIN_SOURCE))
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0,
                          "nftables table inet %s was set up by an older sbx (no " CHAIN_PRIVATE " or " CHAIN_SOURCE
                          " chain)",
                          table);

  _cleanup_batch_ batch b = { 0 };
  batch_start (&b, &n, table, (1 << 16) + (a4->n + a6->n + 1) * 256, &t.genid);
  b_forward_cleanup (&b, &t, ifname);
  b_chain (&b, nm->chain, NULL, 0, 0);
  b_rule_del (&b, nm->chain, NULL);
  b_interval_set (&b, nm->set4, AF_INET, a4);
  b_interval_set (&b, nm->set6, AF_INET6, a6);
  b_counter (&b, nm->counter);
  b_sandbox_rules (&b, nm, mode);
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
  return c->family == family && cidr_valid (c) && c->prefix == cidr_width (c);
}

int
sbx_egress_apply (const char *table, const char *sandbox_id, const char *ifname, const sbx_egress_source *src,
                  sbx_egress_mode mode, const sbx_cidr *allow, size_t nallow, sbx_error **err)
{
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
      if (!cidr_valid (&allow[i]))
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
      int r = apply_once (table, &nm, ifname, src, mode, &a4, &a6, err);
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
