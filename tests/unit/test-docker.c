/* docker.c and --docker's seccomp profile: which runtime and policy may
 * have Docker inside (sbx_docker_check), what a runc Docker sandbox's spec
 * gets beyond the default one and what every other spec does not get, and
 * the two BPF programs loaded in children (the docker one allows a
 * namespace but a user namespace, and answers ENOSYS to keyctl; the
 * default one allows neither). Needs root for unshare, as the suite does. */
#include "config.h"
#include "docker.h"
#include "json.h"
#include "seccomp-profile.h"
#include "spec.h"
#include "util.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "tap.h"

static sbx_code
check_code (bool docker, const char *runtime, const char *conf_text)
{
  sbx_sandbox_opts o = { .docker = docker, .runtime = (char *) runtime };
  _cleanup_conf_ sbx_conf *conf = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  if (sbx_conf_parse ("t.conf", conf_text, strlen (conf_text), &conf, &err) < 0)
    return SBX_E_INTERNAL;
  if (sbx_docker_check (&o, conf, &err) == 0)
    return SBX_OK;
  return err->code;
}

static void
test_check (void)
{
  tap_ok (check_code (false, "runsc", "docker_runtime = enforce\n") == SBX_OK, "no --docker: nothing to check");
  tap_ok (check_code (true, "runsc", "") == SBX_E_RUNTIME_UNAVAILABLE, "--docker under runsc: RUNTIME_UNAVAILABLE");
  tap_ok (check_code (true, NULL, "") == SBX_E_RUNTIME_UNAVAILABLE,
          "--docker with no runtime given (runsc): RUNTIME_UNAVAILABLE");
  tap_ok (check_code (true, "runc", "") == SBX_OK, "--docker under runc, docker_runtime unset (log): allowed");
  tap_ok (check_code (true, "runc", "docker_runtime = log\n") == SBX_OK, "--docker under runc, log: allowed");
  tap_ok (check_code (true, "runc", "docker_runtime = enforce\n") == SBX_E_POLICY_REFUSED,
          "--docker under runc, enforce: POLICY_REFUSED");
}

static yajl_val
spec_for (const sbx_sandbox *sb, const char *runtime)
{
  sbx_spec_params p = { .sb = sb, .rootfs = "/r", .cgroup_path = "/c", .runtime = runtime };
  _cleanup_free_ char *json = NULL;
  size_t len = 0;
  if (sbx_spec_generate (&p, &json, &len, NULL) < 0)
    return NULL;
  char ebuf[256];
  return yajl_tree_parse (json, ebuf, sizeof ebuf);
}

static const char *
str_of (yajl_val v)
{
  const char *s = v && YAJL_IS_STRING (v) ? YAJL_GET_STRING (v) : NULL;
  return s ? s : "";
}

static bool
has_string (yajl_val v, const char *s)
{
  for (size_t i = 0; v && YAJL_IS_ARRAY (v) && i < v->u.array.len; i++)
    if (strcmp (str_of (v->u.array.values[i]), s) == 0)
      return true;
  return false;
}

static yajl_val
get (yajl_val doc, const char *const *path)
{
  return doc ? yajl_tree_get (doc, (const char **) path, yajl_t_any) : NULL;
}

/* The cgroup mount's options. */
static yajl_val
cgroup_opts (yajl_val doc)
{
  static const char *const mp[] = { "mounts", NULL };
  yajl_val m = get (doc, mp);
  static const char *const dp[] = { "destination", NULL }, *const op[] = { "options", NULL };
  for (size_t i = 0; m && i < m->u.array.len; i++)
    {
      yajl_val d = get (m->u.array.values[i], dp);
      if (strcmp (str_of (d), "/sys/fs/cgroup") == 0)
        return get (m->u.array.values[i], op);
    }
  return NULL;
}

/* Whether DOC's device rules allow TYPE MAJOR:MINOR (-1: "*") with ACCESS. */
static bool
has_device (yajl_val doc, const char *type, long long major, long long minor, const char *access)
{
  static const char *const dp[] = { "linux", "resources", "devices", NULL };
  static const char *const tp[] = { "type", NULL }, *const ma[] = { "major", NULL }, *const mi[] = { "minor", NULL },
                           *const ac[] = { "access", NULL };
  yajl_val d = get (doc, dp);
  for (size_t i = 0; d && i < d->u.array.len; i++)
    {
      yajl_val r = d->u.array.values[i], t = get (r, tp), a = get (r, ma), b = get (r, mi), x = get (r, ac);
      if (strcmp (str_of (t), type) == 0 && (major < 0 ? a == NULL : a && YAJL_GET_INTEGER (a) == major)
          && (minor < 0 ? b == NULL : b && YAJL_GET_INTEGER (b) == minor) && strcmp (str_of (x), access) == 0)
        return true;
    }
  return false;
}

