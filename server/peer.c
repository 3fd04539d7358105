/*
 * server/peer.c - outgoing connections (server/peer.h): connect, the
 * handshake (HELLO, then AUTH's challenge and proof, PROTOCOL.md 12.2),
 * framed requests out, replies matched to requests by order. Owns the
 * socket, the input buffer and the FIFO of waiting requests; what the
 * frames say after the handshake is the owner's. The owner's struct
 * outlives every callback, since writes in flight and the close callback
 * point at it. HELLO and AUTH's challenge go in one write: replies come
 * in order, so the challenge's answer is read after HELLO's, whose role
 * it needs.
 */
#include "server/peer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "proto/frame.h"
#include "proto/wire.h"
#include "server/conn.h"
#include "server/log.h"

#define PEER_READ_CHUNK (64u << 10) /* bytes per read */

/* One write in flight: owns its bytes. */
struct peer_write {
    uv_write_t        req; /* libuv request */
    struct brim_peer *p;   /* the connection */
    struct brim_buf   buf; /* the bytes, freed in the callback */
};

void
brim_peer_init(struct brim_peer *p, uv_loop_t *loop, size_t max_frame_bytes,
               brim_peer_connect_cb on_connect, brim_peer_close_cb on_close,
               void *data)
{
    memset(p, 0, sizeof(*p));
    p->loop = loop;
    p->max_frame_bytes = max_frame_bytes;
    p->on_connect = on_connect;
    p->on_close = on_close;
    p->data = data;
    p->state = BRIM_PEER_IDLE;
    brim_buf_init(&p->in);
}

void
brim_peer_set_hello(struct brim_peer *p, const struct brim_peer_hello *hello)
{
    size_t n = hello->name != NULL ? strlen(hello->name) : 0;

    p->hs = 1;
    p->hs_hello = *hello;
    n = BRIM_MIN(n, sizeof(p->hs_name) - 1);
    memcpy(p->hs_name, hello->name != NULL ? hello->name : "", n);
    p->hs_name[n] = '\0';
    p->hs_hello.name = p->hs_name;
}

static void
peer_close_cb(uv_handle_t *h)
{
    struct brim_peer     *p = BRIM_CONTAINER_OF(h, struct brim_peer, tcp);
    struct brim_peer_call call;

    /* Fail the waiting calls oldest first; a callback may not send (the
     * peer is not OPEN) but may start a reconnect timer. */
    while (p->ncalls > 0) {
        call = p->calls[p->calls_head];
        p->calls_head = (p->calls_head + 1) % p->calls_cap;
        p->ncalls--;
        if (call.cb != NULL) {
            call.cb(p, BRIM_ECLOSED, NULL, 0, call.arg);
        }
    }
    brim_buf_truncate(&p->in, 0);
    OPENSSL_cleanse(p->hs_nonce_c, sizeof(p->hs_nonce_c));
    p->state = BRIM_PEER_IDLE;
    if (p->on_close != NULL) {
        p->on_close(p, p->close_status);
    }
}

static void
peer_close_with(struct brim_peer *p, int status)
{
    if (p->state == BRIM_PEER_IDLE || p->state == BRIM_PEER_CLOSING) {
        return;
    }
    p->state = BRIM_PEER_CLOSING;
    p->close_status = status;
    uv_close((uv_handle_t *) &p->tcp, peer_close_cb);
}

void
brim_peer_close(struct brim_peer *p)
{
    peer_close_with(p, BRIM_ECLOSED);
}

static void
peer_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct brim_peer *p = BRIM_CONTAINER_OF(h, struct brim_peer, tcp);

    (void) hint;
    if (brim_buf_reserve(&p->in, PEER_READ_CHUNK) != 0) {
        *buf = uv_buf_init(NULL, 0); /* read_cb sees UV_ENOBUFS */
        return;
    }
    *buf = uv_buf_init(brim_buf_tail(&p->in), PEER_READ_CHUNK);
}

