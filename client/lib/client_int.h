/*
 * client/lib/client_int.h - libbrim's private structures and the calls its
 * modules share: errmsg.c (the handle's last-failure message), pool.c (one
 * connection per node, a struct brim_link of client/net/link.h, and the
 * pipelined exchange of a call's frames on it), route.c (which node a
 * call goes to, and the retry rules of DESIGN.md section 5), coordlink.c
 * (the topology: the seeds, MAP_FETCH from nodes, the epochs data replies
 * name, the admin calls to a coordinator). Not installed.
 *
 * The calls go one way (docs/design.md, "Architecture"): the API files
 * (client.c, multi.c, stats.c, admin.c) over coordlink.c, over route.c,
 * over pool.c, over errmsg.c. Where route.c needs the map's keeper it goes
 * through struct brim_route_map, which client.c fills in.
 */
#ifndef BRIM_CLIENT_LIB_CLIENT_INT_H
#define BRIM_CLIENT_LIB_CLIENT_INT_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include <brim.h>

#include "client/net/link.h"
#include "client/net/sock.h"
#include "common/hash.h"
#include "common/ring.h"
#include "proto/auth.h"
#include "proto/topo.h"
#include "proto/wire.h"

/* Backoff after RETRY or BUSY, or a repeated lost connection, ms: doubling
 * from MIN to MAX (PROTOCOL.md 5.1). */
#define BRIM_BACKOFF_MIN_MS 1
#define BRIM_BACKOFF_MAX_MS 100

/* Cluster mode (coordlink.c): the longest topology reply, bytes (a map at
 * P = 2^20 and the most members, PROTOCOL.md 10.1), which every pool
 * connection admits; the pause before a map fetch asked for the same
 * epoch again, ms; the most members asked for a map in one refresh. */
#define BRIM_TOPO_FRAME_MAX                                                    \
    (2u * BRIM_PARTITIONS_MAX + (64u << 10) + 200u * BRIM_NODES_MAX)
#define BRIM_REFETCH_MS 100
#define BRIM_REFRESH_MEMBERS_MAX 8

/*
 * A node of the pool and its one connection. The requests of one exchange
 * are queued on LINK and their replies taken from it; nothing is in flight
 * between calls, so any byte the node sends between calls is unsolicited
 * and closes the connection (brim_link_idle_ok()). LINK.addr is the node's
 * "host:port", LINK.limits its limits from HELLO, LINK.conf.frame_min the
 * frame size the coordinator's topology replies need.
 */
struct brim_pool_node {
    struct brim_link       link; /* the connection */
    struct brim_pool_node *next; /* next node of the pool */
};

/* Where a call is in brim_route_run(). */
enum brim_call_state {
    BRIM_CALL_PENDING = 0, /* to be sent (again) */
    BRIM_CALL_DONE         /* STATUS is final */
};

struct brim_call;

/*
 * Called with the OK reply (status 0) of a call, while REP's bytes are
 * borrowed from the connection's buffer: copy what you keep. Returns 0, or
 * a code that becomes the call's status; BRIM_EBADREPLY also closes the
 * connection (the reply did not fit the request).
 */
typedef int (*brim_call_reply_fn)(struct brim_call      *call,
                                  const struct brim_rep *rep);

/* One request, its routing and its outcome. Zero it, then fill REQ. */
struct brim_call {
    struct brim_req          req;           /* op and arguments; the id and
                                            * epoch are set when it is sent */
    const struct brim_bytes *mkeys;         /* MGET: the keys (borrowed) */
    uint32_t                 nmkeys;        /* MGET: their count */
    brim_call_reply_fn       on_reply;      /* NULL: the status is enough */
    void                    *arg;           /* for ON_REPLY */
    struct brim_pool_node   *target;        /* set: send there, not routed */
    int                      state;         /* enum brim_call_state */
    int                      status;        /* reply status, or local error */
    int                      answered;      /* STATUS came from a reply */
    int                      sent;          /* some byte of it was written */
    uint32_t                 tries;         /* exchanges it took part in */
    uint64_t                 start;         /* its frame's stream offset on
                                            * its link (brim_link_queued()) */
    uint64_t                 rep_epoch;     /* MOVED, RETRY: the epoch */
    uint64_t                 moved_epoch;   /* epoch of the last redirect */
    int                      redirected;    /* followed a MOVED already */
    char                    *redirect;      /* MOVED: owner address;
                                            * NOTLEADER: the leader's,
                                            * NULL when none is named;
                                            * owned */
    int64_t                  wait_until_ms; /* its node was unreachable:
                                            * other nodes' calls go first,
                                            * it not before this */
};

