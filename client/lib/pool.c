/*
 * client/lib/pool.c - one connection per node: opening it with HELLO,
 * checking an idle one before reuse, and the exchange that pipelines a
 * batch of requests and reads their replies in order within a deadline.
 * It decides nothing about retries (route.c does); it reports what the
 * wire said, and closes the connection on anything it cannot trust: a
 * timeout (late replies would be taken for the next call's), a reply with
 * the wrong id, a malformed or unsolicited frame.
 */
#include "client/lib/client_int.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "proto/frame.h"
#include "proto/ops.h"

/* msgpack zone chunk for reply objects: a STATS map fits in one. */
#define POOL_ZONE_CHUNK 8192

struct brim_pool_node *
brim_pool_node_new(const char *addr)
{
    struct brim_pool_node *n;

    n = brim_calloc(1, sizeof(*n));
    if (n == NULL) {
        return NULL;
    }
    n->addr = brim_strndup(addr, strlen(addr));
    if (n->addr == NULL || !msgpack_zone_init(&n->zone, POOL_ZONE_CHUNK)) {
        brim_free(n->addr);
        brim_free(n);
        return NULL;
    }
    n->fd = -1;
    brim_buf_init(&n->out);
    brim_buf_init(&n->in);
    brim_wire_limits_default(&n->limits);
    return n;
}

void
brim_pool_node_free(struct brim_pool_node *n)
{
    if (n == NULL) {
        return;
    }
    brim_pool_close(n);
    brim_buf_destroy(&n->out);
    brim_buf_destroy(&n->in);
    msgpack_zone_destroy(&n->zone);
    brim_free(n->addr);
    brim_free(n);
}

struct brim_pool_node *
brim_pool_get(struct brim_client *c, const char *addr)
{
    struct brim_pool_node *n;

    for (n = c->nodes; n != NULL; n = n->next) {
        if (strcmp(n->addr, addr) == 0) {
            return n;
        }
    }
    n = brim_pool_node_new(addr);
    if (n == NULL) {
        return NULL;
    }
    n->next = c->nodes;
    c->nodes = n;
    return n;
}

void
brim_pool_close(struct brim_pool_node *n)
{
    if (n->fd >= 0) {
        close(n->fd);
        n->fd = -1;
    }
    n->in.len = 0;
    n->out.len = 0;
    n->out_off = 0;
}

void
brim_pool_free(struct brim_client *c)
{
    struct brim_pool_node *n, *next;

    for (n = c->nodes; n != NULL; n = next) {
        next = n->next;
        brim_pool_node_free(n);
    }
    c->nodes = NULL;
    c->home = NULL;
}

/*
 * True when N's idle connection may still be used. Nothing is outstanding
 * between calls, so a readable socket means the node closed it (idle
 * timeout, restart) or sent something unasked (an error frame before a
 * close): either way it is not to be trusted.
 */
static int
pool_alive(struct brim_pool_node *n)
{
    struct pollfd pfd;
    char          byte;
    ssize_t       r;

    pfd.fd = n->fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    if (poll(&pfd, 1, 0) == 0) {
        return 1;
    }
    r = recv(n->fd, &byte, 1, MSG_PEEK);
    return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

int
brim_pool_write(struct brim_client *c, struct brim_pool_node *n)
{
    ssize_t w;

    while (n->out_off < n->out.len) {
        w = send(n->fd, n->out.data + n->out_off, n->out.len - n->out_off,
                 MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return 0;
            }
            brim_lib_errmsg(c, "%s: send: %s", n->addr, strerror(errno));
            return errno == EPIPE || errno == ECONNRESET ? BRIM_ECLOSED
                                                         : BRIM_ESYS;
        }
        n->out_off += (size_t) w;
    }
    return 0;
}

