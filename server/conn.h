/*
 * server/conn.h - the daemons' connection layer over libuv: a listener that
 * accepts up to max_conns connections, and per connection an explicit
 * state machine, a bounded input buffer, framing (proto/frame.h), an output
 * queue with backpressure, and an idle timeout. Whole frame bodies are
 * handed to a dispatch callback, which appends its replies to the
 * connection's output; all the replies produced from one read leave in one
 * write. Loop thread only.
 */
#ifndef BRIM_SERVER_CONN_H
#define BRIM_SERVER_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <brim/status.h>

#include "proto/auth.h"
#include "proto/buf.h"

struct brim_conn;
struct brim_guard; /* server/guard.h */
struct brim_server;

/*
 * Handle one whole frame body BODY[0 .. LEN) (borrowed; valid for the call)
 * from C, appending any reply frames to brim_conn_out(C). Returns 0 to go
 * on, or a negative code when the connection itself must close (an error
 * frame is sent first for wire codes).
 */
typedef int (*brim_dispatch_fn)(struct brim_conn *c, const char *body,
                                size_t len);

/*
 * A byte-stream connection (a listener whose config sets STREAM, e.g. the
 * node's memcached port): handle the next command at DATA[0 .. LEN)
 * (borrowed; valid for the call) from C, appending any reply to
 * brim_conn_out(C), and store in *USED the bytes it covered (<= LEN; the
 * connection drops them). Returns 0 (handled; called again for what is
 * left), BRIM_EAGAIN (the command is incomplete: more bytes are read,
 * bounded by the handler, which must answer once it holds its own
 * maximum; *USED may still be above 0) or a negative code (close C at
 * once). Called once per command so that backpressure is checked between
 * commands, as between frames.
 */
typedef int (*brim_stream_fn)(struct brim_conn *c, const char *data, size_t len,
                              size_t *used);

/* Called once when C is about to be freed, to release its user data. */
typedef void (*brim_conn_close_fn)(struct brim_conn *c);

/* Connection states; changed only in conn_set_state(). */
enum brim_conn_state {
    BRIM_CONN_READING = 0, /* reading and dispatching */
    BRIM_CONN_PAUSED,      /* output above high water: not reading */
    BRIM_CONN_DRAINING,    /* sending a last error frame, then close */
    BRIM_CONN_LINGER,      /* brim_server_drain(): replies sent and our
                              side shut; what the peer still sends is
                              read and dropped until it closes, so that
                              closing with unread bytes (a reset) cannot
                              discard replies it has not read yet */
    BRIM_CONN_CLOSING      /* uv_close() called; waiting for refs */
};

/* A connection is about to be freed: ARG is the listener's GONE_ARG. */
typedef void (*brim_conn_gone_fn)(void *arg, struct brim_conn *c);

/* Settings of one listener; every connection it accepts follows them. */
struct brim_server_config {
    size_t            max_frame_bytes; /* body bytes; larger headers close */
    size_t            out_high_water;  /* stop reading above this many bytes */
    size_t            out_low_water;   /* resume below this */
    uint32_t          idle_timeout_ms; /* 0: never; close silent connections */
    uint32_t          max_conns;       /* refuse (BUSY, close) beyond this */
    size_t            out_total_limit; /* reply bytes unsent on all
                                       connections: above it a connection
                                       with replies of its own unsent
                                       stops reading until they are sent
                                       or the total falls below half (so
                                       it is passed by at most one batch
                                       per connection); 0: no bound */
    brim_conn_gone_fn gone;            /* told of each connection freed
                                       (AUTH's accepting side, guard.h:
                                       brim_guard_conn_gone); NULL: none */
    void             *gone_arg;        /* its first argument; borrowed:
                                       outlives the listener */
    brim_stream_fn    stream;          /* NULL: brim frames to DISPATCH;
                                       else bytes to STREAM (frames are
                                       not parsed, max_frame_bytes
                                       unused, DISPATCH may be NULL) */
    const char       *refuse_line;     /* with STREAM: the bytes written to
                                       a connection refused over
                                       max_conns (NUL-terminated,
                                       static), NULL: a brim BUSY frame */
};

