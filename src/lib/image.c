/* Images and tags in the store. */
#include "config.h"
#include "image.h"
#include "imageref.h"
#include "json.h"
#include "layer.h"
#include "sha256.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/file.h>

#define IMAGE_JSON_MAX (1 << 20)

void
sbx_image_free (sbx_image *img)
{
  if (img == NULL)
    return;
  free (img->id);
  strv_free (img->layers);
  strv_free (img->env);
  free (img->workdir);
  strv_free (img->cmd);
  free (img->user);
  free (img);
}

/* The canonical document, without the id (which is its hash). */
static char *
image_doc (const sbx_image *img, size_t *len)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_kstrv (g, "layers", img->layers);
  j_str (g, "config");
  j_map (g);
  j_kstrv (g, "env", img->env);
  j_kstr (g, "workdir", img->workdir);
  j_kstrv (g, "cmd", img->cmd);
  j_kstr (g, "user", img->user);
  j_endmap (g);
  j_kint (g, "created", img->created);
  j_kint (g, "size", (long long) img->size);
  j_endmap (g);
  return j_take (g, len);
}

static const char *
hex_of (const char *id)
{
  return strncmp (id, "sha256:", 7) == 0 ? id + 7 : id;
}

static bool
is_hex (const char *s, size_t min, size_t max)
{
  size_t n = strlen (s);
  if (n < min || n > max)
    return false;
  for (; *s; s++)
    if (!isxdigit ((unsigned char) *s) || isupper ((unsigned char) *s))
      return false;
  return true;
}

int
sbx_image_store (const sbx_store *st, sbx_image *img, sbx_error **err)
{
  /* The id covers layers and config, not the creation time: the same
   * content built twice is the same image. */
  int64_t created = img->created ? img->created : now_unix ();
  img->created = 0;
  size_t len;
  _cleanup_free_ char *idoc = image_doc (img, &len);
  char hex[65];
  sha256_hex (idoc, len, hex);
  img->created = created;
  _cleanup_free_ char *path = sbx_store_path (st, "images/%s.json", hex);
  free (img->id);
  img->id = xasprintf ("sha256:%s", hex);
  if (path_exists (path))
    return 0;
  _cleanup_free_ char *doc = image_doc (img, &len);
  return write_file_atomic (path, doc, len, 0600, err);
}

static int
parse_image (const char *id, yajl_val v, sbx_image **ret, sbx_error **err)
{
  sbx_image *img = xmalloc0 (sizeof *img);
  img->id = xasprintf ("sha256:%s", hex_of (id));
  yajl_val cfg = j_get (v, "config");
  const char *s = NULL;
  int64_t n = 0;
  int r = j_get_strv (v, "layers", true, &img->layers, err);
  if (r == 0)
    r = j_get_strv (cfg, "env", false, &img->env, err);
  if (r == 0)
    r = j_get_strv (cfg, "cmd", false, &img->cmd, err);
  if (r == 0 && (s = NULL, j_get_str (cfg, "workdir", false, &s, err)) == 0 && s)
    img->workdir = xstrdup (s);
  if (r == 0 && (s = NULL, r = j_get_str (cfg, "user", false, &s, err)) == 0 && s)
    img->user = xstrdup (s);
  if (r == 0 && (r = j_get_int (v, "created", false, &n, err)) == 0)
    img->created = n;
  if (r == 0 && (n = 0, r = j_get_int (v, "size", false, &n, err)) == 0)
    img->size = (uint64_t) n;
  if (r < 0)
    {
      sbx_image_free (img);
      return sbx_error_wrap (err, "image %s", id);
    }
  *ret = img;
  return 0;
}

int
sbx_image_load (const sbx_store *st, const char *id, sbx_image **ret, sbx_error **err)
{
  const char *hex = hex_of (id);
  if (!is_hex (hex, 64, 64))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is not an image id", id);
  _cleanup_free_ char *path = sbx_store_path (st, "images/%s.json", hex);
  _cleanup_free_ char *missing = xasprintf ("image `%s` not found", id);
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (j_read_file (path, IMAGE_JSON_MAX, "image", missing, &v, err) < 0)
    return -1;
  return parse_image (hex, v, ret, err);
}

