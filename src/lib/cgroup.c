/* Cgroup counters and cleanup, v1 (hybrid) and v2. */
#include "config.h"
#include "cgroup.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#define CG_ROOT "/sys/fs/cgroup"

/* Asked on every counter read: the host's answer does not change. */
int
sbx_cgroup_version (void)
{
  static int version;
  if (version == 0)
    {
      struct statfs fs;
      version = statfs (CG_ROOT, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC ? 2 : 1;
    }
  return version;
}

static int64_t
read_int (const char *path)
{
  _cleanup_free_ char *s = NULL;
  if (read_file (path, 4096, &s, NULL, NULL) < 0)
    return 0;
  return strtoll (s, NULL, 10);
}

/* The value of KEY in a "key value" lines file. */
static int64_t
read_keyed (const char *path, const char *key)
{
  _cleanup_free_ char *s = NULL;
  if (read_file (path, 65536, &s, NULL, NULL) < 0)
    return 0;
  size_t kl = strlen (key);
  for (char *line = s; line && *line; line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL)
    if (strncmp (line, key, kl) == 0 && line[kl] == ' ')
      return strtoll (line + kl + 1, NULL, 10);
  return 0;
}

static void read_one (const char *rel, sbx_cgroup_stats *ret);

#define KEEP_MAX(a, b) ((a) = (b) > (a) ? (b) : (a))

void
sbx_cgroup_stats_read (const char *rel, sbx_cgroup_stats *ret)
{
  sbx_cgroup_stats child;
  _cleanup_free_ char *ctr = xasprintf ("%s/ctr", rel);
  read_one (rel, ret);
  read_one (ctr, &child);
  KEEP_MAX (ret->oom_kills, child.oom_kills);
  KEEP_MAX (ret->pids_limit_hits, child.pids_limit_hits);
  KEEP_MAX (ret->memory_peak, child.memory_peak);
  KEEP_MAX (ret->pids_peak, child.pids_peak);
  KEEP_MAX (ret->cpu_usage_ns, child.cpu_usage_ns);
  KEEP_MAX (ret->memory_current, child.memory_current);
}

static void
read_one (const char *rel, sbx_cgroup_stats *ret)
{
  memset (ret, 0, sizeof *ret);
  if (sbx_cgroup_version () == 2)
    {
      _cleanup_free_ char *ev = xasprintf (CG_ROOT "%s/memory.events", rel);
      _cleanup_free_ char *pk = xasprintf (CG_ROOT "%s/memory.peak", rel);
      _cleanup_free_ char *cur = xasprintf (CG_ROOT "%s/memory.current", rel);
      _cleanup_free_ char *pe = xasprintf (CG_ROOT "%s/pids.events", rel);
      _cleanup_free_ char *pc = xasprintf (CG_ROOT "%s/pids.current", rel);
      ret->oom_kills = read_keyed (ev, "oom_kill");
      ret->memory_peak = read_int (pk);
      ret->memory_current = read_int (cur);
      ret->pids_limit_hits = read_keyed (pe, "max");
      ret->pids_current = read_int (pc);
      _cleanup_free_ char *pp = xasprintf (CG_ROOT "%s/pids.peak", rel);
      ret->pids_peak = read_int (pp);
      _cleanup_free_ char *cs = xasprintf (CG_ROOT "%s/cpu.stat", rel);
      ret->cpu_usage_ns = read_keyed (cs, "usage_usec") * 1000;
      return;
    }
  _cleanup_free_ char *oc = xasprintf (CG_ROOT "/memory%s/memory.oom_control", rel);
  _cleanup_free_ char *pk = xasprintf (CG_ROOT "/memory%s/memory.max_usage_in_bytes", rel);
  _cleanup_free_ char *cur = xasprintf (CG_ROOT "/memory%s/memory.usage_in_bytes", rel);
  _cleanup_free_ char *pe = xasprintf (CG_ROOT "/pids%s/pids.events", rel);
  _cleanup_free_ char *pc = xasprintf (CG_ROOT "/pids%s/pids.current", rel);
  ret->oom_kills = read_keyed (oc, "oom_kill");
  ret->memory_peak = read_int (pk);
  ret->memory_current = read_int (cur);
  ret->pids_limit_hits = read_keyed (pe, "max");
  ret->pids_current = read_int (pc);
  _cleanup_free_ char *pp = xasprintf (CG_ROOT "/pids%s/pids.peak", rel);
  ret->pids_peak = read_int (pp);
  _cleanup_free_ char *cu = xasprintf (CG_ROOT "/cpuacct%s/cpuacct.usage", rel);
  ret->cpu_usage_ns = read_int (cu);
}

/* Every directory that is a cgroup hierarchy root: the v1 controllers, or
 * the unified root. */
static char **
hierarchies (void)
{
  char **v = xmalloc0 (sizeof (char *));
  if (sbx_cgroup_version () == 2)
    {
      strv_push (&v, CG_ROOT);
      return v;
    }
  _cleanup_closedir_ DIR *d = opendir (CG_ROOT);
  if (d == NULL)
    return v;
  struct dirent *de;
  while ((de = readdir (d)))
    {
      if (de->d_name[0] == '.')
        continue;
      _cleanup_free_ char *p = xasprintf (CG_ROOT "/%s", de->d_name);
      struct stat s;
      if (lstat (p, &s) == 0 && S_ISDIR (s.st_mode))
        strv_push (&v, p);
    }
  return v;
}

static void
kill_procs (const char *dir)
{
  _cleanup_free_ char *procs = xasprintf ("%s/cgroup.procs", dir);
  _cleanup_free_ char *s = NULL;
  if (read_file (procs, 1 << 20, &s, NULL, NULL) < 0)
    return;
  for (char *p = s; *p;)
    {
      char *end;
      long pid = strtol (p, &end, 10);
      if (end == p)
        break;
      if (pid > 1)
        kill ((pid_t) pid, SIGKILL);
      p = end;
      while (*p == '\n')
        p++;
    }
}

static int remove_tree (const char *dir);

/* remove_tree on each child cgroup of DIR; -ENOENT when DIR is gone. */
static int
remove_children (const char *dir)
{
  _cleanup_closedir_ DIR *d = opendir (dir);
  if (d == NULL)
    return -errno;
  struct dirent *de;
  while ((de = readdir (d)))
    {
      if (de->d_name[0] == '.' || de->d_type != DT_DIR)
        continue;
      _cleanup_free_ char *c = xasprintf ("%s/%s", dir, de->d_name);
      remove_tree (c);
    }
  return 0;
}

/* rmdir DIR's child cgroups first, then DIR; retries while procs die. An
 * empty leaf goes at once: listing a cgroup directory (dozens of control
 * files) costs more than the rmdir. */
static int
remove_tree (const char *dir)
{
  if (rmdir (dir) == 0 || errno == ENOENT)
    return 0;
  if (errno != EBUSY && errno != ENOTEMPTY)
    return -errno;
  int r = remove_children (dir);
  if (r < 0)
    return r == -ENOENT ? 0 : r;
  /* Exiting processes leave within milliseconds: look again soon, then
   * every 10 ms, for about a second in all. */
  for (useconds_t nap = 500, waited = 0; waited < 1000000; waited += nap, nap = nap < 10000 ? nap * 2 : 10000)
    {
      if (rmdir (dir) == 0 || errno == ENOENT)
        return 0;
      if (errno != EBUSY)
        return -errno;
      kill_procs (dir);
      usleep (nap);
    }
  return -EBUSY;
}

int
sbx_cgroup_remove (const char *rel, sbx_error **err)
{
  _cleanup_strv_ char **hs = hierarchies ();
  int ret = 0;
  for (size_t i = 0; hs[i]; i++)
    {
      /* The runtime's child (REL/ctr, the usual and only one) first. */
      _cleanup_free_ char *dir = xasprintf ("%s%s", hs[i], rel);
      _cleanup_free_ char *ctr = xasprintf ("%s/ctr", dir);
      int r = remove_tree (ctr);
      if (r == 0 || r == -ENOTDIR)
        r = remove_tree (dir);
      if (r < 0)
        ret = sbx_error_errno (err, -r, "remove cgroup `%s`", dir);
    }
  return ret;
}

char **
sbx_cgroup_children (const char *parent_rel)
{
  _cleanup_strv_ char **hs = hierarchies ();
  char **out = xmalloc0 (sizeof (char *));
  for (size_t i = 0; hs[i]; i++)
    {
      _cleanup_free_ char *dir = xasprintf ("%s%s", hs[i], parent_rel);
      _cleanup_closedir_ DIR *d = opendir (dir);
      if (d == NULL)
        continue;
      struct dirent *de;
      while ((de = readdir (d)))
        {
          if (de->d_name[0] == '.' || de->d_type != DT_DIR)
            continue;
          bool seen = false;
          for (size_t k = 0; out[k] && !seen; k++)
            seen = strcmp (out[k], de->d_name) == 0;
          if (!seen)
            strv_push (&out, de->d_name);
        }
    }
  return out;
}

void
sbx_cgroup_remove_parent (const char *parent_rel)
{
  _cleanup_strv_ char **hs = hierarchies ();
  for (size_t i = 0; hs[i]; i++)
    {
      _cleanup_free_ char *dir = xasprintf ("%s%s", hs[i], parent_rel);
      rmdir (dir);
    }
}

static int
write_value (const char *dir, const char *file, const char *value, bool optional, sbx_error **err)
{
  _cleanup_free_ char *path = xasprintf ("%s/%s", dir, file);
  _cleanup_close_ int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 && optional && errno == ENOENT)
    return 0;
  if (fd < 0 || write_all (fd, value, strlen (value)) < 0)
    return sbx_error_errno (err, errno, "write %s to `%s`", value, path);
  return 0;
}

