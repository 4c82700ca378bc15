/* Unit tests of the egress rules (src/lib/egress.c).
 *
 * As root (the CIDR parser is tested in test-cidr.c), a throwaway table
 * with a random name, read back with `nft -j`: the shared chains and sets,
 * a sandbox in allow, block and open mode, a failed apply that leaves
 * nothing behind, removal, listing, the shared private/open sets, observe,
 * the per-sandbox counter. Last, real traffic: a sandbox namespace and an
 * "internet" namespace joined through a host namespace (all three
 * throwaway) that runs the rules, proving what connects and what does not
 * (IPv4 and IPv6), that an established connection is cut when its
 * destination becomes refused, and what operator-opened ranges and observe
 * mode change for private destinations and what they never change. */
#include "config.h"
#include "egress.h"
#include "json.h"
#include "tap.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

/* ---- Helpers for the root part ---- */

static int sh (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
static int
sh (const char *fmt, ...)
{
  va_list ap;
  char *cmd = NULL;
  va_start (ap, fmt);
  if (vasprintf (&cmd, fmt, ap) < 0)
    abort ();
  va_end (ap);
  int r = system (cmd);
  free (cmd);
  return r == -1 ? -1 : WIFEXITED (r) ? WEXITSTATUS (r) : 128;
}

static char *
capture (const char *cmd)
{
  FILE *f = popen (cmd, "r");
  if (f == NULL)
    return NULL;
  size_t len = 0, cap = 4096;
  char *out = xmalloc (cap);
  size_t n;
  while ((n = fread (out + len, 1, cap - len - 1, f)) > 0)
    {
      len += n;
      if (cap - len < 1024)
        out = xrealloc (out, cap *= 2);
    }
  out[len] = '\0';
  if (pclose (f) != 0)
    {
      free (out);
      return NULL;
    }
  return out;
}

/* `nft -j list table inet T`, parsed; NULL when there is no such table. */
static yajl_val
ruleset (const char *table)
{
  _cleanup_free_ char *cmd = xasprintf ("nft -j list table inet %s 2>/dev/null", table);
  _cleanup_free_ char *out = capture (cmd);
  yajl_val v = NULL;
  if (out == NULL || j_parse (out, strlen (out), 64 << 20, "nft -j", &v, NULL) < 0)
    return NULL;
  return v;
}

/* The object of KIND ("set", "chain") named NAME, or NULL. */
static yajl_val
rs_find (yajl_val rs, const char *kind, const char *name)
{
  yajl_val items = j_get (rs, "nftables");
  for (size_t i = 0; items && YAJL_IS_ARRAY (items) && i < items->u.array.len; i++)
    {
      yajl_val o = j_get (items->u.array.values[i], kind);
      const char *n = NULL;
      if (o && j_get_str (o, "name", false, &n, NULL) == 0 && n && strcmp (n, name) == 0)
        return o;
    }
  return NULL;
}

/* The rules of CHAIN, each its "expr" array as compact JSON. */
static char **
rs_rules (yajl_val rs, const char *chain)
{
  char **v = xmalloc0 (sizeof (char *));
  yajl_val items = j_get (rs, "nftables");
  for (size_t i = 0; items && YAJL_IS_ARRAY (items) && i < items->u.array.len; i++)
    {
      yajl_val o = j_get (items->u.array.values[i], "rule");
      const char *c = NULL;
      if (!o || j_get_str (o, "chain", false, &c, NULL) < 0 || !c || strcmp (c, chain) != 0)
        continue;
      _cleanup_yajl_gen_ yajl_gen g = j_new (false);
      j_val (g, j_get (o, "expr"));
      _cleanup_free_ char *s = j_take (g, NULL);
      strv_push (&v, s);
    }
  return v;
}

/* Whether S contains every one of the NULL-terminated fragments. */
static bool
has_all (const char *s, ...)
{
  va_list ap;
  bool ok = s != NULL;
  va_start (ap, s);
  for (const char *f = va_arg (ap, const char *); f; f = va_arg (ap, const char *))
    ok = ok && strstr (s, f) != NULL;
  va_end (ap);
  return ok;
}

/* A set's elements, addresses in sbx_cidr_format's form, others as they are. */
static char **
rs_elems (yajl_val rs, const char *set)
{
  char **v = xmalloc0 (sizeof (char *));
  yajl_val s = rs_find (rs, "set", set), el = s ? j_get (s, "elem") : NULL;
  for (size_t i = 0; el && YAJL_IS_ARRAY (el) && i < el->u.array.len; i++)
    {
      yajl_val e = el->u.array.values[i], p = j_get (e, "prefix"), range = j_get (e, "range");
      _cleanup_free_ char *text = NULL;
      if (YAJL_IS_STRING (e))
        text = xstrdup (YAJL_GET_STRING (e));
      else if (p)
        {
          const char *a = NULL;
          int64_t len = -1;
          j_get_str (p, "addr", false, &a, NULL);
          j_get_int (p, "len", false, &len, NULL);
          text = xasprintf ("%s/%lld", a ? a : "?", (long long) len);
        }
      else if (range && YAJL_IS_ARRAY (range) && range->u.array.len == 2)
        text = xasprintf ("%s-%s", YAJL_GET_STRING (range->u.array.values[0]),
                          YAJL_GET_STRING (range->u.array.values[1]));
      else
        text = xstrdup ("?");
      sbx_cidr c;
      char buf[SBX_CIDR_STRLEN];
      if (sbx_cidr_parse (text, &c, NULL) == 0)
        {
          sbx_cidr_format (&c, buf);
          strv_push (&v, buf);
        }
      else
        strv_push (&v, text);
    }
  return v;
}

static bool
strv_has (char *const *v, const char *s)
{
  for (size_t i = 0; v && v[i]; i++)
    if (strcmp (v[i], s) == 0)
      return true;
  return false;
}

/* Whether the set holds exactly the EXPECTED (NULL-terminated) elements. */
static bool
elems_are (char *const *got, const char *const *expected)
{
  size_t n = 0;
  for (; expected[n]; n++)
    if (!strv_has (got, expected[n]))
      return false;
  return strv_len (got) == n;
}

static char *
strv_join (char *const *v)
{
  char *s = xstrdup ("");
  for (size_t i = 0; v && v[i]; i++)
    {
      char *t = xasprintf ("%s%s%s", s, i ? " " : "", v[i]);
      free (s);
      s = t;
    }
  return s;
}

static sbx_cidr
cidr (const char *s)
{
  sbx_cidr c;
  if (sbx_cidr_parse (s, &c, NULL) < 0)
    abort ();
  return c;
}

/* The sandbox's own addresses in every apply: those of the traffic tests'
 * sandbox namespace. */
static sbx_egress_source test_src;

static const char *
errmsg (const sbx_error *e)
{
  return e && e->msg ? e->msg : "";
}

static char *test_table;

static void
drop_test_table (void)
{
  if (test_table)
    sh ("nft delete table inet %s 2>/dev/null", test_table);
}

/* ---- The ruleset, read back ---- */

static void
test_ruleset (void)
{
  _cleanup_free_ char *hex = random_hex (4);
  _cleanup_free_ char *table = xasprintf ("sbxtest%s", hex);
  _cleanup_free_ char *pfx = xasprintf ("st%.6s", hex);
  _cleanup_free_ char *ifa = xasprintf ("%sa", pfx), *ifb = xasprintf ("%sb", pfx), *ifc = xasprintf ("%sc", pfx);
  test_table = table;
  sbx_cidr opened[] = { cidr ("10.9.0.0/16"), cidr ("fd12::/16") };
  sbx_egress_pool pool = { .v4 = cidr ("198.18.0.0/24"),
                           .v6 = cidr ("2001:db8:5b::/64"),
                           .ifprefix = pfx,
                           .dns = true,
                           .gateway4 = cidr ("198.18.0.1/32"),
                           .open = opened,
                           .nopen = ARRAY_SIZE (opened) };
  _cleanup_error_ sbx_error *err = NULL;
  int r;

  r = sbx_egress_init (table, &pool, &err);
  tap_ok (r == 0, "init table inet %s (%s)", table, r ? errmsg (err) : "ok");
  r = sbx_egress_init (table, &pool, &err);
  tap_ok (r == 0, "init again: idempotent (%s)", r ? errmsg (err) : "ok");
  _cleanup_yajl_val_ yajl_val rs = ruleset (table);
  tap_ok (rs != NULL, "nft -j list table inet %s reads back", table);
  bool chains = true;
  static const char *const base[] = { "refuse", "forward", "inbound", "input", "postrouting" };
  for (size_t i = 0; i < ARRAY_SIZE (base); i++)
    chains = chains && rs_find (rs, "chain", base[i]);
  tap_ok (chains && rs_find (rs, "chain", "private") && rs_find (rs, "set", "refused4")
              && rs_find (rs, "set", "refused6") && rs_find (rs, "set", "private4") && rs_find (rs, "set", "private6")
              && rs_find (rs, "set", "open4") && rs_find (rs, "set", "open6") && rs_find (rs, "set", "dns-ifnames"),
          "shared chains refuse, forward, inbound, input, postrouting, private and sets refused4/6, private4/6, "
          "open4/6, dns-ifnames");
  yajl_val fwd = rs_find (rs, "chain", "forward"), in = rs_find (rs, "chain", "input");
  const char *hook = NULL, *policy = NULL;
  j_get_str (fwd, "hook", false, &hook, NULL);
  j_get_str (fwd, "policy", false, &policy, NULL);
  tap_ok (hook && strcmp (hook, "forward") == 0 && policy && strcmp (policy, "accept") == 0,
          "forward: hook forward, policy accept");
  hook = NULL;
  j_get_str (in, "hook", false, &hook, NULL);
  tap_ok (hook && strcmp (hook, "input") == 0, "input: hook input");
  yajl_val srcc = rs_find (rs, "chain", "source");
  hook = NULL;
  long long prio = 0;
  j_get_str (srcc, "hook", false, &hook, NULL);
  yajl_val pv = j_get (srcc, "prio");
  if (pv && YAJL_IS_INTEGER (pv))
    prio = YAJL_GET_INTEGER (pv);
  _cleanup_strv_ char **src0 = rs_rules (rs, "source");
  tap_ok (hook && strcmp (hook, "prerouting") == 0 && prio == -300 && strv_len (src0) == 0,
          "source: hook prerouting, priority raw (-300), no rules before a sandbox");

  static const char *const want4[] = {
    "0.0.0.0/8", "127.0.0.0/8", "168.63.129.16/32", "169.254.0.0/16", "192.0.0.0/24", "198.18.0.0/24", NULL
  };
  _cleanup_strv_ char **r4 = rs_elems (rs, "refused4");
  _cleanup_free_ char *r4s = strv_join (r4);
  tap_ok (elems_are (r4, want4), "refused4: metadata, loopback, 0/8 and the pool, no private range (%s)", r4s);
  _cleanup_strv_ char **r6 = rs_elems (rs, "refused6");
  _cleanup_free_ char *r6s = strv_join (r6);
  tap_ok (strv_has (r6, "::1/128") && strv_has (r6, "fe80::/10") && strv_has (r6, "fd00:ec2::254/128")
              && strv_has (r6, "2001:db8:5b::/64") && strv_has (r6, "::ffff:169.254.0.0/112")
              && strv_has (r6, "64:ff9b::a9fe:0/112") && strv_has (r6, "::ffff:198.18.0.0/120")
              && !strv_has (r6, "fc00::/7") && !strv_has (r6, "::ffff:10.0.0.0/104"),
          "refused6: loopback, link-local, AWS metadata, the pools, the refused IPv4 ranges as v4-mapped and "
          "NAT64; not ULA (%s)",
          r6s);
  static const char *const wantp4[] = { "10.0.0.0/8", "100.64.0.0/10", "172.16.0.0/12", "192.168.0.0/16", NULL };
  _cleanup_strv_ char **p4 = rs_elems (rs, "private4"), **p6 = rs_elems (rs, "private6");
  _cleanup_free_ char *p4s = strv_join (p4), *p6s = strv_join (p6);
  tap_ok (elems_are (p4, wantp4), "private4: 10/8, 100.64/10, 172.16/12, 192.168/16 (%s)", p4s);
  tap_ok (strv_len (p6) == 9 && strv_has (p6, "fc00::/7") && strv_has (p6, "::ffff:10.0.0.0/104")
              && strv_has (p6, "64:ff9b::a00:0/104") && strv_has (p6, "::ffff:192.168.0.0/112")
              && strv_has (p6, "64:ff9b::6440:0/106"),
          "private6: ULA, and the private IPv4 ranges as v4-mapped and NAT64 (%s)", p6s);
  static const char *const wanto4[] = { "10.9.0.0/16", NULL };
  static const char *const wanto6[] = { "fd12::/16", "::ffff:10.9.0.0/112", "64:ff9b::a09:0/112", NULL };
  _cleanup_strv_ char **o4 = rs_elems (rs, "open4"), **o6 = rs_elems (rs, "open6");
  _cleanup_free_ char *o6s = strv_join (o6);
  tap_ok (elems_are (o4, wanto4) && elems_are (o6, wanto6),
          "open4/open6: the opened destinations, IPv4 also as v4-mapped and NAT64 (%s)", o6s);
  _cleanup_strv_ char **priv = rs_rules (rs, "private");
  tap_ok (strv_len (priv) == 2
              && has_all (priv[0], "\"ip\"", "@private4", "\"!=\"", "@open4", "\"goto\":{\"target\":\"refuse\"}", NULL)
              && has_all (priv[1], "\"ip6\"", "@private6", "\"!=\"", "@open6", "\"goto\":{\"target\":\"refuse\"}",
                          NULL),
          "private: private destinations not opened are refused");

  _cleanup_strv_ char **input = rs_rules (rs, "input");
  size_t ninput = strv_len (input);
  tap_ok (ninput == 10 && has_all (input[0], "\"established\"", "\"accept\"", NULL)
              && has_all (input[3], "@dns-ifnames", "198.18.0.1",
                          "\"fib\":{\"result\":\"type\",\"flags\":[\"daddr\",\"iif\"]}", "\"local\"", "53", "udp", NULL)
              && has_all (input[7], "@dns-ifnames", "\"local\"", "\"icmp\"", "echo-request", "\"accept\"", NULL)
              && has_all (input[8], "@dns-ifnames", "\"local\"", "\"icmpv6\"", "echo-request", "\"accept\"", NULL)
              && has_all (input[9], "\"goto\":{\"target\":\"refuse\"}", pfx, NULL),
          "input: replies, neighbour discovery, DNS and ping to the gateway on the interface it came in by, then "
          "the rest refused (%zu rules)",
          ninput);
  _cleanup_strv_ char **inbound = rs_rules (rs, "inbound");
  tap_ok (strv_len (inbound) == 2 && has_all (inbound[0], "oifname", "\"established\"", "\"accept\"", NULL)
              && has_all (inbound[1], "oifname", "\"goto\"", "\"refuse\"", NULL),
          "inbound: only replies into sandbox interfaces");
  _cleanup_strv_ char **post = rs_rules (rs, "postrouting");
  tap_ok (strv_len (post) == 2 && has_all (post[0], "198.18.0.0", "\"!=\"", "masquerade", NULL)
              && has_all (post[1], "2001:db8:5b::", "masquerade", NULL),
          "postrouting: the pools masqueraded when leaving by a non-sandbox interface");
  _cleanup_strv_ char **refuse = rs_rules (rs, "refuse");
  tap_ok (strv_len (refuse) == 2 && has_all (refuse[0], "tcp reset", NULL)
              && has_all (refuse[1], "admin-prohibited", NULL),
          "refuse: tcp reset, else icmpx admin-prohibited");

  /* Allow mode. */
  sbx_cidr allow[] = { cidr ("203.0.113.0/24"), cidr ("203.0.113.128/25"), cidr ("198.51.100.7"),
                       cidr ("2001:db8:1::/48"), cidr ("10.1.2.0/24") };
  r = sbx_egress_apply (table, "t1", ifa, &test_src, SBX_EGRESS_ALLOW, allow, ARRAY_SIZE (allow), &err);
  tap_ok (r == 0, "apply allow to t1 (%s)", r ? errmsg (err) : "ok");
  yajl_tree_free (rs);
  rs = ruleset (table);
  tap_ok (rs_find (rs, "chain", "sandbox-t1") != NULL, "chain sandbox-t1 exists");
  static const char *const t1v4[] = { "10.1.2.0/24", "198.51.100.7/32", "203.0.113.0/24", NULL };
  static const char *const t1v6[] = { "2001:db8:1::/48", NULL };
  _cleanup_strv_ char **a4 = rs_elems (rs, "sandbox-t1-v4"), **a6 = rs_elems (rs, "sandbox-t1-v6");
  _cleanup_free_ char *a4s = strv_join (a4);
  tap_ok (elems_are (a4, t1v4), "sandbox-t1-v4 holds the IPv4 allow-list, merged (%s)", a4s);
  tap_ok (elems_are (a6, t1v6), "sandbox-t1-v6 holds the IPv6 allow-list");
  _cleanup_strv_ char **sb = rs_rules (rs, "sandbox-t1");
  static const char goto_refuse[] = "\"goto\":{\"target\":\"refuse\"}";
  static const char count_t1[] = "\"counter\":\"sandbox-t1-private\"";
  tap_ok (strv_len (sb) == 8 && has_all (sb[0], "\"ip\"", "\"daddr\"", "@refused4", goto_refuse, NULL)
              && has_all (sb[1], "\"ip6\"", "@refused6", goto_refuse, NULL)
              && strcmp (sb[2], "[{\"jump\":{\"target\":\"private\"}}]") == 0
              && has_all (sb[3], "@private4", "\"!=\"", "@open4", "\"new\"", count_t1, NULL)
              && has_all (sb[4], "@private6", "\"!=\"", "@open6", "\"new\"", count_t1, NULL)
              && has_all (sb[5], "@sandbox-t1-v4", "\"accept\"", NULL)
              && has_all (sb[6], "@sandbox-t1-v6", "\"accept\"", NULL)
              && strcmp (sb[7], "[{\"goto\":{\"target\":\"refuse\"}}]") == 0,
          "sandbox-t1: refused ranges first, then private (10.1.2.0/24 stays refused), new private connections "
          "counted, then the allow sets, then refuse");
  tap_ok (rs_find (rs, "counter", "sandbox-t1-private") != NULL, "counter sandbox-t1-private exists");
  uint64_t pk = 1;
  r = sbx_egress_private_count (table, "t1", &pk, &err);
  tap_ok (r == 0 && pk == 0, "private count of t1: 0 (%s)", r ? errmsg (err) : "ok");
  _cleanup_strv_ char **fw = rs_rules (rs, "forward");
  _cleanup_free_ char *want_iif = xasprintf ("\"right\":\"%s\"", ifa);
  tap_ok (strv_len (fw) == 1 && has_all (fw[0], "iifname", want_iif, "\"jump\":{\"target\":\"sandbox-t1\"}", NULL),
          "forward: iifname %s jump sandbox-t1", ifa);
  _cleanup_strv_ char **dns = rs_elems (rs, "dns-ifnames");
  tap_ok (strv_has (dns, ifa), "dns-ifnames holds %s", ifa);
  _cleanup_strv_ char **src = rs_rules (rs, "source");
  tap_ok (strv_len (src) == 3
              && has_all (src[0], want_iif, "\"ip\"", "\"saddr\"", "\"!=\"", "198.18.0.2", "\"drop\"", NULL)
              && has_all (src[1], want_iif, "\"ip6\"", "\"saddr\"", "\"!=\"", "2001:db8:5b::2", "\"::\"",
                          "fe80::", "\"drop\"", NULL)
              && has_all (src[2], want_iif, "\"ip6\"", "\"::\"", "\"!=\"", "ipv6-icmp", "\"drop\"", NULL),
          "source: %s drops IPv4 not from 198.18.0.2, IPv6 not from 2001:db8:5b::2, link-local or :: (ICMPv6 only)",
          ifa);

  /* init keeps the sandboxes. */
  r = sbx_egress_init (table, &pool, &err);
  tap_ok (r == 0, "init once more (%s)", r ? errmsg (err) : "ok");
  yajl_tree_free (rs);
  rs = ruleset (table);
  strv_free (fw);
  fw = rs_rules (rs, "forward");
  strv_free (dns);
  dns = rs_elems (rs, "dns-ifnames");
  strv_free (input);
  input = rs_rules (rs, "input");
  tap_ok (strv_len (fw) == 1 && strv_has (dns, ifa) && strv_len (input) == 10,
          "init again keeps sandbox jumps and DNS permissions, and does not duplicate its rules");

  /* Observe: the shared chain stops refusing; the sandboxes' chains stay. */
  pool.observe = true;
  r = sbx_egress_init (table, &pool, &err);
  yajl_tree_free (rs);
  rs = ruleset (table);
  strv_free (priv);
  priv = rs_rules (rs, "private");
  strv_free (sb);
  sb = rs_rules (rs, "sandbox-t1");
  tap_ok (r == 0 && rs_find (rs, "chain", "private") && strv_len (priv) == 0 && strv_len (sb) == 8
              && rs_find (rs, "counter", "sandbox-t1-private"),
          "init with observe: chain private is empty, sandbox-t1 and its counter unchanged (%s)",
          r ? errmsg (err) : "ok");
  pool.observe = false;
  pool.nopen = 0;
  r = sbx_egress_init (table, &pool, &err);
  yajl_tree_free (rs);
  rs = ruleset (table);
  strv_free (priv);
  priv = rs_rules (rs, "private");
  strv_free (o4);
  o4 = rs_elems (rs, "open4");
  strv_free (o6);
  o6 = rs_elems (rs, "open6");
  tap_ok (r == 0 && strv_len (priv) == 2 && strv_len (o4) == 0 && strv_len (o6) == 0,
          "init without observe or opened ranges: private refuses again, open4/open6 emptied (%s)",
          r ? errmsg (err) : "ok");
  sbx_cidr bad_open = cidr ("10.9.0.0/16");
  bad_open.prefix = 8;
  pool.open = &bad_open;
  pool.nopen = 1;
  r = sbx_egress_init (table, &pool, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT, "an opened destination with host bits set is refused (%s)",
          r ? errmsg (err) : "accepted");
  pool.open = NULL;
  r = sbx_egress_init (table, &pool, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT, "nopen without an array is refused (%s)",
          r ? errmsg (err) : "accepted");
  pool.nopen = 0;

  /* Block replaces allow. */
  r = sbx_egress_apply (table, "t1", ifa, &test_src, SBX_EGRESS_BLOCK, NULL, 0, &err);
  tap_ok (r == 0, "apply block to t1 (%s)", r ? errmsg (err) : "ok");
  yajl_tree_free (rs);
  rs = ruleset (table);
  strv_free (a4);
  a4 = rs_elems (rs, "sandbox-t1-v4");
  strv_free (a6);
  a6 = rs_elems (rs, "sandbox-t1-v6");
  strv_free (sb);
  sb = rs_rules (rs, "sandbox-t1");
  tap_ok (strv_len (a4) == 0 && strv_len (a6) == 0, "block: the allow sets are emptied");
  tap_ok (strv_len (sb) == 6 && has_all (sb[0], "@refused4", NULL) && has_all (sb[1], "@refused6", NULL)
              && has_all (sb[2], "private", NULL) && has_all (sb[3], count_t1, NULL)
              && strcmp (sb[5], "[{\"goto\":{\"target\":\"refuse\"}}]") == 0,
          "block: sandbox-t1 refuses everything, nothing accepted");
  strv_free (fw);
  fw = rs_rules (rs, "forward");
  strv_free (dns);
  dns = rs_elems (rs, "dns-ifnames");
  tap_ok (strv_len (fw) == 1 && has_all (fw[0], want_iif, "sandbox-t1", NULL), "block: still one forward jump");
  tap_ok (!strv_has (dns, ifa), "block: no DNS for %s", ifa);

  /* Open, on a new interface. */
  r = sbx_egress_apply (table, "t1", ifb, &test_src, SBX_EGRESS_OPEN, NULL, 0, &err);
  tap_ok (r == 0, "apply open to t1 on %s (%s)", ifb, r ? errmsg (err) : "ok");
  yajl_tree_free (rs);
  rs = ruleset (table);
  strv_free (sb);
  sb = rs_rules (rs, "sandbox-t1");
  strv_free (fw);
  fw = rs_rules (rs, "forward");
  strv_free (dns);
  dns = rs_elems (rs, "dns-ifnames");
  _cleanup_free_ char *want_iif_b = xasprintf ("\"right\":\"%s\"", ifb);
  tap_ok (strv_len (sb) == 6 && has_all (sb[0], "@refused4", NULL) && has_all (sb[2], "private", NULL)
              && strcmp (sb[5], "[{\"accept\":null}]") == 0,
          "open: refused ranges, private, then accept");
  tap_ok (strv_len (fw) == 1 && has_all (fw[0], want_iif_b, "sandbox-t1", NULL),
          "open: the jump moved to %s, the old one is gone", ifb);
  tap_ok (strv_has (dns, ifb) && !strv_has (dns, ifa), "open: DNS for %s only", ifb);
  strv_free (src);
  src = rs_rules (rs, "source");
  tap_ok (strv_len (src) == 3 && has_all (src[0], want_iif_b, NULL) && has_all (src[1], want_iif_b, NULL)
              && has_all (src[2], want_iif_b, NULL),
          "open: the source check moved to %s, none left on %s", ifb, ifa);

  sbx_cidr one[] = { cidr ("1.1.1.1") };
  sbx_egress_source v4only = { .v4 = cidr ("198.18.0.6") }, wide_src = { .v4 = cidr ("198.18.0.4/30") };
  r = sbx_egress_apply (table, "t2", ifc, &wide_src, SBX_EGRESS_ALLOW, one, 1, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT, "a source that is not one address is refused (%s)",
          r ? errmsg (err) : "accepted");
  tap_ok (sbx_egress_apply (table, "t2", ifc, NULL, SBX_EGRESS_ALLOW, one, 1, &err) < 0
              && err->code == SBX_E_INVALID_ARGUMENT,
          "no source addresses: refused");
  r = sbx_egress_apply (table, "t2", ifc, &v4only, SBX_EGRESS_ALLOW, one, 1, &err);
  tap_ok (r == 0, "apply allow to t2 (%s)", r ? errmsg (err) : "ok");
  yajl_tree_free (rs);
  rs = ruleset (table);
  strv_free (src);
  src = rs_rules (rs, "source");
  tap_ok (strv_len (src) == 5 && has_all (src[3], ifc, "198.18.0.6", NULL)
              && has_all (src[4], ifc, "\"ipv6\"", "\"drop\"", NULL) && !strstr (src[4], "saddr"),
          "t2 without IPv6: its interface takes no IPv6 at all");
  _cleanup_strv_ char **ids = NULL;
  tap_ok (sbx_egress_list (table, &ids, &err) == 0 && strv_len (ids) == 2 && strcmp (ids[0], "t1") == 0
              && strcmp (ids[1], "t2") == 0,
          "list: t1 t2");

  /* A batch the kernel refuses leaves nothing half-made. */
  sh ("nft add set inet %s sandbox-t3-v4 '{ type ipv6_addr; flags interval; }'", table);
  r = sbx_egress_apply (table, "t3", pfx, &test_src, SBX_EGRESS_ALLOW, allow, ARRAY_SIZE (allow), &err);
  tap_ok (r < 0 && strstr (errmsg (err), "sandbox-t3-v4"), "apply refused by the kernel names the step: %s",
          r ? errmsg (err) : "ok");
  yajl_tree_free (rs);
  rs = ruleset (table);
  strv_free (fw);
  fw = rs_rules (rs, "forward");
  tap_ok (rs_find (rs, "chain", "sandbox-t3") == NULL && !rs_find (rs, "set", "sandbox-t3-v6") && strv_len (fw) == 2,
          "nothing of the refused batch is left (no chain, no v6 set, no jump)");
  sh ("nft delete set inet %s sandbox-t3-v4", table);

  /* Remove. */
  r = sbx_egress_remove (table, "t1", ifb, &err);
  tap_ok (r == 0, "remove t1 (%s)", r ? errmsg (err) : "ok");
  yajl_tree_free (rs);
  rs = ruleset (table);
  strv_free (fw);
  fw = rs_rules (rs, "forward");
  strv_free (dns);
  dns = rs_elems (rs, "dns-ifnames");
  tap_ok (!rs_find (rs, "chain", "sandbox-t1") && !rs_find (rs, "set", "sandbox-t1-v4")
              && !rs_find (rs, "set", "sandbox-t1-v6") && !rs_find (rs, "counter", "sandbox-t1-private")
              && strv_len (fw) == 1 && has_all (fw[0], "sandbox-t2", NULL)
              && rs_find (rs, "counter", "sandbox-t2-private") && !strv_has (dns, ifb),
          "remove: t1's chain, sets, counter, jump and DNS permission are gone; t2's stay");
  strv_free (src);
  src = rs_rules (rs, "source");
  tap_ok (strv_len (src) == 2 && has_all (src[0], ifc, NULL) && has_all (src[1], ifc, NULL),
          "remove: t1's source rules are gone, t2's stay");
  pk = 1;
  r = sbx_egress_private_count (table, "t1", &pk, &err);
  tap_ok (r == 0 && pk == 0, "private count of a removed sandbox: 0 (%s)", r ? errmsg (err) : "ok");
  tap_ok (sbx_egress_private_count (table, "../t1", &pk, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT,
          "private count of an invalid id is refused");

  /* A counter left on its own still names a sandbox. */
  sh ("nft add counter inet %s sandbox-t9-private", table);
  strv_free (ids);
  ids = NULL;
  tap_ok (sbx_egress_list (table, &ids, &err) == 0 && strv_len (ids) == 2 && strcmp (ids[1], "t9") == 0,
          "list: a sandbox with only a counter left is listed (t2 t9)");
  r = sbx_egress_remove (table, "t9", NULL, &err);
  yajl_tree_free (rs);
  rs = ruleset (table);
  tap_ok (r == 0 && !rs_find (rs, "counter", "sandbox-t9-private"), "remove t9: its lone counter is gone (%s)",
          r ? errmsg (err) : "ok");
  r = sbx_egress_remove (table, "t1", ifb, &err);
  tap_ok (r == 0, "remove t1 again: idempotent (%s)", r ? errmsg (err) : "ok");
  r = sbx_egress_remove (table, "t2", NULL, &err);
  tap_ok (r == 0, "remove t2 without its interface name (%s)", r ? errmsg (err) : "ok");
  yajl_tree_free (rs);
  rs = ruleset (table);
  strv_free (fw);
  fw = rs_rules (rs, "forward");
  strv_free (dns);
  dns = rs_elems (rs, "dns-ifnames");
  strv_free (ids);
  ids = NULL;
  strv_free (src);
  src = rs_rules (rs, "source");
  tap_ok (strv_len (fw) == 0 && strv_len (dns) == 0 && strv_len (src) == 0 && sbx_egress_list (table, &ids, &err) == 0
              && strv_len (ids) == 0,
          "nothing of any sandbox is left (t2's source rules found by their comment)");

  /* The longest lists: more elements than one netlink attribute holds. */
  sbx_cidr *many = xmalloc (SBX_EGRESS_ALLOW_MAX * sizeof *many);
  for (size_t i = 0; i < SBX_EGRESS_ALLOW_MAX; i++)
    {
      char a[SBX_CIDR_STRLEN];
      snprintf (a, sizeof a, "2001:db8:%zx::/48", i * 2);
      many[i] = cidr (a);
    }
  pool.open = many;
  pool.nopen = SBX_EGRESS_ALLOW_MAX;
  r = sbx_egress_init (table, &pool, &err);
  tap_ok (r == 0, "init with %d opened ranges (%s)", SBX_EGRESS_ALLOW_MAX, r ? errmsg (err) : "ok");
  if (r == 0)
    r = sbx_egress_apply (table, "t5", ifa, &test_src, SBX_EGRESS_ALLOW, many, SBX_EGRESS_ALLOW_MAX, &err);
  tap_ok (r == 0, "apply an allow-list of %d ranges (%s)", SBX_EGRESS_ALLOW_MAX, r ? errmsg (err) : "ok");
  yajl_tree_free (rs);
  rs = ruleset (table);
  strv_free (o6);
  o6 = rs_elems (rs, "open6");
  strv_free (a6);
  a6 = rs_elems (rs, "sandbox-t5-v6");
  tap_ok (strv_len (o6) == SBX_EGRESS_ALLOW_MAX && strv_len (a6) == SBX_EGRESS_ALLOW_MAX
              && strv_has (a6, "2001:db8:1ffe::/48"),
          "open6 and sandbox-t5-v6 hold all %d (%zu, %zu)", SBX_EGRESS_ALLOW_MAX, strv_len (o6), strv_len (a6));
  free (many);
  pool.open = NULL;
  pool.nopen = 0;
  r = sbx_egress_remove (table, "t5", ifa, &err) == 0 ? sbx_egress_init (table, &pool, &err) : -1;
  tap_ok (r == 0, "remove t5, init without opened ranges (%s)", r ? errmsg (err) : "ok");

  /* Bad input. */
  tap_ok (sbx_egress_apply (table, "t1", "bad/if", &test_src, SBX_EGRESS_OPEN, NULL, 0, &err) < 0
              && err->code == SBX_E_INVALID_ARGUMENT,
          "an invalid interface name is refused");
  tap_ok (sbx_egress_apply (table, "../x", ifa, &test_src, SBX_EGRESS_OPEN, NULL, 0, &err) < 0
              && err->code == SBX_E_INVALID_ARGUMENT,
          "an invalid sandbox id is refused");
  sbx_cidr wide = cidr ("10.0.0.0/8");
  wide.addr[3] = 1;
  tap_ok (sbx_egress_apply (table, "t1", ifa, &test_src, SBX_EGRESS_ALLOW, &wide, 1, &err) < 0
              && err->code == SBX_E_INVALID_ARGUMENT,
          "an allow entry with host bits set is refused");
  _cleanup_free_ char *missing = xasprintf ("%sx", table);
  r = sbx_egress_apply (missing, "t1", ifa, &test_src, SBX_EGRESS_OPEN, NULL, 0, &err);
  tap_ok (r < 0 && err->code == SBX_E_NOT_FOUND, "apply without init: NOT_FOUND (%s)", r ? errmsg (err) : "ok");

  tap_ok (sh ("nft delete table inet %s", table) == 0, "delete the test table");
  strv_free (ids);
  ids = NULL;
  uint64_t none = 1;
  tap_ok (sbx_egress_list (table, &ids, &err) == 0 && strv_len (ids) == 0
              && sbx_egress_remove (table, "t1", ifa, &err) == 0
              && sbx_egress_private_count (table, "t1", &none, &err) == 0 && none == 0,
          "no table: list is empty, remove succeeds, the private count is 0");
  _cleanup_free_ char *tables = capture ("nft list tables");
  tap_ok (tables && !strstr (tables, table), "nft list tables: no %s left", table);
  test_table = NULL;
}

/* Writers in parallel: a batch that loses the race (the ruleset changed
 * since it was read) is refused whole by the kernel and made again. */
static void
test_concurrent (void)
{
  _cleanup_free_ char *hex = random_hex (4);
  _cleanup_free_ char *table = xasprintf ("sbxtest%s", hex);
  _cleanup_free_ char *pfx = xasprintf ("sc%.6s", hex);
  sbx_egress_pool pool = { .v4 = cidr ("198.18.0.0/24"), .ifprefix = pfx };
  _cleanup_error_ sbx_error *err = NULL;
  test_table = table;
  int r = sbx_egress_init (table, &pool, &err);
  tap_ok (r == 0, "concurrency: init %s (%s)", table, r ? errmsg (err) : "ok");
  enum { WRITERS = 4, ROUNDS = 12 };
  pid_t pids[WRITERS];
  for (int k = 0; k < WRITERS; k++)
    if ((pids[k] = fork ()) == 0)
      {
        char id[16], ifn[16];
        snprintf (id, sizeof id, "c%d", k);
        snprintf (ifn, sizeof ifn, "%s%d", pfx, k);
        sbx_cidr a = cidr ("1.1.1.0/24");
        int bad = 0;
        for (int i = 0; i < ROUNDS; i++)
          {
            sbx_egress_mode mode = i % 3 == 0 ? SBX_EGRESS_BLOCK : i % 3 == 1 ? SBX_EGRESS_OPEN : SBX_EGRESS_ALLOW;
            bad += sbx_egress_apply (table, id, ifn, &test_src, mode, &a, 1, NULL) < 0;
            if (i % 4 == 3)
              bad += sbx_egress_remove (table, id, ifn, NULL) < 0;
          }
        bad += sbx_egress_apply (table, id, ifn, &test_src, SBX_EGRESS_ALLOW, &a, 1, NULL) < 0;
        _exit (bad ? 1 : 0);
      }
  int failed = 0;
  for (int k = 0; k < WRITERS; k++)
    {
      int st = 0;
      failed += pids[k] < 0 || waitpid (pids[k], &st, 0) < 0 || !WIFEXITED (st) || WEXITSTATUS (st) != 0;
    }
  tap_ok (failed == 0, "concurrency: %d writers, %d changes each, all applied", WRITERS, ROUNDS + ROUNDS / 4 + 1);
  _cleanup_yajl_val_ yajl_val rs = ruleset (table);
  _cleanup_strv_ char **fw = rs_rules (rs, "forward");
  _cleanup_strv_ char **ids = NULL;
  tap_ok (strv_len (fw) == WRITERS && sbx_egress_list (table, &ids, NULL) == 0 && strv_len (ids) == WRITERS,
          "concurrency: one jump and one chain per sandbox (%zu jumps)", strv_len (fw));
  /* Inits of two pools at once (two sbx.conf, two versions of sbx): each
   * deletes the other's marker chain; none may fail on a chain the other
   * deleted first. */
  for (int k = 0; k < WRITERS; k++)
    if ((pids[k] = fork ()) == 0)
      {
        sbx_egress_pool pk = pool;
        int bad = 0;
        for (int i = 0; i < ROUNDS; i++)
          {
            pk.observe = (i + k) % 2;
            bad += sbx_egress_init (table, &pk, NULL) < 0;
          }
        _exit (bad ? 1 : 0);
      }
  failed = 0;
  for (int k = 0; k < WRITERS; k++)
    {
      int st = 0;
      failed += pids[k] < 0 || waitpid (pids[k], &st, 0) < 0 || !WIFEXITED (st) || WEXITSTATUS (st) != 0;
    }
  tap_ok (failed == 0, "concurrency: %d processes init two pools in turn, %d times each, all succeed", WRITERS, ROUNDS);
  tap_ok (sh ("nft delete table inet %s", table) == 0, "concurrency: delete the test table");
  test_table = NULL;
}

/* ---- Real traffic ---- */

typedef struct netenv {
  char *h, *s, *w; /* namespace names: host, sandbox, world */
  int orig, hfd, sfd, wfd;
  pid_t servers[2];
} netenv;

static int
ns_open (const char *name)
{
  _cleanup_free_ char *p = xasprintf ("/run/netns/%s", name);
  return open (p, O_RDONLY | O_CLOEXEC);
}

static void
enter (int fd)
{
  if (setns (fd, CLONE_NEWNET) < 0)
    abort ();
}

/* A listening TCP socket on PORT, IPv4 or IPv6 only; -1 on failure. */
static int
listen_on (int family, uint16_t port)
{
  int one = 1, fd = socket (family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons (port) };
  struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons (port) };
  if (fd < 0)
    return -1;
  setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (family == AF_INET6)
    setsockopt (fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  bool ok = family == AF_INET6 ? bind (fd, (struct sockaddr *) &a6, sizeof a6) == 0
                               : bind (fd, (struct sockaddr *) &a4, sizeof a4) == 0;
  if (!ok || listen (fd, 16) < 0)
    {
      close (fd);
      return -1;
    }
  return fd;
}

/* A TCP server in namespace NSFD on PORTS, IPv4 and IPv6: says the peer's
 * address, then echoes. Returns once it listens. */
static pid_t
serve (int nsfd, const uint16_t *ports, size_t n)
{
  int ready[2];
  if (pipe2 (ready, O_CLOEXEC) < 0)
    return -1;
  pid_t pid = fork ();
  if (pid != 0)
    {
      char c = 0;
      close (ready[1]);
      bool ok = read (ready[0], &c, 1) == 1;
      close (ready[0]);
      return ok ? pid : -1;
    }
  prctl (PR_SET_PDEATHSIG, SIGKILL);
  enter (nsfd);
  signal (SIGCHLD, SIG_IGN);
  struct pollfd pf[8];
  size_t npf = 0;
  for (size_t i = 0; i < n && i < 4; i++)
    {
      int fd4 = listen_on (AF_INET, ports[i]), fd6 = listen_on (AF_INET6, ports[i]);
      if (fd4 < 0 || fd6 < 0)
        _exit (1);
      pf[npf++] = (struct pollfd){ .fd = fd4, .events = POLLIN };
      pf[npf++] = (struct pollfd){ .fd = fd6, .events = POLLIN };
    }
  if (write (ready[1], "r", 1) != 1)
    _exit (1);
  for (;;)
    {
      if (poll (pf, (nfds_t) npf, -1) < 0)
        continue;
      for (size_t i = 0; i < npf; i++)
        {
          if (!(pf[i].revents & POLLIN))
            continue;
          struct sockaddr_storage peer;
          socklen_t pl = sizeof peer;
          int c = accept4 (pf[i].fd, (struct sockaddr *) &peer, &pl, SOCK_CLOEXEC);
          if (c < 0)
            continue;
          if (fork () == 0)
            {
              prctl (PR_SET_PDEATHSIG, SIGKILL);
              char line[INET6_ADDRSTRLEN + 2], buf[512];
              if (peer.ss_family == AF_INET6)
                inet_ntop (AF_INET6, &((struct sockaddr_in6 *) &peer)->sin6_addr, line, sizeof line);
              else
                inet_ntop (AF_INET, &((struct sockaddr_in *) &peer)->sin_addr, line, sizeof line);
              strcat (line, "\n");
              write_all (c, line, strlen (line));
              ssize_t r;
              while ((r = read (c, buf, sizeof buf)) > 0)
                write_all (c, buf, (size_t) r);
              _exit (0);
            }
          close (c);
        }
    }
}

static int64_t
now_ms (void)
{
  return (int64_t) now_ms_monotonic ();
}

/* From the sandbox namespace to ADDR:PORT (IPv4 or IPv6) within 3 s: the
 * connected fd (the server's greeting read into PEER), or -errno. */
static int
dial (netenv *ne, const char *addr, uint16_t port, char *peer, size_t peerlen)
{
  bool v6 = strchr (addr, ':') != NULL;
  enter (ne->sfd);
  int fd = socket (v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  enter (ne->orig);
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons (port) };
  struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons (port) };
  if (fd < 0 || inet_pton (v6 ? AF_INET6 : AF_INET, addr, v6 ? (void *) &a6.sin6_addr : (void *) &a.sin_addr) != 1)
    {
      if (fd >= 0)
        close (fd);
      return -EINVAL;
    }
  int e = 0;
  int cr = v6 ? connect (fd, (struct sockaddr *) &a6, sizeof a6) : connect (fd, (struct sockaddr *) &a, sizeof a);
  if (cr < 0 && errno != EINPROGRESS)
    e = errno;
  struct pollfd p = { .fd = fd, .events = POLLOUT };
  if (!e && poll (&p, 1, 3000) != 1)
    e = ETIMEDOUT;
  socklen_t el = sizeof e;
  if (!e)
    getsockopt (fd, SOL_SOCKET, SO_ERROR, &e, &el);
  size_t got = 0;
  p.events = POLLIN;
  while (!e && got + 1 < peerlen && (got == 0 || peer[got - 1] != '\n'))
    {
      if (poll (&p, 1, 3000) != 1)
        e = ETIMEDOUT;
      else
        {
          ssize_t r = read (fd, peer + got, 1);
          if (r <= 0)
            e = r < 0 ? errno : ECONNRESET;
          else
            got++;
        }
    }
  if (e)
    {
      close (fd);
      return -e;
    }
  peer[got > 0 ? got - 1 : 0] = '\0';
  fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

/* Whether a connection to ADDR:PORT is refused at once (a reset). */
static bool
refused (netenv *ne, const char *addr, uint16_t port, int *ret_err)
{
  char peer[64];
  int64_t t0 = now_ms ();
  int fd = dial (ne, addr, port, peer, sizeof peer);
  if (fd >= 0)
    close (fd);
  *ret_err = fd >= 0 ? 0 : -fd;
  return fd == -ECONNREFUSED && now_ms () - t0 < 1500;
}

static bool
connects (netenv *ne, const char *addr, uint16_t port, char *peer, size_t peerlen)
{
  int fd = dial (ne, addr, port, peer, peerlen);
  if (fd < 0)
    snprintf (peer, peerlen, "%s", strerror (-fd));
  else
    close (fd);
  return fd >= 0;
}

static int
netenv_setup (netenv *ne, const char *pfx)
{
  _cleanup_free_ char *hex = random_hex (3);
  ne->h = xasprintf ("sbxt-h-%s", hex);
  ne->s = xasprintf ("sbxt-s-%s", hex);
  ne->w = xasprintf ("sbxt-w-%s", hex);
  ne->orig = open ("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  const char *h = ne->h, *s = ne->s, *w = ne->w;
  int r = sh ("set -e; exec >/dev/null 2>&1; ip netns add %s; ip netns add %s; ip netns add %s;"
              "for n in %s %s %s; do ip -n $n link set lo up; done;"
              "ip -n %s link add %s0 type veth peer name eth0 netns %s;"
              "ip -n %s link add wan0 type veth peer name eth0 netns %s;"
              "ip -n %s addr add 198.18.0.1/24 dev %s0; ip -n %s link set %s0 up;"
              "ip -n %s addr add 203.0.113.1/24 dev wan0; ip -n %s link set wan0 up;"
              "ip -n %s addr add 198.18.0.2/24 dev eth0; ip -n %s link set eth0 up;"
              "ip -n %s route add default via 198.18.0.1;"
              "for a in 203.0.113.2/24 203.0.113.3/24 192.168.77.1/32 169.254.169.254/32; do "
              "ip -n %s addr add $a dev eth0; done; ip -n %s link set eth0 up;"
              "ip -n %s route add 198.18.0.0/24 via 203.0.113.1;"
              "ip -n %s route add 192.168.77.1/32 via 203.0.113.2;"
              "ip -n %s route add 169.254.169.254/32 via 203.0.113.2;"
              "ip netns exec %s sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'",
              h, s, w, h, s, w, h, pfx, s, h, w, h, pfx, h, pfx, h, h, s, s, s, w, w, w, h, h, h);
  /* Private IPv4 destinations the operator may open, and IPv6: the pool
   * 2001:db8:5b::/64, the world 2001:db8:ff::/64 holding a ULA address and
   * AWS's metadata address. nodad: usable at once. */
  if (r == 0)
    r = sh ("set -e; exec >/dev/null 2>&1;"
            "for a in 10.77.0.1/32 10.78.0.1/32; do ip -n %s addr add $a dev eth0;"
            " ip -n %s route add $a via 203.0.113.2; done;"
            "ip -n %s addr add 2001:db8:5b::1/64 dev %s0 nodad;"
            "ip -n %s addr add 2001:db8:ff::1/64 dev wan0 nodad;"
            "ip -n %s addr add 2001:db8:5b::2/64 dev eth0 nodad;"
            "ip -n %s route add default via 2001:db8:5b::1;"
            "for a in 2001:db8:ff::2/64 2001:db8:ff::3/64 fd12::1/128 fd00:ec2::254/128; do"
            " ip -n %s addr add $a dev eth0 nodad; done;"
            "for a in fd12::1/128 fd00:ec2::254/128; do ip -n %s route add $a via 2001:db8:ff::2; done;"
            "ip -n %s route add 2001:db8:5b::/64 via 2001:db8:ff::1;"
            "ip netns exec %s sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/forwarding'",
            w, h, h, pfx, h, s, s, w, h, w, h);
  if (r != 0)
    return -1;
  ne->hfd = ns_open (h);
  ne->sfd = ns_open (s);
  ne->wfd = ns_open (w);
  if (ne->orig < 0 || ne->hfd < 0 || ne->sfd < 0 || ne->wfd < 0)
    return -1;
  static const uint16_t host_ports[] = { 8080, 53 }, world_ports[] = { 8080 };
  ne->servers[0] = serve (ne->hfd, host_ports, 2);
  ne->servers[1] = serve (ne->wfd, world_ports, 1);
  return ne->servers[0] > 0 && ne->servers[1] > 0 ? 0 : -1;
}

static void
netenv_teardown (netenv *ne)
{
  for (int i = 0; i < 2; i++)
    if (ne->servers[i] > 0)
      {
        kill (ne->servers[i], SIGKILL);
        waitpid (ne->servers[i], NULL, 0);
      }
  if (ne->orig >= 0)
    enter (ne->orig);
  int fds[] = { ne->orig, ne->hfd, ne->sfd, ne->wfd };
  for (size_t i = 0; i < ARRAY_SIZE (fds); i++)
    if (fds[i] >= 0)
      close (fds[i]);
  if (ne->h)
    sh ("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", ne->h, ne->s, ne->w);
  free (ne->h);
  free (ne->s);
  free (ne->w);
}

static socklen_t
sockaddr_of (const char *addr, uint16_t port, struct sockaddr_storage *ss)
{
  memset (ss, 0, sizeof *ss);
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *) ss;
  struct sockaddr_in *a4 = (struct sockaddr_in *) ss;
  if (strchr (addr, ':'))
    {
      a6->sin6_family = AF_INET6;
      a6->sin6_port = htons (port);
      inet_pton (AF_INET6, addr, &a6->sin6_addr);
      return sizeof *a6;
    }
  a4->sin_family = AF_INET;
  a4->sin_port = htons (port);
  inet_pton (AF_INET, addr, &a4->sin_addr);
  return sizeof *a4;
}

/* A UDP datagram from the sandbox namespace with source address SRC
 * (IP_TRANSPARENT binds any address, as a raw socket would forge it) to
 * DST:9999 in the world, where a socket waits: whether it arrived. */
static bool
udp_arrives (netenv *ne, const char *src, const char *dst)
{
  struct sockaddr_storage sa, da, any;
  socklen_t sl = sockaddr_of (src, 0, &sa), dl = sockaddr_of (dst, 9999, &da);
  bool v6 = da.ss_family == AF_INET6;
  int one = 1;
  sockaddr_of (v6 ? "::" : "0.0.0.0", 9999, &any);
  enter (ne->wfd);
  _cleanup_close_ int l = socket (da.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (v6)
    setsockopt (l, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  bool ok = l >= 0 && bind (l, (struct sockaddr *) &any, dl) == 0;
  enter (ne->sfd);
  _cleanup_close_ int fd = socket (da.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ok = ok && fd >= 0
       && setsockopt (fd, v6 ? SOL_IPV6 : SOL_IP, v6 ? IPV6_TRANSPARENT : IP_TRANSPARENT, &one, sizeof one) == 0
       && bind (fd, (struct sockaddr *) &sa, sl) == 0 && sendto (fd, "udp", 3, 0, (struct sockaddr *) &da, dl) == 3;
  enter (ne->orig);
  struct pollfd p = { .fd = l, .events = POLLIN };
  char buf[8];
  return ok && poll (&p, 1, 1000) == 1 && recv (l, buf, sizeof buf, 0) == 3;
}

/* A sandbox's interface takes only its own source addresses: forged ones
 * neither leave the host nor reach another sandbox's address. */
static void
test_forged_sources (netenv *ne)
{
  static const char *const forged[][2] = {
    { "203.0.113.99", "203.0.113.2" }, /* a reflection attack's victim */
    { "198.18.0.77", "203.0.113.2" },  /* another sandbox's address */
    { "2001:db8:ff::99", "2001:db8:ff::2" },
    { "2001:db8:5b::77", "2001:db8:ff::2" },
  };
  tap_ok (udp_arrives (ne, "198.18.0.2", "203.0.113.2") && udp_arrives (ne, "2001:db8:5b::2", "2001:db8:ff::2"),
          "source: UDP from the sandbox's own addresses (198.18.0.2, 2001:db8:5b::2) arrives");
  for (size_t i = 0; i < ARRAY_SIZE (forged); i++)
    tap_ok (!udp_arrives (ne, forged[i][0], forged[i][1]), "source: UDP forged from %s to %s is dropped", forged[i][0],
            forged[i][1]);
  /* The rule is what drops them: without it they go through. */
  sh ("ip netns exec %s nft flush chain inet sbx source", ne->h);
  bool all = true;
  for (size_t i = 0; i < ARRAY_SIZE (forged); i++)
    all = all && udp_arrives (ne, forged[i][0], forged[i][1]);
  tap_ok (all, "source: control, with chain source flushed the forged datagrams arrive");
}

/* An ICMP echo from the sandbox namespace to ADDR (an ICMP datagram
 * socket, as ping without CAP_NET_RAW) is answered within a second. */
static bool
pings (netenv *ne, const char *addr)
{
  struct sockaddr_storage da;
  socklen_t dl = sockaddr_of (addr, 0, &da);
  enter (ne->sfd);
  _cleanup_close_ int fd = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
  enter (ne->orig);
  uint8_t req[16] = { 8, 0, 0, 0, 0, 0, 0, 1 }, rep[256];
  if (fd < 0 || sendto (fd, req, sizeof req, 0, (struct sockaddr *) &da, dl) < 0)
    return false;
  struct pollfd p = { .fd = fd, .events = POLLIN };
  return poll (&p, 1, 1000) == 1 && recv (fd, rep, sizeof rep, 0) >= 8 && rep[0] == 0;
}

/* The library's calls run in the host namespace of the test. */
static int
in_host (netenv *ne, sbx_egress_mode mode, const sbx_cidr *allow, size_t n, const char *pfx, sbx_error **err)
{
  _cleanup_free_ char *ifname = xasprintf ("%s0", pfx);
  enter (ne->hfd);
  int r = sbx_egress_apply ("sbx", "sb-traffic", ifname, &test_src, mode, allow, n, err);
  enter (ne->orig);
  return r;
}

static void
test_traffic (void)
{
  const char *pfx = "sbt";
  netenv ne = { .orig = -1, .hfd = -1, .sfd = -1, .wfd = -1 };
  if (netenv_setup (&ne, pfx) < 0)
    {
      tap_skip ("traffic tests: cannot make network namespaces with ip(8)");
      netenv_teardown (&ne);
      return;
    }
  char peer[64];
  int e = 0, r;
  tap_ok (connects (&ne, "192.168.77.1", 8080, peer, sizeof peer) && strcmp (peer, "198.18.0.2") == 0,
          "control, before any rule: the sandbox reaches 192.168.77.1 (seen as %s)", peer);

  /* As sbx makes it: DNS to any address of the pool, so long as it is
   * the gateway of the sandbox's own interface. */
  sbx_egress_pool pool = { .v4 = cidr ("198.18.0.0/24"), .ifprefix = pfx, .dns = true };
  _cleanup_error_ sbx_error *err = NULL;
  enter (ne.hfd);
  r = sbx_egress_init ("sbx", &pool, &err);
  enter (ne.orig);
  tap_ok (r == 0, "traffic: init in the host namespace (%s)", r ? errmsg (err) : "ok");
  sbx_cidr allow[] = { cidr ("203.0.113.2/32"), cidr ("192.168.77.0/24"), cidr ("169.254.0.0/16") };
  r = in_host (&ne, SBX_EGRESS_ALLOW, allow, ARRAY_SIZE (allow), pfx, &err);
  tap_ok (r == 0, "traffic: apply allow 203.0.113.2, 192.168.77.0/24, 169.254.0.0/16 (%s)", r ? errmsg (err) : "ok");

  tap_ok (connects (&ne, "203.0.113.2", 8080, peer, sizeof peer) && strcmp (peer, "203.0.113.1") == 0,
          "allow: an allowed destination connects, masqueraded (seen as %s)", peer);
  tap_ok (refused (&ne, "203.0.113.3", 8080, &e), "allow: a destination not on the list is refused at once (%s)",
          strerror (e));
  tap_ok (refused (&ne, "192.168.77.1", 8080, &e), "allow: a private address stays refused though listed (%s)",
          strerror (e));
  tap_ok (refused (&ne, "169.254.169.254", 8080, &e), "allow: the metadata address stays refused though listed (%s)",
          strerror (e));
  tap_ok (refused (&ne, "198.18.0.1", 8080, &e), "allow: the host's gateway address is refused but for DNS (%s)",
          strerror (e));
  tap_ok (refused (&ne, "203.0.113.1", 8080, &e), "allow: the host's other addresses are refused (%s)", strerror (e));
  tap_ok (connects (&ne, "198.18.0.1", 53, peer, sizeof peer), "allow: DNS (tcp 53) to the gateway connects (%s)",
          peer);

  int fd = dial (&ne, "203.0.113.2", 8080, peer, sizeof peer);
  char buf[16] = "";
  bool echoed = fd >= 0 && write (fd, "ping", 4) == 4 && read (fd, buf, 4) == 4 && memcmp (buf, "ping", 4) == 0;
  tap_ok (echoed, "allow: an established connection to 203.0.113.2 carries data");
  r = in_host (&ne, SBX_EGRESS_BLOCK, NULL, 0, pfx, &err);
  tap_ok (r == 0, "traffic: apply block (%s)", r ? errmsg (err) : "ok");
  int cut = 0;
  if (fd >= 0)
    {
      int64_t t0 = now_ms ();
      struct pollfd p = { .fd = fd, .events = POLLIN };
      if (write (fd, "more", 4) < 0)
        cut = errno;
      else if (poll (&p, 1, 3000) == 1 && read (fd, buf, sizeof buf) < 0)
        cut = errno;
      if (now_ms () - t0 > 1500)
        cut = ETIMEDOUT;
      close (fd);
    }
  tap_ok (cut == ECONNRESET, "block: the established connection is reset at its next packet (%s)",
          cut ? strerror (cut) : "still open");
  tap_ok (refused (&ne, "203.0.113.2", 8080, &e), "block: the once allowed destination is refused (%s)", strerror (e));
  tap_ok (refused (&ne, "198.18.0.1", 53, &e), "block: no DNS either (%s)", strerror (e));

  r = in_host (&ne, SBX_EGRESS_OPEN, NULL, 0, pfx, &err);
  tap_ok (r == 0, "traffic: apply open (%s)", r ? errmsg (err) : "ok");
  tap_ok (connects (&ne, "203.0.113.3", 8080, peer, sizeof peer), "open: any public destination connects (%s)", peer);
  tap_ok (refused (&ne, "192.168.77.1", 8080, &e) && refused (&ne, "169.254.169.254", 8080, &e)
              && refused (&ne, "203.0.113.1", 8080, &e),
          "open: private, metadata and host addresses stay refused");
  tap_ok (connects (&ne, "198.18.0.1", 53, peer, sizeof peer), "open: DNS to the gateway connects (%s)", peer);
  /* Another sandbox's gateway: an address of the pool, local to the host,
   * on another interface. */
  sh ("ip -n %s addr add 198.18.0.200/32 dev lo; ip netns exec %s sysctl -qw net.ipv4.ping_group_range='0 0'", ne.h,
      ne.s);
  tap_ok (refused (&ne, "198.18.0.200", 53, &e), "open: DNS to another interface's address in the pool is refused (%s)",
          strerror (e));
  tap_ok (pings (&ne, "198.18.0.1"), "open: the gateway answers ping");
  tap_ok (!pings (&ne, "198.18.0.200"), "open: another interface's address in the pool does not");
  netenv_teardown (&ne);
}

/* init in the host namespace of NE. */
static int
init_in_host (netenv *ne, const sbx_egress_pool *pool, sbx_error **err)
{
  enter (ne->hfd);
  int r = sbx_egress_init ("sbx", pool, err);
  enter (ne->orig);
  return r;
}

static uint64_t
private_count (netenv *ne)
{
  uint64_t n = UINT64_MAX;
  enter (ne->hfd);
  if (sbx_egress_private_count ("sbx", "sb-traffic", &n, NULL) < 0)
    n = UINT64_MAX;
  enter (ne->orig);
  return n;
}

/* Private destinations: refused, opened by the operator, observed. The
 * metadata addresses stay refused through all of it. */
static void
test_private_traffic (void)
{
  const char *pfx = "sbp";
  netenv ne = { .orig = -1, .hfd = -1, .sfd = -1, .wfd = -1 };
  if (netenv_setup (&ne, pfx) < 0)
    {
      tap_skip ("private traffic tests: cannot make network namespaces with ip(8)");
      netenv_teardown (&ne);
      return;
    }
  char peer[64];
  int e = 0, r;
  tap_ok (connects (&ne, "10.77.0.1", 8080, peer, sizeof peer) && connects (&ne, "fd12::1", 8080, peer, sizeof peer)
              && connects (&ne, "fd00:ec2::254", 8080, peer, sizeof peer)
              && connects (&ne, "2001:db8:ff::3", 8080, peer, sizeof peer) && strcmp (peer, "2001:db8:5b::2") == 0,
          "control, before any rule: the sandbox reaches 10.77.0.1, fd12::1, fd00:ec2::254, 2001:db8:ff::3 (%s)", peer);

  sbx_cidr opened[] = { cidr ("10.78.0.0/16") };
  sbx_egress_pool pool = { .v4 = cidr ("198.18.0.0/24"),
                           .v6 = cidr ("2001:db8:5b::/64"),
                           .ifprefix = pfx,
                           .dns = true,
                           .gateway4 = cidr ("198.18.0.1/32"),
                           .open = opened,
                           .nopen = 1 };
  _cleanup_error_ sbx_error *err = NULL;
  r = init_in_host (&ne, &pool, &err);
  tap_ok (r == 0, "private: init, 10.78.0.0/16 opened (%s)", r ? errmsg (err) : "ok");
  r = in_host (&ne, SBX_EGRESS_OPEN, NULL, 0, pfx, &err);
  tap_ok (r == 0, "private: apply open (%s)", r ? errmsg (err) : "ok");
  test_forged_sources (&ne);
  r = in_host (&ne, SBX_EGRESS_OPEN, NULL, 0, pfx, &err);
  tap_ok (r == 0, "private: apply open again, the source check back (%s)", r ? errmsg (err) : "ok");
  tap_ok (connects (&ne, "2001:db8:ff::3", 8080, peer, sizeof peer) && strcmp (peer, "2001:db8:ff::1") == 0,
          "open: a public IPv6 destination connects, masqueraded (seen as %s)", peer);
  tap_ok (refused (&ne, "10.77.0.1", 8080, &e), "open: a private 10.x destination is refused (%s)", strerror (e));
  tap_ok (refused (&ne, "fd12::1", 8080, &e), "open: a ULA destination is refused (%s)", strerror (e));
  tap_ok (connects (&ne, "10.78.0.1", 8080, peer, sizeof peer) && strcmp (peer, "203.0.113.1") == 0,
          "open: the operator-opened 10.78.0.1 connects (seen as %s)", peer);
  tap_ok (refused (&ne, "169.254.169.254", 8080, &e) && refused (&ne, "fd00:ec2::254", 8080, &e),
          "open: the metadata addresses 169.254.169.254 and fd00:ec2::254 stay refused (%s)", strerror (e));

  sbx_cidr allow[] = { cidr ("203.0.113.2/32") };
  r = in_host (&ne, SBX_EGRESS_ALLOW, allow, ARRAY_SIZE (allow), pfx, &err);
  tap_ok (r == 0, "private: apply allow 203.0.113.2 (%s)", r ? errmsg (err) : "ok");
  tap_ok (refused (&ne, "10.78.0.1", 8080, &e), "allow: the opened 10.78.0.1 is refused when not on the list (%s)",
          strerror (e));
  sbx_cidr allow2[] = { cidr ("203.0.113.2/32"), cidr ("10.78.0.1/32"), cidr ("10.77.0.1/32") };
  r = in_host (&ne, SBX_EGRESS_ALLOW, allow2, ARRAY_SIZE (allow2), pfx, &err);
  tap_ok (r == 0, "private: apply allow 203.0.113.2, 10.78.0.1, 10.77.0.1 (%s)", r ? errmsg (err) : "ok");
  tap_ok (connects (&ne, "10.78.0.1", 8080, peer, sizeof peer),
          "allow: the opened 10.78.0.1 connects once on the list (%s)", peer);
  tap_ok (refused (&ne, "10.77.0.1", 8080, &e), "allow: a private 10.x not opened stays refused though listed (%s)",
          strerror (e));
  r = in_host (&ne, SBX_EGRESS_BLOCK, NULL, 0, pfx, &err);
  tap_ok (r == 0, "private: apply block (%s)", r ? errmsg (err) : "ok");
  tap_ok (refused (&ne, "10.77.0.1", 8080, &e) && refused (&ne, "10.78.0.1", 8080, &e)
              && refused (&ne, "fd12::1", 8080, &e),
          "block: private and opened destinations are refused (%s)", strerror (e));
  tap_ok (private_count (&ne) == 0, "not observing: nothing counted");

  pool.observe = true;
  r = init_in_host (&ne, &pool, &err);
  tap_ok (r == 0, "observe: init with observe (%s)", r ? errmsg (err) : "ok");
  r = in_host (&ne, SBX_EGRESS_OPEN, NULL, 0, pfx, &err);
  tap_ok (r == 0, "observe: apply open (%s)", r ? errmsg (err) : "ok");
  uint64_t c0 = private_count (&ne);
  tap_ok (connects (&ne, "10.77.0.1", 8080, peer, sizeof peer) && strcmp (peer, "203.0.113.1") == 0,
          "observe: the private 10.77.0.1 connects (seen as %s)", peer);
  uint64_t c1 = private_count (&ne);
  tap_ok (c0 == 0 && c1 == 1, "observe: the new connection is counted (%llu then %llu)", (unsigned long long) c0,
          (unsigned long long) c1);
  int fd = dial (&ne, "fd12::1", 8080, peer, sizeof peer);
  char buf[8] = "";
  bool echoed = fd >= 0 && write (fd, "ping", 4) == 4 && read (fd, buf, 4) == 4 && write (fd, "pong", 4) == 4
                && read (fd, buf, 4) == 4;
  if (fd >= 0)
    close (fd);
  uint64_t c2 = private_count (&ne);
  tap_ok (echoed && c2 == c1 + 1, "observe: a ULA connection carries data and counts once, not per packet (%llu)",
          (unsigned long long) c2);
  tap_ok (connects (&ne, "10.78.0.1", 8080, peer, sizeof peer) && connects (&ne, "203.0.113.3", 8080, peer, sizeof peer)
              && private_count (&ne) == c2,
          "observe: opened and public destinations connect, uncounted");
  tap_ok (refused (&ne, "169.254.169.254", 8080, &e) && refused (&ne, "fd00:ec2::254", 8080, &e)
              && private_count (&ne) == c2,
          "observe: the metadata addresses 169.254.169.254 and fd00:ec2::254 stay refused, uncounted (%s)",
          strerror (e));
  r = in_host (&ne, SBX_EGRESS_ALLOW, allow, ARRAY_SIZE (allow), pfx, &err);
  tap_ok (r == 0, "observe: apply allow 203.0.113.2 (%s)", r ? errmsg (err) : "ok");
  uint64_t c3 = private_count (&ne);
  tap_ok (refused (&ne, "10.77.0.1", 8080, &e) && c3 == c2 && private_count (&ne) == c3 + 1,
          "observe, allow: the mode refuses 10.77.0.1 after counting it; the count survived the apply (%llu)",
          (unsigned long long) private_count (&ne));
  r = in_host (&ne, SBX_EGRESS_OPEN, NULL, 0, pfx, &err);
  tap_ok (r == 0, "observe: apply open again (%s)", r ? errmsg (err) : "ok");

  pool.observe = false;
  r = init_in_host (&ne, &pool, &err);
  tap_ok (r == 0 && refused (&ne, "10.77.0.1", 8080, &e) && refused (&ne, "fd12::1", 8080, &e),
          "init without observe: the running sandbox's private destinations are refused again (%s)",
          r ? errmsg (err) : strerror (e));
  enter (ne.hfd);
  r = sbx_egress_remove ("sbx", "sb-traffic", NULL, &err);
  enter (ne.orig);
  tap_ok (r == 0 && private_count (&ne) == 0, "remove: the counter goes with the sandbox (%s)",
          r ? errmsg (err) : "ok");
  netenv_teardown (&ne);
}

/* ---- Domain rules: the sets with timeouts, and the refused ranges ---- */

static sbx_egress_elem
elem (const char *addr, uint64_t ms, const char *name)
{
  sbx_egress_elem e = { .addr = cidr (addr), .timeout_ms = ms };
  snprintf (e.name, sizeof e.name, "%s", name);
  return e;
}

static const sbx_egress_elem *
find_elem (const sbx_egress_elem *v, size_t n, const char *addr)
{
  sbx_cidr c = cidr (addr);
  for (size_t i = 0; i < n; i++)
    if (sbx_cidr_equal (&v[i].addr, &c))
      return &v[i];
  return NULL;
}

static void
test_domain_sets (void)
{
  _cleanup_free_ char *hex = random_hex (4);
  _cleanup_free_ char *table = xasprintf ("sbxtest%s", hex);
  _cleanup_free_ char *ifa = xasprintf ("sd%.6sa", hex);
  test_table = table;
  sbx_egress_pool pool = { .v4 = cidr ("198.18.0.0/24"),
                           .v6 = cidr ("2001:db8:5b::/64"),
                           .ifprefix = "sd",
                           .dns = true };
  _cleanup_error_ sbx_error *err = NULL;
  int r = sbx_egress_init (table, &pool, &err);
  tap_ok (r == 0, "domains: init (%s)", r ? errmsg (err) : "ok");
  sbx_egress_elem first[] = { elem ("192.0.2.10", 60000, "www.example.com") };
  r = sbx_egress_apply_domains (table, "d1", ifa, &test_src, SBX_EGRESS_ALLOW, NULL, 0, true, first, 1, &err);
  tap_ok (r == 0, "apply with domain rules, no CIDR, one address (%s)", r ? errmsg (err) : "ok");
  tap_ok (sh ("nft list set inet %s sandbox-d1-dns4 | grep -q 'flags timeout'", table) == 0
              && sh ("nft list set inet %s sandbox-d1-dns4 | grep -q '192.0.2.10 timeout 1m'", table) == 0,
          "set sandbox-d1-dns4: timeouts, the address for 60 s");
  tap_ok (sh ("nft list chain inet %s sandbox-d1 | grep -q 'ct mark 0x'", table) == 0
              && sh ("nft list chain inet %s sandbox-d1 | grep -q 'ip daddr @sandbox-d1-dns4 ct mark set 0x'", table)
                     == 0,
          "chain: the marked connections, then the set marking new ones");
  sbx_egress_elem more[] = { elem ("192.0.2.10", 1000, "www.example.com"), elem ("192.0.2.11", 1000, "a.example"),
                             elem ("2001:db8::11", 30000, "a.example") };
  r = sbx_egress_domain_add (table, "d1", more, ARRAY_SIZE (more), &err);
  tap_ok (r == 0, "add three, one already there (%s)", r ? errmsg (err) : "ok");
  r = sbx_egress_domain_add (table, "d1", more, ARRAY_SIZE (more), &err);
  tap_ok (r == 0, "add the same again (%s)", r ? errmsg (err) : "ok");
  _cleanup_free_ sbx_egress_elem *v = NULL;
  size_t n = 0;
  r = sbx_egress_domain_list (table, "d1", &v, &n, &err);
  const sbx_egress_elem *e10 = find_elem (v, n, "192.0.2.10"), *e6 = find_elem (v, n, "2001:db8::11");
  tap_ok (r == 0 && n == 3 && e10 && e6, "list: 3 addresses (%s)", r ? errmsg (err) : "ok");
  tap_ok (e10 && e10->timeout_ms <= 1000 && strcmp (e10->name, "www.example.com") == 0,
          "the address added again took the new, shorter timeout (%llu ms left) and its name",
          e10 ? (unsigned long long) e10->timeout_ms : 0ULL);
  tap_ok (e6 && e6->timeout_ms > 20000 && e6->timeout_ms <= 30000 && strcmp (e6->name, "a.example") == 0,
          "the IPv6 address: its time left and name");
  usleep (1600 * 1000);
  free (v);
  v = NULL;
  r = sbx_egress_domain_list (table, "d1", &v, &n, &err);
  tap_ok (r == 0 && n == 1 && find_elem (v, n, "2001:db8::11"), "after 1.6 s the 1 s addresses are gone (%zu left)", n);
  _cleanup_strv_ char **ids = NULL;
  r = sbx_egress_list (table, &ids, &err);
  tap_ok (r == 0 && strv_len (ids) == 1 && strcmp (ids[0], "d1") == 0, "the sandbox is listed");
  /* A change keeps what it is given, a change without domains drops the sets. */
  sbx_egress_elem keep[] = { elem ("192.0.2.12", 5000, "b.example") };
  r = sbx_egress_apply_domains (table, "d1", ifa, &test_src, SBX_EGRESS_ALLOW, NULL, 0, true, keep, 1, &err);
  free (v);
  v = NULL;
  tap_ok (r == 0 && sbx_egress_domain_list (table, "d1", &v, &n, NULL) == 0 && n == 1 && find_elem (v, n, "192.0.2.12"),
          "apply again: the sets hold what it was given");
  r = sbx_egress_apply (table, "d1", ifa, &test_src, SBX_EGRESS_OPEN, NULL, 0, &err);
  tap_ok (r == 0 && sh ("nft list set inet %s sandbox-d1-dns4 >/dev/null 2>&1", table) != 0,
          "apply without domain rules: the sets are gone");
  r = sbx_egress_domain_add (table, "d1", keep, 1, &err);
  tap_ok (r < 0 && err->code == SBX_E_NOT_FOUND, "adding to sets that are gone: NOT_FOUND (%s)", errmsg (err));
  sbx_error_free (err);
  err = NULL;
  sbx_egress_elem wide = elem ("192.0.2.0/24", 1000, "x");
  tap_ok (sbx_egress_domain_add (table, "d1", &wide, 1, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT,
          "a domain address that is not a host address: INVALID_ARGUMENT");
  sbx_error_free (err);
  err = NULL;
  r = sbx_egress_apply_domains (table, "d1", ifa, &test_src, SBX_EGRESS_ALLOW, NULL, 0, true, NULL, 0, &err);
  r = r == 0 ? sbx_egress_remove (table, "d1", ifa, &err) : r;
  tap_ok (r == 0 && sh ("nft list table inet %s | grep -q 'sandbox-d1'", table) != 0,
          "remove: the chain and every set of the sandbox gone");
  drop_test_table ();
  test_table = NULL;
}

static void
test_addr_refused (void)
{
  sbx_cidr opened[] = { cidr ("10.9.0.0/16") };
  sbx_egress_pool pool = { .v4 = cidr ("10.200.0.0/16"), .open = opened, .nopen = 1 };
  struct {
    const char *addr;
    int want; /* 0 allowed, 1 always refused, 2 private */
  } cases[] = {
    { "169.254.169.254", 1 },
    { "127.0.0.1", 1 },
    { "0.1.2.3", 1 },
    { "10.200.3.4", 1 },
    { "::ffff:169.254.169.254", 1 },
    { "64:ff9b::a9fe:a9fe", 1 },
    { "fd00:ec2::254", 1 },
    { "::1", 1 },
    { "10.0.0.5", 2 },
    { "192.168.1.1", 2 },
    { "100.64.0.1", 2 },
    { "fd12::1", 2 },
    { "::ffff:10.0.0.5", 2 },
    { "10.9.1.1", 0 },
    { "192.0.2.1", 0 },
    { "2001:db8::1", 0 },
    { "8.8.8.8", 0 },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      sbx_cidr c = cidr (cases[i].addr);
      const char *why = sbx_egress_addr_refused (&pool, &c);
      int got = why == NULL ? 0 : strstr (why, "private") ? 2 : 1;
      tap_ok (got == cases[i].want, "a name resolving to %s: %s", cases[i].addr, why ? why : "allowed");
    }
}

int
main (void)
{
  signal (SIGPIPE, SIG_IGN);
  atexit (drop_test_table);
  test_src.v4 = cidr ("198.18.0.2");
  test_src.v6 = cidr ("2001:db8:5b::2");
  test_addr_refused ();
  if (geteuid () != 0 || system ("nft --version >/dev/null 2>&1") != 0)
    tap_skip ("nftables tests: need root and nft(8)");
  else
    {
      test_ruleset ();
      test_domain_sets ();
      test_concurrent ();
      test_traffic ();
      test_private_traffic ();
    }
  tap_plan (tap_n);
  return tap_done ();
}
