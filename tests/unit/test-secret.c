/* Unit tests of secrets: the SECRET frame (proto.c: encoding, strict
 * decoding, the header's bounds), the store (secret.c: create, BUSY and
 * --replace, modes, list, read, remove, the bounds of a value), the
 * --secret references and the options' checks (SECRETS_NOT_ALLOWED), and
 * the audit log (append, read, --since), on a store made here. */
#include "config.h"
#include "proto.h"
#include "secret.h"
#include "store.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "tap.h"

static sbx_store *st;

static bool
failed_with (int r, sbx_error **e, sbx_code code)
{
  bool ok = r < 0 && *e && (*e)->code == code && (*e)->msg && (*e)->msg[0];
  if (!ok && *e)
    printf ("# got %s: %s\n", sbx_code_name ((*e)->code), (*e)->msg);
  if (!ok && !*e)
    printf ("# no error (r=%d)\n", r);
  sbx_error_free (*e);
  *e = NULL;
  return ok;
}

/* A hand-made SECRET payload, for inputs the encoder refuses to make. */
static size_t
raw_secret (unsigned char *out, uint16_t kind, uint16_t name_len, const char *name, const char *value, size_t vlen)
{
  memcpy (out, &kind, 2);
  memcpy (out + 2, &name_len, 2);
  memcpy (out + 4, name, strlen (name));
  memcpy (out + 4 + strlen (name), value, vlen);
  return 4 + strlen (name) + vlen;
}

static void
test_frame (void)
{
  static unsigned char buf[SBX_SECRET_PAYLOAD_MAX + 64];
  static char big[SBX_SECRET_VALUE_MAX + 2];
  struct sbx_secret_msg m;
  int n;

  n = sbx_secret_encode (buf, sizeof buf, SBX_SECRET_ENV, "API_KEY", "s3cr=t", 6);
  tap_ok (n == 4 + 7 + 6, "SECRET: encoded env secret has the expected size");
  tap_ok (n > 0 && sbx_secret_decode (buf, (size_t) n, &m) == 0 && m.kind == SBX_SECRET_ENV
              && strcmp (m.name, "API_KEY") == 0 && m.value_len == 6 && memcmp (m.value, "s3cr=t", 6) == 0,
          "SECRET: env secret round trip");
  n = sbx_secret_encode (buf, sizeof buf, SBX_SECRET_FILE, "tls.key-1", "v", 1);
  tap_ok (n > 0 && sbx_secret_decode (buf, (size_t) n, &m) == 0 && m.kind == SBX_SECRET_FILE
              && strcmp (m.name, "tls.key-1") == 0,
          "SECRET: file secret round trip");
  memset (big, 'a', sizeof big);
  n = sbx_secret_encode (buf, sizeof buf, SBX_SECRET_ENV, "K", big, SBX_SECRET_VALUE_MAX);
  tap_ok (n > 0 && sbx_secret_decode (buf, (size_t) n, &m) == 0 && m.value_len == SBX_SECRET_VALUE_MAX,
          "SECRET: a value of the largest size");
  tap_ok (sbx_secret_encode (buf, sizeof buf, SBX_SECRET_ENV, "K", big, SBX_SECRET_VALUE_MAX + 1) == -EINVAL,
          "SECRET: encoder refuses a value over the bound");
  tap_ok (sbx_secret_encode (buf, sizeof buf, SBX_SECRET_ENV, "K", "", 0) == -EINVAL,
          "SECRET: encoder refuses an empty value");
  tap_ok (sbx_secret_encode (buf, sizeof buf, SBX_SECRET_ENV, "1K", "v", 1) == -EINVAL,
          "SECRET: encoder refuses an env name starting with a digit");
  tap_ok (sbx_secret_encode (buf, sizeof buf, SBX_SECRET_FILE, "../x", "v", 1) == -EINVAL,
          "SECRET: encoder refuses a file name with a slash or a leading dot");
  tap_ok (sbx_secret_encode (buf, 5, SBX_SECRET_ENV, "K", "vv", 2) == -E2BIG, "SECRET: encoder reports no room");

  size_t len;
  len = raw_secret (buf, 3, 1, "K", "v", 1);
  tap_ok (sbx_secret_decode (buf, len, &m) == -EPROTO, "SECRET: unknown kind rejected");
  len = raw_secret (buf, SBX_SECRET_ENV, 0, "", "v", 1);
  tap_ok (sbx_secret_decode (buf, len, &m) == -EPROTO, "SECRET: empty name rejected");
  len = raw_secret (buf, SBX_SECRET_ENV, 1, "K", "", 0);
  tap_ok (sbx_secret_decode (buf, len, &m) == -EPROTO, "SECRET: empty value rejected");
  len = raw_secret (buf, SBX_SECRET_ENV, 9, "K", "v", 1);
  tap_ok (sbx_secret_decode (buf, len, &m) == -EPROTO, "SECRET: name length past the payload rejected");
  len = raw_secret (buf, SBX_SECRET_ENV, 2, "K=", "v", 1);
  tap_ok (sbx_secret_decode (buf, len, &m) == -EPROTO, "SECRET: '=' in an env name rejected");
  len = raw_secret (buf, SBX_SECRET_FILE, 2, ".k", "v", 1);
  tap_ok (sbx_secret_decode (buf, len, &m) == -EPROTO, "SECRET: file name starting with a dot rejected");
  len = raw_secret (buf, SBX_SECRET_FILE, 3, "a/b", "v", 1);
  tap_ok (sbx_secret_decode (buf, len, &m) == -EPROTO, "SECRET: file name with a slash rejected");
  len = raw_secret (buf, SBX_SECRET_ENV, 1, "K", "a\0b", 3);
  tap_ok (sbx_secret_decode (buf, len, &m) == -EPROTO, "SECRET: NUL in the value rejected");
  tap_ok (sbx_secret_decode (buf, 3, &m) == -EPROTO, "SECRET: truncated header rejected");
  tap_ok (sbx_secret_decode (NULL, 0, &m) == -EPROTO, "SECRET: no payload rejected");
  {
    static char longname[SBX_SECRET_NAME_MAX + 2];
    memset (longname, 'N', SBX_SECRET_NAME_MAX + 1);
    len = raw_secret (buf, SBX_SECRET_ENV, SBX_SECRET_NAME_MAX + 1, longname, "v", 1);
    tap_ok (sbx_secret_decode (buf, len, &m) == -EPROTO, "SECRET: env name over the bound rejected");
    longname[SBX_SECRET_FILE_NAME_MAX + 1] = '\0';
    len = raw_secret (buf, SBX_SECRET_FILE, SBX_SECRET_FILE_NAME_MAX + 1, longname, "v", 1);
    tap_ok (sbx_secret_decode (buf, len, &m) == -EPROTO, "SECRET: file name over the bound rejected");
  }

  unsigned char hdr[SBX_PROTO_HDR_SIZE];
  struct sbx_frame_hdr h = { .len = 16, .type = SBX_MSG_SECRET }, d;
  sbx_frame_hdr_encode (hdr, &h);
  tap_ok (sbx_frame_hdr_decode (hdr, &d) == 0 && d.type == SBX_MSG_SECRET, "header: SECRET on channel 0 accepted");
  h.chan = 5;
  sbx_frame_hdr_encode (hdr, &h);
  tap_ok (sbx_frame_hdr_decode (hdr, &d) == -EPROTO, "header: SECRET on another channel rejected");
  h = (struct sbx_frame_hdr){ .len = SBX_SECRET_PAYLOAD_MAX + 1, .type = SBX_MSG_SECRET };
  sbx_frame_hdr_encode (hdr, &h);
  tap_ok (sbx_frame_hdr_decode (hdr, &d) == -EPROTO, "header: SECRET over its bound rejected");
}

