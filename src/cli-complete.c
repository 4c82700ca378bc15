/* The shell completions (completions/), generated from the command table
 * (sbx_commands) and the option tables with their value lists (cli_opt's
 * values): `sbx __complete-gen bash|zsh|fish` copies the template
 * completions/<file>.in, whose shell code does the parsing, and fills each
 * of its @SECTION@ lines with what the tables say; `make completions` runs
 * it and tests/integration/docs.bats checks the result is committed. What
 * the tables do not say -- what each operand is, which options exclude
 * each other, the verbs of `sbx fs` -- is said here, once. */
#include "config.h"
#include "cli.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <string.h>

/* An operand: what it is (for the zsh and fish descriptions) and what
 * completes it: @sandbox, @image, @snapshot, @file, @dir, @pid (a process
 * of the sandbox that is operand 0), @command (an sbx command), @fsverb,
 * @fsarg (by the `sbx fs` verb), @cp (ID:PATH or a host file), @cmdline
 * (the command run in the sandbox, not completed), words separated by
 * spaces, or NULL (free text). */
typedef struct {
  const char *what;
  const char *values;
} operand;

#define MAX_OPERANDS 5

typedef struct {
  const char *cmd;
  operand ops[MAX_OPERANDS];
  bool repeat;   /* the last operand repeats */
  bool optional; /* the operands may be left out */
} command_operands;

#define SANDBOX           \
  {                       \
    "sandbox", "@sandbox" \
  }
#define CMDLINE                          \
  {                                      \
    "command in the sandbox", "@cmdline" \
  }
#define FSARG      \
  {                \
    NULL, "@fsarg" \
  }

/* Every command of sbx_commands, in any order. */
static const command_operands operand_table[] = {
  { "create", { CMDLINE } },
  { "run", { CMDLINE } },
  { "exec", { SANDBOX, CMDLINE } },
  { "run-code", { SANDBOX, { "code (or - for stdin)", NULL } } },
  { "ps", { SANDBOX } },
  { "proc", { SANDBOX, { "process id", "@pid" }, { "action", "status wait kill logs" } } },
  { "fs", { SANDBOX, { "verb", "@fsverb" }, FSARG, FSARG, FSARG } },
  { "cp", { { "source (ID:PATH or host file)", "@cp" }, { "destination (ID:PATH or host path)", "@cp" } } },
  { "ls", { { NULL } } },
  { "status", { SANDBOX } },
  { "wait", { SANDBOX } },
  { "terminate", { SANDBOX }, .repeat = true },
  { "rm", { SANDBOX }, .repeat = true },
  { "logs", { SANDBOX } },
  { "pause", { SANDBOX }, .repeat = true },
  { "resume", { SANDBOX }, .repeat = true },
  { "commit", { SANDBOX } },
  { "snapshot", { SANDBOX } },
  { "restore", { { "snapshot", "@snapshot" } } },
  { "snapshots", { { NULL } } },
  { "rmsnap", { { "snapshot", "@snapshot" } }, .repeat = true },
  { "net", { SANDBOX } },
  { "expose", { SANDBOX, { "port in the sandbox", NULL } } },
  { "unexpose", { SANDBOX, { "exposed port", NULL } } },
  { "urls", { SANDBOX } },
  { "ttl", { SANDBOX, { "seconds", NULL } } },
  { "update", { SANDBOX } },
  { "stats", { SANDBOX }, .optional = true },
  { "pool", { { "action", "create ls rm fill" }, { "pool name", NULL } } },
  { "volume",
    { { "action", "create ls inspect rm export import" },
      { "volume name", NULL },
      { "tar file (- for stdin/stdout)", "@file" } } },
  { "images", { { NULL } } },
  { "pull", { { "image reference", NULL } } },
  { "import", { { "tarball, image archive or layout directory", "@file" } } },
  { "export", { { "image", "@image" }, { "archive to write", "@file" } } },
  { "push", { { "image", "@image" }, { "registry reference (REGISTRY/NAME:TAG)", NULL } } },
  { "build", { { "context directory", "@dir" } } },
  { "tag", { { "image", "@image" }, { "new tag", "@image" } } },
  { "rmi", { { "image", "@image" } }, .repeat = true },
  { "login", { { "registry (HOST[:PORT])", NULL } } },
  { "logout", { { "registry (HOST[:PORT])", NULL } } },
  { "secret", { { "action", "create ls rm" }, { "secret name", NULL } } },
  { "audit", { { NULL } } },
  { "info", { { NULL } } },
  { "gc", { { NULL } } },
  { "version", { { NULL } } },
  { "help", { { "command", "@command" } } },
};

