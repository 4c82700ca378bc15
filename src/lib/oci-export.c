/* Export: an image as the OCI archive podman and docker load, each layer
 * written from its files (or its kept layer.tar), gzip-compressed by default. */
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

/* ---- export ---- */

void
oci_blob_clear (oci_blob *b)
{
  if (b->fd >= 0)
    close (b->fd);
  b->fd = -1;
  free (b->data);
  free (b->diff_id);
  b->data = b->diff_id = NULL;
}

void
oci_blob_doc (oci_blob *b, char *data, size_t len)
{
  b->fd = -1;
  b->data = data;
  b->size = len;
  sha256_hex (data, len, b->hex);
}

typedef struct out_blobs {
  oci_blob *v;
  size_t n;
} out_blobs;

static void
out_blobs_free (out_blobs *l)
{
  for (size_t i = 0; i < l->n; i++)
    oci_blob_clear (&l->v[i]);
  free (l->v);
}
#define _cleanup_out_blobs_ __attribute__ ((cleanup (out_blobs_free)))

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
gzip_layer (int tarfd, int workfd, oci_blob *b, char diff_hex[65], sbx_error **err)
{
  _cleanup_close_ int out = openat (workfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (out < 0)
    return sbx_error_errno (err, errno, "temp file");
  sink s = { .fd = out };
  sha256_init (&s.sha);
  _cleanup_archive_write_ struct archive *a = sbx_ar.archive_write_new ();
  _cleanup_archive_entry_ struct archive_entry *e = sbx_ar.archive_entry_new ();
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
int
oci_layer_blob (const char *root, const char *digest, sbx_oci_compression comp, int workfd, oci_blob *b,
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

char *
oci_config_doc (const sbx_image *img, const oci_blob *layers, size_t n, size_t *len)
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
j_desc (yajl_gen g, const char *media_type, const oci_blob *b)
{
  _cleanup_free_ char *digest = xasprintf (DIGEST_PREFIX "%s", b->hex);
  j_map (g);
  j_kstr (g, "mediaType", media_type);
  j_kstr (g, "digest", digest);
  j_kint (g, "size", (long long) b->size);
}

char *
oci_manifest_doc (const oci_blob *config, const oci_blob *layers, size_t n, sbx_oci_compression comp, size_t *len)
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
index_doc (const oci_blob *manifest, const char *ref_name, size_t *len)
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
  _cleanup_archive_entry_ struct archive_entry *e = sbx_ar.archive_entry_new ();
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
write_blob (struct archive *a, const oci_blob *b, int64_t mtime, sbx_error **err)
{
  _cleanup_free_ char *name = xasprintf ("blobs/sha256/%s", b->hex);
  return write_member (a, name, mtime, false, b->data, b->fd, b->size, err);
}

/* The archive into OUTFD: the layout's documents and every blob once. */
static int
write_oci_archive (int outfd, const oci_blob *layers, size_t n, const oci_blob *config, const oci_blob *manifest,
                   const char *index, size_t index_len, int64_t mtime, sbx_error **err)
{
  static const char layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
  sink s = { .fd = outfd };
  sha256_init (&s.sha);
  _cleanup_archive_write_ struct archive *a = sbx_ar.archive_write_new ();
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
  _cleanup_out_blobs_ out_blobs layers = { .v = xmalloc0 (n * sizeof (oci_blob)) };
  _cleanup_oci_blob_ oci_blob config = { .fd = -1 };
  _cleanup_oci_blob_ oci_blob manifest = { .fd = -1 };
  _cleanup_tmp_file_ tmp_file out = { .path = NULL, .fd = -1 };
  _cleanup_free_ char *index = NULL;
  size_t len, index_len;
  if (sbx_workdir_new (root, &w, err) < 0)
    return sbx_error_wrap (err, "export to `%s`", path);
  for (size_t i = 0; i < n; i++)
    {
      layers.v[i].fd = -1;
      layers.n = i + 1;
      if (oci_layer_blob (root, img->layers[i], comp, w.dfd, &layers.v[i], err) < 0)
        return sbx_error_wrap (err, "export to `%s`", path);
    }
  char *doc = oci_config_doc (img, layers.v, n, &len);
  oci_blob_doc (&config, doc, len);
  doc = oci_manifest_doc (&config, layers.v, n, comp, &len);
  oci_blob_doc (&manifest, doc, len);
  index = index_doc (&manifest, ref_name, &index_len);
  if (tmp_file_open (path, &out, err) < 0
      || write_oci_archive (out.fd, layers.v, n, &config, &manifest, index, index_len, img->created, err) < 0
      || tmp_file_commit (&out, path, ret_size, err) < 0)
    return sbx_error_wrap (err, "export to `%s`", path);
  return 0;
}
