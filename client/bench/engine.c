/*
 * client/bench/engine.c - the event loop of engine.h: epoll,
 * level-triggered, EPOLLOUT armed only while a write is blocked, and a
 * nanosecond wait (epoll_pwait2) so that --rate sends on time. It draws
 * ops, places each on a connection of its node with room (conn.c does the
 * rest), sends again what waits in resend.c's queue, ends a phase on its
 * deadline or op count once the replies are in, and does the
 * housekeeping: timeouts, reconnects, progress. The top of the engine:
 * nothing in conn.c, resend.c or log.c calls it.
 */
#include "client/bench/engine_int.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/epoll.h>

#include "client/bench/cluster.h"
#include "client/bench/rcluster.h"
#include "client/net/sock.h"
#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"

/* epoll events taken per wait. */
#define ENGINE_EVENTS 128

/* Set by brim_bench_request_stop() (a signal handler): every measuring
 * loop stops issuing at its next pass, as at the end of --duration. */
static atomic_int engine_stop_asked;
/* How long a resend waits for the map of the epoch a node reported
 * before it goes with the map it has, ns. */
#define ENGINE_EPOCH_WAIT_NS 50000000ull

/*
 * The node that serves KEY: node 0 with --server; with --coordinator the
 * owner of KEY's partition in T's route (brim_hash_key() under the
 * cluster seed, then brim_partition_of(), as every node computes it);
 * with redis-cluster the master of KEY's hash slot in T's slot map.
 */
static uint32_t
engine_route(const struct brim_bench_thread *t, uint64_t key)
{
    const struct brim_bench_route *r = t->route;
    char                           buf[BRIM_BENCH_KEY_MAX];
    size_t                         len;

    if (r == NULL) {
        return 0;
    }
    len = brim_bench_key_format(buf, key, t->o->key_size);
    if (t->slot_owner != NULL) {
        return t->slot_owner[brim_bench_rcluster_slot(buf, len)];
    }
    return r->owner[brim_partition_of(brim_hash_key(r->seed, buf, len),
                                      r->partitions)];
}

/*
 * --coordinator: take up the newest route. Nodes new to it get this
 * thread's connections; connections to nodes no longer in the map close
 * once nothing is in flight on them (engine_tick() looks again).
 */
static void
engine_sync(struct brim_bench_thread *t)
{
    struct brim_bench_route *r;
    struct brim_bench_conn  *c;
    char                     errbuf[BRIM_ERRBUF_LEN];
    uint32_t                 i;
    int                      changed;

    if (t->sh->cl == NULL) {
        return;
    }
    r = atomic_load_explicit(&t->sh->route, memory_order_acquire);
    if (r == t->route) {
        return;
    }
    changed = 1;
    t->route = r;
    if (t->slot_owner != NULL) {
        /* The new map supersedes what MOVED replies taught: if it is
         * older than they were, they will teach it again. */
        memcpy(t->slot_owner, r->owner,
               BRIM_BENCH_RCLUSTER_SLOTS * sizeof(*t->slot_owner));
    }
    for (i = 0; i < t->nconns; i++) {
        c = &t->conns[i];
        if (c->node >= r->nnodes) {
            break; /* grouped by node: the rest are unknown yet */
        }
        if (c->node >= t->opened && r->live[c->node] && c->link.fd < 0) {
            if (c->fifo == NULL) {
                c->fifo = brim_calloc(c->cap, sizeof(*c->fifo));
                if (c->fifo == NULL) {
                    brim_bench_log_fatal(t, "out of memory");
                    return;
                }
            }
            if (brim_bench_conn_open(c, errbuf) != 0) {
                brim_bench_log(t, "connection %u: %s", c->index, errbuf);
                c->reconnect_ns = brim_sock_now_ns() + BRIM_BENCH_RECONNECT_NS;
            }
            changed = 1;
        } else if (!r->live[c->node] && c->link.fd >= 0 && c->n == 0) {
            brim_bench_conn_close(c);
            changed = 1;
        }
    }
    if (r->nnodes > t->opened) {
        t->opened = r->nnodes;
    }
    if (changed) {
        brim_bench_conn_recount_room(t);
    }
}
/* ---- issuing ---- */