static int
make_dir (const char *path, sbx_error **err)
{
  if (mkdir (path, 0755) < 0 && errno != EEXIST)
    return sbx_error_errno (err, errno, "mkdir `%s`", path);
  return 0;
}

const sbx_device sbx_std_devices[] = {
  { 1, 3 }, { 1, 5 }, { 1, 7 }, { 1, 8 }, { 1, 9 }, { 5, 0 }, { 5, 2 }, { 136, -1 }
};
const size_t sbx_std_devices_n = ARRAY_SIZE (sbx_std_devices);

static int
allow_std_devices (const char *dir, char *const *extra, sbx_error **err)
{
  if (write_value (dir, "devices.deny", "a", false, err) < 0)
    return -1;
  for (size_t i = 0; i < sbx_std_devices_n; i++)
    {
      char v[64];
      if (sbx_std_devices[i].minor < 0)
        snprintf (v, sizeof v, "c %ld:* rwm", sbx_std_devices[i].major);
      else
        snprintf (v, sizeof v, "c %ld:%ld rwm", sbx_std_devices[i].major, sbx_std_devices[i].minor);
      if (write_value (dir, "devices.allow", v, false, err) < 0)
        return -1;
    }
  for (size_t i = 0; extra && extra[i]; i++)
    if (write_value (dir, "devices.allow", extra[i], false, err) < 0)
      return -1;
  return 0;
}