int
sbx_image_list (const sbx_store *st, char ***ret_ids, sbx_error **err)
{
  _cleanup_free_ char *dir = sbx_store_path (st, "images");
  _cleanup_closedir_ DIR *d = opendir (dir);
  if (d == NULL)
    return sbx_error_errno (err, errno, "open `%s`", dir);
  char **ids = xmalloc0 (sizeof (char *));
  struct dirent *de;
  while ((de = readdir (d)))
    {
      size_t n = strlen (de->d_name);
      if (n != 64 + 5 || strcmp (de->d_name + 64, ".json") != 0)
        continue;
      _cleanup_free_ char *id = xasprintf ("sha256:%.64s", de->d_name);
      strv_push (&ids, id);
    }
  *ret_ids = ids;
  return 0;
}

/* tags.json: {"NAME": "sha256:HEX", ...}, rewritten atomically under a lock. */
static int
tags_read (const sbx_store *st, yajl_val *ret, sbx_error **err)
{
  _cleanup_free_ char *path = sbx_store_path (st, "images/tags.json");
  _cleanup_error_ sbx_error *e = NULL;
  *ret = NULL;
  if (j_read_file (path, IMAGE_JSON_MAX, "tags.json", "no tags", ret, &e) < 0 && e->code != SBX_E_NOT_FOUND)
    return sbx_error_set (err, e->code, e->errnum, "%s", e->msg);
  return 0;
}

bool
sbx_tag_name_is_valid (const char *s)
{
  return name_is_valid (s) || sbx_imageref_is_canonical (s);
}

char *
sbx_image_local_ref (const sbx_store *st, const char *ref, const char *unqualified)
{
  _cleanup_free_ char *id = NULL;
  if (sbx_tag_name_is_valid (ref) && sbx_tag_lookup (st, ref, &id, NULL) == 0)
    return xstrdup (ref);
  _cleanup_imageref_ sbx_imageref *ir = NULL;
  if (sbx_imageref_parse (ref, unqualified, &ir, NULL) < 0)
    return xstrdup (ref);
  _cleanup_free_ char *canon = sbx_imageref_string (ir);
  /* A plain name may still be an id prefix or busybox; anything else
   * (`python:3.12`) is NOT_FOUND by its full reference. */
  if (sbx_tag_lookup (st, canon, &id, NULL) == 0 || !name_is_valid (ref))
    return steal_pointer (&canon);
  return xstrdup (ref);
}

int
sbx_tag_lookup (const sbx_store *st, const char *name, char **ret_id, sbx_error **err)
{
  _cleanup_yajl_val_ yajl_val tags = NULL;
  if (tags_read (st, &tags, err) < 0)
    return -1;
  yajl_val v = j_get (tags, name);
  if (v == NULL || !YAJL_IS_STRING (v))
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "image `%s` not found", name);
  *ret_id = xstrdup (v->u.string);
  return 0;
}

int
sbx_tags_of (const sbx_store *st, const char *id, char ***ret, sbx_error **err)
{
  _cleanup_yajl_val_ yajl_val tags = NULL;
  if (tags_read (st, &tags, err) < 0)
    return -1;
  char **r = xmalloc0 (sizeof (char *));
  for (size_t i = 0; tags && YAJL_IS_OBJECT (tags) && i < tags->u.object.len; i++)
    {
      yajl_val v = tags->u.object.values[i];
      if (YAJL_IS_STRING (v) && strcmp (v->u.string, id) == 0)
        strv_push (&r, tags->u.object.keys[i]);
    }
  *ret = r;
  return 0;
}

int
sbx_tag_set (const sbx_store *st, const char *name, const char *id, sbx_error **err)
{
  if (!sbx_tag_name_is_valid (name))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid tag `%s`", name);
  _cleanup_free_ char *lockp = sbx_store_path (st, "images/tags.lock");
  _cleanup_close_ int lk = lock_path (lockp, LOCK_EX, err);
  if (lk < 0)
    return -1;
  _cleanup_yajl_val_ yajl_val tags = NULL;
  if (tags_read (st, &tags, err) < 0)
    return -1;
  _cleanup_yajl_gen_ yajl_gen g = j_new (true);
  j_map (g);
  for (size_t i = 0; tags && YAJL_IS_OBJECT (tags) && i < tags->u.object.len; i++)
    if (strcmp (tags->u.object.keys[i], name) != 0)
      {
        j_str (g, tags->u.object.keys[i]);
        j_val (g, tags->u.object.values[i]);
      }
  if (id)
    j_kstr (g, name, id);
  j_endmap (g);
  size_t len;
  _cleanup_free_ char *doc = j_take (g, &len);
  _cleanup_free_ char *path = sbx_store_path (st, "images/tags.json");
  return write_file_atomic (path, doc, len, 0600, err);
}

