/*
 * client/bench/resp.h - the pieces of a RESP2 reader (redis.io's "Redis
 * serialization protocol specification") that brim-bench's redis adapter
 * (proto_redis.c) and its Redis Cluster slot map (rcluster.c) share: a
 * signed decimal, one element's header line, and the extent of a whole
 * value, arrays nested included. Pure: no I/O, no allocation.
 */
#ifndef BRIM_CLIENT_BENCH_RESP_H
#define BRIM_CLIENT_BENCH_RESP_H

#include <stddef.h>
#include <stdint.h>

/* Longest header line before a reader calls the stream broken, bytes. */
#define BRIM_BENCH_RESP_LINE_MAX 4096

/* Deepest nesting of arrays brim-bench reads (CLUSTER SLOTS needs 3). */
#define BRIM_BENCH_RESP_DEPTH_MAX 8

/*
 * The signed decimal that fills [P, END) exactly, at most 18 digits, into
 * *V. Returns 0, or -1 (nothing written) for anything else: no digit, a
 * stray byte, too many digits.
 */
int brim_bench_resp_i64(const char *p, const char *end, int64_t *v);

/*
 * The header line of the RESP element at BUF (LEN bytes, borrowed): *TYPE
 * its first byte ('+', '-', ':', '$' or '*'), *LINE the bytes of the line
 * with its CRLF, and for ':', '$' and '*' the number after the type in *V
 * (a length: -1 for a null bulk string or array; 0 for '+' and '-').
 * Returns 1 with all three written, 0 when the line is not complete yet,
 * or BRIM_EBADREPLY: no CRLF within BRIM_BENCH_RESP_LINE_MAX bytes, an
 * unknown type, a bad number, or a length below -1 or above 1 GiB.
 */
int brim_bench_resp_line(const char *buf, size_t len, char *type, int64_t *v,
                         size_t *line);

/*
 * The bytes of the whole RESP value at BUF (LEN bytes, borrowed), arrays
 * walked to at most BRIM_BENCH_RESP_DEPTH_MAX levels and bulk strings
 * checked for their CRLF. Returns the byte count (> 0), 0 when the value
 * is not complete yet, or BRIM_EBADREPLY (as brim_bench_resp_line(), or
 * nested too deep, or a bulk string without its CRLF).
 */
long brim_bench_resp_skip(const char *buf, size_t len);

#endif /* BRIM_CLIENT_BENCH_RESP_H */
