/* Unit tests of the CIDR parser (src/lib/cidr.c): good, bad and random
 * input, random input checked against libc's inet_pton as a reference. */
#include "config.h"
#include "cidr.h"
#include "tap.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* ---- CIDR parser ---- */

static void
test_cidr_good (void)
{
  static const char *const cases[][2] = {
    { "10.0.0.0/8", "10.0.0.0/8" },
    { "1.2.3.4", "1.2.3.4/32" },
    { "1.2.3.4/32", "1.2.3.4/32" },
    { "0.0.0.0/0", "0.0.0.0/0" },
    { "255.255.255.255", "255.255.255.255/32" },
    { "192.168.1.0/24", "192.168.1.0/24" },
    { "100.64.0.0/10", "100.64.0.0/10" },
    { "168.63.129.16/32", "168.63.129.16/32" },
    { "0.0.0.0", "0.0.0.0/32" },
    { "::1", "::1/128" },
    { "::/0", "::/0" },
    { "fe80::/10", "fe80::/10" },
    { "fc00::/7", "fc00::/7" },
    { "2001:DB8::/32", "2001:db8::/32" },
    { "2001:0db8:0000::/48", "2001:db8::/48" },
    { "::ffff:1.2.3.4", "::ffff:1.2.3.4/128" },
    { "1:2:3:4:5:6:7:8/128", "1:2:3:4:5:6:7:8/128" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      sbx_cidr c;
      char buf[SBX_CIDR_STRLEN] = "";
      _cleanup_error_ sbx_error *err = NULL;
      int r = sbx_cidr_parse (cases[i][0], &c, &err);
      if (r == 0)
        sbx_cidr_format (&c, buf);
      tap_ok (r == 0 && strcmp (buf, cases[i][1]) == 0, "cidr `%s` parses as %s (%s)", cases[i][0], cases[i][1],
              r == 0 ? buf : err->msg);
    }
}

static void
test_cidr_bad (void)
{
  static const char *const cases[][2] = {
    { "", "empty" },
    { "010.0.0.0/8", "leading zero" },
    { "10.0.0.010", "leading zero" },
    { "10.00.0.0/16", "leading zero" },
    { "1.2.3.4/08", "leading zero" },
    { "1.2.3.4/33", "over 32" },
    { "::/129", "over 128" },
    { "1.2.3.4/999", "over 32" },
    { " 1.2.3.4", "whitespace" },
    { "1.2.3.4 ", "whitespace" },
    { "1.2.3.4/ 24", "whitespace" },
    { "1.2.3.4\t", "whitespace" },
    { "10.0.0.0/8\n", "whitespace" },
    { "1.2.3.4/", "prefix is empty" },
    { "/24", "address is empty" },
    { "/", "address is empty" },
    { "1.2.3/24", "four octets" },
    { "1.2.3.4.5", "four octets" },
    { "1.2.3.", "octet 4 is empty" },
    { "1..3.4", "octet 2 is empty" },
    { "1.2.3.256", "over 255" },
    { "1.2.3.1000", "over 255" },
    { "10.0.0.1/8", "host bits set" },
    { "192.168.1.1/24", "the network is 192.168.1.0/24" },
    { "fe80::1/10", "host bits set" },
    { "1.2.3.4/-1", "not a decimal" },
    { "1.2.3.4/+8", "not a decimal" },
    { "1.2.3.4/0x8", "not a decimal" },
    { "0x0a.0.0.0", "not a decimal" },
    { "1.2.3.4/24/8", "not a decimal" },
    { "-1.2.3.4", "not a decimal" },
    { "2001:db8::g/32", "not an IPv6" },
    { "2001:db8:::/32", "not an IPv6" },
    { "1:2:3:4:5:6:7:8:9", "not an IPv6" },
    { "::ffff:01.2.3.4", "leading zero" },
    { "fe80::1%eth0", "not an IPv6" },
    { "localhost", "not a decimal" },
    { "\xef\xbc\x91.2.3.4", "\\xef\\xbc\\x91" },
    { "1.2.3.4/24xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
      "too long" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      sbx_cidr c;
      _cleanup_error_ sbx_error *err = NULL;
      int r = sbx_cidr_parse (cases[i][0], &c, &err);
      bool ok = r < 0 && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, cases[i][1]);
      _cleanup_free_ char *shown = xstrndup (cases[i][0], 24);
      for (char *p = shown; *p; p++)
        if ((unsigned char) *p < 0x20 || (unsigned char) *p >= 0x7f)
          *p = '?';
      tap_ok (ok, "cidr `%s` refused: %s (%s)", shown, cases[i][1], err ? err->msg : "accepted");
    }
  sbx_cidr c;
  tap_ok (sbx_cidr_parse (NULL, &c, NULL) < 0, "cidr NULL refused");
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t
rnd (void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t) (rng >> 16);
}

/* The reference: libc's inet_pton for the address (strict on glibc: no
 * leading zeros, four octets), the prefix as canonical decimal, host bits. */
static bool
reference_accepts (const char *s)
{
  if (*s == '\0' || strlen (s) > 128)
    return false;
  const char *slash = strchr (s, '/');
  _cleanup_free_ char *addr = slash ? xstrndup (s, (size_t) (slash - s)) : xstrdup (s);
  uint8_t a[16] = { 0 };
  bool v6 = strchr (addr, ':') != NULL;
  if (inet_pton (v6 ? AF_INET6 : AF_INET, addr, a) != 1)
    return false;
  unsigned width = v6 ? 128 : 32, prefix = width;
  if (slash)
    {
      char *end = NULL;
      errno = 0;
      unsigned long p = strtoul (slash + 1, &end, 10);
      char canon[16];
      snprintf (canon, sizeof canon, "%lu", p);
      if (errno || *end || p > width || strcmp (canon, slash + 1) != 0)
        return false;
      prefix = (unsigned) p;
    }
  for (unsigned bit = prefix; bit < width; bit++)
    if (a[bit / 8] & (0x80 >> (bit % 8)))
      return false;
  return true;
}

static void
fuzz_input (char *s, size_t cap)
{
  static const char alphabet[] = "0123456789abcdefABCDEF:./:.//0 x%-+\t";
  static const char *const seeds[] = { "10.0.0.0/8",    "1.2.3.4",   "fe80::/10", "::ffff:1.2.3.4/128",
                                       "2001:db8::/32", "0.0.0.0/0", "::/0",      "192.168.0.0/16" };
  uint32_t how = rnd () % 4;
  if (how == 0)
    {
      size_t n = rnd () % 24;
      for (size_t i = 0; i < n; i++)
        s[i] = alphabet[rnd () % (sizeof alphabet - 1)];
      s[n] = '\0';
      return;
    }
  if (how == 1)
    {
      size_t n = rnd () % 24;
      for (size_t i = 0; i < n; i++)
        s[i] = (char) (1 + rnd () % 255);
      s[n] = '\0';
      return;
    }
  snprintf (s, cap, "%s", seeds[rnd () % ARRAY_SIZE (seeds)]);
  for (int m = 0, nm = 1 + (int) (rnd () % 3); m < nm; m++)
    {
      size_t n = strlen (s), at = n ? rnd () % n : 0;
      char c = alphabet[rnd () % (sizeof alphabet - 1)];
      if (rnd () % 3 == 0 && n + 1 < cap)
        {
          memmove (s + at + 1, s + at, n - at + 1);
          s[at] = c;
        }
      else if (rnd () % 2 == 0 && n > 0)
        memmove (s + at, s + at + 1, n - at);
      else if (n > 0)
        s[at] = c;
    }
}

static void
test_cidr_fuzz (void)
{
  rng ^= (uint64_t) time (NULL);
  char seedmsg[64];
  snprintf (seedmsg, sizeof seedmsg, "seed %llu", (unsigned long long) rng);
  size_t accepted = 0, mismatch = 0, roundtrip_bad = 0, badmsg = 0;
  char first_mismatch[160] = "";
  for (int i = 0; i < 300000; i++)
    {
      char s[64];
      fuzz_input (s, sizeof s);
      sbx_cidr c;
      sbx_error *err = NULL;
      bool ok = sbx_cidr_parse (s, &c, &err) == 0;
      if (ok != reference_accepts (s))
        {
          if (mismatch++ == 0)
            snprintf (first_mismatch, sizeof first_mismatch, "`%s`: ours %d", s, ok);
        }
      if (!ok)
        {
          if (!err || err->code != SBX_E_INVALID_ARGUMENT || !err->msg || !*err->msg)
            badmsg++;
          sbx_error_free (err);
          continue;
        }
      accepted++;
      char f[SBX_CIDR_STRLEN], f2[SBX_CIDR_STRLEN];
      sbx_cidr c2;
      sbx_cidr_format (&c, f);
      if (sbx_cidr_parse (f, &c2, NULL) < 0 || !sbx_cidr_equal (&c, &c2))
        roundtrip_bad++;
      else
        {
          sbx_cidr_format (&c2, f2);
          if (strcmp (f, f2) != 0)
            roundtrip_bad++;
        }
    }
  tap_ok (mismatch == 0,
          "fuzz: accepts exactly what inet_pton + canonical prefix + no host bits accept (%zu "
          "differences%s%s; %s)",
          mismatch, mismatch ? ", first " : "", first_mismatch, seedmsg);
  tap_ok (roundtrip_bad == 0 && accepted > 1000, "fuzz: %zu accepted, each re-prints canonically and re-parses equal",
          accepted);
  tap_ok (badmsg == 0, "fuzz: every refusal is INVALID_ARGUMENT with a message");

  /* Random valid networks of both families round-trip. */
  size_t bad = 0;
  for (int i = 0; i < 20000; i++)
    {
      sbx_cidr c = { .family = i % 2 ? AF_INET6 : AF_INET };
      unsigned width = c.family == AF_INET6 ? 128 : 32;
      for (unsigned k = 0; k < width / 8; k++)
        c.addr[k] = (uint8_t) rnd ();
      c.prefix = rnd () % (width + 1);
      for (unsigned bit = c.prefix; bit < width; bit++)
        c.addr[bit / 8] &= (uint8_t) ~(0x80 >> (bit % 8));
      char f[SBX_CIDR_STRLEN];
      sbx_cidr back;
      sbx_cidr_format (&c, f);
      if (sbx_cidr_parse (f, &back, NULL) < 0 || !sbx_cidr_equal (&c, &back))
        bad++;
    }
  tap_ok (bad == 0, "20000 random networks format and parse back equal");
}

/* ---- The helpers conf.c, net.c, egress.c and nft.c share ---- */

static sbx_cidr
C (const char *s)
{
  return sbx_cidr_const (s);
}

static void
test_cidr_relations (void)
{
  static const struct {
    const char *outer, *inner;
    bool contains, overlaps;
  } cases[] = {
    { "10.0.0.0/8", "10.1.2.0/24", true, true },
    { "10.1.2.0/24", "10.0.0.0/8", false, true },
    { "10.0.0.0/8", "10.0.0.0/8", true, true },
    { "10.0.0.0/8", "11.0.0.0/8", false, false },
    { "172.16.0.0/12", "172.31.255.255", true, true },
    { "172.16.0.0/12", "172.32.0.0", false, false },
    { "0.0.0.0/0", "203.0.113.7", true, true },
    { "fc00::/7", "fd12::/16", true, true },
    { "fc00::/7", "fe80::/10", false, false },
    { "::/0", "10.0.0.0/8", false, false }, /* families never mix */
    { "0.0.0.0/0", "::/0", false, false },
    { "192.168.0.0/17", "192.168.128.0/17", false, false },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      sbx_cidr o = C (cases[i].outer), n = C (cases[i].inner);
      tap_ok (sbx_cidr_contains (&o, &n) == cases[i].contains && sbx_cidr_overlaps (&o, &n) == cases[i].overlaps
                  && sbx_cidr_overlaps (&n, &o) == cases[i].overlaps,
              "%s %s %s, %s", cases[i].outer, cases[i].contains ? "contains" : "does not contain", cases[i].inner,
              cases[i].overlaps ? "overlapping" : "apart");
    }
  sbx_cidr z4 = C ("0.0.0.0"), z6 = C ("::"), a = C ("0.0.0.1"), b = C ("::1");
  tap_ok (sbx_cidr_is_unspecified (&z4) && sbx_cidr_is_unspecified (&z6) && !sbx_cidr_is_unspecified (&a)
              && !sbx_cidr_is_unspecified (&b),
          "0.0.0.0 and :: are unspecified, 0.0.0.1 and ::1 are not");
}

static void
test_cidr_add (void)
{
  static const struct {
    const char *from;
    uint64_t n;
    const char *to;
  } cases[] = {
    { "10.200.0.0/16", 1, "10.200.0.1/16" },
    { "10.200.0.0/16", 4 * 70 + 1, "10.200.1.25/16" }, /* carries into the third byte */
    { "10.200.255.255", 1, "10.201.0.0/32" },          /* carries across bytes */
    { "255.255.255.255", 1, "0.0.0.0/32" },            /* wraps within IPv4 */
    { "10.0.0.0/8", 0x01020304, "11.2.3.4/8" },
    { "fd00::/64", 5, "fd00::5/64" },
    { "fd00::ffff:ffff:ffff:ffff", 1, "fd00:0:0:1::/128" },
    { "fd00::/64", 0x100000000ULL, "fd00::1:0:0/64" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      sbx_cidr c = C (cases[i].from);
      char buf[SBX_CIDR_STRLEN];
      sbx_cidr_add (&c, cases[i].n);
      sbx_cidr_format (&c, buf);
      tap_ok (strcmp (buf, cases[i].to) == 0, "%s + %llu = %s (%s)", cases[i].from, (unsigned long long) cases[i].n,
              cases[i].to, buf);
    }
}

static void
test_cidr_valid (void)
{
  sbx_cidr c = C ("10.0.0.0/8");
  tap_ok (sbx_cidr_valid (&c), "a parsed CIDR is valid");
  sbx_cidr junk = c;
  junk.addr[4] = 1;
  tap_ok (!sbx_cidr_valid (&junk), "an IPv4 CIDR with bytes past its address is not valid");
  sbx_cidr host = c;
  host.addr[3] = 1;
  tap_ok (!sbx_cidr_valid (&host), "host bits set: not valid");
  sbx_cidr wide = c;
  wide.prefix = 33;
  tap_ok (!sbx_cidr_valid (&wide), "a /33: not valid");
  sbx_cidr none = { 0 };
  tap_ok (!sbx_cidr_valid (&none), "family 0: not valid");
  sbx_cidr v6 = C ("2001:db8::/32");
  tap_ok (sbx_cidr_valid (&v6) && sbx_cidr_width (&v6) == 128 && sbx_cidr_width (&c) == 32,
          "IPv6 valid; widths 128 and 32");
  sbx_cidr m = { .family = AF_INET6, .prefix = 21 };
  memset (m.addr, 0xff, sizeof m.addr);
  sbx_cidr_clear_host_bits (&m);
  char buf[SBX_CIDR_STRLEN];
  sbx_cidr_format (&m, buf);
  tap_ok (strcmp (buf, "ffff:f800::/21") == 0, "clear_host_bits keeps the first 21 bits (%s)", buf);
}

static void
test_cidr_address (void)
{
  sbx_cidr a;
  sbx_error *err = NULL;
  tap_ok (sbx_cidr_address_parse ("127.0.0.1", &a, &err) == 0 && a.family == AF_INET && a.prefix == 32,
          "address 127.0.0.1 parses as a /32");
  _cleanup_free_ char *t4 = sbx_cidr_address_text (&a);
  tap_ok (strcmp (t4, "127.0.0.1") == 0, "and prints without its prefix (%s)", t4);
  tap_ok (sbx_cidr_address_parse ("::1", &a, &err) == 0 && a.family == AF_INET6 && a.prefix == 128,
          "address ::1 parses as a /128");
  _cleanup_free_ char *t6 = sbx_cidr_address_text (&a);
  tap_ok (strcmp (t6, "::1") == 0, "and prints without its prefix (%s)", t6);
  int r = sbx_cidr_address_parse ("10.0.0.0/8", &a, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT && strcmp (err->msg, "expected an address, not a network") == 0,
          "a network is not an address (%s)", err ? err->msg : "no error");
  sbx_error_free (err);
  err = NULL;
  r = sbx_cidr_address_parse ("127.0.0.01", &a, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT && strncmp (err->msg, "invalid address `127.0.0.01`: ", 30) == 0,
          "a bad address says `invalid address` (%s)", err ? err->msg : "no error");
  sbx_error_free (err);
  err = NULL;
  r = sbx_cidr_address_parse ("", &a, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT, "an empty address is refused (%s)",
          err ? err->msg : "no error");
  sbx_error_free (err);
}

int
main (void)
{
  test_cidr_good ();
  test_cidr_bad ();
  test_cidr_fuzz ();
  test_cidr_relations ();
  test_cidr_add ();
  test_cidr_valid ();
  test_cidr_address ();
  tap_plan (tap_n);
  return tap_done ();
}
