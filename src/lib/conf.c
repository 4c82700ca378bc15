/* The operator's config file and the host's resolv.conf (see conf.h): a
 * line splitter that refuses what it does not understand, one small parser
 * per key, and the checks that make each value safe to build rules from. */
#include "config.h"
#include "conf.h"
#include "hostmount.h"
#include "sandbox.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define RESOLV_CONF_PATH "/etc/resolv.conf"

/* Only these are refused to sandboxes by default (egress.h), so only these
 * can be opened: opening anything else would open nothing. */
static const char *const private_ranges[] = {
  "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7",
};
#define PRIVATE_RANGES_TEXT "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10 or fc00::/7"

/* What a pool may not overlap: addresses the host or the network already
 * give a meaning that a sandbox's address must not take. */
static const char *const pool4_reserved[][2] = {
  { "0.0.0.0/8", "\"this network\"" }, { "127.0.0.0/8", "loopback" }, { "169.254.0.0/16", "link-local" },
  { "224.0.0.0/4", "multicast" },      { "240.0.0.0/4", "reserved" },
};
static const char *const pool6_reserved[][2] = {
  { "::/8", "loopback, unspecified and IPv4-mapped" },
  { "fe80::/10", "link-local" },
  { "ff00::/8", "multicast" },
};

/* ---- small helpers ---- */

static bool
is_blank (char c)
{
  return c == ' ' || c == '\t';
}

/* Reads PATH (following symlinks: /etc/resolv.conf usually is one), a
 * regular file of at most MAX bytes, NUL-terminated. NOT_FOUND when it does
 * not exist, INVALID_ARGUMENT for anything else. */
static int
read_text (const char *path, size_t max, char **ret, size_t *ret_len, sbx_error **err)
{
  /* O_NONBLOCK: a FIFO planted at PATH must not hang the open. */
  _cleanup_close_ int fd = open (path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, errno, "%s: cannot open",
                          path);
  struct stat st;
  if (fstat (fd, &st) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, errno, "%s: cannot stat", path);
  if (!S_ISREG (st.st_mode))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: not a regular file", path);
  int r = read_fd (fd, max, ret, ret_len);
  if (r == -EFBIG)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: the file is larger than %zu bytes", path, max);
  if (r < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, -r, "%s: cannot read", path);
  return 0;
}

/* ---- the config file ---- */

typedef enum conf_key {
  KEY_POOL4,
  KEY_POOL6,
  KEY_DNS,
  KEY_OPEN,
  KEY_PRIVATE_POLICY,
  KEY_EXPOSE_ADDRESS,
  KEY_EXPOSE_HOST,
  KEY_EXPOSE_HEAD_TIMEOUT,
  KEY_DEFAULT_MEMORY,
  KEY_DEFAULT_CPU,
  KEY_DISK,
  KEY_IMAGE_SIZE_MAX,
  KEY_STORE_RESERVE,
  KEY_UNQUALIFIED_REGISTRY,
  KEY_REGISTRY_MIRROR,
  KEY_REGISTRY_INSECURE,
  KEY_REGISTRY_CERTS_DIR,
  KEY_REGISTRY_STALL_TIMEOUT,
  KEY_MOUNT_DENY,
  KEY_MOUNT_ALLOW,
  KEY_DOMAIN_TTL_GRACE,
  KEY_DOMAIN_TTL_MIN,
  KEY_DOMAIN_TTL_MAX,
  KEY_DOCKER_RUNTIME,
  KEY_GPU_RUNTIME,
  KEY_NS_MAX_SANDBOXES,
  KEY_NS_MAX_CPU,
  KEY_NS_MAX_MEMORY,
  KEY_NS_MAX_GPUS,
  KEY_USERNS_BASE,
  KEY_USERNS_COUNT,
  KEY_RUNC_USERNS,
  KEY__MAX
} conf_key;

typedef struct parser {
  const char *name;
  size_t line;
  sbx_conf *conf;
  size_t seen[KEY__MAX]; /* the line a key was first set on; 0: not yet */
} parser;

/* "NAME:LINE: KEY: why" (no "KEY: " when KEY is NULL). */
static int __attribute__ ((format (printf, 4, 5)))
perr (parser *p, const char *key, sbx_error **err, const char *fmt, ...)
{
  char why[1024];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (why, sizeof why, fmt, ap);
  va_end (ap);
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s:%zu: %s%s%s", p->name, p->line, key ? key : "",
                        key ? ": " : "", why);
}

static int
set_pool4 (parser *p, const char *key, const char *v, sbx_error **err)
{
  _cleanup_error_ sbx_error *e = NULL;
  sbx_cidr c;
  if (sbx_cidr_parse (v, &c, &e) < 0)
    return perr (p, key, err, "%s", e->msg);
  if (c.family != AF_INET)
    return perr (p, key, err, "expected an IPv4 network, such as 10.200.0.0/16");
  if (c.prefix < 8 || c.prefix > 28)
    return perr (p, key, err, "the prefix must be 8 to 28, not /%u", c.prefix);
  for (size_t i = 0; i < ARRAY_SIZE (pool4_reserved); i++)
    {
      sbx_cidr r = sbx_cidr_const (pool4_reserved[i][0]);
      if (sbx_cidr_overlaps (&c, &r))
        return perr (p, key, err, "%s overlaps %s (%s)", v, pool4_reserved[i][0], pool4_reserved[i][1]);
    }
  p->conf->pool4 = c;
  return 0;
}

