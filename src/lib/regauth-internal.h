/* The auth file reader of regauth.c, apart from the files it is found in:
 * for the unit test and the fuzzer. */
#ifndef SBX_REGAUTH_INTERNAL_H
#define SBX_REGAUTH_INTERNAL_H

#include <stddef.h>

#include "regauth.h"

/* Parses TEXT (LEN bytes, the auth file NAME, used in messages) and finds
 * the entry for REGISTRY and REPOSITORY (may be NULL) as sbx_auth_lookup
 * does in one file: *RET NULL when the file has none. A file that does not
 * parse, or whose entries break the format, is INVALID_ARGUMENT naming NAME
 * (and the key), never the content. */
int sbx_auth_parse (const char *name, const char *text, size_t len, const char *registry, const char *repository,
                    sbx_cred **ret, sbx_error **err);

/* Decodes standard base64 (padding required, no whitespace) into a
 * NUL-terminated buffer: -EINVAL when S is not base64. */
int sbx_base64_decode (const char *s, size_t n, char **ret, size_t *ret_len);

#endif
