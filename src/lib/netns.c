/* Network namespaces and their links over rtnetlink (libmnl); see netns.h.
 *
 * Every request carries NLM_F_ACK and waits for the kernel's answer, so a
 * refusal becomes an sbx_error naming the interface (with the kernel's
 * extended-ACK text when it gives one) instead of passing unnoticed. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "netns.h"
#include "util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>

/* Requests are a few attributes; replies (one RTM_NEWLINK) a few KiB. */
#define RTNL_REQ_SIZE 1024
#define RTNL_REPLY_SIZE 32768

static inline void
mnl_socket_closep (struct mnl_socket **s)
{
  if (*s)
    mnl_socket_close (*s);
}
#define _cleanup_mnl_socket_ __attribute__ ((cleanup (mnl_socket_closep)))

const char *
sbx_netns_dir (void)
{
  const char *d = getenv ("SBX_NETNS_DIR");
  return d && *d ? d : SBX_NETNS_DIR_DEFAULT;
}

char *
sbx_netns_path (const char *name)
{
  if (!name_is_valid (name))
    return NULL;
  return xasprintf ("%s/%s", sbx_netns_dir (), name);
}

static bool
ifname_is_valid (const char *s)
{
  size_t n = s ? strlen (s) : 0;
  if (n == 0 || n > SBX_IFNAME_MAX)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
      return false;
  return true;
}

static int
check_ifname (const char *s, sbx_error **err)
{
  if (ifname_is_valid (s))
    return 0;
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                        "invalid interface name '%s' (1 to %d characters of [a-z0-9_-])", s ? s : "", SBX_IFNAME_MAX);
}

static int
check_family (int family, int prefixlen, sbx_error **err)
{
  int max = family == AF_INET ? 32 : family == AF_INET6 ? 128 : -1;
  if (max < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "address family %d is neither IPv4 nor IPv6", family);
  if (prefixlen < 0 || prefixlen > max)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "prefix length %d out of 0..%d", prefixlen, max);
  return 0;
}

static size_t
addr_len (int family)
{
  return family == AF_INET ? sizeof (struct in_addr) : sizeof (struct in6_addr);
}

/* ---- sockets ---- */

/* A bound NETLINK_ROUTE socket in the calling thread's namespace. */
static struct mnl_socket *
rtnl_open_here (int *ret_errno, const char **ret_step)
{
  struct mnl_socket *s = mnl_socket_open2 (NETLINK_ROUTE, SOCK_CLOEXEC);
  if (s == NULL)
    {
      *ret_errno = errno;
      *ret_step = "socket";
      return NULL;
    }
  if (mnl_socket_bind (s, 0, MNL_SOCKET_AUTOPID) < 0)
    {
      *ret_errno = errno;
      *ret_step = "bind";
      mnl_socket_close (s);
      return NULL;
    }
  /* Best effort: the kernel's own words on a failure, and error ACKs
   * without the whole request echoed back. */
  int one = 1;
  (void) mnl_socket_setsockopt (s, NETLINK_EXT_ACK, &one, sizeof one);
  (void) mnl_socket_setsockopt (s, NETLINK_CAP_ACK, &one, sizeof one);
  return s;
}

/* Work done inside a namespace: FN (ARG) runs there; a failure to get
 * there is left in ERRNUM and STEP. */
typedef struct ns_job {
  int nsfd;
  void (*fn) (void *arg);
  void *arg;
  int errnum;
  const char *step;
} ns_job;

static void *
ns_thread (void *arg)
{
  ns_job *job = arg;
  /* Only this thread moves; it ends right after, taking the namespace with it. */
  if (setns (job->nsfd, CLONE_NEWNET) < 0)
    {
      job->errnum = errno;
      job->step = "setns";
      return NULL;
    }
  job->fn (job->arg);
  return NULL;
}

/* Runs FN (ARG) in NSFD's namespace, in a short-lived thread; right here
 * when NSFD < 0. -1 with *RET_ERRNO and *RET_STEP when it could not get
 * there (FN then did not run). */
static int
in_netns (int nsfd, void (*fn) (void *), void *arg, int *ret_errno, const char **ret_step)
{
  if (nsfd < 0)
    {
      fn (arg);
      return 0;
    }
  ns_job job = { .nsfd = nsfd, .fn = fn, .arg = arg };
  pthread_t t;
  int r = thread_start_quiet (&t, ns_thread, &job);
  if (r != 0)
    {
      *ret_errno = r;
      *ret_step = "start a thread";
      return -1;
    }
  pthread_join (t, NULL);
  if (job.step)
    {
      *ret_errno = job.errnum;
      *ret_step = job.step;
      return -1;
    }
  return 0;
}

