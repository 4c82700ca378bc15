/* The Container Device Interface spec parser (gpu.h): YAML through libyaml's
 * document loader, JSON through yajl turned into the same document, then
 * one strict walk over the fields sbx knows. A CDI spec is outside input
 * (the vendor's tool writes it, sbx runs its hooks as root): every key is
 * known or refused, every list and string is bounded, and the walk has a
 * fixed depth whatever the document's nesting. */
#include "config.h"
#include "gpu.h"
#include "json.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef struct cdi_ctx {
  yaml_document_t *doc;
  const char *name;
  sbx_error **err;
  size_t budget; /* strings left to read: aliases make a small file a large walk */
} cdi_ctx;

static int __attribute__ ((format (printf, 3, 4))) bad (cdi_ctx *c, const char *where, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  _cleanup_free_ char *msg = NULL;
  if (vasprintf (&msg, fmt, ap) < 0)
    abort ();
  va_end (ap);
  /* The spec's own bytes are in WHERE and MSG: escaped, and cut. */
  _cleanup_free_ char *all = xasprintf ("%s: %s", where, msg);
  _cleanup_free_ char *shown = printable_escaped (all, 512);
  return sbx_error_set (c->err, SBX_E_INVALID_ARGUMENT, 0, "CDI spec %s: %s", c->name, shown);
}

static yaml_node_t *
node (cdi_ctx *c, int id)
{
  return yaml_document_get_node (c->doc, id);
}

static bool
is_null (const yaml_node_t *n)
{
  if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return false;
  const char *v = (const char *) n->data.scalar.value;
  return v[0] == '\0' || strcmp (v, "~") == 0 || strcmp (v, "null") == 0 || strcmp (v, "Null") == 0
         || strcmp (v, "NULL") == 0;
}

static int
get_str (cdi_ctx *c, const char *where, yaml_node_t *n, char **ret)
{
  if (n->type != YAML_SCALAR_NODE || is_null (n))
    return bad (c, where, "expected a string");
  if (c->budget == 0)
    return bad (c, where, "more than %d strings in all", SBX_CDI_STRINGS_MAX);
  c->budget--;
  size_t len = n->data.scalar.length;
  const char *v = (const char *) n->data.scalar.value;
  if (len > SBX_CDI_STR_MAX)
    return bad (c, where, "longer than %d bytes", SBX_CDI_STR_MAX);
  if (memchr (v, '\0', len))
    return bad (c, where, "contains a NUL byte");
  free (*ret);
  *ret = xstrndup (v, len);
  return 0;
}

static int
get_int (cdi_ctx *c, const char *where, yaml_node_t *n, int64_t max, int64_t *ret)
{
  _cleanup_free_ char *s = NULL;
  if (get_str (c, where, n, &s) < 0)
    return -1;
  int64_t v;
  /* fileMode is written in octal in YAML (0666) and in decimal in JSON. */
  bool octal = s[0] == '0' && s[1] != '\0';
  const char *digits = octal ? (s[1] == 'o' ? s + 2 : s + 1) : s;
  char *end = NULL;
  errno = 0;
  long long x = digits[0] >= '0' && digits[0] <= '9' ? strtoll (digits, &end, octal ? 8 : 10) : -1;
  if (end == NULL || *end != '\0' || errno != 0 || x < 0 || x > max)
    return bad (c, where, "`%s` is not a number from 0 to %lld", s, (long long) max);
  v = x;
  *ret = v;
  return 0;
}

static int
get_strv (cdi_ctx *c, const char *where, yaml_node_t *n, bool env, char ***ret)
{
  if (n->type != YAML_SEQUENCE_NODE)
    return bad (c, where, "expected a list of strings");
  size_t count = (size_t) (n->data.sequence.items.top - n->data.sequence.items.start);
  if (count > SBX_CDI_LIST_MAX)
    return bad (c, where, "more than %d entries", SBX_CDI_LIST_MAX);
  _cleanup_strv_ char **v = xmalloc0 (sizeof (char *));
  for (size_t i = 0; i < count; i++)
    {
      _cleanup_free_ char *s = NULL;
      if (get_str (c, where, node (c, n->data.sequence.items.start[i]), &s) < 0)
        return -1;
      if (env && !env_entry_is_valid (s))
        return bad (c, where, "`%s` is not KEY=VALUE", s);
      strv_push (&v, s);
    }
  strv_free (*ret);
  *ret = steal_pointer (&v);
  return 0;
}

