/* OCI spec generation: process, mounts, namespaces, masked and read-only
 * paths, capabilities, rlimits and cgroup resources. The seccomp profile is
 * not in it: sbx-init loads it, as BPF compiled once at build time, where a
 * runtime would compile the JSON rules again on every start (runc: ~8 ms). */
#include "config.h"
#include "spec.h"
#include "cgroup.h"
#include "docker.h"
#include "gpu.h"
#include "priority.h"
#include "json.h"
#include "util.h"

#include <errno.h>
#include <glob.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

/* podman's default set. Not CAP_NET_RAW (a raw socket forges any source
 * address; ping uses ICMP datagram sockets, net.c opens them to every
 * group), CAP_MKNOD or CAP_AUDIT_WRITE. */
const char *const sbx_default_caps[] = {
  "CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FSETID",           "CAP_FOWNER",     "CAP_SETGID", "CAP_SETUID",
  "CAP_SETFCAP", "CAP_SETPCAP",      "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL",   NULL,
};

static const char *const masked_paths[] = {
  "/proc/acpi",
  "/proc/asound",
  "/proc/interrupts",
  "/proc/kcore",
  "/proc/keys",
  "/proc/latency_stats",
  "/proc/sched_debug",
  "/proc/scsi",
  "/proc/timer_list",
  "/proc/timer_stats",
  "/sys/firmware",
  "/sys/devices/virtual/powercap",
  NULL,
};

