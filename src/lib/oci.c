/* OCI image layouts and archives, docker save archives: this file owns what
 * sbx reads from and writes for other container tools.
 *
 * Import trusts nothing in what it is given. A directory is read with
 * openat2(RESOLVE_BENEATH); an archive is first unpacked, regular files and
 * directories only (links become hard links made by us), into a work directory
 * in ROOT/layers/tmp, then read the same way. Every document is bounded in size
 * and depth and parsed into typed structs at one place; blob paths are made
 * from checked digests, never taken from a document, and the paths a docker
 * manifest names are checked as relative paths without `..`. Every blob is
 * hashed against its descriptor and every layer, uncompressed, against the
 * config's diff_ids. Layers are staged, extracted and only then installed,
 * all of them or none (layer.h).
 *
 * Export writes the OCI archive podman and docker load: each layer's tar is
 * written from the layer's files (sorted, owners, modes, times, hard links and
 * kept xattrs as they are, overlay whiteouts as OCI ones), gzip-compressed by
 * default, and its digest is the diff_id. A layer an older sbx made keeps the
 * very stream it was imported from as layer.tar, which goes out as it is. */
#include "config.h"
#include "oci.h"
#include "json.h"
#include "layer.h"
#include "sha256.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define JSON_MAX (4 * 1024 * 1024)
#define JSON_DEPTH_MAX 32
#define OCI_LAYOUT_MAX 4096
#define INDEX_ENTRIES_MAX 256
#define INDEX_NESTING_MAX 2
#define LAYERS_MAX 128
#define STRV_MAX 4096
#define USER_MAX 256
#define WORKDIR_MAX 4096
#define ARCHIVE_PATH_MAX 1024
#define ARCHIVE_DEPTH_MAX 16
#define ARCHIVE_MEMBERS_MAX 65536
#define IO_BLOCK (1024 * 1024)
#define DIGEST_PREFIX "sha256:"
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define REF_NAME_ANNOTATION "org.opencontainers.image.ref.name"

#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_OCI_CONFIG "application/vnd.oci.image.config.v1+json"
#define MT_OCI_LAYER "application/vnd.oci.image.layer.v1.tar"
#define MT_OCI_LAYER_GZIP MT_OCI_LAYER "+gzip"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_CONFIG "application/vnd.docker.container.image.v1+json"

static inline void
archive_read_freep_ (struct archive **a)
{
  if (*a)
    sbx_ar.archive_read_free (*a);
}
static inline void
archive_write_freep_ (struct archive **a)
{
  if (*a)
    sbx_ar.archive_write_free (*a);
}
static inline void
archive_entry_freep_ (struct archive_entry **e)
{
  if (*e)
    sbx_ar.archive_entry_free (*e);
}
#define _cleanup_ar_read_ __attribute__ ((cleanup (archive_read_freep_)))
#define _cleanup_ar_write_ __attribute__ ((cleanup (archive_write_freep_)))
#define _cleanup_ar_entry_ __attribute__ ((cleanup (archive_entry_freep_)))

const char *
sbx_import_kind_name (sbx_import_kind kind)
{
  switch (kind)
    {
    case SBX_IMPORT_OCI_LAYOUT:
      return "oci-layout";
    case SBX_IMPORT_OCI_ARCHIVE:
      return "oci-archive";
    case SBX_IMPORT_DOCKER_ARCHIVE:
      return "docker-archive";
    case SBX_IMPORT_DOCKER_DIR:
      return "docker-dir";
    case SBX_IMPORT_ROOTFS:
    default:
      return "rootfs";
    }
}

const char *
sbx_oci_host_arch (void)
{
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__i386__)
  return "386";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "ppc64le";
#elif defined(__s390x__)
  return "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return "unknown";
#endif
}

/* Text from an archive fit for a message: control bytes as '?', cut. */
static char *
printable (const char *s)
{
  if (s == NULL)
    return xstrdup ("(none)");
  size_t n = strnlen (s, 120);
  char *r = xasprintf ("%.*s%s", (int) n, s, s[n] ? "..." : "");
  for (char *p = r; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      *p = '?';
  return r;
}

static bool
is_lower_hex (const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  return true;
}

/* "sha256:" and 64 lowercase hex digits; other algorithms are refused. */
static int
check_digest (const char *d, sbx_error **err)
{
  _cleanup_free_ char *name = printable (d);
  if (strncmp (d, DIGEST_PREFIX, strlen (DIGEST_PREFIX)) != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "digest `%s`: only sha256 digests are supported", name);
  const char *hex = d + strlen (DIGEST_PREFIX);
  if (strlen (hex) != 64 || !is_lower_hex (hex, 64))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "digest `%s` is not sha256: and 64 hex digits", name);
  return 0;
}

bool
sbx_oci_path_ok (const char *p)
{
  size_t len = strlen (p);
  if (len == 0 || len >= ARCHIVE_PATH_MAX || p[0] == '/')
    return false;
  for (const char *c = p; *c; c++)
    if ((unsigned char) *c < 0x20 || *c == 0x7f || *c == '\\')
      return false;
  int depth = 0;
  for (const char *c = p;;)
    {
      size_t n = strcspn (c, "/");
      if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.') || ++depth > ARCHIVE_DEPTH_MAX)
        return false;
      c += n;
      if (*c == '\0')
        return true;
      c++;
    }
}

/* ---- media types ---- */

static bool
mt_is_index (const char *mt)
{
  return mt && (strcmp (mt, MT_OCI_INDEX) == 0 || strcmp (mt, MT_DOCKER_LIST) == 0);
}

static bool
mt_is_manifest (const char *mt)
{
  return mt && (strcmp (mt, MT_OCI_MANIFEST) == 0 || strcmp (mt, MT_DOCKER_MANIFEST) == 0);
}

static bool
mt_is_config (const char *mt)
{
  return mt && (strcmp (mt, MT_OCI_CONFIG) == 0 || strcmp (mt, MT_DOCKER_CONFIG) == 0);
}

/* Compression is told by content when the layer is read, as for a rootfs
 * tarball; the media type only has to say it is a layer tar. */
static bool
mt_is_layer (const char *mt)
{
  static const char *const types[] = {
    MT_OCI_LAYER,
    MT_OCI_LAYER_GZIP,
    MT_OCI_LAYER "+zstd",
    "application/vnd.oci.image.layer.nondistributable.v1.tar",
    "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
    "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
    "application/vnd.docker.image.rootfs.diff.tar",
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
    "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
  };
  for (size_t i = 0; mt && i < ARRAY_SIZE (types); i++)
    if (strcmp (mt, types[i]) == 0)
      return true;
  return false;
}

/* ---- documents ---- */

/* yajl builds trees without a depth limit and frees them recursively: a
 * document is refused before parsing when it nests deeper than MAX. */
static bool
json_depth_ok (const char *s, size_t len, int max)
{
  int depth = 0;
  bool in_str = false;
  for (size_t i = 0; i < len; i++)
    {
      char c = s[i];
      if (in_str)
        {
          if (c == '\\')
            i++;
          else if (c == '"')
            in_str = false;
        }
      else if (c == '"')
        in_str = true;
      else if ((c == '[' || c == '{') && ++depth > max)
        return false;
      else if (c == ']' || c == '}')
        depth--;
    }
  return true;
}

