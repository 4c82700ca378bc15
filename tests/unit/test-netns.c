/* Unit tests of the network-namespace plumbing (src/lib/netns.c), for real:
 * a namespace in a throwaway SBX_NETNS_DIR, a veth pair into it, addresses,
 * links up, a default route; TCP from inside the namespace to the host end,
 * directly and through the default route; IPv6 addresses usable the moment
 * they are added; sysctls written inside the namespace only; then removal,
 * checking that no interface, file or mount is left. Needs root; cleans up
 * on every path. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "netns.h"
#include "tap.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define PLAN 44

static char dir[64];
static char ns_name[32], host_if[IFNAMSIZ], peer_if[IFNAMSIZ];
static int nsfd = -1;
static bool made;

static void
cleanup (void)
{
  if (!made)
    return;
  made = false;
  if (nsfd >= 0)
    close (nsfd);
  sbx_link_delete (-1, host_if, NULL);
  sbx_netns_remove (ns_name, NULL);
  for (int i = 0; i < 16 && umount2 (dir, MNT_DETACH) == 0; i++)
    ;
  rmdir (dir);
}

static struct in_addr
ip4 (int a, int b, int c, int d)
{
  struct in_addr in = { htonl ((uint32_t) a << 24 | (uint32_t) b << 16 | (uint32_t) c << 8 | (uint32_t) d) };
  return in;
}

/* Mounts whose mount point is PATH itself (self) or below it (under). With
 * SHARED, whether the one on PATH is in a peer group. */
static void
count_mounts (const char *path, int *ret_self, int *ret_under, bool *ret_shared)
{
  _cleanup_fclose_ FILE *f = fopen ("/proc/self/mountinfo", "re");
  char line[4096];
  size_t n = strlen (path);
  *ret_self = *ret_under = 0;
  if (ret_shared)
    *ret_shared = false;
  while (f && fgets (line, sizeof line, f))
    {
      char mp[1024];
      if (sscanf (line, "%*s %*s %*s %*s %1023s", mp) != 1 || strncmp (mp, path, n) != 0)
        continue;
      if (mp[n] == '\0')
        {
          ++*ret_self;
          if (ret_shared && strstr (line, " shared:"))
            *ret_shared = true;
        }
      else if (mp[n] == '/')
        ++*ret_under;
    }
}

static bool
host_has_if (const char *name)
{
  _cleanup_free_ char *p = xasprintf ("/sys/class/net/%s", name);
  return access (p, F_OK) == 0;
}

