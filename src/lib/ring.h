/* A bounded log of output records that keeps the newest: a background
 * process's stdout and stderr, in the order they came, for readers that come
 * and go (`sbx proc logs [--follow]`). Each reader holds its own offset into
 * the stream; a reader that falls behind the oldest kept record skips to it
 * and learns how much it missed. Memory grows with use, up to CAP, or up to
 * the lower LIMIT its owner sets where rings share a budget (the monitor:
 * one per sandbox), and shrinks when its owner says. */
#ifndef SBX_RING_H
#define SBX_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SBX_RING_REC_HDR 5 /* u8 type, u32 length */

typedef struct sbx_ring {
  unsigned char *data;
  size_t size;      /* allocated, a power of two <= cap */
  size_t cap;       /* the bound */
  size_t limit;     /* the size it may grow to now (0: cap); it never shrinks by it */
  uint64_t start;   /* stream offset of the oldest kept record */
  uint64_t end;     /* stream offset after the newest */
  uint64_t dropped; /* payload bytes evicted (or cut from oversized records) */
} sbx_ring;

/* CAP: a power of two, at least 4096. */
void sbx_ring_init (sbx_ring *r, size_t cap);
void sbx_ring_free (sbx_ring *r);
/* Appends a record; evicts the oldest records to make room. A record
 * larger than the ring keeps only its last bytes. */
void sbx_ring_push (sbx_ring *r, uint8_t type, const void *data, size_t len);
/* The buffer size a push of LEN bytes would grow it to under the cap
 * alone (its size when it would not grow). */
size_t sbx_ring_want (const sbx_ring *r, size_t len);
/* Shrinks the buffer to SIZE (a power of two, at least 4096), evicting the
 * oldest records (counted in dropped) that do not fit. */
void sbx_ring_shrink (sbx_ring *r, size_t size);
/* Reads the record at *OFF into BUF (capacity >= the largest record pushed,
 * at most CAP) and advances *OFF. An offset older than the oldest record
 * moves to it first. Returns the payload length, or -1 when *OFF is at the
 * end (nothing new). */
ssize_t sbx_ring_read (const sbx_ring *r, uint64_t *off, uint8_t *type, void *buf, size_t bufcap);

#endif
