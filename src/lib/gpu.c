/* GPUs (gpu.h): the --gpu grammar, discovery of the host's NVIDIA GPUs and
 * CDI specs, the choice of GPUs for a request, the runtime rule, and the
 * edits a sandbox's spec gains. The CDI parser is cdi.c. */
#include "config.h"
#include "gpu.h"
#include "conf.h"
#include "json.h"
#include "runtime.h"
#include "spawn.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The test-only knobs (gpu.h): for root alone, so that no caller who is
 * not can point discovery at a tree of their own. */
static const char *
test_env (const char *name)
{
  if (getuid () != 0 || geteuid () != 0)
    return NULL;
  const char *v = getenv (name);
  return v && *v ? v : NULL;
}

/* --gpu */

static int
parse_count (const char *s, unsigned max, unsigned *ret)
{
  int64_t v;
  if (s[0] < '0' || s[0] > '9' || parse_int64 (s, 0, max, &v) < 0)
    return -1;
  *ret = (unsigned) v;
  return 0;
}

static int
parse_indexes (const char *s, sbx_gpu_request *r, sbx_error **err)
{
  _cleanup_free_ char *copy = xstrdup (s);
  char *save = NULL;
  r->kind = SBX_GPU_REQ_INDEXES;
  for (char *tok = strtok_r (copy, ",", &save); tok; tok = strtok_r (NULL, ",", &save))
    {
      unsigned idx;
      if (parse_count (tok, SBX_GPUS_MAX - 1, &idx) < 0)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--gpu: `%s` is not a GPU index (0 to %d)", tok,
                              SBX_GPUS_MAX - 1);
      for (size_t i = 0; i < r->nindexes; i++)
        if (r->indexes[i] == idx)
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--gpu: GPU %u is named twice", idx);
      r->indexes[r->nindexes++] = idx;
    }
  if (r->nindexes == 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--gpu: `%s` names no GPU", s);
  return 0;
}

static bool
type_char_ok (char c)
{
  return isalnum ((unsigned char) c) || c == '-' || c == '_' || c == '.' || c == ' ';
}

int
sbx_gpu_request_parse (const char *s, sbx_gpu_request *ret, sbx_error **err)
{
  sbx_gpu_request r = { .count = 1 };
  if (s == NULL || s[0] == '\0')
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "--gpu: empty (expected all, N, INDEX,..., UUID or TYPE[:N])");
  if (strlen (s) > 256)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--gpu: longer than 256 bytes");
  if (strcmp (s, "all") == 0)
    r.kind = SBX_GPU_REQ_ALL;
  else if (strspn (s, "0123456789,") == strlen (s) && strchr (s, ','))
    {
      if (parse_indexes (s, &r, err) < 0)
        return -1;
    }
  else if (strspn (s, "0123456789") == strlen (s))
    {
      r.kind = SBX_GPU_REQ_COUNT;
      if (parse_count (s, SBX_GPUS_MAX, &r.count) < 0 || r.count == 0)
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--gpu: `%s` is not a number of GPUs from 1 to %d", s,
                              SBX_GPUS_MAX);
    }
  else if (strncmp (s, "GPU-", 4) == 0)
    {
      if (s[4] == '\0' || strspn (s + 4, "0123456789abcdefABCDEF-") != strlen (s + 4))
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--gpu: `%s` is not a GPU UUID (GPU-hex-digits)", s);
      r.kind = SBX_GPU_REQ_UUID;
      r.name = xstrdup (s);
    }
  else
    {
      const char *colon = strrchr (s, ':');
      size_t n = colon ? (size_t) (colon - s) : strlen (s);
      for (size_t i = 0; i < n; i++)
        if (!type_char_ok (s[i]))
          return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                                "--gpu: `%s` is not all, N, INDEX,INDEX, a UUID or TYPE[:N] (TYPE: letters, digits, "
                                "-_. and spaces)",
                                s);
      if (n == 0 || !isalnum ((unsigned char) s[0]))
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--gpu: `%s`: the TYPE is empty", s);
      if (colon && (parse_count (colon + 1, SBX_GPUS_MAX, &r.count) < 0 || r.count == 0))
        return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "--gpu: `%s`: N is not a number of GPUs from 1 to %d", s,
                              SBX_GPUS_MAX);
      r.kind = SBX_GPU_REQ_TYPE;
      r.name = xstrndup (s, n);
    }
  *ret = r;
  return 0;
}

