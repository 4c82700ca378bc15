/* JSON helpers over yajl: checked generation, bounded typed reading. */
#include "config.h"
#include "json.h"
#include "util.h"

#include <string.h>

#define CHECK(x)                     \
  do                                 \
    {                                \
      if ((x) != yajl_gen_status_ok) \
        abort ();                    \
    }                                \
  while (0)

yajl_gen
j_new (bool pretty)
{
  yajl_gen g = yajl_gen_alloc (NULL);
  if (g == NULL)
    abort ();
  yajl_gen_config (g, yajl_gen_beautify, pretty ? 1 : 0);
  yajl_gen_config (g, yajl_gen_validate_utf8, 0);
  return g;
}

char *
j_take (yajl_gen g, size_t *ret_len)
{
  const unsigned char *buf;
  size_t len;
  CHECK (yajl_gen_get_buf (g, &buf, &len));
  char *s = xmalloc (len + 1);
  memcpy (s, buf, len);
  s[len] = '\0';
  if (ret_len)
    *ret_len = len;
  return s;
}

void
j_str (yajl_gen g, const char *s)
{
  j_strn (g, s, strlen (s));
}
/* JSON text is UTF-8 (RFC 8259): bytes that are not (a file name, a
 * command's binary output) become U+FFFD, each invalid byte one. */
void
j_strn (yajl_gen g, const char *s, size_t n)
{
  if (utf8_valid (s, n))
    {
      CHECK (yajl_gen_string (g, (const unsigned char *) s, n));
      return;
    }
  char *out = xmalloc (n * 3 + 1);
  size_t o = 0;
  for (size_t i = 0; i < n;)
    {
      size_t l = utf8_char_len ((const unsigned char *) s + i, n - i);
      if (l == 0)
        {
          memcpy (out + o, "\xef\xbf\xbd", 3);
          o += 3;
          i++;
        }
      else
        {
          memcpy (out + o, s + i, l);
          o += l;
          i += l;
        }
    }
  CHECK (yajl_gen_string (g, (const unsigned char *) out, o));
  free (out);
}
void
j_int (yajl_gen g, long long v)
{
  CHECK (yajl_gen_integer (g, v));
}
void
j_double (yajl_gen g, double v)
{
  CHECK (yajl_gen_double (g, v));
}
void
j_bool (yajl_gen g, bool v)
{
  CHECK (yajl_gen_bool (g, v));
}
void
j_null (yajl_gen g)
{
  CHECK (yajl_gen_null (g));
}
void
j_map (yajl_gen g)
{
  CHECK (yajl_gen_map_open (g));
}
void
j_endmap (yajl_gen g)
{
  CHECK (yajl_gen_map_close (g));
}
void
j_arr (yajl_gen g)
{
  CHECK (yajl_gen_array_open (g));
}
void
j_endarr (yajl_gen g)
{
  CHECK (yajl_gen_array_close (g));
}

void
j_kstr (yajl_gen g, const char *k, const char *v)
{
  j_str (g, k);
  if (v)
    j_str (g, v);
  else
    j_null (g);
}

void
j_kint (yajl_gen g, const char *k, long long v)
{
  j_str (g, k);
  j_int (g, v);
}

void
j_kbool (yajl_gen g, const char *k, bool v)
{
  j_str (g, k);
  j_bool (g, v);
}

void
j_kstrv (yajl_gen g, const char *k, char *const *v)
{
  j_str (g, k);
  j_arr (g);
  for (size_t i = 0; v && v[i]; i++)
    j_str (g, v[i]);
  j_endarr (g);
}

void
j_val (yajl_gen g, yajl_val v)
{
  if (v == NULL || YAJL_IS_NULL (v))
    j_null (g);
  else if (YAJL_IS_STRING (v))
    j_str (g, v->u.string);
  else if (YAJL_IS_INTEGER (v))
    j_int (g, YAJL_GET_INTEGER (v));
  else if (YAJL_IS_NUMBER (v))
    CHECK (yajl_gen_number (g, v->u.number.r, strlen (v->u.number.r)));
  else if (YAJL_IS_TRUE (v))
    j_bool (g, true);
  else if (YAJL_IS_FALSE (v))
    j_bool (g, false);
  else if (YAJL_IS_ARRAY (v))
    {
      j_arr (g);
      for (size_t i = 0; i < v->u.array.len; i++)
        j_val (g, v->u.array.values[i]);
      j_endarr (g);
    }
  else if (YAJL_IS_OBJECT (v))
    {
      j_map (g);
      for (size_t i = 0; i < v->u.object.len; i++)
        {
          j_str (g, v->u.object.keys[i]);
          j_val (g, v->u.object.values[i]);
        }
      j_endmap (g);
    }
}

