/* What the monitor's files share (monitor.c and monitor-*.c): its limits,
 * its state (struct mon), its clients and processes, and the functions one
 * file calls in another. Nothing outside the monitor includes this. */
#ifndef SBX_MONITOR_INTERNAL_H
#define SBX_MONITOR_INTERNAL_H

#include "monitor.h"
#include "disk.h"
#include "net.h"
#include "proxy.h"
#include "resolver.h"
#include "cgroup.h"
#include "cgroup-watch.h"
#include "conf.h"
#include "image.h"
#include "lifecycle.h"
#include "json.h"
#include "proto.h"
#include "proto-ops.h"
#include "ring.h"
#include "sblog.h"
#include "runtime.h"
#include "spec.h"
#include "util.h"

#include <stdbool.h>
#include <stdint.h>
#include <poll.h>
#include <sys/types.h>

#define HELLO_TIMEOUT_MS 60000
#define SHUTDOWN_GRACE_MS 2000
#define MAX_CLIENTS 1024
#define AGENT_OUT_MAX (4u << 20)
#define REQUEST_MAX 65536
/* Background processes: the newest output kept of each, and how many ended
 * processes are remembered (with their output) once they are gone. All of
 * a sandbox's logs share PROC_OUTPUT_BUDGET bytes of buffers (proc_log_push),
 * so that the monitor's memory stays bounded however many processes print. */
#define PROC_LOG_CAP (1u << 20)
#define PROC_OUTPUT_BUDGET (16u << 20)
#define PROCS_ENDED_MAX 64
#define PROC_CMD_MAX 1024
/* A follower is fed from the log while its socket buffer has room. */
#define FOLLOW_QUEUE_MAX (256u * 1024)
/* Poll slots for the resolver's and the port proxy's sockets. */
#define RESOLVER_FDS_MAX SBX_RESOLVER_POLLFDS_MAX
#define PROXY_FDS_MAX SBX_PROXY_POLLFDS_MAX
#define EXPOSED_MAX 64
/* Relays (monitor-relay.c): how many at once, and the most read at a time. */
#define RELAYS_MAX 256
#define RELAY_READ_MAX (64u * 1024)

struct buf {
  unsigned char *data;
  size_t len, cap;
};

/* A process started through the exec API: the monitor's process table.
 * Attached ones stream to their caller; detached ones (exec -d) keep their
 * output here, in a bounded log that readers follow by offset. */
struct proc {
  uint32_t chan;
  uint32_t pid; /* inside the sandbox; 0 until it started */
  char *cmd;    /* argv joined, bounded */
  bool detached, tty, ended, timed_out;
  bool initial; /* create's initial command (sbx create -- CMD) */
  int32_t exit_code, signal;
  int64_t started_at, ended_at;
  uint64_t seq;          /* order of creation */
  uint64_t output_bytes; /* all it printed, kept or dropped */
  sbx_ring log;
};

enum watch { WATCH_NONE, WATCH_WAIT, WATCH_FOLLOW, WATCH_LOGS };

struct client {
  int fd;
  struct sbx_frame_reader rd;
  struct buf out;
  uint32_t chan;        /* the agent channel of its exec, 0 if none */
  size_t uncredited;    /* output bytes queued to it, not yet credited */
  int64_t stdin_window; /* stdin bytes the agent will still take */
  bool exec_done;
  bool closing; /* close once OUT is flushed */
  /* proc wait / proc logs: the process watched, the log offset reached. */
  enum watch watch;
  uint32_t watch_chan;
  uint64_t log_off;
  uint64_t wait_deadline; /* 0: none */
};

