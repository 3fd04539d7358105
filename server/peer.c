/*
 * server/peer.c - outgoing connections (server/peer.h): connect, framed
 * requests out, replies matched to requests by order. Owns the socket, the
 * input buffer and the FIFO of waiting requests; not what the frames say.
 * The owner's struct outlives every callback, since writes in flight and
 * the close callback point at it.
 */
#include "server/peer.h"

#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "proto/frame.h"
#include "server/conn.h"
#include "server/log.h"

#define PEER_READ_CHUNK (64u << 10)  /* bytes per read */

/* One write in flight: owns its bytes. */
struct peer_write {
    uv_write_t        req;          /* libuv request */
    struct brim_peer *p;            /* the connection */
    struct brim_buf   buf;          /* the bytes, freed in the callback */
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
        *buf = uv_buf_init(NULL, 0);    /* read_cb sees UV_ENOBUFS */
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

    while (p->state == BRIM_PEER_OPEN) {
        rc = brim_frame_peek(p->in.data + off, p->in.len - off,
                             p->max_frame_bytes, &body);
        if (rc == BRIM_EAGAIN) {
            break;
        }
        if (rc != 0 || p->ncalls == 0) {
            /* A frame too big, or one nobody asked for (an error frame
             * before the peer closes): the stream cannot be trusted. */
            brim_log_warn("%s: %s; closing", p->addr, rc != 0
                          ? "reply frame above the limit"
                          : "frame without a request");
            peer_close_with(p, BRIM_EBADREQ);
            return;
        }
        call = p->calls[p->calls_head];
        p->calls_head = (p->calls_head + 1) % p->calls_cap;
        p->ncalls--;
        if (call.cb != NULL) {          /* NULL: nobody waits for it */
            call.cb(p, 0, p->in.data + off + BRIM_FRAME_HDR, body, call.arg);
        }
        off += BRIM_FRAME_HDR + (size_t) body;
    }
    if (p->state == BRIM_PEER_OPEN) {
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

static void
peer_connect_cb(uv_connect_t *req, int status)
{
    struct brim_peer *p = BRIM_CONTAINER_OF(req, struct brim_peer, connect);
    int               rc = brim_err_from_uv(status);

    if (p->state != BRIM_PEER_CONNECTING) {
        return;                     /* closed meanwhile (UV_ECANCELED) */
    }
    if (status == 0) {
        status = uv_read_start((uv_stream_t *) &p->tcp, peer_alloc_cb,
                               peer_read_cb);
        rc = brim_err_from_uv(status);
    }
    if (status != 0) {
        if (p->on_connect != NULL) {
            p->on_connect(p, rc);
        }
        peer_close_with(p, rc);
        return;
    }
    p->state = BRIM_PEER_OPEN;
    uv_tcp_nodelay(&p->tcp, 1);
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

int
brim_peer_call(struct brim_peer *p, struct brim_buf *frame,
               brim_peer_reply_cb cb, void *arg)
{
    struct peer_write *w;
    uv_buf_t           b;
    int                rc;

    if (p->state != BRIM_PEER_OPEN) {
        return BRIM_ECLOSED;
    }
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
        (struct brim_peer_call) { cb, arg };
    p->ncalls++;
    return 0;
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
