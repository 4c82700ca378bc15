/* sbx exec: run a command in a running sandbox through its agent. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "client.h"
#include "json.h"
#include "sandbox.h"
#include "util.h"

#include <getopt.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include <string.h>

enum { O_ENV = 'e', O_CWD = 256, O_USER, O_TIMEOUT, O_STDIN = 'i', O_TTY = 't', O_DETACH = 'd' };

const cli_opt sbx_exec_cli_opts[] = {
  { "interactive", O_STDIN, no_argument, NULL, "pass stdin to the command (EOF closes it)" },
  { "tty", O_TTY, no_argument, NULL, "run the command on a terminal inside the sandbox (stdout and stderr merged)" },
  { "detach", O_DETACH, no_argument, NULL, "start the command in the background and print its pid (see `sbx proc`)" },
  { "env", O_ENV, required_argument, "KEY=VALUE", "set an environment variable (repeatable)" },
  { "cwd", O_CWD, required_argument, "DIR", "working directory (absolute)" },
  { "user", O_USER, required_argument, "UID[:GID]", "run as this numeric user" },
  { "timeout", O_TIMEOUT, required_argument, "SECONDS", "kill the command after SECONDS (1..86400); exit status 124" },
  { NULL },
};

static int
exec_opt (sbx_exec_opts *eo, int key, const char *arg, sbx_error **err)
{
  int64_t t;
  switch (key)
    {
    case O_STDIN:
      eo->stdin_open = true;
      return 0;
    case O_TTY:
      eo->tty = true;
      return 0;
    case O_DETACH:
      eo->detach = true;
      return 0;
    case O_ENV:
      if (!env_entry_is_valid (arg))
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--env: `%s` is not KEY=VALUE with a valid KEY", arg);
      strv_push (&eo->env, arg);
      return 0;
    case O_CWD:
      if (arg[0] != '/')
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--cwd: `%s` is not an absolute path", arg);
      eo->cwd = arg;
      return 0;
    case O_USER:
      eo->user = arg;
      return 0;
    case O_TIMEOUT:
      if (cli_int ("timeout", arg, 1, 86400, &t, err) < 0)
        return -1;
      eo->timeout_ms = t * 1000;
      return 0;
    default:
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "unexpected option");
    }
}

/* With -t: the command's terminal gets our size, and with -i our terminal
 * goes raw so that keys (^C included) reach the command as they are typed.
 * Returns whether the caller must restore SAVED. */
static bool
tty_begin (sbx_exec_opts *eo, struct termios *saved)
{
  struct winsize ws;
  if (ioctl (0, TIOCGWINSZ, &ws) == 0 || ioctl (1, TIOCGWINSZ, &ws) == 0)
    {
      eo->rows = ws.ws_row;
      eo->cols = ws.ws_col;
    }
  if (!eo->stdin_open || !isatty (0) || tcgetattr (0, saved) < 0)
    return false;
  struct termios raw = *saved;
  cfmakeraw (&raw);
  return tcsetattr (0, TCSADRAIN, &raw) == 0;
}

/* exec -d: the monitor answers with the pid once the command runs (a
 * command that cannot start is its 126/127 as for any exec). */
static int
exec_detached (sbx_cli *cli, const sbx_store *st, const char *id, sbx_exec_opts *eo, int *status, sbx_error **err)
{
  uint32_t pid = 0;
  eo->ret_pid = &pid;
  if (sbx_client_exec (st, id, eo, -1, 1, 2, status, err) < 0)
    return -1;
  if (pid == 0)
    return 0; /* *status says why it did not start */
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", id);
      j_kint (g, "pid", pid);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%u\n", pid);
  return 0;
}

static int
exec_cb (void *data, int key, const char *arg, sbx_error **err)
{
  return exec_opt (data, key, arg, err);
}

