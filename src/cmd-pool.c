/* sbx pool create|ls|rm|fill, and create/run --pool: a claim of a parked
 * member, or a sandbox made cold when the pool is empty; after either, a
 * detached `sbx pool fill` makes the pool whole again (pool.h). */
#include "config.h"
#include "caps.h"
#include "cli-progress.h"
#include "cli.h"
#include "client.h"
#include "commands.h"
#include "conf.h"
#include "copyin.h"
#include "image.h"
#include "json.h"
#include "lifecycle.h"
#include "pool.h"
#include "pull.h"
#include "sandbox.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct pool_args {
  sbx_sandbox_opts o;
  sbx_pull_policy pull;
  int64_t size;
  bool quiet, create_opts;
};

static int
pool_opt (void *data, int key, const char *arg, sbx_error **err)
{
  struct pool_args *a = data;
  if (key == 'q')
    {
      a->quiet = true;
      return 0;
    }
  if (key == CLI_O_POOL_SIZE)
    return cli_int ("size", arg, 1, SBX_POOL_SIZE_MAX, &a->size, err) < 0 ? -1 : 0;
  const char *name = cli_create_opt_name (key);
  a->create_opts = true;
  if (name && strcmp (name, "name") == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "pool create: --name is a claim's (sbx create --pool POOL --name NAME), not a pool's");
  if (name && strcmp (name, "pull") == 0)
    return sbx_pull_policy_parse (arg, &a->pull, err) < 0 ? sbx_error_wrap (err, "--pull") : 0;
  return cli_create_opt (&a->o, key, arg, err) < 0 ? -1 : 0;
}

/* The image, obtained as create obtains it (pulled as --pull says). */
static int
pool_image (sbx_store *st, const struct pool_args *a, const sbx_conf *conf, sbx_image **ret, sbx_error **err)
{
  if (a->o.image_ref == NULL)
    return sbx_image_resolve (st, "busybox", ret, err);
  _cleanup_progress_ sbx_pull_opts po = { .platform = NULL };
  cli_progress_attach (&po, false);
  return sbx_image_obtain (st, conf, a->o.image_ref, a->pull, &po, ret, err);
}

static int
pool_create (sbx_cli *cli, sbx_store *st, const char *name, struct pool_args *a, sbx_error **err)
{
  if (a->size == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "pool create: --size N is required");
  _cleanup_conf_ sbx_conf *conf = NULL;
  _cleanup_image_ sbx_image *img = NULL;
  if (sbx_caps_require ("pool create", err) < 0 || sbx_sandbox_opts_validate (&a->o, err) < 0
      || sbx_conf_load (NULL, &conf, err) < 0 || sbx_sandbox_opts_check_host (st, &a->o, conf, err) < 0
      || pool_image (st, a, conf, &img, err) < 0)
    return -1;
  /* The disk is fixed in the record, so that a claim's --disk compares
   * with what the members have. */
  if (a->o.disk < 0)
    a->o.disk = (int64_t) conf->disk;
  if (sbx_pool_create (st, name, a->size, &a->o, img->id, err) < 0)
    return -1;
  int made = 0;
  if (sbx_pool_fill (st, name, &made, err) < 0)
    {
      int removed;
      sbx_pool_remove (st, name, &removed, NULL);
      return -1;
    }
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "name", name);
      j_kint (g, "size", a->size);
      j_kint (g, "parked", made);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s\n", name);
  return 0;
}

static void
gen_pool (yajl_gen g, const sbx_pool *p)
{
  j_map (g);
  j_kstr (g, "name", p->name);
  j_kint (g, "size", p->size);
  j_kint (g, "parked", (long long) p->parked);
  j_kint (g, "creating", (long long) p->creating);
  j_kstr (g, "image_id", p->image_id);
  j_kint (g, "created_at", p->created_at);
  j_str (g, "options");
  sbx_sandbox_opts_gen (g, &p->opts);
  j_endmap (g);
}

