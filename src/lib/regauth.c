/* Registry credentials (see regauth.h): the containers-auth.json(5) reader
 * shared by the four files a lookup reads, the writer of ROOT/auth.json
 * (under ROOT/auth.json.lock, so that two logins at once keep both entries;
 * a temp file written 0600, fsynced and renamed), and the small base64
 * codec the "auth" field needs. Secrets are wiped (explicit_bzero) from
 * every buffer that held them before it is freed: the file's text, the
 * parsed tree, the generated document. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "regauth-internal.h"
#include "regauth.h"
#include "util.h"

#define AUTH_FILE "auth.json"
#define AUTH_LOCK "auth.json.lock"
#define REGISTRY_KEY_MAX 512

/* ---- secrets ---- */

static void
wipe (char *s, size_t n)
{
  if (s)
    explicit_bzero (s, n);
}

static void
wipe_str (char *s)
{
  if (s)
    explicit_bzero (s, strlen (s));
}

/* A buffer that held a secret: wiped, then freed. */
typedef struct secret {
  char *p;
  size_t n;
} secret;

static void
secret_freep (secret *s)
{
  wipe (s->p, s->n);
  free (s->p);
}
#define _cleanup_secret_ __attribute__ ((cleanup (secret_freep)))

static void
tree_wipe (yajl_val v)
{
  if (v == NULL)
    return;
  if (YAJL_IS_STRING (v))
    wipe_str (v->u.string);
  else if (YAJL_IS_NUMBER (v))
    wipe_str (v->u.number.r);
  else if (YAJL_IS_OBJECT (v))
    for (size_t i = 0; i < v->u.object.len; i++)
      {
        wipe_str ((char *) v->u.object.keys[i]);
        tree_wipe (v->u.object.values[i]);
      }
  else if (YAJL_IS_ARRAY (v))
    for (size_t i = 0; i < v->u.array.len; i++)
      tree_wipe (v->u.array.values[i]);
}

static void
tree_wipe_freep (yajl_val *v)
{
  if (*v)
    {
      tree_wipe (*v);
      yajl_tree_free (*v);
    }
}
#define _cleanup_tree_ __attribute__ ((cleanup (tree_wipe_freep)))

static void
gen_wipe_freep (yajl_gen *g)
{
  if (*g == NULL)
    return;
  const unsigned char *buf;
  size_t len;
  if (yajl_gen_get_buf (*g, &buf, &len) == yajl_gen_status_ok)
    wipe ((char *) buf, len);
  yajl_gen_free (*g);
}
#define _cleanup_gen_ __attribute__ ((cleanup (gen_wipe_freep)))

/* ---- base64 ---- */

