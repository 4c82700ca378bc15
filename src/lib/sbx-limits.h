/* Limits shared by the commands, the library and what the store keeps:
 * each named once here. The bounds on a sandbox's options are checked by
 * the commands' parsers (with the option's name in the message) and again
 * by validate_opts (lifecycle.c) for every sandbox made, so that options
 * read back from the store (a snapshot's, on restore) meet them too. */
#ifndef SBX_LIMITS_H
#define SBX_LIMITS_H

/* --cpu: 0 (no limit) or cores in this range. */
#define SBX_CPU_MIN 0.01
#define SBX_CPU_MAX 1024
/* --memory: 0 (no limit) or bytes in this range. */
#define SBX_MEMORY_MIN (6ULL << 20)
#define SBX_MEMORY_MAX (1ULL << 42)
/* --disk, sbx.conf's disk: 0 (no limit) or bytes in this range. */
#define SBX_DISK_MIN (16ULL << 20)
#define SBX_DISK_MAX (64ULL << 40)
/* --pids: in this range (0 in the options: SBX_PIDS_DEFAULT). */
#define SBX_PIDS_MIN 8
#define SBX_PIDS_MAX (1 << 22)
/* --timeout, --keep-warm: seconds. */
#define SBX_TIMEOUT_MAX 86400
/* sbx run returns once its command's status is known and its sandbox's
 * monitor tears it down afterwards: a run waits before it starts while
 * this many of the store's sandboxes are still tearing down. */
#define SBX_TEARDOWNS_MAX 4
/* --port: how many ports a sandbox exposes at create. */
#define SBX_PORTS_MAX 64
/* --volume: how many volumes a sandbox mounts. */
#define SBX_VOLUMES_MAX 32
/* --mount: how many host directories a sandbox binds. */
#define SBX_MOUNTS_MAX 32
/* --copy-in: how many trees one sandbox takes. */
#define SBX_COPY_IN_MAX 16

/* A snapshot's metadata (snapshot.json): read no further. */
#define SBX_SNAPSHOT_JSON_MAX (1 << 20)
/* sbx restore --count. */
#define SBX_RESTORE_COUNT_MAX 64

#endif
