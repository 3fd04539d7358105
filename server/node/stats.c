/*
 * server/node/stats.c - the node's STATS reply: store counters, listener
 * counters and per-op request counts, as one msgpack map (PROTOCOL.md,
 * "STATS"). A section name selects a subset: "node", "store", "conns",
 * "ops", "migration" (mig_* counters, migrate.c); an empty section is
 * all of them. docs/operations.md explains the
 * names.
 */
#include "server/node/stats.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/map.h"
#include "common/placement.h"
#include "common/ring.h"
#include "proto/frame.h"
#include "server/http.h"
#include "server/node/epoch.h"
#include "server/node/lease.h"

/* Sections; a pair belongs to one. */
#define SEC_NODE 0x1u
#define SEC_STORE 0x2u
#define SEC_CONNS 0x4u
#define SEC_OPS 0x8u
#define SEC_MIG 0x10u
#define SEC_ALL 0x1fu

/*
 * The pairs are written in two passes: the first (OUT NULL) only counts
 * the pairs of the chosen sections, since a msgpack map states its size
 * first; the second writes them.
 */
struct stats_emit {
    struct brim_buf *out;      /* NULL while counting */
    uint32_t         sections; /* SEC_* chosen */
    uint32_t         npairs;   /* pairs counted or written */
    int              rc;       /* first error */
};

static void
emit_u64(struct stats_emit *e, uint32_t sec, const char *name, uint64_t v)
{
    if ((e->sections & sec) == 0) {
        return;
    }
    e->npairs++;
    if (e->out != NULL && e->rc == 0) {
        e->rc = brim_wire_stats_u64(e->out, name, v);
    }
}

static void
emit_f64(struct stats_emit *e, uint32_t sec, const char *name, double v)
{
    if ((e->sections & sec) == 0) {
        return;
    }
    e->npairs++;
    if (e->out != NULL && e->rc == 0) {
        e->rc = brim_wire_stats_f64(e->out, name, v);
    }
}

static void
emit_str(struct stats_emit *e, uint32_t sec, const char *name, const char *s)
{
    if ((e->sections & sec) == 0) {
        return;
    }
    e->npairs++;
    if (e->out != NULL && e->rc == 0) {
        e->rc = brim_wire_stats_str(e->out, name, s, strlen(s));
    }
}

/* "ops": a nested map of op name to count, ops never seen left out. */
static void
emit_ops(struct stats_emit *e, struct brim_node *node)
{
    uint32_t code, n = 0;

    if ((e->sections & SEC_OPS) == 0) {
        return;
    }
    e->npairs++;
    if (e->out == NULL) {
        return;
    }
    for (code = 0; code < BRIM_OP_CODE_LIMIT; code++) {
        n += node->stats.ops[code] > 0;
    }
    if (e->rc == 0) {
        e->rc = brim_wire_stats_map(e->out, "ops", n);
    }
    for (code = 0; e->rc == 0 && code < BRIM_OP_CODE_LIMIT; code++) {
        if (node->stats.ops[code] > 0) {
            e->rc = brim_wire_stats_u64(e->out, brim_op_name(code),
                                        node->stats.ops[code]);
        }
    }
}

/*
 * "migration": a nested map "stream_to:ADDR" per receiver of the last
 * migration out (brim_migrate_streams_out()).
 */
static void
emit_streams_out(struct stats_emit *e, struct brim_node *node)
{
    static const char *names[] = {"partitions", "done",       "dropped",
                                  "keys_sent",  "bytes_sent", "keys_left",
                                  "elapsed_ms", "epoch"};
    struct brim_migrate_stream_out so[BRIM_MIGRATE_DESTS_MAX];
    char                           name[160];
    uint64_t                       v[sizeof(names) / sizeof(names[0])];
    uint32_t                       i, k, n;

    if ((e->sections & SEC_MIG) == 0) {
        return;
    }
    n = brim_migrate_streams_out(node, so, BRIM_MIGRATE_DESTS_MAX);
    e->npairs += n;
    for (i = 0; e->out != NULL && e->rc == 0 && i < n; i++) {
        v[0] = so[i].partitions;
        v[1] = so[i].done;
        v[2] = so[i].dropped;
        v[3] = so[i].keys_sent;
        v[4] = so[i].bytes_sent;
        v[5] = so[i].keys_left;
        v[6] = so[i].elapsed_ms;
        v[7] = so[i].epoch;
        snprintf(name, sizeof(name), "stream_to:%.127s", so[i].dest);
        e->rc = brim_wire_stats_map(e->out, name, BRIM_ARRAY_LEN(names));
        for (k = 0; e->rc == 0 && k < BRIM_ARRAY_LEN(names); k++) {
            e->rc = brim_wire_stats_u64(e->out, names[k], v[k]);
        }
    }
}

