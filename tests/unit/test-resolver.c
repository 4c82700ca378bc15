/* Unit tests of the DNS forwarder (src/lib/resolver.c), in process on
 * loopback, no root needed.
 *
 * Fake upstreams listen on one port P, UDP and TCP, on 127.0.0.1 (answers:
 * an A record 1.2.3.4 over UDP, 5.6.7.8 over TCP) and on 127.0.0.2 (never
 * answers); nothing listens on 127.0.0.3. The test answers them itself, in
 * the same poll loop that drives the resolver. Proved: UDP and TCP queries
 * answered with the client's id, spoofed replies (wrong question, wrong id,
 * wrong source port) ignored, truncated answers relayed, malformed queries
 * refused and counted, SERVFAIL after the timeout, failover on timeout and
 * on refusal, the bounds on queries outstanding and on connections, idle
 * connections closed, and an upstream that is the resolver itself never
 * used; listening on addresses not up yet, and the bound on addresses.
 * Domain rules: only listed names forwarded (others REFUSED here, UDP and
 * TCP), the answer's addresses handed over first (UDP and TCP), TTLs
 * capped, truncated and EDNS answers as without rules, SERVFAIL when they
 * cannot be allowed. */
#include "config.h"
#include "resolver.h"
#include "tap.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

enum fake_mode { FAKE_ANSWER, FAKE_SPOOF, FAKE_TRUNC, FAKE_SILENT };

/* A fake upstream: UDP and TCP sockets on one address and port. */
typedef struct fake {
  int udp, tcp;
  int conns[32];
  size_t nconns;
  enum fake_mode mode;
  unsigned udp_seen, tcp_seen;
  uint16_t last_id; /* of the last query it got */
} fake;

static fake fakes[2]; /* 127.0.0.1 answers, 127.0.0.2 is silent */
static uint16_t up_port;
static int spoofer = -1; /* 127.0.0.1, another port */

static const unsigned char A_UDP[4] = { 1, 2, 3, 4 }, A_TCP[4] = { 5, 6, 7, 8 }, A_SPOOF[4] = { 6, 6, 6, 6 };

static struct sockaddr_in
sin_of (int last, uint16_t port)
{
  struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons (port) };
  sin.sin_addr.s_addr = htonl (0x7f000000u | (uint32_t) last);
  return sin;
}

static uint16_t
get16 (const unsigned char *p)
{
  return (uint16_t) (p[0] << 8 | p[1]);
}

static void
put16 (unsigned char *p, uint16_t v)
{
  p[0] = (unsigned char) (v >> 8);
  p[1] = (unsigned char) v;
}

/* ---- messages ---- */

/* A query for NAME (dotted), type A, class IN, RD set. */
static size_t
make_query (unsigned char *out, uint16_t id, const char *name)
{
  size_t n = 12;
  memset (out, 0, 12);
  put16 (out, id);
  out[2] = 0x01;
  put16 (out + 4, 1);
  for (const char *l = name; *l;)
    {
      size_t len = strcspn (l, ".");
      out[n++] = (unsigned char) len;
      memcpy (out + n, l, len);
      n += len;
      l += len + (l[len] == '.');
    }
  out[n++] = 0;
  put16 (out + n, 1);
  put16 (out + n + 2, 1);
  return n + 4;
}

static size_t
question_end (const unsigned char *p, size_t n)
{
  size_t at = 12;
  while (at < n && p[at])
    at += 1 + p[at];
  return at + 5 <= n ? at + 5 : 0;
}

/* The answer to the query Q: its question and one A record ADDR. */
static size_t
make_answer (const unsigned char *q, size_t n, const unsigned char addr[4], unsigned char *out)
{
  static const unsigned char rr[] = { 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4 };
  size_t qend = question_end (q, n);
  if (qend == 0)
    return 0;
  memcpy (out, q, qend);
  out[2] = 0x81;
  out[3] = 0x80;
  put16 (out + 6, 1);
  put16 (out + 8, 0);
  put16 (out + 10, 0);
  memcpy (out + qend, rr, sizeof rr);
  memcpy (out + qend + sizeof rr, addr, 4);
  return qend + sizeof rr + 4;
}

/* Whether P answers the query ID with RCODE and, when ADDR, that A record. */
static bool
is_answer (const unsigned char *p, ssize_t n, uint16_t id, int rcode, const unsigned char *addr)
{
  if (n < 12 || get16 (p) != id || !(p[2] & 0x80) || (p[3] & 0x0f) != rcode)
    return false;
  return !addr || (n >= 16 && memcmp (p + n - 4, addr, 4) == 0);
}

/* ---- the fake upstreams ---- */

