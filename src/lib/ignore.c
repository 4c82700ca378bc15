/* .sbxignore: the parser and the matcher (gitignore's syntax, see
 * ignore.h). A pattern is kept as its `/`-separated components; one
 * without a `/` (but a trailing one) matches an entry's name at any level,
 * one with a `/` is anchored at the top and matched component by component,
 * `**` standing for any number of components (one or more when it is the
 * last). Within a component, `*`, `?`, `[...]` and `\` work as fnmatch's
 * with FNM_PATHNAME, written here with no recursion: a star backtracks only
 * to the latest star, so one match costs at most O(pattern x name). A line
 * whose pattern cannot match anything (an unterminated `[`, a trailing lone
 * `\`) is dropped, as git drops it. */
#include "config.h"
#include "ignore.h"
#include "util.h"

#include <ctype.h>
#include <string.h>

struct pattern {
  char **segs; /* NULL-terminated */
  size_t nsegs;
  bool negate, dir_only, anchored;
};

struct sbx_ignore {
  struct pattern *pats;
  size_t n;
};

/* --- one component ------------------------------------------------------ */

static bool
class_named (const char *name, size_t len, unsigned char c)
{
  static const struct {
    const char *name;
    int (*fn) (int);
  } classes[] = {
    { "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank }, { "cntrl", iscntrl },
    { "digit", isdigit }, { "graph", isgraph }, { "lower", islower }, { "print", isprint },
    { "punct", ispunct }, { "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit },
  };
  for (size_t i = 0; i < ARRAY_SIZE (classes); i++)
    if (strlen (classes[i].name) == len && memcmp (classes[i].name, name, len) == 0)
      return c < 128 && classes[i].fn (c);
  return false; /* an unknown class matches nothing */
}

/* One bracket expression at P (its `[`): 1 if C is in it, 0 if not, -1 if
 * it has no closing `]`. *RET_LEN: its length, `[` and `]` included. */
static int
class_match (const char *p, unsigned char c, size_t *ret_len)
{
  const char *q = p + 1;
  bool neg = false, found = false;
  if (*q == '!' || *q == '^')
    {
      neg = true;
      q++;
    }
  for (bool first = true;; first = false)
    {
      if (*q == '\0')
        return -1;
      if (*q == ']' && !first)
        break;
      if (q[0] == '[' && q[1] == ':')
        {
          const char *e = strstr (q + 2, ":]");
          if (e)
            {
              found |= class_named (q + 2, (size_t) (e - q - 2), c);
              q = e + 2;
              continue;
            }
        }
      unsigned char lo = (unsigned char) *q++;
      if (lo == '\\' && *q)
        lo = (unsigned char) *q++;
      if (q[0] == '-' && q[1] && q[1] != ']')
        {
          q++;
          unsigned char hi = (unsigned char) *q++;
          if (hi == '\\' && *q)
            hi = (unsigned char) *q++;
          found |= lo <= c && c <= hi;
        }
      else
        found |= c == lo;
    }
  *ret_len = (size_t) (q + 1 - p);
  return found != neg;
}

/* Whether the pattern P's next element (not a star) matches C: 1 or 0,
 * its length in *RET_LEN; -1 for an element that can never match. */
static int
match_one (const char *p, unsigned char c, size_t *ret_len)
{
  switch (*p)
    {
    case '\0':
      return 0;
    case '?':
      *ret_len = 1;
      return 1;
    case '[':
      return class_match (p, c, ret_len);
    case '\\':
      if (p[1] == '\0')
        return -1;
      *ret_len = 2;
      return (unsigned char) p[1] == c;
    default:
      *ret_len = 1;
      return (unsigned char) *p == c;
    }
}

/* Whether component pattern P matches the name S..SEND (no `/` in it). */
static bool
wild (const char *p, const char *s, const char *send)
{
  const char *star_p = NULL, *star_s = NULL;
  while (s < send)
    {
      if (*p == '*')
        {
          while (*p == '*')
            p++;
          star_p = p;
          star_s = s;
          continue;
        }
      size_t len = 0;
      int m = match_one (p, (unsigned char) *s, &len);
      if (m < 0)
        return false;
      if (m > 0)
        {
          p += len;
          s++;
          continue;
        }
      if (star_p == NULL)
        return false;
      p = star_p;
      s = ++star_s;
    }
  while (*p == '*')
    p++;
  return *p == '\0';
}

/* Whether a component pattern can match something: every `[` closed, no
 * trailing lone `\`. */
static bool
seg_valid (const char *p)
{
  while (*p)
    {
      if (*p == '*')
        {
          p++;
          continue;
        }
      size_t len = 0;
      if (match_one (p, 0, &len) < 0)
        return false;
      p += len;
    }
  return true;
}

/* --- whole paths -------------------------------------------------------- */

struct comp {
  const char *s;
  size_t len;
};

static bool
match_anchored (const struct pattern *pt, const struct comp *c, size_t nc)
{
  size_t np = pt->nsegs;
  /* next[j]: segments i+1.. match components j..; cur[j]: segments i.. do.
   * Filled from the end, so each row needs only the one below it. */
  bool *next = xmalloc0 ((nc + 1) * sizeof *next), *cur = xmalloc0 ((nc + 1) * sizeof *cur);
  next[nc] = true;
  for (size_t i = np; i-- > 0;)
    {
      const char *seg = pt->segs[i];
      bool globstar = strcmp (seg, "**") == 0;
      for (size_t j = nc + 1; j-- > 0;)
        {
          if (globstar && i == np - 1)
            cur[j] = j < nc; /* a last `**`: everything inside, not the directory itself */
          else if (globstar)
            cur[j] = next[j] || (j < nc && cur[j + 1]);
          else
            cur[j] = j < nc && next[j + 1] && wild (seg, c[j].s, c[j].s + c[j].len);
        }
      bool *t = next;
      next = cur;
      cur = t;
    }
  bool r = next[0];
  free (next);
  free (cur);
  return r;
}

static bool
pattern_match (const struct pattern *pt, const struct comp *c, size_t nc, bool is_dir)
{
  if (nc == 0 || (pt->dir_only && !is_dir))
    return false;
  if (!pt->anchored)
    return wild (pt->segs[0], c[nc - 1].s, c[nc - 1].s + c[nc - 1].len);
  return match_anchored (pt, c, nc);
}

bool
sbx_ignore_match (const sbx_ignore *ig, const char *path, bool is_dir)
{
  if (ig == NULL || ig->n == 0 || path == NULL)
    return false;
  size_t cap = 1;
  for (const char *p = path; *p; p++)
    cap += *p == '/';
  _cleanup_free_ struct comp *c = xmalloc (cap * sizeof *c);
  size_t nc = 0;
  for (const char *p = path; *p;)
    {
      const char *e = strchrnul (p, '/');
      if (e > p)
        c[nc++] = (struct comp){ p, (size_t) (e - p) };
      p = *e ? e + 1 : e;
    }
  /* The last pattern that matches decides. */
  for (size_t i = ig->n; i-- > 0;)
    if (pattern_match (&ig->pats[i], c, nc, is_dir))
      return !ig->pats[i].negate;
  return false;
}

/* --- parsing ------------------------------------------------------------ */

/* One line (no newline) into *PT; false for a line with no pattern. */
static bool
parse_line (const char *line, size_t len, struct pattern *pt)
{
  if (len > 0 && line[len - 1] == '\r')
    len--;
  if (len == 0 || line[0] == '#')
    return false;
  /* Trailing spaces go, unless the last is escaped (`\ `). */
  while (len > 0 && line[len - 1] == ' ' && !(len >= 2 && line[len - 2] == '\\'))
    len--;
  size_t b = 0;
  memset (pt, 0, sizeof *pt);
  if (b < len && line[b] == '!')
    {
      pt->negate = true;
      b++;
    }
  while (len > b && line[len - 1] == '/')
    {
      pt->dir_only = true;
      len--;
    }
  if (b < len && line[b] == '/')
    pt->anchored = true;
  while (b < len && line[b] == '/')
    b++;
  if (b >= len)
    return false;
  if (memchr (line + b, '/', len - b))
    pt->anchored = true;
  _cleanup_free_ char *body = xstrndup (line + b, len - b);
  _cleanup_strv_ char **segs = xmalloc0 (sizeof (char *));
  for (char *p = body; *p;)
    {
      char *e = strchrnul (p, '/');
      bool last = *e == '\0';
      *e = '\0';
      if (*p && !seg_valid (p))
        return false;
      if (*p)
        strv_push (&segs, p);
      p = last ? e : e + 1;
    }
  pt->nsegs = strv_len (segs);
  if (pt->nsegs == 0)
    return false;
  pt->segs = steal_pointer (&segs);
  return true;
}

int
sbx_ignore_parse (const char *name, const char *text, size_t len, sbx_ignore **ret, sbx_error **err)
{
  if (len > SBX_IGNORE_SIZE_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: larger than %u KiB", name, SBX_IGNORE_SIZE_MAX >> 10);
  _cleanup_ignore_ sbx_ignore *ig = xmalloc0 (sizeof *ig);
  size_t cap = 0, lineno = 1;
  for (size_t at = 0; at < len; lineno++)
    {
      const char *nl = memchr (text + at, '\n', len - at);
      size_t end = nl ? (size_t) (nl - text) : len;
      if (memchr (text + at, '\0', end - at))
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s:%zu: a NUL byte", name, lineno);
      struct pattern pt;
      if (parse_line (text + at, end - at, &pt))
        {
          if (ig->n >= SBX_IGNORE_PATTERNS_MAX)
            {
              strv_free (pt.segs);
              return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s:%zu: more than %u patterns", name, lineno,
                                    SBX_IGNORE_PATTERNS_MAX);
            }
          if (ig->n == cap)
            {
              cap = cap ? cap * 2 : 16;
              ig->pats = xrealloc (ig->pats, cap * sizeof *ig->pats);
            }
          ig->pats[ig->n++] = pt;
        }
      at = end + 1;
    }
  *ret = steal_pointer (&ig);
  return 0;
}

size_t
sbx_ignore_count (const sbx_ignore *ig)
{
  return ig ? ig->n : 0;
}

void
sbx_ignore_free (sbx_ignore *ig)
{
  if (ig == NULL)
    return;
  for (size_t i = 0; i < ig->n; i++)
    strv_free (ig->pats[i].segs);
  free (ig->pats);
  free (ig);
}
