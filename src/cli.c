/* Option parsing with help from one table, JSON output, shared helpers. */
#include "config.h"
#include "cli.h"
#include "client.h"
#include "json.h"
#include "sandbox.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <getopt.h>
#include <string.h>
#include <sys/mman.h>

enum { KEY_HELP = 'h', KEY_JSON = 1000 };

/* Option iteration over CMD's table plus --help and --json. Returns the key
 * of the next option (its argument in *arg), 0 when options end (argv +
 * *optind_out are the operands), 'h' after printing --help, or -1 with
 * INVALID_ARGUMENT. Stops at the first operand and at "--". */
typedef struct cli_parser {
  const sbx_command *cmd;
  sbx_cli *cli;
  int argc;
  char **argv;
  void *longopts;
  char *shortopts;
} cli_parser;

static size_t
nopts (const cli_opt *o)
{
  size_t n = 0;
  while (o && o[n].name)
    n++;
  return n;
}

static void
cli_parser_init (cli_parser *p, sbx_cli *cli, const sbx_command *cmd, int argc, char **argv)
{
  size_t n = nopts (cmd->opts);
  struct option *lo = xmalloc0 ((n + 3) * sizeof *lo);
  char *so = xmalloc0 (3 * n + 8);
  /* Commands that take a command line stop at the first operand; the
   * others accept options anywhere, as GNU tools do. */
  strcpy (so, cmd->args && strstr (cmd->args, "CMD") ? "+:h" : ":h");
  for (size_t i = 0; i < n; i++)
    {
      const cli_opt *o = &cmd->opts[i];
      lo[i] = (struct option){ o->name, o->has_arg, NULL, o->key };
      if (o->key < 256)
        {
          size_t l = strlen (so);
          so[l] = (char) o->key;
          if (o->has_arg == required_argument)
            so[l + 1] = ':';
        }
    }
  lo[n] = (struct option){ "help", no_argument, NULL, KEY_HELP };
  lo[n + 1] = (struct option){ "json", no_argument, NULL, KEY_JSON };
  *p = (cli_parser){ .cmd = cmd, .cli = cli, .argc = argc, .argv = argv, .longopts = lo, .shortopts = so };
  optind = 0;
  opterr = 0;
}

static void
cli_parser_done (cli_parser *p)
{
  free (p->longopts);
  free (p->shortopts);
}

int
cli_usage_error (const sbx_command *cmd, sbx_error **err, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  _cleanup_free_ char *what = NULL;
  if (vasprintf (&what, fmt, ap) < 0)
    abort ();
  va_end (ap);
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: %s (see `sbx %s --help`)", cmd->name, what, cmd->name);
}

/* getopt's optopt is a short option letter, or for a long option its key:
 * name the token as the user wrote it. */
static int
bad_option (cli_parser *p, sbx_error **err)
{
  const char *tok = optind > 0 && optind <= p->argc ? p->argv[optind - 1] : "";
  if (strncmp (tok, "--", 2) == 0)
    {
      const char *eq = strchr (tok, '=');
      if (eq)
        return cli_usage_error (p->cmd, err, "option `%.*s` takes no value", (int) (eq - tok), tok);
      return cli_usage_error (p->cmd, err, "unknown option `%s`", tok);
    }
  if (optopt > 32 && optopt < 127)
    return cli_usage_error (p->cmd, err, "unknown option `-%c`", optopt);
  return cli_usage_error (p->cmd, err, "unknown option `%s`", tok);
}

static int
cli_next (cli_parser *p, const char **arg, sbx_error **err)
{
  for (;;)
    {
      int c = getopt_long (p->argc, p->argv, p->shortopts, p->longopts, NULL);
      *arg = optarg;
      switch (c)
        {
        case -1:
          return 0;
        case KEY_JSON:
          p->cli->json = true;
          continue;
        case KEY_HELP:
          cli_print_help (stdout, p->cmd);
          return 'h';
        case '?':
          return bad_option (p, err);
        case ':':
          return cli_usage_error (p->cmd, err, "option `%s` needs a value", p->argv[optind - 1]);
        default:
          return c;
        }
    }
}

