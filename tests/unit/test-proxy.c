/* Unit tests of the exposed-port proxy (src/lib/proxy.c, http.c, token.c).
 *
 * First the pure helpers (http.c): the request-head parser on good and bad
 * heads, the bearer check, the rewrite. Then the proxy live: it runs its poll loop in a
 * thread of its own (as it would in the monitor, alone), a backend thread on
 * 127.0.0.1 stands in for the sandbox's port, and the main thread is the
 * client. The backend counts its connections, so "nothing reached the
 * sandbox" is checked, not assumed. Last, the token file (token.c), as root. */
#include "config.h"
#include "http.h"
#include "proxy.h"
#include "token.h"
#include "tap.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#define TOKEN "Zm9vYmFy-t0ken_value.0123456789abcdef"
#define AUTH "Authorization: Bearer " TOKEN "\r\n"

static void
sleep_ms (long ms)
{
  struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
  nanosleep (&ts, NULL);
}

static bool
has (const char *hay, const char *needle)
{
  return hay && strstr (hay, needle) != NULL;
}

static bool
has_nocase (const char *hay, const char *needle)
{
  return hay && strcasestr (hay, needle) != NULL;
}

static bool
starts (const char *s, const char *prefix)
{
  return s && strncmp (s, prefix, strlen (prefix)) == 0;
}

/* ---- pure helpers ---- */

