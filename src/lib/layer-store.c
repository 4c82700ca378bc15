/* Layers in the store: ROOT/layers/sha256/HEX named by digest, the work
 * directories under ROOT/layers/tmp, the pending marks of layers not yet on
 * the disk (and the process that settles them), aliases, install and
 * removal. The top of layer-internal.h says how a layer is made. */
#include "config.h"
#include "layer-internal.h"
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

/* ---- digests and paths ---- */

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

uint64_t
sbx_layer_size (const char *root, const char *digest)
{
  _cleanup_free_ char *dir = sbx_layer_dir (root, digest);
  _cleanup_free_ char *p = dir ? xasprintf ("%s/" SIZE_FILE, dir) : NULL;
  _cleanup_close_ int fd = p ? open (p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
  char buf[32];
  ssize_t n = fd >= 0 ? read_all (fd, buf, sizeof buf - 1) : -1;
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  return strtoull (buf, NULL, 10);
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

int
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
bool
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
char *
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
  _cleanup_closedir_ DIR *d = opendir (dir);
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

int
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

int
sbx_layer_remove (const char *root, const char *digest, sbx_error **err)
{
  _cleanup_free_ char *dir = sbx_layer_dir (root, digest);
  if (dir == NULL)
    {
      _cleanup_free_ char *name = printable_masked (digest, 200, "(unreadable name)");
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
  _cleanup_closedir_ DIR *d = fd >= 0 ? fdopendir (fd) : NULL;
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
      v[(*n)++] = (seen_layer){ .name = xstrdup (de->d_name), .ino = st.st_ino };
    }
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
  sbx_spawn_wait (pid, &status);
#endif
}
