/* The HTTP side of registries (registry.h) over libcurl. A session holds the
 * endpoints a request may go to (for a pull: the mirrors sbx.conf names,
 * then the registry; for a push: the registry), each with what was learnt
 * of it (the scheme that answered, the Authorization it takes) and the CA
 * bundle it is verified with. Each request is its own easy handle sharing
 * connections, DNS and TLS sessions through one CURLSH, so a session may be
 * used from several threads at once (pull.c downloads layers in parallel).
 *
 * Everything a registry sends is outside input: bodies are bounded and
 * counted, headers are kept only when printable and bounded, the challenge
 * is parsed strictly (sbx_www_auth_parse), a token is used only when it is
 * one printable token (it goes into a header). Credentials and tokens go
 * into headers and never into a message; libcurl does not send a custom
 * Authorization header to another host (or port, or scheme) on a redirect,
 * and VERBOSE stays off. */
#include "config.h"

#include "curl-dl.h"
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "regauth.h"
#include "registry-internal.h"
#include "registry.h"
#include "sha256.h"
#include "util.h"

#define CERTS_DIR_DEFAULT "/etc/sbx/certs.d"
#define SYSTEM_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define CA_FILE_MAX (1024 * 1024)
#define CA_FILES_MAX 64
#define TOKEN_BODY_MAX (1024 * 1024)
#define TOKEN_MAX 65536
#define HEADER_VALUE_MAX 8192
#define ERRBODY_MAX 4096
#define BLOB_RESUMES_MAX 3
#define USER_AGENT "sbx/" SBX_VERSION

#define ACCEPT_MANIFESTS                                                                          \
  "Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, " \
  "application/vnd.docker.distribution.manifest.v2+json, "                                        \
  "application/vnd.docker.distribution.manifest.list.v2+json"

typedef enum scheme {
  SCHEME_UNKNOWN,
  SCHEME_HTTPS,
  SCHEME_HTTP, /* insecure registries only */
} url_scheme;

typedef struct endpoint {
  char *host;    /* HOST[:PORT] as references write it */
  char *connect; /* the host to connect to: docker.io is registry-1.docker.io */
  bool insecure;
  url_scheme scheme;   /* learnt: guarded by the session's lock */
  char *auth;          /* "Authorization: ..." header; guarded */
  sbx_cred *cred;      /* guarded; cred_done once looked up */
  sbx_error *cred_err; /* guarded: why the lookup failed (an auth file that does not parse) */
  bool cred_done;
  char *ca; /* a CA bundle with certs.d's files, or NULL: the system's */
  size_t ca_len;
} endpoint;

struct sbx_registry {
  char *root;
  const sbx_conf *conf;
  char *repository; /* NULL for a ping */
  bool push;
  endpoint *eps;
  size_t neps;
  unsigned stall;
  CURLSH *share;
  pthread_mutex_t share_lock[CURL_LOCK_DATA_LAST];
  pthread_mutex_t lock;
};

/* ---- WWW-Authenticate ---- */

void
sbx_www_auth_free (sbx_www_auth *a)
{
  if (a == NULL)
    return;
  free (a->realm);
  free (a->service);
  free (a->scope);
  free (a);
}

static bool
is_tchar (char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
         || (c && strchr ("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool
is_lower_alnum_or (char c, const char *more)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c && strchr (more, c));
}

typedef struct cursor {
  const char *p, *end;
} cursor;

static void
skip_ows (cursor *c)
{
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
    c->p++;
}

/* A token at C, or NULL. */
static char *
take_token (cursor *c)
{
  const char *s = c->p;
  while (c->p < c->end && is_tchar (*c->p))
    c->p++;
  return c->p > s ? xstrndup (s, (size_t) (c->p - s)) : NULL;
}

/* A token or a quoted-string at C; NULL (with *bad) when neither. */
static char *
take_value (cursor *c, bool *bad)
{
  if (c->p < c->end && *c->p == '"')
    {
      char *out = xmalloc ((size_t) (c->end - c->p) + 1), *o = out;
      for (c->p++; c->p < c->end && *c->p != '"'; c->p++)
        {
          if (*c->p == '\\' && c->p + 1 < c->end)
            c->p++;
          *o++ = *c->p;
        }
      if (c->p == c->end)
        {
          free (out);
          *bad = true;
          return NULL;
        }
      c->p++;
      *o = '\0';
      return out;
    }
  /* Unquoted: a token as RFC 7235 says, or as registries write realms
   * (https://host/path): visible ASCII up to ',' or white space. */
  const char *s = c->p;
  while (c->p<c->end && * c->p> ' ' && *c->p < 0x7f && *c->p != ',' && *c->p != '"')
    c->p++;
  if (c->p == s)
    {
      *bad = true;
      return NULL;
    }
  return xstrndup (s, (size_t) (c->p - s));
}

/* Whether C is at "token =" (a parameter) rather than a new challenge. */
static bool
at_param (const cursor *c)
{
  cursor d = *c;
  _cleanup_free_ char *t = take_token (&d);
  skip_ows (&d);
  return t && d.p < d.end && *d.p == '=';
}

static int
www_bad (sbx_error **err, const char *why)
{
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "a WWW-Authenticate header that does not parse: %s", why);
}