static mode_t
mode_of (const char *rel)
{
  _cleanup_free_ char *p = sbx_store_path (st, "%s", rel);
  struct stat sb;
  return stat (p, &sb) == 0 ? sb.st_mode & 07777 : (mode_t) -1;
}

static void
test_store (void)
{
  sbx_error *e = NULL;
  char *v = NULL;
  size_t len = 0;
  static char big[SBX_SECRET_VALUE_MAX + 1];

  tap_ok (sbx_secret_create (st, "tok", "one", 3, false, &e) == 0, "store: create");
  tap_ok (mode_of ("secrets") == 0700 && mode_of ("secrets/tok") == 0600, "store: directory 0700, value 0600");
  tap_ok (failed_with (sbx_secret_create (st, "tok", "two", 3, false, &e), &e, SBX_E_BUSY),
          "store: an existing secret is BUSY");
  tap_ok (sbx_secret_read (st, "tok", &v, &len, &e) == 0 && len == 3 && strcmp (v, "one") == 0,
          "store: BUSY left the value alone");
  sbx_secret_value_free (v, len);
  tap_ok (sbx_secret_create (st, "tok", "two", 3, true, &e) == 0 && sbx_secret_read (st, "tok", &v, &len, &e) == 0
              && strcmp (v, "two") == 0,
          "store: --replace replaces");
  sbx_secret_value_free (v, len);
  tap_ok (failed_with (sbx_secret_create (st, "bad/name", "x", 1, false, &e), &e, SBX_E_INVALID_ARGUMENT),
          "store: a bad name is INVALID_ARGUMENT");
  tap_ok (failed_with (sbx_secret_create (st, "empty", "", 0, false, &e), &e, SBX_E_INVALID_ARGUMENT),
          "store: an empty value is INVALID_ARGUMENT");
  tap_ok (failed_with (sbx_secret_create (st, "nul", "a\0b", 3, false, &e), &e, SBX_E_INVALID_ARGUMENT),
          "store: a NUL in the value is INVALID_ARGUMENT");
  memset (big, 'x', sizeof big);
  tap_ok (failed_with (sbx_secret_create (st, "big", big, sizeof big, false, &e), &e, SBX_E_INVALID_ARGUMENT),
          "store: a value over 64 KiB is INVALID_ARGUMENT");
  tap_ok (sbx_secret_create (st, "a-max", big, SBX_SECRET_VALUE_MAX, false, &e) == 0, "store: a 64 KiB value");
  tap_ok (failed_with (sbx_secret_read (st, "absent", &v, &len, &e), &e, SBX_E_NOT_FOUND),
          "store: reading a missing secret is NOT_FOUND");
  sbx_secret_info *infos = NULL;
  size_t n = 0;
  tap_ok (sbx_secret_list (st, &infos, &n, &e) == 0 && n == 2 && strcmp (infos[0].name, "a-max") == 0
              && strcmp (infos[1].name, "tok") == 0 && infos[1].created > 0,
          "store: list, sorted, with dates, no temp files");
  sbx_secret_infos_free (infos, n);
  tap_ok (sbx_secret_remove (st, "a-max", &e) == 0, "store: remove");
  tap_ok (failed_with (sbx_secret_remove (st, "a-max", &e), &e, SBX_E_NOT_FOUND),
          "store: removing a missing secret is NOT_FOUND");
}

