/* Registry commands: `sbx pull` (sbx-pull(1)). The library does the pull
 * (pull.h); this parses, draws the progress on a terminal and turns
 * SIGINT/SIGTERM into a cancel that keeps the finished layers. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli-progress.h"
#include "commands.h"
#include "conf.h"
#include "json.h"
#include "pull.h"
#include "util.h"

enum { O_QUIET = 'q', O_PLATFORM = 256 };

const cli_opt sbx_pull_cli_opts[] = {
  { "platform", O_PLATFORM, required_argument, "OS/ARCH[/VARIANT]",
    "the image for this platform from a multi-platform index (default: this host's)",
    "linux/amd64 linux/arm64 linux/arm64/v8 linux/arm/v7 linux/386 linux/ppc64le linux/s390x linux/riscv64" },
  { "quiet", O_QUIET, no_argument, NULL, "no progress on stderr" },
  { NULL },
};

typedef struct pull_args {
  const char *platform;
  bool quiet;
} pull_args;

static int
pull_opt (void *data, int key, const char *arg, sbx_error **err)
{
  pull_args *a = data;
  (void) err;
  if (key == O_PLATFORM)
    a->platform = arg;
  else if (key == O_QUIET)
    a->quiet = true;
  return 0;
}

static volatile sig_atomic_t pull_cancel;

static void
on_signal (int sig)
{
  pull_cancel = sig;
}

/* ---- the progress on a terminal: one line per layer, redrawn ---- */

#define BAR_WIDTH 24

typedef struct layer_line {
  char digest[13];
  uint64_t done, total;
  uint64_t started_ms, finished_ms;
  bool present, finished;
} layer_line;

typedef struct progress {
  layer_line lines[SBX_PULL_LAYERS_MAX];
  unsigned n;     /* lines in use, in the order they appeared */
  unsigned drawn; /* lines on the screen */
  uint64_t last_ms;
} progress;

static void
human (uint64_t v, char *buf, size_t len)
{
  if (v >= 1ULL << 30)
    snprintf (buf, len, "%.1f GiB", (double) v / (1ULL << 30));
  else if (v >= 1ULL << 20)
    snprintf (buf, len, "%.1f MiB", (double) v / (1ULL << 20));
  else if (v >= 1ULL << 10)
    snprintf (buf, len, "%.1f KiB", (double) v / (1ULL << 10));
  else
    snprintf (buf, len, "%llu B", (unsigned long long) v);
}

static layer_line *
line_of (progress *p, const char *digest)
{
  const char *hex = strncmp (digest, "sha256:", 7) == 0 ? digest + 7 : digest;
  for (unsigned i = 0; i < p->n; i++)
    if (strncmp (p->lines[i].digest, hex, 12) == 0)
      return &p->lines[i];
  if (p->n == SBX_PULL_LAYERS_MAX)
    return NULL;
  layer_line *l = &p->lines[p->n++];
  *l = (layer_line){ .started_ms = now_ms_monotonic () };
  snprintf (l->digest, sizeof l->digest, "%.12s", hex);
  return l;
}

static void
draw (progress *p)
{
  if (p->drawn)
    fprintf (stderr, "\033[%uA", p->drawn);
  uint64_t now = now_ms_monotonic ();
  for (unsigned i = 0; i < p->n; i++)
    {
      layer_line *l = &p->lines[i];
      fprintf (stderr, "\r\033[K%s  ", l->digest);
      if (l->present)
        {
          fputs ("already present\n", stderr);
          continue;
        }
      char done[32], total[32], rate[32];
      human (l->done, done, sizeof done);
      human (l->total, total, sizeof total);
      uint64_t ms = (l->finished ? l->finished_ms : now) - l->started_ms;
      human (ms ? l->done * 1000 / ms : 0, rate, sizeof rate);
      unsigned fill = l->total ? (unsigned) (l->done * BAR_WIDTH / l->total) : 0;
      char bar[BAR_WIDTH + 1];
      for (unsigned k = 0; k < BAR_WIDTH; k++)
        bar[k] = k < fill ? '#' : '.';
      bar[BAR_WIDTH] = '\0';
      fprintf (stderr, "%9s / %-9s %9s/s  [%s]%s\n", done, total, rate, bar, l->finished ? " done" : "");
    }
  p->drawn = p->n;
  fflush (stderr);
}

