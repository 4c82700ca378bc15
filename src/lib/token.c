/* The host token file (see token.h): read strictly, created atomically
 * when missing. */
#include "config.h"
#include "token.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOKEN_MAX 512

/* --- the host token ---------------------------------------------------- */

/* RFC 6750 b64token: what may follow `Bearer `. */
static bool
token_valid (const char *s, size_t n)
{
  size_t i = 0;
  while (i < n && s[i] != '\0'
         && (strchr ("-._~+/", s[i]) || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')
             || (s[i] >= '0' && s[i] <= '9')))
    i++;
  if (i == 0)
    return false;
  while (i < n && s[i] == '=')
    i++;
  return i == n;
}

static int
token_read (int fd, const char *path, char **ret_token, sbx_error **err)
{
  struct stat st;
  if (fstat (fd, &st) < 0)
    return sbx_error_errno (err, errno, "stat `%s`", path);
  if (!S_ISREG (st.st_mode) || st.st_uid != 0 || (st.st_mode & 07777) != 0600)
    return sbx_error_set (err, SBX_E_POLICY_REFUSED, 0,
                          "token file `%s` must be a regular file owned by root with mode 0600", path);
  _cleanup_free_ char *buf = xmalloc (TOKEN_MAX + 2);
  ssize_t n = read_all (fd, buf, TOKEN_MAX + 2);
  if (n < 0)
    return sbx_error_errno (err, (int) -n, "read `%s`", path);
  if (n > 0 && buf[n - 1] == '\n')
    n--;
  if (n > TOKEN_MAX || !token_valid (buf, (size_t) n))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "token file `%s` does not hold a token", path);
  buf[n] = '\0';
  *ret_token = steal_pointer (&buf);
  return 0;
}

/* A whole new token file at PATH, or the one a concurrent caller linked
 * first: link(2), unlike rename, never replaces. */
static int
token_create (const char *path, sbx_error **err)
{
  _cleanup_free_ char *rnd = random_hex (8);
  _cleanup_free_ char *tmp = xasprintf ("%s.tmp.%d.%s", path, (int) getpid (), rnd);
  _cleanup_free_ char *token = random_hex (32);
  _cleanup_free_ char *line = xasprintf ("%s\n", token);
  _cleanup_close_ int fd = open (tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return sbx_error_errno (err, errno, "create `%s`", tmp);
  int r = fchmod (fd, 0600) < 0 ? -errno : write_all (fd, line, strlen (line));
  if (r == 0 && fsync (fd) < 0)
    r = -errno;
  if (r == 0 && link (tmp, path) < 0 && errno != EEXIST)
    r = -errno;
  unlink (tmp);
  if (r < 0)
    return sbx_error_errno (err, -r, "create token file `%s`", path);
  return 0;
}

int
sbx_token_load (const char *path, char **ret_token, sbx_error **err)
{
  for (int attempt = 0; attempt < 3; attempt++)
    {
      _cleanup_close_ int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
      if (fd >= 0)
        return token_read (fd, path, ret_token, err);
      if (errno == ELOOP)
        return sbx_error_set (err, SBX_E_POLICY_REFUSED, 0, "token file `%s` is a symbolic link", path);
      if (errno != ENOENT)
        return sbx_error_errno (err, errno, "open `%s`", path);
      if (token_create (path, err) < 0)
        return -1;
    }
  return sbx_error_set (err, SBX_E_BUSY, 0, "token file `%s` keeps disappearing", path);
}
