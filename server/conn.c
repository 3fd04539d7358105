/*
 * server/conn.c - listener and connections over libuv (see conn.h).
 * Reads land in one loop-wide buffer when a connection has nothing
 * buffered, so an idle connection holds no input memory; only the tail of
 * an incomplete frame is copied into the connection's own buffer.
 * Backpressure is checked before every frame, not once per read: one 64 KiB
 * read can hold a thousand pipelined GETs. Frames left buffered when
 * reading pauses are handled on resume, before the next read.
 */
#include "server/conn.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/parse.h"
#include "proto/frame.h"
#include "proto/wire.h"
#include "server/log.h"

#define CONN_READ_CHUNK (64u << 10) /* bytes per read */
#define CONN_BACKLOG 511
#define CONN_OUT_KEEP (4u << 10) /* output buffer kept after a write */

#define conn_of(h) BRIM_CONTAINER_OF((h), struct brim_conn, tcp)

/* One write in flight: owns the bytes it sends. */
struct conn_write {
    uv_write_t        req; /* libuv request; req.data unused */
    struct brim_conn *c;   /* holds one reference */
    struct brim_buf   buf; /* the bytes, freed in the callback */
};

static void conn_close(struct brim_conn *c);
static void conn_read_start(struct brim_conn *c);
static void conn_eof_maybe_end(struct brim_conn *c);

int
brim_err_from_uv(int uv_err)
{
    switch (uv_err) {
    case 0:
        return 0;
    case UV_ENOMEM:
    case UV_ENOBUFS:
        return BRIM_ENOMEM;
    case UV_ETIMEDOUT:
        return BRIM_ETIMEDOUT;
    case UV_ECONNREFUSED:
        return BRIM_ECONNREFUSED;
    case UV_EOF:
    case UV_ECONNRESET:
    case UV_EPIPE:
    case UV_ECANCELED:
        return BRIM_ECLOSED;
    case UV_EINVAL:
        return BRIM_EINVAL;
    default:
        return BRIM_ESYS;
    }
}

/* The legal moves: READING <-> PAUSED, either -> DRAINING or CLOSING,
 * DRAINING -> LINGER or CLOSING, LINGER -> CLOSING. Nothing leaves
 * CLOSING. */
static void
conn_set_state(struct brim_conn *c, enum brim_conn_state to)
{
    enum brim_conn_state from = c->state;

    BRIM_ASSERT(from != BRIM_CONN_CLOSING);
    BRIM_ASSERT(!(from == BRIM_CONN_DRAINING && to != BRIM_CONN_CLOSING
                  && to != BRIM_CONN_LINGER));
    BRIM_ASSERT(!(from == BRIM_CONN_LINGER && to != BRIM_CONN_CLOSING));
    BRIM_ASSERT(!(to == BRIM_CONN_LINGER && from != BRIM_CONN_DRAINING));
    if (to == BRIM_CONN_PAUSED || to == BRIM_CONN_DRAINING
        || to == BRIM_CONN_CLOSING)
    {
        uv_read_stop((uv_stream_t *) &c->tcp);
    }
    if (to == BRIM_CONN_PAUSED) {
        c->srv->stats.pauses++;
    }
    c->state = to;
}

static void
conn_maybe_free(struct brim_conn *c)
{
    struct brim_server *srv = c->srv;

    if (c->refs > 0) {
        return;
    }
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        srv->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    if (c->paused_total) {
        srv->total_paused--;
    }
    if (srv->cfg.gone != NULL) {
        srv->cfg.gone(srv->cfg.gone_arg, c);
    }
    if (srv->on_close != NULL) {
        srv->on_close(c);
    }
    brim_buf_destroy(&c->in);
    brim_buf_destroy(&c->out);
    srv->stats.conns_current--;
    brim_free(c);
}

static void
conn_close_cb(uv_handle_t *h)
{
    struct brim_conn *c = conn_of(h);

    c->refs--; /* the handle's own reference */
    conn_maybe_free(c);
}

/* The single way out: idempotent; memory goes when the last write and the
 * handle are done. */
static void
conn_close(struct brim_conn *c)
{
    if (c->state == BRIM_CONN_CLOSING) {
        return;
    }
    conn_set_state(c, BRIM_CONN_CLOSING);
    uv_close((uv_handle_t *) &c->tcp, conn_close_cb);
}

