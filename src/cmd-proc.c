/* sbx ps, sbx proc: the processes started in a sandbox through the exec API,
 * as its monitor keeps them (running and recently ended, background output). */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "client.h"
#include "json.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

const cli_opt sbx_ps_cli_opts[] = {
  { "quiet", 'q', no_argument, NULL, "print pids only" },
  { NULL },
};

enum { O_TIMEOUT = 256, O_SIGNAL = 's', O_FOLLOW = 'f', O_QUIET = 'q' };
const cli_opt sbx_proc_cli_opts[] = {
  { "timeout", O_TIMEOUT, required_argument, "SECONDS", "wait: give up after SECONDS (error TIMEOUT)" },
  { "signal", O_SIGNAL, required_argument, "SIG", "kill: the signal, by name (TERM, SIGTERM) or number (default KILL)",
    "HUP INT QUIT KILL USR1 USR2 ALRM TERM CONT STOP" },
  { "follow", O_FOLLOW, no_argument, NULL, "logs: keep printing new output until the process exits" },
  { NULL },
};

/* "TERM", "SIGTERM", "term", "15" -> 15; -1 for anything else. */
static int
parse_signal (const char *s)
{
  int64_t n;
  if (parse_int64 (s, 1, 64, &n) == 0)
    return (int) n;
  if (strncasecmp (s, "SIG", 3) == 0)
    s += 3;
  for (int i = 1; i < SIGRTMIN; i++)
    {
      const char *name = sigabbrev_np (i);
      if (name && strcasecmp (name, s) == 0)
        return i;
    }
  return -1;
}

/* The options of ps/proc. FLAG: proc's --follow, or ps's --quiet. */
struct proc_args {
  int64_t timeout;
  int sig;
  bool flag;
};

static int
proc_opt (void *data, int key, const char *arg, sbx_error **err)
{
  struct proc_args *a = data;
  if (key == O_TIMEOUT)
    return cli_int ("timeout", arg, 1, 86400, &a->timeout, err);
  if (key == O_SIGNAL && (a->sig = parse_signal (arg)) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--signal: `%s` is not a signal name or number", arg);
  if (key == O_FOLLOW || key == O_QUIET)
    a->flag = true;
  return 0;
}

static const char *
jstr (yajl_val v, const char *k)
{
  const char *s = NULL;
  j_get_str (v, k, false, &s, NULL);
  return s ? s : "-";
}

static int64_t
jint (yajl_val v, const char *k, int64_t def)
{
  int64_t n = def;
  j_get_int (v, k, false, &n, NULL);
  return n;
}

int
cmd_ps (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  struct proc_args pa = { 0 };
  int first, key = cli_simple_parse (cli, "ps", argc, argv, 1, 1, &first, proc_opt, &pa, err);
  if (key != 0)
    return key < 0 ? -1 : 0;
  bool quiet = pa.flag;
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, argv[first], &id, err) < 0
      || sbx_client_ps (st, id, &v, err) < 0)
    return -1;
  yajl_val procs = j_get (v, "processes");
  if (!YAJL_IS_ARRAY (procs))
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "ps: malformed answer from the monitor");
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_val (g, procs);
      cli_json_end (g);
      return 0;
    }
  if (!quiet)
    printf ("%-7s %-9s %-5s %-10s %-20s %s\n", "PID", "STATE", "EXIT", "MODE", "STARTED", "COMMAND");
  for (size_t i = 0; i < procs->u.array.len; i++)
    {
      yajl_val p = procs->u.array.values[i];
      if (quiet)
        {
          printf ("%lld\n", (long long) jint (p, "pid", 0));
          continue;
        }
      char started[32], code[24] = "-";
      format_time (jint (p, "started_at", 0), started, sizeof started);
      int64_t ec = jint (p, "exit_code", -1);
      if (ec >= 0)
        snprintf (code, sizeof code, "%lld", (long long) ec);
      bool bg = false;
      j_get_bool (p, "background", false, &bg, NULL);
      printf ("%-7lld %-9s %-5s %-10s %-20s %s\n", (long long) jint (p, "pid", 0), jstr (p, "state"), code,
              bg ? "background" : "attached", started, jstr (p, "command"));
    }
  return 0;
}