int
sbx_www_auth_parse (const char *value, size_t len, sbx_www_auth **ret, sbx_error **err)
{
  if (len > SBX_WWW_AUTH_MAX)
    return www_bad (err, "too long");
  for (size_t i = 0; i < len; i++)
    if ((unsigned char) value[i] < 0x20 && value[i] != '\t')
      return www_bad (err, "a control byte");
    else if ((unsigned char) value[i] >= 0x7f)
      return www_bad (err, "a byte outside ASCII");
  cursor c = { value, value + len };
  _cleanup_www_auth_ sbx_www_auth *bearer = NULL, *basic = NULL;
  _cleanup_free_ char *offered = NULL;
  for (;;)
    {
      skip_ows (&c);
      while (c.p < c.end && *c.p == ',')
        c.p++, skip_ows (&c);
      if (c.p == c.end)
        break;
      _cleanup_free_ char *scheme = take_token (&c);
      if (scheme == NULL)
        return www_bad (err, "no scheme");
      if (offered == NULL)
        offered = printable_masked (scheme, 32, "");
      sbx_www_auth *a = xmalloc0 (sizeof *a);
      _cleanup_www_auth_ sbx_www_auth *cur = a;
      if (strcasecmp (scheme, "bearer") == 0)
        a->scheme = SBX_WWW_BEARER;
      else if (strcasecmp (scheme, "basic") == 0)
        a->scheme = SBX_WWW_BASIC;
      /* A token68 right after the scheme, then parameters until the next
       * challenge (a token after a ',' that is not "token="). */
      skip_ows (&c);
      if (c.p < c.end && *c.p != ',' && !at_param (&c))
        {
          const char *s = c.p;
          while (c.p < c.end && (is_lower_alnum_or (*c.p, "-._~+/")))
            c.p++;
          while (c.p < c.end && *c.p == '=')
            c.p++;
          if (c.p == s)
            return www_bad (err, "a stray character");
          skip_ows (&c);
          if (c.p < c.end && *c.p != ',')
            return www_bad (err, "a stray character");
        }
      while (c.p < c.end)
        {
          if (*c.p == ',')
            {
              c.p++;
              skip_ows (&c);
              continue;
            }
          if (!at_param (&c))
            break; /* the next challenge */
          _cleanup_free_ char *key = take_token (&c);
          skip_ows (&c);
          c.p++; /* '=' */
          skip_ows (&c);
          bool bad = false;
          _cleanup_free_ char *val = take_value (&c, &bad);
          if (bad)
            return www_bad (err, "a parameter without a value");
          if (strlen (val) > SBX_WWW_AUTH_PARAM_MAX)
            return www_bad (err, "a parameter over 2048 bytes");
          if (strchr (val, '\t'))
            return www_bad (err, "a control byte");
          char **slot = strcasecmp (key, "realm") == 0     ? &a->realm
                        : strcasecmp (key, "service") == 0 ? &a->service
                        : strcasecmp (key, "scope") == 0   ? &a->scope
                                                           : NULL;
          if (slot && *slot)
            return www_bad (err, "a parameter given twice");
          if (slot)
            *slot = steal_pointer (&val);
          skip_ows (&c);
          if (c.p < c.end && *c.p != ',')
            return www_bad (err, "parameters not separated by ','");
        }
      if (a->scheme == SBX_WWW_BEARER && bearer == NULL)
        bearer = steal_pointer (&cur);
      else if (a->scheme == SBX_WWW_BASIC && basic == NULL)
        basic = steal_pointer (&cur);
    }
  if (bearer)
    {
      if (bearer->realm == NULL || bearer->realm[0] == '\0')
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "a Bearer challenge without a realm");
      *ret = steal_pointer (&bearer);
      return 0;
    }
  if (basic)
    {
      *ret = steal_pointer (&basic);
      return 0;
    }
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "a WWW-Authenticate challenge sbx cannot answer (%s)",
                        offered && offered[0] ? offered : "none");
}

/* ---- the session ---- */

static void
share_lock (CURL *h, curl_lock_data data, curl_lock_access access, void *ud)
{
  (void) h, (void) access;
  sbx_registry *r = ud;
  pthread_mutex_lock (&r->share_lock[data]);
}

static void
share_unlock (CURL *h, curl_lock_data data, void *ud)
{
  (void) h;
  sbx_registry *r = ud;
  pthread_mutex_unlock (&r->share_lock[data]);
}

static int
crt_filter (const struct dirent *d)
{
  size_t n = strlen (d->d_name);
  return d->d_name[0] != '.' && n > 4 && strcmp (d->d_name + n - 4, ".crt") == 0;
}

/* The system's bundle and DIR/HOST/ *.crt, in one PEM text; NULL (0) when
 * HOST has no directory there. */
static int
ca_bundle (const sbx_conf *conf, const char *host, char **ret, size_t *ret_len, sbx_error **err)
{
  const char *base = conf && conf->registry_certs_dir ? conf->registry_certs_dir : CERTS_DIR_DEFAULT;
  _cleanup_free_ char *dir = xasprintf ("%s/%s", base, host);
  struct dirent **names = NULL;
  int n = scandir (dir, &names, crt_filter, alphasort);
  *ret = NULL;
  *ret_len = 0;
  if (n < 0)
    return errno == ENOENT || errno == ENOTDIR ? 0 : sbx_error_errno (err, errno, "read %s", dir);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&buf, &len);
  int rc = 0;
  if (f == NULL)
    abort ();
  _cleanup_free_ char *sys = NULL;
  size_t sys_len = 0;
  if (read_file (SYSTEM_CA_BUNDLE, 16 * CA_FILE_MAX, &sys, &sys_len, NULL) == 0)
    fwrite (sys, 1, sys_len, f), fputc ('\n', f);
  for (int i = 0; i < n; i++)
    {
      _cleanup_free_ char *path = xasprintf ("%s/%s", dir, names[i]->d_name);
      _cleanup_free_ char *data = NULL;
      size_t dl = 0;
      if (rc == 0 && i >= CA_FILES_MAX)
        rc = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: more than %d .crt files", dir, CA_FILES_MAX);
      else if (rc == 0 && read_file (path, CA_FILE_MAX, &data, &dl, err) < 0)
        rc = -1;
      else if (rc == 0)
        fwrite (data, 1, dl, f), fputc ('\n', f);
      free (names[i]);
    }
  free (names);
  if (fclose (f) != 0)
    abort ();
  if (rc < 0)
    {
      free (buf);
      return -1;
    }
  *ret = buf;
  *ret_len = len;
  return 0;
}

static bool
host_insecure (const sbx_conf *conf, const char *host)
{
  const sbx_conf_registry *e = sbx_conf_registry_find (conf, host);
  return e && e->insecure;
}

static int
endpoint_add (sbx_registry *r, const char *host, sbx_error **err)
{
  r->eps = xrealloc (r->eps, (r->neps + 1) * sizeof *r->eps);
  endpoint *ep = &r->eps[r->neps++];
  *ep = (endpoint){ .host = xstrdup (host) };
  ep->connect = xstrdup (strcmp (host, "docker.io") == 0 ? "registry-1.docker.io" : host);
  ep->insecure = host_insecure (r->conf, host);
  return ca_bundle (r->conf, host, &ep->ca, &ep->ca_len, err);
}

