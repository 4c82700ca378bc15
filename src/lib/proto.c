/* The agent protocol's wire format: frame headers, frame reassembly from a
 * byte stream or an fd, whole-frame writes, and the EXEC and EXIT payloads.
 * Shared by the monitor, the CLI and sbx-init, so it depends on libc only and
 * never allocates: everything lives in the caller's structs. Every decoder
 * treats its input as hostile and answers -EPROTO for anything it does not
 * fully understand; a stream that produced -EPROTO is dead. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "proto.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define TLV_HDR_SIZE 6
#define SIGNAL_MAX 64 /* _NSIG - 1 on Linux */

static void
put_u16 (unsigned char *p, uint16_t v)
{
  memcpy (p, &v, sizeof v);
}

static void
put_u32 (unsigned char *p, uint32_t v)
{
  memcpy (p, &v, sizeof v);
}

static void
put_u64 (unsigned char *p, uint64_t v)
{
  memcpy (p, &v, sizeof v);
}

static uint16_t
get_u16 (const unsigned char *p)
{
  uint16_t v;
  memcpy (&v, p, sizeof v);
  return v;
}

static uint32_t
get_u32 (const unsigned char *p)
{
  uint32_t v;
  memcpy (&v, p, sizeof v);
  return v;
}

static uint64_t
get_u64 (const unsigned char *p)
{
  uint64_t v;
  memcpy (&v, p, sizeof v);
  return v;
}

/* Frame headers */

void
sbx_frame_hdr_encode (unsigned char out[SBX_PROTO_HDR_SIZE], const struct sbx_frame_hdr *h)
{
  put_u32 (out, h->len);
  put_u16 (out + 4, h->type);
  put_u16 (out + 6, h->flags);
  put_u32 (out + 8, h->chan);
}

/* The payload size a type must have, or -1 when it varies. Checking it here
 * means no consumer ever reads a fixed-size payload out of bounds. */
static long
fixed_payload_size (uint16_t type)
{
  switch (type)
    {
    case SBX_MSG_HELLO:
      return 12;
    case SBX_MSG_STARTED:
    case SBX_MSG_SIGNAL:
    case SBX_MSG_RESIZE:
    case SBX_MSG_CREDIT:
      return 4;
    case SBX_MSG_EXIT:
      return 12;
    case SBX_MSG_STDIN_EOF:
    case SBX_MSG_SHUTDOWN:
      return 0;
    case SBX_MSG_CONNECT:
      return 2;
    default:
      return -1;
    }
}

static bool
type_is_known (uint16_t type)
{
  return (type >= SBX_MSG_HELLO && type <= SBX_MSG_SECRET) || type == SBX_MSG_REQUEST || type == SBX_MSG_REPLY;
}

int
sbx_frame_hdr_decode (const unsigned char in[SBX_PROTO_HDR_SIZE], struct sbx_frame_hdr *h)
{
  struct sbx_frame_hdr d;
  long fixed;

  d.len = get_u32 (in);
  d.type = get_u16 (in + 4);
  d.flags = get_u16 (in + 6);
  d.chan = get_u32 (in + 8);
  if (!type_is_known (d.type) || d.len > SBX_PROTO_MAX_PAYLOAD)
    return -EPROTO;
  /* No flags are defined in version 1. */
  if (d.flags != 0)
    return -EPROTO;
  fixed = fixed_payload_size (d.type);
  if (fixed >= 0 && d.len != (uint32_t) fixed)
    return -EPROTO;
  if (d.type == SBX_MSG_ERROR && d.len < 8)
    return -EPROTO;
  if (d.type == SBX_MSG_LOG && (d.len > SBX_PROTO_LOG_MAX || d.chan != 0))
    return -EPROTO;
  if (d.type == SBX_MSG_SECRET && (d.len > SBX_SECRET_PAYLOAD_MAX || d.chan != 0))
    return -EPROTO;
  *h = d;
  return 0;
}

/* Frame reassembly.
 *
 * R->buf holds at most one frame. A frame is complete exactly when HAVE is
 * HDR_SIZE + len; the reader returns it then and leaves it in place so the
 * caller's pointers stay valid, and the next call starts a new frame. */

