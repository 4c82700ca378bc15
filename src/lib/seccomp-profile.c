/* The default seccomp profile, as one table.
 *
 * The base is the container ecosystem's default profile (moby's
 * profiles/seccomp/default.json, containerd's contrib/seccomp): an allow-list
 * for a process that holds the default capability set, so of moby's
 * capability-conditional extras only chroot (CAP_SYS_CHROOT) applies. On top
 * of it comes what moby leaves to AppArmor, which sbx does not have:
 *
 * - Only the native 64-bit ABI is in `architectures`. Under runc a 32-bit
 *   (`int $0x80`) or x32 syscall does not match the filter's architecture
 *   and gets the bad-architecture action, SIGSYS (runc 1.1.5 uses
 *   kill-thread and cannot be told otherwise), so socketcall and every other
 *   32-bit entry point are closed, not merely filtered. gVisor has no 32-bit
 *   ABI: it runs `int $0x80` as the 64-bit syscall of that number, filtered
 *   as such.
 * - io_uring, keyring, userfaultfd, bpf, perf, kexec, module, mount-API,
 *   unshare, setns and ptrace calls are denied by name (EPERM); clone is
 *   allowed only without CLONE_NEW* flags; clone3, whose flags sit in memory
 *   a filter cannot read, answers ENOSYS so that libc falls back to clone;
 *   socket refuses AF_ALG and AF_VSOCK.
 *
 * Two rules shape the table. OCI runtimes OR several conditions on one
 * argument (runc's legacy behaviour, copied by runsc) where libseccomp ANDs
 * them, so a rule carries at most one condition and alternatives are separate
 * rules. And comparisons are 64-bit while the kernel reads an int argument's
 * low 32 bits, so a condition that allows must pin the upper half too: EQ or
 * LT on small values, or a mask over bits the kernel reads, never NE or GT
 * (`socket (0x100000000 | AF_ALG, ...)` is "not AF_ALG" to a 64-bit NE). */
#include "config.h"
#include "seccomp-profile.h"
#include <seccomp.h>
#include "json.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DEFAULT_ERRNO EPERM
#define DEFAULT_ACTION SCMP_ACT_ERRNO (DEFAULT_ERRNO)

/* Every flag that makes clone(2) create a namespace. CLONE_NEWTIME (0x80)
 * cannot be passed to clone: those bits are its exit signal. */
