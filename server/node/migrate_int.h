/*
 * server/node/migrate_int.h - what migrate.c (streams, commits) and
 * migrate_read.c (tombstones, forwarded reads and pulls) share: the
 * migration state of one node and the helpers each file lends the other.
 * Internal to server/node; loop thread only.
 */
#ifndef BRIM_SERVER_NODE_MIGRATE_INT_H
#define BRIM_SERVER_NODE_MIGRATE_INT_H

#include <stdint.h>

#include "proto/buf.h"
#include "proto/wire.h"
#include "server/conn.h"
#include "server/node/migrate.h"
#include "server/node/node.h"
#include "server/peer.h"

/*
 * Sender bounds. A batch holds at most MIG_BATCH_ENTRIES entries and
 * MIG_BATCH_BYTES of them, and never more than the receiver's frame limit
 * (its HELLO) less MIG_FRAME_SLACK; one entry larger than a batch goes in
 * a frame of its own. MIG_ACTIVE partitions stream at once; one slice
 * scans at most MIG_SCAN_BUCKETS buckets.
 */
#define MIG_BATCH_ENTRIES 512
#define MIG_BATCH_BYTES   (256u << 10)
#define MIG_FRAME_SLACK   256u      /* request header bytes, with room */
#define MIG_ENTRY_SLACK   32u       /* an entry's msgpack bytes beyond its
                                       key and value, at most */
#define MIG_ACTIVE        4
#define MIG_SCAN_BUCKETS  4096
#define MIG_RETRY_MS      100       /* BEGIN answered RETRY: ask again */
#define MIG_ERROR_MIN_MS  500       /* an error reply: restart after this, */
#define MIG_ERROR_MAX_MS  10000     /* doubling up to this */
#define MIG_LINK_MIN_MS   100       /* a lost link: reconnect after this, */
#define MIG_LINK_MAX_MS   2000      /* doubling up to this */
#define MIG_COMPLETE_WAIT_MS 10000
/* Receiver: an in-flight partition with no batch for MIG_PROBE_IDLE_MS
 * is asked about (STREAM_QUERY); the probe timer looks every
 * MIG_PROBE_TICK_MS at most MIG_PROBE_SLICE partitions, with at most
 * MIG_PROBE_OUT queries unanswered. */
#define MIG_PROBE_IDLE_MS 5000
#define MIG_PROBE_TICK_MS 500
#define MIG_PROBE_SLICE   65536
#define MIG_PROBE_OUT     64

enum mig_in_state { IN_NONE = 0, IN_FLIGHT, IN_DONE };
enum mig_out_state {
    OUT_QUEUED = 0, OUT_BEGIN, OUT_READY, OUT_WAIT, OUT_END,
    OUT_COMPLETE_WAIT,              /* END acknowledged; awaiting COMPLETE */
    OUT_DONE
};

/*
 * One node-to-node connection of this node, by address: streams out,
 * COMPLETEs, forwarded reads and pulls, stream queries and lease
 * confirmations travel on it. A lost connection is made again after a
 * backoff; it is never given up, since whether its node is still a
 * member is the committed topology's to say (DESIGN.md 7 step 6).
 */
struct mig_dest {
    struct brim_peer   peer;
    char               addr[128];
    uint64_t           next_id;     /* request ids on it */
    uint64_t           retry_at_ms; /* loop ms: no connect before this */
    uint32_t           backoff_ms;  /* next reconnect delay */
    uint32_t           failures;    /* connects failed in a row */
    uint64_t           links;       /* connections made, ever */
    uint64_t           heard_ms;    /* loop ms it last connected or
                                       answered a stream query */
    struct brim_migrate *m;
    struct mig_dest    *next;
};

