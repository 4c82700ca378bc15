/* Host directories bound into a sandbox (see hostmount.h).
 *
 * The path a user names is only a string: what is mounted is the directory
 * an fd holds, opened one component at a time from `/` with O_NOFOLLOW (a
 * symlink anywhere is refused), checked as that fd (its real path against
 * the policy, its parents by inode against the refused directories, its
 * files for a container engine's socket), and bound from that same fd with
 * open_tree(2) and move_mount(2). A component swapped for a symlink after
 * the walk changes nothing: the fd is not a path. The bind is made in the
 * monitor's private mount namespace under RUN/sandboxes/ID/mounts/N, a
 * directory of sbx's own, and the spec binds it from there: the runtime
 * never resolves a path the user gave. */
#include "config.h"
#include "hostmount.h"
#include "sbx-limits.h"
#include "spec.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* Refused, with everything below them. */
static const char *const deny_below[] = { "/proc", "/sys", "/dev", "/boot", "/etc", "/root", NULL };
/* Refused themselves: what is below them is refused only as state_dirs
 * say (and as the engine sockets do). */
static const char *const deny_itself[] = { "/run", "/var/run", "/var/lib", NULL };
/* The state of sbx and of container engines: refused themselves, below
 * and above (a parent holds them). The store's own ROOT and RUN are added
 * to these wherever they are. */
static const char *const state_dirs[] = {
  SBX_DEFAULT_ROOT,      SBX_DEFAULT_RUN_ROOT,
  "/var/lib/docker",     "/var/lib/containerd",
  "/var/lib/containers", "/var/lib/buildkit",
  "/var/lib/kubelet",    "/var/lib/cri-o",
  "/run/docker",         "/run/containerd",
  "/run/containers",     "/run/podman",
  "/run/crio",           "/run/buildkit",
  "/run/runc",           "/run/runsc",
  "/var/run/docker",     "/var/run/containerd",
  "/var/run/containers", "/var/run/podman",
  "/var/run/crio",       "/var/run/buildkit",
  "/var/run/runc",       "/var/run/runsc",
  "/var/run/sbx",        NULL,
};

/* The names of engines' API sockets, refused anywhere in the scanned tree,
 * whatever the entry is (a directory of the name aside): a regular file or
 * a symlink there marks a place where an engine puts its socket, and may be
 * one by the time the sandbox runs. */
static const char *const engine_sockets[] = {
  "docker.sock", "dockerd.sock", "docker-containerd.sock", "containerd.sock", "containerd.sock.ttrpc",
  "podman.sock", "crio.sock",    "cri-dockerd.sock",       "dockershim.sock", "buildkitd.sock",
  NULL,
};
/* Their known places below a source, looked at whatever the scan's
 * bounds; `*` is any one name. */
static const char *const engine_socket_places[] = {
  "docker.sock",
  "run/docker.sock",
  "var/run/docker.sock",
  "containerd/containerd.sock",
  "run/containerd/containerd.sock",
  "var/run/containerd/containerd.sock",
  "docker/containerd/containerd.sock",
  "run/docker/containerd/containerd.sock",
  "var/run/docker/containerd/containerd.sock",
  "podman/podman.sock",
  "run/podman/podman.sock",
  "var/run/podman/podman.sock",
  "crio/crio.sock",
  "run/crio/crio.sock",
  "var/run/crio/crio.sock",
  "buildkit/buildkitd.sock",
  "run/buildkit/buildkitd.sock",
  "var/run/buildkit/buildkitd.sock",
  "run/user/*/docker.sock",
  "run/user/*/podman/podman.sock",
  "run/user/*/buildkit/buildkitd.sock",
  "user/*/docker.sock",
  "user/*/podman/podman.sock",
  "*/docker.sock",
  "*/podman/podman.sock",
  ".docker/run/docker.sock",
  ".docker/desktop/docker.sock",
  NULL,
};

