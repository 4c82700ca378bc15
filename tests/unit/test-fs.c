/* fs.c's path resolution, on a temporary tree, without root: what the file
 * API resolves inside a sandbox's root (openat2 RESOLVE_IN_ROOT), what it
 * refuses, and that nothing outside the root is read or written through a
 * symlink, `..`, a trailing slash or a long path. The tree:
 *
 *   BASE/outside/secret          "host secret": must never be read or changed
 *   BASE/root/                    the sandbox's root (ROOT, an fd)
 *     etc/hello                   "hello"
 *     outside/secret              "inside": where escapes land, clamped
 *     abs-esc -> BASE/outside/secret   an absolute link: resolves in ROOT
 *     rel-esc -> ../../../../outside/secret   `..` clamps at ROOT
 *     dir-esc -> ../../..         a directory link that climbs
 *     dangling -> /nowhere
 *     loop-a -> loop-b, loop-b -> loop-a
 *     to-etc -> /etc
 */
#include "config.h"
#include "fs.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

static char *base, *rootdir, *host_secret;
static int root = -1;

static const char *
errmsg (const sbx_error *e)
{
  return e ? e->msg : "ok";
}

static void
put (const char *rel, const char *content)
{
  _cleanup_free_ char *p = xasprintf ("%s/%s", base, rel);
  if (write_file_atomic (p, content, strlen (content), 0644, NULL) < 0)
    abort ();
}

static void
link_at (const char *target, const char *rel)
{
  _cleanup_free_ char *p = xasprintf ("%s/%s", base, rel);
  if (symlink (target, p) < 0)
    abort ();
}

static void
dir_at (const char *rel)
{
  _cleanup_free_ char *p = xasprintf ("%s/%s", base, rel);
  if (mkdir (p, 0755) < 0)
    abort ();
}

/* The content of regular file PATH read through sbx_fs_open_read, or NULL
 * with *ERR set. */
static char *
read_in_root (const char *path, sbx_error **err)
{
  struct stat st;
  _cleanup_close_ int fd = -1;
  if (sbx_fs_open_read (root, path, &st, &fd, err) < 0)
    return NULL;
  char buf[256];
  ssize_t n = read (fd, buf, sizeof buf - 1);
  if (n < 0)
    return NULL;
  return xstrndup (buf, (size_t) n);
}

/* What the last read_fails got: its error's message, or what it read. */
static char got[512];

/* Whether reading PATH fails with CODE. */
static bool
read_fails (const char *path, sbx_code code)
{
  sbx_error *err = NULL;
  _cleanup_free_ char *s = read_in_root (path, &err);
  bool r = s == NULL && err && err->code == code;
  snprintf (got, sizeof got, "%s", err ? err->msg : s ? s : "no error");
  sbx_error_free (err);
  return r;
}

static bool
host_secret_intact (void)
{
  _cleanup_free_ char *s = NULL;
  size_t n;
  return read_file (host_secret, 4096, &s, &n, NULL) == 0 && n == 11 && memcmp (s, "host secret", 11) == 0;
}

static bool
host_has (const char *rel)
{
  _cleanup_free_ char *p = xasprintf ("%s/%s", base, rel);
  struct stat st;
  return lstat (p, &st) == 0;
}

static bool
host_has_in_root (const char *path)
{
  _cleanup_free_ char *rel = xasprintf ("root%s", path);
  return host_has (rel);
}

static void
make_tree (void)
{
  dir_at ("outside");
  put ("outside/secret", "host secret");
  dir_at ("root");
  dir_at ("root/etc");
  put ("root/etc/hello", "hello");
  dir_at ("root/outside");
  put ("root/outside/secret", "inside");
  host_secret = xasprintf ("%s/outside/secret", base);
  link_at (host_secret, "root/abs-esc");
  link_at ("../../../../outside/secret", "root/rel-esc");
  link_at ("../../..", "root/dir-esc");
  link_at ("/nowhere", "root/dangling");
  link_at ("loop-b", "root/loop-a");
  link_at ("loop-a", "root/loop-b");
  link_at ("/etc", "root/to-etc");
  rootdir = xasprintf ("%s/root", base);
  root = open (rootdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0)
    abort ();
}