struct brim_buf *
brim_conn_out(struct brim_conn *c)
{
    return &c->out;
}

static void conn_write_cb(uv_write_t *req, int status);

void
brim_conn_flush(struct brim_conn *c)
{
    struct conn_write *w;
    uv_buf_t           b;
    int                rc;

    if (c->out.len == 0 || c->state == BRIM_CONN_CLOSING
        || c->state == BRIM_CONN_LINGER)
    {
        return;
    }
    if (c->out_inflight == 0 && c->state == BRIM_CONN_READING) {
        /* Nothing queued in libuv: write now. A reply the kernel takes
         * whole needs no request, no callback, and no epoll_ctl() (libuv
         * re-arms a stream's watcher after each queued write). Not when
         * paused or draining: their write callback resumes or closes. */
        b = uv_buf_init(c->out.data, (unsigned int) c->out.len);
        rc = uv_try_write((uv_stream_t *) &c->tcp, &b, 1);
        if (rc < 0 && rc != UV_EAGAIN) {
            conn_close(c); /* the peer is gone; the read side says why */
            return;
        }
        if (rc > 0) {
            c->srv->stats.bytes_out += (uint64_t) rc;
            if ((size_t) rc == c->out.len) {
                if (c->out.cap > CONN_OUT_KEEP) {
                    brim_buf_destroy(&c->out); /* a big reply's memory */
                } else {
                    brim_buf_truncate(&c->out, 0); /* reused */
                }
                return;
            }
            brim_buf_consume(&c->out, (size_t) rc);
        }
    }
    w = brim_malloc(sizeof(*w));
    if (w == NULL) {
        brim_log_warn("%s: out of memory queueing %zu reply bytes; closing",
                      c->peer, c->out.len);
        conn_close(c);
        return;
    }
    /* Hand the whole buffer to the write; the connection starts a new
     * one. All replies from one read thus leave in one write. */
    w->c = c;
    w->buf = c->out;
    brim_buf_init(&c->out);
    b = uv_buf_init(w->buf.data, (unsigned int) w->buf.len);
    c->out_inflight += w->buf.len;
    c->srv->stats.out_bytes += w->buf.len;
    c->refs++;
    rc = uv_write(&w->req, (uv_stream_t *) &c->tcp, &b, 1, conn_write_cb);
    if (rc != 0) {
        c->out_inflight -= w->buf.len;
        c->srv->stats.out_bytes -= w->buf.len;
        c->refs--;
        brim_buf_destroy(&w->buf);
        brim_free(w);
        conn_close(c);
    }
}

static void conn_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void conn_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf);

/* Our side is shut: close now unless the peer sent bytes we have not
 * read (closing over them would reset the connection); those are read
 * and dropped until the peer closes. */
static void
conn_shutdown_cb(uv_shutdown_t *req, int status)
{
    struct brim_conn *c = BRIM_CONTAINER_OF(req, struct brim_conn, shut);
    uv_os_fd_t        fd;
    char              b;
    ssize_t           n;

    c->refs--; /* the request's */
    if (c->state != BRIM_CONN_LINGER) {
        conn_maybe_free(c); /* closed meanwhile */
        return;
    }
    if (status < 0 || uv_fileno((uv_handle_t *) &c->tcp, &fd) != 0) {
        conn_close(c);
        return;
    }
    n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0) {
        /* 0: the peer closed too; EAGAIN: nothing unread, so closing
         * sends no reset; another error: the connection is gone. */
        conn_close(c);
        return;
    }
    if (uv_read_start((uv_stream_t *) &c->tcp, conn_alloc_cb, conn_read_cb)
        != 0) {
        conn_close(c);
    }
}

/* C's last replies are on their way (DRAINING, nothing in flight): close,
 * or with C->linger shut our side first (brim_server_drain()). */
static void
conn_drained(struct brim_conn *c)
{
    if (!c->linger) {
        conn_close(c);
        return;
    }
    conn_set_state(c, BRIM_CONN_LINGER);
    c->refs++;
    if (uv_shutdown(&c->shut, (uv_stream_t *) &c->tcp, conn_shutdown_cb) != 0) {
        c->refs--;
        conn_close(c);
    }
}