static int
parse_json (const char *text, size_t len, const char *what, yajl_val *ret, sbx_error **err)
{
  if (len > JSON_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: larger than %d bytes", what, JSON_MAX);
  if (!json_depth_ok (text, len, JSON_DEPTH_MAX))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: nested deeper than %d levels", what, JSON_DEPTH_MAX);
  return j_parse (text, len, JSON_MAX, what, ret, err);
}

static void
desc_clear (sbx_oci_desc *d)
{
  free (d->media_type);
  free (d->digest);
  free (d->os);
  free (d->arch);
  *d = (sbx_oci_desc) { 0 };
}

static void
desc_copy (sbx_oci_desc *dst, const sbx_oci_desc *src)
{
  dst->media_type = src->media_type ? xstrdup (src->media_type) : NULL;
  dst->digest = xstrdup (src->digest);
  dst->size = src->size;
  dst->os = src->os ? xstrdup (src->os) : NULL;
  dst->arch = src->arch ? xstrdup (src->arch) : NULL;
}

static void
descs_free (sbx_oci_desc *v, size_t n)
{
  for (size_t i = 0; v && i < n; i++)
    desc_clear (&v[i]);
  free (v);
}

void
sbx_oci_index_free (sbx_oci_index *x)
{
  if (x == NULL)
    return;
  descs_free (x->manifests, x->n);
  free (x);
}

void
sbx_oci_manifest_free (sbx_oci_manifest *m)
{
  if (m == NULL)
    return;
  desc_clear (&m->config);
  descs_free (m->layers, m->n_layers);
  free (m);
}

void
sbx_oci_config_free (sbx_oci_config *c)
{
  if (c == NULL)
    return;
  free (c->os);
  free (c->arch);
  strv_free (c->env);
  free (c->workdir);
  strv_free (c->cmd);
  free (c->user);
  strv_free (c->diff_ids);
  free (c);
}

void
sbx_docker_manifest_free (sbx_docker_manifest *m)
{
  if (m == NULL)
    return;
  free (m->config);
  strv_free (m->layers);
  free (m);
}

static char *
dup_or_null (const char *s)
{
  return s ? xstrdup (s) : NULL;
}

/* A descriptor; errors name WHAT. */
static int
parse_desc (yajl_val v, const char *what, sbx_oci_desc *d, sbx_error **err)
{
  const char *mt = NULL, *digest = NULL, *os = NULL, *arch = NULL;
  int64_t size = -1;
  yajl_val plat = j_get (v, "platform");
  if (v == NULL || !YAJL_IS_OBJECT (v))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: not a JSON object", what);
  if (j_get_str (v, "mediaType", false, &mt, err) < 0 || j_get_str (v, "digest", true, &digest, err) < 0
      || j_get_int (v, "size", true, &size, err) < 0 || check_digest (digest, err) < 0)
    return sbx_error_wrap (err, "%s", what);
  if (plat && !YAJL_IS_NULL (plat) && !YAJL_IS_OBJECT (plat))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: `platform` must be an object", what);
  if (plat && (j_get_str (plat, "os", false, &os, err) < 0 || j_get_str (plat, "architecture", false, &arch, err) < 0))
    return sbx_error_wrap (err, "%s: platform", what);
  if (size < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: negative size", what);
  *d = (sbx_oci_desc) { .media_type = dup_or_null (mt), .digest = xstrdup (digest), .size = (uint64_t) size,
                        .os = dup_or_null (os), .arch = dup_or_null (arch) };
  return 0;
}

/* schemaVersion, when there, is 2; mediaType, when there, is one of TYPES. */
static int
check_header (yajl_val v, const char *what, bool (*type_ok) (const char *), sbx_error **err)
{
  int64_t version = 2;
  const char *mt = NULL;
  if (!YAJL_IS_OBJECT (v))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: not a JSON object", what);
  if (j_get_int (v, "schemaVersion", false, &version, err) < 0 || j_get_str (v, "mediaType", false, &mt, err) < 0)
    return sbx_error_wrap (err, "%s", what);
  if (version != 2)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: schemaVersion %lld is not 2", what,
                          (long long) version);
  if (mt && !type_ok (mt))
    {
      _cleanup_free_ char *name = printable (mt);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: unexpected media type `%s`", what, name);
    }
  return 0;
}

/* The array KEY of V, at most MAX entries. */
static int
get_array (yajl_val v, const char *key, size_t max, const char *what, yajl_val *ret, sbx_error **err)
{
  yajl_val a = j_get (v, key);
  if (a == NULL || !YAJL_IS_ARRAY (a))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: `%s` must be an array", what, key);
  if (a->u.array.len > max)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: more than %zu entries in `%s`", what, max, key);
  *ret = a;
  return 0;
}

int
sbx_oci_parse_index (const char *text, size_t len, sbx_oci_index **ret, sbx_error **err)
{
  _cleanup_yajl_val_ yajl_val v = NULL;
  yajl_val arr;
  if (parse_json (text, len, "index", &v, err) < 0 || check_header (v, "index", mt_is_index, err) < 0
      || get_array (v, "manifests", INDEX_ENTRIES_MAX, "index", &arr, err) < 0)
    return -1;
  _cleanup_oci_index_ sbx_oci_index *x = xmalloc0 (sizeof *x);
  x->manifests = xmalloc0 ((arr->u.array.len + 1) * sizeof *x->manifests);
  for (size_t i = 0; i < arr->u.array.len; i++)
    {
      _cleanup_free_ char *what = xasprintf ("index entry %zu", i + 1);
      if (parse_desc (arr->u.array.values[i], what, &x->manifests[i], err) < 0)
        return -1;
      x->n++;
    }
  *ret = steal_pointer (&x);
  return 0;
}

int
sbx_oci_parse_manifest (const char *text, size_t len, sbx_oci_manifest **ret, sbx_error **err)
{
  _cleanup_yajl_val_ yajl_val v = NULL;
  yajl_val arr;
  if (parse_json (text, len, "manifest", &v, err) < 0 || check_header (v, "manifest", mt_is_manifest, err) < 0
      || get_array (v, "layers", LAYERS_MAX, "manifest", &arr, err) < 0)
    return -1;
  _cleanup_oci_manifest_ sbx_oci_manifest *m = xmalloc0 (sizeof *m);
  if (parse_desc (j_get (v, "config"), "manifest config", &m->config, err) < 0)
    return -1;
  if (m->config.media_type && !mt_is_config (m->config.media_type))
    {
      _cleanup_free_ char *name = printable (m->config.media_type);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "not a container image: its config is `%s`", name);
    }
  m->layers = xmalloc0 ((arr->u.array.len + 1) * sizeof *m->layers);
  for (size_t i = 0; i < arr->u.array.len; i++)
    {
      _cleanup_free_ char *what = xasprintf ("manifest layer %zu", i + 1);
      if (parse_desc (arr->u.array.values[i], what, &m->layers[i], err) < 0)
        return -1;
      m->n_layers++;
      if (m->layers[i].media_type && !mt_is_layer (m->layers[i].media_type))
        {
          _cleanup_free_ char *name = printable (m->layers[i].media_type);
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: unsupported media type `%s`", what, name);
        }
    }
  *ret = steal_pointer (&m);
  return 0;
}

static int
get_bounded_strv (yajl_val v, const char *key, char ***ret, sbx_error **err)
{
  yajl_val a = j_get (v, key);
  if (a && YAJL_IS_ARRAY (a) && a->u.array.len > STRV_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "more than %d entries in `%s`", STRV_MAX, key);
  return j_get_strv (v, key, false, ret, err);
}

static bool
has_control (const char *s)
{
  for (; *s; s++)
    if ((unsigned char) *s < 0x20 || *s == 0x7f)
      return true;
  return false;
}

/* The runtime part of a config: Env, Entrypoint + Cmd, WorkingDir, User. */
static int
parse_run_config (yajl_val c, sbx_oci_config *cfg, sbx_error **err)
{
  _cleanup_strv_ char **entry = NULL, **cmd = NULL;
  const char *workdir = NULL, *user = NULL;
  if (c == NULL || YAJL_IS_NULL (c))
    return 0;
  if (!YAJL_IS_OBJECT (c))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`config` must be an object");
  if (get_bounded_strv (c, "Env", &cfg->env, err) < 0 || get_bounded_strv (c, "Entrypoint", &entry, err) < 0
      || get_bounded_strv (c, "Cmd", &cmd, err) < 0 || j_get_str (c, "WorkingDir", false, &workdir, err) < 0
      || j_get_str (c, "User", false, &user, err) < 0)
    return -1;
  for (size_t i = 0; cfg->env && cfg->env[i]; i++)
    if (!env_entry_is_valid (cfg->env[i]))
      {
        _cleanup_free_ char *name = printable (cfg->env[i]);
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid Env entry `%s`", name);
      }
  if (workdir && *workdir && (workdir[0] != '/' || strlen (workdir) >= WORKDIR_MAX || has_control (workdir)))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "WorkingDir must be an absolute path");
  if (user && (strlen (user) > USER_MAX || has_control (user)))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid User");
  cfg->cmd = xmalloc0 (sizeof (char *));
  for (size_t i = 0; entry && entry[i]; i++)
    strv_push (&cfg->cmd, entry[i]);
  for (size_t i = 0; cmd && cmd[i]; i++)
    strv_push (&cfg->cmd, cmd[i]);
  cfg->workdir = workdir && *workdir ? xstrdup (workdir) : NULL;
  cfg->user = user && *user ? xstrdup (user) : NULL;
  return 0;
}

