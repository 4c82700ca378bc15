/* Layers as tars: a directory tree written as a tar (export, commit, the
 * busybox layer), and a layer's tar as an OCI image carries it, with overlay
 * whiteouts turned into OCI ones. */
#include "config.h"
#include "userns.h"
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

la_ssize_t
tar_sink_write (struct archive *a, void *data, const void *buf, size_t len)
{
  tar_sink *s = data;
  int r = write_all (s->fd, buf, len);
  if (r < 0)
    {
      sbx_ar.archive_set_error (a, -r, "write the tar");
      return -1;
    }
  if (s->hash)
    sha256_update (&s->sha, buf, len);
  return (la_ssize_t) len;
}

/* ---- a directory tree as a tar ---- */

typedef struct tar_out {
  struct archive *a;
  tar_sink sink;
  bool upper, skip_special;
  uint32_t userns_base; /* a sandbox's host id range: its files' ids as it sees them (userns.h) */
  /* hard links: (dev, ino) of files with several links -> their first path */
  struct {
    dev_t dev;
    ino_t ino;
    char *path;
  } * links;
  size_t nlinks;
} tar_out;

static int
tar_fail (sbx_error **err, struct archive *a, const char *what)
{
  return sbx_error_set (err, SBX_E_INTERNAL, sbx_ar.archive_errno (a), "%s: %s", what,
                        sbx_ar.archive_error_string (a) ? sbx_ar.archive_error_string (a) : "archive error");
}

/* E gets the extended attributes of FD that a layer keeps (xattr_allowed). */
static int
entry_add_xattrs (struct archive_entry *e, int fd, const char *path, sbx_error **err)
{
  ssize_t n = flistxattr (fd, NULL, 0);
  if (n < 0 && (errno == ENOTSUP || errno == ENODATA))
    return 0;
  _cleanup_free_ char *list = n > 0 ? xmalloc ((size_t) n) : NULL;
  if (n > 0)
    n = flistxattr (fd, list, (size_t) n);
  if (n < 0)
    return sbx_error_errno (err, errno, "list the xattrs of `%s`", path);
  for (char *name = list; name && name < list + n; name += strlen (name) + 1)
    {
      if (!xattr_allowed (name))
        continue;
      ssize_t len = fgetxattr (fd, name, NULL, 0);
      _cleanup_free_ char *v = len >= 0 ? xmalloc ((size_t) len + 1) : NULL;
      if (len > 0)
        len = fgetxattr (fd, name, v, (size_t) len);
      if (len < 0)
        return sbx_error_errno (err, errno, "read xattr %s of `%s`", name, path);
      sbx_ar.archive_entry_xattr_add_entry (e, name, v, (size_t) len);
    }
  return 0;
}

/* One header; XFD (or -1) gives the entry's extended attributes. */
static int
tar_header (tar_out *t, const char *path, const struct stat *st, mode_t type, int64_t size, const char *symlink,
            const char *hardlink, int xfd, sbx_error **err)
{
  struct archive_entry *e = sbx_ar.archive_entry_new ();
  sbx_ar.archive_entry_set_pathname (e, path);
  sbx_ar.archive_entry_set_filetype (e, type);
  sbx_ar.archive_entry_set_perm (e, st ? st->st_mode & 07777 : 0644);
  sbx_ar.archive_entry_set_uid (e, st ? sbx_userns_inside (t->userns_base, st->st_uid) : 0);
  sbx_ar.archive_entry_set_gid (e, st ? sbx_userns_inside (t->userns_base, st->st_gid) : 0);
  sbx_ar.archive_entry_set_mtime (e, st ? st->st_mtim.tv_sec : 0, st ? st->st_mtim.tv_nsec : 0);
  sbx_ar.archive_entry_set_size (e, size);
  if (symlink)
    sbx_ar.archive_entry_set_symlink (e, symlink);
  if (hardlink)
    sbx_ar.archive_entry_set_hardlink (e, hardlink);
  int r = xfd >= 0 ? entry_add_xattrs (e, xfd, path, err) : 0;
  if (r == 0 && sbx_ar.archive_write_header (t->a, e) != ARCHIVE_OK)
    r = tar_fail (err, t->a, path);
  sbx_ar.archive_entry_free (e);
  return r;
}

