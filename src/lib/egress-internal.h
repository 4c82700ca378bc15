/* What egress.c and egress-state.c share: the names of sbx's chains and
 * sets in its table, and what a read of the table found. */
#ifndef SBX_EGRESS_INTERNAL_H
#define SBX_EGRESS_INTERNAL_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "nft.h"

#define CHAIN_PREFIX "sandbox-"
#define CHAIN_REFUSE "refuse"
#define CHAIN_FORWARD "forward"
#define CHAIN_INBOUND "inbound"
#define CHAIN_INPUT "input"
#define CHAIN_POSTROUTING "postrouting"
#define CHAIN_PRIVATE "private"
#define CHAIN_SOURCE "source"
#define SET_REFUSED4 "refused4"
#define SET_REFUSED6 "refused6"
#define SET_PRIVATE4 "private4"
#define SET_PRIVATE6 "private6"
#define SET_OPEN4 "open4"
#define SET_OPEN6 "open6"
#define COUNTER_SUFFIX "-private"
#define DSET4_SUFFIX "-dns4"
#define DSET6_SUFFIX "-dns6"
#define SET_DNS "dns-ifnames"

/* What apply and remove need to know of the table before changing it. */
typedef struct tstate {
  const char *table;
  const char *target; /* forward rules jumping here are this sandbox's */
  const char *ifname; /* forward rules for this interface too */
  uint32_t genid;
  char **chains;
  char **sets;
  char **counters;   /* the table's named counters */
  uint64_t *handles; /* the forward rules to delete */
  char (*rule_ifnames)[IFNAMSIZ];
  size_t nrules;
  uint64_t *src_handles; /* IFNAME's rules in chain source */
  size_t nsrc;
} tstate;
#define _cleanup_tstate_ __attribute__ ((cleanup (tstate_free)))

void tstate_free (tstate *t);
/* Whether the NULL-terminated V holds S. */
bool strv_has (char *const *v, const char *s);
/* Reads the generation id, then the table's chains. 1: changed meanwhile. */
int chains_read (nft *n, tstate *t, sbx_error **err);
/* Reads the generation id, then the table's chains, sets and counters, then
 * the forward and source rules of that sandbox (TARGET: by jump or comment)
 * or interface (IFNAME). 1: changed meanwhile. */
int tstate_read (nft *n, tstate *t, sbx_error **err);

#endif
