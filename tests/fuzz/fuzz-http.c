/* Fuzz harness for the proxy's HTTP helpers (src/lib/http.c): arbitrary
 * bytes, and valid request heads mutated byte by byte, go to
 * sbx_http_head_len, sbx_http_authorized and sbx_http_rewrite_head. None may
 * crash, and what they return must hold their promises: a head length within
 * the input and the limits, authorization only with exactly one matching
 * header, and a rewritten head that is itself one valid head with no
 * Authorization or Proxy-Authorization header left, so never authorized.
 * Inputs are also read as a connection's stream, the way the proxy reads
 * it: head, body by its framing (sbx_http_request_framing, sbx_http_body),
 * next head; every head on the way is rewritten and checked as above, and
 * a body read in two pieces, split anywhere, ends where it ends read whole.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "http.h"
#include "proxy.h"

#include <strings.h>

#define FUZZ_NAME "fuzz-http"
#include "fuzz.h"

#define TOKEN "tok-3n"

static size_t heads, authorized, rewritten, bodies, pipelined;

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

/* The body at P[0..N) under F, read whole and in two pieces split at
 * SPLIT: the same bytes taken, the same state after. Returns how many
 * bytes it took (-1: refused). */
static ssize_t
check_body (sbx_http_framing *f, const char *p, size_t n, size_t split)
{
  sbx_http_framing whole = *f, parts = *f;
  ssize_t r = sbx_http_body (&whole, p, n);
  CHECK (r >= -1 && r <= (ssize_t) n);
  CHECK ((r == -1) == (whole.next == SBX_HTTP_NEXT_FAILED));
  CHECK (r < 0 || r == (ssize_t) n || whole.next == SBX_HTTP_NEXT_HEAD);
  CHECK (whole.next <= SBX_HTTP_NEXT_FAILED);
  split = split > n ? n : split;
  ssize_t a = sbx_http_body (&parts, p, split), b = 0;
  if (a == (ssize_t) split && parts.next != SBX_HTTP_NEXT_HEAD)
    b = sbx_http_body (&parts, p + split, n - split);
  if (a < 0 || b < 0)
    CHECK (r == -1);
  else
    CHECK (r == a + b && whole.next == parts.next && whole.left == parts.left);
  *f = whole;
  return r;
}

/* The input as a connection's stream: heads and bodies one after another,
 * as long as they are valid. */
static void
check_stream (const char *in, size_t size)
{
  size_t pos = 0;
  for (int k = 0; k < 64 && pos < size; k++)
    {
      ssize_t hl = sbx_http_head_len (in + pos, size - pos);
      if (hl <= 0)
        return;
      check_rewrite (in + pos, (size_t) hl);
      sbx_http_framing f;
      if (sbx_http_request_framing (in + pos, (size_t) hl, &f) < 0)
        return;
      CHECK (f.next == SBX_HTTP_NEXT_HEAD || f.next == SBX_HTTP_NEXT_BODY || f.next == SBX_HTTP_NEXT_CHUNK_SIZE
             || f.next == SBX_HTTP_NEXT_OPAQUE);
      pos += (size_t) hl;
      if (k > 0)
        pipelined++;
      if (f.next == SBX_HTTP_NEXT_HEAD)
        continue;
      bodies++;
      ssize_t r = check_body (&f, in + pos, size - pos, (size - pos) / 3 + (size_t) k);
      if (r < 0 || f.next != SBX_HTTP_NEXT_HEAD)
        return;
      pos += (size_t) r;
    }
}

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
  check_stream (in, size);
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 50000
#define INPUT_MAX 20000

