/* The CLI layer: one dispatch table (sbx.c), one option table per command
 * that also carries each option's help, and the one place errors become
 * messages and exit statuses. */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <yajl/yajl_gen.h>

#include "error.h"
#include "store.h"

#define SBX_EXIT_ERROR 125

typedef struct sbx_cli {
  const char *root;
  const char *run_root;
  bool json;
  sbx_store *st;
} sbx_cli;

typedef struct cli_opt {
  const char *name;
  int key;     /* short option char, or a value >= 256 */
  int has_arg; /* no_argument / required_argument */
  const char *metavar;
  const char *help;
  /* What completes the value (src/cli-complete.c): words separated by
   * spaces, or @image, @file, @dir; NULL: free text. */
  const char *values;
} cli_opt;

typedef struct sbx_command {
  const char *name;
  int (*fn) (sbx_cli *cli, int argc, char **argv, sbx_error **err);
  const char *args; /* usage after the options, e.g. "ID -- CMD..." */
  const char *summary;
  const cli_opt *opts; /* terminated by {NULL} */
} sbx_command;

extern const sbx_command sbx_commands[];

void cli_print_help (FILE *f, const sbx_command *cmd);
const sbx_command *cli_find (const char *name);
/* Writes the completion script for SHELL (bash, zsh, fish): the template
 * on IN with its @SECTION@ lines filled from sbx_commands and the option
 * tables (the hidden `sbx __complete-gen SHELL`, run by `make completions`). */
int cli_complete_gen (FILE *in, FILE *out, const char *shell, sbx_error **err);

/* Opens the store (creating it) on first use. */
int cli_store (sbx_cli *cli, sbx_store **ret, sbx_error **err);

/* The one parser every command uses: options from CMD NAME's table (plus
 * --help and --json), each passed to ON_OPT (NULL: the table is empty)
 * with DATA; then MIN..MAX operands (MAX -1: no limit), left at
 * argv + *FIRST. 0 to go on, 1 after --help, -1 on error. A command whose
 * usage has CMD stops taking options at its first operand. */
int cli_simple_parse (sbx_cli *cli, const char *name, int argc, char **argv, int min, int max, int *first,
                      int (*on_opt) (void *, int, const char *, sbx_error **), void *data, sbx_error **err);
/* ON_OPT for a command with one option: its value into the const char *
 * at DATA (the last one given wins), or, for a flag, true into the bool. */
int cli_str_opt (void *data, int key, const char *arg, sbx_error **err);
int cli_flag_opt (void *data, int key, const char *arg, sbx_error **err);
/* A command that takes no operands and no options of its own: 0 to go on,
 * 1 after --help, -1 on error. */
int cli_no_args (sbx_cli *cli, const char *name, int argc, char **argv, sbx_error **err);
/* The usage errors of every command, in one shape: INVALID_ARGUMENT with
 * "CMD: PROBLEM (see `sbx CMD --help`)". */
int cli_usage_error (const sbx_command *cmd, sbx_error **err, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));
/* ARGC - FIRST operands at argv + FIRST: MIN..MAX (MAX -1: no limit). */
int cli_operands (const sbx_command *cmd, int argc, char **argv, int first, int min, int max, sbx_error **err);
/* Typed option values, INVALID_ARGUMENT naming the option. */
int cli_int (const char *opt, const char *s, int64_t min, int64_t max, int64_t *ret, sbx_error **err);

/* Output: a JSON document on stdout with --json. */
yajl_gen cli_json_begin (void);
void cli_json_end (yajl_gen g);
/* --json's answer of a command that has nothing more to say: {"ok": true}. */
void cli_json_ok (void);

/* Resolves an id or a name given on the command line. */
int cli_sandbox_id (sbx_cli *cli, const char *ref, char **ret_id, sbx_error **err);

/* Runs a command through the sandbox's monitor: streamed to our stdio, or
 * with --json captured and printed as {"exit_code", "stdout", "stderr"}. */
struct sbx_exec_opts;
/* The whole content of a memory file written by a capture, NUL-terminated. */
char *cli_read_back (int fd, size_t *len);
int cli_exec (sbx_cli *cli, const sbx_store *st, const char *id, const struct sbx_exec_opts *eo, int *ret_status,
              sbx_error **err);

#endif
