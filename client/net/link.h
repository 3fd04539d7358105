/*
 * client/net/link.h - one connection from a client (libbrim, brim-bench)
 * to a brim node or coordinator: the socket, a send queue, the bytes read,
 * the handshake (HELLO, then AUTH's challenge and proof when a secret is
 * given: PROTOCOL.md sections 3 and 12.2) and the requests in flight,
 * whose replies come back in request order and are matched by request id.
 *
 * The core does no waiting: queue requests, flush what the socket takes,
 * read or feed bytes, take whole replies. brim-bench drives it from its
 * epoll loop. Blocking
 * helpers on top (brim_link_open(), brim_link_wait(), brim_link_call())
 * serve libbrim's calls and the tools' one-off exchanges, each bounded by
 * a deadline on the monotonic clock of client/net/sock.h. A link opened
 * without a handshake is a plain byte stream (brim-bench's memcached and
 * redis connections use only the socket, the queue and the input).
 *
 * Retry policy (what to send again, when to reconnect) is the caller's:
 * a link reports what the wire said and closes on nothing by itself. One
 * thread at a time.
 */
#ifndef BRIM_CLIENT_NET_LINK_H
#define BRIM_CLIENT_NET_LINK_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include <brim/status.h>

#include "proto/auth.h"
#include "proto/buf.h"
#include "proto/wire.h"

/* Bytes asked of recv() per read. */
#define BRIM_LINK_READ_CHUNK (64u << 10)

/* Where a link is. */
enum brim_link_state {
    BRIM_LINK_CLOSED = 0, /* no socket */
    BRIM_LINK_CONNECTING, /* non-blocking connect() under way */
    BRIM_LINK_HELLO,      /* HELLO sent, its reply awaited */
    BRIM_LINK_AUTH,       /* AUTH's challenge or proof sent */
    BRIM_LINK_READY       /* connected, handshake done (or none
                                     * asked): requests may go */
};

/*
 * What a link says about itself when it opens. Fields may be changed
 * between connections; the pointers are borrowed and must outlive the
 * link.
 */
struct brim_link_conf {
    int                            hello;      /* non-zero: open with HELLO
                                                * (and AUTH with SECRET);
                                                * 0: a plain byte stream */
    uint32_t                       role;       /* HELLO's enum brim_role */
    uint64_t                       cluster_id; /* HELLO's; 0: not known */
    const char                    *name;       /* HELLO's name (NUL-
                                                * terminated), NULL: none */
    const struct brim_auth_secret *secret;     /* prove it after HELLO;
                                                * NULL: no AUTH */
    uint32_t                       frame_min;  /* reply frames of up to at
                                                * least this many bytes are
                                                * accepted whatever HELLO
                                                * says (a coordinator's
                                                * topology); 0: none */
    uint64_t                      *next_id;    /* request id counter to
                                                * draw from (libbrim's, one
                                                * for all its links); NULL:
                                                * the link's own */
};

/* What the other side's HELLO reply said. */
struct brim_link_peer {
    uint64_t incarnation; /* its process, 0 for none */
    uint64_t epoch;       /* its committed epoch at HELLO */
    uint64_t cluster_id;  /* its cluster, 0: none yet */
    uint32_t role;        /* its enum brim_role */
};

/* One request in flight, oldest first (the link's FIFO). */
struct brim_link_req {
    uint64_t id;    /* its request id */
    uint64_t start; /* stream offset of its first byte */
    void    *tag;   /* the caller's, handed back */
    uint32_t op;    /* enum brim_op */
    uint8_t  own;   /* the handshake's own: not the
                                     * caller's (enum in link.c) */
};

/*
 * One connection. Zero it or brim_link_init() it; the fields are read
 * through the functions below (FD, STATE, LIMITS and PEER may also be
 * read directly).
 */
