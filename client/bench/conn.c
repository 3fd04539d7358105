/*
 * client/bench/conn.c - one connection of the engine: a FIFO of the
 * requests in flight (replies come in request order with all three
 * protocols), an input buffer parsed in place, and an output buffer that
 * goes out in one send() per loop pass. A reply's latency runs from its
 * request's start (send, or intended send under --rate) to the read that
 * completed it. Replies feed the counters, the histogram and the verifier.
 */
#include "client/bench/engine_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>

#include "client/bench/cluster.h"
#include <sys/socket.h>

#include "common/defs.h"

/* Read at least this much room per read(), bytes. */
#define CONN_READ_CHUNK (64u << 10)
/* Limit on a connect, ms. */
#define CONN_CONNECT_MS 2000

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

    if (c->polling_out == on || c->fd < 0) {
        return;
    }
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN | (on ? EPOLLOUT : 0);
    ev.data.ptr = c;
    if (epoll_ctl(c->t->ep, EPOLL_CTL_MOD, c->fd, &ev) == 0) {
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
    char    why[96];
    ssize_t n;
    int     i;

    n = 0;
    /* Bounded: a socket the server closed holds little. */
    for (i = 0; i < 16 && c->fd >= 0 && c->n > 0; i++) {
        if (brim_buf_reserve(&c->in, CONN_READ_CHUNK) != 0) {
            break;
        }
        n = recv(c->fd, brim_buf_tail(&c->in), c->in.cap - c->in.len,
                 MSG_DONTWAIT);
        if (n <= 0) {
            break;
        }
        brim_buf_commit(&c->in, (size_t) n);
        conn_parse(c, brim_bench_now_ns());
    }
    if (c->fd < 0) {
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
    ssize_t                n;

    if (c->unstamped > 0) {
        /* A closed-loop request's latency starts when it leaves, not when
         * it was drawn earlier in this loop pass. */
        now = brim_bench_now_ns();
        for (i = c->n - c->unstamped; i < c->n; i++) {
            req = &c->fifo[(c->head + i) % c->cap];
            if (req->start_ns == 0) {
                req->start_ns = now;
            }
            req->sent_ns = now;
        }
        c->unstamped = 0;
    }
    while (c->fd >= 0 && c->out.len > 0) {
        n = send(c->fd, c->out.data, c->out.len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                conn_poll_out(c, 1);
                return;
            }
            conn_send_failed(c, errno);
            return;
        }
        brim_buf_consume(&c->out, (size_t) n);
    }
    conn_poll_out(c, 0);
}

