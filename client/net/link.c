/*
 * client/net/link.c - one client connection (link.h): the FIFO of
 * requests in flight and the reply matcher, the handshake driven by its
 * own replies (HELLO, AUTH's challenge and proof, PROTOCOL.md 12.2), the
 * send queue and the input, and the blocking helpers over poll().
 *
 * Stream offsets: every byte queued has a place in the connection's send
 * stream (OUT_BASE + its index in OUT), so "was any byte of this request
 * sent?" is one comparison even after the queue was emptied and refilled.
 * libbrim asks it to decide whether a non-idempotent op may be sent again
 * after a lost connection (DESIGN.md section 5).
 */
#include "client/net/link.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>

#include "client/net/sock.h"
#include "common/alloc.h"
#include "common/defs.h"
#include "proto/frame.h"
#include "proto/ops.h"

/* msgpack zone chunk for reply objects: a STATS map fits in one. */
#define LINK_ZONE_CHUNK 8192
/* Buffers larger than this go back to the allocator once empty
 * (brim_link_trim()): one large MSET or topology does not pin its memory. */
#define LINK_KEEP (1u << 20)
/* First size of the FIFO of requests in flight. */
#define LINK_QUEUE_MIN 16
/* Bytes of a peer's message quoted in ERR. */
#define LINK_MSG_SHOWN 160

/* The handshake's own requests (struct brim_link_req.own). */
enum link_own {
    LINK_OWN_NONE = 0,  /* the caller's */
    LINK_OWN_HELLO,     /* HELLO */
    LINK_OWN_CHALLENGE, /* AUTH step 1: our nonce */
    LINK_OWN_PROOF      /* AUTH step 2: our MAC */
};

