/* store.c, and the sandbox records kept in it, on a temporary ROOT and RUN:
 * the layout and its modes, the token, the tag that names host resources,
 * paths, the layer lock, the write guard (store_reserve), the top layer,
 * and a sandbox record's atomic save, load and listing. No root needed. */
#include "config.h"
#include "lifecycle.h"
#include "sandbox.h"
#include "sha256.h"
#include "store.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

static char *base;

static const char *
errmsg (const sbx_error *e)
{
  return e ? e->msg : "ok";
}

static mode_t
mode_of (const char *path)
{
  struct stat st;
  return lstat (path, &st) == 0 ? st.st_mode : 0;
}

static char *
in_base (const char *rel)
{
  return xasprintf ("%s/%s", base, rel);
}

static bool
is_hex (const char *s, size_t n)
{
  return strlen (s) == n && strspn (s, "0123456789abcdef") == n;
}

static void
test_layout (void)
{
  _cleanup_free_ char *root = in_base ("root"), *run = in_base ("run");
  _cleanup_store_ sbx_store *st = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  int r = sbx_store_open (root, run, true, &st, &err);
  tap_ok (r == 0 && st && strcmp (st->root, root) == 0 && strcmp (st->run_root, run) == 0,
          "open with create makes the store (%s)", errmsg (err));
  if (r < 0)
    exit (1);
  static const char *const root_dirs[] = { "", "layers", "images", "sandboxes", "names", "cache", "snapshots", "top" };
  static const char *const run_dirs[] = { "", "sandboxes", "runtime" };
  int bad = 0;
  for (size_t i = 0; i < ARRAY_SIZE (root_dirs); i++)
    {
      _cleanup_free_ char *p = sbx_store_path (st, "%s", root_dirs[i]);
      if (mode_of (p) != (S_IFDIR | 0700))
        printf ("# %s: mode %o\n", p, mode_of (p)), bad++;
    }
  for (size_t i = 0; i < ARRAY_SIZE (run_dirs); i++)
    {
      _cleanup_free_ char *p = sbx_store_run_path (st, "%s", run_dirs[i]);
      if (mode_of (p) != (S_IFDIR | 0700))
        printf ("# %s: mode %o\n", p, mode_of (p)), bad++;
    }
  tap_ok (bad == 0, "ROOT, RUN and their directories are private (0700)");
  _cleanup_free_ char *tokp = sbx_store_path (st, "token");
  _cleanup_free_ char *token = NULL, *token2 = NULL;
  size_t n = 0;
  tap_ok (read_file (tokp, 4096, &token, &n, NULL) == 0 && is_hex (token, 64) && mode_of (tokp) == (S_IFREG | 0600),
          "ROOT/token: 64 hex digits, 0600");
  sbx_store_free (steal_pointer (&st));
  r = sbx_store_open (root, run, true, &st, &err);
  tap_ok (r == 0 && read_file (tokp, 4096, &token2, &n, NULL) == 0 && strcmp (token, token2) == 0,
          "opening it again keeps the token (%s)", errmsg (err));

  /* Paths and the names of host resources. */
  _cleanup_free_ char *p = sbx_store_path (st, "sandboxes/%s/state.json", "sb-0123456789ab");
  _cleanup_free_ char *want = xasprintf ("%s/sandboxes/sb-0123456789ab/state.json", root);
  _cleanup_free_ char *rp = sbx_store_run_path (st, "sandboxes/%d", 7);
  _cleanup_free_ char *rwant = xasprintf ("%s/sandboxes/7", run);
  _cleanup_free_ char *cg = sbx_store_cgroup_path (st, "sb-0123456789ab");
  _cleanup_free_ char *cwant = xasprintf ("/sbx-%s/sb-0123456789ab", st->tag);
  tap_ok (strcmp (p, want) == 0 && strcmp (rp, rwant) == 0 && strcmp (cg, cwant) == 0,
          "store, run and cgroup paths (%s, %s, %s)", p, rp, cg);
}