static int
b64_value (unsigned char c)
{
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

int
sbx_base64_decode (const char *s, size_t n, char **ret, size_t *ret_len)
{
  if (n % 4 != 0)
    return -EINVAL;
  char *out = xmalloc (n / 4 * 3 + 1);
  size_t o = 0;
  for (size_t i = 0; i < n; i += 4)
    {
      int v[4];
      size_t pad = 0;
      for (size_t j = 0; j < 4; j++)
        {
          unsigned char c = (unsigned char) s[i + j];
          /* '=' only at the end: "xx==" or "xxx=". */
          if (c == '=' && i + 4 == n && j >= 2 && (j == 3 || s[i + 3] == '='))
            {
              v[j] = 0;
              pad++;
              continue;
            }
          if (pad || (v[j] = b64_value (c)) < 0)
            {
              wipe (out, o);
              free (out);
              return -EINVAL;
            }
        }
      uint32_t x = (uint32_t) v[0] << 18 | (uint32_t) v[1] << 12 | (uint32_t) v[2] << 6 | (uint32_t) v[3];
      out[o++] = (char) (x >> 16);
      if (pad < 2)
        out[o++] = (char) (x >> 8);
      if (pad < 1)
        out[o++] = (char) x;
    }
  out[o] = '\0';
  *ret = out;
  if (ret_len)
    *ret_len = o;
  return 0;
}

/* ---- keys ---- */

/* docker.io's other names, as docker and podman write them. */
static const char *
host_alias (const char *host, size_t n)
{
  static const char *const aliases[] = { "index.docker.io", "registry-1.docker.io", "docker.io" };
  for (size_t i = 0; i < ARRAY_SIZE (aliases); i++)
    if (strlen (aliases[i]) == n && strncasecmp (host, aliases[i], n) == 0)
      return "docker.io";
  return NULL;
}

typedef struct key {
  char *host; /* "HOST[:PORT]", docker.io for its aliases */
  char *path; /* a repository prefix without slashes at the ends; NULL: the whole registry */
} key;

static void
key_clear (key *k)
{
  free (k->host);
  free (k->path);
}

/* A key of "auths": HOST[:PORT][/PREFIX], or a URL ("https://HOST/v1/")
 * whose path is docker's API version, not a prefix. */
static void
key_split (const char *s, key *ret)
{
  bool url = false;
  if (strncasecmp (s, "https://", 8) == 0)
    s += 8, url = true;
  else if (strncasecmp (s, "http://", 7) == 0)
    s += 7, url = true;
  size_t hl = strcspn (s, "/");
  const char *alias = host_alias (s, hl);
  ret->host = alias ? xstrdup (alias) : xstrndup (s, hl);
  ret->path = NULL;
  const char *p = s + hl;
  while (*p == '/')
    p++;
  size_t pl = strlen (p);
  while (pl > 0 && p[pl - 1] == '/')
    pl--;
  if (!url && pl > 0)
    ret->path = xstrndup (p, pl);
}

/* How well key K matches REGISTRY (normalized) and REPOSITORY: -1 not at
 * all, 0 the whole registry, else 1 + the prefix's length. */
static long
key_score (const key *k, const char *registry, const char *repository)
{
  if (strcasecmp (k->host, registry) != 0)
    return -1;
  if (k->path == NULL)
    return 0;
  size_t n = strlen (k->path);
  if (repository == NULL || strncmp (repository, k->path, n) != 0 || (repository[n] != '\0' && repository[n] != '/'))
    return -1;
  return (long) n + 1;
}

static char *
registry_normalized (const char *registry)
{
  key k;
  key_split (registry, &k);
  if (k.path == NULL)
    return k.host;
  char *s = xasprintf ("%s/%s", k.host, k.path);
  key_clear (&k);
  return s;
}

/* ---- reading ---- */

static int
field_str (const char *name, const char *k, yajl_val entry, const char *field, const char **ret, sbx_error **err)
{
  yajl_val v = j_get (entry, field);
  if (v == NULL || YAJL_IS_NULL (v))
    return 0;
  if (!YAJL_IS_STRING (v))
    {
      _cleanup_free_ char *q = printable_escaped (k, 128);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: auths `%s`: `%s` is not a string", name, q, field);
    }
  *ret = v->u.string;
  return 0;
}

static bool
field_ok (const char *s, size_t n)
{
  return n > 0 && n <= SBX_AUTH_FIELD_MAX && memchr (s, '\0', n) == NULL;
}

/* The credential of ENTRY (key K of file NAME); *RET NULL when it holds
 * none (docker writes `{}` for registries a credential helper serves). */
static int
entry_cred (const char *name, const char *k, yajl_val entry, sbx_cred **ret, sbx_error **err)
{
  const char *auth = NULL, *token = NULL;
  if (field_str (name, k, entry, "auth", &auth, err) < 0
      || field_str (name, k, entry, "identitytoken", &token, err) < 0)
    return -1;
  *ret = NULL;
  if ((auth == NULL || *auth == '\0') && (token == NULL || *token == '\0'))
    return 0;
  _cleanup_free_ char *q = printable_escaped (k, 128);
  _cleanup_secret_ secret plain = { 0 };
  const char *user = "<token>";
  size_t ul = strlen (user);
  const char *pass = NULL;
  size_t pl = 0;
  if (auth && *auth)
    {
      if (sbx_base64_decode (auth, strlen (auth), &plain.p, &plain.n) < 0)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: auths `%s`: `auth` is not base64", name, q);
      char *colon = memchr (plain.p, ':', plain.n);
      if (colon == NULL)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: auths `%s`: `auth` is not base64 of USER:PASSWORD",
                              name, q);
      user = plain.p, ul = (size_t) (colon - plain.p);
      pass = colon + 1, pl = plain.n - ul - 1;
    }
  if (token && *token)
    pass = token, pl = strlen (token);
  if (!field_ok (user, ul) || !field_ok (pass, pl))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "%s: auths `%s`: a user name or password that is empty, longer than %d bytes or holds a "
                          "NUL byte",
                          name, q, SBX_AUTH_FIELD_MAX);
  sbx_cred *c = xmalloc0 (sizeof *c);
  c->username = xstrndup (user, ul);
  c->password = xstrndup (pass, pl);
  *ret = c;
  return 0;
}

