/*
 * server/node/mcport_int.h - what the memcached port's files share
 * (mcport.c: the listener, the connections and the text commands;
 * mcmeta.c: the meta commands; mcop.c: running one brim op for a command,
 * here or at its owner). Not for other modules: they use mcport.h.
 */
#ifndef BRIM_SERVER_NODE_MCPORT_INT_H
#define BRIM_SERVER_NODE_MCPORT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/mctext.h"
#include "proto/wire.h"
#include "server/conn.h"
#include "server/node/mcport.h"
#include "server/node/node.h"

#define MC_VERSION "1.6.18-brim-0.1.0"

struct mc_cmd;
struct mc_client;

/* Commands a connection may have in flight (running or with their replies
 * waiting for an earlier one's) before it stops reading. */
#define MC_PIPELINE_MAX 32

/*
 * The answer to op SLOT of MC's command: REP (borrowed for the call) as
 * brim_node_serve_here() or a forward (mcfwd.h) gives it. Writes the
 * reply, keeps it for later (a multi-key get), or runs the command's next
 * op (mc_run()).
 */
typedef void (*mc_done_fn)(struct mc_cmd *mc, uint32_t slot,
                           const struct brim_rep *rep);

/* Called once every op of MC's command is answered (a get's END). */
typedef void (*mc_finish_fn)(struct mc_cmd *mc);

/* One key of a multi-key get answered out of order: kept until its turn. */
struct mc_slot {
    struct mc_cmd *mc;        /* its command's connection */
    uint32_t       i;         /* its key's index */
    int            status;    /* 0 hit, else a miss or an error */
    uint32_t       flags;     /* client flags */
    uint64_t       cas;       /* the item's CAS */
    char          *value;     /* brim_malloc'd copy, or NULL */
    size_t         value_len; /* bytes */
};

/*
 * One command of a connection, from its parse to its reply's turn. The
 * commands of a connection form a FIFO (struct mc_client): the head writes
 * its reply straight to the connection; a later one writes into OUT,
 * moved to the connection when every command before it has answered.
 */
struct mc_cmd {
    struct brim_mcport    *port;       /* the listener's */
    struct brim_conn      *c;          /* the connection */
    struct mc_client      *cl;         /* the connection's commands */
    struct mc_cmd         *next;       /* the FIFO, towards the tail */
    struct brim_buf        out;        /* the reply, until its turn */
    int                    direct;     /* the head: replies go straight to
                                         the connection */
    int                    complete;   /* every op answered, reply whole */
    int                    async;      /* an op went to another node: the
                                         connection is referenced */
    struct brim_mctext_cmd cmd;        /* the command running; its
                                         pointers into the read buffer, or
                                         into COPY once it waits */
    const char            *raw;        /* the command's bytes as read
                                         (borrowed from the read buffer
                                         while the command is parsed) */
    size_t                 raw_len;    /* bytes of RAW */
    struct brim_buf        copy;       /* RAW copied when the command waits
                                         for another node */
    int                    copied;     /* CMD points into COPY */
    uint32_t               pending;    /* ops not answered yet */
    mc_done_fn             done;       /* the command's answers */
    mc_finish_fn           finish;     /* its end, or NULL */
    uint32_t               stage;      /* a meta command's step */
    struct mc_slot        *slots;      /* a multi-key get's, or NULL */
    uint32_t               nslots;     /* entries of SLOTS */
    uint32_t               first_slot; /* keys before it were written */
    struct brim_req        req;        /* the op of a one-key command */
    uint64_t               h;          /* its key's hash */
    uint64_t               number;     /* a meta command's counter */
    uint64_t               cas;        /* ma T: the counter's CAS value */
    uint32_t               failed;     /* a get's keys that failed */
    uint64_t               start_ns;   /* uv_hrtime() when parsed */
    size_t                 held;       /* its bytes in port->get_held */
    int                    oom;        /* a get refused for the pool */
    char                   why[160];   /* the first one's reason */
};

/*
 * A memcached connection (conn->data): its commands in request order. A
 * command runs as soon as it is read unless it must wait (MC_PIPELINE_MAX
 * in flight, replies held above the output high water, an earlier command
 * still running on the same key, or a command that runs alone: quit,
 * flush_all, a multi-key get); then the connection stops reading until an
 * earlier command ends. So replies keep request order, and no command
 * overtakes an earlier one on its key (DESIGN.md 10).
 */
struct mc_client {
    struct brim_mcport *port;      /* the listener's */
    struct brim_conn   *c;         /* the connection */
    size_t              swallow;   /* bytes still to discard */
    struct mc_cmd      *head;      /* the oldest command not written */
    struct mc_cmd      *tail;      /* the newest */
    uint32_t            n;         /* commands in the FIFO */
    int                 held;      /* brim_conn_defer(): waiting for an
                                      earlier command to end */
    int                 in_stream; /* inside the stream callback: the
                                      connection layer sends the replies */
    struct mc_cmd       first;     /* the command of an idle connection,
                                      without an allocation */
};

/* Where MC's reply goes: the connection's output when MC is the head. */
struct brim_buf *mc_out(struct mc_cmd *mc);

