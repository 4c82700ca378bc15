/* Unit tests of the agent protocol's wire format (src/lib/proto.c): frame
 * headers, reassembly from split input, whole-frame I/O on a socketpair, the
 * EXEC and EXIT payloads, and the rejection of each class of malformed
 * input. Links proto.c only. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "proto.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static struct sbx_exec_req req;
static struct sbx_frame_reader rd;

/* A hand-made TLV payload, for inputs the encoder refuses to make. */
struct tlv {
  unsigned char buf[SBX_PROTO_MAX_PAYLOAD + 64];
  size_t len;
};

static void
tlv_add (struct tlv *t, uint16_t tag, const void *data, uint32_t len)
{
  memcpy (t->buf + t->len, &tag, 2);
  memcpy (t->buf + t->len + 2, &len, 4);
  memcpy (t->buf + t->len + 6, data, len);
  t->len += 6 + len;
}

static void
tlv_str (struct tlv *t, uint16_t tag, const char *s)
{
  tlv_add (t, tag, s, (uint32_t) strlen (s));
}

static int
decode (const struct tlv *t)
{
  return sbx_exec_decode (t->buf, t->len, &req);
}

static size_t
frame (unsigned char *out, uint16_t type, uint32_t chan, const void *payload, uint32_t len)
{
  struct sbx_frame_hdr h = { .len = len, .type = type, .chan = chan };

  sbx_frame_hdr_encode (out, &h);
  if (len)
    memcpy (out + SBX_PROTO_HDR_SIZE, payload, len);
  return SBX_PROTO_HDR_SIZE + len;
}

static void
test_header (void)
{
  struct sbx_frame_hdr h = { .len = 5, .type = SBX_MSG_STDOUT, .chan = 0xdeadbeef }, d = { 0 };
  unsigned char b[SBX_PROTO_HDR_SIZE];

  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == 0 && d.len == 5 && d.type == SBX_MSG_STDOUT && d.chan == 0xdeadbeef
              && d.flags == 0,
          "header round trip");
  h.type = 0;
  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == -EPROTO, "header: type 0 rejected");
  h.type = 19;
  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == -EPROTO, "header: unknown type 19 rejected");
  h = (struct sbx_frame_hdr){ .len = SBX_PROTO_LOG_MAX, .type = SBX_MSG_LOG };
  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == 0 && d.type == SBX_MSG_LOG, "header: LOG of the largest size accepted");
  h.len = SBX_PROTO_LOG_MAX + 1;
  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == -EPROTO, "header: oversized LOG rejected");
  h = (struct sbx_frame_hdr){ .len = 4, .type = SBX_MSG_LOG, .chan = 3 };
  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == -EPROTO, "header: LOG on a process's channel rejected");
  h = (struct sbx_frame_hdr){ .len = 5, .type = SBX_MSG_STDOUT, .chan = 0xdeadbeef };
  h.type = SBX_MSG_CONNECT;
  h.len = 4;
  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == -EPROTO, "header: CONNECT with a payload other than a u16 port rejected");
  h.len = 2;
  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == 0 && d.type == SBX_MSG_CONNECT, "header: CONNECT with a port");
  h.type = SBX_MSG_REPLY;
  h.len = SBX_PROTO_MAX_PAYLOAD;
  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == 0, "header: REPLY with the largest payload accepted");
  h.len = SBX_PROTO_MAX_PAYLOAD + 1;
  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == -EPROTO, "header: oversized length rejected");
  h = (struct sbx_frame_hdr){ .len = 0, .type = SBX_MSG_PING, .flags = 1 };
  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == -EPROTO, "header: unknown flags rejected");
  h = (struct sbx_frame_hdr){ .len = 3, .type = SBX_MSG_CREDIT, .chan = 1 };
  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == -EPROTO, "header: CREDIT of 3 bytes rejected");
  h = (struct sbx_frame_hdr){ .len = 7, .type = SBX_MSG_ERROR, .chan = 1 };
  sbx_frame_hdr_encode (b, &h);
  tap_ok (sbx_frame_hdr_decode (b, &d) == -EPROTO, "header: ERROR shorter than status+errno rejected");
}

