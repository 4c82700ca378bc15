/* Image commands: images, import, export, tag, rmi. */
#include "config.h"
#include "cli.h"
#include "conf.h"
#include "commands.h"
#include "image.h"
#include "json.h"
#include "layer.h"
#include "lifecycle.h"
#include "oci.h"
#include "util.h"

#include <getopt.h>
#include <string.h>
#include <sys/file.h>

enum { O_TAG = 't', O_COMPRESSION = 256 };

const cli_opt sbx_import_opts[] = {
  { "tag", O_TAG, required_argument, "NAME", "tag the imported image NAME", "@image" },
  { NULL },
};

/* An image operand as the store names it: a short registry name finds
 * the full reference it normalizes to (image.h sbx_image_local_ref). */
static int
local_ref (const sbx_store *st, const char *ref, char **ret, sbx_error **err)
{
  _cleanup_conf_ sbx_conf *conf = NULL;
  if (sbx_conf_load (NULL, &conf, err) < 0)
    return -1;
  *ret = sbx_image_local_ref (st, ref, conf->unqualified_registry);
  return 0;
}

/* After a failed import: layers it installed before the failure (only a
 * failed rename can leave any) are unreferenced; collect them once the
 * lock is ours alone. */
static void
import_cleanup (const sbx_store *st, int *layers_lock)
{
  closep (layers_lock);
  sbx_layers_gc (st, NULL);
}

/* Each layer was held to image_size_max as it was made; the image is too. */
static int
image_size_check (const sbx_image *img, sbx_error **err)
{
  uint64_t max = sbx_layer_size_max ();
  if (max > 0 && img->size > max)
    return sbx_error_set (err, SBX_E_RESOURCE_EXHAUSTED, 0,
                          "the image's %zu layers expand to %llu MiB, past %llu MiB (image_size_max in sbx.conf)",
                          strv_len (img->layers), (unsigned long long) (img->size >> 20),
                          (unsigned long long) (max >> 20));
  return 0;
}

int
cmd_import (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  const char *tag = NULL;
  int first, parsed = cli_simple_parse (cli, "import", argc, argv, 1, 1, &first, cli_str_opt, &tag, err);
  if (parsed != 0)
    return parsed < 0 ? -1 : 0;
  if (tag && !sbx_tag_name_is_valid (tag))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid tag `%s`", tag);
  const char *file = argv[first];
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0 || sbx_store_begin_write (st, "import", err) < 0)
    return -1;
  _cleanup_image_ sbx_image *img = NULL;
  sbx_import_kind kind;
  _cleanup_close_ int layers_lock = sbx_store_layers_lock (st, LOCK_SH, err);
  if (layers_lock < 0)
    return -1;
  if (sbx_oci_import (st->root, file, &img, &kind, err) < 0 || image_size_check (img, err) < 0
      || sbx_image_store (st, img, err) < 0 || (tag && sbx_tag_set (st, tag, img->id, err) < 0))
    {
      import_cleanup (st, &layers_lock);
      return -1;
    }
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", img->id);
      j_kstr (g, "tag", tag);
      j_kstr (g, "kind", sbx_import_kind_name (kind));
      j_kstr (g, "layer", img->layers[strv_len (img->layers) - 1]);
      j_kstrv (g, "layers", img->layers);
      j_kint (g, "size", (long long) img->size);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s\n", img->id);
  return 0;
}

const cli_opt sbx_export_opts[] = {
  { "compression", O_COMPRESSION, required_argument, "gzip|none",
    "how the layers are stored in the archive (default gzip)", "gzip none" },
  { NULL },
};

/* The ref.name of an export: the tag the image was named by, else its
 * first tag, else "latest". */
static char *
export_ref_name (const sbx_store *st, const char *ref, const sbx_image *img)
{
  _cleanup_strv_ char **tags = NULL;
  if (sbx_tags_of (st, img->id, &tags, NULL) < 0 || tags[0] == NULL)
    return xstrdup ("latest");
  for (size_t i = 0; tags[i]; i++)
    if (strcmp (tags[i], ref) == 0)
      return xstrdup (ref);
  return xstrdup (tags[0]);
}

static int
compression_opt (void *data, int key, const char *arg, sbx_error **err)
{
  sbx_oci_compression *comp = data;
  if (strcmp (arg, "gzip") == 0)
    *comp = SBX_OCI_GZIP;
  else if (strcmp (arg, "none") == 0)
    *comp = SBX_OCI_UNCOMPRESSED;
  else
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "export: --compression is gzip or none, not `%s`", arg);
  return 0;
}

