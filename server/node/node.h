/*
 * server/node/node.h - the state of one brim-node process: its settings,
 * its listener, its store, its counters, and in cluster mode its epochs,
 * lease, coordinator link and links to other nodes, each owned by the
 * module named beside it. One libuv loop owns all of it. main.c builds it
 * from the command line and runs the loop; docs/design.md
 * ("Architecture") shows which module calls which.
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
#include "server/http.h"
#include "server/peer.h"
#include "server/node/store.h"
#include "server/node/links.h"
#include "server/node/migrate.h"

/* Counters of the memcached port's forwards (mcfwd.h). */
struct brim_mcfwd_stats {
    uint64_t sent;     /* requests sent to another node */
    uint64_t moved;    /* MOVED answers followed */
    uint64_t retries;  /* waits: RETRY, a link being made */
    uint64_t timeouts; /* forwards past their deadline */
    uint64_t lost;     /* writes whose link closed under them */
    uint64_t inflight; /* forwards not answered yet */
};

struct brim_mcport; /* server/node/mcport_int.h */

/* brim-node's settings: defaults in brim_node_config_default(). */
struct brim_node_config {
    char                    listen[128];       /* "host:port" */
    char                    name[65];          /* node name, for logs */
    uint32_t                memory_mb;         /* the data's limit (items,
                                                tables), MiB */
    uint32_t                buffer_mb;         /* unsent replies, all
                                                connections, MiB */
    int                     prefault;          /* --prefault: fault in
                                                memory_mb of heap before
                                                serving (server/prefault.h) */
    uint32_t                max_conns;         /* open connections */
    uint32_t                idle_timeout_s;    /* 0: never */
    uint32_t                partitions;        /* P */
    uint64_t                seed;              /* cluster seed (key hash) */
    struct brim_wire_limits limits;            /* key, value, frame bounds */
    size_t                  out_high_water;    /* bytes: pause reading */
    enum brim_evict_policy  policy;            /* eviction */
    int                     standalone;        /* owns every partition */
    char                    coordinator[512];  /* cluster: "host:port",
                                            or a comma-separated list of
                                            coordinators (etcd mode) */
    uint32_t                weight_ppm;        /* cluster: weight, millionths */
    int                     weight_set;        /* --weight was given */
    int                     name_set;          /* --name was given */
    int                     partitions_set;    /* --partitions was given: a
                                                cluster of another P is
                                                refused, not taken */
    uint32_t                migrate_mb_per_s;  /* stream pace, 10^6 B/s;
                                                0: unpaced */
    int                     log_level;         /* enum brim_log_level */
    char                    secret_file[1024]; /* cluster secret; "": none
                                                 (PROTOCOL.md 12) */
    char                    client_secret_file[1024]; /* clients' secret;
                                                 "": clients need none */
    char                    memcached_listen[128];    /* "host:port" of the
                                                 memcached port; "": none */
    int                     memcached_insecure;       /* allow it off loopback
                                                 with a client secret */
    int                     memcached_allow_flush;    /* serve flush_all */
    uint32_t                memcached_timeout_ms;     /* a forwarded op's
                                                 deadline, ms */
    char                    http_listen[128];         /* "host:port" of the
                                                 HTTP port; "": none */
    uint32_t                http_max_conns;           /* its open
                                                 connections at most */
};

/*
 * Server-side latency of the requests of one op, from the moment its frame
 * is taken from the input buffer to the moment its reply is queued (or,
 * for a forwarded read or pull, its forward is sent): bucket k < 23 counts
 * requests under 2^(k+8) ns (256 ns x 2^k, up to 1.07 s), bucket 23 the
 * slower ones. Not cumulative; /metrics adds them up (metrics.c).
 */
#define BRIM_NODE_LAT_BUCKETS 24
struct brim_node_lat {
    uint64_t bucket[BRIM_NODE_LAT_BUCKETS]; /* requests per bucket */
    uint64_t sum_ns;                        /* their latencies, ns */
};

/* Count in LAT one request that took NS nanoseconds: a shift, a
 * compare and two additions (the data path's cost of the histogram). */
static inline void
brim_node_lat_record(struct brim_node_lat *lat, uint64_t ns)
{
    uint32_t k = 0;

    if (ns >= 256) {
        k = (uint32_t) (63 - __builtin_clzll(ns)) - 7;
        k = k < BRIM_NODE_LAT_BUCKETS ? k : BRIM_NODE_LAT_BUCKETS - 1;
    }
    lat->bucket[k]++;
    lat->sum_ns += ns;
}

