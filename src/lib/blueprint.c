/* Blueprint parsing: strict, every key and value checked (see blueprint.h). */
#include "config.h"
#include "blueprint.h"
#include "imageref.h"
#include "json.h"
#include "util.h"

#include <regex.h>
#include <string.h>

#define LIST_MAX 1000
#define STRING_MAX (64 * 1024)

static const char *const step_names[SBX_STEP__MAX] = {
  [SBX_STEP_APT_PACKAGES] = "apt_packages",
  [SBX_STEP_PYTHON_VERSION] = "python_version",
  [SBX_STEP_PYTHON_PACKAGES] = "python_packages",
  [SBX_STEP_FILES] = "files",
  [SBX_STEP_RUN] = "run",
  [SBX_STEP_ENV] = "env",
  [SBX_STEP_WORKDIR] = "workdir",
  [SBX_STEP_CMD] = "cmd",
  [SBX_STEP_WITH_DOCKER] = "with_docker",
};

const char *
sbx_step_name (sbx_step_kind k)
{
  return k < SBX_STEP__MAX ? step_names[k] : "?";
}

bool
sbx_step_makes_layer (sbx_step_kind k)
{
  return k != SBX_STEP_ENV && k != SBX_STEP_WORKDIR && k != SBX_STEP_CMD;
}

void
sbx_blueprint_free (sbx_blueprint *bp)
{
  if (bp == NULL)
    return;
  free (bp->base);
  for (size_t i = 0; i < bp->nsteps; i++)
    {
      sbx_bp_step *s = &bp->steps[i];
      strv_free (s->list);
      free (s->str);
      for (size_t f = 0; f < s->nfiles; f++)
        {
          free (s->files[f].src);
          free (s->files[f].dest);
        }
      free (s->files);
      free (s->canon);
    }
  free (bp->steps);
  free (bp);
}

/* --- grammars -------------------------------------------------------------- */

static bool
matches (const char *s, const char *ere)
{
  regex_t re;
  if (regcomp (&re, ere, REG_EXTENDED | REG_NOSUB) != 0)
    return false;
  bool ok = regexec (&re, s, 0, NULL, 0) == 0;
  regfree (&re);
  return ok;
}

/* Debian package names (Policy 5.6.1), optionally =VERSION. */
static bool
apt_name_ok (const char *s)
{
  return strlen (s) <= 256 && matches (s, "^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$");
}

/* A requirement pip takes as one argument: a name (PEP 508), optional
 * extras, optional version clauses. Never an option (`-r`, `--index-url`). */
static bool
pip_spec_ok (const char *s)
{
  return strlen (s) <= 256
         && matches (s, "^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\\[[A-Za-z0-9._,-]+\\])?"
                        "((==|>=|<=|~=|!=|===|<|>)[A-Za-z0-9.*+!_-]+(,(==|>=|<=|~=|!=|===|<|>)[A-Za-z0-9.*+!_-]+)*)?$");
}

/* An absolute path in the image: no `..`, no NUL, bounded. */
static bool
image_path_ok (const char *s)
{
  if (s[0] != '/' || strlen (s) >= 4096)
    return false;
  for (const char *p = s; *p;)
    {
      while (*p == '/')
        p++;
      const char *e = strchrnul (p, '/');
      if (e - p == 2 && p[0] == '.' && p[1] == '.')
        return false;
      p = e;
    }
  return true;
}

/* A path in the build context: relative, no `..`. */
static bool
context_path_ok (const char *s)
{
  if (s[0] == '\0' || s[0] == '/' || strlen (s) >= 4096)
    return false;
  _cleanup_free_ char *abs = xasprintf ("/%s", s);
  return image_path_ok (abs);
}

/* --- typed access with the key's name in every error ----------------------- */

/* The string of V, once YAJL_IS_STRING (V) was checked. */
#define STR(v) ((const char *) (v)->u.string)

static int
bad (sbx_error **err, const char *where, const char *what)
{
  return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "blueprint: %s: %s", where, what);
}

