/* Starting the runtime: the monitor's mount namespace, the root, the
 * runtime's process held before its exec, the agent's hello, and what
 * runsc is shown of the sandbox's memory. */
#include "config.h"
#include "monitor-internal.h"
#include "netns.h"
#include "gpu.h"
#include "priority.h"
#include "volume.h"
#include "secret.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

/* --- setup ------------------------------------------------------------- */

/* The monitor's own mount namespace, where the sandbox's root is mounted
 * and the runtime runs: nothing of it shows on the host. The other
 * sandboxes' network namespaces (one bind mount each under
 * sbx_netns_dir) are dropped from it at once: every namespace the runtime
 * makes from this one would copy them, a cost that grows with the number
 * of sandboxes. Nothing here uses them by path (the runtime gets the
 * monitor's fd), and the unlink at teardown still detaches the host's. */
int
mon_private_mount_ns (sbx_error **err)
{
  if (unshare (CLONE_NEWNS) < 0)
    return sbx_error_errno (err, errno, "unshare mount namespace");
  if (mount (NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return sbx_error_errno (err, errno, "make / private");
  if (umount2 (sbx_netns_dir (), MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
    return sbx_error_errno (err, errno, "unmount %s", sbx_netns_dir ());
  return 0;
}

int
mon_mount_root (struct mon *m, sbx_error **err)
{
  _cleanup_free_ char *top = NULL;
  if (sbx_store_top_layer (m->st, sbx_init_path (), &top, err) < 0)
    return -1;
  return sbx_sandbox_mount_root_att (m->st, m->sb, false, &m->disk_pre, err);
}

/* The runtime's process, forked into this namespace already, sees them:
 * runc binds them, runsc's gofer serves them (shared file access). */
int
mon_mount_volumes (struct mon *m, sbx_error **err)
{
  char **specs = m->sb->opts.volumes;
  size_t n = specs ? strv_len (specs) : 0;
  if (n == 0)
    return 0;
  _cleanup_free_ char *dir = xasprintf ("%s/volumes", m->run_dir);
  if (mkdir (dir, 0700) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", dir);
  /* After the host directories in the same list (monitor.c), which owns
   * it and frees it at teardown. */
  m->binds = xrealloc (m->binds, (m->nbinds + n) * sizeof *m->binds);
  for (size_t i = 0; i < n; i++)
    {
      sbx_volume_spec v = { NULL };
      _cleanup_free_ char *mnt = xasprintf ("%s/%zu", dir, i);
      if (sbx_volume_spec_parse (specs[i], &v, err) < 0 || sbx_volume_mount (m->st, &v, mnt, err) < 0)
        {
          sbx_volume_spec_clear (&v);
          return sbx_error_wrap (err, "--volume %s", specs[i]);
        }
      m->binds[m->nbinds++] = (sbx_spec_bind){ .source = steal_pointer (&mnt),
                                               .destination = steal_pointer (&v.dest),
                                               .readonly = v.readonly };
      sbx_volume_spec_clear (&v);
    }
  mon_log (m, "%zu volume%s mounted", n, n > 1 ? "s" : "");
  return 0;
}

/* 0 when every volume's mount is gone (or was never made). */
int
mon_umount_volumes (struct mon *m)
{
  size_t n = m->sb->opts.volumes ? strv_len (m->sb->opts.volumes) : 0;
  int ret = 0;
  for (size_t i = 0; i < n; i++)
    {
      _cleanup_free_ char *mnt = xasprintf ("%s/volumes/%zu", m->run_dir, i);
      if (umount2 (mnt, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
        ret = -1;
    }
  return ret;
}

/* Binding the disk's loop device waits for an RCU grace period of the
 * block layer (4-30 ms here): a thread does it while setup goes on. */
void *
mon_disk_attach (void *arg)
{
  struct mon *m = arg;
  sbx_disk_attach (m->st, m->sb->id, false, &m->disk_pre);
  return NULL;
}

/* runc runs detached: its stdio (the agent's socket) passes straight to the
 * container's init, which then becomes our child (we are a subreaper), and
 * no runc process stays around. In the foreground runc would copy every
 * byte of the agent's traffic through pipes of its own. */
bool
mon_runtime_detached (const struct mon *m)
{
  return strcmp (m->rt->name, "runc") == 0;
}

static int runtime_failed (struct mon *m, sbx_error **err);

/* The runtime's process is forked early, before the root is mounted and
 * the bundle written, and waits for mon_runtime_go to exec the runtime. Where
 * sbx places the runtime in the sandbox's cgroup itself (own_cgroups) it
 * joins it meanwhile, as a single thread (sbx_cgroup_join_files): runsc's
 * own cgroup handling moves the many threads of `runsc run` in and out
 * again, each time waiting for an RCU grace period of the kernel's (7-30
 * ms here) on the way to the sandbox's start.
 *
 * The network thread (setup) may be running at the fork, holding a lock of
 * libc's: the child makes only async-signal-safe calls until its exec. */
static int
runtime_fork (struct mon *m, sbx_error **err)
{
  _cleanup_free_ char *bundle = xasprintf ("%s/bundle", m->dir);
  _cleanup_free_ char *pidfile = xasprintf ("%s/container.pid", m->run_dir);
  const char *fg[] = { "--bundle", bundle, m->sb->id, NULL };
  const char *bg[] = { "--detach", "--pid-file", pidfile, "--bundle", bundle, m->sb->id, NULL };
  /* From a snapshot: runsc restores its checkpoint in the foreground as it
   * would run it; the agent's stdio becomes our socket again. */
  const char *rs[] = { "--image-path", m->sb->restore_from, "--bundle", bundle, m->sb->id, NULL };
  _cleanup_strv_ char **argv = m->sb->restore_from
                                   ? sbx_runtime_argv (m->rt, "restore", rs)
                                   : sbx_runtime_argv (m->rt, "run", mon_runtime_detached (m) ? bg : fg);
  _cleanup_strv_ char **join = m->rt->own_cgroups ? sbx_cgroup_join_files (m->cgroup) : NULL;
  _cleanup_pipe_ int go[2] = SBX_PIPE_INIT, ready[2] = SBX_PIPE_INIT;
  if (pipe2 (go, O_CLOEXEC) < 0 || pipe2 (ready, O_CLOEXEC) < 0)
    return sbx_error_errno (err, errno, "pipe");
  int oom_adj = sbx_priority_oom_score_adj (m->sb->opts.priority);
  pid_t parent = getpid ();
  pid_t pid = fork ();
  if (pid == 0)
    {
      close (go[1]);
      close (ready[0]);
      prctl (PR_SET_PDEATHSIG, SIGKILL);
      if (getppid () != parent)
        _exit (127);
      sigset_t none;
      sigemptyset (&none);
      sigprocmask (SIG_SETMASK, &none, NULL);
      /* Inherited by runsc's sandbox and gofer (runc's container gets
       * the spec's process.oomScoreAdj, the same value). */
      int32_t e = join ? -sbx_cgroup_join (join) : 0;
      if (e == 0)
        e = -sbx_priority_oom_self (oom_adj);
      char c;
      if (write (ready[1], &e, sizeof e) != (ssize_t) sizeof e || e != 0 || read (go[0], &c, 1) != 1)
        _exit (127);
      if (dup2 (m->agent_end, 0) < 0 || dup2 (m->agent_end, 1) < 0 || dup2 (m->stderr_w, 2) < 0)
        _exit (127);
      close_fds_except (NULL, 0);
      execv (argv[0], argv);
      _exit (127);
    }
  if (pid < 0)
    return sbx_error_errno (err, errno, "fork");
  close (steal_fd (&go[0]));
  close (steal_fd (&ready[1]));
  m->go_w = steal_fd (&go[1]);
  m->ready_r = steal_fd (&ready[0]);
  m->runtime_pid = pid;
  return 0;
}

/* Starts the container with sbx-init as its init, stdin and stdout the
 * agent's socket, stderr the sandbox log: the process runtime_fork made
 * execs the runtime. runsc runs in the foreground for the sandbox's life:
 * it waits for the container and deletes it when its init exits, all in
 * one process, where a separate `delete` would cost a second start of the
 * runtime. Either way m->runtime_pid is the process whose exit means the
 * container is over. */
int
mon_runtime_go (struct mon *m, sbx_error **err)
{
  int32_t e = 0;
  ssize_t n = read_all (m->ready_r, &e, sizeof e);
  close (m->ready_r);
  m->ready_r = -1;
  if (n != (ssize_t) sizeof e)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "the runtime's process exited before its start");
  if (e != 0)
    return sbx_error_errno (err, e, "move the runtime into the sandbox's cgroup %s (or set its oom_score_adj)",
                            m->cgroup);
  if (write (m->go_w, "g", 1) != 1)
    return sbx_error_errno (err, errno, "start %s", m->rt->name);
  close (m->go_w);
  m->go_w = -1;
  if (!mon_runtime_detached (m))
    return 0;
  int status;
  while (waitpid (m->runtime_pid, &status, 0) < 0)
    if (errno != EINTR)
      return sbx_error_errno (err, errno, "wait for %s", m->rt->name);
  m->runtime_pid = 0;
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
    {
      m->runtime_status = status;
      m->runtime_exited = true;
      return runtime_failed (m, err);
    }
  _cleanup_free_ char *pidfile = xasprintf ("%s/container.pid", m->run_dir);
  _cleanup_free_ char *text = NULL;
  int64_t cpid = 0;
  if (read_file (pidfile, 64, &text, NULL, err) < 0)
    return -1;
  text[strcspn (text, "\n")] = '\0';
  if (parse_int64 (text, 2, INT32_MAX, &cpid) < 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s wrote a bad pid file", m->rt->name);
  m->runtime_pid = (pid_t) cpid;
  mon_reap_children (m); /* it may have exited already */
  return 0;
}

/* The runtime exited before the sandbox's init said hello. */
static int
runtime_failed (struct mon *m, sbx_error **err)
{
  int st = m->runtime_status;
  int code = WIFEXITED (st) ? WEXITSTATUS (st) : 128 + WTERMSIG (st);
  if (sbx_runtime_probe (m->rt, err) < 0)
    return -1;
  return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s run failed (status %d)", m->rt->name, code);
}

/* Reads the agent's frames until its HELLO (WANT_HELLO) or the PONG of a
 * PING sent before, during setup, before the control loop runs. */
static int
agent_wait (struct mon *m, bool want_hello, sbx_error **err)
{
  uint64_t until = now_ms_monotonic () + HELLO_TIMEOUT_MS;
  for (;;)
    {
      struct sbx_frame_hdr h;
      const unsigned char *p;
      int r = sbx_frame_read (m->agent_fd, &m->ard, &h, &p);
      if (r == -EPROTO)
        return sbx_error_set (err, SBX_E_INTERNAL, 0,
                              "the sandbox's init sent a frame sbx cannot read: an sbx-init of another version? "
                              "(install sbx and sbx-init together)");
      if (r < 0)
        {
          /* Let the runtime finish so that its status tells what failed. */
          for (int i = 0; i < 500 && !m->runtime_exited; i++)
            {
              usleep (10000);
              mon_reap_children (m);
            }
          if (m->runtime_exited)
            return runtime_failed (m, err);
          return sbx_error_set (err, SBX_E_INTERNAL, r == -EPIPE ? 0 : -r, "the sandbox's init exited during start");
        }
      if (r == 1 && h.type == SBX_MSG_HELLO && want_hello)
        {
          uint32_t hello[3];
          memcpy (hello, p, sizeof hello);
          if (hello[0] != SBX_PROTO_VERSION)
            return sbx_error_set (err, SBX_E_INTERNAL, 0,
                                  "the sandbox's init speaks protocol %u, sbx %u: install them together", hello[0],
                                  SBX_PROTO_VERSION);
          if (!(hello[2] & SBX_HELLO_SECCOMP))
            return sbx_error_set (err, SBX_E_INTERNAL, 0, "the sandbox's init did not load the seccomp profile");
          return 0;
        }
      if (r == 1 && h.type == SBX_MSG_LOG)
        {
          sbx_log_line (&m->slog, SBX_LOG_SANDBOX, (const char *) p, h.len);
          continue;
        }
      if (r == 1 && !want_hello)
        {
          if (h.type == SBX_MSG_PONG)
            return 0;
          /* Output of the processes it restored: nobody reads it here. */
          if ((h.type == SBX_MSG_STDOUT || h.type == SBX_MSG_STDERR) && h.chan != 0)
            {
              uint32_t n = h.len;
              sbx_frame_write (m->agent_fd, SBX_MSG_CREDIT, h.chan, &n, sizeof n);
            }
          continue;
        }
      if (r == 1)
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "the sandbox's init sent frame %u before HELLO", h.type);
      uint64_t now = now_ms_monotonic ();
      if (now >= until)
        return sbx_error_set (err, SBX_E_TIMEOUT, 0, "the sandbox's init did not answer within %d s",
                              HELLO_TIMEOUT_MS / 1000);
      struct pollfd pf = { m->agent_fd, POLLIN, 0 };
      poll (&pf, 1, (int) (until - now) > 50 ? 50 : (int) (until - now));
      mon_drain_stderr (m);
      mon_reap_children (m);
      if (m->runtime_exited && !(pf.revents & POLLIN))
        return runtime_failed (m, err);
    }
}

int
mon_wait_hello (struct mon *m, sbx_error **err)
{
  /* A restored agent said hello long ago: it answers a PING instead. */
  static const char probe[] = "sbx-restore";
  if (m->sb->restore_from && sbx_frame_write (m->agent_fd, SBX_MSG_PING, 0, probe, sizeof probe - 1) < 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "the restored sandbox's init is not there");
  return agent_wait (m, m->sb->restore_from == NULL, err);
}

/* The values of the sandbox's secrets, read from the store before the
 * runtime starts (a secret removed since create is NOT_FOUND here), kept
 * until the agent has them. */
int
mon_secrets_load (struct mon *m, sbx_error **err)
{
  if (!sbx_secret_opts_any (&m->sb->opts))
    return 0;
  if (sbx_secret_opts_payloads (m->st, &m->sb->opts, &m->secrets, &m->secrets_len, err) < 0)
    return sbx_error_wrap (err, "secrets");
  return 0;
}

void
mon_secrets_forget (struct mon *m)
{
  sbx_secret_value_free (m->secrets, m->secrets_len);
  m->secrets = NULL;
  m->secrets_len = 0;
}

/* Writes the secrets to the agent, one SECRET frame each, then, with
 * PING, a PING whose PONG says it has them; forgets them. */
static int
secrets_write (struct mon *m, bool ping)
{
  static const char probe[] = "sbx-secrets";
  int r = 0;
  for (size_t off = 0; r == 0 && off + 4 <= m->secrets_len;)
    {
      uint32_t n;
      memcpy (&n, m->secrets + off, sizeof n);
      r = sbx_frame_write (m->agent_fd, SBX_MSG_SECRET, 0, m->secrets + off + 4, n);
      off += 4 + n;
    }
  mon_secrets_forget (m);
  if (r == 0 && ping)
    r = sbx_frame_write (m->agent_fd, SBX_MSG_PING, 0, probe, sizeof probe - 1);
  return r;
}

/* Secrets up to this many bytes go into the agent's socket while the
 * runtime starts: far below a Unix socket's buffer (~200 KiB), so the
 * write cannot wait on an agent that is not reading yet. */
#define SECRETS_AHEAD_MAX (32 * 1024)

/* What mon_secrets_ahead did (struct mon's secrets_ahead). */
enum {
  AHEAD_NOT = 0,
  AHEAD_PINGED = 1, /* written, its PONG to wait for */
  AHEAD_DONE = 2,   /* written, nothing to wait for */
};

/* The agent reads its socket only after its HELLO and takes the frames in
 * order, so secrets written while the runtime starts reach it before any
 * request, as they would after the HELLO, and the round trip to it
 * (1-3 ms under runsc) overlaps the start. Variables alone need no PONG:
 * the agent keeps them in its memory, which cannot fail short of the
 * agent itself (and then the sandbox ends); a file may (/run/secrets not
 * sbx's tmpfs), so with one the PONG is still waited for. A restored agent
 * answers a PING first (mon_wait_hello): its secrets follow that. */
void
mon_secrets_ahead (struct mon *m)
{
  if (m->secrets_len == 0 || m->secrets_len > SECRETS_AHEAD_MAX || m->sb->restore_from)
    return;
  bool files = m->sb->opts.secret_files && m->sb->opts.secret_files[0];
  int r = secrets_write (m, files);
  /* A failed write (an agent already gone) is reported after the HELLO
   * wait, which names the runtime's failure first. */
  m->secrets_ahead = r < 0 ? r : files ? AHEAD_PINGED : AHEAD_DONE;
}

/* Hands the secrets to the agent, unless mon_secrets_ahead did, and waits
 * for the PONG that follows them: an agent that could not install one has
 * exited by then (its LOG says why), and the sandbox fails before anything
 * runs in it. A restored agent gets them again, as the store has them now. */
int
mon_secrets_send (struct mon *m, sbx_error **err)
{
  int r = m->secrets_ahead;
  if (r == AHEAD_NOT)
    {
      if (m->secrets_len == 0)
        return 0;
      r = secrets_write (m, true);
      if (r == 0)
        r = AHEAD_PINGED;
    }
  if (r < 0 || (r == AHEAD_PINGED && agent_wait (m, false, err) < 0))
    {
      if (r < 0)
        sbx_error_set (err, SBX_E_INTERNAL, -r, "the sandbox's init is not there");
      return sbx_error_wrap (err, "pass the secrets to the sandbox's init");
    }
  mon_log (m, "secrets passed to the sandbox: %zu",
           strv_len (m->sb->opts.secrets) + strv_len (m->sb->opts.secret_files));
  return 0;
}

/* gVisor's memory (its MemTotal, what its kernel sizes itself by) is what
 * `runsc run` passes `runsc boot` as --total-memory: the host's MemTotal,
 * read from /proc/meminfo, or the limit of a cgroup runsc made itself,
 * which costs a cold start ~40 ms (runtime_fork). sbx places runsc in
 * its cgroup itself, so it shows runsc, in the monitor's private mount
 * namespace alone, a /proc/meminfo whose MemTotal is the sandbox's limit
 * (where that is below the host's). Nothing else in that namespace reads
 * it; it goes with the namespace. */
/* BASE (a /proc/meminfo) with MemTotal at KB: *ret_text; *ret_kb: BASE's. */
static int
meminfo_text (const char *base, unsigned long long kb, char **ret_text, unsigned long long *ret_kb, sbx_error **err)
{
  const char *line = strncmp (base, "MemTotal:", 9) == 0 ? base : strstr (base, "\nMemTotal:");
  if (line == NULL)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "/proc/meminfo: no MemTotal");
  line += *line == '\n';
  *ret_kb = strtoull (line + 9, NULL, 10);
  const char *end = strchr (line, '\n');
  *ret_text = xasprintf ("%.*sMemTotal:       %llu kB%s", (int) (line - base), base, kb, end ? end : "\n");
  return 0;
}

static int
show_runsc_memory (struct mon *m, uint64_t limit, sbx_error **err)
{
  _cleanup_free_ char *host = NULL, *text = NULL;
  unsigned long long kb;
  if (read_file ("/proc/meminfo", 1 << 20, &host, NULL, err) < 0
      || meminfo_text (host, (unsigned long long) (limit >> 10), &text, &kb, err) < 0)
    return -1;
  m->host_mem_kb = kb;
  if (limit >> 10 >= kb)
    return 0;
  _cleanup_free_ char *path = xasprintf ("%s/meminfo", m->run_dir);
  /* Read by this start's runsc alone and gone with the sandbox: no fsync
   * (a disk flush on the critical path where the run root is on disk). */
  if (write_file_replace (path, text, strlen (text), 0444, err) < 0)
    return -1;
  if (mount (path, "/proc/meminfo", NULL, MS_BIND, NULL) < 0)
    return sbx_error_errno (err, errno, "bind mount over /proc/meminfo");
  return 0;
}

int
mon_runsc_meminfo_update (struct mon *m, uint64_t limit, sbx_error **err)
{
  _cleanup_free_ char *path = xasprintf ("%s/meminfo", m->run_dir);
  _cleanup_free_ char *cur = NULL, *text = NULL;
  unsigned long long kb;
  /* None made (no limit below the host's at create): runsc read the host's. */
  if (!path_exists (path) || m->host_mem_kb == 0)
    return 0;
  unsigned long long want = limit == 0 || limit >> 10 >= m->host_mem_kb ? m->host_mem_kb : limit >> 10;
  if (read_file (path, 1 << 20, &cur, NULL, err) < 0 || meminfo_text (cur, want, &text, &kb, err) < 0)
    return -1;
  /* In place: the bind mount over /proc/meminfo is of this inode. */
  _cleanup_close_ int fd = open (path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 || write_all (fd, text, strlen (text)) < 0)
    return sbx_error_errno (err, errno, "write `%s`", path);
  return 0;
}

/* The sandbox's cgroup, the agent's socket, the runtime's stderr pipe, and
 * the runtime's process (runtime_fork): what the runtime's start needs
 * besides the root and the bundle. */
int
mon_prepare_runtime (struct mon *m, sbx_error **err)
{
  bool runsc = strcmp (m->rt->name, "runsc") == 0;
  /* Under gVisor each sandbox process costs several host tasks (the ptrace
   * platform's stubs): the process limit proper is gVisor's RLIMIT_NPROC
   * (spec.c) and the host's pids limit a backstop. */
  int64_t pids = m->sb->opts.pids > 0 ? m->sb->opts.pids : SBX_PIDS_DEFAULT;
  /* sbx places runsc's processes in REL/ctr itself and runsc leaves
   * cgroups alone (--ignore-cgroups): the limits and the device list are
   * REL's, gVisor's memory is shown to runsc (show_runsc_memory), and sbx
   * skips runsc's two slow moves of itself (runtime_fork) and its removal
   * of a cgroup its exiting processes may still hold (retried every 100
   * ms): a memory limit, the default one included, costs a cold start
   * nothing. */
  m->rt->own_cgroups = runsc;
  /* The GPUs (gpu.h), resolved once for the cgroup's devices (runsc's
   * nvproxy opens them from the host) and the spec. */
  _cleanup_strv_ char **gpu_devices = NULL;
  if (m->sb->gpu_mode && m->gpu == NULL)
    {
      m->gpu = xmalloc0 (sizeof *m->gpu);
      if (sbx_gpu_sandbox_edits (m->sb, m->gpu, err) < 0)
        return sbx_error_wrap (err, "GPUs");
    }
  if (m->gpu)
    {
      gpu_devices = sbx_gpu_device_rules (m->gpu);
      m->rt->nvproxy = runsc;
    }
  if (runsc && m->sb->opts.memory > 0 && show_runsc_memory (m, m->sb->opts.memory, err) < 0)
    return sbx_error_wrap (err, "gVisor's memory");
  /* runsc's CPU limit waits for the sandbox's init (mon_wait_hello): gVisor's
   * boot, a burst of several threads, throttled to one core took ~200 ms
   * longer; nothing of the sandbox's runs before the init says hello. */
  sbx_cgroup_limits lim = { .memory = m->sb->opts.memory,
                            .cpu = runsc ? 0 : m->sb->opts.cpu,
                            .pids = runsc ? pids * 8 + 1024 : pids,
                            .devices = runsc,
                            .extra_devices = gpu_devices,
                            .leaf = m->rt->own_cgroups };
  m->pids_host_limit = lim.pids;
  m->cgroup_hold = sbx_store_cgroup_hold (m->st, err);
  if (m->cgroup_hold < 0 || sbx_cgroup_create (m->cgroup, &lim, err) < 0
      || sbx_priority_apply_cgroup (m->cgroup, m->sb->opts.priority, err) < 0)
    return -1;
  int sv[2];
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    return sbx_error_errno (err, errno, "socketpair");
  m->agent_fd = sv[0];
  m->agent_end = sv[1];
  sock_buffers (sv[0]);
  sock_buffers (sv[1]);
  int ep[2];
  if (pipe2 (ep, O_CLOEXEC) < 0)
    return sbx_error_errno (err, errno, "pipe");
  m->stderr_r = ep[0];
  m->stderr_w = ep[1];
  fcntl (m->stderr_r, F_SETPIPE_SZ, 1 << 20);
  set_nonblock (m->stderr_r, true);
  return runtime_fork (m, err);
}
