/* Content-addressed rootfs layers in the store (DESIGN.md section 3):
 * ROOT/layers/sha256/HEX/{layer.tar, rootfs/}, where HEX is the sha256 of the
 * uncompressed layer.tar. A layer is made in ROOT/layers/tmp/RANDOM and renamed
 * into place whole, so the store never holds a partial one. */
#ifndef SBX_LAYER_H
#define SBX_LAYER_H

#include <archive.h>

#include "archive-dl.h"
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* libarchive handles: one cleanup attribute per way of freeing them. */
static inline void
archive_read_freep (struct archive **a)
{
  if (*a)
    sbx_ar.archive_read_free (*a);
}
static inline void
archive_write_freep (struct archive **a)
{
  if (*a)
    sbx_ar.archive_write_free (*a);
}
#define _cleanup_archive_read_ __attribute__ ((cleanup (archive_read_freep)))
#define _cleanup_archive_write_ __attribute__ ((cleanup (archive_write_freep)))

/* Imports a rootfs tarball (plain tar, gzip, xz or zstd, told apart by content)
 * as one layer; *ret_digest is "sha256:HEX" of the uncompressed tar stream.
 * Entries that are absolute, have a `..` component, hardlink outside the layer,
 * are devices, FIFOs, sockets or of unknown type, and truncated or corrupt
 * archives are refused with INVALID_ARGUMENT. OCI whiteouts become overlay
 * whiteouts. An existing layer with that digest is reused. *ret_size is the sum
 * of the sizes of the regular files in it. */
int sbx_layer_import_tar (const char *root, const char *tarpath, char **ret_digest, uint64_t *ret_size,
                          sbx_error **err);

/* The built-in busybox layer, made from the host's static busybox (/bin/busybox
 * or $SBX_BUSYBOX): the binary, one symlink per applet and a minimal /etc. The
 * tar is deterministic, so the digest changes only with the host's busybox. */
int sbx_layer_make_busybox (const char *root, char **ret_digest, uint64_t *ret_size, sbx_error **err);

/* ROOT/layers/sha256/HEX and ROOT/layers/sha256/HEX/rootfs; NULL when DIGEST is
 * not "sha256:" followed by 64 lowercase hex digits. Caller frees. */
char *sbx_layer_dir (const char *root, const char *digest);
char *sbx_layer_rootfs (const char *root, const char *digest);
bool sbx_layer_exists (const char *root, const char *digest);

/* Removes a layer (rmi, gc): renamed away first, so a reader never sees half
 * of one, then deleted. NOT_FOUND when it is not there. */
int sbx_layer_remove (const char *root, const char *digest, sbx_error **err);

#endif
