/*
 * server/node/migrate_recv.c - the receiving side of migration (DESIGN.md
 * 7 steps 3-5, PROTOCOL.md section 11): the stream ops a node serves
 * (STREAM_BEGIN, _BATCH, _END from the old owner; COMPLETE and
 * STREAM_QUERY, which it serves as the old owner; FORWARD_GET and PULL
 * go to migrate_read.c), the COMPLETEs it owes old owners, and the probe
 * that asks the source of a partition gone quiet whether more will come,
 * so that no partition stays in flight for good.
 */
#include "server/node/migrate_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "server/log.h"
#include "server/node/flush.h"
#include "server/node/epoch.h"

/* ---- COMPLETE to old owners ---- */

void
mig_complete_queue(struct brim_migrate *m, uint64_t epoch, uint32_t p,
                   struct brim_node_link *link)
{
    struct mig_cpend *nc;
    uint32_t          cap;

    if (m->ncpend == m->cap_cpend) {
        cap = m->cap_cpend == 0 ? 64 : 2 * m->cap_cpend;
        nc = brim_calloc(cap, sizeof(*nc));
        if (nc == NULL) {
            /* The old owner drops its copy MIG_COMPLETE_WAIT_MS after END
             * anyway; COMPLETE only makes that sooner. */
            return;
        }
        if (m->ncpend > 0) {
            memcpy(nc, m->cpend, m->ncpend * sizeof(*nc));
        }
        brim_free(m->cpend);
        m->cpend = nc;
        m->cap_cpend = cap;
    }
    m->cpend[m->ncpend].epoch = epoch;
    m->cpend[m->ncpend].p = p;
    m->cpend[m->ncpend].link = link;
    m->ncpend++;
    mig_send_completes(m);
}

static void
complete_rep(struct brim_peer *p, int status, const char *body, size_t len,
             void *arg)
{
    (void) p, (void) status, (void) body, (void) len, (void) arg;
}

void
mig_send_completes(struct brim_migrate *m)
{
    struct mig_cpend *cp;
    struct brim_req   req;
    struct brim_buf   buf;
    uint32_t          i = 0;

    while (i < m->ncpend) {
        cp = &m->cpend[i];
        if (!brim_link_ensure(cp->link)) {
            i++; /* its link is being made */
            continue;
        }
        memset(&req, 0, sizeof(req));
        req.op = BRIM_OP_COMPLETE;
        req.request_id = ++cp->link->next_id;
        req.epoch = m->node->topo.committed.map.epoch;
        req.arg_epoch = cp->epoch;
        req.partition = cp->p;
        brim_buf_init(&buf);
        if (brim_wire_encode_req(&buf, &req) == 0) {
            (void) brim_peer_call(&cp->link->peer, &buf, complete_rep, NULL);
        }
        brim_buf_destroy(&buf);
        m->cpend[i] = m->cpend[--m->ncpend];
    }
}

/* ---- stream ops ---- */

/* STREAM_END of partition P came in: every key is here. Queue COMPLETE
 * for the old owner; the pump sends it on the forwarding connection once
 * no forward of P is unanswered (DESIGN.md 7 step 5). */
static void
in_end(struct brim_migrate *m, uint32_t p)
{
    const struct brim_topo   *cur = &m->node->topo.committed;
    const struct brim_member *sm;
    struct brim_node_link    *d;
    uint16_t                  src = m->in_src[p];

    mig_in_finish(m, p);
    m->stats.partitions_in_done++;
    sm = src == MIG_NO_SRC ? NULL : brim_topo_source(cur, src);
    if (sm == NULL || sm->addr[0] == '\0') {
        return; /* the sender drops after a while */
    }
    d = brim_link_get(&m->node->links, sm->addr);
    if (d != NULL) {
        mig_complete_queue(m, m->in_epoch[p], p, d);
    }
}

