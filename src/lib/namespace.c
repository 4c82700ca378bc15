/* Namespaces, the GPU count a --gpu value asks for, and the quota check of
 * create and update under one lock (namespace.h). */
#include "config.h"
#include "namespace.h"
#include "stats.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

const char *
sbx_namespace_of (const sbx_sandbox_opts *o)
{
  return o->namespace && o->namespace[0] ? o->namespace : SBX_NAMESPACE_DEFAULT;
}

int
sbx_namespace_validate (const char *name, sbx_error **err)
{
  if (name && !name_is_valid (name))
    {
      _cleanup_free_ char *q = printable_escaped (name, 64);
      return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                            "invalid namespace `%s`: use [A-Za-z0-9][A-Za-z0-9_.+-]*, at most %d", q, SBX_NAME_MAX);
    }
  return 0;
}

/* /dev/nvidiaN: one per GPU the kernel driver found. */
static int64_t
gpus_present (void)
{
  const char *root = getenv ("SBX_DEV_ROOT");
  _cleanup_free_ char *dir = xasprintf ("%s/dev", root && *root ? root : "");
  _cleanup_closedir_ DIR *d = opendir (dir);
  int64_t n = 0;
  struct dirent *de;
  while (d && (de = readdir (d)))
    {
      int64_t idx;
      if (strncmp (de->d_name, "nvidia", 6) == 0 && parse_int64 (de->d_name + 6, 0, 4095, &idx) == 0)
        n++;
    }
  return n;
}

