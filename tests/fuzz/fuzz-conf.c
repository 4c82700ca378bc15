/* Fuzz harness for the config file parser (src/lib/conf.c): arbitrary
 * bytes, and valid sbx.conf files mutated byte by byte, go to
 * sbx_conf_parse. It must never crash, and what it accepts must hold its
 * promises: pools of the right family and prefix outside the reserved
 * ranges, host addresses for resolvers, opened destinations inside the
 * private ranges with unique names, list limits, a host name of its
 * grammar, registry hosts of theirs (no `/`, no space, a port in range),
 * unique registries and mirrors within their limits, an absolute certs
 * directory, a stall timeout in range; written back out as a file, it must parse to the same thing.
 * What it refuses must be INVALID_ARGUMENT with a printable message that
 * starts with "FILE:LINE: ".
 *
 * With -fsanitize=fuzzer and -DSBX_LIBFUZZER it is a libFuzzer target;
 * without, a check program over a fixed pseudo-random corpus (TAP). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "conf.h"
#include "util.h"

#include <sys/socket.h>

#define FUZZ_NAME "fuzz-conf"
#include "fuzz.h"

#define NAME "fuzz.conf"

static size_t accepted;

static sbx_cidr
cidr (const char *s)
{
  sbx_cidr c;
  CHECK (sbx_cidr_parse (s, &c, NULL) == 0);
  return c;
}

/* Whether INNER lies inside OUTER (written apart from conf.c's on purpose). */
static bool
inside (const sbx_cidr *outer, const sbx_cidr *inner)
{
  if (outer->family != inner->family || outer->prefix > inner->prefix)
    return false;
  for (unsigned bit = 0; bit < outer->prefix; bit++)
    if (((outer->addr[bit / 8] ^ inner->addr[bit / 8]) >> (7 - bit % 8)) & 1)
      return false;
  return true;
}

static bool
overlaps (const sbx_cidr *a, const char *b)
{
  sbx_cidr r = cidr (b);
  return inside (a, &r) || inside (&r, a);
}

static bool
is_private (const sbx_cidr *c)
{
  static const char *const ranges[] = { "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7" };
  for (size_t i = 0; i < sizeof ranges / sizeof *ranges; i++)
    {
      sbx_cidr r = cidr (ranges[i]);
      if (inside (&r, c))
        return true;
    }
  return false;
}

static bool
is_address (const char *s, int family)
{
  sbx_cidr a;
  return strchr (s, '/') == NULL && sbx_cidr_parse (s, &a, NULL) == 0 && (family == 0 || a.family == family);
}

