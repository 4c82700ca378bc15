/* Unit tests of GPUs (src/lib/gpu.c, src/lib/cdi.c): the --gpu grammar,
 * the CDI parser (the same spec as YAML and as JSON reads the same; every
 * refusal names its field), the choice of GPUs on a host made up here
 * (counts, indexes, UUIDs, model types, and what is refused), and sbx.conf's
 * gpu_runtime. Nothing here needs root or a GPU. */
#include "config.h"
#include "conf.h"
#include "gpu.h"
#include "runtime.h"
#include "tap.h"
#include "util.h"

#include <string.h>

static bool
req_ok (const char *s, sbx_gpu_req_kind kind, unsigned count, const char *name)
{
  sbx_gpu_request r;
  sbx_error *err = NULL;
  if (sbx_gpu_request_parse (s, &r, &err) < 0)
    {
      sbx_error_free (err);
      return false;
    }
  bool ok = r.kind == kind && (kind == SBX_GPU_REQ_INDEXES || r.count == count)
            && ((name == NULL && r.name == NULL) || (name && r.name && strcmp (name, r.name) == 0));
  sbx_gpu_request_clear (&r);
  return ok;
}

static bool
req_refused (const char *s)
{
  sbx_gpu_request r;
  sbx_error *err = NULL;
  if (sbx_gpu_request_parse (s, &r, &err) == 0)
    {
      sbx_gpu_request_clear (&r);
      return false;
    }
  bool ok = err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, "--gpu") != NULL;
  sbx_error_free (err);
  return ok;
}

static void
test_request (void)
{
  tap_ok (req_ok ("all", SBX_GPU_REQ_ALL, 1, NULL), "all");
  tap_ok (req_ok ("2", SBX_GPU_REQ_COUNT, 2, NULL), "N is a count");
  tap_ok (req_ok ("GPU-0a1b2c3d-1111-2222-3333-444455556666", SBX_GPU_REQ_UUID, 1,
                  "GPU-0a1b2c3d-1111-2222-3333-444455556666"),
          "a UUID");
  tap_ok (req_ok ("RTX-A4500:4", SBX_GPU_REQ_TYPE, 4, "RTX-A4500"), "TYPE:N");
  tap_ok (req_ok ("H100", SBX_GPU_REQ_TYPE, 1, "H100"), "TYPE alone is one");
  sbx_gpu_request r;
  tap_ok (sbx_gpu_request_parse ("3,1", &r, NULL) == 0 && r.kind == SBX_GPU_REQ_INDEXES && r.nindexes == 2
              && r.indexes[0] == 3 && r.indexes[1] == 1,
          "INDEX,INDEX in the order given");
  sbx_gpu_request_clear (&r);
  tap_ok (sbx_gpu_request_parse ("1,", &r, NULL) == 0 && r.kind == SBX_GPU_REQ_INDEXES && r.nindexes == 1
              && r.indexes[0] == 1,
          "one INDEX is `INDEX,`");
  sbx_gpu_request_clear (&r);
  const char *bad[] = { "",       "0",     "65",     "1,1", ",",   "1,x",   "GPU-",    "GPU-zz",
                        "A100:0", "A100:", "A100:x", ":2",  "a/b", "-A100", "A100;rm", NULL };
  bool all = true;
  for (size_t i = 0; bad[i]; i++)
    if (!req_refused (bad[i]))
      {
        tap_ok (false, "`%s` is refused", bad[i]);
        all = false;
      }
  tap_ok (all, "counts of 0 or over 64, repeated or bad indexes, bad UUIDs, TYPEs and Ns are INVALID_ARGUMENT");
}