static void
test_path_check (void)
{
  static const struct {
    const char *path;
    bool ok;
  } cases[] = {
    { "/", true },          { "/etc/hello", true }, { "//etc//hello/", true },
    { "/a/..b/c..", true }, { "/./etc", true },     { "etc/hello", false },
    { "", false },          { "/..", false },       { "/etc/../x", false },
    { "/etc/..", false },   { "/a//../b", false },
  };
  int bad = 0;
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      sbx_error *err = NULL;
      int r = sbx_fs_path_check (cases[i].path, &err);
      bool ok = r == 0 && err == NULL;
      bool refused = r < 0 && err && err->code == SBX_E_PATH_INVALID;
      if (cases[i].ok ? !ok : !refused)
        {
          printf ("# `%s`: %s\n", cases[i].path, errmsg (err));
          bad++;
        }
      sbx_error_free (err);
    }
  tap_ok (bad == 0, "path check: absolute paths pass, relative ones and `..` components are PATH_INVALID");
  sbx_error *err = NULL;
  tap_ok (sbx_fs_path_check (NULL, &err) < 0 && err->code == SBX_E_PATH_INVALID, "path check: NULL is PATH_INVALID");
  sbx_error_free (err);
}

static void
test_reads (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_free_ char *s = read_in_root ("/etc/hello", &err);
  tap_ok (s && strcmp (s, "hello") == 0, "read /etc/hello (%s)", errmsg (err));
  free (steal_pointer (&s));
  s = read_in_root ("//etc/./hello", &err);
  tap_ok (s && strcmp (s, "hello") == 0, "read //etc/./hello: doubled slashes and `.` (%s)", errmsg (err));
  free (steal_pointer (&s));
  s = read_in_root ("/to-etc/hello", &err);
  tap_ok (s && strcmp (s, "hello") == 0, "an absolute directory link (/to-etc -> /etc) resolves in the root (%s)",
          errmsg (err));
}

static void
test_escapes (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_free_ char *s = NULL;

  /* The absolute link names BASE/outside/secret, which in the root does not
   * exist: not found, never the host's file. */
  tap_ok (read_fails ("/abs-esc", SBX_E_NOT_FOUND), "an absolute link to a host path resolves in the root: %s", got);
  s = read_in_root ("/rel-esc", &err);
  tap_ok (s && strcmp (s, "inside") == 0, "a relative link that climbs out clamps at the root: got `%s` (%s)",
          s ? s : "", errmsg (err));
  free (steal_pointer (&s));
  s = read_in_root ("/dir-esc/outside/secret", &err);
  tap_ok (s && strcmp (s, "inside") == 0, "a directory link that climbs out clamps at the root: got `%s` (%s)",
          s ? s : "", errmsg (err));
  tap_ok (read_fails ("/etc/../outside/secret", SBX_E_PATH_INVALID), "`..` in a path is refused: %s", got);
  tap_ok (read_fails ("/loop-a", SBX_E_PATH_INVALID), "a symlink loop is PATH_INVALID: %s", got);
  tap_ok (read_fails ("/dangling", SBX_E_NOT_FOUND), "a dangling link reads as not found: %s", got);
  tap_ok (read_fails ("/etc", SBX_E_PATH_INVALID), "a directory is not read as a file: %s", got);

  /* The O_NOFOLLOW open of a final symlink gives the link, not its target. */
  _cleanup_close_ int fd = -1;
  int r = sbx_fs_open (root, "/rel-esc", O_PATH, false, &fd, &err);
  struct stat st;
  tap_ok (r == 0 && fstat (fd, &st) == 0 && S_ISLNK (st.st_mode), "sbx_fs_open without follow holds the link (%s)",
          errmsg (err));
  tap_ok (host_secret_intact (), "the host's secret is untouched");
}

