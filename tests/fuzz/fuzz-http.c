/* Fuzz harness for the proxy's HTTP helpers (src/lib/proxy.c): arbitrary
 * bytes, and valid request heads mutated byte by byte, go to
 * sbx_http_head_len, sbx_http_authorized and sbx_http_rewrite_head. None may
 * crash, and what they return must hold their promises: a head length within
 * the input and the limits, authorization only with exactly one matching
 * header, and a rewritten head that is itself one valid head with no
 * Authorization or Proxy-Authorization header left, so never authorized.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "proxy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CHECK(cond)                                                                            \
  do                                                                                           \
    {                                                                                          \
      if (!(cond))                                                                             \
        {                                                                                      \
          fprintf (stderr, "fuzz-http: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
          abort ();                                                                            \
        }                                                                                      \
    }                                                                                          \
  while (0)

#define TOKEN "tok-3n"

static size_t heads, authorized, rewritten;

/* Whether the head has a header line named NAME (case-insensitive). */
static bool
has_header (const char *h, size_t n, const char *name)
{
  size_t nl = strlen (name);
  for (size_t i = 0; i + 2 + nl < n; i++)
    if (h[i] == '\r' && h[i + 1] == '\n' && strncasecmp (h + i + 2, name, nl) == 0 && h[i + 2 + nl] == ':')
      return true;
  return false;
}

static void
check_rewrite (const char *in, size_t hl)
{
  size_t n = 0;
  char *out = sbx_http_rewrite_head (in, hl, "192.0.2.1", &n);
  if (out == NULL)
    return; /* only when the result would pass the limits */
  rewritten++;
  CHECK (sbx_http_head_len (out, n) == (ssize_t) n);
  CHECK (!has_header (out, n, "Authorization") && !has_header (out, n, "Proxy-Authorization"));
  CHECK (sbx_http_authorized (out, n, TOKEN) == 0);
  CHECK (has_header (out, n, "X-Forwarded-For") && has_header (out, n, "X-Forwarded-Proto"));
  /* The request line goes through as it came. */
  const char *eol = memchr (in, '\n', hl);
  CHECK (eol && memcmp (out, in, (size_t) (eol - in)) == 0);
  free (out);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *in = (const char *) data;
  ssize_t hl = sbx_http_head_len (in, size);
  CHECK (hl >= -1 && hl <= (ssize_t) size && hl <= SBX_HTTP_HEAD_MAX);
  int a = sbx_http_authorized (in, size, TOKEN);
  CHECK (a == 0 || a == 1);
  CHECK (sbx_http_authorized (in, size, NULL) == 1);
  if (hl <= 0)
    {
      CHECK (a == 0);
      size_t n;
      CHECK (sbx_http_rewrite_head (in, size, "192.0.2.1", &n) == NULL);
      return 0;
    }
  heads++;
  if (a)
    {
      authorized++;
      CHECK (has_header (in, (size_t) hl, "Authorization"));
    }
  CHECK (sbx_http_head_len (in, (size_t) hl) == hl);
  CHECK (sbx_http_authorized (in, (size_t) hl, TOKEN) == a);
  if ((size_t) hl < size)
    {
      size_t n;
      CHECK (sbx_http_rewrite_head (in, size, NULL, &n) == NULL);
    }
  check_rewrite (in, (size_t) hl);
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 50000
#define INPUT_MAX 20000

static uint32_t seed = 4242;

static uint32_t
rnd (uint32_t n)
{
  seed = seed * 1103515245u + 12345u;
  return (seed >> 8) % (n ? n : 1);
}

static const char *const seeds[] = {
  "GET / HTTP/1.1\r\nHost: example\r\n\r\n",
  "GET /x?token=" TOKEN " HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer " TOKEN "\r\nConnection: keep-alive\r\n\r\n",
  "POST /api HTTP/1.0\r\nauthorization: bearer " TOKEN "\r\nContent-Length: 4\r\nX-Forwarded-For: 6.6.6.6\r\n\r\nbody",
  "GET /ws HTTP/1.1\r\nAuthorization: Bearer " TOKEN "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
  "Proxy-Authorization: Basic eDp5\r\n\r\n",
  "PUT / HTTP/1.1\r\nAuthorization: Bearer x\r\nAuthorization: Bearer " TOKEN "\r\nCookie: t=" TOKEN "\r\n\r\n",
};

static const char *const tokens[] = { "\r\n",          "\r",          "\n",        ":",         " ",         "\t",
                                      "\0",            "\r\n\r\n",    "\r\n ",     "Bearer ",   TOKEN,       ",",
                                      "Authorization", "Connection: close\r\n", "Upgrade: h2c\r\n",
                                      "Authorization: Bearer " TOKEN "\r\n", "Proxy-Authorization: x\r\n",
                                      "HTTP/1.1",      "\x7f",        "\xff",      "X-Forwarded-Proto: https\r\n" };

static size_t
make_input (unsigned i, char *out)
{
  size_t n;
  if (i % 50 == 49)
    {
      /* Long heads, near and over the size and count limits. */
      n = (size_t) sprintf (out, "GET / HTTP/1.1\r\n");
      unsigned count = 90 + rnd (20);
      for (unsigned k = 0; k < count; k++)
        n += (size_t) sprintf (out + n, "H%u: v\r\n", k);
      size_t pad = rnd (2) ? SBX_HTTP_HEAD_MAX - n - 40 + rnd (80) : rnd (100);
      n += (size_t) sprintf (out + n, "X: ");
      memset (out + n, 'p', pad);
      n += pad;
      n += (size_t) sprintf (out + n, "\r\n\r\n");
      return n;
    }
  const char *s = seeds[i % (sizeof seeds / sizeof *seeds)];
  n = strlen (s);
  memcpy (out, s, n);
  if (i % 5 == 0)
    return n; /* valid as is */
  unsigned edits = 1 + rnd (4);
  for (unsigned e = 0; e < edits; e++)
    {
      size_t at = rnd ((uint32_t) n + 1);
      switch (rnd (3))
        {
        case 0: /* flip a byte */
          if (n)
            out[at % n] = (char) rnd (256);
          break;
        case 1: /* delete a span */
          if (n)
            {
              size_t len = rnd (8);
              if (at + len > n)
                len = n - at;
              memmove (out + at, out + at + len, n - at - len);
              n -= len;
            }
          break;
        default: /* insert a token */
          {
            const char *t = tokens[rnd (sizeof tokens / sizeof *tokens)];
            size_t tl = t[0] ? strlen (t) : 1;
            if (n + tl < INPUT_MAX)
              {
                memmove (out + at + tl, out + at, n - at);
                memcpy (out + at, t, tl);
                n += tl;
              }
          }
        }
    }
  return n;
}

int
main (void)
{
  static char input[INPUT_MAX];
  printf ("1..3\n");
  for (unsigned i = 0; i < CORPUS_SIZE; i++)
    {
      size_t n = make_input (i, input);
      LLVMFuzzerTestOneInput ((const uint8_t *) input, n);
    }
  printf ("ok 1 - %d pseudo-random inputs to head_len, authorized and rewrite_head\n", CORPUS_SIZE);
  printf ("%s 2 - %zu of them complete heads, %zu rewritten, each a valid head without Authorization\n",
          heads > CORPUS_SIZE / 10 && rewritten > CORPUS_SIZE / 10 ? "ok" : "not ok", heads, rewritten);
  printf ("%s 3 - %zu of them authorized, each with its one Authorization header\n",
          authorized > CORPUS_SIZE / 50 ? "ok" : "not ok", authorized);
  return 0;
}

#endif
