/* Sandbox lifecycle commands: create, run, ls, status, wait, terminate, rm,
 * logs, ttl, update, stats. */
#include "config.h"
#include "caps.h"
#include "cli-progress.h"
#include "cgroup.h"
#include "cli.h"
#include "commands.h"
#include "client.h"
#include "copyin.h"
#include "disk.h"
#include "hostmount.h"
#include "domain.h"
#include "gpu.h"
#include "image.h"
#include "json.h"
#include "lifecycle.h"
#include "namespace.h"
#include "priority.h"
#include "pull.h"
#include "sandbox.h"
#include "secret.h"
#include "stats.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
  O_IMAGE = 256,
  O_NAME,
  O_CPU,
  O_MEMORY,
  O_PIDS,
  O_RUNTIME,
  O_BLOCK_NET,
  O_KEEP_WARM,
  O_TIMEOUT,
  O_ENV,
  O_CWD,
  O_RM,
  O_FORCE,
  O_ALL,
  O_QUIET,
  O_ON_IDLE,
  O_ALLOW,
  O_PORT,
  O_PUBLIC,
  O_DISK,
  O_SORT,
  O_PULL,
  O_VOLUME,
  O_MOUNT,
  O_COPY_IN,
  O_SECRET,
  O_SECRET_FILE,
  O_ALLOW_SECRETS,
  O_RUN_CMD,
  O_EXIT_WITH_CMD,
  O_ALLOW_DOMAIN,
  O_DOCKER,
  O_GPU,
  O_NAMESPACE,
  O_PRIORITY,
  O_POOL,
};

#define CREATE_OPTS                                                                                                      \
  { "image",                                                                                                             \
    O_IMAGE,                                                                                                             \
    required_argument,                                                                                                   \
    "IMAGE",                                                                                                             \
    "image: a tag, an id, or a registry reference such as python:3.12-slim (default: busybox, built in)",                \
    "@image" },                                                                                                          \
      { "pull",                                                                                                          \
        O_PULL,                                                                                                          \
        required_argument,                                                                                               \
        "POLICY",                                                                                                        \
        "when to pull --image from its registry: missing (default), always or never",                                    \
        "missing always never" },                                                                                        \
      { "name", O_NAME, required_argument, "NAME", "a unique name usable in place of the id" },                          \
      { "cpu", O_CPU, required_argument, "CORES",                                                                        \
        "CPU limit in cores, fractional (e.g. 0.5); 0: none (default 1, sbx.conf)" },                                    \
      { "memory", O_MEMORY, required_argument, "SIZE",                                                                   \
        "memory limit: MiB, or with a unit (512Mi, 1Gi, 1G); 0: none (default 1Gi, sbx.conf)" },                         \
      { "pids", O_PIDS, required_argument, "N", "process limit (default 1024)" },                                        \
      { "disk", O_DISK, required_argument, "SIZE", "writable layer limit (default: sbx.conf's disk, 10Gi; 0: none)" },   \
      { "runtime", O_RUNTIME, required_argument, "RUNTIME", "runsc (default) or runc", "runsc runc" },                   \
      { "gpu",                                                                                                           \
        O_GPU,                                                                                                           \
        required_argument,                                                                                               \
        "GPUS",                                                                                                          \
        "pass GPUs: all, N (any N), INDEX,INDEX..., a UUID or TYPE[:N] (a model such as A100:2); runsc needs "           \
        "--nvproxy, else --runtime runc (sbx-create(1))",                                                                \
        "all 1" },                                                                                                       \
      { "block-network", O_BLOCK_NET, no_argument, NULL, "no network interface: loopback only, no DNS" },                \
      { "allow", O_ALLOW, required_argument, "CIDR",                                                                     \
        "reach only these destinations, plus DNS (repeatable; IPv4 or IPv6)" },                                          \
      { "allow-domain", O_ALLOW_DOMAIN, required_argument, "NAME",                                                       \
        "reach only the addresses NAME (or *.NAME: any name under it) resolves to; other names are refused "             \
        "(repeatable)" },                                                                                                \
      { "port", O_PORT, required_argument, "PORT",                                                                       \
        "expose this port behind a token as a URL on the host (repeatable)" },                                           \
      { "public", O_PUBLIC, no_argument, NULL, "exposed ports need no token" },                                          \
      { "keep-warm",     O_KEEP_WARM, required_argument, "SECONDS", "idle lifetime (default 600, -1: until terminated)", \
        "-1 60 600 3600" },                                                                                              \
      { "timeout", O_TIMEOUT, required_argument, "SECONDS", "hard lifetime (default 3600, at most 86400)" },             \
      { "on-idle",                                                                                                       \
        O_ON_IDLE,                                                                                                       \
        required_argument,                                                                                               \
        "ACTION",                                                                                                        \
        "when the keep-warm time runs out: terminate (default) or pause",                                                \
        "terminate pause" },                                                                                             \
      { "env", 'e', required_argument, "KEY=VALUE", "set an environment variable for every command (repeatable)" },      \
      { "volume", O_VOLUME, required_argument, "NAME:/PATH[:ro]",                                                        \
        "mount volume NAME (made if missing) at PATH, read-only with :ro (repeatable)" },                                \
      { "mount",                                                                                                         \
        O_MOUNT,                                                                                                         \
        required_argument,                                                                                               \
        "HOST:DEST[:ro|:rw]",                                                                                            \
        "bind host directory HOST at DEST, read-only unless :rw (repeatable; what is refused: sbx-create(1))",           \
        "@dir" },                                                                                                        \
      { "copy-in",                                                                                                       \
        O_COPY_IN,                                                                                                       \
        required_argument,                                                                                               \
        "HOSTDIR[:/DEST]",                                                                                               \
        "copy a host directory's tree into the sandbox before its first command (default DEST /workspace; "              \
        "honours HOSTDIR/.sbxignore; repeatable)",                                                                       \
        "@dir" },                                                                                                        \
      { "secret", O_SECRET, required_argument, "NAME[=VAR]",                                                             \
        "pass secret NAME as environment variable VAR (default NAME) of every command (repeatable; needs "               \
        "--allow-secrets)" },                                                                                            \
      { "secret-file", O_SECRET_FILE, required_argument, "NAME",                                                         \
        "pass secret NAME as the file /run/secrets/NAME, on a tmpfs (repeatable; needs --allow-secrets)" },              \
      { "allow-secrets", O_ALLOW_SECRETS, no_argument, NULL,                                                             \
        "acknowledge that the sandbox's code can read the secrets it is given" },                                        \
      { "docker", O_DOCKER, no_argument, NULL,                                                                           \
        "start dockerd inside at creation (an image with Docker: a blueprint's with_docker; runc only as sbx.conf's "    \
        "docker_runtime allows)" },                                                                                      \
      { "namespace", O_NAMESPACE, required_argument, "NAME",                                                             \
        "the namespace the sandbox counts in, against its quotas in sbx.conf (default: default)" },                      \
      { "priority", O_PRIORITY, required_argument, "0-9",                                                                \
        "CPU weight and OOM preference: higher gets more CPU under contention, lower is killed first (default 5)" },     \
  {                                                                                                                      \
    "cwd", O_CWD, required_argument, "DIR", "working directory for every command (absolute)"                             \
  }

/* The initial command's options are create's alone: sbx run's command is
 * already its foreground one, and the sandbox already ends with it. */
#define POOL_OPT                                                                                                   \
  {                                                                                                                \
    "pool", O_POOL, required_argument, "POOL",                                                                     \
        "claim a started sandbox from warm pool POOL and apply these options to it (sbx-pool(1)); an empty pool: " \
        "made cold"                                                                                                \
  }