int
sbx_gpu_request_check (const char *s, sbx_error **err)
{
  sbx_gpu_request r;
  if (sbx_gpu_request_parse (s, &r, err) < 0)
    return -1;
  sbx_gpu_request_clear (&r);
  return 0;
}

void
sbx_gpu_request_clear (sbx_gpu_request *r)
{
  free (r->name);
  r->name = NULL;
}

/* Discovery */

static void
gpu_clear (sbx_gpu *g)
{
  free (g->bus);
  free (g->model);
  free (g->uuid);
}

void
sbx_gpu_host_clear (sbx_gpu_host *h)
{
  for (size_t i = 0; i < h->ngpus; i++)
    gpu_clear (&h->gpus[i]);
  free (h->gpus);
  for (size_t i = 0; i < h->nspecs; i++)
    sbx_cdi_spec_free (h->specs[i]);
  free (h->specs);
  free (h->found);
  memset (h, 0, sizeof *h);
}

/* The value of `KEY: value` in a driver information file, trimmed. */
static char *
info_value (const char *text, const char *key)
{
  size_t kl = strlen (key);
  for (const char *line = text; line && *line; line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL)
    {
      if (strncmp (line, key, kl) != 0 || line[kl] != ':')
        continue;
      const char *v = line + kl + 1;
      v += strspn (v, " \t");
      size_t n = strcspn (v, "\n");
      while (n > 0 && isspace ((unsigned char) v[n - 1]))
        n--;
      if (n == 0 || n > 256)
        return NULL;
      _cleanup_free_ char *s = xstrndup (v, n);
      return printable_token (s, 256) || strchr (s, ' ') ? steal_pointer (&s) : NULL;
    }
  return NULL;
}

