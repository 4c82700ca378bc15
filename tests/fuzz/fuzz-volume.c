/* Fuzz harness for --volume values (src/lib/volume.c): arbitrary bytes and
 * valid values mutated byte by byte go to sbx_volume_spec_parse. It must
 * never crash; what it accepts must keep the parser's promises (a valid
 * name, a clean absolute destination with no `.` or `..` and not over
 * /, /.sbx, /proc, /sys or /dev, which parses again to itself); what it
 * refuses must be INVALID_ARGUMENT or PATH_INVALID with a printable
 * message.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "util.h"
#include "volume.h"

#define FUZZ_NAME "fuzz-volume"
#include "fuzz.h"

static size_t accepted;

static bool
under (const char *p, const char *top)
{
  size_t l = strlen (top);
  return strncmp (p, top, l) == 0 && (p[l] == '\0' || p[l] == '/');
}

static void
check_spec (const sbx_volume_spec *v)
{
  CHECK (sbx_volume_name_is_valid (v->name));
  const char *d = v->dest;
  size_t n = strlen (d);
  CHECK (d[0] == '/' && n > 1 && d[n - 1] != '/' && strstr (d, "//") == NULL);
  CHECK (strstr (d, "/./") == NULL && strstr (d, "/../") == NULL);
  CHECK (!(n >= 2 && strcmp (d + n - 2, "/.") == 0) && !(n >= 3 && strcmp (d + n - 3, "/..") == 0));
  CHECK (!under (d, "/.sbx") && !under (d, "/proc") && !under (d, "/sys") && !under (d, "/dev"));
  for (const char *p = d; *p; p++)
    CHECK ((unsigned char) *p >= 0x20 && *p != 0x7f);
  /* Its clean form is a value that parses to itself. */
  char *again = xasprintf ("%s:%s%s", v->name, v->dest, v->readonly ? ":ro" : ":rw");
  sbx_volume_spec w = { NULL };
  sbx_error *err = NULL;
  if (sbx_volume_spec_parse (again, &w, &err) < 0)
    fuzz_fail ("the clean form %s is refused: %s", again, err->msg);
  CHECK (strcmp (w.name, v->name) == 0 && strcmp (w.dest, v->dest) == 0 && w.readonly == v->readonly);
  sbx_volume_spec_clear (&w);
  free (again);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char buf[8192];
  if (size >= sizeof buf)
    return 0;
  memcpy (buf, data, size);
  buf[size] = '\0';
  sbx_volume_spec v = { NULL };
  sbx_error *err = NULL;
  if (sbx_volume_spec_parse (buf, &v, &err) == 0)
    {
      check_spec (&v);
      accepted++;
      sbx_volume_spec_clear (&v);
    }
  else
    {
      CHECK (v.name == NULL && v.dest == NULL && err && err->msg && err->msg[0]);
      CHECK (err->code == SBX_E_INVALID_ARGUMENT || err->code == SBX_E_PATH_INVALID);
      for (const char *p = err->msg; *p; p++)
        if ((unsigned char) *p < 0x20 || *p == 0x7f)
          fuzz_fail ("a message with a control byte: %s", err->msg);
      sbx_error_free (err);
    }
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 40000
#define INPUT_MAX 300

static const char *const seeds[] = {
  "data:/data", "data:/data:ro", "cache:/var/cache/app:rw", "my-vol.1_x+y:/srv/www/", "v://a//b:ro", "v:/a:b/c",
};

static const char *const tokens[] = { "/",    ":",     ".",  "..", "/..", "/.", ":ro", ":rw", "/proc",    "/sys",
                                      "/dev", "/.sbx", "//", "\n", " ",   "",   "A",   "-",   "\xc3\xa9", "_" };

int
main (void)
{
  static const struct fuzz_seeds mutations = FUZZ_SEEDS (seeds, tokens, INPUT_MAX, true);
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 2020,
    .mutate = &mutations,
    .what = "--volume values to the parser",
  };

  fuzz_corpus_run (&corpus, 2);
  tap_ok (accepted > CORPUS_SIZE / 20, "%zu of them accepted, each with its promises kept and a clean form of itself",
          accepted);
  return tap_done ();
}

#endif
