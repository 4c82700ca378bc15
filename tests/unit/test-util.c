/* Unit tests for the small helpers: parsing, names, env entries, atomic files. */
#include "config.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

static void
test_parse_int (void)
{
  int64_t v = 0;
  tap_ok (parse_int64 ("42", 0, 100, &v) == 0 && v == 42, "parse_int64 42");
  tap_ok (parse_int64 ("-1", -1, 100, &v) == 0 && v == -1, "parse_int64 -1 within range");
  tap_ok (parse_int64 ("-1", 0, 100, &v) == -ERANGE, "parse_int64 -1 below range");
  tap_ok (parse_int64 ("99999999999", 0, 86400, &v) == -ERANGE, "parse_int64 huge out of range");
  tap_ok (parse_int64 ("999999999999999999999999", 0, INT64_MAX, &v) == -ERANGE, "parse_int64 overflow");
  tap_ok (parse_int64 ("12x", 0, 100, &v) == -EINVAL, "parse_int64 trailing garbage");
  tap_ok (parse_int64 (" 12", 0, 100, &v) == -EINVAL, "parse_int64 leading space");
  tap_ok (parse_int64 ("", 0, 100, &v) == -EINVAL, "parse_int64 empty");
}

static void
test_parse_memory (void)
{
  uint64_t b = 0;
  tap_ok (parse_memory ("512", &b) == 0 && b == 512ULL << 20, "memory 512 is MiB");
  tap_ok (parse_memory ("512Mi", &b) == 0 && b == 512ULL << 20, "memory 512Mi");
  tap_ok (parse_memory ("1Gi", &b) == 0 && b == 1ULL << 30, "memory 1Gi");
  tap_ok (parse_memory ("-1", &b) < 0, "memory -1 refused");
  tap_ok (parse_memory ("1Xi", &b) < 0, "memory unknown unit refused");
  tap_ok (parse_memory ("99999999999999999999Gi", &b) < 0, "memory overflow refused");
}

static void
test_double (void)
{
  double d = 0;
  tap_ok (parse_double ("0.5", 0.01, 64, &d) == 0 && d == 0.5, "cpu 0.5");
  tap_ok (parse_double ("-1", 0.01, 64, &d) < 0, "cpu -1 refused");
  tap_ok (parse_double ("1e3", 0.01, 64, &d) < 0, "cpu exponent refused");
  tap_ok (parse_double ("nan", 0.01, 64, &d) < 0, "cpu nan refused");
}

