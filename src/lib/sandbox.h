/* A sandbox's record: its create options (fixed at create) and its state
 * (written by its monitor), in ROOT/sandboxes/ID/state.json, atomically.
 * Liveness is not guessed from pids: the monitor holds an exclusive flock on
 * ROOT/sandboxes/ID/lock for its whole life, so a lock anyone else can take
 * means the monitor is gone. */
#ifndef SBX_SANDBOX_H
#define SBX_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "sbx-limits.h"
#include "store.h"

typedef enum sbx_state {
  SBX_STATE_CREATING,
  SBX_STATE_RUNNING,
  SBX_STATE_TERMINATING,
  SBX_STATE_TERMINATED,
  SBX_STATE_FAILED,
  SBX_STATE__MAX
} sbx_state;

#define SBX_REASON_EXIT "exit"
#define SBX_REASON_KEEP_WARM "keep-warm expired"
#define SBX_REASON_TIMEOUT "timeout"
#define SBX_REASON_KILLED "killed"
#define SBX_REASON_EXITED "exited" /* sbx run's command, or create's with --exit-with-cmd, exited (exit_code) */
#define SBX_REASON_MONITOR_LOST "monitor lost"
#define SBX_REASON_ERROR "error"

#define SBX_KEEP_WARM_DEFAULT 600
#define SBX_TIMEOUT_DEFAULT 3600
#define SBX_PIDS_DEFAULT 1024
/* --priority: 0-9, this when not given (issue 21). */
#define SBX_PRIORITY_DEFAULT 5

typedef struct sbx_sandbox_opts {
  char *name;
  char *image_ref;
  char *runtime;        /* "runsc" or "runc" */
  bool runtime_default; /* not named at create (not saved): sbx.conf's gpu_runtime may set it */
  double cpu;           /* cores, 0 = unlimited */
  uint64_t memory;      /* bytes, 0 = unlimited */
  /* The value is sbx.conf's default_cpu / default_memory: not given at
   * create. Set on the way in, it asks create for the default. */
  bool cpu_default, memory_default;
  int64_t pids;
  int64_t disk; /* bytes of writable layer (disk.h), 0 = unlimited; -1 at create: sbx.conf's default */
  bool block_network;
  char **allow;       /* --allow CIDRs at create (empty: the internet) */
  char **ports;       /* --port N, exposed at create */
  bool public_ports;  /* --public: exposed ports need no token */
  int64_t keep_warm;  /* seconds, -1 = until terminated */
  bool on_idle_pause; /* keep-warm expiry pauses rather than terminates */
  int64_t timeout;    /* seconds */
  char **env;
  char *cwd;
  /* Data in and out (issue 20); each list as the user gave it, checked by
   * sbx_sandbox_opts_validate; NULL is the same as empty. */
  char **volumes;      /* --volume NAME:/path[:ro] */
  char **mounts;       /* --mount /host/dir:/path[:ro|:rw] (the host path absolute) */
  char **secrets;      /* --secret NAME[=VAR]: as an environment variable of every command */
  char **secret_files; /* --secret-file NAME: as /run/secrets/NAME */
  bool allow_secrets;  /* --allow-secrets */
  char **copy_in;      /* --copy-in HOSTDIR[:/dest] (HOSTDIR made absolute by the CLI) */
  char **cmd;          /* the initial command (create -- CMD, or the image's with --run-cmd) */
  bool exit_with_cmd;  /* --exit-with-cmd: the sandbox ends when the initial command does */
  /* Egress by domain name (issue 22): --allow-domain NAME (NAME or *.NAME). */
  char **allow_domains;
  /* GPUs, Docker inside and the operator's policy (issue 21). */
  char *gpus;       /* --gpu all|N|INDEX[,INDEX]|UUID|TYPE[:N] as given; NULL: none */
  bool docker;      /* --docker: dockerd started inside at creation */
  char *namespace;  /* --namespace NAME; NULL is "default" */
  int64_t priority; /* --priority 0-9 (SBX_PRIORITY_DEFAULT when not given) */
  /* Warm pools (issue 23): the pool this sandbox was made for or claimed
   * from, as the user named it; NULL: none. */
  char *pool;
} sbx_sandbox_opts;

typedef struct sbx_sandbox {
  char *id;
  sbx_sandbox_opts opts;
  char *image_id;
  char **layers; /* resolved at create, bottom first */
  char **image_env;
  char *image_workdir;
  sbx_state state;
  char *reason;
  char *error;        /* message when failed */
  bool has_exit_code; /* reason exited: the exit status of sbx run's command (or the initial one's) */
  int64_t exit_code;
  int64_t created_at, started_at, ended_at;
  int64_t created_ns;      /* the creation time in ns, which orders sandboxes made in one second */
  int64_t deadline;        /* unix time of the hard timeout */
  int64_t keep_warm_until; /* informational, written on activity */
  pid_t monitor_pid;
  bool paused; /* running, frozen by sbx pause (or --on-idle pause) */
  /* A warm pool's member not yet claimed (pool.h): no lifetime runs, its
   * network is cut, sbx ls shows it only with --all. */
  bool parked;
  char *restore_from; /* a snapshot's checkpoint directory: started by restore, not run */
  int64_t chan_base;  /* the first exec channel (a restored agent's own go on below it) */
  int64_t cmd_pid;    /* the initial command's pid inside the sandbox (opts.cmd), 0: none */
  int64_t oom_kills;
  int64_t pids_limit_hits;
  int64_t memory_peak;
  /* Its network as it is now (the monitor's): */
  char *net_mode;     /* "none" (--block-network), "open", "allow", "block" */
  char **net_allow;   /* the allow-list in force in "allow" mode */
  char **net_domains; /* the domain rules in force (normalized); NULL: none */
  /* Not saved: the addresses allowed through them now, filled by whoever
   * reads them (sbx status); each "ADDRESS NAME MILLISECONDS-LEFT". */
  char **net_domain_addrs;
  char *net_stack; /* how the runtime reaches it (sbx info's words) */
  char *net_addr4, *net_addr6, *net_gateway4, *net_gateway6;
  char **urls;              /* "PORT URL" of each exposed port */
  int64_t net_private_seen; /* connections to private ranges counted in observe mode */
  int64_t disk_used;        /* not saved: filled by whoever reads it (sbx_disk_used), -1 = not known */
  /* The GPUs it got at create (gpu.h's sbx_gpu_got); gpu_mode NULL: none. */
  char *gpu_mode;
  char **gpu_list;
  char **gpu_env;
  /* runc: the host id range uid and gid 0..userns_size-1 inside map to
   * (userns.h), leased by the monitor; 0: no user namespace (runsc, or not
   * running yet). userns_off: why a runc sandbox has none (runc_userns =
   * optional on a host that cannot), NULL otherwise. */
  int64_t userns_base, userns_size;
  char *userns_off;
} sbx_sandbox;

