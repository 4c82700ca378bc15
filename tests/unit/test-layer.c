/* Unit tests for sha256 and layers: imports of good tarballs in every
 * compression, refusals of hostile ones with nothing partial left in the store
 * and nothing written outside it, OCI whiteouts, the busybox layer, removal and
 * two imports racing. Runs as root (owners, devices, trusted xattrs). */
#include "config.h"
#include "layer.h"
#include "sha256.h"
#include "util.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include "tap.h"

/* One entry of a test tarball. Types: f file, d dir, l symlink, h hardlink,
 * c/b char/block device, p FIFO. */
typedef struct tentry {
  const char *path;
  char type;
  const char *data; /* file content, symlink or hardlink target */
  mode_t perm;
  uid_t uid;
  const char *xattr; /* "name=value", optional */
} tentry;

static char *base, *root, *indir, *outside;

/* ---- helpers ---- */

static void
add_entry (struct archive *a, const tentry *t)
{
  struct archive_entry *e = archive_entry_new ();
  static const struct {
    char c;
    mode_t type;
  } types[] = { { 'f', AE_IFREG }, { 'd', AE_IFDIR }, { 'l', AE_IFLNK }, { 'h', AE_IFREG },
                { 'c', AE_IFCHR }, { 'b', AE_IFBLK }, { 'p', AE_IFIFO } };
  for (size_t i = 0; i < ARRAY_SIZE (types); i++)
    if (types[i].c == t->type)
      archive_entry_set_filetype (e, types[i].type);
  archive_entry_set_pathname (e, t->path);
  archive_entry_set_perm (e, t->perm ? t->perm : (t->type == 'd' ? 0755 : 0644));
  archive_entry_set_uid (e, t->uid);
  archive_entry_set_gid (e, t->uid);
  archive_entry_set_mtime (e, 1700000000, 0);
  if (t->type == 'l')
    archive_entry_set_symlink (e, t->data);
  if (t->type == 'h')
    archive_entry_set_hardlink (e, t->data);
  if (t->type == 'c' || t->type == 'b')
    archive_entry_set_rdev (e, makedev (1, 3));
  if (t->xattr)
    {
      const char *eq = strchr (t->xattr, '=');
      _cleanup_free_ char *name = xstrndup (t->xattr, (size_t) (eq - t->xattr));
      archive_entry_xattr_add_entry (e, name, eq + 1, strlen (eq + 1));
    }
  size_t len = t->type == 'f' && t->data ? strlen (t->data) : 0;
  archive_entry_set_size (e, (la_int64_t) len);
  if (archive_write_header (a, e) != ARCHIVE_OK)
    fprintf (stderr, "# write header %s: %s\n", t->path, archive_error_string (a));
  if (len)
    archive_write_data (a, t->data, len);
  archive_entry_free (e);
}

/* Writes ENTRIES to base/in/NAME with FILTER: 0, 'g'zip, 'x'z, 'z'std. */
static char *
make_tar (const char *name, char filter, const tentry *v, size_t n)
{
  char *path = xasprintf ("%s/%s", indir, name);
  struct archive *a = archive_write_new ();
  archive_write_set_format_pax_restricted (a);
  if (filter == 'g')
    archive_write_add_filter_gzip (a);
  else if (filter == 'x')
    archive_write_add_filter_xz (a);
  else if (filter == 'z')
    archive_write_add_filter_zstd (a);
  if (archive_write_open_filename (a, path) != ARCHIVE_OK)
    fprintf (stderr, "# open %s: %s\n", path, archive_error_string (a));
  for (size_t i = 0; i < n; i++)
    add_entry (a, &v[i]);
  archive_write_close (a);
  archive_write_free (a);
  return path;
}

static int
count_entries (const char *dir)
{
  DIR *d = opendir (dir);
  int n = 0;
  if (d == NULL)
    return -1;
  for (struct dirent *de; (de = readdir (d));)
    n += strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0;
  closedir (d);
  return n;
}

static int
count_layers (void)
{
  _cleanup_free_ char *p = xasprintf ("%s/layers/sha256", root);
  int n = count_entries (p);
  return n < 0 ? 0 : n;
}

static bool
tmp_is_empty (void)
{
  _cleanup_free_ char *p = xasprintf ("%s/layers/tmp", root);
  return count_entries (p) <= 0;
}

static char *
in_layer (const char *digest, const char *rel)
{
  _cleanup_free_ char *rootfs = sbx_layer_rootfs (root, digest);
  return xasprintf ("%s/%s", rootfs, rel);
}

static char *
file_hex (const char *path)
{
  _cleanup_free_ char *data = NULL;
  size_t len = 0;
  char hex[65] = "";
  if (read_file (path, 1 << 28, &data, &len, NULL) == 0)
    sha256_hex (data, len, hex);
  return xasprintf ("sha256:%s", hex);
}

