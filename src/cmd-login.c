/* Registry credentials: login and logout (sbx-pull(1)). The password comes
 * from stdin (--password-stdin) or a prompt with echo off, never from argv;
 * login checks it against the registry (sbx_registry_ping) before it stores
 * anything in ROOT/auth.json. Neither command prints a user name or a
 * secret, in text or in --json. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "conf.h"
#include "json.h"
#include "regauth.h"
#include "registry.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

enum { OPT_PASSWORD_STDIN = 256 };

const cli_opt sbx_login_opts[] = {
  { "username", 'u', required_argument, "USER", "the user name (required)" },
  { "password-stdin", OPT_PASSWORD_STDIN, no_argument, NULL,
    "read the password from stdin (one trailing newline is dropped); without it, a terminal prompts" },
  { NULL },
};

const cli_opt sbx_logout_opts[] = {
  { "all", 'a', no_argument, NULL, "remove every registry's credentials from sbx's auth file" },
  { NULL },
};

typedef struct login_args {
  const char *username;
  bool password_stdin;
} login_args;

static int
login_opt (void *data, int key, const char *arg, sbx_error **err)
{
  login_args *a = data;
  if (key == 'u')
    a->username = arg;
  else
    a->password_stdin = true;
  return 0;
}

/* The registry as login and logout take it: HOST[:PORT][/PREFIX], a URL's
 * scheme and trailing slashes dropped (podman and docker accept those). */
static char *
registry_arg (const char *s)
{
  if (strncmp (s, "https://", 8) == 0)
    s += 8;
  else if (strncmp (s, "http://", 7) == 0)
    s += 7;
  size_t n = strlen (s);
  while (n > 0 && s[n - 1] == '/')
    n--;
  return xstrndup (s, n);
}

/* ---- the password ---- */

typedef struct secret_buf {
  char buf[SBX_AUTH_FIELD_MAX + 3];
  size_t len;
} secret_buf;

static void
secret_buf_wipe (secret_buf *s)
{
  explicit_bzero (s->buf, sizeof s->buf);
}

/* Up to one line (or all of stdin) into S: the terminator and one trailing
 * "\n" (or "\r\n") dropped. */
static int
read_password (int fd, bool line, secret_buf *s, sbx_error **err)
{
  s->len = 0;
  for (;;)
    {
      char c;
      ssize_t r = read (fd, &c, 1);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return sbx_error_errno (err, errno, "login: read the password");
      if (r == 0 || (line && c == '\n'))
        break;
      if (s->len == sizeof s->buf - 1)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "login: the password is longer than %d bytes",
                              SBX_AUTH_FIELD_MAX);
      s->buf[s->len++] = c;
    }
  if (!line && s->len > 0 && s->buf[s->len - 1] == '\n')
    s->len--;
  if (s->len > 0 && s->buf[s->len - 1] == '\r')
    s->len--;
  s->buf[s->len] = '\0';
  if (s->len == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "login: the password is empty");
  bool control = false;
  for (size_t i = 0; i < s->len; i++)
    control |= (unsigned char) s->buf[i] < 0x20 || s->buf[i] == 0x7f;
  if (control || s->len > SBX_AUTH_FIELD_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "login: the password must be 1 to %d bytes with no control character", SBX_AUTH_FIELD_MAX);
  return 0;
}

/* The terminal's settings while echo is off, for the signal handler. */
static struct termios saved_tty;
static volatile sig_atomic_t tty_saved;

static void
restore_tty (int sig)
{
  if (tty_saved)
    tcsetattr (STDIN_FILENO, TCSAFLUSH, &saved_tty);
  signal (sig, SIG_DFL);
  raise (sig);
}

static int
prompt_password (secret_buf *s, sbx_error **err)
{
  if (tcgetattr (STDIN_FILENO, &saved_tty) < 0)
    return sbx_error_errno (err, errno, "login: the terminal");
  struct termios quiet = saved_tty;
  quiet.c_lflag &= (tcflag_t) ~(ECHO | ECHONL);
  struct sigaction sa = { .sa_handler = restore_tty }, old_int, old_term;
  sigaction (SIGINT, &sa, &old_int);
  sigaction (SIGTERM, &sa, &old_term);
  tty_saved = 1;
  fputs ("Password: ", stderr);
  fflush (stderr);
  int r = tcsetattr (STDIN_FILENO, TCSAFLUSH, &quiet) < 0 ? sbx_error_errno (err, errno, "login: the terminal") : 0;
  if (r == 0)
    r = read_password (STDIN_FILENO, true, s, err);
  tcsetattr (STDIN_FILENO, TCSAFLUSH, &saved_tty);
  tty_saved = 0;
  sigaction (SIGINT, &old_int, NULL);
  sigaction (SIGTERM, &old_term, NULL);
  fputc ('\n', stderr);
  return r;
}

