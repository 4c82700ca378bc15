/* Image references (imageref.h): docker's reference grammar,
 * [REGISTRY/]NAME[:TAG][@sha256:HEX], parsed strictly and normalized to the
 * full form the store keeps as a tag. A reference is outside input (a
 * blueprint, an argument, a registry's answer), so everything not in the
 * grammar is refused with a message naming what is wrong. */
#include "config.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "imageref.h"
#include "util.h"

#define DOCKER_IO "docker.io"
#define NAME_TOTAL_MAX 255 /* docker's bound on REPOSITORY */
#define HOST_MAX 255

static bool
is_lower_alnum (char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool
is_alnum (char c)
{
  return is_lower_alnum (c) || (c >= 'A' && c <= 'Z');
}

/* One path component: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*. */
static const char *
component_problem (const char *s, size_t n)
{
  if (n == 0)
    return "an empty name component";
  size_t i = 0;
  while (i < n)
    {
      if (!is_lower_alnum (s[i]))
        {
          if (s[i] >= 'A' && s[i] <= 'Z')
            return "upper case in the name";
          if (s[i] != '.' && s[i] != '_' && s[i] != '-')
            return "a character outside [a-z0-9._-] in the name";
          return "a name component that does not start and end with [a-z0-9]";
        }
      while (i < n && is_lower_alnum (s[i]))
        i++;
      if (i == n)
        break;
      size_t sep = i;
      if (s[i] == '.')
        i++;
      else if (s[i] == '_')
        i += (i + 1 < n && s[i + 1] == '_') ? 2 : 1;
      else if (s[i] == '-')
        while (i < n && s[i] == '-')
          i++;
      else if (s[i] >= 'A' && s[i] <= 'Z')
        return "upper case in the name";
      else
        return "a character outside [a-z0-9._-] in the name";
      if (i == n)
        return "a name component that does not start and end with [a-z0-9]";
      if (!is_lower_alnum (s[i]))
        {
          if (s[i] >= 'A' && s[i] <= 'Z')
            return "upper case in the name";
          (void) sep;
          return "a separator in the name that is not '.', '_', '__' or dashes";
        }
    }
  return NULL;
}

static bool
port_valid (const char *s, size_t n)
{
  if (n == 0 || n > 5)
    return false;
  unsigned v = 0;
  for (size_t i = 0; i < n; i++)
    {
      if (s[i] < '0' || s[i] > '9')
        return false;
      v = v * 10 + (unsigned) (s[i] - '0');
    }
  return v >= 1 && v <= 65535;
}

/* HOST[:PORT] with HOST a DNS name (labels of [A-Za-z0-9-], not starting or
 * ending with '-'), or "[IPV6]". */
static bool
registry_valid (const char *s, size_t n)
{
  if (n == 0 || n > HOST_MAX)
    return false;
  size_t hl;
  if (s[0] == '[')
    {
      const char *close = memchr (s, ']', n);
      if (close == NULL)
        return false;
      size_t il = (size_t) (close - s) - 1;
      char inner[INET6_ADDRSTRLEN + 1];
      struct in6_addr a;
      if (il == 0 || il >= sizeof inner)
        return false;
      memcpy (inner, s + 1, il);
      inner[il] = '\0';
      if (inet_pton (AF_INET6, inner, &a) != 1)
        return false;
      hl = il + 2;
    }
  else
    {
      const char *colon = memchr (s, ':', n);
      hl = colon ? (size_t) (colon - s) : n;
      if (hl == 0)
        return false;
      size_t label = 0;
      for (size_t i = 0; i < hl; i++)
        {
          char c = s[i];
          if (c == '.')
            {
              if (label == 0 || s[i - 1] == '-')
                return false;
              label = 0;
              continue;
            }
          if (!is_alnum (c) && c != '-')
            return false;
          if (c == '-' && label == 0)
            return false;
          label++;
        }
      if (label == 0 || s[hl - 1] == '-')
        return false;
    }
  if (hl == n)
    return true;
  if (s[hl] != ':')
    return false;
  return port_valid (s + hl + 1, n - hl - 1);
}

static bool
tag_valid (const char *s)
{
  size_t n = strlen (s);
  if (n == 0 || n > SBX_IMAGEREF_TAG_MAX)
    return false;
  if (!is_alnum (s[0]) && s[0] != '_')
    return false;
  for (size_t i = 1; i < n; i++)
    if (!is_alnum (s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
      return false;
  return true;
}

static bool
digest_valid (const char *s)
{
  if (strncmp (s, "sha256:", 7) != 0 || strlen (s + 7) != 64)
    return false;
  for (const char *p = s + 7; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return false;
  return true;
}

static int
bad (sbx_error **err, const char *s, const char *what)
{
  _cleanup_free_ char *shown = printable_escaped (s, 200);
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid image reference \"%s\": %s", shown, what);
}

/* Whether the first component FIRST (N bytes) names a registry. */
static bool
names_registry (const char *first, size_t n)
{
  return memchr (first, '.', n) || memchr (first, ':', n) || (n == 9 && memcmp (first, "localhost", 9) == 0)
         || (n > 0 && first[0] == '[');
}

int
sbx_imageref_parse (const char *s, const char *unqualified, sbx_imageref **ret, sbx_error **err)
{
  if (s == NULL || s[0] == '\0')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid image reference: empty");
  size_t len = strnlen (s, SBX_IMAGEREF_MAX + 1);
  if (len > SBX_IMAGEREF_MAX)
    return bad (err, s, "longer than 1024 characters");
  for (size_t i = 0; i < len; i++)
    {
      unsigned char c = (unsigned char) s[i];
      if (c <= 0x20 || c >= 0x7f)
        return bad (err, s, c < 0x20 || c == 0x7f ? "a control character" : "a character outside the grammar");
    }

  _cleanup_free_ char *buf = xstrdup (s);
  _cleanup_free_ char *digest = NULL, *tag = NULL, *registry = NULL, *repo = NULL;

  char *at = strchr (buf, '@');
  if (at)
    {
      *at = '\0';
      if (!digest_valid (at + 1))
        return bad (err, s, "the digest is not sha256: and 64 lowercase hex digits");
      digest = xstrdup (at + 1);
    }
  char *slash = strrchr (buf, '/');
  char *colon = strrchr (slash ? slash : buf, ':');
  /* "[::1]:5000/x": the colons of the registry are before the last '/'. A
   * name without '/' has no registry, so its ':' starts the tag. */
  if (colon)
    {
      *colon = '\0';
      if (!tag_valid (colon + 1))
        return bad (err, s, "a tag is 1 to 128 of [A-Za-z0-9_.-], not starting with '.' or '-'");
      tag = xstrdup (colon + 1);
    }
  const char *name = buf;
  char *first_end = strchr (buf, '/');
  if (first_end && names_registry (buf, (size_t) (first_end - buf)))
    {
      if (!registry_valid (buf, (size_t) (first_end - buf)))
        return bad (err, s, "the registry is not HOST[:PORT] or [IPV6][:PORT]");
      registry = xstrndup (buf, (size_t) (first_end - buf));
      name = first_end + 1;
    }
  else
    {
      const char *u = unqualified && unqualified[0] ? unqualified : DOCKER_IO;
      if (!registry_valid (u, strlen (u)))
        return bad (err, s, "the unqualified registry is not HOST[:PORT]");
      registry = xstrdup (u);
    }
  if (strcmp (registry, "index.docker.io") == 0 || strcmp (registry, "registry-1.docker.io") == 0)
    {
      free (registry);
      registry = xstrdup (DOCKER_IO);
    }
  if (name[0] == '\0')
    return bad (err, s, "no repository name");
  for (const char *p = name;;)
    {
      const char *e = strchr (p, '/');
      size_t n = e ? (size_t) (e - p) : strlen (p);
      const char *why = component_problem (p, n);
      if (why)
        return bad (err, s, why);
      if (!e)
        break;
      p = e + 1;
    }
  if (strcmp (registry, DOCKER_IO) == 0 && strchr (name, '/') == NULL)
    repo = xasprintf ("library/%s", name);
  else
    repo = xstrdup (name);
  if (strlen (repo) > NAME_TOTAL_MAX)
    return bad (err, s, "a repository name over 255 characters");
  if (tag == NULL && digest == NULL)
    tag = xstrdup ("latest");

  sbx_imageref *r = xmalloc0 (sizeof *r);
  r->registry = steal_pointer (&registry);
  r->repository = steal_pointer (&repo);
  r->tag = steal_pointer (&tag);
  r->digest = steal_pointer (&digest);
  *ret = r;
  return 0;
}

char *
sbx_imageref_string (const sbx_imageref *r)
{
  return xasprintf ("%s/%s%s%s%s%s", r->registry, r->repository, r->tag ? ":" : "", r->tag ? r->tag : "",
                    r->digest ? "@" : "", r->digest ? r->digest : "");
}

bool
sbx_imageref_is_canonical (const char *s)
{
  if (s == NULL)
    return false;
  const char *slash = strchr (s, '/');
  if (slash == NULL || !names_registry (s, (size_t) (slash - s)))
    return false;
  _cleanup_imageref_ sbx_imageref *r = NULL;
  if (sbx_imageref_parse (s, NULL, &r, NULL) < 0)
    return false;
  _cleanup_free_ char *c = sbx_imageref_string (r);
  return strcmp (c, s) == 0;
}

void
sbx_imageref_free (sbx_imageref *r)
{
  if (r == NULL)
    return;
  free (r->registry);
  free (r->repository);
  free (r->tag);
  free (r->digest);
  free (r);
}