/* The verbs of `sbx fs ID VERB ARGS...` and their operands, as the fs
 * command's summary in sbx_commands lists them (checked). */
static const struct {
  const char *verb, *help, *args;
} fs_verbs[] = {
  { "read", "print a file", "PATH" },
  { "write", "replace a file with stdin", "PATH" },
  { "upload", "copy a host file in", "HOSTFILE PATH" },
  { "download", "copy a file out to the host", "PATH HOSTFILE" },
  { "ls", "list a directory", "PATH" },
  { "stat", "describe an entry", "PATH" },
  { "mkdir", "make a directory", "PATH" },
  { "rm", "remove a file", "PATH" },
  { "rmdir", "remove a directory", "PATH" },
  { "find", "search files for a pattern", "PATH PATTERN" },
  { "replace", "replace a text in files", "PATH OLD NEW" },
  { "watch", "print changes as they happen", "PATH" },
};

/* What an operand of a verb is; HOSTFILE is completed with host files. */
static const struct {
  const char *arg, *what;
} fs_args[] = {
  { "PATH", "absolute path in the sandbox" },
  { "HOSTFILE", "host file" },
  { "PATTERN", "pattern (POSIX extended regular expression)" },
  { "OLD", "text to replace" },
  { "NEW", "replacement text" },
};

/* Options of a command that exclude each other (long names); an option in
 * several groups excludes the options of all of them. */
static const struct {
  const char *cmd, *names;
} exclusive[] = {
  { "create", "block-network allow" },     { "create", "block-network allow-domain" }, { "run", "block-network allow" },
  { "run", "block-network allow-domain" }, { "exec", "interactive detach" },           { "net", "block allow open" },
  { "net", "block allow-domain open" },
};

#define FS_ARG_FIRST 2 /* the operand index of a verb's first operand */

/* --- the tables --------------------------------------------------------- */

static const command_operands *
operands_of (const char *cmd)
{
  for (size_t i = 0; i < sizeof operand_table / sizeof *operand_table; i++)
    if (strcmp (operand_table[i].cmd, cmd) == 0)
      return &operand_table[i];
  return NULL;
}

static size_t
noperands (const command_operands *c)
{
  size_t n = 0;
  while (n < MAX_OPERANDS && (c->ops[n].what || c->ops[n].values))
    n++;
  return n;
}

static bool
has_cmdline (const sbx_command *c)
{
  /* As cli_parser_init decides where options stop. */
  return c->args && strstr (c->args, "CMD");
}

/* The Nth (from 0) word of the space-separated WORDS in BUF; false past
 * the end. */
static bool
nth_word (const char *words, size_t n, char *buf, size_t size)
{
  const char *p = words;
  for (;;)
    {
      p += strspn (p, " ");
      if (*p == '\0')
        return false;
      size_t l = strcspn (p, " ");
      if (n-- == 0)
        {
          snprintf (buf, size, "%.*s", (int) l, p);
          return true;
        }
      p += l;
    }
}

static bool
word_in (const char *words, const char *w)
{
  char buf[64];
  for (size_t i = 0; words && nth_word (words, i, buf, sizeof buf); i++)
    if (strcmp (buf, w) == 0)
      return true;
  return false;
}

/* The options OPT excludes, itself included: the words of every group of
 * CMD that holds it, each once (a static buffer); NULL when none. */
static const char *
exclusive_of (const char *cmd, const char *opt)
{
  static char buf[256];
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof exclusive / sizeof *exclusive; i++)
    {
      if (strcmp (exclusive[i].cmd, cmd) != 0 || !word_in (exclusive[i].names, opt))
        continue;
      char w[64];
      for (size_t k = 0; nth_word (exclusive[i].names, k, w, sizeof w); k++)
        if (!word_in (buf, w) && len + strlen (w) + 2 < sizeof buf)
          len += (size_t) snprintf (buf + len, sizeof buf - len, "%s%s", len ? " " : "", w);
    }
  return len ? buf : NULL;
}

static const cli_opt *
find_opt (const sbx_command *c, const char *name)
{
  for (const cli_opt *o = c->opts; o && o->name; o++)
    if (strcmp (o->name, name) == 0)
      return o;
  return NULL;
}

