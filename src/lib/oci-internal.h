/* OCI image layouts and archives, docker save archives: the oci-*.c files own
 * what sbx reads from and writes for other container tools.
 *
 * Import trusts nothing in what it is given. A directory is read with
 * openat2(RESOLVE_BENEATH); an archive is first unpacked, regular files and
 * directories only (links become hard links made by us), into a work directory
 * in ROOT/layers/tmp, then read the same way. Every document is bounded in size
 * and depth and parsed into typed structs at one place; blob paths are made
 * from checked digests, never taken from a document, and the paths a docker
 * manifest names are checked as relative paths without `..`. Every blob is
 * hashed against its descriptor and every layer, uncompressed, against the
 * config's diff_ids. Layers are staged, extracted and only then installed,
 * all of them or none (layer.h).
 *
 * Export writes the OCI archive podman and docker load: each layer's tar is
 * written from the layer's files (sorted, owners, modes, times, hard links and
 * kept xattrs as they are, overlay whiteouts as OCI ones), gzip-compressed by
 * default, and its digest is the diff_id. A layer an older sbx made keeps the
 * very stream it was imported from as layer.tar, which goes out as it is. */
#ifndef SBX_OCI_INTERNAL_H
#define SBX_OCI_INTERNAL_H

#include "oci.h"
#include "json.h"
#include "layer.h"
#include "util.h"

#include <archive_entry.h>
#include <stdbool.h>
#include <string.h>

#define JSON_MAX (4 * 1024 * 1024)
#define JSON_DEPTH_MAX 32
#define OCI_LAYOUT_MAX 4096
#define INDEX_ENTRIES_MAX 256
#define INDEX_NESTING_MAX 2
#define LAYERS_MAX 128
#define STRV_MAX 4096
#define USER_MAX 256
#define WORKDIR_MAX 4096
#define ARCHIVE_PATH_MAX 1024
#define ARCHIVE_DEPTH_MAX 16
#define ARCHIVE_MEMBERS_MAX 65536
#define IO_BLOCK (1024 * 1024)
#define DIGEST_PREFIX "sha256:"
#define REF_NAME_ANNOTATION "org.opencontainers.image.ref.name"

#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_OCI_CONFIG "application/vnd.oci.image.config.v1+json"
#define MT_OCI_LAYER "application/vnd.oci.image.layer.v1.tar"
#define MT_OCI_LAYER_GZIP MT_OCI_LAYER "+gzip"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_CONFIG "application/vnd.docker.container.image.v1+json"

/* A blob of an image being written out (export's archive, push's uploads):
 * a layer in a file, or a document. */
typedef struct oci_blob {
  char hex[65];
  uint64_t size;
  int fd;     /* a layer's content, or -1 */
  char *data; /* a document's, or NULL */
  char *diff_id;
} oci_blob;
void oci_blob_clear (oci_blob *b);
#define _cleanup_oci_blob_ __attribute__ ((cleanup (oci_blob_clear)))
/* DATA (taken) as the blob B. */
void oci_blob_doc (oci_blob *b, char *data, size_t len);
/* Layer DIGEST as blob B (an unnamed file in WORKFD at offset 0),
 * compressed or not; B's diff_id is the digest of the tar that goes out,
 * which is DIGEST only where that is a kept layer.tar. */
int oci_layer_blob (const char *root, const char *digest, sbx_oci_compression comp, int workfd, oci_blob *b,
                    sbx_error **err);
/* The OCI config of IMG whose layers go out as LAYERS (their diff_ids),
 * and the OCI manifest naming CONFIG and LAYERS. */
char *oci_config_doc (const sbx_image *img, const oci_blob *layers, size_t n, size_t *len);
char *oci_manifest_doc (const oci_blob *config, const oci_blob *layers, size_t n, sbx_oci_compression comp,
                        size_t *len);

/* Shared between the oci-*.c files (and push.c); each is described where it is defined. */
int check_archive_path (const char *p, const char *what, sbx_error **err);
void desc_copy (sbx_oci_desc *dst, const sbx_oci_desc *src);
bool docker_manifest_shaped (const char *text, size_t len);
char *dup_or_null (const char *s);
bool is_lower_hex (const char *s, size_t n);
bool mt_is_index (const char *mt);
bool mt_is_manifest (const char *mt);
int parse_json (const char *text, size_t len, const char *what, yajl_val *ret, sbx_error **err);

#endif
