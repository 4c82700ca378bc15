/* The sandbox file API, host side (see fs.h and DESIGN.md section 4). */
#include "config.h"
#include "fs.h"
#include "userns.h"
#include "openat.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <poll.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/sendfile.h>
#include <unistd.h>

#define RESOLVE_FLAGS (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
#define WALK_DEPTH_MAX 256
#define REPLACE_FILE_MAX ((size_t) 256 << 20)
#define FIND_LINE_MAX (1u << 20)
#define WATCH_DIRS_MAX 8192

/* --- errors and paths ---------------------------------------------------- */

/* An errno of a file operation as its stable code. Returns -1. */
static int
fs_error (sbx_error **err, int e, const char *what, const char *path)
{
  switch (e)
    {
    case ENOENT:
      return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "%s `%s`: no such file or directory", what, path);
    case ENOTDIR:
      return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "%s `%s`: a component is not a directory", what, path);
    case ELOOP:
      return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "%s `%s`: too many levels of symbolic links", what, path);
    case EXDEV:
      return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "%s `%s`: the path leaves the sandbox's root", what, path);
    case ENAMETOOLONG:
      return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "%s `%s`: name too long", what, path);
    case EISDIR:
      return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "%s `%s`: is a directory", what, path);
    case EEXIST:
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s `%s`: already exists", what, path);
    case ENOTEMPTY:
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s `%s`: directory not empty", what, path);
    case EAGAIN:
      return sbx_error_set (err, SBX_E_BUSY, 0, "%s `%s`: the path kept changing under a rename storm", what, path);
    default:
      return sbx_error_errno (err, e, "%s `%s`", what, path);
    }
}

/* The user namespace of the sandbox this process works on (0: none): one
 * sandbox per process (its monitor, or one CLI call), set once before the
 * first call (sbx_fs_set_userns). */
static uint32_t fs_userns_base;

void
sbx_fs_set_userns (uint32_t base)
{
  fs_userns_base = base;
}

uint32_t
sbx_fs_userns (void)
{
  return fs_userns_base;
}

int
sbx_fs_own_at (int dir, const char *name)
{
  if (fs_userns_base == 0)
    return 0;
  uid_t id = sbx_userns_outside (fs_userns_base, 0);
  return fchownat (dir, name, id, (gid_t) id, AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH));
}

int
sbx_fs_path_check (const char *path, sbx_error **err)
{
  if (path == NULL || path[0] != '/')
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "`%s`: paths in a sandbox are absolute", path ? path : "");
  if (strlen (path) >= PATH_MAX)
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "path too long");
  for (const char *p = path; *p;)
    {
      while (*p == '/')
        p++;
      const char *e = strchrnul (p, '/');
      if (e - p == 2 && p[0] == '.' && p[1] == '.')
        return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "`%s`: a `..` component is not allowed", path);
      p = e;
    }
  return 0;
}

int
sbx_fs_open (int root, const char *path, int flags, bool follow, int *ret, sbx_error **err)
{
  if (sbx_fs_path_check (path, err) < 0)
    return -1;
  int fd = sbx_openat2 (root, path, flags | (follow ? 0 : O_NOFOLLOW), 0600, RESOLVE_FLAGS);
  if (fd < 0)
    return fs_error (err, errno, "open", path);
  *ret = fd;
  return 0;
}

/* Splits PATH into its parent directory (opened O_PATH, resolved in the
 * root) and its last component (*ret_name, allocated). The root itself has
 * no parent: PATH_INVALID. */
static int
fs_parent (int root, const char *path, int *ret_dir, char **ret_name, sbx_error **err)
{
  if (sbx_fs_path_check (path, err) < 0)
    return -1;
  size_t n = strlen (path);
  while (n > 1 && path[n - 1] == '/')
    n--;
  size_t s = n;
  while (s > 0 && path[s - 1] != '/')
    s--;
  if (s == n || (n - s == 1 && path[s] == '.'))
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "`%s` names the root or `.`, not an entry", path);
  _cleanup_free_ char *dir = xstrndup (path, s);
  int fd = sbx_openat2 (root, dir, O_PATH | O_DIRECTORY, 0, RESOLVE_FLAGS);
  if (fd < 0)
    return fs_error (err, errno, "open", dir);
  *ret_dir = fd;
  *ret_name = xstrndup (path + s, n - s);
  return 0;
}