struct mon {
  const sbx_store *st;
  sbx_sandbox *sb;
  sbx_disk_att disk_pre; /* the disk's loop device, bound by a thread during setup */
  sbx_runtime *rt;
  char *dir, *run_dir, *cgroup;
  /* The monitor's own cgroup (cgroup.h), while it is in it, and where it
   * came from. */
  char *own_cgroup;
  char **own_cgroup_back;
  int agent_fd, listen_fd, sig_fd;
  sbx_log slog; /* the sandbox's log, bounded (sblog.h) */
  struct sbx_frame_reader ard;
  struct buf aout;
  struct client *clients[MAX_CLIENTS];
  size_t nclients;
  struct proc **procs;
  size_t nprocs;
  uint64_t proc_seq;
  uint32_t next_chan;
  uint32_t end_chan;              /* the exec whose end ends the sandbox (sbx run, --exit-with-cmd), 0: none */
  bool end_orphaned;              /* its caller went away and sbx killed it: the end is `killed` */
  bool remove_at_end;             /* sbx run --rm: the monitor removes the sandbox after its teardown */
  int ending_fd;                  /* its entry in RUN/ending while it tears down (sbx_teardown_begin) */
  unsigned long long host_mem_kb; /* the host's MemTotal, under runsc with a memory limit */
  int active_execs;
  uint64_t last_activity, deadline, shutdown_deadline;
  bool agent_gone, shutting_down;
  /* agent_read stopped at its budget: frames may wait in its buffer, which
   * no poll reports (the loop has no tick to find them later). */
  bool agent_more;
  pid_t runtime_pid; /* `RUNTIME run`, in the foreground for the sandbox's life */
  bool runtime_exited;
  int runtime_status;
  uint64_t agent_gone_at;
  int lock_fd;
  int root_fd;               /* O_PATH of the merged root, handed to `sbx fs` calls */
  struct sbx_cdi_edits *gpu; /* the GPUs' edits (gpu.h), NULL: none */
  const char *workdir;       /* a command's cwd when it names none (choose_workdir, monitor.c) */
  int cgroup_hold;           /* shared lock on the parent cgroup, until the runtime has made ours */
  int stderr_r, stderr_w;    /* the runtime's and the init's stderr: a pipe into the log */
  int agent_end;             /* the init's end of the agent's socketpair, until the runtime has it */
  int go_w, ready_r;         /* the runtime's process before its exec (runtime_fork) */
  /* The cgroup's limit events (cgroup-watch.h), which wake the loop to
   * read the counters; no tick. next_sample: when they are read again
   * without one (schedule_sample, monitor.c), RESAMPLES times more. */
  sbx_cgroup_watch cg_watch;
  uint64_t next_sample;
  int resamples;
  int64_t pids_peak, pids_host_limit;
  sbx_state end_state;
  const char *end_reason;
  /* The network (net.h); NULL under runsc --block-network, where gVisor
   * has no interface at all. */
  sbx_conf *conf;
  int userns_lease;  /* runc: the lease of the sandbox's host id range (userns.h), or -1 */
  int userns_fd;     /* and its user namespace, for idmapped mounts */
  bool userns_paths; /* the tmpfs on SBX_USERNS_PATHS is mounted */
  sbx_net *net;
  int host_netns; /* the monitor's own network namespace, to come back to */
  int block_nsfd; /* runc --block-network: the namespace runc made, once opened */
  sbx_resolver *resolver;
  /* Domain rules: until when (monotonic ms) each address was last put in
   * the domain sets for, so that an answer that would not extend it much
   * costs no nftables transaction (monitor-net.c). */
  struct dom_seen {
    sbx_cidr addr;
    uint64_t until;
  } * dom_seen;
  size_t ndom_seen;
  sbx_proxy *proxy;
  struct relay **relays;
  size_t nrelays;
  /* Host directories (--mount), bound under run_dir/mounts (hostmount.h),
   * as the spec binds them. */
  sbx_spec_bind *binds;
  size_t nbinds;
  /* The SECRET payloads (secret.h), from setup until the agent has them;
   * wiped when freed. */
  char *secrets;
  size_t secrets_len;
  /* Written to the agent's socket before its HELLO (mon_secrets_ahead):
   * 0 when not, 1 when written with a PING to wait for, 2 when written
   * with none, or the write's -errno. */
  int secrets_ahead;
};

/* One process as JSON: as `sbx ps` and `sbx proc` show it (PROC_VIEW), or
 * as a snapshot keeps it for a restored monitor (PROC_SAVED, read back by
 * mon_restore_procs). */
enum proc_form { PROC_VIEW, PROC_SAVED };

/* The sandbox's network, made in three steps so that the slow middle one
 * (namespace, veth, addresses, rules: a few milliseconds of netlink) runs
 * in a thread while the monitor mounts the root and writes the bundle:
 *
 *   mon_net_plan    what it gets (sbx.conf, the mode, the allow-list) and the
 *                   shared egress rules; refusals happen here
 *   mon_net_make    sbx_net_setup, in the thread (it touches nothing else)
 *   mon_net_finish  the record, the resolver on the gateway, resolv.conf
 *
 * Under runsc --block-network there is none: gVisor runs with no
 * interface at all. */
