/* The sandbox's log file, bounded and marked by side (see sblog.h). */
#include "config.h"
#include "sblog.h"
#include "util.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const side_names[] = { "sbx", "runtime", "sandbox" };

void
sbx_log_init (sbx_log *l, int fd)
{
  struct stat st;
  *l = (sbx_log){ .fd = fd };
  if (fd >= 0 && fstat (fd, &st) == 0)
    l->size = (uint64_t) st.st_size;
}

static size_t
timestamp (char *ts, size_t cap)
{
  struct timespec now;
  struct tm tm;
  clock_gettime (CLOCK_REALTIME, &now);
  gmtime_r (&now.tv_sec, &tm);
  size_t n = strftime (ts, cap, "%Y-%m-%dT%H:%M:%S", &tm);
  return n + (size_t) snprintf (ts + n, cap - n, ".%03ldZ ", now.tv_nsec / 1000000);
}

/* Writes LINE (ending in a newline) if the file stays within LIMIT. */
static bool
put (sbx_log *l, const char *line, size_t len, uint64_t limit)
{
  if (l->fd < 0 || l->size + len > limit)
    return false;
  if (write_all (l->fd, line, len) < 0)
    return false;
  l->size += len;
  return true;
}

static void
note (sbx_log *l, const char *what)
{
  char line[160], ts[40];
  timestamp (ts, sizeof ts);
  int n = snprintf (line, sizeof line, "%s[sbx: log truncated, %s]\n", ts, what);
  put (l, line, (size_t) n, SBX_LOG_MAX);
}

/* One physical line: the timestamp, the side, the text escaped. */
static void
one_line (sbx_log *l, sbx_log_side side, const char *text, size_t len)
{
  /* At worst 4 bytes per input byte; long input is cut (and counted). */
  char line[64 + 4 * SBX_LOG_LINE_MAX];
  size_t n = timestamp (line, 40);
  n += (size_t) snprintf (line + n, 16, "%s: ", side_names[side]);
  if (len > SBX_LOG_LINE_MAX)
    {
      l->dropped += len - SBX_LOG_LINE_MAX;
      len = SBX_LOG_LINE_MAX;
    }
  for (size_t i = 0; i < len; i++)
    {
      unsigned char c = (unsigned char) text[i];
      if ((c >= 0x20 && c < 0x7f && c != '\\') || c == '\t')
        line[n++] = (char) c;
      else
        n += (size_t) snprintf (line + n, 5, "\\x%02x", c);
    }
  line[n++] = '\n';
  uint64_t limit = side == SBX_LOG_MONITOR ? SBX_LOG_MAX - 256 : SBX_LOG_MAX - SBX_LOG_RESERVE;
  if (put (l, line, n, limit))
    return;
  l->dropped += len + 1;
  if (!l->noted && l->fd >= 0)
    {
      char what[96];
      snprintf (what, sizeof what, "what the runtime and the sandbox write beyond %u KiB is dropped",
                (SBX_LOG_MAX - SBX_LOG_RESERVE) / 1024);
      note (l, what);
      l->noted = true;
    }
}

void
sbx_log_line (sbx_log *l, sbx_log_side side, const char *text, size_t len)
{
  one_line (l, side, text, len);
}

void
sbx_log_feed (sbx_log *l, const char *data, size_t len)
{
  while (len > 0)
    {
      const char *nl = memchr (data, '\n', len);
      size_t n = nl ? (size_t) (nl - data) : len;
      size_t take = n < sizeof l->partial - l->plen ? n : sizeof l->partial - l->plen;
      memcpy (l->partial + l->plen, data, take);
      l->plen += take;
      data += take;
      len -= take;
      if (nl && take == n)
        {
          data++, len--; /* the newline */
          one_line (l, SBX_LOG_RUNTIME, l->partial, l->plen);
          l->plen = 0;
        }
      else if (l->plen == sizeof l->partial)
        {
          one_line (l, SBX_LOG_RUNTIME, l->partial, l->plen);
          l->plen = 0;
        }
    }
}

void
sbx_log_finish (sbx_log *l)
{
  if (l->plen > 0)
    one_line (l, SBX_LOG_RUNTIME, l->partial, l->plen);
  l->plen = 0;
  if (l->dropped > 0)
    {
      char what[64];
      snprintf (what, sizeof what, "%llu bytes dropped", (unsigned long long) l->dropped);
      note (l, what);
    }
}
