/* Named volumes: the store's ROOT/volumes, the --volume values, the mount
 * a monitor makes of one (volume.h says how they are kept). */
#include "config.h"
#include "volume.h"
#include "disk.h"
#include "json.h"
#include "layer.h"
#include "lifecycle.h"
#include "sandbox.h"
#include "spec.h"
#include "sbx-limits.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define VOLUME_JSON_MAX 4096
#define DEST_MAX 4096

static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static void
strv_sort (char **v)
{
  qsort (v, strv_len (v), sizeof *v, cmp_str);
}

static bool
strv_has (char *const *v, const char *s)
{
  for (size_t i = 0; v && v[i]; i++)
    if (strcmp (v[i], s) == 0)
      return true;
  return false;
}

/* --- the --volume values ------------------------------------------------ */

bool
sbx_volume_name_is_valid (const char *name)
{
  return name_is_valid (name);
}

int
sbx_mount_dest_clean (const char *dest, const char *what, char **ret, sbx_error **err)
{
  _cleanup_free_ char *shown = printable_masked (dest, 200, "");
  if (dest == NULL || dest[0] != '/')
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "%s: the destination `%s` is not an absolute path", what, shown);
  if (strlen (dest) >= DEST_MAX)
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "%s: the destination is too long", what);
  for (const char *c = dest; *c; c++)
    if ((unsigned char) *c < 0x20 || *c == 0x7f)
      return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "%s: the destination `%s` has a control character", what,
                            shown);
  _cleanup_free_ char *clean = xmalloc0 (strlen (dest) + 2);
  size_t len = 0;
  for (const char *c = dest; *c;)
    {
      c += strspn (c, "/");
      size_t n = strcspn (c, "/");
      if (n == 0)
        break;
      if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
        return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "%s: the destination `%s` has a `%.*s` component", what,
                              shown, (int) n, c);
      clean[len++] = '/';
      memcpy (clean + len, c, n);
      len += n;
      c += n;
    }
  if (len == 0)
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "%s: the destination cannot be `/`", what);
  const char *own = sbx_spec_reserved_dest (clean);
  if (own)
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0,
                          "%s: the destination `%s` is over %s, which sbx or the runtime mounts itself", what, shown,
                          own);
  *ret = steal_pointer (&clean);
  return 0;
}

void
sbx_volume_spec_clear (sbx_volume_spec *v)
{
  free (v->name);
  free (v->dest);
  memset (v, 0, sizeof *v);
}

int
sbx_volume_spec_parse (const char *s, sbx_volume_spec *ret, sbx_error **err)
{
  const char *colon = s ? strchr (s, ':') : NULL;
  _cleanup_free_ char *shown = printable_masked (s, 200, "");
  if (colon == NULL || colon[1] == '\0')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--volume: `%s` is not NAME:/path[:ro]", shown);
  _cleanup_free_ char *name = xstrndup (s, (size_t) (colon - s));
  if (!sbx_volume_name_is_valid (name))
    {
      _cleanup_free_ char *n = printable_masked (name, 80, "");
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                            "--volume: invalid volume name `%s`: use [A-Za-z0-9][A-Za-z0-9_.+-]*, at most %d", n,
                            SBX_NAME_MAX);
    }
  _cleanup_free_ char *path = xstrdup (colon + 1);
  bool ro = false;
  size_t l = strlen (path);
  if (l > 3 && (strcmp (path + l - 3, ":ro") == 0 || strcmp (path + l - 3, ":rw") == 0))
    {
      ro = path[l - 1] == 'o';
      path[l - 3] = '\0';
    }
  else if (strrchr (path, ':') != NULL && path[0] == '/' && strchr (strrchr (path, ':'), '/') == NULL)
    {
      _cleanup_free_ char *m = printable_masked (strrchr (path, ':') + 1, 80, "");
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--volume: `%s`: the mode is ro or rw", m);
    }
  _cleanup_free_ char *dest = NULL;
  if (sbx_mount_dest_clean (path, "--volume", &dest, err) < 0)
    return -1;
  *ret = (sbx_volume_spec){ .name = steal_pointer (&name), .dest = steal_pointer (&dest), .readonly = ro };
  return 0;
}