/* Record in CALL what a non-OK reply REP says (message, MOVED, RETRY). */
static int
pool_note_error(struct brim_client *c, struct brim_pool_node *n,
                struct brim_call *call, const struct brim_rep *rep)
{
    brim_lib_errmsg(c, "%s: %s: %.*s", n->addr, brim_op_name(call->req.op),
                    (int) BRIM_MIN(rep->message_len, 160),
                    rep->message != NULL ? rep->message : "");
    if (rep->status == BRIM_EMOVED || rep->status == BRIM_ERETRY) {
        call->rep_epoch = rep->epoch;
    }
    if (rep->status == BRIM_EMOVED) {
        brim_free(call->redirect);
        call->redirect = NULL;
        if (rep->owner_len == 0 || rep->owner_len >= BRIM_LIB_ADDR_MAX
            || memchr(rep->owner, '\0', rep->owner_len) != NULL)
        {
            brim_lib_errmsg(c, "%s: MOVED names a bad owner address",
                            n->addr);
            return BRIM_EBADREPLY;
        }
        call->redirect = brim_strndup(rep->owner, rep->owner_len);
        if (call->redirect == NULL) {
            return BRIM_ENOMEM;
        }
    }
    return 0;
}

/*
 * Handle the frame BODY[0 .. LEN) as the reply to CALL. Returns 0 (CALL is
 * answered), or an error that ends the exchange.
 */
static int
pool_reply(struct brim_client *c, struct brim_pool_node *n,
           struct brim_call *call, const char *body, uint32_t len)
{
    struct brim_rep rep;
    char            err[BRIM_ERRBUF_LEN];
    int             rc;

    err[0] = '\0';
    rc = brim_wire_parse_rep(body, len, call->req.op, &n->limits, &n->zone,
                             &rep, err);
    if (rc != 0) {
        brim_lib_errmsg(c, "%s: malformed reply to %s: %s", n->addr,
                        brim_op_name(call->req.op), err);
        return BRIM_EBADREPLY;
    }
    if (rep.request_id != call->req.request_id) {
        if (rep.request_id == 0 && rep.status != 0) {
            /* The node refused the connection or a frame as a whole, and
             * closes next: the call did not run. */
            (void) pool_note_error(c, n, call, &rep);
            call->status = rep.status;
            call->answered = 1;
            return BRIM_ECLOSED;
        }
        brim_lib_errmsg(c, "%s: reply id %" PRIu64 " to %s, expected %" PRIu64,
                        n->addr, rep.request_id, brim_op_name(call->req.op),
                        call->req.request_id);
        return BRIM_EBADREPLY;
    }
    call->answered = 1;
    call->status = rep.status;
    if (rep.status != 0) {
        rc = pool_note_error(c, n, call, &rep);
    } else if (call->on_reply != NULL) {
        rc = call->on_reply(call, &rep);
        if (rc == BRIM_EBADREPLY) {
            brim_lib_errmsg(c, "%s: reply to %s does not fit the request",
                            n->addr, brim_op_name(call->req.op));
            call->answered = 0;     /* it gets the exchange's error */
        }
    }
    if (rc == BRIM_EBADREPLY) {
        return rc;
    }
    if (rc != 0) {
        call->status = rc;          /* a local failure, e.g. ENOMEM */
    }
    return 0;
}

int
brim_pool_frames(struct brim_client *c, struct brim_pool_node *n,
                 brim_pool_frame_fn fn, void *arg)
{
    size_t   off;
    uint32_t len;
    int      rc;

    off = 0;
    for (;;) {
        rc = brim_frame_peek(n->in.data + off, n->in.len - off,
                             n->limits.max_frame_bytes, &len);
        if (rc == BRIM_EAGAIN) {
            rc = 0;
            break;
        }
        if (rc != 0) {
            brim_lib_errmsg(c, "%s: reply frame above %" PRIu32 " bytes",
                            n->addr, n->limits.max_frame_bytes);
            rc = BRIM_EBADREPLY;
            break;
        }
        rc = fn(arg, n->in.data + off + BRIM_FRAME_HDR, len);
        if (rc != 0) {
            break;
        }
        off += BRIM_FRAME_HDR + (size_t) len;
    }
    brim_buf_consume(&n->in, off);
    return rc;
}

/* The replies an exchange awaits: pool_frame()'s argument. */
struct pool_replies {
    struct brim_client     *c;          /* the client */
    struct brim_pool_node  *n;          /* the node they come from */
    struct brim_call      **calls;      /* the calls, in request order */
    size_t                  ncalls;     /* their count */
    size_t                 *got;        /* calls answered so far */
};

