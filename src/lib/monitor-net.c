/* The sandbox's network as the monitor makes and changes it: the plan
 * made before the runtime starts, its setup in a thread, and `sbx net`. */
#include "config.h"
#include "monitor-internal.h"
#include "domain.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

/* --- network ----------------------------------------------------------- */

static void
set_net_mode (struct mon *m, const char *mode, char *const *allow, char *const *domains)
{
  free (m->sb->net_mode);
  m->sb->net_mode = xstrdup (mode);
  strv_free (m->sb->net_allow);
  m->sb->net_allow = strv_dup (allow);
  strv_free (m->sb->net_domains);
  m->sb->net_domains = domains && domains[0] ? strv_dup (domains) : NULL;
}

/* How long an address an answer gives stays allowed: its TTL plus the
 * grace, within the bounds (sbx.conf), in milliseconds. */
static uint64_t
domain_timeout_ms (const sbx_conf *conf, uint32_t ttl)
{
  uint64_t t = (uint64_t) ttl + conf->domain_ttl_grace;
  if (t < conf->domain_ttl_min)
    t = conf->domain_ttl_min;
  if (t > conf->domain_ttl_max)
    t = conf->domain_ttl_max;
  return t * 1000;
}

/* The TTL the sandbox's answers are capped at: no record outlives its
 * address's place in the set. */
static uint32_t
domain_ttl_cap (const sbx_conf *conf)
{
  return conf->domain_ttl_max > conf->domain_ttl_grace ? conf->domain_ttl_max - conf->domain_ttl_grace : 1;
}

#define DOM_SEEN_MAX 4096

/* Whether ADDR stays in the domain sets for TIMEOUT_MS more, short of a
 * tenth of it (at most a second), as far as this monitor put it there:
 * then a new answer need not touch them (a burst of lookups of one name
 * costs one transaction). */
static bool
dom_seen_fresh (const struct mon *m, const sbx_cidr *addr, uint64_t now, uint64_t timeout_ms)
{
  uint64_t slack = timeout_ms / 10 < 1000 ? timeout_ms / 10 : 1000;
  for (size_t i = 0; i < m->ndom_seen; i++)
    if (sbx_cidr_equal (&m->dom_seen[i].addr, addr))
      return m->dom_seen[i].until + slack >= now + timeout_ms;
  return false;
}

static void
dom_seen_put (struct mon *m, const sbx_cidr *addr, uint64_t until)
{
  size_t slot = m->ndom_seen, oldest = 0;
  for (size_t i = 0; i < m->ndom_seen; i++)
    {
      if (sbx_cidr_equal (&m->dom_seen[i].addr, addr))
        slot = i;
      if (m->dom_seen[i].until < m->dom_seen[oldest].until)
        oldest = i;
    }
  if (slot == m->ndom_seen && m->ndom_seen == DOM_SEEN_MAX)
    slot = oldest;
  else if (slot == m->ndom_seen)
    {
      m->dom_seen = xrealloc (m->dom_seen, (m->ndom_seen + 1) * sizeof *m->dom_seen);
      m->ndom_seen++;
    }
  m->dom_seen[slot].addr = *addr;
  m->dom_seen[slot].until = until;
}

/* The resolver's allow function: the addresses of an answer for QNAME (a
 * listed name) into the sandbox's domain sets, but never one in the
 * refused or private ranges: those are left out, and the sandbox's log
 * says so. */