static int
set_pool6 (parser *p, const char *key, const char *v, sbx_error **err)
{
  if (strcmp (v, "off") == 0)
    {
      p->conf->pool6 = (sbx_cidr){ 0 };
      return 0;
    }
  _cleanup_error_ sbx_error *e = NULL;
  sbx_cidr c;
  if (sbx_cidr_parse (v, &c, &e) < 0)
    return perr (p, key, err, "%s (or `off`)", e->msg);
  if (c.family != AF_INET6)
    return perr (p, key, err, "expected an IPv6 network, such as fd00:5b78::/64, or `off`");
  if (c.prefix < 48 || c.prefix > 120)
    return perr (p, key, err, "the prefix must be 48 to 120, not /%u", c.prefix);
  for (size_t i = 0; i < ARRAY_SIZE (pool6_reserved); i++)
    {
      sbx_cidr r = sbx_cidr_const (pool6_reserved[i][0]);
      if (sbx_cidr_overlaps (&c, &r))
        return perr (p, key, err, "%s overlaps %s (%s)", v, pool6_reserved[i][0], pool6_reserved[i][1]);
    }
  p->conf->pool6 = c;
  return 0;
}

static int
add_dns (parser *p, const char *key, const char *v, sbx_error **err)
{
  sbx_conf *c = p->conf;
  _cleanup_error_ sbx_error *e = NULL;
  sbx_cidr a;
  if (sbx_cidr_address_parse (v, &a, &e) < 0)
    return perr (p, key, err, "%s", e->msg);
  if (sbx_cidr_is_unspecified (&a))
    return perr (p, key, err, "%s is not a resolver's address", v);
  if (c->ndns == SBX_CONF_DNS_MAX)
    return perr (p, key, err, "more than %d resolvers", SBX_CONF_DNS_MAX);
  for (size_t i = 0; i < c->ndns; i++)
    if (sbx_cidr_equal (&c->dns[i], &a))
      return perr (p, key, err, "%s is listed twice", v);
  c->dns = xrealloc (c->dns, (c->ndns + 1) * sizeof *c->dns);
  c->dns[c->ndns++] = a;
  return 0;
}

static bool
open_name_is_valid (const char *s, size_t n)
{
  if (n == 0 || n > SBX_CONF_OPEN_NAME_MAX)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
      return false;
  return true;
}

static bool
cidr_is_private (const sbx_cidr *c)
{
  for (size_t i = 0; i < ARRAY_SIZE (private_ranges); i++)
    {
      sbx_cidr r = sbx_cidr_const (private_ranges[i]);
      if (sbx_cidr_contains (&r, c))
        return true;
    }
  return false;
}

static int
add_open (parser *p, const char *key, const char *v, sbx_error **err)
{
  sbx_conf *c = p->conf;
  size_t n = strcspn (v, " \t");
  const char *cidr = v + n + strspn (v + n, " \t");
  if (v[n] == '\0' || *cidr == '\0')
    return perr (p, key, err, "expected `NAME CIDR`, such as `lab 10.1.0.0/16`");
  if (!open_name_is_valid (v, n))
    return perr (p, key, err, "the name `%.*s` is not 1 to %d of [a-z0-9_-]", (int) (n > 64 ? 64 : n), v,
                 SBX_CONF_OPEN_NAME_MAX);
  _cleanup_error_ sbx_error *e = NULL;
  sbx_cidr r;
  if (sbx_cidr_parse (cidr, &r, &e) < 0)
    return perr (p, key, err, "%.*s: %s", (int) n, v, e->msg);
  if (!cidr_is_private (&r))
    return perr (p, key, err,
                 "%.*s: %s is not a private range (" PRIVATE_RANGES_TEXT
                 "): only those can be opened; other addresses are reachable already or always refused",
                 (int) n, v, cidr);
  if (c->nopen == SBX_CONF_OPEN_MAX)
    return perr (p, key, err, "more than %d destinations", SBX_CONF_OPEN_MAX);
  for (size_t i = 0; i < c->nopen; i++)
    if (strlen (c->open[i].name) == n && memcmp (c->open[i].name, v, n) == 0)
      return perr (p, key, err, "the name `%.*s` is used twice", (int) n, v);
  c->open = xrealloc (c->open, (c->nopen + 1) * sizeof *c->open);
  c->open[c->nopen++] = (sbx_conf_open){ .name = xstrndup (v, n), .cidr = r };
  return 0;
}

static int
set_private_policy (parser *p, const char *key, const char *v, sbx_error **err)
{
  if (strcmp (v, "drop") != 0 && strcmp (v, "observe") != 0)
    {
      _cleanup_free_ char *q = printable_escaped (v, 64);
      return perr (p, key, err, "expected `drop` or `observe`, not `%s`", q);
    }
  p->conf->observe = strcmp (v, "observe") == 0;
  return 0;
}

/* docker_runtime: what --docker on runc gets (issue 21): log (allowed, with
 * an audit record) or enforce (POLICY_REFUSED). */
static int
set_docker_runtime (parser *p, const char *key, const char *v, sbx_error **err)
{
  if (strcmp (v, "log") != 0 && strcmp (v, "enforce") != 0)
    {
      _cleanup_free_ char *q = printable_escaped (v, 64);
      return perr (p, key, err, "expected `log` or `enforce`, not `%s`", q);
    }
  p->conf->docker_enforce = strcmp (v, "enforce") == 0;
  return 0;
}

static int
set_expose_address (parser *p, const char *key, const char *v, sbx_error **err)
{
  _cleanup_error_ sbx_error *e = NULL;
  sbx_cidr a;
  if (sbx_cidr_address_parse (v, &a, &e) < 0)
    return perr (p, key, err, "%s (expected an IPv4 or IPv6 address, such as 127.0.0.1 or ::1)", e->msg);
  free (p->conf->expose_address);
  p->conf->expose_address = sbx_cidr_address_text (&a);
  return 0;
}

/* Labels of 1 to 63 of [A-Za-z0-9-], not starting or ending with '-',
 * joined by single dots. */
