/* The strict HTTP/1.x request parser the exposed-port proxy frames a
 * client's bytes with (see http.h): request heads, the authorization check,
 * the head rewrite, and the body framing (Content-Length, chunked). Pure
 * functions over buffers, fuzzed by fuzz-http. */
#include "config.h"
#include "http.h"
#include "util.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* --- request heads ----------------------------------------------------- */

/* RFC 9110 tchar. */
static bool
is_tchar (unsigned char ch)
{
  if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
    return true;
  return ch != '\0' && strchr ("!#$%&'*+-.^_`|~", ch) != NULL;
}

static size_t
span_tchar (const char *s, size_t n)
{
  size_t i = 0;
  while (i < n && is_tchar ((unsigned char) s[i]))
    i++;
  return i;
}

/* METHOD SP TARGET SP HTTP/1.D, without the CRLF. */
static bool
request_line_ok (const char *s, size_t n)
{
  size_t i = span_tchar (s, n);
  if (i == 0 || i >= n || s[i] != ' ')
    return false;
  size_t t = ++i;
  while (i < n && (unsigned char) s[i] > 0x20 && (unsigned char) s[i] < 0x7f)
    i++;
  if (i == t || i >= n || s[i] != ' ')
    return false;
  i++;
  return n - i == 8 && memcmp (s + i, "HTTP/1.", 7) == 0 && s[i + 7] >= '0' && s[i + 7] <= '9';
}

/* NAME ":" VALUE without the CRLF: a token right before the colon (no space,
 * so no obs-fold either), a value of visible characters, spaces and tabs. */
static bool
header_line_ok (const char *s, size_t n)
{
  size_t i = span_tchar (s, n);
  if (i == 0 || i >= n || s[i] != ':')
    return false;
  for (i++; i < n; i++)
    {
      unsigned char ch = (unsigned char) s[i];
      if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
        return false;
    }
  return true;
}

/* An incomplete last line already known bad: a NUL or a CR not before LF. */
static bool
partial_bad (const char *s, size_t n)
{
  if (memchr (s, '\0', n) != NULL)
    return true;
  for (const char *cr = s; (cr = memchr (cr, '\r', n - (size_t) (cr - s))) != NULL; cr++)
    if ((size_t) (cr - s) + 1 < n)
      return true;
  return false;
}

ssize_t
sbx_http_head_len (const char *p, size_t n)
{
  size_t lim = n < SBX_HTTP_HEAD_MAX ? n : SBX_HTTP_HEAD_MAX;
  size_t pos = 0, nheaders = 0;
  for (;;)
    {
      const char *lf = memchr (p + pos, '\n', lim - pos);
      if (lf == NULL)
        return n >= SBX_HTTP_HEAD_MAX || partial_bad (p + pos, lim - pos) ? -1 : 0;
      size_t eol = (size_t) (lf - p);
      if (eol == pos || p[eol - 1] != '\r')
        return -1; /* bare LF */
      size_t ll = eol - 1 - pos;
      if (ll == 0)
        return pos == 0 ? -1 : (ssize_t) (eol + 1);
      if (pos == 0 ? !request_line_ok (p, ll) : (++nheaders > SBX_HTTP_HEADERS_MAX || !header_line_ok (p + pos, ll)))
        return -1;
      pos = eol + 1;
    }
}

/* One header line of a head that sbx_http_head_len accepted. */
struct hdr {
  const char *line; /* with its CRLF */
  size_t line_len;
  const char *name;
  size_t name_len;
  const char *value; /* without surrounding spaces and tabs */
  size_t value_len;
};

/* *POS: 0 to start. False at the empty line that ends the head. */
static bool
next_header (const char *head, size_t len, size_t *pos, struct hdr *h)
{
  if (*pos == 0)
    *pos = (size_t) ((const char *) memchr (head, '\n', len) - head) + 1;
  if (head[*pos] == '\r')
    return false;
  const char *line = head + *pos;
  const char *lf = memchr (line, '\n', len - *pos);
  const char *colon = memchr (line, ':', (size_t) (lf - line));
  const char *v = colon + 1, *end = lf - 1; /* at the CR */
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  *h = (struct hdr){ line, (size_t) (lf + 1 - line), line, (size_t) (colon - line), v, (size_t) (end - v) };
  *pos += h->line_len;
  return true;
}

static bool
hdr_is (const struct hdr *h, const char *name)
{
  return h->name_len == strlen (name) && strncasecmp (h->name, name, h->name_len) == 0;
}

/* Whether the comma-separated list V (a Connection value) has TOKEN. */
static bool
list_has (const char *v, size_t n, const char *token)
{
  size_t tl = strlen (token);
  for (size_t i = 0; i < n;)
    {
      while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
        i++;
      size_t s = i;
      while (i < n && v[i] != ',')
        i++;
      size_t e = i;
      while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
        e--;
      if (e - s == tl && strncasecmp (v + s, token, tl) == 0)
        return true;
    }
  return false;
}