static void
test_head_len (void)
{
  static const struct {
    const char *s;
    size_t n; /* 0: strlen */
    ssize_t want;
    const char *what;
  } cases[] = {
    { "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 0, 27, "a plain head" },
    { "GET / HTTP/1.0\r\n\r\n", 0, 18, "no headers, HTTP/1.0" },
    { "POST /x?y=1 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 0, 43, "a head followed by a body" },
    { "GET / HTTP/1.1\r\nX:\r\nY:\t v \t\r\n\r\n", 0, 31, "empty and padded values" },
    { "GET / HTTP/1.1\r\nHost: a\r\n", 0, 0, "incomplete" },
    { "GET / HTTP/1.1\r\nHost: a\r\n\r", 0, 0, "incomplete at the last CR" },
    { "", 0, 0, "empty" },
    { "GET / HTTP/1.1\r\nHost a\r\n\r\n", 0, -1, "a header without a colon" },
    { "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 0, -1, "a space before the colon" },
    { "GET / HTTP/1.1\r\n: a\r\n\r\n", 0, -1, "an empty header name" },
    { "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 0, -1, "a bare CR" },
    { "GET / HTTP/1.1\r\nHost: a\rb", 0, -1, "a bare CR, incomplete" },
    { "GET / HTTP/1.1\nHost: a\r\n\r\n", 0, -1, "a bare LF" },
    { "GET / HTTP/1.1\r\nHost: a\n\n", 0, -1, "bare LFs at the end" },
    { "GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n", 30, -1, "a NUL" },
    { "GET / HTTP/1.1\r\nHost: a\0", 24, -1, "a NUL, incomplete" },
    { "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", 0, -1, "obs-fold" },
    { "GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 0, -1, "a control character" },
    { "GET  / HTTP/1.1\r\n\r\n", 0, -1, "two spaces in the request line" },
    { "GET / HTTP/2.0\r\n\r\n", 0, -1, "HTTP/2.0" },
    { "GET / HTTP/1.1 \r\n\r\n", 0, -1, "a trailing space" },
    { "GET /\r\n\r\n", 0, -1, "HTTP/0.9" },
    { "G\"T / HTTP/1.1\r\n\r\n", 0, -1, "a method that is not a token" },
    { "GET /\x7f HTTP/1.1\r\n\r\n", 0, -1, "DEL in the target" },
    { "\r\nGET / HTTP/1.1\r\n\r\n", 0, -1, "a leading empty line" },
    { "\r\n\r\n", 0, -1, "no request line" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      size_t n = cases[i].n ? cases[i].n : strlen (cases[i].s);
      ssize_t r = sbx_http_head_len (cases[i].s, n);
      tap_ok (r == cases[i].want, "head_len: %s: %zd (want %zd)", cases[i].what, r, cases[i].want);
    }
}

/* A head of NHEADERS headers, padded with an X-Pad header to TOTAL bytes
 * when TOTAL is not 0. */
static char *
big_head (size_t nheaders, size_t total, size_t *ret_len)
{
  size_t cap = 64 + nheaders * 16 + total;
  char *h = xmalloc (cap);
  size_t n = (size_t) sprintf (h, "GET / HTTP/1.1\r\n");
  for (size_t i = 0; i < nheaders; i++)
    n += (size_t) sprintf (h + n, "H%zu: v\r\n", i);
  if (total)
    {
      size_t pad = total - n - strlen ("X-Pad: \r\n\r\n");
      n += (size_t) sprintf (h + n, "X-Pad: ");
      memset (h + n, 'p', pad);
      n += pad;
      n += (size_t) sprintf (h + n, "\r\n");
    }
  n += (size_t) sprintf (h + n, "\r\n");
  *ret_len = n;
  return h;
}

static void
test_head_limits (void)
{
  size_t n;
  _cleanup_free_ char *h100 = big_head (100, 0, &n);
  tap_ok (sbx_http_head_len (h100, n) == (ssize_t) n, "head_len: 100 headers accepted");
  _cleanup_free_ char *h101 = big_head (101, 0, &n);
  tap_ok (sbx_http_head_len (h101, n) == -1, "head_len: 101 headers refused");
  _cleanup_free_ char *max = big_head (1, SBX_HTTP_HEAD_MAX, &n);
  tap_ok (n == SBX_HTTP_HEAD_MAX && sbx_http_head_len (max, n) == (ssize_t) n, "head_len: a 16 KiB head accepted");
  _cleanup_free_ char *over = big_head (1, SBX_HTTP_HEAD_MAX + 1, &n);
  tap_ok (sbx_http_head_len (over, n) == -1, "head_len: 16 KiB + 1 refused");
  tap_ok (sbx_http_head_len (over, SBX_HTTP_HEAD_MAX - 1) == 0, "head_len: under 16 KiB unfinished is incomplete");
  tap_ok (sbx_http_head_len (over, SBX_HTTP_HEAD_MAX) == -1, "head_len: 16 KiB unfinished is malformed");
}

static void
test_authorized (void)
{
  static const struct {
    const char *headers;
    int want;
    const char *what;
  } cases[] = {
    { AUTH, 1, "the right token" },
    { "authorization: bearer " TOKEN "\r\n", 1, "lower case" },
    { "AUTHORIZATION:BEARER   " TOKEN " \t\r\n", 1, "upper case, extra spaces" },
    { "Host: x\r\n" AUTH "Accept: */*\r\n", 1, "among other headers" },
    { "", 0, "no header" },
    { "Authorization: Bearer wrong\r\n", 0, "a wrong token" },
    { "Authorization: Bearer " TOKEN "x\r\n", 0, "the token and more" },
    { "Authorization: Bearer Zm9vYmFy\r\n", 0, "a prefix of the token" },
    { "Authorization: Bearer\r\n", 0, "no credentials" },
    { "Authorization: Bearer \r\n", 0, "empty credentials" },
    { "Authorization: Basic " TOKEN "\r\n", 0, "another scheme" },
    { "Authorization: Bearer\t" TOKEN "\r\n", 0, "a tab after the scheme" },
    { "Authorization: Bearer " TOKEN ", Bearer x\r\n", 0, "a list" },
    { AUTH AUTH, 0, "two Authorization headers" },
    { AUTH "Authorization: Bearer x\r\n", 0, "two different Authorization headers" },
    { "Proxy-Authorization: Bearer " TOKEN "\r\n", 0, "Proxy-Authorization" },
    { "Cookie: token=" TOKEN "\r\n", 0, "a cookie" },
    { "X-Authorization: Bearer " TOKEN "\r\n", 0, "X-Authorization" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      _cleanup_free_ char *h = xasprintf ("GET / HTTP/1.1\r\n%s\r\n", cases[i].headers);
      int r = sbx_http_authorized (h, strlen (h), TOKEN);
      tap_ok (r == cases[i].want, "authorized: %s: %d", cases[i].what, r);
    }
  const char *q = "GET /?access_token=" TOKEN "&token=" TOKEN " HTTP/1.1\r\n\r\n";
  tap_ok (sbx_http_authorized (q, strlen (q), TOKEN) == 0, "authorized: not from the query string");
  const char *bad = "GET / HTTP/1.1\r\n" AUTH "junk\r\n\r\n";
  tap_ok (sbx_http_authorized (bad, strlen (bad), TOKEN) == 0, "authorized: not from a malformed head");
  const char *ok = "GET / HTTP/1.1\r\n\r\n";
  tap_ok (sbx_http_authorized (ok, strlen (ok), NULL) == 1, "authorized: NULL token is public");
  const char *empty = "GET / HTTP/1.1\r\nAuthorization: Bearer \r\n\r\n";
  tap_ok (sbx_http_authorized (empty, strlen (empty), "") == 0, "authorized: an empty token matches nothing");
}

static void
test_rewrite (void)
{
  const char *in = "POST /p HTTP/1.1\r\nHost: h\r\n" AUTH "Connection: keep-alive\r\n"
                   "proxy-authorization: Basic eDp5\r\nX-Forwarded-For: 6.6.6.6\r\nx-forwarded-proto: https\r\n"
                   "connection: TE\r\nContent-Length: 2\r\n\r\n";
  size_t n = 0;
  _cleanup_free_ char *out = sbx_http_rewrite_head (in, strlen (in), "192.0.2.7", &n);
  const char *want = "POST /p HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nconnection: TE\r\n"
                     "Content-Length: 2\r\nX-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\n\r\n";
  tap_ok (out && n == strlen (want) && memcmp (out, want, n) == 0,
          "rewrite: auth and forwarding headers replaced, the rest (Connection too) kept in order");

  const char *ws = "GET /ws HTTP/1.1\r\nHost: h\r\n" AUTH "Connection: keep-alive, Upgrade\r\n"
                   "Upgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n";
  _cleanup_free_ char *wout = sbx_http_rewrite_head (ws, strlen (ws), NULL, &n);
  tap_ok (wout && has (wout, "\r\nConnection: keep-alive, Upgrade\r\n") && has (wout, "\r\nUpgrade: websocket\r\n")
              && !has (wout, "Connection: close") && !has_nocase (wout, "authorization")
              && !has (wout, "X-Forwarded-For") && sbx_http_head_len (wout, n) == (ssize_t) n,
          "rewrite: an Upgrade request keeps its Connection header, loses Authorization");

  const char *body = "GET / HTTP/1.1\r\n\r\nxx";
  tap_ok (sbx_http_rewrite_head (body, strlen (body), NULL, &n) == NULL, "rewrite: refuses bytes after the head");
  const char *bad = "GET / HTTP/1.1\r\nbad\r\n\r\n";
  tap_ok (sbx_http_rewrite_head (bad, strlen (bad), NULL, &n) == NULL, "rewrite: refuses a malformed head");
  const char *good = "GET / HTTP/1.1\r\n\r\n";
  tap_ok (sbx_http_rewrite_head (good, strlen (good), "1.2.3.4\r\nX-Evil: 1", &n) == NULL,
          "rewrite: refuses an address that is not printable");
  size_t hn;
  _cleanup_free_ char *h100 = big_head (100, 0, &hn);
  tap_ok (sbx_http_rewrite_head (h100, hn, "1.2.3.4", &n) == NULL,
          "rewrite: refuses what would grow past the header limit");
}

static void
test_framing (void)
{
  static const struct {
    const char *headers;
    int want; /* -1, or the sbx_http_next */
    uint64_t left;
    const char *what;
  } cases[] = {
    { "", SBX_HTTP_NEXT_HEAD, 0, "no body" },
    { "Content-Length: 5\r\n", SBX_HTTP_NEXT_BODY, 5, "Content-Length" },
    { "content-length:  007 \r\n", SBX_HTTP_NEXT_BODY, 7, "Content-Length, lower case, padded, leading zeros" },
    { "Content-Length: 0\r\n", SBX_HTTP_NEXT_HEAD, 0, "Content-Length 0: no body" },
    { "Content-Length: 999999999999999999\r\n", SBX_HTTP_NEXT_BODY, 999999999999999999ULL, "18 digits" },
    { "Transfer-Encoding: chunked\r\n", SBX_HTTP_NEXT_CHUNK_SIZE, 0, "chunked" },
    { "transfer-encoding: Chunked\r\n", SBX_HTTP_NEXT_CHUNK_SIZE, 0, "chunked, any case" },
    { "Connection: Upgrade\r\nUpgrade: websocket\r\n", SBX_HTTP_NEXT_OPAQUE, 0, "an Upgrade request: opaque" },
    { "Upgrade: websocket\r\nConnection: keep-alive\r\n", SBX_HTTP_NEXT_HEAD, 0,
      "Upgrade without `Connection: upgrade` is not one" },
    { "Content-Length: 1000000000000000000\r\n", -1, 0, "19 digits" },
    { "Content-Length: 5\r\nContent-Length: 5\r\n", -1, 0, "Content-Length twice" },
    { "Content-Length: 5, 5\r\n", -1, 0, "a Content-Length list" },
    { "Content-Length: +5\r\n", -1, 0, "a sign" },
    { "Content-Length: -1\r\n", -1, 0, "negative" },
    { "Content-Length: 0x10\r\n", -1, 0, "hex" },
    { "Content-Length: 1 0\r\n", -1, 0, "a space inside" },
    { "Content-Length:\r\n", -1, 0, "empty" },
    { "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", -1, 0, "both Content-Length and chunked" },
    { "Transfer-Encoding: chunked\r\nContent-Length: 0\r\n", -1, 0, "both, the other way round" },
    { "Transfer-Encoding: gzip\r\n", -1, 0, "another transfer coding" },
    { "Transfer-Encoding: gzip, chunked\r\n", -1, 0, "a list of codings" },
    { "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", -1, 0, "Transfer-Encoding twice" },
    { "Transfer-Encoding: chunked\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 3\r\n", -1, 0,
      "an ambiguous Upgrade request" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      _cleanup_free_ char *h = xasprintf ("POST / HTTP/1.1\r\n%s\r\n", cases[i].headers);
      sbx_http_framing f = { .next = SBX_HTTP_NEXT_FAILED, .left = 42 };
      int r = sbx_http_request_framing (h, strlen (h), &f);
      bool ok = cases[i].want < 0 ? r == -1 && f.next == SBX_HTTP_NEXT_FAILED
                                  : r == 0 && (int) f.next == cases[i].want && f.left == cases[i].left;
      tap_ok (ok, "framing: %s: %d, next %d, left %llu", cases[i].what, r, (int) f.next, (unsigned long long) f.left);
    }
  sbx_http_framing f;
  const char *h10 = "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n";
  tap_ok (sbx_http_request_framing (h10, strlen (h10), &f) == -1, "framing: chunked in HTTP/1.0 is refused");
  const char *conn = "CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n";
  tap_ok (sbx_http_request_framing (conn, strlen (conn), &f) == 0 && f.next == SBX_HTTP_NEXT_OPAQUE,
          "framing: CONNECT is opaque");
  const char *bad = "POST / HTTP/1.1\r\nno colon\r\n\r\n";
  tap_ok (sbx_http_request_framing (bad, strlen (bad), &f) == -1, "framing: a malformed head");
}

/* The body in P from a fresh F (chunked if CHUNKED, else Content-Length
 * LEFT), fed in pieces of STEP bytes: how many bytes belong to it, -1 if it
 * is refused, -2 if it did not end. */
static ssize_t
body_len (const char *p, size_t n, bool chunked, uint64_t left, size_t step)
{
  sbx_http_framing f = { .next = chunked ? SBX_HTTP_NEXT_CHUNK_SIZE : SBX_HTTP_NEXT_BODY, .left = chunked ? 0 : left };
  size_t done = 0;
  while (done < n && f.next != SBX_HTTP_NEXT_HEAD)
    {
      size_t k = n - done < step ? n - done : step;
      ssize_t r = sbx_http_body (&f, p + done, k);
      if (r < 0)
        return f.next == SBX_HTTP_NEXT_FAILED ? -1 : -3;
      if ((size_t) r > k || (r < (ssize_t) k && f.next != SBX_HTTP_NEXT_HEAD))
        return -3; /* short of what it was given without having ended */
      done += (size_t) r;
    }
  return f.next == SBX_HTTP_NEXT_HEAD ? (ssize_t) done : -2;
}

static void
test_body (void)
{
  static const struct {
    const char *s;
    bool chunked;
    ssize_t want;
    const char *what;
  } cases[] = {
    { "helloGET / HTTP/1.1\r\n\r\n", false, 5, "Content-Length 5, then the next head" },
    { "5\r\nhello\r\n0\r\n\r\nGET", true, 15, "one chunk, the last chunk, the next head" },
    { "5;ext=1;q=\"a b\"\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n", true, 61,
      "extensions, an upper-case hex size" },
    { "0001\r\nx\r\n00\r\n\r\n", true, 15, "leading zeros" },
    { "5 ;e\r\nhello\r\n0\r\n\r\n", true, 18, "whitespace before an extension" },
    { "0\r\n\r\n", true, 5, "no data" },
    { "5\r\nhel", true, -2, "unfinished" },
    { "\r\n", true, -1, "no size" },
    { "g\r\n", true, -1, "a size that is not hex" },
    { "-1\r\n", true, -1, "a negative size" },
    { "5\nhello\r\n0\r\n\r\n", true, -1, "a bare LF after the size" },
    { "5\rhello", true, -1, "a bare CR after the size" },
    { "5\r\nhelloX\r\n0\r\n\r\n", true, -1, "data longer than its size" },
    { "5\r\nhello\n0\r\n\r\n", true, -1, "a bare LF after the data" },
    { "0\r\nX-Trailer: 1\r\n\r\n", true, -1, "a trailer field (refused)" },
    { "0\r\nAuthorization: Bearer " TOKEN "\r\n\r\n", true, -1, "an Authorization trailer" },
    { "1000000000000000\r\n", true, -1, "16 hex digits" },
    { "5;a\x01\r\nhello\r\n0\r\n\r\n", true, -1, "a control character in an extension" },
    { "5;a\x80\r\nhello\r\n0\r\n\r\n", true, -1, "a non-ASCII byte in an extension" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      size_t n = strlen (cases[i].s);
      bool same = true;
      ssize_t r = body_len (cases[i].s, n, cases[i].chunked, 5, n);
      for (size_t step = 1; step < n; step++)
        same = same && body_len (cases[i].s, n, cases[i].chunked, 5, step) == r;
      tap_ok (r == cases[i].want && same, "body: %s: %zd (want %zd), the same fed in pieces of any size", cases[i].what,
              r, cases[i].want);
    }
  char line[SBX_HTTP_CHUNK_LINE_MAX + 16];
  memset (line, 'e', sizeof line);
  memcpy (line, "1;", 2);
  memcpy (line + SBX_HTTP_CHUNK_LINE_MAX - 1, "\r\nx\r\n0\r\n\r\n", 11);
  tap_ok (body_len (line, SBX_HTTP_CHUNK_LINE_MAX + 9, true, 0, 1000) == SBX_HTTP_CHUNK_LINE_MAX + 9,
          "body: a chunk-size line of %d bytes", SBX_HTTP_CHUNK_LINE_MAX);
  memcpy (line + SBX_HTTP_CHUNK_LINE_MAX, "\r\nx\r\n0\r\n\r\n", 11);
  tap_ok (body_len (line, SBX_HTTP_CHUNK_LINE_MAX + 10, true, 0, 1000) == -1, "body: one byte longer is refused");
  sbx_http_framing f = { .next = SBX_HTTP_NEXT_OPAQUE };
  tap_ok (sbx_http_body (&f, "GET / HTTP/1.1\r\n", 16) == 16 && f.next == SBX_HTTP_NEXT_OPAQUE,
          "body: opaque takes everything");
  f = (sbx_http_framing){ .next = SBX_HTTP_NEXT_HEAD };
  tap_ok (sbx_http_body (&f, "GET", 3) == 0, "body: nothing when a head is next");
}

/* What the proxy does with the client's bytes of a connection (as
 * up_process in proxy.c), fed in two pieces split at SPLIT: heads checked
 * and rewritten, bodies passed on as their framing says. NULL when a check
 * fails. */
static char *
frame_stream (const char *in, size_t n, size_t split, size_t *ret_len)
{
  size_t cap = n * 2 + 4096, olen = 0, have = 0, pos = 0;
  _cleanup_free_ char *out = xmalloc (cap);
  sbx_http_framing f = { .next = SBX_HTTP_NEXT_HEAD };
  for (int piece = 0; piece < 2; piece++)
    {
      have = piece == 0 ? split : n;
      while (pos < have)
        {
          if (f.next != SBX_HTTP_NEXT_HEAD)
            {
              ssize_t k = sbx_http_body (&f, in + pos, have - pos);
              if (k < 0)
                return NULL;
              memcpy (out + olen, in + pos, (size_t) k);
              olen += (size_t) k;
              pos += (size_t) k;
              continue;
            }
          ssize_t hl = sbx_http_head_len (in + pos, have - pos);
          if (hl < 0)
            return NULL;
          if (hl == 0)
            break;
          size_t rl;
          _cleanup_free_ char *rw = NULL;
          if (!sbx_http_authorized (in + pos, (size_t) hl, TOKEN)
              || sbx_http_request_framing (in + pos, (size_t) hl, &f) < 0
              || (rw = sbx_http_rewrite_head (in + pos, (size_t) hl, "127.0.0.1", &rl)) == NULL)
            return NULL;
          memcpy (out + olen, rw, rl);
          olen += rl;
          pos += (size_t) hl;
        }
    }
  if (pos != n || f.next != SBX_HTTP_NEXT_HEAD)
    return NULL;
  out[olen] = '\0';
  *ret_len = olen;
  return steal_pointer (&out);
}

/* Pipelined requests, with bodies that look like heads, split at every
 * byte: the same heads checked, the token in none of what goes on. */
static void
test_pipeline_splits (void)
{
  static const char pipeline[] = "GET /1 HTTP/1.1\r\nHost: h\r\n" AUTH "Connection: keep-alive\r\n\r\n"
                                 "POST /2 HTTP/1.1\r\n" AUTH "Content-Length: 36\r\n\r\n"
                                 "GET /fake HTTP/1.1\r\nX-Body: yes\r\n\r\n"
                                 "PUT /3 HTTP/1.1\r\nauthorization: bearer " TOKEN
                                 "\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 "4;x=y\r\nGET \r\n1c\r\n/fake2 HTTP/1.1\r\nX-Body: 2\r\n\r\n0\r\n\r\n"
                                 "GET /4 HTTP/1.0\r\nProxy-Authorization: Basic eDp5\r\n" AUTH "\r\n";
  size_t n = sizeof pipeline - 1, wl = 0;
  _cleanup_free_ char *whole = frame_stream (pipeline, n, n, &wl);
  tap_ok (whole && !has (whole, TOKEN) && !has_nocase (whole, "authorization")
              && has (whole, "\r\n\r\nGET /fake HTTP/1.1\r\nX-Body: yes\r\n\r\nPUT /3 ")
              && has (whole, "\r\n1c\r\n/fake2 HTTP/1.1\r\nX-Body: 2\r\n\r\n0\r\n\r\nGET /4 "),
          "pipeline: four requests, every head stripped, the bodies untouched");
  size_t heads = 0;
  for (const char *q = whole; (q = strstr (q ? q : "", "X-Forwarded-Proto: http\r\n")) != NULL; q++)
    heads++;
  tap_ok (heads == 4, "pipeline: four heads rewritten, none inside a body (%zu)", heads);
  size_t bad = 0;
  for (size_t split = 0; split <= n; split++)
    {
      size_t l = 0;
      _cleanup_free_ char *o = frame_stream (pipeline, n, split, &l);
      if (o == NULL || whole == NULL || l != wl || memcmp (o, whole, l) != 0)
        bad++;
    }
  tap_ok (bad == 0, "pipeline: split at each of %zu bytes, the same result (%zu differ)", n + 1, bad);
  const char *noauth = "GET /1 HTTP/1.1\r\n" AUTH "\r\nGET /2 HTTP/1.1\r\n\r\n";
  size_t l;
  tap_ok (frame_stream (noauth, strlen (noauth), 5, &l) == NULL, "pipeline: a second head without the token fails");
}

/* ---- a backend: the sandbox's port ---- */

/* MODE_KEEPALIVE: a server that keeps its connections and logs every byte
 * it receives: one answer `ok` per request line seen, until the end. */
enum backend_mode { MODE_HELLO, MODE_ECHO, MODE_REDIRECT, MODE_KEEPALIVE };
#define OK_RESP "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok"

#define HELLO_RESP "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
#define REDIRECT_RESP \
  "HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/latest/meta-data/\r\nContent-Length: 0\r\n\r\n"

static struct {
  int lfd;
  uint16_t port;
  pthread_t th;
  atomic_int accepts;
  atomic_int mode;
  pthread_mutex_t mu;
  char *head; /* the last request head it received */
  char *log;  /* MODE_KEEPALIVE: all bytes of its last connection */
  size_t log_len;
} be = { .lfd = -1, .mu = PTHREAD_MUTEX_INITIALIZER };

static char *
backend_head (void)
{
  pthread_mutex_lock (&be.mu);
  char *h = be.head ? xstrdup (be.head) : NULL;
  pthread_mutex_unlock (&be.mu);
  return h;
}

static void
backend_echo (int fd, const char *head, const char *rest, size_t nrest)
{
  const char *cl = strcasestr (head, "\r\ncontent-length:");
  size_t want = cl ? strtoul (cl + 17, NULL, 10) : 0;
  _cleanup_free_ char *resp = xasprintf ("HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", want);
  if (write_all (fd, resp, strlen (resp)) < 0 || write_all (fd, rest, nrest) < 0)
    return;
  char buf[16384];
  for (size_t done = nrest; done < want;)
    {
      ssize_t r = read (fd, buf, sizeof buf);
      if (r <= 0 || write_all (fd, buf, (size_t) r) < 0)
        return;
      done += (size_t) r;
    }
}

static size_t
count (const char *hay, const char *needle)
{
  size_t n = 0;
  for (const char *q = hay; q && (q = strstr (q, needle)) != NULL; q++)
    n++;
  return n;
}

static void
backend_keepalive (int fd)
{
  pthread_mutex_lock (&be.mu);
  free (be.log);
  be.log = xmalloc0 (1);
  be.log_len = 0;
  pthread_mutex_unlock (&be.mu);
  size_t answered = 0;
  for (;;)
    {
      char buf[65536];
      ssize_t r = read (fd, buf, sizeof buf);
      if (r <= 0)
        return;
      pthread_mutex_lock (&be.mu);
      be.log = xrealloc (be.log, be.log_len + (size_t) r + 1);
      memcpy (be.log + be.log_len, buf, (size_t) r);
      be.log_len += (size_t) r;
      be.log[be.log_len] = '\0';
      size_t lines = count (be.log, " HTTP/1.1\r\n") + count (be.log, " HTTP/1.0\r\n");
      pthread_mutex_unlock (&be.mu);
      for (; answered < lines; answered++)
        if (write_all (fd, OK_RESP, strlen (OK_RESP)) < 0)
          return;
    }
}

static char *
backend_log (void)
{
  pthread_mutex_lock (&be.mu);
  char *l = be.log ? xstrdup (be.log) : xstrdup ("");
  pthread_mutex_unlock (&be.mu);
  return l;
}

static void
backend_serve (int fd)
{
  if (be.mode == MODE_KEEPALIVE)
    {
      backend_keepalive (fd);
      return;
    }
  char buf[32768];
  size_t n = 0;
  char *end = NULL;
  while (n < sizeof buf - 1 && end == NULL)
    {
      ssize_t r = read (fd, buf + n, sizeof buf - 1 - n);
      if (r <= 0)
        return;
      n += (size_t) r;
      buf[n] = '\0';
      end = strstr (buf, "\r\n\r\n");
    }
  if (end == NULL)
    return;
  size_t hl = (size_t) (end + 4 - buf);
  pthread_mutex_lock (&be.mu);
  free (be.head);
  be.head = xstrndup (buf, hl);
  pthread_mutex_unlock (&be.mu);
  switch ((int) be.mode)
    {
    case MODE_HELLO:
      write_all (fd, HELLO_RESP, strlen (HELLO_RESP));
      break;
    case MODE_REDIRECT:
      write_all (fd, REDIRECT_RESP, strlen (REDIRECT_RESP));
      break;
    case MODE_ECHO:
      backend_echo (fd, buf, buf + hl, n - hl);
      break;
    }
}

static void *
backend_main (void *arg)
{
  for (;;)
    {
      int fd = accept4 (be.lfd, NULL, NULL, SOCK_CLOEXEC);
      if (fd < 0 && errno == EINTR)
        continue;
      if (fd < 0)
        return NULL; /* shut down */
      be.accepts++;
      struct timeval tv = { 5, 0 };
      setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      backend_serve (fd);
      close (fd);
    }
}

static int
listen_local (uint16_t *ret_port)
{
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t sl = sizeof sa;
  if (fd < 0 || bind (fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen (fd, 16) < 0
      || getsockname (fd, (struct sockaddr *) &sa, &sl) < 0)
    abort ();
  *ret_port = ntohs (sa.sin_port);
  return fd;
}

static void
backend_start (void)
{
  be.lfd = listen_local (&be.port);
  pthread_create (&be.th, NULL, backend_main, NULL);
}

static void
backend_stop (void)
{
  shutdown (be.lfd, SHUT_RDWR);
  pthread_join (be.th, NULL);
  close (be.lfd);
  free (be.head);
  free (be.log);
  be.head = be.log = NULL;
}

/* ---- the proxy under test, in a loop thread ---- */

struct target {
  uint16_t port; /* 0: connect_fn fails */
  atomic_int calls;
};

static int
target_connect (void *data, uint16_t port, sbx_error **err)
{
  struct target *t = data;
  t->calls++;
  if (port != 8080)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "unexpected sandbox port %u", port);
  if (t->port == 0)
    return sbx_error_set (err, SBX_E_SANDBOX_NOT_RUNNING, 0, "no sandbox");
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET,
                            .sin_port = htons (t->port),
                            .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0 && errno != EINPROGRESS)
    {
      int e = errno;
      close (fd);
      return sbx_error_errno (err, e, "connect");
    }
  return fd;
}

struct env {
  sbx_proxy *p;
  struct target t;
  uint16_t port; /* the proxy's, on 127.0.0.1 */
  int stop[2];
  pthread_t th;
  bool running;
};

static void *
loop_main (void *arg)
{
  struct env *e = arg;
  static struct pollfd pf[SBX_PROXY_POLLFDS_MAX + 1];
  for (;;)
    {
      size_t n = sbx_proxy_pollfds (e->p, pf, SBX_PROXY_POLLFDS_MAX);
      pf[n] = (struct pollfd){ e->stop[0], POLLIN, 0 };
      int t = sbx_proxy_timeout_ms (e->p);
      if (poll (pf, n + 1, t < 0 || t > 100 ? 100 : t) < 0 && errno != EINTR)
        abort ();
      if (pf[n].revents)
        return NULL;
      sbx_proxy_dispatch (e->p, pf, n);
    }
}

static void
loop_start (struct env *e)
{
  if (pipe2 (e->stop, O_CLOEXEC) < 0)
    abort ();
  pthread_create (&e->th, NULL, loop_main, e);
  e->running = true;
}

/* The proxy is only looked at while its loop is stopped. */
static void
loop_stop (struct env *e)
{
  if (!e->running)
    return;
  (void) !write (e->stop[1], "x", 1);
  pthread_join (e->th, NULL);
  close (e->stop[0]);
  close (e->stop[1]);
  e->running = false;
}

static void
env_start (struct env *e, const char *token, uint16_t target_port)
{
  *e = (struct env){ .t.port = target_port };
  e->p = sbx_proxy_new (token, target_connect, &e->t);
  _cleanup_error_ sbx_error *err = NULL;
  if (sbx_proxy_listen (e->p, "127.0.0.1", 0, 8080, &e->port, &err) < 0)
    abort ();
  loop_start (e);
}

static void
env_stop (struct env *e)
{
  loop_stop (e);
  sbx_proxy_free (e->p);
}

/* From 127.0.0.FROM (0: any). */
static int
client_connect_from (uint16_t port, int from)
{
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET,
                            .sin_port = htons (port),
                            .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  struct timeval tv = { 5, 0 };
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (from > 0)
    {
      struct sockaddr_in src = { .sin_family = AF_INET,
                                 .sin_addr.s_addr = htonl (INADDR_LOOPBACK - 1 + (uint32_t) from) };
      if (bind (fd, (struct sockaddr *) &src, sizeof src) < 0)
        abort ();
    }
  if (connect (fd, (struct sockaddr *) &sa, sizeof sa) < 0)
    abort ();
  return fd;
}

static int
client_connect (uint16_t port)
{
  return client_connect_from (port, 0);
}

static char *
read_to_end (int fd)
{
  size_t cap = 4096, n = 0;
  char *buf = xmalloc (cap + 1);
  for (;;)
    {
      if (n == cap)
        buf = xrealloc (buf, (cap *= 2) + 1);
      ssize_t r = read (fd, buf + n, cap - n);
      if (r <= 0)
        break;
      n += (size_t) r;
    }
  buf[n] = '\0';
  return buf;
}

/* Sends REQ on a new connection (then ends its side if SHUT) and returns all
 * that comes back until the proxy closes. */
static char *
http (uint16_t port, const char *req, bool shut)
{
  _cleanup_close_ int fd = client_connect (port);
  if (write_all (fd, req, strlen (req)) < 0)
    return xstrdup ("");
  if (shut)
    shutdown (fd, SHUT_WR);
  return read_to_end (fd);
}

static void
test_unauthorized (void)
{
  struct env e;
  int before = be.accepts;
  env_start (&e, TOKEN, be.port);
  _cleanup_free_ char *none = http (e.port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", false);
  tap_ok (starts (none, "HTTP/1.1 401 Unauthorized\r\n") && has (none, "\r\nWWW-Authenticate: Bearer\r\n")
              && has (none, "\r\nConnection: close\r\n"),
          "no token: 401 with WWW-Authenticate: Bearer and Connection: close");
  _cleanup_free_ char *wrong = http (e.port, "GET / HTTP/1.1\r\nAuthorization: Bearer nope\r\n\r\n", false);
  tap_ok (starts (wrong, "HTTP/1.1 401 "), "a wrong token: 401");
  _cleanup_free_ char *query = http (e.port, "GET /?token=" TOKEN "&access_token=" TOKEN " HTTP/1.1\r\n\r\n", false);
  tap_ok (starts (query, "HTTP/1.1 401 "), "the token in the query string: 401");
  _cleanup_free_ char *cookie = http (e.port, "GET / HTTP/1.1\r\nCookie: token=" TOKEN "\r\n\r\n", false);
  tap_ok (starts (cookie, "HTTP/1.1 401 "), "the token in a cookie: 401");
  _cleanup_free_ char *two = http (e.port, "GET / HTTP/1.1\r\n" AUTH AUTH "\r\n", false);
  tap_ok (starts (two, "HTTP/1.1 401 "), "two Authorization headers: 401");
  _cleanup_free_ char *post = http (e.port,
                                    "POST / HTTP/1.1\r\nContent-Length: 100000\r\n\r\n"
                                    "partial body",
                                    false);
  tap_ok (starts (post, "HTTP/1.1 401 "), "no token with a body on its way: 401");
  _cleanup_free_ char *bad = http (e.port, "GET / HTTP/1.1\r\n" AUTH "no colon here\r\n\r\n", false);
  tap_ok (starts (bad, "HTTP/1.1 400 Bad Request\r\n"), "a malformed head: 400");
  _cleanup_free_ char *huge_req = xmalloc (SBX_HTTP_HEAD_MAX + 64);
  strcpy (huge_req, "GET / HTTP/1.1\r\nX: ");
  memset (huge_req + strlen (huge_req), 'a', SBX_HTTP_HEAD_MAX);
  huge_req[SBX_HTTP_HEAD_MAX + 19] = '\0';
  _cleanup_free_ char *huge = http (e.port, huge_req, false);
  tap_ok (starts (huge, "HTTP/1.1 400 "), "a head over 16 KiB: 400");
  _cleanup_free_ char *cut = http (e.port, "GET / HTTP/1.1\r\nHost: x\r\n", true);
  tap_ok (starts (cut, "HTTP/1.1 400 "), "a head cut short by the client's end: 400");
  sleep_ms (50);
  tap_ok (be.accepts == before && e.t.calls == 0, "none of them reached the backend, not even a connection");
  loop_stop (&e);
  tap_ok (sbx_proxy_last_activity_ms (e.p) == 0, "refused requests are no activity (keep-warm)");
  env_stop (&e);
}

static void
test_authorized_relay (void)
{
  struct env e;
  env_start (&e, TOKEN, be.port);
  be.mode = MODE_HELLO;
  int before = be.accepts;
  _cleanup_free_ char *resp = http (e.port,
                                    "GET /index.html HTTP/1.1\r\nHost: x\r\n" AUTH "Connection: keep-alive\r\n"
                                    "Proxy-Authorization: Basic eDp5\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n",
                                    false);
  tap_ok (resp && strcmp (resp, HELLO_RESP) == 0, "the right token: the backend's response, whole");
  _cleanup_free_ char *head = backend_head ();
  tap_ok (be.accepts == before + 1 && starts (head, "GET /index.html HTTP/1.1\r\nHost: x\r\n"),
          "the backend got the request");
  tap_ok (head && !has_nocase (head, "authorization") && !has (head, TOKEN),
          "the backend saw no Authorization header and never the token");
  tap_ok (has (head, "\r\nConnection: keep-alive\r\n") && !has (head, "Connection: close"),
          "the backend got the client's Connection: keep-alive");
  tap_ok (has (head, "\r\nX-Forwarded-For: 127.0.0.1\r\n") && has (head, "\r\nX-Forwarded-Proto: http\r\n")
              && !has (head, "6.6.6.6"),
          "X-Forwarded-For is ours, not the client's");

  _cleanup_free_ char *lower = http (e.port, "GET / HTTP/1.1\r\nauthorization: bearer " TOKEN "\r\n\r\n", false);
  tap_ok (strcmp (lower, HELLO_RESP) == 0, "the scheme is case-insensitive");

  _cleanup_free_ char *shut = http (e.port, "GET / HTTP/1.1\r\n" AUTH "\r\n", true);
  tap_ok (strcmp (shut, HELLO_RESP) == 0, "a client that ends its side after the request still gets the answer");

  be.mode = MODE_REDIRECT;
  _cleanup_free_ char *redir = http (e.port, "GET /go HTTP/1.1\r\n" AUTH "\r\n", false);
  tap_ok (strcmp (redir, REDIRECT_RESP) == 0, "a 302 from the backend reaches the client untouched, not followed");
  tap_ok (e.t.calls == 4, "the backend was connected once per request (%d)", (int) e.t.calls);

  be.mode = MODE_HELLO;
  _cleanup_free_ char *ws = http (e.port,
                                  "GET /ws HTTP/1.1\r\n" AUTH "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
                                  false);
  _cleanup_free_ char *wshead = backend_head ();
  tap_ok (ws != NULL && has (wshead, "\r\nConnection: Upgrade\r\n") && has (wshead, "\r\nUpgrade: websocket\r\n")
              && !has (wshead, "Connection: close") && !has_nocase (wshead, "authorization"),
          "an Upgrade request keeps its Connection: Upgrade, loses its Authorization");
  loop_stop (&e);
  tap_ok (sbx_proxy_last_activity_ms (e.p) > 0, "relayed bytes are activity (keep-warm)");
  env_stop (&e);
}

static void
test_public (void)
{
  struct env e;
  env_start (&e, NULL, be.port);
  be.mode = MODE_HELLO;
  _cleanup_free_ char *resp = http (e.port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", false);
  tap_ok (strcmp (resp, HELLO_RESP) == 0, "a public proxy needs no token");
  _cleanup_free_ char *withauth = http (e.port, "GET / HTTP/1.1\r\nAuthorization: Bearer whatever\r\n\r\n", false);
  _cleanup_free_ char *head = backend_head ();
  tap_ok (strcmp (withauth, HELLO_RESP) == 0 && !has_nocase (head, "authorization"),
          "a public proxy still strips Authorization");
  env_stop (&e);
}

/* Sends LEN bytes and receives the echo at the same time, as a client whose
 * both directions are flowing must. */
static void
test_large_body (void)
{
  const size_t len = 1 << 20;
  struct env e;
  env_start (&e, TOKEN, be.port);
  be.mode = MODE_ECHO;
  _cleanup_free_ char *body = xmalloc (len);
  for (size_t i = 0; i < len; i++)
    body[i] = (char) (i * 7 + i / 4096);
  _cleanup_free_ char *req = xasprintf ("PUT /echo HTTP/1.1\r\n" AUTH "Content-Length: %zu\r\n\r\n", len);
  _cleanup_close_ int fd = client_connect (e.port);
  set_nonblock (fd, true);
  size_t rlen = strlen (req), sent = 0, total = rlen + len, got = 0, cap = len + 4096;
  _cleanup_free_ char *in = xmalloc (cap);
  bool eof = false;
  uint64_t until = now_ms_monotonic () + 20000;
  while (!eof && now_ms_monotonic () < until)
    {
      struct pollfd pf = { fd, POLLIN | (sent < total ? POLLOUT : 0), 0 };
      poll (&pf, 1, 1000);
      if (sent < total && (pf.revents & POLLOUT))
        {
          const char *src = sent < rlen ? req + sent : body + (sent - rlen);
          size_t n = sent < rlen ? rlen - sent : total - sent;
          ssize_t w = write (fd, src, n > 65536 ? 65536 : n);
          if (w > 0)
            sent += (size_t) w;
        }
      if (pf.revents & (POLLIN | POLLHUP | POLLERR))
        {
          ssize_t r = read (fd, in + got, cap - got);
          if (r == 0 || (r < 0 && errno != EAGAIN) || got == cap)
            eof = true;
          else if (r > 0)
            got += (size_t) r;
        }
    }
  _cleanup_free_ char *want_head = xasprintf ("HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", len);
  size_t wl = strlen (want_head);
  tap_ok (eof && sent == total && got == wl + len && memcmp (in, want_head, wl) == 0
              && memcmp (in + wl, body, len) == 0,
          "1 MiB each way, intact (sent %zu of %zu, got %zu of %zu)", sent, total, got, wl + len);
  env_stop (&e);
}

static void
test_backend_down (void)
{
  struct env e;
  uint16_t dead;
  close (listen_local (&dead)); /* a port with nobody listening */
  env_start (&e, TOKEN, dead);
  _cleanup_free_ char *resp = http (e.port, "GET / HTTP/1.1\r\n" AUTH "\r\n", false);
  tap_ok (starts (resp, "HTTP/1.1 502 Bad Gateway\r\n"), "the backend refusing: 502");
  env_stop (&e);
  env_start (&e, TOKEN, 0);
  _cleanup_free_ char *resp2 = http (e.port, "GET / HTTP/1.1\r\n" AUTH "\r\n", false);
  tap_ok (starts (resp2, "HTTP/1.1 502 ") && e.t.calls == 1, "connect_fn failing: 502");
  env_stop (&e);
}

/* Reads until N answers `ok` of MODE_KEEPALIVE came (or the end). */
static char *
read_answers (int fd, size_t n)
{
  size_t cap = 65536, len = 0;
  char *buf = xmalloc (cap + 1);
  buf[0] = '\0';
  while (count (buf, "\r\n\r\nok") < n && len < cap)
    {
      ssize_t r = read (fd, buf + len, cap - len);
      if (r <= 0)
        break;
      len += (size_t) r;
      buf[len] = '\0';
    }
  return buf;
}

/* The sandbox's server keeps connections (MODE_KEEPALIVE, logging every
 * byte): whatever the client sends on one connection, one request after
 * another or all at once, each head is checked and stripped; the token is
 * never among the bytes the server got. */
/* sbx unexpose: the listener goes (a new connection is refused), an open
 * keep-alive connection through it is closed, the port can be exposed
 * again, and a port not exposed is NOT_FOUND. */
static void
test_unlisten (void)
{
  struct env e;
  env_start (&e, TOKEN, be.port);
  be.mode = MODE_KEEPALIVE;
  _cleanup_close_ int fd = client_connect (e.port);
  const char *r1 = "GET /u HTTP/1.1\r\nHost: x\r\n" AUTH "\r\n";
  write_all (fd, r1, strlen (r1));
  _cleanup_free_ char *a1 = read_answers (fd, 1);
  tap_ok (strcmp (a1, OK_RESP) == 0, "unlisten: a keep-alive connection answers before");
  loop_stop (&e);
  _cleanup_error_ sbx_error *err = NULL;
  int r = sbx_proxy_unlisten (e.p, 8080, &err);
  uint16_t ports[4][2];
  tap_ok (r == 0 && sbx_proxy_ports (e.p, ports, 4) == 0, "unlisten: the port is no longer listed");
  loop_start (&e);
  char c;
  ssize_t n = read (fd, &c, 1);
  tap_ok (n == 0 || (n < 0 && errno == ECONNRESET), "unlisten: the open connection is closed (%zd)", n);
  int nfd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = { .sin_family = AF_INET,
                            .sin_port = htons (e.port),
                            .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  int cr = connect (nfd, (struct sockaddr *) &sa, sizeof sa);
  int ce = errno;
  close (nfd);
  tap_ok (cr < 0 && ce == ECONNREFUSED, "unlisten: a new connection is refused");
  loop_stop (&e);
  r = sbx_proxy_unlisten (e.p, 8080, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_NOT_FOUND, "unlisten of a port not exposed: NOT_FOUND (%s)",
          err ? err->msg : "none");
  sbx_error_free (err);
  err = NULL;
  uint16_t again = 0;
  r = sbx_proxy_listen (e.p, "127.0.0.1", 0, 8080, &again, &err);
  e.port = again;
  loop_start (&e);
  _cleanup_free_ char *a2 = r == 0 ? http (e.port, r1, true) : xstrdup ("");
  tap_ok (r == 0 && strcmp (a2, OK_RESP) == 0, "unlisten: exposed again, the port answers");
  tap_ok (sbx_proxy_connections (e.p) <= 1, "unlisten: no connection left behind");
  env_stop (&e);
}

static void
test_keepalive (void)
{
  struct env e;
  env_start (&e, TOKEN, be.port);
  be.mode = MODE_KEEPALIVE;
  int before = be.accepts;

  _cleanup_close_ int fd = client_connect (e.port);
  const char *r1 = "GET /a HTTP/1.1\r\nHost: x\r\n" AUTH "Connection: keep-alive\r\n\r\n";
  const char *r2 = "GET /b HTTP/1.1\r\nHost: x\r\nauthorization: bearer " TOKEN "\r\n\r\n";
  const char *r3 = "POST /c HTTP/1.1\r\n" AUTH "Content-Length: 3\r\n\r\nabc";
  write_all (fd, r1, strlen (r1));
  _cleanup_free_ char *a1 = read_answers (fd, 1);
  write_all (fd, r2, strlen (r2));
  _cleanup_free_ char *a2 = read_answers (fd, 1);
  write_all (fd, r3, strlen (r3));
  _cleanup_free_ char *a3 = read_answers (fd, 1);
  tap_ok (strcmp (a1, OK_RESP) == 0 && strcmp (a2, OK_RESP) == 0 && strcmp (a3, OK_RESP) == 0,
          "keep-alive: three requests, one after another, three answers on one connection");
  closep (&fd);
  sleep_ms (100);
  _cleanup_free_ char *log = backend_log ();
  tap_ok (be.accepts == before + 1 && has (log, "GET /a ") && has (log, "GET /b ") && has (log, "POST /c ")
              && has (log, "\r\n\r\nabc") && count (log, "X-Forwarded-Proto: http\r\n") == 3,
          "keep-alive: the sandbox got the three, each rewritten, on one connection");
  tap_ok (!has (log, TOKEN) && !has_nocase (log, "authorization"), "keep-alive: the token is not among its bytes");

  /* All at once, a chunked body among them, then the client's end. */
  const char *pipe = "GET /p1 HTTP/1.1\r\n" AUTH "\r\n"
                     "PUT /p2 HTTP/1.1\r\n" AUTH "Transfer-Encoding: chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n"
                     "GET /p3 HTTP/1.1\r\nProxy-Authorization: x\r\n" AUTH "\r\n";
  _cleanup_free_ char *pa = http (e.port, pipe, true);
  _cleanup_free_ char *plog = backend_log ();
  tap_ok (strcmp (pa, OK_RESP OK_RESP OK_RESP) == 0, "pipelined: three answers");
  tap_ok (has (plog, "GET /p1 ") && has (plog, "\r\n\r\n3\r\nxyz\r\n0\r\n\r\nGET /p3 ") && !has (plog, TOKEN)
              && !has_nocase (plog, "authorization"),
          "pipelined: the sandbox got all three, none with the token");

  /* Two requests in two writes, split at every byte. */
  const char *two = "GET /s1 HTTP/1.1\r\n" AUTH "Content-Length: 2\r\n\r\nhiGET /s2 HTTP/1.1\r\n" AUTH "\r\n";
  size_t n = strlen (two), bad = 0, leaked = 0;
  for (size_t split = 1; split < n; split++)
    {
      _cleanup_close_ int sfd = client_connect (e.port);
      write_all (sfd, two, split);
      sleep_ms (1);
      write_all (sfd, two + split, n - split);
      shutdown (sfd, SHUT_WR);
      _cleanup_free_ char *sa = read_to_end (sfd);
      _cleanup_free_ char *slog = backend_log ();
      bad += strcmp (sa, OK_RESP OK_RESP) != 0 || !has (slog, "\r\n\r\nhiGET /s2 ");
      leaked += has (slog, TOKEN);
    }
  tap_ok (bad == 0 && leaked == 0, "pipelined, split at each of %zu bytes: %zu answered wrong, %zu leaked the token",
          n - 1, bad, leaked);

  /* A later request that fails its check: what came before is answered,
   * then ours, and the failed request never reaches the sandbox. */
  _cleanup_close_ int ufd = client_connect (e.port);
  write_all (ufd, r1, strlen (r1));
  _cleanup_free_ char *u1 = read_answers (ufd, 1);
  const char *nope = "GET /nope HTTP/1.1\r\nAuthorization: Bearer wrong\r\n\r\n";
  write_all (ufd, nope, strlen (nope));
  _cleanup_free_ char *u2 = read_to_end (ufd);
  _cleanup_free_ char *ulog = backend_log ();
  tap_ok (strcmp (u1, OK_RESP) == 0 && starts (u2, "HTTP/1.1 401 Unauthorized\r\n") && !has (ulog, "/nope"),
          "keep-alive: a later request with a wrong token is 401 and never reaches the sandbox");
  static const struct {
    const char *second;
    const char *what;
  } later[] = {
    { "POST /x HTTP/1.1\r\n" AUTH "Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n",
      "Content-Length and chunked" },
    { "POST /x HTTP/1.1\r\n" AUTH "Content-Length: 1x\r\n\r\nz", "a bad Content-Length" },
    { "POST /x HTTP/1.1\r\n" AUTH "Transfer-Encoding: chunked\r\n\r\nzz\r\nGET /y HTTP/1.1\r\n" AUTH "\r\n",
      "a bad chunk size" },
    { "GET /x HTTP/1.1\r\n" AUTH "bad line\r\n\r\n", "a malformed head" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (later); i++)
    {
      _cleanup_free_ char *req = xasprintf ("GET /first HTTP/1.1\r\n" AUTH "\r\n%s", later[i].second);
      _cleanup_free_ char *ans = http (e.port, req, false);
      _cleanup_free_ char *llog = backend_log ();
      /* A bad chunk is seen after its head went on (and the test's
       * server, which answers request lines, answered it). */
      const char *want = i == 2 ? OK_RESP OK_RESP "HTTP/1.1 400 Bad Request\r\n"
                                : OK_RESP "HTTP/1.1 400 Bad Request\r\n";
      tap_ok (starts (ans, want) && !has (llog, TOKEN) && !has (llog, "zz") && !has (llog, "GET /y")
                  && (i == 2 ? has (llog, "POST /x") : !has (llog, "/x")),
              "pipelined after a good request, %s: the first answered, then 400", later[i].what);
    }

  /* After an Upgrade the stream is the application's. */
  const char *ws = "GET /ws HTTP/1.1\r\n" AUTH "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\nframes";
  _cleanup_free_ char *wa = http (e.port, ws, true);
  _cleanup_free_ char *wlog = backend_log ();
  tap_ok (strcmp (wa, OK_RESP) == 0 && has (wlog, "\r\n\r\nframes") && !has (wlog, TOKEN),
          "an Upgrade request: stripped, then what follows passed on as it is");
  env_stop (&e);
}

/* Idle connections that never send a head: each address holds at most
 * SBX_PROXY_MAX_PENDING_ADDR of them, all of them at most
 * SBX_PROXY_MAX_PENDING, apart from the authorized ones; a new one pushes
 * out the oldest of the address that holds the most. */
static void
test_conn_cap (void)
{
  struct rlimit rl;
  getrlimit (RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 2048 && rl.rlim_max >= 2048)
    {
      rl.rlim_cur = 2048;
      setrlimit (RLIMIT_NOFILE, &rl);
    }
  if (rl.rlim_cur < 2048)
    {
      for (int i = 0; i < 9; i++)
        tap_skip ("connection caps: need 2048 fds");
      return;
    }
  struct env e;
  env_start (&e, TOKEN, be.port);
  be.mode = MODE_HELLO;

  /* A burst from one address, more than its cap, each with its head sent
   * at once: accepted together before any head is read, none of them is
   * pushed out for it. */
  enum { BURST = 3 * SBX_PROXY_MAX_PENDING_ADDR };
  int burst[BURST];
  const char *breq = "GET / HTTP/1.1\r\n" AUTH "\r\n";
  loop_stop (&e);
  for (int i = 0; i < BURST; i++)
    {
      burst[i] = client_connect (e.port);
      write_all (burst[i], breq, strlen (breq));
    }
  loop_start (&e);
  size_t served = 0;
  for (int i = 0; i < BURST; i++)
    {
      _cleanup_free_ char *r = read_to_end (burst[i]);
      served += strcmp (r, HELLO_RESP) == 0;
      close (burst[i]);
    }
  tap_ok (served == BURST, "a burst of %d connections from one address with their heads: %zu served", BURST, served);

  enum { IDLE = 300 };
  static int idle[IDLE];
  for (int i = 0; i < IDLE; i++)
    {
      idle[i] = client_connect (e.port);
      if (i % 32 == 31)
        sleep_ms (20); /* let the proxy accept: the backlog is 128 */
    }
  sleep_ms (100);
  loop_stop (&e);
  size_t conns = sbx_proxy_connections (e.p);
  int t = sbx_proxy_timeout_ms (e.p);
  tap_ok (conns == SBX_PROXY_MAX_PENDING_ADDR && t >= 0 && t <= SBX_PROXY_HEAD_TIMEOUT_MS,
          "%d idle connections from one address: %zu held, next deadline in %d ms", IDLE, conns, t);
  loop_start (&e);
  _cleanup_free_ char *ok = http (e.port, "GET / HTTP/1.1\r\n" AUTH "\r\n", false);
  tap_ok (strcmp (ok, HELLO_RESP) == 0, "an authorized request from the same address still goes through");
  size_t refused = 0;
  for (int i = 0; i < IDLE; i++)
    {
      char buf[256] = "";
      set_nonblock (idle[i], true);
      refused += read (idle[i], buf, sizeof buf - 1) > 0 && starts (buf, "HTTP/1.1 503 ");
      close (idle[i]);
    }
  tap_ok (refused == IDLE - SBX_PROXY_MAX_PENDING_ADDR + 1, "the oldest idle ones were pushed out with 503 (%zu)",
          refused);
  sleep_ms (200);

  /* Many addresses: the pool is full, a newcomer still gets in. */
  static int many[SBX_PROXY_MAX_PENDING + SBX_PROXY_MAX_PENDING_ADDR];
  int nmany = 0;
  for (int a = 2; nmany < (int) ARRAY_SIZE (many); a++)
    for (int k = 0; k < SBX_PROXY_MAX_PENDING_ADDR; k++)
      {
        many[nmany++] = client_connect_from (e.port, a);
        if (nmany % 32 == 0)
          sleep_ms (20);
      }
  sleep_ms (100);
  loop_stop (&e);
  conns = sbx_proxy_connections (e.p);
  tap_ok (conns == SBX_PROXY_MAX_PENDING, "%d idle connections from %d addresses: %zu held", nmany,
          nmany / SBX_PROXY_MAX_PENDING_ADDR, conns);
  loop_start (&e);
  _cleanup_close_ int nfd = client_connect_from (e.port, 200);
  const char *req = "GET / HTTP/1.1\r\n" AUTH "\r\n";
  write_all (nfd, req, strlen (req));
  _cleanup_free_ char *nok = read_to_end (nfd);
  tap_ok (strcmp (nok, HELLO_RESP) == 0, "with the pool full, a new address is still served");
  closep (&nfd);
  for (int i = 0; i < nmany; i++)
    close (many[i]);
  sleep_ms (200);
  loop_stop (&e);
  tap_ok (sbx_proxy_connections (e.p) == 0 && sbx_proxy_timeout_ms (e.p) == -1,
          "all closed: no connection left, no deadline");
  env_stop (&e);

  /* Authorized connections have their own cap: a sandbox port that
   * never answers (a listener that never accepts) holds them. */
  uint16_t mute_port;
  int mute = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in ma = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t ml = sizeof ma;
  if (mute < 0 || bind (mute, (struct sockaddr *) &ma, sizeof ma) < 0 || listen (mute, 1024) < 0
      || getsockname (mute, (struct sockaddr *) &ma, &ml) < 0)
    abort ();
  mute_port = ntohs (ma.sin_port);
  env_start (&e, TOKEN, mute_port);
  static int held[SBX_PROXY_MAX_CONNS];
  const char *hreq = "GET / HTTP/1.1\r\n" AUTH "\r\n";
  for (int i = 0; i < SBX_PROXY_MAX_CONNS; i++)
    {
      held[i] = client_connect (e.port);
      write_all (held[i], hreq, strlen (hreq));
      if (i % 32 == 31)
        sleep_ms (20);
    }
  sleep_ms (200);
  _cleanup_free_ char *full = http (e.port, hreq, false);
  sleep_ms (100); /* its close seen */
  loop_stop (&e);
  size_t relaying = sbx_proxy_connections (e.p);
  tap_ok (relaying == SBX_PROXY_MAX_CONNS && starts (full, "HTTP/1.1 503 Service Unavailable\r\n"),
          "%zu authorized connections relayed, the next: 503", relaying);
  loop_start (&e);
  for (int i = 0; i < SBX_PROXY_MAX_CONNS; i++)
    close (held[i]);
  env_stop (&e);
  close (mute);

  /* The head deadline. */
  env_start (&e, TOKEN, be.port);
  loop_stop (&e);
  sbx_proxy_set_head_timeout (e.p, 300);
  loop_start (&e);
  _cleanup_close_ int silent = client_connect (e.port);
  _cleanup_close_ int slow = client_connect (e.port);
  write_all (slow, "GET / HTTP/1.1\r\n", 16);
  uint64_t t0 = now_ms_monotonic ();
  _cleanup_free_ char *s1 = read_to_end (silent);
  _cleanup_free_ char *s2 = read_to_end (slow);
  uint64_t took = now_ms_monotonic () - t0;
  tap_ok (strcmp (s1, "") == 0 && starts (s2, "HTTP/1.1 408 ") && took >= 250 && took < 3000,
          "no complete head within the deadline (300 ms): closed, 408 if it had begun (%llu ms)",
          (unsigned long long) took);
  env_stop (&e);
}

static void
test_listen (void)
{
  struct target t = { 0 };
  _cleanup_proxy_ sbx_proxy *p = sbx_proxy_new (TOKEN, target_connect, &t);
  _cleanup_error_ sbx_error *err = NULL;
  uint16_t a = 0, b = 0, c = 0, ports[4][2];
  int r1 = sbx_proxy_listen (p, "127.0.0.1", 0, 8080, &a, &err);
  int r2 = sbx_proxy_listen (p, "127.0.0.1", 0, 8080, &b, &err);
  tap_ok (r1 == 0 && r2 == 0 && a != 0 && a == b, "exposing a port twice gives the same listener (%u)", a);
  int r3 = sbx_proxy_listen (p, "127.0.0.1", 0, 3000, &c, &err);
  size_t n = sbx_proxy_ports (p, ports, 4);
  tap_ok (r3 == 0 && n == 2 && ports[0][0] == 8080 && ports[0][1] == a && ports[1][0] == 3000 && ports[1][1] == c,
          "ports lists sandbox and host port pairs");
  tap_ok (sbx_proxy_ports (p, ports, 1) == 1, "ports writes at most MAX");
  struct pollfd pf[4];
  tap_ok (sbx_proxy_pollfds (p, pf, 4) == 2 && sbx_proxy_timeout_ms (p) == -1 && sbx_proxy_connections (p) == 0,
          "two listeners polled, no deadline");
  uint16_t d;
  int r4 = sbx_proxy_listen (p, "localhost", 0, 9000, &d, &err);
  tap_ok (r4 < 0 && err && err->code == SBX_E_INVALID_ARGUMENT, "a name, not a literal: INVALID_ARGUMENT");
  sbx_error_freep (&err);
  int r5 = sbx_proxy_listen (p, "127.0.0.1", a, 9001, &d, &err);
  tap_ok (r5 < 0 && err && err->code == SBX_E_BUSY, "a host port in use: BUSY");
  sbx_error_freep (&err);
  int r6 = sbx_proxy_listen (p, "::1", 0, 9002, &d, &err);
  if (r6 < 0 && err && err->errnum == EADDRNOTAVAIL)
    tap_skip ("listening on ::1: no IPv6 loopback");
  else
    tap_ok (r6 == 0 && d != 0, "listening on ::1");
}

/* ---- the token file ---- */

struct token_race {
  const char *path;
  char *token;
};

static void *
token_racer (void *arg)
{
  struct token_race *tr = arg;
  sbx_error *err = NULL;
  if (sbx_token_load (tr->path, &tr->token, &err) < 0)
    sbx_error_free (err);
  return NULL;
}

static void
test_token (void)
{
  if (geteuid () != 0)
    {
      for (int i = 0; i < 6; i++)
        tap_skip ("token file: must be owned by root, tests need root");
      return;
    }
  char dir[] = "/tmp/sbx-test-proxy.XXXXXX";
  if (mkdtemp (dir) == NULL)
    abort ();
  _cleanup_free_ char *path = xasprintf ("%s/token", dir);
  _cleanup_free_ char *t1 = NULL, *t2 = NULL, *t3 = NULL, *t4 = NULL;
  _cleanup_error_ sbx_error *err = NULL;
  struct stat st;
  int r = sbx_token_load (path, &t1, &err);
  tap_ok (r == 0 && stat (path, &st) == 0 && S_ISREG (st.st_mode) && (st.st_mode & 07777) == 0600 && t1
              && strlen (t1) == 64 && strspn (t1, "0123456789abcdef") == 64,
          "created: 0600, 32 random bytes in hex");
  r = sbx_token_load (path, &t2, &err);
  tap_ok (r == 0 && t1 && t2 && strcmp (t1, t2) == 0, "the same token the second time");

  _cleanup_free_ char *race = xasprintf ("%s/race", dir);
  struct token_race tr[8];
  pthread_t th[8];
  for (int i = 0; i < 8; i++)
    {
      tr[i] = (struct token_race){ race, NULL };
      pthread_create (&th[i], NULL, token_racer, &tr[i]);
    }
  bool same = true;
  for (int i = 0; i < 8; i++)
    {
      pthread_join (th[i], NULL);
      same = same && tr[i].token && strcmp (tr[i].token, tr[0].token ? tr[0].token : "") == 0;
    }
  for (int i = 0; i < 8; i++)
    free (tr[i].token);
  tap_ok (same, "concurrent first callers agree on one token");

  chmod (path, 0644);
  r = sbx_token_load (path, &t3, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_POLICY_REFUSED && t3 == NULL, "a 0644 token file is refused");
  sbx_error_freep (&err);
  chmod (path, 0600);

  _cleanup_free_ char *link = xasprintf ("%s/link", dir);
  if (symlink (path, link) < 0)
    abort ();
  r = sbx_token_load (link, &t4, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_POLICY_REFUSED, "a symbolic link is refused");
  sbx_error_freep (&err);

  _cleanup_free_ char *junk = xasprintf ("%s/junk", dir);
  if (write_file_atomic (junk, "two words\n", 10, 0600, NULL) < 0)
    abort ();
  char *t5 = NULL;
  r = sbx_token_load (junk, &t5, &err);
  tap_ok (r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && t5 == NULL, "content that is not a token is refused");
  rm_rf (dir, NULL);
}

int
main (void)
{
  signal (SIGPIPE, SIG_IGN);
  test_head_len ();
  test_head_limits ();
  test_authorized ();
  test_rewrite ();
  test_framing ();
  test_body ();
  test_pipeline_splits ();
  test_listen ();
  backend_start ();
  test_unauthorized ();
  test_authorized_relay ();
  test_public ();
  test_large_body ();
  test_backend_down ();
  test_keepalive ();
  test_unlisten ();
  test_conn_cap ();
  backend_stop ();
  test_token ();
  tap_plan (tap_n);
  return tap_done ();
}
