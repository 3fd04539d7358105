/*
 * server/node/epoch.h - a cluster node's epochs (PROTOCOL.md 10.4,
 * DESIGN.md 7 steps 1-2): the committed topology it serves by and at most
 * one pending one (struct brim_node_topo, node.h), and the routing
 * decision of every data op. State only: what a commit sets off is
 * change.h's. Loop thread only.
 */
#ifndef BRIM_SERVER_NODE_EPOCH_H
#define BRIM_SERVER_NODE_EPOCH_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "proto/topo.h"
#include "proto/wire.h"
#include "server/node/node.h"

/*
 * Decide whether the node serves a data op on the key hashed to KEY_HASH,
 * stamped with REQ_EPOCH (PROTOCOL.md 10.4). Returns 0 (serve it),
 * BRIM_EMOVED (REP->epoch and REP->owner filled: the committed epoch and
 * the owner's address, borrowed from the node's topology) or BRIM_ERETRY
 * (REP->epoch filled). *NEWER is set to 1 when the request knows an epoch
 * newer than any here (the caller then fetches the map), else 0. Always
 * 0 in standalone mode. Call brim_node_epoch_seen() (change.h) first.
 */
int brim_node_route(struct brim_node *node, uint64_t req_epoch,
                    uint64_t key_hash, struct brim_rep *rep, int *newer);

/* The key hash seed: the cluster's once a topology is known. */
uint64_t brim_node_seed(const struct brim_node *node);

/*
 * The store's key hash (brim_store_hash_fn; NODE is the struct brim_node
 * *): XXH3 of KEY (KEY_LEN bytes, borrowed) under brim_node_seed(), the
 * hash every caller of the store passes. The seed never changes while
 * the store holds items: before its first commit a cluster node serves
 * no data op and receives no stream, and after it the seed is fixed
 * (brim_node_topo_decode() refuses another).
 */
uint64_t brim_node_key_hash(const void *key, size_t key_len, void *node);

/* Partitions the committed map gives this node (all when standalone). */
uint32_t brim_node_owned(const struct brim_node *node);

/* The newest epoch the node knows: pending, else committed; 0 none. */
uint64_t brim_node_epoch_known(const struct brim_node *node);

/*
 * Decode T (borrowed) into *OUT (the caller owns it on success) and check
 * it against the node: same cluster (once one is known), same P as the
 * store, newer than the committed epoch, the same seed. Returns 0,
 * BRIM_EBADREQ, BRIM_EDENIED (another cluster) or BRIM_EEXISTS (not
 * newer), with ERRBUF saying why.
 */
int brim_node_topo_decode(struct brim_node *node, const msgpack_object *t,
                          struct brim_topo *out, char errbuf[BRIM_ERRBUF_LEN]);

/* Keep TOPO (ownership taken) as the pending topology, replacing any. */
void brim_node_topo_set_pending(struct brim_node *node, struct brim_topo *topo);

/*
 * EPOCH_PROPOSE: decode topology T (borrowed) and keep it as pending,
 * replacing an older pending one. Returns 0, BRIM_EBADREQ (malformed, or
 * its partitions differ from the node's), BRIM_EDENIED (another cluster)
 * or BRIM_EEXISTS (not newer than the committed or pending epoch, or at
 * or below an epoch this node has seen proposed, committed or aborted,
 * other than the pending one proposed again), with ERRBUF saying why. On
 * error the node's state is unchanged.
 */
int brim_node_propose(struct brim_node *node, const msgpack_object *t,
                      char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Make the pending topology of EPOCH the committed one. On 0 *OLD is the
 * topology committed before (the caller destroys it) and *OLD_SELF our
 * index in it. Returns 1 when EPOCH is already the committed one (a
 * resent commit; nothing changes), BRIM_ENOTFOUND when it is not pending.
 */
int brim_node_topo_commit(struct brim_node *node, uint64_t epoch,
                          struct brim_topo *old, int32_t *old_self);

/*
 * Fencing by term (PROTOCOL.md 10.6): TERM is the term an EPOCH_* request
 * or a HEARTBEAT reply from coordinator FROM (NUL-terminated, for the
 * log) carries, 0 when none (file mode). A term above the highest one
 * seen becomes it; one below is refused. Returns 0, or BRIM_ESTALETERM
 * with ERRBUF saying which term this node has seen (the message of the
 * STALETERM reply).
 */
int brim_node_term_check(struct brim_node *node, uint64_t term,
                         const char *from, char errbuf[BRIM_ERRBUF_LEN]);

/* EPOCH_ABORT EPOCH: forget the pending topology if it is EPOCH. */
void brim_node_abort(struct brim_node *node, uint64_t epoch);

/* Free the topologies (after the loop has stopped). */
void brim_node_topo_destroy(struct brim_node *node);

#endif /* BRIM_SERVER_NODE_EPOCH_H */
