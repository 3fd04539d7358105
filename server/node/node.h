/*
 * server/node/node.h - the state of one brim-node process: its settings,
 * its listener, its store and its counters. One libuv loop owns all of it.
 * The command layer (cmd.c) serves requests against it; main.c builds it
 * from the command line and runs the loop.
 */
#ifndef BRIM_SERVER_NODE_NODE_H
#define BRIM_SERVER_NODE_NODE_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>
#include <uv.h>

#include "proto/ops.h"
#include "proto/topo.h"
#include "proto/wire.h"
#include "server/conn.h"
#include "server/guard.h"
#include "server/peer.h"
#include "server/node/store.h"
#include "server/node/migrate.h"

/* brim-node's settings: defaults in brim_node_config_default(). */
struct brim_node_config {
    char                   listen[128];      /* "host:port" */
    char                   name[65];         /* node name, for logs */
    uint32_t               memory_mb;        /* data-plane limit, MiB */
    uint32_t               max_conns;        /* open connections */
    uint32_t               idle_timeout_s;   /* 0: never */
    uint32_t               partitions;       /* P */
    uint64_t               seed;             /* cluster seed (key hash) */
    struct brim_wire_limits limits;          /* key, value, frame bounds */
    size_t                 out_high_water;   /* bytes: pause reading */
    enum brim_evict_policy policy;           /* eviction */
    int                    standalone;       /* owns every partition */
    char                   coordinator[128]; /* cluster: "host:port" */
    uint32_t               weight_ppm;       /* cluster: weight, millionths */
    int                    weight_set;       /* --weight was given */
    uint32_t               migrate_mb_per_s; /* stream pace, 10^6 B/s;
                                                0: unpaced */
    int                    log_level;        /* enum brim_log_level */
    char                   secret_file[1024]; /* cluster secret; "": none
                                                 (PROTOCOL.md 12) */
    char                   client_secret_file[1024]; /* clients' secret;
                                                 "": clients need none */
};

/* Per-op and request counters the node reports. */
struct brim_node_stats {
    uint64_t ops[BRIM_OP_CODE_LIMIT];  /* requests served, by opcode */
    uint64_t requests;                 /* all requests */
    uint64_t bad_requests;             /* refused as malformed */
    uint64_t last_requests;            /* requests at the last rate tick */
    uint64_t last_tick_ms;             /* loop time of the last tick */
    double   requests_per_sec;         /* over the last tick */
};

/*
 * A node's view of its cluster (PROTOCOL.md 10.4): the committed topology it
 * serves by, at most one pending (proposed and acknowledged) one, and its
 * own member index in each. Unused (all zero) in standalone mode.
 */
struct brim_node_cluster {
    struct brim_topo committed;     /* the map served by; epoch 0: none */
    struct brim_topo pending;       /* proposed; valid when has_pending */
    int              has_pending;   /* a pending topology is held */
    int32_t          self;          /* our index in committed, or -1 */
    int32_t          self_pending;  /* our index in pending, or -1 */
    int              fenced;        /* the coordinator said DENIED */
    int              was_member;    /* a committed map held this node */
    struct brim_peer coord;         /* our connection to the coordinator */
    uv_timer_t       timer;         /* heartbeat and reconnect */
    uint32_t         heartbeat_ms;  /* interval between heartbeats */
    uint32_t         backoff_ms;    /* next reconnect delay */
    int              joined;        /* JOIN answered OK on this connection */
    int              fetch_out;     /* a MAP_FETCH is unanswered */
    uint64_t         next_id;       /* request ids on the coord connection */
    /* The serving lease (lease.c). */
    uint64_t         lease_until_ms; /* loop ms: data ops served before */
    uint32_t         lease_ms;      /* its length (coordinator's), ms */
    uint64_t         hb_sent_ms;    /* oldest unanswered HEARTBEAT's send */
    int              hb_out;        /* a HEARTBEAT is unanswered */
    uint64_t         hb_ok_ms;      /* loop ms of the last one answered */
    uint64_t         confirm_round; /* LEASE_CONFIRM round (request id) */
    uint32_t         confirm_ok;    /* members that confirmed it */
    uint64_t         confirm_sent_ms; /* loop ms the round was sent */
    uint64_t         lease_rounds;  /* rounds sent, ever */
    uint64_t         lease_expiries; /* times it ran out */
    uint64_t         lease_member_renewals; /* rounds a majority renewed */
    uint64_t         lease_seen_ms; /* the expiry last counted */
    uv_timer_t       lease_timer;   /* looks at it every 100 ms */
    int              lease_timer_init;
};

/* One node process. */
struct brim_node {
    struct brim_node_config cfg;         /* settings */
    uv_loop_t              *loop;        /* the one loop */
    struct brim_server      srv;         /* client listener */
    struct brim_store      *store;       /* the data */
    msgpack_zone            zone;        /* reused to unpack requests */
    struct brim_wire_limits coord_limits; /* on coord connections: a
                                             topology's frame and members */
    struct brim_wire_limits peer_limits; /* on node connections: a stream
                                             batch's entries */
    uint64_t                incarnation; /* random, per process start */
    uint64_t                cluster_id;  /* standalone: random */
    uint64_t                start_unix;  /* Unix seconds at start */
    uv_timer_t              tick_timer;  /* reclaim + rate, every 100 ms */
    uv_timer_t              flush_timer; /* delayed FLUSH */
    uv_signal_t             sig_term;    /* SIGTERM: leave and exit */
    uv_signal_t             sig_int;     /* SIGINT: same */
    uv_signal_t             sig_quit;    /* SIGQUIT: exit at once */
    struct brim_node_stats  st;          /* counters */
    struct brim_node_cluster cl;         /* cluster mode state */
    struct brim_migrate    *mig;         /* migration state (migrate.c);
                                            NULL until first used */
    int                     stopping;    /* a signal asked to stop */
    int                     exit_code;   /* main()'s return value */
    struct brim_guard       guard;       /* AUTH on our listener, and
                                            the secrets */
};

