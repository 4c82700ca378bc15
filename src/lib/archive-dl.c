/* Loading libarchive on first use (see archive-dl.h), and the two things
 * every reader of it needs: the filters it may use and its errors as ours. */
#include "config.h"
#include "archive-dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

struct sbx_archive_api sbx_ar;

int
sbx_archive_load (sbx_error **err)
{
  static bool loaded;
  if (loaded)
    return 0;
  void *h = dlopen (SBX_LIBARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "cannot load %s (install libarchive13): %s", SBX_LIBARCHIVE_SONAME,
                          dlerror ());
#define X(f)                                                 \
  if ((sbx_ar.f = (__typeof__ (f) *) dlsym (h, #f)) == NULL) \
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s lacks %s", SBX_LIBARCHIVE_SONAME, #f);
  SBX_ARCHIVE_FUNCS (X)
#undef X
  loaded = true;
  return 0;
}

int
sbx_archive_read_filters (struct archive *a, sbx_error **err)
{
  const struct {
    const char *name;
    int (*fn) (struct archive *);
  } filters[] = {
    { "gzip", sbx_ar.archive_read_support_filter_gzip },
    { "xz", sbx_ar.archive_read_support_filter_xz },
    { "zstd", sbx_ar.archive_read_support_filter_zstd },
  };
  for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
    if (filters[i].fn (a) != ARCHIVE_OK)
      return sbx_error_set (err, SBX_E_INTERNAL, 0, "libarchive has no built-in %s support", filters[i].name);
  return 0;
}

static bool
errno_is_resource (int e)
{
  return e == ENOSPC || e == EDQUOT || e == EIO || e == ENOMEM || e == EROFS || e == EMFILE || e == ENFILE;
}

int
sbx_archive_fail (sbx_error **err, struct archive *a, const char *what)
{
  int e = sbx_ar.archive_errno (a);
  const char *msg = sbx_ar.archive_error_string (a);
  if (e > 0 && errno_is_resource (e))
    return sbx_error_set (err, SBX_E_INTERNAL, e, "%s", what);
  /* libarchive's messages quote entry names: control bytes become '?'. */
  char clean[600];
  snprintf (clean, sizeof clean, "%s", msg ? msg : "archive error");
  for (char *p = clean; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      *p = '?';
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: %s", what, clean);
}
