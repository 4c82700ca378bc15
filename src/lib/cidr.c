/* The strict CIDR parser (see cidr.h): decimal IPv4 octets without
 * leading zeros, IPv6 through inet_pton after a character check, a prefix
 * within the family and no host bits set; each refusal says why. */
#include "config.h"
#include "cidr.h"
#include "util.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

unsigned
sbx_cidr_width (const sbx_cidr *c)
{
  return c->family == AF_INET6 ? 128 : 32;
}

static bool
cidr_bit (const sbx_cidr *c, unsigned bit)
{
  return c->addr[bit / 8] & (0x80 >> (bit % 8));
}

static bool
host_bits_clear (const sbx_cidr *c)
{
  for (unsigned bit = c->prefix; bit < sbx_cidr_width (c); bit++)
    if (cidr_bit (c, bit))
      return false;
  return true;
}

void
sbx_cidr_clear_host_bits (sbx_cidr *c)
{
  for (unsigned bit = c->prefix; bit < sbx_cidr_width (c); bit++)
    c->addr[bit / 8] &= (uint8_t) ~(0x80 >> (bit % 8));
}

/* The input as it goes into a message: quoted, at most 60 characters, the
 * bytes that are not printable ASCII as \xNN. */
static char *
quote_input (const char *s)
{
  size_t n = strlen (s);
  bool cut = n > 60;
  if (cut)
    n = 60;
  char *out = xmalloc (n * 4 + 8), *p = out;
  *p++ = '`';
  for (size_t i = 0; i < n; i++)
    {
      unsigned char c = (unsigned char) s[i];
      if (c >= 0x20 && c < 0x7f)
        *p++ = (char) c;
      else
        p += sprintf (p, "\\x%02x", c);
    }
  if (cut)
    p = stpcpy (p, "...");
  *p++ = '`';
  *p = '\0';
  return out;
}

static int
cidr_fail (sbx_error **err, const char *s, const char *why)
{
  _cleanup_free_ char *q = quote_input (s);
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid CIDR %s: %s", q, why);
}

enum { DEC_OK, DEC_EMPTY, DEC_NOT_DIGIT, DEC_LEADING_ZERO, DEC_TOO_BIG };
static const char *const dec_why[] = {
  [DEC_EMPTY] = "is empty",
  [DEC_NOT_DIGIT] = "is not a decimal number",
  [DEC_LEADING_ZERO] = "has a leading zero (octal-looking numbers are refused)",
};

/* S[0..N) as a decimal number: digits only, no sign, no leading zero. */
static int
parse_dec (const char *s, size_t n, unsigned max, unsigned *ret)
{
  if (n == 0)
    return DEC_EMPTY;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return DEC_NOT_DIGIT;
  if (n > 1 && s[0] == '0')
    return DEC_LEADING_ZERO;
  if (n > 3)
    return DEC_TOO_BIG;
  unsigned v = 0;
  for (size_t i = 0; i < n; i++)
    v = v * 10 + (unsigned) (s[i] - '0');
  if (v > max)
    return DEC_TOO_BIG;
  *ret = v;
  return DEC_OK;
}

/* Exactly four decimal octets. On error, WHY says what is wrong. */
static bool
parse_v4 (const char *s, size_t n, uint8_t out[4], char *why, size_t wl)
{
  size_t i = 0;
  for (int k = 0; k < 4; k++)
    {
      size_t start = i;
      while (i < n && s[i] != '.')
        i++;
      unsigned v = 0;
      int r = parse_dec (s + start, i - start, 255, &v);
      if (r != DEC_OK)
        {
          snprintf (why, wl, "octet %d %s", k + 1, r == DEC_TOO_BIG ? "is over 255" : dec_why[r]);
          return false;
        }
      out[k] = (uint8_t) v;
      if (k < 3 && i == n)
        {
          snprintf (why, wl, "an IPv4 address has four octets");
          return false;
        }
      if (k < 3)
        i++;
    }
  if (i != n)
    {
      snprintf (why, wl, "an IPv4 address has four octets");
      return false;
    }
  return true;
}

static bool
parse_v6 (const char *s, size_t n, uint8_t out[16], char *why, size_t wl)
{
  char buf[INET6_ADDRSTRLEN];
  if (n >= sizeof buf)
    {
      snprintf (why, wl, "too long for an IPv6 address");
      return false;
    }
  for (size_t i = 0; i < n; i++)
    {
      char c = s[i];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.'))
        {
          snprintf (why, wl, "not an IPv6 address (character %zu)", i + 1);
          return false;
        }
    }
  memcpy (buf, s, n);
  buf[n] = '\0';
  /* An embedded IPv4 tail (::ffff:a.b.c.d) gets the IPv4 rules too. */
  char *colon = strrchr (buf, ':');
  if (colon && strchr (colon, '.'))
    {
      uint8_t v4[4];
      char sub[96];
      if (!parse_v4 (colon + 1, strlen (colon + 1), v4, sub, sizeof sub))
        {
          snprintf (why, wl, "embedded IPv4 address: %s", sub);
          return false;
        }
    }
  if (inet_pton (AF_INET6, buf, out) != 1)
    {
      snprintf (why, wl, "not an IPv6 address");
      return false;
    }
  return true;
}

