/* Layers: this file owns ROOT/layers. A tarball becomes a layer in one pass
 * over it: the parent reads it, strips any compression, hashes the plain tar
 * stream (the hash names the layer) and feeds the same bytes to a child
 * process chrooted into the new rootfs, which extracts them with libarchive's
 * secure flags plus our own check of every entry, so that a path in the
 * archive cannot reach outside it even if a check were missed. Reading,
 * hashing and extracting overlap. All of it happens in ROOT/layers/tmp/RANDOM,
 * renamed to ROOT/layers/sha256/HEX once complete, and removed on any error.
 * The stream itself is not kept: export writes a layer's tar from its files.
 *
 * An import does not wait for the disk, as `tar -x` does not: the layer is
 * installed with a `pending` mark holding the boot id, and a process of its
 * own syncs the filesystem after the command has returned and then drops the
 * mark (sbx_layer_settle). A mark from an earlier boot means the host went
 * down before the layer reached the disk: sbx_layer_check refuses such a
 * layer rather than run from files that may be torn. The mark is made before
 * the rename that installs the layer, and journaled filesystems (ext4, xfs,
 * btrfs) commit the two in that order. The built-in busybox layer is written
 * as a tar here and then goes through the same extraction, synced before it
 * is installed. */
#include "config.h"
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
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#define IO_BLOCK (1024 * 1024)
#define DIGEST_PREFIX "sha256:"
#define DIGEST_PREFIX_LEN 7
/* Bounds on entry paths: a rootfs is never this deep, and removing a tree
 * holds one fd per level. */
#define ENTRY_PATH_MAX 4096
#define ENTRY_DEPTH_MAX 256
#define OPAQUE_XATTR "trusted.overlay.opaque"
/* Next to rootfs/: the boot id while the layer is not yet on the disk, and
 * the layer's size (the sum of its regular files' sizes) in decimal. */
#define PENDING_MARK "pending"
#define SIZE_FILE "size"
#define FUZZ_STREAM "stream.tar"
#define WH_PREFIX ".wh."
#define WH_META_PREFIX ".wh..wh."
#define WH_OPAQUE ".wh..wh..opq"

/* No FFLAGS (an immutable file could never be removed), no ACLs; xattrs are
 * filtered per entry (filter_xattrs). No name lookups: owners are numeric ids
 * of the sandbox's own user view, not the host's. No writing through
 * symlinks either: guard_path does what ARCHIVE_EXTRACT_SECURE_SYMLINKS
 * would, which is added where openat2 is missing. */
#define EXTRACT_FLAGS                                                                              \
  (ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_XATTR     \
   | ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS)

/* ---- digests and paths ---- */

/* The HEX of "sha256:HEX", or NULL when DIGEST is not exactly that. */
static const char *
digest_hex (const char *digest)
{
  if (digest == NULL || strncmp (digest, DIGEST_PREFIX, DIGEST_PREFIX_LEN) != 0)
    return NULL;
  const char *hex = digest + DIGEST_PREFIX_LEN;
  for (int i = 0; i < 64; i++)
    if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
      return NULL;
  return hex[64] == '\0' ? hex : NULL;
}

char *
sbx_layer_dir (const char *root, const char *digest)
{
  const char *hex = digest_hex (digest);
  return hex ? xasprintf ("%s/layers/sha256/%s", root, hex) : NULL;
}

char *
sbx_layer_rootfs (const char *root, const char *digest)
{
  const char *hex = digest_hex (digest);
  return hex ? xasprintf ("%s/layers/sha256/%s/rootfs", root, hex) : NULL;
}

bool
sbx_layer_exists (const char *root, const char *digest)
{
  _cleanup_free_ char *rootfs = sbx_layer_rootfs (root, digest);
  struct stat st;
  return rootfs && lstat (rootfs, &st) == 0 && S_ISDIR (st.st_mode);
}

/* Text from an archive fit for an error message: control bytes as '?', cut
 * after MAX bytes. */
