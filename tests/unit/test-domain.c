/* Unit tests of the domain rules (src/lib/domain.c): what --allow-domain
 * takes and how it is normalized, and which names the matcher lets
 * through. */
#include "config.h"
#include "domain.h"
#include "tap.h"
#include "util.h"

#include <string.h>

static void
rule_ok (const char *in, const char *want)
{
  _cleanup_free_ char *r = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  int rc = sbx_domain_rule_parse (in, &r, &err);
  tap_ok (rc == 0 && r && strcmp (r, want) == 0, "rule `%s` taken as `%s` (%s)", in, want, rc == 0 ? r : err->msg);
}

static void
rule_bad (const char *in)
{
  _cleanup_free_ char *r = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  int rc = sbx_domain_rule_parse (in, &r, &err);
  tap_ok (rc < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && r == NULL, "rule `%s` refused: %s", in,
          err ? err->msg : "(taken)");
}

static void
test_parse (void)
{
  rule_ok ("example.com", "example.com");
  rule_ok ("Example.COM.", "example.com");
  rule_ok ("*.PyPI.org", "*.pypi.org");
  rule_ok ("_acme-challenge.example.com", "_acme-challenge.example.com");
  rule_ok ("xn--caf-dma.example", "xn--caf-dma.example");
  rule_ok ("localhost", "localhost");
  rule_bad ("");
  rule_bad ("*");
  rule_bad ("*.");
  rule_bad ("*.com");
  rule_bad ("**.example.com");
  rule_bad ("a.*.example.com");
  rule_bad ("*example.com");
  rule_bad ("example..com");
  rule_bad (".example.com");
  rule_bad ("example.com..");
  rule_bad ("-example.com");
  rule_bad ("example-.com");
  rule_bad ("exa mple.com");
  rule_bad ("exa\tmple.com");
  rule_bad ("caf\xc3\xa9.example");
  rule_bad ("1.2.3.4");
  rule_bad ("::1");
  rule_bad ("2001:db8::1");
  rule_bad ("example.com/24");
  char big[300];
  memset (big, 'a', 64);
  strcpy (big + 64, ".com");
  rule_bad (big);
  /* 4 labels of 63 and one of 1 is 257 bytes: too long. */
  size_t at = 0;
  for (int i = 0; i < 4; i++)
    {
      memset (big + at, 'b', 63);
      at += 63;
      big[at++] = '.';
    }
  strcpy (big + at, "c");
  rule_bad (big);
  big[at - 1] = '\0'; /* 4 x 63 + 3 dots = 255: still too long */
  rule_bad (big);
}

static void
test_rules_parse (void)
{
  char *in[] = { (char *) "a.example", (char *) "A.example", (char *) "*.b.example", NULL };
  _cleanup_strv_ char **out = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  tap_ok (sbx_domain_rules_parse (in, &out, &err) == 0 && strv_len (out) == 2 && strcmp (out[0], "a.example") == 0
              && strcmp (out[1], "*.b.example") == 0,
          "a list: normalized, duplicates dropped");
  _cleanup_strv_ char **none = NULL;
  tap_ok (sbx_domain_rules_parse (NULL, &none, NULL) == 0 && none && none[0] == NULL, "no list: an empty one");
  char **many = xmalloc0 ((SBX_DOMAINS_MAX + 2) * sizeof (char *));
  for (int i = 0; i <= SBX_DOMAINS_MAX; i++)
    many[i] = xasprintf ("n%d.example", i);
  _cleanup_error_ sbx_error *e2 = NULL;
  tap_ok (sbx_domain_rules_parse (many, NULL, &e2) < 0 && e2->code == SBX_E_INVALID_ARGUMENT, "more than %d: %s",
          SBX_DOMAINS_MAX, e2 ? e2->msg : "taken");
  strv_free (many);
  char *bad[] = { (char *) "ok.example", (char *) "bad..example", NULL };
  _cleanup_error_ sbx_error *e3 = NULL;
  tap_ok (sbx_domain_rules_parse (bad, NULL, &e3) < 0, "one bad rule: the list refused");
}

static void
test_match (void)
{
  char *rules[] = { (char *) "example.com", (char *) "*.pypi.org", (char *) "*.a.b.example", NULL };
  struct {
    const char *name;
    bool want;
  } cases[] = {
    { "example.com", true }, { "www.example.com", false }, { "example.com.evil", false },  { "notexample.com", false },
    { "pypi.org", false },   { "files.pypi.org", true },   { "x.y.files.pypi.org", true }, { "pypi.org.evil", false },
    { "xpypi.org", false },  { "c.a.b.example", true },    { "a.b.example", false },       { "", false },
    { "com", false },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    tap_ok (sbx_domain_match (rules, cases[i].name) == cases[i].want, "`%s` %s", cases[i].name,
            cases[i].want ? "matches" : "does not match");
  tap_ok (!sbx_domain_match (NULL, "example.com"), "no rules: nothing matches");
}

int
main (void)
{
  test_parse ();
  test_rules_parse ();
  test_match ();
  tap_plan (tap_n);
  return tap_done ();
}