typedef struct ns_socket_job {
  struct mnl_socket *sock;
  int errnum;
  const char *step;
} ns_socket_job;

static void
ns_socket_open (void *arg)
{
  ns_socket_job *job = arg;
  job->sock = rtnl_open_here (&job->errnum, &job->step);
}

/* A NETLINK_ROUTE socket in NSFD's namespace (the caller's when NSFD < 0). */
static int
rtnl_open (int nsfd, struct mnl_socket **ret, sbx_error **err)
{
  ns_socket_job job = { .step = "socket" };
  if (in_netns (nsfd, ns_socket_open, &job, &job.errnum, &job.step) < 0)
    return sbx_error_errno (err, job.errnum, "netlink socket in a namespace: %s", job.step);
  if (job.sock == NULL)
    return sbx_error_errno (err, job.errnum, "netlink socket%s: %s", nsfd >= 0 ? " in a namespace" : "", job.step);
  *ret = job.sock;
  return 0;
}

/* ---- requests ---- */

typedef struct rtnl_reply {
  mnl_cb_t cb;
  void *data;
  char kmsg[256]; /* the extended ACK's message, if any */
} rtnl_reply;

static int
ack_attr (const struct nlattr *a, void *data)
{
  rtnl_reply *r = data;
  if (mnl_attr_get_type (a) == NLMSGERR_ATTR_MSG && mnl_attr_validate (a, MNL_TYPE_NUL_STRING) == 0)
    snprintf (r->kmsg, sizeof r->kmsg, "%s", mnl_attr_get_str (a));
  return MNL_CB_OK;
}

static int
on_error (const struct nlmsghdr *nlh, void *data)
{
  const struct nlmsgerr *e = mnl_nlmsg_get_payload (nlh);
  if (mnl_nlmsg_get_payload_len (nlh) < sizeof *e)
    {
      errno = EBADMSG;
      return MNL_CB_ERROR;
    }
  if (e->error == 0)
    return MNL_CB_STOP;
  if (nlh->nlmsg_flags & NLM_F_ACK_TLVS)
    {
      size_t off = sizeof *e;
      if (!(nlh->nlmsg_flags & NLM_F_CAPPED) && e->msg.nlmsg_len >= sizeof (struct nlmsghdr))
        off += e->msg.nlmsg_len - sizeof (struct nlmsghdr);
      if (MNL_ALIGN (off) < mnl_nlmsg_get_payload_len (nlh))
        (void) mnl_attr_parse (nlh, (unsigned int) off, ack_attr, data);
    }
  errno = e->error < 0 ? -e->error : e->error;
  return MNL_CB_ERROR;
}

static int
on_data (const struct nlmsghdr *nlh, void *data)
{
  rtnl_reply *r = data;
  return r->cb ? r->cb (nlh, r->data) : MNL_CB_OK;
}

static int
rtnl_fail (sbx_error **err, int e, const rtnl_reply *r, const char *what)
{
  sbx_code code = e == ENODEV ? SBX_E_NOT_FOUND : e == EEXIST ? SBX_E_BUSY : SBX_E_INTERNAL;
  if (r->kmsg[0])
    return sbx_error_set (err, code, e, "%s: %s", what, r->kmsg);
  return sbx_error_set (err, code, e, "%s", what);
}

/* Sends NLH with NLM_F_ACK and reads up to the kernel's ACK; replies before
 * it go to CB. WHAT names the operation and its interface in an error. */
static int
rtnl_talk (struct mnl_socket *s, struct nlmsghdr *nlh, mnl_cb_t cb, void *data, const char *what, sbx_error **err)
{
  static uint32_t seq_counter;
  _cleanup_free_ char *buf = xmalloc (RTNL_REPLY_SIZE);
  rtnl_reply reply = { .cb = cb, .data = data };
  mnl_cb_t ctl[NLMSG_MIN_TYPE] = { [NLMSG_ERROR] = on_error };
  uint32_t portid = mnl_socket_get_portid (s);
  uint32_t seq = __atomic_add_fetch (&seq_counter, 1, __ATOMIC_RELAXED);

  nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = seq;
  if (mnl_socket_sendto (s, nlh, nlh->nlmsg_len) < 0)
    return rtnl_fail (err, errno, &reply, what);
  for (;;)
    {
      ssize_t n = mnl_socket_recvfrom (s, buf, RTNL_REPLY_SIZE);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return rtnl_fail (err, errno, &reply, what);
      errno = 0;
      int r = mnl_cb_run2 (buf, (size_t) n, seq, portid, on_data, &reply, ctl, ARRAY_SIZE (ctl));
      if (r < 0)
        return rtnl_fail (err, errno ? errno : EPROTO, &reply, what);
      if (r == MNL_CB_STOP)
        return 0;
    }
}

