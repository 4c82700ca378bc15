/* Warm pools: the pool's record and member lists under ROOT/pools/NAME,
 * filling it, taking a member for a claim, removing it, and what gc
 * settles (pool.h has the layout and the rules). */
#include "config.h"
#include "pool.h"
#include "image.h"
#include "json.h"
#include "lifecycle.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define POOL_JSON_MAX (1u << 20)

void
sbx_pool_free (sbx_pool *p)
{
  if (p == NULL)
    return;
  free (p->name);
  free (p->image_id);
  sbx_sandbox_opts_clear (&p->opts);
  free (p);
}

void
sbx_sandbox_opts_copy (const sbx_sandbox_opts *o, sbx_sandbox_opts *ret)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  sbx_sandbox_opts_gen (g, o);
  size_t len;
  _cleanup_free_ char *s = j_take (g, &len);
  _cleanup_yajl_val_ yajl_val v = NULL;
  memset (ret, 0, sizeof *ret);
  /* Our own serializer's output: it parses. */
  if (j_parse (s, len, POOL_JSON_MAX, "options", &v, NULL) < 0 || sbx_sandbox_opts_parse (v, ret, NULL) < 0)
    abort ();
}

static char *
pool_path (const sbx_store *st, const char *name, const char *what)
{
  return what ? sbx_store_path (st, "pools/%s/%s", name, what) : sbx_store_path (st, "pools/%s", name);
}

static int
check_name (const char *name, sbx_error **err)
{
  if (!name_is_valid (name))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "pool name `%s` is not [A-Za-z0-9][A-Za-z0-9_.+-]* (at most %d characters)", name,
                          SBX_NAME_MAX);
  return 0;
}

static int
pool_lock (const sbx_store *st, const char *name, const char *which, int op, sbx_error **err)
{
  _cleanup_free_ char *p = pool_path (st, name, which);
  return lock_path (p, op, err);
}

static char *
pool_doc (const char *name, int64_t size, const sbx_sandbox_opts *opts, const char *image_id, size_t *len)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (true);
  j_map (g);
  j_kstr (g, "name", name);
  j_kint (g, "size", size);
  j_kstr (g, "image_id", image_id);
  j_kint (g, "created_at", (long long) now_unix ());
  j_str (g, "options");
  sbx_sandbox_opts_gen (g, opts);
  j_endmap (g);
  return j_take (g, len);
}

int
sbx_pool_create (const sbx_store *st, const char *name, int64_t size, const sbx_sandbox_opts *opts,
                 const char *image_id, sbx_error **err)
{
  if (check_name (name, err) < 0)
    return -1;
  if (size < 1 || size > SBX_POOL_SIZE_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--size: %lld is not 1..%d", (long long) size,
                          SBX_POOL_SIZE_MAX);
  _cleanup_free_ char *dir = sbx_store_path (st, "pools");
  if (mkdir_p (dir, 0700, err) < 0)
    return -1;
  _cleanup_free_ char *rnd = random_hex (8);
  _cleanup_free_ char *tmp = xasprintf ("%s/.tmp-%s", dir, rnd);
  _cleanup_free_ char *parked = xasprintf ("%s/parked", tmp), *creating = xasprintf ("%s/creating", tmp);
  _cleanup_free_ char *claiming = xasprintf ("%s/claiming", tmp);
  _cleanup_free_ char *json = xasprintf ("%s/pool.json", tmp);
  size_t len;
  _cleanup_free_ char *doc = pool_doc (name, size, opts, image_id, &len);
  if (mkdir (tmp, 0700) < 0)
    return sbx_error_errno (err, errno, "mkdir `%s`", tmp);
  int r = 0;
  if (mkdir (parked, 0700) < 0 || mkdir (creating, 0700) < 0 || mkdir (claiming, 0700) < 0)
    r = sbx_error_errno (err, errno, "mkdir in `%s`", tmp);
  if (r == 0)
    r = write_file_atomic (json, doc, len, 0600, err);
  _cleanup_free_ char *final = pool_path (st, name, NULL);
  /* A pool of that name, whole or being removed, keeps its place. */
  if (r == 0 && renameat2 (AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) < 0)
    r = errno == EEXIST ? sbx_error_set (err, SBX_E_BUSY, 0, "pool `%s` already exists", name)
                        : sbx_error_errno (err, errno, "rename `%s`", final);
  if (r < 0)
    rm_rf (tmp, NULL);
  return r;
}

