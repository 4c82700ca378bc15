/* Unit tests of host directories (src/lib/hostmount.c): the --mount
 * grammar and its normal form, the list's checks, the policy as a pure
 * verdict (path + sbx.conf + the store's paths), the walk that refuses a
 * symlink anywhere (naming it), the checks on the opened fd (a refused
 * directory by inode, a container engine's socket in the tree, at a known
 * place beyond the scan's depth, the scan's depth), and a race: a component
 * swapped for a symlink thousands of times while the walk runs never yields
 * the symlink's target. The binds themselves need root and runtimes:
 * tests/integration/mount.bats. */
#include "config.h"
#include "hostmount.h"
#include "sbx-limits.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/sbx-test-hostmount.XXXXXX";

static void
cleanup_tmpdir (void)
{
  rm_rf (tmpdir, NULL);
}

static const char *
errmsg (const sbx_error *e)
{
  return e && e->msg ? e->msg : "(no error)";
}

static char *
tpath (const char *rel)
{
  return xasprintf ("%s/%s", tmpdir, rel);
}

static void
mkdirs (const char *rel)
{
  _cleanup_free_ char *p = tpath (rel);
  for (char *s = p + strlen (tmpdir) + 1; *s; s++)
    if (*s == '/')
      {
        *s = '\0';
        mkdir (p, 0755);
        *s = '/';
      }
  mkdir (p, 0755);
}

/* A listening unix socket at REL (the file stays after close). */
static void
make_socket (const char *rel)
{
  _cleanup_free_ char *p = tpath (rel);
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  if (strlen (p) >= sizeof sa.sun_path)
    abort ();
  strcpy (sa.sun_path, p);
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind (fd, (struct sockaddr *) &sa, sizeof sa) < 0)
    abort ();
  close (fd);
}

/* --- the grammar ---------------------------------------------------------- */

