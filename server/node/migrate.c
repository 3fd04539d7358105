/*
 * server/node/migrate.c - streaming partitions to their new owners
 * (DESIGN.md 7 steps 3-4, PROTOCOL.md section 11). The sender keeps a
 * queue of jobs, one per partition lost in a commit, and runs them from a
 * timer in bounded slices: at most MIG_ACTIVE partitions stream at once,
 * each with one request in flight (the receiver's reply is the
 * backpressure), each batch at most MIG_BATCH_ENTRIES entries or
 * MIG_BATCH_BYTES bytes, each slice at most MIG_SCAN_BUCKETS buckets. The
 * receiver keeps, per partition, the migration id (epoch) in flight and a
 * tombstone set of the keys written or deleted here since, which a batch
 * never overwrites (migrate_read.c keeps those, and serves the reads
 * and pulls of keys not streamed yet). Handles are unreferenced so they
 * never keep a stopping node's loop alive.
 */
#include "server/node/migrate_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "proto/frame.h"
#include "server/log.h"

static void mig_pump_soon(struct brim_migrate *m, uint64_t delay_ms);

int
mig_owns(const struct brim_node *node, uint32_t partition)
{
    return node->cl.self >= 0
           && node->cl.committed.map.owner[partition]
              == (uint16_t) node->cl.self;
}

static struct brim_migrate *
mig_get(struct brim_node *node)
{
    struct brim_migrate *m = node->mig;
    const char          *env;
    uint32_t             P = node->cfg.partitions;

    if (m != NULL) {
        return m;
    }
    m = brim_calloc(1, sizeof(*m));
    if (m == NULL) {
        return NULL;
    }
    m->node = node;
    m->in_epoch = brim_calloc(P, sizeof(*m->in_epoch));
    m->in_state = brim_calloc(P, 1);
    m->in_src = brim_calloc(P, sizeof(*m->in_src));
    m->tomb_head = brim_calloc(P, sizeof(*m->tomb_head));
    if (m->in_epoch == NULL || m->in_state == NULL || m->tomb_head == NULL
        || m->in_src == NULL)
    {
        brim_free(m->in_src);
        brim_free(m->in_epoch);
        brim_free(m->in_state);
        brim_free(m->tomb_head);
        brim_free(m);
        return NULL;
    }
    brim_buf_init(&m->scratch);
    uv_timer_init(node->loop, &m->pump);
    uv_unref((uv_handle_t *) &m->pump);
    m->pump.data = m;
    env = getenv("BRIM_TEST_STREAM_DELAY_MS");
    if (env != NULL && *env != '\0') {
        m->st.delay_ms = (uint32_t) strtoul(env, NULL, 10);
        brim_log_warn("migrate: BRIM_TEST_STREAM_DELAY_MS=%u (test only): "
                      "streaming is slowed per batch", m->st.delay_ms);
    }
    node->mig = m;
    return m;
}

/* ---- receiver state ---- */

static void
in_start(struct brim_migrate *m, uint32_t p, uint64_t epoch, int32_t src)
{
    if (m->st.partitions_in_flight == 0) {
        /* A migration into this node starts: time it (mig_in_finish). */
        m->in_since_ms = uv_now(m->node->loop);
        m->in_since_bytes = m->st.bytes_in;
        m->in_since_keys = m->st.keys_in;
    }
    m->in_src[p] = src >= 0 ? (uint16_t) src : MIG_NO_SRC;
    if (m->in_state[p] == IN_FLIGHT) {
        mig_tomb_clear(m, p);
        m->st.partitions_in_flight--;
    }
    m->in_epoch[p] = epoch;
    m->in_state[p] = IN_FLIGHT;
    m->st.partitions_in_flight++;
}

void
mig_in_finish(struct brim_migrate *m, uint32_t p)
{
    uint64_t ms, bytes;

    if (m->in_state[p] != IN_FLIGHT) {
        return;
    }
    mig_tomb_clear(m, p);
    m->st.partitions_in_flight--;
    m->in_state[p] = IN_DONE;
    if (m->st.partitions_in_flight == 0) {
        ms = uv_now(m->node->loop) - m->in_since_ms;
        bytes = m->st.bytes_in - m->in_since_bytes;
        brim_log_info("migrate: every incoming partition is complete: %"
                      PRIu64 " keys, %" PRIu64 " bytes in %" PRIu64 " ms "
                      "(%.1f MB/s)", m->st.keys_in - m->in_since_keys,
                      bytes, ms, ms > 0 ? bytes / 1e3 / (double) ms : 0.0);
    }
}

