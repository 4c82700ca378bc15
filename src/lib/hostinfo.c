/* What this host supports, for sbx info: probed once into one struct that
 * renders as JSON or as key: value text. */
#include "config.h"
#include "hostinfo.h"
#include "openat.h"
#include "cgroup.h"
#include "conf.h"
#include "egress.h"
#include "json.h"
#include "runtime.h"
#include "seccomp-profile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

/* What runsc runs with here: fixed by how sbx starts it (runtime.c). */
static const char runsc_platform[] = "ptrace";
static const char runsc_network[] = "host stack inside the sandbox's namespace (this runsc cannot run its own stack "
                                    "in one); none with --block-network";

static bool
has_overlayfs (void)
{
  _cleanup_free_ char *fs = NULL;
  if (read_file ("/proc/filesystems", 1 << 16, &fs, NULL, NULL) < 0)
    return false;
  return strstr (fs, "\toverlay\n") != NULL;
}

static bool
has_nftables (void)
{
  return access ("/usr/sbin/nft", X_OK) == 0 || access ("/sbin/nft", X_OK) == 0
         || path_exists ("/proc/net/netfilter/nf_tables");
}

static void
probe_runtime (const sbx_store *st, const char *name, sbx_host_runtime *ret)
{
  _cleanup_runtime_ sbx_runtime *rt = NULL;
  _cleanup_error_ sbx_error *e = NULL;
  *ret = (sbx_host_runtime){ .name = name };
  ret->available = sbx_runtime_find (st, name, &rt, &e) == 0 && sbx_runtime_probe (rt, &e) == 0;
  ret->path = rt && rt->path ? xstrdup (rt->path) : NULL;
  ret->version = rt && rt->version ? xstrdup (rt->version) : NULL;
  ret->error = e ? xstrdup (e->msg) : NULL;
}

static void
probe_network (sbx_host_info *hi)
{
  _cleanup_conf_ sbx_conf *conf = NULL;
  _cleanup_error_ sbx_error *ce = NULL;
  if (sbx_conf_load (NULL, &conf, &ce) < 0)
    {
      hi->network_config_error = xstrdup (ce->msg);
      hi->nlimits = sbx_host_limits_probe (NULL, hi->limits);
      return;
    }
  hi->nlimits = sbx_host_limits_probe (conf, hi->limits);
  char b[SBX_CIDR_STRLEN];
  hi->network_ok = true;
  hi->network_config = xstrdup (conf->path ? conf->path : "(defaults)");
  sbx_cidr_format (&conf->pool4, b);
  hi->pool4 = xstrdup (b);
  if (conf->pool6.family)
    sbx_cidr_format (&conf->pool6, b);
  hi->pool6 = xstrdup (conf->pool6.family ? b : "off");
  hi->private_policy = conf->observe ? "observe" : "drop";
  hi->expose_address = conf->expose_address ? xstrdup (conf->expose_address) : NULL;
  hi->gpu_runtime = conf->gpu_runtime_runc ? "runc" : "runsc";
}

static void
probe_gpus (sbx_host_info *hi)
{
  _cleanup_error_ sbx_error *e = NULL;
  if (sbx_gpu_host_probe (&hi->gpu, &e) < 0)
    hi->gpu_error = xstrdup (e->msg);
  hi->runsc_nvproxy = hi->runtimes[0].available && sbx_gpu_runsc_nvproxy (hi->runtimes[0].path);
}

void
sbx_host_info_probe (const sbx_store *st, sbx_host_info *ret)
{
  sbx_host_info hi = { .version = SBX_VERSION, .default_runtime = "runsc" };
  struct utsname u;
  uname (&u);
  hi.kernel = xstrdup (u.release);
  hi.root = xstrdup (st->root);
  hi.run_root = xstrdup (st->run_root);
  probe_runtime (st, "runsc", &hi.runtimes[0]);
  probe_runtime (st, "runc", &hi.runtimes[1]);
  hi.overlayfs = has_overlayfs ();
  hi.openat2 = sbx_have_openat2 ();
  hi.cgroup_version = sbx_cgroup_version ();
  hi.nftables = has_nftables ();
  hi.kvm = access ("/dev/kvm", R_OK | W_OK) == 0;
  _cleanup_error_ sbx_error *se = NULL, *ee = NULL;
  hi.seccomp_profile_ok = sbx_seccomp_check (&se) == 0;
  if (se)
    hi.seccomp_error = xstrdup (se->msg);
  /* Egress is enforced with nftables rules: available when the kernel
   * answers sbx's requests. */
  _cleanup_strv_ char **chains = NULL;
  hi.egress_enforcement = sbx_egress_list (SBX_EGRESS_TABLE, &chains, &ee) == 0;
  if (ee)
    hi.egress_error = xstrdup (ee->msg);
  probe_network (&hi);
  probe_gpus (&hi);
  *ret = hi;
}

