/* The sandbox file API on the host side (DESIGN.md section 4).
 *
 * Everything takes ROOT, an fd of the sandbox's merged root (the monitor's,
 * or a private mount for an ended sandbox). A path is resolved only with
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) from
 * ROOT, and every later step is relative to an fd that resolution gave: a
 * symlink the sandbox planted, or swaps in while a call runs, resolves
 * inside the sandbox or not at all. Walks open each level with O_NOFOLLOW
 * from the level above. Data is read and written only from regular files,
 * checked on an O_PATH fd before anything opens them. */
#ifndef SBX_FS_H
#define SBX_FS_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "error.h"

#define SBX_FS_LS_LIMIT_DEFAULT 200
#define SBX_FS_LS_LIMIT_MAX 10000

typedef struct sbx_fs_entry {
  char *name;
  char *path;
  const char *type; /* file, dir, symlink, other */
  uint64_t size;
  mode_t mode; /* permission bits */
  uid_t uid;
  gid_t gid;
  int64_t mtime;    /* seconds */
  int64_t mtime_ns; /* nanoseconds within the second */
  char *target;     /* symlinks: where they point (never followed) */
} sbx_fs_entry;

void sbx_fs_entry_clear (sbx_fs_entry *e);
void sbx_fs_entries_free (sbx_fs_entry *v, size_t n);

/* A sandbox in a user namespace (userns.h) sees its host range BASE as ids
 * from 0: the API shows and makes files with the ids it sees (a new file
 * is owned by its root, BASE on the host). Set once per process. */
void sbx_fs_set_userns (uint32_t base);
uint32_t sbx_fs_userns (void);
/* DIR/NAME (never followed; "" is DIR) owned by the sandbox's root: -1 and
 * errno on failure. */
int sbx_fs_own_at (int dir, const char *name);

/* PATH_INVALID unless PATH is absolute, has no `..` component and fits. */
int sbx_fs_path_check (const char *path, sbx_error **err);

/* The names in directory D but `.` and `..` that KEEP accepts (NULL: all),
 * sorted bytewise (stable output, and a cursor for pages): a strv of
 * *RET_N names. */
char **sbx_dir_sorted (DIR *d, bool (*keep) (const struct dirent *de, const void *data), const void *data,
                       size_t *ret_n);

/* An fd of PATH (openat2 FLAGS, O_CLOEXEC added); FOLLOW: whether a final
 * symlink is followed (inside the root). */
int sbx_fs_open (int root, const char *path, int flags, bool follow, int *ret, sbx_error **err);

/* A regular file of the sandbox, open for reading; anything else is
 * PATH_INVALID and is never opened for data. */
int sbx_fs_open_read (int root, const char *path, struct stat *st, int *ret, sbx_error **err);

/* Atomic replacement of a file: data goes to a temporary file next to it,
 * renamed over it on commit; the old file stays intact until then. The new
 * file keeps the old one's mode and owner, or gets MODE (root-owned). A
 * final symlink is replaced, not followed. */
typedef struct sbx_fs_writer {
  int dir;
  char *name;
  char *tmp;
  int fd;
  mode_t mode;
  uid_t uid;
  gid_t gid;
} sbx_fs_writer;

int sbx_fs_write_begin (int root, const char *path, mode_t mode, bool keep_mode, sbx_fs_writer *w, sbx_error **err);
int sbx_fs_write_commit (sbx_fs_writer *w, sbx_error **err);
void sbx_fs_write_abort (sbx_fs_writer *w);

/* Copies IN to OUT until EOF at disk speed (copy_file_range, sendfile,
 * then read/write). */
int sbx_fs_copy (int in, int out, sbx_error **err);

/* The entry at PATH itself (a symlink is described, not followed). */
int sbx_fs_stat (int root, const char *path, sbx_fs_entry *e, sbx_error **err);

