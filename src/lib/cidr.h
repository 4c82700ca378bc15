/* CIDRs: the one strict parser of addresses and networks that the
 * command line (--allow), sbx.conf and the egress rules share, and the few
 * operations on them those need. */
#ifndef SBX_CIDR_H
#define SBX_CIDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct sbx_cidr {
  int family;       /* AF_INET or AF_INET6; 0 means "none" where optional */
  unsigned prefix;  /* 0..32 or 0..128 */
  uint8_t addr[16]; /* network byte order, host bits zero; IPv4 in the first 4 */
} sbx_cidr;

/* "a.b.c.d/len", "a.b.c.d" (/32), "IPV6/len" or "IPV6" (/128). Strict:
 * decimal octets without leading zeros, no spaces, no empty parts, a prefix
 * within the family, no host bits set beyond the prefix. INVALID_ARGUMENT
 * otherwise. */
int sbx_cidr_parse (const char *s, sbx_cidr *ret, sbx_error **err);

/* "10.0.0.0/8", "fe80::/10": always with the prefix. */
#define SBX_CIDR_STRLEN 64
void sbx_cidr_format (const sbx_cidr *c, char buf[SBX_CIDR_STRLEN]);
bool sbx_cidr_equal (const sbx_cidr *a, const sbx_cidr *b);

/* Helpers for egress, exported for nft.c. */
unsigned cidr_width (const sbx_cidr *c);
void clear_host_bits (sbx_cidr *c);
bool cidr_valid (const sbx_cidr *c);
sbx_cidr cidr_const (const char *s);

#endif
