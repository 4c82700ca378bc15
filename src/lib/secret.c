/* Secrets (sbx secret, --secret, --secret-file) and the audit log (sbx
 * audit). The store is ROOT/secrets/NAME: the value alone, mode 0600, in a
 * directory of mode 0700, written to a temp file, synced and renamed into
 * place (RENAME_NOREPLACE unless --replace), so that a reader sees a whole
 * value or none. A value is 1..SBX_SECRET_VALUE_MAX bytes without NUL: it
 * must fit in an environment variable. ROOT/audit.log is JSON lines, each
 * appended by one write(2) on an O_APPEND descriptor. */
#include "config.h"
#include "secret.h"
#include "json.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A temp file of a create is renamed within milliseconds: one this old was
 * left by a create that was killed. */
#define SECRET_TMP_AGE 600
#define SECRET_NAME_RULE "[A-Za-z0-9][A-Za-z0-9_.+-]*, at most 64 characters"

void
sbx_secret_value_free (char *value, size_t len)
{
  if (value == NULL)
    return;
  explicit_bzero (value, len);
  free (value);
}

void
sbx_secret_infos_free (sbx_secret_info *v, size_t n)
{
  for (size_t i = 0; v && i < n; i++)
    free (v[i].name);
  free (v);
}

static int
check_name (const char *name, sbx_error **err)
{
  if (!name_is_valid (name))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid secret name `%s`: use " SECRET_NAME_RULE, name);
  return 0;
}

/* ROOT/secrets as an fd; made (0700) when CREATE, else NOT_FOUND when it
 * is not there (*ret_fd -1 and 0 when MISSING_OK). */
static int
secrets_dir (const sbx_store *st, bool create, bool missing_ok, int *ret_fd, sbx_error **err)
{
  _cleanup_free_ char *path = sbx_store_path (st, "secrets");
  if (create && mkdir (path, 0700) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", path);
  int fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && missing_ok)
    {
      *ret_fd = -1;
      return 0;
    }
  if (fd < 0 && errno == ENOENT)
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "no secrets are stored (sbx secret create)");
  if (fd < 0)
    return sbx_error_errno (err, errno, "open `%s`", path);
  struct stat sb;
  if (fstat (fd, &sb) == 0 && (sb.st_mode & 077) != 0 && fchmod (fd, 0700) < 0)
    {
      int e = errno;
      close (fd);
      return sbx_error_errno (err, e, "chmod `%s`", path);
    }
  *ret_fd = fd;
  return 0;
}

static int
check_value (const char *name, const void *value, size_t len, sbx_error **err)
{
  if (len == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "secret `%s`: the value is empty", name);
  if (len > SBX_SECRET_VALUE_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "secret `%s`: the value has more than %d bytes", name,
                          SBX_SECRET_VALUE_MAX);
  if (memchr (value, '\0', len) != NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "secret `%s`: the value holds a NUL byte (it must fit in an environment variable)", name);
  return 0;
}

