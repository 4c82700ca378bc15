/* sbx build: a blueprint (man/sbx-blueprint.5) into an image. */
#include "config.h"
#include "blueprint.h"
#include "build.h"
#include "cli.h"
#include "image.h"
#include "json.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

enum { O_FILE = 'f', O_TAG = 't', O_NO_CACHE = 256, O_RUNTIME };

const cli_opt sbx_build_cli_opts[] = {
  { "file", O_FILE, required_argument, "FILE", "the blueprint (default CONTEXT/blueprint.json; - for stdin)" },
  { "tag", O_TAG, required_argument, "NAME", "tag the image NAME" },
  { "no-cache", O_NO_CACHE, no_argument, NULL, "run every step again, whatever the cache holds" },
  { "runtime", O_RUNTIME, required_argument, "RUNTIME", "runtime of the build sandboxes: runsc (default) or runc" },
  { NULL },
};

struct progress {
  bool tty;
  size_t steps, cached;
};

/* One line per step; on a terminal the line of the step being run is
 * rewritten in place once it is done. */
static void
on_step (void *data, size_t step, size_t nsteps, const char *what, bool cached)
{
  struct progress *p = data;
  p->steps++;
  p->cached += cached;
  char line[160];
  snprintf (line, sizeof line, "step %zu/%zu %s %s", step, nsteps, cached ? "cached" : "run   ", what);
  if (strlen (line) > 150)
    strcpy (line + 147, "...");
  if (p->tty)
    fprintf (stderr, "\r\033[K\033[1m%s\033[0m%s", line, cached ? "" : "\n");
  else
    fprintf (stderr, "%s\n", line);
  fflush (stderr);
}

static int
read_blueprint (const char *file, char **ret, size_t *len, sbx_error **err)
{
  if (strcmp (file, "-") == 0)
    {
      char *buf = xmalloc (SBX_BLUEPRINT_MAX + 1);
      ssize_t n = read_all (0, buf, SBX_BLUEPRINT_MAX + 1);
      if (n < 0 || n > SBX_BLUEPRINT_MAX)
        {
          free (buf);
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, n < 0 ? (int) -n : 0,
                                "blueprint on stdin: unreadable or larger than 1 MiB");
        }
      buf[n] = '\0';
      *ret = buf;
      *len = (size_t) n;
      return 0;
    }
  sbx_error *e = NULL;
  if (read_file (file, SBX_BLUEPRINT_MAX, ret, len, &e) < 0)
    {
      sbx_code c = e->errnum == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT;
      sbx_error_free (e);
      return sbx_error_set (err, c, 0, "blueprint `%s`: cannot be read (or larger than 1 MiB)", file);
    }
  return 0;
}

int
cmd_build (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  const char *file = NULL, *tag = NULL, *runtime = "runsc";
  bool no_cache = false;
  cli_parser p;
  cli_parser_init (&p, cli, cli_find ("build"), argc, argv);
  int key;
  const char *arg;
  while ((key = cli_next (&p, &arg, err)) > 0 && key != 'h')
    switch (key)
      {
      case O_FILE:
        file = arg;
        break;
      case O_TAG:
        tag = arg;
        break;
      case O_NO_CACHE:
        no_cache = true;
        break;
      case O_RUNTIME:
        runtime = arg;
        break;
      default:
        break;
      }
  cli_parser_done (&p);
  if (key != 0)
    return key < 0 ? -1 : 0;
  if (argc - optind > 1)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "build: usage: sbx build [-f FILE] [--tag NAME] [CONTEXT]");
  if (tag && !name_is_valid (tag))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid tag `%s`", tag);
  if (strcmp (runtime, "runsc") != 0 && strcmp (runtime, "runc") != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "unknown runtime `%s` (expected runsc or runc)", runtime);
  const char *context = optind < argc ? argv[optind] : ".";
  _cleanup_free_ char *deffile = xasprintf ("%s/blueprint.json", context);
  _cleanup_free_ char *text = NULL;
  size_t len = 0;
  _cleanup_blueprint_ sbx_blueprint *bp = NULL;
  if (read_blueprint (file ? file : deffile, &text, &len, err) < 0 || sbx_blueprint_parse (text, len, &bp, err) < 0)
    return -1;
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  struct progress pr = { .tty = isatty (2) };
  sbx_build_opts o = { .context = context, .runtime = runtime, .no_cache = no_cache, .out_fd = 2,
                       .progress = on_step, .data = &pr };
  _cleanup_free_ char *id = NULL;
  int r = sbx_build (st, bp, &o, &id, err);
  if (pr.tty)
    fputs ("\r\033[K", stderr);
  if (r < 0 || (tag && sbx_tag_set (st, tag, id, err) < 0))
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", id);
      j_kstr (g, "tag", tag);
      j_kint (g, "steps", (long long) bp->nsteps);
      j_kint (g, "cached", (long long) pr.cached);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s\n", id);
  return 0;
}
