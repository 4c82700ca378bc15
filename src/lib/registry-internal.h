/* What registry.c parses from a registry's answers, apart so that the unit
 * tests and the fuzzer reach it: the WWW-Authenticate challenge of a 401
 * (RFC 7235: SCHEME param=value, param="quoted \"string\"", ...; several
 * challenges in one header). */
#ifndef SBX_REGISTRY_INTERNAL_H
#define SBX_REGISTRY_INTERNAL_H

#include <stddef.h>

#include "error.h"

#define SBX_WWW_AUTH_MAX 8192       /* the header value */
#define SBX_WWW_AUTH_PARAM_MAX 2048 /* one parameter's value */

typedef enum sbx_www_scheme {
  SBX_WWW_BEARER = 1,
  SBX_WWW_BASIC,
} sbx_www_scheme;

typedef struct sbx_www_auth {
  sbx_www_scheme scheme;
  char *realm; /* printable ASCII; NULL when absent (Basic may omit it) */
  char *service;
  char *scope;
} sbx_www_auth;

/* The challenge of VALUE (LEN bytes) sbx answers: the first Bearer one,
 * else the first Basic one. INVALID_ARGUMENT for a header that does not
 * parse, a value with control bytes or over the bounds, a parameter given
 * twice, a Bearer challenge without realm, or neither scheme offered
 * (naming what was offered). */
int sbx_www_auth_parse (const char *value, size_t len, sbx_www_auth **ret, sbx_error **err);
void sbx_www_auth_free (sbx_www_auth *a);
static inline void
sbx_www_auth_freep (sbx_www_auth **a)
{
  sbx_www_auth_free (*a);
}
#define _cleanup_www_auth_ __attribute__ ((cleanup (sbx_www_auth_freep)))

#endif