static int
get_string (yajl_val v, const char *where, size_t max, char **ret, sbx_error **err)
{
  if (!YAJL_IS_STRING (v))
    return bad (err, where, "expected a string");
  const char *s = STR (v);
  if (strlen (s) > max)
    return bad (err, where, "too long");
  *ret = xstrdup (s);
  return 0;
}

/* An array of 1..LIST_MAX strings, each accepted by OK (NULL: any). */
static int
get_strings (yajl_val v, const char *where, bool (*ok) (const char *), const char *grammar, char ***ret,
             sbx_error **err)
{
  if (!YAJL_IS_ARRAY (v))
    return bad (err, where, "expected an array of strings");
  size_t n = v->u.array.len;
  if (n == 0 || n > LIST_MAX)
    return bad (err, where, "expected 1 to 1000 entries");
  char **out = xmalloc0 (sizeof (char *));
  for (size_t i = 0; i < n; i++)
    {
      yajl_val e = v->u.array.values[i];
      _cleanup_free_ char *w = xasprintf ("%s[%zu]", where, i);
      if (!YAJL_IS_STRING (e) || strlen (STR (e)) > STRING_MAX)
        {
          strv_free (out);
          return bad (err, w, "expected a string");
        }
      if (ok && !ok (STR (e)))
        {
          _cleanup_free_ char *m = xasprintf ("`%s` is not %s", STR (e), grammar);
          strv_free (out);
          return bad (err, w, m);
        }
      strv_push (&out, STR (e));
    }
  *ret = out;
  return 0;
}

static int
parse_files (yajl_val v, const char *where, sbx_bp_step *s, sbx_error **err)
{
  if (!YAJL_IS_ARRAY (v) || v->u.array.len == 0 || v->u.array.len > LIST_MAX)
    return bad (err, where, "expected an array of 1 to 1000 {\"src\", \"dest\", \"mode\"} objects");
  s->files = xmalloc0 (v->u.array.len * sizeof *s->files);
  for (size_t i = 0; i < v->u.array.len; i++)
    {
      yajl_val f = v->u.array.values[i];
      sbx_bp_file *bf = &s->files[s->nfiles++];
      bf->mode = -1;
      _cleanup_free_ char *w = xasprintf ("%s[%zu]", where, i);
      if (!YAJL_IS_OBJECT (f))
        return bad (err, w, "expected an object {\"src\", \"dest\", \"mode\"}");
      for (size_t k = 0; k < f->u.object.len; k++)
        {
          const char *key = f->u.object.keys[k];
          yajl_val val = f->u.object.values[k];
          _cleanup_free_ char *wk = xasprintf ("%s.%s", w, key);
          if (strcmp (key, "src") == 0)
            {
              if (get_string (val, wk, 4095, &bf->src, err) < 0)
                return -1;
              if (!context_path_ok (bf->src))
                return bad (err, wk, "expected a relative path in the build context, without `..`");
            }
          else if (strcmp (key, "dest") == 0)
            {
              if (get_string (val, wk, 4095, &bf->dest, err) < 0)
                return -1;
              if (!image_path_ok (bf->dest))
                return bad (err, wk, "expected an absolute path without `..`");
            }
          else if (strcmp (key, "mode") == 0)
            {
              /* Octal digits only (the grammar): at most 07777. */
              if (!YAJL_IS_STRING (val) || !matches (STR (val), "^0?[0-7]{3,4}$"))
                return bad (err, wk, "expected an octal string such as \"0644\"");
              bf->mode = (int) strtol (STR (val), NULL, 8);
            }
          else
            return bad (err, wk, "unknown key (src, dest, mode)");
        }
      if (bf->src == NULL || bf->dest == NULL)
        return bad (err, w, "`src` and `dest` are required");
    }
  return 0;
}

