/* Fuzz harness for .sbxignore (src/lib/ignore.c): arbitrary bytes, and
 * valid files mutated, go to sbx_ignore_parse, and what it accepts is
 * matched against fixed paths and paths made of the input's own bytes. It
 * must never crash and must hold its promises: a refusal is
 * INVALID_ARGUMENT with "NAME:LINE: " (or the size) in a printable message;
 * the last pattern decides (the input plus `*` ignores every entry, plus
 * `!*` none, plus `*` then a directory-only `!*` every file and no directory);
 * matching the same path twice answers the same.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "ignore.h"
#include "util.h"

#define FUZZ_NAME "fuzz-ignore"
#include "fuzz.h"

#define NAME "fuzz.sbxignore"

static size_t accepted, matched;

static const char *const paths[] = { "a",   "a/b", "a/b/c.txt", "build", "src/x.o", ".git",
                                     "x y", "[a]", "#x",        "!x",    "a/**/b",  "deep/er/and/deeper/still",
                                     "\\",  "*" };

static void
check_error (const sbx_error *err, const uint8_t *data, size_t size)
{
  CHECK (err && err->code == SBX_E_INVALID_ARGUMENT && err->msg && err->msg[0]);
  for (const char *p = err->msg; *p; p++)
    if (*p < 0x20 || *p >= 0x7f)
      fuzz_fail ("a message that is not printable: %s", err->msg);
  CHECK (strncmp (err->msg, NAME ":", strlen (NAME) + 1) == 0);
  const char *m = err->msg + strlen (NAME) + 1;
  if (*m == ' ')
    return; /* "NAME: larger than ..." */
  char *end;
  unsigned long line = strtoul (m, &end, 10);
  size_t lines = 1;
  for (size_t i = 0; i < size; i++)
    lines += data[i] == '\n';
  CHECK (end != m && line >= 1 && line <= lines && strncmp (end, ": ", 2) == 0);
}

/* The input with SUFFIX appended, parsed (it must be: the suffix adds
 * one valid line). */
static sbx_ignore *
with_suffix (const uint8_t *data, size_t size, const char *suffix)
{
  size_t sl = strlen (suffix);
  char *text = xmalloc (size + sl);
  memcpy (text, data, size);
  memcpy (text + size, suffix, sl);
  sbx_ignore *ig = NULL;
  sbx_error *err = NULL;
  if (sbx_ignore_parse (NAME, text, size + sl, &ig, &err) < 0)
    fuzz_fail ("accepted, then refused with `%s` appended: %s", suffix, err->msg);
  free (text);
  return ig;
}

static void
check_path (const sbx_ignore *ig, const sbx_ignore *all, const sbx_ignore *none, const sbx_ignore *files,
            const char *path)
{
  for (int dir = 0; dir < 2; dir++)
    {
      bool a = sbx_ignore_match (ig, path, dir);
      CHECK (a == sbx_ignore_match (ig, path, dir));
      matched += a;
      CHECK (sbx_ignore_match (all, path, dir));
      CHECK (!sbx_ignore_match (none, path, dir));
      CHECK (sbx_ignore_match (files, path, dir) == !dir);
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  sbx_ignore *ig = NULL;
  sbx_error *err = NULL;
  if (size > 65536)
    return 0;
  if (sbx_ignore_parse (NAME, (const char *) data, size, &ig, &err) < 0)
    {
      check_error (err, data, size);
      sbx_error_free (err);
      return 0;
    }
  accepted++;
  sbx_ignore *all = with_suffix (data, size, "\n*\n");
  sbx_ignore *none = with_suffix (data, size, "\n!*\n");
  sbx_ignore *files = with_suffix (data, size, "\n*\n!*/\n");
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
    check_path (ig, all, none, files, paths[i]);
  /* Paths of the input's own bytes: each line, with its NULs and
   * leading, doubled or trailing slashes kept out. */
  for (size_t at = 0; at < size;)
    {
      const uint8_t *nl = memchr (data + at, '\n', size - at);
      size_t end = nl ? (size_t) (nl - data) : size, o = 0;
      char path[256];
      for (size_t i = at; i < end && o < sizeof path - 1; i++)
        if (data[i] != '\0' && !(data[i] == '/' && (o == 0 || path[o - 1] == '/')))
          path[o++] = (char) data[i];
      while (o > 0 && path[o - 1] == '/')
        o--;
      path[o] = '\0';
      if (o > 0)
        check_path (ig, all, none, files, path);
      at = end + 1;
    }
  sbx_ignore_free (files);
  sbx_ignore_free (none);
  sbx_ignore_free (all);
  sbx_ignore_free (ig);
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 20000
#define INPUT_MAX 4096

static const char *const seeds[] = {
  "",
  "# comment\n\n*.o\n!keep.o\nbuild/\n/node_modules\n",
  "a/b\n**/foo\nabc/**\na/**/b\n[a-z]?.txt\n[!0-9]*\n\\#lit\n\\!lit\nsp\\ \n",
  "*.log   \r\n!important.log\ndoc/frotz/\n[[:digit:]]*\n[]]x\n*a*a*a*b\n",
  "/**\n**\n!/a\n/a/\na/\n",
};

static const char *const tokens[] = { "*",  "**", "?",         "[",  "]",  "!", "^",  "\\",   "/", "\n", "#", " ",
                                      "\r", "-",  "[:alpha:]", "[:", ":]", "a", "b/", "/**/", "",  ".",  ".." };

int
main (void)
{
  static const struct fuzz_seeds mutations = FUZZ_SEEDS (seeds, tokens, INPUT_MAX, false);
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 2020,
    .mutate = &mutations,
    .what = ".sbxignore files to the parser and the matcher",
  };

  fuzz_corpus_run (&corpus, 3);
  tap_ok (accepted > CORPUS_SIZE / 2, "%zu of them accepted, the last pattern deciding", accepted);
  tap_ok (matched > 0, "%zu paths ignored by the inputs' own patterns", matched);
  return tap_done ();
}

#endif