/*
 * Count, once per committed epoch, this node's displaced partitions (its
 * ring owner is another member) and its cap, as the coordinator's
 * CLUSTER_STATS does for every member: a P-long walk, too long to repeat
 * on every STATS. Standalone or not a member: 0 and 0.
 */
static void
stats_ring_counts(struct brim_node *node)
{
    const struct brim_topo *t = &node->topo.committed;
    struct brim_ring        ring;
    uint64_t               *pos, *caps;
    uint32_t                p, self, displaced = 0;

    if (node->ring_epoch == t->map.epoch) {
        return;
    }
    node->ring_epoch = t->map.epoch;
    node->ring_displaced = node->ring_cap = 0;
    if (node->cfg.standalone || t->map.epoch == 0 || node->topo.self < 0) {
        return;
    }
    self = (uint32_t) node->topo.self;
    pos = brim_malloc((size_t) t->map.npartitions * sizeof(*pos));
    caps = brim_calloc(t->nmembers, sizeof(*caps));
    if (pos == NULL || caps == NULL || brim_topo_ring(t, &ring, 1, NULL) != 0) {
        brim_free(pos);
        brim_free(caps);
        node->ring_epoch = 0; /* try again next time */
        return;
    }
    brim_map_positions(t->seed, t->map.npartitions, pos);
    brim_ring_caps(&ring, t->map.npartitions, t->eps_ppm, caps);
    for (p = 0; p < t->map.npartitions; p++) {
        displaced +=
            t->map.owner[p] == self && brim_ring_owner(&ring, pos[p]) != self;
    }
    node->ring_displaced = displaced;
    node->ring_cap = caps[self];
    brim_ring_destroy(&ring);
    brim_free(pos);
    brim_free(caps);
}