static sbx_registry *
session_new (const char *root, const sbx_conf *conf, const char *repository, bool push)
{
  sbx_registry *r = xmalloc0 (sizeof *r);
  r->root = root ? xstrdup (root) : NULL;
  r->conf = conf;
  r->repository = repository ? xstrdup (repository) : NULL;
  r->push = push;
  r->stall = conf && conf->registry_stall_timeout ? conf->registry_stall_timeout : SBX_CONF_STALL_TIMEOUT_DEFAULT;
  pthread_mutex_init (&r->lock, NULL);
  for (size_t i = 0; i < CURL_LOCK_DATA_LAST; i++)
    pthread_mutex_init (&r->share_lock[i], NULL);
  r->share = sbx_curl.curl_share_init ();
  if (r->share == NULL)
    abort ();
  sbx_curl.curl_share_setopt (r->share, CURLSHOPT_LOCKFUNC, share_lock);
  sbx_curl.curl_share_setopt (r->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
  sbx_curl.curl_share_setopt (r->share, CURLSHOPT_USERDATA, r);
  sbx_curl.curl_share_setopt (r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  sbx_curl.curl_share_setopt (r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  sbx_curl.curl_share_setopt (r->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
  return r;
}

int
sbx_registry_open (const char *root, const sbx_conf *conf, const sbx_imageref *ref, bool push, sbx_registry **ret,
                   sbx_error **err)
{
  if (sbx_curl_load (err) < 0)
    return -1;
  _cleanup_registry_ sbx_registry *r = session_new (root, conf, ref->repository, push);
  const sbx_conf_registry *e = sbx_conf_registry_find (conf, ref->registry);
  if (!push && e && e->mirrors)
    for (size_t i = 0; e->mirrors[i]; i++)
      if (endpoint_add (r, e->mirrors[i], err) < 0)
        return -1;
  if (endpoint_add (r, ref->registry, err) < 0)
    return -1;
  *ret = steal_pointer (&r);
  return 0;
}

void
sbx_registry_free (sbx_registry *r)
{
  if (r == NULL)
    return;
  for (size_t i = 0; i < r->neps; i++)
    {
      endpoint *ep = &r->eps[i];
      free (ep->host);
      free (ep->connect);
      if (ep->auth)
        explicit_bzero (ep->auth, strlen (ep->auth));
      free (ep->auth);
      sbx_cred_free (ep->cred);
      sbx_error_free (ep->cred_err);
      free (ep->ca);
    }
  free (r->eps);
  if (r->share)
    sbx_curl.curl_share_cleanup (r->share);
  for (size_t i = 0; i < CURL_LOCK_DATA_LAST; i++)
    pthread_mutex_destroy (&r->share_lock[i]);
  pthread_mutex_destroy (&r->lock);
  free (r->root);
  free (r->repository);
  free (r);
}

/* ---- one request ---- */

typedef struct req {
  sbx_registry *r;
  endpoint *ep;
  const char *method; /* GET HEAD POST PUT */
  const char *path;   /* "/v2/...": for the URL and messages */
  char *url;          /* set by perform: the full URL */
  const char *accept; /* a whole "Accept: ..." line, or NULL */
  const char *content_type;
  bool no_auth; /* send no Authorization (an upload location on another host) */
  const char *range_from;
  /* the body of a 2xx answer: into OUTFD, or into buf (at most MAX) */
  int outfd;
  char *buf;
  size_t len, max;
  uint64_t range_pos; /* asked for bytes from here (Range) */
  bool body_started;
  uint64_t skip;  /* bytes to drop first (a server that ignored Range) */
  uint64_t limit; /* the most bytes OUTFD may get; 0: none */
  uint64_t got;
  bool over;
  /* an upload: BODY (LEN) or INFD */
  const char *body;
  size_t body_len, body_off;
  int infd;
  uint64_t in_size;
  /* progress */
  sbx_registry_progress_fn fn;
  void *ud;
  uint64_t base, total;
  /* the answer */
  long code;
  char *www_auth, *ctype, *location, *ddigest;
  char errbody[ERRBODY_MAX];
  size_t errlen;
  /* why a callback stopped the transfer */
  sbx_code abort_code;
  int abort_errno;
  const char *abort_msg;
} req;

static void
req_reset_answer (req *q)
{
  free (q->www_auth);
  free (q->ctype);
  free (q->location);
  free (q->ddigest);
  q->www_auth = q->ctype = q->location = q->ddigest = NULL;
  q->errlen = 0;
  q->code = 0;
}

static void
req_done (req *q)
{
  req_reset_answer (q);
  free (q->url);
  q->url = NULL;
}

static size_t
header_cb (char *data, size_t size, size_t n, void *ud)
{
  req *q = ud;
  size_t len = size * n;
  if (len >= 5 && memcmp (data, "HTTP/", 5) == 0)
    {
      req_reset_answer (q); /* a new response: after a redirect or a 100 */
      const char *sp = memchr (data, ' ', len);
      if (sp && data + len - sp > 3)
        q->code = strtol (sp + 1, NULL, 10);
      return len;
    }
  const char *colon = memchr (data, ':', len);
  if (colon == NULL)
    return len;
  size_t kl = (size_t) (colon - data);
  const char *v = colon + 1, *end = data + len;
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
    end--;
  size_t vl = (size_t) (end - v);
  char **slot = NULL;
  if (kl == 16 && strncasecmp (data, "www-authenticate", kl) == 0)
    slot = &q->www_auth;
  else if (kl == 12 && strncasecmp (data, "content-type", kl) == 0)
    slot = &q->ctype;
  else if (kl == 8 && strncasecmp (data, "location", kl) == 0)
    slot = &q->location;
  else if (kl == 21 && strncasecmp (data, "docker-content-digest", kl) == 0)
    slot = &q->ddigest;
  if (slot && *slot == NULL && vl <= HEADER_VALUE_MAX && memchr (v, '\0', vl) == NULL)
    *slot = xstrndup (v, vl);
  return len;
}

static size_t
stop (req *q, sbx_code code, int errnum, const char *msg)
{
  q->abort_code = code;
  q->abort_errno = errnum;
  q->abort_msg = msg;
  return 0; /* fewer bytes than given: CURLE_WRITE_ERROR */
}

static size_t
write_cb (char *data, size_t size, size_t n, void *ud)
{
  req *q = ud;
  size_t len = size * n;
  if (q->code < 200 || q->code > 299)
    {
      size_t room = sizeof q->errbody - 1 - q->errlen;
      size_t k = len < room ? len : room;
      memcpy (q->errbody + q->errlen, data, k);
      q->errlen += k;
      q->errbody[q->errlen] = '\0';
      return len;
    }
  const char *p = data;
  size_t left = len;
  if (!q->body_started)
    {
      /* A 200 to a Range request: the whole blob again, what we have
       * dropped as it comes. */
      q->body_started = true;
      q->skip = q->code == 200 ? q->range_pos : 0;
    }
  if (q->skip)
    {
      size_t k = q->skip < left ? (size_t) q->skip : left;
      q->skip -= k, p += k, left -= k;
    }
  if (left == 0)
    return len;
  if (q->outfd >= 0)
    {
      if (q->limit && q->got + left > q->limit)
        {
          q->over = true;
          return stop (q, SBX_E_INVALID_ARGUMENT, 0, "more bytes than the descriptor says");
        }
      if (write_all (q->outfd, p, left) < 0)
        return stop (q, SBX_E_INTERNAL, errno, "write the blob");
    }
  else
    {
      if (q->len + left > q->max)
        {
          q->over = true;
          return stop (q, SBX_E_RESOURCE_EXHAUSTED, 0, "larger than its bound");
        }
      q->buf = xrealloc (q->buf, q->len + left + 1);
      memcpy (q->buf + q->len, p, left);
      q->len += left;
      q->buf[q->len] = '\0';
    }
  q->got += left;
  return len;
}

static size_t
read_cb (char *out, size_t size, size_t n, void *ud)
{
  req *q = ud;
  size_t len = size * n;
  if (q->infd >= 0)
    {
      ssize_t k;
      do
        k = read (q->infd, out, len);
      while (k < 0 && errno == EINTR);
      if (k < 0)
        {
          q->abort_code = SBX_E_INTERNAL;
          q->abort_errno = errno;
          q->abort_msg = "read the blob";
          return CURL_READFUNC_ABORT;
        }
      return (size_t) k;
    }
  size_t k = q->body_len - q->body_off < len ? q->body_len - q->body_off : len;
  memcpy (out, q->body + q->body_off, k);
  q->body_off += k;
  return k;
}

static int
xfer_cb (void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
  req *q = ud;
  (void) dltotal, (void) dlnow, (void) ultotal;
  if (q->fn == NULL)
    return 0;
  uint64_t done = q->infd >= 0 ? (uint64_t) ulnow : q->base + q->got;
  if (q->fn (q->ud, done, q->total))
    {
      q->abort_code = SBX_E_INTERNAL;
      q->abort_errno = ECANCELED;
      q->abort_msg = "cancelled";
      return 1;
    }
  return 0;
}

static const char *
scheme_name (url_scheme s)
{
  return s == SCHEME_HTTP ? "http" : "https";
}

/* Runs Q once with scheme S. 0 when an HTTP answer came (q->code); else the
 * error, with *ret_transport true when it was the connection or TLS that
 * failed (what an insecure registry's plain-HTTP fallback follows). */
static int
perform (req *q, url_scheme s, bool *ret_transport, sbx_error **err)
{
  sbx_registry *r = q->r;
  endpoint *ep = q->ep;
  *ret_transport = false;
  free (q->url);
  q->url = q->path[0] == '/' ? xasprintf ("%s://%s%s", scheme_name (s), ep->connect, q->path) : xstrdup (q->path);
  req_reset_answer (q);
  q->abort_code = SBX_OK;
  q->body_started = false;
  q->skip = 0;
  CURL *c = sbx_curl.curl_easy_init ();
  if (c == NULL)
    abort ();
  struct curl_slist *hdrs = NULL;
  _cleanup_free_ char *auth = NULL, *ct = NULL;
  pthread_mutex_lock (&r->lock);
  if (ep->auth && !q->no_auth)
    auth = xstrdup (ep->auth);
  pthread_mutex_unlock (&r->lock);
  if (q->accept)
    hdrs = sbx_curl.curl_slist_append (hdrs, q->accept);
  if (q->content_type)
    hdrs = sbx_curl.curl_slist_append (hdrs, ct = xasprintf ("Content-Type: %s", q->content_type));
  if (auth)
    hdrs = sbx_curl.curl_slist_append (hdrs, auth);
  hdrs = sbx_curl.curl_slist_append (hdrs, "Expect:");

  sbx_curl.curl_easy_setopt (c, CURLOPT_URL, q->url);
  sbx_curl.curl_easy_setopt (c, CURLOPT_SHARE, r->share);
  sbx_curl.curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L);
  sbx_curl.curl_easy_setopt (c, CURLOPT_USERAGENT, USER_AGENT);
  sbx_curl.curl_easy_setopt (c, CURLOPT_PROTOCOLS_STR, "http,https");
  sbx_curl.curl_easy_setopt (c, CURLOPT_REDIR_PROTOCOLS_STR, ep->insecure ? "http,https" : "https");
  sbx_curl.curl_easy_setopt (c, CURLOPT_FOLLOWLOCATION, 1L);
  sbx_curl.curl_easy_setopt (c, CURLOPT_MAXREDIRS, (long) SBX_REGISTRY_REDIRECTS_MAX);
  sbx_curl.curl_easy_setopt (c, CURLOPT_UNRESTRICTED_AUTH, 0L);
  sbx_curl.curl_easy_setopt (c, CURLOPT_LOW_SPEED_LIMIT, (long) SBX_REGISTRY_STALL_RATE);
  sbx_curl.curl_easy_setopt (c, CURLOPT_LOW_SPEED_TIME, (long) r->stall);
  sbx_curl.curl_easy_setopt (c, CURLOPT_CONNECTTIMEOUT, (long) r->stall);
  sbx_curl.curl_easy_setopt (c, CURLOPT_HTTPHEADER, hdrs);
  sbx_curl.curl_easy_setopt (c, CURLOPT_HEADERFUNCTION, header_cb);
  sbx_curl.curl_easy_setopt (c, CURLOPT_HEADERDATA, q);
  sbx_curl.curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, write_cb);
  sbx_curl.curl_easy_setopt (c, CURLOPT_WRITEDATA, q);
  sbx_curl.curl_easy_setopt (c, CURLOPT_XFERINFOFUNCTION, xfer_cb);
  sbx_curl.curl_easy_setopt (c, CURLOPT_XFERINFODATA, q);
  sbx_curl.curl_easy_setopt (c, CURLOPT_NOPROGRESS, 0L);
  if (ep->insecure && s == SCHEME_HTTPS)
    {
      sbx_curl.curl_easy_setopt (c, CURLOPT_SSL_VERIFYPEER, 0L);
      sbx_curl.curl_easy_setopt (c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
  else if (ep->ca)
    {
      struct curl_blob blob = { .data = ep->ca, .len = ep->ca_len, .flags = CURL_BLOB_NOCOPY };
      sbx_curl.curl_easy_setopt (c, CURLOPT_CAINFO_BLOB, &blob);
    }
  if (q->range_from)
    sbx_curl.curl_easy_setopt (c, CURLOPT_RANGE, q->range_from);
  if (strcmp (q->method, "HEAD") == 0)
    sbx_curl.curl_easy_setopt (c, CURLOPT_NOBODY, 1L);
  else if (strcmp (q->method, "POST") == 0)
    {
      sbx_curl.curl_easy_setopt (c, CURLOPT_POST, 1L);
      sbx_curl.curl_easy_setopt (c, CURLOPT_POSTFIELDS, "");
      sbx_curl.curl_easy_setopt (c, CURLOPT_POSTFIELDSIZE, 0L);
    }
  else if (strcmp (q->method, "PUT") == 0)
    {
      q->body_off = 0;
      sbx_curl.curl_easy_setopt (c, CURLOPT_UPLOAD, 1L);
      sbx_curl.curl_easy_setopt (c, CURLOPT_READFUNCTION, read_cb);
      sbx_curl.curl_easy_setopt (c, CURLOPT_READDATA, q);
      sbx_curl.curl_easy_setopt (c, CURLOPT_INFILESIZE_LARGE, (curl_off_t) (q->infd >= 0 ? q->in_size : q->body_len));
    }

  CURLcode rc = sbx_curl.curl_easy_perform (c);
  sbx_curl.curl_easy_getinfo (c, CURLINFO_RESPONSE_CODE, &q->code);
  long os_errno = 0;
  sbx_curl.curl_easy_getinfo (c, CURLINFO_OS_ERRNO, &os_errno);
  sbx_curl.curl_easy_cleanup (c);
  sbx_curl.curl_slist_free_all (hdrs);
  if (auth)
    explicit_bzero (auth, strlen (auth));

  const char *host = ep->host;
  if (rc == CURLE_OK)
    return 0;
  if ((rc == CURLE_WRITE_ERROR || rc == CURLE_ABORTED_BY_CALLBACK || rc == CURLE_READ_ERROR) && q->abort_code != SBX_OK)
    return sbx_error_set (err, q->abort_code, q->abort_errno, "%s: %s %s: %s", host, q->method, q->path, q->abort_msg);
  switch (rc)
    {
    case CURLE_OPERATION_TIMEDOUT:
      return sbx_error_set (err, SBX_E_TIMEOUT, 0,
                            "%s: %s %s: under %d bytes a second for %u seconds (registry_stall_timeout)", host,
                            q->method, q->path, SBX_REGISTRY_STALL_RATE, r->stall);
    case CURLE_TOO_MANY_REDIRECTS:
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: %s %s: redirect loop (more than %d redirects)", host,
                            q->method, q->path, SBX_REGISTRY_REDIRECTS_MAX);
    case CURLE_UNSUPPORTED_PROTOCOL:
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: %s %s: redirected to a scheme sbx does not follow",
                            host, q->method, q->path);
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
      *ret_transport = true;
      return sbx_error_set (err, SBX_E_PERMISSION_DENIED, 0,
                            "%s: the certificate does not verify: %s (add its CA to %s/%s/, or registry_insecure)",
                            host, sbx_curl.curl_easy_strerror (rc),
                            r->conf && r->conf->registry_certs_dir ? r->conf->registry_certs_dir : CERTS_DIR_DEFAULT,
                            host);
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
      *ret_transport = true;
      return sbx_error_set (err, SBX_E_INTERNAL, (int) os_errno, "%s: unreachable: %s", host,
                            sbx_curl.curl_easy_strerror (rc));
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      *ret_transport = q->got == 0;
      return sbx_error_set (err, SBX_E_INTERNAL, (int) os_errno, "%s: %s %s: the connection failed: %s", host,
                            q->method, q->path, sbx_curl.curl_easy_strerror (rc));
    default:
      return sbx_error_set (err, SBX_E_INTERNAL, (int) os_errno, "%s: %s %s: %s", host, q->method, q->path,
                            sbx_curl.curl_easy_strerror (rc));
    }
}

/* Q on its endpoint: the scheme that answered before, else https, and for
 * an insecure registry whose https fails at the transport, plain http. */
static int
perform_ep (req *q, sbx_error **err)
{
  sbx_registry *r = q->r;
  pthread_mutex_lock (&r->lock);
  url_scheme s = q->ep->scheme;
  pthread_mutex_unlock (&r->lock);
  bool transport;
  if (s != SCHEME_UNKNOWN || !q->ep->insecure)
    {
      int rc = perform (q, s == SCHEME_UNKNOWN ? SCHEME_HTTPS : s, &transport, err);
      if (rc == 0 && s == SCHEME_UNKNOWN)
        {
          pthread_mutex_lock (&r->lock);
          q->ep->scheme = SCHEME_HTTPS;
          pthread_mutex_unlock (&r->lock);
        }
      return rc;
    }
  sbx_error *first = NULL;
  if (perform (q, SCHEME_HTTPS, &transport, &first) == 0)
    s = SCHEME_HTTPS;
  else if (!transport || q->got > 0)
    {
      *err = first;
      return -1;
    }
  else
    {
      sbx_error_free (first);
      if (perform (q, SCHEME_HTTP, &transport, err) < 0)
        return -1;
      s = SCHEME_HTTP;
    }
  pthread_mutex_lock (&r->lock);
  q->ep->scheme = s;
  pthread_mutex_unlock (&r->lock);
  return 0;
}

/* The registry's error code in an error body ({"errors":[{"code":...}]}),
 * if it is a short token. */
static char *
registry_error_code (const req *q)
{
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (q->errlen == 0 || j_parse (q->errbody, q->errlen, ERRBODY_MAX, "error", &v, NULL) < 0)
    return NULL;
  yajl_val errs = j_get (v, "errors");
  if (!YAJL_IS_ARRAY (errs) || errs->u.array.len == 0)
    return NULL;
  const char *code = NULL;
  if (j_get_str (errs->u.array.values[0], "code", false, &code, NULL) < 0 || code == NULL
      || !printable_token (code, 64))
    return NULL;
  return xstrdup (code);
}

/* The error of an HTTP answer that is not what the request wanted. */
static int
status_error (const req *q, sbx_error **err)
{
  _cleanup_free_ char *code = registry_error_code (q);
  char extra[96] = "";
  if (code)
    snprintf (extra, sizeof extra, ", %s", code);
  const char *host = q->ep->host;
  switch (q->code)
    {
    case 401:
    case 403:
      return sbx_error_set (err, SBX_E_PERMISSION_DENIED, 0, "%s: %s %s: access denied (HTTP %ld%s)", host, q->method,
                            q->path, q->code, extra);
    case 404:
      return sbx_error_set (err, SBX_E_NOT_FOUND, 0, "%s: %s %s: not found (HTTP 404%s)", host, q->method, q->path,
                            extra);
    case 429:
      return sbx_error_set (err, SBX_E_RESOURCE_EXHAUSTED, 0, "%s: %s %s: too many requests (HTTP 429%s)", host,
                            q->method, q->path, extra);
    default:
      if (q->code >= 500)
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s: %s %s: the registry failed (HTTP %ld%s)", host, q->method,
                              q->path, q->code, extra);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: %s %s: unexpected answer (HTTP %ld%s)", host,
                            q->method, q->path, q->code, extra);
    }
}

