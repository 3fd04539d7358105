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

#define MIG_BATCH_ENTRIES 512
#define MIG_BATCH_BYTES   (64u << 10)
#define MIG_ACTIVE        4
#define MIG_SCAN_BUCKETS  4096
#define MIG_BEGIN_RETRIES 50
#define MIG_RETRY_MS      100
#define MIG_COMPLETE_WAIT_MS 10000

enum mig_in_state { IN_NONE = 0, IN_FLIGHT, IN_DONE };
enum mig_out_state {
    OUT_QUEUED = 0, OUT_BEGIN, OUT_READY, OUT_WAIT, OUT_END,
    OUT_COMPLETE_WAIT,              /* END acknowledged; awaiting COMPLETE */
    OUT_DONE
};

struct mig_dest {
    struct brim_peer   peer;
    char               addr[128];
    int                dead;        /* connection failed or closed */
    uint64_t           next_id;
    struct brim_migrate *m;
    struct mig_dest    *next;
};

struct mig_job {
    uint64_t         epoch;
    uint32_t         p;
    enum mig_out_state state;
    struct mig_dest *dest;
    uint32_t         cursor;        /* next bucket */
    int              scan_done;
    int              cancelled;     /* a later commit superseded it */
    int              completed;     /* COMPLETE came before END's reply */
    int              busy;          /* a request is in flight */
    uint32_t         retries;
    uint64_t         count;         /* entries sent */
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
    int                redispatch;  /* serving a fetched op: no fetch */
    double             pace_next_ms; /* loop ms before which no batch
                                        goes (--migrate-mb-per-s) */
    uint64_t           in_since_ms; /* loop ms when partitions_in_flight
                                       last left 0 */
    uint64_t           in_since_bytes, in_since_keys; /* bytes_in, keys_in
                                                         then */
    struct brim_migrate_stats st;
};


/* ---- migrate.c ---- */

/* True when the committed map gives PARTITION to this node. */
int mig_owns(const struct brim_node *node, uint32_t partition);

/* True when this node holds partition P: owns it, or streams it out. */
int mig_holds(struct brim_migrate *m, uint32_t p);

/* Partition P completes here: its tombstones go, it counts as done when
 * it was in flight (logs the migration's rate when it was the last). */
void mig_in_finish(struct brim_migrate *m, uint32_t p);

/* Insert entry E of partition P (hash H) unless the key is here or
 * tombstoned, at the cold end, as a batch does; NOW in Unix seconds. */
void mig_insert(struct brim_migrate *m, uint32_t p, uint64_t h,
                const struct brim_wire_entry *e, uint32_t now);

/* The open (or opening) connection to the node at ADDR, made on first
 * use; NULL when out of memory. */
struct mig_dest *mig_dest_get(struct brim_migrate *m, const char *addr);

/* 1 when D is open for requests; else starts connecting (when idle) and
 * returns 0 (D->dead set when that cannot start). */
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

/* Tombstone KEY of partition P (no-op when it has one; best effort when
 * out of memory). */
void mig_tomb_add(struct brim_migrate *m, uint32_t p, uint64_t hash,
                  const char *key, size_t key_len);

/* Drop every tombstone of partition P. */
void mig_tomb_clear(struct brim_migrate *m, uint32_t p);

/* FORWARD_GET or PULL REQ of a key of a partition this node handed over,
 * answered on C from the copy it still holds. Returns 0 or BRIM_ENOMEM. */
int mig_serve_copy(struct brim_migrate *m, struct brim_conn *c,
                   const struct brim_req *req);

#endif /* BRIM_SERVER_NODE_MIGRATE_INT_H */