/* The v1 controllers sbx makes REL in: the limits, the counters, the
 * devices (last: only with limits->devices). */
int
sbx_cgroup_set_cpu (const char *rel, double cores, sbx_error **err)
{
  char v[64];
  long long quota = (long long) (cores * 100000.0 + 0.5);
  if (sbx_cgroup_version () == 2)
    {
      _cleanup_free_ char *dir = xasprintf (CG_ROOT "%s", rel);
      if (cores > 0)
        snprintf (v, sizeof v, "%lld 100000", quota);
      else
        snprintf (v, sizeof v, "max 100000");
      return write_value (dir, "cpu.max", v, false, err);
    }
  _cleanup_free_ char *cpu = xasprintf (CG_ROOT "/cpu%s", rel);
  snprintf (v, sizeof v, "%lld", cores > 0 ? quota : -1LL);
  if (write_value (cpu, "cpu.cfs_period_us", "100000", false, err) < 0
      || write_value (cpu, "cpu.cfs_quota_us", v, false, err) < 0)
    return -1;
  return 0;
}

int
sbx_cgroup_set_cpu_weight (const char *rel, uint64_t shares, uint64_t weight, sbx_error **err)
{
  char v[32];
  bool v2 = sbx_cgroup_version () == 2;
  _cleanup_free_ char *dir = xasprintf (CG_ROOT "%s%s", v2 ? "" : "/cpu", rel);
  snprintf (v, sizeof v, "%llu", (unsigned long long) (v2 ? weight : shares));
  return write_value (dir, v2 ? "cpu.weight" : "cpu.shares", v, false, err);
}

