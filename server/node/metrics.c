/*
 * server/node/metrics.c - brim-node's /metrics (DESIGN.md 11): the STATS
 * reply built as for a client (stats.c), then read by the table below,
 * so both show the very same counters; plus the requests by op and the
 * server-side latency histogram by op (node.h, struct brim_node_lat).
 * docs/operations.md lists every metric.
 */
#include "server/node/metrics.h"

#include <stdio.h>
#include <string.h>

#include "common/defs.h"
#include "server/http.h"
#include "proto/mctext.h"
#include "server/node/mcport.h"
#include "server/node/stats.h"
#include "server/prom.h"

#define C BRIM_PROM_COUNTER
#define G BRIM_PROM_GAUGE

/* STATS name, metric, labels, type, scale, help. */
static const struct brim_prom_metric node_table[] = {
    {"committed_epoch", "brim_epoch", NULL, G, 0,
     "The committed epoch this node serves by (0: none yet)."},
    {"pending_epoch", "brim_pending_epoch", NULL, G, 0,
     "The epoch proposed and acknowledged, not yet committed (0: none)."},
    {"partitions_owned", "brim_partitions_owned", NULL, G, 0,
     "Partitions this node owns in the committed map."},
    {"partitions_displaced", "brim_partitions_displaced", NULL, G, 0,
     "Owned partitions whose ring owner is another node."},
    {"partitions_cap", "brim_partitions_cap", NULL, G, 0,
     "This node's cap: the most partitions it may own."},
    {"partitions", "brim_partitions", NULL, G, 0,
     "P, the cluster's partition count."},
    {"partitions_used", "brim_partitions_used", NULL, G, 0,
     "Partitions whose table is allocated in the store."},
    {"lease_fresh", "brim_lease_fresh", NULL, G, 0,
     "1 while the lease lets this node serve data ops, else 0."},
    {"lease_rounds", "brim_lease_rounds_total", NULL, C, 0,
     "Lease confirmation rounds asked of the other members."},
    {"lease_member_renewals", "brim_lease_member_renewals_total", NULL, C, 0,
     "Leases renewed by a majority of members, not the coordinator."},
    {"lease_expiries", "brim_lease_expiries_total", NULL, C, 0,
     "Times the lease ran out."},
    {"heartbeats_late", "brim_heartbeats_late_total", NULL, C, 0,
     "Heartbeats sent more than a tenth of the lease late."},
    {"heartbeat_late_max_ms", "brim_heartbeat_late_max_seconds", NULL, G, 0.001,
     "Most a heartbeat went out after it was due."},
    {"uptime_s", "brim_uptime_seconds", NULL, G, 0,
     "Seconds since the process started."},
    {"requests", "brim_requests_total", "source=\"client\"", C, 0,
     "Requests decoded, by who sent them."},
    {"internal_requests", "brim_requests_total", "source=\"internal\"", C, 0,
     "Requests decoded, by who sent them."},
    {"bad_requests", "brim_bad_requests_total", NULL, C, 0,
     "Requests refused as malformed."},
    {"keys", "brim_items", NULL, G, 0, "Items in the store."},
    {"bytes", "brim_item_bytes", NULL, G, 0,
     "Bytes allocated for items: header, key and value."},
    {"table_bytes", "brim_table_bytes", NULL, G, 0,
     "Bytes of the partitions' hash tables."},
    {"memory_used", "brim_memory_used_bytes", NULL, G, 0,
     "Bytes the memory limit counts: items at their allocated size and "
     "tables."},
    {"memory_limit", "brim_memory_limit_bytes", NULL, G, 0,
     "The memory limit (--memory-mb)."},
    {"process_bytes", "brim_allocated_bytes", NULL, G, 0,
     "Bytes allocated by the process through its allocator."},
    {"hits", "brim_hits_total", NULL, C, 0, "Reads that found their key."},
    {"misses", "brim_misses_total", NULL, C, 0,
     "Reads that did not find their key."},
    {"sets", "brim_sets_total", NULL, C, 0, "Writes stored."},
    {"deletes", "brim_deletes_total", NULL, C, 0, "Keys deleted."},
    {"evictions", "brim_evictions_total", NULL, C, 0,
     "Items evicted to stay within the memory limit."},
    {"expirations", "brim_expirations_total", NULL, C, 0,
     "Items removed because their TTL ran out."},
    {"keys_dropped_pending", "brim_keys_dropped_pending", NULL, G, 0,
     "Items of dropped partitions whose memory is not yet freed."},
    {"connections", "brim_connections", NULL, G, 0,
     "Open connections on the brim port."},
    {"connections_total", "brim_connections_accepted_total", NULL, C, 0,
     "Connections accepted on the brim port."},
    {"connections_refused", "brim_connections_refused_total", NULL, C, 0,
     "Connections refused: --max-conns reached."},
    {"connections_idle_closed", "brim_connections_idle_closed_total", NULL, C,
     0, "Connections closed for being idle."},
    {"buffer_bytes", "brim_buffer_bytes", NULL, G, 0,
     "Reply bytes not yet sent, all connections."},
    {"buffer_limit", "brim_buffer_limit_bytes", NULL, G, 0,
     "The bound on unsent replies (--buffer-mb)."},
    {"buffer_pauses", "brim_buffer_pauses_total", NULL, C, 0,
     "Reads paused because unsent replies passed --buffer-mb."},
    {"read_pauses", "brim_read_pauses_total", NULL, C, 0,
     "Reads paused because a connection's own replies passed its limit."},
    {"bad_frames", "brim_bad_frames_total", NULL, C, 0,
     "Connections closed for a malformed or oversized frame."},
    {"http_connections", "brim_http_connections", NULL, G, 0,
     "Open connections on the HTTP port."},
    {"http_connections_total", "brim_http_connections_accepted_total", NULL, C,
     0, "Connections accepted on the HTTP port."},
    {"http_connections_refused", "brim_http_connections_refused_total", NULL, C,
     0, "HTTP connections closed at once: --http-max-conns reached."},
    {"http_requests", "brim_http_requests_total", NULL, C, 0,
     "HTTP requests answered by a route."},
    {"mig_keys_in", "brim_migration_keys_total", "direction=\"in\"", C, 0,
     "Entries streamed in or out by migration."},
    {"mig_keys_out", "brim_migration_keys_total", "direction=\"out\"", C, 0,
     "Entries streamed in or out by migration."},
    {"mig_keys_in_arc", "brim_migration_keys_in_by_reason_total",
     "reason=\"arc\"", C, 0,
     "Entries streamed in, by why their partition moved (arc or cap)."},
    {"mig_keys_in_cap", "brim_migration_keys_in_by_reason_total",
     "reason=\"cap\"", C, 0,
     "Entries streamed in, by why their partition moved (arc or cap)."},
    {"mig_keys_out_arc", "brim_migration_keys_out_by_reason_total",
     "reason=\"arc\"", C, 0,
     "Entries streamed out, by why their partition moved (arc or cap)."},
    {"mig_keys_out_cap", "brim_migration_keys_out_by_reason_total",
     "reason=\"cap\"", C, 0,
     "Entries streamed out, by why their partition moved (arc or cap)."},
    {"mig_bytes_in", "brim_migration_bytes_total", "direction=\"in\"", C, 0,
     "Bytes of entries streamed in or out by migration."},
    {"mig_bytes_out", "brim_migration_bytes_total", "direction=\"out\"", C, 0,
     "Bytes of entries streamed in or out by migration."},
    {"mig_bytes_in_arc", "brim_migration_bytes_in_by_reason_total",
     "reason=\"arc\"", C, 0,
     "Bytes of entries streamed in, by why their partition moved."},
    {"mig_bytes_in_cap", "brim_migration_bytes_in_by_reason_total",
     "reason=\"cap\"", C, 0,
     "Bytes of entries streamed in, by why their partition moved."},
    {"mig_bytes_out_arc", "brim_migration_bytes_out_by_reason_total",
     "reason=\"arc\"", C, 0,
     "Bytes of entries streamed out, by why their partition moved."},
    {"mig_bytes_out_cap", "brim_migration_bytes_out_by_reason_total",
     "reason=\"cap\"", C, 0,
     "Bytes of entries streamed out, by why their partition moved."},
    {"mig_batches_in", "brim_migration_batches_total", "direction=\"in\"", C, 0,
     "Stream batches received or sent."},
    {"mig_batches_out", "brim_migration_batches_total", "direction=\"out\"", C,
     0, "Stream batches received or sent."},
    {"mig_partitions_in_done", "brim_migration_partitions_done_total",
     "direction=\"in\"", C, 0, "Partitions whose stream completed."},
    {"mig_partitions_out_done", "brim_migration_partitions_done_total",
     "direction=\"out\"", C, 0, "Partitions whose stream completed."},
    {"mig_partitions_out_dropped", "brim_migration_partitions_dropped_total",
     NULL, C, 0, "Partitions dropped unsent: their receiver died."},
    {"mig_partitions_in_flight", "brim_migration_partitions_in_flight", NULL, G,
     0, "Partitions still streaming in."},
    {"mig_partitions_out_pending", "brim_migration_partitions_out_pending",
     NULL, G, 0, "Partitions still to stream out."},
    {"mig_tombstones", "brim_migration_tombstones", NULL, G, 0,
     "Tombstones held for keys of partitions in flight."},
    {"mig_forwards", "brim_forwards_total", NULL, C, 0,
     "Reads forwarded to the old owner of a partition in flight."},
    {"mig_forward_fails", "brim_forward_failures_total", NULL, C, 0,
     "Forwards that failed (answered RETRY)."},
    {"mig_pulls", "brim_pulls_total", NULL, C, 0,
     "Keys pulled from the old owner before an op on the current value."},
    {"mig_pull_fails", "brim_pull_failures_total", NULL, C, 0,
     "Pulls that failed (answered RETRY)."},
    {"mig_forwards_served", "brim_forwards_served_total", NULL, C, 0,
     "Forwarded reads this node answered as the old owner."},
    {"mig_pulls_served", "brim_pulls_served_total", NULL, C, 0,
     "Pulls this node answered as the old owner."},
    {"mig_streams_restarted", "brim_migration_streams_restarted_total", NULL, C,
     0, "Streams begun again under the same migration id."},
    {"mig_stream_errors", "brim_migration_stream_errors_total", NULL, C, 0,
     "Stream requests answered with an error."},
    {"mig_links_lost", "brim_migration_links_lost_total", NULL, C, 0,
     "Node-to-node links lost with streams on them."},
};

