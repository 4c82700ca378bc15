/* Commit: a sandbox's files into an image. The new layer is made from the
 * sandbox's overlay upper dir (sbx_layer_from_upper); the image is the
 * sandbox's own (layers, environment, working directory) plus that layer. */
#include "config.h"
#include "commit.h"
#include "build.h"
#include "client.h"
#include "image.h"
#include "json.h"
#include "sandbox.h"
#include "util.h"

#include <string.h>
#include <sys/file.h>

/* The merged environment: the image's, then the sandbox's --env. */
static char **
commit_env (const sbx_sandbox *sb)
{
  char **env = strv_dup (sb->image_env ? sb->image_env : (char *[]){ NULL });
  for (size_t i = 0; sb->opts.env && sb->opts.env[i]; i++)
    strv_env_set (&env, sb->opts.env[i]);
  return env;
}

int
sbx_commit (const sbx_store *st, const char *id, const char *tag, sbx_image **ret_img, char **ret_layer,
            sbx_error **err)
{
  if (tag && !sbx_tag_name_is_valid (tag))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid tag `%s`", tag);
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (sbx_sandbox_get (st, id, &sb, err) < 0 || sbx_store_begin_write (st, "commit", err) < 0)
    return -1;
  /* The new layer is unreferenced until the image is stored; and an ended
   * sandbox's files are not removed under us. */
  _cleanup_close_ int layers_lock = sbx_store_layers_lock (st, LOCK_SH, err);
  if (layers_lock < 0)
    return -1;
  _cleanup_free_ char *fslock = sbx_store_path (st, "sandboxes/%s/fs.lock", id);
  _cleanup_close_ int fl = lock_path (fslock, LOCK_SH, err);
  if (fl < 0)
    return -1;
  bool running = sb->state == SBX_STATE_RUNNING, we_paused = false;
  if (!running && !sbx_state_is_final (sb->state))
    return sbx_error_set (err, SBX_E_BUSY, 0, "sandbox %s is %s: try again when it has %s", id,
                          sbx_state_name (sb->state), sb->state == SBX_STATE_CREATING ? "started" : "ended");
  if (running)
    {
      /* Everything written before this call reaches the files (gVisor may
       * hold written data in its memory until a sync), then nothing writes
       * while the layer is read. */
      char *sync_argv[] = { (char *) "/.sbx/init", (char *) "--sync", NULL };
      sbx_exec_opts eo = { .argv = sync_argv };
      int status = 0;
      if (!sb->paused)
        {
          if (sbx_client_exec (st, id, &eo, -1, -1, 2, &status, err) < 0 || sbx_client_pause (st, id, true, err) < 0)
            return sbx_error_wrap (err, "commit %s", id);
          we_paused = true;
        }
    }
  _cleanup_free_ char *digest = NULL;
  uint64_t size = 0;
  int r = sbx_layer_from_upper (st, id, &digest, &size, err);
  if (we_paused)
    {
      sbx_error *e2 = NULL;
      if (sbx_client_pause (st, id, false, r == 0 ? err : &e2) < 0 && r == 0)
        r = -1;
      sbx_error_free (e2);
    }
  if (r < 0)
    return sbx_error_wrap (err, "commit %s", id);
  _cleanup_image_ sbx_image *img = xmalloc0 (sizeof *img);
  _cleanup_image_ sbx_image *src = NULL;
  if (sb->image_id)
    sbx_image_load (st, sb->image_id, &src, NULL);
  img->layers = strv_dup (sb->layers);
  strv_push (&img->layers, digest);
  img->env = commit_env (sb);
  img->workdir = xstrdup (sb->opts.cwd ? sb->opts.cwd : sb->image_workdir ? sb->image_workdir : "/");
  img->cmd = src && src->cmd ? strv_dup (src->cmd) : NULL;
  img->user = src && src->user ? xstrdup (src->user) : NULL;
  img->size = (src ? src->size : 0) + size;
  if (sbx_image_store (st, img, err) < 0 || (tag && sbx_tag_set (st, tag, img->id, err) < 0))
    return -1;
  *ret_img = steal_pointer (&img);
  *ret_layer = steal_pointer (&digest);
  return 0;
}