const cli_opt sbx_create_opts[] = {
  CREATE_OPTS,
  POOL_OPT,
  { "run-cmd", O_RUN_CMD, no_argument, NULL,
    "start the image's cmd (entrypoint + cmd) as the initial command, in place of CMD" },
  { "exit-with-cmd", O_EXIT_WITH_CMD, no_argument, NULL,
    "end the sandbox when the initial command ends (reason exited, its exit code)" },
  { NULL },
};
const cli_opt sbx_run_opts[] = {
  CREATE_OPTS,
  POOL_OPT,
  { "rm", O_RM, no_argument, NULL, "remove the sandbox and its files afterwards" },
  { NULL },
};
/* sbx pool create: create's options (for the members) and the size. */
const cli_opt sbx_pool_cli_opts[] = {
  CREATE_OPTS,
  { "size", CLI_O_POOL_SIZE, required_argument, "N", "pool create: how many sandboxes it keeps started (1-256)" },
  { "quiet", 'q', no_argument, NULL, "pool ls: print names only" },
  { NULL },
};
const cli_opt sbx_none_opts[] = { { NULL } };
const cli_opt sbx_stats_opts[] = {
  { "namespace", O_NAMESPACE, required_argument, "NAME", "count only the sandboxes of namespace NAME" },
  { NULL },
};
const cli_opt sbx_ls_opts[] = {
  { "quiet", 'q', no_argument, NULL, "print ids only" },
  { "all", O_ALL, no_argument, NULL, "also the parked members of warm pools (sbx-pool(1))" },
  { "sort", O_SORT, required_argument, "KEY",
    "order by created (default: oldest first), id, name, state, runtime or image",
    "created id name state runtime image" },
  { "namespace", O_NAMESPACE, required_argument, "NAME", "only the sandboxes of namespace NAME" },
  { NULL },
};
const cli_opt sbx_wait_opts[] = {
  { "timeout", O_TIMEOUT, required_argument, "SECONDS", "give up after SECONDS (error TIMEOUT)" },
  { NULL },
};
const cli_opt sbx_terminate_opts[] = {
  { "rm", O_RM, no_argument, NULL, "also remove the sandbox and its files" },
  { NULL },
};
const cli_opt sbx_rm_opts[] = {
  { "force", 'f', no_argument, NULL, "terminate running sandboxes first" },
  { NULL },
};
const cli_opt sbx_logs_opts[] = { { NULL } };
const cli_opt sbx_update_opts[] = {
  { "cpu", O_CPU, required_argument, "CORES", "CPU limit in cores, fractional (e.g. 0.5); 0: none" },
  { "memory", O_MEMORY, required_argument, "SIZE",
    "memory limit: MiB, or with a unit (512Mi, 1Gi, 1G); 0: none; never below what the sandbox uses now" },
  { "pids", O_PIDS, required_argument, "N", "process limit (runc; fixed at start under runsc)" },
  { "keep-warm", O_KEEP_WARM, required_argument, "SECONDS", "idle lifetime, counted from now (-1: until terminated)",
    "-1 60 600 3600" },
  { "timeout", O_TIMEOUT, required_argument, "SECONDS",
    "hard lifetime: the sandbox ends SECONDS from now (as sbx ttl)" },
  { "priority", O_PRIORITY, required_argument, "0-9",
    "CPU weight and oom_score_adj of the sandbox's processes, as create's --priority" },
  { NULL },
};

void
cli_create_defaults (sbx_sandbox_opts *o)
{
  memset (o, 0, sizeof *o);
  o->runtime = xstrdup ("runsc");
  o->runtime_default = true;
  o->keep_warm = SBX_KEEP_WARM_DEFAULT;
  o->timeout = SBX_TIMEOUT_DEFAULT;
  o->pids = SBX_PIDS_DEFAULT;
  o->priority = SBX_PRIORITY_DEFAULT;
  o->cpu_default = o->memory_default = true;
  o->disk = -1; /* sbx.conf's */
  o->env = xmalloc0 (sizeof (char *));
  o->allow = xmalloc0 (sizeof (char *));
  o->ports = xmalloc0 (sizeof (char *));
  o->volumes = xmalloc0 (sizeof (char *));
  o->mounts = xmalloc0 (sizeof (char *));
  o->secrets = xmalloc0 (sizeof (char *));
  o->secret_files = xmalloc0 (sizeof (char *));
  o->copy_in = xmalloc0 (sizeof (char *));
  o->allow_domains = xmalloc0 (sizeof (char *));
}

static void
set_str (char **dst, const char *v)
{
  free (*dst);
  *dst = xstrdup (v);
}

/* --mount HOST:DEST[:ro|:rw]: HOST made absolute from the caller's
 * directory; the record keeps "HOST:DEST:ro|rw". */
static int
mount_opt (sbx_sandbox_opts *o, const char *arg, sbx_error **err)
{
  _cleanup_free_ char *cwd = getcwd (NULL, 0);
  sbx_hostmount m;
  if (strv_len (o->mounts) >= SBX_MOUNTS_MAX)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--mount: at most %d host directories", SBX_MOUNTS_MAX);
  if (sbx_hostmount_parse (arg, cwd, &m, err) < 0)
    return -1;
  _cleanup_free_ char *s = sbx_hostmount_format (&m);
  sbx_hostmount_clear (&m);
  strv_push (&o->mounts, s);
  return 0;
}

const char *
cli_create_opt_name (int key)
{
  for (const cli_opt *o = sbx_create_opts; o->name; o++)
    if (o->key == key)
      return o->name;
  return NULL;
}