static int
domain_allow (void *data, const char *qname, const sbx_dns_addr *addrs, size_t n)
{
  struct mon *m = data;
  sbx_egress_elem elems[SBX_RESOLVER_ANSWER_ADDRS_MAX];
  size_t k = 0;
  /* Taken before the transaction: what is remembered ends no later than
   * the kernel's timeout. */
  uint64_t now = now_ms_monotonic ();
  sbx_egress_pool pool;
  _cleanup_free_ sbx_cidr *open = NULL;
  sbx_net_pool (m->conf, &pool, &open);
  for (size_t i = 0; i < n && k < ARRAY_SIZE (elems); i++)
    {
      sbx_cidr c = { .family = addrs[i].family, .prefix = addrs[i].family == AF_INET6 ? 128 : 32 };
      memcpy (c.addr, addrs[i].addr, addrs[i].family == AF_INET6 ? 16 : 4);
      const char *why = sbx_egress_addr_refused (&pool, &c);
      if (why)
        {
          _cleanup_free_ char *text = sbx_net_addr_str (&c);
          mon_log (m, "dns: %s resolves to %s (%s): not allowed, %s", qname, text, addrs[i].name, why);
          continue;
        }
      uint64_t timeout = domain_timeout_ms (m->conf, addrs[i].ttl);
      if (dom_seen_fresh (m, &c, now, timeout))
        continue;
      sbx_egress_elem *e = &elems[k++];
      memset (e, 0, sizeof *e);
      e->addr = c;
      e->timeout_ms = timeout;
      snprintf (e->name, sizeof e->name, "%s", qname);
    }
  _cleanup_error_ sbx_error *err = NULL;
  if (k > 0 && sbx_egress_domain_add (SBX_EGRESS_TABLE, m->sb->id, elems, k, &err) < 0)
    {
      mon_log (m, "dns: %s: %s", qname, err->msg);
      return -1;
    }
  for (size_t i = 0; i < k; i++)
    dom_seen_put (m, &elems[i].addr, now + elems[i].timeout_ms);
  return 0;
}

static void
resolver_domains (struct mon *m, char *const *domains)
{
  if (m->resolver)
    sbx_resolver_set_domains (m->resolver, domains && domains[0] ? domains : NULL, domain_ttl_cap (m->conf),
                              domain_allow, m);
}

/* The addresses allowed now for names that RULES still match, with the
 * time they have left: a live change keeps them. */
static int
domain_keep (struct mon *m, char *const *rules, sbx_egress_elem **ret, size_t *ret_n, sbx_error **err)
{
  sbx_egress_elem *v = NULL;
  size_t n = 0, k = 0;
  *ret = NULL;
  *ret_n = 0;
  if (m->sb->net_domains == NULL || rules == NULL || rules[0] == NULL)
    return 0;
  if (sbx_egress_domain_list (SBX_EGRESS_TABLE, m->sb->id, &v, &n, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (v[i].timeout_ms > 0 && sbx_domain_match (rules, v[i].name))
      v[k++] = v[i];
  *ret = v;
  *ret_n = k;
  return 0;
}

/* `sbx net` (and a pool's claim): the sandbox's egress rules replaced in
 * one transaction. */
int
mon_net_set (struct mon *m, const char *mode, char *const *allow_in, char *const *domains_in, sbx_error **err)
{
  _cleanup_strv_ char **allow = strv_dup (allow_in), **domains = NULL;
  _cleanup_free_ sbx_cidr *cidrs = NULL;
  _cleanup_free_ sbx_egress_elem *keep = NULL;
  size_t n = 0, nkeep = 0;
  if (sbx_domain_rules_parse (domains_in, &domains, err) < 0)
    return -1;
  sbx_egress_mode em;
  if (strcmp (mode, "block") == 0)
    em = SBX_EGRESS_BLOCK;
  else if (strcmp (mode, "open") == 0)
    em = SBX_EGRESS_OPEN;
  else if (strcmp (mode, "allow") == 0 && ((allow && allow[0]) || domains[0]))
    em = SBX_EGRESS_ALLOW;
  else
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "net: mode must be block, open, or allow with a list of destinations or domains");
  if (em != SBX_EGRESS_ALLOW)
    {
      strv_free (allow), allow = NULL;
      if (domains[0])
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "net: domain rules need mode allow");
    }
  if (m->net == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "the sandbox was created with --block-network: it has no network interface (create it "
                          "without --block-network and use `sbx net --block` to close it while it runs)");
  if (sbx_net_parse_allow (allow, &cidrs, &n, err) < 0 || domain_keep (m, domains, &keep, &nkeep, err) < 0
      || sbx_net_apply (m->net, em, cidrs, n, domains[0] != NULL, keep, nkeep, err) < 0)
    return -1;
  resolver_domains (m, domains);
  /* The sets were made anew: only what was kept is there. */
  free (m->dom_seen);
  m->dom_seen = NULL;
  m->ndom_seen = 0;
  uint64_t now = now_ms_monotonic ();
  for (size_t i = 0; i < nkeep; i++)
    dom_seen_put (m, &keep[i].addr, now + keep[i].timeout_ms);
  set_net_mode (m, mode, allow, domains);
  mon_log (m, "network: %s%s%s", mode, em == SBX_EGRESS_ALLOW ? " (allow-list)" : "",
           domains[0] ? " (domain rules)" : "");
  return 0;
}