int
sbx_image_builtin_busybox (const sbx_store *st, char **ret_id, sbx_error **err)
{
  _cleanup_free_ char *lockp = sbx_store_path (st, "images/busybox.lock");
  _cleanup_close_ int lk = lock_path (lockp, LOCK_EX, err);
  if (lk < 0)
    return -1;
  /* Its layer is unreferenced until the image is stored: no collection. */
  _cleanup_close_ int layers_lock = sbx_store_layers_lock (st, LOCK_SH, err);
  if (layers_lock < 0)
    return -1;
  _cleanup_free_ char *digest = NULL;
  uint64_t size = 0;
  if (sbx_layer_make_busybox (st->root, &digest, &size, err) < 0)
    return sbx_error_wrap (err, "build the built-in busybox image");
  _cleanup_image_ sbx_image *img = xmalloc0 (sizeof *img);
  img->layers = xmalloc0 (sizeof (char *));
  strv_push (&img->layers, digest);
  img->env = xmalloc0 (sizeof (char *));
  strv_push (&img->env, "PATH=" SBX_DEFAULT_PATH);
  img->cmd = xmalloc0 (sizeof (char *));
  strv_push (&img->cmd, "/bin/sh");
  img->workdir = xstrdup ("/");
  img->size = size;
  if (sbx_image_store (st, img, err) < 0 || sbx_tag_set (st, "busybox", img->id, err) < 0)
    return -1;
  if (ret_id)
    *ret_id = xstrdup (img->id);
  return 0;
}

static int
resolve_prefix (const sbx_store *st, const char *hex, char **ret_id, sbx_error **err)
{
  _cleanup_strv_ char **ids = NULL;
  if (sbx_image_list (st, &ids, err) < 0)
    return -1;
  char *found = NULL;
  for (size_t i = 0; ids[i]; i++)
    if (strncmp (ids[i] + 7, hex, strlen (hex)) == 0)
      {
        if (found)
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "image id prefix `%s` is ambiguous", hex);
        found = ids[i];
      }
  if (found == NULL)
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "image `%s` not found", hex);
  *ret_id = xstrdup (found);
  return 0;
}

static int
resolve (const sbx_store *st, const char *ref, bool usable, sbx_image **ret, sbx_error **err)
{
  _cleanup_free_ char *id = NULL;
  const char *hex = hex_of (ref);
  if (is_hex (hex, 64, 64))
    id = xstrdup (ref);
  else if (sbx_tag_name_is_valid (ref) && sbx_tag_lookup (st, ref, &id, NULL) == 0)
    ;
  else if (usable && strcmp (ref, "busybox") == 0)
    {
      if (sbx_image_builtin_busybox (st, &id, err) < 0)
        return -1;
    }
  else if (is_hex (hex, 12, 63))
    {
      if (resolve_prefix (st, hex, &id, err) < 0)
        return -1;
    }
  else if (!sbx_tag_name_is_valid (ref))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid image reference `%s`", ref);
  else
    return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "image `%s` not found", ref);
  if (sbx_image_load (st, id, ret, err) < 0)
    return -1;
  for (size_t i = 0; usable && (*ret)->layers[i]; i++)
    if (sbx_layer_check (st->root, (*ret)->layers[i], err) < 0)
      {
        sbx_error_wrap (err, "image `%s`", ref);
        sbx_image_free (*ret);
        *ret = NULL;
        return -1;
      }
  return 0;
}

int
sbx_image_resolve (const sbx_store *st, const char *ref, sbx_image **ret, sbx_error **err)
{
  return resolve (st, ref, true, ret, err);
}

int
sbx_image_resolve_existing (const sbx_store *st, const char *ref, sbx_image **ret, sbx_error **err)
{
  return resolve (st, ref, false, ret, err);
}
