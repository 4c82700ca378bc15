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

/* A name as text: dotted labels, lower case, no trailing dot (the root is
 * ""); at most 253 characters. */
#define SBX_DNS_NAME_MAX 253

/* Reads the name at P[AT..) of the message P[0..N), following compression
 * pointers (backwards only, at most 64); writes its text into OUT
 * (SBX_DNS_NAME_MAX + 1 bytes) and returns the offset after the name where
 * it is written (after the first pointer, if any). -1 when malformed. A
 * label with a byte other than a letter, digit, '-' or '_' sets *ODD (the
 * text is then not to be matched: a '.' inside a label would pass for two
 * labels). */
ssize_t sbx_dns_name_read (const unsigned char *p, size_t n, size_t at, char out[SBX_DNS_NAME_MAX + 1], bool *odd);

/* The QTYPE of the checked query P (its question ending at QEND). */
static inline uint16_t
sbx_dns_qtype (const unsigned char *p, size_t qend)
{
  return sbx_dns_get16 (p + qend - 4);
}

/* An address an answer gives for a name. */
typedef struct sbx_dns_addr {
  int family; /* AF_INET, AF_INET6 */
  uint8_t addr[16];
  uint32_t ttl;                    /* seconds, as capped */
  char name[SBX_DNS_NAME_MAX + 1]; /* the record's owner */
} sbx_dns_addr;

/* Most names followed from the question through CNAMEs. */
#define SBX_DNS_CHAIN_MAX 16

/* Reads the answer P[0..N) (a response whose question is one well-formed
 * name): the A and AAAA records of the answer section whose owner is the
 * question's name or a name reached from it through the section's CNAME
 * records (at most SBX_DNS_CHAIN_MAX names), at most MAX of them into OUT.
 * Every TTL of the answer section above TTL_MAX is lowered to it in P, so
 * that no client keeps a record longer than the caller lets it. Records of
 * other owners are left alone and not returned. Returns the count, or -1
 * when the message is malformed (then P is unchanged). */
ssize_t sbx_dns_answer_addrs (unsigned char *p, size_t n, uint32_t ttl_max, sbx_dns_addr *out, size_t max);

/* REFUSED for the query P whose question ends at QEND (as
 * sbx_dns_servfail). */
size_t sbx_dns_refused (const unsigned char *p, size_t qend, unsigned char *out);

#endif