static bool
hostname_is_valid (const char *s)
{
  size_t label = 0;
  for (const char *c = s;; c++)
    {
      if (*c == '.' || *c == '\0')
        {
          if (label == 0 || label > 63 || c[-1] == '-')
            return false;
          if (*c == '\0')
            return true;
          label = 0;
          continue;
        }
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '-'))
        return false;
      if (label == 0 && *c == '-')
        return false;
      label++;
    }
}

static int
set_expose_host (parser *p, const char *key, const char *v, sbx_error **err)
{
  size_t n = strlen (v);
  if (n > SBX_CONF_HOST_MAX)
    return perr (p, key, err, "longer than %d characters", SBX_CONF_HOST_MAX);
  if (v[0] == '[')
    {
      if (n < 3 || v[n - 1] != ']')
        return perr (p, key, err, "an IPv6 address in brackets needs its `]`");
      _cleanup_free_ char *inner = xstrndup (v + 1, n - 2);
      _cleanup_error_ sbx_error *e = NULL;
      sbx_cidr a;
      if (sbx_cidr_address_parse (inner, &a, &e) < 0)
        return perr (p, key, err, "%s", e->msg);
      if (a.family != AF_INET6)
        return perr (p, key, err, "only an IPv6 address goes in brackets");
    }
  else if (!hostname_is_valid (v))
    {
      _cleanup_free_ char *q = printable_escaped (v, 64);
      return perr (p, key, err, "`%s` is not a host name ([A-Za-z0-9.-]) or an IPv6 address in brackets", q);
    }
  free (p->conf->expose_host);
  p->conf->expose_host = xstrdup (v);
  return 0;
}

/* Seconds, 1 to SBX_CONF_HEAD_TIMEOUT_MAX, or milliseconds with `ms`
 * (100 ms to the same): decimal digits only. */
static int
set_expose_head_timeout (parser *p, const char *key, const char *v, sbx_error **err)
{
  size_t n = strspn (v, "0123456789");
  bool ms = strcmp (v + n, "ms") == 0;
  unsigned long x = 0;
  for (size_t i = 0; i < n && i < 7; i++)
    x = x * 10 + (unsigned long) (v[i] - '0');
  if (n == 0 || n > 6 || (v[n] != '\0' && !ms))
    {
      _cleanup_free_ char *q = printable_escaped (v, 64);
      return perr (p, key, err, "expected seconds (such as `10`) or milliseconds (`500ms`), not `%s`", q);
    }
  unsigned long msec = ms ? x : x * 1000;
  if (msec < 100 || msec > SBX_CONF_HEAD_TIMEOUT_MAX * 1000UL)
    return perr (p, key, err, "must be 100ms to %d seconds", SBX_CONF_HEAD_TIMEOUT_MAX);
  p->conf->expose_head_timeout_ms = (unsigned) msec;
  return 0;
}

/* The same grammar and range as --memory, or 0: no limit. */
static int
set_default_memory (parser *p, const char *key, const char *v, sbx_error **err)
{
  uint64_t mem;
  if (strcmp (v, "0") == 0)
    mem = 0;
  else if (parse_memory (v, &mem) < 0 || mem < SBX_MEMORY_MIN || mem > SBX_MEMORY_MAX)
    {
      _cleanup_free_ char *q = printable_escaped (v, 64);
      return perr (p, key, err, "`%s` is not 0 (no limit) or a size between 6Mi and 4Ti (MiB, or 512Mi, 1Gi, 2G)", q);
    }
  p->conf->default_memory = mem;
  return 0;
}

/* The same range as --cpu, or 0: no limit. */
static int
set_default_cpu (parser *p, const char *key, const char *v, sbx_error **err)
{
  double cpu;
  if (strcmp (v, "0") == 0)
    cpu = 0;
  else if (parse_double (v, SBX_CPU_MIN, SBX_CPU_MAX, &cpu) < 0)
    {
      _cleanup_free_ char *q = printable_escaped (v, 64);
      return perr (p, key, err, "`%s` is not 0 (no limit) or a number of cores in 0.01..1024", q);
    }
  p->conf->default_cpu = cpu;
  return 0;
}

/* A size: MiB, or with a unit (512Mi, 10Gi, 2G), as --memory. */
static int
set_size (parser *p, const char *key, const char *v, uint64_t min, uint64_t max, bool zero, uint64_t *ret,
          sbx_error **err)
{
  uint64_t n;
  if (zero && strcmp (v, "0") == 0)
    {
      *ret = 0;
      return 0;
    }
  if (parse_memory (v, &n) < 0 || n < min || n > max)
    {
      _cleanup_free_ char *q = printable_escaped (v, 64);
      return perr (p, key, err,
                   "`%s` is not %sa size between %llu MiB and %llu GiB (MiB, or with a unit: 512Mi, 10Gi, 2G)", q,
                   zero ? "0 or " : "", (unsigned long long) (min >> 20), (unsigned long long) (max >> 30));
    }
  *ret = n;
  return 0;
}

static int
set_disk (parser *p, const char *key, const char *v, sbx_error **err)
{
  return set_size (p, key, v, SBX_DISK_MIN, SBX_DISK_MAX, true, &p->conf->disk, err);
}

static int
set_image_size_max (parser *p, const char *key, const char *v, sbx_error **err)
{
  return set_size (p, key, v, 1ULL << 20, 1ULL << 46, false, &p->conf->image_size_max, err);
}

static int
set_store_reserve (parser *p, const char *key, const char *v, sbx_error **err)
{
  return set_size (p, key, v, 0, 1ULL << 46, true, &p->conf->store_reserve, err);
}

/* ---- registries ---- */

/* Why S is not a registry host as image references write one (NAME[:PORT]
 * or [IPV6][:PORT]), or NULL when it is. */
