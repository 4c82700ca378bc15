/* Unit tests of the config file parser and the resolv.conf reader
 * (src/lib/conf.c).
 *
 * The defaults, every key with good values (comments, blank lines, spaces,
 * tabs, CRLF, IPv6), every error with the FILE:LINE and key of its message,
 * the limits (lists, line length, file size), loading from a path, through
 * $SBX_CONF, through a symlink and from what is not a file; then
 * resolv.conf: comments, scope ids, IPv6, duplicates, bad lines, the cap of
 * 8, a missing file. Nothing here needs root. */
#include "config.h"
#include "conf.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>

static char tmpdir[] = "/tmp/sbx-test-conf.XXXXXX";

static void
cleanup_tmpdir (void)
{
  rm_rf (tmpdir, NULL);
}

static char *
tmp_path (const char *name)
{
  return xasprintf ("%s/%s", tmpdir, name);
}

static char *
tmp_file (const char *name, const char *data, size_t len)
{
  char *p = tmp_path (name);
  if (write_file_atomic (p, data, len, 0644, NULL) < 0)
    abort ();
  return p;
}

static bool
cidr_is (const sbx_cidr *c, const char *want)
{
  char buf[SBX_CIDR_STRLEN];
  sbx_cidr_format (c, buf);
  return strcmp (buf, want) == 0;
}

static const char *
errmsg (const sbx_error *e)
{
  return e && e->msg ? e->msg : "(no error)";
}

static sbx_conf *
parse (const char *text, sbx_error **err)
{
  sbx_conf *c = NULL;
  if (sbx_conf_parse ("t.conf", text, strlen (text), &c, err) < 0)
    return NULL;
  return c;
}

static bool
is_defaults (const sbx_conf *c)
{
  return cidr_is (&c->pool4, "10.200.0.0/16") && c->pool6.family == 0 && c->ndns == 0 && c->dns == NULL && c->nopen == 0
         && c->open == NULL && !c->observe && strcmp (c->expose_address, "127.0.0.1") == 0
         && strcmp (c->expose_host, "127.0.0.1") == 0 && c->expose_head_timeout_ms == 10000
         && c->default_memory == (1ULL << 30) && c->default_cpu == 1.0 && c->disk == (10ULL << 30)
         && c->image_size_max == (20ULL << 30) && c->store_reserve == (1ULL << 30);
}

/* disk, image_size_max, store_reserve: sizes as --memory takes them. */
static void
test_sizes (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_conf_ sbx_conf *c = parse ("disk = 64Mi\nimage_size_max = 2G\nstore_reserve = 512\n", &err);
  tap_ok (c && c->disk == (64ULL << 20) && c->image_size_max == 2000000000ULL && c->store_reserve == (512ULL << 20),
          "disk, image_size_max, store_reserve with units, a plain number is MiB (%s)", errmsg (err));
  sbx_conf_free (c);
  c = parse ("disk = 0\nstore_reserve = 0\n", &err);
  tap_ok (c && c->disk == 0 && c->store_reserve == 0, "disk = 0 and store_reserve = 0 turn them off (%s)",
          errmsg (err));
  sbx_conf_free (steal_pointer (&c));
  static const char *const bad[][2] = {
    { "disk = 15Mi\n", "t.conf:1: disk: `15Mi` is not 0 or a size between 16 MiB" },
    { "disk = 65Ti\n", "t.conf:1: disk: `65Ti` is not 0 or a size" },
    { "disk = 10GB\n", "t.conf:1: disk: `10GB` is not" },
    { "disk = -1\n", "t.conf:1: disk: `-1` is not" },
    { "disk = 1Gi\ndisk = 2Gi\n", "t.conf:2: disk: given twice" },
    { "image_size_max = 0\n", "t.conf:1: image_size_max: `0` is not a size between 1 MiB" },
    { "store_reserve = lots\n", "t.conf:1: store_reserve: `lots` is not 0 or a size" },
    /* The value in the message: a tab shown as \t, cut after 64 bytes. */
    { "private_policy = dr\top\n", "private_policy: expected `drop` or `observe`, not `dr\\top`" },
    { "store_reserve = "
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdefXYZ\n",
      "store_reserve: `0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef...` is not" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      sbx_error_free (err);
      err = NULL;
      sbx_conf *b = parse (bad[i][0], &err);
      tap_ok (b == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, bad[i][1]),
              "refused: %s (%s)", bad[i][1], errmsg (err));
      sbx_conf_free (b);
    }
}

/* docker_runtime: log (the default) or enforce, nothing else. */
static void
test_docker_runtime (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_conf_ sbx_conf *c = parse ("", &err);
  tap_ok (c && !c->docker_enforce, "docker_runtime defaults to log (%s)", errmsg (err));
  sbx_conf_free (steal_pointer (&c));
  c = parse ("docker_runtime = enforce\n", &err);
  tap_ok (c && c->docker_enforce, "docker_runtime = enforce (%s)", errmsg (err));
  sbx_conf_free (steal_pointer (&c));
  c = parse ("docker_runtime = log\n", &err);
  tap_ok (c && !c->docker_enforce, "docker_runtime = log (%s)", errmsg (err));
  sbx_conf_free (steal_pointer (&c));
  c = parse ("docker_runtime = allow\n", &err);
  tap_ok (c == NULL && err && err->code == SBX_E_INVALID_ARGUMENT
              && strstr (err->msg, "t.conf:1: docker_runtime: expected `log` or `enforce`, not `allow`"),
          "docker_runtime = allow is refused (%s)", errmsg (err));
}

static bool
strv_is (char *const *v, const char *const *want)
{
  size_t i = 0;
  for (; want[i]; i++)
    if (v == NULL || v[i] == NULL || strcmp (v[i], want[i]) != 0)
      return false;
  return v == NULL ? i == 0 : v[i] == NULL;
}

/* The domain rules' keys: domain_ttl_grace, domain_ttl_min, domain_ttl_max. */
static void
test_domain_keys (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_conf_ sbx_conf *c = parse ("", &err);
  tap_ok (c && c->domain_ttl_grace == 10 && c->domain_ttl_min == 30 && c->domain_ttl_max == 3600,
          "domain rules: defaults 10, 30, 3600 s (%s)", errmsg (err));
  sbx_conf_free (steal_pointer (&c));
  c = parse ("domain_ttl_grace = 0\ndomain_ttl_min = 1\ndomain_ttl_max = 86400\n", &err);
  tap_ok (c && c->domain_ttl_grace == 0 && c->domain_ttl_min == 1 && c->domain_ttl_max == 86400,
          "domain rules: the bounds taken (%s)", errmsg (err));
  static const char *const bad[][2] = {
    { "domain_ttl_grace = -1\n", "domain_ttl_grace: `-1` is not a number of seconds from 0 to 86400" },
    { "domain_ttl_grace = 86401\n", "from 0 to 86400" },
    { "domain_ttl_min = 0\n", "domain_ttl_min: `0` is not a number of seconds from 1 to 86400" },
    { "domain_ttl_max = 1h\n", "domain_ttl_max: `1h`" },
    { "domain_ttl_max = 10\ndomain_ttl_min = 20\n",
      ".conf:2: domain_ttl_min: domain_ttl_min (20) is above domain_ttl_max (10)" },
    { "domain_ttl_min = 20\ndomain_ttl_max = 10\n", ".conf:2: domain_ttl_max: domain_ttl_min (20) is above" },
    { "domain_ttl_max = 20\n", "domain_ttl_min (30) is above domain_ttl_max (20)" },
    { "domain_ttl_grace = 5\ndomain_ttl_grace = 6\n", "given twice" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      sbx_error_free (err);
      err = NULL;
      sbx_conf *b = parse (bad[i][0], &err);
      tap_ok (b == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, bad[i][1]),
              "refused: %s (%s)", bad[i][1], errmsg (err));
      sbx_conf_free (b);
    }
}