/* The value into a new temp file of DFD, synced; its name in *ret_tmp. */
static int
write_temp (int dfd, const void *value, size_t len, char **ret_tmp, sbx_error **err)
{
  _cleanup_free_ char *rnd = random_hex (8);
  _cleanup_free_ char *tmp = xasprintf (".tmp-%s", rnd);
  _cleanup_close_ int fd = openat (dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return sbx_error_errno (err, errno, "create a secret's temp file");
  int r = fchmod (fd, 0600) < 0 ? -errno : 0;
  if (r == 0)
    r = write_all (fd, value, len);
  if (r == 0 && fsync (fd) < 0)
    r = -errno;
  if (r < 0)
    {
      unlinkat (dfd, tmp, 0);
      return sbx_error_errno (err, -r, "write a secret's temp file");
    }
  *ret_tmp = steal_pointer (&tmp);
  return 0;
}

int
sbx_secret_create (const sbx_store *st, const char *name, const void *value, size_t len, bool replace, sbx_error **err)
{
  if (check_name (name, err) < 0 || check_value (name, value, len, err) < 0)
    return -1;
  _cleanup_close_ int dfd = -1;
  if (secrets_dir (st, true, false, &dfd, err) < 0)
    return -1;
  _cleanup_free_ char *tmp = NULL;
  if (write_temp (dfd, value, len, &tmp, err) < 0)
    return -1;
  int r = replace ? renameat (dfd, tmp, dfd, name) : renameat2 (dfd, tmp, dfd, name, RENAME_NOREPLACE);
  if (r < 0)
    {
      int e = errno;
      unlinkat (dfd, tmp, 0);
      if (e == EEXIST)
        return sbx_error_set (err, SBX_E_BUSY, 0, "secret `%s` already exists (--replace replaces its value)", name);
      return sbx_error_errno (err, e, "store secret `%s`", name);
    }
  if (fsync (dfd) < 0)
    return sbx_error_errno (err, errno, "sync the secrets directory");
  return 0;
}

static int
cmp_info (const void *a, const void *b)
{
  return strcmp (((const sbx_secret_info *) a)->name, ((const sbx_secret_info *) b)->name);
}

int
sbx_secret_list (const sbx_store *st, sbx_secret_info **ret, size_t *ret_n, sbx_error **err)
{
  _cleanup_close_ int dfd = -1;
  if (secrets_dir (st, false, true, &dfd, err) < 0)
    return -1;
  sbx_secret_info *v = NULL;
  size_t n = 0;
  if (dfd >= 0)
    {
      int dup_fd = fcntl (dfd, F_DUPFD_CLOEXEC, 3);
      _cleanup_closedir_ DIR *d = dup_fd >= 0 ? fdopendir (dup_fd) : NULL;
      if (d == NULL)
        {
          if (dup_fd >= 0)
            close (dup_fd);
          return sbx_error_errno (err, errno, "read the secrets directory");
        }
      struct dirent *de;
      while ((de = readdir (d)) != NULL)
        {
          struct stat sb;
          /* Temp files start with a dot, which no name does. */
          if (!name_is_valid (de->d_name) || fstatat (dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0
              || !S_ISREG (sb.st_mode))
            continue;
          v = xrealloc (v, (n + 1) * sizeof *v);
          v[n++] = (sbx_secret_info){ .name = xstrdup (de->d_name), .created = (int64_t) sb.st_mtime };
        }
    }
  if (n > 1)
    qsort (v, n, sizeof *v, cmp_info);
  *ret = v;
  *ret_n = n;
  return 0;
}

int
sbx_secret_remove (const sbx_store *st, const char *name, sbx_error **err)
{
  if (check_name (name, err) < 0)
    return -1;
  _cleanup_close_ int dfd = -1;
  if (secrets_dir (st, false, true, &dfd, err) < 0)
    return -1;
  if (dfd < 0 || unlinkat (dfd, name, 0) < 0)
    {
      if (dfd < 0 || errno == ENOENT)
        return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "no secret `%s`", name);
      return sbx_error_errno (err, errno, "remove secret `%s`", name);
    }
  fsync (dfd);
  return 0;
}

static int
open_secret (const sbx_store *st, const char *name, int *ret_fd, sbx_error **err)
{
  if (check_name (name, err) < 0)
    return -1;
  _cleanup_close_ int dfd = -1;
  if (secrets_dir (st, false, true, &dfd, err) < 0)
    return -1;
  int fd = dfd < 0 ? -1 : openat (dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && (dfd < 0 || errno == ENOENT))
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "no secret `%s` (sbx secret create %s)", name, name);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open secret `%s`", name);
  struct stat sb;
  if (fstat (fd, &sb) < 0 || !S_ISREG (sb.st_mode))
    {
      close (fd);
      return sbx_error_set (err, SBX_E_INTERNAL, 0, "secret `%s` is not a regular file in the store", name);
    }
  *ret_fd = fd;
  return 0;
}

int
sbx_secret_check (const sbx_store *st, const char *name, sbx_error **err)
{
  _cleanup_close_ int fd = -1;
  return open_secret (st, name, &fd, err);
}

int
sbx_secret_read (const sbx_store *st, const char *name, char **ret_value, size_t *ret_len, sbx_error **err)
{
  _cleanup_close_ int fd = -1;
  if (open_secret (st, name, &fd, err) < 0)
    return -1;
  char *data = NULL;
  size_t len = 0;
  int r = read_fd (fd, SBX_SECRET_VALUE_MAX, &data, &len);
  if (r < 0)
    return sbx_error_errno (err, -r, "read secret `%s`", name);
  if (check_value (name, data, len, err) < 0)
    {
      sbx_secret_value_free (data, len);
      return sbx_error_wrap (err, "the store");
    }
  *ret_value = data;
  *ret_len = len;
  return 0;
}

