/* A sandbox's disk: the limit on its writable layer (--disk).
 *
 * A sandbox with a limit keeps its writable layer (the overlay's upper and
 * work directories) in a sparse ext4 image of that size,
 * ROOT/sandboxes/ID/disk.img, loop-mounted on ROOT/sandboxes/ID/disk in the
 * private mount namespace of whoever uses it (its monitor, `sbx fs` on an
 * ended sandbox, a commit): a write past the limit fails with ENOSPC inside
 * the sandbox, under either runtime, and the host's filesystem gives it at
 * most the limit. A limit of 0 keeps the layer in ROOT/sandboxes/ID/upper
 * on the store's filesystem, unbounded, as before.
 *
 * Why an image rather than a project quota (measured, see docs/performance.md):
 * quota needs the store's filesystem mounted with project quotas and a
 * kernel built with them (the reference host has neither: ext4 without
 * prjquota, no CONFIG_QFMT_V2, no CONFIG_XFS_QUOTA), while an image works on
 * any filesystem with sparse files. A fresh image is a sparse copy of a
 * template formatted once per size and store (ROOT/disk/ext4-BYTES.img:
 * mkfs.ext4 takes 50-150 ms, the copy of its ~200 KiB of metadata well
 * under one); a loop device and an ext4 mount take a few ms.
 *
 * The loop device clears itself when its mount goes (LO_FLAGS_AUTOCLEAR),
 * so a namespace that dies, however it dies, takes it along. Two loop
 * devices on one image are two ext4s writing the same blocks, so a mounter
 * holds a flock on the image for as long as its mount lives: exclusive to
 * write, shared to read. */
#ifndef SBX_DISK_H
#define SBX_DISK_H

#include <stdbool.h>
#include <stdint.h>

#include "conf.h" /* SBX_DISK_DEFAULT, _MIN, _MAX */
#include "error.h"
#include "sandbox.h"
#include "store.h"

/* Parses a --disk or sbx.conf size: "0" (no limit) or SBX_DISK_MIN..MAX,
 * MiB or with a unit (see parse_memory). */
int sbx_disk_parse (const char *s, uint64_t *ret_bytes);

/* Makes sandbox ID's image of SIZE bytes (its directory exists). */
int sbx_disk_make (const sbx_store *st, const char *id, uint64_t size, sbx_error **err);
/* The same at IMG (made O_EXCL); JOURNAL: an ext4 with a journal (a
 * volume's, which outlives every sandbox). */
int sbx_disk_make_image (const sbx_store *st, const char *img, uint64_t size, bool journal, sbx_error **err);

/* In the caller's own mount namespace: the image IMG mounted read-write on
 * MNT, through the loop device already bound to it if there is one (the
 * same block device mounted twice is one ext4, one superblock: two loop
 * devices on one image would be two ext4s writing the same blocks), a new
 * one otherwise; under a flock on the image while it looks. Every mount of
 * it may be in a different namespace (a volume's, in each monitor's); the
 * loop device clears itself when the last one goes. */
int sbx_disk_mount_shared (const char *img, const char *mnt, sbx_error **err);
/* The same in a short-lived child with a mount namespace of its own: *RET_FD
 * is the top directory of the mounted image (O_RDONLY | O_DIRECTORY), which
 * keeps that mount alive after the child is gone. */
int sbx_disk_open_shared (const char *img, const char *mnt, int *ret_fd, sbx_error **err);

/* In the caller's own mount namespace: mounts sandbox ID's image on
 * ROOT/sandboxes/ID/disk (with upper/ and work/ in it unless READONLY).
 * *RET_LOCK: the image's fd, which holds the flock; keep it open as long as
 * the mount is used. BUSY when another mounter holds the image. */
int sbx_disk_mount (const sbx_store *st, const char *id, bool readonly, int *ret_lock, sbx_error **err);

/* sbx_disk_mount in two: the slow half (the flock and binding a loop
 * device, which waits for an RCU grace period of the block layer: 4-30 ms)
 * can run ahead, in a thread, while the monitor prepares the rest. */
typedef struct sbx_disk_att {
  int lock, loop; /* the image (flocked), the loop device bound to it */
  char dev[64];
  bool readonly, done;
  sbx_error *err; /* what failed, for sbx_disk_mount_att to report */
} sbx_disk_att;
#define SBX_DISK_ATT_INIT  \
  {                        \
    .lock = -1, .loop = -1 \
  }
void sbx_disk_attach (const sbx_store *st, const char *id, bool readonly, sbx_disk_att *a);
void sbx_disk_att_clear (sbx_disk_att *a);
/* sbx_disk_mount with PRE (NULL, or one sbx_disk_attach filled: it is used
 * up, whatever happens). */
int sbx_disk_mount_att (const sbx_store *st, const char *id, bool readonly, sbx_disk_att *pre, int *ret_lock,
                        sbx_error **err);

/* The upper directory of SB (O_RDONLY | O_DIRECTORY), wherever it lives: a
 * running sandbox's through its monitor's mount namespace, an ended one's
 * image mounted read-only in a short-lived namespace of a child (the fd
 * keeps that mount alive after the child is gone). *RET_LOCK: -1, or an fd
 * to close after *RET_FD. */
int sbx_disk_open_upper (const sbx_store *st, const sbx_sandbox *sb, int *ret_fd, int *ret_lock, sbx_error **err);

/* Removes the templates of sizes other than KEEP_SIZE (sbx.conf's disk:
 * remade on demand) and those a killed format left. */
void sbx_disk_gc (const sbx_store *st, uint64_t keep_size);

/* Bytes the sandbox's writable layer takes: while it runs, what its
 * filesystem counts as used (as df inside); after, its image's blocks on the
 * host. -1 when it has no image. */
int64_t sbx_disk_used (const sbx_store *st, const sbx_sandbox *sb);

#endif
