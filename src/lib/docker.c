/* --docker: the policy (which runtime, sbx.conf's docker_runtime, the audit
 * record) and what a Docker sandbox gets beyond the default hardening. The
 * monitor's half, starting dockerd and waiting for it, is monitor-docker.c.
 *
 * Measured on this project's hosts (docs/design.md, "Docker inside"): under
 * runsc 2022-12-19 dockerd does not start (RUNSC_REASON), so --docker
 * under runsc is refused before anything is made. Under runc it needs
 * CAP_SYS_ADMIN (mounts, namespaces, sethostname), CAP_NET_ADMIN, the
 * capabilities moby gives every container (runc cannot raise one above the
 * bounding set: MKNOD, NET_RAW, AUDIT_WRITE), the device rules moby's runc
 * writes, a writable cgroup mount, and the namespace and mount calls the
 * default seccomp profile denies (sbx-init --docker). dockerd runs with vfs
 * storage (no overlay on the sandbox's overlay root) and without a bridge
 * or iptables of its own: nested containers use the sandbox's network
 * (`docker run --network host`), so the sandbox's egress rules and `sbx
 * expose` apply to them as they are. */
#include "config.h"
#include "docker.h"
#include "secret.h"
#include "spec.h"
#include "util.h"

#include <string.h>

const char *const sbx_docker_extra_caps[] = { "CAP_SYS_ADMIN", "CAP_NET_ADMIN",   "CAP_MKNOD",
                                              "CAP_NET_RAW",   "CAP_AUDIT_WRITE", NULL };

/* What this runsc lacks, as measured (docs/design.md). */
#define RUNSC_REASON                                                                                         \
  "this host's runsc (release 2022-12-19) cannot run Docker inside: its cgroupfs has no devices controller " \
  "(dockerd: \"Devices cgroup isn't mounted\"), a mount propagation change fails with EINVAL (runc's "       \
  "container setup) and there is no nftables netlink (iptables: \"Protocol not supported\"); use --runtime " \
  "runc where sbx.conf's docker_runtime allows it"

int
sbx_docker_check (const sbx_sandbox_opts *o, const sbx_conf *conf, sbx_error **err)
{
  if (!o->docker)
    return 0;
  if (o->runtime == NULL || strcmp (o->runtime, "runsc") == 0)
    return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0, "--docker: " RUNSC_REASON);
  _cleanup_conf_ sbx_conf *own = NULL;
  if (conf == NULL && sbx_conf_load (NULL, &own, err) < 0)
    return -1;
  if (conf == NULL)
    conf = own;
  if (conf->docker_enforce)
    return sbx_error_set (err, SBX_E_POLICY_REFUSED, 0,
                          "--docker: a Docker sandbox needs runc, and sbx.conf's docker_runtime = enforce refuses "
                          "Docker on runc%s%s",
                          conf->path ? " (" : "", conf->path ? conf->path : "");
  return 0;
}

int
sbx_docker_audit (const sbx_store *st, const sbx_sandbox *sb, sbx_error **err)
{
  if (!sbx_docker_runc (sb, sb->opts.runtime))
    return 0;
  if (sbx_audit_append (st, SBX_AUDIT_EVENT_DOCKER_RUNC, sb->id, NULL, err) < 0)
    return sbx_error_wrap (err, "audit log");
  return 0;
}

bool
sbx_docker_runc (const sbx_sandbox *sb, const char *runtime)
{
  return sb->opts.docker && runtime && strcmp (runtime, "runc") == 0;
}

/* The device rules dockerd's runc writes for every container (moby's
 * default spec) that sbx's own list lacks: mknod of any node (reading or
 * writing one stays refused but for the allowed devices), /dev/console and
 * /dev/net/tun (which the sandbox does not have). */
void
sbx_docker_gen_devices (yajl_gen g)
{
  sbx_spec_gen_device_rule (g, true, "c", -1, -1, "m");
  sbx_spec_gen_device_rule (g, true, "b", -1, -1, "m");
  sbx_spec_gen_device_rule (g, true, "c", 5, 1, "rwm");
  sbx_spec_gen_device_rule (g, true, "c", 10, 200, "rwm");
}

char **
sbx_docker_daemon_argv (const char *runtime)
{
  (void) runtime;
  static const char *const argv[] = {
    "dockerd",
    "--host=unix:///var/run/docker.sock",
    "--storage-driver=vfs",
    "--bridge=none",
    "--iptables=false",
    "--ip6tables=false",
    "--ip-forward=false",
    "--ip-masq=false",
    NULL,
  };
  return strv_dup ((char *const *) argv);
}

char *
sbx_docker_probe_script (uint32_t pid)
{
  return xasprintf ("command -v docker >/dev/null || exit %d; "
                    "until docker version >/dev/null 2>&1; do kill -0 %u 2>/dev/null || exit 1; sleep 0.1; done",
                    SBX_DOCKER_PROBE_NO_CLIENT, pid);
}
