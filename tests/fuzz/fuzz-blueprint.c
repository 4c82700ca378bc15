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

#define FUZZ_NAME "fuzz-blueprint"
#include "fuzz.h"

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

static const char *const seeds[] = {
  "{\"base\":\"busybox\"}",
  "{\"base\":\"debian:bookworm\",\"steps\":[{\"apt_packages\":[\"curl\",\"git=1:2.39\"]},{\"python_version\":\"3.11\"},"
  "{\"python_packages\":[\"requests==2.31\",\"numpy>=1.2,<2\",\"a[b,c]\"]}]}",
  "{\"base\":\"busybox\",\"steps\":[{\"files\":[{\"src\":\"app\",\"dest\":\"/app\",\"mode\":\"0755\"}]},"
  "{\"run\":\"make\"},{\"run\":[\"a\",\"b\"]},{\"env\":{\"K\":\"V\",\"L\":\"\"}},{\"workdir\":\"/w\"},"
  "{\"cmd\":[\"sh\",\"-c\",\"x\"]},{\"with_docker\":true}]}",
  "{\"base\":\"sha256:0123456789abcdef\",\"steps\":[]}",
};

static const char *const tokens[] = { "\"..\"",      "\"../x\"", "\"/abs\"", "-r", "\"--index-url\"",
                                      "null",        "true",     "1e999",    "[]", "{}",
                                      "\"\\u0000\"", ",",        ":",        "\"", "{",
                                      "}",           "[",        "]",        "'",  " " };

int
main (void)
{
  static const struct fuzz_seeds mutations = FUZZ_SEEDS (seeds, tokens, INPUT_MAX, false);
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 12345,
    .mutate = &mutations,
    .what = "blueprints to the parser",
  };

  fuzz_corpus_run (&corpus, 2);
  tap_ok (accepted > CORPUS_SIZE / 10, "%zu of them accepted, each with its promises kept", accepted);
  return tap_done ();
}

#endif
