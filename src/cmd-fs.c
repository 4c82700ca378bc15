/* sbx fs, sbx cp: the sandbox's files from the host (DESIGN.md section 4),
 * through the file API (fs.h) in the root sbx_fs_root gives: the running
 * sandbox's, or the ended one's mounted for this process. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "client.h"
#include "fs.h"
#include "json.h"
#include "proto.h"
#include "monitor.h"
#include "sandbox.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { O_LIMIT = 256, O_CURSOR, O_NAME, O_PARENTS = 'p', O_RECURSIVE = 'r' };

const cli_opt sbx_fs_cli_opts[] = {
  { "limit", O_LIMIT, required_argument, "N", "ls: entries per page (1..10000, default 200)", "200 1000 10000" },
  { "cursor", O_CURSOR, required_argument, "CURSOR", "ls: the page after CURSOR (printed with the previous page)" },
  { "parents", O_PARENTS, no_argument, NULL, "mkdir: make missing parents, no error if it exists" },
  { "recursive", O_RECURSIVE, no_argument, NULL, "rmdir: remove the whole tree; watch: subdirectories too" },
  { "name", O_NAME, required_argument, "GLOB", "find, replace: only files whose name matches GLOB" },
  { NULL },
};

const cli_opt sbx_cp_cli_opts[] = { { NULL } };

struct fs_args {
  int64_t limit;
  const char *cursor, *glob;
  bool parents, recursive;
};

/* --- output ------------------------------------------------------------ */

/* Human output of a name from the sandbox: control characters (a newline
 * in a file name, an escape sequence) are shown as \xNN, never sent raw to
 * a terminal. */
static void
put_safe (FILE *f, const char *s, size_t n)
{
  for (size_t i = 0; i < n; i++)
    {
      unsigned char c = (unsigned char) s[i];
      if ((c < 0x20 && c != '\t') || c == 0x7f || c == '\\')
        fprintf (f, "\\x%02x", c);
      else
        fputc (c, f);
    }
}

static void
put_safe_str (FILE *f, const char *s)
{
  put_safe (f, s, strlen (s));
}

/* A string from the sandbox as JSON; when it is not UTF-8 the exact bytes
 * come too, as KEY_hex. */
static void
j_kbytes (yajl_gen g, const char *k, const char *s)
{
  j_kstr (g, k, s);
  if (!utf8_valid (s, strlen (s)))
    {
      _cleanup_free_ char *hk = xasprintf ("%s_hex", k);
      _cleanup_free_ char *hv = hex_encode (s, strlen (s));
      j_kstr (g, hk, hv);
    }
}

static void
entry_json (yajl_gen g, const sbx_fs_entry *e)
{
  j_map (g);
  j_kbytes (g, "name", e->name);
  j_kbytes (g, "path", e->path);
  j_kstr (g, "type", e->type);
  j_kint (g, "size", (long long) e->size);
  char mode[8];
  snprintf (mode, sizeof mode, "%04o", (unsigned) e->mode);
  j_kstr (g, "mode", mode);
  j_kint (g, "uid", e->uid);
  j_kint (g, "gid", e->gid);
  j_kint (g, "mtime", e->mtime);
  j_kint (g, "mtime_ns", e->mtime_ns);
  if (e->target)
    j_kbytes (g, "target", e->target);
  j_endmap (g);
}

static void
entry_line (const sbx_fs_entry *e)
{
  char t[32];
  format_time (e->mtime, t, sizeof t);
  printf ("%-7s %04o %12llu %s ", e->type, (unsigned) e->mode, (unsigned long long) e->size, t);
  put_safe_str (stdout, e->name);
  if (e->target)
    {
      fputs (" -> ", stdout);
      put_safe_str (stdout, e->target);
    }
  fputc ('\n', stdout);
}

static int
ok_json (sbx_cli *cli, const char *path)
{
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_kbool (g, "ok", true);
      j_kbytes (g, "path", path);
      j_endmap (g);
      cli_json_end (g);
    }
  return 0;
}

