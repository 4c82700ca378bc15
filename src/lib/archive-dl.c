/* Loading libarchive on first use (see archive-dl.h). */
#include "config.h"
#include "archive-dl.h"

#include <dlfcn.h>
#include <stdbool.h>

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
#define X(f)                                                                                                           \
  if ((sbx_ar.f = (__typeof__ (f) *) dlsym (h, #f)) == NULL)                                                           \
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s lacks %s", SBX_LIBARCHIVE_SONAME, #f);
  SBX_ARCHIVE_FUNCS (X)
#undef X
  loaded = true;
  return 0;
}