/* STREAM_END of partition P came in: every key is here. Queue COMPLETE
 * for the old owner; the pump sends it on the forwarding connection once
 * no forward of P is unanswered (DESIGN.md 7 step 5). */
static void
in_end(struct brim_migrate *m, uint32_t p)
{
    const struct brim_topo *cur = &m->node->cl.committed;
    struct mig_cpend       *nc;
    struct mig_dest        *d;
    uint16_t                src = m->in_src[p];

    const struct brim_member *sm;

    mig_in_finish(m, p);
    m->st.partitions_in_done++;
    sm = src == MIG_NO_SRC ? NULL : brim_topo_source(cur, src);
    if (sm == NULL || sm->addr[0] == '\0') {
        return;                     /* the sender drops after a while */
    }
    d = mig_dest_get(m, sm->addr);
    if (d == NULL) {
        return;
    }
    if (m->ncpend == m->cap_cpend) {
        uint32_t cap = m->cap_cpend == 0 ? 64 : 2 * m->cap_cpend;

        nc = brim_calloc(cap, sizeof(*nc));
        if (nc == NULL) {
            return;
        }
        if (m->ncpend > 0) {
            memcpy(nc, m->cpend, m->ncpend * sizeof(*nc));
        }
        brim_free(m->cpend);
        m->cpend = nc;
        m->cap_cpend = cap;
    }
    m->cpend[m->ncpend].epoch = m->in_epoch[p];
    m->cpend[m->ncpend].p = p;
    m->cpend[m->ncpend].d = d;
    m->ncpend++;
    mig_pump_soon(m, 0);
}

/* Insert entry E of partition P (hash H) unless the key is here or
 * tombstoned, at the cold end, as a batch does. */
void
mig_insert(struct brim_migrate *m, uint32_t p, uint64_t h,
           const struct brim_wire_entry *e, uint32_t now)
{
    int rc;

    (void) p;
    if (mig_tomb_slot(m, h, e->key, e->key_len) != NULL) {
        m->st.entries_skipped++;
        return;
    }
    rc = brim_store_insert_cold(m->node->store, h, e->key, e->key_len,
                                e->value, e->value_len, e->flags,
                                e->ttl_s == 0 ? 0 : now + e->ttl_s, e->cas,
                                now);
    if (rc == 0) {
        m->st.keys_in++;
        m->st.bytes_in += e->key_len + e->value_len;
    } else {
        m->st.entries_skipped++;
    }
}

/* ---- sender ---- */

static void
job_free(struct brim_migrate *m, struct mig_job *j)
{
    uint32_t i;

    for (i = 0; i < m->njobs; i++) {
        if (m->jobs[i] == j) {
            m->jobs[i] = m->jobs[--m->njobs];
            break;
        }
    }
    brim_free(j);
}

/* True when a live job other than J streams J's partition. */
static int
out_other_job(struct brim_migrate *m, const struct mig_job *j)
{
    uint32_t i;

    for (i = 0; i < m->njobs; i++) {
        if (m->jobs[i] != j && m->jobs[i]->p == j->p
            && m->jobs[i]->state != OUT_DONE && !m->jobs[i]->cancelled)
        {
            return 1;
        }
    }
    return 0;
}

/* The job ends: drop our copy of the partition (sent, or cannot be). */
static void
job_finish(struct brim_migrate *m, struct mig_job *j, int ok,
           const char *why)
{
    struct brim_node *node = m->node;
    size_t            left = 0;

    j->state = OUT_DONE;
    if (m->st.partitions_out_pending > 0) {
        m->st.partitions_out_pending--;
    }
    if (!mig_owns(node, j->p) && !out_other_job(m, j)) {
        left = brim_store_drop_partition(node->store, j->p);
    }
    if (ok) {
        m->st.partitions_out_done++;
        brim_log_info("migrate: sent partition %u of epoch %" PRIu64
                      " to %s: %" PRIu64 " keys", j->p, j->epoch,
                      j->dest->addr, j->count);
    } else {
        m->st.partitions_out_dropped++;
        brim_log_warn("migrate: partition %u of epoch %" PRIu64 " to %s "
                      "not completed (%s): %" PRIu64 " keys sent, %zu "
                      "dropped", j->p, j->epoch, j->dest->addr, why,
                      j->count, left);
    }
    if (!j->busy) {
        job_free(m, j);
    }
    mig_pump_soon(m, 0);
}

