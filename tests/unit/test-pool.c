/* Warm pools (src/lib/pool.c): a claim's options over the pool's — what
 * is applied, what must match (INVALID_ARGUMENT naming the option) — and
 * the deep copy of a sandbox's options. */
#include "config.h"

#include "pool.h"
#include "tap.h"
#include "util.h"

#include <string.h>

static void
pool_init (sbx_pool *p)
{
  memset (p, 0, sizeof *p);
  p->name = xstrdup ("p");
  p->size = 2;
  p->image_id = xstrdup ("sha256:aaaa");
  p->opts.runtime = xstrdup ("runsc");
  p->opts.keep_warm = 600;
  p->opts.timeout = 3600;
  p->opts.pids = 1024;
  p->opts.memory = 256 << 20;
  p->opts.disk = 1 << 30;
  p->opts.priority = SBX_PRIORITY_DEFAULT;
  p->opts.env = xmalloc0 (sizeof (char *));
  strv_push (&p->opts.env, "A=pool");
  strv_push (&p->opts.env, "B=pool");
}

static void
asked_init (sbx_sandbox_opts *a)
{
  memset (a, 0, sizeof *a);
  a->runtime = xstrdup ("runsc");
  a->priority = SBX_PRIORITY_DEFAULT;
}

/* A claim with GIVEN (a NULL-terminated list) is refused naming OPT. */
static void
refused (const sbx_sandbox_opts *a, const char *const *given, const char *image_id, const char *opt)
{
  sbx_pool p;
  pool_init (&p);
  sbx_sandbox_opts m;
  sbx_error *err = NULL;
  int rc = sbx_pool_claim_opts (&p, a, (char *const *) given, image_id, &m, &err);
  tap_ok (rc < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, opt) != NULL, "refused: %s (%s)",
          opt, err ? err->msg : "accepted");
  if (rc == 0)
    sbx_sandbox_opts_clear (&m);
  sbx_error_free (err);
  free (p.name);
  free (p.image_id);
  sbx_sandbox_opts_clear (&p.opts);
}

static void
mismatches (void)
{
  sbx_sandbox_opts a;
  asked_init (&a);
  free (a.runtime);
  a.runtime = xstrdup ("runc");
  refused (&a, (const char *const[]){ "runtime", NULL }, NULL, "--runtime");
  free (a.runtime);
  a.runtime = xstrdup ("runsc");
  refused (&a, (const char *const[]){ "image", NULL }, "sha256:bbbb", "--image");
  a.block_network = true;
  refused (&a, (const char *const[]){ "block-network", NULL }, NULL, "--block-network");
  a.block_network = false;
  a.disk = (int64_t) 2 << 30;
  refused (&a, (const char *const[]){ "disk", NULL }, NULL, "--disk");
  a.pids = 10;
  refused (&a, (const char *const[]){ "pids", NULL }, NULL, "--pids");
  a.pids = 0;
  strv_push (&a.volumes, "v:/v");
  refused (&a, (const char *const[]){ "volume", NULL }, NULL, "--volume");
  strv_push (&a.cmd, "true");
  refused (&a, (const char *const[]){ NULL }, NULL, "initial command");
  a.docker = true;
  refused (&a, (const char *const[]){ "docker", NULL }, NULL, "--docker");
  sbx_sandbox_opts_clear (&a);
}

static void
merged (void)
{
  sbx_pool p;
  pool_init (&p);
  sbx_sandbox_opts a, m;
  asked_init (&a);
  a.name = xstrdup ("n");
  strv_push (&a.env, "B=claim");
  strv_push (&a.env, "C=claim");
  a.memory = 512 << 20;
  a.timeout = 60;
  a.disk = 1 << 30;
  strv_push (&a.allow, "198.51.100.7/32");
  const char *const given[] = { "name", "env", "memory", "timeout", "allow", "disk", "image", NULL };
  sbx_error *err = NULL;
  int rc = sbx_pool_claim_opts (&p, &a, (char *const *) given, "sha256:aaaa", &m, &err);
  tap_ok (rc == 0, "a claim that fits: %s", err ? err->msg : "accepted");
  if (rc == 0)
    {
      tap_ok (strcmp (m.pool, "p") == 0 && strcmp (m.name, "n") == 0, "pool and name");
      tap_ok (strcmp (strv_env_get (m.env, "A"), "pool") == 0 && strcmp (strv_env_get (m.env, "B"), "claim") == 0
                  && strcmp (strv_env_get (m.env, "C"), "claim") == 0,
              "env: the claim's over the pool's");
      tap_ok (m.memory == (512u << 20) && !m.memory_default && m.timeout == 60 && m.keep_warm == 600,
              "limits and lifetimes: given, else the pool's");
      tap_ok (strv_len (m.allow) == 1 && strcmp (m.allow[0], "198.51.100.7/32") == 0, "the allow-list");
      sbx_sandbox_opts_clear (&m);
    }
  sbx_error_free (err);
  sbx_sandbox_opts_clear (&a);
  sbx_sandbox_opts copy;
  sbx_sandbox_opts_copy (&p.opts, &copy);
  tap_ok (strcmp (copy.runtime, "runsc") == 0 && copy.memory == p.opts.memory && strv_len (copy.env) == 2
              && copy.env != p.opts.env,
          "a deep copy of the options");
  sbx_sandbox_opts_clear (&copy);
  free (p.name);
  free (p.image_id);
  sbx_sandbox_opts_clear (&p.opts);
}

int
main (void)
{
  mismatches ();
  merged ();
  tap_plan (tap_n);
  return tap_done ();
}