/* Calls FN for each pair of map N with its key, refusing a key given twice. */
typedef int (*pair_fn) (cdi_ctx *c, const char *where, const char *key, yaml_node_t *value, void *data);

static int
each_pair (cdi_ctx *c, const char *where, yaml_node_t *n, pair_fn fn, void *data)
{
  if (n->type != YAML_MAPPING_NODE)
    return bad (c, where, "expected a mapping");
  size_t count = (size_t) (n->data.mapping.pairs.top - n->data.mapping.pairs.start);
  if (count > SBX_CDI_LIST_MAX)
    return bad (c, where, "more than %d keys", SBX_CDI_LIST_MAX);
  for (size_t i = 0; i < count; i++)
    {
      yaml_node_pair_t *p = &n->data.mapping.pairs.start[i];
      _cleanup_free_ char *key = NULL;
      if (get_str (c, where, node (c, p->key), &key) < 0)
        return -1;
      for (size_t j = 0; j < i; j++)
        {
          yaml_node_t *k = node (c, n->data.mapping.pairs.start[j].key);
          if (strcmp ((const char *) k->data.scalar.value, key) == 0)
            return bad (c, where, "the key `%s` is given twice", key);
        }
      yaml_node_t *v = node (c, p->value);
      if (is_null (v))
        continue; /* an absent optional field */
      _cleanup_free_ char *sub = xasprintf ("%s.%s", where, key);
      if (fn (c, sub, key, v, data) < 0)
        return -1;
    }
  return 0;
}

/* Calls FN for each item of list N, bounded by MAX, as WHERE[i]. */
typedef int (*item_fn) (cdi_ctx *c, const char *where, yaml_node_t *item, void *data);

static int
each_item (cdi_ctx *c, const char *where, yaml_node_t *n, size_t max, item_fn fn, void *data)
{
  if (n->type != YAML_SEQUENCE_NODE)
    return bad (c, where, "expected a list");
  size_t count = (size_t) (n->data.sequence.items.top - n->data.sequence.items.start);
  if (count > max)
    return bad (c, where, "more than %zu entries", max);
  for (size_t i = 0; i < count; i++)
    {
      _cleanup_free_ char *sub = xasprintf ("%s[%zu]", where, i);
      if (fn (c, sub, node (c, n->data.sequence.items.start[i]), data) < 0)
        return -1;
    }
  return 0;
}

static bool
path_ok (const char *p)
{
  if (p[0] != '/')
    return false;
  for (const char *s = p; *s;)
    {
      size_t n = strcspn (s, "/");
      if (n == 2 && s[0] == '.' && s[1] == '.')
        return false;
      s += n;
      s += strspn (s, "/");
    }
  return true;
}

static int
check_path (cdi_ctx *c, const char *where, const char *p)
{
  if (!path_ok (p))
    return bad (c, where, "`%s` is not an absolute path without `..`", p);
  return 0;
}