/* Connected, HELLO and AUTH done by the peer (brim_node_peer_hello()). */
static void
dest_connect_cb(struct brim_peer *p, int status)
{
    struct mig_dest *d = p->data;

    if (status != 0) {
        d->dead = 1;
        brim_log_warn("migrate: connect to %s: %s%s%s", d->addr,
                      brim_strerror(status),
                      p->hs_error[0] != '\0' ? ": " : "", p->hs_error);
        return;
    }
    mig_pump_soon(d->m, 0);
}

static void
dest_close_cb(struct brim_peer *p, int status)
{
    struct mig_dest *d = p->data;

    (void) status;
    d->dead = 1;                    /* its jobs end at the next pump */
    mig_pump_soon(d->m, 0);
}

struct mig_dest *
mig_dest_get(struct brim_migrate *m, const char *addr)
{
    struct mig_dest *d;

    for (d = m->dests; d != NULL; d = d->next) {
        if (strcmp(d->addr, addr) == 0 && !d->dead) {
            return d;
        }
    }
    d = brim_calloc(1, sizeof(*d));
    if (d == NULL) {
        return NULL;
    }
    snprintf(d->addr, sizeof(d->addr), "%s", addr);
    d->m = m;
    brim_peer_init(&d->peer, m->node->loop,
                   m->node->cfg.limits.max_frame_bytes, dest_connect_cb,
                   dest_close_cb, d);
    d->next = m->dests;
    m->dests = d;
    return d;
}

int
mig_dest_ensure(struct mig_dest *d)
{
    char errbuf[BRIM_ERRBUF_LEN];

    if (d->peer.state == BRIM_PEER_OPEN) {
        return 1;
    }
    if (d->peer.state == BRIM_PEER_IDLE && !d->dead) {
        brim_node_peer_hello(d->m->node, &d->peer);
        if (brim_peer_connect(&d->peer, d->addr, errbuf) != 0) {
            d->dead = 1;
        } else {
            uv_unref((uv_handle_t *) &d->peer.tcp);
        }
    }
    return 0;
}

static void job_reply(struct brim_peer *p, int status, const char *body,
                      size_t len, void *arg);

/* Send a frame begun in FRAME for job J. */
static void
job_send(struct brim_migrate *m, struct mig_job *j, struct brim_buf *frame)
{
    if (brim_peer_call(&j->dest->peer, frame, job_reply, j) != 0) {
        job_finish(m, j, 0, "send failed");
        return;
    }
    j->busy = 1;
}

/* STREAM_BEGIN, _BATCH (the scratch entries) or _END of job J. */
static int
job_frame(struct brim_migrate *m, struct mig_job *j, uint32_t op,
          struct brim_buf *out)
{
    struct brim_req req;

    memset(&req, 0, sizeof(req));
    req.op = op;
    req.request_id = ++j->dest->next_id;
    req.epoch = m->node->cl.committed.map.epoch;
    req.arg_epoch = j->epoch;
    req.partition = j->p;
    req.count = j->count;
    if (op == BRIM_OP_STREAM_BATCH) {
        req.nentries = m->scratch_n;
        req.entries_raw = m->scratch.data;
        req.entries_raw_len = m->scratch.len;
    }
    return brim_wire_encode_req(out, &req) == 0 ? 0 : -1;
}

static void
job_send_op(struct brim_migrate *m, struct mig_job *j, uint32_t op)
{
    struct brim_buf buf;

    brim_buf_init(&buf);
    if (job_frame(m, j, op, &buf) != 0) {
        brim_buf_destroy(&buf);
        job_finish(m, j, 0, "out of memory");
        return;
    }
    job_send(m, j, &buf);
    brim_buf_destroy(&buf);
}

/* The stream entry of item IT with TTL seconds left. */
void
mig_item_entry(const struct brim_item *it, uint32_t ttl,
               struct brim_wire_entry *e)
{
    e->key = brim_item_key(it);
    e->key_len = it->key_len;
    e->value = brim_item_value(it);
    e->value_len = it->val_len;
    e->flags = it->flags;
    e->cas = it->cas;
    e->ttl_s = ttl;
}