#define CLONE_NEW_FLAGS \
  (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

typedef struct sc_cond {
  unsigned int index;
  enum scmp_compare op;
  uint64_t value;     /* the mask, for SCMP_CMP_MASKED_EQ */
  uint64_t value_two; /* the datum, for SCMP_CMP_MASKED_EQ */
} sc_cond;

typedef struct sc_rule {
  const char *const *names; /* NULL-terminated */
  uint32_t action;          /* SCMP_ACT_ALLOW, SCMP_ACT_ERRNO (e) or SCMP_ACT_TRACE (e) */
  bool has_cond;
  sc_cond cond;
} sc_rule;

/* moby's allow-list for the 64-bit ABIs, less io_uring, socket (below) and
 * the names that exist only on 32-bit ABIs; plus chroot (CAP_SYS_CHROOT is in
 * the default set) and the syscalls Linux added after that list (fchmodat2,
 * cachestat, futex2, map_shadow_stack), as harmless as their elders: denied,
 * they would answer EPERM where libc falls back to older calls only on
 * ENOSYS. Names of the other 64-bit architecture (open on aarch64) are
 * skipped, and so is pselect, runsc's own name for pselect6 (below). */
static const char *const allowed[] = {
  "accept",
  "accept4",
  "access",
  "adjtimex",
  "alarm",
  "arch_prctl",
  "bind",
  "brk",
  "cachestat",
  "capget",
  "capset",
  "chdir",
  "chmod",
  "chown",
  "chroot",
  "clock_adjtime",
  "clock_getres",
  "clock_gettime",
  "clock_nanosleep",
  "close",
  "close_range",
  "connect",
  "copy_file_range",
  "creat",
  "dup",
  "dup2",
  "dup3",
  "epoll_create",
  "epoll_create1",
  "epoll_ctl",
  "epoll_ctl_old",
  "epoll_pwait",
  "epoll_pwait2",
  "epoll_wait",
  "epoll_wait_old",
  "eventfd",
  "eventfd2",
  "execve",
  "execveat",
  "exit",
  "exit_group",
  "faccessat",
  "faccessat2",
  "fadvise64",
  "fallocate",
  "fanotify_mark",
  "fchdir",
  "fchmod",
  "fchmodat",
  "fchmodat2",
  "fchown",
  "fchownat",
  "fcntl",
  "fdatasync",
  "fgetxattr",
  "flistxattr",
  "flock",
  "fork",
  "fremovexattr",
  "fsetxattr",
  "fstat",
  "fstatfs",
  "fsync",
  "ftruncate",
  "futex",
  "futex_requeue",
  "futex_wait",
  "futex_waitv",
  "futex_wake",
  "futimesat",
  "getcpu",
  "getcwd",
  "getdents",
  "getdents64",
  "getegid",
  "geteuid",
  "getgid",
  "getgroups",
  "getitimer",
  "getpeername",
  "getpgid",
  "getpgrp",
  "getpid",
  "getppid",
  "getpriority",
  "getrandom",
  "getresgid",
  "getresuid",
  "getrlimit",
  "get_robust_list",
  "getrusage",
  "getsid",
  "getsockname",
  "getsockopt",
  "get_thread_area",
  "gettid",
  "gettimeofday",
  "getuid",
  "getxattr",
  "inotify_add_watch",
  "inotify_init",
  "inotify_init1",
  "inotify_rm_watch",
  "io_cancel",
  "ioctl",
  "io_destroy",
  "io_getevents",
  "io_pgetevents",
  "ioprio_get",
  "ioprio_set",
  "io_setup",
  "io_submit",
  "kill",
  "landlock_add_rule",
  "landlock_create_ruleset",
  "landlock_restrict_self",
  "lchown",
  "lgetxattr",
  "link",
  "linkat",
  "listen",
  "listxattr",
  "llistxattr",
  "lremovexattr",
  "lseek",
  "lsetxattr",
  "lstat",
  "madvise",
  "map_shadow_stack",
  "membarrier",
  "memfd_create",
  "memfd_secret",
  "mincore",
  "mkdir",
  "mkdirat",
  "mknod",
  "mknodat",
  "mlock",
  "mlock2",
  "mlockall",
  "mmap",
  "modify_ldt",
  "mprotect",
  "mq_getsetattr",
  "mq_notify",
  "mq_open",
  "mq_timedreceive",
  "mq_timedsend",
  "mq_unlink",
  "mremap",
  "msgctl",
  "msgget",
  "msgrcv",
  "msgsnd",
  "msync",
  "munlock",
  "munlockall",
  "munmap",
  "name_to_handle_at",
  "nanosleep",
  "newfstatat",
  "open",
  "openat",
  "openat2",
  "pause",
  "pidfd_open",
  "pidfd_send_signal",
  "pipe",
  "pipe2",
  "pkey_alloc",
  "pkey_free",
  "pkey_mprotect",
  "poll",
  "ppoll",
  "prctl",
  "pread64",
  "preadv",
  "preadv2",
  "prlimit64",
  "process_mrelease",
  "pselect",
  "pselect6",
  "pwrite64",
  "pwritev",
  "pwritev2",
  "read",
  "readahead",
  "readlink",
  "readlinkat",
  "readv",
  "recvfrom",
  "recvmmsg",
  "recvmsg",
  "remap_file_pages",
  "removexattr",
  "rename",
  "renameat",
  "renameat2",
  "restart_syscall",
  "rmdir",
  "rseq",
  "rt_sigaction",
  "rt_sigpending",
  "rt_sigprocmask",
  "rt_sigqueueinfo",
  "rt_sigreturn",
  "rt_sigsuspend",
  "rt_sigtimedwait",
  "rt_tgsigqueueinfo",
  "sched_getaffinity",
  "sched_getattr",
  "sched_getparam",
  "sched_get_priority_max",
  "sched_get_priority_min",
  "sched_getscheduler",
  "sched_rr_get_interval",
  "sched_setaffinity",
  "sched_setattr",
  "sched_setparam",
  "sched_setscheduler",
  "sched_yield",
  "seccomp",
  "select",
  "semctl",
  "semget",
  "semop",
  "semtimedop",
  "sendfile",
  "sendmmsg",
  "sendmsg",
  "sendto",
  "setfsgid",
  "setfsuid",
  "setgid",
  "setgroups",
  "setitimer",
  "setpgid",
  "setpriority",
  "setregid",
  "setresgid",
  "setresuid",
  "setreuid",
  "setrlimit",
  "set_robust_list",
  "setsid",
  "setsockopt",
  "set_thread_area",
  "set_tid_address",
  "setuid",
  "setxattr",
  "shmat",
  "shmctl",
  "shmdt",
  "shmget",
  "shutdown",
  "sigaltstack",
  "signalfd",
  "signalfd4",
  "socketpair",
  "splice",
  "stat",
  "statfs",
  "statx",
  "symlink",
  "symlinkat",
  "sync",
  "sync_file_range",
  "syncfs",
  "sysinfo",
  "tee",
  "tgkill",
  "time",
  "timer_create",
  "timer_delete",
  "timer_getoverrun",
  "timer_gettime",
  "timer_settime",
  "timerfd_create",
  "timerfd_gettime",
  "timerfd_settime",
  "times",
  "tkill",
  "truncate",
  "umask",
  "uname",
  "unlink",
  "unlinkat",
  "utime",
  "utimensat",
  "utimes",
  "vfork",
  "vmsplice",
  "wait4",
  "waitid",
  "write",
  "writev",
  NULL,
};

/* Denied by name although the default action would deny them too: the list
 * says what sbx refuses on purpose, and what `sbx info` and the tests check.
 * socketcall exists only on 32-bit ABIs, closed as a whole above. */
static const char *const denied[] = {
  "socketcall",
  "io_uring_setup",
  "io_uring_enter",
  "io_uring_register",
  "keyctl",
  "add_key",
  "request_key",
  "userfaultfd",
  "bpf",
  "perf_event_open",
  "kexec_load",
  "kexec_file_load",
  "init_module",
  "finit_module",
  "delete_module",
  "mount",
  "umount2",
  "pivot_root",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "move_mount",
  "open_tree",
  "mount_setattr",
  "unshare",
  "setns",
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "open_by_handle_at",
  NULL,
};

/* Names a libseccomp older than the kernel may not know (configure accepts
 * 2.5.0): skipped then, as runc and runsc skip them, instead of failing. */
static const char *const recent[] = {
  "cachestat",
  "close_range",
  "epoll_pwait2",
  "faccessat2",
  "fchmodat2",
  "futex_requeue",
  "futex_wait",
  "futex_waitv",
  "futex_wake",
  "landlock_add_rule",
  "landlock_create_ruleset",
  "landlock_restrict_self",
  "map_shadow_stack",
  "memfd_secret",
  "mount_setattr",
  "process_mrelease",
  NULL,
};

/* Names runsc (release 2022-12-19) looks up in its own syscall table where
 * that table differs from the kernel's. It ignores a name it does not know,
 * and glibc's select() calls pselect6: without its alias every select() in
 * the sandbox would fail EPERM. libseccomp knows none of these. */
static const char *const runsc_names[] = { "pselect", NULL };

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define ALLOW_IF(name, idx, op, v, v2)                     \
  {                                                        \
    NAMES (name), SCMP_ACT_ALLOW, true, { idx, op, v, v2 } \
  }

/* The rules both profiles share after the allow-list: personality, socket,
 * clone3. */
#define COMMON_RULES                                                                                      \
  /* personality: the query and the personas moby allows, nothing else. */                                \
  ALLOW_IF ("personality", 0, SCMP_CMP_EQ, 0x0, 0),         /* PER_LINUX */                               \
      ALLOW_IF ("personality", 0, SCMP_CMP_EQ, 0x8, 0),     /* PER_LINUX32 */                             \
      ALLOW_IF ("personality", 0, SCMP_CMP_EQ, 0x20000, 0), /* UNAME26 */                                 \
      ALLOW_IF ("personality", 0, SCMP_CMP_EQ, 0x20008, 0), /* | PER_LINUX32 */                           \
      ALLOW_IF ("personality", 0, SCMP_CMP_EQ, 0xffffffff, 0),                                            \
      /* query */ /* socket: every family below AF_ALG, and the others Linux has but                      \
                   * AF_VSOCK. A family Linux adds later gets EPERM until it is listed. */                \
      ALLOW_IF ("socket", 0, SCMP_CMP_LT, AF_ALG, 0), ALLOW_IF ("socket", 0, SCMP_CMP_EQ, AF_NFC, 0),     \
      ALLOW_IF ("socket", 0, SCMP_CMP_EQ, AF_KCM, 0), ALLOW_IF ("socket", 0, SCMP_CMP_EQ, AF_QIPCRTR, 0), \
      ALLOW_IF ("socket", 0, SCMP_CMP_EQ, AF_SMC, 0), ALLOW_IF ("socket", 0, SCMP_CMP_EQ, AF_XDP, 0),     \
      ALLOW_IF ("socket", 0, SCMP_CMP_EQ, AF_MCTP, 0), CLONE3_RULE

/* clone3 keeps its flags in memory a filter cannot read, so it must
 * answer ENOSYS, on which libc falls back to clone. SCMP_ACT_ERRNO (ENOSYS)
 * would say so plainly, but runsc 2022-12-19 ignores errnoRet and answers
 * EPERM, on which glibc's pthread_create fails. SCMP_ACT_TRACE answers
 * ENOSYS in both runtimes when no tracer listens, and none can: ptrace is
 * denied inside, and outside only root could attach. */
#define CLONE3_RULE                                         \
  {                                                         \
    NAMES ("clone3"), SCMP_ACT_TRACE (ENOSYS), false, { 0 } \
  }

static const sc_rule rules[] = {
  { allowed, SCMP_ACT_ALLOW, false, { 0 } },
  /* clone unless it asks for a namespace: the kernel reads the low 32 bits. */
  ALLOW_IF ("clone", 0, SCMP_CMP_MASKED_EQ, CLONE_NEW_FLAGS, 0),
  COMMON_RULES,
  { denied, SCMP_ACT_ERRNO (EPERM), false, { 0 } },
};

/* --docker (runc only, docker.c): what dockerd and the runc it drives need
 * to make containers, and nothing else more. Namespaces but a user
 * namespace (clone, unshare), setns, the classic mount calls and
 * pivot_root are allowed; the keyring calls answer ENOSYS, on which runc
 * goes on without a session keyring of its own (EPERM would fail it); the
 * rest of `denied` stays denied. */
static const char *const denied_docker[] = {
  "socketcall",
  "io_uring_setup",
  "io_uring_enter",
  "io_uring_register",
  "userfaultfd",
  "bpf",
  "perf_event_open",
  "kexec_load",
  "kexec_file_load",
  "init_module",
  "finit_module",
  "delete_module",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "move_mount",
  "open_tree",
  "mount_setattr",
  "ptrace",
  "process_vm_readv",
  "process_vm_writev",
  "open_by_handle_at",
  NULL,
};

static const sc_rule docker_rules[] = {
  { allowed, SCMP_ACT_ALLOW, false, { 0 } },
  ALLOW_IF ("clone", 0, SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, 0),
  ALLOW_IF ("unshare", 0, SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, 0),
  { NAMES ("mount", "umount2", "pivot_root", "setns", "sethostname", "setdomainname"), SCMP_ACT_ALLOW, false, { 0 } },
  { NAMES ("keyctl", "add_key", "request_key"), SCMP_ACT_TRACE (ENOSYS), false, { 0 } },
  COMMON_RULES,
  { denied_docker, SCMP_ACT_ERRNO (EPERM), false, { 0 } },
};

typedef struct sc_table {
  const sc_rule *rules;
  size_t n;
} sc_table;

static sc_table
table_of (sbx_seccomp_kind kind)
{
  if (kind == SBX_SECCOMP_DOCKER)
    return (sc_table){ docker_rules, ARRAY_SIZE (docker_rules) };
  return (sc_table){ rules, ARRAY_SIZE (rules) };
}

static const struct {
  uint32_t scmp;
  const char *oci;
} known_arches[] = {
  { SCMP_ARCH_X86_64, "SCMP_ARCH_X86_64" },
  { SCMP_ARCH_AARCH64, "SCMP_ARCH_AARCH64" },
};

static inline void
seccomp_releasep (scmp_filter_ctx *ctx)
{
  if (*ctx)
    seccomp_release (*ctx);
}
#define _cleanup_seccomp_ __attribute__ ((cleanup (seccomp_releasep)))

static bool
strv_has (const char *const *v, const char *s)
{
  for (; *v; v++)
    if (strcmp (*v, s) == 0)
      return true;
  return false;
}

/* The OCI name of ACTION, whose low 16 bits are its errnoRet if it has one. */
static const char *
action_name (uint32_t action, bool *ret_has_errno)
{
  *ret_has_errno = true;
  if ((action & ~0xffffU) == (uint32_t) SCMP_ACT_ERRNO (0))
    return "SCMP_ACT_ERRNO";
  if ((action & ~0xffffU) == (uint32_t) SCMP_ACT_TRACE (0))
    return "SCMP_ACT_TRACE";
  if (action != SCMP_ACT_ALLOW)
    abort ();
  *ret_has_errno = false;
  return "SCMP_ACT_ALLOW";
}

/* The table speaks for x86_64 and aarch64 only: clone's argument order, the
 * socket families and the 32-bit story differ elsewhere. */
static int
native_arch (const char **ret_name, sbx_error **err)
{
  uint32_t arch = seccomp_arch_native ();
  for (size_t i = 0; i < ARRAY_SIZE (known_arches); i++)
    if (known_arches[i].scmp == arch)
      {
        if (ret_name)
          *ret_name = known_arches[i].oci;
        return 0;
      }
  return sbx_error_set (err, SBX_E_INTERNAL, 0, "no seccomp profile for this architecture (%#x)", arch);
}

static const char *
op_name (enum scmp_compare op)
{
  switch (op)
    {
    case SCMP_CMP_NE:
      return "SCMP_CMP_NE";
    case SCMP_CMP_LT:
      return "SCMP_CMP_LT";
    case SCMP_CMP_LE:
      return "SCMP_CMP_LE";
    case SCMP_CMP_EQ:
      return "SCMP_CMP_EQ";
    case SCMP_CMP_GE:
      return "SCMP_CMP_GE";
    case SCMP_CMP_GT:
      return "SCMP_CMP_GT";
    case SCMP_CMP_MASKED_EQ:
      return "SCMP_CMP_MASKED_EQ";
    default:
      abort ();
    }
}

static void
gen_cond (yajl_gen g, const sc_cond *c)
{
  j_map (g);
  j_kint (g, "index", c->index);
  j_kint (g, "value", (long long) c->value);
  j_kint (g, "valueTwo", (long long) c->value_two);
  j_kstr (g, "op", op_name (c->op));
  j_endmap (g);
}

static void
gen_rule (yajl_gen g, const sc_rule *r)
{
  j_map (g);
  bool has_errno;
  j_kstrv (g, "names", (char *const *) r->names);
  j_kstr (g, "action", action_name (r->action, &has_errno));
  if (has_errno)
    j_kint (g, "errnoRet", r->action & 0xffffU);
  if (r->has_cond)
    {
      j_str (g, "args");
      j_arr (g);
      gen_cond (g, &r->cond);
      j_endarr (g);
    }
  j_endmap (g);
}

int
sbx_seccomp_gen_oci (yajl_gen g, sbx_error **err)
{
  const char *arch = NULL;
  if (native_arch (&arch, err) < 0)
    return -1;
  j_map (g);
  j_kstr (g, "defaultAction", "SCMP_ACT_ERRNO");
  j_kint (g, "defaultErrnoRet", DEFAULT_ERRNO);
  j_str (g, "architectures");
  j_arr (g);
  j_str (g, arch);
  j_endarr (g);
  j_str (g, "syscalls");
  j_arr (g);
  for (size_t i = 0; i < ARRAY_SIZE (rules); i++)
    gen_rule (g, &rules[i]);
  j_endarr (g);
  j_endmap (g);
  return 0;
}

/* Two rules may name one syscall only if both allow it on a condition: an
 * unconditional rule would swallow the other, two actions contradict. */
static bool
rules_compatible (const sc_rule *a, const sc_rule *b)
{
  return a != b && a->has_cond && b->has_cond && a->action == b->action;
}

static int
check_name_once (sc_table t, size_t rule, const char *const *name, sbx_error **err)
{
  for (size_t k = rule; k < t.n; k++)
    for (const char *const *n = k == rule ? name + 1 : t.rules[k].names; *n; n++)
      if (strcmp (*n, *name) == 0 && !rules_compatible (&t.rules[rule], &t.rules[k]))
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "`%s` is in conflicting rules", *name);
  return 0;
}

