/* runc sandboxes in a user namespace (DESIGN.md section 6): the host id
 * ranges they map uid/gid 0 to, leased host-wide like the network's
 * addresses; the namespaces that carry a mapping for idmapped mounts; and
 * the probe that says whether this host can do it at all. */
#ifndef SBX_USERNS_H
#define SBX_USERNS_H

#include <stdbool.h>
#include <stdint.h>

#include "conf.h"
#include "error.h"
#include "store.h"

#define SBX_USERNS_DIR "/run/sbx/userns"
/* Where a runc sandbox's root and binds are reachable by its init (0711,
 * a tmpfs in each monitor's mount namespace; monitor-userns.c). */
#define SBX_USERNS_PATHS "/run/sbx-userns"
/* The ids one sandbox maps: 0..65535 inside. */
#define SBX_USERNS_SIZE 65536u

/* RUNTIME_UNAVAILABLE, with the reason, unless this host can run a runc
 * sandbox of store ST in a user namespace: user namespaces allowed, and
 * idmapped mounts of the store's filesystem (the image layers). */
int sbx_userns_probe (const sbx_store *st, sbx_error **err);

/* Whether a sandbox of RUNTIME gets a user namespace: runc does where the
 * host can (sbx_userns_probe); where it cannot, sbx.conf's runc_userns =
 * optional gives *RET_OFF, the reason it runs without one, and required
 * (the default) the probe's RUNTIME_UNAVAILABLE. */
int sbx_userns_plan (const sbx_store *st, const char *runtime, char **ret_off, sbx_error **err);

/* Leases a free range of CONF's (userns_base + k * SBX_USERNS_SIZE, k <
 * userns_count) for sandbox ID of store ST: SBX_USERNS_DIR/BASE, flocked
 * on *RET_FD (the monitor's, for its life; the lease lives while it is
 * held). BUSY when every range is taken. */
int sbx_userns_lease_take (const sbx_conf *conf, const sbx_store *st, const char *id, uint32_t *ret_base, int *ret_fd,
                           sbx_error **err);
/* Removes the lease of BASE held on FD, and closes FD. */
void sbx_userns_lease_release (uint32_t base, int fd);
/* Removes every lease nobody holds (its monitor died); the number reaped. */
int sbx_userns_gc (sbx_error **err);
/* Removes the lease of BASE (0: none) if nobody holds it: a sandbox whose
 * monitor is gone, reaped. */
void sbx_userns_reap (uint32_t base);

/* A user namespace (an fd of it) mapping 0..SIZE-1 to BASE..BASE+SIZE-1 for
 * uids and gids: what an idmapped mount is given. No process stays in it. */
int sbx_userns_open (uint32_t base, uint32_t size, int *ret_fd, sbx_error **err);
/* The same with INSIDE..INSIDE+SIZE-1 mapped (an idmapped mount's view of
 * files another range owns on disk). */
int sbx_userns_open_map (uint32_t inside, uint32_t base, uint32_t size, int *ret_fd, sbx_error **err);

/* A detached clone of DIRFD/PATH (not recursive) with ATTRS (MOUNT_ATTR_*)
 * and ids shown through USERNS_FD's mapping: a file owned by N on the disk
 * is owned by BASE+N through it. */
int sbx_idmap_clone (int dirfd, const char *path, int userns_fd, uint64_t attrs, int *ret_tree, sbx_error **err);

/* The mount on PATH replaced by an idmapped clone of itself (same flags). */
int sbx_idmap_remount (const char *path, int userns_fd, sbx_error **err);

/* The file API and the layers made from a sandbox's files keep the ids the
 * sandbox sees: a host id in BASE's range is shown as its id inside, any
 * other as the overflow id (65534), as the kernel shows it inside. */
static inline uint32_t
sbx_userns_inside (uint32_t base, uint32_t host)
{
  if (base == 0)
    return host;
  return host >= base && host - base < SBX_USERNS_SIZE ? host - base : 65534;
}

/* The host id of id INSIDE (below SBX_USERNS_SIZE). */
static inline uint32_t
sbx_userns_outside (uint32_t base, uint32_t inside)
{
  return base == 0 ? inside : base + inside;
}

#endif