/* Per-op and request counters the node reports. */
struct brim_node_stats {
    struct brim_node_lat lat[BRIM_OP_CODE_LIMIT]; /* latency by opcode */
    uint64_t             ops[BRIM_OP_CODE_LIMIT]; /* requests served, by opcode:
                                          clients' and internal alike */
    uint64_t             requests;          /* client requests (roles client,
                                          admin, or before HELLO) */
    uint64_t             internal_requests; /* from other nodes and the
                                          coordinator */
    uint64_t             bad_requests;      /* refused as malformed */
    uint64_t             last_requests;     /* requests at the last rate tick */
    uint64_t             last_tick_ms;      /* loop time of the last tick */
    double               requests_per_sec;  /* over the last tick */
};

/*
 * The node's view of its cluster (PROTOCOL.md 10.4; epoch.c): the
 * committed topology it serves by, at most one pending (proposed and
 * acknowledged) one, and its own member index in each. Unused (all zero)
 * in standalone mode.
 */
struct brim_node_topo {
    struct brim_topo committed;    /* the map served by; epoch 0: none */
    struct brim_topo pending;      /* proposed; valid when has_pending */
    int              has_pending;  /* a pending topology is held */
    int32_t          self;         /* our index in committed, or -1 */
    int32_t          self_pending; /* our index in pending, or -1 */
    int              fenced;       /* the coordinator said DENIED */
    int              was_member;   /* a committed map held this node */
    uint64_t         term;         /* the highest coordinator term seen
                                      (PROTOCOL.md 10.6); 0: none (file
                                      mode) */
    uint64_t         epoch_seen;   /* the highest epoch seen proposed,
                                      committed or aborted: a PROPOSE at
                                      or below it is refused */
};

/* The serving lease (lease.c; DESIGN.md 7 step 7). */
struct brim_node_lease {
    uint64_t   until_ms;        /* loop ms: data ops served before */
    uint32_t   length_ms;       /* its length (the coordinator's) */
    uint64_t   coord_ok_ms;     /* loop ms the coordinator last
                                       answered a heartbeat */
    uint64_t   round;           /* LEASE_CONFIRM round (request id) */
    uint32_t   round_ok;        /* members that confirmed it */
    uint64_t   round_sent_ms;   /* loop ms the round was sent */
    uint64_t   rounds;          /* rounds sent, ever */
    uint64_t   expiries;        /* times it ran out */
    uint64_t   member_renewals; /* rounds a majority renewed */
    uint64_t   seen_ms;         /* the expiry last counted */
    uv_timer_t timer;           /* looks at it every 100 ms */
    int        timer_init;
};

/* A graceful leave's steps (coordlink.c). */
enum brim_leave_state {
    BRIM_LEAVE_NONE = 0,
    BRIM_LEAVE_WANTED,  /* asked by a signal; LEAVE not sent
                                       yet (no coordinator connection) */
    BRIM_LEAVE_ASKED,   /* LEAVE sent, waiting for its reply */
    BRIM_LEAVE_WAITING, /* accepted: waiting for the epoch
                                       without us */
    BRIM_LEAVE_DENIED,  /* the last member: serving on */
    BRIM_LEAVE_LINGER   /* out of the map: answering MOVED a
                                       while, then draining */
};

/* The node's link to its coordinator (coordlink.c; PROTOCOL.md 10.1). */
struct brim_node_coordlink {
    struct brim_peer peer;                    /* the connection */
    uv_timer_t       timer;                   /* heartbeat and reconnect */
    uint32_t         heartbeat_ms;            /* interval between heartbeats */
    uint32_t         backoff_ms;              /* next reconnect delay */
    int              joined;                  /* the coordinator knows this
                                           connection as ours */
    int              accepted;                /* a coordinator ever accepted
                                           our JOIN (our secret is right) */
    int              fetch_out;               /* a MAP_FETCH is unanswered */
    uint64_t         next_id;                 /* request ids on it */
    uint64_t         hb_sent_ms;              /* oldest unanswered HEARTBEAT's
                                           send */
    int              hb_out;                  /* a HEARTBEAT is unanswered */
    uint64_t         hb_due_ms;               /* loop ms the next heartbeat is
                                           due; 0: none scheduled */
    uint64_t         hb_late_max_ms;          /* most a heartbeat went out
                                           after it was due (a stalled
                                           loop), ms */
    uint64_t         hb_late;                 /* heartbeats that went out more
                                           than a tenth of the lease late */
    uint64_t         hb_early_ms;             /* loop ms of the last heartbeat
                                           sent early (migration_idle) */
    uint64_t         hb_early;                /* heartbeats sent early */
    uint32_t         lease_ms;                /* the lease the coordinator last
                                           gave; 0: none yet */
    char             addr[BRIM_ADDR_MAX + 1]; /* the coordinator in use: one
                                           of --coordinator's, or the
                                           leader a NOTLEADER named */
    uint32_t         next;                    /* --coordinator's entry after
                                           it, tried when it is lost */
    int              followed;                /* ADDR is a NOTLEADER's leader:
                                           try it before the list */
    uint64_t         asked_ms;   /* loop ms it was last asked something still
                              unanswered (connect, JOIN, a heartbeat) */
    uv_timer_t       watch;      /* gives up a silent one (a list of
                              coordinators only) */
    int              watch_init; /* WATCH is initialised */
    enum brim_leave_state leave; /* the graceful leave */
    uv_timer_t            leave_timer; /* looks at the leave */
    int                   leave_timer_init;
    uint64_t              leave_since_ms;    /* loop ms it was asked */
    int                   leave_signalled;   /* a SIGTERM/SIGINT asked it (a
                                            * second one exits at once) */
    uint64_t              leave_logged_ms;   /* loop ms progress was logged */
    uint64_t              linger_until;      /* loop ms: drained, exit */
    uint64_t              leave_dropped0;    /* mig_partitions_out_dropped
                                              when the leave began: only
                                              drops since say it lost keys */
    int                   leave_dropped_set; /* leave_dropped0 is taken */
    uint64_t              linger_fetch_ms;   /* loop ms the map was last
                                              fetched while lingering */
};