static void
test_refs (void)
{
  sbx_error *e = NULL;
  sbx_secret_ref r = { NULL, NULL };
  tap_ok (sbx_secret_ref_parse ("tok", &r, &e) == 0 && strcmp (r.name, "tok") == 0 && strcmp (r.var, "tok") == 0,
          "ref: NAME is its own variable");
  sbx_secret_ref_clear (&r);
  tap_ok (sbx_secret_ref_parse ("tls.key=TLS_KEY", &r, &e) == 0 && strcmp (r.name, "tls.key") == 0
              && strcmp (r.var, "TLS_KEY") == 0,
          "ref: NAME=VAR");
  sbx_secret_ref_clear (&r);
  tap_ok (failed_with (sbx_secret_ref_parse ("tls.key", &r, &e), &e, SBX_E_INVALID_ARGUMENT),
          "ref: a NAME that is no variable needs =VAR");
  tap_ok (failed_with (sbx_secret_ref_parse ("tok=", &r, &e), &e, SBX_E_INVALID_ARGUMENT), "ref: an empty VAR");
  tap_ok (failed_with (sbx_secret_ref_parse ("=X", &r, &e), &e, SBX_E_INVALID_ARGUMENT), "ref: an empty NAME");
  tap_ok (failed_with (sbx_secret_ref_parse ("tok=A=B", &r, &e), &e, SBX_E_INVALID_ARGUMENT), "ref: VAR with '='");

  char *secrets[] = { (char *) "tok", (char *) "tok=OTHER", NULL }, *files[] = { (char *) "tok", NULL },
       *none[] = { NULL };
  sbx_sandbox_opts o = { .secrets = secrets, .secret_files = files };
  tap_ok (failed_with (sbx_secret_opts_validate (&o, &e), &e, SBX_E_SECRETS_NOT_ALLOWED),
          "opts: secrets without allow_secrets are SECRETS_NOT_ALLOWED");
  o.allow_secrets = true;
  tap_ok (sbx_secret_opts_validate (&o, &e) == 0, "opts: allowed");
  _cleanup_strv_ char **names = sbx_secret_opts_names (&o);
  tap_ok (strv_len (names) == 1 && strcmp (names[0], "tok") == 0, "opts: names, each once");
  tap_ok (sbx_secret_opts_check (st, &o, &e) == 0, "opts: every secret is stored");
  char *payloads = NULL;
  size_t plen = 0;
  tap_ok (sbx_secret_opts_payloads (st, &o, &payloads, &plen, &e) == 0
              && plen == 3 * 4 + (4 + 3 + 3) + (4 + 5 + 3) + (4 + 3 + 3),
          "opts: three SECRET payloads");
  sbx_secret_value_free (payloads, plen);
  char *dup[] = { (char *) "tok=X", (char *) "tok=X", NULL };
  o.secrets = dup;
  tap_ok (failed_with (sbx_secret_opts_validate (&o, &e), &e, SBX_E_INVALID_ARGUMENT), "opts: a variable twice");
  char *absent[] = { (char *) "absent", NULL };
  o.secrets = absent;
  tap_ok (failed_with (sbx_secret_opts_check (st, &o, &e), &e, SBX_E_NOT_FOUND), "opts: a missing secret");
  o.secrets = none;
  o.secret_files = none;
  o.allow_secrets = false;
  tap_ok (sbx_secret_opts_validate (&o, &e) == 0 && !sbx_secret_opts_any (&o), "opts: no secrets, nothing to allow");
  char *many[SBX_SECRETS_MAX + 2];
  for (int i = 0; i <= SBX_SECRETS_MAX; i++)
    many[i] = xasprintf ("tok=V%d", i);
  many[SBX_SECRETS_MAX + 1] = NULL;
  o.secrets = many;
  o.allow_secrets = true;
  tap_ok (failed_with (sbx_secret_opts_validate (&o, &e), &e, SBX_E_INVALID_ARGUMENT), "opts: at most 64 secrets");
  for (int i = 0; i <= SBX_SECRETS_MAX; i++)
    free (many[i]);
}

