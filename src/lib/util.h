/* Small helpers every room uses: allocation that aborts on OOM, cleanup
 * attributes, atomic file writes, locks, strict number parsing, names. */
#ifndef SBX_UTIL_H
#define SBX_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"

#define SBX_NAME_MAX 64

/* The PATH a process gets when its image or its caller names none: the
 * Debian/OCI default (what runc, podman and the OCI image spec use). */
#define SBX_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

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
/* A pipe (or socketpair) made by pipe2 into P: both ends closed that are
 * still open (>= 0). Initialize with SBX_PIPE_INIT so that a failed pipe2
 * or an early return closes nothing that is not ours. */
#define SBX_PIPE_INIT \
  {                   \
    -1, -1            \
  }
static inline void
pipe_close (int p[2])
{
  for (int i = 0; i < 2; i++)
    if (p[i] >= 0)
      {
        close (p[i]);
        p[i] = -1;
      }
}
static inline void
pipe_closep (int (*p)[2])
{
  pipe_close (*p);
}
/* A child that must not outlive the scope: killed (SIGKILL) and reaped
 * unless disarmed with steal_pid() once it has been waited for. */
static inline void
pid_killp (pid_t *pid)
{
  if (*pid <= 0)
    return;
  int e = errno;
  kill (*pid, SIGKILL);
  while (waitpid (*pid, NULL, 0) < 0 && errno == EINTR)
    ;
  *pid = -1;
  errno = e;
}

#define _cleanup_free_ __attribute__ ((cleanup (freep)))
#define _cleanup_closedir_ __attribute__ ((cleanup (closedirp)))
#define _cleanup_close_ __attribute__ ((cleanup (closep)))
#define _cleanup_fclose_ __attribute__ ((cleanup (fclosep)))
#define _cleanup_strv_ __attribute__ ((cleanup (strv_freep)))
#define _cleanup_pipe_ __attribute__ ((cleanup (pipe_closep)))
#define _cleanup_pid_ __attribute__ ((cleanup (pid_killp)))

#define steal_pointer(pp)          \
  ({                               \
    __typeof__ (*(pp)) _p = *(pp); \
    *(pp) = NULL;                  \
    _p;                            \
  })
#define steal_fd(fdp) \
  ({                  \
    int _fd = *(fdp); \
    *(fdp) = -1;      \
    _fd;              \
  })
#define steal_pid(pidp)   \
  ({                      \
    pid_t _pid = *(pidp); \
    *(pidp) = -1;         \
    _pid;                 \
  })
#define ARRAY_SIZE(a) (sizeof (a) / sizeof ((a)[0]))

/* A growable NULL-terminated string vector. */
size_t strv_len (char *const *v);
void strv_push (char ***v, const char *s); /* copies s */
char **strv_dup (char *const *v);

/* Environment lists (NULL-terminated KEY=VALUE strv): ENTRY (KEY=VALUE,
 * copied) replaces the entry of the same KEY or is appended, so that later
 * entries win; the value of KEY, or NULL. */
void strv_env_set (char ***env, const char *entry);
const char *strv_env_get (char *const *env, const char *key);

/* Writes DATA atomically: temp file in the same directory, fsync, rename. */
int write_file_atomic (const char *path, const void *data, size_t len, mode_t mode, sbx_error **err);
int write_file_atomic_at (int dirfd, const char *name, const void *data, size_t len, mode_t mode, sbx_error **err);
/* The same without fsync: atomic replacement (readers see the old or the
 * new content, never a mix), not durability. For state that dies with a
 * crash anyway (a sandbox's state.json). */
int write_file_replace (const char *path, const void *data, size_t len, mode_t mode, sbx_error **err);
/* Reads FD to its end, NUL-terminated: 0, -EFBIG when there is more than
 * MAX bytes, or the -errno of the read. */
int read_fd (int fd, size_t max, char **ret_data, size_t *ret_len);
/* Reads a whole file, refusing files larger than MAX. NUL-terminates. */
int read_file (const char *path, size_t max, char **ret_data, size_t *ret_len, sbx_error **err);
int read_file_at (int dirfd, const char *name, size_t max, char **ret_data, size_t *ret_len, sbx_error **err);
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

/* Untrusted text and messages. Three meanings, one name each:
 * printable_token: S is 1 to MAX bytes of visible ASCII (no space, no
 * control byte), fit to pass on as it is (a header value, an address);
 * printable_masked: S fit for a message, control bytes as '?', cut after
 * MAX bytes with "..."; IF_NULL (copied) when S is NULL;
 * printable_escaped: the same, a tab as \t and the other control bytes as
 * \xNN, so the message shows what was there. */
bool printable_token (const char *s, size_t max);
char *printable_masked (const char *s, size_t max, const char *if_null);
char *printable_escaped (const char *s, size_t max);

/* Closes every fd >= 3 not in KEEP (KEEP has n entries), whatever their
 * number: close_range(2) between the kept ones where the kernel has it,
 * else every fd /proc/self/fd lists, else every fd below the hard
 * RLIMIT_NOFILE. Allocates nothing: safe in a child forked from a threaded
 * process. 0, or -errno when some fd may be left open. */
int close_fds_except (const int *keep, size_t n);
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