static int
node_pair (cdi_ctx *c, const char *where, const char *key, yaml_node_t *v, void *data)
{
  sbx_cdi_node *d = data;
  if (strcmp (key, "path") == 0)
    return get_str (c, where, v, &d->path) < 0 ? -1 : check_path (c, where, d->path);
  if (strcmp (key, "hostPath") == 0)
    return get_str (c, where, v, &d->host_path) < 0 ? -1 : check_path (c, where, d->host_path);
  if (strcmp (key, "type") == 0)
    {
      _cleanup_free_ char *t = NULL;
      if (get_str (c, where, v, &t) < 0)
        return -1;
      if (strcmp (t, "c") != 0 && strcmp (t, "u") != 0 && strcmp (t, "b") != 0)
        return bad (c, where, "`%s` is not c, u or b", t);
      d->type = t[0] == 'u' ? 'c' : t[0];
      return 0;
    }
  if (strcmp (key, "major") == 0)
    return get_int (c, where, v, 0xfff, &d->major);
  if (strcmp (key, "minor") == 0)
    return get_int (c, where, v, 0xfffff, &d->minor);
  if (strcmp (key, "fileMode") == 0)
    return get_int (c, where, v, 07777, &d->file_mode);
  if (strcmp (key, "uid") == 0)
    return get_int (c, where, v, UINT32_MAX - 1, &d->uid);
  if (strcmp (key, "gid") == 0)
    return get_int (c, where, v, UINT32_MAX - 1, &d->gid);
  if (strcmp (key, "permissions") == 0)
    {
      if (get_str (c, where, v, &d->permissions) < 0)
        return -1;
      if (d->permissions[0] == '\0' || strspn (d->permissions, "rwm") != strlen (d->permissions)
          || strlen (d->permissions) > 3)
        return bad (c, where, "`%s` is not made of r, w and m", d->permissions);
      return 0;
    }
  return bad (c, where, "unknown key");
}

static int
node_item (cdi_ctx *c, const char *where, yaml_node_t *n, void *data)
{
  sbx_cdi_edits *e = data;
  e->nodes = xrealloc (e->nodes, (e->nnodes + 1) * sizeof *e->nodes);
  sbx_cdi_node *d = &e->nodes[e->nnodes++];
  *d = (sbx_cdi_node){ .major = -1, .minor = -1, .file_mode = -1, .uid = -1, .gid = -1 };
  if (each_pair (c, where, n, node_pair, d) < 0)
    return -1;
  if (d->path == NULL)
    return bad (c, where, "no path");
  return 0;
}

static int
mount_pair (cdi_ctx *c, const char *where, const char *key, yaml_node_t *v, void *data)
{
  sbx_cdi_mount *m = data;
  if (strcmp (key, "hostPath") == 0)
    return get_str (c, where, v, &m->host_path) < 0 ? -1 : check_path (c, where, m->host_path);
  if (strcmp (key, "containerPath") == 0)
    return get_str (c, where, v, &m->container_path) < 0 ? -1 : check_path (c, where, m->container_path);
  if (strcmp (key, "options") == 0)
    return get_strv (c, where, v, false, &m->options);
  if (strcmp (key, "type") == 0)
    {
      _cleanup_free_ char *t = NULL;
      if (get_str (c, where, v, &t) < 0)
        return -1;
      /* Bind mounts only: a spec's tmpfs or the like is a mount sbx has
       * not vetted. */
      if (strcmp (t, "bind") != 0)
        return bad (c, where, "`%s`: only bind mounts are supported", t);
      return 0;
    }
  return bad (c, where, "unknown key");
}

static int
mount_item (cdi_ctx *c, const char *where, yaml_node_t *n, void *data)
{
  sbx_cdi_edits *e = data;
  e->mounts = xrealloc (e->mounts, (e->nmounts + 1) * sizeof *e->mounts);
  sbx_cdi_mount *m = &e->mounts[e->nmounts++];
  *m = (sbx_cdi_mount){ NULL };
  if (each_pair (c, where, n, mount_pair, m) < 0)
    return -1;
  if (m->host_path == NULL || m->container_path == NULL)
    return bad (c, where, "a mount needs hostPath and containerPath");
  for (size_t i = 0; m->options && m->options[i]; i++)
    if (strcmp (m->options[i], "rw") == 0 || strcmp (m->options[i], "suid") == 0 || strcmp (m->options[i], "dev") == 0)
      return bad (c, where, "option `%s`: sbx binds a spec's mounts read-only, nosuid, nodev", m->options[i]);
  return 0;
}

static const char *const hook_names[] = {
  "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop", NULL
};

