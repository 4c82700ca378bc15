/* What sbx's table holds now (see egress-internal.h): its chains, sets and
 * counters, and the forward and source rules of one sandbox or interface,
 * read under one ruleset generation so that a batch built from them applies
 * only to the ruleset they describe. */
#include "config.h"
#include "egress-internal.h"
#include "util.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netlink.h>

void
tstate_free (tstate *t)
{
  strv_free (t->chains);
  strv_free (t->sets);
  strv_free (t->counters);
  free (t->handles);
  free (t->rule_ifnames);
  free (t->src_handles);
}

bool
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
  const void *u = nftnl_rule_is_set (r, NFTNL_RULE_USERDATA) ? nftnl_rule_get_data (r, NFTNL_RULE_USERDATA, &len)
                                                             : NULL;
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
int
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
int
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
