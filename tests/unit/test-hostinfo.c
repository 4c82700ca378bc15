/* Unit tests of sbx info's views (src/lib/hostinfo.c): the text view says
 * what the JSON view says, line for line, as `sbx info` printed it when its
 * text was derived from the JSON document (the rule kept here as the
 * reference), for every shape the probes give: runtimes found or not, the
 * optional errors, sbx.conf read or not, odd bytes in strings. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "hostinfo.h"
#include "json.h"
#include "util.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The JSON document as key: value lines (the former renderer). */
static char *
reference_text (const char *doc, size_t len)
{
  yajl_val v = NULL;
  sbx_error *err = NULL;
  if (j_parse (doc, len, 1 << 20, "info", &v, &err) < 0)
    {
      fprintf (stderr, "# parse: %s\n", err->msg);
      return NULL;
    }
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream (&buf, &n);
  for (size_t i = 0; i < v->u.object.len; i++)
    {
      yajl_val x = v->u.object.values[i];
      const char *k = v->u.object.keys[i];
      if (YAJL_IS_OBJECT (x))
        {
          for (size_t j = 0; j < x->u.object.len; j++)
            {
              yajl_val y = x->u.object.values[j];
              /* A list of objects: one line each, KEY.SUB.I; of strings:
               * one line, the strings after the colon. */
              if (YAJL_IS_ARRAY (y) && y->u.array.len && YAJL_IS_OBJECT (y->u.array.values[0]))
                {
                  for (size_t l = 0; l < y->u.array.len; l++)
                    {
                      yajl_val o = y->u.array.values[l];
                      fprintf (f, "%s.%s.%zu:", k, x->u.object.keys[j], l);
                      for (size_t m = 0; m < o->u.object.len; m++)
                        {
                          yajl_val z = o->u.object.values[m];
                          fprintf (f, " %s=%s", o->u.object.keys[m],
                                   YAJL_IS_STRING (z)    ? z->u.string
                                   : YAJL_IS_INTEGER (z) ? z->u.number.r
                                                         : "-");
                        }
                      fprintf (f, "\n");
                    }
                  continue;
                }
              fprintf (f, "%s.%s:", k, x->u.object.keys[j]);
              for (size_t l = 0; YAJL_IS_ARRAY (y) && l < y->u.array.len; l++)
                fprintf (f, " %s", YAJL_IS_STRING (y->u.array.values[l]) ? y->u.array.values[l]->u.string : "-");
              if (YAJL_IS_STRING (y))
                fprintf (f, " %s", y->u.string);
              for (size_t l = 0; YAJL_IS_OBJECT (y) && l < y->u.object.len; l++)
                {
                  yajl_val z = y->u.object.values[l];
                  fprintf (f, " %s=%s", y->u.object.keys[l],
                           YAJL_IS_STRING (z)    ? z->u.string
                           : YAJL_IS_TRUE (z)    ? "yes"
                           : YAJL_IS_FALSE (z)   ? "no"
                           : YAJL_IS_INTEGER (z) ? z->u.number.r
                                                 : "-");
                }
              fprintf (f, "\n");
            }
          continue;
        }
      fprintf (f, "%s: %s\n", k,
               YAJL_IS_STRING (x)    ? x->u.string
               : YAJL_IS_TRUE (x)    ? "yes"
               : YAJL_IS_FALSE (x)   ? "no"
               : YAJL_IS_INTEGER (x) ? (x->u.number.r ? x->u.number.r : "")
                                     : "-");
    }
  fclose (f);
  yajl_tree_free (v);
  return buf;
}

static void
check (const char *what, const sbx_host_info *hi)
{
  yajl_gen g = j_new (true);
  sbx_host_info_gen (g, hi);
  size_t len;
  char *doc = j_take (g, &len);
  yajl_gen_free (g);
  char *want = reference_text (doc, len);
  char *got = sbx_host_info_text (hi);
  if (!tap_ok (want && strcmp (want, got) == 0, "%s: the text view is the JSON view's", what))
    fprintf (stderr, "# want:\n%s# got:\n%s", want ? want : "(none)\n", got);
  free (doc);
  free (want);
  free (got);
}

static sbx_host_info
full (void)
{
  sbx_host_info hi = {
    .version = "0.1.0",
    .kernel = xstrdup ("6.1.0-18-amd64"),
    .root = xstrdup ("/var/lib/sbx"),
    .run_root = xstrdup ("/run/sbx"),
    .runtimes = {
      { .name = "runsc", .available = true, .path = xstrdup ("/usr/bin/runsc"), .version = xstrdup ("runsc version release-20240101.0") },
      { .name = "runc", .available = true, .path = xstrdup ("/usr/sbin/runc"), .version = xstrdup ("runc version 1.1.12") },
    },
    .default_runtime = "runsc",
    .overlayfs = true, .openat2 = true, .nftables = true, .kvm = false, .cgroup_version = 2,
    .seccomp_profile_ok = true, .egress_enforcement = true,
    .network_ok = true,
    .network_config = xstrdup ("/etc/sbx/sbx.conf"),
    .pool4 = xstrdup ("10.200.0.0/16"),
    .pool6 = xstrdup ("fd00:5b0::/48"),
    .private_policy = "observe",
    .expose_address = xstrdup ("127.0.0.1"),
  };
  return hi;
}