static void
fake_udp (fake *f)
{
  unsigned char q[4096], a[4200];
  struct sockaddr_storage from;
  socklen_t fl = sizeof from;
  ssize_t n = recvfrom (f->udp, q, sizeof q, MSG_DONTWAIT, (struct sockaddr *) &from, &fl);
  if (n < 12)
    return;
  f->udp_seen++;
  f->last_id = get16 (q);
  size_t m = make_answer (q, (size_t) n, A_UDP, a);
  if (f->mode == FAKE_SILENT || m == 0)
    return;
  if (f->mode == FAKE_SPOOF)
    {
      /* Another question under the right id; the right question under
       * another id; the right answer from another port. */
      memcpy (a + m - 4, A_SPOOF, 4);
      a[13] ^= 0x01;
      sendto (f->udp, a, m, 0, (struct sockaddr *) &from, fl);
      a[13] ^= 0x01;
      put16 (a, (uint16_t) (get16 (q) ^ 1));
      sendto (f->udp, a, m, 0, (struct sockaddr *) &from, fl);
      put16 (a, get16 (q));
      sendto (spoofer, a, m, 0, (struct sockaddr *) &from, fl);
      memcpy (a + m - 4, A_UDP, 4);
    }
  if (f->mode == FAKE_TRUNC)
    {
      m = question_end (q, (size_t) n);
      a[2] |= 0x02;
      put16 (a + 6, 0);
    }
  sendto (f->udp, a, m, 0, (struct sockaddr *) &from, fl);
}

static void
fake_accept (fake *f)
{
  int fd = accept (f->tcp, NULL, NULL);
  if (fd < 0)
    return;
  if (f->nconns == ARRAY_SIZE (f->conns))
    close (fd);
  else
    f->conns[f->nconns++] = fd;
}

/* Reads one length-prefixed query from connection I (the resolver writes
 * it whole) and answers it unless silent; closes on EOF. */
static void
fake_tcp (fake *f, size_t i)
{
  unsigned char q[65537], a[65600];
  int fd = f->conns[i];
  ssize_t n = recv (fd, q, 2, MSG_WAITALL);
  if (n == 2)
    n = recv (fd, q + 2, get16 (q), MSG_WAITALL);
  if (n <= 0 || n != get16 (q))
    {
      close (fd);
      f->conns[i] = f->conns[--f->nconns];
      return;
    }
  f->tcp_seen++;
  f->last_id = get16 (q + 2);
  size_t m = make_answer (q + 2, (size_t) n, A_TCP, a + 2);
  if (f->mode == FAKE_SILENT || m == 0)
    return;
  put16 (a, (uint16_t) m);
  send (fd, a, m + 2, MSG_NOSIGNAL);
}

static size_t
fake_pollfds (const fake *f, struct pollfd *pf)
{
  size_t n = 0;
  pf[n++] = (struct pollfd){ .fd = f->udp, .events = POLLIN };
  pf[n++] = (struct pollfd){ .fd = f->tcp, .events = POLLIN };
  for (size_t i = 0; i < f->nconns; i++)
    pf[n++] = (struct pollfd){ .fd = f->conns[i], .events = POLLIN };
  return n;
}

static void
fake_dispatch (fake *f, const struct pollfd *pf, size_t n)
{
  for (size_t k = 0; k < n; k++)
    {
      if (!pf[k].revents)
        continue;
      if (pf[k].fd == f->udp)
        fake_udp (f);
      else if (pf[k].fd == f->tcp)
        fake_accept (f);
      else
        for (size_t i = 0; i < f->nconns; i++)
          if (f->conns[i] == pf[k].fd)
            {
              fake_tcp (f, i);
              break;
            }
    }
}

static int
bound_socket (int type, int last, uint16_t port)
{
  int fd = socket (AF_INET, type | SOCK_CLOEXEC, 0);
  struct sockaddr_in sin = sin_of (last, port);
  int one = 1;
  setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind (fd, (struct sockaddr *) &sin, sizeof sin) < 0 || (type == SOCK_STREAM && listen (fd, 64) < 0))
    {
      if (fd >= 0)
        close (fd);
      return -1;
    }
  return fd;
}

static uint16_t
port_of (int fd)
{
  struct sockaddr_in sin;
  socklen_t l = sizeof sin;
  return getsockname (fd, (struct sockaddr *) &sin, &l) == 0 ? ntohs (sin.sin_port) : 0;
}