/* Take one frame as the reply to the next call of ARG's. */
static int
pool_frame(void *arg, const char *body, uint32_t len)
{
    struct pool_replies *r = arg;
    struct brim_call    *call;
    int                  rc;

    if (*r->got == r->ncalls) {
        brim_lib_errmsg(r->c, "%s: unsolicited frame from the node",
                        r->n->addr);
        return BRIM_EBADREPLY;
    }
    call = r->calls[*r->got];
    rc = pool_reply(r->c, r->n, call, body, len);
    if (call->answered) {
        (*r->got)++;
    }
    return rc;
}

/*
 * Read what the socket holds and handle the whole replies in it, until it
 * would block. Returns 0 or the error that ends the exchange (BRIM_ECLOSED
 * at end of stream with replies missing).
 */
static int
pool_read(struct brim_client *c, struct brim_pool_node *n,
          struct brim_call **calls, size_t ncalls, size_t *got)
{
    struct pool_replies replies = { c, n, calls, ncalls, got };
    ssize_t             r;
    int                 rc;

    for (;;) {
        if (brim_buf_reserve(&n->in, BRIM_READ_CHUNK) != 0) {
            brim_lib_errmsg(c, "%s: out of memory reading", n->addr);
            return BRIM_ENOMEM;
        }
        r = recv(n->fd, brim_buf_tail(&n->in), n->in.cap - n->in.len, 0);
        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return 0;
            }
            brim_lib_errmsg(c, "%s: recv: %s", n->addr, strerror(errno));
            return errno == ECONNRESET ? BRIM_ECLOSED : BRIM_ESYS;
        }
        if (r == 0) {
            if (*got < ncalls) {
                brim_lib_errmsg(c, "%s: connection closed by the node",
                                n->addr);
            }
            return BRIM_ECLOSED;    /* the caller closes our end too */
        }
        brim_buf_commit(&n->in, (size_t) r);
        rc = brim_pool_frames(c, n, pool_frame, &replies);
        if (rc != 0 || (*got == ncalls && n->in.len == 0)) {
            /* Done: bytes the node sends after the last reply are found
             * by the next call's pool_alive(). */
            return rc;
        }
    }
}

/* Encode CALLS into N->out; each gets a new request id. */
static int
pool_encode(struct brim_client *c, struct brim_pool_node *n,
            struct brim_call **calls, size_t ncalls)
{
    struct brim_call *call;
    size_t            i;
    int               rc;

    n->out.len = 0;
    n->out_off = 0;
    for (i = 0; i < ncalls; i++) {
        call = calls[i];
        call->req.request_id = ++c->next_id;
        call->req.epoch = c->epoch;
        call->start = n->out.len;
        call->sent = 0;
        call->answered = 0;
        call->tries++;
        if (call->req.op == BRIM_OP_MGET) {
            rc = brim_wire_encode_mget(&n->out, call->req.request_id,
                                       call->req.epoch, call->mkeys,
                                       call->nmkeys);
        } else {
            rc = brim_wire_encode_req(&n->out, &call->req);
        }
        if (rc != 0) {
            brim_lib_errmsg(c, "%s: cannot encode %s: %s", n->addr,
                            brim_op_name(call->req.op), brim_strerror(rc));
            return rc;
        }
    }
    return 0;
}

