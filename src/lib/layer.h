/* Content-addressed rootfs layers in the store (DESIGN.md section 3):
 * ROOT/layers/sha256/HEX/{rootfs/, size, pending}, where HEX is the sha256 of
 * the uncompressed tar the layer was made from (the busybox layer and layers
 * an older sbx made also keep that tar as layer.tar). A layer is made in
 * ROOT/layers/tmp/RANDOM and renamed into place whole, so the store never
 * holds a partial one; `pending` holds the boot id until the layer is on the
 * disk (layer-internal.h says how). */
#ifndef SBX_LAYER_H
#define SBX_LAYER_H

#include <archive.h>

#include "archive-dl.h"
#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* Imports a rootfs tarball (plain tar, gzip, xz or zstd, told apart by content)
 * as one layer; *ret_digest is "sha256:HEX" of the uncompressed tar stream.
 * Entries that are absolute, have a `..` component, hardlink outside the layer,
 * are devices, FIFOs, sockets or of unknown type, and truncated or corrupt
 * archives are refused with INVALID_ARGUMENT. OCI whiteouts become overlay
 * whiteouts. An existing layer with that digest is reused. *ret_size is the sum
 * of the sizes of the regular files in it. */
int sbx_layer_import_tar (const char *root, const char *tarpath, char **ret_digest, uint64_t *ret_size,
                          sbx_error **err);
/* The most a layer may expand to from here on in this process (the sum of
 * its regular files, as *ret_size): an entry past it is refused with
 * RESOURCE_EXHAUSTED before it is written, and the layer is not made. 0: no
 * limit (the default). */
void sbx_layer_set_size_max (uint64_t max);
uint64_t sbx_layer_size_max (void);
/* The same from an open file (or pipe) FD, read to its end. */
int sbx_layer_import_fd (const char *root, int fd, char **ret_digest, uint64_t *ret_size, sbx_error **err);

/* An import in steps, so that a caller making several layers (an OCI image)
 * can check each one's digests before anything enters the store and install
 * them together: stage (read FD once: decompress, hash both streams, write
 * layer.tar and extract in the chrooted child, all in a work directory),
 * extract (the extraction's verdict), install (rename into place). When the
 * store has the layer KNOWN already (the diff_id the caller will check the
 * layer against; may be NULL), staging only hashes. Freeing a staged layer
 * that was not installed removes its directory. */
typedef struct sbx_layer_staged sbx_layer_staged;
int sbx_layer_stage (const char *root, int fd, const char *known, sbx_layer_staged **ret, sbx_error **err);
/* "sha256:HEX" of the uncompressed tar: the layer's name, an OCI diff_id. */
const char *sbx_layer_staged_digest (const sbx_layer_staged *s);
/* The layer in the store: the digest, or the layer an alias (below) says a
 * tar with that digest came from. */
const char *sbx_layer_staged_name (const sbx_layer_staged *s);
/* "sha256:HEX" and size of the bytes FD gave, as they were: an OCI blob. */
const char *sbx_layer_staged_blob (const sbx_layer_staged *s, uint64_t *ret_size);
int sbx_layer_staged_extract (const char *root, sbx_layer_staged *s, sbx_error **err);
/* *ret_size as for sbx_layer_import_tar. */
int sbx_layer_staged_install (const char *root, sbx_layer_staged *s, uint64_t *ret_size, sbx_error **err);
void sbx_layer_staged_free (sbx_layer_staged *s);
static inline void
sbx_layer_staged_freep (sbx_layer_staged **s)
{
  sbx_layer_staged_free (*s);
}
#define _cleanup_layer_staged_ __attribute__ ((cleanup (sbx_layer_staged_freep)))

/* The tar of layer DIGEST as an OCI image carries it, open for reading in
 * *ret_fd: its layer.tar, the stream that was imported with its OCI whiteouts,
 * or (*ret_converted: the tar is not the one DIGEST names) an unnamed file in
 * directory WORKFD, written from the layer's files where it has no layer.tar
 * or converted where its layer.tar held overlay whiteouts (0:0 character
 * devices, then also opaque xattrs), which become `.wh.NAME` and
 * `.wh..wh..opq` entries. */
int sbx_layer_open_oci_tar (const char *root, const char *digest, int workfd, int *ret_fd, bool *ret_converted,
                            sbx_error **err);