/* runc's user namespaces: userns_base, userns_count, runc_userns. */
static void
test_userns_keys (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_conf_ sbx_conf *c = parse ("", &err);
  tap_ok (c && c->userns_base == 1000000000u && c->userns_count == 1024 && !c->runc_userns_optional,
          "userns: defaults 1000000000, 1024 ranges, required (%s)", errmsg (err));
  sbx_conf_free (steal_pointer (&c));
  c = parse ("userns_base = 65536\nuserns_count = 65534\nrunc_userns = optional\n", &err);
  tap_ok (c && c->userns_base == 65536 && c->userns_count == 65534 && c->runc_userns_optional,
          "userns: the bounds taken, optional (%s)", errmsg (err));
  sbx_conf_free (steal_pointer (&c));
  c = parse ("runc_userns = required\nuserns_base = 4294901759\nuserns_count = 1\n", &err);
  tap_ok (c && c->userns_base == 4294901759u && !c->runc_userns_optional,
          "userns: the last range ends at 4294967294 (%s)", errmsg (err));
  static const char *const bad[][2] = {
    { "userns_base = 65535\n", "userns_base: `65535` is not a number from 65536 to 4294967294" },
    { "userns_base = -1\n", "userns_base: `-1`" },
    { "userns_base = 0x10000\n", "userns_base: `0x10000`" },
    { "userns_count = 0\n", "userns_count: `0` is not a number from 1 to 65535" },
    { "userns_count = 65536\n", "userns_count: `65536`" },
    { "userns_base = 4294901760\n", ".conf:1: userns_base: userns_base (4294901760) + userns_count (1024)" },
    { "userns_base = 4000000000\nuserns_count = 10000\n", ".conf:2: userns_count: userns_base" },
    { "runc_userns = off\n", "runc_userns: expected `required` or `optional`, not `off`" },
    { "runc_userns = optional\nrunc_userns = optional\n", "given twice" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      sbx_error_free (err);
      err = NULL;
      sbx_conf *b = parse (bad[i][0], &err);
      tap_ok (b == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, bad[i][1]),
              "refused: %s (%s)", bad[i][1], errmsg (err));
      sbx_conf_free (b);
    }
}

/* namespace_max_*: NAME VALUE, repeatable across names, each once per name. */
static void
test_namespace_keys (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_conf_ sbx_conf *c = parse ("", &err);
  tap_ok (c && c->nnamespaces == 0 && sbx_conf_namespace_find (c, "default") == NULL, "namespaces: none by default");
  sbx_conf_free (steal_pointer (&c));
  c = parse ("namespace_max_sandboxes = team-a 10\nnamespace_max_cpu =\tteam-a\t4.5\n"
             "namespace_max_memory = team-a 8Gi\nnamespace_max_gpus = team-a 2\n"
             "namespace_max_sandboxes = default 0\nnamespace_max_memory = b 512\n",
             &err);
  const sbx_conf_namespace *a = c ? sbx_conf_namespace_find (c, "team-a") : NULL;
  tap_ok (a && a->max_sandboxes == 10 && a->max_cpu == 4.5 && a->max_memory == (8LL << 30) && a->max_gpus == 2,
          "namespace team-a: every quota (%s)", errmsg (err));
  const sbx_conf_namespace *d = c ? sbx_conf_namespace_find (c, "default") : NULL;
  tap_ok (d && d->max_sandboxes == 0 && d->max_cpu < 0 && d->max_memory < 0 && d->max_gpus < 0,
          "namespace default: max_sandboxes 0, the others unset");
  const sbx_conf_namespace *b = c ? sbx_conf_namespace_find (c, "b") : NULL;
  tap_ok (b && b->max_memory == (512LL << 20) && c->nnamespaces == 3, "namespace b: a size in MiB; 3 namespaces");
  static const char *const bad[][2] = {
    { "namespace_max_sandboxes = 5\n", "namespace_max_sandboxes: expected `NAMESPACE VALUE`" },
    { "namespace_max_sandboxes = a 5 6\n", "expected `NAMESPACE VALUE`" },
    { "namespace_max_sandboxes = bad/ns 5\n", "`bad/ns` is not a namespace name" },
    { "namespace_max_sandboxes = -a 5\n", "`-a` is not a namespace name" },
    { "namespace_max_sandboxes = a -1\n", "`-1` is not a number of sandboxes in 0..1000000" },
    { "namespace_max_sandboxes = a 1000001\n", "in 0..1000000" },
    { "namespace_max_cpu = a 0\n", "namespace_max_cpu: `0` is not a number of cores, at least 0.01" },
    { "namespace_max_cpu = a x\n", "`x` is not a number of cores" },
    { "namespace_max_memory = a 1k\n", "namespace_max_memory: `1k` is not a size of at least 6Mi" },
    { "namespace_max_memory = a 0\n", "`0` is not a size" },
    { "namespace_max_gpus = a 4097\n", "namespace_max_gpus: `4097` is not a number of GPUs in 0..4096" },
    { "namespace_max_gpus = a 1\nnamespace_max_gpus = a 1\n",
      ".conf:2: namespace_max_gpus: given twice for namespace a" },
    { "namespace_max_cpu = a 1\nnamespace_max_cpu = a 2\n", "given twice for namespace a" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      sbx_error_free (err);
      err = NULL;
      sbx_conf *x = parse (bad[i][0], &err);
      tap_ok (x == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, bad[i][1]),
              "refused: %s (%s)", bad[i][1], errmsg (err));
      sbx_conf_free (x);
    }
}

