/* The monitor's part of a runc sandbox's user namespace (userns.h): the
 * lease of its host id range, held for the monitor's life; the root
 * mounted with idmapped layers (sandbox.c); the volumes and host
 * directories remounted idmapped, so that the sandbox's root owns what the
 * host's root owns there and a file it makes has the ids it sees; and the
 * file API set to the sandbox's ids. */
#include "config.h"
#include "monitor-internal.h"
#include "fs.h"
#include "gpu.h"
#include "netns.h"
#include "userns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

bool
mon_userns_wanted (const struct mon *m)
{
  return strcmp (m->rt->name, "runc") == 0 && m->sb->userns_off == NULL;
}

int
mon_userns_begin (struct mon *m, sbx_error **err)
{
  if (!mon_userns_wanted (m))
    return 0;
  uint32_t base;
  if (sbx_userns_lease_take (m->conf, m->st, m->sb->id, &base, &m->userns_lease, err) < 0)
    return sbx_error_wrap (err, "user namespace");
  m->sb->userns_base = base;
  m->sb->userns_size = SBX_USERNS_SIZE;
  if (sbx_userns_open (base, SBX_USERNS_SIZE, &m->userns_fd, err) < 0)
    return sbx_error_wrap (err, "user namespace");
  sbx_fs_set_userns (base);
  mon_log (m, "user namespace: uid and gid 0-%u are %u-%u on the host", SBX_USERNS_SIZE - 1, base,
           base + SBX_USERNS_SIZE - 1);
  return 0;
}

/* Every extra bind's source (monitor.c: host directories, then volumes),
 * a mount of the monitor's own, replaced by its idmapped clone. */
/* Whether directory PATH holds nothing but an ext4 image's lost+found. */
static bool
dir_is_new (const char *path)
{
  _cleanup_closedir_ DIR *d = opendir (path);
  struct dirent *e;
  if (d == NULL)
    return false;
  while ((e = readdir (d)) != NULL)
    if (strcmp (e->d_name, ".") != 0 && strcmp (e->d_name, "..") != 0 && strcmp (e->d_name, "lost+found") != 0)
      return false;
  return true;
}

/* A volume is owned on the host by the id range of the sandbox that first
 * wrote to it (what it makes there is owned by that range, as in its
 * writable layer): a new volume's root is given to this sandbox's range
 * and bound as it is; one another range owns (a range base under
 * userns_base) is idmapped from that range to this one; one host root
 * owns with data in it (imported, or written under runsc) is idmapped as
 * the host directories are, host root's files being the sandbox root's. */
static int
volume_bind (struct mon *m, const char *src, bool readonly, sbx_error **err)
{
  uint32_t base = (uint32_t) m->sb->userns_base;
  struct stat st;
  if (stat (src, &st) < 0)
    return sbx_error_errno (err, errno, "stat `%s`", src);
  /* A read-only one is nobody's to write: seen as the host's ids. */
  if (!readonly && st.st_uid == 0 && st.st_gid == 0 && S_ISDIR (st.st_mode) && dir_is_new (src))
    {
      if (chown (src, base, base) < 0)
        return sbx_error_errno (err, errno, "chown `%s` to the sandbox's ids", src);
      return 0;
    }
  if (st.st_uid == base)
    return 0;
  uint32_t u = (uint32_t) st.st_uid, first = m->conf->userns_base;
  if (st.st_uid != 0 && u >= first && (u - first) % SBX_USERNS_SIZE == 0
      && (uint64_t) u + SBX_USERNS_SIZE <= (uint64_t) first + (uint64_t) m->conf->userns_count * SBX_USERNS_SIZE)
    {
      _cleanup_close_ int ns = -1;
      if (sbx_userns_open_map (u, base, SBX_USERNS_SIZE, &ns, err) < 0)
        return -1;
      return sbx_idmap_remount (src, ns, err);
    }
  return sbx_idmap_remount (src, m->userns_fd, err);
}

int
mon_userns_binds (struct mon *m, sbx_error **err)
{
  size_t nvol = m->sb->opts.volumes ? strv_len (m->sb->opts.volumes) : 0;
  for (size_t i = 0; m->userns_fd >= 0 && i < m->nbinds; i++)
    {
      /* The volumes are the last binds (monitor.c). */
      int r = i + nvol >= m->nbinds ? volume_bind (m, m->binds[i].source, m->binds[i].readonly, err)
                                    : sbx_idmap_remount (m->binds[i].source, m->userns_fd, err);
      if (r < 0)
        return sbx_error_wrap (err, "%s", m->binds[i].destination);
    }
  return 0;
}

/* runc's init, the sandbox's root in its user namespace, resolves the
 * root and the sources of the binds by their paths, which ROOT and RUN
 * (0700, the host's root's) keep from it. In the monitor's own mount
 * namespace a tmpfs on SBX_USERNS_PATHS (0711) gets a bind of each, and the
 * spec names those: nothing else of the store becomes reachable. */