struct mig_job {
    uint64_t         epoch;
    uint32_t         p;
    enum mig_out_state state;
    struct mig_dest *dest;
    struct brim_store_cursor cursor; /* where the scan stands */
    int              scan_done;
    int              cancelled;     /* a later commit superseded it */
    int              completed;     /* COMPLETE came before END's reply */
    int              end_sent;      /* STREAM_END was sent at least once */
    int              busy;          /* a request is in flight */
    uint32_t         retries;       /* BEGIN answered RETRY, in a row */
    uint32_t         errors;        /* error replies in a row */
    uint32_t         restarts;      /* times the stream began again */
    uint64_t         count;         /* entries sent since BEGIN */
    uint64_t         not_before;    /* loop ms */
};

#define MIG_NO_SRC UINT16_MAX

/* A COMPLETE to send to the old owner (its forwarding connection). */
struct mig_cpend {
    uint64_t         epoch;
    uint32_t         p;
    struct mig_dest *d;
};

struct mig_tomb {
    struct mig_tomb *hnext;         /* bucket chain */
    struct mig_tomb *pnext;         /* same partition */
    uint64_t         hash;
    uint32_t         p;
    uint8_t          key_len;
    char             key[];
};

struct brim_migrate {
    struct brim_node  *node;
    uv_timer_t         pump;
    int                pump_armed;
    struct mig_dest   *dests;
    struct mig_job   **jobs;
    uint32_t           njobs, cap_jobs;
    uint64_t          *in_epoch;    /* per partition */
    uint8_t           *in_state;    /* enum mig_in_state per partition */
    uint8_t           *in_reason;   /* enum brim_move_reason per partition
                                       coming in; NULL until a commit */
    uint16_t          *in_src;      /* source's index in the committed
                                       topology, or MIG_NO_SRC */
    struct mig_cpend  *cpend;       /* COMPLETEs waiting to be sent */
    uint32_t           ncpend, cap_cpend;
    struct mig_tomb  **tomb_head;   /* per partition */
    struct mig_tomb  **tbuckets;
    uint32_t           ntbuckets;
    struct brim_buf    scratch;     /* entries of the batch being built */
    uint32_t           scratch_n;
    uint32_t           now;         /* Unix seconds while scanning */
    size_t             frame_room;  /* while scanning: most entry bytes
                                       one frame to the receiver holds */
    size_t             batch_bytes; /* while scanning: the batch bound */
    int                scan_nomem;  /* while scanning: packing failed */
    int                redispatch;  /* serving a fetched op: no fetch */
    double             pace_next_ms; /* loop ms before which no batch
                                        goes (--migrate-mb-per-s) */
    uint64_t           in_since_ms; /* loop ms when partitions_in_flight
                                       last left 0 */
    uint64_t           in_since_bytes, in_since_keys; /* bytes_in, keys_in
                                                         then */
    uint64_t           pump_due_ms; /* loop ms the armed pump fires */
    uint32_t          *in_touch;    /* per partition: loop time / 100 ms
                                       of its last batch or answer */
    uint8_t           *in_probing;  /* per partition: a query is out */
    uint32_t           probes_out;  /* queries unanswered */
    uint32_t           probe_next;  /* next partition the probe looks at */
    uv_timer_t         probe;       /* MIG_PROBE_TICK_MS */
    int                probe_armed;
    struct mig_tomb   *spare_tomb;  /* a tombstone of the longest key,
                                       kept so a write's is never lost to
                                       an allocation failure */
    struct brim_migrate_stats st;
};


/* ---- migrate_send.c: connections, jobs, the pump ---- */

/* Queue job (EPOCH, P) to DEST. Returns 0 or BRIM_ENOMEM. */
int mig_job_queue(struct brim_migrate *m, uint64_t epoch, uint32_t p,
                  struct mig_dest *dest);

/* After a commit: jobs whose destination no longer owns their partition
 * are cancelled; the partitions of the others are marked in KEEP. */
void mig_jobs_recheck(struct brim_migrate *m, uint8_t *keep);

/* COMPLETE of (E, P) from the new owner: our copy may go. */
void mig_complete(struct brim_migrate *m, uint64_t e, uint32_t p);