/* Both fakes on one free port. */
static bool
fakes_start (void)
{
  for (int tries = 0; tries < 50; tries++)
    {
      int u1 = bound_socket (SOCK_DGRAM, 1, 0);
      uint16_t p = u1 >= 0 ? port_of (u1) : 0;
      int t1 = bound_socket (SOCK_STREAM, 1, p), u2 = bound_socket (SOCK_DGRAM, 2, p),
          t2 = bound_socket (SOCK_STREAM, 2, p);
      if (u1 >= 0 && t1 >= 0 && u2 >= 0 && t2 >= 0)
        {
          fakes[0] = (fake){ .udp = u1, .tcp = t1, .mode = FAKE_ANSWER };
          fakes[1] = (fake){ .udp = u2, .tcp = t2, .mode = FAKE_SILENT };
          up_port = p;
          spoofer = bound_socket (SOCK_DGRAM, 1, 0);
          return spoofer >= 0;
        }
      int fds[] = { u1, t1, u2, t2 };
      for (size_t i = 0; i < ARRAY_SIZE (fds); i++)
        if (fds[i] >= 0)
          close (fds[i]);
    }
  return false;
}

/* ---- driving the loop ---- */

/* Runs the resolver and the fakes for MS milliseconds, or until WATCH (when
 * not -1) is readable; whether it was. */
static bool
run (sbx_resolver *r, int watch, int ms)
{
  uint64_t end = now_ms_monotonic () + (uint64_t) ms;
  for (;;)
    {
      struct pollfd pf[SBX_RESOLVER_POLLFDS_MAX + 2 * 34 + 1];
      size_t nr = sbx_resolver_pollfds (r, pf, SBX_RESOLVER_POLLFDS_MAX);
      size_t n0 = fake_pollfds (&fakes[0], pf + nr);
      size_t n1 = fake_pollfds (&fakes[1], pf + nr + n0);
      size_t n = nr + n0 + n1;
      if (watch >= 0)
        pf[n++] = (struct pollfd){ .fd = watch, .events = POLLIN };
      uint64_t now = now_ms_monotonic ();
      if (now >= end)
        return false;
      int t = (int) (end - now), rt = sbx_resolver_timeout_ms (r);
      if (rt >= 0 && rt < t)
        t = rt;
      if (poll (pf, n, t) < 0 && errno != EINTR)
        return false;
      sbx_resolver_dispatch (r, pf, nr);
      fake_dispatch (&fakes[0], pf + nr, n0);
      fake_dispatch (&fakes[1], pf + nr + n0, n1);
      if (watch >= 0 && pf[n - 1].revents)
        return true;
    }
}

