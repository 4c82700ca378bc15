/* --copy-in: a host tree into a sandbox's root, in one pass.
 *
 * Both sides are walked by fds. The host side opens each level relative to
 * its parent with O_NOFOLLOW and copies from the fd it opened, checked with
 * fstat (a symlink is read with readlinkat and made again as a link, never
 * followed; one swapped in mid-walk fails the open, not redirects it). The
 * sandbox side is the untrusted image: the destination is resolved once in
 * the root with RESOLVE_IN_ROOT (sbx_fs_*), its last component opened
 * O_NOFOLLOW, and below it every entry is made relative to a directory fd
 * with O_EXCL / O_NOFOLLOW, so nothing the image planted is followed out
 * of the root. Data moves with copy_file_range, else sendfile, else
 * read/write (the first that works, remembered for the whole tree). */
#include "config.h"
#include "copyin.h"
#include "fs.h"
#include "ignore.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

struct walk {
  const char *host;
  const char *dest;
  sbx_ignore *ig;
  sbx_copyin_stats *stats;
  struct stat root_st; /* the sandbox's root: a host tree holding it is not entered there */
  int method;          /* 0 copy_file_range, 1 sendfile, 2 read/write */
  char *buf;           /* read/write's buffer, made on first use */
  char rel[PATH_MAX];
};

/* --- the option --------------------------------------------------------- */

static bool
has_dotdot (const char *path)
{
  for (const char *p = path; *p;)
    {
      while (*p == '/')
        p++;
      const char *e = strchrnul (p, '/');
      if (e - p == 2 && p[0] == '.' && p[1] == '.')
        return true;
      p = e;
    }
  return false;
}

int
sbx_copyin_parse (const char *spec, char **ret_host, char **ret_dest, sbx_error **err)
{
  const char *colon = strrchr (spec, ':');
  _cleanup_free_ char *host = colon ? xstrndup (spec, (size_t) (colon - spec)) : xstrdup (spec);
  const char *dest = colon ? colon + 1 : SBX_COPYIN_DEST_DEFAULT;
  if (host[0] == '\0')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--copy-in `%s`: no host directory", spec);
  if (host[0] != '/')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--copy-in `%s`: the host directory is not absolute", spec);
  if (dest[0] != '/')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "--copy-in `%s`: the destination `%s` is not an absolute path (HOSTDIR[:/DEST]; a "
                          "HOSTDIR with a `:` needs an explicit :/DEST)",
                          spec, dest);
  if (has_dotdot (dest) || strlen (dest) >= PATH_MAX / 2 || strlen (host) >= PATH_MAX / 2)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--copy-in `%s`: a `..` in the destination, or too long",
                          spec);
  if (ret_host)
    *ret_host = steal_pointer (&host);
  if (ret_dest)
    *ret_dest = xstrdup (dest);
  return 0;
}

char *
sbx_copyin_absolute (const char *spec, const char *cwd)
{
  if (spec[0] == '/' || spec[0] == ':' || cwd == NULL)
    return xstrdup (spec);
  const char *rest = spec;
  while (rest[0] == '.' && rest[1] == '/')
    for (rest += 2; *rest == '/'; rest++)
      ;
  if (rest[0] == '.' && (rest[1] == '\0' || rest[1] == ':'))
    rest++;
  size_t cl = strlen (cwd);
  while (cl > 1 && cwd[cl - 1] == '/')
    cl--;
  if (rest[0] == '\0' || rest[0] == ':')
    return xasprintf ("%.*s%s", (int) cl, cwd, rest);
  return xasprintf ("%.*s%s%s", (int) cl, cwd, cl == 1 ? "" : "/", rest);
}

static int
open_host (const char *spec, const char *host, int *ret, sbx_error **err)
{
  /* HOSTDIR itself is the caller's path, resolved as given; below it
   * nothing is followed. */
  int fd = open (host, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0)
    {
      *ret = fd;
      return 0;
    }
  switch (errno)
    {
    case ENOENT:
      return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "--copy-in `%s`: no such directory `%s`", spec, host);
    case ENOTDIR:
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--copy-in `%s`: `%s` is not a directory", spec, host);
    case EACCES:
    case EPERM:
      return sbx_error_set (err, SBX_E_PERMISSION_DENIED, errno, "--copy-in `%s`: `%s`: permission denied", spec, host);
    default:
      return sbx_error_errno (err, errno, "--copy-in `%s`: open `%s`", spec, host);
    }
}

