/* Errors: one convention for the whole library.
 *
 * A fallible function returns a negative value and fills *err with a stable
 * code (DESIGN.md section 1), the errno that caused it (or 0) and a message.
 * Callers add context with sbx_error_wrap(); library code never prints, only
 * main turns an error into a message and an exit status. */
#ifndef SBX_ERROR_H
#define SBX_ERROR_H

#include <stdarg.h>
#include <stddef.h>

typedef enum sbx_code {
  SBX_OK = 0,
  SBX_E_INVALID_ARGUMENT,
  SBX_E_NOT_FOUND,
  SBX_E_SANDBOX_NOT_RUNNING,
  SBX_E_RUNTIME_UNAVAILABLE,
  SBX_E_NETWORK_BLOCK_UNAVAILABLE,
  SBX_E_PATH_INVALID,
  SBX_E_SECRETS_NOT_ALLOWED,
  SBX_E_POLICY_REFUSED,
  SBX_E_TIMEOUT,
  SBX_E_BUSY,
  SBX_E_RESOURCE_EXHAUSTED,
  SBX_E_INTERNAL,
  SBX_E_PERMISSION_DENIED,
  SBX_E__MAX
} sbx_code;

typedef struct sbx_error {
  sbx_code code;
  int errnum;
  char *msg;
} sbx_error;

const char *sbx_code_name (sbx_code code);
/* Returns SBX_E__MAX when NAME is not a code. */
sbx_code sbx_code_from_name (const char *name);

/* Each returns -1 (or -errnum when errnum is set) so that callers can write
 * `return sbx_error_set (err, ...)`. A NULL err is allowed and discards. */
int sbx_error_set (sbx_error **err, sbx_code code, int errnum, const char *fmt, ...)
    __attribute__ ((format (printf, 4, 5)));
int sbx_error_setv (sbx_error **err, sbx_code code, int errnum, const char *fmt, va_list ap)
    __attribute__ ((format (printf, 4, 0)));
/* Shorthand: INTERNAL with errno. */
#define sbx_error_errno(err, errnum, ...) sbx_error_set ((err), SBX_E_INTERNAL, (errnum), __VA_ARGS__)
/* Prepends "CONTEXT: " to the message of *err; returns -1. */
int sbx_error_wrap (sbx_error **err, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
void sbx_error_free (sbx_error *e);
/* The full message: "msg: strerror(errnum)" when errnum is set. Caller frees. */
char *sbx_error_text (const sbx_error *e);

#define _cleanup_error_ __attribute__ ((cleanup (sbx_error_freep)))
static inline void
sbx_error_freep (sbx_error **e)
{
  sbx_error_free (*e);
  *e = NULL;
}

#endif