/*
 * What route.c asks of the keeper of the routing map: in cluster mode
 * coordlink.c's brim_coordlink_refresh(), which client.c puts here; NULL
 * in standalone mode (the map is the one node). A pointer because
 * coordlink.c sends its own requests through brim_route_run(): route.c
 * is below it and tells it what it needs without calling up.
 */
struct brim_route_map {
    /* Fetch the map by DEADLINE_MS (a reply named a newer epoch, or a node
     * could not be reached) and route by it when it is not older. Returns
     * 0 or an error; route.c keeps its own C->errmsg over the call. */
    int (*refresh)(struct brim_client *c, int64_t deadline_ms);
};

/* The client handle of <brim.h>. */
struct brim_client {
    char                  *server_addr;        /* standalone node, owned */
    uint32_t               connect_timeout_ms; /* per attempt */
    uint32_t               request_timeout_ms; /* per call, retries too */
    uint32_t               role;               /* enum brim_role, HELLO */
    uint64_t               next_id;            /* last request id used */
    uint64_t               epoch;              /* newest learned (cluster
                                                * mode: the map's); 0 none */
    uint64_t               cluster_id;         /* stated in HELLO; 0: none
                                                * (standalone), else the
                                                * first seed's */
    struct brim_pool_node *nodes;              /* the pool */
    struct brim_pool_node *home;               /* the standalone node, or
                                                * the seed that answered */
    /* Cluster mode (brim_opts.coord_addr, a list of seeds): */
    int                      cluster;     /* cluster mode */
    char                    *seeds;       /* the seed list, owned */
    char                    *coords;      /* coordinators' addresses, comma-
                                          * separated, as the nodes report
                                          * them and the seeds said; owned,
                                          * NULL: none known */
    struct brim_pool_node   *coord;       /* the coordinator admin calls
                                          * use, or NULL: none yet */
    struct brim_topo         topo;        /* the newest map fetched */
    struct brim_pool_node  **members;     /* topo.nmembers pool nodes,
                                          * NULL: no address */
    uint64_t                 epoch_seen;  /* newest epoch a data reply
                                          * named (PROTOCOL.md 5) */
    struct brim_pool_node   *epoch_src;   /* the node that named it */
    uint64_t                 epoch_tried; /* EPOCH_SEEN of the last fetch */
    int64_t                  tried_ms;    /* when it was made */
    int                      learn;       /* follow EPOCH_SEEN (1) */
    int                      refreshing;  /* a map fetch is running */
    uint64_t                 nmoved;      /* MOVED answers followed */
    uint64_t                 nretry;      /* RETRY/BUSY answers */
    uint64_t                 nrefresh;    /* map fetches */
    uint64_t                 nlearned;    /* newer maps a data reply's
                                          * epoch led to */
    struct brim_route_map    map;         /* coordlink.c's, for route.c */
    struct brim_auth_secret *secret;      /* brim_opts.secret_file's,
                                                * owned; NULL: no AUTH */
    char                     errmsg[BRIM_ERRBUF_LEN]; /* last failure */
};

/* ---- pool.c ---- */

/*
 * A new node at ADDR (copied) with no connection, outside any pool, whose
 * link says HELLO with C's role and proves C's secret when SECRET is set:
 * free it with brim_pool_node_free() (NULL allowed). NULL when out of
 * memory.
 */
struct brim_pool_node *brim_pool_node_new(struct brim_client *c,
                                          const char *addr, int secret);