static void
test_feed (void)
{
  unsigned char stream[256], big[SBX_PROTO_HDR_SIZE + SBX_PROTO_MAX_PAYLOAD];
  const unsigned char *data, *payload;
  struct sbx_frame_hdr h;
  uint32_t credit = 4096;
  size_t n = 0, len;
  int got = 0, ret, ok = 1;

  memset (&rd, 0, sizeof rd);
  n += frame (stream + n, SBX_MSG_STDIN, 7, "hello", 5);
  n += frame (stream + n, SBX_MSG_STDIN_EOF, 7, NULL, 0);
  n += frame (stream + n, SBX_MSG_CREDIT, 7, &credit, 4);
  /* One byte at a time: every split point of header and payload. */
  for (size_t i = 0; i < n; i++)
    {
      data = stream + i;
      len = 1;
      ret = sbx_frame_feed (&rd, &data, &len, &h, &payload);
      if (ret == 1)
        {
          got++;
          if (got == 1)
            ok &= h.type == SBX_MSG_STDIN && h.len == 5 && memcmp (payload, "hello", 5) == 0;
          if (got == 2)
            ok &= h.type == SBX_MSG_STDIN_EOF && h.len == 0 && h.chan == 7;
          if (got == 3)
            ok &= h.type == SBX_MSG_CREDIT && memcmp (payload, &credit, 4) == 0;
        }
      ok &= ret >= 0 && len == 0; /* each call takes its byte */
    }
  tap_ok (got == 3 && ok, "feed: byte-at-a-time input gives 3 frames intact");

  /* All at once: frames come out one per call, the rest left in place. */
  memset (&rd, 0, sizeof rd);
  data = stream;
  len = n;
  got = 0;
  while ((ret = sbx_frame_feed (&rd, &data, &len, &h, &payload)) == 1)
    got++;
  tap_ok (got == 3 && ret == 0 && len == 0, "feed: three frames in one buffer");

  /* A maximal frame split at an odd place. */
  memset (&rd, 0, sizeof rd);
  memset (big + SBX_PROTO_HDR_SIZE, 'x', SBX_PROTO_MAX_PAYLOAD);
  frame (big, SBX_MSG_STDIN, 1, big + SBX_PROTO_HDR_SIZE, SBX_PROTO_MAX_PAYLOAD);
  data = big;
  len = 12345;
  ret = sbx_frame_feed (&rd, &data, &len, &h, &payload);
  ok = ret == 0 && len == 0;
  len = sizeof big - 12345;
  ret = sbx_frame_feed (&rd, &data, &len, &h, &payload);
  tap_ok (ok && ret == 1 && h.len == SBX_PROTO_MAX_PAYLOAD && payload[SBX_PROTO_MAX_PAYLOAD - 1] == 'x',
          "feed: 64 KiB frame split in two");

  /* Garbage kills the stream for good. */
  memset (&rd, 0, sizeof rd);
  memset (stream, 0xff, SBX_PROTO_HDR_SIZE);
  data = stream;
  len = SBX_PROTO_HDR_SIZE;
  ret = sbx_frame_feed (&rd, &data, &len, &h, &payload);
  n = frame (stream, SBX_MSG_PING, 0, NULL, 0);
  data = stream;
  len = n;
  tap_ok (ret == -EPROTO && sbx_frame_feed (&rd, &data, &len, &h, &payload) == -EPROTO,
          "feed: a bad header is rejected and the error sticks");
}

static void
test_fd_io (void)
{
  unsigned char payload_out[1000];
  const unsigned char *payload;
  struct sbx_frame_hdr h;
  int sv[2], ret, ok;

  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    {
      for (int i = 0; i < 4; i++) /* the four checks below */
        tap_ok (0, "socketpair: %s", strerror (errno));
      return;
    }
  fcntl (sv[1], F_SETFL, O_NONBLOCK);
  memset (&rd, 0, sizeof rd);
  memset (payload_out, 'a', sizeof payload_out);
  ret = sbx_frame_read (sv[1], &rd, &h, &payload);
  ok = ret == 0;
  /* Half a header, then EAGAIN: partial data stays in the reader. */
  ret = (int) write (sv[0], "\xe8\x03\x00\x00\x04", 5);
  ok &= ret == 5 && sbx_frame_read (sv[1], &rd, &h, &payload) == 0 && rd.have == 5;
  ret = (int) write (sv[0], "\x00\x00\x00\x02\x00\x00\x00", 7);
  ok &= ret == 7 && write (sv[0], payload_out, 1000) == 1000;
  ret = sbx_frame_read (sv[1], &rd, &h, &payload);
  tap_ok (ok && ret == 1 && h.type == SBX_MSG_STDIN && h.chan == 2 && h.len == 1000 && payload[999] == 'a',
          "read: nonblocking fd, frame in pieces");
  ret = sbx_frame_write (sv[0], SBX_MSG_SIGNAL, 3, "\x0f\0\0\0", 4);
  ok = ret == 0 && sbx_frame_read (sv[1], &rd, &h, &payload) == 1 && h.type == SBX_MSG_SIGNAL && payload[0] == 15;
  tap_ok (ok, "write then read a whole frame");
  tap_ok (sbx_frame_write (sv[0], SBX_MSG_STDIN, 3, payload_out, SBX_PROTO_MAX_PAYLOAD + 1) < 0,
          "write: oversized payload refused");
  close (sv[0]);
  tap_ok (sbx_frame_read (sv[1], &rd, &h, &payload) == -EPIPE, "read: EOF is -EPIPE");
  close (sv[1]);
}