/* A second, readable open of the inode an O_PATH fd holds: no path is
 * resolved again, so nothing can be swapped in between. */
static int
reopen (int opath, int flags)
{
  char p[64];
  snprintf (p, sizeof p, "/proc/self/fd/%d", opath);
  int fd = open (p, flags | O_CLOEXEC | O_NOCTTY);
  return fd < 0 ? -errno : fd;
}

static int
cmp_names (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

char **
sbx_dir_sorted (DIR *d, bool (*keep) (const struct dirent *de, const void *data), const void *data, size_t *ret_n)
{
  char **names = xmalloc0 (sizeof (char *));
  size_t n = 0, cap = 1;
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0 || (keep && !keep (de, data)))
        continue;
      if (n + 1 >= cap)
        {
          cap *= 2;
          names = xrealloc (names, cap * sizeof *names);
        }
      names[n++] = xstrdup (de->d_name);
      names[n] = NULL;
    }
  qsort (names, n, sizeof *names, cmp_names);
  *ret_n = n;
  return names;
}

static char *
join (const char *dir, const char *name)
{
  size_t l = strlen (dir);
  return xasprintf ("%s%s%s", dir, l && dir[l - 1] == '/' ? "" : "/", name);
}

/* --- reading and writing ------------------------------------------------ */

int
sbx_fs_open_read (int root, const char *path, struct stat *st, int *ret, sbx_error **err)
{
  _cleanup_close_ int o = -1;
  if (sbx_fs_open (root, path, O_PATH, true, &o, err) < 0)
    return -1;
  if (fstat (o, st) < 0)
    return sbx_error_errno (err, errno, "stat `%s`", path);
  if (S_ISDIR (st->st_mode))
    return fs_error (err, EISDIR, "read", path);
  if (!S_ISREG (st->st_mode))
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "read `%s`: not a regular file", path);
  int fd = reopen (o, O_RDONLY);
  if (fd < 0)
    return fs_error (err, -fd, "open", path);
  *ret = fd;
  return 0;
}

