/*
 * client/bench/resp.c - the RESP2 reader pieces of resp.h. Every length
 * read from the stream is checked against the bytes at hand before it is
 * used, and nesting is bounded, so a hostile or broken server cannot make
 * the reader overrun or recurse without end.
 */
#include "client/bench/resp.h"

#include <string.h>

#include <brim/status.h>

/* Largest bulk string or array length taken, as redis's proto-max-bulk-len
 * default (512 MB) rounded up. */
#define RESP_LEN_MAX (1 << 30)

int
brim_bench_resp_i64(const char *p, const char *end, int64_t *v)
{
    int64_t x;
    int     neg, n;

    neg = p < end && *p == '-';
    p += neg;
    x = 0;
    n = 0;
    while (p < end && *p >= '0' && *p <= '9') {
        if (++n > 18) {
            return -1;
        }
        x = x * 10 + (*p++ - '0');
    }
    if (n == 0 || p != end) {
        return -1;
    }
    *v = neg ? -x : x;
    return 0;
}

int
brim_bench_resp_line(const char *buf, size_t len, char *type, int64_t *v,
                     size_t *line)
{
    const char *eol;
    int64_t     x;

    if (len == 0) {
        return 0; /* BUF may be NULL */
    }
    eol =
        memchr(buf, '\n',
               len < BRIM_BENCH_RESP_LINE_MAX ? len : BRIM_BENCH_RESP_LINE_MAX);
    if (eol == NULL) {
        return len >= BRIM_BENCH_RESP_LINE_MAX ? BRIM_EBADREPLY : 0;
    }
    if (eol - buf < 2 || eol[-1] != '\r') {
        return BRIM_EBADREPLY;
    }
    x = 0;
    switch (buf[0]) {
    case '+':
    case '-':
        break;
    case ':':
    case '$':
    case '*':
        if (brim_bench_resp_i64(buf + 1, eol - 1, &x) != 0
            || (buf[0] != ':' && (x < -1 || x > RESP_LEN_MAX)))
        {
            return BRIM_EBADREPLY;
        }
        break;
    default:
        return BRIM_EBADREPLY;
    }
    *type = buf[0];
    *v = x;
    *line = (size_t) (eol - buf) + 1;
    return 1;
}

/* brim_bench_resp_skip() at nesting DEPTH. */
static long
resp_skip(const char *buf, size_t len, unsigned depth)
{
    size_t  off, line, need;
    int64_t v, i;
    char    type;
    long    n;
    int     rc;

    rc = brim_bench_resp_line(buf, len, &type, &v, &line);
    if (rc <= 0) {
        return rc;
    }
    off = line;
    if (type == '$' && v >= 0) {
        need = off + (size_t) v + 2;
        if (len < need) {
            return 0;
        }
        if (buf[need - 2] != '\r' || buf[need - 1] != '\n') {
            return BRIM_EBADREPLY;
        }
        return (long) need;
    }
    if (type != '*' || v <= 0) {
        return (long) off;
    }
    if (depth >= BRIM_BENCH_RESP_DEPTH_MAX) {
        return BRIM_EBADREPLY;
    }
    for (i = 0; i < v; i++) {
        n = resp_skip(buf + off, len - off, depth + 1);
        if (n <= 0) {
            return n;
        }
        off += (size_t) n;
    }
    return (long) off;
}

long
brim_bench_resp_skip(const char *buf, size_t len)
{
    return resp_skip(buf, len, 0);
}