static int
parse_rootfs (yajl_val r, sbx_oci_config *cfg, sbx_error **err)
{
  const char *type = NULL;
  if (r == NULL || YAJL_IS_NULL (r))
    return 0;
  if (!YAJL_IS_OBJECT (r) || j_get_str (r, "type", false, &type, err) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`rootfs` must be an object");
  if (type && strcmp (type, "layers") != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "rootfs type is not `layers`");
  yajl_val ids = j_get (r, "diff_ids");
  if (ids && YAJL_IS_ARRAY (ids) && ids->u.array.len > LAYERS_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "more than %d diff_ids", LAYERS_MAX);
  if (j_get_strv (r, "diff_ids", false, &cfg->diff_ids, err) < 0)
    return -1;
  for (size_t i = 0; cfg->diff_ids && cfg->diff_ids[i]; i++)
    if (check_digest (cfg->diff_ids[i], err) < 0)
      return sbx_error_wrap (err, "diff_id %zu", i + 1);
  return 0;
}

int
sbx_oci_parse_config (const char *text, size_t len, sbx_oci_config **ret, sbx_error **err)
{
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (parse_json (text, len, "image config", &v, err) < 0)
    return -1;
  if (!YAJL_IS_OBJECT (v))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "image config: not a JSON object");
  _cleanup_oci_config_ sbx_oci_config *cfg = xmalloc0 (sizeof *cfg);
  const char *os = NULL, *arch = NULL;
  if (j_get_str (v, "os", false, &os, err) < 0 || j_get_str (v, "architecture", false, &arch, err) < 0
      || parse_run_config (j_get (v, "config"), cfg, err) < 0 || parse_rootfs (j_get (v, "rootfs"), cfg, err) < 0)
    return sbx_error_wrap (err, "image config");
  cfg->os = dup_or_null (os);
  cfg->arch = dup_or_null (arch);
  *ret = steal_pointer (&cfg);
  return 0;
}

/* Whether manifest.json is docker's: an array whose first entry has Config
 * and Layers. Anything else with that name is a file of a rootfs. */
static bool
docker_manifest_shaped (const char *text, size_t len)
{
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (parse_json (text, len, "manifest.json", &v, NULL) < 0 || !YAJL_IS_ARRAY (v) || v->u.array.len == 0)
    return false;
  yajl_val first = v->u.array.values[0];
  return YAJL_IS_OBJECT (first) && j_get (first, "Config") && j_get (first, "Layers");
}

static int
check_archive_path (const char *p, const char *what, sbx_error **err)
{
  if (sbx_oci_path_ok (p))
    return 0;
  _cleanup_free_ char *name = printable (p);
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s `%s` is not a safe relative path", what, name);
}

int
sbx_docker_parse_manifest (const char *text, size_t len, sbx_docker_manifest **ret, sbx_error **err)
{
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (parse_json (text, len, "manifest.json", &v, err) < 0)
    return -1;
  if (!YAJL_IS_ARRAY (v) || v->u.array.len == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "manifest.json: not a list of images");
  if (v->u.array.len > 1)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "manifest.json: the archive holds %zu images; sbx imports an archive of one",
                          v->u.array.len);
  yajl_val m = v->u.array.values[0];
  const char *config = NULL;
  yajl_val layers;
  if (!YAJL_IS_OBJECT (m))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "manifest.json: not a list of images");
  if (j_get_str (m, "Config", true, &config, err) < 0
      || get_array (m, "Layers", LAYERS_MAX, "manifest.json", &layers, err) < 0)
    return sbx_error_wrap (err, "manifest.json");
  _cleanup_docker_manifest_ sbx_docker_manifest *d = xmalloc0 (sizeof *d);
  if (j_get_strv (m, "Layers", true, &d->layers, err) < 0)
    return sbx_error_wrap (err, "manifest.json");
  if (check_archive_path (config, "manifest.json: Config", err) < 0)
    return -1;
  for (size_t i = 0; d->layers[i]; i++)
    if (check_archive_path (d->layers[i], "manifest.json: layer", err) < 0)
      return -1;
  d->config = xstrdup (config);
  *ret = steal_pointer (&d);
  return 0;
}

int
sbx_oci_pick (const sbx_oci_desc *v, size_t n, const char *arch, size_t *ret_i, sbx_error **err)
{
  size_t found = n, count = 0;
  for (size_t i = 0; i < n; i++)
    if (v[i].os && v[i].arch && strcmp (v[i].os, "linux") == 0 && strcmp (v[i].arch, arch) == 0 && count++ == 0)
      found = i;
  if (count == 0 && n == 1 && v[0].os == NULL && v[0].arch == NULL)
    found = 0, count = 1;
  if (count == 1)
    {
      *ret_i = found;
      return 0;
    }
  if (count > 1)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the index lists %zu images for linux/%s; sbx imports one",
                          count, arch);
  _cleanup_free_ char *list = xstrdup ("");
  for (size_t i = 0; i < n && i < 16; i++)
    {
      _cleanup_free_ char *os = printable (v[i].os), *a = printable (v[i].arch);
      char *l = xasprintf ("%s%s%s/%s", list, i ? ", " : "", os, a);
      free (list);
      list = l;
    }
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "no image for linux/%s in the index (it has: %s)", arch,
                        n ? list : "nothing");
}

/* ---- reading a layout ---- */

/* REL beneath the layout DFD, a regular file: a symlink in a user's layout may
 * point within it, never out of it (or through /proc). A FIFO does not block
 * the open. */
static int
open_beneath (int dfd, const char *rel, struct stat *ret_st, sbx_error **err)
{
  struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                          .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
  _cleanup_free_ char *name = printable (rel);
  long fd = -1;
  for (int i = 0; i < 64 && fd < 0; i++)
    {
      fd = syscall (SYS_openat2, dfd, rel, &how, sizeof how);
      if (fd < 0 && errno != EAGAIN && errno != EINTR)
        break;
    }
  if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is missing", name);
  if (fd < 0 && (errno == EXDEV || errno == ELOOP))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` leads out of the image", name);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open `%s`", name);
  _cleanup_close_ int f = (int) fd;
  if (fstat (f, ret_st) < 0)
    return sbx_error_errno (err, errno, "stat `%s`", name);
  if (!S_ISREG (ret_st->st_mode))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is not a regular file", name);
  if (fcntl (f, F_SETFL, 0) < 0)
    return sbx_error_errno (err, errno, "open `%s`", name);
  return steal_fd (&f);
}

static bool
exists_beneath (int dfd, const char *rel)
{
  struct stat st;
  _cleanup_close_ int fd = open_beneath (dfd, rel, &st, NULL);
  return fd >= 0;
}

/* The whole of REL, at most MAX bytes. */
static int
read_beneath (int dfd, const char *rel, size_t max, char **ret, size_t *ret_len, sbx_error **err)
{
  struct stat st;
  _cleanup_close_ int fd = open_beneath (dfd, rel, &st, err);
  if (fd < 0)
    return -1;
  _cleanup_free_ char *name = printable (rel);
  if (st.st_size < 0 || (uint64_t) st.st_size > max)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is larger than %zu bytes", name, max);
  _cleanup_free_ char *buf = xmalloc ((size_t) st.st_size + 1);
  ssize_t n = read_all (fd, buf, (size_t) st.st_size);
  if (n < 0)
    return sbx_error_errno (err, (int) -n, "read `%s`", name);
  if (n != st.st_size)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` changed while it was read", name);
  buf[n] = '\0';
  *ret = steal_pointer (&buf);
  *ret_len = (size_t) n;
  return 0;
}

static char *
blob_path (const char *digest)
{
  return xasprintf ("blobs/sha256/%s", digest + strlen (DIGEST_PREFIX));
}

/* The JSON blob D names, its size and digest checked. WHAT names it. */
static int
read_json_blob (int dfd, const sbx_oci_desc *d, const char *what, char **ret, size_t *ret_len, sbx_error **err)
{
  if (d->size > JSON_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s %s: larger than %d bytes", what, d->digest, JSON_MAX);
  _cleanup_free_ char *path = blob_path (d->digest);
  _cleanup_free_ char *text = NULL;
  size_t len;
  char hex[65];
  if (read_beneath (dfd, path, JSON_MAX, &text, &len, err) < 0)
    return sbx_error_wrap (err, "%s", what);
  if (len != d->size)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s %s: the blob has %zu bytes, its descriptor says %llu",
                          what, d->digest, len, (unsigned long long) d->size);
  sha256_hex (text, len, hex);
  if (strcmp (hex, d->digest + strlen (DIGEST_PREFIX)) != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s %s: digest mismatch (the blob is sha256:%s)", what,
                          d->digest, hex);
  *ret = steal_pointer (&text);
  *ret_len = len;
  return 0;
}