static int
bind_into (const char *src, const char *dst, bool file, sbx_error **err)
{
  if (file)
    {
      int fd = open (dst, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (fd < 0)
        return sbx_error_errno (err, errno, "create `%s`", dst);
      close (fd);
    }
  else if (mkdir (dst, 0700) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", dst);
  if (mount (src, dst, NULL, MS_BIND, NULL) < 0)
    return sbx_error_errno (err, errno, "bind `%s` on `%s`", src, dst);
  return 0;
}

/* A sysfs shows the network namespace of whoever mounts it, and the
 * kernel lets only that namespace's owner mount one: runc's init, root of
 * a user namespace that does not own sbx's network namespace, cannot.
 * The monitor mounts it from a thread inside that namespace instead. */
struct sysfs_job {
  const char *dst;
  int errnum;
};

static void
mount_sysfs (void *arg)
{
  struct sysfs_job *j = arg;
  if (mount ("sysfs", j->dst, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL) < 0)
    j->errnum = errno;
}

static int
sysfs_of_netns (struct mon *m, char **ret, sbx_error **err)
{
  _cleanup_free_ char *dst = xasprintf ("%s/sys", SBX_USERNS_PATHS);
  if (mkdir (dst, 0700) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", dst);
  struct sysfs_job j = { dst, 0 };
  if (sbx_netns_run (m->net->nsfd, mount_sysfs, &j, err) < 0)
    return -1;
  if (j.errnum)
    return sbx_error_errno (err, j.errnum, "mount sysfs on `%s`", dst);
  *ret = steal_pointer (&dst);
  return 0;
}

int
mon_userns_paths (struct mon *m, char **rootfs, char **resolv, char **sysfs, sbx_error **err)
{
  if (m->userns_fd < 0)
    return 0;
  const char *top = SBX_USERNS_PATHS;
  if (mkdir (top, 0711) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", top);
  if (mount ("tmpfs", top, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0711,size=64k") < 0)
    return sbx_error_errno (err, errno, "mount a tmpfs on `%s`", top);
  m->userns_paths = true;
  if (m->net && sysfs_of_netns (m, sysfs, err) < 0)
    return -1;
  _cleanup_free_ char *root = xasprintf ("%s/rootfs", top);
  if (bind_into (*rootfs, root, false, err) < 0)
    return -1;
  free (*rootfs);
  *rootfs = steal_pointer (&root);
  if (*resolv)
    {
      _cleanup_free_ char *r = xasprintf ("%s/resolv.conf", top);
      if (bind_into (*resolv, r, true, err) < 0)
        return -1;
      free (*resolv);
      *resolv = steal_pointer (&r);
    }
  for (size_t i = 0; i < m->nbinds; i++)
    {
      struct stat st;
      _cleanup_free_ char *dst = xasprintf ("%s/%zu", top, i);
      if (stat (m->binds[i].source, &st) < 0)
        return sbx_error_errno (err, errno, "stat `%s`", m->binds[i].source);
      if (bind_into (m->binds[i].source, dst, !S_ISDIR (st.st_mode), err) < 0)
        return -1;
      free (m->binds[i].source);
      m->binds[i].source = steal_pointer (&dst);
    }
  /* The GPUs' device nodes (gpu.h), made here as runc would make them
   * with host root's mknod, on a tmpfs of their own that allows devices
   * (the one above does not), owned as the spec says in the range; the
   * spec binds them (spec.c). The CDI mounts are bound as the binds are. */
  if (m->gpu && m->gpu->nnodes > 0)
    {
      _cleanup_free_ char *dir = xasprintf ("%s/gpu", top);
      if (mkdir (dir, 0711) < 0 && errno != EEXIST)
        return sbx_error_errno (err, errno, "mkdir `%s`", dir);
      if (mount ("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0711,size=64k") < 0)
        return sbx_error_errno (err, errno, "mount a tmpfs on `%s`", dir);
    }
  for (size_t i = 0; m->gpu && i < m->gpu->nnodes; i++)
    {
      sbx_cdi_node *n = &m->gpu->nodes[i];
      _cleanup_free_ char *dst = xasprintf ("%s/gpu/%zu", top, i);
      mode_t type = n->type == 'b' ? S_IFBLK : S_IFCHR;
      uint32_t base = (uint32_t) m->sb->userns_base;
      if (mknod (dst, type | (mode_t) ((n->file_mode >= 0 ? n->file_mode : 0666) & 07777),
                 makedev ((unsigned) n->major, (unsigned) n->minor))
              < 0
          || chmod (dst, (mode_t) ((n->file_mode >= 0 ? n->file_mode : 0666) & 07777)) < 0
          || chown (dst, base + (uint32_t) (n->uid >= 0 ? n->uid : 0), base + (uint32_t) (n->gid >= 0 ? n->gid : 0))
                 < 0)
        return sbx_error_errno (err, errno, "make the device node `%s` as `%s`", n->path, dst);
      free (n->host_path);
      n->host_path = steal_pointer (&dst);
    }
  for (size_t i = 0; m->gpu && i < m->gpu->nmounts; i++)
    {
      sbx_cdi_mount *cm = &m->gpu->mounts[i];
      struct stat st;
      _cleanup_free_ char *dst = xasprintf ("%s/gpu-mount-%zu", top, i);
      if (stat (cm->host_path, &st) < 0)
        return sbx_error_errno (err, errno, "stat `%s`", cm->host_path);
      if (bind_into (cm->host_path, dst, !S_ISDIR (st.st_mode), err) < 0)
        return -1;
      free (cm->host_path);
      cm->host_path = steal_pointer (&dst);
    }
  return 0;
}

/* Last of the teardown: nothing of the range is in use any more. */
void
mon_userns_end (struct mon *m)
{
  if (m->userns_paths)
    umount2 (SBX_USERNS_PATHS, MNT_DETACH);
  m->userns_paths = false;
  if (m->userns_fd >= 0)
    close (m->userns_fd);
  m->userns_fd = -1;
  sbx_userns_lease_release ((uint32_t) m->sb->userns_base, m->userns_lease);
  m->userns_lease = -1;
}