/* Open loop: how many ops are due by NOW. */
static uint64_t
engine_due(const struct brim_bench_thread *t, uint64_t now)
{
    if (now < t->ol_start_ns) {
        return 0;
    }
    return (uint64_t) ((double) (now - t->ol_start_ns) * t->rate_per_ns) + 1;
}

/* Open loop: the intended send time of op number K. */
static uint64_t
engine_intended(const struct brim_bench_thread *t, uint64_t k)
{
    return t->ol_start_ns + (uint64_t) ((double) k / t->rate_per_ns);
}

/* May T draw another op at NOW? */
static int
engine_may_draw(const struct brim_bench_thread *t, uint64_t now)
{
    if (t->stopping || t->fatal) {
        return 0;
    }
    if (t->limit != 0 && t->issued >= t->limit) {
        return 0;
    }
    if (t->rate_per_ns > 0) {
        return t->ol_sent < engine_due(t, now);
    }
    return 1;
}

/* Draw T's next op into *OP. */
static void
engine_draw(struct brim_bench_thread *t, struct brim_bench_op *op)
{
    if (t->phase == BRIM_BENCH_PRELOAD) {
        memset(op, 0, sizeof(*op));
        op->kind = BRIM_BENCH_SET;
        op->key = brim_bench_mix_global(&t->mix, t->preload_next++);
        op->value_len = brim_bench_mix_value_len(&t->mix, &t->rng);
    } else {
        brim_bench_mix_next(&t->mix, &t->rng, op);
        if (t->rate_per_ns > 0) {
            op->start_ns = engine_intended(t, t->ol_sent++);
        }
    }
    t->issued++;
}

/* A connection to NODE with room, HINT if it is one, or NULL. */
static struct brim_bench_conn *
engine_place_on(struct brim_bench_thread *t, uint32_t node,
                struct brim_bench_conn *hint)
{
    struct brim_bench_conn *c;
    uint32_t                i, j;

    if (hint != NULL && hint->node == node && brim_bench_conn_has_room(hint)) {
        return hint;
    }
    if (t->nroom[node] == 0) {
        return NULL;
    }
    /* Connections of one node are consecutive; start where the last
     * search ended so that load spreads evenly. */
    for (i = 0; i < t->nconns; i++) {
        j = (t->rr[node] + i) % t->nconns;
        c = &t->conns[j];
        if (c->node == node && brim_bench_conn_has_room(c)) {
            t->rr[node] = (j + 1) % t->nconns;
            return c;
        }
    }
    return NULL;
}

/* A connection to KEY's node with room, HINT if it is one, or NULL. */
static struct brim_bench_conn *
engine_place(struct brim_bench_thread *t, uint64_t key,
             struct brim_bench_conn *hint)
{
    return engine_place_on(t, engine_route(t, key), hint);
}

/* Send what waits in T's resend queue and may go at NOW. */
static void
engine_issue_retries(struct brim_bench_thread *t, uint64_t now)
{
    struct brim_bench_retry *e;
    struct brim_bench_conn  *c;
    uint64_t                 timeout_ns;
    uint32_t                 i;

    timeout_ns = (uint64_t) t->o->timeout_ms * 1000000u;
    i = 0;
    while (i < t->nrq && !t->fatal) {
        e = &t->rq[i];
        if (now > e->req.start_ns && now - e->req.start_ns > timeout_ns) {
            brim_bench_resend_fail(t, &e->req,
                                   "timed out while redirected or retried");
            brim_bench_resend_remove(t, i);
            continue;
        }
        if (now < e->due_ns
            || (e->need_epoch > t->route->epoch
                && now < e->due_ns + ENGINE_EPOCH_WAIT_NS))
        {
            i++;
            continue;
        }
        /* An ASK sends this one request to the node it names, while the
         * map has it (else the map's master answers again). */
        if (e->ask_node != UINT32_MAX && !t->route->live[e->ask_node]) {
            e->ask_node = UINT32_MAX;
            e->req.asking = 0;
        }
        c = e->ask_node != UINT32_MAX ? engine_place_on(t, e->ask_node, NULL)
                                      : engine_place(t, e->req.key, NULL);
        if (c == NULL) {
            i++;
            continue;
        }
        brim_bench_conn_resend(c, &e->req, now);
        brim_bench_resend_remove(t, i);
    }
}