void
brim_conn_drain(struct brim_conn *c)
{
    if (c->state == BRIM_CONN_CLOSING || c->state == BRIM_CONN_DRAINING
        || c->state == BRIM_CONN_LINGER)
    {
        return;
    }
    conn_set_state(c, BRIM_CONN_DRAINING);
    brim_conn_flush(c);
    if (c->state == BRIM_CONN_DRAINING && c->out_inflight == 0) {
        conn_drained(c);
    }
}

void
brim_conn_fail(struct brim_conn *c, int status, const char *message)
{
    if (c->state == BRIM_CONN_CLOSING || c->state == BRIM_CONN_DRAINING
        || c->state == BRIM_CONN_LINGER)
    {
        return;
    }
    if (status != 0
        && brim_wire_encode_status(&c->out, 0, status, message,
                                   message != NULL ? strlen(message) : 0)
            == 0)
    {
        brim_conn_drain(c);
        return;
    }
    conn_close(c);
}

void
brim_conn_defer(struct brim_conn *c)
{
    BRIM_ASSERT(!c->deferred);
    c->deferred = 1;
    c->refs++;
    if (c->state == BRIM_CONN_READING) {
        conn_set_state(c, BRIM_CONN_PAUSED); /* stops reading */
    }
}

void
brim_conn_ref(struct brim_conn *c)
{
    c->refs++;
    c->holds++;
}

void
brim_conn_unref(struct brim_conn *c)
{
    BRIM_ASSERT(c->refs > 0 && c->holds > 0);
    c->refs--;
    c->holds--;
    if (c->refs > 0) {
        conn_eof_maybe_end(c); /* its last work in flight may be done */
        return;
    }
    conn_maybe_free(c);
}

int
brim_conn_closing(const struct brim_conn *c)
{
    return c->state == BRIM_CONN_CLOSING || c->state == BRIM_CONN_DRAINING
        || c->state == BRIM_CONN_LINGER;
}

static void conn_process_buffered(struct brim_conn *c);

void
brim_conn_resume(struct brim_conn *c)
{
    BRIM_ASSERT(c->deferred);
    c->deferred = 0;
    c->refs--;
    if (brim_conn_closing(c)) {
        conn_maybe_free(c);
        return;
    }
    if (c->state == BRIM_CONN_PAUSED && !c->paused_total
        && c->out.len + c->out_inflight < c->srv->cfg.out_high_water)
    {
        conn_set_state(c, BRIM_CONN_READING);
        conn_process_buffered(c); /* also flushes */
        if (c->state == BRIM_CONN_READING && !c->deferred) {
            conn_read_start(c);
        }
        return;
    }
    brim_conn_flush(c); /* paused for output: the write callback goes on */
}

/*
 * C's peer shut its sending side (a half-close): once every command read
 * is answered (no deferral, no work in flight, no whole command left in
 * its input) C closes after the replies are sent. An incomplete command
 * left in the input is dropped, as memcached does. Not while C is
 * dispatching: its caller checks again when that ends.
 */
static void
conn_eof_maybe_end(struct brim_conn *c)
{
    if (!c->eof || c->processing || c->deferred || c->holds > 0
        || c->state != BRIM_CONN_READING)
    {
        return; /* PAUSED: the write callback processes, then checks */
    }
    if (c->in.len > 0) {
        brim_log_debug("%s: %zu bytes of an incomplete command at EOF dropped",
                       c->peer, c->in.len);
        brim_buf_consume(&c->in, c->in.len);
    }
    brim_conn_drain(c);
}

/* True when SRV's unsent replies, all connections together, pass its
 * out_total_limit. */
static int
conn_total_full(const struct brim_server *srv)
{
    return srv->cfg.out_total_limit != 0
        && srv->stats.out_bytes > srv->cfg.out_total_limit;
}

/*
 * Dispatch the whole frames in DATA[0 .. LEN), stopping early when the
 * output passes its high-water mark or the connection stops reading.
 * Returns the bytes consumed (whole frames only).
 */
