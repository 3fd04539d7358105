/*
 * client/bench/engine.h - brim-bench's load engine: one epoll loop per
 * thread over non-blocking sockets, each connection keeping up to
 * --pipeline requests in flight and writing all that it has to send in one
 * syscall. Closed loop by default; with --rate an open loop whose requests
 * are timed from their intended send time (coordinated omission, Gil
 * Tene). Keys route to a node through engine_route(): the one node of
 * --server, with --coordinator the owner of the key's partition in the
 * newest map (cluster.c), or with --target redis-cluster the master of the
 * key's hash slot (rcluster.c) in the thread's copy of the slot map, which
 * a MOVED corrects at once.
 */
#ifndef BRIM_CLIENT_BENCH_ENGINE_H
#define BRIM_CLIENT_BENCH_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <sys/socket.h>

#include "client/bench/bench.h"
#include "client/bench/hist.h"
#include "client/bench/proto.h"
#include "client/bench/verify.h"
#include "client/bench/workload.h"
#include "common/rng.h"
#include "proto/buf.h"

struct brim_auth_secret; /* proto/auth.h */

/* The phases of a run. */
enum brim_bench_phase {
    BRIM_BENCH_PRELOAD = 0, /* SET every key once, not measured */
    BRIM_BENCH_MEASURE = 1  /* the measured mix */
};

/* Counters of one phase. */
struct brim_bench_counts {
    uint64_t ops;    /* requests answered without error */
    uint64_t gets;   /* of which GET */
    uint64_t sets;   /* SET */
    uint64_t dels;   /* DEL */
    uint64_t hits;   /* GETs that found a value */
    uint64_t misses; /* GETs that found none */
    uint64_t errors; /* error replies, timeouts, lost conns */
    uint64_t unsent; /* --rate: due, unsent at the end */
    uint64_t moved;  /* cluster: MOVED replies, resent */
    uint64_t ask;    /* redis-cluster: ASK replies, resent with ASKING */
    uint64_t retry;  /* cluster: RETRY, BUSY (brim), TRYAGAIN and
                      * CLUSTERDOWN (redis) replies, resent */
    uint64_t resent; /* cluster: requests resent after a lost conn */
};

/* Nodes a --coordinator run can know at most (over all its epochs). */
#define BRIM_BENCH_NODES_MAX 64

/*
 * --coordinator: one epoch's routing, built from the coordinator's
 * topology by cluster.c. Immutable once published; older ones are kept
 * until the run ends, so a thread may hold any of them. redis-cluster:
 * the slot map, OWNER[slot] for 16384 slots; EPOCH counts the maps that
 * differed from the one before (Redis's CLUSTER SLOTS has no epoch).
 */
struct brim_bench_route {
    uint64_t                 epoch;      /* the map's epoch */
    uint64_t                 cluster_id; /* its cluster's id */
    uint64_t                 seed;       /* the cluster hash seed */
    uint32_t                 partitions; /* P, or 16384 slots */
    uint8_t                  slots;      /* redis-cluster: OWNER by slot */
    uint32_t                 nnodes;     /* sh->nodes[0 .. nnodes) known */
    uint32_t                *owner;      /* P node indices (sh->nodes) */
    uint8_t                  live[BRIM_BENCH_NODES_MAX]; /* in this map */
    uint32_t                 nlive; /* members in this map */
    struct brim_bench_route *older; /* the previous one, kept */
};

/* A server to send to, resolved once. */
struct brim_bench_node {
    struct sockaddr_storage addr; /* its address */
    socklen_t               addr_len;
    char                    name[BRIM_BENCH_ADDR_MAX + 1]; /* HOST:PORT */
};

/* What the threads of a run share; read-only once the threads start,
 * except where noted. */
struct brim_bench_shared {
    const struct brim_bench_opts      *o;        /* the options */
    struct brim_bench_node            *nodes;    /* the servers */
    uint32_t                           nnodes;   /* 1, or with --coordinator
                                             * BRIM_BENCH_NODES_MAX slots
                                             * (route->nnodes in use) */
    uint32_t                           per_node; /* conns per node per thread */
    _Atomic(struct brim_bench_route *) route;    /* --coordinator, else NULL */
    struct brim_bench_cluster         *cl;       /* --coordinator: refetches */
    uint32_t                           run_id;   /* in every --verify value */
    const struct brim_auth_secret     *secret;   /* --secret-file's, proven on
                                             * every brim connection;
                                             * NULL: no AUTH */
    pthread_barrier_t                  go;       /* threads + main: start */
    uint64_t                           start_ns; /* measuring starts; set
                                             * by main before "go" */
    FILE                              *latlog;   /* --latency-log, NULL */
    int                                abort;    /* set by main before "go" */
};

struct brim_bench_conn;
struct brim_bench_cluster;

/* --latency-log: at most this many replies kept per thread (16 bytes
 * each: 256 MiB), about 28 minutes at 10,000 ops/s. */
#define BRIM_BENCH_LAT_MAX (1ull << 24)

/* --latency-log: one measured reply. */
struct brim_bench_lat {
    uint64_t start_ns; /* its intended send time, CLOCK_MONOTONIC */
    uint64_t lat_ns;   /* its latency, as the histogram has it */
};

