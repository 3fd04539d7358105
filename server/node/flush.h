/*
 * server/node/flush.h - the cluster's flush marks at one node (the
 * memcached port's flush_all, docs/memcached.md "flush_all"; struct
 * brim_node_flush in node.h). A flush is one cluster event at an absolute
 * time, its mark (Unix ms). A node empties its store when a mark it knows
 * comes, and stamps what it streams or asks for (STREAM_BATCH,
 * FORWARD_GET, PULL) with the last mark it applied; a node that sees a
 * newer stamp applies that flush at once, and a batch stamped older than
 * its own mark is dropped, so no copy written before a flush comes back
 * whatever the timing of the messages (a Lamport-style order on flushes:
 * Lamport, "Time, clocks, and the ordering of events in a distributed
 * system", CACM 1978). Loop thread only.
 */
#ifndef BRIM_SERVER_NODE_FLUSH_H
#define BRIM_SERVER_NODE_FLUSH_H

#include <stdint.h>

#include "server/node/node.h"

/* Unix time now, in milliseconds (CLOCK_REALTIME). */
uint64_t brim_node_flush_clock_ms(void);

/* Set up NODE->flush (nothing applied, nothing pending) and its timer. */
void brim_node_flush_init(struct brim_node *node);

/* Close the timer (the node is stopping). */
void brim_node_flush_stop(struct brim_node *node);

/*
 * A flush at MARK_MS (Unix ms) is known: from FLUSH, from the
 * coordinator's JOIN or HEARTBEAT reply, or this node's own flush_all.
 * A mark at or below the last applied one changes nothing; one not after
 * now empties the store at once, and so does any mark when NOW is set (a
 * flush_all without a delay: it is applied as it arrives, whatever this
 * node's clock says); a later one waits on the timer. Of several pending
 * marks the earliest and the latest are kept (a third in between is
 * applied with the latest).
 */
void brim_node_flush_learn(struct brim_node *node, uint64_t mark_ms, int now);

/*
 * A peer's stamp STAMP_MS on data it sends or asks for: the last flush
 * mark the peer applied (0: none). A newer one than ours is a flush that
 * has happened: applied here at once, before the data. Returns 1 when
 * the data predates our last applied mark (the caller drops it), else 0.
 */
int brim_node_flush_stamp(struct brim_node *node, uint64_t stamp_ms);

/* The last flush mark applied here (0: none): the stamp to send. */
uint64_t brim_node_flush_applied(const struct brim_node *node);

#endif /* BRIM_SERVER_NODE_FLUSH_H */