static void
test_stat_and_list (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  sbx_fs_entry e = { 0 };
  int r = sbx_fs_stat (root, "/dangling", &e, &err);
  tap_ok (r == 0 && strcmp (e.type, "symlink") == 0 && e.target && strcmp (e.target, "/nowhere") == 0,
          "stat describes a dangling link, with its target, without following it (%s)", errmsg (err));
  sbx_fs_entry_clear (&e);
  r = sbx_fs_stat (root, "/abs-esc", &e, &err);
  tap_ok (r == 0 && strcmp (e.type, "symlink") == 0 && strcmp (e.target, host_secret) == 0
              && e.size == strlen (host_secret),
          "stat of an escaping link describes the link, not the host file (%s)", errmsg (err));
  sbx_fs_entry_clear (&e);
  r = sbx_fs_stat (root, "/", &e, &err);
  tap_ok (r == 0 && strcmp (e.type, "dir") == 0 && strcmp (e.name, "/") == 0, "stat / is the root (%s)", errmsg (err));
  sbx_fs_entry_clear (&e);
  r = sbx_fs_stat (root, "/etc/", &e, &err);
  tap_ok (r == 0 && strcmp (e.type, "dir") == 0 && strcmp (e.name, "etc") == 0,
          "stat /etc/ (a trailing slash) is the directory (%s)", errmsg (err));
  sbx_fs_entry_clear (&e);

  sbx_fs_entry *v = NULL;
  size_t n = 0;
  _cleanup_free_ char *next = NULL;
  r = sbx_fs_list (root, "/", NULL, 100, &v, &n, &next, &err);
  static const char *const want[] = { "abs-esc", "dangling", "dir-esc", "etc",   "loop-a",
                                      "loop-b",  "outside",  "rel-esc", "to-etc" };
  bool same = r == 0 && n == ARRAY_SIZE (want) && next == NULL;
  for (size_t i = 0; same && i < n; i++)
    same = strcmp (v[i].name, want[i]) == 0;
  tap_ok (same, "ls / lists the root's entries, sorted (%zu, %s)", n, errmsg (err));
  sbx_fs_entries_free (v, n);
  v = NULL;
  r = sbx_fs_list (root, "/", "dir-esc", 3, &v, &n, &next, &err);
  tap_ok (r == 0 && n == 3 && strcmp (v[0].name, "etc") == 0 && strcmp (v[2].name, "loop-b") == 0 && next
              && strcmp (next, "loop-b") == 0,
          "ls / after the cursor dir-esc, 3 at a time: etc..loop-b, next loop-b (%s)", errmsg (err));
  sbx_fs_entries_free (v, n);
  v = NULL;
  free (steal_pointer (&next));
  r = sbx_fs_list (root, "/dir-esc", NULL, 100, &v, &n, &next, &err);
  tap_ok (r == 0 && n == ARRAY_SIZE (want), "ls through a climbing directory link lists the root itself (%zu, %s)", n,
          errmsg (err));
  sbx_fs_entries_free (v, n);
  v = NULL;
  r = sbx_fs_list (root, "/etc/hello", NULL, 100, &v, &n, &next, &err);
  tap_ok (r == 0 && n == 1 && strcmp (v[0].path, "/etc/hello") == 0 && v[0].size == 5,
          "ls of a file lists the file (%s)", errmsg (err));
  sbx_fs_entries_free (v, n);
}

/* Writes CONTENT at PATH through the atomic writer. */
static int
write_in_root (const char *path, const char *content, sbx_error **err)
{
  sbx_fs_writer w;
  if (sbx_fs_write_begin (root, path, 0644, true, &w, err) < 0)
    return -1;
  if (write_all (w.fd, content, strlen (content)) < 0)
    {
      sbx_fs_write_abort (&w);
      return sbx_error_errno (err, errno, "write");
    }
  return sbx_fs_write_commit (&w, err);
}