static int
cmp_str (const void *a, const void *b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

/* The sorted names in DIR that FILTER accepts, at most MAX; NULL when DIR
 * is missing. */
static char **
dir_names (const char *dir, bool (*filter) (const char *), size_t max)
{
  _cleanup_closedir_ DIR *d = opendir (dir);
  if (d == NULL)
    return NULL;
  char **v = xmalloc0 (sizeof (char *));
  struct dirent *de;
  while ((de = readdir (d)) && strv_len (v) < max)
    if (de->d_name[0] != '.' && filter (de->d_name))
      strv_push (&v, de->d_name);
  qsort (v, strv_len (v), sizeof *v, cmp_str);
  return v;
}

static bool
any_name (const char *n)
{
  return n[0] != '\0';
}

static void
probe_driver (sbx_gpu_host *h)
{
  const char *root = test_env ("SBX_NVIDIA_PROC");
  _cleanup_free_ char *dir = xasprintf ("%s/gpus", root ? root : "/proc/driver/nvidia");
  _cleanup_strv_ char **buses = dir_names (dir, any_name, SBX_GPUS_MAX);
  for (size_t i = 0; buses && buses[i]; i++)
    {
      _cleanup_free_ char *path = xasprintf ("%s/%s/information", dir, buses[i]);
      _cleanup_free_ char *text = NULL;
      size_t len;
      if (read_file (path, 64 * 1024, &text, &len, NULL) < 0)
        continue;
      sbx_gpu g = { .index = (unsigned) h->ngpus, .minor = -1 };
      g.bus = xstrdup (buses[i]);
      g.model = info_value (text, "Model");
      g.uuid = info_value (text, "GPU UUID");
      _cleanup_free_ char *minor = info_value (text, "Device Minor");
      int64_t m;
      if (minor && parse_int64 (minor, 0, 255, &m) == 0)
        g.minor = m;
      h->gpus = xrealloc (h->gpus, (h->ngpus + 1) * sizeof *h->gpus);
      h->gpus[h->ngpus++] = g;
    }
}

/* Memory is not in the driver's files: nvidia-smi's, matched by UUID. */
static void
probe_memory (sbx_gpu_host *h)
{
  if (h->ngpus == 0)
    return;
  const char *smi = test_env ("SBX_NVIDIA_SMI");
  char *argv[] = { (char *) (smi ? smi : "nvidia-smi"), (char *) "--query-gpu=uuid,memory.total",
                   (char *) "--format=csv,noheader,nounits", NULL };
  _cleanup_free_ char *out = NULL;
  int status = -1;
  if (sbx_spawn_capture (argv, 64 * 1024, &out, NULL, &status, NULL) < 0 || status != 0 || out == NULL)
    return;
  char *save = NULL;
  for (char *line = strtok_r (out, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      char *comma = strchr (line, ',');
      if (comma == NULL)
        continue;
      *comma = '\0';
      const char *mib = comma + 1 + strspn (comma + 1, " ");
      int64_t v;
      if (parse_int64 (mib, 1, 1LL << 30, &v) < 0)
        continue;
      for (size_t i = 0; i < h->ngpus; i++)
        if (h->gpus[i].uuid && strcmp (h->gpus[i].uuid, line) == 0)
          h->gpus[i].memory = (uint64_t) v << 20;
    }
}

static bool
spec_name (const char *n)
{
  size_t l = strlen (n);
  return (l > 5 && strcmp (n + l - 5, ".yaml") == 0) || (l > 4 && strcmp (n + l - 4, ".yml") == 0)
         || (l > 5 && strcmp (n + l - 5, ".json") == 0);
}

/* A spec names hooks sbx's runtime runs as root: only root may have
 * written it. */
static int
read_spec (const char *path, sbx_cdi_spec **ret, sbx_error **err)
{
  _cleanup_close_ int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat s;
  if (fd < 0 || fstat (fd, &s) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, errno, "CDI spec %s: cannot open: %s", path, strerror (errno));
  if (!S_ISREG (s.st_mode) || s.st_uid != 0 || (s.st_mode & 022))
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "CDI spec %s: not a regular file owned by root and writable by root alone", path);
  _cleanup_free_ char *text = NULL;
  size_t len;
  int r = read_fd (fd, SBX_CDI_SIZE_MAX + 1, &text, &len);
  if (r < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, -r, "CDI spec %s: cannot read", path);
  return sbx_cdi_parse (path, text, len, ret, err);
}

static int
probe_cdi (sbx_gpu_host *h, sbx_error **err)
{
  const char *dirs = test_env ("SBX_CDI_DIRS");
  _cleanup_free_ char *copy = xstrdup (dirs ? dirs : "/etc/cdi:/var/run/cdi");
  char *save = NULL;
  size_t files = 0;
  for (char *dir = strtok_r (copy, ":", &save); dir; dir = strtok_r (NULL, ":", &save))
    {
      _cleanup_strv_ char **names = dir_names (dir, spec_name, SBX_CDI_FILES_MAX + 1);
      for (size_t i = 0; names && names[i]; i++)
        {
          if (++files > SBX_CDI_FILES_MAX)
            return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "more than %d CDI specs in %s", SBX_CDI_FILES_MAX,
                                  dirs ? dirs : "/etc/cdi and /var/run/cdi");
          _cleanup_free_ char *path = xasprintf ("%s/%s", dir, names[i]);
          sbx_cdi_spec *s = NULL;
          if (read_spec (path, &s, err) < 0)
            return -1;
          if (strcmp (s->kind, SBX_CDI_KIND) != 0)
            {
              sbx_cdi_spec_free (s);
              continue;
            }
          h->specs = xrealloc (h->specs, (h->nspecs + 1) * sizeof *h->specs);
          h->specs[h->nspecs++] = s;
        }
    }
  h->cdi = h->nspecs > 0;
  return 0;
}

/* With a CDI spec and no driver files (a host whose /proc sbx cannot
 * read), the GPUs are the spec's devices named by index. */
static void
gpus_from_cdi (sbx_gpu_host *h)
{
  for (unsigned idx = 0; idx < SBX_GPUS_MAX; idx++)
    {
      char name[16];
      snprintf (name, sizeof name, "%u", idx);
      bool found = false;
      for (size_t s = 0; s < h->nspecs && !found; s++)
        for (size_t d = 0; d < h->specs[s]->ndevices && !found; d++)
          found = strcmp (h->specs[s]->devices[d].name, name) == 0;
      if (!found)
        return;
      h->gpus = xrealloc (h->gpus, (h->ngpus + 1) * sizeof *h->gpus);
      h->gpus[h->ngpus++] = (sbx_gpu){ .index = idx, .minor = -1 };
    }
}