/* ---- unpacking an archive ---- */

/* Names an image archive has at its top: OCI's, docker's, and docker's and
 * podman's HEX, HEX.json, HEX.tar and HEX/ (legacy v1 layer directories). */
static bool
member_is_image_shaped (const char *p)
{
  static const char *const names[] = { "oci-layout", "index.json", "manifest.json", "repositories", "blobs" };
  size_t n = strcspn (p, "/");
  for (size_t i = 0; i < ARRAY_SIZE (names); i++)
    if (strlen (names[i]) == n && strncmp (p, names[i], n) == 0)
      return true;
  return n >= 64 && is_lower_hex (p, 64);
}

/* The directory of NAME beneath DFD, made as needed (0700), never through a
 * symlink; *ret_base is NAME's last component. */
static int
open_parent (int dfd, const char *name, char **ret_base, sbx_error **err)
{
  const char *slash = strrchr (name, '/');
  _cleanup_close_ int fd = openat (dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open the work directory");
  _cleanup_free_ char *dir = slash ? xstrndup (name, (size_t) (slash - name)) : xstrdup ("");
  char *save = NULL;
  for (char *c = strtok_r (dir, "/", &save); c; c = strtok_r (NULL, "/", &save))
    {
      if (mkdirat (fd, c, 0700) < 0 && errno != EEXIST)
        return sbx_error_errno (err, errno, "mkdir `%s`", c);
      int next = openat (fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next < 0)
        {
          _cleanup_free_ char *pname = printable (name);
          return sbx_error_set (err, errno == ENOTDIR ? SBX_E_INVALID_ARGUMENT : SBX_E_INTERNAL, errno,
                                "member `%s`: open its directory", pname);
        }
      close (fd);
      fd = next;
    }
  *ret_base = xstrdup (slash ? slash + 1 : name);
  return steal_fd (&fd);
}

static int
pwrite_all (int fd, const void *buf, size_t len, off_t off)
{
  const char *p = buf;
  while (len > 0)
    {
      ssize_t n = pwrite (fd, p, len, off);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return -errno;
      p += n, len -= (size_t) n, off += n;
    }
  return 0;
}

static int
unpack_file (struct archive *a, int dfd, const char *name, int64_t size, sbx_error **err)
{
  _cleanup_free_ char *base = NULL, *pname = printable (name);
  _cleanup_close_ int dir = open_parent (dfd, name, &base, err);
  if (dir < 0)
    return -1;
  _cleanup_close_ int out = openat (dir, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0 && errno == EEXIST)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "member `%s` appears twice", pname);
  if (out < 0)
    return sbx_error_errno (err, errno, "create `%s`", pname);
  for (;;)
    {
      const void *buf;
      size_t n;
      la_int64_t off;
      int r = sbx_ar.archive_read_data_block (a, &buf, &n, &off);
      if (r == ARCHIVE_EOF)
        break;
      if (r != ARCHIVE_OK || off < 0)
        return sbx_archive_fail (err, a, "read");
      int w = pwrite_all (out, buf, n, (off_t) off);
      if (w < 0)
        return sbx_error_errno (err, -w, "write `%s`", pname);
    }
  if (size > 0 && ftruncate (out, (off_t) size) < 0)
    return sbx_error_errno (err, errno, "write `%s`", pname);
  return 0;
}

static int
unpack_dir (int dfd, const char *name, sbx_error **err)
{
  _cleanup_free_ char *base = NULL;
  _cleanup_close_ int dir = open_parent (dfd, name, &base, err);
  if (dir < 0)
    return -1;
  if (mkdirat (dir, base, 0700) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", base);
  return 0;
}

/* TARGET of a symlink at LINK, as a path from the archive's top, or NULL
 * when it is absolute or climbs out. */
static char *
resolve_symlink (const char *link, const char *target)
{
  if (target == NULL || target[0] == '/')
    return NULL;
  const char *slash = strrchr (link, '/');
  _cleanup_free_ char *joined = xasprintf ("%.*s%s", slash ? (int) (slash - link + 1) : 0, link, target);
  _cleanup_free_ char *out = xmalloc0 (strlen (joined) + 1);
  size_t len = 0;
  char *save = NULL;
  for (char *c = strtok_r (joined, "/", &save); c; c = strtok_r (NULL, "/", &save))
    {
      if (strcmp (c, ".") == 0)
        continue;
      if (strcmp (c, "..") == 0)
        {
          if (len == 0)
            return NULL;
          while (len > 0 && out[len - 1] != '/')
            len--;
          len = len > 0 ? len - 1 : 0;
          out[len] = '\0';
          continue;
        }
      len += (size_t) sprintf (out + len, "%s%s", len ? "/" : "", c);
    }
  return len ? steal_pointer (&out) : NULL;
}

/* Links in an archive become hard links to the file they name once every
 * member is out: docker's legacy layer directories link to one another. */
typedef struct pending_link {
  char *path;
  char *target;
} pending_link;

typedef struct link_list {
  pending_link *v;
  size_t n;
} link_list;

static void
link_list_free (link_list *l)
{
  for (size_t i = 0; i < l->n; i++)
    {
      free (l->v[i].path);
      free (l->v[i].target);
    }
  free (l->v);
}
#define _cleanup_link_list_ __attribute__ ((cleanup (link_list_free)))

static void
link_list_add (link_list *l, const char *path, char *target)
{
  l->v = xrealloc (l->v, (l->n + 1) * sizeof *l->v);
  l->v[l->n++] = (pending_link) { .path = xstrdup (path), .target = target };
}

/* Makes what it can; a link to a directory, or to nothing, is left out and
 * its name is then simply missing. */
static int
make_links (int dfd, link_list *l, sbx_error **err)
{
  bool progress = true;
  for (size_t pass = 0; progress && pass <= l->n; pass++)
    {
      progress = false;
      for (size_t i = 0; i < l->n; i++)
        {
          if (l->v[i].path == NULL)
            continue;
          _cleanup_free_ char *base = NULL, *pname = printable (l->v[i].path);
          _cleanup_close_ int dir = open_parent (dfd, l->v[i].path, &base, err);
          if (dir < 0)
            return -1;
          int r = linkat (dfd, l->v[i].target, dir, base, 0);
          if (r < 0 && errno == ENOENT)
            continue;
          if (r < 0 && errno == EEXIST)
            return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "member `%s` appears twice", pname);
          free (steal_pointer (&l->v[i].path));
          progress = true;
        }
    }
  return 0;
}

/* One member of an archive into DFD. */
static int
unpack_member (struct archive *a, struct archive_entry *e, int dfd, const char *name, link_list *links,
               sbx_error **err)
{
  _cleanup_free_ char *pname = printable (name);
  const char *hardlink = sbx_ar.archive_entry_hardlink (e);
  mode_t type = sbx_ar.archive_entry_filetype (e);
  if (hardlink)
    {
      while (strncmp (hardlink, "./", 2) == 0)
        hardlink += 2;
      if (!sbx_oci_path_ok (hardlink))
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "member `%s`: hard link out of the archive", pname);
      link_list_add (links, name, xstrdup (hardlink));
      return 0;
    }
  switch (type)
    {
    case AE_IFDIR:
      return unpack_dir (dfd, name, err);
    case AE_IFREG:
      return unpack_file (a, dfd, name, sbx_ar.archive_entry_size (e), err);
    case AE_IFLNK:
      {
        char *target = resolve_symlink (name, sbx_ar.archive_entry_symlink (e));
        if (target == NULL || !sbx_oci_path_ok (target))
          {
            free (target);
            return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "member `%s`: symlink out of the archive", pname);
          }
        link_list_add (links, name, target);
        return 0;
      }
    default:
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "member `%s` is not a file, directory or link", pname);
    }
}

/* The member's name without leading "./" and trailing slashes; NULL for the
 * archive's top. */
static char *
member_name (const char *raw)
{
  while (raw[0] == '.' && raw[1] == '/')
    raw += 2 + strspn (raw + 2, "/");
  size_t n = strlen (raw);
  while (n > 0 && raw[n - 1] == '/')
    n--;
  return n && !(n == 1 && raw[0] == '.') ? xstrndup (raw, n) : NULL;
}

/* Unpacks the archive in FD into DFD while every member has a name an image
 * archive has; *ret_image is false, and the rest left unread, at the first
 * that does not, or when the stream is no tar at all: a rootfs tarball,
 * whose own import reports what is wrong with it. */