int
sbx_copyin_check (const char *spec, sbx_error **err)
{
  _cleanup_free_ char *host = NULL;
  _cleanup_close_ int fd = -1;
  if (sbx_copyin_parse (spec, &host, NULL, err) < 0 || open_host (spec, host, &fd, err) < 0)
    return -1;
  return 0;
}

/* --- errors -------------------------------------------------------------- */

static int
dest_error (struct walk *w, int e, const char *what, sbx_error **err)
{
  if (e == ENOSPC || e == EDQUOT)
    return sbx_error_set (err, SBX_E_RESOURCE_EXHAUSTED, e,
                          "%s does not fit in the sandbox's disk (--disk): full at %s `%s/%s`", w->host, what, w->dest,
                          w->rel);
  if (e == EISDIR || e == ENOTEMPTY || e == ELOOP || e == ENOTDIR)
    return sbx_error_set (err, SBX_E_PATH_INVALID, e, "%s `%s/%s`: the image has an entry of another type there", what,
                          w->dest, w->rel);
  return sbx_error_errno (err, e, "%s `%s/%s`", what, w->dest, w->rel);
}

static int
host_error (struct walk *w, int e, const char *what, sbx_error **err)
{
  if (e == ELOOP || e == ENOTDIR)
    return sbx_error_set (err, SBX_E_BUSY, e, "%s `%s/%s`: it changed while it was copied", what, w->host, w->rel);
  if (e == EACCES || e == EPERM)
    return sbx_error_set (err, SBX_E_PERMISSION_DENIED, e, "%s `%s/%s`: permission denied", what, w->host, w->rel);
  return sbx_error_errno (err, e, "%s `%s/%s`", what, w->host, w->rel);
}

/* --- one entry ----------------------------------------------------------- */

static int
copy_data (struct walk *w, int in, int out, sbx_error **err)
{
  for (;;)
    {
      ssize_t n;
      if (w->method == 0)
        n = copy_file_range (in, NULL, out, NULL, 1 << 30, 0);
      else if (w->method == 1)
        n = sendfile (out, in, NULL, 1 << 30);
      else
        {
          if (w->buf == NULL)
            w->buf = xmalloc (1 << 20);
          n = read (in, w->buf, 1 << 20);
          if (n > 0 && write_all (out, w->buf, (size_t) n) < 0)
            return dest_error (w, errno, "write", err);
        }
      if (n == 0)
        return 0;
      if (n > 0)
        {
          w->stats->bytes += (uint64_t) n;
          continue;
        }
      if (errno == EINTR)
        continue;
      if (w->method < 2 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP))
        {
          w->method++;
          continue;
        }
      return dest_error (w, errno, "write", err);
    }
}

static void
times_of (const struct stat *st, struct timespec ts[2])
{
  ts[0] = st->st_atim;
  ts[1] = st->st_mtim;
}

/* NAME made by MAKE in DST; where the image has an entry of that name,
 * it goes first (a directory only when empty). */
