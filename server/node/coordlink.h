/*
 * server/node/coordlink.h - a cluster node's link to its coordinator
 * (PROTOCOL.md 10.1; struct brim_node_coordlink in node.h): JOIN, the
 * heartbeats that carry its stats and renew its lease, the maps it
 * fetches, and SIGTERM's graceful leave. Loop thread only.
 */
#ifndef BRIM_SERVER_NODE_COORDLINK_H
#define BRIM_SERVER_NODE_COORDLINK_H

#include "server/node/node.h"

/* Connect to the coordinator, join, and heartbeat; reconnects by itself. */
void brim_node_coord_start(struct brim_node *node);

/* Close the coordinator connection and its timers (the node is stopping). */
void brim_node_coord_stop(struct brim_node *node);

/* Ask the coordinator for its committed map (MAP_FETCH) and adopt it; at
 * most one fetch in flight. */
void brim_node_coord_fetch(struct brim_node *node);

/*
 * SIGTERM: leave and drain. Returns 1 when a leave was started (or one is
 * in progress and this signal should be ignored), 0 when the caller should
 * simply stop, -1 when it should exit at once (a second SIGTERM).
 */
int brim_node_coord_leave(struct brim_node *node);

#endif /* BRIM_SERVER_NODE_COORDLINK_H */