static const char yaml_spec[] = "cdiVersion: \"0.5.0\"\n"
                                "kind: nvidia.com/gpu\n"
                                "devices:\n"
                                "  - name: \"0\"\n"
                                "    containerEdits:\n"
                                "      deviceNodes:\n"
                                "        - path: /dev/nvidia0\n"
                                "          type: c\n"
                                "          major: 195\n"
                                "          minor: 0\n"
                                "          fileMode: 0666\n"
                                "  - name: GPU-0a1b\n"
                                "    containerEdits:\n"
                                "      deviceNodes: [ { path: /dev/nvidia1, hostPath: /dev/nvidia1 } ]\n"
                                "containerEdits:\n"
                                "  env: [ \"NVIDIA_VISIBLE_DEVICES=void\" ]\n"
                                "  deviceNodes:\n"
                                "    - path: /dev/nvidiactl\n"
                                "      permissions: rw\n"
                                "  mounts:\n"
                                "    - hostPath: /usr/lib/libcuda.so.1\n"
                                "      containerPath: /usr/lib/libcuda.so.1\n"
                                "      options: [ro, nosuid, nodev, bind]\n"
                                "  hooks:\n"
                                "    - hookName: createContainer\n"
                                "      path: /usr/bin/nvidia-ctk\n"
                                "      args: [nvidia-ctk, hook, update-ldcache]\n"
                                "      env: [ \"A=1\" ]\n"
                                "      timeout: 5\n";

static const char json_spec[] =
    "{\"cdiVersion\":\"0.5.0\",\"kind\":\"nvidia.com/gpu\",\"devices\":["
    "{\"name\":\"0\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidia0\",\"type\":\"c\",\"major\":195,"
    "\"minor\":0,\"fileMode\":438}]}},"
    "{\"name\":\"GPU-0a1b\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidia1\",\"hostPath\":\"/dev/"
    "nvidia1\"}]}}],"
    "\"containerEdits\":{\"env\":[\"NVIDIA_VISIBLE_DEVICES=void\"],\"deviceNodes\":[{\"path\":\"/dev/nvidiactl\","
    "\"permissions\":\"rw\"}],"
    "\"mounts\":[{\"hostPath\":\"/usr/lib/libcuda.so.1\",\"containerPath\":\"/usr/lib/libcuda.so.1\",\"options\":["
    "\"ro\",\"nosuid\",\"nodev\",\"bind\"]}],"
    "\"hooks\":[{\"hookName\":\"createContainer\",\"path\":\"/usr/bin/nvidia-ctk\",\"args\":[\"nvidia-ctk\","
    "\"hook\",\"update-ldcache\"],\"env\":[\"A=1\"],\"timeout\":5}]}}";

static bool
spec_is_expected (const sbx_cdi_spec *s)
{
  return s && strcmp (s->kind, "nvidia.com/gpu") == 0 && strcmp (s->version, "0.5.0") == 0 && s->ndevices == 2
         && strcmp (s->devices[0].name, "0") == 0 && s->devices[0].edits.nnodes == 1
         && strcmp (s->devices[0].edits.nodes[0].path, "/dev/nvidia0") == 0 && s->devices[0].edits.nodes[0].type == 'c'
         && s->devices[0].edits.nodes[0].major == 195 && s->devices[0].edits.nodes[0].minor == 0
         && s->devices[0].edits.nodes[0].file_mode == 0666 && strcmp (s->devices[1].name, "GPU-0a1b") == 0
         && strcmp (s->devices[1].edits.nodes[0].host_path, "/dev/nvidia1") == 0
         && s->devices[1].edits.nodes[0].major == -1 && s->edits.env
         && strcmp (s->edits.env[0], "NVIDIA_VISIBLE_DEVICES=void") == 0 && s->edits.nnodes == 1
         && strcmp (s->edits.nodes[0].permissions, "rw") == 0 && s->edits.nmounts == 1
         && strcmp (s->edits.mounts[0].container_path, "/usr/lib/libcuda.so.1") == 0
         && strv_len (s->edits.mounts[0].options) == 4 && s->edits.nhooks == 1
         && strcmp (s->edits.hooks[0].hook_name, "createContainer") == 0 && strv_len (s->edits.hooks[0].args) == 3
         && strcmp (s->edits.hooks[0].env[0], "A=1") == 0 && s->edits.hooks[0].timeout == 5;
}

