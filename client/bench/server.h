/*
 * client/bench/server.h - what brim-bench reads about the server beside
 * its replies: the CPU time of its process (/proc/PID/stat, Linux) and
 * its evictions counter, over a connection of its own (brim STATS,
 * memcached "stats", redis "INFO stats"); and a brim node's limits from
 * its HELLO reply; a Redis Cluster's slot map (CLUSTER SLOTS). The connections are struct brim_link's
 * (client/net/link.h), so that a brim one says HELLO and AUTH as the
 * load's do.
 */
#ifndef BRIM_CLIENT_BENCH_SERVER_H
#define BRIM_CLIENT_BENCH_SERVER_H

#include <stdint.h>

#include <brim/status.h>

#include "client/bench/engine.h"
#include "client/bench/proto.h"

struct brim_auth_secret;        /* proto/auth.h */
struct brim_bench_rcluster_map; /* client/bench/rcluster.h */

/*
 * The user plus system CPU time, seconds, that process PID has used so
 * far, in *CPU_S (clock-tick resolution, 10 ms on Linux). Returns 0, or
 * BRIM_ESYS with the reason in ERRBUF (no such process, no /proc).
 */
int brim_bench_server_cpu(int64_t pid, double *cpu_s,
                          char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Connect to NODE, speak PROTO (HELLO first for brim, then AUTH with
 * SECRET when it is not NULL; borrowed), ask for its statistics and store
 * its evictions counter in *EVICTIONS. Blocking, TIMEOUT_MS at most for
 * the whole exchange. Returns 0; BRIM_ENOTFOUND when the reply has no
 * such counter; the server's status when it refused the HELLO, AUTH or
 * the request; BRIM_ECONNREFUSED, BRIM_ETIMEDOUT, BRIM_EBADREPLY or
 * BRIM_ESYS; ERRBUF holds the reason.
 */
int brim_bench_server_evictions(const struct brim_bench_node  *node,
                                const struct brim_bench_proto *proto,
                                const struct brim_auth_secret *secret,
                                uint32_t timeout_ms, uint64_t *evictions,
                                char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Connect to NODE, say PROTO's HELLO (and AUTH with SECRET) and store the
 * limits of its reply: the longest key and the largest value the node
 * takes, bytes. Blocking, TIMEOUT_MS at most. Returns 0; BRIM_ENOTFOUND
 * (nothing in ERRBUF) when PROTO has no HELLO, so no limits to learn; the
 * node's status when it refused the HELLO or AUTH; BRIM_ECONNREFUSED,
 * BRIM_ETIMEDOUT, BRIM_EBADREPLY or BRIM_ESYS. ERRBUF names NODE and the
 * reason.
 */
int brim_bench_server_limits(const struct brim_bench_node  *node,
                             const struct brim_bench_proto *proto,
                             const struct brim_auth_secret *secret,
                             uint32_t timeout_ms, uint32_t *max_key_bytes,
                             uint32_t *max_value_bytes,
                             char      errbuf[BRIM_ERRBUF_LEN]);

/*
 * Connect to NODE (a Redis Cluster node), send CLUSTER SLOTS and read its
 * reply into *MAP (the caller's; see rcluster.h), a master without an IP
 * taking DEFAULT_HOST (borrowed). Blocking, TIMEOUT_MS at most. Returns 0;
 * BRIM_EBADREQ when NODE refused the command (a redis-server not in
 * cluster mode: ERRBUF says so and quotes its error); BRIM_ENOTFOUND when
 * no slot is assigned yet; BRIM_EBADREPLY, BRIM_ENOSPACE (too many
 * masters), BRIM_ECONNREFUSED, BRIM_ETIMEDOUT, BRIM_ECLOSED, BRIM_ENOMEM
 * or BRIM_ESYS. ERRBUF names NODE and the reason.
 */
int brim_bench_server_slots(const struct brim_bench_node *node,
                            const char *default_host, uint32_t timeout_ms,
                            struct brim_bench_rcluster_map *map,
                            char errbuf[BRIM_ERRBUF_LEN]);

#endif /* BRIM_CLIENT_BENCH_SERVER_H */