static char *
found_text (const sbx_gpu_host *h)
{
  if (h->ngpus == 0)
    return xstrdup ("no GPU found (no NVIDIA driver in /proc/driver/nvidia, no CDI spec of kind " SBX_CDI_KIND ")");
  char *s = xasprintf ("%zu GPU%s found:", h->ngpus, h->ngpus == 1 ? "" : "s");
  for (size_t i = 0; i < h->ngpus; i++)
    {
      char *t = xasprintf ("%s%s %u %s (%s)", s, i ? "," : "", h->gpus[i].index,
                           h->gpus[i].model ? h->gpus[i].model : "model unknown",
                           h->gpus[i].uuid ? h->gpus[i].uuid : "UUID unknown");
      free (s);
      s = t;
    }
  return s;
}

int
sbx_gpu_host_probe (sbx_gpu_host *ret, sbx_error **err)
{
  sbx_gpu_host h = { NULL };
  probe_driver (&h);
  if (probe_cdi (&h, err) < 0)
    {
      sbx_gpu_host_clear (&h);
      return -1;
    }
  if (h.ngpus == 0)
    gpus_from_cdi (&h);
  probe_memory (&h);
  h.found = found_text (&h);
  *ret = h;
  return 0;
}

/* Selection */

/* TYPE's words (split at spaces, '-' and '_') appear in order, one after
 * another, among the model's: RTX-A4500 matches "NVIDIA RTX A4500", A100
 * matches "NVIDIA A100-SXM4-80GB" and A10 does not. */
static bool
type_matches (const char *type, const char *model)
{
  if (model == NULL)
    return false;
  _cleanup_free_ char *t = xstrdup (type), *m = xstrdup (model);
  const char *sep = " -_";
  char *tw[32], *mw[32];
  size_t nt = 0, nm = 0;
  char *save = NULL;
  for (char *w = strtok_r (t, sep, &save); w && nt < 32; w = strtok_r (NULL, sep, &save))
    tw[nt++] = w;
  save = NULL;
  for (char *w = strtok_r (m, sep, &save); w && nm < 32; w = strtok_r (NULL, sep, &save))
    mw[nm++] = w;
  for (size_t start = 0; nt > 0 && start + nt <= nm; start++)
    {
      size_t k = 0;
      while (k < nt && strcasecmp (tw[k], mw[start + k]) == 0)
        k++;
      if (k == nt)
        return true;
    }
  return false;
}

static int
unavailable (const sbx_gpu_host *h, sbx_error **err, const char *what)
{
  return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0, "%s: %s", what, h->found);
}

int
sbx_gpu_select (const sbx_gpu_host *h, const sbx_gpu_request *req, size_t *ret_pos, size_t *ret_n, sbx_error **err)
{
  size_t n = 0;
  if (h->ngpus == 0)
    return unavailable (h, err, "a GPU was asked for");
  switch (req->kind)
    {
    case SBX_GPU_REQ_ALL:
      for (size_t i = 0; i < h->ngpus; i++)
        ret_pos[n++] = i;
      break;
    case SBX_GPU_REQ_COUNT:
      if (req->count > h->ngpus)
        {
          _cleanup_free_ char *w = xasprintf ("%u GPUs were asked for", req->count);
          return unavailable (h, err, w);
        }
      for (size_t i = 0; i < req->count; i++)
        ret_pos[n++] = i;
      break;
    case SBX_GPU_REQ_INDEXES:
      for (size_t k = 0; k < req->nindexes; k++)
        {
          size_t i = 0;
          while (i < h->ngpus && h->gpus[i].index != req->indexes[k])
            i++;
          if (i == h->ngpus)
            {
              _cleanup_free_ char *w = xasprintf ("GPU %u was asked for", req->indexes[k]);
              return unavailable (h, err, w);
            }
          ret_pos[n++] = i;
        }
      break;
    case SBX_GPU_REQ_UUID:
      for (size_t i = 0; i < h->ngpus && n == 0; i++)
        if (h->gpus[i].uuid && strcasecmp (h->gpus[i].uuid, req->name) == 0)
          ret_pos[n++] = i;
      if (n == 0)
        {
          _cleanup_free_ char *w = xasprintf ("GPU %s was asked for", req->name);
          return unavailable (h, err, w);
        }
      break;
    case SBX_GPU_REQ_TYPE:
      for (size_t i = 0; i < h->ngpus && n < req->count; i++)
        if (type_matches (req->name, h->gpus[i].model))
          ret_pos[n++] = i;
      if (n < req->count)
        {
          _cleanup_free_ char *w = xasprintf ("%u GPU%s of type %s %s asked for", req->count,
                                              req->count == 1 ? "" : "s", req->name, req->count == 1 ? "was" : "were");
          return unavailable (h, err, w);
        }
      break;
    }
  *ret_n = n;
  return 0;
}

