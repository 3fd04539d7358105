/*
 * client/bench/conn.c - one connection of the engine: a FIFO of the
 * requests in flight (replies come in request order with all three
 * protocols) over a struct brim_link (client/net/link.h), whose input is
 * parsed in place and whose send queue goes out in one send() per loop
 * pass. For brim the link says HELLO and AUTH first, non-blocking, driven
 * by the replies this file reads. A reply's latency runs from its
 * request's start (send, or intended send under --rate) to the read that
 * completed it. Replies feed the counters, the histogram and the verifier;
 * with --coordinator, the ones to send again go to resend.c's queue. It
 * keeps T->nroom, the count of connections with room. Below engine.c: it
 * never calls the loop, and brim_bench_conn_readable() returns what the
 * loop must do next.
 */
#include "client/bench/engine_int.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <sys/epoll.h>

#include "client/bench/cluster.h"
#include "client/net/sock.h"
#include "common/alloc.h"
#include "common/defs.h"
#include "proto/ops.h"

/* Limit on a connect, ms. */
#define CONN_CONNECT_MS 2000
/* What a brim connection's HELLO says its name is. */
#define CONN_HELLO_NAME "brim-bench"

static void
conn_mark_dirty(struct brim_bench_conn *c)
{
    if (!c->dirty) {
        c->dirty = 1;
        c->next_dirty = c->t->dirty;
        c->t->dirty = c;
    }
}

static void
conn_poll_out(struct brim_bench_conn *c, int on)
{
    struct epoll_event ev;

    if (c->polling_out == on || c->link.fd < 0) {
        return;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0);
    ev.data.ptr = c;
    if (epoll_ctl(c->t->ep, EPOLL_CTL_MOD, c->link.fd, &ev) == 0) {
        c->polling_out = (uint8_t) on;
    }
}

static void conn_parse(struct brim_bench_conn *c, uint64_t now);

/*
 * A send() on C failed with ERR. A server that refuses a frame from its
 * header (brim: above max_frame_bytes) answers with an error reply and
 * closes while the rest of the frame is still on its way, so the send
 * fails but the reply may sit in C's socket. Handle what can be read
 * first, so that the server's status and message are reported and not
 * only EPIPE; then C fails.
 */
static void
conn_send_failed(struct brim_bench_conn *c, int err)
{
    char why[96];
    int  i;

    /* Bounded: a socket the server closed holds little. */
    for (i = 0; i < 16 && c->link.fd >= 0 && c->n > 0; i++) {
        if (brim_link_read(&c->link) != 1) {
            break;
        }
        conn_parse(c, brim_sock_now_ns());
    }
    if (c->link.fd < 0) {
        return;
    }
    if (err == EPIPE || err == ECONNRESET) {
        snprintf(why, sizeof(why), "closed by the server (send: %s)",
                 strerror(err));
    } else {
        snprintf(why, sizeof(why), "send: %s", strerror(err));
    }
    brim_bench_conn_fail(c, why);
}

/* Write what C has queued, all of it in one send() when the socket
 * takes it. */
void
brim_bench_conn_flush(struct brim_bench_conn *c)
{
    struct brim_bench_req *req;
    uint64_t               now;
    uint32_t               i;

    if (c->unstamped > 0) {
        /* A closed-loop request's latency starts when it leaves, not when
         * it was drawn earlier in this loop pass. */
        now = brim_sock_now_ns();
        for (i = c->n - c->unstamped; i < c->n; i++) {
            req = &c->fifo[(c->head + i) % c->cap];
            if (req->start_ns == 0) {
                req->start_ns = now;
            }
            req->sent_ns = now;
        }
        c->unstamped = 0;
    }
    if (c->link.fd < 0) {
        return;
    }
    if (brim_link_flush(&c->link) != 0) {
        conn_send_failed(c, c->link.sys_errno);
        return;
    }
    conn_poll_out(c, brim_link_unsent(&c->link) > 0);
}