/* A work directory ROOT/layers/tmp/RANDOM, flocked while open: gc removes
 * only unlocked ones (debris of a killed process). sbx_workdir_cleanup
 * removes it. */
typedef struct sbx_workdir {
  char *path;
  int dfd;
} sbx_workdir;
#define SBX_WORKDIR_INIT    \
  {                         \
    .path = NULL, .dfd = -1 \
  }
int sbx_workdir_new (const char *root, sbx_workdir *w, sbx_error **err);
void sbx_workdir_cleanup (sbx_workdir *w);
#define _cleanup_workdir_ __attribute__ ((cleanup (sbx_workdir_cleanup)))

/* Writes the tree of DIRFD into a tar at OUTFD: sorted, owner, mode and
 * mtime kept, the xattrs a layer keeps (user.*, security.capability) too,
 * symlinks as links, hard links as links to the first path seen, never
 * following anything. UPPER: the tree is an overlay upper dir, whose
 * whiteouts (0/0 character devices) and opaque directories become OCI
 * whiteouts. Devices, FIFOs and sockets are INVALID_ARGUMENT, unless
 * SKIP_SPECIAL (then they are left out). */
int sbx_tar_from_dir (int dirfd, int outfd, bool upper, bool skip_special, sbx_error **err);
/* The same for the files of a sandbox in a user namespace whose host range
 * starts at USERNS_BASE (userns.h): the layer has the ids it saw. */
int sbx_tar_from_dir_ids (int dirfd, int outfd, bool upper, bool skip_special, uint32_t userns_base, sbx_error **err);

/* Extracts the plain tar read from TARFD (to its end) into the directory
 * ROOTFD, with every check a layer's extraction makes, in a child chrooted
 * there (a volume's import): absolute paths, `..`, hard links out of it,
 * devices, FIFOs and sockets are INVALID_ARGUMENT; `.wh.` names are plain
 * files. *ret_size: the sum of the regular files' sizes. */
int sbx_tar_extract_into (int rootfd, int tarfd, uint64_t *ret_size, sbx_error **err);

/* The built-in busybox layer, made from the host's static busybox (/bin/busybox
 * or $SBX_BUSYBOX): the binary, one symlink per applet and a minimal /etc. The
 * tar is deterministic, so the digest changes only with the host's busybox. */
int sbx_layer_make_busybox (const char *root, char **ret_digest, uint64_t *ret_size, sbx_error **err);

/* ROOT/layers/sha256/HEX and ROOT/layers/sha256/HEX/rootfs; NULL when DIGEST is
 * not "sha256:" followed by 64 lowercase hex digits. Caller frees. */
char *sbx_layer_dir (const char *root, const char *digest);
char *sbx_layer_rootfs (const char *root, const char *digest);
bool sbx_layer_exists (const char *root, const char *digest);
/* The size recorded for layer DIGEST (the sum of its regular files, as
 * sbx_layer_import_tar's *ret_size); 0 when it has no record. */
uint64_t sbx_layer_size (const char *root, const char *digest);

/* Records that a tar with digest ALIAS holds exactly the files of layer
 * DIGEST (export wrote it from them): an import of that tar finds DIGEST.
 * sbx_layer_alias_gc removes the aliases of layers that are gone. */
int sbx_layer_alias (const char *root, const char *digest, const char *alias, sbx_error **err);
void sbx_layer_alias_gc (const char *root);
/* 0 when layer DIGEST is there to be used; NOT_FOUND when it is not there;
 * INTERNAL when its pending mark is from an earlier boot: the host went down
 * before its files reached the disk, so they may be torn. */
int sbx_layer_check (const char *root, const char *digest, sbx_error **err);

/* Imports return before their layers are on the disk. This syncs the
 * filesystem and then drops the pending marks of this boot's layers that
 * were there before the sync; the number dropped, or -errno. `sbx gc` runs
 * it too, for a settling process that was killed. */
int sbx_layer_settle (const char *root);
/* sbx_layer_settle in a process of its own that outlives the caller: after
 * an import (sbx_layer_import_* do it themselves; a caller of
 * sbx_layer_staged_install does it once after the last layer). */
void sbx_layer_settle_later (const char *root);

/* Removes a layer (rmi, gc): renamed away first, so a reader never sees half
 * of one, then deleted. NOT_FOUND when it is not there. */
int sbx_layer_remove (const char *root, const char *digest, sbx_error **err);

#endif
