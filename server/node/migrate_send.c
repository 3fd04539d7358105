/*
 * server/node/migrate_send.c - the sending side of migration (DESIGN.md 7
 * steps 3 and 5, section 13; PROTOCOL.md section 11): the jobs that
 * stream each partition this node lost to its new owner, over the node's
 * links (links.h). A timer (the pump) runs the jobs in bounded slices: at
 * most MIG_ACTIVE partitions at once, one request in flight each (the
 * receiver's reply is the backpressure), each batch bounded by entries,
 * by MIG_BATCH_BYTES and by the receiver's frame limit from its HELLO.
 *
 * The rule every path here keeps (DESIGN.md 7.6): a partition this node
 * has not handed over is dropped only when its receiver is no longer its
 * owner in the committed topology, that is when the receiver was declared
 * dead (or a later epoch gave the partition to another node). A lost link
 * is made again and the stream restarts under the same migration id (the
 * receiver keeps its tombstones and local writes, and skips keys it
 * holds); an error reply restarts it after a backoff. Nothing here gives
 * up by a count or a clock.
 */
#include "server/node/migrate_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "server/log.h"
#include "server/node/flush.h"

/* ---- jobs ---- */

/*
 * Move J to state TO. The legal steps (enum mig_out_state): forward one
 * at a time, READY <-> WAIT per batch, back to BEGIN on a restart from
 * anywhere before DONE, and DONE from anywhere. Anything else is a bug of
 * ours, not input: it stops the process.
 */
static void
job_set_state(struct mig_job *j, enum mig_out_state to)
{
    enum mig_out_state from = j->state;
    int                ok;

    switch (to) {
    case OUT_BEGIN:
        ok = from != OUT_DONE;
        break;
    case OUT_READY:
        ok = from == OUT_BEGIN || from == OUT_WAIT;
        break;
    case OUT_WAIT:
    case OUT_END:
        ok = from == OUT_READY;
        break;
    case OUT_COMPLETE_WAIT:
        ok = from == OUT_END;
        break;
    case OUT_DONE:
        ok = from != OUT_DONE;
        break;
    default:
        ok = 0;
        break;
    }
    BRIM_ASSERT(ok);
    j->state = to;
}

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
    brim_store_cursor_release(m->node->store, &j->cursor);
    brim_free(j);
}

/*
 * DEST's entry in m->dests, made if new; a migration out that begins (none
 * pending) forgets the last one's. Past BRIM_MIGRATE_DESTS_MAX receivers
 * the last entry takes the rest.
 */
static uint32_t
dest_slot(struct brim_migrate *m, const struct brim_node_link *dest)
{
    struct mig_dest *d;
    uint32_t         i;

    if (m->stats.partitions_out_pending == 0) {
        m->ndests = 0;
    }
    for (i = 0; i < m->ndests; i++) {
        if (strcmp(m->dests[i].addr, dest->addr) == 0) {
            return i;
        }
    }
    if (m->ndests == BRIM_MIGRATE_DESTS_MAX) {
        return BRIM_MIGRATE_DESTS_MAX - 1;
    }
    d = &m->dests[m->ndests];
    memset(d, 0, sizeof(*d));
    snprintf(d->addr, sizeof(d->addr), "%s", dest->addr);
    d->since_ms = uv_now(m->node->loop);
    d->last_ms = d->since_ms;
    return m->ndests++;
}

int
mig_job_queue(struct brim_migrate *m, uint64_t epoch, uint32_t p,
              struct brim_node_link *dest)
{
    struct mig_job **nj, *j;
    uint32_t         cap;

