/* The host's limits on idle sandboxes (hostlimits.h). */
#include "config.h"
#include "hostlimits.h"
#include "util.h"

#include <stdlib.h>

static int64_t
read_sysctl (const char *path)
{
  _cleanup_free_ char *s = NULL;
  if (read_file (path, 64, &s, NULL, NULL) < 0)
    return -1;
  char *end;
  long long v = strtoll (s, &end, 10);
  return end == s ? -1 : v;
}

int64_t
sbx_host_limit_allows (int64_t value, int64_t per)
{
  return value < 0 || per <= 0 ? -1 : value / per;
}

static sbx_host_limit
tasks_limit (const char *name, const char *path)
{
  int64_t v = read_sysctl (path);
  return (sbx_host_limit){ name, path, v, sbx_host_limit_allows (v, SBX_TASKS_RUNC),
                           sbx_host_limit_allows (v, SBX_TASKS_RUNSC) };
}

/* A sandbox with a network takes one slot of 4 addresses of pool4 (and of
 * pool6 where it is on); slot 0 is never handed out (net.c). */
static sbx_host_limit
pool_limit (const sbx_conf *conf)
{
  uint64_t slots = (1ULL << (32 - conf->pool4.prefix)) / 4;
  if (conf->pool6.family && 128 - conf->pool6.prefix < 40)
    {
      uint64_t s6 = (1ULL << (128 - conf->pool6.prefix)) / 4;
      if (s6 < slots)
        slots = s6;
    }
  int64_t n = slots > 0 ? (int64_t) slots - 1 : 0;
  return (sbx_host_limit){ "address_pool", "sbx.conf pool4/pool6", n, n, n };
}

size_t
sbx_host_limits_probe (const sbx_conf *conf, sbx_host_limit *ret)
{
  size_t n = 0;
  ret[n++] = tasks_limit ("pid_max", "/proc/sys/kernel/pid_max");
  ret[n++] = tasks_limit ("threads_max", "/proc/sys/kernel/threads-max");
  if (conf)
    ret[n++] = pool_limit (conf);
  return n;
}