/* mount_deny, mount_allow: lists of absolute paths, made normal, each once. */
static void
test_mount_paths (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_conf_ sbx_conf *c = parse ("pool4 = 10.9.0.0/16\n", &err);
  tap_ok (c && c->mount_deny == NULL && c->mount_allow == NULL, "mount_deny, mount_allow: none by default");
  sbx_conf_free (steal_pointer (&c));
  c = parse ("mount_deny = /srv/secret\nmount_deny = /data//keys/ /home/alice/.ssh,/opt/./x\n"
             "mount_allow = /home\t/srv\nmount_allow = /\n",
             &err);
  static const char *const deny[] = { "/srv/secret", "/data/keys", "/home/alice/.ssh", "/opt/x", NULL };
  static const char *const allow[] = { "/home", "/srv", "/", NULL };
  tap_ok (c && strv_is (c->mount_deny, deny) && strv_is (c->mount_allow, allow),
          "repeatable, several paths a line (blanks or commas), each made normal (%s)", errmsg (err));
  sbx_conf_free (steal_pointer (&c));
  static const char *const bad[][2] = {
    { "mount_deny = srv\n", "t.conf:1: mount_deny: `srv`: not an absolute path" },
    { "mount_allow = /srv/../etc\n", "t.conf:1: mount_allow: `/srv/../etc`: not a normal absolute path (no `..`)" },
    { "mount_deny = /a /b\nmount_deny = /b/\n", "t.conf:2: mount_deny: `/b/` is listed twice" },
    { "mount_deny = ,\n", "t.conf:1: mount_deny: expected one or more absolute paths" },
    { "mount_allow = /ok ./rel\n", "t.conf:1: mount_allow: `./rel`: not an absolute path" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      sbx_error_free (err);
      err = NULL;
      sbx_conf *b = parse (bad[i][0], &err);
      tap_ok (b == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, bad[i][1]),
              "refused: %s (%s)", bad[i][1], errmsg (err));
      sbx_conf_free (b);
    }
  _cleanup_free_ char *many = xstrdup ("mount_deny =");
  for (int i = 0; i <= SBX_CONF_MOUNT_PATHS_MAX; i++)
    {
      char *m = xasprintf ("%s /p%d", many, i);
      free (many);
      many = m;
    }
  sbx_error_free (err);
  err = NULL;
  c = parse (many, &err);
  tap_ok (c == NULL && err && strstr (err->msg, "more than 256 paths"), "at most %d paths (%s)",
          SBX_CONF_MOUNT_PATHS_MAX, errmsg (err));
}

/* The registry keys: unqualified_registry, registry_mirror,
 * registry_insecure, registry_certs_dir, registry_stall_timeout. */
static void
test_registries (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_conf_ sbx_conf *c = parse ("", &err);
  tap_ok (c && c->unqualified_registry == NULL && c->registry_certs_dir == NULL && c->registry_stall_timeout == 0
              && c->nregistries == 0 && c->registries == NULL && sbx_conf_registry_find (c, "docker.io") == NULL,
          "no registry keys: NULL and 0, the documented defaults (%s)", errmsg (err));
  sbx_conf_free (steal_pointer (&c));
  c = parse ("unqualified_registry = quay.io\n"
             "registry_mirror = docker.io mirror.example.com:5000\n"
             "registry_mirror =\tdocker.io  [fd00::1]:443 \n"
             "registry_insecure = localhost:5000\n"
             "registry_insecure = mirror.example.com:5000\n"
             "registry_mirror = localhost:5000 localhost:5001\n"
             "registry_certs_dir = /srv/certs.d//\n"
             "registry_stall_timeout = 45\n",
             &err);
  const sbx_conf_registry *d = c ? sbx_conf_registry_find (c, "docker.io") : NULL;
  const sbx_conf_registry *l = c ? sbx_conf_registry_find (c, "localhost:5000") : NULL;
  const sbx_conf_registry *m = c ? sbx_conf_registry_find (c, "mirror.example.com:5000") : NULL;
  tap_ok (c && strcmp (c->unqualified_registry, "quay.io") == 0 && strcmp (c->registry_certs_dir, "/srv/certs.d") == 0
              && c->registry_stall_timeout == 45 && c->nregistries == 3,
          "every registry key, a trailing slash of the certs dir dropped (%s)", errmsg (err));
  tap_ok (d && !d->insecure && strv_len (d->mirrors) == 2 && strcmp (d->mirrors[0], "mirror.example.com:5000") == 0
              && strcmp (d->mirrors[1], "[fd00::1]:443") == 0,
          "mirrors in file order, blanks and tabs around them");
  tap_ok (l && l->insecure && strv_len (l->mirrors) == 1 && m && m->insecure && m->mirrors == NULL,
          "insecure registries, with and without mirrors");
  sbx_conf_free (steal_pointer (&c));
  c = parse ("unqualified_registry = [::1]:5000\nregistry_stall_timeout = 3600\nregistry_certs_dir = /\n", &err);
  tap_ok (c && strcmp (c->unqualified_registry, "[::1]:5000") == 0 && c->registry_stall_timeout == 3600
              && strcmp (c->registry_certs_dir, "/") == 0,
          "an IPv6 registry, the longest stall timeout, / as certs dir (%s)", errmsg (err));
  sbx_conf_free (steal_pointer (&c));

  static const char *const bad[][2] = {
    { "unqualified_registry = docker.io/library\n", "t.conf:1: unqualified_registry: `docker.io/library`: not a host" },
    { "unqualified_registry = https://quay.io\n", "unqualified_registry: `https://quay.io`: not a host" },
    { "unqualified_registry = quay.io:0\n", "unqualified_registry: `quay.io:0`: the port must be 1 to 65535" },
    { "unqualified_registry = quay.io:65536\n", "the port must be 1 to 65535" },
    { "unqualified_registry = quay.io:\n", "the port must be 1 to 65535" },
    { "unqualified_registry = quay.io:05000\n", "the port must be 1 to 65535" },
    { "unqualified_registry = [::1\n", "needs its `]`" },
    { "unqualified_registry = [10.0.0.1]:5000\n", "only an IPv6 address goes in brackets" },
    { "unqualified_registry = [::1]5000\n", "expected `:PORT` after `]`" },
    { "unqualified_registry = -bad.io\n", "not a host name" },
    { "unqualified_registry = a.io\nunqualified_registry = b.io\n", "t.conf:2: unqualified_registry: given twice" },
    { "registry_mirror = docker.io\n", "t.conf:1: registry_mirror: expected `HOST MIRROR`" },
    { "registry_mirror = docker.io a.io b.io\n", "registry_mirror: expected `HOST MIRROR`" },
    { "registry_mirror = docker.io docker.io\n", "docker.io cannot be its own mirror" },
    { "registry_mirror = docker.io m.io\nregistry_mirror = docker.io m.io\n",
      "t.conf:2: registry_mirror: m.io is listed twice for docker.io" },
    { "registry_mirror = docker.io m.io/path\n", "registry_mirror: `m.io/path`: not a host" },
    { "registry_insecure = a.io\nregistry_insecure = a.io\n", "t.conf:2: registry_insecure: a.io is listed twice" },
    { "registry_insecure = a.io b.io\n", "registry_insecure: `a.io b.io`: not a host" },
    { "registry_certs_dir = certs.d\n", "registry_certs_dir: `certs.d` is not an absolute directory" },
    { "registry_certs_dir = /etc/../tmp\n", "registry_certs_dir: `/etc/../tmp`: no `..` components" },
    { "registry_stall_timeout = 0\n", "registry_stall_timeout: `0` is not a number of seconds from 1 to 3600" },
    { "registry_stall_timeout = 3601\n", "is not a number of seconds from 1 to 3600" },
    { "registry_stall_timeout = 30s\n", "`30s` is not a number of seconds" },
    { "registry_stall_timeout = -1\n", "`-1` is not a number of seconds" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      sbx_error_free (steal_pointer (&err));
      sbx_conf *b = parse (bad[i][0], &err);
      tap_ok (b == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, bad[i][1]),
              "refused: %s (%s)", bad[i][1], errmsg (err));
      sbx_conf_free (b);
    }

  /* The limits: mirrors per registry, registries. */
  sbx_error_free (steal_pointer (&err));
  char *text = xstrdup ("");
  for (int i = 0; i <= SBX_CONF_MIRRORS_MAX; i++)
    {
      char *t = xasprintf ("%sregistry_mirror = docker.io m%d.example\n", text, i);
      free (text);
      text = t;
      if (i == SBX_CONF_MIRRORS_MAX - 1)
        {
          c = parse (text, &err);
          tap_ok (c && strv_len (sbx_conf_registry_find (c, "docker.io")->mirrors) == SBX_CONF_MIRRORS_MAX,
                  "%d mirrors for one registry (%s)", SBX_CONF_MIRRORS_MAX, errmsg (err));
          sbx_conf_free (steal_pointer (&c));
        }
    }
  c = parse (text, &err);
  tap_ok (c == NULL && err && strstr (err->msg, "t.conf:9: registry_mirror: more than 8 mirrors for docker.io"),
          "not %d (%s)", SBX_CONF_MIRRORS_MAX + 1, errmsg (err));
  free (text);
  sbx_error_free (steal_pointer (&err));
  text = xstrdup ("");
  for (int i = 0; i <= SBX_CONF_REGISTRIES_MAX; i++)
    {
      char *t = xasprintf ("%sregistry_insecure = r%d.example\n", text, i);
      free (text);
      text = t;
    }
  c = parse (text, &err);
  tap_ok (c == NULL && err && strstr (err->msg, "t.conf:65: registry_insecure: more than 64 registries"),
          "not more than %d registries (%s)", SBX_CONF_REGISTRIES_MAX, errmsg (err));
  free (text);
}

