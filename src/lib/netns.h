/* Network namespaces and the links in them, over rtnetlink (libmnl): a named
 * namespace kept alive by a bind mount (as `ip netns add` does), a veth pair
 * whose peer end is born inside it, addresses, link state, a default route,
 * and the namespace's sysctls. Nothing here shells out to `ip`.
 *
 * Operations inside a namespace (NSFD >= 0) open their NETLINK_ROUTE socket
 * (or their /proc/sys/net file) in a short-lived thread that setns()es into
 * NSFD: a netlink socket stays bound to the namespace it was created in, and
 * the calling thread never leaves its own namespace, so no error path can
 * strand it in the wrong one. NSFD == -1 means the caller's namespace. */
#ifndef SBX_NETNS_H
#define SBX_NETNS_H

#include "error.h"

/* Where named namespaces are mounted: $SBX_NETNS_DIR, else this. */
#define SBX_NETNS_DIR_DEFAULT "/run/sbx/netns"
/* An interface name: 1 to 15 characters of [a-z0-9_-]. */
#define SBX_IFNAME_MAX 15

const char *sbx_netns_dir (void);
/* DIR/NAME, or NULL when NAME is not a valid name (util.h name_is_valid). */
char *sbx_netns_path (const char *name);

/* A new network namespace, bind-mounted at DIR/NAME (DIR is made a shared
 * mount point first, so the mount reaches other mount namespaces), with its
 * loopback up. *ret_nsfd: an O_RDONLY|O_CLOEXEC fd of it. A NAME that exists
 * is BUSY. */
int sbx_netns_create (const char *name, int *ret_nsfd, sbx_error **err);
/* Detaches and unlinks DIR/NAME; a NAME that is not there is not an error.
 * The namespace itself dies with its last process, fd and mount. */
int sbx_netns_remove (const char *name, sbx_error **err);
/* Unmounts DIR's bind mount of itself (made by the first create) when no
 * namespace is left in it. */
int sbx_netns_dir_release (sbx_error **err);
/* Runs FN (ARG) in a short-lived thread inside NSFD's namespace (right here
 * when NSFD < 0): the calls of this file FN makes with NSFD -1 act there,
 * one thread for many of them. */
int sbx_netns_run (int nsfd, void (*fn) (void *arg), void *arg, sbx_error **err);

/* A veth pair: HOST_IF in the caller's namespace, PEER_IF created directly
 * in the namespace PEER_NSFD. Both down, without addresses. */
int sbx_veth_create (const char *host_if, const char *peer_if, int peer_nsfd, sbx_error **err);
int sbx_link_set_up (int nsfd, const char *ifname, sbx_error **err);
/* ADDR: a struct in_addr (AF_INET) or struct in6_addr (AF_INET6). An IPv6
 * address skips duplicate address detection (IFA_F_NODAD): usable at once. */
int sbx_addr_add (int nsfd, const char *ifname, int family, const void *addr, int prefixlen, sbx_error **err);
/* Needs the gateway reachable: an address on a link that is up. */
int sbx_route_add_default (int nsfd, int family, const void *gateway, sbx_error **err);
/* Deleting one end of a veth pair deletes both. No such link is not an error. */
int sbx_link_delete (int nsfd, const char *ifname, sbx_error **err);

/* Writes VALUE to /proc/sys/PATH (e.g. "net/ipv6/conf/all/disable_ipv6") as
 * NSFD's namespace sees it. PATH is relative, of [A-Za-z0-9_.-/], without
 * ".."; INVALID_ARGUMENT otherwise. No such file is NOT_FOUND. */
int sbx_netns_sysctl (int nsfd, const char *path, const char *value, sbx_error **err);

#endif
