/* Fuzz harness for the CDI spec parser (src/lib/cdi.c): arbitrary bytes,
 * and valid specs (YAML and JSON) mutated, go to sbx_cdi_parse. It must
 * never crash and must hold its promises: a refusal is INVALID_ARGUMENT
 * with "CDI spec NAME: " and no control byte in its message; what it
 * accepts has a cdiVersion and a VENDOR/CLASS kind, uniquely named devices
 * of CDI's name grammar, absolute paths without `..`, no read-write, suid
 * or dev mount option, known hook names, KEY=VALUE environments and lists
 * within their bounds; parsed again, it gives the same.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "gpu.h"
#include "util.h"

#define FUZZ_NAME "fuzz-cdi"
#include "fuzz.h"

#define NAME "fuzz.yaml"

static size_t accepted, with_devices;

static void
check_error (const sbx_error *err)
{
  CHECK (err && err->code == SBX_E_INVALID_ARGUMENT && err->msg && err->msg[0]);
  CHECK (strncmp (err->msg, "CDI spec " NAME ": ", strlen ("CDI spec " NAME ": ")) == 0);
  for (const char *p = err->msg; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      fuzz_fail ("a message with a control byte: %s", err->msg);
}

static void
check_path (const char *p)
{
  CHECK (p && p[0] == '/' && strlen (p) <= SBX_CDI_STR_MAX);
  CHECK (strstr (p, "/../") == NULL);
  size_t n = strlen (p);
  CHECK (!(n >= 3 && strcmp (p + n - 3, "/..") == 0));
}

static void
check_edits (const sbx_cdi_edits *e)
{
  CHECK (strv_len (e->env) <= SBX_CDI_LIST_MAX);
  for (size_t i = 0; e->env && e->env[i]; i++)
    CHECK (strchr (e->env[i], '=') && e->env[i][0] != '=');
  CHECK (e->nnodes <= SBX_CDI_LIST_MAX && e->nmounts <= SBX_CDI_LIST_MAX && e->nhooks <= SBX_CDI_LIST_MAX);
  for (size_t i = 0; i < e->nnodes; i++)
    {
      check_path (e->nodes[i].path);
      if (e->nodes[i].host_path)
        check_path (e->nodes[i].host_path);
      CHECK (e->nodes[i].type == 0 || e->nodes[i].type == 'c' || e->nodes[i].type == 'b');
      CHECK (e->nodes[i].major >= -1 && e->nodes[i].major <= 0xfff);
      CHECK (e->nodes[i].minor >= -1 && e->nodes[i].minor <= 0xfffff);
      CHECK (e->nodes[i].permissions == NULL
             || strspn (e->nodes[i].permissions, "rwm") == strlen (e->nodes[i].permissions));
    }
  for (size_t i = 0; i < e->nmounts; i++)
    {
      check_path (e->mounts[i].host_path);
      check_path (e->mounts[i].container_path);
      for (size_t k = 0; e->mounts[i].options && e->mounts[i].options[k]; k++)
        CHECK (strcmp (e->mounts[i].options[k], "rw") != 0 && strcmp (e->mounts[i].options[k], "suid") != 0
               && strcmp (e->mounts[i].options[k], "dev") != 0);
    }
  static const char *const hooks[] = { "prestart",       "createRuntime", "createContainer",
                                       "startContainer", "poststart",     "poststop" };
  for (size_t i = 0; i < e->nhooks; i++)
    {
      check_path (e->hooks[i].path);
      bool known = false;
      for (size_t k = 0; k < sizeof hooks / sizeof *hooks; k++)
        known = known || strcmp (hooks[k], e->hooks[i].hook_name) == 0;
      CHECK (known);
      CHECK (e->hooks[i].timeout >= -1 && e->hooks[i].timeout <= 3600);
    }
}

static void
check_spec (const sbx_cdi_spec *s)
{
  CHECK (s->version && s->kind);
  const char *slash = strchr (s->kind, '/');
  CHECK (slash && slash != s->kind && slash[1] && !strchr (slash + 1, '/'));
  CHECK (s->ndevices <= SBX_CDI_DEVICES_MAX);
  for (size_t i = 0; i < s->ndevices; i++)
    {
      CHECK (s->devices[i].name && s->devices[i].name[0]);
      for (size_t j = 0; j < i; j++)
        CHECK (strcmp (s->devices[i].name, s->devices[j].name) != 0);
      check_edits (&s->devices[i].edits);
    }
  check_edits (&s->edits);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  sbx_cdi_spec *s = NULL, *again = NULL;
  sbx_error *err = NULL;
  if (size > 65536)
    return 0;
  if (sbx_cdi_parse (NAME, (const char *) data, size, &s, &err) < 0)
    {
      check_error (err);
      sbx_error_free (err);
      return 0;
    }
  accepted++;
  with_devices += s->ndevices > 0;
  check_spec (s);
  CHECK (sbx_cdi_parse (NAME, (const char *) data, size, &again, NULL) == 0);
  CHECK (again->ndevices == s->ndevices && again->edits.nnodes == s->edits.nnodes
         && again->edits.nmounts == s->edits.nmounts && again->edits.nhooks == s->edits.nhooks);
  sbx_cdi_spec_free (again);
  sbx_cdi_spec_free (s);
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 6000
#define INPUT_MAX 4096

/* The seed corpus: what nvidia-ctk writes, trimmed, as YAML and as JSON,
 * and the spec's corners (flow style, anchors, empty lists, nulls). */