/* A request about the link IFNAME (by name: the kernel looks it up in the
 * socket's namespace, where if_nametoindex could not). */
static struct nlmsghdr *
link_msg (char *buf, uint16_t type, uint16_t flags, const char *ifname)
{
  struct nlmsghdr *nlh = mnl_nlmsg_put_header (buf);
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = flags;
  struct ifinfomsg *ifi = mnl_nlmsg_put_extra_header (nlh, sizeof *ifi);
  ifi->ifi_family = AF_UNSPEC;
  mnl_attr_put_strz (nlh, IFLA_IFNAME, ifname);
  return nlh;
}

static int
ifindex_cb (const struct nlmsghdr *nlh, void *data)
{
  if (nlh->nlmsg_type == RTM_NEWLINK && mnl_nlmsg_get_payload_len (nlh) >= sizeof (struct ifinfomsg))
    *(int *) data = ((const struct ifinfomsg *) mnl_nlmsg_get_payload (nlh))->ifi_index;
  return MNL_CB_OK;
}

static int
rtnl_ifindex (struct mnl_socket *s, const char *ifname, int *ret_index, sbx_error **err)
{
  alignas (struct nlmsghdr) char buf[RTNL_REQ_SIZE] = { 0 };
  struct nlmsghdr *nlh = link_msg (buf, RTM_GETLINK, 0, ifname);
  char what[64];
  int ifindex = 0;
  snprintf (what, sizeof what, "find interface %s", ifname);
  if (rtnl_talk (s, nlh, ifindex_cb, &ifindex, what, err) < 0)
    return -1;
  if (ifindex <= 0)
    return sbx_error_set (err, SBX_E_NOT_FOUND, ENODEV, "%s", what);
  *ret_index = ifindex;
  return 0;
}

/* ---- links, addresses, routes ---- */

int
sbx_veth_create (const char *host_if, const char *peer_if, int peer_nsfd, sbx_error **err)
{
  if (check_ifname (host_if, err) < 0 || check_ifname (peer_if, err) < 0)
    return -1;
  _cleanup_mnl_socket_ struct mnl_socket *s = NULL;
  char what[96];
  snprintf (what, sizeof what, "create veth pair %s / %s", host_if, peer_if);
  if (rtnl_open (-1, &s, err) < 0)
    return sbx_error_wrap (err, "%s", what);

  alignas (struct nlmsghdr) char buf[RTNL_REQ_SIZE] = { 0 };
  struct nlmsghdr *nlh = link_msg (buf, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, host_if);
  struct nlattr *linkinfo = mnl_attr_nest_start (nlh, IFLA_LINKINFO);
  mnl_attr_put_strz (nlh, IFLA_INFO_KIND, "veth");
  struct nlattr *data = mnl_attr_nest_start (nlh, IFLA_INFO_DATA);
  struct nlattr *peer = mnl_attr_nest_start (nlh, VETH_INFO_PEER);
  /* The peer's attributes follow an ifinfomsg of its own, as in a request. */
  struct ifinfomsg *pifi = mnl_nlmsg_get_payload_tail (nlh);
  memset (pifi, 0, sizeof *pifi);
  pifi->ifi_family = AF_UNSPEC;
  nlh->nlmsg_len += MNL_ALIGN (sizeof *pifi);
  mnl_attr_put_strz (nlh, IFLA_IFNAME, peer_if);
  if (peer_nsfd >= 0)
    mnl_attr_put_u32 (nlh, IFLA_NET_NS_FD, (uint32_t) peer_nsfd);
  mnl_attr_nest_end (nlh, peer);
  mnl_attr_nest_end (nlh, data);
  mnl_attr_nest_end (nlh, linkinfo);
  return rtnl_talk (s, nlh, NULL, NULL, what, err);
}

