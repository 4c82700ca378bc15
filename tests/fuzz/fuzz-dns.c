/* Fuzz harness for the DNS query check of the resolver
 * (sbx_dns_query_check, src/lib/dns.c), the one gate every message a
 * sandbox sends to its resolver goes through. Arbitrary bytes, and valid
 * queries mutated, go to it; it must never read past the input, and it must
 * agree with a second, independent reading of the same rules below.
 *
 * The same inputs go to the answer parser of the domain rules
 * (sbx_dns_answer_addrs: upstream answers are outside input too), which
 * must fail without touching a message it refuses and return only
 * well-formed names and capped TTLs; and, as text, to the rule parser and
 * matcher (src/lib/domain.c): a rule taken is normalized, taken again as
 * itself, and a plain rule matches its own name.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). Each
 * input is copied into a buffer of its exact size, so a build with
 * -fsanitize=address catches a read past the end in both modes. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "domain.h"
#include "resolver.h"
#include "util.h"

#include <sys/socket.h>

#define FUZZ_NAME "fuzz-dns"
#include "fuzz.h"

static size_t accepted, refused, answers_read, rules_taken;

static void
check_answer (const uint8_t *data, size_t size)
{
  uint8_t *copy = malloc (size ? size : 1);
  CHECK (copy != NULL);
  memcpy (copy, data, size);
  sbx_dns_addr addrs[8];
  ssize_t r = sbx_dns_answer_addrs (copy, size, 300, addrs, 8);
  CHECK (r >= -1 && r <= 8);
  if (r < 0)
    CHECK (memcmp (copy, data, size) == 0);
  for (ssize_t i = 0; i < r; i++)
    {
      CHECK (addrs[i].family == AF_INET || addrs[i].family == AF_INET6);
      CHECK (addrs[i].ttl <= 300);
      size_t len = strnlen (addrs[i].name, sizeof addrs[i].name);
      CHECK (len <= SBX_DNS_NAME_MAX);
      for (size_t k = 0; k < len; k++)
        CHECK (strchr ("abcdefghijklmnopqrstuvwxyz0123456789-_.", addrs[i].name[k]) != NULL);
    }
  if (r > 0)
    answers_read++;
  free (copy);
}

static void
check_rule (const uint8_t *data, size_t size)
{
  char *text = malloc (size + 1);
  CHECK (text != NULL);
  memcpy (text, data, size);
  text[size] = '\0';
  char *r = NULL;
  sbx_error *err = NULL;
  if (sbx_domain_rule_parse (text, &r, &err) == 0)
    {
      char *again = NULL;
      CHECK (sbx_domain_rule_parse (r, &again, NULL) == 0 && strcmp (again, r) == 0);
      char *rules[] = { r, NULL };
      if (strncmp (r, "*.", 2) != 0)
        CHECK (sbx_domain_match (rules, r));
      else
        CHECK (!sbx_domain_match (rules, r + 2));
      free (again);
      free (r);
      rules_taken++;
    }
  else
    CHECK (err != NULL && err->code == SBX_E_INVALID_ARGUMENT && r == NULL);
  sbx_error_free (err);
  char *rules[] = { (char *) "example.com", (char *) "*.pypi.org", NULL };
  (void) sbx_domain_match (rules, text);
  free (text);
}

/* The rules read again: the name as a list of labels, its wire length
 * summed from them, then room for type and class. */