int
sbx_fs_write_begin (int root, const char *path, mode_t mode, bool keep_mode, sbx_fs_writer *w, sbx_error **err)
{
  uid_t owner = sbx_userns_outside (fs_userns_base, 0);
  *w = (sbx_fs_writer){ .dir = -1, .fd = -1, .mode = mode & 07777, .uid = owner, .gid = (gid_t) owner };
  if (fs_parent (root, path, &w->dir, &w->name, err) < 0)
    return -1;
  struct stat st;
  bool exists = fstatat (w->dir, w->name, &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (exists && S_ISDIR (st.st_mode))
    {
      sbx_fs_write_abort (w);
      return fs_error (err, EISDIR, "write", path);
    }
  /* DIR/ names a directory: never a file made there, or a symlink (even a
   * dangling one) replaced. */
  if (path[strlen (path) - 1] == '/')
    {
      sbx_fs_write_abort (w);
      if (!exists)
        return sbx_error_set (err, SBX_E_NOT_FOUND, 0,
                              "write `%s`: no such directory (a path that ends in `/` names one)", path);
      return sbx_error_set (err, SBX_E_PATH_INVALID, 0,
                            "write `%s`: not a directory (a path that ends in `/` names one)", path);
    }
  if (exists && S_ISREG (st.st_mode))
    {
      if (keep_mode)
        w->mode = st.st_mode & 07777;
      w->uid = st.st_uid;
      w->gid = st.st_gid;
    }
  for (int i = 0; i < 16 && w->fd < 0; i++)
    {
      _cleanup_free_ char *rnd = random_hex (6);
      free (w->tmp);
      w->tmp = xasprintf (".sbx-write-%s", rnd);
      w->fd = openat (w->dir, w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (w->fd < 0 && errno != EEXIST)
        break;
    }
  if (w->fd < 0)
    {
      int e = errno;
      sbx_fs_write_abort (w);
      return fs_error (err, e, "create a file beside", path);
    }
  return 0;
}

void
sbx_fs_write_abort (sbx_fs_writer *w)
{
  if (w->fd >= 0)
    {
      close (w->fd);
      unlinkat (w->dir, w->tmp, 0);
    }
  if (w->dir >= 0)
    close (w->dir);
  free (w->name);
  free (w->tmp);
  *w = (sbx_fs_writer){ .dir = -1, .fd = -1 };
}

int
sbx_fs_write_commit (sbx_fs_writer *w, sbx_error **err)
{
  int r = 0;
  if (fchown (w->fd, w->uid, w->gid) < 0 || fchmod (w->fd, w->mode) < 0)
    r = sbx_error_errno (err, errno, "set the mode of `%s`", w->name);
  else if (renameat (w->dir, w->tmp, w->dir, w->name) < 0)
    r = fs_error (err, errno, "replace", w->name);
  if (r == 0)
    {
      close (w->fd);
      w->fd = -1;
    }
  sbx_fs_write_abort (w);
  return r;
}

int
sbx_fs_copy (int in, int out, sbx_error **err)
{
  static char buf[1 << 20];
  int method = 0; /* copy_file_range, sendfile, read/write: the first that works */
  for (;;)
    {
      ssize_t n;
      if (method == 0)
        n = copy_file_range (in, NULL, out, NULL, 1 << 30, 0);
      else if (method == 1)
        n = sendfile (out, in, NULL, 1 << 30);
      else
        {
          n = read (in, buf, sizeof buf);
          if (n > 0 && write_all (out, buf, (size_t) n) < 0)
            return sbx_error_errno (err, errno, "write");
        }
      if (n == 0)
        return 0;
      if (n > 0 || errno == EINTR)
        continue;
      if (method < 2
          && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP || errno == EBADF
              || errno == ESPIPE))
        {
          method++;
          continue;
        }
      if (errno == EAGAIN)
        {
          struct pollfd pf[2] = { { in, POLLIN, 0 }, { out, POLLOUT, 0 } };
          poll (pf, 2, 100);
          continue;
        }
      return sbx_error_errno (err, errno, "copy");
    }
}

/* --- entries ----------------------------------------------------------- */

void
sbx_fs_entry_clear (sbx_fs_entry *e)
{
  free (e->name);
  free (e->path);
  free (e->target);
  *e = (sbx_fs_entry){ 0 };
}

void
sbx_fs_entries_free (sbx_fs_entry *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    sbx_fs_entry_clear (&v[i]);
  free (v);
}

static const char *
type_name (mode_t m)
{
  return S_ISREG (m) ? "file" : S_ISDIR (m) ? "dir" : S_ISLNK (m) ? "symlink" : "other";
}

/* Fills E from the entry NAME of DIR (never followed). */
static int
entry_at (int dir, const char *name, const char *path, sbx_fs_entry *e, sbx_error **err)
{
  struct stat st;
  if (fstatat (dir, name, &st, AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH)) < 0)
    return fs_error (err, errno, "stat", path);
  *e = (sbx_fs_entry){ .name = xstrdup (name[0] ? name : "/"),
                       .path = xstrdup (path),
                       .type = type_name (st.st_mode),
                       .size = (uint64_t) st.st_size,
                       .mode = st.st_mode & 07777,
                       .uid = sbx_userns_inside (fs_userns_base, st.st_uid),
                       .gid = sbx_userns_inside (fs_userns_base, st.st_gid),
                       .mtime = st.st_mtim.tv_sec,
                       .mtime_ns = st.st_mtim.tv_nsec };
  if (S_ISLNK (st.st_mode))
    {
      char buf[PATH_MAX];
      ssize_t n = readlinkat (dir, name, buf, sizeof buf - 1);
      e->target = xstrndup (buf, n > 0 ? (size_t) n : 0);
    }
  return 0;
}

int
sbx_fs_stat (int root, const char *path, sbx_fs_entry *e, sbx_error **err)
{
  if (sbx_fs_path_check (path, err) < 0)
    return -1;
  _cleanup_close_ int dir = -1;
  _cleanup_free_ char *name = NULL;
  if (strspn (path, "/") == strlen (path))
    return entry_at (root, "", "/", e, err);
  if (fs_parent (root, path, &dir, &name, err) < 0)
    return -1;
  return entry_at (dir, name, path, e, err);
}

/* ls: only the names after the cursor. */
static bool
after_cursor (const struct dirent *de, const void *cursor)
{
  return cursor == NULL || strcmp (de->d_name, cursor) > 0;
}

