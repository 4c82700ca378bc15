/* The nftables plumbing (see nft.h): libnftnl messages over a libmnl
 * socket, batched into one nf_tables transaction per call. */
#include "config.h"
#include "nft.h"
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

#define NL_BUFSZ (1u << 16)

/* ---- Intervals ---- */

static void
range_of (const sbx_cidr *c, range *r)
{
  memset (r, 0, sizeof *r);
  memcpy (r->lo, c->addr, sbx_cidr_width (c) / 8);
  memcpy (r->hi, c->addr, sbx_cidr_width (c) / 8);
  for (unsigned bit = c->prefix; bit < sbx_cidr_width (c); bit++)
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
size_t
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

void
ranges_push (ranges *rs, const sbx_cidr *c)
{
  rs->v = xrealloc (rs->v, (rs->n + 1) * sizeof *rs->v);
  range_of (c, &rs->v[rs->n++]);
}

void
ranges_freep (ranges *rs)
{
  free (rs->v);
}

/* ---- Netlink ---- */

void
nft_close (nft *n)
{
  if (n->nl)
    mnl_socket_close (n->nl);
  free (n->buf);
  n->nl = NULL;
  n->buf = NULL;
}

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

int
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

struct nlmsghdr *
req_hdr (nft *n, char *buf, uint16_t type, uint16_t family, uint16_t flags)
{
  return nftnl_nlmsg_build_hdr (buf, type, family, flags, ++n->seq);
}

/* Sends the request NLH and runs CB on each answer until the end of the
 * dump (or the ack). Returns 1 when the ruleset changed during the dump. */
int
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

int
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

/* ---- Batches ---- */

void
batch_free (batch *b)
{
  if (b->b)
    mnl_nlmsg_batch_stop (b->b);
  free (b->buf);
  for (size_t i = 0; i < b->nwhat; i++)
    free (b->what[i]);
  free (b->what);
}

/* LIMIT: the most the messages may take; the buffer holds twice that, as
 * libmnl asks, so that the message that crosses it is still whole. */
void
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

struct nlmsghdr *
batch_msg (batch *b, uint16_t type, uint16_t flags)
{
  return nftnl_nlmsg_build_hdr (mnl_nlmsg_batch_current (b->b), type, NFPROTO_INET, flags | NLM_F_ACK, ++b->seq);
}

void
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

void
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
int
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

void
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
void
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

void
b_chain_del (batch *b, const char *name)
{
  _cleanup_nftnl_ (nftnl_chain) struct nftnl_chain *c = chain_new (b, name);
  nftnl_chain_nlmsg_build_payload (batch_msg (b, NFT_MSG_DELCHAIN, 0), c);
  batch_next (b, "delete chain %s", name);
}

struct nftnl_rule *
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
void
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

void
b_rule_add (batch *b, struct nftnl_rule *r, const char *what)
{
  nftnl_rule_nlmsg_build_payload (batch_msg (b, NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND), r);
  batch_next (b, "add rule to chain %s (%s)", nftnl_rule_get_str (r, NFTNL_RULE_CHAIN), what);
}

struct nftnl_set *
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
void
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
void
b_set_flush (batch *b, const char *name)
{
  struct nlmsghdr *nlh = batch_msg (b, NFT_MSG_DELSETELEM, 0);
  mnl_attr_put_strz (nlh, NFTA_SET_ELEM_LIST_TABLE, b->table);
  mnl_attr_put_strz (nlh, NFTA_SET_ELEM_LIST_SET, name);
  batch_next (b, "flush set %s", name);
}

void
b_set_del (batch *b, const char *name)
{
  _cleanup_nftnl_ (nftnl_set) struct nftnl_set *s = set_new (b, name);
  nftnl_set_nlmsg_build_payload (batch_msg (b, NFT_MSG_DELSET, 0), s);
  batch_next (b, "delete set %s", name);
}

void
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
void
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
void
b_counter (batch *b, const char *name)
{
  _cleanup_nftnl_ (nftnl_obj) struct nftnl_obj *o = counter_new (b, name);
  nftnl_obj_nlmsg_build_payload (batch_msg (b, NFT_MSG_NEWOBJ, NLM_F_CREATE), o);
  batch_next (b, "create counter %s", name);
}

void
b_counter_del (batch *b, const char *name)
{
  _cleanup_nftnl_ (nftnl_obj) struct nftnl_obj *o = counter_new (b, name);
  nftnl_obj_nlmsg_build_payload (batch_msg (b, NFT_MSG_DELOBJ, 0), o);
  batch_next (b, "delete counter %s", name);
}

/* ---- Rule expressions ---- */

struct nftnl_expr *
expr_add (struct nftnl_rule *r, const char *name)
{
  struct nftnl_expr *e = nftnl_expr_alloc (name);
  if (e == NULL)
    abort ();
  nftnl_rule_add_expr (r, e);
  return e;
}

void
e_meta (struct nftnl_rule *r, uint32_t key)
{
  struct nftnl_expr *e = expr_add (r, "meta");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_META_KEY, key);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_META_DREG, NFT_REG_1);
}