/* Hand every whole frame in P->in to its request, oldest first. */
static void
peer_process(struct brim_peer *p)
{
    struct brim_peer_call call;
    size_t                off = 0;
    uint32_t              body;
    int                   rc;

    while (p->state == BRIM_PEER_OPEN || p->state == BRIM_PEER_HANDSHAKE) {
        rc = brim_frame_peek(p->in.data + off, p->in.len - off,
                             p->max_frame_bytes, &body);
        if (rc == BRIM_EAGAIN) {
            break;
        }
        if (rc != 0 || p->ncalls == 0) {
            /* A frame too big, or one nobody asked for (an error frame
             * before the peer closes): the stream cannot be trusted. */
            brim_log_warn("%s: %s; closing", p->addr,
                          rc != 0 ? "reply frame above the limit"
                                  : "frame without a request");
            peer_close_with(p, BRIM_EBADREQ);
            return;
        }
        call = p->calls[p->calls_head];
        p->calls_head = (p->calls_head + 1) % p->calls_cap;
        p->ncalls--;
        if (call.cb != NULL) { /* NULL: nobody waits for it */
            call.cb(p, 0, p->in.data + off + BRIM_FRAME_HDR, body, call.arg);
        }
        off += BRIM_FRAME_HDR + (size_t) body;
    }
    if (p->state == BRIM_PEER_OPEN || p->state == BRIM_PEER_HANDSHAKE) {
        brim_buf_consume(&p->in, off);
    }
}

static void
peer_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct brim_peer *p = BRIM_CONTAINER_OF(s, struct brim_peer, tcp);

    (void) buf;
    if (nread < 0) {
        if (nread != UV_EOF) {
            brim_log_info("%s: read: %s", p->addr, uv_strerror((int) nread));
        }
        peer_close_with(p, brim_err_from_uv((int) nread));
        return;
    }
    brim_buf_commit(&p->in, (size_t) nread);
    peer_process(p);
}

static void peer_hs_start(struct brim_peer *p);

static void
peer_connect_cb(uv_connect_t *req, int status)
{
    struct brim_peer *p = BRIM_CONTAINER_OF(req, struct brim_peer, connect);
    int               rc = brim_err_from_uv(status);

    if (p->state != BRIM_PEER_CONNECTING) {
        return; /* closed meanwhile (UV_ECANCELED) */
    }
    if (status == 0) {
        status =
            uv_read_start((uv_stream_t *) &p->tcp, peer_alloc_cb, peer_read_cb);
        rc = brim_err_from_uv(status);
    }
    if (status != 0) {
        p->hs_reported = 1;
        if (p->on_connect != NULL) {
            p->on_connect(p, rc);
        }
        peer_close_with(p, rc);
        return;
    }
    uv_tcp_nodelay(&p->tcp, 1);
    if (p->hs) {
        p->state = BRIM_PEER_HANDSHAKE;
        peer_hs_start(p);
        return;
    }
    p->state = BRIM_PEER_OPEN;
    p->hs_reported = 1;
    if (p->on_connect != NULL) {
        p->on_connect(p, 0);
    }
}

int
brim_peer_connect(struct brim_peer *p, const char *addr,
                  char errbuf[BRIM_ERRBUF_LEN])
{
    struct sockaddr_storage sa;
    int                     rc;

    if (p->state != BRIM_PEER_IDLE) {
        return BRIM_EAGAIN;
    }
    if (strlen(addr) >= sizeof(p->addr) || brim_addr_parse(addr, &sa) != 0) {
        brim_errfmt(errbuf, "connect: bad address \"%.100s\": want IP:PORT",
                    addr);
        return BRIM_EINVAL;
    }
    memcpy(p->addr, addr, strlen(addr) + 1);
    uv_tcp_init(p->loop, &p->tcp);
    p->state = BRIM_PEER_CONNECTING;
    p->close_status = 0;
    p->hs_reported = 0;
    p->hs_failed_op = 0;
    p->hs_error[0] = '\0';
    memset(&p->peer_limits, 0, sizeof(p->peer_limits));
    rc = uv_tcp_connect(&p->connect, &p->tcp, (struct sockaddr *) &sa,
                        peer_connect_cb);
    if (rc != 0) {
        brim_errfmt(errbuf, "connect: %s: %s", addr, uv_strerror(rc));
        peer_close_with(p, brim_err_from_uv(rc));
        return BRIM_ESYS;
    }
    return 0;
}