void
sbx_secret_gc (const sbx_store *st)
{
  _cleanup_close_ int dfd = -1;
  if (secrets_dir (st, false, true, &dfd, NULL) < 0 || dfd < 0)
    return;
  int dup_fd = fcntl (dfd, F_DUPFD_CLOEXEC, 3);
  _cleanup_closedir_ DIR *d = dup_fd >= 0 ? fdopendir (dup_fd) : NULL;
  if (d == NULL)
    {
      if (dup_fd >= 0)
        close (dup_fd);
      return;
    }
  struct dirent *de;
  int64_t now = now_unix ();
  while ((de = readdir (d)) != NULL)
    {
      struct stat sb;
      if (strncmp (de->d_name, ".tmp-", 5) == 0 && fstatat (dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0
          && S_ISREG (sb.st_mode) && now - (int64_t) sb.st_mtime > SECRET_TMP_AGE)
        unlinkat (dfd, de->d_name, 0);
    }
}

/* --- references in a sandbox's options ----------------------------------- */

static bool
env_key_valid (const char *s)
{
  size_t n = strlen (s);
  if (n == 0 || n > SBX_SECRET_NAME_MAX || (s[0] >= '0' && s[0] <= '9'))
    return false;
  for (size_t i = 0; i < n; i++)
    {
      char c = s[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
        return false;
    }
  return true;
}

void
sbx_secret_ref_clear (sbx_secret_ref *r)
{
  free (r->name);
  free (r->var);
  r->name = r->var = NULL;
}

int
sbx_secret_ref_parse (const char *spec, sbx_secret_ref *ret, sbx_error **err)
{
  const char *eq = strchr (spec, '=');
  _cleanup_free_ char *name = eq ? xstrndup (spec, (size_t) (eq - spec)) : xstrdup (spec);
  const char *var = eq ? eq + 1 : name;
  if (!name_is_valid (name))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "--secret `%s`: invalid secret name: expected NAME or NAME=VAR, NAME " SECRET_NAME_RULE,
                          spec);
  if (!env_key_valid (var))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          eq ? "--secret `%s`: `%s` is not a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)"
                             : "--secret `%s`: `%s` is not a valid environment variable name: give one as NAME=VAR",
                          spec, var);
  ret->var = xstrdup (var);
  ret->name = steal_pointer (&name);
  return 0;
}

bool
sbx_secret_opts_any (const sbx_sandbox_opts *o)
{
  return (o->secrets && o->secrets[0]) || (o->secret_files && o->secret_files[0]);
}

int
sbx_secret_opts_validate (const sbx_sandbox_opts *o, sbx_error **err)
{
  size_t ns = strv_len (o->secrets), nf = strv_len (o->secret_files);
  if (ns + nf == 0)
    return 0;
  if (ns + nf > SBX_SECRETS_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%zu secrets: at most %d (--secret and --secret-file)",
                          ns + nf, SBX_SECRETS_MAX);
  _cleanup_strv_ char **vars = xmalloc0 (sizeof (char *));
  for (size_t i = 0; i < ns; i++)
    {
      sbx_secret_ref r = { NULL, NULL };
      if (sbx_secret_ref_parse (o->secrets[i], &r, err) < 0)
        return -1;
      bool dup = false;
      for (size_t j = 0; vars[j]; j++)
        dup = dup || strcmp (vars[j], r.var) == 0;
      if (dup)
        {
          sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--secret: the variable %s is given twice", r.var);
          sbx_secret_ref_clear (&r);
          return -1;
        }
      strv_push (&vars, r.var);
      sbx_secret_ref_clear (&r);
    }
  for (size_t i = 0; i < nf; i++)
    {
      if (!name_is_valid (o->secret_files[i]))
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                              "--secret-file `%s`: invalid secret name: use " SECRET_NAME_RULE, o->secret_files[i]);
      for (size_t j = 0; j < i; j++)
        if (strcmp (o->secret_files[j], o->secret_files[i]) == 0)
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--secret-file: %s is given twice", o->secret_files[i]);
    }
  if (!o->allow_secrets)
    return sbx_error_set (err, SBX_E_SECRETS_NOT_ALLOWED, 0,
                          "--secret and --secret-file need --allow-secrets: the sandbox's code can read the values "
                          "it is given");
  return 0;
}

