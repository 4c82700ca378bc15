/* The built-in busybox layer, made from the host's static busybox: written
 * as a deterministic tar, then extracted as any other layer. */
#include "config.h"
#include "layer-internal.h"
#include "spawn.h"
#include "layer.h"
#include "fs.h"
#include "sha256.h"
#include "util.h"

#include <archive_entry.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>

/* ---- the busybox layer ---- */

static const char *
busybox_path (void)
{
  const char *p = getenv ("SBX_BUSYBOX");
  return p && *p ? p : "/bin/busybox";
}

/* Whether the ELF file in FD asks for a program interpreter (a dynamic loader);
 * -1 when it is not ELF. Either class, in the host's byte order. */
static int
elf_has_interp (int fd, bool *ret)
{
  unsigned char ident[EI_NIDENT];
  uint64_t phoff;
  unsigned phentsize, phnum;
  if (pread (fd, ident, sizeof ident, 0) != (ssize_t) sizeof ident || memcmp (ident, ELFMAG, SELFMAG) != 0)
    return -1;
  if (ident[EI_CLASS] == ELFCLASS64)
    {
      Elf64_Ehdr h;
      if (pread (fd, &h, sizeof h, 0) != (ssize_t) sizeof h)
        return -1;
      phoff = h.e_phoff, phentsize = h.e_phentsize, phnum = h.e_phnum;
    }
  else
    {
      Elf32_Ehdr h;
      if (pread (fd, &h, sizeof h, 0) != (ssize_t) sizeof h)
        return -1;
      phoff = h.e_phoff, phentsize = h.e_phentsize, phnum = h.e_phnum;
    }
  *ret = false;
  for (unsigned i = 0; i < phnum; i++)
    {
      uint32_t type;
      if (pread (fd, &type, sizeof type, (off_t) (phoff + (uint64_t) i * phentsize)) != (ssize_t) sizeof type)
        return -1;
      *ret |= type == PT_INTERP;
    }
  return 0;
}

/* A busybox that needs a dynamic loader would not start in a rootfs that has
 * none: refuse it rather than build a layer that cannot run. */
static int
check_static_elf (int fd, const char *path, sbx_error **err)
{
  bool interp;
  if (elf_has_interp (fd, &interp) < 0)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0, "`%s` is not an ELF executable", path);
  if (interp)
    return sbx_error_set (err, SBX_E_INVALID_ARGUMENT, 0,
                          "`%s` is dynamically linked: install busybox-static or set SBX_BUSYBOX", path);
  return 0;
}

/* Runs ARGV (no shell) and returns its stdout, which must be under MAX
 * bytes. */
static int
run_capture (char *const argv[], size_t max, char **ret_out, sbx_error **err)
{
  _cleanup_free_ char *out = NULL;
  int status = 0;
  if (sbx_spawn_capture (argv, max, &out, NULL, &status, err) < 0)
    return -1;
  if (strlen (out) >= max)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "`%s %s`: unreadable output", argv[0], argv[1]);
  if (status != 0)
    return sbx_error_set (err, SBX_E_INTERNAL, 0, "`%s %s` failed (status %d)", argv[0], argv[1], status);
  *ret_out = steal_pointer (&out);
  return 0;
}

/* What goes into the busybox tar, sorted by path before it is written. */
typedef struct bb_entry {
  char *path;
  mode_t mode;         /* type and permissions */
  char *target;        /* symlinks */
  const char *content; /* small files; NULL for a regular file: the busybox binary */
} bb_entry;

typedef struct bb_tree {
  bb_entry *v;
  size_t n;
} bb_tree;

static void
bb_tree_free (bb_tree *t)
{
  for (size_t i = 0; i < t->n; i++)
    {
      free (t->v[i].path);
      free (t->v[i].target);
    }
  free (t->v);
}
#define _cleanup_bb_tree_ __attribute__ ((cleanup (bb_tree_free)))

/* Adds PATH unless it is there already (the first one wins). */
static void
bb_add (bb_tree *t, const char *path, mode_t mode, const char *target, const char *content)
{
  for (size_t i = 0; i < t->n; i++)
    if (strcmp (t->v[i].path, path) == 0)
      return;
  t->v = xrealloc (t->v, (t->n + 1) * sizeof *t->v);
  t->v[t->n++] = (bb_entry){ .path = xstrdup (path),
                             .mode = mode,
                             .target = target ? xstrdup (target) : NULL,
                             .content = content };
}