static const char *
registry_host_why (const char *s)
{
  size_t n = strlen (s);
  const char *port = NULL;
  if (n > SBX_CONF_HOST_MAX + 8)
    return "too long";
  if (strchr (s, '/'))
    return "not a host: NAME[:PORT] without a scheme or a path";
  if (s[0] == '[')
    {
      const char *close = strchr (s, ']');
      if (close == NULL || close == s + 1)
        return "an IPv6 address in brackets needs its `]`";
      _cleanup_free_ char *inner = xstrndup (s + 1, (size_t) (close - s - 1));
      sbx_cidr a;
      if (sbx_cidr_address_parse (inner, &a, NULL) < 0 || a.family != AF_INET6)
        return "only an IPv6 address goes in brackets";
      if (close[1] != '\0' && close[1] != ':')
        return "expected `:PORT` after `]`";
      port = close[1] ? close + 2 : NULL;
    }
  else
    {
      size_t hl = strcspn (s, ":");
      _cleanup_free_ char *name = xstrndup (s, hl);
      if (hl > SBX_CONF_HOST_MAX || !hostname_is_valid (name))
        return "not a host name ([A-Za-z0-9.-]), an address, or [IPV6], with an optional :PORT";
      port = s[hl] ? s + hl + 1 : NULL;
    }
  if (port)
    {
      size_t pl = strspn (port, "0123456789");
      long v = pl >= 1 && pl <= 5 && port[pl] == '\0' && port[0] != '0' ? strtol (port, NULL, 10) : 0;
      if (v < 1 || v > 65535)
        return "the port must be 1 to 65535";
    }
  return NULL;
}

static int
check_registry_host (parser *p, const char *key, const char *v, sbx_error **err)
{
  const char *why = registry_host_why (v);
  if (why == NULL)
    return 0;
  _cleanup_free_ char *q = printable_escaped (v, 64);
  return perr (p, key, err, "`%s`: %s", q, why);
}

/* The entry of HOST, made when there is none. */
static sbx_conf_registry *
registry_entry (parser *p, const char *key, const char *host, sbx_error **err)
{
  sbx_conf *c = p->conf;
  for (size_t i = 0; i < c->nregistries; i++)
    if (strcmp (c->registries[i].host, host) == 0)
      return &c->registries[i];
  if (c->nregistries == SBX_CONF_REGISTRIES_MAX)
    {
      perr (p, key, err, "more than %d registries", SBX_CONF_REGISTRIES_MAX);
      return NULL;
    }
  c->registries = xrealloc (c->registries, (c->nregistries + 1) * sizeof *c->registries);
  c->registries[c->nregistries] = (sbx_conf_registry){ .host = xstrdup (host) };
  return &c->registries[c->nregistries++];
}

static int
set_unqualified_registry (parser *p, const char *key, const char *v, sbx_error **err)
{
  if (check_registry_host (p, key, v, err) < 0)
    return -1;
  free (p->conf->unqualified_registry);
  p->conf->unqualified_registry = xstrdup (v);
  return 0;
}

static int
add_registry_mirror (parser *p, const char *key, const char *v, sbx_error **err)
{
  size_t n = strcspn (v, " \t");
  const char *mirror = v + n + strspn (v + n, " \t");
  if (v[n] == '\0' || *mirror == '\0' || mirror[strcspn (mirror, " \t")] != '\0')
    return perr (p, key, err, "expected `HOST MIRROR`, such as `docker.io mirror.example.com:5000`");
  _cleanup_free_ char *host = xstrndup (v, n);
  if (check_registry_host (p, key, host, err) < 0 || check_registry_host (p, key, mirror, err) < 0)
    return -1;
  if (strcmp (host, mirror) == 0)
    return perr (p, key, err, "%s cannot be its own mirror", host);
  sbx_conf_registry *r = registry_entry (p, key, host, err);
  if (r == NULL)
    return -1;
  size_t count = strv_len (r->mirrors);
  for (size_t i = 0; i < count; i++)
    if (strcmp (r->mirrors[i], mirror) == 0)
      return perr (p, key, err, "%s is listed twice for %s", mirror, host);
  if (count == SBX_CONF_MIRRORS_MAX)
    return perr (p, key, err, "more than %d mirrors for %s", SBX_CONF_MIRRORS_MAX, host);
  strv_push (&r->mirrors, mirror);
  return 0;
}

static int
add_registry_insecure (parser *p, const char *key, const char *v, sbx_error **err)
{
  if (check_registry_host (p, key, v, err) < 0)
    return -1;
  sbx_conf_registry *r = registry_entry (p, key, v, err);
  if (r == NULL)
    return -1;
  if (r->insecure)
    return perr (p, key, err, "%s is listed twice", v);
  r->insecure = true;
  return 0;
}

static int
set_registry_certs_dir (parser *p, const char *key, const char *v, sbx_error **err)
{
  _cleanup_free_ char *q = printable_escaped (v, 64);
  if (v[0] != '/')
    return perr (p, key, err, "`%s` is not an absolute directory", q);
  for (const char *c = v; *c; c++)
    if (c[0] == '/' && c[1] == '.' && c[2] == '.' && (c[3] == '/' || c[3] == '\0'))
      return perr (p, key, err, "`%s`: no `..` components", q);
  size_t n = strlen (v);
  while (n > 1 && v[n - 1] == '/')
    n--;
  free (p->conf->registry_certs_dir);
  p->conf->registry_certs_dir = xstrndup (v, n);
  return 0;
}

static int
set_registry_stall_timeout (parser *p, const char *key, const char *v, sbx_error **err)
{
  size_t n = strspn (v, "0123456789");
  long x = n >= 1 && n <= 5 && v[n] == '\0' ? strtol (v, NULL, 10) : 0;
  if (x < 1 || x > SBX_CONF_STALL_TIMEOUT_MAX)
    {
      _cleanup_free_ char *q = printable_escaped (v, 64);
      return perr (p, key, err, "`%s` is not a number of seconds from 1 to %d", q, SBX_CONF_STALL_TIMEOUT_MAX);
    }
  p->conf->registry_stall_timeout = (unsigned) x;
  return 0;
}