struct brim_link {
    char                   *addr;     /* "host:port", owned; for
                                        * connecting and for messages */
    int                     fd;       /* the socket, or -1 */
    int                     state;    /* enum brim_link_state */
    struct brim_link_conf   conf;     /* copied at init */
    uint64_t                own_id;   /* ids when conf.next_id is NULL */
    uint64_t                epoch;    /* stamped on the handshake's
                                        * requests (the caller's map) */
    struct brim_buf         out;      /* queued bytes */
    size_t                  out_off;  /* of OUT, bytes already sent */
    uint64_t                out_base; /* stream offset of OUT's first
                                        * byte: bytes sent before it */
    struct brim_buf         in;       /* bytes read */
    size_t                  in_off;   /* of IN, bytes already taken */
    msgpack_zone            zone;     /* reply objects, reused per reply */
    struct brim_wire_limits limits;   /* the peer's, from its HELLO; the
                                        * defaults until then */
    struct brim_link_peer   peer;     /* from its HELLO reply */
    struct brim_link_req   *q;        /* FIFO of requests in flight */
    uint32_t                qhead;    /* index of the oldest */
    uint32_t                qlen;     /* requests in it */
    uint32_t                qcap;     /* slots */
    uint8_t                 nonce_c[BRIM_AUTH_NONCE_BYTES]; /* AUTH's */
    int                     sys_errno; /* errno of the last failed call */
    int                     inited;    /* brim_link_init() done */
    char                    err[BRIM_ERRBUF_LEN]; /* last failure, one
                                        * line: "ADDR: reason" */
};

/*
 * A reply taken with brim_link_take(). REP borrows from the link's input
 * and zone: valid until the next call on the link. REP.request_id 0 (with
 * a status) is an error reply to "unknown": the peer refused the frame or
 * the connection as a whole (PROTOCOL.md 3) and closes next; it answers
 * the oldest request all the same.
 */
struct brim_link_reply {
    struct brim_rep rep; /* the decoded reply */
    uint64_t        id;  /* the request it answers */
    uint32_t        op;  /* that request's op */
    void           *tag; /* that request's tag */
};

/* ---- setting up ---- */

/*
 * Make L a closed link to ADDR ("host:port", copied; NULL: a link that is
 * only attached to sockets others opened) with CONF (copied). Returns 0
 * or BRIM_ENOMEM (L is then as zeroed). Free with brim_link_destroy().
 */
int brim_link_init(struct brim_link *l, const char *addr,
                   const struct brim_link_conf *conf);

/* Close L and free what it holds. A zeroed L is fine. */
void brim_link_destroy(struct brim_link *l);

/*
 * Give back the memory of L's send queue and input when they are empty
 * and larger than 1 MiB (after a large MSET or topology).
 */
void brim_link_trim(struct brim_link *l);

/*
 * Close L's socket (if open) and forget its queued bytes, its input and
 * its requests in flight; STATE becomes CLOSED. LIMITS and ERR are kept.
 * Idempotent.
 */
void brim_link_close(struct brim_link *l);

/*
 * Make the connected non-blocking socket FD (taken over: the link closes
 * it, on error too) L's, after brim_link_close(). With CONF.hello, HELLO
 * (role, cluster id and name of CONF, epoch L->epoch) is queued and STATE
 * is HELLO until its reply (and, with CONF.secret, AUTH's) is taken; else
 * STATE is READY. LIMITS go back to the defaults. Returns 0 or
 * BRIM_ENOMEM (ERR says so; L is closed).
 */
int brim_link_attach(struct brim_link *l, int fd);

/*
 * Connect to L->addr (brim_sock_connect(): each address in turn) by
 * DEADLINE_MS, then brim_link_attach(). Blocking. Returns 0 or
 * BRIM_EINVAL, BRIM_ECONNREFUSED, BRIM_ETIMEDOUT, BRIM_ESYS, BRIM_ENOMEM;
 * ERR says why ("ADDR: connect timed out").
 */
int brim_link_connect(struct brim_link *l, int64_t deadline_ms);

/*
 * Begin a connection to L->addr without waiting (brim_sock_connect_start()
 * with ATTEMPT): STATE becomes CONNECTING. Returns 0, or BRIM_EINVAL,
 * BRIM_ECONNREFUSED, BRIM_ESYS with ERR set.
 */
