/*
 * client/bench/proto_redis.c - the Redis protocol, RESP2 (redis.io's
 * "Redis serialization protocol specification"), for brim-bench: GET, SET
 * with EX for a TTL, DEL, and "INFO stats" for evicted_keys. Requests are
 * arrays of bulk strings; replies are the simple string, error, integer
 * and bulk string types.
 */
#include "client/bench/proto.h"

#include <string.h>

#include <brim/status.h>

/* Longest reply line before the parser calls the stream broken. */
#define REDIS_LINE_MAX 4096

/* The longest a request is beside its key and value. */
#define REDIS_REQ_SLACK 96

static int
redis_open(void **ctx)
{
    *ctx = NULL;
    return 0;
}

static void
redis_close(void *ctx)
{
    (void) ctx;
}

static char *
redis_put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

/* "$<len>\r\n<bytes>\r\n" */
static char *
redis_bulk(char *p, const char *s, size_t n)
{
    *p++ = '$';
    p += brim_bench_put_u64(p, n);
    p = redis_put(p, "\r\n", 2);
    p = redis_put(p, s, n);
    return redis_put(p, "\r\n", 2);
}

static int
redis_encode(struct brim_buf *out, void *ctx, const struct brim_bench_req *req,
             const char *key, size_t key_len, const char *value,
             size_t value_len)
{
    char  ttl[20];
    char *p, *start;

    (void) ctx;
    if (brim_buf_reserve(out, key_len + value_len + REDIS_REQ_SLACK) != 0) {
        return BRIM_ENOMEM;
    }
    start = p = brim_buf_tail(out);
    switch (req->kind) {
    case BRIM_BENCH_GET:
        p = redis_put(p, "*2\r\n$3\r\nGET\r\n", 13);
        p = redis_bulk(p, key, key_len);
        break;
    case BRIM_BENCH_SET:
        if (req->ttl_s == 0) {
            p = redis_put(p, "*3\r\n$3\r\nSET\r\n", 13);
        } else {
            p = redis_put(p, "*5\r\n$3\r\nSET\r\n", 13);
        }
        p = redis_bulk(p, key, key_len);
        p = redis_bulk(p, value, value_len);
        if (req->ttl_s != 0) {
            p = redis_put(p, "$2\r\nEX\r\n", 8);
            p = redis_bulk(p, ttl, brim_bench_put_u64(ttl, req->ttl_s));
        }
        break;
    case BRIM_BENCH_DEL:
        p = redis_put(p, "*2\r\n$3\r\nDEL\r\n", 13);
        p = redis_bulk(p, key, key_len);
        break;
    case BRIM_BENCH_STATS:
        p = redis_put(p, "*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n", 25);
        break;
    default:
        return BRIM_EINVAL;
    }
    brim_buf_commit(out, (size_t) (p - start));
    return 0;
}

/* A signed decimal filling [P, END); -1 on anything else. */
static int
redis_i64(const char *p, const char *end, int64_t *v)
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

/* The evicted_keys field of an "INFO stats" text (LEN bytes). */
static int64_t
redis_evictions(const char *text, size_t len)
{
    static const char name[] = "evicted_keys:";
    const char       *p, *end, *eol;
    int64_t           v;

    end = text + len;
    for (p = text; p < end; p = eol + 1) {
        eol = memchr(p, '\n', (size_t) (end - p));
        if (eol == NULL) {
            eol = end;
        }
        if ((size_t) (eol - p) > sizeof(name) - 1
            && memcmp(p, name, sizeof(name) - 1) == 0
            && redis_i64(p + sizeof(name) - 1,
                         eol > p && eol[-1] == '\r' ? eol - 1 : eol, &v)
                == 0)
        {
            return v;
        }
    }
    return -1;
}

static long
redis_parse(void *ctx, const char *buf, size_t len,
            const struct brim_bench_req *req, struct brim_bench_rep *rep)
{
    const char *eol;
    int64_t     v;
    size_t      n, need;

    (void) ctx;
    memset(rep, 0, sizeof(*rep));
    rep->evictions = -1;
    if (len == 0) {
        return 0; /* BUF may be NULL */
    }
    eol = memchr(buf, '\n', len < REDIS_LINE_MAX ? len : REDIS_LINE_MAX);
    if (eol == NULL) {
        return len >= REDIS_LINE_MAX ? BRIM_EBADREPLY : 0;
    }
    if (eol - buf < 1 || eol[-1] != '\r') {
        return BRIM_EBADREPLY;
    }
    n = (size_t) (eol - buf) + 1; /* the line with its CRLF */
    switch (buf[0]) {
    case '+':
        if (req->kind != BRIM_BENCH_SET) {
            return BRIM_EBADREPLY;
        }
        rep->status = 0;
        return (long) n;
    case '-':
        rep->status = BRIM_EBADREQ;
        rep->message = buf + 1;
        rep->message_len = n - 3;
        return (long) n;
    case ':':
        if (req->kind != BRIM_BENCH_DEL || redis_i64(buf + 1, eol - 1, &v) != 0)
        {
            return BRIM_EBADREPLY;
        }
        rep->status = v > 0 ? 0 : BRIM_ENOTFOUND;
        return (long) n;
    case '$':
        if ((req->kind != BRIM_BENCH_GET && req->kind != BRIM_BENCH_STATS)
            || redis_i64(buf + 1, eol - 1, &v) != 0 || v < -1 || v > (1 << 30))
        {
            return BRIM_EBADREPLY;
        }
        if (v == -1) {
            rep->status = BRIM_ENOTFOUND;
            return (long) n;
        }
        need = n + (size_t) v + 2;
        if (len < need) {
            return 0;
        }
        if (buf[need - 2] != '\r' || buf[need - 1] != '\n') {
            return BRIM_EBADREPLY;
        }
        rep->status = 0;
        rep->value = buf + n;
        rep->value_len = (size_t) v;
        if (req->kind == BRIM_BENCH_STATS) {
            rep->evictions = redis_evictions(rep->value, rep->value_len);
        }
        return (long) need;
    default:
        return BRIM_EBADREPLY;
    }
}

const struct brim_bench_proto brim_bench_proto_redis = {
    .name = "redis",
    .has_hello = 0,
    .default_port = 6379,
    .open = redis_open,
    .close = redis_close,
    .encode = redis_encode,
    .parse = redis_parse,
};