/* --coordinator: a request answered MOVED or RETRY (or a GET whose
 * connection was lost), waiting to be sent again. */
struct brim_bench_retry {
    struct brim_bench_req req;        /* as first sent: verifier state kept */
    uint64_t              due_ns;     /* not before then (RETRY backoff) */
    uint64_t              need_epoch; /* wait (a little) for this map */
    uint32_t              attempts;   /* resends so far */
    uint32_t              ask_node;   /* redis-cluster ASK: send to this
                                       * node (sh->nodes), ASKING first;
                                       * UINT32_MAX: by the map */
};

/* One load thread: its loop, connections, workload and results. */
struct brim_bench_thread {
    uint32_t                       id;    /* 0 .. threads - 1 */
    struct brim_bench_shared      *sh;    /* the run */
    const struct brim_bench_opts  *o;     /* sh->o */
    const struct brim_bench_proto *proto; /* o->proto */
    pthread_t                      tid;   /* its pthread */
    int                            ep;    /* epoll instance */
    struct brim_bench_conn        *conns; /* nconns, grouped by node */
    uint32_t                       nconns;
    uint32_t                      *nroom;     /* per node: conns with room */
    uint32_t                      *rr;        /* per node: search start */
    struct brim_rng                rng;       /* this thread's draws */
    struct brim_bench_mix          mix;       /* op mix over its keys */
    struct brim_bench_hist         hist;      /* measured latencies, ns */
    struct brim_bench_verify       ver;       /* --verify */
    char                          *value;     /* SET value scratch */
    struct brim_bench_conn        *dirty;     /* conns with output queued */
    uint64_t                       ops_limit; /* --ops share, 0 none */

    /* The current phase. */
    int                  phase;         /* enum brim_bench_phase */
    uint32_t             depth;         /* requests out per conn */
    uint64_t             issued;        /* ops drawn this phase */
    uint64_t             limit;         /* stop after this many; 0 */
    uint64_t             preload_next;  /* next local key to load */
    uint64_t             deadline_ns;   /* stop issuing then; 0 */
    uint64_t             inflight;      /* requests out, all conns */
    uint64_t             stop_ns;       /* when issuing stopped */
    uint64_t             next_tick_ns;  /* housekeeping */
    uint64_t             last_reply_ns; /* measured phase */
    double               rate_per_ns;   /* --rate share; 0 closed */
    uint64_t             ol_start_ns;   /* open loop origin */
    uint64_t             ol_sent;       /* open-loop ops drawn */
    struct brim_bench_op blocked;       /* drawn, waiting for room */
    int                  has_blocked;
    int                  stopping; /* no new ops; draining */

    /* --coordinator: the route in use and the requests to resend. */
    struct brim_bench_route *route;  /* the latest this thread saw */
    uint32_t                 opened; /* nodes whose conns it opened */
    uint32_t *slot_owner;            /* redis-cluster: route->owner copied, then
                           * corrected by MOVED replies; else NULL */
    struct brim_bench_retry *rq;     /* requests waiting to go again */
    uint32_t                 nrq;
    uint32_t                 rq_cap;

    struct brim_bench_lat *lat;         /* --latency-log: replies, else NULL */
    uint64_t               nlat;        /* in LAT */
    uint64_t               lat_cap;     /* LAT's room */
    uint64_t               lat_dropped; /* past BRIM_BENCH_LAT_MAX */

    struct brim_bench_counts cnt[2];               /* per phase */
    atomic_uint_fast64_t     progress;             /* preload ops done */
    atomic_int               setup_done;           /* preload finished */
    uint32_t                 logged;               /* messages printed */
    int                      fatal;                /* the run cannot go on */
    char                     err[BRIM_ERRBUF_LEN]; /* why */
};

/*
 * Prepare T as thread ID of SH's run with NCONNS connections to each node,
 * and connect them (blocking, with a timeout). Returns 0, or BRIM_ENOMEM,
 * BRIM_EINVAL, BRIM_ECONNREFUSED or BRIM_ETIMEDOUT with the reason in
 * ERRBUF. On error call brim_bench_thread_destroy() all the same.
 */
int brim_bench_thread_init(struct brim_bench_thread *t,
                           struct brim_bench_shared *sh, uint32_t id,
                           uint32_t nconns, char errbuf[BRIM_ERRBUF_LEN]);

/* Close T's connections and free what it holds; zeroed T allowed. */
void brim_bench_thread_destroy(struct brim_bench_thread *t);

/*
 * Ask every thread's measured part to end now, as when --duration is
 * reached: no new requests, the ones out are waited for, and the run is
 * reported as usual. Async-signal-safe (one lock-free atomic store):
 * brim-bench calls it on SIGINT and SIGTERM.
 */
void brim_bench_request_stop(void);

/*
 * Run PHASE on T until it is done: every key loaded (PRELOAD), or the
 * duration or the op count reached and every reply in or timed out
 * (MEASURE). Returns 0, or -1 when T->fatal was set (T->err says why).
 */
int brim_bench_engine_run(struct brim_bench_thread *t, int phase);

#endif /* BRIM_CLIENT_BENCH_ENGINE_H */