/* Edits */

static char *
host_dev_path (const char *p)
{
  const char *root = test_env ("SBX_DEV_ROOT");
  if (root && strncmp (p, "/dev/", 5) == 0)
    return xasprintf ("%s/%s", root, p + 5);
  return xstrdup (p);
}

/* The node's host side, checked against what the spec says of it. */
static int
resolve_node (sbx_cdi_node *d, sbx_error **err)
{
  _cleanup_free_ char *host = host_dev_path (d->host_path ? d->host_path : d->path);
  struct stat s;
  if (stat (host, &s) < 0)
    return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, errno, "GPU device %s: %s", host, strerror (errno));
  char type = S_ISCHR (s.st_mode) ? 'c' : S_ISBLK (s.st_mode) ? 'b' : 0;
  if (type == 0 || (d->type && d->type != type))
    return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0, "GPU device %s is not a %s device", host,
                          d->type == 'b' ? "block" : "character");
  if ((d->major >= 0 && d->major != (int64_t) major (s.st_rdev))
      || (d->minor >= 0 && d->minor != (int64_t) minor (s.st_rdev)))
    return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0, "GPU device %s is %u:%u, not the %lld:%lld its spec says",
                          host, major (s.st_rdev), minor (s.st_rdev), (long long) d->major, (long long) d->minor);
  d->type = type;
  d->major = major (s.st_rdev);
  d->minor = minor (s.st_rdev);
  if (d->file_mode < 0)
    d->file_mode = s.st_mode & 0777;
  return 0;
}

static void
add_node (sbx_cdi_edits *e, const sbx_cdi_node *n)
{
  for (size_t i = 0; i < e->nnodes; i++)
    if (strcmp (e->nodes[i].path, n->path) == 0)
      return;
  e->nodes = xrealloc (e->nodes, (e->nnodes + 1) * sizeof *e->nodes);
  e->nodes[e->nnodes++] = (sbx_cdi_node){ .path = xstrdup (n->path),
                                          .host_path = n->host_path ? xstrdup (n->host_path) : NULL,
                                          .type = n->type,
                                          .major = n->major,
                                          .minor = n->minor,
                                          .file_mode = n->file_mode,
                                          .uid = n->uid,
                                          .gid = n->gid,
                                          .permissions = n->permissions ? xstrdup (n->permissions) : NULL };
}

static void
add_mount (sbx_cdi_edits *e, const char *host, const char *dest, char *const *options)
{
  for (size_t i = 0; i < e->nmounts; i++)
    if (strcmp (e->mounts[i].container_path, dest) == 0)
      return;
  e->mounts = xrealloc (e->mounts, (e->nmounts + 1) * sizeof *e->mounts);
  e->mounts[e->nmounts++] = (sbx_cdi_mount){ .host_path = xstrdup (host),
                                             .container_path = xstrdup (dest),
                                             .options = options ? strv_dup (options) : NULL };
}

static void
add_edits (sbx_cdi_edits *e, const sbx_cdi_edits *from)
{
  for (size_t i = 0; from->env && from->env[i]; i++)
    {
      if (e->env == NULL)
        e->env = xmalloc0 (sizeof (char *));
      strv_env_set (&e->env, from->env[i]);
    }
  for (size_t i = 0; i < from->nnodes; i++)
    add_node (e, &from->nodes[i]);
  for (size_t i = 0; i < from->nmounts; i++)
    add_mount (e, from->mounts[i].host_path, from->mounts[i].container_path, from->mounts[i].options);
  for (size_t i = 0; i < from->nhooks; i++)
    {
      const sbx_cdi_hook *h = &from->hooks[i];
      e->hooks = xrealloc (e->hooks, (e->nhooks + 1) * sizeof *e->hooks);
      e->hooks[e->nhooks++] = (sbx_cdi_hook){ .hook_name = xstrdup (h->hook_name),
                                              .path = xstrdup (h->path),
                                              .args = h->args ? strv_dup (h->args) : NULL,
                                              .env = h->env ? strv_dup (h->env) : NULL,
                                              .timeout = h->timeout };
    }
}