int
j_parse (const char *text, size_t len, size_t max, const char *what, yajl_val *ret, sbx_error **err)
{
  if (len > max)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: larger than %zu bytes", what, max);
  if (memchr (text, '\0', len))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: contains a NUL byte", what);
  _cleanup_free_ char *copy = xstrndup (text, len);
  char ebuf[256] = "";
  yajl_val v = yajl_tree_parse (copy, ebuf, sizeof ebuf);
  if (v == NULL)
    {
      char *nl = strchr (ebuf, '\n');
      if (nl)
        *nl = '\0';
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: not valid JSON: %s", what,
                            ebuf[0] ? ebuf : "parse error");
    }
  *ret = v;
  return 0;
}

int
j_read_file (const char *path, size_t max, const char *what, const char *notfound_msg, yajl_val *ret, sbx_error **err)
{
  _cleanup_free_ char *text = NULL;
  size_t len;
  _cleanup_error_ sbx_error *e = NULL;
  if (read_file (path, max, &text, &len, &e) < 0)
    {
      if (e->code == SBX_E_NOT_FOUND)
        return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "%s", notfound_msg);
      return sbx_error_set (err, e->code, e->errnum, "%s", e->msg);
    }
  return j_parse (text, len, max, what, ret, err);
}

yajl_val
j_get (yajl_val obj, const char *key)
{
  if (obj == NULL || !YAJL_IS_OBJECT (obj))
    return NULL;
  for (size_t i = 0; i < obj->u.object.len; i++)
    if (strcmp (obj->u.object.keys[i], key) == 0)
      return obj->u.object.values[i];
  return NULL;
}

static int
missing (const char *key, bool required, sbx_error **err)
{
  if (required)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "missing field `%s`", key);
  return 0;
}

int
j_get_str (yajl_val obj, const char *key, bool required, const char **ret, sbx_error **err)
{
  yajl_val v = j_get (obj, key);
  if (v == NULL || YAJL_IS_NULL (v))
    return missing (key, required, err);
  if (!YAJL_IS_STRING (v))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "field `%s` must be a string", key);
  *ret = v->u.string;
  return 0;
}

int
j_get_int (yajl_val obj, const char *key, bool required, int64_t *ret, sbx_error **err)
{
  yajl_val v = j_get (obj, key);
  if (v == NULL || YAJL_IS_NULL (v))
    return missing (key, required, err);
  if (!YAJL_IS_INTEGER (v))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "field `%s` must be an integer", key);
  *ret = YAJL_GET_INTEGER (v);
  return 0;
}

int
j_get_bool (yajl_val obj, const char *key, bool required, bool *ret, sbx_error **err)
{
  yajl_val v = j_get (obj, key);
  if (v == NULL || YAJL_IS_NULL (v))
    return missing (key, required, err);
  if (!YAJL_IS_TRUE (v) && !YAJL_IS_FALSE (v))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "field `%s` must be a boolean", key);
  *ret = YAJL_IS_TRUE (v);
  return 0;
}

int
j_get_strv (yajl_val obj, const char *key, bool required, char ***ret, sbx_error **err)
{
  yajl_val v = j_get (obj, key);
  if (v == NULL || YAJL_IS_NULL (v))
    return missing (key, required, err);
  if (!YAJL_IS_ARRAY (v))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "field `%s` must be an array of strings", key);
  char **r = xmalloc0 (sizeof (char *));
  for (size_t i = 0; i < v->u.array.len; i++)
    {
      if (!YAJL_IS_STRING (v->u.array.values[i]))
        {
          strv_free (r);
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "field `%s` must be an array of strings", key);
        }
      strv_push (&r, v->u.array.values[i]->u.string);
    }
  *ret = r;
  return 0;
}

int
j_check_keys (yajl_val obj, const char *const *allowed, const char *what, sbx_error **err)
{
  if (obj == NULL || !YAJL_IS_OBJECT (obj))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s must be a JSON object", what);
  for (size_t i = 0; i < obj->u.object.len; i++)
    {
      bool ok = false;
      for (size_t k = 0; allowed[k] && !ok; k++)
        ok = strcmp (allowed[k], obj->u.object.keys[i]) == 0;
      if (!ok)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: unknown key `%s`", what, obj->u.object.keys[i]);
    }
  return 0;
}