/* --- verbs ------------------------------------------------------------- */

/* With --json, what a write, upload or download wrote: PATH in the
 * sandbox, HOST_PATH (download) on the host, SIZE bytes. */
static int
size_json (sbx_cli *cli, const char *path, const char *host_path, uint64_t size)
{
  if (!cli->json)
    return 0;
  yajl_gen g = cli_json_begin ();
  j_map (g);
  j_kbytes (g, "path", path);
  if (host_path)
    j_kstr (g, "host_path", host_path);
  j_kint (g, "size", (long long) size);
  j_endmap (g);
  cli_json_end (g);
  return 0;
}

static int
fs_read (sbx_cli *cli, int root, const char *path, sbx_error **err)
{
  struct stat st;
  _cleanup_close_ int fd = -1;
  if (sbx_fs_open_read (root, path, &st, &fd, err) < 0)
    return -1;
  if (!cli->json)
    return sbx_fs_copy (fd, 1, err);
  _cleanup_close_ int mem = memfd_create ("sbx-read", MFD_CLOEXEC);
  if (mem < 0 || sbx_fs_copy (fd, mem, err) < 0)
    return mem < 0 ? sbx_error_errno (err, errno, "memfd_create") : -1;
  size_t n;
  _cleanup_free_ char *data = cli_read_back (mem, &n);
  yajl_gen g = cli_json_begin ();
  j_map (g);
  j_kbytes (g, "path", path);
  j_kint (g, "size", (long long) n);
  if (utf8_valid (data, n))
    {
      j_str (g, "content");
      j_strn (g, data, n);
    }
  else
    {
      _cleanup_free_ char *b = base64_encode (data, n);
      j_kstr (g, "content_base64", b);
    }
  j_endmap (g);
  cli_json_end (g);
  return 0;
}

/* Data from stdin into PATH, atomically. */
static int
fs_write_from (sbx_cli *cli, int root, const char *path, int in, mode_t mode, bool keep_mode, sbx_error **err)
{
  uint64_t size;
  if (sbx_fs_write_fd (root, path, in, mode, keep_mode, &size, err) < 0)
    return -1;
  return size_json (cli, path, NULL, size);
}

static int
fs_upload (sbx_cli *cli, int root, const char *host, const char *path, sbx_error **err)
{
  _cleanup_free_ char *inside = NULL;
  uint64_t size;
  if (sbx_fs_upload (root, host, path, &inside, &size, err) < 0)
    return -1;
  return size_json (cli, inside, NULL, size);
}

static int
fs_download (sbx_cli *cli, int root, const char *path, const char *host, sbx_error **err)
{
  _cleanup_free_ char *target = NULL;
  uint64_t size;
  if (sbx_fs_download (root, path, host, &target, &size, err) < 0)
    return -1;
  return size_json (cli, path, target, size);
}

static int
fs_ls (sbx_cli *cli, int root, const char *path, const struct fs_args *a, sbx_error **err)
{
  _cleanup_free_ char *cursor = NULL;
  if (a->cursor && hex_decode (a->cursor, &cursor, NULL) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--cursor: `%s` is not a cursor that ls printed", a->cursor);
  sbx_fs_entry *v;
  size_t n;
  _cleanup_free_ char *next = NULL;
  if (sbx_fs_list (root, path, cursor, (size_t) a->limit, &v, &n, &next, err) < 0)
    return -1;
  _cleanup_free_ char *next_hex = next ? hex_encode (next, strlen (next)) : NULL;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      j_map (g);
      j_str (g, "entries");
      j_arr (g);
      for (size_t i = 0; i < n; i++)
        entry_json (g, &v[i]);
      j_endarr (g);
      j_kstr (g, "next_cursor", next_hex);
      j_endmap (g);
      cli_json_end (g);
    }
  else
    {
      for (size_t i = 0; i < n; i++)
        entry_line (&v[i]);
      if (next_hex)
        fprintf (stderr, "sbx: more entries: --cursor %s\n", next_hex);
    }
  sbx_fs_entries_free (v, n);
  return 0;
}

