/* Bounded record log, newest kept (see ring.h). Offsets grow forever; the
 * byte at stream offset O lives at data[O & (size - 1)]. */
#include "config.h"
#include "ring.h"
#include "util.h"

#include <string.h>

void
sbx_ring_init (sbx_ring *r, size_t cap)
{
  *r = (sbx_ring){ .cap = cap };
}

void
sbx_ring_free (sbx_ring *r)
{
  free (r->data);
  *r = (sbx_ring){ .cap = r->cap };
}

static void
copy_in (sbx_ring *r, uint64_t off, const void *p, size_t n)
{
  size_t at = (size_t) (off & (r->size - 1));
  size_t first = n < r->size - at ? n : r->size - at;
  memcpy (r->data + at, p, first);
  memcpy (r->data, (const unsigned char *) p + first, n - first);
}

static void
copy_out (const sbx_ring *r, uint64_t off, void *p, size_t n)
{
  size_t at = (size_t) (off & (r->size - 1));
  size_t first = n < r->size - at ? n : r->size - at;
  memcpy (p, r->data + at, first);
  memcpy ((unsigned char *) p + first, r->data, n - first);
}

static uint32_t
rec_len (const sbx_ring *r, uint64_t off)
{
  unsigned char h[SBX_RING_REC_HDR];
  uint32_t len;
  copy_out (r, off, h, sizeof h);
  memcpy (&len, h + 1, sizeof len);
  return len;
}

/* What the buffer may grow to now: the cap, or the lower limit its owner
 * set, but never below what it has. */
static size_t
max_size (const sbx_ring *r)
{
  size_t max = r->limit && r->limit < r->cap ? r->limit : r->cap;
  if (max < 4096)
    max = 4096;
  return max > r->size ? max : r->size;
}

/* The buffer size for NEED bytes: a power of two from 4096, up to MAX. */
static size_t
size_for (const sbx_ring *r, size_t need, size_t max)
{
  size_t size = r->size ? r->size : 4096;
  while (size < need && size < max)
    size *= 2;
  return size;
}

/* Moves the kept bytes into a buffer of SIZE (>= what is kept), keeping
 * offsets. */
static void
relayout (sbx_ring *r, size_t size)
{
  if (size == r->size)
    return;
  unsigned char *d = xmalloc (size);
  size_t used = (size_t) (r->end - r->start);
  if (used)
    {
      /* Lay the kept bytes out at their offsets modulo the new size. */
      unsigned char *tmp = xmalloc (used);
      copy_out (r, r->start, tmp, used);
      free (r->data);
      r->data = d;
      r->size = size;
      copy_in (r, r->start, tmp, used);
      free (tmp);
      return;
    }
  free (r->data);
  r->data = d;
  r->size = size;
}

/* Evicts the oldest records until NEED more bytes fit in SIZE. */
static void
evict (sbx_ring *r, size_t need, size_t size)
{
  while (r->end > r->start && (size_t) (r->end - r->start) + need > size)
    {
      uint32_t l = rec_len (r, r->start);
      r->dropped += l;
      r->start += SBX_RING_REC_HDR + l;
    }
}

size_t
sbx_ring_want (const sbx_ring *r, size_t len)
{
  size_t max = r->cap;
  if (len > max - SBX_RING_REC_HDR)
    len = max - SBX_RING_REC_HDR;
  size_t need = (size_t) (r->end - r->start) + SBX_RING_REC_HDR + len;
  return need > r->size ? size_for (r, need, max) : r->size;
}

void
sbx_ring_shrink (sbx_ring *r, size_t size)
{
  if (size >= r->size)
    return;
  if (size < 4096)
    size = 4096;
  evict (r, 0, size);
  relayout (r, size);
}

void
sbx_ring_push (sbx_ring *r, uint8_t type, const void *data, size_t len)
{
  size_t max = max_size (r);
  if (len > max - SBX_RING_REC_HDR)
    {
      r->dropped += len - (max - SBX_RING_REC_HDR);
      data = (const unsigned char *) data + (len - (max - SBX_RING_REC_HDR));
      len = max - SBX_RING_REC_HDR;
    }
  size_t need = SBX_RING_REC_HDR + len;
  if ((size_t) (r->end - r->start) + need > r->size)
    relayout (r, size_for (r, (size_t) (r->end - r->start) + need, max));
  evict (r, need, r->size);
  unsigned char h[SBX_RING_REC_HDR];
  uint32_t l32 = (uint32_t) len;
  h[0] = type;
  memcpy (h + 1, &l32, sizeof l32);
  copy_in (r, r->end, h, sizeof h);
  copy_in (r, r->end + SBX_RING_REC_HDR, data, len);
  r->end += need;
}

ssize_t
sbx_ring_read (const sbx_ring *r, uint64_t *off, uint8_t *type, void *buf, size_t bufcap)
{
  if (*off < r->start)
    *off = r->start;
  if (*off >= r->end)
    return -1;
  unsigned char h[SBX_RING_REC_HDR];
  uint32_t len;
  copy_out (r, *off, h, sizeof h);
  memcpy (&len, h + 1, sizeof len);
  if (len > bufcap)
    len = (uint32_t) bufcap; /* cannot happen with a large enough BUF */
  *type = h[0];
  copy_out (r, *off + SBX_RING_REC_HDR, buf, len);
  *off += SBX_RING_REC_HDR + rec_len (r, *off);
  return (ssize_t) len;
}