static void
test_cdi_parse (void)
{
  sbx_cdi_spec *y = NULL, *j = NULL;
  sbx_error *err = NULL;
  tap_ok (sbx_cdi_parse ("y.yaml", yaml_spec, strlen (yaml_spec), &y, &err) == 0 && spec_is_expected (y),
          "a YAML spec: devices, nodes, env, mounts, hooks %s", err ? err->msg : "");
  sbx_error_free (err);
  err = NULL;
  tap_ok (sbx_cdi_parse ("j.json", json_spec, strlen (json_spec), &j, &err) == 0 && spec_is_expected (j),
          "the same spec as JSON reads the same %s", err ? err->msg : "");
  sbx_error_free (err);
  sbx_cdi_spec_free (y);
  sbx_cdi_spec_free (j);
}

static bool
refused (const char *text, const char *want)
{
  sbx_cdi_spec *s = NULL;
  sbx_error *err = NULL;
  if (sbx_cdi_parse ("t.yaml", text, strlen (text), &s, &err) == 0)
    {
      sbx_cdi_spec_free (s);
      return false;
    }
  bool ok = err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, "CDI spec t.yaml") && strstr (err->msg, want);
  if (!ok)
    fprintf (stderr, "# got: %s\n", err->msg);
  sbx_error_free (err);
  return ok;
}

#define HEAD "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n"

static void
test_cdi_refusals (void)
{
  tap_ok (refused (HEAD "devices: []\nextra: 1\n", "spec.extra: unknown key"), "an unknown key");
  tap_ok (refused ("kind: nvidia.com/gpu\n", "cdiVersion and kind are required"), "a missing cdiVersion");
  tap_ok (refused (HEAD "kind: x/y\n", "given twice"), "a key twice");
  tap_ok (refused ("cdiVersion: 1\nkind: nogpu\n", "is not VENDOR/CLASS"), "a kind without a class");
  tap_ok (refused (HEAD "devices:\n  - name: a\n  - name: a\n", "named twice"), "a device named twice");
  tap_ok (refused (HEAD "devices:\n  - name: \"-x\"\n", "not a device name"), "a bad device name");
  tap_ok (refused (HEAD "devices:\n  - containerEdits: {}\n", "needs a name"), "a device without a name");
  tap_ok (refused (HEAD "containerEdits:\n  mounts: [{hostPath: /a, containerPath: /b, options: [rw]}]\n",
                   "option `rw`"),
          "a read-write mount");
  tap_ok (refused (HEAD "containerEdits:\n  mounts: [{hostPath: /a, containerPath: /b, type: tmpfs}]\n",
                   "only bind mounts"),
          "a mount that is not a bind");
  tap_ok (refused (HEAD "containerEdits:\n  mounts: [{hostPath: /a/../etc, containerPath: /b}]\n", "without `..`"),
          "a path with ..");
  tap_ok (refused (HEAD "containerEdits:\n  deviceNodes: [{path: dev/x}]\n", "not an absolute path"),
          "a relative device path");
  tap_ok (refused (HEAD "containerEdits:\n  deviceNodes: [{path: /dev/x, major: 99999}]\n", "not a number"),
          "a major out of range");
  tap_ok (refused (HEAD "containerEdits:\n  deviceNodes: [{path: /dev/x, permissions: rwx}]\n", "r, w and m"),
          "bad permissions");
  tap_ok (refused (HEAD "containerEdits:\n  hooks: [{hookName: preStart, path: /bin/true}]\n", "not an OCI hook"),
          "an unknown hook");
  tap_ok (refused (HEAD "containerEdits:\n  env: [\"NOEQUALS\"]\n", "not KEY=VALUE"), "bad env");
  tap_ok (refused (HEAD "containerEdits:\n  netDevices: [{hostInterfaceName: eth0, name: eth1}]\n", "does not support"),
          "netDevices, which sbx cannot honour");
  tap_ok (refused (HEAD "---\nkind: a/b\n", "more than one YAML document"), "two documents");
  tap_ok (refused ("{\"cdiVersion\": 1,", "not valid JSON"), "broken JSON");
  tap_ok (refused ("a: [\n", "not valid YAML"), "broken YAML");
  tap_ok (refused (HEAD "devices: {a: 1}\n", "expected a list"), "a mistyped field");
  /* Aliases: a small file whose walk reads more strings than the bound
   * (400 + 300 x 400). */
  char *big = xstrdup (HEAD "containerEdits:\n  env: &a [");
  for (int i = 0; i < 400; i++)
    {
      char *t = xasprintf ("%s\"A%d=1\",", big, i);
      free (big);
      big = t;
    }
  char *t = xasprintf ("%s\"B=1\"]\n  hooks:\n", big);
  free (big);
  big = t;
  for (int i = 0; i < 300; i++)
    {
      t = xasprintf ("%s    - {hookName: poststart, path: /bin/true, env: *a}\n", big);
      free (big);
      big = t;
    }
  tap_ok (refused (big, "strings in all"), "aliases cannot blow a small file up");
  free (big);
  char *huge = xmalloc0 (SBX_CDI_SIZE_MAX + 2);
  memset (huge, ' ', SBX_CDI_SIZE_MAX + 1);
  sbx_cdi_spec *s = NULL;
  sbx_error *err = NULL;
  tap_ok (sbx_cdi_parse ("h", huge, SBX_CDI_SIZE_MAX + 1, &s, &err) < 0 && strstr (err->msg, "larger than"),
          "a spec over 1 MiB");
  sbx_error_free (err);
  free (huge);
}

