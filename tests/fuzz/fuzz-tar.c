/* Fuzzes layer import: arbitrary bytes, as a file, into a throwaway ROOT.
 * Whatever the input, an import either makes one whole layer or fails and
 * leaves nothing, the layer holds no device but overlay whiteouts, and nothing
 * appears outside ROOT: not in the test's directory, not in the working
 * directory, not in the canary directories the seeds' symlinks point at.
 *
 * The layer-*.c files must be compiled with -DSBX_LAYER_FUZZING (extraction in-process,
 * without the chroot, so the checks are tested alone and their coverage seen).
 * With -fsanitize=fuzzer -DSBX_LIBFUZZER this is a libFuzzer target; without,
 * main runs a deterministic set of mutated tarballs and prints TAP, and
 * `fuzz-tar --write-corpus DIR` writes the seeds as a starting corpus. */
#include "config.h"
#include "layer.h"
#include "util.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#define CANARY "/tmp/sbx-fuzz-canary"
#define N_INPUTS 500

static char *base, *root, *input, *cwd, *outside;

/* ---- invariants ---- */

static int
count_entries (const char *dir)
{
  DIR *d = opendir (dir);
  int n = 0;
  if (d == NULL)
    return errno == ENOENT ? 0 : -1;
  for (struct dirent *de; (de = readdir (d));)
    n += strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0;
  closedir (d);
  return n;
}

static int
check_node (const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
  if (S_ISCHR (st->st_mode) && st->st_rdev == makedev (0, 0))
    return 0;
  return S_ISREG (st->st_mode) || S_ISDIR (st->st_mode) || S_ISLNK (st->st_mode) ? 0 : 1;
}

/* NULL when every invariant holds, else what broke. */
static const char *
check_invariants (int r, const char *digest)
{
  _cleanup_free_ char *tmp = xasprintf ("%s/layers/tmp", root);
  _cleanup_free_ char *layers = xasprintf ("%s/layers/sha256", root);
  char here[4096];
  if (count_entries (outside) != 0 || count_entries (CANARY) != 0 || count_entries (cwd) != 0)
    return "something was written outside ROOT";
  if (count_entries (base) != 4 || count_entries (root) != 1)
    return "unexpected files next to or in ROOT";
  if (getcwd (here, sizeof here) == NULL || strcmp (here, cwd) != 0)
    return "the working directory changed";
  if (count_entries (tmp) != 0)
    return "a temp dir was left in ROOT/layers/tmp";
  if (r < 0)
    return count_entries (layers) == 0 ? NULL : "a failed import left a layer";
  if (count_entries (layers) != 1 || !sbx_layer_exists (root, digest))
    return "a successful import made no layer";
  _cleanup_free_ char *rootfs = sbx_layer_rootfs (root, digest);
  if (nftw (rootfs, check_node, 64, FTW_PHYS) != 0)
    return "the layer holds a device, FIFO or socket";
  return NULL;
}

/* Imports DATA and checks; returns NULL or what broke. *RET_OK: imported. */
static const char *
run_one (const uint8_t *data, size_t size, bool *ret_ok)
{
  _cleanup_free_ char *digest = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  uint64_t lsize;
  *ret_ok = false;
  if (write_file_atomic (input, data, size, 0600, NULL) < 0)
    return "cannot write the input";
  int r = sbx_layer_import_tar (root, input, &digest, &lsize, &err);
  const char *broken = check_invariants (r, digest);
  if (r == 0)
    sbx_layer_remove (root, digest, NULL);
  if (r < 0 && err->code != SBX_E_INVALID_ARGUMENT)
    broken = broken ? broken : "a refusal that is not INVALID_ARGUMENT";
  *ret_ok = r == 0;
  return broken;
}

