/* The sandbox's default seccomp profile: one rule table, built with
 * libseccomp into the BPF program that sbx-init loads as its first act in
 * every sandbox, under both runtimes (the build embeds it: src/init/seccomp-gen.c),
 * checked by `sbx info`, and emitted as an OCI `linux.seccomp` object for
 * whoever wants to hand it to another runtime (the tests compare the two). */
#ifndef SBX_SECCOMP_PROFILE_H
#define SBX_SECCOMP_PROFILE_H

#include <stddef.h>
#include <yajl/yajl_gen.h>

#include "error.h"

/* Emits the OCI `linux.seccomp` object (defaultAction SCMP_ACT_ERRNO with
 * errnoRet EPERM, the native 64-bit architecture only, syscalls[]) into G.
 * INTERNAL on an architecture the table was not written for. */
int sbx_seccomp_gen_oci (yajl_gen g, sbx_error **err);

/* Builds the same rules into a libseccomp filter, without loading it, and
 * checks them: no name is in two rules that contradict each other, every name
 * resolves or is knowingly skipped (another architecture's syscall, or one
 * newer than the installed libseccomp), and the filter exports as BPF. */
int sbx_seccomp_check (sbx_error **err);

/* The profile as the classic BPF program sbx-init loads (*RET, malloc'd,
 * *RET_LEN bytes of struct sock_filter): a prelude that answers ENOSYS to a
 * native syscall numbered above every syscall the profile names, then
 * libseccomp's program (bad architecture: kill the thread). */
int sbx_seccomp_export (unsigned char **ret, size_t *ret_len, sbx_error **err);

/* The profiles sbx-init can load: the default, and --docker's on runc
 * (sbx-init --docker), which allows what dockerd needs to make containers
 * (seccomp-profile.c, docker_rules). */
typedef enum sbx_seccomp_kind { SBX_SECCOMP_DEFAULT, SBX_SECCOMP_DOCKER } sbx_seccomp_kind;
int sbx_seccomp_export_kind (sbx_seccomp_kind kind, unsigned char **ret, size_t *ret_len, sbx_error **err);

/* Loads that program into the calling process, which must have
 * no_new_privs or CAP_SYS_ADMIN. For tests: a sandbox gets it from sbx-init. */
int sbx_seccomp_load (sbx_error **err);

#endif
