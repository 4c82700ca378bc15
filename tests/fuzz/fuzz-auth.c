/* Fuzz harness for the registry auth file reader (src/lib/regauth.c):
 * arbitrary bytes, and valid containers-auth.json / docker config.json files
 * mutated byte by byte, go to sbx_auth_parse, asked for a few registries and
 * repositories. It must never crash, and what it finds must hold the
 * format's promises: a user name and a password of 1 to SBX_AUTH_FIELD_MAX
 * bytes with no NUL, the user name without a colon. What it refuses must be
 * INVALID_ARGUMENT with a printable message that starts with the file's
 * name and never quotes a secret of the seeds (their "auth" values all
 * decode to passwords that start with "pw-").
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "regauth-internal.h"

#define FUZZ_NAME "fuzz-auth"
#include "fuzz.h"

#define NAME "fuzz-auth.json"

static size_t accepted, found;

static const char *const queries[][2] = {
  { "docker.io", "library/python" },
  { "quay.io", "team/app" },
  { "localhost:5000", NULL },
  { "[::1]:5000", "a/b" },
};

static void
check_cred (const sbx_cred *c)
{
  CHECK (c->username && c->password);
  size_t ul = strlen (c->username), pl = strlen (c->password);
  CHECK (ul >= 1 && ul <= SBX_AUTH_FIELD_MAX && pl >= 1 && pl <= SBX_AUTH_FIELD_MAX);
  CHECK (strchr (c->username, ':') == NULL);
}

static void
check_error (const sbx_error *err)
{
  CHECK (err && err->code == SBX_E_INVALID_ARGUMENT && err->msg);
  CHECK (strncmp (err->msg, NAME ": ", strlen (NAME) + 2) == 0);
  for (const char *p = err->msg; *p; p++)
    if (*p < 0x20 || *p >= 0x7f)
      fuzz_fail ("a message that is not printable: %s", err->msg);
  if (strstr (err->msg, "pw-") || strstr (err->msg, "cHctc2") || strstr (err->msg, "TOKEN"))
    fuzz_fail ("a message that quotes a secret: %s", err->msg);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  bool ok = false;
  for (size_t i = 0; i < sizeof queries / sizeof *queries; i++)
    {
      sbx_cred *c = NULL;
      sbx_error *err = NULL;
      if (sbx_auth_parse (NAME, (const char *) data, size, queries[i][0], queries[i][1], &c, &err) == 0)
        {
          CHECK (err == NULL);
          ok = true;
          if (c)
            {
              check_cred (c);
              found++;
            }
          sbx_cred_free (c);
        }
      else
        {
          CHECK (c == NULL);
          check_error (err);
          sbx_error_free (err);
        }
    }
  accepted += ok;
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 20000
#define INPUT_MAX 4096

/* base64 of "alice:pw-one", "bob:pw-two:x", "u:pw-3" */
static const char *const seeds[] = {
  "{}",
  "{\"auths\": {}}",
  "{\"auths\": {\"docker.io\": {\"auth\": \"YWxpY2U6cHctb25l\"}}}",
  "{\"auths\": {\"https://index.docker.io/v1/\": {\"auth\": \"Ym9iOnB3LXR3bzp4\", \"email\": \"x\"}},"
  " \"credsStore\": \"desktop\"}",
  "{\"auths\": {\"quay.io\": {\"auth\": \"dTpwdy0z\"}, \"quay.io/team\": {\"auth\": \"YWxpY2U6cHctb25l\"},"
  " \"quay.io/team/app\": {\"auth\": \"Ym9iOnB3LXR3bzp4\"}}}",
  "{\"auths\": {\"localhost:5000\": {\"auth\": \"dTpwdy0z\", \"identitytoken\": \"TOKEN\"},"
  " \"[::1]:5000\": {\"identitytoken\": \"TOKEN\"}, \"ghcr.io\": {}}}",
  "{\"auths\": null, \"credHelpers\": {\"quay.io\": \"x\"}}",
};

static const char *const tokens[] = {
  "{",
  "}",
  "[",
  "]",
  "\"",
  ":",
  ",",
  "null",
  "true",
  "1",
  "=",
  "==",
  "/",
  "\\u0000",
  "\\",
  "",
  "\"auth\": ",
  "\"identitytoken\": \"\"",
  "\"quay.io\": {}",
  "https://",
  "docker.io",
  "\xc3\xa9",
  "\xff",
};

int
main (void)
{
  static const struct fuzz_seeds mutations = FUZZ_SEEDS (seeds, tokens, INPUT_MAX, false);
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 1818,
    .mutate = &mutations,
    .what = "auth files to the reader",
  };

  fuzz_corpus_run (&corpus, 2);
  tap_ok (accepted > CORPUS_SIZE / 10 && found > CORPUS_SIZE / 10,
          "%zu of them accepted, %zu credentials found, each within the format's bounds", accepted, found);
  return tap_done ();
}

#endif
