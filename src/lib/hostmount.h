/* Host directories bound into a sandbox (--mount HOST:DEST[:ro|:rw]): the
 * option's grammar, the policy on what may be bound (a pure verdict on a
 * real path and sbx.conf), the walk that opens a source without following
 * any symlink, the checks made on that fd (what it is by inode, the
 * container engines' sockets in it), and the binds themselves, made from
 * that fd in the monitor's private mount namespace (DESIGN.md section 4). */
#ifndef SBX_HOSTMOUNT_H
#define SBX_HOSTMOUNT_H

#include <stdbool.h>
#include <stddef.h>

#include "conf.h"
#include "error.h"
#include "spec.h"
#include "store.h"

/* How deep below a source, and how many entries at most, the scan for an
 * engine's socket looks (the known places are looked at whatever these). */
#define SBX_HOSTMOUNT_SCAN_DEPTH 4
#define SBX_HOSTMOUNT_SCAN_ENTRIES 200000

typedef struct sbx_hostmount {
  char *source; /* absolute and normal: no `.`, `..`, `//` or trailing `/` */
  char *dest;   /* the same, inside the sandbox */
  bool readonly;
} sbx_hostmount;

void sbx_hostmount_clear (sbx_hostmount *m);

/* PATH, absolute, as a normal path (see sbx_hostmount.source): PATH_INVALID
 * when it is relative, has a `..` component, a control character, or is
 * longer than PATH_MAX. */
int sbx_hostpath_normalize (const char *path, char **ret, sbx_error **err);

/* Parses SPEC, `HOST:DEST[:ro|:rw]` (read-only unless `:rw`). A relative
 * HOST is taken from CWD; with CWD NULL it is PATH_INVALID. INVALID_ARGUMENT
 * for the shape, PATH_INVALID for a path (`..`, a DEST that is relative, `/`,
 * or in /proc, /sys, /dev or /.sbx). Touches no file. */
int sbx_hostmount_parse (const char *spec, const char *cwd, sbx_hostmount *ret, sbx_error **err);
/* "HOST:DEST:ro" or "HOST:DEST:rw": what the record keeps. */
char *sbx_hostmount_format (const sbx_hostmount *m);
/* Every entry of LIST parses without a CWD, at most SBX_MOUNTS_MAX, no DEST
 * twice. */
int sbx_hostmounts_validate (char *const *list, sbx_error **err);

/* The policy, on PATH (a source's real path, normal) alone: POLICY_REFUSED
 * with the reason for `/`; /proc, /sys, /dev, /boot, /etc, /root and what is
 * below them; /run, /var/run, /var/lib themselves; the state directories of
 * sbx (ROOT and RUN, the store's real paths, and the default ones) and of
 * container engines, with what is below and above them; CONF's mount_deny
 * (at or below); and, when CONF has a mount_allow, what is not at or below
 * one of its paths. CONF may be NULL (the defaults). */
int sbx_hostmount_policy (const char *path, const sbx_conf *conf, const char *root, const char *run, sbx_error **err);

/* Opens PATH (normal, absolute) one component at a time from `/`, each
 * with O_PATH | O_NOFOLLOW: a symbolic link anywhere is POLICY_REFUSED
 * naming it, a missing component NOT_FOUND, a non-directory PATH_INVALID. */
int sbx_hostmount_open (const char *path, int *ret_fd, sbx_error **err);

/* Everything checked of FD (from sbx_hostmount_open): the policy on
 * its real path; the same refused directories recognised by inode, among FD
 * and its parents (a bind mount of /etc elsewhere is /etc); and no entry
 * named like a container engine's socket in it (docker, containerd,
 * podman, cri-o, buildkit; a socket, file or symlink, not a directory) at
 * their known places or within SBX_HOSTMOUNT_SCAN_DEPTH levels (the first
 * SBX_HOSTMOUNT_SCAN_ENTRIES entries). ST NULL: no store of its own. */
int sbx_hostmount_check (int fd, const sbx_conf *conf, const sbx_store *st, sbx_error **err);

/* Opens and checks every entry of LIST (the record's form), then closes:
 * create's check before anything is made. */
int sbx_hostmounts_check (char *const *list, const sbx_conf *conf, const sbx_store *st, sbx_error **err);

/* In the caller's (the monitor's private) mount namespace: each entry of
 * LIST opened and checked, and its fd bound (not recursively; nosuid,
 * nodev, and read-only unless rw) on DIR/mounts/N, N from 0. The binds for
 * the spec in *RET (sources under DIR; free with sbx_spec_binds_free). On
 * an error what was bound is unbound. */
int sbx_hostmounts_bind (char *const *list, const sbx_conf *conf, const sbx_store *st, const char *dir,
                         sbx_spec_bind **ret, size_t *ret_n, sbx_error **err);
/* Unmounts and removes DIR/mounts/0..N-1 and DIR/mounts. Returns -1 when
 * one of them could not be removed (a mount is still there): the caller
 * must then not remove DIR recursively. */
int sbx_hostmounts_unbind (const char *dir, size_t n);

#endif
