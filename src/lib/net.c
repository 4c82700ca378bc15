/* A sandbox's network: lease, namespace, veth, addresses, egress rules. */
#include "config.h"
#include "net.h"
#include "util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* The interface the sandbox sees. */
#define PEER_IF "eth0"
/* How many /30s are tried before the pool counts as full. */
#define PROBES_MAX 4096

const char *
sbx_egress_mode_name (sbx_egress_mode m)
{
  switch (m)
    {
    case SBX_EGRESS_BLOCK:
      return "block";
    case SBX_EGRESS_ALLOW:
      return "allow";
    case SBX_EGRESS_OPEN:
      return "open";
    }
  return "?";
}

void
sbx_net_pool (const sbx_conf *conf, sbx_egress_pool *pool, sbx_cidr **ret_open)
{
  memset (pool, 0, sizeof *pool);
  pool->v4 = conf->pool4;
  pool->v6 = conf->pool6;
  pool->ifprefix = SBX_NET_IFPREFIX;
  pool->dns = true;
  sbx_cidr *open = xmalloc0 ((conf->nopen + 1) * sizeof *open);
  for (size_t i = 0; i < conf->nopen; i++)
    open[i] = conf->open[i].cidr;
  pool->open = open;
  pool->nopen = conf->nopen;
  pool->observe = conf->observe;
  *ret_open = open;
}

void
sbx_net_ifname (const char *id, char buf[SBX_IFNAME_MAX + 1])
{
  const char *hex = strncmp (id, "sb-", 3) == 0 ? id + 3 : id;
  snprintf (buf, SBX_IFNAME_MAX + 1, "%s%s", SBX_NET_IFPREFIX, hex);
}

int
sbx_net_parse_allow (char *const *strs, sbx_cidr **ret, size_t *ret_n, sbx_error **err)
{
  size_t n = strv_len (strs);
  if (n > SBX_EGRESS_ALLOW_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--allow: %zu destinations, at most %d", n,
                          SBX_EGRESS_ALLOW_MAX);
  _cleanup_free_ sbx_cidr *v = xmalloc0 ((n + 1) * sizeof *v);
  for (size_t i = 0; i < n; i++)
    if (sbx_cidr_parse (strs[i], &v[i], err) < 0)
      return sbx_error_wrap (err, "--allow");
  *ret = steal_pointer (&v);
  *ret_n = n;
  return 0;
}

/* --- leases ------------------------------------------------------------ */

static char *
lease_path (const char *name)
{
  return xasprintf ("%s/%s", SBX_LEASES_DIR, name);
}

/* The sandbox's own lease, LEASES/ID, flocked before it has its name: a gc
 * that finds it can take the lock only once its monitor is gone. */
