/* Unit tests of registry credentials (src/lib/regauth.c).
 *
 * The base64 codec; one file's entries: host keys, docker's URL keys and
 * docker.io's aliases, repository prefixes (the longest wins, on component
 * boundaries), identity tokens, entries with nothing in them; files that do
 * not parse, each INVALID_ARGUMENT naming the file and never its content;
 * the order of the four files a lookup reads; login's writer (mode 0600
 * whatever the umask, an entry replaced, the others and unknown keys kept,
 * bad input refused with the file untouched, concurrent logins all kept);
 * logout of one registry (NOT_FOUND when absent) and --all. Nothing here
 * needs root. */
#include "config.h"
#include "regauth-internal.h"
#include "regauth.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/sbx-test-regauth.XXXXXX";

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

/* {"auths": {KEY: {"auth": base64(USERPASS)}}} */
static char *
auth_entry (const char *key, const char *userpass)
{
  _cleanup_free_ char *b = base64_encode (userpass, strlen (userpass));
  return xasprintf ("\"%s\": {\"auth\": \"%s\"}", key, b);
}

static char *
one_file (const char *key, const char *userpass)
{
  _cleanup_free_ char *e = auth_entry (key, userpass);
  return xasprintf ("{\"auths\": {%s}}", e);
}

static bool
cred_is (const sbx_cred *c, const char *user, const char *pass)
{
  return c && strcmp (c->username, user) == 0 && strcmp (c->password, pass) == 0;
}

static sbx_cred *
parse_find (const char *text, const char *registry, const char *repo, sbx_error **err)
{
  sbx_cred *c = NULL;
  if (sbx_auth_parse ("t.json", text, strlen (text), registry, repo, &c, err) < 0)
    return NULL;
  return c;
}

static void
test_base64 (void)
{
  static const char *const good[][2] = {
    { "", "" }, { "Zg==", "f" }, { "Zm8=", "fo" }, { "Zm9v", "foo" }, { "Zm9vYg==", "foob" }, { "dTpw", "u:p" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (good); i++)
    {
      char *out = NULL;
      size_t n;
      int r = sbx_base64_decode (good[i][0], strlen (good[i][0]), &out, &n);
      tap_ok (r == 0 && n == strlen (good[i][1]) && memcmp (out, good[i][1], n) == 0, "base64 `%s` decodes",
              good[i][0]);
      free (out);
      _cleanup_free_ char *enc = base64_encode (good[i][1], strlen (good[i][1]));
      tap_ok (strcmp (enc, good[i][0]) == 0, "base64 encodes `%s` back", good[i][1]);
    }
  static const char *const bad[] = { "Zg", "Zg=", "Z===", "=Zg=", "Zg=a", "Zm9v\n", "Zm 9", "Zm9-", "Zg==Zg==" };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      char *out = NULL;
      _cleanup_free_ char *q = printable_escaped (bad[i], 32);
      tap_ok (sbx_base64_decode (bad[i], strlen (bad[i]), &out, NULL) == -EINVAL && out == NULL,
              "base64: refused: `%s`", q);
    }
}

