/* Fuzz harness for the WWW-Authenticate parser of the registry transport
 * (src/lib/registry.c, sbx_www_auth_parse): a registry's 401 is outside
 * input. Arbitrary bytes and valid challenges mutated byte by byte must
 * never crash it; what it accepts is Bearer with a realm or Basic, every
 * value printable ASCII within its bound; what it refuses is
 * INVALID_ARGUMENT with a printable message.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "registry-internal.h"

#define FUZZ_NAME "fuzz-wwwauth"
#include "fuzz.h"

static size_t accepted;

static void
check_value (const char *v)
{
  if (v == NULL)
    return;
  CHECK (strlen (v) <= SBX_WWW_AUTH_PARAM_MAX);
  for (const char *p = v; *p; p++)
    CHECK ((unsigned char) *p >= 0x20 && (unsigned char) *p < 0x7f);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  sbx_www_auth *a = NULL;
  sbx_error *err = NULL;
  if (sbx_www_auth_parse ((const char *) data, size, &a, &err) == 0)
    {
      CHECK (a->scheme == SBX_WWW_BEARER || a->scheme == SBX_WWW_BASIC);
      CHECK (a->scheme != SBX_WWW_BEARER || (a->realm && a->realm[0]));
      check_value (a->realm);
      check_value (a->service);
      check_value (a->scope);
      accepted++;
      sbx_www_auth_free (a);
    }
  else
    {
      CHECK (a == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && err->msg && err->msg[0]);
      for (const char *p = err->msg; *p; p++)
        if ((unsigned char) *p < 0x20 || *p == 0x7f)
          fuzz_fail ("a message with a control byte: %s", err->msg);
      sbx_error_free (err);
    }
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 40000
#define INPUT_MAX 9000

static const char *const seeds[] = {
  "Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\",scope=\"repository:library/x:pull\"",
  "Basic realm=\"Registry Realm\"",
  "bearer realm=https://127.0.0.1:5001/token, service=reg",
  "Negotiate abc==, Basic realm=\"r\", Bearer realm=\"http://t/\\\"x\\\"\"",
  "Bearer realm=\"https://t/\",error=\"invalid_token\",scope=\"a:b:pull,push\"",
};

static const char *const tokens[] = { ",",     "=",       "\"",       "\\",          " ",     "\t",
                                      "realm", "service", "scope",    "Bearer",      "Basic", "==",
                                      "\n",    "",        "\xc3\xa9", "realm=\"x\"", ", ",    "https://" };

int
main (void)
{
  static const struct fuzz_seeds mutations = FUZZ_SEEDS (seeds, tokens, INPUT_MAX, false);
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 401,
    .mutate = &mutations,
    .what = "challenges to the parser",
  };

  fuzz_corpus_run (&corpus, 2);
  tap_ok (accepted > CORPUS_SIZE / 10, "%zu of them accepted, each with its promises kept", accepted);
  return tap_done ();
}

#endif
