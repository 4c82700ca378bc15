/* Domain rules of --allow-domain (DESIGN.md section 5): NAME (that name
 * only) or *.NAME (any name under NAME, not NAME itself), and the one
 * matcher the resolver asks. Rules come from the user, names from a
 * sandbox's queries: both are outside input. */
#ifndef SBX_DOMAIN_H
#define SBX_DOMAIN_H

#include <stdbool.h>

#include "error.h"

/* The most rules a sandbox may have. */
#define SBX_DOMAINS_MAX 256

/* Checks the rule S: labels of letters, digits, '-' and '_' (no '-' at
 * either end), 1..63 bytes each, at most 253 bytes in all, at least two
 * labels after an optional leading "*." (`*.com` would open a whole top
 * level domain, `*` everything: use --open), not an IP address, one
 * trailing dot allowed. *RET (caller frees): the rule in lower case without
 * the trailing dot. INVALID_ARGUMENT says why. */
int sbx_domain_rule_parse (const char *s, char **ret, sbx_error **err);

/* Checks every rule of the NULL-terminated V (NULL: none) and their count;
 * *RET (may be NULL) the normalized rules, duplicates dropped. */
int sbx_domain_rules_parse (char *const *v, char ***ret, sbx_error **err);

/* Whether NAME (the resolver's text: lower case, no trailing dot) is
 * matched by one of the normalized RULES. */
bool sbx_domain_match (char *const *rules, const char *name);

#endif