/* The parsed file's "auths" object, or NULL when it has none. */
static int
file_auths (const char *name, yajl_val top, yajl_val *ret, sbx_error **err)
{
  if (!YAJL_IS_OBJECT (top))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: not a JSON object", name);
  yajl_val auths = j_get (top, "auths");
  if (auths && YAJL_IS_NULL (auths))
    auths = NULL;
  if (auths && !YAJL_IS_OBJECT (auths))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: `auths` is not an object", name);
  for (size_t i = 0; auths && i < auths->u.object.len; i++)
    {
      const char *k = auths->u.object.keys[i];
      yajl_val e = auths->u.object.values[i];
      const char *s;
      if (!YAJL_IS_OBJECT (e))
        {
          _cleanup_free_ char *q = printable_escaped (k, 128);
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: auths `%s`: not an object", name, q);
        }
      if (field_str (name, k, e, "auth", &s, err) < 0 || field_str (name, k, e, "identitytoken", &s, err) < 0)
        return -1;
    }
  *ret = auths;
  return 0;
}

static int
parse_text (const char *name, const char *text, size_t len, yajl_val *ret, sbx_error **err)
{
  if (len > SBX_AUTH_FILE_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: larger than %d bytes", name, SBX_AUTH_FILE_MAX);
  if (memchr (text, '\0', len))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: not a JSON file (a NUL byte)", name);
  _cleanup_secret_ secret copy = { xstrndup (text, len), len };
  char ebuf[128] = "";
  /* yajl's message quotes the text near the error: that could be a
   * secret, so only that it failed is said. */
  yajl_val v = yajl_tree_parse (copy.p, ebuf, sizeof ebuf);
  wipe (ebuf, sizeof ebuf);
  if (v == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: not valid JSON", name);
  *ret = v;
  return 0;
}

int
sbx_auth_parse (const char *name, const char *text, size_t len, const char *registry, const char *repository,
                sbx_cred **ret, sbx_error **err)
{
  _cleanup_tree_ yajl_val top = NULL;
  yajl_val auths;
  if (parse_text (name, text, len, &top, err) < 0 || file_auths (name, top, &auths, err) < 0)
    return -1;
  _cleanup_free_ char *reg = registry_normalized (registry);
  sbx_cred *best = NULL;
  long best_score = -1;
  for (size_t i = 0; auths && i < auths->u.object.len; i++)
    {
      key k;
      key_split (auths->u.object.keys[i], &k);
      long score = key_score (&k, reg, repository);
      key_clear (&k);
      if (score <= best_score)
        continue;
      sbx_cred *c;
      if (entry_cred (name, auths->u.object.keys[i], auths->u.object.values[i], &c, err) < 0)
        {
          sbx_cred_free (best);
          return -1;
        }
      if (c == NULL)
        continue;
      sbx_cred_free (best);
      best = c, best_score = score;
    }
  *ret = best;
  return 0;
}

/* PATH's text: NOT_FOUND when there is no such file, INVALID_ARGUMENT
 * naming it for anything else that keeps it from being read. */
static int
read_auth_file (const char *path, secret *ret, sbx_error **err)
{
  /* O_NONBLOCK: a FIFO planted there must not hang the open. */
  _cleanup_close_ int fd = open (path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return sbx_error_set (err, errno == ENOENT || errno == ENOTDIR ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, errno,
                          "%s: cannot open", path);
  struct stat st;
  if (fstat (fd, &st) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, errno, "%s: cannot stat", path);
  if (!S_ISREG (st.st_mode))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: not a regular file", path);
  int r = read_fd (fd, SBX_AUTH_FILE_MAX, &ret->p, &ret->n);
  if (r == -EFBIG)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: larger than %d bytes", path, SBX_AUTH_FILE_MAX);
  if (r < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, -r, "%s: cannot read", path);
  return 0;
}

static char *
env_path (const char *var, const char *suffix)
{
  const char *v = getenv (var);
  if (v == NULL || *v == '\0')
    return NULL;
  return xasprintf ("%s%s", v, suffix);
}

int
sbx_auth_lookup (const char *root, const char *registry, const char *repository, sbx_cred **ret, sbx_error **err)
{
  char *paths[4] = {
    root ? xasprintf ("%s/" AUTH_FILE, root) : NULL,
    env_path ("REGISTRY_AUTH_FILE", ""),
    env_path ("XDG_RUNTIME_DIR", "/containers/auth.json"),
    env_path ("HOME", "/.docker/config.json"),
  };
  int r = 0;
  sbx_cred *found = NULL;
  for (size_t i = 0; i < ARRAY_SIZE (paths) && r == 0 && found == NULL; i++)
    {
      if (paths[i] == NULL)
        continue;
      _cleanup_secret_ secret text = { 0 };
      _cleanup_error_ sbx_error *e = NULL;
      if (read_auth_file (paths[i], &text, &e) < 0)
        {
          if (e->code != SBX_E_NOT_FOUND)
            r = sbx_error_set (err, e->code, e->errnum, "%s", e->msg);
          continue;
        }
      r = sbx_auth_parse (paths[i], text.p, text.n, registry, repository, &found, err);
    }
  for (size_t i = 0; i < ARRAY_SIZE (paths); i++)
    free (paths[i]);
  if (r < 0)
    return -1;
  *ret = found;
  return 0;
}

/* ---- writing ROOT/auth.json ---- */

/* HOST[:PORT][/PREFIX]: what a registry key may be. */
static bool
registry_key_valid (const char *s)
{
  size_t n = strlen (s);
  if (n == 0 || n > REGISTRY_KEY_MAX || s[0] == '/' || s[n - 1] == '/' || strstr (s, "//"))
    return false;
  return strspn (s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:[]/") == n;
}

static int
check_registry (const char *what, const char *registry, sbx_error **err)
{
  if (registry == NULL || !registry_key_valid (registry))
    {
      _cleanup_free_ char *q = printable_escaped (registry ? registry : "", 64);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                            "%s: `%s` is not a registry (HOST[:PORT], such as quay.io or localhost:5000)", what, q);
    }
  return 0;
}

static bool
has_control (const char *s)
{
  for (; *s; s++)
    if ((unsigned char) *s < 0x20 || *s == 0x7f)
      return true;
  return false;
}

/* The lock every writer of ROOT/auth.json holds; the fd, or -1. */
static int
auth_lock (const char *root, sbx_error **err)
{
  _cleanup_free_ char *p = xasprintf ("%s/" AUTH_LOCK, root);
  int fd = lock_path (p, LOCK_EX, err);
  return fd < 0 ? -1 : fd;
}

/* ROOT/auth.json parsed (*RET NULL when there is none). */
static int
auth_read_own (const char *path, yajl_val *ret, yajl_val *ret_auths, sbx_error **err)
{
  _cleanup_secret_ secret text = { 0 };
  _cleanup_error_ sbx_error *e = NULL;
  *ret = NULL, *ret_auths = NULL;
  if (read_auth_file (path, &text, &e) < 0)
    {
      if (e->code == SBX_E_NOT_FOUND)
        return 0;
      return sbx_error_set (err, e->code, e->errnum, "%s", e->msg);
    }
  _cleanup_tree_ yajl_val top = NULL;
  if (parse_text (path, text.p, text.n, &top, err) < 0 || file_auths (path, top, ret_auths, err) < 0)
    return -1;
  *ret = steal_pointer (&top);
  return 0;
}

static bool
same_key (const char *a, const char *b)
{
  _cleanup_free_ char *x = registry_normalized (a);
  _cleanup_free_ char *y = registry_normalized (b);
  return strcasecmp (x, y) == 0;
}

/* Writes TOP with "auths" replaced by AUTHS less the entries of REGISTRY
 * (NULL: none dropped), plus REGISTRY = {"auth": AUTH} when AUTH is set. */
static int
auth_write (int dirfd, const char *path, yajl_val top, yajl_val auths, const char *registry, const char *auth,
            sbx_error **err)
{
  _cleanup_gen_ yajl_gen g = j_new (true);
  j_map (g);
  j_str (g, "auths");
  j_map (g);
  for (size_t i = 0; auths && i < auths->u.object.len; i++)
    {
      if (registry && same_key (auths->u.object.keys[i], registry))
        continue;
      j_str (g, auths->u.object.keys[i]);
      j_val (g, auths->u.object.values[i]);
    }
  if (auth)
    {
      j_str (g, registry);
      j_map (g);
      j_kstr (g, "auth", auth);
      j_endmap (g);
    }
  j_endmap (g);
  for (size_t i = 0; top && i < top->u.object.len; i++)
    {
      if (strcmp (top->u.object.keys[i], "auths") == 0)
        continue;
      j_str (g, top->u.object.keys[i]);
      j_val (g, top->u.object.values[i]);
    }
  j_endmap (g);
  const unsigned char *buf;
  size_t len;
  if (yajl_gen_get_buf (g, &buf, &len) != yajl_gen_status_ok)
    abort ();
  if (write_file_atomic_at (dirfd, AUTH_FILE, buf, len, 0600, err) < 0)
    return sbx_error_wrap (err, "write %s", path);
  /* The rename is what makes the login: make it durable too. */
  if (fsync (dirfd) < 0)
    return sbx_error_errno (err, errno, "fsync the directory of %s", path);
  return 0;
}

int
sbx_auth_store (const char *root, const char *registry, const char *username, const char *password, sbx_error **err)
{
  if (check_registry ("login", registry, err) < 0)
    return -1;
  if (username == NULL || *username == '\0' || strlen (username) > SBX_AUTH_FIELD_MAX || has_control (username)
      || strchr (username, ':'))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "login: the user name must be 1 to %d bytes with no `:` and no control character",
                          SBX_AUTH_FIELD_MAX);
  if (password == NULL || *password == '\0' || strlen (password) > SBX_AUTH_FIELD_MAX || has_control (password))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "login: the password must be 1 to %d bytes with no control character", SBX_AUTH_FIELD_MAX);
  _cleanup_free_ char *reg = registry_normalized (registry);
  _cleanup_free_ char *path = xasprintf ("%s/" AUTH_FILE, root);
  _cleanup_close_ int dirfd = open (root, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (dirfd < 0)
    return sbx_error_errno (err, errno, "login: open %s", root);
  _cleanup_close_ int lock = auth_lock (root, err);
  if (lock < 0)
    return -1;
  _cleanup_tree_ yajl_val top = NULL;
  yajl_val auths;
  if (auth_read_own (path, &top, &auths, err) < 0)
    return sbx_error_wrap (err, "login");
  _cleanup_secret_ secret plain = { xasprintf ("%s:%s", username, password), 0 };
  plain.n = strlen (plain.p);
  _cleanup_secret_ secret b64 = { base64_encode (plain.p, plain.n), 0 };
  b64.n = strlen (b64.p);
  return auth_write (dirfd, path, top, auths, reg, b64.p, err) < 0 ? sbx_error_wrap (err, "login") : 0;
}

int
sbx_auth_remove (const char *root, const char *registry, bool all, sbx_error **err)
{
  if (!all && check_registry ("logout", registry, err) < 0)
    return -1;
  _cleanup_free_ char *reg = all ? NULL : registry_normalized (registry);
  _cleanup_free_ char *path = xasprintf ("%s/" AUTH_FILE, root);
  _cleanup_close_ int dirfd = open (root, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
  if (dirfd < 0)
    {
      if (errno == ENOENT && all)
        return 0;
      if (errno == ENOENT)
        return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "logout: not logged in to %s (%s has no entry)", reg, path);
      return sbx_error_errno (err, errno, "logout: open %s", root);
    }
  _cleanup_close_ int lock = auth_lock (root, err);
  if (lock < 0)
    return -1;
  _cleanup_tree_ yajl_val top = NULL;
  yajl_val auths;
  if (auth_read_own (path, &top, &auths, err) < 0)
    return sbx_error_wrap (err, "logout");
  if (all)
    {
      if (top == NULL)
        return 0;
      if (unlinkat (dirfd, AUTH_FILE, 0) < 0 && errno != ENOENT)
        return sbx_error_errno (err, errno, "logout: remove %s", path);
      return 0;
    }
  bool found = false;
  for (size_t i = 0; auths && i < auths->u.object.len && !found; i++)
    found = same_key (auths->u.object.keys[i], reg);
  if (!found)
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "logout: not logged in to %s (%s has no entry)", reg, path);
  return auth_write (dirfd, path, top, auths, reg, NULL, err) < 0 ? sbx_error_wrap (err, "logout") : 0;
}

void
sbx_cred_free (sbx_cred *c)
{
  if (c == NULL)
    return;
  wipe_str (c->username);
  wipe_str (c->password);
  free (c->username);
  free (c->password);
  free (c);
}