/* ---- host directories ---- */

/* One or more absolute paths, separated by blanks or commas, each made
 * normal (no `.`, `//`, trailing `/`; a `..` is refused) and listed once. */
static int
add_mount_paths (parser *p, const char *key, const char *v, char ***list, sbx_error **err)
{
  if (v[strspn (v, " \t,")] == '\0')
    return perr (p, key, err, "expected one or more absolute paths, such as `/srv/secret /home/alice/.ssh`");
  for (const char *s = v; *s;)
    {
      size_t n = strcspn (s, " \t,");
      if (n == 0)
        {
          s++;
          continue;
        }
      _cleanup_free_ char *raw = xstrndup (s, n);
      _cleanup_free_ char *q = printable_escaped (raw, 64);
      _cleanup_free_ char *path = NULL;
      _cleanup_error_ sbx_error *e = NULL;
      if (sbx_hostpath_normalize (raw, &path, &e) < 0)
        return perr (p, key, err, "`%s`: %s", q,
                     raw[0] == '/' ? "not a normal absolute path (no `..`)" : "not an absolute path");
      if (strv_len (*list) == SBX_CONF_MOUNT_PATHS_MAX)
        return perr (p, key, err, "more than %d paths", SBX_CONF_MOUNT_PATHS_MAX);
      for (size_t i = 0; *list && (*list)[i]; i++)
        if (strcmp ((*list)[i], path) == 0)
          return perr (p, key, err, "`%s` is listed twice", q);
      strv_push (list, path);
      s += n;
    }
  return 0;
}

static int
add_mount_deny (parser *p, const char *key, const char *v, sbx_error **err)
{
  return add_mount_paths (p, key, v, &p->conf->mount_deny, err);
}

static int
add_mount_allow (parser *p, const char *key, const char *v, sbx_error **err)
{
  return add_mount_paths (p, key, v, &p->conf->mount_allow, err);
}

/* Seconds, decimal digits only, LO to SBX_CONF_DOMAIN_TTL_LIMIT. */
static int
domain_seconds (parser *p, const char *key, const char *v, unsigned lo, unsigned *ret, sbx_error **err)
{
  size_t n = strspn (v, "0123456789");
  long x = n >= 1 && n <= 6 && v[n] == '\0' ? strtol (v, NULL, 10) : -1;
  if (x < (long) lo || x > SBX_CONF_DOMAIN_TTL_LIMIT)
    {
      _cleanup_free_ char *q = printable_escaped (v, 64);
      return perr (p, key, err, "`%s` is not a number of seconds from %u to %d", q, lo, SBX_CONF_DOMAIN_TTL_LIMIT);
    }
  *ret = (unsigned) x;
  return 0;
}

static int
set_domain_ttl_grace (parser *p, const char *key, const char *v, sbx_error **err)
{
  return domain_seconds (p, key, v, 0, &p->conf->domain_ttl_grace, err);
}

static int
set_domain_ttl_min (parser *p, const char *key, const char *v, sbx_error **err)
{
  return domain_seconds (p, key, v, 1, &p->conf->domain_ttl_min, err);
}

static int
set_domain_ttl_max (parser *p, const char *key, const char *v, sbx_error **err)
{
  return domain_seconds (p, key, v, 1, &p->conf->domain_ttl_max, err);
}

/* gpu_runtime = runsc | runc (gpu.h): where a GPU sandbox that names no
 * runtime runs. */
static int
set_gpu_runtime (parser *p, const char *key, const char *v, sbx_error **err)
{
  if (strcmp (v, "runsc") != 0 && strcmp (v, "runc") != 0)
    {
      _cleanup_free_ char *q = printable_escaped (v, 64);
      return perr (p, key, err, "expected `runsc` or `runc`, not `%s`", q);
    }
  p->conf->gpu_runtime_runc = strcmp (v, "runc") == 0;
  return 0;
}

/* ---- namespaces: `namespace_max_KIND = NAME VALUE` ---- */

/* The entry of NAME, made (no quota set) when there is none. */
static sbx_conf_namespace *
namespace_entry (parser *p, const char *key, const char *name, sbx_error **err)
{
  sbx_conf *c = p->conf;
  for (size_t i = 0; i < c->nnamespaces; i++)
    if (strcmp (c->namespaces[i].name, name) == 0)
      return &c->namespaces[i];
  if (c->nnamespaces == SBX_CONF_NAMESPACES_MAX)
    {
      perr (p, key, err, "more than %d namespaces", SBX_CONF_NAMESPACES_MAX);
      return NULL;
    }
  c->namespaces = xrealloc (c->namespaces, (c->nnamespaces + 1) * sizeof *c->namespaces);
  c->namespaces[c->nnamespaces] = (sbx_conf_namespace){ .name = xstrdup (name),
                                                        .max_sandboxes = -1,
                                                        .max_cpu = -1,
                                                        .max_memory = -1,
                                                        .max_gpus = -1 };
  return &c->namespaces[c->nnamespaces++];
}

/* The value of one quota, by the key's kind: a count (0 allowed: none may
 * be had), cores or a size (more than 0). */