static int
hook_pair (cdi_ctx *c, const char *where, const char *key, yaml_node_t *v, void *data)
{
  sbx_cdi_hook *h = data;
  if (strcmp (key, "hookName") == 0)
    {
      if (get_str (c, where, v, &h->hook_name) < 0)
        return -1;
      for (size_t i = 0; hook_names[i]; i++)
        if (strcmp (hook_names[i], h->hook_name) == 0)
          return 0;
      return bad (c, where, "`%s` is not an OCI hook", h->hook_name);
    }
  if (strcmp (key, "path") == 0)
    return get_str (c, where, v, &h->path) < 0 ? -1 : check_path (c, where, h->path);
  if (strcmp (key, "args") == 0)
    return get_strv (c, where, v, false, &h->args);
  if (strcmp (key, "env") == 0)
    return get_strv (c, where, v, true, &h->env);
  if (strcmp (key, "timeout") == 0)
    return get_int (c, where, v, 3600, &h->timeout);
  return bad (c, where, "unknown key");
}

static int
hook_item (cdi_ctx *c, const char *where, yaml_node_t *n, void *data)
{
  sbx_cdi_edits *e = data;
  e->hooks = xrealloc (e->hooks, (e->nhooks + 1) * sizeof *e->hooks);
  sbx_cdi_hook *h = &e->hooks[e->nhooks++];
  *h = (sbx_cdi_hook){ .timeout = -1 };
  if (each_pair (c, where, n, hook_pair, h) < 0)
    return -1;
  if (h->hook_name == NULL || h->path == NULL)
    return bad (c, where, "a hook needs hookName and path");
  return 0;
}

static int
edits_pair (cdi_ctx *c, const char *where, const char *key, yaml_node_t *v, void *data)
{
  sbx_cdi_edits *e = data;
  if (strcmp (key, "env") == 0)
    return get_strv (c, where, v, true, &e->env);
  if (strcmp (key, "deviceNodes") == 0)
    return each_item (c, where, v, SBX_CDI_LIST_MAX, node_item, e);
  if (strcmp (key, "mounts") == 0)
    return each_item (c, where, v, SBX_CDI_LIST_MAX, mount_item, e);
  if (strcmp (key, "hooks") == 0)
    return each_item (c, where, v, SBX_CDI_LIST_MAX, hook_item, e);
  /* What sbx cannot give is refused, never dropped: an empty list is fine. */
  if (strcmp (key, "additionalGIDs") == 0 || strcmp (key, "netDevices") == 0 || strcmp (key, "intelRdt") == 0)
    {
      bool empty = (v->type == YAML_SEQUENCE_NODE && v->data.sequence.items.top == v->data.sequence.items.start)
                   || (v->type == YAML_MAPPING_NODE && v->data.mapping.pairs.top == v->data.mapping.pairs.start);
      return empty ? 0 : bad (c, where, "sbx does not support this edit");
    }
  return bad (c, where, "unknown key");
}

static int
annotation_pair (cdi_ctx *c, const char *where, const char *key, yaml_node_t *v, void *data)
{
  _cleanup_free_ char *s = NULL;
  return get_str (c, where, v, &s);
}

static bool
device_name_ok (const char *s)
{
  /* CDI's device names: [A-Za-z0-9][A-Za-z0-9_.:-]*. */
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= '0' && s[0] <= '9')))
    return false;
  return strspn (s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-") == strlen (s);
}

static int
device_pair (cdi_ctx *c, const char *where, const char *key, yaml_node_t *v, void *data)
{
  sbx_cdi_device *d = data;
  if (strcmp (key, "name") == 0)
    {
      if (get_str (c, where, v, &d->name) < 0)
        return -1;
      return device_name_ok (d->name) ? 0 : bad (c, where, "`%s` is not a device name", d->name);
    }
  if (strcmp (key, "containerEdits") == 0)
    return each_pair (c, where, v, edits_pair, &d->edits);
  if (strcmp (key, "annotations") == 0)
    return each_pair (c, where, v, annotation_pair, NULL);
  return bad (c, where, "unknown key");
}