#undef C
#undef G

/* Requests by op, from STATS "ops" (ops never seen left out). */
static int
metrics_ops(struct brim_buf *out, const msgpack_object *map)
{
    const msgpack_object *ops = brim_prom_find(map, "ops");
    char                  labels[64], name[32];
    uint32_t              i;
    int                   rc;

    rc = brim_prom_family(out, "brim_op_requests_total", BRIM_PROM_COUNTER,
                          "Requests decoded, by op.");
    for (i = 0; rc == 0 && ops != NULL && ops->type == MSGPACK_OBJECT_MAP
         && i < ops->via.map.size;
         i++)
    {
        if (ops->via.map.ptr[i].key.type != MSGPACK_OBJECT_STR) {
            continue;
        }
        snprintf(name, sizeof(name), "%.*s",
                 (int) ops->via.map.ptr[i].key.via.str.size,
                 ops->via.map.ptr[i].key.via.str.ptr);
        rc = brim_prom_f64(out, "brim_op_requests_total",
                           brim_prom_label(labels, sizeof(labels), "op", name),
                           brim_prom_number(&ops->via.map.ptr[i].val));
    }
    return rc;
}

/* The latency histogram NAME of one op or command, LABEL="VALUE":
 * cumulative buckets, sum, count. */
static int
metrics_lat_op(struct brim_buf *out, const char *name, const char *label,
               const char *value, const struct brim_node_lat *lat)
{
    char     labels[96], mname[64];
    uint64_t cum = 0;
    uint32_t k;
    int      rc = 0;

    for (k = 0; rc == 0 && k < BRIM_NODE_LAT_BUCKETS; k++) {
        cum += lat->bucket[k];
        if (k + 1 < BRIM_NODE_LAT_BUCKETS) {
            snprintf(labels, sizeof(labels), "%s=\"%s\",le=\"%.10g\"", label,
                     value, (double) (1ull << (k + 8)) * 1e-9);
        } else {
            snprintf(labels, sizeof(labels), "%s=\"%s\",le=\"+Inf\"", label,
                     value);
        }
        snprintf(mname, sizeof(mname), "%s_bucket", name);
        rc = brim_prom_u64(out, mname, labels, cum);
    }
    snprintf(labels, sizeof(labels), "%s=\"%s\"", label, value);
    snprintf(mname, sizeof(mname), "%s_sum", name);
    rc |= brim_prom_f64(out, mname, labels, (double) lat->sum_ns * 1e-9);
    snprintf(mname, sizeof(mname), "%s_count", name);
    rc |= brim_prom_u64(out, mname, labels, cum);
    return rc != 0 ? BRIM_ENOMEM : 0;
}