static int
unpack_archive (int fd, int dfd, bool *ret_image, sbx_error **err)
{
  _cleanup_ar_read_ struct archive *a = sbx_ar.archive_read_new ();
  _cleanup_link_list_ link_list links = { 0 };
  *ret_image = false;
  if (sbx_archive_read_filters (a, err) < 0)
    return -1;
  sbx_ar.archive_read_support_format_tar (a);
  if (sbx_ar.archive_read_open_fd (a, fd, IO_BLOCK) != ARCHIVE_OK)
    return 0;
  for (size_t count = 0;; count++)
    {
      struct archive_entry *e;
      int r = sbx_ar.archive_read_next_header (a, &e);
      if (r == ARCHIVE_EOF)
        break;
      const char *raw = r == ARCHIVE_OK || r == ARCHIVE_WARN ? sbx_ar.archive_entry_pathname (e) : NULL;
      if (raw == NULL)
        return 0;
      _cleanup_free_ char *name = member_name (raw);
      if (name == NULL)
        continue;
      if (!member_is_image_shaped (name))
        return 0;
      if (count >= ARCHIVE_MEMBERS_MAX)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "more than %d members", ARCHIVE_MEMBERS_MAX);
      if (check_archive_path (name, "member", err) < 0 || unpack_member (a, e, dfd, name, &links, err) < 0)
        return -1;
    }
  if (make_links (dfd, &links, err) < 0)
    return -1;
  *ret_image = true;
  return 0;
}

/* ---- import ---- */

typedef struct staged_list {
  sbx_layer_staged **v;
  size_t n;
} staged_list;

static void
staged_list_free (staged_list *l)
{
  for (size_t i = 0; i < l->n; i++)
    sbx_layer_staged_free (l->v[i]);
  free (l->v);
}
#define _cleanup_staged_list_ __attribute__ ((cleanup (staged_list_free)))

/* No silent fallback: an image for another system would not run here. */
static int
check_platform (const sbx_oci_config *cfg, sbx_error **err)
{
  const char *arch = sbx_oci_host_arch ();
  _cleanup_free_ char *os = printable (cfg->os), *a = printable (cfg->arch);
  if (cfg->os && strcmp (cfg->os, "linux") != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the image is for %s, not linux", os);
  if (cfg->arch && strcmp (cfg->arch, arch) != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the image is for %s, this host is %s", a, arch);
  return 0;
}

/* Layer I from FD into L: staged, its bytes checked against BLOB and its
 * uncompressed tar against DIFF_ID, each when given. */
static int
stage_layer (const char *root, int fd, const sbx_oci_desc *blob, const char *diff_id, size_t i, staged_list *l,
             sbx_error **err)
{
  sbx_layer_staged *s = NULL;
  if (sbx_layer_stage (root, fd, diff_id, &s, err) < 0)
    return sbx_error_wrap (err, "layer %zu", i + 1);
  l->v[l->n++] = s;
  uint64_t size;
  const char *got = sbx_layer_staged_blob (s, &size);
  if (blob && strcmp (got, blob->digest) != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "layer %zu: digest mismatch: the blob of %s is %s", i + 1,
                          blob->digest, got);
  if (blob && size != blob->size)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "layer %zu: the blob has %llu bytes, its descriptor says %llu",
                          i + 1, (unsigned long long) size, (unsigned long long) blob->size);
  if (diff_id && strcmp (sbx_layer_staged_digest (s), diff_id) != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "layer %zu: digest mismatch: its tar is %s, the config's diff_id says %s", i + 1,
                          sbx_layer_staged_digest (s), diff_id);
  return 0;
}

static bool
env_has (char *const *env, const char *key)
{
  size_t n = strlen (key);
  for (size_t i = 0; env && env[i]; i++)
    if (strncmp (env[i], key, n) == 0 && env[i][n] == '=')
      return true;
  return false;
}

/* Extracts every staged layer, then installs them all: a layer refused by
 * the extraction leaves none behind. */
static int
finish_import (const char *root, staged_list *l, const sbx_oci_config *cfg, sbx_image **ret, sbx_error **err)
{
  for (size_t i = 0; i < l->n; i++)
    if (sbx_layer_staged_extract (root, l->v[i], err) < 0)
      return sbx_error_wrap (err, "layer %zu (%s)", i + 1, sbx_layer_staged_digest (l->v[i]));
  _cleanup_image_ sbx_image *img = xmalloc0 (sizeof *img);
  img->layers = xmalloc0 (sizeof (char *));
  for (size_t i = 0; i < l->n; i++)
    {
      uint64_t size = 0;
      if (sbx_layer_staged_install (root, l->v[i], &size, err) < 0)
        return sbx_error_wrap (err, "layer %zu", i + 1);
      img->size += size;
      strv_push (&img->layers, sbx_layer_staged_name (l->v[i]));
    }
  if (l->n > 0)
    sbx_layer_settle_later (root);
  /* What podman and docker add when an image has no PATH. */
  img->env = cfg->env ? strv_dup (cfg->env) : xmalloc0 (sizeof (char *));
  if (!env_has (img->env, "PATH"))
    strv_push (&img->env, DEFAULT_PATH);
  img->workdir = xstrdup (cfg->workdir ? cfg->workdir : "/");
  img->cmd = cfg->cmd && cfg->cmd[0] ? strv_dup (cfg->cmd) : NULL;
  img->user = dup_or_null (cfg->user);
  *ret = steal_pointer (&img);
  return 0;
}

/* The image manifests of index X and the indexes it names, flattened. */
static int
collect_manifests (int dfd, const sbx_oci_index *x, int depth, sbx_oci_index *out, sbx_error **err)
{
  for (size_t i = 0; i < x->n; i++)
    {
      const sbx_oci_desc *d = &x->manifests[i];
      if (mt_is_index (d->media_type))
        {
          _cleanup_free_ char *text = NULL;
          _cleanup_oci_index_ sbx_oci_index *sub = NULL;
          size_t len;
          if (depth >= INDEX_NESTING_MAX)
            return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "indexes nested more than %d deep",
                                  INDEX_NESTING_MAX);
          if (read_json_blob (dfd, d, "index", &text, &len, err) < 0 || sbx_oci_parse_index (text, len, &sub, err) < 0
              || collect_manifests (dfd, sub, depth + 1, out, err) < 0)
            return -1;
        }
      else if (d->media_type == NULL || mt_is_manifest (d->media_type))
        {
          /* Anything else an index lists (signatures, attestations) is not
           * an image. */
          if (out->n >= INDEX_ENTRIES_MAX)
            return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "more than %d manifests", INDEX_ENTRIES_MAX);
          out->manifests = xrealloc (out->manifests, (out->n + 1) * sizeof *out->manifests);
          desc_copy (&out->manifests[out->n++], d);
        }
    }
  return 0;
}

/* oci-layout, when there: {"imageLayoutVersion": "1.x"}. */
static int
check_oci_layout (int dfd, sbx_error **err)
{
  _cleanup_free_ char *text = NULL;
  _cleanup_yajl_val_ yajl_val v = NULL;
  const char *version = NULL;
  size_t len;
  if (!exists_beneath (dfd, "oci-layout"))
    return 0;
  if (read_beneath (dfd, "oci-layout", OCI_LAYOUT_MAX, &text, &len, err) < 0
      || parse_json (text, len, "oci-layout", &v, err) < 0)
    return -1;
  if (j_get_str (v, "imageLayoutVersion", true, &version, err) < 0)
    return sbx_error_wrap (err, "oci-layout");
  if (strncmp (version, "1.", 2) != 0)
    {
      _cleanup_free_ char *name = printable (version);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "oci-layout: unsupported version `%s`", name);
    }
  return 0;
}