/* The ids listed in DIR (parked/ or creating/). */
static char **
list_ids (const char *dir)
{
  char **ids = xmalloc0 (sizeof (char *));
  _cleanup_closedir_ DIR *d = opendir (dir);
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    if (de->d_name[0] != '.' && name_is_valid (de->d_name))
      strv_push (&ids, de->d_name);
  return ids;
}

static size_t
count_ids (const sbx_store *st, const char *name, const char *which)
{
  _cleanup_free_ char *dir = pool_path (st, name, which);
  _cleanup_strv_ char **ids = list_ids (dir);
  return strv_len (ids);
}

int
sbx_pool_get (const sbx_store *st, const char *name, sbx_pool **ret, sbx_error **err)
{
  if (check_name (name, err) < 0)
    return -1;
  _cleanup_free_ char *json = pool_path (st, name, "pool.json");
  _cleanup_free_ char *text = NULL;
  size_t len;
  if (read_file (json, POOL_JSON_MAX, &text, &len, NULL) < 0)
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "pool `%s` not found", name);
  _cleanup_yajl_val_ yajl_val v = NULL;
  sbx_pool *p = xmalloc0 (sizeof *p);
  _cleanup_pool_ sbx_pool *own = p;
  const char *img = NULL;
  yajl_val o = NULL;
  if (j_parse (text, len, POOL_JSON_MAX, json, &v, err) < 0 || j_get_int (v, "size", true, &p->size, err) < 0
      || j_get_str (v, "image_id", false, &img, err) < 0 || j_get_int (v, "created_at", false, &p->created_at, err) < 0)
    return -1;
  o = j_get (v, "options");
  if (o == NULL || !YAJL_IS_OBJECT (o))
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "`%s`: no options", json);
  p->opts.priority = SBX_PRIORITY_DEFAULT;
  if (sbx_sandbox_opts_parse (o, &p->opts, err) < 0)
    return sbx_error_wrap (err, "`%s`", json);
  p->name = xstrdup (name);
  p->image_id = img ? xstrdup (img) : NULL;
  p->parked = count_ids (st, name, "parked");
  p->creating = count_ids (st, name, "creating");
  *ret = steal_pointer (&own);
  return 0;
}

