/*
 * server/node/migrate.c - migration's entry points (DESIGN.md 7 steps
 * 3-6, PROTOCOL.md section 11): what a commit starts (the partitions this
 * node lost to live members are queued to stream out, the ones it gained
 * from live members are in flight), the data path's hooks (tombstones for
 * writes in flight), the listener told of opened links, and the counters.
 * The work itself is in migrate_send.c, migrate_recv.c, migrate_read.c
 * and migrate_state.c (migrate_int.h shows how they depend).
 */
#include "server/node/migrate_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "common/map.h"
#include "server/log.h"

/*
 * Why each partition coming in, or queued to stream out, moved OLD to
 * CUR (brim_move_reason_of(): a new arc or the cap), so the entries
 * received and sent can be counted by reason; sender and receiver take
 * it from the same two maps, so their counts agree. Best effort:
 * without memory, all count as arc.
 */
static void
mig_reasons(struct brim_migrate *m, const struct brim_topo *old,
            const struct brim_topo *cur)
{
    struct brim_ring oring, nring;
    struct mig_job  *j;
    uint64_t        *pos;
    uint32_t         p, i, P = cur->map.npartitions;
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
                &oring, old->map.owner[p], &nring, cur->map.owner[p], pos[p]);
        }
    }
    for (i = 0; i < m->njobs; i++) {
        j = m->jobs[i];
        if (j->epoch == cur->map.epoch && j->p < P) {
            j->reason = (uint8_t) brim_move_reason_of(
                &oring, old->map.owner[j->p], &nring, cur->map.owner[j->p],
                pos[j->p]);
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
    const struct brim_topo   *cur = &node->topo.committed;
    struct brim_migrate      *m;
    const struct brim_member *sm;
    struct brim_node_link    *d;
    uint32_t                  p, P = cur->map.npartitions, queued = 0;
    uint32_t                  gained = 0, held = 0, gone = 0;
    uint16_t                  o, n;
    int32_t                   src;

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
        if (src < 0 || src == node->topo.self) {
            brim_log_debug("migrate: partition %u: its source is gone; "
                           "complete with what is here",
                           p);
            mig_in_finish(m, p);
            m->stats.partitions_in_done++;
            m->stats.partitions_in_unfinished++;
            gone++;
        } else {
            m->in_src[p] = (uint16_t) src;
        }
    }
    for (p = 0; p < P; p++) {
        o = old->map.owner[p];
        n = cur->map.owner[p];
        if (old_self >= 0 && o == (uint16_t) old_self
            && (node->topo.self < 0 || n != (uint16_t) node->topo.self)
            && n < cur->nmembers && cur->members[n].state != BRIM_MEMBER_DEAD
            && cur->members[n].addr[0] != '\0')
        {
            /* Lost to a live member: stream it under id (epoch, p).
             * A job is a few dozen bytes; without them the partition
             * would be neither streamed nor kept. */
            d = brim_link_get(&node->links, cur->members[n].addr);
            if (d == NULL || mig_job_queue(m, cur->map.epoch, p, d) != 0) {
                BRIM_PANIC("migrate: out of memory queueing a stream");
            }
            keep[p] = 1;
            queued++;
        } else if (node->topo.self >= 0 && n == (uint16_t) node->topo.self
                   && (old_self < 0 || o != (uint16_t) old_self))
        {
            /* Gained: in flight when a live member had it. */
            src = o < old->nmembers
                ? brim_topo_find_source(cur, old->members[o].name)
                : -1;
            if (src >= 0 && src != node->topo.self) {
                brim_store_drop_partition(node->store, p); /* stale */
                mig_in_start(m, p, cur->map.epoch, src);
                gained++;
                /* Connect now: misses of P are forwarded to it. */
                sm = brim_topo_source(cur, (uint32_t) src);
                if (sm->addr[0] != '\0'
                    && (d = brim_link_get(&node->links, sm->addr)) != NULL) {
                    (void) brim_link_ensure(d);
                }
            } else {
                /* No live source (it died): the partition starts empty
                 * here; a copy kept here lacks the dead node's writes.
                 * (No hold: the dead node's lease ran out before it was
                 * declared dead; docs/design.md, "Leases".) */
                if (m->in_state[p] == IN_FLIGHT) {
                    mig_in_finish(m, p);
                    m->stats.partitions_in_unfinished++;
                }
                if (o < old->nmembers) {
                    brim_store_drop_partition(node->store, p);
                    held++;
                }
            }
        } else if (m->in_state[p] == IN_FLIGHT
                   && (node->topo.self < 0 || n != (uint16_t) node->topo.self))
        {
            mig_in_finish(m, p); /* lost while in flight */
        }
    }
    if (gained > 0 || queued > 0) {
        mig_reasons(m, old, cur);
    }
    if (gained > 0) {
        mig_probe_start(m); /* no partition stays in flight */
    }
    if (queued > 0 || gained > 0 || held > 0 || gone > 0) {
        brim_log_info("migrate: epoch %" PRIu64 ": %u partitions to stream "
                      "out, %u coming in, %u of dead members start empty, "
                      "%u in flight completed (their source is gone)",
                      cur->map.epoch, queued, gained, held, gone);
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
        m->stats.reads_in_flight++;
        return;
    case BRIM_MIG_WRITE:
        m->stats.writes_in_flight++;
        if (rc != 0) {
            return;
        }
        break;
    default:
        m->stats.deletes_in_flight++;
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
        m->stats.tomb_refusals++;
        return BRIM_ERETRY;
    }
    return 0;
}