/* Scan callback: pack one live entry into the scratch batch. */
static int
scan_entry(const struct brim_item *it, void *arg)
{
    struct brim_migrate   *m = arg;
    struct brim_wire_entry e;
    size_t                 mark;
    uint32_t               ttl = 0;
    int                    err;

    if (it->exptime != 0) {
        if (it->exptime <= m->now) {
            return 0;               /* expired: skipped */
        }
        ttl = it->exptime - m->now;
    }
    mark = m->scratch.len;
    mig_item_entry(it, ttl, &e);
    err = brim_wire_entry_pack(&m->scratch, &e);
    if (err != 0) {
        brim_buf_truncate(&m->scratch, mark);
    } else {
        m->scratch_n++;
        m->st.keys_out++;
        m->st.bytes_out += (uint64_t) it->key_len + it->val_len;
    }
    return m->scratch_n >= MIG_BATCH_ENTRIES
           || m->scratch.len >= MIG_BATCH_BYTES;
}

/* One step of job J: send its next request, if it may. */
static void
job_step(struct brim_migrate *m, struct mig_job *j, uint64_t now_ms)
{
    struct brim_node *node = m->node;

    if (j->busy || j->state == OUT_DONE || now_ms < j->not_before) {
        return;
    }
    if (j->cancelled) {
        job_finish(m, j, 0, "superseded by a newer epoch");
        return;
    }
    if (j->dest->dead) {
        job_finish(m, j, 0, "new owner unreachable");
        return;
    }
    if (j->state == OUT_COMPLETE_WAIT) {
        job_finish(m, j, 1, NULL);  /* no COMPLETE in time: drop anyway */
        return;
    }
    if (!mig_dest_ensure(j->dest)) {
        return;                     /* connecting: the callback pumps */
    }
    switch (j->state) {
    case OUT_QUEUED:
    case OUT_BEGIN:
        j->state = OUT_BEGIN;
        job_send_op(m, j, BRIM_OP_STREAM_BEGIN);
        return;
    case OUT_READY:
        if (j->scan_done) {
            j->state = OUT_END;
            job_send_op(m, j, BRIM_OP_STREAM_END);
            return;
        }
        if (m->pace_next_ms > (double) now_ms) {
            /* --migrate-mb-per-s: this node's streams wait their turn. */
            j->not_before = (uint64_t) m->pace_next_ms + 1;
            mig_pump_soon(m, j->not_before - now_ms);
            return;
        }
        brim_buf_truncate(&m->scratch, 0);
        m->scratch_n = 0;
        m->now = (uint32_t) time(NULL);
        j->scan_done = brim_store_scan(node->store, j->p, &j->cursor,
                                       MIG_SCAN_BUCKETS, scan_entry, m);
        if (m->scratch_n == 0) {
            mig_pump_soon(m, 0);    /* nothing yet: next slice */
            return;
        }
        j->count += m->scratch_n;
        m->st.batches_out++;
        if (node->cfg.migrate_mb_per_s > 0) {
            m->pace_next_ms = (m->pace_next_ms > (double) now_ms
                                   ? m->pace_next_ms : (double) now_ms)
                              + (double) m->scratch.len
                                    / (node->cfg.migrate_mb_per_s * 1e3);
        }
        j->state = OUT_WAIT;
        job_send_op(m, j, BRIM_OP_STREAM_BATCH);
        return;
    default:
        return;
    }
}

static void
job_reply(struct brim_peer *p, int status, const char *body, size_t len,
          void *arg)
{
    struct mig_job      *j = arg;
    struct mig_dest     *d = p->data;
    struct brim_migrate *m = d->m;
    struct brim_rep      rep;
    char                 errbuf[BRIM_ERRBUF_LEN];
    uint64_t             now_ms = uv_now(m->node->loop);

    j->busy = 0;
    if (j->state == OUT_DONE) {
        job_free(m, j);
        return;
    }
    if (j->cancelled) {
        job_finish(m, j, 0, "superseded by a newer epoch");
        return;
    }
    if (status != 0) {
        job_finish(m, j, 0, brim_strerror(status));
        return;
    }
    if (brim_wire_parse_rep(body, len, BRIM_OP_PING, &m->node->cfg.limits,
                            &m->node->zone, &rep, errbuf) != 0)
    {
        job_finish(m, j, 0, "malformed reply");
        return;
    }
    if (rep.status == BRIM_ERETRY && j->state == OUT_BEGIN
        && j->retries++ < MIG_BEGIN_RETRIES)
    {
        j->not_before = now_ms + MIG_RETRY_MS;  /* it has not committed */
        mig_pump_soon(m, MIG_RETRY_MS);
        return;
    }
    if (rep.status != 0) {
        snprintf(errbuf, sizeof(errbuf), "%s: %.*s",
                 brim_strerror(rep.status), (int) rep.message_len,
                 rep.message != NULL ? rep.message : "");
        job_finish(m, j, 0, errbuf);
        return;
    }
    switch (j->state) {
    case OUT_BEGIN:
        j->state = OUT_READY;
        break;
    case OUT_WAIT:
        j->state = OUT_READY;
        j->not_before = now_ms + m->st.delay_ms;
        break;
    case OUT_END:
        if (j->completed) {
            job_finish(m, j, 1, NULL);
            break;
        }
        /* The copy stays until the new owner's COMPLETE (it may still
         * forward reads and pulls), or a while at most. */
        j->state = OUT_COMPLETE_WAIT;
        j->not_before = now_ms + MIG_COMPLETE_WAIT_MS;
        mig_pump_soon(m, MIG_COMPLETE_WAIT_MS);
        return;
    default:
        break;
    }
    mig_pump_soon(m, m->st.delay_ms);
}