static int
namespace_value (parser *p, const char *key, const char *v, sbx_conf_namespace *ns, sbx_error **err)
{
  _cleanup_free_ char *q = printable_escaped (v, 64);
  uint64_t mem;
  if (strcmp (key, "namespace_max_sandboxes") == 0)
    return parse_int64 (v, 0, SBX_CONF_NS_SANDBOXES_MAX, &ns->max_sandboxes) < 0
               ? perr (p, key, err, "`%s` is not a number of sandboxes in 0..%d", q, SBX_CONF_NS_SANDBOXES_MAX)
               : 0;
  if (strcmp (key, "namespace_max_gpus") == 0)
    return parse_int64 (v, 0, SBX_CONF_NS_GPUS_MAX, &ns->max_gpus) < 0
               ? perr (p, key, err, "`%s` is not a number of GPUs in 0..%d", q, SBX_CONF_NS_GPUS_MAX)
               : 0;
  if (strcmp (key, "namespace_max_cpu") == 0)
    return parse_double (v, SBX_CPU_MIN, 1 << 20, &ns->max_cpu) < 0
               ? perr (p, key, err, "`%s` is not a number of cores, at least %g", q, SBX_CPU_MIN)
               : 0;
  if (parse_memory (v, &mem) < 0 || mem < SBX_MEMORY_MIN || mem > INT64_MAX)
    return perr (p, key, err, "`%s` is not a size of at least 6Mi (MiB, or 512Mi, 1Gi, 2G)", q);
  ns->max_memory = (int64_t) mem;
  return 0;
}

static int
set_namespace_quota (parser *p, const char *key, const char *v, sbx_error **err)
{
  const char *sp = v + strcspn (v, " \t");
  const char *val = sp + strspn (sp, " \t");
  _cleanup_free_ char *name = xstrndup (v, (size_t) (sp - v));
  if (*sp == '\0' || *val == '\0' || strpbrk (val, " \t"))
    return perr (p, key, err, "expected `NAMESPACE VALUE`");
  _cleanup_free_ char *q = printable_escaped (name, 64);
  if (!name_is_valid (name))
    return perr (p, key, err, "`%s` is not a namespace name ([A-Za-z0-9][A-Za-z0-9_.+-]*, at most %d)", q,
                 SBX_NAME_MAX);
  sbx_conf_namespace *ns = namespace_entry (p, key, name, err);
  if (ns == NULL)
    return -1;
  bool set = strcmp (key, "namespace_max_sandboxes") == 0 ? ns->max_sandboxes >= 0
             : strcmp (key, "namespace_max_gpus") == 0    ? ns->max_gpus >= 0
             : strcmp (key, "namespace_max_cpu") == 0     ? ns->max_cpu >= 0
                                                          : ns->max_memory >= 0;
  if (set)
    return perr (p, key, err, "given twice for namespace %s", q);
  return namespace_value (p, key, val, ns, err);
}

/* Decimal digits only, LO to HI. */
static int
set_u32 (parser *p, const char *key, const char *v, uint32_t lo, uint32_t hi, uint32_t *ret, sbx_error **err)
{
  size_t n = strspn (v, "0123456789");
  long long x = n >= 1 && n <= 10 && v[n] == '\0' ? strtoll (v, NULL, 10) : -1;
  if (x < (long long) lo || x > (long long) hi)
    {
      _cleanup_free_ char *q = printable_escaped (v, 64);
      return perr (p, key, err, "`%s` is not a number from %u to %u", q, lo, hi);
    }
  *ret = (uint32_t) x;
  return 0;
}

static int
set_userns_base (parser *p, const char *key, const char *v, sbx_error **err)
{
  return set_u32 (p, key, v, SBX_CONF_USERNS_BASE_MIN, UINT32_MAX - 1, &p->conf->userns_base, err);
}

static int
set_userns_count (parser *p, const char *key, const char *v, sbx_error **err)
{
  return set_u32 (p, key, v, 1, 65535, &p->conf->userns_count, err);
}

static int
set_runc_userns (parser *p, const char *key, const char *v, sbx_error **err)
{
  if (strcmp (v, "required") != 0 && strcmp (v, "optional") != 0)
    {
      _cleanup_free_ char *q = printable_escaped (v, 64);
      return perr (p, key, err, "expected `required` or `optional`, not `%s`", q);
    }
  p->conf->runc_userns_optional = strcmp (v, "optional") == 0;
  return 0;
}

typedef int (*key_setter) (parser *p, const char *key, const char *value, sbx_error **err);

static const struct {
  const char *name;
  key_setter set;
  bool repeatable;
} keys[KEY__MAX] = {
  [KEY_POOL4] = { "pool4", set_pool4, false },
  [KEY_POOL6] = { "pool6", set_pool6, false },
  [KEY_DNS] = { "dns", add_dns, true },
  [KEY_OPEN] = { "open", add_open, true },
  [KEY_PRIVATE_POLICY] = { "private_policy", set_private_policy, false },
  [KEY_EXPOSE_ADDRESS] = { "expose_address", set_expose_address, false },
  [KEY_EXPOSE_HOST] = { "expose_host", set_expose_host, false },
  [KEY_EXPOSE_HEAD_TIMEOUT] = { "expose_head_timeout", set_expose_head_timeout, false },
  [KEY_DEFAULT_MEMORY] = { "default_memory", set_default_memory, false },
  [KEY_DEFAULT_CPU] = { "default_cpu", set_default_cpu, false },
  [KEY_DISK] = { "disk", set_disk, false },
  [KEY_IMAGE_SIZE_MAX] = { "image_size_max", set_image_size_max, false },
  [KEY_STORE_RESERVE] = { "store_reserve", set_store_reserve, false },
  [KEY_UNQUALIFIED_REGISTRY] = { "unqualified_registry", set_unqualified_registry, false },
  [KEY_REGISTRY_MIRROR] = { "registry_mirror", add_registry_mirror, true },
  [KEY_REGISTRY_INSECURE] = { "registry_insecure", add_registry_insecure, true },
  [KEY_REGISTRY_CERTS_DIR] = { "registry_certs_dir", set_registry_certs_dir, false },
  [KEY_REGISTRY_STALL_TIMEOUT] = { "registry_stall_timeout", set_registry_stall_timeout, false },
  [KEY_MOUNT_DENY] = { "mount_deny", add_mount_deny, true },
  [KEY_MOUNT_ALLOW] = { "mount_allow", add_mount_allow, true },
  [KEY_DOMAIN_TTL_GRACE] = { "domain_ttl_grace", set_domain_ttl_grace, false },
  [KEY_DOMAIN_TTL_MIN] = { "domain_ttl_min", set_domain_ttl_min, false },
  [KEY_DOMAIN_TTL_MAX] = { "domain_ttl_max", set_domain_ttl_max, false },
  [KEY_DOCKER_RUNTIME] = { "docker_runtime", set_docker_runtime, false },
  [KEY_GPU_RUNTIME] = { "gpu_runtime", set_gpu_runtime, false },
  [KEY_NS_MAX_SANDBOXES] = { "namespace_max_sandboxes", set_namespace_quota, true },
  [KEY_NS_MAX_CPU] = { "namespace_max_cpu", set_namespace_quota, true },
  [KEY_NS_MAX_MEMORY] = { "namespace_max_memory", set_namespace_quota, true },
  [KEY_NS_MAX_GPUS] = { "namespace_max_gpus", set_namespace_quota, true },
  [KEY_USERNS_BASE] = { "userns_base", set_userns_base, false },
  [KEY_USERNS_COUNT] = { "userns_count", set_userns_count, false },
  [KEY_RUNC_USERNS] = { "runc_userns", set_runc_userns, false },
};