static int
device_item (cdi_ctx *c, const char *where, yaml_node_t *n, void *data)
{
  sbx_cdi_spec *s = data;
  s->devices = xrealloc (s->devices, (s->ndevices + 1) * sizeof *s->devices);
  sbx_cdi_device *d = &s->devices[s->ndevices++];
  *d = (sbx_cdi_device){ NULL };
  if (each_pair (c, where, n, device_pair, d) < 0)
    return -1;
  if (d->name == NULL)
    return bad (c, where, "a device needs a name");
  for (size_t i = 0; i + 1 < s->ndevices; i++)
    if (strcmp (s->devices[i].name, d->name) == 0)
      return bad (c, where, "the device `%s` is named twice", d->name);
  return 0;
}

static int
spec_pair (cdi_ctx *c, const char *where, const char *key, yaml_node_t *v, void *data)
{
  sbx_cdi_spec *s = data;
  if (strcmp (key, "cdiVersion") == 0)
    return get_str (c, where, v, &s->version);
  if (strcmp (key, "kind") == 0)
    {
      if (get_str (c, where, v, &s->kind) < 0)
        return -1;
      const char *slash = strchr (s->kind, '/');
      if (slash == NULL || slash == s->kind || slash[1] == '\0' || strchr (slash + 1, '/'))
        return bad (c, where, "`%s` is not VENDOR/CLASS", s->kind);
      return 0;
    }
  if (strcmp (key, "devices") == 0)
    return each_item (c, where, v, SBX_CDI_DEVICES_MAX, device_item, s);
  if (strcmp (key, "containerEdits") == 0)
    return each_pair (c, where, v, edits_pair, &s->edits);
  if (strcmp (key, "annotations") == 0)
    return each_pair (c, where, v, annotation_pair, NULL);
  return bad (c, where, "unknown key");
}

/* A yajl value as nodes of DOC, at most 16 deep (a CDI spec is 8). */
static int
json_to_yaml (yaml_document_t *doc, yajl_val v, int depth)
{
  if (depth > 16)
    return 0;
  if (YAJL_IS_OBJECT (v))
    {
      int m = yaml_document_add_mapping (doc, NULL, YAML_BLOCK_MAPPING_STYLE);
      for (size_t i = 0; m && i < v->u.object.len; i++)
        {
          const char *k = v->u.object.keys[i];
          int kn = yaml_document_add_scalar (doc, NULL, (yaml_char_t *) k, (int) strlen (k),
                                             YAML_DOUBLE_QUOTED_SCALAR_STYLE);
          int vn = json_to_yaml (doc, v->u.object.values[i], depth + 1);
          if (!kn || !vn || !yaml_document_append_mapping_pair (doc, m, kn, vn))
            return 0;
        }
      return m;
    }
  if (YAJL_IS_ARRAY (v))
    {
      int s = yaml_document_add_sequence (doc, NULL, YAML_BLOCK_SEQUENCE_STYLE);
      for (size_t i = 0; s && i < v->u.array.len; i++)
        {
          int item = json_to_yaml (doc, v->u.array.values[i], depth + 1);
          if (!item || !yaml_document_append_sequence_item (doc, s, item))
            return 0;
        }
      return s;
    }
  const char *text = YAJL_IS_STRING (v)   ? v->u.string
                     : YAJL_IS_NUMBER (v) ? v->u.number.r
                     : YAJL_IS_TRUE (v)   ? "true"
                     : YAJL_IS_FALSE (v)  ? "false"
                                          : "null";
  return yaml_document_add_scalar (doc, NULL, (yaml_char_t *) text, (int) strlen (text),
                                   YAJL_IS_STRING (v) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE);
}

static int
load_json (cdi_ctx *c, const char *text, size_t len, yaml_document_t *doc)
{
  _cleanup_yajl_val_ yajl_val v = NULL;
  _cleanup_free_ char *what = xasprintf ("CDI spec %s", c->name);
  if (j_parse (text, len, SBX_CDI_SIZE_MAX, what, &v, c->err) < 0)
    return -1;
  if (!yaml_document_initialize (doc, NULL, NULL, NULL, 1, 1))
    abort ();
  if (json_to_yaml (doc, v, 0) == 0)
    {
      yaml_document_delete (doc);
      return bad (c, "(document)", "nested too deep or not valid UTF-8");
    }
  return 0;
}

