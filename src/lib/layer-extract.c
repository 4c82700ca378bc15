/* The extraction of a layer's tar: the helper process fed the stream,
 * chrooted into the new rootfs, the input read once (decompressed and
 * hashed on the way), and the check of every entry before libarchive
 * writes it. */
#include "config.h"
#include "layer-internal.h"
#include "openat.h"
#include "spawn.h"
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

/* ---- helper processes fed the stream ---- */

static void
helper_result_set (helper_result *res, const sbx_error *e)
{
  res->code = e->code;
  res->errnum = e->errnum;
  snprintf (res->msg, sizeof res->msg, "%s", e->msg);
}

int
helper_result_take (helper_result *res, sbx_error **err)
{
  if (res->code == SBX_OK)
    return 0;
  res->msg[sizeof res->msg - 1] = '\0';
  sbx_code code = res->code > SBX_OK && res->code < SBX_E__MAX ? (sbx_code) res->code : SBX_E_INTERNAL;
  return sbx_error_set (err, code, res->errnum, "%s", res->msg);
}

/* Kills and reaps a helper that did not finish: on the parent's errors. */
static void
helper_cleanup (helper *h)
{
  closep (&h->datafd);
  closep (&h->resfd);
  if (h->pid > 0)
    {
      int status;
      kill (h->pid, SIGKILL);
      sbx_spawn_wait (h->pid, &status);
    }
  h->pid = -1;
}
#define _cleanup_helper_ __attribute__ ((cleanup (helper_cleanup)))

#ifndef SBX_LAYER_FUZZING /* the fuzzer extracts in its own process */
static __attribute__ ((noreturn)) void
helper_child (pid_t parent, helper_fn *fn, void *arg, const int *keep, size_t nkeep, int infd, int resfd)
{
  helper_result res = { .code = SBX_OK };
  int fds[8];
  if (prctl (PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid () != parent || nkeep + 2 > ARRAY_SIZE (fds))
    _exit (1);
  /* Nothing of the parent's stays open in here: no directory outside the
   * chroot to fchdir to, no other helper's socket held open (its reader
   * would never see the end of its stream). */
  memcpy (fds, keep, nkeep * sizeof *keep);
  fds[nkeep] = infd;
  fds[nkeep + 1] = resfd;
  close_fds_except (fds, nkeep + 2);
  fn (arg, infd, &res);
  _exit (write_all (resfd, &res, sizeof res) < 0 || res.code != SBX_OK ? 1 : 0);
}

/* Room for several blocks in flight. Best effort: without it the stream
 * only takes more calls. */
static void
stream_buffer (int fd, int opt, int opt_force)
{
  int size = 16 * IO_BLOCK;
  if (setsockopt (fd, SOL_SOCKET, opt_force, &size, sizeof size) < 0)
    setsockopt (fd, SOL_SOCKET, opt, &size, sizeof size);
}

/* Starts FN (ARG) in a child that keeps only the fds in KEEP. It reads INFD,
 * or with INFD -1 the socket that h->datafd then feeds. The child is done
 * with ARG before this returns: it may point at the caller's variables. */
static int
helper_start (helper_fn *fn, void *arg, const int *keep, size_t nkeep, int infd, helper *h, sbx_error **err)
{
  int res[2], data[2] = { -1, -1 };
  if (infd < 0 && socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, data) < 0)
    return sbx_error_errno (err, errno, "socketpair");
  if (pipe2 (res, O_CLOEXEC) < 0)
    {
      int e = errno;
      closep (&data[0]);
      closep (&data[1]);
      return sbx_error_errno (err, e, "pipe");
    }
  h->datafd = data[0];
  h->resfd = res[0];
  if (infd < 0)
    {
      stream_buffer (data[0], SO_SNDBUF, SO_SNDBUFFORCE);
      stream_buffer (data[1], SO_RCVBUF, SO_RCVBUFFORCE);
    }
  pid_t parent = getpid ();
  h->pid = fork ();
  if (h->pid == 0)
    helper_child (parent, fn, arg, keep, nkeep, infd >= 0 ? infd : data[1], res[1]);
  int e = errno;
  closep (&data[1]);
  close (res[1]);
  if (h->pid < 0)
    return sbx_error_errno (err, e, "fork");
  return 0;
}

/* Sends the next bytes of the stream; a helper that has stopped reading is
 * not an error here: its verdict says why. */
