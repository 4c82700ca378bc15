/* The commands: one function per command (src/cmd-*.c), reached from the
 * dispatch table in sbx.c, and the option table each one parses with
 * (cli.h's cli_opt, which also carries the option's help). A command parses
 * its arguments, calls the library, prints; it does no library work. */
#ifndef SBX_COMMANDS_H
#define SBX_COMMANDS_H

#include "cli.h"

/* cmd-sandbox.c: the lifecycle. */
int cmd_create (sbx_cli *, int, char **, sbx_error **);
int cmd_run (sbx_cli *, int, char **, sbx_error **);
int cmd_ls (sbx_cli *, int, char **, sbx_error **);
int cmd_status (sbx_cli *, int, char **, sbx_error **);
int cmd_wait (sbx_cli *, int, char **, sbx_error **);
int cmd_terminate (sbx_cli *, int, char **, sbx_error **);
int cmd_rm (sbx_cli *, int, char **, sbx_error **);
int cmd_logs (sbx_cli *, int, char **, sbx_error **);
int cmd_ttl (sbx_cli *, int, char **, sbx_error **);
int cmd_update (sbx_cli *, int, char **, sbx_error **);
int cmd_pause (sbx_cli *, int, char **, sbx_error **);
int cmd_resume (sbx_cli *, int, char **, sbx_error **);
int cmd_stats (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_update_opts[];
/* create's options, for sbx pool create (cmd-pool.c): the defaults; one
 * option applied to O (1 if KEY is one of them, 0 if not, -1 on error);
 * an option's long name from its key. */
struct sbx_sandbox_opts;
void cli_create_defaults (struct sbx_sandbox_opts *o);
int cli_create_opt (struct sbx_sandbox_opts *o, int key, const char *arg, sbx_error **err);
const char *cli_create_opt_name (int key);
#define CLI_O_POOL_SIZE 900

/* cmd-pool.c: warm pools. */
int cmd_pool (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_pool_cli_opts[];
/* create/run --pool POOL: a parked member claimed with A's options (GIVEN:
 * the long names of those given, IMAGE_ID: --image's), or one made cold
 * when the pool is empty; a refill is started either way. */
struct sbx_sandbox;
int cli_pool_claim (sbx_cli *cli, sbx_store *st, const char *pool, struct sbx_sandbox_opts *a, char *const *given,
                    const char *image_id, struct sbx_sandbox **ret, sbx_error **err);
extern const cli_opt sbx_create_opts[], sbx_run_opts[], sbx_none_opts[], sbx_stats_opts[], sbx_ls_opts[],
    sbx_wait_opts[], sbx_terminate_opts[], sbx_rm_opts[], sbx_logs_opts[];

/* cmd-exec.c: commands in a sandbox. */
int cmd_exec (sbx_cli *, int, char **, sbx_error **);
int cmd_run_code (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_exec_cli_opts[], sbx_run_code_cli_opts[];

/* cmd-proc.c: the processes of a sandbox. */
int cmd_ps (sbx_cli *, int, char **, sbx_error **);
int cmd_proc (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_ps_cli_opts[], sbx_proc_cli_opts[];

/* cmd-fs.c: the files of a sandbox. */
int cmd_fs (sbx_cli *, int, char **, sbx_error **);
int cmd_cp (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_fs_cli_opts[], sbx_cp_cli_opts[];

/* cmd-build.c: images from blueprints and from sandboxes. */
int cmd_build (sbx_cli *, int, char **, sbx_error **);
int cmd_commit (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_build_cli_opts[], sbx_commit_cli_opts[];

/* cmd-snapshot.c: snapshots. */
int cmd_snapshot (sbx_cli *, int, char **, sbx_error **);
int cmd_restore (sbx_cli *, int, char **, sbx_error **);
int cmd_snapshots (sbx_cli *, int, char **, sbx_error **);
int cmd_rmsnap (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_snapshot_cli_opts[], sbx_restore_cli_opts[], sbx_snapshots_cli_opts[];

/* cmd-image.c: images. */
int cmd_images (sbx_cli *, int, char **, sbx_error **);
int cmd_import (sbx_cli *, int, char **, sbx_error **);
int cmd_export (sbx_cli *, int, char **, sbx_error **);
int cmd_tag (sbx_cli *, int, char **, sbx_error **);
int cmd_rmi (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_images_opts[], sbx_import_opts[], sbx_export_opts[], sbx_rmi_opts[];

/* cmd-registry.c: images from registries. */
int cmd_pull (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_pull_cli_opts[];

/* cmd-push.c: images to registries. */
int cmd_push (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_push_opts[];

/* cmd-net.c: a sandbox's network. */
int cmd_net (sbx_cli *, int, char **, sbx_error **);
int cmd_expose (sbx_cli *, int, char **, sbx_error **);
int cmd_unexpose (sbx_cli *, int, char **, sbx_error **);
int cmd_urls (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_net_cli_opts[];

/* cmd-volume.c: named volumes. */
int cmd_volume (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_volume_cli_opts[];
/* cmd-secret.c: secrets and the audit log. */
int cmd_secret (sbx_cli *, int, char **, sbx_error **);
int cmd_audit (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_secret_cli_opts[], sbx_audit_cli_opts[];

/* cmd-system.c: the host. */
int cmd_info (sbx_cli *, int, char **, sbx_error **);
int cmd_gc (sbx_cli *, int, char **, sbx_error **);
int cmd_version (sbx_cli *, int, char **, sbx_error **);

/* cmd-login.c: registry credentials. */
int cmd_login (sbx_cli *, int, char **, sbx_error **);
int cmd_logout (sbx_cli *, int, char **, sbx_error **);
extern const cli_opt sbx_login_opts[], sbx_logout_opts[];

#endif
