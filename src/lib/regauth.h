/* Registry credentials (sbx-pull(1): login, logout). `sbx login` writes
 * ROOT/auth.json, mode 0600, in the containers-auth.json(5) format
 * ({"auths": {"REGISTRY": {"auth": base64("USER:PASSWORD")}}}), atomically
 * (a temp file renamed). Lookups read, and never write, in this order:
 * ROOT/auth.json, $REGISTRY_AUTH_FILE, ${XDG_RUNTIME_DIR}/containers/auth.json,
 * ~/.docker/config.json ($HOME's); the first file that has the registry wins.
 * A key may be a host ("localhost:5000"), a host with a repository prefix
 * (the longest matching prefix wins) or an https:// URL as docker writes them.
 * docker's credential helpers ("credsStore", "credHelpers") are not run.
 * Credentials never appear in argv, logs, state, errors or --json output:
 * messages name the registry and the file, never the user or secret. */
#ifndef SBX_REGAUTH_H
#define SBX_REGAUTH_H

#include <stdbool.h>

#include "error.h"

#define SBX_AUTH_FILE_MAX (1024 * 1024)
#define SBX_AUTH_FIELD_MAX 4096 /* user name, password or token */

typedef struct sbx_cred {
  char *username;
  char *password; /* or an identity token */
} sbx_cred;

/* *RET NULL (and 0) when no file has credentials for REGISTRY (a registry
 * host, "HOST[:PORT]") and REPOSITORY (may be NULL). A file that exists but
 * does not parse is INVALID_ARGUMENT naming the file. */
int sbx_auth_lookup (const char *root, const char *registry, const char *repository, sbx_cred **ret, sbx_error **err);

/* Stores USERNAME and PASSWORD for REGISTRY in ROOT/auth.json (replacing an
 * entry). Both are checked for length and control characters
 * (INVALID_ARGUMENT without echoing them). */
int sbx_auth_store (const char *root, const char *registry, const char *username, const char *password,
                    sbx_error **err);

/* Removes REGISTRY's entry from ROOT/auth.json; NOT_FOUND when there is
 * none there (entries in the other files are never touched). ALL: every
 * entry (REGISTRY ignored). */
int sbx_auth_remove (const char *root, const char *registry, bool all, sbx_error **err);

/* Wipes and frees. */
void sbx_cred_free (sbx_cred *c);
static inline void
sbx_cred_freep (sbx_cred **c)
{
  sbx_cred_free (*c);
}
#define _cleanup_cred_ __attribute__ ((cleanup (sbx_cred_freep)))

#endif
