/* sbx volume create|ls|inspect|rm|export|import: named volumes. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "disk.h"
#include "json.h"
#include "util.h"
#include "volume.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
  O_SIZE = 256,
};

const cli_opt sbx_volume_cli_opts[] = {
  { "size", O_SIZE, required_argument, "SIZE",
    "create: the most its files may take (an ext4 image: ENOSPC inside past it); MiB or with a unit; 0: no "
    "limit (default)" },
  { "quiet", 'q', no_argument, NULL, "ls: print names only" },
  { NULL },
};

struct volume_args {
  uint64_t size;
  bool size_set, quiet;
};

static int
volume_opt (void *data, int key, const char *arg, sbx_error **err)
{
  struct volume_args *a = data;
  if (key == 'q')
    {
      a->quiet = true;
      return 0;
    }
  a->size_set = true;
  if (sbx_disk_parse (arg, &a->size) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "--size: `%s` is not 0 (no limit) or a size between 16Mi and 64Ti (MiB, or 512Mi, 10Gi, 2G)",
                          arg);
  return 0;
}

static void
human_size (uint64_t n, char *buf, size_t len)
{
  static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  double v = (double) n;
  size_t i = 0;
  while (v >= 1024 && i + 1 < ARRAY_SIZE (u))
    v /= 1024, i++;
  snprintf (buf, len, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static void
gen_volume (yajl_gen g, const sbx_volume *v, bool details)
{
  j_map (g);
  j_kstr (g, "name", v->name);
  j_kint (g, "size", (long long) v->size);
  j_kint (g, "created", v->created);
  if (details)
    {
      j_str (g, "used");
      if (v->used >= 0)
        j_int (g, v->used);
      else
        j_null (g);
      j_kstrv (g, "sandboxes", v->users);
    }
  j_endmap (g);
}

static int
volume_create (sbx_cli *cli, const sbx_store *st, char **ops, const struct volume_args *a, sbx_error **err)
{
  if (sbx_volume_create (st, ops[0], a->size, err) < 0)
    return -1;
  if (cli->json)
    {
      _cleanup_volume_ sbx_volume *v = NULL;
      if (sbx_volume_get (st, ops[0], false, &v, err) < 0)
        return -1;
      yajl_gen g = cli_json_begin ();
      gen_volume (g, v, false);
      cli_json_end (g);
    }
  else
    printf ("%s\n", ops[0]);
  return 0;
}

static int
volume_ls (sbx_cli *cli, const sbx_store *st, const struct volume_args *a, sbx_error **err)
{
  _cleanup_strv_ char **names = NULL;
  if (sbx_volume_list (st, &names, err) < 0)
    return -1;
  yajl_gen g = cli->json ? cli_json_begin () : NULL;
  if (g)
    j_arr (g);
  else if (!a->quiet)
    printf ("%-24s %-10s %s\n", "NAME", "SIZE", "CREATED");
  for (size_t i = 0; names[i]; i++)
    {
      _cleanup_volume_ sbx_volume *v = NULL;
      if (sbx_volume_get (st, names[i], false, &v, NULL) < 0)
        continue; /* removed meanwhile */
      if (g)
        gen_volume (g, v, false);
      else if (a->quiet)
        printf ("%s\n", v->name);
      else
        {
          char size[32], created[32];
          if (v->size)
            human_size (v->size, size, sizeof size);
          else
            snprintf (size, sizeof size, "-");
          format_time (v->created, created, sizeof created);
          printf ("%-24s %-10s %s\n", v->name, size, created);
        }
    }
  if (g)
    {
      j_endarr (g);
      cli_json_end (g);
    }
  return 0;
}

/* Always JSON, as podman's inspect: an array, one object per name. */
static int
volume_inspect (const sbx_store *st, char **ops, int n, sbx_error **err)
{
  yajl_gen g = j_new (true);
  j_arr (g);
  for (int i = 0; i < n; i++)
    {
      _cleanup_volume_ sbx_volume *v = NULL;
      if (sbx_volume_get (st, ops[i], true, &v, err) < 0)
        {
          yajl_gen_free (g);
          return -1;
        }
      gen_volume (g, v, true);
    }
  j_endarr (g);
  cli_json_end (g);
  return 0;
}