static void
test_tag (void)
{
  _cleanup_free_ char *root = in_base ("root"), *run = in_base ("run"), *other = in_base ("other");
  _cleanup_free_ char *link = in_base ("root-link");
  if (symlink (root, link) < 0)
    abort ();
  _cleanup_store_ sbx_store *a = NULL, *b = NULL, *c = NULL;
  if (sbx_store_open (root, run, false, &a, NULL) < 0 || sbx_store_open (link, run, false, &b, NULL) < 0
      || sbx_store_open (other, run, false, &c, NULL) < 0)
    abort ();
  char real[PATH_MAX], hex[65];
  if (realpath (root, real) == NULL)
    abort ();
  sha256_hex (real, strlen (real), hex);
  tap_ok (is_hex (a->tag, 8) && strncmp (a->tag, hex, 8) == 0, "the tag is sha256(realpath(ROOT))'s first 8 hex (%s)",
          a->tag);
  tap_ok (strcmp (a->tag, b->tag) == 0, "a ROOT reached through a symlink has the same tag");
  tap_ok (strcmp (a->tag, c->tag) != 0, "another ROOT has another tag (%s, %s)", a->tag, c->tag);
  tap_ok (!path_exists (other), "open without create makes nothing");

  /* A relative ROOT is made absolute, against the working directory. */
  char cwd[PATH_MAX];
  if (getcwd (cwd, sizeof cwd) == NULL || chdir (base) < 0)
    abort ();
  _cleanup_store_ sbx_store *rel = NULL;
  int r = sbx_store_open ("root", "run", false, &rel, NULL);
  if (chdir (cwd) < 0)
    abort ();
  tap_ok (r == 0 && strcmp (rel->root, root) == 0 && strcmp (rel->run_root, run) == 0 && strcmp (rel->tag, a->tag) == 0,
          "a relative ROOT is made absolute (%s)", r == 0 ? rel->root : "failed");
}

static void
test_modes_and_refusals (void)
{
  /* A ROOT made beforehand with a looser mode is made private. */
  _cleanup_free_ char *loose = in_base ("loose"), *run = in_base ("run2");
  if (mkdir (loose, 0755) < 0)
    abort ();
  _cleanup_store_ sbx_store *st = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  int r = sbx_store_open (loose, run, true, &st, &err);
  tap_ok (r == 0 && mode_of (loose) == (S_IFDIR | 0700), "an existing 0755 ROOT is made 0700 (%s)", errmsg (err));

  _cleanup_free_ char *file = in_base ("a-file"), *run3 = in_base ("run3");
  if (write_file_atomic (file, "x", 1, 0644, NULL) < 0)
    abort ();
  _cleanup_store_ sbx_store *st2 = NULL;
  r = sbx_store_open (file, run3, true, &st2, &err);
  tap_ok (r < 0 && st2 == NULL && err && strstr (err->msg, "open store") && mode_of (file) == (S_IFREG | 0644),
          "a ROOT that is a file is refused, and left alone (%s)", errmsg (err));
}

static void
test_locks (void)
{
  _cleanup_free_ char *root = in_base ("root"), *run = in_base ("run");
  _cleanup_store_ sbx_store *st = NULL;
  if (sbx_store_open (root, run, true, &st, NULL) < 0)
    abort ();
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_close_ int sh1 = sbx_store_layers_lock (st, LOCK_SH, &err);
  _cleanup_close_ int sh2 = sbx_store_layers_lock (st, LOCK_SH | LOCK_NB, &err);
  tap_ok (sh1 >= 0 && sh2 >= 0, "the layer lock is shared by two holders (%s)", errmsg (err));
  int ex = sbx_store_layers_lock (st, LOCK_EX | LOCK_NB, &err);
  tap_ok (ex < 0 && err && err->code == SBX_E_BUSY, "while it is held shared, an exclusive try is BUSY (%s)",
          errmsg (err));
  if (ex >= 0)
    close (ex);
  sbx_error_free (steal_pointer (&err));
  close (steal_fd (&sh1));
  close (steal_fd (&sh2));
  ex = sbx_store_layers_lock (st, LOCK_EX | LOCK_NB, &err);
  int sh = ex >= 0 ? sbx_store_layers_lock (st, LOCK_SH | LOCK_NB, NULL) : -1;
  _cleanup_free_ char *lockp = sbx_store_path (st, "layers.lock");
  tap_ok (ex >= 0 && sh < 0 && mode_of (lockp) == (S_IFREG | 0600),
          "released, it is taken exclusively, and then refuses a shared try; the lock file is 0600 (%s)", errmsg (err));
  if (ex >= 0)
    close (ex);
  if (sh >= 0)
    close (sh);
}