static sbx_gpu_host
made_up_host (void)
{
  sbx_gpu_host h = { NULL };
  const char *models[] = { "NVIDIA RTX A4500", "NVIDIA A100-SXM4-80GB", "NVIDIA RTX A4500", "NVIDIA A10" };
  h.ngpus = 4;
  h.gpus = xmalloc0 (4 * sizeof *h.gpus);
  for (unsigned i = 0; i < 4; i++)
    h.gpus[i] = (sbx_gpu){ .index = i,
                           .model = xstrdup (models[i]),
                           .uuid = xasprintf ("GPU-%08u-aaaa-bbbb-cccc-dddddddddddd", i),
                           .minor = i };
  h.found = xstrdup ("4 GPUs found: ...");
  return h;
}

static bool
picks (const sbx_gpu_host *h, const char *req, const char *want)
{
  sbx_gpu_request r;
  size_t pos[SBX_GPUS_MAX], n = 0;
  if (sbx_gpu_request_parse (req, &r, NULL) < 0)
    return false;
  sbx_error *err = NULL;
  int rc = sbx_gpu_select (h, &r, pos, &n, &err);
  sbx_gpu_request_clear (&r);
  char got[256] = "";
  if (rc < 0)
    {
      bool ok = want == NULL && err->code == SBX_E_RUNTIME_UNAVAILABLE && strstr (err->msg, "GPUs found");
      sbx_error_free (err);
      return ok;
    }
  for (size_t i = 0; i < n; i++)
    snprintf (got + strlen (got), sizeof got - strlen (got), "%s%zu", i ? "," : "", pos[i]);
  return want && strcmp (got, want) == 0;
}