static int
cmp_names (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

int
sbx_pool_list (const sbx_store *st, char ***ret_names, sbx_error **err)
{
  _cleanup_free_ char *dir = sbx_store_path (st, "pools");
  char **names = xmalloc0 (sizeof (char *));
  _cleanup_closedir_ DIR *d = opendir (dir);
  if (d == NULL && errno != ENOENT)
    {
      strv_free (names);
      return sbx_error_errno (err, errno, "open `%s`", dir);
    }
  struct dirent *de;
  while (d && (de = readdir (d)) != NULL)
    if (de->d_name[0] != '.' && name_is_valid (de->d_name))
      strv_push (&names, de->d_name);
  qsort (names, strv_len (names), sizeof *names, cmp_names);
  *ret_names = names;
  return 0;
}

/* An entry made or removed under the pool's lock. */
static void
entry_put (const sbx_store *st, const char *name, const char *which, const char *id)
{
  _cleanup_free_ char *p = sbx_store_path (st, "pools/%s/%s/%s", name, which, id);
  int fd = open (p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0)
    close (fd);
}

static bool
entry_drop (const sbx_store *st, const char *name, const char *which, const char *id)
{
  _cleanup_free_ char *p = sbx_store_path (st, "pools/%s/%s/%s", name, which, id);
  return unlink (p) == 0;
}

void
sbx_pool_claimed (const sbx_store *st, const char *name, const char *id)
{
  entry_drop (st, name, "claiming", id);
}

void
sbx_pool_discard (const sbx_store *st, const char *id)
{
  sbx_sandbox_terminate (st, id, -1, NULL);
  sbx_sandbox_remove (st, id, NULL);
}

/* A creating/ entry whose filler is gone (the caller holds fill.lock and
 * the lock): the member is parked if it runs parked, still creating if its
 * monitor is still starting it (left, and counted), else removed. */
static void
settle_creating (const sbx_store *st, const char *name, const char *id, char ***discard)
{
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (sbx_sandbox_get (st, id, &sb, NULL) < 0)
    {
      /* No readable record: a create that never got far, or one whose
       * monitor is still writing it. */
      if (!sbx_sandbox_monitor_alive (st, id))
        {
          entry_drop (st, name, "creating", id);
          strv_push (discard, id);
        }
      return;
    }
  if (sb->state == SBX_STATE_CREATING)
    return;
  if (sb->state == SBX_STATE_RUNNING && sb->parked)
    entry_put (st, name, "parked", id);
  else
    strv_push (discard, id);
  entry_drop (st, name, "creating", id);
}

/* Settles every creating/ entry (fill.lock held by the caller). */
static void
settle (const sbx_store *st, const char *name, char ***discard)
{
  _cleanup_free_ char *dir = pool_path (st, name, "creating");
  _cleanup_strv_ char **ids = list_ids (dir);
  for (size_t i = 0; ids[i]; i++)
    settle_creating (st, name, ids[i], discard);
}

static void
discard_all (const sbx_store *st, char **ids)
{
  for (size_t i = 0; ids && ids[i]; i++)
    sbx_pool_discard (st, ids[i]);
}

/* One step of a fill, under the lock: settled, counted, and a member's id
 * put in creating/ when one is missing (*RET_ID; NULL: full, or gone). */
static int
fill_next (const sbx_store *st, const char *name, sbx_pool **ret_pool, char **ret_id, char ***discard, sbx_error **err)
{
  _cleanup_close_ int lk = pool_lock (st, name, "lock", LOCK_EX, NULL);
  *ret_id = NULL;
  *ret_pool = NULL;
  if (lk < 0)
    return 0; /* removed */
  settle (st, name, discard);
  _cleanup_pool_ sbx_pool *p = NULL;
  if (sbx_pool_get (st, name, &p, NULL) < 0)
    return 0;
  if ((int64_t) (p->parked + p->creating) >= p->size)
    return 0;
  _cleanup_free_ char *id = sbx_sandbox_new_id ();
  _cleanup_free_ char *path = sbx_store_path (st, "pools/%s/creating/%s", name, id);
  _cleanup_close_ int fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return sbx_error_errno (err, errno, "create `%s`", path);
  *ret_id = steal_pointer (&id);
  *ret_pool = steal_pointer (&p);
  return 0;
}

/* Makes member ID of P (parked, no name, no ports until a claim). */
static int
make_member (const sbx_store *st, const sbx_pool *p, const char *id, sbx_error **err)
{
  _cleanup_image_ sbx_image *img = NULL;
  if (sbx_image_resolve (st, p->image_id ? p->image_id : "busybox", &img, err) < 0)
    return -1;
  sbx_sandbox_opts o;
  sbx_sandbox_opts_copy (&p->opts, &o);
  free (o.pool);
  o.pool = xstrdup (p->name);
  strv_free (o.ports);
  o.ports = xmalloc0 (sizeof (char *));
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  int r = sbx_sandbox_create_parked (st, &o, img, id, &sb, err);
  sbx_sandbox_opts_clear (&o);
  return r;
}

/* The member made: parked, unless the pool went meanwhile. */
static void
fill_done (const sbx_store *st, const char *name, const char *id, bool made)
{
  _cleanup_close_ int lk = pool_lock (st, name, "lock", LOCK_EX, NULL);
  _cleanup_free_ char *json = pool_path (st, name, "pool.json");
  bool gone = lk < 0 || access (json, F_OK) < 0;
  if (made && !gone)
    entry_put (st, name, "parked", id);
  if (lk >= 0)
    entry_drop (st, name, "creating", id);
  if (gone || !made)
    {
      if (lk >= 0)
        close (steal_fd (&lk));
      sbx_pool_discard (st, id);
    }
}

int
sbx_pool_fill (const sbx_store *st, const char *name, int *ret_made, sbx_error **err)
{
  *ret_made = 0;
  if (check_name (name, err) < 0)
    return -1;
  _cleanup_close_ int fl = pool_lock (st, name, "fill.lock", LOCK_EX, NULL);
  if (fl < 0)
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "pool `%s` not found", name);
  for (;;)
    {
      _cleanup_strv_ char **discard = xmalloc0 (sizeof (char *));
      _cleanup_pool_ sbx_pool *p = NULL;
      _cleanup_free_ char *id = NULL;
      int r = fill_next (st, name, &p, &id, &discard, err);
      discard_all (st, discard);
      if (r < 0)
        return -1;
      if (id == NULL)
        return 0;
      r = make_member (st, p, id, err);
      fill_done (st, name, id, r == 0);
      if (r < 0)
        return sbx_error_wrap (err, "pool %s: make a member", name);
      (*ret_made)++;
    }
}

