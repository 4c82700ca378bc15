/* DNS messages as the resolver sees them (see dns.h): the one check a
 * sandbox's query must pass, the match of an upstream's answer to the query
 * sent, and the two answers the resolver makes itself. */
#include "config.h"
#include "dns.h"

#include <string.h>
#include <sys/socket.h>

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

size_t
sbx_dns_refused (const unsigned char *p, size_t qend, unsigned char *out)
{
  size_t n = sbx_dns_servfail (p, qend, out);
  out[3] = 0x80 | 5; /* RA, REFUSED */
  return n;
}

static bool
label_char (unsigned char c)
{
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

ssize_t
sbx_dns_name_read (const unsigned char *p, size_t n, size_t at, char out[SBX_DNS_NAME_MAX + 1], bool *odd)
{
  size_t len = 0, wire = 0;
  ssize_t end = -1;
  unsigned jumps = 0;
  *odd = false;
  out[0] = '\0';
  for (;;)
    {
      if (at >= n)
        return -1;
      unsigned l = p[at];
      if ((l & 0xc0) == 0xc0)
        {
          if (at + 1 >= n || ++jumps > 64)
            return -1;
          size_t to = (size_t) ((l & 0x3f) << 8 | p[at + 1]);
          if (end < 0)
            end = (ssize_t) (at + 2);
          if (to >= at) /* only backwards: no loop */
            return -1;
          at = to;
          continue;
        }
      if (l & 0xc0)
        return -1;
      wire += 1 + l;
      if (wire > 255)
        return -1;
      if (l == 0)
        break;
      if (n - at - 1 < l)
        return -1;
      for (unsigned i = 0; i < l; i++)
        {
          unsigned char c = lower (p[at + 1 + i]);
          if (!label_char (c))
            *odd = true;
          if (len + (len > 0) + i < SBX_DNS_NAME_MAX)
            out[len + (len > 0) + i] = (char) (label_char (c) ? c : '?');
        }
      if (len + (len > 0) + l > SBX_DNS_NAME_MAX)
        return -1;
      if (len > 0)
        out[len] = '.';
      len += (len > 0) + l;
      out[len] = '\0';
      at += 1 + l;
    }
  return end >= 0 ? end : (ssize_t) (at + 1);
}

/* One resource record's place in a message. */
typedef struct rr {
  size_t owner; /* offset of its name */
  size_t fixed; /* offset of its type */
  uint16_t type, rdlen;
  size_t rdata;
} rr;

#define ANSWER_RR_MAX 256
#define TYPE_A 1
#define TYPE_CNAME 5
#define TYPE_AAAA 28

static bool
in_chain (char chain[][SBX_DNS_NAME_MAX + 1], size_t nchain, const char *name)
{
  for (size_t i = 0; i < nchain; i++)
    if (strcmp (chain[i], name) == 0)
      return true;
  return false;
}

/* The answer section's records (at most ANSWER_RR_MAX); -1 when malformed. */
static ssize_t
answer_rrs (const unsigned char *p, size_t n, rr *rrs)
{
  ssize_t ql = sbx_dns_question_len (p, n);
  if (ql < 0 || sbx_dns_get16 (p + 4) != 1)
    return -1;
  size_t at = SBX_DNS_HDR + (size_t) ql, count = sbx_dns_get16 (p + 6);
  if (count > ANSWER_RR_MAX)
    return -1;
  for (size_t i = 0; i < count; i++)
    {
      char name[SBX_DNS_NAME_MAX + 1];
      bool odd;
      ssize_t e = sbx_dns_name_read (p, n, at, name, &odd);
      if (e < 0 || n - (size_t) e < 10)
        return -1;
      rrs[i] = (rr){ .owner = at,
                     .fixed = (size_t) e,
                     .type = sbx_dns_get16 (p + e),
                     .rdlen = sbx_dns_get16 (p + e + 8) };
      rrs[i].rdata = (size_t) e + 10;
      if (n - rrs[i].rdata < rrs[i].rdlen)
        return -1;
      at = rrs[i].rdata + rrs[i].rdlen;
    }
  return (ssize_t) count;
}

ssize_t
sbx_dns_answer_addrs (unsigned char *p, size_t n, uint32_t ttl_max, sbx_dns_addr *out, size_t max)
{
  rr rrs[ANSWER_RR_MAX];
  char chain[SBX_DNS_CHAIN_MAX][SBX_DNS_NAME_MAX + 1];
  size_t nchain = 0, nout = 0;
  bool odd;
  if (n < SBX_DNS_HDR)
    return -1;
  ssize_t count = answer_rrs (p, n, rrs);
  if (count < 0 || sbx_dns_name_read (p, n, SBX_DNS_HDR, chain[0], &odd) < 0)
    return -1;
  if (!odd)
    nchain = 1;
  /* The chain from the question's name, in whatever order the records come. */
  for (bool grew = true; grew && nchain < SBX_DNS_CHAIN_MAX;)
    {
      grew = false;
      for (ssize_t i = 0; i < count && nchain < SBX_DNS_CHAIN_MAX; i++)
        {
          char owner[SBX_DNS_NAME_MAX + 1], target[SBX_DNS_NAME_MAX + 1];
          bool o1, o2;
          if (rrs[i].type != TYPE_CNAME || sbx_dns_name_read (p, n, rrs[i].owner, owner, &o1) < 0)
            continue;
          ssize_t e = sbx_dns_name_read (p, n, rrs[i].rdata, target, &o2);
          if (e < 0 || o1 || o2 || !in_chain (chain, nchain, owner) || in_chain (chain, nchain, target))
            continue;
          strcpy (chain[nchain++], target);
          grew = true;
        }
    }
  for (ssize_t i = 0; i < count; i++)
    {
      char owner[SBX_DNS_NAME_MAX + 1];
      bool o;
      size_t len = rrs[i].type == TYPE_A ? 4 : rrs[i].type == TYPE_AAAA ? 16 : 0;
      uint32_t ttl = (uint32_t) sbx_dns_get16 (p + rrs[i].fixed + 4) << 16 | sbx_dns_get16 (p + rrs[i].fixed + 6);
      if (ttl > ttl_max)
        {
          ttl = ttl_max;
          sbx_dns_put16 (p + rrs[i].fixed + 4, (uint16_t) (ttl >> 16));
          sbx_dns_put16 (p + rrs[i].fixed + 6, (uint16_t) ttl);
        }
      if (len == 0 || rrs[i].rdlen != len || sbx_dns_get16 (p + rrs[i].fixed + 2) != 1 || nout >= max
          || sbx_dns_name_read (p, n, rrs[i].owner, owner, &o) < 0 || o || !in_chain (chain, nchain, owner))
        continue;
      sbx_dns_addr *a = &out[nout++];
      memset (a, 0, sizeof *a);
      a->family = len == 4 ? AF_INET : AF_INET6;
      memcpy (a->addr, p + rrs[i].rdata, len);
      a->ttl = ttl;
      strcpy (a->name, owner);
    }
  return (ssize_t) nout;
}
