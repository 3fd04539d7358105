/*
 * client/bench/rcluster.c - the I/O-free parts of brim-bench's Redis
 * Cluster target (rcluster.h): CRC16 and the hash slot, the CLUSTER SLOTS
 * reply, and the MOVED, ASK, TRYAGAIN and CLUSTERDOWN errors. The CRC is
 * computed bit by bit from the polynomial 0x1021 (a key is at most 250
 * bytes: a table would buy nothing that shows). Replies are walked with
 * resp.c's reader, every count checked against the bytes at hand.
 */
#include "client/bench/rcluster.h"

#include <stdio.h>
#include <string.h>

#include "client/bench/resp.h"
#include "common/defs.h"

uint16_t
brim_bench_rcluster_crc16(const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint16_t       crc;
    size_t         i;
    int            bit;

    crc = 0;
    for (i = 0; i < len; i++) {
        crc ^= (uint16_t) (p[i] << 8);
        for (bit = 0; bit < 8; bit++) {
            crc = (crc & 0x8000) != 0 ? (uint16_t) ((crc << 1) ^ 0x1021)
                                      : (uint16_t) (crc << 1);
        }
    }
    return crc;
}

uint32_t
brim_bench_rcluster_slot(const char *key, size_t len)
{
    const char *open, *close;

    open = len > 0 ? memchr(key, '{', len) : NULL;
    if (open != NULL) {
        close = memchr(open + 1, '}', len - (size_t) (open + 1 - key));
        if (close != NULL && close > open + 1) {
            key = open + 1;
            len = (size_t) (close - key);
        }
    }
    return brim_bench_rcluster_crc16(key, len)
        & (BRIM_BENCH_RCLUSTER_SLOTS - 1);
}

/* The parser's position in a reply. */
struct rcl_cursor {
    const char *p;   /* next element */
    const char *end; /* end of the reply */
};

/* The next element's header: *TYPE, *V as brim_bench_resp_line(). A
 * bulk string's bytes go to *STR (*STR_LEN bytes) and are stepped over. */
static int
rcl_next(struct rcl_cursor *c, char *type, int64_t *v, const char **str,
         size_t *str_len)
{
    size_t line;

    if (brim_bench_resp_line(c->p, (size_t) (c->end - c->p), type, v, &line)
        != 1) {
        return -1; /* the whole reply is at hand: incomplete is bad too */
    }
    c->p += line;
    *str = NULL;
    *str_len = 0;
    if (*type == '$' && *v >= 0) {
        if ((size_t) (c->end - c->p) < (size_t) *v + 2) {
            return -1;
        }
        *str = c->p;
        *str_len = (size_t) *v;
        c->p += *v + 2;
    }
    return 0;
}

/* Step over one whole element (a replica's node array, an extra field). */
static int
rcl_skip(struct rcl_cursor *c)
{
    long n;

    n = brim_bench_resp_skip(c->p, (size_t) (c->end - c->p));
    if (n <= 0) {
        return -1;
    }
    c->p += n;
    return 0;
}

/* Index of master HOST:PORT in MAP, added if new; -1 when MAP is full. */
static int
rcl_master(struct brim_bench_rcluster_map *map, const char *host,
           size_t host_len, int64_t port)
{
    char     addr[BRIM_BENCH_RCLUSTER_ADDR_MAX + 1];
    uint32_t i;

    snprintf(addr, sizeof(addr), "%.*s:%lld", (int) host_len, host,
             (long long) port);
    for (i = 0; i < map->nmasters; i++) {
        if (strcmp(map->masters[i], addr) == 0) {
            return (int) i;
        }
    }
    if (map->nmasters == BRIM_BENCH_RCLUSTER_MASTERS_MAX) {
        return -1;
    }
    memcpy(map->masters[map->nmasters], addr, sizeof(addr));
    return (int) map->nmasters++;
}

/*
 * The master of one CLUSTER SLOTS entry (its third element, a node array
 * [ip, port, id, ...]) into *IDX. Returns 0 or a BRIM_E* with ERRBUF set.
 */
static int
rcl_entry_master(struct rcl_cursor *c, const char *default_host,
                 struct brim_bench_rcluster_map *map, int *idx, char *errbuf)
{
    const char *ip, *unused;
    size_t      ip_len, unused_len;
    int64_t     n, port, i;
    char        type;

    if (rcl_next(c, &type, &n, &unused, &unused_len) != 0 || type != '*'
        || n < 2) {
        brim_errfmt(errbuf, "its master is not an array [ip, port, ...]");
        return BRIM_EBADREPLY;
    }
    if (rcl_next(c, &type, &port, &ip, &ip_len) != 0 || type != '$'
        || ip == NULL || ip_len > BRIM_BENCH_RCLUSTER_ADDR_MAX - 8
        || rcl_next(c, &type, &port, &unused, &unused_len) != 0 || type != ':'
        || port < 1 || port > 65535)
    {
        brim_errfmt(errbuf,
                    "its master's ip and port are not a string "
                    "and a port number");
        return BRIM_EBADREPLY;
    }
    for (i = 2; i < n; i++) {
        if (rcl_skip(c) != 0) {
            brim_errfmt(errbuf, "its master's array is cut short");
            return BRIM_EBADREPLY;
        }
    }
    if (ip_len == 0) {
        ip = default_host;
        ip_len = strlen(default_host);
    }
    *idx = rcl_master(map, ip, ip_len, port);
    if (*idx < 0) {
        brim_errfmt(errbuf, "more than %d masters",
                    BRIM_BENCH_RCLUSTER_MASTERS_MAX);
        return BRIM_ENOSPACE;
    }
    return 0;
}