int
sbx_pool_take (const sbx_store *st, const char *name, char **ret_id, sbx_error **err)
{
  *ret_id = NULL;
  if (check_name (name, err) < 0)
    return -1;
  _cleanup_strv_ char **dead = xmalloc0 (sizeof (char *));
  {
    _cleanup_close_ int lk = pool_lock (st, name, "lock", LOCK_EX, NULL);
    _cleanup_free_ char *json = pool_path (st, name, "pool.json");
    if (lk < 0 || access (json, F_OK) < 0)
      return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "pool `%s` not found", name);
    _cleanup_free_ char *dir = pool_path (st, name, "parked");
    _cleanup_strv_ char **ids = list_ids (dir);
    for (size_t i = 0; ids[i] && *ret_id == NULL; i++)
      {
        _cleanup_free_ char *from = sbx_store_path (st, "pools/%s/parked/%s", name, ids[i]);
        _cleanup_free_ char *to = sbx_store_path (st, "pools/%s/claiming/%s", name, ids[i]);
        if (rename (from, to) < 0)
          continue;
        if (sbx_sandbox_monitor_alive (st, ids[i]))
          *ret_id = xstrdup (ids[i]);
        else
          {
            unlink (to);
            strv_push (&dead, ids[i]);
          }
      }
  }
  /* A member whose monitor died while parked: reaped and removed. */
  discard_all (st, dead);
  return 0;
}

int
sbx_pool_remove (const sbx_store *st, const char *name, int *ret_removed, sbx_error **err)
{
  *ret_removed = 0;
  if (check_name (name, err) < 0)
    return -1;
  _cleanup_free_ char *dir = pool_path (st, name, NULL);
  _cleanup_free_ char *json = pool_path (st, name, "pool.json");
  _cleanup_strv_ char **ids = NULL;
  {
    _cleanup_close_ int lk = pool_lock (st, name, "lock", LOCK_EX, NULL);
    if (lk < 0 || access (json, F_OK) < 0)
      return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "pool `%s` not found", name);
    /* From here no claim or fill finds it. */
    if (unlink (json) < 0)
      return sbx_error_errno (err, errno, "remove `%s`", json);
    _cleanup_free_ char *pd = pool_path (st, name, "parked");
    ids = list_ids (pd);
    for (size_t i = 0; ids[i]; i++)
      entry_drop (st, name, "parked", ids[i]);
  }
  discard_all (st, ids);
  *ret_removed = (int) strv_len (ids);
  /* A filler at work removes the member it makes once it sees the pool
   * gone; one killed left creating/ entries, settled here. */
  _cleanup_close_ int fl = pool_lock (st, name, "fill.lock", LOCK_EX, NULL);
  if (fl < 0)
    return rm_rf (dir, err); /* removed meanwhile (gc) */
  _cleanup_free_ char *cd = pool_path (st, name, "creating");
  _cleanup_strv_ char **creating = list_ids (cd);
  discard_all (st, creating);
  *ret_removed += (int) strv_len (creating);
  return rm_rf (dir, err);
}

/* A claim's entry: CLAIM_GRACE_S old, its claimer has died (a claim's
 * request takes milliseconds). */
#define CLAIM_GRACE_S 60

/* The members in claiming/ whose claimer died: one still parked is
 * removed, the entry of one claimed goes. */
static void
settle_claiming (const sbx_store *st, const char *name, char ***discard)
{
  _cleanup_free_ char *dir = pool_path (st, name, "claiming");
  _cleanup_strv_ char **ids = list_ids (dir);
  for (size_t i = 0; ids[i]; i++)
    {
      _cleanup_free_ char *p = sbx_store_path (st, "pools/%s/claiming/%s", name, ids[i]);
      struct stat sst;
      if (stat (p, &sst) < 0 || sst.st_mtime + CLAIM_GRACE_S > now_unix ())
        continue;
      _cleanup_sandbox_ sbx_sandbox *sb = NULL;
      if (sbx_sandbox_get (st, ids[i], &sb, NULL) == 0 && sb->parked)
        strv_push (discard, ids[i]);
      unlink (p);
    }
}

/* Every member a pool half removed lists (one being claimed is its
 * claimer's). */
