/*
 * server/node/mcfwd.h - the memcached port's forwards (DESIGN.md 10): one
 * keyed brim op that this node could not serve from its store at once,
 * sent to the key's owner on the port's own node-to-node links (not the
 * migration streams'), its MOVED and RETRY followed, its link made again,
 * until it is answered or its deadline passes. A retry routes again from
 * the node's current map, so a key that came here is then served from the
 * store. Loop thread only.
 */
#ifndef BRIM_SERVER_NODE_MCFWD_H
#define BRIM_SERVER_NODE_MCFWD_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"
#include "server/node/node.h"

/*
 * The answer to one forward, called once: REP (borrowed for the call; its
 * value and message too) holds the owner's reply, REP->status 0 or a wire
 * status of the op (NOTFOUND, NOTSTORED, EXISTS, TOOBIG, NONUMERIC, ...),
 * or a local one: BRIM_ETIMEDOUT (not answered within the deadline) or
 * BRIM_ECLOSED (the link closed with a write in flight, which may have
 * been applied: not resent), with REP->message saying why. ARG is the
 * caller's.
 */
typedef void (*brim_mcfwd_cb)(void *arg, const struct brim_rep *rep);

/*
 * Forward the keyed data op REQ (borrowed: its key and value are copied;
 * request_id and epoch are the forward's own) on the key hashed to H,
 * first to the node at ADDR (borrowed; NULL: route it from the map, as
 * after a RETRY), answering CB with ARG within TIMEOUT_MS (> 0). An op
 * without a key (FLUSH) goes to ADDR (not NULL then) only, its RETRY and
 * a link being made waited for there. A value
 * above the owner's max_value_bytes (from its HELLO) is answered TOOBIG
 * without being sent. Returns 0 (CB follows, never from inside this call)
 * or BRIM_ENOMEM (CB is not called).
 */
int brim_mcfwd_start(struct brim_node *node, const struct brim_req *req,
                     uint64_t h, const char *addr, uint32_t timeout_ms,
                     brim_mcfwd_cb cb, void *arg);

/*
 * Forward an MGET (OP BRIM_OP_MGET) or an MGAT (BRIM_OP_MGAT, with TTL_S
 * as GAT's) of the NKEYS (1 .. the owner's max_mget_keys) keys KEYS
 * (borrowed: copied) to the node at ADDR (borrowed), as
 * brim_mcfwd_start() does an op without a key: CB gets the reply, its
 * entries in KEYS' order (brim_wire_rep_entry(); an entry MOVED, RETRY
 * or TOOBIG is the caller's to ask again on its own). Returns 0 or
 * BRIM_ENOMEM (CB is not called).
 */
int brim_mcfwd_start_mget(struct brim_node *node, uint32_t op, uint32_t ttl_s,
                          const struct brim_bytes *keys, uint32_t nkeys,
                          const char *addr, uint32_t timeout_ms,
                          brim_mcfwd_cb cb, void *arg);

/* Copy the counters into *OUT. */
void brim_mcfwd_get_stats(const struct brim_node  *node,
                          struct brim_mcfwd_stats *out);

/* Close the forwards' links (the node is stopping); forwards in flight
 * hear BRIM_ECLOSED or time out. */
void brim_mcfwd_stop(struct brim_node *node);

/* Free the links' memory once the loop has run their close callbacks. */
void brim_mcfwd_destroy(struct brim_node *node);

#endif /* BRIM_SERVER_NODE_MCFWD_H */