/* Every op with a request decoded. */
static int
metrics_latency(struct brim_buf *out, struct brim_node *node)
{
    uint32_t code;
    int      rc;

    rc = brim_prom_family(out, "brim_request_duration_seconds",
                          BRIM_PROM_HISTOGRAM,
                          "Server-side request latency by op: from the frame "
                          "taken from the input to the reply queued.");
    for (code = 0; rc == 0 && code < BRIM_OP_CODE_LIMIT; code++) {
        if (node->stats.ops[code] > 0) {
            rc = metrics_lat_op(out, "brim_request_duration_seconds", "op",
                                brim_op_name(code), &node->stats.lat[code]);
        }
    }
    return rc;
}

/* The memcached port's commands that ran, when the node has one. */
static int
metrics_mc_latency(struct brim_buf *out, struct brim_node *node)
{
    const struct brim_node_lat *lat;
    uint32_t                    kind, k;
    uint64_t                    n;
    int                         rc;

    if (brim_mcport_latency(node, BRIM_MCTEXT_GET) == NULL) {
        return 0;
    }
    rc = brim_prom_family(out, "brim_memcached_request_duration_seconds",
                          BRIM_PROM_HISTOGRAM,
                          "Server-side latency of memcached port commands: "
                          "from the command parsed to its answer whole "
                          "(forwards to the owner included).");
    for (kind = BRIM_MCTEXT_NONE + 1; rc == 0 && kind < BRIM_MCTEXT_KIND_COUNT;
         kind++)
    {
        lat = brim_mcport_latency(node, kind);
        for (n = 0, k = 0; k < BRIM_NODE_LAT_BUCKETS; k++) {
            n += lat->bucket[k];
        }
        if (n > 0) {
            rc = metrics_lat_op(out, "brim_memcached_request_duration_seconds",
                                "command", brim_mctext_kind_name(kind), lat);
        }
    }
    return rc;
}