/* ---- tokens ---- */

/* The credentials the auth files hold for EP (*ret NULL: none). An auth
 * file that does not parse is its error (INVALID_ARGUMENT naming the file),
 * as sbx-pull(1) says, not "no credentials". */
static int
ep_cred (sbx_registry *r, endpoint *ep, const sbx_cred **ret, sbx_error **err)
{
  int rc = 0;
  pthread_mutex_lock (&r->lock);
  if (!ep->cred_done)
    {
      sbx_cred *c = NULL;
      if (r->root && sbx_auth_lookup (r->root, ep->host, r->repository, &c, &ep->cred_err) < 0)
        c = NULL;
      ep->cred = c;
      ep->cred_done = true;
    }
  if (ep->cred_err)
    rc = sbx_error_set (err, ep->cred_err->code, ep->cred_err->errnum, "%s", ep->cred_err->msg);
  *ret = ep->cred;
  pthread_mutex_unlock (&r->lock);
  return rc;
}

static void
ep_set_auth (sbx_registry *r, endpoint *ep, char *line)
{
  pthread_mutex_lock (&r->lock);
  if (ep->auth)
    explicit_bzero (ep->auth, strlen (ep->auth));
  free (ep->auth);
  ep->auth = line;
  pthread_mutex_unlock (&r->lock);
}