void
mon_handle_net (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  const char *mode = NULL;
  _cleanup_strv_ char **allow = NULL, **domains = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  if (j_get_str (req, "mode", true, &mode, &err) < 0 || j_get_strv (req, "allow", false, &allow, &err) < 0
      || j_get_strv (req, "domains", false, &domains, &err) < 0)
    {
      mon_reply_error (c, SBX_E_INVALID_ARGUMENT, err->msg);
      return;
    }
  if (mon_net_set (m, mode, allow, domains, &err) < 0)
    {
      mon_reply_error (c, err->code, err->msg);
      return;
    }
  mon_save_state (m);
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kstr (g, "mode", mode);
  j_kstrv (g, "allow", m->sb->net_allow);
  j_kstrv (g, "domains", m->sb->net_domains);
  j_endmap (g);
  _cleanup_free_ char *s = j_take (g, NULL);
  mon_reply_json (c, s);
  c->closing = true;
}

int
mon_net_plan (struct mon *m, struct net_plan *plan, sbx_error **err)
{
  sbx_sandbox *sb = m->sb;
  bool runsc = strcmp (m->rt->name, "runsc") == 0;
  if (sbx_conf_load (NULL, &m->conf, err) < 0)
    return -1;
  m->host_netns = open ("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (m->host_netns < 0)
    return sbx_error_errno (err, errno, "open /proc/self/ns/net");
  free (sb->net_stack);
  if (sb->opts.block_network)
    {
      set_net_mode (m, "none", NULL, NULL);
      /* gVisor has its own loopback; runc makes a namespace with only its
       * loopback up. Nothing of sbx's to make, or to leave behind. */
      sb->net_stack = xstrdup (runsc ? "none (gVisor, loopback only)" : "none (its own namespace, loopback only)");
      return 0;
    }
  _cleanup_strv_ char **domains = NULL;
  if (sbx_net_parse_allow (sb->opts.allow, &plan->allow, &plan->nallow, err) < 0
      || sbx_domain_rules_parse (sb->opts.allow_domains, &domains, err) < 0)
    return -1;
  plan->domains = domains[0] != NULL;
  for (size_t i = 0; i < plan->nallow; i++)
    if (plan->allow[i].family == AF_INET6 && m->conf->pool6.family != AF_INET6)
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                            "--allow %s: IPv6 is off for sandboxes on this host (pool6 in sbx.conf)",
                            sb->opts.allow[i]);
  plan->mode = plan->nallow > 0 || plan->domains ? SBX_EGRESS_ALLOW : SBX_EGRESS_OPEN;
  /* A pool's parked member: its interface is made, nothing goes out until
   * a claim sets the rules it asks for (monitor-pool.c). */
  bool parked = sb->parked;
  if (parked)
    plan->mode = SBX_EGRESS_BLOCK, plan->domains = false;
  plan->make = true;
  /* Held until the lease exists, so that no gc drops the shared rules
   * between their init and this sandbox's chain (released in setup). */
  plan->hold = sbx_net_hold (err);
  if (plan->hold < 0)
    return -1;
  /* Egress that cannot be enforced is refused, never run open. */
  sbx_egress_pool pool;
  _cleanup_free_ sbx_cidr *open = NULL;
  sbx_net_pool (m->conf, &pool, &open);
  if (sbx_egress_init (SBX_EGRESS_TABLE, &pool, err) < 0)
    {
      (*err)->code = SBX_E_NETWORK_BLOCK_UNAVAILABLE;
      return sbx_error_wrap (err, "egress rules cannot be enforced on this host");
    }
  if (parked)
    set_net_mode (m, "block", NULL, NULL);
  else
    set_net_mode (m, plan->mode == SBX_EGRESS_ALLOW ? "allow" : "open", plan->nallow > 0 ? sb->opts.allow : NULL,
                  domains);
  sb->net_stack = xstrdup (runsc ? "host (runsc --network=host inside the sandbox's namespace)"
                                 : "kernel (runc in the sandbox's namespace)");
  m->rt->host_network = runsc;
  return 0;
}