static void
complete_rep(struct brim_peer *p, int status, const char *body, size_t len,
             void *arg)
{
    (void) p;
    (void) status;
    (void) body;
    (void) len;
    (void) arg;
}

/* Send the COMPLETEs whose connection is open; drop those whose old
 * owner cannot be reached (it drops its copy after a while anyway). */
static void
mig_send_completes(struct brim_migrate *m)
{
    struct mig_cpend *cp;
    struct brim_req   req;
    struct brim_buf   buf;
    uint32_t          i = 0;

    while (i < m->ncpend) {
        cp = &m->cpend[i];
        if (!cp->d->dead && !mig_dest_ensure(cp->d)) {
            i++;                    /* connecting: the callback pumps */
            continue;
        }
        if (!cp->d->dead) {
            memset(&req, 0, sizeof(req));
            req.op = BRIM_OP_COMPLETE;
            req.request_id = ++cp->d->next_id;
            req.epoch = m->node->cl.committed.map.epoch;
            req.arg_epoch = cp->epoch;
            req.partition = cp->p;
            brim_buf_init(&buf);
            if (brim_wire_encode_req(&buf, &req) == 0) {
                (void) brim_peer_call(&cp->d->peer, &buf, complete_rep,
                                      NULL);
            }
            brim_buf_destroy(&buf);
        }
        m->cpend[i] = m->cpend[--m->ncpend];
    }
}

static void
mig_pump_cb(uv_timer_t *t)
{
    struct brim_migrate *m = t->data;
    uint64_t             now_ms = uv_now(m->node->loop), next = UINT64_MAX;
    uint32_t             i, active = 0;
    struct mig_job      *j;

    m->pump_armed = 0;
    if (m->node->stopping) {
        return;
    }
    mig_send_completes(m);
    for (i = 0; i < m->njobs; i++) {
        active += m->jobs[i]->state != OUT_QUEUED
                  && m->jobs[i]->state != OUT_DONE
                  && m->jobs[i]->state != OUT_COMPLETE_WAIT;
    }
    /* Jobs may end (and leave the array) as they step; an ended job
     * pumps again, so one skipped here is not forgotten. */
    for (i = 0; i < m->njobs; i++) {
        j = m->jobs[i];
        if (j->state == OUT_QUEUED) {
            if (active >= MIG_ACTIVE && !j->cancelled) {
                continue;
            }
            active++;
        }
        if (j->state != OUT_DONE) {
            job_step(m, j, now_ms);
        }
        if (i < m->njobs && m->jobs[i] == j && j->state != OUT_DONE
            && !j->busy && j->not_before > now_ms && j->not_before < next)
        {
            next = j->not_before;
        }
    }
    if (next != UINT64_MAX) {
        mig_pump_soon(m, next - now_ms);
    }
}

static void
mig_pump_soon(struct brim_migrate *m, uint64_t delay_ms)
{
    if (m->pump_armed && delay_ms > 0) {
        return;
    }
    uv_timer_start(&m->pump, mig_pump_cb, delay_ms, 0);
    m->pump_armed = 1;
}

