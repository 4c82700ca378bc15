/* Fuzz harness for the DNS query check of the resolver
 * (sbx_dns_query_check, src/lib/resolver.c), the one gate every message a
 * sandbox sends to its resolver goes through. Arbitrary bytes, and valid
 * queries mutated, go to it; it must never read past the input, and it must
 * agree with a second, independent reading of the same rules below.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). Each
 * input is copied into a buffer of its exact size, so a build with
 * -fsanitize=address catches a read past the end in both modes. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "resolver.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
  do                                                                                               \
    {                                                                                              \
      if (!(cond))                                                                                 \
        {                                                                                          \
          fprintf (stderr, "fuzz-dns: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);      \
          abort ();                                                                                \
        }                                                                                          \
    }                                                                                              \
  while (0)

static size_t accepted, refused;

/* The rules read again: the name as a list of labels, its wire length
 * summed from them, then room for type and class. */
static bool
reference_ok (const uint8_t *p, size_t n)
{
  if (n < 12 || n > 65535)
    return false;
  unsigned flags = (unsigned) p[2] << 8 | p[3];
  if ((flags & 0x8000) != 0 || (flags & 0x7800) != 0 || ((unsigned) p[4] << 8 | p[5]) != 1)
    return false;
  size_t wire = 0, pos = 12;
  while (true)
    {
      if (pos == n)
        return false;
      uint8_t len = p[pos];
      if (len > 63)
        return false;
      wire += 1 + (size_t) len;
      if (wire > 255)
        return false;
      if (len == 0)
        break;
      if (n - pos - 1 < len)
        return false;
      pos += 1 + (size_t) len;
    }
  return n - (pos + 1) >= 4;
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  uint8_t *copy = malloc (size ? size : 1);
  CHECK (copy != NULL);
  memcpy (copy, data, size);
  int r = sbx_dns_query_check (copy, size);
  CHECK (r == 0 || r == -1);
  CHECK ((r == 0) == reference_ok (copy, size));
  CHECK (memcmp (copy, data, size) == 0);
  if (r == 0)
    accepted++;
  else
    refused++;
  free (copy);
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 50000
#define INPUT_MAX 1024

static uint32_t seed = 4242;

static uint32_t
rnd (uint32_t n)
{
  seed = seed * 1103515245u + 12345u;
  return (seed >> 8) % (n ? n : 1);
}

/* A query for a name of random labels, sometimes at the length limits,
 * sometimes with an EDNS OPT record after the question. */
static size_t
make_seed (uint8_t *out)
{
  static const uint8_t opt[] = { 0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0 };
  size_t n = 12, wire = 1;
  memset (out, 0, 12);
  out[0] = (uint8_t) rnd (256);
  out[1] = (uint8_t) rnd (256);
  out[2] = 0x01;
  out[5] = 1;
  unsigned labels = rnd (6);
  for (unsigned l = 0; l < labels; l++)
    {
      unsigned len = rnd (4) == 0 ? 63 : 1 + rnd (20);
      if (wire + 1 + len > 255)
        break;
      out[n++] = (uint8_t) len;
      for (unsigned k = 0; k < len; k++)
        out[n++] = (uint8_t) ("abcdefghijklmnopqrstuvwxyz0123456789-"[rnd (37)]);
      wire += 1 + len;
    }
  out[n++] = 0;
  out[n++] = 0;
  out[n++] = (uint8_t) (1 + rnd (255));
  out[n++] = 0;
  out[n++] = 1;
  if (rnd (3) == 0)
    {
      out[11] = 1;
      memcpy (out + n, opt, sizeof opt);
      n += sizeof opt;
    }
  return n;
}

static size_t
mutate (uint8_t *out, size_t n)
{
  static const uint8_t special[] = { 0, 1, 63, 64, 0x80, 0xc0, 0xc0 | 12, 0xff };
  unsigned edits = 1 + rnd (3);
  for (unsigned e = 0; e < edits; e++)
    {
      size_t at = rnd ((uint32_t) n + 1);
      switch (rnd (5))
        {
        case 0: /* a random byte */
          if (n)
            out[at % n] = (uint8_t) rnd (256);
          break;
        case 1: /* a byte that matters to a name or a header */
          if (n)
            out[at % n] = special[rnd (sizeof special)];
          break;
        case 2: /* a header field */
          out[2 + rnd (4)] = (uint8_t) rnd (256);
          break;
        case 3: /* cut short */
          n = at;
          break;
        default: /* a span inserted */
          {
            size_t len = 1 + rnd (70);
            if (n + len <= INPUT_MAX)
              {
                memmove (out + at + len, out + at, n - at);
                for (size_t k = 0; k < len; k++)
                  out[at + k] = rnd (2) ? special[rnd (sizeof special)] : (uint8_t) rnd (256);
                n += len;
              }
          }
        }
    }
  return n;
}

int
main (void)
{
  static uint8_t input[INPUT_MAX];
  printf ("1..3\n");
  for (unsigned i = 0; i < CORPUS_SIZE; i++)
    {
      size_t n = make_seed (input);
      if (i % 4 != 0)
        n = mutate (input, n);
      if (i % 16 == 15) /* random bytes */
        {
          n = rnd (64);
          for (size_t k = 0; k < n; k++)
            input[k] = (uint8_t) rnd (256);
        }
      LLVMFuzzerTestOneInput (input, n);
    }
  printf ("ok 1 - %d pseudo-random messages to the query check, which agrees with the reference\n", CORPUS_SIZE);
  printf ("%s 2 - %zu of them accepted\n", accepted > CORPUS_SIZE / 5 ? "ok" : "not ok", accepted);
  printf ("%s 3 - %zu of them refused\n", refused > CORPUS_SIZE / 5 ? "ok" : "not ok", refused);
  return 0;
}

#endif
