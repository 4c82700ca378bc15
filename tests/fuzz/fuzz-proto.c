/* Fuzz harness for the agent protocol's decoders (src/lib/proto.c): arbitrary
 * bytes go to sbx_frame_feed (whole and in uneven pieces, which must agree),
 * and the frames it yields and the raw input to sbx_exec_decode and
 * sbx_exit_decode. A request that decodes must survive a re-encode and a
 * second decode unchanged.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, it is a check program that runs a fixed pseudo-random corpus
 * (mutated valid frames and requests, and random bytes) and prints TAP. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "proto.h"

#define FUZZ_NAME "fuzz-proto"
#include "fuzz.h"

static struct sbx_frame_reader rd;
static struct sbx_exec_req req, req2;
static unsigned char reenc[SBX_PROTO_MAX_PAYLOAD];

/* What a pass over the stream saw: frames, a running hash, the end. */
struct feed_result {
  size_t frames;
  uint64_t hash;
  int last;
};

static uint64_t
hash_bytes (uint64_t h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static bool
in_buf (const struct sbx_exec_req *r, const char *s)
{
  return s >= r->buf && s < r->buf + sizeof r->buf && s + strlen (s) < r->buf + sizeof r->buf;
}

static bool
str_eq (const char *a, const char *b)
{
  return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp (a, b) == 0);
}

static void
check_exec_req (const struct sbx_exec_req *r)
{
  CHECK (r->argc >= 1 && r->argc <= SBX_PROTO_MAX_ARGS && r->argv[r->argc] == NULL);
  CHECK (r->envc <= SBX_PROTO_MAX_ENV && r->envp[r->envc] == NULL);
  for (size_t i = 0; i < r->argc; i++)
    CHECK (in_buf (r, r->argv[i]));
  for (size_t i = 0; i < r->envc; i++)
    CHECK (in_buf (r, r->envp[i]) && strchr (r->envp[i], '=') != NULL && r->envp[i][0] != '=');
  CHECK (r->cwd == NULL || in_buf (r, r->cwd));
  CHECK (r->user == NULL || in_buf (r, r->user));
}

/* Decoded, re-encoded, decoded again: the same request. */
static void
check_exec_roundtrip (const unsigned char *p, size_t len)
{
  int n;

  if (sbx_exec_decode (p, len, &req) != 0)
    return;
  check_exec_req (&req);
  n = sbx_exec_encode (reenc, sizeof reenc, req.argv, req.envp, req.cwd, req.user, req.flags, req.timeout_ms, req.rows,
                       req.cols);
  CHECK (n > 0 && (size_t) n <= len);
  CHECK (sbx_exec_decode (reenc, (size_t) n, &req2) == 0);
  CHECK (req.argc == req2.argc && req.envc == req2.envc);
  for (size_t i = 0; i < req.argc; i++)
    CHECK (strcmp (req.argv[i], req2.argv[i]) == 0);
  for (size_t i = 0; i < req.envc; i++)
    CHECK (strcmp (req.envp[i], req2.envp[i]) == 0);
  CHECK (str_eq (req.cwd, req2.cwd) && str_eq (req.user, req2.user));
  CHECK (req.flags == req2.flags && req.timeout_ms == req2.timeout_ms);
  CHECK (req.rows == req2.rows && req.cols == req2.cols);
}

static void
check_exit (const unsigned char *p, size_t len)
{
  struct sbx_exit_msg m;
  unsigned char b[12];

  if (sbx_exit_decode (p, len, &m) != 0)
    return;
  CHECK (len == 12 && m.status >= 0 && m.status <= 255);
  sbx_exit_encode (b, &m);
  CHECK (memcmp (b, p, 12) == 0);
}

static void
check_frame (const struct sbx_frame_hdr *h, const unsigned char *payload)
{
  CHECK (h->len <= SBX_PROTO_MAX_PAYLOAD && h->flags == 0);
  if (h->type == SBX_MSG_EXEC)
    check_exec_roundtrip (payload, h->len);
  else if (h->type == SBX_MSG_EXIT)
    check_exit (payload, h->len);
}

/* Feeds DATA in pieces of the sizes STEP gives (0: all at once). */
static struct feed_result
feed_all (const uint8_t *data, size_t size, unsigned step, bool check)
{
  struct feed_result res = { 0, 14695981039346656037ull, 0 };
  const unsigned char *p = data, *payload;
  struct sbx_frame_hdr h;
  size_t left = size, piece, n;
  unsigned k = 0;

  memset (&rd, 0, sizeof rd);
  while (left > 0 && res.last >= 0)
    {
      piece = step ? 1 + (data[k++ % size] + step) % 97 : left;
      n = piece < left ? piece : left;
      left -= n;
      while (n > 0 || res.last == 1)
        {
          res.last = sbx_frame_feed (&rd, &p, &n, &h, &payload);
          if (res.last != 1)
            break;
          res.frames++;
          res.hash = hash_bytes (res.hash, &h, sizeof h);
          res.hash = hash_bytes (res.hash, payload, h.len);
          if (check)
            check_frame (&h, payload);
        }
      CHECK (res.last < 0 || n == 0);
    }
  return res;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct feed_result whole, pieces;

  if (size == 0)
    return 0;
  whole = feed_all (data, size, 0, true);
  pieces = feed_all (data, size, 1 + data[0] % 13, false);
  CHECK (whole.frames == pieces.frames && whole.hash == pieces.hash);
  CHECK ((whole.last < 0) == (pieces.last < 0));
  check_exec_roundtrip (data, size);
  check_exit (data, size);
  return 0;
}

