/* Loading libcurl on first use: see curl-dl.h. */
#include "config.h"
#include "curl-dl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

struct sbx_curl_api sbx_curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[512]; /* empty when loaded */

static void
load (void)
{
  void *h = dlopen (SBX_LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    {
      snprintf (load_error, sizeof load_error, "cannot load %s (install libcurl4): %s", SBX_LIBCURL_SONAME, dlerror ());
      return;
    }
#define X(f)                                                                           \
  if ((sbx_curl.f = (__typeof__ (f) *) dlsym (h, #f)) == NULL)                         \
    {                                                                                  \
      snprintf (load_error, sizeof load_error, "%s lacks %s", SBX_LIBCURL_SONAME, #f); \
      return;                                                                          \
    }
  SBX_CURL_FUNCS (X)
#undef X
  CURLcode rc = sbx_curl.curl_global_init (CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK)
    snprintf (load_error, sizeof load_error, "libcurl: %s", sbx_curl.curl_easy_strerror (rc));
}

int
sbx_curl_load (sbx_error **err)
{
  pthread_once (&load_once, load);
  if (load_error[0])
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s", load_error);
  return 0;
}