static int
helper_feed (helper *h, const void *buf, size_t n, sbx_error **err)
{
  const char *p = buf;
  while (n > 0 && h->datafd >= 0 && !h->gone)
    {
      ssize_t w = send (h->datafd, p, n, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0 && (errno == EPIPE || errno == ECONNRESET))
        h->gone = true;
      else if (w < 0)
        return sbx_error_errno (err, errno, "send the stream");
      else
        p += w, n -= (size_t) w;
    }
  return 0;
}

/* Ends the stream and collects the verdict. An error here is the helper
 * dying; what it refused is in *RET. */
static int
helper_finish (helper *h, helper_result *ret, sbx_error **err)
{
  closep (&h->datafd);
  ssize_t n = read_all (h->resfd, ret, sizeof *ret);
  closep (&h->resfd);
  int status = 0;
  sbx_spawn_wait (h->pid, &status);
  h->pid = -1;
  if (n != (ssize_t) sizeof *ret)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "helper process died (status 0x%x)", status);
  return 0;
}
#endif

/* ---- the extraction child ---- */

/* Set in an extraction child of sbx_tar_extract_into: the tar is a plain
 * tree (a volume's), where a `.wh.` name is a file like any other. */
static bool plain_tree;

static int extract_here (int tarfd, uint64_t *ret_size, sbx_error **err);

void
extractor_cleanup (extractor *x)
{
  helper_cleanup (&x->h);
}

#ifdef SBX_LAYER_FUZZING
/* For the fuzzer (tests/fuzz/fuzz-tar.c): it sees coverage of in-process code
 * only, and without the chroot it tests our checks and libarchive's alone.
 * Nothing is fed: the extraction reads the finished tar (TARFD, or the copy
 * of the stream next to the rootfs), in this process, changing its working
 * directory while it runs. */
int
extractor_start (int rootfd, int tarfd, extractor *x, sbx_error **err)
{
  x->rootfd = rootfd;
  x->tarfd = tarfd;
  return 0;
}