static int
check_table (sc_table t, sbx_error **err)
{
  for (size_t i = 0; i < t.n; i++)
    {
      /* JSON integers are signed 64-bit. */
      if (t.rules[i].cond.value > INT64_MAX || t.rules[i].cond.value_two > INT64_MAX)
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "argument value out of range");
      for (const char *const *n = t.rules[i].names; *n; n++)
        if (check_name_once (t, i, n, err) < 0)
          return -1;
    }
  return 0;
}

/* 1 and *RET_NR: the syscall exists here. 0: knowingly skipped: another
 * architecture's syscall (libseccomp gives it a negative pseudo number), one
 * newer than libseccomp, or a runsc alias. Any other unknown name is a typo. */
static int
resolve (const char *name, int *ret_nr, sbx_error **err)
{
  int nr = seccomp_syscall_resolve_name (name);
  if (nr >= 0)
    {
      *ret_nr = nr;
      return 1;
    }
  if (nr != __NR_SCMP_ERROR || strv_has (recent, name) || strv_has (runsc_names, name))
    return 0;
  return sbx_error_set (err, SBX_E_INTERNAL, 0, "unknown syscall `%s`", name);
}

static int
add_rule (scmp_filter_ctx ctx, const sc_rule *r, int *max_nr, sbx_error **err)
{
  struct scmp_arg_cmp cmp = { r->cond.index, r->cond.op, r->cond.value, r->cond.value_two };
  for (const char *const *n = r->names; *n; n++)
    {
      int nr = 0;
      int rc = resolve (*n, &nr, err);
      if (rc < 0)
        return -1;
      if (rc == 1 && nr > *max_nr)
        *max_nr = nr;
      /* A rule that repeats the default: libseccomp refuses it, runc skips it. */
      if (rc == 0 || r->action == DEFAULT_ACTION)
        continue;
      rc = seccomp_rule_add_exact_array (ctx, r->action, nr, r->has_cond ? 1 : 0, &cmp);
      if (rc < 0)
        return sbx_error_set (err, SBX_E_INTERNAL, -rc, "seccomp rule for `%s`", *n);
    }
  return 0;
}

