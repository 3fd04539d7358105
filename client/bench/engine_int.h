/*
 * client/bench/engine_int.h - the inside of the engine: what conn.c (one
 * connection: connect, send, parse, fail), resend.c (the --coordinator
 * resend queue) and log.c (a thread's messages and fatal stop) offer
 * engine.c (the loop, issuing, setup) and one another. The calls go one
 * way, engine.c over conn.c over resend.c over log.c (docs/design.md,
 * "Architecture"): a lower file tells a higher one what happened by its
 * return value, never by calling up. Not used outside those four files.
 */
#ifndef BRIM_CLIENT_BENCH_ENGINE_INT_H
#define BRIM_CLIENT_BENCH_ENGINE_INT_H

#include <stdint.h>

#include "client/bench/engine.h"
#include "client/bench/proto.h"
#include "client/net/link.h"

/* Housekeeping period (timeouts, reconnects, progress), ns. */
#define BRIM_BENCH_TICK_NS 100000000ull
/* Reconnects a connection gets over a run, and their spacing, ns. */
#define BRIM_BENCH_RECONNECTS 3
#define BRIM_BENCH_RECONNECT_NS 200000000ull

/*
 * One connection to a node. Its transport is a struct brim_link (the one
 * libbrim uses): the socket (LINK.fd, -1 while closed), the send queue
 * and the bytes read; for brim the link also says HELLO and AUTH, and
 * requests go only once it is READY. Requests in flight wait in FIFO, in
 * the order their replies come.
 */
struct brim_bench_conn {
    struct brim_bench_thread *t;            /* owner */
    struct brim_bench_conn   *next_dirty;   /* on t->dirty */
    struct brim_bench_req    *fifo;         /* ring of cap requests */
    void                     *pctx;         /* adapter's state */
    struct brim_link          link;         /* transport; initialised at
                                             * the first open */
    uint64_t                  reconnect_ns; /* try again then; 0 never */
    uint64_t                  opened_ns;    /* the link attached: its
                                             * handshake is timed from it */
    uint32_t                  head;         /* oldest request in fifo */
    uint32_t                  n;            /* requests in flight */
    uint32_t                  cap;          /* fifo slots */
    uint32_t                  node;         /* index in sh->nodes */
    uint32_t                  index;        /* in t->conns */
    uint32_t                  retries;      /* reconnects so far */
    uint32_t                  unstamped;    /* queued since the last flush */
    uint8_t                   dirty;        /* on t->dirty */
    uint8_t                   polling_out;  /* EPOLLOUT armed */
};

/* Is C open? */
static inline int
brim_bench_conn_open_p(const struct brim_bench_conn *c)
{
    return c->link.fd >= 0;
}

/* Can C take another request? Not before its handshake is done. */
static inline int
brim_bench_conn_has_room(const struct brim_bench_conn *c)
{
    return c->link.fd >= 0 && c->link.state == BRIM_LINK_READY
        && c->n < c->t->depth;
}

/* ---- log.c ---- */

/*
 * Print printf FMT as one line on stderr for T ("brim-bench: ..."), at
 * most a few per thread and run; past that, one line says the rest are
 * suppressed. Never fails; nothing to free.
 */
