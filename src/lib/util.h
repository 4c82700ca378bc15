/* Small helpers every room uses: allocation that aborts on OOM, cleanup
 * attributes, atomic file writes, locks, strict number parsing, names. */
#ifndef SBX_UTIL_H
#define SBX_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include "error.h"

#define SBX_NAME_MAX 64

void *xmalloc (size_t n);
void *xmalloc0 (size_t n);
void *xrealloc (void *p, size_t n);
char *xstrdup (const char *s);
char *xstrndup (const char *s, size_t n);
char *xasprintf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

static inline void
freep (void *p)
{
  free (*(void **) p);
}
static inline void
closep (int *fd)
{
  if (*fd >= 0)
    close (*fd);
  *fd = -1;
}
static inline void
closedirp (DIR **d)
{
  if (*d)
    closedir (*d);
}
static inline void
fclosep (FILE **f)
{
  if (*f)
    fclose (*f);
}
void strv_free (char **v);
static inline void
strv_freep (char ***v)
{
  strv_free (*v);
}

#define _cleanup_free_ __attribute__ ((cleanup (freep)))
#define _cleanup_closedir_ __attribute__ ((cleanup (closedirp)))
#define _cleanup_close_ __attribute__ ((cleanup (closep)))
#define _cleanup_fclose_ __attribute__ ((cleanup (fclosep)))
#define _cleanup_strv_ __attribute__ ((cleanup (strv_freep)))

#define steal_pointer(pp) ({ __typeof__ (*(pp)) _p = *(pp); *(pp) = NULL; _p; })
#define steal_fd(fdp) ({ int _fd = *(fdp); *(fdp) = -1; _fd; })
#define ARRAY_SIZE(a) (sizeof (a) / sizeof ((a)[0]))

/* A growable NULL-terminated string vector. */
size_t strv_len (char *const *v);
void strv_push (char ***v, const char *s); /* copies s */
char **strv_dup (char *const *v);

/* Writes DATA atomically: temp file in the same directory, fsync, rename. */
int write_file_atomic (const char *path, const void *data, size_t len, mode_t mode, sbx_error **err);
int write_file_atomic_at (int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                          sbx_error **err);
/* The same without fsync: atomic replacement (readers see the old or the
 * new content, never a mix), not durability. For state that dies with a
 * crash anyway (a sandbox's state.json). */
int write_file_replace (const char *path, const void *data, size_t len, mode_t mode, sbx_error **err);
/* Reads a whole file, refusing files larger than MAX. NUL-terminates. */
int read_file (const char *path, size_t max, char **ret_data, size_t *ret_len, sbx_error **err);
int read_file_at (int dirfd, const char *name, size_t max, char **ret_data, size_t *ret_len,
                  sbx_error **err);
/* pthread_create with every signal blocked in the new thread, so that signals
 * stay with the caller's threads (signalfd, sigtimedwait). pthread_create's
 * result. */
int thread_start_quiet (pthread_t *t, void *(*fn) (void *), void *arg);

int write_all (int fd, const void *buf, size_t len);
ssize_t read_all (int fd, void *buf, size_t len);
int mkdir_p (const char *path, mode_t mode, sbx_error **err);
/* rm -rf that never crosses mount points and never follows symlinks. */
int rm_rf_at (int dirfd, const char *name, sbx_error **err);
int rm_rf (const char *path, sbx_error **err);

/* flock on PATH (created if needed); returns the fd holding the lock.
 * With nonblock, a held lock gives -EWOULDBLOCK and BUSY. */
int lock_path (const char *path, int op, sbx_error **err);

/* Strict parsers: the whole string must be consumed, no sign surprises. */
int parse_int64 (const char *s, int64_t min, int64_t max, int64_t *ret);
int parse_double (const char *s, double min, double max, double *ret);
/* "512" (MiB), binary "1024Ki" "512Mi" "1Gi" "1Ti", decimal "1K" "256M" "1G" "1T" -> bytes. */
int parse_memory (const char *s, uint64_t *ret_bytes);

/* [A-Za-z0-9][A-Za-z0-9_.+-]*, at most SBX_NAME_MAX. */
bool name_is_valid (const char *s);
/* KEY=VALUE with KEY a valid environment name. */
bool env_entry_is_valid (const char *s);

/* Closes every fd >= 3 not in KEEP (KEEP has n entries). With none to
 * keep it allocates nothing: safe in a child forked from a threaded
 * process. */
void close_fds_except (const int *keep, size_t n);
int set_cloexec (int fd, bool on);
int set_nonblock (int fd, bool on);

/* Socket buffers that hold a few whole frames (best effort). */
void sock_buffers (int fd);

uint64_t now_ms_monotonic (void);
int64_t now_unix (void);
/* RFC 3339 UTC time for T (seconds). Returns a static-free buffer in BUF. */
void format_time (int64_t t, char *buf, size_t len);

bool path_exists (const char *p);
/* Lowercase hex of N random bytes from getrandom. */
char *random_hex (size_t nbytes);

/* UTF-8 (RFC 3629: no overlongs, no surrogates): the length of the valid
 * character at S (N bytes left), 0 when invalid. */
size_t utf8_char_len (const unsigned char *s, size_t n);
bool utf8_valid (const char *s, size_t n);
char *hex_encode (const void *data, size_t n);
/* -EINVAL unless S is an even count of hex digits. */
int hex_decode (const char *s, char **ret, size_t *ret_len);
char *base64_encode (const void *data, size_t n);

#endif
