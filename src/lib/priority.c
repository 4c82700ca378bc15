/* The mapping of --priority to CPU weights and oom_score_adj, and its
 * writes (priority.h). */
#include "config.h"
#include "priority.h"
#include "cgroup.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* round (1024 * 2^((p - 5) / 2)) and round (100 * 2^((p - 5) / 2)). */
static const uint64_t shares[10] = { 181, 256, 362, 512, 724, 1024, 1448, 2048, 2896, 4096 };
static const uint64_t weights[10] = { 18, 25, 35, 50, 71, 100, 141, 200, 283, 400 };

static size_t
index_of (int64_t priority)
{
  return priority < 0 ? 0 : priority > 9 ? 9 : (size_t) priority;
}

uint64_t
sbx_priority_cpu_shares (int64_t priority)
{
  return shares[index_of (priority)];
}

uint64_t
sbx_priority_cpu_weight (int64_t priority)
{
  return weights[index_of (priority)];
}

int
sbx_priority_oom_score_adj (int64_t priority)
{
  return 500 + (5 - (int) index_of (priority)) * 100;
}

int
sbx_priority_apply_cgroup (const char *rel, int64_t priority, sbx_error **err)
{
  return sbx_cgroup_set_cpu_weight (rel, sbx_priority_cpu_shares (priority), sbx_priority_cpu_weight (priority), err);
}

/* ADJ into PATH, an oom_score_adj file. Async-signal-safe; -errno. */
static int
write_adj (const char *path, int adj)
{
  char buf[16];
  int len = snprintf (buf, sizeof buf, "%d", adj);
  int fd = open (path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  ssize_t n = write (fd, buf, (size_t) len);
  int e = errno;
  close (fd);
  return n == len ? 0 : n < 0 ? -e : -EIO;
}

int
sbx_priority_oom_self (int adj)
{
  return write_adj ("/proc/self/oom_score_adj", adj);
}

/* Every process listed in DIR/cgroup.procs and below DIR gets ADJ; one that
 * exited meanwhile is no error. */
static int
oom_tree (const char *dir, int adj, sbx_error **err)
{
  _cleanup_free_ char *procs = xasprintf ("%s/cgroup.procs", dir), *text = NULL;
  if (read_file (procs, 1 << 20, &text, NULL, NULL) == 0)
    for (char *line = text, *next; line && *line; line = next)
      {
        next = strchr (line, '\n');
        if (next)
          *next++ = '\0';
        int64_t pid;
        if (parse_int64 (line, 1, INT32_MAX, &pid) < 0)
          continue;
        _cleanup_free_ char *p = xasprintf ("/proc/%lld/oom_score_adj", (long long) pid);
        int r = write_adj (p, adj);
        if (r < 0 && r != -ENOENT && r != -ESRCH)
          return sbx_error_errno (err, -r, "oom_score_adj of %lld", (long long) pid);
      }
  _cleanup_closedir_ DIR *d = opendir (dir);
  struct dirent *de;
  while (d && (de = readdir (d)))
    if (de->d_type == DT_DIR && de->d_name[0] != '.')
      {
        _cleanup_free_ char *sub = xasprintf ("%s/%s", dir, de->d_name);
        if (oom_tree (sub, adj, err) < 0)
          return -1;
      }
  return 0;
}

int
sbx_priority_update (const char *rel, int64_t priority, sbx_error **err)
{
  if (sbx_priority_apply_cgroup (rel, priority, err) < 0)
    return -1;
  _cleanup_free_ char *dir = xasprintf ("/sys/fs/cgroup%s%s", sbx_cgroup_version () == 2 ? "" : "/cpu", rel);
  return oom_tree (dir, sbx_priority_oom_score_adj (priority), err);
}