static int
wait_exit (pid_t pid)
{
  int status = 0;
  while (waitpid (pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
}

/* Inside NSFD's namespace: 1 when IFNAME is up, 0 when down, -1 missing. */
static int
ns_if_state (int fd, const char *ifname)
{
  pid_t pid = fork ();
  if (pid == 0)
    {
      struct ifreq ifr = { 0 };
      snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
      int s;
      if (setns (fd, CLONE_NEWNET) < 0 || (s = socket (AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        _exit (3);
      if (ioctl (s, SIOCGIFFLAGS, &ifr) < 0)
        _exit (2);
      _exit (ifr.ifr_flags & IFF_UP ? 1 : 0);
    }
  int r = pid < 0 ? 3 : wait_exit (pid);
  return r == 1 ? 1 : r == 0 ? 0 : -1;
}

/* The child: from inside NSFD's namespace, connects to DST:PORT, sends
 * "ping", expects "pong". */
static __attribute__ ((noreturn)) void
exchange_child (int fd, struct in_addr dst, uint16_t port)
{
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = dst, .sin_port = port };
  char b[4];
  alarm (10);
  if (setns (fd, CLONE_NEWNET) < 0)
    _exit (10);
  int s = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || connect (s, (struct sockaddr *) &sa, sizeof sa) < 0)
    _exit (11);
  if (write_all (s, "ping", 4) < 0 || read_all (s, b, 4) != 4 || memcmp (b, "pong", 4) != 0)
    _exit (12);
  _exit (0);
}

/* A listener on LISTEN_AT in the test's (host) namespace; a child in the
 * sandbox namespace connects to CONNECT_TO. True when bytes went both ways;
 * *RET_PEER is the address the connection came from. */
static bool
exchange (struct in_addr listen_at, struct in_addr connect_to, struct in_addr *ret_peer)
{
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = listen_at };
  socklen_t len = sizeof sa;
  _cleanup_close_ int l = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0 || bind (l, (struct sockaddr *) &sa, sizeof sa) < 0 || listen (l, 1) < 0
      || getsockname (l, (struct sockaddr *) &sa, &len) < 0)
    return false;
  pid_t pid = fork ();
  if (pid < 0)
    return false;
  if (pid == 0)
    exchange_child (nsfd, connect_to, sa.sin_port);

  bool ok = false;
  struct pollfd p = { .fd = l, .events = POLLIN };
  if (poll (&p, 1, 5000) == 1)
    {
      struct sockaddr_in peer;
      socklen_t plen = sizeof peer;
      _cleanup_close_ int c = accept4 (l, (struct sockaddr *) &peer, &plen, SOCK_CLOEXEC);
      struct timeval tv = { .tv_sec = 5 };
      char b[4];
      if (c >= 0 && setsockopt (c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 && read_all (c, b, 4) == 4
          && memcmp (b, "ping", 4) == 0 && write_all (c, "pong", 4) == 0)
        {
          ok = true;
          *ret_peer = peer.sin_addr;
        }
    }
  if (!ok)
    kill (pid, SIGKILL);
  int status = wait_exit (pid);
  if (status != 0)
    printf ("# exchange child exited with %d\n", status);
  return ok && status == 0;
}

/* The child: in NSFD's namespace, binds BIND_AT (which fails while the
 * address is tentative), connects to DST:PORT, sends "ping", expects "pong". */
static __attribute__ ((noreturn)) void
exchange6_child (int fd, const struct in6_addr *bind_at, const struct in6_addr *dst, uint16_t port)
{
  struct sockaddr_in6 me = { .sin6_family = AF_INET6, .sin6_addr = *bind_at };
  struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = *dst, .sin6_port = port };
  char b[4];
  alarm (10);
  if (setns (fd, CLONE_NEWNET) < 0)
    _exit (10);
  int s = socket (AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || bind (s, (struct sockaddr *) &me, sizeof me) < 0)
    _exit (errno == EADDRNOTAVAIL ? 13 : 11);
  if (connect (s, (struct sockaddr *) &sa, sizeof sa) < 0)
    _exit (11);
  if (write_all (s, "ping", 4) < 0 || read_all (s, b, 4) != 4 || memcmp (b, "pong", 4) != 0)
    _exit (12);
  _exit (0);
}

/* As exchange, over IPv6, right after the addresses were added: a listener
 * bound to HOST_AT here, a child bound to PEER_AT in the namespace. */
static bool
exchange6 (const struct in6_addr *host_at, const struct in6_addr *peer_at, struct in6_addr *ret_peer)
{
  struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = *host_at };
  socklen_t len = sizeof sa;
  _cleanup_close_ int l = socket (AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (l < 0 || bind (l, (struct sockaddr *) &sa, sizeof sa) < 0)
    {
      printf ("# bind the host's IPv6 address: %s\n", strerror (errno));
      return false;
    }
  if (listen (l, 1) < 0 || getsockname (l, (struct sockaddr *) &sa, &len) < 0)
    return false;
  pid_t pid = fork ();
  if (pid < 0)
    return false;
  if (pid == 0)
    exchange6_child (nsfd, peer_at, host_at, sa.sin6_port);

  bool ok = false;
  struct pollfd p = { .fd = l, .events = POLLIN };
  if (poll (&p, 1, 5000) == 1)
    {
      struct sockaddr_in6 peer;
      socklen_t plen = sizeof peer;
      _cleanup_close_ int c = accept4 (l, (struct sockaddr *) &peer, &plen, SOCK_CLOEXEC);
      struct timeval tv = { .tv_sec = 5 };
      char b[4];
      if (c >= 0 && setsockopt (c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 && read_all (c, b, 4) == 4
          && memcmp (b, "ping", 4) == 0 && write_all (c, "pong", 4) == 0)
        {
          ok = true;
          *ret_peer = peer.sin6_addr;
        }
    }
  if (!ok)
    kill (pid, SIGKILL);
  int status = wait_exit (pid);
  if (status != 0)
    printf ("# exchange6 child exited with %d%s\n", status,
            status == 13 ? " (the namespace's address is not usable yet)" : "");
  return ok && status == 0;
}

/* The first line of /proc/sys/PATH as namespace FD (-1: ours) sees it, or
 * "?" when it cannot be read. */
static char *
sysctl_read (int fd, const char *path)
{
  int p[2];
  if (pipe2 (p, O_CLOEXEC) < 0)
    return xstrdup ("?");
  pid_t pid = fork ();
  if (pid == 0)
    {
      char buf[64] = "?";
      _cleanup_free_ char *file = xasprintf ("/proc/sys/%s", path);
      if (fd < 0 || setns (fd, CLONE_NEWNET) == 0)
        {
          _cleanup_fclose_ FILE *f = fopen (file, "re");
          if (!f || !fgets (buf, sizeof buf, f))
            snprintf (buf, sizeof buf, "?");
        }
      buf[strcspn (buf, "\n")] = '\0';
      _exit (write_all (p[1], buf, strlen (buf)) < 0);
    }
  close (p[1]);
  char buf[64] = "";
  ssize_t n = pid < 0 ? -1 : read_all (p[0], buf, sizeof buf - 1);
  close (p[0]);
  if (pid > 0)
    wait_exit (pid);
  return xstrdup (n > 0 ? buf : "?");
}

/* From a child that entered namespace FD: sbx_netns_sysctl (-1, ...). */
static bool
sysctl_from_inside (int fd, const char *path, const char *value)
{
  pid_t pid = fork ();
  if (pid == 0)
    {
      sbx_error *e = NULL;
      if (setns (fd, CLONE_NEWNET) < 0)
        _exit (2);
      _exit (sbx_netns_sysctl (-1, path, value, &e) == 0 ? 0 : 1);
    }
  return pid > 0 && wait_exit (pid) == 0;
}

static void
show (const sbx_error *e)
{
  _cleanup_free_ char *text = sbx_error_text (e);
  printf ("# error: %s\n", text);
}

static bool
failed_with (sbx_error **e, sbx_code code, const char *needle)
{
  bool r = *e && (*e)->code == code && (!needle || strstr ((*e)->msg, needle));
  if (*e)
    show (*e);
  sbx_error_free (*e);
  *e = NULL;
  return r;
}

static bool
succeeded (int r, sbx_error **e)
{
  if (r < 0 && *e)
    show (*e);
  sbx_error_free (*e);
  *e = NULL;
  return r == 0;
}

static void
run (int x, int k)
{
  sbx_error *e = NULL;
  struct in_addr host_ip = ip4 (10, 250, x, 4 * k + 1), peer_ip = ip4 (10, 250, x, 4 * k + 2);
  struct in_addr far_ip = ip4 (10, 251, x, 4 * k + 1), got;
  _cleanup_free_ char *ns_path = xasprintf ("%s/%s", dir, ns_name);
  int self, under, fd2 = -1;
  bool shared;

  if (!tap_ok (succeeded (sbx_netns_create (ns_name, &nsfd, &e), &e) && nsfd >= 0, "create namespace %s", ns_name))
    return; /* everything below would act on the host's own namespace */
  count_mounts (ns_path, &self, &under, NULL);
  tap_ok (self >= 1, "the namespace is a bind mount at %s", ns_path);
  count_mounts (dir, &self, &under, &shared);
  tap_ok (self >= 1 && shared, "%s is a shared mount point", dir);
  tap_ok (ns_if_state (nsfd, "lo") == 1, "loopback is up in the namespace");
  tap_ok (failed_with ((sbx_netns_create (ns_name, &fd2, &e), &e), SBX_E_BUSY, ns_name) && fd2 == -1,
          "creating an existing name is BUSY");
  tap_ok (ns_if_state (nsfd, "lo") == 1, "... and leaves the existing namespace alone");

  sbx_veth_create ("sbxt-0123456789ab", peer_if, nsfd, &e);
  tap_ok (failed_with (&e, SBX_E_INVALID_ARGUMENT, "sbxt-0123456789ab"), "a 17-character name is INVALID_ARGUMENT");
  sbx_veth_create (host_if, "Bad/Name", nsfd, &e);
  tap_ok (failed_with (&e, SBX_E_INVALID_ARGUMENT, NULL), "a name outside [a-z0-9_-] is INVALID_ARGUMENT");
  tap_ok (!host_has_if (host_if), "... and nothing was created");

  tap_ok (succeeded (sbx_veth_create (host_if, peer_if, nsfd, &e), &e), "create veth %s / %s", host_if, peer_if);
  tap_ok (host_has_if (host_if) && !host_has_if (peer_if), "/sys/class/net/%s exists, the peer is not on the host",
          host_if);
  tap_ok (ns_if_state (nsfd, peer_if) == 0, "the peer was born in the namespace, down");
  sbx_veth_create (host_if, "tnx-other", nsfd, &e);
  tap_ok (failed_with (&e, SBX_E_BUSY, host_if), "a veth whose name exists is BUSY, naming it");

  tap_ok (succeeded (sbx_addr_add (-1, host_if, AF_INET, &host_ip, 30, &e), &e), "address on the host end");
  tap_ok (succeeded (sbx_addr_add (nsfd, peer_if, AF_INET, &peer_ip, 30, &e), &e), "address on the peer");
  tap_ok (succeeded (sbx_addr_add (-1, host_if, AF_INET, &far_ip, 32, &e), &e),
          "a second address on the host end, outside the /30");
  tap_ok (succeeded (sbx_link_set_up (-1, host_if, &e), &e), "host end up");
  tap_ok (succeeded (sbx_link_set_up (nsfd, peer_if, &e), &e), "peer up");
  tap_ok (ns_if_state (nsfd, peer_if) == 1, "the peer is up in the namespace");
  tap_ok (succeeded (sbx_route_add_default (nsfd, AF_INET, &host_ip, &e), &e), "default route in the namespace");

  got.s_addr = 0;
  tap_ok (exchange (host_ip, host_ip, &got) && got.s_addr == peer_ip.s_addr,
          "TCP from the namespace to the host end, coming from the peer's address");
  got.s_addr = 0;
  tap_ok (exchange (far_ip, far_ip, &got) && got.s_addr == peer_ip.s_addr,
          "TCP from the namespace to an address only the default route reaches");

  /* IPv6: the links are up, so without IFA_F_NODAD the addresses would be
   * tentative (bind: EADDRNOTAVAIL) for the second or two of DAD. */
  struct in6_addr host6, peer6, got6;
  char a6[INET6_ADDRSTRLEN];
  snprintf (a6, sizeof a6, "fd7e:%02x%02x::1", x & 0xff, k & 0xff);
  inet_pton (AF_INET6, a6, &host6);
  peer6 = host6;
  peer6.s6_addr[15] = 2;
  _cleanup_free_ char *host_v6_off = xasprintf ("net/ipv6/conf/%s/disable_ipv6", host_if);
  _cleanup_free_ char *off = sysctl_read (-1, host_v6_off);
  if (strcmp (off, "0") != 0)
    {
      for (int i = 0; i < 3; i++)
        tap_skip ("IPv6 tests: IPv6 is off on the host's %s (%s)", host_if, off);
    }
  else
    {
      tap_ok (succeeded (sbx_addr_add (-1, host_if, AF_INET6, &host6, 64, &e), &e)
                  && succeeded (sbx_addr_add (nsfd, peer_if, AF_INET6, &peer6, 64, &e), &e),
              "IPv6 addresses %s/64 on the host end and ::2 on the peer", a6);
      memset (&got6, 0, sizeof got6);
      tap_ok (exchange6 (&host6, &peer6, &got6) && memcmp (&got6, &peer6, sizeof got6) == 0,
              "at once, no sleep: both IPv6 addresses bind, and TCP goes from the peer's to the host's");
      sbx_addr_add (nsfd, peer_if, AF_INET6, &peer6, 64, &e);
      tap_ok (failed_with (&e, SBX_E_BUSY, peer_if), "adding the same IPv6 address again fails");
    }

  /* sysctl: written inside the namespace, the host's value untouched. */
  static const char v6all[] = "net/ipv6/conf/all/disable_ipv6";
  _cleanup_free_ char *host_before = sysctl_read (-1, v6all), *ns_before = sysctl_read (nsfd, v6all);
  const char *flip = strcmp (ns_before, "1") == 0 ? "0" : "1";
  tap_ok (succeeded (sbx_netns_sysctl (nsfd, v6all, flip, &e), &e), "sysctl %s = %s in the namespace", v6all, flip);
  _cleanup_free_ char *host_after = sysctl_read (-1, v6all), *ns_after = sysctl_read (nsfd, v6all);
  tap_ok (strcmp (ns_after, flip) == 0 && strcmp (host_after, host_before) == 0 && strcmp (host_before, "?") != 0,
          "the namespace reads %s (was %s), the host still %s (was %s)", ns_after, ns_before, host_after, host_before);
  _cleanup_free_ char *fwd_host = sysctl_read (-1, "net/ipv4/ip_forward");
  tap_ok (sysctl_from_inside (nsfd, "net/ipv4/ip_forward", "1"), "sysctl with nsfd -1 from a process already inside");
  _cleanup_free_ char *fwd_ns = sysctl_read (nsfd, "net/ipv4/ip_forward");
  _cleanup_free_ char *fwd_host2 = sysctl_read (-1, "net/ipv4/ip_forward");
  tap_ok (strcmp (fwd_ns, "1") == 0 && strcmp (fwd_host, fwd_host2) == 0,
          "... writes the caller's namespace: ip_forward %s there, the host's still %s", fwd_ns, fwd_host2);
  sbx_netns_sysctl (nsfd, "net/../kernel/hostname", "x", &e);
  tap_ok (failed_with (&e, SBX_E_INVALID_ARGUMENT, NULL), "a sysctl path with '..' is INVALID_ARGUMENT");
  sbx_netns_sysctl (nsfd, "/proc/sys/net/ipv4/ip_forward", "1", &e);
  tap_ok (failed_with (&e, SBX_E_INVALID_ARGUMENT, NULL), "an absolute sysctl path is INVALID_ARGUMENT");
  sbx_netns_sysctl (nsfd, "net/ipv4/conf/tnx-none/forwarding", "1", &e);
  tap_ok (failed_with (&e, SBX_E_NOT_FOUND, "tnx-none"), "a sysctl that does not exist is NOT_FOUND");

  sbx_addr_add (nsfd, peer_if, AF_INET, &peer_ip, 30, &e);
  tap_ok (failed_with (&e, SBX_E_BUSY, peer_if), "adding the same address again fails, naming the interface");
  sbx_addr_add (nsfd, host_if, AF_INET, &peer_ip, 30, &e);
  tap_ok (failed_with (&e, SBX_E_NOT_FOUND, host_if), "an interface missing from the namespace is NOT_FOUND");
  sbx_addr_add (nsfd, peer_if, AF_INET, &peer_ip, 33, &e);
  tap_ok (failed_with (&e, SBX_E_INVALID_ARGUMENT, NULL), "a /33 is INVALID_ARGUMENT");

  tap_ok (succeeded (sbx_link_delete (-1, host_if, &e), &e) && !host_has_if (host_if), "delete the host end");
  tap_ok (ns_if_state (nsfd, peer_if) == -1, "... which takes the peer with it");
  tap_ok (succeeded (sbx_link_delete (-1, host_if, &e), &e), "deleting it again is fine");

  close (nsfd);
  nsfd = -1;
  tap_ok (succeeded (sbx_netns_remove (ns_name, &e), &e), "remove the namespace");
  count_mounts (dir, &self, &under, NULL);
  tap_ok (access (ns_path, F_OK) < 0 && errno == ENOENT && under == 0, "no file in %s, no mount under it", dir);
  tap_ok (succeeded (sbx_netns_remove (ns_name, &e), &e) && succeeded (sbx_netns_remove ("sbxt-never", &e), &e),
          "removing a namespace that is not there is fine");
  sbx_netns_remove ("../etc", &e);
  tap_ok (failed_with (&e, SBX_E_INVALID_ARGUMENT, NULL), "a name with a slash is INVALID_ARGUMENT");
}

/* Whether the addresses run (X, K) puts on the host's end are clear of the
 * host's own routes, addresses, resolvers and gateways, and `ip route get`
 * sends them to the default route (tests/helpers/netpick.py): a host whose
 * network is 10.250.0.0/16 keeps its routes. */
static bool
clear_of_host (int x, int k)
{
  const char *top = getenv ("SBX_TESTS_DIR");
  _cleanup_free_ char
      *cmd = xasprintf ("python3 -I -S '%s/helpers/netpick.py' a=fixed:10.250.%d.%d/30 b=fixed:10.251.%d.%d/32"
                        " c=fixed:fd7e:%02x%02x::/64 >/dev/null",
                        top ? top : "tests", x, 4 * k, x, 4 * k + 1, x & 0xff, k & 0xff);
  return system (cmd) == 0;
}

int
main (void)
{
  if (geteuid () != 0)
    tap_skip_all ("needs root (network namespaces, veth)");
  tap_plan (PLAN);
  fflush (stdout); /* children fork with an empty buffer */

  snprintf (dir, sizeof dir, "/tmp/sbx-test-netns-XXXXXX");
  if (!mkdtemp (dir))
    {
      printf ("Bail out! mkdtemp: %s\n", strerror (errno));
      return 1;
    }
  made = true;
  atexit (cleanup);
  setenv ("SBX_NETNS_DIR", dir, 1);

  _cleanup_free_ char *tag = random_hex (3);
  unsigned char rnd[2];
  bool clear = false;
  for (int i = 0; i < 8 && !clear; i++)
    {
      if (getrandom (rnd, sizeof rnd, 0) != sizeof rnd)
        abort ();
      clear = clear_of_host (rnd[0], rnd[1] % 64);
    }
  snprintf (ns_name, sizeof ns_name, "sbxt-%s", tag);
  /* Not "sbx…": the input chain of a running sbx refuses what comes from
   * its sbx* interfaces, and this test talks to the host end. */
  snprintf (host_if, sizeof host_if, "tnx-%s-h", tag);
  snprintf (peer_if, sizeof peer_if, "tnx-%s-p", tag);

  if (tap_ok (clear,
              "10.250.%d.%d/30, 10.251.%d.%d and fd7e:%02x%02x::/64 are clear of this host's routes and addresses",
              rnd[0], 4 * (rnd[1] % 64), rnd[0], 4 * (rnd[1] % 64) + 1, rnd[0], rnd[1] % 64))
    run (rnd[0], rnd[1] % 64);

  cleanup ();
  int self, under;
  count_mounts (dir, &self, &under, NULL);
  tap_ok (self == 0 && under == 0 && access (dir, F_OK) < 0 && !host_has_if (host_if),
          "afterwards: %s unmounted and gone, no interface left", dir);
  return tap_done ();
}
