/* Unit tests of the create options' one serializer (sandbox.c): what
 * sbx_sandbox_opts_gen writes, sbx_sandbox_opts_parse reads back whole,
 * as state.json and snapshot.json both use them; a missing key keeps the
 * caller's default, a mistyped one is refused. No root needed. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "json.h"
#include "lifecycle.h"
#include "sandbox.h"
#include "tap.h"
#include "util.h"

#include <string.h>

static bool
strv_eq (char *const *a, char *const *b)
{
  size_t i = 0;
  for (; a && b && a[i] && b[i]; i++)
    if (strcmp (a[i], b[i]) != 0)
      return false;
  return (a == NULL || a[i] == NULL) && (b == NULL || b[i] == NULL);
}

static bool
str_eq (const char *a, const char *b)
{
  return a == b || (a && b && strcmp (a, b) == 0);
}

static int
parse_text (const char *text, sbx_sandbox_opts *o, sbx_error **err)
{
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (j_parse (text, strlen (text), 1 << 20, "options", &v, err) < 0)
    return -1;
  return sbx_sandbox_opts_parse (v, o, err);
}

int
main (void)
{
  tap_plan (11);
  char *env[] = { (char *) "A=1", (char *) "B=two words", NULL };
  char *allow[] = { (char *) "10.0.0.0/8", NULL };
  char *ports[] = { (char *) "8080", NULL };
  char *cmd[] = { (char *) "sh", (char *) "-c", (char *) "echo \"hi\"; exit 3", NULL };
  sbx_sandbox_opts in = { .image_ref = (char *) "debian:12",
                          .runtime = (char *) "runsc",
                          .cpu = 1.5,
                          .memory = 512ULL << 20,
                          .memory_default = true,
                          .pids = 77,
                          .disk = 1LL << 30,
                          .allow = allow,
                          .ports = ports,
                          .public_ports = true,
                          .keep_warm = -1,
                          .on_idle_pause = true,
                          .timeout = 120,
                          .env = env,
                          .cwd = (char *) "/work",
                          .cmd = cmd,
                          .exit_with_cmd = true };
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  sbx_sandbox_opts_gen (g, &in);
  _cleanup_free_ char *text = j_take (g, NULL);
  sbx_sandbox_opts out = { 0 };
  sbx_error *err = NULL;
  int r = parse_text (text, &out, &err);
  tap_ok (r == 0, "what the serializer writes parses back (%s)", text);
  tap_ok (str_eq (out.image_ref, in.image_ref) && str_eq (out.runtime, in.runtime) && out.cpu == in.cpu
              && out.memory == in.memory && out.memory_default && !out.cpu_default && out.pids == in.pids
              && out.disk == in.disk && out.public_ports && out.keep_warm == -1 && out.on_idle_pause
              && out.timeout == in.timeout && str_eq (out.cwd, in.cwd),
          "every scalar option comes back, the disk limit included");
  tap_ok (strv_eq (out.env, env) && strv_eq (out.allow, allow) && strv_eq (out.ports, ports),
          "env, allow and ports come back");
  tap_ok (strv_eq (out.cmd, cmd) && out.exit_with_cmd, "the initial command and --exit-with-cmd come back");
  sbx_sandbox_opts_clear (&out);

  sbx_sandbox_opts d = { .keep_warm = 600, .timeout = 3600, .disk = -1, .memory = 7 };
  r = parse_text ("{\"pids\":5}", &d, &err);
  tap_ok (r == 0 && d.pids == 5 && d.keep_warm == 600 && d.timeout == 3600 && d.disk == -1 && d.memory == 7
              && d.runtime == NULL,
          "a missing key keeps the caller's default");
  sbx_sandbox_opts_clear (&d);

  r = parse_text ("{\"disk\":\"big\"}", &d, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, "disk"),
          "a mistyped key is INVALID_ARGUMENT naming it (%s)", err ? err->msg : "none");
  sbx_error_free (err);
  err = NULL;
  sbx_sandbox_opts_clear (&d);
  r = parse_text ("{\"on_idle\":\"pause\"}", &d, &err);
  tap_ok (r == 0 && d.on_idle_pause, "on_idle pause reads back");
  sbx_sandbox_opts_clear (&d);
  r = parse_text ("{\"cmd\":\"sh\"}", &d, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, "cmd"),
          "a cmd that is not a list of strings is INVALID_ARGUMENT (%s)", err ? err->msg : "none");
  sbx_error_free (err);
  err = NULL;
  sbx_sandbox_opts_clear (&d);

  /* The initial command's checks (lifecycle.c), as a create and a restore
   * of a snapshot's options both apply them. */
  char *empty[] = { (char *) "", NULL };
  sbx_sandbox_opts v = { .runtime = (char *) "runc", .timeout = 60, .keep_warm = 60, .exit_with_cmd = true };
  r = sbx_sandbox_opts_validate (&v, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, "--exit-with-cmd"),
          "--exit-with-cmd without a command is INVALID_ARGUMENT (%s)", err ? err->msg : "none");
  sbx_error_free (err);
  err = NULL;
  v.cmd = empty;
  r = sbx_sandbox_opts_validate (&v, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, "empty"),
          "an initial command with an empty name is INVALID_ARGUMENT (%s)", err ? err->msg : "none");
  sbx_error_free (err);
  err = NULL;
  v.cmd = cmd;
  tap_ok (sbx_sandbox_opts_validate (&v, &err) == 0, "a command with --exit-with-cmd is valid");
  return tap_done ();
}