static void
bb_add_parents (bb_tree *t, const char *path)
{
  for (const char *s = strchr (path, '/'); s; s = strchr (s + 1, '/'))
    {
      _cleanup_free_ char *dir = xstrndup (path, (size_t) (s - path));
      bb_add (t, dir, S_IFDIR | 0755, NULL, NULL);
    }
}

static int
bb_cmp (const void *a, const void *b)
{
  return strcmp (((const bb_entry *) a)->path, ((const bb_entry *) b)->path);
}

/* usr/bin/env or bin/sh, as busybox --list-full prints them. */
static bool
applet_path_ok (const char *p)
{
  if (*p == '\0' || *p == '/' || strlen (p) > 128 || strstr (p, "//") || strstr (p, "..") || p[strlen (p) - 1] == '/')
    return false;
  for (const char *c = p; *c; c++)
    if (!(strchr ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-[]/", *c)))
      return false;
  return true;
}

/* The applet's symlink points at the binary relatively, so it also resolves
 * when the rootfs is looked at from the host. */
static void
bb_add_applet (bb_tree *t, const char *path)
{
  size_t depth = 0;
  for (const char *c = path; *c; c++)
    depth += *c == '/';
  _cleanup_free_ char *target = NULL;
  if (strncmp (path, "bin/", 4) == 0 && depth == 1)
    target = xstrdup ("busybox");
  else
    {
      target = xmalloc (depth * 3 + sizeof "bin/busybox");
      target[0] = '\0';
      for (size_t i = 0; i < depth; i++)
        strcat (target, "../");
      strcat (target, "bin/busybox");
    }
  bb_add_parents (t, path);
  bb_add (t, path, S_IFLNK | 0777, target, NULL);
}

static int
bb_add_applets (bb_tree *t, const char *bb, sbx_error **err)
{
  char *full[] = { (char *) bb, (char *) "--list-full", NULL };
  char *plain[] = { (char *) bb, (char *) "--list", NULL };
  _cleanup_free_ char *out = NULL;
  bool is_full = run_capture (full, 1 << 20, &out, NULL) == 0;
  if (!is_full && run_capture (plain, 1 << 20, &out, err) < 0)
    return -1;
  char *save = NULL;
  for (char *line = strtok_r (out, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      _cleanup_free_ char *path = is_full ? xstrdup (line) : xasprintf ("bin/%s", line);
      if (!applet_path_ok (path))
        return sbx_error_set (err, SBX_E_INTERNAL, 0, "`%s --list`: unexpected applet `%s`", bb, path);
      if (strcmp (path, "bin/busybox") != 0)
        bb_add_applet (t, path);
    }
  return 0;
}

static const struct {
  const char *path;
  mode_t mode;
  const char *content;
} bb_fixed[] = {
  { "bin", S_IFDIR | 0755, NULL },
  { "bin/busybox", S_IFREG | 0755, NULL },
  { "dev", S_IFDIR | 0755, NULL },
  { "etc", S_IFDIR | 0755, NULL },
  { "etc/group", S_IFREG | 0644, "root:x:0:\nnogroup:x:65534:\n" },
  { "etc/hostname", S_IFREG | 0644, "sbx\n" },
  { "etc/os-release", S_IFREG | 0644,
    "NAME=\"sbx busybox\"\nID=sbx-busybox\nPRETTY_NAME=\"sbx busybox (the host's busybox-static)\"\n" },
  { "etc/passwd", S_IFREG | 0644,
    "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n" },
  { "home", S_IFDIR | 0755, NULL },
  { "proc", S_IFDIR | 0755, NULL },
  { "root", S_IFDIR | 0700, NULL },
  { "sys", S_IFDIR | 0755, NULL },
  { "tmp", S_IFDIR | 01777, NULL },
  { "var", S_IFDIR | 0755, NULL },
  { "var/tmp", S_IFDIR | 01777, NULL },
};

static int
bb_tree_build (bb_tree *t, const char *bb, sbx_error **err)
{
  for (size_t i = 0; i < ARRAY_SIZE (bb_fixed); i++)
    bb_add (t, bb_fixed[i].path, bb_fixed[i].mode, NULL, bb_fixed[i].content);
  if (bb_add_applets (t, bb, err) < 0)
    return -1;
  qsort (t->v, t->n, sizeof *t->v, bb_cmp);
  return 0;
}

static int
write_fd_data (struct archive *a, int fd, int64_t size, sbx_error **err)
{
  _cleanup_free_ char *buf = xmalloc (IO_BLOCK);
  int64_t done = 0;
  while (done < size)
    {
      ssize_t n = pread (fd, buf, IO_BLOCK, done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return sbx_error_errno (err, n < 0 ? errno : EIO, "read busybox");
      if (n > size - done)
        n = (ssize_t) (size - done);
      if (sbx_ar.archive_write_data (a, buf, (size_t) n) != n)
        return sbx_archive_fail (err, a, "write bin/busybox");
      done += n;
    }
  return 0;
}

static int
write_bb_entry (struct archive *a, const bb_entry *b, int binfd, sbx_error **err)
{
  _cleanup_archive_entry_ struct archive_entry *e = sbx_ar.archive_entry_new ();
  struct stat st = { .st_size = 0 };
  int64_t size = 0;
  sbx_ar.archive_entry_set_pathname (e, b->path);
  sbx_ar.archive_entry_set_mode (e, b->mode);
  sbx_ar.archive_entry_set_uid (e, 0);
  sbx_ar.archive_entry_set_gid (e, 0);
  sbx_ar.archive_entry_set_mtime (e, 0, 0);
  if (S_ISLNK (b->mode))
    sbx_ar.archive_entry_set_symlink (e, b->target);
  if (S_ISREG (b->mode) && b->content)
    size = (int64_t) strlen (b->content);
  else if (S_ISREG (b->mode))
    {
      if (fstat (binfd, &st) < 0)
        return sbx_error_errno (err, errno, "stat busybox");
      size = st.st_size;
    }
  sbx_ar.archive_entry_set_size (e, size);
  if (sbx_ar.archive_write_header (a, e) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, b->path);
  if (b->content && sbx_ar.archive_write_data (a, b->content, (size_t) size) != size)
    return sbx_archive_fail (err, a, b->path);
  if (S_ISREG (b->mode) && !b->content)
    return write_fd_data (a, binfd, size, err);
  return 0;
}

/* Writes T as a deterministic tar (pax restricted, mtime 0, owner 0, sorted)
 * into TL's layer.tar; HEX is its sha256. */
static int
write_bb_tar (const bb_tree *t, int binfd, tmp_layer *tl, char hex[65], sbx_error **err)
{
  _cleanup_close_ int fd = openat (tl->dfd, "layer.tar", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return sbx_error_errno (err, errno, "create layer.tar");
  tar_sink sink = { .fd = fd, .hash = true };
  sha256_init (&sink.sha);
  _cleanup_archive_write_ struct archive *a = sbx_ar.archive_write_new ();
  sbx_ar.archive_write_set_format_pax_restricted (a);
  /* Names as the bytes they are: no conversion through the locale's
   * charset, which fails on a name that is not ASCII under C. */
  sbx_ar.archive_write_set_format_option (a, "pax", "hdrcharset", "BINARY");
  sbx_ar.archive_write_add_filter_none (a);
  if (sbx_ar.archive_write_open (a, &sink, NULL, tar_sink_write, NULL) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, "write layer.tar");
  for (size_t i = 0; i < t->n; i++)
    if (write_bb_entry (a, &t->v[i], binfd, err) < 0)
      return -1;
  if (sbx_ar.archive_write_close (a) != ARCHIVE_OK)
    return sbx_archive_fail (err, a, "write layer.tar");
  sha256_ctx_hex_final (&sink.sha, hex);
  return 0;
}

int
sbx_layer_make_busybox (const char *root, char **ret_digest, uint64_t *ret_size, sbx_error **err)
{
  if (sbx_archive_load (err) < 0)
    return -1;
  const char *bb = busybox_path ();
  _cleanup_close_ int binfd = open (bb, O_RDONLY | O_CLOEXEC);
  _cleanup_bb_tree_ bb_tree tree = { 0 };
  _cleanup_tmp_layer_ tmp_layer t = TMP_LAYER_INIT;
  char hex[65];
  if (binfd < 0)
    sbx_error_set (err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INTERNAL, errno,
                   "open `%s` (install busybox-static or set SBX_BUSYBOX)", bb);
  else if (check_static_elf (binfd, bb, err) == 0 && bb_tree_build (&tree, bb, err) == 0
           && tmp_layer_new (root, &t, err) == 0 && write_bb_tar (&tree, binfd, &t, hex, err) == 0
           && finish_layer (root, &t, hex, ret_digest, ret_size, err) == 0)
    return 0;
  return sbx_error_wrap (err, "busybox layer");
}
