/* Runtime discovery and invocation for runc and runsc. */
#include "config.h"
#include "runtime.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

bool
sbx_runtime_name_valid (const char *name)
{
  return name && (strcmp (name, "runsc") == 0 || strcmp (name, "runc") == 0);
}

void
sbx_runtime_free (sbx_runtime *rt)
{
  if (rt == NULL)
    return;
  free (rt->name);
  free (rt->path);
  free (rt->version);
  free (rt->state_root);
  free (rt);
}

static char *
find_in_path (const char *name)
{
  const char *path = getenv ("PATH");
  _cleanup_free_ char *copy = xstrdup (path && *path ? path : SBX_DEFAULT_PATH);
  char *save = NULL;
  for (char *dir = strtok_r (copy, ":", &save); dir; dir = strtok_r (NULL, ":", &save))
    {
      char *p = xasprintf ("%s/%s", dir, name);
      if (access (p, X_OK) == 0)
        return p;
      free (p);
    }
  /* root's PATH may lack sbin directories. */
  static const char *const extra[] = { "/usr/sbin", "/sbin", "/usr/bin" };
  for (size_t i = 0; i < ARRAY_SIZE (extra); i++)
    {
      char *p = xasprintf ("%s/%s", extra[i], name);
      if (access (p, X_OK) == 0)
        return p;
      free (p);
    }
  return NULL;
}

int
sbx_runtime_find (const sbx_store *st, const char *name, sbx_runtime **ret, sbx_error **err)
{
  if (!sbx_runtime_name_valid (name))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "unknown runtime `%s` (expected runsc or runc)",
                          name ? name : "");
  const char *env = getenv (strcmp (name, "runc") == 0 ? "SBX_RUNC" : "SBX_RUNSC");
  _cleanup_free_ char *path = env && *env ? xstrdup (env) : find_in_path (name);
  struct stat s;
  if (path == NULL || stat (path, &s) < 0 || !S_ISREG (s.st_mode) || access (path, X_OK) < 0)
    return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0, "runtime %s is not installed%s%s", name,
                          path ? " at " : "", path ? path : "");
  sbx_runtime *rt = xmalloc0 (sizeof *rt);
  rt->name = xstrdup (name);
  rt->path = steal_pointer (&path);
  rt->state_root = sbx_store_run_path (st, "runtime/%s", name);
  *ret = rt;
  return 0;
}

/* Runs `RUNTIME --version`: slow (a Go binary starting), so only `sbx info`
 * and a failed start ask. */
int
sbx_runtime_probe (sbx_runtime *rt, sbx_error **err)
{
  char *argv[] = { rt->path, (char *) "--version", NULL };
  _cleanup_free_ char *out = NULL;
  int status = -1;
  if (sbx_spawn_capture (argv, 4096, &out, NULL, &status, NULL) < 0 || status != 0)
    return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0, "runtime %s (%s) does not work: `--version` failed",
                          rt->name, rt->path);
  char *nl = strchr (out, '\n');
  free (rt->version);
  rt->version = nl ? xstrndup (out, (size_t) (nl - out)) : xstrdup (out);
  return 0;
}

char **
sbx_runtime_argv (const sbx_runtime *rt, const char *verb, const char *const *args)
{
  char **v = xmalloc0 (sizeof (char *));
  strv_push (&v, rt->path);
  strv_push (&v, "--root");
  strv_push (&v, rt->state_root);
  if (strcmp (rt->name, "runsc") == 0)
    {
      /* The root is shared with host-side file calls (DESIGN.md section 4).
       * No --oci-seccomp: sbx-init loads the profile inside gVisor itself.
       * This runsc cannot run its own network stack in a namespace sbx made
       * (DESIGN.md section 8): a sandbox with a network runs on the host
       * stack inside that namespace, where sbx's rules hold; one without
       * has none. */
      strv_push (&v, "--file-access=shared");
      strv_push (&v, "--overlay2=none");
      strv_push (&v, rt->host_network ? "--network=host" : "--network=none");
      strv_push (&v, "--platform=ptrace");
      if (rt->own_cgroups)
        strv_push (&v, "--ignore-cgroups");
      if (rt->nvproxy)
        strv_push (&v, "--nvproxy");
    }
  strv_push (&v, verb);
  for (size_t i = 0; args && args[i]; i++)
    strv_push (&v, args[i]);
  return v;
}

