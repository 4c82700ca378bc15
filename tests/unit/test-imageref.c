/* Image references (src/lib/imageref.c): the docker grammar, its
 * normalization to the full form, and what is refused. */
#include "config.h"

#include "imageref.h"
#include "tap.h"
#include "util.h"

/* S parses (registry of a bare name: UNQ) to the full form WANT, and the
 * full form parses to itself and is canonical. */
static void
good (const char *s, const char *unq, const char *want)
{
  sbx_imageref *r = NULL;
  sbx_error *err = NULL;
  if (sbx_imageref_parse (s, unq, &r, &err) < 0)
    {
      tap_ok (0, "%s: refused: %s", s, err->msg);
      sbx_error_free (err);
      return;
    }
  char *full = sbx_imageref_string (r);
  sbx_imageref *r2 = NULL;
  bool round = sbx_imageref_parse (full, "other.example", &r2, NULL) == 0;
  char *full2 = round ? sbx_imageref_string (r2) : NULL;
  tap_ok (strcmp (full, want) == 0 && round && strcmp (full2, full) == 0 && sbx_imageref_is_canonical (full),
          "%s -> %s (want %s), round trip %s", s, full, want, full2 ? full2 : "(refused)");
  free (full);
  free (full2);
  sbx_imageref_free (r);
  sbx_imageref_free (r2);
}

/* S is INVALID_ARGUMENT and the message has WHY. */
static void
refused (const char *s, const char *why)
{
  sbx_imageref *r = NULL;
  sbx_error *err = NULL;
  int rc = sbx_imageref_parse (s, NULL, &r, &err);
  char *shown = printable_escaped (s, 80);
  tap_ok (rc < 0 && r == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, why) != NULL,
          "refused: %s (%s)", shown, err ? err->msg : "accepted");
  free (shown);
  sbx_error_free (err);
  sbx_imageref_free (r);
}

static void
parts (void)
{
  sbx_imageref *r = NULL;
  const char *d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  char *s = xasprintf ("[::1]:5000/team/app:v1.2@%s", d);
  tap_ok (sbx_imageref_parse (s, NULL, &r, NULL) == 0 && strcmp (r->registry, "[::1]:5000") == 0
              && strcmp (r->repository, "team/app") == 0 && strcmp (r->tag, "v1.2") == 0 && strcmp (r->digest, d) == 0,
          "IPv6 registry, tag and digest split apart");
  sbx_imageref_free (r);
  free (s);
  s = xasprintf ("busybox@%s", d);
  r = NULL;
  tap_ok (sbx_imageref_parse (s, NULL, &r, NULL) == 0 && r->tag == NULL && strcmp (r->digest, d) == 0,
          "a digest alone gets no tag");
  sbx_imageref_free (r);
  free (s);
}