static void
test_keys (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_free_ char *a = auth_entry ("localhost:5000", "alice:pw1");
  _cleanup_free_ char *b = auth_entry ("https://index.docker.io/v1/", "bob:pw2");
  _cleanup_free_ char *c1 = auth_entry ("quay.io", "carol:any");
  _cleanup_free_ char *c2 = auth_entry ("quay.io/team", "carol:team");
  _cleanup_free_ char *c3 = auth_entry ("quay.io/team/app/", "carol:app");
  _cleanup_free_ char *d = auth_entry ("http://[::1]:5000", "dave:pw:with:colons");
  _cleanup_free_ char
      *text = xasprintf ("{\"auths\": {%s, %s, %s, %s, %s, %s, \"ghcr.io\": {}, \"tok.example\": {\"auth\": \"%s\", "
                         "\"identitytoken\": \"TOKEN\"}}, \"credsStore\": \"desktop\", \"psFormat\": \"x\"}",
                         a, b, c1, c2, c3, d, "PHRva2VuPjo=");
  sbx_cred *c;

  c = parse_find (text, "localhost:5000", "x/y", &err);
  tap_ok (cred_is (c, "alice", "pw1"), "a host key (%s)", errmsg (err));
  sbx_cred_free (c);
  c = parse_find (text, "localhost:5001", "x/y", &err);
  tap_ok (c == NULL && err == NULL, "another port is another registry");
  c = parse_find (text, "docker.io", "library/python", &err);
  tap_ok (cred_is (c, "bob", "pw2"), "docker's URL key https://index.docker.io/v1/ serves docker.io (%s)",
          errmsg (err));
  sbx_cred_free (c);
  c = parse_find (text, "index.docker.io", "library/python", &err);
  tap_ok (cred_is (c, "bob", "pw2"), "index.docker.io is docker.io (%s)", errmsg (err));
  sbx_cred_free (c);
  c = parse_find (text, "quay.io", "other/app", &err);
  tap_ok (cred_is (c, "carol", "any"), "no prefix matches: the registry's key");
  sbx_cred_free (c);
  c = parse_find (text, "quay.io", "team/web", &err);
  tap_ok (cred_is (c, "carol", "team"), "the prefix quay.io/team");
  sbx_cred_free (c);
  c = parse_find (text, "quay.io", "team/app", &err);
  tap_ok (cred_is (c, "carol", "app"), "the longest prefix wins (quay.io/team/app/)");
  sbx_cred_free (c);
  c = parse_find (text, "quay.io", "team/app/sub", &err);
  tap_ok (cred_is (c, "carol", "app"), "a prefix matches the repositories below it");
  sbx_cred_free (c);
  c = parse_find (text, "quay.io", "teamx/app", &err);
  tap_ok (cred_is (c, "carol", "any"), "a prefix matches whole components only (teamx is not team)");
  sbx_cred_free (c);
  c = parse_find (text, "quay.io", NULL, &err);
  tap_ok (cred_is (c, "carol", "any"), "no repository: the registry's key");
  sbx_cred_free (c);
  c = parse_find (text, "[::1]:5000", "r", &err);
  tap_ok (cred_is (c, "dave", "pw:with:colons"), "an http:// URL key, IPv6, a password with colons (%s)", errmsg (err));
  sbx_cred_free (c);
  c = parse_find (text, "ghcr.io", "r", &err);
  tap_ok (c == NULL && err == NULL, "an empty entry (a credential helper's) holds no credentials");
  c = parse_find (text, "tok.example", "r", &err);
  tap_ok (cred_is (c, "<token>", "TOKEN"), "an identity token is the password (%s)", errmsg (err));
  sbx_cred_free (c);

  c = parse_find ("{}", "quay.io", "r", &err);
  tap_ok (c == NULL && err == NULL, "a file without auths has nothing");
  c = parse_find ("{\"auths\": null, \"credHelpers\": {\"quay.io\": \"x\"}}", "quay.io", "r", &err);
  tap_ok (c == NULL && err == NULL, "credHelpers are not run");
}