int
main (void)
{
  tap_plan (8);

  sbx_host_info hi = full ();
  check ("everything found", &hi);
  sbx_host_info_clear (&hi);

  hi = full ();
  hi.runtimes[1].available = false;
  free (hi.runtimes[1].path);
  free (hi.runtimes[1].version);
  hi.runtimes[1].path = hi.runtimes[1].version = NULL;
  hi.runtimes[1].error = xstrdup ("runtime runc is not installed at /nonexistent");
  hi.cgroup_version = 1;
  check ("a runtime missing, cgroup v1", &hi);
  sbx_host_info_clear (&hi);

  hi = full ();
  hi.runtimes[0].available = false;
  hi.runtimes[0].error = xstrdup ("`runsc --version` exits 1");
  hi.seccomp_profile_ok = false;
  hi.seccomp_error = xstrdup ("seccomp: the profile does not load: Invalid argument");
  hi.egress_enforcement = false;
  hi.egress_error = xstrdup ("nftables: Operation not permitted");
  check ("the optional errors", &hi);
  sbx_host_info_clear (&hi);

  hi = full ();
  hi.network_ok = false;
  free (hi.network_config);
  free (hi.pool4);
  free (hi.pool6);
  free (hi.expose_address);
  hi.network_config = hi.pool4 = hi.pool6 = hi.expose_address = NULL;
  hi.private_policy = NULL;
  hi.network_config_error = xstrdup ("/etc/sbx/sbx.conf:1: pool4: invalid CIDR `bogus`");
  check ("sbx.conf unreadable", &hi);
  sbx_host_info_clear (&hi);

  /* GPUs: two, one of them with what is not known; a CDI spec; an error. */
  hi = full ();
  hi.runsc_nvproxy = true;
  hi.gpu_runtime = "runc";
  hi.gpu.ngpus = 2;
  hi.gpu.gpus = xmalloc0 (2 * sizeof *hi.gpu.gpus);
  hi.gpu.gpus[0] = (sbx_gpu){ .index = 0,
                              .bus = xstrdup ("0000:01:00.0"),
                              .model = xstrdup ("NVIDIA H200"),
                              .uuid = xstrdup ("GPU-0a1b"),
                              .memory = 150754820096ULL,
                              .minor = 0 };
  hi.gpu.gpus[1] = (sbx_gpu){ .index = 1, .minor = -1 };
  hi.gpu.cdi = true;
  hi.gpu.nspecs = 1;
  hi.gpu.specs = xmalloc0 (sizeof *hi.gpu.specs);
  hi.gpu.specs[0] = xmalloc0 (sizeof (sbx_cdi_spec));
  hi.gpu.specs[0]->path = xstrdup ("/etc/cdi/nvidia.yaml");
  hi.gpu_error = xstrdup ("CDI spec /var/run/cdi/x.yaml: spec.foo: unknown key");
  check ("GPUs", &hi);
  sbx_host_info_clear (&hi);

  hi = full ();
  free (hi.expose_address);
  hi.expose_address = NULL;
  free (hi.pool6);
  hi.pool6 = xstrdup ("off");
  check ("no expose address, no IPv6 pool", &hi);
  sbx_host_info_clear (&hi);

  hi = full ();
  free (hi.kernel);
  hi.kernel = xstrdup ("6.1 \"quoted\" \\ tab\there caf\xc3\xa9");
  free (hi.runtimes[0].version);
  hi.runtimes[0].version = xstrdup ("runsc = \"x\" {y}");
  check ("quotes, backslashes, tabs, UTF-8", &hi);
  sbx_host_info_clear (&hi);

  /* This host, probed: whatever it has, both views agree. */
  sbx_store *st = NULL;
  sbx_error *err = NULL;
  char tmp[] = "/tmp/test-hostinfo-XXXXXX";
  if (mkdtemp (tmp) == NULL)
    abort ();
  char *root = xasprintf ("%s/root", tmp), *run = xasprintf ("%s/run", tmp);
  if (sbx_store_open (root, run, true, &st, &err) < 0)
    {
      fprintf (stderr, "# store: %s\n", err->msg);
      abort ();
    }
  sbx_host_info_probe (st, &hi);
  check ("this host", &hi);
  sbx_host_info_clear (&hi);
  sbx_store_free (st);
  char *rm = xasprintf ("rm -rf '%s'", tmp);
  if (system (rm) != 0)
    abort ();
  free (rm);
  free (root);
  free (run);
  return tap_done ();
}
