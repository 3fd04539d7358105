/*
 * client/bench/proto_mc.c - memcached's text protocol for brim-bench
 * (memcached's doc/protocol.txt): "get" of one key, "set" with an
 * exptime, "delete", and "stats" for the evictions counter. No "noreply":
 * every request gets its reply, in order.
 */
#include "client/bench/proto.h"

#include <string.h>

#include <brim/status.h>

/* Longest reply line before the parser calls the stream broken. */
#define MC_LINE_MAX 4096

/* The longest a request's line is beside its key and value. */
#define MC_REQ_SLACK 64

static int
mc_open(void **ctx)
{
    *ctx = NULL;
    return 0;
}

static void
mc_close(void *ctx)
{
    (void) ctx;
}

static char *
mc_put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

static int
mc_encode(struct brim_buf *out, void *ctx, const struct brim_bench_req *req,
          const char *key, size_t key_len, const char *value, size_t value_len)
{
    char *p, *start;

    (void) ctx;
    if (brim_buf_reserve(out, key_len + value_len + MC_REQ_SLACK) != 0) {
        return BRIM_ENOMEM;
    }
    start = p = brim_buf_tail(out);
    switch (req->kind) {
    case BRIM_BENCH_GET:
        p = mc_put(p, "get ", 4);
        p = mc_put(p, key, key_len);
        break;
    case BRIM_BENCH_SET:
        p = mc_put(p, "set ", 4);
        p = mc_put(p, key, key_len);
        p = mc_put(p, " 0 ", 3);
        p += brim_bench_put_u64(p, req->ttl_s);
        *p++ = ' ';
        p += brim_bench_put_u64(p, value_len);
        p = mc_put(p, "\r\n", 2);
        p = mc_put(p, value, value_len);
        break;
    case BRIM_BENCH_DEL:
        p = mc_put(p, "delete ", 7);
        p = mc_put(p, key, key_len);
        break;
    case BRIM_BENCH_STATS:
        p = mc_put(p, "stats", 5);
        break;
    default:
        return BRIM_EINVAL;
    }
    p = mc_put(p, "\r\n", 2);
    brim_buf_commit(out, (size_t) (p - start));
    return 0;
}

/* Does LINE (LEN bytes, without CRLF) equal the C string S? */
static int
mc_is(const char *line, size_t len, const char *s)
{
    size_t n = strlen(s);

    return len == n && memcmp(line, s, n) == 0;
}

/* Does LINE (LEN bytes) start with the C string S? */
static int
mc_starts(const char *line, size_t len, const char *s)
{
    size_t n = strlen(s);

    return len >= n && memcmp(line, s, n) == 0;
}

/* An unsigned decimal at *P within END, ended by a space or END. */
static int
mc_u64(const char **p, const char *end, uint64_t *v)
{
    uint64_t x;
    int      n;

    x = 0;
    n = 0;
    while (*p < end && **p >= '0' && **p <= '9') {
        if (++n > 19) {
            return -1;
        }
        x = x * 10 + (uint64_t) (**p - '0');
        (*p)++;
    }
    if (n == 0 || (*p < end && **p != ' ')) {
        return -1;
    }
    *v = x;
    return 0;
}

/*
 * The line at BUF (LEN bytes available): its length without CRLF in
 * *TEXT_LEN and with it as the return value; 0 when incomplete,
 * BRIM_EBADREPLY when too long or not ended by CRLF.
 */
static long
mc_line(const char *buf, size_t len, size_t *text_len)
{
    const char *eol;

    eol = memchr(buf, '\n', len < MC_LINE_MAX ? len : MC_LINE_MAX);
    if (eol == NULL) {
        return len >= MC_LINE_MAX ? BRIM_EBADREPLY : 0;
    }
    if (eol == buf || eol[-1] != '\r') {
        return BRIM_EBADREPLY;
    }
    *text_len = (size_t) (eol - buf) - 1;
    return (long) (eol - buf) + 1;
}