int
cli_create_opt (sbx_sandbox_opts *o, int key, const char *arg, sbx_error **err)
{
  uint64_t mem;
  switch (key)
    {
    case O_IMAGE:
      set_str (&o->image_ref, arg);
      return 1;
    case O_NAME:
      set_str (&o->name, arg);
      return 1;
    case O_RUNTIME:
      set_str (&o->runtime, arg);
      o->runtime_default = false;
      return 1;
    case O_GPU:
      if (sbx_gpu_request_check (arg, err) < 0)
        return -1;
      set_str (&o->gpus, arg);
      return 1;
    case O_CWD:
      set_str (&o->cwd, arg);
      return 1;
    case O_BLOCK_NET:
      o->block_network = true;
      return 1;
    case O_ALLOW: /* checked with the other options (validate_opts) */
      strv_push (&o->allow, arg);
      return 1;
    case O_VOLUME: /* checked with the other options (validate_opts) */
      strv_push (&o->volumes, arg);
      return 1;
    case O_ALLOW_DOMAIN:
      {
        _cleanup_free_ char *name = NULL;
        if (sbx_domain_rule_parse (arg, &name, err) < 0)
          return -1;
        if (strv_len (o->allow_domains) >= SBX_DOMAINS_MAX)
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--allow-domain: at most %d names", SBX_DOMAINS_MAX);
        strv_push (&o->allow_domains, arg);
        return 1;
      }
    case O_PORT:
      {
        int64_t port;
        if (cli_int ("port", arg, 1, 65535, &port, err) < 0)
          return -1;
        _cleanup_free_ char *s = xasprintf ("%lld", (long long) port);
        if (strv_len (o->ports) >= SBX_PORTS_MAX)
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--port: at most %d ports", SBX_PORTS_MAX);
        strv_push (&o->ports, s);
        return 1;
      }
    case O_PUBLIC:
      o->public_ports = true;
      return 1;
    case O_MOUNT:
      return mount_opt (o, arg, err) < 0 ? -1 : 1;
    case O_COPY_IN: /* the host directory checked with the other options (validate_opts) */
      {
        if (strv_len (o->copy_in) >= SBX_COPY_IN_MAX)
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--copy-in: at most %d trees", SBX_COPY_IN_MAX);
        _cleanup_free_ char *cwd = getcwd (NULL, 0);
        _cleanup_free_ char *abs = sbx_copyin_absolute (arg, cwd);
        strv_push (&o->copy_in, abs);
        return 1;
      }
    case O_SECRET: /* checked with the other options (sbx_secret_opts_validate) */
      strv_push (&o->secrets, arg);
      return 1;
    case O_SECRET_FILE:
      strv_push (&o->secret_files, arg);
      return 1;
    case O_ALLOW_SECRETS:
      o->allow_secrets = true;
      return 1;
    case O_DOCKER:
      o->docker = true;
      return 1;
    case 'e':
      if (!env_entry_is_valid (arg))
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--env: `%s` is not KEY=VALUE with a valid KEY", arg);
      strv_push (&o->env, arg);
      return 1;
    case O_CPU:
      o->cpu_default = false;
      if (strcmp (arg, "0") == 0)
        o->cpu = 0;
      else if (parse_double (arg, SBX_CPU_MIN, SBX_CPU_MAX, &o->cpu) < 0)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                              "--cpu: `%s` is not 0 (no limit) or a number of cores in 0.01..1024", arg);
      return 1;
    case O_MEMORY:
      o->memory_default = false;
      if (strcmp (arg, "0") == 0)
        mem = 0;
      else if (parse_memory (arg, &mem) < 0 || mem < SBX_MEMORY_MIN || mem > SBX_MEMORY_MAX)
        return sbx_error_set (
            err, SBX_E_INVALID_ARGUMENT, 0,
            "--memory: `%s` is not 0 (no limit) or a size between 6Mi and 4Ti (MiB, or 512Mi, 1Gi, 2G)", arg);
      o->memory = mem;
      return 1;
    case O_DISK:
      if (sbx_disk_parse (arg, &mem) < 0)
        return sbx_error_set (
            err, SBX_E_INVALID_ARGUMENT, 0,
            "--disk: `%s` is not 0 (no limit) or a size between 16Mi and 64Ti (MiB, or 512Mi, 10Gi, 2G)", arg);
      o->disk = (int64_t) mem;
      return 1;
    case O_PIDS:
      return cli_int ("pids", arg, SBX_PIDS_MIN, SBX_PIDS_MAX, &o->pids, err) < 0 ? -1 : 1;
    case O_KEEP_WARM:
      if (cli_int ("keep-warm", arg, -1, SBX_TIMEOUT_MAX, &o->keep_warm, err) < 0)
        return -1;
      if (o->keep_warm == 0)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--keep-warm: 0 is not allowed (-1 or 1..86400)");
      return 1;
    case O_TIMEOUT:
      return cli_int ("timeout", arg, 1, SBX_TIMEOUT_MAX, &o->timeout, err) < 0 ? -1 : 1;
    case O_NAMESPACE:
      if (sbx_namespace_validate (arg, err) < 0)
        return sbx_error_wrap (err, "--namespace");
      set_str (&o->namespace, arg);
      return 1;
    case O_PRIORITY:
      return cli_int ("priority", arg, 0, 9, &o->priority, err) < 0 ? -1 : 1;
    case O_ON_IDLE:
      if (strcmp (arg, "pause") != 0 && strcmp (arg, "terminate") != 0)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--on-idle: `%s` is not pause or terminate", arg);
      o->on_idle_pause = strcmp (arg, "pause") == 0;
      return 1;
    default:
      return 0;
    }
}

static void
print_created (sbx_cli *cli, const sbx_sandbox *sb)
{
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      sbx_sandbox_gen (g, sb);
      cli_json_end (g);
    }
  else
    {
      printf ("%s\n", sb->id);
      /* Exposed at create (--port): on stderr, so that stdout stays the id. */
      for (size_t i = 0; sb->urls && sb->urls[i]; i++)
        fprintf (stderr, "port %s\n", sb->urls[i]);
    }
}

/* What create and run parse: the sandbox's options, and how to obtain
 * its image. */
struct create_args {
  sbx_sandbox_opts o;
  char **given; /* the long names of the options given (a claim's, pool.h) */
  char *pool;   /* --pool */
  sbx_pull_policy pull;
  bool rm;            /* run only */
  bool run_cmd;       /* create only: the image's cmd as the initial command */
  bool exit_with_cmd; /* create only: into the options once the command is known */
};

static bool
strv_has (char *const *v, const char *s)
{
  for (size_t i = 0; v && v[i]; i++)
    if (strcmp (v[i], s) == 0)
      return true;
  return false;
}

static int
create_cb (void *data, int key, const char *arg, sbx_error **err)
{
  struct create_args *a = data;
  const char *name = cli_create_opt_name (key);
  if (name && !strv_has (a->given, name))
    strv_push (&a->given, name);
  if (key == O_PULL)
    return sbx_pull_policy_parse (arg, &a->pull, err) < 0 ? sbx_error_wrap (err, "--pull") : 0;
  if (key == O_POOL)
    {
      if (!name_is_valid (arg))
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--pool: `%s` is not a pool name", arg);
      free (a->pool);
      a->pool = xstrdup (arg);
      return 0;
    }
  return cli_create_opt (&a->o, key, arg, err) < 0 ? -1 : 0;
}

/* --allow-secrets is an acknowledgement: said out loud on stderr, so that
 * it shows in a log of the command too. */
static void
warn_secrets (const sbx_sandbox_opts *o)
{
  if (!o->allow_secrets || !sbx_secret_opts_any (o))
    return;
  _cleanup_strv_ char **names = sbx_secret_opts_names (o);
  size_t n = strv_len (names);
  fprintf (stderr,
           "sbx: warning: --allow-secrets: the sandbox's code can read the value%s of the %zu secret%s it is given, "
           "and send %s wherever its network reaches\n",
           n == 1 ? "" : "s", n, n == 1 ? "" : "s", n == 1 ? "it" : "them");
}

/* --image REF, before anything is made: a local name as it is, a registry
 * reference from the store or pulled as --pull says (progress on stderr). */
static int
obtain_image (sbx_store *st, const struct create_args *a, sbx_image **ret, sbx_error **err)
{
  _cleanup_conf_ sbx_conf *conf = NULL;
  if (sbx_sandbox_opts_validate (&a->o, err) < 0 || sbx_conf_load (NULL, &conf, err) < 0
      || sbx_sandbox_opts_check_host (st, &a->o, conf, err) < 0)
    return -1;
  _cleanup_progress_ sbx_pull_opts po = { .platform = NULL };
  cli_progress_attach (&po, false);
  return sbx_image_obtain (st, conf, a->o.image_ref, a->pull, &po, ret, err);
}

static void
create_args_clear (struct create_args *a)
{
  sbx_sandbox_opts_clear (&a->o);
  strv_free (a->given);
  free (a->pool);
}

/* create/run --pool: a claim of the pool's (cmd-pool.c), else a sandbox
 * made cold. */
static int
make_sandbox (sbx_cli *cli, sbx_store *st, struct create_args *a, const sbx_image *img, sbx_sandbox **ret,
              sbx_error **err)
{
  if (a->pool)
    return cli_pool_claim (cli, st, a->pool, &a->o, a->given, img ? img->id : NULL, ret, err);
  return sbx_sandbox_create_from (st, &a->o, img, ret, err);
}

static int
create_only_cb (void *data, int key, const char *arg, sbx_error **err)
{
  struct create_args *a = data;
  if (key == O_RUN_CMD)
    a->run_cmd = true;
  else if (key == O_EXIT_WITH_CMD)
    a->exit_with_cmd = true;
  else
    return create_cb (a, key, arg, err);
  return 0;
}

