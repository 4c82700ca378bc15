/* sbx build (see build.h). */
#include "config.h"
#include "build.h"
#include "archive-dl.h"
#include "client.h"
#include "disk.h"
#include "fs.h"
#include "image.h"
#include "json.h"
#include "layer.h"
#include "lifecycle.h"
#include "openat.h"
#include "pull.h"
#include "sandbox.h"
#include "sha256.h"
#include "spawn.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUILD_KEY_VERSION "sbx-build-v1"
#define TREE_DEPTH_MAX 256

/* --- the build ------------------------------------------------------------- */

typedef struct build {
  const sbx_store *st;
  const sbx_build_opts *o;
  sbx_image *img; /* the image so far; id NULL once a step changed it */
  char key[65];
} build;

static void
key_next (build *b, const char *part, const char *extra)
{
  sha256_ctx c;
  sha256_init (&c);
  sha256_update (&c, b->key, strlen (b->key));
  sha256_update (&c, "\n", 1);
  sha256_update (&c, part, strlen (part));
  sha256_update (&c, "\n", 1);
  if (extra)
    sha256_update (&c, extra, strlen (extra));
  sha256_ctx_hex_final (&c, b->key);
}

static char *
cache_path (build *b)
{
  return sbx_store_path (b->st, "build-cache/%s", b->key);
}

/* The layer a cached step made ("DIGEST SIZE"), if it is still in the
 * store (gc may have collected it since) and whole (not one the host went
 * down on before it reached the disk: the step is then made again). */
static char *
cache_get (build *b, uint64_t *ret_size)
{
  if (b->o->no_cache)
    return NULL;
  _cleanup_free_ char *p = cache_path (b), *text = NULL;
  if (read_file (p, 160, &text, NULL, NULL) < 0)
    return NULL;
  char digest[80];
  unsigned long long size;
  if (sscanf (text, "%79s %llu", digest, &size) != 2 || strncmp (digest, "sha256:", 7) != 0
      || sbx_layer_check (b->st->root, digest, NULL) < 0)
    return NULL;
  *ret_size = size;
  return xstrdup (digest);
}

static void
cache_put (build *b, const char *digest, uint64_t size)
{
  _cleanup_free_ char *dir = sbx_store_path (b->st, "build-cache");
  mkdir (dir, 0700);
  _cleanup_free_ char *p = cache_path (b);
  _cleanup_free_ char *text = xasprintf ("%s %llu\n", digest, (unsigned long long) size);
  write_file_atomic (p, text, strlen (text), 0600, NULL);
}

static void
add_layer (build *b, const char *digest, uint64_t size)
{
  strv_push (&b->img->layers, digest);
  b->img->size += size;
  free (b->img->id);
  b->img->id = NULL;
}

/* The environment in effect, later entries winning. */
static void
env_set (char ***env, const char *entry)
{
  size_t kl = (size_t) (strchr (entry, '=') - entry);
  for (size_t i = 0; (*env)[i]; i++)
    if (strncmp ((*env)[i], entry, kl + 1) == 0)
      {
        free ((*env)[i]);
        (*env)[i] = xstrdup (entry);
        return;
      }
  strv_push (env, entry);
}

/* What a command step depends on besides itself: env and workdir. */
static char *
exec_context (const build *b)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kstrv (g, "env", b->img->env);
  j_kstr (g, "workdir", b->img->workdir);
  j_endmap (g);
  return j_take (g, NULL);
}

/* --- files from the build context ------------------------------------------ */

/* The directory holding context path SRC, opened beneath the context with
 * no symlink on the way (-1 for the context itself: *ret_pd stays -1), and
 * SRC's last component in *ret_base (allocated). The last component is
 * not followed by the callers. */