static bool
all_digits (const char *s, size_t n)
{
  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

int64_t
sbx_gpus_count_request (const char *spec)
{
  int64_t n;
  if (spec == NULL || *spec == '\0')
    return 0;
  if (strcmp (spec, "all") == 0)
    return gpus_present ();
  if (parse_int64 (spec, 1, SBX_CONF_NS_GPUS_MAX, &n) == 0)
    return n;
  if (strchr (spec, ','))
    {
      n = 0;
      for (const char *p = spec;; n++)
        {
          size_t l = strcspn (p, ",");
          if (!all_digits (p, l) || n == SBX_CONF_NS_GPUS_MAX)
            return -1;
          if (p[l] == '\0')
            return n + 1;
          p += l + 1;
        }
    }
  if (strncmp (spec, "GPU-", 4) == 0)
    return spec[4] ? 1 : -1;
  /* TYPE or TYPE:N; a model name has no blanks or control characters. */
  const char *colon = strrchr (spec, ':');
  for (const char *p = spec; *p && p != colon; p++)
    if ((unsigned char) *p <= ' ' || (unsigned char) *p >= 0x7f)
      return -1;
  if (colon == spec)
    return -1;
  if (colon == NULL)
    return 1;
  return parse_int64 (colon + 1, 1, SBX_CONF_NS_GPUS_MAX, &n) == 0 ? n : -1;
}

bool
sbx_state_counts_for_quota (sbx_state s)
{
  return s == SBX_STATE_CREATING || s == SBX_STATE_RUNNING;
}

static double
opts_cpu (const sbx_sandbox_opts *o)
{
  if (o->cpu > 0)
    return o->cpu;
  long n = sysconf (_SC_NPROCESSORS_ONLN);
  return n > 0 ? (double) n : 1;
}

static uint64_t
opts_memory (const sbx_sandbox_opts *o)
{
  if (o->memory > 0)
    return o->memory;
  long pages = sysconf (_SC_PHYS_PAGES), size = sysconf (_SC_PAGESIZE);
  return pages > 0 && size > 0 ? (uint64_t) pages * (uint64_t) size : 0;
}

static int64_t
opts_gpus (const sbx_sandbox_opts *o)
{
  int64_t n = sbx_gpus_count_request (o->gpus);
  return n > 0 ? n : 0;
}

void
sbx_ns_usage_add (sbx_ns_usage *u, const sbx_sandbox_opts *o)
{
  u->sandboxes++;
  u->cpu += opts_cpu (o);
  u->memory += opts_memory (o);
  u->gpus += opts_gpus (o);
}

static sbx_ns_usage *
usage_entry (sbx_ns_usage **v, size_t *n, const char *name)
{
  for (size_t i = 0; i < *n; i++)
    if (strcmp ((*v)[i].name, name) == 0)
      return &(*v)[i];
  *v = xrealloc (*v, (*n + 1) * sizeof **v);
  (*v)[*n] = (sbx_ns_usage){ .name = xstrdup (name) };
  return &(*v)[(*n)++];
}

static int
cmp_usage (const void *a, const void *b)
{
  return strcmp (((const sbx_ns_usage *) a)->name, ((const sbx_ns_usage *) b)->name);
}

int
sbx_ns_usage_all (const sbx_store *st, const sbx_conf *conf, sbx_ns_usage **ret, size_t *ret_n, sbx_error **err)
{
  sbx_sandbox **sbs;
  size_t nsb, n = 0;
  if (sbx_sandbox_get_all (st, &sbs, &nsb, err) < 0)
    return -1;
  sbx_ns_usage *v = NULL;
  for (size_t i = 0; i < nsb; i++)
    {
      sbx_ns_usage *u = usage_entry (&v, &n, sbx_namespace_of (&sbs[i]->opts));
      if (sbx_state_counts_for_quota (sbs[i]->state))
        sbx_ns_usage_add (u, &sbs[i]->opts);
    }
  sbx_sandboxes_free (sbs);
  for (size_t i = 0; conf && i < conf->nnamespaces; i++)
    usage_entry (&v, &n, conf->namespaces[i].name);
  if (n > 1)
    qsort (v, n, sizeof *v, cmp_usage);
  *ret = v;
  *ret_n = n;
  return 0;
}

void
sbx_ns_usage_free (sbx_ns_usage *v, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free (v[i].name);
  free (v);
}

/* What the namespace's live sandboxes hold, EXCEPT_ID's left out. */
static int
usage_of (const sbx_store *st, const char *ns, const char *except_id, sbx_ns_usage *ret, sbx_error **err)
{
  sbx_sandbox **sbs;
  size_t n;
  if (sbx_sandbox_get_all (st, &sbs, &n, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (sbx_state_counts_for_quota (sbs[i]->state) && strcmp (sbx_namespace_of (&sbs[i]->opts), ns) == 0
        && (except_id == NULL || strcmp (sbs[i]->id, except_id) != 0))
      sbx_ns_usage_add (ret, &sbs[i]->opts);
  sbx_sandboxes_free (sbs);
  return 0;
}

static int
refuse (sbx_error **err, const char *ns, const char *quota, const char *limit, const char *use, const char *asked)
{
  return sbx_error_set (err, SBX_E_POLICY_REFUSED, 0, "namespace %s: quota %s = %s reached (in use: %s; asked: %s)", ns,
                        quota, limit, use, asked);
}

#define MIB(x) ((double) (x) / 1048576.0)

/* U (what the others hold) plus O against the quotas of Q. */
static int
check_quotas (const sbx_conf_namespace *q, const sbx_ns_usage *u, const sbx_sandbox_opts *o,
              const sbx_sandbox_opts *old, sbx_error **err)
{
  char lim[64], use[64], ask[64];
  if (old == NULL && q->max_sandboxes >= 0 && u->sandboxes + 1 > q->max_sandboxes)
    {
      snprintf (lim, sizeof lim, "%lld", (long long) q->max_sandboxes);
      snprintf (use, sizeof use, "%lld sandboxes", (long long) u->sandboxes);
      return refuse (err, q->name, "max_sandboxes", lim, use, "1 more");
    }
  double cpu = opts_cpu (o);
  if (q->max_cpu >= 0 && (old == NULL || cpu > opts_cpu (old)) && u->cpu + cpu > q->max_cpu + 1e-9)
    {
      snprintf (lim, sizeof lim, "%g", q->max_cpu);
      snprintf (use, sizeof use, "%g cores", u->cpu);
      snprintf (ask, sizeof ask, "%g cores%s", cpu, o->cpu > 0 ? "" : " (--cpu 0: the host's)");
      return refuse (err, q->name, "max_cpu", lim, use, ask);
    }
  uint64_t mem = opts_memory (o);
  if (q->max_memory >= 0 && (old == NULL || mem > opts_memory (old)) && u->memory + mem > (uint64_t) q->max_memory)
    {
      snprintf (lim, sizeof lim, "%.0f MiB", MIB (q->max_memory));
      snprintf (use, sizeof use, "%.0f MiB", MIB (u->memory));
      snprintf (ask, sizeof ask, "%.0f MiB%s", MIB (mem), o->memory > 0 ? "" : " (--memory 0: the host's)");
      return refuse (err, q->name, "max_memory", lim, use, ask);
    }
  int64_t gpus = opts_gpus (o);
  if (q->max_gpus >= 0 && old == NULL && gpus > 0 && u->gpus + gpus > q->max_gpus)
    {
      snprintf (lim, sizeof lim, "%lld", (long long) q->max_gpus);
      snprintf (use, sizeof use, "%lld GPUs", (long long) u->gpus);
      snprintf (ask, sizeof ask, "%lld GPUs", (long long) gpus);
      return refuse (err, q->name, "max_gpus", lim, use, ask);
    }
  return 0;
}

int
sbx_quota_admit (const sbx_store *st, const sbx_conf *conf, const sbx_sandbox_opts *o, const sbx_sandbox *old,
                 int *ret_lock, sbx_error **err)
{
  _cleanup_conf_ sbx_conf *own = NULL;
  if (conf == NULL && sbx_conf_load (NULL, &own, err) < 0)
    return -1;
  const char *ns = sbx_namespace_of (o);
  const sbx_conf_namespace *q = sbx_conf_namespace_find (conf ? conf : own, ns);
  if (q == NULL)
    {
      *ret_lock = -1;
      return 0;
    }
  if (o->gpus && sbx_gpus_count_request (o->gpus) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "--gpu: `%s` is not all, N, INDEX[,INDEX...], UUID or TYPE[:N]", o->gpus);
  _cleanup_free_ char *path = sbx_store_path (st, "quota.lock");
  _cleanup_close_ int lk = lock_path (path, LOCK_EX, err);
  if (lk < 0)
    return sbx_error_wrap (err, "quota lock");
  sbx_ns_usage u = { .name = NULL };
  if (usage_of (st, ns, old ? old->id : NULL, &u, err) < 0 || check_quotas (q, &u, o, old ? &old->opts : NULL, err) < 0)
    return -1;
  *ret_lock = steal_fd (&lk);
  return 0;
}