#ifndef SBX_LIBFUZZER

/* The check program: a deterministic corpus. */

#define CORPUS_SIZE 20000
#define INPUT_MAX (3 * (SBX_PROTO_HDR_SIZE + SBX_PROTO_MAX_PAYLOAD))

/* xorshift64, not fuzz_rnd: this harness's corpus has always come from it. */
static uint64_t rng = 0x5bd1e9955bd1e995ull;

static uint32_t
rnd (uint32_t n)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return n ? (uint32_t) (rng % n) : 0;
}

static void
rnd_word (char *buf, size_t cap)
{
  static const char alphabet[] = "abcXYZ019=/_- .$";
  size_t n = rnd ((uint32_t) cap - 1);

  for (size_t i = 0; i < n; i++)
    buf[i] = alphabet[rnd (sizeof alphabet - 1)];
  buf[n] = '\0';
}

/* A valid EXEC payload with random contents. */
static size_t
make_exec (unsigned char *out, size_t cap)
{
  static char words[40][24];
  char *argv[21] = { 0 }, *envp[21] = { 0 };
  size_t argc = 1 + rnd (20), envc = rnd (20);
  int n;

  for (size_t i = 0; i < argc; i++)
    {
      rnd_word (words[i], sizeof words[i]);
      argv[i] = words[i];
    }
  for (size_t i = 0; i < envc; i++)
    {
      rnd_word (words[20 + i], sizeof words[20 + i] - 3);
      memmove (words[20 + i] + 2, words[20 + i], strlen (words[20 + i]) + 1);
      memcpy (words[20 + i], "K=", 2);
      envp[i] = words[20 + i];
    }
  n = sbx_exec_encode (out, cap, argv, envp, rnd (2) ? "/tmp" : NULL, rnd (2) ? "1000:1000" : NULL, rnd (8),
                       rnd (2) ? rnd (100000) : 0, (uint16_t) rnd (300), (uint16_t) rnd (300));
  return n > 0 ? (size_t) n : 0;
}

static size_t
put_frame (unsigned char *out, uint16_t type, uint32_t chan, const unsigned char *payload, size_t len)
{
  struct sbx_frame_hdr h = { .len = (uint32_t) len, .type = type, .chan = chan };

  sbx_frame_hdr_encode (out, &h);
  memmove (out + SBX_PROTO_HDR_SIZE, payload, len);
  return SBX_PROTO_HDR_SIZE + len;
}

/* A stream of one to three valid frames of assorted types. */
static size_t
make_stream (unsigned char *out)
{
  static unsigned char payload[SBX_PROTO_MAX_PAYLOAD];
  struct sbx_exit_msg m = { .status = (int32_t) rnd (128) };
  size_t n = 0, frames = 1 + rnd (3), len;
  uint32_t v = rnd (1u << 20);

  for (size_t i = 0; i < frames; i++)
    switch (rnd (5))
      {
      case 0:
        len = make_exec (payload, sizeof payload);
        n += put_frame (out + n, SBX_MSG_EXEC, rnd (100), payload, len);
        break;
      case 1:
        sbx_exit_encode (payload, &m);
        n += put_frame (out + n, SBX_MSG_EXIT, rnd (100), payload, 12);
        break;
      case 2:
        n += put_frame (out + n, SBX_MSG_CREDIT, rnd (100), (unsigned char *) &v, 4);
        break;
      case 3:
        len = rnd (2) ? rnd (64) : rnd (SBX_PROTO_MAX_PAYLOAD + 1);
        memset (payload, 'x', len);
        n += put_frame (out + n, rnd (2) ? SBX_MSG_STDIN : SBX_MSG_PING, rnd (100), payload, len);
        break;
      default:
        n += put_frame (out + n, SBX_MSG_STDIN_EOF, rnd (100), payload, 0);
        break;
      }
  return n;
}

static size_t
mutate (unsigned char *p, size_t n)
{
  size_t edits = 1 + rnd (8);

  for (size_t i = 0; i < edits && n > 0; i++)
    switch (rnd (5))
      {
      case 0:
        p[rnd ((uint32_t) n)] ^= (unsigned char) (1u << rnd (8));
        break;
      case 1:
        p[rnd ((uint32_t) n)] = (unsigned char) rnd (256);
        break;
      case 2:
        n = rnd ((uint32_t) n + 1); /* truncate */
        break;
      case 3:
        p[rnd ((uint32_t) n)] = rnd (2) ? 0 : 0xff;
        break;
      default:
        if (n + 8 < INPUT_MAX)
          {
            size_t at = rnd ((uint32_t) n + 1);
            memmove (p + at + 4, p + at, n - at);
            for (int j = 0; j < 4; j++)
              p[at + j] = (unsigned char) rnd (256);
            n += 4;
          }
        break;
      }
  return n;
}

static size_t
make_input (unsigned i, uint8_t *out)
{
  size_t n;

  switch (i % 4)
    {
    case 0: /* an EXEC payload, mutated */
      n = make_exec (out, INPUT_MAX);
      return mutate (out, n);
    case 1: /* a frame stream, mutated */
      n = make_stream (out);
      return mutate (out, n);
    case 2: /* a valid frame stream */
      return make_stream (out);
    default: /* random bytes */
      n = rnd (2) ? rnd (64) : rnd (4096);
      for (size_t j = 0; j < n; j++)
        out[j] = (unsigned char) rnd (256);
      return n;
    }
}

int
main (void)
{
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .make_input = make_input,
    .what = "inputs to the frame, EXEC and EXIT decoders",
  };

  fuzz_corpus_run (&corpus, 1);
  return tap_done ();
}

#endif