static int
fs_stat (sbx_cli *cli, int root, const char *path, sbx_error **err)
{
  sbx_fs_entry e;
  if (sbx_fs_stat (root, path, &e, err) < 0)
    return -1;
  if (cli->json)
    {
      yajl_gen g = cli_json_begin ();
      entry_json (g, &e);
      cli_json_end (g);
    }
  else
    {
      char t[32];
      format_time (e.mtime, t, sizeof t);
      fputs ("path:   ", stdout);
      put_safe_str (stdout, e.path);
      printf ("\ntype:   %s\nsize:   %llu\nmode:   %04o\nowner:  %u:%u\nmtime:  %s\n", e.type,
              (unsigned long long) e.size, (unsigned) e.mode, (unsigned) e.uid, (unsigned) e.gid, t);
      if (e.target)
        {
          fputs ("target: ", stdout);
          put_safe_str (stdout, e.target);
          fputc ('\n', stdout);
        }
    }
  sbx_fs_entry_clear (&e);
  return 0;
}

struct out_ctx {
  yajl_gen g;
  uint64_t total;
};

static void
on_match (void *data, const char *path, uint64_t no, const char *line, size_t len)
{
  struct out_ctx *c = data;
  c->total++;
  if (c->g)
    {
      j_map (c->g);
      j_kbytes (c->g, "path", path);
      j_kint (c->g, "line", (long long) no);
      j_str (c->g, "text");
      j_strn (c->g, line, len);
      j_endmap (c->g);
      return;
    }
  put_safe_str (stdout, path);
  printf (":%llu:", (unsigned long long) no);
  put_safe (stdout, line, len);
  fputc ('\n', stdout);
}

static void
on_replaced (void *data, const char *path, uint64_t count)
{
  struct out_ctx *c = data;
  c->total += count;
  if (c->g)
    {
      j_map (c->g);
      j_kbytes (c->g, "path", path);
      j_kint (c->g, "count", (long long) count);
      j_endmap (c->g);
      return;
    }
  put_safe_str (stdout, path);
  printf (": %llu\n", (unsigned long long) count);
}

static int
fs_find_replace (sbx_cli *cli, int root, char **ops, bool replace, const struct fs_args *a, sbx_error **err)
{
  struct out_ctx c = { 0 };
  if (cli->json)
    {
      c.g = cli_json_begin ();
      j_map (c.g);
      j_str (c.g, replace ? "files" : "matches");
      j_arr (c.g);
    }
  int r = replace ? sbx_fs_replace (root, ops[0], ops[1], ops[2], a->glob, on_replaced, &c, err)
                  : sbx_fs_find (root, ops[0], ops[1], a->glob, on_match, &c, err);
  if (c.g)
    {
      if (r < 0)
        {
          yajl_gen_free (c.g);
          return -1;
        }
      j_endarr (c.g);
      j_kint (c.g, replace ? "replacements" : "count", (long long) c.total);
      j_endmap (c.g);
      cli_json_end (c.g);
    }
  return r;
}

static int
on_event (void *data, const char *event, const char *path, bool is_dir)
{
  sbx_cli *cli = data;
  if (cli->json)
    {
      _cleanup_yajl_gen_ yajl_gen g = j_new (false);
      j_map (g);
      j_kstr (g, "event", event);
      j_kbytes (g, "path", path);
      j_kbool (g, "dir", is_dir);
      j_endmap (g);
      size_t n;
      _cleanup_free_ char *s = j_take (g, &n);
      printf ("%s\n", s);
    }
  else
    {
      printf ("%s ", event);
      put_safe_str (stdout, path);
      fputs (is_dir ? "/\n" : "\n", stdout);
    }
  return fflush (stdout) == EOF && errno == EPIPE;
}

