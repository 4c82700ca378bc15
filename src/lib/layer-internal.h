/* Layers: the layer-*.c files own ROOT/layers. A tarball becomes a layer in
 * one pass over it: the parent reads it, strips any compression, hashes the
 * plain tar stream (the hash names the layer) and feeds the same bytes to a
 * child process chrooted into the new rootfs, which extracts them with
 * libarchive's secure flags plus our own check of every entry, so that a path
 * in the archive cannot reach outside it even if a check were missed. Reading,
 * hashing and extracting overlap. All of it happens in ROOT/layers/tmp/RANDOM,
 * renamed to ROOT/layers/sha256/HEX once complete, and removed on any error.
 * The stream itself is not kept: export writes a layer's tar from its files.
 *
 * An import does not wait for the disk, as `tar -x` does not: the layer is
 * installed with a `pending` mark holding the boot id, and a process of its
 * own syncs the filesystem after the command has returned and then drops the
 * mark (sbx_layer_settle). A mark from an earlier boot means the host went
 * down before the layer reached the disk: sbx_layer_check refuses such a layer
 * rather than run from files that may be torn. The mark is made before the
 * rename that installs the layer, and journaled filesystems (ext4, xfs, btrfs)
 * commit the two in that order. The built-in busybox layer is written as a tar
 * (layer-busybox.c) and then goes through the same extraction, synced before
 * it is installed. */
#ifndef SBX_LAYER_INTERNAL_H
#define SBX_LAYER_INTERNAL_H

#include "layer.h"
#include "sha256.h"
#include "util.h"

#include <archive_entry.h>
#include <errno.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define IO_BLOCK (1024 * 1024)
#define DIGEST_PREFIX "sha256:"
#define DIGEST_PREFIX_LEN 7
/* Bounds on entry paths: a rootfs is never this deep, and removing a tree
 * holds one fd per level. */
#define ENTRY_PATH_MAX 4096
#define ENTRY_DEPTH_MAX 256
#define OPAQUE_XATTR "trusted.overlay.opaque"
/* Next to rootfs/: the boot id while the layer is not yet on the disk, and
 * the layer's size (the sum of its regular files' sizes) in decimal. */
#define PENDING_MARK "pending"
#define SIZE_FILE "size"
#define FUZZ_STREAM "stream.tar"
#define WH_PREFIX ".wh."
#define WH_META_PREFIX ".wh..wh."
#define WH_OPAQUE ".wh..wh..opq"

/* No FFLAGS (an immutable file could never be removed), no ACLs; xattrs are
 * filtered per entry (filter_xattrs). No name lookups: owners are numeric ids
 * of the sandbox's own user view, not the host's. No writing through
 * symlinks either: guard_path does what ARCHIVE_EXTRACT_SECURE_SYMLINKS
 * would, which is added where openat2 is missing. */
#define EXTRACT_FLAGS                                                                          \
  (ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_XATTR \
   | ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS)

/* A layer being made: a work directory with rootfs/ (and for busybox its
 * layer.tar). Until it is installed, going out of scope removes it. The lock
 * on the directory is held by the extracting child too. */
typedef sbx_workdir tmp_layer;
#define TMP_LAYER_INIT SBX_WORKDIR_INIT
#define _cleanup_tmp_layer_ _cleanup_workdir_

/* The stream goes to a helper process through a socket: the extraction,
 * chrooted into the new rootfs. It works at its own pace, the parent ahead of
 * it by what the socket holds. A helper's verdict comes back as this struct
 * on a pipe: errors cross the fork as data. */
typedef struct helper_result {
  int32_t code;
  int32_t errnum;
  uint64_t size; /* the extraction's: the layer's size */
  char msg[2048];
} helper_result;

/* A helper that fails stops reading: the parent then stops sending to it
 * (gone) and reads its input to the end all the same, for the digests. */
typedef struct helper {
  pid_t pid;
  int datafd; /* -1: nothing to feed */
  int resfd;
  bool gone;
} helper;
#define HELPER_INIT                      \
  {                                      \
    .pid = -1, .datafd = -1, .resfd = -1 \
  }

