/* libcurl, loaded when first needed (as libarchive is: archive-dl.h).
 *
 * Only pull, push and login talk to registries; linked, libcurl and what it
 * links (OpenSSL, nghttp2, libssh2, LDAP, Kerberos...) would be loaded and
 * bound by every command, `sbx exec` included. The registry transport loads
 * it with dlopen on first use and calls it through this table; the headers
 * still type-check every call (curl's setopt type-check macros are off, as
 * they cannot wrap a call through a pointer). */
#ifndef SBX_CURL_DL_H
#define SBX_CURL_DL_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include "error.h"

#define SBX_CURL_FUNCS(X) \
  X (curl_easy_cleanup)   \
  X (curl_easy_escape)    \
  X (curl_easy_getinfo)   \
  X (curl_easy_init)      \
  X (curl_easy_perform)   \
  X (curl_easy_setopt)    \
  X (curl_easy_strerror)  \
  X (curl_free)           \
  X (curl_global_init)    \
  X (curl_share_cleanup)  \
  X (curl_share_init)     \
  X (curl_share_setopt)   \
  X (curl_slist_append)   \
  X (curl_slist_free_all)

struct sbx_curl_api {
#define X(f) __typeof__ (f) *f;
  SBX_CURL_FUNCS (X)
#undef X
};

extern struct sbx_curl_api sbx_curl;

/* Loads libcurl once and runs curl_global_init; INTERNAL naming the package
 * when it is missing. Safe to call from several threads. */
int sbx_curl_load (sbx_error **err);

#endif
