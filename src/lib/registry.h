/* The HTTP side of registries (the OCI distribution spec), over libcurl:
 * TLS verified with the system's CA store plus certs.d (sbx.conf
 * registry_certs_dir, default /etc/sbx/certs.d: HOST[:PORT]/ *.crt), plain
 * HTTP or unverified TLS only for registries sbx.conf names insecure,
 * mirrors tried before the registry itself for pulls, HTTPS_PROXY and
 * NO_PROXY as libcurl reads them, redirects (to blob storage) followed up
 * to SBX_REGISTRY_REDIRECTS_MAX, the anonymous and credentialed bearer-token
 * dance (WWW-Authenticate: Bearer realm=,service=,scope=) and basic auth
 * with the credentials regauth.h finds. A transfer that moves fewer than
 * SBX_REGISTRY_STALL_RATE bytes a second for sbx.conf's registry_stall_timeout
 * seconds is TIMEOUT.
 *
 * Errors: NOT_FOUND for a repository, tag or blob that is not there;
 * PERMISSION_DENIED for 401/403 with the credentials there are (or none),
 * and for a certificate that does not verify; INVALID_ARGUMENT for an
 * answer that breaks the protocol (a 401 with no usable realm, a redirect
 * loop, a body larger than its bound or than announced, a wrong digest);
 * TIMEOUT for a stall; INTERNAL (with errno where there is one) for a
 * registry that cannot be reached. Messages name the registry and the
 * request, never a credential or token. */
#ifndef SBX_REGISTRY_H
#define SBX_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "error.h"
#include "imageref.h"

#define SBX_REGISTRY_REDIRECTS_MAX 10
/* A transfer slower than this (bytes a second) for sbx.conf's
 * registry_stall_timeout seconds has stalled: a server that drips a byte at a
 * time is as stuck as one that sends nothing. */
#define SBX_REGISTRY_STALL_RATE 1024
#define SBX_REGISTRY_MANIFEST_MAX (4 * 1024 * 1024) /* a manifest or index; a config blob too */

typedef struct sbx_registry sbx_registry;

/* A session with REF's registry for REF's repository; PUSH: the token asks
 * for "pull,push" and mirrors are not used. Nothing is sent yet. */
int sbx_registry_open (const char *root, const sbx_conf *conf, const sbx_imageref *ref, bool push, sbx_registry **ret,
                       sbx_error **err);
void sbx_registry_free (sbx_registry *r);
static inline void
sbx_registry_freep (sbx_registry **r)
{
  sbx_registry_free (*r);
}
#define _cleanup_registry_ __attribute__ ((cleanup (sbx_registry_freep)))

/* GET /v2/ on REGISTRY ("HOST[:PORT]") with CRED (basic auth, or through
 * the bearer realm the registry names): what `sbx login` checks before it
 * stores anything. 0 when accepted; PERMISSION_DENIED when not. */
struct sbx_cred;
int sbx_registry_ping (const char *root, const sbx_conf *conf, const char *registry, const struct sbx_cred *cred,
                       sbx_error **err);

/* GET /v2/NAME/manifests/REFERENCE (a tag or a digest), accepting the OCI
 * and Docker v2 schema 2 manifest and index media types. *ret_body is
 * NUL-terminated, at most SBX_REGISTRY_MANIFEST_MAX (RESOURCE_EXHAUSTED past
 * it); *ret_media_type is the Content-Type; *ret_digest is "sha256:HEX" of
 * the body, checked against REFERENCE when that is a digest. */
int sbx_registry_get_manifest (sbx_registry *r, const char *reference, char **ret_body, size_t *ret_len,
                               char **ret_media_type, char **ret_digest, sbx_error **err);

/* Called as bytes arrive; a non-zero return cancels the transfer
 * (INTERNAL, ECANCELED). */
typedef int (*sbx_registry_progress_fn) (void *ud, uint64_t done, uint64_t total);

/* GET /v2/NAME/blobs/DIGEST into OUTFD (a pipe or a file), bytes OFFSET to
 * SIZE (a Range request when OFFSET > 0; a transfer cut short is resumed
 * with Range from where it stopped, up to 3 times). More or fewer bytes
 * than SIZE is INVALID_ARGUMENT. The caller hashes what it reads. */
int sbx_registry_get_blob (sbx_registry *r, const char *digest, uint64_t size, uint64_t offset, int outfd,
                           sbx_registry_progress_fn fn, void *ud, sbx_error **err);
/* The same into memory, bounded by SBX_REGISTRY_MANIFEST_MAX and checked
 * against DIGEST (an image config). */
int sbx_registry_get_small_blob (sbx_registry *r, const char *digest, uint64_t size, char **ret_body, size_t *ret_len,
                                 sbx_error **err);

/* HEAD /v2/NAME/blobs/DIGEST. */
int sbx_registry_blob_exists (sbx_registry *r, const char *digest, bool *ret, sbx_error **err);
/* Uploads SIZE bytes read from FD as blob DIGEST (POST then PUT ?digest=,
 * monolithic). */
int sbx_registry_put_blob (sbx_registry *r, const char *digest, uint64_t size, int fd, sbx_registry_progress_fn fn,
                           void *ud, sbx_error **err);
/* PUT /v2/NAME/manifests/REFERENCE with MEDIA_TYPE. */
int sbx_registry_put_manifest (sbx_registry *r, const char *reference, const char *media_type, const char *body,
                               size_t len, sbx_error **err);

#endif
