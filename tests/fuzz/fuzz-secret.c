/* Fuzz harness for the SECRET frame's decoder (sbx_secret_decode in
 * src/lib/proto.c), the one that sbx-init runs on what the monitor sends:
 * arbitrary bytes go to it as a payload and, after a frame header, through
 * sbx_frame_feed. A payload that decodes keeps its promises (a known kind, a
 * name of its kind's alphabet and bounds, a value in bounds with no NUL,
 * inside the input) and survives a re-encode byte for byte.
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (valid
 * payloads, mutated, and random bytes) that prints TAP. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include "proto.h"

#define FUZZ_NAME "fuzz-secret"
#include "fuzz.h"

static struct sbx_frame_reader rd;
static unsigned char reenc[SBX_SECRET_PAYLOAD_MAX];
static unsigned char framed[SBX_PROTO_HDR_SIZE + SBX_SECRET_PAYLOAD_MAX + 16];
static unsigned decoded;

static bool
name_ok (const struct sbx_secret_msg *m)
{
  size_t n = strlen (m->name);
  if (n == 0 || n > (m->kind == SBX_SECRET_ENV ? SBX_SECRET_NAME_MAX : SBX_SECRET_FILE_NAME_MAX))
    return false;
  if (m->kind == SBX_SECRET_ENV)
    return strspn (m->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n
           && !(m->name[0] >= '0' && m->name[0] <= '9');
  return strspn (m->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-") == n
         && strchr ("_.+-", m->name[0]) == NULL;
}

static void
check_payload (const uint8_t *data, size_t size)
{
  struct sbx_secret_msg m;
  int n;

  if (sbx_secret_decode (data, size, &m) != 0)
    return;
  decoded++;
  CHECK (m.kind == SBX_SECRET_ENV || m.kind == SBX_SECRET_FILE);
  CHECK (name_ok (&m));
  CHECK (m.value_len >= 1 && m.value_len <= SBX_SECRET_VALUE_MAX);
  CHECK (m.value >= data && m.value + m.value_len == data + size);
  CHECK (memchr (m.value, '\0', m.value_len) == NULL);
  n = sbx_secret_encode (reenc, sizeof reenc, m.kind, m.name, m.value, m.value_len);
  CHECK (n > 0 && (size_t) n == size && memcmp (reenc, data, size) == 0);
}

/* The same bytes as a SECRET frame on channel 0, through the reader. */
static void
check_framed (const uint8_t *data, size_t size)
{
  struct sbx_frame_hdr h = { .len = (uint32_t) size, .type = SBX_MSG_SECRET }, got;
  const unsigned char *p = framed, *payload;
  size_t left;
  int r;

  if (size > SBX_SECRET_PAYLOAD_MAX)
    return;
  sbx_frame_hdr_encode (framed, &h);
  memcpy (framed + SBX_PROTO_HDR_SIZE, data, size);
  left = SBX_PROTO_HDR_SIZE + size;
  memset (&rd, 0, sizeof rd);
  r = sbx_frame_feed (&rd, &p, &left, &got, &payload);
  CHECK (r == 1 && got.type == SBX_MSG_SECRET && got.len == size && left == 0);
  CHECK (memcmp (payload, data, size) == 0);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  check_payload (data, size);
  check_framed (data, size);
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 20000
#define INPUT_MAX (SBX_SECRET_PAYLOAD_MAX + 64)

/* A valid payload: either kind, a name of its alphabet, a value. */
static size_t
make_valid (uint8_t *out)
{
  static const char env_chars[] = "ABCXYZabcxyz019_";
  static const char file_chars[] = "abcXYZ019_.+-";
  char name[SBX_SECRET_NAME_MAX + 1];
  static char value[SBX_SECRET_VALUE_MAX];
  uint16_t kind = fuzz_rnd (2) ? SBX_SECRET_ENV : SBX_SECRET_FILE;
  size_t nl = 1 + fuzz_rnd (kind == SBX_SECRET_ENV ? SBX_SECRET_NAME_MAX : SBX_SECRET_FILE_NAME_MAX);
  size_t vl = 1 + (fuzz_rnd (8) ? fuzz_rnd (64) : fuzz_rnd (SBX_SECRET_VALUE_MAX));
  int n;

  for (size_t i = 0; i < nl; i++)
    name[i] = kind == SBX_SECRET_ENV ? env_chars[fuzz_rnd (i == 0 ? 12 : sizeof env_chars - 1)]
                                     : file_chars[fuzz_rnd (i == 0 ? 9 : sizeof file_chars - 1)];
  name[nl] = '\0';
  for (size_t i = 0; i < vl; i++)
    value[i] = (char) (1 + fuzz_rnd (255));
  n = sbx_secret_encode (out, INPUT_MAX, kind, name, value, vl);
  CHECK (n > 0);
  return (size_t) n;
}

static size_t
make_input (unsigned i, uint8_t *out)
{
  size_t n;

  switch (i % 4)
    {
    case 0: /* valid */
      return make_valid (out);
    case 1: /* valid, then a few bytes changed, or cut */
    case 2:
      n = make_valid (out);
      for (unsigned e = 1 + fuzz_rnd (4); e > 0 && n > 0; e--)
        switch (fuzz_rnd (4))
          {
          case 0:
            n = fuzz_rnd ((uint32_t) n + 1);
            break;
          case 1:
            out[fuzz_rnd (4 < n ? 4 : (uint32_t) n)] = (uint8_t) fuzz_rnd (256); /* kind, name length */
            break;
          case 2:
            out[fuzz_rnd ((uint32_t) n)] = (uint8_t) (fuzz_rnd (2) ? 0 : fuzz_rnd (256));
            break;
          default:
            if (n + 1 < INPUT_MAX)
              out[n++] = (uint8_t) fuzz_rnd (256);
            break;
          }
      return n;
    default: /* random bytes */
      n = fuzz_rnd (2) ? fuzz_rnd (64) : fuzz_rnd (4096);
      for (size_t j = 0; j < n; j++)
        out[j] = (uint8_t) fuzz_rnd (256);
      return n;
    }
}

int
main (void)
{
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 0x5ec2e7,
    .make_input = make_input,
    .what = "inputs to the SECRET decoder and the frame reader",
  };

  fuzz_corpus_run (&corpus, 2);
  tap_ok (decoded >= CORPUS_SIZE / 4, "the corpus reached the decoder's success path (%u decoded)", decoded);
  return tap_done ();
}

#endif
