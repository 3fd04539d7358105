/*
 * client/bench/cluster.h - brim-bench --coordinator: the topology fetched
 * from a seed of the list (nodes or coordinators; HELLO role client,
 * MAP_FETCH; PROTOCOL.md 9 and 10), later from the map's nodes, turned
 * into a struct brim_bench_route (owner[partition] -> index in
 * sh->nodes), and a refresher thread that fetches the map again when a
 * node reports a newer epoch (MOVED, RETRY, or the epoch every data reply
 * carries): one fetch in flight, at most one per new epoch reported,
 * spaced when the nodes asked are behind.
 * With --target redis-cluster the same for a Redis Cluster: the map is
 * CLUSTER SLOTS from the --server (a seed: any node will do), read again
 * whenever a load thread asks (a MOVED, a lost connection), one read in
 * flight and one more after it at most, 10 ms apart.
 */
#ifndef BRIM_CLIENT_BENCH_CLUSTER_H
#define BRIM_CLIENT_BENCH_CLUSTER_H

#include <stdint.h>

#include <brim/status.h>

#include "client/bench/engine.h"

/*
 * Fetch the topology from a seed of O->coord (redis-cluster: the slot map from
 * O->server), resolve its members (masters) into SH->nodes
 * (BRIM_BENCH_NODES_MAX entries, zeroed) and publish the first route in
 * SH->route; SH->cl is set. Returns 0, or a BRIM_E* with ERRBUF set (SH
 * then holds what brim_bench_cluster_close() frees).
 */
int brim_bench_cluster_open(struct brim_bench_shared     *sh,
                            const struct brim_bench_opts *o,
                            char errbuf[BRIM_ERRBUF_LEN]);

/* Start the refresher thread of SH. Returns 0 or BRIM_ESYS. */
int brim_bench_cluster_start(struct brim_bench_shared *sh);

/* A node reported EPOCH: fetch the map again if it is newer than every
 * epoch reported so far and the route's (called by the load threads).
 * redis-cluster: fetch again if EPOCH is past the route's. */
void brim_bench_cluster_want(struct brim_bench_shared *sh, uint64_t epoch);

/*
 * redis-cluster: an ASK named ADDR ("host:port", copied), a node no map
 * has had: read the map again, and from then on treat ADDR as a node of
 * it (connected, serving no slot by the map), so that the ASK can be
 * followed before CLUSTER SLOTS shows the node. At most a few such nodes
 * are kept; past them the request goes by the map until it does.
 */
void brim_bench_cluster_want_node(struct brim_bench_shared *sh,
                                  const char               *addr);

/* Map fetches made after the first. */
uint64_t brim_bench_cluster_refetches(const struct brim_bench_shared *sh);

/* Epoch of the first route. */
uint64_t brim_bench_cluster_first_epoch(const struct brim_bench_shared *sh);

/* Stop the refresher (if started) and free the routes and SH->cl. */
void brim_bench_cluster_close(struct brim_bench_shared *sh);

#endif /* BRIM_CLIENT_BENCH_CLUSTER_H */