/* The bad-architecture action is runc's (libseccomp's default, which runc
 * keeps), so that a test that loads the profile sees what a sandbox sees. */
static int
build_filter (sbx_seccomp_kind kind, scmp_filter_ctx *ret_ctx, int *ret_max_nr, sbx_error **err)
{
  sc_table t = table_of (kind);
  if (native_arch (NULL, err) < 0 || check_table (t, err) < 0)
    return -1;
  _cleanup_seccomp_ scmp_filter_ctx ctx = seccomp_init (DEFAULT_ACTION);
  if (ctx == NULL)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "seccomp_init failed");
  int rc = seccomp_attr_set (ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_THREAD);
  if (rc == 0)
    rc = seccomp_attr_set (ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  if (rc < 0)
    return sbx_error_set (err, SBX_E_INTERNAL, -rc, "seccomp filter attributes");
  int max_nr = 0;
  for (size_t i = 0; i < t.n; i++)
    if (add_rule (ctx, &t.rules[i], &max_nr, err) < 0)
      return -1;
  if (ret_max_nr)
    *ret_max_nr = max_nr;
  *ret_ctx = steal_pointer (&ctx);
  return 0;
}

int
sbx_seccomp_check (sbx_error **err)
{
  _cleanup_free_ unsigned char *prog = NULL, *docker = NULL;
  size_t len = 0;
  if (sbx_seccomp_export (&prog, &len, err) < 0 || sbx_seccomp_export_kind (SBX_SECCOMP_DOCKER, &docker, &len, err) < 0)
    return sbx_error_wrap (err, "check seccomp profile");
  return 0;
}