static const sbx_cdi_device *
cdi_device (const sbx_gpu_host *h, const sbx_gpu *g, size_t *ret_spec)
{
  char idx[16];
  snprintf (idx, sizeof idx, "%u", g->index);
  for (size_t s = 0; s < h->nspecs; s++)
    for (size_t d = 0; d < h->specs[s]->ndevices; d++)
      {
        const char *n = h->specs[s]->devices[d].name;
        if (strcmp (n, idx) == 0 || (g->uuid && strcmp (n, g->uuid) == 0))
          {
            *ret_spec = s;
            return &h->specs[s]->devices[d];
          }
      }
  return NULL;
}

static int
edits_cdi (const sbx_gpu_host *h, const size_t *pos, size_t n, sbx_cdi_edits *e, sbx_error **err)
{
  bool used[SBX_CDI_FILES_MAX] = { false };
  for (size_t i = 0; i < n; i++)
    {
      size_t s = 0;
      const sbx_cdi_device *d = cdi_device (h, &h->gpus[pos[i]], &s);
      if (d == NULL)
        return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0,
                              "GPU %u: no CDI spec of kind " SBX_CDI_KIND " names a device for it (by index or UUID)",
                              h->gpus[pos[i]].index);
      if (!used[s])
        add_edits (e, &h->specs[s]->edits);
      used[s] = true;
      add_edits (e, &d->edits);
    }
  for (size_t i = 0; i < e->nmounts; i++)
    if (!path_exists (e->mounts[i].host_path))
      return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0, "CDI mount %s: the host has no such path",
                            e->mounts[i].host_path);
  return 0;
}

/* The driver's user-space libraries (what nvidia-container-toolkit's list
 * names), 64-bit, as `ldconfig -p` lists them. */
static bool
driver_library (const char *name)
{
  static const char *const prefixes[] = { "libcuda.so",    "libcudadebugger.so", "libnvidia-",
                                          "libnvcuvid.so", "libnvoptix.so",      NULL };
  for (size_t i = 0; prefixes[i]; i++)
    if (strncmp (name, prefixes[i], strlen (prefixes[i])) == 0)
      return true;
  return strstr (name, "_nvidia.so") != NULL;
}

static void
add_ldconfig_libs (sbx_cdi_edits *e)
{
  const char *prog = test_env ("SBX_LDCONFIG");
  if (prog == NULL)
    prog = path_exists ("/sbin/ldconfig") ? "/sbin/ldconfig" : "ldconfig";
  char *argv[] = { (char *) prog, (char *) "-p", NULL };
  _cleanup_free_ char *out = NULL;
  int status = -1;
  if (sbx_spawn_capture (argv, 4 << 20, &out, NULL, &status, NULL) < 0 || status != 0 || out == NULL)
    return;
  char *save = NULL;
  for (char *line = strtok_r (out, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      /* "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1" */
      line += strspn (line, " \t");
      char *sp = strchr (line, ' ');
      char *arrow = strstr (line, " => ");
      if (sp == NULL || arrow == NULL)
        continue;
      *sp = '\0';
      const char *path = arrow + 4;
      if (!driver_library (line) || strstr (sp + 1, "64") == NULL || path[0] != '/' || strstr (path, "/../"))
        continue;
      if (path_exists (path))
        add_mount (e, path, path, NULL);
    }
}

static int
edits_direct (const sbx_gpu_host *h, const size_t *pos, size_t n, sbx_cdi_edits *e, sbx_error **err)
{
  static const char *const control[] = { "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", NULL };
  for (size_t i = 0; i < n; i++)
    {
      const sbx_gpu *g = &h->gpus[pos[i]];
      if (g->minor < 0)
        return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0, "GPU %u: the driver names no device minor", g->index);
      _cleanup_free_ char *p = xasprintf ("/dev/nvidia%lld", (long long) g->minor);
      add_node (e, &(sbx_cdi_node){ .path = p, .major = -1, .minor = -1, .file_mode = -1, .uid = -1, .gid = -1 });
    }
  for (size_t i = 0; control[i]; i++)
    {
      _cleanup_free_ char *p = xasprintf ("/dev/%s", control[i]);
      _cleanup_free_ char *host = host_dev_path (p);
      if (i == 0 && !path_exists (host))
        return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0, "the NVIDIA driver made no %s", host);
      if (path_exists (host))
        add_node (e, &(sbx_cdi_node){ .path = p, .major = -1, .minor = -1, .file_mode = -1, .uid = -1, .gid = -1 });
    }
  add_ldconfig_libs (e);
  const char *smi = test_env ("SBX_NVIDIA_SMI");
  if (smi == NULL && path_exists ("/usr/bin/nvidia-smi"))
    smi = "/usr/bin/nvidia-smi";
  if (smi)
    add_mount (e, smi, "/usr/bin/nvidia-smi", NULL);
  return 0;
}