/* One entry [first, last, master, replicas...] of a CLUSTER SLOTS reply. */
static int
rcl_entry(struct rcl_cursor *c, const char *default_host,
          struct brim_bench_rcluster_map *map, char *errbuf)
{
    const char *unused;
    size_t      unused_len;
    int64_t     n, first, last, i;
    char        type, t1, t2;
    int         idx, rc;

    if (rcl_next(c, &type, &n, &unused, &unused_len) != 0 || type != '*'
        || n < 3) {
        brim_errfmt(errbuf, "not an array [first, last, master, ...]");
        return BRIM_EBADREPLY;
    }
    if (rcl_next(c, &t1, &first, &unused, &unused_len) != 0
        || rcl_next(c, &t2, &last, &unused, &unused_len) != 0 || t1 != ':'
        || t2 != ':')
    {
        brim_errfmt(errbuf, "its first and last slots are not integers");
        return BRIM_EBADREPLY;
    }
    if (first < 0 || last < first || last >= BRIM_BENCH_RCLUSTER_SLOTS) {
        brim_errfmt(errbuf, "slots %lld-%lld out of range 0-%d",
                    (long long) first, (long long) last,
                    BRIM_BENCH_RCLUSTER_SLOTS - 1);
        return BRIM_EBADREPLY;
    }
    rc = rcl_entry_master(c, default_host, map, &idx, errbuf);
    if (rc != 0) {
        return rc;
    }
    for (i = 3; i < n; i++) {
        if (rcl_skip(c) != 0) {
            brim_errfmt(errbuf, "a replica is cut short");
            return BRIM_EBADREPLY;
        }
    }
    for (i = first; i <= last; i++) {
        map->owner[i] = (uint16_t) idx;
    }
    return 0;
}

int
brim_bench_rcluster_map_parse(const char *buf, size_t len,
                              const char                     *default_host,
                              struct brim_bench_rcluster_map *map,
                              char errbuf[BRIM_ERRBUF_LEN])
{
    struct rcl_cursor c;
    const char       *unused;
    size_t            unused_len;
    char              why[BRIM_ERRBUF_LEN];
    int64_t           n, i;
    char              type;
    int               rc;

    memset(map->owner, 0xff, sizeof(map->owner)); /* RCLUSTER_NONE */
    map->nmasters = 0;
    map->nranges = 0;
    c.p = buf;
    c.end = buf + len;
    if (rcl_next(&c, &type, &n, &unused, &unused_len) != 0 || type != '*') {
        brim_errfmt(errbuf, "CLUSTER SLOTS: the reply is not an array");
        return BRIM_EBADREPLY;
    }
    if (n <= 0) {
        brim_errfmt(errbuf, "CLUSTER SLOTS: no slot is assigned");
        return BRIM_ENOTFOUND;
    }
    for (i = 0; i < n; i++) {
        why[0] = '\0';
        rc = rcl_entry(&c, default_host, map, why);
        if (rc != 0) {
            brim_errfmt(errbuf, "CLUSTER SLOTS: entry %lld: %s",
                        (long long) i + 1, why);
            return rc;
        }
        map->nranges++;
    }
    if (c.p != c.end) {
        brim_errfmt(errbuf, "CLUSTER SLOTS: %zu bytes after the reply",
                    (size_t) (c.end - c.p));
        return BRIM_EBADREPLY;
    }
    return 0;
}

/* Does MSG (LEN bytes) start with the word W (NUL-terminated) and a
 * space, or consist of W alone when ALONE? */
static int
rcl_word(const char *msg, size_t len, const char *w, int alone)
{
    size_t n = strlen(w);

    return len >= n && memcmp(msg, w, n) == 0
        && ((len > n && msg[n] == ' ') || (alone && len == n));
}

int
brim_bench_rcluster_redirect_parse(const char *msg, size_t len,
                                   struct brim_bench_rcluster_redirect *r)
{
    const char *p, *end, *sp, *colon;
    int64_t     slot;
    int         ask;

    if (rcl_word(msg, len, "MOVED", 0)) {
        ask = 0;
        p = msg + 6;
    } else if (rcl_word(msg, len, "ASK", 0)) {
        ask = 1;
        p = msg + 4;
    } else {
        return BRIM_ENOTFOUND;
    }
    end = msg + len;
    sp = memchr(p, ' ', (size_t) (end - p));
    if (sp == NULL || brim_bench_resp_i64(p, sp, &slot) != 0 || slot < 0
        || slot >= BRIM_BENCH_RCLUSTER_SLOTS)
    {
        return BRIM_EBADREPLY;
    }
    p = sp + 1;
    /* The port follows the last ':' (an IPv6 host has colons too). */
    for (colon = end; colon > p && colon[-1] != ':'; colon--) {
    }
    if (colon == p || colon == end || memchr(p, ' ', (size_t) (end - p)) != NULL
        || (size_t) (end - p) > BRIM_BENCH_RCLUSTER_ADDR_MAX)
    {
        return BRIM_EBADREPLY;
    }
    for (sp = colon; sp < end; sp++) {
        if (*sp < '0' || *sp > '9') {
            return BRIM_EBADREPLY;
        }
    }
    r->ask = ask;
    r->slot = (uint32_t) slot;
    r->addr = p;
    r->addr_len = (size_t) (end - p);
    return 0;
}

int
brim_bench_rcluster_retryable(const char *msg, size_t len)
{
    return rcl_word(msg, len, "TRYAGAIN", 1)
        || rcl_word(msg, len, "CLUSTERDOWN", 1);
}
