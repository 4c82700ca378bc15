/* Unit tests of the network-namespace plumbing (src/lib/netns.c), for real:
 * a namespace in a throwaway SBX_NETNS_DIR, a veth pair into it, addresses,
 * links up, a default route; TCP from inside the namespace to the host end,
 * directly and through the default route; then removal, checking that no
 * interface, file or mount is left. Needs root; cleans up on every path. */
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

#define PLAN 33

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
      if (c >= 0 && setsockopt (c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0
          && read_all (c, b, 4) == 4 && memcmp (b, "ping", 4) == 0 && write_all (c, "pong", 4) == 0)
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

  if (!tap_ok (succeeded (sbx_netns_create (ns_name, &nsfd, &e), &e) && nsfd >= 0,
               "create namespace %s", ns_name))
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
  sbx_veth_create (host_if, "sbxt-other", nsfd, &e);
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
  tap_ok (access (ns_path, F_OK) < 0 && errno == ENOENT && under == 0,
          "no file in %s, no mount under it", dir);
  tap_ok (succeeded (sbx_netns_remove (ns_name, &e), &e) && succeeded (sbx_netns_remove ("sbxt-never", &e), &e),
          "removing a namespace that is not there is fine");
  sbx_netns_remove ("../etc", &e);
  tap_ok (failed_with (&e, SBX_E_INVALID_ARGUMENT, NULL), "a name with a slash is INVALID_ARGUMENT");
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
  if (getrandom (rnd, sizeof rnd, 0) != sizeof rnd)
    abort ();
  snprintf (ns_name, sizeof ns_name, "sbxt-%s", tag);
  snprintf (host_if, sizeof host_if, "sbxt-%s-h", tag);
  snprintf (peer_if, sizeof peer_if, "sbxt-%s-p", tag);

  run (rnd[0], rnd[1] % 64);

  cleanup ();
  int self, under;
  count_mounts (dir, &self, &under, NULL);
  tap_ok (self == 0 && under == 0 && access (dir, F_OK) < 0 && !host_has_if (host_if),
          "afterwards: %s unmounted and gone, no interface left", dir);
  return tap_done ();
}