/* One line of N bytes (no newline, no NUL): `key = value`, a comment or blank. */
static int
parse_line (parser *p, const char *s, size_t n, sbx_error **err)
{
  while (n > 0 && (is_blank (s[n - 1]) || s[n - 1] == '\r'))
    n--;
  while (n > 0 && is_blank (*s))
    s++, n--;
  if (n == 0 || *s == '#')
    return 0;
  for (size_t i = 0; i < n; i++)
    {
      unsigned char ch = (unsigned char) s[i];
      if ((ch < 0x20 && ch != '\t') || ch >= 0x7f)
        return perr (p, NULL, err, "a control character or a non-ASCII byte (0x%02x); only comments may have those",
                     ch);
    }
  const char *eq = memchr (s, '=', n);
  if (eq == NULL)
    return perr (p, NULL, err, "expected `key = value`");
  size_t klen = (size_t) (eq - s);
  while (klen > 0 && is_blank (s[klen - 1]))
    klen--;
  if (klen == 0)
    return perr (p, NULL, err, "expected `key = value`: the key is empty");
  _cleanup_free_ char *key = xstrndup (s, klen);
  const char *v = eq + 1, *end = s + n;
  while (v < end && is_blank (*v))
    v++;
  _cleanup_free_ char *value = xstrndup (v, (size_t) (end - v));

  conf_key k = 0;
  while (k < KEY__MAX && strcmp (keys[k].name, key) != 0)
    k++;
  if (k == KEY__MAX)
    {
      _cleanup_free_ char *q = printable_escaped (key, 64);
      return perr (p, NULL, err, "unknown key `%s`", q);
    }
  if (*value == '\0')
    return perr (p, key, err, "the value is empty");
  if (!keys[k].repeatable && p->seen[k])
    return perr (p, key, err, "given twice (first on line %zu)", p->seen[k]);
  if (p->seen[k] == 0)
    p->seen[k] = p->line;
  return keys[k].set (p, key, value, err);
}

static sbx_conf *
conf_defaults (void)
{
  sbx_conf *c = xmalloc0 (sizeof *c);
  c->pool4 = sbx_cidr_const ("10.200.0.0/16");
  c->expose_address = xstrdup ("127.0.0.1");
  c->expose_head_timeout_ms = 10000;
  c->default_memory = SBX_CONF_DEFAULT_MEMORY;
  c->default_cpu = SBX_CONF_DEFAULT_CPU;
  c->disk = SBX_DISK_DEFAULT;
  c->image_size_max = SBX_IMAGE_SIZE_MAX_DEFAULT;
  c->store_reserve = SBX_STORE_RESERVE_DEFAULT;
  c->domain_ttl_grace = SBX_CONF_DOMAIN_TTL_GRACE_DEFAULT;
  c->domain_ttl_min = SBX_CONF_DOMAIN_TTL_MIN_DEFAULT;
  c->domain_ttl_max = SBX_CONF_DOMAIN_TTL_MAX_DEFAULT;
  c->userns_base = SBX_CONF_USERNS_BASE_DEFAULT;
  c->userns_count = SBX_CONF_USERNS_COUNT_DEFAULT;
  return c;
}

/* The defaults that depend on other keys. */
static void
conf_finish (sbx_conf *c)
{
  if (c->expose_host == NULL)
    c->expose_host = strchr (c->expose_address, ':') ? xasprintf ("[%s]", c->expose_address)
                                                     : xstrdup (c->expose_address);
}

