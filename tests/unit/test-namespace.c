/* Unit tests of namespaces, quotas and priorities (src/lib/namespace.c,
 * priority.c): the GPU count of every --gpu form, the priority mapping
 * (weights, their 8:1 split of priorities 8 and 2, oom_score_adj), the
 * states a quota counts, and the admission of a create or an update on an
 * empty store made here: each quota refused with POLICY_REFUSED and its
 * figures, a namespace without quotas holding no lock, a lowered limit
 * never refused. Nothing here needs root. */
#include "config.h"
#include "namespace.h"
#include "priority.h"
#include "tap.h"
#include "util.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/sbx-test-namespace.XXXXXX";

static void
cleanup_tmpdir (void)
{
  rm_rf (tmpdir, NULL);
}

static void
test_gpus_count (void)
{
  static const struct {
    const char *spec;
    int64_t n;
  } cases[] = {
    { NULL, 0 },       { "", 0 },          { "2", 2 },           { "0,1,3", 3 }, { "7,7", 2 },
    { "GPU-4f1c", 1 }, { "RTX-A4500", 1 }, { "RTX-A4500:4", 4 }, { "0,,1", -1 }, { "1,", -1 },
    { "a:0", -1 },     { ":3", -1 },       { "x y", -1 },        { "GPU-", -1 }, { "T4:x", -1 },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      int64_t n = sbx_gpus_count_request (cases[i].spec);
      tap_ok (n == cases[i].n, "--gpu %s asks for %lld (got %lld)", cases[i].spec ? cases[i].spec : "(none)",
              (long long) cases[i].n, (long long) n);
    }
  /* all: every /dev/nvidiaN, not nvidiactl or nvidia-uvm. */
  _cleanup_free_ char *dev = xasprintf ("%s/dev", tmpdir);
  mkdir (dev, 0700);
  static const char *const nodes[] = { "nvidia0", "nvidia1", "nvidia12", "nvidiactl", "nvidia-uvm", "nvidia0x" };
  for (size_t i = 0; i < ARRAY_SIZE (nodes); i++)
    {
      _cleanup_free_ char *p = xasprintf ("%s/%s", dev, nodes[i]);
      write_file_atomic (p, "", 0, 0600, NULL);
    }
  setenv ("SBX_DEV_ROOT", tmpdir, 1);
  tap_ok (sbx_gpus_count_request ("all") == 3, "--gpu all: the 3 /dev/nvidiaN under SBX_DEV_ROOT");
  unsetenv ("SBX_DEV_ROOT");
}

static void
test_priority (void)
{
  tap_ok (sbx_priority_cpu_shares (5) == 1024 && sbx_priority_cpu_weight (5) == 100,
          "priority 5: the kernel's default weights (1024, 100)");
  bool up = true;
  for (int p = 1; p <= 9; p++)
    up = up && sbx_priority_cpu_shares (p) > sbx_priority_cpu_shares (p - 1)
         && sbx_priority_cpu_weight (p) > sbx_priority_cpu_weight (p - 1)
         && sbx_priority_oom_score_adj (p) == sbx_priority_oom_score_adj (p - 1) - 100;
  tap_ok (up, "weights grow with the priority, oom_score_adj falls by 100 a step");
  double r1 = (double) sbx_priority_cpu_shares (8) / (double) sbx_priority_cpu_shares (2);
  double r2 = (double) sbx_priority_cpu_weight (8) / (double) sbx_priority_cpu_weight (2);
  tap_ok (r1 > 7.9 && r1 < 8.1 && r2 > 7.9 && r2 < 8.2, "priorities 8 and 2: 8:1 (shares %.2f, weight %.2f)", r1, r2);
  tap_ok (sbx_priority_oom_score_adj (0) == 1000 && sbx_priority_oom_score_adj (5) == 500
              && sbx_priority_oom_score_adj (9) == 100,
          "oom_score_adj: 1000 at 0, 500 at 5, 100 at 9");
  tap_ok (sbx_priority_cpu_shares (2) == 362 && sbx_priority_cpu_shares (8) == 2896 && sbx_priority_cpu_weight (2) == 35
              && sbx_priority_cpu_weight (8) == 283,
          "the documented values of priorities 2 and 8");
}

static void
test_states (void)
{
  tap_ok (sbx_state_counts_for_quota (SBX_STATE_CREATING) && sbx_state_counts_for_quota (SBX_STATE_RUNNING)
              && !sbx_state_counts_for_quota (SBX_STATE_TERMINATING)
              && !sbx_state_counts_for_quota (SBX_STATE_TERMINATED) && !sbx_state_counts_for_quota (SBX_STATE_FAILED),
          "a quota counts creating and running sandboxes only");
  sbx_sandbox_opts o = { .namespace = NULL };
  tap_ok (strcmp (sbx_namespace_of (&o), "default") == 0, "no --namespace: default");
  tap_ok (sbx_namespace_validate ("team-a.1", NULL) == 0 && sbx_namespace_validate ("a b", NULL) < 0
              && sbx_namespace_validate ("-a", NULL) < 0 && sbx_namespace_validate ("", NULL) < 0,
          "namespace names: a sandbox name's grammar");
}

