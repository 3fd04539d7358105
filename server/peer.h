/*
 * server/peer.h - an outgoing connection of a daemon: connect to one
 * "host:port", send request frames and match each reply frame to its
 * request by order (PROTOCOL.md section 3: replies come in request order).
 * The node uses it for its coordinator connection and the coordinator for
 * its connections to nodes. Framing is proto/frame.h; the frames' content
 * is the caller's. Reconnecting is the caller's too (a timer and a new
 * brim_peer_connect() after the close callback). Loop thread only.
 */
#ifndef BRIM_SERVER_PEER_H
#define BRIM_SERVER_PEER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <brim/status.h>

#include "proto/buf.h"

struct brim_peer;

/* The connection is up (STATUS 0) or could not be made (a BRIM_E* code;
 * the close callback follows). */
typedef void (*brim_peer_connect_cb)(struct brim_peer *p, int status);

/*
 * The reply to one request: STATUS 0 with the frame body BODY[0 .. LEN)
 * (borrowed for the call), or BRIM_ECLOSED (BODY NULL) when the connection
 * went away before the reply came. ARG is the request's.
 */
typedef void (*brim_peer_reply_cb)(struct brim_peer *p, int status,
                                   const char *body, size_t len, void *arg);

/* The connection is closed and P may connect again. STATUS says why:
 * BRIM_ECLOSED (peer closed or brim_peer_close()), or another code. */
typedef void (*brim_peer_close_cb)(struct brim_peer *p, int status);

/* States of a peer connection. */
enum brim_peer_state {
    BRIM_PEER_IDLE = 0,             /* not connected; may connect */
    BRIM_PEER_CONNECTING,           /* uv_tcp_connect() in progress */
    BRIM_PEER_OPEN,                 /* connected: requests may be sent */
    BRIM_PEER_CLOSING               /* uv_close() called */
};

/* One request waiting for its reply. */
struct brim_peer_call {
    brim_peer_reply_cb cb;          /* called once with the reply */
    void              *arg;         /* passed to CB */
};

/* An outgoing connection; caller's memory, embedded in its owner. */
struct brim_peer {
    uv_tcp_t               tcp;        /* the socket; valid unless IDLE */
    uv_connect_t           connect;    /* the connect request */
    uv_loop_t             *loop;       /* borrowed */
    enum brim_peer_state   state;      /* see enum brim_peer_state */
    struct brim_buf        in;         /* bytes of an incomplete frame */
    size_t                 max_frame_bytes; /* larger reply frames close */
    struct brim_peer_call *calls;      /* FIFO of requests (ring buffer) */
    uint32_t               calls_cap;  /* its slots */
    uint32_t               calls_head; /* oldest request's slot */
    uint32_t               ncalls;     /* requests awaiting replies */
    uint32_t               writes;     /* writes in flight */
    int                    close_status; /* why it closes */
    brim_peer_connect_cb   on_connect; /* see the typedef */
    brim_peer_close_cb     on_close;   /* see the typedef */
    void                  *data;       /* the owner's */
    char                   addr[128];  /* "host:port" last connected to */
};

/* Initialise P (caller's memory) as IDLE. MAX_FRAME_BYTES bounds reply
 * bodies. The callbacks may be NULL. */
void brim_peer_init(struct brim_peer *p, uv_loop_t *loop,
                    size_t max_frame_bytes, brim_peer_connect_cb on_connect,
                    brim_peer_close_cb on_close, void *data);

/*
 * Start connecting an IDLE P to ADDR ("host:port", as brim_addr_parse()).
 * Returns 0 (ON_CONNECT follows), BRIM_EINVAL (bad address; ERRBUF says
 * so), BRIM_EAGAIN (P is not IDLE) or BRIM_ESYS.
 */
int brim_peer_connect(struct brim_peer *p, const char *addr,
                      char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Send the request frames in FRAME (one frame; takes ownership of its
 * bytes and leaves FRAME empty) on an OPEN P; CB gets the reply. Returns
 * 0, BRIM_ECLOSED (P not open; FRAME untouched) or BRIM_ENOMEM.
 */
int brim_peer_call(struct brim_peer *p, struct brim_buf *frame,
                   brim_peer_reply_cb cb, void *arg);

/* Close P (idempotent): waiting calls get BRIM_ECLOSED, then ON_CLOSE. */
void brim_peer_close(struct brim_peer *p);

/* Free what an IDLE P holds (after its close callback, or never opened). */
void brim_peer_destroy(struct brim_peer *p);

#endif /* BRIM_SERVER_PEER_H */
