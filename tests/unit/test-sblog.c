/* Unit tests of the sandbox's log file (src/lib/sblog.c): lines marked by
 * side, untrusted text escaped so that it cannot forge a line, the runtime's
 * stderr cut into lines, and the size bound with its notes. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "sblog.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char *
contents (int fd, size_t *ret_len)
{
  off_t end = lseek (fd, 0, SEEK_END);
  char *s = calloc (1, (size_t) end + 1);
  if (pread (fd, s, (size_t) end, 0) != end)
    abort ();
  *ret_len = (size_t) end;
  return s;
}

static size_t
count (const char *s, const char *needle)
{
  size_t n = 0;
  for (const char *p = s; (p = strstr (p, needle)); p++)
    n++;
  return n;
}

static void
test_sides_and_escapes (void)
{
  int fd = memfd_create ("log", 0);
  sbx_log l;
  size_t len;
  sbx_log_init (&l, fd);
  sbx_log_line (&l, SBX_LOG_MONITOR, "running", 7);
  const char forged[] = "hi\n2026-01-01T00:00:00.000Z sbx: terminated (exit)\x1b[2J\\";
  sbx_log_line (&l, SBX_LOG_SANDBOX, forged, sizeof forged - 1);
  sbx_log_feed (&l, "runsc: one\nrunsc: tw", 20);
  sbx_log_feed (&l, "o\n\xff", 3);
  sbx_log_finish (&l);
  char *s = contents (fd, &len);
  tap_ok (count (s, "\n") == 5, "one line per event, the unfinished one at the end");
  tap_ok (strstr (s, "Z sbx: running\n") != NULL, "the monitor's line");
  tap_ok (strstr (s, "Z sandbox: hi\\x0a2026-01-01T00:00:00.000Z sbx: terminated (exit)\\x1b[2J\\x5c\n") != NULL,
          "the sandbox's text escaped on one line");
  tap_ok (strstr (s, "Z runtime: runsc: one\n") && strstr (s, "Z runtime: runsc: two\n")
              && strstr (s, "Z runtime: \\xff\n"),
          "the runtime's stderr in lines");
  tap_ok (l.size == len && l.dropped == 0 && strstr (s, "truncated") == NULL, "size kept, nothing dropped");
  free (s);
  close (fd);
}

static void
test_bound (void)
{
  int fd = memfd_create ("log", 0);
  sbx_log l;
  size_t len;
  char chunk[1000];
  memset (chunk, 'x', sizeof chunk);
  sbx_log_init (&l, fd);
  for (int i = 0; i < 3000; i++)
    sbx_log_line (&l, SBX_LOG_SANDBOX, chunk, sizeof chunk);
  for (int i = 0; i < 1000; i++)
    {
      chunk[999] = '\n';
      sbx_log_feed (&l, chunk, sizeof chunk);
    }
  sbx_log_line (&l, SBX_LOG_MONITOR, "terminated (exit)", 17);
  sbx_log_finish (&l);
  char *s = contents (fd, &len);
  tap_ok (len <= SBX_LOG_MAX, "the file stays within %u bytes: %zu", SBX_LOG_MAX, len);
  tap_ok (len >= SBX_LOG_MAX - SBX_LOG_RESERVE - 2000, "and is filled up to the reserve: %zu", len);
  tap_ok (count (s, "[sbx: log truncated") == 2, "the truncation noted where it began and at the end");
  tap_ok (strstr (s, "sbx: terminated (exit)\n") != NULL, "the monitor's own line still written from the reserve");
  char want[80];
  snprintf (want, sizeof want, "[sbx: log truncated, %llu bytes dropped]\n", (unsigned long long) l.dropped);
  tap_ok (l.dropped > 3000000 && strstr (s, want) != NULL, "the final note counts what was dropped (%llu)",
          (unsigned long long) l.dropped);
  free (s);
  /* A log reopened at its bound (a restarted writer) keeps it. */
  sbx_log l2;
  sbx_log_init (&l2, fd);
  sbx_log_line (&l2, SBX_LOG_RUNTIME, chunk, 500);
  sbx_log_finish (&l2);
  tap_ok (l2.size == (uint64_t) lseek (fd, 0, SEEK_END) && l2.size <= SBX_LOG_MAX, "a reopened log stays bounded");
  close (fd);
}

static void
test_long_line (void)
{
  int fd = memfd_create ("log", 0);
  sbx_log l;
  size_t len;
  static char big[3 * SBX_LOG_LINE_MAX];
  memset (big, 'y', sizeof big);
  sbx_log_init (&l, fd);
  sbx_log_feed (&l, big, sizeof big);
  sbx_log_line (&l, SBX_LOG_SANDBOX, big, sizeof big);
  sbx_log_finish (&l);
  char *s = contents (fd, &len);
  tap_ok (count (s, "runtime: ") == 3 && count (s, "sandbox: ") == 1, "long lines cut at %u bytes", SBX_LOG_LINE_MAX);
  tap_ok (len < 5 * (SBX_LOG_LINE_MAX + 64), "nothing past the cut is written");
  free (s);
  close (fd);
}

int
main (void)
{
  tap_plan (13);
  test_sides_and_escapes ();
  test_bound ();
  test_long_line ();
  return tap_done ();
}