static char *
printable_n (const char *s, size_t max)
{
  if (s == NULL)
    return xstrdup ("(unreadable name)");
  size_t n = strnlen (s, max);
  char *r = xasprintf ("%.*s%s", (int) n, s, s[n] ? "..." : "");
  for (char *p = r; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      *p = '?';
  return r;
}

static char *
printable (const char *s)
{
  return printable_n (s, 200);
}

static bool
errno_is_resource (int e)
{
  return e == ENOSPC || e == EDQUOT || e == EIO || e == ENOMEM || e == EROFS || e == EMFILE
         || e == ENFILE;
}

/* ---- the store's directories ---- */

static int
ensure_layer_dirs (const char *root, sbx_error **err)
{
  static const char *const subdirs[] = { "layers", "layers/sha256", "layers/tmp" };
  for (size_t i = 0; i < ARRAY_SIZE (subdirs); i++)
    {
      _cleanup_free_ char *p = xasprintf ("%s/%s", root, subdirs[i]);
      if (mkdir (p, 0700) < 0 && errno != EEXIST)
        return sbx_error_errno (err, errno, "mkdir `%s`", p);
    }
  return 0;
}

void
sbx_workdir_cleanup (sbx_workdir *w)
{
  if (w->dfd >= 0)
    close (w->dfd);
  w->dfd = -1;
  if (w->path)
    rm_rf (w->path, NULL);
  free (w->path);
  w->path = NULL;
}

int
sbx_workdir_new (const char *root, sbx_workdir *w, sbx_error **err)
{
  if (ensure_layer_dirs (root, err) < 0)
    return -1;
  _cleanup_free_ char *rnd = random_hex (16);
  _cleanup_free_ char *path = xasprintf ("%s/layers/tmp/%s", root, rnd);
  if (mkdir (path, 0700) < 0)
    return sbx_error_errno (err, errno, "mkdir `%s`", path);
  w->path = steal_pointer (&path);
  w->dfd = open (w->path, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (w->dfd < 0)
    return sbx_error_errno (err, errno, "open `%s`", w->path);
  if (flock (w->dfd, LOCK_EX | LOCK_NB) < 0)
    return sbx_error_errno (err, errno, "lock `%s`", w->path);
  return 0;
}

/* A layer being made: a work directory with rootfs/ (and for busybox its
 * layer.tar). Until it is installed, going out of scope removes it. The lock
 * on the directory is held by the extracting child too. */
typedef sbx_workdir tmp_layer;
#define TMP_LAYER_INIT SBX_WORKDIR_INIT
#define _cleanup_tmp_layer_ _cleanup_workdir_

static int
tmp_layer_new (const char *root, tmp_layer *t, sbx_error **err)
{
  if (sbx_workdir_new (root, t, err) < 0)
    return -1;
  if (mkdirat (t->dfd, "rootfs", 0755) < 0)
    return sbx_error_errno (err, errno, "mkdir `%s/rootfs`", t->path);
  return 0;
}

/* This boot's id; "" where the kernel does not tell (no layer is then ever
 * taken for settling). */
static const char *
boot_id (void)
{
  static char id[64];
  static bool done;
  if (!done)
    {
      _cleanup_close_ int fd = open ("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
      ssize_t n = fd >= 0 ? read_all (fd, id, sizeof id - 1) : -1;
      id[n > 0 ? n : 0] = '\0';
      id[strcspn (id, "\n")] = '\0';
      done = true;
    }
  return id;
}

/* The `pending` mark of the layer directory DFD: 0 none (the layer is on the
 * disk), 1 this boot's (on its way there: as good as on it for any reader),
 * 2 an earlier boot's (the host went down first: maybe torn), or -errno. */
static int
pending_state (int dfd)
{
  char mark[64];
  _cleanup_close_ int fd = openat (dfd, PENDING_MARK, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return errno == ENOENT ? 0 : -errno;
  ssize_t n = read_all (fd, mark, sizeof mark - 1);
  if (n < 0)
    return (int) n;
  mark[n] = '\0';
  return boot_id ()[0] != '\0' && strcmp (mark, boot_id ()) == 0 ? 1 : 2;
}

/* Layer DIGEST in the store: -ENOENT when it is not there (no directory
 * with a rootfs/), else its pending_state. */
static int
layer_state (const char *root, const char *digest)
{
  _cleanup_free_ char *dir = sbx_layer_dir (root, digest);
  _cleanup_close_ int dfd = dir ? open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) : -1;
  struct stat st;
  if (dfd < 0 || fstatat (dfd, "rootfs", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR (st.st_mode))
    return -ENOENT;
  return pending_state (dfd);
}

/* Whether layer DIGEST is in the store with an earlier boot's mark. */
static bool
layer_suspect (const char *root, const char *digest)
{
  return layer_state (root, digest) == 2;
}

/* Whether the store has layer DIGEST to reuse: there, and not suspect. */
static bool
layer_usable (const char *root, const char *digest)
{
  int r = layer_state (root, digest);
  return r == 0 || r == 1;
}

/* ---- aliases ---- */

/* ROOT/layers/alias/HEX holds the name of the layer whose files a tar with
 * digest sha256:HEX carries, though the layer was made from another tar:
 * export writes a layer's tar from its files, and an import of that tar (an
 * image going back and forth between sbx and podman) finds the layer again,
 * and so the same image. Written by sbx only; a stale one is harmless (its
 * layer gone, it is ignored, and gc removes it). */
static char *
alias_path (const char *root, const char *digest)
{
  const char *hex = digest_hex (digest);
  return hex ? xasprintf ("%s/layers/alias/%s", root, hex) : NULL;
}

/* The layer digest alias NAME of directory DFD (ROOT/layers/alias) names;
 * NULL when it is unreadable or names no valid digest. */
static char *
alias_read_at (int dfd, const char *name)
{
  _cleanup_free_ char *target = NULL;
  if (read_file_at (dfd, name, 128, &target, NULL, NULL) < 0)
    return NULL;
  target[strcspn (target, "\n")] = '\0';
  return digest_hex (target) ? steal_pointer (&target) : NULL;
}

/* The layer a tar with DIGEST came from, when the store has it usable. */
static char *
alias_target (const char *root, const char *digest)
{
  _cleanup_free_ char *dir = xasprintf ("%s/layers/alias", root);
  _cleanup_close_ int dfd = digest_hex (digest) ? open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  _cleanup_free_ char *target = dfd >= 0 ? alias_read_at (dfd, digest_hex (digest)) : NULL;
  return target && layer_usable (root, target) ? steal_pointer (&target) : NULL;
}

int
sbx_layer_alias (const char *root, const char *digest, const char *alias, sbx_error **err)
{
  _cleanup_free_ char *path = alias_path (root, alias);
  _cleanup_free_ char *dir = xasprintf ("%s/layers/alias", root);
  if (path == NULL || digest_hex (digest) == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid layer digest");
  if (strcmp (digest, alias) == 0)
    return 0;
  if (mkdir (dir, 0700) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", dir);
  _cleanup_free_ char *text = xasprintf ("%s\n", digest);
  return write_file_replace (path, text, strlen (text), 0600, err);
}

void
sbx_layer_alias_gc (const char *root)
{
  _cleanup_free_ char *dir = xasprintf ("%s/layers/alias", root);
  DIR *d = opendir (dir);
  if (d == NULL)
    return;
  for (struct dirent *de; (de = readdir (d));)
    {
      if (de->d_name[0] == '.')
        continue;
      _cleanup_free_ char *target = alias_read_at (dirfd (d), de->d_name);
      if (target == NULL || !sbx_layer_exists (root, target))
        unlinkat (dirfd (d), de->d_name, 0);
    }
  closedir (d);
}

/* Moves the finished layer into place. SYNCED: on the disk first, or else
 * marked pending (see the top of this file). Losing a race to another process
 * that made the same layer is success: same digest, same content; the cleanup
 * then removes ours. */
/* A new file NAME in T holding TEXT: part of the layer, made durable with
 * the rest of it. */
static int
tmp_layer_put (tmp_layer *t, const char *name, const char *text, sbx_error **err)
{
  _cleanup_close_ int fd = openat (t->dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  int r = fd < 0 ? -errno : write_all (fd, text, strlen (text));
  return r < 0 ? sbx_error_errno (err, -r, "write `%s/%s`", t->path, name) : 0;
}

static int
tmp_layer_install (const char *root, tmp_layer *t, const char *hex, uint64_t size, bool synced, sbx_error **err)
{
  _cleanup_free_ char *sz = xasprintf ("%llu\n", (unsigned long long) size);
  if (tmp_layer_put (t, SIZE_FILE, sz, err) < 0)
    return -1;
#ifndef SBX_LAYER_FUZZING /* thousands of layers a minute, thrown away */
  if (synced && syncfs (t->dfd) < 0)
    return sbx_error_errno (err, errno, "sync `%s`", t->path);
  if (!synced && tmp_layer_put (t, PENDING_MARK, boot_id (), err) < 0)
    return -1;
#endif
  _cleanup_free_ char *dst = xasprintf ("%s/layers/sha256/%s", root, hex);
  _cleanup_free_ char *digest = xasprintf (DIGEST_PREFIX "%s", hex);
  int r = rename (t->path, dst);
  /* One there that may be torn gives way to this one. */
  if (r < 0 && (errno == EEXIST || errno == ENOTEMPTY) && layer_suspect (root, digest)
      && sbx_layer_remove (root, digest, NULL) == 0)
    r = rename (t->path, dst);
  if (r < 0)
    {
      if (errno == EEXIST || errno == ENOTEMPTY)
        return 0;
      return sbx_error_errno (err, errno, "rename to `%s`", dst);
    }
  free (steal_pointer (&t->path));
  return 0;
}

/* ---- helper processes fed the stream ---- */

/* The stream goes to a helper process through a socket: the extraction,
 * chrooted into the new rootfs. It works at its own pace, the parent ahead of
 * it by what the socket holds. A helper's verdict comes back as this struct
 * on a pipe: errors cross the fork as data. */
typedef struct helper_result {
  int32_t code;
  int32_t errnum;
  uint64_t size; /* the extraction's: the layer's size */
  char msg[2048];
} helper_result;

/* A helper that fails stops reading: the parent then stops sending to it
 * (gone) and reads its input to the end all the same, for the digests. */
typedef struct helper {
  pid_t pid;
  int datafd; /* -1: nothing to feed */
  int resfd;
  bool gone;
} helper;
#define HELPER_INIT { .pid = -1, .datafd = -1, .resfd = -1 }

/* A helper's work on the stream in INFD, *RES its verdict. */
typedef void helper_fn (void *arg, int infd, helper_result *res);

static void
helper_result_set (helper_result *res, const sbx_error *e)
{
  res->code = e->code;
  res->errnum = e->errnum;
  snprintf (res->msg, sizeof res->msg, "%s", e->msg);
}

static int
helper_result_take (helper_result *res, sbx_error **err)
{
  if (res->code == SBX_OK)
    return 0;
  res->msg[sizeof res->msg - 1] = '\0';
  sbx_code code = res->code > SBX_OK && res->code < SBX_E__MAX ? (sbx_code) res->code : SBX_E_INTERNAL;
  return sbx_error_set (err, code, res->errnum, "%s", res->msg);
}

static int
wait_child (pid_t pid, int *ret_status)
{
  while (waitpid (pid, ret_status, 0) < 0)
    if (errno != EINTR)
      return -errno;
  return 0;
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
      wait_child (h->pid, &status);
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
  wait_child (h->pid, &status);
  h->pid = -1;
  if (n != (ssize_t) sizeof *ret)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "helper process died (status 0x%x)", status);
  return 0;
}
#endif

/* ---- the extraction child ---- */

static int extract_here (int tarfd, uint64_t *ret_size, sbx_error **err);

/* The extraction into ROOTFD: of the stream fed to h, or of the file TARFD,
 * read to its end. */
typedef struct extractor {
  helper h;
  int rootfd; /* borrowed */
  int tarfd;  /* borrowed; -1 when fed */
} extractor;
#define EXTRACTOR_INIT { .h = HELPER_INIT, .rootfd = -1, .tarfd = -1 }
#define _cleanup_extractor_ __attribute__ ((cleanup (extractor_cleanup)))

static void
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
static int
extractor_start (int rootfd, int tarfd, extractor *x, sbx_error **err)
{
  x->rootfd = rootfd;
  x->tarfd = tarfd;
  return 0;
}

static int
extractor_finish (extractor *x, helper_result *ret, sbx_error **err)
{
  _cleanup_close_ int cwd = open (".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  sbx_error *e = NULL;
  *ret = (helper_result) { .code = SBX_OK };
  /* Fed (TARFD -1): the copy of the stream next to the rootfs. */
  _cleanup_close_ int own = x->tarfd < 0 ? openat (x->rootfd, "../" FUZZ_STREAM, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
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
  int rootfd = *(int *) arg;
  sbx_error *e = NULL;
  if (fchdir (rootfd) < 0 || chroot (".") < 0 || chdir ("/") < 0)
    sbx_error_errno (&e, errno, "enter the rootfs");
  else
    extract_here (infd, &res->size, &e);
  if (e)
    helper_result_set (res, e);
  sbx_error_free (e);
}

static int
extractor_start (int rootfd, int tarfd, extractor *x, sbx_error **err)
{
  x->rootfd = rootfd;
  x->tarfd = tarfd;
  return helper_start (extract_chrooted, &x->rootfd, &x->rootfd, 1, tarfd, &x->h, err);
}

static int
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

/* Where the plain tar stream goes: hashed, and to the extraction unless X
 * is NULL. The fuzzer's build also copies it to COPYFD for its in-process
 * extraction. */
typedef struct tar_sinks {
  sha256_ctx sha;
  uint64_t len;
  extractor *x;
#ifdef SBX_LAYER_FUZZING
  int copyfd;
#endif
} tar_sinks;

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

/* The digests of one input: HEX of the plain tar, BLOB_HEX and BLOB_LEN of
 * the bytes as they came. */
typedef struct stream_sums {
  char hex[65];
  char blob_hex[65];
  uint64_t blob_len;
} stream_sums;

/* Reads INFD to its end, strips any compression and sends the plain tar to
 * K's sinks. */
static int
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

typedef enum entry_kind {
  ENTRY_WRITE,    /* extract as it is */
  ENTRY_SKIP,     /* aufs metadata (.wh..wh.*), meaningless to overlayfs */
  ENTRY_WHITEOUT, /* .wh.NAME: an overlay whiteout at the returned path */
  ENTRY_OPAQUE,   /* .wh..wh..opq: the returned directory becomes opaque */
} entry_kind;

/* Relative, no `..` component, bounded. WHAT names the path in errors. */
static int
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
static bool
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
static void
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
static int
classify_entry (struct archive_entry *e, char **ret_path, sbx_error **err)
{
  const char *p = sbx_ar.archive_entry_pathname (e);
  if (check_path (p, "path", err) < 0)
    return -1;
  size_t dirlen;
  _cleanup_free_ char *base = NULL;
  split_path (p, &dirlen, &base);
  if (strncmp (base, WH_PREFIX, strlen (WH_PREFIX)) == 0)
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
static bool
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

static struct archive *
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

static bool
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
  struct open_how how = {
    .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
  };
  long fd = syscall (SYS_openat2, AT_FDCWD, dir, &how, sizeof how);
  return fd < 0 ? -errno : (int) fd;
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
  _cleanup_free_ char *base = NULL;
  _cleanup_close_ int fd = open_parent_nofollow ("x", &base);
  return fd >= 0;
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
  _cleanup_free_ char *name = printable (sbx_ar.archive_entry_pathname (e));
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
        return sbx_error_set (err, errno_is_resource (errno) ? SBX_E_INTERNAL : SBX_E_INVALID_ARGUMENT,
                              errno, "open directory `%s`", c);
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
      _cleanup_free_ char *name = printable (dirs[i]);
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
extract_layer (const char *root, tmp_layer *t, const char *hex, bool *ret_reuse, uint64_t *ret_size,
               sbx_error **err)
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
static int
finish_layer (const char *root, tmp_layer *t, const char *hex, char **ret_digest, uint64_t *ret_size,
              sbx_error **err)
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
  bool streamed;         /* false: only hashed, the store had the layer KNOWN */
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
sbx_layer_import_tar (const char *root, const char *tarpath, char **ret_digest, uint64_t *ret_size,
                      sbx_error **err)
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

int
sbx_layer_remove (const char *root, const char *digest, sbx_error **err)
{
  _cleanup_free_ char *dir = sbx_layer_dir (root, digest);
  if (dir == NULL)
    {
      _cleanup_free_ char *name = printable (digest);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid layer digest `%s`", name);
    }
  if (ensure_layer_dirs (root, err) < 0)
    return -1;
  _cleanup_free_ char *rnd = random_hex (16);
  _cleanup_free_ char *tmp = xasprintf ("%s/layers/tmp/rm-%s", root, rnd);
  if (rename (dir, tmp) < 0)
    {
      if (errno == ENOENT)
        return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "layer `%s` not found", digest);
      return sbx_error_errno (err, errno, "remove layer `%s`", digest);
    }
  if (rm_rf (tmp, err) < 0)
    return sbx_error_wrap (err, "remove layer `%s`", digest);
  return 0;
}

/* ---- the busybox layer ---- */

static const char *
busybox_path (void)
{
  const char *p = getenv ("SBX_BUSYBOX");
  return p && *p ? p : "/bin/busybox";
}

/* Whether the ELF file in FD asks for a program interpreter (a dynamic loader);
 * -1 when it is not ELF. Either class, in the host's byte order. */
static int
elf_has_interp (int fd, bool *ret)
{
  unsigned char ident[EI_NIDENT];
  uint64_t phoff;
  unsigned phentsize, phnum;
  if (pread (fd, ident, sizeof ident, 0) != (ssize_t) sizeof ident || memcmp (ident, ELFMAG, SELFMAG) != 0)
    return -1;
  if (ident[EI_CLASS] == ELFCLASS64)
    {
      Elf64_Ehdr h;
      if (pread (fd, &h, sizeof h, 0) != (ssize_t) sizeof h)
        return -1;
      phoff = h.e_phoff, phentsize = h.e_phentsize, phnum = h.e_phnum;
    }
  else
    {
      Elf32_Ehdr h;
      if (pread (fd, &h, sizeof h, 0) != (ssize_t) sizeof h)
        return -1;
      phoff = h.e_phoff, phentsize = h.e_phentsize, phnum = h.e_phnum;
    }
  *ret = false;
  for (unsigned i = 0; i < phnum; i++)
    {
      uint32_t type;
      if (pread (fd, &type, sizeof type, (off_t) (phoff + (uint64_t) i * phentsize)) != (ssize_t) sizeof type)
        return -1;
      *ret |= type == PT_INTERP;
    }
  return 0;
}

/* A busybox that needs a dynamic loader would not start in a rootfs that has
 * none: refuse it rather than build a layer that cannot run. */
static int
check_static_elf (int fd, const char *path, sbx_error **err)
{
  bool interp;
  if (elf_has_interp (fd, &interp) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is not an ELF executable", path);
  if (interp)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "`%s` is dynamically linked: install busybox-static or set SBX_BUSYBOX", path);
  return 0;
}

/* Runs ARGV (no shell) and returns at most MAX bytes of its stdout. */
static int
run_capture (char *const argv[], size_t max, char **ret_out, sbx_error **err)
{
  int p[2];
  if (pipe2 (p, O_CLOEXEC) < 0)
    return sbx_error_errno (err, errno, "pipe");
  pid_t pid = fork ();
  if (pid < 0)
    {
      int e = errno;
      close (p[0]);
      close (p[1]);
      return sbx_error_errno (err, e, "fork");
    }
  if (pid == 0)
    {
      int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
      if (null < 0 || dup2 (null, 0) < 0 || dup2 (p[1], 1) < 0 || dup2 (null, 2) < 0)
        _exit (127);
      execv (argv[0], argv);
      _exit (127);
    }
  close (p[1]);
  _cleanup_free_ char *out = xmalloc (max + 1);
  ssize_t n = read_all (p[0], out, max);
  close (p[0]);
  int status = 0;
  wait_child (pid, &status);
  if (n < 0 || (size_t) n >= max)
    return sbx_error_set (err, SBX_E_INTERNAL, n < 0 ? (int) -n : 0, "`%s %s`: unreadable output", argv[0], argv[1]);
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "`%s %s` failed (status 0x%x)", argv[0], argv[1], status);
  out[n] = '\0';
  *ret_out = steal_pointer (&out);
  return 0;
}

/* What goes into the busybox tar, sorted by path before it is written. */
typedef struct bb_entry {
  char *path;
  mode_t mode;          /* type and permissions */
  char *target;         /* symlinks */
  const char *content;  /* small files; NULL for a regular file: the busybox binary */
} bb_entry;

typedef struct bb_tree {
  bb_entry *v;
  size_t n;
} bb_tree;

static void
bb_tree_free (bb_tree *t)
{
  for (size_t i = 0; i < t->n; i++)
    {
      free (t->v[i].path);
      free (t->v[i].target);
    }
  free (t->v);
}
#define _cleanup_bb_tree_ __attribute__ ((cleanup (bb_tree_free)))

/* Adds PATH unless it is there already (the first one wins). */
static void
bb_add (bb_tree *t, const char *path, mode_t mode, const char *target, const char *content)
{
  for (size_t i = 0; i < t->n; i++)
    if (strcmp (t->v[i].path, path) == 0)
      return;
  t->v = xrealloc (t->v, (t->n + 1) * sizeof *t->v);
  t->v[t->n++] = (bb_entry) { .path = xstrdup (path), .mode = mode, .target = target ? xstrdup (target) : NULL,
                              .content = content };
}

static void
bb_add_parents (bb_tree *t, const char *path)
{
  for (const char *s = strchr (path, '/'); s; s = strchr (s + 1, '/'))
    {
      _cleanup_free_ char *dir = xstrndup (path, (size_t) (s - path));
      bb_add (t, dir, S_IFDIR | 0755, NULL, NULL);
    }
}

static int
bb_cmp (const void *a, const void *b)
{
  return strcmp (((const bb_entry *) a)->path, ((const bb_entry *) b)->path);
}

/* usr/bin/env or bin/sh, as busybox --list-full prints them. */
static bool
applet_path_ok (const char *p)
{
  if (*p == '\0' || *p == '/' || strlen (p) > 128 || strstr (p, "//") || strstr (p, "..")
      || p[strlen (p) - 1] == '/')
    return false;
  for (const char *c = p; *c; c++)
    if (!(strchr ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-[]/", *c)))
      return false;
  return true;
}

/* The applet's symlink points at the binary relatively, so it also resolves
 * when the rootfs is looked at from the host. */
static void
bb_add_applet (bb_tree *t, const char *path)
{
  size_t depth = 0;
  for (const char *c = path; *c; c++)
    depth += *c == '/';
  _cleanup_free_ char *target = NULL;
  if (strncmp (path, "bin/", 4) == 0 && depth == 1)
    target = xstrdup ("busybox");
  else
    {
      target = xmalloc (depth * 3 + sizeof "bin/busybox");
      target[0] = '\0';
      for (size_t i = 0; i < depth; i++)
        strcat (target, "../");
      strcat (target, "bin/busybox");
    }
  bb_add_parents (t, path);
  bb_add (t, path, S_IFLNK | 0777, target, NULL);
}

static int
bb_add_applets (bb_tree *t, const char *bb, sbx_error **err)
{
  char *full[] = { (char *) bb, (char *) "--list-full", NULL };
  char *plain[] = { (char *) bb, (char *) "--list", NULL };
  _cleanup_free_ char *out = NULL;
  bool is_full = run_capture (full, 1 << 20, &out, NULL) == 0;
  if (!is_full && run_capture (plain, 1 << 20, &out, err) < 0)
    return -1;
  char *save = NULL;
  for (char *line = strtok_r (out, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      _cleanup_free_ char *path = is_full ? xstrdup (line) : xasprintf ("bin/%s", line);
      if (!applet_path_ok (path))
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "`%s --list`: unexpected applet `%s`", bb, path);
      if (strcmp (path, "bin/busybox") != 0)
        bb_add_applet (t, path);
    }
  return 0;
}

static const struct {
  const char *path;
  mode_t mode;
  const char *content;
} bb_fixed[] = {
  { "bin", S_IFDIR | 0755, NULL },
  { "bin/busybox", S_IFREG | 0755, NULL },
  { "dev", S_IFDIR | 0755, NULL },
  { "etc", S_IFDIR | 0755, NULL },
  { "etc/group", S_IFREG | 0644, "root:x:0:\nnogroup:x:65534:\n" },
  { "etc/hostname", S_IFREG | 0644, "sbx\n" },
  { "etc/os-release", S_IFREG | 0644,
    "NAME=\"sbx busybox\"\nID=sbx-busybox\nPRETTY_NAME=\"sbx busybox (the host's busybox-static)\"\n" },
  { "etc/passwd", S_IFREG | 0644,
    "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n" },
  { "home", S_IFDIR | 0755, NULL },
  { "proc", S_IFDIR | 0755, NULL },
  { "root", S_IFDIR | 0700, NULL },
  { "sys", S_IFDIR | 0755, NULL },
  { "tmp", S_IFDIR | 01777, NULL },
  { "var", S_IFDIR | 0755, NULL },
  { "var/tmp", S_IFDIR | 01777, NULL },
};

static int
bb_tree_build (bb_tree *t, const char *bb, sbx_error **err)
{
  for (size_t i = 0; i < ARRAY_SIZE (bb_fixed); i++)
    bb_add (t, bb_fixed[i].path, bb_fixed[i].mode, NULL, bb_fixed[i].content);
  if (bb_add_applets (t, bb, err) < 0)
    return -1;
  qsort (t->v, t->n, sizeof *t->v, bb_cmp);
  return 0;
}

/* A tar is written through this sink to its file; HASH: hashed on the way
 * (export hashes what goes out itself). */
typedef struct tar_sink {
  int fd;
  bool hash;
  sha256_ctx sha;
} tar_sink;

static la_ssize_t
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

static int
write_fd_data (struct archive *a, int fd, int64_t size, sbx_error **err)
{
  _cleanup_free_ char *buf = xmalloc (IO_BLOCK);
  int64_t done = 0;
  while (done < size)
    {
      ssize_t n = pread (fd, buf, IO_BLOCK, done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return sbx_error_errno (err, n < 0 ? errno : EIO, "read busybox");
      if (n > size - done)
        n = (ssize_t) (size - done);
      if (sbx_ar.archive_write_data (a, buf, (size_t) n) != n)
        return sbx_archive_fail (err, a, "write bin/busybox");
      done += n;
    }
  return 0;
}

static int
write_bb_entry (struct archive *a, const bb_entry *b, int binfd, sbx_error **err)
{
  _cleanup_archive_entry_ struct archive_entry *e = sbx_ar.archive_entry_new ();
  struct stat st = { .st_size = 0 };
  int64_t size = 0;
  sbx_ar.archive_entry_set_pathname (e, b->path);
  sbx_ar.archive_entry_set_mode (e, b->mode);
  sbx_ar.archive_entry_set_uid (e, 0);
  sbx_ar.archive_entry_set_gid (e, 0);
  sbx_ar.archive_entry_set_mtime (e, 0, 0);
  if (S_ISLNK (b->mode))
    sbx_ar.archive_entry_set_symlink (e, b->target);
  if (S_ISREG (b->mode) && b->content)
    size = (int64_t) strlen (b->content);
  else if (S_ISREG (b->mode))
    {
      if (fstat (binfd, &st) < 0)
        return sbx_error_errno (err, errno, "stat busybox");
      size = st.st_size;
    }
  sbx_ar.archive_entry_set_size (e, size);
  if (sbx_ar.archive_write_header (a, e) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, b->path);
  if (b->content && sbx_ar.archive_write_data (a, b->content, (size_t) size) != size)
    return sbx_archive_fail (err, a, b->path);
  if (S_ISREG (b->mode) && !b->content)
    return write_fd_data (a, binfd, size, err);
  return 0;
}

/* Writes T as a deterministic tar (pax restricted, mtime 0, owner 0, sorted)
 * into TL's layer.tar; HEX is its sha256. */
static int
write_bb_tar (const bb_tree *t, int binfd, tmp_layer *tl, char hex[65], sbx_error **err)
{
  _cleanup_close_ int fd = openat (tl->dfd, "layer.tar", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return sbx_error_errno (err, errno, "create layer.tar");
  tar_sink sink = { .fd = fd, .hash = true };
  sha256_init (&sink.sha);
  _cleanup_archive_write_ struct archive *a = sbx_ar.archive_write_new ();
  sbx_ar.archive_write_set_format_pax_restricted (a);
  /* Names as the bytes they are: no conversion through the locale's
   * charset, which fails on a name that is not ASCII under C. */
  sbx_ar.archive_write_set_format_option (a, "pax", "hdrcharset", "BINARY");
  sbx_ar.archive_write_add_filter_none (a);
  if (sbx_ar.archive_write_open (a, &sink, NULL, tar_sink_write, NULL) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, "write layer.tar");
  for (size_t i = 0; i < t->n; i++)
    if (write_bb_entry (a, &t->v[i], binfd, err) < 0)
      return -1;
  if (sbx_ar.archive_write_close (a) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, "write layer.tar");
  sha256_ctx_hex_final (&sink.sha, hex);
  return 0;
}

int
sbx_layer_make_busybox (const char *root, char **ret_digest, uint64_t *ret_size, sbx_error **err)
{
  if (sbx_archive_load (err) < 0)
    return -1;
  const char *bb = busybox_path ();
  _cleanup_close_ int binfd = open (bb, O_RDONLY | O_CLOEXEC);
  _cleanup_bb_tree_ bb_tree tree = { 0 };
  _cleanup_tmp_layer_ tmp_layer t = TMP_LAYER_INIT;
  char hex[65];
  if (binfd < 0)
    sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INTERNAL, errno,
                   "open `%s` (install busybox-static or set SBX_BUSYBOX)", bb);
  else if (check_static_elf (binfd, bb, err) == 0 && bb_tree_build (&tree, bb, err) == 0
           && tmp_layer_new (root, &t, err) == 0 && write_bb_tar (&tree, binfd, &t, hex, err) == 0
           && finish_layer (root, &t, hex, ret_digest, ret_size, err) == 0)
    return 0;
  return sbx_error_wrap (err, "busybox layer");
}

/* ---- a directory tree as a tar ---- */

typedef struct tar_out {
  struct archive *a;
  tar_sink sink;
  bool upper, skip_special;
  /* hard links: (dev, ino) of files with several links -> their first path */
  struct { dev_t dev; ino_t ino; char *path; } *links;
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
  sbx_ar.archive_entry_set_uid (e, st ? st->st_uid : 0);
  sbx_ar.archive_entry_set_gid (e, st ? st->st_gid : 0);
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
  DIR *d = fdopendir (dfd);
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
  closedir (d);
  return r;
}

int
sbx_tar_from_dir (int dirfd_, int outfd, bool upper, bool skip_special, sbx_error **err)
{
  if (sbx_archive_load (err) < 0)
    return -1;
  tar_out t = { .sink = { .fd = outfd }, .upper = upper, .skip_special = skip_special };
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
      _cleanup_free_ char *name = printable (sbx_ar.archive_entry_pathname (e));
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

/* ---- layers on their way to the disk ---- */

int
sbx_layer_check (const char *root, const char *digest, sbx_error **err)
{
  int r = layer_state (root, digest);
  if (r == -ENOENT)
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "layer %s is missing", digest);
  if (r < 0)
    return sbx_error_errno (err, -r, "layer %s", digest);
  if (r == 2)
    return sbx_error_set (err, SBX_E_INTERNAL, 0,
                          "layer %s may be incomplete: the host went down before it reached the disk "
                          "(import or build it again; the new copy replaces it)",
                          digest);
  return 0;
}

/* A layer directory as it was seen: its name (HEX) and inode. */
typedef struct seen_layer {
  char *name;
  ino_t ino;
} seen_layer;

/* The layers in DFD (ROOT/layers/sha256) with this boot's pending mark; *N
 * of them. */
static seen_layer *
settling_layers (int dfd, size_t *n)
{
  seen_layer *v = NULL;
  *n = 0;
  _cleanup_close_ int fd = dup (dfd);
  DIR *d = fd >= 0 ? fdopendir (fd) : NULL;
  if (d == NULL)
    return NULL;
  fd = -1;
  for (struct dirent *de; (de = readdir (d));)
    {
      if (de->d_name[0] == '.')
        continue;
      _cleanup_close_ int lfd = openat (dirfd (d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
      struct stat st;
      if (lfd < 0 || pending_state (lfd) != 1 || fstat (lfd, &st) < 0)
        continue;
      v = xrealloc (v, (*n + 1) * sizeof *v);
      v[(*n)++] = (seen_layer) { .name = xstrdup (de->d_name), .ino = st.st_ino };
    }
  closedir (d);
  return v;
}

int
sbx_layer_settle (const char *root)
{
  _cleanup_free_ char *path = xasprintf ("%s/layers/sha256", root);
  _cleanup_close_ int dfd = open (path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return errno == ENOENT ? 0 : -errno;
  /* Only marks seen before the sync: a layer installed meanwhile may not
   * be on the disk yet. */
  size_t nseen;
  seen_layer *seen = settling_layers (dfd, &nseen);
  int n = 0, r = 0;
  if (nseen > 0 && syncfs (dfd) < 0)
    r = -errno;
  for (size_t i = 0; i < nseen; i++)
    {
      /* The very directory seen, still with this boot's mark (gc may have
       * settled it first, and rmi plus a new import made it anew). */
      _cleanup_close_ int lfd = openat (dfd, seen[i].name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
      struct stat st;
      if (r == 0 && lfd >= 0 && fstat (lfd, &st) == 0 && st.st_ino == seen[i].ino && pending_state (lfd) == 1)
        n += unlinkat (lfd, PENDING_MARK, 0) == 0;
      free (seen[i].name);
    }
  free (seen);
  if (r < 0)
    return r;
  /* The marks' removal on the disk too, or a crash would bring them back:
   * harmless (the layer would be refused, then made again) but avoidable. */
  if (n > 0)
    syncfs (dfd);
  return n;
}

void
sbx_layer_settle_later (const char *root)
{
#ifndef SBX_LAYER_FUZZING
  pid_t pid = fork ();
  if (pid < 0)
    return;
  if (pid == 0)
    {
      /* A grandchild in a session of its own: not waited for, not killed
       * with the caller's terminal or process group, holding none of the
       * caller's files (a pipe a caller reads to its end among them) nor
       * its working directory (a mount someone may want to unmount). */
      if (setsid () < 0 || fork () != 0 || chdir ("/") < 0)
        _exit (0);
      int null = open ("/dev/null", O_RDWR | O_CLOEXEC);
      if (null < 0 || dup2 (null, 0) < 0 || dup2 (null, 1) < 0 || dup2 (null, 2) < 0)
        _exit (1);
      const int keep[] = { 0, 1, 2 };
      close_fds_except (keep, ARRAY_SIZE (keep));
      sigset_t all;
      sigemptyset (&all);
      sigprocmask (SIG_SETMASK, &all, NULL);
      _exit (sbx_layer_settle (root) < 0 ? 1 : 0);
    }
  int status;
  wait_child (pid, &status);
#endif
}