static char *
basic_line (const sbx_cred *cred)
{
  _cleanup_free_ char *up = xasprintf ("%s:%s", cred->username, cred->password);
  _cleanup_free_ char *b = base64_encode (up, strlen (up));
  explicit_bzero (up, strlen (up));
  char *line = xasprintf ("Authorization: Basic %s", b);
  explicit_bzero (b, strlen (b));
  return line;
}

/* "HOST[:PORT]" of an http(s) URL, or NULL. */
static char *
url_host (const char *url, bool *ret_https)
{
  const char *p;
  if (strncmp (url, "https://", 8) == 0)
    p = url + 8, *ret_https = true;
  else if (strncmp (url, "http://", 7) == 0)
    p = url + 7, *ret_https = false;
  else
    return NULL;
  size_t n = strcspn (p, "/?#");
  if (n == 0 || memchr (p, '@', n))
    return NULL;
  return xstrndup (p, n);
}

/* Asks the realm of A for a token for SCOPE (NULL: none), with CRED when
 * there are credentials. */
static int
fetch_token (sbx_registry *r, endpoint *ep, const sbx_www_auth *a, const char *scope, const sbx_cred *cred, char **ret,
             sbx_error **err)
{
  bool https;
  _cleanup_free_ char *rhost = url_host (a->realm, &https);
  if (rhost == NULL || !printable_token (a->realm, SBX_WWW_AUTH_PARAM_MAX))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: the token realm is not an http(s) URL", ep->host);
  bool insecure = ep->insecure || host_insecure (r->conf, rhost);
  if (!https && !insecure)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "%s: the token realm %s is plain http (allowed only for a registry_insecure registry)",
                          ep->host, rhost);
  CURL *esc = sbx_curl.curl_easy_init ();
  if (esc == NULL)
    abort ();
  _cleanup_free_ char *url = xstrdup (a->realm);
  char sep = strchr (url, '?') ? '&' : '?';
  if (a->service)
    {
      char *s = sbx_curl.curl_easy_escape (esc, a->service, 0);
      char *u = xasprintf ("%s%cservice=%s", url, sep, s);
      sbx_curl.curl_free (s);
      free (url);
      url = u;
      sep = '&';
    }
  if (scope)
    {
      char *s = sbx_curl.curl_easy_escape (esc, scope, 0);
      char *u = xasprintf ("%s%cscope=%s", url, sep, s);
      sbx_curl.curl_free (s);
      free (url);
      url = u;
    }
  sbx_curl.curl_easy_cleanup (esc);

  /* The realm is an endpoint of its own: its scheme from its URL, its CAs
   * from certs.d, Basic credentials when there are some. */
  endpoint rep = { .host = rhost, .connect = rhost, .insecure = insecure, .scheme = https ? SCHEME_HTTPS : SCHEME_HTTP };
  if (ca_bundle (r->conf, rhost, &rep.ca, &rep.ca_len, err) < 0)
    return -1;
  if (cred)
    rep.auth = basic_line (cred);
  req q = { .r = r, .ep = &rep, .method = "GET", .path = url, .outfd = -1, .infd = -1, .max = TOKEN_BODY_MAX };
  bool transport;
  int rc = perform (&q, rep.scheme, &transport, err);
  if (rep.auth)
    explicit_bzero (rep.auth, strlen (rep.auth));
  free (rep.auth);
  free (rep.ca);
  _cleanup_free_ char *body = q.buf;
  if (rc < 0)
    {
      req_done (&q);
      return sbx_error_wrap (err, "%s: token", ep->host);
    }
  if (q.code != 200)
    {
      long code = q.code;
      req_done (&q);
      if (code == 401 || code == 403)
        return sbx_error_set (err, SBX_E_PERMISSION_DENIED, 0, "%s: the token server %s refused %s (HTTP %ld)",
                              ep->host, rhost, cred ? "the credentials" : "an anonymous token", code);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: the token server %s answered HTTP %ld", ep->host,
                            rhost, code);
    }
  req_done (&q);
  _cleanup_yajl_val_ yajl_val v = NULL;
  const char *tok = NULL;
  if (j_parse (body ? body : "", q.len, TOKEN_BODY_MAX, "token", &v, NULL) < 0 || !YAJL_IS_OBJECT (v)
      || j_get_str (v, "token", false, &tok, NULL) < 0
      || (tok == NULL && j_get_str (v, "access_token", false, &tok, NULL) < 0))
    tok = NULL;
  if (tok == NULL || !printable_token (tok, TOKEN_MAX))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: the token server %s answered no usable token", ep->host,
                          rhost);
  *ret = xstrdup (tok);
  if (body)
    explicit_bzero (body, q.len);
  return 0;
}