void                   brim_pool_node_free(struct brim_pool_node *n);

/*
 * The node of the pool at ADDR (copied), added if new. Returns NULL only
 * when out of memory.
 */
struct brim_pool_node *brim_pool_get(struct brim_client *c, const char *addr);

/* Close every connection and free every node of C's pool. */
void brim_pool_free(struct brim_client *c);

/* Close N's connection (if open) and drop its buffered bytes. */
void brim_pool_close(struct brim_pool_node *n);

/*
 * Make sure N has a live connection that has said HELLO (and proved C's
 * secret, if any): an open one is checked first (a connection the node
 * closed while idle, or one holding unsolicited bytes, is closed and
 * opened again). Connecting and the handshake take at most
 * connect_timeout_ms and end by DEADLINE_MS (INT64_MAX: none). Returns 0,
 * a connect error, the status of a refused HELLO or AUTH, BRIM_ETIMEDOUT
 * or BRIM_EBADREPLY; C->errmsg says why, and on a timeout names the
 * timeout that ran out (connect_timeout_ms, or the call's
 * request_timeout_ms when DEADLINE_MS came first).
 */
int brim_pool_ready(struct brim_client *c, struct brim_pool_node *n,
                    int64_t deadline_ms);

/*
 * Send the NCALLS calls CALLS on N's connection, all written before or
 * while the replies are read (one round trip), and read their replies in
 * order until DEADLINE_MS. Each call gets a new request id; a reply with
 * another id is malformed. For each reply: the call's STATUS and ANSWERED,
 * its ON_REPLY for status 0, REP_EPOCH and REDIRECT for MOVED and RETRY,
 * REDIRECT for NOTLEADER (the leader it names). Returns 0 when every call
 * was answered, else the error that stopped the exchange (BRIM_ETIMEDOUT,
 * BRIM_ECLOSED, BRIM_EBADREPLY, BRIM_ESYS, BRIM_ENOMEM), having closed the
 * connection; unanswered calls then carry it as their STATUS and SENT
 * says whether any byte of theirs left.
 */
int brim_pool_exchange(struct brim_client *c, struct brim_pool_node *n,
                       struct brim_call **calls, size_t ncalls,
                       int64_t deadline_ms);

/* ---- route.c ---- */

/*
 * The node a call for KEY (KEY_LEN bytes) goes to: in standalone mode the
 * one node; in cluster mode owner[partition(brim_hash_key(seed, key))] of
 * the map, or NULL when that partition has no owner (BRIM_ENONODES).
 */
struct brim_pool_node *brim_route_key(struct brim_client *c, const void *key,
                                      size_t key_len);

/*
 * Run the NCALLS calls to completion by DEADLINE_MS: route each (TARGET, or
 * its key, or the home node), pipeline the pending calls of one node in one
 * exchange, follow MOVED (at most once per new epoch), resend after RETRY
 * and BUSY (with backoff), and after a lost connection send again only
 * idempotent calls or calls no byte of which left; a non-idempotent call
 * that was sent gets BRIM_EUNKNOWN. Every call ends in state DONE with its
 * STATUS. Returns 0 when every call was answered by a node, else the first
 * call's error that was not an answer (a transport error, BRIM_ETIMEDOUT,
 * BRIM_EUNKNOWN).
 */
int brim_route_run(struct brim_client *c, struct brim_call *calls,
                   size_t ncalls, int64_t deadline_ms);

/*
 * Run the one call CALL within request_timeout_ms (brim_route_run()) and
 * free what its run left behind. Returns its status; on 0 C->errmsg is
 * cleared.
 */
int brim_route_one(struct brim_client *c, struct brim_call *call);

/* The deadline of a call starting now: now + request_timeout_ms. */
int64_t brim_route_deadline(const struct brim_client *c);

/* Free what the calls' runs left behind (redirect addresses). */
void brim_route_calls_destroy(struct brim_call *calls, size_t ncalls);

/* ---- coordlink.c ---- */