/* Write L->err: "ADDR: " and printf FMT. */
static void link_err(struct brim_link *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
link_err(struct brim_link *l, const char *fmt, ...)
{
    va_list ap;
    int     n;

    n = snprintf(l->err, sizeof(l->err),
                 "%s: ", l->addr != NULL ? l->addr : "?");
    if (n < 0 || (size_t) n >= sizeof(l->err)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(l->err + n, sizeof(l->err) - (size_t) n, fmt, ap);
    va_end(ap);
}

int
brim_link_init(struct brim_link *l, const char *addr,
               const struct brim_link_conf *conf)
{
    memset(l, 0, sizeof(*l));
    l->fd = -1;
    if (addr != NULL) {
        l->addr = brim_strndup(addr, strlen(addr));
        if (l->addr == NULL) {
            return BRIM_ENOMEM;
        }
    }
    if (!msgpack_zone_init(&l->zone, LINK_ZONE_CHUNK)) {
        brim_free(l->addr);
        memset(l, 0, sizeof(*l));
        l->fd = -1;
        return BRIM_ENOMEM;
    }
    l->conf = *conf;
    l->inited = 1;
    brim_buf_init(&l->out);
    brim_buf_init(&l->in);
    brim_wire_limits_default(&l->limits);
    return 0;
}

void
brim_link_close(struct brim_link *l)
{
    if (!l->inited) {
        return;
    }
    if (l->fd >= 0) {
        close(l->fd);
        l->fd = -1;
    }
    l->state = BRIM_LINK_CLOSED;
    l->out_base += l->out.len; /* offsets go on growing: never reused */
    l->out.len = 0;
    l->out_off = 0;
    l->in.len = 0;
    l->in_off = 0;
    l->qhead = 0;
    l->qlen = 0;
}

void
brim_link_destroy(struct brim_link *l)
{
    if (!l->inited) {
        return;
    }
    brim_link_close(l);
    brim_buf_destroy(&l->out);
    brim_buf_destroy(&l->in);
    msgpack_zone_destroy(&l->zone);
    brim_free(l->q);
    brim_free(l->addr);
    memset(l, 0, sizeof(*l));
    l->fd = -1;
}

void
brim_link_trim(struct brim_link *l)
{
    if (l->out.len == 0 && l->out.cap > LINK_KEEP) {
        brim_buf_destroy(&l->out);
    }
    if (l->in_off == l->in.len && l->in.cap > LINK_KEEP) {
        brim_buf_destroy(&l->in);
        l->in_off = 0;
    }
}

uint64_t
brim_link_id(struct brim_link *l)
{
    return l->conf.next_id != NULL ? ++*l->conf.next_id : ++l->own_id;
}

uint64_t
brim_link_queued(const struct brim_link *l)
{
    return l->out_base + l->out.len;
}

uint64_t
brim_link_sent(const struct brim_link *l)
{
    return l->out_base + l->out_off;
}

size_t
brim_link_unsent(const struct brim_link *l)
{
    return l->out.len - l->out_off;
}

uint32_t
brim_link_inflight(const struct brim_link *l)
{
    return l->qlen;
}

struct brim_buf *
brim_link_outbuf(struct brim_link *l)
{
    return &l->out;
}

/* Append a request in flight to L's FIFO. 0 or BRIM_ENOMEM. */
static int
link_push(struct brim_link *l, const struct brim_link_req *req)
{
    struct brim_link_req *q;
    uint32_t              cap, i;

    if (l->qlen == l->qcap) {
        cap = l->qcap == 0 ? LINK_QUEUE_MIN : l->qcap * 2;
        q = brim_malloc((size_t) cap * sizeof(*q));
        if (q == NULL) {
            return BRIM_ENOMEM;
        }
        for (i = 0; i < l->qlen; i++) {
            q[i] = l->q[(l->qhead + i) % l->qcap];
        }
        brim_free(l->q);
        l->q = q;
        l->qcap = cap;
        l->qhead = 0;
    }
    l->q[(l->qhead + l->qlen) % l->qcap] = *req;
    l->qlen++;
    return 0;
}

/* Encode REQ (its id set here) with OWN and TAG as L's next request. */
static int
link_queue(struct brim_link *l, struct brim_req *req,
           const struct brim_bytes *mkeys, uint32_t nmkeys, uint8_t own,
           void *tag)
{
    struct brim_link_req e;
    size_t               mark;
    int                  rc;

    mark = l->out.len;
    e.start = brim_link_queued(l);
    e.id = req->request_id = brim_link_id(l);
    e.op = req->op;
    e.own = own;
    e.tag = tag;
    if (req->op == BRIM_OP_MGET) {
        rc = brim_wire_encode_mget(&l->out, req->request_id, req->epoch, mkeys,
                                   nmkeys);
    } else {
        rc = brim_wire_encode_req(&l->out, req);
    }
    if (rc == 0) {
        rc = link_push(l, &e);
        if (rc != 0) {
            brim_buf_truncate(&l->out, mark);
        }
    }
    if (rc != 0) {
        link_err(l, "cannot encode %s: %s", brim_op_name(req->op),
                 brim_strerror(rc));
    }
    return rc;
}

int
brim_link_queue(struct brim_link *l, struct brim_req *req,
                const struct brim_bytes *mkeys, uint32_t nmkeys, void *tag)
{
    return link_queue(l, req, mkeys, nmkeys, LINK_OWN_NONE, tag);
}

/* Queue the handshake's OWN request: HELLO, or AUTH's step with DATA. */
static int
link_queue_own(struct brim_link *l, uint8_t own, const uint8_t *data)
{
    struct brim_req req;

    memset(&req, 0, sizeof(req));
    req.epoch = l->epoch;
    if (own == LINK_OWN_HELLO) {
        req.op = BRIM_OP_HELLO;
        req.hello.version = BRIM_WIRE_VERSION;
        req.hello.role = l->conf.role;
        req.hello.cluster_id = l->conf.cluster_id;
        req.hello.name = l->conf.name;
        req.hello.name_len = l->conf.name != NULL ? strlen(l->conf.name) : 0;
    } else {
        req.op = BRIM_OP_AUTH;
        req.arg_u32 =
            own == LINK_OWN_CHALLENGE ? BRIM_AUTH_CHALLENGE : BRIM_AUTH_PROOF;
        req.auth = (const char *) data;
    }
    return link_queue(l, &req, NULL, 0, own, NULL);
}

/* The defaults, with room for CONF.frame_min a frame. */
static void
link_limits_reset(struct brim_link *l)
{
    brim_wire_limits_default(&l->limits);
    l->limits.max_frame_bytes =
        BRIM_MAX(l->limits.max_frame_bytes, l->conf.frame_min);
}

int
brim_link_attach(struct brim_link *l, int fd)
{
    int rc;

    brim_link_close(l);
    l->fd = fd;
    link_limits_reset(l);
    memset(&l->peer, 0, sizeof(l->peer));
    if (!l->conf.hello) {
        l->state = BRIM_LINK_READY;
        return 0;
    }
    l->state = BRIM_LINK_HELLO;
    rc = link_queue_own(l, LINK_OWN_HELLO, NULL);
    if (rc != 0) {
        brim_link_close(l);
    }
    return rc;
}

int
brim_link_connect(struct brim_link *l, int64_t deadline_ms)
{
    int fd, rc;

    brim_link_close(l);
    rc = brim_sock_connect(l->addr, deadline_ms, &fd, l->err);
    return rc != 0 ? rc : brim_link_attach(l, fd);
}

int
brim_link_connect_start(struct brim_link *l, uint32_t attempt)
{
    int fd, rc;

    brim_link_close(l);
    rc = brim_sock_connect_start(l->addr, attempt, &fd, l->err);
    if (rc != 0) {
        return rc;
    }
    l->fd = fd;
    l->state = BRIM_LINK_CONNECTING;
    return 0;
}

int
brim_link_connect_done(struct brim_link *l)
{
    int fd, rc;

    rc = brim_sock_connect_done(l->fd);
    if (rc == BRIM_EAGAIN) {
        return rc;
    }
    if (rc != 0) {
        link_err(l, "connect: %s", brim_strerror(rc));
        brim_link_close(l);
        return rc;
    }
    fd = l->fd;
    l->fd = -1; /* attach closes what it replaces */
    return brim_link_attach(l, fd);
}

/* ---- sending and reading ---- */

int
brim_link_flush(struct brim_link *l)
{
    ssize_t w;

    while (l->out_off < l->out.len) {
        w = send(l->fd, l->out.data + l->out_off, l->out.len - l->out_off,
                 MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return 0;
            }
            l->sys_errno = errno;
            link_err(l, "send: %s", strerror(errno));
            return errno == EPIPE || errno == ECONNRESET ? BRIM_ECLOSED
                                                         : BRIM_ESYS;
        }
        l->out_off += (size_t) w;
    }
    /* All sent: the queue starts over, its offsets carried in OUT_BASE. */
    l->out_base += l->out.len;
    l->out.len = 0;
    l->out_off = 0;
    return 0;
}

/* Drop the input already taken, so that new bytes go after the rest. */
static void
link_compact(struct brim_link *l)
{
    if (l->in_off == 0) {
        return;
    }
    brim_buf_consume(&l->in, l->in_off);
    l->in_off = 0;
}

int
brim_link_read(struct brim_link *l)
{
    ssize_t r;

    link_compact(l);
    if (brim_buf_reserve(&l->in, BRIM_LINK_READ_CHUNK) != 0) {
        link_err(l, "out of memory reading");
        return BRIM_ENOMEM;
    }
    for (;;) {
        r = recv(l->fd, brim_buf_tail(&l->in), l->in.cap - l->in.len, 0);
        if (r > 0) {
            brim_buf_commit(&l->in, (size_t) r);
            return 1;
        }
        if (r == 0) {
            l->sys_errno = 0; /* end of stream, not an error */
            return BRIM_ECLOSED;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return 0;
        }
        l->sys_errno = errno;
        link_err(l, "recv: %s", strerror(errno));
        return errno == ECONNRESET ? BRIM_ECLOSED : BRIM_ESYS;
    }
}

int
brim_link_feed(struct brim_link *l, const void *data, size_t len)
{
    link_compact(l);
    return brim_buf_append(&l->in, data, len);
}

const char *
brim_link_input(const struct brim_link *l, size_t *len)
{
    *len = l->in.len - l->in_off;
    return l->in.data + l->in_off;
}

void
brim_link_consume(struct brim_link *l, size_t n)
{
    BRIM_ASSERT(n <= l->in.len - l->in_off);
    l->in_off += n;
    if (l->in_off == l->in.len) {
        l->in.len = 0; /* all taken: start over, no move */
        l->in_off = 0;
    }
}

/* ---- replies ---- */

long
brim_link_parse(const struct brim_wire_limits *lim, msgpack_zone *zone,
                uint32_t op, uint64_t id, const char *buf, size_t len,
                struct brim_rep *rep, char errbuf[BRIM_ERRBUF_LEN])
{
    char     why[BRIM_ERRBUF_LEN];
    uint32_t body;
    int      rc;

    rc = brim_frame_peek(buf, len, lim->max_frame_bytes, &body);
    if (rc == BRIM_EAGAIN) {
        return 0;
    }
    if (rc != 0) {
        brim_errfmt(errbuf, "reply frame above %" PRIu32 " bytes",
                    lim->max_frame_bytes);
        return BRIM_EBADREPLY;
    }
    why[0] = '\0';
    rc = brim_wire_parse_rep(buf + BRIM_FRAME_HDR, body, op, lim, zone, rep,
                             errbuf != NULL ? why : NULL);
    if (rc != 0) {
        brim_errfmt(errbuf, "malformed reply to %s: %s", brim_op_name(op), why);
        return BRIM_EBADREPLY;
    }
    /* Replies come in request order (PROTOCOL.md 3), so a reply must name
     * the oldest request; id 0 with an error status is the peer refusing
     * a frame (or the connection) as a whole, which answers it too. */
    if (rep->request_id != id && (rep->request_id != 0 || rep->status == 0)) {
        brim_errfmt(errbuf, "reply id %" PRIu64 " to %s, expected %" PRIu64,
                    rep->request_id, brim_op_name(op), id);
        return BRIM_EBADREPLY;
    }
    return (long) (BRIM_FRAME_HDR + (size_t) body);
}

/* HELLO's OK reply REP: the peer's limits and who it is; then AUTH or
 * READY. */
static int
link_hello_reply(struct brim_link *l, const struct brim_rep *rep)
{
    if (brim_wire_limits_check(&rep->limits, NULL) != 0) {
        link_err(l, "reply to HELLO does not fit the request");
        return BRIM_EBADREPLY;
    }
    l->limits = rep->limits;
    l->limits.max_frame_bytes =
        BRIM_MAX(l->limits.max_frame_bytes, l->conf.frame_min);
    l->peer.incarnation = rep->hello.incarnation;
    l->peer.cluster_id = rep->hello.cluster_id;
    l->peer.role = rep->hello.role;
    l->peer.epoch = rep->epoch;
    if (l->conf.secret == NULL) {
        l->state = BRIM_LINK_READY;
        return 0;
    }
    if (brim_auth_nonce(l->nonce_c) != 0) {
        link_err(l, "AUTH: no random bytes");
        return BRIM_ESYS;
    }
    l->state = BRIM_LINK_AUTH;
    return link_queue_own(l, LINK_OWN_CHALLENGE, l->nonce_c);
}

/* AUTH's answer to our challenge: check the server's proof (mac_s) before
 * anything else is sent, then queue ours (mac_c). */
static int
link_challenge_reply(struct brim_link *l, const struct brim_rep *rep)
{
    const uint8_t *nonce_s = (const uint8_t *) rep->auth_nonce;
    uint8_t        mac_c[BRIM_AUTH_MAC_BYTES];

    if (rep->auth_nonce == NULL) {
        link_err(l, "reply to AUTH does not fit the request");
        return BRIM_EBADREPLY;
    }
    if (brim_auth_verify(l->conf.secret, BRIM_AUTH_SERVER, l->nonce_c, nonce_s,
                         l->conf.role, l->peer.role, rep->auth_mac,
                         BRIM_AUTH_MAC_BYTES)
        != 0)
    {
        link_err(l,
                 "AUTH: the server's proof of the secret is wrong (not "
                 "this cluster's, or another secret file)");
        return BRIM_EDENIED;
    }
    if (brim_auth_mac(l->conf.secret, BRIM_AUTH_CLIENT, l->nonce_c, nonce_s,
                      l->conf.role, l->peer.role, mac_c)
        != 0)
    {
        link_err(l, "AUTH: cannot compute the proof");
        return BRIM_ESYS;
    }
    return link_queue_own(l, LINK_OWN_PROOF, mac_c); /* copied: encoded */
}

/* The reply REP to the handshake's own request REQ. */
static int
link_own_reply(struct brim_link *l, const struct brim_link_req *req,
               const struct brim_rep *rep)
{
    if (rep->status != 0) {
        link_err(l, "%s: %.*s", brim_op_name(req->op),
                 (int) BRIM_MIN(rep->message_len, LINK_MSG_SHOWN),
                 rep->message != NULL ? rep->message : "");
        /* Id 0: the peer refused the connection as a whole and closes. */
        return rep->request_id == 0 ? BRIM_ECLOSED : rep->status;
    }
    switch (req->own) {
    case LINK_OWN_HELLO:
        return link_hello_reply(l, rep);
    case LINK_OWN_CHALLENGE:
        return link_challenge_reply(l, rep);
    default:
        l->state = BRIM_LINK_READY; /* our proof was accepted */
        return 0;
    }
}

int
brim_link_take(struct brim_link *l, struct brim_link_reply *r)
{
    struct brim_link_req req;
    struct brim_rep      rep;
    char                 why[BRIM_ERRBUF_LEN];
    size_t               avail;
    long                 n;
    int                  rc;

    for (;;) {
        avail = l->in.len - l->in_off;
        if (l->qlen == 0) {
            if (avail == 0) {
                return 0;
            }
            link_err(l, "unsolicited frame from the node");
            return BRIM_EBADREPLY;
        }
        req = l->q[l->qhead];
        n = brim_link_parse(&l->limits, &l->zone, req.op, req.id,
                            l->in.data + l->in_off, avail, &rep, why);
        if (n == 0) {
            return 0;
        }
        if (n < 0) {
            link_err(l, "%s", why);
            return BRIM_EBADREPLY;
        }
        /* The frame stays in IN (REP borrows it) until the next read. */
        l->in_off += (size_t) n;
        l->qhead = (l->qhead + 1) % l->qcap;
        l->qlen--;
        if (req.own == LINK_OWN_NONE) {
            r->rep = rep;
            r->id = req.id;
            r->op = req.op;
            r->tag = req.tag;
            return 1;
        }
        rc = link_own_reply(l, &req, &rep);
        if (rc != 0) {
            return rc;
        }
        if (l->qlen == 0) {
            return 0; /* the handshake step is done */
        }
    }
}

/* ---- blocking helpers ---- */

/* Read until the socket would block. 0 (something or nothing read), or
 * an error; end of stream after some bytes is left for the next time. */
static int
link_read_all(struct brim_link *l)
{
    int rc, got;

    for (got = 0;; got = 1) {
        rc = brim_link_read(l);
        if (rc == 1) {
            continue;
        }
        if (rc == 0 || (rc == BRIM_ECLOSED && got)) {
            return 0;
        }
        return rc;
    }
}

int
brim_link_wait(struct brim_link *l, int64_t deadline_ms)
{
    struct pollfd pfd;
    int64_t       wait;
    int           rc, prc;

    for (;;) {
        wait = deadline_ms - brim_sock_now_ms();
        if (wait <= 0) {
            return BRIM_ETIMEDOUT;
        }
        pfd.fd = l->fd;
        pfd.events = POLLIN | (brim_link_unsent(l) > 0 ? POLLOUT : 0);
        pfd.revents = 0;
        prc = poll(&pfd, 1, (int) BRIM_MIN(wait, INT32_MAX));
        if (prc < 0 && errno != EINTR) {
            l->sys_errno = errno;
            link_err(l, "poll: %s", strerror(errno));
            return BRIM_ESYS;
        }
        if (prc > 0) {
            break;
        }
    }
    rc = 0;
    /* Read first: replies already here count even if the send then finds
     * the connection reset (the next wait reports that). */
    if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        rc = link_read_all(l);
        if (rc != 0) {
            return rc;
        }
    }
    if ((pfd.revents & POLLOUT) != 0) {
        rc = brim_link_flush(l);
        if (rc != 0 && (pfd.revents & POLLIN) != 0) {
            rc = 0;
        }
    }
    return rc;
}

