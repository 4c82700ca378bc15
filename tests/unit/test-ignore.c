/* Unit tests of .sbxignore (src/lib/ignore.c) and of the copy-in beneath
 * a root (src/lib/copyin.c).
 *
 * The matcher against gitignore's documented examples: comments, blank
 * lines, trailing spaces, escapes, negation, directory-only patterns,
 * anchoring, `*`, `?`, classes, `**` in each position, the last match
 * deciding; the parser's limits and errors. Then --copy-in's spec parsing
 * and absolute paths, and a copy into a directory standing for a
 * sandbox's root: files with mode and mtime, symlinks (one pointing out of
 * the tree) as links, a fifo skipped, .sbxignore honoured, a symlink the
 * "image" planted at the destination refused, a file replaced. Nothing here
 * needs root. */
#include "config.h"
#include "copyin.h"
#include "ignore.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static sbx_ignore *
parse (const char *text)
{
  sbx_ignore *ig = NULL;
  sbx_error *err = NULL;
  if (sbx_ignore_parse ("t", text, strlen (text), &ig, &err) < 0)
    {
      printf ("# parse failed: %s\n", err->msg);
      sbx_error_free (err);
      return NULL;
    }
  return ig;
}

/* Whether TEXT's patterns ignore PATH (a directory when it ends in `/`). */
static bool
ign (const char *text, const char *path)
{
  _cleanup_ignore_ sbx_ignore *ig = parse (text);
  size_t n = strlen (path);
  bool dir = n > 0 && path[n - 1] == '/';
  _cleanup_free_ char *p = xstrndup (path, dir ? n - 1 : n);
  return sbx_ignore_match (ig, p, dir);
}

/* S with its newlines and carriage returns written as \n and \r (for a
 * TAP line). */
static char *
shown (const char *s)
{
  char *out = xmalloc (strlen (s) * 2 + 1), *o = out;
  for (; *s; s++)
    if (*s == '\n' || *s == '\r')
      *o++ = '\\', *o++ = *s == '\n' ? 'n' : 'r';
    else
      *o++ = *s;
  *o = '\0';
  return out;
}