static void
print_proc (yajl_val p)
{
  char started[32] = "-", ended[32] = "-";
  format_time (jint (p, "started_at", 0), started, sizeof started);
  if (jint (p, "ended_at", 0) > 0)
    format_time (jint (p, "ended_at", 0), ended, sizeof ended);
  bool bg = false, to = false;
  j_get_bool (p, "background", false, &bg, NULL);
  j_get_bool (p, "timed_out", false, &to, NULL);
  printf ("pid:        %lld\ncommand:    %s\nstate:      %s\nmode:       %s\nstarted:    %s\nended:      %s\n",
          (long long) jint (p, "pid", 0), jstr (p, "command"), jstr (p, "state"), bg ? "background" : "attached",
          started, ended);
  if (jint (p, "exit_code", -1) >= 0)
    printf ("exit code:  %lld%s\n", (long long) jint (p, "exit_code", 0), to ? " (timed out)" : "");
  if (jint (p, "signal", 0) > 0)
    printf ("signal:     %lld\n", (long long) jint (p, "signal", 0));
  if (bg)
    printf ("dropped:    %lld bytes of output\n", (long long) jint (p, "output_dropped", 0));
}

static int
exit_code_of (yajl_val p)
{
  int64_t ec = jint (p, "exit_code", -1);
  return ec >= 0 && ec <= 255 ? (int) ec : 0;
}

/* logs --json: the output captured, then one document. */
static int
logs_json (const sbx_store *st, const char *id, int64_t pid, bool follow, sbx_error **err)
{
  _cleanup_close_ int out = memfd_create ("sbx-stdout", MFD_CLOEXEC);
  _cleanup_close_ int errfd = memfd_create ("sbx-stderr", MFD_CLOEXEC);
  if (out < 0 || errfd < 0)
    return sbx_error_errno (err, errno, "memfd_create");
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (sbx_client_proc_logs (st, id, pid, follow, out, errfd, &v, err) < 0)
    return -1;
  size_t ol, el;
  _cleanup_free_ char *o = cli_read_back (out, &ol);
  _cleanup_free_ char *e = cli_read_back (errfd, &el);
  yajl_gen g = cli_json_begin ();
  j_map (g);
  for (size_t i = 0; YAJL_IS_OBJECT (v) && i < v->u.object.len; i++)
    {
      j_str (g, v->u.object.keys[i]);
      j_val (g, v->u.object.values[i]);
    }
  j_str (g, "stdout");
  j_strn (g, o, ol);
  j_str (g, "stderr");
  j_strn (g, e, el);
  j_endmap (g);
  cli_json_end (g);
  return 0;
}

int
cmd_proc (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  struct proc_args pa = { 0 };
  int first, key = cli_simple_parse (cli, "proc", argc, argv, 3, 3, &first, proc_opt, &pa, err);
  if (key != 0)
    return key < 0 ? -1 : 0;
  int sig = pa.sig;
  int64_t timeout = pa.timeout, pid;
  bool follow = pa.flag;
  const char *action = argv[first + 2];
  static const char *const actions[] = { "status", "wait", "kill", "logs" };
  size_t a = 0;
  while (a < ARRAY_SIZE (actions) && strcmp (actions[a], action) != 0)
    a++;
  if (a == ARRAY_SIZE (actions))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "proc: unknown action `%s` (status, wait, kill, logs)",
                          action);
  if (parse_int64 (argv[first + 1], 1, INT32_MAX, &pid) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "proc: `%s` is not a pid", argv[first + 1]);
  if ((timeout && a != 1) || (sig && a != 2) || (follow && a != 3))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "proc %s: --%s does not apply", action,
                          timeout && a != 1 ? "timeout"
                          : sig && a != 2   ? "signal"
                                            : "follow");
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  if (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, argv[first], &id, err) < 0)
    return -1;
  if (a == 3 && cli->json)
    return logs_json (st, id, pid, follow, err);
  _cleanup_yajl_val_ yajl_val v = NULL;
  int r;
  switch (a)
    {
    case 0:
      r = sbx_client_proc_status (st, id, pid, &v, err);
      break;
    case 1:
      r = sbx_client_proc_wait (st, id, pid, timeout * 1000, &v, err);
      break;
    case 2:
      r = sbx_client_proc_kill (st, id, pid, sig ? sig : SIGKILL, &v, err);
      break;
    default:
      r = sbx_client_proc_logs (st, id, pid, follow, 1, 2, &v, err);
      break;
    }
  if (r < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_val (g, v);
      cli_json_end (g);
    }
  else if (a == 0)
    print_proc (v);
  else if (a == 1)
    printf ("%d\n", exit_code_of (v));
  else if (a == 3 && jint (v, "output_dropped", 0) > 0)
    /* On stderr, after the output: what was printed is not all there was. */
    fprintf (stderr,
             "sbx: %lld bytes of this process's output were dropped before what is shown (the newest 1 MiB of "
             "each background process is kept, 16 MiB for all of a sandbox's)\n",
             (long long) jint (v, "output_dropped", 0));
  /* wait exits with the process's status, as the shell's `wait` does. */
  return a == 1 ? exit_code_of (v) : 0;
}