static int
gc_removed_pool (const sbx_store *st, const char *name)
{
  static const char *const lists[] = { "parked", "creating" };
  int n = 0;
  for (size_t i = 0; i < ARRAY_SIZE (lists); i++)
    {
      _cleanup_free_ char *d = pool_path (st, name, lists[i]);
      _cleanup_strv_ char **ids = list_ids (d);
      n += (int) strv_len (ids);
      discard_all (st, ids);
    }
  _cleanup_free_ char *dir = pool_path (st, name, NULL);
  rm_rf (dir, NULL);
  return n;
}

/* One pool's leftovers: a pool half removed is removed; a filler killed
 * left creating/ entries (settled when no filler holds fill.lock), a
 * claimer killed a claiming/ one. */
static int
gc_pool (const sbx_store *st, const char *name)
{
  _cleanup_free_ char *json = pool_path (st, name, "pool.json");
  if (access (json, F_OK) < 0)
    {
      _cleanup_close_ int fl = pool_lock (st, name, "fill.lock", LOCK_EX | LOCK_NB, NULL);
      return fl < 0 ? 0 : gc_removed_pool (st, name);
    }
  _cleanup_close_ int fl = pool_lock (st, name, "fill.lock", LOCK_EX | LOCK_NB, NULL);
  if (fl < 0)
    return 0;
  _cleanup_strv_ char **discard = xmalloc0 (sizeof (char *));
  {
    _cleanup_close_ int lk = pool_lock (st, name, "lock", LOCK_EX, NULL);
    if (lk < 0)
      return 0;
    settle (st, name, &discard);
    settle_claiming (st, name, &discard);
    _cleanup_free_ char *pd = pool_path (st, name, "parked");
    _cleanup_strv_ char **ids = list_ids (pd);
    for (size_t i = 0; ids[i]; i++)
      if (!sbx_sandbox_monitor_alive (st, ids[i]) && entry_drop (st, name, "parked", ids[i]))
        strv_push (&discard, ids[i]);
  }
  discard_all (st, discard);
  return (int) strv_len (discard);
}

/* Whether ID is listed by its pool (parked or being made). */
static bool
is_member (const sbx_store *st, const char *name, const char *id)
{
  if (!name_is_valid (name))
    return false;
  _cleanup_free_ char *a = sbx_store_path (st, "pools/%s/parked/%s", name, id);
  _cleanup_free_ char *b = sbx_store_path (st, "pools/%s/creating/%s", name, id);
  _cleanup_free_ char *c = sbx_store_path (st, "pools/%s/claiming/%s", name, id);
  return access (a, F_OK) == 0 || access (b, F_OK) == 0 || access (c, F_OK) == 0;
}

int
sbx_pool_gc (const sbx_store *st)
{
  int n = 0;
  _cleanup_strv_ char **names = NULL;
  if (sbx_pool_list (st, &names, NULL) == 0)
    for (size_t i = 0; names[i]; i++)
      n += gc_pool (st, names[i]);
  /* A parked sandbox that no pool lists: its pool went, or a claim took
   * it and died before its request. No one can claim it: it ends. */
  _cleanup_strv_ char **ids = NULL;
  if (sbx_sandbox_list (st, &ids, NULL) < 0)
    return n;
  for (size_t i = 0; ids[i]; i++)
    {
      _cleanup_sandbox_ sbx_sandbox *sb = NULL;
      if (sbx_sandbox_get (st, ids[i], &sb, NULL) < 0 || !sb->parked || sb->state != SBX_STATE_RUNNING)
        continue;
      if (!is_member (st, sb->opts.pool ? sb->opts.pool : "", ids[i]))
        {
          sbx_pool_discard (st, ids[i]);
          n++;
        }
    }
  return n;
}

static bool
strv_same (char *const *a, char *const *b)
{
  size_t n = strv_len (a);
  if (n != strv_len (b))
    return false;
  for (size_t i = 0; i < n; i++)
    if (strcmp (a[i], b[i]) != 0)
      return false;
  return true;
}

static bool
str_same (const char *a, const char *b)
{
  return strcmp (a ? a : "", b ? b : "") == 0;
}

static bool
given_has (char *const *given, const char *name)
{
  for (size_t i = 0; given && given[i]; i++)
    if (strcmp (given[i], name) == 0)
      return true;
  return false;
}

static int
mismatch (const sbx_pool *p, const char *opt, sbx_error **err)
{
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                        "--pool %s: --%s does not match the pool's, and a started sandbox cannot change it (use the "
                        "pool's value, or a pool made with it)",
                        p->name, opt);
}

