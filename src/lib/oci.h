/* Images from and to other tools (DESIGN.md sections 1 and 3): `sbx import`
 * of an OCI image layout (a directory), an OCI archive (a tar of one) or a
 * `docker save` archive, and `sbx export` of an image as an OCI archive that
 * podman and docker load. Every digest is checked and every document and path
 * taken from an archive is bounded and validated here, at one boundary. */
#ifndef SBX_OCI_H
#define SBX_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "image.h"

/* What `sbx import` was given, told apart by content. */
typedef enum sbx_import_kind {
  SBX_IMPORT_ROOTFS,         /* a rootfs tarball: one layer */
  SBX_IMPORT_OCI_LAYOUT,     /* a directory with oci-layout and index.json */
  SBX_IMPORT_OCI_ARCHIVE,    /* a tar of such a directory */
  SBX_IMPORT_DOCKER_ARCHIVE, /* a tar with manifest.json (docker save, podman save) */
  SBX_IMPORT_DOCKER_DIR,     /* such a tar unpacked */
} sbx_import_kind;

/* "rootfs", "oci-layout", "oci-archive", "docker-archive", "docker-dir". */
const char *sbx_import_kind_name (sbx_import_kind kind);

/* Imports PATH into the store at ROOT: its layers are installed and *ret_img
 * holds them with the image's config (env, workdir, cmd as Entrypoint then
 * Cmd, user) and size, not yet stored (sbx_image_store). The caller holds the
 * store's layer lock shared. A digest that does not match, a bad path or
 * document is INVALID_ARGUMENT, and nothing is installed: layers are checked
 * and extracted in ROOT/layers/tmp and installed only when all are good (a
 * failure while installing, a rename, can leave unreferenced layers that
 * sbx_layers_gc collects). Archives are unpacked in ROOT/layers/tmp too,
 * removed on every path. */
int sbx_oci_import (const char *root, const char *path, sbx_image **ret_img, sbx_import_kind *ret_kind,
                    sbx_error **err);

typedef enum sbx_oci_compression {
  SBX_OCI_GZIP,
  SBX_OCI_UNCOMPRESSED,
} sbx_oci_compression;

/* Writes IMG as an OCI archive at PATH, atomically (a temp file in PATH's
 * directory, renamed): oci-layout, index.json naming the manifest with the
 * annotation org.opencontainers.image.ref.name = REF_NAME, and blobs: the
 * config (env, workdir, cmd, user, rootfs.diff_ids, os and architecture of
 * this host), the manifest and one tar per layer with OCI whiteouts.
 * *ret_size: the archive's size. The caller holds the layer lock shared. */
int sbx_oci_export (const char *root, const sbx_image *img, const char *ref_name, sbx_oci_compression comp,
                    const char *path, uint64_t *ret_size, sbx_error **err);

/* ---- the documents, parsed into typed structs (the unit tests use these) ---- */

/* Where manifests and configs name a blob. */
typedef struct sbx_oci_desc {
  char *media_type; /* NULL when absent */
  char *digest;     /* "sha256:" and 64 lowercase hex digits */
  uint64_t size;
  char *os; /* the platform of an index entry; NULL when absent */
  char *arch;
} sbx_oci_desc;

typedef struct sbx_oci_index {
  sbx_oci_desc *manifests;
  size_t n;
} sbx_oci_index;

typedef struct sbx_oci_manifest {
  sbx_oci_desc config;
  sbx_oci_desc *layers;
  size_t n_layers;
} sbx_oci_manifest;

typedef struct sbx_oci_config {
  char *os; /* NULL when absent */
  char *arch;
  char **env; /* each KEY=VALUE, checked */
  char *workdir;
  char **cmd; /* Entrypoint then Cmd */
  char *user;
  char **diff_ids; /* NULL when the config has none */
} sbx_oci_config;

/* docker save's manifest.json, its one image. */
typedef struct sbx_docker_manifest {
  char *config; /* a relative path in the archive, checked */
  char **layers;
} sbx_docker_manifest;

/* Each refuses (INVALID_ARGUMENT) what is not its document: not JSON, nested
 * too deep, larger than the bound, a field missing or of the wrong type, an
 * unsupported digest algorithm or media type, too many entries, an unsafe
 * path. */
int sbx_oci_parse_index (const char *text, size_t len, sbx_oci_index **ret, sbx_error **err);
int sbx_oci_parse_manifest (const char *text, size_t len, sbx_oci_manifest **ret, sbx_error **err);
int sbx_oci_parse_config (const char *text, size_t len, sbx_oci_config **ret, sbx_error **err);
int sbx_docker_parse_manifest (const char *text, size_t len, sbx_docker_manifest **ret, sbx_error **err);

/* Which of N index entries is the image for linux and ARCH: the one whose
 * platform says so, or the only entry when it names no platform. None, or
 * several, is INVALID_ARGUMENT listing what there is. */
int sbx_oci_pick (const sbx_oci_desc *v, size_t n, const char *arch, size_t *ret_i, sbx_error **err);

/* This host's architecture as OCI names it ("amd64", "arm64", ...). */
const char *sbx_oci_host_arch (void);

/* A path an archive may name: relative, components neither empty nor `.` or
 * `..`, no control characters, bounded. */
bool sbx_oci_path_ok (const char *p);

void sbx_oci_index_free (sbx_oci_index *x);
void sbx_oci_manifest_free (sbx_oci_manifest *m);
void sbx_oci_config_free (sbx_oci_config *c);
void sbx_docker_manifest_free (sbx_docker_manifest *m);
static inline void
sbx_oci_index_freep (sbx_oci_index **x)
{
  sbx_oci_index_free (*x);
}
static inline void
sbx_oci_manifest_freep (sbx_oci_manifest **m)
{
  sbx_oci_manifest_free (*m);
}
static inline void
sbx_oci_config_freep (sbx_oci_config **c)
{
  sbx_oci_config_free (*c);
}
static inline void
sbx_docker_manifest_freep (sbx_docker_manifest **m)
{
  sbx_docker_manifest_free (*m);
}
#define _cleanup_oci_index_ __attribute__ ((cleanup (sbx_oci_index_freep)))
#define _cleanup_oci_manifest_ __attribute__ ((cleanup (sbx_oci_manifest_freep)))
#define _cleanup_oci_config_ __attribute__ ((cleanup (sbx_oci_config_freep)))
#define _cleanup_docker_manifest_ __attribute__ ((cleanup (sbx_docker_manifest_freep)))

#endif