/* Fill CFG with brim-node's defaults. */
void brim_node_config_default(struct brim_node_config *cfg);

/*
 * Set P's handshake (server/peer.h) for a connection this node opens to
 * the coordinator or another node: HELLO as role node with our name,
 * incarnation, cluster id and epoch, and AUTH with the cluster secret
 * when there is one. Call it right before brim_peer_connect(P).
 */
void brim_node_peer_hello(struct brim_node *node, struct brim_peer *p);

/*
 * The connection layer's dispatch callback for a node: decode one frame
 * body, serve it against the node in C->srv->data, append the reply.
 * Returns 0, or a negative code when the connection must close.
 */
int brim_node_dispatch(struct brim_conn *c, const char *body, size_t len);

/*
 * The STATS sections named by SECTION (LEN bytes, borrowed): "" is all,
 * else one of "node", "store", "conns", "ops". Writes a bit set to *OUT.
 * Returns 0 or BRIM_EINVAL for an unknown name.
 */
int brim_node_stats_sections(const char *section, size_t len, uint32_t *out);

/*
 * Append the node's STATS reply for SECTIONS (from
 * brim_node_stats_sections()) to OUT: counters of the node, the store, the
 * listener and per-op requests. Returns 0 or BRIM_ENOMEM.
 */
int brim_node_stats_reply(struct brim_node *node, struct brim_buf *out,
                          uint64_t request_id, uint32_t sections);

/* ---- cluster mode (epoch.c) ---- */

/*
 * Decide whether the node serves a data op on the key hashed to KEY_HASH,
 * stamped with REQ_EPOCH (PROTOCOL.md 10.4). Returns 0 (serve it),
 * BRIM_EMOVED (REP->epoch and REP->owner filled: the committed epoch and
 * the owner's address, borrowed from the node's topology) or BRIM_ERETRY
 * (REP->epoch filled). Always 0 in standalone mode. Call
 * brim_node_epoch_seen() once per request first.
 */
int brim_node_route(struct brim_node *node, uint64_t req_epoch,
                    uint64_t key_hash, struct brim_rep *rep);

/* A request stamped REQ_EPOCH arrived: when it is the pending epoch, the
 * pending topology is committed now (DESIGN.md 7, step 2). */
void brim_node_epoch_seen(struct brim_node *node, uint64_t req_epoch);

/* The key hash seed: the cluster's once a topology is known. */
uint64_t brim_node_seed(const struct brim_node *node);

/*
 * EPOCH_PROPOSE: decode topology T (borrowed) and keep it as pending,
 * replacing an older pending one. Returns 0, BRIM_EBADREQ (malformed, or
 * its partitions differ from the node's), BRIM_EDENIED (another cluster)
 * or BRIM_EEXISTS (not newer than the committed epoch), with ERRBUF saying
 * why. On error the node's state is unchanged.
 */
int brim_node_propose(struct brim_node *node, const msgpack_object *t,
                      char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Adopt topology T (borrowed) as committed: the coordinator's answer to
 * JOIN. Ignored (0) when it is not newer than the committed one. Returns
 * 0 or what brim_node_propose() returns.
 */
int brim_node_adopt(struct brim_node *node, const msgpack_object *t,
                    char errbuf[BRIM_ERRBUF_LEN]);

/*
 * EPOCH_COMMIT EPOCH: the pending topology becomes committed and the store
 * drops the partitions the node no longer owns. Returns 0, or
 * BRIM_ENOTFOUND when EPOCH is not the pending epoch (0 also when it is
 * already the committed one: a resent commit).
 */
int brim_node_commit(struct brim_node *node, uint64_t epoch);

/* EPOCH_ABORT EPOCH: forget the pending topology if it is EPOCH. */
void brim_node_abort(struct brim_node *node, uint64_t epoch);

/* Partitions the committed map gives this node. */
uint32_t brim_node_owned(const struct brim_node *node);

/* ---- the serving lease (lease.c; DESIGN.md 7 step 7) ---- */

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
 * and lease length when no epoch newer than REQ's is known here, EXISTS
 * otherwise; DENIED unless C said role node. Returns 0 or BRIM_ENOMEM.
 */
int brim_node_lease_confirm_serve(struct brim_node *node, struct brim_conn *c,
                                  const struct brim_req *req);

/* ---- the coordinator connection (coord.c) ---- */

/* Connect to the coordinator, join, and heartbeat; reconnects by itself. */
void brim_node_coord_start(struct brim_node *node);

/* Close the coordinator connection and its timer (the node is stopping). */
void brim_node_coord_stop(struct brim_node *node);

/* Ask the coordinator for its committed map (MAP_FETCH) and adopt it. */
void brim_node_coord_fetch(struct brim_node *node);

/* Stop the node: close the listener, timers and signals (main.c). */
void brim_node_stop(struct brim_node *node);

/* Free the cluster state (after the loop has stopped). */
void brim_node_cluster_destroy(struct brim_node *node);

#endif /* BRIM_SERVER_NODE_NODE_H */
