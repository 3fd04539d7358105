/*
 * client/lib/client.c - the handle (brim_connect, brim_close) and the
 * single-key calls of <brim.h>. Each call checks its arguments against the
 * node's limits, builds one request and hands it to route.c, which sends
 * it, follows redirects and retries within the request timeout. The
 * many-key calls are in multi.c, STATS in stats.c.
 */
#include "client/lib/client_int.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "common/ring.h"
#include "proto/auth_file.h"
#include "proto/ops.h"

#define CLIENT_CONNECT_TIMEOUT_MS 1000 /* opts.connect_timeout_ms 0 */
#define CLIENT_REQUEST_TIMEOUT_MS 5000 /* opts.request_timeout_ms 0 */

int
brim_lib_check_key(struct brim_client *c, const void *key, size_t key_len)
{
    size_t max;

    max = c->home != NULL ? c->home->link.limits.max_key_bytes : BRIM_KEY_MAX;
    if (key == NULL || key_len == 0 || key_len > max) {
        brim_lib_errmsg(c, "key is %zu bytes, allowed 1 .. %zu",
                        key == NULL ? (size_t) 0 : key_len, max);
        return BRIM_EINVAL;
    }
    return 0;
}

/* 0 when VAL/VAL_LEN may be sent; else BRIM_EINVAL or BRIM_ETOOBIG. */
static int
client_check_value(struct brim_client *c, const void *val, size_t val_len)
{
    size_t max;

    max = brim_value_max(c);
    if (val == NULL && val_len != 0) {
        brim_lib_errmsg(c, "value is NULL but %zu bytes long", val_len);
        return BRIM_EINVAL;
    }
    if (val_len > max) {
        brim_lib_errmsg(c, "value is %zu bytes, max %zu", val_len, max);
        return BRIM_ETOOBIG;
    }
    return 0;
}

/* A new handle with OPTS's timeouts and role; NULL when out of memory. */
static struct brim_client *
client_new(const struct brim_opts *opts)
{
    struct brim_client *c;

    c = brim_calloc(1, sizeof(*c));
    if (c == NULL) {
        return NULL;
    }
    c->connect_timeout_ms = opts->connect_timeout_ms != 0
        ? opts->connect_timeout_ms
        : CLIENT_CONNECT_TIMEOUT_MS;
    c->request_timeout_ms = opts->request_timeout_ms != 0
        ? opts->request_timeout_ms
        : CLIENT_REQUEST_TIMEOUT_MS;
    c->role = opts->admin ? BRIM_ROLE_ADMIN : BRIM_ROLE_CLIENT;
    return c;
}

/* Read OPTS->secret_file, if any, into C once (PROTOCOL.md 12.1). */
static int
client_secret_load(struct brim_client *c, const struct brim_opts *opts,
                   char errbuf[BRIM_ERRBUF_LEN])
{
    char err[BRIM_ERRBUF_LEN];
    int  rc;

    if (opts->secret_file == NULL) {
        return 0;
    }
    c->secret = brim_malloc(sizeof(*c->secret));
    if (c->secret == NULL) {
        brim_errfmt(errbuf, "brim: out of memory");
        return BRIM_ENOMEM;
    }
    rc = brim_auth_file_read(opts->secret_file, c->secret, err);
    if (rc != 0) {
        brim_errfmt(errbuf, "brim: %s", err);
    }
    return rc;
}

/*
 * What both modes do first: check ADDR ("host:port"; NULL: checked
 * already), make the client of OPTS and load its secret file, if any. Returns 0 with the client in *OUT
 * (the caller's to brim_close()), or an error with ERRBUF saying why.
 */