static void
test_bad_files (void)
{
  static const char *const bad[][2] = {
    { "", "t.json: not valid JSON" },
    { "{\"auths\": {\"quay.io\": {\"auth\": \"SECRETSECRET\"", "t.json: not valid JSON" },
    { "[\"SECRETSECRET\"]", "t.json: not a JSON object" },
    { "{\"auths\": [\"SECRETSECRET\"]}", "t.json: `auths` is not an object" },
    { "{\"auths\": {\"quay.io\": \"SECRETSECRET\"}}", "t.json: auths `quay.io`: not an object" },
    { "{\"auths\": {\"other.io\": {\"auth\": 12}}}", "t.json: auths `other.io`: `auth` is not a string" },
    { "{\"auths\": {\"quay.io\": {\"identitytoken\": [1]}}}", "t.json: auths `quay.io`: `identitytoken` is not a" },
    { "{\"auths\": {\"quay.io\": {\"auth\": \"SECRETSECRET!\"}}}", "t.json: auths `quay.io`: `auth` is not base64" },
    /* base64 ("SECRETSECRET") has no colon */
    { "{\"auths\": {\"quay.io\": {\"auth\": \"U0VDUkVUU0VDUkVU\"}}}", "`auth` is not base64 of USER:PASSWORD" },
    /* base64 (":SECRETSECRET"): no user name */
    { "{\"auths\": {\"quay.io\": {\"auth\": \"OlNFQ1JFVFNFQ1JFVA==\"}}}", "a user name or password that is empty" },
    { "{\"auths\": {}}\0", "t.json: not a JSON file (a NUL byte)" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      _cleanup_error_ sbx_error *err = NULL;
      sbx_cred *c = NULL;
      size_t len = strlen (bad[i][0]) + (strstr (bad[i][1], "NUL") ? 1 : 0);
      int r = sbx_auth_parse ("t.json", bad[i][0], len, "quay.io", "r", &c, &err);
      tap_ok (r < 0 && c == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, bad[i][1])
                  && strstr (err->msg, "SECRET") == NULL,
              "refused, the file named, its content not: %s (%s)", bad[i][1], errmsg (err));
    }
  _cleanup_error_ sbx_error *err = NULL;
  sbx_cred *c = parse_find ("{\"auths\": {\"other.io\": {\"auth\": \"!!\"}, \"quay.io\": {\"auth\": \"dTpw\"}}}",
                            "quay.io", "r", &err);
  tap_ok (cred_is (c, "u", "p"), "an entry of another registry is decoded only when asked for (%s)", errmsg (err));
  sbx_cred_free (c);
  size_t big = SBX_AUTH_FILE_MAX + 1;
  char *huge = xmalloc (big);
  memset (huge, ' ', big);
  huge[0] = '{', huge[big - 1] = '}';
  c = NULL;
  int r = sbx_auth_parse ("t.json", huge, big, "quay.io", "r", &c, &err);
  tap_ok (r < 0 && err && strstr (err->msg, "larger than"), "a file over SBX_AUTH_FILE_MAX is refused (%s)",
          errmsg (err));
  free (huge);
}

static char *
tmp_path (const char *name)
{
  return xasprintf ("%s/%s", tmpdir, name);
}

static void
put (const char *name, const char *text)
{
  _cleanup_free_ char *p = tmp_path (name);
  if (write_file_atomic (p, text, strlen (text), 0600, NULL) < 0)
    abort ();
}

static sbx_cred *
lookup (const char *root, const char *registry, sbx_error **err)
{
  sbx_cred *c = NULL;
  if (sbx_auth_lookup (root, registry, "ns/repo", &c, err) < 0)
    return NULL;
  return c;
}

