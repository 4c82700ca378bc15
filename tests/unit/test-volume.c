/* Volumes (src/lib/volume.c): the --volume NAME:/path[:ro] parser, the
 * destination check every mount into a sandbox goes through, and the check
 * of a sandbox's list of them. */
#include "config.h"

#include "sbx-limits.h"
#include "tap.h"
#include "util.h"
#include "volume.h"

/* S parses to NAME, DEST and RO. */
static void
good (const char *s, const char *name, const char *dest, bool ro)
{
  sbx_volume_spec v = { NULL };
  sbx_error *err = NULL;
  if (sbx_volume_spec_parse (s, &v, &err) < 0)
    {
      tap_ok (0, "%s: refused: %s", s, err->msg);
      sbx_error_free (err);
      return;
    }
  tap_ok (strcmp (v.name, name) == 0 && strcmp (v.dest, dest) == 0 && v.readonly == ro, "%s -> %s %s%s", s, v.name,
          v.dest, v.readonly ? " ro" : "");
  sbx_volume_spec_clear (&v);
}

/* S is refused with CODE and the message has WHY. */
static void
refused (const char *s, sbx_code code, const char *why)
{
  sbx_volume_spec v = { NULL };
  sbx_error *err = NULL;
  int rc = sbx_volume_spec_parse (s, &v, &err);
  char *shown = printable_escaped (s, 80);
  tap_ok (rc < 0 && v.name == NULL && err && err->code == code && strstr (err->msg, why) != NULL, "refused: %s (%s)",
          shown, err ? err->msg : "accepted");
  free (shown);
  sbx_error_free (err);
  sbx_volume_spec_clear (&v);
}

static void
specs (void)
{
  char a[] = "a:/x", b[] = "b:/y:ro", c[] = "a:/z", d[] = "b:/x/", e[] = "b:relative";
  char *ok[] = { a, b, c, NULL };
  char *dup[] = { a, d, NULL };
  char *bad[] = { a, e, NULL };
  sbx_error *err = NULL;
  tap_ok (sbx_volume_specs_check (ok, NULL) == 0, "one volume at two places, two at others");
  tap_ok (sbx_volume_specs_check (NULL, NULL) == 0, "no volumes");
  tap_ok (sbx_volume_specs_check (dup, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT
              && strstr (err->msg, "two volumes on `/x`"),
          "two volumes on one destination (%s)", err ? err->msg : "accepted");
  sbx_error_free (err);
  err = NULL;
  tap_ok (sbx_volume_specs_check (bad, &err) < 0 && err->code == SBX_E_PATH_INVALID, "a bad one among good ones");
  sbx_error_free (err);
  char **many = xmalloc0 (sizeof (char *));
  for (int i = 0; i <= SBX_VOLUMES_MAX; i++)
    {
      char *s = xasprintf ("v:/d%d", i);
      strv_push (&many, s);
      free (s);
    }
  err = NULL;
  tap_ok (sbx_volume_specs_check (many, &err) < 0 && err->code == SBX_E_INVALID_ARGUMENT, "too many volumes");
  sbx_error_free (err);
  strv_free (many);
}

static void
dests (void)
{
  char *clean = NULL;
  tap_ok (sbx_mount_dest_clean ("//a///b/", "--mount", &clean, NULL) == 0 && strcmp (clean, "/a/b") == 0,
          "//a///b/ is /a/b");
  free (clean);
  clean = NULL;
  sbx_error *err = NULL;
  tap_ok (sbx_mount_dest_clean ("/proc/1", "--mount", &clean, &err) < 0 && clean == NULL
              && strstr (err->msg, "--mount: "),
          "the option named in the message (%s)", err ? err->msg : "accepted");
  sbx_error_free (err);
  tap_ok (sbx_mount_dest_clean ("/procfs", "--mount", &clean, NULL) == 0 && strcmp (clean, "/procfs") == 0,
          "/procfs is not /proc");
  free (clean);
}

int
main (void)
{
  good ("data:/data", "data", "/data", false);
  good ("data:/data:ro", "data", "/data", true);
  good ("data:/data:rw", "data", "/data", false);
  good ("my-vol.1_x+y:/srv/www/", "my-vol.1_x+y", "/srv/www", false);
  good ("v://a//b:ro", "v", "/a/b", true);
  good ("v:/a:b/c", "v", "/a:b/c", false);
  good ("v:/x:y:ro", "v", "/x:y", true);
  good ("v:/devices", "v", "/devices", false);
  good ("v:/.sbxdata", "v", "/.sbxdata", false);
  refused ("data", SBX_E_INVALID_ARGUMENT, "is not NAME:/path");
  refused ("data:", SBX_E_INVALID_ARGUMENT, "is not NAME:/path");
  refused (":/x", SBX_E_INVALID_ARGUMENT, "invalid volume name");
  refused ("bad/name:/x", SBX_E_INVALID_ARGUMENT, "invalid volume name");
  refused (".hidden:/x", SBX_E_INVALID_ARGUMENT, "invalid volume name");
  refused ("-x:/x", SBX_E_INVALID_ARGUMENT, "invalid volume name");
  refused ("data:/x:rx", SBX_E_INVALID_ARGUMENT, "the mode is ro or rw");
  refused ("data:/x:RO", SBX_E_INVALID_ARGUMENT, "the mode is ro or rw");
  refused ("data:relative", SBX_E_PATH_INVALID, "not an absolute path");
  refused ("data:relative:ro", SBX_E_PATH_INVALID, "not an absolute path");
  refused ("data:/", SBX_E_PATH_INVALID, "cannot be `/`");
  refused ("data:///", SBX_E_PATH_INVALID, "cannot be `/`");
  refused ("data:/a/../b", SBX_E_PATH_INVALID, "`..` component");
  refused ("data:/..", SBX_E_PATH_INVALID, "`..` component");
  refused ("data:/./a", SBX_E_PATH_INVALID, "`.` component");
  refused ("data:/proc", SBX_E_PATH_INVALID, "over /proc");
  refused ("data:/proc/sys", SBX_E_PATH_INVALID, "over /proc");
  refused ("data://sys/", SBX_E_PATH_INVALID, "over /sys");
  refused ("data:/dev/shm", SBX_E_PATH_INVALID, "over /dev");
  refused ("data:/.sbx", SBX_E_PATH_INVALID, "over /.sbx");
  refused ("data:/.sbx/init", SBX_E_PATH_INVALID, "over /.sbx");
  refused ("data:/a\nb", SBX_E_PATH_INVALID, "control character");
  refused ("da\tta:/x", SBX_E_INVALID_ARGUMENT, "invalid volume name");
  specs ();
  dests ();
  tap_plan (tap_n);
  return tap_done ();
}