static int
reader_begin (struct sbx_frame_reader *r, struct sbx_frame_hdr *h)
{
  int ret;

  if (r->have > sizeof r->buf)
    return -EPROTO;
  if (r->have < SBX_PROTO_HDR_SIZE)
    return 0;
  ret = sbx_frame_hdr_decode (r->buf, h);
  if (ret < 0)
    return ret; /* sticky: the stream is dead */
  if (r->have == SBX_PROTO_HDR_SIZE + (size_t) h->len)
    r->have = 0; /* the previous call returned this frame */
  return 0;
}

/* How many more bytes the current frame needs; decodes the header once it is
 * all there. Returns 0 with *need == 0 when the frame is complete. */
static int
reader_need (struct sbx_frame_reader *r, struct sbx_frame_hdr *h, size_t *need)
{
  int ret;

  if (r->have < SBX_PROTO_HDR_SIZE)
    {
      *need = SBX_PROTO_HDR_SIZE - r->have;
      return 0;
    }
  ret = sbx_frame_hdr_decode (r->buf, h);
  if (ret < 0)
    return ret;
  *need = SBX_PROTO_HDR_SIZE + (size_t) h->len - r->have;
  return 0;
}

static int
reader_complete (struct sbx_frame_reader *r, const struct sbx_frame_hdr *h, struct sbx_frame_hdr *hdr,
                 const unsigned char **payload)
{
  *hdr = *h;
  *payload = r->buf + SBX_PROTO_HDR_SIZE;
  return 1;
}

int
sbx_frame_feed (struct sbx_frame_reader *r, const unsigned char **data, size_t *len, struct sbx_frame_hdr *hdr,
                const unsigned char **payload)
{
  struct sbx_frame_hdr h;
  size_t need, n;
  int ret;

  ret = reader_begin (r, &h);
  if (ret < 0)
    return ret;
  for (;;)
    {
      ret = reader_need (r, &h, &need);
      if (ret < 0)
        return ret;
      if (need == 0)
        return reader_complete (r, &h, hdr, payload);
      if (*len == 0)
        return 0;
      n = need < *len ? need : *len;
      memcpy (r->buf + r->have, *data, n);
      r->have += n;
      *data += n;
      *len -= n;
    }
}

int
sbx_frame_read (int fd, struct sbx_frame_reader *r, struct sbx_frame_hdr *hdr, const unsigned char **payload)
{
  struct sbx_frame_hdr h;
  size_t need;
  ssize_t n;
  int ret;

  ret = reader_begin (r, &h);
  if (ret < 0)
    return ret;
  for (;;)
    {
      ret = reader_need (r, &h, &need);
      if (ret < 0)
        return ret;
      if (need == 0)
        return reader_complete (r, &h, hdr, payload);
      /* Read no further than this frame: the reader has room for one. */
      n = read (fd, r->buf + r->have, need);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
      if (n < 0)
        return -errno;
      if (n == 0)
        return -EPIPE;
      r->have += (size_t) n;
    }
}

/* Frame writing */

static int
wait_writable (int fd)
{
  struct pollfd p = { .fd = fd, .events = POLLOUT };
  int n;

  do
    n = poll (&p, 1, -1);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return -errno;
  return 0;
}

/* One writev-like call; sendmsg so a closed peer is EPIPE, not SIGPIPE. */
static ssize_t
write_iov (int fd, struct iovec *iov, int iovcnt)
{
  struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t) iovcnt };
  ssize_t n;

  n = sendmsg (fd, &msg, MSG_NOSIGNAL);
  if (n < 0 && errno == ENOTSOCK)
    n = writev (fd, iov, iovcnt);
  return n;
}

static void
iov_advance (struct iovec **iov, int *iovcnt, size_t n)
{
  while (*iovcnt > 0 && n >= (*iov)->iov_len)
    {
      n -= (*iov)->iov_len;
      (*iov)++;
      (*iovcnt)--;
    }
  if (*iovcnt > 0)
    {
      (*iov)->iov_base = (char *) (*iov)->iov_base + n;
      (*iov)->iov_len -= n;
    }
}