static int
fs_watch (sbx_cli *cli, const sbx_store *st, const char *id, int root, const char *path, bool recursive,
          sbx_error **err)
{
  /* Until interrupted, or until the sandbox ends (its monitor closes the
   * connection of a "wait"). */
  _cleanup_close_ int stop = -1;
  if (sbx_client_wait_fd (st, id, &stop, NULL) < 0)
    stop = -1;
  signal (SIGPIPE, SIG_IGN);
  return sbx_fs_watch (root, path, recursive, stop, on_event, cli, err);
}

/* --- sbx fs ID VERB ARGS --------------------------------------------------- */

static const struct {
  const char *verb;
  int nargs;
  bool write;
} verbs[] = {
  { "read", 1, false }, { "write", 1, true }, { "upload", 2, true },  { "download", 2, false },
  { "ls", 1, false },   { "stat", 1, false }, { "mkdir", 1, true },   { "rm", 1, true },
  { "rmdir", 1, true }, { "find", 2, false }, { "replace", 3, true }, { "watch", 1, false },
};

/* The operands that are paths in the sandbox, by verb. */
static void
sandbox_paths (const char *verb, char **ops, const char **ret, size_t *n)
{
  *n = 0;
  if (strcmp (verb, "upload") == 0)
    ret[(*n)++] = ops[1];
  else
    ret[(*n)++] = ops[0];
}

static int
fs_run (sbx_cli *cli, const sbx_store *st, const char *id, const char *verb, char **ops, const struct fs_args *a,
        sbx_error **err)
{
  size_t v = 0;
  while (v < ARRAY_SIZE (verbs) && strcmp (verbs[v].verb, verb) != 0)
    v++;
  const char *paths[2];
  size_t np;
  sandbox_paths (verb, ops, paths, &np);
  for (size_t i = 0; i < np; i++)
    if (sbx_fs_path_check (paths[i], err) < 0)
      return -1;
  _cleanup_close_ int root = -1;
  if (sbx_fs_root (st, id, verbs[v].write, &root, err) < 0)
    return -1;
  if (strcmp (verb, "read") == 0)
    return fs_read (cli, root, ops[0], err);
  if (strcmp (verb, "write") == 0)
    return fs_write_from (cli, root, ops[0], 0, 0644, true, err);
  if (strcmp (verb, "upload") == 0)
    return fs_upload (cli, root, ops[0], ops[1], err);
  if (strcmp (verb, "download") == 0)
    return fs_download (cli, root, ops[0], ops[1], err);
  if (strcmp (verb, "ls") == 0)
    return fs_ls (cli, root, ops[0], a, err);
  if (strcmp (verb, "stat") == 0)
    return fs_stat (cli, root, ops[0], err);
  if (strcmp (verb, "mkdir") == 0)
    return sbx_fs_mkdir (root, ops[0], a->parents, err) < 0 ? -1 : ok_json (cli, ops[0]);
  if (strcmp (verb, "rm") == 0)
    return sbx_fs_rm (root, ops[0], err) < 0 ? -1 : ok_json (cli, ops[0]);
  if (strcmp (verb, "rmdir") == 0)
    return sbx_fs_rmdir (root, ops[0], a->recursive, err) < 0 ? -1 : ok_json (cli, ops[0]);
  if (strcmp (verb, "find") == 0 || strcmp (verb, "replace") == 0)
    return fs_find_replace (cli, root, ops, strcmp (verb, "replace") == 0, a, err);
  return fs_watch (cli, st, id, root, ops[0], a->recursive, err);
}

/* Which options each verb takes. */
static int
check_opts (const char *verb, const struct fs_args *a, bool limit_set, sbx_error **err)
{
  bool ls = strcmp (verb, "ls") == 0, fr = strcmp (verb, "find") == 0 || strcmp (verb, "replace") == 0;
  const char *bad = (limit_set || a->cursor) && !ls                                              ? "--limit/--cursor"
                    : a->parents && strcmp (verb, "mkdir") != 0                                  ? "--parents"
                    : a->recursive && strcmp (verb, "rmdir") != 0 && strcmp (verb, "watch") != 0 ? "--recursive"
                    : a->glob && !fr                                                             ? "--name"
                                                                                                 : NULL;
  if (bad)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "fs %s: %s does not apply", verb, bad);
  return 0;
}