/* Constant time over TOKEN's length: neither where the first difference is
 * nor, beyond "too short/long", anything about the token leaks by timing. */
static bool
token_equal (const char *cred, size_t cl, const char *token)
{
  size_t tl = strlen (token);
  unsigned diff = (cl != tl) | (tl == 0);
  for (size_t i = 0; i < tl; i++)
    diff |= (unsigned char) token[i] ^ (unsigned char) (i < cl ? cred[i] : 0);
  return diff == 0;
}

int
sbx_http_authorized (const char *head, size_t len, const char *token)
{
  if (token == NULL)
    return 1;
  ssize_t hl = sbx_http_head_len (head, len);
  if (hl <= 0)
    return 0;
  struct hdr h, auth = { 0 };
  size_t pos = 0, count = 0;
  while (next_header (head, (size_t) hl, &pos, &h))
    if (hdr_is (&h, "Authorization"))
      {
        auth = h;
        count++;
      }
  if (count != 1 || auth.value_len < 7 || strncasecmp (auth.value, "Bearer ", 7) != 0)
    return 0;
  size_t i = 7;
  while (i < auth.value_len && auth.value[i] == ' ')
    i++;
  return token_equal (auth.value + i, auth.value_len - i, token) ? 1 : 0;
}

/* An Upgrade header and `upgrade` in a Connection header (RFC 9110 7.8). */
static bool
is_upgrade (const char *head, size_t len)
{
  struct hdr h;
  size_t pos = 0;
  bool upgrade = false, conn_upgrade = false;
  while (next_header (head, len, &pos, &h))
    {
      if (hdr_is (&h, "Upgrade") && h.value_len > 0)
        upgrade = true;
      else if (hdr_is (&h, "Connection") && list_has (h.value, h.value_len, "upgrade"))
        conn_upgrade = true;
    }
  return upgrade && conn_upgrade;
}

static bool
printable (const char *s)
{
  size_t n = strlen (s);
  if (n == 0 || n > 64)
    return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char) s[i] <= 0x20 || (unsigned char) s[i] >= 0x7f)
      return false;
  return true;
}

static void
append (char *out, size_t *olen, const char *s, size_t n)
{
  memcpy (out + *olen, s, n);
  *olen += n;
}

char *
sbx_http_rewrite_head (const char *head, size_t len, const char *client_addr, size_t *ret_len)
{
  ssize_t hl = sbx_http_head_len (head, len);
  if (hl <= 0 || hl != (ssize_t) len || (client_addr && !printable (client_addr)))
    return NULL;
  size_t cap = len + 128 + (client_addr ? strlen (client_addr) : 0), olen = 0;
  _cleanup_free_ char *out = xmalloc (cap);
  size_t rl = (size_t) ((const char *) memchr (head, '\n', len) - head) + 1;
  append (out, &olen, head, rl);
  struct hdr h;
  size_t pos = 0;
  while (next_header (head, len, &pos, &h))
    {
      if (hdr_is (&h, "Authorization") || hdr_is (&h, "Proxy-Authorization") || hdr_is (&h, "X-Forwarded-For")
          || hdr_is (&h, "X-Forwarded-Proto"))
        continue;
      append (out, &olen, h.line, h.line_len);
    }
  if (client_addr)
    olen += (size_t) snprintf (out + olen, cap - olen, "X-Forwarded-For: %s\r\n", client_addr);
  append (out, &olen, "X-Forwarded-Proto: http\r\n\r\n", 27);
  /* What the sandbox gets holds to the limits we hold clients to. */
  if (sbx_http_head_len (out, olen) != (ssize_t) olen)
    return NULL;
  out[olen] = '\0';
  *ret_len = olen;
  return steal_pointer (&out);
}

/* --- request bodies ---------------------------------------------------- */

/* 1 to 18 decimal digits: below 10^18, far from overflow. */
static bool
parse_length (const char *v, size_t n, uint64_t *ret)
{
  if (n == 0 || n > 18)
    return false;
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++)
    {
      if (v[i] < '0' || v[i] > '9')
        return false;
      x = x * 10 + (uint64_t) (v[i] - '0');
    }
  *ret = x;
  return true;
}