/* ---- the commands ---- */

static void
print_result (sbx_cli *cli, const char *registry, const char *key, const char *text)
{
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "registry", registry);
      j_kbool (g, key, true);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    puts (text);
}

/* getopt would take `--password` (or `--pass`) for --password-stdin, an
 * abbreviation: refuse it by name, as a password in argv is what this
 * command exists to avoid (other users see argv in /proc). */
static int
refuse_password_arg (int argc, char **argv, sbx_error **err)
{
  static const char full[] = "--password-stdin";
  for (int i = 1; i < argc && strcmp (argv[i], "--") != 0; i++)
    {
      size_t n = strcspn (argv[i], "=");
      if (n > 2 && n < sizeof full - 1 && strncmp (argv[i], full, n) == 0 && (n >= 6 || argv[i][n] == '='))
        return cli_usage_error (cli_find ("login"), err,
                                "there is no --password option: a password in argv is visible to other users; "
                                "pipe it to --password-stdin");
    }
  return 0;
}

int
cmd_login (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  if (refuse_password_arg (argc, argv, err) < 0)
    return -1;
  login_args a = { 0 };
  int first, parsed = cli_simple_parse (cli, "login", argc, argv, 1, 1, &first, login_opt, &a, err);
  if (parsed != 0)
    return parsed < 0 ? -1 : 0;
  const sbx_command *cmd = cli_find ("login");
  if (a.username == NULL)
    return cli_usage_error (cmd, err, "--username is required");
  /* Checked before anything is sent, as sbx_auth_store would. */
  bool control = false;
  for (const char *c = a.username; *c; c++)
    control |= (unsigned char) *c < 0x20 || *c == 0x7f || *c == ':';
  if (*a.username == '\0' || control || strlen (a.username) > SBX_AUTH_FIELD_MAX)
    return cli_usage_error (cmd, err, "--username: 1 to %d bytes with no `:` and no control character",
                            SBX_AUTH_FIELD_MAX);
  _cleanup_free_ char *registry = registry_arg (argv[first]);
  if (!a.password_stdin && !isatty (STDIN_FILENO))
    return cli_usage_error (cmd, err, "give the password on stdin with --password-stdin, or run on a terminal");
  sbx_store *st;
  _cleanup_conf_ sbx_conf *conf = NULL;
  if (cli_store (cli, &st, err) < 0 || sbx_conf_load (NULL, &conf, err) < 0)
    return -1;

  __attribute__ ((cleanup (secret_buf_wipe))) secret_buf pw;
  if (a.password_stdin ? read_password (STDIN_FILENO, false, &pw, err) < 0 : prompt_password (&pw, err) < 0)
    return -1;
  /* The credentials are checked against the registry itself (its host:
   * a login may be for a repository prefix). */
  _cleanup_free_ char *host = xstrndup (registry, strcspn (registry, "/"));
  sbx_cred cred = { .username = (char *) a.username, .password = pw.buf };
  if (sbx_registry_ping (st->root, conf, host, &cred, err) < 0)
    return sbx_error_wrap (err, "login to %s", host);
  if (sbx_auth_store (st->root, registry, a.username, pw.buf, err) < 0)
    return -1;
  print_result (cli, registry, "logged_in", "Login Succeeded");
  return 0;
}

int
cmd_logout (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  bool all = false;
  int first, parsed = cli_simple_parse (cli, "logout", argc, argv, 0, 1, &first, cli_flag_opt, &all, err);
  if (parsed != 0)
    return parsed < 0 ? -1 : 0;
  const sbx_command *cmd = cli_find ("logout");
  if (all == (first < argc))
    return cli_usage_error (cmd, err, all ? "--all takes no REGISTRY" : "expected REGISTRY | --all");
  _cleanup_free_ char *registry = all ? NULL : registry_arg (argv[first]);
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0 || sbx_auth_remove (st->root, registry, all, err) < 0)
    return -1;
  if (all)
    print_result (cli, NULL, "logged_out", "Removed login credentials for all registries");
  else
    {
      _cleanup_free_ char *msg = xasprintf ("Removed login credentials for %s", registry);
      print_result (cli, registry, "logged_out", msg);
    }
  return 0;
}
