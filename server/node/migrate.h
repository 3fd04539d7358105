/*
 * server/node/migrate.h - partition migration between nodes (DESIGN.md 7,
 * steps 3 and 4; PROTOCOL.md section 11): the old owner streams each
 * partition it lost to its new owner in bounded batches, one batch in
 * flight per partition, a few partitions at a time; the new owner inserts
 * streamed entries only where it has no key and no tombstone, at the cold
 * end of the eviction order. Loop thread only.
 */
#ifndef BRIM_SERVER_NODE_MIGRATE_H
#define BRIM_SERVER_NODE_MIGRATE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"
#include "proto/topo.h"
#include "proto/wire.h"
#include "server/peer.h"

struct brim_node;
struct brim_conn;

/* Kinds of data ops that hit a partition in flight (brim_migrate_hit). */
enum brim_mig_hit {
    BRIM_MIG_READ = 0,
    BRIM_MIG_WRITE,
    BRIM_MIG_DELETE
};

/* Migration counters, for STATS "migration". */
struct brim_migrate_stats {
    uint64_t keys_in, bytes_in, keys_out, bytes_out;
    uint64_t batches_in, batches_out;
    uint64_t partitions_in_done, partitions_out_done;
    uint64_t partitions_out_dropped; /* could not be sent: dropped */
    uint64_t entries_skipped;        /* present here or tombstoned */
    uint64_t reads_in_flight, writes_in_flight, deletes_in_flight;
    uint64_t tombstones;              /* live tombstones now */
    uint64_t forwards, forward_fails; /* reads forwarded to the old owner */
    uint64_t pulls, pull_fails;       /* keys pulled from the old owner */
    uint64_t forwards_served, pulls_served; /* as the old owner */
    uint64_t keys_in_arc, keys_in_cap;      /* keys_in, by why their
                                          partition moved: they sum to it */
    uint64_t keys_out_arc, keys_out_cap;    /* keys_out, the same */
    uint64_t bytes_in_arc, bytes_in_cap;    /* bytes_in, the same */
    uint64_t bytes_out_arc, bytes_out_cap;  /* bytes_out, the same */
    uint64_t streams_restarted;             /* streams begun again (lost link,
                                         error reply) */
    uint64_t stream_errors;                 /* error replies to stream ops */
    uint64_t links_lost;                    /* node-to-node links closed */
    uint64_t entries_refused;               /* beyond the receiver's limits */
    uint64_t insert_failures;               /* batches refused NOMEM here */
    uint64_t tomb_refusals;                 /* writes refused RETRY: no memory
                                         for their tombstone */
    uint64_t probes;                        /* STREAM_QUERYs sent */
    uint64_t send_yields;        /* pump turns that found the loop behind
                               (DESIGN.md 13): one batch, then a wait */
    uint64_t send_slices;        /* pump turns cut short by their slice */
    uint64_t link_waits;         /* batches held: the link had unsent bytes */
    uint64_t insert_pauses;      /* links paused: the inserts' slice spent */
    uint64_t turns_deferred;     /* work left to the next turn of the loop:
                                    the turn's MIG_TURN_NS spent */
    uint64_t pace_backoffs;      /* slice halvings: the loop waited for a CPU */
    uint64_t pace_slice_us;      /* the slice now, us per 2 ms window */
    uint64_t probes_source_gone; /* partitions completed because
                                         their source held no copy */
    uint64_t partitions_in_unfinished; /* completed before their stream
                                         ended: the source died, left or
                                         held no copy (keys it had not
                                         sent are not here) */
    uint32_t partitions_in_flight;     /* incoming, BEGIN .. END */
    uint32_t partitions_out_pending;   /* outgoing, queued or streaming */
    uint32_t delay_ms;                 /* BRIM_TEST_STREAM_DELAY_MS */
};

/*
 * The committed topology changed from OLD (our index OLD_SELF, -1 when
 * not a member) to the node's new committed one. Queues a stream for each
 * partition we owned in OLD and lost to a live member, and marks the ones
 * we gained from a live member as in flight. Sets KEEP[p] to 1 for each
 * partition that must not be dropped now (it is queued for streaming).
 */
void brim_migrate_commit(struct brim_node *node, const struct brim_topo *old,
                         int32_t old_self, uint8_t *keep);

/*
 * An epoch was proposed (node->topo.pending). Opens, now, this node's links
 * to the members the pending map takes partitions from for it: at the
 * commit, reads of keys not streamed yet are forwarded to them
 * (brim_migrate_fetch), and one that finds its link still connecting is
 * answered RETRY. A no-op when this node gains nothing or has no committed
 * map. Out of memory for a link: that link is left to the commit.
 */
void brim_migrate_prepare(struct brim_node *node);

/* True when a partition of ours is queued or streaming out. */
int brim_migrate_out_busy(struct brim_node *node, uint32_t partition);

/*
 * A data op of KIND on KEY (hash HASH) in PARTITION, served here. Counts it
 * when the partition is in flight; a write or delete (RC 0, or any DEL)
 * then leaves a tombstone so a later batch cannot bring an older value.
 */
void brim_migrate_hit(struct brim_node *node, uint32_t partition, uint64_t hash,
                      const char *key, size_t key_len, enum brim_mig_hit kind,
                      int rc);