static bool
is_repeatable (const cli_opt *o)
{
  return strstr (o->help, "repeatable") != NULL;
}

/* A word list's words go into shell code unquoted in places. */
static bool
safe_words (const char *v)
{
  for (const char *p = v; *p; p++)
    if (!isalnum ((unsigned char) *p) && !strchr (" ._/-", *p))
      return false;
  return true;
}

static bool
known_values (const char *v, bool is_operand)
{
  static const char *const opt_kinds[] = { "@image", "@file", "@dir", NULL };
  static const char *const op_kinds[] = { "@sandbox", "@image",  "@snapshot", "@file", "@dir",     "@pid",
                                          "@command", "@fsverb", "@fsarg",    "@cp",   "@cmdline", NULL };
  if (v == NULL)
    return true;
  if (v[0] != '@')
    return safe_words (v);
  for (const char *const *k = is_operand ? op_kinds : opt_kinds; *k; k++)
    if (strcmp (*k, v) == 0)
      return true;
  return false;
}

/* The tables agree: every command has its operands here and the other way
 * round, every value list is known. A new command or option fails the
 * generation until it is described. */
static int
check_tables (sbx_error **err)
{
  size_t ncmds = 0;
  for (const sbx_command *c = sbx_commands; c->name; c++, ncmds++)
    {
      const command_operands *ops = operands_of (c->name);
      if (ops == NULL)
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "complete: command %s has no entry in operand_table", c->name);
      if (ops->repeat && noperands (ops) != 1)
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "complete: %s: only a lone operand can repeat", c->name);
      for (size_t i = 0; i < noperands (ops); i++)
        if (!known_values (ops->ops[i].values, true))
          return sbx_error_set (err, SBX_E_INTERNAL, 0, "complete: %s: unknown operand values `%s`", c->name,
                                ops->ops[i].values);
      for (const cli_opt *o = c->opts; o && o->name; o++)
        if (!known_values (o->values, false) || (o->values && o->has_arg != required_argument))
          return sbx_error_set (err, SBX_E_INTERNAL, 0, "complete: %s --%s: bad values `%s`", c->name, o->name,
                                o->values);
    }
  /* The verbs and their operands are those `sbx fs --help` lists
   * ("...: read PATH, write PATH, ..."), no more, no fewer. */
  const sbx_command *fs = cli_find ("fs");
  const char *list = fs ? strstr (fs->summary, ": ") : NULL;
  size_t nlisted = 1;
  for (const char *p = list; p && (p = strstr (p + 1, ", "));)
    nlisted++;
  if (list == NULL || nlisted != sizeof fs_verbs / sizeof *fs_verbs)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "complete: fs_verbs does not match `sbx fs --help`");
  for (size_t v = 0; v < sizeof fs_verbs / sizeof *fs_verbs; v++)
    {
      char item[128];
      snprintf (item, sizeof item, "%s %s", fs_verbs[v].verb, fs_verbs[v].args);
      const char *at = strstr (list, item);
      while (at && (at[-1] != ' ' || !strchr (",.", at[strlen (item)])))
        at = strstr (at + 1, item);
      if (at == NULL)
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "complete: `sbx fs --help` has no `%s`", item);
    }
  if (ncmds != sizeof operand_table / sizeof *operand_table)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "complete: operand_table names a command sbx does not have");
  for (size_t i = 0; i < sizeof exclusive / sizeof *exclusive; i++)
    {
      const sbx_command *c = cli_find (exclusive[i].cmd);
      char w[64];
      for (size_t k = 0; c && nth_word (exclusive[i].names, k, w, sizeof w); k++)
        if (find_opt (c, w) == NULL)
          c = NULL;
      if (c == NULL)
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "complete: exclusive: %s has no option of `%s`", exclusive[i].cmd,
                              exclusive[i].names);
    }
  return 0;
}

/* --- output helpers ------------------------------------------------------ */

/* S in single quotes for zsh and bash: ' becomes '\''. */
static void
put_sq (FILE *f, const char *s)
{
  for (; *s; s++)
    if (*s == '\'')
      fputs ("'\\''", f);
    else
      fputc (*s, f);
}

/* S with a capital first letter (not when it names a verb, "ls: ...") and
 * no final period, in fish's single quotes (\ and ' escaped). */