static void
on_progress (void *ud, const sbx_pull_event *ev)
{
  progress *p = ud;
  layer_line *l = ev->digest ? line_of (p, ev->digest) : NULL;
  if (l)
    {
      l->total = ev->total;
      switch (ev->kind)
        {
        case SBX_PULL_EV_LAYER_PRESENT:
          l->present = true;
          break;
        case SBX_PULL_EV_LAYER_START:
          l->started_ms = now_ms_monotonic ();
          break;
        case SBX_PULL_EV_LAYER_PROGRESS:
          l->done = ev->done;
          break;
        case SBX_PULL_EV_LAYER_DONE:
          l->done = ev->total;
          l->finished = true;
          l->finished_ms = now_ms_monotonic ();
          break;
        default:
          break;
        }
    }
  uint64_t now = now_ms_monotonic ();
  if (ev->kind == SBX_PULL_EV_LAYER_PROGRESS && now - p->last_ms < 100)
    return;
  p->last_ms = now;
  draw (p);
}

static void
print_image (sbx_cli *cli, const sbx_store *st, const sbx_image *img)
{
  if (!cli->json)
    {
      printf ("%s\n", img->id);
      return;
    }
  _cleanup_strv_ char **tags = NULL;
  if (sbx_tags_of (st, img->id, &tags, NULL) < 0)
    tags = xmalloc0 (sizeof (char *));
  yajl_gen g = cli_json_begin ();
  j_map (g);
  j_kstr (g, "id", img->id);
  j_kstrv (g, "tags", tags);
  j_kint (g, "size", (long long) img->size);
  j_kstrv (g, "layers", img->layers);
  j_kint (g, "created", img->created);
  j_endmap (g);
  cli_json_end (g);
}

int
cmd_pull (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  pull_args a = { 0 };
  int first, parsed = cli_simple_parse (cli, "pull", argc, argv, 1, 1, &first, pull_opt, &a, err);
  if (parsed != 0)
    return parsed < 0 ? -1 : 0;
  sbx_store *st;
  _cleanup_conf_ sbx_conf *conf = NULL;
  if (sbx_conf_load (NULL, &conf, err) < 0 || cli_store (cli, &st, err) < 0)
    return -1;

  _cleanup_progress_ sbx_pull_opts o = { .platform = a.platform, .cancel = &pull_cancel };
  cli_progress_attach (&o, a.quiet);
  struct sigaction sa = { .sa_handler = on_signal }, old_int, old_term;
  sigemptyset (&sa.sa_mask);
  sigaction (SIGINT, &sa, &old_int);
  sigaction (SIGTERM, &sa, &old_term);
  _cleanup_image_ sbx_image *img = NULL;
  int rc = sbx_pull (st, conf, argv[first], &o, &img, NULL, err);
  sigaction (SIGINT, &old_int, NULL);
  sigaction (SIGTERM, &old_term, NULL);
  if (rc < 0 && pull_cancel)
    {
      /* Stopped by a signal: the status says which, as a shell's would. */
      int sig = pull_cancel;
      fprintf (stderr, "sbx: pull %s interrupted by %s: the finished layers are kept\n", argv[first],
               sig == SIGINT ? "SIGINT" : "SIGTERM");
      return 128 + sig;
    }
  if (rc < 0)
    return -1;
  print_image (cli, st, img);
  return 0;
}

void
cli_progress_attach (sbx_pull_opts *o, bool quiet)
{
  if (quiet || !isatty (STDERR_FILENO))
    return;
  o->progress = on_progress;
  o->ud = xmalloc0 (sizeof (progress));
}

void
cli_progress_detach (sbx_pull_opts *o)
{
  if (o->progress != on_progress)
    return;
  free (o->ud);
  o->progress = NULL;
  o->ud = NULL;
}