/* Queue REQ's bytes on C. */
static void
conn_encode(struct brim_bench_conn *c, const struct brim_bench_req *req,
            const char *key, size_t key_len, const char *value,
            size_t value_len)
{
    if (c->t->proto->encode(brim_link_outbuf(&c->link), c->pctx, req, key,
                            key_len, value, value_len)
        != 0)
    {
        brim_bench_log_fatal(c->t, "out of memory encoding a request");
        return;
    }
    conn_mark_dirty(c);
}

/* The slot for the next request of C, counted as in flight. */
static struct brim_bench_req *
conn_push(struct brim_bench_conn *c)
{
    struct brim_bench_req *req;
    int                    room;

    BRIM_ASSERT(c->n < c->cap);
    room = brim_bench_conn_has_room(c);
    req = &c->fifo[(c->head + c->n) % c->cap];
    c->n++;
    c->t->inflight++;
    if (room && !brim_bench_conn_has_room(c)) {
        c->t->nroom[c->node]--;
    }
    return req;
}

/* Drop the oldest request of C (its reply has been handled). */
static void
conn_pop(struct brim_bench_conn *c)
{
    int room;

    room = brim_bench_conn_has_room(c);
    c->head = (c->head + 1) % c->cap;
    c->n--;
    c->t->inflight--;
    if (!room && brim_bench_conn_has_room(c)) {
        c->t->nroom[c->node]++;
    }
}

void
brim_bench_conn_recount_room(struct brim_bench_thread *t)
{
    uint32_t i;

    for (i = 0; i < t->sh->nnodes; i++) {
        t->nroom[i] = 0;
    }
    for (i = 0; i < t->nconns; i++) {
        if (brim_bench_conn_has_room(&t->conns[i])) {
            t->nroom[t->conns[i].node]++;
        }
    }
}

/* Make C's link, at its first open: HELLO as a client named
 * CONN_HELLO_NAME for brim, proving the run's secret. */
static int
conn_link_init(struct brim_bench_conn *c)
{
    struct brim_link_conf conf;

    memset(&conf, 0, sizeof(conf));
    conf.hello = c->t->proto->has_hello;
    conf.role = BRIM_ROLE_CLIENT;
    conf.name = CONN_HELLO_NAME;
    conf.secret = c->t->sh->secret;
    return brim_link_init(&c->link, c->t->sh->nodes[c->node].name, &conf);
}