/* Run the pump (jobs, COMPLETEs) after DELAY_MS, or sooner if due. */
void mig_pump_soon(struct brim_migrate *m, uint64_t delay_ms);

/* The pump's timer callback (migrate.c sets it up). */
void mig_pump_cb(uv_timer_t *t);

/* Queue COMPLETE of (EPOCH, P) for the old owner on D. */
void mig_complete_queue(struct brim_migrate *m, uint64_t epoch, uint32_t p,
                        struct mig_dest *d);

/* ---- migrate.c ---- */

/* The node's migration state, made on first use; NULL when out of
 * memory. */
struct brim_migrate *mig_get(struct brim_node *node);

/* Loop time in the 100 ms units of in_touch. */
uint32_t mig_touch_now(const struct brim_migrate *m);

/* True when the committed map gives PARTITION to this node. */
int mig_owns(const struct brim_node *node, uint32_t partition);

/* True when this node holds partition P: owns it, or streams it out. */
int mig_holds(struct brim_migrate *m, uint32_t p);

/* Partition P completes here: its tombstones go, it counts as done when
 * it was in flight (logs the migration's rate when it was the last). */
void mig_in_finish(struct brim_migrate *m, uint32_t p);

/* Insert entry E of partition P (hash H) unless the key is here or
 * tombstoned, at the cold end, as a batch does; NOW in Unix seconds.
 * Returns 0 (stored), 1 (skipped: here, tombstoned, or beyond this node's
 * limits, counted) or BRIM_ENOMEM (try again later). */
int mig_insert(struct brim_migrate *m, uint32_t p, uint64_t h,
                const struct brim_wire_entry *e, uint32_t now);

/* The connection to the node at ADDR (one per address, made on first
 * use, never given up); NULL when out of memory. */
struct mig_dest *mig_dest_get(struct brim_migrate *m, const char *addr);

/* 1 when D is open for requests; else starts connecting (when idle and
 * its backoff is over) and returns 0: the pump runs once it is open. */
int mig_dest_ensure(struct mig_dest *d);

/* Append a status reply [STATUS, ID, MSG] to C's output; 0 or
 * BRIM_ENOMEM. */
int mig_reply(struct brim_conn *c, uint64_t id, int status, const char *msg);

/* The stream entry of item IT with TTL seconds left (borrows IT). */
void mig_item_entry(const struct brim_item *it, uint32_t ttl,
                    struct brim_wire_entry *e);

/* ---- migrate_read.c ---- */

/* The tombstone slot of KEY (hash HASH), or NULL when it has none. */
struct mig_tomb **mig_tomb_slot(struct brim_migrate *m, uint64_t hash,
                                const char *key, size_t key_len);

/* Tombstone KEY of partition P (no-op when it has one). Uses the spare
 * tombstone when out of memory; returns 0, or BRIM_ENOMEM when even that
 * is gone (brim_migrate_before_write() refills it). */
int mig_tomb_add(struct brim_migrate *m, uint32_t p, uint64_t hash,
                 const char *key, size_t key_len);

/* Start the receiver's probe of idle in-flight partitions. */
void mig_probe_start(struct brim_migrate *m);

/* Make sure the next mig_tomb_add() cannot fail: a table and a spare
 * tombstone exist. Returns 0 or BRIM_ENOMEM. */
int mig_tomb_reserve(struct brim_migrate *m);

/* Drop every tombstone of partition P. */
void mig_tomb_clear(struct brim_migrate *m, uint32_t p);

/* FORWARD_GET or PULL REQ of a key of a partition this node handed over,
 * answered on C from the copy it still holds. Returns 0 or BRIM_ENOMEM. */
int mig_serve_copy(struct brim_migrate *m, struct brim_conn *c,
                   const struct brim_req *req);

#endif /* BRIM_SERVER_NODE_MIGRATE_INT_H */