int
sbx_frame_write (int fd, uint16_t type, uint32_t chan, const void *payload, size_t len)
{
  unsigned char hdr[SBX_PROTO_HDR_SIZE];
  struct sbx_frame_hdr h = { .len = (uint32_t) len, .type = type, .chan = chan };
  struct iovec vec[2], *iov = vec;
  int iovcnt = len > 0 ? 2 : 1, ret;
  ssize_t n;

  if (len > SBX_PROTO_MAX_PAYLOAD)
    return -EMSGSIZE;
  if (len > 0 && payload == NULL)
    return -EINVAL;
  sbx_frame_hdr_encode (hdr, &h);
  vec[0] = (struct iovec){ .iov_base = hdr, .iov_len = sizeof hdr };
  vec[1] = (struct iovec){ .iov_base = (void *) payload, .iov_len = len };
  while (iovcnt > 0)
    {
      n = write_iov (fd, iov, iovcnt);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        {
          ret = wait_writable (fd);
          if (ret < 0)
            return ret;
          continue;
        }
      if (n < 0)
        return -errno;
      iov_advance (&iov, &iovcnt, (size_t) n);
    }
  return 0;
}

/* EXEC payload */

struct tlv_writer {
  unsigned char *out;
  size_t cap, len;
  bool overflow;
};

static void
tlv_put (struct tlv_writer *w, uint16_t tag, const void *data, size_t len)
{
  if (w->overflow || len > UINT32_MAX || w->cap - w->len < TLV_HDR_SIZE || w->cap - w->len - TLV_HDR_SIZE < len)
    {
      w->overflow = true;
      return;
    }
  put_u16 (w->out + w->len, tag);
  put_u32 (w->out + w->len + 2, (uint32_t) len);
  if (len > 0)
    memcpy (w->out + w->len + TLV_HDR_SIZE, data, len);
  w->len += TLV_HDR_SIZE + len;
}

static void
tlv_put_str (struct tlv_writer *w, uint16_t tag, const char *s)
{
  tlv_put (w, tag, s, strlen (s));
}

static void
tlv_put_strv (struct tlv_writer *w, uint16_t tag, char *const *v, size_t max)
{
  size_t i;

  for (i = 0; v != NULL && v[i] != NULL; i++)
    {
      if (i == max)
        {
          w->overflow = true;
          return;
        }
      tlv_put_str (w, tag, v[i]);
    }
}

int
sbx_exec_encode (unsigned char *out, size_t cap, char *const *argv, char *const *envp, const char *cwd,
                 const char *user, uint32_t flags, uint64_t timeout_ms, uint16_t rows, uint16_t cols)
{
  struct tlv_writer w = { .out = out, .cap = cap };
  unsigned char tmp[8];

  if (argv == NULL || argv[0] == NULL)
    return -EINVAL;
  if (flags & ~(SBX_EXEC_F_TTY | SBX_EXEC_F_STDIN | SBX_EXEC_F_DETACH))
    return -EINVAL;
  tlv_put_strv (&w, SBX_TAG_ARGV, argv, SBX_PROTO_MAX_ARGS);
  tlv_put_strv (&w, SBX_TAG_ENV, envp, SBX_PROTO_MAX_ENV);
  if (cwd != NULL)
    tlv_put_str (&w, SBX_TAG_CWD, cwd);
  if (user != NULL)
    tlv_put_str (&w, SBX_TAG_USER, user);
  if (flags != 0)
    {
      put_u32 (tmp, flags);
      tlv_put (&w, SBX_TAG_FLAGS, tmp, 4);
    }
  if (timeout_ms != 0)
    {
      put_u64 (tmp, timeout_ms);
      tlv_put (&w, SBX_TAG_TIMEOUT, tmp, 8);
    }
  if (rows != 0 || cols != 0)
    {
      put_u16 (tmp, rows);
      put_u16 (tmp + 2, cols);
      tlv_put (&w, SBX_TAG_WINSIZE, tmp, 4);
    }
  if (w.overflow || w.len > INT_MAX)
    return -E2BIG;
  return (int) w.len;
}