/* Queue REQ's bytes on C. */
static void
conn_encode(struct brim_bench_conn *c, const struct brim_bench_req *req,
            const char *key, size_t key_len, const char *value,
            size_t value_len)
{
    if (c->t->proto->encode(&c->out, c->pctx, req, key, key_len, value,
                            value_len)
        != 0)
    {
        brim_bench_engine_fatal(c->t, "out of memory encoding a request");
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
conn_pop(struct brim_bench_conn *c, int was_hello)
{
    int room;

    room = brim_bench_conn_has_room(c);
    c->head = (c->head + 1) % c->cap;
    c->n--;
    c->t->inflight--;
    if (was_hello) {
        c->hello = 0;
    }
    if (!room && brim_bench_conn_has_room(c)) {
        c->t->nroom[c->node]++;
    }
}

/* Send HELLO on the new connection C (brim). */
static void
conn_hello(struct brim_bench_conn *c, uint64_t now)
{
    struct brim_bench_req *req;

    req = conn_push(c);
    memset(req, 0, sizeof(*req));
    req->kind = BRIM_BENCH_HELLO;
    req->start_ns = req->sent_ns = now;
    req->id = c->next_id++;
    c->hello = 1;
    conn_encode(c, req, NULL, 0, NULL, 0);
}

/* Connect C (blocking, CONN_CONNECT_MS at most). */
int
brim_bench_conn_open(struct brim_bench_conn *c, char errbuf[BRIM_ERRBUF_LEN])
{
    const struct brim_bench_node *node = &c->t->sh->nodes[c->node];
    struct epoll_event            ev;
    struct pollfd                 pfd;
    socklen_t                     len;
    int                           fd, err, one, rc;

    fd = socket(node->addr.ss_family, SOCK_STREAM, 0);
    if (fd < 0) {
        brim_errfmt(errbuf, "socket: %s", strerror(errno));
        return BRIM_ESYS;
    }
    (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        goto fail_errno;
    }
    err = 0;
    if (connect(fd, (const struct sockaddr *) &node->addr, node->addr_len) != 0)
    {
        if (errno != EINPROGRESS) {
            goto fail_errno;
        }
        pfd.fd = fd;
        pfd.events = POLLOUT;
        pfd.revents = 0;
        do {
            rc = poll(&pfd, 1, CONN_CONNECT_MS);
        } while (rc < 0 && errno == EINTR);
        if (rc == 0) {
            brim_errfmt(errbuf, "connect to %s: timed out after %d ms",
                        node->name, CONN_CONNECT_MS);
            close(fd);
            return BRIM_ETIMEDOUT;
        }
        len = sizeof(err);
        if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
            goto fail_errno;
        }
    }
    if (err != 0) {
        errno = err;
        goto fail_errno;
    }
    one = 1;
    (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(c->t->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        goto fail_errno;
    }
    if (c->pctx == NULL && c->t->proto->open(&c->pctx) != 0) {
        close(fd);
        brim_errfmt(errbuf, "out of memory");
        return BRIM_ENOMEM;
    }
    c->fd = fd;
    c->polling_out = 0;
    c->head = c->n = 0;
    c->hello = 0;
    brim_buf_truncate(&c->in, 0);
    brim_buf_truncate(&c->out, 0);
    if (c->t->proto->has_hello) {
        conn_hello(c, brim_bench_now_ns());
    }
    return 0;

fail_errno:
    err = errno;
    close(fd);
    brim_errfmt(errbuf, "connect to %s: %s", node->name, strerror(err));
    return err == ECONNREFUSED ? BRIM_ECONNREFUSED : BRIM_ESYS;
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

    if (c->fd < 0) {
        return;
    }
    brim_bench_engine_log(t, "connection %u to %s: %s (%u requests in flight)",
                          c->index, t->sh->nodes[c->node].name, why, c->n);
    for (i = 0; i < c->n; i++) {
        req = &c->fifo[(c->head + i) % c->cap];
        if (req->kind == BRIM_BENCH_HELLO) {
            continue;
        }
        if (t->route != NULL) {
            /* It goes again once a newer map is in, or after a while
             * to the same node (a restart, or a node that left the map
             * and closed its connections once it had drained). */
            brim_bench_engine_requeue(t, req, 0, t->route->epoch + 1,
                                      brim_bench_now_ns());
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
    c->n = 0;
    c->head = 0;
    c->hello = 0;
    c->unstamped = 0;
    close(c->fd); /* leaves the epoll set too */
    c->fd = -1;
    brim_buf_truncate(&c->in, 0);
    brim_buf_truncate(&c->out, 0);
    if (c->pctx != NULL) {
        t->proto->close(c->pctx);
        c->pctx = NULL;
    }
    c->reconnect_ns = 0;
    if (t->route != NULL) {
        brim_bench_cluster_want(t->sh, t->route->epoch + 1);
    }
    if (c->retries < BRIM_BENCH_RECONNECTS && !t->stopping
        && (t->route == NULL || t->route->live[c->node]))
    {
        c->reconnect_ns =
            brim_bench_now_ns() + BRIM_BENCH_RECONNECT_NS * (c->retries + 1);
    }
    brim_bench_engine_recount_room(t);
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
    req->id = c->next_id++;
    req->epoch = t->route != NULL ? t->route->epoch : 0;
    req->tries = 0;
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
    req->id = c->next_id++;
    req->epoch = t->route != NULL ? t->route->epoch : 0;
    req->tries++;
    key_len = brim_bench_key_format(key, req->key, t->o->key_size);
    value = NULL;
    value_len = 0;
    if (req->kind == BRIM_BENCH_SET) {
        value = t->value;
        value_len = req->value_len;
        if (t->o->verify) {
            value_len = brim_bench_value_build(t->value, req->value_len,
                                               t->sh->run_id, req->key,
                                               req->seq);
        }
    }
    conn_encode(c, req, key, key_len, value, value_len);
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
        brim_bench_engine_log(
            t,
            "verify: stale: key %" PRIu64 " read a "
            "value this run did not write: \"%.*s\"",
            req->key, (int) BRIM_MIN(rep->value_len, (size_t) 40), rep->value);
    } else if (res == BRIM_BENCH_VSTALE && stale != t->ver.stale) {
        brim_bench_engine_log(t,
                              "verify: stale: key %" PRIu64 " read its "
                              "write #%" PRId64 "; #%" PRIu32 " or later "
                              "was due",
                              req->key, seq, req->vread.floor);
    } else if (res == BRIM_BENCH_VLOST && lost != t->ver.lost) {
        brim_bench_engine_log(t,
                              "verify: lost: key %" PRIu64 " missed "
                              "although its acknowledged SET #%" PRIu32
                              " was live",
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
    conn_pop(c, req.kind == BRIM_BENCH_HELLO);
    if (req.kind == BRIM_BENCH_HELLO) {
        if (rep->status != 0) {
            brim_bench_engine_fatal(
                t, "%s refused HELLO: %s: %.*s", t->sh->nodes[c->node].name,
                brim_err_name(rep->status), (int) rep->message_len,
                rep->message != NULL ? rep->message : "");
        }
        return;
    }
    /* MOVED, RETRY and BUSY prove the op did not run (PROTOCOL.md 5.1):
     * with --coordinator it goes again, to the owner of the newer map. */
    if (t->route != NULL
        && (rep->status == BRIM_EMOVED || rep->status == BRIM_ERETRY
            || rep->status == BRIM_EBUSY))
    {
        brim_bench_engine_requeue(t, &req, rep->status, rep->epoch, now);
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
        brim_bench_engine_log(t, "key %" PRIu64 ": error reply %s: %.*s",
                              req.key, brim_err_name(rep->status),
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

/* Handle every whole reply buffered on C. */
static void
conn_parse(struct brim_bench_conn *c, uint64_t now)
{
    struct brim_bench_rep rep;
    size_t                off;
    long                  n;

    off = 0;
    while (c->n > 0 && c->fd >= 0) {
        n = c->t->proto->parse(c->pctx, c->in.data + off, c->in.len - off,
                               &c->fifo[c->head], &rep);
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
    if (c->fd < 0) {
        return;
    }
    if (c->n == 0 && off < c->in.len) {
        brim_bench_conn_fail(c, "bytes from the server with no request out");
        return;
    }
    brim_buf_consume(&c->in, off);
}

/* C is readable: read once, handle the replies, refill, write. */
void
brim_bench_conn_readable(struct brim_bench_conn *c)
{
    struct brim_bench_thread *t = c->t;
    ssize_t                   n;
    uint64_t                  now;

    if (brim_buf_reserve(&c->in, CONN_READ_CHUNK) != 0) {
        brim_bench_engine_fatal(t, "out of memory for a read buffer");
        return;
    }
    n = read(c->fd, brim_buf_tail(&c->in), c->in.cap - c->in.len);
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            brim_bench_conn_fail(c, strerror(errno));
        }
        return;
    }
    if (n == 0) {
        brim_bench_conn_fail(c, "closed by the server");
        return;
    }
    brim_buf_commit(&c->in, (size_t) n);
    now = brim_bench_now_ns();
    conn_parse(c, now);
    if (c->fd < 0) {
        return;
    }
    /* Closed loop: what this read completed is drawn again at once, and
     * goes out with the rest of C's output at the end of the loop pass,
     * after every readable connection was served (as redis-benchmark
     * does): a server then finds many requests per wake-up. */
    brim_bench_engine_issue(t, c, now);
}
