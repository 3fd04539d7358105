/*
 * server/peer.h - an outgoing connection of a daemon: connect to one
 * "host:port", say HELLO and prove the cluster secret (AUTH, PROTOCOL.md
 * section 12) when the owner asks for it, send request frames and match
 * each reply frame to its request by order (PROTOCOL.md section 3: replies
 * come in request order). The node uses it for its coordinator connection
 * and its connections to other nodes, the coordinator for its connections
 * to nodes. Framing is proto/frame.h; the frames' content after the
 * handshake is the caller's. Reconnecting is the caller's too (a timer and
 * a new brim_peer_connect() after the close callback). Loop thread only.
 */
#ifndef BRIM_SERVER_PEER_H
#define BRIM_SERVER_PEER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <brim/status.h>

#include "common/ring.h" /* BRIM_NAME_MAX */
#include "proto/auth.h"
#include "proto/buf.h"
#include "proto/wire.h"

struct brim_peer;

/*
 * The connection is up (STATUS 0: connected and, with a handshake, HELLO
 * and AUTH done) or could not be made (a BRIM_E* code, the close callback
 * follows). A failed handshake gives a wire code when the server refused
 * a step (DENIED, BADREQ), BRIM_EDENIED when the server's proof is wrong,
 * BRIM_EBADREPLY for a malformed reply; P->hs_failed_op (HELLO or AUTH)
 * and P->hs_error say which step and why. A handshake cut short by the
 * connection closing only reaches the close callback.
 */
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
    BRIM_PEER_IDLE = 0,   /* not connected; may connect */
    BRIM_PEER_CONNECTING, /* uv_tcp_connect() in progress */
    BRIM_PEER_HANDSHAKE,  /* connected: HELLO and AUTH under way */
    BRIM_PEER_OPEN,       /* connected: requests may be sent */
    BRIM_PEER_CLOSING     /* uv_close() called */
};

/* One request waiting for its reply. */
struct brim_peer_call {
    brim_peer_reply_cb cb;  /* called once with the reply */
    void              *arg; /* passed to CB */
};

/*
 * What a peer says in the HELLO it sends on connecting, and the secret it
 * proves after it (PROTOCOL.md 12.2). Set with brim_peer_set_hello().
 */
struct brim_peer_hello {
    uint32_t                       role;        /* enum brim_role: ours */
    uint64_t                       cluster_id;  /* 0: not known yet */
    uint64_t                       incarnation; /* ours; 0 for none */
    uint64_t                       epoch;       /* the request's epoch */
    const char                    *name;        /* ours, at most
                                                   BRIM_NAME_MAX bytes;
                                                   copied */
    const struct brim_auth_secret *secret;      /* NULL: HELLO only;
                                                   borrowed: outlives P */
    uint64_t                      *failures;    /* counts handshakes whose
                                                   AUTH failed; NULL:
                                                   none. Borrowed */
};

/* An outgoing connection; caller's memory, embedded in its owner. */
struct brim_peer {
    uv_tcp_t               tcp;             /* the socket; valid unless IDLE */
    uv_connect_t           connect;         /* the connect request */
    uv_loop_t             *loop;            /* borrowed */
    enum brim_peer_state   state;           /* see enum brim_peer_state */
    struct brim_buf        in;              /* bytes of an incomplete frame */
    size_t                 max_frame_bytes; /* larger reply frames close */
    struct brim_peer_call *calls;           /* FIFO of requests (ring buffer) */
    uint32_t               calls_cap;       /* its slots */
    uint32_t               calls_head;      /* oldest request's slot */
    uint32_t               ncalls;          /* requests awaiting replies */
    uint32_t               writes;          /* writes in flight */
    int                    close_status;    /* why it closes */
    brim_peer_connect_cb   on_connect;      /* see the typedef */
    brim_peer_close_cb     on_close;        /* see the typedef */
    void                  *data;            /* the owner's */
    char                   addr[128];       /* "host:port" last connected to */
    /* The handshake (HELLO, then AUTH when a secret is set). */
    int                     hs;          /* brim_peer_set_hello() was called */
    int                     hs_reported; /* ON_CONNECT called this time */
    struct brim_peer_hello  hs_hello;    /* its NAME points at HS_NAME */
    char                    hs_name[BRIM_NAME_MAX + 1];
    uint32_t                hs_role_s; /* the server's role, HELLO reply */
    uint8_t                 hs_nonce_c[BRIM_AUTH_NONCE_BYTES]; /* ours */
    uint32_t                hs_failed_op;    /* HELLO or AUTH when the handshake
                                          failed there, else 0 */
    char                    hs_error[192];   /* why it failed, for logs */
    uint64_t                peer_cluster_id; /* from HELLO's reply */
    uint64_t                peer_epoch;      /* from HELLO's reply */
    struct brim_wire_limits peer_limits;     /* the server's limits, from
                                          HELLO's reply (zero before) */
};

/* Initialise P (caller's memory) as IDLE. MAX_FRAME_BYTES bounds reply
 * bodies. The callbacks may be NULL. */
void brim_peer_init(struct brim_peer *p, uv_loop_t *loop,
                    size_t max_frame_bytes, brim_peer_connect_cb on_connect,
                    brim_peer_close_cb on_close, void *data);

/*
 * From the next brim_peer_connect() on, say HELLO as HELLO (copied; its
 * SECRET and FAILURES borrowed) before reporting P open, then, when
 * HELLO->secret is set, prove it with AUTH and check the server's proof
 * (PROTOCOL.md 12.2). Call it before each connect to refresh the values.
 */
void brim_peer_set_hello(struct brim_peer             *p,
                         const struct brim_peer_hello *hello);

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

/*
 * Bytes of P's sent requests that libuv still holds, not yet written to the
 * kernel (0 when P is not open): a sender that wants the link drained
 * before its next frame waits for 0.
 */
size_t brim_peer_write_queued(const struct brim_peer *p);

/* Free what an IDLE P holds (after its close callback, or never opened). */
void brim_peer_destroy(struct brim_peer *p);

#endif /* BRIM_SERVER_PEER_H */