/*
 * Send ops while T may: the op drawn earlier that found no room first,
 * then new ones. An op that finds its node's connections full waits as
 * T->blocked, and no other op is drawn meanwhile (a closed loop's client
 * blocks).
 */
static void
engine_issue(struct brim_bench_thread *t, struct brim_bench_conn *hint,
             uint64_t now)
{
    struct brim_bench_conn *c;

    if (t->nrq > 0) {
        engine_issue_retries(t, now);
        /* A closed loop's client waits for its redirected requests. */
        if (t->nrq > 0 && t->rate_per_ns == 0) {
            return;
        }
    }
    for (;;) {
        if (!t->has_blocked) {
            if (!engine_may_draw(t, now)) {
                return;
            }
            engine_draw(t, &t->blocked);
            t->has_blocked = 1;
        }
        c = engine_place(t, t->blocked.key, hint);
        if (c == NULL || t->fatal) {
            return;
        }
        t->has_blocked = 0;
        brim_bench_conn_send(c, &t->blocked, now);
    }
}

/* Write the output of every connection that has some. */
static void
engine_flush_dirty(struct brim_bench_thread *t)
{
    struct brim_bench_conn *c;

    while (t->dirty != NULL) {
        c = t->dirty;
        t->dirty = c->next_dirty;
        c->dirty = 0;
        brim_bench_conn_flush(c);
    }
}

/* ---- the loop ---- */

/* Stop drawing new ops: the phase ends once the replies are in. */
static void
engine_stop(struct brim_bench_thread *t, uint64_t now)
{
    struct brim_bench_counts *cnt = &t->cnt[t->phase];
    uint64_t                  due;

    if (t->stopping && t->stop_ns != 0) {
        return;
    }
    t->stopping = 1;
    t->stop_ns = now;
    if (t->rate_per_ns > 0) {
        /* What the server could not take in time is reported, not
         * hidden: it is the backlog an open loop builds. */
        due = engine_due(t, now);
        if (t->limit != 0 && due > t->limit) {
            due = t->limit;
        }
        cnt->unsent = (due > t->ol_sent ? due - t->ol_sent : 0)
            + (t->has_blocked ? 1 : 0);
    }
    t->has_blocked = 0;
}

/* Timeouts, reconnects and progress, every BRIM_BENCH_TICK_NS. */
static void
engine_tick(struct brim_bench_thread *t, uint64_t now)
{
    struct brim_bench_conn *c;
    char                    errbuf[BRIM_ERRBUF_LEN];
    uint64_t                timeout_ns;
    uint32_t                i, alive, pending;

    t->next_tick_ns = now + BRIM_BENCH_TICK_NS;
    timeout_ns = (uint64_t) t->o->timeout_ms * 1000000u;
    alive = pending = 0;
    for (i = 0; i < t->nconns; i++) {
        c = &t->conns[i];
        /* sent_ns may lie a little after NOW: conn_flush() stamps it. */
        if (c->link.fd >= 0 && c->n > 0 && now > c->fifo[c->head].sent_ns
            && now - c->fifo[c->head].sent_ns > timeout_ns)
        {
            brim_bench_conn_fail(c, "request timed out");
        }
        if (c->link.fd >= 0 && c->link.state != BRIM_LINK_READY
            && now - c->opened_ns > timeout_ns)
        {
            brim_bench_conn_fail(c, "no HELLO reply in time");
        }
        if (t->route != NULL && c->node < t->route->nnodes
            && !t->route->live[c->node]) {
            c->reconnect_ns = 0; /* left the map */
            if (c->link.fd >= 0 && c->n == 0) {
                brim_bench_conn_close(c);
                brim_bench_conn_recount_room(t);
            }
        }
        if (c->link.fd < 0 && c->reconnect_ns != 0 && now >= c->reconnect_ns) {
            c->retries++;
            c->reconnect_ns = 0;
            if (brim_bench_conn_open(c, errbuf) == 0) {
                brim_bench_conn_recount_room(t);
            } else {
                brim_bench_log(t, "connection %u: %s", c->index, errbuf);
                if (t->route != NULL) {
                    /* Refused: the node may be dead; a newer map says. */
                    brim_bench_cluster_want(t->sh, t->route->epoch + 1);
                }
                if (c->retries < BRIM_BENCH_RECONNECTS) {
                    c->reconnect_ns =
                        now + BRIM_BENCH_RECONNECT_NS * (c->retries + 1);
                }
            }
        }
        alive += c->link.fd >= 0;
        pending += c->link.fd < 0 && c->reconnect_ns != 0;
    }
    if (alive == 0 && pending == 0 && t->nrq == 0) {
        brim_bench_log_fatal(t, "every connection failed");
    }
    if (t->stopping && now - t->stop_ns > timeout_ns) {
        while (t->nrq > 0) {
            brim_bench_resend_fail(t, &t->rq[0].req,
                                   "not resent while draining");
            brim_bench_resend_remove(t, 0);
        }
    }
    if (t->stopping && t->inflight > 0 && now - t->stop_ns > timeout_ns) {
        for (i = 0; i < t->nconns; i++) {
            if (t->conns[i].n > 0) {
                brim_bench_conn_fail(&t->conns[i], "no reply while draining");
            }
        }
    }
    if (t->phase == BRIM_BENCH_PRELOAD) {
        atomic_store_explicit(&t->progress, t->cnt[0].ops + t->cnt[0].errors,
                              memory_order_relaxed);
    }
}

