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

/* 32 or 128: the bits of C's family. */
unsigned sbx_cidr_width (const sbx_cidr *c);
/* Zeroes the bits of C beyond its prefix. */
void sbx_cidr_clear_host_bits (sbx_cidr *c);
/* A CIDR handed in as a struct: a family, a prefix within it, no host bits,
 * nothing past an IPv4 address. */
bool sbx_cidr_valid (const sbx_cidr *c);
/* A constant of the program's own ("10.0.0.0/8"): aborts if it does not
 * parse. */
sbx_cidr sbx_cidr_const (const char *s);
/* Whether INNER lies inside OUTER (same family, prefix at least OUTER's). */
bool sbx_cidr_contains (const sbx_cidr *outer, const sbx_cidr *inner);
/* Whether A and B share an address. */
bool sbx_cidr_overlaps (const sbx_cidr *a, const sbx_cidr *b);
/* Whether the address is all zeros (0.0.0.0, ::), whatever the prefix. */
bool sbx_cidr_is_unspecified (const sbx_cidr *c);
/* Adds N to C's address (the prefix stays), wrapping within its family. */
void sbx_cidr_add (sbx_cidr *c, uint64_t n);

/* An address literal: what sbx_cidr_parse takes, without a prefix ("a
 * network" is refused); the host CIDR (/32, /128) into *RET. Errors say
 * "invalid address" rather than "invalid CIDR". */
int sbx_cidr_address_parse (const char *s, sbx_cidr *ret, sbx_error **err);
/* The address of C without its prefix, malloc'd: "10.0.0.1", "fd00::1". */
char *sbx_cidr_address_text (const sbx_cidr *c);

#endif