char **
sbx_secret_opts_names (const sbx_sandbox_opts *o)
{
  char **names = xmalloc0 (sizeof (char *));
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; pass == 0 ? o->secrets && o->secrets[i] : o->secret_files && o->secret_files[i]; i++)
      {
        const char *s = pass == 0 ? o->secrets[i] : o->secret_files[i];
        _cleanup_free_ char *name = xstrndup (s, strcspn (s, "="));
        bool seen = false;
        for (size_t j = 0; names[j]; j++)
          seen = seen || strcmp (names[j], name) == 0;
        if (!seen)
          strv_push (&names, name);
      }
  return names;
}

int
sbx_secret_opts_check (const sbx_store *st, const sbx_sandbox_opts *o, sbx_error **err)
{
  _cleanup_strv_ char **names = sbx_secret_opts_names (o);
  for (size_t i = 0; names[i]; i++)
    if (sbx_secret_check (st, names[i], err) < 0)
      return -1;
  return 0;
}

/* One SECRET payload for NAME's value, as (u32 length, payload) at the end
 * of *BUF. */
static int
add_payload (const sbx_store *st, uint16_t kind, const char *name, const char *key, char **buf, size_t *len,
             sbx_error **err)
{
  char *value = NULL;
  size_t vlen = 0;
  if (sbx_secret_read (st, name, &value, &vlen, err) < 0)
    return -1;
  size_t cap = 4 + SBX_SECRET_PAYLOAD_MAX;
  char *grown = xmalloc (*len + cap);
  if (*len)
    memcpy (grown, *buf, *len);
  sbx_secret_value_free (*buf, *len);
  *buf = grown;
  int n = sbx_secret_encode ((unsigned char *) grown + *len + 4, SBX_SECRET_PAYLOAD_MAX, kind, key, value, vlen);
  sbx_secret_value_free (value, vlen);
  if (n < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "secret `%s` cannot be passed as `%s`", name, key);
  uint32_t u = (uint32_t) n;
  memcpy (grown + *len, &u, sizeof u);
  *len += 4 + (size_t) n;
  return 0;
}

int
sbx_secret_opts_payloads (const sbx_store *st, const sbx_sandbox_opts *o, char **ret, size_t *ret_len, sbx_error **err)
{
  char *buf = NULL;
  size_t len = 0;
  int r = 0;
  for (size_t i = 0; r == 0 && o->secrets && o->secrets[i]; i++)
    {
      sbx_secret_ref ref = { NULL, NULL };
      r = sbx_secret_ref_parse (o->secrets[i], &ref, err);
      if (r == 0)
        r = add_payload (st, SBX_SECRET_ENV, ref.name, ref.var, &buf, &len, err);
      sbx_secret_ref_clear (&ref);
    }
  for (size_t i = 0; r == 0 && o->secret_files && o->secret_files[i]; i++)
    r = add_payload (st, SBX_SECRET_FILE, o->secret_files[i], o->secret_files[i], &buf, &len, err);
  if (r < 0)
    {
      sbx_secret_value_free (buf, len);
      return -1;
    }
  *ret = buf;
  *ret_len = len;
  return 0;
}

/* --- the audit log ------------------------------------------------------- */