static void
test_exec_roundtrip (void)
{
  char *argv[] = { (char *) "sh", (char *) "-c", (char *) "", (char *) "echo $0", NULL };
  char *envp[] = { (char *) "PATH=/bin", (char *) "A=b=c", NULL };
  unsigned char buf[SBX_PROTO_MAX_PAYLOAD];
  int n, ok;

  n = sbx_exec_encode (buf, sizeof buf, argv, envp, "/tmp", "1000:100", SBX_EXEC_F_TTY | SBX_EXEC_F_STDIN, 1500, 40,
                       132);
  ok = n > 0 && sbx_exec_decode (buf, (size_t) n, &req) == 0;
  ok = ok && req.argc == 4 && strcmp (req.argv[0], "sh") == 0 && strcmp (req.argv[2], "") == 0
       && strcmp (req.argv[3], "echo $0") == 0 && req.argv[4] == NULL;
  ok = ok && req.envc == 2 && strcmp (req.envp[1], "A=b=c") == 0 && req.envp[2] == NULL;
  ok = ok && strcmp (req.cwd, "/tmp") == 0 && strcmp (req.user, "1000:100") == 0;
  ok = ok && req.flags == (SBX_EXEC_F_TTY | SBX_EXEC_F_STDIN) && req.timeout_ms == 1500 && req.rows == 40
       && req.cols == 132;
  tap_ok (ok, "exec: encode/decode round trip with every field");

  n = sbx_exec_encode (buf, sizeof buf, argv, NULL, NULL, NULL, 0, 0, 0, 0);
  ok = n > 0 && sbx_exec_decode (buf, (size_t) n, &req) == 0;
  tap_ok (ok && req.envc == 0 && req.cwd == NULL && req.user == NULL && req.flags == 0 && req.timeout_ms == 0,
          "exec: defaults round trip");
  tap_ok (sbx_exec_encode (buf, 20, argv, envp, NULL, NULL, 0, 0, 0, 0) == -E2BIG, "exec: encode -E2BIG");
  argv[0] = NULL;
  tap_ok (sbx_exec_encode (buf, sizeof buf, argv, NULL, NULL, NULL, 0, 0, 0, 0) == -EINVAL,
          "exec: encode refuses an empty argv");
}