static void
setup (void)
{
  char tmpl[] = "/tmp/sbx-fuzz-XXXXXX";
  if (mkdtemp (tmpl) == NULL)
    abort ();
  base = xstrdup (tmpl);
  root = xasprintf ("%s/root", base);
  input = xasprintf ("%s/input", base);
  cwd = xasprintf ("%s/cwd", base);
  outside = xasprintf ("%s/outside", base);
  if (mkdir (root, 0700) < 0 || mkdir (cwd, 0700) < 0 || mkdir (outside, 0700) < 0
      || (mkdir (CANARY, 0700) < 0 && errno != EEXIST) || chdir (cwd) < 0)
    abort ();
  /* Make ROOT/layers now, so ROOT's contents stay constant. */
  _cleanup_free_ char *layers = xasprintf ("%s/layers", root);
  _cleanup_free_ char *tmp = xasprintf ("%s/layers/tmp", root);
  if (mkdir (layers, 0700) < 0 || mkdir (tmp, 0700) < 0)
    abort ();
}

#ifdef SBX_LIBFUZZER

/* Runs on a normal exit only: after a crash the state stays for a look. The
 * working directory changes, so give libFuzzer absolute paths (corpus,
 * -artifact_prefix). */
static void
cleanup (void)
{
  rm_rf (base, NULL);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static bool ready;
  bool ok;
  if (!ready)
    {
      setup ();
      atexit (cleanup);
      ready = true;
    }
  const char *broken = run_one (data, size, &ok);
  if (broken)
    {
      fprintf (stderr, "fuzz-tar: %s (state kept in %s)\n", broken, base);
      abort ();
    }
  return 0;
}

#else

#include "tap.h"

/* ---- seeds ---- */

typedef struct buf {
  uint8_t *p;
  size_t n;
} buf;

static la_ssize_t
buf_write (struct archive *a, void *data, const void *p, size_t n)
{
  buf *b = data;
  b->p = xrealloc (b->p, b->n + n);
  memcpy (b->p + b->n, p, n);
  b->n += n;
  return (la_ssize_t) n;
}

typedef struct sentry {
  const char *path;
  char type; /* f d l h c p */
  const char *data;
} sentry;

static void
seed_entry (struct archive *a, const sentry *s)
{
  struct archive_entry *e = archive_entry_new ();
  mode_t type = s->type == 'd'   ? AE_IFDIR
                : s->type == 'l' ? AE_IFLNK
                : s->type == 'c' ? AE_IFCHR
                : s->type == 'p' ? AE_IFIFO
                                 : AE_IFREG;
  size_t len = s->type == 'f' && s->data ? strlen (s->data) : 0;
  archive_entry_set_pathname (e, s->path);
  archive_entry_set_filetype (e, type);
  archive_entry_set_perm (e, s->type == 'd' ? 0755 : 0644);
  archive_entry_set_size (e, (la_int64_t) len);
  if (s->type == 'l')
    archive_entry_set_symlink (e, s->data);
  if (s->type == 'h')
    archive_entry_set_hardlink (e, s->data);
  if (s->type == 'c')
    archive_entry_set_rdev (e, makedev (1, 3));
  archive_write_header (a, e);
  if (len)
    archive_write_data (a, s->data, len);
  archive_entry_free (e);
}

static buf
make_seed (const sentry *v, size_t n, bool gnu, char filter)
{
  buf b = { NULL, 0 };
  struct archive *a = archive_write_new ();
  if (gnu)
    archive_write_set_format_gnutar (a);
  else
    archive_write_set_format_pax_restricted (a);
  if (filter == 'g')
    archive_write_add_filter_gzip (a);
  else if (filter == 'x')
    archive_write_add_filter_xz (a);
  else if (filter == 'z')
    archive_write_add_filter_zstd (a);
  archive_write_set_bytes_per_block (a, 512);
  archive_write_set_bytes_in_last_block (a, 1);
  archive_write_open (a, &b, NULL, buf_write, NULL);
  for (size_t i = 0; i < n; i++)
    seed_entry (a, &v[i]);
  archive_write_close (a);
  archive_write_free (a);
  return b;
}

#define SEED(v, gnu, f) make_seed (v, ARRAY_SIZE (v), gnu, f)