/* The initial command: CMD... after the options, or with --run-cmd the
 * image's (from the image obtained once, as sbx run takes it; the
 * built-in busybox's is /bin/sh). */
static int
initial_cmd (sbx_store *st, struct create_args *a, char **cmd, sbx_image **img, sbx_error **err)
{
  if (cmd[0])
    {
      a->o.cmd = strv_dup (cmd);
      return 0;
    }
  if (!a->run_cmd)
    return 0;
  if (*img == NULL && sbx_image_resolve (st, "busybox", img, err) < 0)
    return -1;
  if ((*img)->cmd == NULL || (*img)->cmd[0] == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "create: --run-cmd: image `%s` has no cmd (give the command: sbx create [OPTIONS] -- CMD...)",
                          a->o.image_ref ? a->o.image_ref : "busybox");
  a->o.cmd = strv_dup ((*img)->cmd);
  return 0;
}

int
cmd_create (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  _cleanup_image_ sbx_image *img = NULL;
  struct create_args a = { .pull = SBX_PULL_MISSING };
  cli_create_defaults (&a.o);
  int first, ret = cli_simple_parse (cli, "create", argc, argv, 0, -1, &first, create_only_cb, &a, err);
  /* The command follows --: a word alone might be meant as an image. */
  if (ret == 0 && first < argc && strcmp (argv[first - 1], "--") != 0)
    ret = cli_usage_error (
        cli_find ("create"), err,
        "unexpected argument `%s` (an initial command goes after --: sbx create [OPTIONS] -- CMD...)", argv[first]);
  if (ret == 0 && a.exit_with_cmd && first >= argc && !a.run_cmd)
    ret = cli_usage_error (cli_find ("create"), err,
                           "--exit-with-cmd needs an initial command: sbx create [OPTIONS] -- CMD..., or --run-cmd");
  if (ret == 0 && first < argc && a.run_cmd)
    ret = cli_usage_error (cli_find ("create"), err,
                           "--run-cmd starts the image's cmd: give it or a command, not both");
  if (ret == 0 && sbx_caps_require ("create", err) < 0)
    ret = -1;
  if (ret == 0 && sbx_sandbox_opts_validate (&a.o, err) < 0)
    ret = -1;
  if (ret == 0)
    warn_secrets (&a.o);
  sbx_store *st;
  if (ret == 0 && cli_store (cli, &st, err) < 0)
    ret = -1;
  if (ret == 0 && a.o.image_ref && obtain_image (st, &a, &img, err) < 0)
    ret = -1;
  if (ret == 0 && initial_cmd (st, &a, argv + first, &img, err) < 0)
    ret = -1;
  a.o.exit_with_cmd = a.exit_with_cmd;
  if (ret == 0 && make_sandbox (cli, st, &a, img, &sb, err) < 0)
    ret = -1;
  if (ret == 0)
    print_created (cli, sb);
  create_args_clear (&a);
  return ret < 0 ? -1 : 0;
}

static int
run_in (sbx_cli *cli, sbx_store *st, const sbx_sandbox *sb, char **cmd, bool rm, int *status, sbx_error **err)
{
  sbx_exec_opts eo = { .argv = cmd, .end_sandbox = true, .remove_sandbox = rm };
  return cli_exec (cli, st, sb->id, &eo, status, err);
}

/* Without a command, sbx run runs the image's cmd (docker's and podman's
 * Entrypoint + Cmd, a blueprint's cmd), from the image obtained once,
 * before anything is made, so that the sandbox is made from the image
 * whose cmd it runs. */
static int
run_image_cmd (const sbx_sandbox_opts *o, const sbx_image *img, sbx_error **err)
{
  if (img->cmd == NULL || img->cmd[0] == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "run: no command given and image `%s` has no cmd (usage: sbx run [OPTIONS] [--] CMD...)",
                          o->image_ref);
  return 0;
}

static int
run_cb (void *data, int key, const char *arg, sbx_error **err)
{
  struct create_args *a = data;
  if (key == O_RM)
    {
      a->rm = true;
      return 0;
    }
  return create_cb (a, key, arg, err);
}

int
cmd_run (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  _cleanup_image_ sbx_image *img = NULL;
  struct create_args a = { .pull = SBX_PULL_MISSING, .rm = false };
  cli_create_defaults (&a.o);
  int first, status = 0, ret = 0, r = cli_simple_parse (cli, "run", argc, argv, 0, -1, &first, run_cb, &a, err);
  if (r != 0)
    {
      create_args_clear (&a);
      return r < 0 ? -1 : 0;
    }
  if (first >= argc && a.o.image_ref == NULL)
    ret = sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                         "run: no command and no --image whose cmd to run (usage: sbx run [OPTIONS] [--] CMD..., "
                         "or sbx run --image IMAGE)");
  if (ret == 0 && sbx_caps_require ("run", err) < 0)
    ret = -1;
  if (ret == 0 && sbx_sandbox_opts_validate (&a.o, err) < 0)
    ret = -1;
  if (ret == 0)
    warn_secrets (&a.o);
  sbx_store *st;
  if (ret == 0 && cli_store (cli, &st, err) < 0)
    ret = -1;
  if (ret == 0 && a.o.image_ref && obtain_image (st, &a, &img, err) < 0)
    ret = -1;
  if (ret == 0 && first >= argc && run_image_cmd (&a.o, img, err) < 0)
    ret = -1;
  /* The sandboxes of earlier runs may still be tearing down: at most
   * SBX_TEARDOWNS_MAX of them at once, however fast a script loops. */
  if (ret == 0)
    sbx_teardown_throttle (st, SBX_TEARDOWNS_MAX);
  if (ret == 0 && make_sandbox (cli, st, &a, img, &sb, err) < 0)
    ret = -1;
  if (ret == 0)
    {
      ret = run_in (cli, st, sb, first >= argc ? img->cmd : argv + first, a.rm, &status, err);
      /* Once the command's status is known its monitor ends the sandbox
       * (and with --rm removes it) by itself: the teardown goes on after we
       * return. Without a status, it is ended and removed from here. */
      if (ret < 0)
        {
          _cleanup_error_ sbx_error *e2 = NULL;
          sbx_sandbox_terminate (st, sb->id, -1, &e2);
          if (a.rm)
            sbx_sandbox_remove (st, sb->id, NULL);
        }
      else
        ret = status;
    }
  create_args_clear (&a);
  return ret;
}

static void
human_time (int64_t t, char *buf, size_t len)
{
  if (t <= 0)
    snprintf (buf, len, "-");
  else
    format_time (t, buf, len);
}

/* The reason as people read it: "exited, code 3" for sbx run's command. */
static void
reason_text (const sbx_sandbox *sb, char *buf, size_t len)
{
  if (sb->reason && sb->has_exit_code)
    snprintf (buf, len, "%s, code %lld", sb->reason, (long long) sb->exit_code);
  else
    snprintf (buf, len, "%s", sb->reason ? sb->reason : "");
}