/* Imports a tar of the N entries V, made as NAME: the layer's digest (and
 * its size in *RET_SIZE), or NULL, with a failed check saying WHAT, when the
 * import failed. */
static char *
import_entries (const char *name, const tentry *v, size_t n, const char *what, uint64_t *ret_size)
{
  _cleanup_free_ char *p = make_tar (name, 0, v, n);
  _cleanup_error_ sbx_error *err = NULL;
  char *digest = NULL;
  uint64_t size = 0;
  int r = sbx_layer_import_tar (root, p, &digest, &size, &err);
  if (ret_size)
    *ret_size = size;
  return tap_ok (r == 0, "%s (%s)", what, err ? err->msg : "ok") ? digest : NULL;
}

/* Imports PATH, expecting a refusal: INVALID_ARGUMENT whose message contains
 * WANT, no new layer, no temp dir left, nothing outside ROOT. */
static void
expect_refused (const char *what, const char *path, const char *want)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_free_ char *digest = NULL;
  uint64_t size = 0;
  int before = count_layers ();
  int r = sbx_layer_import_tar (root, path, &digest, &size, &err);
  bool code_ok = r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT;
  bool msg_ok = err && err->msg && strstr (err->msg, want);
  tap_ok (code_ok && msg_ok, "%s: refused (%s)", what, err && err->msg ? err->msg : "no error");
  tap_ok (count_layers () == before && tmp_is_empty () && digest == NULL, "%s: no partial layer, no temp dir left",
          what);
  tap_ok (count_entries (outside) == 0 && count_entries (base) == 3, "%s: nothing written outside ROOT", what);
}

/* ---- sha256 ---- */

