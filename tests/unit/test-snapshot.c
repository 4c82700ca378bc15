/* Unit tests for the snapshot library (snapshot.c) on a store made here,
 * without a runtime: ids, listing, removal, and restore's refusals of what
 * it reads back from the store (bad ids, oversized metadata, options past
 * the shared limits, counts), each before anything is made. */
#include "config.h"
#include "snapshot.h"
#include "store.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "tap.h"

#define SNAP "snap-0123456789ab"

static char *root;
static sbx_store *st;

static bool
failed_with (int r, sbx_error **e, sbx_code code)
{
  bool ok = r < 0 && *e && (*e)->code == code && (*e)->msg && (*e)->msg[0];
  if (!ok && *e)
    printf ("# got %s: %s\n", sbx_code_name ((*e)->code), (*e)->msg);
  sbx_error_free (*e);
  *e = NULL;
  return ok;
}

static void
put_snapshot (const char *id, const char *doc)
{
  _cleanup_free_ char *dir = sbx_store_path (st, "snapshots/%s", id);
  _cleanup_free_ char *path = xasprintf ("%s/snapshot.json", dir);
  mkdir_p (dir, 0700, NULL);
  write_file_atomic (path, doc, strlen (doc), 0600, NULL);
}

static char *
doc_with (const char *options)
{
  /* disk 0: no sbx.conf read for its default. */
  return xasprintf ("{\"id\": \"%s\", \"created\": 1700000000, \"sandbox\": \"sb-0123456789ab\", "
                    "\"layers\": [], \"options\": {%s%s}}",
                    SNAP, strstr (options, "\"disk\"") ? "" : "\"disk\": 0, ", options);
}

static void
test_ids (void)
{
  tap_ok (sbx_snapshot_id_valid (SNAP), "a snapshot id");
  tap_ok (!sbx_snapshot_id_valid ("snap-0123456789a"), "11 hex digits");
  tap_ok (!sbx_snapshot_id_valid ("snap-0123456789abc"), "13 hex digits");
  tap_ok (!sbx_snapshot_id_valid ("snap-0123456789AB"), "uppercase");
  tap_ok (!sbx_snapshot_id_valid ("snap-../../etc/pa"), "a path");
  tap_ok (!sbx_snapshot_id_valid ("sb-0123456789ab"), "a sandbox id");
}

static void
test_list_remove (void)
{
  sbx_error *e = NULL;
  _cleanup_free_ char *doc = doc_with ("\"pids\": 1024");
  put_snapshot (SNAP, doc);
  put_snapshot ("snap-zzzzzzzzzzzz", doc);      /* not an id: not listed */
  put_snapshot (".tmp-snap-111111111111", doc); /* half-made: not listed */
  sbx_snapshot_info *v = NULL;
  size_t n = 0;
  int r = sbx_snapshot_list (st, &v, &n, &e);
  tap_ok (r == 0 && n == 1, "one snapshot listed (%zu)", n);
  tap_ok (n == 1 && strcmp (v[0].id, SNAP) == 0 && v[0].sandbox && strcmp (v[0].sandbox, "sb-0123456789ab") == 0
              && v[0].created == 1700000000,
          "its id, source and time");
  sbx_snapshot_info_free (v, n);
  tap_ok (failed_with (sbx_snapshot_remove (st, "snap-000000000000", &e), &e, SBX_E_NOT_FOUND),
          "remove: an unknown snapshot is NOT_FOUND");
  tap_ok (failed_with (sbx_snapshot_remove (st, "../snapshots", &e), &e, SBX_E_INVALID_ARGUMENT),
          "remove: not an id is INVALID_ARGUMENT");
  tap_ok (sbx_snapshot_remove (st, SNAP, &e) == 0, "remove");
  _cleanup_free_ char *dir = sbx_store_path (st, "snapshots/%s", SNAP);
  tap_ok (access (dir, F_OK) < 0 && errno == ENOENT, "its directory is gone");
  r = sbx_snapshot_list (st, &v, &n, &e);
  tap_ok (r == 0 && n == 0, "none listed after");
  sbx_snapshot_info_free (v, n);
}