static void
print_network_human (const sbx_sandbox *sb)
{
  const char *mode = sb->net_mode ? sb->net_mode : sb->opts.block_network ? "none" : "-";
  printf ("network:    %s", strcmp (mode, "none") == 0 ? "none (--block-network: loopback only)" : mode);
  size_t shown = 0;
  for (size_t i = 0; strcmp (mode, "allow") == 0 && sb->net_allow && sb->net_allow[i]; i++)
    printf ("%s%s", shown++ ? ", " : " ", sb->net_allow[i]);
  for (size_t i = 0; strcmp (mode, "allow") == 0 && sb->net_domains && sb->net_domains[i]; i++)
    printf ("%s%s", shown++ ? ", " : " ", sb->net_domains[i]);
  printf ("\n");
  for (size_t i = 0; sb->net_domain_addrs && sb->net_domain_addrs[i]; i++)
    {
      char addr[64], name[256];
      long long ms;
      if (sscanf (sb->net_domain_addrs[i], "%63s %255s %lld", addr, name, &ms) == 3)
        printf ("allowed:    %s (%s, %lld.%lld s left)\n", addr, name, ms / 1000, (ms % 1000) / 100);
    }
  if (sb->net_stack)
    printf ("net stack:  %s\n", sb->net_stack);
  if (sb->net_addr4)
    printf ("address:    %s%s%s (gateway and resolver %s)\n", sb->net_addr4, sb->net_addr6 ? ", " : "",
            sb->net_addr6 ? sb->net_addr6 : "", sb->net_gateway4 ? sb->net_gateway4 : "-");
  if (sb->net_private_seen > 0)
    printf ("private:    %lld connections to private ranges (observe mode)\n", (long long) sb->net_private_seen);
  for (size_t i = 0; sb->urls && sb->urls[i]; i++)
    printf ("port:       %s%s\n", sb->urls[i], sb->opts.public_ports ? " (public)" : "");
}

/* The secrets by name (their values are nowhere in a record). */
static void
print_secrets_human (const sbx_sandbox *sb)
{
  if (!sbx_secret_opts_any (&sb->opts))
    return;
  printf ("secrets:   ");
  for (size_t i = 0; sb->opts.secrets && sb->opts.secrets[i]; i++)
    {
      const char *s = sb->opts.secrets[i], *eq = strchr (s, '=');
      printf ("%s %.*s (env %s)", i ? "," : "", (int) (eq ? eq - s : (long) strlen (s)), s, eq ? eq + 1 : s);
    }
  for (size_t i = 0; sb->opts.secret_files && sb->opts.secret_files[i]; i++)
    printf ("%s %s (file)", i || (sb->opts.secrets && sb->opts.secrets[0]) ? "," : "", sb->opts.secret_files[i]);
  printf ("\n");
}

/* The initial command (create -- CMD): its pid and its command line. */
static void
print_cmd_human (const sbx_sandbox *sb)
{
  if (sb->opts.cmd == NULL || sb->opts.cmd[0] == NULL)
    return;
  printf ("command:    ");
  if (sb->cmd_pid > 0)
    printf ("pid %lld: ", (long long) sb->cmd_pid);
  for (size_t i = 0; sb->opts.cmd[i]; i++)
    {
      _cleanup_free_ char *w = printable_escaped (sb->opts.cmd[i], 256);
      printf ("%s%s", i ? " " : "", w);
    }
  printf ("%s\n", sb->opts.exit_with_cmd ? " (--exit-with-cmd)" : "");
}

/* "10.0 GiB (12.3 MiB used)", or "unlimited (...)". */
static void
disk_text (const sbx_sandbox *sb, int64_t used, char *buf, size_t len)
{
  char lim[32] = "unlimited";
  if (sb->opts.disk >= (1LL << 30))
    snprintf (lim, sizeof lim, "%.1f GiB", (double) sb->opts.disk / (1024.0 * 1024 * 1024));
  else if (sb->opts.disk > 0)
    snprintf (lim, sizeof lim, "%.1f MiB", (double) sb->opts.disk / (1024.0 * 1024));
  if (used >= 0)
    snprintf (buf, len, "%s (%.1f MiB used)", lim, (double) used / 1048576.0);
  else
    snprintf (buf, len, "%s", lim);
}

static void
print_status_human (const sbx_sandbox *sb, int64_t disk_used)
{
  char c[32], s[32], e[32], d[32];
  human_time (sb->created_at, c, sizeof c);
  human_time (sb->started_at, s, sizeof s);
  human_time (sb->ended_at, e, sizeof e);
  human_time (sb->deadline, d, sizeof d);
  printf ("id:         %s\n", sb->id);
  if (sb->opts.name)
    printf ("name:       %s\n", sb->opts.name);
  char why[96];
  reason_text (sb, why, sizeof why);
  printf ("state:      %s%s%s%s%s\n", sbx_state_name (sb->state), sb->paused ? " (paused)" : "", sb->reason ? " (" : "",
          why, sb->reason ? ")" : "");
  if (sb->error)
    printf ("error:      %s\n", sb->error);
  printf ("image:      %s\nruntime:    %s\n", sb->image_id ? sb->image_id : "-", sb->opts.runtime);
  for (size_t i = 0; sb->gpu_list && sb->gpu_list[i]; i++)
    printf ("gpu:        %s (%s)\n", sb->gpu_list[i], sb->gpu_mode);
  printf ("namespace:  %s\n", sbx_namespace_of (&sb->opts));
  printf ("priority:   %lld (%s %llu, oom_score_adj %d)\n", (long long) sb->opts.priority,
          sbx_cgroup_version () == 2 ? "cpu.weight" : "cpu.shares",
          (unsigned long long) (sbx_cgroup_version () == 2 ? sbx_priority_cpu_weight (sb->opts.priority)
                                                           : sbx_priority_cpu_shares (sb->opts.priority)),
          sbx_priority_oom_score_adj (sb->opts.priority));
  if (sb->opts.pool)
    printf ("pool:       %s%s\n", sb->opts.pool, sb->parked ? " (parked)" : " (claimed)");
  if (sb->userns_base > 0)
    printf ("userns:     uid/gid 0-%lld -> %lld-%lld on the host\n", (long long) sb->userns_size - 1,
            (long long) sb->userns_base, (long long) (sb->userns_base + sb->userns_size - 1));
  else if (sb->userns_off)
    printf ("userns:     none (runc_userns = optional): %s\n", sb->userns_off);
  print_cmd_human (sb);
  printf ("created:    %s\nstarted:    %s\nended:      %s\ndeadline:   %s\n", c, s, e, d);
  printf ("keep-warm:  %lld s\ntimeout:    %lld s\n", (long long) sb->opts.keep_warm, (long long) sb->opts.timeout);
  char cpu[32] = "unlimited", mem[32] = "unlimited";
  if (sb->opts.cpu > 0)
    snprintf (cpu, sizeof cpu, "%g cores", sb->opts.cpu);
  if (sb->opts.memory > 0)
    snprintf (mem, sizeof mem, "%llu MiB", (unsigned long long) (sb->opts.memory >> 20));
  /* Where the limit came from: sbx.conf's default, or create's option. */
  printf ("cpu:        %s%s\nmemory:     %s%s\npids:       %lld\n", cpu,
          sb->opts.cpu_default ? " (default)"
          : sb->opts.cpu > 0   ? ""
                               : " (--cpu 0)",
          mem,
          sb->opts.memory_default ? " (default)"
          : sb->opts.memory > 0   ? ""
                                  : " (--memory 0)",
          (long long) sb->opts.pids);
  char disk[96];
  disk_text (sb, disk_used, disk, sizeof disk);
  printf ("disk:       %s\n", disk);
  for (size_t i = 0; sb->opts.volumes && sb->opts.volumes[i]; i++)
    printf ("volume:     %s\n", sb->opts.volumes[i]);
  for (size_t i = 0; sb->opts.mounts && sb->opts.mounts[i]; i++)
    {
      sbx_hostmount m;
      if (sbx_hostmount_parse (sb->opts.mounts[i], NULL, &m, NULL) < 0)
        continue;
      _cleanup_free_ char *src = printable_escaped (m.source, 256), *dst = printable_escaped (m.dest, 256);
      printf ("mount:      %s on %s (%s)\n", src, dst, m.readonly ? "read-only" : "read-write");
      sbx_hostmount_clear (&m);
    }
  print_network_human (sb);
  print_secrets_human (sb);
  printf ("oom kills:  %lld\n", (long long) sb->oom_kills);
  if (sbx_sandbox_pids_hits_known (sb))
    printf ("pid limit:  %lld hits\n", (long long) sb->pids_limit_hits);
  else
    printf ("pid limit:  not counted (gVisor refuses forks past --pids inside the sandbox, unseen by the host)\n");
}

