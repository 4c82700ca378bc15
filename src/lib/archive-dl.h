/* libarchive, loaded when first needed.
 *
 * Every sbx command would otherwise pay for loading libarchive and what it
 * links (libxml2, ICU, libstdc++): about 4 ms of a 5 ms `sbx exec` here. Only
 * image import and the built-in image need it, so they load it with dlopen
 * (as systemd does for its optional libraries) and call it through this
 * table. The headers still type-check every call. */
#ifndef SBX_ARCHIVE_DL_H
#define SBX_ARCHIVE_DL_H

#include <archive.h>
#include <archive_entry.h>

#include "error.h"

#define SBX_ARCHIVE_FUNCS(X)                  \
  X (archive_entry_filetype)                  \
  X (archive_entry_free)                      \
  X (archive_entry_hardlink)                  \
  X (archive_entry_new)                       \
  X (archive_entry_pathname)                  \
  X (archive_entry_rdev)                      \
  X (archive_entry_set_filetype)              \
  X (archive_entry_set_gid)                   \
  X (archive_entry_set_hardlink)              \
  X (archive_entry_set_mode)                  \
  X (archive_entry_set_mtime)                 \
  X (archive_entry_set_pathname)              \
  X (archive_entry_set_perm)                  \
  X (archive_entry_set_rdev)                  \
  X (archive_entry_set_size)                  \
  X (archive_entry_set_symlink)               \
  X (archive_entry_set_uid)                   \
  X (archive_entry_size)                      \
  X (archive_entry_symlink)                   \
  X (archive_entry_xattr_add_entry)           \
  X (archive_entry_xattr_clear)               \
  X (archive_entry_xattr_next)                \
  X (archive_entry_xattr_reset)               \
  X (archive_errno)                           \
  X (archive_error_string)                    \
  X (archive_filter_count)                    \
  X (archive_read_data_block)                 \
  X (archive_read_free)                       \
  X (archive_read_header_position)            \
  X (archive_read_new)                        \
  X (archive_read_next_header)                \
  X (archive_read_open)                       \
  X (archive_read_open_fd)                    \
  X (archive_read_support_filter_gzip)        \
  X (archive_read_support_filter_xz)          \
  X (archive_read_support_filter_zstd)        \
  X (archive_read_support_format_raw)         \
  X (archive_read_support_format_tar)         \
  X (archive_set_error)                       \
  X (archive_write_add_filter_gzip)           \
  X (archive_write_add_filter_none)           \
  X (archive_write_close)                     \
  X (archive_write_data)                      \
  X (archive_write_data_block)                \
  X (archive_write_disk_new)                  \
  X (archive_write_disk_set_options)          \
  X (archive_write_finish_entry)              \
  X (archive_write_free)                      \
  X (archive_write_header)                    \
  X (archive_write_new)                       \
  X (archive_write_open)                      \
  X (archive_write_set_bytes_in_last_block)   \
  X (archive_write_set_filter_option)         \
  X (archive_write_set_format_option)         \
  X (archive_write_set_format_pax_restricted) \
  X (archive_write_set_format_raw)

struct sbx_archive_api {
#define X(f) __typeof__ (f) *f;
  SBX_ARCHIVE_FUNCS (X)
#undef X
};

extern struct sbx_archive_api sbx_ar;

/* libarchive handles: one cleanup attribute per way of freeing them. */
static inline void
archive_read_freep (struct archive **a)
{
  if (*a)
    sbx_ar.archive_read_free (*a);
}
static inline void
archive_write_freep (struct archive **a)
{
  if (*a)
    sbx_ar.archive_write_free (*a);
}
static inline void
archive_entry_freep (struct archive_entry **e)
{
  if (*e)
    sbx_ar.archive_entry_free (*e);
}
#define _cleanup_archive_read_ __attribute__ ((cleanup (archive_read_freep)))
#define _cleanup_archive_write_ __attribute__ ((cleanup (archive_write_freep)))
#define _cleanup_archive_entry_ __attribute__ ((cleanup (archive_entry_freep)))

/* Loads libarchive once; INTERNAL naming the package when it is missing. */
int sbx_archive_load (sbx_error **err);

/* Lets reader A undo gzip, xz and zstd, with libarchive's own code only: for
 * the others it would run an external program on untrusted input. */
int sbx_archive_read_filters (struct archive *a, sbx_error **err);

/* A libarchive failure of A while doing WHAT: the host running out of
 * something is INTERNAL, anything else (a corrupt stream, an entry that
 * cannot be created as asked) is the archive's fault and INVALID_ARGUMENT. */
int sbx_archive_fail (sbx_error **err, struct archive *a, const char *what);

#endif
