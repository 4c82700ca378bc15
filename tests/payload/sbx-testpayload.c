/* sbx-testpayload: the hostile workload the integration tests run inside
 * sandboxes, one static multi-call binary in the manner of crun's
 * tests/init.c, so that no test depends on what an image happens to carry.
 *
 *   sbx-testpayload ACTION [ARGS...]
 *
 * A probe action (mount, keyctl, caps, ...) tries one thing and prints, after
 * any data lines, one last line: `ACTION: ok` and exit 0 when the thing
 * worked, or `ACTION: denied (ENAME / strerror)` and exit 1 when it did not
 * (with ` at STEP` when the action has several steps, and SIGNAME in place of
 * ENAME when a call killed the process that made it). A plumbing action
 * (echo, cat, hostname, sleep, exit) prints only its data, so that a test can
 * compare it byte for byte; it reports a failure as `ACTION: failed (...)` on
 * stderr, exit 1. A usage error exits 2.
 *
 * Build: gcc -static -o sbx-testpayload tests/payload/sbx-testpayload.c
 * It needs libc only and links nothing of sbx. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif

#define MIB (1024UL * 1024UL)
#define MEMHOG_STEP_MIB 16
/* An exit status no errno has: the 32-bit call was not a socketcall. */
#define NOT_SOCKETCALL 255

static const char *action_name = "sbx-testpayload";

/* ---- reporting ---- */

static const char *
errno_name (int e)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 32)
  const char *n = strerrorname_np (e);
  if (n)
    return n;
#endif
  static char buf[32];
  snprintf (buf, sizeof buf, "errno %d", e);
  return buf;
}

static int
ok (void)
{
  printf ("%s: ok\n", action_name);
  return 0;
}

static int
denied_at (const char *step, int e)
{
  printf ("%s: denied (%s / %s)%s%s\n", action_name, errno_name (e), strerror (e), step ? " at " : "",
          step ? step : "");
  return 1;
}

static int
denied (int e)
{
  return denied_at (NULL, e);
}

static int
killed (int sig)
{
  const char *abbrev = sigabbrev_np (sig);
  printf ("%s: denied (SIG%s / killed: %s)\n", action_name, abbrev ? abbrev : "?", strsignal (sig));
  return 1;
}

/* Plumbing actions keep stdout for their data. */
static int
failed (int e)
{
  fprintf (stderr, "%s: failed (%s / %s)\n", action_name, errno_name (e), strerror (e));
  return 1;
}

/* Reports a call's result: R < 0 means it failed with errno. */
static int
report (long r)
{
  return r < 0 ? denied (errno) : ok ();
}

static int
report_fd (long fd)
{
  if (fd < 0)
    return denied (errno);
  close ((int) fd);
  return ok ();
}

static int
parse_long (const char *s, long min, long max, long *ret)
{
  char *end;
  errno = 0;
  long v = strtol (s, &end, 10);
  if (errno || end == s || *end || v < min || v > max)
    return -1;
  *ret = v;
  return 0;
}

static int
write_all (int fd, const char *p, size_t len)
{
  while (len > 0)
    {
      ssize_t w = write (fd, p, len);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0)
        return -1;
      p += w;
      len -= (size_t) w;
    }
  return 0;
}

/* Runs FN in a child without core dumps: a call the kernel answers by killing
 * (seccomp's bad-architecture action) must not take the reporter with it.
 * Returns the child's wait status, or -1. */