int
extractor_finish (extractor *x, helper_result *ret, sbx_error **err)
{
  _cleanup_close_ int cwd = open (".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  sbx_error *e = NULL;
  *ret = (helper_result){ .code = SBX_OK };
  /* Fed (TARFD -1): the copy of the stream next to the rootfs. */
  _cleanup_close_ int own = x->tarfd < 0 ? openat (x->rootfd, "../" FUZZ_STREAM, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
                                         : -1;
  int tarfd = x->tarfd < 0 ? own : x->tarfd;
  if (cwd < 0 || fchdir (x->rootfd) < 0)
    return sbx_error_errno (err, errno, "enter the rootfs");
  if (tarfd < 0 || lseek (tarfd, 0, SEEK_SET) < 0)
    sbx_error_errno (&e, errno, "open the tar");
  else
    extract_here (tarfd, &ret->size, &e);
  if (fchdir (cwd) < 0)
    abort ();
  if (e)
    helper_result_set (ret, e);
  sbx_error_free (e);
  return 0;
}
#else
/* The extraction in the child, chrooted into the new rootfs (*ARG):
 * whatever an entry names, "/" and ".." end at the layer's top. */
static void
extract_chrooted (void *arg, int infd, helper_result *res)
{
  extractor *x = arg;
  int rootfd = x->rootfd;
  plain_tree = x->plain;
  sbx_error *e = NULL;
  if (fchdir (rootfd) < 0 || chroot (".") < 0 || chdir ("/") < 0)
    sbx_error_errno (&e, errno, "enter the rootfs");
  else
    extract_here (infd, &res->size, &e);
  if (e)
    helper_result_set (res, e);
  sbx_error_free (e);
}

int
extractor_start (int rootfd, int tarfd, extractor *x, sbx_error **err)
{
  x->rootfd = rootfd;
  x->tarfd = tarfd;
  return helper_start (extract_chrooted, x, &x->rootfd, 1, tarfd, &x->h, err);
}

int
extractor_finish (extractor *x, helper_result *ret, sbx_error **err)
{
  return helper_finish (&x->h, ret, err);
}
#endif

/* ---- reading the input: once, hashed, kept, extracted ---- */

/* The input as it comes, hashed on the way: an OCI blob's digest is that of
 * its compressed bytes. A plain tar's is that of the tar, hashed once
 * (below), so this one stops once that is known (hash false). */
typedef struct raw_source {
  int fd;
  bool hash;
  sha256_ctx sha;
  uint64_t len;
  char *buf;
} raw_source;

static la_ssize_t
raw_source_read (struct archive *a, void *data, const void **ret_buf)
{
  raw_source *s = data;
  ssize_t n;
  do
    n = read (s->fd, s->buf, IO_BLOCK);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    {
      sbx_ar.archive_set_error (a, errno, "read");
      return -1;
    }
  if (s->hash)
    sha256_update (&s->sha, s->buf, (size_t) n);
  s->len += (uint64_t) n;
  *ret_buf = s->buf;
  return n;
}

/* Whatever follows the end of the compressed stream is part of the blob. */
static int
raw_source_drain (raw_source *s, sbx_error **err)
{
  for (;;)
    {
      ssize_t n = read (s->fd, s->buf, IO_BLOCK);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return sbx_error_errno (err, errno, "read");
      if (n == 0)
        return 0;
      if (s->hash)
        sha256_update (&s->sha, s->buf, (size_t) n);
      s->len += (uint64_t) n;
    }
}

static int
copy_stream (struct archive *a, tar_sinks *k, sbx_error **err)
{
  for (;;)
    {
      const void *buf;
      size_t n;
      la_int64_t off;
      int r = sbx_ar.archive_read_data_block (a, &buf, &n, &off);
      if (r == ARCHIVE_EOF)
        return 0;
      if (r != ARCHIVE_OK)
        return sbx_archive_fail (err, a, "decompress");
      if (off < 0 || (uint64_t) off != k->len)
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "decompress: unexpected hole in the stream");
      sha256_update (&k->sha, buf, n);
      k->len += n;
#ifdef SBX_LAYER_FUZZING
      if (k->x && write_all (k->copyfd, buf, n) < 0)
        return sbx_error_errno (err, errno, "copy the stream");
#else
      if (k->x && helper_feed (&k->x->h, buf, n, err) < 0)
        return -1;
#endif
    }
}

/* Reads INFD to its end, strips any compression and sends the plain tar to
 * K's sinks. */
int
read_input (int infd, tar_sinks *k, stream_sums *ret, sbx_error **err)
{
  _cleanup_free_ char *buf = xmalloc (IO_BLOCK);
  posix_fadvise (infd, 0, 0, POSIX_FADV_SEQUENTIAL);
  raw_source src = { .fd = infd, .hash = true, .buf = buf };
  sha256_init (&src.sha);
  sha256_init (&k->sha);
  _cleanup_archive_read_ struct archive *a = sbx_ar.archive_read_new ();
  if (sbx_archive_read_filters (a, err) < 0)
    return -1;
  sbx_ar.archive_read_support_format_raw (a);
  if (sbx_ar.archive_read_open (a, &src, NULL, raw_source_read, NULL) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, "read");
  struct archive_entry *e;
  int r = sbx_ar.archive_read_next_header (a, &e);
  if (r == ARCHIVE_EOF)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "empty archive");
  if (r != ARCHIVE_OK)
    return sbx_archive_fail (err, a, "read");
  /* No filter but the reader's own: the blob is the tar, one hash names both. */
  bool plain = sbx_ar.archive_filter_count (a) == 1;
  src.hash = !plain;
  if (copy_stream (a, k, err) < 0)
    return -1;
  if (k->len == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "empty archive");
  if (raw_source_drain (&src, err) < 0)
    return -1;
  if (plain && src.len != k->len)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "read: %llu bytes in, %llu out of an uncompressed stream",
                          (unsigned long long) src.len, (unsigned long long) k->len);
  sha256_ctx_hex_final (&k->sha, ret->hex);
  if (plain)
    memcpy (ret->blob_hex, ret->hex, sizeof ret->hex);
  else
    sha256_ctx_hex_final (&src.sha, ret->blob_hex);
  ret->blob_len = src.len;
  return 0;
}

/* ---- what an entry may be ---- */