static int
load_yaml (cdi_ctx *c, const char *text, size_t len, yaml_document_t *doc)
{
  yaml_parser_t parser;
  if (!yaml_parser_initialize (&parser))
    abort ();
  yaml_parser_set_input_string (&parser, (const unsigned char *) text, len);
  int r = 0;
  if (!yaml_parser_load (&parser, doc))
    {
      r = bad (c, "(document)", "not valid YAML: %s at line %zu", parser.problem ? parser.problem : "error",
               parser.problem_mark.line + 1);
      yaml_parser_delete (&parser);
      return r;
    }
  yaml_document_t next;
  if (!yaml_parser_load (&parser, &next))
    r = bad (c, "(document)", "not valid YAML: %s at line %zu", parser.problem ? parser.problem : "error",
             parser.problem_mark.line + 1);
  else
    {
      if (yaml_document_get_root_node (&next) != NULL)
        r = bad (c, "(document)", "more than one YAML document");
      yaml_document_delete (&next);
    }
  yaml_parser_delete (&parser);
  if (r < 0)
    yaml_document_delete (doc);
  return r;
}

int
sbx_cdi_parse (const char *name, const char *text, size_t len, sbx_cdi_spec **ret, sbx_error **err)
{
  cdi_ctx c = { .name = name, .err = err, .budget = SBX_CDI_STRINGS_MAX };
  if (len > SBX_CDI_SIZE_MAX)
    return bad (&c, "(document)", "larger than %d bytes", SBX_CDI_SIZE_MAX);
  size_t skip = 0;
  while (skip < len && strchr (" \t\r\n", text[skip]) && text[skip])
    skip++;
  yaml_document_t doc;
  if ((skip < len && text[skip] == '{' ? load_json (&c, text, len, &doc) : load_yaml (&c, text, len, &doc)) < 0)
    return -1;
  c.doc = &doc;
  sbx_cdi_spec *s = xmalloc0 (sizeof *s);
  s->path = xstrdup (name);
  int r = 0;
  yaml_node_t *root = yaml_document_get_root_node (&doc);
  if ((size_t) (doc.nodes.top - doc.nodes.start) > SBX_CDI_NODES_MAX)
    r = bad (&c, "(document)", "more than %d nodes", SBX_CDI_NODES_MAX);
  else if (root == NULL)
    r = bad (&c, "(document)", "empty");
  else if (each_pair (&c, "spec", root, spec_pair, s) < 0)
    r = -1;
  else if (s->version == NULL || s->kind == NULL)
    r = bad (&c, "spec", "cdiVersion and kind are required");
  yaml_document_delete (&doc);
  if (r < 0)
    {
      sbx_cdi_spec_free (s);
      return -1;
    }
  *ret = s;
  return 0;
}

void
sbx_cdi_edits_clear (sbx_cdi_edits *e)
{
  strv_free (e->env);
  for (size_t i = 0; i < e->nnodes; i++)
    {
      free (e->nodes[i].path);
      free (e->nodes[i].host_path);
      free (e->nodes[i].permissions);
    }
  free (e->nodes);
  for (size_t i = 0; i < e->nmounts; i++)
    {
      free (e->mounts[i].host_path);
      free (e->mounts[i].container_path);
      strv_free (e->mounts[i].options);
    }
  free (e->mounts);
  for (size_t i = 0; i < e->nhooks; i++)
    {
      free (e->hooks[i].hook_name);
      free (e->hooks[i].path);
      strv_free (e->hooks[i].args);
      strv_free (e->hooks[i].env);
    }
  free (e->hooks);
  memset (e, 0, sizeof *e);
}

void
sbx_cdi_spec_free (sbx_cdi_spec *s)
{
  if (s == NULL)
    return;
  for (size_t i = 0; i < s->ndevices; i++)
    {
      free (s->devices[i].name);
      sbx_cdi_edits_clear (&s->devices[i].edits);
    }
  free (s->devices);
  sbx_cdi_edits_clear (&s->edits);
  free (s->path);
  free (s->version);
  free (s->kind);
  free (s);
}
