/* --docker (issue 21): which runtime may run Docker inside and with what
 * (sbx.conf's docker_runtime, the audit record, the runc sandbox's extra
 * capabilities and seccomp profile), and the dockerd the monitor starts
 * (monitor-docker.c). */
#ifndef SBX_DOCKER_H
#define SBX_DOCKER_H

#include <stdbool.h>
#include <stdint.h>
#include <yajl/yajl_gen.h>

#include "conf.h"
#include "error.h"
#include "sandbox.h"
#include "store.h"

#define SBX_AUDIT_EVENT_DOCKER_RUNC "sandbox.docker_on_runc"
/* How long create waits for dockerd's API to answer. */
#define SBX_DOCKER_START_TIMEOUT_MS 60000
/* The probe's exit status when the image has no docker client. */
#define SBX_DOCKER_PROBE_NO_CLIENT 3

/* Whether O may have Docker inside, before anything is made: under runsc
 * RUNTIME_UNAVAILABLE (what this host's runsc lacks, measured), under runc
 * POLICY_REFUSED when CONF (NULL: sbx.conf, loaded) says docker_runtime =
 * enforce. Not --docker: 0. */
int sbx_docker_check (const sbx_sandbox_opts *o, const sbx_conf *conf, sbx_error **err);
/* A runc sandbox with --docker: the audit record that says so. */
int sbx_docker_audit (const sbx_store *st, const sbx_sandbox *sb, sbx_error **err);
/* True for a runc sandbox made with --docker: its spec gets the extra
 * capabilities, a writable cgroup mount and sbx-init's --docker profile. */
bool sbx_docker_runc (const sbx_sandbox *sb, const char *runtime);
/* The capabilities such a sandbox has beyond the default set. */
extern const char *const sbx_docker_extra_caps[];
/* The device cgroup rules such a sandbox gets beyond the standard ones. */
void sbx_docker_gen_devices (yajl_gen g);
/* dockerd's argv under RUNTIME (NULL-terminated, the caller's). */
char **sbx_docker_daemon_argv (const char *runtime);
/* The shell script that waits for dockerd (pid PID) to answer: exit 0
 * when `docker version` does, 1 when dockerd is gone first,
 * SBX_DOCKER_PROBE_NO_CLIENT without a docker client. */
char *sbx_docker_probe_script (uint32_t pid);

#endif