/* Counters of one listener. */
struct brim_server_stats {
    uint64_t conns_current;     /* open connections */
    uint64_t conns_total;       /* accepted since start */
    uint64_t conns_refused;     /* refused over max_conns */
    uint64_t conns_idle_closed; /* closed by the idle timeout */
    uint64_t frames_in;         /* frames dispatched */
    uint64_t bad_frames;        /* frames that failed framing */
    uint64_t bytes_in;          /* bytes read */
    uint64_t bytes_out;         /* bytes written */
    uint64_t pauses;            /* times reading paused for output */
    uint64_t out_bytes;         /* reply bytes handed to the kernel
                                       and not yet written, all
                                       connections (out_total_limit) */
    uint64_t out_total_pauses;  /* connections paused because of it */
};

/* A listener and the connections it accepted. */
struct brim_server {
    uv_loop_t                *loop;           /* borrowed */
    uv_tcp_t                  listen;         /* the listening socket */
    uv_timer_t                idle_timer;     /* sweeps idle connections */
    struct brim_server_config cfg;            /* copied */
    brim_dispatch_fn          dispatch;       /* frame handler */
    brim_conn_close_fn        on_close;       /* user-data release, or NULL */
    void                     *data;           /* the daemon's state */
    struct brim_conn         *conns;          /* open connections (list) */
    char                     *read_buf;       /* shared read buffer */
    size_t                    read_buf_len;   /* its bytes */
    int                       read_buf_busy;  /* lent to a read in progress */
    struct brim_server_stats  stats;          /* counters */
    int                       closing;        /* brim_server_close() called */
    int                       listen_closed;  /* the listening socket is
                                               closed (stop accepting) */
    uint32_t                  total_paused;   /* connections paused for
                                               out_total_limit */
    uint64_t                  frame_start_ns; /* uv_hrtime() when the frame
                                               being dispatched was taken:
                                               set as a batch of frames
                                               starts; a dispatch that reads
                                               the clock as it ends moves it
                                               there, the next frame's start
                                               (one clock read per frame) */
};

/* Where a connection's AUTH stands (PROTOCOL.md 12; server/guard.c reads
 * and writes it, the connection layer only keeps it). Zero: no AUTH. */
struct brim_conn_auth {
    uint8_t state; /* enum brim_guard_state */
    uint8_t role;  /* the HELLO role it was proven for */
    uint8_t scope; /* enum brim_guard_scope: whose secret */
    uint8_t nonce_c[BRIM_AUTH_NONCE_BYTES]; /* the challenge's nonces, */
    uint8_t nonce_s[BRIM_AUTH_NONCE_BYTES]; /* kept until the proof */
};

/* One accepted connection. */
struct brim_conn {
    uv_tcp_t              tcp;            /* embedded handle; first member */
    struct brim_server   *srv;            /* owning listener */
    struct brim_conn     *next;           /* srv->conns list */
    struct brim_conn     *prev;           /* srv->conns list */
    enum brim_conn_state  state;          /* see enum brim_conn_state */
    struct brim_buf       in;             /* bytes of an incomplete frame */
    struct brim_buf       out;            /* replies not yet handed to libuv */
    size_t                out_inflight;   /* bytes handed to libuv, unsent */
    uint32_t              refs;           /* the handle, one per write, one
                                       while a reply is deferred */
    int                   deferred;       /* a reply is deferred: no frame is
                                       dispatched or read until resumed */
    int                   paused_total;   /* paused for the server's
                                       out_total_limit, not its own */
    int                   eof;            /* the peer shut its sending side
                                       (a half-close, e.g. nc -q1, or
                                       a client's shutdown(SHUT_WR)):
                                       nothing more is read; the
                                       commands already read are
                                       answered, then C closes */
    uint32_t              holds;          /* brim_conn_ref()s not yet
                                       dropped (work in flight) */
    int                   linger;         /* brim_server_drain(): end in
                                       BRIM_CONN_LINGER, not at once */
    uv_shutdown_t         shut;           /* its shutdown request */
    int                   processing;     /* inside conn_process() */
    uint64_t              last_active_ms; /* loop time of the last read */
    void                 *data;     /* the daemon's per-connection state */
    struct brim_conn_auth auth;     /* its AUTH (server/guard.h) */
    char                  peer[64]; /* "host:port" of the peer, for logs */
};

/*
 * Listen on ADDR ("host:port"; IPv4 or [IPv6]) with CFG (copied), calling
 * DISPATCH for every frame. SRV is caller's memory and must stay put until
 * brim_server_close() completes. Returns 0, or BRIM_EINVAL (bad address or
 * settings) or BRIM_ESYS (bind or listen failed) with ERRBUF naming the
 * address and the reason.
 */