static void
test_sha256 (void)
{
  static const struct {
    const char *in, *hex;
  } v[] = {
    { "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
    { "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
    { "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
    { "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrst"
      "u",
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
  };
  for (int generic = 0; generic < 2; generic++)
    {
      sha256_force_generic (generic);
      for (size_t i = 0; i < ARRAY_SIZE (v); i++)
        {
          char hex[65];
          sha256_hex (v[i].in, strlen (v[i].in), hex);
          tap_ok (strcmp (hex, v[i].hex) == 0, "sha256 vector %zu (%s)", i, generic ? "generic" : "default");
        }
      /* A million 'a', fed in odd-sized pieces across block boundaries. */
      char chunk[997];
      memset (chunk, 'a', sizeof chunk);
      sha256_ctx c;
      sha256_init (&c);
      size_t left = 1000000;
      while (left)
        {
          size_t n = left < sizeof chunk ? left : sizeof chunk;
          sha256_update (&c, chunk, n);
          left -= n;
        }
      char hex[65];
      sha256_ctx_hex_final (&c, hex);
      tap_ok (strcmp (hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
              "sha256 of a million 'a', streamed (%s)", generic ? "generic" : "default");
    }
  sha256_force_generic (false);
}

/* ---- good imports ---- */

static const tentry good[] = {
  { "./", 'd', NULL, 0755, 0, NULL },
  { "bin/", 'd', NULL, 0755, 0, NULL },
  { "bin/tool", 'f', "#!/bin/sh\necho tool\n", 04755, 0, NULL },
  { "etc/", 'd', NULL, 0755, 0, NULL },
  { "etc/hello", 'f', "hello\n", 0640, 1234, "user.note=kept" },
  { "etc/hello2", 'h', "etc/hello", 0640, 1234, NULL },
  { "etc/abs-link", 'l', "/etc/hello", 0777, 0, NULL },
  { "etc/xattrs", 'f', "x", 0644, 0, "trusted.overlay.redirect=/elsewhere" },
  { "home/user/", 'd', NULL, 0700, 1000, NULL },
};

static char *
test_good_import (void)
{
  _cleanup_free_ char *plain = make_tar ("good.tar", 0, good, ARRAY_SIZE (good));
  _cleanup_error_ sbx_error *err = NULL;
  char *digest = NULL;
  uint64_t size = 0;
  int r = sbx_layer_import_tar (root, plain, &digest, &size, &err);
  if (!tap_ok (r == 0, "import plain tar (%s)", err ? err->msg : "ok"))
    return NULL;
  _cleanup_free_ char *want = file_hex (plain);
  tap_ok (strcmp (digest, want) == 0, "digest is the sha256 of the uncompressed tar");
  tap_ok (sbx_layer_exists (root, digest) && count_layers () == 1 && tmp_is_empty (), "one layer, no temp dir");
  tap_ok (size == strlen ("#!/bin/sh\necho tool\n") + strlen ("hello\n") + 1, "size is the sum of file sizes (%llu)",
          (unsigned long long) size);

  _cleanup_free_ char *dir = sbx_layer_dir (root, digest);
  _cleanup_free_ char *tar = xasprintf ("%s/layer.tar", dir);
  _cleanup_free_ char *szfile = xasprintf ("%s/size", dir);
  _cleanup_free_ char *sztext = NULL;
  tap_ok (access (tar, F_OK) < 0 && errno == ENOENT, "the layer keeps no copy of the stream");
  tap_ok (read_file (szfile, 64, &sztext, NULL, NULL) == 0 && strtoull (sztext, NULL, 10) == size,
          "its size file says %llu", (unsigned long long) size);

  _cleanup_free_ char *hello = in_layer (digest, "etc/hello");
  _cleanup_free_ char *hello2 = in_layer (digest, "etc/hello2");
  _cleanup_free_ char *tool = in_layer (digest, "bin/tool");
  _cleanup_free_ char *link = in_layer (digest, "etc/abs-link");
  _cleanup_free_ char *xf = in_layer (digest, "etc/xattrs");
  struct stat st, st2;
  tap_ok (stat (hello, &st) == 0 && st.st_uid == 1234 && st.st_gid == 1234 && (st.st_mode & 07777) == 0640,
          "owner and mode restored");
  tap_ok (stat (tool, &st) == 0 && (st.st_mode & 07777) == 04755, "setuid bit kept");
  tap_ok (stat (hello2, &st2) == 0 && stat (hello, &st) == 0 && st.st_ino == st2.st_ino, "hardlink restored");
  char target[64] = "";
  tap_ok (readlink (link, target, sizeof target - 1) > 0 && strcmp (target, "/etc/hello") == 0,
          "absolute symlink kept as is");
  char val[32] = "";
  tap_ok (getxattr (hello, "user.note", val, sizeof val) == 4 && memcmp (val, "kept", 4) == 0, "user xattr kept");
  tap_ok (getxattr (xf, "trusted.overlay.redirect", val, sizeof val) < 0 && errno == ENODATA,
          "trusted.overlay xattr from the tar dropped");

  static const struct {
    char filter;
    const char *name;
  } comp[] = { { 'g', "good.tar.gz" }, { 'x', "good.tar.xz" }, { 'z', "good.tar.zst" } };
  for (size_t i = 0; i < ARRAY_SIZE (comp); i++)
    {
      _cleanup_free_ char *p = make_tar (comp[i].name, comp[i].filter, good, ARRAY_SIZE (good));
      _cleanup_free_ char *d = NULL;
      _cleanup_error_ sbx_error *e = NULL;
      uint64_t sz = 0;
      r = sbx_layer_import_tar (root, p, &d, &sz, &e);
      tap_ok (r == 0 && strcmp (d, digest) == 0 && sz == size && count_layers () == 1 && tmp_is_empty (),
              "%s: same digest and size as the plain tar, layer reused (%s)", comp[i].name, e ? e->msg : "ok");
    }
  _cleanup_free_ char *again = NULL;
  r = sbx_layer_import_tar (root, plain, &again, &size, NULL);
  tap_ok (r == 0 && strcmp (again, digest) == 0 && count_layers () == 1, "re-import is idempotent");
  return digest;
}

/* ---- refusals ---- */

static void
test_refusals (void)
{
  _cleanup_free_ char *abs_target = xstrdup (outside);
  _cleanup_free_ char *rel_target = xasprintf ("../../../../../../../../../../..%s", outside);
  _cleanup_free_ char *abs_file = xasprintf ("%s/evil", outside);
  const tentry dotdot[] = { { "ok", 'f', "x" }, { "../evil", 'f', "x" } };
  const tentry dotdot_mid[] = { { "a/../../evil", 'f', "x" } };
  const tentry absolute[] = { { abs_file, 'f', "x" } };
  const tentry through_abs[] = { { "a", 'l', abs_target }, { "a/evil", 'f', "x" } };
  const tentry through_rel[] = { { "b", 'l', rel_target }, { "b/evil", 'f', "x" } };
  const tentry dir_through[] = { { "c", 'l', abs_target }, { "c/sub/", 'd' } };
  const tentry deep_through[] = { { "d/", 'd' }, { "d/up", 'l', ".." }, { "d/up/d/evil", 'f', "x" } };
  const tentry hl_through[] = { { "e/", 'd' }, { "e/f", 'f', "x" }, { "s", 'l', "e" }, { "h", 'h', "s/f" } };
  const tentry hl_passwd[] = { { "pw", 'h', "/etc/passwd" } };
  const tentry hl_dotdot[] = { { "x", 'h', "../x" } };
  const tentry chr[] = { { "dev/null", 'c' } };
  const tentry blk[] = { { "dev/sda", 'b' } };
  const tentry fifo[] = { { "fifo", 'p' } };
  const tentry top_file[] = { { ".", 'f', "x" } };
  const tentry bad_wh[] = { { "d/.wh.", 'f', "" } };
  const struct {
    const char *name;
    const tentry *v;
    size_t n;
    const char *want;
  } cases[] = {
    { "dotdot", dotdot, ARRAY_SIZE (dotdot), "`..` component" },
    { "dotdot-mid", dotdot_mid, ARRAY_SIZE (dotdot_mid), "`..` component" },
    { "absolute", absolute, ARRAY_SIZE (absolute), "absolute" },
    { "write-through-abs-symlink", through_abs, ARRAY_SIZE (through_abs), "a/evil" },
    { "write-through-rel-symlink", through_rel, ARRAY_SIZE (through_rel), "b/evil" },
    { "dir-through-symlink", dir_through, ARRAY_SIZE (dir_through), "c/sub" },
    { "deep-through-symlink", deep_through, ARRAY_SIZE (deep_through), "path goes through a symlink" },
    { "hardlink-through-symlink", hl_through, ARRAY_SIZE (hl_through), "hardlink target goes through a symlink" },
    { "hardlink-etc-passwd", hl_passwd, ARRAY_SIZE (hl_passwd), "hardlink target is absolute" },
    { "hardlink-dotdot", hl_dotdot, ARRAY_SIZE (hl_dotdot), "hardlink target has a `..`" },
    { "char-device", chr, ARRAY_SIZE (chr), "character device" },
    { "block-device", blk, ARRAY_SIZE (blk), "block device" },
    { "fifo", fifo, ARRAY_SIZE (fifo), "FIFO" },
    { "top-is-file", top_file, ARRAY_SIZE (top_file), "top of the layer" },
    { "bad-whiteout", bad_wh, ARRAY_SIZE (bad_wh), "whiteout" },
  };
  struct stat pw0, pw1;
  stat ("/etc/passwd", &pw0);
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      _cleanup_free_ char *name = xasprintf ("%s.tar", cases[i].name);
      _cleanup_free_ char *p = make_tar (name, 0, cases[i].v, cases[i].n);
      expect_refused (cases[i].name, p, cases[i].want);
      unlink (p);
    }
  tap_ok (stat ("/etc/passwd", &pw1) == 0 && pw1.st_nlink == pw0.st_nlink, "/etc/passwd gained no link");
}

/* A file, then a directory, where the archive put a symlink: each replaces
 * the symlink and nothing is written through it. */
static void
test_replace_symlink (void)
{
  const tentry v[] = { { "etc/", 'd' },           { "etc/hello", 'f', "hello\n" },
                       { "s", 'l', "etc/hello" }, { "s", 'f', "new\n" },
                       { "t", 'l', "etc" },       { "t/", 'd' } };
  _cleanup_free_ char *digest = import_entries ("replace-symlink.tar", v, ARRAY_SIZE (v),
                                                "a symlink replaced by a file and by a directory", NULL);
  if (digest == NULL)
    return;
  _cleanup_free_ char *s = in_layer (digest, "s"), *t = in_layer (digest, "t"), *hello = in_layer (digest, "etc/hello");
  _cleanup_free_ char *got = NULL, *was = NULL;
  struct stat st;
  tap_ok (lstat (s, &st) == 0 && S_ISREG (st.st_mode) && read_file (s, 64, &got, NULL, NULL) == 0
              && strcmp (got, "new\n") == 0 && read_file (hello, 64, &was, NULL, NULL) == 0
              && strcmp (was, "hello\n") == 0,
          "the file replaced the symlink, its target is untouched");
  tap_ok (lstat (t, &st) == 0 && S_ISDIR (st.st_mode), "the directory replaced the symlink");
  sbx_layer_remove (root, digest, NULL);
}

static void
test_corrupt (void)
{
  char big[4096];
  memset (big, 'z', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  const tentry v[] = { { "d/", 'd' }, { "d/f", 'f', big }, { "d/g", 'f', big } };

  /* Cut in the middle of d/g's data. */
  _cleanup_free_ char *mid = make_tar ("trunc-mid.tar", 0, v, ARRAY_SIZE (v));
  tap_ok (truncate (mid, 512 + 512 + 4096 + 512 + 1000) == 0, "make a tar cut in a file's data");
  expect_refused ("truncated-in-data", mid, "runcated");
  unlink (mid);

  /* Cut exactly after d/f: every entry whole, the end-of-archive blocks gone. */
  _cleanup_free_ char *edge = make_tar ("trunc-edge.tar", 0, v, 2);
  tap_ok (truncate (edge, 512 + 512 + 4096) == 0, "make a tar cut at an entry boundary");
  expect_refused ("truncated-at-entry-boundary", edge, "end-of-archive");
  unlink (edge);

  _cleanup_free_ char *gz = make_tar ("trunc.tar.gz", 'g', v, ARRAY_SIZE (v));
  struct stat st;
  tap_ok (stat (gz, &st) == 0 && truncate (gz, st.st_size / 2) == 0, "make a truncated .tar.gz");
  expect_refused ("truncated-gzip", gz, "");
  unlink (gz);

  _cleanup_free_ char *garbage = xasprintf ("%s/garbage", indir);
  _cleanup_free_ char *noise = random_hex (32);
  _cleanup_free_ char *junk = xmalloc (65536);
  for (size_t i = 0; i < 65536; i++)
    junk[i] = noise[i % 64] ^ (char) (i * 131);
  write_file_atomic (garbage, junk, 65536, 0644, NULL);
  expect_refused ("garbage", garbage, "");
  write_file_atomic (garbage, "", 0, 0644, NULL);
  expect_refused ("empty-file", garbage, "empty");
  unlink (garbage);
}

/* ---- whiteouts ---- */

static void
test_whiteouts (void)
{
  const tentry v[] = {
    { "d/", 'd', NULL, 0750 },       { "d/.wh..wh..opq", 'f', "" }, { "d/kept", 'f', "k" },
    { "x/.wh.gone", 'f', "" },       { ".wh.top", 'f', "" },        { "y/.wh..wh.plnk", 'f', "" },
    { "e/f/.wh..wh..opq", 'f', "" },
  };
  uint64_t size;
  _cleanup_free_ char *digest = import_entries ("wh.tar", v, ARRAY_SIZE (v), "import a layer with whiteouts", &size);
  if (digest == NULL)
    return;
  _cleanup_free_ char *d = in_layer (digest, "d");
  _cleanup_free_ char *ef = in_layer (digest, "e/f");
  _cleanup_free_ char *gone = in_layer (digest, "x/gone");
  _cleanup_free_ char *top = in_layer (digest, "top");
  _cleanup_free_ char *whf = in_layer (digest, "x/.wh.gone");
  _cleanup_free_ char *opq = in_layer (digest, "d/.wh..wh..opq");
  _cleanup_free_ char *plnk = in_layer (digest, "y/.wh..wh.plnk");
  char val[8] = "";
  struct stat st;
  tap_ok (getxattr (d, "trusted.overlay.opaque", val, sizeof val) == 1 && val[0] == 'y' && stat (d, &st) == 0
              && (st.st_mode & 07777) == 0750,
          ".wh..wh..opq: directory opaque, its mode kept");
  tap_ok (getxattr (ef, "trusted.overlay.opaque", val, sizeof val) == 1, "opaque marker creates its directory");
  tap_ok (lstat (gone, &st) == 0 && S_ISCHR (st.st_mode) && st.st_rdev == makedev (0, 0),
          ".wh.gone: character device 0:0");
  tap_ok (lstat (top, &st) == 0 && S_ISCHR (st.st_mode) && st.st_rdev == 0, "whiteout at the top");
  tap_ok (!path_exists (whf) && !path_exists (opq) && !path_exists (plnk), "no .wh. file left in the rootfs");
  tap_ok (size == 1, "whiteouts are not counted in the size");
  sbx_layer_remove (root, digest, NULL);
}

/* ---- one pass: big streams, early refusals, the known layer ---- */

/* A tar at base/in/NAME: FIRST (a file "x") if not NULL, then NFILES files of
 * SIZE bytes of a pattern under big/, then a file of 3000 bytes, so that the
 * stream is much more than the helpers' sockets hold and no multiple of 4096. */
static char *
make_big_tar (const char *name, const char *first, size_t nfiles, size_t size)
{
  char *path = xasprintf ("%s/%s", indir, name);
  _cleanup_free_ char *data = xmalloc (size);
  for (size_t i = 0; i < size; i++)
    data[i] = (char) (i * 7 + i / 4099);
  struct archive *a = archive_write_new ();
  archive_write_set_format_pax_restricted (a);
  archive_write_open_filename (a, path);
  for (size_t i = 0; i <= nfiles + 1; i++)
    {
      _cleanup_free_ char *p = i == 0 ? xstrdup (first ? first : "big/") : xasprintf ("big/f%zu", i);
      size_t len = i == 0 ? (first ? 1 : 0) : i <= nfiles ? size : 3000;
      struct archive_entry *e = archive_entry_new ();
      archive_entry_set_pathname (e, p);
      archive_entry_set_filetype (e, i == 0 && first == NULL ? AE_IFDIR : AE_IFREG);
      archive_entry_set_perm (e, 0644);
      archive_entry_set_size (e, (la_int64_t) len);
      archive_write_header (a, e);
      archive_write_data (a, i == 0 ? "x" : data, len);
      archive_entry_free (e);
    }
  archive_write_close (a);
  archive_write_free (a);
  return path;
}

static void
test_big_stream (void)
{
  enum { N = 40, SIZE = 1 << 20 };
  _cleanup_free_ char *p = make_big_tar ("big.tar", NULL, N, SIZE);
  _cleanup_free_ char *digest = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  uint64_t size = 0;
  int before = count_layers ();
  int r = sbx_layer_import_tar (root, p, &digest, &size, &err);
  if (!tap_ok (r == 0, "import a %d MiB tar (%s)", N, err ? err->msg : "ok"))
    return;
  _cleanup_free_ char *want = file_hex (p);
  tap_ok (strcmp (digest, want) == 0, "big tar: the digest is the stream's");
  _cleanup_free_ char *f = in_layer (digest, "big/f7");
  _cleanup_free_ char *last = in_layer (digest, "big/f41");
  _cleanup_free_ char *got = NULL;
  size_t len = 0;
  bool same = read_file (f, 2 * SIZE, &got, &len, NULL) == 0 && len == SIZE;
  for (size_t i = 0; same && i < len; i++)
    same = got[i] == (char) (i * 7 + i / 4099);
  struct stat st;
  tap_ok (same && stat (last, &st) == 0 && st.st_size == 3000, "big tar: the files hold what the tar does");
  tap_ok (size == (uint64_t) N * SIZE + 3000 && count_layers () == before + 1 && tmp_is_empty (),
          "big tar: size %llu, one layer, no temp dir", (unsigned long long) size);
  sbx_layer_remove (root, digest, NULL);
}

/* The extraction refuses the first entry while the parent has most of the
 * stream still to send: staging still hashes all of it, the refusal comes
 * with the extraction's verdict, and nothing stays. */
static void
test_early_refusal (void)
{
  _cleanup_free_ char *p = make_big_tar ("early.tar", "../evil", 40, 1 << 20);
  _cleanup_free_ char *want = file_hex (p);
  _cleanup_close_ int fd = open (p, O_RDONLY | O_CLOEXEC);
  _cleanup_error_ sbx_error *err = NULL;
  sbx_layer_staged *s = NULL;
  int before = count_layers ();
  int r = sbx_layer_stage (root, fd, NULL, &s, &err);
  if (!tap_ok (r == 0, "a tar refused at its first entry still stages (%s)", err ? err->msg : "ok"))
    return;
  uint64_t blob_size = 0;
  struct stat st;
  tap_ok (strcmp (sbx_layer_staged_digest (s), want) == 0 && strcmp (sbx_layer_staged_blob (s, &blob_size), want) == 0
              && stat (p, &st) == 0 && blob_size == (uint64_t) st.st_size,
          "... with the digests of the whole stream");
  r = sbx_layer_staged_extract (root, s, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, "`..` component"),
          "... and the extraction's refusal (%s)", err ? err->msg : "none");
  sbx_layer_staged_free (s);
  tap_ok (count_layers () == before && tmp_is_empty () && count_entries (outside) == 0,
          "... leaving nothing, in the store or outside");
}

/* A plain tar is hashed once, as blob and as tar; a compressed one twice. */
static void
test_blob_digests (const char *digest)
{
  static const char *const names[] = { "good.tar", "good.tar.gz", "good.tar.zst" };
  if (digest == NULL)
    return;
  for (size_t i = 0; i < ARRAY_SIZE (names); i++)
    {
      _cleanup_free_ char *p = xasprintf ("%s/%s", indir, names[i]);
      _cleanup_free_ char *want = file_hex (p);
      _cleanup_close_ int fd = open (p, O_RDONLY | O_CLOEXEC);
      _cleanup_error_ sbx_error *err = NULL;
      sbx_layer_staged *s = NULL;
      struct stat st;
      uint64_t blob_size = 0;
      int r = sbx_layer_stage (root, fd, NULL, &s, &err);
      tap_ok (r == 0 && strcmp (sbx_layer_staged_digest (s), digest) == 0
                  && strcmp (sbx_layer_staged_blob (s, &blob_size), want) == 0 && stat (p, &st) == 0
                  && blob_size == (uint64_t) st.st_size,
              "%s: the tar's digest, and the blob's of its bytes as they are (%s)", names[i], err ? err->msg : "ok");
      sbx_layer_staged_free (s);
    }
}

/* KNOWN names a layer the store has: staging only hashes; an input that is
 * not that layer after all is not installed. */
static void
test_known_layer (const char *digest)
{
  if (digest == NULL)
    return;
  _cleanup_free_ char *same = xasprintf ("%s/good.tar", indir);
  _cleanup_free_ char *other = xasprintf ("%s/big.tar", indir);
  _cleanup_close_ int fd = open (same, O_RDONLY | O_CLOEXEC);
  _cleanup_close_ int fd2 = open (other, O_RDONLY | O_CLOEXEC);
  _cleanup_error_ sbx_error *err = NULL;
  sbx_layer_staged *s = NULL;
  uint64_t size = 0;
  int before = count_layers ();
  int r = sbx_layer_stage (root, fd, digest, &s, &err);
  r = r == 0 ? sbx_layer_staged_extract (root, s, &err) : r;
  r = r == 0 ? sbx_layer_staged_install (root, s, &size, &err) : r;
  tap_ok (r == 0 && strcmp (sbx_layer_staged_digest (s), digest) == 0 && size == 27 && count_layers () == before,
          "a layer the store has: hashed, reused, same size (%s)", err ? err->msg : "ok");
  sbx_layer_staged_free (s);
  s = NULL;
  r = sbx_layer_stage (root, fd2, digest, &s, &err);
  tap_ok (r == 0 && strcmp (sbx_layer_staged_digest (s), digest) != 0, "an input said to be that layer: hashed");
  r = sbx_layer_staged_extract (root, s, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_INTERNAL, "... and not extracted as it (%s)", err ? err->msg : "none");
  sbx_layer_staged_free (s);
  tap_ok (count_layers () == before && tmp_is_empty (), "... leaving nothing");
}

/* ---- busybox ---- */

static void
test_busybox (void)
{
  const char *bb = getenv ("SBX_BUSYBOX") ? getenv ("SBX_BUSYBOX") : "/bin/busybox";
  if (!path_exists (bb))
    {
      tap_skip ("busybox layer: no busybox at %s", bb);
      return;
    }
  _cleanup_free_ char *digest = NULL, *digest2 = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  uint64_t size = 0, size2 = 0;
  int r = sbx_layer_make_busybox (root, &digest, &size, &err);
  if (!tap_ok (r == 0, "busybox layer builds (%s)", err ? err->msg : "ok"))
    return;
  _cleanup_free_ char *bin = in_layer (digest, "bin/busybox");
  _cleanup_free_ char *sh = in_layer (digest, "bin/sh");
  _cleanup_free_ char *env = in_layer (digest, "usr/bin/env");
  _cleanup_free_ char *tmp = in_layer (digest, "tmp");
  _cleanup_free_ char *passwd = in_layer (digest, "etc/passwd");
  struct stat st, bst;
  char t[64] = "", t2[64] = "";
  tap_ok (lstat (bin, &st) == 0 && S_ISREG (st.st_mode) && (st.st_mode & 0777) == 0755 && stat (bb, &bst) == 0
              && st.st_size == bst.st_size && size >= (uint64_t) bst.st_size,
          "bin/busybox is the host's binary");
  tap_ok (readlink (sh, t, sizeof t - 1) > 0 && strcmp (t, "busybox") == 0, "bin/sh -> busybox");
  tap_ok (readlink (env, t2, sizeof t2 - 1) < 0 || strcmp (t2, "../../bin/busybox") == 0,
          "usr/bin/env -> ../../bin/busybox");
  tap_ok (stat (tmp, &st) == 0 && (st.st_mode & 07777) == 01777, "tmp is 1777");
  _cleanup_free_ char *pw = NULL;
  tap_ok (read_file (passwd, 4096, &pw, NULL, NULL) == 0 && strncmp (pw, "root:x:0:0:", 11) == 0,
          "etc/passwd has root");
  r = sbx_layer_make_busybox (root, &digest2, &size2, NULL);
  tap_ok (r == 0 && strcmp (digest, digest2) == 0 && size == size2, "busybox layer is deterministic");
  _cleanup_free_ char *ld = sbx_layer_dir (root, digest);
  _cleanup_free_ char *tar = xasprintf ("%s/layer.tar", ld);
  _cleanup_free_ char *tarhex = file_hex (tar);
  tap_ok (strcmp (tarhex, digest) == 0, "busybox digest is the sha256 of its layer.tar");
  sbx_layer_remove (root, digest, NULL);
}

/* ---- paths, removal, races ---- */

static void
test_paths_and_remove (char *digest)
{
  _cleanup_error_ sbx_error *err = NULL;
  tap_ok (sbx_layer_dir (root, "sha256:../../etc") == NULL && sbx_layer_rootfs (root, "abc") == NULL
              && !sbx_layer_exists (root, "sha256:zz"),
          "malformed digests are refused by the path helpers");
  tap_ok (sbx_layer_remove (root, "sha256:../x", &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT,
          "remove refuses a malformed digest");
  if (digest == NULL)
    return;
  sbx_error_freep (&err);
  int r = sbx_layer_remove (root, digest, &err);
  tap_ok (r == 0 && !sbx_layer_exists (root, digest) && tmp_is_empty (), "remove a layer");
  sbx_error_freep (&err);
  r = sbx_layer_remove (root, digest, &err);
  tap_ok (r < 0 && err->code == SBX_E_NOT_FOUND, "removing it again is NOT_FOUND");
}

static void
test_race (void)
{
  enum { N = 4 };
  const tentry v[] = { { "race/", 'd' }, { "race/f", 'f', "race" } };
  _cleanup_free_ char *p = make_tar ("race.tar", 'g', v, ARRAY_SIZE (v));
  _cleanup_free_ char *want = NULL;
  uint64_t size;
  pid_t pids[N];
  int before = count_layers ();
  for (int i = 0; i < N; i++)
    if ((pids[i] = fork ()) == 0)
      {
        char *d = NULL;
        _exit (sbx_layer_import_tar (root, p, &d, &size, NULL) == 0 ? 0 : 1);
      }
  int ok = 0;
  for (int i = 0; i < N; i++)
    {
      int status;
      waitpid (pids[i], &status, 0);
      ok += WIFEXITED (status) && WEXITSTATUS (status) == 0;
    }
  tap_ok (ok == N, "%d concurrent imports of one tar all succeed", N);
  tap_ok (count_layers () == before + 1 && tmp_is_empty (), "... with one layer and no temp dir left");
  tap_ok (sbx_layer_import_tar (root, p, &want, &size, NULL) == 0 && sbx_layer_remove (root, want, NULL) == 0,
          "... and it is usable");
}

/* The pending mark: this boot's is settled away; an earlier boot's makes the
 * layer refused, survives settling, and a new import of the same tar
 * replaces the layer. */
static void
test_pending (const char *digest)
{
  _cleanup_free_ char *dir = sbx_layer_dir (root, digest);
  _cleanup_free_ char *mark = xasprintf ("%s/pending", dir);
  _cleanup_free_ char *rootfs = sbx_layer_rootfs (root, digest);
  _cleanup_free_ char *boot = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  struct stat before, after;
  tap_ok (read_file ("/proc/sys/kernel/random/boot_id", 64, &boot, NULL, NULL) == 0, "boot id readable");
  boot[strcspn (boot, "\n")] = '\0';
  /* As an import leaves it until its settling process has run. */
  unlink (mark);
  tap_ok (write_file_atomic (mark, boot, strlen (boot), 0600, NULL) == 0 && sbx_layer_check (root, digest, NULL) == 0,
          "a layer pending in this boot is usable");
  tap_ok (sbx_layer_settle (root) >= 0 && access (mark, F_OK) < 0 && sbx_layer_check (root, digest, NULL) == 0,
          "settling syncs and drops this boot's mark");
  const char *old = "00000000-0000-4000-8000-000000000000";
  tap_ok (write_file_atomic (mark, old, strlen (old), 0600, NULL) == 0, "mark from an earlier boot");
  int r = sbx_layer_check (root, digest, &err);
  tap_ok (r < 0 && err->code == SBX_E_INTERNAL && strstr (err->msg, "may be incomplete"),
          "a layer pending from an earlier boot is refused: %s", err ? err->msg : "accepted");
  tap_ok (sbx_layer_settle (root) == 0 && access (mark, F_OK) == 0, "settling leaves an earlier boot's mark");
  /* The same tar again: the layer is made anew and replaces the suspect one. */
  _cleanup_free_ char *plain = xasprintf ("%s/good.tar", indir);
  _cleanup_free_ char *again = NULL;
  uint64_t size;
  stat (rootfs, &before);
  r = sbx_layer_import_tar (root, plain, &again, &size, NULL);
  tap_ok (r == 0 && strcmp (again, digest) == 0 && stat (rootfs, &after) == 0 && after.st_ino != before.st_ino
              && sbx_layer_check (root, digest, NULL) == 0 && tmp_is_empty (),
          "importing it again replaces the suspect layer");
  tap_ok (sbx_layer_settle (root) >= 0 && access (mark, F_OK) < 0, "and it settles");
}

int
main (void)
{
  if (geteuid () != 0)
    tap_skip_all ("needs root (owners, devices, trusted xattrs)");
  char tmpl[] = "/tmp/sbx-test-layer-XXXXXX";
  if (mkdtemp (tmpl) == NULL)
    return 1;
  base = tmpl;
  root = xasprintf ("%s/root", base);
  indir = xasprintf ("%s/in", base);
  outside = xasprintf ("%s/outside", base);
  mkdir (root, 0700);
  mkdir (indir, 0700);
  mkdir (outside, 0700);

  test_sha256 ();
  char *digest = test_good_import ();
  test_refusals ();
  test_replace_symlink ();
  test_corrupt ();
  test_whiteouts ();
  test_big_stream ();
  test_early_refusal ();
  test_blob_digests (digest);
  test_known_layer (digest);
  test_busybox ();
  test_pending (digest);
  test_paths_and_remove (digest);
  test_race ();
  free (digest);
  tap_plan (tap_n); /* at the end: the busybox tests count differently when skipped */

  rm_rf (base, NULL);
  free (root);
  free (indir);
  free (outside);
  return tap_done ();
}