/* "VALUE <key> <flags> <bytes> [<cas>]" then the data, CRLF, "END". */
static long
mc_value(const char *buf, size_t len, const char *line, size_t line_len, long n,
         struct brim_bench_rep *rep)
{
    const char *p, *end;
    uint64_t    flags, bytes;
    size_t      need;

    p = line + 6;
    end = line + line_len;
    p = memchr(p, ' ', (size_t) (end - p)); /* after the key */
    if (p == NULL) {
        return BRIM_EBADREPLY;
    }
    p++;
    if (mc_u64(&p, end, &flags) != 0 || p == end) {
        return BRIM_EBADREPLY;
    }
    p++;
    if (mc_u64(&p, end, &bytes) != 0 || bytes > (1u << 30)) {
        return BRIM_EBADREPLY;
    }
    need = (size_t) n + bytes + 2 + 5;
    if (len < need) {
        return 0;
    }
    if (memcmp(buf + n + bytes, "\r\nEND\r\n", 7) != 0) {
        return BRIM_EBADREPLY;
    }
    rep->status = 0;
    rep->value = buf + n;
    rep->value_len = bytes;
    return (long) need;
}

/* "STAT name value" lines up to "END": the evictions counter. */
static long
mc_stats(const char *buf, size_t len, struct brim_bench_rep *rep)
{
    const char *p;
    size_t      off, tl;
    uint64_t    v;
    long        n;

    off = 0;
    for (;;) {
        n = mc_line(buf + off, len - off, &tl);
        if (n <= 0) {
            return n;
        }
        if (mc_is(buf + off, tl, "END")) {
            rep->status = 0;
            return (long) off + n;
        }
        if (!mc_starts(buf + off, tl, "STAT ")) {
            return BRIM_EBADREPLY;
        }
        if (mc_starts(buf + off, tl, "STAT evictions ")) {
            p = buf + off + 15;
            if (mc_u64(&p, buf + off + tl, &v) == 0) {
                rep->evictions = (int64_t) v;
            }
        }
        off += (size_t) n;
    }
}

static long
mc_parse(void *ctx, const char *buf, size_t len,
         const struct brim_bench_req *req, struct brim_bench_rep *rep)
{
    size_t tl;
    long   n;

    (void) ctx;
    memset(rep, 0, sizeof(*rep));
    rep->evictions = -1;
    if (len == 0) {
        return 0; /* BUF may be NULL */
    }
    if (req->kind == BRIM_BENCH_STATS) {
        return mc_stats(buf, len, rep);
    }
    n = mc_line(buf, len, &tl);
    if (n <= 0) {
        return n;
    }
    if (mc_is(buf, tl, "ERROR") || mc_starts(buf, tl, "CLIENT_ERROR ")
        || mc_starts(buf, tl, "SERVER_ERROR "))
    {
        rep->status = buf[0] == 'S' ? BRIM_EBUSY : BRIM_EBADREQ;
        rep->message = buf;
        rep->message_len = tl;
        return n;
    }
    switch (req->kind) {
    case BRIM_BENCH_GET:
        if (mc_is(buf, tl, "END")) {
            rep->status = BRIM_ENOTFOUND;
            return n;
        }
        if (mc_starts(buf, tl, "VALUE ")) {
            return mc_value(buf, len, buf, tl, n, rep);
        }
        break;
    case BRIM_BENCH_SET:
        if (mc_is(buf, tl, "STORED")) {
            rep->status = 0;
            return n;
        }
        if (mc_is(buf, tl, "NOT_STORED")) {
            rep->status = BRIM_ENOTSTORED;
            return n;
        }
        break;
    case BRIM_BENCH_DEL:
        if (mc_is(buf, tl, "DELETED")) {
            rep->status = 0;
            return n;
        }
        if (mc_is(buf, tl, "NOT_FOUND")) {
            rep->status = BRIM_ENOTFOUND;
            return n;
        }
        break;
    default:
        break;
    }
    return BRIM_EBADREPLY;
}

const struct brim_bench_proto brim_bench_proto_memcached = {
    .name = "memcached",
    .has_hello = 0,
    .default_port = 11211,
    .open = mc_open,
    .close = mc_close,
    .encode = mc_encode,
    .parse = mc_parse,
};
