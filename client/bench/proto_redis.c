/*
 * client/bench/proto_redis.c - the Redis protocol, RESP2 (redis.io's
 * "Redis serialization protocol specification"), for brim-bench: GET, SET
 * with EX for a TTL, DEL, and "INFO stats" for evicted_keys. Requests are
 * arrays of bulk strings; replies are the simple string, error, integer
 * and bulk string types. The redis-cluster adapter is the same code: a
 * request resent after ASK starts with ASKING, whose +OK the parser takes
 * with the reply, and the cluster's errors (MOVED, ASK, TRYAGAIN,
 * CLUSTERDOWN) are told apart for the engine to resend; CLUSTER SLOTS is
 * the slot map probe (rcluster.c reads its reply).
 */
#include "client/bench/proto.h"

#include <string.h>

#include <brim/status.h>

#include "client/bench/rcluster.h"
#include "client/bench/resp.h"

/* Longest reply line before the parser calls the stream broken. */
#define REDIS_LINE_MAX BRIM_BENCH_RESP_LINE_MAX

/* The longest a request is beside its key and value. */
#define REDIS_REQ_SLACK 128

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
    if (req->asking) {
        p = redis_put(p, "*1\r\n$6\r\nASKING\r\n", 16);
    }
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
    case BRIM_BENCH_SLOTS:
        p = redis_put(p, "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n", 28);
        break;
    default:
        return BRIM_EINVAL;
    }
    brim_buf_commit(out, (size_t) (p - start));
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
            && brim_bench_resp_i64(p + sizeof(name) - 1,
                                   eol > p && eol[-1] == '\r' ? eol - 1 : eol,
                                   &v)
                == 0)
        {
            return v;
        }
    }
    return -1;
}

/*
 * An error reply's text (REP->message): MOVED and ASK become BRIM_EMOVED
 * with the slot and the address named, TRYAGAIN and CLUSTERDOWN
 * BRIM_ERETRY; any other error is BRIM_EBADREQ. A MOVED or ASK without a
 * slot and an address breaks the stream.
 */
static int
redis_error(struct brim_bench_rep *rep)
{
    struct brim_bench_rcluster_redirect r;
    int                                 rc;

    rep->status = BRIM_EBADREQ;
    rc = brim_bench_rcluster_redirect_parse(rep->message, rep->message_len, &r);
    if (rc == BRIM_EBADREPLY) {
        return rc;
    }
    if (rc == 0) {
        rep->status = BRIM_EMOVED;
        rep->ask = (uint8_t) r.ask;
        rep->slot = r.slot;
        rep->addr = r.addr;
        rep->addr_len = r.addr_len;
    } else if (brim_bench_rcluster_retryable(rep->message, rep->message_len)) {
        rep->status = BRIM_ERETRY;
    }
    return 0;
}

static long redis_parse(void *ctx, const char *buf, size_t len,
                        const struct brim_bench_req *req,
                        struct brim_bench_rep       *rep);

/*
 * REQ went with ASKING first: take ASKING's reply (+OK, or an error that
 * is then REQ's outcome, as the command cannot have been meant for this
 * node) and the command's after it, as one.
 */
static long
redis_parse_asking(void *ctx, const char *buf, size_t len,
                   const struct brim_bench_req *req, struct brim_bench_rep *rep)
{
    struct brim_bench_req cmd;
    struct brim_bench_rep first;
    int64_t               v;
    size_t                line;
    long                  n;
    char                  type;
    int                   rc;

    rc = brim_bench_resp_line(buf, len, &type, &v, &line);
    if (rc <= 0) {
        return rc;
    }
    if (type != '+' && type != '-') {
        return BRIM_EBADREPLY;
    }
    cmd = *req;
    cmd.asking = 0;
    n = redis_parse(ctx, buf + line, len - line, &cmd, rep);
    if (n <= 0) {
        return n;
    }
    if (type == '-') {
        memset(&first, 0, sizeof(first));
        first.evictions = -1;
        first.message = buf + 1;
        first.message_len = line - 3;
        (void) redis_error(&first); /* a MOVED here is malformed: EBADREQ */
        *rep = first;               /* the command's reply is dropped */
    }
    return (long) line + n;
}

static long
redis_parse(void *ctx, const char *buf, size_t len,
            const struct brim_bench_req *req, struct brim_bench_rep *rep)
{
    const char *eol;
    int64_t     v;
    size_t      n, need;
    long        slots;

    memset(rep, 0, sizeof(*rep));
    rep->evictions = -1;
    if (len == 0) {
        return 0; /* BUF may be NULL */
    }
    if (req->asking) {
        return redis_parse_asking(ctx, buf, len, req, rep);
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
        rep->message = buf + 1;
        rep->message_len = n - 3;
        return redis_error(rep) == 0 ? (long) n : BRIM_EBADREPLY;
    case '*':
        if (req->kind != BRIM_BENCH_SLOTS) {
            return BRIM_EBADREPLY;
        }
        slots = brim_bench_resp_skip(buf, len);
        if (slots > 0) {
            rep->value = buf; /* the whole array, for rcluster.c */
            rep->value_len = (size_t) slots;
        }
        return slots;
    case ':':
        if (req->kind != BRIM_BENCH_DEL
            || brim_bench_resp_i64(buf + 1, eol - 1, &v) != 0)
        {
            return BRIM_EBADREPLY;
        }
        rep->status = v > 0 ? 0 : BRIM_ENOTFOUND;
        return (long) n;
    case '$':
        if ((req->kind != BRIM_BENCH_GET && req->kind != BRIM_BENCH_STATS)
            || brim_bench_resp_i64(buf + 1, eol - 1, &v) != 0 || v < -1
            || v > (1 << 30))
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

const struct brim_bench_proto brim_bench_proto_redis_cluster = {
    .name = "redis-cluster",
    .has_hello = 0,
    .default_port = 6379,
    .slots = 1,
    .open = redis_open,
    .close = redis_close,
    .encode = redis_encode,
    .parse = redis_parse,
};