int
sbx_gpu_edits (const sbx_gpu_host *h, const size_t *pos, size_t n, sbx_cdi_edits *ret, sbx_error **err)
{
  sbx_cdi_edits e = { NULL };
  int r = h->cdi ? edits_cdi (h, pos, n, &e, err) : edits_direct (h, pos, n, &e, err);
  for (size_t i = 0; r == 0 && i < e.nnodes; i++)
    r = resolve_node (&e.nodes[i], err);
  if (r < 0)
    {
      sbx_cdi_edits_clear (&e);
      return -1;
    }
  *ret = e;
  return 0;
}

char **
sbx_gpu_device_rules (const sbx_cdi_edits *e)
{
  char **v = xmalloc0 (sizeof (char *));
  for (size_t i = 0; i < e->nnodes; i++)
    {
      _cleanup_free_ char *s = xasprintf ("%c %lld:%lld %s", e->nodes[i].type, (long long) e->nodes[i].major,
                                          (long long) e->nodes[i].minor,
                                          e->nodes[i].permissions ? e->nodes[i].permissions : "rwm");
      strv_push (&v, s);
    }
  return v;
}

/* The runtime rule */

bool
sbx_gpu_runsc_nvproxy (const char *runsc_path)
{
  const char *t = test_env ("SBX_RUNSC_NVPROXY");
  if (t)
    return strcmp (t, "1") == 0;
  char *argv[] = { (char *) runsc_path, (char *) "flags", NULL };
  _cleanup_free_ char *out = NULL, *errs = NULL;
  int status = -1;
  if (sbx_spawn_capture (argv, 1 << 20, &out, &errs, &status, NULL) < 0 || status != 0)
    return false;
  return (out && strstr (out, "-nvproxy ")) || (errs && strstr (errs, "-nvproxy "));
}

static int
runtime_rule (const sbx_store *st, sbx_sandbox_opts *o, sbx_error **err)
{
  if (o->runtime_default)
    {
      _cleanup_conf_ sbx_conf *conf = NULL;
      if (sbx_conf_load (NULL, &conf, err) < 0)
        return -1;
      if (conf->gpu_runtime_runc)
        {
          free (o->runtime);
          o->runtime = xstrdup ("runc");
        }
    }
  if (strcmp (o->runtime, "runc") == 0)
    return 0;
  _cleanup_runtime_ sbx_runtime *rt = NULL;
  if (sbx_runtime_find (st, o->runtime, &rt, err) < 0)
    return -1;
  if (sbx_gpu_runsc_nvproxy (rt->path))
    return 0;
  return sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0,
                        "a GPU sandbox under runsc needs its --nvproxy, which this runsc (%s) lacks: pass --runtime "
                        "runc, or set gpu_runtime = runc in sbx.conf",
                        rt->path);
}

void
sbx_gpu_got_clear (sbx_gpu_got *g)
{
  free (g->mode);
  strv_free (g->list);
  strv_free (g->env);
  memset (g, 0, sizeof *g);
}