static size_t
conn_process(struct brim_conn *c, const char *data, size_t len)
{
    struct brim_server *srv = c->srv;
    size_t              off = 0;
    uint32_t            body;
    int                 rc;

    srv->frame_start_ns = uv_hrtime();
    c->processing++;
    while (c->state == BRIM_CONN_READING && !c->deferred) {
        if (c->out.len + c->out_inflight > srv->cfg.out_high_water) {
            conn_set_state(c, BRIM_CONN_PAUSED);
            break;
        }
        if (conn_total_full(srv) && c->out.len + c->out_inflight > 0) {
            /* Every connection's unsent replies together are over the
             * bound: one that has some of its own waits (one with none
             * is not the cause, and reading it costs nothing yet). */
            conn_set_state(c, BRIM_CONN_PAUSED);
            c->paused_total = 1;
            srv->total_paused++;
            srv->stats.out_total_pauses++;
            break;
        }
        if (srv->cfg.stream != NULL) {
            size_t used = 0;

            rc = srv->cfg.stream(c, data + off, len - off, &used);
            BRIM_ASSERT(used <= len - off);
            off += used;
            if (rc == BRIM_EAGAIN) {
                break;
            }
            srv->stats.frames_in++;
            if (rc != 0) {
                srv->stats.bad_frames++;
                conn_close(c);
                break;
            }
            continue;
        }
        rc = brim_frame_peek(data + off, len - off, srv->cfg.max_frame_bytes,
                             &body);
        if (rc == BRIM_EAGAIN) {
            break;
        }
        if (rc != 0) {
            srv->stats.bad_frames++;
            brim_conn_fail(c, BRIM_ETOOBIG, "frame above max_frame_bytes");
            break;
        }
        rc = srv->dispatch(c, data + off + BRIM_FRAME_HDR, body);
        off += BRIM_FRAME_HDR + (size_t) body;
        srv->stats.frames_in++;
        if (rc != 0) {
            srv->stats.bad_frames++;
            brim_conn_fail(c, -rc <= BRIM_STATUS_WIRE_MAX ? rc : 0,
                           brim_strerror(rc));
            break;
        }
    }
    c->processing--;
    return off;
}

/* Dispatch what C->in holds, then send the replies. */
static void
conn_process_buffered(struct brim_conn *c)
{
    size_t used;

    used = conn_process(c, c->in.data, c->in.len);
    brim_buf_consume(&c->in, used);
    brim_conn_flush(c);
}

/* Read again on paused C: the frames held while paused first. */
static void
conn_resume_reading(struct brim_conn *c)
{
    conn_set_state(c, BRIM_CONN_READING);
    conn_process_buffered(c); /* frames held while paused */
    if (c->state == BRIM_CONN_READING) {
        conn_read_start(c);
    }
}

/*
 * The unsent replies of SRV fell: when they are below half of the total
 * bound, the connections paused for it read again (the total bound is one
 * pool: a connection is not held for another's slow reader longer than
 * the pool stays full).
 */
static void
conn_total_drained(struct brim_server *srv)
{
    struct brim_conn *c, *next;

    if (srv->total_paused == 0
        || srv->stats.out_bytes > srv->cfg.out_total_limit / 2)
    {
        return;
    }
    for (c = srv->conns; c != NULL && srv->total_paused > 0; c = next) {
        next = c->next;
        if (!c->paused_total) {
            continue;
        }
        c->paused_total = 0;
        srv->total_paused--;
        if (c->state == BRIM_CONN_PAUSED && !c->deferred
            && c->out.len + c->out_inflight < srv->cfg.out_high_water)
        {
            conn_resume_reading(c);
        }
    }
}

static void
conn_write_cb(uv_write_t *req, int status)
{
    struct conn_write *w = BRIM_CONTAINER_OF(req, struct conn_write, req);
    struct brim_conn  *c = w->c;

    c->out_inflight -= w->buf.len;
    c->srv->stats.out_bytes -= w->buf.len;
    c->srv->stats.bytes_out += status == 0 ? w->buf.len : 0;
    brim_buf_destroy(&w->buf);
    brim_free(w);
    c->refs--;

    if (status < 0) {
        /* UV_ECANCELED after a close is normal; anything else ends it. */
        conn_close(c);
    } else if (c->state == BRIM_CONN_DRAINING) {
        if (c->out_inflight == 0 && c->out.len == 0) {
            conn_drained(c);
        }
    } else if (c->state == BRIM_CONN_PAUSED && !c->deferred) {
        if (c->paused_total && c->out.len + c->out_inflight == 0) {
            /* Its own replies are all sent: it is not what holds the
             * pool, and it may have one more batch (a reader that keeps
             * up is not stopped by others that do not). */
            c->paused_total = 0;
            c->srv->total_paused--;
        }
        if (!c->paused_total
            && c->out.len + c->out_inflight < c->srv->cfg.out_low_water)
        {
            conn_resume_reading(c);
        }
    }
    conn_total_drained(c->srv);
    conn_maybe_free(c);
}