static void
put_fish_desc (FILE *f, const char *s)
{
  size_t l = strlen (s), w = strcspn (s, " ");
  bool verb = w > 0 && s[w - 1] == ':';
  if (l > 0 && s[l - 1] == '.')
    l--;
  fputc ('\'', f);
  for (size_t i = 0; i < l; i++)
    {
      char ch = i == 0 && !verb ? (char) toupper ((unsigned char) s[0]) : s[i];
      if (ch == '\'' || ch == '\\')
        fputc ('\\', f);
      fputc (ch, f);
    }
  fputc ('\'', f);
}

/* "-s --long" or "--long". */
static void
put_opt_words (FILE *f, const cli_opt *o)
{
  if (o->key < 256 && isalnum (o->key))
    fprintf (f, "-%c --%s", o->key, o->name);
  else
    fprintf (f, "--%s", o->name);
}

static bool
has_short (const cli_opt *o)
{
  return o->key < 256 && isalnum (o->key);
}

/* --- bash ------------------------------------------------------------- */

static void
bash_statement (FILE *f, const char *values)
{
  if (values == NULL || strcmp (values, "@cmdline") == 0)
    fputs (":", f);
  else if (strcmp (values, "@sandbox") == 0)
    fputs ("_sbx_words \"$(_sbx_ids)\"", f);
  else if (strcmp (values, "@image") == 0)
    fputs ("_sbx_words \"$(_sbx_images)\"", f);
  else if (strcmp (values, "@snapshot") == 0)
    fputs ("_sbx_words \"$(_sbx_snapshots)\"", f);
  else if (strcmp (values, "@pid") == 0)
    fputs ("_sbx_words \"$(_sbx_pids \"$first_arg\")\"", f);
  else if (strcmp (values, "@command") == 0)
    fputs ("_sbx_words \"$_sbx_commands\"", f);
  else if (strcmp (values, "@fsverb") == 0)
    fputs ("_sbx_words \"$_sbx_fs_verbs\"", f);
  else if (strcmp (values, "@file") == 0)
    fputs ("_sbx_files", f);
  else if (strcmp (values, "@dir") == 0)
    fputs ("_sbx_dirs", f);
  else if (strcmp (values, "@cp") == 0)
    fputs ("_sbx_cp_operand", f);
  else
    fprintf (f, "_sbx_words '%s'", values);
}

/* The verbs whose operand I (from 0) is a host file, separated by SEP;
 * with COUNT, each as VERB:N, N the operands of `sbx fs` before it.
 * F NULL: only whether there is one. */
static bool
put_fs_hostfile_verbs (FILE *f, size_t i, const char *sep, bool count)
{
  bool any = false;
  for (size_t v = 0; v < sizeof fs_verbs / sizeof *fs_verbs; v++)
    {
      char w[32];
      if (nth_word (fs_verbs[v].args, i, w, sizeof w) && strcmp (w, "HOSTFILE") == 0)
        {
          if (f)
            {
              fprintf (f, "%s%s", any ? sep : "", fs_verbs[v].verb);
              if (count)
                fprintf (f, ":%zu", i + FS_ARG_FIRST);
            }
          any = true;
        }
    }
  return any;
}