static void
test_exec_malformed (void)
{
  static struct tlv t;
  uint32_t flags = SBX_EXEC_F_TTY, badflags = 1u << 7;
  uint64_t ms = 5;

  t.len = 0;
  tap_ok (decode (&t) == -EPROTO, "exec: empty payload (no argv) rejected");
  tlv_str (&t, SBX_TAG_ENV, "A=1");
  tap_ok (decode (&t) == -EPROTO, "exec: env but no argv rejected");

  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tap_ok (decode (&t) == 0, "exec: minimal request accepted");
  t.len -= 1;
  tap_ok (decode (&t) == -EPROTO, "exec: truncated record body rejected");
  t.len = 6 + 2 + 3;
  tap_ok (decode (&t) == -EPROTO, "exec: truncated record header rejected");

  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tlv_str (&t, 99, "x");
  tap_ok (decode (&t) == -EPROTO, "exec: unknown tag rejected");

  t.len = 0;
  tlv_add (&t, SBX_TAG_ARGV, "l\0s", 3);
  tap_ok (decode (&t) == -EPROTO, "exec: NUL inside argv rejected");
  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tlv_add (&t, SBX_TAG_CWD, "/tmp\0/etc", 9);
  tap_ok (decode (&t) == -EPROTO, "exec: NUL inside cwd rejected");
  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tlv_add (&t, SBX_TAG_ENV, "A=1\0B=2", 7);
  tap_ok (decode (&t) == -EPROTO, "exec: NUL inside env rejected");
  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tlv_str (&t, SBX_TAG_ENV, "NOEQUALS");
  tap_ok (decode (&t) == -EPROTO, "exec: env entry without = rejected");

  t.len = 0;
  for (int i = 0; i <= SBX_PROTO_MAX_ARGS; i++)
    tlv_str (&t, SBX_TAG_ARGV, "a");
  tap_ok (decode (&t) == -EPROTO, "exec: more than SBX_PROTO_MAX_ARGS args rejected");
  t.len -= 7;
  tap_ok (decode (&t) == 0 && req.argc == SBX_PROTO_MAX_ARGS, "exec: exactly SBX_PROTO_MAX_ARGS args accepted");
  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  for (int i = 0; i <= SBX_PROTO_MAX_ENV; i++)
    tlv_str (&t, SBX_TAG_ENV, "A=");
  tap_ok (decode (&t) == -EPROTO, "exec: more than SBX_PROTO_MAX_ENV env entries rejected");

  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tlv_str (&t, SBX_TAG_CWD, "/a");
  tlv_str (&t, SBX_TAG_CWD, "/b");
  tap_ok (decode (&t) == -EPROTO, "exec: duplicate cwd rejected");
  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tlv_str (&t, SBX_TAG_USER, "1");
  tlv_str (&t, SBX_TAG_USER, "1");
  tap_ok (decode (&t) == -EPROTO, "exec: duplicate user rejected");
  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tlv_add (&t, SBX_TAG_TIMEOUT, &ms, 8);
  tlv_add (&t, SBX_TAG_TIMEOUT, &ms, 8);
  tap_ok (decode (&t) == -EPROTO, "exec: duplicate timeout rejected");
  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tlv_add (&t, SBX_TAG_FLAGS, &flags, 4);
  tlv_add (&t, SBX_TAG_FLAGS, &flags, 4);
  tap_ok (decode (&t) == -EPROTO, "exec: duplicate flags rejected");
  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tlv_add (&t, SBX_TAG_FLAGS, &flags, 2);
  tap_ok (decode (&t) == -EPROTO, "exec: flags of the wrong size rejected");
  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tlv_add (&t, SBX_TAG_FLAGS, &badflags, 4);
  tap_ok (decode (&t) == -EPROTO, "exec: unknown flag bits rejected");
  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tlv_add (&t, SBX_TAG_WINSIZE, &flags, 4);
  tlv_add (&t, SBX_TAG_WINSIZE, &flags, 4);
  tap_ok (decode (&t) == -EPROTO, "exec: duplicate winsize rejected");
  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  tap_ok (sbx_exec_decode (t.buf, SBX_PROTO_MAX_PAYLOAD + 1, &req) == -EPROTO,
          "exec: payload larger than a frame rejected");
  t.len = 0;
  tlv_str (&t, SBX_TAG_ARGV, "ls");
  memset (t.buf + 2, 0xff, 4); /* its length now says 2^32-1 */
  tap_ok (decode (&t) == -EPROTO, "exec: record length past the end (2^32-1) rejected");
}

static void
test_exit (void)
{
  struct sbx_exit_msg m = { .status = 137, .signal = 9, .flags = SBX_EXIT_F_TIMED_OUT }, d = { 0 };
  unsigned char b[12];

  sbx_exit_encode (b, &m);
  tap_ok (sbx_exit_decode (b, 12, &d) == 0 && d.status == 137 && d.signal == 9 && d.flags == SBX_EXIT_F_TIMED_OUT,
          "exit: round trip");
  tap_ok (sbx_exit_decode (b, 11, &d) == -EPROTO && sbx_exit_decode (b, 13, &d) == -EPROTO,
          "exit: wrong length rejected");
  m = (struct sbx_exit_msg){ .status = 256 };
  sbx_exit_encode (b, &m);
  tap_ok (sbx_exit_decode (b, 12, &d) == -EPROTO, "exit: status 256 rejected");
  m = (struct sbx_exit_msg){ .status = -1 };
  sbx_exit_encode (b, &m);
  tap_ok (sbx_exit_decode (b, 12, &d) == -EPROTO, "exit: negative status rejected");
  m = (struct sbx_exit_msg){ .status = 1, .signal = 9 };
  sbx_exit_encode (b, &m);
  tap_ok (sbx_exit_decode (b, 12, &d) == -EPROTO, "exit: signal with a status other than 128+sig rejected");
  m = (struct sbx_exit_msg){ .status = 0, .flags = 2 };
  sbx_exit_encode (b, &m);
  tap_ok (sbx_exit_decode (b, 12, &d) == -EPROTO, "exit: unknown flags rejected");
}

int
main (void)
{
  tap_plan (53);
  test_header ();
  test_feed ();
  test_fd_io ();
  test_exec_roundtrip ();
  test_exec_malformed ();
  test_exit ();
  return tap_done ();
}