int
cmd_export (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  sbx_oci_compression comp = SBX_OCI_GZIP;
  int first, parsed = cli_simple_parse (cli, "export", argc, argv, 2, 2, &first, compression_opt, &comp, err);
  if (parsed != 0)
    return parsed < 0 ? -1 : 0;
  const char *ref = argv[first], *file = argv[first + 1];
  sbx_store *st;
  _cleanup_image_ sbx_image *img = NULL;
  uint64_t size = 0;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  /* Held from resolving the image to the last layer read: gc leaves them. */
  _cleanup_close_ int layers_lock = sbx_store_layers_lock (st, LOCK_SH, err);
  _cleanup_free_ char *local = NULL;
  if (layers_lock < 0 || local_ref (st, ref, &local, err) < 0 || sbx_image_resolve (st, local, &img, err) < 0)
    return -1;
  _cleanup_free_ char *ref_name = export_ref_name (st, local, img);
  if (sbx_oci_export (st->root, img, ref_name, comp, file, &size, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", img->id);
      j_kstr (g, "file", file);
      j_kint (g, "size", (long long) size);
      j_kstr (g, "ref_name", ref_name);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s\n", img->id);
  return 0;
}

const cli_opt sbx_images_opts[] = {
  { "quiet", 'q', no_argument, NULL, "print image ids only (what rmi, tag, export and --image take)" },
  { NULL },
};

const cli_opt sbx_rmi_opts[] = {
  { "force", 'f', no_argument, NULL, "remove even if sandboxes were made from it (their layers stay until they go)" },
  { NULL },
};

int
cmd_rmi (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  bool force = false;
  int first, parsed = cli_simple_parse (cli, "rmi", argc, argv, 1, -1, &first, cli_flag_opt, &force, err);
  if (parsed != 0)
    return parsed < 0 ? -1 : 0;
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  yajl_gen g = cli->json ? cli_json_begin () : NULL;
  if (g)
    j_arr (g);
  int ret = 0;
  for (int i = first; i < argc && ret == 0; i++)
    {
      _cleanup_free_ char *id = NULL, *ref = NULL;
      bool untagged;
      if (local_ref (st, argv[i], &ref, err) < 0 || sbx_image_remove (st, ref, force, &id, &untagged, err) < 0)
        ret = -1;
      else if (g)
        {
          j_map (g);
          j_kstr (g, "ref", ref);
          j_kstr (g, "id", id);
          j_kstr (g, "action", untagged ? "untagged" : "removed");
          j_endmap (g);
        }
      else
        printf ("%s %s\n", untagged ? "untagged" : "removed", untagged ? ref : id);
    }
  if (g && ret == 0)
    {
      j_endarr (g);
      cli_json_end (g);
    }
  else if (g)
    yajl_gen_free (g);
  return ret;
}

int
cmd_tag (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int first, parsed = cli_simple_parse (cli, "tag", argc, argv, 2, 2, &first, NULL, NULL, err);
  if (parsed != 0)
    return parsed < 0 ? -1 : 0;
  const char *name = argv[first + 1];
  if (!sbx_tag_name_is_valid (name))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid tag `%s`", name);
  sbx_store *st;
  _cleanup_image_ sbx_image *img = NULL;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  _cleanup_free_ char *src = NULL;
  if (local_ref (st, argv[first], &src, err) < 0 || sbx_image_resolve (st, src, &img, err) < 0
      || sbx_tag_set (st, name, img->id, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", img->id);
      j_kstr (g, "tag", name);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("tagged %s as %s\n", img->id, name);
  return 0;
}

static void
human_size (uint64_t n, char *buf, size_t len)
{
  static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  double v = (double) n;
  size_t i = 0;
  while (v >= 1024 && i + 1 < ARRAY_SIZE (u))
    v /= 1024, i++;
  snprintf (buf, len, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

/* The TAGS column: every tag of the image, comma-separated. */
static char *
tag_list (char *const *tags)
{
  char *l = xstrdup ("");
  for (size_t k = 0; tags[k]; k++)
    {
      char *t = xasprintf ("%s%s%s", l, k ? "," : "", tags[k]);
      free (l);
      l = t;
    }
  return l;
}

int
cmd_images (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  bool quiet = false;
  int first, r = cli_simple_parse (cli, "images", argc, argv, 0, 0, &first, cli_flag_opt, &quiet, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  sbx_store *st;
  _cleanup_strv_ char **ids = NULL;
  if (cli_store (cli, &st, err) < 0 || sbx_image_list (st, &ids, err) < 0)
    return -1;
  size_t n = strv_len (ids);
  _cleanup_free_ sbx_image **imgs = xmalloc0 ((n + 1) * sizeof (sbx_image *));
  _cleanup_strv_ char **tagls = xmalloc0 ((n + 1) * sizeof (char *));
  _cleanup_free_ char ***tags = xmalloc0 ((n + 1) * sizeof (char **));
  /* Full references are long: the column is as wide as its widest entry. */
  int width = 24;
  for (size_t i = 0; i < n; i++)
    {
      if (sbx_image_load (st, ids[i], &imgs[i], NULL) < 0 || sbx_tags_of (st, ids[i], &tags[i], NULL) < 0)
        {
          sbx_image_free (imgs[i]);
          imgs[i] = NULL;
          tagls[i] = xstrdup (""); /* strv_free stops at the first NULL */
          continue;
        }
      tagls[i] = tag_list (tags[i]);
      if ((int) strlen (tagls[i]) > width)
        width = (int) strlen (tagls[i]);
    }
  yajl_gen g = cli->json ? cli_json_begin () : NULL;
  if (g)
    j_arr (g);
  else if (!quiet)
    printf ("%-19s %-*s %-10s %-6s %s\n", "ID", width, "TAGS", "SIZE", "LAYERS", "CREATED");
  for (size_t i = 0; i < n; i++)
    {
      sbx_image *img = imgs[i];
      if (img == NULL)
        continue;
      char created[32], size[32];
      format_time (img->created, created, sizeof created);
      human_size (img->size, size, sizeof size);
      if (g)
        {
          j_map (g);
          j_kstr (g, "id", img->id);
          j_kstrv (g, "tags", tags[i]);
          j_kint (g, "size", (long long) img->size);
          j_kstrv (g, "layers", img->layers);
          j_kint (g, "created", img->created);
          j_endmap (g);
        }
      else if (quiet)
        printf ("%s\n", img->id);
      else
        printf ("%-19.19s %-*s %-10s %-6zu %s\n", img->id + 7, width, tagls[i][0] ? tagls[i] : "-", size,
                strv_len (img->layers), created);
    }
  for (size_t i = 0; i < n; i++)
    {
      sbx_image_free (imgs[i]);
      strv_free (tags[i]);
    }
  if (g)
    {
      j_endarr (g);
      cli_json_end (g);
    }
  return 0;
}