/* ---- the config file ---- */

static void
test_defaults (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_conf_ sbx_conf *c = parse ("", &err);
  tap_ok (c && is_defaults (c) && strcmp (c->path, "t.conf") == 0, "an empty file gives the defaults (%s)",
          errmsg (err));
  sbx_conf_free (c);
  c = parse ("\n   \n# pool4 = 10.1.0.0/16\n\t  # private_policy = observe\n\t\n", &err);
  tap_ok (c && is_defaults (c), "blank lines and comments give the defaults (%s)", errmsg (err));

  sbx_conf *d = NULL;
  int r = sbx_conf_parse (NULL, "", 0, &d, &err);
  tap_ok (r == 0 && strcmp (d->path, "sbx.conf") == 0, "a NULL name is `sbx.conf`");
  sbx_conf_free (d);
}

/* The limits a sandbox gets when create names none. */
static void
test_default_limits (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_conf_ sbx_conf *c = parse ("default_memory = 512Mi\ndefault_cpu = 0.5\n", &err);
  tap_ok (c && c->default_memory == (512ULL << 20) && c->default_cpu == 0.5,
          "default_memory 512Mi, default_cpu 0.5 (%s)", errmsg (err));
  sbx_conf_free (c);
  c = parse ("default_memory = 0\ndefault_cpu = 0\n", &err);
  tap_ok (c && c->default_memory == 0 && c->default_cpu == 0, "0 is no default limit (%s)", errmsg (err));
  sbx_conf_free (c);
  c = parse ("default_memory = 2048\ndefault_cpu = 2\n", &err);
  tap_ok (c && c->default_memory == (2048ULL << 20) && c->default_cpu == 2, "a bare number of MiB (%s)", errmsg (err));
  sbx_conf_free (c);
  c = parse ("default_memory = 6Mi\ndefault_cpu = 0.01\n", &err);
  tap_ok (c && c->default_memory == (6ULL << 20) && c->default_cpu == 0.01, "the smallest limits (%s)", errmsg (err));
}

static void
test_every_key (void)
{
  static const char text[] = "# sbx.conf\n"
                             "\n"
                             "pool4 = 10.77.0.0/20\n"
                             "  pool6=fd00:5b78::/64   \n"
                             "dns\t=\t1.1.1.1\n"
                             "dns = 2606:4700:4700::1111\r\n"
                             "open = lab 10.1.0.0/16\n"
                             "open =\tprinter\t192.168.1.10\n"
                             "open = cgnat_vpn 100.64.0.0/10\n"
                             "open = v6-lab fd12:3456::/32\n"
                             "private_policy = observe\n"
                             "expose_address = 0.0.0.0\n"
                             "expose_host = sbx.Example-1.com";
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_conf_ sbx_conf *c = parse (text, &err);
  tap_ok (c != NULL, "a file with every key parses (%s)", errmsg (err));
  if (c == NULL)
    return;
  tap_ok (cidr_is (&c->pool4, "10.77.0.0/20"), "pool4");
  tap_ok (cidr_is (&c->pool6, "fd00:5b78::/64"), "pool6 (leading spaces, none around =, trailing spaces)");
  tap_ok (c->ndns == 2 && cidr_is (&c->dns[0], "1.1.1.1/32") && cidr_is (&c->dns[1], "2606:4700:4700::1111/128"),
          "dns: an IPv4 and an IPv6 resolver, in order (tabs, CRLF)");
  tap_ok (c->nopen == 4 && strcmp (c->open[0].name, "lab") == 0 && cidr_is (&c->open[0].cidr, "10.1.0.0/16")
              && strcmp (c->open[1].name, "printer") == 0 && cidr_is (&c->open[1].cidr, "192.168.1.10/32")
              && strcmp (c->open[2].name, "cgnat_vpn") == 0 && cidr_is (&c->open[2].cidr, "100.64.0.0/10")
              && strcmp (c->open[3].name, "v6-lab") == 0 && cidr_is (&c->open[3].cidr, "fd12:3456::/32"),
          "open: four destinations, IPv4 and IPv6, in order");
  tap_ok (c->observe, "private_policy = observe");
  tap_ok (strcmp (c->expose_address, "0.0.0.0") == 0, "expose_address");
  tap_ok (strcmp (c->expose_host, "sbx.Example-1.com") == 0, "expose_host, on a last line without a newline");
}

