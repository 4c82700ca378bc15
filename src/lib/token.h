/* The host token: the bearer token an exposed port asks of its clients
 * unless the sandbox's ports are public (proxy.h). */
#ifndef SBX_TOKEN_H
#define SBX_TOKEN_H

#include "error.h"

/* The host token at PATH: created (32 random bytes, hex, 0600, atomically:
 * temp file + link so concurrent first callers agree on one token) if
 * missing; POLICY_REFUSED if it is not a regular file owned by root with
 * mode 0600, INVALID_ARGUMENT if its content is not a token. */
int sbx_token_load (const char *path, char **ret_token, sbx_error **err);

#endif