void *
mon_net_make (void *arg)
{
  struct net_make_job *job = arg;
  struct net_plan *plan = job->plan;
  /* What was asked for cannot be made: never a sandbox with less. */
  if (sbx_net_setup (job->m->conf, job->m->sb->id, plan->mode, plan->allow, plan->nallow, plan->domains, &plan->net,
                     &plan->err)
          < 0
      && plan->err->code == SBX_E_INTERNAL)
    plan->err->code = SBX_E_NETWORK_BLOCK_UNAVAILABLE;
  return NULL;
}

int
mon_net_finish (struct mon *m, sbx_error **err)
{
  sbx_sandbox *sb = m->sb;
  if (m->net == NULL)
    return 0;
  sb->net_addr4 = sbx_net_addr_str (&m->net->addr4);
  sb->net_gateway4 = sbx_net_addr_str (&m->net->gw4);
  if (m->net->addr6.family == AF_INET6)
    {
      sb->net_addr6 = sbx_net_addr_str (&m->net->addr6);
      sb->net_gateway6 = sbx_net_addr_str (&m->net->gw6);
    }
  /* The resolver on the gateway, forwarding to the host's (which may be
   * on the host's loopback, out of the sandbox's reach). */
  _cleanup_free_ sbx_cidr *ups = NULL;
  size_t nups = 0;
  const sbx_cidr *up = m->conf->dns;
  if (m->conf->ndns == 0)
    {
      if (sbx_resolv_conf_nameservers (NULL, &ups, &nups, err) < 0)
        return -1;
      up = ups;
    }
  else
    nups = m->conf->ndns;
  m->resolver = sbx_resolver_new (up, nups, 53);
  if (sbx_resolver_listen (m->resolver, AF_INET, m->net->gw4.addr, 53, err) < 0
      || (m->net->gw6.family == AF_INET6 && sbx_resolver_listen (m->resolver, AF_INET6, m->net->gw6.addr, 53, err) < 0))
    return sbx_error_wrap (err, "resolver");
  resolver_domains (m, sb->net_domains);
  _cleanup_free_ char *resolv = xasprintf ("nameserver %s\n%s%s%s", sb->net_gateway4,
                                           sb->net_gateway6 ? "nameserver " : "",
                                           sb->net_gateway6 ? sb->net_gateway6 : "", sb->net_gateway6 ? "\n" : "");
  _cleanup_free_ char *rpath = xasprintf ("%s/resolv.conf", m->dir);
  /* Rewritten at every start, so not synced (a disk flush on the create's
   * critical path). */
  return write_file_replace (rpath, resolv, strlen (resolv), 0644, err);
}
