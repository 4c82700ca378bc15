/* DNS messages as the resolver sees them (see dns.h): the one check a
 * sandbox's query must pass, the match of an upstream's answer to the query
 * sent, and the two answers the resolver makes itself. */
#include "config.h"
#include "dns.h"

#include <string.h>

/* The length of the question after the header: name, type and class; -1
 * unless it is well formed. */
ssize_t
sbx_dns_question_len (const unsigned char *p, size_t n)
{
  size_t at = SBX_DNS_HDR;
  for (;;)
    {
      if (at >= n)
        return -1;
      unsigned l = p[at];
      if (l & 0xc0) /* compression pointer, or a reserved label type */
        return -1;
      at += 1 + l;
      if (at - SBX_DNS_HDR > 255)
        return -1;
      if (l == 0)
        break;
    }
  if (n - at < 4)
    return -1;
  return (ssize_t) (at + 4 - SBX_DNS_HDR);
}

int
sbx_dns_query_check (const unsigned char *p, size_t n)
{
  if (n < SBX_DNS_HDR || n > 65535)
    return -1;
  if ((p[2] & 0x80) || ((p[2] >> 3) & 0x0f) != 0 || sbx_dns_get16 (p + 4) != 1)
    return -1;
  return sbx_dns_question_len (p, n) < 0 ? -1 : 0;
}

static unsigned char
lower (unsigned char c)
{
  return c >= 'A' && c <= 'Z' ? (unsigned char) (c + 'a' - 'A') : c;
}

/* Whether P is an answer to the query S as sent (its question ending at
 * QEND, under ID): a response with that id and the same question (the name
 * in any case). Length bytes are below 'A', so comparing lowered bytes also
 * compares the names' shapes. */
bool
sbx_dns_answer_matches (const unsigned char *s, size_t qend, uint16_t id, const unsigned char *p, size_t n)
{
  if (n < qend || !(p[2] & 0x80) || sbx_dns_get16 (p) != id || sbx_dns_get16 (p + 4) != 1)
    return false;
  for (size_t i = SBX_DNS_HDR; i < qend - 4; i++)
    if (lower (p[i]) != lower (s[i]))
      return false;
  return memcmp (p + qend - 4, s + qend - 4, 4) == 0;
}

/* SERVFAIL for the query P whose question ends at QEND: its header and
 * question, no records. OUT holds SBX_DNS_HDR + SBX_DNS_QUESTION_MAX. */
size_t
sbx_dns_servfail (const unsigned char *p, size_t qend, unsigned char *out)
{
  memcpy (out, p, qend);
  out[2] = (unsigned char) (0x80 | (p[2] & 0x79)); /* QR; opcode and RD kept */
  out[3] = 0x80 | 2;                               /* RA, SERVFAIL */
  sbx_dns_put16 (out + 6, 0);
  sbx_dns_put16 (out + 8, 0);
  sbx_dns_put16 (out + 10, 0);
  return qend;
}

/* The answer to a refused message: FORMERR (NOTIMP for another opcode),
 * header only. 0 when it gets none: too short to have an id, or itself a
 * response (answering those could make two servers loop). */
size_t
sbx_dns_formerr (const unsigned char *p, size_t n, unsigned char out[SBX_DNS_HDR])
{
  if (n < SBX_DNS_HDR || (p[2] & 0x80))
    return 0;
  memset (out, 0, SBX_DNS_HDR);
  memcpy (out, p, 2);
  out[2] = (unsigned char) (0x80 | (p[2] & 0x79));
  out[3] = ((p[2] >> 3) & 0x0f) ? 4 : 1;
  return SBX_DNS_HDR;
}
