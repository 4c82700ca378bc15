/* Fuzz harness for CIDRs (src/lib/cidr.c), what --allow, sbx.conf and the
 * egress rules parse: arbitrary bytes and valid networks mutated byte by
 * byte go to sbx_cidr_parse and sbx_cidr_address_parse. They must never
 * crash; what they accept must be a valid CIDR (a family, a prefix within
 * it, no host bits) whose formatted text parses back to the same CIDR; what
 * they refuse must be INVALID_ARGUMENT with a printable message.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cidr.h"

#include <sys/socket.h>

#define FUZZ_NAME "fuzz-cidr"
#include "fuzz.h"

static size_t accepted;

static void
check_refusal (sbx_error *err)
{
  CHECK (err && err->code == SBX_E_INVALID_ARGUMENT && err->msg && err->msg[0]);
  for (const char *p = err->msg; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      fuzz_fail ("a message with a control byte: %s", err->msg);
  sbx_error_free (err);
}

static void
check_cidr (const sbx_cidr *c)
{
  CHECK (c->family == AF_INET || c->family == AF_INET6);
  CHECK (c->prefix <= sbx_cidr_width (c));
  CHECK (sbx_cidr_valid (c));
  char buf[SBX_CIDR_STRLEN];
  sbx_cidr_format (c, buf);
  sbx_cidr again;
  sbx_error *err = NULL;
  if (sbx_cidr_parse (buf, &again, &err) < 0)
    fuzz_fail ("the formatted %s is refused: %s", buf, err->msg);
  CHECK (sbx_cidr_equal (c, &again));
  CHECK (sbx_cidr_contains (c, &again) && sbx_cidr_overlaps (c, &again));
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char buf[256];
  if (size >= sizeof buf)
    return 0;
  memcpy (buf, data, size);
  buf[size] = '\0';
  sbx_cidr c;
  sbx_error *err = NULL;
  if (sbx_cidr_parse (buf, &c, &err) == 0)
    {
      check_cidr (&c);
      accepted++;
    }
  else
    check_refusal (err);
  err = NULL;
  if (sbx_cidr_address_parse (buf, &c, &err) == 0)
    {
      check_cidr (&c);
      CHECK (c.prefix == sbx_cidr_width (&c));
      char *text = sbx_cidr_address_text (&c);
      sbx_cidr again;
      if (sbx_cidr_address_parse (text, &again, &err) < 0)
        fuzz_fail ("the address text %s is refused: %s", text, err->msg);
      CHECK (sbx_cidr_equal (&c, &again));
      free (text);
    }
  else
    check_refusal (err);
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 60000
#define INPUT_MAX 200

static const char *const seeds[] = {
  "10.0.0.0/8",  "192.168.1.0/24", "0.0.0.0/0", "203.0.113.7",       "255.255.255.255/32", "fd00::/8",
  "2001:db8::1", "::/0",           "::1",       "fe80::1:2:3:4/128", "::ffff:10.1.2.3",    "2001:db8:0:0:1:0:0:1/128",
};

static const char *const tokens[] = { ".",    ":",    "::", "/", "0", "00", "255", "256",     "/33",
                                      "/129", "ffff", "-1", " ", "",  "\n", "x",   "1.2.3.4", ":::" };

int
main (void)
{
  static const struct fuzz_seeds mutations = FUZZ_SEEDS (seeds, tokens, INPUT_MAX, true);
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 2424,
    .mutate = &mutations,
    .what = "networks and addresses to the parsers",
  };

  fuzz_corpus_run (&corpus, 2);
  tap_ok (accepted > CORPUS_SIZE / 10, "%zu of them accepted as CIDRs, each formatted back to itself", accepted);
  return tap_done ();
}

#endif
