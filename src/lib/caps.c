/* Capabilities (libcap). A caller without the privileges sbx needs gets one
 * error up front that names what it lacks, rather than the EPERM of whatever
 * mount or netlink call comes first; and a monitor, once its sandbox runs,
 * gives up every capability that its loop, its teardown and the runtime
 * commands it runs no longer use, so that a compromised monitor (it parses
 * what the sandbox's agent sends) holds less. */
#include "config.h"
#include "caps.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

static void
cap_freep (cap_t *c)
{
  if (*c)
    cap_free (*c);
}
#define _cleanup_cap_ __attribute__ ((cleanup (cap_freep)))

/* What making a sandbox takes: mounts, namespaces and pivot_root
 * (SYS_ADMIN, SYS_CHROOT), the network namespace, veth and nftables
 * (NET_ADMIN), the store's and the runtimes' files (CHOWN, DAC_OVERRIDE,
 * FOWNER, MKNOD), the runtimes' own switches of identity and capabilities
 * (SETUID, SETGID, SETPCAP), and killing and tracing the sandbox's
 * processes (KILL, SYS_PTRACE). Not SYS_RESOURCE: sbx and both runtimes
 * work without it (a container's root often lacks it). */
static const cap_value_t required[] = {
  CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_CHROOT, CAP_SYS_PTRACE,   CAP_SETUID, CAP_SETGID,
  CAP_SETPCAP,   CAP_CHOWN,     CAP_FOWNER,     CAP_DAC_OVERRIDE, CAP_MKNOD,  CAP_KILL,
};

/* What a running sandbox's monitor keeps. Its teardown unmounts the root
 * and deletes the network namespace (SYS_ADMIN), removes its nftables
 * table and veth (NET_ADMIN), kills what is left (KILL) and removes the
 * cgroup and run directory (DAC_OVERRIDE, FOWNER); the port proxy enters
 * the sandbox's namespace (SYS_ADMIN) and may bind a low port
 * (NET_BIND_SERVICE); `sbx net` rewrites the egress rules (NET_ADMIN). The
 * runtime commands it runs (runsc/runc kill, delete, pause, resume,
 * checkpoint) inherit this set as root: they read and signal the sandbox's
 * processes (SYS_PTRACE, KILL, DAC_READ_SEARCH), switch identity and
 * capabilities (SETUID, SETGID, SETPCAP), chroot (SYS_CHROOT) and write
 * their state (CHOWN, FSETID). Gone: modules, raw I/O, time, reboot, audit,
 * MAC, mknod, BPF, perf, file capabilities, immutable files, leases, IPC
 * ownership, limits, nice, syslog and the rest. */
static const cap_value_t monitor_keeps[] = {
  CAP_SYS_ADMIN,  CAP_NET_ADMIN, CAP_NET_BIND_SERVICE, CAP_KILL,    CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER,
  CAP_SYS_PTRACE, CAP_SETUID,    CAP_SETGID,           CAP_SETPCAP, CAP_SYS_CHROOT,   CAP_CHOWN,           CAP_FSETID,
};

#define N_OF(a) (sizeof (a) / sizeof *(a))

/* "CAP_SYS_ADMIN" for CAP_SYS_ADMIN. */
static char *
cap_upper_name (cap_value_t v)
{
  char *lower = cap_to_name (v);
  char *name = xstrdup (lower ? lower : "CAP_?");
  if (lower)
    cap_free (lower);
  for (char *p = name; *p; p++)
    *p = (char) toupper ((unsigned char) *p);
  return name;
}

int
sbx_caps_require (const char *what, sbx_error **err)
{
  _cleanup_cap_ cap_t caps = cap_get_proc ();
  if (caps == NULL)
    return sbx_error_errno (err, errno, "%s: read this process's capabilities", what);

  _cleanup_free_ char *missing = NULL;
  for (size_t i = 0; i < N_OF (required); i++)
    {
      cap_flag_value_t have = CAP_CLEAR;
      if (!CAP_IS_SUPPORTED (required[i]))
        continue; /* a kernel without it cannot need it */
      if (cap_get_flag (caps, required[i], CAP_EFFECTIVE, &have) < 0)
        return sbx_error_errno (err, errno, "%s: read this process's capabilities", what);
      if (have == CAP_SET)
        continue;
      _cleanup_free_ char *name = cap_upper_name (required[i]);
      char *more = xasprintf ("%s%s%s", missing ? missing : "", missing ? ", " : "", name);
      free (missing);
      missing = more;
    }
  if (missing == NULL)
    return 0;
  return sbx_error_set (err, SBX_E_PERMISSION_DENIED, 0, "%s: sbx needs %s, which this process lacks (run as root)",
                        what, missing);
}

unsigned long long
sbx_caps_monitor_mask (void)
{
  unsigned long long mask = 0;
  for (size_t i = 0; i < N_OF (monitor_keeps); i++)
    mask |= 1ULL << monitor_keeps[i];
  return mask;
}

int
sbx_caps_drop_monitor (sbx_error **err)
{
  unsigned long long keep = sbx_caps_monitor_mask ();

  /* The bounding set first: it needs CAP_SETPCAP in the effective set, and
   * bounds what the runtime commands run from now on get. */
  for (cap_value_t c = 0; c < (cap_value_t) cap_max_bits () && c < 64; c++)
    if (!(keep & (1ULL << c)) && CAP_IS_SUPPORTED (c) && cap_drop_bound (c) < 0)
      return sbx_error_errno (err, errno, "drop capability %d from the bounding set", (int) c);
  if (prctl (PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    return sbx_error_errno (err, errno, "clear the ambient capabilities");

  _cleanup_cap_ cap_t caps = cap_get_proc ();
  if (caps == NULL)
    return sbx_error_errno (err, errno, "read the monitor's capabilities");
  cap_value_t drop[64];
  int n = 0;
  for (cap_value_t c = 0; c < (cap_value_t) cap_max_bits () && c < 64; c++)
    if (!(keep & (1ULL << c)))
      drop[n++] = c;
  if (n > 0
      && (cap_set_flag (caps, CAP_EFFECTIVE, n, drop, CAP_CLEAR) < 0
          || cap_set_flag (caps, CAP_PERMITTED, n, drop, CAP_CLEAR) < 0
          || cap_set_flag (caps, CAP_INHERITABLE, n, drop, CAP_CLEAR) < 0 || cap_set_proc (caps) < 0))
    return sbx_error_errno (err, errno, "drop the monitor's capabilities");
  return 0;
}