int
brim_pool_exchange(struct brim_client *c, struct brim_pool_node *n,
                   struct brim_call **calls, size_t ncalls,
                   int64_t deadline_ms)
{
    struct pollfd pfd;
    int64_t       wait;
    size_t        got, i;
    int           rc, prc;

    BRIM_ASSERT(n->fd >= 0 && n->in.len == 0);

    rc = pool_encode(c, n, calls, ncalls);
    if (rc == 0) {
        rc = brim_pool_write(c, n); /* usually all of it leaves at once */
    }
    got = 0;
    while (rc == 0 && got < ncalls) {
        wait = deadline_ms - brim_net_now_ms();
        if (wait <= 0) {
            brim_lib_errmsg(c, "%s: no reply to %s within the timeout",
                            n->addr, brim_op_name(calls[got]->req.op));
            rc = BRIM_ETIMEDOUT;
            break;
        }
        pfd.fd = n->fd;
        pfd.events = POLLIN | (n->out_off < n->out.len ? POLLOUT : 0);
        pfd.revents = 0;
        prc = poll(&pfd, 1, (int) BRIM_MIN(wait, INT32_MAX));
        if (prc < 0 && errno != EINTR) {
            brim_lib_errmsg(c, "%s: poll: %s", n->addr, strerror(errno));
            rc = BRIM_ESYS;
        } else if (prc > 0) {
            /* Read first: replies already here count even if the write
             * then finds the connection reset. */
            if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
                rc = pool_read(c, n, calls, ncalls, &got);
            }
            if (rc == 0 && (pfd.revents & POLLOUT)) {
                rc = brim_pool_write(c, n);
            }
        }
    }
    for (i = 0; i < ncalls; i++) {
        calls[i]->sent = calls[i]->start < n->out_off;
        if (!calls[i]->answered) {
            calls[i]->status = rc;
        }
    }
    if (rc != 0 || n->in.len != 0) {
        brim_pool_close(n);         /* nothing more may be trusted on it */
    }
    if (got == ncalls && rc == BRIM_ECLOSED) {
        rc = 0;                     /* all answered, then the node closed */
    }
    n->out.len = 0;
    n->out_off = 0;
    if (n->out.cap > BRIM_OUT_KEEP) {
        brim_buf_destroy(&n->out);  /* a large MSET's memory goes back */
    }
    if (n->in.cap > BRIM_OUT_KEEP) {
        brim_buf_destroy(&n->in);
    }
    return rc;
}

/* ON_REPLY of HELLO: keep the node's limits, incarnation and epoch. */
static int
pool_hello_reply(struct brim_call *call, const struct brim_rep *rep)
{
    struct brim_pool_node *n = call->arg;

    if (brim_wire_limits_check(&rep->limits, NULL) != 0) {
        return BRIM_EBADREPLY;
    }
    n->limits = rep->limits;
    if (n->limits.max_frame_bytes < n->frame_min) {
        n->limits.max_frame_bytes = n->frame_min;
    }
    n->incarnation = rep->hello.incarnation;
    n->cluster_id = rep->hello.cluster_id;
    n->role = rep->hello.role;
    n->epoch = rep->epoch;
    return 0;
}

/* AUTH's state on one connection (PROTOCOL.md 12.2): our nonce, then our
 * proof once the server's checked out. */
struct pool_auth {
    struct brim_client    *c;
    struct brim_pool_node *n;
    uint8_t                nonce_c[BRIM_AUTH_NONCE_BYTES];
    uint8_t                mac_c[BRIM_AUTH_MAC_BYTES];
};

/* ON_REPLY of AUTH's challenge: check the server's proof, make ours. */
static int
pool_auth_reply(struct brim_call *call, const struct brim_rep *rep)
{
    struct pool_auth *a = call->arg;

    if (call->req.arg_u32 != BRIM_AUTH_CHALLENGE) {
        return 0;                   /* the proof was accepted */
    }
    if (rep->auth_nonce == NULL) {
        return BRIM_EBADREPLY;
    }
    if (brim_auth_verify(a->c->secret, BRIM_AUTH_SERVER, a->nonce_c,
                         (const uint8_t *) rep->auth_nonce, a->c->role,
                         a->n->role, rep->auth_mac, BRIM_AUTH_MAC_BYTES) != 0)
    {
        brim_lib_errmsg(a->c, "%s: AUTH: the server's proof of the secret "
                        "is wrong (not this cluster's, or another secret "
                        "file)", a->n->addr);
        return BRIM_EDENIED;
    }
    return brim_auth_mac(a->c->secret, BRIM_AUTH_CLIENT, a->nonce_c,
                         (const uint8_t *) rep->auth_nonce, a->c->role,
                         a->n->role, a->mac_c) == 0 ? 0 : BRIM_ESYS;
}