/* --- paths and the option ------------------------------------------------ */

void
sbx_hostmount_clear (sbx_hostmount *m)
{
  free (m->source);
  free (m->dest);
  memset (m, 0, sizeof *m);
}

int
sbx_hostpath_normalize (const char *path, char **ret, sbx_error **err)
{
  _cleanup_free_ char *q = printable_escaped (path, 128);
  if (path[0] != '/')
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "`%s` is not an absolute path", q);
  size_t len = strlen (path);
  if (len >= PATH_MAX)
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "`%s`: longer than %d bytes", q, PATH_MAX - 1);
  for (const char *c = path; *c; c++)
    if ((unsigned char) *c < 0x20 || *c == 0x7f)
      return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "`%s`: a control character in the path", q);
  _cleanup_free_ char *out = xmalloc (len + 2);
  size_t n = 0;
  for (const char *s = path; *s;)
    {
      while (*s == '/')
        s++;
      size_t cl = strcspn (s, "/");
      if (cl == 0 || (cl == 1 && s[0] == '.'))
        {
          s += cl;
          continue;
        }
      if (cl == 2 && s[0] == '.' && s[1] == '.')
        return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "`%s`: a `..` component is not allowed", q);
      out[n++] = '/';
      memcpy (out + n, s, cl);
      n += cl;
      s += cl;
    }
  if (n == 0)
    out[n++] = '/';
  out[n] = '\0';
  *ret = steal_pointer (&out);
  return 0;
}

/* Whether PATH is P or below it (both normal). */
static bool
path_at_or_below (const char *path, const char *p)
{
  if (strcmp (p, "/") == 0)
    return true;
  size_t n = strlen (p);
  return strncmp (path, p, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int
check_dest (const char *dest, sbx_error **err)
{
  _cleanup_free_ char *q = printable_escaped (dest, 128);
  if (strcmp (dest, "/") == 0)
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "--mount: `%s`: the sandbox's root cannot be a mount", q);
  const char *own = sbx_spec_reserved_dest (dest);
  if (own)
    return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "--mount: `%s`: %s is the runtime's or sbx's own", q, own);
  return 0;
}

int
sbx_hostmount_parse (const char *spec, const char *cwd, sbx_hostmount *ret, sbx_error **err)
{
  _cleanup_free_ char *q = printable_escaped (spec, 256);
  const char *c1 = strchr (spec, ':');
  const char *c2 = c1 ? strchr (c1 + 1, ':') : NULL;
  if (c1 == NULL || c1 == spec || c1[1] == '\0' || c1[1] == ':' || (c2 && strchr (c2 + 1, ':')))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--mount: `%s` is not HOST:DEST[:ro|:rw]", q);
  bool readonly = true;
  if (c2 && strcmp (c2 + 1, "rw") == 0)
    readonly = false;
  else if (c2 && strcmp (c2 + 1, "ro") != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--mount: `%s`: the mode is ro or rw", q);
  _cleanup_free_ char *host = xstrndup (spec, (size_t) (c1 - spec));
  _cleanup_free_ char *dest = c2 ? xstrndup (c1 + 1, (size_t) (c2 - c1 - 1)) : xstrdup (c1 + 1);
  if (host[0] != '/')
    {
      _cleanup_free_ char *qh = printable_escaped (host, 128);
      if (cwd == NULL || cwd[0] != '/')
        return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "--mount: `%s` is not an absolute path", qh);
      char *abs = xasprintf ("%s/%s", cwd, host);
      free (host);
      host = abs;
    }
  if (dest[0] != '/')
    {
      _cleanup_free_ char *qd = printable_escaped (dest, 128);
      return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "--mount: `%s`: the path in the sandbox is not absolute", qd);
    }
  sbx_hostmount m = { .readonly = readonly };
  if (sbx_hostpath_normalize (host, &m.source, err) < 0 || sbx_hostpath_normalize (dest, &m.dest, err) < 0
      || check_dest (m.dest, err) < 0)
    {
      sbx_hostmount_clear (&m);
      return sbx_error_wrap (err, "--mount");
    }
  *ret = m;
  return 0;
}