static int
lease_take (const char *id, sbx_error **err)
{
  if (mkdir_p (SBX_LEASES_DIR, 0700, err) < 0)
    return -1;
  _cleanup_free_ char *tmp = xasprintf ("%s/.tmp-%s", SBX_LEASES_DIR, id);
  _cleanup_free_ char *path = lease_path (id);
  _cleanup_close_ int fd = open (tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return sbx_error_errno (err, errno, "create `%s`", tmp);
  if (flock (fd, LOCK_EX | LOCK_NB) < 0 || write_all (fd, id, strlen (id)) < 0)
    {
      int e = errno;
      unlink (tmp);
      return sbx_error_errno (err, e, "lock `%s`", tmp);
    }
  int r = link (tmp, path);
  int e = errno;
  unlink (tmp);
  if (r < 0)
    return e == EEXIST ? sbx_error_set (err, SBX_E_BUSY, 0, "the network lease of %s exists", id)
                       : sbx_error_errno (err, e, "link `%s`", path);
  return steal_fd (&fd);
}

/* The /30 (and /126) number INDEX of the pools. */
static void
slot_addrs (const sbx_conf *conf, uint64_t index, sbx_net *net)
{
  net->gw4 = conf->pool4;
  sbx_cidr_add (&net->gw4, index * 4 + 1);
  net->gw4.prefix = 30;
  net->addr4 = net->gw4;
  sbx_cidr_add (&net->addr4, 1);
  if (conf->pool6.family == AF_INET6)
    {
      net->gw6 = conf->pool6;
      sbx_cidr_add (&net->gw6, index * 4 + 1);
      net->gw6.prefix = 126;
      net->addr6 = net->gw6;
      sbx_cidr_add (&net->addr6, 1);
    }
}

char *
sbx_net_addr_str (const sbx_cidr *c)
{
  return sbx_cidr_address_text (c);
}

static char *
slot_name (const sbx_net *net)
{
  sbx_cidr c = net->gw4;
  c.addr[3] &= 0xfc;
  _cleanup_free_ char *a = sbx_net_addr_str (&c);
  return xasprintf ("addr-%s", a);
}

/* Reserves a free /30: LEASES/addr-A.B.C.D made with O_EXCL, holding the
 * id. Probing starts at a point drawn from the id. */
static int
slot_take (const sbx_conf *conf, sbx_net *net, sbx_error **err)
{
  unsigned host_bits = 32 - conf->pool4.prefix;
  uint64_t slots = (1ULL << host_bits) / 4;
  if (conf->pool6.family == AF_INET6 && 128 - conf->pool6.prefix < 40)
    {
      uint64_t s6 = (1ULL << (128 - conf->pool6.prefix)) / 4;
      if (s6 < slots)
        slots = s6;
    }
  if (slots < 2)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "the address pool is too small");
  uint64_t start = 0;
  const char *hex = strncmp (net->id, "sb-", 3) == 0 ? net->id + 3 : net->id;
  for (const char *p = hex; *p; p++)
    start = start * 31 + (unsigned char) *p;
  uint64_t probes = slots - 1 < PROBES_MAX ? slots - 1 : PROBES_MAX;
  for (uint64_t k = 0; k < probes; k++)
    {
      /* Slot 0 holds the pool's network address: never used. */
      uint64_t index = 1 + (start + k) % (slots - 1);
      slot_addrs (conf, index, net);
      _cleanup_free_ char *name = slot_name (net);
      _cleanup_free_ char *path = lease_path (name);
      int fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (fd < 0 && errno == EEXIST)
        continue;
      if (fd < 0)
        return sbx_error_errno (err, errno, "create `%s`", path);
      int r = write_all (fd, net->id, strlen (net->id));
      close (fd);
      if (r < 0)
        {
          unlink (path);
          return sbx_error_errno (err, errno, "write `%s`", path);
        }
      return 0;
    }
  return sbx_error_set (err, SBX_E_BUSY, 0, "no free address in the pool (%" PRIu64 " tried)", probes);
}

/* Removes the address leases that name ID. */
static void
slots_release (const char *id)
{
  _cleanup_closedir_ DIR *d = opendir (SBX_LEASES_DIR);
  if (d == NULL)
    return;
  struct dirent *e;
  while ((e = readdir (d)) != NULL)
    {
      if (strncmp (e->d_name, "addr-", 5) != 0)
        continue;
      _cleanup_free_ char *text = NULL;
      if (read_file_at (dirfd (d), e->d_name, 256, &text, NULL, NULL) == 0 && strcmp (text, id) == 0)
        unlinkat (dirfd (d), e->d_name, 0);
    }
}

/* --- setup and teardown ------------------------------------------------ */

static int
write_sysctl_host (const char *path, const char *value, sbx_error **err)
{
  _cleanup_free_ char *cur = NULL;
  if (read_file (path, 64, &cur, NULL, NULL) == 0 && strncmp (cur, value, strlen (value)) == 0)
    return 0;
  _cleanup_close_ int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write_all (fd, value, strlen (value)) < 0)
    return sbx_error_errno (err, errno, "write `%s`", path);
  return 0;
}

static void
remove_objects (const char *id)
{
  char ifname[SBX_IFNAME_MAX + 1];
  sbx_net_ifname (id, ifname);
  _cleanup_error_ sbx_error *e1 = NULL, *e2 = NULL, *e3 = NULL;
  sbx_egress_remove (SBX_EGRESS_TABLE, id, ifname, &e1);
  sbx_link_delete (-1, ifname, &e2);
  sbx_netns_remove (id, &e3);
}

static int add_links (sbx_net *net, sbx_error **err);