int
sbx_cidr_parse (const char *s, sbx_cidr *ret, sbx_error **err)
{
  char why[160];
  if (s == NULL || *s == '\0')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid CIDR: empty");
  size_t len = strlen (s);
  if (len > 128)
    return cidr_fail (err, s, "too long");
  if (strpbrk (s, " \t\n\r\v\f"))
    return cidr_fail (err, s, "stray whitespace");

  const char *slash = strchr (s, '/');
  size_t alen = slash ? (size_t) (slash - s) : len;
  if (alen == 0)
    return cidr_fail (err, s, "the address is empty");
  sbx_cidr c = { 0 };
  c.family = memchr (s, ':', alen) ? AF_INET6 : AF_INET;
  bool ok = c.family == AF_INET6 ? parse_v6 (s, alen, c.addr, why, sizeof why)
                                 : parse_v4 (s, alen, c.addr, why, sizeof why);
  if (!ok)
    return cidr_fail (err, s, why);

  unsigned width = sbx_cidr_width (&c);
  c.prefix = width;
  if (slash)
    {
      int r = parse_dec (slash + 1, len - alen - 1, width, &c.prefix);
      if (r == DEC_TOO_BIG)
        snprintf (why, sizeof why, "the prefix is over %u", width);
      else if (r != DEC_OK)
        snprintf (why, sizeof why, "the prefix %s", dec_why[r]);
      if (r != DEC_OK)
        return cidr_fail (err, s, why);
    }
  if (!host_bits_clear (&c))
    {
      sbx_cidr net = c;
      char buf[SBX_CIDR_STRLEN];
      sbx_cidr_clear_host_bits (&net);
      sbx_cidr_format (&net, buf);
      snprintf (why, sizeof why, "host bits set beyond /%u (the network is %s)", c.prefix, buf);
      return cidr_fail (err, s, why);
    }
  *ret = c;
  return 0;
}

void
sbx_cidr_format (const sbx_cidr *c, char buf[SBX_CIDR_STRLEN])
{
  char a[INET6_ADDRSTRLEN];
  if ((c->family != AF_INET && c->family != AF_INET6) || !inet_ntop (c->family, c->addr, a, sizeof a))
    {
      snprintf (buf, SBX_CIDR_STRLEN, "none");
      return;
    }
  snprintf (buf, SBX_CIDR_STRLEN, "%s/%u", a, c->prefix);
}

bool
sbx_cidr_equal (const sbx_cidr *a, const sbx_cidr *b)
{
  return a->family == b->family && a->prefix == b->prefix && memcmp (a->addr, b->addr, sizeof a->addr) == 0;
}

/* A CIDR handed in as a struct: a family, a prefix within it, no host bits,
 * nothing past an IPv4 address. */
bool
sbx_cidr_valid (const sbx_cidr *c)
{
  static const uint8_t zero[12];
  if (c->family != AF_INET && c->family != AF_INET6)
    return false;
  if (c->prefix > sbx_cidr_width (c) || !host_bits_clear (c))
    return false;
  return c->family == AF_INET6 || memcmp (c->addr + 4, zero, sizeof zero) == 0;
}

sbx_cidr
sbx_cidr_const (const char *s)
{
  sbx_cidr c;
  if (sbx_cidr_parse (s, &c, NULL) < 0)
    abort ();
  return c;
}

/* Whether INNER lies inside OUTER. */
bool
sbx_cidr_contains (const sbx_cidr *outer, const sbx_cidr *inner)
{
  if (outer->family != inner->family || outer->prefix > inner->prefix)
    return false;
  unsigned full = outer->prefix / 8, rest = outer->prefix % 8;
  if (memcmp (outer->addr, inner->addr, full) != 0)
    return false;
  uint8_t mask = (uint8_t) (0xff00 >> rest);
  return rest == 0 || (outer->addr[full] & mask) == (inner->addr[full] & mask);
}

bool
sbx_cidr_overlaps (const sbx_cidr *a, const sbx_cidr *b)
{
  return sbx_cidr_contains (a, b) || sbx_cidr_contains (b, a);
}

bool
sbx_cidr_is_unspecified (const sbx_cidr *c)
{
  static const uint8_t zero[16];
  return memcmp (c->addr, zero, sizeof zero) == 0;
}

/* The address of a host CIDR, without its prefix: "10.0.0.1", "fd00::1". */
char *
sbx_cidr_address_text (const sbx_cidr *c)
{
  char buf[SBX_CIDR_STRLEN];
  sbx_cidr_format (c, buf);
  char *slash = strchr (buf, '/');
  if (slash)
    *slash = '\0';
  return xstrdup (buf);
}

/* An address literal: what sbx_cidr_parse takes, without a prefix. */
int
sbx_cidr_address_parse (const char *s, sbx_cidr *ret, sbx_error **err)
{
  if (strchr (s, '/'))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "expected an address, not a network");
  _cleanup_error_ sbx_error *e = NULL;
  if (sbx_cidr_parse (s, ret, &e) < 0)
    {
      const char *m = e->msg;
      if (strncmp (m, "invalid CIDR ", 13) == 0)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "invalid address %s", m + 13);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s", m);
    }
  return 0;
}

/* Counts in the last byte first, carrying. */
void
sbx_cidr_add (sbx_cidr *c, uint64_t n)
{
  size_t len = c->family == AF_INET ? 4 : 16;
  for (size_t i = len; i-- > 0 && n > 0;)
    {
      uint64_t v = c->addr[i] + (n & 0xff);
      c->addr[i] = (uint8_t) v;
      n = (n >> 8) + (v >> 8);
    }
}