int
sbx_cgroup_set_memory (const char *rel, uint64_t old, uint64_t bytes, sbx_error **err)
{
  char v[64];
  if (sbx_cgroup_version () == 2)
    {
      _cleanup_free_ char *dir = xasprintf (CG_ROOT "%s", rel);
      if (bytes > 0)
        snprintf (v, sizeof v, "%llu", (unsigned long long) bytes);
      else
        snprintf (v, sizeof v, "max");
      return write_value (dir, "memory.max", v, false, err);
    }
  _cleanup_free_ char *mem = xasprintf (CG_ROOT "/memory%s", rel);
  if (bytes > 0)
    snprintf (v, sizeof v, "%llu", (unsigned long long) bytes);
  else
    snprintf (v, sizeof v, "-1");
  /* memsw (memory plus swap, only with swap accounting) may never be
   * below the memory limit: raised first, lowered last. */
  bool up = bytes == 0 || (old > 0 && bytes > old);
  if (up && write_value (mem, "memory.memsw.limit_in_bytes", v, true, err) < 0)
    return -1;
  if (write_value (mem, "memory.limit_in_bytes", v, false, err) < 0)
    return -1;
  if (!up && write_value (mem, "memory.memsw.limit_in_bytes", v, true, err) < 0)
    return -1;
  return 0;
}

int
sbx_cgroup_set_pids (const char *rel, int64_t pids, sbx_error **err)
{
  char v[64];
  if (pids > 0)
    snprintf (v, sizeof v, "%lld", (long long) pids);
  else
    snprintf (v, sizeof v, "max");
  _cleanup_free_ char *dir = sbx_cgroup_version () == 2 ? xasprintf (CG_ROOT "%s", rel)
                                                        : xasprintf (CG_ROOT "/pids%s", rel);
  return write_value (dir, "pids.max", v, false, err);
}

static const char *const v1_ctrls[] = { "memory", "pids", "cpu", "cpuacct", "devices" };

/* v1: one directory per controller, the parent made on the way. */
static int
create_v1 (const char *rel, const sbx_cgroup_limits *l, sbx_error **err)
{
  size_t n = ARRAY_SIZE (v1_ctrls) - (l->devices ? 0 : 1);
  for (size_t i = 0; i < n; i++)
    {
      _cleanup_free_ char *dir = xasprintf (CG_ROOT "/%s%s", v1_ctrls[i], rel);
      _cleanup_free_ char *parent = xstrdup (dir);
      *strrchr (parent, '/') = '\0';
      if (make_dir (parent, err) < 0 || make_dir (dir, err) < 0)
        return -1;
      /* A new devices cgroup starts with its parent's list: REL's, set
       * first, is the leaf's too. */
      if (strcmp (v1_ctrls[i], "devices") == 0 && allow_std_devices (dir, l->extra_devices, err) < 0)
        return -1;
      _cleanup_free_ char *leaf = xasprintf ("%s/ctr", dir);
      if (l->leaf && make_dir (leaf, err) < 0)
        return -1;
    }
  _cleanup_free_ char *mem = xasprintf (CG_ROOT "/memory%s", rel);
  _cleanup_free_ char *pids = xasprintf (CG_ROOT "/pids%s", rel);
  char v[64];
  if (l->memory > 0)
    {
      snprintf (v, sizeof v, "%llu", (unsigned long long) l->memory);
      /* memsw (memory plus swap) exists only with swap accounting. */
      if (write_value (mem, "memory.limit_in_bytes", v, false, err) < 0
          || write_value (mem, "memory.memsw.limit_in_bytes", v, true, err) < 0)
        return -1;
    }
  if (l->pids > 0)
    {
      snprintf (v, sizeof v, "%lld", (long long) l->pids);
      if (write_value (pids, "pids.max", v, false, err) < 0)
        return -1;
    }
  if (l->cpu > 0 && sbx_cgroup_set_cpu (rel, l->cpu, err) < 0)
    return -1;
  return 0;
}

