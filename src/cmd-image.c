/* Image commands: images, import, tag, rmi. */
#include "config.h"
#include "cli.h"
#include "image.h"
#include "json.h"
#include "layer.h"
#include "lifecycle.h"
#include "util.h"

#include <getopt.h>
#include <string.h>
#include <sys/file.h>

enum { O_TAG = 't' };

const cli_opt sbx_import_opts[] = {
  { "tag", O_TAG, required_argument, "NAME", "tag the imported image NAME" },
  { NULL },
};

int
cmd_import (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  const char *tag = NULL;
  cli_parser p;
  cli_parser_init (&p, cli, cli_find ("import"), argc, argv);
  int key;
  const char *arg;
  while ((key = cli_next (&p, &arg, err)) > 0 && key != 'h')
    tag = arg;
  cli_parser_done (&p);
  if (key == 'h')
    return 0;
  if (key < 0)
    return -1;
  if (optind + 1 != argc)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "import: usage: sbx import [--tag NAME] FILE");
  if (tag && !name_is_valid (tag))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid tag `%s`", tag);
  const char *file = argv[optind];
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  _cleanup_free_ char *digest = NULL;
  uint64_t size = 0;
  _cleanup_close_ int layers_lock = sbx_store_layers_lock (st, LOCK_SH, err);
  if (layers_lock < 0 || sbx_layer_import_tar (st->root, file, &digest, &size, err) < 0)
    return -1;
  _cleanup_image_ sbx_image *img = xmalloc0 (sizeof *img);
  img->layers = xmalloc0 (sizeof (char *));
  strv_push (&img->layers, digest);
  img->env = xmalloc0 (sizeof (char *));
  strv_push (&img->env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  img->workdir = xstrdup ("/");
  img->size = size;
  if (sbx_image_store (st, img, err) < 0 || (tag && sbx_tag_set (st, tag, img->id, err) < 0))
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", img->id);
      j_kstr (g, "tag", tag);
      j_kstr (g, "layer", digest);
      j_kint (g, "size", (long long) size);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s\n", img->id);
  return 0;
}

const cli_opt sbx_rmi_opts[] = {
  { "force", 'f', no_argument, NULL, "remove even if sandboxes were made from it (their layers stay until they go)" },
  { NULL },
};

int
cmd_rmi (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  bool force = false;
  cli_parser p;
  cli_parser_init (&p, cli, cli_find ("rmi"), argc, argv);
  int key;
  const char *arg;
  while ((key = cli_next (&p, &arg, err)) > 0 && key != 'h')
    force = true;
  cli_parser_done (&p);
  if (key != 0)
    return key < 0 ? -1 : 0;
  if (optind >= argc)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "rmi: usage: sbx rmi [--force] IMAGE...");
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  yajl_gen g = cli->json ? cli_json_begin () : NULL;
  if (g)
    j_arr (g);
  int ret = 0;
  for (int i = optind; i < argc && ret == 0; i++)
    {
      _cleanup_free_ char *id = NULL;
      bool untagged;
      if (sbx_image_remove (st, argv[i], force, &id, &untagged, err) < 0)
        ret = -1;
      else if (g)
        {
          j_map (g);
          j_kstr (g, "ref", argv[i]);
          j_kstr (g, "id", id);
          j_kstr (g, "action", untagged ? "untagged" : "removed");
          j_endmap (g);
        }
      else
        printf ("%s %s\n", untagged ? "untagged" : "removed", untagged ? argv[i] : id);
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
  cli_parser p;
  cli_parser_init (&p, cli, cli_find ("tag"), argc, argv);
  int key;
  const char *arg;
  key = cli_next (&p, &arg, err);
  cli_parser_done (&p);
  if (key != 0)
    return key < 0 ? -1 : 0;
  if (argc - optind != 2)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "tag: usage: sbx tag IMAGE NAME");
  const char *name = argv[optind + 1];
  if (!name_is_valid (name))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid tag `%s`", name);
  sbx_store *st;
  _cleanup_image_ sbx_image *img = NULL;
  if (cli_store (cli, &st, err) < 0 || sbx_image_resolve (st, argv[optind], &img, err) < 0
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

int
cmd_images (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  cli_parser p;
  cli_parser_init (&p, cli, cli_find ("images"), argc, argv);
  int key;
  const char *arg;
  key = cli_next (&p, &arg, err);
  cli_parser_done (&p);
  if (key != 0)
    return key < 0 ? -1 : 0;
  if (optind < argc)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "images: unexpected argument `%s`", argv[optind]);
  sbx_store *st;
  _cleanup_strv_ char **ids = NULL;
  if (cli_store (cli, &st, err) < 0 || sbx_image_list (st, &ids, err) < 0)
    return -1;
  yajl_gen g = cli->json ? cli_json_begin () : NULL;
  if (g)
    j_arr (g);
  else
    printf ("%-19s %-24s %-10s %-6s %s\n", "ID", "TAGS", "SIZE", "LAYERS", "CREATED");
  for (size_t i = 0; ids[i]; i++)
    {
      _cleanup_image_ sbx_image *img = NULL;
      _cleanup_strv_ char **tags = NULL;
      if (sbx_image_load (st, ids[i], &img, NULL) < 0 || sbx_tags_of (st, ids[i], &tags, NULL) < 0)
        continue;
      char created[32], size[32];
      format_time (img->created, created, sizeof created);
      human_size (img->size, size, sizeof size);
      if (g)
        {
          j_map (g);
          j_kstr (g, "id", img->id);
          j_kstrv (g, "tags", tags);
          j_kint (g, "size", (long long) img->size);
          j_kstrv (g, "layers", img->layers);
          j_kint (g, "created", img->created);
          j_endmap (g);
          continue;
        }
      _cleanup_free_ char *tagl = xstrdup ("");
      for (size_t k = 0; tags[k]; k++)
        {
          char *t = xasprintf ("%s%s%s", tagl, k ? "," : "", tags[k]);
          free (tagl);
          tagl = t;
        }
      printf ("%-19.19s %-24s %-10s %-6zu %s\n", img->id + 7, tagl[0] ? tagl : "-", size, strv_len (img->layers),
              created);
    }
  if (g)
    {
      j_endarr (g);
      cli_json_end (g);
    }
  return 0;
}