int
sbx_fs_list (int root, const char *path, const char *cursor, size_t limit, sbx_fs_entry **ret, size_t *ret_n,
             char **ret_next, sbx_error **err)
{
  *ret = NULL;
  *ret_n = 0;
  *ret_next = NULL;
  _cleanup_close_ int o = -1;
  if (sbx_fs_open (root, path, O_PATH, true, &o, err) < 0)
    return -1;
  struct stat st;
  if (fstat (o, &st) < 0)
    return sbx_error_errno (err, errno, "stat `%s`", path);
  if (!S_ISDIR (st.st_mode))
    {
      /* Like ls(1): a file lists itself. */
      sbx_fs_entry *e = xmalloc0 (sizeof *e);
      if (sbx_fs_stat (root, path, e, err) < 0)
        {
          free (e);
          return -1;
        }
      *ret = e;
      *ret_n = 1;
      return 0;
    }
  int fd = reopen (o, O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return fs_error (err, -fd, "open", path);
  _cleanup_closedir_ DIR *d = fdopendir (fd);
  if (d == NULL)
    {
      close (fd);
      return sbx_error_errno (err, errno, "opendir `%s`", path);
    }
  size_t n;
  _cleanup_strv_ char **names = sbx_dir_sorted (d, after_cursor, cursor, &n);
  size_t take = n < limit ? n : limit;
  sbx_fs_entry *v = xmalloc0 ((take ? take : 1) * sizeof *v);
  size_t got = 0;
  int r = 0;
  for (size_t i = 0; i < take && r == 0; i++)
    {
      _cleanup_free_ char *p = join (path, names[i]);
      sbx_error *e = NULL;
      if (entry_at (dirfd (d), names[i], p, &v[got], &e) == 0)
        got++;
      else if (e->code == SBX_E_NOT_FOUND)
        sbx_error_free (e); /* removed since the listing: not there */
      else
        {
          *err = e;
          r = -1;
        }
    }
  if (r == 0 && take < n)
    *ret_next = xstrdup (names[take - 1]);
  if (r < 0)
    {
      sbx_fs_entries_free (v, got);
      return -1;
    }
  *ret = v;
  *ret_n = got;
  return 0;
}

/* --- directories ------------------------------------------------------- */

int
sbx_fs_mkdir (int root, const char *path, bool parents, sbx_error **err)
{
  if (sbx_fs_path_check (path, err) < 0)
    return -1;
  if (!parents)
    {
      _cleanup_close_ int dir = -1;
      _cleanup_free_ char *name = NULL;
      if (fs_parent (root, path, &dir, &name, err) < 0)
        return -1;
      if (mkdirat (dir, name, 0755) < 0 || sbx_fs_own_at (dir, name) < 0)
        return fs_error (err, errno, "mkdir", path);
      return 0;
    }
  /* -p: each prefix in turn, each resolved afresh from the root (a
   * component that is a symlink to a directory is followed, inside). */
  size_t len = strlen (path);
  for (size_t i = 1; i <= len; i++)
    {
      if (i < len && path[i] != '/')
        continue;
      _cleanup_free_ char *prefix = xstrndup (path, i);
      if (strspn (prefix, "/") == strlen (prefix))
        continue;
      _cleanup_close_ int dir = -1;
      _cleanup_free_ char *name = NULL;
      sbx_error *e = NULL;
      if (fs_parent (root, prefix, &dir, &name, &e) < 0)
        {
          /* "." components and doubled slashes: nothing to make. */
          if (e->code == SBX_E_PATH_INVALID && strstr (e->msg, "names the root"))
            {
              sbx_error_free (e);
              continue;
            }
          *err = e;
          return -1;
        }
      if (mkdirat (dir, name, 0755) == 0)
        {
          if (sbx_fs_own_at (dir, name) < 0)
            return fs_error (err, errno, "mkdir", prefix);
          continue;
        }
      if (errno != EEXIST)
        return fs_error (err, errno, "mkdir", prefix);
      int fd = sbx_openat2 (root, prefix, O_PATH | O_DIRECTORY, 0, RESOLVE_FLAGS);
      if (fd < 0)
        return fs_error (err, errno == ENOTDIR ? EEXIST : errno, "mkdir", prefix);
      close (fd);
    }
  return 0;
}

int
sbx_fs_symlink (int root, const char *path, const char *target, sbx_error **err)
{
  _cleanup_close_ int dir = -1;
  _cleanup_free_ char *name = NULL;
  if (fs_parent (root, path, &dir, &name, err) < 0)
    return -1;
  if (symlinkat (target, dir, name) < 0 || sbx_fs_own_at (dir, name) < 0)
    return fs_error (err, errno, "symlink", path);
  return 0;
}

int
sbx_fs_rm (int root, const char *path, sbx_error **err)
{
  _cleanup_close_ int dir = -1;
  _cleanup_free_ char *name = NULL;
  if (fs_parent (root, path, &dir, &name, err) < 0)
    return -1;
  if (unlinkat (dir, name, 0) < 0)
    {
      if (errno == EISDIR || errno == EPERM)
        {
          struct stat st;
          if (fstatat (dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR (st.st_mode))
            return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "rm `%s`: is a directory (use rmdir)", path);
        }
      return fs_error (err, errno, "rm", path);
    }
  return 0;
}

/* Empties directory NAME of DIR, never following a symlink: each level is
 * opened O_NOFOLLOW from the one above. */
static int
remove_tree (int dir, const char *name, const char *path, int depth, sbx_error **err)
{
  if (depth > WALK_DEPTH_MAX)
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "`%s`: nested deeper than %d levels", path, WALK_DEPTH_MAX);
  int fd = openat (dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    {
      if (errno == ENOTDIR || errno == ELOOP)
        return unlinkat (dir, name, 0) < 0 && errno != ENOENT ? fs_error (err, errno, "rm", path) : 0;
      return errno == ENOENT ? 0 : fs_error (err, errno, "open", path);
    }
  _cleanup_closedir_ DIR *d = fdopendir (fd);
  if (d == NULL)
    {
      close (fd);
      return sbx_error_errno (err, errno, "opendir `%s`", path);
    }
  int r = 0;
  struct dirent *de;
  while (r == 0 && (de = readdir (d)) != NULL)
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      _cleanup_free_ char *p = join (path, de->d_name);
      if (de->d_type == DT_DIR || unlinkat (dirfd (d), de->d_name, 0) < 0)
        {
          if (de->d_type != DT_DIR && errno == ENOENT)
            continue;
          if (de->d_type != DT_DIR && errno != EISDIR && errno != EPERM)
            r = fs_error (err, errno, "rm", p);
          else
            r = remove_tree (dirfd (d), de->d_name, p, depth + 1, err);
        }
    }
  if (r == 0 && unlinkat (dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
    r = fs_error (err, errno, "rmdir", path);
  return r;
}

int
sbx_fs_rmdir (int root, const char *path, bool recursive, sbx_error **err)
{
  _cleanup_close_ int dir = -1;
  _cleanup_free_ char *name = NULL;
  if (fs_parent (root, path, &dir, &name, err) < 0)
    return -1;
  struct stat st;
  if (fstatat (dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return fs_error (err, errno, "rmdir", path);
  if (!S_ISDIR (st.st_mode))
    return fs_error (err, ENOTDIR, "rmdir", path);
  if (!recursive)
    return unlinkat (dir, name, AT_REMOVEDIR) < 0 ? fs_error (err, errno, "rmdir", path) : 0;
  return remove_tree (dir, name, path, 0, err);
}

/* --- walks: find and replace ------------------------------------------- */

/* Walks look at directories and regular files only. */
static bool
dir_or_file (const struct dirent *de, const void *unused)
{
  (void) unused;
  return de->d_type == DT_DIR || de->d_type == DT_REG || de->d_type == DT_UNKNOWN;
}

typedef int (*file_fn) (int dir, const char *name, const char *path, int fd, const struct stat *st, void *data,
                        sbx_error **err);

/* Calls FN for each regular file under directory fd DIR (owned, closed
 * here) whose name matches GLOB, with a readable fd of it. */
static int
walk_dir (int fd, const char *path, const char *glob, int depth, file_fn fn, void *data, sbx_error **err)
{
  _cleanup_closedir_ DIR *d = fdopendir (fd);
  if (d == NULL)
    {
      close (fd);
      return sbx_error_errno (err, errno, "opendir `%s`", path);
    }
  /* Sorted, so that output is stable from call to call. */
  size_t n;
  _cleanup_strv_ char **names = sbx_dir_sorted (d, dir_or_file, NULL, &n);
  int r = 0;
  for (size_t i = 0; i < n && r == 0; i++)
    {
      _cleanup_free_ char *p = join (path, names[i]);
      _cleanup_close_ int o = openat (dirfd (d), names[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
      struct stat st;
      if (o < 0 || fstat (o, &st) < 0)
        continue; /* gone since the listing */
      if (S_ISDIR (st.st_mode))
        {
          if (depth >= WALK_DEPTH_MAX)
            r = sbx_error_set (err, SBX_E_PATH_INVALID, 0, "`%s`: nested deeper than %d levels", p, WALK_DEPTH_MAX);
          else
            {
              int sub = reopen (o, O_RDONLY | O_DIRECTORY);
              if (sub >= 0)
                r = walk_dir (sub, p, glob, depth + 1, fn, data, err);
            }
        }
      else if (S_ISREG (st.st_mode) && (glob == NULL || fnmatch (glob, names[i], 0) == 0))
        {
          _cleanup_close_ int rd = reopen (o, O_RDONLY);
          if (rd >= 0)
            r = fn (dirfd (d), names[i], p, rd, &st, data, err);
        }
    }
  return r;
}

/* PATH itself when it is a regular file, else the files under it. */
static int
walk (int root, const char *path, const char *glob, file_fn fn, void *data, sbx_error **err)
{
  _cleanup_close_ int o = -1;
  if (sbx_fs_open (root, path, O_PATH, true, &o, err) < 0)
    return -1;
  struct stat st;
  if (fstat (o, &st) < 0)
    return sbx_error_errno (err, errno, "stat `%s`", path);
  if (S_ISDIR (st.st_mode))
    {
      int fd = reopen (o, O_RDONLY | O_DIRECTORY);
      if (fd < 0)
        return fs_error (err, -fd, "open", path);
      return walk_dir (fd, path, glob, 0, fn, data, err);
    }
  if (!S_ISREG (st.st_mode))
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "`%s`: not a regular file or directory", path);
  _cleanup_close_ int dir = -1;
  _cleanup_free_ char *name = NULL;
  if (fs_parent (root, path, &dir, &name, err) < 0)
    return -1;
  _cleanup_close_ int rd = reopen (o, O_RDONLY);
  if (rd < 0)
    return fs_error (err, -rd, "open", path);
  return fn (dir, name, path, rd, &st, data, err);
}

static bool
is_binary (int fd)
{
  char buf[8192];
  ssize_t n = pread (fd, buf, sizeof buf, 0);
  return n > 0 && memchr (buf, '\0', (size_t) n) != NULL;
}

struct find_ctx {
  regex_t re;
  sbx_fs_match_fn fn;
  void *data;
  char *line;
};

static void
find_line (struct find_ctx *c, const char *path, uint64_t no, char *line, size_t len)
{
  char save = line[len];
  line[len] = '\0';
  if (regexec (&c->re, line, 0, NULL, 0) == 0)
    c->fn (c->data, path, no, line, len);
  line[len] = save;
}

static int
find_file (int dir, const char *name, const char *path, int fd, const struct stat *st, void *data, sbx_error **err)
{
  (void) dir, (void) name, (void) st, (void) err;
  struct find_ctx *c = data;
  if (is_binary (fd))
    return 0;
  static char buf[1 << 16];
  size_t have = 0; /* bytes of the current line in c->line */
  bool cut = false;
  uint64_t no = 1;
  ssize_t n;
  while ((n = read (fd, buf, sizeof buf)) > 0)
    {
      char *p = buf, *end = buf + n;
      while (p < end)
        {
          char *nl = memchr (p, '\n', (size_t) (end - p));
          size_t chunk = (size_t) ((nl ? nl : end) - p);
          size_t room = FIND_LINE_MAX - have;
          if (chunk > room)
            cut = true;
          memcpy (c->line + have, p, chunk < room ? chunk : room);
          have += chunk < room ? chunk : room;
          if (nl == NULL)
            break;
          find_line (c, path, no++, c->line, have);
          have = 0;
          cut = false;
          p = nl + 1;
        }
    }
  (void) cut; /* a line longer than FIND_LINE_MAX is matched on its start */
  if (have > 0)
    find_line (c, path, no, c->line, have);
  return 0;
}

int
sbx_fs_find (int root, const char *path, const char *pattern, const char *glob, sbx_fs_match_fn fn, void *data,
             sbx_error **err)
{
  struct find_ctx c = { .fn = fn, .data = data };
  int rc = regcomp (&c.re, pattern, REG_EXTENDED | REG_NOSUB);
  if (rc != 0)
    {
      char msg[256];
      regerror (rc, &c.re, msg, sizeof msg);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "find: bad pattern `%s`: %s", pattern, msg);
    }
  c.line = xmalloc (FIND_LINE_MAX + 1);
  int r = walk (root, path, glob, find_file, &c, err);
  free (c.line);
  regfree (&c.re);
  return r;
}

struct replace_ctx {
  const char *old, *new_;
  size_t ol, nl;
  sbx_fs_count_fn fn;
  void *data;
};

static int
replace_file (int dir, const char *name, const char *path, int fd, const struct stat *st, void *data, sbx_error **err)
{
  struct replace_ctx *c = data;
  if ((size_t) st->st_size > REPLACE_FILE_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "replace: `%s` is larger than %zu MiB", path,
                          REPLACE_FILE_MAX >> 20);
  size_t len = (size_t) st->st_size;
  _cleanup_free_ char *in = xmalloc (len + 1);
  ssize_t got = read_all (fd, in, len + 1);
  if (got < 0)
    return sbx_error_errno (err, (int) -got, "read `%s`", path);
  len = (size_t) got > len ? len : (size_t) got; /* grew meanwhile: what it had */
  uint64_t count = 0;
  for (const char *p = in; (p = memmem (p, len - (size_t) (p - in), c->old, c->ol)) != NULL; p += c->ol)
    count++;
  if (count == 0)
    return 0;
  size_t outl = len + count * c->nl - count * c->ol;
  _cleanup_free_ char *out = xmalloc (outl + 1);
  char *o = out;
  const char *p = in, *q;
  while ((q = memmem (p, len - (size_t) (p - in), c->old, c->ol)) != NULL)
    {
      memcpy (o, p, (size_t) (q - p));
      o += q - p;
      memcpy (o, c->new_, c->nl);
      o += c->nl;
      p = q + c->ol;
    }
  memcpy (o, p, len - (size_t) (p - in));
  /* Beside the file, in the directory fd the walk holds: then renamed. */
  _cleanup_free_ char *rnd = random_hex (6);
  _cleanup_free_ char *tmp = xasprintf (".sbx-replace-%s", rnd);
  int w = openat (dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (w < 0)
    return fs_error (err, errno, "create a file beside", path);
  int r = 0;
  if (write_all (w, out, outl) < 0)
    r = sbx_error_errno (err, errno, "write `%s`", path);
  else if (fchown (w, st->st_uid, st->st_gid) < 0 || fchmod (w, st->st_mode & 07777) < 0)
    r = sbx_error_errno (err, errno, "set the mode of `%s`", path);
  else if (renameat (dir, tmp, dir, name) < 0)
    r = fs_error (err, errno, "replace", path);
  close (w);
  if (r < 0)
    unlinkat (dir, tmp, 0);
  else
    c->fn (c->data, path, count);
  return r;
}

int
sbx_fs_replace (int root, const char *path, const char *old, const char *new_, const char *glob, sbx_fs_count_fn fn,
                void *data, sbx_error **err)
{
  if (old[0] == '\0')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "replace: the text to replace is empty");
  struct replace_ctx c = { .old = old, .new_ = new_, .ol = strlen (old), .nl = strlen (new_), .fn = fn, .data = data };
  return walk (root, path, glob, replace_file, &c, err);
}

/* --- watch ------------------------------------------------------------- */

struct watch {
  int wd;
  int dir; /* O_PATH, for adding its new subdirectories */
  char *path;
};

struct watcher {
  int ino;
  struct watch *v;
  size_t n;
};

static struct watch *
watch_by_wd (struct watcher *w, int wd)
{
  for (size_t i = 0; i < w->n; i++)
    if (w->v[i].wd == wd)
      return &w->v[i];
  return NULL;
}

/* Watches directory fd DIR (O_PATH, owned) as PATH, and with RECURSIVE its
 * subdirectories, each opened O_NOFOLLOW from its parent. */
static int
watch_add (struct watcher *w, int dir, const char *path, bool recursive, int depth, sbx_error **err)
{
  if (w->n >= WATCH_DIRS_MAX || depth > WALK_DEPTH_MAX)
    {
      close (dir);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "watch: more than %d directories", WATCH_DIRS_MAX);
    }
  char p[64];
  snprintf (p, sizeof p, "/proc/self/fd/%d", dir);
  int wd = inotify_add_watch (w->ino, p, IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ONLYDIR);
  if (wd < 0)
    {
      int e = errno;
      close (dir);
      return e == ENOSPC ? sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "watch: the host's inotify watch limit")
                         : fs_error (err, e, "watch", path);
    }
  if (watch_by_wd (w, wd) == NULL)
    {
      w->v = xrealloc (w->v, (w->n + 1) * sizeof *w->v);
      w->v[w->n++] = (struct watch){ .wd = wd, .dir = dir, .path = xstrdup (path) };
    }
  else
    close (dir);
  if (!recursive)
    return 0;
  int rd = reopen (dir, O_RDONLY | O_DIRECTORY);
  if (rd < 0)
    return 0;
  _cleanup_closedir_ DIR *d = fdopendir (rd);
  if (d == NULL)
    {
      close (rd);
      return 0;
    }
  struct dirent *de;
  int r = 0;
  while (r == 0 && (de = readdir (d)) != NULL)
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0
          || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
        continue;
      int sub = openat (dirfd (d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0)
        continue;
      _cleanup_free_ char *sp = join (path, de->d_name);
      r = watch_add (w, sub, sp, true, depth + 1, err);
    }
  return r;
}

int
sbx_fs_watch (int root, const char *path, bool recursive, int stop_fd, sbx_fs_event_fn fn, void *data, sbx_error **err)
{
  int dir = -1;
  if (sbx_fs_open (root, path, O_PATH | O_DIRECTORY, true, &dir, err) < 0)
    return -1;
  struct watcher w = { .ino = inotify_init1 (IN_CLOEXEC | IN_NONBLOCK) };
  if (w.ino < 0)
    {
      close (dir);
      return sbx_error_errno (err, errno, "inotify_init1");
    }
  int r = watch_add (&w, dir, path, recursive, 0, err);
  static char buf[64 * 1024] __attribute__ ((aligned (__alignof__(struct inotify_event))));
  while (r == 0)
    {
      struct pollfd pf[2] = { { w.ino, POLLIN, 0 }, { stop_fd, POLLIN, 0 } };
      if (poll (pf, stop_fd >= 0 ? 2 : 1, -1) < 0)
        {
          if (errno == EINTR)
            continue;
          r = sbx_error_errno (err, errno, "poll");
          break;
        }
      if (stop_fd >= 0 && pf[1].revents)
        break;
      ssize_t n = read (w.ino, buf, sizeof buf);
      if (n <= 0)
        continue;
      for (char *p = buf; p < buf + n && r == 0;)
        {
          struct inotify_event *ev = (struct inotify_event *) p;
          p += sizeof *ev + ev->len;
          if (ev->mask & IN_Q_OVERFLOW)
            {
              if (fn (data, "overflow", path, false))
                goto out;
              continue;
            }
          struct watch *wa = watch_by_wd (&w, ev->wd);
          /* sbx's own temporary files (fs write, replace) are not news: the
           * rename that ends them is reported as the file's creation. */
          if (wa == NULL || ev->len == 0 || strncmp (ev->name, ".sbx-write-", 11) == 0
              || strncmp (ev->name, ".sbx-replace-", 13) == 0)
            continue;
          bool isdir = ev->mask & IN_ISDIR;
          const char *kind = ev->mask & (IN_CREATE | IN_MOVED_TO)     ? "create"
                             : ev->mask & (IN_DELETE | IN_MOVED_FROM) ? "delete"
                                                                      : "modify";
          _cleanup_free_ char *ep = join (wa->path, ev->name);
          if (recursive && isdir && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
            {
              int sub = openat (wa->dir, ev->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
              if (sub >= 0)
                r = watch_add (&w, sub, ep, true, 0, err);
            }
          if (fn (data, kind, ep, isdir))
            goto out;
        }
    }
out:
  for (size_t i = 0; i < w.n; i++)
    {
      close (w.v[i].dir);
      free (w.v[i].path);
    }
  free (w.v);
  close (w.ino);
  return r;
}