int
sbx_volume_specs_check (char *const *specs, sbx_error **err)
{
  size_t n = specs ? strv_len ((char **) specs) : 0;
  if (n > SBX_VOLUMES_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%zu volumes: at most %d", n, SBX_VOLUMES_MAX);
  _cleanup_strv_ char **dests = xmalloc0 (sizeof (char *));
  for (size_t i = 0; i < n; i++)
    {
      sbx_volume_spec v = { NULL };
      if (sbx_volume_spec_parse (specs[i], &v, err) < 0)
        return -1;
      bool dup = strv_has (dests, v.dest);
      if (!dup)
        strv_push (&dests, v.dest);
      int r = dup ? sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--volume: two volumes on `%s`", v.dest) : 0;
      sbx_volume_spec_clear (&v);
      if (r < 0)
        return -1;
    }
  return 0;
}

/* --- the store ------------------------------------------------------------ */

void
sbx_volume_free (sbx_volume *v)
{
  if (v == NULL)
    return;
  free (v->name);
  strv_free (v->users);
  free (v);
}

static char *
vol_path (const sbx_store *st, const char *name, const char *file)
{
  return file ? sbx_store_path (st, "volumes/%s/%s", name, file) : sbx_store_path (st, "volumes/%s", name);
}

static int
check_name (const char *name, sbx_error **err)
{
  if (!sbx_volume_name_is_valid (name))
    {
      _cleanup_free_ char *n = printable_masked (name, 80, "");
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                            "invalid volume name `%s`: use [A-Za-z0-9][A-Za-z0-9_.+-]*, at most %d", n, SBX_NAME_MAX);
    }
  return 0;
}

static int
not_found (const char *name, sbx_error **err)
{
  return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "no volume `%s`", name);
}

int
sbx_volume_create (const sbx_store *st, const char *name, uint64_t size, sbx_error **err)
{
  if (check_name (name, err) < 0)
    return -1;
  if (size != 0 && (size < SBX_DISK_MIN || size > SBX_DISK_MAX))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "volume size %llu is not 0 or between 16Mi and 64Ti",
                          (unsigned long long) size);
  if (sbx_store_begin_write (st, "volume create", err) < 0)
    return -1;
  _cleanup_free_ char *dir = sbx_store_path (st, "volumes");
  if (mkdir_p (dir, 0700, err) < 0)
    return -1;
  _cleanup_free_ char *final = vol_path (st, name, NULL);
  if (access (final, F_OK) == 0)
    return sbx_error_set (err, SBX_E_BUSY, 0, "volume `%s` already exists", name);
  _cleanup_free_ char *rnd = random_hex (8);
  _cleanup_free_ char *tmp = xasprintf ("%s/.tmp-%s", dir, rnd);
  if (mkdir (tmp, 0700) < 0)
    return sbx_error_errno (err, errno, "mkdir `%s`", tmp);
  _cleanup_yajl_gen_ yajl_gen g = j_new (true);
  j_map (g);
  j_kstr (g, "name", name);
  j_kint (g, "size", (long long) size);
  j_kint (g, "created", (long long) now_unix ());
  j_endmap (g);
  size_t len;
  _cleanup_free_ char *doc = j_take (g, &len);
  _cleanup_free_ char *json = xasprintf ("%s/volume.json", tmp);
  _cleanup_free_ char *lock = xasprintf ("%s/lock", tmp);
  _cleanup_free_ char *data = xasprintf ("%s/data", tmp);
  _cleanup_free_ char *img = xasprintf ("%s/disk.img", tmp);
  int r = write_file_atomic (json, doc, len, 0600, err);
  if (r == 0)
    {
      _cleanup_close_ int fd = open (lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0)
        r = sbx_error_errno (err, errno, "create `%s`", lock);
    }
  if (r == 0 && size == 0 && mkdir (data, 0755) < 0)
    r = sbx_error_errno (err, errno, "mkdir `%s`", data);
  if (r == 0 && size > 0)
    r = sbx_disk_make_image (st, img, size, true, err);
  if (r == 0 && renameat2 (AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) < 0)
    r = errno == EEXIST || errno == ENOTEMPTY ? sbx_error_set (err, SBX_E_BUSY, 0, "volume `%s` already exists", name)
                                              : sbx_error_errno (err, errno, "rename `%s`", tmp);
  if (r < 0)
    {
      rm_rf (tmp, NULL);
      return sbx_error_wrap (err, "create volume `%s`", name);
    }
  return 0;
}