static void
test_matcher (void)
{
  static const struct {
    const char *pats, *path;
    bool want;
  } cases[] = {
    /* plain names match at any level */
    { "foo", "foo", true },
    { "foo", "a/b/foo", true },
    { "foo", "a/foo/", true },
    { "foo", "foobar", false },
    { "foo", "a/foo.c", false },
    /* comments, blank lines, trailing spaces, escapes */
    { "# foo\n\n", "foo", false },
    { "\\#foo", "#foo", true },
    { "foo   ", "foo", true },
    { "foo\\ ", "foo ", true },
    { "foo\\ ", "foo", false },
    { "\\!imp", "!imp", true },
    { "foo\r\n", "foo", true },
    /* negation: the last match decides */
    { "*.log\n!keep.log", "keep.log", false },
    { "*.log\n!keep.log", "x.log", true },
    { "!keep.log\n*.log", "keep.log", true },
    /* directories only */
    { "build/", "build/", true },
    { "build/", "build", false },
    { "build/", "src/build/", true },
    /* anchoring: a leading or middle slash */
    { "/foo", "foo", true },
    { "/foo", "a/foo", false },
    { "a/b", "a/b", true },
    { "a/b", "x/a/b", false },
    { "doc/frotz/", "doc/frotz/", true },
    { "doc/frotz/", "a/doc/frotz/", false },
    /* wildcards never cross a slash */
    { "*.c", "x/y.c", true },
    { "a/*.c", "a/b/c.c", false },
    { "a/*.c", "a/c.c", true },
    { "?.txt", "a.txt", true },
    { "?.txt", "ab.txt", false },
    { "a?b", "a/b", false },
    /* classes */
    { "[abc].o", "b.o", true },
    { "[abc].o", "d.o", false },
    { "[!abc].o", "d.o", true },
    { "[^abc].o", "a.o", false },
    { "[a-c]x", "bx", true },
    { "[]]x", "]x", true },
    { "[[:digit:]]*", "7z", true },
    { "[[:digit:]]*", "z7", false },
    { "[a-", "[a-", false },
    { "trail\\", "trail\\", false },
    /* ** */
    { "**/foo", "foo", true },
    { "**/foo", "a/b/foo", true },
    { "**/foo/bar", "x/foo/bar", true },
    { "abc/**", "abc/x", true },
    { "abc/**", "abc/x/y", true },
    { "abc/**", "abc/", false },
    { "a/**/b", "a/b", true },
    { "a/**/b", "a/x/y/b", true },
    { "a/**/b", "a/x/y/c", false },
    { "foo**bar", "fooxbar", true },
    { "**", "anything/at/all", true },
    /* stars that backtrack */
    { "*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false },
    { "*a*a*a*b", "xaxaxab", true },
    /* nothing to match */
    { "", "foo", false },
    { "/", "foo", false },
    { "!", "foo", false },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      _cleanup_free_ char *p = shown (cases[i].pats);
      tap_ok (ign (cases[i].pats, cases[i].path) == cases[i].want, "`%s` %s `%s`", p,
              cases[i].want ? "ignores" : "keeps", cases[i].path);
    }
}

static void
test_parser (void)
{
  sbx_ignore *ig = NULL;
  sbx_error *err = NULL;
  tap_ok (sbx_ignore_parse ("x", "a\0b\n", 4, &ig, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT
              && strstr (err->msg, "x:1: a NUL byte") != NULL,
          "a NUL byte is refused with its line");
  sbx_error_free (err);
  err = NULL;
  size_t big = SBX_IGNORE_SIZE_MAX + 1;
  _cleanup_free_ char *text = xmalloc (big);
  memset (text, '\n', big);
  tap_ok (sbx_ignore_parse ("x", text, big, &ig, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT,
          "a file over %u KiB is refused", SBX_IGNORE_SIZE_MAX >> 10);
  sbx_error_free (err);
  err = NULL;
  /* 10,001 patterns of "a\n". */
  size_t n = (SBX_IGNORE_PATTERNS_MAX + 1) * 2;
  for (size_t i = 0; i < n; i += 2)
    text[i] = 'a', text[i + 1] = '\n';
  tap_ok (sbx_ignore_parse ("x", text, n, &ig, &err) < 0 && strstr (err->msg, "patterns") != NULL,
          "more than %u patterns are refused", SBX_IGNORE_PATTERNS_MAX);
  sbx_error_free (err);
  err = NULL;
  tap_ok (sbx_ignore_parse ("x", text, n - 2, &ig, &err) == 0 && sbx_ignore_count (ig) == SBX_IGNORE_PATTERNS_MAX,
          "%u patterns are taken", SBX_IGNORE_PATTERNS_MAX);
  sbx_ignore_free (ig);
  ig = parse ("# c\n\n  \n*.o\n[bad\n!x\n");
  tap_ok (ig && sbx_ignore_count (ig) == 2, "comments, blanks and patterns that match nothing are dropped");
  sbx_ignore_free (ig);
  tap_ok (!sbx_ignore_match (NULL, "a", false), "no .sbxignore ignores nothing");
}

/* --- copy-in ------------------------------------------------------------- */

static void
test_spec (void)
{
  static const struct {
    const char *spec, *host, *dest;
  } good[] = {
    { "/src", "/src", "/workspace" },
    { "/src:/app", "/src", "/app" },
    { "/a:b:/c", "/a:b", "/c" },
    { "/src:/", "/src", "/" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (good); i++)
    {
      _cleanup_free_ char *h = NULL, *d = NULL;
      tap_ok (sbx_copyin_parse (good[i].spec, &h, &d, NULL) == 0 && strcmp (h, good[i].host) == 0
                  && strcmp (d, good[i].dest) == 0,
              "`%s`: %s into %s", good[i].spec, good[i].host, good[i].dest);
    }
  static const char *const bad[] = { "", ":/x", "rel", "/src:rel", "/a:b", "/src:/a/../b", "/src:" };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      sbx_error *err = NULL;
      tap_ok (sbx_copyin_parse (bad[i], NULL, NULL, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT,
              "`%s` is refused: %s", bad[i], err ? err->msg : "");
      sbx_error_free (err);
    }
  static const struct {
    const char *spec, *cwd, *want;
  } abs[] = {
    { ".", "/home/u", "/home/u" },       { "./", "/home/u", "/home/u" }, { ".:/app", "/home/u", "/home/u:/app" },
    { "src", "/home/u", "/home/u/src" }, { "./src:/x", "/", "/src:/x" }, { "/abs", "/home/u", "/abs" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (abs); i++)
    {
      _cleanup_free_ char *a = sbx_copyin_absolute (abs[i].spec, abs[i].cwd);
      tap_ok (strcmp (a, abs[i].want) == 0, "`%s` in %s is `%s` (%s)", abs[i].spec, abs[i].cwd, abs[i].want, a);
    }
}

static char tmpdir[] = "/tmp/sbx-test-ignore.XXXXXX";

static void
put (const char *rel, const char *data, mode_t mode)
{
  _cleanup_free_ char *p = xasprintf ("%s/%s", tmpdir, rel);
  if (write_file_atomic (p, data, strlen (data), mode, NULL) < 0 || chmod (p, mode) < 0)
    abort ();
}

static void
mk (const char *rel)
{
  _cleanup_free_ char *p = xasprintf ("%s/%s", tmpdir, rel);
  if (mkdir (p, 0755) < 0)
    abort ();
}

static void
ln (const char *target, const char *rel)
{
  _cleanup_free_ char *p = xasprintf ("%s/%s", tmpdir, rel);
  if (symlink (target, p) < 0)
    abort ();
}

static bool
lstat_rel (const char *rel, struct stat *st)
{
  _cleanup_free_ char *p = xasprintf ("%s/%s", tmpdir, rel);
  return lstat (p, st) == 0;
}

static bool
link_is (const char *rel, const char *want)
{
  _cleanup_free_ char *p = xasprintf ("%s/%s", tmpdir, rel);
  char buf[256];
  ssize_t n = readlink (p, buf, sizeof buf - 1);
  if (n < 0)
    return false;
  buf[n] = '\0';
  return strcmp (buf, want) == 0;
}

static void
test_copy (void)
{
  if (mkdtemp (tmpdir) == NULL)
    abort ();
  mk ("src");
  mk ("src/sub");
  mk ("src/sub/skip");
  mk ("root");
  put ("src/a.txt", "hello\n", 04750);
  put ("src/sub/b.txt", "b\n", 0600);
  put ("src/sub/skip/c.txt", "c\n", 0644);
  put ("src/x.tmp", "", 0644);
  put ("src/keep.tmp", "", 0644);
  put ("src/.sbxignore", "*.tmp\n!keep.tmp\n/sub/skip/\n", 0644);
  ln ("/etc/passwd", "src/out");
  ln ("../../../../etc", "src/sub/up");
  _cleanup_free_ char *fifo = xasprintf ("%s/src/fifo", tmpdir);
  if (mkfifo (fifo, 0644) < 0)
    abort ();
  _cleanup_free_ char *a = xasprintf ("%s/src/a.txt", tmpdir);
  struct timespec ts[2] = { { 1000000000, 0 }, { 1234567890, 0 } };
  utimensat (AT_FDCWD, a, ts, 0);

  _cleanup_free_ char *rootp = xasprintf ("%s/root", tmpdir);
  _cleanup_close_ int root = open (rootp, O_PATH | O_DIRECTORY | O_CLOEXEC);
  _cleanup_free_ char *spec = xasprintf ("%s/src:/app/w", tmpdir);
  sbx_copyin_stats cs = { 0 };
  sbx_error *err = NULL;
  int r = sbx_copyin (root, spec, &cs, &err);
  tap_ok (r == 0, "a tree copied into a root: %s", err ? err->msg : "ok");
  sbx_error_free (err);
  err = NULL;
  tap_ok (cs.files == 4 && cs.dirs == 1 && cs.links == 2 && cs.skipped == 1 && cs.ignored == 2,
          "counted: %llu files, %llu dirs, %llu links, %llu skipped, %llu ignored", (unsigned long long) cs.files,
          (unsigned long long) cs.dirs, (unsigned long long) cs.links, (unsigned long long) cs.skipped,
          (unsigned long long) cs.ignored);
  struct stat st;
  tap_ok (lstat_rel ("root/app/w/a.txt", &st) && S_ISREG (st.st_mode) && (st.st_mode & 07777) == 0750
              && st.st_mtim.tv_sec == 1234567890,
          "a file keeps its mode (setuid cleared) and mtime");
  tap_ok (link_is ("root/app/w/out", "/etc/passwd") && link_is ("root/app/w/sub/up", "../../../../etc"),
          "symlinks are copied as links, pointing out of the tree as they did");
  tap_ok (lstat_rel ("root/app/w/sub/b.txt", &st) && (st.st_mode & 0777) == 0600, "a file in a subdirectory");
  tap_ok (!lstat_rel ("root/app/w/x.tmp", &st) && lstat_rel ("root/app/w/keep.tmp", &st)
              && !lstat_rel ("root/app/w/sub/skip", &st) && !lstat_rel ("root/app/w/fifo", &st),
          ".sbxignore honoured (negation, an anchored directory), the fifo skipped");

  /* Again over what is there: a file of the image at a file's place is
   * replaced, one at a directory's place too. */
  put ("root/app/w/a.txt", "old", 0644);
  _cleanup_free_ char *subp = xasprintf ("%s/root/app/w/sub", tmpdir);
  rm_rf (subp, NULL);
  put ("root/app/w/sub", "a file where a directory goes", 0644);
  memset (&cs, 0, sizeof cs);
  r = sbx_copyin (root, spec, &cs, &err);
  tap_ok (r == 0 && lstat_rel ("root/app/w/sub/b.txt", &st) && lstat_rel ("root/app/w/a.txt", &st) && st.st_size == 6,
          "a second copy replaces what is in the way: %s", err ? err->msg : "ok");
  sbx_error_free (err);
  err = NULL;

  /* The image planted /evil -> the host's /tmp: refused, nothing written
   * outside the root. */
  ln (tmpdir, "root/evil");
  /* (where it leads inside the root exists, as the image would have it) */
  _cleanup_free_ char *mirror = xasprintf ("%s/root%s", tmpdir, tmpdir);
  if (mkdir_p (mirror, 0755, NULL) < 0)
    abort ();
  _cleanup_free_ char *spec2 = xasprintf ("%s/src:/evil", tmpdir);
  r = sbx_copyin (root, spec2, &cs, &err);
  tap_ok (r < 0 && err->code == SBX_E_PATH_INVALID && !lstat_rel ("a.txt", &st),
          "a symlink planted at the destination is not followed: %s", err ? err->msg : "accepted");
  sbx_error_free (err);
  err = NULL;
  /* ... nor one in the middle of it: it resolves inside the root. */
  _cleanup_free_ char *spec3 = xasprintf ("%s/src:/evil/in", tmpdir);
  r = sbx_copyin (root, spec3, &cs, &err);
  _cleanup_free_ char *inside = xasprintf ("root%s/in/a.txt", tmpdir);
  tap_ok (r == 0 && lstat_rel (inside, &st) && !lstat_rel ("in", &st),
          "a symlink in the middle of the destination resolves inside the root: %s", err ? err->msg : "ok");
  sbx_error_free (err);
  err = NULL;

  _cleanup_free_ char *missing = xasprintf ("%s/nope", tmpdir);
  tap_ok (sbx_copyin_check (missing, &err) < 0 && err->code == SBX_E_NOT_FOUND, "a missing HOSTDIR: NOT_FOUND");
  sbx_error_free (err);
  err = NULL;
  tap_ok (sbx_copyin_check (a, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT,
          "a HOSTDIR that is a file: INVALID_ARGUMENT");
  sbx_error_free (err);
  err = NULL;

  /* A symlinked .sbxignore is refused, not followed. */
  _cleanup_free_ char *ig = xasprintf ("%s/src/.sbxignore", tmpdir);
  unlink (ig);
  ln ("/etc/passwd", "src/.sbxignore");
  _cleanup_free_ char *srcp = xasprintf ("%s/src", tmpdir);
  r = sbx_copyin (root, srcp, &cs, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT, "a .sbxignore that is a symlink is refused");
  sbx_error_free (err);
  rm_rf (tmpdir, NULL);
}

int
main (void)
{
  test_matcher ();
  test_parser ();
  test_spec ();
  test_copy ();
  tap_plan (tap_n);
  return tap_done ();
}