int
sbx_audit_append (const sbx_store *st, const char *event, const char *sandbox_id, char *const *names, sbx_error **err)
{
  int64_t now = now_unix ();
  char when[64];
  format_time (now, when, sizeof when);
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kstr (g, "time", when);
  j_kint (g, "unix", now);
  j_kstr (g, "event", event);
  j_kstr (g, "sandbox", sandbox_id);
  j_kstrv (g, "secrets", names);
  j_kint (g, "uid", (long long) getuid ());
  j_endmap (g);
  size_t len;
  _cleanup_free_ char *text = j_take (g, &len);
  _cleanup_free_ char *line = xasprintf ("%s\n", text);
  _cleanup_free_ char *path = sbx_store_path (st, "audit.log");
  _cleanup_close_ int fd = open (path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return sbx_error_errno (err, errno, "open `%s`", path);
  struct stat sb;
  if (fstat (fd, &sb) == 0 && (sb.st_mode & 077) != 0)
    fchmod (fd, 0600);
  /* One write: appenders never interleave within a record. */
  ssize_t w = write (fd, line, len + 1);
  if (w != (ssize_t) (len + 1))
    return sbx_error_errno (err, w < 0 ? errno : EIO, "append to `%s`", path);
  return 0;
}

static void
record_clear (sbx_audit_record *r)
{
  free (r->time);
  free (r->event);
  free (r->sandbox);
  strv_free (r->secrets);
}

void
sbx_audit_records_free (sbx_audit_record *v, size_t n)
{
  for (size_t i = 0; v && i < n; i++)
    record_clear (&v[i]);
  free (v);
}

static int
parse_record (const char *line, size_t len, sbx_audit_record *r, sbx_error **err)
{
  _cleanup_yajl_val_ yajl_val v = NULL;
  const char *time = NULL, *event = NULL, *sandbox = NULL;
  if (j_parse (line, len, 1 << 20, "audit record", &v, err) < 0 || !YAJL_IS_OBJECT (v)
      || j_get_str (v, "time", true, &time, err) < 0 || j_get_int (v, "unix", true, &r->unix_time, err) < 0
      || j_get_str (v, "event", true, &event, err) < 0 || j_get_str (v, "sandbox", true, &sandbox, err) < 0
      || j_get_strv (v, "secrets", true, &r->secrets, err) < 0 || j_get_int (v, "uid", true, &r->uid, err) < 0)
    {
      strv_free (r->secrets);
      r->secrets = NULL;
      if (err && *err == NULL)
        sbx_error_set (err, SBX_E_INTERNAL, 0, "not a JSON object");
      return -1;
    }
  r->time = xstrdup (time);
  r->event = xstrdup (event);
  r->sandbox = xstrdup (sandbox);
  return 0;
}

int
sbx_audit_read (const sbx_store *st, int64_t since, sbx_audit_record **ret, size_t *ret_n, sbx_error **err)
{
  _cleanup_free_ char *path = sbx_store_path (st, "audit.log");
  *ret = NULL;
  *ret_n = 0;
  if (!path_exists (path))
    return 0;
  _cleanup_free_ char *text = NULL;
  size_t len = 0;
  if (read_file (path, SBX_AUDIT_MAX, &text, &len, err) < 0)
    return -1;
  sbx_audit_record *v = NULL;
  size_t n = 0, lineno = 0;
  for (char *p = text; p < text + len;)
    {
      char *nl = memchr (p, '\n', (size_t) (text + len - p));
      size_t l = nl ? (size_t) (nl - p) : (size_t) (text + len - p);
      lineno++;
      if (l > 0)
        {
          sbx_audit_record r = { NULL };
          if (parse_record (p, l, &r, err) < 0)
            {
              sbx_audit_records_free (v, n);
              (*err)->code = SBX_E_INTERNAL;
              return sbx_error_wrap (err, "%s, line %zu", path, lineno);
            }
          if (r.unix_time >= since)
            {
              v = xrealloc (v, (n + 1) * sizeof *v);
              v[n++] = r;
            }
          else
            record_clear (&r);
        }
      p += l + 1;
    }
  *ret = v;
  *ret_n = n;
  return 0;
}

int
sbx_audit_parse_since (const char *s, int64_t now, int64_t *ret, sbx_error **err)
{
  int64_t n;
  size_t len = strlen (s);
  if (parse_int64 (s, 0, INT64_MAX / 2, &n) == 0)
    {
      *ret = n;
      return 0;
    }
  static const struct {
    char unit;
    int64_t secs;
  } units[] = { { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
  for (size_t i = 0; len >= 2 && i < ARRAY_SIZE (units); i++)
    if (s[len - 1] == units[i].unit)
      {
        _cleanup_free_ char *num = xstrndup (s, len - 1);
        if (parse_int64 (num, 0, 100LL * 365 * 86400, &n) == 0 && n * units[i].secs <= now)
          {
            *ret = now - n * units[i].secs;
            return 0;
          }
      }
  struct tm tm = { 0 };
  const char *end = strptime (s, "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end && *end == '\0')
    {
      *ret = (int64_t) timegm (&tm);
      return 0;
    }
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                        "--since `%s`: expected an RFC 3339 UTC time (2026-01-02T03:04:05Z), unix seconds, or a "
                        "duration (30s, 10m, 2h, 7d)",
                        s);
}