static void
bash_data (FILE *f)
{
  fputs ("_sbx_commands='", f);
  for (const sbx_command *c = sbx_commands; c->name; c++)
    fprintf (f, "%s%s", c == sbx_commands ? "" : " ", c->name);
  fputs ("'\n_sbx_fs_verbs='", f);
  for (size_t v = 0; v < sizeof fs_verbs / sizeof *fs_verbs; v++)
    fprintf (f, "%s%s", v ? " " : "", fs_verbs[v].verb);
  fputs ("'\n\n# The options of command $1.\n_sbx_opts() {\n\tcase $1 in\n", f);
  for (const sbx_command *c = sbx_commands; c->name; c++)
    {
      if (c->opts == NULL || c->opts[0].name == NULL)
        continue;
      fprintf (f, "\t%s) echo '", c->name);
      for (const cli_opt *o = c->opts; o->name; o++)
        {
          if (o != c->opts)
            fputc (' ', f);
          put_opt_words (f, o);
        }
      fputs ("' ;;\n", f);
    }
  fputs ("\tesac\n}\n\n# The options of command $1 that take a value.\n_sbx_opts_with_arg() {\n\tcase $1 in\n", f);
  for (const sbx_command *c = sbx_commands; c->name; c++)
    {
      bool any = false;
      for (const cli_opt *o = c->opts; o && o->name; o++)
        if (o->has_arg == required_argument)
          {
            fprintf (f, any ? " " : "\t%s) echo '", c->name);
            put_opt_words (f, o);
            any = true;
          }
      if (any)
        fputs ("' ;;\n", f);
    }
  fputs ("\tesac\n}\n\n# Whether command $1 takes a command line (sbx COMMAND --help: \"CMD\"): its\n"
         "# options stop at the first operand. The others take options anywhere.\n_sbx_has_cmdline() {\n"
         "\tcase $1 in\n\t",
         f);
  bool first = true;
  for (const sbx_command *c = sbx_commands; c->name; c++)
    if (has_cmdline (c))
      {
        fprintf (f, "%s%s", first ? "" : " | ", c->name);
        first = false;
      }
  fputs (") return 0 ;;\n\tesac\n\treturn 1\n}\n\n# The position (from 0) of the command line among the operands of\n"
         "# command $1; nothing when it has none.\n_sbx_cmdline_at() {\n\tcase $1 in\n",
         f);
  for (const sbx_command *c = sbx_commands; c->name; c++)
    {
      const command_operands *ops = operands_of (c->name);
      for (size_t i = 0; i < noperands (ops); i++)
        if (ops->ops[i].values && strcmp (ops->ops[i].values, "@cmdline") == 0 && i > 0)
          fprintf (f, "\t%s) echo %zu ;;\n", c->name, i);
    }
  fputs ("\tesac\n}\n\n# Completes the value of option $2 of command $1.\n"
         "_sbx_value() {\n\tcase $1:$2 in\n",
         f);
  for (const sbx_command *c = sbx_commands; c->name; c++)
    for (const cli_opt *o = c->opts; o && o->name; o++)
      if (o->values)
        {
          if (has_short (o))
            fprintf (f, "\t%s:-%c | %s:--%s) ", c->name, o->key, c->name, o->name);
          else
            fprintf (f, "\t%s:--%s) ", c->name, o->name);
          bash_statement (f, o->values);
          fputs (" ;;\n", f);
        }
  fputs ("\tesac\n}\n\n# Completes operand $2 (from 0) of command $1; $first_arg and $second_arg\n"
         "# are its first two operands.\n_sbx_operand() {\n\tcase $1:$2 in\n",
         f);
  for (const sbx_command *c = sbx_commands; c->name; c++)
    {
      const command_operands *ops = operands_of (c->name);
      size_t n = noperands (ops);
      for (size_t i = 0; i < n; i++)
        {
          const char *v = ops->ops[i].values;
          if (ops->repeat && i == n - 1)
            fprintf (f, "\t%s:*) ", c->name);
          else
            fprintf (f, "\t%s:%zu) ", c->name, i);
          if (v && strcmp (v, "@fsarg") == 0)
            {
              if (put_fs_hostfile_verbs (NULL, i - FS_ARG_FIRST, "", false))
                {
                  fputs ("case $second_arg in ", f);
                  put_fs_hostfile_verbs (f, i - FS_ARG_FIRST, " | ", false);
                  fputs (") _sbx_files ;; esac", f);
                }
              else
                fputs (":", f);
            }
          else
            bash_statement (f, v);
          fputs (" ;;\n", f);
        }
    }
  fputs ("\tesac\n}\n", f);
}

/* --- zsh ---------------------------------------------------------------- */

/* S for a zsh _arguments description in brackets, in single quotes. */
static void
put_zsh_desc (FILE *f, const char *s)
{
  for (; *s; s++)
    if (*s == '\'')
      fputs ("'\\''", f);
    else if (*s == '[' || *s == ']' || *s == '\\')
      fprintf (f, "\\%c", *s);
    else
      fputc (*s, f);
}

/* A message or an operand description: lower case, ':' escaped. */
static void
put_zsh_msg (FILE *f, const char *s)
{
  for (; *s; s++)
    if (*s == ':')
      fputs ("\\:", f);
    else if (*s == '\'')
      fputs ("'\\''", f);
    else
      fputc (tolower ((unsigned char) *s), f);
}