static void
test_values (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  sbx_conf *c = parse ("private_policy = drop\npool6 = off\n", &err);
  tap_ok (c && !c->observe && c->pool6.family == 0, "private_policy = drop, pool6 = off (%s)", errmsg (err));
  sbx_conf_free (c);

  c = parse ("expose_address = ::1\n", &err);
  tap_ok (c && strcmp (c->expose_address, "::1") == 0 && strcmp (c->expose_host, "[::1]") == 0,
          "an IPv6 expose_address gives expose_host in brackets (%s)", c ? c->expose_host : errmsg (err));
  sbx_conf_free (c);

  c = parse ("expose_address = 2001:DB8:0::1\n", &err);
  tap_ok (c && strcmp (c->expose_address, "2001:db8::1") == 0, "expose_address is kept in canonical form (%s)",
          c ? c->expose_address : errmsg (err));
  sbx_conf_free (c);

  c = parse ("expose_address = 10.0.0.5\nexpose_host = [fd00::1]\n", &err);
  tap_ok (c && strcmp (c->expose_address, "10.0.0.5") == 0 && strcmp (c->expose_host, "[fd00::1]") == 0,
          "expose_host as an IPv6 address in brackets (%s)", errmsg (err));
  sbx_conf_free (c);

  c = parse ("expose_host = 192.0.2.7\n", &err);
  tap_ok (c && strcmp (c->expose_host, "192.0.2.7") == 0 && strcmp (c->expose_address, "127.0.0.1") == 0,
          "expose_host as an IPv4 address, expose_address left at its default (%s)", errmsg (err));
  sbx_conf_free (c);

  c = parse ("pool4 = 172.31.255.0/24\npool6 = fd00::/48\n", &err);
  tap_ok (c && cidr_is (&c->pool4, "172.31.255.0/24") && cidr_is (&c->pool6, "fd00::/48"),
          "pool4 and pool6 at other prefixes (%s)", errmsg (err));
  sbx_conf_free (c);

  c = parse ("pool4 = 10.0.0.0/8\npool6 = fd00::/120\n", &err);
  tap_ok (c && c->pool4.prefix == 8 && c->pool6.prefix == 120, "the widest pool4 and the narrowest pool6 (%s)",
          errmsg (err));
  sbx_conf_free (c);

  c = parse ("pool4 = 10.0.0.0/28\n", &err);
  tap_ok (c && c->pool4.prefix == 28, "the narrowest pool4 (%s)", errmsg (err));
  sbx_conf_free (c);

  char name[64];
  memset (name, 'a', 63);
  name[63] = '\0';
  _cleanup_free_ char *text = xasprintf ("open = %s 172.16.0.0/12\nopen = 0_9-z fc00::/7\n", name);
  c = parse (text, &err);
  tap_ok (c && c->nopen == 2 && strlen (c->open[0].name) == 63, "open: a 63-character name, whole ranges (%s)",
          errmsg (err));
  sbx_conf_free (c);

  char host[SBX_CONF_HOST_MAX + 16];
  size_t n = 0;
  while (n + 11 < SBX_CONF_HOST_MAX)
    n += (size_t) sprintf (host + n, "abcdefghij.");
  while (n < SBX_CONF_HOST_MAX)
    host[n++] = 'x';
  host[n] = '\0';
  _cleanup_free_ char *text2 = xasprintf ("expose_host = %s\n", host);
  c = parse (text2, &err);
  tap_ok (c && strlen (c->expose_host) == SBX_CONF_HOST_MAX, "expose_host of 253 characters (%s)", errmsg (err));
  sbx_conf_free (c);
  c = parse ("expose_head_timeout = 2\n", &err);
  tap_ok (c && c->expose_head_timeout_ms == 2000, "expose_head_timeout in seconds (%s)", errmsg (err));
  sbx_conf_free (c);
  c = parse ("expose_head_timeout = 300ms\n", &err);
  tap_ok (c && c->expose_head_timeout_ms == 300, "expose_head_timeout in milliseconds (%s)", errmsg (err));
  sbx_conf_free (c);
}

static void
test_limits (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  char *text = xstrdup ("");
  for (int i = 1; i <= SBX_CONF_DNS_MAX; i++)
    {
      char *t = xasprintf ("%sdns = 192.0.2.%d\n", text, i);
      free (text);
      text = t;
    }
  sbx_conf *c = parse (text, &err);
  tap_ok (c && c->ndns == SBX_CONF_DNS_MAX, "dns: 8 resolvers (%s)", errmsg (err));
  sbx_conf_free (c);
  char *t = xasprintf ("%sdns = 192.0.2.99\n", text);
  free (text);
  c = parse (t, &err);
  tap_ok (c == NULL && err && strstr (err->msg, "t.conf:9: dns: more than 8 resolvers"), "dns: not 9 (%s)",
          errmsg (err));
  free (t);
  sbx_error_free (err);
  err = NULL;

  size_t cap = (SBX_CONF_OPEN_MAX + 1) * 40, len = 0;
  _cleanup_free_ char *big = xmalloc (cap);
  for (int i = 0; i < SBX_CONF_OPEN_MAX; i++)
    len += (size_t) snprintf (big + len, cap - len, "open = n%d 10.%d.0.0/16\n", i, i);
  c = parse (big, &err);
  tap_ok (c && c->nopen == SBX_CONF_OPEN_MAX, "open: 256 destinations (%s)", errmsg (err));
  sbx_conf_free (c);
  snprintf (big + len, cap - len, "open = last 10.255.0.0/16\n");
  c = parse (big, &err);
  tap_ok (c == NULL && err && strstr (err->msg, "t.conf:257: open: more than 256 destinations"), "open: not 257 (%s)",
          errmsg (err));
  sbx_error_free (err);
  err = NULL;

  /* A line of exactly 4096 bytes passes; one more byte does not. */
  char line[SBX_CONF_LINE_MAX + 3];
  memset (line, ' ', sizeof line);
  line[0] = '#';
  line[SBX_CONF_LINE_MAX] = '\n';
  line[SBX_CONF_LINE_MAX + 1] = '\0';
  c = parse (line, &err);
  tap_ok (c != NULL, "a comment line of 4096 bytes (%s)", errmsg (err));
  sbx_conf_free (c);
  line[SBX_CONF_LINE_MAX] = ' ';
  line[SBX_CONF_LINE_MAX + 1] = '\n';
  line[SBX_CONF_LINE_MAX + 2] = '\0';
  _cleanup_free_ char *long_text = xasprintf ("pool4 = 10.1.0.0/16\n%s", line);
  c = parse (long_text, &err);
  tap_ok (c == NULL && err && strstr (err->msg, "t.conf:2: the line is longer than 4096 bytes"),
          "a line of 4097 bytes is refused, comment or not (%s)", errmsg (err));
  sbx_error_free (err);
  err = NULL;

  /* 1 MiB of comments passes; one more byte does not. */
  _cleanup_free_ char *mib = xmalloc (SBX_CONF_SIZE_MAX + 2);
  for (size_t i = 0; i < SBX_CONF_SIZE_MAX + 1; i++)
    mib[i] = i % 64 == 63 ? '\n' : '#';
  mib[SBX_CONF_SIZE_MAX + 1] = '\0';
  int r = sbx_conf_parse ("t.conf", mib, SBX_CONF_SIZE_MAX, &c, &err);
  tap_ok (r == 0, "a file of 1 MiB (%s)", errmsg (err));
  if (r == 0)
    sbx_conf_free (c);
  r = sbx_conf_parse ("t.conf", mib, SBX_CONF_SIZE_MAX + 1, &c, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, "t.conf: the file is larger than"),
          "a file of 1 MiB and a byte is refused (%s)", errmsg (err));
}