static void
conn_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct brim_conn   *c = conn_of(h);
    struct brim_server *srv = c->srv;

    (void) hint;
    /* Nothing buffered: read into the shared buffer, copy out leftovers.
     * Otherwise append to the connection's buffer, which the frame limit
     * bounds (a larger header is refused before its body arrives). */
    if (c->in.len == 0 && srv->read_buf_busy == 0) {
        srv->read_buf_busy = 1;
        *buf = uv_buf_init(srv->read_buf, (unsigned int) srv->read_buf_len);
        return;
    }
    if (brim_buf_reserve(&c->in, CONN_READ_CHUNK) != 0) {
        *buf = uv_buf_init(NULL, 0); /* read_cb sees UV_ENOBUFS */
        return;
    }
    *buf = uv_buf_init(brim_buf_tail(&c->in), CONN_READ_CHUNK);
}

static void
conn_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct brim_conn   *c = conn_of(s);
    struct brim_server *srv = c->srv;
    size_t              used;
    int                 shared = buf->base == srv->read_buf;

    if (shared) {
        srv->read_buf_busy = 0; /* returned, whatever happens below */
    }
    if (c->state == BRIM_CONN_LINGER) {
        if (nread < 0) {
            conn_close(c); /* the peer closed: done */
        }
        return; /* what it sent after our end is dropped */
    }
    if (nread <= 0) { /* 0 is EAGAIN, not an error */
        if (nread == UV_EOF && c->state == BRIM_CONN_READING) {
            /* A half-close: the peer may still read. What it sent is
             * answered first (replies deferred or forwarded included). */
            c->eof = 1;
            uv_read_stop(s);
            conn_eof_maybe_end(c);
            return;
        }
        if (nread < 0) {
            /* A peer that closes, or resets (a client that exits), is
             * how connections end: not worth a line but at debug. */
            if (nread == UV_ECONNRESET) {
                brim_log_debug("%s: read: %s", c->peer,
                               uv_strerror((int) nread));
            } else if (nread != UV_EOF) {
                brim_log_info("%s: read: %s", c->peer,
                              uv_strerror((int) nread));
            }
            conn_close(c);
        }
        return;
    }
    srv->stats.bytes_in += (uint64_t) nread;
    c->last_active_ms = uv_now(srv->loop);
    if (!shared) {
        brim_buf_commit(&c->in, (size_t) nread);
        conn_process_buffered(c);
        return;
    }
    used = conn_process(c, buf->base, (size_t) nread);
    if (used < (size_t) nread && c->state != BRIM_CONN_CLOSING
        && c->state != BRIM_CONN_DRAINING
        && brim_buf_append(&c->in, buf->base + used, (size_t) nread - used)
            != 0)
    {
        brim_log_warn("%s: out of memory buffering input; closing", c->peer);
        conn_close(c);
        return;
    }
    brim_conn_flush(c);
}

static void
conn_read_start(struct brim_conn *c)
{
    int rc;

    if (c->eof) {
        conn_eof_maybe_end(c); /* nothing more to read */
        return;
    }
    rc = uv_read_start((uv_stream_t *) &c->tcp, conn_alloc_cb, conn_read_cb);
    if (rc != 0) {
        brim_log_warn("%s: read start: %s", c->peer, uv_strerror(rc));
        conn_close(c);
    }
}

