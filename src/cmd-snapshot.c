/* sbx snapshot, restore, snapshots, rmsnap: memory snapshots under runsc
 * (the work is in src/lib/snapshot.c). */
#include "config.h"
#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "json.h"
#include "lifecycle.h"
#include "snapshot.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>

const cli_opt sbx_snapshot_cli_opts[] = { { NULL } };
const cli_opt sbx_snapshots_cli_opts[] = {
  { "quiet", 'q', no_argument, NULL, "print snapshot ids only" },
  { NULL },
};
const cli_opt sbx_restore_cli_opts[] = {
  { "count", 'n', required_argument, "N", "start N sandboxes from the snapshot (default 1, at most 64)", "1 2 4 8" },
  { NULL },
};

int
cmd_snapshot (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int op, key = cli_simple_parse (cli, "snapshot", argc, argv, 1, 1, &op, NULL, NULL, err);
  if (key != 0)
    return key < 0 ? -1 : 0;
  sbx_store *st;
  _cleanup_free_ char *id = NULL, *snap = NULL;
  if (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, argv[op], &id, err) < 0
      || sbx_snapshot_create (st, id, &snap, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", snap);
      j_kstr (g, "sandbox", id);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s\n", snap);
  return 0;
}

static int
count_opt (void *data, int key, const char *arg, sbx_error **err)
{
  return cli_int ("count", arg, 1, SBX_RESTORE_COUNT_MAX, data, err);
}

int
cmd_restore (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int64_t count = 1;
  int first, key = cli_simple_parse (cli, "restore", argc, argv, 1, 1, &first, count_opt, &count, err);
  if (key != 0)
    return key < 0 ? -1 : 0;
  const char *snap = argv[first];
  sbx_store *st;
  _cleanup_strv_ char **ids = NULL;
  if (sbx_caps_require ("restore", err) < 0 || cli_store (cli, &st, err) < 0
      || sbx_snapshot_restore (st, snap, count, &ids, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_arr (g);
      for (size_t j = 0; ids[j]; j++)
        j_str (g, ids[j]);
      j_endarr (g);
      cli_json_end (g);
    }
  else
    for (size_t j = 0; ids[j]; j++)
      printf ("%s\n", ids[j]);
  return 0;
}

int
cmd_snapshots (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  bool quiet = false;
  int first, r = cli_simple_parse (cli, "snapshots", argc, argv, 0, 0, &first, cli_flag_opt, &quiet, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  sbx_snapshot_info *v = NULL;
  size_t n = 0;
  if (sbx_snapshot_list (st, &v, &n, err) < 0)
    return -1;
  yajl_gen g = cli->json ? cli_json_begin () : NULL;
  if (g)
    j_arr (g);
  else if (!quiet)
    printf ("%-18s %-16s %s\n", "SNAPSHOT", "FROM", "CREATED");
  for (size_t i = 0; i < n; i++)
    {
      char c[32];
      format_time (v[i].created, c, sizeof c);
      if (g)
        {
          j_map (g);
          j_kstr (g, "id", v[i].id);
          j_kstr (g, "sandbox", v[i].sandbox);
          j_kint (g, "created", v[i].created);
          j_endmap (g);
        }
      else if (quiet)
        printf ("%s\n", v[i].id);
      else
        printf ("%-18s %-16s %s\n", v[i].id, v[i].sandbox ? v[i].sandbox : "-", c);
    }
  sbx_snapshot_info_free (v, n);
  if (g)
    {
      j_endarr (g);
      cli_json_end (g);
    }
  return 0;
}

int
cmd_rmsnap (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int first, key = cli_simple_parse (cli, "rmsnap", argc, argv, 1, -1, &first, NULL, NULL, err);
  if (key != 0)
    return key < 0 ? -1 : 0;
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  for (int i = first; i < argc; i++)
    {
      if (sbx_snapshot_remove (st, argv[i], err) < 0)
        return -1;
      if (!cli->json)
        printf ("%s\n", argv[i]);
    }
  sbx_layers_gc (st, NULL);
  if (cli->json)
    cli_json_ok ();
  return 0;
}
