/* Registry credentials: see regauth.h. SCAFFOLD: the lookup finds nothing
 * yet and login/logout are not implemented; the regauth branch replaces
 * this file. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "regauth.h"

int
sbx_auth_lookup (const char *root, const char *registry, const char *repository, sbx_cred **ret, sbx_error **err)
{
  (void) root, (void) registry, (void) repository, (void) err;
  *ret = NULL;
  return 0;
}

int
sbx_auth_store (const char *root, const char *registry, const char *username, const char *password,
                sbx_error **err)
{
  (void) root, (void) registry, (void) username, (void) password;
  return sbx_error_set (err, SBX_E_INTERNAL, 0, "login: not implemented yet");
}

int
sbx_auth_remove (const char *root, const char *registry, bool all, sbx_error **err)
{
  (void) root, (void) registry, (void) all;
  return sbx_error_set (err, SBX_E_INTERNAL, 0, "logout: not implemented yet");
}

void
sbx_cred_free (sbx_cred *c)
{
  if (c == NULL)
    return;
  if (c->password)
    explicit_bzero (c->password, strlen (c->password));
  free (c->username);
  free (c->password);
  free (c);
}