static int
create_v2 (const char *rel, const sbx_cgroup_limits *l, sbx_error **err)
{
  _cleanup_free_ char *dir = xasprintf (CG_ROOT "%s", rel);
  _cleanup_free_ char *parent = xstrdup (dir);
  *strrchr (parent, '/') = '\0';
  if (write_value (CG_ROOT, "cgroup.subtree_control", "+memory +pids +cpu", true, err) < 0 || make_dir (parent, err) < 0
      || write_value (parent, "cgroup.subtree_control", "+memory +pids +cpu", false, err) < 0 || make_dir (dir, err) < 0
      || write_value (dir, "cgroup.subtree_control", "+memory +pids +cpu", false, err) < 0)
    return -1;
  char v[64];
  if (l->memory > 0)
    {
      snprintf (v, sizeof v, "%llu", (unsigned long long) l->memory);
      if (write_value (dir, "memory.max", v, false, err) < 0
          || write_value (dir, "memory.swap.max", "0", true, err) < 0)
        return -1;
    }
  if (l->pids > 0)
    {
      snprintf (v, sizeof v, "%lld", (long long) l->pids);
      if (write_value (dir, "pids.max", v, false, err) < 0)
        return -1;
    }
  if (l->cpu > 0 && sbx_cgroup_set_cpu (rel, l->cpu, err) < 0)
    return -1;
  /* No processes in a cgroup with controllers for its children: the
   * leaf is where they go. */
  _cleanup_free_ char *leaf = xasprintf ("%s/ctr", dir);
  if (l->leaf && make_dir (leaf, err) < 0)
    return -1;
  return 0;
}

char **
sbx_cgroup_join_files (const char *rel)
{
  char **v = xmalloc0 (sizeof (char *));
  if (sbx_cgroup_version () == 2)
    {
      _cleanup_free_ char *p = xasprintf (CG_ROOT "%s/ctr/cgroup.procs", rel);
      strv_push (&v, p);
      return v;
    }
  for (size_t i = 0; i < ARRAY_SIZE (v1_ctrls); i++)
    {
      _cleanup_free_ char *p = xasprintf (CG_ROOT "/%s%s/ctr/tasks", v1_ctrls[i], rel);
      if (path_exists (p))
        strv_push (&v, p);
    }
  return v;
}

int
sbx_cgroup_join (char *const *procs)
{
  for (size_t i = 0; procs[i]; i++)
    {
      int fd = open (procs[i], O_WRONLY | O_CLOEXEC);
      if (fd < 0)
        return -errno;
      /* "0": the writer itself. */
      ssize_t n = write (fd, "0", 1);
      int e = errno;
      close (fd);
      if (n != 1)
        return n < 0 ? -e : -EIO;
    }
  return 0;
}

int
sbx_cgroup_create (const char *rel, const sbx_cgroup_limits *limits, sbx_error **err)
{
  int r = sbx_cgroup_version () == 2 ? create_v2 (rel, limits, err) : create_v1 (rel, limits, err);
  if (r < 0)
    {
      sbx_cgroup_remove (rel, NULL);
      return sbx_error_wrap (err, "cgroup %s", rel);
    }
  return 0;
}

/* The monitor's own cgroup. The memory and pids hierarchies on v1: what it
 * is there to count. */
static const char *const mon_ctrls[] = { "memory", "pids" };

/* The file that moves the caller back to its cgroup in CTRL's hierarchy
 * (`tasks`, as in sbx_cgroup_join; NULL: the unified one, cgroup.procs) as
 * /proc/self/cgroup (S) says, or to the hierarchy's root. */
static char *
origin_of (const char *s, const char *ctrl)
{
  for (const char *line = s; line && *line; line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL)
    {
      /* "4:memory:/path", "2:cpu,cpuacct:/", v2's "0::/path". */
      const char *c1 = strchr (line, ':'), *c2 = c1 ? strchr (c1 + 1, ':') : NULL, *nl = strchr (line, '\n');
      if (c2 == NULL || (nl && c2 > nl))
        continue;
      int plen = (int) (nl ? (size_t) (nl - c2 - 1) : strlen (c2 + 1));
      if (ctrl == NULL && c2 == c1 + 1)
        return xasprintf (CG_ROOT "%.*s/cgroup.procs", plen, c2 + 1);
      if (ctrl == NULL)
        continue;
      _cleanup_free_ char *ctrls = xasprintf (",%.*s,", (int) (c2 - c1 - 1), c1 + 1);
      _cleanup_free_ char *want = xasprintf (",%s,", ctrl);
      if (strstr (ctrls, want))
        return xasprintf (CG_ROOT "/%s%.*s/tasks", ctrl, plen, c2 + 1);
    }
  return ctrl ? xasprintf (CG_ROOT "/%s/tasks", ctrl) : xstrdup (CG_ROOT "/cgroup.procs");
}