void brim_bench_log(struct brim_bench_thread *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Stop T's run for good: T->fatal and T->stopping are set and T->err gets
 * printf FMT as the reason (main.c reports it). Only the first call of a
 * run counts.
 */
void brim_bench_log_fatal(struct brim_bench_thread *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- resend.c ---- */

/* RETRY backoff: 1 ms doubling to 100 ms (PROTOCOL.md 5.1), ns. */
#define BRIM_BENCH_RESEND_BACKOFF_NS 1000000ull
#define BRIM_BENCH_RESEND_BACKOFF_MAX_NS 100000000ull

/*
 * --coordinator: REQ (borrowed; copied into T->rq) came back at NOW with
 * STATUS (BRIM_EMOVED, BRIM_ERETRY, BRIM_EBUSY, or 0 for a request whose
 * connection was lost) and the node's EPOCH: count it, ask cluster.c for
 * the newer map if EPOCH is one, and queue REQ to go again (after a
 * backoff but for a MOVED that waits for a map), or fail it
 * (brim_bench_resend_fail()) past its timeout or when out of memory.
 * T->rq grows as needed; brim_bench_thread_destroy() frees it.
 */
void brim_bench_resend_add(struct brim_bench_thread    *t,
                           const struct brim_bench_req *req, int status,
                           uint64_t epoch, uint64_t now);

/*
 * redis-cluster: REQ (borrowed, copied) was answered at NOW with REP, a
 * MOVED or an ASK (REP->ask) naming REP->addr for REP->slot: it did not
 * run. Count it; for MOVED point T's slot map at that node and ask
 * cluster.c for the whole map again; queue REQ to go again: to the node
 * of the corrected map (MOVED), or once to the node named, ASKING first
 * (ASK), with its verifier state kept; to a node the map does not know
 * yet, after the next map. Fails it as brim_bench_resend_add() does.
 */
void brim_bench_resend_redirect(struct brim_bench_thread    *t,
                                const struct brim_bench_req *req,
                                const struct brim_bench_rep *rep, uint64_t now);

/* REQ (borrowed) cannot go again (WHY: timed out, out of memory,
 * draining): count it as an error, log WHY, and under --verify tell the
 * verifier a write's outcome is unknown. */
void brim_bench_resend_fail(struct brim_bench_thread    *t,
                            const struct brim_bench_req *req, const char *why);

/* Drop entry I (< T->nrq) of T's resend queue; the last entry takes its
 * place. */
void brim_bench_resend_remove(struct brim_bench_thread *t, uint32_t i);

/* ---- conn.c ---- */

/*
 * Connect C (blocking, with a timeout), register it with T's epoll and,
 * for brim, queue its HELLO (its link then says AUTH too, with the run's
 * secret). Returns 0, or BRIM_ECONNREFUSED, BRIM_ETIMEDOUT, BRIM_ESYS or
 * BRIM_ENOMEM with ERRBUF set.
 */
int brim_bench_conn_open(struct brim_bench_conn *c,
                         char                    errbuf[BRIM_ERRBUF_LEN]);

/*
 * C failed for reason WHY: its requests in flight count as errors (writes
 * become "outcome unknown" to the verifier), it closes, and a reconnect is
 * scheduled while it has some left.
 */
void brim_bench_conn_fail(struct brim_bench_conn *c, const char *why);

/* Send REQ again on C (which has room): same key, kind and verifier
 * state, a new id and the current epoch. */
void brim_bench_conn_resend(struct brim_bench_conn      *c,
                            const struct brim_bench_req *req, uint64_t now);

/* Write C's queued output, one send() when the socket takes it all. */
void brim_bench_conn_flush(struct brim_bench_conn *c);

/* Send OP on C (which has room) at NOW. */
void brim_bench_conn_send(struct brim_bench_conn     *c,
                          const struct brim_bench_op *op, uint64_t now);

/*
 * C is readable: read once and handle its replies (counted, timed,
 * verified; with --coordinator MOVED, RETRY and BUSY go to the resend
 * queue). Returns 1 when
 * replies were taken and C is still open, with *READ_NS the time they
 * were taken: the caller (engine.c) then issues new requests at once,
 * preferring C. Returns 0 when nothing was read or C failed (closed, or
 * the run stopped); *READ_NS is then not written.
 */
int brim_bench_conn_readable(struct brim_bench_conn *c, uint64_t *read_ns);

/*
 * Count again, per node, the connections of T with room (T->nroom), which
 * this file otherwise keeps up to date as requests come and go: at a
 * phase's start, and after a connection opened or closed.
 */
void brim_bench_conn_recount_room(struct brim_bench_thread *t);

/* Close C, a connection with nothing in flight (its node left the map, or
 * the run ends), and free its adapter state; no reconnect. */
void brim_bench_conn_close(struct brim_bench_conn *c);

#endif /* BRIM_CLIENT_BENCH_ENGINE_INT_H */