void
brim_migrate_link_open(struct brim_node *node, struct brim_node_link *link)
{
    struct brim_migrate *m = node->mig;

    (void) link;
    if (m != NULL && !node->stopping) {
        mig_pump_soon(m, 0); /* jobs that waited for it */
        mig_send_completes(m);
    }
}

void
brim_migrate_stop(struct brim_node *node)
{
    struct brim_migrate *m = node->mig;

    if (m != NULL) {
        uv_close((uv_handle_t *) &m->pump, NULL);
        uv_close((uv_handle_t *) &m->probe, NULL);
        uv_close((uv_handle_t *) &m->in_resume, NULL);
        uv_close((uv_handle_t *) &m->turn_idle, NULL);
        uv_close((uv_handle_t *) &m->turn_check, NULL);
    }
}

void
brim_migrate_release_links(struct brim_node *node)
{
    if (node->mig != NULL) {
        mig_in_unpause(node->mig);
    }
}

void
brim_migrate_free(struct brim_node *node)
{
    mig_free(node->mig);
    node->mig = NULL;
}

void
brim_migrate_get_stats(struct brim_node *node, struct brim_migrate_stats *out)
{
    if (node->mig == NULL) {
        memset(out, 0, sizeof(*out));
    } else {
        *out = node->mig->stats;
    }
    out->links_lost = node->links.lost;
}

int
brim_migrate_streaming(const struct brim_node *node)
{
    const struct brim_migrate *m = node->mig;

    return m != NULL
        && (m->stats.partitions_in_flight > 0
            || m->stats.partitions_out_pending > 0);
}

void
brim_migrate_prepare(struct brim_node *node)
{
    const struct brim_topo   *cur = &node->topo.committed;
    const struct brim_topo   *next = &node->topo.pending;
    const struct brim_member *sm;
    struct brim_node_link    *l;
    uint8_t                  *from;
    uint32_t                  p, P = cur->map.npartitions, i;
    uint16_t                  o;
    int32_t                   self = node->topo.self;

    if (!node->topo.has_pending || node->topo.self_pending < 0
        || cur->map.epoch == 0 || next->map.npartitions != P
        || cur->nmembers == 0)
    {
        return;
    }
    from = brim_calloc(cur->nmembers, 1);
    if (from == NULL) {
        return; /* the commit connects them */
    }
    for (p = 0; p < P; p++) {
        o = cur->map.owner[p];
        if (next->map.owner[p] == (uint16_t) node->topo.self_pending
            && o < cur->nmembers && (self < 0 || o != (uint16_t) self))
        {
            from[o] = 1;
        }
    }
    for (i = 0; i < cur->nmembers; i++) {
        sm = &cur->members[i];
        if (from[i] && sm->state != BRIM_MEMBER_DEAD && sm->addr[0] != '\0'
            && (l = brim_link_get(&node->links, sm->addr)) != NULL)
        {
            (void) brim_link_ensure(l);
        }
    }
    brim_free(from);
}

uint32_t
brim_migrate_streams_out(struct brim_node               *node,
                         struct brim_migrate_stream_out *out, uint32_t max)
{
    struct brim_migrate   *m = node->mig;
    const struct mig_dest *d;
    const struct mig_job  *j;
    uint64_t               now_ms;
    uint32_t               i, n;

    if (m == NULL) {
        return 0;
    }
    now_ms = uv_now(node->loop);
    n = BRIM_MIN(m->ndests, max);
    for (i = 0; i < n; i++) {
        d = &m->dests[i];
        memset(&out[i], 0, sizeof(out[i]));
        snprintf(out[i].dest, sizeof(out[i].dest), "%s", d->addr);
        out[i].partitions = d->partitions;
        out[i].done = d->done;
        out[i].dropped = d->dropped;
        out[i].keys_sent = d->keys;
        out[i].bytes_sent = d->bytes;
        out[i].epoch = d->epoch;
        out[i].elapsed_ms =
            (d->done + d->dropped < d->partitions ? now_ms : d->last_ms)
            - d->since_ms;
    }
    for (i = 0; i < m->njobs; i++) {
        j = m->jobs[i];
        if (j->dest_slot < n && j->state != OUT_DONE && !j->cancelled
            && j->keys_total > j->count)
        {
            out[j->dest_slot].keys_left += j->keys_total - j->count;
        }
    }
    return n;
}