int
brim_migrate_peer_call(struct brim_node *node, const char *addr,
                       struct brim_buf *frame, brim_peer_reply_cb cb,
                       void *arg)
{
    struct brim_migrate *m = mig_get(node);
    struct mig_dest     *d;

    if (m == NULL || (d = mig_dest_get(m, addr)) == NULL) {
        return BRIM_ENOMEM;
    }
    if (!mig_dest_ensure(d)) {
        return BRIM_EAGAIN;         /* connecting: the next call goes */
    }
    return brim_peer_call(&d->peer, frame, cb, arg);
}

int
brim_migrate_out_busy(struct brim_node *node, uint32_t partition)
{
    struct brim_migrate *m = node->mig;
    uint32_t             i;

    for (i = 0; m != NULL && i < m->njobs; i++) {
        if (m->jobs[i]->p == partition && m->jobs[i]->state != OUT_DONE
            && !m->jobs[i]->cancelled)
        {
            return 1;
        }
    }
    return 0;
}

/* True when the committed map gives J's partition to J's destination, a
 * member that is not dead. */
static int
job_dest_owns(const struct brim_node *node, const struct mig_job *j)
{
    const struct brim_topo *cur = &node->cl.committed;
    uint16_t                n = cur->map.owner[j->p];

    return n < cur->nmembers && cur->members[n].state != BRIM_MEMBER_DEAD
           && strcmp(cur->members[n].addr, j->dest->addr) == 0;
}

/*
 * Why each partition coming in moved, OLD to CUR (brim_move_reason_of():
 * a new arc or the cap), so the entries received can be counted by
 * reason. Best effort: without memory, all count as arc.
 */
static void
mig_reasons(struct brim_migrate *m, const struct brim_topo *old,
            const struct brim_topo *cur)
{
    struct brim_ring oring, nring;
    uint64_t        *pos;
    uint32_t         p, P = cur->map.npartitions;
    char             err[BRIM_ERRBUF_LEN];

    if (m->in_reason == NULL) {
        m->in_reason = brim_calloc(P, 1);
    }
    pos = brim_malloc((size_t) P * sizeof(*pos));
    if (m->in_reason == NULL || pos == NULL) {
        brim_free(pos);
        return;
    }
    if (brim_topo_ring(old, &oring, 1, err) != 0) {
        brim_free(pos);
        return;
    }
    if (brim_topo_ring(cur, &nring, 1, err) != 0) {
        brim_ring_destroy(&oring);
        brim_free(pos);
        return;
    }
    brim_map_positions(cur->seed, P, pos);
    for (p = 0; p < P; p++) {
        if (m->in_state[p] == IN_FLIGHT && m->in_epoch[p] == cur->map.epoch) {
            m->in_reason[p] = (uint8_t) brim_move_reason_of(
                &oring, old->map.owner[p], &nring, cur->map.owner[p],
                pos[p]);
        }
    }
    brim_ring_destroy(&oring);
    brim_ring_destroy(&nring);
    brim_free(pos);
}

