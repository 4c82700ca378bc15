/* The error convention: stable codes, errno, messages with context. */
#include "config.h"
#include "error.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const code_names[SBX_E__MAX] = {
  [SBX_OK] = "OK",
  [SBX_E_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
  [SBX_E_NOT_FOUND] = "NOT_FOUND",
  [SBX_E_SANDBOX_NOT_RUNNING] = "SANDBOX_NOT_RUNNING",
  [SBX_E_RUNTIME_UNAVAILABLE] = "RUNTIME_UNAVAILABLE",
  [SBX_E_NETWORK_BLOCK_UNAVAILABLE] = "NETWORK_BLOCK_UNAVAILABLE",
  [SBX_E_PATH_INVALID] = "PATH_INVALID",
  [SBX_E_SECRETS_NOT_ALLOWED] = "SECRETS_NOT_ALLOWED",
  [SBX_E_POLICY_REFUSED] = "POLICY_REFUSED",
  [SBX_E_TIMEOUT] = "TIMEOUT",
  [SBX_E_BUSY] = "BUSY",
  [SBX_E_RESOURCE_EXHAUSTED] = "RESOURCE_EXHAUSTED",
  [SBX_E_INTERNAL] = "INTERNAL",
  [SBX_E_PERMISSION_DENIED] = "PERMISSION_DENIED",
};

const char *
sbx_code_name (sbx_code code)
{
  if (code < 0 || code >= SBX_E__MAX)
    return "INTERNAL";
  return code_names[code];
}

sbx_code
sbx_code_from_name (const char *name)
{
  for (int i = 0; i < SBX_E__MAX; i++)
    if (name && strcmp (code_names[i], name) == 0)
      return (sbx_code) i;
  return SBX_E__MAX;
}

int
sbx_error_setv (sbx_error **err, sbx_code code, int errnum, const char *fmt, va_list ap)
{
  if (err)
    {
      sbx_error *e = xmalloc0 (sizeof *e);
      e->code = code;
      e->errnum = errnum;
      if (vasprintf (&e->msg, fmt, ap) < 0)
        abort ();
      sbx_error_free (*err);
      *err = e;
    }
  return errnum > 0 ? -errnum : -1;
}

int
sbx_error_set (sbx_error **err, sbx_code code, int errnum, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  int r = sbx_error_setv (err, code, errnum, fmt, ap);
  va_end (ap);
  return r;
}

int
sbx_error_wrap (sbx_error **err, const char *fmt, ...)
{
  if (err == NULL || *err == NULL)
    return -1;
  char *ctx = NULL, *msg = NULL;
  va_list ap;
  va_start (ap, fmt);
  if (vasprintf (&ctx, fmt, ap) < 0)
    abort ();
  va_end (ap);
  if (asprintf (&msg, "%s: %s", ctx, (*err)->msg) < 0)
    abort ();
  free (ctx);
  free ((*err)->msg);
  (*err)->msg = msg;
  return -1;
}

void
sbx_error_free (sbx_error *e)
{
  if (e == NULL)
    return;
  free (e->msg);
  free (e);
}

char *
sbx_error_text (const sbx_error *e)
{
  char *s = NULL;
  if (e->errnum > 0)
    {
      if (asprintf (&s, "%s: %s", e->msg, strerror (e->errnum)) < 0)
        abort ();
    }
  else
    s = xstrdup (e->msg);
  return s;
}