int
sbx_link_set_up (int nsfd, const char *ifname, sbx_error **err)
{
  if (check_ifname (ifname, err) < 0)
    return -1;
  _cleanup_mnl_socket_ struct mnl_socket *s = NULL;
  char what[64];
  snprintf (what, sizeof what, "set link %s up", ifname);
  if (rtnl_open (nsfd, &s, err) < 0)
    return sbx_error_wrap (err, "%s", what);

  alignas (struct nlmsghdr) char buf[RTNL_REQ_SIZE] = { 0 };
  struct nlmsghdr *nlh = link_msg (buf, RTM_NEWLINK, 0, ifname);
  struct ifinfomsg *ifi = mnl_nlmsg_get_payload (nlh);
  ifi->ifi_change = IFF_UP;
  ifi->ifi_flags = IFF_UP;
  return rtnl_talk (s, nlh, NULL, NULL, what, err);
}

int
sbx_link_delete (int nsfd, const char *ifname, sbx_error **err)
{
  if (check_ifname (ifname, err) < 0)
    return -1;
  _cleanup_mnl_socket_ struct mnl_socket *s = NULL;
  char what[64];
  snprintf (what, sizeof what, "delete link %s", ifname);
  if (rtnl_open (nsfd, &s, err) < 0)
    return sbx_error_wrap (err, "%s", what);

  alignas (struct nlmsghdr) char buf[RTNL_REQ_SIZE] = { 0 };
  struct nlmsghdr *nlh = link_msg (buf, RTM_DELLINK, 0, ifname);
  _cleanup_error_ sbx_error *e = NULL;
  if (rtnl_talk (s, nlh, NULL, NULL, what, &e) == 0 || e->errnum == ENODEV)
    return 0;
  return sbx_error_set (err, e->code, e->errnum, "%s", e->msg);
}

int
sbx_addr_add (int nsfd, const char *ifname, int family, const void *addr, int prefixlen, sbx_error **err)
{
  if (check_ifname (ifname, err) < 0 || check_family (family, prefixlen, err) < 0)
    return -1;
  char text[INET6_ADDRSTRLEN] = "?", what[128];
  inet_ntop (family, addr, text, sizeof text);
  snprintf (what, sizeof what, "add address %s/%d to %s", text, prefixlen, ifname);
  _cleanup_mnl_socket_ struct mnl_socket *s = NULL;
  int ifindex = 0;
  if (rtnl_open (nsfd, &s, err) < 0 || rtnl_ifindex (s, ifname, &ifindex, err) < 0)
    return sbx_error_wrap (err, "%s", what);

  alignas (struct nlmsghdr) char buf[RTNL_REQ_SIZE] = { 0 };
  struct nlmsghdr *nlh = mnl_nlmsg_put_header (buf);
  nlh->nlmsg_type = RTM_NEWADDR;
  nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
  struct ifaddrmsg *ifa = mnl_nlmsg_put_extra_header (nlh, sizeof *ifa);
  ifa->ifa_family = (uint8_t) family;
  ifa->ifa_prefixlen = (uint8_t) prefixlen;
  ifa->ifa_scope = RT_SCOPE_UNIVERSE;
  ifa->ifa_index = (uint32_t) ifindex;
  /* As `ip addr add` does without a peer: local and address are the same. */
  mnl_attr_put (nlh, IFA_LOCAL, addr_len (family), addr);
  mnl_attr_put (nlh, IFA_ADDRESS, addr_len (family), addr);
  if (family == AF_INET6)
    {
      /* No duplicate address detection: the address is usable at once
       * rather than tentative for a second or two (sbx alone hands out
       * the pool's addresses). ifa_flags holds the low 8 bits for kernels
       * without IFA_FLAGS. */
      ifa->ifa_flags = IFA_F_NODAD;
      mnl_attr_put_u32 (nlh, IFA_FLAGS, IFA_F_NODAD);
    }
  return rtnl_talk (s, nlh, NULL, NULL, what, err);
}

/* ---- sysctl ---- */

typedef struct sysctl_job {
  const char *file, *value;
  int errnum;
  const char *step;
} sysctl_job;

/* /proc/sys/net resolves against the namespace of the thread that opens
 * it, so open and write happen in the job's thread. */
