/* sbx: the entry point. Global options, the dispatch table, and the one
 * place where an error becomes a message and exit status 125. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "json.h"
#include "util.h"

#include <getopt.h>
#include <string.h>

static int cmd_help (sbx_cli *, int, char **, sbx_error **);

const sbx_command sbx_commands[] = {
  { "create", cmd_create, "[-- CMD [ARG...]]",
    "Create a sandbox and print its id; CMD, if given, starts in it as a background process.", sbx_create_opts },
  { "run", cmd_run, "[[--] CMD [ARG...]]",
    "Create a sandbox, run CMD (default: the --image's cmd) in it, terminate it; the exit status is CMD's.",
    sbx_run_opts },
  { "exec", cmd_exec, "ID [--] CMD [ARG...]", "Run CMD in a running sandbox; the exit status is CMD's.",
    sbx_exec_cli_opts },
  { "run-code", cmd_run_code, "ID (CODE | -)",
    "Run a code snippet with the image's interpreter; the exit status is the snippet's.", sbx_run_code_cli_opts },
  { "ps", cmd_ps, "ID", "List the processes started in a sandbox (running and recently ended).", sbx_ps_cli_opts },
  { "proc", cmd_proc, "ID PID status|wait|kill|logs",
    "Inspect, wait for, signal or read the output of one process of a sandbox.", sbx_proc_cli_opts },
  { "fs", cmd_fs, "ID VERB ARGS...",
    "Files of a sandbox (running or ended): read PATH, write PATH, upload HOSTFILE PATH, download PATH HOSTFILE, "
    "ls PATH, stat PATH, mkdir PATH, rm PATH, rmdir PATH, find PATH PATTERN, replace PATH OLD NEW, watch PATH.",
    sbx_fs_cli_opts },
  { "cp", cmd_cp, "ID:PATH HOSTPATH | HOSTPATH ID:PATH", "Copy a file out of or into a sandbox.", sbx_cp_cli_opts },
  { "ls", cmd_ls, NULL, "List sandboxes.", sbx_ls_opts },
  { "status", cmd_status, "ID", "Show a sandbox's state, reason, limits and lifetimes.", sbx_none_opts },
  { "wait", cmd_wait, "ID", "Block until a sandbox reaches a final state, then print it.", sbx_wait_opts },
  { "terminate", cmd_terminate, "ID...", "End sandboxes; their files stay until `sbx rm`.", sbx_terminate_opts },
  { "rm", cmd_rm, "ID...", "Remove ended sandboxes and their files.", sbx_rm_opts },
  { "logs", cmd_logs, "ID", "Print a sandbox's log (runtime and lifecycle events).", sbx_logs_opts },
  { "pause", cmd_pause, "ID...", "Freeze running sandboxes (the runtime's pause); their idle clock stops.",
    sbx_none_opts },
  { "resume", cmd_resume, "ID...", "Thaw paused sandboxes.", sbx_none_opts },
  { "commit", cmd_commit, "ID", "Save a sandbox's files (its image plus everything written since) as a new image.",
    sbx_commit_cli_opts },
  { "snapshot", cmd_snapshot, "ID",
    "Save a running sandbox's processes, memory and files (runsc) as a snapshot; the sandbox ends.",
    sbx_snapshot_cli_opts },
  { "restore", cmd_restore, "SNAPSHOT", "Start new running sandboxes from a snapshot, each as it was.",
    sbx_restore_cli_opts },
  { "snapshots", cmd_snapshots, NULL, "List snapshots.", sbx_snapshots_cli_opts },
  { "rmsnap", cmd_rmsnap, "SNAPSHOT...", "Remove snapshots.", sbx_none_opts },
  { "net", cmd_net, "ID", "Change a running sandbox's egress: --block, --allow CIDR..., or --open.", sbx_net_cli_opts },
  { "expose", cmd_expose, "ID PORT",
    "Publish a sandbox's port as a URL on the host (a token is required unless --public).", sbx_none_opts },
  { "unexpose", cmd_unexpose, "ID PORT",
    "Stop publishing a sandbox's port: its URL refuses connections and its open ones are closed.", sbx_none_opts },
  { "urls", cmd_urls, "ID", "List a sandbox's exposed ports and their URLs.", sbx_none_opts },
  { "ttl", cmd_ttl, "ID SECONDS", "Set a running sandbox's hard lifetime to SECONDS from now.", sbx_none_opts },
  { "update", cmd_update, "ID", "Change a running sandbox's limits and lifetimes at once.", sbx_update_opts },
  { "stats", cmd_stats, "[ID]", "Count sandboxes by state and namespace; with ID, what that sandbox uses now.",
    sbx_stats_opts },
  { "pool", cmd_pool, "create|ls|rm|fill [NAME...]",
    "Manage warm pools of started sandboxes: create NAME --size N [create options], ls, rm NAME..., fill NAME.",
    sbx_pool_cli_opts },
  { "volume", cmd_volume, "create|ls|inspect|rm|export|import [NAME...] [FILE]",
    "Manage named volumes: create NAME, ls, inspect NAME..., rm NAME..., export NAME FILE, import NAME FILE.",
    sbx_volume_cli_opts },
  { "images", cmd_images, NULL, "List images.", sbx_images_opts },
  { "pull", cmd_pull, "REF", "Pull an image from a registry (REF: [REGISTRY/]NAME[:TAG][@DIGEST]) and print its id.",
    sbx_pull_cli_opts },
  { "import", cmd_import, "FILE|DIR",
    "Import an image: a rootfs tarball (tar, .gz, .xz, .zst), an OCI layout or archive, or a docker save archive.",
    sbx_import_opts },
  { "export", cmd_export, "IMAGE FILE", "Write an image as an OCI archive that podman and docker load.",
    sbx_export_opts },
  { "push", cmd_push, "IMAGE REF",
    "Push an image to a registry as an OCI image (REF: [REGISTRY/]NAME[:TAG]); prints the manifest digest.",
    sbx_push_opts },
  { "build", cmd_build, "[CONTEXT]",
    "Build a blueprint (JSON, see sbx-blueprint(5)) into an image, step by step, from the cache where it can.",
    sbx_build_cli_opts },
  { "tag", cmd_tag, "IMAGE NAME", "Give an image another name (a tag); a tag moves to the new image.", sbx_none_opts },
  { "rmi", cmd_rmi, "IMAGE...", "Remove images (or one of several tags); refused while a sandbox uses one.",
    sbx_rmi_opts },
  { "login", cmd_login, "REGISTRY", "Log in to REGISTRY: check a user name and password with it, then store them.",
    sbx_login_opts },
  { "logout", cmd_logout, "REGISTRY | --all", "Remove stored credentials for REGISTRY, or for all registries.",
    sbx_logout_opts },
  { "secret", cmd_secret, "create NAME | ls | rm NAME...",
    "Store secrets for --secret and --secret-file (create reads the value from stdin or --from-file), list or "
    "remove them.",
    sbx_secret_cli_opts },
  { "audit", cmd_audit, NULL, "Print the audit log: which sandboxes were given which secrets, when, by whom.",
    sbx_audit_cli_opts },
  { "info", cmd_info, NULL, "Report what this host supports.", sbx_none_opts },
  { "gc", cmd_gc, NULL, "Reap lost sandboxes; remove ended ones and orphaned host resources.", sbx_none_opts },
  { "version", cmd_version, NULL, "Print the version.", sbx_none_opts },
  { "help", cmd_help, "[COMMAND]", "Show this help, or COMMAND's (as `sbx COMMAND --help`).", sbx_none_opts },
  { NULL },
};

static void
usage (FILE *f)
{
  fprintf (f, "Usage: sbx [--root DIR] [--run-root DIR] [--json] COMMAND [OPTIONS] [ARGS]\n\n"
              "Run untrusted code in local sandboxes under gVisor (runsc) or runc.\n\nCommands:\n");
  for (const sbx_command *c = sbx_commands; c->name; c++)
    fprintf (f, "  %-10s %s\n", c->name, c->summary);
  fprintf (f, "\nGlobal options:\n"
              "  --root DIR       state directory (default $SBX_ROOT, else /var/lib/sbx)\n"
              "  --run-root DIR   runtime directory (default $SBX_RUN_ROOT, else /run/sbx)\n"
              "  --json           print one JSON document on stdout\n"
              "  --version        print the version\n"
              "  -h, --help       show this help\n\n"
              "Run `sbx COMMAND --help` or `sbx help COMMAND` for a command's options.\n");
}

/* sbx help [COMMAND]: what --help prints, as podman help does. */
static int
cmd_help (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int first, r = cli_simple_parse (cli, "help", argc, argv, 0, 1, &first, NULL, NULL, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  if (first == argc)
    {
      usage (stdout);
      return 0;
    }
  const sbx_command *cmd = cli_find (argv[first]);
  if (cmd == NULL)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "help: unknown command `%s` (see `sbx help`)", argv[first]);
  cli_print_help (stdout, cmd);
  return 0;
}

