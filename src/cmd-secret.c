/* sbx secret create|ls|rm and sbx audit: the store of secrets and the audit
 * log of their use (the work is in src/lib/secret.c). A value is read from
 * stdin or --from-file, never from the command line, where any user of the
 * host could read it in ps. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "json.h"
#include "secret.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

enum {
  O_FROM_FILE = 256,
  O_REPLACE,
  O_SINCE,
};

const cli_opt sbx_secret_cli_opts[] = {
  { "from-file", O_FROM_FILE, required_argument, "PATH", "create: read the value from PATH (default: stdin)", "@file" },
  { "replace", O_REPLACE, no_argument, NULL, "create: replace the value of an existing secret" },
  { "quiet", 'q', no_argument, NULL, "ls: print names only" },
  { NULL },
};

const cli_opt sbx_audit_cli_opts[] = {
  { "since", O_SINCE, required_argument, "WHEN",
    "only records from WHEN on: RFC 3339 UTC time, unix seconds, or a duration ago (30s, 10m, 2h, 7d)" },
  { NULL },
};

struct secret_args {
  const char *from_file;
  bool replace, quiet;
};

static int
secret_opt (void *data, int key, const char *arg, sbx_error **err)
{
  struct secret_args *a = data;
  (void) err;
  if (key == O_FROM_FILE)
    a->from_file = arg;
  else if (key == O_REPLACE)
    a->replace = true;
  else if (key == 'q')
    a->quiet = true;
  return 0;
}

static void
print_ok (sbx_cli *cli, const char *key, const char *value)
{
  if (!cli->json)
    {
      printf ("%s\n", value);
      return;
    }
  yajl_gen g = cli_json_begin ();
  j_map (g);
  j_kstr (g, key, value);
  j_endmap (g);
  cli_json_end (g);
}

/* The value, from --from-file or stdin, at most one byte over the bound so
 * that the library reports a value that is too long. */
static int
read_value (const struct secret_args *a, char **ret, size_t *ret_len, sbx_error **err)
{
  _cleanup_close_ int fd = -1;
  if (a->from_file)
    {
      fd = open (a->from_file, O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        return sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, errno,
                              "--from-file `%s`", a->from_file);
    }
  int r = read_fd (a->from_file ? fd : 0, SBX_SECRET_VALUE_MAX, ret, ret_len);
  if (r == -EFBIG)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the value has more than %d bytes", SBX_SECRET_VALUE_MAX);
  if (r < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, -r, "read the value from %s",
                          a->from_file ? a->from_file : "stdin");
  return 0;
}

static int
secret_create (sbx_cli *cli, sbx_store *st, const struct secret_args *a, const char *name, sbx_error **err)
{
  char *value = NULL;
  size_t len = 0;
  if (read_value (a, &value, &len, err) < 0)
    return sbx_error_wrap (err, "secret create %s", name);
  int r = sbx_secret_create (st, name, value, len, a->replace, err);
  sbx_secret_value_free (value, len);
  if (r < 0)
    return -1;
  print_ok (cli, "name", name);
  return 0;
}

static int
secret_ls (sbx_cli *cli, sbx_store *st, const struct secret_args *a, sbx_error **err)
{
  sbx_secret_info *v = NULL;
  size_t n = 0;
  if (sbx_secret_list (st, &v, &n, err) < 0)
    return -1;
  yajl_gen g = cli->json ? cli_json_begin () : NULL;
  if (g)
    j_arr (g);
  else if (!a->quiet)
    printf ("%-32s %s\n", "NAME", "CREATED");
  for (size_t i = 0; i < n; i++)
    {
      char c[32];
      format_time (v[i].created, c, sizeof c);
      if (g)
        {
          j_map (g);
          j_kstr (g, "name", v[i].name);
          j_kint (g, "created", v[i].created);
          j_endmap (g);
        }
      else if (a->quiet)
        printf ("%s\n", v[i].name);
      else
        printf ("%-32s %s\n", v[i].name, c);
    }
  sbx_secret_infos_free (v, n);
  if (g)
    {
      j_endarr (g);
      cli_json_end (g);
    }
  return 0;
}

static int
secret_rm (sbx_cli *cli, sbx_store *st, char **names, int n, sbx_error **err)
{
  for (int i = 0; i < n; i++)
    {
      if (sbx_secret_remove (st, names[i], err) < 0)
        return -1;
      if (!cli->json)
        printf ("%s\n", names[i]);
    }
  if (cli->json)
    cli_json_ok ();
  return 0;
}

int
cmd_secret (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  struct secret_args a = { NULL, false, false };
  int first, r = cli_simple_parse (cli, "secret", argc, argv, 1, -1, &first, secret_opt, &a, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  const sbx_command *cmd = cli_find ("secret");
  const char *verb = argv[first];
  int nops = argc - first - 1;
  bool create = strcmp (verb, "create") == 0, ls = strcmp (verb, "ls") == 0, rm = strcmp (verb, "rm") == 0;
  if (!create && !ls && !rm)
    return cli_usage_error (cmd, err, "unknown action `%s` (create, ls or rm)", verb);
  if ((create && nops != 1) || (ls && nops != 0) || (rm && nops < 1))
    return cli_usage_error (cmd, err, "%s takes %s", verb,
                            create ? "one NAME"
                            : ls   ? "no operands"
                                   : "one or more NAMEs");
  if (!create && (a.from_file || a.replace))
    return cli_usage_error (cmd, err, "--from-file and --replace are options of create");
  if (!ls && a.quiet)
    return cli_usage_error (cmd, err, "--quiet is an option of ls");
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  if (create)
    return secret_create (cli, st, &a, argv[first + 1], err);
  if (ls)
    return secret_ls (cli, st, &a, err);
  return secret_rm (cli, st, argv + first + 1, nops, err);
}

static void
print_record_human (const sbx_audit_record *r)
{
  printf ("%-20s %-26s %-18s %-6lld ", r->time, r->event, r->sandbox, (long long) r->uid);
  for (size_t j = 0; r->secrets && r->secrets[j]; j++)
    printf ("%s%s", j ? "," : "", r->secrets[j]);
  printf ("\n");
}

int
cmd_audit (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  const char *since_arg = NULL;
  int first, r = cli_simple_parse (cli, "audit", argc, argv, 0, 0, &first, cli_str_opt, &since_arg, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  int64_t since = 0;
  if (since_arg && sbx_audit_parse_since (since_arg, now_unix (), &since, err) < 0)
    return -1;
  sbx_store *st;
  sbx_audit_record *v = NULL;
  size_t n = 0;
  if (cli_store (cli, &st, err) < 0 || sbx_audit_read (st, since, &v, &n, err) < 0)
    return -1;
  yajl_gen g = cli->json ? cli_json_begin () : NULL;
  if (g)
    j_arr (g);
  else
    printf ("%-20s %-26s %-18s %-6s %s\n", "TIME", "EVENT", "SANDBOX", "UID", "SECRETS");
  for (size_t i = 0; i < n; i++)
    {
      if (!g)
        {
          print_record_human (&v[i]);
          continue;
        }
      j_map (g);
      j_kstr (g, "time", v[i].time);
      j_kint (g, "unix", v[i].unix_time);
      j_kstr (g, "event", v[i].event);
      j_kstr (g, "sandbox", v[i].sandbox);
      j_kstrv (g, "secrets", v[i].secrets);
      j_kint (g, "uid", v[i].uid);
      j_endmap (g);
    }
  sbx_audit_records_free (v, n);
  if (g)
    {
      j_endarr (g);
      cli_json_end (g);
    }
  return 0;
}
