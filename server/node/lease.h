/*
 * server/node/lease.h - a cluster node's serving lease (DESIGN.md 7 step
 * 7; struct brim_node_lease in node.h): renewed by every heartbeat the
 * coordinator acknowledges or, while it cannot be reached, by a majority
 * of the epoch's members confirming (LEASE_CONFIRM over the node's
 * links). Loop thread only.
 */
#ifndef BRIM_SERVER_NODE_LEASE_H
#define BRIM_SERVER_NODE_LEASE_H

#include <stdint.h>

#include "proto/wire.h"
#include "server/conn.h"
#include "server/node/node.h"

/* True when the node may serve data ops now: standalone, or its lease is
 * fresh on the monotonic loop clock. */
int brim_node_lease_fresh(const struct brim_node *node);

/* The coordinator acknowledged a HEARTBEAT sent at loop ms SENT_MS and
 * gave LEASE_MS: the lease runs until SENT_MS + LEASE_MS (or later). */
void brim_node_lease_heartbeat(struct brim_node *node, uint64_t sent_ms,
                               uint32_t lease_ms);

/* Start and stop the lease timer (cluster mode; unreferenced handle). */
void brim_node_lease_start(struct brim_node *node);
void brim_node_lease_stop(struct brim_node *node);

/*
 * LEASE_CONFIRM REQ from another node on C: OK with our committed epoch
 * and lease length when no epoch newer than REQ's committed one
 * (arg_epoch) is known here, a pending epoch at most the one REQ says the
 * asker acknowledged (count) aside; EXISTS otherwise; DENIED unless C
 * said role node, or while the coordinator answers this node. Returns 0
 * or BRIM_ENOMEM.
 */
int brim_node_lease_confirm_serve(struct brim_node *node, struct brim_conn *c,
                                  const struct brim_req *req);

#endif /* BRIM_SERVER_NODE_LEASE_H */