/* The manifest of the index in DFD meant for this host, and its config. */
static int
read_oci_image (int dfd, sbx_oci_manifest **ret_m, sbx_oci_config **ret_cfg, sbx_error **err)
{
  _cleanup_free_ char *text = NULL, *mtext = NULL, *ctext = NULL;
  _cleanup_oci_index_ sbx_oci_index *top = NULL;
  _cleanup_oci_index_ sbx_oci_index *all = xmalloc0 (sizeof *all);
  _cleanup_oci_manifest_ sbx_oci_manifest *m = NULL;
  _cleanup_oci_config_ sbx_oci_config *cfg = NULL;
  size_t len, mlen, clen, pick;
  if (check_oci_layout (dfd, err) < 0 || read_beneath (dfd, "index.json", JSON_MAX, &text, &len, err) < 0
      || sbx_oci_parse_index (text, len, &top, err) < 0 || collect_manifests (dfd, top, 0, all, err) < 0
      || sbx_oci_pick (all->manifests, all->n, sbx_oci_host_arch (), &pick, err) < 0
      || read_json_blob (dfd, &all->manifests[pick], "manifest", &mtext, &mlen, err) < 0
      || sbx_oci_parse_manifest (mtext, mlen, &m, err) < 0
      || read_json_blob (dfd, &m->config, "config", &ctext, &clen, err) < 0
      || sbx_oci_parse_config (ctext, clen, &cfg, err) < 0 || check_platform (cfg, err) < 0)
    return -1;
  if (m->n_layers == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the image has no layers");
  if (cfg->diff_ids && strv_len (cfg->diff_ids) != m->n_layers)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the config lists %zu diff_ids for %zu layers",
                          strv_len (cfg->diff_ids), m->n_layers);
  *ret_m = steal_pointer (&m);
  *ret_cfg = steal_pointer (&cfg);
  return 0;
}

static int
import_oci (const char *root, int dfd, sbx_image **ret, sbx_error **err)
{
  _cleanup_oci_manifest_ sbx_oci_manifest *m = NULL;
  _cleanup_oci_config_ sbx_oci_config *cfg = NULL;
  if (read_oci_image (dfd, &m, &cfg, err) < 0)
    return -1;
  _cleanup_staged_list_ staged_list l = { .v = xmalloc0 (m->n_layers * sizeof (sbx_layer_staged *)) };
  for (size_t i = 0; i < m->n_layers; i++)
    {
      _cleanup_free_ char *path = blob_path (m->layers[i].digest);
      struct stat st;
      _cleanup_close_ int fd = open_beneath (dfd, path, &st, err);
      if (fd < 0)
        return sbx_error_wrap (err, "layer %zu", i + 1);
      /* A short blob is refused before it is read. */
      if ((uint64_t) st.st_size != m->layers[i].size)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                              "layer %zu: the blob of %s has %lld bytes, its descriptor says %llu", i + 1,
                              m->layers[i].digest, (long long) st.st_size, (unsigned long long) m->layers[i].size);
      if (stage_layer (root, fd, &m->layers[i], cfg->diff_ids ? cfg->diff_ids[i] : NULL, i, &l, err) < 0)
        return -1;
    }
  return finish_import (root, &l, cfg, ret, err);
}

/* The HEX of an archive path that names its own content: blobs/sha256/HEX,
 * or, for a config, docker's HEX.json. */
static const char *
content_hex (const char *p, bool config)
{
  static const char blobs[] = "blobs/sha256/";
  size_t n = strlen (p), b = strlen (blobs);
  if (n == b + 64 && strncmp (p, blobs, b) == 0 && is_lower_hex (p + b, 64))
    return p + b;
  if (config && n == 64 + 5 && strcmp (p + 64, ".json") == 0 && is_lower_hex (p, 64))
    return p;
  return NULL;
}

static int
read_docker_config (int dfd, const char *path, sbx_oci_config **ret, sbx_error **err)
{
  _cleanup_free_ char *text = NULL;
  size_t len;
  char hex[65];
  if (read_beneath (dfd, path, JSON_MAX, &text, &len, err) < 0)
    return sbx_error_wrap (err, "config");
  const char *named = content_hex (path, true);
  sha256_hex (text, len, hex);
  if (named && strncmp (named, hex, 64) != 0)
    {
      _cleanup_free_ char *name = printable (path);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "config `%s`: digest mismatch (it is sha256:%s)", name,
                            hex);
    }
  return sbx_oci_parse_config (text, len, ret, err);
}

/* docker save: manifest.json names the config and the layers by path; the
 * config's diff_ids are what the layers are checked against. */