static void
test_begin_write (void)
{
  _cleanup_free_ char *root = in_base ("root"), *run = in_base ("run"), *conf = in_base ("sbx.conf");
  _cleanup_store_ sbx_store *st = NULL;
  if (sbx_store_open (root, run, true, &st, NULL) < 0)
    abort ();
  const char *huge = "store_reserve = 65536Gi\n";
  if (write_file_atomic (conf, huge, strlen (huge), 0644, NULL) < 0)
    abort ();
  setenv ("SBX_CONF", conf, 1);
  _cleanup_error_ sbx_error *err = NULL;
  int r = sbx_store_begin_write (st, "import", &err);
  tap_ok (r < 0 && err && err->code == SBX_E_RESOURCE_EXHAUSTED && strstr (err->msg, "import refused"),
          "store_reserve above the free space: the write is RESOURCE_EXHAUSTED (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  const char *none = "store_reserve = 0\n";
  if (write_file_atomic (conf, none, strlen (none), 0644, NULL) < 0)
    abort ();
  r = sbx_store_begin_write (st, "import", &err);
  tap_ok (r == 0, "store_reserve 0: the write may go ahead (%s)", errmsg (err));
  unsetenv ("SBX_CONF");
}

static void
test_top_layer (void)
{
  _cleanup_free_ char *root = in_base ("root"), *run = in_base ("run"), *init = in_base ("fake-init");
  _cleanup_store_ sbx_store *st = NULL;
  if (sbx_store_open (root, run, true, &st, NULL) < 0)
    abort ();
  if (write_file_atomic (init, "#!/bin/sh\n", 10, 0755, NULL) < 0)
    abort ();
  _cleanup_free_ char *top = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  int r = sbx_store_top_layer (st, init, &top, &err);
  _cleanup_free_ char *want = sbx_store_path (st, "top/v1");
  tap_ok (r == 0 && top && strcmp (top, want) == 0, "the top layer is ROOT/top/v1 (%s)", errmsg (err));
  if (r < 0)
    return;
  static const char *const dirs[] = { "dev", "proc", "sys", "etc", ".sbx" };
  int bad = 0;
  for (size_t i = 0; i < ARRAY_SIZE (dirs); i++)
    {
      _cleanup_free_ char *p = xasprintf ("%s/%s", top, dirs[i]);
      bad += mode_of (p) != (S_IFDIR | 0755);
    }
  _cleanup_free_ char *tmp = xasprintf ("%s/tmp", top), *hosts = xasprintf ("%s/etc/hosts", top);
  _cleanup_free_ char *resolv = xasprintf ("%s/etc/resolv.conf", top), *copy = xasprintf ("%s/.sbx/init", top);
  _cleanup_free_ char *h = NULL, *c = NULL;
  size_t n = 0, cn = 0;
  struct stat st1, st2;
  tap_ok (bad == 0 && mode_of (tmp) == (S_IFDIR | 01777), "dev, proc, sys, etc, .sbx (0755) and tmp (1777)");
  tap_ok (read_file (hosts, 4096, &h, &n, NULL) == 0 && strstr (h, "127.0.0.1\tlocalhost\n")
              && strstr (h, "::1\tlocalhost") && mode_of (resolv) == (S_IFREG | 0644) && stat (resolv, &st1) == 0
              && st1.st_size == 0,
          "etc/hosts names localhost; etc/resolv.conf is there, empty");
  tap_ok (read_file (copy, 4096, &c, &cn, NULL) == 0 && cn == 10 && memcmp (c, "#!/bin/sh\n", 10) == 0
              && mode_of (copy) == (S_IFREG | 0555),
          ".sbx/init is a copy of sbx-init, 0555");
  free (steal_pointer (&top));
  stat (copy, &st1);
  r = sbx_store_top_layer (st, init, &top, &err);
  tap_ok (r == 0 && stat (copy, &st2) == 0 && st1.st_ino == st2.st_ino, "again: the copy stays as it is (%s)",
          errmsg (err));
  free (steal_pointer (&top));
  if (write_file_atomic (init, "#!/bin/sh -e\n", 13, 0755, NULL) < 0)
    abort ();
  free (steal_pointer (&c));
  r = sbx_store_top_layer (st, init, &top, &err);
  tap_ok (r == 0 && read_file (copy, 4096, &c, &cn, NULL) == 0 && cn == 13 && memcmp (c, "#!/bin/sh -e\n", 13) == 0,
          "a new sbx-init replaces the copy (%s)", errmsg (err));
}

/* Whether DIR holds any entry whose name starts with `.`. */
static bool
has_dot_files (const char *dir)
{
  _cleanup_closedir_ DIR *d = opendir (dir);
  struct dirent *de;
  while (d && (de = readdir (d)))
    if (de->d_name[0] == '.' && strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0)
      return true;
  return false;
}

static void
test_records (void)
{
  _cleanup_free_ char *root = in_base ("root"), *run = in_base ("run");
  _cleanup_store_ sbx_store *st = NULL;
  if (sbx_store_open (root, run, true, &st, NULL) < 0)
    abort ();
  char *env[] = { (char *) "A=1", (char *) "B=two words", NULL };
  sbx_sandbox sb = { .id = (char *) "sb-0123456789ab",
                     .state = SBX_STATE_TERMINATED,
                     .reason = (char *) SBX_REASON_EXIT,
                     .created_at = 1700000000,
                     .cmd_pid = 7,
                     .opts = { .name = (char *) "web",
                               .runtime = (char *) "runc",
                               .cpu = 1.5,
                               .memory = 256 << 20,
                               .env = env,
                               .cwd = (char *) "/w" } };
  _cleanup_free_ char *dir = sbx_sandbox_dir (st, sb.id);
  if (mkdir (dir, 0700) < 0)
    abort ();
  _cleanup_error_ sbx_error *err = NULL;
  int r = sbx_sandbox_save (st, &sb, &err);
  _cleanup_free_ char *state = xasprintf ("%s/state.json", dir);
  tap_ok (r == 0 && mode_of (state) == (S_IFREG | 0600) && !has_dot_files (dir),
          "a record is saved as state.json, 0600, no temporary file left (%s)", errmsg (err));
  _cleanup_sandbox_ sbx_sandbox *got = NULL;
  r = sbx_sandbox_load (st, sb.id, &got, &err);
  tap_ok (r == 0 && strcmp (got->id, sb.id) == 0 && got->state == SBX_STATE_TERMINATED
              && strcmp (got->reason, SBX_REASON_EXIT) == 0 && got->created_at == 1700000000
              && strcmp (got->opts.name, "web") == 0 && strcmp (got->opts.runtime, "runc") == 0 && got->opts.cpu == 1.5
              && got->opts.memory == 256 << 20 && strv_len (got->opts.env) == 2
              && strcmp (got->opts.env[1], "B=two words") == 0 && strcmp (got->opts.cwd, "/w") == 0
              && got->cmd_pid == 7,
          "it loads back as saved, the initial command's pid too (%s)", errmsg (err));

  /* Listing: every valid id, nothing else. */
  _cleanup_free_ char *other = sbx_sandbox_dir (st, "sb-ba9876543210");
  _cleanup_free_ char *dot = sbx_store_path (st, "sandboxes/.sb-half-made");
  _cleanup_free_ char *junk = sbx_store_path (st, "sandboxes/not a name!");
  if (mkdir (other, 0700) < 0 || mkdir (dot, 0700) < 0 || mkdir (junk, 0700) < 0)
    abort ();
  _cleanup_strv_ char **ids = NULL;
  r = sbx_sandbox_list (st, &ids, &err);
  bool has_a = false, has_b = false;
  for (size_t i = 0; ids && ids[i]; i++)
    {
      has_a |= strcmp (ids[i], "sb-0123456789ab") == 0;
      has_b |= strcmp (ids[i], "sb-ba9876543210") == 0;
    }
  tap_ok (r == 0 && strv_len (ids) == 2 && has_a && has_b,
          "list: the two sandboxes, not a dot entry or an invalid name (%zu, %s)", ids ? strv_len (ids) : 0,
          errmsg (err));

  _cleanup_sandbox_ sbx_sandbox *none = NULL;
  r = sbx_sandbox_load (st, "../../etc", &none, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT, "load of `../../etc` is INVALID_ARGUMENT (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  r = sbx_sandbox_load (st, "sb-ba9876543210", &none, &err);
  tap_ok (r < 0 && err->code == SBX_E_NOT_FOUND, "load of a sandbox without a record is NOT_FOUND (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));

  /* Liveness is the monitor's lock, not a pid. */
  tap_ok (!sbx_sandbox_monitor_alive (st, sb.id), "no lock file: no monitor");
  _cleanup_free_ char *lockp = xasprintf ("%s/lock", dir);
  _cleanup_close_ int lk = lock_path (lockp, LOCK_EX, NULL);
  tap_ok (lk >= 0 && sbx_sandbox_monitor_alive (st, sb.id), "the lock held: the monitor is alive");
  close (steal_fd (&lk));
  tap_ok (!sbx_sandbox_monitor_alive (st, sb.id), "the lock released: the monitor is gone");

  /* Names. */
  r = sbx_name_reserve (st, "web", sb.id, &err);
  tap_ok (r == 0, "the name web is reserved for its sandbox (%s)", errmsg (err));
  r = sbx_name_reserve (st, "web", "sb-ba9876543210", &err);
  tap_ok (r < 0 && err->code == SBX_E_BUSY, "a second sandbox cannot take it: BUSY (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  _cleanup_free_ char *resolved = NULL;
  r = sbx_sandbox_resolve (st, "web", &resolved, &err);
  tap_ok (r == 0 && strcmp (resolved, sb.id) == 0, "web resolves to its sandbox (%s)", errmsg (err));
  rm_rf (dir, NULL);
  r = sbx_name_reserve (st, "web", "sb-ba9876543210", &err);
  tap_ok (r == 0, "once its sandbox is gone, the name may be taken over (%s)", errmsg (err));
}

/* The teardowns under way (RUN/ending, lifecycle.c): counted while their
 * entry is held, stale ones (a dead monitor's) removed, waited for; and the
 * bounds update shares with create. */
static void
test_teardowns (void)
{
  _cleanup_free_ char *root = in_base ("root-td"), *run = in_base ("run-td");
  _cleanup_store_ sbx_store *st = NULL;
  if (sbx_store_open (root, run, true, &st, NULL) < 0)
    abort ();
  tap_ok (sbx_teardown_count (st) == 0, "no teardown under way in a new store");
  int a = sbx_teardown_begin (st, "sb-aaaaaaaaaaaa"), b = sbx_teardown_begin (st, "sb-bbbbbbbbbbbb");
  _cleanup_free_ char *pa = xasprintf ("%s/ending/sb-aaaaaaaaaaaa", run);
  tap_ok (a >= 0 && b >= 0 && sbx_teardown_count (st) == 2 && mode_of (pa) == (S_IFREG | 0600),
          "two teardowns registered are counted, each a 0600 file");
  /* A monitor killed mid-teardown leaves its entry unlocked: not counted,
   * and removed by whoever looks. */
  _cleanup_free_ char *stale = xasprintf ("%s/ending/sb-cccccccccccc", run);
  write_file_replace (stale, "", 0, 0600, NULL);
  tap_ok (sbx_teardown_count (st) == 2 && !path_exists (stale), "a stale entry is not counted and is removed");
  sbx_teardown_end (st, "sb-aaaaaaaaaaaa", a);
  tap_ok (sbx_teardown_count (st) == 1 && !path_exists (pa), "an ended teardown is no longer counted");
  pid_t pid = fork ();
  if (pid == 0)
    {
      usleep (100000);
      _exit (0);
    }
  /* b is held by this process and its child: the child's exit lets it go
   * once this process has closed its copy. */
  close (b);
  uint64_t t0 = now_ms_monotonic ();
  sbx_teardown_throttle (st, 1);
  tap_ok (now_ms_monotonic () - t0 >= 50 && sbx_teardown_count (st) == 0,
          "throttle at 1 waits until the one under way is over");
  waitpid (pid, NULL, 0);
  sbx_teardown_wait_all (st);
  tap_ok (sbx_teardown_count (st) == 0, "wait_all returns at once with none under way");
  _cleanup_error_ sbx_error *err = NULL;
  tap_ok (sbx_limits_validate (0.5, 256ULL << 20, 100, &err) == 0 && sbx_limits_validate (0, 0, 0, &err) == 0,
          "limits within create's bounds, and none, pass");
  bool refused = sbx_limits_validate (2000, 0, 0, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT;
  sbx_error_free (steal_pointer (&err));
  refused = refused && sbx_limits_validate (0, 1 << 20, 0, &err) < 0;
  sbx_error_free (steal_pointer (&err));
  refused = refused && sbx_limits_validate (0, 0, 3, &err) < 0;
  sbx_error_free (steal_pointer (&err));
  refused = refused && sbx_lifetimes_validate (0, 60, &err) < 0;
  sbx_error_free (steal_pointer (&err));
  refused = refused && sbx_lifetimes_validate (-1, 86401, &err) < 0;
  sbx_error_free (steal_pointer (&err));
  tap_ok (refused && sbx_lifetimes_validate (-1, 86400, NULL) == 0,
          "cpu, memory, pids, keep-warm and timeout out of bounds are refused");
}

int
main (void)
{
  char tmpl[] = "/tmp/sbx-test-store-XXXXXX";
  if (mkdtemp (tmpl) == NULL)
    abort ();
  base = tmpl;
  /* A narrow umask (077) must not narrow the top layer's modes: they are
   * the sandbox's /, /etc and /tmp. */
  umask (077);
  tap_plan (43);
  test_layout ();
  test_tag ();
  test_modes_and_refusals ();
  test_locks ();
  test_begin_write ();
  test_top_layer ();
  test_records ();
  test_teardowns ();
  rm_rf (base, NULL);
  return tap_done ();
}