static void
peer_write_cb(uv_write_t *req, int status)
{
    struct peer_write *w = BRIM_CONTAINER_OF(req, struct peer_write, req);
    struct brim_peer  *p = w->p;

    brim_buf_destroy(&w->buf);
    brim_free(w);
    p->writes--;
    if (status < 0) {
        peer_close_with(p, brim_err_from_uv(status));
    }
}

/* Make room for one more waiting call. Returns 0 or BRIM_ENOMEM. */
static int
peer_calls_grow(struct brim_peer *p)
{
    struct brim_peer_call *n;
    uint32_t               cap, i;

    if (p->ncalls < p->calls_cap) {
        return 0;
    }
    cap = p->calls_cap == 0 ? 16 : 2 * p->calls_cap;
    n = brim_malloc(cap * sizeof(*n));
    if (n == NULL) {
        return BRIM_ENOMEM;
    }
    for (i = 0; i < p->ncalls; i++) {
        n[i] = p->calls[(p->calls_head + i) % p->calls_cap];
    }
    brim_free(p->calls);
    p->calls = n;
    p->calls_cap = cap;
    p->calls_head = 0;
    return 0;
}

/* brim_peer_call() in the OPEN or HANDSHAKE state. */
static int
peer_send(struct brim_peer *p, struct brim_buf *frame, brim_peer_reply_cb cb,
          void *arg)
{
    struct peer_write *w;
    uv_buf_t           b;
    int                rc;

    if (peer_calls_grow(p) != 0) {
        return BRIM_ENOMEM;
    }
    w = brim_malloc(sizeof(*w));
    if (w == NULL) {
        return BRIM_ENOMEM;
    }
    w->p = p;
    w->buf = *frame;
    brim_buf_init(frame);
    b = uv_buf_init(w->buf.data, (unsigned int) w->buf.len);
    rc = uv_write(&w->req, (uv_stream_t *) &p->tcp, &b, 1, peer_write_cb);
    if (rc != 0) {
        brim_buf_destroy(&w->buf);
        brim_free(w);
        peer_close_with(p, brim_err_from_uv(rc));
        return BRIM_ECLOSED;
    }
    p->writes++;
    p->calls[(p->calls_head + p->ncalls) % p->calls_cap] =
        (struct brim_peer_call){cb, arg};
    p->ncalls++;
    return 0;
}

int
brim_peer_call(struct brim_peer *p, struct brim_buf *frame,
               brim_peer_reply_cb cb, void *arg)
{
    if (p->state != BRIM_PEER_OPEN) {
        return BRIM_ECLOSED;
    }
    return peer_send(p, frame, cb, arg);
}

/* ---- the handshake: HELLO, then AUTH's challenge and proof ---- */

/* The handshake's requests, in order; each reply's ARG. */
enum peer_hs_step {
    PEER_HS_HELLO = 1,
    PEER_HS_CHALLENGE,
    PEER_HS_PROOF
};

static void peer_hs_rep(struct brim_peer *p, int status, const char *body,
                        size_t len, void *arg);

/*
 * The handshake failed at OP with STATUS (printf FMT says why): the owner
 * hears it once through ON_CONNECT, then the connection closes. A call
 * failed by a close (BRIM_ECLOSED) only records why: the owner's close
 * callback follows anyway.
 */
static void __attribute__((format(printf, 4, 5)))
peer_hs_fail(struct brim_peer *p, int status, uint32_t op, const char *fmt, ...)
{
    va_list ap;

    if (!p->hs_reported) {
        p->hs_reported = 1;
        p->hs_failed_op = op;
        va_start(ap, fmt);
        vsnprintf(p->hs_error, sizeof(p->hs_error), fmt, ap);
        va_end(ap);
        if (op == BRIM_OP_AUTH && status == BRIM_EDENIED
            && p->hs_hello.failures != NULL)
        {
            (*p->hs_hello.failures)++;
        }
        if (status != BRIM_ECLOSED && p->on_connect != NULL) {
            p->on_connect(p, status);
        }
    }
    OPENSSL_cleanse(p->hs_nonce_c, sizeof(p->hs_nonce_c));
    peer_close_with(p, status);
}

