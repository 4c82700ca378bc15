/* Unit tests of the DNS message helpers (src/lib/dns.c) on hand-made
 * messages: the question's length, the match of an answer to the query
 * sent, and the SERVFAIL and FORMERR the resolver makes itself. The query
 * check itself is tested by test-resolver and fuzz-dns. */
#include "config.h"
#include "dns.h"
#include "tap.h"
#include "util.h"

#include <string.h>

/* A query for NAME (dotted), type A, class IN, id ID, RD set; returns its
 * length. */
static size_t
make_query (unsigned char *q, uint16_t id, const char *name)
{
  memset (q, 0, SBX_DNS_HDR);
  sbx_dns_put16 (q, id);
  q[2] = 0x01; /* RD */
  sbx_dns_put16 (q + 4, 1);
  size_t at = SBX_DNS_HDR;
  for (const char *s = name; *s;)
    {
      size_t l = strcspn (s, ".");
      q[at++] = (unsigned char) l;
      memcpy (q + at, s, l);
      at += l;
      s += l + (s[l] == '.');
    }
  q[at++] = 0;
  sbx_dns_put16 (q + at, 1);
  sbx_dns_put16 (q + at + 2, 1);
  return at + 4;
}

static void
test_question_len (void)
{
  unsigned char q[512];
  size_t n = make_query (q, 7, "example.org");
  tap_ok (sbx_dns_question_len (q, n) == (ssize_t) (n - SBX_DNS_HDR), "question of example.org: %zd bytes",
          sbx_dns_question_len (q, n));
  tap_ok (sbx_dns_question_len (q, n - 1) < 0, "a question cut short of its class: -1");
  q[SBX_DNS_HDR] = 0xc0;
  tap_ok (sbx_dns_question_len (q, n) < 0, "a compression pointer in the question: -1");
  unsigned char big[600] = { 0 };
  size_t at = SBX_DNS_HDR;
  for (int i = 0; i < 5; i++)
    {
      big[at] = 63;
      memset (big + at + 1, 'a', 63);
      at += 64;
    }
  big[at++] = 0;
  tap_ok (sbx_dns_question_len (big, at + 4) < 0, "a name over 255 bytes: -1");
  tap_ok (sbx_dns_question_len (q, SBX_DNS_HDR) < 0, "a header alone: -1");
}

static void
test_answer_matches (void)
{
  unsigned char q[512], a[512];
  size_t n = make_query (q, 0x1234, "Example.ORG");
  size_t qend = SBX_DNS_HDR + (size_t) sbx_dns_question_len (q, n);
  size_t an = make_query (a, 0x1234, "example.org");
  a[2] |= 0x80;
  tap_ok (sbx_dns_answer_matches (q, qend, 0x1234, a, an),
          "an answer with our id and the question in another case matches");
  tap_ok (!sbx_dns_answer_matches (q, qend, 0x1235, a, an), "another id does not");
  a[2] &= 0x7f;
  tap_ok (!sbx_dns_answer_matches (q, qend, 0x1234, a, an), "a query (QR clear) does not");
  a[2] |= 0x80;
  size_t on = make_query (a, 0x1234, "example.net");
  a[2] |= 0x80;
  tap_ok (!sbx_dns_answer_matches (q, qend, 0x1234, a, on), "another name does not");
  make_query (a, 0x1234, "example.org");
  a[2] |= 0x80;
  sbx_dns_put16 (a + an - 4, 28);
  tap_ok (!sbx_dns_answer_matches (q, qend, 0x1234, a, an), "another type does not");
  tap_ok (!sbx_dns_answer_matches (q, qend, 0x1234, a, qend - 1), "an answer shorter than the question does not");
}

static void
test_made_answers (void)
{
  unsigned char q[512], out[SBX_DNS_HDR + SBX_DNS_QUESTION_MAX];
  size_t n = make_query (q, 0xbeef, "example.org");
  q[7] = 3; /* an ANCOUNT a query should not have: cleared in the answer */
  size_t qend = SBX_DNS_HDR + (size_t) sbx_dns_question_len (q, n);
  size_t m = sbx_dns_servfail (q, qend, out);
  tap_ok (m == qend && sbx_dns_get16 (out) == 0xbeef && (out[2] & 0x80) && (out[2] & 0x01) && (out[3] & 0x0f) == 2
              && (out[3] & 0x80) && sbx_dns_get16 (out + 4) == 1 && sbx_dns_get16 (out + 6) == 0
              && memcmp (out + SBX_DNS_HDR, q + SBX_DNS_HDR, qend - SBX_DNS_HDR) == 0,
          "SERVFAIL: our id, QR, RD kept, RA, rcode 2, the question, no records");
  unsigned char h[SBX_DNS_HDR];
  m = sbx_dns_formerr (q, n, h);
  tap_ok (m == SBX_DNS_HDR && sbx_dns_get16 (h) == 0xbeef && (h[2] & 0x80) && (h[3] & 0x0f) == 1
              && sbx_dns_get16 (h + 4) == 0,
          "FORMERR: the id, QR, rcode 1, header only");
  q[2] = (unsigned char) (q[2] | (2 << 3)); /* opcode STATUS */
  m = sbx_dns_formerr (q, n, h);
  tap_ok (m == SBX_DNS_HDR && (h[3] & 0x0f) == 4, "another opcode: NOTIMP");
  q[2] |= 0x80;
  tap_ok (sbx_dns_formerr (q, n, h) == 0, "a response gets no answer (no loops between servers)");
  tap_ok (sbx_dns_formerr (q, SBX_DNS_HDR - 1, h) == 0, "a message without a whole header gets none");
}

int
main (void)
{
  test_question_len ();
  test_answer_matches ();
  test_made_answers ();
  tap_plan (tap_n);
  return tap_done ();
}
