/* Small helpers: allocation, atomic files, locks, parsing, names, fds. */
#include "config.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

void *
xmalloc (size_t n)
{
  void *p = malloc (n ? n : 1);
  if (p == NULL)
    abort ();
  return p;
}

void *
xmalloc0 (size_t n)
{
  void *p = calloc (1, n ? n : 1);
  if (p == NULL)
    abort ();
  return p;
}

void *
xrealloc (void *p, size_t n)
{
  p = realloc (p, n ? n : 1);
  if (p == NULL)
    abort ();
  return p;
}

char *
xstrdup (const char *s)
{
  char *r = strdup (s ? s : "");
  if (r == NULL)
    abort ();
  return r;
}

char *
xstrndup (const char *s, size_t n)
{
  char *r = strndup (s, n);
  if (r == NULL)
    abort ();
  return r;
}

char *
xasprintf (const char *fmt, ...)
{
  char *s;
  va_list ap;
  va_start (ap, fmt);
  if (vasprintf (&s, fmt, ap) < 0)
    abort ();
  va_end (ap);
  return s;
}

void
strv_free (char **v)
{
  if (v == NULL)
    return;
  for (char **p = v; *p; p++)
    free (*p);
  free (v);
}

size_t
strv_len (char *const *v)
{
  size_t n = 0;
  while (v && v[n])
    n++;
  return n;
}

void
strv_push (char ***v, const char *s)
{
  size_t n = strv_len (*v);
  *v = xrealloc (*v, (n + 2) * sizeof (char *));
  (*v)[n] = xstrdup (s);
  (*v)[n + 1] = NULL;
}

char **
strv_dup (char *const *v)
{
  char **r = xmalloc0 (sizeof (char *));
  for (size_t i = 0; v && v[i]; i++)
    strv_push (&r, v[i]);
  return r;
}

void
strv_env_set (char ***env, const char *entry)
{
  const char *eq = strchr (entry, '=');
  size_t kl = eq ? (size_t) (eq - entry) : strlen (entry);
  for (size_t i = 0; (*env)[i]; i++)
    if (strncmp ((*env)[i], entry, kl) == 0 && (*env)[i][kl] == '=')
      {
        free ((*env)[i]);
        (*env)[i] = xstrdup (entry);
        return;
      }
  strv_push (env, entry);
}

const char *
strv_env_get (char *const *env, const char *key)
{
  size_t n = strlen (key);
  for (size_t i = 0; env && env[i]; i++)
    if (strncmp (env[i], key, n) == 0 && env[i][n] == '=')
      return env[i] + n + 1;
  return NULL;
}

int
write_all (int fd, const void *buf, size_t len)
{
  const char *p = buf;
  while (len > 0)
    {
      ssize_t w = write (fd, p, len);
      if (w < 0)
        {
          if (errno == EINTR)
            continue;
          return -errno;
        }
      p += w;
      len -= (size_t) w;
    }
  return 0;
}

ssize_t
read_all (int fd, void *buf, size_t len)
{
  char *p = buf;
  size_t got = 0;
  while (got < len)
    {
      ssize_t r = read (fd, p + got, len - got);
      if (r < 0)
        {
          if (errno == EINTR)
            continue;
          return -errno;
        }
      if (r == 0)
        break;
      got += (size_t) r;
    }
  return (ssize_t) got;
}

static int write_at (int dirfd, const char *name, const void *data, size_t len, mode_t mode, bool sync,
                     sbx_error **err);

int
write_file_atomic_at (int dirfd, const char *name, const void *data, size_t len, mode_t mode, sbx_error **err)
{
  return write_at (dirfd, name, data, len, mode, true, err);
}