/* admit: 0 with the lock state in *LOCKED, or the error's code. */
static int
admit (const sbx_store *st, const sbx_conf *c, const sbx_sandbox_opts *o, const sbx_sandbox *old, bool *locked,
       char **msg)
{
  _cleanup_error_ sbx_error *err = NULL;
  int lk = -1;
  if (sbx_quota_admit (st, c, o, old, &lk, &err) < 0)
    {
      *msg = xstrdup (err->msg);
      return (int) err->code;
    }
  *locked = lk >= 0;
  if (lk >= 0)
    close (lk);
  *msg = xstrdup ("");
  return 0;
}

static void
test_admit (void)
{
  _cleanup_free_ char *root = xasprintf ("%s/root", tmpdir), *run = xasprintf ("%s/run", tmpdir);
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_store_ sbx_store *st = NULL;
  static const char text[] = "namespace_max_gpus = g 1\nnamespace_max_sandboxes = s 0\nnamespace_max_cpu = c 2\n"
                             "namespace_max_memory = m 1Gi\n";
  _cleanup_conf_ sbx_conf *c = NULL;
  if (sbx_store_open (root, run, true, &st, &err) < 0 || sbx_conf_parse ("t.conf", text, strlen (text), &c, &err) < 0)
    {
      tap_ok (0, "store and conf: %s", err->msg);
      return;
    }
  bool locked = false;
  int r;
  sbx_sandbox_opts o = { .namespace = (char *) "free", .cpu = 1, .memory = 1 << 30 };
  _cleanup_free_ char *m1 = NULL, *m2 = NULL, *m3 = NULL, *m4 = NULL, *m5 = NULL, *m6 = NULL, *m7 = NULL;
  r = admit (st, c, &o, NULL, &locked, &m1);
  tap_ok (r == 0 && !locked, "no quota: admitted, no lock held");
  o.namespace = (char *) "g";
  o.gpus = (char *) "1";
  r = admit (st, c, &o, NULL, &locked, &m2);
  tap_ok (r == 0 && locked, "max_gpus 1, --gpu 1: admitted under the lock");
  o.gpus = (char *) "0,1";
  r = admit (st, c, &o, NULL, &locked, &m3);
  tap_ok (r == SBX_E_POLICY_REFUSED
              && strstr (m3, "namespace g: quota max_gpus = 1 reached (in use: 0 GPUs; asked: 2 GPUs)"),
          "max_gpus 1, --gpu 0,1: refused (%s)", m3);
  o.gpus = (char *) "0,,1";
  r = admit (st, c, &o, NULL, &locked, &m4);
  tap_ok (r == SBX_E_INVALID_ARGUMENT, "a --gpu that is not one (%s)", m4);
  o.gpus = NULL;
  o.namespace = (char *) "s";
  r = admit (st, c, &o, NULL, &locked, &m5);
  tap_ok (r == SBX_E_POLICY_REFUSED && strstr (m5, "quota max_sandboxes = 0 reached (in use: 0 sandboxes"),
          "max_sandboxes 0: refused (%s)", m5);
  o.namespace = (char *) "m";
  o.memory = 2ULL << 30;
  r = admit (st, c, &o, NULL, &locked, &m6);
  tap_ok (r == SBX_E_POLICY_REFUSED
              && strstr (m6, "quota max_memory = 1024 MiB reached (in use: 0 MiB; asked: 2048 MiB)"),
          "max_memory 1Gi, --memory 2Gi: refused (%s)", m6);
  /* An update: over the quota already (it was lowered), a lower limit is
   * admitted, a higher one refused. */
  sbx_sandbox old = { .id = (char *) "sb-000000000001", .opts = { .namespace = (char *) "c", .cpu = 4 } };
  o = old.opts;
  o.cpu = 3;
  _cleanup_free_ char *m8 = NULL;
  r = admit (st, c, &o, &old, &locked, &m7);
  tap_ok (r == 0, "update: a lowered cpu limit is admitted over the quota");
  o.cpu = 5;
  r = admit (st, c, &o, &old, &locked, &m8);
  tap_ok (r == SBX_E_POLICY_REFUSED && strstr (m8, "quota max_cpu = 2 reached"), "update: a raised one is refused (%s)",
          m8);
}

int
main (void)
{
  if (mkdtemp (tmpdir) == NULL)
    tap_skip_all ("mkdtemp failed");
  atexit (cleanup_tmpdir);
  unsetenv ("SBX_CONF");
  test_gpus_count ();
  test_priority ();
  test_states ();
  test_admit ();
  tap_plan (tap_n);
  return tap_done ();
}
