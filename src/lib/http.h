/* HTTP/1.x request parsing for the exposed-port proxy (proxy.h): strict,
 * because both the clients and the sandbox are untrusted and the proxy
 * must frame every request exactly as the sandbox's server will. Pure
 * functions over buffers; the proxy, test-proxy and fuzz-http use them. */
#ifndef SBX_HTTP_H
#define SBX_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SBX_HTTP_HEAD_MAX 16384 /* bytes, request line to CRLFCRLF */
#define SBX_HTTP_HEADERS_MAX 100

/* Parses one HTTP/1.x request head (up to and including CRLFCRLF) in
 * P[0..N); returns its length, 0 if incomplete, -1 if malformed (bad request
 * line, header line without ':', bare CR or LF, NUL or another control
 * character, obs-fold, space before ':', more than SBX_HTTP_HEADERS_MAX
 * headers, head over SBX_HTTP_HEAD_MAX). */
ssize_t sbx_http_head_len (const char *p, size_t n);
/* 1 when the head carries exactly one Authorization header `Bearer TOKEN`
 * (scheme case-insensitive) equal to TOKEN, compared in constant time over
 * the token's length; 0 otherwise. A NULL TOKEN (public) is 1. */
int sbx_http_authorized (const char *head, size_t len, const char *token);
/* The head as it goes to the sandbox (malloc'd): every Authorization and
 * Proxy-Authorization header removed (the host token never reaches the
 * sandbox), the client's X-Forwarded-For/Proto dropped and ours appended
 * (CLIENT_ADDR; none when NULL); Connection and everything else as the
 * client sent them. NUL-terminated too. NULL when HEAD[0..LEN) is not
 * exactly one valid head, CLIENT_ADDR is not printable, or the result would
 * exceed the limits of sbx_http_head_len. */
char *sbx_http_rewrite_head (const char *head, size_t len, const char *client_addr, size_t *ret_len);

/* What follows a request head on the client's side of a connection, and
 * where the parser is inside it. Zeroed: a head is next. */
typedef enum sbx_http_next {
  SBX_HTTP_NEXT_HEAD = 0,
  SBX_HTTP_NEXT_BODY,       /* Content-Length: LEFT bytes */
  SBX_HTTP_NEXT_CHUNK_SIZE, /* chunked: in a chunk-size line */
  SBX_HTTP_NEXT_CHUNK_EXT,  /*   after the size, up to its CR */
  SBX_HTTP_NEXT_CHUNK_LF,   /*   the LF of the size line */
  SBX_HTTP_NEXT_CHUNK_DATA, /*   LEFT bytes of chunk data */
  SBX_HTTP_NEXT_DATA_CR,    /*   the CRLF after the data */
  SBX_HTTP_NEXT_DATA_LF,
  SBX_HTTP_NEXT_TRAILER_CR, /*   the empty line after the last chunk */
  SBX_HTTP_NEXT_TRAILER_LF,
  SBX_HTTP_NEXT_OPAQUE, /* after Upgrade or CONNECT: raw bytes, no more heads */
  SBX_HTTP_NEXT_FAILED,
} sbx_http_next;

#define SBX_HTTP_CHUNK_LINE_MAX 4096 /* a chunk-size line with its extensions */

typedef struct sbx_http_framing {
  sbx_http_next next;
  uint64_t left;
  size_t line; /* bytes of the chunk-size line so far */
} sbx_http_framing;

/* The framing of the body that follows the valid head HEAD[0..LEN) into *F:
 * Content-Length (1 to 18 digits, given once), Transfer-Encoding exactly
 * `chunked` (given once, HTTP/1.1), none (no body), or opaque after an
 * Upgrade request or CONNECT. 0, or -1 (*F untouched) for what a request
 * cannot say unambiguously: both, either twice, a list, a bad length,
 * another transfer coding. */
int sbx_http_request_framing (const char *head, size_t len, sbx_http_framing *f);
/* How many of P[0..N) belong to the current body (its chunk framing
 * included), passed on as they are; when the body ends there, F->next is
 * SBX_HTTP_NEXT_HEAD and the bytes after it are the next head's. N when
 * opaque; 0 when a head is next. -1 (and FAILED) for bad chunk framing: a
 * size that is not hex or over 15 digits, a line over
 * SBX_HTTP_CHUNK_LINE_MAX or with a control character, a bare CR or LF,
 * data not followed by CRLF, or trailer fields (refused). */
ssize_t sbx_http_body (sbx_http_framing *f, const char *p, size_t n);

#endif