int
sbx_runtime_call (const sbx_runtime *rt, const char *verb, const char *const *args, char **ret_stderr, sbx_error **err)
{
  _cleanup_strv_ char **argv = sbx_runtime_argv (rt, verb, args);
  int status = -1;
  if (sbx_spawn_capture (argv, 64 * 1024, NULL, ret_stderr, &status, err) < 0)
    return -1;
  return status;
}

int
sbx_runtime_destroy (const sbx_runtime *rt, const char *id, bool kill_first, sbx_error **err)
{
  const char *kill_args[] = { "--all", id, "KILL", NULL };
  const char *del_args[] = { "--force", id, NULL };
  _cleanup_free_ char *e1 = NULL, *e2 = NULL;
  if (kill_first)
    sbx_runtime_call (rt, "kill", kill_args, &e1, NULL);
  int st = sbx_runtime_call (rt, "delete", del_args, &e2, err);
  if (st < 0)
    return -1;
  _cleanup_free_ char *dir = xasprintf ("%s/%s", rt->state_root, id);
  if (st != 0 && path_exists (dir))
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s delete %s failed: %s", rt->name, id, e2 ? e2 : "");
  return 0;
}

static int
cmp_id (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* The container of a state root's entry NAME, into BUF; false if NAME is
 * none sbx knows. */
static bool
root_entry_id (const sbx_runtime *rt, const char *name, char *buf, size_t len)
{
  size_t l = strlen (name);
  if (strcmp (rt->name, "runsc") == 0)
    {
      const char *sep = strstr (name, "_sandbox:");
      if (sep == NULL)
        return false;
      l = (size_t) (sep - name);
      const char *tail = sep + strlen ("_sandbox:");
      if (strncmp (tail, name, l) != 0 || (strcmp (tail + l, ".state") != 0 && strcmp (tail + l, ".lock") != 0))
        return false;
    }
  if (l == 0 || l >= len)
    return false;
  memcpy (buf, name, l);
  buf[l] = '\0';
  return name_is_valid (buf);
}

bool
sbx_runtime_root_within (const sbx_runtime *rt, char *const *ids, size_t n)
{
  _cleanup_closedir_ DIR *d = opendir (rt->state_root);
  if (d == NULL)
    return errno == ENOENT;
  struct dirent *de;
  while ((de = readdir (d)) != NULL)
    {
      char id[256];
      const char *key = id;
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      if (!root_entry_id (rt, de->d_name, id, sizeof id) || bsearch (&key, ids, n, sizeof *ids, cmp_id) == NULL)
        return false;
    }
  return true;
}

int
sbx_runtime_list (const sbx_runtime *rt, char ***ret_ids, sbx_error **err)
{
  char **ids = xmalloc0 (sizeof (char *));
  *ret_ids = ids;
  if (!path_exists (rt->state_root))
    return 0;
  const char *args[] = { strcmp (rt->name, "runc") == 0 ? "-q" : "-quiet", NULL };
  _cleanup_strv_ char **argv = sbx_runtime_argv (rt, "list", args);
  _cleanup_free_ char *out = NULL;
  int status = -1;
  if (sbx_spawn_capture (argv, 1 << 20, &out, NULL, &status, err) < 0)
    return -1;
  if (status != 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "%s list failed (status %d)", rt->name, status);
  char *save = NULL;
  for (char *line = strtok_r (out, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    if (name_is_valid (line))
      strv_push (ret_ids, line);
  return 0;
}
