/* Fuzz harness for the --mount grammar and the host-directory policy
 * (src/lib/hostmount.c): arbitrary bytes and valid specs mutated byte by
 * byte go to sbx_hostmount_parse, with and without a working directory. It
 * must never crash; what it accepts must be normal absolute paths (no `.`,
 * `..`, `//`, trailing `/`, control byte), a destination that is not `/` or
 * the runtime's, a record form that parses to itself; the policy's verdict
 * on the source must be POLICY_REFUSED or none, refuse `/` and /etc, and
 * be the same on a second call; what the parser refuses must be
 * INVALID_ARGUMENT or PATH_INVALID with a printable message.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "hostmount.h"
#include "util.h"

#define FUZZ_NAME "fuzz-hostmount"
#include "fuzz.h"

#include <limits.h>

static size_t accepted;
static sbx_conf *conf;

static bool
normal_path (const char *p)
{
  size_t l = strlen (p);
  if (p[0] != '/' || l >= PATH_MAX || (l > 1 && p[l - 1] == '/') || strstr (p, "//") || strstr (p, "/./")
      || strstr (p, "/../"))
    return false;
  if ((l >= 2 && strcmp (p + l - 2, "/.") == 0) || (l >= 3 && strcmp (p + l - 3, "/..") == 0))
    return false;
  for (const char *c = p; *c; c++)
    if ((unsigned char) *c < 0x20 || *c == 0x7f)
      return false;
  return true;
}

static bool
under (const char *p, const char *dir)
{
  size_t n = strlen (dir);
  return strncmp (p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

static void
check_accepted (const sbx_hostmount *m)
{
  CHECK (normal_path (m->source) && normal_path (m->dest));
  CHECK (strcmp (m->dest, "/") != 0 && !under (m->dest, "/proc") && !under (m->dest, "/sys") && !under (m->dest, "/dev")
         && !under (m->dest, "/.sbx"));
  CHECK (strchr (m->source, ':') == NULL && strchr (m->dest, ':') == NULL);
  char *f = sbx_hostmount_format (m);
  sbx_hostmount again = { 0 };
  sbx_error *err = NULL;
  if (sbx_hostmount_parse (f, NULL, &again, &err) < 0)
    fuzz_fail ("the record form %s is refused: %s", f, err->msg);
  CHECK (strcmp (again.source, m->source) == 0 && strcmp (again.dest, m->dest) == 0 && again.readonly == m->readonly);
  sbx_hostmount_clear (&again);
  free (f);
  /* The policy: a verdict, the same twice. */
  sbx_error *e1 = NULL, *e2 = NULL;
  int r1 = sbx_hostmount_policy (m->source, conf, "/srv/store/root", "/srv/store/run", &e1);
  int r2 = sbx_hostmount_policy (m->source, conf, "/srv/store/root", "/srv/store/run", &e2);
  CHECK (r1 == r2 && (r1 == 0) == (e1 == NULL));
  if (r1 < 0)
    CHECK (e1->code == SBX_E_POLICY_REFUSED && e2->code == SBX_E_POLICY_REFUSED && strcmp (e1->msg, e2->msg) == 0);
  if (strcmp (m->source, "/") == 0 || under (m->source, "/etc") || under (m->source, "/proc")
      || under (m->source, "/srv/store/root") || under (m->source, "/srv/store/run")
      || strcmp (m->source, "/srv/store") == 0 || strcmp (m->source, "/srv") == 0 || under (m->source, "/denied"))
    CHECK (r1 < 0);
  sbx_error_free (e1);
  sbx_error_free (e2);
}

static void
one (const char *spec, const char *cwd)
{
  sbx_hostmount m = { 0 };
  sbx_error *err = NULL;
  if (sbx_hostmount_parse (spec, cwd, &m, &err) == 0)
    {
      check_accepted (&m);
      accepted++;
      sbx_hostmount_clear (&m);
      return;
    }
  CHECK (m.source == NULL && m.dest == NULL);
  CHECK (err && (err->code == SBX_E_INVALID_ARGUMENT || err->code == SBX_E_PATH_INVALID) && err->msg && err->msg[0]);
  for (const char *p = err->msg; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      fuzz_fail ("a message with a control byte: %s", err->msg);
  sbx_error_free (err);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char buf[PATH_MAX * 2 + 64];
  if (size >= sizeof buf)
    return 0;
  memcpy (buf, data, size);
  buf[size] = '\0';
  if (conf == NULL)
    {
      static const char text[] = "mount_deny = /denied\nmount_allow = /home /srv /denied /tmp\n";
      sbx_error *err = NULL;
      if (sbx_conf_parse ("fuzz.conf", text, sizeof text - 1, &conf, &err) < 0)
        fuzz_fail ("the harness's sbx.conf: %s", err->msg);
    }
  one (buf, NULL);
  one (buf, "/home/alice/project");
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 40000
#define INPUT_MAX 600

static const char *const seeds[] = {
  "/srv/data:/data",   "/srv/data:/data:ro", "/home/alice/project:/workspace:rw",
  "data:/mnt/data:rw", ".:/workspace",       "/tmp/x/./y//:/a/b/:ro",
  "/etc:/x",           "/denied/x:/y:rw",
};

static const char *const tokens[] = { "/",    ":",     ":ro",        ":rw",  ".",  "..",   "/..",      "/./",
                                      "//",   "\n",    "\t",         "\x7f", " ",  "/etc", "/proc",    "/dev",
                                      "/sys", "/.sbx", "/srv/store", "rw",   "ro", "RW",   "\xc3\xa9", "" };

int
main (void)
{
  static const struct fuzz_seeds mutations = FUZZ_SEEDS (seeds, tokens, INPUT_MAX, true);
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 2020,
    .mutate = &mutations,
    .what = "--mount values to the parser and the policy",
  };

  fuzz_corpus_run (&corpus, 2);
  tap_ok (accepted > CORPUS_SIZE / 10, "%zu of them accepted, each normal, its record form itself, a stable verdict",
          accepted);
  sbx_conf_free (conf);
  return tap_done ();
}

#endif