/* Connect C (blocking, CONN_CONNECT_MS at most). */
int
brim_bench_conn_open(struct brim_bench_conn *c, char errbuf[BRIM_ERRBUF_LEN])
{
    const struct brim_bench_node *node = &c->t->sh->nodes[c->node];
    struct epoll_event            ev;
    int                           fd, err;

    if (!c->link.inited && conn_link_init(c) != 0) {
        brim_errfmt(errbuf, "out of memory");
        return BRIM_ENOMEM;
    }
    err = brim_sock_open((const struct sockaddr *) &node->addr, node->addr_len,
                         brim_sock_now_ms() + CONN_CONNECT_MS, &fd);
    if (err == ETIMEDOUT) {
        brim_errfmt(errbuf, "connect to %s: timed out after %d ms", node->name,
                    CONN_CONNECT_MS);
        return BRIM_ETIMEDOUT;
    }
    if (err != 0) {
        brim_errfmt(errbuf, "connect to %s: %s", node->name, strerror(err));
        return brim_sock_err(err);
    }
    /* The link queues HELLO (brim); the next flush sends it. */
    if (brim_link_attach(&c->link, fd) != 0
        || (c->pctx == NULL && c->t->proto->open(&c->pctx) != 0))
    {
        brim_link_close(&c->link);
        brim_errfmt(errbuf, "out of memory");
        return BRIM_ENOMEM;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(c->t->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        err = errno;
        brim_link_close(&c->link);
        brim_errfmt(errbuf, "connect to %s: %s", node->name, strerror(err));
        return BRIM_ESYS;
    }
    c->polling_out = 0;
    c->head = c->n = 0;
    c->opened_ns = brim_sock_now_ns();
    if (brim_link_unsent(&c->link) > 0) {
        conn_mark_dirty(c);
    }
    return 0;
}

void
brim_bench_conn_close(struct brim_bench_conn *c)
{
    brim_link_close(&c->link); /* the socket leaves the epoll set */
    c->reconnect_ns = 0;
    c->n = c->head = 0;
    c->unstamped = 0;
    if (c->pctx != NULL) {
        c->t->proto->close(c->pctx);
        c->pctx = NULL;
    }
}

/*
 * C failed (WHY): the socket closes and a reconnect is scheduled while C
 * has some left. With --coordinator the node may have died or left: a
 * newer map is asked for, and every request in flight goes again through
 * it (GET, SET and DEL may run twice: DESIGN.md section 5). Without, each
 * counts as an error (a write's outcome is unknown).
 */
void
brim_bench_conn_fail(struct brim_bench_conn *c, const char *why)
{
    struct brim_bench_thread *t = c->t;
    struct brim_bench_req    *req;
    uint32_t                  i;

    if (c->link.fd < 0) {
        return;
    }
    brim_bench_log(t, "connection %u to %s: %s (%u requests in flight)",
                   c->index, t->sh->nodes[c->node].name, why, c->n);
    for (i = 0; i < c->n; i++) {
        req = &c->fifo[(c->head + i) % c->cap];
        if (t->route != NULL) {
            /* It goes again once a newer map is in, or after a while
             * to the same node (a restart, or a node that left the map
             * and closed its connections once it had drained). */
            brim_bench_resend_add(t, req, 0, t->route->epoch + 1,
                                  brim_sock_now_ns());
            continue;
        }
        t->cnt[t->phase].errors++;
        if (t->o->verify
            && (req->kind == BRIM_BENCH_SET || req->kind == BRIM_BENCH_DEL))
        {
            brim_bench_verify_write_done(
                &t->ver, brim_bench_mix_local(&t->mix, req->key), req->seq, 0);
        }
    }
    t->inflight -= c->n;
    brim_bench_conn_close(c);
    if (t->route != NULL) {
        brim_bench_cluster_want(t->sh, t->route->epoch + 1);
    }
    if (c->retries < BRIM_BENCH_RECONNECTS && !t->stopping
        && (t->route == NULL || t->route->live[c->node]))
    {
        c->reconnect_ns =
            brim_sock_now_ns() + BRIM_BENCH_RECONNECT_NS * (c->retries + 1);
    }
    brim_bench_conn_recount_room(t);
}

/* ---- requests ---- */

/* Send OP on C at NOW: fill its FIFO slot, consult the verifier, encode. */
void
brim_bench_conn_send(struct brim_bench_conn *c, const struct brim_bench_op *op,
                     uint64_t now)
{
    struct brim_bench_thread *t = c->t;
    struct brim_bench_req    *req;
    const char               *value;
    char                      key[BRIM_BENCH_KEY_MAX];
    size_t                    key_len, value_len;
    uint64_t                  local;

    req = conn_push(c);
    req->kind = op->kind;
    req->key = op->key;
    req->ttl_s = op->ttl_s;
    req->start_ns = op->start_ns; /* 0: stamped by conn_flush() */
    req->sent_ns = now;
    c->unstamped++;
    req->id = brim_link_id(&c->link);
    req->epoch = t->route != NULL ? t->route->epoch : 0;
    req->tries = 0;
    req->asking = 0; /* the slot may have held an ASK resend */
    req->value_len = op->value_len;
    req->seq = 0;
    key_len = brim_bench_key_format(key, op->key, t->o->key_size);
    value = NULL;
    value_len = 0;
    if (req->kind == BRIM_BENCH_SET) {
        value = t->value;
        value_len = op->value_len;
    }
    if (t->o->verify) {
        local = brim_bench_mix_local(&t->mix, op->key);
        if (req->kind != BRIM_BENCH_GET
            && !brim_bench_verify_writable(&t->ver, local)) {
            req->kind = BRIM_BENCH_GET; /* too many writes out on it */
            t->ver.writes_demoted++;
        }
        switch (req->kind) {
        case BRIM_BENCH_GET:
            brim_bench_verify_read_sent(&t->ver, local, &req->vread);
            break;
        case BRIM_BENCH_SET:
            req->seq =
                brim_bench_verify_write_sent(&t->ver, local, 0, op->ttl_s, now);
            value_len = brim_bench_value_build(
                t->value, op->value_len, t->sh->run_id, op->key, req->seq);
            break;
        default:
            req->seq = brim_bench_verify_write_sent(&t->ver, local, 1, 0, now);
            break;
        }
    }
    conn_encode(c, req, key, key_len, value, value_len);
}

void
brim_bench_conn_resend(struct brim_bench_conn      *c,
                       const struct brim_bench_req *old, uint64_t now)
{
    struct brim_bench_thread *t = c->t;
    struct brim_bench_req    *req;
    const char               *value;
    char                      key[BRIM_BENCH_KEY_MAX];
    size_t                    key_len, value_len;

    req = conn_push(c);
    *req = *old; /* start_ns kept: the latency counts the detour */
    req->sent_ns = now;
    c->unstamped++;
    req->id = brim_link_id(&c->link);
    req->epoch = t->route != NULL ? t->route->epoch : 0;
    req->tries++;
    key_len = brim_bench_key_format(key, req->key, t->o->key_size);
    value = NULL;
    value_len = 0;
    if (req->kind == BRIM_BENCH_SET) {
        value = t->value;
        value_len = req->value_len;
        if (t->o->verify) {
            value_len = brim_bench_value_build(
                t->value, req->value_len, t->sh->run_id, req->key, req->seq);
        }
    }
    conn_encode(c, req, key, key_len, value, value_len);
}

/* --latency-log: keep one measured reply (intended send START_NS, latency
 * LAT_NS). The array doubles up to BRIM_BENCH_LAT_MAX entries a thread;
 * past that, or out of memory, a reply is only counted as dropped. */
static void
conn_lat_add(struct brim_bench_thread *t, uint64_t start_ns, uint64_t lat_ns)
{
    struct brim_bench_lat *grown;
    uint64_t               cap;

    if (t->nlat == t->lat_cap) {
        cap = t->lat_cap == 0 ? 65536 : t->lat_cap * 2;
        grown = cap <= BRIM_BENCH_LAT_MAX
            ? brim_realloc(t->lat, cap * sizeof(*t->lat))
            : NULL;
        if (grown == NULL) {
            t->lat_dropped++;
            return;
        }
        t->lat = grown;
        t->lat_cap = cap;
    }
    t->lat[t->nlat].start_ns = start_ns;
    t->lat[t->nlat].lat_ns = lat_ns;
    t->nlat++;
}

/* Judge the GET REQ's reply REP under --verify; report each key's first
 * finding of each kind. */
static void
conn_verify_read(struct brim_bench_thread *t, const struct brim_bench_req *req,
                 const struct brim_bench_rep *rep, uint64_t now)
{
    enum brim_bench_vres res;
    int64_t              seq;
    uint64_t             local, stale, lost;

    local = brim_bench_mix_local(&t->mix, req->key);
    seq = -1;
    if (rep->status == 0) {
        seq = brim_bench_value_parse(rep->value, rep->value_len, t->sh->run_id,
                                     req->key);
    }
    stale = t->ver.stale;
    lost = t->ver.lost;
    res = brim_bench_verify_read_done(&t->ver, local, &req->vread,
                                      rep->status == 0, seq, now);
    if (res == BRIM_BENCH_VSTALE && stale != t->ver.stale && seq < 0) {
        brim_bench_log(t,
                       "verify: stale: key %" PRIu64 " read a "
                       "value this run did not write: \"%.*s\"",
                       req->key, (int) BRIM_MIN(rep->value_len, (size_t) 40),
                       rep->value);
    } else if (res == BRIM_BENCH_VSTALE && stale != t->ver.stale) {
        brim_bench_log(t,
                       "verify: stale: key %" PRIu64 " read its "
                       "write #%" PRId64 "; #%" PRIu32 " or later "
                       "was due",
                       req->key, seq, req->vread.floor);
    } else if (res == BRIM_BENCH_VLOST && lost != t->ver.lost) {
        brim_bench_log(t,
                       "verify: lost: key %" PRIu64 " missed "
                       "although its acknowledged SET #%" PRIu32 " was live",
                       req->key, req->vread.floor);
    }
}

/* The reply REP to the oldest request of C came in at NOW. */
static void
conn_complete(struct brim_bench_conn *c, const struct brim_bench_rep *rep,
              uint64_t now)
{
    struct brim_bench_thread *t = c->t;
    struct brim_bench_counts *cnt = &t->cnt[t->phase];
    struct brim_bench_req     req;
    int                       ok;

    req = c->fifo[c->head]; /* a copy: the slot is reused */
    conn_pop(c);
    /* Every data reply names the node's committed epoch: a newer one
     * than the route's is fetched, so the run learns of a change from
     * its own traffic (PROTOCOL.md 5). */
    if (t->route != NULL && rep->node_epoch > t->route->epoch) {
        brim_bench_cluster_want(t->sh, rep->node_epoch);
    }
    /* MOVED, RETRY and BUSY prove the op did not run (PROTOCOL.md 5.1):
     * with --coordinator it goes again, to the owner of the newer map.
     * So do a Redis Cluster's MOVED and ASK (to the node named), TRYAGAIN
     * and CLUSTERDOWN (later). */
    if (t->slot_owner != NULL && rep->status == BRIM_EMOVED) {
        brim_bench_resend_redirect(t, &req, rep, now);
        return;
    }
    if (t->route != NULL
        && (rep->status == BRIM_EMOVED || rep->status == BRIM_ERETRY
            || rep->status == BRIM_EBUSY))
    {
        brim_bench_resend_add(t, &req, rep->status, rep->epoch, now);
        return;
    }
    switch (req.kind) {
    case BRIM_BENCH_GET:
        ok = rep->status == 0 || rep->status == BRIM_ENOTFOUND;
        break;
    case BRIM_BENCH_DEL:
        ok = rep->status == 0 || rep->status == BRIM_ENOTFOUND;
        break;
    default:
        ok = rep->status == 0;
        break;
    }
    if (!ok) {
        cnt->errors++;
        brim_bench_log(t, "key %" PRIu64 ": error reply %s: %.*s", req.key,
                       brim_err_name(rep->status),
                       (int) BRIM_MIN(rep->message_len, (size_t) 120),
                       rep->message != NULL ? rep->message : "");
        if (t->o->verify && req.kind != BRIM_BENCH_GET) {
            brim_bench_verify_write_done(
                &t->ver, brim_bench_mix_local(&t->mix, req.key), req.seq, 0);
        }
        return;
    }
    cnt->ops++;
    if (t->phase == BRIM_BENCH_MEASURE) {
        brim_bench_hist_record(&t->hist,
                               now > req.start_ns ? now - req.start_ns : 0);
        t->last_reply_ns = now;
        if (t->o->latency_log != NULL) {
            conn_lat_add(t, req.start_ns,
                         now > req.start_ns ? now - req.start_ns : 0);
        }
    }
    switch (req.kind) {
    case BRIM_BENCH_GET:
        cnt->gets++;
        if (rep->status == 0) {
            cnt->hits++;
        } else {
            cnt->misses++;
        }
        if (t->o->verify) {
            conn_verify_read(t, &req, rep, now);
        }
        return;
    case BRIM_BENCH_SET:
        cnt->sets++;
        break;
    default:
        cnt->dels++;
        break;
    }
    if (t->o->verify) {
        brim_bench_verify_write_done(
            &t->ver, brim_bench_mix_local(&t->mix, req.key), req.seq, 1);
    }
}

/*
 * Take the handshake's replies (HELLO, AUTH) buffered on C's link. Once it
 * is READY the node's limits go to the adapter and C has room. Returns 0,
 * or -1 when C failed (closed, or the run stopped: a refused HELLO or
 * AUTH is not worth reconnecting for).
 */
static int
conn_handshake(struct brim_bench_conn *c)
{
    struct brim_bench_thread *t = c->t;
    struct brim_link_reply    r;
    int                       rc;

    rc = 0;
    while (c->link.state != BRIM_LINK_READY && rc == 0) {
        rc = brim_link_take(&c->link, &r);
        if (rc == 0 && c->link.state != BRIM_LINK_READY) {
            break; /* more bytes needed */
        }
    }
    if (rc == BRIM_EBADREPLY || rc == BRIM_ECLOSED) {
        brim_bench_conn_fail(c, c->link.err);
        return -1;
    }
    if (rc != 0) {
        brim_bench_log_fatal(t, "%s (%s)", c->link.err, brim_err_name(rc));
        return -1;
    }
    if (brim_link_unsent(&c->link) > 0) {
        conn_mark_dirty(c); /* AUTH's next step */
    }
    if (c->link.state == BRIM_LINK_READY) {
        if (t->proto->set_limits != NULL) {
            t->proto->set_limits(c->pctx, &c->link.limits);
        }
        if (brim_bench_conn_has_room(c)) {
            t->nroom[c->node]++;
        }
    }
    return 0;
}

/* Handle every whole reply buffered on C. */
static void
conn_parse(struct brim_bench_conn *c, uint64_t now)
{
    struct brim_bench_rep rep;
    const char           *in;
    size_t                off, len;
    long                  n;

    if (c->link.state != BRIM_LINK_READY && conn_handshake(c) != 0) {
        return;
    }
    in = brim_link_input(&c->link, &len);
    off = 0;
    while (c->n > 0 && c->link.fd >= 0) {
        n = c->t->proto->parse(c->pctx, in + off, len - off, &c->fifo[c->head],
                               &rep);
        if (n == 0) {
            break;
        }
        if (n < 0) {
            brim_bench_conn_fail(c, "malformed reply");
            return;
        }
        conn_complete(c, &rep, now);
        off += (size_t) n;
    }
    if (c->link.fd < 0) {
        return;
    }
    if (c->n == 0 && off < len) {
        brim_bench_conn_fail(c, "bytes from the server with no request out");
        return;
    }
    brim_link_consume(&c->link, off);
}

int
brim_bench_conn_readable(struct brim_bench_conn *c, uint64_t *read_ns)
{
    struct brim_bench_thread *t = c->t;
    uint64_t                  now;
    int                       rc;

    rc = brim_link_read(&c->link);
    if (rc == 0) {
        return 0; /* nothing after all */
    }
    if (rc == BRIM_ENOMEM) {
        brim_bench_log_fatal(t, "out of memory for a read buffer");
        return 0;
    }
    if (rc < 0) {
        brim_bench_conn_fail(c,
                             c->link.sys_errno == 0
                                 ? "closed by the server"
                                 : strerror(c->link.sys_errno));
        return 0;
    }
    now = brim_sock_now_ns();
    conn_parse(c, now);
    if (c->link.fd < 0) {
        return 0;
    }
    *read_ns = now;
    return 1;
}
