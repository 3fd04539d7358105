/*
 * client/bench/resend.c - brim-bench --coordinator's resend queue
 * (T->rq, engine_int.h): the requests answered MOVED, RETRY or BUSY (and
 * redis-cluster's MOVED, ASK, TRYAGAIN and CLUSTERDOWN), or lost with
 * their connection, that must go again, each with the map
 * epoch it waits for and its backoff; and the ones that cannot, counted
 * as errors. conn.c fills it and engine.c drains it (the engine's loop
 * places each request on a connection again), so it sits below both:
 * it calls cluster.c (ask for a newer map), log.c, verify.c and
 * workload.c, never the engine or a connection (docs/design.md,
 * "Architecture").
 */
#include "client/bench/engine_int.h"

#include <stdio.h>
#include <string.h>

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

/*
 * Queue REQ (borrowed, copied) to go again at NOW + BACKOFF once the map
 * of NEED_EPOCH is in (0: any); the new entry, or NULL when REQ failed
 * instead (past its timeout, or out of memory).
 */
static struct brim_bench_retry *
resend_queue(struct brim_bench_thread *t, const struct brim_bench_req *req,
             uint64_t need_epoch, uint64_t backoff, uint64_t now)
{
    struct brim_bench_retry *e, *grown;
    uint64_t                 timeout_ns;
    uint32_t                 cap;

    timeout_ns = (uint64_t) t->o->timeout_ms * 1000000u;
    if (req->start_ns != 0 && now > req->start_ns
        && now - req->start_ns > timeout_ns)
    {
        /* (start_ns 0: never flushed, so it starts now; see below.) */
        brim_bench_resend_fail(t, req, "timed out while redirected or retried");
        return NULL;
    }
    if (t->nrq == t->rq_cap) {
        cap = t->rq_cap == 0 ? 64 : t->rq_cap * 2;
        grown = brim_realloc(t->rq, (size_t) cap * sizeof(*grown));
        if (grown == NULL) {
            brim_bench_resend_fail(t, req, "out of memory to resend");
            return NULL;
        }
        t->rq = grown;
        t->rq_cap = cap;
    }
    e = &t->rq[t->nrq++];
    e->req = *req;
    e->req.asking = 0;
    if (e->req.start_ns == 0) {
        /* Queued on its connection but never written (conn_flush()
         * stamps it): its wait starts now, not at the epoch of time 0. */
        e->req.start_ns = now;
    }
    e->attempts = req->tries;
    e->need_epoch = need_epoch;
    e->ask_node = UINT32_MAX;
    e->due_ns = now + backoff;
    return e;
}

/* RETRY backoff for a request resent TRIES times so far, ns. */
static uint64_t
resend_backoff(uint32_t tries)
{
    uint64_t backoff;

    backoff = BRIM_BENCH_RESEND_BACKOFF_NS << BRIM_MIN(tries, 7u);
    return BRIM_MIN(backoff, BRIM_BENCH_RESEND_BACKOFF_MAX_NS);
}

void
brim_bench_resend_add(struct brim_bench_thread    *t,
                      const struct brim_bench_req *req, int status,
                      uint64_t epoch, uint64_t now)
{
    struct brim_bench_counts *cnt = &t->cnt[t->phase];
    uint64_t                  backoff, cur, need;

    if (status == BRIM_EMOVED) {
        cnt->moved++;
    } else if (status == BRIM_ERETRY || status == BRIM_EBUSY) {
        cnt->retry++;
        if (t->slot_owner != NULL) {
            /* redis-cluster TRYAGAIN or CLUSTERDOWN: read the map again.
             * A master that del-node has reset (CLUSTER RESET SOFT)
             * answers CLUSTERDOWN, not MOVED, for the slots it gave
             * away, so a map read before the last of them moved would
             * keep sending there until the request times out. */
            brim_bench_cluster_want(t->sh, t->route->epoch + 1);
        }
    } else {
        cnt->resent++;
    }
    cur = t->route != NULL ? t->route->epoch : 0;
    need = epoch > cur ? epoch : 0;
    backoff = 0;
    if (status != BRIM_EMOVED || need == 0) {
        backoff = resend_backoff(req->tries);
    }
    if (resend_queue(t, req, need, backoff, now) != NULL && need != 0) {
        brim_bench_cluster_want(t->sh, epoch);
    }
}

/* The node of T's route whose name is NAME, or UINT32_MAX. NAME (LEN
 * bytes, from a redirect) gets the --server's host when it has none. */
static uint32_t
resend_node_named(const struct brim_bench_thread *t, const char *addr,
                  size_t len, char name[2 * BRIM_BENCH_ADDR_MAX + 2])
{
    const struct brim_bench_node *n;
    uint32_t                      i;

    if (len > 0 && addr[0] == ':') {
        snprintf(name, 2 * BRIM_BENCH_ADDR_MAX + 2, "%s%.*s", t->o->host,
                 (int) len, addr);
    } else {
        snprintf(name, 2 * BRIM_BENCH_ADDR_MAX + 2, "%.*s", (int) len, addr);
    }
    for (i = 0; i < t->route->nnodes; i++) {
        n = &t->sh->nodes[i];
        if (t->route->live[i] && strcmp(n->name, name) == 0) {
            return i;
        }
    }
    return UINT32_MAX;
}

void
brim_bench_resend_redirect(struct brim_bench_thread    *t,
                           const struct brim_bench_req *req,
                           const struct brim_bench_rep *rep, uint64_t now)
{
    struct brim_bench_retry *e;
    char                     name[2 * BRIM_BENCH_ADDR_MAX + 2];
    uint64_t                 need, backoff;
    uint32_t                 node;

    node = resend_node_named(t, rep->addr, rep->addr_len, name);
    if (rep->ask) {
        t->cnt[t->phase].ask++;
    } else {
        t->cnt[t->phase].moved++;
        /* The slot has a new master: every key of it goes there from now
         * on, and the whole map is read again, as other slots may have
         * moved too (redis.io, "Redis cluster specification"). */
        if (node != UINT32_MAX) {
            t->slot_owner[rep->slot] = node;
        }
        brim_bench_cluster_want(t->sh, t->route->epoch + 1);
    }
    /* A node the map does not know yet (a master new to the cluster):
     * wait a little for the refreshed map, then go by the map (an ASK
     * comes again, to a node known by then). */
    need = 0;
    backoff = req->tries == 0 ? 0 : resend_backoff(req->tries);
    if (node == UINT32_MAX) {
        need = t->route->epoch + 1;
        if (rep->ask && strlen(name) <= BRIM_BENCH_ADDR_MAX) {
            brim_bench_cluster_want_node(t->sh, name);
        } else {
            brim_bench_cluster_want(t->sh, need);
        }
        backoff = resend_backoff(req->tries);
    }
    e = resend_queue(t, req, need, backoff, now);
    if (e != NULL && rep->ask && node != UINT32_MAX) {
        e->ask_node = node;
        e->req.asking = 1;
    }
}