static void
test_audit (void)
{
  sbx_error *e = NULL;
  sbx_audit_record *v = NULL;
  size_t n = 99;
  tap_ok (sbx_audit_read (st, 0, &v, &n, &e) == 0 && n == 0, "audit: no log, no records");
  char *names[] = { (char *) "a", (char *) "b", NULL };
  tap_ok (sbx_audit_append (st, SBX_AUDIT_EVENT_SECRETS, "sb-000000000001", names, &e) == 0
              && sbx_audit_append (st, SBX_AUDIT_EVENT_SECRETS, "sb-000000000002", names, &e) == 0,
          "audit: append");
  tap_ok (mode_of ("audit.log") == 0600, "audit: the log is 0600");
  tap_ok (sbx_audit_read (st, 0, &v, &n, &e) == 0 && n == 2 && strcmp (v[1].sandbox, "sb-000000000002") == 0
              && strcmp (v[0].event, SBX_AUDIT_EVENT_SECRETS) == 0 && strv_len (v[0].secrets) == 2
              && v[0].uid == (int64_t) getuid () && v[0].unix_time > 0,
          "audit: read back");
  sbx_audit_records_free (v, n);
  tap_ok (sbx_audit_read (st, now_unix () + 100, &v, &n, &e) == 0 && n == 0, "audit: since the future, none");
  sbx_audit_records_free (v, n);

  int64_t t = 0;
  tap_ok (sbx_audit_parse_since ("1700000000", 2000000000, &t, &e) == 0 && t == 1700000000, "since: unix seconds");
  tap_ok (sbx_audit_parse_since ("2h", 2000000000, &t, &e) == 0 && t == 2000000000 - 7200, "since: a duration");
  tap_ok (sbx_audit_parse_since ("2023-11-14T22:13:20Z", 0, &t, &e) == 0 && t == 1700000000, "since: RFC 3339");
  tap_ok (failed_with (sbx_audit_parse_since ("2h ago", 0, &t, &e), &e, SBX_E_INVALID_ARGUMENT), "since: junk");
  tap_ok (failed_with (sbx_audit_parse_since ("-1h", 2000000000, &t, &e), &e, SBX_E_INVALID_ARGUMENT),
          "since: a negative duration");

  _cleanup_free_ char *path = sbx_store_path (st, "audit.log");
  int fd = open (path, O_WRONLY | O_APPEND | O_CLOEXEC);
  tap_ok (fd >= 0 && write (fd, "{\"time\": 1}\n", 12) == 12, "audit: a damaged line appended");
  if (fd >= 0)
    close (fd);
  tap_ok (failed_with (sbx_audit_read (st, 0, &v, &n, &e), &e, SBX_E_INTERNAL), "audit: a damaged log is INTERNAL");
}

int
main (void)
{
  char tmpl[] = "/tmp/sbx-test-secret.XXXXXX";
  if (mkdtemp (tmpl) == NULL)
    tap_skip_all ("mkdtemp failed");
  _cleanup_free_ char *root = xasprintf ("%s/root", tmpl);
  _cleanup_free_ char *run = xasprintf ("%s/run", tmpl);
  sbx_error *e = NULL;
  if (sbx_store_open (root, run, true, &st, &e) < 0)
    {
      printf ("# %s\n", e->msg);
      tap_skip_all ("cannot make a store here");
    }
  test_frame ();
  test_store ();
  test_refs ();
  test_audit ();
  sbx_store_free (st);
  rm_rf (tmpl, NULL);
  tap_plan (tap_n);
  return tap_done ();
}