static int
replace_existing (int dst, const char *name, bool dir_wanted)
{
  struct stat st;
  if (fstatat (dst, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return -1;
  if (dir_wanted && S_ISDIR (st.st_mode))
    return 0;
  return unlinkat (dst, name, S_ISDIR (st.st_mode) ? AT_REMOVEDIR : 0);
}

static int
copy_file (struct walk *w, int src, int dst, const char *name, sbx_error **err)
{
  _cleanup_close_ int in = openat (src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (in < 0)
    return errno == ENOENT ? 0 : host_error (w, errno, "open", err);
  struct stat st;
  if (fstat (in, &st) < 0)
    return host_error (w, errno, "stat", err);
  if (!S_ISREG (st.st_mode))
    {
      w->stats->skipped++;
      return 0;
    }
  int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  _cleanup_close_ int out = openat (dst, name, flags, 0600);
  if (out < 0 && errno == EEXIST && replace_existing (dst, name, false) == 0)
    out = openat (dst, name, flags, 0600);
  if (out < 0)
    return dest_error (w, errno, "create", err);
  if (copy_data (w, in, out, err) < 0)
    return -1;
  struct timespec ts[2];
  times_of (&st, ts);
  if (sbx_fs_own_at (out, "") < 0 || fchmod (out, st.st_mode & 01777) < 0 || futimens (out, ts) < 0)
    return dest_error (w, errno, "set the mode and times of", err);
  w->stats->files++;
  return 0;
}

static int
copy_link (struct walk *w, int src, int dst, const char *name, sbx_error **err)
{
  char target[PATH_MAX];
  struct stat st;
  if (fstatat (src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? 0 : host_error (w, errno, "stat", err);
  if (!S_ISLNK (st.st_mode))
    return host_error (w, ELOOP, "readlink", err);
  ssize_t n = readlinkat (src, name, target, sizeof target);
  if (n < 0)
    return host_error (w, errno, "readlink", err);
  if ((size_t) n >= sizeof target)
    return host_error (w, ENAMETOOLONG, "readlink", err);
  target[n] = '\0';
  int r = symlinkat (target, dst, name);
  if (r < 0 && errno == EEXIST && replace_existing (dst, name, false) == 0)
    r = symlinkat (target, dst, name);
  if (r < 0 || sbx_fs_own_at (dst, name) < 0)
    return dest_error (w, errno, "symlink", err);
  struct timespec ts[2];
  times_of (&st, ts);
  utimensat (dst, name, ts, AT_SYMLINK_NOFOLLOW);
  w->stats->links++;
  return 0;
}

static int copy_tree (struct walk *w, int src, int dst, int depth, sbx_error **err);

static int
copy_subdir (struct walk *w, int src, int dst, const char *name, int depth, sbx_error **err)
{
  if (depth >= SBX_COPYIN_DEPTH_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s/%s`: deeper than %d levels", w->host, w->rel,
                          SBX_COPYIN_DEPTH_MAX);
  int in = openat (src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0)
    return errno == ENOENT ? 0 : host_error (w, errno, "open", err);
  _cleanup_close_ int in_guard = in;
  struct stat st;
  if (fstat (in, &st) < 0)
    return host_error (w, errno, "stat", err);
  /* A HOSTDIR above sbx's store would reach the root being written. */
  if (st.st_dev == w->root_st.st_dev && st.st_ino == w->root_st.st_ino)
    {
      w->stats->skipped++;
      return 0;
    }
  int r = mkdirat (dst, name, 0700);
  if (r < 0 && errno == EEXIST && replace_existing (dst, name, true) == 0)
    r = mkdirat (dst, name, 0700);
  if (r < 0 && errno != EEXIST)
    return dest_error (w, errno, "mkdir", err);
  _cleanup_close_ int out = openat (dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (out < 0)
    return dest_error (w, errno, "open", err);
  if (copy_tree (w, steal_fd (&in_guard), out, depth + 1, err) < 0)
    return -1;
  struct timespec ts[2];
  times_of (&st, ts);
  if (sbx_fs_own_at (out, "") < 0 || fchmod (out, st.st_mode & 01777) < 0 || futimens (out, ts) < 0)
    return dest_error (w, errno, "set the mode and times of", err);
  w->stats->dirs++;
  return 0;
}

/* The type of ENT: its d_type, or an fstatat where the filesystem gives
 * none. DT_UNKNOWN when it went meanwhile. */
static unsigned char
entry_type (int src, const struct dirent *ent)
{
  if (ent->d_type != DT_UNKNOWN)
    return ent->d_type;
  struct stat st;
  if (fstatat (src, ent->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return DT_UNKNOWN;
  return S_ISREG (st.st_mode) ? DT_REG : S_ISDIR (st.st_mode) ? DT_DIR : S_ISLNK (st.st_mode) ? DT_LNK : DT_FIFO;
}

/* Copies the directory SRC (an fd it takes) into DST, entry by entry. */
static int
copy_tree (struct walk *w, int src, int dst, int depth, sbx_error **err)
{
  _cleanup_closedir_ DIR *d = fdopendir (src);
  if (d == NULL)
    {
      int e = errno;
      close (src);
      return host_error (w, e, "read", err);
    }
  size_t base = strlen (w->rel);
  struct dirent *ent;
  errno = 0;
  while ((ent = readdir (d)) != NULL)
    {
      const char *name = ent->d_name;
      if (strcmp (name, ".") == 0 || strcmp (name, "..") == 0)
        continue;
      size_t nl = strlen (name);
      if (base + 1 + nl >= sizeof w->rel)
        return host_error (w, ENAMETOOLONG, "copy", err);
      if (base)
        w->rel[base] = '/';
      memcpy (w->rel + base + (base ? 1 : 0), name, nl + 1);
      unsigned char type = entry_type (dirfd (d), ent);
      int r = 0;
      if (type == DT_UNKNOWN)
        ; /* gone meanwhile */
      else if (sbx_ignore_match (w->ig, w->rel, type == DT_DIR))
        w->stats->ignored++;
      else if (type == DT_REG)
        r = copy_file (w, dirfd (d), dst, name, err);
      else if (type == DT_DIR)
        r = copy_subdir (w, dirfd (d), dst, name, depth, err);
      else if (type == DT_LNK)
        r = copy_link (w, dirfd (d), dst, name, err);
      else
        w->stats->skipped++;
      w->rel[base] = '\0';
      if (r < 0)
        return -1;
      errno = 0;
    }
  if (errno != 0)
    return host_error (w, errno, "read", err);
  return 0;
}

/* .sbxignore at the top of the tree, if it has one (a regular file). */
static int
load_ignore (struct walk *w, int top, sbx_error **err)
{
  _cleanup_close_ int fd = openat (top, ".sbxignore", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    return 0;
  struct stat st;
  if (fd < 0 || fstat (fd, &st) < 0 || !S_ISREG (st.st_mode))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, fd < 0 ? errno : 0,
                          "`%s/.sbxignore` is not a regular file (a symlink is not followed)", w->host);
  if (st.st_size > SBX_IGNORE_SIZE_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s/.sbxignore`: larger than %u KiB", w->host,
                          SBX_IGNORE_SIZE_MAX >> 10);
  _cleanup_free_ char *text = xmalloc ((size_t) st.st_size + 1);
  ssize_t n = read_all (fd, text, (size_t) st.st_size + 1);
  if (n < 0)
    return sbx_error_errno (err, errno, "read `%s/.sbxignore`", w->host);
  _cleanup_free_ char *name = xasprintf ("%s/.sbxignore", w->host);
  return sbx_ignore_parse (name, text, (size_t) n, &w->ig, err);
}

int
sbx_copyin (int root, const char *spec, sbx_copyin_stats *stats, sbx_error **err)
{
  _cleanup_free_ char *host = NULL, *dest = NULL;
  _cleanup_close_ int top = -1, out = -1;
  if (sbx_copyin_parse (spec, &host, &dest, err) < 0 || open_host (spec, host, &top, err) < 0)
    return -1;
  struct walk w = { .host = host, .dest = dest, .stats = stats };
  if (fstat (root, &w.root_st) < 0)
    return sbx_error_errno (err, errno, "stat the sandbox's root");
  _cleanup_ignore_ sbx_ignore *ig = NULL;
  if (load_ignore (&w, top, err) < 0)
    return -1;
  ig = w.ig;
  /* The destination: made (as mkdir -p) and opened in the root; its last
   * component must be a directory, not a link the image planted. */
  if (sbx_fs_mkdir (root, dest, true, err) < 0)
    return sbx_error_wrap (err, "--copy-in: the destination");
  if (sbx_fs_open (root, dest, O_RDONLY | O_DIRECTORY, false, &out, err) < 0)
    return sbx_error_wrap (err, "--copy-in: the destination (a directory, not a symlink, in the image)");
  int r = copy_tree (&w, steal_fd (&top), out, 0, err);
  free (w.buf);
  return r;
}