int brim_link_connect_start(struct brim_link *l, uint32_t attempt);

/*
 * A CONNECTING link: look whether its connect() is done, without waiting;
 * once it is, brim_link_attach() follows. Returns 0 (attached), BRIM_EAGAIN
 * (still under way) or the connect error (L is then closed).
 */
int brim_link_connect_done(struct brim_link *l);

/* ---- requests and replies ---- */

/* A new request id from L's counter (CONF.next_id or its own), >= 1. */
uint64_t brim_link_id(struct brim_link *l);

/*
 * Encode REQ as the next request on L: REQ->request_id gets a new id
 * (brim_link_id()); REQ->epoch is sent as the caller set it. An MGET
 * sends the NMKEYS keys MKEYS (borrowed for the call; both unused for
 * other ops). TAG comes back with the reply. A request queued before the
 * handshake is done goes after HELLO (useful only without a secret).
 * Returns 0, BRIM_EINVAL (REQ cannot be encoded) or BRIM_ENOMEM; on error
 * nothing is queued and ERR says why.
 */
int brim_link_queue(struct brim_link *l, struct brim_req *req,
                    const struct brim_bytes *mkeys, uint32_t nmkeys, void *tag);

/* The send queue, for a caller that encodes bytes of its own (brim-bench's
 * adapters) and then flushes; bytes appended count as queued. */
struct brim_buf *brim_link_outbuf(struct brim_link *l);

/* The stream offset where the next queued byte will stand (the START of a
 * request queued now), and the bytes sent so far: a request of START
 * has had a byte sent when brim_link_sent() > START. */
uint64_t brim_link_queued(const struct brim_link *l);
uint64_t brim_link_sent(const struct brim_link *l);

/* Bytes queued and not yet sent. */
size_t brim_link_unsent(const struct brim_link *l);

/* Requests in flight: queued, their reply not yet taken (the handshake's
 * own included). */
uint32_t brim_link_inflight(const struct brim_link *l);

/*
 * Send queued bytes until none is left or the socket would block.
 * Returns 0, BRIM_ECLOSED (the peer reset or closed: EPIPE, ECONNRESET)
 * or BRIM_ESYS; ERR gets "ADDR: send: reason" and SYS_ERRNO the errno.
 */
int brim_link_flush(struct brim_link *l);

/*
 * One recv() of up to BRIM_LINK_READ_CHUNK bytes onto L's input. Returns
 * 1 (bytes came), 0 (none: it would block), BRIM_ECLOSED (end of stream:
 * SYS_ERRNO 0, ERR not written), BRIM_ESYS ("ADDR: recv: reason", and
 * SYS_ERRNO; a reset is BRIM_ECLOSED with both) or BRIM_ENOMEM. Pointers
 * into the input and taken replies are invalid afterwards.
 */
int brim_link_read(struct brim_link *l);

/*
 * Append LEN bytes from DATA (borrowed) to L's input as if they had been
 * read (tests; a caller that reads by itself). Returns 0 or BRIM_ENOMEM.
 * Invalidates as brim_link_read() does.
 */
int brim_link_feed(struct brim_link *l, const void *data, size_t len);

/* The input not taken yet: *LEN bytes at the pointer returned (borrowed,
 * valid until the next read or feed). For callers that parse by
 * themselves (brim-bench's adapters), who then brim_link_consume(). */
const char *brim_link_input(const struct brim_link *l, size_t *len);

/* Drop the first N (at most what brim_link_input() gave) input bytes. */
void brim_link_consume(struct brim_link *l, size_t n);