static int
parse_env (yajl_val v, const char *where, sbx_bp_step *s, sbx_error **err)
{
  if (!YAJL_IS_OBJECT (v) || v->u.object.len == 0 || v->u.object.len > LIST_MAX)
    return bad (err, where, "expected an object of 1 to 1000 NAME: \"value\" pairs");
  s->list = xmalloc0 (sizeof (char *));
  for (size_t i = 0; i < v->u.object.len; i++)
    {
      const char *k = v->u.object.keys[i];
      yajl_val val = v->u.object.values[i];
      _cleanup_free_ char *w = xasprintf ("%s.%s", where, k);
      if (!YAJL_IS_STRING (val) || strlen (STR (val)) > STRING_MAX)
        return bad (err, w, "expected a string");
      _cleanup_free_ char *e = xasprintf ("%s=%s", k, STR (val));
      if (!env_entry_is_valid (e))
        return bad (err, w, "not a valid environment variable name");
      strv_push (&s->list, e);
    }
  return 0;
}

/* The step as canonical JSON: its kind and its parsed value, in a fixed
 * form (a run string becomes a one-command array), so that equivalent
 * blueprints share cache entries. TEXT: the form shown to people, a files
 * mode in octal as written ("0755"), none when not given; the cache key
 * keeps its own form. */
static char *
canon_step (const sbx_bp_step *s, bool text)
{
  _cleanup_yajl_gen_ yajl_gen g = j_new (false);
  j_map (g);
  j_str (g, sbx_step_name (s->kind));
  switch (s->kind)
    {
    case SBX_STEP_PYTHON_VERSION:
    case SBX_STEP_WORKDIR:
      j_str (g, s->str);
      break;
    case SBX_STEP_WITH_DOCKER:
      j_bool (g, s->flag);
      break;
    case SBX_STEP_FILES:
      j_arr (g);
      for (size_t i = 0; i < s->nfiles; i++)
        {
          j_map (g);
          j_kstr (g, "src", s->files[i].src);
          j_kstr (g, "dest", s->files[i].dest);
          if (!text)
            j_kint (g, "mode", s->files[i].mode);
          else if (s->files[i].mode >= 0)
            {
              char mode[16];
              snprintf (mode, sizeof mode, "%04o", (unsigned) s->files[i].mode);
              j_kstr (g, "mode", mode);
            }
          j_endmap (g);
        }
      j_endarr (g);
      break;
    default:
      j_arr (g);
      for (size_t i = 0; s->list && s->list[i]; i++)
        j_str (g, s->list[i]);
      j_endarr (g);
    }
  j_endmap (g);
  return j_take (g, NULL);
}

