/* sbx commit: a sandbox's files (its image's layers plus one layer of what
 * it wrote) stored as a new image. */
#ifndef SBX_COMMIT_H
#define SBX_COMMIT_H

#include "error.h"
#include "image.h"
#include "store.h"

/* Commits sandbox ID, running (synced and paused while its layer is read,
 * then resumed) or ended (BUSY while it is being created or ending), as a
 * new image tagged TAG (may be NULL; INVALID_ARGUMENT when not a valid name,
 * checked before anything else). *ret_img: the stored image; *ret_layer:
 * the digest of the layer of what the sandbox wrote. */
int sbx_commit (const sbx_store *st, const char *id, const char *tag, sbx_image **ret_img, char **ret_layer,
                sbx_error **err);

#endif