static void
sysctl_write (void *arg)
{
  sysctl_job *job = arg;
  _cleanup_close_ int fd = open (job->file, O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    {
      job->errnum = errno;
      job->step = "open";
      return;
    }
  if (write_all (fd, job->value, strlen (job->value)) < 0)
    {
      job->errnum = errno;
      job->step = "write";
    }
}

static bool
sysctl_path_is_valid (const char *path)
{
  if (path == NULL || *path == '\0' || *path == '/' || strstr (path, "..") || strstr (path, "//"))
    return false;
  for (const char *p = path; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'
          || *p == '.' || *p == '/'))
      return false;
  return true;
}

int
sbx_netns_sysctl (int nsfd, const char *path, const char *value, sbx_error **err)
{
  if (!sysctl_path_is_valid (path))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "invalid sysctl path '%s' (relative to /proc/sys, [A-Za-z0-9_.-/], no '..')",
                          path ? path : "");
  if (value == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "sysctl %s: no value", path);
  _cleanup_free_ char *file = xasprintf ("/proc/sys/%s", path);
  sysctl_job job = { .file = file, .value = value };
  if (in_netns (nsfd, sysctl_write, &job, &job.errnum, &job.step) < 0)
    return sbx_error_errno (err, job.errnum, "sysctl %s in a namespace: %s", path, job.step);
  if (job.step)
    return sbx_error_set (err, job.errnum == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INTERNAL, job.errnum,
                          "sysctl %s = %s: %s %s", path, value, job.step, file);
  return 0;
}

int
sbx_route_add_default (int nsfd, int family, const void *gateway, sbx_error **err)
{
  if (check_family (family, 0, err) < 0)
    return -1;
  char text[INET6_ADDRSTRLEN] = "?", what[96];
  inet_ntop (family, gateway, text, sizeof text);
  snprintf (what, sizeof what, "add default route via %s", text);
  _cleanup_mnl_socket_ struct mnl_socket *s = NULL;
  if (rtnl_open (nsfd, &s, err) < 0)
    return sbx_error_wrap (err, "%s", what);

  alignas (struct nlmsghdr) char buf[RTNL_REQ_SIZE] = { 0 };
  struct nlmsghdr *nlh = mnl_nlmsg_put_header (buf);
  nlh->nlmsg_type = RTM_NEWROUTE;
  nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
  struct rtmsg *rtm = mnl_nlmsg_put_extra_header (nlh, sizeof *rtm);
  rtm->rtm_family = (uint8_t) family;
  rtm->rtm_dst_len = 0;
  rtm->rtm_table = RT_TABLE_MAIN;
  rtm->rtm_protocol = RTPROT_BOOT;
  rtm->rtm_scope = RT_SCOPE_UNIVERSE;
  rtm->rtm_type = RTN_UNICAST;
  mnl_attr_put (nlh, RTA_GATEWAY, addr_len (family), gateway);
  return rtnl_talk (s, nlh, NULL, NULL, what, err);
}

/* ---- named namespaces ---- */

/* Makes DIR a shared mount point, binding it onto itself first when it is
 * not a mount point yet (iproute2's netns_add does the same for /run/netns):
 * the namespaces mounted in it then reach, and leave, other mount namespaces. */
static int
make_dir_shared (const char *dir, sbx_error **err)
{
  bool bound = false;
  while (mount ("", dir, "none", MS_SHARED | MS_REC, NULL) < 0)
    {
      if (errno != EINVAL || bound)
        return sbx_error_errno (err, errno, "make %s a shared mount", dir);
      if (mount (dir, dir, "none", MS_BIND | MS_REC, NULL) < 0)
        return sbx_error_errno (err, errno, "bind %s onto itself", dir);
      bound = true;
    }
  return 0;
}

/* A fresh namespace, made by a short-lived thread that unshares into it,
 * bind-mounts it on PATH and brings its loopback up there: the caller's
 * own threads never change namespace, and no process is forked. */
typedef struct netns_new_job {
  const char *path;
  int errnum;
  const char *step;
  sbx_error *err;
} netns_new_job;

static void *
netns_new_thread (void *arg)
{
  netns_new_job *job = arg;
  if (unshare (CLONE_NEWNET) < 0)
    {
      job->errnum = errno;
      job->step = "unshare(CLONE_NEWNET)";
      return NULL;
    }
  if (mount ("/proc/thread-self/ns/net", job->path, "none", MS_BIND, NULL) < 0)
    {
      job->errnum = errno;
      job->step = "bind-mount the namespace";
      return NULL;
    }
  if (sbx_link_set_up (-1, "lo", &job->err) < 0)
    job->step = "loopback";
  return NULL;
}