/* Encode REQ and send it as the handshake's STEP. Fails the handshake
 * when it cannot. Returns 0 or a BRIM_E* code. */
static int
peer_hs_send(struct brim_peer *p, struct brim_req *req, enum peer_hs_step step)
{
    struct brim_buf buf;
    int             rc;

    brim_buf_init(&buf);
    req->epoch = p->hs_hello.epoch;
    rc = brim_wire_encode_req(&buf, req);
    if (rc == 0) {
        rc = peer_send(p, &buf, peer_hs_rep, (void *) (uintptr_t) step);
    }
    brim_buf_destroy(&buf);
    if (rc != 0) {
        peer_hs_fail(p, rc, req->op, "cannot send %s: %s",
                     brim_op_name(req->op), brim_strerror(rc));
    }
    return rc;
}

/* Decode the reply BODY to OP into *REP (borrowing ZONE). Fails the
 * handshake when it is malformed or a refusal (WHAT names the step in the
 * message). Returns 0 or a BRIM_E* code. */
static int
peer_hs_parse(struct brim_peer *p, int status, uint32_t op, const char *what,
              const char *body, size_t len, msgpack_zone *zone,
              struct brim_rep *rep)
{
    struct brim_wire_limits lim;
    char                    err[BRIM_ERRBUF_LEN] = "";
    int                     rc;

    memset(rep, 0, sizeof(*rep));
    if (status != 0) {
        peer_hs_fail(p, status, op, "closed before %s's reply",
                     brim_op_name(op));
        return status;
    }
    brim_wire_limits_default(&lim);
    rc = brim_wire_parse_rep(body, len, op, &lim, zone, rep, err);
    if (rc != 0) {
        peer_hs_fail(p, BRIM_EBADREPLY, op, "bad %s reply: %s",
                     brim_op_name(op), err);
        return rc;
    }
    if (rep->status != 0) {
        peer_hs_fail(p, rep->status, op, "%s refused: %s: %.*s", what,
                     brim_err_name(rep->status),
                     (int) BRIM_MIN(rep->message_len, 120),
                     rep->message != NULL ? rep->message : "");
        return rep->status;
    }
    return 0;
}

/* The handshake is over: P is open for the owner's requests. */
static void
peer_hs_done(struct brim_peer *p)
{
    OPENSSL_cleanse(p->hs_nonce_c, sizeof(p->hs_nonce_c));
    p->state = BRIM_PEER_OPEN;
    p->hs_reported = 1;
    if (p->on_connect != NULL) {
        p->on_connect(p, 0);
    }
}

/* The server's answer REP to our challenge: check its proof, then send
 * ours. */
static void
peer_hs_challenge(struct brim_peer *p, const struct brim_rep *rep)
{
    const struct brim_auth_secret *key = p->hs_hello.secret;
    struct brim_req                req;
    uint8_t                        mac[BRIM_AUTH_MAC_BYTES];
    uint32_t                       role = p->hs_hello.role;

    if (rep->auth_nonce == NULL) {
        peer_hs_fail(p, BRIM_EBADREPLY, BRIM_OP_AUTH,
                     "AUTH's answer "
                     "carries no nonce and proof");
    } else if (brim_auth_verify(key, BRIM_AUTH_SERVER, p->hs_nonce_c,
                                (const uint8_t *) rep->auth_nonce, role,
                                p->hs_role_s, rep->auth_mac,
                                BRIM_AUTH_MAC_BYTES)
               != 0)
    {
        /* Nothing of ours is sent: an impostor learns no proof. */
        peer_hs_fail(p, BRIM_EDENIED, BRIM_OP_AUTH,
                     "the server's proof of "
                     "the secret is wrong: not this cluster's server, or "
                     "its secret file differs from ours");
    } else if (brim_auth_mac(key, BRIM_AUTH_CLIENT, p->hs_nonce_c,
                             (const uint8_t *) rep->auth_nonce, role,
                             p->hs_role_s, mac)
               != 0)
    {
        peer_hs_fail(p, BRIM_ESYS, BRIM_OP_AUTH, "libcrypto failed (HMAC)");
    } else {
        memset(&req, 0, sizeof(req));
        req.op = BRIM_OP_AUTH;
        req.request_id = 3;
        req.arg_u32 = BRIM_AUTH_PROOF;
        req.auth = (const char *) mac;
        (void) peer_hs_send(p, &req, PEER_HS_PROOF);
        OPENSSL_cleanse(mac, sizeof(mac));
    }
}

