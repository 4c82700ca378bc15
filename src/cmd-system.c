/* Host-wide commands: info, gc, version. */
#include "config.h"
#include "conf.h"
#include "egress.h"
#include "cli.h"
#include "cgroup.h"
#include "json.h"
#include "lifecycle.h"
#include "openat.h"
#include "runtime.h"
#include "seccomp-profile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/utsname.h>

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
gen_runtime (yajl_gen g, sbx_store *st, const char *name)
{
  _cleanup_runtime_ sbx_runtime *rt = NULL;
  _cleanup_error_ sbx_error *e = NULL;
  j_str (g, name);
  j_map (g);
  j_kbool (g, "available", sbx_runtime_find (st, name, &rt, &e) == 0 && sbx_runtime_probe (rt, &e) == 0);
  j_kstr (g, "path", rt ? rt->path : NULL);
  j_kstr (g, "version", rt ? rt->version : NULL);
  if (e)
    j_kstr (g, "error", e->msg);
  if (strcmp (name, "runsc") == 0)
    {
      j_kstr (g, "platform", "ptrace");
      j_kstr (g, "network", "host stack inside the sandbox's namespace (this runsc cannot run its own stack in one); "
                            "none with --block-network");
    }
  j_endmap (g);
}

int
cmd_info (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int r = cli_no_args (cli, "info", argc, argv, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  struct utsname u;
  uname (&u);
  _cleanup_error_ sbx_error *se = NULL;
  bool seccomp_ok = sbx_seccomp_check (&se) == 0;
  yajl_gen g = cli_json_begin ();
  j_map (g);
  j_kstr (g, "version", SBX_VERSION);
  j_kstr (g, "kernel", u.release);
  j_kstr (g, "root", st->root);
  j_kstr (g, "run_root", st->run_root);
  j_str (g, "runtimes");
  j_map (g);
  gen_runtime (g, st, "runsc");
  gen_runtime (g, st, "runc");
  j_endmap (g);
  j_kstr (g, "default_runtime", "runsc");
  j_kbool (g, "overlayfs", has_overlayfs ());
  j_kbool (g, "openat2", sbx_have_openat2 ());
  j_kint (g, "cgroup_version", sbx_cgroup_version ());
  j_kbool (g, "nftables", has_nftables ());
  j_kbool (g, "kvm", access ("/dev/kvm", R_OK | W_OK) == 0);
  j_kbool (g, "seccomp_profile_ok", seccomp_ok);
  if (se)
    j_kstr (g, "seccomp_error", se->msg);
  /* Egress is enforced with nftables rules: available when the kernel
   * answers sbx's requests. */
  _cleanup_strv_ char **chains = NULL;
  _cleanup_error_ sbx_error *ee = NULL, *ce = NULL;
  bool egress = sbx_egress_list (SBX_EGRESS_TABLE, &chains, &ee) == 0;
  j_kbool (g, "egress_enforcement", egress);
  if (ee)
    j_kstr (g, "egress_error", ee->msg);
  _cleanup_conf_ sbx_conf *conf = NULL;
  if (sbx_conf_load (NULL, &conf, &ce) == 0)
    {
      char b[SBX_CIDR_STRLEN];
      j_str (g, "network");
      j_map (g);
      j_kstr (g, "config", conf->path ? conf->path : "(defaults)");
      sbx_cidr_format (&conf->pool4, b);
      j_kstr (g, "pool4", b);
      if (conf->pool6.family)
        sbx_cidr_format (&conf->pool6, b);
      j_kstr (g, "pool6", conf->pool6.family ? b : "off");
      j_kstr (g, "private_policy", conf->observe ? "observe" : "drop");
      j_kstr (g, "expose_address", conf->expose_address);
      j_endmap (g);
    }
  else
    j_kstr (g, "network_config_error", ce->msg);
  j_endmap (g);
  if (cli->json)
    {
      cli_json_end (g);
      return 0;
    }
  /* The human view is the same document, printed as key: value lines. */
  size_t len;
  _cleanup_free_ char *doc = j_take (g, &len);
  yajl_gen_free (g);
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (j_parse (doc, len, 1 << 20, "info", &v, err) < 0)
    return -1;
  for (size_t i = 0; i < v->u.object.len; i++)
    {
      yajl_val x = v->u.object.values[i];
      const char *k = v->u.object.keys[i];
      if (YAJL_IS_OBJECT (x))
        {
          for (size_t j = 0; j < x->u.object.len; j++)
            {
              yajl_val y = x->u.object.values[j];
              printf ("%s.%s:", k, x->u.object.keys[j]);
              if (YAJL_IS_STRING (y))
                printf (" %s", y->u.string);
              for (size_t l = 0; YAJL_IS_OBJECT (y) && l < y->u.object.len; l++)
                {
                  yajl_val z = y->u.object.values[l];
                  printf (" %s=%s", y->u.object.keys[l],
                          YAJL_IS_STRING (z) ? z->u.string : YAJL_IS_TRUE (z) ? "yes" : YAJL_IS_FALSE (z) ? "no" : "-");
                }
              printf ("\n");
            }
          continue;
        }
      printf ("%s: %s\n", k,
              YAJL_IS_STRING (x)    ? x->u.string
              : YAJL_IS_TRUE (x)    ? "yes"
              : YAJL_IS_FALSE (x)   ? "no"
              : YAJL_IS_INTEGER (x) ? (x->u.number.r ? x->u.number.r : "")
                                    : "-");
    }
  return 0;
}

int
cmd_gc (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int r = cli_no_args (cli, "gc", argc, argv, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  sbx_store *st;
  sbx_gc_report rep;
  if (cli_store (cli, &st, err) < 0 || sbx_gc (st, &rep, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kint (g, "reaped", rep.reaped);
      j_kint (g, "removed", rep.removed);
      j_kint (g, "orphans", rep.orphans);
      j_kint (g, "layers", rep.layers);
      j_kint (g, "networks", rep.networks);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("reaped %d, removed %d, orphans %d, layers %d, networks %d\n", rep.reaped, rep.removed, rep.orphans,
            rep.layers, rep.networks);
  return 0;
}

int
cmd_version (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int r = cli_no_args (cli, "version", argc, argv, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "version", SBX_VERSION);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("sbx %s\n", SBX_VERSION);
  return 0;
}
