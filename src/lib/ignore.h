/* .sbxignore: gitignore's syntax, parsed once and matched against the
 * paths of a tree being walked (--copy-in). Comments (#), blank lines,
 * trailing spaces (unless escaped), `!` negation, a trailing `/` for
 * directories only, a leading or middle `/` anchoring the pattern at the
 * top, `*` and `?` (never matching `/`), `[...]` classes (`!` or `^`
 * negates, ranges, [:alpha:] and the like), `\` escapes, and `**` as a
 * whole component: any number of directories (`**` last: everything
 * inside). The last pattern that matches decides. Parsing never runs a
 * pattern; matching is O(pattern x path) per pattern. */
#ifndef SBX_IGNORE_H
#define SBX_IGNORE_H

#include "error.h"

#include <stdbool.h>
#include <stddef.h>

/* The most bytes of a .sbxignore, and of patterns in it. */
#define SBX_IGNORE_SIZE_MAX (1u << 20)
#define SBX_IGNORE_PATTERNS_MAX 10000

typedef struct sbx_ignore sbx_ignore;

/* Parses TEXT (LEN bytes; NAME for messages). INVALID_ARGUMENT for a file
 * over the limits or with a NUL byte ("NAME:LINE: ..."). An empty result
 * (no patterns) is valid. */
int sbx_ignore_parse (const char *name, const char *text, size_t len, sbx_ignore **ret, sbx_error **err);

/* Whether PATH (relative to the top, `/`-separated, no leading `/`, no
 * `.` or `..` components) is ignored; IS_DIR: it is a directory. */
bool sbx_ignore_match (const sbx_ignore *ig, const char *path, bool is_dir);

/* How many patterns IG holds (0 for NULL). */
size_t sbx_ignore_count (const sbx_ignore *ig);

void sbx_ignore_free (sbx_ignore *ig);

static inline void
sbx_ignore_freep (sbx_ignore **p)
{
  sbx_ignore_free (*p);
}
#define _cleanup_ignore_ __attribute__ ((cleanup (sbx_ignore_freep)))

#endif