void
sbx_host_info_clear (sbx_host_info *hi)
{
  free (hi->kernel);
  free (hi->root);
  free (hi->run_root);
  for (size_t i = 0; i < ARRAY_SIZE (hi->runtimes); i++)
    {
      free (hi->runtimes[i].path);
      free (hi->runtimes[i].version);
      free (hi->runtimes[i].error);
    }
  free (hi->seccomp_error);
  free (hi->egress_error);
  free (hi->network_config);
  free (hi->pool4);
  free (hi->pool6);
  free (hi->expose_address);
  free (hi->network_config_error);
  sbx_gpu_host_clear (&hi->gpu);
  free (hi->gpu_error);
  memset (hi, 0, sizeof *hi);
}

static void
gen_runtime (yajl_gen g, const sbx_host_runtime *r)
{
  j_str (g, r->name);
  j_map (g);
  j_kbool (g, "available", r->available);
  j_kstr (g, "path", r->path);
  j_kstr (g, "version", r->version);
  if (r->error)
    j_kstr (g, "error", r->error);
  if (strcmp (r->name, "runsc") == 0)
    {
      j_kstr (g, "platform", runsc_platform);
      j_kstr (g, "network", runsc_network);
    }
  j_endmap (g);
}

/* "limits": {NAME: {value, runc_sandboxes, runsc_sandboxes}}; -1 is
 * unknown. */
static void
gen_limits (yajl_gen g, const sbx_host_info *hi)
{
  j_str (g, "limits");
  j_map (g);
  for (size_t i = 0; i < hi->nlimits; i++)
    {
      const sbx_host_limit *l = &hi->limits[i];
      j_str (g, l->name);
      j_map (g);
      j_kstr (g, "source", l->what);
      j_kint (g, "value", l->value);
      j_kint (g, "runc_sandboxes", l->runc);
      j_kint (g, "runsc_sandboxes", l->runsc);
      j_endmap (g);
    }
  j_endmap (g);
}

void
sbx_host_info_gen (void *yajl_gen_g, const sbx_host_info *hi)
{
  yajl_gen g = yajl_gen_g;
  j_map (g);
  j_kstr (g, "version", hi->version);
  j_kstr (g, "kernel", hi->kernel);
  j_kstr (g, "root", hi->root);
  j_kstr (g, "run_root", hi->run_root);
  j_str (g, "runtimes");
  j_map (g);
  for (size_t i = 0; i < ARRAY_SIZE (hi->runtimes); i++)
    gen_runtime (g, &hi->runtimes[i]);
  j_endmap (g);
  j_kstr (g, "default_runtime", hi->default_runtime);
  j_kbool (g, "overlayfs", hi->overlayfs);
  j_kbool (g, "openat2", hi->openat2);
  j_kint (g, "cgroup_version", hi->cgroup_version);
  j_kbool (g, "nftables", hi->nftables);
  j_kbool (g, "kvm", hi->kvm);
  j_kbool (g, "seccomp_profile_ok", hi->seccomp_profile_ok);
  if (hi->seccomp_error)
    j_kstr (g, "seccomp_error", hi->seccomp_error);
  j_kbool (g, "egress_enforcement", hi->egress_enforcement);
  if (hi->egress_error)
    j_kstr (g, "egress_error", hi->egress_error);
  if (hi->network_ok)
    {
      j_str (g, "network");
      j_map (g);
      j_kstr (g, "config", hi->network_config);
      j_kstr (g, "pool4", hi->pool4);
      j_kstr (g, "pool6", hi->pool6);
      j_kstr (g, "private_policy", hi->private_policy);
      j_kstr (g, "expose_address", hi->expose_address);
      j_endmap (g);
    }
  else
    j_kstr (g, "network_config_error", hi->network_config_error);
  gen_limits (g, hi);
  j_kbool (g, "runsc_nvproxy", hi->runsc_nvproxy);
  j_kstr (g, "gpu_runtime", hi->gpu_runtime);
  j_str (g, "gpus");
  sbx_gpu_host_gen (g, &hi->gpu);
  if (hi->gpu_error)
    j_kstr (g, "gpu_error", hi->gpu_error);
  j_endmap (g);
}

/* The text view: `key: value`, yes/no for booleans, - for nothing. */
static const char *
yes_no (bool b)
{
  return b ? "yes" : "no";
}

