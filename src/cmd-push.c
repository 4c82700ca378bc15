/* sbx push IMAGE REF: a local image to a registry (pull.h sbx_push). */
#include "config.h"
#include "cli-progress.h"
#include "cli.h"
#include "commands.h"
#include "json.h"
#include "pull.h"
#include "util.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const cli_opt sbx_push_opts[] = {
  { "quiet", 'q', no_argument, NULL, "no progress on stderr" },
  { NULL },
};

static volatile sig_atomic_t push_signal;

static void
on_signal (int sig)
{
  push_signal = sig;
}

/* SIGINT and SIGTERM stop the push between two writes (the library sees
 * push_signal); the command then exits 128 + the signal, as a shell's
 * command killed by it would. */
static void
catch_signals (void)
{
  struct sigaction sa = { .sa_handler = on_signal };
  sigemptyset (&sa.sa_mask);
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
}

int
cmd_push (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  bool quiet = false;
  int first, r = cli_simple_parse (cli, "push", argc, argv, 2, 2, &first, cli_flag_opt, &quiet, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  const char *image = argv[first], *dest = argv[first + 1];
  _cleanup_conf_ sbx_conf *conf = NULL;
  sbx_store *st;
  if (sbx_conf_load (NULL, &conf, err) < 0 || cli_store (cli, &st, err) < 0)
    return -1;
  catch_signals ();
  _cleanup_progress_ sbx_pull_opts po = { .cancel = &push_signal };
  cli_progress_attach (&po, quiet);
  _cleanup_free_ char *digest = NULL;
  _cleanup_error_ sbx_error *e = NULL;
  r = sbx_push (st, conf, image, dest, &po, &digest, &e);
  if (r < 0 && push_signal)
    {
      fprintf (stderr, "sbx: push of `%s` to `%s` interrupted (signal %d)\n", image, dest, (int) push_signal);
      return 128 + push_signal;
    }
  if (r < 0)
    {
      *err = steal_pointer (&e);
      return -1;
    }
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "image", image);
      j_kstr (g, "ref", dest);
      j_kstr (g, "digest", digest);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s\n", digest);
  return 0;
}