/* How long the loop may wait at NOW for I/O before it has work. */
static void
engine_wait_for(const struct brim_bench_thread *t, uint64_t now,
                struct timespec *ts)
{
    uint64_t wake;

    wake = t->next_tick_ns;
    if (!t->stopping) {
        if (t->deadline_ns != 0 && t->deadline_ns < wake) {
            wake = t->deadline_ns;
        }
        if (t->rate_per_ns > 0 && !t->has_blocked) {
            wake = BRIM_MIN(wake, engine_intended(t, t->ol_sent));
        }
    }
    if (t->nrq > 0) {
        wake = BRIM_MIN(wake, now + BRIM_BENCH_RESEND_BACKOFF_NS);
    }
    wake = wake > now ? wake - now : 0;
    ts->tv_sec = (time_t) (wake / 1000000000u);
    ts->tv_nsec = (long) (wake % 1000000000u);
}

/* Wait for events, with a nanosecond timeout where the kernel has one. */
static int
engine_wait(struct brim_bench_thread *t, struct epoll_event *evs,
            const struct timespec *ts)
{
    static _Thread_local int no_pwait2;
    int                      n, ms;

    if (!no_pwait2) {
        n = epoll_pwait2(t->ep, evs, ENGINE_EVENTS, ts, NULL);
        if (n >= 0 || errno != ENOSYS) {
            return n;
        }
        no_pwait2 = 1; /* before Linux 5.11: milliseconds */
    }
    ms = (int) (ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000);
    return epoll_wait(t->ep, evs, ENGINE_EVENTS, ms);
}

/* Set up T's state for PHASE. */
static void
engine_begin(struct brim_bench_thread *t, int phase, uint64_t now)
{
    const struct brim_bench_opts *o = t->o;

    t->phase = phase;
    t->issued = 0;
    t->stopping = 0;
    t->stop_ns = 0;
    t->has_blocked = 0;
    t->rate_per_ns = 0;
    t->deadline_ns = 0;
    t->ol_sent = 0;
    if (phase == BRIM_BENCH_PRELOAD) {
        t->depth = BRIM_MAX(o->pipeline, BRIM_BENCH_PRELOAD_DEPTH);
        t->limit = t->mix.nlocal;
        t->preload_next = 0;
    } else {
        t->depth = o->pipeline;
        t->limit = t->ops_limit;
        if (o->duration_s > 0) {
            t->deadline_ns = t->sh->start_ns + (uint64_t) (o->duration_s * 1e9);
        }
        if (o->rate > 0) {
            t->rate_per_ns = o->rate / o->threads / 1e9;
            t->ol_start_ns = t->sh->start_ns;
        }
        t->last_reply_ns = now;
    }
    t->next_tick_ns = now + BRIM_BENCH_TICK_NS;
    brim_bench_conn_recount_room(t);
}