static const char *
or_dash (const char *s)
{
  return s ? s : "-";
}

static void
text_runtime (FILE *f, const sbx_host_runtime *r)
{
  fprintf (f, "runtimes.%s: available=%s path=%s version=%s", r->name, yes_no (r->available), or_dash (r->path),
           or_dash (r->version));
  if (r->error)
    fprintf (f, " error=%s", r->error);
  if (strcmp (r->name, "runsc") == 0)
    fprintf (f, " platform=%s network=%s", runsc_platform, runsc_network);
  fputc ('\n', f);
}

/* A string of a nested object: nothing after the colon when it is null. */
static void
text_nested (FILE *f, const char *k, const char *v)
{
  fprintf (f, "network.%s:%s%s\n", k, v ? " " : "", v ? v : "");
}

/* gpus.passed (nothing when no GPU), gpus.cdi_specs (the paths), then one
 * gpus.devices.I line per GPU, as the JSON view has them. */
static void
text_gpus (FILE *f, const sbx_host_info *hi)
{
  const sbx_gpu_host *h = &hi->gpu;
  const char *passed = h->ngpus == 0 ? NULL : h->cdi ? "cdi" : "direct";
  fprintf (f, "gpus.passed:%s%s\ngpus.cdi_specs:", passed ? " " : "", passed ? passed : "");
  for (size_t i = 0; i < h->nspecs; i++)
    fprintf (f, " %s", h->specs[i]->path);
  fputc ('\n', f);
  if (h->ngpus == 0)
    fprintf (f, "gpus.devices:\n");
  for (size_t i = 0; i < h->ngpus; i++)
    {
      const sbx_gpu *d = &h->gpus[i];
      char mem[32] = "-";
      if (d->memory)
        snprintf (mem, sizeof mem, "%llu", (unsigned long long) d->memory);
      fprintf (f, "gpus.devices.%zu: index=%u model=%s uuid=%s memory=%s bus=%s\n", i, d->index, or_dash (d->model),
               or_dash (d->uuid), mem, or_dash (d->bus));
    }
  if (hi->gpu_error)
    fprintf (f, "gpu_error: %s\n", hi->gpu_error);
}

char *
sbx_host_info_text (const sbx_host_info *hi)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&buf, &len);
  if (f == NULL)
    abort ();
  fprintf (f, "version: %s\nkernel: %s\nroot: %s\nrun_root: %s\n", or_dash (hi->version), or_dash (hi->kernel),
           or_dash (hi->root), or_dash (hi->run_root));
  for (size_t i = 0; i < ARRAY_SIZE (hi->runtimes); i++)
    text_runtime (f, &hi->runtimes[i]);
  fprintf (f, "default_runtime: %s\noverlayfs: %s\nopenat2: %s\ncgroup_version: %d\nnftables: %s\nkvm: %s\n",
           or_dash (hi->default_runtime), yes_no (hi->overlayfs), yes_no (hi->openat2), hi->cgroup_version,
           yes_no (hi->nftables), yes_no (hi->kvm));
  fprintf (f, "seccomp_profile_ok: %s\n", yes_no (hi->seccomp_profile_ok));
  if (hi->seccomp_error)
    fprintf (f, "seccomp_error: %s\n", hi->seccomp_error);
  fprintf (f, "egress_enforcement: %s\n", yes_no (hi->egress_enforcement));
  if (hi->egress_error)
    fprintf (f, "egress_error: %s\n", hi->egress_error);
  if (hi->network_ok)
    {
      text_nested (f, "config", hi->network_config);
      text_nested (f, "pool4", hi->pool4);
      text_nested (f, "pool6", hi->pool6);
      text_nested (f, "private_policy", hi->private_policy);
      text_nested (f, "expose_address", hi->expose_address);
    }
  else
    fprintf (f, "network_config_error: %s\n", or_dash (hi->network_config_error));
  for (size_t i = 0; i < hi->nlimits; i++)
    fprintf (f, "limits.%s: source=%s value=%lld runc_sandboxes=%lld runsc_sandboxes=%lld\n", hi->limits[i].name,
             hi->limits[i].what, (long long) hi->limits[i].value, (long long) hi->limits[i].runc,
             (long long) hi->limits[i].runsc);
  fprintf (f, "runsc_nvproxy: %s\ngpu_runtime: %s\n", yes_no (hi->runsc_nvproxy), or_dash (hi->gpu_runtime));
  text_gpus (f, hi);
  if (fclose (f) != 0)
    abort ();
  return buf;
}