static void
conn_name_peer(struct brim_conn *c)
{
    struct sockaddr_storage ss;
    char                    host[48];
    int                     len = sizeof(ss);

    snprintf(c->peer, sizeof(c->peer), "?");
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *) &ss, &len) != 0) {
        return;
    }
    if (ss.ss_family == AF_INET) {
        uv_ip4_name((struct sockaddr_in *) &ss, host, sizeof(host));
        snprintf(c->peer, sizeof(c->peer), "%s:%d", host,
                 ntohs(((struct sockaddr_in *) &ss)->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        uv_ip6_name((struct sockaddr_in6 *) &ss, host, sizeof(host));
        snprintf(c->peer, sizeof(c->peer), "[%s]:%d", host,
                 ntohs(((struct sockaddr_in6 *) &ss)->sin6_port));
    }
}

static void
server_connection_cb(uv_stream_t *ls, int status)
{
    struct brim_server *srv = BRIM_CONTAINER_OF(ls, struct brim_server, listen);
    struct brim_conn   *c;

    if (status < 0) {
        brim_log_warn("accept: %s", uv_strerror(status));
        return;
    }
    c = brim_calloc(1, sizeof(*c));
    if (c == NULL) {
        brim_log_warn("accept: out of memory");
        return;
    }
    c->srv = srv;
    c->refs = 1; /* the handle */
    c->state = BRIM_CONN_READING;
    c->last_active_ms = uv_now(srv->loop);
    uv_tcp_init(srv->loop, &c->tcp);
    c->next = srv->conns;
    if (srv->conns != NULL) {
        srv->conns->prev = c;
    }
    srv->conns = c;
    srv->stats.conns_current++;
    if (uv_accept(ls, (uv_stream_t *) &c->tcp) != 0) {
        conn_close(c);
        return;
    }
    srv->stats.conns_total++;
    conn_name_peer(c);
    uv_tcp_nodelay(&c->tcp, 1);
    if (srv->cfg.max_conns > 0 && srv->stats.conns_current > srv->cfg.max_conns)
    {
        srv->stats.conns_refused++;
        brim_log_warn("%s: refused: %u connections already open (max_conns)",
                      c->peer, srv->cfg.max_conns);
        if (srv->cfg.refuse_line != NULL) {
            /* The stream's own protocol (memcached's line). */
            (void) brim_buf_append(&c->out, srv->cfg.refuse_line,
                                   strlen(srv->cfg.refuse_line));
            brim_conn_drain(c);
        } else {
            brim_conn_fail(c, BRIM_EBUSY, "too many connections (max_conns)");
        }
        return;
    }
    conn_read_start(c);
}

static void
server_idle_cb(uv_timer_t *t)
{
    struct brim_server *srv =
        BRIM_CONTAINER_OF(t, struct brim_server, idle_timer);
    struct brim_conn *c, *next;
    uint64_t          now = uv_now(srv->loop);

    for (c = srv->conns; c != NULL; c = next) {
        next = c->next;
        if ((c->state == BRIM_CONN_READING || c->state == BRIM_CONN_PAUSED)
            && now - c->last_active_ms > srv->cfg.idle_timeout_ms)
        {
            srv->stats.conns_idle_closed++;
            brim_log_info("%s: idle for %u ms; closing", c->peer,
                          srv->cfg.idle_timeout_ms);
            conn_close(c);
        }
    }
}

int
brim_addr_parse(const char *addr, struct sockaddr_storage *sa)
{
    char     host[BRIM_HOST_MAX + 1];
    uint16_t port;

    /* common/parse.c splits it (port 0: a listener's any free port); the
     * host must be an IP address or "localhost", never a name to look up
     * (that would block the loop). */
    if (brim_addr_split(addr, host, sizeof(host), 0, &port, NULL) != 0) {
        return BRIM_EINVAL;
    }
    if (strcmp(host, "localhost") == 0) {
        snprintf(host, sizeof(host), "127.0.0.1");
    }
    if (uv_ip4_addr(host, (int) port, (struct sockaddr_in *) sa) == 0) {
        return 0;
    }
    if (strchr(host, ':') != NULL
        && uv_ip6_addr(host, (int) port, (struct sockaddr_in6 *) sa) == 0)
    {
        return 0;
    }
    return BRIM_EINVAL;
}

int
brim_addr_check(const char *addr, uint32_t port_min,
                char errbuf[BRIM_ERRBUF_LEN])
{
    struct sockaddr_storage sa;
    char                    host[BRIM_HOST_MAX + 1];
    uint16_t                port;

    if (brim_addr_parse(addr, &sa) != 0
        || brim_addr_split(addr, host, sizeof(host), port_min, &port, NULL)
            != 0)
    {
        brim_errfmt(errbuf,
                    "bad address \"%.100s\": want IP:PORT (an IPv4 "
                    "address, [IPv6] in brackets, or localhost; host names "
                    "are not resolved), port %u to 65535, e.g. "
                    "127.0.0.1:11311",
                    addr, port_min);
        return BRIM_EINVAL;
    }
    return 0;
}

int
brim_server_listen(struct brim_server *srv, uv_loop_t *loop, const char *addr,
                   const struct brim_server_config *cfg,
                   brim_dispatch_fn dispatch, brim_conn_close_fn on_close,
                   void *data, char errbuf[BRIM_ERRBUF_LEN])
{
    struct sockaddr_storage sa;
    int                     rc;

    memset(srv, 0, sizeof(*srv));
    if (brim_addr_check(addr, 0, errbuf) != 0) {
        return BRIM_EINVAL;
    }
    (void) brim_addr_parse(addr, &sa);
    if (cfg->out_low_water > cfg->out_high_water) {
        brim_errfmt(errbuf,
                    "listen: output low water %zu above high water "
                    "%zu",
                    cfg->out_low_water, cfg->out_high_water);
        return BRIM_EINVAL;
    }
    srv->loop = loop;
    srv->cfg = *cfg;
    srv->dispatch = dispatch;
    srv->on_close = on_close;
    srv->data = data;
    srv->read_buf_len = CONN_READ_CHUNK;
    srv->read_buf = brim_malloc(srv->read_buf_len);
    if (srv->read_buf == NULL) {
        brim_errfmt(errbuf, "listen: out of memory");
        return BRIM_ENOMEM;
    }
    uv_tcp_init(loop, &srv->listen);
    rc = uv_tcp_bind(&srv->listen, (struct sockaddr *) &sa, 0);
    if (rc == 0) {
        rc = uv_listen((uv_stream_t *) &srv->listen, CONN_BACKLOG,
                       server_connection_cb);
    }
    if (rc != 0) {
        brim_errfmt(errbuf, "listen: %s: %s", addr, uv_strerror(rc));
        uv_close((uv_handle_t *) &srv->listen, NULL);
        brim_free(srv->read_buf);
        srv->read_buf = NULL;
        return BRIM_ESYS;
    }
    uv_timer_init(loop, &srv->idle_timer);
    if (cfg->idle_timeout_ms > 0) {
        uv_timer_start(&srv->idle_timer, server_idle_cb,
                       BRIM_MIN(1000, cfg->idle_timeout_ms),
                       BRIM_MIN(1000, cfg->idle_timeout_ms));
    }
    return 0;
}

int
brim_server_port(const struct brim_server *srv)
{
    struct sockaddr_storage ss;
    int                     len = sizeof(ss);

    if (uv_tcp_getsockname(&srv->listen, (struct sockaddr *) &ss, &len) != 0) {
        return 0;
    }
    if (ss.ss_family == AF_INET) {
        return ntohs(((struct sockaddr_in *) &ss)->sin_port);
    }
    return ntohs(((struct sockaddr_in6 *) &ss)->sin6_port);
}

void
brim_server_stop_accepting(struct brim_server *srv)
{
    if (srv->listen_closed) {
        return;
    }
    srv->listen_closed = 1;
    uv_close((uv_handle_t *) &srv->listen, NULL);
}

void
brim_server_drain(struct brim_server *srv)
{
    struct brim_conn *c, *next;

    brim_server_stop_accepting(srv);
    for (c = srv->conns; c != NULL; c = next) {
        next = c->next;
        if (c->state != BRIM_CONN_READING && c->state != BRIM_CONN_PAUSED) {
            continue; /* already ending */
        }
        c->linger = 1;
        if (!c->eof) {
            c->eof = 1; /* nothing more is read */
            if (c->state == BRIM_CONN_READING) {
                uv_read_stop((uv_stream_t *) &c->tcp);
            }
        }
        /* PAUSED: its resume answers the commands held, then ends it. */
        conn_eof_maybe_end(c);
    }
}

void
brim_server_close(struct brim_server *srv)
{
    struct brim_conn *c, *next;

    if (srv->closing) {
        return;
    }
    srv->closing = 1;
    brim_server_stop_accepting(srv);
    uv_close((uv_handle_t *) &srv->idle_timer, NULL);
    for (c = srv->conns; c != NULL; c = next) {
        next = c->next;
        conn_close(c);
    }
    /* read_buf is freed by the owner after the loop ends: a read callback
     * may still name it until the handles are closed. */
}

void
brim_server_destroy(struct brim_server *srv)
{
    brim_free(srv->read_buf);
    srv->read_buf = NULL;
}
