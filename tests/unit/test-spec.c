/* spec.c: the OCI runtime spec sbx hands runc and runsc, generated for
 * given options and parsed back with yajl, field by field: the process
 * (capabilities, rlimits, no new privileges), the mounts, the namespaces,
 * the masked and read-only paths, the device rules, and that the seccomp
 * profile is not in it (sbx-init loads it as BPF). No root needed. */
#include "config.h"
#include "cgroup.h"
#include "gpu.h"
#include "json.h"
#include "spec.h"
#include "util.h"

#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "tap.h"

/* The value at PATH (keys, NULL-terminated) of DOC, or NULL. */
static yajl_val
at (yajl_val doc, ...)
{
  const char *path[8];
  size_t n = 0;
  va_list ap;
  va_start (ap, doc);
  const char *k;
  while ((k = va_arg (ap, const char *)) != NULL && n < ARRAY_SIZE (path) - 1)
    path[n++] = k;
  va_end (ap);
  path[n] = NULL;
  return yajl_tree_get (doc, path, yajl_t_any);
}

static const char *
str_of (yajl_val v)
{
  return v && YAJL_IS_STRING (v) ? YAJL_GET_STRING (v) : "";
}

/* Whether array V holds exactly the strings of the NULL-terminated WANT, in
 * order. */
static bool
strings_are (yajl_val v, const char *const *want)
{
  if (v == NULL || !YAJL_IS_ARRAY (v))
    return false;
  size_t n = 0;
  while (want[n])
    n++;
  if (v->u.array.len != n)
    return false;
  for (size_t i = 0; i < n; i++)
    if (strcmp (str_of (v->u.array.values[i]), want[i]) != 0)
      return false;
  return true;
}

static bool
has_string (yajl_val v, const char *s)
{
  if (v == NULL || !YAJL_IS_ARRAY (v))
    return false;
  for (size_t i = 0; i < v->u.array.len; i++)
    if (strcmp (str_of (v->u.array.values[i]), s) == 0)
      return true;
  return false;
}

/* The mount of DOC at DEST, or NULL. */
static yajl_val
mount_at (yajl_val doc, const char *dest)
{
  yajl_val m = at (doc, "mounts", NULL);
  for (size_t i = 0; m && YAJL_IS_ARRAY (m) && i < m->u.array.len; i++)
    if (strcmp (str_of (at (m->u.array.values[i], "destination", NULL)), dest) == 0)
      return m->u.array.values[i];
  return NULL;
}

/* The rlimit TYPE of DOC's process: its hard limit (soft must equal it),
 * -1 when absent, -2 when soft differs. */
static long long
rlimit_of (yajl_val doc, const char *type)
{
  yajl_val r = at (doc, "process", "rlimits", NULL);
  for (size_t i = 0; r && YAJL_IS_ARRAY (r) && i < r->u.array.len; i++)
    {
      yajl_val l = r->u.array.values[i];
      if (strcmp (str_of (at (l, "type", NULL)), type) != 0)
        continue;
      yajl_val h = at (l, "hard", NULL), s = at (l, "soft", NULL);
      if (!h || !s || !YAJL_IS_INTEGER (h) || !YAJL_IS_INTEGER (s))
        return -3;
      return YAJL_GET_INTEGER (h) == YAJL_GET_INTEGER (s) ? YAJL_GET_INTEGER (h) : -2;
    }
  return -1;
}

/* The spec for SB under RUNTIME, parsed. */
static yajl_val
spec_for (const sbx_sandbox *sb, const char *runtime, const char *netns, const char *resolv)
{
  sbx_spec_params p = { .sb = sb,
                        .rootfs = "/var/lib/sbx/sandboxes/sb-0123456789ab/rootfs",
                        .cgroup_path = "/sbx-0badc0de/sb-0123456789ab",
                        .runtime = runtime,
                        .netns_path = netns,
                        .resolv_conf = resolv };
  _cleanup_free_ char *json = NULL;
  size_t len = 0;
  _cleanup_error_ sbx_error *err = NULL;
  if (sbx_spec_generate (&p, &json, &len, &err) < 0 || json == NULL || strlen (json) != len)
    return NULL;
  char ebuf[256];
  return yajl_tree_parse (json, ebuf, sizeof ebuf);
}