struct fs_parse {
  struct fs_args a;
  bool limit_set;
};

static int
fs_opt (void *data, int key, const char *arg, sbx_error **err)
{
  struct fs_parse *p = data;
  switch (key)
    {
    case O_LIMIT:
      p->limit_set = true;
      return cli_int ("limit", arg, 1, SBX_FS_LS_LIMIT_MAX, &p->a.limit, err);
    case O_CURSOR:
      p->a.cursor = arg;
      return 0;
    case O_NAME:
      p->a.glob = arg;
      return 0;
    case O_PARENTS:
      p->a.parents = true;
      return 0;
    default: /* O_RECURSIVE */
      p->a.recursive = true;
      return 0;
    }
}

int
cmd_fs (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  struct fs_parse p = { .a = { .limit = SBX_FS_LS_LIMIT_DEFAULT } };
  int first, r = cli_simple_parse (cli, "fs", argc, argv, 2, -1, &first, fs_opt, &p, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  struct fs_args a = p.a;
  bool limit_set = p.limit_set;
  const char *verb = argv[first + 1];
  size_t v = 0;
  while (v < ARRAY_SIZE (verbs) && strcmp (verbs[v].verb, verb) != 0)
    v++;
  if (v == ARRAY_SIZE (verbs))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "fs: unknown verb `%s` (read, write, upload, download, ls, stat, mkdir, rm, rmdir, find, "
                          "replace, watch)",
                          verb);
  if (argc - first - 2 != verbs[v].nargs)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "fs %s: expected %d argument%s", verb, verbs[v].nargs,
                          verbs[v].nargs > 1 ? "s" : "");
  if (check_opts (verb, &a, limit_set, err) < 0)
    return -1;
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  if (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, argv[first], &id, err) < 0)
    return -1;
  return fs_run (cli, st, id, verb, argv + first + 2, &a, err);
}

/* --- sbx cp ---------------------------------------------------------------- */

/* "REF:/path" -> REF and the path; false for a host path. */
static bool
split_remote (const char *s, char **ref, const char **path)
{
  const char *c = strchr (s, ':');
  if (c == NULL || c == s || c[1] != '/')
    return false;
  _cleanup_free_ char *r = xstrndup (s, (size_t) (c - s));
  if (!name_is_valid (r) && strncmp (r, "sb-", 3) != 0)
    return false;
  *ref = steal_pointer (&r);
  *path = c + 1;
  return true;
}

int
cmd_cp (sbx_cli *cli, int argc, char **argv, sbx_error **err)
{
  int first, r = cli_simple_parse (cli, "cp", argc, argv, 2, 2, &first, NULL, NULL, err);
  if (r != 0)
    return r < 0 ? -1 : 0;
  _cleanup_free_ char *ref_a = NULL, *ref_b = NULL;
  const char *pa = NULL, *pb = NULL;
  bool ra = split_remote (argv[first], &ref_a, &pa), rb = split_remote (argv[first + 1], &ref_b, &pb);
  if (ra == rb)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "cp: exactly one side is a sandbox path (ID:/PATH), the other a host path");
  sbx_store *st;
  _cleanup_free_ char *id = NULL;
  if (cli_store (cli, &st, err) < 0 || cli_sandbox_id (cli, ra ? ref_a : ref_b, &id, err) < 0)
    return -1;
  struct fs_args a = { .limit = SBX_FS_LS_LIMIT_DEFAULT };
  char *ops[2];
  if (ra)
    {
      ops[0] = (char *) pa;
      ops[1] = argv[first + 1];
      return fs_run (cli, st, id, "download", ops, &a, err);
    }
  ops[0] = argv[first];
  ops[1] = (char *) pb;
  return fs_run (cli, st, id, "upload", ops, &a, err);
}