char *
sbx_hostmount_format (const sbx_hostmount *m)
{
  return xasprintf ("%s:%s:%s", m->source, m->dest, m->readonly ? "ro" : "rw");
}

int
sbx_hostmounts_validate (char *const *list, sbx_error **err)
{
  size_t n = strv_len (list);
  if (n > SBX_MOUNTS_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--mount: at most %d host directories", SBX_MOUNTS_MAX);
  _cleanup_strv_ char **dests = NULL;
  for (size_t i = 0; i < n; i++)
    {
      sbx_hostmount m;
      if (sbx_hostmount_parse (list[i], NULL, &m, err) < 0)
        return -1;
      bool twice = false;
      for (size_t j = 0; dests && dests[j] && !twice; j++)
        twice = strcmp (dests[j], m.dest) == 0;
      if (twice)
        {
          _cleanup_free_ char *q = printable_escaped (m.dest, 128);
          sbx_hostmount_clear (&m);
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--mount: `%s` is the destination of two mounts", q);
        }
      strv_push (&dests, m.dest);
      sbx_hostmount_clear (&m);
    }
  return 0;
}

/* --- the policy ---------------------------------------------------------- */

static int refuse (sbx_error **err, const char *path, const char *fmt, ...) __attribute__ ((format (printf, 3, 4)));

static int
refuse (sbx_error **err, const char *path, const char *fmt, ...)
{
  char why[512];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (why, sizeof why, fmt, ap);
  va_end (ap);
  _cleanup_free_ char *q = printable_escaped (path, 256);
  return sbx_error_set (err, SBX_E_POLICY_REFUSED, 0, "--mount: `%s` %s", q, why);
}

/* PATH against a state directory P (normal): refused at, below or above. */
static int
state_check (const char *path, const char *p, const char *what, sbx_error **err)
{
  _cleanup_free_ char *qp = printable_escaped (p, 256);
  if (strcmp (path, p) == 0)
    return refuse (err, path, "is %s: it is never mounted", what);
  if (path_at_or_below (path, p))
    return refuse (err, path, "is inside %s (`%s`): it is never mounted", what, qp);
  if (path_at_or_below (p, path))
    return refuse (err, path, "holds %s (`%s`): it is never mounted", what, qp);
  return 0;
}

int
sbx_hostmount_policy (const char *path, const sbx_conf *conf, const char *root, const char *run, sbx_error **err)
{
  if (strcmp (path, "/") == 0)
    return refuse (err, path, "is the host's root: it is never mounted");
  for (size_t i = 0; deny_below[i]; i++)
    if (path_at_or_below (path, deny_below[i]))
      return refuse (err, path, "is %s%s: it is never mounted, nor anything inside it",
                     strcmp (path, deny_below[i]) == 0 ? "" : "inside ", deny_below[i]);
  for (size_t i = 0; deny_itself[i]; i++)
    if (strcmp (path, deny_itself[i]) == 0)
      return refuse (err, path, "is never mounted itself (below it, what is not sbx's or an engine's may be)");
  if (root && state_check (path, root, "sbx's store (ROOT)", err) < 0)
    return -1;
  if (run && state_check (path, run, "sbx's runtime directory (RUN)", err) < 0)
    return -1;
  for (size_t i = 0; state_dirs[i]; i++)
    if (state_check (path, state_dirs[i], "the state of sbx or of a container engine", err) < 0)
      return -1;
  for (size_t i = 0; conf && conf->mount_deny && conf->mount_deny[i]; i++)
    if (path_at_or_below (path, conf->mount_deny[i]))
      {
        _cleanup_free_ char *qd = printable_escaped (conf->mount_deny[i], 256);
        return refuse (err, path, "is denied by sbx.conf's mount_deny (`%s`)", qd);
      }
  if (conf && conf->mount_allow && conf->mount_allow[0])
    {
      for (size_t i = 0; conf->mount_allow[i]; i++)
        if (path_at_or_below (path, conf->mount_allow[i]))
          return 0;
      return refuse (err, path, "is not at or below a path of sbx.conf's mount_allow");
    }
  return 0;
}

/* --- the walk ------------------------------------------------------------ */

int
sbx_hostmount_open (const char *path, int *ret_fd, sbx_error **err)
{
  _cleanup_free_ char *q = printable_escaped (path, 256);
  _cleanup_close_ int fd = open ("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open /");
  for (const char *s = path; *s;)
    {
      while (*s == '/')
        s++;
      size_t cl = strcspn (s, "/");
      if (cl == 0)
        break;
      _cleanup_free_ char *name = xstrndup (s, cl);
      int nfd = openat (fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
      if (nfd < 0)
        {
          if (errno == ENOENT)
            return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "--mount: `%s`: `%.*s` does not exist", q,
                                  (int) (s + cl - path), path);
          return sbx_error_errno (err, errno, "--mount: `%s`: open `%.*s`", q, (int) (s + cl - path), path);
        }
      close (fd);
      fd = nfd;
      struct stat st;
      if (fstat (fd, &st) < 0)
        return sbx_error_errno (err, errno, "--mount: `%s`: stat", q);
      if (S_ISLNK (st.st_mode))
        return sbx_error_set (err, SBX_E_POLICY_REFUSED, 0,
                              "--mount: `%s`: `%.*s` is a symbolic link: a host directory's path has none", q,
                              (int) (s + cl - path), path);
      if (!S_ISDIR (st.st_mode))
        return sbx_error_set (err, SBX_E_PATH_INVALID, 0, "--mount: `%s`: `%.*s` is not a directory", q,
                              (int) (s + cl - path), path);
      s += cl;
    }
  *ret_fd = steal_fd (&fd);
  return 0;
}

/* --- checks of the fd ---------------------------------------------------- */

struct ident {
  dev_t dev;
  ino_t ino;
};

#define ANCESTORS_MAX 4096

/* FD and its parents up to `/`, by `..` (through the mounts as they are). */
static size_t
ancestors (int fd, struct ident *out, size_t max)
{
  size_t n = 0;
  _cleanup_close_ int cur = fcntl (fd, F_DUPFD_CLOEXEC, 3);
  while (cur >= 0 && n < max)
    {
      struct stat st;
      if (fstat (cur, &st) < 0)
        break;
      if (n > 0 && out[n - 1].dev == st.st_dev && out[n - 1].ino == st.st_ino)
        break; /* `/`: its `..` is itself */
      out[n++] = (struct ident){ st.st_dev, st.st_ino };
      int up = openat (cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
      close (cur);
      cur = up;
    }
  return n;
}

static bool
ident_in (const struct ident *list, size_t n, dev_t dev, ino_t ino)
{
  for (size_t i = 0; i < n; i++)
    if (list[i].dev == dev && list[i].ino == ino)
      return true;
  return false;
}

/* The refused directories recognised by inode: FD or one of its parents is
 * one refused with what is below it; FD is one refused itself; FD is a
 * parent of a state directory. Directories that do not exist are skipped. */
static int
inode_check (int fd, const char *path, const sbx_conf *conf, const char *root, const char *run, sbx_error **err)
{
  _cleanup_free_ struct ident *up = xmalloc (ANCESTORS_MAX * sizeof *up);
  size_t nup = ancestors (fd, up, ANCESTORS_MAX);
  if (nup == 0)
    return sbx_error_errno (err, errno, "--mount: stat `%s`", path);
  _cleanup_strv_ char **below = NULL, **above = NULL;
  for (size_t i = 0; deny_below[i]; i++)
    strv_push (&below, deny_below[i]);
  for (size_t i = 0; state_dirs[i]; i++)
    strv_push (&above, state_dirs[i]);
  if (root)
    strv_push (&above, root);
  if (run)
    strv_push (&above, run);
  for (size_t i = 0; conf && conf->mount_deny && conf->mount_deny[i]; i++)
    strv_push (&below, conf->mount_deny[i]);
  struct stat st;
  for (size_t i = 0; below[i]; i++)
    if (stat (below[i], &st) == 0 && ident_in (up, nup, st.st_dev, st.st_ino))
      return refuse (err, path, "is `%s` or inside it (the same directory, through another path)", below[i]);
  for (size_t i = 0; deny_itself[i]; i++)
    if (stat (deny_itself[i], &st) == 0 && ident_in (up, 1, st.st_dev, st.st_ino))
      return refuse (err, path, "is `%s` (the same directory, through another path)", deny_itself[i]);
  _cleanup_free_ struct ident *chain = xmalloc (ANCESTORS_MAX * sizeof *chain);
  for (size_t i = 0; above[i]; i++)
    {
      _cleanup_close_ int sfd = open (above[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
      if (sfd < 0)
        continue;
      size_t n = ancestors (sfd, chain, ANCESTORS_MAX);
      if (ident_in (chain, n, up[0].dev, up[0].ino))
        return refuse (err, path, "is or holds `%s`, sbx's or a container engine's state", above[i]);
    }
  return 0;
}

static bool
is_engine_socket (const char *name)
{
  for (size_t i = 0; engine_sockets[i]; i++)
    if (strcmp (name, engine_sockets[i]) == 0)
      return true;
  return false;
}

#define PLACE_DIR_ENTRIES_MAX 4096

/* Whether REL (components, `*` any one name) names an entry that is not a
 * directory below DIR, without following a symlink. */
static bool
place_has_socket (int dir, const char *rel)
{
  size_t cl = strcspn (rel, "/");
  if (rel[cl] == '\0')
    {
      struct stat st;
      return fstatat (dir, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR (st.st_mode);
    }
  const char *rest = rel + cl + 1;
  if (cl == 1 && rel[0] == '*')
    {
      int rfd = openat (dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (rfd < 0)
        return false;
      _cleanup_closedir_ DIR *d = fdopendir (rfd);
      if (d == NULL)
        {
          close (rfd);
          return false;
        }
      struct dirent *de;
      for (size_t n = 0; (de = readdir (d)) && n < PLACE_DIR_ENTRIES_MAX; n++)
        {
          if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
            continue;
          _cleanup_close_ int sub = openat (dirfd (d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (sub >= 0 && place_has_socket (sub, rest))
            return true;
        }
      return false;
    }
  _cleanup_free_ char *name = xstrndup (rel, cl);
  _cleanup_close_ int sub = openat (dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return sub >= 0 && place_has_socket (sub, rest);
}

struct scan {
  dev_t dev;
  size_t entries;
  char found[PATH_MAX];
};

/* An entry of an engine's socket's name within DEPTH levels of DIR (owned), not
 * crossing into other filesystems (a bind that is not recursive does not
 * show them). Stops at SBX_HOSTMOUNT_SCAN_ENTRIES entries. */
static bool
scan_dir (int dir, const char *rel, int depth, struct scan *sc)
{
  _cleanup_closedir_ DIR *d = fdopendir (dir);
  if (d == NULL)
    {
      close (dir);
      return false;
    }
  struct dirent *de;
  while ((de = readdir (d)) && sc->entries < SBX_HOSTMOUNT_SCAN_ENTRIES)
    {
      sc->entries++;
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      bool maybe_dir = de->d_type == DT_DIR || de->d_type == DT_UNKNOWN;
      struct stat st;
      if (is_engine_socket (de->d_name)
          && (de->d_type != DT_UNKNOWN
                  ? de->d_type != DT_DIR
                  : fstatat (dirfd (d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR (st.st_mode)))
        {
          snprintf (sc->found, sizeof sc->found, "%s%s", rel, de->d_name);
          return true;
        }
      if (!maybe_dir || depth <= 1 || fstatat (dirfd (d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0
          || !S_ISDIR (st.st_mode) || st.st_dev != sc->dev)
        continue;
      int sub = openat (dirfd (d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0)
        continue;
      char subrel[PATH_MAX];
      if ((size_t) snprintf (subrel, sizeof subrel, "%s%s/", rel, de->d_name) >= sizeof subrel)
        {
          close (sub);
          continue;
        }
      if (scan_dir (sub, subrel, depth - 1, sc))
        return true;
    }
  return false;
}

static int
socket_check (int fd, const char *path, sbx_error **err)
{
  for (size_t i = 0; engine_socket_places[i]; i++)
    if (place_has_socket (fd, engine_socket_places[i]))
      return refuse (err, path, "holds a container engine's socket (`%s`): it is never mounted",
                     engine_socket_places[i]);
  struct stat st;
  if (fstat (fd, &st) < 0)
    return sbx_error_errno (err, errno, "--mount: stat `%s`", path);
  struct scan sc = { .dev = st.st_dev };
  int dir = openat (fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return sbx_error_errno (err, errno, "--mount: read `%s`", path);
  if (scan_dir (dir, "", SBX_HOSTMOUNT_SCAN_DEPTH, &sc))
    {
      _cleanup_free_ char *qf = printable_escaped (sc.found, 256);
      return refuse (err, path, "holds a container engine's socket (`%s`): it is never mounted", qf);
    }
  return 0;
}

/* The real path of FD, as the kernel names it. */
static int
fd_path (int fd, char **ret, sbx_error **err)
{
  char proc[64], buf[PATH_MAX + 1];
  snprintf (proc, sizeof proc, "/proc/self/fd/%d", fd);
  ssize_t n = readlink (proc, buf, sizeof buf - 1);
  if (n < 0)
    return sbx_error_errno (err, errno, "--mount: readlink `%s`", proc);
  buf[n] = '\0';
  if (buf[0] != '/' || (size_t) n >= PATH_MAX)
    return sbx_error_set (err, SBX_E_POLICY_REFUSED, 0, "--mount: the directory is not reachable from `/`");
  _cleanup_error_ sbx_error *e = NULL;
  if (sbx_hostpath_normalize (buf, ret, &e) < 0)
    return sbx_error_set (err, SBX_E_POLICY_REFUSED, 0, "--mount: the directory's real path: %s", e->msg);
  return 0;
}

/* The store's ROOT and RUN as real paths (the policy compares paths). */
static void
store_real (const sbx_store *st, char **root, char **run)
{
  *root = st ? realpath (st->root, NULL) : NULL;
  *run = st ? realpath (st->run_root, NULL) : NULL;
  if (st && *root == NULL)
    *root = xstrdup (st->root);
  if (st && *run == NULL)
    *run = xstrdup (st->run_root);
}

int
sbx_hostmount_check (int fd, const sbx_conf *conf, const sbx_store *st, sbx_error **err)
{
  _cleanup_free_ char *real = NULL, *root = NULL, *run = NULL;
  store_real (st, &root, &run);
  if (fd_path (fd, &real, err) < 0 || sbx_hostmount_policy (real, conf, root, run, err) < 0
      || inode_check (fd, real, conf, root, run, err) < 0 || socket_check (fd, real, err) < 0)
    return -1;
  return 0;
}

static int
open_checked (const char *spec, const sbx_conf *conf, const sbx_store *st, sbx_hostmount *m, int *ret_fd,
              sbx_error **err)
{
  if (sbx_hostmount_parse (spec, NULL, m, err) < 0)
    return -1;
  /* The path as written first, so that a refused one is refused whether
   * it exists or not; then what was opened, which is what counts. */
  _cleanup_free_ char *root = NULL, *run = NULL;
  store_real (st, &root, &run);
  _cleanup_close_ int fd = -1;
  if (sbx_hostmount_policy (m->source, conf, root, run, err) < 0 || sbx_hostmount_open (m->source, &fd, err) < 0
      || sbx_hostmount_check (fd, conf, st, err) < 0)
    {
      sbx_hostmount_clear (m);
      return -1;
    }
  *ret_fd = steal_fd (&fd);
  return 0;
}

int
sbx_hostmounts_check (char *const *list, const sbx_conf *conf, const sbx_store *st, sbx_error **err)
{
  for (size_t i = 0; list && list[i]; i++)
    {
      sbx_hostmount m;
      int fd;
      if (open_checked (list[i], conf, st, &m, &fd, err) < 0)
        return -1;
      close (fd);
      sbx_hostmount_clear (&m);
    }
  return 0;
}

/* --- the binds ----------------------------------------------------------- */

/* FD's directory, not what is mounted below it, as a new mount on TARGET:
 * read-only when READONLY, nosuid and nodev always, private. */
static int
bind_fd (int fd, const char *target, bool readonly, sbx_error **err)
{
  _cleanup_close_ int tree = open_tree (fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
  if (tree < 0)
    return sbx_error_errno (err, errno, "open_tree");
  struct mount_attr attr = {
    .attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (readonly ? MOUNT_ATTR_RDONLY : 0),
    .propagation = MS_PRIVATE,
  };
  if (mount_setattr (tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
    return sbx_error_errno (err, errno, "mount_setattr");
  if (mkdir (target, 0700) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", target);
  if (move_mount (tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
    return sbx_error_errno (err, errno, "move_mount on `%s`", target);
  return 0;
}

int
sbx_hostmounts_bind (char *const *list, const sbx_conf *conf, const sbx_store *st, const char *dir, sbx_spec_bind **ret,
                     size_t *ret_n, sbx_error **err)
{
  size_t n = strv_len (list);
  *ret = NULL;
  *ret_n = 0;
  if (n == 0)
    return 0;
  _cleanup_free_ char *base = xasprintf ("%s/mounts", dir);
  if (mkdir (base, 0700) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", base);
  sbx_spec_bind *binds = xmalloc0 (n * sizeof *binds);
  size_t done = 0;
  for (; done < n; done++)
    {
      sbx_hostmount m;
      int fd;
      if (open_checked (list[done], conf, st, &m, &fd, err) < 0)
        break;
      char *target = xasprintf ("%s/%zu", base, done);
      int r = bind_fd (fd, target, m.readonly, err);
      close (fd);
      if (r < 0)
        {
          _cleanup_free_ char *q = printable_escaped (m.source, 256);
          free (target);
          sbx_hostmount_clear (&m);
          sbx_error_wrap (err, "--mount: bind `%s`", q);
          break;
        }
      binds[done] = (sbx_spec_bind){ .source = target, .destination = steal_pointer (&m.dest), .readonly = m.readonly };
      sbx_hostmount_clear (&m);
    }
  if (done < n)
    {
      /* The one that failed may have left its directory: n covers it. */
      sbx_hostmounts_unbind (dir, done + 1);
      sbx_spec_binds_free (binds, done);
      return -1;
    }
  *ret = binds;
  *ret_n = n;
  return 0;
}

int
sbx_hostmounts_unbind (const char *dir, size_t n)
{
  int ret = 0;
  for (size_t i = 0; i < n; i++)
    {
      _cleanup_free_ char *target = xasprintf ("%s/mounts/%zu", dir, i);
      if (umount2 (target, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
        ret = -1;
      if (rmdir (target) < 0 && errno != ENOENT)
        ret = -1;
    }
  _cleanup_free_ char *base = xasprintf ("%s/mounts", dir);
  if (rmdir (base) < 0 && errno != ENOENT)
    ret = -1;
  return ret;
}
