/* Unit tests for the OCI documents (index, manifest, config, docker's
 * manifest.json): good ones parse into what they say, malformed ones are
 * refused with INVALID_ARGUMENT; paths an archive may name; which manifest
 * an index yields for this host; and layers on their way out, whose overlay
 * whiteouts (if a layer.tar ever holds some) become OCI whiteouts. */
#include "config.h"
#include "layer.h"
#include "oci.h"
#include "util.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "tap.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define DIGEST "sha256:" D64

typedef int (*parse_fn) (const char *, size_t, void **, sbx_error **);

static bool
refused (int r, sbx_error *e)
{
  return r < 0 && e && e->code == SBX_E_INVALID_ARGUMENT && e->msg && e->msg[0];
}

static void
test_index (void)
{
  int r;
  static const struct {
    const char *doc;
    const char *why;
  } bad[] = {
    { "", "empty" },
    { "not json", "not JSON" },
    { "[]", "an array" },
    { "{}", "no manifests" },
    { "{\"manifests\": 3}", "manifests not an array" },
    { "{\"schemaVersion\": 1, \"manifests\": []}", "schemaVersion 1" },
    { "{\"mediaType\": \"application/vnd.oci.image.manifest.v1+json\", \"manifests\": []}", "a manifest's media type" },
    { "{\"manifests\": [{\"size\": 1}]}", "no digest" },
    { "{\"manifests\": [{\"digest\": \"" DIGEST "\"}]}", "no size" },
    { "{\"manifests\": [{\"digest\": \"" DIGEST "\", \"size\": -1}]}", "negative size" },
    { "{\"manifests\": [{\"digest\": \"" DIGEST "\", \"size\": \"1\"}]}", "size a string" },
    { "{\"manifests\": [{\"digest\": \"sha512:" D64 D64 "\", \"size\": 1}]}", "sha512" },
    { "{\"manifests\": [{\"digest\": \"sha256:" D64 "0\", \"size\": 1}]}", "65 hex digits" },
    { "{\"manifests\": [{\"digest\": \"sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\", "
      "\"size\": 1}]}",
      "uppercase hex" },
    { "{\"manifests\": [{\"digest\": \"sha256:../../../../etc/passwd\", \"size\": 1}]}", "a path as digest" },
    { "{\"manifests\": [{\"digest\": \"" DIGEST "\", \"size\": 1, \"platform\": \"linux\"}]}", "platform a string" },
    { "{\"manifests\": [{\"digest\": \"" DIGEST "\", \"size\": 1, \"platform\": {\"os\": 1}}]}", "os a number" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      sbx_error *e = NULL;
      sbx_oci_index *x = NULL;
      r = sbx_oci_parse_index (bad[i].doc, strlen (bad[i].doc), &x, &e);
      tap_ok (refused (r, e) && x == NULL, "index refused: %s", bad[i].why);
      sbx_error_free (e);
      sbx_oci_index_free (x);
    }

  /* Too deep, too many, too large. */
  size_t n = 100;
  char *deep = xmalloc (2 * n + 1);
  memset (deep, '[', n);
  memset (deep + n, ']', n);
  deep[2 * n] = '\0';
  sbx_error *e = NULL;
  sbx_oci_index *x = NULL;
  r = sbx_oci_parse_index (deep, 2 * n, &x, &e);
  tap_ok (refused (r, e), "index refused: nested 100 deep");
  sbx_error_free (e);
  free (deep);

  char *many = xstrdup ("{\"manifests\": [");
  for (int k = 0; k < 257; k++)
    {
      char *m = xasprintf ("%s%s{\"digest\": \"" DIGEST "\", \"size\": 1}", many, k ? "," : "");
      free (many);
      many = m;
    }
  char *m = xasprintf ("%s]}", many);
  free (many);
  e = NULL;
  r = sbx_oci_parse_index (m, strlen (m), &x, &e);
  tap_ok (refused (r, e), "index refused: 257 entries");
  sbx_error_free (e);
  free (m);

  size_t big = 5 * 1024 * 1024;
  char *large = xmalloc (big + 1);
  memset (large, ' ', big);
  large[0] = '{', large[big - 1] = '}', large[big] = '\0';
  e = NULL;
  r = sbx_oci_parse_index (large, big, &x, &e);
  tap_ok (refused (r, e), "index refused: 5 MiB");
  sbx_error_free (e);
  free (large);

  static const char good[] = "{\"schemaVersion\": 2, \"manifests\": ["
                             "{\"mediaType\": \"application/vnd.oci.image.manifest.v1+json\", \"digest\": \"" DIGEST
                             "\", \"size\": 42, \"platform\": {\"os\": \"linux\", \"architecture\": \"arm64\"}},"
                             "{\"digest\": \"" DIGEST "\", \"size\": 7}]}";
  e = NULL;
  r = sbx_oci_parse_index (good, strlen (good), &x, &e);
  tap_ok (r == 0 && x && x->n == 2 && x->manifests[0].size == 42 && strcmp (x->manifests[0].arch, "arm64") == 0
              && strcmp (x->manifests[0].os, "linux") == 0 && x->manifests[1].os == NULL
              && x->manifests[1].media_type == NULL && strcmp (x->manifests[1].digest, DIGEST) == 0,
          "index: a good one parses");
  sbx_error_free (e);
  sbx_oci_index_free (x);
}

#define CONFIG_DESC \
  "{\"mediaType\": \"application/vnd.oci.image.config.v1+json\", \"digest\": \"" DIGEST "\", \"size\": 1}"
#define LAYER_DESC(mt) "{\"mediaType\": \"" mt "\", \"digest\": \"" DIGEST "\", \"size\": 1}"

static void
test_manifest (void)
{
  int r;
  static const struct {
    const char *doc;
    const char *why;
  } bad[] = {
    { "{\"layers\": []}", "no config" },
    { "{\"config\": " CONFIG_DESC "}", "no layers" },
    { "{\"mediaType\": \"application/vnd.oci.image.index.v1+json\", \"config\": " CONFIG_DESC ", \"layers\": []}",
      "an index" },
    { "{\"config\": {\"mediaType\": \"application/vnd.example.sbom\", \"digest\": \"" DIGEST
      "\", \"size\": 1}, \"layers\": []}",
      "an artifact's config" },
    { "{\"config\": " CONFIG_DESC ", \"layers\": [" LAYER_DESC ("application/octet-stream") "]}", "a layer type" },
    { "{\"config\": " CONFIG_DESC ", \"layers\": [{\"digest\": \"sha256:x\", \"size\": 1}]}", "a layer digest" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      sbx_error *e = NULL;
      sbx_oci_manifest *m = NULL;
      r = sbx_oci_parse_manifest (bad[i].doc, strlen (bad[i].doc), &m, &e);
      tap_ok (refused (r, e) && m == NULL, "manifest refused: %s", bad[i].why);
      sbx_error_free (e);
      sbx_oci_manifest_free (m);
    }

  char *many = xstrdup ("{\"config\": " CONFIG_DESC ", \"layers\": [");
  for (int k = 0; k < 129; k++)
    {
      char *s = xasprintf ("%s%s" LAYER_DESC ("application/vnd.oci.image.layer.v1.tar"), many, k ? "," : "");
      free (many);
      many = s;
    }
  char *doc = xasprintf ("%s]}", many);
  free (many);
  sbx_error *e = NULL;
  sbx_oci_manifest *m = NULL;
  r = sbx_oci_parse_manifest (doc, strlen (doc), &m, &e);
  tap_ok (refused (r, e), "manifest refused: 129 layers");
  sbx_error_free (e);
  free (doc);

  static const char good[] =
      "{\"schemaVersion\": 2, \"config\": " CONFIG_DESC
      ", \"layers\": [" LAYER_DESC ("application/vnd.oci.image.layer.v1.tar+gzip") "," LAYER_DESC (
          "application/vnd.oci.image.layer.v1.tar+zstd") "," LAYER_DESC ("application/"
                                                                         "vnd.docker.image.rootfs.diff.tar.gzip") "]}";
  e = NULL;
  r = sbx_oci_parse_manifest (good, strlen (good), &m, &e);
  tap_ok (r == 0 && m && m->n_layers == 3 && strcmp (m->config.digest, DIGEST) == 0, "manifest: a good one parses");
  sbx_error_free (e);
  sbx_oci_manifest_free (m);
}

static void
test_config (void)
{
  static const struct {
    const char *doc;
    const char *why;
  } bad[] = {
    { "[]", "an array" },
    { "{\"config\": []}", "config an array" },
    { "{\"config\": {\"Env\": [\"NOEQUALS\"]}}", "an Env entry without =" },
    { "{\"config\": {\"Env\": [\"1X=y\"]}}", "an Env key starting with a digit" },
    { "{\"config\": {\"Env\": [\"=y\"]}}", "an empty Env key" },
    { "{\"config\": {\"Env\": \"A=b\"}}", "Env a string" },
    { "{\"config\": {\"Cmd\": [1]}}", "Cmd of numbers" },
    { "{\"config\": {\"WorkingDir\": \"relative\"}}", "a relative WorkingDir" },
    { "{\"config\": {\"User\": \"root\\nx\"}}", "a User with a newline" },
    { "{\"rootfs\": {\"type\": \"other\", \"diff_ids\": []}}", "a rootfs type" },
    { "{\"rootfs\": {\"diff_ids\": [\"md5:abc\"]}}", "a diff_id" },
    { "{\"os\": 3}", "os a number" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      sbx_error *e = NULL;
      sbx_oci_config *c = NULL;
      int r = sbx_oci_parse_config (bad[i].doc, strlen (bad[i].doc), &c, &e);
      tap_ok (refused (r, e) && c == NULL, "config refused: %s", bad[i].why);
      sbx_error_free (e);
      sbx_oci_config_free (c);
    }

  static const char good[] = "{\"architecture\": \"amd64\", \"os\": \"linux\", \"config\": {\"Env\": [\"A=1\", "
                             "\"B=x=y\"], \"Entrypoint\": [\"/bin/sh\", \"-c\"], \"Cmd\": [\"echo hi\"], "
                             "\"WorkingDir\": \"/w\", \"User\": \"1000:1000\"}, \"rootfs\": {\"type\": \"layers\", "
                             "\"diff_ids\": [\"" DIGEST "\"]}, \"history\": [{\"created_by\": \"x\"}]}";
  sbx_error *e = NULL;
  sbx_oci_config *c = NULL;
  int r = sbx_oci_parse_config (good, strlen (good), &c, &e);
  tap_ok (r == 0 && c && strcmp (c->arch, "amd64") == 0 && strv_len (c->env) == 2 && strv_len (c->cmd) == 3
              && strcmp (c->cmd[0], "/bin/sh") == 0 && strcmp (c->cmd[2], "echo hi") == 0
              && strcmp (c->workdir, "/w") == 0 && strcmp (c->user, "1000:1000") == 0 && strv_len (c->diff_ids) == 1,
          "config: a good one parses, Entrypoint then Cmd");
  sbx_error_free (e);
  sbx_oci_config_free (c);

  e = NULL;
  c = NULL;
  r = sbx_oci_parse_config ("{\"config\": null}", 16, &c, &e);
  tap_ok (r == 0 && c && c->env == NULL && c->workdir == NULL && c->user == NULL && c->diff_ids == NULL,
          "config: an empty one parses");
  sbx_error_free (e);
  sbx_oci_config_free (c);
}

static void
test_docker (void)
{
  static const struct {
    const char *doc;
    const char *why;
  } bad[] = {
    { "{}", "an object" },
    { "[]", "no image" },
    { "[{\"Config\": \"c.json\", \"Layers\": []}, {\"Config\": \"d.json\", \"Layers\": []}]", "two images" },
    { "[{\"Layers\": []}]", "no Config" },
    { "[{\"Config\": \"c.json\"}]", "no Layers" },
    { "[{\"Config\": \"../c.json\", \"Layers\": []}]", "Config climbing out" },
    { "[{\"Config\": \"/etc/passwd\", \"Layers\": []}]", "Config absolute" },
    { "[{\"Config\": \"c.json\", \"Layers\": [\"a/../../b.tar\"]}]", "a layer climbing out" },
    { "[{\"Config\": \"c.json\", \"Layers\": [\"a//b.tar\"]}]", "a layer with an empty component" },
    { "[{\"Config\": \"c.json\", \"Layers\": [7]}]", "a layer a number" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      sbx_error *e = NULL;
      sbx_docker_manifest *d = NULL;
      int r = sbx_docker_parse_manifest (bad[i].doc, strlen (bad[i].doc), &d, &e);
      tap_ok (refused (r, e) && d == NULL, "docker manifest refused: %s", bad[i].why);
      sbx_error_free (e);
      sbx_docker_manifest_free (d);
    }
  static const char good[] = "[{\"Config\": \"" D64 ".json\", \"RepoTags\": [\"a:b\"], \"Layers\": [\"" D64
                             "/layer.tar\", \"blobs/sha256/" D64 "\"]}]";
  sbx_error *e = NULL;
  sbx_docker_manifest *d = NULL;
  int r = sbx_docker_parse_manifest (good, strlen (good), &d, &e);
  tap_ok (r == 0 && d && strcmp (d->config, D64 ".json") == 0 && strv_len (d->layers) == 2,
          "docker manifest: a good one parses");
  sbx_error_free (e);
  sbx_docker_manifest_free (d);
}

static void
test_paths (void)
{
  static const char *const good[] = { "a", "a/b.tar", ("blobs/sha256/" D64), "x.y/z..w", ".hidden" };
  static const char *const bad[] = { "",     "/a",  "..",  "../a", "a/..", "a/../b",
                                     "a//b", "./a", "a/.", "a/",   "a\nb", "a\\b" };
  for (size_t i = 0; i < ARRAY_SIZE (good); i++)
    tap_ok (sbx_oci_path_ok (good[i]), "path ok: %s", good[i]);
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    tap_ok (!sbx_oci_path_ok (bad[i]), "path refused: #%zu", i);
  char *longp = xmalloc (1100);
  memset (longp, 'a', 1099);
  longp[1099] = '\0';
  tap_ok (!sbx_oci_path_ok (longp), "path refused: 1099 bytes");
  free (longp);
  tap_ok (!sbx_oci_path_ok ("a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a"), "path refused: 17 deep");
}

static void
test_pick (void)
{
  int r;
  sbx_oci_desc v[3] = {
    { .digest = (char *) DIGEST, .os = (char *) "linux", .arch = (char *) "arm64" },
    { .digest = (char *) DIGEST, .os = (char *) "linux", .arch = (char *) "amd64" },
    { .digest = (char *) DIGEST, .os = (char *) "windows", .arch = (char *) "amd64" },
  };
  size_t i = 99;
  sbx_error *e = NULL;
  tap_ok (sbx_oci_pick (v, 3, "amd64", &i, &e) == 0 && i == 1, "pick: linux/amd64 among three");
  sbx_error_free (e);
  e = NULL;
  r = sbx_oci_pick (v, 1, "amd64", &i, &e);
  tap_ok (refused (r, e) && strstr (e->msg, "linux/arm64"), "pick: none for amd64, the error lists what there is");
  sbx_error_free (e);
  e = NULL;
  sbx_oci_desc two[2] = { v[1], v[1] };
  r = sbx_oci_pick (two, 2, "amd64", &i, &e);
  tap_ok (refused (r, e), "pick: two for amd64 refused");
  sbx_error_free (e);
  sbx_oci_desc bare[2] = { { .digest = (char *) DIGEST }, { .digest = (char *) DIGEST } };
  e = NULL;
  tap_ok (sbx_oci_pick (bare, 1, "amd64", &i, &e) == 0 && i == 0, "pick: the only one without a platform");
  sbx_error_free (e);
  e = NULL;
  r = sbx_oci_pick (bare, 2, "amd64", &i, &e);
  tap_ok (refused (r, e), "pick: two without a platform refused");
  sbx_error_free (e);
  e = NULL;
  r = sbx_oci_pick (NULL, 0, "amd64", &i, &e);
  tap_ok (refused (r, e), "pick: an empty index refused");
  sbx_error_free (e);
}

/* ---- layers on their way out ---- */

static void
add_entry (struct archive *a, const char *path, mode_t type, const char *data, bool opaque)
{
  struct archive_entry *e = archive_entry_new ();
  archive_entry_set_pathname (e, path);
  archive_entry_set_filetype (e, type);
  archive_entry_set_perm (e, type == AE_IFDIR ? 0755 : 0644);
  archive_entry_set_mtime (e, 1700000000, 0);
  if (type == AE_IFCHR)
    archive_entry_set_rdev (e, makedev (0, 0));
  if (opaque)
    archive_entry_xattr_add_entry (e, "trusted.overlay.opaque", "y", 1);
  archive_entry_set_size (e, data ? (la_int64_t) strlen (data) : 0);
  archive_write_header (a, e);
  if (data)
    archive_write_data (a, data, strlen (data));
  archive_entry_free (e);
}

/* A layer as an older sbx made it: ROOT/layers/sha256/HEX/layer.tar written
 * by FILL, next to its rootfs/ (left empty: export reads the tar); returns
 * the digest. */
static char *
make_layer (const char *root, const char *hex, void (*fill) (struct archive *))
{
  char *dir = xasprintf ("%s/layers/sha256/%s", root, hex);
  char *rootfs = xasprintf ("%s/rootfs", dir);
  mkdir_p (rootfs, 0700, NULL);
  free (rootfs);
  char *tar = xasprintf ("%s/layer.tar", dir);
  struct archive *a = archive_write_new ();
  archive_write_set_format_pax_restricted (a);
  archive_write_open_filename (a, tar);
  fill (a);
  archive_write_close (a);
  archive_write_free (a);
  free (tar);
  free (dir);
  return xasprintf ("sha256:%s", hex);
}

/* A layer as sbx makes it now: ROOT/layers/sha256/HEX/rootfs only. */
static char *
make_files_layer (const char *root, const char *hex)
{
  char *rootfs = xasprintf ("%s/layers/sha256/%s/rootfs", root, hex);
  char *p;
  /* version 2 capability data: CAP_NET_RAW permitted and effective */
  static const unsigned char cap[20] = { 0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00 };
  mkdir_p (rootfs, 0755, NULL);
  p = xasprintf ("%s/etc", rootfs), mkdir (p, 0755), free (p);
  p = xasprintf ("%s/etc/gone", rootfs), mknod (p, S_IFCHR | 0000, makedev (0, 0)), free (p);
  p = xasprintf ("%s/etc/kept", rootfs);
  write_file_atomic (p, "kept\n", 5, 0644, NULL);
  setxattr (p, "user.test", "1", 1, 0);
  setxattr (p, "security.capability", cap, sizeof cap, 0);
  setxattr (p, "trusted.overlay.origin", "x", 1, 0);
  free (p);
  p = xasprintf ("%s/var", rootfs), mkdir (p, 0755), setxattr (p, "trusted.overlay.opaque", "y", 1, 0), free (p);
  p = xasprintf ("%s/var/new", rootfs), write_file_atomic (p, "new\n", 4, 0644, NULL), free (p);
  free (rootfs);
  return xasprintf ("sha256:%s", hex);
}

static void
fill_overlay (struct archive *a)
{
  add_entry (a, "etc", AE_IFDIR, NULL, false);
  add_entry (a, "etc/gone", AE_IFCHR, NULL, false);
  add_entry (a, "etc/kept", AE_IFREG, "kept\n", false);
  add_entry (a, "var", AE_IFDIR, NULL, true);
  add_entry (a, "var/new", AE_IFREG, "new\n", false);
}

static void
fill_oci (struct archive *a)
{
  add_entry (a, "etc", AE_IFDIR, NULL, false);
  add_entry (a, "etc/.wh.gone", AE_IFREG, "", false);
  add_entry (a, "etc/kept", AE_IFREG, "kept\n", false);
}

/* The entries of the tar in FD, "TYPE PATH" each followed by '|' (f, d, c,
 * ...), to be compared and shown on one TAP line. */
static char *
list_tar (int fd)
{
  char *out = xstrdup ("");
  struct archive *a = archive_read_new ();
  archive_read_support_format_tar (a);
  lseek (fd, 0, SEEK_SET);
  if (archive_read_open_fd (a, fd, 65536) == ARCHIVE_OK)
    {
      struct archive_entry *e;
      while (archive_read_next_header (a, &e) == ARCHIVE_OK)
        {
          mode_t t = archive_entry_filetype (e);
          bool opq = false, user = false, cap = false;
          const char *name;
          const void *value;
          size_t size;
          archive_entry_xattr_reset (e);
          while (archive_entry_xattr_next (e, &name, &value, &size) == ARCHIVE_OK)
            {
              opq |= strcmp (name, "trusted.overlay.opaque") == 0;
              user |= strcmp (name, "user.test") == 0 && size == 1 && memcmp (value, "1", 1) == 0;
              cap |= strcmp (name, "security.capability") == 0;
            }
          char *s = xasprintf ("%s%c %s%s%s%s|", out,
                               t == AE_IFDIR   ? 'd'
                               : t == AE_IFREG ? 'f'
                               : t == AE_IFCHR ? 'c'
                                               : '?',
                               archive_entry_pathname (e), opq ? " opaque" : "", user ? " user.test" : "",
                               cap ? " cap" : "");
          free (out);
          out = s;
        }
    }
  archive_read_free (a);
  return out;
}

static void
test_export_tar (void)
{
  char tmpl[] = "/tmp/sbx-test-oci-XXXXXX";
  if (mkdtemp (tmpl) == NULL)
    {
      tap_ok (false, "mkdtemp");
      return;
    }
  char *root = xasprintf ("%s/root", tmpl);
  mkdir (root, 0700);
  sbx_error *e = NULL;
  tap_ok (sbx_archive_load (&e) == 0, "libarchive loads");
  sbx_error_free (e);
  int workfd = open (tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

  char *d1 = make_layer (root, "1111111111111111111111111111111111111111111111111111111111111111", fill_overlay);
  int fd = -1;
  bool converted = false;
  e = NULL;
  int r = sbx_layer_open_oci_tar (root, d1, workfd, &fd, &converted, &e);
  char *list = r == 0 ? list_tar (fd) : xstrdup (e ? e->msg : "?");
  tap_ok (r == 0 && converted
              && strcmp (list, "d etc/|f etc/.wh.gone|f etc/kept|d var/|f var/.wh..wh..opq|f var/new|") == 0,
          "overlay whiteouts become OCI whiteouts: %s", list);
  free (list);
  sbx_error_free (e);
  if (fd >= 0)
    close (fd);

  char *d2 = make_layer (root, "2222222222222222222222222222222222222222222222222222222222222222", fill_oci);
  e = NULL;
  fd = -1;
  r = sbx_layer_open_oci_tar (root, d2, workfd, &fd, &converted, &e);
  list = r == 0 ? list_tar (fd) : xstrdup (e ? e->msg : "?");
  tap_ok (r == 0 && !converted && strcmp (list, "d etc/|f etc/.wh.gone|f etc/kept|") == 0,
          "a layer.tar with OCI whiteouts goes out as it is: %s", list);
  free (list);
  sbx_error_free (e);
  if (fd >= 0)
    close (fd);

  /* A layer as sbx makes it now: no layer.tar, its tar written from its
   * files, overlay whiteouts and opaque directories in OCI form, the xattrs
   * a layer keeps kept, the others (overlay's own) not. */
  char *d3 = make_files_layer (root, "3333333333333333333333333333333333333333333333333333333333333333");
  e = NULL;
  fd = -1;
  r = sbx_layer_open_oci_tar (root, d3, workfd, &fd, &converted, &e);
  list = r == 0 ? list_tar (fd) : xstrdup (e ? e->msg : "?");
  tap_ok (r == 0 && converted
              && strcmp (list, "d etc/|f etc/.wh.gone|f etc/kept user.test cap|d var/|f var/.wh..wh..opq|f var/new|")
                     == 0,
          "a layer without layer.tar goes out written from its files: %s", list);
  free (list);
  sbx_error_free (e);
  if (fd >= 0)
    close (fd);
  free (d3);

  e = NULL;
  r = sbx_layer_open_oci_tar (root, "sha256:" D64, workfd, &fd, &converted, &e);
  tap_ok (r < 0 && e && e->code == SBX_E_NOT_FOUND, "a missing layer is NOT_FOUND");
  sbx_error_free (e);

  close (workfd);
  free (d1);
  free (d2);
  rm_rf (tmpl, NULL);
  free (root);
}

int
main (void)
{
  test_index ();
  test_manifest ();
  test_config ();
  test_docker ();
  test_paths ();
  test_pick ();
  if (geteuid () == 0)
    test_export_tar ();
  tap_plan (tap_n);
  return tap_done ();
}