/* Relative, no `..` component, bounded. WHAT names the path in errors. */
int
check_path (const char *p, const char *what, sbx_error **err)
{
  if (p == NULL || *p == '\0')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s is empty or unreadable", what);
  if (strlen (p) >= ENTRY_PATH_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s is too long", what);
  if (p[0] == '/')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s is absolute", what);
  int depth = 0;
  for (const char *c = p; *c;)
    {
      size_t n = strcspn (c, "/");
      if (n == 2 && c[0] == '.' && c[1] == '.')
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s has a `..` component", what);
      if (n > 0 && ++depth > ENTRY_DEPTH_MAX)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s is too deep", what);
      c += n;
      c += strspn (c, "/");
    }
  return 0;
}

/* True when P names the top of the layer (".", "./", ""). */
bool
path_is_top (const char *p)
{
  return p[strspn (p, "./")] == '\0' && strstr (p, "..") == NULL;
}

static const char *
filetype_name (mode_t type)
{
  switch (type)
    {
    case AE_IFCHR:
      return "a character device";
    case AE_IFBLK:
      return "a block device";
    case AE_IFIFO:
      return "a FIFO";
    case AE_IFSOCK:
      return "a socket";
    default:
      return "of an unknown type";
    }
}

static int
check_type (struct archive_entry *e, sbx_error **err)
{
  const char *link = sbx_ar.archive_entry_hardlink (e);
  mode_t type = sbx_ar.archive_entry_filetype (e);
  if ((link || type != AE_IFDIR) && path_is_top (sbx_ar.archive_entry_pathname (e)))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the top of the layer is not a directory");
  if (link)
    return check_path (link, "hardlink target", err);
  if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "entry is %s", filetype_name (type));
  return 0;
}

/* Splits P (trailing slashes ignored) into its directory, as a prefix length
 * including the slash, and its last component. */
void
split_path (const char *p, size_t *ret_dirlen, char **ret_base)
{
  size_t len = strlen (p);
  while (len > 1 && p[len - 1] == '/')
    len--;
  size_t d = len;
  while (d > 0 && p[d - 1] != '/')
    d--;
  *ret_dirlen = d;
  *ret_base = xstrndup (p + d, len - d);
}

static int
classify_whiteout (const char *p, size_t dirlen, const char *base, char **ret_path, sbx_error **err)
{
  if (strcmp (base, WH_OPAQUE) == 0)
    {
      *ret_path = dirlen ? xstrndup (p, dirlen) : xstrdup (".");
      return ENTRY_OPAQUE;
    }
  if (strncmp (base, WH_META_PREFIX, strlen (WH_META_PREFIX)) == 0)
    return ENTRY_SKIP;
  const char *name = base + strlen (WH_PREFIX);
  if (*name == '\0' || strcmp (name, ".") == 0 || strcmp (name, "..") == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "whiteout for an invalid name");
  *ret_path = xasprintf ("%.*s%s", (int) dirlen, p, name);
  return ENTRY_WHITEOUT;
}

/* What entry E is; for whiteouts, *ret_path is the path they act on. */
int
classify_entry (struct archive_entry *e, char **ret_path, sbx_error **err)
{
  const char *p = sbx_ar.archive_entry_pathname (e);
  if (check_path (p, "path", err) < 0)
    return -1;
  size_t dirlen;
  _cleanup_free_ char *base = NULL;
  split_path (p, &dirlen, &base);
  if (!plain_tree && strncmp (base, WH_PREFIX, strlen (WH_PREFIX)) == 0)
    return classify_whiteout (p, dirlen, base, ret_path, err);
  if (check_type (e, err) < 0)
    return -1;
  return ENTRY_WRITE;
}

/* An overlay whiteout is a character device 0:0. */
static void
make_whiteout (struct archive_entry *e, const char *path)
{
  sbx_ar.archive_entry_set_hardlink (e, NULL);
  sbx_ar.archive_entry_set_symlink (e, NULL);
  sbx_ar.archive_entry_set_filetype (e, AE_IFCHR);
  sbx_ar.archive_entry_set_perm (e, 0);
  sbx_ar.archive_entry_set_rdev (e, makedev (0, 0));
  sbx_ar.archive_entry_set_size (e, 0);
  sbx_ar.archive_entry_xattr_clear (e);
  sbx_ar.archive_entry_set_pathname (e, path);
}

/* Keeps user.* and file capabilities. trusted.* would steer overlayfs
 * (opaque, redirect, metacopy) from inside an image; security.* others are
 * the host's LSM labels. */
bool
xattr_allowed (const char *name)
{
  return strncmp (name, "user.", 5) == 0 || strcmp (name, "security.capability") == 0;
}

