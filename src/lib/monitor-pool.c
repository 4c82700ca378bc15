/* A warm pool's claim (pool.h), as a parked member's monitor serves it:
 * the options a started sandbox can take are applied in one request —
 * name, environment, working directory, limits (as sbx update), network
 * rules (as sbx net), exposed ports — then its lifetimes start and it is
 * a sandbox like any other. Everything is checked before anything
 * changes; a claim that fails half-way leaves a sandbox its caller ends. */
#include "config.h"
#include "monitor-internal.h"

#include <string.h>

struct claim {
  const char *pool, *name, *cwd;
  char **env, **ports;
  bool on_idle_pause, public_ports;
  struct mon_update u;
  yajl_val net; /* {"mode", "allow", "domains"}, NULL: as it is */
  const char *net_mode;
  char **net_allow, **net_domains;
};

static void
claim_clear (struct claim *cl)
{
  strv_free (cl->env);
  strv_free (cl->ports);
  strv_free (cl->net_allow);
  strv_free (cl->net_domains);
}

static int
parse_claim (yajl_val req, struct claim *cl, sbx_error **err)
{
  static const char *const keys[] = { "op",     "pool", "name",  "env",    "cwd", "on_idle_pause",
                                      "update", "net",  "ports", "public", NULL };
  if (j_check_keys (req, keys, "claim request", err) < 0 || j_get_str (req, "pool", true, &cl->pool, err) < 0
      || j_get_str (req, "name", false, &cl->name, err) < 0 || j_get_str (req, "cwd", false, &cl->cwd, err) < 0
      || j_get_strv (req, "env", false, &cl->env, err) < 0 || j_get_strv (req, "ports", false, &cl->ports, err) < 0
      || j_get_bool (req, "on_idle_pause", false, &cl->on_idle_pause, err) < 0
      || j_get_bool (req, "public", false, &cl->public_ports, err) < 0)
    return -1;
  yajl_val u = j_get (req, "update");
  if (u == NULL || !YAJL_IS_OBJECT (u))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "claim: update must be an object");
  if (mon_update_parse (u, &cl->u, err) < 0)
    return -1;
  cl->net = j_get (req, "net");
  if (cl->net && !YAJL_IS_NULL (cl->net)
      && (j_get_str (cl->net, "mode", true, &cl->net_mode, err) < 0
          || j_get_strv (cl->net, "allow", false, &cl->net_allow, err) < 0
          || j_get_strv (cl->net, "domains", false, &cl->net_domains, err) < 0))
    return -1;
  for (size_t i = 0; cl->env && cl->env[i]; i++)
    if (!env_entry_is_valid (cl->env[i]))
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "claim: `%s` is not KEY=VALUE", cl->env[i]);
  if (cl->cwd && cl->cwd[0] != '/')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "claim: cwd must be absolute");
  return 0;
}

static int
check_claim (struct mon *m, const struct claim *cl, sbx_error **err)
{
  if (!m->sb->parked)
    return sbx_error_set (err, SBX_E_BUSY, 0, "sandbox %s is not a parked member of a pool: claimed already",
                          m->sb->id);
  if (m->sb->opts.pool == NULL || strcmp (m->sb->opts.pool, cl->pool) != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "sandbox %s is not a member of pool %s", m->sb->id, cl->pool);
  if (cl->net_mode && m->net == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "claim: pool %s's sandboxes have no network (--block-network)", cl->pool);
  return mon_update_check (m, &cl->u, err);
}

/* The options that need nothing but the record (and the workdir again). */
static void
apply_record (struct mon *m, struct claim *cl)
{
  sbx_sandbox *sb = m->sb;
  if (cl->name)
    {
      free (sb->opts.name);
      sb->opts.name = xstrdup (cl->name);
    }
  if (cl->env)
    {
      strv_free (sb->opts.env);
      sb->opts.env = steal_pointer (&cl->env);
    }
  if (cl->cwd)
    {
      free (sb->opts.cwd);
      sb->opts.cwd = xstrdup (cl->cwd);
      mon_choose_workdir (m);
    }
  sb->opts.on_idle_pause = cl->on_idle_pause;
}

static int
apply_ports (struct mon *m, struct claim *cl, sbx_error **err)
{
  if (cl->ports == NULL || cl->ports[0] == NULL)
    return 0;
  strv_free (m->sb->opts.ports);
  m->sb->opts.ports = steal_pointer (&cl->ports);
  m->sb->opts.public_ports = cl->public_ports;
  return mon_expose_create_ports (m, err);
}

void
mon_handle_claim (struct mon *m, struct client *c, sbx_op op, yajl_val req)
{
  (void) op;
  _cleanup_error_ sbx_error *err = NULL;
  struct claim cl = { .pool = NULL };
  if (parse_claim (req, &cl, &err) < 0 || check_claim (m, &cl, &err) < 0 || mon_update_limits (m, &cl.u, &err) < 0
      || (cl.net_mode && mon_net_set (m, cl.net_mode, cl.net_allow, cl.net_domains, &err) < 0)
      || apply_ports (m, &cl, &err) < 0)
    {
      claim_clear (&cl);
      mon_reply_error (c, err->code, err->msg);
      return;
    }
  apply_record (m, &cl);
  claim_clear (&cl);
  /* From here it is the claimer's sandbox: made now, as far as anyone
   * can tell, with its lifetimes counted from now. */
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  m->sb->parked = false;
  m->sb->created_at = m->sb->started_at = ts.tv_sec;
  m->sb->created_ns = (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
  mon_touch (m);
  struct mon_update life = { .has_keep_warm = true,
                             .has_timeout = true,
                             .keep_warm = cl.u.has_keep_warm ? cl.u.keep_warm : m->sb->opts.keep_warm,
                             .timeout = cl.u.has_timeout ? cl.u.timeout : m->sb->opts.timeout };
  mon_update_lifetimes (m, &life);
  mon_save_state (m);
  mon_log (m, "claimed from pool %s%s%s", m->sb->opts.pool, m->sb->opts.name ? " as " : "",
           m->sb->opts.name ? m->sb->opts.name : "");
  mon_reply_bool (c, "ok", true);
  c->closing = true;
}