static void
test_errors (void)
{
  /* Each file, and what its message must contain. */
  static const char *const cases[][2] = {
    { "foo = 1\n", "t.conf:1: unknown key `foo`" },
    { "Pool4 = 10.1.0.0/16\n", "t.conf:1: unknown key `Pool4`" },
    { "\n# x\npool4 = 10.0.0.0/33\n", "t.conf:3: pool4: invalid CIDR `10.0.0.0/33`" },
    { "pool4 = 10.0.0.1/8\n", "t.conf:1: pool4: invalid CIDR `10.0.0.1/8`: host bits set" },
    { "pool4 = 010.0.0.0/8\n", "t.conf:1: pool4: invalid CIDR `010.0.0.0/8`" },
    { "pool4 = 10.1.0.0/16 # the pool\n", "t.conf:1: pool4: invalid CIDR" },
    { "pool4 = fd00::/64\n", "t.conf:1: pool4: expected an IPv4 network" },
    { "pool4 = 10.0.0.0/7\n", "t.conf:1: pool4: the prefix must be 8 to 28, not /7" },
    { "pool4 = 10.0.0.0/29\n", "t.conf:1: pool4: the prefix must be 8 to 28, not /29" },
    { "pool4 = 127.0.0.0/16\n", "t.conf:1: pool4: 127.0.0.0/16 overlaps 127.0.0.0/8 (loopback)" },
    { "pool4 = 169.0.0.0/8\n", "t.conf:1: pool4: 169.0.0.0/8 overlaps 169.254.0.0/16 (link-local)" },
    { "pool4 = 169.254.16.0/20\n", "t.conf:1: pool4: 169.254.16.0/20 overlaps 169.254.0.0/16" },
    { "pool4 = 224.1.0.0/16\n", "t.conf:1: pool4: 224.1.0.0/16 overlaps 224.0.0.0/4 (multicast)" },
    { "pool4 = 10.1.0.0/16\npool4 = 10.2.0.0/16\n", "t.conf:2: pool4: given twice (first on line 1)" },
    { "expose_head_timeout = 0\n", "t.conf:1: expose_head_timeout: must be 100ms to 300 seconds" },
    { "expose_head_timeout = 301\n", "t.conf:1: expose_head_timeout: must be 100ms to 300 seconds" },
    { "expose_head_timeout = 99ms\n", "t.conf:1: expose_head_timeout: must be 100ms to 300 seconds" },
    { "expose_head_timeout = 10s\n", "t.conf:1: expose_head_timeout: expected seconds (such as `10`)" },
    { "expose_head_timeout = -1\n", "t.conf:1: expose_head_timeout: expected seconds" },
    { "expose_head_timeout = 1.5\n", "t.conf:1: expose_head_timeout: expected seconds" },
    { "expose_head_timeout = 99999999999999999999\n", "t.conf:1: expose_head_timeout: expected seconds" },
    { "pool4 =\n", "t.conf:1: pool4: the value is empty" },
    { "pool4 =    \n", "t.conf:1: pool4: the value is empty" },
    { "pool4 10.1.0.0/16\n", "t.conf:1: expected `key = value`" },
    { " = 10.1.0.0/16\n", "t.conf:1: expected `key = value`: the key is empty" },
    { "pool6 = 10.0.0.0/8\n", "t.conf:1: pool6: expected an IPv6 network" },
    { "pool6 = OFF\n", "t.conf:1: pool6: invalid CIDR `OFF`" },
    { "pool6 = fd00::/40\n", "t.conf:1: pool6: the prefix must be 48 to 120, not /40" },
    { "pool6 = fd00::/124\n", "t.conf:1: pool6: the prefix must be 48 to 120, not /124" },
    { "pool6 = fe80::/64\n", "t.conf:1: pool6: fe80::/64 overlaps fe80::/10 (link-local)" },
    { "pool6 = ::/64\n", "t.conf:1: pool6: ::/64 overlaps ::/8" },
    { "pool6 = fd00::1/64\n", "t.conf:1: pool6: invalid CIDR `fd00::1/64`: host bits set" },
    { "pool6 = off\npool6 = off\n", "t.conf:2: pool6: given twice (first on line 1)" },
    { "dns = 1.1.1.1/32\n", "t.conf:1: dns: expected an address, not a network" },
    { "dns = 1.1.1\n", "t.conf:1: dns: invalid address `1.1.1`" },
    { "dns = fe80::1%eth0\n", "t.conf:1: dns: invalid address" },
    { "dns = 0.0.0.0\n", "t.conf:1: dns: 0.0.0.0 is not a resolver's address" },
    { "dns = ::\n", "t.conf:1: dns: :: is not a resolver's address" },
    { "dns = 1.1.1.1\n# x\ndns = 1.1.1.1\n", "t.conf:3: dns: 1.1.1.1 is listed twice" },
    { "dns = dns.google\n", "t.conf:1: dns: invalid address" },
    { "open = lab\n", "t.conf:1: open: expected `NAME CIDR`" },
    { "open = lab   \n", "t.conf:1: open: expected `NAME CIDR`" },
    { "open = Lab 10.0.0.0/8\n", "t.conf:1: open: the name `Lab` is not 1 to 63 of [a-z0-9_-]" },
    { "open = l.b 10.0.0.0/8\n", "t.conf:1: open: the name `l.b` is not" },
    { "open = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 10.0.0.0/8\n",
      "t.conf:1: open: the name `aaaa" },
    { "open = lab 8.8.8.0/24\n", "t.conf:1: open: lab: 8.8.8.0/24 is not a private range" },
    { "open = lab 10.0.0.0/7\n", "t.conf:1: open: lab: 10.0.0.0/7 is not a private range" },
    { "open = lab 169.254.169.254\n", "t.conf:1: open: lab: 169.254.169.254 is not a private range" },
    { "open = lab 127.0.0.1\n", "is not a private range" },
    { "open = lab fe80::/64\n", "t.conf:1: open: lab: fe80::/64 is not a private range" },
    { "open = lab fc00::/6\n", "is not a private range" },
    { "open = lab 0.0.0.0/0\n", "is not a private range" },
    { "open = lab 10.1.0.0/16 extra\n", "t.conf:1: open: lab: invalid CIDR" },
    { "open = lab 10.1.0.1/16\n", "t.conf:1: open: lab: invalid CIDR `10.1.0.1/16`: host bits set" },
    { "open = lab 10.1.0.0/16\nopen = lab 10.2.0.0/16\n", "t.conf:2: open: the name `lab` is used twice" },
    { "private_policy = allow\n", "t.conf:1: private_policy: expected `drop` or `observe`, not `allow`" },
    { "private_policy = Observe\n", "t.conf:1: private_policy: expected `drop` or `observe`" },
    { "private_policy = drop\nprivate_policy = observe\n", "t.conf:2: private_policy: given twice (first on line 1)" },
    { "expose_address = localhost\n", "t.conf:1: expose_address: invalid address `localhost`" },
    { "expose_address = [::1]\n", "t.conf:1: expose_address: invalid address" },
    { "expose_address = 127.0.0.1/8\n", "t.conf:1: expose_address: expected an address, not a network" },
    { "expose_address = 127.0.0.01\n", "t.conf:1: expose_address: invalid address" },
    { "expose_address = ::1\nexpose_address = ::1\n", "t.conf:2: expose_address: given twice" },
    { "expose_host = exa_mple.com\n", "t.conf:1: expose_host: `exa_mple.com` is not a host name" },
    { "expose_host = -a.com\n", "t.conf:1: expose_host: `-a.com` is not a host name" },
    { "expose_host = a-.com\n", "is not a host name" },
    { "expose_host = a..com\n", "is not a host name" },
    { "expose_host = .a.com\n", "is not a host name" },
    { "expose_host = a.com.\n", "is not a host name" },
    { "expose_host = a b\n", "is not a host name" },
    { "expose_host = ::1\n", "is not a host name" },
    { "expose_host = [::1\n", "t.conf:1: expose_host: an IPv6 address in brackets needs its `]`" },
    { "expose_host = []\n", "needs its `]`" },
    { "expose_host = [1.2.3.4]\n", "t.conf:1: expose_host: only an IPv6 address goes in brackets" },
    { "expose_host = [fd00::/8]\n", "t.conf:1: expose_host: expected an address, not a network" },
    { "expose_host = [fe80::1%eth0]\n", "t.conf:1: expose_host: invalid address" },
    { "expose_host = a\nexpose_host = b\n", "t.conf:2: expose_host: given twice" },
    { "default_memory = 5Mi\n", "t.conf:1: default_memory: `5Mi` is not 0 (no limit) or a size between 6Mi and 4Ti" },
    { "default_memory = 5Ti\n", "t.conf:1: default_memory: `5Ti` is not 0" },
    { "default_memory = -1\n", "t.conf:1: default_memory: `-1` is not 0" },
    { "default_memory = 1 Gi\n", "t.conf:1: default_memory: `1 Gi` is not 0" },
    { "default_memory = none\n", "t.conf:1: default_memory: `none` is not 0" },
    { "default_memory = 0Mi\n", "t.conf:1: default_memory: `0Mi` is not 0" },
    { "default_memory = 1Gi\ndefault_memory = 2Gi\n", "t.conf:2: default_memory: given twice" },
    { "default_cpu = 0.001\n",
      "t.conf:1: default_cpu: `0.001` is not 0 (no limit) or a number of cores in 0.01..1024" },
    { "default_cpu = 1025\n", "t.conf:1: default_cpu: `1025` is not 0" },
    { "default_cpu = -1\n", "t.conf:1: default_cpu: `-1` is not 0" },
    { "default_cpu = nan\n", "t.conf:1: default_cpu: `nan` is not 0" },
    { "default_cpu = 1 core\n", "t.conf:1: default_cpu: `1 core` is not 0" },
    { "default_cpu = 1\ndefault_cpu = 2\n", "t.conf:2: default_cpu: given twice" },
    { "pool4 = 10.1.0.0/16\x01\n", "t.conf:1: a control character or a non-ASCII byte (0x01)" },
    { "expose_host = h\xc3\xa9.com\n", "t.conf:1: a control character or a non-ASCII byte (0xc3)" },
    { "pool4 = 10.1.0.0/16\rx\n", "t.conf:1: a control character or a non-ASCII byte (0x0d)" },
    { "# caf\xc3\xa9\n\n\nfoo\n", "t.conf:4: expected `key = value`" },
  };
  for (size_t i = 0; i < ARRAY_SIZE (cases); i++)
    {
      _cleanup_error_ sbx_error *err = NULL;
      sbx_conf *c = parse (cases[i][0], &err);
      tap_ok (c == NULL && err && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, cases[i][1]),
              "refused: %s (%s)", cases[i][1], errmsg (err));
      sbx_conf_free (c);
    }

  /* The over-long name and host, built here. */
  char host[SBX_CONF_HOST_MAX + 2];
  memset (host, 'a', sizeof host - 1);
  host[sizeof host - 1] = '\0';
  _cleanup_free_ char *text = xasprintf ("expose_host = %s\n", host);
  _cleanup_error_ sbx_error *err = NULL;
  sbx_conf *c = parse (text, &err);
  tap_ok (c == NULL && err && strstr (err->msg, "t.conf:1: expose_host: longer than 253 characters"),
          "refused: expose_host of 254 characters (%s)", errmsg (err));
  sbx_conf_free (c);
  sbx_error_free (err);
  err = NULL;

  static const char nul[] = "# one\npool4 = 10.1.0.0/16\0\n";
  int r = sbx_conf_parse ("t.conf", nul, sizeof nul - 1, &c, &err);
  tap_ok (r < 0 && strstr (err->msg, "t.conf:2: a NUL byte"), "refused: a NUL byte (%s)", errmsg (err));
  sbx_error_free (err);
  err = NULL;
  static const char nul_comment[] = "# one\0two\n";
  r = sbx_conf_parse ("t.conf", nul_comment, sizeof nul_comment - 1, &c, &err);
  tap_ok (r < 0 && strstr (err->msg, "t.conf:1: a NUL byte"), "refused: a NUL byte in a comment (%s)", errmsg (err));
}