static void
filter_xattrs (struct archive_entry *e)
{
  int n = sbx_ar.archive_entry_xattr_reset (e);
  if (n <= 0)
    return;
  _cleanup_archive_entry_ struct archive_entry *kept = sbx_ar.archive_entry_new ();
  const char *name;
  const void *value;
  size_t size;
  int nkept = 0;
  while (sbx_ar.archive_entry_xattr_next (e, &name, &value, &size) == ARCHIVE_OK)
    if (xattr_allowed (name))
      {
        sbx_ar.archive_entry_xattr_add_entry (kept, name, value, size);
        nkept++;
      }
  if (nkept == n)
    return;
  sbx_ar.archive_entry_xattr_clear (e);
  sbx_ar.archive_entry_xattr_reset (kept);
  while (sbx_ar.archive_entry_xattr_next (kept, &name, &value, &size) == ARCHIVE_OK)
    sbx_ar.archive_entry_xattr_add_entry (e, name, value, size);
}

/* ---- extraction, in the new rootfs as the current directory ---- */

struct archive *
open_tar_reader (int fd, sbx_error **err)
{
  struct archive *a = sbx_ar.archive_read_new ();
  sbx_ar.archive_read_support_format_tar (a);
  if (lseek (fd, 0, SEEK_SET) < 0 || sbx_ar.archive_read_open_fd (a, fd, IO_BLOCK) != ARCHIVE_OK)
    {
      sbx_archive_fail (err, a, "read tar");
      sbx_ar.archive_read_free (a);
      return NULL;
    }
  return a;
}

static int
copy_entry_data (struct archive *ar, struct archive *aw, sbx_error **err)
{
  for (;;)
    {
      const void *buf;
      size_t n;
      la_int64_t off;
      int r = sbx_ar.archive_read_data_block (ar, &buf, &n, &off);
      if (r == ARCHIVE_EOF)
        return 0;
      if (r != ARCHIVE_OK)
        return sbx_archive_fail (err, ar, "read");
      if (sbx_ar.archive_write_data_block (aw, buf, n, off) < ARCHIVE_OK)
        return sbx_archive_fail (err, aw, "write");
    }
}

static int
write_entry (struct archive *ar, struct archive *aw, struct archive_entry *e, sbx_error **err)
{
  filter_xattrs (e);
  if (sbx_ar.archive_write_header (aw, e) != ARCHIVE_OK)
    return sbx_archive_fail (err, aw, "create");
  if (sbx_ar.archive_entry_filetype (e) == AE_IFREG && copy_entry_data (ar, aw, err) < 0)
    return -1;
  if (sbx_ar.archive_write_finish_entry (aw) != ARCHIVE_OK)
    return sbx_archive_fail (err, aw, "finish");
  return 0;
}

bool
entry_counts_in_size (struct archive_entry *e)
{
  return sbx_ar.archive_entry_filetype (e) == AE_IFREG && sbx_ar.archive_entry_hardlink (e) == NULL;
}

/* The directory P is in, opened beneath the current one without following
 * any symlink: -ELOOP (or -EXDEV) where the way goes through one, -ENOENT
 * where a directory on the way is not there yet (none before it is a
 * symlink: the walk would have stopped there), or another -errno. */