static void
test_parse (void)
{
  static const struct {
    const char *spec, *cwd, *source, *dest;
    bool ro;
  } good[] = {
    { "/srv/data:/data", NULL, "/srv/data", "/data", true },
    { "/srv/data:/data:ro", NULL, "/srv/data", "/data", true },
    { "/srv/data:/data:rw", NULL, "/srv/data", "/data", false },
    { "/srv//data/./:/mnt/x/:rw", NULL, "/srv/data", "/mnt/x", false },
    { "data:/data", "/home/alice/proj", "/home/alice/proj/data", "/data", true },
    { ".:/workspace:rw", "/home/alice/proj", "/home/alice/proj", "/workspace", false },
    { "./a/b:/w", "/", "/a/b", "/w", true },
  };
  for (size_t i = 0; i < ARRAY_SIZE (good); i++)
    {
      _cleanup_error_ sbx_error *err = NULL;
      sbx_hostmount m = { 0 };
      int r = sbx_hostmount_parse (good[i].spec, good[i].cwd, &m, &err);
      tap_ok (r == 0 && strcmp (m.source, good[i].source) == 0 && strcmp (m.dest, good[i].dest) == 0
                  && m.readonly == good[i].ro,
              "`%s` (cwd %s): %s on %s, %s (%s)", good[i].spec, good[i].cwd ? good[i].cwd : "-", good[i].source,
              good[i].dest, good[i].ro ? "ro" : "rw", errmsg (err));
      if (r == 0)
        {
          _cleanup_free_ char *f = sbx_hostmount_format (&m);
          _cleanup_free_ char *want = xasprintf ("%s:%s:%s", good[i].source, good[i].dest, good[i].ro ? "ro" : "rw");
          sbx_hostmount again = { 0 };
          tap_ok (strcmp (f, want) == 0 && sbx_hostmount_parse (f, NULL, &again, NULL) == 0
                      && strcmp (again.source, m.source) == 0 && again.readonly == m.readonly,
                  "its record form `%s` parses to itself", f);
          sbx_hostmount_clear (&again);
        }
      sbx_hostmount_clear (&m);
    }
  static const struct {
    const char *spec, *cwd;
    sbx_code code;
    const char *msg;
  } bad[] = {
    { "/srv/data", NULL, SBX_E_INVALID_ARGUMENT, "is not HOST:DEST[:ro|:rw]" },
    { ":/data", NULL, SBX_E_INVALID_ARGUMENT, "is not HOST:DEST" },
    { "/srv:", NULL, SBX_E_INVALID_ARGUMENT, "is not HOST:DEST" },
    { "/srv::ro", NULL, SBX_E_INVALID_ARGUMENT, "is not HOST:DEST" },
    { "/srv:/d:ro:rw", NULL, SBX_E_INVALID_ARGUMENT, "is not HOST:DEST" },
    { "/srv:/d:RW", NULL, SBX_E_INVALID_ARGUMENT, "the mode is ro or rw" },
    { "/srv:/d:", NULL, SBX_E_INVALID_ARGUMENT, "the mode is ro or rw" },
    { "/srv/../etc:/d", NULL, SBX_E_PATH_INVALID, "a `..` component is not allowed" },
    { "../x:/d", "/home/a", SBX_E_PATH_INVALID, "a `..` component is not allowed" },
    { "data:/d", NULL, SBX_E_PATH_INVALID, "is not an absolute path" },
    { "/srv:d", NULL, SBX_E_PATH_INVALID, "the path in the sandbox is not absolute" },
    { "/srv:/a/../b", NULL, SBX_E_PATH_INVALID, "a `..` component is not allowed" },
    { "/srv:/", NULL, SBX_E_PATH_INVALID, "the sandbox's root cannot be a mount" },
    { "/srv:/./", NULL, SBX_E_PATH_INVALID, "the sandbox's root cannot be a mount" },
    { "/srv:/proc/x", NULL, SBX_E_PATH_INVALID, "/proc is the runtime's or sbx's own" },
    { "/srv:/sys", NULL, SBX_E_PATH_INVALID, "/sys is the runtime's" },
    { "/srv:/dev/shm", NULL, SBX_E_PATH_INVALID, "/dev is the runtime's" },
    { "/srv:/.sbx/init", NULL, SBX_E_PATH_INVALID, "/.sbx is the runtime's" },
    { "/s\x01rv:/d", NULL, SBX_E_PATH_INVALID, "a control character" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      _cleanup_error_ sbx_error *err = NULL;
      sbx_hostmount m = { 0 };
      _cleanup_free_ char *q = printable_escaped (bad[i].spec, 64);
      int r = sbx_hostmount_parse (bad[i].spec, bad[i].cwd, &m, &err);
      tap_ok (r < 0 && m.source == NULL && err && err->code == bad[i].code && strstr (err->msg, bad[i].msg)
                  && strncmp (err->msg, "--mount: ", 9) == 0,
              "`%s`: %s, %s (%s)", q, sbx_code_name (bad[i].code), bad[i].msg, errmsg (err));
    }
  /* The /prefix lookalikes are not the reserved directories. */
  sbx_hostmount m = { 0 };
  tap_ok (sbx_hostmount_parse ("/srv:/procs:rw", NULL, &m, NULL) == 0 && strcmp (m.dest, "/procs") == 0,
          "/procs is not /proc");
  sbx_hostmount_clear (&m);
}

static void
test_validate (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  char *ok[] = { (char *) "/a:/x:ro", (char *) "/a:/y:rw", (char *) "/b:/x/y:ro", NULL };
  tap_ok (sbx_hostmounts_validate (ok, &err) == 0 && sbx_hostmounts_validate (NULL, &err) == 0,
          "a list of mounts, the same source twice, nested destinations; none (%s)", errmsg (err));
  char *twice[] = { (char *) "/a:/x:ro", (char *) "/b:/x/:rw", NULL };
  tap_ok (sbx_hostmounts_validate (twice, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT
              && strstr (err->msg, "`/x` is the destination of two mounts"),
          "a destination twice is refused (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  char *relative[] = { (char *) "rel:/x:ro", NULL };
  tap_ok (sbx_hostmounts_validate (relative, &err) < 0 && err->code == SBX_E_PATH_INVALID,
          "a record's host path must be absolute (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  _cleanup_strv_ char **many = NULL;
  for (int i = 0; i <= SBX_MOUNTS_MAX; i++)
    {
      _cleanup_free_ char *s = xasprintf ("/a:/m%d", i);
      strv_push (&many, s);
    }
  tap_ok (sbx_hostmounts_validate (many, &err) < 0 && strstr (err->msg, "at most 32 host directories"),
          "at most %d mounts (%s)", SBX_MOUNTS_MAX, errmsg (err));
}

/* --- the policy ------------------------------------------------------------ */

static sbx_conf *
conf_of (const char *text)
{
  sbx_conf *c = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  if (sbx_conf_parse ("t.conf", text, strlen (text), &c, &err) < 0)
    {
      fprintf (stderr, "conf: %s\n", errmsg (err));
      abort ();
    }
  return c;
}

#define ROOT "/srv/sbx-store/root"
#define RUN "/srv/sbx-store/run"

static void
verdict (const char *path, const sbx_conf *conf, const char *want)
{
  _cleanup_error_ sbx_error *err = NULL;
  int r = sbx_hostmount_policy (path, conf, ROOT, RUN, &err);
  if (want == NULL)
    tap_ok (r == 0 && err == NULL, "allowed: %s (%s)", path, errmsg (err));
  else
    tap_ok (r < 0 && err && err->code == SBX_E_POLICY_REFUSED && strstr (err->msg, want), "refused: %s: %s (%s)", path,
            want, errmsg (err));
}

static void
test_policy (void)
{
  verdict ("/", NULL, "is the host's root");
  static const char *const below[] = { "/proc", "/sys", "/dev", "/boot", "/etc", "/root" };
  for (size_t i = 0; i < ARRAY_SIZE (below); i++)
    {
      _cleanup_free_ char *sub = xasprintf ("%s/sub/dir", below[i]);
      _cleanup_free_ char *want = xasprintf ("is %s: it is never mounted", below[i]);
      _cleanup_free_ char *want_sub = xasprintf ("is inside %s", below[i]);
      verdict (below[i], NULL, want);
      verdict (sub, NULL, want_sub);
    }
  verdict ("/etcetera", NULL, NULL);
  verdict ("/rooted/x", NULL, NULL);
  static const char *const itself[] = { "/run", "/var/run", "/var/lib" };
  for (size_t i = 0; i < ARRAY_SIZE (itself); i++)
    verdict (itself[i], NULL, "is never mounted");
  verdict ("/var/lib/myapp/data", NULL, NULL);
  verdict ("/run/user/1000/project", NULL, NULL);
  verdict ("/var", NULL, "holds the state of sbx or of a container engine (`/var/lib/sbx`)");
  /* sbx's own, at, below and above. */
  verdict (ROOT, NULL, "is sbx's store (ROOT)");
  verdict (ROOT "/sandboxes", NULL, "is inside sbx's store (ROOT)");
  verdict ("/srv/sbx-store", NULL, "holds sbx's store (ROOT)");
  verdict ("/srv", NULL, "holds sbx's store (ROOT)");
  verdict (RUN "/sandboxes/x/mounts", NULL, "is inside sbx's runtime directory (RUN)");
  verdict ("/srv/sbx-store/rooted", NULL, NULL);
  verdict ("/srv/other", NULL, NULL);
  verdict ("/var/lib/sbx", NULL, "the state of sbx");
  verdict ("/run/sbx/x", NULL, "is inside the state of sbx");
  /* Container engines' state. */
  static const char *const engines[] = { "/var/lib/docker",
                                         "/var/lib/containerd",
                                         "/var/lib/containers/storage",
                                         "/run/docker",
                                         "/run/containerd/x",
                                         "/run/podman",
                                         "/run/crio",
                                         "/run/buildkit",
                                         "/var/run/docker",
                                         "/var/lib/buildkit/runc",
                                         "/var/lib/kubelet" };
  for (size_t i = 0; i < ARRAY_SIZE (engines); i++)
    verdict (engines[i], NULL, "the state of sbx or of a container engine");
  verdict ("/home/alice/project", NULL, NULL);
  verdict ("/tmp/x", NULL, NULL);

  /* sbx.conf: mount_deny at and below; mount_allow only; deny wins. */
  _cleanup_conf_ sbx_conf *deny = conf_of ("mount_deny = /home/alice/.ssh /data\n");
  verdict ("/data", deny, "is denied by sbx.conf's mount_deny (`/data`)");
  verdict ("/data/x/y", deny, "is denied by sbx.conf's mount_deny (`/data`)");
  verdict ("/home/alice/.ssh", deny, "mount_deny (`/home/alice/.ssh`)");
  verdict ("/home/alice/.sshx", deny, NULL);
  verdict ("/database", deny, NULL);
  verdict ("/home/alice", deny, NULL);
  _cleanup_conf_ sbx_conf *allow = conf_of ("mount_allow = /home /srv/projects\nmount_deny = /home/bob\n");
  verdict ("/home/alice/work", allow, NULL);
  verdict ("/home", allow, NULL);
  verdict ("/srv/projects/a", allow, NULL);
  verdict ("/srv/project", allow, "is not at or below a path of sbx.conf's mount_allow");
  verdict ("/tmp/x", allow, "is not at or below a path of sbx.conf's mount_allow");
  verdict ("/home/bob/x", allow, "is denied by sbx.conf's mount_deny (`/home/bob`)");
  _cleanup_conf_ sbx_conf *all = conf_of ("mount_allow = /\n");
  verdict ("/etc", all, "is /etc");
  verdict ("/", all, "is the host's root");
  verdict ("/opt/x", all, NULL);
}

/* --- the walk and the checks of the fd ------------------------------------- */

static void
expect_open (const char *rel, sbx_code code, const char *msg)
{
  _cleanup_free_ char *p = tpath (rel);
  _cleanup_error_ sbx_error *err = NULL;
  int fd = -1;
  int r = sbx_hostmount_open (p, &fd, &err);
  if (code == SBX_OK)
    {
      struct stat a, b;
      tap_ok (r == 0 && fd >= 0 && fstat (fd, &a) == 0 && stat (p, &b) == 0 && a.st_ino == b.st_ino,
              "open %s: the directory itself (%s)", rel, errmsg (err));
    }
  else
    tap_ok (r < 0 && fd == -1 && err && err->code == code && strstr (err->msg, msg), "open %s: %s, %s (%s)", rel,
            sbx_code_name (code), msg, errmsg (err));
  if (fd >= 0)
    close (fd);
}

static void
test_open (void)
{
  mkdirs ("walk/real/dir");
  mkdirs ("walk/elsewhere/dir");
  _cleanup_free_ char *ln = tpath ("walk/link");
  _cleanup_free_ char *ln2 = tpath ("walk/real/dirlink");
  _cleanup_free_ char *file = tpath ("walk/real/file");
  if (symlink ("elsewhere", ln) < 0 || symlink ("dir", ln2) < 0 || write_file_atomic (file, "x", 1, 0644, NULL) < 0)
    abort ();
  expect_open ("walk/real/dir", SBX_OK, NULL);
  _cleanup_free_ char *want = xasprintf ("`%s/walk/link` is a symbolic link", tmpdir);
  expect_open ("walk/link/dir", SBX_E_POLICY_REFUSED, want);
  _cleanup_free_ char *want2 = xasprintf ("`%s/walk/real/dirlink` is a symbolic link", tmpdir);
  expect_open ("walk/real/dirlink", SBX_E_POLICY_REFUSED, want2);
  _cleanup_free_ char *want3 = xasprintf ("`%s/walk/missing` does not exist", tmpdir);
  expect_open ("walk/missing/x", SBX_E_NOT_FOUND, want3);
  expect_open ("walk/real/file", SBX_E_PATH_INVALID, "is not a directory");
  expect_open ("walk/real/file/x", SBX_E_PATH_INVALID, "is not a directory");
}

/* Opens REL and checks it with CONF. */
static int
check_rel (const char *rel, const sbx_conf *conf, sbx_error **err)
{
  _cleanup_free_ char *p = tpath (rel);
  _cleanup_close_ int fd = -1;
  if (sbx_hostmount_open (p, &fd, err) < 0)
    return -1;
  return sbx_hostmount_check (fd, conf, NULL, err);
}

static void
expect_check (const char *rel, const sbx_conf *conf, const char *refused, const char *what)
{
  _cleanup_error_ sbx_error *err = NULL;
  int r = check_rel (rel, conf, &err);
  if (refused == NULL)
    tap_ok (r == 0, "%s: allowed (%s)", what, errmsg (err));
  else
    tap_ok (r < 0 && err && err->code == SBX_E_POLICY_REFUSED && strstr (err->msg, refused), "%s: refused, %s (%s)",
            what, refused, errmsg (err));
}

static void
test_check (void)
{
  mkdirs ("chk/plain/a/b");
  expect_check ("chk/plain", NULL, NULL, "a plain tree");
  /* Engines' sockets, anywhere within the scan's depth. */
  mkdirs ("chk/docker/x");
  make_socket ("chk/docker/x/docker.sock");
  expect_check ("chk/docker", NULL, "holds a container engine's socket (`*/docker.sock`)",
                "docker.sock one down (a known place)");
  mkdirs ("chk/docker2/x/y");
  make_socket ("chk/docker2/x/y/docker.sock");
  expect_check ("chk/docker2", NULL, "holds a container engine's socket (`x/y/docker.sock`)",
                "docker.sock two down (the scan)");
  mkdirs ("chk/top");
  make_socket ("chk/top/podman.sock");
  expect_check ("chk/top", NULL, "holds a container engine's socket (`podman.sock`)", "podman.sock at the top");
  mkdirs ("chk/deep/1/2/3");
  make_socket ("chk/deep/1/2/3/containerd.sock");
  expect_check ("chk/deep", NULL, "(`1/2/3/containerd.sock`)", "containerd.sock 4 levels down");
  static const char *const names[] = { "crio.sock", "buildkitd.sock", "dockerd.sock", "containerd.sock.ttrpc" };
  for (size_t i = 0; i < ARRAY_SIZE (names); i++)
    {
      _cleanup_free_ char *d = xasprintf ("chk/name%zu/sub", i);
      _cleanup_free_ char *s = xasprintf ("chk/name%zu/sub/%s", i, names[i]);
      _cleanup_free_ char *dd = xasprintf ("chk/name%zu", i);
      mkdirs (d);
      make_socket (s);
      expect_check (dd, NULL, names[i], names[i]);
    }
  /* Beyond the depth: only the known places. */
  mkdirs ("chk/toodeep/1/2/3/4");
  make_socket ("chk/toodeep/1/2/3/4/docker.sock");
  expect_check ("chk/toodeep", NULL, NULL, "docker.sock 5 levels down, not a known place (the scan's bound)");
  mkdirs ("chk/known/run/user/1000/podman");
  make_socket ("chk/known/run/user/1000/podman/podman.sock");
  expect_check ("chk/known", NULL, "(`run/user/*/podman/podman.sock`)", "podman.sock at a known place, 5 down");
  /* A socket of another name is no engine's. */
  mkdirs ("chk/other/sub");
  make_socket ("chk/other/app.sock");
  make_socket ("chk/other/sub/containerd.sock.bak");
  expect_check ("chk/other", NULL, NULL, "sockets of other names");
  /* An entry of the name that is not a socket: a regular file, a symlink
   * (not followed), refused alike; a directory of the name is not. */
  mkdirs ("chk/file/x");
  _cleanup_free_ char *fake = tpath ("chk/file/x/docker.sock");
  if (write_file_atomic (fake, "", 0, 0644, NULL) < 0)
    abort ();
  expect_check ("chk/file", NULL, "(`*/docker.sock`)", "a regular file named docker.sock");
  mkdirs ("chk/symlinked/x/y");
  _cleanup_free_ char *sl = tpath ("chk/symlinked/x/y/podman.sock");
  if (symlink ("/nonexistent/podman.sock", sl) < 0)
    abort ();
  expect_check ("chk/symlinked", NULL, "(`x/y/podman.sock`)", "a symlink named podman.sock");
  mkdirs ("chk/dirname/docker.sock");
  expect_check ("chk/dirname", NULL, NULL, "a directory named docker.sock");

  /* mount_deny by path, and by inode: a directory reached by another name. */
  _cleanup_free_ char *denied = tpath ("chk/plain/a");
  _cleanup_free_ char *ctext = xasprintf ("mount_deny = %s\n", denied);
  _cleanup_conf_ sbx_conf *c = conf_of (ctext);
  expect_check ("chk/plain/a/b", c, "is denied by sbx.conf's mount_deny", "below a mount_deny path");
  expect_check ("chk/plain", c, NULL, "above a mount_deny path");
  /* The inode check: /etc as the fd's parent, whatever its path says. */
  _cleanup_close_ int etc = open ("/etc", O_PATH | O_DIRECTORY | O_CLOEXEC);
  _cleanup_error_ sbx_error *err = NULL;
  tap_ok (etc >= 0 && sbx_hostmount_check (etc, NULL, NULL, &err) < 0 && err->code == SBX_E_POLICY_REFUSED,
          "an fd of /etc is refused (%s)", errmsg (err));
}

/* --- the race -------------------------------------------------------------- */

#define RACE_ROUNDS 20000

static atomic_bool race_stop;

/* Swaps race/a between a directory (holding b/, the one to mount) and a
 * symlink to race/evil (holding its own b/) by renames. */
static void *
swapper (void *arg)
{
  (void) arg;
  _cleanup_free_ char *a = tpath ("race/a"), *dir = tpath ("race/a.dir"), *lnk = tpath ("race/a.link");
  while (!atomic_load (&race_stop))
    {
      rename (a, dir); /* a -> a.dir: the directory leaves */
      rename (lnk, a); /* the symlink comes */
      rename (a, lnk);
      rename (dir, a);
    }
  return NULL;
}

static void
test_race (void)
{
  mkdirs ("race/a/b");
  mkdirs ("race/evil/b");
  _cleanup_free_ char *lnk = tpath ("race/a.link"), *evil = tpath ("race/evil");
  if (symlink (evil, lnk) < 0)
    abort ();
  struct stat good, bad;
  _cleanup_free_ char *gp = tpath ("race/a/b"), *bp = tpath ("race/evil/b"), *path = tpath ("race/a/b");
  if (stat (gp, &good) < 0 || stat (bp, &bad) < 0)
    abort ();
  atomic_store (&race_stop, false);
  pthread_t t;
  if (pthread_create (&t, NULL, swapper, NULL) != 0)
    abort ();
  int opened = 0, refused = 0, missing = 0, wrong = 0, other = 0;
  for (int i = 0; i < RACE_ROUNDS; i++)
    {
      _cleanup_error_ sbx_error *err = NULL;
      int fd = -1;
      if (sbx_hostmount_open (path, &fd, &err) == 0)
        {
          struct stat st;
          if (fstat (fd, &st) == 0 && st.st_ino == good.st_ino && st.st_dev == good.st_dev)
            opened++;
          else
            wrong++;
          close (fd);
        }
      else if (err->code == SBX_E_POLICY_REFUSED && strstr (err->msg, "is a symbolic link"))
        refused++;
      else if (err->code == SBX_E_NOT_FOUND)
        missing++;
      else
        other++;
    }
  atomic_store (&race_stop, true);
  pthread_join (t, NULL);
  tap_ok (wrong == 0 && other == 0,
          "%d walks while a component is swapped for a symlink: never its target (%d the directory, %d refused as a "
          "symlink, %d not there, %d wrong, %d other)",
          RACE_ROUNDS, opened, refused, missing, wrong, other);
  tap_ok (refused > 0 && opened > 0, "the race was run: both outcomes seen (%d refused, %d opened)", refused, opened);
}

int
main (void)
{
  if (mkdtemp (tmpdir) == NULL)
    {
      perror ("mkdtemp");
      return 1;
    }
  atexit (cleanup_tmpdir);
  test_parse ();
  test_validate ();
  test_policy ();
  test_open ();
  test_check ();
  test_race ();
  tap_plan (tap_n);
  return tap_done ();
}