static void
test_order (void)
{
  _cleanup_free_ char *root = tmp_path ("root");
  _cleanup_free_ char *xdg = tmp_path ("xdg");
  _cleanup_free_ char *home = tmp_path ("home");
  _cleanup_free_ char *regfile = tmp_path ("regauth.json");
  mkdir (root, 0700), mkdir (xdg, 0700), mkdir (home, 0700);
  _cleanup_free_ char *xdgc = tmp_path ("xdg/containers");
  _cleanup_free_ char *dock = tmp_path ("home/.docker");
  mkdir (xdgc, 0700), mkdir (dock, 0700);
  setenv ("REGISTRY_AUTH_FILE", regfile, 1);
  setenv ("XDG_RUNTIME_DIR", xdg, 1);
  setenv ("HOME", home, 1);

  _cleanup_error_ sbx_error *err = NULL;
  sbx_cred *c = lookup (root, "a.example", &err);
  tap_ok (c == NULL && err == NULL, "no file at all: no credentials, no error");

  _cleanup_free_ char *f1 = one_file ("a.example", "home:1");
  put ("home/.docker/config.json", f1);
  c = lookup (root, "a.example", &err);
  tap_ok (cred_is (c, "home", "1"), "found in ~/.docker/config.json (%s)", errmsg (err));
  sbx_cred_free (c);
  _cleanup_free_ char *f2 = one_file ("a.example", "xdg:2");
  put ("xdg/containers/auth.json", f2);
  c = lookup (root, "a.example", &err);
  tap_ok (cred_is (c, "xdg", "2"), "${XDG_RUNTIME_DIR}/containers/auth.json comes before it (%s)", errmsg (err));
  sbx_cred_free (c);
  _cleanup_free_ char *f3 = one_file ("a.example", "env:3");
  put ("regauth.json", f3);
  c = lookup (root, "a.example", &err);
  tap_ok (cred_is (c, "env", "3"), "$REGISTRY_AUTH_FILE comes before both (%s)", errmsg (err));
  sbx_cred_free (c);
  tap_ok (sbx_auth_store (root, "a.example", "root", "4", &err) == 0, "login stores (%s)", errmsg (err));
  c = lookup (root, "a.example", &err);
  tap_ok (cred_is (c, "root", "4"), "ROOT/auth.json comes first (%s)", errmsg (err));
  sbx_cred_free (c);

  _cleanup_free_ char *f4 = one_file ("b.example", "home:5");
  put ("home/.docker/config.json", f4);
  c = lookup (root, "b.example", &err);
  tap_ok (cred_is (c, "home", "5"), "a registry the first files do not have is looked up in the next (%s)",
          errmsg (err));
  sbx_cred_free (c);
  c = lookup (NULL, "a.example", &err);
  tap_ok (cred_is (c, "env", "3"), "no ROOT: the other files (%s)", errmsg (err));
  sbx_cred_free (c);

  put ("xdg/containers/auth.json", "{\"auths\": {\"b.example\": {\"auth\": \"SECRET=\"}}");
  c = lookup (root, "b.example", &err);
  tap_ok (c == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, xdgc)
              && strstr (err->msg, "not valid JSON") && !strstr (err->msg, "SECRET"),
          "a broken file on the way is an error naming it (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  c = lookup (root, "a.example", &err);
  tap_ok (cred_is (c, "root", "4"), "files after the one that has the registry are not read (%s)", errmsg (err));
  sbx_cred_free (c);
  _cleanup_free_ char *xdgf = tmp_path ("xdg/containers/auth.json");
  unlink (xdgf);
  mkdir (xdgf, 0700);
  c = lookup (root, "b.example", &err);
  tap_ok (c == NULL && err && strstr (err->msg, "not a regular file"), "a directory in a file's place (%s)",
          errmsg (err));
  sbx_error_free (steal_pointer (&err));
  rmdir (xdgf);
  unsetenv ("REGISTRY_AUTH_FILE");
  unsetenv ("XDG_RUNTIME_DIR");
  unsetenv ("HOME");
  c = lookup (root, "b.example", &err);
  tap_ok (c == NULL && err == NULL, "without the variables only ROOT/auth.json is read (%s)", errmsg (err));
}

static mode_t
mode_of (const char *p)
{
  struct stat st;
  return stat (p, &st) == 0 ? st.st_mode & 07777 : (mode_t) -1;
}

static char *
read_text (const char *p)
{
  char *t = NULL;
  size_t n;
  if (read_file (p, 1 << 20, &t, &n, NULL) < 0)
    return NULL;
  return t;
}