struct net_plan {
  bool make;
  int hold; /* sbx_net_hold's */
  sbx_egress_mode mode;
  sbx_cidr *allow;
  size_t nallow;
  bool domains; /* domain rules: their sets and rules too */
  /* mon_net_make's result */
  sbx_net *net;
  sbx_error *err;
};

struct net_make_job {
  const struct mon *m;
  struct net_plan *plan;
};

/* An exposed port's connection relayed through the agent (monitor-relay.c). */
struct relay;

/* monitor.c */
void mon_log (struct mon *m, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
void mon_buf_append (struct buf *b, const void *p, size_t n);
void mon_buf_frame (struct buf *b, uint16_t type, uint32_t chan, const void *payload, size_t len);
int mon_buf_flush (struct buf *b, int fd);
void mon_to_agent (struct mon *m, uint16_t type, uint32_t chan, const void *p, size_t n);
void mon_save_state (struct mon *m);
void mon_touch (struct mon *m);
int mon_set_paused (struct mon *m, bool pause, sbx_error **err);
void mon_begin_shutdown (struct mon *m, sbx_state final, const char *reason);
void mon_drain_stderr (struct mon *m);
void mon_reap_children (struct mon *m);
/* A command's cwd when it names none, from the options (again after a
 * claim sets --cwd). */
void mon_choose_workdir (struct mon *m);

/* An EXEC to send (mon_exec_start): ENV over the sandbox's, CWD NULL for
 * the sandbox's. */
struct mon_exec {
  char *const *argv;
  char **env;
  const char *cwd, *user;
  uint32_t flags; /* SBX_EXEC_F_* */
  int64_t timeout_ms;
  uint16_t rows, cols;
};

/* monitor-control.c */
int mon_exec_start (struct mon *m, const struct mon_exec *x, uint32_t *ret_chan, sbx_error **err);
/* The hard lifetime ends SECS from now (sbx ttl, sbx update --timeout). */
void mon_set_deadline (struct mon *m, int64_t secs);
void mon_client_send_frame (struct client *c, uint16_t type, const void *p, size_t n);
void mon_reply_json (struct client *c, const char *json);
void mon_reply_int (struct client *c, const char *key, long long v);
void mon_reply_bool (struct client *c, const char *key, bool v);
void mon_reply_error (struct client *c, sbx_code code, const char *msg);
struct client *mon_client_by_chan (struct mon *m, uint32_t chan);
void mon_client_free (struct mon *m, size_t i);
bool mon_client_may_send (const struct client *c);
int mon_client_read (struct mon *m, struct client *c);
void mon_accept_client (struct mon *m);
int mon_listen_control (struct mon *m, sbx_error **err);

/* monitor-proc.c */
struct proc *mon_proc_by_chan (struct mon *m, uint32_t chan);
/* monitor.c: reads the agent until CHAN's command started (or with ENDED,
 * ended), within TIMEOUT_MS; its ERROR (127: NOT_FOUND) is the error. */
int mon_wait_chan (struct mon *m, uint32_t chan, bool ended, const char *what, int timeout_ms, sbx_error **err);
/* monitor-docker.c: --docker's dockerd, started and answering, or the error. */
int mon_docker_start (struct mon *m, sbx_error **err);
void mon_proc_new (struct mon *m, uint32_t chan, char *const *argv, bool detached, bool tty);
struct proc *mon_proc_frame (struct mon *m, struct proc *p, const struct sbx_frame_hdr *h, const unsigned char *data);
void mon_procs_json (yajl_gen g, const struct mon *m, enum proc_form form);
void mon_handle_ps (struct mon *m, struct client *c, sbx_op op, yajl_val req);
void mon_handle_proc (struct mon *m, struct client *c, sbx_op op, yajl_val req);
void mon_serve_watch (struct mon *m, struct client *c);
/* Whether mon_serve_watch has more for C now (its log read on, or the end
 * to say): the loop then asks for POLLOUT, having no tick to come back. */
bool mon_watch_ready (struct mon *m, const struct client *c);
void mon_restore_procs (struct mon *m);

/* monitor-relay.c */
void mon_handle_expose (struct mon *m, struct client *c, sbx_op op, yajl_val req);
void mon_handle_unexpose (struct mon *m, struct client *c, sbx_op op, yajl_val req);
struct relay *mon_relay_by_chan (struct mon *m, uint32_t chan);
void mon_relay_frame (struct mon *m, struct relay *r, const struct sbx_frame_hdr *h, const unsigned char *p);
bool mon_relays_done (const struct mon *m);
size_t mon_relay_pollfds (struct mon *m, struct pollfd *pf);
void mon_relay_dispatch (struct mon *m, const struct pollfd *pf, size_t n);
int mon_expose_create_ports (struct mon *m, sbx_error **err);

/* monitor-net.c */
void mon_handle_net (struct mon *m, struct client *c, sbx_op op, yajl_val req);
int mon_net_plan (struct mon *m, struct net_plan *plan, sbx_error **err);
void *mon_net_make (void *arg);
int mon_net_finish (struct mon *m, sbx_error **err);

/* monitor-runtime.c */
int mon_private_mount_ns (sbx_error **err);
int mon_mount_root (struct mon *m, sbx_error **err);
/* The sandbox's volumes, each mounted at RUN/sandboxes/ID/volumes/I in the
 * monitor's namespace, appended to M's extra bind mounts (m->binds). */
int mon_mount_volumes (struct mon *m, sbx_error **err);
/* monitor-userns.c */
bool mon_userns_wanted (const struct mon *m);
int mon_userns_begin (struct mon *m, sbx_error **err);
int mon_userns_binds (struct mon *m, sbx_error **err);
int mon_userns_paths (struct mon *m, char **rootfs, char **resolv, char **sysfs, sbx_error **err);
void mon_userns_end (struct mon *m);
/* Unmounts them (teardown), before RUN/sandboxes/ID goes; -1 if one stays. */
int mon_umount_volumes (struct mon *m);
void *mon_disk_attach (void *arg);
bool mon_runtime_detached (const struct mon *m);
int mon_runtime_go (struct mon *m, sbx_error **err);
int mon_wait_hello (struct mon *m, sbx_error **err);
/* The sandbox's secrets: read from the store at setup, written to the
 * agent's socket as soon as the runtime is on its way when they fit its
 * buffer (mon_secrets_ahead), otherwise after its HELLO; mon_secrets_send
 * sends what is left and waits for the agent to have them
 * (monitor-runtime.c). */
int mon_secrets_load (struct mon *m, sbx_error **err);
void mon_secrets_ahead (struct mon *m);
int mon_secrets_send (struct mon *m, sbx_error **err);
void mon_secrets_forget (struct mon *m);
int mon_prepare_runtime (struct mon *m, sbx_error **err);
/* Under runsc: the meminfo file shown to runsc (show_runsc_memory) says
 * LIMIT from now on, where create made one. */
int mon_runsc_meminfo_update (struct mon *m, uint64_t limit, sbx_error **err);

/* monitor-update.c: what an update asks for (a field whose has_* is
 * false keeps its value), read from a request's fields; checked before
 * anything changes; then the cgroup's limits (undone when a later write
 * fails) and the timers. */
struct mon_update {
  bool has_cpu, has_memory, has_pids, has_keep_warm, has_timeout, has_priority;
  double cpu;
  uint64_t memory;
  int64_t pids, keep_warm, timeout, priority;
  int64_t old_priority; /* to put back if a limit then fails */
};
int mon_update_parse (yajl_val req, struct mon_update *u, sbx_error **err);
int mon_update_check (struct mon *m, const struct mon_update *u, sbx_error **err);
int mon_update_limits (struct mon *m, const struct mon_update *u, sbx_error **err);
void mon_update_lifetimes (struct mon *m, const struct mon_update *u);
void mon_handle_update (struct mon *m, struct client *c, sbx_op op, yajl_val req);

/* monitor-net.c: the egress rules replaced (sbx net, a pool's claim):
 * MODE block, open or allow with ALLOW CIDRs and DOMAINS rules. */
int mon_net_set (struct mon *m, const char *mode, char *const *allow, char *const *domains, sbx_error **err);

/* monitor-pool.c */
void mon_handle_claim (struct mon *m, struct client *c, sbx_op op, yajl_val req);

#endif