void
cli_print_help (FILE *f, const sbx_command *cmd)
{
  fprintf (f, "Usage: sbx %s [OPTIONS]%s%s\n\n%s\n\nOptions:\n", cmd->name, cmd->args ? " " : "",
           cmd->args ? cmd->args : "", cmd->summary);
  for (size_t i = 0; cmd->opts && cmd->opts[i].name; i++)
    {
      const cli_opt *o = &cmd->opts[i];
      char left[64];
      if (o->key < 256)
        snprintf (left, sizeof left, "-%c, --%s%s%s", o->key, o->name, o->metavar ? " " : "",
                  o->metavar ? o->metavar : "");
      else
        snprintf (left, sizeof left, "    --%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
      fprintf (f, "  %-28s %s\n", left, o->help);
    }
  fprintf (f, "  %-28s %s\n", "    --json", "print one JSON document on stdout");
  fprintf (f, "  %-28s %s\n", "-h, --help", "show this help");
}

const sbx_command *
cli_find (const char *name)
{
  for (const sbx_command *c = sbx_commands; c->name; c++)
    if (strcmp (c->name, name) == 0)
      return c;
  return NULL;
}

int
cli_store (sbx_cli *cli, sbx_store **ret, sbx_error **err)
{
  if (cli->st == NULL && sbx_store_open (cli->root, cli->run_root, true, &cli->st, err) < 0)
    return -1;
  *ret = cli->st;
  return 0;
}

int
cli_int (const char *opt, const char *s, int64_t min, int64_t max, int64_t *ret, sbx_error **err)
{
  int r = parse_int64 (s, min, max, ret);
  if (r == -ERANGE)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--%s: `%s` is out of range (%lld..%lld)", opt, s,
                          (long long) min, (long long) max);
  if (r < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--%s: `%s` is not an integer", opt, s);
  return 0;
}

yajl_gen
cli_json_begin (void)
{
  return j_new (true);
}

void
cli_json_end (yajl_gen g)
{
  size_t len;
  _cleanup_free_ char *s = j_take (g, &len);
  fwrite (s, 1, len, stdout);
  if (len == 0 || s[len - 1] != '\n')
    fputc ('\n', stdout);
  yajl_gen_free (g);
}

void
cli_json_ok (void)
{
  yajl_gen g = cli_json_begin ();
  j_map (g);
  j_kbool (g, "ok", true);
  j_endmap (g);
  cli_json_end (g);
}

int
cli_sandbox_id (sbx_cli *cli, const char *ref, char **ret_id, sbx_error **err)
{
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  return sbx_sandbox_resolve (st, ref, ret_id, err);
}

char *
cli_read_back (int fd, size_t *len)
{
  off_t end = lseek (fd, 0, SEEK_END);
  size_t n = end > 0 ? (size_t) end : 0;
  char *buf = xmalloc (n + 1);
  ssize_t r = n ? pread (fd, buf, n, 0) : 0;
  *len = r > 0 ? (size_t) r : 0;
  buf[*len] = '\0';
  return buf;
}

int
cli_exec (sbx_cli *cli, const sbx_store *st, const char *id, const sbx_exec_opts *eo, int *ret_status, sbx_error **err)
{
  if (!cli->json)
    return sbx_client_exec (st, id, eo, 0, 1, 2, ret_status, err);
  /* With --json the output is captured (in memory files) and returned in
   * one document, as hosted sandbox SDKs return it. */
  _cleanup_close_ int out = memfd_create ("sbx-stdout", MFD_CLOEXEC);
  _cleanup_close_ int errfd = memfd_create ("sbx-stderr", MFD_CLOEXEC);
  if (out < 0 || errfd < 0)
    return sbx_error_errno (err, errno, "memfd_create");
  if (sbx_client_exec (st, id, eo, 0, out, errfd, ret_status, err) < 0)
    return -1;
  size_t ol, el;
  _cleanup_free_ char *o = cli_read_back (out, &ol);
  _cleanup_free_ char *e = cli_read_back (errfd, &el);
  yajl_gen g = cli_json_begin ();
  j_map (g);
  j_kstr (g, "id", id);
  j_kint (g, "exit_code", *ret_status);
  j_str (g, "stdout");
  j_strn (g, o, ol);
  j_str (g, "stderr");
  j_strn (g, e, el);
  j_endmap (g);
  cli_json_end (g);
  return 0;
}

int
cli_operands (const sbx_command *cmd, int argc, char **argv, int first, int min, int max, sbx_error **err)
{
  int n = argc - first;
  if (max >= 0 && n > max)
    return cli_usage_error (cmd, err, "unexpected argument `%s`", argv[first + max]);
  if (n < min)
    return cli_usage_error (cmd, err, "expected %s", cmd->args ? cmd->args : "no arguments");
  return 0;
}

int
cli_simple_parse (sbx_cli *cli, const char *name, int argc, char **argv, int min, int max, int *first,
                  int (*on_opt) (void *, int, const char *, sbx_error **), void *data, sbx_error **err)
{
  const sbx_command *cmd = cli_find (name);
  cli_parser p;
  cli_parser_init (&p, cli, cmd, argc, argv);
  int key, ret = 0;
  const char *arg;
  while ((key = cli_next (&p, &arg, err)) > 0)
    {
      if (key == 'h')
        {
          cli_parser_done (&p);
          return 1;
        }
      if (on_opt == NULL || on_opt (data, key, arg, err) < 0)
        {
          ret = -1;
          break;
        }
    }
  cli_parser_done (&p);
  if (ret < 0 || key < 0 || cli_operands (cmd, argc, argv, optind, min, max, err) < 0)
    return -1;
  *first = optind;
  return 0;
}

int
cli_str_opt (void *data, int key, const char *arg, sbx_error **err)
{
  *(const char **) data = arg;
  return 0;
}

int
cli_flag_opt (void *data, int key, const char *arg, sbx_error **err)
{
  *(bool *) data = true;
  return 0;
}

int
cli_no_args (sbx_cli *cli, const char *name, int argc, char **argv, sbx_error **err)
{
  int first;
  return cli_simple_parse (cli, name, argc, argv, 0, 0, &first, NULL, NULL, err);
}
