/* The agent protocol: frames between the monitor and sbx-init (PID 1 in the
 * sandbox) over the stdio socketpair, and between the CLI and the monitor over
 * the control socket. Shared by both sides; no allocation beyond the caller's
 * buffers and no dependency but libc, so sbx-init links it statically.
 *
 * A frame is a fixed 12-byte header (host byte order: both ends are on one
 * host) followed by LEN payload bytes, LEN <= SBX_PROTO_MAX_PAYLOAD.
 * Everything read from the agent is untrusted: the decoders check every size
 * and return -EPROTO on anything malformed. */
#ifndef SBX_PROTO_H
#define SBX_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SBX_PROTO_VERSION 3
#define SBX_PROTO_MAX_PAYLOAD (256 * 1024)
#define SBX_PROTO_HDR_SIZE 12
/* Output bytes the agent may send on one channel before it needs CREDIT. */
#define SBX_PROTO_WINDOW (4 * 1024 * 1024)
#define SBX_PROTO_MAX_ARGS 4096
#define SBX_PROTO_LOG_MAX 1024
#define SBX_PROTO_MAX_ENV 4096
/* HELLO flags: what sbx-init did before saying hello. The monitor refuses an
 * init that did not load the seccomp profile. */
#define SBX_HELLO_SECCOMP 0x1U

enum sbx_msg_type {
  SBX_MSG_HELLO = 1,     /* a->m chan 0: u32 version, u32 pid, u32 SBX_HELLO_* flags */
  SBX_MSG_EXEC = 2,      /* m->a chan N: TLV records (sbx_exec_req) */
  SBX_MSG_STARTED = 3,   /* a->m chan N: u32 pid inside the sandbox */
  SBX_MSG_STDIN = 4,     /* m->a chan N: data */
  SBX_MSG_STDIN_EOF = 5, /* m->a chan N: empty */
  SBX_MSG_STDOUT = 6,    /* a->m chan N: data */
  SBX_MSG_STDERR = 7,    /* a->m chan N: data */
  SBX_MSG_EXIT = 8,      /* a->m chan N: sbx_exit_msg; last frame of chan */
  SBX_MSG_ERROR = 9,     /* a->m chan N: i32 status, i32 errno, message; last frame of chan */
  SBX_MSG_SIGNAL = 10,   /* m->a chan N: u32 signal, sent to the process group */
  SBX_MSG_RESIZE = 11,   /* m->a chan N: u16 rows, u16 cols */
  SBX_MSG_CREDIT = 12,   /* m->a chan N: u32 more output bytes allowed */
  SBX_MSG_PING = 13,     /* either way chan 0: echoed as PONG with the same payload */
  SBX_MSG_PONG = 14,
  SBX_MSG_SHUTDOWN = 15, /* m->a chan 0: kill everything, exit */
  /* m->a chan N: u16 port. A TCP stream to the sandbox's own 127.0.0.1:PORT
   * (an exposed port's relay when the sandbox has no interface): STDIN and
   * STDIN_EOF carry what goes to it, STDOUT what comes back (with CREDIT
   * both ways as for an exec), SIGNAL aborts it, EXIT (status 0) or ERROR
   * ends the channel. */
  SBX_MSG_CONNECT = 16,
  /* a->m chan 0: one diagnostic of sbx-init's, text of at most
   * SBX_PROTO_LOG_MAX bytes. The agent's only way into the sandbox's log
   * once it said HELLO: it keeps no host fd that the sandbox's processes
   * could reopen through /proc/1/fd. The monitor marks it as the sandbox's. */
  SBX_MSG_LOG = 17,
  /* m->a chan 0: one secret (sbx_secret_msg), sent after HELLO and before
   * any EXEC: an environment variable of every later command, or the file
   * /run/secrets/NAME. A SECRET of a name already given replaces it. */
  SBX_MSG_SECRET = 18,
  /* CLI <-> monitor only */
  SBX_MSG_REQUEST = 32, /* c->m chan 0: JSON request {"op": ...} */
  SBX_MSG_REPLY = 33,   /* m->c chan 0: JSON reply, or {"error": {code, message}} */
  SBX_MSG__MAX
};

/* EXEC request records: u16 tag, u32 len, LEN bytes. ARGV and ENV repeat. */
enum sbx_exec_tag {
  SBX_TAG_ARGV = 1,
  SBX_TAG_ENV = 2,
  SBX_TAG_CWD = 3,
  SBX_TAG_USER = 4,    /* "UID" or "UID:GID", decimal */
  SBX_TAG_FLAGS = 5,   /* u32 SBX_EXEC_F_* */
  SBX_TAG_TIMEOUT = 6, /* u64 milliseconds, 0 = none */
  SBX_TAG_WINSIZE = 7, /* u16 rows, u16 cols */
};

/* SECRET payload: u16 kind, u16 name length, the name, then the value (the
 * rest of the payload, 1..SBX_SECRET_VALUE_MAX bytes, no NUL). An ENV name
 * is an environment key ([A-Za-z_][A-Za-z0-9_]*, at most
 * SBX_SECRET_NAME_MAX); a FILE name is a secret's name
 * ([A-Za-z0-9][A-Za-z0-9_.+-]*, at most SBX_SECRET_FILE_NAME_MAX). */