static void
test_names (void)
{
  tap_ok (name_is_valid ("sb-0123abcd"), "id valid");
  tap_ok (name_is_valid ("my.box_1+x"), "name with . _ + valid");
  tap_ok (!name_is_valid ("-x"), "leading dash refused");
  tap_ok (!name_is_valid ("../x"), "slash refused");
  tap_ok (!name_is_valid (""), "empty refused");
  tap_ok (!name_is_valid ("a b"), "space refused");
  tap_ok (!name_is_valid ("\xc3\xa9t\xc3\xa9"), "non-ascii refused");
  char longname[100];
  memset (longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  tap_ok (!name_is_valid (longname), "over-long refused");
}

static void
test_env (void)
{
  tap_ok (env_entry_is_valid ("A=b"), "A=b valid");
  tap_ok (env_entry_is_valid ("A="), "A= valid");
  tap_ok (!env_entry_is_valid ("A"), "no = refused");
  tap_ok (!env_entry_is_valid ("=b"), "empty key refused");
  tap_ok (!env_entry_is_valid ("1A=b"), "key starting with digit refused");
  tap_ok (!env_entry_is_valid ("A-B=c"), "key with dash refused");
}

static void
test_atomic (void)
{
  char tmpl[] = "/tmp/sbx-test-util-XXXXXX";
  char *dir = mkdtemp (tmpl);
  _cleanup_free_ char *path = xasprintf ("%s/f", dir);
  sbx_error *err = NULL;
  tap_ok (write_file_atomic (path, "hello", 5, 0600, &err) == 0, "atomic write");
  _cleanup_free_ char *data = NULL;
  size_t len = 0;
  tap_ok (read_file (path, 100, &data, &len, &err) == 0 && len == 5 && memcmp (data, "hello", 5) == 0, "read back");
  struct stat st;
  tap_ok (stat (path, &st) == 0 && (st.st_mode & 0777) == 0600, "mode kept");
  free (data);
  data = NULL;
  tap_ok (read_file (path, 3, &data, &len, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT, "size bound enforced");
  sbx_error_free (err);
  err = NULL;
  _cleanup_free_ char *lnk = xasprintf ("%s/l", dir);
  tap_ok (symlink (path, lnk) == 0 && read_file (lnk, 100, &data, &len, &err) < 0, "read_file refuses a symlink");
  sbx_error_free (err);
  err = NULL;
  tap_ok (rm_rf (dir, &err) == 0 && !path_exists (dir), "rm_rf");
}

static void
test_encodings (void)
{
  tap_ok (utf8_valid ("plain", 5) && utf8_valid ("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9), "valid UTF-8");
  tap_ok (!utf8_valid ("\xff", 1) && !utf8_valid ("\xc3", 1) && !utf8_valid ("\xc0\xaf", 2),
          "bad bytes, truncated, overlong");
  tap_ok (!utf8_valid ("\xed\xa0\x80", 3) && !utf8_valid ("\xf4\x90\x80\x80", 4), "surrogates, beyond U+10FFFF");
  char *h = hex_encode ("\x00\xff"
                        "ab",
                        4),
       *back = NULL;
  size_t n = 0;
  tap_ok (strcmp (h, "00ff6162") == 0 && hex_decode (h, &back, &n) == 0 && n == 4
              && memcmp (back,
                         "\x00\xff"
                         "ab",
                         4)
                     == 0,
          "hex round trip");
  free (h);
  free (back);
  tap_ok (hex_decode ("abc", &back, &n) < 0 && hex_decode ("zz", &back, &n) < 0,
          "hex_decode refuses odd lengths and non-digits");
  char *b1 = base64_encode ("f", 1), *b2 = base64_encode ("fo", 2), *b3 = base64_encode ("foobar", 6);
  tap_ok (strcmp (b1, "Zg==") == 0 && strcmp (b2, "Zm8=") == 0 && strcmp (b3, "Zm9vYmFy") == 0,
          "base64 (RFC 4648 vectors)");
  free (b1);
  free (b2);
  free (b3);
}

static void
test_env_list (void)
{
  _cleanup_strv_ char **env = xmalloc0 (sizeof (char *));
  strv_env_set (&env, "PATH=/bin");
  strv_env_set (&env, "PATHX=1");
  strv_env_set (&env, "PATH=/usr/bin");
  strv_env_set (&env, "EMPTY=");
  tap_ok (strv_len (env) == 3 && strcmp (env[0], "PATH=/usr/bin") == 0 && strcmp (env[1], "PATHX=1") == 0,
          "strv_env_set: a later entry replaces the same key in place, a longer key is another");
  tap_ok (strcmp (strv_env_get (env, "PATH"), "/usr/bin") == 0 && strcmp (strv_env_get (env, "EMPTY"), "") == 0
              && strv_env_get (env, "PAT") == NULL && strv_env_get (NULL, "PATH") == NULL,
          "strv_env_get: exact keys only");
  tap_ok (strncmp (SBX_DEFAULT_PATH, "/usr/local/sbin:", 16) == 0 && strstr (SBX_DEFAULT_PATH, ":/bin") != NULL,
          "SBX_DEFAULT_PATH");
}

/* read_fd: a file of exactly MAX bytes is read (at the buffer's doubling
 * points too), one byte more is -EFBIG. */
static void
test_read_fd (void)
{
  char path[] = "/tmp/sbx-test-readfd-XXXXXX";
  int fd = mkostemp (path, O_CLOEXEC);
  unlink (path);
  _cleanup_free_ char *big = xmalloc (8193);
  memset (big, 'x', 8193);
  bool ok = fd >= 0 && write_all (fd, big, 8192) == 0;
  _cleanup_free_ char *data = NULL;
  size_t len = 0;
  tap_ok (ok && lseek (fd, 0, SEEK_SET) == 0 && read_fd (fd, 8192, &data, &len) == 0 && len == 8192
              && data[8192] == '\0',
          "read_fd: exactly MAX bytes");
  char *more = NULL;
  tap_ok (ok && lseek (fd, 0, SEEK_SET) == 0 && read_fd (fd, 8191, &more, &len) == -EFBIG && more == NULL,
          "read_fd: MAX + 1 bytes is -EFBIG");
  if (fd >= 0)
    close (fd);
}

static void
test_printable (void)
{
  tap_ok (printable_token ("10.0.0.1", 64) && !printable_token ("", 64) && !printable_token ("a b", 64)
              && !printable_token ("a\r\nb", 64) && !printable_token ("\xc3\xa9", 64) && !printable_token ("abcd", 3),
          "printable_token: visible ASCII, 1 to MAX bytes");
  _cleanup_free_ char *m1 = printable_masked ("a\x1b[31mb\x7f", 200, "(none)");
  _cleanup_free_ char *m2 = printable_masked ("abcdef", 3, "(none)");
  _cleanup_free_ char *m3 = printable_masked (NULL, 3, "(none)");
  tap_ok (strcmp (m1, "a?[31mb?") == 0 && strcmp (m2, "abc...") == 0 && strcmp (m3, "(none)") == 0,
          "printable_masked: control bytes as ?, cut, NULL");
  _cleanup_free_ char *e1 = printable_escaped ("a\tb\x01\xc3\xa9", 64);
  _cleanup_free_ char *e2 = printable_escaped ("abcdef", 4);
  tap_ok (strcmp (e1, "a\\tb\\x01\xc3\xa9") == 0 && strcmp (e2, "abcd...") == 0, "printable_escaped: \\t, \\xNN, cut");
}

static void
test_cleanups (void)
{
  int saved[2] = { -1, -1 };
  {
    _cleanup_pipe_ int p[2] = SBX_PIPE_INIT;
    if (pipe2 (p, O_CLOEXEC) == 0)
      memcpy (saved, p, sizeof saved);
  }
  tap_ok (saved[0] >= 0 && fcntl (saved[0], F_GETFD) < 0 && errno == EBADF && fcntl (saved[1], F_GETFD) < 0,
          "_cleanup_pipe_ closes both ends");
  pid_t seen = -1;
  {
    _cleanup_pid_ pid_t pid = fork ();
    if (pid == 0)
      {
        pause ();
        _exit (0);
      }
    seen = pid;
  }
  /* Killed and reaped: not even a zombie is left to wait for. */
  tap_ok (seen > 0 && waitpid (seen, NULL, WNOHANG) < 0 && errno == ECHILD, "_cleanup_pid_ kills and reaps");
  pid_t kept = -1;
  {
    _cleanup_pid_ pid_t pid = fork ();
    if (pid == 0)
      _exit (7);
    int status = 0;
    if (pid > 0 && waitpid (pid, &status, 0) == pid && WIFEXITED (status))
      kept = steal_pid (&pid);
  }
  tap_ok (kept > 0, "_cleanup_pid_ disarmed with steal_pid");
}

/* In a child: fds 5 and HIGH (above the 4,096 the old code stopped at) and
 * LOW open; close_fds_except keeping 5 must close the others. WITH_SECCOMP:
 * close_range fails with ENOSYS, as on Linux < 5.9, so that the
 * /proc/self/fd path runs. */
static int
close_fds_child (int high, bool no_close_range)
{
  pid_t pid = fork ();
  if (pid == 0)
    {
      if (no_close_range)
        {
          scmp_filter_ctx ctx = seccomp_init (SCMP_ACT_ALLOW);
          if (ctx == NULL || seccomp_rule_add (ctx, SCMP_ACT_ERRNO (ENOSYS), SCMP_SYS (close_range), 0) < 0
              || seccomp_load (ctx) < 0)
            _exit (10);
        }
      int fd = open ("/dev/null", O_RDONLY);
      if (fd < 0 || dup2 (fd, 5) < 0 || dup2 (fd, high) < 0 || dup2 (fd, high - 1) < 0 || dup2 (fd, 4) < 0)
        _exit (11);
      /* More fds than the 4,096 the old code listed before it stopped. */
      for (int i = 10; i < 4300; i++)
        if (dup2 (fd, i) < 0)
          _exit (11);
      const int keep[] = { 5, high - 1 };
      if (close_fds_except (keep, 2) < 0)
        _exit (12);
      if (fcntl (high, F_GETFD) >= 0 || fcntl (4, F_GETFD) >= 0 || (fd != 5 && fd != 4 && fcntl (fd, F_GETFD) >= 0))
        _exit (13);
      for (int i = 10; i < 4300; i++)
        if (fcntl (i, F_GETFD) >= 0)
          _exit (16);
      if (fcntl (5, F_GETFD) < 0 || fcntl (high - 1, F_GETFD) < 0 || fcntl (1, F_GETFD) < 0)
        _exit (14);
      if (close_fds_except (NULL, 0) < 0 || fcntl (5, F_GETFD) >= 0 || fcntl (high - 1, F_GETFD) >= 0)
        _exit (15);
      _exit (0);
    }
  int status = -1;
  waitpid (pid, &status, 0);
  return WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
}

static void
test_close_fds (void)
{
  /* Room for an fd above 65,536 (the old fallback's end) where the hard
   * limit allows it or root may raise it; above 4,096 in any case. */
  struct rlimit rl;
  getrlimit (RLIMIT_NOFILE, &rl);
  rlim_t want = 70000;
  if (rl.rlim_max < want)
    {
      struct rlimit up = { want, want };
      if (setrlimit (RLIMIT_NOFILE, &up) == 0)
        rl = up;
    }
  rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
  setrlimit (RLIMIT_NOFILE, &rl);
  int high = (int) rl.rlim_cur - 1;
  if (high <= 4300)
    {
      /* Visible, and a failure under SBX_TEST_STRICT. */
      bool strict = getenv ("SBX_TEST_STRICT") && atoi (getenv ("SBX_TEST_STRICT"));
      for (int i = 0; i < 2; i++)
        if (strict)
          tap_ok (0, "RLIMIT_NOFILE hard limit %ld leaves no room for 4,300 fds", (long) rl.rlim_max);
        else
          printf ("ok %d # SKIP RLIMIT_NOFILE hard limit %ld leaves no room for 4,300 fds\n", ++tap_n,
                  (long) rl.rlim_max);
      return;
    }
  int r = close_fds_child (high, false);
  tap_ok (r == 0, "close_fds_except (close_range) closes fd %d, keeps the kept ones (child status %d)", high, r);
  r = close_fds_child (high, true);
  tap_ok (r == 0, "close_fds_except (/proc/self/fd) closes fd %d, keeps the kept ones (child status %d)", high, r);
}

int
main (void)
{
  tap_plan (57);
  test_env_list ();
  test_read_fd ();
  test_printable ();
  test_cleanups ();
  test_close_fds ();
  test_encodings ();
  test_parse_int ();
  test_parse_memory ();
  test_double ();
  test_names ();
  test_env ();
  test_atomic ();
  return tap_done ();
}