int
main (void)
{
  const char *d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  char buf[2048];

  good ("busybox", NULL, "docker.io/library/busybox:latest");
  good ("python:3.12-slim", NULL, "docker.io/library/python:3.12-slim");
  good ("library/python", NULL, "docker.io/library/python:latest");
  good ("bitnami/redis:7", NULL, "docker.io/bitnami/redis:7");
  good ("docker.io/busybox", NULL, "docker.io/library/busybox:latest");
  good ("index.docker.io/busybox:1", NULL, "docker.io/library/busybox:1");
  good ("quay.io/podman/stable:v5", NULL, "quay.io/podman/stable:v5");
  good ("ghcr.io/a/b/c/d:x", NULL, "ghcr.io/a/b/c/d:x");
  good ("localhost/foo", NULL, "localhost/foo:latest");
  good ("localhost:5000/foo:1", NULL, "localhost:5000/foo:1");
  good ("127.0.0.1:5000/test/busybox:1", NULL, "127.0.0.1:5000/test/busybox:1");
  good ("[::1]:5000/test/busybox", NULL, "[::1]:5000/test/busybox:latest");
  good ("[fd00::1]/x", NULL, "[fd00::1]/x:latest");
  good ("Registry.Example.COM/x", NULL, "Registry.Example.COM/x:latest");
  good ("my-reg.example/a.b_c__d--e/f-g", NULL, "my-reg.example/a.b_c__d--e/f-g:latest");
  good ("busybox", "registry.example:443", "registry.example:443/busybox:latest");
  good ("a/b", "localhost:5000", "localhost:5000/a/b:latest");
  good ("x:_Tag.9-", NULL, "docker.io/library/x:_Tag.9-");
  snprintf (buf, sizeof buf, "busybox@%s", d);
  char want[4096];
  snprintf (want, sizeof want, "docker.io/library/busybox@%s", d);
  good (buf, NULL, want);
  snprintf (buf, sizeof buf, "quay.io/a/b:1@%s", d);
  good (buf, NULL, buf);
  memset (buf, 0, sizeof buf);
  memset (buf, 't', 128);
  snprintf (want, sizeof want, "docker.io/library/x:%s", buf);
  char with_tag[4096];
  snprintf (with_tag, sizeof with_tag, "x:%s", buf);
  good (with_tag, NULL, want);

  refused ("", "empty");
  refused ("Busybox", "upper case");
  refused ("docker.io/Library/x", "upper case");
  refused ("a//b", "empty name component");
  refused ("/a", "empty name component");
  refused ("a/", "empty name component");
  refused ("a/-b", "start and end");
  refused ("a/b-", "start and end");
  refused ("a/b___c", "separator");
  refused ("a/b..c", "separator");
  refused ("a/b_.c", "separator");
  refused ("a/b$c", "outside");
  refused ("x:", "tag");
  refused ("x:.t", "tag");
  refused ("x:-t", "tag");
  refused ("x:t/y", "registry"); /* a tag cannot hold '/': "x:t" is a registry */
  snprintf (with_tag, sizeof with_tag, "x:%s9", buf);
  refused (with_tag, "tag");
  refused ("x@sha256:abc", "digest");
  refused ("x@md5:0123456789abcdef0123456789abcdef", "digest");
  snprintf (with_tag, sizeof with_tag, "x@sha256:%s",
            "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef");
  refused (with_tag, "digest");
  refused ("x y", "outside the grammar");
  refused ("x\ny", "control character");
  refused ("x\x7f", "control character");
  refused ("caf\xc3\xa9", "outside the grammar");
  refused ("ex..ample.com/x", "registry");
  refused ("-ex.com/x", "registry");
  refused ("ex-.com/x", "registry");
  refused ("ex.com:0/x", "registry");
  refused ("ex.com:65536/x", "registry");
  refused ("ex.com:5a/x", "registry");
  refused ("[::1/x", "registry");
  refused ("[zz::1]:5000/x", "registry");
  refused ("[]:5000/x", "registry");
  refused ("ex.com/", "no repository");
  refused ("ex.com:5000/x:y:z", "outside");
  memset (buf, 0, sizeof buf);
  memset (buf, 'a', 1025);
  refused (buf, "longer than 1024");
  memset (buf, 0, sizeof buf);
  strcpy (buf, "ex.com/");
  memset (buf + 7, 'a', 256);
  refused (buf, "over 255");

  parts ();

  tap_ok (!sbx_imageref_is_canonical ("busybox"), "a plain name is not canonical");
  tap_ok (!sbx_imageref_is_canonical ("library/busybox:latest"), "no registry: not canonical");
  tap_ok (!sbx_imageref_is_canonical ("docker.io/busybox:latest"), "docker.io without library/: not canonical");
  tap_ok (!sbx_imageref_is_canonical ("quay.io/a/b"), "without a tag: not canonical");
  tap_ok (!sbx_imageref_is_canonical ("index.docker.io/library/x:1"), "index.docker.io: not canonical");
  tap_ok (!sbx_imageref_is_canonical (NULL), "NULL: not canonical");
  tap_ok (sbx_imageref_is_canonical ("localhost:5000/x:1"), "localhost:5000/x:1 is canonical");

  tap_plan (tap_n);
  return tap_done ();
}
