/* Fuzz harness for the blueprint parser (src/lib/blueprint.c): arbitrary
 * bytes, and valid blueprints mutated byte by byte, go to
 * sbx_blueprint_parse. It must never crash, and what it accepts must hold
 * its promises: a base, steps of known kinds each with its canonical form,
 * package names in their grammar, paths without `..`.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "blueprint.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
  do                                                                                               \
    {                                                                                              \
      if (!(cond))                                                                                 \
        {                                                                                          \
          fprintf (stderr, "fuzz-blueprint: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
          abort ();                                                                                \
        }                                                                                          \
    }                                                                                              \
  while (0)

static size_t accepted;

/* Whether P has a `..` component. */
static bool
has_dotdot (const char *p)
{
  for (const char *c = p; (c = strstr (c, "..")) != NULL; c += 2)
    if ((c == p || c[-1] == '/') && (c[2] == '\0' || c[2] == '/'))
      return true;
  return false;
}

static void
check_blueprint (const sbx_blueprint *bp)
{
  CHECK (bp->base && bp->base[0]);
  for (size_t i = 0; i < bp->nsteps; i++)
    {
      const sbx_bp_step *s = &bp->steps[i];
      CHECK (s->kind < SBX_STEP__MAX);
      CHECK (s->canon && s->canon[0] == '{');
      for (size_t k = 0; s->list && s->list[k]; k++)
        {
          if (s->kind == SBX_STEP_APT_PACKAGES || s->kind == SBX_STEP_PYTHON_PACKAGES)
            CHECK (s->list[k][0] != '-' && strchr (s->list[k], '\'') == NULL && strchr (s->list[k], ' ') == NULL);
          if (s->kind == SBX_STEP_ENV)
            CHECK (strchr (s->list[k], '=') != NULL);
        }
      for (size_t f = 0; f < s->nfiles; f++)
        {
          CHECK (s->files[f].src[0] != '/' && !has_dotdot (s->files[f].src));
          CHECK (!has_dotdot (s->files[f].dest));
          CHECK (s->files[f].dest[0] == '/');
          CHECK (s->files[f].mode >= -1 && s->files[f].mode <= 07777);
        }
    }
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  sbx_blueprint *bp = NULL;
  sbx_error *err = NULL;
  if (sbx_blueprint_parse ((const char *) data, size, &bp, &err) == 0)
    {
      check_blueprint (bp);
      accepted++;
      sbx_blueprint_free (bp);
    }
  else
    {
      CHECK (err && err->code == SBX_E_INVALID_ARGUMENT && err->msg && err->msg[0]);
      sbx_error_free (err);
    }
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 20000
#define INPUT_MAX 8192

static uint32_t seed = 12345;

static uint32_t
rnd (uint32_t n)
{
  seed = seed * 1103515245u + 12345u;
  return (seed >> 8) % (n ? n : 1);
}

static const char *const seeds[] = {
  "{\"base\":\"busybox\"}",
  "{\"base\":\"debian:bookworm\",\"steps\":[{\"apt_packages\":[\"curl\",\"git=1:2.39\"]},{\"python_version\":\"3.11\"},"
  "{\"python_packages\":[\"requests==2.31\",\"numpy>=1.2,<2\",\"a[b,c]\"]}]}",
  "{\"base\":\"busybox\",\"steps\":[{\"files\":[{\"src\":\"app\",\"dest\":\"/app\",\"mode\":\"0755\"}]},"
  "{\"run\":\"make\"},{\"run\":[\"a\",\"b\"]},{\"env\":{\"K\":\"V\",\"L\":\"\"}},{\"workdir\":\"/w\"},"
  "{\"cmd\":[\"sh\",\"-c\",\"x\"]},{\"with_docker\":true}]}",
  "{\"base\":\"sha256:0123456789abcdef\",\"steps\":[]}",
};

static const char *const tokens[] = { "\"..\"", "\"../x\"", "\"/abs\"", "-r", "\"--index-url\"", "null", "true", "1e999",
                                      "[]", "{}", "\"\\u0000\"", ",", ":", "\"", "{", "}", "[", "]", "'", " " };

static size_t
make_input (unsigned i, char *out)
{
  const char *s = seeds[i % (sizeof seeds / sizeof *seeds)];
  size_t n = strlen (s);
  memcpy (out, s, n);
  if (i % 5 == 0)
    return n; /* valid as is */
  unsigned edits = 1 + rnd (4);
  for (unsigned e = 0; e < edits; e++)
    {
      size_t at = rnd ((uint32_t) n + 1);
      switch (rnd (3))
        {
        case 0: /* flip a byte */
          if (n)
            out[at % n] = (char) rnd (256);
          break;
        case 1: /* delete a span */
          if (n)
            {
              size_t len = rnd (8);
              if (at + len > n)
                len = n - at;
              memmove (out + at, out + at + len, n - at - len);
              n -= len;
            }
          break;
        default: /* insert a token */
          {
            const char *t = tokens[rnd (sizeof tokens / sizeof *tokens)];
            size_t tl = strlen (t);
            if (n + tl < INPUT_MAX)
              {
                memmove (out + at + tl, out + at, n - at);
                memcpy (out + at, t, tl);
                n += tl;
              }
          }
        }
    }
  return n;
}

int
main (void)
{
  static char input[INPUT_MAX];
  printf ("1..2\n");
  for (unsigned i = 0; i < CORPUS_SIZE; i++)
    {
      size_t n = make_input (i, input);
      LLVMFuzzerTestOneInput ((const uint8_t *) input, n);
    }
  printf ("ok 1 - %d pseudo-random blueprints to the parser\n", CORPUS_SIZE);
  printf ("%s 2 - %zu of them accepted, each with its promises kept\n", accepted > CORPUS_SIZE / 10 ? "ok" : "not ok",
          accepted);
  return 0;
}

#endif