static int
load_sandbox (sbx_cli *cli, const char *ref, sbx_store **st, sbx_sandbox **sb, sbx_error **err)
{
  _cleanup_free_ char *id = NULL;
  if (cli_store (cli, st, err) < 0 || cli_sandbox_id (cli, ref, &id, err) < 0)
    return -1;
  return sbx_sandbox_get_live (*st, id, sb, err);
}

int
cmd_status (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int first, r = cli_simple_parse (cli, "status", argc, argv, 1, 1, &first, NULL, NULL, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  sbx_store *st;
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (load_sandbox (cli, argv[first], &st, &sb, err) < 0)
    return -1;
  if (sb->opts.disk > 0)
    sb->disk_used = sbx_disk_used (st, sb);
  if (sb->state == SBX_STATE_RUNNING && sb->net_domains && sb->net_domains[0])
    sb->net_domain_addrs = sbx_sandbox_domain_addrs (sb->id);
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      sbx_sandbox_gen (g, sb);
      cli_json_end (g);
    }
  else
    print_status_human (sb, sb->disk_used);
  return 0;
}

/* sbx ls --sort: the keys, podman ps's where sbx has them. */
static const char *const ls_keys[] = { "created", "id", "name", "state", "runtime", "image", NULL };

struct ls_args {
  bool quiet, all;
  int sort;              /* index in ls_keys */
  const char *namespace; /* --namespace: only its sandboxes */
};

static int
ls_opt (void *data, int key, const char *arg, sbx_error **err)
{
  struct ls_args *a = data;
  if (key == 'q')
    {
      a->quiet = true;
      return 0;
    }
  if (key == O_NAMESPACE)
    {
      a->namespace = arg;
      return sbx_namespace_validate (arg, err) < 0 ? sbx_error_wrap (err, "--namespace") : 0;
    }
  if (key == O_ALL)
    {
      a->all = true;
      return 0;
    }
  for (int i = 0; ls_keys[i]; i++)
    if (strcmp (arg, ls_keys[i]) == 0)
      {
        a->sort = i;
        return 0;
      }
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                        "--sort: `%s` is not created, id, name, state, runtime or image", arg);
}

static int
cmp_str (const char *a, const char *b)
{
  return strcmp (a ? a : "", b ? b : "");
}

/* Creation order: the time in ns, else (a record from before it was kept)
 * in seconds; the id breaks ties so that the order is stable. */
static int
cmp_created (const sbx_sandbox *a, const sbx_sandbox *b)
{
  int64_t x = a->created_ns ? a->created_ns : a->created_at * 1000000000LL;
  int64_t y = b->created_ns ? b->created_ns : b->created_at * 1000000000LL;
  return x < y ? -1 : x > y ? 1 : strcmp (a->id, b->id);
}

static int
cmp_sandboxes (const void *pa, const void *pb, void *data)
{
  const sbx_sandbox *a = *(sbx_sandbox *const *) pa, *b = *(sbx_sandbox *const *) pb;
  int r = 0;
  switch (*(int *) data)
    {
    case 1:
      return strcmp (a->id, b->id);
    case 2:
      r = cmp_str (a->opts.name, b->opts.name);
      break;
    case 3:
      r = (int) a->state - (int) b->state;
      break;
    case 4:
      r = cmp_str (a->opts.runtime, b->opts.runtime);
      break;
    case 5:
      r = cmp_str (a->image_id, b->image_id);
      break;
    }
  return r ? r : cmp_created (a, b);
}

static void
print_ls_row (yajl_gen g, bool quiet, const sbx_sandbox *sb)
{
  char c[32], why[96];
  human_time (sb->created_at, c, sizeof c);
  reason_text (sb, why, sizeof why);
  if (sb->parked)
    snprintf (why, sizeof why, "parked");
  if (g)
    sbx_sandbox_gen (g, sb);
  else if (quiet)
    printf ("%s\n", sb->id);
  else
    printf ("%-16s %-16s %-12s %-12s %-18s %-7s %s\n", sb->id, sb->opts.name ? sb->opts.name : "-",
            sbx_namespace_of (&sb->opts), sbx_state_name (sb->state), why[0] ? why : "-",
            sb->opts.runtime ? sb->opts.runtime : "-", c);
}