static void
test_spec (void)
{
  static const char *const args[] = { "process", "args", NULL }, *const bnd[] = { "process", "capabilities", "bounding",
                                                                                  NULL };
  sbx_sandbox sb = { .id = (char *) "sb-0123456789ab" };
  sb.opts.docker = true;
  yajl_val runc = spec_for (&sb, "runc"), runsc = spec_for (&sb, "runsc");
  sb.opts.docker = false;
  yajl_val plain = spec_for (&sb, "runc");
  tap_ok (runc && runsc && plain, "the specs are made");
  if (!runc || !runsc || !plain)
    return;
  tap_ok (has_string (get (runc, args), "--docker") && !has_string (get (plain, args), "--docker")
              && !has_string (get (runsc, args), "--docker"),
          "only a runc --docker sandbox runs sbx-init --docker (its seccomp profile)");
  bool all = true;
  for (size_t i = 0; sbx_docker_extra_caps[i]; i++)
    all = all && has_string (get (runc, bnd), sbx_docker_extra_caps[i])
          && !has_string (get (plain, bnd), sbx_docker_extra_caps[i])
          && !has_string (get (runsc, bnd), sbx_docker_extra_caps[i]);
  tap_ok (all && has_string (get (runc, bnd), "CAP_SYS_ADMIN") && has_string (get (runc, bnd), "CAP_NET_ADMIN"),
          "runc --docker: SYS_ADMIN, NET_ADMIN, MKNOD, NET_RAW, AUDIT_WRITE; no other spec has them");
  tap_ok (!has_string (cgroup_opts (runc), "ro") && has_string (cgroup_opts (plain), "ro")
              && has_string (cgroup_opts (runsc), "ro"),
          "runc --docker: /sys/fs/cgroup writable; read-only otherwise");
  tap_ok (has_device (runc, "c", -1, -1, "m") && has_device (runc, "b", -1, -1, "m")
              && has_device (runc, "c", 5, 1, "rwm") && has_device (runc, "c", 10, 200, "rwm")
              && !has_device (plain, "c", 5, 1, "rwm") && !has_device (plain, "c", -1, -1, "m"),
          "runc --docker: moby's device rules; not otherwise");
  yajl_tree_free (runc);
  yajl_tree_free (runsc);
  yajl_tree_free (plain);
}

/* In a child: loads profile KIND and reports what unshare(CLONE_NEWUTS),
 * unshare(CLONE_NEWUSER) and keyctl answer, as three errnos (0: success). */
static bool
probe_profile (sbx_seccomp_kind kind, int ret[3])
{
  int fds[2];
  if (pipe (fds) < 0)
    return false;
  pid_t pid = fork ();
  if (pid == 0)
    {
      _cleanup_free_ unsigned char *prog = NULL;
      size_t len = 0;
      int r[3] = { -1, -1, -1 };
      if (sbx_seccomp_export_kind (kind, &prog, &len, NULL) == 0)
        {
          struct sock_fprog fp = { .len = (unsigned short) (len / sizeof (struct sock_filter)),
                                   .filter = (struct sock_filter *) prog };
          if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
              && syscall (SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) == 0)
            {
              r[0] = unshare (CLONE_NEWUTS) == 0 ? 0 : errno;
              r[1] = unshare (CLONE_NEWUSER) == 0 ? 0 : errno;
              r[2] = syscall (SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0) >= 0 ? 0 : errno;
            }
        }
      _exit (write (fds[1], r, sizeof r) == sizeof r ? 0 : 1);
    }
  close (fds[1]);
  bool ok = read (fds[0], ret, 3 * sizeof (int)) == 3 * sizeof (int);
  close (fds[0]);
  int st;
  waitpid (pid, &st, 0);
  return ok;
}

static void
test_profiles (void)
{
  int d[3] = { -1, -1, -1 }, k[3] = { -1, -1, -1 };
  bool okd = probe_profile (SBX_SECCOMP_DEFAULT, d), okk = probe_profile (SBX_SECCOMP_DOCKER, k);
  tap_ok (okd && d[0] == EPERM && d[1] == EPERM && d[2] == EPERM,
          "default profile: unshare of a UTS or user namespace and keyctl are EPERM (%d %d %d)", d[0], d[1], d[2]);
  tap_ok (okk && k[0] == 0 && k[1] == EPERM && k[2] == ENOSYS,
          "--docker profile: a UTS namespace is allowed, a user namespace EPERM, keyctl ENOSYS (%d %d %d)", k[0], k[1],
          k[2]);
}

static bool
argv_has (char *const *v, const char *s)
{
  for (size_t i = 0; v && v[i]; i++)
    if (strcmp (v[i], s) == 0)
      return true;
  return false;
}

static void
test_daemon (void)
{
  _cleanup_strv_ char **argv = sbx_docker_daemon_argv ("runc");
  _cleanup_free_ char *probe = sbx_docker_probe_script (42);
  tap_ok (argv && strcmp (argv[0], "dockerd") == 0 && argv_has (argv, "--storage-driver=vfs")
              && argv_has (argv, "--bridge=none") && argv_has (argv, "--iptables=false"),
          "dockerd: vfs, no bridge, no iptables of its own");
  tap_ok (strstr (probe, "kill -0 42") && strstr (probe, "docker version"),
          "the probe waits for docker version while dockerd (42) lives");
}

int
main (void)
{
  if (geteuid () != 0)
    tap_skip_all ("needs root (unshare)");
  test_check ();
  test_spec ();
  test_profiles ();
  test_daemon ();
  tap_plan (tap_n);
  return tap_done ();
}