/* A page of directory PATH, sorted by name: up to LIMIT entries whose names
 * sort after CURSOR (NULL: from the start). *ret_next: the cursor of the
 * next page, NULL at the end. A PATH that is not a directory lists itself. */
int sbx_fs_list (int root, const char *path, const char *cursor, size_t limit, sbx_fs_entry **ret, size_t *ret_n,
                 char **ret_next, sbx_error **err);

int sbx_fs_mkdir (int root, const char *path, bool parents, sbx_error **err);
/* A symlink at PATH (which must not exist) pointing to TARGET, as given. */
int sbx_fs_symlink (int root, const char *path, const char *target, sbx_error **err);
/* Removes a file, symlink or other non-directory. */
int sbx_fs_rm (int root, const char *path, sbx_error **err);
/* Removes an empty directory, or with RECURSIVE a whole tree. */
int sbx_fs_rmdir (int root, const char *path, bool recursive, sbx_error **err);

/* find: every line of the regular files under PATH (PATH itself when it is
 * a file) whose name matches GLOB (NULL: all) that matches the POSIX
 * extended regular expression PATTERN. Binary files (a NUL in their first
 * 8 KiB) are skipped. */
typedef void (*sbx_fs_match_fn) (void *data, const char *path, uint64_t line_no, const char *line, size_t len);
int sbx_fs_find (int root, const char *path, const char *pattern, const char *glob, sbx_fs_match_fn fn, void *data,
                 sbx_error **err);

/* replace: every occurrence of OLD (literal, non-empty) by NEW in the same
 * files; each changed file is rewritten atomically with its mode and owner
 * kept. FN is told each changed file and its count. */
typedef void (*sbx_fs_count_fn) (void *data, const char *path, uint64_t count);
int sbx_fs_replace (int root, const char *path, const char *old, const char *new_, const char *glob, sbx_fs_count_fn fn,
                    void *data, sbx_error **err);

/* watch: events under PATH (RECURSIVE: and its subdirectories, new ones
 * included) until FN returns nonzero or STOP_FD (if >= 0) becomes readable
 * or reaches EOF. EVENT: create, modify, delete, overflow. */
typedef int (*sbx_fs_event_fn) (void *data, const char *event, const char *path, bool is_dir);
int sbx_fs_watch (int root, const char *path, bool recursive, int stop_fd, sbx_fs_event_fn fn, void *data,
                  sbx_error **err);

/* Copies between the host and ROOT (fs-host.c), each replacing its target
 * atomically; *RET_SIZE: the bytes written. Everything from IN into PATH
 * (MODE for a new file; KEEP_MODE: an existing file keeps its own). */
int sbx_fs_write_fd (int root, const char *path, int in, mode_t mode, bool keep_mode, uint64_t *ret_size,
                     sbx_error **err);
/* The regular host file HOST into PATH, or into PATH/its name when PATH is
 * a directory (as cp(1)); *RET_PATH: the path written. */
int sbx_fs_upload (int root, const char *host, const char *path, char **ret_path, uint64_t *ret_size, sbx_error **err);
/* PATH out to HOST, or to HOST/its name when HOST is a directory, with a
 * new host file's mode (0666 less the umask); *RET_TARGET: the host path. */
int sbx_fs_download (int root, const char *path, const char *host, char **ret_target, uint64_t *ret_size,
                     sbx_error **err);

/* ROOT for sandbox ID (fs-root.c): a running sandbox's merged root from its
 * monitor; an ended one's mounted in a private mount namespace of the
 * calling process (for the rest of its life), under the sandbox's fs lock,
 * read-only unless WRITE. */
struct sbx_store;
int sbx_fs_root (const struct sbx_store *st, const char *id, bool write, int *ret, sbx_error **err);
/* A running sandbox's root from its monitor, the file API set to its ids. */
int sbx_fs_root_running (const struct sbx_store *st, const char *id, int *ret, sbx_error **err);

#endif