/* Where the caller is now, in the hierarchies its own cgroup is made in
 * (strv; on v1 in mon_ctrls' order). */
static char **
origin_procs (void)
{
  char **v = xmalloc0 (sizeof (char *));
  _cleanup_free_ char *s = NULL;
  if (read_file ("/proc/self/cgroup", 65536, &s, NULL, NULL) < 0)
    s = xstrdup ("");
  for (size_t i = 0; i < (sbx_cgroup_version () == 2 ? 1 : ARRAY_SIZE (mon_ctrls)); i++)
    {
      _cleanup_free_ char *p = origin_of (s, sbx_cgroup_version () == 2 ? NULL : mon_ctrls[i]);
      strv_push (&v, p);
    }
  return v;
}

int
sbx_cgroup_enter (const char *rel, char ***ret_back, sbx_error **err)
{
  _cleanup_strv_ char **back = origin_procs ();
  _cleanup_strv_ char **join = xmalloc0 (sizeof (char *));
  size_t n = sbx_cgroup_version () == 2 ? 1 : ARRAY_SIZE (mon_ctrls);
  for (size_t i = 0; i < n; i++)
    {
      _cleanup_free_ char *dir = sbx_cgroup_version () == 2 ? xasprintf (CG_ROOT "%s", rel)
                                                            : xasprintf (CG_ROOT "/%s%s", mon_ctrls[i], rel);
      if (make_dir (dir, err) < 0)
        {
          sbx_cgroup_leave (rel, back);
          return sbx_error_wrap (err, "cgroup %s", rel);
        }
      _cleanup_free_ char *f = xasprintf ("%s/%s", dir, sbx_cgroup_version () == 2 ? "cgroup.procs" : "tasks");
      strv_push (&join, f);
    }
  int r = sbx_cgroup_join (join);
  if (r < 0)
    {
      sbx_cgroup_leave (rel, back);
      return sbx_error_errno (err, -r, "move into cgroup %s", rel);
    }
  *ret_back = steal_pointer (&back);
  return 0;
}

/* Whether the calling process (any thread of it) is in the cgroup DIR. */
static bool
holds_self (const char *dir)
{
  _cleanup_free_ char *procs = xasprintf ("%s/cgroup.procs", dir);
  _cleanup_free_ char *s = NULL;
  if (read_file (procs, 1 << 20, &s, NULL, NULL) < 0)
    return false;
  char me[32];
  snprintf (me, sizeof me, "%d", (int) getpid ());
  for (char *line = strtok (s, "\n"); line; line = strtok (NULL, "\n"))
    if (strcmp (line, me) == 0)
      return true;
  return false;
}

void
sbx_cgroup_leave (const char *rel, char *const *back)
{
  for (size_t i = 0; back && back[i]; i++)
    {
      _cleanup_free_ char *dir = sbx_cgroup_version () == 2 ? xasprintf (CG_ROOT "%s", rel)
                                                            : xasprintf (CG_ROOT "/%s%s", mon_ctrls[i], rel);
      _cleanup_close_ int fd = open (back[i], O_WRONLY | O_CLOEXEC);
      if (fd < 0 || write (fd, "0", 1) != 1)
        {
          /* Where it came from is gone: the hierarchy's root then. */
          char *const root[] = { sbx_cgroup_version () == 2 ? xstrdup (CG_ROOT "/cgroup.procs")
                                                            : xasprintf (CG_ROOT "/%s/tasks", mon_ctrls[i]),
                                 NULL };
          sbx_cgroup_join (root);
          free (root[0]);
        }
      /* Never remove a cgroup the caller is still in (a thread left
       * behind): the removal kills what it finds there. gc does it later. */
      if (holds_self (dir))
        return;
    }
  sbx_cgroup_remove (rel, NULL);
}
