/* JSON through yajl: checked generator helpers and a typed reader.
 * Every string goes through yajl; nothing is escaped by hand. */
#ifndef SBX_JSON_H
#define SBX_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "error.h"

static inline void
yajl_gen_freep (yajl_gen *g)
{
  if (*g)
    yajl_gen_free (*g);
}
static inline void
yajl_val_freep (yajl_val *v)
{
  if (*v)
    yajl_tree_free (*v);
}
#define _cleanup_yajl_gen_ __attribute__ ((cleanup (yajl_gen_freep)))
#define _cleanup_yajl_val_ __attribute__ ((cleanup (yajl_val_freep)))

yajl_gen j_new (bool pretty);
/* A NUL-terminated copy of what G generated. */
char *j_take (yajl_gen g, size_t *ret_len);

/* Each aborts on a generator error: that is a programming error. */
void j_str (yajl_gen g, const char *s);
void j_strn (yajl_gen g, const char *s, size_t n);
void j_int (yajl_gen g, long long v);
void j_double (yajl_gen g, double v);
void j_bool (yajl_gen g, bool v);
void j_null (yajl_gen g);
void j_map (yajl_gen g);
void j_endmap (yajl_gen g);
void j_arr (yajl_gen g);
void j_endarr (yajl_gen g);
void j_kstr (yajl_gen g, const char *k, const char *v); /* NULL v -> null */
void j_kint (yajl_gen g, const char *k, long long v);
void j_kbool (yajl_gen g, const char *k, bool v);
void j_kstrv (yajl_gen g, const char *k, char *const *v);
/* Emits an already-parsed tree value. */
void j_val (yajl_gen g, yajl_val v);

/* Parses at most MAX bytes of TEXT; INVALID_ARGUMENT with the parser's
 * message otherwise. WHAT names the document in errors. */
int j_parse (const char *text, size_t len, size_t max, const char *what, yajl_val *ret, sbx_error **err);

/* Reads and parses the JSON file PATH (at most MAX bytes). A missing file
 * is NOT_FOUND with message NOTFOUND_MSG. */
int j_read_file (const char *path, size_t max, const char *what, const char *notfound_msg, yajl_val *ret,
                 sbx_error **err);

yajl_val j_get (yajl_val obj, const char *key);
/* Typed getters. A missing key leaves *ret untouched and returns 0 unless
 * REQUIRED; a wrong type is INVALID_ARGUMENT naming the key. */
int j_get_str (yajl_val obj, const char *key, bool required, const char **ret, sbx_error **err);
int j_get_int (yajl_val obj, const char *key, bool required, int64_t *ret, sbx_error **err);
int j_get_bool (yajl_val obj, const char *key, bool required, bool *ret, sbx_error **err);
/* An array of strings, copied into a new strv. */
int j_get_strv (yajl_val obj, const char *key, bool required, char ***ret, sbx_error **err);
/* Refuses keys not in ALLOWED (NULL-terminated). */
int j_check_keys (yajl_val obj, const char *const *allowed, const char *what, sbx_error **err);

#endif
