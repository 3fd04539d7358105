/*
 * client/bench/verify.h - the checker behind brim-bench --verify. For each
 * key it keeps the writes that a read may still legitimately return: those
 * in flight, and those acknowledged but not yet provably overwritten. A
 * write W is provably overwritten once a write X sent after W's
 * acknowledgement arrived has been acknowledged itself (X then follows W in
 * any linearization; Herlihy and Wing, TOPLAS 1990). Time here is a
 * logical tick: the order in which this thread saw sends and replies.
 * Pure bookkeeping, no I/O; one checker per bench thread, which owns a
 * disjoint set of keys.
 */
#ifndef BRIM_CLIENT_BENCH_VERIFY_H
#define BRIM_CLIENT_BENCH_VERIFY_H

#include <stddef.h>
#include <stdint.h>

/* Writes tracked per key at most; a write to a full key is sent as a GET. */
#define BRIM_BENCH_VREC_MAX 4

/* What brim_bench_verify_read_done() concluded about one read. */
enum brim_bench_vres {
    BRIM_BENCH_VOK = 0, /* consistent, or not decidable */
    BRIM_BENCH_VSTALE,  /* a value older than every candidate */
    BRIM_BENCH_VLOST    /* a miss where a live SET must be */
};

/* The states of a tracked write. */
enum brim_bench_vstate {
    BRIM_BENCH_VINFLIGHT = 1, /* sent, no reply yet */
    BRIM_BENCH_VACKED,        /* acknowledged */
    BRIM_BENCH_VUNKNOWN       /* failed or timed out: may have run */
};

/* One write to a key that a read may still return. */
struct brim_bench_vrec {
    uint64_t send_tick;     /* tick when it was sent */
    uint64_t done_tick;     /* tick of its reply or failure; 0 */
    uint64_t sure_until_ns; /* a SET: it must exist until then */
    uint32_t seq;           /* the key's write sequence number */
    uint8_t  del;           /* 1 for a DEL, 0 for a SET */
    uint8_t  state;         /* enum brim_bench_vstate */
};

/* The state of one key. */
struct brim_bench_vkey {
    struct brim_bench_vrec rec[BRIM_BENCH_VREC_MAX]; /* candidates */
    uint32_t               next_seq; /* sequence of the next write */
    uint8_t                nrec;     /* rec[0 .. nrec) in use */
    uint8_t                known;    /* a write of this run was acked */
    uint8_t                flagged;  /* 1: counted stale, 2: counted lost */
};

/*
 * What a read saw when it was sent, kept with the request until its reply.
 * A read that returns a value written at sequence FLOOR or later, or one
 * written after the read was sent, is consistent.
 */
struct brim_bench_vread {
    uint64_t sure_until_ns; /* a miss before this is lost; 0: never */
    uint32_t floor;         /* oldest sequence still a candidate */
    uint32_t next_seq;      /* the key's next_seq at send time */
    uint8_t  known;         /* the key's known at send time */
};

/* A checker over keys 0 .. NKEYS - 1 (this thread's local indices). */
struct brim_bench_verify {
    struct brim_bench_vkey *keys;        /* NKEYS entries, brim_calloc */
    uint64_t                nkeys;       /* keys tracked */
    uint64_t                tick;        /* logical clock, one step per event */
    uint64_t                slack_ns;    /* TTL margin for server clock slack */
    uint64_t                stale;       /* distinct keys with a stale read */
    uint64_t                lost;        /* distinct keys with a lost read */
    uint64_t                stale_reads; /* reads judged stale */
    uint64_t                lost_reads;  /* reads judged lost */
    uint64_t                reads_checked; /* reads judged at all */
    uint64_t writes_demoted; /* writes sent as GETs: key was full */
};

/*
 * Prepare V for NKEYS keys, none written yet. SLACK_NS is how long before
 * a SET's TTL ends its key counts as possibly expired (server clocks
 * round: memcached's ticks once a second). Returns 0 or BRIM_ENOMEM.
 */
int brim_bench_verify_init(struct brim_bench_verify *v, uint64_t nkeys,
                           uint64_t slack_ns);

/* Free V's memory; V may be zeroed. */
void brim_bench_verify_destroy(struct brim_bench_verify *v);

/* Non-zero when KEY can take another write (fewer than VREC_MAX tracked). */
int brim_bench_verify_writable(const struct brim_bench_verify *v, uint64_t key);

/*
 * A SET (DEL 0, with TTL_S seconds, 0 for none) or a DEL (DEL 1) of KEY is
 * sent at NOW_NS. KEY must be writable. Returns the write's sequence
 * number, which a SET's value must carry.
 */
uint32_t brim_bench_verify_write_sent(struct brim_bench_verify *v, uint64_t key,
                                      int del, uint32_t ttl_s, uint64_t now_ns);

/*
 * The write SEQ of KEY was acknowledged (OK non-zero) or failed or timed
 * out (OK 0: it may or may not have run). An acknowledgement drops every
 * finished write of KEY whose reply came before this one was sent.
 */
void brim_bench_verify_write_done(struct brim_bench_verify *v, uint64_t key,
                                  uint32_t seq, int ok);

/* A GET of KEY is sent: fill *R, to be passed to read_done. */
void brim_bench_verify_read_sent(struct brim_bench_verify *v, uint64_t key,
                                 struct brim_bench_vread *r);

/*
 * The GET of KEY sent with *R came back at NOW_NS: a hit (HIT non-zero)
 * whose value carries sequence SEQ, or -1 for a value this run did not
 * write for KEY; or a miss (HIT 0, SEQ ignored). Counts and returns the
 * verdict: STALE for a hit older than every candidate or a foreign value
 * once the key is known; LOST for a miss when every candidate was an
 * acknowledged SET whose TTL (less the slack) had not run out and no
 * write of KEY was sent meanwhile. Each key is counted at most once in
 * V->stale and once in V->lost.
 */
enum brim_bench_vres
brim_bench_verify_read_done(struct brim_bench_verify *v, uint64_t key,
                            const struct brim_bench_vread *r, int hit,
                            int64_t seq, uint64_t now_ns);

#endif /* BRIM_CLIENT_BENCH_VERIFY_H */
