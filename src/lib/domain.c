/* Domain rules: the parser of --allow-domain and the matcher (domain.h). */
#include "config.h"
#include "domain.h"
#include "cidr.h"
#include "util.h"

#include <string.h>

static bool
label_char (char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Checks the labels of the lower-cased name S; their count into *RET_N. */
static const char *
labels_check (const char *s, size_t *ret_n)
{
  size_t n = 0;
  for (const char *l = s;; n++)
    {
      size_t len = strcspn (l, ".");
      if (len == 0)
        return "an empty label";
      if (len > 63)
        return "a label longer than 63 bytes";
      if (l[0] == '-' || l[len - 1] == '-')
        return "a label that starts or ends with '-'";
      for (size_t i = 0; i < len; i++)
        if (!label_char (l[i]))
          return l[i] == '*' ? "'*' other than as the whole first label (*.NAME)"
                             : "a character other than a letter, a digit, '-' or '_'";
      if (l[len] == '\0')
        break;
      l += len + 1;
    }
  *ret_n = n + 1;
  return NULL;
}

int
sbx_domain_rule_parse (const char *s, char **ret, sbx_error **err)
{
  if (s == NULL || *s == '\0')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--allow-domain: an empty name");
  size_t len = strlen (s);
  _cleanup_free_ char *r = xstrdup (s);
  for (size_t i = 0; i < len; i++)
    if (r[i] >= 'A' && r[i] <= 'Z')
      r[i] = (char) (r[i] - 'A' + 'a');
  if (len > 1 && r[len - 1] == '.')
    r[--len] = '\0';
  const char *name = strncmp (r, "*.", 2) == 0 ? r + 2 : r, *why = NULL;
  size_t nlabels = 0;
  sbx_cidr c;
  if (strlen (name) > 253)
    why = "longer than 253 bytes";
  else if (sbx_cidr_address_parse (name, &c, NULL) == 0 || strchr (name, ':'))
    why = "an IP address (use --allow CIDR)";
  else
    why = labels_check (name, &nlabels);
  if (why == NULL && nlabels < 2 && name != r)
    why = "a wildcard over a top level domain (`*.NAME` needs NAME of at least two labels)";
  if (why)
    {
      _cleanup_free_ char *shown = printable_escaped (s, 300);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--allow-domain: `%s` is not NAME or *.NAME: %s", shown,
                            why);
    }
  *ret = steal_pointer (&r);
  return 0;
}

int
sbx_domain_rules_parse (char *const *v, char ***ret, sbx_error **err)
{
  _cleanup_strv_ char **out = xmalloc0 (sizeof (char *));
  size_t n = 0;
  for (size_t i = 0; v && v[i]; i++)
    {
      _cleanup_free_ char *r = NULL;
      if (sbx_domain_rule_parse (v[i], &r, err) < 0)
        return -1;
      if (++n > SBX_DOMAINS_MAX)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--allow-domain: at most %d names", SBX_DOMAINS_MAX);
      bool dup = false;
      for (size_t k = 0; out[k] && !dup; k++)
        dup = strcmp (out[k], r) == 0;
      if (!dup)
        strv_push (&out, r);
    }
  if (ret)
    *ret = steal_pointer (&out);
  return 0;
}

bool
sbx_domain_match (char *const *rules, const char *name)
{
  size_t n = strlen (name);
  for (size_t i = 0; rules && rules[i]; i++)
    {
      const char *r = rules[i];
      if (strncmp (r, "*.", 2) != 0)
        {
          if (strcmp (r, name) == 0)
            return true;
          continue;
        }
      /* *.NAME: a name that ends in ".NAME" (one label or more before). */
      size_t rl = strlen (r + 1); /* ".NAME" */
      if (n > rl && strcmp (name + n - rl, r + 1) == 0)
        return true;
    }
  return false;
}