static int
netns_mount_new (const char *path, sbx_error **err)
{
  netns_new_job job = { .path = path };
  pthread_t t;
  int r = thread_start_quiet (&t, netns_new_thread, &job);
  if (r != 0)
    return sbx_error_errno (err, r, "start a thread");
  pthread_join (t, NULL);
  if (job.err)
    {
      *err = job.err;
      return -1;
    }
  if (job.step)
    return sbx_error_errno (err, job.errnum, "%s on %s", job.step, path);
  return 0;
}

/* Detaches every mount on PATH (a propagated copy can stack one more). */
static int
umount_all (const char *path, sbx_error **err)
{
  for (int i = 0; i < 16; i++)
    if (umount2 (path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
      {
        if (errno == EINVAL || errno == ENOENT)
          return 0;
        return sbx_error_errno (err, errno, "unmount %s", path);
      }
  return sbx_error_set (err, SBX_E_INTERNAL, 0, "unmount %s: still mounted", path);
}

int
sbx_netns_create (const char *name, int *ret_nsfd, sbx_error **err)
{
  _cleanup_free_ char *path = sbx_netns_path (name);
  if (path == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid network namespace name '%s'", name ? name : "");
  const char *dir = sbx_netns_dir ();
  if (mkdir_p (dir, 0755, err) < 0)
    return sbx_error_wrap (err, "network namespace %s", name);
  /* One creator at a time: two first-time binds of DIR would stack. */
  _cleanup_close_ int lock = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock < 0 || flock (lock, LOCK_EX) < 0)
    return sbx_error_errno (err, errno, "network namespace %s: lock %s", name, dir);
  if (make_dir_shared (dir, err) < 0)
    return sbx_error_wrap (err, "network namespace %s", name);

  _cleanup_close_ int file = open (path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
  if (file < 0 && errno == EEXIST)
    return sbx_error_set (err, SBX_E_BUSY, EEXIST, "network namespace %s exists (%s)", name, path);
  if (file < 0)
    return sbx_error_errno (err, errno, "network namespace %s: create %s", name, path);
  if (netns_mount_new (path, err) < 0)
    {
      umount_all (path, NULL);
      unlink (path);
      return sbx_error_wrap (err, "network namespace %s", name);
    }

  _cleanup_close_ int nsfd = open (path, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0)
    {
      sbx_error_errno (err, errno, "open %s", path);
      umount_all (path, NULL);
      unlink (path);
      return sbx_error_wrap (err, "network namespace %s", name);
    }
  *ret_nsfd = steal_fd (&nsfd);
  return 0;
}

int
sbx_netns_dir_release (sbx_error **err)
{
  const char *dir = sbx_netns_dir ();
  _cleanup_close_ int lock = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock < 0)
    return errno == ENOENT ? 0 : sbx_error_errno (err, errno, "open %s", dir);
  if (flock (lock, LOCK_EX) < 0)
    return sbx_error_errno (err, errno, "lock %s", dir);
  _cleanup_closedir_ DIR *d = fdopendir (dup (lock));
  if (d == NULL)
    return sbx_error_errno (err, errno, "read %s", dir);
  struct dirent *e;
  while ((e = readdir (d)) != NULL)
    if (strcmp (e->d_name, ".") != 0 && strcmp (e->d_name, "..") != 0)
      return 0; /* a namespace is there */
  return umount_all (dir, err);
}

typedef struct run_job {
  void (*fn) (void *);
  void *arg;
} run_job;

static void
run_fn (void *arg)
{
  run_job *j = arg;
  j->fn (j->arg);
}

int
sbx_netns_run (int nsfd, void (*fn) (void *arg), void *arg, sbx_error **err)
{
  run_job j = { fn, arg };
  int errnum = 0;
  const char *step = NULL;
  if (in_netns (nsfd, run_fn, &j, &errnum, &step) < 0)
    return sbx_error_errno (err, errnum, "enter a network namespace: %s", step);
  return 0;
}

int
sbx_netns_remove (const char *name, sbx_error **err)
{
  _cleanup_free_ char *path = sbx_netns_path (name);
  if (path == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid network namespace name '%s'", name ? name : "");
  if (umount_all (path, err) < 0)
    return sbx_error_wrap (err, "remove network namespace %s", name);
  if (unlink (path) < 0 && errno != ENOENT)
    return sbx_error_errno (err, errno, "remove network namespace %s: unlink %s", name, path);
  return 0;
}
