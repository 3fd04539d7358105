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
#include "proto/wire.h"
#include "server/conn.h"
#include "server/node/store.h"

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
    int                    log_level;        /* enum brim_log_level */
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

/* One node process. */
struct brim_node {
    struct brim_node_config cfg;         /* settings */
    uv_loop_t              *loop;        /* the one loop */
    struct brim_server      srv;         /* client listener */
    struct brim_store      *store;       /* the data */
    msgpack_zone            zone;        /* reused to unpack requests */
    uint64_t                incarnation; /* random, per process start */
    uint64_t                cluster_id;  /* standalone: random */
    uint64_t                start_unix;  /* Unix seconds at start */
    uv_timer_t              tick_timer;  /* reclaim + rate, every 100 ms */
    uv_timer_t              flush_timer; /* delayed FLUSH */
    uv_signal_t             sig_term;    /* SIGTERM: leave and exit */
    uv_signal_t             sig_int;     /* SIGINT: same */
    uv_signal_t             sig_quit;    /* SIGQUIT: exit at once */
    struct brim_node_stats  st;          /* counters */
    int                     stopping;    /* a signal asked to stop */
};

/* Fill CFG with brim-node's defaults. */
void brim_node_config_default(struct brim_node_config *cfg);

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

#endif /* BRIM_SERVER_NODE_NODE_H */
