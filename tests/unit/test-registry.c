/* The registry transport's parser of outside input (src/lib/registry.c):
 * WWW-Authenticate challenges. The transport itself is tested against a
 * real registry (tests/integration/pull.bats, registry.bats). */
#include "config.h"

#include "pull.h"
#include "registry-internal.h"
#include "tap.h"
#include "util.h"

static bool
eq (const char *a, const char *b)
{
  return (a == NULL && b == NULL) || (a && b && strcmp (a, b) == 0);
}

static void
good (const char *h, sbx_www_scheme scheme, const char *realm, const char *service, const char *scope)
{
  sbx_www_auth *a = NULL;
  sbx_error *err = NULL;
  if (sbx_www_auth_parse (h, strlen (h), &a, &err) < 0)
    {
      tap_ok (0, "%s: refused: %s", h, err->msg);
      sbx_error_free (err);
      return;
    }
  tap_ok (a->scheme == scheme && eq (a->realm, realm) && eq (a->service, service) && eq (a->scope, scope),
          "%s -> %d realm=%s service=%s scope=%s", h, a->scheme, a->realm, a->service, a->scope);
  sbx_www_auth_free (a);
}

static void
refused (const char *h, size_t len, const char *why)
{
  sbx_www_auth *a = NULL;
  sbx_error *err = NULL;
  int rc = sbx_www_auth_parse (h, len, &a, &err);
  _cleanup_free_ char *shown = printable_escaped (h, 60);
  tap_ok (rc < 0 && a == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, why),
          "refused: %s (%s)", shown, err ? err->msg : "accepted");
  sbx_error_free (err);
  sbx_www_auth_free (a);
}

int
main (void)
{
  good ("Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
        "scope=\"repository:library/busybox:pull\"",
        SBX_WWW_BEARER, "https://auth.docker.io/token", "registry.docker.io", "repository:library/busybox:pull");
  good ("bearer realm=https://a.example/t", SBX_WWW_BEARER, "https://a.example/t", NULL, NULL);
  good ("BEARER  realm = \"https://a/t\" , service=\"s\"", SBX_WWW_BEARER, "https://a/t", "s", NULL);
  good ("Basic realm=\"Registry Realm\"", SBX_WWW_BASIC, "Registry Realm", NULL, NULL);
  good ("Basic", SBX_WWW_BASIC, NULL, NULL, NULL);
  good ("Basic realm=\"x\", Bearer realm=\"https://t/\"", SBX_WWW_BEARER, "https://t/", NULL, NULL);
  good ("Negotiate abc==, Basic realm=\"r\"", SBX_WWW_BASIC, "r", NULL, NULL);
  good ("Bearer realm=\"https://t/\",error=\"invalid_token\",scope=\"a:b:pull,push\"", SBX_WWW_BEARER, "https://t/",
        NULL, "a:b:pull,push");
  good ("Bearer realm=\"https://t/\\\"q\\\"\"", SBX_WWW_BEARER, "https://t/\"q\"", NULL, NULL);
  good ("Bearer realm=\"https://t/\", foo=bar, service=s", SBX_WWW_BEARER, "https://t/", "s", NULL);

  refused ("", 0, "cannot answer");
  refused ("Negotiate", 9, "cannot answer (Negotiate)");
  refused ("Bearer service=\"s\"", 18, "without a realm");
  refused ("Bearer realm=\"\"", 15, "without a realm");
  refused ("Bearer realm=\"https://t/", 24, "without a value");
  refused ("Bearer realm=", 13, "without a value");
  refused ("Bearer realm=\"a\", realm=\"b\"", 27, "given twice");
  refused ("Bearer realm=\"a\"\n", 17, "control");
  refused ("Bearer realm=\"a\0b\"", 18, "control");
  refused ("Bearer realm=\"caf\xc3\xa9\"", 20, "outside ASCII");
  refused ("Bearer realm=\"a\" service=\"b\"", 28, "separated");
  refused ("=x", 2, "no scheme");
  refused ("Bearer @", 8, "stray");
  char *big = xmalloc (SBX_WWW_AUTH_MAX + 2);
  memset (big, 'a', SBX_WWW_AUTH_MAX + 1);
  big[SBX_WWW_AUTH_MAX + 1] = '\0';
  refused (big, SBX_WWW_AUTH_MAX + 1, "too long");
  char *p = stpcpy (big, "Bearer realm=\"");
  memset (p, 'r', SBX_WWW_AUTH_PARAM_MAX + 1);
  strcpy (p + SBX_WWW_AUTH_PARAM_MAX + 1, "\"");
  refused (big, strlen (big), "over 2048");
  free (big);

  /* --pull POLICY */
  static const struct {
    const char *s;
    int want; /* -1: refused */
  } policies[] = {
    { "missing", SBX_PULL_MISSING },
    { "always", SBX_PULL_ALWAYS },
    { "never", SBX_PULL_NEVER },
    { "Missing", -1 },
    { "", -1 },
    { "always ", -1 },
    { "newer", -1 },
  };
  for (size_t i = 0; i < ARRAY_SIZE (policies); i++)
    {
      sbx_pull_policy pol = SBX_PULL_MISSING;
      sbx_error *err = NULL;
      int rc = sbx_pull_policy_parse (policies[i].s, &pol, &err);
      if (policies[i].want < 0)
        tap_ok (rc < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, "missing, always, never"),
                "pull policy `%s` refused (%s)", policies[i].s, err ? err->msg : "accepted");
      else
        tap_ok (rc == 0 && (int) pol == policies[i].want, "pull policy `%s`", policies[i].s);
      sbx_error_free (err);
    }
  {
    sbx_pull_policy pol;
    sbx_error *err = NULL;
    tap_ok (sbx_pull_policy_parse (NULL, &pol, &err) < 0 && err && err->code == SBX_E_INVALID_ARGUMENT,
            "no pull policy is refused");
    sbx_error_free (err);
  }

  tap_plan (tap_n);
  return tap_done ();
}
