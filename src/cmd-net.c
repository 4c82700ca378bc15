/* A running sandbox's network: net (egress), expose, unexpose and urls
 * (ports). */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "domain.h"
#include "client.h"
#include "egress.h"
#include "json.h"
#include "sandbox.h"
#include "util.h"

#include <getopt.h>
#include <string.h>

enum { O_BLOCK = 256, O_ALLOW, O_OPEN, O_ALLOW_DOMAIN };

const cli_opt sbx_net_cli_opts[] = {
  { "block", O_BLOCK, no_argument, NULL, "nothing out, no DNS (the interface stays)" },
  { "allow", O_ALLOW, required_argument, "CIDR", "only these destinations, plus DNS (repeatable)" },
  { "allow-domain", O_ALLOW_DOMAIN, required_argument, "NAME",
    "only the addresses NAME (or *.NAME: any name under it) resolves to; other names are refused (repeatable; with "
    "--allow, both)" },
  { "open", O_OPEN, no_argument, NULL, "the internet (the refused ranges stay refused)" },
  { NULL },
};

struct net_args {
  const char *mode;
  char **allow;
  char **domains;
};

static int
net_opt (void *data, int key, const char *arg, sbx_error **err)
{
  struct net_args *a = data;
  const char *mode = key == O_BLOCK ? "block" : key == O_OPEN ? "open" : "allow";
  if (a->mode && strcmp (a->mode, mode) != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "net: --block, --allow (or --allow-domain) and --open exclude each other");
  a->mode = mode;
  if (key == O_ALLOW_DOMAIN)
    {
      _cleanup_free_ char *name = NULL;
      if (sbx_domain_rule_parse (arg, &name, err) < 0)
        return -1;
      if (strv_len (a->domains) >= SBX_DOMAINS_MAX)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--allow-domain: at most %d names", SBX_DOMAINS_MAX);
      strv_push (&a->domains, name);
    }
  if (key == O_ALLOW)
    {
      sbx_cidr c;
      if (sbx_cidr_parse (arg, &c, err) < 0)
        return sbx_error_wrap (err, "--allow");
      if (strv_len (a->allow) >= SBX_EGRESS_ALLOW_MAX)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--allow: at most %d destinations", SBX_EGRESS_ALLOW_MAX);
      strv_push (&a->allow, arg);
    }
  return 0;
}

int
cmd_net (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  _cleanup_strv_ char **allow = xmalloc0 (sizeof (char *)), **domains = xmalloc0 (sizeof (char *));
  struct net_args a = { .allow = allow, .domains = domains };
  int first, r = cli_simple_parse (cli, "net", argc, argv, 1, 1, &first, net_opt, &a, err);
  allow = a.allow;
  domains = a.domains;
  if (r != 0)
    return r < 0 ? -1 : 0;
  if (a.mode == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "net: one of --block, --allow CIDR, --allow-domain NAME or --open is required");
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  if (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, argv[first], &id, err) < 0)
    return -1;
  if (sbx_client_net (st, id, a.mode, allow, domains, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", id);
      j_kstr (g, "mode", a.mode);
      j_kstrv (g, "allow", allow);
      j_kstrv (g, "domains", domains);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    {
      size_t shown = 0;
      printf ("%s network: %s", id, a.mode);
      for (size_t i = 0; allow[i]; i++)
        printf ("%s%s", shown++ ? ", " : " ", allow[i]);
      for (size_t i = 0; domains[i]; i++)
        printf ("%s%s", shown++ ? ", " : " ", domains[i]);
      printf ("\n");
    }
  return 0;
}

/* The operands of expose and unexpose, ID PORT: 1 when --help was
 * answered, -1 on an error, 0 with *st, *ret_id and *ret_port set. */
static int
parse_id_port (sbx_cli *cli, const char *cmd, int argc, char **argv, sbx_store **st, char **ret_id, int64_t *ret_port,
               sbx_error **err)
{
  int first, r = cli_simple_parse (cli, cmd, argc, argv, 2, 2, &first, NULL, NULL, err);
  if (r != 0)
    return r < 0 ? -1 : 1;
  if (cli_int ("PORT", argv[first + 1], 1, 65535, ret_port, err) < 0 || cli_store (cli, st, err) < 0
      || cli_sandbox_id (cli, argv[first], ret_id, err) < 0)
    return -1;
  return 0;
}

int
cmd_expose (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int64_t port;
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  int r = parse_id_port (cli, "expose", argc, argv, &st, &id, &port, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  _cleanup_free_ char *url = NULL;
  bool pub = false;
  if (sbx_client_expose (st, id, port, &url, &pub, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", id);
      j_kint (g, "port", port);
      j_kstr (g, "url", url);
      j_kbool (g, "public", pub);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s\n", url);
  return 0;
}

int
cmd_unexpose (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int64_t port;
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  int r = parse_id_port (cli, "unexpose", argc, argv, &st, &id, &port, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  if (sbx_client_unexpose (st, id, port, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", id);
      j_kint (g, "port", port);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s port %lld unexposed\n", id, (long long) port);
  return 0;
}

int
cmd_urls (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int first, r = cli_simple_parse (cli, "urls", argc, argv, 1, 1, &first, NULL, NULL, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, argv[first], &id, err) < 0
      || sbx_sandbox_get (st, id, &sb, err) < 0)
    return -1;
  if (sb->state != SBX_STATE_RUNNING)
    return sbx_error_set (err, SBX_E_SANDBOX_NOT_RUNNING, 0, "%s is %s: it has no exposed ports", id,
                          sbx_state_name (sb->state));
  yajl_gen g = cli->json ? cli_json_begin () : NULL;
  if (g)
    {
      j_map (g);
      j_kstr (g, "id", id);
      j_kbool (g, "public", sb->opts.public_ports);
      j_str (g, "urls");
      j_arr (g);
    }
  for (size_t i = 0; sb->urls && sb->urls[i]; i++)
    {
      const char *sp = strchr (sb->urls[i], ' ');
      if (sp == NULL)
        continue;
      int64_t port = 0;
      _cleanup_free_ char *num = xstrndup (sb->urls[i], (size_t) (sp - sb->urls[i]));
      parse_int64 (num, 1, 65535, &port);
      if (g)
        {
          j_map (g);
          j_kint (g, "port", port);
          j_kstr (g, "url", sp + 1);
          j_endmap (g);
        }
      else
        printf ("%lld\t%s\n", (long long) port, sp + 1);
    }
  if (g)
    {
      j_endarr (g);
      j_endmap (g);
      cli_json_end (g);
    }
  return 0;
}
