/* Import of OCI image layouts and archives and docker save archives: a
 * layout read beneath its directory, an archive unpacked first, every blob
 * and layer checked against its digests, all layers installed or none. */
#include "config.h"
#include "oci-internal.h"
#include "openat.h"
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

/* ---- reading a layout ---- */

/* REL beneath the layout DFD, a regular file: a symlink in a user's layout may
 * point within it, never out of it (or through /proc). A FIFO does not block
 * the open. */
static int
open_beneath (int dfd, const char *rel, struct stat *ret_st, sbx_error **err)
{
  _cleanup_free_ char *name = printable_masked (rel, 120, "(none)");
  int fd = sbx_openat2 (dfd, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
  if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is missing", name);
  if (fd < 0 && (errno == EXDEV || errno == ELOOP))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` leads out of the image", name);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open `%s`", name);
  _cleanup_close_ int f = fd;
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
  _cleanup_free_ char *name = printable_masked (rel, 120, "(none)");
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
          _cleanup_free_ char *pname = printable_masked (name, 120, "(none)");
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
  _cleanup_free_ char *base = NULL, *pname = printable_masked (name, 120, "(none)");
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
  l->v[l->n++] = (pending_link){ .path = xstrdup (path), .target = target };
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
          _cleanup_free_ char *base = NULL, *pname = printable_masked (l->v[i].path, 120, "(none)");
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
unpack_member (struct archive *a, struct archive_entry *e, int dfd, const char *name, link_list *links, sbx_error **err)
{
  _cleanup_free_ char *pname = printable_masked (name, 120, "(none)");
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
  _cleanup_archive_read_ struct archive *a = sbx_ar.archive_read_new ();
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
  _cleanup_free_ char *os = printable_masked (cfg->os, 120, "(none)"), *a = printable_masked (cfg->arch, 120, "(none)");
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
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "layer %zu: the blob has %llu bytes, its descriptor says %llu", i + 1,
                          (unsigned long long) size, (unsigned long long) blob->size);
  if (diff_id && strcmp (sbx_layer_staged_digest (s), diff_id) != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "layer %zu: digest mismatch: its tar is %s, the config's diff_id says %s", i + 1,
                          sbx_layer_staged_digest (s), diff_id);
  return 0;
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
  if (strv_env_get (img->env, "PATH") == NULL)
    strv_push (&img->env, "PATH=" SBX_DEFAULT_PATH);
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
      _cleanup_free_ char *name = printable_masked (version, 120, "(none)");
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
      _cleanup_free_ char *name = printable_masked (path, 120, "(none)");
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
  strv_push (&img->env, "PATH=" SBX_DEFAULT_PATH);
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
import_from_dir (const char *root, int dfd, bool archive, sbx_image **ret, sbx_import_kind *ret_kind, sbx_error **err)
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
sbx_oci_import (const char *root, const char *path, sbx_image **ret_img, sbx_import_kind *ret_kind, sbx_error **err)
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