/*
 * Fetch the committed topology (MAP_FETCH) by DEADLINE_MS from the node
 * whose data reply named the newest epoch, then from at most
 * BRIM_REFRESH_MEMBERS_MAX members of the map, then (only when no member
 * answered) from the seeds, until C holds an epoch at least the one
 * wanted, and adopt each strictly newer map of C's cluster with a member
 * UP (nodes answer MAP_FETCH only under a fresh lease). Returns 0 or the
 * error (C->errmsg says why); the old map stays on error.
 */
int brim_coordlink_refresh(struct brim_client *c, int64_t deadline_ms);

/* Free the topology and the member table. */
void brim_coordlink_free(struct brim_client *c);

/*
 * Cluster mode's start: HELLO at each seed of C->seeds in turn (a node or
 * a coordinator) until one answers MAP_FETCH with a map C adopts (of the
 * cluster the first seed named, epoch above 0, a member UP), by
 * DEADLINE_MS. Returns 0 or the last seed's error (C->errmsg says why).
 */
int brim_coordlink_bootstrap(struct brim_client *c, int64_t deadline_ms);

/*
 * Called with the OK reply's object (MEMBERS, PLAN, CLUSTER_STATS: the
 * array or map; LEAVE: NULL, and EPOCH the epoch of the change). OBJ is
 * borrowed for the call only. Returns 0 or an error that becomes the
 * call's status.
 */
typedef int (*brim_coordlink_cb)(const msgpack_object *obj, uint64_t epoch,
                                 void *arg);

/*
 * Send OP (BRIM_OP_MEMBERS, PLAN, CLUSTER_STATS, LEAVE, MAP_FETCH...) to
 * a coordinator of C with NAME (NULL for none), ARG_U32 (LEAVE's force,
 * PLAN's kind) and WEIGHT_PPM, and call CB with the reply (admin.c
 * decodes it). Asked first: C->coord (the last one that answered), then
 * C->coords in turn (seeds that said role coord, and those the nodes
 * report) until one answers; one that cannot be reached within the
 * connect timeout is passed over. A NOTLEADER answer (PROTOCOL.md 10.5)
 * naming a leader sends the call there (at most 3 such hops a call, no
 * coordinator asked twice); one naming none (an election) passes to the
 * next. The coordinator that answered becomes C->coord. Returns 0, the
 * coordinator's error status (brim_errmsg() holds its message), a
 * transport error, or BRIM_ENOTLEADER when no coordinator asked leads
 * (brim_errmsg(): "no coordinator leads (an election is in progress?):
 * tried A, B"). BRIM_EINVAL when C is not in cluster mode or knows no
 * coordinator.
 */
int brim_coordlink_call(struct brim_client *c, uint32_t op, const char *name,
                        uint32_t arg_u32, uint32_t weight_ppm,
                        brim_coordlink_cb cb, void *arg);

/*
 * Ask the leading coordinator, as brim_coordlink_call() finds it, to
 * record the cluster's flush mark FLUSH_MS (Unix ms, the delay included;
 * not 0): it keeps the latest mark, persisted before it answers, and gives
 * it to nodes that join later and to members that missed it (JOIN and
 * HEARTBEAT replies). Returns as brim_coordlink_call(); *NONE_KNOWN is 1
 * when C knew no coordinator to ask (a client seeded with nodes only,
 * whose map names none), else 0.
 */
int brim_coordlink_flush(struct brim_client *c, uint64_t flush_ms,
                         int *none_known);

/* ---- errmsg.c ---- */

/*
 * Write C->errmsg (the message brim_errmsg() returns) with printf FMT:
 * one line, truncated to BRIM_ERRBUF_LEN - 1 bytes. C must not be NULL.
 * Nothing to free; never fails.
 */
void brim_lib_errmsg(struct brim_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- client.c ---- */

/* 0 when KEY/KEY_LEN is a key the node accepts; else BRIM_EINVAL + errmsg. */
int brim_lib_check_key(struct brim_client *c, const void *key, size_t key_len);

#endif /* BRIM_CLIENT_LIB_CLIENT_INT_H */