/* A helper's work on the stream in INFD, *RES its verdict. */
typedef void helper_fn (void *arg, int infd, helper_result *res);

/* The extraction into ROOTFD: of the stream fed to h, or of the file TARFD,
 * read to its end. */
typedef struct extractor {
  helper h;
  int rootfd; /* borrowed */
  int tarfd;  /* borrowed; -1 when fed */
  bool plain; /* a plain tree: no whiteouts (sbx_tar_extract_into) */
} extractor;
#define EXTRACTOR_INIT                          \
  {                                             \
    .h = HELPER_INIT, .rootfd = -1, .tarfd = -1 \
  }
#define _cleanup_extractor_ __attribute__ ((cleanup (extractor_cleanup)))

/* Where the plain tar stream goes: hashed, and to the extraction unless X
 * is NULL. The fuzzer's build also copies it to COPYFD for its in-process
 * extraction. */
typedef struct tar_sinks {
  sha256_ctx sha;
  uint64_t len;
  extractor *x;
#ifdef SBX_LAYER_FUZZING
  int copyfd;
#endif
} tar_sinks;

/* The digests of one input: HEX of the plain tar, BLOB_HEX and BLOB_LEN of
 * the bytes as they came. */
typedef struct stream_sums {
  char hex[65];
  char blob_hex[65];
  uint64_t blob_len;
} stream_sums;

typedef enum entry_kind {
  ENTRY_WRITE,    /* extract as it is */
  ENTRY_SKIP,     /* aufs metadata (.wh..wh.*), meaningless to overlayfs */
  ENTRY_WHITEOUT, /* .wh.NAME: an overlay whiteout at the returned path */
  ENTRY_OPAQUE,   /* .wh..wh..opq: the returned directory becomes opaque */
} entry_kind;

/* A tar is written through this sink to its file; HASH: hashed on the way
 * (export hashes what goes out itself). */
typedef struct tar_sink {
  int fd;
  bool hash;
  sha256_ctx sha;
} tar_sink;

/* The HEX of "sha256:HEX", or NULL when DIGEST is not exactly that. */
static inline const char *
digest_hex (const char *digest)
{
  if (digest == NULL || strncmp (digest, DIGEST_PREFIX, DIGEST_PREFIX_LEN) != 0)
    return NULL;
  const char *hex = digest + DIGEST_PREFIX_LEN;
  for (int i = 0; i < 64; i++)
    if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
      return NULL;
  return hex[64] == '\0' ? hex : NULL;
}

static inline bool
errno_is_resource (int e)
{
  return e == ENOSPC || e == EDQUOT || e == EIO || e == ENOMEM || e == EROFS || e == EMFILE || e == ENFILE;
}

/* Shared between the layer-*.c files; each is described where it is defined. */
char *alias_target (const char *root, const char *digest);
int check_path (const char *p, const char *what, sbx_error **err);
int classify_entry (struct archive_entry *e, char **ret_path, sbx_error **err);
bool entry_counts_in_size (struct archive_entry *e);
int extractor_finish (extractor *x, helper_result *ret, sbx_error **err);
int extractor_start (int rootfd, int tarfd, extractor *x, sbx_error **err);
void extractor_cleanup (extractor *x);
int finish_layer (const char *root, tmp_layer *t, const char *hex, char **ret_digest, uint64_t *ret_size,
                  sbx_error **err);
int helper_result_take (helper_result *res, sbx_error **err);
bool layer_usable (const char *root, const char *digest);
struct archive *open_tar_reader (int fd, sbx_error **err);
bool path_is_top (const char *p);
int read_input (int infd, tar_sinks *k, stream_sums *ret, sbx_error **err);
void split_path (const char *p, size_t *ret_dirlen, char **ret_base);
la_ssize_t tar_sink_write (struct archive *a, void *data, const void *buf, size_t len);
int tmp_layer_install (const char *root, tmp_layer *t, const char *hex, uint64_t size, bool synced, sbx_error **err);
int tmp_layer_new (const char *root, tmp_layer *t, sbx_error **err);
bool xattr_allowed (const char *name);

#endif
