/* The exposed-port proxy (DESIGN.md section 5): `sbx expose ID PORT` makes
 * the monitor listen on a host address and relay HTTP to the sandbox's PORT.
 *
 * It lives in the monitor's single poll() loop: the monitor asks for the
 * proxy's fds (sbx_proxy_pollfds), polls them with its own and the timeout
 * from sbx_proxy_timeout_ms, and hands every poll result back, even a timeout
 * with no events, to sbx_proxy_dispatch, which also expires deadlines.
 *
 * Per connection: the first request head is read (at most 16 KiB, within
 * a head deadline, 10 s by default) and checked before anything reaches the
 * sandbox: malformed is 400, a missing or wrong `Authorization: Bearer
 * TOKEN` is 401. Only then is the sandbox connected to. The connection then
 * stays open for more requests (keep-alive, pipelining), and every request
 * on it is framed, checked and rewritten the same way: the client's bytes
 * are never relayed as a raw stream but as a head (checked, without any
 * Authorization header), then its body as its framing says
 * (Content-Length, or chunked, parsed chunk by chunk), then the next head.
 * Only after an Upgrade request (websocket) or a CONNECT does the stream
 * become opaque, since no further HTTP heads follow. A later request that
 * fails a check stops the client's direction there: the sandbox answers
 * what came before, then the client gets our 400 or 401 and the end.
 * The backend's bytes are never interpreted.
 *
 * Connections that have not yet sent an authorized head hold slots of
 * their own, capped per client address (an IPv6 /64 is one address) and in
 * all, apart from the authorized ones: a new connection over a cap pushes
 * out the oldest unauthorized one of the address that holds the most, so
 * idle connections from one place cannot lock everyone else out.
 * Both the sandbox and the clients are untrusted. */
#ifndef SBX_PROXY_H
#define SBX_PROXY_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "token.h" /* the bearer token sbx_proxy_new takes */

#define SBX_PROXY_MAX_CONNS 256         /* authorized, per proxy; more are answered 503 */
#define SBX_PROXY_MAX_PENDING 256       /* not (yet) authorized, per proxy */
#define SBX_PROXY_MAX_PENDING_ADDR 16   /* not (yet) authorized, per client address */
#define SBX_PROXY_HEAD_TIMEOUT_MS 10000 /* accept to first head read, by default */
#define SBX_PROXY_MAX_LISTENERS 64      /* exposed ports per proxy */
/* The most entries sbx_proxy_pollfds fills. */
#define SBX_PROXY_POLLFDS_MAX (SBX_PROXY_MAX_LISTENERS + 2 * SBX_PROXY_MAX_CONNS + SBX_PROXY_MAX_PENDING)

typedef struct sbx_proxy sbx_proxy;

/* Returns a nonblocking CLOEXEC stream fd connected, or connecting
 * (EINPROGRESS is fine), to the sandbox's PORT, or -1 with *err. */
typedef int (*sbx_proxy_connect_fn) (void *data, uint16_t port, sbx_error **err);

/* TOKEN: required bearer token (copied), or NULL for public. An empty token
 * matches nothing. */
sbx_proxy *sbx_proxy_new (const char *token, sbx_proxy_connect_fn connect_fn, void *data);
/* How long a new connection has to send its first complete head
 * (SBX_PROXY_HEAD_TIMEOUT_MS unless set; 0 keeps the default). For
 * connections accepted from now on. */
void sbx_proxy_set_head_timeout (sbx_proxy *p, unsigned ms);
/* Listens on ADDR (IPv4/IPv6 literal) port HOST_PORT (0: ephemeral) for the
 * sandbox's SANDBOX_PORT; *ret_port the bound port. Exposing the same
 * SANDBOX_PORT twice returns the existing listener's port. A port in use is
 * BUSY, a bad address or port INVALID_ARGUMENT. */
int sbx_proxy_listen (sbx_proxy *p, const char *addr, uint16_t host_port, uint16_t sandbox_port, uint16_t *ret_port,
                      sbx_error **err);
/* Stops exposing SANDBOX_PORT: its listener is closed (new connections are
 * refused) and so are its open connections. NOT_FOUND when it is not
 * exposed. The slots of the last sbx_proxy_pollfds stay safe to dispatch. */
int sbx_proxy_unlisten (sbx_proxy *p, uint16_t sandbox_port, sbx_error **err);
/* The listeners: sandbox port and host port pairs (for `sbx urls`), at most
 * MAX of them; returns how many were written. */
size_t sbx_proxy_ports (const sbx_proxy *p, uint16_t (*ret)[2], size_t max);
/* Fills at most MAX entries (SBX_PROXY_POLLFDS_MAX is always enough);
 * returns how many. */
size_t sbx_proxy_pollfds (sbx_proxy *p, struct pollfd *pf, size_t max);
/* PF, N: the entries the last sbx_proxy_pollfds filled, after poll(). */
void sbx_proxy_dispatch (sbx_proxy *p, const struct pollfd *pf, size_t n);
/* Milliseconds to the next idle/handshake deadline, -1 if none. */
int sbx_proxy_timeout_ms (const sbx_proxy *p);
/* CLOCK_MONOTONIC ms of the last byte relayed (keep-warm); 0 if none yet.
 * Bytes on connections whose first request was not let through do not
 * count. */
uint64_t sbx_proxy_last_activity_ms (const sbx_proxy *p);
size_t sbx_proxy_connections (const sbx_proxy *p);
void sbx_proxy_free (sbx_proxy *p);

#define _cleanup_proxy_ __attribute__ ((cleanup (sbx_proxy_freep)))
static inline void
sbx_proxy_freep (sbx_proxy **p)
{
  if (*p)
    sbx_proxy_free (*p);
}

#endif