static int
pool_ls (sbx_cli *cli, sbx_store *st, const struct pool_args *a, sbx_error **err)
{
  _cleanup_strv_ char **names = NULL;
  if (sbx_pool_list (st, &names, err) < 0)
    return -1;
  yajl_gen g = NULL;
  if (cli->json)
    {
      g = cli_json_begin ();
      j_arr (g);
    }
  else if (!a->quiet)
    printf ("%-20s %5s %7s %9s %-8s %s\n", "NAME", "SIZE", "PARKED", "CREATING", "RUNTIME", "IMAGE");
  for (size_t i = 0; names[i]; i++)
    {
      _cleanup_pool_ sbx_pool *p = NULL;
      if (sbx_pool_get (st, names[i], &p, NULL) < 0)
        continue; /* being created or removed */
      if (g)
        gen_pool (g, p);
      else if (a->quiet)
        printf ("%s\n", p->name);
      else
        printf ("%-20s %5lld %7zu %9zu %-8s %s\n", p->name, (long long) p->size, p->parked, p->creating,
                p->opts.runtime ? p->opts.runtime : "-", p->opts.image_ref ? p->opts.image_ref : "busybox");
    }
  if (g)
    {
      j_endarr (g);
      cli_json_end (g);
    }
  return 0;
}

static int
pool_rm (sbx_cli *cli, sbx_store *st, char **names, int n, sbx_error **err)
{
  if (sbx_caps_require ("pool rm", err) < 0)
    return -1;
  for (int i = 0; i < n; i++)
    {
      int removed = 0;
      if (sbx_pool_remove (st, names[i], &removed, err) < 0)
        return -1;
      if (!cli->json)
        printf ("%s\n", names[i]);
    }
  if (cli->json)
    cli_json_ok ();
  return 0;
}

static int
pool_fill (sbx_cli *cli, sbx_store *st, const char *name, sbx_error **err)
{
  int made = 0;
  if (sbx_caps_require ("pool fill", err) < 0 || sbx_pool_fill (st, name, &made, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kint (g, "made", made);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%d\n", made);
  return 0;
}

int
cmd_pool (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  struct pool_args a = { .pull = SBX_PULL_MISSING };
  cli_create_defaults (&a.o);
  int first, r = cli_simple_parse (cli, "pool", argc, argv, 1, -1, &first, pool_opt, &a, err);
  const char *verb = r == 0 ? argv[first] : "";
  int n = argc - first - 1;
  char **ops = argv + first + 1;
  bool create = strcmp (verb, "create") == 0, ls = strcmp (verb, "ls") == 0;
  if (r == 0 && !create && !ls && strcmp (verb, "rm") != 0 && strcmp (verb, "fill") != 0)
    r = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "pool: unknown verb `%s` (create, ls, rm, fill)", verb);
  else if (r == 0 && ((create || strcmp (verb, "fill") == 0) ? n != 1 : ls ? n != 0 : n < 1))
    r = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "pool %s: expected %s", verb,
                       ls                                     ? "no arguments"
                       : create || strcmp (verb, "fill") == 0 ? "one NAME"
                                                              : "NAME...");
  else if (r == 0 && !create && (a.create_opts || a.size))
    r = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "pool %s: --size and create's options are pool create's", verb);
  else if (r == 0 && a.quiet && !ls)
    r = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "pool %s: --quiet does not apply", verb);
  sbx_store *st;
  if (r == 0 && cli_store (cli, &st, err) < 0)
    r = -1;
  if (r == 0)
    {
      if (create)
        r = pool_create (cli, st, ops[0], &a, err);
      else if (ls)
        r = pool_ls (cli, st, &a, err);
      else if (strcmp (verb, "rm") == 0)
        r = pool_rm (cli, st, ops, n, err);
      else
        r = pool_fill (cli, st, ops[0], err);
    }
  sbx_sandbox_opts_clear (&a.o);
  return r < 0 ? -1 : 0;
}

/* --- claims ------------------------------------------------------------- */

/* `sbx pool fill NAME`, detached (its own session, stdio on /dev/null),
 * not waited for: the claimer returns at once. Killed at any point, it
 * leaves what the next fill or gc settles. */
static void
spawn_fill (const sbx_store *st, const char *name)
{
  fflush (NULL);
  pid_t pid = fork ();
  if (pid < 0)
    return;
  if (pid == 0)
    {
      setsid ();
      if (fork () != 0)
        _exit (0);
      int null = open ("/dev/null", O_RDWR);
      if (null >= 0)
        {
          dup2 (null, 0);
          dup2 (null, 1);
          dup2 (null, 2);
        }
      close_fds_except (NULL, 0);
      char *args[] = { xstrdup ("sbx"),        xstrdup ("--root"), st->root,
                       xstrdup ("--run-root"), st->run_root,       xstrdup ("pool"),
                       xstrdup ("fill"),       xstrdup (name),     NULL };
      execv ("/proc/self/exe", args);
      _exit (127);
    }
  while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
    ;
}

