/*
 * client/bench/workload.c - op mix, key choice, key text and --verify
 * values (workload.h). Draws compare the top 53 bits of one RNG output
 * with thresholds, which is exact for any ratio a double can hold.
 */
#include "client/bench/workload.h"

#include <string.h>

#include <brim/status.h>

#include "common/defs.h"

/* A ratio in [0, 1] as a threshold over 53-bit draws. */
static uint64_t
mix_threshold(double p)
{
    if (p <= 0.0) {
        return 0;
    }
    if (p >= 1.0) {
        return (uint64_t) 1 << 53;
    }
    return (uint64_t) (p * (double) ((uint64_t) 1 << 53));
}

int
brim_bench_mix_init(struct brim_bench_mix            *m,
                    const struct brim_bench_mix_conf *c)
{
    memset(m, 0, sizeof(*m));
    if (c->threads == 0 || c->thread >= c->threads || c->keys < c->threads
        || c->get_ratio < 0 || c->get_ratio > 1 || c->del_ratio < 0
        || c->del_ratio > 1 || c->ttl_ratio < 0 || c->ttl_ratio > 1
        || c->zipf_s < 0 || c->value_min > c->value_max
        || c->ttl_min_s > c->ttl_max_s)
    {
        return BRIM_EINVAL;
    }
    m->del_below = mix_threshold(c->del_ratio);
    m->get_below =
        m->del_below + mix_threshold((1.0 - c->del_ratio) * c->get_ratio);
    m->ttl_below = mix_threshold(c->ttl_ratio);
    m->stride = c->threads;
    m->offset = c->thread;
    m->nlocal = (c->keys - c->thread + c->threads - 1) / c->threads;
    m->value_min = c->value_min;
    m->value_max = c->value_max;
    m->ttl_min_s = c->ttl_min_s;
    m->ttl_max_s = c->ttl_max_s;
    if (c->zipf_s > 0 && m->nlocal >= 2) {
        if (brim_zipf_init(&m->zipf, m->nlocal, c->zipf_s) != 0) {
            return BRIM_EINVAL;
        }
        m->use_zipf = 1;
    }
    return 0;
}

uint32_t
brim_bench_mix_value_len(const struct brim_bench_mix *m, struct brim_rng *rng)
{
    if (m->value_min == m->value_max) {
        return m->value_min;
    }
    return m->value_min
        + (uint32_t) brim_rng_below(rng,
                                    (uint64_t) m->value_max - m->value_min + 1);
}

void
brim_bench_mix_next(const struct brim_bench_mix *m, struct brim_rng *rng,
                    struct brim_bench_op *op)
{
    uint64_t draw, local;

    if (m->use_zipf) {
        local = brim_zipf_next(&m->zipf, rng);
    } else {
        local = brim_rng_below(rng, m->nlocal);
    }
    op->key = local * m->stride + m->offset;
    op->start_ns = 0;
    op->value_len = 0;
    op->ttl_s = 0;
    draw = brim_rng_next(rng) >> 11;
    if (draw < m->del_below) {
        op->kind = BRIM_BENCH_DEL;
    } else if (draw < m->get_below) {
        op->kind = BRIM_BENCH_GET;
    } else {
        op->kind = BRIM_BENCH_SET;
        op->value_len = brim_bench_mix_value_len(m, rng);
        if (m->ttl_below != 0 && (brim_rng_next(rng) >> 11) < m->ttl_below) {
            op->ttl_s = m->ttl_min_s
                + (uint32_t) brim_rng_below(rng,
                                            m->ttl_max_s - m->ttl_min_s + 1);
        }
    }
}

uint64_t
brim_bench_mix_local(const struct brim_bench_mix *m, uint64_t key)
{
    return key / m->stride;
}

uint64_t
brim_bench_mix_global(const struct brim_bench_mix *m, uint64_t local)
{
    return local * m->stride + m->offset;
}

uint32_t
brim_bench_key_min_size(uint64_t keys)
{
    uint64_t top;
    uint32_t digits;

    top = keys == 0 ? 0 : keys - 1;
    digits = 1;
    while (top >= 10) {
        top /= 10;
        digits++;
    }
    return digits;
}

