/*
 * client/bench/resend.c - brim-bench --coordinator's resend queue
 * (T->rq, engine_int.h): the requests answered MOVED, RETRY or BUSY, or
 * lost with their connection, that must go again, each with the map
 * epoch it waits for and its backoff; and the ones that cannot, counted
 * as errors. conn.c fills it and engine.c drains it (the engine's loop
 * places each request on a connection again), so it sits below both:
 * it calls cluster.c (ask for a newer map), log.c, verify.c and
 * workload.c, never the engine or a connection (docs/design.md,
 * "Architecture").
 */
#include "client/bench/engine_int.h"

#include "client/bench/cluster.h"
#include "common/alloc.h"
#include "common/defs.h"

void
brim_bench_resend_remove(struct brim_bench_thread *t, uint32_t i)
{
    t->rq[i] = t->rq[--t->nrq];
}

void
brim_bench_resend_fail(struct brim_bench_thread    *t,
                       const struct brim_bench_req *req, const char *why)
{
    t->cnt[t->phase].errors++;
    brim_bench_log(t, "key %llu: %s", (unsigned long long) req->key, why);
    if (t->o->verify && req->kind != BRIM_BENCH_GET) {
        brim_bench_verify_write_done(
            &t->ver, brim_bench_mix_local(&t->mix, req->key), req->seq, 0);
    }
}

void
brim_bench_resend_add(struct brim_bench_thread    *t,
                      const struct brim_bench_req *req, int status,
                      uint64_t epoch, uint64_t now)
{
    struct brim_bench_counts *cnt = &t->cnt[t->phase];
    struct brim_bench_retry  *e, *grown;
    uint64_t                  timeout_ns, backoff, cur;
    uint32_t                  cap;

    if (status == BRIM_EMOVED) {
        cnt->moved++;
    } else if (status == BRIM_ERETRY || status == BRIM_EBUSY) {
        cnt->retry++;
    } else {
        cnt->resent++;
    }
    timeout_ns = (uint64_t) t->o->timeout_ms * 1000000u;
    if (req->start_ns != 0 && now > req->start_ns
        && now - req->start_ns > timeout_ns)
    {
        /* (start_ns 0: never flushed, so it starts now; see below.) */
        brim_bench_resend_fail(t, req, "timed out while redirected or retried");
        return;
    }
    if (t->nrq == t->rq_cap) {
        cap = t->rq_cap == 0 ? 64 : t->rq_cap * 2;
        grown = brim_realloc(t->rq, (size_t) cap * sizeof(*grown));
        if (grown == NULL) {
            brim_bench_resend_fail(t, req, "out of memory to resend");
            return;
        }
        t->rq = grown;
        t->rq_cap = cap;
    }
    e = &t->rq[t->nrq++];
    e->req = *req;
    if (e->req.start_ns == 0) {
        /* Queued on its connection but never written (conn_flush()
         * stamps it): its wait starts now, not at the epoch of time 0. */
        e->req.start_ns = now;
    }
    e->attempts = req->tries;
    cur = t->route != NULL ? t->route->epoch : 0;
    e->need_epoch = epoch > cur ? epoch : 0;
    if (e->need_epoch != 0) {
        brim_bench_cluster_want(t->sh, epoch);
    }
    backoff = 0;
    if (status != BRIM_EMOVED || e->need_epoch == 0) {
        backoff = BRIM_BENCH_RESEND_BACKOFF_NS << BRIM_MIN(req->tries, 7u);
        backoff = BRIM_MIN(backoff, BRIM_BENCH_RESEND_BACKOFF_MAX_NS);
    }
    e->due_ns = now + backoff;
}