struct exec_seen {
  bool cwd, user, flags, timeout, winsize;
};

/* Copies a string record into REQ->buf and NUL-terminates it there. */
static int
decode_str (struct sbx_exec_req *req, size_t *used, const unsigned char *p, size_t len, char **ret)
{
  char *s;

  if (memchr (p, '\0', len) != NULL)
    return -EPROTO;
  if (sizeof req->buf - *used < len + 1)
    return -EPROTO;
  s = req->buf + *used;
  memcpy (s, p, len);
  s[len] = '\0';
  *used += len + 1;
  *ret = s;
  return 0;
}

static int
decode_single (bool *seen, size_t len, size_t want)
{
  if (*seen || len != want)
    return -EPROTO;
  *seen = true;
  return 0;
}

static int
decode_single_str (struct sbx_exec_req *req, bool *seen, size_t *used, const unsigned char *p, size_t len,
                   const char **ret)
{
  char *s;
  int r;

  if (*seen)
    return -EPROTO;
  *seen = true;
  r = decode_str (req, used, p, len, &s);
  if (r == 0)
    *ret = s;
  return r;
}

static int
decode_env (struct sbx_exec_req *req, size_t *used, const unsigned char *p, size_t len)
{
  char *s;
  int ret;

  if (req->envc == SBX_PROTO_MAX_ENV)
    return -EPROTO;
  ret = decode_str (req, used, p, len, &s);
  if (ret < 0)
    return ret;
  /* KEY=VALUE with a non-empty key. */
  if (s[0] == '=' || strchr (s, '=') == NULL)
    return -EPROTO;
  req->envp[req->envc++] = s;
  return 0;
}

static int
decode_record (struct sbx_exec_req *req, struct exec_seen *seen, size_t *used, uint16_t tag, const unsigned char *p,
               size_t len)
{
  char *s;
  int ret;

  switch (tag)
    {
    case SBX_TAG_ARGV:
      if (req->argc == SBX_PROTO_MAX_ARGS)
        return -EPROTO;
      ret = decode_str (req, used, p, len, &s);
      if (ret == 0)
        req->argv[req->argc++] = s;
      return ret;
    case SBX_TAG_ENV:
      return decode_env (req, used, p, len);
    case SBX_TAG_CWD:
      return decode_single_str (req, &seen->cwd, used, p, len, &req->cwd);
    case SBX_TAG_USER:
      return decode_single_str (req, &seen->user, used, p, len, &req->user);
    case SBX_TAG_FLAGS:
      ret = decode_single (&seen->flags, len, 4);
      if (ret == 0)
        req->flags = get_u32 (p);
      if (ret == 0 && (req->flags & ~(SBX_EXEC_F_TTY | SBX_EXEC_F_STDIN | SBX_EXEC_F_DETACH)))
        ret = -EPROTO;
      return ret;
    case SBX_TAG_TIMEOUT:
      ret = decode_single (&seen->timeout, len, 8);
      if (ret == 0)
        req->timeout_ms = get_u64 (p);
      return ret;
    case SBX_TAG_WINSIZE:
      ret = decode_single (&seen->winsize, len, 4);
      if (ret == 0)
        {
          req->rows = get_u16 (p);
          req->cols = get_u16 (p + 2);
        }
      return ret;
    default:
      return -EPROTO;
    }
}

int
sbx_exec_decode (const unsigned char *p, size_t len, struct sbx_exec_req *req)
{
  struct exec_seen seen = { 0 };
  size_t off = 0, used = 0, rlen;
  uint16_t tag;
  int ret;

  req->argc = req->envc = 0;
  req->cwd = req->user = NULL;
  req->flags = 0;
  req->timeout_ms = 0;
  req->rows = req->cols = 0;
  req->argv[0] = req->envp[0] = NULL;
  if (p == NULL || len > SBX_PROTO_MAX_PAYLOAD)
    return -EPROTO;
  while (off < len)
    {
      if (len - off < TLV_HDR_SIZE)
        return -EPROTO;
      tag = get_u16 (p + off);
      rlen = get_u32 (p + off + 2);
      off += TLV_HDR_SIZE;
      if (rlen > len - off)
        return -EPROTO;
      ret = decode_record (req, &seen, &used, tag, p + off, rlen);
      if (ret < 0)
        return ret;
      off += rlen;
    }
  if (req->argc == 0)
    return -EPROTO;
  req->argv[req->argc] = NULL;
  req->envp[req->envc] = NULL;
  return 0;
}

