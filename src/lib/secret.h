/* Secrets and the audit log: the store of named secrets (ROOT/secrets/NAME,
 * the value alone, 0600 in a 0700 directory, written atomically), the
 * --secret / --secret-file references of a sandbox's options, and
 * ROOT/audit.log (JSON lines, appended with O_APPEND, 0600). Values are read
 * only by the monitor that hands them to the sandbox's agent; they are never
 * in a record, a message or a log. */
#ifndef SBX_SECRET_H
#define SBX_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "proto.h"
#include "sandbox.h"
#include "store.h"

/* The audit log is read whole, at most this much. */
#define SBX_AUDIT_MAX (64u << 20)
#define SBX_AUDIT_EVENT_SECRETS "sandbox.secrets_attached"

typedef struct sbx_secret_info {
  char *name;
  int64_t created; /* unix seconds: when the value was stored (create or --replace) */
} sbx_secret_info;

void sbx_secret_infos_free (sbx_secret_info *v, size_t n);

/* Stores VALUE (1..SBX_SECRET_VALUE_MAX bytes, no NUL) as secret NAME:
 * BUSY when it exists and REPLACE is false. */
int sbx_secret_create (const sbx_store *st, const char *name, const void *value, size_t len, bool replace,
                       sbx_error **err);
/* Every secret, sorted by name. */
int sbx_secret_list (const sbx_store *st, sbx_secret_info **ret, size_t *ret_n, sbx_error **err);
/* NOT_FOUND when there is none. */
int sbx_secret_remove (const sbx_store *st, const char *name, sbx_error **err);
/* The value of NAME (NUL-terminated copy, *ret_len without it), or NOT_FOUND.
 * The caller wipes and frees it (sbx_secret_value_free). */
int sbx_secret_read (const sbx_store *st, const char *name, char **ret_value, size_t *ret_len, sbx_error **err);
void sbx_secret_value_free (char *value, size_t len);
/* Removes the temp files killed creates left (sbx gc). */
void sbx_secret_gc (const sbx_store *st);
/* NOT_FOUND unless NAME is a stored secret. */
int sbx_secret_check (const sbx_store *st, const char *name, sbx_error **err);

/* One --secret NAME[=VAR] or --secret-file NAME: the secret and, for an
 * environment variable, its key. */
typedef struct sbx_secret_ref {
  char *name;
  char *var; /* NULL for a file */
} sbx_secret_ref;

/* Parses --secret SPEC: NAME, or NAME=VAR; VAR (or NAME without one) a
 * valid environment key. */
int sbx_secret_ref_parse (const char *spec, sbx_secret_ref *ret, sbx_error **err);
void sbx_secret_ref_clear (sbx_secret_ref *r);
/* The secrets part of sbx_sandbox_opts_validate: each reference well
 * formed, no variable or file twice, at most SBX_SECRETS_MAX, and
 * SECRETS_NOT_ALLOWED without allow_secrets. */
int sbx_secret_opts_validate (const sbx_sandbox_opts *o, sbx_error **err);
/* True when O attaches any secret. */
bool sbx_secret_opts_any (const sbx_sandbox_opts *o);
/* Every secret O names exists (NOT_FOUND names the first that does not). */
int sbx_secret_opts_check (const sbx_store *st, const sbx_sandbox_opts *o, sbx_error **err);
/* The SECRET frames' payloads for O, values read from the store, one after
 * the other as (u32 length, payload) in *ret (wiped and freed by the
 * caller with sbx_secret_value_free). */
int sbx_secret_opts_payloads (const sbx_store *st, const sbx_sandbox_opts *o, char **ret, size_t *ret_len,
                              sbx_error **err);

/* Appends one record to ROOT/audit.log: {"time", "unix", "event",
 * "sandbox", "secrets", "uid"}; NAMES are the secrets' names. */
int sbx_audit_append (const sbx_store *st, const char *event, const char *sandbox_id, char *const *names,
                      sbx_error **err);
/* The names of the secrets O attaches, each once, in order. */
char **sbx_secret_opts_names (const sbx_sandbox_opts *o);
typedef struct sbx_audit_record {
  char *time; /* RFC 3339 UTC */
  int64_t unix_time;
  char *event;
  char *sandbox;
  char **secrets;
  int64_t uid;
} sbx_audit_record;

void sbx_audit_records_free (sbx_audit_record *v, size_t n);
/* The records with unix >= SINCE (0: all), oldest first; a line that is
 * not a record is INTERNAL (the log is sbx's alone). No log: none. */
int sbx_audit_read (const sbx_store *st, int64_t since, sbx_audit_record **ret, size_t *ret_n, sbx_error **err);
/* --since: RFC 3339 UTC (2026-01-02T03:04:05Z), unix seconds, or a
 * duration before NOW (30s, 10m, 2h, 7d). */
int sbx_audit_parse_since (const char *s, int64_t now, int64_t *ret, sbx_error **err);

#endif