static bool
reference_ok (const uint8_t *p, size_t n)
{
  if (n < 12 || n > 65535)
    return false;
  unsigned flags = (unsigned) p[2] << 8 | p[3];
  if ((flags & 0x8000) != 0 || (flags & 0x7800) != 0 || ((unsigned) p[4] << 8 | p[5]) != 1)
    return false;
  size_t wire = 0, pos = 12;
  while (true)
    {
      if (pos == n)
        return false;
      uint8_t len = p[pos];
      if (len > 63)
        return false;
      wire += 1 + (size_t) len;
      if (wire > 255)
        return false;
      if (len == 0)
        break;
      if (n - pos - 1 < len)
        return false;
      pos += 1 + (size_t) len;
    }
  return n - (pos + 1) >= 4;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  uint8_t *copy = malloc (size ? size : 1);
  CHECK (copy != NULL);
  memcpy (copy, data, size);
  int r = sbx_dns_query_check (copy, size);
  CHECK (r == 0 || r == -1);
  CHECK ((r == 0) == reference_ok (copy, size));
  CHECK (memcmp (copy, data, size) == 0);
  if (r == 0)
    accepted++;
  else
    refused++;
  free (copy);
  check_answer (data, size);
  check_rule (data, size > 300 ? 300 : size);
  /* The question's name as text, and as a wildcard: rules that parse. */
  char name[SBX_DNS_NAME_MAX + 3] = "*.";
  bool odd;
  if (size > 12 && sbx_dns_name_read (data, size, 12, name + 2, &odd) >= 0)
    {
      check_rule ((const uint8_t *) name + 2, strlen (name + 2));
      check_rule ((const uint8_t *) name, strlen (name));
    }
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 50000
#define INPUT_MAX 1024

/* A query for a name of random labels, sometimes at the length limits,
 * sometimes with an EDNS OPT record after the question. */
static size_t
make_seed (uint8_t *out)
{
  static const uint8_t opt[] = { 0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0 };
  size_t n = 12, wire = 1;
  memset (out, 0, 12);
  out[0] = (uint8_t) fuzz_rnd (256);
  out[1] = (uint8_t) fuzz_rnd (256);
  out[2] = 0x01;
  out[5] = 1;
  unsigned labels = fuzz_rnd (6);
  for (unsigned l = 0; l < labels; l++)
    {
      unsigned len = fuzz_rnd (4) == 0 ? 63 : 1 + fuzz_rnd (20);
      if (wire + 1 + len > 255)
        break;
      out[n++] = (uint8_t) len;
      for (unsigned k = 0; k < len; k++)
        out[n++] = (uint8_t) ("abcdefghijklmnopqrstuvwxyz0123456789-"[fuzz_rnd (37)]);
      wire += 1 + len;
    }
  out[n++] = 0;
  out[n++] = 0;
  out[n++] = (uint8_t) (1 + fuzz_rnd (255));
  out[n++] = 0;
  out[n++] = 1;
  if (fuzz_rnd (3) == 0)
    {
      out[11] = 1;
      memcpy (out + n, opt, sizeof opt);
      n += sizeof opt;
    }
  return n;
}

static size_t
mutate (uint8_t *out, size_t n)
{
  static const uint8_t special[] = { 0, 1, 63, 64, 0x80, 0xc0, 0xc0 | 12, 0xff };
  unsigned edits = 1 + fuzz_rnd (3);
  for (unsigned e = 0; e < edits; e++)
    {
      size_t at = fuzz_rnd ((uint32_t) n + 1);
      switch (fuzz_rnd (5))
        {
        case 0: /* a random byte */
          if (n)
            out[at % n] = (uint8_t) fuzz_rnd (256);
          break;
        case 1: /* a byte that matters to a name or a header */
          if (n)
            out[at % n] = special[fuzz_rnd (sizeof special)];
          break;
        case 2: /* a header field */
          out[2 + fuzz_rnd (4)] = (uint8_t) fuzz_rnd (256);
          break;
        case 3: /* cut short */
          n = at;
          break;
        default: /* a span inserted */
          {
            size_t len = 1 + fuzz_rnd (70);
            if (n + len <= INPUT_MAX)
              {
                memmove (out + at + len, out + at, n - at);
                for (size_t k = 0; k < len; k++)
                  out[at + k] = fuzz_rnd (2) ? special[fuzz_rnd (sizeof special)] : (uint8_t) fuzz_rnd (256);
                n += len;
              }
          }
        }
    }
  return n;
}

/* An answer to SEED's query (N bytes): CNAMEs, A and AAAA records, some
 * owners as pointers to the question, some to other names. */
static size_t
make_answer (uint8_t *out, size_t n)
{
  static const char *const names[] = { "\3www\7example\3com", "\4edge\3cdn\4test", "\1a\1b" };
  out[2] |= 0x80;
  unsigned count = 1 + fuzz_rnd (6);
  for (unsigned i = 0; i < count && n + 300 < INPUT_MAX; i++)
    {
      unsigned type = fuzz_rnd (3) == 0 ? 5 : fuzz_rnd (2) ? 1 : 28;
      if (fuzz_rnd (2))
        {
          out[n++] = 0xc0;
          out[n++] = 12;
        }
      else
        {
          const char *nm = names[fuzz_rnd (3)];
          size_t l = strlen (nm) + 1;
          memcpy (out + n, nm, l);
          n += l;
        }
      out[n++] = 0;
      out[n++] = (uint8_t) type;
      out[n++] = 0;
      out[n++] = 1;
      for (int k = 0; k < 4; k++)
        out[n++] = (uint8_t) fuzz_rnd (256);
      size_t rdlen = type == 1 ? 4 : type == 28 ? 16 : 0;
      const char *target = names[fuzz_rnd (3)];
      if (type == 5)
        rdlen = strlen (target) + 1;
      out[n++] = 0;
      out[n++] = (uint8_t) rdlen;
      if (type == 5)
        memcpy (out + n, target, rdlen);
      else
        for (size_t k = 0; k < rdlen; k++)
          out[n + k] = (uint8_t) fuzz_rnd (256);
      n += rdlen;
      out[7]++;
    }
  return n;
}

/* A query, as it is for every fourth input, else mutated; every sixteenth
 * input random bytes instead (the query is still made first, so the numbers
 * drawn for the inputs after it stay the same). */
static size_t
make_input (unsigned i, uint8_t *out)
{
  size_t n = make_seed (out);
  if (i % 3 == 1)
    n = make_answer (out, n);
  if (i % 4 != 0)
    n = mutate (out, n);
  if (i % 16 == 15)
    {
      n = fuzz_rnd (64);
      for (size_t k = 0; k < n; k++)
        out[k] = (uint8_t) fuzz_rnd (256);
    }
  return n;
}

int
main (void)
{
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 4242,
    .make_input = make_input,
    .what = "messages to the query check, which agrees with the reference",
  };

  fuzz_corpus_run (&corpus, 5);
  tap_ok (accepted > CORPUS_SIZE / 5, "%zu of them accepted", accepted);
  tap_ok (refused > CORPUS_SIZE / 5, "%zu of them refused", refused);
  tap_ok (answers_read > CORPUS_SIZE / 50, "%zu of them read as answers with addresses", answers_read);
  tap_ok (rules_taken > 0, "%zu of them taken as domain rules", rules_taken);
  return tap_done ();
}

#endif