const char *sbx_state_name (sbx_state s);
bool sbx_state_is_final (sbx_state s);

void sbx_sandbox_free (sbx_sandbox *sb);
static inline void
sbx_sandbox_freep (sbx_sandbox **s)
{
  sbx_sandbox_free (*s);
}
#define _cleanup_sandbox_ __attribute__ ((cleanup (sbx_sandbox_freep)))
void sbx_sandbox_opts_clear (sbx_sandbox_opts *o);
/* The create options as one JSON object, the "options" of state.json and
 * of snapshot.json; and back: a key that is missing leaves its field as it
 * was (the caller's default), a mistyped one is INVALID_ARGUMENT. G is a
 * yajl_gen, OBJ a yajl_val. */
void sbx_sandbox_opts_gen (void *yajl_gen_g, const sbx_sandbox_opts *o);
int sbx_sandbox_opts_parse (const void *yajl_val_obj, sbx_sandbox_opts *o, sbx_error **err);

char *sbx_sandbox_dir (const sbx_store *st, const char *id);
char *sbx_sandbox_run_dir (const sbx_store *st, const char *id);

int sbx_sandbox_save (const sbx_store *st, const sbx_sandbox *sb, sbx_error **err);
int sbx_sandbox_load (const sbx_store *st, const char *id, sbx_sandbox **ret, sbx_error **err);
/* The record with liveness applied: a non-final state whose monitor is gone
 * reads as failed (monitor lost). */
int sbx_sandbox_get (const sbx_store *st, const char *id, sbx_sandbox **ret, sbx_error **err);
/* Resolves an id or a name to an id. */
int sbx_sandbox_resolve (const sbx_store *st, const char *ref, char **ret_id, sbx_error **err);
int sbx_sandbox_list (const sbx_store *st, char ***ret_ids, sbx_error **err);
/* true when the monitor of ID holds its lock. */
bool sbx_sandbox_monitor_alive (const sbx_store *st, const char *id);
/* The upper and work directories, relative to ROOT: in the sandbox's disk
 * image (mounted by sbx_sandbox_mount_root) when it has a disk limit. */
char *sbx_sandbox_upper_rel (const sbx_sandbox *sb);
/* Mounts the sandbox's overlay root (its image's layers under sbx's top
 * layer, its upper dir) on ROOT/sandboxes/ID/rootfs, its disk image first
 * when it has one (the image's lock then stays open for the life of the
 * process, as the mount). The caller is in a
 * private mount namespace of its own; the working directory becomes ROOT.
 * READONLY: a read-only view (no upper or work dir in use). */
int sbx_sandbox_mount_root (const sbx_store *st, const sbx_sandbox *sb, bool readonly, sbx_error **err);
/* Whether SB's pids_limit_hits counts the forks its pids limit refused.
 * Under runsc it cannot: gVisor refuses them inside (its RLIMIT_NPROC,
 * spec.c) and the host's pids cgroup, a backstop well above, sees nothing;
 * only a hit of that backstop is counted there. The JSON view shows null
 * for a count that is not known. */
bool sbx_sandbox_pids_hits_known (const sbx_sandbox *sb);
/* The same with the disk's loop device bound ahead (disk.h), or NULL. */
struct sbx_disk_att;
int sbx_sandbox_mount_root_att (const sbx_store *st, const sbx_sandbox *sb, bool readonly, struct sbx_disk_att *pre,
                                sbx_error **err);
/* The JSON view used by status/ls --json. */
void sbx_sandbox_gen (void *yajl_gen_g, const sbx_sandbox *sb);

/* Folds the counters of the sandbox's cgroup into SB, keeping the highest
 * (the runtime's cgroup and its counters can vanish before sbx's). Returns
 * whether an event counter (oom kills, pid limit hits) went up. */
struct sbx_cgroup_stats;
bool sbx_sandbox_merge_stats (sbx_sandbox *sb, const struct sbx_cgroup_stats *cs);

/* Reserves NAME for ID (atomic, fails BUSY if taken). */
int sbx_name_reserve (const sbx_store *st, const char *name, const char *id, sbx_error **err);
void sbx_name_release (const sbx_store *st, const char *name, const char *id);

char *sbx_sandbox_new_id (void);

#endif
