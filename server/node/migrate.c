/*
 * server/node/migrate.c - migration's state and its receiving side
 * (DESIGN.md 7 steps 3-6, PROTOCOL.md section 11): what a commit starts
 * (streams out, queued for migrate_send.c; partitions coming in, marked in
 * flight), and the stream ops a node serves. The receiver keeps, per
 * partition, the migration id (epoch) in flight and a tombstone set of the
 * keys written or deleted here since, which a batch never overwrites
 * (migrate_read.c keeps those, serves the reads and pulls of keys not
 * streamed yet, and asks the source about partitions that go quiet).
 * Handles are unreferenced so they never keep a stopping node's loop
 * alive.
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

int
mig_owns(const struct brim_node *node, uint32_t partition)
{
    return node->cl.self >= 0
           && node->cl.committed.map.owner[partition]
              == (uint16_t) node->cl.self;
}

struct brim_migrate *
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
    m->in_touch = brim_calloc(P, sizeof(*m->in_touch));
    m->in_probing = brim_calloc(P, 1);
    m->tomb_head = brim_calloc(P, sizeof(*m->tomb_head));
    if (m->in_epoch == NULL || m->in_state == NULL || m->tomb_head == NULL
        || m->in_src == NULL || m->in_touch == NULL || m->in_probing == NULL)
    {
        brim_free(m->in_src);
        brim_free(m->in_epoch);
        brim_free(m->in_state);
        brim_free(m->in_touch);
        brim_free(m->in_probing);
        brim_free(m->tomb_head);
        brim_free(m);
        return NULL;
    }
    brim_buf_init(&m->scratch);
    uv_timer_init(node->loop, &m->pump);
    uv_unref((uv_handle_t *) &m->pump);
    m->pump.data = m;
    uv_timer_init(node->loop, &m->probe);
    uv_unref((uv_handle_t *) &m->probe);
    m->probe.data = m;
    env = getenv("BRIM_TEST_STREAM_DELAY_MS");
    if (env != NULL && *env != '\0') {
        m->st.delay_ms = (uint32_t) strtoul(env, NULL, 10);
        brim_log_warn("migrate: BRIM_TEST_STREAM_DELAY_MS=%u (test only): "
                      "streaming is slowed per batch", m->st.delay_ms);
    }
    node->mig = m;
    return m;
}

/* Loop time in the 100 ms units of in_touch. */
uint32_t
mig_touch_now(const struct brim_migrate *m)
{
    return (uint32_t) (uv_now(m->node->loop) / 100);
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
    m->in_touch[p] = mig_touch_now(m);
    m->st.partitions_in_flight++;
    mig_probe_start(m);
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
    const struct brim_topo   *cur = &m->node->cl.committed;
    const struct brim_member *sm;
    struct mig_dest          *d;
    uint16_t                  src = m->in_src[p];

    mig_in_finish(m, p);
    m->st.partitions_in_done++;
    sm = src == MIG_NO_SRC ? NULL : brim_topo_source(cur, src);
    if (sm == NULL || sm->addr[0] == '\0') {
        return;                     /* the sender drops after a while */
    }
    d = mig_dest_get(m, sm->addr);
    if (d != NULL) {
        mig_complete_queue(m, m->in_epoch[p], p, d);
    }
}

int
mig_insert(struct brim_migrate *m, uint32_t p, uint64_t h,
           const struct brim_wire_entry *e, uint32_t now)
{
    int rc;

    (void) p;
    if (mig_tomb_slot(m, h, e->key, e->key_len) != NULL) {
        m->st.entries_skipped++;
        return 1;
    }
    rc = brim_store_insert_cold(m->node->store, h, e->key, e->key_len,
                                e->value, e->value_len, e->flags,
                                e->ttl_s == 0 ? 0 : now + e->ttl_s, e->cas,
                                now);
    if (rc == 0) {
        m->st.keys_in++;
        m->st.bytes_in += e->key_len + e->value_len;
        return 0;
    }
    if (rc == BRIM_EEXISTS) {
        m->st.entries_skipped++;    /* written here since: it wins */
        return 1;
    }
    if (rc == BRIM_ETOOBIG || rc == BRIM_EINVAL) {
        /* Beyond this node's own limits: it could never hold it. */
        m->st.entries_refused++;
        if (m->st.entries_refused % 100 == 1) {
            brim_log_warn("migrate: an entry of partition %u (%zu-byte "
                          "value) is beyond this node's limits: not "
                          "stored (%" PRIu64 " so far)", p, e->value_len,
                          m->st.entries_refused);
        }
        return 1;
    }
    m->st.insert_failures++;
    return rc;                      /* BRIM_ENOMEM: the sender retries */
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
    uint32_t                p, P = cur->map.npartitions, queued = 0;
    uint32_t                gained = 0, held = 0;
    uint16_t                o, n;
    int32_t                 src;

    m = mig_get(node);
    if (m == NULL) {
        BRIM_PANIC("migrate: out of memory for the migration state");
    }
    mig_jobs_recheck(m, keep);
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
            /* Lost to a live member: stream it under id (epoch, p).
             * A job is a few dozen bytes; without them the partition
             * would be neither streamed nor kept. */
            d = mig_dest_get(m, cur->members[n].addr);
            if (d == NULL || mig_job_queue(m, cur->map.epoch, p, d) != 0) {
                BRIM_PANIC("migrate: out of memory queueing a stream");
            }
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
    /* brim_migrate_before_write() made sure of a spare, so this holds. */
    if (mig_tomb_add(m, partition, hash, key, key_len) != 0) {
        BRIM_NOTREACHED();
    }
}

int
brim_migrate_before_write(struct brim_node *node, uint32_t partition,
                          uint64_t hash, const char *key, size_t key_len)
{
    struct brim_migrate *m = node->mig;

    if (m == NULL || m->in_state[partition] != IN_FLIGHT
        || mig_tomb_slot(m, hash, key, key_len) != NULL)
    {
        return 0;
    }
    if (mig_tomb_reserve(m) != 0) {
        m->st.tomb_refusals++;
        return BRIM_ERETRY;
    }
    return 0;
}


/* ---- receiving ---- */

int
mig_reply(struct brim_conn *c, uint64_t id, int status, const char *msg)
{
    return brim_wire_encode_status(brim_conn_out(c), id, status, msg,
                                   msg != NULL ? strlen(msg) : 0);
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
    if (req->op == BRIM_OP_STREAM_QUERY) {
        /* The new owner asks whether we still mean to stream P: we do
         * while we own it or a job of ours holds it. */
        return mig_holds(m, p)
                   ? mig_reply(c, id, 0, NULL)
                   : mig_reply(c, id, BRIM_ERETRY, "stream: this node "
                               "holds no copy of the partition");
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
            return mig_reply(c, id, rc, rc == BRIM_EBADREQ
                             ? "stream: an entry of another partition"
                             : "stream: out of memory inserting the batch; "
                               "send it again");
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
