/* The store's layout and the names of host resources derived from it. */
#include "config.h"
#include "store.h"
#include "conf.h"
#include "layer.h"
#include "cgroup.h"
#include "sha256.h"
#include "util.h"

#include <errno.h>
#include <sys/statvfs.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

static const char *const root_dirs[] = { "layers", "images", "sandboxes", "names", "cache", "snapshots", "top" };
static const char *const run_dirs[] = { "sandboxes", "runtime" };

static int
make_private_dir (const char *path, sbx_error **err)
{
  if (mkdir_p (path, 0700, err) < 0)
    return -1;
  struct stat st;
  if (lstat (path, &st) < 0)
    return sbx_error_errno (err, errno, "stat `%s`", path);
  if (!S_ISDIR (st.st_mode))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is not a directory", path);
  if ((st.st_mode & 07777) != 0700 && chmod (path, 0700) < 0)
    return sbx_error_errno (err, errno, "chmod `%s`", path);
  return 0;
}

static int
make_layout (sbx_store *st, sbx_error **err)
{
  if (make_private_dir (st->root, err) < 0 || make_private_dir (st->run_root, err) < 0)
    return -1;
  for (size_t i = 0; i < ARRAY_SIZE (root_dirs); i++)
    {
      _cleanup_free_ char *p = sbx_store_path (st, "%s", root_dirs[i]);
      if (make_private_dir (p, err) < 0)
        return -1;
    }
  for (size_t i = 0; i < ARRAY_SIZE (run_dirs); i++)
    {
      _cleanup_free_ char *p = sbx_store_run_path (st, "%s", run_dirs[i]);
      if (make_private_dir (p, err) < 0)
        return -1;
    }
  _cleanup_free_ char *token = sbx_store_path (st, "token");
  if (!path_exists (token))
    {
      _cleanup_free_ char *t = random_hex (32);
      if (write_file_atomic (token, t, strlen (t), 0600, err) < 0)
        return -1;
    }
  return 0;
}

static char *
absolute (const char *p)
{
  if (p[0] == '/')
    return xstrdup (p);
  char cwd[PATH_MAX];
  if (getcwd (cwd, sizeof cwd) == NULL)
    abort ();
  return xasprintf ("%s/%s", cwd, p);
}

int
sbx_store_open (const char *root, const char *run_root, bool create, sbx_store **ret, sbx_error **err)
{
  if (root == NULL || root[0] == '\0')
    root = SBX_DEFAULT_ROOT;
  if (run_root == NULL || run_root[0] == '\0')
    run_root = SBX_DEFAULT_RUN_ROOT;
  sbx_store *st = xmalloc0 (sizeof *st);
  st->root = absolute (root);
  st->run_root = absolute (run_root);
  /* The token is written last and RUN/runtime made last: with both there the
   * layout is complete, and each command need not re-check it. */
  _cleanup_free_ char *token = sbx_store_path (st, "token");
  _cleanup_free_ char *rt = sbx_store_run_path (st, "runtime");
  bool complete = path_exists (token) && path_exists (rt);
  if (create && !complete && make_layout (st, err) < 0)
    {
      sbx_store_free (st);
      return sbx_error_wrap (err, "open store `%s`", root);
    }
  char real[PATH_MAX];
  const char *key = realpath (st->root, real) ? real : st->root;
  char hex[65];
  sha256_hex (key, strlen (key), hex);
  st->tag = xstrndup (hex, 8);
  *ret = st;
  return 0;
}

void
sbx_store_free (sbx_store *st)
{
  if (st == NULL)
    return;
  free (st->root);
  free (st->run_root);
  free (st->tag);
  free (st);
}

static char *__attribute__ ((format (printf, 2, 0))) join (const char *base, const char *fmt, va_list ap)
{
  char *rel = NULL;
  if (vasprintf (&rel, fmt, ap) < 0)
    abort ();
  char *r = xasprintf ("%s/%s", base, rel);
  free (rel);
  return r;
}

char *
sbx_store_path (const sbx_store *st, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *r = join (st->root, fmt, ap);
  va_end (ap);
  return r;
}

char *
sbx_store_run_path (const sbx_store *st, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *r = join (st->run_root, fmt, ap);
  va_end (ap);
  return r;
}

char *
sbx_store_cgroup_path (const sbx_store *st, const char *id)
{
  return xasprintf ("/sbx-%s/%s", st->tag, id);
}

static int
copy_file (const char *src, const char *dst, mode_t mode, sbx_error **err)
{
  _cleanup_free_ char *data = NULL;
  size_t len = 0;
  if (read_file (src, 64 << 20, &data, &len, err) < 0)
    return -1;
  return write_file_atomic (dst, data, len, mode, err);
}

/* B is a copy of A made after A last changed: same size, and B newer. The
 * common case on every create, so no content is read for it. */
