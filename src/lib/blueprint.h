/* Blueprints: an image described as JSON (man/sbx-blueprint.5).
 *
 *   { "base": "busybox" | "debian:SUITE" | IMAGE | REGISTRY/NAME:TAG,
 *     "steps": [ { "run": "make" }, { "env": { "K": "V" } }, ... ] }
 *
 * Each step is an object with exactly one key. Parsing is strict: unknown
 * keys, wrong types and values outside their grammar are INVALID_ARGUMENT
 * naming the key (`steps[2].files[0].mode`). Every string that reaches a
 * command line (package names, versions) is checked against its grammar,
 * and is passed as one argument, never through a shell. */
#ifndef SBX_BLUEPRINT_H
#define SBX_BLUEPRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

#define SBX_BLUEPRINT_MAX (1 << 20)
#define SBX_BLUEPRINT_STEPS_MAX 256

typedef enum sbx_step_kind {
  SBX_STEP_APT_PACKAGES,
  SBX_STEP_PYTHON_VERSION,
  SBX_STEP_PYTHON_PACKAGES,
  SBX_STEP_FILES,
  SBX_STEP_RUN,
  SBX_STEP_ENV,
  SBX_STEP_WORKDIR,
  SBX_STEP_CMD,
  SBX_STEP_WITH_DOCKER,
  SBX_STEP__MAX
} sbx_step_kind;

typedef struct sbx_bp_file {
  char *src;  /* relative to the build context, no `..` */
  char *dest; /* absolute, in the image */
  int mode;   /* permission bits for the files copied, -1: the source's */
} sbx_bp_file;

typedef struct sbx_bp_step {
  sbx_step_kind kind;
  char **list; /* apt/python packages, run commands, cmd argv, env K=V */
  char *str;   /* python_version, workdir */
  bool flag;   /* with_docker */
  sbx_bp_file *files;
  size_t nfiles;
  char *canon; /* the step as canonical JSON: the cache key's part */
} sbx_bp_step;

typedef struct sbx_blueprint {
  char *base;
  sbx_bp_step *steps;
  size_t nsteps;
} sbx_blueprint;

const char *sbx_step_name (sbx_step_kind k);
/* Whether the step changes files (and so makes a layer). */
bool sbx_step_makes_layer (sbx_step_kind k);
/* The step as build progress shows it: its canonical JSON with a files
 * mode in octal, as written ("0755"). */
char *sbx_bp_step_text (const sbx_bp_step *s);

int sbx_blueprint_parse (const char *text, size_t len, sbx_blueprint **ret, sbx_error **err);
void sbx_blueprint_free (sbx_blueprint *bp);
static inline void
sbx_blueprint_freep (sbx_blueprint **bp)
{
  sbx_blueprint_free (*bp);
}
#define _cleanup_blueprint_ __attribute__ ((cleanup (sbx_blueprint_freep)))

#endif