int
sbx_net_setup (const sbx_conf *conf, const char *id, sbx_egress_mode mode, const sbx_cidr *allow, size_t nallow,
               bool domains, sbx_net **ret, sbx_error **err)
{
  sbx_net *net = xmalloc0 (sizeof *net);
  net->id = xstrdup (id);
  net->nsfd = -1;
  net->lease_fd = -1;
  sbx_net_ifname (id, net->host_if);
  net->lease_fd = lease_take (id, err);
  if (net->lease_fd < 0)
    goto fail_nolease;
  if (slot_take (conf, net, err) < 0)
    goto fail;
  if (sbx_netns_create (id, &net->nsfd, err) < 0)
    goto fail;
  if (write_sysctl_host ("/proc/sys/net/ipv4/ip_forward", "1", err) < 0
      || (net->addr6.family == AF_INET6 && write_sysctl_host ("/proc/sys/net/ipv6/conf/all/forwarding", "1", err) < 0))
    goto fail;
  if (add_links (net, err) < 0)
    goto fail;
  if (sbx_net_apply (net, mode, allow, nallow, domains, NULL, 0, err) < 0)
    goto fail;
  *ret = net;
  return 0;
fail:
  sbx_net_teardown (net);
  return -1;
fail_nolease:
  free (net->id);
  free (net);
  return -1;
}

/* What is done inside the namespace, in one thread there (netns.h). */
struct inside {
  const sbx_net *net;
  sbx_error *err;
};

static void
configure_inside (void *arg)
{
  struct inside *in = arg;
  const sbx_net *net = in->net;
  bool v6 = net->addr6.family == AF_INET6;
  /* IPv6 is as the pool says: the same policy as IPv4, or off. */
  /* No CAP_NET_RAW in the sandbox (spec.c): ping sends through ICMP
   * datagram sockets, which every group may open. */
  if (sbx_netns_sysctl (-1, "net/ipv4/ping_group_range", "0 2147483647", &in->err) < 0)
    return;
  if (!v6
      && (sbx_netns_sysctl (-1, "net/ipv6/conf/all/disable_ipv6", "1", &in->err) < 0
          || sbx_netns_sysctl (-1, "net/ipv6/conf/default/disable_ipv6", "1", &in->err) < 0))
    return;
  if (sbx_addr_add (-1, PEER_IF, AF_INET, net->addr4.addr, 30, &in->err) < 0
      || (v6 && sbx_addr_add (-1, PEER_IF, AF_INET6, net->addr6.addr, 126, &in->err) < 0)
      || sbx_link_set_up (-1, PEER_IF, &in->err) < 0 || sbx_route_add_default (-1, AF_INET, net->gw4.addr, &in->err) < 0
      || (v6 && sbx_route_add_default (-1, AF_INET6, net->gw6.addr, &in->err) < 0))
    return;
}

static int
add_links (sbx_net *net, sbx_error **err)
{
  bool v6 = net->addr6.family == AF_INET6;
  if (sbx_veth_create (net->host_if, PEER_IF, net->nsfd, err) < 0
      || sbx_addr_add (-1, net->host_if, AF_INET, net->gw4.addr, 30, err) < 0
      || (v6 && sbx_addr_add (-1, net->host_if, AF_INET6, net->gw6.addr, 126, err) < 0)
      || sbx_link_set_up (-1, net->host_if, err) < 0)
    return -1;
  struct inside in = { .net = net };
  if (sbx_netns_run (net->nsfd, configure_inside, &in, err) < 0)
    return -1;
  if (in.err)
    {
      *err = in.err;
      return -1;
    }
  return 0;
}

int
sbx_net_apply (const sbx_net *net, sbx_egress_mode mode, const sbx_cidr *allow, size_t nallow, bool domains,
               const sbx_egress_elem *elems, size_t nelems, sbx_error **err)
{
  sbx_egress_source src = { .v4 = net->addr4, .v6 = net->addr6 };
  src.v4.prefix = 32;
  if (src.v6.family == AF_INET6)
    src.v6.prefix = 128;
  if (sbx_egress_apply_domains (SBX_EGRESS_TABLE, net->id, net->host_if, &src, mode, allow, nallow, domains, elems,
                                nelems, err)
      < 0)
    return sbx_error_wrap (err, "egress rules");
  return 0;
}

void
sbx_net_teardown (sbx_net *net)
{
  if (net == NULL)
    return;
  if (net->nsfd >= 0)
    close (net->nsfd);
  remove_objects (net->id);
  slots_release (net->id);
  if (net->lease_fd >= 0)
    {
      _cleanup_free_ char *path = lease_path (net->id);
      unlink (path);
      close (net->lease_fd);
    }
  free (net->id);
  free (net);
}

