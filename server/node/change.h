/*
 * server/node/change.h - what a cluster node does when an epoch commits
 * (DESIGN.md 7 steps 2-3): the pending topology becomes the committed one
 * (epoch.h), the partitions lost to live members are handed to migration
 * to stream, partitions gained from live members are in flight, and the
 * rest of what the node no longer owns is dropped. Loop thread only.
 */
#ifndef BRIM_SERVER_NODE_CHANGE_H
#define BRIM_SERVER_NODE_CHANGE_H

#include <stdint.h>

#include <msgpack.h>

#include "server/node/node.h"

/*
 * EPOCH_COMMIT EPOCH: the pending topology of EPOCH becomes committed, its
 * streams start, and the store drops the partitions the node no longer
 * owns and does not stream. Returns 0 (also when EPOCH is already the
 * committed one: a resent commit) or BRIM_ENOTFOUND (EPOCH not pending).
 */
int brim_node_commit(struct brim_node *node, uint64_t epoch);

/*
 * Adopt topology T (borrowed) as committed: the coordinator's answer to
 * JOIN or MAP_FETCH. Ignored (0) when it is not newer than the committed
 * one, or when a newer one is pending. Returns 0 or what
 * brim_node_topo_decode() returns.
 */
int brim_node_adopt(struct brim_node *node, const msgpack_object *t,
                    char errbuf[BRIM_ERRBUF_LEN]);

/* A request stamped REQ_EPOCH arrived: when it is the pending epoch, the
 * pending topology is committed now (DESIGN.md 7, step 2). */
void brim_node_epoch_seen(struct brim_node *node, uint64_t req_epoch);

#endif /* BRIM_SERVER_NODE_CHANGE_H */
