/* DNS messages, read and made for the resolver (resolver.h): bounds-checked
 * on every byte, since every message a sandbox sends is untrusted. */
#ifndef SBX_DNS_H
#define SBX_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SBX_DNS_HDR 12                 /* the header's bytes */
#define SBX_DNS_QUESTION_MAX (255 + 4) /* a name, its type and class */

static inline uint16_t
sbx_dns_get16 (const unsigned char *p)
{
  return (uint16_t) (p[0] << 8 | p[1]);
}

static inline void
sbx_dns_put16 (unsigned char *p, uint16_t v)
{
  p[0] = (unsigned char) (v >> 8);
  p[1] = (unsigned char) v;
}

/* A query sbx forwards: at least the 12-byte header, at most 65535 bytes,
 * QR=0, opcode QUERY, QDCOUNT=1, and a well-formed question name right
 * after the header (labels of at most 63 bytes, at most 255 bytes in all,
 * no compression pointer) followed by its type and class. What follows the
 * question (an EDNS OPT record, say) is the upstream's to judge. 0 when it
 * is one, -1 otherwise. */
int sbx_dns_query_check (const unsigned char *p, size_t n);

/* The length of the question after the header of P[0..N): name, type and
 * class; -1 unless it is well formed. */
ssize_t sbx_dns_question_len (const unsigned char *p, size_t n);

/* Whether P[0..N) answers the query S as sent (its question ending at
 * QEND, under ID): a response, that id, the same question (the name in any
 * case). */
bool sbx_dns_answer_matches (const unsigned char *s, size_t qend, uint16_t id, const unsigned char *p, size_t n);

/* SERVFAIL for the query P whose question ends at QEND: its header and
 * question, no records, into OUT (SBX_DNS_HDR + SBX_DNS_QUESTION_MAX
 * bytes); returns its length. */
size_t sbx_dns_servfail (const unsigned char *p, size_t qend, unsigned char *out);

/* The answer to a refused message: FORMERR (NOTIMP for another opcode),
 * header only, into OUT. 0 when it gets none: too short to have an id, or
 * itself a response (answering those could make two servers loop). */
size_t sbx_dns_formerr (const unsigned char *p, size_t n, unsigned char out[SBX_DNS_HDR]);

#endif