/* ---- loading from a path ---- */

static void
test_load (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  _cleanup_free_ char *missing = tmp_path ("missing.conf");
  sbx_conf *c = NULL;
  int r = sbx_conf_load (missing, &c, &err);
  tap_ok (r == 0 && c->path == NULL && is_defaults (c), "a missing file gives the defaults, path NULL (%s)",
          errmsg (err));
  sbx_conf_free (c);
  c = NULL;

  static const char text[] = "pool4 = 10.9.0.0/16\nprivate_policy = observe\n";
  _cleanup_free_ char *file = tmp_file ("sbx.conf", text, sizeof text - 1);
  r = sbx_conf_load (file, &c, &err);
  tap_ok (r == 0 && strcmp (c->path, file) == 0 && cidr_is (&c->pool4, "10.9.0.0/16") && c->observe,
          "a file is loaded, path set (%s)", errmsg (err));
  sbx_conf_free (c);
  c = NULL;

  _cleanup_free_ char *link = tmp_path ("link.conf");
  if (symlink (file, link) < 0)
    abort ();
  r = sbx_conf_load (link, &c, &err);
  tap_ok (r == 0 && strcmp (c->path, link) == 0 && c->observe, "a symlink is followed (%s)", errmsg (err));
  sbx_conf_free (c);
  c = NULL;

  setenv ("SBX_CONF", file, 1);
  r = sbx_conf_load (NULL, &c, &err);
  tap_ok (r == 0 && strcmp (c->path, file) == 0 && c->observe, "$SBX_CONF names the file (%s)", errmsg (err));
  sbx_conf_free (c);
  c = NULL;
  setenv ("SBX_CONF", missing, 1);
  r = sbx_conf_load (NULL, &c, &err);
  tap_ok (r == 0 && c->path == NULL && is_defaults (c), "$SBX_CONF naming a missing file gives the defaults (%s)",
          errmsg (err));
  sbx_conf_free (c);
  c = NULL;
  unsetenv ("SBX_CONF");

  static const char bad[] = "# ok\n\npool4 = 10.9.0.0/16\nopen = lab 8.8.8.8\n";
  _cleanup_free_ char *badfile = tmp_file ("bad.conf", bad, sizeof bad - 1);
  _cleanup_free_ char *want = xasprintf ("%s:4: open: lab: 8.8.8.8 is not a private range", badfile);
  r = sbx_conf_load (badfile, &c, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, want) == err->msg,
          "an error names the file, the line and the key (%s)", errmsg (err));
  sbx_error_free (err);
  err = NULL;

  r = sbx_conf_load (tmpdir, &c, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, "not a regular file"),
          "a directory is refused (%s)", errmsg (err));
  sbx_error_free (err);
  err = NULL;

  _cleanup_free_ char *fifo = tmp_path ("fifo.conf");
  if (mkfifo (fifo, 0600) < 0)
    abort ();
  r = sbx_conf_load (fifo, &c, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, "not a regular file"),
          "a FIFO is refused, without hanging (%s)", errmsg (err));
  sbx_error_free (err);
  err = NULL;

  _cleanup_free_ char *notdir = xasprintf ("%s/sub.conf", file);
  r = sbx_conf_load (notdir, &c, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT && err->errnum == ENOTDIR,
          "an unreadable path (ENOTDIR) is INVALID_ARGUMENT, not the defaults (%s)", errmsg (err));
  sbx_error_free (err);
  err = NULL;

  {
    /* As root the file is readable all the same: the load runs in a child
     * that has become nobody, for whom the file and its directory are shut. */
    _cleanup_free_ char *locked = tmp_file ("locked.conf", text, sizeof text - 1);
    chmod (locked, 0);
    fflush (NULL);
    pid_t pid = fork ();
    if (pid == 0)
      {
        if (geteuid () == 0 && (setgroups (0, NULL) < 0 || setgid (65534) < 0 || setuid (65534) < 0))
          _exit (3);
        sbx_error *e = NULL;
        sbx_conf *cc = NULL;
        int rr = sbx_conf_load (locked, &cc, &e);
        _exit (rr < 0 && e->code == SBX_E_INVALID_ARGUMENT && e->errnum == EACCES ? 0 : 1);
      }
    int st = -1;
    while (waitpid (pid, &st, 0) < 0 && errno == EINTR)
      ;
    tap_ok (WIFEXITED (st) && WEXITSTATUS (st) == 0,
            "an unreadable file is refused with its errno, as a user who may not read it (status 0x%x)", st);
  }

  _cleanup_free_ char *bigdata = xmalloc (SBX_CONF_SIZE_MAX + 1);
  memset (bigdata, '\n', SBX_CONF_SIZE_MAX + 1);
  _cleanup_free_ char *big = tmp_file ("big.conf", bigdata, SBX_CONF_SIZE_MAX + 1);
  r = sbx_conf_load (big, &c, &err);
  tap_ok (r < 0 && err->code == SBX_E_INVALID_ARGUMENT && strstr (err->msg, "larger than 1048576 bytes"),
          "a file over 1 MiB is refused (%s)", errmsg (err));
  sbx_error_free (err);
  err = NULL;
  _cleanup_free_ char *mib = tmp_file ("mib.conf", bigdata, SBX_CONF_SIZE_MAX);
  r = sbx_conf_load (mib, &c, &err);
  tap_ok (r == 0 && is_defaults (c), "a file of exactly 1 MiB is read (%s)", errmsg (err));
  if (r == 0)
    sbx_conf_free (c);
}