static void
test_writes (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_free_ char *s = NULL;

  int r = write_in_root ("/etc/hello", "replaced", &err);
  s = read_in_root ("/etc/hello", NULL);
  tap_ok (r == 0 && s && strcmp (s, "replaced") == 0, "write replaces /etc/hello (%s)", errmsg (err));
  free (steal_pointer (&s));
  /* A final symlink is replaced, not followed: the host file stays. The
   * file that replaces it is new, and a new file is root's (fs.h). */
  struct stat st;
  _cleanup_free_ char *p = xasprintf ("%s/abs-esc", rootdir);
  if (geteuid () != 0)
    tap_skip ("write over an escaping link: a new file is root-owned, the test needs root");
  else
    {
      r = write_in_root ("/abs-esc", "evil", &err);
      tap_ok (r == 0 && lstat (p, &st) == 0 && S_ISREG (st.st_mode) && host_secret_intact (),
              "write over an escaping link replaces the link with a file; the host's file is intact (%s)",
              errmsg (err));
    }
  r = write_in_root ("/dir-esc/outside/secret", "changed", &err);
  s = read_in_root ("/outside/secret", NULL);
  tap_ok (r == 0 && s && strcmp (s, "changed") == 0 && host_secret_intact (),
          "write through a climbing directory link lands in the root (%s)", errmsg (err));
  free (steal_pointer (&s));
  sbx_error_free (steal_pointer (&err));
  r = write_in_root ("/newdir/", "x", &err);
  tap_ok (r < 0 && err->code == SBX_E_NOT_FOUND && !host_has ("root/newdir"),
          "write to a missing DIR/ is NOT_FOUND and makes nothing (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  r = write_in_root ("/dangling/", "x", &err);
  tap_ok (r < 0 && err->code == SBX_E_PATH_INVALID && host_has ("root/dangling") && !host_has ("root/nowhere"),
          "write to a dangling link with a trailing slash is PATH_INVALID and follows nothing (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  r = write_in_root ("/etc", "x", &err);
  tap_ok (r < 0 && err->code == SBX_E_PATH_INVALID, "write over a directory is PATH_INVALID (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  r = write_in_root ("/", "x", &err);
  tap_ok (r < 0 && err->code == SBX_E_PATH_INVALID, "write to / is PATH_INVALID (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  r = write_in_root ("/etc/hello/x", "x", &err);
  tap_ok (r < 0 && err->code == SBX_E_PATH_INVALID, "a file used as a directory is PATH_INVALID (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));

  /* No temporary file is left anywhere. */
  _cleanup_free_ char *cmd = xasprintf ("find '%s' -name '.sbx-write-*' | grep -q .", base);
  tap_ok (system (cmd) != 0, "no .sbx-write-* file is left");
}

static void
test_dirs (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  /* -p through a link to a directory of the root: made there. */
  int r = sbx_fs_mkdir (root, "/to-etc/a/b", true, &err);
  tap_ok (r == 0 && host_has ("root/etc/a/b"), "mkdir -p through /to-etc -> /etc makes /etc/a/b (%s)", errmsg (err));
  /* -p through an absolute link to a host path, dangling in the root:
   * refused like mkdir -p(1), and nothing made on the host. */
  _cleanup_free_ char *target = xasprintf ("%s/outside/made", base);
  r = sbx_fs_symlink (root, "/to-host", target, &err);
  tap_ok (r == 0, "symlink /to-host -> a host path (%s)", errmsg (err));
  r = sbx_fs_mkdir (root, "/to-host/a/b", true, &err);
  tap_ok (r < 0 && err->code == SBX_E_NOT_FOUND && !host_has ("outside/made"),
          "mkdir -p through a link to a host path fails in the root, makes nothing on the host (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  r = sbx_fs_mkdir (root, "/etc", false, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT, "mkdir of an existing directory: INVALID_ARGUMENT (%s)",
          errmsg (err));
  sbx_error_free (steal_pointer (&err));
  r = sbx_fs_mkdir (root, "/etc/hello/sub", true, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT && !host_has ("root/etc/hello/sub"),
          "mkdir -p under a file: INVALID_ARGUMENT, the file exists (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  r = sbx_fs_rm (root, "/rel-esc", &err);
  tap_ok (r == 0 && !host_has ("root/rel-esc") && host_secret_intact () && host_has ("root/outside/secret"),
          "rm of a link removes the link, not its target (%s)", errmsg (err));
  r = sbx_fs_rmdir (root, "/dir-esc", true, &err);
  tap_ok (host_has ("root/etc/hello") && host_has ("root/outside/secret") && host_secret_intact (),
          "rmdir -r of a link that climbs out removes nothing it points at (%d, %s)", r, errmsg (err));
  sbx_error_free (steal_pointer (&err));
}

static void
test_long_paths (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  /* 120 levels of `d`: 241 bytes, well inside PATH_MAX, deeper than most. */
  char deep[512] = "";
  for (int i = 0; i < 120; i++)
    strcat (deep, "/d");
  int r = sbx_fs_mkdir (root, deep, true, &err);
  _cleanup_free_ char *leaf = xasprintf ("%s/", deep);
  sbx_fs_entry e = { 0 };
  if (r == 0)
    r = sbx_fs_stat (root, leaf, &e, &err);
  tap_ok (r == 0 && strcmp (e.type, "dir") == 0 && strcmp (e.name, "d") == 0,
          "a directory 120 levels deep is made and found again (%s)", errmsg (err));
  sbx_fs_entry_clear (&e);

  char name[NAME_MAX + 3];
  name[0] = '/';
  memset (name + 1, 'n', NAME_MAX + 1);
  name[NAME_MAX + 2] = '\0';
  sbx_error_free (steal_pointer (&err));
  r = sbx_fs_mkdir (root, name, false, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_PATH_INVALID, "a name of NAME_MAX + 1 bytes is PATH_INVALID (%.40s...)",
          errmsg (err));
  sbx_error_free (steal_pointer (&err));
  name[NAME_MAX + 1] = '\0';
  r = sbx_fs_mkdir (root, name, false, &err);
  tap_ok (r == 0 && host_has_in_root (name), "a name of NAME_MAX bytes is made (%s)", errmsg (err));

  _cleanup_free_ char *huge = xmalloc0 (PATH_MAX + 2);
  for (size_t i = 0; i < PATH_MAX; i += 2)
    memcpy (huge + i, "/x", 2);
  huge[PATH_MAX] = '\0';
  sbx_error_free (steal_pointer (&err));
  _cleanup_close_ int fd = -1;
  r = sbx_fs_open (root, huge, O_PATH, true, &fd, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_PATH_INVALID, "a path of PATH_MAX bytes is PATH_INVALID (%s)",
          errmsg (err));
}

/* In a child in a mount namespace of its own: a tmpfs on ROOT/mnt with a
 * file in it. Exits 0 when reading /mnt/f through ROOT is PATH_INVALID (a
 * mount crossed: RESOLVE_NO_XDEV), 2 when it reads, 3 when it fails
 * otherwise, 4 when the mount could not be made. */
static void
xdev_child (void)
{
  _cleanup_free_ char *mnt = xasprintf ("%s/mnt", rootdir), *f = xasprintf ("%s/mnt/f", rootdir);
  if (unshare (CLONE_NEWNS) < 0 || mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || mkdir (mnt, 0755) < 0
      || mount ("tmpfs", mnt, "tmpfs", 0, "size=64k") < 0 || write_file_atomic (f, "mounted", 7, 0644, NULL) < 0)
    _exit (4);
  /* ROOT again: the old fd is of the mount in the parent's namespace. */
  close (root);
  root = open (rootdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  sbx_error *err = NULL;
  _cleanup_free_ char *s = read_in_root ("/mnt/f", &err);
  if (s)
    _exit (2);
  printf ("# reading /mnt/f across a mount: %s\n", errmsg (err));
  fflush (stdout);
  _exit (err && err->code == SBX_E_PATH_INVALID ? 0 : 3);
}

static void
test_xdev (void)
{
  if (geteuid () != 0)
    {
      tap_skip ("a mount inside the root is not crossed: mounting needs root");
      return;
    }
  pid_t pid = fork ();
  if (pid < 0)
    abort ();
  if (pid == 0)
    xdev_child ();
  int status = 0;
  waitpid (pid, &status, 0);
  _cleanup_free_ char *mnt = xasprintf ("%s/mnt", rootdir);
  rmdir (mnt);
  tap_ok (WIFEXITED (status) && WEXITSTATUS (status) == 0,
          "a mount inside the root is not crossed: PATH_INVALID (status %#x)", status);
}

int
main (void)
{
  struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT };
  long probe = syscall (SYS_openat2, AT_FDCWD, "/", &how, sizeof how);
  if (probe < 0 && errno == ENOSYS)
    tap_skip_all ("the kernel has no openat2 (Linux 5.6)");
  if (probe >= 0)
    close ((int) probe);
  char tmpl[] = "/tmp/sbx-test-fs-XXXXXX";
  if (mkdtemp (tmpl) == NULL)
    abort ();
  base = tmpl;
  make_tree ();

  tap_plan (43);
  test_path_check ();
  test_reads ();
  test_escapes ();
  test_stat_and_list ();
  test_writes ();
  test_dirs ();
  test_long_paths ();
  test_xdev ();

  close (root);
  rm_rf (base, NULL);
  free (rootdir);
  free (host_secret);
  return tap_done ();
}
