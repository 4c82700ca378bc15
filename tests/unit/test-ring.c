/* Unit tests of the bounded output log (src/lib/ring.c): order, growth,
 * eviction of the oldest records, readers that fall behind, records that
 * wrap around the end of the buffer, and records larger than the ring. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "ring.h"
#include "tap.h"

#include <string.h>

static unsigned char buf[1 << 16];

/* Pushes N records "rec-I" alternating types 6 and 7. */
static void
push_n (sbx_ring *r, int from, int n)
{
  for (int i = from; i < from + n; i++)
    {
      char s[32];
      int l = snprintf (s, sizeof s, "rec-%d", i);
      sbx_ring_push (r, (uint8_t) (6 + (i & 1)), s, (size_t) l);
    }
}

/* Whether the records from OFF on are exactly "rec-FROM".."rec-TO-1". */
static int
reads_back (const sbx_ring *r, uint64_t off, int from, int to)
{
  for (int i = from; i < to; i++)
    {
      uint8_t type;
      char s[32];
      int l = snprintf (s, sizeof s, "rec-%d", i);
      ssize_t n = sbx_ring_read (r, &off, &type, buf, sizeof buf);
      if (n != l || memcmp (buf, s, (size_t) l) != 0 || type != 6 + (i & 1))
        return 0;
    }
  uint8_t type;
  return sbx_ring_read (r, &off, &type, buf, sizeof buf) == -1;
}

int
main (void)
{
  tap_plan (19);
  sbx_ring r;
  sbx_ring_init (&r, 4096);
  uint8_t type;
  uint64_t off = 0;
  tap_ok (sbx_ring_read (&r, &off, &type, buf, sizeof buf) == -1 && r.data == NULL,
          "an empty ring reads nothing and holds no memory");

  push_n (&r, 0, 10);
  tap_ok (reads_back (&r, 0, 0, 10), "records read back in order, with their types");
  tap_ok (r.size == 4096 && r.dropped == 0, "a small log stays in the first allocation, nothing dropped");

  /* 10-byte records (5 header + "rec-NNNN"/"rec-NNNNN"): 1000 of them
   * overflow 4 KiB many times over, wrapping the buffer. */
  push_n (&r, 10, 2000);
  tap_ok (r.end - r.start <= 4096 && r.dropped > 0, "the log keeps within its bound and counts what it dropped");
  uint64_t reader = 0;
  uint8_t t;
  ssize_t n = sbx_ring_read (&r, &reader, &t, buf, sizeof buf);
  int first = -1;
  if (n > 4)
    {
      buf[n] = '\0';
      sscanf ((char *) buf + 4, "%d", &first);
    }
  tap_ok (n > 0 && first > 10 && reader > r.start, "a reader behind the oldest record skips to it");
  tap_ok (first > 0 && reads_back (&r, r.start, first, 2010),
          "the newest records are all kept, in order, across the wrap");

  /* Growth: a bigger ring starts small and grows to its cap. */
  sbx_ring g;
  sbx_ring_init (&g, 1 << 16);
  push_n (&g, 0, 10);
  tap_ok (g.size == 4096, "a large ring starts with a small buffer");
  push_n (&g, 10, 3000);
  tap_ok (g.size == (1 << 16) && g.end - g.start <= (1 << 16), "it grows to its cap, not beyond");
  uint64_t o = g.start;
  int gfirst = -1;
  n = sbx_ring_read (&g, &o, &t, buf, sizeof buf);
  if (n > 4)
    {
      buf[n] = '\0';
      sscanf ((char *) buf + 4, "%d", &gfirst);
    }
  tap_ok (gfirst >= 0 && reads_back (&g, g.start, gfirst, 3010), "growth keeps every record and its order");

  /* A record larger than the ring keeps its tail. */
  static unsigned char big[10000];
  for (size_t i = 0; i < sizeof big; i++)
    big[i] = (unsigned char) i;
  uint64_t before = r.dropped;
  sbx_ring_push (&r, 6, big, sizeof big);
  o = 0;
  n = sbx_ring_read (&r, &o, &t, buf, sizeof buf);
  tap_ok (n == 4096 - SBX_RING_REC_HDR && memcmp (buf, big + sizeof big - (size_t) n, (size_t) n) == 0,
          "an oversized record keeps its last bytes");
  tap_ok (r.dropped > before + sizeof big - 4096, "and counts the cut bytes as dropped");
  tap_ok (sbx_ring_read (&r, &o, &t, buf, sizeof buf) == -1, "nothing follows it");

  /* A limit below the cap (a shared budget): growth stops there, the
   * oldest records go instead; want says what the cap alone would give. */
  sbx_ring lim;
  sbx_ring_init (&lim, 1 << 16);
  lim.limit = 8192;
  push_n (&lim, 0, 3000);
  tap_ok (lim.size == 8192 && lim.end - lim.start <= 8192 && lim.dropped > 0, "a ring stays within its limit");
  tap_ok (sbx_ring_want (&lim, 100) == 16384, "want: the size the cap alone would allow next");
  o = lim.start;
  gfirst = -1;
  n = sbx_ring_read (&lim, &o, &t, buf, sizeof buf);
  if (n > 4)
    {
      buf[n] = '\0';
      sscanf ((char *) buf + 4, "%d", &gfirst);
    }
  tap_ok (gfirst > 0 && reads_back (&lim, lim.start, gfirst, 3000), "the newest records kept under the limit");

  /* Shrinking keeps the newest records that fit, counts the rest. */
  before = g.dropped;
  uint64_t kept = g.end - g.start;
  sbx_ring_shrink (&g, 4096);
  o = g.start;
  gfirst = -1;
  n = sbx_ring_read (&g, &o, &t, buf, sizeof buf);
  if (n > 4)
    {
      buf[n] = '\0';
      sscanf ((char *) buf + 4, "%d", &gfirst);
    }
  tap_ok (g.size == 4096 && g.end - g.start <= 4096, "shrink: the buffer is smaller");
  tap_ok (gfirst > 0 && reads_back (&g, g.start, gfirst, 3010), "shrink: the newest records kept, in order");
  tap_ok (g.dropped > before && g.dropped - before < kept - (g.end - g.start), "shrink: what went is counted");
  push_n (&g, 3010, 10);
  tap_ok (g.size == 4096 * 2 && reads_back (&g, g.start, gfirst, 3020), "a shrunk ring grows again");
  sbx_ring_free (&r);
  sbx_ring_free (&g);
  sbx_ring_free (&lim);
  return tap_done ();
}