static int
tar_data (tar_out *t, int fd, int64_t size, const char *path, sbx_error **err)
{
  static char buf[1 << 16];
  int64_t done = 0;
  while (done < size)
    {
      ssize_t n = read (fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, n < 0 ? errno : 0, "`%s` changed while it was read", path);
      if (n > size - done)
        n = (ssize_t) (size - done);
      if (sbx_ar.archive_write_data (t->a, buf, (size_t) n) != n)
        return tar_fail (err, t->a, path);
      done += n;
    }
  return 0;
}

static int tar_tree (tar_out *t, int dfd, const char *prefix, int depth, sbx_error **err);

/* One entry NAME of directory DFD, archived as PATH. */
static int
tar_entry (tar_out *t, int dfd, const char *name, const char *path, int depth, sbx_error **err)
{
  struct stat st;
  if (fstatat (dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return sbx_error_errno (err, errno, "stat `%s`", path);
  if (S_ISDIR (st.st_mode))
    {
      if (depth >= ENTRY_DEPTH_MAX)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s`: nested deeper than %d", path, ENTRY_DEPTH_MAX);
      int sub = openat (dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0)
        return sbx_error_errno (err, errno, "open `%s`", path);
      _cleanup_free_ char *dpath = xasprintf ("%s/", path);
      int r = tar_header (t, dpath, &st, AE_IFDIR, 0, NULL, NULL, sub, err);
      char v[2];
      if (r == 0 && t->upper && fgetxattr (sub, "trusted.overlay.opaque", v, sizeof v) == 1 && v[0] == 'y')
        {
          /* Opaque: nothing below shows through, as OCI says it. */
          _cleanup_free_ char *opq = xasprintf ("%s/.wh..wh..opq", path);
          r = tar_header (t, opq, NULL, AE_IFREG, 0, NULL, NULL, -1, err);
        }
      if (r == 0)
        r = tar_tree (t, sub, path, depth + 1, err);
      else
        close (sub);
      return r;
    }
  if (S_ISLNK (st.st_mode))
    {
      char target[4096];
      ssize_t n = readlinkat (dfd, name, target, sizeof target - 1);
      if (n < 0)
        return sbx_error_errno (err, errno, "readlink `%s`", path);
      target[n] = '\0';
      return tar_header (t, path, &st, AE_IFLNK, 0, target, NULL, -1, err);
    }
  if (S_ISCHR (st.st_mode) && t->upper && major (st.st_rdev) == 0 && minor (st.st_rdev) == 0)
    {
      /* An overlay whiteout: the OCI form is an empty .wh.NAME. */
      const char *slash = strrchr (path, '/');
      _cleanup_free_ char *wh = slash ? xasprintf ("%.*s/.wh.%s", (int) (slash - path), path, slash + 1)
                                      : xasprintf (".wh.%s", path);
      return tar_header (t, wh, NULL, AE_IFREG, 0, NULL, NULL, -1, err);
    }
  if (!S_ISREG (st.st_mode))
    {
      if (t->skip_special)
        return 0;
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                            "`%s` is a device, FIFO or socket: a layer holds files, directories and links only", path);
    }
  if (st.st_nlink > 1)
    {
      for (size_t i = 0; i < t->nlinks; i++)
        if (t->links[i].dev == st.st_dev && t->links[i].ino == st.st_ino)
          return tar_header (t, path, &st, AE_IFREG, 0, NULL, t->links[i].path, -1, err);
      t->links = xrealloc (t->links, (t->nlinks + 1) * sizeof *t->links);
      t->links[t->nlinks].dev = st.st_dev;
      t->links[t->nlinks].ino = st.st_ino;
      t->links[t->nlinks++].path = xstrdup (path);
    }
  _cleanup_close_ int fd = openat (dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  struct stat st2;
  if (fd < 0 || fstat (fd, &st2) < 0 || st2.st_ino != st.st_ino || !S_ISREG (st2.st_mode))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, fd < 0 ? errno : 0, "`%s` changed while it was read", path);
  if (tar_header (t, path, &st, AE_IFREG, st.st_size, NULL, NULL, fd, err) < 0)
    return -1;
  return tar_data (t, fd, st.st_size, path, err);
}

/* Every entry of directory DFD (owned, closed here), sorted by name. */
static int
tar_tree (tar_out *t, int dfd, const char *prefix, int depth, sbx_error **err)
{
  _cleanup_closedir_ DIR *d = fdopendir (dfd);
  if (d == NULL)
    {
      close (dfd);
      return sbx_error_errno (err, errno, "opendir `%s`", prefix);
    }
  size_t n;
  _cleanup_strv_ char **names = sbx_dir_sorted (d, NULL, NULL, &n);
  int r = 0;
  for (size_t i = 0; i < n && r == 0; i++)
    {
      _cleanup_free_ char *path = prefix[0] ? xasprintf ("%s/%s", prefix, names[i]) : xstrdup (names[i]);
      r = tar_entry (t, dirfd (d), names[i], path, depth, err);
    }
  return r;
}

int
sbx_tar_from_dir (int dirfd_, int outfd, bool upper, bool skip_special, sbx_error **err)
{
  return sbx_tar_from_dir_ids (dirfd_, outfd, upper, skip_special, 0, err);
}

int
sbx_tar_from_dir_ids (int dirfd_, int outfd, bool upper, bool skip_special, uint32_t userns_base, sbx_error **err)
{
  if (sbx_archive_load (err) < 0)
    return -1;
  tar_out t = { .sink = { .fd = outfd }, .upper = upper, .skip_special = skip_special, .userns_base = userns_base };
  t.a = sbx_ar.archive_write_new ();
  sbx_ar.archive_write_set_format_pax_restricted (t.a);
  /* Names as the bytes they are: no conversion through the locale's
   * charset, which fails on a name that is not ASCII under C. */
  sbx_ar.archive_write_set_format_option (t.a, "pax", "hdrcharset", "BINARY");
  sbx_ar.archive_write_add_filter_none (t.a);
  int r = 0;
  if (sbx_ar.archive_write_open (t.a, &t.sink, NULL, tar_sink_write, NULL) != ARCHIVE_OK)
    r = tar_fail (err, t.a, "write the layer");
  int dfd = r == 0 ? dup (dirfd_) : -1;
  if (r == 0 && dfd < 0)
    r = sbx_error_errno (err, errno, "dup");
  if (r == 0)
    r = tar_tree (&t, dfd, "", 0, err);
  if (r == 0 && sbx_ar.archive_write_close (t.a) != ARCHIVE_OK)
    r = tar_fail (err, t.a, "write the layer");
  sbx_ar.archive_write_free (t.a);
  for (size_t i = 0; i < t.nlinks; i++)
    free (t.links[i].path);
  free (t.links);
  return r;
}

/* ---- layers on their way out (OCI export) ---- */

/* Whether the tar in TARFD holds overlay whiteouts (0:0 character devices):
 * import keeps the stream it was given, with its OCI whiteouts, and refuses
 * devices, so only another producer of layer.tar could have written them. */
static int
tar_has_overlay_whiteouts (int tarfd, bool *ret, sbx_error **err)
{
  _cleanup_archive_read_ struct archive *ar = open_tar_reader (tarfd, err);
  if (ar == NULL)
    return -1;
  *ret = false;
  for (;;)
    {
      struct archive_entry *e;
      int r = sbx_ar.archive_read_next_header (ar, &e);
      if (r == ARCHIVE_EOF)
        return 0;
      if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
        return sbx_archive_fail (err, ar, "read layer.tar");
      if (sbx_ar.archive_entry_filetype (e) == AE_IFCHR && sbx_ar.archive_entry_rdev (e) == 0)
        *ret = true;
    }
}

/* Removes the overlay opaque mark from E's xattrs; true when it had it. */
static bool
take_opaque_xattr (struct archive_entry *e)
{
  if (sbx_ar.archive_entry_xattr_reset (e) <= 0)
    return false;
  _cleanup_archive_entry_ struct archive_entry *kept = sbx_ar.archive_entry_new ();
  const char *name;
  const void *value;
  size_t size;
  bool opaque = false;
  while (sbx_ar.archive_entry_xattr_next (e, &name, &value, &size) == ARCHIVE_OK)
    if (strcmp (name, OPAQUE_XATTR) == 0)
      opaque = true;
    else
      sbx_ar.archive_entry_xattr_add_entry (kept, name, value, size);
  if (!opaque)
    return false;
  sbx_ar.archive_entry_xattr_clear (e);
  sbx_ar.archive_entry_xattr_reset (kept);
  while (sbx_ar.archive_entry_xattr_next (kept, &name, &value, &size) == ARCHIVE_OK)
    sbx_ar.archive_entry_xattr_add_entry (e, name, value, size);
  return true;
}

/* E becomes the empty regular file NAME: an OCI whiteout. */
static void
make_oci_marker (struct archive_entry *e, const char *name)
{
  sbx_ar.archive_entry_set_filetype (e, AE_IFREG);
  sbx_ar.archive_entry_set_perm (e, 0644);
  sbx_ar.archive_entry_set_rdev (e, 0);
  sbx_ar.archive_entry_set_size (e, 0);
  sbx_ar.archive_entry_set_hardlink (e, NULL);
  sbx_ar.archive_entry_set_symlink (e, NULL);
  sbx_ar.archive_entry_xattr_clear (e);
  sbx_ar.archive_entry_set_pathname (e, name);
}

/* Copies an entry's data, holes written as zeros (a tar writer takes data
 * in order). */
static int
copy_entry_data_dense (struct archive *ar, struct archive *aw, sbx_error **err)
{
  static const char zeros[4096];
  uint64_t pos = 0;
  for (;;)
    {
      const void *buf;
      size_t n;
      la_int64_t off;
      int r = sbx_ar.archive_read_data_block (ar, &buf, &n, &off);
      if (r == ARCHIVE_EOF)
        return 0;
      if (r != ARCHIVE_OK || off < 0 || (uint64_t) off < pos)
        return sbx_archive_fail (err, ar, "read layer.tar");
      while (pos < (uint64_t) off)
        {
          size_t z = (uint64_t) off - pos < sizeof zeros ? (size_t) ((uint64_t) off - pos) : sizeof zeros;
          if (sbx_ar.archive_write_data (aw, zeros, z) != (la_ssize_t) z)
            return sbx_archive_fail (err, aw, "write");
          pos += z;
        }
      if (n > 0 && sbx_ar.archive_write_data (aw, buf, n) != (la_ssize_t) n)
        return sbx_archive_fail (err, aw, "write");
      pos += n;
    }
}

static int
write_oci_entry (struct archive *ar, struct archive *aw, struct archive_entry *e, sbx_error **err)
{
  const char *p = sbx_ar.archive_entry_pathname (e);
  if (check_path (p, "path", err) < 0)
    return -1;
  size_t dirlen;
  _cleanup_free_ char *base = NULL;
  split_path (p, &dirlen, &base);
  _cleanup_free_ char *dir = xstrndup (p, dirlen);
  mode_t type = sbx_ar.archive_entry_filetype (e);
  if (type == AE_IFCHR && sbx_ar.archive_entry_rdev (e) == 0)
    {
      _cleanup_free_ char *wh = xasprintf ("%s" WH_PREFIX "%s", dir, base);
      make_oci_marker (e, wh);
      if (sbx_ar.archive_write_header (aw, e) != ARCHIVE_OK)
        return sbx_archive_fail (err, aw, "write");
      return 0;
    }
  bool opaque = type == AE_IFDIR && take_opaque_xattr (e);
  if (sbx_ar.archive_write_header (aw, e) != ARCHIVE_OK)
    return sbx_archive_fail (err, aw, "write");
  if (type == AE_IFREG && sbx_ar.archive_entry_size (e) > 0 && copy_entry_data_dense (ar, aw, err) < 0)
    return -1;
  if (!opaque)
    return 0;
  _cleanup_free_ char *marker = path_is_top (p) ? xstrdup (WH_OPAQUE) : xasprintf ("%s%s/" WH_OPAQUE, dir, base);
  _cleanup_archive_entry_ struct archive_entry *m = sbx_ar.archive_entry_new ();
  make_oci_marker (m, marker);
  sbx_ar.archive_entry_set_mtime (m, 0, 0);
  if (sbx_ar.archive_write_header (aw, m) != ARCHIVE_OK)
    return sbx_archive_fail (err, aw, "write");
  return 0;
}

/* Copies the tar in TARFD to OUTFD with overlay whiteouts in OCI form. */
static int
convert_to_oci (int tarfd, int outfd, sbx_error **err)
{
  _cleanup_archive_read_ struct archive *ar = open_tar_reader (tarfd, err);
  if (ar == NULL)
    return -1;
  tar_sink sink = { .fd = outfd };
  _cleanup_archive_write_ struct archive *aw = sbx_ar.archive_write_new ();
  sbx_ar.archive_write_set_format_pax_restricted (aw);
  /* Names as the bytes they are: no conversion through the locale's
   * charset, which fails on a name that is not ASCII under C. */
  sbx_ar.archive_write_set_format_option (aw, "pax", "hdrcharset", "BINARY");
  sbx_ar.archive_write_add_filter_none (aw);
  if (sbx_ar.archive_write_open (aw, &sink, NULL, tar_sink_write, NULL) != ARCHIVE_OK)
    return sbx_archive_fail (err, aw, "write");
  for (;;)
    {
      struct archive_entry *e;
      int r = sbx_ar.archive_read_next_header (ar, &e);
      if (r == ARCHIVE_EOF)
        break;
      if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
        return sbx_archive_fail (err, ar, "read layer.tar");
      _cleanup_free_ char *name = printable_masked (sbx_ar.archive_entry_pathname (e), 200, "(unreadable name)");
      if (write_oci_entry (ar, aw, e, err) < 0)
        return sbx_error_wrap (err, "entry `%s`", name);
    }
  if (sbx_ar.archive_write_close (aw) != ARCHIVE_OK)
    return sbx_archive_fail (err, aw, "write");
  return 0;
}

int
sbx_layer_open_oci_tar (const char *root, const char *digest, int workfd, int *ret_fd, bool *ret_converted,
                        sbx_error **err)
{
  if (sbx_archive_load (err) < 0)
    return -1;
  _cleanup_free_ char *dir = sbx_layer_dir (root, digest);
  if (dir == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid layer digest");
  if (sbx_layer_check (root, digest, err) < 0)
    return -1;
  _cleanup_free_ char *tar = xasprintf ("%s/layer.tar", dir);
  _cleanup_close_ int fd = open (tar, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT)
    {
      /* The layer's files are the layer: its tar is written from them. */
      _cleanup_free_ char *rootfs = sbx_layer_rootfs (root, digest);
      _cleanup_close_ int rootfd = open (rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
      _cleanup_close_ int out = openat (workfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
      if (rootfd < 0 || out < 0)
        return sbx_error_errno (err, errno, "layer %s: %s", digest, rootfd < 0 ? "open rootfs" : "temp file");
      if (sbx_tar_from_dir (rootfd, out, true, false, err) < 0)
        return sbx_error_wrap (err, "layer %s", digest);
      if (lseek (out, 0, SEEK_SET) < 0)
        return sbx_error_errno (err, errno, "layer %s: seek", digest);
      *ret_fd = steal_fd (&out);
      *ret_converted = true;
      return 0;
    }
  if (fd < 0)
    return sbx_error_errno (err, errno, "layer %s: open layer.tar", digest);
  bool overlay;
  if (tar_has_overlay_whiteouts (fd, &overlay, err) < 0)
    return sbx_error_wrap (err, "layer %s", digest);
  if (overlay)
    {
      _cleanup_close_ int out = openat (workfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
      if (out < 0)
        return sbx_error_errno (err, errno, "layer %s: temp file", digest);
      if (convert_to_oci (fd, out, err) < 0)
        return sbx_error_wrap (err, "layer %s", digest);
      close (fd);
      fd = steal_fd (&out);
    }
  if (lseek (fd, 0, SEEK_SET) < 0)
    return sbx_error_errno (err, errno, "layer %s: seek", digest);
  *ret_fd = steal_fd (&fd);
  *ret_converted = overlay;
  return 0;
}
