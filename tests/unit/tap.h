/* A minimal TAP producer for the C unit tests.
 *
 * Skips go through tap_skip (one test) and tap_skip_all (the whole program)
 * and nowhere else: a skip is visible in the TAP output, and under
 * SBX_TEST_STRICT=1 (CI) it is a failure, since a skip hides a missing tool
 * or kernel feature as well as it hides a bug. A whole-program skip prints
 * `1..0 # SKIP why` and exits 0: under automake's TAP driver exit 77 reads as
 * an ERROR, not a skip. */
#ifndef SBX_TAP_H
#define SBX_TAP_H
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_n, tap_failed;

static inline void
tap_plan (int n)
{
  printf ("1..%d\n", n);
}

static inline int __attribute__ ((format (printf, 2, 3))) tap_ok (int cond, const char *fmt, ...)
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

/* Whether SBX_TEST_STRICT=1 asks that every skip fail. */
static inline bool
tap_strict (void)
{
  const char *s = getenv ("SBX_TEST_STRICT");
  return s != NULL && strcmp (s, "1") == 0;
}

/* One test skipped, for the reason FMT: `ok N # SKIP reason`, or under
 * SBX_TEST_STRICT=1 `not ok N - skipped in strict mode: reason`. */
static inline void tap_skip (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

static inline void
tap_skip (const char *fmt, ...)
{
  va_list ap;
  tap_n++;
  if (tap_strict ())
    {
      tap_failed++;
      printf ("not ok %d - skipped in strict mode (SBX_TEST_STRICT=1): ", tap_n);
    }
  else
    printf ("ok %d # SKIP ", tap_n);
  va_start (ap, fmt);
  vprintf (fmt, ap);
  va_end (ap);
  printf ("\n");
  fflush (stdout);
}

/* The whole program skipped, before any plan: `1..0 # SKIP reason` and exit
 * 0, or under SBX_TEST_STRICT=1 one failed test and exit 1. */
static inline void tap_skip_all (const char *fmt, ...) __attribute__ ((format (printf, 1, 2), noreturn));

static inline void
tap_skip_all (const char *fmt, ...)
{
  va_list ap;
  bool strict = tap_strict ();
  if (strict)
    printf ("1..1\nnot ok 1 - skipped in strict mode (SBX_TEST_STRICT=1): ");
  else
    printf ("1..0 # SKIP ");
  va_start (ap, fmt);
  vprintf (fmt, ap);
  va_end (ap);
  printf ("\n");
  fflush (stdout);
  exit (strict ? 1 : 0);
}

static inline int
tap_done (void)
{
  return tap_failed ? 1 : 0;
}
#endif