static void
zsh_action (FILE *f, const char *values, size_t position)
{
  if (values == NULL)
    fputs (" ", f);
  else if (strcmp (values, "@sandbox") == 0)
    fputs ("_sbx_sandboxes", f);
  else if (strcmp (values, "@image") == 0)
    fputs ("_sbx_images", f);
  else if (strcmp (values, "@snapshot") == 0)
    fputs ("_sbx_snapshots", f);
  else if (strcmp (values, "@file") == 0)
    fputs ("_files", f);
  else if (strcmp (values, "@dir") == 0)
    fputs ("_directories", f);
  else if (strcmp (values, "@pid") == 0)
    fputs ("{_sbx_pids ${(Q)line[1]}}", f);
  else if (strcmp (values, "@command") == 0)
    fputs ("{_describe -t commands \"sbx command\" commands}", f);
  else if (strcmp (values, "@cp") == 0)
    fputs ("_sbx_cp_operand", f);
  else if (strcmp (values, "@fsarg") == 0)
    fprintf (f, "{_sbx_fs_operand %zu}", position);
  else if (strcmp (values, "@fsverb") == 0)
    {
      fputs ("((", f);
      for (size_t v = 0; v < sizeof fs_verbs / sizeof *fs_verbs; v++)
        fprintf (f, "%s%s\\:\"%s\"", v ? " " : "", fs_verbs[v].verb, fs_verbs[v].help);
      fputs ("))", f);
    }
  else
    fprintf (f, "(%s)", values);
}

static void
zsh_option (FILE *f, const sbx_command *c, const cli_opt *o)
{
  const char *excl = exclusive_of (c->name, o->name);
  bool rep = is_repeatable (o), arg = o->has_arg == required_argument;
  fputs ("        '", f);
  /* The exclusion list: the option itself (unless it repeats) and the
   * options it excludes. */
  if (!rep && (has_short (o) || excl))
    {
      fputc ('(', f);
      put_opt_words (f, o);
      char w[64];
      for (size_t k = 0; excl && nth_word (excl, k, w, sizeof w); k++)
        if (strcmp (w, o->name) != 0)
          {
            fputc (' ', f);
            put_opt_words (f, find_opt (c, w));
          }
      fputc (')', f);
    }
  else if (excl)
    {
      fputc ('(', f);
      char w[64];
      bool sp = false;
      for (size_t k = 0; nth_word (excl, k, w, sizeof w); k++)
        if (strcmp (w, o->name) != 0)
          {
            fputs (sp ? " " : "", f);
            put_opt_words (f, find_opt (c, w));
            sp = true;
          }
      fputc (')', f);
    }
  if (rep)
    fputc ('*', f);
  if (has_short (o))
    fprintf (f, "'{-%c%s,--%s%s}'", o->key, arg ? "+" : "", o->name, arg ? "=" : "");
  else
    fprintf (f, "--%s%s", o->name, arg ? "=" : "");
  fputc ('[', f);
  put_zsh_desc (f, o->help);
  fputc (']', f);
  if (arg)
    {
      fputc (':', f);
      put_zsh_msg (f, o->metavar ? o->metavar : "value");
      fputc (':', f);
      zsh_action (f, o->values, 0);
    }
  fputs ("' \\\n", f);
}

static void
zsh_commands (FILE *f)
{
  for (const sbx_command *c = sbx_commands; c->name; c++)
    {
      fprintf (f, "    '%s:", c->name);
      size_t l = strlen (c->summary);
      for (size_t i = 0; i < l - (c->summary[l - 1] == '.'); i++)
        {
          char ch = i == 0 ? (char) tolower ((unsigned char) c->summary[0]) : c->summary[i];
          if (ch == '\'')
            fputs ("'\\''", f);
          else
            fputc (ch, f);
        }
      fputs ("'\n", f);
    }
}

static void
zsh_arms (FILE *f)
{
  for (const sbx_command *c = sbx_commands; c->name; c++)
    {
      const command_operands *ops = operands_of (c->name);
      size_t n = noperands (ops);
      fprintf (f, "    %s)\n      _arguments -S%s $common \\\n", c->name, has_cmdline (c) ? " -A '-*'" : "");
      for (const cli_opt *o = c->opts; o && o->name; o++)
        zsh_option (f, c, o);
      for (size_t i = 0; i < n; i++)
        {
          const operand *op = &ops->ops[i];
          fputs ("        '", f);
          if (op->values && strcmp (op->values, "@cmdline") == 0)
            fputs ("*::", f);
          else if (ops->repeat && i == n - 1)
            fputs ("*:", f);
          else
            fprintf (f, "%zu:%s", i + 1, ops->optional ? ":" : "");
          put_zsh_msg (f, op->what ? op->what : " ");
          fputc (':', f);
          zsh_action (f, op->values && strcmp (op->values, "@cmdline") == 0 ? NULL : op->values, i + 1);
          fputs ("' \\\n", f);
        }
      fputs ("        && ret=0\n      ;;\n", f);
    }
}