/* brim_prom_build_fn: the node's whole STATS reply. */
static int
metrics_build(void *arg, struct brim_buf *frame)
{
    uint32_t all;

    (void) brim_node_stats_sections("", 0, &all, NULL);
    return brim_node_stats_reply(arg, frame, 0, all);
}

/* brim_prom_render_fn: the table, the ops, the histogram. */
static int
metrics_render(void *arg, const msgpack_object *map, struct brim_buf *out)
{
    int rc;

    rc = brim_prom_table(out, map, node_table, BRIM_ARRAY_LEN(node_table));
    if (rc == 0) {
        rc = brim_prom_table(out, map, brim_prom_auth_table,
                             BRIM_PROM_AUTH_ROWS);
    }
    if (rc == 0) {
        rc = metrics_ops(out, map);
    }
    if (rc == 0) {
        rc = metrics_latency(out, arg);
    }
    if (rc == 0) {
        rc = metrics_mc_latency(out, arg);
    }
    return rc;
}

int
brim_node_metrics(struct brim_node *node, struct brim_buf *out)
{
    return brim_prom_from_reply(out, metrics_build, metrics_render, node);
}

static int
metrics_route(void *arg, struct brim_http_reply *rep)
{
    rep->ctype = BRIM_PROM_CTYPE;
    return brim_node_metrics(arg, rep->body);
}

static const struct brim_http_route node_routes[] = {
    {"/metrics", metrics_route}, {NULL, NULL}};

int
brim_node_http_start(struct brim_node *node, char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_http_config cfg = {.max_conns = node->cfg.http_max_conns};

    return brim_http_start(&node->http, node->loop, node->cfg.http_listen, &cfg,
                           node_routes, node, errbuf);
}

int
brim_node_http_port(const struct brim_node *node)
{
    return brim_http_port(node->http);
}

void
brim_node_http_stop(struct brim_node *node)
{
    brim_http_stop(node->http);
}

void
brim_node_http_free(struct brim_node *node)
{
    brim_http_free(node->http);
    node->http = NULL;
}