int
cmd_exec (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  sbx_exec_opts eo = { .env = xmalloc0 (sizeof (char *)) };
  /* ID, then (after an optional "--") the command. */
  int first, ret = 0, status = 0, r = cli_simple_parse (cli, "exec", argc, argv, 2, -1, &first, exec_cb, &eo, err);
  if (r != 0)
    {
      strv_free (eo.env);
      return r < 0 ? -1 : 0;
    }
  int cmd = first + 1;
  if (ret == 0 && strcmp (argv[cmd], "--") == 0)
    cmd++;
  if (ret == 0 && cmd >= argc)
    ret = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "exec: no command given");
  if (ret == 0 && eo.detach && eo.stdin_open)
    ret = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "exec: a background command (-d) takes no stdin (-i)");
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  if (ret == 0 && (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, argv[first], &id, err) < 0))
    ret = -1;
  if (ret == 0)
    {
      /* Straight to the monitor: the record is read only to explain why
       * nothing answered. */
      eo.argv = argv + cmd;
      struct termios saved;
      bool raw = eo.tty && !cli->json && !eo.detach && tty_begin (&eo, &saved);
      if (eo.detach)
        ret = exec_detached (cli, st, id, &eo, &status, err);
      else
        ret = cli_exec (cli, st, id, &eo, &status, err);
      if (raw)
        tcsetattr (0, TCSADRAIN, &saved); /* every return path passes here */
      _cleanup_sandbox_ sbx_sandbox *sb = NULL;
      if (ret < 0 && (*err)->code == SBX_E_SANDBOX_NOT_RUNNING && sbx_sandbox_get (st, id, &sb, NULL) == 0
          && sb->state != SBX_STATE_RUNNING)
        sbx_error_set (err, SBX_E_SANDBOX_NOT_RUNNING, 0, "sandbox %s is %s", id, sbx_state_name (sb->state));
      if (ret == 0)
        ret = status;
    }
  strv_free (eo.env);
  return ret;
}

/* run-code: a snippet run by the image's interpreter, given as its -c/-e
 * argument so that the snippet keeps stdin for itself. */
static const struct {
  const char *lang, *interp, *flag;
} langs[] = {
  { "python", "python3", "-c" },
  { "sh", "sh", "-c" },
  { "bash", "bash", "-c" },
  { "node", "node", "-e" },
};

#define CODE_MAX (200 * 1024)

enum { O_LANG = 'l' };
const cli_opt sbx_run_code_cli_opts[] = {
  { "lang", O_LANG, required_argument, "LANG", "python (default), sh, bash or node", "python sh bash node" },
  { "env", O_ENV, required_argument, "KEY=VALUE", "set an environment variable (repeatable)" },
  { "cwd", O_CWD, required_argument, "DIR", "working directory (absolute)" },
  { "timeout", O_TIMEOUT, required_argument, "SECONDS", "kill the snippet after SECONDS (1..86400); exit status 124" },
  { NULL },
};

static int
read_code (const char *arg, char **ret, sbx_error **err)
{
  if (strcmp (arg, "-") != 0)
    {
      if (strlen (arg) > CODE_MAX)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the code is larger than %d bytes", CODE_MAX);
      *ret = xstrdup (arg);
      return 0;
    }
  char *buf = xmalloc (CODE_MAX + 2);
  ssize_t n = read_all (0, buf, CODE_MAX + 1);
  if (n < 0)
    {
      free (buf);
      return sbx_error_errno (err, (int) -n, "read the code from stdin");
    }
  if (n > CODE_MAX || memchr (buf, '\0', (size_t) n))
    {
      free (buf);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the code on stdin is larger than %d bytes or has a NUL",
                            CODE_MAX);
    }
  buf[n] = '\0';
  *ret = buf;
  return 0;
}

struct run_code_args {
  sbx_exec_opts eo;
  const char *lang;
};

static int
run_code_cb (void *data, int key, const char *arg, sbx_error **err)
{
  struct run_code_args *a = data;
  if (key != O_LANG)
    return exec_opt (&a->eo, key, arg, err);
  a->lang = arg;
  return 0;
}

int
cmd_run_code (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  struct run_code_args a = { .eo = { .env = xmalloc0 (sizeof (char *)) }, .lang = "python" };
  sbx_exec_opts eo;
  const char *lang;
  int ret = 0, status = 0, first;
  int key = cli_simple_parse (cli, "run-code", argc, argv, 2, 2, &first, run_code_cb, &a, err);
  eo = a.eo;
  lang = a.lang;
  size_t li = 0;
  while (key == 0 && li < ARRAY_SIZE (langs) && strcmp (langs[li].lang, lang) != 0)
    li++;
  if (key == 0 && li == ARRAY_SIZE (langs))
    key = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "run-code: unknown --lang `%s` (python, sh, bash, node)",
                         lang);
  _cleanup_free_ char *code = NULL, *id = NULL, *missing = NULL;
  sbx_store *st;
  if (key == 0
      && (read_code (argv[first + 1], &code, err) < 0 || cli_store (cli, &st, err) < 0
          || cli_sandbox_id (cli, argv[first], &id, err) < 0))
    key = -1;
  if (key == 0)
    {
      char *cmd[] = { (char *) langs[li].interp, (char *) langs[li].flag, code, NULL };
      missing = xasprintf ("the sandbox's image has no `%s` for --lang %s", langs[li].interp, lang);
      eo.argv = cmd;
      eo.not_found_msg = missing;
      ret = cli_exec (cli, st, id, &eo, &status, err);
      if (ret == 0)
        ret = status;
    }
  strv_free (eo.env);
  if (key == 1)
    return 0;
  return key < 0 ? -1 : ret;
}