    if (m->njobs == m->cap_jobs) {
        cap = m->cap_jobs == 0 ? 64 : 2 * m->cap_jobs;
        nj = brim_calloc(cap, sizeof(*nj));
        if (nj == NULL) {
            return BRIM_ENOMEM;
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
        return BRIM_ENOMEM;
    }
    j->epoch = epoch;
    j->p = p;
    j->dest = dest;
    j->keys_total = brim_store_partition_items(m->node->store, p);
    j->dest_slot = dest_slot(m, dest);
    m->dests[j->dest_slot].partitions++;
    m->dests[j->dest_slot].epoch =
        BRIM_MAX(m->dests[j->dest_slot].epoch, epoch);
    brim_store_cursor_init(&j->cursor, p);
    m->jobs[m->njobs++] = j;
    m->stats.partitions_out_pending++;
    return 0;
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

/*
 * The job ends: drop our copy of the partition. OK: handed over (or the
 * receiver holds it complete); else WHY says why it cannot be (its
 * receiver is no longer the owner: DESIGN.md 7.6).
 */
static void
job_finish(struct brim_migrate *m, struct mig_job *j, int ok, const char *why)
{
    struct brim_node *node = m->node;
    size_t            left = 0;

    BRIM_ASSERT(j->state != OUT_DONE);
    job_set_state(j, OUT_DONE);
    BRIM_ASSERT(m->stats.partitions_out_pending > 0);
    m->stats.partitions_out_pending--;
    if (m->stats.partitions_out_pending == 0 && node->migration_idle != NULL) {
        node->migration_idle(node); /* runs on the next loop turn */
    }
    brim_store_cursor_release(node->store, &j->cursor);
    if (!mig_owns(node, j->p) && !out_other_job(m, j)) {
        left = brim_store_drop_partition(node->store, j->p);
    }
    m->dests[j->dest_slot].last_ms = uv_now(node->loop);
    if (ok) {
        m->dests[j->dest_slot].done++;
        m->stats.partitions_out_done++;
        brim_log_debug("migrate: sent partition %u of epoch %" PRIu64
                       " to %s: %" PRIu64 " keys",
                       j->p, j->epoch, j->dest->addr, j->count);
    } else {
        m->dests[j->dest_slot].dropped++;
        m->stats.partitions_out_dropped++;
        brim_log_warn("migrate: partition %u of epoch %" PRIu64 " to %s "
                      "not completed (%s): %" PRIu64 " keys sent, %zu "
                      "dropped",
                      j->p, j->epoch, j->dest->addr, why, j->count, left);
    }
    if (!j->busy) {
        job_free(m, j);
    }
    mig_pump_soon(m, 0);
}

/*
 * Begin J's stream again from its first key, under the same migration id,
 * after DELAY_MS: its link was lost or the receiver answered an error.
 * The receiver accepts a STREAM_BEGIN of an id in flight, skips the keys
 * it holds or has tombstoned, so a restart cannot undo a write.
 */
static void
job_restart(struct brim_migrate *m, struct mig_job *j, uint64_t delay_ms,
            const char *why)
{
    uint64_t now = uv_now(m->node->loop);

    if (j->restarts++ % 20 == 0) {
        brim_log_warn("migrate: partition %u of epoch %" PRIu64 " to %s: "
                      "%s; streaming it again (restart %u)",
                      j->p, j->epoch, j->dest->addr, why, j->restarts);
    }
    m->stats.streams_restarted++;
    brim_store_cursor_release(m->node->store, &j->cursor);
    brim_store_cursor_init(&j->cursor, j->p);
    job_set_state(j, OUT_BEGIN);
    j->scan_done = 0;
    j->count = 0;
    j->not_before = now + delay_ms;
    mig_pump_soon(m, delay_ms);
}

static void job_reply(struct brim_peer *p, int status, const char *body,
                      size_t len, void *arg);

/* STREAM_BEGIN, _BATCH (the scratch entries) or _END of job J, sent. */
static void
job_send_op(struct brim_migrate *m, struct mig_job *j, uint32_t op)
{
    struct brim_req req;
    struct brim_buf buf;
    int             rc;

    memset(&req, 0, sizeof(req));
    req.op = op;
    req.request_id = ++j->dest->next_id;
    req.epoch = m->node->topo.committed.map.epoch;
    req.arg_epoch = j->epoch;
    req.partition = j->p;
    req.count = j->count;
    if (op == BRIM_OP_STREAM_BATCH) {
        /* The entries were scanned in this turn of the loop: they hold
         * nothing from before this flush mark (flush.h). */
        req.flush_ms = brim_node_flush_applied(m->node);
        req.nentries = m->scratch_n;
        req.entries_raw = m->scratch.data;
        req.entries_raw_len = m->scratch.len;
    }
    brim_buf_init(&buf);
    mig_fail_arm(m, MIG_FAIL_SEND);
    rc = brim_wire_encode_req(&buf, &req);
    mig_fail_disarm(m, MIG_FAIL_SEND);
    if (rc == 0) {
        rc = brim_peer_call(&j->dest->peer, &buf, job_reply, j);
    }
    brim_buf_destroy(&buf);
    if (rc != 0) {
        /* Out of memory, or the link went: the same again later. */
        job_restart(m, j, MIG_ERROR_MIN_MS, brim_strerror(rc));
        return;
    }
    j->busy = 1;
    if (op == BRIM_OP_STREAM_END) {
        j->end_sent = 1;
    }
}

/*
 * Scan callback: pack one live entry into the scratch batch while it
 * fits. The batch ends before an entry that would take it past
 * m->batch_bytes (that entry starts the next one); an entry larger than a
 * batch goes alone; one larger than the receiver's frame could never be
 * stored there (its max value is smaller than ours) and is skipped and
 * counted.
 */
static int
scan_entry(const struct brim_item *it, void *arg)
{
    struct brim_migrate   *m = arg;
    struct brim_wire_entry e;
    size_t                 mark, need;
    uint32_t               ttl = 0, exptime;

    exptime = brim_item_exptime(it);
    if (exptime != 0) {
        if (exptime <= m->now) {
            return BRIM_SCAN_NEXT; /* expired: skipped */
        }
        ttl = exptime - m->now;
    }
    need = (size_t) brim_item_key_len(it) + brim_item_val_len(it)
        + MIG_ENTRY_SLACK;
    if (need > m->frame_room) {
        m->stats.entries_refused++;
        if (m->stats.entries_refused % 100 == 1) {
            brim_log_warn("migrate: a %zu-byte value cannot be sent: the "
                          "receiver's frames take %zu bytes (%" PRIu64
                          " such entries so far)",
                          brim_item_val_len(it), m->frame_room,
                          m->stats.entries_refused);
        }
        return BRIM_SCAN_NEXT;
    }
    if (m->scratch_n > 0 && m->scratch.len + need > m->batch_bytes) {
        return BRIM_SCAN_STOP_BEFORE; /* it starts the next batch */
    }
    mark = m->scratch.len;
    mig_item_entry(it, ttl, &e);
    if (brim_wire_entry_pack(&m->scratch, &e) != 0) {
        brim_buf_truncate(&m->scratch, mark);
        m->scan_nomem = 1;
        return BRIM_SCAN_STOP_BEFORE; /* out of memory: try again */
    }
    m->scratch_n++;
    need = (size_t) brim_item_key_len(it) + brim_item_val_len(it);
    m->stats.keys_out++;
    m->stats.bytes_out += need;
    /* By why the partition moved, as the receiver counts keys_in_*:
     * both sides take it from the same two committed maps. */
    if (m->scan_reason == BRIM_MOVE_CAP) {
        m->stats.keys_out_cap++;
        m->stats.bytes_out_cap += need;
    } else {
        m->stats.keys_out_arc++;
        m->stats.bytes_out_arc += need;
    }
    return m->scratch_n >= MIG_BATCH_ENTRIES || m->scratch.len >= m->batch_bytes
        ? BRIM_SCAN_STOP
        : BRIM_SCAN_NEXT;
}

/* Build and send J's next STREAM_BATCH (or END once the scan is done). */
static void
job_batch(struct brim_migrate *m, struct mig_job *j, uint64_t now_ms)
{
    struct brim_node *node = m->node;

    if (j->scan_done) {
        job_set_state(j, OUT_END);
        job_send_op(m, j, BRIM_OP_STREAM_END);
        return;
    }
    if (m->pace_next_ms > (double) now_ms) {
        /* --migrate-mb-per-s, a ceiling: this node's streams wait. */
        j->not_before = (uint64_t) m->pace_next_ms + 1;
        mig_pump_soon(m, j->not_before - now_ms);
        return;
    }
    if (brim_peer_write_queued(&j->dest->peer) > 0) {
        /* The link has not drained: the receiver or the network is
         * slower than we are; this batch waits for it. */
        m->stats.link_waits++;
        j->not_before = now_ms + 1;
        mig_pump_soon(m, 1);
        return;
    }
    brim_buf_truncate(&m->scratch, 0);
    m->scratch_n = 0;
    m->scan_nomem = 0;
    m->now = (uint32_t) time(NULL);
    m->frame_room = brim_link_max_frame(j->dest) - MIG_FRAME_SLACK;
    m->batch_bytes = BRIM_MIN((size_t) MIG_BATCH_BYTES, m->frame_room);
    m->scan_reason = j->reason;
    j->scan_done = brim_store_scan(node->store, &j->cursor, MIG_SCAN_BUCKETS,
                                   scan_entry, m);
    if (m->scan_nomem && m->scratch_n == 0) {
        j->not_before = now_ms + MIG_ERROR_MIN_MS;
        mig_pump_soon(m, MIG_ERROR_MIN_MS);
        return;
    }
    if (m->scratch_n == 0) {
        mig_pump_soon(m, 0); /* nothing yet: next slice */
        return;
    }
    BRIM_ASSERT(m->scratch.len + MIG_FRAME_SLACK
                <= brim_link_max_frame(j->dest));
    j->count += m->scratch_n;
    m->dests[j->dest_slot].keys += m->scratch_n;
    m->dests[j->dest_slot].bytes += m->scratch.len;
    m->stats.batches_out++;
    if (node->cfg.migrate_mb_per_s > 0) {
        m->pace_next_ms = (m->pace_next_ms > (double) now_ms ? m->pace_next_ms
                                                             : (double) now_ms)
            + (double) m->scratch.len / (node->cfg.migrate_mb_per_s * 1e3);
    }
    job_set_state(j, OUT_WAIT);
    job_send_op(m, j, BRIM_OP_STREAM_BATCH);
}

/* One step of job J: send its next request, if it may. */
static void
job_step(struct brim_migrate *m, struct mig_job *j, uint64_t now_ms)
{
    if (j->busy || j->state == OUT_DONE || now_ms < j->not_before) {
        return;
    }
    if (j->cancelled) {
        job_finish(m, j, 0,
                   "its new owner is no longer a member that owns "
                   "it");
        return;
    }
    if (j->state == OUT_COMPLETE_WAIT) {
        /* END was acknowledged: the new owner holds every key and
         * forwards nothing more; COMPLETE only said when. */
        job_finish(m, j, 1, NULL);
        return;
    }
    if (!brim_link_ensure(j->dest)) {
        return; /* connecting: the callback pumps */
    }
    switch (j->state) {
    case OUT_QUEUED:
    case OUT_BEGIN:
        job_set_state(j, OUT_BEGIN);
        job_send_op(m, j, BRIM_OP_STREAM_BEGIN);
        return;
    case OUT_READY:
        job_batch(m, j, now_ms);
        return;
    default:
        return;
    }
}

/* The receiver refused J's request with REP (not a RETRY to BEGIN). */
static void
job_refused(struct brim_migrate *m, struct mig_job *j,
            const struct brim_rep *rep)
{
    char     why[BRIM_ERRBUF_LEN];
    uint64_t delay;

    snprintf(why, sizeof(why), "%s: %.*s", brim_err_name(rep->status),
             (int) BRIM_MIN(rep->message_len, 160),
             rep->message != NULL ? rep->message : "");
    if (rep->status == BRIM_EEXISTS) {
        /* The receiver holds no stream of this id: it completed it (a
         * restart after END), or it superseded it. Either way it wants
         * nothing more from us. */
        job_finish(m, j, j->end_sent, why);
        return;
    }
    /* NOMEM, a failed insert, anything else: the same stream again after
     * a backoff, for as long as the receiver owns the partition. */
    m->stats.stream_errors++;
    delay = BRIM_MIN((uint64_t) MIG_ERROR_MIN_MS << BRIM_MIN(j->errors, 5u),
                     (uint64_t) MIG_ERROR_MAX_MS);
    j->errors++;
    job_restart(m, j, delay, why);
}

static void
job_reply(struct brim_peer *p, int status, const char *body, size_t len,
          void *arg)
{
    struct mig_job        *j = arg;
    struct brim_node_link *d = p->data;
    struct brim_migrate   *m = d->set->node->mig;
    struct brim_rep        rep;
    char                   errbuf[BRIM_ERRBUF_LEN];
    uint64_t               now_ms = uv_now(m->node->loop);

    j->busy = 0;
    if (j->state == OUT_DONE) {
        job_free(m, j);
        return;
    }
    if (j->cancelled) {
        job_finish(m, j, 0,
                   "its new owner is no longer a member that owns "
                   "it");
        return;
    }
    if (status != 0) {
        job_restart(m, j, 0, "the link to the new owner was lost");
        return;
    }
    if (brim_wire_parse_rep(body, len, BRIM_OP_PING, &m->node->cfg.limits,
                            &m->node->zone, &rep, errbuf)
        != 0)
    {
        m->stats.stream_errors++;
        job_restart(m, j, MIG_ERROR_MIN_MS, "malformed reply");
        return;
    }
    if (rep.status == BRIM_ERETRY && j->state == OUT_BEGIN) {
        /* It has not committed the epoch yet: ask again, as long as the
         * committed topology here says it owns the partition. */
        if (++j->retries % 100 == 0) {
            brim_log_warn("migrate: partition %u of epoch %" PRIu64 ": %s "
                          "has not committed it after %u tries; asking "
                          "again",
                          j->p, j->epoch, d->addr, j->retries);
        }
        j->not_before = now_ms + MIG_RETRY_MS;
        mig_pump_soon(m, MIG_RETRY_MS);
        return;
    }
    if (rep.status != 0) {
        job_refused(m, j, &rep);
        return;
    }
    j->retries = 0;
    switch (j->state) {
    case OUT_BEGIN:
        job_set_state(j, OUT_READY);
        break;
    case OUT_WAIT:
        j->errors = 0;
        job_set_state(j, OUT_READY);
        j->not_before = now_ms + m->stats.delay_ms;
        break;
    case OUT_END:
        if (j->completed) {
            job_finish(m, j, 1, NULL);
            break;
        }
        /* The copy stays until the new owner's COMPLETE (it may still
         * forward reads and pulls), or a while at most. */
        job_set_state(j, OUT_COMPLETE_WAIT);
        j->not_before = now_ms + MIG_COMPLETE_WAIT_MS;
        mig_pump_soon(m, MIG_COMPLETE_WAIT_MS);
        return;
    default:
        break;
    }
    mig_pump_soon(m, m->stats.delay_ms);
}

void
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

/* True when the committed map gives J's partition to J's destination. */
static int
job_dest_owns(const struct brim_node *node, const struct mig_job *j)
{
    const struct brim_topo *cur = &node->topo.committed;
    uint16_t                n = cur->map.owner[j->p];

    return n < cur->nmembers && cur->members[n].state != BRIM_MEMBER_DEAD
        && strcmp(cur->members[n].addr, j->dest->addr) == 0;
}

void
mig_jobs_recheck(struct brim_migrate *m, uint8_t *keep)
{
    struct mig_job *j;
    uint32_t        i;

    /* A stream of an older epoch goes on while its destination still
     * owns the partition (the receiver keeps the same migration id);
     * otherwise its destination was declared dead, and it stops and its
     * copy goes (DESIGN.md 7.6: the next owner starts the partition from
     * what the old destination holds). */
    for (i = 0; i < m->njobs; i++) {
        j = m->jobs[i];
        if (j->state != OUT_DONE && !j->cancelled && job_dest_owns(m->node, j))
        {
            keep[j->p] = 1;
        } else {
            j->cancelled = 1;
        }
    }
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

/* ---- the pump ---- */

/*
 * One line per migration out of this node, not one per partition: a line
 * every MIG_LOG_MS while streams run, and one when the last is handed
 * over, with counts (per-partition lines are at debug).
 */
static void
mig_out_progress(struct brim_migrate *m, uint64_t now_ms)
{
    const struct brim_migrate_stats *st = &m->stats;
    uint64_t                         ms, bytes;

    if (st->partitions_out_pending > 0 && !m->out_running) {
        m->out_running = 1;
        m->out_since_ms = now_ms;
        m->out_logged_ms = now_ms;
        m->out_since_bytes = st->bytes_out;
        m->out_since_keys = st->keys_out;
        m->out_since_done =
            st->partitions_out_done + st->partitions_out_dropped;
        return;
    }
    if (!m->out_running) {
        return;
    }
    ms = now_ms - m->out_since_ms;
    bytes = st->bytes_out - m->out_since_bytes;
    if (st->partitions_out_pending == 0) {
        m->out_running = 0;
        brim_log_info(
            "migrate: every outgoing partition is handed over: %" PRIu64
            " partitions, %" PRIu64 " keys, %" PRIu64 " bytes in %" PRIu64
            " ms (%.1f MB/s)%s",
            st->partitions_out_done + st->partitions_out_dropped
                - m->out_since_done,
            st->keys_out - m->out_since_keys, bytes, ms,
            ms > 0 ? bytes / 1e3 / (double) ms : 0.0,
            st->partitions_out_dropped > 0 ? " (some dropped: see the warnings)"
                                           : "");
    } else if (now_ms - m->out_logged_ms >= MIG_LOG_MS) {
        m->out_logged_ms = now_ms;
        brim_log_info(
            "migrate: streaming out: %u partitions to go, %" PRIu64
            " keys and %" PRIu64 " bytes sent in %" PRIu64 " ms (%.1f MB/s)",
            st->partitions_out_pending, st->keys_out - m->out_since_keys, bytes,
            ms, ms > 0 ? bytes / 1e3 / (double) ms : 0.0);
    }
}

static void pump_turn(struct brim_migrate *m);

/*
 * The pump: steps the jobs, within the pace of DESIGN.md 13 (see
 * MIG_SLICE_NS): while the window's slice lasts, or for one batch when
 * the pump fired late (its loop is behind), then it runs again when the
 * next window begins, or MIG_YIELD_MS later.
 */
static void
pump_run(struct brim_migrate *m, int timed)
{
    uint64_t        now_ms = uv_now(m->node->loop), next = UINT64_MAX;
    uint64_t        t0 = uv_hrtime(), t1, spent, sent0;
    uint32_t        i, active = 0;
    struct mig_job *j;
    int             lagging, cut = 0, turn_cut = 0;

    if (m->node->stopping) {
        return;
    }
    mig_pace_tick(m, t0);
    /* Only a timer can be late; a turn's continuation is due now. */
    lagging = timed && t0 > m->pump_due_ns + m->lag_ns;
    m->stats.send_yields += (uint64_t) lagging;
    mig_out_progress(m, now_ms);
    sent0 = m->stats.batches_out;
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
        if (j->state == OUT_READY && !j->busy && now_ms >= j->not_before) {
            /* It would build a batch: only within the pace. */
            t1 = uv_hrtime();
            if (!mig_budget_open(&m->out_budget, t1)
                || (lagging && m->stats.batches_out > sent0))
            {
                cut = 1;
                break;
            }
            if (!mig_turn_open(m)) {
                turn_cut = 1; /* the rest after the loop polls */
                break;
            }
            job_step(m, j, now_ms);
            spent = uv_hrtime() - t1;
            m->out_budget.spent_ns += spent;
            mig_turn_spend(m, spent);
        } else if (j->state != OUT_DONE) {
            job_step(m, j, now_ms);
        }
        if (i < m->njobs && m->jobs[i] == j && j->state != OUT_DONE && !j->busy
            && j->not_before > now_ms && j->not_before < next)
        {
            next = j->not_before;
        }
    }
    if (cut) {
        if (lagging) {
            mig_pump_soon(m, MIG_YIELD_MS);
        } else {
            m->stats.send_slices++;
            mig_pump_soon(m, mig_budget_wait_ms(&m->out_budget, uv_hrtime()));
        }
    } else if (turn_cut) {
        mig_turn_defer(m, MIG_TURN_OUT, pump_turn);
    }
    if (next != UINT64_MAX) {
        mig_pump_soon(m, next - now_ms);
    }
    if (m->out_running) {
        mig_pump_soon(m, MIG_LOG_MS); /* the progress line, and the end */
    }
}

/* The pump's timer. */
static void
mig_pump_cb(uv_timer_t *t)
{
    struct brim_migrate *m = t->data;

    m->pump_armed = 0;
    pump_run(m, 1);
}

/* The pump's continuation at the next turn of the loop (MIG_TURN_NS). */
static void
pump_turn(struct brim_migrate *m)
{
    pump_run(m, 0);
}

void
mig_pump_soon(struct brim_migrate *m, uint64_t delay_ms)
{
    uint64_t due = uv_now(m->node->loop) + delay_ms;

    if (m->pump_armed && m->pump_due_ms <= due) {
        return; /* it fires soon enough already */
    }
    uv_timer_start(&m->pump, mig_pump_cb, delay_ms, 0);
    m->pump_armed = 1;
    m->pump_due_ms = due;
    m->pump_due_ns = uv_hrtime() + delay_ms * 1000000;
}