void
brim_migrate_commit(struct brim_node *node, const struct brim_topo *old,
                    int32_t old_self, uint8_t *keep)
{
    const struct brim_topo *cur = &node->cl.committed;
    struct brim_migrate    *m;
    const struct brim_member *sm;
    struct mig_dest        *d;
    struct mig_job         *j, **nj;
    uint32_t                p, P = cur->map.npartitions, queued = 0;
    uint32_t                gained = 0, held = 0, i;
    uint16_t                o, n;
    int32_t                 src;

    m = mig_get(node);
    if (m == NULL) {
        brim_log_error("migrate: out of memory: lost partitions dropped");
        return;
    }
    /* A stream of an older epoch goes on while its destination still
     * owns the partition (the receiver keeps the same migration id);
     * otherwise it stops and its copy goes (this is a cache: the new
     * owner starts from what the old destination streams it). */
    for (i = 0; i < m->njobs; i++) {
        j = m->jobs[i];
        if (j->state != OUT_DONE && !j->cancelled
            && job_dest_owns(node, j))
        {
            keep[j->p] = 1;
        } else {
            j->cancelled = 1;
        }
    }
    if (old->map.epoch == 0 || old->map.npartitions != P) {
        mig_pump_soon(m, 0);
        return;
    }
    /* Partitions in flight keep their source when it is still a live
     * member; one whose source is gone completes at once with what it
     * has (DESIGN.md 7 step 6). */
    for (p = 0; p < P; p++) {
        if (m->in_state[p] != IN_FLIGHT) {
            continue;
        }
        sm = m->in_src[p] == MIG_NO_SRC ? NULL
                                        : brim_topo_source(old, m->in_src[p]);
        src = sm != NULL ? brim_topo_find_source(cur, sm->name) : -1;
        if (src < 0 || src == node->cl.self) {
            brim_log_info("migrate: partition %u: its source is gone; "
                          "complete with what is here", p);
            mig_in_finish(m, p);
            m->st.partitions_in_done++;
        } else {
            m->in_src[p] = (uint16_t) src;
        }
    }
    for (p = 0; p < P; p++) {
        o = old->map.owner[p];
        n = cur->map.owner[p];
        if (old_self >= 0 && o == (uint16_t) old_self
            && (node->cl.self < 0 || n != (uint16_t) node->cl.self)
            && n < cur->nmembers && cur->members[n].state != BRIM_MEMBER_DEAD
            && cur->members[n].addr[0] != '\0')
        {
            /* Lost to a live member: stream it under id (epoch, p). */
            if (m->njobs == m->cap_jobs) {
                uint32_t cap = m->cap_jobs == 0 ? 64 : 2 * m->cap_jobs;

                nj = brim_calloc(cap, sizeof(*nj));
                if (nj == NULL) {
                    continue;
                }
                if (m->njobs > 0) {
                    memcpy(nj, m->jobs, m->njobs * sizeof(*nj));
                }
                brim_free(m->jobs);
                m->jobs = nj;
                m->cap_jobs = cap;
            }
            j = brim_calloc(1, sizeof(*j));
            if (j == NULL) {
                continue;
            }
            j->epoch = cur->map.epoch;
            j->p = p;
            j->dest = mig_dest_get(m, cur->members[n].addr);
            if (j->dest == NULL) {
                brim_free(j);
                continue;
            }
            m->jobs[m->njobs++] = j;
            m->st.partitions_out_pending++;
            keep[p] = 1;
            queued++;
        } else if (node->cl.self >= 0 && n == (uint16_t) node->cl.self
                   && (old_self < 0 || o != (uint16_t) old_self))
        {
            /* Gained: in flight when a live member had it. */
            src = o < old->nmembers
                  ? brim_topo_find_source(cur, old->members[o].name) : -1;
            if (src >= 0 && src != node->cl.self) {
                brim_store_drop_partition(node->store, p);  /* stale */
                in_start(m, p, cur->map.epoch, src);
                gained++;
                /* Connect now: misses of P are forwarded to it. */
                sm = brim_topo_source(cur, (uint32_t) src);
                if (sm->addr[0] != '\0'
                    && (d = mig_dest_get(m, sm->addr)) != NULL)
                {
                    (void) mig_dest_ensure(d);
                }
            } else {
                /* No live source (it died): the partition starts empty
                 * here; a copy kept here lacks the dead node's writes.
                 * (No hold: the dead node's lease ran out before it was
                 * declared dead; docs/design.md, "Leases".) */
                if (m->in_state[p] == IN_FLIGHT) {
                    mig_in_finish(m, p);
                }
                if (o < old->nmembers) {
                    brim_store_drop_partition(node->store, p);
                    held++;
                }
            }
        } else if (m->in_state[p] == IN_FLIGHT
                   && (node->cl.self < 0 || n != (uint16_t) node->cl.self))
        {
            mig_in_finish(m, p);        /* lost while in flight */
        }
    }
    if (gained > 0) {
        mig_reasons(m, old, cur);
    }
    if (queued > 0 || gained > 0 || held > 0) {
        brim_log_info("migrate: epoch %" PRIu64 ": %u partitions to stream "
                      "out, %u coming in, %u of dead members start empty",
                      cur->map.epoch, queued, gained, held);
    }
    mig_pump_soon(m, 0);
}

/* ---- serving data ops ---- */

void
brim_migrate_hit(struct brim_node *node, uint32_t partition, uint64_t hash,
                 const char *key, size_t key_len, enum brim_mig_hit kind,
                 int rc)
{
    struct brim_migrate *m = node->mig;

    if (m == NULL || m->in_state[partition] != IN_FLIGHT) {
        return;
    }
    switch (kind) {
    case BRIM_MIG_READ:
        m->st.reads_in_flight++;
        return;
    case BRIM_MIG_WRITE:
        m->st.writes_in_flight++;
        if (rc != 0) {
            return;
        }
        break;
    default:
        m->st.deletes_in_flight++;
        break;
    }
    mig_tomb_add(m, partition, hash, key, key_len);
}


/* ---- receiving ---- */