/*
 * Before a write or delete of KEY (hash HASH) in PARTITION is served here:
 * when the partition is in flight, make sure the tombstone the write
 * leaves (brim_migrate_hit()) can be allocated. Returns 0, or BRIM_ERETRY
 * (answer RETRY: without its tombstone a later batch could undo it).
 */
int brim_migrate_before_write(struct brim_node *node, uint32_t partition,
                              uint64_t hash, const char *key, size_t key_len);

/*
 * Continue the keyed data op REQ from C on the key hashed to H once its
 * key is settled here (brim_migrate_fetch() calls it from the old owner's
 * answer, with its own copy of the request): route it, run it, append its
 * reply. REQ is borrowed for the call.
 */
typedef void (*brim_mig_continue_fn)(struct brim_node      *node,
                                     struct brim_conn      *c,
                                     const struct brim_req *req, uint64_t h);

/*
 * Before serving the keyed data op REQ (decoded, borrowed) from C on the
 * key hashed to H, routed to this node: when the key's partition is in
 * flight, the key is neither here nor tombstoned, and the op is not a
 * SET, the old owner is asked (DESIGN.md 7 step 4). A GET is forwarded
 * (FORWARD_GET) and the old owner's answer becomes the reply, never
 * stored; any other op first pulls the key (PULL), stores it as a stream
 * batch would, then CONT runs it here from a copy of REQ. Returns 0
 * (serve it here now), 1 (C's reply is deferred: brim_conn_defer() was
 * called, the reply comes with the old owner's answer) or BRIM_ERETRY
 * (answer RETRY now: the old owner cannot be asked yet; its link is being
 * made).
 */
int brim_migrate_fetch(struct brim_node *node, struct brim_conn *c,
                       const struct brim_req *req, uint64_t h,
                       brim_mig_continue_fn cont);

/*
 * True when a miss of KEY (KEY_LEN bytes, hash H) here is not an answer
 * yet: its partition is in flight and the key is not tombstoned, so the
 * old owner may hold it. An MGET answers such a key RETRY (the client
 * then GETs it alone, and that GET is forwarded).
 */
int brim_migrate_unsettled(struct brim_node *node, uint64_t h, const char *key,
                           size_t key_len);

/* Serve the decoded migration op REQ (STREAM_*, COMPLETE, FORWARD_GET,
 * PULL) on C; only a node connection may send them (checked here).
 * Returns 0 or an encoding error (BRIM_ENOMEM: the connection closes). */
int brim_migrate_serve(struct brim_node *node, struct brim_conn *c,
                       const struct brim_req *req);

struct brim_node_link;

/* A node-to-node link opened (links.h listener, registered by main.c):
 * the streams and COMPLETEs that waited for it go on. */
void brim_migrate_link_open(struct brim_node      *node,
                            struct brim_node_link *link);

/* Close migration's timers (the node is stopping). */
void brim_migrate_stop(struct brim_node *node);

/*
 * After the node's listener closed its connections (node stop): let go of
 * the senders' links the pace paused (DESIGN.md 13), so they are freed.
 */
void brim_migrate_release_links(struct brim_node *node);

/* Free the migration state (after the loop has stopped). */
void brim_migrate_free(struct brim_node *node);

/* 1 while a partition streams into this node (BEGIN .. END) or one out of
 * it is queued or streaming, else 0. */
int brim_migrate_streaming(const struct brim_node *node);

/* Copy the counters. */
void brim_migrate_get_stats(struct brim_node          *node,
                            struct brim_migrate_stats *out);

/* Most destinations brim_migrate_streams_out() reports. */
#define BRIM_MIGRATE_DESTS_MAX 64

/*
 * This node's migration out to one receiver: the last migration out, which
 * began when a partition was queued while none was pending, and is kept
 * after its end until the next one begins. For STATS ("stream_to:ADDR") and
 * `brimctl migrations`.
 */
struct brim_migrate_stream_out {
    char     dest[128];  /* "host:port" of the receiver */
    uint32_t partitions; /* partitions queued to it */
    uint32_t done;       /* handed over */
    uint32_t dropped;    /* ended without being handed over */
    uint64_t keys_sent;  /* entries batched to it (again after a restart) */
    uint64_t bytes_sent; /* their encoded bytes, batch frames' payload */
    uint64_t keys_left;  /* estimate: keys of its unfinished partitions not
                             sent yet (the partitions' sizes at queue time
                             less what each stream has sent) */
    uint64_t elapsed_ms; /* ms from its first partition queued to now, or
                             to its last one's end once all have ended */
    uint64_t epoch;      /* the epoch of the latest change whose partitions
                             were queued to it */
};

/*
 * Fill OUT (room for MAX entries, caller's memory) with this node's
 * outgoing streams, one entry per receiver, in the order they were first
 * queued. Returns the number of entries written (0 when nothing streams
 * out); at most MAX, and at most BRIM_MIGRATE_DESTS_MAX (receivers beyond
 * it are folded into the last entry's counts: a cluster of more members
 * than that streams to them all only in a shrink of the whole cluster).
 */
uint32_t brim_migrate_streams_out(struct brim_node               *node,
                                  struct brim_migrate_stream_out *out,
                                  uint32_t                        max);

#endif /* BRIM_SERVER_NODE_MIGRATE_H */