static void
test_common (const char *rt, yajl_val doc)
{
  static const char *const caps[] = { "CAP_CHOWN",      "CAP_DAC_OVERRIDE", "CAP_FSETID",
                                      "CAP_FOWNER",     "CAP_SETGID",       "CAP_SETUID",
                                      "CAP_SETFCAP",    "CAP_SETPCAP",      "CAP_NET_BIND_SERVICE",
                                      "CAP_SYS_CHROOT", "CAP_KILL",         NULL };
  static const char *const none[] = { NULL };
  static const char *const args[] = { SBX_INIT_IN_SANDBOX, NULL };
  static const char *const ns[] = { "pid", "ipc", "uts", "mount", "network" };

  tap_ok (strcmp (str_of (at (doc, "ociVersion", NULL)), "1.0.2") == 0
              && strcmp (str_of (at (doc, "hostname", NULL)), "sb-0123456789ab") == 0
              && strcmp (str_of (at (doc, "root", "path", NULL)), "/var/lib/sbx/sandboxes/sb-0123456789ab/rootfs") == 0
              && strcmp (str_of (at (doc, "linux", "cgroupsPath", NULL)), "/sbx-0badc0de/sb-0123456789ab") == 0,
          "%s: ociVersion 1.0.2, the id as hostname, the root and cgroupsPath given", rt);
  tap_ok (strings_are (at (doc, "process", "args", NULL), args)
              && YAJL_IS_INTEGER (at (doc, "process", "user", "uid", NULL))
              && YAJL_GET_INTEGER (at (doc, "process", "user", "uid", NULL)) == 0
              && strcmp (str_of (at (doc, "process", "cwd", NULL)), "/") == 0,
          "%s: the process is sbx-init (%s), uid 0, in /", rt, SBX_INIT_IN_SANDBOX);
  tap_ok (YAJL_IS_TRUE (at (doc, "process", "noNewPrivileges", NULL)), "%s: noNewPrivileges is true", rt);
  tap_ok (strings_are (at (doc, "process", "capabilities", "bounding", NULL), caps)
              && strings_are (at (doc, "process", "capabilities", "effective", NULL), caps)
              && strings_are (at (doc, "process", "capabilities", "permitted", NULL), caps),
          "%s: bounding, effective and permitted are podman's default set", rt);
  tap_ok (strings_are (at (doc, "process", "capabilities", "inheritable", NULL), none)
              && strings_are (at (doc, "process", "capabilities", "ambient", NULL), none),
          "%s: inheritable and ambient are empty", rt);
  bool caps_ok = !has_string (at (doc, "process", "capabilities", "bounding", NULL), "CAP_NET_RAW")
                 && !has_string (at (doc, "process", "capabilities", "bounding", NULL), "CAP_SYS_ADMIN")
                 && !has_string (at (doc, "process", "capabilities", "bounding", NULL), "CAP_MKNOD")
                 && !has_string (at (doc, "process", "capabilities", "bounding", NULL), "CAP_AUDIT_WRITE");
  tap_ok (caps_ok, "%s: no CAP_NET_RAW, CAP_SYS_ADMIN, CAP_MKNOD or CAP_AUDIT_WRITE", rt);

  struct rlimit host;
  long long nofile = rlimit_of (doc, "RLIMIT_NOFILE");
  getrlimit (RLIMIT_NOFILE, &host);
  long long want = 65536;
  if (host.rlim_max != RLIM_INFINITY && (rlim_t) want > host.rlim_max)
    want = (long long) host.rlim_max;
  tap_ok (nofile == want, "%s: RLIMIT_NOFILE is 65536, or the host's hard limit when lower (%lld, want %lld)", rt,
          nofile, want);

  yajl_val n = at (doc, "linux", "namespaces", NULL);
  bool ns_ok = n && YAJL_IS_ARRAY (n) && n->u.array.len == ARRAY_SIZE (ns);
  for (size_t i = 0; ns_ok && i < ARRAY_SIZE (ns); i++)
    ns_ok = strcmp (str_of (at (n->u.array.values[i], "type", NULL)), ns[i]) == 0;
  tap_ok (ns_ok, "%s: namespaces pid, ipc, uts, mount, network; never user or cgroup", rt);

  static const char *const masked[] = { "/proc/kcore",   "/proc/keys", "/proc/timer_list", "/proc/sched_debug",
                                        "/sys/firmware", "/proc/acpi", "/proc/scsi" };
  bool masked_ok = true;
  for (size_t i = 0; i < ARRAY_SIZE (masked); i++)
    if (!has_string (at (doc, "linux", "maskedPaths", NULL), masked[i]))
      {
        printf ("# %s: %s is not masked\n", rt, masked[i]);
        masked_ok = false;
      }
  tap_ok (masked_ok, "%s: /proc/kcore, /proc/keys, /sys/firmware and the rest are masked", rt);
  static const char *const ro[] = { "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL };
  tap_ok (strings_are (at (doc, "linux", "readonlyPaths", NULL), ro), "%s: /proc/sys and its kin are read-only", rt);

  yajl_val dev = at (doc, "linux", "resources", "devices", NULL);
  bool dev_ok = dev && YAJL_IS_ARRAY (dev) && dev->u.array.len == 1 + sbx_std_devices_n
                && YAJL_IS_FALSE (at (dev->u.array.values[0], "allow", NULL))
                && at (dev->u.array.values[0], "major", NULL) == NULL
                && strcmp (str_of (at (dev->u.array.values[0], "access", NULL)), "rwm") == 0;
  for (size_t i = 1; dev_ok && i < dev->u.array.len; i++)
    dev_ok = YAJL_IS_TRUE (at (dev->u.array.values[i], "allow", NULL))
             && strcmp (str_of (at (dev->u.array.values[i], "type", NULL)), "c") == 0;
  tap_ok (dev_ok, "%s: devices: deny all first, then allow the %zu standard character devices", rt, sbx_std_devices_n);

  yajl_val proc = mount_at (doc, "/proc"), sys = mount_at (doc, "/sys"), cg = mount_at (doc, "/sys/fs/cgroup");
  tap_ok (proc && strcmp (str_of (at (proc, "type", NULL)), "proc") == 0
              && has_string (at (proc, "options", NULL), "nosuid") && has_string (at (proc, "options", NULL), "noexec")
              && sys && has_string (at (sys, "options", NULL), "ro") && cg
              && has_string (at (cg, "options", NULL), "ro") && mount_at (doc, "/dev") && mount_at (doc, "/dev/pts")
              && mount_at (doc, "/dev/shm"),
          "%s: /proc nosuid,noexec; /sys and its cgroups read-only; /dev, /dev/pts, /dev/shm mounted", rt);
  tap_ok (at (doc, "linux", "seccomp", NULL) == NULL && at (doc, "process", "apparmorProfile", NULL) == NULL,
          "%s: no seccomp in the spec: sbx-init loads the BPF profile itself", rt);
}

int
main (void)
{
  tap_plan (2 * 13 + 15 + 4 + 5);

  sbx_sandbox sb = { .id = (char *) "sb-0123456789ab" };
  yajl_val runsc = spec_for (&sb, "runsc", NULL, NULL);
  yajl_val runc = spec_for (&sb, "runc", "/run/sbx/netns/sb-0123456789ab", "/run/sbx/sandboxes/x/resolv.conf");
  tap_ok (runsc && runc && YAJL_IS_OBJECT (runsc) && YAJL_IS_OBJECT (runc),
          "the specs for runsc and runc are JSON objects");
  if (!runsc || !runc)
    return 1;
  test_common ("runsc", runsc);
  test_common ("runc", runc);

  /* Where the runtimes differ. */
  long long nproc = rlimit_of (runsc, "RLIMIT_NPROC");
  struct rlimit host;
  getrlimit (RLIMIT_NPROC, &host);
  long long want = SBX_PIDS_DEFAULT;
  if (host.rlim_max != RLIM_INFINITY && (rlim_t) want > host.rlim_max)
    want = (long long) host.rlim_max;
  tap_ok (nproc == want, "runsc: RLIMIT_NPROC is the default pids limit %d (%lld)", SBX_PIDS_DEFAULT, nproc);
  tap_ok (rlimit_of (runc, "RLIMIT_NPROC") == -1, "runc: no RLIMIT_NPROC (it would count the host's uid 0)");
  sb.opts.pids = 77;
  yajl_val runsc77 = spec_for (&sb, "runsc", NULL, NULL);
  tap_ok (runsc77 && rlimit_of (runsc77, "RLIMIT_NPROC") == 77, "runsc with --pids 77: RLIMIT_NPROC is 77 (%lld)",
          runsc77 ? rlimit_of (runsc77, "RLIMIT_NPROC") : -1);
  yajl_tree_free (runsc77);

  yajl_val tmp = mount_at (runsc, "/tmp");
  tap_ok (tmp && strcmp (str_of (at (tmp, "type", NULL)), "bind") == 0
              && strcmp (str_of (at (tmp, "source", NULL)), "/var/lib/sbx/sandboxes/sb-0123456789ab/rootfs/tmp") == 0
              && has_string (at (tmp, "options", NULL), "nosuid") && has_string (at (tmp, "options", NULL), "nodev"),
          "runsc: /tmp is the root's own /tmp, bound (gVisor would hide it under a tmpfs)");
  tap_ok (mount_at (runc, "/tmp") == NULL, "runc: no /tmp mount");

  yajl_val rc = mount_at (runc, "/etc/resolv.conf");
  tap_ok (rc && strcmp (str_of (at (rc, "source", NULL)), "/run/sbx/sandboxes/x/resolv.conf") == 0
              && has_string (at (rc, "options", NULL), "ro") && has_string (at (rc, "options", NULL), "noexec"),
          "a resolv.conf given is bound read-only on /etc/resolv.conf");
  tap_ok (mount_at (runsc, "/etc/resolv.conf") == NULL, "no resolv.conf given: none bound");

  yajl_val n = at (runc, "linux", "namespaces", NULL);
  tap_ok (strcmp (str_of (at (n->u.array.values[4], "path", NULL)), "/run/sbx/netns/sb-0123456789ab") == 0,
          "runc: the network namespace given is joined by path");
  n = at (runsc, "linux", "namespaces", NULL);
  tap_ok (at (n->u.array.values[4], "path", NULL) == NULL, "no network namespace given: a new one");

  tap_ok (strcmp (str_of (at (runc, "linux", "sysctl", "net.ipv4.ping_group_range", NULL)), "0 2147483647") == 0,
          "runc: ping without CAP_NET_RAW (net.ipv4.ping_group_range)");
  tap_ok (at (runsc, "linux", "sysctl", NULL) == NULL, "runsc: no sysctl (gVisor takes none)");

  yajl_tree_free (runsc);
  yajl_tree_free (runc);

  /* Extra binds (host directories, volumes): after sbx's own, in order,
   * "bind" (not rbind), nosuid, nodev, ro or rw. */
  sbx_spec_bind binds[] = { { (char *) "/run/sbx/sandboxes/x/mounts/0", (char *) "/data", true },
                            { (char *) "/run/sbx/sandboxes/x/mounts/1", (char *) "/tmp/out", false } };
  sbx_spec_params bp = { .sb = &sb,
                         .rootfs = "/r",
                         .cgroup_path = "/c",
                         .runtime = "runsc",
                         .binds = binds,
                         .nbinds = 2 };
  _cleanup_free_ char *bjson = NULL;
  size_t blen;
  char ebuf[256];
  yajl_val bdoc = sbx_spec_generate (&bp, &bjson, &blen, NULL) == 0 ? yajl_tree_parse (bjson, ebuf, sizeof ebuf) : NULL;
  yajl_val b0 = bdoc ? mount_at (bdoc, "/data") : NULL, b1 = bdoc ? mount_at (bdoc, "/tmp/out") : NULL;
  yajl_val ms = bdoc ? at (bdoc, "mounts", NULL) : NULL;
  tap_ok (b0 && b1 && ms && ms->u.array.values[ms->u.array.len - 2] == b0
              && ms->u.array.values[ms->u.array.len - 1] == b1
              && at (ms->u.array.values[ms->u.array.len - 3], "destination", NULL) != NULL
              && strcmp (str_of (at (ms->u.array.values[ms->u.array.len - 3], "destination", NULL)), "/tmp") == 0,
          "extra binds come last, in their order, after sbx's own (/tmp under runsc)");
  tap_ok (b0 && b1 && strcmp (str_of (at (b0, "source", NULL)), "/run/sbx/sandboxes/x/mounts/0") == 0
              && strcmp (str_of (at (b0, "type", NULL)), "bind") == 0 && has_string (at (b0, "options", NULL), "bind")
              && !has_string (at (b0, "options", NULL), "rbind") && has_string (at (b0, "options", NULL), "ro")
              && has_string (at (b0, "options", NULL), "nosuid") && has_string (at (b0, "options", NULL), "nodev")
              && has_string (at (b1, "options", NULL), "rw") && !has_string (at (b1, "options", NULL), "ro"),
          "an extra bind: type bind, not recursive, nosuid, nodev, ro or rw as asked");
  yajl_tree_free (bdoc);

  /* GPUs (gpu.h): the nodes, an allow rule each after the deny-all, the
   * mounts read-only whatever the CDI spec said, the hooks in their lists. */
  sbx_cdi_node nodes[] = {
    { .path = (char *) "/dev/nvidia0", .type = 'c', .major = 195, .minor = 0, .file_mode = 0666, .uid = -1, .gid = -1 },
    { .path = (char *) "/dev/nvidia-uvm",
      .type = 'c',
      .major = 510,
      .minor = 0,
      .file_mode = 0600,
      .uid = 0,
      .gid = 44,
      .permissions = (char *) "rw" }
  };
  char *mopts[] = { (char *) "rbind", (char *) "noexec", NULL };
  sbx_cdi_mount mounts[] = { { .host_path = (char *) "/usr/lib/libcuda.so.1",
                               .container_path = (char *) "/usr/lib/libcuda.so.1",
                               .options = mopts } };
  char *hargs[] = { (char *) "nvidia-ctk", (char *) "hook", NULL };
  sbx_cdi_hook hooks[] = {
    { .hook_name = (char *) "createContainer", .path = (char *) "/usr/bin/nvidia-ctk", .args = hargs, .timeout = 5 },
    { .hook_name = (char *) "poststart", .path = (char *) "/bin/true", .timeout = -1 }
  };
  sbx_cdi_edits gpu = { .nodes = nodes, .nnodes = 2, .mounts = mounts, .nmounts = 1, .hooks = hooks, .nhooks = 2 };
  sbx_spec_params gp = { .sb = &sb, .rootfs = "/r", .cgroup_path = "/c", .runtime = "runc", .gpu = &gpu };
  _cleanup_free_ char *gjson = NULL;
  size_t glen;
  yajl_val gdoc = sbx_spec_generate (&gp, &gjson, &glen, NULL) == 0 ? yajl_tree_parse (gjson, ebuf, sizeof ebuf) : NULL;
  yajl_val devs = gdoc ? at (gdoc, "linux", "devices", NULL) : NULL;
  tap_ok (devs && YAJL_IS_ARRAY (devs) && devs->u.array.len == 2
              && strcmp (str_of (at (devs->u.array.values[0], "path", NULL)), "/dev/nvidia0") == 0
              && YAJL_GET_INTEGER (at (devs->u.array.values[0], "major", NULL)) == 195
              && YAJL_GET_INTEGER (at (devs->u.array.values[0], "fileMode", NULL)) == 0666
              && YAJL_GET_INTEGER (at (devs->u.array.values[1], "gid", NULL)) == 44,
          "GPUs: linux.devices has the nodes, with their numbers, modes and owners");
  yajl_val rules = gdoc ? at (gdoc, "linux", "resources", "devices", NULL) : NULL;
  size_t nr = rules && YAJL_IS_ARRAY (rules) ? rules->u.array.len : 0;
  tap_ok (nr == 1 + sbx_std_devices_n + 2 && YAJL_IS_FALSE (at (rules->u.array.values[0], "allow", NULL))
              && YAJL_IS_TRUE (at (rules->u.array.values[nr - 2], "allow", NULL))
              && YAJL_GET_INTEGER (at (rules->u.array.values[nr - 2], "major", NULL)) == 195
              && strcmp (str_of (at (rules->u.array.values[nr - 1], "access", NULL)), "rw") == 0,
          "GPUs: an allow rule per node after the deny-all, with the spec's permissions");
  yajl_val gm = gdoc ? mount_at (gdoc, "/usr/lib/libcuda.so.1") : NULL;
  tap_ok (gm && has_string (at (gm, "options", NULL), "rbind") && has_string (at (gm, "options", NULL), "ro")
              && has_string (at (gm, "options", NULL), "nosuid") && has_string (at (gm, "options", NULL), "nodev")
              && has_string (at (gm, "options", NULL), "noexec"),
          "GPUs: a CDI mount is read-only, nosuid, nodev, recursive and noexec as asked");
  yajl_val cc = gdoc ? at (gdoc, "hooks", "createContainer", NULL) : NULL;
  yajl_val ps = gdoc ? at (gdoc, "hooks", "poststart", NULL) : NULL;
  tap_ok (cc && YAJL_IS_ARRAY (cc) && cc->u.array.len == 1
              && strcmp (str_of (at (cc->u.array.values[0], "path", NULL)), "/usr/bin/nvidia-ctk") == 0
              && YAJL_GET_INTEGER (at (cc->u.array.values[0], "timeout", NULL)) == 5 && ps && YAJL_IS_ARRAY (ps)
              && at (ps->u.array.values[0], "timeout", NULL) == NULL && at (gdoc, "hooks", "prestart", NULL) == NULL,
          "GPUs: each hook in its OCI list, a timeout only when given");
  yajl_tree_free (gdoc);
  /* runc in a user namespace: the namespace and the mappings; sbx's sysfs
   * bound; no sysctl in sbx's own network namespace, a mapped range in
   * runc's. */
  sbx_sandbox usb = { .id = (char *) "sb-0123456789ab", .userns_base = 1000000000, .userns_size = 65536 };
  sbx_spec_params up = { .sb = &usb,
                         .rootfs = "/r",
                         .cgroup_path = "/c",
                         .runtime = "runc",
                         .netns_path = "/run/sbx/netns/x",
                         .sysfs = "/run/sbx-userns/sys" };
  _cleanup_free_ char *ujson = NULL;
  size_t ulen;
  yajl_val udoc = sbx_spec_generate (&up, &ujson, &ulen, NULL) == 0 ? yajl_tree_parse (ujson, ebuf, sizeof ebuf) : NULL;
  yajl_val un = udoc ? at (udoc, "linux", "namespaces", NULL) : NULL;
  tap_ok (un && YAJL_IS_ARRAY (un) && strcmp (str_of (at (un->u.array.values[0], "type", NULL)), "user") == 0,
          "userns: a user namespace");
  bool maps = udoc != NULL;
  for (int i = 0; maps && i < 2; i++)
    {
      yajl_val m = at (udoc, "linux", i ? "gidMappings" : "uidMappings", NULL);
      maps = m && YAJL_IS_ARRAY (m) && m->u.array.len == 1
             && YAJL_GET_INTEGER (at (m->u.array.values[0], "containerID", NULL)) == 0
             && YAJL_GET_INTEGER (at (m->u.array.values[0], "hostID", NULL)) == 1000000000
             && YAJL_GET_INTEGER (at (m->u.array.values[0], "size", NULL)) == 65536;
    }
  tap_ok (maps, "userns: uid and gid 0-65535 mapped to the range");
  yajl_val usys = udoc ? mount_at (udoc, "/sys") : NULL;
  tap_ok (usys && strcmp (str_of (at (usys, "type", NULL)), "bind") == 0
              && strcmp (str_of (at (usys, "source", NULL)), "/run/sbx-userns/sys") == 0
              && has_string (at (usys, "options", NULL), "ro") && !has_string (at (usys, "options", NULL), "rbind"),
          "userns: sbx's sysfs bound read-only on /sys");
  tap_ok (udoc && at (udoc, "linux", "sysctl", NULL) == NULL, "userns: no sysctl in sbx's network namespace");
  yajl_tree_free (udoc);
  up.netns_path = NULL;
  up.sysfs = NULL;
  free (ujson);
  ujson = NULL;
  udoc = sbx_spec_generate (&up, &ujson, &ulen, NULL) == 0 ? yajl_tree_parse (ujson, ebuf, sizeof ebuf) : NULL;
  tap_ok (udoc && strcmp (str_of (at (udoc, "linux", "sysctl", "net.ipv4.ping_group_range", NULL)), "0 65535") == 0
              && strcmp (str_of (at (mount_at (udoc, "/sys"), "type", NULL)), "sysfs") == 0,
          "userns, runc's network namespace: the mapped groups may ping; runc mounts sysfs");
  yajl_tree_free (udoc);

  /* sbx_spec_write: the bundle's config.json, private, the same document. */
  char tmpl[] = "/tmp/sbx-test-spec-XXXXXX";
  if (mkdtemp (tmpl) == NULL)
    abort ();
  _cleanup_free_ char *bundle = xasprintf ("%s/bundle", tmpl);
  _cleanup_free_ char *config = xasprintf ("%s/config.json", bundle);
  sbx_spec_params p = { .sb = &sb, .rootfs = "/r", .cgroup_path = "/c", .runtime = "runc" };
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_free_ char *want_json = NULL, *got_json = NULL;
  size_t want_len = 0, got_len = 0;
  struct stat st;
  int r = sbx_spec_write (&p, bundle, &err);
  tap_ok (r == 0 && sbx_spec_generate (&p, &want_json, &want_len, NULL) == 0
              && read_file (config, 1 << 20, &got_json, &got_len, NULL) == 0 && got_len == want_len
              && memcmp (got_json, want_json, want_len) == 0 && stat (config, &st) == 0 && (st.st_mode & 07777) == 0600
              && stat (bundle, &st) == 0 && (st.st_mode & 07777) == 0700,
          "sbx_spec_write writes the spec as BUNDLE/config.json, 0600, in a 0700 bundle (%s)", err ? err->msg : "ok");
  rm_rf (tmpl, NULL);
  return tap_done ();
}