static void
check_conf (const sbx_conf *c)
{
  CHECK (c->path && strcmp (c->path, NAME) == 0);
  CHECK (c->pool4.family == AF_INET && c->pool4.prefix >= 8 && c->pool4.prefix <= 28);
  CHECK (!overlaps (&c->pool4, "127.0.0.0/8") && !overlaps (&c->pool4, "169.254.0.0/16"));
  CHECK (c->pool6.family == 0 || (c->pool6.family == AF_INET6 && c->pool6.prefix >= 48 && c->pool6.prefix <= 120));
  CHECK (c->pool6.family == 0 || (!overlaps (&c->pool6, "fe80::/10") && !overlaps (&c->pool6, "::1/128")));
  CHECK (c->ndns <= SBX_CONF_DNS_MAX && (c->ndns == 0) == (c->dns == NULL));
  for (size_t i = 0; i < c->ndns; i++)
    {
      CHECK (c->dns[i].prefix == (c->dns[i].family == AF_INET ? 32u : 128u));
      for (size_t j = 0; j < i; j++)
        CHECK (!sbx_cidr_equal (&c->dns[i], &c->dns[j]));
    }
  CHECK (c->nopen <= SBX_CONF_OPEN_MAX && (c->nopen == 0) == (c->open == NULL));
  for (size_t i = 0; i < c->nopen; i++)
    {
      const char *n = c->open[i].name;
      CHECK (n && n[0] && strlen (n) <= SBX_CONF_OPEN_NAME_MAX
             && strspn (n, "abcdefghijklmnopqrstuvwxyz0123456789_-") == strlen (n));
      CHECK (is_private (&c->open[i].cidr));
      for (size_t j = 0; j < i; j++)
        CHECK (strcmp (c->open[i].name, c->open[j].name) != 0);
    }
  CHECK (c->expose_address && is_address (c->expose_address, 0));
  CHECK (c->expose_head_timeout_ms >= 100 && c->expose_head_timeout_ms <= SBX_CONF_HEAD_TIMEOUT_MAX * 1000);
  const char *h = c->expose_host;
  size_t hl = h ? strlen (h) : 0;
  CHECK (h && hl >= 1 && hl <= SBX_CONF_HOST_MAX);
  if (h[0] == '[')
    {
      char inner[SBX_CONF_HOST_MAX + 1];
      CHECK (hl >= 3 && h[hl - 1] == ']');
      memcpy (inner, h + 1, hl - 2);
      inner[hl - 2] = '\0';
      CHECK (is_address (inner, AF_INET6));
    }
  else
    CHECK (strspn (h, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-") == hl && h[0] != '.'
           && h[0] != '-' && h[hl - 1] != '.' && strstr (h, "..") == NULL);
}

/* NAME[:PORT] or [IPV6][:PORT] (written apart from conf.c's on purpose). */
static bool
is_registry_host (const char *h)
{
  size_t n = strlen (h);
  if (n == 0 || strpbrk (h, "/ \t") != NULL)
    return false;
  const char *port = NULL;
  if (h[0] == '[')
    {
      const char *close = strchr (h, ']');
      char inner[64];
      if (close == NULL || (size_t) (close - h) > sizeof inner)
        return false;
      memcpy (inner, h + 1, (size_t) (close - h - 1));
      inner[close - h - 1] = '\0';
      if (!is_address (inner, AF_INET6))
        return false;
      port = close[1] == ':' ? close + 2 : NULL;
      if (close[1] && !port)
        return false;
    }
  else
    {
      port = strchr (h, ':');
      size_t hl = port ? (size_t) (port - h) : n;
      if (hl == 0 || strspn (h, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-") != hl)
        return false;
      port = port ? port + 1 : NULL;
    }
  if (port)
    {
      long v = strtol (port, NULL, 10);
      if (port[0] < '1' || port[0] > '9' || strspn (port, "0123456789") != strlen (port) || v < 1 || v > 65535)
        return false;
    }
  return true;
}

static void
check_registries (const sbx_conf *c)
{
  CHECK (c->unqualified_registry == NULL || is_registry_host (c->unqualified_registry));
  CHECK (c->registry_certs_dir == NULL
         || (c->registry_certs_dir[0] == '/' && strstr (c->registry_certs_dir, "/../") == NULL));
  CHECK (c->registry_stall_timeout <= SBX_CONF_STALL_TIMEOUT_MAX);
  CHECK (c->nregistries <= SBX_CONF_REGISTRIES_MAX && (c->nregistries == 0) == (c->registries == NULL));
  for (size_t i = 0; i < c->nregistries; i++)
    {
      const sbx_conf_registry *r = &c->registries[i];
      size_t nm = 0;
      CHECK (is_registry_host (r->host) && (r->insecure || r->mirrors));
      for (; r->mirrors && r->mirrors[nm]; nm++)
        {
          CHECK (is_registry_host (r->mirrors[nm]) && strcmp (r->mirrors[nm], r->host) != 0);
          for (size_t j = 0; j < nm; j++)
            CHECK (strcmp (r->mirrors[nm], r->mirrors[j]) != 0);
        }
      CHECK (nm <= SBX_CONF_MIRRORS_MAX);
      for (size_t j = 0; j < i; j++)
        CHECK (strcmp (r->host, c->registries[j].host) != 0);
      CHECK (sbx_conf_registry_find (c, r->host) == r);
    }
}

/* mount_deny, mount_allow: absolute, normal (no `.`, `..`, `//`, trailing
 * `/`), each once, within their bound. */
static void
check_mount_paths (char *const *list)
{
  size_t n = strv_len (list);
  CHECK (n <= SBX_CONF_MOUNT_PATHS_MAX);
  for (size_t i = 0; i < n; i++)
    {
      const char *p = list[i];
      size_t l = strlen (p);
      CHECK (p[0] == '/' && (l == 1 || p[l - 1] != '/') && strstr (p, "//") == NULL);
      CHECK (strstr (p, "/./") == NULL && strstr (p, "/../") == NULL && strcspn (p, " \t,") == l);
      CHECK (!(l >= 2 && strcmp (p + l - 2, "/.") == 0) && !(l >= 3 && strcmp (p + l - 3, "/..") == 0));
      for (size_t j = 0; j < i; j++)
        CHECK (strcmp (p, list[j]) != 0);
    }
}

/* C written back out as a file. */
static char *
conf_text (const sbx_conf *c, size_t *ret_len)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&buf, &len);
  char a[SBX_CIDR_STRLEN];
  CHECK (f);
  sbx_cidr_format (&c->pool4, a);
  fprintf (f, "pool4 = %s\n", a);
  if (c->pool6.family)
    sbx_cidr_format (&c->pool6, a);
  fprintf (f, "pool6 = %s\n", c->pool6.family ? a : "off");
  for (size_t i = 0; i < c->ndns; i++)
    {
      sbx_cidr_format (&c->dns[i], a);
      *strchr (a, '/') = '\0';
      fprintf (f, "dns = %s\n", a);
    }
  for (size_t i = 0; i < c->nopen; i++)
    {
      sbx_cidr_format (&c->open[i].cidr, a);
      fprintf (f, "open = %s %s\n", c->open[i].name, a);
    }
  fprintf (f, "private_policy = %s\nexpose_address = %s\nexpose_host = %s\nexpose_head_timeout = %ums\n",
           c->observe ? "observe" : "drop", c->expose_address, c->expose_host, c->expose_head_timeout_ms);
  if (c->unqualified_registry)
    fprintf (f, "unqualified_registry = %s\n", c->unqualified_registry);
  if (c->registry_certs_dir)
    fprintf (f, "registry_certs_dir = %s\n", c->registry_certs_dir);
  if (c->registry_stall_timeout)
    fprintf (f, "registry_stall_timeout = %u\n", c->registry_stall_timeout);
  for (size_t i = 0; i < c->nregistries; i++)
    {
      if (c->registries[i].insecure)
        fprintf (f, "registry_insecure = %s\n", c->registries[i].host);
      for (size_t j = 0; c->registries[i].mirrors && c->registries[i].mirrors[j]; j++)
        fprintf (f, "registry_mirror = %s %s\n", c->registries[i].host, c->registries[i].mirrors[j]);
    }
  for (size_t i = 0; c->mount_deny && c->mount_deny[i]; i++)
    fprintf (f, "mount_deny = %s\n", c->mount_deny[i]);
  for (size_t i = 0; c->mount_allow && c->mount_allow[i]; i++)
    fprintf (f, "mount_allow = %s\n", c->mount_allow[i]);
  CHECK (fclose (f) == 0);
  *ret_len = len;
  return buf;
}

static void
check_round_trip (const sbx_conf *c)
{
  size_t len;
  char *text = conf_text (c, &len);
  sbx_conf *d = NULL;
  sbx_error *err = NULL;
  if (sbx_conf_parse (NAME, text, len, &d, &err) < 0)
    fuzz_fail ("written back, refused: %s\n%s", err->msg, text);
  CHECK (sbx_cidr_equal (&c->pool4, &d->pool4) && sbx_cidr_equal (&c->pool6, &d->pool6));
  CHECK (c->ndns == d->ndns && c->nopen == d->nopen && c->observe == d->observe);
  for (size_t i = 0; i < c->ndns; i++)
    CHECK (sbx_cidr_equal (&c->dns[i], &d->dns[i]));
  for (size_t i = 0; i < c->nopen; i++)
    CHECK (strcmp (c->open[i].name, d->open[i].name) == 0 && sbx_cidr_equal (&c->open[i].cidr, &d->open[i].cidr));
  CHECK (strcmp (c->expose_address, d->expose_address) == 0 && strcmp (c->expose_host, d->expose_host) == 0);
  CHECK (c->expose_head_timeout_ms == d->expose_head_timeout_ms);
  CHECK ((c->unqualified_registry == NULL) == (d->unqualified_registry == NULL)
         && (!c->unqualified_registry || strcmp (c->unqualified_registry, d->unqualified_registry) == 0));
  CHECK ((c->registry_certs_dir == NULL) == (d->registry_certs_dir == NULL)
         && (!c->registry_certs_dir || strcmp (c->registry_certs_dir, d->registry_certs_dir) == 0));
  CHECK (c->registry_stall_timeout == d->registry_stall_timeout && c->nregistries == d->nregistries);
  for (size_t i = 0; i < c->nregistries; i++)
    {
      const sbx_conf_registry *r = sbx_conf_registry_find (d, c->registries[i].host);
      CHECK (r && r->insecure == c->registries[i].insecure);
      CHECK (strv_len (r->mirrors) == strv_len (c->registries[i].mirrors));
      for (size_t j = 0; r->mirrors && r->mirrors[j]; j++)
        CHECK (strcmp (r->mirrors[j], c->registries[i].mirrors[j]) == 0);
    }
  CHECK (strv_len (c->mount_deny) == strv_len (d->mount_deny)
         && strv_len (c->mount_allow) == strv_len (d->mount_allow));
  for (size_t i = 0; c->mount_deny && c->mount_deny[i]; i++)
    CHECK (strcmp (c->mount_deny[i], d->mount_deny[i]) == 0);
  for (size_t i = 0; c->mount_allow && c->mount_allow[i]; i++)
    CHECK (strcmp (c->mount_allow[i], d->mount_allow[i]) == 0);
  sbx_conf_free (d);
  free (text);
}

/* "fuzz.conf:LINE: ..." with LINE within the input, printable ASCII. */
static void
check_error (const sbx_error *err, const uint8_t *data, size_t size)
{
  CHECK (err && err->code == SBX_E_INVALID_ARGUMENT && err->msg && err->msg[0]);
  for (const char *p = err->msg; *p; p++)
    if (*p < 0x20 || *p >= 0x7f)
      fuzz_fail ("a message that is not printable: %s", err->msg);
  const char *m = err->msg + strlen (NAME);
  CHECK (strncmp (err->msg, NAME ":", strlen (NAME) + 1) == 0);
  char *end;
  unsigned long line = strtoul (m + 1, &end, 10);
  size_t lines = 1;
  for (size_t i = 0; i < size; i++)
    lines += data[i] == '\n';
  CHECK (end != m + 1 && line >= 1 && line <= lines && strncmp (end, ": ", 2) == 0);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  sbx_conf *c = NULL;
  sbx_error *err = NULL;
  if (size > SBX_CONF_SIZE_MAX)
    return 0;
  if (sbx_conf_parse (NAME, (const char *) data, size, &c, &err) == 0)
    {
      check_conf (c);
      check_registries (c);
      check_mount_paths (c->mount_deny);
      check_mount_paths (c->mount_allow);
      check_round_trip (c);
      accepted++;
      sbx_conf_free (c);
    }
  else
    {
      check_error (err, data, size);
      sbx_error_free (err);
    }
  return 0;
}

#ifndef SBX_LIBFUZZER

#define CORPUS_SIZE 30000
#define INPUT_MAX 8192

/* The corpus: valid files, from the empty one to one with every key. */
static const char *const seeds[] = {
  "",
  "# defaults\n\n",
  "pool4 = 10.77.0.0/20\npool6 = fd00:5b78::/64\ndns = 1.1.1.1\ndns = 2606:4700:4700::1111\n"
  "open = lab 10.1.0.0/16\nopen = printer 192.168.1.10\nopen = v6-lab fd12:3456::/32\n"
  "private_policy = observe\nexpose_address = 0.0.0.0\nexpose_host = sbx.example.com\nexpose_head_timeout = 30\n",
  "  pool4=172.20.0.0/16  \r\n\t# comment\npool6 = off\nprivate_policy = drop\n",
  "expose_address = ::1\nexpose_host = [fd00::1]\ndns = 9.9.9.9\nopen = cgnat 100.64.0.0/10\n",
  "open =\tk8s_pods\t10.244.0.0/16\nopen = ula fc00::/7\ndns = 192.0.2.53\nexpose_host = 192.0.2.7",
  "unqualified_registry = quay.io\nregistry_mirror = docker.io mirror.example:5000\n"
  "registry_mirror = docker.io [fd00::1]:443\nregistry_insecure = localhost:5000\n"
  "registry_certs_dir = /etc/sbx/certs.d\nregistry_stall_timeout = 30\n",
  "registry_insecure = [::1]:5000\nregistry_mirror =\tlocalhost:5000\tlocalhost:5001\n"
  "unqualified_registry = localhost:5000\nregistry_stall_timeout = 3600\n",
  "mount_deny = /srv/secret /home/*/.ssh\nmount_allow = /home,/srv/./projects/\nmount_deny = /data//x\n",
  "mount_allow = /\nmount_deny = /srv\n",
};

static const char *const tokens[] = { "=",
                                      " = ",
                                      " ",
                                      "\t",
                                      "\n",
                                      "#",
                                      "/",
                                      "/33",
                                      "/8",
                                      ":",
                                      "::",
                                      ".",
                                      "[",
                                      "]",
                                      "%eth0",
                                      "\r",
                                      "off",
                                      "observe",
                                      "0",
                                      "00",
                                      "255",
                                      "fd00::",
                                      "10.",
                                      "169.254",
                                      "127.",
                                      "-",
                                      "_",
                                      "\n",
                                      "dns = 10.0.0.1\n",
                                      "open = a 10.0.0.0/8\n",
                                      "pool4 = 10.0.0.0/8\n",
                                      "pool6 = fd00::/64\n",
                                      "expose_host = ",
                                      "\xc3\xa9",
                                      "expose_head_timeout = ",
                                      "ms",
                                      "300",
                                      "100",
                                      "registry_mirror = a.io b.io\n",
                                      "registry_insecure = a.io\n",
                                      ":65535",
                                      ":0",
                                      "/..",
                                      "https://",
                                      "mount_deny = /a\n",
                                      "mount_allow = /b/c\n",
                                      ",",
                                      "/./",
                                      "//" };

int
main (void)
{
  static const struct fuzz_seeds mutations = FUZZ_SEEDS (seeds, tokens, INPUT_MAX, true);
  static const struct fuzz_corpus corpus = {
    .count = CORPUS_SIZE,
    .input_max = INPUT_MAX,
    .rnd_seed = 4242,
    .mutate = &mutations,
    .what = "config files to the parser",
  };

  fuzz_corpus_run (&corpus, 2);
  tap_ok (accepted > CORPUS_SIZE / 10, "%zu of them accepted, each with its promises kept and written back the same",
          accepted);
  return tap_done ();
}

#endif