static void
stats_emit_all(struct stats_emit *e, struct brim_node *node)
{
    struct brim_store_stats   ss;
    struct brim_server_stats *cs = &node->srv.stats;
    struct brim_migrate_stats ms;
    struct brim_http_stats    hs;

    brim_store_get_stats(node->store, &ss);
    brim_http_get_stats(node->http, &hs);
    stats_ring_counts(node);
    emit_str(e, SEC_NODE, "name", node->cfg.name);
    emit_str(e, SEC_NODE, "role", "node");
    emit_u64(e, SEC_NODE, "incarnation", node->incarnation);
    emit_u64(e, SEC_NODE, "committed_epoch", node->topo.committed.map.epoch);
    emit_u64(e, SEC_NODE, "pending_epoch",
             node->topo.has_pending ? node->topo.pending.map.epoch : 0);
    emit_u64(e, SEC_NODE, "partitions_owned", brim_node_owned(node));
    emit_u64(e, SEC_NODE, "partitions_displaced", node->ring_displaced);
    emit_u64(e, SEC_NODE, "partitions_cap", node->ring_cap);
    emit_u64(e, SEC_NODE, "lease_fresh",
             (uint64_t) brim_node_lease_fresh(node));
    emit_u64(e, SEC_NODE, "lease_rounds", node->lease.rounds);
    emit_u64(e, SEC_NODE, "lease_member_renewals", node->lease.member_renewals);
    emit_u64(e, SEC_NODE, "lease_expiries", node->lease.expiries);
    emit_u64(e, SEC_NODE, "heartbeat_late_max_ms",
             node->coordlink.hb_late_max_ms);
    emit_u64(e, SEC_NODE, "heartbeats_late", node->coordlink.hb_late);
    emit_u64(e, SEC_NODE, "heartbeats_early", node->coordlink.hb_early);
    emit_u64(e, SEC_NODE, "uptime_s", (uint64_t) time(NULL) - node->start_unix);
    emit_u64(e, SEC_NODE, "requests", node->stats.requests);
    emit_u64(e, SEC_NODE, "internal_requests", node->stats.internal_requests);
    emit_u64(e, SEC_NODE, "bad_requests", node->stats.bad_requests);
    emit_f64(e, SEC_NODE, "requests_per_sec", node->stats.requests_per_sec);
    emit_u64(e, SEC_STORE, "partitions", node->cfg.partitions);
    emit_u64(e, SEC_STORE, "partitions_used", ss.partitions_used);
    emit_u64(e, SEC_STORE, "keys", ss.items);
    emit_u64(e, SEC_STORE, "keys_dropped_pending", ss.dropped_pending);
    emit_u64(e, SEC_STORE, "bytes", ss.item_bytes);
    emit_u64(e, SEC_STORE, "table_bytes", ss.table_bytes);
    emit_u64(e, SEC_STORE, "memory_used", brim_store_data_bytes(node->store));
    emit_u64(e, SEC_STORE, "process_bytes", brim_alloc_bytes());
    emit_u64(e, SEC_STORE, "memory_limit",
             (uint64_t) node->cfg.memory_mb << 20);
    emit_u64(e, SEC_STORE, "hits", ss.hits);
    emit_u64(e, SEC_STORE, "misses", ss.misses);
    emit_u64(e, SEC_STORE, "sets", ss.sets);
    emit_u64(e, SEC_STORE, "deletes", ss.deletes);
    emit_u64(e, SEC_STORE, "evictions", ss.evictions);
    emit_u64(e, SEC_STORE, "expirations", ss.expirations);
    emit_u64(e, SEC_STORE, "flush_mark_ms", node->flush.applied_ms);
    emit_u64(e, SEC_STORE, "flush_pending_ms", node->flush.pending_lo_ms);
    emit_u64(e, SEC_STORE, "flushes", node->flush.applied);
    emit_u64(e, SEC_STORE, "flushes_stamped", node->flush.stamped);
    emit_u64(e, SEC_STORE, "flush_dropped", node->flush.dropped);
    emit_u64(e, SEC_CONNS, "connections", cs->conns_current);
    emit_u64(e, SEC_CONNS, "connections_total", cs->conns_total);
    emit_u64(e, SEC_CONNS, "connections_refused", cs->conns_refused);
    emit_u64(e, SEC_CONNS, "connections_idle_closed", cs->conns_idle_closed);
    emit_u64(e, SEC_CONNS, "read_pauses", cs->pauses);
    emit_u64(e, SEC_CONNS, "buffer_bytes", cs->out_bytes);
    emit_u64(e, SEC_CONNS, "buffer_limit",
             (uint64_t) node->cfg.buffer_mb << 20);
    emit_u64(e, SEC_CONNS, "buffer_pauses", cs->out_total_pauses);
    emit_u64(e, SEC_CONNS, "bad_frames", cs->bad_frames);
    emit_u64(e, SEC_CONNS, "auth_ok", node->guard.stats.ok);
    emit_u64(e, SEC_CONNS, "auth_failures", node->guard.stats.failures);
    emit_u64(e, SEC_CONNS, "auth_rate_limited", node->guard.stats.rate_limited);
    emit_u64(e, SEC_CONNS, "auth_out_failures", node->guard.stats.out_failures);
    emit_u64(e, SEC_CONNS, "http_connections", hs.conns_current);
    emit_u64(e, SEC_CONNS, "http_connections_total", hs.conns_total);
    emit_u64(e, SEC_CONNS, "http_connections_refused", hs.conns_refused);
    emit_u64(e, SEC_CONNS, "http_requests", hs.requests);
    brim_migrate_get_stats(node, &ms);
    emit_u64(e, SEC_MIG, "mig_keys_in", ms.keys_in);
    emit_u64(e, SEC_MIG, "mig_bytes_in", ms.bytes_in);
    emit_u64(e, SEC_MIG, "mig_keys_out", ms.keys_out);
    emit_u64(e, SEC_MIG, "mig_bytes_out", ms.bytes_out);
    emit_u64(e, SEC_MIG, "mig_batches_in", ms.batches_in);
    emit_u64(e, SEC_MIG, "mig_batches_out", ms.batches_out);
    emit_u64(e, SEC_MIG, "mig_partitions_in_flight", ms.partitions_in_flight);
    emit_u64(e, SEC_MIG, "mig_partitions_out_pending",
             ms.partitions_out_pending);
    emit_u64(e, SEC_MIG, "mig_partitions_in_done", ms.partitions_in_done);
    emit_u64(e, SEC_MIG, "mig_partitions_out_done", ms.partitions_out_done);
    emit_u64(e, SEC_MIG, "mig_partitions_out_dropped",
             ms.partitions_out_dropped);
    emit_u64(e, SEC_MIG, "mig_entries_skipped", ms.entries_skipped);
    emit_u64(e, SEC_MIG, "mig_reads_in_flight", ms.reads_in_flight);
    emit_u64(e, SEC_MIG, "mig_writes_in_flight", ms.writes_in_flight);
    emit_u64(e, SEC_MIG, "mig_deletes_in_flight", ms.deletes_in_flight);
    emit_u64(e, SEC_MIG, "mig_tombstones", ms.tombstones);
    emit_u64(e, SEC_MIG, "mig_keys_in_arc", ms.keys_in_arc);
    emit_u64(e, SEC_MIG, "mig_keys_in_cap", ms.keys_in_cap);
    emit_u64(e, SEC_MIG, "mig_keys_out_arc", ms.keys_out_arc);
    emit_u64(e, SEC_MIG, "mig_keys_out_cap", ms.keys_out_cap);
    emit_u64(e, SEC_MIG, "mig_bytes_in_arc", ms.bytes_in_arc);
    emit_u64(e, SEC_MIG, "mig_bytes_in_cap", ms.bytes_in_cap);
    emit_u64(e, SEC_MIG, "mig_bytes_out_arc", ms.bytes_out_arc);
    emit_u64(e, SEC_MIG, "mig_bytes_out_cap", ms.bytes_out_cap);
    emit_u64(e, SEC_MIG, "mig_forwards", ms.forwards);
    emit_u64(e, SEC_MIG, "mig_forward_fails", ms.forward_fails);
    emit_u64(e, SEC_MIG, "mig_pulls", ms.pulls);
    emit_u64(e, SEC_MIG, "mig_pull_fails", ms.pull_fails);
    emit_u64(e, SEC_MIG, "mig_forwards_served", ms.forwards_served);
    emit_u64(e, SEC_MIG, "mig_pulls_served", ms.pulls_served);
    emit_u64(e, SEC_MIG, "mig_streams_restarted", ms.streams_restarted);
    emit_u64(e, SEC_MIG, "mig_stream_errors", ms.stream_errors);
    emit_u64(e, SEC_MIG, "mig_send_yields", ms.send_yields);
    emit_u64(e, SEC_MIG, "mig_send_slices", ms.send_slices);
    emit_u64(e, SEC_MIG, "mig_link_waits", ms.link_waits);
    emit_u64(e, SEC_MIG, "mig_insert_pauses", ms.insert_pauses);
    emit_u64(e, SEC_MIG, "mig_turns_deferred", ms.turns_deferred);
    emit_u64(e, SEC_MIG, "mig_pace_backoffs", ms.pace_backoffs);
    emit_u64(e, SEC_MIG, "mig_pace_slice_us", ms.pace_slice_us);
    emit_u64(e, SEC_MIG, "mig_links_lost", ms.links_lost);
    emit_u64(e, SEC_MIG, "mig_entries_refused", ms.entries_refused);
    emit_u64(e, SEC_MIG, "mig_insert_failures", ms.insert_failures);
    emit_u64(e, SEC_MIG, "mig_tombstone_refusals", ms.tomb_refusals);
    emit_u64(e, SEC_MIG, "mig_probes", ms.probes);
    emit_u64(e, SEC_MIG, "mig_probes_source_gone", ms.probes_source_gone);
    emit_u64(e, SEC_MIG, "mig_partitions_in_unfinished",
             ms.partitions_in_unfinished);
    emit_u64(e, SEC_MIG, "mig_stream_delay_ms", ms.delay_ms);
    emit_streams_out(e, node);
    emit_ops(e, node);
}