static const char *const readonly_paths[] = {
  "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

static void
gen_caps (yajl_gen g, const sbx_spec_params *p)
{
  static const char *const sets[] = { "bounding", "effective", "permitted" };
  _cleanup_strv_ char **caps = strv_dup ((char *const *) sbx_default_caps);
  if (sbx_docker_runc (p->sb, p->runtime))
    for (size_t i = 0; sbx_docker_extra_caps[i]; i++)
      strv_push (&caps, sbx_docker_extra_caps[i]);
  j_str (g, "capabilities");
  j_map (g);
  for (size_t i = 0; i < ARRAY_SIZE (sets); i++)
    j_kstrv (g, sets[i], caps);
  j_kstrv (g, "inheritable", NULL);
  j_kstrv (g, "ambient", NULL);
  j_endmap (g);
}

/* Never above the host's hard limit: a spec asking for more fails to start. */
static void
gen_rlimit (yajl_gen g, const char *type, int resource, rlim_t want)
{
  struct rlimit host;
  if (getrlimit (resource, &host) == 0 && host.rlim_max != RLIM_INFINITY && want > host.rlim_max)
    want = host.rlim_max;
  j_map (g);
  j_kstr (g, "type", type);
  j_kint (g, "hard", (long long) want);
  j_kint (g, "soft", (long long) want);
  j_endmap (g);
}

static int64_t
pids_limit (const sbx_spec_params *p)
{
  return p->sb->opts.pids > 0 ? p->sb->opts.pids : SBX_PIDS_DEFAULT;
}

static void
gen_process (yajl_gen g, const sbx_spec_params *p)
{
  j_str (g, "process");
  j_map (g);
  j_kbool (g, "terminal", false);
  j_str (g, "user");
  j_map (g);
  j_kint (g, "uid", 0);
  j_kint (g, "gid", 0);
  j_endmap (g);
  j_str (g, "args");
  j_arr (g);
  j_str (g, SBX_INIT_IN_SANDBOX);
  if (sbx_docker_runc (p->sb, p->runtime))
    j_str (g, "--docker"); /* its seccomp profile */
  j_endarr (g);
  j_str (g, "env");
  j_arr (g);
  j_str (g, "PATH=" SBX_DEFAULT_PATH);
  j_endarr (g);
  j_kstr (g, "cwd", "/");
  gen_caps (g, p);
  j_str (g, "rlimits");
  j_arr (g);
  gen_rlimit (g, "RLIMIT_NOFILE", RLIMIT_NOFILE, 65536);
  /* Under gVisor every sandbox process costs several host tasks (the
   * ptrace platform's stubs), so the process limit is gVisor's own
   * RLIMIT_NPROC, counted inside the sandbox; the host cgroup only backs
   * it up (gen_resources). Under runc RLIMIT_NPROC would count the host's
   * uid 0, so the pids cgroup is the limit there. */
  if (strcmp (p->runtime, "runsc") == 0)
    gen_rlimit (g, "RLIMIT_NPROC", RLIMIT_NPROC, (rlim_t) pids_limit (p));
  j_endarr (g);
  j_kbool (g, "noNewPrivileges", true);
  j_kint (g, "oomScoreAdj", sbx_priority_oom_score_adj (p->sb->opts.priority));
  j_endmap (g);
}

static void
gen_mount (yajl_gen g, const char *dest, const char *type, const char *src, const char *const *opts)
{
  j_map (g);
  j_kstr (g, "destination", dest);
  j_kstr (g, "type", type);
  j_kstr (g, "source", src);
  j_kstrv (g, "options", (char *const *) opts);
  j_endmap (g);
}

const char *
sbx_spec_reserved_dest (const char *destination)
{
  static const char *const reserved[] = { "/proc", "/sys", "/dev", "/.sbx", NULL };
  for (size_t i = 0; reserved[i]; i++)
    {
      size_t n = strlen (reserved[i]);
      if (strncmp (destination, reserved[i], n) == 0 && (destination[n] == '\0' || destination[n] == '/'))
        return reserved[i];
    }
  return NULL;
}

void
sbx_spec_binds_free (sbx_spec_bind *binds, size_t n)
{
  for (size_t i = 0; binds && i < n; i++)
    {
      free (binds[i].source);
      free (binds[i].destination);
    }
  free (binds);
}

/* The extra binds (sbx_spec_bind): "bind", not "rbind", so that nothing
 * mounted below a source comes along; read-only is also on the source's
 * own mount (hostmount.c), this says it again to the runtime. */
static void
gen_binds (yajl_gen g, const sbx_spec_params *p)
{
  static const char *const ro[] = { "bind", "ro", "nosuid", "nodev", NULL };
  static const char *const rw[] = { "bind", "rw", "nosuid", "nodev", NULL };
  for (size_t i = 0; i < p->nbinds; i++)
    gen_mount (g, p->binds[i].destination, "bind", p->binds[i].source, p->binds[i].readonly ? ro : rw);
}

/* A CDI spec's mounts: read-only, nosuid, nodev whatever the spec says
 * (cdi.c refuses rw, suid and dev); recursive only when it asks. */
static void
gen_gpu_mounts (yajl_gen g, const sbx_spec_params *p)
{
  for (size_t i = 0; p->gpu && i < p->gpu->nmounts; i++)
    {
      const sbx_cdi_mount *m = &p->gpu->mounts[i];
      const char *opts[6] = { "bind", "ro", "nosuid", "nodev", NULL, NULL };
      for (size_t k = 0; m->options && m->options[k]; k++)
        {
          if (strcmp (m->options[k], "rbind") == 0)
            opts[0] = "rbind";
          if (strcmp (m->options[k], "noexec") == 0)
            opts[4] = "noexec";
        }
      gen_mount (g, m->container_path, "bind", m->host_path, opts);
    }
  /* In a user namespace runc binds a device node from its path rather than
   * making it (mknod needs host root): the nodes are binds of the host's,
   * which the monitor put where the range's root reaches them
   * (mon_userns_paths); the cgroup's rules still allow them alone. */
  static const char *const node[] = { "bind", "rw", "nosuid", "noexec", NULL };
  for (size_t i = 0; p->gpu && p->sb->userns_base > 0 && i < p->gpu->nnodes; i++)
    gen_mount (g, p->gpu->nodes[i].path, "bind",
               p->gpu->nodes[i].host_path ? p->gpu->nodes[i].host_path : p->gpu->nodes[i].path, node);
}

static void
gen_mounts (yajl_gen g, const sbx_spec_params *p)
{
  static const char *const proc[] = { "nosuid", "noexec", "nodev", NULL };
  static const char *const dev[] = { "nosuid", "strictatime", "mode=755", "size=65536k", NULL };
  static const char *const pts[] = { "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5", NULL };
  static const char *const shm[] = { "nosuid", "noexec", "nodev", "mode=1777", "size=65536k", NULL };
  static const char *const mq[] = { "nosuid", "noexec", "nodev", NULL };
  static const char *const sys[] = { "nosuid", "noexec", "nodev", "ro", NULL };
  static const char *const cg[] = { "ro", "nosuid", "noexec", "nodev", "relatime", NULL };
  j_str (g, "mounts");
  j_arr (g);
  gen_mount (g, "/proc", "proc", "proc", proc);
  gen_mount (g, "/dev", "tmpfs", "tmpfs", dev);
  gen_mount (g, "/dev/pts", "devpts", "devpts", pts);
  gen_mount (g, "/dev/shm", "tmpfs", "shm", shm);
  gen_mount (g, "/dev/mqueue", "mqueue", "mqueue", mq);
  if (p->sysfs)
    {
      /* Mounted by sbx in the sandbox's network namespace (a runc in a
       * user namespace may not): bound, not recursive, read-only. */
      static const char *const sysb[] = { "bind", "nosuid", "noexec", "nodev", "ro", NULL };
      gen_mount (g, "/sys", "bind", p->sysfs, sysb);
    }
  else
    gen_mount (g, "/sys", "sysfs", "sysfs", sys);
  /* dockerd's runc makes its containers' cgroups below the sandbox's own. */
  gen_mount (g, "/sys/fs/cgroup", "cgroup", "cgroup", sbx_docker_runc (p->sb, p->runtime) ? cg + 1 : cg);
  if (strcmp (p->runtime, "runsc") == 0)
    {
      /* gVisor puts its own tmpfs over an empty /tmp unless /tmp is a
       * mount of the spec: the sandbox's /tmp would then be invisible to
       * `sbx fs`. Its own /tmp, bound explicitly, stays shared. The source
       * is always a directory: sbx's top layer has /tmp, above every image
       * layer, and the sandbox has not run yet. */
      static const char *const tmp[] = { "rbind", "rw", "nosuid", "nodev", NULL };
      _cleanup_free_ char *src = xasprintf ("%s/tmp", p->rootfs);
      gen_mount (g, "/tmp", "bind", src, tmp);
    }
  if (p->sb->opts.secret_files && p->sb->opts.secret_files[0])
    {
      /* --secret-file: the agent writes each value here once it has it, on
       * a tmpfs of the sandbox's own (gVisor's memory under runsc), so that
       * no value reaches the writable layer, a commit or an export. */
      static const char *const sec[] = { "nosuid", "nodev", "noexec", "mode=0755", "size=8m", NULL };
      gen_mount (g, "/run/secrets", "tmpfs", "tmpfs", sec);
    }
  if (p->resolv_conf)
    {
      /* sbx's top layer has a plain /etc/resolv.conf over the image's (a
       * symlink there is never followed). */
      static const char *const ro[] = { "bind", "ro", "nosuid", "nodev", "noexec", NULL };
      gen_mount (g, "/etc/resolv.conf", "bind", p->resolv_conf, ro);
    }
  gen_binds (g, p);
  gen_gpu_mounts (g, p);
  j_endarr (g);
}

static void
gen_masked (yajl_gen g)
{
  j_str (g, "maskedPaths");
  j_arr (g);
  for (size_t i = 0; masked_paths[i]; i++)
    j_str (g, masked_paths[i]);
  glob_t gl;
  if (glob ("/sys/devices/system/cpu/cpu*/thermal_throttle", GLOB_NOSORT, NULL, &gl) == 0)
    {
      for (size_t i = 0; i < gl.gl_pathc; i++)
        j_str (g, gl.gl_pathv[i]);
      globfree (&gl);
    }
  j_endarr (g);
  j_kstrv (g, "readonlyPaths", (char *const *) readonly_paths);
}

void
sbx_spec_gen_device_rule (yajl_gen g, bool allow, const char *type, long major, long minor, const char *access)
{
  j_map (g);
  j_kbool (g, "allow", allow);
  if (type)
    j_kstr (g, "type", type);
  if (major >= 0)
    j_kint (g, "major", major);
  if (minor >= 0)
    j_kint (g, "minor", minor);
  j_kstr (g, "access", access);
  j_endmap (g);
}

/* Deny every device, then allow the standard ones, the GPUs' nodes and,
 * for --docker on runc, the rules dockerd's runc writes for its
 * containers (a child cgroup gets no more than its parent). */
static void
gen_devices (yajl_gen g, const sbx_spec_params *p)
{
  j_str (g, "devices");
  j_arr (g);
  sbx_spec_gen_device_rule (g, false, NULL, -1, -1, "rwm");
  for (size_t i = 0; i < sbx_std_devices_n; i++)
    sbx_spec_gen_device_rule (g, true, "c", sbx_std_devices[i].major, sbx_std_devices[i].minor, "rwm");
  for (size_t i = 0; p->gpu && i < p->gpu->nnodes; i++)
    {
      const sbx_cdi_node *n = &p->gpu->nodes[i];
      const char type[2] = { n->type, '\0' };
      sbx_spec_gen_device_rule (g, true, type, (long) n->major, (long) n->minor,
                                n->permissions ? n->permissions : "rwm");
    }
  if (sbx_docker_runc (p->sb, p->runtime))
    sbx_docker_gen_devices (g);
  j_endarr (g);
}

/* The GPUs' device nodes, which the runtime makes in the sandbox's /dev
 * (sbx_gpu_edits resolved each from the host's node). */
static void
gen_gpu_nodes (yajl_gen g, const sbx_spec_params *p)
{
  if (p->gpu == NULL || p->gpu->nnodes == 0 || p->sb->userns_base > 0)
    return;
  j_str (g, "devices");
  j_arr (g);
  for (size_t i = 0; i < p->gpu->nnodes; i++)
    {
      const sbx_cdi_node *n = &p->gpu->nodes[i];
      const char type[2] = { n->type, '\0' };
      j_map (g);
      j_kstr (g, "path", n->path);
      j_kstr (g, "type", type);
      j_kint (g, "major", n->major);
      j_kint (g, "minor", n->minor);
      j_kint (g, "fileMode", n->file_mode);
      j_kint (g, "uid", n->uid >= 0 ? n->uid : 0);
      j_kint (g, "gid", n->gid >= 0 ? n->gid : 0);
      j_endmap (g);
    }
  j_endarr (g);
}

/* The CDI spec's hooks, each in its OCI list; runc runs them. */
static void
gen_hooks (yajl_gen g, const sbx_spec_params *p)
{
  static const char *const names[] = { "prestart",       "createRuntime", "createContainer",
                                       "startContainer", "poststart",     "poststop" };
  if (p->gpu == NULL || p->gpu->nhooks == 0)
    return;
  j_str (g, "hooks");
  j_map (g);
  for (size_t k = 0; k < ARRAY_SIZE (names); k++)
    {
      bool any = false;
      for (size_t i = 0; i < p->gpu->nhooks; i++)
        {
          const sbx_cdi_hook *h = &p->gpu->hooks[i];
          if (strcmp (h->hook_name, names[k]) != 0)
            continue;
          if (!any)
            {
              j_str (g, names[k]);
              j_arr (g);
            }
          any = true;
          j_map (g);
          j_kstr (g, "path", h->path);
          if (h->args)
            j_kstrv (g, "args", h->args);
          if (h->env)
            j_kstrv (g, "env", h->env);
          if (h->timeout > 0)
            j_kint (g, "timeout", h->timeout);
          j_endmap (g);
        }
      if (any)
        j_endarr (g);
    }
  j_endmap (g);
}

static void
gen_resources (yajl_gen g, const sbx_spec_params *p)
{
  j_str (g, "resources");
  j_map (g);
  gen_devices (g, p);
  /* The limits themselves are on sbx's own parent cgroup (cgroup.h); runsc
   * leaves cgroups to sbx (--ignore-cgroups, monitor.c). */
  j_endmap (g);
}

/* runc in a user namespace (userns.h): uid and gid 0..size-1 inside are
 * the sandbox's leased host range. */
static void
gen_id_mappings (yajl_gen g, const sbx_sandbox *sb)
{
  static const char *const keys[] = { "uidMappings", "gidMappings" };
  for (size_t i = 0; i < ARRAY_SIZE (keys); i++)
    {
      j_str (g, keys[i]);
      j_arr (g);
      j_map (g);
      j_kint (g, "containerID", 0);
      j_kint (g, "hostID", sb->userns_base);
      j_kint (g, "size", sb->userns_size);
      j_endmap (g);
      j_endarr (g);
    }
}

static void
gen_namespaces (yajl_gen g, const sbx_spec_params *p)
{
  static const char *const ns[] = { "pid", "ipc", "uts", "mount", "network" };
  j_str (g, "namespaces");
  j_arr (g);
  if (p->sb->userns_base > 0)
    {
      j_map (g);
      j_kstr (g, "type", "user");
      j_endmap (g);
    }
  for (size_t i = 0; i < ARRAY_SIZE (ns); i++)
    {
      j_map (g);
      j_kstr (g, "type", ns[i]);
      if (strcmp (ns[i], "network") == 0 && p->netns_path)
        j_kstr (g, "path", p->netns_path);
      j_endmap (g);
    }
  j_endarr (g);
}

static void
gen_linux (yajl_gen g, const sbx_spec_params *p)
{
  j_str (g, "linux");
  j_map (g);
  gen_namespaces (g, p);
  if (p->sb->userns_base > 0)
    gen_id_mappings (g, p->sb);
  /* Ping without CAP_NET_RAW, through ICMP datagram sockets, in the
   * namespace runc makes for --block-network too (net.c sets the same in
   * sbx's own). gVisor has its own network stack and takes no sysctl. */
  /* In a user namespace runc's init may write only the sysctls of a
   * namespace it made (--block-network), and only groups it maps. */
  bool userns = p->sb->userns_base > 0;
  if (strcmp (p->runtime, "runc") == 0 && (!userns || p->netns_path == NULL))
    {
      j_str (g, "sysctl");
      j_map (g);
      j_kstr (g, "net.ipv4.ping_group_range", userns ? "0 65535" : "0 2147483647");
      j_endmap (g);
    }
  gen_masked (g);
  gen_gpu_nodes (g, p);
  gen_resources (g, p);
  j_kstr (g, "cgroupsPath", p->cgroup_path);
  j_endmap (g);
}

int
sbx_spec_generate (const sbx_spec_params *p, char **ret_json, size_t *ret_len, sbx_error **err)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (true);
  j_map (g);
  j_kstr (g, "ociVersion", "1.0.2");
  gen_process (g, p);
  j_str (g, "root");
  j_map (g);
  j_kstr (g, "path", p->rootfs);
  j_kbool (g, "readonly", false);
  j_endmap (g);
  j_kstr (g, "hostname", p->sb->id);
  gen_mounts (g, p);
  gen_hooks (g, p);
  gen_linux (g, p);
  j_endmap (g);
  *ret_json = j_take (g, ret_len);
  return 0;
}

int
sbx_spec_write (const sbx_spec_params *p, const char *bundle_dir, sbx_error **err)
{
  _cleanup_free_ char *json = NULL;
  size_t len;
  if (sbx_spec_generate (p, &json, &len, err) < 0)
    return -1;
  if (mkdir (bundle_dir, 0700) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", bundle_dir);
  /* Replaced, not synced: a bundle serves one start and dies with a crash. */
  _cleanup_free_ char *path = xasprintf ("%s/config.json", bundle_dir);
  return write_file_replace (path, json, len, 0600, err);
}