/* Answers the challenge of a 401 (WWW, from Q's endpoint): the endpoint's
 * Authorization for the next try. */
static int
authenticate (req *q, const sbx_cred *given, bool use_given, sbx_error **err)
{
  sbx_registry *r = q->r;
  endpoint *ep = q->ep;
  if (q->www_auth == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: %s %s: HTTP 401 without a WWW-Authenticate challenge",
                          ep->host, q->method, q->path);
  _cleanup_www_auth_ sbx_www_auth *a = NULL;
  if (sbx_www_auth_parse (q->www_auth, strlen (q->www_auth), &a, err) < 0)
    return sbx_error_wrap (err, "%s: %s %s", ep->host, q->method, q->path);
  const sbx_cred *cred = given;
  if (!use_given && ep_cred (r, ep, &cred, err) < 0)
    return -1;
  if (a->scheme == SBX_WWW_BASIC)
    {
      if (cred == NULL)
        return sbx_error_set (err, SBX_E_PERMISSION_DENIED, 0, "%s: credentials are needed (sbx login %s)", ep->host,
                              ep->host);
      ep_set_auth (r, ep, basic_line (cred));
      return 0;
    }
  _cleanup_free_ char *scope = NULL;
  if (r->repository)
    scope = xasprintf ("repository:%s:%s", r->repository, r->push ? "pull,push" : "pull");
  else if (a->scope)
    scope = xstrdup (a->scope);
  _cleanup_free_ char *tok = NULL;
  if (fetch_token (r, ep, a, scope, cred, &tok, err) < 0)
    return -1;
  ep_set_auth (r, ep, xasprintf ("Authorization: Bearer %s", tok));
  explicit_bzero (tok, strlen (tok));
  return 0;
}

/* Q with the endpoint's Authorization; on a 401, the challenge answered once
 * and Q sent again (not for an upload from a file descriptor, which cannot
 * be read twice). 0 with q->code set. */
static int
send_authed (req *q, sbx_error **err)
{
  if (perform_ep (q, err) < 0)
    return -1;
  if (q->code != 401 || q->no_auth || q->infd >= 0)
    return 0;
  if (authenticate (q, NULL, false, err) < 0)
    return -1;
  q->got = 0;
  q->len = 0;
  return perform_ep (q, err);
}

/* Q sent to each endpoint in turn until one gives an answer in [LO, HI] (or
 * NOT_FOUND-able 404 with OK404); the last one's error otherwise. */
