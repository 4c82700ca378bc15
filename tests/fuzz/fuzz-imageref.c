/* Fuzz harness for image references (src/lib/imageref.c): arbitrary bytes
 * and valid references mutated byte by byte go to sbx_imageref_parse. It
 * must never crash; what it accepts must keep the grammar's promises (a
 * registry, lowercase repository components, a tag or a digest of their
 * form) and its full form must parse to itself and be canonical; what it
 * refuses must be INVALID_ARGUMENT with a printable message.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "imageref.h"

#define FUZZ_NAME "fuzz-imageref"
#include "fuzz.h"

static size_t accepted;

static bool
repo_ok (const char *s)
{
  size_t n = strlen (s);
  if (n == 0 || n > 255 || s[0] == '/' || s[n - 1] == '/' || strstr (s, "//"))
    return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr ("._-/", *p)))
      return false;
  return true;
}

static void
check_ref (const sbx_imageref *r)
{
  CHECK (r->registry && r->registry[0] && strchr (r->registry, '/') == NULL);
  CHECK (r->repository && repo_ok (r->repository));
  CHECK (r->tag || r->digest);
  if (r->tag)
    CHECK (strlen (r->tag) >= 1 && strlen (r->tag) <= SBX_IMAGEREF_TAG_MAX && r->tag[0] != '.' && r->tag[0] != '-');
  if (r->digest)
    CHECK (strncmp (r->digest, "sha256:", 7) == 0 && strlen (r->digest) == 71);
  char *full = sbx_imageref_string (r);
  sbx_imageref *again = NULL;
  sbx_error *err = NULL;
  if (sbx_imageref_parse (full, "elsewhere.example", &again, &err) < 0)
    fuzz_fail ("the full form %s is refused: %s", full, err->msg);
  char *full2 = sbx_imageref_string (again);
  CHECK (strcmp (full, full2) == 0);
  CHECK (sbx_imageref_is_canonical (full));
  free (full);
  free (full2);
  sbx_imageref_free (again);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char buf[SBX_IMAGEREF_MAX + 64];
  if (size >= sizeof buf)
    return 0;
  memcpy (buf, data, size);
  buf[size] = '\0';
  sbx_imageref *r = NULL;
  sbx_error *err = NULL;
  if (sbx_imageref_parse (buf, NULL, &r, &err) == 0)
    {
      check_ref (r);
      accepted++;
      sbx_imageref_free (r);
    }
  else
    {
      CHECK (r == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && err->msg && err->msg[0]);
      for (const char *p = err->msg; *p; p++)
        if ((unsigned char) *p < 0x20 || *p == 0x7f)
          fuzz_fail ("a message with a control byte: %s", err->msg);
      sbx_error_free (err);
    }
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 40000
#define INPUT_MAX 1100

static const char *const seeds[] = {
  "busybox",
  "python:3.12-slim",
  "docker.io/library/alpine:3.20",
  "quay.io/podman/stable@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
  "localhost:5000/team/app:v1.2.3",
  "[::1]:5000/test/busybox:1",
  "registry.example.com:443/a.b/c_d/e__f/g-h--i:TAG_1",
  "127.0.0.1:35000/x/y:z@sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
};

static const char *const tokens[] = {
  "/",  ":",  "@",         ".",         "_",        "__",    "-",  "[", "]", "::",       "sha256:",
  "A",  "0",  "localhost", "docker.io", "library/", ":5000", "\n", " ", "",  "\xc3\xa9", "abcdef0123456789",
  "..", "//", "@sha256:"
};

int
main (void)
{
  static const struct fuzz_seeds mutations = FUZZ_SEEDS (seeds, tokens, INPUT_MAX, true);
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 1818,
    .mutate = &mutations,
    .what = "references to the parser",
  };

  fuzz_corpus_run (&corpus, 2);
  tap_ok (accepted > CORPUS_SIZE / 10, "%zu of them accepted, each with its promises kept and a full form of itself",
          accepted);
  return tap_done ();
}

#endif
