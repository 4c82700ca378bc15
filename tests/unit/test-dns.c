/* Unit tests of the DNS message helpers (src/lib/dns.c) on hand-made
 * messages: the question's length, the match of an answer to the query
 * sent, and the SERVFAIL and FORMERR the resolver makes itself. The query
 * check itself is tested by test-resolver and fuzz-dns. */
#include "config.h"
#include "dns.h"
#include "tap.h"
#include "util.h"

#include <string.h>
#include <sys/socket.h>

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

/* Appends a record OWNER (a pointer to the question's name when NULL) of
 * TYPE, TTL and RDATA. */
static size_t
put_rr (unsigned char *a, size_t at, const char *owner, uint16_t type, uint32_t ttl, const void *rdata, size_t rdlen)
{
  if (owner == NULL)
    {
      a[at++] = 0xc0;
      a[at++] = SBX_DNS_HDR;
    }
  else
    {
      for (const char *s = owner; *s;)
        {
          size_t l = strcspn (s, ".");
          a[at++] = (unsigned char) l;
          memcpy (a + at, s, l);
          at += l;
          s += l + (s[l] == '.');
        }
      a[at++] = 0;
    }
  sbx_dns_put16 (a + at, type);
  sbx_dns_put16 (a + at + 2, 1);
  sbx_dns_put16 (a + at + 4, (uint16_t) (ttl >> 16));
  sbx_dns_put16 (a + at + 6, (uint16_t) ttl);
  sbx_dns_put16 (a + at + 8, (uint16_t) rdlen);
  memcpy (a + at + 10, rdata, rdlen);
  return at + 10 + rdlen;
}

/* A name in wire form into OUT; its length. */
static size_t
wire (unsigned char *out, const char *name)
{
  size_t at = 0;
  for (const char *s = name; *s;)
    {
      size_t l = strcspn (s, ".");
      out[at++] = (unsigned char) l;
      memcpy (out + at, s, l);
      at += l;
      s += l + (s[l] == '.');
    }
  out[at++] = 0;
  return at;
}

static void
test_answer_addrs (void)
{
  unsigned char a[1024], t[300];
  sbx_dns_addr got[8];
  static const uint8_t v4[4] = { 192, 0, 2, 7 }, v4b[4] = { 198, 51, 100, 9 }, v4c[4] = { 203, 0, 113, 1 };
  static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
  /* www.Example.org CNAME edge.cdn.test, edge.cdn.test A v4b (records out of
   * order), an A record of the question's name, an AAAA, and one of an
   * unrelated owner. */
  size_t n = make_query (a, 9, "www.Example.org");
  a[2] |= 0x80;
  size_t at = n;
  at = put_rr (a, at, "edge.cdn.test", 1, 7200, v4b, 4);
  at = put_rr (a, at, NULL, 5, 300, t, wire (t, "edge.CDN.test"));
  at = put_rr (a, at, NULL, 1, 60, v4, 4);
  at = put_rr (a, at, "www.example.org", 28, 30, v6, 16);
  at = put_rr (a, at, "evil.test", 1, 60, v4c, 4);
  sbx_dns_put16 (a + 6, 5);
  ssize_t r = sbx_dns_answer_addrs (a, at, 3600, got, ARRAY_SIZE (got));
  tap_ok (r == 3, "a chain: 3 addresses (the unrelated owner left out): %zd", r);
  tap_ok (r == 3 && got[0].family == AF_INET && memcmp (got[0].addr, v4b, 4) == 0 && got[0].ttl == 3600
              && strcmp (got[0].name, "edge.cdn.test") == 0,
          "the CNAME target's address, its TTL capped at 3600");
  tap_ok (r == 3 && memcmp (got[1].addr, v4, 4) == 0 && got[1].ttl == 60
              && strcmp (got[1].name, "www.example.org") == 0,
          "the name's own A record, in lower case");
  tap_ok (r == 3 && got[2].family == AF_INET6 && memcmp (got[2].addr, v6, 16) == 0, "the AAAA record");
  tap_ok (sbx_dns_get16 (a + n + 15 + 4) == 0 && sbx_dns_get16 (a + n + 15 + 6) == 3600,
          "the capped TTL is written back into the answer");
  tap_ok (sbx_dns_answer_addrs (a, at, 3600, got, 1) == 1, "at most MAX addresses");

  /* Malformed: cut short, a count past the records, a pointer forwards. */
  tap_ok (sbx_dns_answer_addrs (a, at - 1, 3600, got, 8) < 0, "an answer cut short: -1");
  sbx_dns_put16 (a + 6, 6);
  tap_ok (sbx_dns_answer_addrs (a, at, 3600, got, 8) < 0, "ANCOUNT past the records: -1");
  n = make_query (a, 9, "x.test");
  a[2] |= 0x80;
  a[n] = 0xc0;
  a[n + 1] = (unsigned char) (n + 2); /* points forwards */
  memset (a + n + 2, 0, 10);
  sbx_dns_put16 (a + 6, 1);
  tap_ok (sbx_dns_answer_addrs (a, n + 12, 3600, got, 8) < 0, "a forward compression pointer: -1");
  a[n + 1] = (unsigned char) n; /* points at itself */
  tap_ok (sbx_dns_answer_addrs (a, n + 12, 3600, got, 8) < 0, "a pointer loop: -1");

  /* A CNAME chain that loops, and an odd name (a dot inside a label). */
  n = make_query (a, 9, "a.test");
  a[2] |= 0x80;
  at = put_rr (a, n, NULL, 5, 60, t, wire (t, "b.test"));
  at = put_rr (a, at, "b.test", 5, 60, t, wire (t, "a.test"));
  at = put_rr (a, at, "b.test", 1, 60, v4, 4);
  sbx_dns_put16 (a + 6, 3);
  tap_ok (sbx_dns_answer_addrs (a, at, 3600, got, 8) == 1, "a CNAME loop ends; the chain's address is found");
  n = make_query (a, 9, "a.test");
  a[2] |= 0x80;
  a[SBX_DNS_HDR + 1] = '.'; /* the label "a" becomes "." */
  at = put_rr (a, n, NULL, 1, 60, v4, 4);
  sbx_dns_put16 (a + 6, 1);
  tap_ok (sbx_dns_answer_addrs (a, at, 3600, got, 8) == 0, "an odd question name: no address");
  char name[SBX_DNS_NAME_MAX + 1];
  bool odd = false;
  tap_ok (sbx_dns_name_read (a, n, SBX_DNS_HDR, name, &odd) > 0 && odd, "the name reader flags it odd");
  /* An answer with no records. */
  n = make_query (a, 9, "empty.test");
  a[2] |= 0x80;
  tap_ok (sbx_dns_answer_addrs (a, n, 3600, got, 8) == 0, "no records: none");
}

static void
test_refused (void)
{
  unsigned char q[512], out[SBX_DNS_HDR + SBX_DNS_QUESTION_MAX];
  size_t n = make_query (q, 0xabcd, "unlisted.example");
  size_t qend = SBX_DNS_HDR + (size_t) sbx_dns_question_len (q, n);
  size_t m = sbx_dns_refused (q, qend, out);
  tap_ok (m == qend && sbx_dns_get16 (out) == 0xabcd && (out[2] & 0x80) && (out[3] & 0x0f) == 5
              && sbx_dns_get16 (out + 6) == 0,
          "REFUSED: the id, QR, rcode 5, the question, no records");
}

int
main (void)
{
  test_question_len ();
  test_answer_matches ();
  test_made_answers ();
  test_answer_addrs ();
  test_refused ();
  tap_plan (tap_n);
  return tap_done ();
}