static int
send_any (req *q, long lo, long hi, bool ok404, sbx_error **err)
{
  sbx_registry *r = q->r;
  for (size_t i = 0; i < r->neps; i++)
    {
      sbx_error *e = NULL;
      q->ep = &r->eps[i];
      q->got = 0;
      q->len = 0;
      int rc = send_authed (q, &e);
      if (rc == 0 && ((q->code >= lo && q->code <= hi) || (ok404 && q->code == 404 && i + 1 == r->neps)))
        return 0;
      if (rc == 0)
        status_error (q, &e);
      bool cancelled = e->code == SBX_E_INTERNAL && e->errnum == ECANCELED;
      if (i + 1 == r->neps || cancelled)
        {
          *err = e;
          return -1;
        }
      sbx_error_free (e);
    }
  return sbx_error_set (err, SBX_E_INTERNAL, 0, "no registry endpoint");
}

/* ---- the verbs ---- */

static bool
digest_ok (const char *d)
{
  if (d == NULL || strncmp (d, "sha256:", 7) != 0 || strlen (d) != 71)
    return false;
  for (const char *p = d + 7; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return false;
  return true;
}

static char *
sha256_digest (const void *data, size_t len)
{
  char hex[65];
  sha256_hex (data, len, hex);
  return xasprintf ("sha256:%s", hex);
}

int
sbx_registry_get_manifest (sbx_registry *r, const char *reference, char **ret_body, size_t *ret_len,
                           char **ret_media_type, char **ret_digest, sbx_error **err)
{
  _cleanup_free_ char *path = xasprintf ("/v2/%s/manifests/%s", r->repository, reference);
  req q = { .r = r,
            .method = "GET",
            .path = path,
            .accept = ACCEPT_MANIFESTS,
            .outfd = -1,
            .infd = -1,
            .max = SBX_REGISTRY_MANIFEST_MAX };
  int rc = send_any (&q, 200, 200, false, err);
  _cleanup_free_ char *body = q.buf;
  if (rc < 0)
    {
      if ((*err)->code == SBX_E_RESOURCE_EXHAUSTED && q.over)
        {
          sbx_error_free (*err);
          *err = NULL;
          rc = sbx_error_set (err, SBX_E_RESOURCE_EXHAUSTED, 0, "%s: %s: a manifest over %d MiB", q.ep->host, path,
                              SBX_REGISTRY_MANIFEST_MAX >> 20);
        }
      req_done (&q);
      return rc;
    }
  _cleanup_free_ char *digest = sha256_digest (body ? body : "", q.len);
  _cleanup_free_ char *mt = NULL;
  if (q.ctype)
    {
      size_t n = strcspn (q.ctype, "; \t");
      mt = xstrndup (q.ctype, n);
      if (!printable_token (mt, 256))
        {
          free (mt);
          mt = xstrdup ("");
        }
    }
  else
    mt = xstrdup ("");
  bool by_digest = strncmp (reference, "sha256:", 7) == 0;
  const char *want = by_digest ? reference : (q.ddigest && digest_ok (q.ddigest) ? q.ddigest : NULL);
  if (want && strcmp (want, digest) != 0)
    {
      _cleanup_free_ char *w = xstrdup (want);
      const char *host = q.ep->host;
      sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: %s: digest mismatch: the manifest is %s, not %s", host, path,
                     digest, w);
      req_done (&q);
      return -1;
    }
  req_done (&q);
  *ret_body = body ? steal_pointer (&body) : xstrdup ("");
  *ret_len = q.len;
  *ret_media_type = steal_pointer (&mt);
  *ret_digest = steal_pointer (&digest);
  return 0;
}

static bool
resumable (const sbx_error *e)
{
  return e->code == SBX_E_INTERNAL && e->errnum != ECANCELED && strstr (e->msg, "the connection failed") != NULL;
}

static int
get_blob_locked (sbx_registry *r, const char *digest, uint64_t size, uint64_t offset, int outfd,
                 sbx_registry_progress_fn fn, void *ud, sbx_error **err)
{
  _cleanup_free_ char *path = xasprintf ("/v2/%s/blobs/%s", r->repository, digest);
  uint64_t pos = offset;
  unsigned resumes = 0;
  size_t epi = 0;
  for (;;)
    {
      char range[32];
      snprintf (range, sizeof range, "%llu-", (unsigned long long) pos);
      req q = { .r = r,
                .ep = &r->eps[epi],
                .method = "GET",
                .path = path,
                .outfd = outfd,
                .infd = -1,
                .range_from = pos > 0 ? range : NULL,
                .range_pos = pos,
                .limit = size - pos,
                .fn = fn,
                .ud = ud,
                .base = pos,
                .total = size };
      sbx_error *e = NULL;
      int rc = send_authed (&q, &e);
      if (rc == 0 && q.code != 200 && q.code != 206)
        {
          status_error (&q, &e);
          rc = -1;
        }
      pos += q.got;
      bool cut = rc < 0 ? resumable (e) : pos < size;
      if (rc < 0 && !cut)
        {
          req_done (&q);
          /* Another endpoint (a mirror failed): from where this one stopped. */
          if (epi + 1 < r->neps && e->errnum != ECANCELED)
            {
              sbx_error_free (e);
              epi++;
              continue;
            }
          *err = e;
          return -1;
        }
      req_done (&q);
      if (!cut)
        {
          sbx_error_free (e);
          return 0;
        }
      if (++resumes > BLOB_RESUMES_MAX)
        {
          sbx_error_free (e);
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                                "%s: GET %s: truncated blob: %llu of %llu bytes after %d resumed transfers",
                                r->eps[epi].host, path, (unsigned long long) pos, (unsigned long long) size,
                                BLOB_RESUMES_MAX);
        }
      sbx_error_free (e);
    }
}

int
sbx_registry_get_blob (sbx_registry *r, const char *digest, uint64_t size, uint64_t offset, int outfd,
                       sbx_registry_progress_fn fn, void *ud, sbx_error **err)
{
  if (!digest_ok (digest))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "not a sha256 digest");
  if (offset > size)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "blob offset past its size");
  /* OUTFD may be a pipe whose reader gave up: EPIPE, not SIGPIPE. */
  sigset_t pipe_set, old;
  sigemptyset (&pipe_set);
  sigaddset (&pipe_set, SIGPIPE);
  pthread_sigmask (SIG_BLOCK, &pipe_set, &old);
  int rc = get_blob_locked (r, digest, size, offset, outfd, fn, ud, err);
  struct timespec zero = { 0, 0 };
  while (sigtimedwait (&pipe_set, NULL, &zero) > 0)
    ;
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  return rc;
}

