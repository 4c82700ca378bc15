/* Unit tests for the yajl helpers: escaping, typed getters, limits. */
#include "config.h"
#include "json.h"
#include "tap.h"
#include "util.h"

#include <string.h>

int
main (void)
{
  tap_plan (12);
  yajl_gen g = j_new (false);
  j_map (g);
  j_kstr (g, "s", "a\"b\n\\c");
  j_kint (g, "i", 7);
  j_kbool (g, "b", true);
  char *v[] = { (char *) "x", (char *) "y", NULL };
  j_kstrv (g, "v", v);
  j_endmap (g);
  size_t len;
  _cleanup_free_ char *doc = j_take (g, &len);
  yajl_gen_free (g);
  tap_ok (strstr (doc, "\\\"") && strstr (doc, "\\n"), "strings are escaped by yajl");

  sbx_error *err = NULL;
  yajl_val t = NULL;
  tap_ok (j_parse (doc, len, 1024, "doc", &t, &err) == 0, "round trip parses");
  const char *s = NULL;
  int64_t i = 0;
  bool b = false;
  char **sv = NULL;
  tap_ok (j_get_str (t, "s", true, &s, &err) == 0 && strcmp (s, "a\"b\n\\c") == 0, "string back");
  tap_ok (j_get_int (t, "i", true, &i, &err) == 0 && i == 7, "int back");
  tap_ok (j_get_bool (t, "b", true, &b, &err) == 0 && b, "bool back");
  tap_ok (j_get_strv (t, "v", true, &sv, &err) == 0 && strv_len (sv) == 2, "strv back");
  strv_free (sv);
  tap_ok (j_get_int (t, "s", true, &i, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT, "wrong type refused");
  tap_ok (strstr (err->msg, "`s`") != NULL, "error names the key");
  sbx_error_free (err);
  err = NULL;
  tap_ok (j_get_str (t, "missing", true, &s, &err) < 0, "missing required refused");
  sbx_error_free (err);
  err = NULL;
  static const char *const allowed[] = { "s", "i", "b", NULL };
  tap_ok (j_check_keys (t, allowed, "doc", &err) < 0 && strstr (err->msg, "`v`"), "unknown key named");
  sbx_error_free (err);
  err = NULL;
  yajl_tree_free (t);
  tap_ok (j_parse (doc, len, 4, "doc", &t, &err) < 0, "size limit enforced");
  sbx_error_free (err);
  err = NULL;
  tap_ok (j_parse ("{\"a\":", 5, 100, "doc", &t, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT,
          "truncated JSON refused");
  sbx_error_free (err);
  return tap_done ();
}