/* One reply of the handshake; ARG is its step (enum peer_hs_step). */
static void
peer_hs_rep(struct brim_peer *p, int status, const char *body, size_t len,
            void *arg)
{
    static const char *const what[] = {
        [PEER_HS_HELLO] = "HELLO",
        [PEER_HS_CHALLENGE] = "AUTH",
        [PEER_HS_PROOF] = "our proof of the secret (the secrets differ)",
    };
    uintptr_t       step = (uintptr_t) arg;
    uint32_t        op = step == PEER_HS_HELLO ? BRIM_OP_HELLO : BRIM_OP_AUTH;
    struct brim_rep rep;
    msgpack_zone    zone;

    if (!msgpack_zone_init(&zone, 1024)) {
        peer_hs_fail(p, BRIM_ENOMEM, op, "out of memory");
        return;
    }
    if (peer_hs_parse(p, status, op, what[step], body, len, &zone, &rep) == 0) {
        switch (step) {
        case PEER_HS_HELLO:
            p->hs_role_s = rep.hello.role;
            p->peer_cluster_id = rep.hello.cluster_id;
            p->peer_epoch = rep.epoch;
            p->peer_limits = rep.limits;
            if (p->hs_hello.secret == NULL) {
                peer_hs_done(p);
            }
            break;
        case PEER_HS_CHALLENGE:
            peer_hs_challenge(p, &rep);
            break;
        default:
            peer_hs_done(p);
            break;
        }
    }
    msgpack_zone_destroy(&zone);
}

/* Send HELLO and, with a secret, AUTH's challenge behind it. */
static void
peer_hs_start(struct brim_peer *p)
{
    const struct brim_peer_hello *h = &p->hs_hello;
    struct brim_req               req;

    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_HELLO;
    req.request_id = 1;
    req.hello.version = BRIM_WIRE_VERSION;
    req.hello.role = h->role;
    req.hello.cluster_id = h->cluster_id;
    req.hello.incarnation = h->incarnation;
    req.hello.name = h->name;
    req.hello.name_len = strlen(h->name);
    if (peer_hs_send(p, &req, PEER_HS_HELLO) != 0 || h->secret == NULL) {
        return;
    }
    if (brim_auth_nonce(p->hs_nonce_c) != 0) {
        peer_hs_fail(p, BRIM_ESYS, BRIM_OP_AUTH,
                     "no random bytes for a "
                     "nonce (RAND_bytes)");
        return;
    }
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_AUTH;
    req.request_id = 2;
    req.arg_u32 = BRIM_AUTH_CHALLENGE;
    req.auth = (const char *) p->hs_nonce_c;
    (void) peer_hs_send(p, &req, PEER_HS_CHALLENGE);
}

void
brim_peer_destroy(struct brim_peer *p)
{
    BRIM_ASSERT(p->state == BRIM_PEER_IDLE);
    brim_buf_destroy(&p->in);
    brim_free(p->calls);
    p->calls = NULL;
    p->calls_cap = p->ncalls = p->calls_head = 0;
}

size_t
brim_peer_write_queued(const struct brim_peer *p)
{
    if (p->state != BRIM_PEER_OPEN) {
        return 0;
    }
    return uv_stream_get_write_queue_size((const uv_stream_t *) &p->tcp);
}