static int
client (int type, uint16_t port)
{
  int fd = socket (AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_in sin = sin_of (1, port);
  if (connect (fd, (struct sockaddr *) &sin, sizeof sin) < 0 && errno != EINPROGRESS)
    {
      close (fd);
      return -1;
    }
  return fd;
}

/* Sends the query Q over UDP and waits up to MS for the answer in A. */
static ssize_t
ask_udp (sbx_resolver *r, int fd, const unsigned char *q, size_t n, unsigned char *a, int ms)
{
  if (send (fd, q, n, 0) != (ssize_t) n || !run (r, fd, ms))
    return -1;
  return recv (fd, a, 65536, MSG_DONTWAIT);
}

/* Reads one length-prefixed answer from the TCP client FD into A. */
static ssize_t
read_tcp (sbx_resolver *r, int fd, unsigned char *a, int ms)
{
  size_t have = 0;
  uint64_t end = now_ms_monotonic () + (uint64_t) ms;
  while (have < 2 || have < 2 + (size_t) get16 (a))
    {
      ssize_t got = recv (fd, a + have, (have < 2 ? 2 : 2 + (size_t) get16 (a)) - have, MSG_DONTWAIT);
      if (got == 0)
        return -1;
      if (got > 0)
        {
          have += (size_t) got;
          continue;
        }
      uint64_t now = now_ms_monotonic ();
      if (errno != EAGAIN || now >= end)
        return -1;
      run (r, fd, (int) (end - now));
    }
  memmove (a, a + 2, have - 2);
  return (ssize_t) (have - 2);
}

/* A TCP client connected to the resolver on PORT. */
static int
tcp_client (sbx_resolver *r, uint16_t port)
{
  int fd = client (SOCK_STREAM, port);
  run (r, -1, 20);
  return fd;
}

static ssize_t
ask_tcp (sbx_resolver *r, int fd, const unsigned char *q, size_t n, unsigned char *a, int ms)
{
  unsigned char f[1024];
  put16 (f, (uint16_t) n);
  memcpy (f + 2, q, n);
  if (send (fd, f, n + 2, MSG_NOSIGNAL) != (ssize_t) n + 2)
    return -1;
  return read_tcp (r, fd, a, ms);
}

/* Whether the peer closed FD (after running R for MS). */
static bool
closed (int fd)
{
  unsigned char b;
  ssize_t n = recv (fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* A resolver forwarding to 127.0.0.LAST (each of N), listening on
 * 127.0.0.1; its port in *RET_PORT. With SELF, its only upstream is
 * itself. */
static sbx_resolver *
resolver_on (const int *last, size_t n, bool self, uint16_t *ret_port)
{
  for (int tries = 0; tries < 50; tries++)
    {
      int probe = bound_socket (SOCK_DGRAM, 1, 0);
      uint16_t port = port_of (probe);
      close (probe);
      sbx_cidr up[4] = { 0 };
      for (size_t i = 0; i < n; i++)
        {
          struct sockaddr_in sin = sin_of (last[i], 0);
          up[i].family = AF_INET;
          memcpy (up[i].addr, &sin.sin_addr, 4);
        }
      sbx_resolver *r = sbx_resolver_new (up, n, self ? port : up_port);
      struct in_addr lo = { htonl (INADDR_LOOPBACK) };
      sbx_error *err = NULL;
      if (sbx_resolver_listen (r, AF_INET, &lo, port, &err) == 0)
        {
          *ret_port = port;
          return r;
        }
      sbx_error_free (err);
      sbx_resolver_free (r);
    }
  return NULL;
}

/* ---- tests ---- */

static void
test_check (void)
{
  unsigned char q[600];
  size_t n = make_query (q, 7, "www.example.com");
  bool ok = sbx_dns_query_check (q, n) == 0;
  q[2] |= 0x80;
  ok = ok && sbx_dns_query_check (q, n) < 0;
  q[2] = 0x01 | (2 << 3);
  ok = ok && sbx_dns_query_check (q, n) < 0;
  q[2] = 0x01;
  put16 (q + 4, 2);
  ok = ok && sbx_dns_query_check (q, n) < 0;
  put16 (q + 4, 1);
  ok = ok && sbx_dns_query_check (q, n - 1) < 0 && sbx_dns_query_check (q, 11) < 0;
  tap_ok (ok, "query check: a query passes; a response, another opcode, two questions, a cut message do not");

  ok = true;
  n = make_query (q, 7, "a.example");
  q[12] = 0xc0;
  ok = ok && sbx_dns_query_check (q, n) < 0;
  char name[300];
  memset (name, 'a', 63);
  name[63] = '\0';
  ok = ok && sbx_dns_query_check (q, make_query (q, 7, name)) == 0;
  name[63] = 'a';
  name[64] = '\0';
  ok = ok && sbx_dns_query_check (q, make_query (q, 7, name)) < 0;
  /* 4 labels of 63: 4 * 64 + 1 = 257 bytes; 3 of 63 and one of 61: 255. */
  memset (name, 'a', 63), name[63] = '.';
  memset (name + 64, 'b', 63), name[127] = '.';
  memset (name + 128, 'c', 63), name[191] = '.';
  memset (name + 192, 'd', 61), name[253] = '\0';
  ok = ok && sbx_dns_query_check (q, make_query (q, 7, name)) == 0;
  name[253] = 'd', name[254] = 'd', name[255] = '\0';
  ok = ok && sbx_dns_query_check (q, make_query (q, 7, name)) < 0;
  tap_ok (ok, "query check: compression pointers, labels over 63 and names over 255 refused; the limits pass");
}

static void
test_listen (void)
{
  sbx_resolver *r = sbx_resolver_new (NULL, 0, 53);
  struct in_addr v4;
  struct in6_addr v6;
  sbx_error *err = NULL;
  inet_pton (AF_INET, "198.51.100.53", &v4);
  inet_pton (AF_INET6, "2001:db8::53", &v6);
  bool ok4 = sbx_resolver_listen (r, AF_INET, &v4, 0, &err) == 0;
  struct pollfd pf[SBX_RESOLVER_POLLFDS_MAX];
  size_t n = sbx_resolver_pollfds (r, pf, ARRAY_SIZE (pf));
  bool same = n == 2 && port_of (pf[0].fd) != 0 && port_of (pf[0].fd) == port_of (pf[1].fd);
  int rc6 = sbx_resolver_listen (r, AF_INET6, &v6, 0, &err);
  bool no6 = rc6 < 0 && err && (err->errnum == EAFNOSUPPORT || err->errnum == EADDRNOTAVAIL);
  sbx_error_free (err);
  err = NULL;
  tap_ok (ok4 && same && (rc6 == 0 || no6),
          "listens on addresses not up (198.51.100.53%s), port 0 taking one port for UDP and TCP",
          rc6 == 0 ? ", 2001:db8::53" : "; no IPv6 here");
  int total = ok4 + (rc6 == 0);
  for (uint32_t a = 54; total <= SBX_RESOLVER_LISTEN_MAX; a++, total++)
    {
      v4.s_addr = htonl (0xc6336400u | a);
      if (sbx_resolver_listen (r, AF_INET, &v4, 0, &err) < 0)
        break;
    }
  tap_ok (total == SBX_RESOLVER_LISTEN_MAX && err && err->code == SBX_E_INVALID_ARGUMENT, "at most %d addresses",
          SBX_RESOLVER_LISTEN_MAX);
  sbx_error_free (err);
  sbx_resolver_free (r);
}

static void
test_answers (void)
{
  uint16_t port;
  unsigned char q[512], a[65600];
  sbx_resolver *r = resolver_on ((const int[]){ 1 }, 1, false, &port);
  if (!tap_ok (r != NULL, "a resolver listens on 127.0.0.1, forwarding to 127.0.0.1:%u", up_port))
    exit (1);
  int u = client (SOCK_DGRAM, port);

  bool all = true, changed = false;
  for (uint16_t id = 0x1230; id < 0x1234; id++)
    {
      size_t n = make_query (q, id, "www.example.com");
      ssize_t m = ask_udp (r, u, q, n, a, 1000);
      all = all && is_answer (a, m, id, 0, A_UDP) && memcmp (a + 12, q + 12, n - 12) == 0;
      changed = changed || fakes[0].last_id != id;
    }
  tap_ok (all, "UDP queries answered from the upstream, with the client's id and question");
  tap_ok (changed, "the upstream sees random ids, not the client's");

  int t = tcp_client (r, port);
  unsigned char two[512];
  size_t n1 = make_query (two + 2, 0x1111, "one.example");
  put16 (two, (uint16_t) n1);
  size_t n2 = make_query (two + 4 + n1, 0x2222, "two.example");
  put16 (two + 2 + n1, (uint16_t) n2);
  send (t, two, n1 + n2 + 4, MSG_NOSIGNAL);
  ssize_t m1 = read_tcp (r, t, a, 1000);
  uint16_t id1 = m1 >= 12 ? get16 (a) : 0;
  bool ok1 = is_answer (a, m1, id1, 0, A_TCP) && (id1 == 0x1111 || id1 == 0x2222);
  ssize_t m2 = read_tcp (r, t, a, 1000);
  bool ok2 = is_answer (a, m2, (uint16_t) (id1 ^ 0x1111 ^ 0x2222), 0, A_TCP);
  tap_ok (ok1 && ok2 && fakes[0].tcp_seen == 2,
          "two pipelined TCP queries answered over TCP to the upstream, each with its client's id");
  close (t);

  uint64_t answered, failed, malformed;
  fakes[0].mode = FAKE_SPOOF;
  size_t n = make_query (q, 0x4242, "www.example.com");
  ssize_t m = ask_udp (r, u, q, n, a, 1000);
  bool first = is_answer (a, m, 0x4242, 0, A_UDP) && memcmp (a + 12, q + 12, n - 12) == 0;
  run (r, -1, 100);
  m = recv (u, a, sizeof a, MSG_DONTWAIT);
  sbx_resolver_counts (r, &answered, NULL, NULL);
  tap_ok (first && m < 0 && answered == 7,
          "replies with another question, another id or from another port are ignored; the real one relayed");

  fakes[0].mode = FAKE_TRUNC;
  n = make_query (q, 0x5151, "big.example");
  m = ask_udp (r, u, q, n, a, 1000);
  tap_ok (is_answer (a, m, 0x5151, 0, NULL) && (a[2] & 0x02) && (size_t) m == n,
          "a truncated UDP answer is relayed as it is");
  fakes[0].mode = FAKE_ANSWER;

  /* Malformed: too short, a response, a pointer in the name, two
   * questions, another opcode. */
  unsigned seen = fakes[0].udp_seen;
  bool refused = ask_udp (r, u, q, 5, a, 150) < 0;
  n = make_query (q, 0x6001, "x.example");
  q[2] |= 0x80;
  refused = refused && ask_udp (r, u, q, n, a, 150) < 0;
  q[2] = 0x01;
  q[12] = 0xc0;
  m = ask_udp (r, u, q, n, a, 1000);
  bool formerr = is_answer (a, m, 0x6001, 1, NULL) && m == 12;
  n = make_query (q, 0x6002, "x.example");
  put16 (q + 4, 2);
  m = ask_udp (r, u, q, n, a, 1000);
  formerr = formerr && is_answer (a, m, 0x6002, 1, NULL);
  n = make_query (q, 0x6003, "x.example");
  q[2] = 2 << 3;
  m = ask_udp (r, u, q, n, a, 1000);
  bool notimp = is_answer (a, m, 0x6003, 4, NULL);
  sbx_resolver_counts (r, NULL, NULL, &malformed);
  tap_ok (refused && formerr && notimp && malformed == 5 && fakes[0].udp_seen == seen,
          "malformed UDP queries never reach the upstream: dropped, FORMERR or NOTIMP, and counted");

  t = tcp_client (r, port);
  n = make_query (q, 0x7001, "x.example");
  q[12] = 64;
  m = ask_tcp (r, t, q, n, a, 1000);
  formerr = is_answer (a, m, 0x7001, 1, NULL);
  m = ask_tcp (r, t, q, 3, a, 1000);
  sbx_resolver_counts (r, NULL, NULL, &malformed);
  tap_ok (formerr && m < 0 && closed (t) && malformed == 7,
          "over TCP a malformed query gets FORMERR, a message without a header closes the connection");
  close (t);

  /* Idle connections. */
  sbx_resolver_set_idle_ms (r, 200);
  t = tcp_client (r, port);
  int rt = sbx_resolver_timeout_ms (r);
  run (r, -1, 100);
  bool open_still = !closed (t);
  run (r, -1, 300);
  tap_ok (rt > 0 && rt <= 200 && open_still && closed (t), "an idle TCP client is closed after the idle time");
  close (t);
  sbx_resolver_set_idle_ms (r, SBX_RESOLVER_IDLE_MS);

  /* The connection cap, connecting in batches so the backlog never
   * overflows. */
  int cs[SBX_RESOLVER_CONN_MAX + 6];
  for (size_t i = 0; i < ARRAY_SIZE (cs); i++)
    {
      cs[i] = client (SOCK_STREAM, port);
      if (i % 8 == 7)
        run (r, -1, 20);
    }
  run (r, -1, 100);
  int nclosed = 0, first_open = -1;
  for (size_t i = 0; i < ARRAY_SIZE (cs); i++)
    if (closed (cs[i]))
      nclosed++;
    else if (first_open < 0)
      first_open = cs[i];
  n = make_query (q, 0x7777, "cap.example");
  m = first_open >= 0 ? ask_tcp (r, first_open, q, n, a, 1000) : -1;
  tap_ok (nclosed == 6 && is_answer (a, m, 0x7777, 0, A_TCP),
          "%d TCP clients: %d closed at once, the %d kept are served", (int) ARRAY_SIZE (cs), nclosed,
          SBX_RESOLVER_CONN_MAX);
  for (size_t i = 0; i < ARRAY_SIZE (cs); i++)
    close (cs[i]);
  run (r, -1, 50);

  sbx_resolver_counts (r, &answered, &failed, &malformed);
  tap_ok (answered == 9 && failed == 0 && malformed == 7, "counts: %llu answered, %llu failed, %llu malformed",
          (unsigned long long) answered, (unsigned long long) failed, (unsigned long long) malformed);
  close (u);
  sbx_resolver_free (r);
}

static void
test_failures (void)
{
  uint16_t port;
  unsigned char q[512], a[65600];
  uint64_t answered, failed;

  /* Only the silent upstream: SERVFAIL after the timeout. */
  sbx_resolver *r = resolver_on ((const int[]){ 2 }, 1, false, &port);
  sbx_resolver_set_timeout_ms (r, 200);
  int u = client (SOCK_DGRAM, port);
  size_t n = make_query (q, 0x3131, "slow.example");
  send (u, q, n, 0);
  run (r, -1, 20);
  int rt = sbx_resolver_timeout_ms (r);
  uint64_t t0 = now_ms_monotonic ();
  bool got = run (r, u, 1000);
  uint64_t waited = now_ms_monotonic () - t0;
  ssize_t m = got ? recv (u, a, sizeof a, MSG_DONTWAIT) : -1;
  sbx_resolver_counts (r, NULL, &failed, NULL);
  tap_ok (is_answer (a, m, 0x3131, 2, NULL) && (size_t) m == n && memcmp (a + 12, q + 12, n - 12) == 0 && rt > 0
              && rt <= 200 && waited >= 100 && failed == 1 && fakes[1].udp_seen == 1,
          "an upstream that never answers: SERVFAIL with the question after the timeout (%d ms due, waited %llu)", rt,
          (unsigned long long) waited);

  /* The bound on queries outstanding, in batches the socket buffer holds. */
  sbx_resolver_set_timeout_ms (r, 10000);
  int extra = 8, servfails = 0;
  for (int i = 0; i < SBX_RESOLVER_PENDING_MAX + extra; i++)
    {
      n = make_query (q, (uint16_t) i, "many.example");
      send (u, q, n, 0);
      if (i % 32 == 31)
        run (r, -1, 10);
    }
  run (r, -1, 100);
  while ((m = recv (u, a, sizeof a, MSG_DONTWAIT)) > 0)
    servfails += is_answer (a, m, get16 (a), 2, NULL) && get16 (a) >= SBX_RESOLVER_PENDING_MAX;
  sbx_resolver_counts (r, NULL, &failed, NULL);
  tap_ok (servfails == extra && failed == 1 + (uint64_t) extra,
          "beyond %d queries outstanding, new ones get SERVFAIL at once (%d)", SBX_RESOLVER_PENDING_MAX, servfails);
  close (u);
  sbx_resolver_free (r);
  while (recv (fakes[1].udp, a, sizeof a, MSG_DONTWAIT) >= 0) /* what the silent one left unread */
    ;

  /* Silent first, then the answering one: failover on timeout. */
  r = resolver_on ((const int[]){ 2, 1 }, 2, false, &port);
  sbx_resolver_set_timeout_ms (r, 200);
  u = client (SOCK_DGRAM, port);
  unsigned seen1 = fakes[1].udp_seen;
  n = make_query (q, 0x4141, "failover.example");
  t0 = now_ms_monotonic ();
  m = ask_udp (r, u, q, n, a, 2000);
  waited = now_ms_monotonic () - t0;
  tap_ok (is_answer (a, m, 0x4141, 0, A_UDP) && waited >= 150 && fakes[1].udp_seen == seen1 + 1,
          "UDP: the first upstream silent, the second answers after the timeout (%llu ms)",
          (unsigned long long) waited);
  int t = tcp_client (r, port);
  n = make_query (q, 0x4242, "failover.example");
  t0 = now_ms_monotonic ();
  m = ask_tcp (r, t, q, n, a, 2000);
  waited = now_ms_monotonic () - t0;
  tap_ok (is_answer (a, m, 0x4242, 0, A_TCP) && waited >= 150 && fakes[1].tcp_seen == 1,
          "TCP: the first upstream accepts and stays silent, the second answers after the timeout");
  close (t);
  close (u);
  sbx_resolver_free (r);

  /* Nothing on the first: refused, the second answers before any timeout. */
  r = resolver_on ((const int[]){ 3, 1 }, 2, false, &port);
  u = client (SOCK_DGRAM, port);
  t = tcp_client (r, port);
  n = make_query (q, 0x5151, "refused.example");
  t0 = now_ms_monotonic ();
  bool ok = is_answer (a, ask_udp (r, u, q, n, a, 3000), 0x5151, 0, A_UDP);
  ok = ok && is_answer (a, ask_tcp (r, t, q, n, a, 3000), 0x5151, 0, A_TCP);
  waited = now_ms_monotonic () - t0;
  tap_ok (ok && waited < SBX_RESOLVER_TIMEOUT_MS, "an upstream that refuses is passed over at once (%llu ms)",
          (unsigned long long) waited);
  sbx_resolver_counts (r, &answered, &failed, NULL);
  tap_ok (answered == 2 && failed == 0, "counts: answered 2, failed 0");
  close (t);
  close (u);
  sbx_resolver_free (r);

  /* Its only upstream is itself: SERVFAIL at once, no loop. */
  r = resolver_on ((const int[]){ 1 }, 1, true, &port);
  u = client (SOCK_DGRAM, port);
  n = make_query (q, 0x6161, "loop.example");
  m = ask_udp (r, u, q, n, a, 500);
  sbx_resolver_counts (r, &answered, &failed, NULL);
  tap_ok (is_answer (a, m, 0x6161, 2, NULL) && answered == 0 && failed == 1,
          "an upstream that is the resolver's own address is never forwarded to");
  close (u);
  sbx_resolver_free (r);
}

/* ---- Domain rules ---- */

static struct {
  unsigned calls;
  char qname[256];
  sbx_dns_addr first;
  size_t n;
  int ret;
} allowed;

static int
allow_cb (void *data, const char *qname, const sbx_dns_addr *addrs, size_t n)
{
  (void) data;
  allowed.calls++;
  snprintf (allowed.qname, sizeof allowed.qname, "%s", qname);
  allowed.n = n;
  if (n)
    allowed.first = addrs[0];
  return allowed.ret;
}

static void
test_domains (void)
{
  uint16_t port;
  unsigned char q[512], a[65600];
  sbx_resolver *r = resolver_on ((const int[]){ 1 }, 1, false, &port);
  if (!r)
    exit (1);
  char *rules[] = { (char *) "www.example.com", (char *) "*.ok.example", NULL };
  sbx_resolver_set_domains (r, rules, 30, allow_cb, NULL);
  int u = client (SOCK_DGRAM, port);

  size_t n = make_query (q, 0x7001, "WWW.example.com");
  ssize_t m = ask_udp (r, u, q, n, a, 1000);
  tap_ok (is_answer (a, m, 0x7001, 0, A_UDP) && allowed.calls == 1 && strcmp (allowed.qname, "www.example.com") == 0
              && allowed.n == 1 && memcmp (allowed.first.addr, A_UDP, 4) == 0 && allowed.first.ttl == 30,
          "a listed name (any case): answered, its address handed over first with the TTL capped (%u calls)",
          allowed.calls);
  tap_ok (m >= 16 && get16 (a + m - 10) == 0 && get16 (a + m - 8) == 30, "the answer's TTL lowered from 60 to 30");

  unsigned seen = fakes[0].udp_seen;
  bool ok = true;
  const char *unlisted[] = { "evil.example", "ok.example", "x.www.example.com", "www.example.com.evil" };
  for (size_t i = 0; i < ARRAY_SIZE (unlisted); i++)
    {
      n = make_query (q, (uint16_t) (0x7100 + i), unlisted[i]);
      m = ask_udp (r, u, q, n, a, 500);
      ok = ok && is_answer (a, m, (uint16_t) (0x7100 + i), 5, NULL) && (size_t) m == n;
    }
  tap_ok (ok && fakes[0].udp_seen == seen && sbx_resolver_refused_count (r) == 4,
          "unlisted names (the wildcard's own name included): REFUSED, never sent upstream");
  n = make_query (q, 0x7201, "deep.a.ok.example");
  m = ask_udp (r, u, q, n, a, 1000);
  tap_ok (is_answer (a, m, 0x7201, 0, A_UDP) && allowed.calls == 2, "a name under a wildcard: answered");

  int t = tcp_client (r, port);
  unsigned char buf[512];
  n = make_query (buf + 2, 0x7301, "evil.example");
  put16 (buf, (uint16_t) n);
  unsigned tseen = fakes[0].tcp_seen;
  send (t, buf, n + 2, MSG_NOSIGNAL);
  m = read_tcp (r, t, a, 1000);
  tap_ok (is_answer (a, m, 0x7301, 5, NULL) && fakes[0].tcp_seen == tseen, "over TCP too: REFUSED, not sent upstream");
  close (t);
  t = tcp_client (r, port);
  n = make_query (q, 0x7302, "www.example.com");
  m = ask_tcp (r, t, q, n, a, 1000);
  tap_ok (is_answer (a, m, 0x7302, 0, A_TCP) && allowed.calls == 3 && memcmp (allowed.first.addr, A_TCP, 4) == 0,
          "a listed name over TCP: answered, its address handed over first");
  close (t);

  /* Truncation and EDNS behave as without rules. */
  fakes[0].mode = FAKE_TRUNC;
  n = make_query (q, 0x7303, "www.example.com");
  m = ask_udp (r, u, q, n, a, 1000);
  tap_ok (is_answer (a, m, 0x7303, 0, NULL) && (a[2] & 0x02) && (size_t) m == n && allowed.calls == 3,
          "a truncated answer to a listed name: relayed as it is, for the client to ask over TCP");
  fakes[0].mode = FAKE_ANSWER;
  n = make_query (q, 0x7304, "www.example.com");
  static const unsigned char opt[] = { 0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0 }; /* OPT, 4096-byte UDP */
  memcpy (q + n, opt, sizeof opt);
  n += sizeof opt;
  put16 (q + 10, 1);
  m = ask_udp (r, u, q, n, a, 1000);
  tap_ok (is_answer (a, m, 0x7304, 0, A_UDP) && allowed.calls == 4, "an EDNS query of a listed name: answered");

  allowed.ret = -1;
  n = make_query (q, 0x7401, "www.example.com");
  m = ask_udp (r, u, q, n, a, 1000);
  tap_ok (is_answer (a, m, 0x7401, 2, NULL), "addresses that cannot be allowed: SERVFAIL, not the answer");
  allowed.ret = 0;

  sbx_resolver_set_domains (r, NULL, 0, NULL, NULL);
  n = make_query (q, 0x7501, "evil.example");
  m = ask_udp (r, u, q, n, a, 1000);
  tap_ok (is_answer (a, m, 0x7501, 0, A_UDP), "rules taken away: every name forwarded again");
  close (u);
  sbx_resolver_free (r);
}

int
main (void)
{
  if (!fakes_start ())
    tap_skip_all ("cannot bind fake upstreams on 127.0.0.1 and 127.0.0.2");
  tap_plan (32);
  test_check ();
  test_listen ();
  test_answers ();
  test_failures ();
  test_domains ();
  return tap_done ();
}
