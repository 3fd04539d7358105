/*
 * client/bench/verify.c - the per-key candidate sets of verify.h. A key
 * holds at most BRIM_BENCH_VREC_MAX writes: the ones in flight and the
 * finished ones not yet provably overwritten. Reads judge against a
 * snapshot taken when they were sent, so a write may be dropped from the
 * set while reads sent earlier are still out.
 */
#include "client/bench/verify.h"

#include <string.h>

#include <brim/status.h>

#include "common/alloc.h"
#include "common/defs.h"

int
brim_bench_verify_init(struct brim_bench_verify *v, uint64_t nkeys,
                       uint64_t slack_ns)
{
    memset(v, 0, sizeof(*v));
    v->keys = brim_calloc(nkeys == 0 ? 1 : nkeys, sizeof(*v->keys));
    if (v->keys == NULL) {
        return BRIM_ENOMEM;
    }
    v->nkeys = nkeys;
    v->tick = 1; /* 0 means "not done" in done_tick */
    v->slack_ns = slack_ns;
    return 0;
}

void
brim_bench_verify_destroy(struct brim_bench_verify *v)
{
    brim_free(v->keys);
    memset(v, 0, sizeof(*v));
}

int
brim_bench_verify_writable(const struct brim_bench_verify *v, uint64_t key)
{
    BRIM_ASSERT(key < v->nkeys);
    return v->keys[key].nrec < BRIM_BENCH_VREC_MAX;
}

uint32_t
brim_bench_verify_write_sent(struct brim_bench_verify *v, uint64_t key, int del,
                             uint32_t ttl_s, uint64_t now_ns)
{
    struct brim_bench_vkey *k;
    struct brim_bench_vrec *r;
    uint64_t                ttl_ns;

    BRIM_ASSERT(key < v->nkeys && v->keys[key].nrec < BRIM_BENCH_VREC_MAX);
    k = &v->keys[key];
    r = &k->rec[k->nrec++];
    memset(r, 0, sizeof(*r));
    r->send_tick = v->tick++;
    r->seq = k->next_seq++;
    r->del = del != 0;
    r->state = BRIM_BENCH_VINFLIGHT;
    /* The server starts the TTL when it applies the SET, at or after the
     * send; only its clock's rounding can make it end early. */
    ttl_ns = (uint64_t) ttl_s * 1000000000u;
    if (del) {
        r->sure_until_ns = 0;
    } else if (ttl_s == 0) {
        r->sure_until_ns = UINT64_MAX;
    } else if (ttl_ns > v->slack_ns) {
        r->sure_until_ns = now_ns + ttl_ns - v->slack_ns;
    } else {
        r->sure_until_ns = 0;
    }
    return r->seq;
}

/* Remove rec[I] of K, keeping the others (their order does not matter). */
static void
verify_drop(struct brim_bench_vkey *k, uint32_t i)
{
    k->rec[i] = k->rec[--k->nrec];
}

void
brim_bench_verify_write_done(struct brim_bench_verify *v, uint64_t key,
                             uint32_t seq, int ok)
{
    struct brim_bench_vkey *k;
    struct brim_bench_vrec *x;
    uint64_t                send_tick;
    uint32_t                i;

    BRIM_ASSERT(key < v->nkeys);
    k = &v->keys[key];
    x = NULL;
    for (i = 0; i < k->nrec; i++) {
        if (k->rec[i].seq == seq && k->rec[i].state == BRIM_BENCH_VINFLIGHT) {
            x = &k->rec[i];
            break;
        }
    }
    BRIM_ASSERT(x != NULL); /* in-flight writes are never dropped */
    x->done_tick = v->tick++;
    if (!ok) {
        /* It may still have run, or run later: it stays a candidate
         * until an acknowledged write sent after this failure. */
        x->state = BRIM_BENCH_VUNKNOWN;
        return;
    }
    x->state = BRIM_BENCH_VACKED;
    k->known = 1;
    send_tick = x->send_tick;
    /* X was sent after every write finished before its send_tick, so it
     * overwrote them: a read sent from now on cannot return them. */
    i = 0;
    while (i < k->nrec) {
        if (k->rec[i].state != BRIM_BENCH_VINFLIGHT
            && k->rec[i].done_tick < send_tick) {
            verify_drop(k, i);
        } else {
            i++;
        }
    }
}

void
brim_bench_verify_read_sent(struct brim_bench_verify *v, uint64_t key,
                            struct brim_bench_vread *r)
{
    struct brim_bench_vkey *k;
    struct brim_bench_vrec *w;
    uint64_t                sure;
    uint32_t                floor, i;

    BRIM_ASSERT(key < v->nkeys);
    k = &v->keys[key];
    v->tick++;
    floor = k->next_seq;
    sure = k->known && k->nrec > 0 ? UINT64_MAX : 0;
    for (i = 0; i < k->nrec; i++) {
        w = &k->rec[i];
        if (w->seq < floor) {
            floor = w->seq;
        }
        /* A miss is impossible only while every candidate is a live,
         * acknowledged SET. */
        if (w->state != BRIM_BENCH_VACKED || w->del) {
            sure = 0;
        } else if (w->sure_until_ns < sure) {
            sure = w->sure_until_ns;
        }
    }
    r->floor = floor;
    r->next_seq = k->next_seq;
    r->known = k->known;
    r->sure_until_ns = sure;
}

enum brim_bench_vres
brim_bench_verify_read_done(struct brim_bench_verify *v, uint64_t key,
                            const struct brim_bench_vread *r, int hit,
                            int64_t seq, uint64_t now_ns)
{
    struct brim_bench_vkey *k;

    BRIM_ASSERT(key < v->nkeys);
    k = &v->keys[key];
    if (!r->known) {
        /* Nothing of this run was acknowledged yet: whatever was stored
         * before the run (or nothing) may still be there. */
        return BRIM_BENCH_VOK;
    }
    v->reads_checked++;
    if (hit) {
        if (seq >= 0 && (uint64_t) seq >= r->floor) {
            return BRIM_BENCH_VOK; /* a candidate, or written meanwhile */
        }
        v->stale_reads++;
        if ((k->flagged & 1) == 0) {
            k->flagged |= 1;
            v->stale++;
        }
        return BRIM_BENCH_VSTALE;
    }
    /* A write sent while the read was out (a DEL, a short TTL) may explain
     * the miss; so may a TTL close to its end. */
    if (k->next_seq != r->next_seq || now_ns >= r->sure_until_ns) {
        return BRIM_BENCH_VOK;
    }
    v->lost_reads++;
    if ((k->flagged & 2) == 0) {
        k->flagged |= 2;
        v->lost++;
    }
    return BRIM_BENCH_VLOST;
}