/* ---- resolv.conf ---- */

static int
resolv (const char *text, sbx_cidr **ret, size_t *ret_n, sbx_error **err)
{
  _cleanup_free_ char *p = tmp_file ("resolv.conf", text, strlen (text));
  return sbx_resolv_conf_nameservers (p, ret, ret_n, err);
}

static void
test_resolv (void)
{
  _cleanup_error_ sbx_error *err = NULL;
  sbx_cidr *ns = NULL;
  size_t n = 99;
  int r = resolv ("# generated\n"
                  "; also a comment\n"
                  "search example.com\n"
                  "nameserver 192.0.2.53\n"
                  "  nameserver\tfe80::1%eth0\n"
                  "nameserver 2001:DB8::53   # inline\n"
                  "options edns0 trust-ad\n"
                  "nameserver 192.0.2.53\n"
                  "nameserver 198.51.100.1\r\n",
                  &ns, &n, &err);
  tap_ok (r == 0 && n == 4 && cidr_is (&ns[0], "192.0.2.53/32") && cidr_is (&ns[1], "fe80::1/128")
              && cidr_is (&ns[2], "2001:db8::53/128") && cidr_is (&ns[3], "198.51.100.1/32"),
          "resolv.conf: IPv4 and IPv6, scope id dropped, comments, duplicates once, CRLF (%zu, %s)", n, errmsg (err));
  free (ns);
  ns = NULL;

  r = resolv ("nameserver 1.1.1\n"
              "nameserver 010.0.0.1\n"
              "nameservers 9.9.9.9\n"
              "#nameserver 9.9.9.10\n"
              "nameserver\n"
              "nameserver   \n"
              "nameserver 10.0.0.0/8\n"
              "nameserver9.9.9.9\n"
              "xnameserver 9.9.9.9\n"
              "nameserver fe80::1%\n"
              "nameserver 203.0.113.9\n",
              &ns, &n, &err);
  tap_ok (r == 0 && n == 2 && cidr_is (&ns[0], "fe80::1/128") && cidr_is (&ns[1], "203.0.113.9/32"),
          "resolv.conf: lines that do not parse are skipped (%zu, %s)", n, errmsg (err));
  free (ns);
  ns = NULL;

  _cleanup_free_ char *many = xstrdup ("");
  for (int i = 1; i <= 12; i++)
    {
      char *t = xasprintf ("%snameserver 192.0.2.%d\n", many, i);
      free (many);
      many = t;
    }
  r = resolv (many, &ns, &n, &err);
  tap_ok (r == 0 && n == SBX_RESOLV_MAX && cidr_is (&ns[0], "192.0.2.1/32") && cidr_is (&ns[7], "192.0.2.8/32"),
          "resolv.conf: at most the first 8 (%zu, %s)", n, errmsg (err));
  free (ns);
  ns = NULL;

  r = resolv ("search example.com\noptions ndots:2\n", &ns, &n, &err);
  tap_ok (r == 0 && n == 0 && ns == NULL, "resolv.conf without nameservers: an empty list (%s)", errmsg (err));
  r = resolv ("", &ns, &n, &err);
  tap_ok (r == 0 && n == 0 && ns == NULL, "an empty resolv.conf: an empty list (%s)", errmsg (err));

  _cleanup_free_ char *missing = tmp_path ("no-resolv.conf");
  n = 99;
  r = sbx_resolv_conf_nameservers (missing, &ns, &n, &err);
  tap_ok (r == 0 && n == 0 && ns == NULL, "a missing resolv.conf: an empty list (%s)", errmsg (err));

  _cleanup_free_ char *target = tmp_file ("stub-resolv.conf", "nameserver 127.0.0.53\n", 22);
  _cleanup_free_ char *link = tmp_path ("resolv-link.conf");
  if (symlink (target, link) < 0)
    abort ();
  r = sbx_resolv_conf_nameservers (link, &ns, &n, &err);
  tap_ok (r == 0 && n == 1 && cidr_is (&ns[0], "127.0.0.53/32"), "a symlinked resolv.conf is followed (%s)",
          errmsg (err));
  free (ns);
  ns = NULL;

  r = sbx_resolv_conf_nameservers (tmpdir, &ns, &n, &err);
  tap_ok (r < 0 && err && strstr (err->msg, "not a regular file"), "a directory as resolv.conf is an error (%s)",
          errmsg (err));
  sbx_error_free (err);
  err = NULL;

  r = sbx_resolv_conf_nameservers (NULL, &ns, &n, &err);
  tap_ok (r == 0 && n <= SBX_RESOLV_MAX, "the host's /etc/resolv.conf: %zu nameservers (%s)", n, errmsg (err));
  free (ns);
}

int
main (void)
{
  if (mkdtemp (tmpdir) == NULL)
    {
      perror ("mkdtemp");
      return 1;
    }
  atexit (cleanup_tmpdir);
  unsetenv ("SBX_CONF");
  test_defaults ();
  test_sizes ();
  test_docker_runtime ();
  test_every_key ();
  test_default_limits ();
  test_values ();
  test_limits ();
  test_registries ();
  test_mount_paths ();
  test_domain_keys ();
  test_namespace_keys ();
  test_userns_keys ();
  test_errors ();
  test_load ();
  test_resolv ();
  tap_plan (tap_n);
  return tap_done ();
}
