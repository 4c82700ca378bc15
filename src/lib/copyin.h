/* --copy-in HOSTDIR[:/DEST]: a host directory's tree copied into a
 * sandbox's root at creation, before its first command (the monitor calls
 * sbx_copyin once the root is mounted and before the runtime starts). */
#ifndef SBX_COPYIN_H
#define SBX_COPYIN_H

#include "error.h"

#include <stdint.h>

/* Where a tree goes when the option names no destination. */
#define SBX_COPYIN_DEST_DEFAULT "/workspace"
/* The deepest tree copied (two fds per level are open at once). */
#define SBX_COPYIN_DEPTH_MAX 1024

typedef struct sbx_copyin_stats {
  uint64_t files, dirs, links, bytes;
  uint64_t skipped; /* device nodes, fifos, sockets: never copied */
  uint64_t ignored; /* entries .sbxignore left out (a directory counts once) */
} sbx_copyin_stats;

/* SPEC split into its host directory and its destination (DEST default
 * /workspace), each checked without touching the host: HOSTDIR absolute
 * (the CLI made it so), DEST absolute with no `..`. A HOSTDIR with a `:` in
 * it needs an explicit :/DEST. INVALID_ARGUMENT otherwise. */
int sbx_copyin_parse (const char *spec, char **ret_host, char **ret_dest, sbx_error **err);

/* SPEC with its host directory made absolute against CWD (`.` is CWD);
 * the rest as it is. */
char *sbx_copyin_absolute (const char *spec, const char *cwd);

/* SPEC parsed, and its host directory there and a directory: NOT_FOUND,
 * INVALID_ARGUMENT (not a directory), PERMISSION_DENIED. */
int sbx_copyin_check (const char *spec, sbx_error **err);

/* Copies SPEC's tree into the root ROOT (an fd of its top directory; every
 * path below it resolved with RESOLVE_IN_ROOT, nothing planted in the
 * image followed out of it). Regular files with their mode (setuid and
 * setgid cleared) and mtime, directories, symlinks as links; the host
 * walk never follows a symlink (O_NOFOLLOW fds) below HOSTDIR. Device
 * nodes, fifos and sockets are skipped and counted. What .sbxignore at the
 * top of HOSTDIR matches is left out. Everything is owned by root inside.
 * A full disk is RESOURCE_EXHAUSTED. *STATS is filled as it goes. */
int sbx_copyin (int root, const char *spec, sbx_copyin_stats *stats, sbx_error **err);

#endif