static int
in_child (int (*fn) (void))
{
  pid_t pid = fork ();
  if (pid < 0)
    return -1;
  if (pid == 0)
    {
      struct rlimit no_core = { 0, 0 };
      setrlimit (RLIMIT_CORE, &no_core);
      _exit (fn () & 0xff);
    }
  int status;
  while (waitpid (pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return status;
}

/* The child's FN returns 0, an errno, or NOT_SOCKETCALL. */
static int
report_child (int (*fn) (void))
{
  int status = in_child (fn);
  if (status < 0)
    return denied_at ("fork", errno);
  if (WIFSIGNALED (status))
    return killed (WTERMSIG (status));
  if (WEXITSTATUS (status) == NOT_SOCKETCALL)
    return denied_at ("int $0x80: no 32-bit syscall ran", ENOSYS);
  return WEXITSTATUS (status) ? denied (WEXITSTATUS (status)) : ok ();
}

/* ---- probes: privilege and kernel surface ---- */

static int
act_mount (char **argv)
{
  if (mkdir ("/mnt", 0755) < 0 && errno != EEXIST)
    return denied_at ("mkdir /mnt", errno);
  if (mount ("tmpfs", "/mnt", "tmpfs", 0, "size=1m") < 0)
    return denied (errno);
  umount2 ("/mnt", MNT_DETACH);
  return ok ();
}

static int
act_unshare_user (char **argv)
{
  return report (unshare (CLONE_NEWUSER));
}

static int
act_unshare_net (char **argv)
{
  return report (unshare (CLONE_NEWNET));
}

static int
act_unshare_mount (char **argv)
{
  return report (unshare (CLONE_NEWNS));
}

static int
act_keyctl (char **argv)
{
  return report (syscall (SYS_add_key, "user", "sbx-testpayload", "x", 1, KEY_SPEC_PROCESS_KEYRING));
}

static int
act_bpf (char **argv)
{
  union bpf_attr attr;
  memset (&attr, 0, sizeof attr);
  attr.map_type = BPF_MAP_TYPE_ARRAY;
  attr.key_size = 4;
  attr.value_size = 4;
  attr.max_entries = 1;
  return report_fd (syscall (SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr));
}

static int
act_io_uring (char **argv)
{
  struct io_uring_params p;
  memset (&p, 0, sizeof p);
  return report_fd (syscall (SYS_io_uring_setup, 1, &p));
}

static int
act_af_alg (char **argv)
{
  return report_fd (socket (AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
}

static int
act_af_vsock (char **argv)
{
  return report_fd (socket (AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
}

#if defined(__x86_64__)
/* socketcall (SYS_SOCKET, {family, type, 0}) through the 32-bit entry point,
 * `int $0x80` from this 64-bit binary. The 32-bit ABI reads the argument
 * block through a 32-bit pointer, so it must sit below 4 GiB. Returns 0 when
 * a socket of FAMILY came back, an errno, or NOT_SOCKETCALL when something
 * else answered: gVisor has no 32-bit ABI and runs the call as 64-bit
 * syscall 102, getuid. */
static int
socketcall32 (int family, int type)
{
  uint32_t *args = mmap (NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
  if (args == MAP_FAILED)
    return errno;
  args[0] = (uint32_t) family;
  args[1] = (uint32_t) type;
  args[2] = 0;
  long ret = 102; /* __NR_socketcall on i386; SYS_SOCKET is 1 */
  __asm__ volatile("int $0x80" : "+a"(ret) : "b"(1L), "c"((long) (uintptr_t) args) : "memory");
  if (ret < 0)
    return (int) -ret;
  int domain = -1;
  socklen_t len = sizeof domain;
  if (ret > INT_MAX || getsockopt ((int) ret, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 || domain != family)
    return NOT_SOCKETCALL;
  return 0;
}

static int
socketcall32_af_alg (void)
{
  return socketcall32 (AF_ALG, SOCK_SEQPACKET);
}

static int
socketcall32_af_inet (void)
{
  return socketcall32 (AF_INET, SOCK_DGRAM);
}

static int
act_af_alg_socketcall (char **argv)
{
  return report_child (socketcall32_af_alg);
}

/* AF_ALG may be missing from a kernel; AF_INET never is, so this shows
 * whether the 32-bit path is open at all. */
static int
act_inet_socketcall (char **argv)
{
  return report_child (socketcall32_af_inet);
}
#else
static int
act_af_alg_socketcall (char **argv)
{
  return denied_at ("not x86_64", ENOSYS);
}

static int
act_inet_socketcall (char **argv)
{
  return denied_at ("not x86_64", ENOSYS);
}
#endif

static int
act_ptrace_pid1 (char **argv)
{
  if (ptrace (PTRACE_ATTACH, 1, NULL, NULL) < 0)
    return denied (errno);
  waitpid (1, NULL, __WALL);
  ptrace (PTRACE_DETACH, 1, NULL, NULL);
  return ok ();
}

/* The VER0 layout of struct clone_args. */
struct payload_clone_args {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static int
act_clone3 (char **argv)
{
  struct payload_clone_args args = { .exit_signal = SIGCHLD };
  long pid = syscall (SYS_clone3, &args, sizeof args);
  if (pid == 0)
    _exit (0);
  if (pid < 0)
    return denied (errno);
  waitpid ((pid_t) pid, NULL, 0);
  return ok ();
}

/* syslog(SYSLOG_ACTION_SIZE_BUFFER): gVisor implements it, the profile
 * names it nowhere (EPERM by default), so under runsc it tells whether the
 * profile is loaded at all. */
static int
act_syslog (char **argv)
{
  (void) argv;
  long r = syscall (SYS_syslog, 10, NULL, 0);
  return r < 0 ? denied (errno) : ok ();
}

/* A syscall number above every one the profile names (a syscall newer than
 * it): ENOSYS, on which libc falls back. */
static int
act_nosys (char **argv)
{
  (void) argv;
  long r = syscall (1000L, 0, 0, 0);
  return r < 0 ? denied (errno) : ok ();
}

static int
act_setns (char **argv)
{
  int fd = open ("/proc/1/ns/net", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return denied_at ("open /proc/1/ns/net", errno);
  int r = setns (fd, CLONE_NEWNET);
  int e = errno;
  close (fd);
  return r < 0 ? denied_at ("setns", e) : ok ();
}

/* ---- probes: files and devices ---- */

/* Leaves the node in place: the tests also check what the host side does
 * with a device planted in the sandbox's root. */
static int
act_mknod_open (char **argv)
{
  char c;
  if (mknod (argv[0], S_IFCHR | 0600, makedev (1, 1)) < 0)
    return denied_at ("mknod", errno);
  int fd = open (argv[0], O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return denied_at ("open", errno);
  ssize_t n = read (fd, &c, 1);
  int e = errno;
  close (fd);
  if (n < 0)
    return denied_at ("read", e);
  return ok ();
}

static int
act_write (char **argv)
{
  int fd = open (argv[0], O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return denied_at ("open", errno);
  int r = write_all (fd, argv[1], strlen (argv[1]));
  int e = errno;
  if (close (fd) < 0 && r == 0)
    return denied_at ("close", errno);
  return r < 0 ? denied_at ("write", e) : ok ();
}

static int
act_read (char **argv)
{
  char *line = NULL;
  size_t cap = 0;
  FILE *f = fopen (argv[0], "re");
  if (f == NULL)
    return denied_at ("open", errno);
  errno = 0;
  ssize_t n = getline (&line, &cap, f);
  int e = errno;
  fclose (f);
  if (n < 0 && e)
    {
      free (line);
      return denied_at ("read", e);
    }
  printf ("%s%s", n > 0 ? line : "", n > 0 && line[n - 1] == '\n' ? "" : "\n");
  free (line);
  return ok ();
}

/* mkdir x; chroot x; the cwd is now outside the root, so `..` climbs past
 * it; chroot . at the top and look for a path only the host has. */
static int
act_chroot_escape (char **argv)
{
  char dir[] = "/tmp/sbx-escape-XXXXXX";
  if (mkdtemp (dir) == NULL)
    return denied_at ("mkdtemp", errno);
  if (chroot (dir) < 0)
    {
      int e = errno;
      rmdir (dir);
      return denied_at ("chroot", e);
    }
  for (int i = 0; i < 256; i++)
    if (chdir ("..") < 0)
      return denied_at ("chdir ..", errno);
  if (chroot (".") < 0)
    return denied_at ("chroot .", errno);
  rmdir (dir);
  struct stat st;
  if (stat (argv[0], &st) < 0)
    return denied_at ("stat", errno);
  printf ("escaped: %s is visible\n", argv[0]);
  return ok ();
}

/* ---- probes: what the process was given ---- */

static int
act_caps (char **argv)
{
  static const char *const keys[] = { "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:" };
  char line[512];
  FILE *f = fopen ("/proc/self/status", "re");
  if (f == NULL)
    return denied_at ("open /proc/self/status", errno);
  while (fgets (line, sizeof line, f))
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
      if (strncmp (line, keys[i], strlen (keys[i])) == 0)
        fputs (line, stdout);
  fclose (f);
  return ok ();
}

static int
act_fds (char **argv)
{
  DIR *d = opendir ("/proc/self/fd");
  if (d == NULL)
    return denied_at ("open /proc/self/fd", errno);
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      long fd;
      char path[64], target[PATH_MAX];
      if (parse_long (de->d_name, 0, INT_MAX, &fd) < 0 || fd <= 2 || fd == dirfd (d))
        continue;
      snprintf (path, sizeof path, "/proc/self/fd/%ld", fd);
      ssize_t n = readlink (path, target, sizeof target - 1);
      target[n < 0 ? 0 : n] = '\0';
      printf ("fd %ld -> %s\n", fd, n < 0 ? "?" : target);
    }
  closedir (d);
  return ok ();
}

static void
print_rlim (const char *what, rlim_t v)
{
  if (v == RLIM_INFINITY)
    printf ("%s: unlimited\n", what);
  else
    printf ("%s: %llu\n", what, (unsigned long long) v);
}

static int
act_rlimit_nofile (char **argv)
{
  struct rlimit rl;
  if (getrlimit (RLIMIT_NOFILE, &rl) < 0)
    return denied (errno);
  print_rlim ("soft", rl.rlim_cur);
  print_rlim ("hard", rl.rlim_max);
  return ok ();
}

/* ---- probes: limits ---- */

static void
reap_all (const pid_t *pids, long n)
{
  for (long i = 0; i < n; i++)
    kill (pids[i], SIGKILL);
  for (long i = 0; i < n; i++)
    waitpid (pids[i], NULL, 0);
}

static int
act_forkbomb (char **argv)
{
  long n, done = 0;
  int e = 0;
  if (parse_long (argv[0], 1, 1000000, &n) < 0)
    return 2;
  pid_t *pids = calloc ((size_t) n, sizeof *pids);
  if (pids == NULL)
    return denied_at ("calloc", ENOMEM);
  for (; done < n; done++)
    {
      pid_t pid = fork ();
      if (pid < 0)
        {
          e = errno;
          break;
        }
      if (pid == 0)
        {
          prctl (PR_SET_PDEATHSIG, SIGKILL);
          for (;;)
            pause ();
        }
      pids[done] = pid;
    }
  printf ("forked: %ld of %ld\n", done, n);
  reap_all (pids, done);
  free (pids);
  return done == n ? ok () : denied_at ("fork", e);
}

static int
act_memhog (char **argv)
{
  long mib, done = 0;
  if (parse_long (argv[0], 1, 1L << 24, &mib) < 0)
    return 2;
  while (done < mib)
    {
      long step = mib - done < MEMHOG_STEP_MIB ? mib - done : MEMHOG_STEP_MIB;
      char *p = mmap (NULL, (size_t) step * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED)
        return denied_at ("mmap", errno);
      memset (p, 0xa5, (size_t) step * MIB);
      done += step;
      printf ("allocated: %ld MiB\n", done);
    }
  return ok ();
}

/* ---- plumbing ---- */

static int act_sleep (char **argv);

/* spew BYTES SECONDS: BYTES of numbered 64-byte lines on stdout, then a
 * sleep (a background printer whose log stays in the table). */
static int
act_spew (char **argv)
{
  char *end;
  long long n = strtoll (argv[0], &end, 10);
  if (end == argv[0] || *end || n < 0)
    return 2;
  static char buf[65536];
  long long line = 0;
  while (n > 0)
    {
      size_t len = 0;
      while (len + 64 <= sizeof buf && (long long) len < n)
        len += (size_t) snprintf (buf + len, 65, "%063lld\n", line++);
      if ((long long) len > n)
        len = (size_t) n;
      if (write_all (1, buf, len) < 0)
        return failed (errno);
      n -= (long long) len;
    }
  return act_sleep (argv + 1);
}

static int
act_sleep (char **argv)
{
  char *end;
  double s = strtod (argv[0], &end);
  if (end == argv[0] || *end || !(s >= 0 && s <= 1e7))
    return 2;
  struct timespec ts = { (time_t) s, (long) ((s - (double) (time_t) s) * 1e9) };
  while (nanosleep (&ts, &ts) < 0)
    if (errno != EINTR)
      return failed (errno);
  return 0;
}

static int
act_exit (char **argv)
{
  long n;
  if (parse_long (argv[0], 0, 255, &n) < 0)
    return 2;
  fflush (stdout);
  exit ((int) n);
}

static int
act_echo (char **argv)
{
  for (int i = 0; argv[i]; i++)
    printf ("%s%s", i ? " " : "", argv[i]);
  putchar ('\n');
  return fflush (stdout) == 0 ? 0 : failed (errno);
}

/* udp ADDR PORT DATA: one datagram, the reply printed (2 s to come). */
static int
act_udp (char **argv)
{
  struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons ((uint16_t) atoi (argv[1])) };
  struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = s6.sin6_port };
  bool v6 = strchr (argv[0], ':') != NULL;
  if (v6 ? inet_pton (AF_INET6, argv[0], &s6.sin6_addr) != 1 : inet_pton (AF_INET, argv[0], &s4.sin_addr) != 1)
    return 2;
  int fd = socket (v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
  if (fd < 0 || connect (fd, v6 ? (struct sockaddr *) &s6 : (struct sockaddr *) &s4, v6 ? sizeof s6 : sizeof s4) < 0)
    return failed (errno);
  struct timeval tv = { 2, 0 };
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (send (fd, argv[2], strlen (argv[2]), 0) < 0)
    return failed (errno);
  char buf[2048];
  ssize_t n = recv (fd, buf, sizeof buf - 1, 0);
  if (n < 0)
    return failed (errno);
  buf[n] = '\0';
  printf ("%s\n", buf);
  return 0;
}

/* The name at P[AT..) of the message P[0..N) as dotted text into OUT (256
 * bytes), compression followed; the offset after it, or -1. */
static long
dns_name (const unsigned char *p, size_t n, size_t at, char *out)
{
  size_t len = 0;
  long end = -1;
  for (int jumps = 0; jumps < 32 && at < n;)
    {
      unsigned l = p[at];
      if ((l & 0xc0) == 0xc0)
        {
          if (at + 1 >= n)
            return -1;
          if (end < 0)
            end = (long) at + 2;
          at = (size_t) ((l & 0x3f) << 8 | p[at + 1]);
          jumps++;
          continue;
        }
      if (l == 0)
        {
          out[len] = '\0';
          return end >= 0 ? end : (long) at + 1;
        }
      if (at + 1 + l > n || len + l + 2 > 256)
        return -1;
      if (len)
        out[len++] = '.';
      memcpy (out + len, p + at + 1, l);
      len += l;
      at += 1 + l;
    }
  return -1;
}

/* dns SERVER NAME TYPE [tcp]: one query (A, AAAA, TXT, MX or a number),
 * over UDP or TCP, 3 s for the answer; prints `rcode N`, then each answer
 * record: `A ADDR TTL`, `AAAA ADDR TTL`, `CNAME NAME TTL`, `TXT TEXT TTL`,
 * or `TYPE N TTL`. */
static int
act_dns (char **argv)
{
  struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons (53) };
  bool tcp = argv[3] && strcmp (argv[3], "tcp") == 0;
  if (inet_pton (AF_INET, argv[0], &s4.sin_addr) != 1)
    return 2;
  int qtype = strcmp (argv[2], "A") == 0      ? 1
              : strcmp (argv[2], "AAAA") == 0 ? 28
              : strcmp (argv[2], "TXT") == 0  ? 16
              : strcmp (argv[2], "MX") == 0   ? 15
                                              : atoi (argv[2]);
  unsigned char q[600] = { 0 }, a[65536 + 2];
  size_t qn = 2;
  q[qn] = 0x5b, q[qn + 1] = 0x42, q[qn + 2] = 0x01, q[qn + 5] = 1; /* id, RD, QDCOUNT */
  qn += 12;
  for (const char *s = argv[1]; *s;)
    {
      size_t l = strcspn (s, ".");
      if (l == 0 || l > 63 || qn + l + 8 > sizeof q)
        return 2;
      q[qn++] = (unsigned char) l;
      memcpy (q + qn, s, l);
      qn += l;
      s += l + (s[l] == '.');
    }
  q[qn++] = 0;
  q[qn++] = (unsigned char) (qtype >> 8), q[qn++] = (unsigned char) qtype;
  q[qn++] = 0, q[qn++] = 1;
  q[0] = (unsigned char) ((qn - 2) >> 8), q[1] = (unsigned char) (qn - 2);
  int fd = socket (AF_INET, tcp ? SOCK_STREAM : SOCK_DGRAM, 0);
  struct timeval tv = { 3, 0 };
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (fd < 0 || connect (fd, (struct sockaddr *) &s4, sizeof s4) < 0)
    return failed (errno);
  ssize_t n;
  const unsigned char *p = a;
  if (tcp)
    {
      if (write (fd, q, qn) != (ssize_t) qn)
        return failed (errno);
      /* poll, not SO_RCVTIMEO: under runsc (Debian's 2022 build) a read
       * of a TCP socket with a receive timeout failed with EAGAIN a few
       * milliseconds after the query, whatever the timeout said. */
      size_t got = 0;
      struct pollfd pfd = { .fd = fd, .events = POLLIN };
      while ((got < 2 || got < 2 + (size_t) (a[0] << 8 | a[1])) && poll (&pfd, 1, 3000) == 1
             && (n = read (fd, a + got, sizeof a - got)) > 0)
        got += (size_t) n;
      if (got < 2)
        return failed (errno ? errno : EPROTO);
      n = (ssize_t) got - 2;
      p = a + 2;
    }
  else
    {
      if (send (fd, q + 2, qn - 2, 0) < 0)
        return failed (errno);
      n = recv (fd, a, sizeof a, 0);
      if (n < 0)
        return failed (errno);
    }
  if (n < 12)
    return failed (EPROTO);
  printf ("rcode %d\n", p[3] & 0x0f);
  char name[256];
  long at = dns_name (p, (size_t) n, 12, name);
  if (at < 0 || (p[5] == 0 && p[4] == 0))
    return 0;
  at += 4;
  for (unsigned i = 0, an = (unsigned) (p[6] << 8 | p[7]); i < an; i++)
    {
      at = dns_name (p, (size_t) n, (size_t) at, name);
      if (at < 0 || at + 10 > n)
        return failed (EPROTO);
      unsigned type = (unsigned) (p[at] << 8 | p[at + 1]), rdlen = (unsigned) (p[at + 8] << 8 | p[at + 9]);
      unsigned long ttl = (unsigned long) p[at + 4] << 24 | (unsigned long) p[at + 5] << 16
                          | (unsigned long) p[at + 6] << 8 | p[at + 7];
      size_t rd = (size_t) at + 10;
      if (rd + rdlen > (size_t) n)
        return failed (EPROTO);
      char text[256] = "";
      if (type == 1 && rdlen == 4)
        inet_ntop (AF_INET, p + rd, text, sizeof text);
      else if (type == 28 && rdlen == 16)
        inet_ntop (AF_INET6, p + rd, text, sizeof text);
      else if (type == 5)
        dns_name (p, (size_t) n, rd, text);
      else if (type == 16 && rdlen > 0 && p[rd] < rdlen)
        snprintf (text, sizeof text, "%.*s", p[rd], (const char *) p + rd + 1);
      const char *tn = type == 1 ? "A" : type == 28 ? "AAAA" : type == 5 ? "CNAME" : type == 16 ? "TXT" : NULL;
      if (tn)
        printf ("%s %s %lu\n", tn, text, ttl);
      else
        printf ("TYPE %u %lu\n", type, ttl);
      at = (long) (rd + rdlen);
    }
  return 0;
}

static long long
now_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* dns-time SERVER NAME COUNT: COUNT A queries over UDP, one after the
 * other, each under a new id; prints each one's microseconds, query sent to
 * answer read (contrib/bench/bench-domains.sh). */
static int
act_dns_time (char **argv)
{
  struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons (53) };
  int count = atoi (argv[2]);
  if (inet_pton (AF_INET, argv[0], &s4.sin_addr) != 1 || count < 1)
    return 2;
  unsigned char q[300] = { 0 }, a[4096];
  size_t qn = 12;
  q[2] = 0x01, q[5] = 1;
  for (const char *s = argv[1]; *s;)
    {
      size_t l = strcspn (s, ".");
      if (l == 0 || l > 63 || qn + l + 8 > sizeof q)
        return 2;
      q[qn++] = (unsigned char) l;
      memcpy (q + qn, s, l);
      qn += l;
      s += l + (s[l] == '.');
    }
  q[qn++] = 0;
  q[qn++] = 0, q[qn++] = 1, q[qn++] = 0, q[qn++] = 1;
  int fd = socket (AF_INET, SOCK_DGRAM, 0);
  struct timeval tv = { 3, 0 };
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (fd < 0 || connect (fd, (struct sockaddr *) &s4, sizeof s4) < 0)
    return failed (errno);
  for (int i = 0; i < count; i++)
    {
      q[0] = (unsigned char) (i >> 8), q[1] = (unsigned char) i;
      long long t0 = now_us ();
      if (send (fd, q, qn, 0) < 0)
        return failed (errno);
      ssize_t n;
      do
        n = recv (fd, a, sizeof a, 0);
      while (n >= 2 && (a[0] != q[0] || a[1] != q[1]));
      if (n < 12)
        return failed (n < 0 ? errno : EPROTO);
      if ((a[3] & 0x0f) != 0)
        return failed (EPROTO);
      printf ("%lld\n", now_us () - t0);
    }
  return 0;
}

/* connect-time ADDR PORT COUNT: COUNT TCP connections, one after the
 * other, each closed once made; prints each connect's microseconds. */
static int
act_connect_time (char **argv)
{
  struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) atoi (argv[1])) };
  int count = atoi (argv[2]);
  if (inet_pton (AF_INET, argv[0], &s4.sin_addr) != 1 || count < 1)
    return 2;
  for (int i = 0; i < count; i++)
    {
      int fd = socket (AF_INET, SOCK_STREAM, 0);
      if (fd < 0)
        return failed (errno);
      long long t0 = now_us ();
      if (connect (fd, (struct sockaddr *) &s4, sizeof s4) < 0)
        return failed (errno);
      long long t1 = now_us ();
      close (fd);
      printf ("%lld\n", t1 - t0);
    }
  return 0;
}

/* ping ADDR: one echo request through an ICMP datagram socket, the way
 * iputils' ping works without CAP_NET_RAW (allowed by the namespace's
 * net.ipv4.ping_group_range), and its reply within 2 s. A probe. */
static int
act_ping (char **argv)
{
  bool v6 = strchr (argv[0], ':') != NULL;
  struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
  struct sockaddr_in s4 = { .sin_family = AF_INET };
  if (v6 ? inet_pton (AF_INET6, argv[0], &s6.sin6_addr) != 1 : inet_pton (AF_INET, argv[0], &s4.sin_addr) != 1)
    return 2;
  int fd = socket (v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP);
  if (fd < 0)
    return denied_at ("socket", errno);
  /* Type, code, checksum (the kernel fills it), id (the kernel's), seq. */
  uint8_t req[16] = { v6 ? 128 : 8, 0, 0, 0, 0, 0, 0, 1, 's', 'b', 'x' }, rep[1500];
  if (sendto (fd, req, sizeof req, 0, v6 ? (struct sockaddr *) &s6 : (struct sockaddr *) &s4,
              v6 ? sizeof s6 : sizeof s4)
      < 0)
    return denied_at ("sendto", errno);
  struct timeval tv = { 2, 0 };
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (;;)
    {
      ssize_t n = recv (fd, rep, sizeof rep, 0);
      if (n < 0)
        return denied_at ("recv", errno);
      if (n >= 8 && rep[0] == (v6 ? 129 : 0))
        break;
    }
  close (fd);
  return ok ();
}

/* The one's complement sum of LEN bytes, folded into SUM. */
static uint32_t
csum_add (uint32_t sum, const void *data, size_t len)
{
  const uint8_t *p = data;
  for (size_t i = 0; i + 1 < len; i += 2)
    sum += (uint32_t) (p[i] << 8 | p[i + 1]);
  if (len & 1)
    sum += (uint32_t) (p[len - 1] << 8);
  return sum;
}

static uint16_t
csum_fold (uint32_t sum)
{
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return htons ((uint16_t) ~sum);
}

/* rawudp SRC DST PORT DATA: one UDP datagram whose IP header this process
 * writes, source address included, through a raw socket (CAP_NET_RAW). A
 * probe: `rawudp: ok` once sent. */
static int
act_rawudp (char **argv)
{
  bool v6 = strchr (argv[1], ':') != NULL;
  size_t dlen = strlen (argv[3]), alen = v6 ? 16 : 4, hlen = v6 ? 40 : 20;
  uint8_t src[16], dst[16], pkt[1500] = { 0 };
  long port;
  if (parse_long (argv[2], 1, 65535, &port) < 0 || dlen > 1000 || (strchr (argv[0], ':') != NULL) != v6
      || inet_pton (v6 ? AF_INET6 : AF_INET, argv[0], src) != 1
      || inet_pton (v6 ? AF_INET6 : AF_INET, argv[1], dst) != 1)
    return 2;
  uint16_t ulen = htons ((uint16_t) (8 + dlen)), sport = htons (40000), dport = htons ((uint16_t) port);
  uint8_t *ip = pkt, *udp = pkt + hlen;
  if (v6)
    {
      ip[0] = 0x60;
      memcpy (ip + 4, &ulen, 2);
      ip[6] = IPPROTO_UDP;
      ip[7] = 64;
      memcpy (ip + 8, src, 16);
      memcpy (ip + 24, dst, 16);
    }
  else
    {
      uint16_t tot = htons ((uint16_t) (hlen + 8 + dlen));
      ip[0] = 0x45;
      memcpy (ip + 2, &tot, 2);
      ip[8] = 64;
      ip[9] = IPPROTO_UDP;
      memcpy (ip + 12, src, 4);
      memcpy (ip + 16, dst, 4);
      uint16_t c = csum_fold (csum_add (0, ip, 20));
      memcpy (ip + 10, &c, 2);
    }
  memcpy (udp, &sport, 2);
  memcpy (udp + 2, &dport, 2);
  memcpy (udp + 4, &ulen, 2);
  memcpy (udp + 8, argv[3], dlen);
  /* The pseudo-header: addresses, protocol, length. */
  uint8_t proto[2] = { 0, IPPROTO_UDP };
  uint32_t sum = csum_add (csum_add (0, src, alen), dst, alen);
  sum = csum_add (csum_add (sum, proto, 2), &ulen, 2);
  uint16_t c = csum_fold (csum_add (sum, udp, 8 + dlen));
  if (c == 0)
    c = 0xffff;
  memcpy (udp + 6, &c, 2);

  int fd = socket (v6 ? AF_INET6 : AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
  if (fd < 0)
    return denied_at ("socket", errno);
  struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
  struct sockaddr_in s4 = { .sin_family = AF_INET };
  memcpy (&s6.sin6_addr, dst, 16);
  memcpy (&s4.sin_addr, dst, 4);
  ssize_t n = sendto (fd, pkt, hlen + 8 + dlen, 0, v6 ? (struct sockaddr *) &s6 : (struct sockaddr *) &s4,
                      v6 ? sizeof s6 : sizeof s4);
  if (n < 0)
    return denied_at ("sendto", errno);
  close (fd);
  return ok ();
}

static int
act_cat (char **argv)
{
  char buf[65536];
  for (;;)
    {
      ssize_t n = read (STDIN_FILENO, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return failed (errno);
      if (n == 0)
        return 0;
      if (write_all (STDOUT_FILENO, buf, (size_t) n) < 0)
        return failed (errno);
    }
}

static int
act_hostname (char **argv)
{
  char name[256];
  if (gethostname (name, sizeof name) < 0)
    return failed (errno);
  name[sizeof name - 1] = '\0';
  puts (name);
  return 0;
}

/* ---- dispatch ---- */

typedef struct action {
  const char *name;
  const char *args;
  int min_args, max_args; /* max -1: any number */
  int (*fn) (char **argv);
} action;

static const action actions[] = {
  { "mount", "", 0, 0, act_mount },
  { "unshare-user", "", 0, 0, act_unshare_user },
  { "unshare-net", "", 0, 0, act_unshare_net },
  { "unshare-mount", "", 0, 0, act_unshare_mount },
  { "keyctl", "", 0, 0, act_keyctl },
  { "bpf", "", 0, 0, act_bpf },
  { "io_uring", "", 0, 0, act_io_uring },
  { "af-alg", "", 0, 0, act_af_alg },
  { "af-alg-socketcall", "", 0, 0, act_af_alg_socketcall },
  { "inet-socketcall", "", 0, 0, act_inet_socketcall },
  { "af-vsock", "", 0, 0, act_af_vsock },
  { "ptrace-pid1", "", 0, 0, act_ptrace_pid1 },
  { "clone3", "", 0, 0, act_clone3 },
  { "setns", "", 0, 0, act_setns },
  { "syslog", "", 0, 0, act_syslog },
  { "nosys", "", 0, 0, act_nosys },
  { "mknod-open", "PATH", 1, 1, act_mknod_open },
  { "write", "FILE STRING", 2, 2, act_write },
  { "read", "FILE", 1, 1, act_read },
  { "chroot-escape", "HOST-ONLY-PATH", 1, 1, act_chroot_escape },
  { "caps", "", 0, 0, act_caps },
  { "fds", "", 0, 0, act_fds },
  { "rlimit-nofile", "", 0, 0, act_rlimit_nofile },
  { "forkbomb", "N", 1, 1, act_forkbomb },
  { "memhog", "MB", 1, 1, act_memhog },
  { "sleep", "SECONDS", 1, 1, act_sleep },
  { "spew", "BYTES SECONDS", 2, 2, act_spew },
  { "exit", "N", 1, 1, act_exit },
  { "echo", "ARGS...", 0, -1, act_echo },
  { "cat", "", 0, 0, act_cat },
  { "udp", "ADDR PORT DATA", 3, 3, act_udp },
  { "rawudp", "SRC DST PORT DATA", 4, 4, act_rawudp },
  { "ping", "ADDR", 1, 1, act_ping },
  { "dns", "SERVER NAME TYPE [tcp]", 3, 4, act_dns },
  { "dns-time", "SERVER NAME COUNT", 3, 3, act_dns_time },
  { "connect-time", "ADDR PORT COUNT", 3, 3, act_connect_time },
  { "hostname", "", 0, 0, act_hostname },
};

static int
usage (void)
{
  fprintf (stderr, "usage: sbx-testpayload ACTION [ARGS...]\nactions:\n");
  for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++)
    fprintf (stderr, "  %s%s%s\n", actions[i].name, actions[i].args[0] ? " " : "", actions[i].args);
  return 2;
}

/* Run as a sandbox's init (SBX_INIT pointing at this binary, installed as
 * /.sbx/init): a stand-in that loads no seccomp profile and says HELLO in the
 * current protocol without the flag that says it did, then waits. The
 * monitor must refuse the sandbox (hardening.bats). */
static int
fake_init (void)
{
  unsigned char frame[SBX_PROTO_HDR_SIZE + 12];
  uint32_t len = 12, chan = 0, hello[3] = { SBX_PROTO_VERSION, (uint32_t) getpid (), 0 };
  uint16_t type = SBX_MSG_HELLO, flags = 0;
  memcpy (frame, &len, 4);
  memcpy (frame + 4, &type, 2);
  memcpy (frame + 6, &flags, 2);
  memcpy (frame + 8, &chan, 4);
  memcpy (frame + SBX_PROTO_HDR_SIZE, hello, sizeof hello);
  if (write (1, frame, sizeof frame) != (ssize_t) sizeof frame)
    return 1;
  for (;;)
    pause ();
}

int
main (int argc, char **argv)
{
  if (argc == 1 && strcmp (argv[0], "/.sbx/init") == 0)
    return fake_init ();
  /* Progress lines must be out before an OOM kill or a timeout. */
  setvbuf (stdout, NULL, _IOLBF, 0);
  if (argc < 2)
    return usage ();
  for (size_t i = 0; i < sizeof actions / sizeof actions[0]; i++)
    {
      const action *a = &actions[i];
      int nargs = argc - 2;
      if (strcmp (argv[1], a->name) != 0)
        continue;
      if (nargs < a->min_args || (a->max_args >= 0 && nargs > a->max_args))
        return usage ();
      action_name = a->name;
      int r = a->fn (argv + 2);
      return r == 2 ? usage () : r;
    }
  return usage ();
}
