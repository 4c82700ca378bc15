/* The mapping of --priority to CPU weights and oom_score_adj, and its
 * writes (priority.h). */
#include "config.h"
#include "priority.h"
#include "cgroup.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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

int
sbx_priority_oom_self (int adj)
{
  char buf[16];
  int len = snprintf (buf, sizeof buf, "%d", adj);
  int fd = open ("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  ssize_t n = write (fd, buf, (size_t) len);
  int e = errno;
  close (fd);
  return n == len ? 0 : n < 0 ? -e : -EIO;
}