int
sbx_http_request_framing (const char *head, size_t len, sbx_http_framing *f)
{
  ssize_t hl = sbx_http_head_len (head, len);
  if (hl <= 0)
    return -1;
  len = (size_t) hl;
  struct hdr h, cl = { 0 }, te = { 0 };
  size_t pos = 0, ncl = 0, nte = 0;
  while (next_header (head, len, &pos, &h))
    if (hdr_is (&h, "Content-Length"))
      cl = h, ncl++;
    else if (hdr_is (&h, "Transfer-Encoding"))
      te = h, nte++;
  size_t rl = (size_t) ((const char *) memchr (head, '\n', len) - head) - 1;
  bool http10 = head[rl - 1] == '0'; /* HTTP/1.0 */
  uint64_t length = 0;
  if (ncl > 1 || nte > 1 || (ncl && nte) || (ncl && !parse_length (cl.value, cl.value_len, &length)))
    return -1;
  if (nte && (http10 || te.value_len != 7 || strncasecmp (te.value, "chunked", 7) != 0))
    return -1;
  sbx_http_framing r = { .next = SBX_HTTP_NEXT_HEAD };
  if (strncmp (head, "CONNECT ", 8) == 0 || is_upgrade (head, len))
    r.next = SBX_HTTP_NEXT_OPAQUE;
  else if (nte)
    r.next = SBX_HTTP_NEXT_CHUNK_SIZE;
  else if (length > 0)
    r = (sbx_http_framing){ .next = SBX_HTTP_NEXT_BODY, .left = length };
  *f = r;
  return 0;
}

static int
hex_value (char ch)
{
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

/* One byte of chunk framing (not data): false if it is wrong there. */
static bool
chunk_byte (sbx_http_framing *f, char ch)
{
  switch (f->next)
    {
    case SBX_HTTP_NEXT_CHUNK_SIZE:
      if (hex_value (ch) >= 0)
        {
          if (++f->line > 15)
            return false; /* keeps LEFT far from overflow */
          f->left = f->left * 16 + (uint64_t) hex_value (ch);
          return true;
        }
      if (f->line == 0)
        return false;
      if (ch == '\r')
        f->next = SBX_HTTP_NEXT_CHUNK_LF;
      else if (ch == ';' || ch == ' ' || ch == '\t')
        f->next = SBX_HTTP_NEXT_CHUNK_EXT;
      else
        return false;
      return ++f->line <= SBX_HTTP_CHUNK_LINE_MAX;
    case SBX_HTTP_NEXT_CHUNK_EXT:
      if (ch == '\r')
        f->next = SBX_HTTP_NEXT_CHUNK_LF;
      else if (((unsigned char) ch < 0x20 && ch != '\t') || (unsigned char) ch >= 0x7f)
        return false;
      return ++f->line <= SBX_HTTP_CHUNK_LINE_MAX;
    case SBX_HTTP_NEXT_CHUNK_LF:
      if (ch != '\n')
        return false;
      f->line = 0;
      f->next = f->left > 0 ? SBX_HTTP_NEXT_CHUNK_DATA : SBX_HTTP_NEXT_TRAILER_CR;
      return true;
    case SBX_HTTP_NEXT_DATA_CR:
    case SBX_HTTP_NEXT_TRAILER_CR:
      if (ch != '\r')
        return false; /* after the last chunk: a trailer field, refused */
      f->next = f->next == SBX_HTTP_NEXT_DATA_CR ? SBX_HTTP_NEXT_DATA_LF : SBX_HTTP_NEXT_TRAILER_LF;
      return true;
    case SBX_HTTP_NEXT_DATA_LF:
    case SBX_HTTP_NEXT_TRAILER_LF:
      if (ch != '\n')
        return false;
      f->next = f->next == SBX_HTTP_NEXT_DATA_LF ? SBX_HTTP_NEXT_CHUNK_SIZE : SBX_HTTP_NEXT_HEAD;
      f->left = 0;
      return true;
    default:
      return false;
    }
}

ssize_t
sbx_http_body (sbx_http_framing *f, const char *p, size_t n)
{
  size_t i = 0;
  while (i < n)
    {
      size_t k;
      switch (f->next)
        {
        case SBX_HTTP_NEXT_HEAD:
          return (ssize_t) i;
        case SBX_HTTP_NEXT_FAILED:
          return -1;
        case SBX_HTTP_NEXT_OPAQUE:
          return (ssize_t) n;
        case SBX_HTTP_NEXT_BODY:
        case SBX_HTTP_NEXT_CHUNK_DATA:
          k = n - i < f->left ? n - i : (size_t) f->left;
          i += k;
          f->left -= k;
          if (f->left == 0)
            f->next = f->next == SBX_HTTP_NEXT_BODY ? SBX_HTTP_NEXT_HEAD : SBX_HTTP_NEXT_DATA_CR;
          break;
        default:
          if (!chunk_byte (f, p[i]))
            {
              f->next = SBX_HTTP_NEXT_FAILED;
              return -1;
            }
          i++;
          break;
        }
    }
  return (ssize_t) i;
}