int
brim_link_handshake(struct brim_link *l, int64_t deadline_ms)
{
    struct brim_link_reply r;
    size_t                 left;
    int                    rc;

    for (;;) {
        if (l->state == BRIM_LINK_READY) {
            (void) brim_link_input(l, &left);
            if (left == 0) {
                return 0;
            }
            link_err(l, "connection closed after HELLO");
            rc = BRIM_ECLOSED; /* unasked bytes: not to be trusted */
            break;
        }
        rc = brim_link_take(l, &r);
        if (rc < 0) {
            break;
        }
        if (rc == 0 && l->state != BRIM_LINK_READY) {
            rc = brim_link_wait(l, deadline_ms);
            if (rc == BRIM_ECLOSED) {
                link_err(l, "connection closed by the node");
            }
            if (rc != 0) {
                break;
            }
        }
    }
    brim_link_close(l);
    return rc;
}

int
brim_link_open(struct brim_link *l, int64_t deadline_ms)
{
    int rc;

    rc = brim_link_connect(l, deadline_ms);
    return rc != 0 ? rc : brim_link_handshake(l, deadline_ms);
}

int
brim_link_call(struct brim_link *l, struct brim_req *req, int64_t deadline_ms,
               struct brim_link_reply *r)
{
    int rc;

    rc = brim_link_queue(l, req, NULL, 0, NULL);
    while (rc == 0) {
        rc = brim_link_take(l, r);
        if (rc != 0) {
            return rc == 1 ? 0 : rc;
        }
        rc = brim_link_wait(l, deadline_ms);
        if (rc == BRIM_ETIMEDOUT) {
            link_err(l, "no reply to %s within the timeout",
                     brim_op_name(req->op));
        } else if (rc == BRIM_ECLOSED) {
            link_err(l, "connection closed by the node");
        }
    }
    return rc;
}

int
brim_link_idle_ok(const struct brim_link *l)
{
    struct pollfd pfd;
    char          byte;
    ssize_t       r;

    if (l->fd < 0 || l->state != BRIM_LINK_READY) {
        return 0;
    }
    pfd.fd = l->fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    if (poll(&pfd, 1, 0) == 0) {
        return 1;
    }
    r = recv(l->fd, &byte, 1, MSG_PEEK);
    return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}