/*
 * Take the next whole reply from L's input: the reply to the oldest
 * request in flight. The handshake's replies are handled here and never
 * handed out: HELLO's sets LIMITS (at least CONF.frame_min bytes a frame)
 * and PEER, then AUTH's challenge is queued (flush it); the server's proof
 * is checked and ours queued; the last one makes L READY.
 * Returns 1 with *R filled; 0 when no whole reply is buffered, or when a
 * handshake step just ended with nothing else in flight (brim-bench then
 * parses the bytes that follow by itself); or an error after which L must
 * be closed, with ERR saying why:
 *   BRIM_EBADREPLY  a frame above LIMITS.max_frame_bytes, a malformed one,
 *                   one with another request id, one with no request in
 *                   flight ("unsolicited"), a handshake reply that does
 *                   not fit its request
 *   a HELLO or AUTH refusal's status (BRIM_EDENIED...), or BRIM_ECLOSED
 *                   when that refusal had request id 0
 *   BRIM_EDENIED    the server's AUTH proof is wrong
 *   BRIM_ESYS       no random bytes, or no HMAC, for AUTH
 *   BRIM_ENOMEM
 */
int brim_link_take(struct brim_link *l, struct brim_link_reply *r);

/*
 * Parse the frame at the start of BUF (LEN bytes, borrowed) as the reply
 * to request ID of opcode OP, under LIM (its max_frame_bytes bounds the
 * frame); the reply unpacks into ZONE, reused. No I/O, no state: the one
 * matcher behind brim_link_take() and brim-bench's adapter. Returns the
 * frame's bytes (> 0) with *REP filled (borrowing from BUF and ZONE), 0
 * when BUF holds no whole frame yet, or BRIM_EBADREPLY when the stream is
 * out of step, ERRBUF (NULL allowed) saying how: "reply frame above N
 * bytes", "malformed reply to OP: reason", "reply id X to OP, expected
 * ID". An error reply with id 0 answers ID (REP->request_id is then 0).
 */
long brim_link_parse(const struct brim_wire_limits *lim, msgpack_zone *zone,
                     uint32_t op, uint64_t id, const char *buf, size_t len,
                     struct brim_rep *rep, char errbuf[BRIM_ERRBUF_LEN]);

/* ---- blocking helpers ---- */

/*
 * Wait until L's socket has bytes to read (or room for queued ones) or
 * DEADLINE_MS passes, then send what it takes and read what it holds
 * (until it would block). Returns 0 (some bytes moved), BRIM_ETIMEDOUT,
 * BRIM_ECLOSED (end of stream with nothing new read), BRIM_ESYS or
 * BRIM_ENOMEM; ERR says why except for end of stream and the timeout.
 */
int brim_link_wait(struct brim_link *l, int64_t deadline_ms);

/*
 * Take replies until the handshake of a just attached L is done, by
 * DEADLINE_MS. Returns 0 (READY), BRIM_ETIMEDOUT (ERR not written: the
 * caller knows which timeout it set), BRIM_ECLOSED (the peer closed; ERR
 * "ADDR: connection closed after HELLO" when bytes it sent after its last
 * handshake reply were unasked) or brim_link_take()'s errors; L is closed
 * on error.
 */
int brim_link_handshake(struct brim_link *l, int64_t deadline_ms);

/*
 * brim_link_connect() then brim_link_handshake(), both by DEADLINE_MS.
 * Returns 0 or their errors.
 */
int brim_link_open(struct brim_link *l, int64_t deadline_ms);

/*
 * Queue REQ (as brim_link_queue(), no keys), and wait by DEADLINE_MS for
 * its reply into *R (borrowed until the next call on L). L must be READY
 * with nothing else in flight. Returns 0 (R->rep.status says what the
 * peer answered), or a transport error (BRIM_ETIMEDOUT, BRIM_ECLOSED,
 * BRIM_EBADREPLY, BRIM_ESYS, BRIM_ENOMEM) with ERR set (on a timeout:
 * "ADDR: no reply to OP within the timeout"); L should then be closed.
 */
int brim_link_call(struct brim_link *l, struct brim_req *req,
                   int64_t deadline_ms, struct brim_link_reply *r);

/*
 * Whether the idle L (nothing in flight) may still be used: open, and
 * its socket holding nothing. With no request out, a readable socket
 * means the peer closed it (an idle timeout, a restart) or sent something
 * unasked (an error frame before a close): either way it is not to be
 * trusted. Never waits. Returns 1 or 0.
 */
int brim_link_idle_ok(const struct brim_link *l);

#endif /* BRIM_CLIENT_NET_LINK_H */