int
write_file_replace (const char *path, const void *data, size_t len, mode_t mode, sbx_error **err)
{
  _cleanup_free_ char *dir = xstrdup (path);
  char *slash = strrchr (dir, '/');
  if (slash == NULL)
    return write_at (AT_FDCWD, path, data, len, mode, false, err);
  *slash = '\0';
  _cleanup_close_ int dfd = open (dir[0] ? dir : "/", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (dfd < 0)
    return sbx_error_errno (err, errno, "open directory of `%s`", path);
  return write_at (dfd, slash + 1, data, len, mode, false, err);
}

static int
write_at (int dirfd, const char *name, const void *data, size_t len, mode_t mode, bool sync, sbx_error **err)
{
  _cleanup_free_ char *tmp = xasprintf (".%s.tmp.%d", name, getpid ());
  _cleanup_close_ int fd = openat (dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0)
    return sbx_error_errno (err, errno, "create `%s`", tmp);
  /* MODE exactly, whatever the caller's umask: files sbx writes for a
   * sandbox's root (its /etc/hosts) are read there by other users. */
  int r = fchmod (fd, mode) < 0 ? -errno : 0;
  if (r == 0)
    r = write_all (fd, data, len);
  if (r == 0 && sync && fsync (fd) < 0)
    r = -errno;
  if (r < 0)
    {
      unlinkat (dirfd, tmp, 0);
      return sbx_error_errno (err, -r, "write `%s`", name);
    }
  if (renameat (dirfd, tmp, dirfd, name) < 0)
    {
      int e = errno;
      unlinkat (dirfd, tmp, 0);
      return sbx_error_errno (err, e, "rename to `%s`", name);
    }
  return 0;
}

int
write_file_atomic (const char *path, const void *data, size_t len, mode_t mode, sbx_error **err)
{
  _cleanup_free_ char *dir = xstrdup (path);
  char *slash = strrchr (dir, '/');
  const char *base = path;
  if (slash)
    {
      *slash = '\0';
      base = path + (slash - dir) + 1;
    }
  _cleanup_close_ int dfd = open (slash ? (dir[0] ? dir : "/") : ".", O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (dfd < 0)
    return sbx_error_errno (err, errno, "open directory of `%s`", path);
  if (write_file_atomic_at (dfd, base, data, len, mode, err) < 0)
    return -1;
  return 0;
}

int
read_fd (int fd, size_t max, char **ret_data, size_t *ret_len)
{
  size_t cap = 4096, len = 0;
  _cleanup_free_ char *buf = xmalloc (cap + 1);
  for (;;)
    {
      if (len == cap)
        {
          if (cap > max)
            return -EFBIG;
          cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
          buf = xrealloc (buf, cap + 1);
        }
      ssize_t r = read (fd, buf + len, cap - len);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return -errno;
      if (r == 0)
        break;
      len += (size_t) r;
    }
  if (len > max)
    return -EFBIG;
  buf[len] = '\0';
  if (ret_len)
    *ret_len = len;
  *ret_data = steal_pointer (&buf);
  return 0;
}

int
read_file_at (int dirfd, const char *name, size_t max, char **ret_data, size_t *ret_len, sbx_error **err)
{
  _cleanup_close_ int fd = openat (dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INTERNAL, errno, "open `%s`", name);
  struct stat st;
  if (fstat (fd, &st) < 0)
    return sbx_error_errno (err, errno, "stat `%s`", name);
  if (!S_ISREG (st.st_mode))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is not a regular file", name);
  int r = read_fd (fd, max, ret_data, ret_len);
  if (r == -EFBIG)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is larger than %zu bytes", name, max);
  if (r < 0)
    return sbx_error_errno (err, -r, "read `%s`", name);
  return 0;
}

int
read_file (const char *path, size_t max, char **ret_data, size_t *ret_len, sbx_error **err)
{
  return read_file_at (AT_FDCWD, path, max, ret_data, ret_len, err);
}

int
mkdir_p (const char *path, mode_t mode, sbx_error **err)
{
  _cleanup_free_ char *p = xstrdup (path);
  for (char *s = p + 1; *s; s++)
    {
      if (*s != '/')
        continue;
      *s = '\0';
      if (mkdir (p, mode) < 0 && errno != EEXIST)
        return sbx_error_errno (err, errno, "mkdir `%s`", p);
      *s = '/';
    }
  if (mkdir (p, mode) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", p);
  return 0;
}

static int
rm_rf_children (int dfd, dev_t dev, sbx_error **err)
{
  _cleanup_closedir_ DIR *d = fdopendir (dfd);
  if (d == NULL)
    {
      close (dfd);
      return sbx_error_errno (err, errno, "fdopendir");
    }
  int ret = 0;
  struct dirent *de;
  while ((de = readdir (d)))
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      struct stat st;
      if (fstatat (dirfd (d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        continue;
      if (S_ISDIR (st.st_mode))
        {
          if (st.st_dev != dev)
            {
              ret = sbx_error_set (err, SBX_E_BUSY, EBUSY, "`%s` is a mount point", de->d_name);
              continue;
            }
          int cfd = openat (dirfd (d), de->d_name, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
          if (cfd >= 0 && rm_rf_children (cfd, dev, err) < 0)
            ret = -1;
          if (unlinkat (dirfd (d), de->d_name, AT_REMOVEDIR) < 0 && errno != ENOENT)
            ret = sbx_error_errno (err, errno, "rmdir `%s`", de->d_name);
        }
      else if (unlinkat (dirfd (d), de->d_name, 0) < 0 && errno != ENOENT)
        ret = sbx_error_errno (err, errno, "unlink `%s`", de->d_name);
    }
  return ret;
}

int
rm_rf_at (int dirfd, const char *name, sbx_error **err)
{
  struct stat st;
  if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? 0 : sbx_error_errno (err, errno, "stat `%s`", name);
  if (!S_ISDIR (st.st_mode))
    {
      if (unlinkat (dirfd, name, 0) < 0 && errno != ENOENT)
        return sbx_error_errno (err, errno, "unlink `%s`", name);
      return 0;
    }
  int fd = openat (dirfd, name, O_DIRECTORY | O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open `%s`", name);
  if (rm_rf_children (fd, st.st_dev, err) < 0)
    return sbx_error_wrap (err, "remove `%s`", name);
  if (unlinkat (dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
    return sbx_error_errno (err, errno, "rmdir `%s`", name);
  return 0;
}

int
rm_rf (const char *path, sbx_error **err)
{
  return rm_rf_at (AT_FDCWD, path, err);
}

int
lock_path (const char *path, int op, sbx_error **err)
{
  _cleanup_close_ int fd = open (path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open lock `%s`", path);
  while (flock (fd, op) < 0)
    {
      if (errno == EINTR)
        continue;
      if (errno == EWOULDBLOCK)
        {
          sbx_error_set (err, SBX_E_BUSY, 0, "`%s` is locked by another process", path);
          return -EWOULDBLOCK;
        }
      return sbx_error_errno (err, errno, "flock `%s`", path);
    }
  return steal_fd (&fd);
}

int
parse_int64 (const char *s, int64_t min, int64_t max, int64_t *ret)
{
  if (s == NULL || *s == '\0' || isspace ((unsigned char) *s))
    return -EINVAL;
  errno = 0;
  char *end = NULL;
  long long v = strtoll (s, &end, 10);
  if (errno == ERANGE || v < min || v > max)
    return -ERANGE;
  if (errno || end == s || *end != '\0')
    return -EINVAL;
  *ret = v;
  return 0;
}

int
parse_double (const char *s, double min, double max, double *ret)
{
  if (s == NULL || *s == '\0' || isspace ((unsigned char) *s))
    return -EINVAL;
  for (const char *p = s; *p; p++)
    if (!isdigit ((unsigned char) *p) && *p != '.')
      return -EINVAL;
  errno = 0;
  char *end = NULL;
  double v = strtod (s, &end);
  if (errno || end == s || *end != '\0' || !isfinite (v))
    return -EINVAL;
  if (v < min || v > max)
    return -ERANGE;
  *ret = v;
  return 0;
}

int
parse_memory (const char *s, uint64_t *ret_bytes)
{
  static const struct {
    const char *suffix;
    uint64_t mul;
  } units[] = {
    { "", 1ULL << 20 }, { "Ki", 1ULL << 10 }, { "Mi", 1ULL << 20 },   { "Gi", 1ULL << 30 },      { "Ti", 1ULL << 40 },
    { "K", 1000ULL },   { "M", 1000000ULL },  { "G", 1000000000ULL }, { "T", 1000000000000ULL },
  };
  if (s == NULL || !isdigit ((unsigned char) s[0]))
    return -EINVAL;
  size_t n = 0;
  while (isdigit ((unsigned char) s[n]))
    n++;
  if (n > 15)
    return -ERANGE;
  _cleanup_free_ char *num = xstrndup (s, n);
  int64_t v;
  if (parse_int64 (num, 0, INT64_MAX, &v) < 0)
    return -EINVAL;
  for (size_t i = 0; i < ARRAY_SIZE (units); i++)
    if (strcmp (s + n, units[i].suffix) == 0)
      {
        if ((uint64_t) v > UINT64_MAX / units[i].mul / 2)
          return -ERANGE;
        *ret_bytes = (uint64_t) v * units[i].mul;
        return 0;
      }
  return -EINVAL;
}

bool
name_is_valid (const char *s)
{
  if (s == NULL || !isalnum ((unsigned char) s[0]) || !isascii ((unsigned char) s[0]))
    return false;
  size_t n = 0;
  for (const char *p = s; *p; p++, n++)
    {
      unsigned char c = (unsigned char) *p;
      if (!isascii (c) || !(isalnum (c) || c == '_' || c == '.' || c == '+' || c == '-'))
        return false;
    }
  return n <= SBX_NAME_MAX;
}

bool
env_entry_is_valid (const char *s)
{
  const char *eq = strchr (s, '=');
  if (eq == NULL || eq == s)
    return false;
  if (isdigit ((unsigned char) s[0]))
    return false;
  for (const char *p = s; p < eq; p++)
    if (!(isalnum ((unsigned char) *p) || *p == '_') || !isascii ((unsigned char) *p))
      return false;
  return strlen (s) < 128 * 1024;
}

bool
printable_token (const char *s, size_t max)
{
  size_t n = strlen (s);
  if (n == 0 || n > max)
    return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char) s[i] <= 0x20 || (unsigned char) s[i] >= 0x7f)
      return false;
  return true;
}

char *
printable_masked (const char *s, size_t max, const char *if_null)
{
  if (s == NULL)
    return xstrdup (if_null);
  size_t n = strnlen (s, max);
  char *r = xasprintf ("%.*s%s", (int) n, s, s[n] ? "..." : "");
  for (char *p = r; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      *p = '?';
  return r;
}

char *
printable_escaped (const char *s, size_t max)
{
  size_t n = strnlen (s, max);
  char *out = xmalloc (n * 4 + 4), *p = out;
  for (size_t i = 0; i < n; i++)
    {
      unsigned char c = (unsigned char) s[i];
      if (c == '\t')
        p = stpcpy (p, "\\t");
      else if (c < 0x20 || c == 0x7f)
        p += sprintf (p, "\\x%02x", c);
      else
        *p++ = (char) c;
    }
  strcpy (p, s[n] ? "..." : "");
  return out;
}

static bool
fd_kept (int fd, const int *keep, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (keep[i] == fd)
      return true;
  return false;
}

/* The smallest kept fd >= FROM, or -1. */
static int
next_kept (int from, const int *keep, size_t n)
{
  int best = -1;
  for (size_t i = 0; i < n; i++)
    if (keep[i] >= from && (best < 0 || keep[i] < best))
      best = keep[i];
  return best;
}

/* close_range(2) on every gap between the kept fds; -ENOSYS where the
 * kernel lacks it (Linux < 5.9), before anything is closed. */
static int
close_gaps (const int *keep, size_t n)
{
#ifdef SYS_close_range
  for (int lo = 3;;)
    {
      int k = next_kept (lo, keep, n);
      if (k != lo && syscall (SYS_close_range, (unsigned) lo, k < 0 ? ~0U : (unsigned) k - 1, 0U) < 0)
        return -errno;
      if (k < 0 || k == INT_MAX)
        return 0;
      lo = k + 1;
    }
#else
  (void) keep;
  (void) n;
  return -ENOSYS;
#endif
}

/* Every fd /proc/self/fd lists, read with getdents64 into the stack (no
 * opendir: it allocates). Closing while reading is safe: the directory's
 * offsets are fd numbers, so no entry moves. */
static int
close_listed (const int *keep, size_t n)
{
  int dfd = open ("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return -errno;
  char buf[4096] __attribute__ ((aligned (8)));
  long got;
  while ((got = syscall (SYS_getdents64, dfd, buf, sizeof buf)) > 0)
    for (long off = 0; off < got;)
      {
        struct dirent64 *de = (struct dirent64 *) (buf + off);
        off += de->d_reclen;
        int fd = 0;
        const char *p = de->d_name;
        for (; *p >= '0' && *p <= '9' && fd < INT_MAX / 10; p++)
          fd = fd * 10 + (*p - '0');
        if (p == de->d_name || *p || fd < 3 || fd == dfd || fd_kept (fd, keep, n))
          continue;
        close (fd);
      }
  int e = got < 0 ? -errno : 0;
  close (dfd);
  return e;
}

int
close_fds_except (const int *keep, size_t n)
{
  if (close_gaps (keep, n) == 0)
    return 0;
  if (close_listed (keep, n) == 0)
    return 0;
  /* No /proc: every number an fd can have, up to the hard limit (an fd
   * opened before the soft limit was lowered may sit above it). */
  struct rlimit rl;
  if (getrlimit (RLIMIT_NOFILE, &rl) < 0)
    return -errno;
  rlim_t max = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > INT_MAX ? INT_MAX : rl.rlim_max;
  for (rlim_t fd = 3; fd < max; fd++)
    if (!fd_kept ((int) fd, keep, n))
      close ((int) fd);
  return 0;
}

int
set_cloexec (int fd, bool on)
{
  int fl = fcntl (fd, F_GETFD);
  if (fl < 0)
    return -errno;
  fl = on ? (fl | FD_CLOEXEC) : (fl & ~FD_CLOEXEC);
  return fcntl (fd, F_SETFD, fl) < 0 ? -errno : 0;
}

int
set_nonblock (int fd, bool on)
{
  int fl = fcntl (fd, F_GETFL);
  if (fl < 0)
    return -errno;
  fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
  return fcntl (fd, F_SETFL, fl) < 0 ? -errno : 0;
}

uint64_t
now_ms_monotonic (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

int64_t
now_unix (void)
{
  return (int64_t) time (NULL);
}

void
format_time (int64_t t, char *buf, size_t len)
{
  time_t tt = (time_t) t;
  struct tm tm;
  gmtime_r (&tt, &tm);
  strftime (buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

bool
path_exists (const char *p)
{
  struct stat st;
  return lstat (p, &st) == 0;
}

char *
random_hex (size_t nbytes)
{
  unsigned char b[64];
  if (nbytes > sizeof b)
    nbytes = sizeof b;
  size_t got = 0;
  while (got < nbytes)
    {
      ssize_t r = getrandom (b + got, nbytes - got, 0);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        abort ();
      got += (size_t) r;
    }
  char *s = xmalloc (nbytes * 2 + 1);
  for (size_t i = 0; i < nbytes; i++)
    sprintf (s + 2 * i, "%02x", b[i]);
  return s;
}

void
sock_buffers (int fd)
{
  int size = 1 << 20;
  setsockopt (fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  setsockopt (fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
}

size_t
utf8_char_len (const unsigned char *s, size_t n)
{
  unsigned char c = s[0];
  if (c < 0x80)
    return 1;
  size_t l;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf)
    l = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef)
    l = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4)
    l = 4, cp = c & 0x07;
  else
    return 0;
  if (n < l)
    return 0;
  for (size_t i = 1; i < l; i++)
    {
      if ((s[i] & 0xc0) != 0x80)
        return 0;
      cp = (cp << 6) | (s[i] & 0x3f);
    }
  /* overlong forms, UTF-16 surrogates, beyond U+10FFFF */
  if ((l == 3 && cp < 0x800) || (l == 4 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
    return 0;
  return l;
}

bool
utf8_valid (const char *s, size_t n)
{
  for (size_t i = 0; i < n;)
    {
      size_t l = utf8_char_len ((const unsigned char *) s + i, n - i);
      if (l == 0)
        return false;
      i += l;
    }
  return true;
}

char *
hex_encode (const void *data, size_t n)
{
  static const char digits[] = "0123456789abcdef";
  const unsigned char *p = data;
  char *out = xmalloc (n * 2 + 1);
  for (size_t i = 0; i < n; i++)
    {
      out[2 * i] = digits[p[i] >> 4];
      out[2 * i + 1] = digits[p[i] & 15];
    }
  out[2 * n] = '\0';
  return out;
}

int
hex_decode (const char *s, char **ret, size_t *ret_len)
{
  size_t n = strlen (s);
  if (n % 2)
    return -EINVAL;
  char *out = xmalloc (n / 2 + 1);
  for (size_t i = 0; i < n / 2; i++)
    {
      int v = 0;
      for (int k = 0; k < 2; k++)
        {
          char c = s[2 * i + (size_t) k];
          int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
          if (d < 0)
            {
              free (out);
              return -EINVAL;
            }
          v = v * 16 + d;
        }
      out[i] = (char) v;
    }
  out[n / 2] = '\0';
  *ret = out;
  if (ret_len)
    *ret_len = n / 2;
  return 0;
}

char *
base64_encode (const void *data, size_t n)
{
  static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const unsigned char *p = data;
  char *out = xmalloc ((n + 2) / 3 * 4 + 1), *o = out;
  size_t i = 0;
  for (; i + 2 < n; i += 3)
    {
      uint32_t v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8 | p[i + 2];
      *o++ = tbl[v >> 18], *o++ = tbl[(v >> 12) & 63], *o++ = tbl[(v >> 6) & 63], *o++ = tbl[v & 63];
    }
  if (i < n)
    {
      uint32_t v = (uint32_t) p[i] << 16 | (i + 1 < n ? (uint32_t) p[i + 1] << 8 : 0);
      *o++ = tbl[v >> 18], *o++ = tbl[(v >> 12) & 63];
      *o++ = i + 1 < n ? tbl[(v >> 6) & 63] : '=';
      *o++ = '=';
    }
  *o = '\0';
  return out;
}

int
thread_start_quiet (pthread_t *t, void *(*fn) (void *), void *arg)
{
  sigset_t all, old;
  sigfillset (&all);
  pthread_sigmask (SIG_BLOCK, &all, &old);
  int r = pthread_create (t, NULL, fn, arg);
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  return r;
}