static int
client_start(const struct brim_opts *opts, const char *addr,
             struct brim_client **out, char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_client *c;
    char                host[BRIM_SOCK_ADDR_MAX], port[6];
    int                 rc;

    rc = addr != NULL
        ? brim_sock_split(addr, "brim", host, sizeof(host), port, errbuf)
        : 0;
    if (rc != 0) {
        return rc;
    }
    c = client_new(opts);
    if (c == NULL) {
        brim_errfmt(errbuf, "brim: out of memory");
        return BRIM_ENOMEM;
    }
    rc = client_secret_load(c, opts, errbuf);
    if (rc != 0) {
        brim_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

/*
 * Cluster mode: the seed list (nodes or coordinators, any of which serves
 * the map), HELLO and MAP_FETCH at each in turn until a map is adopted
 * (coordlink.c). Node connections open at their first call; a client
 * keeps no coordinator connection.
 */
static int
client_connect_cluster(const struct brim_opts *opts, struct brim_client **out,
                       char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_client *c;
    char                item[BRIM_SOCK_ADDR_MAX], host[BRIM_SOCK_ADDR_MAX];
    char                port[6];
    const char         *p, *end;
    size_t              len;
    int                 rc;

    /* Every seed must be HOST:PORT: a typo fails here, not later. */
    for (p = opts->coord_addr;; p = end + 1) {
        end = strchr(p, ',');
        len = end != NULL ? (size_t) (end - p) : strlen(p);
        if (len >= sizeof(item)) {
            brim_errfmt(errbuf, "brim: seed address of %zu bytes, max %zu", len,
                        sizeof(item) - 1);
            return BRIM_EINVAL;
        }
        memcpy(item, p, len);
        item[len] = '\0';
        rc = brim_sock_split(item, "brim", host, sizeof(host), port, errbuf);
        if (rc != 0) {
            return rc;
        }
        if (end == NULL) {
            break;
        }
    }
    rc = client_start(opts, NULL, &c, errbuf);
    if (rc != 0) {
        return rc;
    }
    c->cluster = 1;
    c->learn = 1;
    c->seeds = brim_strndup(opts->coord_addr, strlen(opts->coord_addr));
    if (c->seeds == NULL) {
        brim_close(c);
        brim_errfmt(errbuf, "brim: out of memory");
        return BRIM_ENOMEM;
    }
    /* route.c asks coordlink.c for the map through this: it is below
     * coordlink.c, whose own requests it runs. */
    c->map.refresh = brim_coordlink_refresh;
    rc = brim_coordlink_bootstrap(c,
                                  brim_sock_now_ms()
                                      + 2 * (int64_t) c->connect_timeout_ms
                                      + c->request_timeout_ms);
    if (rc != 0) {
        brim_errfmt(errbuf, "brim: %s", c->errmsg);
        brim_close(c);
        return rc;
    }
    c->errmsg[0] = '\0';
    *out = c;
    return 0;
}

int
brim_connect(const struct brim_opts *opts, struct brim_client **out,
             char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_client *c;
    int                 rc;

    if (opts == NULL || out == NULL) {
        brim_errfmt(errbuf, "brim: connect: no options or no handle pointer");
        return BRIM_EINVAL;
    }
    if ((opts->coord_addr != NULL) == (opts->server_addr != NULL)) {
        brim_errfmt(errbuf,
                    "brim: connect: give exactly one of "
                    "server_addr and coord_addr");
        return BRIM_EINVAL;
    }
    if (opts->coord_addr != NULL) {
        return client_connect_cluster(opts, out, errbuf);
    }
    rc = client_start(opts, opts->server_addr, &c, errbuf);
    if (rc != 0) {
        return rc;
    }
    c->server_addr = brim_strndup(opts->server_addr, strlen(opts->server_addr));
    c->home = c->server_addr != NULL ? brim_pool_get(c, c->server_addr) : NULL;
    if (c->home == NULL) {
        brim_close(c);
        brim_errfmt(errbuf, "brim: out of memory");
        return BRIM_ENOMEM;
    }
    /* Connect now, so that a wrong address fails here and not at the
     * first call; the connect timeout alone bounds it (no call's
     * deadline, so that a message names that timeout). */
    rc = brim_pool_ready(c, c->home, INT64_MAX);
    if (rc != 0) {
        brim_errfmt(errbuf, "brim: %s", c->errmsg);
        brim_close(c);
        return rc;
    }
    c->errmsg[0] = '\0';
    *out = c;
    return 0;
}

void
brim_close(struct brim_client *c)
{
    if (c == NULL) {
        return;
    }
    brim_pool_free(c);
    brim_coordlink_free(c);
    brim_free(c->server_addr);
    brim_free(c->seeds);
    brim_free(c->coords);
    if (c->secret != NULL) {
        brim_auth_secret_wipe(c->secret);
        brim_free(c->secret);
    }
    brim_free(c);
}

uint64_t
brim_epoch(struct brim_client *c)
{
    return c != NULL ? c->epoch : 0;
}

size_t
brim_value_max(const struct brim_client *c)
{
    if (c == NULL || c->home == NULL) {
        return BRIM_VALUE_MAX;
    }
    return c->home->link.limits.max_value_bytes;
}

/* Start a call of OP on KEY: check the key and clear the last error. */
static int
client_key_call(struct brim_client *c, struct brim_call *call, uint32_t op,
                const void *key, size_t key_len)
{
    memset(call, 0, sizeof(*call));
    if (c == NULL) {
        return BRIM_EINVAL;
    }
    c->errmsg[0] = '\0';
    call->req.op = op;
    call->req.key = key;
    call->req.key_len = key_len;
    return brim_lib_check_key(c, key, key_len);
}

/* Where a VALUE reply goes (brim_get_ex, brim_gat). */
struct client_value {
    void    **val;     /* out: new buffer, or NULL: not wanted */
    size_t   *val_len; /* out: bytes */
    uint32_t *flags;   /* out, or NULL */
    uint64_t *cas;     /* out, or NULL */
};

/* ON_REPLY of GET and GAT: copy the value out of the frame. */
static int
client_value_reply(struct brim_call *call, const struct brim_rep *rep)
{
    struct client_value *out = call->arg;
    char                *copy;

    if (out->val != NULL) {
        copy = brim_malloc(rep->value_len + 1);
        if (copy == NULL) {
            return BRIM_ENOMEM;
        }
        if (rep->value_len > 0) {
            memcpy(copy, rep->value, rep->value_len);
        }
        copy[rep->value_len] = '\0';
        *out->val = copy;
        *out->val_len = rep->value_len;
    }
    if (out->flags != NULL) {
        *out->flags = rep->flags;
    }
    if (out->cas != NULL) {
        *out->cas = rep->cas;
    }
    return 0;
}

/* GET or GAT (OP) of KEY, the value and its metadata to OUT. */
static int
client_fetch(struct brim_client *c, uint32_t op, const void *key,
             size_t key_len, uint32_t ttl_s, struct client_value *out)
{
    struct brim_call call;
    int              rc;

    rc = client_key_call(c, &call, op, key, key_len);
    if (rc != 0) {
        return rc;
    }
    if ((out->val == NULL) != (out->val_len == NULL)) {
        brim_lib_errmsg(c, "val and val_len must both be set or both NULL");
        return BRIM_EINVAL;
    }
    call.req.ttl_s = ttl_s;
    call.on_reply = client_value_reply;
    call.arg = out;
    return brim_route_one(c, &call);
}

int
brim_get(struct brim_client *c, const void *key, size_t key_len, void **val,
         size_t *val_len)
{
    return brim_get_ex(c, key, key_len, val, val_len, NULL, NULL);
}

int
brim_get_ex(struct brim_client *c, const void *key, size_t key_len, void **val,
            size_t *val_len, uint32_t *flags, uint64_t *cas)
{
    struct client_value out = {val, val_len, flags, cas};

    if (val == NULL || val_len == NULL) {
        if (c != NULL) {
            brim_lib_errmsg(c, "brim_get: val and val_len are required");
        }
        return BRIM_EINVAL;
    }
    return client_fetch(c, BRIM_OP_GET, key, key_len, 0, &out);
}

int
brim_gat(struct brim_client *c, const void *key, size_t key_len, uint32_t ttl_s,
         void **val, size_t *val_len, uint32_t *flags, uint64_t *cas)
{
    struct client_value out = {val, val_len, flags, cas};

    return client_fetch(c, BRIM_OP_GAT, key, key_len, ttl_s, &out);
}

/* ON_REPLY of the SET family: the new CAS value to *ARG when wanted. */
static int
client_cas_reply(struct brim_call *call, const struct brim_rep *rep)
{
    uint64_t *cas = call->arg;

    if (cas != NULL) {
        *cas = rep->cas;
    }
    return 0;
}

/* A write of the SET family (SET, ADD, REPLACE, CAS, APPEND, PREPEND). */
static int
client_store(struct brim_client *c, uint32_t op, const void *key,
             size_t key_len, const void *val, size_t val_len, uint32_t ttl_s,
             uint32_t flags, uint64_t expect, uint64_t *cas_out)
{
    struct brim_call call;
    int              rc;

    rc = client_key_call(c, &call, op, key, key_len);
    if (rc == 0) {
        rc = client_check_value(c, val, val_len);
    }
    if (rc != 0) {
        return rc;
    }
    call.req.value = val;
    call.req.value_len = val_len;
    call.req.ttl_s = ttl_s;
    call.req.flags = flags;
    call.req.cas = expect;
    call.on_reply = client_cas_reply;
    call.arg = cas_out;
    return brim_route_one(c, &call);
}

int
brim_set(struct brim_client *c, const void *key, size_t key_len,
         const void *val, size_t val_len, uint32_t ttl_s, uint32_t flags,
         uint64_t *cas)
{
    return client_store(c, BRIM_OP_SET, key, key_len, val, val_len, ttl_s,
                        flags, 0, cas);
}

int
brim_add(struct brim_client *c, const void *key, size_t key_len,
         const void *val, size_t val_len, uint32_t ttl_s, uint32_t flags,
         uint64_t *cas)
{
    return client_store(c, BRIM_OP_ADD, key, key_len, val, val_len, ttl_s,
                        flags, 0, cas);
}

int
brim_replace(struct brim_client *c, const void *key, size_t key_len,
             const void *val, size_t val_len, uint32_t ttl_s, uint32_t flags,
             uint64_t *cas)
{
    return client_store(c, BRIM_OP_REPLACE, key, key_len, val, val_len, ttl_s,
                        flags, 0, cas);
}

int
brim_cas(struct brim_client *c, const void *key, size_t key_len,
         const void *val, size_t val_len, uint32_t ttl_s, uint32_t flags,
         uint64_t expect, uint64_t *cas_out)
{
    return client_store(c, BRIM_OP_CAS, key, key_len, val, val_len, ttl_s,
                        flags, expect, cas_out);
}

int
brim_append(struct brim_client *c, const void *key, size_t key_len,
            const void *val, size_t val_len, uint64_t *cas)
{
    return client_store(c, BRIM_OP_APPEND, key, key_len, val, val_len, 0, 0, 0,
                        cas);
}

int
brim_prepend(struct brim_client *c, const void *key, size_t key_len,
             const void *val, size_t val_len, uint64_t *cas)
{
    return client_store(c, BRIM_OP_PREPEND, key, key_len, val, val_len, 0, 0, 0,
                        cas);
}

/* DEL or TOUCH (OP) of KEY: the reply is a status only. */
static int
client_simple(struct brim_client *c, uint32_t op, const void *key,
              size_t key_len, uint32_t ttl_s)
{
    struct brim_call call;
    int              rc;

    rc = client_key_call(c, &call, op, key, key_len);
    if (rc != 0) {
        return rc;
    }
    call.req.ttl_s = ttl_s;
    return brim_route_one(c, &call);
}

int
brim_del(struct brim_client *c, const void *key, size_t key_len)
{
    return client_simple(c, BRIM_OP_DEL, key, key_len, 0);
}

int
brim_touch(struct brim_client *c, const void *key, size_t key_len,
           uint32_t ttl_s)
{
    return client_simple(c, BRIM_OP_TOUCH, key, key_len, ttl_s);
}

/* ON_REPLY of INCR and DECR: the counter to *ARG when wanted. */
static int
client_number_reply(struct brim_call *call, const struct brim_rep *rep)
{
    uint64_t *result = call->arg;

    if (result != NULL) {
        *result = rep->number;
    }
    return 0;
}

/* INCR or DECR (OP) of KEY by DELTA. */
static int
client_arith(struct brim_client *c, uint32_t op, const void *key,
             size_t key_len, uint64_t delta, uint64_t *result)
{
    struct brim_call call;
    int              rc;

    rc = client_key_call(c, &call, op, key, key_len);
    if (rc != 0) {
        return rc;
    }
    call.req.delta = delta;
    call.on_reply = client_number_reply;
    call.arg = result;
    return brim_route_one(c, &call);
}

int
brim_incr(struct brim_client *c, const void *key, size_t key_len,
          uint64_t delta, uint64_t *result)
{
    return client_arith(c, BRIM_OP_INCR, key, key_len, delta, result);
}

int
brim_decr(struct brim_client *c, const void *key, size_t key_len,
          uint64_t delta, uint64_t *result)
{
    return client_arith(c, BRIM_OP_DECR, key, key_len, delta, result);
}

/* A keyless call of OP (PING, FLUSH) to the home node. */
static int
client_keyless(struct brim_client *c, uint32_t op, uint32_t delay_s)
{
    struct brim_call call;

    if (c == NULL) {
        return BRIM_EINVAL;
    }
    c->errmsg[0] = '\0';
    memset(&call, 0, sizeof(call));
    call.req.op = op;
    call.req.delay_s = delay_s;
    call.target = c->home; /* standalone node, or the first seed */
    return brim_route_one(c, &call);
}

int
brim_flush(struct brim_client *c, uint32_t delay_s)
{
    struct brim_call call;
    struct timespec  now;
    uint64_t         mark;
    uint32_t         i, sent = 0;
    int              rc, first = 0, none_known;
    char             why[BRIM_ERRBUF_LEN];

    if (c == NULL || !c->cluster) {
        return client_keyless(c, BRIM_OP_FLUSH, delay_s);
    }
    /* Cluster mode: every member of the map, each on its own; the first
     * failure is returned once all were asked. One flush mark for all
     * (Unix ms: now plus the delay), as the memcached port's flush_all
     * gives: left to each node's clock the marks differed by a
     * millisecond, and a later migration read the other's mark as a
     * newer flush and dropped the keys it streamed (a tester's find). */
    clock_gettime(CLOCK_REALTIME, &now);
    mark = (uint64_t) now.tv_sec * 1000u + (uint64_t) now.tv_nsec / 1000000u
        + (uint64_t) delay_s * 1000u;
    /* The coordinator records the mark first, as for flush_all: a node
     * that joins later learns it from its JOIN reply, and a member this
     * call misses from its next heartbeat's. Not recorded, nothing is
     * flushed (a later join would bring the old keys back). */
    rc = brim_coordlink_flush(c, mark, &none_known);
    if (rc != 0 && !none_known) {
        snprintf(why, sizeof(why), "%s",
                 c->errmsg[0] != '\0' ? c->errmsg : brim_strerror(rc));
        brim_lib_errmsg(c,
                        "the coordinator did not record the flush (%s); "
                        "nothing flushed",
                        why);
        return rc;
    }
    for (i = 0; i < c->topo.nmembers; i++) {
        if (c->members == NULL || c->members[i] == NULL) {
            continue;
        }
        c->errmsg[0] = '\0';
        memset(&call, 0, sizeof(call));
        call.req.op = BRIM_OP_FLUSH;
        call.req.delay_s = delay_s;
        call.req.flush_ms = mark;
        call.target = c->members[i];
        rc = brim_route_one(c, &call);
        sent++;
        if (rc != 0 && first == 0) {
            first = rc;
        }
    }
    return sent == 0 ? BRIM_ENONODES : first;
}

int
brim_ping(struct brim_client *c)
{
    return client_keyless(c, BRIM_OP_PING, 0);
}