static int
open_parent_nofollow (const char *p, char **ret_base)
{
  size_t dirlen;
  split_path (p, &dirlen, ret_base);
  _cleanup_free_ char *dir = dirlen ? xstrndup (p, dirlen) : xstrdup (".");
  int fd = sbx_openat2 (AT_FDCWD, dir, O_PATH | O_DIRECTORY, 0,
                        RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  return fd < 0 ? -errno : fd;
}

/* What ARCHIVE_EXTRACT_SECURE_SYMLINKS does, in three syscalls rather than
 * an open and a stat per component of every path (a third of the time of an
 * extraction): the way to P's directory must not go through a symlink, and
 * where REPLACE, a symlink at P itself is removed, so that the entry
 * replaces it instead of being written through it. Only the archive can
 * have made a symlink here: the rootfs started empty. */
static int
guard_path (const char *p, const char *what, bool replace, sbx_error **err)
{
  _cleanup_free_ char *base = NULL;
  _cleanup_close_ int dfd = open_parent_nofollow (p, &base);
  if (dfd == -ELOOP || dfd == -EXDEV)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s goes through a symlink", what);
  /* A directory still to be made, or a file where one should be (which
   * libarchive then refuses): nothing to guard. */
  if (dfd == -ENOENT || dfd == -ENOTDIR)
    return 0;
  if (dfd < 0)
    return sbx_error_errno (err, -dfd, "open the directory of the %s", what);
  struct stat st;
  if (replace && fstatat (dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK (st.st_mode)
      && unlinkat (dfd, base, 0) < 0)
    return sbx_error_errno (err, errno, "replace the symlink at the %s", what);
  return 0;
}

/* Whether guard_path works here (openat2, Linux 5.6). */
static bool
can_guard (void)
{
  return sbx_have_openat2 ();
}

/* The most one extraction may expand to (sbx_layer_set_size_max); 0: no
 * limit. Process-wide: the extraction runs in a forked child. */
static uint64_t layer_size_max;

void
sbx_layer_set_size_max (uint64_t max)
{
  layer_size_max = max;
}

uint64_t
sbx_layer_size_max (void)
{
  return layer_size_max;
}

/* One entry: checked, whiteouts turned into their overlay form, written;
 * GUARD: through guard_path. */
static int
extract_entry (struct archive *ar, struct archive *aw, struct archive_entry *e, bool guard, char ***opaque,
               uint64_t *size, sbx_error **err)
{
  _cleanup_free_ char *name = printable_masked (sbx_ar.archive_entry_pathname (e), 200, "(unreadable name)");
  _cleanup_free_ char *path = NULL;
  int kind = classify_entry (e, &path, err);
  if (kind == ENTRY_WHITEOUT)
    make_whiteout (e, path);
  if (kind == ENTRY_OPAQUE)
    strv_push (opaque, path);
  bool write = kind == ENTRY_WRITE || kind == ENTRY_WHITEOUT;
  uint64_t esize = kind == ENTRY_WRITE && entry_counts_in_size (e) ? (uint64_t) sbx_ar.archive_entry_size (e) : 0;
  /* Refused before a byte of it is written: the caller removes the rest. */
  if (layer_size_max > 0 && esize > layer_size_max - (*size < layer_size_max ? *size : layer_size_max))
    return sbx_error_set (err, SBX_E_RESOURCE_EXHAUSTED, 0,
                          "entry `%s`: the layer expands past %llu MiB (image_size_max in sbx.conf)", name,
                          (unsigned long long) (layer_size_max >> 20));
  const char *link = write ? sbx_ar.archive_entry_hardlink (e) : NULL;
  if (write && guard
      && (guard_path (sbx_ar.archive_entry_pathname (e), "path", true, err) < 0
          || (link && guard_path (link, "hardlink target", false, err) < 0)))
    kind = -1;
  if (kind >= 0 && write && write_entry (ar, aw, e, err) < 0)
    kind = -1;
  if (kind < 0)
    return sbx_error_wrap (err, "entry `%s`", name);
  *size += esize;
  return 0;
}

/* The tar as the extraction reads it, counted: the end-of-archive check
 * needs the stream's length, which a socket does not tell. */
typedef struct tar_stream {
  int fd;
  uint64_t len;
  char *buf;
} tar_stream;

static la_ssize_t
tar_stream_read (struct archive *a, void *data, const void **ret_buf)
{
  tar_stream *s = data;
  ssize_t n;
  do
    n = read (s->fd, s->buf, IO_BLOCK);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    {
      sbx_ar.archive_set_error (a, errno, "read");
      return -1;
    }
  s->len += (uint64_t) n;
  *ret_buf = s->buf;
  return n;
}

/* What follows the end-of-archive blocks (a writer's padding), counted. */
static int
tar_stream_drain (tar_stream *s, sbx_error **err)
{
  for (;;)
    {
      ssize_t n = read (s->fd, s->buf, IO_BLOCK);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return sbx_error_errno (err, errno, "read");
      if (n == 0)
        return 0;
      s->len += (uint64_t) n;
    }
}

/* libarchive takes a tar that stops at an entry boundary as complete (some
 * writers omit the end-of-archive blocks), and so a download cut short there
 * too. We require the zero block that ends the archive. */
static int
check_end_marker (struct archive *ar, tar_stream *in, sbx_error **err)
{
  if (tar_stream_drain (in, err) < 0)
    return -1;
  la_int64_t end = sbx_ar.archive_read_header_position (ar);
  if (end < 0 || in->len < (uint64_t) end || in->len - (uint64_t) end < 512)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "truncated archive: no end-of-archive marker");
  return 0;
}

/* Opens directory PATH under the current directory, creating what is missing
 * and following no symlink. */
static int
open_dir_beneath (const char *path, sbx_error **err)
{
  _cleanup_close_ int fd = open (".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  _cleanup_free_ char *copy = xstrdup (path);
  char *save = NULL;
  if (fd < 0)
    return sbx_error_errno (err, errno, "open the rootfs");
  for (char *c = strtok_r (copy, "/", &save); c; c = strtok_r (NULL, "/", &save))
    {
      if (strcmp (c, ".") == 0)
        continue;
      int next = openat (fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next < 0 && errno == ENOENT && mkdirat (fd, c, 0755) == 0)
        next = openat (fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next < 0)
        return sbx_error_set (err, errno_is_resource (errno) ? SBX_E_INTERNAL : SBX_E_INVALID_ARGUMENT, errno,
                              "open directory `%s`", c);
      close (fd);
      fd = next;
    }
  return steal_fd (&fd);
}

/* After all entries, so that a directory written later keeps the mark. */
static int
apply_opaque (char **dirs, sbx_error **err)
{
  for (size_t i = 0; dirs && dirs[i]; i++)
    {
      _cleanup_free_ char *name = printable_masked (dirs[i], 200, "(unreadable name)");
      _cleanup_close_ int fd = open_dir_beneath (dirs[i], err);
      if (fd < 0)
        return sbx_error_wrap (err, "opaque directory `%s`", name);
      if (fsetxattr (fd, OPAQUE_XATTR, "y", 1, 0) < 0)
        return sbx_error_errno (err, errno, "opaque directory `%s`: set " OPAQUE_XATTR, name);
    }
  return 0;
}

/* Extracts the tar TARFD gives, to its end, into the current directory. */
static int
extract_here (int tarfd, uint64_t *ret_size, sbx_error **err)
{
  _cleanup_free_ char *buf = xmalloc (IO_BLOCK);
  tar_stream in = { .fd = tarfd, .buf = buf };
  _cleanup_archive_read_ struct archive *ar = sbx_ar.archive_read_new ();
  sbx_ar.archive_read_support_format_tar (ar);
  if (sbx_ar.archive_read_open (ar, &in, NULL, tar_stream_read, NULL) != ARCHIVE_OK)
    return sbx_archive_fail (err, ar, "read tar");
  _cleanup_archive_write_ struct archive *aw = sbx_ar.archive_write_disk_new ();
  bool guard = can_guard ();
  sbx_ar.archive_write_disk_set_options (aw, EXTRACT_FLAGS | (guard ? 0 : ARCHIVE_EXTRACT_SECURE_SYMLINKS));
  _cleanup_strv_ char **opaque = NULL;
  uint64_t size = 0;
  for (;;)
    {
      struct archive_entry *e;
      int r = sbx_ar.archive_read_next_header (ar, &e);
      if (r == ARCHIVE_EOF)
        break;
      /* A warning is a name that does not convert to the locale: still bytes. */
      if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
        return sbx_archive_fail (err, ar, "read");
      if (extract_entry (ar, aw, e, guard, &opaque, &size, err) < 0)
        return -1;
    }
  if (check_end_marker (ar, &in, err) < 0)
    return -1;
  if (sbx_ar.archive_write_close (aw) != ARCHIVE_OK)
    return sbx_archive_fail (err, aw, "finish extraction");
  if (apply_opaque (opaque, err) < 0)
    return -1;
  *ret_size = size;
  return 0;
}

#ifndef SBX_LAYER_FUZZING
int
sbx_tar_extract_into (int rootfd, int tarfd, uint64_t *ret_size, sbx_error **err)
{
  _cleanup_extractor_ extractor x = EXTRACTOR_INIT;
  x.plain = true;
  helper_result res;
  if (sbx_archive_load (err) < 0 || extractor_start (rootfd, tarfd, &x, err) < 0 || extractor_finish (&x, &res, err) < 0
      || helper_result_take (&res, err) < 0)
    return -1;
  *ret_size = res.size;
  return 0;
}
#endif