int
sbx_conf_parse (const char *name, const char *text, size_t len, sbx_conf **ret, sbx_error **err)
{
  _cleanup_conf_ sbx_conf *c = conf_defaults ();
  parser p = { .name = name ? name : "sbx.conf", .conf = c };
  if (len > SBX_CONF_SIZE_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "%s: the file is larger than %d bytes", p.name,
                          SBX_CONF_SIZE_MAX);
  for (size_t off = 0; off < len;)
    {
      const char *s = text + off;
      const char *nl = memchr (s, '\n', len - off);
      size_t n = nl ? (size_t) (nl - s) : len - off;
      off += n + (nl ? 1 : 0);
      p.line++;
      if (n > SBX_CONF_LINE_MAX)
        return perr (&p, NULL, err, "the line is longer than %d bytes", SBX_CONF_LINE_MAX);
      if (memchr (s, '\0', n))
        return perr (&p, NULL, err, "a NUL byte");
      if (parse_line (&p, s, n, err) < 0)
        return -1;
    }
  if (c->domain_ttl_min > c->domain_ttl_max)
    {
      p.line = p.seen[KEY_DOMAIN_TTL_MIN] > p.seen[KEY_DOMAIN_TTL_MAX] ? p.seen[KEY_DOMAIN_TTL_MIN]
                                                                       : p.seen[KEY_DOMAIN_TTL_MAX];
      return perr (&p, p.seen[KEY_DOMAIN_TTL_MIN] > p.seen[KEY_DOMAIN_TTL_MAX] ? "domain_ttl_min" : "domain_ttl_max",
                   err, "domain_ttl_min (%u) is above domain_ttl_max (%u)", c->domain_ttl_min, c->domain_ttl_max);
    }
  if ((uint64_t) c->userns_base + (uint64_t) c->userns_count * 65536 > UINT32_MAX)
    {
      bool base_last = p.seen[KEY_USERNS_BASE] > p.seen[KEY_USERNS_COUNT];
      p.line = base_last ? p.seen[KEY_USERNS_BASE] : p.seen[KEY_USERNS_COUNT];
      return perr (&p, base_last ? "userns_base" : "userns_count", err,
                   "userns_base (%u) + userns_count (%u) x 65536 ids pass the last host id (4294967294)",
                   c->userns_base, c->userns_count);
    }
  conf_finish (c);
  c->path = xstrdup (p.name);
  *ret = steal_pointer (&c);
  return 0;
}

int
sbx_conf_load (const char *path, sbx_conf **ret, sbx_error **err)
{
  if (path == NULL)
    {
      const char *env = getenv ("SBX_CONF");
      path = env && *env ? env : SBX_CONF_PATH_DEFAULT;
    }
  _cleanup_free_ char *text = NULL;
  size_t len = 0;
  _cleanup_error_ sbx_error *e = NULL;
  if (read_text (path, SBX_CONF_SIZE_MAX, &text, &len, &e) < 0)
    {
      if (e->code != SBX_E_NOT_FOUND)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, e->errnum, "%s", e->msg);
      sbx_conf *c = conf_defaults ();
      conf_finish (c);
      *ret = c;
      return 0;
    }
  return sbx_conf_parse (path, text, len, ret, err);
}

void
sbx_conf_free (sbx_conf *c)
{
  if (c == NULL)
    return;
  free (c->path);
  free (c->dns);
  for (size_t i = 0; i < c->nopen; i++)
    free (c->open[i].name);
  free (c->open);
  free (c->expose_address);
  free (c->expose_host);
  free (c->unqualified_registry);
  free (c->registry_certs_dir);
  for (size_t i = 0; i < c->nregistries; i++)
    {
      free (c->registries[i].host);
      strv_free (c->registries[i].mirrors);
    }
  free (c->registries);
  strv_free (c->mount_deny);
  strv_free (c->mount_allow);
  for (size_t i = 0; i < c->nnamespaces; i++)
    free (c->namespaces[i].name);
  free (c->namespaces);
  free (c);
}

const sbx_conf_namespace *
sbx_conf_namespace_find (const sbx_conf *c, const char *name)
{
  for (size_t i = 0; i < c->nnamespaces; i++)
    if (strcmp (c->namespaces[i].name, name) == 0)
      return &c->namespaces[i];
  return NULL;
}

const sbx_conf_registry *
sbx_conf_registry_find (const sbx_conf *c, const char *host)
{
  for (size_t i = 0; c && host && i < c->nregistries; i++)
    if (strcmp (c->registries[i].host, host) == 0)
      return &c->registries[i];
  return NULL;
}

/* ---- resolv.conf ---- */

/* The address of a "nameserver ADDR" line, or false. */
static bool
resolv_line (const char *s, size_t n, sbx_cidr *ret)
{
  static const char kw[] = "nameserver";
  char buf[256];
  while (n > 0 && is_blank (*s))
    s++, n--;
  if (n <= sizeof kw - 1 || memcmp (s, kw, sizeof kw - 1) != 0 || !is_blank (s[sizeof kw - 1]))
    return false;
  s += sizeof kw, n -= sizeof kw;
  while (n > 0 && is_blank (*s))
    s++, n--;
  size_t alen = 0;
  while (alen < n && !is_blank (s[alen]) && s[alen] != '\r' && s[alen] != '%' && s[alen] != '\0')
    alen++;
  if (alen == 0 || alen >= sizeof buf)
    return false;
  memcpy (buf, s, alen);
  buf[alen] = '\0';
  return sbx_cidr_address_parse (buf, ret, NULL) == 0;
}

int
sbx_resolv_conf_nameservers (const char *path, sbx_cidr **ret, size_t *ret_n, sbx_error **err)
{
  if (path == NULL)
    path = RESOLV_CONF_PATH;
  _cleanup_free_ char *text = NULL;
  size_t len = 0;
  _cleanup_error_ sbx_error *e = NULL;
  if (read_text (path, SBX_CONF_SIZE_MAX, &text, &len, &e) < 0)
    {
      if (e->code != SBX_E_NOT_FOUND)
        return sbx_error_set (err, e->code, e->errnum, "%s", e->msg);
      *ret = NULL;
      *ret_n = 0;
      return 0;
    }
  _cleanup_free_ sbx_cidr *list = NULL;
  size_t count = 0;
  for (size_t off = 0; off < len && count < SBX_RESOLV_MAX;)
    {
      const char *s = text + off;
      const char *nl = memchr (s, '\n', len - off);
      size_t n = nl ? (size_t) (nl - s) : len - off;
      off += n + (nl ? 1 : 0);
      sbx_cidr a;
      if (!resolv_line (s, n, &a))
        continue;
      bool dup = false;
      for (size_t i = 0; i < count && !dup; i++)
        dup = sbx_cidr_equal (&list[i], &a);
      if (dup)
        continue;
      list = xrealloc (list, (count + 1) * sizeof *list);
      list[count++] = a;
    }
  *ret = steal_pointer (&list);
  *ret_n = count;
  return 0;
}