static void
test_store (void)
{
  _cleanup_free_ char *root = tmp_path ("store");
  _cleanup_free_ char *file = tmp_path ("store/auth.json");
  mkdir (root, 0755);
  _cleanup_error_ sbx_error *err = NULL;
  mode_t old = umask (0);
  int r = sbx_auth_store (root, "localhost:5000", "alice", "s3cret", &err);
  umask (old);
  tap_ok (r == 0 && mode_of (file) == 0600, "auth.json is written mode 0600 even with umask 0 (%o, %s)", mode_of (file),
          errmsg (err));
  _cleanup_free_ char *t = read_text (file);
  tap_ok (t && strstr (t, "\"localhost:5000\"") && strstr (t, "YWxpY2U6czNjcmV0") && !strstr (t, "s3cret"),
          "the entry is {\"auth\": base64(USER:PASSWORD)}");
  sbx_cred *c = lookup (root, "localhost:5000", &err);
  tap_ok (cred_is (c, "alice", "s3cret"), "and reads back (%s)", errmsg (err));
  sbx_cred_free (c);

  /* Keys and entries sbx does not write are kept. */
  _cleanup_free_ char *e = auth_entry ("https://index.docker.io/v1/", "bob:pw");
  _cleanup_free_ char *hand = xasprintf ("{\"auths\": {%s, \"quay.io/x\": {\"auth\": \"dTpw\", \"email\": \"e\"}}, "
                                         "\"note\": [1, true]}",
                                         e);
  put ("store/auth.json", hand);
  r = sbx_auth_store (root, "quay.io/x", "carol", "pw2", &err);
  free (t);
  t = read_text (file);
  c = lookup (root, "quay.io", &err);
  tap_ok (r == 0 && c == NULL, "a prefix login is only for that prefix (%s)", errmsg (err));
  c = lookup (root, "docker.io", &err);
  tap_ok (cred_is (c, "bob", "pw"), "other entries are kept");
  sbx_cred_free (c);
  sbx_cred *cx = NULL;
  sbx_auth_lookup (root, "quay.io", "x/app", &cx, &err);
  tap_ok (cred_is (cx, "carol", "pw2") && t && strstr (t, "\"note\"") && !strstr (t, "email"),
          "an entry is replaced whole; other top-level keys are kept");
  sbx_cred_free (cx);
  r = sbx_auth_store (root, "index.docker.io", "bob", "new", &err);
  free (t);
  t = read_text (file);
  c = lookup (root, "docker.io", &err);
  tap_ok (r == 0 && cred_is (c, "bob", "new") && t && strstr (t, "\"docker.io\"") && !strstr (t, "index.docker.io"),
          "a login to index.docker.io replaces docker.io's entry, URL keys included (%s)", errmsg (err));
  sbx_cred_free (c);

  static const char *const bad[][4] = {
    { "localhost:5000", "", "pw", "the user name must be" },
    { "localhost:5000", "a:b", "pw", "the user name must be" },
    { "localhost:5000", "al\nice", "pw", "the user name must be" },
    { "localhost:5000", "alice", "", "the password must be" },
    { "localhost:5000", "alice", "SECRET\rX", "the password must be" },
    { "localhost:5000", "alice", "SECRET\x7f", "the password must be" },
    { "https://x.io", "alice", "pw", "is not a registry" },
    { "", "alice", "pw", "is not a registry" },
    { "x.io/", "alice", "pw", "is not a registry" },
    { "x io", "alice", "pw", "is not a registry" },
  };
  free (t);
  t = read_text (file);
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      sbx_error_free (steal_pointer (&err));
      r = sbx_auth_store (root, bad[i][0], bad[i][1], bad[i][2], &err);
      _cleanup_free_ char *after = read_text (file);
      tap_ok (r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, bad[i][3])
                  && !strstr (err->msg, "SECRET") && after && strcmp (after, t) == 0,
              "login refused, the file untouched: %s (%s)", bad[i][3], errmsg (err));
    }
  char *longpw = xmalloc (SBX_AUTH_FIELD_MAX + 2);
  memset (longpw, 'p', SBX_AUTH_FIELD_MAX + 1);
  longpw[SBX_AUTH_FIELD_MAX + 1] = '\0';
  sbx_error_free (steal_pointer (&err));
  tap_ok (sbx_auth_store (root, "l.io", "u", longpw, &err) < 0, "a password over SBX_AUTH_FIELD_MAX is refused");
  free (longpw);

  put ("store/auth.json", "{\"auths\": SECRET");
  sbx_error_free (steal_pointer (&err));
  r = sbx_auth_store (root, "z.io", "u", "p", &err);
  free (t);
  t = read_text (file);
  tap_ok (r < 0 && err && strstr (err->msg, "not valid JSON") && strstr (err->msg, file) && t
              && strcmp (t, "{\"auths\": SECRET") == 0,
          "a broken auth.json is not overwritten by login (%s)", errmsg (err));
}

