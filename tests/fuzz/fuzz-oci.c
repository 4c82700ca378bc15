/* Fuzz harness for OCI and Docker documents (src/lib/oci.c), what `import`
 * reads from an archive and `pull` from a registry: an image index, a
 * manifest, an image config and docker save's manifest.json. The first byte
 * picks the parser, the rest is the document: arbitrary bytes and valid
 * documents mutated byte by byte. A parser must never crash; what it
 * accepts must keep its promises (digests of their form, env entries with
 * `=`, safe archive paths); what it refuses must be INVALID_ARGUMENT with a
 * message.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "oci.h"

#define FUZZ_NAME "fuzz-oci"
#include "fuzz.h"

static size_t accepted;

static bool
digest_ok (const char *d)
{
  if (d == NULL || strncmp (d, "sha256:", 7) != 0 || strlen (d) != 71)
    return false;
  for (const char *p = d + 7; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return false;
  return true;
}

static void
check_refusal (int r, sbx_error *err)
{
  CHECK (r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && err->msg && err->msg[0]);
  sbx_error_free (err);
}

static void
parse_index (const char *text, size_t len)
{
  sbx_oci_index *x = NULL;
  sbx_error *err = NULL;
  int r = sbx_oci_parse_index (text, len, &x, &err);
  if (r < 0)
    return check_refusal (r, err);
  for (size_t i = 0; i < x->n; i++)
    CHECK (digest_ok (x->manifests[i].digest));
  size_t pick;
  if (sbx_oci_pick (x->manifests, x->n, "amd64", &pick, &err) == 0)
    CHECK (pick < x->n);
  else
    check_refusal (-1, err);
  accepted++;
  sbx_oci_index_free (x);
}

static void
parse_manifest (const char *text, size_t len)
{
  sbx_oci_manifest *m = NULL;
  sbx_error *err = NULL;
  int r = sbx_oci_parse_manifest (text, len, &m, &err);
  if (r < 0)
    return check_refusal (r, err);
  CHECK (digest_ok (m->config.digest));
  for (size_t i = 0; i < m->n_layers; i++)
    CHECK (digest_ok (m->layers[i].digest));
  accepted++;
  sbx_oci_manifest_free (m);
}

static void
parse_config (const char *text, size_t len)
{
  sbx_oci_config *c = NULL;
  sbx_error *err = NULL;
  int r = sbx_oci_parse_config (text, len, &c, &err);
  if (r < 0)
    return check_refusal (r, err);
  for (size_t i = 0; c->env && c->env[i]; i++)
    CHECK (strchr (c->env[i], '=') != NULL && c->env[i][0] != '=');
  for (size_t i = 0; c->diff_ids && c->diff_ids[i]; i++)
    CHECK (digest_ok (c->diff_ids[i]));
  accepted++;
  sbx_oci_config_free (c);
}

static void
parse_docker (const char *text, size_t len)
{
  sbx_docker_manifest *m = NULL;
  sbx_error *err = NULL;
  int r = sbx_docker_parse_manifest (text, len, &m, &err);
  if (r < 0)
    return check_refusal (r, err);
  CHECK (m->config && sbx_oci_path_ok (m->config));
  for (size_t i = 0; m->layers && m->layers[i]; i++)
    CHECK (sbx_oci_path_ok (m->layers[i]));
  accepted++;
  sbx_docker_manifest_free (m);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  /* A copy of its own, so that ASan sees a read past the end. */
  char *text = malloc (size - 1 ? size - 1 : 1);
  CHECK (text != NULL);
  memcpy (text, data + 1, size - 1);
  switch (data[0] % 4)
    {
    case 0:
      parse_index (text, size - 1);
      break;
    case 1:
      parse_manifest (text, size - 1);
      break;
    case 2:
      parse_config (text, size - 1);
      break;
    default:
      parse_docker (text, size - 1);
    }
  free (text);
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 20000
#define INPUT_MAX 1400

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Each seed opens with the byte that picks its parser. */
static const char *const seeds[] = {
  "0{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[{\"mediaType\":"
  "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:" D64 "\",\"size\":500,\"platform\":{"
  "\"os\":\"linux\",\"architecture\":\"amd64\"}},{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
  "\"digest\":\"sha256:" D64 "\",\"size\":501,\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\"}}]}",
  "1{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":{\"mediaType\":"
  "\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:" D64 "\",\"size\":7},\"layers\":[{"
  "\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"sha256:" D64 "\",\"size\":9}]}",
  "2{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"PATH=/usr/bin:/bin\",\"A=b\"],"
  "\"Entrypoint\":[\"/bin/sh\"],\"Cmd\":[\"-c\",\"echo hi\"],\"WorkingDir\":\"/srv\",\"User\":\"1000:1000\"},"
  "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:" D64 "\"]}}",
  "3[{\"Config\":\"blobs/sha256/" D64 "\",\"RepoTags\":[\"x:latest\"],\"Layers\":[\"" D64 "/layer.tar\","
  "\"blobs/sha256/" D64 "\"]}]",
};

static const char *const tokens[] = { "{",       "}",        "[",       "]",   "\"",      ",",       ":",        "null",
                                      "1e9",     "-1",       "\\u0000", "../", "sha512:", "sha256:", "[[[[[[[[", "",
                                      "\"a\":1", "\xff\xfe", "true",    "/",   "=",       "\\\"" };

int
main (void)
{
  static const struct fuzz_seeds mutations = FUZZ_SEEDS (seeds, tokens, INPUT_MAX, true);
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 3131,
    .mutate = &mutations,
    .what = "index, manifest, config and docker manifest documents to their parsers",
  };

  fuzz_corpus_run (&corpus, 2);
  tap_ok (accepted > CORPUS_SIZE / 20, "%zu of them accepted, each with its promises kept", accepted);
  return tap_done ();
}

#endif