/* SECRET payload */

static bool
secret_name_ok (uint16_t kind, const char *s, size_t len)
{
  size_t max = kind == SBX_SECRET_ENV ? SBX_SECRET_NAME_MAX : SBX_SECRET_FILE_NAME_MAX;

  if (len == 0 || len > max)
    return false;
  for (size_t i = 0; i < len; i++)
    {
      unsigned char c = (unsigned char) s[i];
      bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (kind == SBX_SECRET_ENV && !(alnum || c == '_'))
        return false;
      if (kind == SBX_SECRET_ENV && i == 0 && c >= '0' && c <= '9')
        return false;
      if (kind == SBX_SECRET_FILE && !(alnum || (i > 0 && (c == '_' || c == '.' || c == '+' || c == '-'))))
        return false;
    }
  return true;
}

static bool
secret_parts_ok (uint16_t kind, const char *name, size_t name_len, const void *value, size_t value_len)
{
  if (kind != SBX_SECRET_ENV && kind != SBX_SECRET_FILE)
    return false;
  if (!secret_name_ok (kind, name, name_len))
    return false;
  if (value_len == 0 || value_len > SBX_SECRET_VALUE_MAX || memchr (value, '\0', value_len) != NULL)
    return false;
  return true;
}

int
sbx_secret_encode (unsigned char *out, size_t cap, uint16_t kind, const char *name, const void *value, size_t value_len)
{
  size_t name_len = name ? strlen (name) : 0;

  if (name == NULL || value == NULL || !secret_parts_ok (kind, name, name_len, value, value_len))
    return -EINVAL;
  if (cap < 4 + name_len + value_len)
    return -E2BIG;
  put_u16 (out, kind);
  put_u16 (out + 2, (uint16_t) name_len);
  memcpy (out + 4, name, name_len);
  memcpy (out + 4 + name_len, value, value_len);
  return (int) (4 + name_len + value_len);
}

int
sbx_secret_decode (const unsigned char *p, size_t len, struct sbx_secret_msg *m)
{
  uint16_t kind, name_len;

  if (p == NULL || len < 4 || len > SBX_SECRET_PAYLOAD_MAX)
    return -EPROTO;
  kind = get_u16 (p);
  name_len = get_u16 (p + 2);
  if (name_len > SBX_SECRET_NAME_MAX || len - 4 <= name_len)
    return -EPROTO;
  if (!secret_parts_ok (kind, (const char *) p + 4, name_len, p + 4 + name_len, len - 4 - name_len))
    return -EPROTO;
  m->kind = kind;
  memcpy (m->name, p + 4, name_len);
  m->name[name_len] = '\0';
  m->value = p + 4 + name_len;
  m->value_len = len - 4 - name_len;
  return 0;
}

/* EXIT payload */

void
sbx_exit_encode (unsigned char out[12], const struct sbx_exit_msg *m)
{
  put_u32 (out, (uint32_t) m->status);
  put_u32 (out + 4, (uint32_t) m->signal);
  put_u32 (out + 8, m->flags);
}

int
sbx_exit_decode (const unsigned char *p, size_t len, struct sbx_exit_msg *m)
{
  struct sbx_exit_msg d;

  if (p == NULL || len != 12)
    return -EPROTO;
  d.status = (int32_t) get_u32 (p);
  d.signal = (int32_t) get_u32 (p + 4);
  d.flags = get_u32 (p + 8);
  if (d.status < 0 || d.status > 255 || d.signal < 0 || d.signal > SIGNAL_MAX)
    return -EPROTO;
  if (d.signal != 0 && d.status != 128 + d.signal)
    return -EPROTO;
  if (d.flags & ~SBX_EXIT_F_TIMED_OUT)
    return -EPROTO;
  *m = d;
  return 0;
}