static int
import_docker (const char *root, int dfd, sbx_image **ret, sbx_error **err)
{
  _cleanup_free_ char *text = NULL;
  _cleanup_docker_manifest_ sbx_docker_manifest *d = NULL;
  _cleanup_oci_config_ sbx_oci_config *cfg = NULL;
  size_t len;
  if (read_beneath (dfd, "manifest.json", JSON_MAX, &text, &len, err) < 0
      || sbx_docker_parse_manifest (text, len, &d, err) < 0 || read_docker_config (dfd, d->config, &cfg, err) < 0
      || check_platform (cfg, err) < 0)
    return -1;
  size_t n = strv_len (d->layers);
  if (n == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the image has no layers");
  if (cfg->diff_ids == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the config has no rootfs.diff_ids to check layers against");
  if (strv_len (cfg->diff_ids) != n)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the config lists %zu diff_ids for %zu layers",
                          strv_len (cfg->diff_ids), n);
  _cleanup_staged_list_ staged_list l = { .v = xmalloc0 (n * sizeof (sbx_layer_staged *)) };
  for (size_t i = 0; i < n; i++)
    {
      struct stat st;
      _cleanup_close_ int fd = open_beneath (dfd, d->layers[i], &st, err);
      if (fd < 0)
        return sbx_error_wrap (err, "layer %zu", i + 1);
      const char *hex = content_hex (d->layers[i], false);
      _cleanup_free_ char *digest = hex ? xasprintf (DIGEST_PREFIX "%.64s", hex) : NULL;
      sbx_oci_desc blob = { .digest = digest, .size = (uint64_t) st.st_size };
      if (stage_layer (root, fd, hex ? &blob : NULL, cfg->diff_ids[i], i, &l, err) < 0)
        return -1;
    }
  return finish_import (root, &l, cfg, ret, err);
}

static int
import_rootfs (const char *root, const char *path, sbx_image **ret, sbx_error **err)
{
  _cleanup_free_ char *digest = NULL;
  uint64_t size = 0;
  if (sbx_layer_import_tar (root, path, &digest, &size, err) < 0)
    return -1;
  _cleanup_image_ sbx_image *img = xmalloc0 (sizeof *img);
  img->layers = xmalloc0 (sizeof (char *));
  strv_push (&img->layers, digest);
  img->env = xmalloc0 (sizeof (char *));
  strv_push (&img->env, DEFAULT_PATH);
  img->workdir = xstrdup ("/");
  img->size = size;
  *ret = steal_pointer (&img);
  return 0;
}

static bool
has_docker_manifest (int dfd)
{
  _cleanup_free_ char *text = NULL;
  size_t len;
  return read_beneath (dfd, "manifest.json", JSON_MAX, &text, &len, NULL) == 0 && docker_manifest_shaped (text, len);
}

/* An image in DFD (a layout, or an archive unpacked): *ret_kind says which,
 * or stays ROOTFS when DFD holds neither. */
static int
import_from_dir (const char *root, int dfd, bool archive, sbx_image **ret, sbx_import_kind *ret_kind,
                 sbx_error **err)
{
  if (exists_beneath (dfd, "oci-layout") || (archive && exists_beneath (dfd, "index.json")))
    {
      *ret_kind = archive ? SBX_IMPORT_OCI_ARCHIVE : SBX_IMPORT_OCI_LAYOUT;
      return import_oci (root, dfd, ret, err);
    }
  if (has_docker_manifest (dfd))
    {
      *ret_kind = archive ? SBX_IMPORT_DOCKER_ARCHIVE : SBX_IMPORT_DOCKER_DIR;
      return import_docker (root, dfd, ret, err);
    }
  return 0;
}

int
sbx_oci_import (const char *root, const char *path, sbx_image **ret_img, sbx_import_kind *ret_kind,
                sbx_error **err)
{
  _cleanup_image_ sbx_image *img = NULL;
  _cleanup_workdir_ sbx_workdir w = SBX_WORKDIR_INIT;
  _cleanup_close_ int fd = -1;
  sbx_import_kind kind = SBX_IMPORT_ROOTFS;
  struct stat st;
  bool image = false;
  int r = 0;
  if (sbx_archive_load (err) < 0)
    return -1;
  /* By path first: opening a FIFO, even to look, would cost its writer. */
  bool found = stat (path, &st) == 0;
  if (found && S_ISDIR (st.st_mode))
    {
      fd = open (path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0)
        return sbx_error_errno (err, errno, "import `%s`: open", path);
      r = import_from_dir (root, fd, false, &img, &kind, err);
    }
  else if (found && S_ISREG (st.st_mode) && st.st_size > 0)
    {
      fd = open (path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
      if (fd < 0)
        return sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INTERNAL, errno, "import `%s`: open",
                              path);
      r = sbx_workdir_new (root, &w, err);
      if (r == 0)
        r = unpack_archive (fd, w.dfd, &image, err);
      if (r == 0 && image)
        r = import_from_dir (root, w.dfd, true, &img, &kind, err);
    }
  if (r < 0)
    return sbx_error_wrap (err, "import `%s`", path);
  sbx_workdir_cleanup (&w);
  if (kind == SBX_IMPORT_ROOTFS && import_rootfs (root, path, &img, err) < 0)
    return -1;
  *ret_img = steal_pointer (&img);
  *ret_kind = kind;
  return 0;
}

/* ---- export ---- */

/* A blob of the archive being written: a layer in a file, or a document. */
typedef struct out_blob {
  char hex[65];
  uint64_t size;
  int fd;     /* a layer's content, or -1 */
  char *data; /* a document's, or NULL */
  char *diff_id;
} out_blob;

static void
out_blob_clear (out_blob *b)
{
  if (b->fd >= 0)
    close (b->fd);
  b->fd = -1;
  free (b->data);
  free (b->diff_id);
  b->data = b->diff_id = NULL;
}
#define _cleanup_out_blob_ __attribute__ ((cleanup (out_blob_clear)))

typedef struct out_blobs {
  out_blob *v;
  size_t n;
} out_blobs;

static void
out_blobs_free (out_blobs *l)
{
  for (size_t i = 0; i < l->n; i++)
    out_blob_clear (&l->v[i]);
  free (l->v);
}
#define _cleanup_out_blobs_ __attribute__ ((cleanup (out_blobs_free)))

static void
out_blob_doc (out_blob *b, char *data, size_t len)
{
  b->fd = -1;
  b->data = data;
  b->size = len;
  sha256_hex (data, len, b->hex);
}

/* Output through a callback: bytes counted and hashed on the way. */
typedef struct sink {
  int fd;
  sha256_ctx sha;
  uint64_t len;
} sink;

static la_ssize_t
sink_write (struct archive *a, void *data, const void *buf, size_t len)
{
  sink *s = data;
  int r = write_all (s->fd, buf, len);
  if (r < 0)
    {
      sbx_ar.archive_set_error (a, -r, "write");
      return -1;
    }
  sha256_update (&s->sha, buf, len);
  s->len += len;
  return (la_ssize_t) len;
}

/* Reads FD to its end, hashing; each block also goes to A when given. */
static int
hash_stream (int fd, struct archive *a, char hex[65], uint64_t *ret_len, sbx_error **err)
{
  _cleanup_free_ char *buf = xmalloc (IO_BLOCK);
  sha256_ctx sha;
  uint64_t len = 0;
  sha256_init (&sha);
  for (;;)
    {
      ssize_t n = read (fd, buf, IO_BLOCK);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return sbx_error_errno (err, errno, "read layer.tar");
      if (n == 0)
        break;
      sha256_update (&sha, buf, (size_t) n);
      len += (uint64_t) n;
      if (a && sbx_ar.archive_write_data (a, buf, (size_t) n) != n)
        return sbx_archive_fail (err, a, "compress");
    }
  sha256_ctx_hex_final (&sha, hex);
  *ret_len = len;
  return 0;
}

/* gzip of TARFD into a new unnamed file in WORKFD: *ret_fd, with the
 * digests of both streams. No timestamp in the gzip header, so the same
 * layer compresses to the same blob; no padding after it either (libarchive
 * pads to a tar block by default, and Go's gzip reader, podman's, takes
 * trailing zeros for a broken next member). */
static int
gzip_layer (int tarfd, int workfd, out_blob *b, char diff_hex[65], sbx_error **err)
{
  _cleanup_close_ int out = openat (workfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (out < 0)
    return sbx_error_errno (err, errno, "temp file");
  sink s = { .fd = out };
  sha256_init (&s.sha);
  _cleanup_ar_write_ struct archive *a = sbx_ar.archive_write_new ();
  _cleanup_ar_entry_ struct archive_entry *e = sbx_ar.archive_entry_new ();
  uint64_t len;
  if (sbx_ar.archive_write_add_filter_gzip (a) != ARCHIVE_OK)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "libarchive has no built-in gzip support");
  if (sbx_ar.archive_write_set_format_raw (a) != ARCHIVE_OK
      || sbx_ar.archive_write_set_filter_option (a, "gzip", "timestamp", NULL) != ARCHIVE_OK
      || sbx_ar.archive_write_set_bytes_in_last_block (a, 1) != ARCHIVE_OK
      || sbx_ar.archive_write_open (a, &s, NULL, sink_write, NULL) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, "compress");
  sbx_ar.archive_entry_set_pathname (e, "layer.tar");
  sbx_ar.archive_entry_set_filetype (e, AE_IFREG);
  if (sbx_ar.archive_write_header (a, e) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, "compress");
  if (hash_stream (tarfd, a, diff_hex, &len, err) < 0)
    return -1;
  if (sbx_ar.archive_write_close (a) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, "compress");
  sha256_ctx_hex_final (&s.sha, b->hex);
  b->size = s.len;
  b->fd = steal_fd (&out);
  return 0;
}

/* Layer DIGEST as blob B, compressed or not; B's diff_id is the digest of
 * the tar that goes out, which is DIGEST only where that is a kept layer.tar. */
static int
layer_blob (const char *root, const char *digest, sbx_oci_compression comp, int workfd, out_blob *b,
            sbx_error **err)
{
  _cleanup_close_ int tarfd = -1;
  bool converted;
  char diff_hex[65];
  uint64_t len;
  b->fd = -1;
  if (sbx_layer_open_oci_tar (root, digest, workfd, &tarfd, &converted, err) < 0)
    return -1;
  if (comp == SBX_OCI_GZIP)
    {
      if (gzip_layer (tarfd, workfd, b, diff_hex, err) < 0)
        return sbx_error_wrap (err, "layer %s", digest);
    }
  else
    {
      if (hash_stream (tarfd, NULL, diff_hex, &len, err) < 0)
        return sbx_error_wrap (err, "layer %s", digest);
      memcpy (b->hex, diff_hex, sizeof b->hex);
      b->size = len;
      b->fd = steal_fd (&tarfd);
    }
  b->diff_id = xasprintf (DIGEST_PREFIX "%s", diff_hex);
  if (!converted && strcmp (b->diff_id, digest) != 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "layer %s is damaged: its layer.tar is %s", digest, b->diff_id);
  /* Best effort: without it, importing this tar makes a second copy. */
  if (converted)
    sbx_layer_alias (root, digest, b->diff_id, NULL);
  if (lseek (b->fd, 0, SEEK_SET) < 0)
    return sbx_error_errno (err, errno, "layer %s: seek", digest);
  return 0;
}

static char *
config_doc (const sbx_image *img, const out_blob *layers, size_t n, size_t *len)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  char created[32];
  format_time (img->created, created, sizeof created);
  j_map (g);
  j_kstr (g, "created", created);
  j_kstr (g, "architecture", sbx_oci_host_arch ());
  j_kstr (g, "os", "linux");
  j_str (g, "config");
  j_map (g);
  if (img->env && img->env[0])
    j_kstrv (g, "Env", img->env);
  if (img->cmd && img->cmd[0])
    j_kstrv (g, "Cmd", img->cmd);
  j_kstr (g, "WorkingDir", img->workdir && img->workdir[0] ? img->workdir : "/");
  if (img->user && img->user[0])
    j_kstr (g, "User", img->user);
  j_endmap (g);
  j_str (g, "rootfs");
  j_map (g);
  j_kstr (g, "type", "layers");
  j_str (g, "diff_ids");
  j_arr (g);
  for (size_t i = 0; i < n; i++)
    j_str (g, layers[i].diff_id);
  j_endarr (g);
  j_endmap (g);
  j_endmap (g);
  return j_take (g, len);
}

/* Opens a descriptor's map; the caller adds to it and closes it. */
static void
j_desc (yajl_gen g, const char *media_type, const out_blob *b)
{
  _cleanup_free_ char *digest = xasprintf (DIGEST_PREFIX "%s", b->hex);
  j_map (g);
  j_kstr (g, "mediaType", media_type);
  j_kstr (g, "digest", digest);
  j_kint (g, "size", (long long) b->size);
}

