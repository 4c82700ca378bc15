/* Named volumes (sbx volume, --volume NAME:/path[:ro]): directories that
 * outlive sandboxes and are shared by every sandbox that mounts them.
 *
 * ROOT/volumes/NAME/ holds volume.json (name, size limit, creation time),
 * lock, and the files: data/, a plain directory on the store's filesystem,
 * or, with a size limit, disk.img, a sparse ext4 image made and
 * loop-mounted as a sandbox's disk is (disk.h), with a journal. Every
 * mount of one image goes through one loop device (sbx_disk_mount_shared).
 *
 * A volume is made in ROOT/volumes/.tmp-RANDOM and renamed into place, and
 * removed by a rename to ROOT/volumes/.rm-RANDOM first, so that the store
 * never shows half of one. `lock` orders the users: create holds it shared
 * from its look at the volume until the sandbox's record (which names the
 * volume) is saved; rm and import hold it exclusively. A volume is in use
 * while a sandbox record that names it exists (running or ended, until
 * `sbx rm`). */
#ifndef SBX_VOLUME_H
#define SBX_VOLUME_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "store.h"

/* One --volume value: NAME:/path[:ro|:rw]. DEST is the path made clean
 * (no empty components, no trailing slash). */
typedef struct sbx_volume_spec {
  char *name;
  char *dest;
  bool readonly;
} sbx_volume_spec;

/* INVALID_ARGUMENT for a malformed value or name, PATH_INVALID for a
 * destination that is relative, has `.` or `..`, is `/` or lies over what
 * sbx or the runtime mounts itself (/.sbx, /proc, /sys, /dev). */
int sbx_volume_spec_parse (const char *s, sbx_volume_spec *ret, sbx_error **err);
void sbx_volume_spec_clear (sbx_volume_spec *v);
/* Every value of SPECS (NULL: none) parsed, and no destination twice. */
int sbx_volume_specs_check (char *const *specs, sbx_error **err);
/* A destination path inside a sandbox for a mount of WHAT (the option's
 * name, for the message), checked and made clean as above. */
int sbx_mount_dest_clean (const char *dest, const char *what, char **ret, sbx_error **err);

bool sbx_volume_name_is_valid (const char *name);

typedef struct sbx_volume {
  char *name;
  uint64_t size;   /* the limit in bytes; 0: none */
  int64_t created; /* unix seconds */
  int64_t used;    /* bytes its files take; -1 unknown */
  char **users;    /* ids of the sandboxes (not removed) that mount it */
} sbx_volume;
void sbx_volume_free (sbx_volume *v);
static inline void
sbx_volume_freep (sbx_volume **v)
{
  sbx_volume_free (*v);
}
#define _cleanup_volume_ __attribute__ ((cleanup (sbx_volume_freep)))

/* Makes volume NAME (SIZE bytes, 0: no limit; as --disk's bounds). BUSY
 * when it exists. */
int sbx_volume_create (const sbx_store *st, const char *name, uint64_t size, sbx_error **err);
/* NAME's record; with DETAILS, also its use (bytes, users). NOT_FOUND. */
int sbx_volume_get (const sbx_store *st, const char *name, bool details, sbx_volume **ret, sbx_error **err);
/* The names of the volumes, sorted. */
int sbx_volume_list (const sbx_store *st, char ***ret_names, sbx_error **err);
/* Removes NAME and its files: BUSY, naming them, while sandboxes use it. */
int sbx_volume_remove (const sbx_store *st, const char *name, sbx_error **err);
/* A tar of NAME's files on OUTFD. */
int sbx_volume_export (const sbx_store *st, const char *name, int outfd, sbx_error **err);
/* Extracts the tar on INFD into NAME (made, without a limit, when it does
 * not exist): every entry checked as a layer's are (sbx_tar_extract_into).
 * *RET_MADE: whether it made the volume. */
int sbx_volume_import (const sbx_store *st, const char *name, int infd, bool *ret_made, sbx_error **err);

/* gc: what a killed create or rm left in ROOT/volumes (a .rm- volume,
 * and a .tmp- one an hour old); never a volume. */
void sbx_volumes_gc (const sbx_store *st);

/* For create: every volume of SPECS (made, without a limit, when missing,
 * as podman does for -v NAME:/path), its lock held shared until
 * sbx_volumes_release: rm waits while the sandbox's record is being made. */
typedef struct sbx_volume_holds {
  int *fds;
  size_t n;
} sbx_volume_holds;
int sbx_volumes_hold (const sbx_store *st, char *const *specs, sbx_volume_holds *ret, sbx_error **err);
void sbx_volumes_release (sbx_volume_holds *h);

/* In the caller's mount namespace (a monitor's): the volume of SPEC mounted
 * on MNT (made), read-only there with SPEC's :ro. */
int sbx_volume_mount (const sbx_store *st, const sbx_volume_spec *spec, const char *mnt, sbx_error **err);

#endif
