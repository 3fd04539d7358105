/*
 * server/node/stats.c - the node's STATS reply: store counters, listener
 * counters and per-op request counts, as one msgpack map (PROTOCOL.md,
 * "STATS"). The names are the ones docs/operations.md explains.
 */
#include "server/node/node.h"

#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "proto/frame.h"

/* Plain counters, then "ops", a nested map of op name to count. */
#define STATS_SCALARS 24

static int
stats_ops(struct brim_node *node, struct brim_buf *out)
{
    uint32_t code, n = 0;
    int      rc;

    for (code = 0; code < BRIM_OP_CODE_LIMIT; code++) {
        n += node->st.ops[code] > 0;
    }
    rc = brim_wire_stats_map(out, "ops", n);
    for (code = 0; rc == 0 && code < BRIM_OP_CODE_LIMIT; code++) {
        if (node->st.ops[code] > 0) {
            rc = brim_wire_stats_u64(out, brim_op_name(code),
                                     node->st.ops[code]);
        }
    }
    return rc;
}

int
brim_node_stats_reply(struct brim_node *node, struct brim_buf *out,
                      uint64_t request_id)
{
    struct brim_store_stats   ss;
    struct brim_server_stats *cs = &node->srv.st;
    size_t                    mark;
    int                       rc;

    brim_store_get_stats(node->store, &ss);
    rc = brim_wire_stats_begin(out, request_id, STATS_SCALARS + 1, &mark);
    if (rc != 0) {
        return rc;
    }
    rc = brim_wire_stats_str(out, "name", node->cfg.name,
                             strlen(node->cfg.name));
    rc |= brim_wire_stats_str(out, "role", "node", 4);
    rc |= brim_wire_stats_u64(out, "incarnation", node->incarnation);
    rc |= brim_wire_stats_u64(out, "uptime_s",
                              (uint64_t) time(NULL) - node->start_unix);
    rc |= brim_wire_stats_u64(out, "partitions", node->cfg.partitions);
    rc |= brim_wire_stats_u64(out, "partitions_used", ss.partitions_used);
    rc |= brim_wire_stats_u64(out, "keys", ss.items);
    rc |= brim_wire_stats_u64(out, "bytes", ss.item_bytes);
    rc |= brim_wire_stats_u64(out, "table_bytes", ss.table_bytes);
    rc |= brim_wire_stats_u64(out, "memory_used", brim_alloc_bytes());
    rc |= brim_wire_stats_u64(out, "memory_limit",
                              (uint64_t) node->cfg.memory_mb << 20);
    rc |= brim_wire_stats_u64(out, "hits", ss.hits);
    rc |= brim_wire_stats_u64(out, "misses", ss.misses);
    rc |= brim_wire_stats_u64(out, "sets", ss.sets);
    rc |= brim_wire_stats_u64(out, "deletes", ss.deletes);
    rc |= brim_wire_stats_u64(out, "evictions", ss.evictions);
    rc |= brim_wire_stats_u64(out, "expirations", ss.expirations);
    rc |= brim_wire_stats_u64(out, "connections", cs->conns_current);
    rc |= brim_wire_stats_u64(out, "connections_total", cs->conns_total);
    rc |= brim_wire_stats_u64(out, "connections_refused", cs->conns_refused);
    rc |= brim_wire_stats_u64(out, "requests", node->st.requests);
    rc |= brim_wire_stats_u64(out, "bad_requests", node->st.bad_requests);
    rc |= brim_wire_stats_f64(out, "requests_per_sec",
                              node->st.requests_per_sec);
    rc |= brim_wire_stats_u64(out, "read_pauses", cs->pauses);
    if (rc == 0) {
        rc = stats_ops(node, out);
    }
    if (rc == 0) {
        rc = brim_frame_end(out, mark);
    }
    if (rc != 0) {
        brim_frame_abort(out, mark);
        return BRIM_ENOMEM;
    }
    return 0;
}