int
mig_reply(struct brim_conn *c, uint64_t id, int status, const char *msg)
{
    return brim_wire_encode_status(brim_conn_out(c), id, status, msg,
                                   msg != NULL ? strlen(msg) : 0);
}

/* True when this node holds partition P: owns it, or streams it out. */
int
mig_holds(struct brim_migrate *m, uint32_t p)
{
    uint32_t i;

    if (mig_owns(m->node, p)) {
        return 1;
    }
    for (i = 0; i < m->njobs; i++) {
        if (m->jobs[i]->p == p && m->jobs[i]->state != OUT_DONE) {
            return 1;
        }
    }
    return 0;
}

/* COMPLETE of (E, P) from the new owner: our copy may go. */
static void
mig_complete(struct brim_migrate *m, uint64_t e, uint32_t p)
{
    uint32_t        i;
    struct mig_job *j;

    for (i = 0; i < m->njobs; i++) {
        j = m->jobs[i];
        if (j->p != p || j->epoch != e) {
            continue;
        }
        if (j->state == OUT_COMPLETE_WAIT) {
            job_finish(m, j, 1, NULL);
            return;
        }
        if (j->state == OUT_END) {
            /* COMPLETE came on its own connection before END's reply
             * on the stream's: finish when that reply comes. */
            j->completed = 1;
            return;
        }
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

    for (i = 0; i < req->nentries; i++) {
        brim_wire_req_entry(req, i, &e);
        h = brim_hash_key(brim_node_seed(node), e.key, e.key_len);
        if (brim_partition_of(h, node->cfg.partitions) != p) {
            return BRIM_EBADREQ;
        }
        mig_insert(m, p, h, &e, now);
    }
    if (m->in_reason != NULL && m->in_reason[p] == BRIM_MOVE_CAP) {
        m->st.entries_in_cap += req->nentries;
    } else {
        m->st.entries_in_arc += req->nentries;
    }
    return 0;
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

    if ((uint32_t) (uintptr_t) c->data != BRIM_ROLE_NODE
        || node->cfg.standalone)
    {
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
    brim_node_epoch_seen(node, req->epoch);
    self = node->cl.self;
    if (req->op == BRIM_OP_FORWARD_GET || req->op == BRIM_OP_PULL) {
        return mig_serve_copy(m, c, req);
    }
    if (req->op == BRIM_OP_COMPLETE) {
        mig_complete(m, e, p);
        return mig_reply(c, id, 0, NULL);
    }
    if (req->op == BRIM_OP_STREAM_BEGIN) {
        if (node->cl.committed.map.epoch < e) {
            return mig_reply(c, id, BRIM_ERETRY, "stream: epoch not "
                             "committed here yet");
        }
        if (self < 0 || node->cl.committed.map.owner[p] != (uint16_t) self
            || m->in_epoch[p] > e
            || (m->in_epoch[p] == e && m->in_state[p] == IN_DONE))
        {
            return mig_reply(c, id, BRIM_EEXISTS, "stream: migration id "
                             "superseded or complete");
        }
        if (m->in_epoch[p] != e || m->in_state[p] != IN_FLIGHT) {
            /* Our commit did not expect it (its source is not a live
             * member or leaver of our epoch): writes made here since
             * were not tombstoned, so a stream could undo them. */
            return mig_reply(c, id, BRIM_EEXISTS, "stream: this node "
                             "expects no stream of that partition");
        }
        return mig_reply(c, id, 0, NULL);
    }
    if (m->in_epoch[p] != e || m->in_state[p] != IN_FLIGHT) {
        return mig_reply(c, id, BRIM_EEXISTS, "stream: migration id "
                         "superseded or complete");
    }
    if (req->op == BRIM_OP_STREAM_BATCH) {
        m->st.batches_in++;
        rc = mig_batch(m, p, req);
        if (rc != 0) {
            return mig_reply(c, id, rc, "stream: an entry of another "
                             "partition");
        }
        return mig_reply(c, id, 0, NULL);
    }
    in_end(m, p);
    brim_log_info("migrate: received partition %u of epoch %" PRIu64
                  " (%" PRIu64 " entries sent)", p, e, req->count);
    return mig_reply(c, id, 0, NULL);
}

void
brim_migrate_get_stats(struct brim_node *node, struct brim_migrate_stats *out)
{
    if (node->mig == NULL) {
        memset(out, 0, sizeof(*out));
        return;
    }
    *out = node->mig->st;
}