int
cmd_ls (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  struct ls_args a = { 0 };
  int first, r = cli_simple_parse (cli, "ls", argc, argv, 0, 0, &first, ls_opt, &a, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  sbx_store *st;
  sbx_sandbox **sbs;
  size_t n;
  if (cli_store (cli, &st, err) < 0 || sbx_sandbox_get_all (st, &sbs, &n, err) < 0)
    return -1;
  qsort_r (sbs, n, sizeof *sbs, cmp_sandboxes, &a.sort);
  yajl_gen g = NULL;
  if (cli->json)
    {
      g = cli_json_begin ();
      j_arr (g);
    }
  else if (!a.quiet)
    printf ("%-16s %-16s %-12s %-12s %-18s %-7s %s\n", "ID", "NAME", "NAMESPACE", "STATE", "REASON", "RUNTIME",
            "CREATED");
  for (size_t i = 0; i < n; i++)
    if ((a.namespace == NULL || strcmp (a.namespace, sbx_namespace_of (&sbs[i]->opts)) == 0)
        && (a.all || !sbs[i]->parked || sbx_state_is_final (sbs[i]->state)))
      print_ls_row (g, a.quiet, sbs[i]);
  sbx_sandboxes_free (sbs);
  if (g)
    {
      j_endarr (g);
      cli_json_end (g);
    }
  return 0;
}

static int
timeout_opt (void *data, int key, const char *arg, sbx_error **err)
{
  return cli_int ("timeout", arg, 0, 1LL << 31, (int64_t *) data, err);
}

int
cmd_wait (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int64_t timeout = -1;
  int first, r = cli_simple_parse (cli, "wait", argc, argv, 1, 1, &first, timeout_opt, &timeout, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  sbx_store *st;
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (load_sandbox (cli, argv[first], &st, &sb, err) < 0
      || sbx_sandbox_wait (st, &sb, timeout >= 0 ? timeout * 1000 : -1, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      sbx_sandbox_gen (g, sb);
      cli_json_end (g);
    }
  else
    {
      char why[96];
      reason_text (sb, why, sizeof why);
      printf ("%s%s%s%s\n", sbx_state_name (sb->state), sb->reason ? " (" : "", why, sb->reason ? ")" : "");
    }
  return 0;
}

static int
print_ids (sbx_cli *cli, char **ids)
{
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstrv (g, "ids", ids);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    for (size_t i = 0; ids && ids[i]; i++)
      printf ("%s\n", ids[i]);
  return 0;
}

/* terminate (with --rm, remove too) and rm (with --force, terminate
 * first): the same walk over the ids given. */
static int
end_each (sbx_cli *cli, const char *name, bool terminate, int argc, char **argv, sbx_error **err)
{
  bool flag = false;
  int first, r = cli_simple_parse (cli, name, argc, argv, 1, -1, &first, cli_flag_opt, &flag, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  bool do_terminate = terminate || flag, do_remove = !terminate || flag;
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  _cleanup_strv_ char **done = xmalloc0 (sizeof (char *));
  for (int i = first; i < argc; i++)
    {
      _cleanup_free_ char *id = NULL;
      if (cli_sandbox_id (cli, argv[i], &id, err) < 0 || (do_terminate && sbx_sandbox_terminate (st, id, -1, err) < 0)
          || (do_remove && sbx_sandbox_remove (st, id, err) < 0))
        return -1;
      strv_push (&done, id);
    }
  return print_ids (cli, done);
}

int
cmd_terminate (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  return end_each (cli, "terminate", true, argc, argv, err);
}

int
cmd_rm (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  return end_each (cli, "rm", false, argc, argv, err);
}

int
cmd_logs (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int first, r = cli_simple_parse (cli, "logs", argc, argv, 1, 1, &first, NULL, NULL, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  if (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, argv[first], &id, err) < 0)
    return -1;
  _cleanup_free_ char *text = NULL;
  size_t len = 0;
  if (sbx_sandbox_log_read (st, id, &text, &len, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", id);
      j_str (g, "log");
      j_strn (g, text, len);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    fwrite (text, 1, len, stdout);
  return 0;
}

int
cmd_ttl (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int first, r = cli_simple_parse (cli, "ttl", argc, argv, 2, 2, &first, NULL, NULL, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  int64_t secs;
  if (parse_int64 (argv[first + 1], 1, SBX_TIMEOUT_MAX, &secs) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "ttl: SECONDS must be an integer in 1..%d", SBX_TIMEOUT_MAX);
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  if (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, argv[first], &id, err) < 0)
    return -1;
  int64_t deadline = 0;
  if (sbx_client_ttl (st, id, secs, &deadline, err) < 0)
    return -1;
  char d[32];
  human_time (deadline, d, sizeof d);
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", id);
      j_kint (g, "deadline", deadline);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    printf ("%s deadline %s\n", id, d);
  return 0;
}

/* update: create's parser (create_opt) on a scratch set of options, and
 * what it set is what is asked for. */
struct update_args {
  sbx_sandbox_opts o;
  sbx_update u;
};

static int
update_cb (void *data, int key, const char *arg, sbx_error **err)
{
  struct update_args *a = data;
  if (cli_create_opt (&a->o, key, arg, err) < 0)
    return -1;
  switch (key)
    {
    case O_CPU:
      a->u.has_cpu = true;
      a->u.cpu = a->o.cpu;
      break;
    case O_MEMORY:
      a->u.has_memory = true;
      a->u.memory = a->o.memory;
      break;
    case O_PIDS:
      a->u.has_pids = true;
      a->u.pids = a->o.pids;
      break;
    case O_KEEP_WARM:
      a->u.has_keep_warm = true;
      a->u.keep_warm = a->o.keep_warm;
      break;
    case O_TIMEOUT:
      a->u.has_timeout = true;
      a->u.timeout = a->o.timeout;
      break;
    case O_PRIORITY:
      a->u.has_priority = true;
      a->u.priority = a->o.priority;
      break;
    }
  return 0;
}

/* A cpu or memory limit raised stays within the namespace's quotas: the
 * quota lock is held (*RET_LOCK) until the monitor has saved the new one. */
static int
update_admit (sbx_store *st, const char *id, const sbx_update *u, int *ret_lock, sbx_error **err)
{
  if (!u->has_cpu && !u->has_memory)
    return 0;
  _cleanup_sandbox_ sbx_sandbox *sb = NULL;
  if (sbx_sandbox_get (st, id, &sb, err) < 0)
    return -1;
  sbx_sandbox_opts o = sb->opts; /* borrowed: not cleared */
  if (u->has_cpu)
    o.cpu = u->cpu;
  if (u->has_memory)
    o.memory = u->memory;
  return sbx_quota_admit (st, NULL, &o, sb, ret_lock, err);
}

int
cmd_update (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  struct update_args a = { .u = { .has_cpu = false } };
  cli_create_defaults (&a.o);
  int first, r = cli_simple_parse (cli, "update", argc, argv, 1, 1, &first, update_cb, &a, err);
  sbx_sandbox_opts_clear (&a.o);
  if (r != 0)
    return r < 0 ? -1 : 0;
  if (!a.u.has_cpu && !a.u.has_memory && !a.u.has_pids && !a.u.has_keep_warm && !a.u.has_timeout && !a.u.has_priority)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "update: nothing to change (--cpu, --memory, --pids, --keep-warm, --timeout or --priority)");
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  _cleanup_yajl_val_ yajl_val v = NULL;
  _cleanup_close_ int quota = -1;
  if (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, argv[first], &id, err) < 0
      || update_admit (st, id, &a.u, &quota, err) < 0 || sbx_client_update (st, id, &a.u, &v, err) < 0)
    return -1;
  int64_t mem = 0, pids = 0, kw = 0, timeout = 0, deadline = 0, prio = SBX_PRIORITY_DEFAULT;
  yajl_val cpu = j_get (v, "cpu");
  double cores = cpu && YAJL_IS_NUMBER (cpu) ? YAJL_GET_DOUBLE (cpu) : 0;
  if (j_get_int (v, "memory", true, &mem, err) < 0 || j_get_int (v, "pids", true, &pids, err) < 0
      || j_get_int (v, "keep_warm", true, &kw, err) < 0 || j_get_int (v, "timeout", true, &timeout, err) < 0
      || j_get_int (v, "deadline", true, &deadline, err) < 0 || j_get_int (v, "priority", false, &prio, err) < 0)
    return sbx_error_wrap (err, "the monitor's reply");
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", id);
      j_str (g, "cpu");
      j_double (g, cores);
      j_kint (g, "memory", mem);
      j_kint (g, "pids", pids);
      j_kint (g, "keep_warm", kw);
      j_kint (g, "timeout", timeout);
      j_kint (g, "priority", prio);
      j_kint (g, "deadline", deadline);
      j_endmap (g);
      cli_json_end (g);
      return 0;
    }
  char d[32], c[32] = "unlimited", m[32] = "unlimited";
  human_time (deadline, d, sizeof d);
  if (cores > 0)
    snprintf (c, sizeof c, "%g cores", cores);
  if (mem > 0)
    snprintf (m, sizeof m, "%lld MiB", (long long) (mem >> 20));
  printf ("%s: cpu %s, memory %s, pids %lld, keep-warm %lld s, timeout %lld s (deadline %s), priority %lld\n", id, c, m,
          (long long) pids, (long long) kw, (long long) timeout, d, (long long) prio);
  return 0;
}

/* pause, resume: the runtime's freeze of the whole sandbox. */
static int
pause_resume (sbx_cli *cli, const char *verb, int argc, char **argv, sbx_error **err)
{
  int first, r = cli_simple_parse (cli, verb, argc, argv, 1, -1, &first, NULL, NULL, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  sbx_store *st;
  if (cli_store (cli, &st, err) < 0)
    return -1;
  yajl_gen g = cli->json ? cli_json_begin () : NULL;
  if (g)
    j_arr (g);
  bool pause = strcmp (verb, "pause") == 0;
  for (int i = first; i < argc; i++)
    {
      _cleanup_free_ char *id = NULL;
      if (cli_sandbox_id (cli, argv[i], &id, err) < 0 || sbx_client_pause (st, id, pause, err) < 0)
        {
          if (g)
            yajl_gen_free (g);
          return -1;
        }
      if (g)
        {
          j_map (g);
          j_kstr (g, "id", id);
          j_kbool (g, "paused", pause);
          j_endmap (g);
        }
      else
        printf ("%s\n", id);
    }
  if (g)
    {
      j_endarr (g);
      cli_json_end (g);
    }
  return 0;
}

int
cmd_pause (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  return pause_resume (cli, "pause", argc, argv, err);
}

int
cmd_resume (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  return pause_resume (cli, "resume", argc, argv, err);
}

/* sbx stats ID: what one sandbox uses now. */
static int
stats_one (sbx_cli *cli, const char *ref, sbx_error **err)
{
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  sbx_stats s;
  if (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, ref, &id, err) < 0
      || sbx_sandbox_stats (st, id, &s, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kstr (g, "id", id);
      j_kstr (g, "state", sbx_state_name (s.state));
      j_kbool (g, "paused", s.paused);
      /* What only a running sandbox has is null once it has ended. */
      if (s.running)
        {
          j_kint (g, "cpu_time_ms", s.cpu_time_ns / 1000000);
          j_kint (g, "memory", s.memory);
          j_kint (g, "pids", s.pids);
        }
      else
        {
          static const char *const gone[] = { "cpu_time_ms", "memory", "pids" };
          for (size_t i = 0; i < ARRAY_SIZE (gone); i++)
            {
              j_str (g, gone[i]);
              j_null (g);
            }
        }
      j_kint (g, "memory_peak", s.memory_peak);
      j_kint (g, "disk", s.disk);
      j_kint (g, "disk_limit", s.disk_limit);
      j_kint (g, "net_rx_bytes", s.net_rx_bytes);
      j_kint (g, "net_tx_bytes", s.net_tx_bytes);
      j_endmap (g);
      cli_json_end (g);
      return 0;
    }
  printf ("id:          %s\nstate:       %s%s\ncpu:         %.3f s\nmemory:      %.1f MiB (peak %.1f MiB)\n"
          "pids:        %lld\ndisk:        %.1f MiB written\nnetwork:     %lld bytes in, %lld bytes out\n",
          id, sbx_state_name (s.state), s.paused ? " (paused)" : "", (double) s.cpu_time_ns / 1e9,
          (double) s.memory / 1048576.0, (double) s.memory_peak / 1048576.0, (long long) s.pids,
          (double) s.disk / 1048576.0, (long long) s.net_rx_bytes, (long long) s.net_tx_bytes);
  return 0;
}

/* "USED" or "USED/MAX" (MAX < 0: no quota). */
static void
quota_text (char *buf, size_t len, double used, double max, const char *unit)
{
  if (max < 0)
    snprintf (buf, len, "%g%s", used, unit);
  else
    snprintf (buf, len, "%g/%g%s", used, max, unit);
}

/* A quota, null when none: a count, or cores when CORES. */
static void
gen_quota (yajl_gen g, const char *key, double max, bool cores)
{
  j_str (g, key);
  if (max < 0)
    j_null (g);
  else if (cores)
    j_double (g, max);
  else
    j_int (g, (long long) max);
}

/* One row per namespace (only NS's when given): what its live sandboxes
 * hold, against its quotas. */
static int
stats_namespaces (sbx_store *st, yajl_gen g, const char *ns, sbx_error **err)
{
  _cleanup_conf_ sbx_conf *conf = NULL;
  sbx_ns_usage *u;
  size_t n;
  if (sbx_conf_load (NULL, &conf, err) < 0 || sbx_ns_usage_all (st, conf, &u, &n, err) < 0)
    return -1;
  if (g)
    {
      j_str (g, "namespaces");
      j_arr (g);
    }
  else
    printf ("\n%-16s %-12s %-14s %-20s %s\n", "NAMESPACE", "SANDBOXES", "CPU", "MEMORY", "GPUS");
  for (size_t i = 0; i < n; i++)
    {
      if (ns && strcmp (ns, u[i].name) != 0)
        continue;
      const sbx_conf_namespace *q = sbx_conf_namespace_find (conf, u[i].name);
      sbx_conf_namespace none = { .max_sandboxes = -1, .max_cpu = -1, .max_memory = -1, .max_gpus = -1 };
      if (q == NULL)
        q = &none;
      if (g)
        {
          j_map (g);
          j_kstr (g, "name", u[i].name);
          j_kint (g, "sandboxes", u[i].sandboxes);
          j_str (g, "cpu");
          j_double (g, u[i].cpu);
          j_kint (g, "memory", (long long) u[i].memory);
          j_kint (g, "gpus", u[i].gpus);
          gen_quota (g, "max_sandboxes", (double) q->max_sandboxes, false);
          gen_quota (g, "max_cpu", q->max_cpu, true);
          gen_quota (g, "max_memory", (double) q->max_memory, false);
          gen_quota (g, "max_gpus", (double) q->max_gpus, false);
          j_endmap (g);
          continue;
        }
      char sb[32], cpu[32], mem[48], gpus[32];
      quota_text (sb, sizeof sb, (double) u[i].sandboxes, (double) q->max_sandboxes, "");
      quota_text (cpu, sizeof cpu, u[i].cpu, q->max_cpu, "");
      quota_text (mem, sizeof mem, (double) (u[i].memory >> 20),
                  q->max_memory < 0 ? -1 : (double) (q->max_memory >> 20), " MiB");
      quota_text (gpus, sizeof gpus, (double) u[i].gpus, (double) q->max_gpus, "");
      printf ("%-16s %-12s %-14s %-20s %s\n", u[i].name, sb, cpu, mem, gpus);
    }
  if (g)
    j_endarr (g);
  sbx_ns_usage_free (u, n);
  return 0;
}

/* The counts by state of the sandboxes of NS (NULL: all). */
static int
count_states (sbx_store *st, const char *ns, sbx_state_counts *ret, sbx_error **err)
{
  if (ns == NULL)
    return sbx_sandbox_count (st, ret, err);
  sbx_sandbox **sbs;
  size_t n;
  if (sbx_sandbox_get_all (st, &sbs, &n, err) < 0)
    return -1;
  *ret = (sbx_state_counts){ { 0 }, 0 };
  for (size_t i = 0; i < n; i++)
    if (strcmp (ns, sbx_namespace_of (&sbs[i]->opts)) == 0)
      {
        ret->n[sbs[i]->state]++;
        ret->total++;
      }
  sbx_sandboxes_free (sbs);
  return 0;
}

static int
stats_opt (void *data, int key, const char *arg, sbx_error **err)
{
  (void) key;
  *(const char **) data = arg;
  return sbx_namespace_validate (arg, err) < 0 ? sbx_error_wrap (err, "--namespace") : 0;
}

int
cmd_stats (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  const char *ns = NULL;
  int first, r = cli_simple_parse (cli, "stats", argc, argv, 0, 1, &first, stats_opt, &ns, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  if (first < argc && ns)
    return cli_usage_error (cli_find ("stats"), err,
                            "--namespace filters the counts of all sandboxes: not with a sandbox's ID");
  if (first < argc)
    return stats_one (cli, argv[first], err);
  sbx_store *st;
  sbx_state_counts c;
  if (cli_store (cli, &st, err) < 0 || count_states (st, ns, &c, err) < 0)
    return -1;
  yajl_gen g = cli->json ? cli_json_begin () : NULL;
  if (g)
    j_map (g);
  for (int s = 0; s < SBX_STATE__MAX; s++)
    {
      if (g)
        j_kint (g, sbx_state_name ((sbx_state) s), c.n[s]);
      else
        printf ("%-12s %ld\n", sbx_state_name ((sbx_state) s), c.n[s]);
    }
  if (g)
    j_kint (g, "total", c.total);
  else
    printf ("%-12s %ld\n", "total", c.total);
  if (stats_namespaces (st, g, ns, err) < 0)
    {
      if (g)
        yajl_gen_free (g);
      return -1;
    }
  if (g)
    {
      j_endmap (g);
      cli_json_end (g);
    }
  return 0;
}
