/* SHA-256 (FIPS 180-4), our own: content addresses for layers and images,
 * build cache keys. Streaming (init, update, final) so a layer of gigabytes is
 * hashed as it flows through; on x86-64 CPUs with the SHA extensions the block
 * function uses them, otherwise a portable one. */
#ifndef SBX_SHA256_H
#define SBX_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_BLOCK_SIZE 64

typedef struct sha256_ctx {
  uint32_t state[8];
  uint64_t nbytes; /* total bytes fed so far */
  uint8_t buf[SHA256_BLOCK_SIZE];
  size_t buflen;
} sha256_ctx;

void sha256_init (sha256_ctx *c);
void sha256_update (sha256_ctx *c, const void *data, size_t len);
/* Writes the digest; C must be initialised again before reuse. */
void sha256_final (sha256_ctx *c, uint8_t out[SHA256_DIGEST_SIZE]);
/* sha256_final as 64 lowercase hex digits and a NUL. */
void sha256_ctx_hex_final (sha256_ctx *c, char out[65]);
/* One shot: the lowercase hex digest of DATA. */
void sha256_hex (const void *data, size_t len, char out[65]);

/* For tests: force the portable block function even where the CPU has the
 * SHA extensions, so both paths can be checked on one machine. */
void sha256_force_generic (bool on);

#endif