/* The case arms of _sbx_fs_operand: $1 is the operand's position (from 1:
 * the sandbox, 2: the verb), ${(Q)line[2]} the verb. */
static void
zsh_fs_operand (FILE *f)
{
  for (size_t v = 0; v < sizeof fs_verbs / sizeof *fs_verbs; v++)
    {
      char w[32];
      for (size_t i = 0; nth_word (fs_verbs[v].args, i, w, sizeof w); i++)
        {
          if (strcmp (w, "PATH") == 0)
            continue;
          fprintf (f, "  %s:%zu) ", fs_verbs[v].verb, i + FS_ARG_FIRST + 1);
          if (strcmp (w, "HOSTFILE") == 0)
            fputs ("_files", f);
          else
            for (size_t a = 0; a < sizeof fs_args / sizeof *fs_args; a++)
              if (strcmp (fs_args[a].arg, w) == 0)
                {
                  fputs ("_message '", f);
                  put_sq (f, fs_args[a].what);
                  fputc ('\'', f);
                }
          fputs (" ;;\n", f);
        }
    }
  fputs ("  *) _message '", f);
  put_sq (f, fs_args[0].what);
  fputs ("' ;;\n", f);
}

/* --- fish ------------------------------------------------------------- */

static void
fish_values (FILE *f, const char *values)
{
  if (strcmp (values, "@sandbox") == 0)
    fputs (" -a '(__sbx_sandboxes)'", f);
  else if (strcmp (values, "@image") == 0)
    fputs (" -a '(__sbx_images)'", f);
  else if (strcmp (values, "@snapshot") == 0)
    fputs (" -a '(__sbx_snapshots)'", f);
  else if (strcmp (values, "@pid") == 0)
    fputs (" -a '(__sbx_pids)'", f);
  else if (strcmp (values, "@file") == 0)
    fputs (" -F", f);
  else if (strcmp (values, "@dir") == 0)
    fputs (" -x -a '(__fish_complete_directories)'", f);
  else if (strcmp (values, "@command") == 0)
    {
      fputs (" -a '", f);
      for (const sbx_command *c = sbx_commands; c->name; c++)
        fprintf (f, "%s%s", c == sbx_commands ? "" : " ", c->name);
      fputc ('\'', f);
    }
  else
    fprintf (f, " -a '%s'", values);
}

static void
fish_lines (FILE *f)
{
  fputs ("# Commands\n", f);
  for (const sbx_command *c = sbx_commands; c->name; c++)
    {
      fprintf (f, "complete -c sbx -n __sbx_no_command -a %s -d ", c->name);
      put_fish_desc (f, c->summary);
      fputc ('\n', f);
    }
  for (const sbx_command *c = sbx_commands; c->name; c++)
    {
      if (c->opts == NULL || c->opts[0].name == NULL)
        continue;
      fprintf (f, "\n# %s\n", c->name);
      for (const cli_opt *o = c->opts; o->name; o++)
        {
          fprintf (f, "complete -c sbx -n '__sbx_opts_for %s'", c->name);
          if (has_short (o))
            fprintf (f, " -s %c", o->key);
          fprintf (f, " -l %s", o->name);
          if (o->has_arg == required_argument)
            {
              if (o->values && strcmp (o->values, "@file") == 0)
                fputs (" -r", f);
              else if (o->values == NULL || strcmp (o->values, "@dir") != 0)
                fputs (" -x", f);
              if (o->values)
                fish_values (f, o->values);
            }
          fputs (" -d ", f);
          put_fish_desc (f, o->help);
          fputc ('\n', f);
        }
    }
  fputs ("\n# Operands\n", f);
  for (const sbx_command *c = sbx_commands; c->name; c++)
    {
      const command_operands *ops = operands_of (c->name);
      size_t n = noperands (ops);
      for (size_t i = 0; i < n; i++)
        {
          const operand *op = &ops->ops[i];
          if (op->values == NULL || strcmp (op->values, "@cmdline") == 0 || strcmp (op->values, "@fsarg") == 0
              || strcmp (op->values, "@cp") == 0)
            continue;
          char pos[32];
          if (ops->repeat && i == n - 1)
            snprintf (pos, sizeof pos, "any");
          else
            snprintf (pos, sizeof pos, "%zu", i);
          if (strcmp (op->values, "@fsverb") == 0)
            {
              for (size_t v = 0; v < sizeof fs_verbs / sizeof *fs_verbs; v++)
                {
                  fprintf (f, "complete -c sbx -n '__sbx_operand %s %s' -a %s -d ", pos, c->name, fs_verbs[v].verb);
                  put_fish_desc (f, fs_verbs[v].help);
                  fputc ('\n', f);
                }
              continue;
            }
          fprintf (f, "complete -c sbx -n '__sbx_operand %s %s'", pos, c->name);
          fish_values (f, op->values);
          fputs (" -d ", f);
          put_fish_desc (f, op->what);
          fputc ('\n', f);
        }
    }
  /* The host files of `sbx fs` and the operands of `sbx cp`: the
   * template's conditions find them. */
  fputs ("complete -c sbx -n __sbx_fs_host_file -F\n", f);
  fputs ("complete -c sbx -n __sbx_cp_host -F -a '(__sbx_cp_refs)'\n", f);
}