static int
report_error (sbx_cli *cli, sbx_error *err)
{
  _cleanup_free_ char *text = sbx_error_text (err);
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_str (g, "error");
      j_map (g);
      j_kstr (g, "code", sbx_code_name (err->code));
      j_kstr (g, "message", text);
      j_endmap (g);
      j_endmap (g);
      cli_json_end (g);
    }
  fflush (stdout);
  fprintf (stderr, "sbx: %s: %s\n", sbx_code_name (err->code), text);
  return SBX_EXIT_ERROR;
}

enum { G_ROOT = 256, G_RUN_ROOT, G_JSON, G_VERSION };

static int
parse_global (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  static const struct option lo[] = {
    { "root", required_argument, NULL, G_ROOT }, { "run-root", required_argument, NULL, G_RUN_ROOT },
    { "json", no_argument, NULL, G_JSON },       { "version", no_argument, NULL, G_VERSION },
    { "help", no_argument, NULL, 'h' },          { NULL, 0, NULL, 0 },
  };
  opterr = 0;
  int c;
  while ((c = getopt_long (argc, argv, "+:h", lo, NULL)) != -1)
    switch (c)
      {
      case G_ROOT:
        cli->root = optarg;
        break;
      case G_RUN_ROOT:
        cli->run_root = optarg;
        break;
      case G_JSON:
        cli->json = true;
        break;
      case G_VERSION:
        printf ("sbx %s\n", SBX_VERSION);
        exit (0);
      case 'h':
        usage (stdout);
        exit (0);
      default:
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "unknown or incomplete global option `%s`",
                              argv[optind - 1]);
      }
  return optind;
}

int
main (int argc, char **argv)
{
  sbx_cli cli = { .root = getenv ("SBX_ROOT"), .run_root = getenv ("SBX_RUN_ROOT") };
  _cleanup_error_ sbx_error *err = NULL;
  int ind = parse_global (&cli, argc, argv, &err);
  if (ind < 0)
    return report_error (&cli, err);
  if (ind >= argc)
    {
      usage (stderr);
      return SBX_EXIT_ERROR;
    }
  /* Hidden: writes a completion script from its template (make completions). */
  if (strcmp (argv[ind], "__complete-gen") == 0 && ind + 2 == argc)
    return cli_complete_gen (stdin, stdout, argv[ind + 1], &err) < 0 ? report_error (&cli, err) : 0;
  const sbx_command *cmd = cli_find (argv[ind]);
  if (cmd == NULL)
    {
      sbx_error_set (&err, SBX_E_INVALID_ARGUMENT, 0, "unknown command `%s` (see `sbx --help`)", argv[ind]);
      return report_error (&cli, err);
    }
  int r = cmd->fn (&cli, argc - ind, argv + ind, &err);
  sbx_store_free (cli.st);
  if (r < 0)
    return report_error (&cli, err);
  return r;
}
