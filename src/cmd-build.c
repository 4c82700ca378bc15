/* sbx build: a blueprint (man/sbx-blueprint.5) into an image; sbx commit: a
 * sandbox's files into one. */
#include "config.h"
#include "blueprint.h"
#include "caps.h"
#include "build.h"
#include "cli-progress.h"
#include "cli.h"
#include "commands.h"
#include "client.h"
#include "commit.h"
#include "sandbox.h"
#include "image.h"
#include "json.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

enum { O_FILE = 'f', O_TAG = 't', O_NO_CACHE = 256, O_RUNTIME };

const cli_opt sbx_build_cli_opts[] = {
  { "file", O_FILE, required_argument, "FILE", "the blueprint (default CONTEXT/blueprint.json; - for stdin)", "@file" },
  { "tag", O_TAG, required_argument, "NAME", "tag the image NAME", "@image" },
  { "no-cache", O_NO_CACHE, no_argument, NULL, "run every step again, whatever the cache holds" },
  { "runtime", O_RUNTIME, required_argument, "RUNTIME", "runtime of the build sandboxes: runsc (default) or runc",
    "runsc runc" },
  { NULL },
};

struct progress {
  bool tty;
  size_t steps, cached, config;
};

/* One line per step; on a terminal the line of the step being run is
 * rewritten in place once it is done. */
static void
on_step (void *data, size_t step, size_t nsteps, const char *what, sbx_build_step_how how)
{
  static const char *const label[] = { "run   ", "cached", "config" };
  struct progress *p = data;
  p->steps++;
  p->cached += how == SBX_BUILD_STEP_CACHED;
  p->config += how == SBX_BUILD_STEP_CONFIG;
  bool cached = how != SBX_BUILD_STEP_RUN; /* nothing runs: the line is final at once */
  char line[160];
  snprintf (line, sizeof line, "step %zu/%zu %s %s", step, nsteps, label[how], what);
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

/* A Ctrl-C, TERM or HUP held (see below) and not yet passed on. */
static bool
interrupted (void *data)
{
  (void) data;
  sigset_t pending;
  if (sigpending (&pending) < 0)
    return false;
  return sigismember (&pending, SIGINT) == 1 || sigismember (&pending, SIGTERM) == 1
         || sigismember (&pending, SIGHUP) == 1;
}

struct build_args {
  const char *file, *tag, *runtime;
  bool no_cache;
};

static int
build_opt (void *data, int key, const char *arg, sbx_error **err)
{
  struct build_args *b = data;
  switch (key)
    {
    case O_FILE:
      b->file = arg;
      break;
    case O_TAG:
      b->tag = arg;
      break;
    case O_NO_CACHE:
      b->no_cache = true;
      break;
    case O_RUNTIME:
      b->runtime = arg;
      break;
    default:
      break;
    }
  return 0;
}

int
cmd_build (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  struct build_args b = { .runtime = "runsc" };
  int first, parsed = cli_simple_parse (cli, "build", argc, argv, 0, 1, &first, build_opt, &b, err);
  if (parsed != 0)
    return parsed < 0 ? -1 : 0;
  const char *file = b.file, *tag = b.tag, *runtime = b.runtime;
  bool no_cache = b.no_cache;
  if (tag && !sbx_tag_name_is_valid (tag))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid tag `%s`", tag);
  if (strcmp (runtime, "runsc") != 0 && strcmp (runtime, "runc") != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "unknown runtime `%s` (expected runsc or runc)", runtime);
  const char *context = first < argc ? argv[first] : ".";
  _cleanup_free_ char *deffile = xasprintf ("%s/blueprint.json", context);
  _cleanup_free_ char *text = NULL;
  size_t len = 0;
  _cleanup_blueprint_ sbx_blueprint *bp = NULL;
  if (read_blueprint (file ? file : deffile, &text, &len, err) < 0 || sbx_blueprint_parse (text, len, &bp, err) < 0)
    return -1;
  sbx_store *st;
  if (sbx_caps_require ("build", err) < 0 || cli_store (cli, &st, err) < 0
      || sbx_store_begin_write (st, "build", err) < 0)
    return -1;
  struct progress pr = { .tty = isatty (2) };
  /* A base that is a registry reference is pulled when missing. */
  _cleanup_progress_ sbx_pull_opts po = { .platform = NULL };
  cli_progress_attach (&po, false);
  sbx_build_opts o = { .pull = &po,
                       .context = context,
                       .runtime = runtime,
                       .no_cache = no_cache,
                       .out_fd = 2,
                       .progress = on_step,
                       .stop = interrupted,
                       .data = &pr };
  _cleanup_free_ char *id = NULL;
  /* Ctrl-C, TERM and HUP are held for the whole build, so that none cuts
   * it between its steps (leaving a build sandbox behind): one that comes
   * while a step's command runs is passed on to it, which ends the build;
   * one that comes between commands is passed on to the next, or, when
   * the build is over by then, taken here. */
  sigset_t hold, old;
  sigemptyset (&hold);
  sigaddset (&hold, SIGINT);
  sigaddset (&hold, SIGTERM);
  sigaddset (&hold, SIGHUP);
  sigprocmask (SIG_BLOCK, &hold, &old);
  int r = sbx_build (st, bp, &o, &id, err);
  const struct timespec now = { 0, 0 };
  int pending = sigtimedwait (&hold, NULL, &now);
  sigprocmask (SIG_SETMASK, &old, NULL);
  if (pr.tty)
    fputs ("\r\033[K", stderr);
  /* Interrupted: not an error of sbx's, and not the blueprint's. Exits
   * 128 + the signal, as a shell. */
  int sig = sbx_client_interrupted ();
  if (sig == 0 && r < 0 && pending > 0)
    sig = pending;
  if (r < 0 && sig > 0)
    {
      fprintf (stderr, "sbx: build interrupted by signal %d; nothing was built from the step it was in%s\n", sig,
               tag ? ", and nothing tagged" : "");
      if (cli->json)
        {
          yajl_gen g = cli_json_begin ();
          j_map (g);
          j_kbool (g, "interrupted", true);
          j_kint (g, "signal", sig);
          j_endmap (g);
          cli_json_end (g);
        }
      return 128 + sig;
    }
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
      j_kint (g, "config", (long long) pr.config);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s\n", id);
  return 0;
}

const cli_opt sbx_commit_cli_opts[] = {
  { "tag", O_TAG, required_argument, "NAME", "tag the image NAME", "@image" },
  { NULL },
};

int
cmd_commit (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  const char *tag = NULL;
  int first, parsed = cli_simple_parse (cli, "commit", argc, argv, 1, 1, &first, cli_str_opt, &tag, err);
  if (parsed != 0)
    return parsed < 0 ? -1 : 0;
  if (tag && !sbx_tag_name_is_valid (tag))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid tag `%s`", tag);
  sbx_store *st;
  _cleanup_free_ char *id = NULL, *digest = NULL;
  _cleanup_image_ sbx_image *img = NULL;
  if (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, argv[first], &id, err) < 0
      || sbx_commit (st, id, tag, &img, &digest, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", img->id);
      j_kstr (g, "tag", tag);
      j_kstr (g, "sandbox", id);
      j_kstr (g, "layer", digest);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s\n", img->id);
  return 0;
}