static void
test_restore_refusals (void)
{
  sbx_error *e = NULL;
  char **ids = NULL;
  tap_ok (failed_with (sbx_snapshot_restore (st, "snap-000000000000", 1, &ids, &e), &e, SBX_E_NOT_FOUND),
          "restore: an unknown snapshot is NOT_FOUND");
  tap_ok (failed_with (sbx_snapshot_restore (st, "not-a-snapshot", 1, &ids, &e), &e, SBX_E_INVALID_ARGUMENT),
          "restore: not an id is INVALID_ARGUMENT");
  _cleanup_free_ char *good = doc_with ("\"pids\": 1024");
  put_snapshot (SNAP, good);
  /* What passes the checks goes on to the runtime, which is not there:
   * nothing is made, and the refusals below are the checks'. */
  tap_ok (failed_with (sbx_snapshot_restore (st, SNAP, 1, &ids, &e), &e, SBX_E_RUNTIME_UNAVAILABLE),
          "restore: good options pass the checks (then no runtime)");
  tap_ok (failed_with (sbx_snapshot_restore (st, SNAP, 0, &ids, &e), &e, SBX_E_INVALID_ARGUMENT), "count 0");
  tap_ok (failed_with (sbx_snapshot_restore (st, SNAP, SBX_RESTORE_COUNT_MAX + 1, &ids, &e), &e,
                       SBX_E_INVALID_ARGUMENT),
          "count past SBX_RESTORE_COUNT_MAX");
  static const char *const bad[] = {
    "\"pids\": 3",
    "\"pids\": 8388608",
    "\"memory\": 4096",
    "\"memory\": 8796093022208",
    "\"cpu\": 5000",
    "\"cpu\": 0.001",
    "\"disk\": 4096",
    "\"timeout\": 0",
    "\"keep_warm\": 0",
    "\"ports\": [\"0\"]",
    "\"env\": [\"NOT AN ENTRY\"]",
    "\"cwd\": \"relative\"",
  };
  for (size_t i = 0; i < ARRAY_SIZE (bad); i++)
    {
      _cleanup_free_ char *doc = doc_with (bad[i]);
      put_snapshot (SNAP, doc);
      tap_ok (failed_with (sbx_snapshot_restore (st, SNAP, 1, &ids, &e), &e, SBX_E_INVALID_ARGUMENT),
              "restore refuses options with %s", bad[i]);
    }
  /* 65 ports, one past SBX_PORTS_MAX. */
  char *ports = xstrdup ("\"ports\": [");
  for (int i = 0; i <= SBX_PORTS_MAX; i++)
    {
      char *p = xasprintf ("%s%s\"%d\"", ports, i ? ", " : "", 1000 + i);
      free (ports);
      ports = p;
    }
  char *opt = xasprintf ("%s]", ports);
  free (ports);
  _cleanup_free_ char *doc = doc_with (opt);
  free (opt);
  put_snapshot (SNAP, doc);
  tap_ok (failed_with (sbx_snapshot_restore (st, SNAP, 1, &ids, &e), &e, SBX_E_INVALID_ARGUMENT),
          "restore refuses %d ports", SBX_PORTS_MAX + 1);
  /* Metadata past SBX_SNAPSHOT_JSON_MAX: not read at all. */
  size_t big = SBX_SNAPSHOT_JSON_MAX + 16;
  _cleanup_free_ char *huge = xmalloc (big + 1);
  memset (huge, ' ', big);
  huge[0] = '{';
  huge[big - 1] = '}';
  huge[big] = '\0';
  put_snapshot (SNAP, huge);
  tap_ok (failed_with (sbx_snapshot_restore (st, SNAP, 1, &ids, &e), &e, SBX_E_INVALID_ARGUMENT),
          "restore refuses metadata over SBX_SNAPSHOT_JSON_MAX");
  _cleanup_free_ char *sandboxes = sbx_store_path (st, "sandboxes");
  _cleanup_closedir_ DIR *d = opendir (sandboxes);
  int made = 0;
  for (struct dirent *de; d && (de = readdir (d));)
    made += de->d_name[0] != '.';
  tap_ok (made == 0, "no sandbox record made by a refused restore (%d)", made);
}

int
main (void)
{
  char tmpl[] = "/tmp/sbx-test-snapshot.XXXXXX";
  if (mkdtemp (tmpl) == NULL)
    tap_skip_all ("mkdtemp failed");
  /* No runtime: a restore that got past its checks stops before anything
   * is made (this runs as root under make check). */
  setenv ("SBX_RUNSC", "/nonexistent/runsc", 1);
  root = xasprintf ("%s/root", tmpl);
  _cleanup_free_ char *run = xasprintf ("%s/run", tmpl);
  sbx_error *e = NULL;
  if (sbx_store_open (root, run, true, &st, &e) < 0)
    {
      printf ("# %s\n", e->msg);
      tap_skip_all ("cannot make a store here");
    }
  test_ids ();
  test_list_remove ();
  test_restore_refusals ();
  sbx_store_free (st);
  rm_rf (tmpl, NULL);
  free (root);
  tap_plan (tap_n);
  return tap_done ();
}
