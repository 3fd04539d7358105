/*
 * server/node/stats.h - the node's STATS reply (PROTOCOL.md 4, STATS):
 * its counters by section (node, store, conns, ops, migration). Loop
 * thread only.
 */
#ifndef BRIM_SERVER_NODE_STATS_H
#define BRIM_SERVER_NODE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "server/node/node.h"

/*
 * The STATS sections named by SECTION (LEN bytes, borrowed): "" is all,
 * else one of "node", "store", "conns", "ops", "migration". Writes a bit
 * set to *OUT. Returns 0, or BRIM_EINVAL for an unknown name with a
 * message in ERRBUF that lists the known ones (from the same table).
 */
int brim_node_stats_sections(const char *section, size_t len, uint32_t *out,
                             char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Append the node's STATS reply for SECTIONS (from
 * brim_node_stats_sections()) to OUT. Returns 0 or BRIM_ENOMEM.
 */
int brim_node_stats_reply(struct brim_node *node, struct brim_buf *out,
                          uint64_t request_id, uint32_t sections);

#endif /* BRIM_SERVER_NODE_STATS_H */