static size_t
make_seeds (buf *seeds)
{
  _cleanup_free_ char *rel = xasprintf ("../../../../../../../../../..%s", outside);
  const sentry tree[] = {
    { "./", 'd' },
    { "bin/", 'd' },
    { "bin/sh", 'f', "#!x\n" },
    { "bin/ln", 'h', "bin/sh" },
    { "etc/", 'd' },
    { "etc/link", 'l', "/etc/passwd" },
    { "d/.wh..wh..opq", 'f' },
    { "d/.wh.gone", 'f' },
    { "d/kept", 'f', "kept" },
  };
  const sentry abs_through[] = { { "a", 'l', outside }, { "a/evil", 'f', "x" } };
  const sentry canary_through[] = { { "a", 'l', CANARY }, { "a/sub/", 'd' }, { "a/sub/evil", 'f', "x" } };
  const sentry rel_through[] = { { "b", 'l', rel }, { "b/evil", 'f', "x" } };
  const sentry hardlinks[] = { { "f", 'f', "x" }, { "g", 'h', "f" }, { "h", 'h', "../x" }, { "p", 'h', "/etc/passwd" } };
  const sentry loop[] = { { "d", 'l', "." }, { "d/d/d/file", 'f', "x" }, { "e", 'l', "e" }, { "e/x", 'f', "x" } };
  const sentry replace[] = { { "x", 'l', outside }, { "x/", 'd' }, { "x/f", 'f', "y" }, { "y", 'h', "x/f" } };
  const sentry devices[] = { { "dev/", 'd' }, { "dev/null", 'c' }, { "fifo", 'p' } };
  char longname[300];
  memset (longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  memcpy (longname, "long/", 5);
  longname[150] = '/';
  const sentry longnames[] = { { "long/", 'd' }, { longname, 'f', "data" }, { "long/l", 'l', longname } };
  size_t n = 0;
  seeds[n++] = SEED (tree, false, 0);
  seeds[n++] = SEED (tree, true, 0);
  seeds[n++] = SEED (tree, false, 'g');
  seeds[n++] = SEED (tree, false, 'x');
  seeds[n++] = SEED (tree, false, 'z');
  seeds[n++] = SEED (abs_through, false, 0);
  seeds[n++] = SEED (canary_through, false, 0);
  seeds[n++] = SEED (rel_through, false, 0);
  seeds[n++] = SEED (hardlinks, false, 0);
  seeds[n++] = SEED (loop, false, 0);
  seeds[n++] = SEED (replace, false, 0);
  seeds[n++] = SEED (devices, false, 0);
  seeds[n++] = SEED (longnames, false, 0);
  seeds[n++] = SEED (longnames, true, 0);
  return n;
}

/* ---- mutations: byte-level, and tar-aware ones that keep checksums valid ---- */

static uint64_t rng_state;

static uint64_t
rng (void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void
fix_checksum (uint8_t *h)
{
  unsigned sum = 0;
  memset (h + 148, ' ', 8);
  for (int i = 0; i < 512; i++)
    sum += h[i];
  snprintf ((char *) h + 148, 8, "%06o", sum);
}

/* Offsets of ustar headers in an uncompressed seed. */
static size_t
find_headers (const buf *b, size_t *offs, size_t max)
{
  size_t n = 0;
  for (size_t o = 0; o + 512 <= b->n && n < max; o += 512)
    if (memcmp (b->p + o + 257, "ustar", 5) == 0)
      offs[n++] = o;
  return n;
}

static void
mutate_header (buf *b)
{
  static const char *const names[] = { "../x", "/abs", "a/../../b", ".wh.x", ".wh..wh..opq",  ".",      "a/./b//c",
                                       "",     "..",   ".wh..",     "bin",   "bin/sh/inside", "d/kept", "a/evil" };
  static const char types[] = "0123456789LKxgVSDM\0";
  size_t offs[64];
  size_t n = find_headers (b, offs, ARRAY_SIZE (offs));
  if (n == 0)
    return;
  uint8_t *h = b->p + offs[rng () % n];
  switch (rng () % 5)
    {
    case 0:
      memset (h, 0, 100);
      snprintf ((char *) h, 100, "%s", names[rng () % ARRAY_SIZE (names)]);
      break;
    case 1:
      h[156] = (uint8_t) types[rng () % (sizeof types - 1)];
      break;
    case 2:
      memset (h + 157, 0, 100);
      snprintf ((char *) h + 157, 100, "%s", names[rng () % ARRAY_SIZE (names)]);
      break;
    case 3:
      snprintf ((char *) h + 124, 12, "%011llo", (unsigned long long) (rng () % 5000));
      break;
    default:
      snprintf ((char *) h + 100, 8, "%07o", (unsigned) (rng () % 010000));
      break;
    }
  fix_checksum (h);
}

static void
mutate_bytes (buf *b)
{
  static const uint8_t interesting[] = { 0, 0xff, '/', '.', '0', '7', 'L', '5', '2', 0x80 };
  int k = 1 + (int) (rng () % 8);
  for (int i = 0; i < k && b->n; i++)
    {
      size_t o = rng () % b->n;
      if (rng () & 1)
        b->p[o] ^= (uint8_t) (1u << (rng () % 8));
      else
        b->p[o] = interesting[rng () % sizeof interesting];
    }
}

static buf
mutate (const buf *seeds, size_t nseeds, int i, size_t *ret_seed)
{
  size_t s = (size_t) i % nseeds;
  buf b = { xmalloc (seeds[s].n + 1024), seeds[s].n };
  memcpy (b.p, seeds[s].p, b.n);
  rng_state = 0x9e3779b97f4a7c15ULL * (uint64_t) (i + 1);
  int rounds = 1 + (int) (rng () % 3);
  for (int r = 0; r < rounds; r++)
    switch (rng () % 4)
      {
      case 0:
      case 1:
        mutate_header (&b);
        break;
      case 2:
        mutate_bytes (&b);
        break;
      default:
        b.n = b.n ? rng () % b.n : 0;
        break;
      }
  *ret_seed = s;
  return b;
}

static int
write_corpus (const char *dir, const buf *seeds, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      _cleanup_free_ char *p = xasprintf ("%s/seed-%02zu", dir, i);
      if (write_file_atomic (p, seeds[i].p, seeds[i].n, 0644, NULL) < 0)
        return 1;
    }
  return 0;
}

int
main (int argc, char **argv)
{
  if (geteuid () != 0)
    tap_skip_all ("needs root (owners, devices)");
  setup ();
  buf seeds[32];
  size_t nseeds = make_seeds (seeds);
  if (argc == 3 && strcmp (argv[1], "--write-corpus") == 0)
    {
      int r = write_corpus (argv[2], seeds, nseeds);
      rm_rf (base, NULL);
      return r;
    }

  int failed = 0, imported = 0;
  printf ("1..%d\n", N_INPUTS);
  for (int i = 0; i < N_INPUTS; i++)
    {
      size_t s = (size_t) i;
      buf b = i < (int) nseeds ? (buf){ seeds[i].p, seeds[i].n } : mutate (seeds, nseeds, i, &s);
      bool ok;
      const char *broken = run_one (b.p, b.n, &ok);
      imported += ok;
      failed += broken != NULL;
      printf ("%s %d - input %d (seed %zu): %s%s%s\n", broken ? "not ok" : "ok", i + 1, i, s,
              ok ? "imported" : "refused", broken ? ": " : "", broken ? broken : "");
      if (i >= (int) nseeds)
        free (b.p);
    }
  printf ("# %d of %d inputs imported\n", imported, N_INPUTS);
  for (size_t i = 0; i < nseeds; i++)
    free (seeds[i].p);
  if (!failed)
    rm_rf (base, NULL);
  return failed ? 1 : 0;
}
#endif