void
e_cmp (struct nftnl_rule *r, uint32_t op, const void *data, uint32_t len)
{
  struct nftnl_expr *e = expr_add (r, "cmp");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_CMP_OP, op);
  nftnl_expr_set (e, NFTNL_EXPR_CMP_DATA, data, len);
}

void
e_payload (struct nftnl_rule *r, uint32_t base, uint32_t offset, uint32_t len)
{
  struct nftnl_expr *e = expr_add (r, "payload");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_PAYLOAD_DREG, NFT_REG_1);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_PAYLOAD_BASE, base);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_PAYLOAD_LEN, len);
}

void
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

struct nftnl_expr *
e_lookup (struct nftnl_rule *r, const char *set)
{
  struct nftnl_expr *e = expr_add (r, "lookup");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_LOOKUP_SREG, NFT_REG_1);
  nftnl_expr_set_str (e, NFTNL_EXPR_LOOKUP_SET, set);
  return e;
}

/* Matches when the register is NOT in SET. */
void
e_lookup_not (struct nftnl_rule *r, const char *set)
{
  nftnl_expr_set_u32 (e_lookup (r, set), NFTNL_EXPR_LOOKUP_FLAGS, NFT_LOOKUP_F_INV);
}

/* `counter name NAME`: counts into the table's named counter. */
void
e_counter_ref (struct nftnl_rule *r, const char *name)
{
  struct nftnl_expr *e = expr_add (r, "objref");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_OBJREF_IMM_TYPE, NFT_OBJECT_COUNTER);
  nftnl_expr_set_str (e, NFTNL_EXPR_OBJREF_IMM_NAME, name);
}

/* NF_ACCEPT, NF_DROP, or NFT_JUMP / NFT_GOTO to CHAIN. */
void
e_verdict (struct nftnl_rule *r, int verdict, const char *chain)
{
  struct nftnl_expr *e = expr_add (r, "immediate");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_IMM_VERDICT, (uint32_t) verdict);
  if (chain)
    nftnl_expr_set_str (e, NFTNL_EXPR_IMM_CHAIN, chain);
}

void
e_reject (struct nftnl_rule *r, uint32_t type, uint8_t code)
{
  struct nftnl_expr *e = expr_add (r, "reject");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_REJECT_TYPE, type);
  nftnl_expr_set_u8 (e, NFTNL_EXPR_REJECT_CODE, code);
}

/* iifname/oifname: the whole name, or with PREFIX its first bytes ("sbx*"). */
void
m_ifname (struct nftnl_rule *r, uint32_t key, const char *name, bool prefix, uint32_t op)
{
  char buf[IFNAMSIZ] = { 0 };
  size_t l = strnlen (name, IFNAMSIZ - 1);
  memcpy (buf, name, l);
  e_meta (r, key);
  e_cmp (r, op, buf, prefix ? (uint32_t) l : IFNAMSIZ);
}

void
m_u8 (struct nftnl_rule *r, uint32_t meta_key, uint8_t v)
{
  e_meta (r, meta_key);
  e_cmp (r, NFT_CMP_EQ, &v, 1);
}

