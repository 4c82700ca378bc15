/* Imports: a tarball (or a stream) becomes a layer in the store, in one
 * call or in steps (staged) for a caller that checks several layers' digests
 * before it installs them. */
#include "config.h"
#include "layer-internal.h"
#include "layer.h"
#include "fs.h"
#include "sha256.h"
#include "util.h"

#include <archive_entry.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>

/* The size of an existing layer, from its tar's headers alone. */
static int
tar_size (int tarfd, uint64_t *ret_size, sbx_error **err)
{
  _cleanup_archive_read_ struct archive *ar = open_tar_reader (tarfd, err);
  uint64_t size = 0;
  if (ar == NULL)
    return -1;
  for (;;)
    {
      struct archive_entry *e;
      _cleanup_free_ char *path = NULL;
      int r = sbx_ar.archive_read_next_header (ar, &e);
      if (r == ARCHIVE_EOF)
        break;
      if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
        return sbx_archive_fail (err, ar, "read");
      if (classify_entry (e, &path, NULL) == ENTRY_WRITE && entry_counts_in_size (e))
        size += (uint64_t) sbx_ar.archive_entry_size (e);
    }
  *ret_size = size;
  return 0;
}

static int
open_rootfs (tmp_layer *t, sbx_error **err)
{
  int fd = openat (t->dfd, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open rootfs");
  return fd;
}

/* T's layer.tar is complete and HEX names it: extracts it into T's rootfs,
 * unless the store has that layer already (*ret_reuse). */
static int
extract_layer (const char *root, tmp_layer *t, const char *hex, bool *ret_reuse, uint64_t *ret_size, sbx_error **err)
{
  _cleanup_free_ char *digest = xasprintf (DIGEST_PREFIX "%s", hex);
  _cleanup_close_ int tarfd = openat (t->dfd, "layer.tar", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (tarfd < 0)
    return sbx_error_errno (err, errno, "open layer.tar");
  *ret_reuse = layer_usable (root, digest);
  if (*ret_reuse)
    return tar_size (tarfd, ret_size, err);
  _cleanup_close_ int rootfd = open_rootfs (t, err);
  _cleanup_extractor_ extractor x = EXTRACTOR_INIT;
  helper_result res;
  if (rootfd < 0 || extractor_start (rootfd, tarfd, &x, err) < 0 || extractor_finish (&x, &res, err) < 0
      || helper_result_take (&res, err) < 0)
    return -1;
  *ret_size = res.size;
  return 0;
}

/* The tail of the busybox layer: extracts and installs T, or reuses the
 * layer the store has. */
int
finish_layer (const char *root, tmp_layer *t, const char *hex, char **ret_digest, uint64_t *ret_size, sbx_error **err)
{
  bool reuse;
  uint64_t size = 0;
  if (extract_layer (root, t, hex, &reuse, &size, err) < 0
      || (!reuse && tmp_layer_install (root, t, hex, size, true, err) < 0))
    return -1;
  *ret_digest = xasprintf (DIGEST_PREFIX "%s", hex);
  *ret_size = size;
  return 0;
}

/* ---- staged imports ---- */

/* The whole of one import but the install: INFD read once, its plain tar
 * hashed here and extracted into T's rootfs by the helper at the same time.
 * The extraction's verdict is in *RET_RES. */
static int
stream_layer (tmp_layer *t, int infd, stream_sums *ret, helper_result *ret_res, sbx_error **err)
{
  _cleanup_close_ int rootfd = open_rootfs (t, err);
  _cleanup_extractor_ extractor x = EXTRACTOR_INIT;
  tar_sinks k = { .x = &x };
  if (rootfd < 0 || extractor_start (rootfd, -1, &x, err) < 0)
    return -1;
#ifdef SBX_LAYER_FUZZING
  _cleanup_close_ int copyfd = openat (t->dfd, FUZZ_STREAM, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (copyfd < 0)
    return sbx_error_errno (err, errno, "create " FUZZ_STREAM);
  k.copyfd = copyfd;
  int r = read_input (infd, &k, ret, err) < 0 ? -1 : extractor_finish (&x, ret_res, err);
  unlinkat (t->dfd, FUZZ_STREAM, 0);
  return r;
#else
  if (read_input (infd, &k, ret, err) < 0)
    return -1;
  return extractor_finish (&x, ret_res, err);
#endif
}

struct sbx_layer_staged {
  tmp_layer t;
  char *digest;
  char *name; /* the layer in the store: DIGEST, or the one an alias names */
  char *blob_digest;
  uint64_t blob_size;
  uint64_t size;
  helper_result result; /* when streamed: the extraction's */
  bool streamed;        /* false: only hashed, the store had the layer KNOWN */
  bool extracted;
  bool reuse;
};

void
sbx_layer_staged_free (sbx_layer_staged *s)
{
  if (s == NULL)
    return;
  sbx_workdir_cleanup (&s->t);
  free (s->digest);
  free (s->name);
  free (s->blob_digest);
  free (s);
}

int
sbx_layer_stage (const char *root, int fd, const char *known, sbx_layer_staged **ret, sbx_error **err)
{
  if (sbx_archive_load (err) < 0)
    return -1;
  _cleanup_layer_staged_ sbx_layer_staged *s = xmalloc0 (sizeof *s);
  s->t = (tmp_layer) TMP_LAYER_INIT;
  stream_sums sums;
  tar_sinks hash_only = { 0 };
  if (tmp_layer_new (root, &s->t, err) < 0)
    return -1;
  _cleanup_free_ char *known_alias = known ? alias_target (root, known) : NULL;
  s->streamed = !(known && (layer_usable (root, known) || known_alias));
  if (s->streamed ? stream_layer (&s->t, fd, &sums, &s->result, err) < 0 : read_input (fd, &hash_only, &sums, err) < 0)
    return -1;
  s->digest = xasprintf (DIGEST_PREFIX "%s", sums.hex);
  s->name = xstrdup (s->digest);
  s->blob_digest = xasprintf (DIGEST_PREFIX "%s", sums.blob_hex);
  s->blob_size = sums.blob_len;
  *ret = steal_pointer (&s);
  return 0;
}

const char *
sbx_layer_staged_digest (const sbx_layer_staged *s)
{
  return s->digest;
}

const char *
sbx_layer_staged_name (const sbx_layer_staged *s)
{
  return s->name;
}

const char *
sbx_layer_staged_blob (const sbx_layer_staged *s, uint64_t *ret_size)
{
  if (ret_size)
    *ret_size = s->blob_size;
  return s->blob_digest;
}

/* The size of a layer the store has: as our extraction counted it, as its
 * size file says, or (a layer an older sbx made) from the headers of its
 * layer.tar. */
static int
reused_size (const char *root, sbx_layer_staged *s, sbx_error **err)
{
  if (s->streamed && s->result.code == SBX_OK)
    {
      s->size = s->result.size;
      return 0;
    }
  _cleanup_free_ char *dir = sbx_layer_dir (root, s->name);
  _cleanup_free_ char *szpath = xasprintf ("%s/" SIZE_FILE, dir);
  _cleanup_free_ char *sz = NULL;
  int64_t v;
  if (read_file (szpath, 64, &sz, NULL, NULL) == 0)
    {
      sz[strcspn (sz, "\n")] = '\0';
      if (parse_int64 (sz, 0, INT64_MAX, &v) == 0)
        {
          s->size = (uint64_t) v;
          return 0;
        }
    }
  _cleanup_free_ char *tar = xasprintf ("%s/layer.tar", dir);
  _cleanup_close_ int fd = open (tar, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open `%s`", tar);
  return tar_size (fd, &s->size, err);
}

/* The extraction happened while staging; this reports it, unless the store
 * has the layer already, which is then used instead. */
int
sbx_layer_staged_extract (const char *root, sbx_layer_staged *s, sbx_error **err)
{
  s->reuse = layer_usable (root, s->digest);
  _cleanup_free_ char *target = s->reuse ? NULL : alias_target (root, s->digest);
  if (target)
    {
      free (s->name);
      s->name = steal_pointer (&target);
      s->reuse = true;
    }
  if (s->reuse && reused_size (root, s, err) < 0)
    return -1;
  if (!s->reuse && !s->streamed)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "layer %s: not extracted (it is not the layer it was said to be)",
                          s->digest);
  if (!s->reuse && helper_result_take (&s->result, err) < 0)
    return -1;
  if (!s->reuse)
    s->size = s->result.size;
  s->extracted = true;
  return 0;
}

int
sbx_layer_staged_install (const char *root, sbx_layer_staged *s, uint64_t *ret_size, sbx_error **err)
{
  if (!s->extracted)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "layer %s: installed before it was extracted", s->digest);
  if (!s->reuse && tmp_layer_install (root, &s->t, digest_hex (s->digest), s->size, false, err) < 0)
    return -1;
  if (ret_size)
    *ret_size = s->size;
  return 0;
}

int
sbx_layer_import_fd (const char *root, int fd, char **ret_digest, uint64_t *ret_size, sbx_error **err)
{
  _cleanup_layer_staged_ sbx_layer_staged *s = NULL;
  uint64_t size = 0;
  if (sbx_layer_stage (root, fd, NULL, &s, err) < 0 || sbx_layer_staged_extract (root, s, err) < 0
      || sbx_layer_staged_install (root, s, &size, err) < 0)
    return -1;
  if (!s->reuse)
    sbx_layer_settle_later (root);
  *ret_digest = xstrdup (s->name);
  *ret_size = size;
  return 0;
}

int
sbx_layer_import_tar (const char *root, const char *tarpath, char **ret_digest, uint64_t *ret_size, sbx_error **err)
{
  _cleanup_close_ int infd = open (tarpath, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (infd < 0)
    sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INTERNAL, errno, "open");
  else if (fstat (infd, &st) < 0)
    sbx_error_errno (err, errno, "stat");
  else if (S_ISDIR (st.st_mode))
    sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "is a directory");
  else if (S_ISREG (st.st_mode) && st.st_size == 0)
    sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "empty archive");
  else if (sbx_layer_import_fd (root, infd, ret_digest, ret_size, err) == 0)
    return 0;
  return sbx_error_wrap (err, "import `%s`", tarpath);
}