int
brim_node_stats_sections(const char *section, size_t len, uint32_t *out,
                         char errbuf[BRIM_ERRBUF_LEN])
{
    static const struct {
        const char *name;
        uint32_t    bits;
    } names[] = {{"node", SEC_NODE},
                 {"store", SEC_STORE},
                 {"conns", SEC_CONNS},
                 {"ops", SEC_OPS},
                 {"migration", SEC_MIG}};
    size_t i;

    if (len == 0) {
        *out = SEC_ALL;
        return 0;
    }
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strlen(names[i].name) == len
            && memcmp(names[i].name, section, len) == 0) {
            *out = names[i].bits;
            return 0;
        }
    }
    snprintf(errbuf, BRIM_ERRBUF_LEN,
             "stats: unknown section \"%.*s\"; known:", (int) BRIM_MIN(len, 32),
             section);
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(errbuf + strlen(errbuf), BRIM_ERRBUF_LEN - strlen(errbuf),
                 "%s %s", i > 0 ? "," : "", names[i].name);
    }
    snprintf(errbuf + strlen(errbuf), BRIM_ERRBUF_LEN - strlen(errbuf),
             " (empty: all)");
    return BRIM_EINVAL;
}

int
brim_node_stats_reply(struct brim_node *node, struct brim_buf *out,
                      uint64_t request_id, uint32_t sections)
{
    struct stats_emit e;
    size_t            mark;
    int               rc;

    memset(&e, 0, sizeof(e));
    e.sections = sections;
    stats_emit_all(&e, node); /* count */
    rc = brim_wire_stats_begin(out, request_id, e.npairs, &mark);
    if (rc != 0) {
        return rc;
    }
    e.out = out;
    e.npairs = 0;
    stats_emit_all(&e, node); /* write */
    rc = e.rc;
    if (rc == 0) {
        rc = brim_frame_end(out, mark);
    }
    if (rc != 0) {
        brim_frame_abort(out, mark);
        return BRIM_ENOMEM;
    }
    return 0;
}