/*
 * --key-prefix: set by brim_bench_key_prefix_set() while the options are
 * parsed, before any thread starts; read-only afterwards, so the threads
 * share it without a lock.
 */
static char   key_prefix[BRIM_BENCH_KEY_MAX];
static size_t key_prefix_len;

int
brim_bench_key_prefix_set(const char *prefix, char errbuf[BRIM_ERRBUF_LEN])
{
    size_t len;

    len = strlen(prefix);
    if (len >= BRIM_BENCH_KEY_MAX) {
        brim_errfmt(errbuf, "--key-prefix is %zu bytes: keys have at most %d",
                    len, BRIM_BENCH_KEY_MAX);
        return BRIM_EINVAL;
    }
    memcpy(key_prefix, prefix, len);
    key_prefix_len = len;
    return 0;
}

size_t
brim_bench_key_prefix_len(void)
{
    return key_prefix_len;
}

/* The index part of a key: brim_bench_key_format() without the prefix. */
static void
key_index(char *buf, uint64_t key, uint32_t size)
{
    size_t i;

    memset(buf, '0', size);
    /* "key:" where any index (< 10^12, BRIM_BENCH_KEYS_MAX) still fits
     * after it, so that every key of one size has the same form. At 16
     * bytes this is redis-benchmark's "-r" key, "key:%012u". */
    if (size >= 4 + 12) {
        memcpy(buf, "key:", 4);
    }
    i = size;
    do {
        buf[--i] = (char) ('0' + key % 10);
        key /= 10;
    } while (key != 0 && i > 0);
}

size_t
brim_bench_key_format(char *buf, uint64_t key, uint32_t size)
{
    size_t plen;

    /* SIZE counts the prefix; the index fills the bytes after it (the
     * options refuse a prefix that leaves too few). */
    plen = key_prefix_len < size ? key_prefix_len : 0;
    memcpy(buf, key_prefix, plen);
    key_index(buf + plen, key, size - (uint32_t) plen);
    return size;
}

/* Append V in lower-case hex to P; returns the end. */
static char *
value_hex(char *p, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char              tmp[16];
    int               n;

    n = 0;
    do {
        tmp[n++] = digits[v & 15];
        v >>= 4;
    } while (v != 0);
    while (n > 0) {
        *p++ = tmp[--n];
    }
    return p;
}

size_t
brim_bench_value_build(char *buf, size_t len, uint32_t run, uint64_t key,
                       uint32_t seq)
{
    char  *p;
    size_t hlen;

    p = buf;
    *p++ = 'b';
    *p++ = 'b';
    *p++ = ':';
    p = value_hex(p, run);
    *p++ = ':';
    p = value_hex(p, key);
    *p++ = ':';
    p = value_hex(p, seq);
    *p++ = ':';
    hlen = (size_t) (p - buf);
    if (len <= hlen) {
        return hlen;
    }
    memset(p, '.', len - hlen);
    return len;
}

/* Parse hex digits at *P up to ':' within END; -1 if none or too many. */
static int
value_unhex(const char **p, const char *end, uint64_t *out)
{
    uint64_t v;
    int      n, c;

    v = 0;
    n = 0;
    while (*p < end && **p != ':') {
        c = (unsigned char) **p;
        if (c >= '0' && c <= '9') {
            c -= '0';
        } else if (c >= 'a' && c <= 'f') {
            c -= 'a' - 10;
        } else {
            return -1;
        }
        if (++n > 16) {
            return -1;
        }
        v = v << 4 | (uint64_t) c;
        (*p)++;
    }
    if (n == 0 || *p == end) {
        return -1;
    }
    (*p)++; /* the ':' */
    *out = v;
    return 0;
}

int64_t
brim_bench_value_parse(const char *value, size_t len, uint32_t run,
                       uint64_t key)
{
    const char *p, *end;
    uint64_t    r, k, s;

    if (len < 3 || memcmp(value, "bb:", 3) != 0) {
        return -1;
    }
    p = value + 3;
    end = value + len;
    if (value_unhex(&p, end, &r) != 0 || value_unhex(&p, end, &k) != 0
        || value_unhex(&p, end, &s) != 0)
    {
        return -1;
    }
    if (r != run || k != key || s > UINT32_MAX) {
        return -1;
    }
    return (int64_t) s;
}