static char *
manifest_doc (const out_blob *config, const out_blob *layers, size_t n, sbx_oci_compression comp, size_t *len)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kint (g, "schemaVersion", 2);
  j_kstr (g, "mediaType", MT_OCI_MANIFEST);
  j_str (g, "config");
  j_desc (g, MT_OCI_CONFIG, config);
  j_endmap (g);
  j_str (g, "layers");
  j_arr (g);
  for (size_t i = 0; i < n; i++)
    {
      j_desc (g, comp == SBX_OCI_GZIP ? MT_OCI_LAYER_GZIP : MT_OCI_LAYER, &layers[i]);
      j_endmap (g);
    }
  j_endarr (g);
  j_endmap (g);
  return j_take (g, len);
}

static char *
index_doc (const out_blob *manifest, const char *ref_name, size_t *len)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kint (g, "schemaVersion", 2);
  j_kstr (g, "mediaType", MT_OCI_INDEX);
  j_str (g, "manifests");
  j_arr (g);
  j_desc (g, MT_OCI_MANIFEST, manifest);
  j_str (g, "platform");
  j_map (g);
  j_kstr (g, "architecture", sbx_oci_host_arch ());
  j_kstr (g, "os", "linux");
  j_endmap (g);
  j_str (g, "annotations");
  j_map (g);
  j_kstr (g, REF_NAME_ANNOTATION, ref_name);
  j_endmap (g);
  j_endmap (g);
  j_endarr (g);
  j_endmap (g);
  return j_take (g, len);
}

/* One member of the archive: a directory (SIZE 0, no content), or a file
 * from DATA or FD. */
static int
write_member (struct archive *a, const char *name, int64_t mtime, bool dir, const char *data, int fd, uint64_t size,
              sbx_error **err)
{
  _cleanup_ar_entry_ struct archive_entry *e = sbx_ar.archive_entry_new ();
  sbx_ar.archive_entry_set_pathname (e, name);
  sbx_ar.archive_entry_set_mode (e, dir ? (AE_IFDIR | 0755) : (AE_IFREG | 0644));
  sbx_ar.archive_entry_set_uid (e, 0);
  sbx_ar.archive_entry_set_gid (e, 0);
  sbx_ar.archive_entry_set_mtime (e, mtime, 0);
  sbx_ar.archive_entry_set_size (e, (la_int64_t) size);
  if (sbx_ar.archive_write_header (a, e) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, name);
  if (data && sbx_ar.archive_write_data (a, data, size) != (la_ssize_t) size)
    return sbx_archive_fail (err, a, name);
  if (fd < 0)
    return 0;
  _cleanup_free_ char *buf = xmalloc (IO_BLOCK);
  uint64_t done = 0;
  while (done < size)
    {
      ssize_t n = read (fd, buf, IO_BLOCK);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return sbx_error_errno (err, errno, "read %s", name);
      if (n == 0)
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s: shorter than it was", name);
      if ((uint64_t) n > size - done)
        n = (ssize_t) (size - done);
      if (sbx_ar.archive_write_data (a, buf, (size_t) n) != n)
        return sbx_archive_fail (err, a, name);
      done += (uint64_t) n;
    }
  return 0;
}

static int
write_blob (struct archive *a, const out_blob *b, int64_t mtime, sbx_error **err)
{
  _cleanup_free_ char *name = xasprintf ("blobs/sha256/%s", b->hex);
  return write_member (a, name, mtime, false, b->data, b->fd, b->size, err);
}

/* The archive into OUTFD: the layout's documents and every blob once. */
static int
write_oci_archive (int outfd, const out_blob *layers, size_t n, const out_blob *config, const out_blob *manifest,
                   const char *index, size_t index_len, int64_t mtime, sbx_error **err)
{
  static const char layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
  sink s = { .fd = outfd };
  sha256_init (&s.sha);
  _cleanup_ar_write_ struct archive *a = sbx_ar.archive_write_new ();
  sbx_ar.archive_write_set_format_pax_restricted (a);
  /* Names as the bytes they are: no conversion through the locale's
   * charset, which fails on a name that is not ASCII under C. */
  sbx_ar.archive_write_set_format_option (a, "pax", "hdrcharset", "BINARY");
  sbx_ar.archive_write_add_filter_none (a);
  if (sbx_ar.archive_write_open (a, &s, NULL, sink_write, NULL) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, "write");
  if (write_member (a, "oci-layout", mtime, false, layout, -1, strlen (layout), err) < 0
      || write_member (a, "blobs", mtime, true, NULL, -1, 0, err) < 0
      || write_member (a, "blobs/sha256", mtime, true, NULL, -1, 0, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    {
      bool seen = false;
      for (size_t k = 0; k < i && !seen; k++)
        seen = strcmp (layers[k].hex, layers[i].hex) == 0;
      if (!seen && write_blob (a, &layers[i], mtime, err) < 0)
        return -1;
    }
  if (write_blob (a, config, mtime, err) < 0 || write_blob (a, manifest, mtime, err) < 0
      || write_member (a, "index.json", mtime, false, index, -1, index_len, err) < 0)
    return -1;
  if (sbx_ar.archive_write_close (a) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, "write");
  return 0;
}

/* The file being written: removed unless renamed into place. */
typedef struct tmp_file {
  char *path;
  int fd;
} tmp_file;

static void
tmp_file_cleanup (tmp_file *t)
{
  if (t->fd >= 0)
    close (t->fd);
  if (t->path)
    unlink (t->path);
  free (t->path);
}
#define _cleanup_tmp_file_ __attribute__ ((cleanup (tmp_file_cleanup)))

static int
tmp_file_open (const char *path, tmp_file *t, sbx_error **err)
{
  struct stat st;
  if (stat (path, &st) == 0 && S_ISDIR (st.st_mode))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is a directory", path);
  _cleanup_free_ char *rnd = random_hex (8);
  _cleanup_free_ char *tmp = xasprintf ("%s.sbx-%s", path, rnd);
  t->fd = open (tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (t->fd < 0 && (errno == ENOENT || errno == ENOTDIR))
    return sbx_error_set (err, SBX_E_NOT_FOUND, errno, "the directory of `%s`", path);
  if (t->fd < 0)
    return sbx_error_errno (err, errno, "create `%s`", tmp);
  t->path = steal_pointer (&tmp);
  return 0;
}

static int
tmp_file_commit (tmp_file *t, const char *path, uint64_t *ret_size, sbx_error **err)
{
  struct stat st;
  if (fsync (t->fd) < 0 || fstat (t->fd, &st) < 0)
    return sbx_error_errno (err, errno, "write `%s`", t->path);
  if (rename (t->path, path) < 0)
    return sbx_error_errno (err, errno, "rename to `%s`", path);
  free (steal_pointer (&t->path));
  *ret_size = (uint64_t) st.st_size;
  return 0;
}

int
sbx_oci_export (const char *root, const sbx_image *img, const char *ref_name, sbx_oci_compression comp,
                const char *path, uint64_t *ret_size, sbx_error **err)
{
  size_t n = strv_len (img->layers);
  if (n == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "export to `%s`: the image has no layers", path);
  if (sbx_archive_load (err) < 0)
    return -1;
  _cleanup_workdir_ sbx_workdir w = SBX_WORKDIR_INIT;
  _cleanup_out_blobs_ out_blobs layers = { .v = xmalloc0 (n * sizeof (out_blob)) };
  _cleanup_out_blob_ out_blob config = { .fd = -1 };
  _cleanup_out_blob_ out_blob manifest = { .fd = -1 };
  _cleanup_tmp_file_ tmp_file out = { .path = NULL, .fd = -1 };
  _cleanup_free_ char *index = NULL;
  size_t len, index_len;
  if (sbx_workdir_new (root, &w, err) < 0)
    return sbx_error_wrap (err, "export to `%s`", path);
  for (size_t i = 0; i < n; i++)
    {
      layers.v[i].fd = -1;
      layers.n = i + 1;
      if (layer_blob (root, img->layers[i], comp, w.dfd, &layers.v[i], err) < 0)
        return sbx_error_wrap (err, "export to `%s`", path);
    }
  char *doc = config_doc (img, layers.v, n, &len);
  out_blob_doc (&config, doc, len);
  doc = manifest_doc (&config, layers.v, n, comp, &len);
  out_blob_doc (&manifest, doc, len);
  index = index_doc (&manifest, ref_name, &index_len);
  if (tmp_file_open (path, &out, err) < 0
      || write_oci_archive (out.fd, layers.v, n, &config, &manifest, index, index_len, img->created, err) < 0
      || tmp_file_commit (&out, path, ret_size, err) < 0)
    return sbx_error_wrap (err, "export to `%s`", path);
  return 0;
}
