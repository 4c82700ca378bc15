/* A minimal TAP producer for the C unit tests. */
#ifndef SBX_TAP_H
#define SBX_TAP_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n, tap_failed;

static inline void
tap_plan (int n)
{
  printf ("1..%d\n", n);
}

static inline int __attribute__ ((format (printf, 2, 3)))
tap_ok (int cond, const char *fmt, ...)
{
  va_list ap;
  tap_n++;
  printf ("%s %d - ", cond ? "ok" : "not ok", tap_n);
  va_start (ap, fmt);
  vprintf (fmt, ap);
  va_end (ap);
  printf ("\n");
  fflush (stdout);
  if (!cond)
    tap_failed++;
  return cond;
}

static inline void
tap_skip_all (const char *why)
{
  printf ("1..0 # SKIP %s\n", why);
  exit (getenv ("SBX_TEST_STRICT") && atoi (getenv ("SBX_TEST_STRICT")) ? 1 : 77);
}

static inline int
tap_done (void)
{
  return tap_failed ? 1 : 0;
}
#endif