/* Insert the entries of one batch (checked by the decoder) for P. */
static int
mig_batch(struct brim_migrate *m, uint32_t p, const struct brim_req *req)
{
    struct brim_node      *node = m->node;
    struct brim_wire_entry e;
    uint64_t               h;
    uint32_t               i, now = (uint32_t) time(NULL);
    int                    rc;

    m->in_touch[p] = mig_touch_now(m);
    for (i = 0; i < req->nentries; i++) {
        brim_wire_req_entry(req, i, &e);
        h = brim_hash_key(brim_node_seed(node), e.key, e.key_len);
        if (brim_partition_of(h, node->cfg.partitions) != p) {
            return BRIM_EBADREQ;
        }
        /* Out of memory: the sender streams the partition again; what
         * was inserted stays, and is skipped then. */
        rc = mig_insert(m, p, h, &e, now);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

/*
 * Resume every link of the list *LIST (*N of them, room for *CAP), which
 * is emptied first: resuming dispatches what each link holds, which may
 * pause it (and others) again, into a fresh list.
 */
static void
links_resume_all(struct brim_conn ***list, uint32_t *n, uint32_t *cap)
{
    struct brim_conn **paused = *list;
    uint32_t           i, count = *n;

    *list = NULL;
    *n = 0;
    *cap = 0;
    for (i = 0; i < count; i++) {
        brim_conn_resume(paused[i]);
    }
    brim_free(paused);
}

/* The pace's window began again: the links paused for it read again. */
static void
in_resume_cb(uv_timer_t *t)
{
    struct brim_migrate *m = t->data;

    m->in_resume_armed = 0;
    links_resume_all(&m->in_paused, &m->nin_paused, &m->cap_in_paused);
}

/*
 * Defer C (it reads nothing more until resumed) and append it to the
 * list *LIST of *N links (room for *CAP). Returns 0, or BRIM_ENOMEM when
 * the list cannot grow: C is then left reading (a pause bounds latency,
 * not correctness).
 */
static int
links_defer(struct brim_conn ***list, uint32_t *n, uint32_t *cap,
            struct brim_conn *c)
{
    struct brim_conn **np;
    uint32_t           ncap;

    if (*n == *cap) {
        ncap = *cap == 0 ? 8 : 2 * *cap;
        np = brim_calloc(ncap, sizeof(*np));
        if (np == NULL) {
            return BRIM_ENOMEM;
        }
        if (*n > 0) {
            memcpy(np, *list, *n * sizeof(*np));
        }
        brim_free(*list);
        *list = np;
        *cap = ncap;
    }
    brim_conn_defer(c);
    (*list)[(*n)++] = c;
    return 0;
}

/*
 * The inserts spent this window's slice (DESIGN.md 13): C, the sender's
 * link, reads and dispatches nothing more until the next window. The
 * reply to its batch is already queued, so the sender may send the next
 * one; it waits in the socket. Without memory for the list C is not
 * paused (the slice is a bound on latency, not on correctness).
 */
static void
in_pause(struct brim_migrate *m, struct brim_conn *c, uint64_t now_ns)
{
    if (links_defer(&m->in_paused, &m->nin_paused, &m->cap_in_paused, c) != 0) {
        return;
    }
    m->stats.insert_pauses++;
    if (!m->in_resume_armed) {
        uv_timer_start(&m->in_resume, in_resume_cb,
                       mig_budget_wait_ms(&m->in_budget, now_ns), 0);
        m->in_resume_armed = 1;
    }
}

/*
 * The next turn of the loop (MIG_TURN_NS): the links paused at the end of
 * the last one read again, in the order they were paused, while this
 * turn has time (the first always: a stream always progresses). Those
 * left wait for the next turn, ahead of any a resumed link pauses again.
 */
static void
in_turn_resume(struct brim_migrate *m)
{
    struct brim_conn *c;
    uint32_t          i, n = m->nin_turn;

    for (i = 0; i < n && m->nin_turn > 0; i++) {
        if (i > 0 && !mig_turn_open(m)) {
            break;
        }
        c = m->in_turn[0];
        m->nin_turn--;
        memmove(m->in_turn, m->in_turn + 1, m->nin_turn * sizeof(*m->in_turn));
        brim_conn_resume(c); /* may pause it again, at the end */
    }
    if (m->nin_turn > 0) {
        mig_turn_defer(m, MIG_TURN_IN, in_turn_resume);
    }
}

/*
 * The inserts spent this turn's MIG_TURN_NS: C, the sender's link, reads
 * nothing more until the next turn of the loop, after the loop has
 * polled and served the clients. Without memory for the list C is not
 * paused (the turn is a bound on latency, not on correctness).
 */
static void
in_turn_pause(struct brim_migrate *m, struct brim_conn *c)
{
    if (links_defer(&m->in_turn, &m->nin_turn, &m->cap_in_turn, c) != 0) {
        return;
    }
    mig_turn_defer(m, MIG_TURN_IN, in_turn_resume);
}

void
mig_in_unpause(struct brim_migrate *m)
{
    if (m->in_resume_armed) {
        uv_timer_stop(&m->in_resume);
    }
    in_resume_cb(&m->in_resume);
    links_resume_all(&m->in_turn, &m->nin_turn, &m->cap_in_turn);
}

int
brim_migrate_serve(struct brim_node *node, struct brim_conn *c,
                   const struct brim_req *req)
{
    struct brim_migrate *m;
    uint64_t             id = req->request_id, e = req->arg_epoch;
    uint32_t             p = req->partition;
    int32_t              self;
    int                  rc;
    uint64_t             t0, t1;

    if ((uint32_t) (uintptr_t) c->data != BRIM_ROLE_NODE
        || node->cfg.standalone) {
        return mig_reply(c, id, BRIM_EDENIED,
                         "stream: only a node connection may stream");
    }
    if (p >= node->cfg.partitions) {
        return mig_reply(c, id, BRIM_EINVAL, "stream: no such partition");
    }
    m = mig_get(node);
    if (m == NULL) {
        return mig_reply(c, id, BRIM_ENOMEM, "stream: out of memory");
    }
    self = node->topo.self;
    if (req->op == BRIM_OP_FORWARD_GET || req->op == BRIM_OP_PULL) {
        return mig_serve_copy(m, c, req);
    }
    if (req->op == BRIM_OP_COMPLETE) {
        mig_complete(m, e, p);
        return mig_reply(c, id, 0, NULL);
    }
    if (req->op == BRIM_OP_STREAM_QUERY) {
        /* The new owner asks whether we still mean to stream P: we do
         * while we own it or a job of ours holds it. */
        return mig_holds(m, p) ? mig_reply(c, id, 0, NULL)
                               : mig_reply(c, id, BRIM_ERETRY,
                                           "stream: this node "
                                           "holds no copy of the partition");
    }
    if (req->op == BRIM_OP_STREAM_BEGIN) {
        if (node->topo.committed.map.epoch < e) {
            return mig_reply(c, id, BRIM_ERETRY,
                             "stream: epoch not "
                             "committed here yet");
        }
        if (self < 0 || node->topo.committed.map.owner[p] != (uint16_t) self
            || m->in_epoch[p] > e
            || (m->in_epoch[p] == e && m->in_state[p] == IN_DONE))
        {
            return mig_reply(c, id, BRIM_EEXISTS,
                             m->in_epoch[p] == e && m->in_state[p] == IN_DONE
                                 ? "stream: migration id complete here"
                                 : "stream: migration id superseded");
        }
        m->in_touch[p] = mig_touch_now(m);
        if (m->in_epoch[p] != e || m->in_state[p] != IN_FLIGHT) {
            /* Our commit did not expect it (its source is not a live
             * member or leaver of our epoch): writes made here since
             * were not tombstoned, so a stream could undo them. */
            return mig_reply(c, id, BRIM_EEXISTS,
                             "stream: this node "
                             "expects no stream of that partition");
        }
        return mig_reply(c, id, 0, NULL);
    }
    if (m->in_epoch[p] != e || m->in_state[p] != IN_FLIGHT) {
        return mig_reply(c, id, BRIM_EEXISTS,
                         "stream: migration id "
                         "superseded or complete");
    }
    if (req->op == BRIM_OP_STREAM_BATCH) {
        m->stats.batches_in++;
        if (brim_node_flush_stamp(node, req->flush_ms)) {
            /* Scanned before a flush applied here: every entry is older
             * than it. Accepted, so the stream goes on, and dropped. */
            node->flush.dropped += req->nentries;
            return mig_reply(c, id, 0, NULL);
        }
        t0 = uv_hrtime();
        mig_pace_tick(m, t0);
        (void) mig_budget_open(&m->in_budget, t0); /* a new window? */
        rc = mig_batch(m, p, req);
        t1 = uv_hrtime();
        m->in_budget.spent_ns += t1 - t0;
        mig_turn_spend(m, t1 - t0);
        if (rc != 0) {
            return mig_reply(c, id, rc,
                             rc == BRIM_EBADREQ
                                 ? "stream: an entry of another partition"
                                 : "stream: out of memory inserting the batch; "
                                   "send it again");
        }
        rc = mig_reply(c, id, 0, NULL);
        if (rc == 0 && !node->stopping && !brim_conn_closing(c)) {
            if (!mig_budget_open(&m->in_budget, t1)) {
                in_pause(m, c, t1);
            } else if (!mig_turn_open(m)) {
                in_turn_pause(m, c);
            }
        }
        return rc;
    }
    in_end(m, p);
    brim_log_debug("migrate: received partition %u of epoch %" PRIu64
                   " (%" PRIu64 " entries sent)",
                   p, e, req->count);
    return mig_reply(c, id, 0, NULL);
}

/* ---- asking the source about quiet partitions (STREAM_QUERY) ---- */

/* One STREAM_QUERY waiting for its answer. */
struct mig_probe {
    struct brim_migrate   *m;
    struct brim_node_link *d;     /* the source's link */
    uint64_t               epoch; /* the migration id asked about */
    uint32_t               p;
};

static void
probe_reply(struct brim_peer *peer, int status, const char *body, size_t len,
            void *arg)
{
    struct mig_probe    *q = arg;
    struct brim_migrate *m = q->m;
    struct brim_rep      rep;
    char                 errbuf[BRIM_ERRBUF_LEN];

    (void) peer;
    BRIM_ASSERT(m->probes_out > 0);
    m->probes_out--;
    m->in_probing[q->p] = 0;
    if (status == 0) {
        q->d->heard_ms = uv_now(m->node->loop);
        q->d->asked_ms = 0; /* it answers */
    }
    if (status == 0 && m->in_state[q->p] == IN_FLIGHT
        && m->in_epoch[q->p] == q->epoch
        && brim_wire_parse_rep(body, len, BRIM_OP_STREAM_QUERY,
                               &m->node->cfg.limits, &m->node->zone, &rep,
                               errbuf)
            == 0)
    {
        if (rep.status == 0) {
            m->in_touch[q->p] = mig_touch_now(m); /* queued or streaming */
        } else if (rep.status == BRIM_ERETRY) {
            m->stats.probes_source_gone++;
            mig_in_source_gone(m, q->p, q->epoch,
                               "its source holds no "
                               "copy any more");
        }
    }
    brim_free(q);
}

/* Ask the source of in-flight partition P whether it still streams it. */
static void
probe_send(struct brim_migrate *m, uint32_t p, struct brim_node_link *d)
{
    struct mig_probe *q;
    struct brim_req   req;
    struct brim_buf   buf;
    int               rc;

    q = brim_malloc(sizeof(*q));
    if (q == NULL) {
        return; /* asked again at the next tick */
    }
    q->m = m;
    q->d = d;
    q->epoch = m->in_epoch[p];
    q->p = p;
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_STREAM_QUERY;
    req.request_id = ++d->next_id;
    req.epoch = m->node->topo.committed.map.epoch;
    req.arg_epoch = q->epoch;
    req.partition = p;
    brim_buf_init(&buf);
    rc = brim_wire_encode_req(&buf, &req);
    if (rc == 0) {
        rc = brim_peer_call(&d->peer, &buf, probe_reply, q);
    }
    brim_buf_destroy(&buf);
    if (rc != 0) {
        brim_free(q);
        return;
    }
    m->stats.probes++;
    m->probes_out++;
    if (d->asked_ms == 0) {
        d->asked_ms = uv_now(m->node->loop);
    }
    m->in_probing[p] = 1;
}

/*
 * In-flight partition P has heard nothing from its source for IDLE units
 * of 100 ms. Ask the source; when the source is a node that left (it is
 * no member, so nobody will declare it dead) and has not answered for
 * dead-after, it is gone: complete with what is here (DESIGN.md 7.6).
 */
static void
probe_one(struct brim_migrate *m, uint32_t p, uint32_t idle)
{
    const struct brim_topo   *cur = &m->node->topo.committed;
    const struct brim_member *src;
    struct brim_node_link    *d;
    uint64_t                  now = uv_now(m->node->loop), dead_ms;

    (void) idle;
    src =
        m->in_src[p] == MIG_NO_SRC ? NULL : brim_topo_source(cur, m->in_src[p]);
    if (src == NULL || src->addr[0] == '\0') {
        mig_in_source_gone(m, p, m->in_epoch[p], "it has no source");
        return;
    }
    d = brim_link_get(&m->node->links, src->addr);
    if (d == NULL) {
        return;
    }
    dead_ms = m->node->lease.length_ms != 0
        ? 2 * (uint64_t) m->node->lease.length_ms
        : 3000;
    /* A departed source is gone when a question to it went unanswered,
     * or its link stayed down, for dead-after: no one else will say so. */
    if (m->in_src[p] >= cur->nmembers
        && ((d->asked_ms != 0 && now - d->asked_ms >= dead_ms)
            || (d->down_since_ms != 0 && now - d->down_since_ms >= dead_ms)))
    {
        if (!d->gone_warned) { /* once per source, not per partition */
            d->gone_warned = 1;
            brim_log_warn(
                "migrate: %s left the cluster and has not "
                "answered for %" PRIu64 " ms: it is gone; its "
                "partitions in flight complete with what is here",
                src->name,
                now - (d->asked_ms != 0 ? d->asked_ms : d->down_since_ms));
        }
        m->stats.probes_source_gone++;
        mig_in_finish(m, p);
        m->stats.partitions_in_done++;
        m->stats.partitions_in_unfinished++;
        return;
    }
    if (brim_link_ensure(d)) {
        probe_send(m, p, d);
    }
}

static void
probe_tick_cb(uv_timer_t *t)
{
    struct brim_migrate *m = t->data;
    uint32_t             P = m->node->cfg.partitions, k, p, now, idle;

    if (m->node->stopping || m->stats.partitions_in_flight == 0) {
        m->probe_armed = 0;
        return;
    }
    now = mig_touch_now(m);
    if (uv_now(m->node->loop) - m->in_logged_ms >= MIG_LOG_MS
        && uv_now(m->node->loop) - m->in_since_ms >= MIG_LOG_MS)
    {
        m->in_logged_ms = uv_now(m->node->loop);
        brim_log_info("migrate: receiving: %u partitions in flight, %" PRIu64
                      " keys and %" PRIu64 " bytes in so far",
                      m->stats.partitions_in_flight,
                      m->stats.keys_in - m->in_since_keys,
                      m->stats.bytes_in - m->in_since_bytes);
    }
    for (k = 0; k < BRIM_MIN(P, (uint32_t) MIG_PROBE_SLICE)
         && m->probes_out < MIG_PROBE_OUT;
         k++)
    {
        p = m->probe_next;
        m->probe_next = (m->probe_next + 1) & (P - 1);
        idle = now - m->in_touch[p];
        if (m->in_state[p] == IN_FLIGHT && !m->in_probing[p]
            && idle >= MIG_PROBE_IDLE_MS / 100)
        {
            probe_one(m, p, idle);
        }
    }
    uv_timer_start(&m->probe, probe_tick_cb, MIG_PROBE_TICK_MS, 0);
}

void
mig_probe_start(struct brim_migrate *m)
{
    if (!m->probe_armed) {
        m->probe_armed = 1;
        uv_timer_start(&m->probe, probe_tick_cb, MIG_PROBE_TICK_MS, 0);
    }
}
