/* The sandbox's default seccomp profile: one rule table, emitted as the OCI
 * `linux.seccomp` object for runc and runsc (--oci-seccomp), and built into a
 * libseccomp filter to check it (`sbx info`, the unit test) or, in tests, to
 * load it. */
#ifndef SBX_SECCOMP_PROFILE_H
#define SBX_SECCOMP_PROFILE_H

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

/* Loads the profile into the calling process. For tests only: a sandbox gets
 * the profile from its runtime, through the OCI spec. */
int sbx_seccomp_load (sbx_error **err);

#endif
