/* The one openat2(2) wrapper. Every path sbx resolves inside a tree it does
 * not trust (a sandbox's root, a build context, an image layout, a layer
 * being extracted) goes through here, so the retry policy and the flags
 * added to every open are written once and tested once (test-openat). */
#ifndef SBX_OPENAT_H
#define SBX_OPENAT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/openat2.h>

/* How many times a lookup that raced with a rename (EAGAIN) or met a signal
 * (EINTR) is tried again before EAGAIN is given up to the caller. */
#define SBX_OPENAT2_RETRIES 64

/* openat2 (DIRFD, PATH, FLAGS | O_CLOEXEC, MODE, RESOLVE): the new fd, or -1
 * with errno set (ENOSYS where the kernel has no openat2, Linux < 5.6;
 * EAGAIN when every try raced with a rename). MODE is used only with
 * O_CREAT or O_TMPFILE, as open(2) does. */
int sbx_openat2 (int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve);

/* Whether this kernel has openat2 with RESOLVE_IN_ROOT (asked once). */
bool sbx_have_openat2 (void);

#endif
