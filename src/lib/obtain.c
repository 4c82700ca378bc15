/* What --image REF means (pull.h sbx_image_obtain): a name the store has
 * is used as it is; a registry reference is normalized and looked up as the
 * tag a pull gives it, and pulled only when the policy says so. The path
 * where the image is present reads the store and nothing else: no network,
 * no transport set up. */
#include "config.h"
#include "imageref.h"
#include "pull.h"
#include "util.h"

#include <ctype.h>
#include <string.h>

static bool
all_hex (const char *s)
{
  if (*s == '\0')
    return false;
  for (; *s; s++)
    if (!isxdigit ((unsigned char) *s) || isupper ((unsigned char) *s))
      return false;
  return true;
}

/* An id ("sha256:HEX", or 64 hex digits) names nothing a registry has. */
static bool
is_image_id (const char *ref)
{
  if (strncmp (ref, "sha256:", 7) == 0)
    return true;
  return strlen (ref) == 64 && all_hex (ref);
}

/* REF as the store knows it: 1 with *ret when the store has that name, 0
 * when it has not (and REF may still name a registry's image), -1 when it
 * has it but cannot use it (a damaged layer, an ambiguous id prefix): that
 * is an error, not a reason to pull. */
static int
local (const sbx_store *st, const char *ref, sbx_image **ret, sbx_error **err)
{
  _cleanup_image_ sbx_image *found = NULL;
  _cleanup_error_ sbx_error *e = NULL;
  if (strcmp (ref, "busybox") != 0 && sbx_image_resolve_existing (st, ref, &found, &e) < 0)
    {
      if (e->code == SBX_E_NOT_FOUND)
        return 0;
      return sbx_error_set (err, e->code, e->errnum, "%s", e->msg);
    }
  return sbx_image_resolve (st, ref, ret, err) < 0 ? -1 : 1;
}

int
sbx_image_obtain (const sbx_store *st, const sbx_conf *conf, const char *ref, sbx_pull_policy policy,
                  const sbx_pull_opts *o, sbx_image **ret, sbx_error **err)
{
  /* A plain name, an id or a prefix, and busybox, as the store has them. */
  if (is_image_id (ref) || (name_is_valid (ref) && !sbx_imageref_is_canonical (ref)))
    {
      int r = local (st, ref, ret, err);
      if (r != 0)
        return r < 0 ? -1 : 0;
      if (is_image_id (ref))
        return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "image `%s` not found", ref);
    }
  _cleanup_imageref_ sbx_imageref *ir = NULL;
  if (sbx_imageref_parse (ref, conf ? conf->unqualified_registry : NULL, &ir, err) < 0)
    return -1;
  _cleanup_free_ char *canon = sbx_imageref_string (ir);
  if (policy != SBX_PULL_ALWAYS)
    {
      int r = local (st, canon, ret, err);
      if (r != 0)
        return r < 0 ? -1 : 0;
    }
  if (policy == SBX_PULL_NEVER)
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "image `%s` is not in the store, and --pull never does not pull it",
                          canon);
  _cleanup_image_ sbx_image *img = NULL;
  if (sbx_pull (st, conf, canon, o, &img, NULL, err) < 0)
    return -1;
  /* What a sandbox is made from: checked as a resolution checks it. */
  if (sbx_image_resolve (st, img->id, ret, err) < 0)
    return sbx_error_wrap (err, "image `%s`", canon);
  return 0;
}