/* Loads ip/ip6 saddr or daddr, after checking the family. */
void
m_addr_load (struct nftnl_rule *r, int family, bool dst)
{
  m_u8 (r, NFT_META_NFPROTO, family == AF_INET6 ? NFPROTO_IPV6 : NFPROTO_IPV4);
  if (family == AF_INET6)
    e_payload (r, NFT_PAYLOAD_NETWORK_HEADER, dst ? 24 : 8, 16);
  else
    e_payload (r, NFT_PAYLOAD_NETWORK_HEADER, dst ? 16 : 12, 4);
}

void
m_addr_in_set (struct nftnl_rule *r, int family, bool dst, const char *set)
{
  m_addr_load (r, family, dst);
  e_lookup (r, set);
}

void
m_addr_in_cidr (struct nftnl_rule *r, bool dst, const sbx_cidr *c)
{
  uint32_t len = sbx_cidr_width (c) / 8;
  m_addr_load (r, c->family, dst);
  if (c->prefix == 0)
    return;
  if (c->prefix < sbx_cidr_width (c))
    {
      sbx_cidr mask = { .family = c->family, .prefix = sbx_cidr_width (c) };
      memset (mask.addr, 0xff, len);
      mask.prefix = c->prefix;
      sbx_cidr_clear_host_bits (&mask);
      e_bitwise (r, mask.addr, len);
    }
  e_cmp (r, NFT_CMP_EQ, c->addr, len);
}

/* `ct state` is one of the states in MASK. */
void
m_ct_state (struct nftnl_rule *r, uint32_t mask)
{
  uint32_t zero = 0;
  struct nftnl_expr *e = expr_add (r, "ct");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_CT_KEY, NFT_CT_STATE);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
  e_bitwise (r, &mask, sizeof mask);
  e_cmp (r, NFT_CMP_NEQ, &zero, sizeof zero);
}

void
m_ct_established (struct nftnl_rule *r)
{
  m_ct_state (r, NF_CT_STATE_BIT (IP_CT_ESTABLISHED) | NF_CT_STATE_BIT (IP_CT_RELATED));
}

/* The transport header's byte at OFFSET (icmpv6 type) or port (dport). */
void
m_th (struct nftnl_rule *r, uint32_t offset, const void *v, uint32_t len)
{
  e_payload (r, NFT_PAYLOAD_TRANSPORT_HEADER, offset, len);
  e_cmp (r, NFT_CMP_EQ, v, len);
}

void
m_ct_mark (struct nftnl_rule *r, uint32_t mark)
{
  struct nftnl_expr *e = expr_add (r, "ct");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_CT_KEY, NFT_CT_MARK);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
  e_cmp (r, NFT_CMP_EQ, &mark, sizeof mark);
}

void
e_ct_mark_set (struct nftnl_rule *r, uint32_t mark)
{
  struct nftnl_expr *imm = expr_add (r, "immediate");
  nftnl_expr_set_u32 (imm, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
  nftnl_expr_set (imm, NFTNL_EXPR_IMM_DATA, &mark, sizeof mark);
  struct nftnl_expr *e = expr_add (r, "ct");
  nftnl_expr_set_u32 (e, NFTNL_EXPR_CT_KEY, NFT_CT_MARK);
  nftnl_expr_set_u32 (e, NFTNL_EXPR_CT_SREG, NFT_REG_1);
}

void
set_add_timed (struct nftnl_set *s, const void *key, size_t len, uint64_t timeout_ms, const char *comment)
{
  struct nftnl_set_elem *e = nftnl_set_elem_alloc ();
  if (e == NULL)
    abort ();
  nftnl_set_elem_set (e, NFTNL_SET_ELEM_KEY, key, (uint32_t) len);
  if (timeout_ms)
    nftnl_set_elem_set_u64 (e, NFTNL_SET_ELEM_TIMEOUT, timeout_ms);
  if (comment)
    {
      struct nftnl_udata_buf *u = nftnl_udata_buf_alloc (NFT_USERDATA_MAXLEN);
      if (u == NULL || !nftnl_udata_put_strz (u, NFTNL_UDATA_SET_ELEM_COMMENT, comment))
        abort ();
      nftnl_set_elem_set (e, NFTNL_SET_ELEM_USERDATA, nftnl_udata_buf_data (u), nftnl_udata_buf_len (u));
      nftnl_udata_buf_free (u);
    }
  nftnl_set_elem_add (s, e);
}