/*
 * The cluster's flush marks as this node knows them (flush.h): each a
 * Unix ms time at which every item stored before it is gone.
 */
struct brim_node_flush {
    uint64_t   applied_ms;    /* the last mark applied to the store; the
                                 stamp this node sends; 0: none */
    uint64_t   pending_lo_ms; /* the earliest mark still to come; 0: none */
    uint64_t   pending_hi_ms; /* the latest one (= LO when one) */
    uint64_t   applied;       /* stats: marks applied */
    uint64_t   stamped;       /* stats: of them, applied early because a
                                 peer's stamp showed it applied there */
    uint64_t   dropped;       /* stats: stream entries and forwarded
                                 answers dropped as older than a mark */
    uv_timer_t timer;         /* the earliest pending mark */
};

/* One node process. */
struct brim_node {
    struct brim_node_config    cfg;            /* settings */
    uv_loop_t                 *loop;           /* the one loop */
    struct brim_server         srv;            /* client listener */
    struct brim_store         *store;          /* the data */
    struct brim_store_config   store_cfg;      /* what it was made with */
    msgpack_zone               zone;           /* reused to unpack requests */
    struct brim_wire_limits    coord_limits;   /* on coord connections: a
                                             topology's frame and members */
    struct brim_wire_limits    peer_limits;    /* on node connections: a stream
                                             batch's entries */
    uint64_t                   incarnation;    /* random, per process start */
    uint64_t                   cluster_id;     /* standalone: random */
    uint64_t                   start_unix;     /* Unix seconds at start */
    uv_timer_t                 tick_timer;     /* reclaim + rate, every 10 ms */
    struct brim_node_flush     flush;          /* flush marks (flush.c) */
    uv_signal_t                sig_term;       /* SIGTERM: leave and exit */
    uv_signal_t                sig_int;        /* SIGINT: same */
    uv_signal_t                sig_quit;       /* SIGQUIT: exit at once */
    struct brim_node_stats     stats;          /* request counters */
    struct brim_node_topo      topo;           /* cluster mode: the epochs */
    struct brim_node_lease     lease;          /* cluster mode: the lease */
    struct brim_node_coordlink coordlink;      /* cluster mode: coordinator */
    struct brim_node_links     links;          /* connections to other nodes */
    struct brim_node_links     mc_links;       /* the memcached port's own
                                            links, for its forwards */
    struct brim_mcfwd_stats    mcfwd_stats;    /* its forwards (mcfwd.c) */
    struct brim_mcport        *mc;             /* the memcached port, or NULL
                                            (mcport.c) */
    struct brim_http          *http;           /* the HTTP port, or NULL
                                            (metrics.c) */
    uint64_t                   ring_epoch;     /* the committed epoch of the
                                            two counts below (stats.c) */
    uint32_t                   ring_displaced; /* owned partitions whose ring
                                              owner is another node */
    uint64_t                   ring_cap;       /* this node's cap */
    struct brim_migrate       *mig;            /* migration state (migrate*.c);
                                            NULL until first used */
    void (*stop)(struct brim_node *node);      /* main.c's:
                                            close everything, let the loop
                                            end (exit_code is returned) */
    void (*migration_idle)(struct brim_node *node); /* coordlink.c's, or
                                            NULL: called when the last
                                            incoming partition is complete
                                            or the last outgoing one ended
                                            (migrate*.c), to tell the
                                            coordinator now */
    int               stopping;                     /* a signal asked to stop */
    int               exit_code;                    /* main()'s return value */
    struct brim_guard guard;                        /* AUTH on our listener, and
                                            the secrets */
};

/* brim-node's exit status when its cluster secret is missing or refused
 * before any coordinator accepted it: a configuration error. */
#define BRIM_NODE_EXIT_SECRET 3

/* Fill CFG with brim-node's defaults. */
void brim_node_config_default(struct brim_node_config *cfg);

#endif /* BRIM_SERVER_NODE_NODE_H */
