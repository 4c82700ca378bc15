/* OCI and docker documents: media types, and the index, manifest, config
 * and docker manifest parsed into typed structs at one place, bounded in
 * size and depth; the platform picked from an index. */
#include "config.h"
#include "oci-internal.h"
#include "oci.h"
#include "json.h"
#include "layer.h"
#include "sha256.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

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

bool
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
  _cleanup_free_ char *name = printable_masked (d, 120, "(none)");
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

bool
mt_is_index (const char *mt)
{
  return mt && (strcmp (mt, MT_OCI_INDEX) == 0 || strcmp (mt, MT_DOCKER_LIST) == 0);
}

bool
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

int
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
  *d = (sbx_oci_desc){ 0 };
}

void
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

char *
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
  *d = (sbx_oci_desc){ .media_type = dup_or_null (mt),
                       .digest = xstrdup (digest),
                       .size = (uint64_t) size,
                       .os = dup_or_null (os),
                       .arch = dup_or_null (arch) };
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
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: schemaVersion %lld is not 2", what, (long long) version);
  if (mt && !type_ok (mt))
    {
      _cleanup_free_ char *name = printable_masked (mt, 120, "(none)");
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
      _cleanup_free_ char *name = printable_masked (m->config.media_type, 120, "(none)");
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
          _cleanup_free_ char *name = printable_masked (m->layers[i].media_type, 120, "(none)");
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
        _cleanup_free_ char *name = printable_masked (cfg->env[i], 120, "(none)");
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
bool
docker_manifest_shaped (const char *text, size_t len)
{
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (parse_json (text, len, "manifest.json", &v, NULL) < 0 || !YAJL_IS_ARRAY (v) || v->u.array.len == 0)
    return false;
  yajl_val first = v->u.array.values[0];
  return YAJL_IS_OBJECT (first) && j_get (first, "Config") && j_get (first, "Layers");
}

int
check_archive_path (const char *p, const char *what, sbx_error **err)
{
  if (sbx_oci_path_ok (p))
    return 0;
  _cleanup_free_ char *name = printable_masked (p, 120, "(none)");
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
                          "manifest.json: the archive holds %zu images; sbx imports an archive of one", v->u.array.len);
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
      _cleanup_free_ char *os = printable_masked (v[i].os, 120, "(none)"),
                          *a = printable_masked (v[i].arch, 120, "(none)");
      char *l = xasprintf ("%s%s%s/%s", list, i ? ", " : "", os, a);
      free (list);
      list = l;
    }
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "no image for linux/%s in the index (it has: %s)", arch,
                        n ? list : "nothing");
}