static void
test_select (void)
{
  sbx_gpu_host h = made_up_host ();
  tap_ok (picks (&h, "all", "0,1,2,3"), "all");
  tap_ok (picks (&h, "2", "0,1"), "a count");
  tap_ok (picks (&h, "5", NULL), "more than the host has: RUNTIME_UNAVAILABLE with what was found");
  tap_ok (picks (&h, "3,1", "3,1"), "indexes");
  tap_ok (picks (&h, "7,", NULL), "an index the host lacks");
  tap_ok (picks (&h, "GPU-00000002-aaaa-bbbb-cccc-dddddddddddd", "2"), "a UUID");
  tap_ok (picks (&h, "GPU-00000009-aaaa-bbbb-cccc-dddddddddddd", NULL), "a UUID the host lacks");
  tap_ok (picks (&h, "RTX-A4500:2", "0,2"), "TYPE:N by the model's words");
  tap_ok (picks (&h, "rtx a4500", "0"), "TYPE in any case, spaces for dashes");
  tap_ok (picks (&h, "A100", "1") && picks (&h, "A10", "3"), "A10 is not A100");
  tap_ok (picks (&h, "RTX-A4500:3", NULL), "more of a TYPE than the host has");
  tap_ok (picks (&h, "H100", NULL), "a TYPE not found");
  sbx_gpu_host_clear (&h);
  sbx_gpu_host none = { .found = xstrdup ("no GPU found (...)") };
  sbx_gpu_request r = { .kind = SBX_GPU_REQ_ALL };
  size_t pos[1], n;
  sbx_error *err = NULL;
  tap_ok (sbx_gpu_select (&none, &r, pos, &n, &err) < 0 && err->code == SBX_E_RUNTIME_UNAVAILABLE
              && strstr (err->msg, "no GPU found"),
          "any GPU on a host with none: RUNTIME_UNAVAILABLE");
  sbx_error_free (err);
  sbx_gpu_host_clear (&none);
}

static void
test_conf (void)
{
  sbx_conf *c = NULL;
  tap_ok (sbx_conf_parse (NULL, "", 0, &c, NULL) == 0 && !c->gpu_runtime_runc, "gpu_runtime defaults to runsc");
  sbx_conf_free (c);
  c = NULL;
  const char *t = "gpu_runtime = runc\n";
  tap_ok (sbx_conf_parse (NULL, t, strlen (t), &c, NULL) == 0 && c->gpu_runtime_runc, "gpu_runtime = runc");
  sbx_conf_free (c);
  c = NULL;
  sbx_error *err = NULL;
  t = "gpu_runtime = kata\n";
  tap_ok (sbx_conf_parse (NULL, t, strlen (t), &c, &err) < 0 && strstr (err->msg, "sbx.conf:1: gpu_runtime"),
          "gpu_runtime = kata is refused");
  sbx_error_free (err);
}

/* runsc gets --nvproxy, a global flag, for a sandbox with GPUs only. */
static void
test_nvproxy_argv (void)
{
  sbx_runtime rt = { .name = (char *) "runsc", .path = (char *) "/usr/bin/runsc", .state_root = (char *) "/r" };
  const char *args[] = { "sb-1", NULL };
  char **plain = sbx_runtime_argv (&rt, "run", args);
  rt.nvproxy = true;
  char **gpu = sbx_runtime_argv (&rt, "run", args);
  size_t n = strv_len (gpu), at = 0;
  while (at < n && strcmp (gpu[at], "--nvproxy") != 0)
    at++;
  bool before_verb = at < n && at + 2 < n && strcmp (gpu[n - 2], "run") == 0;
  bool none = true;
  for (size_t i = 0; plain[i]; i++)
    none = none && strcmp (plain[i], "--nvproxy") != 0;
  tap_ok (before_verb && none, "runsc: --nvproxy before the verb for GPUs, never without");
  strv_free (plain);
  strv_free (gpu);
}

int
main (void)
{
  tap_plan (8 + 2 + 22 + 13 + 3 + 1);
  test_nvproxy_argv ();
  test_request ();
  test_cdi_parse ();
  test_cdi_refusals ();
  test_select ();
  test_conf ();
  return tap_done ();
}