/* The switch cases of __sbx_opts_with_arg. */
static void
fish_opts_with_arg (FILE *f)
{
  for (const sbx_command *c = sbx_commands; c->name; c++)
    {
      bool any = false;
      for (const cli_opt *o = c->opts; o && o->name; o++)
        if (o->has_arg == required_argument)
          {
            if (!any)
              fprintf (f, "        case %s\n            printf '%%s\\n'", c->name);
            fputc (' ', f);
            put_opt_words (f, o);
            any = true;
          }
      if (any)
        fputc ('\n', f);
    }
}

static void
fish_has_cmdline (FILE *f)
{
  fputs ("    contains -- $argv[1]", f);
  for (const sbx_command *c = sbx_commands; c->name; c++)
    if (has_cmdline (c))
      fprintf (f, " %s", c->name);
  fputc ('\n', f);
}

/* The "case" line of __sbx_fs_host_file: VERB:NUMBER-OF-OPERANDS before
 * the host file. */
static void
fish_fs_host_file (FILE *f)
{
  fputs ("        case ", f);
  for (size_t i = 0; i < MAX_OPERANDS; i++)
    if (put_fs_hostfile_verbs (f, i, " ", true))
      fputc (' ', f);
  fputc ('\n', f);
}

/* --- the template --------------------------------------------------------- */

typedef struct {
  const char *shell, *name;
  void (*emit) (FILE *f);
} section;

static const section sections[] = {
  { "bash", "@DATA@", bash_data },
  { "zsh", "@COMMANDS@", zsh_commands },
  { "zsh", "@ARMS@", zsh_arms },
  { "zsh", "@FS_OPERAND@", zsh_fs_operand },
  { "fish", "@OPTS_WITH_ARG@", fish_opts_with_arg },
  { "fish", "@HAS_CMDLINE@", fish_has_cmdline },
  { "fish", "@FS_HOST_FILE@", fish_fs_host_file },
  { "fish", "@LINES@", fish_lines },
};

int
cli_complete_gen (FILE *in, FILE *out, const char *shell, sbx_error **err)
{
  if (strcmp (shell, "bash") != 0 && strcmp (shell, "zsh") != 0 && strcmp (shell, "fish") != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "__complete-gen: unknown shell `%s` (bash, zsh, fish)",
                          shell);
  if (check_tables (err) < 0)
    return -1;
  _cleanup_free_ char *line = NULL;
  size_t size = 0;
  ssize_t l;
  while ((l = getline (&line, &size, in)) > 0)
    {
      /* A section is a line of its own: @NAME@, indented or not. */
      const char *t = line + strspn (line, " \t");
      size_t tl = strcspn (t, " \t\n");
      const section *s = NULL;
      if (tl > 2 && t[0] == '@' && t[tl - 1] == '@' && t[tl + strspn (t + tl, " \t")] == '\n')
        for (size_t i = 0; i < sizeof sections / sizeof *sections; i++)
          if (strcmp (sections[i].shell, shell) == 0 && strlen (sections[i].name) == tl
              && strncmp (sections[i].name, t, tl) == 0)
            s = &sections[i];
      if (s)
        s->emit (out);
      else
        fwrite (line, 1, (size_t) l, out);
    }
  if (ferror (in))
    return sbx_error_errno (err, errno, "__complete-gen: read the template");
  if (fflush (out) != 0 || ferror (out))
    return sbx_error_errno (err, errno, "__complete-gen: write");
  return 0;
}