int
sbx_net_gc (char *const *known_dead, sbx_error **err)
{
  int reaped = 0;
  _cleanup_closedir_ DIR *d = opendir (SBX_LEASES_DIR);
  if (d == NULL && errno != ENOENT)
    return sbx_error_errno (err, errno, "open `%s`", SBX_LEASES_DIR);
  struct dirent *e;
  while (d && (e = readdir (d)) != NULL)
    {
      if (e->d_name[0] == '.' || strncmp (e->d_name, "addr-", 5) == 0 || !name_is_valid (e->d_name))
        continue;
      _cleanup_close_ int fd = openat (dirfd (d), e->d_name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
      if (fd < 0 || flock (fd, LOCK_EX | LOCK_NB) < 0)
        continue; /* its monitor lives */
      remove_objects (e->d_name);
      slots_release (e->d_name);
      unlinkat (dirfd (d), e->d_name, 0);
      reaped++;
    }
  /* Address leases of no sandbox (a crash between the two files). */
  if (d)
    {
      rewinddir (d);
      while ((e = readdir (d)) != NULL)
        {
          if (strncmp (e->d_name, "addr-", 5) != 0)
            continue;
          _cleanup_free_ char *id = NULL;
          if (read_file_at (dirfd (d), e->d_name, 256, &id, NULL, NULL) < 0 || !name_is_valid (id))
            continue;
          struct stat sb;
          if (fstatat (dirfd (d), id, &sb, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
            unlinkat (dirfd (d), e->d_name, 0);
        }
    }
  /* Sandboxes of this store known to be over whose namespace or rules
   * outlived a lease (or never had one: a crash before it). */
  _cleanup_strv_ char **chains = NULL;
  if (sbx_egress_list (SBX_EGRESS_TABLE, &chains, NULL) < 0)
    chains = xmalloc0 (sizeof (char *));
  for (size_t i = 0; known_dead && known_dead[i]; i++)
    {
      _cleanup_free_ char *path = lease_path (known_dead[i]);
      if (path_exists (path))
        continue;
      _cleanup_free_ char *ns = sbx_netns_path (known_dead[i]);
      char ifname[SBX_IFNAME_MAX + 1];
      sbx_net_ifname (known_dead[i], ifname);
      _cleanup_free_ char *sysif = xasprintf ("/sys/class/net/%s", ifname);
      bool chain = false;
      for (size_t j = 0; chains[j] && !chain; j++)
        chain = strcmp (chains[j], known_dead[i]) == 0;
      if ((ns && path_exists (ns)) || path_exists (sysif) || chain)
        {
          remove_objects (known_dead[i]);
          reaped++;
        }
    }
  return reaped;
}

int
sbx_net_reap (const char *id)
{
  _cleanup_free_ char *path = lease_path (id);
  _cleanup_close_ int fd = open (path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0 && flock (fd, LOCK_EX | LOCK_NB) < 0)
    return 0; /* its monitor lives */
  remove_objects (id);
  slots_release (id);
  if (fd >= 0)
    unlink (path);
  return 1;
}

int
sbx_net_hold (sbx_error **err)
{
  if (mkdir_p ("/run/sbx", 0755, err) < 0)
    return -1;
  return lock_path (SBX_NET_LOCK, LOCK_SH, err);
}

int
sbx_net_gc_idle (sbx_error **err)
{
  if (!path_exists (SBX_NET_LOCK))
    return 0;
  _cleanup_close_ int lk = lock_path (SBX_NET_LOCK, LOCK_EX | LOCK_NB, NULL);
  if (lk < 0)
    return 0; /* a sandbox's network is being made */
  _cleanup_closedir_ DIR *d = opendir (SBX_LEASES_DIR);
  struct dirent *e;
  while (d && (e = readdir (d)) != NULL)
    if (strcmp (e->d_name, ".") != 0 && strcmp (e->d_name, "..") != 0)
      return 0;
  int r = sbx_egress_drop (SBX_EGRESS_TABLE, err);
  if (r < 0 || sbx_netns_dir_release (err) < 0)
    return -1;
  return r;
}