static int
open_src_parent (int ctx, const char *src, int *ret_pd, char **ret_base, sbx_error **err)
{
  _cleanup_free_ char *p = xstrdup (src);
  size_t l = strlen (p);
  while (l > 1 && p[l - 1] == '/')
    p[--l] = '\0';
  char *slash = strrchr (p, '/');
  *ret_pd = -1;
  if (slash)
    {
      *slash = '\0';
      int pd = sbx_openat2 (ctx, p, O_RDONLY | O_DIRECTORY, 0,
                            RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS);
      if (pd < 0)
        return sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, errno,
                              "files: `%s` in the build context (a path through a symlink is not followed)", src);
      *ret_pd = pd;
    }
  *ret_base = xstrdup (slash ? slash + 1 : p);
  return 0;
}

/* Hashes (name, type, mode, content) of the tree at NAME of DFD into C. */
static int
hash_tree (sha256_ctx *c, int dfd, const char *name, const char *rel, int depth, sbx_error **err)
{
  struct stat st;
  if (fstatat (dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INTERNAL, errno, "context `%s`", rel);
  char head[64];
  snprintf (head, sizeof head, "\n%o ", (unsigned) st.st_mode);
  sha256_update (c, head, strlen (head));
  sha256_update (c, rel, strlen (rel) + 1);
  if (S_ISLNK (st.st_mode))
    {
      char target[4096];
      ssize_t n = readlinkat (dfd, name, target, sizeof target);
      if (n > 0)
        sha256_update (c, target, (size_t) n);
      return 0;
    }
  if (S_ISREG (st.st_mode))
    {
      _cleanup_close_ int fd = openat (dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0)
        return sbx_error_errno (err, errno, "read context `%s`", rel);
      static char buf[1 << 16];
      ssize_t n;
      while ((n = read (fd, buf, sizeof buf)) > 0)
        sha256_update (c, buf, (size_t) n);
      return n < 0 ? sbx_error_errno (err, errno, "read context `%s`", rel) : 0;
    }
  if (!S_ISDIR (st.st_mode))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "context `%s`: not a file, directory or symlink", rel);
  if (depth > TREE_DEPTH_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "context `%s`: nested too deep", rel);
  int sub = openat (dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  _cleanup_closedir_ DIR *d = sub >= 0 ? fdopendir (sub) : NULL;
  if (d == NULL)
    {
      if (sub >= 0)
        close (sub);
      return sbx_error_errno (err, errno, "open context `%s`", rel);
    }
  size_t n;
  _cleanup_strv_ char **names = sbx_dir_sorted (d, NULL, NULL, &n);
  int r = 0;
  for (size_t i = 0; i < n && r == 0; i++)
    {
      _cleanup_free_ char *sr = xasprintf ("%s/%s", rel, names[i]);
      r = hash_tree (c, dirfd (d), names[i], sr, depth + 1, err);
    }
  return r;
}

/* The digest of everything a `files` step copies, for its cache key. */
static int
files_digest (const build *b, const sbx_bp_step *s, char **ret, sbx_error **err)
{
  if (b->o->context == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "a `files` step needs a build context directory");
  _cleanup_close_ int ctx = open (b->o->context, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (ctx < 0)
    return sbx_error_set (err, SBX_E_NOT_FOUND, errno, "build context `%s`", b->o->context);
  sha256_ctx c;
  sha256_init (&c);
  for (size_t i = 0; i < s->nfiles; i++)
    {
      /* The source itself must lie beneath the context, whatever links
       * lead elsewhere. */
      _cleanup_close_ int pd = -1;
      _cleanup_free_ char *base = NULL;
      if (open_src_parent (ctx, s->files[i].src, &pd, &base, err) < 0
          || hash_tree (&c, pd >= 0 ? pd : ctx, base, s->files[i].src, 0, err) < 0)
        return -1;
    }
  char hex[65];
  sha256_ctx_hex_final (&c, hex);
  *ret = xstrdup (hex);
  return 0;
}

/* Copies NAME of DFD (the context) to DEST under ROOT (the sandbox's merged
 * root, through the file API: symlinks in the image resolve inside it). */
static int
copy_in (int root, int dfd, const char *name, const char *dest, int mode, int depth, sbx_error **err)
{
  struct stat st;
  if (fstatat (dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return sbx_error_errno (err, errno, "context `%s`", name);
  if (S_ISLNK (st.st_mode))
    {
      char target[4096];
      ssize_t n = readlinkat (dfd, name, target, sizeof target - 1);
      if (n < 0)
        return sbx_error_errno (err, errno, "readlink `%s`", name);
      target[n] = '\0';
      sbx_error *e = NULL;
      if (sbx_fs_rm (root, dest, &e) < 0)
        sbx_error_free (e);
      return sbx_fs_symlink (root, dest, target, err);
    }
  if (S_ISREG (st.st_mode))
    {
      _cleanup_close_ int in = openat (dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (in < 0)
        return sbx_error_errno (err, errno, "read context `%s`", name);
      sbx_fs_writer w;
      if (sbx_fs_write_begin (root, dest, mode >= 0 ? (mode_t) mode : st.st_mode & 07777, false, &w, err) < 0)
        return -1;
      if (sbx_fs_copy (in, w.fd, err) < 0)
        {
          sbx_fs_write_abort (&w);
          return -1;
        }
      return sbx_fs_write_commit (&w, err);
    }
  if (!S_ISDIR (st.st_mode))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "context `%s`: not a file, directory or symlink", name);
  if (depth > TREE_DEPTH_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "context `%s`: nested too deep", name);
  if (sbx_fs_mkdir (root, dest, true, err) < 0)
    return -1;
  int sub = openat (dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  _cleanup_closedir_ DIR *d = sub >= 0 ? fdopendir (sub) : NULL;
  if (d == NULL)
    {
      if (sub >= 0)
        close (sub);
      return sbx_error_errno (err, errno, "open context `%s`", name);
    }
  int r = 0;
  struct dirent *de;
  while (r == 0 && (de = readdir (d)) != NULL)
    {
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      size_t l = strlen (dest);
      _cleanup_free_ char *sub_dest = xasprintf ("%s%s%s", dest, l && dest[l - 1] == '/' ? "" : "/", de->d_name);
      r = copy_in (root, dirfd (d), de->d_name, sub_dest, mode, depth + 1, err);
    }
  return r;
}

static int
files_step (const build *b, const sbx_bp_step *s, const char *id, sbx_error **err)
{
  _cleanup_close_ int root = -1, ctx = -1;
  if (sbx_fs_root_running (b->st, id, &root, err) < 0)
    return -1;
  ctx = open (b->o->context, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (ctx < 0)
    return sbx_error_errno (err, errno, "build context `%s`", b->o->context);
  for (size_t i = 0; i < s->nfiles; i++)
    {
      const sbx_bp_file *f = &s->files[i];
      /* The source's parent, beneath the context; then the source itself
       * without following it. */
      _cleanup_close_ int pd = -1;
      _cleanup_free_ char *base = NULL;
      if (open_src_parent (ctx, f->src, &pd, &base, err) < 0)
        return -1;
      /* A file copied to a directory path (dest ending in /) keeps its name. */
      _cleanup_free_ char *dest = NULL;
      size_t dl = strlen (f->dest);
      struct stat st;
      if (f->dest[dl - 1] == '/' && fstatat (pd >= 0 ? pd : ctx, base, &st, AT_SYMLINK_NOFOLLOW) == 0
          && !S_ISDIR (st.st_mode))
        {
          dest = xasprintf ("%s%s", f->dest, base);
          _cleanup_free_ char *dir = xstrndup (f->dest, dl);
          if (sbx_fs_mkdir (root, dir, true, err) < 0)
            return -1;
        }
      else
        {
          dest = xstrdup (f->dest);
          _cleanup_free_ char *parent = xstrdup (f->dest);
          char *ps = strrchr (parent, '/');
          if (ps && ps != parent)
            {
              *ps = '\0';
              if (sbx_fs_mkdir (root, parent, true, err) < 0)
                return -1;
            }
        }
      if (copy_in (root, pd >= 0 ? pd : ctx, base, dest, f->mode, 0, err) < 0)
        return sbx_error_wrap (err, "files: `%s` -> `%s`", f->src, f->dest);
    }
  return 0;
}

/* --- commands in the build sandbox ------------------------------------------- */

static void
push3 (char ***v, const char *a, const char *b, const char *c)
{
  strv_push (v, a);
  strv_push (v, b);
  strv_push (v, c);
}

/* The shell commands a step runs, each `sh -c` in turn. Package names
 * were checked against their grammar when the blueprint was parsed. */
static char **
step_commands (const sbx_bp_step *s)
{
  char **cmds = xmalloc0 (sizeof (char *));
  _cleanup_free_ char *joined = NULL;
  if (s->kind == SBX_STEP_APT_PACKAGES || s->kind == SBX_STEP_PYTHON_PACKAGES)
    {
      joined = xstrdup ("");
      for (size_t i = 0; s->list[i]; i++)
        {
          char *j = xasprintf ("%s '%s'", joined, s->list[i]);
          free (joined);
          joined = j;
        }
    }
  switch (s->kind)
    {
    case SBX_STEP_RUN:
      for (size_t i = 0; s->list[i]; i++)
        strv_push (&cmds, s->list[i]);
      break;
    case SBX_STEP_APT_PACKAGES:
      {
        _cleanup_free_ char *c = xasprintf ("apt-get install -y --no-install-recommends%s", joined);
        push3 (
            &cmds,
            "command -v apt-get >/dev/null || { echo 'apt_packages needs a Debian base (debian:SUITE)' >&2; exit 2; }",
            "apt-get update", c);
        strv_push (&cmds, "rm -rf /var/lib/apt/lists/*");
        break;
      }
    case SBX_STEP_PYTHON_VERSION:
      {
        _cleanup_free_ char
            *c = xasprintf ("apt-cache show python%s >/dev/null 2>&1 || { echo 'python_version %s: no package python%s "
                            "in this base' >&2; "
                            "exit 2; }; apt-get install -y --no-install-recommends python%s python3-pip python3-venv",
                            s->str, s->str, s->str, s->str);
        push3 (&cmds,
               "command -v apt-get >/dev/null || { echo 'python_version needs a Debian base (debian:SUITE)' >&2; exit "
               "2; }",
               "apt-get update", c);
        _cleanup_free_ char *l = xasprintf ("ln -sf python%s /usr/bin/python3 && ln -sf python%s /usr/bin/python",
                                            s->str, s->str);
        strv_push (&cmds, l);
        strv_push (&cmds, "rm -rf /var/lib/apt/lists/*");
        break;
      }
    case SBX_STEP_PYTHON_PACKAGES:
      {
        _cleanup_free_ char *c = xasprintf (
            "command -v python3 >/dev/null || { echo 'python_packages needs python3 in the image' >&2; exit 2; }; "
            "python3 -m pip install --no-cache-dir --break-system-packages%s || python3 -m pip install "
            "--no-cache-dir%s",
            joined, joined);
        strv_push (&cmds, c);
        break;
      }
    case SBX_STEP_WITH_DOCKER:
      if (s->flag)
        {
          push3 (
              &cmds,
              "command -v apt-get >/dev/null || { echo 'with_docker needs a Debian base (debian:SUITE)' >&2; exit 2; }",
              "apt-get update", "apt-get install -y --no-install-recommends docker.io");
          strv_push (&cmds, "rm -rf /var/lib/apt/lists/*");
        }
      break;
    default:
      break;
    }
  return cmds;
}

/* A build sandbox from the image so far, with the step's environment. */
static int
sandbox_up (build *b, char **ret_id, sbx_error **err)
{
  sbx_sandbox_opts o = { 0 };
  o.runtime = xstrdup (b->o->runtime ? b->o->runtime : "runsc");
  o.keep_warm = -1;
  o.timeout = SBX_TIMEOUT_MAX;
  o.pids = 4096;
  o.priority = SBX_PRIORITY_DEFAULT;
  o.disk = -1;
  o.env = xmalloc0 (sizeof (char *));
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  int r = sbx_sandbox_create_from (b->st, &o, b->img, &sb, err);
  sbx_sandbox_opts_clear (&o);
  if (r < 0)
    return sbx_error_wrap (err, "start a build sandbox");
  *ret_id = xstrdup (sb->id);
  return 0;
}

static void
sandbox_down (build *b, const char *id)
{
  sbx_sandbox_terminate (b->st, id, 30000, NULL);
  sbx_sandbox_remove (b->st, id, NULL);
}

int
sbx_layer_from_upper (const sbx_store *st, const char *id, char **ret_digest, uint64_t *ret_size, sbx_error **err)
{
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (sbx_sandbox_load (st, id, &sb, err) < 0)
    return -1;
  /* The lock (if any) goes after the upper dir: the mount lives until then. */
  _cleanup_close_ int lock = -1;
  _cleanup_close_ int ufd = -1;
  if (sbx_disk_open_upper (st, sb, &ufd, &lock, err) < 0)
    return -1;
  _cleanup_free_ char *rnd = random_hex (8);
  _cleanup_free_ char *tmpdir = sbx_store_path (st, "layers/tmp");
  mkdir_p (tmpdir, 0700, NULL);
  _cleanup_free_ char *tar = xasprintf ("%s/build-%s.tar", tmpdir, rnd);
  _cleanup_close_ int tfd = open (tar, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (tfd < 0)
    return sbx_error_errno (err, errno, "create `%s`", tar);
  int r = sbx_tar_from_dir_ids (ufd, tfd, true, false, (uint32_t) sb->userns_base, err);
  if (r == 0)
    r = sbx_layer_import_tar (st->root, tar, ret_digest, ret_size, err);
  unlink (tar);
  return r;
}

static int
run_step (build *b, const sbx_bp_step *s, size_t idx, char **ret_digest, uint64_t *ret_size, sbx_error **err)
{
  _cleanup_free_ char *id = NULL;
  if (sandbox_up (b, &id, err) < 0)
    return -1;
  int r = 0;
  /* The working directory exists for the commands, as a Dockerfile's
   * WORKDIR makes it. */
  if (b->img->workdir && strcmp (b->img->workdir, "/") != 0)
    {
      _cleanup_close_ int root = -1;
      if ((r = sbx_fs_root_running (b->st, id, &root, err)) == 0)
        r = sbx_fs_mkdir (root, b->img->workdir, true, err);
    }
  if (r < 0)
    ;
  else if (s->kind == SBX_STEP_FILES)
    r = files_step (b, s, id, err);
  else
    {
      _cleanup_strv_ char **cmds = step_commands (s);
      for (size_t i = 0; cmds[i] && r == 0; i++)
        {
          char *argv[] = { (char *) "/bin/sh", (char *) "-c", cmds[i], NULL };
          char *env[] = { (char *) "DEBIAN_FRONTEND=noninteractive", NULL };
          sbx_exec_opts eo = { .argv = argv, .env = env, .cwd = b->img->workdir };
          int status = 0;
          r = sbx_client_exec (b->st, id, &eo, -1, b->o->out_fd, b->o->out_fd, &status, err);
          if (r == 0 && status != 0)
            r = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "step %zu (%s) failed: `%.200s` exited with status %d",
                               idx + 1, sbx_step_name (s->kind), cmds[i], status);
        }
    }
  /* Ended before its files are read: nothing writes to them any more. */
  if (sbx_sandbox_terminate (b->st, id, 30000, r == 0 ? err : NULL) < 0 && r == 0)
    r = -1;
  if (r == 0)
    r = sbx_layer_from_upper (b->st, id, ret_digest, ret_size, err);
  sandbox_down (b, id);
  return r;
}

/* --- the base -------------------------------------------------------------- */

/* debian:SUITE: debootstrap (with its default mirror) into a directory of
 * the store, then that tree as a layer. The distribution's packages and
 * scripts run on the host here, as debootstrap always does; nothing of a
 * user's blueprint does. */
static int
debian_base (build *b, const char *suite, sbx_error **err)
{
  key_next (b, "debootstrap --variant=minbase", suite);
  uint64_t size = 0;
  _cleanup_free_ char *digest = cache_get (b, &size);
  if (digest == NULL)
    {
      _cleanup_free_ char *rnd = random_hex (8);
      _cleanup_free_ char *tmpdir = sbx_store_path (b->st, "layers/tmp");
      mkdir_p (tmpdir, 0700, NULL);
      _cleanup_free_ char *dir = xasprintf ("%s/debootstrap-%s", tmpdir, rnd);
      _cleanup_free_ char *tar = xasprintf ("%s.tar", dir);
      if (mkdir (dir, 0755) < 0)
        return sbx_error_errno (err, errno, "mkdir `%s`", dir);
      /* Locked for debootstrap's minutes: gc takes only unlocked ones. */
      _cleanup_close_ int dirlock = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dirlock < 0 || flock (dirlock, LOCK_EX) < 0)
        return sbx_error_errno (err, errno, "lock `%s`", dir);
      char *argv[] = { (char *) "debootstrap", (char *) "--variant=minbase", (char *) suite, dir, NULL };
      sbx_spawn_io io = { .in_fd = -1, .out_fd = b->o->out_fd, .err_fd = b->o->out_fd };
      int status = -1;
      int r = 0;
      if (sbx_spawn_run (argv, &io, &status, NULL) < 0 || status != 0)
        r = sbx_error_set (err, status == 127 ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, 0,
                           "debootstrap of `%s` failed (is debootstrap installed? is `%s` a suite?)", suite, suite);
      _cleanup_close_ int dfd = r == 0 ? open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
      _cleanup_close_ int tfd = r == 0 ? open (tar, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
      if (r == 0 && (dfd < 0 || tfd < 0))
        r = sbx_error_errno (err, errno, "debootstrap output");
      /* Its /dev nodes are left out: sbx's top layer has /dev. */
      if (r == 0)
        r = sbx_tar_from_dir (dfd, tfd, false, true, err);
      if (r == 0)
        r = sbx_layer_import_tar (b->st->root, tar, &digest, &size, err);
      unlink (tar);
      rm_rf (dir, NULL);
      if (r < 0)
        return -1;
      cache_put (b, digest, size);
    }
  b->img->layers = xmalloc0 (sizeof (char *));
  b->img->env = xmalloc0 (sizeof (char *));
  strv_push (&b->img->env, "PATH=" SBX_DEFAULT_PATH);
  b->img->workdir = xstrdup ("/");
  add_layer (b, digest, size);
  return 0;
}

int
sbx_build (const sbx_store *st, const sbx_blueprint *bp, const sbx_build_opts *o, char **ret_id, sbx_error **err)
{
  build b = { .st = st, .o = o };
  strcpy (b.key, BUILD_KEY_VERSION);
  /* New layers are unreferenced until the image is stored. */
  _cleanup_close_ int layers_lock = sbx_store_layers_lock (st, LOCK_SH, err);
  if (layers_lock < 0)
    return -1;
  _cleanup_image_ sbx_image *img = NULL;
  if (strncmp (bp->base, "debian:", 7) == 0)
    {
      img = xmalloc0 (sizeof *img);
      b.img = img;
      if (o->progress)
        o->progress (o->data, 0, bp->nsteps, bp->base, SBX_BUILD_STEP_RUN);
      if (debian_base (&b, bp->base + 7, err) < 0)
        return sbx_error_wrap (err, "base `%s`", bp->base);
    }
  else
    {
      /* A registry reference is pulled when the store lacks it. */
      _cleanup_conf_ sbx_conf *conf = NULL;
      if (sbx_conf_load (NULL, &conf, err) < 0
          || sbx_image_obtain (st, conf, bp->base, SBX_PULL_MISSING, o->pull, &img, err) < 0)
        return sbx_error_wrap (err, "base `%s`", bp->base);
      b.img = img;
      key_next (&b, "base", img->id);
    }
  if (img->env == NULL)
    img->env = xmalloc0 (sizeof (char *));
  /* A workdir set after the last step that ran commands does not exist
   * yet: it gets a layer of its own at the end, as a Dockerfile's would. */
  bool workdir_pending = false;
  for (size_t i = 0; i < bp->nsteps; i++)
    {
      const sbx_bp_step *s = &bp->steps[i];
      _cleanup_free_ char *extra = NULL;
      switch (s->kind)
        {
        case SBX_STEP_ENV:
          for (size_t k = 0; s->list[k]; k++)
            env_set (&img->env, s->list[k]);
          break;
        case SBX_STEP_WORKDIR:
          free (img->workdir);
          img->workdir = xstrdup (s->str);
          workdir_pending = strcmp (s->str, "/") != 0;
          break;
        case SBX_STEP_CMD:
          strv_free (img->cmd);
          img->cmd = strv_dup (s->list);
          break;
        case SBX_STEP_FILES:
          if (files_digest (&b, s, &extra, err) < 0)
            return sbx_error_wrap (err, "step %zu (files)", i + 1);
          break;
        default:
          extra = exec_context (&b);
        }
      key_next (&b, s->canon, extra);
      _cleanup_free_ char *text = o->progress ? sbx_bp_step_text (s) : NULL;
      if (!sbx_step_makes_layer (s->kind))
        {
          if (o->progress)
            o->progress (o->data, i + 1, bp->nsteps, text, SBX_BUILD_STEP_CONFIG);
          continue;
        }
      uint64_t size = 0;
      _cleanup_free_ char *digest = cache_get (&b, &size);
      if (o->progress)
        o->progress (o->data, i + 1, bp->nsteps, text, digest ? SBX_BUILD_STEP_CACHED : SBX_BUILD_STEP_RUN);
      if (digest == NULL)
        {
          if (o->stop && o->stop (o->data))
            return sbx_error_set (err, SBX_E_INTERNAL, EINTR, "interrupted before step %zu", i + 1);
          if (run_step (&b, s, i, &digest, &size, err) < 0)
            return -1;
          cache_put (&b, digest, size);
        }
      add_layer (&b, digest, size);
      workdir_pending = false;
    }
  if (workdir_pending)
    {
      static char *mk_list[] = { (char *) "true", NULL };
      static const sbx_bp_step mk = { .kind = SBX_STEP_RUN,
                                      .list = mk_list,
                                      .canon = (char *) "{\"workdir-made\":true}" };
      _cleanup_free_ char *extra = exec_context (&b);
      key_next (&b, mk.canon, extra);
      uint64_t size = 0;
      _cleanup_free_ char *digest = cache_get (&b, &size);
      if (digest == NULL)
        {
          if (run_step (&b, &mk, bp->nsteps, &digest, &size, err) < 0)
            return -1;
          cache_put (&b, digest, size);
        }
      add_layer (&b, digest, size);
    }
  img->created = 0;
  if (sbx_image_store (st, img, err) < 0)
    return -1;
  *ret_id = xstrdup (img->id);
  return 0;
}
