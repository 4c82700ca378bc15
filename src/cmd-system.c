/* Host-wide commands: info, gc, version. */
#include "config.h"
#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "hostinfo.h"
#include "json.h"
#include "lifecycle.h"
#include "util.h"

#include <stdio.h>

int
cmd_info (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int r = cli_no_args (cli, "info", argc, argv, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  sbx_host_info hi;
  sbx_host_info_probe (st, &hi);
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      sbx_host_info_gen (g, &hi);
      cli_json_end (g);
    }
  else
    {
      _cleanup_free_ char *text = sbx_host_info_text (&hi);
      fputs (text, stdout);
    }
  sbx_host_info_clear (&hi);
  return 0;
}

int
cmd_gc (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int r = cli_no_args (cli, "gc", argc, argv, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  sbx_store *st;
  sbx_gc_report rep;
  if (sbx_caps_require ("gc", err) < 0 || cli_store (cli, &st, err) < 0 || sbx_gc (st, &rep, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kint (g, "reaped", rep.reaped);
      j_kint (g, "removed", rep.removed);
      j_kint (g, "orphans", rep.orphans);
      j_kint (g, "layers", rep.layers);
      j_kint (g, "networks", rep.networks);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("reaped %d, removed %d, orphans %d, layers %d, networks %d\n", rep.reaped, rep.removed, rep.orphans,
            rep.layers, rep.networks);
  return 0;
}

int
cmd_version (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int r = cli_no_args (cli, "version", argc, argv, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "version", SBX_VERSION);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("sbx %s\n", SBX_VERSION);
  return 0;
}