void
brim_bench_request_stop(void)
{
    atomic_store(&engine_stop_asked, 1);
}

int
brim_bench_engine_run(struct brim_bench_thread *t, int phase)
{
    struct epoll_event      evs[ENGINE_EVENTS];
    struct brim_bench_conn *c;
    struct timespec         ts;
    uint64_t                now, read_ns;
    int                     n, i;

    now = brim_sock_now_ns();
    engine_sync(t);
    engine_begin(t, phase, now);
    engine_issue(t, NULL, now);
    engine_flush_dirty(t);
    while (!t->fatal && !(t->stopping && t->inflight == 0 && t->nrq == 0)) {
        engine_wait_for(t, now, &ts);
        n = engine_wait(t, evs, &ts);
        if (n < 0 && errno != EINTR) {
            brim_bench_log_fatal(t, "epoll_wait: %s", strerror(errno));
            break;
        }
        for (i = 0; i < n; i++) {
            c = evs[i].data.ptr;
            if (c->link.fd >= 0
                && (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                && brim_bench_conn_readable(c, &read_ns))
            {
                /* Closed loop: what this read completed is drawn again at
                 * once, and goes out with the rest of C's output at the
                 * end of the loop pass, after every readable connection
                 * was served (as redis-benchmark does): a server then
                 * finds many requests per wake-up. */
                engine_issue(t, c, read_ns);
            }
            if (c->link.fd >= 0 && (evs[i].events & EPOLLOUT)) {
                brim_bench_conn_flush(c);
            }
        }
        engine_sync(t);
        now = brim_sock_now_ns();
        if (now >= t->next_tick_ns) {
            engine_tick(t, now);
        }
        if (!t->stopping
            && ((t->deadline_ns != 0 && now >= t->deadline_ns)
                || (t->limit != 0 && t->issued >= t->limit && !t->has_blocked)
                || (phase == BRIM_BENCH_MEASURE
                    && atomic_load(&engine_stop_asked) != 0)))
        {
            engine_stop(t, now);
        }
        engine_issue(t, NULL, now);
        engine_flush_dirty(t);
    }
    if (phase == BRIM_BENCH_PRELOAD) {
        atomic_store_explicit(&t->progress, t->cnt[0].ops + t->cnt[0].errors,
                              memory_order_relaxed);
    }
    return t->fatal ? -1 : 0;
}

/* ---- setup ---- */

int
brim_bench_thread_init(struct brim_bench_thread *t,
                       struct brim_bench_shared *sh, uint32_t id,
                       uint32_t nconns, char errbuf[BRIM_ERRBUF_LEN])
{
    const struct brim_bench_opts *o = sh->o;
    struct brim_bench_mix_conf    mc;
    struct brim_bench_conn       *c;
    uint64_t                      seed;
    uint32_t                      i, cap;
    size_t                        vcap;
    int                           rc;

    memset(t, 0, sizeof(*t));
    t->ep = -1;
    t->id = id;
    t->sh = sh;
    t->o = o;
    t->proto = o->proto;
    atomic_init(&t->progress, 0);
    atomic_init(&t->setup_done, 0);
    brim_bench_hist_reset(&t->hist);
    /* Each thread's stream derives from the seed and its index only. */
    seed = o->seed ^ (0x9e3779b97f4a7c15ull * (id + 1));
    brim_rng_seed(&t->rng, brim_splitmix64(&seed));
    t->ops_limit = o->ops / o->threads + (id < o->ops % o->threads);

    memset(&mc, 0, sizeof(mc));
    mc.keys = o->keys;
    mc.threads = o->threads;
    mc.thread = id;
    mc.get_ratio = o->get_ratio;
    mc.del_ratio = o->del_ratio;
    mc.ttl_ratio = o->ttl_ratio;
    mc.zipf_s = o->zipf;
    mc.value_min = o->value_min;
    mc.value_max = o->value_max;
    mc.ttl_min_s = o->ttl_min_s;
    mc.ttl_max_s = o->ttl_max_s;
    if (brim_bench_mix_init(&t->mix, &mc) != 0) {
        brim_errfmt(errbuf, "bad workload parameters");
        return BRIM_EINVAL;
    }
    if (o->verify
        && brim_bench_verify_init(&t->ver, t->mix.nlocal,
                                  (uint64_t) o->slack_ms * 1000000u)
            != 0)
    {
        brim_errfmt(errbuf, "out of memory for the verifier");
        return BRIM_ENOMEM;
    }
    vcap = (size_t) o->value_max + BRIM_BENCH_VHDR_MAX + 1;
    t->value = brim_malloc(vcap);
    t->nroom = brim_calloc(sh->nnodes, sizeof(*t->nroom));
    t->rr = brim_calloc(sh->nnodes, sizeof(*t->rr));
    /* --coordinator: slots for every node a run may meet, grouped by
     * node; those of nodes not in the map yet stay closed. */
    t->nconns = nconns * sh->nnodes;
    t->route = atomic_load(&sh->route);
    t->conns = brim_calloc(t->nconns, sizeof(*t->conns));
    if (t->route != NULL && t->route->slots) {
        t->slot_owner =
            brim_malloc(BRIM_BENCH_RCLUSTER_SLOTS * sizeof(*t->slot_owner));
        if (t->slot_owner != NULL) {
            memcpy(t->slot_owner, t->route->owner,
                   BRIM_BENCH_RCLUSTER_SLOTS * sizeof(*t->slot_owner));
        }
    }
    if (t->value == NULL || t->nroom == NULL || t->rr == NULL
        || t->conns == NULL
        || (t->route != NULL && t->route->slots && t->slot_owner == NULL))
    {
        brim_errfmt(errbuf, "out of memory");
        return BRIM_ENOMEM;
    }
    /* Values are not verified without --verify: any bytes will do. */
    for (i = 0; i < vcap; i++) {
        t->value[i] = (char) ('a' + i % 26);
    }
    t->ep = epoll_create1(EPOLL_CLOEXEC);
    if (t->ep < 0) {
        brim_errfmt(errbuf, "epoll_create1: %s", strerror(errno));
        return BRIM_ESYS;
    }
    cap = BRIM_MAX(o->pipeline, BRIM_BENCH_PRELOAD_DEPTH) + 1;
    for (i = 0; i < t->nconns; i++) {
        c = &t->conns[i];
        c->t = t;
        c->link.fd = -1; /* its link is made at the first open */
        c->index = i;
        c->node = i / nconns;
        c->cap = cap;
        if (t->route != NULL
            && (c->node >= t->route->nnodes || !t->route->live[c->node]))
        {
            continue; /* opened by engine_sync() if it joins */
        }
        c->fifo = brim_calloc(cap, sizeof(*c->fifo));
        if (c->fifo == NULL) {
            brim_errfmt(errbuf, "out of memory");
            return BRIM_ENOMEM;
        }
        rc = brim_bench_conn_open(c, errbuf);
        if (rc != 0) {
            return rc;
        }
    }
    if (t->route != NULL) {
        t->opened = t->route->nnodes;
    }
    return 0;
}

void
brim_bench_thread_destroy(struct brim_bench_thread *t)
{
    struct brim_bench_conn *c;
    uint32_t                i;

    for (i = 0; t->conns != NULL && i < t->nconns; i++) {
        c = &t->conns[i];
        brim_link_destroy(&c->link); /* closes its socket */
        if (c->pctx != NULL) {
            t->proto->close(c->pctx);
        }
        brim_free(c->fifo);
    }
    if (t->ep >= 0) {
        close(t->ep);
    }
    brim_free(t->conns);
    brim_free(t->rq);
    t->rq = NULL;
    brim_free(t->slot_owner);
    t->slot_owner = NULL;
    brim_free(t->nroom);
    brim_free(t->rr);
    brim_free(t->value);
    brim_free(t->lat);
    t->lat = NULL;
    if (t->o != NULL && t->o->verify) {
        brim_bench_verify_destroy(&t->ver);
    }
    t->conns = NULL;
    t->ep = -1;
}
