/* Unit tests for the small helpers: parsing, names, env entries, atomic files. */
#include "config.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

static void
test_parse_int (void)
{
  int64_t v = 0;
  tap_ok (parse_int64 ("42", 0, 100, &v) == 0 && v == 42, "parse_int64 42");
  tap_ok (parse_int64 ("-1", -1, 100, &v) == 0 && v == -1, "parse_int64 -1 within range");
  tap_ok (parse_int64 ("-1", 0, 100, &v) == -ERANGE, "parse_int64 -1 below range");
  tap_ok (parse_int64 ("99999999999", 0, 86400, &v) == -ERANGE, "parse_int64 huge out of range");
  tap_ok (parse_int64 ("999999999999999999999999", 0, INT64_MAX, &v) == -ERANGE, "parse_int64 overflow");
  tap_ok (parse_int64 ("12x", 0, 100, &v) == -EINVAL, "parse_int64 trailing garbage");
  tap_ok (parse_int64 (" 12", 0, 100, &v) == -EINVAL, "parse_int64 leading space");
  tap_ok (parse_int64 ("", 0, 100, &v) == -EINVAL, "parse_int64 empty");
}

static void
test_parse_memory (void)
{
  uint64_t b = 0;
  tap_ok (parse_memory ("512", &b) == 0 && b == 512ULL << 20, "memory 512 is MiB");
  tap_ok (parse_memory ("512Mi", &b) == 0 && b == 512ULL << 20, "memory 512Mi");
  tap_ok (parse_memory ("1Gi", &b) == 0 && b == 1ULL << 30, "memory 1Gi");
  tap_ok (parse_memory ("-1", &b) < 0, "memory -1 refused");
  tap_ok (parse_memory ("1Xi", &b) < 0, "memory unknown unit refused");
  tap_ok (parse_memory ("99999999999999999999Gi", &b) < 0, "memory overflow refused");
}

static void
test_double (void)
{
  double d = 0;
  tap_ok (parse_double ("0.5", 0.01, 64, &d) == 0 && d == 0.5, "cpu 0.5");
  tap_ok (parse_double ("-1", 0.01, 64, &d) < 0, "cpu -1 refused");
  tap_ok (parse_double ("1e3", 0.01, 64, &d) < 0, "cpu exponent refused");
  tap_ok (parse_double ("nan", 0.01, 64, &d) < 0, "cpu nan refused");
}

static void
test_names (void)
{
  tap_ok (name_is_valid ("sb-0123abcd"), "id valid");
  tap_ok (name_is_valid ("my.box_1+x"), "name with . _ + valid");
  tap_ok (!name_is_valid ("-x"), "leading dash refused");
  tap_ok (!name_is_valid ("../x"), "slash refused");
  tap_ok (!name_is_valid (""), "empty refused");
  tap_ok (!name_is_valid ("a b"), "space refused");
  tap_ok (!name_is_valid ("\xc3\xa9t\xc3\xa9"), "non-ascii refused");
  char longname[100];
  memset (longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  tap_ok (!name_is_valid (longname), "over-long refused");
}

static void
test_env (void)
{
  tap_ok (env_entry_is_valid ("A=b"), "A=b valid");
  tap_ok (env_entry_is_valid ("A="), "A= valid");
  tap_ok (!env_entry_is_valid ("A"), "no = refused");
  tap_ok (!env_entry_is_valid ("=b"), "empty key refused");
  tap_ok (!env_entry_is_valid ("1A=b"), "key starting with digit refused");
  tap_ok (!env_entry_is_valid ("A-B=c"), "key with dash refused");
}

static void
test_atomic (void)
{
  char tmpl[] = "/tmp/sbx-test-util-XXXXXX";
  char *dir = mkdtemp (tmpl);
  _cleanup_free_ char *path = xasprintf ("%s/f", dir);
  sbx_error *err = NULL;
  tap_ok (write_file_atomic (path, "hello", 5, 0600, &err) == 0, "atomic write");
  _cleanup_free_ char *data = NULL;
  size_t len = 0;
  tap_ok (read_file (path, 100, &data, &len, &err) == 0 && len == 5 && memcmp (data, "hello", 5) == 0, "read back");
  struct stat st;
  tap_ok (stat (path, &st) == 0 && (st.st_mode & 0777) == 0600, "mode kept");
  free (data);
  data = NULL;
  tap_ok (read_file (path, 3, &data, &len, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT, "size bound enforced");
  sbx_error_free (err);
  err = NULL;
  _cleanup_free_ char *lnk = xasprintf ("%s/l", dir);
  tap_ok (symlink (path, lnk) == 0 && read_file (lnk, 100, &data, &len, &err) < 0, "read_file refuses a symlink");
  sbx_error_free (err);
  err = NULL;
  tap_ok (rm_rf (dir, &err) == 0 && !path_exists (dir), "rm_rf");
}

static void
test_encodings (void)
{
  tap_ok (utf8_valid ("plain", 5) && utf8_valid ("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9), "valid UTF-8");
  tap_ok (!utf8_valid ("\xff", 1) && !utf8_valid ("\xc3", 1) && !utf8_valid ("\xc0\xaf", 2), "bad bytes, truncated, overlong");
  tap_ok (!utf8_valid ("\xed\xa0\x80", 3) && !utf8_valid ("\xf4\x90\x80\x80", 4), "surrogates, beyond U+10FFFF");
  char *h = hex_encode ("\x00\xff" "ab", 4), *back = NULL;
  size_t n = 0;
  tap_ok (strcmp (h, "00ff6162") == 0 && hex_decode (h, &back, &n) == 0 && n == 4 && memcmp (back, "\x00\xff" "ab", 4) == 0,
          "hex round trip");
  free (h);
  free (back);
  tap_ok (hex_decode ("abc", &back, &n) < 0 && hex_decode ("zz", &back, &n) < 0, "hex_decode refuses odd lengths and non-digits");
  char *b1 = base64_encode ("f", 1), *b2 = base64_encode ("fo", 2), *b3 = base64_encode ("foobar", 6);
  tap_ok (strcmp (b1, "Zg==") == 0 && strcmp (b2, "Zm8=") == 0 && strcmp (b3, "Zm9vYmFy") == 0, "base64 (RFC 4648 vectors)");
  free (b1);
  free (b2);
  free (b3);
}

int
main (void)
{
  tap_plan (44);
  test_encodings ();
  test_parse_int ();
  test_parse_memory ();
  test_double ();
  test_names ();
  test_env ();
  test_atomic ();
  return tap_done ();
}
