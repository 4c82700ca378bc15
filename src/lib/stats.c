/* What sandboxes are and use, for the commands that report it: records
 * with their cgroup's live counters, every sandbox at once, the count by
 * state, one sandbox's use now (its cgroup, its writable layer or disk
 * image, its network namespace's interfaces), and its log. */
#include "config.h"
#include "stats.h"
#include "cgroup.h"
#include "disk.h"
#include "egress.h"
#include "json.h"
#include "runtime.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
sbx_sandbox_get_live (const sbx_store *st, const char *id, sbx_sandbox **ret, sbx_error **err)
{
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (sbx_sandbox_get (st, id, &sb, err) < 0)
    return -1;
  /* A running sandbox's counters are read live from its cgroup. */
  if (sb->state == SBX_STATE_RUNNING)
    {
      _cleanup_free_ char *cg = sbx_store_cgroup_path (st, id);
      sbx_cgroup_stats cs;
      sbx_cgroup_stats_read (cg, &cs);
      sbx_sandbox_merge_stats (sb, &cs);
    }
  *ret = steal_pointer (&sb);
  return 0;
}

int
sbx_sandbox_get_all (const sbx_store *st, sbx_sandbox ***ret, size_t *ret_n, sbx_error **err)
{
  _cleanup_strv_ char **ids = NULL;
  if (sbx_sandbox_list (st, &ids, err) < 0)
    return -1;
  size_t n = 0, cap = strv_len (ids);
  sbx_sandbox **sbs = xmalloc0 ((cap + 1) * sizeof *sbs);
  for (size_t i = 0; ids[i]; i++)
    if (sbx_sandbox_get (st, ids[i], &sbs[n], NULL) == 0)
      n++;
  *ret = sbs;
  *ret_n = n;
  return 0;
}

void
sbx_sandboxes_free (sbx_sandbox **v)
{
  for (size_t i = 0; v && v[i]; i++)
    sbx_sandbox_free (v[i]);
  free (v);
}

int
sbx_sandbox_count (const sbx_store *st, sbx_state_counts *ret, sbx_error **err)
{
  _cleanup_strv_ char **ids = NULL;
  if (sbx_sandbox_list (st, &ids, err) < 0)
    return -1;
  sbx_state_counts c = { { 0 }, 0 };
  for (size_t i = 0; ids[i]; i++)
    {
      _cleanup_sandbox_ sbx_sandbox *sb = NULL;
      if (sbx_sandbox_get (st, ids[i], &sb, NULL) == 0)
        {
          c.n[sb->state]++;
          c.total++;
        }
    }
  *ret = c;
  return 0;
}