enum sbx_secret_kind {
  SBX_SECRET_ENV = 1,
  SBX_SECRET_FILE = 2,
};
#define SBX_SECRET_NAME_MAX 128
#define SBX_SECRET_FILE_NAME_MAX 64
#define SBX_SECRET_VALUE_MAX (64 * 1024)
/* Secrets of one sandbox, --secret and --secret-file together. */
#define SBX_SECRETS_MAX 64
#define SBX_SECRET_PAYLOAD_MAX (4 + SBX_SECRET_NAME_MAX + SBX_SECRET_VALUE_MAX)

#define SBX_EXEC_F_TTY (1u << 0)
#define SBX_EXEC_F_STDIN (1u << 1)
#define SBX_EXEC_F_DETACH (1u << 2)

#define SBX_EXIT_F_TIMED_OUT (1u << 0)

struct sbx_frame_hdr {
  uint32_t len;
  uint16_t type;
  uint16_t flags;
  uint32_t chan;
};

/* A decoded EXEC request. Strings point into the frame payload's copy held
 * in BUF (NUL-terminated there); the struct owns nothing else. */
struct sbx_exec_req {
  char *argv[SBX_PROTO_MAX_ARGS + 1];
  size_t argc;
  char *envp[SBX_PROTO_MAX_ENV + 1];
  size_t envc;
  const char *cwd;  /* NULL: "/" */
  const char *user; /* NULL: root */
  uint32_t flags;
  uint64_t timeout_ms;
  uint16_t rows, cols;
  char buf[SBX_PROTO_MAX_PAYLOAD + 64];
};

struct sbx_exit_msg {
  int32_t status; /* shell-style: exit code, or 128+signal */
  int32_t signal; /* the signal that ended it, or 0 */
  uint32_t flags; /* SBX_EXIT_F_* */
};

/* A decoded SECRET. NAME is a copy, NUL-terminated; VALUE points into the
 * payload (VALUE_LEN bytes, no NUL among them, not terminated). */
struct sbx_secret_msg {
  uint16_t kind;
  char name[SBX_SECRET_NAME_MAX + 1];
  const unsigned char *value;
  size_t value_len;
};

/* Reassembles frames from a byte stream. */
struct sbx_frame_reader {
  unsigned char buf[SBX_PROTO_HDR_SIZE + SBX_PROTO_MAX_PAYLOAD];
  size_t have;
};

void sbx_frame_hdr_encode (unsigned char out[SBX_PROTO_HDR_SIZE], const struct sbx_frame_hdr *h);
/* -EPROTO for an unknown type or an oversized length. */
int sbx_frame_hdr_decode (const unsigned char in[SBX_PROTO_HDR_SIZE], struct sbx_frame_hdr *h);

/* Blocking write of one whole frame (retries EINTR/EAGAIN with poll). */
int sbx_frame_write (int fd, uint16_t type, uint32_t chan, const void *payload, size_t len);
/* Reads from FD (nonblocking or not) into R. Returns 1 when a frame is
 * complete (*hdr, *payload point into R until the next call), 0 when more
 * bytes are needed (EAGAIN), -EPIPE on EOF, -EPROTO on garbage, -errno. */
int sbx_frame_read (int fd, struct sbx_frame_reader *r, struct sbx_frame_hdr *hdr, const unsigned char **payload);
/* The same on bytes already in memory: consumes from *data and *len. */
int sbx_frame_feed (struct sbx_frame_reader *r, const unsigned char **data, size_t *len, struct sbx_frame_hdr *hdr,
                    const unsigned char **payload);

/* EXEC encoding into OUT (capacity CAP); returns the length or -E2BIG. */
int sbx_exec_encode (unsigned char *out, size_t cap, char *const *argv, char *const *envp, const char *cwd,
                     const char *user, uint32_t flags, uint64_t timeout_ms, uint16_t rows, uint16_t cols);
/* Strict decoding: -EPROTO for a truncated record, an unknown tag, an empty
 * argv, an embedded NUL in a string, a duplicate single-valued tag. */
int sbx_exec_decode (const unsigned char *p, size_t len, struct sbx_exec_req *req);

/* SECRET encoding into OUT (capacity CAP): the length, or -EINVAL for what
 * the decoder would refuse, -E2BIG when it does not fit. */
int sbx_secret_encode (unsigned char *out, size_t cap, uint16_t kind, const char *name, const void *value,
                       size_t value_len);
/* Strict decoding: -EPROTO for an unknown kind, a name or value out of
 * bounds, a name with a byte its kind does not allow, a NUL in the value. */
int sbx_secret_decode (const unsigned char *p, size_t len, struct sbx_secret_msg *m);

int sbx_exit_decode (const unsigned char *p, size_t len, struct sbx_exit_msg *m);
void sbx_exit_encode (unsigned char out[12], const struct sbx_exit_msg *m);

#endif