/* Copies the claimer's --copy-in trees into the claimed sandbox's root. */
static int
claim_copy_in (const sbx_store *st, const char *id, char *const *specs, sbx_error **err)
{
  if (specs == NULL || specs[0] == NULL)
    return 0;
  _cleanup_close_ int root = -1;
  if (sbx_client_rootfd (st, id, &root, err) < 0)
    return -1;
  for (size_t i = 0; specs[i]; i++)
    {
      sbx_copyin_stats cs = { 0 };
      if (sbx_copyin (root, specs[i], &cs, err) < 0)
        return sbx_error_wrap (err, "--copy-in %s", specs[i]);
    }
  return 0;
}

/* The update a claim sends: the lifetimes always (they start now), the
 * limits the claimer gave. */
static void
claim_update (const sbx_sandbox_opts *m, char *const *given, sbx_update *u)
{
  memset (u, 0, sizeof *u);
  u->has_keep_warm = u->has_timeout = true;
  u->keep_warm = m->keep_warm;
  u->timeout = m->timeout;
  for (size_t i = 0; given && given[i]; i++)
    {
      if (strcmp (given[i], "cpu") == 0)
        u->has_cpu = true, u->cpu = m->cpu;
      else if (strcmp (given[i], "memory") == 0)
        u->has_memory = true, u->memory = m->memory;
      else if (strcmp (given[i], "pids") == 0)
        u->has_pids = true, u->pids = m->pids;
    }
}

/* One member taken and claimed: 1, 0 when the pool has none left, -1 on
 * an error (the member taken is removed: it may be half claimed). A
 * member whose monitor went away meanwhile is removed and the next one
 * taken. */
static int
claim_warm (sbx_store *st, const sbx_pool *p, const sbx_sandbox_opts *m, const sbx_sandbox_opts *a, char *const *given,
            char **ret_id, sbx_error **err)
{
  sbx_update u;
  claim_update (m, given, &u);
  for (;;)
    {
      _cleanup_free_ char *id = NULL;
      if (sbx_pool_take (st, p->name, &id, err) < 0)
        return -1;
      if (id == NULL)
        return 0;
      if (m->name && sbx_name_reserve (st, m->name, id, err) < 0)
        {
          sbx_pool_claimed (st, p->name, id);
          sbx_pool_discard (st, id);
          return -1;
        }
      _cleanup_error_ sbx_error *e = NULL;
      int r = sbx_client_claim (st, id, m, &u, &e);
      sbx_pool_claimed (st, p->name, id);
      if (r < 0)
        {
          if (m->name)
            sbx_name_release (st, m->name, id);
          sbx_pool_discard (st, id);
          if (e->code == SBX_E_SANDBOX_NOT_RUNNING)
            continue;
          *err = steal_pointer (&e);
          return sbx_error_wrap (err, "claim %s from pool %s", id, p->name);
        }
      if (claim_copy_in (st, id, a->copy_in, err) < 0)
        {
          sbx_pool_discard (st, id);
          return -1;
        }
      *ret_id = steal_pointer (&id);
      return 1;
    }
}

int
cli_pool_claim (sbx_cli *cli, sbx_store *st, const char *pool, sbx_sandbox_opts *a, char *const *given,
                const char *image_id, sbx_sandbox **ret, sbx_error **err)
{
  (void) cli;
  _cleanup_pool_ sbx_pool *p = NULL;
  sbx_sandbox_opts m;
  if (sbx_pool_get (st, pool, &p, err) < 0 || sbx_pool_claim_opts (p, a, given, image_id, &m, err) < 0)
    return -1;
  _cleanup_free_ char *id = NULL;
  int r = sbx_sandbox_opts_validate (&m, err);
  if (r == 0)
    r = claim_warm (st, p, &m, a, given, &id, err);
  if (r == 0)
    {
      fprintf (stderr, "sbx: pool %s is empty: making the sandbox cold\n", pool);
      _cleanup_image_ sbx_image *img = NULL;
      r = sbx_image_resolve (st, p->image_id ? p->image_id : "busybox", &img, err);
      if (r == 0)
        r = sbx_sandbox_create_from (st, &m, img, ret, err);
    }
  else if (r > 0)
    r = sbx_sandbox_get (st, id, ret, err);
  sbx_sandbox_opts_clear (&m);
  spawn_fill (st, pool);
  return r < 0 ? -1 : 0;
}