/* The lock of NAME held (OP: LOCK_SH or LOCK_EX), and the volume still
 * there: a remove renames it away while a waiter waits. */
static int
lock_volume (const sbx_store *st, const char *name, int op, sbx_error **err)
{
  _cleanup_free_ char *lock = vol_path (st, name, "lock");
  for (int tries = 0; tries < 8; tries++)
    {
      _cleanup_close_ int fd = open (lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
      if (fd < 0)
        return errno == ENOENT ? not_found (name, err) : sbx_error_errno (err, errno, "open `%s`", lock);
      while (flock (fd, op) < 0)
        if (errno != EINTR)
          return sbx_error_errno (err, errno, "lock `%s`", lock);
      struct stat a, b;
      if (fstat (fd, &a) == 0 && stat (lock, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
        return steal_fd (&fd);
    }
  return not_found (name, err);
}

static int
read_record (const sbx_store *st, const char *name, sbx_volume **ret, sbx_error **err)
{
  if (check_name (name, err) < 0)
    return -1;
  _cleanup_free_ char *json = vol_path (st, name, "volume.json");
  _cleanup_free_ char *msg = xasprintf ("no volume `%s`", name);
  _cleanup_yajl_val_ yajl_val doc = NULL;
  if (j_read_file (json, VOLUME_JSON_MAX, "volume record", msg, &doc, err) < 0)
    return -1;
  int64_t size = 0, created = 0;
  if (j_get_int (doc, "size", true, &size, err) < 0 || j_get_int (doc, "created", false, &created, err) < 0)
    return sbx_error_wrap (err, "volume `%s`", name);
  sbx_volume *v = xmalloc0 (sizeof *v);
  v->name = xstrdup (name);
  v->size = size > 0 ? (uint64_t) size : 0;
  v->created = created;
  v->used = -1;
  v->users = xmalloc0 (sizeof (char *));
  *ret = v;
  return 0;
}

/* Whether the --volume values SPECS name volume NAME. */
static bool
specs_name (char *const *specs, const char *name)
{
  size_t l = strlen (name);
  for (size_t i = 0; specs && specs[i]; i++)
    if (strncmp (specs[i], name, l) == 0 && specs[i][l] == ':')
      return true;
  return false;
}

/* The sandboxes (records not removed) that mount NAME. */
static int
volume_users (const sbx_store *st, const char *name, char ***ret, sbx_error **err)
{
  _cleanup_strv_ char **ids = NULL;
  if (sbx_sandbox_list (st, &ids, err) < 0)
    return -1;
  char **users = xmalloc0 (sizeof (char *));
  for (size_t i = 0; ids[i]; i++)
    {
      _cleanup_sandbox_ sbx_sandbox *sb = NULL;
      if (sbx_sandbox_load (st, ids[i], &sb, NULL) == 0 && specs_name (sb->opts.volumes, name))
        strv_push (&users, sb->id);
    }
  strv_sort (users);
  *ret = users;
  return 0;
}

/* The top of NAME's files, open O_RDONLY | O_DIRECTORY: its data/, or its
 * image mounted in a short-lived namespace of a child's. */
static int
open_files (const sbx_store *st, const sbx_volume *v, int *ret, sbx_error **err)
{
  if (v->size == 0)
    {
      _cleanup_free_ char *data = vol_path (st, v->name, "data");
      int fd = open (data, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0)
        return sbx_error_errno (err, errno, "open `%s`", data);
      *ret = fd;
      return 0;
    }
  _cleanup_free_ char *img = vol_path (st, v->name, "disk.img");
  _cleanup_free_ char *mnt = vol_path (st, v->name, "mnt");
  if (sbx_disk_open_shared (img, mnt, ret, err) < 0)
    return sbx_error_wrap (err, "mount volume `%s`", v->name);
  return 0;
}

/* Bytes the tree of DFD takes (its blocks), on its filesystem only. */
static int64_t
tree_bytes (int dfd, dev_t dev, int depth)
{
  _cleanup_closedir_ DIR *d = fdopendir (dfd);
  if (d == NULL)
    {
      close (dfd);
      return 0;
    }
  int64_t sum = 0;
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      struct stat s;
      if (fstatat (dirfd (d), de->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0 || s.st_dev != dev)
        continue;
      sum += (int64_t) s.st_blocks * 512;
      if (S_ISDIR (s.st_mode) && depth < 256)
        {
          int sub = openat (dirfd (d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (sub >= 0)
            sum += tree_bytes (sub, dev, depth + 1);
        }
    }
  return sum;
}

static int64_t
volume_used (const sbx_store *st, const sbx_volume *v)
{
  _cleanup_close_ int fd = -1;
  if (open_files (st, v, &fd, NULL) < 0)
    return -1;
  if (v->size > 0)
    {
      /* As df inside: the filesystem's own count. */
      struct statvfs sv;
      if (fstatvfs (fd, &sv) < 0 || sv.f_blocks < sv.f_bfree)
        return -1;
      return (int64_t) ((sv.f_blocks - sv.f_bfree) * sv.f_frsize);
    }
  struct stat s;
  if (fstat (fd, &s) < 0)
    return -1;
  return tree_bytes (steal_fd (&fd), s.st_dev, 0);
}

int
sbx_volume_get (const sbx_store *st, const char *name, bool details, sbx_volume **ret, sbx_error **err)
{
  _cleanup_volume_ sbx_volume *v = NULL;
  if (read_record (st, name, &v, err) < 0)
    return -1;
  if (details)
    {
      strv_free (v->users);
      v->users = NULL;
      if (volume_users (st, name, &v->users, err) < 0)
        return -1;
      v->used = volume_used (st, v);
    }
  *ret = steal_pointer (&v);
  return 0;
}

int
sbx_volume_list (const sbx_store *st, char ***ret_names, sbx_error **err)
{
  _cleanup_free_ char *dir = sbx_store_path (st, "volumes");
  char **names = xmalloc0 (sizeof (char *));
  _cleanup_closedir_ DIR *d = opendir (dir);
  if (d == NULL && errno != ENOENT)
    {
      strv_free (names);
      return sbx_error_errno (err, errno, "open `%s`", dir);
    }
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    if (sbx_volume_name_is_valid (de->d_name))
      strv_push (&names, de->d_name);
  strv_sort (names);
  *ret_names = names;
  return 0;
}

/* "a, b, c" */
static char *
join (char **v)
{
  size_t len = 1;
  for (size_t i = 0; v[i]; i++)
    len += strlen (v[i]) + 2;
  char *s = xmalloc0 (len);
  for (size_t i = 0; v[i]; i++)
    {
      if (i)
        strcat (s, ", ");
      strcat (s, v[i]);
    }
  return s;
}

int
sbx_volume_remove (const sbx_store *st, const char *name, sbx_error **err)
{
  _cleanup_volume_ sbx_volume *v = NULL;
  if (read_record (st, name, &v, err) < 0 || sbx_store_begin_write (st, "volume rm", err) < 0)
    return -1;
  /* A user may be a sandbox whose monitor is still tearing it down to
   * remove it (sbx run --rm returns first): that one is waited for, as
   * sbx rm and gc wait. */
  _cleanup_strv_ char **users = NULL;
  if (volume_users (st, name, &users, err) < 0)
    return -1;
  if (users[0])
    {
      sbx_teardown_wait_all (st);
      strv_free (steal_pointer (&users));
    }
  _cleanup_close_ int lk = lock_volume (st, name, LOCK_EX, err);
  if (lk < 0)
    return -1;
  if (users == NULL && volume_users (st, name, &users, err) < 0)
    return -1;
  if (users[0])
    {
      _cleanup_free_ char *list = join (users);
      return sbx_error_set (err, SBX_E_BUSY, 0, "volume `%s` is used by sandbox%s %s (remove %s first)", name,
                            users[1] ? "es" : "", list, users[1] ? "them" : "it");
    }
  _cleanup_free_ char *dir = vol_path (st, name, NULL);
  _cleanup_free_ char *rnd = random_hex (8);
  _cleanup_free_ char *gone = sbx_store_path (st, "volumes/.rm-%s", rnd);
  if (rename (dir, gone) < 0)
    return sbx_error_errno (err, errno, "rename `%s`", dir);
  if (rm_rf (gone, err) < 0)
    return sbx_error_wrap (err, "remove volume `%s`", name);
  return 0;
}

int
sbx_volume_export (const sbx_store *st, const char *name, int outfd, sbx_error **err)
{
  _cleanup_volume_ sbx_volume *v = NULL;
  if (read_record (st, name, &v, err) < 0)
    return -1;
  _cleanup_close_ int lk = lock_volume (st, name, LOCK_SH, err);
  _cleanup_close_ int fd = -1;
  if (lk < 0 || open_files (st, v, &fd, err) < 0)
    return -1;
  /* What a sandbox made that a tar of files does not carry (devices,
   * FIFOs, sockets) is left out. */
  if (sbx_tar_from_dir (fd, outfd, false, true, err) < 0)
    return sbx_error_wrap (err, "export volume `%s`", name);
  return 0;
}

int
sbx_volume_import (const sbx_store *st, const char *name, int infd, bool *ret_made, sbx_error **err)
{
  if (check_name (name, err) < 0 || sbx_store_begin_write (st, "volume import", err) < 0)
    return -1;
  _cleanup_free_ char *dir = vol_path (st, name, NULL);
  bool made = false;
  if (access (dir, F_OK) < 0)
    {
      _cleanup_error_ sbx_error *e = NULL;
      if (sbx_volume_create (st, name, 0, &e) == 0)
        made = true;
      else if (e->code != SBX_E_BUSY) /* made meanwhile by another: used */
        {
          *err = steal_pointer (&e);
          return -1;
        }
    }
  _cleanup_volume_ sbx_volume *v = NULL;
  if (read_record (st, name, &v, err) < 0)
    return -1;
  _cleanup_close_ int lk = lock_volume (st, name, LOCK_SH, err);
  _cleanup_close_ int fd = -1;
  uint64_t size = 0;
  int r = lk < 0 || open_files (st, v, &fd, err) < 0 ? -1 : sbx_tar_extract_into (fd, infd, &size, err);
  if (r < 0)
    {
      closep (&fd);
      closep (&lk);
      /* A volume this import made goes with it. */
      if (made)
        sbx_volume_remove (st, name, NULL);
      return sbx_error_wrap (err, "import into volume `%s`", name);
    }
  *ret_made = made;
  return 0;
}

void
sbx_volumes_gc (const sbx_store *st)
{
  _cleanup_free_ char *dir = sbx_store_path (st, "volumes");
  _cleanup_closedir_ DIR *d = opendir (dir);
  struct dirent *de;
  int64_t now = now_unix ();
  while (d && (de = readdir (d)) != NULL)
    {
      bool rm = strncmp (de->d_name, ".rm-", 4) == 0, tmp = strncmp (de->d_name, ".tmp-", 5) == 0;
      struct stat s;
      if ((!rm && !tmp) || fstatat (dirfd (d), de->d_name, &s, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR (s.st_mode))
        continue;
      /* One being made is left its hour. */
      if (tmp && now - (int64_t) s.st_mtime < 3600)
        continue;
      rm_rf_at (dirfd (d), de->d_name, NULL);
    }
}

/* --- create and the monitor ------------------------------------------------ */

void
sbx_volumes_release (sbx_volume_holds *h)
{
  for (size_t i = 0; i < h->n; i++)
    closep (&h->fds[i]);
  free (h->fds);
  h->fds = NULL;
  h->n = 0;
}

int
sbx_volumes_hold (const sbx_store *st, char *const *specs, sbx_volume_holds *ret, sbx_error **err)
{
  size_t n = specs ? strv_len ((char **) specs) : 0;
  sbx_volume_holds h = { .fds = xmalloc0 ((n + 1) * sizeof (int)), .n = 0 };
  for (size_t i = 0; i < n; i++)
    {
      sbx_volume_spec v = { NULL };
      int r = sbx_volume_spec_parse (specs[i], &v, err);
      _cleanup_free_ char *dir = r == 0 ? vol_path (st, v.name, NULL) : NULL;
      for (int tries = 0; r == 0 && tries < 4; tries++)
        {
          _cleanup_error_ sbx_error *e = NULL;
          /* podman makes a volume that -v NAME:/path names on first use. */
          if (access (dir, F_OK) < 0 && sbx_volume_create (st, v.name, 0, &e) < 0 && e->code != SBX_E_BUSY)
            {
              *err = steal_pointer (&e);
              r = -1;
              break;
            }
          sbx_error_free (steal_pointer (&e));
          int fd = lock_volume (st, v.name, LOCK_SH, &e);
          if (fd >= 0)
            {
              h.fds[h.n++] = fd;
              break;
            }
          if (e->code != SBX_E_NOT_FOUND || tries == 3)
            {
              *err = steal_pointer (&e);
              r = -1;
            }
        }
      sbx_volume_spec_clear (&v);
      if (r < 0)
        {
          sbx_volumes_release (&h);
          return -1;
        }
    }
  *ret = h;
  return 0;
}

int
sbx_volume_mount (const sbx_store *st, const sbx_volume_spec *spec, const char *mnt, sbx_error **err)
{
  _cleanup_volume_ sbx_volume *v = NULL;
  if (read_record (st, spec->name, &v, err) < 0)
    return -1;
  if (v->size > 0)
    {
      _cleanup_free_ char *img = vol_path (st, v->name, "disk.img");
      if (sbx_disk_mount_shared (img, mnt, err) < 0)
        return sbx_error_wrap (err, "volume `%s`", v->name);
    }
  else
    {
      _cleanup_free_ char *data = vol_path (st, v->name, "data");
      if (mkdir (mnt, 0700) < 0 && errno != EEXIST)
        return sbx_error_errno (err, errno, "mkdir `%s`", mnt);
      if (mount (data, mnt, NULL, MS_BIND, NULL) < 0)
        return sbx_error_errno (err, errno, "bind `%s` on `%s`", data, mnt);
    }
  /* The mount's own flags (never the filesystem's, which other sandboxes
   * may be writing through): read-only for :ro, never setuid or devices. */
  unsigned long flags = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | (spec->readonly ? MS_RDONLY : 0);
  if (mount (NULL, mnt, NULL, flags, NULL) < 0)
    {
      int e = errno;
      umount2 (mnt, MNT_DETACH);
      return sbx_error_errno (err, e, "remount volume `%s` on `%s`", v->name, mnt);
    }
  return 0;
}
