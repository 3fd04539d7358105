/*
 * common/parse.h - the one place brim turns text into numbers and
 * addresses: whole numbers in a range, decimals in a range, and
 * "host:port" split into its host and port (IPv6 in brackets). Pure: no
 * I/O, no sockets (resolving a host is the caller's, with its own
 * library). Every command-line tool and daemon parses its flags with
 * these, and writes its own message around a refusal.
 */
#ifndef BRIM_COMMON_PARSE_H
#define BRIM_COMMON_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include <brim/status.h>

/* The longest host "host:port" may carry (a DNS name is at most 253). */
#define BRIM_HOST_MAX 255

/*
 * Parse TEXT (borrowed) as a whole decimal number from MIN to MAX: ASCII
 * digits only, at least one, no sign, no spaces, no base prefix. On
 * success writes *OUT and returns 0; returns BRIM_EINVAL (not such a
 * number, or out of the range, or above 2^64 - 1) and writes nothing.
 */
int brim_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out);

/* brim_parse_u64() into a 32-bit *OUT (MAX at most UINT32_MAX). */
int brim_parse_u32(const char *text, uint32_t min, uint32_t max, uint32_t *out);

/*
 * Parse TEXT as a finite decimal number from MIN to MAX (a fraction and
 * an exponent allowed, as strtod takes them, with nothing after it).
 * Returns 0 with *OUT, or BRIM_EINVAL.
 */
int brim_parse_double(const char *text, double min, double max, double *out);

/*
 * Parse TEXT as "MIN-MAX" (two whole numbers, MIN <= MAX) or one whole
 * number N (MIN = MAX = N), each from LO to HI. Returns 0 with *OUT_MIN
 * and *OUT_MAX, or BRIM_EINVAL.
 */
int brim_parse_u64_range(const char *text, uint64_t lo, uint64_t hi,
                         uint64_t *out_min, uint64_t *out_max);

/*
 * Split ADDR ("host:port", or "[v6addr]:port" so that an IPv6 address's
 * own colons stay apart from the port's) into HOST (HOST_SIZE bytes with
 * its NUL, caller's memory) and *PORT. PORT_MIN is 0 for a listener (any
 * free port) and 1 for a peer. A bare IPv6 address without brackets is
 * refused (the port could not be told apart). Returns 0, or BRIM_EINVAL
 * with ERRBUF (NULL allowed) naming ADDR and what is wrong; on error HOST
 * and *PORT are unchanged.
 */
int brim_addr_split(const char *addr, char *host, size_t host_size,
                    uint32_t port_min, uint16_t *port,
                    char errbuf[BRIM_ERRBUF_LEN]);

#endif /* BRIM_COMMON_PARSE_H */