int
sbx_registry_get_small_blob (sbx_registry *r, const char *digest, uint64_t size, char **ret_body, size_t *ret_len,
                             sbx_error **err)
{
  if (!digest_ok (digest))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "not a sha256 digest");
  if (size > SBX_REGISTRY_MANIFEST_MAX)
    return sbx_error_set (err, SBX_E_RESOURCE_EXHAUSTED, 0, "blob %s: %llu bytes, over %d MiB", digest,
                          (unsigned long long) size, SBX_REGISTRY_MANIFEST_MAX >> 20);
  _cleanup_free_ char *path = xasprintf ("/v2/%s/blobs/%s", r->repository, digest);
  req q = { .r = r, .method = "GET", .path = path, .outfd = -1, .infd = -1, .max = (size_t) size };
  int rc = send_any (&q, 200, 200, false, err);
  _cleanup_free_ char *body = q.buf;
  const char *host = q.ep ? q.ep->host : "";
  _cleanup_free_ char *h = xstrdup (host);
  req_done (&q);
  if (rc < 0)
    {
      if (q.over)
        {
          sbx_error_free (*err);
          *err = NULL;
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: GET %s: more bytes than the descriptor's %llu", h,
                                path, (unsigned long long) size);
        }
      return -1;
    }
  if (q.len != size)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: GET %s: truncated blob: %zu of %llu bytes", h, path,
                          q.len, (unsigned long long) size);
  _cleanup_free_ char *got = sha256_digest (body ? body : "", q.len);
  if (strcmp (got, digest) != 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: GET %s: digest mismatch: the blob is %s", h, path, got);
  *ret_body = body ? steal_pointer (&body) : xstrdup ("");
  *ret_len = q.len;
  return 0;
}

int
sbx_registry_blob_exists (sbx_registry *r, const char *digest, bool *ret, sbx_error **err)
{
  if (!digest_ok (digest))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "not a sha256 digest");
  _cleanup_free_ char *path = xasprintf ("/v2/%s/blobs/%s", r->repository, digest);
  req q = { .r = r, .method = "HEAD", .path = path, .outfd = -1, .infd = -1 };
  int rc = send_any (&q, 200, 200, true, err);
  long code = q.code;
  req_done (&q);
  if (rc < 0)
    return -1;
  *ret = code == 200;
  return 0;
}

/* The upload URL of LOCATION (absolute, or a path on Q's endpoint) with
 * digest=DIGEST; *ret_same_host: whether it is on the endpoint. */
static char *
upload_url (const req *q, const char *location, const char *digest, bool *ret_same_host)
{
  _cleanup_free_ char *base = xasprintf ("%s://%s", q->url && strncmp (q->url, "http://", 7) == 0 ? "http" : "https",
                                         q->ep->connect);
  char *abs;
  if (location[0] == '/')
    abs = xasprintf ("%s%s", base, location), *ret_same_host = true;
  else
    {
      abs = xstrdup (location);
      size_t bl = strlen (base);
      *ret_same_host = strncmp (abs, base, bl) == 0 && (abs[bl] == '/' || abs[bl] == '?' || abs[bl] == '\0');
    }
  char *u = xasprintf ("%s%cdigest=%s", abs, strchr (abs, '?') ? '&' : '?', digest);
  free (abs);
  return u;
}

int
sbx_registry_put_blob (sbx_registry *r, const char *digest, uint64_t size, int fd, sbx_registry_progress_fn fn,
                       void *ud, sbx_error **err)
{
  if (!digest_ok (digest))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "not a sha256 digest");
  _cleanup_free_ char *path = xasprintf ("/v2/%s/blobs/uploads/", r->repository);
  endpoint *ep = &r->eps[r->neps - 1];
  req q = { .r = r, .ep = ep, .method = "POST", .path = path, .outfd = -1, .infd = -1, .max = ERRBODY_MAX };
  int rc = send_authed (&q, err);
  free (q.buf);
  if (rc == 0 && q.code != 202)
    rc = status_error (&q, err);
  if (rc == 0 && (q.location == NULL || !printable_token (q.location, HEADER_VALUE_MAX)))
    rc = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: POST %s: no upload Location", ep->host, path);
  if (rc < 0)
    {
      req_done (&q);
      return -1;
    }
  bool same;
  _cleanup_free_ char *url = upload_url (&q, q.location, digest, &same);
  req_done (&q);
  if (!same && strncmp (url, "https://", 8) != 0 && !ep->insecure)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: the upload location is not https", ep->host);
  _cleanup_free_ char *what = xasprintf ("/v2/%s/blobs/uploads/...", r->repository);
  req p = { .r = r,
            .ep = ep,
            .method = "PUT",
            .path = url,
            .content_type = "application/octet-stream",
            .no_auth = !same,
            .outfd = -1,
            .infd = fd,
            .in_size = size,
            .max = ERRBODY_MAX,
            .fn = fn,
            .ud = ud,
            .total = size };
  bool transport;
  pthread_mutex_lock (&r->lock);
  url_scheme s = strncmp (url, "http://", 7) == 0 ? SCHEME_HTTP : SCHEME_HTTPS;
  pthread_mutex_unlock (&r->lock);
  rc = perform (&p, s, &transport, err);
  free (p.buf);
  p.path = what; /* messages name the upload, not its session URL */
  if (rc == 0 && p.code != 201 && p.code != 204)
    rc = status_error (&p, err);
  req_done (&p);
  return rc;
}

int
sbx_registry_put_manifest (sbx_registry *r, const char *reference, const char *media_type, const char *body, size_t len,
                           sbx_error **err)
{
  _cleanup_free_ char *path = xasprintf ("/v2/%s/manifests/%s", r->repository, reference);
  req q = { .r = r,
            .ep = &r->eps[r->neps - 1],
            .method = "PUT",
            .path = path,
            .content_type = media_type,
            .outfd = -1,
            .infd = -1,
            .body = body,
            .body_len = len,
            .max = ERRBODY_MAX };
  int rc = send_authed (&q, err);
  free (q.buf);
  if (rc == 0 && q.code != 201 && q.code != 200)
    rc = status_error (&q, err);
  req_done (&q);
  return rc;
}

int
sbx_registry_ping (const char *root, const sbx_conf *conf, const char *registry, const struct sbx_cred *cred,
                   sbx_error **err)
{
  if (sbx_curl_load (err) < 0)
    return -1;
  _cleanup_registry_ sbx_registry *r = session_new (root, conf, NULL, false);
  if (endpoint_add (r, registry, err) < 0)
    return -1;
  req q = { .r = r, .ep = &r->eps[0], .method = "GET", .path = "/v2/", .outfd = -1, .infd = -1, .max = ERRBODY_MAX };
  int rc = perform_ep (&q, err);
  if (rc == 0 && q.code == 401)
    {
      rc = authenticate (&q, cred, true, err);
      if (rc == 0)
        {
          free (q.buf);
          q.buf = NULL;
          q.len = 0;
          rc = perform_ep (&q, err);
        }
    }
  free (q.buf);
  if (rc == 0 && q.code != 200)
    rc = status_error (&q, err);
  req_done (&q);
  return rc;
}