static bool
same_file_content (const char *a, const char *b)
{
  struct stat sa, sb;
  if (stat (a, &sa) < 0 || stat (b, &sb) < 0 || sa.st_size != sb.st_size)
    return false;
  if (sb.st_mtim.tv_sec > sa.st_mtim.tv_sec
      || (sb.st_mtim.tv_sec == sa.st_mtim.tv_sec && sb.st_mtim.tv_nsec > sa.st_mtim.tv_nsec))
    return true;
  _cleanup_free_ char *da = NULL, *db = NULL;
  size_t la, lb;
  if (read_file (a, 64 << 20, &da, &la, NULL) < 0 || read_file (b, 64 << 20, &db, &lb, NULL) < 0)
    return false;
  if (la != lb || memcmp (da, db, la) != 0)
    return false;
  /* A rebuild with the same content: B is as good as new, and says so
   * from now on. */
  utimensat (AT_FDCWD, b, NULL, 0);
  return true;
}

int
sbx_store_top_layer (const sbx_store *st, const char *init_path, char **ret_path, sbx_error **err)
{
  static const char *const dirs[] = { "dev", "proc", "sys", "etc", ".sbx", "tmp" };
  _cleanup_free_ char *top = sbx_store_path (st, "top/v1");
  /* The modes are set, not left to the caller's umask: this layer is the
   * sandbox's /, /etc, /tmp, which its other users must reach. */
  if (mkdir_p (top, 0755, err) < 0)
    return -1;
  if (chmod (top, 0755) < 0)
    return sbx_error_errno (err, errno, "chmod `%s`", top);
  for (size_t i = 0; i < ARRAY_SIZE (dirs); i++)
    {
      _cleanup_free_ char *p = xasprintf ("%s/%s", top, dirs[i]);
      mode_t mode = strcmp (dirs[i], "tmp") == 0 ? 01777 : 0755;
      if ((mkdir (p, mode) < 0 && errno != EEXIST) || chmod (p, mode) < 0)
        return sbx_error_errno (err, errno, "mkdir `%s`", p);
    }
  static const struct {
    const char *name, *content;
  } files[] = {
    { "etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" },
    { "etc/resolv.conf", "" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (files); i++)
    {
      _cleanup_free_ char *p = xasprintf ("%s/%s", top, files[i].name);
      if (!path_exists (p) && write_file_atomic (p, files[i].content, strlen (files[i].content), 0644, err) < 0)
        return -1;
    }
  _cleanup_free_ char *init = xasprintf ("%s/.sbx/init", top);
  if (!same_file_content (init_path, init))
    {
      _cleanup_free_ char *lockp = sbx_store_path (st, "top/lock");
      _cleanup_close_ int lk = lock_path (lockp, LOCK_EX, err);
      if (lk < 0)
        return -1;
      if (!same_file_content (init_path, init) && copy_file (init_path, init, 0555, err) < 0)
        return sbx_error_wrap (err, "install sbx-init");
    }
  *ret_path = steal_pointer (&top);
  return 0;
}

int
sbx_store_base_layer (const sbx_store *st, sbx_error **err)
{
  static const char *const dirs[] = { "top/base", "top/base/" SBX_STORE_WORKSPACE };
  for (size_t i = 0; i < ARRAY_SIZE (dirs); i++)
    {
      _cleanup_free_ char *p = sbx_store_path (st, "%s", dirs[i]);
      if (mkdir (p, 0755) == 0)
        {
          if (chmod (p, 0755) < 0)
            return sbx_error_errno (err, errno, "chmod `%s`", p);
        }
      else if (errno != EEXIST)
        return sbx_error_errno (err, errno, "mkdir `%s`", p);
    }
  return 0;
}

int
sbx_store_layers_lock (const sbx_store *st, int op, sbx_error **err)
{
  _cleanup_free_ char *path = sbx_store_path (st, "layers.lock");
  return lock_path (path, op, err);
}

int
sbx_store_cgroup_hold (const sbx_store *st, sbx_error **err)
{
  _cleanup_free_ char *path = sbx_store_path (st, "cgroup.lock");
  return lock_path (path, LOCK_SH, err);
}

void
sbx_store_cgroup_release_parent (const sbx_store *st)
{
  _cleanup_free_ char *path = sbx_store_path (st, "cgroup.lock");
  _cleanup_close_ int fd = lock_path (path, LOCK_EX | LOCK_NB, NULL);
  if (fd < 0)
    return; /* a sandbox is being set up: the parent is in use */
  _cleanup_free_ char *parent = xasprintf ("/sbx-%s", st->tag);
  sbx_cgroup_remove_parent (parent);
}

int
sbx_store_begin_write (const sbx_store *st, const char *op, sbx_error **err)
{
  _cleanup_conf_ sbx_conf *conf = NULL;
  if (sbx_conf_load (NULL, &conf, err) < 0)
    return -1;
  sbx_layer_set_size_max (conf->image_size_max);
  if (conf->store_reserve == 0)
    return 0;
  struct statvfs sv;
  if (statvfs (st->root, &sv) < 0)
    return sbx_error_errno (err, errno, "%s: statvfs `%s`", op, st->root);
  uint64_t avail = (uint64_t) sv.f_bavail * (uint64_t) sv.f_frsize;
  if (avail < conf->store_reserve)
    return sbx_error_set (err, SBX_E_RESOURCE_EXHAUSTED, 0,
                          "%s refused: the store's filesystem (%s) has %llu MiB free, less than store_reserve "
                          "(%llu MiB, sbx.conf)",
                          op, st->root, (unsigned long long) (avail >> 20),
                          (unsigned long long) (conf->store_reserve >> 20));
  return 0;
}