static const char *const seeds[] = {
  ("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits:\n    deviceNodes:\n    - "
   "path: /dev/nvidia0\n- name: all\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\ncontainerEdits:\n"
   "  env:\n  - NVIDIA_VISIBLE_DEVICES=void\n  deviceNodes:\n  - path: /dev/nvidiactl\n  - path: /dev/nvidia-uvm\n"
   "  hooks:\n  - hookName: createContainer\n    path: /usr/bin/nvidia-ctk\n    args:\n    - nvidia-ctk\n    - hook\n"
   "    - update-ldcache\n    - --folder\n    - /usr/lib/x86_64-linux-gnu\n  mounts:\n  - hostPath: "
   "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05\n    containerPath: "
   "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05\n    options:\n    - ro\n    - nosuid\n    - nodev\n    - bind\n"),
  ("{\"cdiVersion\":\"0.6.0\",\"kind\":\"nvidia.com/gpu\",\"devices\":[{\"name\":\"GPU-0a1b\",\"containerEdits\":{"
   "\"deviceNodes\":[{\"path\":\"/dev/nvidia1\",\"type\":\"c\",\"major\":195,\"minor\":1,\"fileMode\":438,\"uid\":0,"
   "\"gid\":0,\"permissions\":\"rw\"}]}}],\"containerEdits\":{\"env\":[\"A=1\"],\"hooks\":[{\"hookName\":"
   "\"createRuntime\",\"path\":\"/bin/true\",\"timeout\":3,\"env\":[\"B=2\"]}],\"additionalGIDs\":[]}}"),
  ("cdiVersion: \"0.5.0\"\nkind: vendor.com/device\nannotations: {a: b}\ndevices: [{name: x, containerEdits: {env: "
   "&e [\"K=V\"]}}, {name: y, annotations: {c: d}, containerEdits: {env: *e, mounts: [{hostPath: /a, "
   "containerPath: /b, type: bind, options: [rbind, noexec]}]}}]\ncontainerEdits: ~\n"),
  ("cdiVersion: 0.3.0\nkind: a.b/c\ndevices: []\ncontainerEdits:\n  deviceNodes: [{path: /dev/fuse, type: u, major: "
   "10, minor: 229, fileMode: 0o666}]\n"),
};

static const char *const tokens[] = { ":",     " ",      "\n",    "-", "[", "]",  "{",  "}",  ",",  "\"",
                                      "'",     "&a ",    "*a",    "~", "/", "..", "rw", "0x", "\t", "",
                                      "---\n", "!!str ", "name:", "#", "%", "@",  "\\", "1e9" };

int
main (void)
{
  static const struct fuzz_seeds mutations = FUZZ_SEEDS (seeds, tokens, INPUT_MAX, true);
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 2121,
    .mutate = &mutations,
    .what = "CDI specs (YAML and JSON) to the parser",
  };

  fuzz_corpus_run (&corpus, 3);
  tap_ok (accepted > CORPUS_SIZE / 10, "%zu of them accepted", accepted);
  tap_ok (with_devices > 0, "%zu accepted with devices", with_devices);
  return tap_done ();
}

#endif