static int
parse_step (yajl_val v, size_t idx, sbx_bp_step *s, sbx_error **err)
{
  _cleanup_free_ char *where = xasprintf ("steps[%zu]", idx);
  if (!YAJL_IS_OBJECT (v) || v->u.object.len != 1)
    return bad (err, where, "expected an object with exactly one key: the step's kind");
  const char *key = v->u.object.keys[0];
  yajl_val val = v->u.object.values[0];
  _cleanup_free_ char *w = xasprintf ("%s.%s", where, key);
  size_t k = 0;
  while (k < SBX_STEP__MAX && strcmp (step_names[k], key) != 0)
    k++;
  if (k == SBX_STEP__MAX)
    return bad (err, w,
                "unknown step (apt_packages, python_version, python_packages, files, run, env, workdir, "
                "cmd, with_docker)");
  s->kind = (sbx_step_kind) k;
  int r = 0;
  switch (s->kind)
    {
    case SBX_STEP_APT_PACKAGES:
      r = get_strings (val, w, apt_name_ok, "a Debian package name (optionally =VERSION)", &s->list, err);
      break;
    case SBX_STEP_PYTHON_PACKAGES:
      r = get_strings (val, w, pip_spec_ok, "a package requirement such as name==1.2", &s->list, err);
      break;
    case SBX_STEP_PYTHON_VERSION:
      if ((r = get_string (val, w, 16, &s->str, err)) == 0 && !matches (s->str, "^3\\.[0-9]{1,2}$"))
        r = bad (err, w, "expected a version such as \"3.11\"");
      break;
    case SBX_STEP_FILES:
      r = parse_files (val, w, s, err);
      break;
    case SBX_STEP_RUN:
      if (YAJL_IS_STRING (val))
        {
          s->list = xmalloc0 (sizeof (char *));
          if (strlen (STR (val)) > STRING_MAX || STR (val)[0] == '\0')
            r = bad (err, w, "expected a non-empty command of at most 64 KiB");
          else
            strv_push (&s->list, STR (val));
        }
      else
        r = get_strings (val, w, NULL, NULL, &s->list, err);
      break;
    case SBX_STEP_ENV:
      r = parse_env (val, w, s, err);
      break;
    case SBX_STEP_WORKDIR:
      if ((r = get_string (val, w, 4095, &s->str, err)) == 0 && !image_path_ok (s->str))
        r = bad (err, w, "expected an absolute path without `..`");
      break;
    case SBX_STEP_CMD:
      r = get_strings (val, w, NULL, NULL, &s->list, err);
      break;
    case SBX_STEP_WITH_DOCKER:
      if (!YAJL_IS_TRUE (val) && !YAJL_IS_FALSE (val))
        r = bad (err, w, "expected true or false");
      s->flag = YAJL_IS_TRUE (val);
      break;
    default:
      break;
    }
  if (r == 0)
    s->canon = canon_step (s, false);
  return r;
}

static bool
base_ok (const char *s)
{
  if (matches (s, "^debian:[a-z]{2,32}$") || name_is_valid (s) || matches (s, "^(sha256:)?[0-9a-f]{12,64}$"))
    return true;
  _cleanup_imageref_ sbx_imageref *ir = NULL;
  return sbx_imageref_parse (s, NULL, &ir, NULL) == 0;
}

int
sbx_blueprint_parse (const char *text, size_t len, sbx_blueprint **ret, sbx_error **err)
{
  _cleanup_yajl_val_ yajl_val v = NULL;
  if (j_parse (text, len, SBX_BLUEPRINT_MAX, "blueprint", &v, err) < 0)
    {
      (*err)->code = SBX_E_INVALID_ARGUMENT;
      return -1;
    }
  if (!YAJL_IS_OBJECT (v))
    return bad (err, "the document", "expected an object {\"base\": ..., \"steps\": [...]}");
  _cleanup_blueprint_ sbx_blueprint *bp = xmalloc0 (sizeof *bp);
  for (size_t i = 0; i < v->u.object.len; i++)
    {
      const char *key = v->u.object.keys[i];
      yajl_val val = v->u.object.values[i];
      if (strcmp (key, "base") == 0)
        {
          if (get_string (val, "base", 256, &bp->base, err) < 0)
            return -1;
          if (!base_ok (bp->base))
            return bad (err, "base", "expected busybox, debian:SUITE, an image id or tag, or a registry reference");
        }
      else if (strcmp (key, "steps") == 0)
        {
          if (!YAJL_IS_ARRAY (val) || val->u.array.len > SBX_BLUEPRINT_STEPS_MAX)
            return bad (err, "steps", "expected an array of at most 256 steps");
          bp->steps = xmalloc0 ((val->u.array.len + 1) * sizeof *bp->steps);
          for (size_t s = 0; s < val->u.array.len; s++)
            {
              bp->nsteps++;
              if (parse_step (val->u.array.values[s], s, &bp->steps[s], err) < 0)
                return -1;
            }
        }
      else
        {
          _cleanup_free_ char *m = xasprintf ("unknown key `%s` (base, steps)", key);
          return bad (err, "the document", m);
        }
    }
  if (bp->base == NULL)
    return bad (err, "base", "required");
  *ret = steal_pointer (&bp);
  return 0;
}

char *
sbx_bp_step_text (const sbx_bp_step *s)
{
  return canon_step (s, true);
}