/* After HELLO on N: AUTH's challenge, then our proof, until DL. */
static int
pool_auth(struct brim_client *c, struct brim_pool_node *n, int64_t dl)
{
    struct pool_auth  a = { c, n, { 0 }, { 0 } };
    struct brim_call  call, *callp = &call;
    int               rc, step;

    if (brim_auth_nonce(a.nonce_c) != 0) {
        brim_lib_errmsg(c, "%s: AUTH: no random bytes", n->addr);
        return BRIM_ESYS;
    }
    for (step = BRIM_AUTH_CHALLENGE; step <= BRIM_AUTH_PROOF; step++) {
        memset(&call, 0, sizeof(call));
        call.req.op = BRIM_OP_AUTH;
        call.req.arg_u32 = (uint32_t) step;
        call.req.auth = (const char *) (step == BRIM_AUTH_CHALLENGE
                                        ? a.nonce_c : a.mac_c);
        call.on_reply = pool_auth_reply;
        call.arg = &a;
        rc = brim_pool_exchange(c, n, &callp, 1, dl);
        if (rc == 0) {
            rc = call.status;
        }
        brim_free(call.redirect);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

void
brim_pool_hello_req(const struct brim_client *c, struct brim_req *req)
{
    req->op = BRIM_OP_HELLO;
    req->hello.version = BRIM_WIRE_VERSION;
    req->hello.role = c->role;
    req->hello.cluster_id = c->cluster_id;
}

/* The timeout that ends a connection attempt, for a message: the
 * call's (BY_REQUEST) or the attempt's own. */
static const char *
pool_timeout_name(const struct brim_client *c, int by_request, char *buf,
                  size_t len)
{
    snprintf(buf, len, "%s timeout %" PRIu32 " ms",
             by_request ? "request" : "connect",
             by_request ? c->request_timeout_ms : c->connect_timeout_ms);
    return buf;
}

int
brim_pool_ready(struct brim_client *c, struct brim_pool_node *n,
                int64_t deadline_ms)
{
    struct brim_call  call, *callp;
    char              err[BRIM_ERRBUF_LEN], tmo[48];
    int64_t           dl;
    int               rc, by_request;

    if (n->fd >= 0 && pool_alive(n)) {
        return 0;
    }
    brim_pool_close(n);
    /* The attempt ends at the sooner of its own timeout and the call's
     * deadline; a message names the one that applied. */
    dl = brim_net_now_ms() + c->connect_timeout_ms;
    by_request = deadline_ms < dl;
    dl = BRIM_MIN(dl, deadline_ms);
    rc = brim_net_connect(n->addr, dl, &n->fd, err);
    if (rc != 0) {
        n->fd = -1;
        if (rc == BRIM_ETIMEDOUT) {
            brim_lib_errmsg(c, "%s (%s)", err,
                            pool_timeout_name(c, by_request, tmo,
                                              sizeof(tmo)));
        } else {
            brim_lib_errmsg(c, "%s", err);
        }
        return rc;
    }
    /* A fresh connection knows nothing of the node's limits until HELLO
     * answers; the defaults bound the reply frame meanwhile. */
    brim_wire_limits_default(&n->limits);
    memset(&call, 0, sizeof(call));
    brim_pool_hello_req(c, &call.req);
    call.on_reply = pool_hello_reply;
    call.arg = n;
    callp = &call;
    rc = brim_pool_exchange(c, n, &callp, 1, dl);
    if (rc == 0 && call.status != 0) {
        rc = call.status;           /* the node refused us */
    }
    if (rc == 0 && c->secret != NULL && n->fd >= 0) {
        rc = pool_auth(c, n, dl);   /* PROTOCOL.md 12.2 */
    }
    brim_free(call.redirect);
    if (rc != 0) {
        if (rc == BRIM_ETIMEDOUT) {
            brim_lib_errmsg(c, "%s: connected, but no HELLO reply in time "
                            "(%s)", n->addr,
                            pool_timeout_name(c, by_request, tmo,
                                              sizeof(tmo)));
        }
        brim_pool_close(n);
        return rc;
    }
    if (n->fd < 0) {
        brim_lib_errmsg(c, "%s: connection closed after HELLO", n->addr);
        return BRIM_ECLOSED;
    }
    return 0;
}