static const char *const seeds[] = {
  "GET / HTTP/1.1\r\nHost: example\r\n\r\n",
  "GET /x?token=" TOKEN " HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer " TOKEN "\r\nConnection: keep-alive\r\n\r\n",
  "POST /api HTTP/1.0\r\nauthorization: bearer " TOKEN "\r\nContent-Length: 4\r\nX-Forwarded-For: 6.6.6.6\r\n\r\nbody",
  "GET /ws HTTP/1.1\r\nAuthorization: Bearer " TOKEN "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
  "Proxy-Authorization: Basic eDp5\r\n\r\n",
  "PUT / HTTP/1.1\r\nAuthorization: Bearer x\r\nAuthorization: Bearer " TOKEN "\r\nCookie: t=" TOKEN "\r\n\r\n",
  "POST /c HTTP/1.1\r\nAuthorization: Bearer " TOKEN "\r\nTransfer-Encoding: chunked\r\n\r\n"
  "5;x=1\r\nhello\r\n1a\r\nGET / HTTP/1.1\r\nX: 1234\r\n\r\n\r\n0\r\n\r\n"
  "GET /next HTTP/1.1\r\nAuthorization: Bearer " TOKEN "\r\n\r\n",
  "GET /a HTTP/1.1\r\nAuthorization: Bearer " TOKEN "\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 10\r\n\r\n"
  "0123456789GET /c HTTP/1.0\r\nauthorization: bearer " TOKEN "\r\n\r\n",
};

static const char *const tokens[] = { "\r\n",
                                      "\r",
                                      "\n",
                                      ":",
                                      " ",
                                      "\t",
                                      "\0",
                                      "\r\n\r\n",
                                      "\r\n ",
                                      "Bearer ",
                                      TOKEN,
                                      ",",
                                      "Authorization",
                                      "Connection: close\r\n",
                                      "Upgrade: h2c\r\n",
                                      "Authorization: Bearer " TOKEN "\r\n",
                                      "Proxy-Authorization: x\r\n",
                                      "HTTP/1.1",
                                      "\x7f",
                                      "\xff",
                                      "X-Forwarded-Proto: https\r\n",
                                      "Transfer-Encoding: chunked\r\n",
                                      "Content-Length: 3\r\n",
                                      "0\r\n\r\n",
                                      "ffff;e\r\n",
                                      "GET / HTTP/1.1\r\n\r\n" };

static const struct fuzz_seeds mutations = FUZZ_SEEDS (seeds, tokens, INPUT_MAX, false);

/* Long heads, near and over the size and count limits. */
static size_t
make_long_head (char *out)
{
  size_t n = (size_t) sprintf (out, "GET / HTTP/1.1\r\n");
  unsigned count = 90 + fuzz_rnd (20);
  for (unsigned k = 0; k < count; k++)
    n += (size_t) sprintf (out + n, "H%u: v\r\n", k);
  size_t pad = fuzz_rnd (2) ? SBX_HTTP_HEAD_MAX - n - 40 + fuzz_rnd (80) : fuzz_rnd (100);
  n += (size_t) sprintf (out + n, "X: ");
  memset (out + n, 'p', pad);
  n += pad;
  n += (size_t) sprintf (out + n, "\r\n\r\n");
  return n;
}

static size_t
make_input (unsigned i, uint8_t *out)
{
  if (i % 50 == 49)
    return make_long_head ((char *) out);
  return fuzz_mutate_seed (&mutations, i, out);
}

int
main (void)
{
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 4242,
    .make_input = make_input,
    .what = "inputs to head_len, authorized and rewrite_head",
  };

  fuzz_corpus_run (&corpus, 4);
  tap_ok (heads > CORPUS_SIZE / 10 && rewritten > CORPUS_SIZE / 10,
          "%zu of them complete heads, %zu rewritten, each a valid head without Authorization", heads, rewritten);
  tap_ok (authorized > CORPUS_SIZE / 50, "%zu of them authorized, each with its one Authorization header", authorized);
  tap_ok (bodies > CORPUS_SIZE / 50 && pipelined > CORPUS_SIZE / 100,
          "%zu bodies framed the same whole and split, %zu heads after the first one of a stream", bodies, pipelined);
  return tap_done ();
}

#endif