/* What a started sandbox cannot change must be the pool's. */
static int
check_fixed (const sbx_pool *p, const sbx_sandbox_opts *a, char *const *given, const char *image_id, sbx_error **err)
{
  const sbx_sandbox_opts *o = &p->opts;
  if (given_has (given, "image") && !str_same (image_id, p->image_id))
    return mismatch (p, "image", err);
  if (given_has (given, "runtime") && !str_same (a->runtime, o->runtime))
    return mismatch (p, "runtime", err);
  if (given_has (given, "block-network") && a->block_network != o->block_network)
    return mismatch (p, "block-network", err);
  if (given_has (given, "volume") && !strv_same (a->volumes, o->volumes))
    return mismatch (p, "volume", err);
  if (given_has (given, "mount") && !strv_same (a->mounts, o->mounts))
    return mismatch (p, "mount", err);
  if (given_has (given, "disk") && a->disk != o->disk)
    return mismatch (p, "disk", err);
  if ((given_has (given, "secret") && !strv_same (a->secrets, o->secrets))
      || (given_has (given, "secret-file") && !strv_same (a->secret_files, o->secret_files)))
    return mismatch (p, given_has (given, "secret") ? "secret" : "secret-file", err);
  if (given_has (given, "allow-secrets") && a->allow_secrets != o->allow_secrets)
    return mismatch (p, "allow-secrets", err);
  /* gVisor's process limit is fixed at its start (sbx update). */
  if (given_has (given, "pids") && a->pids != o->pids && str_same (o->runtime, "runsc"))
    return mismatch (p, "pids", err);
  if (given_has (given, "gpu") && !str_same (a->gpus, o->gpus))
    return mismatch (p, "gpu", err);
  if (given_has (given, "docker") && a->docker != o->docker)
    return mismatch (p, "docker", err);
  if (given_has (given, "namespace") && !str_same (a->namespace, o->namespace))
    return mismatch (p, "namespace", err);
  if (given_has (given, "priority") && a->priority != o->priority)
    return mismatch (p, "priority", err);
  if ((a->cmd && a->cmd[0]) || a->exit_with_cmd)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "--pool %s: an initial command (create -- CMD, --run-cmd, --exit-with-cmd) cannot be given "
                          "to a claimed sandbox: start it with sbx exec -d",
                          p->name);
  if (o->block_network && (given_has (given, "allow") || given_has (given, "allow-domain")))
    return mismatch (p, given_has (given, "allow") ? "allow" : "allow-domain", err);
  return 0;
}

static void
set_strv (char ***dst, char *const *v)
{
  strv_free (*dst);
  *dst = strv_dup (v);
  if (*dst == NULL)
    *dst = xmalloc0 (sizeof (char *));
}

int
sbx_pool_claim_opts (const sbx_pool *p, const sbx_sandbox_opts *a, char *const *given, const char *image_id,
                     sbx_sandbox_opts *ret, sbx_error **err)
{
  if (check_fixed (p, a, given, image_id, err) < 0)
    return -1;
  sbx_sandbox_opts m;
  sbx_sandbox_opts_copy (&p->opts, &m);
  free (m.pool);
  m.pool = xstrdup (p->name);
  if (a->name)
    m.name = xstrdup (a->name);
  for (size_t i = 0; a->env && a->env[i]; i++)
    strv_env_set (&m.env, a->env[i]);
  if (given_has (given, "cwd"))
    {
      free (m.cwd);
      m.cwd = xstrdup (a->cwd);
    }
  if (given_has (given, "keep-warm"))
    m.keep_warm = a->keep_warm;
  if (given_has (given, "timeout"))
    m.timeout = a->timeout;
  if (given_has (given, "on-idle"))
    m.on_idle_pause = a->on_idle_pause;
  if (given_has (given, "cpu"))
    m.cpu = a->cpu, m.cpu_default = false;
  if (given_has (given, "memory"))
    m.memory = a->memory, m.memory_default = false;
  if (given_has (given, "pids"))
    m.pids = a->pids;
  if (given_has (given, "allow"))
    set_strv (&m.allow, a->allow);
  if (given_has (given, "allow-domain"))
    set_strv (&m.allow_domains, a->allow_domains);
  if (given_has (given, "port"))
    set_strv (&m.ports, a->ports);
  if (given_has (given, "public"))
    m.public_ports = true;
  for (size_t i = 0; a->copy_in && a->copy_in[i]; i++)
    strv_push (&m.copy_in, a->copy_in[i]);
  *ret = m;
  return 0;
}