static void
test_concurrent (void)
{
  _cleanup_free_ char *root = tmp_path ("conc");
  mkdir (root, 0755);
  enum { N = 8, EACH = 10 };
  pid_t pids[N];
  for (int i = 0; i < N; i++)
    {
      pids[i] = fork ();
      if (pids[i] == 0)
        {
          for (int j = 0; j < EACH; j++)
            {
              char reg[64];
              snprintf (reg, sizeof reg, "r%d-%d.example", i, j);
              if (sbx_auth_store (root, reg, "u", "p", NULL) < 0)
                _exit (1);
            }
          _exit (0);
        }
    }
  bool ok = true;
  for (int i = 0; i < N; i++)
    {
      int st;
      ok &= waitpid (pids[i], &st, 0) == pids[i] && WIFEXITED (st) && WEXITSTATUS (st) == 0;
    }
  int found = 0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < EACH; j++)
      {
        char reg[64];
        snprintf (reg, sizeof reg, "r%d-%d.example", i, j);
        sbx_cred *c = NULL;
        if (sbx_auth_lookup (root, reg, NULL, &c, NULL) == 0 && c)
          found++;
        sbx_cred_free (c);
      }
  tap_ok (ok && found == N * EACH, "%d processes logging in at once: all %d entries kept (%d)", N, N * EACH, found);
}

static void
test_remove (void)
{
  _cleanup_free_ char *root = tmp_path ("rm");
  _cleanup_free_ char *file = tmp_path ("rm/auth.json");
  mkdir (root, 0755);
  _cleanup_error_ sbx_error *err = NULL;
  int r = sbx_auth_remove (root, "quay.io", false, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_NOT_FOUND && strstr (err->msg, "not logged in to quay.io"),
          "logout without auth.json: NOT_FOUND (%s)", errmsg (err));
  sbx_error_free (steal_pointer (&err));
  r = sbx_auth_remove (root, NULL, true, &err);
  tap_ok (r == 0 && !path_exists (file), "logout --all without auth.json is fine (%s)", errmsg (err));

  sbx_auth_store (root, "quay.io", "u", "p", NULL);
  sbx_auth_store (root, "localhost:5000", "u", "p", NULL);
  r = sbx_auth_remove (root, "ghcr.io", false, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_NOT_FOUND, "logout of a registry without an entry: NOT_FOUND (%s)",
          errmsg (err));
  sbx_error_free (steal_pointer (&err));
  r = sbx_auth_remove (root, "quay.io", false, &err);
  sbx_cred *a = lookup (root, "quay.io", &err), *b = lookup (root, "localhost:5000", &err);
  tap_ok (r == 0 && a == NULL && b != NULL && mode_of (file) == 0600, "logout removes one entry, keeps the other");
  sbx_cred_free (b);
  r = sbx_auth_remove (root, "quay.io", false, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_NOT_FOUND, "twice: NOT_FOUND");
  sbx_error_free (steal_pointer (&err));
  r = sbx_auth_remove (root, "bad registry", false, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT, "logout of a bad name: INVALID_ARGUMENT (%s)",
          errmsg (err));
  sbx_error_free (steal_pointer (&err));

  /* Entries elsewhere are never touched. */
  _cleanup_free_ char *f = one_file ("quay.io", "home:1");
  _cleanup_free_ char *home = tmp_path ("rmhome");
  _cleanup_free_ char *dock = tmp_path ("rmhome/.docker");
  mkdir (home, 0700), mkdir (dock, 0700);
  put ("rmhome/.docker/config.json", f);
  setenv ("HOME", home, 1);
  r = sbx_auth_remove (root, "quay.io", false, &err);
  _cleanup_free_ char *cfg = tmp_path ("rmhome/.docker/config.json");
  _cleanup_free_ char *after = read_text (cfg);
  tap_ok (r < 0 && err && err->code == SBX_E_NOT_FOUND && after && strcmp (after, f) == 0,
          "logout does not touch ~/.docker/config.json");
  sbx_error_free (steal_pointer (&err));
  unsetenv ("HOME");

  sbx_auth_store (root, "quay.io", "u", "p", NULL);
  r = sbx_auth_remove (root, NULL, true, &err);
  tap_ok (r == 0 && !path_exists (file), "logout --all removes auth.json (%s)", errmsg (err));
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
  unsetenv ("REGISTRY_AUTH_FILE");
  unsetenv ("XDG_RUNTIME_DIR");
  unsetenv ("HOME");
  test_base64 ();
  test_keys ();
  test_bad_files ();
  test_order ();
  test_store ();
  test_concurrent ();
  test_remove ();
  tap_plan (tap_n);
  return tap_done ();
}