/* The prelude: on the native architecture, a syscall number above every
 * number the profile names answers ENOSYS (a syscall newer than the profile:
 * libc falls back to an older one on ENOSYS, never on EPERM; runc does the
 * same). x32 numbers (bit 30) and other architectures go on to libseccomp's
 * program, which kills them. */
#define PRELUDE_LEN 6

static void
prelude (struct sock_filter *f, uint32_t arch, uint32_t max_nr)
{
  const struct sock_filter p[PRELUDE_LEN] = {
    BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, arch)),
    BPF_JUMP (BPF_JMP | BPF_JEQ | BPF_K, arch, 0, 4),
    BPF_STMT (BPF_LD | BPF_W | BPF_ABS, offsetof (struct seccomp_data, nr)),
    BPF_JUMP (BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 2, 0),
    BPF_JUMP (BPF_JMP | BPF_JGT | BPF_K, max_nr, 0, 1),
    BPF_STMT (BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
  };
  memcpy (f, p, sizeof p);
}

int
sbx_seccomp_export (unsigned char **ret, size_t *ret_len, sbx_error **err)
{
  return sbx_seccomp_export_kind (SBX_SECCOMP_DEFAULT, ret, ret_len, err);
}

int
sbx_seccomp_export_kind (sbx_seccomp_kind kind, unsigned char **ret, size_t *ret_len, sbx_error **err)
{
  _cleanup_seccomp_ scmp_filter_ctx ctx = NULL;
  int max_nr = 0;
  if (build_filter (kind, &ctx, &max_nr, err) < 0)
    return -1;
  _cleanup_close_ int fd = memfd_create ("sbx-seccomp", MFD_CLOEXEC);
  if (fd < 0)
    return sbx_error_errno (err, errno, "seccomp profile: memfd_create");
  int rc = seccomp_export_bpf (ctx, fd);
  if (rc < 0)
    return sbx_error_set (err, SBX_E_INTERNAL, -rc, "seccomp profile: export BPF");
  struct stat st;
  if (fstat (fd, &st) < 0)
    return sbx_error_errno (err, errno, "seccomp profile: fstat");
  size_t n = (size_t) st.st_size, insns = n / sizeof (struct sock_filter) + PRELUDE_LEN;
  if (n == 0 || n % sizeof (struct sock_filter) != 0 || insns > BPF_MAXINSNS)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "seccomp profile: BPF program of %zu bytes", n);
  _cleanup_free_ unsigned char *prog = xmalloc (insns * sizeof (struct sock_filter));
  prelude ((struct sock_filter *) prog, seccomp_arch_native (), (uint32_t) max_nr);
  if (pread (fd, prog + PRELUDE_LEN * sizeof (struct sock_filter), n, 0) != (ssize_t) n)
    return sbx_error_errno (err, errno ? errno : EIO, "seccomp profile: read BPF");
  *ret_len = insns * sizeof (struct sock_filter);
  *ret = steal_pointer (&prog);
  return 0;
}

int
sbx_seccomp_load (sbx_error **err)
{
  _cleanup_free_ unsigned char *prog = NULL;
  size_t len = 0;
  if (sbx_seccomp_export (&prog, &len, err) < 0)
    return sbx_error_wrap (err, "load seccomp profile");
  struct sock_fprog fp = { .len = (unsigned short) (len / sizeof (struct sock_filter)),
                           .filter = (struct sock_filter *) prog };
  if (syscall (SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp) < 0)
    return sbx_error_errno (err, errno, "load seccomp profile");
  return 0;
}