int brim_server_listen(struct brim_server *srv, uv_loop_t *loop,
                       const char *addr, const struct brim_server_config *cfg,
                       brim_dispatch_fn dispatch, brim_conn_close_fn on_close,
                       void *data, char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Stop accepting connections on SRV (the listening socket closes; the
 * connections it accepted are served on until brim_server_close()).
 * Idempotent.
 */
void brim_server_stop_accepting(struct brim_server *srv);

/*
 * End SRV's connections gracefully (a node that leaves): stop accepting,
 * stop reading each connection, answer the commands it has already read
 * (deferred and forwarded replies included), send the replies, shut our
 * side (FIN), then read and drop what the peer still sends until it
 * closes. SRV's stats.conns_current falls to 0 as they end; the caller
 * bounds the wait and then calls brim_server_close(), which closes the
 * rest at once. Idempotent.
 */
void brim_server_drain(struct brim_server *srv);

/* The port SRV listens on (useful after binding port 0), or 0. */
int brim_server_port(const struct brim_server *srv);

/*
 * Stop accepting and close every connection. Handles close asynchronously:
 * run the loop until it has no more handles before freeing SRV.
 */
void brim_server_close(struct brim_server *srv);

/* Free what SRV still holds once the loop has closed all its handles
 * (after brim_server_close() and a final uv_run()). */
void brim_server_destroy(struct brim_server *srv);

/* The output buffer of C, where dispatch appends reply frames. */
struct brim_buf *brim_conn_out(struct brim_conn *c);

/*
 * Send the reply frames buffered in C's output as one write. The
 * connection layer calls it after each read; callers use it only for
 * replies produced outside a read (timers, async completions).
 */
void brim_conn_flush(struct brim_conn *c);

/*
 * From dispatch: the reply to the frame being dispatched comes later (an
 * answer from another node). Until brim_conn_resume(C) the connection
 * dispatches no further frame and reads nothing, so replies stay in
 * request order. Takes a reference: C's memory stays valid until the
 * resume even if the connection closes meanwhile. One at a time.
 */
void brim_conn_defer(struct brim_conn *c);

/*
 * End C's deferral: call it once, after appending the deferred reply to
 * brim_conn_out(C) (skip that when brim_conn_closing(C)). Drops the
 * reference (C may be freed here when it has closed), then dispatches the
 * frames held meanwhile, resumes reading and sends the replies.
 */
void brim_conn_resume(struct brim_conn *c);

/*
 * Keep C's memory (and its user data) while work for it is in flight
 * outside a deferral (the memcached port's pipelined forwards): it is not
 * freed, even once closed, until the matching brim_conn_unref(). Unlike
 * brim_conn_defer(), reading and dispatching go on.
 */
void brim_conn_ref(struct brim_conn *c);

/* Drop a brim_conn_ref(): C may be freed here when it has closed. */
void brim_conn_unref(struct brim_conn *c);

/* True once C is closing or draining: a deferred reply is not wanted. */
int brim_conn_closing(const struct brim_conn *c);

/*
 * Close C after sending an error frame [STATUS, 0, MESSAGE] (STATUS a wire
 * code), or at once when STATUS is 0. Idempotent.
 */
void brim_conn_fail(struct brim_conn *c, int status, const char *message);

/*
 * Close C once the replies already in its output are sent (from dispatch:
 * a reply that carries its request's id, then the end). No further frame
 * is dispatched. Idempotent.
 */
void brim_conn_drain(struct brim_conn *c);

/*
 * Parse ADDR, "host:port" or "[v6]:port" (an IP address or localhost; no
 * name resolution), into *SA. Returns 0 or BRIM_EINVAL.
 */
int brim_addr_parse(const char *addr, struct sockaddr_storage *sa);

/*
 * Check that ADDR is an address brim_addr_parse() takes, with a port of at
 * least PORT_MIN (0 for a listener: any free port). Returns 0, or
 * BRIM_EINVAL with ERRBUF (NULL allowed) saying what an address must be.
 */
int brim_addr_check(const char *addr, uint32_t port_min,
                    char errbuf[BRIM_ERRBUF_LEN]);

/* Translate a libuv error (negative) into a brim code. */
int brim_err_from_uv(int uv_err);

#endif /* BRIM_SERVER_CONN_H */