/* Bytes the tree at DIRFD takes on disk (blocks), never following links. */
static int64_t
disk_usage (int dirfd_, int depth)
{
  int64_t total = 0;
  int fd = dup (dirfd_);
  _cleanup_closedir_ DIR *d = fd >= 0 ? fdopendir (fd) : NULL;
  if (d == NULL)
    {
      if (fd >= 0)
        close (fd);
      return 0;
    }
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      struct stat st;
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0
          || fstatat (dirfd (d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        continue;
      total += (int64_t) st.st_blocks * 512;
      if (S_ISDIR (st.st_mode) && depth < 256)
        {
          _cleanup_close_ int sub = openat (dirfd (d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (sub >= 0)
            total += disk_usage (sub, depth + 1);
        }
    }
  return total;
}

/* Bytes in and out of the interfaces (but loopback) of PID's network
 * namespace. */
static void
net_bytes (pid_t pid, int64_t *rx, int64_t *tx)
{
  *rx = *tx = 0;
  _cleanup_free_ char *path = xasprintf ("/proc/%d/net/dev", (int) pid), *text = NULL;
  if (pid <= 0 || read_file (path, 1 << 20, &text, NULL, NULL) < 0)
    return;
  for (char *line = strtok (text, "\n"); line; line = strtok (NULL, "\n"))
    {
      char name[64];
      long long r, t, skip;
      if (sscanf (line, " %63[^:]: %lld %lld %lld %lld %lld %lld %lld %lld %lld", name, &r, &skip, &skip, &skip, &skip,
                  &skip, &skip, &skip, &t)
              == 10
          && strcmp (name, "lo") != 0)
        {
          *rx += r;
          *tx += t;
        }
    }
}

/* The pid the runtime reports for the container (its init under runc, the
 * sandbox process under runsc): its network namespace is the sandbox's. */
static pid_t
container_pid (const sbx_store *st, const sbx_sandbox *sb)
{
  _cleanup_runtime_ sbx_runtime *rt = NULL;
  if (sbx_runtime_find (st, sb->opts.runtime, &rt, NULL) < 0)
    return 0;
  const char *args[] = { sb->id, NULL };
  _cleanup_strv_ char **argv = sbx_runtime_argv (rt, "state", args);
  _cleanup_free_ char *out = NULL;
  int status = -1;
  if (sbx_spawn_capture (argv, 1 << 20, &out, NULL, &status, NULL) < 0 || status != 0)
    return 0;
  _cleanup_yajl_val_ yajl_val v = NULL;
  int64_t pid = 0;
  if (j_parse (out, strlen (out), 1 << 20, "state", &v, NULL) == 0)
    j_get_int (v, "pid", false, &pid, NULL);
  return (pid_t) pid;
}

int
sbx_sandbox_stats (const sbx_store *st, const char *id, sbx_stats *ret, sbx_error **err)
{
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (sbx_sandbox_get_live (st, id, &sb, err) < 0)
    return -1;
  bool running = sb->state == SBX_STATE_RUNNING;
  sbx_cgroup_stats cs = { 0 };
  if (running)
    {
      _cleanup_free_ char *cg = sbx_store_cgroup_path (st, sb->id);
      sbx_cgroup_stats_read (cg, &cs);
    }
  /* With a limit, what its image takes on the host; without, its files. */
  _cleanup_free_ char *upper = sbx_store_path (st, "sandboxes/%s/upper", sb->id);
  _cleanup_close_ int ufd = sb->opts.disk > 0 ? -1 : open (upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int64_t disk = sb->opts.disk > 0 ? sbx_disk_used (st, sb) : ufd >= 0 ? disk_usage (ufd, 0) : 0, rx = 0, tx = 0;
  if (disk < 0)
    disk = 0;
  if (running)
    net_bytes (container_pid (st, sb), &rx, &tx);
  *ret = (sbx_stats){
    .state = sb->state,
    .paused = sb->paused,
    .running = running,
    .cpu_time_ns = cs.cpu_usage_ns,
    .memory = cs.memory_current,
    .pids = cs.pids_current,
    .memory_peak = cs.memory_peak > sb->memory_peak ? cs.memory_peak : sb->memory_peak,
    .disk = disk,
    .disk_limit = sb->opts.disk,
    .net_rx_bytes = rx,
    .net_tx_bytes = tx,
  };
  return 0;
}

int
sbx_sandbox_log_read (const sbx_store *st, const char *id, char **ret, size_t *ret_len, sbx_error **err)
{
  _cleanup_free_ char *path = sbx_store_path (st, "sandboxes/%s/log", id);
  _cleanup_free_ char *text = NULL;
  size_t len = 0;
  sbx_error *e = NULL;
  if (read_file (path, 64 << 20, &text, &len, &e) < 0)
    {
      if (e->code != SBX_E_NOT_FOUND)
        {
          if (err)
            *err = e;
          else
            sbx_error_free (e);
          return -1;
        }
      sbx_error_free (e);
      text = xstrdup ("");
    }
  *ret = steal_pointer (&text);
  *ret_len = len;
  return 0;
}

static int
strp_cmp (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

char **
sbx_sandbox_domain_addrs (const char *id)
{
  char **v = xmalloc0 (sizeof (char *));
  _cleanup_free_ sbx_egress_elem *e = NULL;
  size_t n = 0;
  _cleanup_error_ sbx_error *err = NULL;
  if (sbx_egress_domain_list (SBX_EGRESS_TABLE, id, &e, &n, &err) < 0)
    return v;
  for (size_t i = 0; i < n; i++)
    {
      _cleanup_free_ char *addr = sbx_cidr_address_text (&e[i].addr);
      _cleanup_free_ char *s = xasprintf ("%s %s %llu", addr, e[i].name[0] ? e[i].name : "-",
                                          (unsigned long long) e[i].timeout_ms);
      strv_push (&v, s);
    }
  qsort (v, strv_len (v), sizeof *v, strp_cmp);
  return v;
}