static int
volume_rm (sbx_cli *cli, const sbx_store *st, char **ops, int n, sbx_error **err)
{
  for (int i = 0; i < n; i++)
    {
      if (sbx_volume_remove (st, ops[i], err) < 0)
        return -1;
      if (!cli->json)
        printf ("%s\n", ops[i]);
    }
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_str (g, "removed");
      j_arr (g);
      for (int i = 0; i < n; i++)
        j_str (g, ops[i]);
      j_endarr (g);
      j_endmap (g);
      cli_json_end (g);
    }
  return 0;
}

/* FILE (- for stdout), written whole or not at all: under a temporary name
 * beside it, renamed once complete. */
static int
volume_export (const sbx_store *st, char **ops, sbx_error **err)
{
  if (strcmp (ops[1], "-") == 0)
    {
      if (isatty (STDOUT_FILENO))
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "volume export: stdout is a terminal (redirect it)");
      return sbx_volume_export (st, ops[0], STDOUT_FILENO, err);
    }
  _cleanup_free_ char *rnd = random_hex (6);
  _cleanup_free_ char *tmp = xasprintf ("%s.%s.tmp", ops[1], rnd);
  _cleanup_close_ int fd = open (tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, errno, "volume export: create `%s`", tmp);
  int r = sbx_volume_export (st, ops[0], fd, err);
  if (r == 0 && fsync (fd) < 0)
    r = sbx_error_errno (err, errno, "write `%s`", tmp);
  if (r == 0 && rename (tmp, ops[1]) < 0)
    r = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, errno, "volume export: rename to `%s`", ops[1]);
  if (r < 0)
    unlink (tmp);
  return r;
}

static int
volume_import (sbx_cli *cli, const sbx_store *st, char **ops, sbx_error **err)
{
  _cleanup_close_ int own = -1;
  int fd = STDIN_FILENO;
  if (strcmp (ops[1], "-") != 0)
    {
      own = open (ops[1], O_RDONLY | O_CLOEXEC);
      if (own < 0)
        return sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, errno,
                              "volume import: open `%s`", ops[1]);
      fd = own;
    }
  bool made = false;
  if (sbx_volume_import (st, ops[0], fd, &made, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "name", ops[0]);
      j_kbool (g, "created", made);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s\n", ops[0]);
  return 0;
}

static const struct {
  const char *verb;
  int min, max; /* operands after the verb; max -1: no limit */
} verbs[] = {
  { "create", 1, 1 }, { "ls", 0, 0 }, { "inspect", 1, -1 }, { "rm", 1, -1 }, { "export", 2, 2 }, { "import", 2, 2 },
};

int
cmd_volume (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  struct volume_args a = { 0 };
  int first, r = cli_simple_parse (cli, "volume", argc, argv, 1, -1, &first, volume_opt, &a, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  const char *verb = argv[first];
  size_t v = 0;
  while (v < ARRAY_SIZE (verbs) && strcmp (verbs[v].verb, verb) != 0)
    v++;
  if (v == ARRAY_SIZE (verbs))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "volume: unknown verb `%s` (create, ls, inspect, rm, export, import)", verb);
  int n = argc - first - 1;
  if (n < verbs[v].min || (verbs[v].max >= 0 && n > verbs[v].max))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "volume %s: expected %s%d argument%s", verb,
                          verbs[v].max < 0 ? "at least " : "", verbs[v].min, verbs[v].min == 1 ? "" : "s");
  if (a.size_set && strcmp (verb, "create") != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "volume %s: --size does not apply", verb);
  if (a.quiet && strcmp (verb, "ls") != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "volume %s: --quiet does not apply", verb);
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  char **ops = argv + first + 1;
  if (strcmp (verb, "create") == 0)
    return volume_create (cli, st, ops, &a, err);
  if (strcmp (verb, "ls") == 0)
    return volume_ls (cli, st, &a, err);
  if (strcmp (verb, "inspect") == 0)
    return volume_inspect (st, ops, n, err);
  if (strcmp (verb, "rm") == 0)
    return volume_rm (cli, st, ops, n, err);
  if (strcmp (verb, "export") == 0)
    return volume_export (st, ops, err);
  return volume_import (cli, st, ops, err);
}
