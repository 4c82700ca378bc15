/* What the fuzz harnesses share. A harness defines FUZZ_NAME ("fuzz-conf"),
 * includes this header, and defines LLVMFuzzerTestOneInput, which checks one
 * input with CHECK: a broken promise prints the harness's name, the file, the
 * line and the condition, then aborts, so libFuzzer or the sanitizers keep the
 * input.
 *
 * Without -DSBX_LIBFUZZER a harness is a check program: its main runs a fixed
 * pseudo-random corpus through LLVMFuzzerTestOneInput with fuzz_corpus_run,
 * which prints the TAP plan and test 1, then prints its own tests about what
 * the corpus reached (tap_ok) and returns tap_done (). Its inputs come from
 * fuzz_rnd, and, for a text format, from fuzz_mutate_seed: valid seeds,
 * mutated.
 *
 * With -DSBX_LIBFUZZER -fsanitize=fuzzer it is a libFuzzer target, built from
 * the top of a configured tree with the library's sources, e.g.
 *   clang -DHAVE_CONFIG_H -DSBX_LIBFUZZER -DSBX_LIBEXECDIR='"/x"' -g -O1
 *     -fsanitize=fuzzer,address -I. -Isrc/lib -I/usr/include/yajl
 *     tests/fuzz/fuzz-conf.c src/lib/[a-z]*.c
 *     -lseccomp -lcap -lyajl -lnftnl -lmnl -larchive -ldl -o fuzz-conf
 * (fuzz-tar has its own driver and does not use this header). */
#ifndef SBX_FUZZ_H
#define SBX_FUZZ_H

#ifndef FUZZ_NAME
#error "define FUZZ_NAME, the harness's name, before including fuzz.h"
#endif

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "fuzz-NAME: " and the message on stderr, then abort (). */
__attribute__ ((noreturn, format (printf, 1, 2))) static inline void
fuzz_fail (const char *fmt, ...)
{
  va_list ap;
  fputs (FUZZ_NAME ": ", stderr);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  abort ();
}

#define CHECK(cond)                                                       \
  do                                                                      \
    {                                                                     \
      if (!(cond))                                                        \
        fuzz_fail ("%s:%d: check failed: %s", __FILE__, __LINE__, #cond); \
    }                                                                     \
  while (0)

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#ifndef SBX_LIBFUZZER

#include "tap.h"

static uint32_t fuzz_rnd_state;

/* A pseudo-random number below N (0 when N is 0). An LCG, so the corpus is
 * the same on every run; fuzz_corpus_run sets its state. */
static inline uint32_t
fuzz_rnd (uint32_t n)
{
  fuzz_rnd_state = fuzz_rnd_state * 1103515245u + 12345u;
  return (fuzz_rnd_state >> 8) % (n ? n : 1);
}

/* Valid inputs of a text format, and what to insert into them. */
struct fuzz_seeds {
  const char *const *seeds;
  size_t nseeds;
  const char *const *tokens; /* "" inserts one NUL byte */
  size_t ntokens;
  size_t max;  /* the size of the buffer: an insertion stays below it */
  bool digits; /* also change digits, for a format of mostly numbers */
};

/* The fuzz_seeds of the arrays SEEDS and TOKENS. */
#define FUZZ_SEEDS(seeds_, tokens_, max_, digits_)                                        \
  {                                                                                       \
    .seeds = (seeds_), .nseeds = sizeof (seeds_) / sizeof *(seeds_), .tokens = (tokens_), \
    .ntokens = sizeof (tokens_) / sizeof *(tokens_), .max = (max_), .digits = (digits_)   \
  }

/* Input I in OUT, its length returned: seed I % NSEEDS, as it is for every
 * fifth input, else with one to four edits, each a byte flipped, a span of up
 * to seven bytes deleted, a digit changed (with DIGITS) or a token inserted.
 * The same I and fuzz_rnd state give the same input. */
static inline size_t
fuzz_mutate_seed (const struct fuzz_seeds *m, unsigned i, uint8_t *out)
{
  const char *s = m->seeds[i % m->nseeds];
  size_t n = strlen (s);

  memcpy (out, s, n);
  if (i % 5 == 0)
    return n; /* valid as is */
  unsigned edits = 1 + fuzz_rnd (4);
  for (unsigned e = 0; e < edits; e++)
    {
      size_t at = fuzz_rnd ((uint32_t) n + 1);
      uint32_t op = fuzz_rnd (m->digits ? 4 : 3);
      if (op == 2 && !m->digits)
        op = 3; /* without digit changes, the third edit is the insertion */
      switch (op)
        {
        case 0: /* flip a byte */
          if (n)
            out[at % n] = (uint8_t) fuzz_rnd (256);
          break;
        case 1: /* delete a span */
          if (n)
            {
              size_t len = fuzz_rnd (8);
              if (at + len > n)
                len = n - at;
              memmove (out + at, out + at + len, n - at - len);
              n -= len;
            }
          break;
        case 2: /* change a digit */
          if (n && out[at % n] >= '0' && out[at % n] <= '9')
            out[at % n] = (uint8_t) ('0' + fuzz_rnd (10));
          break;
        default: /* insert a token */
          {
            const char *t = m->tokens[fuzz_rnd ((uint32_t) m->ntokens)];
            size_t tl = t[0] ? strlen (t) : 1;
            if (n + tl < m->max)
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

/* A check program's corpus: inputs made by MAKE_INPUT, or else the seeds of
 * MUTATE mutated by fuzz_mutate_seed. */
struct fuzz_corpus {
  unsigned count;    /* inputs */
  size_t input_max;  /* the most bytes an input has */
  uint32_t rnd_seed; /* fuzz_rnd's first state */
  size_t (*make_input) (unsigned i, uint8_t *out);
  const struct fuzz_seeds *mutate;
  const char *what; /* the inputs and where they go, for test 1 */
};

/* Prints the plan of TESTS tests, runs C's inputs through
 * LLVMFuzzerTestOneInput and, as nothing broke, passes test 1. */
static inline void
fuzz_corpus_run (const struct fuzz_corpus *c, int tests)
{
  uint8_t *input = calloc (1, c->input_max);

  CHECK (input != NULL);
  fuzz_rnd_state = c->rnd_seed;
  tap_plan (tests);
  fflush (stdout); /* the plan stays, should a check abort */
  for (unsigned i = 0; i < c->count; i++)
    {
      size_t n = c->make_input ? c->make_input (i, input) : fuzz_mutate_seed (c->mutate, i, input);
      CHECK (n <= c->input_max);
      LLVMFuzzerTestOneInput (input, n);
    }
  free (input);
  tap_ok (true, "%u pseudo-random %s", c->count, c->what);
}

#endif /* SBX_LIBFUZZER */
#endif /* SBX_FUZZ_H */