int
sbx_gpu_assign (const sbx_store *st, sbx_sandbox_opts *o, sbx_gpu_got *ret, sbx_error **err)
{
  if (o->gpus == NULL)
    return 0;
  sbx_gpu_request req;
  if (sbx_gpu_request_parse (o->gpus, &req, err) < 0)
    return -1;
  sbx_gpu_host h = { NULL };
  size_t pos[SBX_GPUS_MAX], n = 0;
  sbx_cdi_edits e = { NULL };
  int r = runtime_rule (st, o, err);
  if (r == 0)
    r = sbx_gpu_host_probe (&h, err);
  if (r == 0)
    r = sbx_gpu_select (&h, &req, pos, &n, err);
  if (r == 0)
    r = sbx_gpu_edits (&h, pos, n, &e, err);
  if (r == 0)
    {
      sbx_gpu_got g = { .mode = xstrdup (h.cdi ? "cdi" : "direct"), .list = xmalloc0 (sizeof (char *)) };
      for (size_t i = 0; i < n; i++)
        {
          const sbx_gpu *gpu = &h.gpus[pos[i]];
          _cleanup_free_ char *s = xasprintf ("%u %s %s", gpu->index, gpu->uuid ? gpu->uuid : "-",
                                              gpu->model ? gpu->model : "-");
          strv_push (&g.list, s);
        }
      g.env = steal_pointer (&e.env);
      *ret = g;
    }
  sbx_cdi_edits_clear (&e);
  sbx_gpu_host_clear (&h);
  sbx_gpu_request_clear (&req);
  return r;
}

int
sbx_gpu_sandbox_edits (const sbx_sandbox *sb, sbx_cdi_edits *ret, sbx_error **err)
{
  sbx_gpu_host h = { NULL };
  if (sbx_gpu_host_probe (&h, err) < 0)
    return -1;
  size_t pos[SBX_GPUS_MAX], n = 0;
  int r = 0;
  if (strcmp (sb->gpu_mode ? sb->gpu_mode : "", h.cdi ? "cdi" : "direct") != 0)
    r = sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0, "the GPUs were to be passed %s; the host now has %s",
                       sb->gpu_mode ? sb->gpu_mode : "-", h.cdi ? "a CDI spec" : "none");
  for (size_t k = 0; r == 0 && sb->gpu_list && sb->gpu_list[k] && n < SBX_GPUS_MAX; k++)
    {
      unsigned idx;
      char uuid[128];
      if (sscanf (sb->gpu_list[k], "%u %127s", &idx, uuid) != 2)
        r = sbx_error_set (err, SBX_E_INTERNAL, 0, "the record's GPU `%s` does not parse", sb->gpu_list[k]);
      size_t i = 0;
      while (r == 0 && i < h.ngpus && h.gpus[i].index != idx)
        i++;
      if (r == 0
          && (i == h.ngpus || (strcmp (uuid, "-") != 0 && (!h.gpus[i].uuid || strcmp (h.gpus[i].uuid, uuid) != 0))))
        r = sbx_error_set (err, SBX_E_RUNTIME_UNAVAILABLE, 0, "GPU %u (%s) is gone: %s", idx, uuid, h.found);
      if (r == 0)
        pos[n++] = i;
    }
  if (r == 0)
    r = sbx_gpu_edits (&h, pos, n, ret, err);
  sbx_gpu_host_clear (&h);
  return r;
}

/* sbx info */

void
sbx_gpu_host_gen (void *gv, const sbx_gpu_host *h)
{
  yajl_gen g = gv;
  j_map (g);
  j_kstr (g, "passed", h->ngpus == 0 ? NULL : h->cdi ? "cdi" : "direct");
  j_str (g, "cdi_specs");
  j_arr (g);
  for (size_t i = 0; i < h->nspecs; i++)
    j_str (g, h->specs[i]->path);
  j_endarr (g);
  j_str (g, "devices");
  j_arr (g);
  for (size_t i = 0; i < h->ngpus; i++)
    {
      const sbx_gpu *d = &h->gpus[i];
      j_map (g);
      j_kint (g, "index", d->index);
      j_kstr (g, "model", d->model);
      j_kstr (g, "uuid", d->uuid);
      j_str (g, "memory");
      if (d->memory)
        j_int (g, (long long) d->memory);
      else
        j_null (g);
      j_kstr (g, "bus", d->bus);
      j_endmap (g);
    }
  j_endarr (g);
  j_endmap (g);
}