/* Counters under memcached's names (stats). */
struct mc_counters {
    uint64_t cmd_get, cmd_set, cmd_touch, cmd_flush;
    uint64_t get_hits, get_misses;
    uint64_t delete_hits, delete_misses;
    uint64_t incr_hits, incr_misses, decr_hits, decr_misses;
    uint64_t cas_hits, cas_misses, cas_badval;
    uint64_t touch_hits, touch_misses;
    uint64_t noreply_failed; /* noreply ops that failed */
    uint64_t server_errors;  /* SERVER_ERROR answers */
    uint64_t forwarded;      /* ops sent to another node */
    uint64_t conns_refused;  /* refused while leaving */
};

/* The port: its listener and counters (node->mc). */
struct brim_mcport {
    struct brim_node         *node; /* borrowed */
    struct brim_server        srv;  /* the memcached listener */
    struct brim_mctext_limits lim;  /* the parser's */
    struct mc_counters        st;   /* counters */
    struct brim_node_lat      lat[BRIM_MCTEXT_KIND_COUNT]; /* server-side
                                          latency by command: parsed to
                                          answered (mc_end()) */
    size_t                    get_held;         /* bytes of get replies built
                                          and not yet on a connection
                                          (mc_hold()) */
    int                       leaving;          /* no longer accepting */
    uv_timer_t                drain_timer;      /* brim_mcport_drain()'s */
    uint64_t                  drain_until;      /* loop ms it gives up */
    void (*drain_done)(struct brim_node *node); /* its DONE, or NULL */
};

/*
 * Run the keyed op REQ (borrowed) of MC's command as op SLOT: served here
 * when this node owns the key (MC->done is called before this returns),
 * else forwarded (MC->pending counts it, the command's bytes are copied
 * and the connection referenced; MC->done follows). Loop thread only.
 */
void mc_run(struct mc_cmd *mc, const struct brim_req *req, uint32_t slot);

/*
 * As mc_run() for a GET REQ of a multi-key get's key SLOT, except that a
 * key another node owns is not sent: returns 0 with *OWNER its owner's
 * address (borrowed from the map: valid until the loop runs again), for
 * the caller to ask with the other keys of that owner (mc_mget_at()).
 * Returns 1 when the key was answered or sent on its own.
 */
int mc_get_here(struct mc_cmd *mc, const struct brim_req *req, uint32_t slot,
                const char **owner);

/*
 * MGET (MGAT for a gat or gats, with its TTL) the N keys KEYS (borrowed; copied), keys IDX[0 .. N) of MC's get,
 * at the node at OWNER, as mc_run() forwards: MC->done hears each key; an
 * entry that is not an answer (MOVED, RETRY, TOOBIG) is asked again on its
 * own (routed afresh), before the get's END.
 */
void mc_mget_at(struct mc_cmd *mc, const char *owner, const uint32_t *idx,
                const struct brim_bytes *keys, uint32_t n);

/* Send the op REQ without a key (FLUSH) to the node at ADDR (borrowed) as
 * op SLOT of MC's command, as mc_run() forwards. */
void mc_run_at(struct mc_cmd *mc, const struct brim_req *req, const char *addr,
               uint32_t slot);

/*
 * MC's command is answered (MC->pending is 0): its finish, then the
 * replies whose turn came are moved to the connection, the commands
 * released (MC among them: do not touch it after), and a connection that
 * waited reads again. Loop thread only.
 */
void mc_end(struct mc_cmd *mc);

/*
 * The command at the FIFO's tail for the command just parsed: CL->first
 * when the FIFO is empty, else a new one. Returns NULL when out of memory.
 */
struct mc_cmd *mc_cmd_new(struct mc_client *cl);

/*
 * Count LEN more bytes of MC's get reply (a hit's line and value, or a
 * value kept for its turn) against the port's reply pool (--buffer-mb:
 * the unsent replies of every connection plus the get replies being
 * built), so that one get of many big values cannot hold more memory
 * than the pool: up to --output-limit-kb a get is always held, beyond it
 * only while the pool has room. Returns 0 (counted until MC is freed) or
 * -1 (nothing counted; the get fails with memcached's "SERVER_ERROR out
 * of memory writing get response").
 */
int mc_hold(struct mc_cmd *mc, size_t len);

/* Free MC (it left the FIFO, or its connection closed): its reply, its
 * copy, its kept values, and its bytes in the pool. */
void mc_cmd_free(struct mc_cmd *mc);

/* The brim op of a storage command KIND (set add replace append prepend
 * cas, or an ms's store kind). */
uint32_t mc_store_op(enum brim_mctext_kind kind);

/* memcached's exptime (brim_mctext_expiry()) as a brim ttl_s: a negative
 * one is a time long past, so the item is stored expired. */
uint32_t mc_ttl(int32_t exptime);

/* Append memcached's reply to REP, a failed op, to MC's output: the
 * non-numeric CLIENT_ERROR, "SERVER_ERROR object too large for cache", or
 * "SERVER_ERROR <why>". */
void mc_put_error(struct mc_cmd *mc, const struct brim_rep *rep);

/* Serve the meta command in MC->cmd (mg ms md ma me; mcmeta.c). */
void mc_meta(struct mc_cmd *mc);

#endif /* BRIM_SERVER_NODE_MCPORT_INT_H */
