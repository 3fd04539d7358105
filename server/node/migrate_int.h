/*
 * server/node/migrate_int.h - what the migration files of server/node
 * share: one node's migration state and the functions each lends the
 * others. The files depend in one direction:
 *
 *   migrate.c       (commit: what streams out, what comes in; stats)
 *     -> migrate_recv.c  (stream ops served, COMPLETEs, stream queries)
 *     -> migrate_read.c  (forwarded reads and pulls, and answering them)
 *     -> migrate_send.c  (jobs that stream partitions out)
 *     -> migrate_state.c (per-partition state, inserts, tombstones)
 *
 * (recv and read use send's mig_holds()/mig_complete(); nothing below
 * calls up). Internal to server/node; loop thread only.
 */
#ifndef BRIM_SERVER_NODE_MIGRATE_INT_H
#define BRIM_SERVER_NODE_MIGRATE_INT_H

#include <stdint.h>

#include "proto/buf.h"
#include "proto/wire.h"
#include "server/conn.h"
#include "server/node/links.h"
#include "server/node/migrate.h"
#include "server/node/node.h"
#include "server/node/store.h"

/*
 * Sender bounds. A batch holds at most MIG_BATCH_ENTRIES entries and
 * MIG_BATCH_BYTES of them, and never more than the receiver's frame limit
 * (its HELLO) less MIG_FRAME_SLACK; one entry larger than a batch goes in
 * a frame of its own. MIG_ACTIVE partitions stream at once; one slice
 * scans at most MIG_SCAN_BUCKETS buckets.
 */
#define MIG_BATCH_ENTRIES 512
#define MIG_BATCH_BYTES (256u << 10)
#define MIG_FRAME_SLACK 256u /* request header bytes, with room */
#define MIG_ENTRY_SLACK                                                        \
    32u /* an entry's msgpack bytes beyond its
                                       key and value, at most */
#define MIG_ACTIVE 4
#define MIG_SCAN_BUCKETS 4096
#define MIG_RETRY_MS 100       /* BEGIN answered RETRY: ask again */
#define MIG_ERROR_MIN_MS 500   /* an error reply: restart after this, */
#define MIG_ERROR_MAX_MS 10000 /* doubling up to this */
#define MIG_COMPLETE_WAIT_MS 10000
#define MIG_LOG_MS 5000 /* a migration's progress line */
/*
 * The pace (DESIGN.md 13). Migration work on the loop is bounded in time
 * at each end: in every MIG_WINDOW_NS window of the loop's clock, the
 * sender's pump (scanning, packing, sending batches) and the receiver's
 * inserts each spend at most MIG_SLICE_NS; past it the pump waits for the
 * next window, and the receiver stops reading the link that pushed it over
 * (brim_conn_defer) until then. Client events run between the slices, so
 * one waits at most about a slice for migration work, and migration takes
 * at most half of a loop's time at either end while clients have the
 * rest. The slice is the most; what is used adapts to the machine: every
 * MIG_PACE_TICK_NS the node reads how long its loop thread waited for a
 * CPU while runnable (/proc/thread-self/schedstat), and when that is more
 * than MIG_PACE_WAIT_HIGH of the time the slice halves (down to
 * MIG_SLICE_MIN_NS), else it grows by MIG_SLICE_STEP_NS (additive
 * increase, multiplicative decrease, as TCP's congestion window; after a
 * quiet spell it starts at the least and doubles until a wait): a
 * machine with CPU to spare streams at full speed, one whose processes
 * queue for the CPU (the clients' among them) gets its CPU back within a
 * few ticks; a leaver paces as every node does (docs/design.md). A pump
 * that fires more than MIG_LAG_NS after it was due
 * found its loop behind (clients, or no CPU): it sends one batch at most
 * and runs again MIG_YIELD_MS later. A batch goes only to a link whose
 * earlier writes have left for the kernel.
 */
#define MIG_WINDOW_NS 2000000ull
#define MIG_SLICE_NS 1000000ull    /* the most: half of each window */
#define MIG_SLICE_MIN_NS 50000ull  /* the least: 2.5% */
#define MIG_SLICE_STEP_NS 50000ull /* growth per tick */
#define MIG_PACE_TICK_NS 10000000ull
#define MIG_PACE_WAIT_HIGH 0.05 /* of a tick spent waiting for a CPU */
#define MIG_LAG_NS 3000000ull
#define MIG_YIELD_MS 2
/*
 * The turn (DESIGN.md 13: "bound the work one loop turn may spend on
 * migration"). Within a window's slice, migration work goes in quanta of
 * MIG_TURN_NS: once a turn of the loop has spent that on building,
 * sending and inserting batches, what is left waits for the next turn,
 * after the loop has polled its sockets and served the clients' requests
 * that came meanwhile. A batch is never cut, and one of 256 KiB takes
 * longer than the quantum (about 0.3 ms to insert 1 KiB values on the
 * 2-core VM measured), so in practice each end does one batch per turn:
 * a request waits for migration work about one batch, not a whole
 * slice (before, a pump or a link's reads ran on for up to the 1 ms
 * slice). The slice still bounds migration's share of the loop, and the
 * run-queue feedback its share of the CPU. A turn ends in a uv_check
 * callback (after the poll); what waits for the next turn runs from a
 * uv_idle callback, active only while something waits (an active idle
 * handle makes the poll not block).
 */
#define MIG_TURN_NS 100000ull

/* Who waits for the next turn (mig_turn_defer()). */
enum mig_turn_who {
    MIG_TURN_IN = 0, /* links the receiver paused (migrate_recv.c) */
    MIG_TURN_OUT,    /* the sender's pump (migrate_send.c) */
    MIG_TURN_WHO
};
struct brim_migrate;
typedef void (*mig_turn_fn)(struct brim_migrate *m);

/* The time migration work at one end spent in the current window. */
struct mig_budget {
    uint64_t start_ns;  /* uv_hrtime() the window began */
    uint64_t spent_ns;  /* migration work in it */
    uint64_t slice_ns;  /* MIG_SLICE_NS */
    uint64_t window_ns; /* MIG_WINDOW_NS */
};

/* True when B has time left at NOW_NS (a window past its end restarts). */
static inline int
mig_budget_open(struct mig_budget *b, uint64_t now_ns)
{
    if (now_ns - b->start_ns >= b->window_ns) {
        b->start_ns = now_ns;
        b->spent_ns = 0;
    }
    return b->spent_ns < b->slice_ns;
}

/* Milliseconds from NOW_NS until B's window ends, at least 1. */
static inline uint64_t
mig_budget_wait_ms(const struct mig_budget *b, uint64_t now_ns)
{
    uint64_t end = b->start_ns + b->window_ns;

    return end > now_ns + 1000000 ? (end - now_ns + 999999) / 1000000 : 1;
}
/* Receiver: an in-flight partition with no batch for MIG_PROBE_IDLE_MS
 * is asked about (STREAM_QUERY); the probe timer looks every
 * MIG_PROBE_TICK_MS at most MIG_PROBE_SLICE partitions, with at most
 * MIG_PROBE_OUT queries unanswered. */
#define MIG_PROBE_IDLE_MS 5000
#define MIG_PROBE_TICK_MS 500
#define MIG_PROBE_SLICE 65536
#define MIG_PROBE_OUT 64

/* A partition coming in: not expected, in flight, complete. */
enum mig_in_state {
    IN_NONE = 0,
    IN_FLIGHT,
    IN_DONE
};

/*
 * A stream going out. QUEUED -> BEGIN (STREAM_BEGIN sent) -> READY (a
 * batch may go) <-> WAIT (a batch unanswered) -> END (STREAM_END sent)
 * -> COMPLETE_WAIT (END answered: the copy waits for COMPLETE) -> DONE.
 * A restart goes back to BEGIN from any state before DONE
 * (mig_job_set_state() asserts the rest).
 */
enum mig_out_state {
    OUT_QUEUED = 0,
    OUT_BEGIN,
    OUT_READY,
    OUT_WAIT,
    OUT_END,
    OUT_COMPLETE_WAIT,
    OUT_DONE
};

/* One partition this node lost, streaming to its new owner. */
struct mig_job {
    uint64_t                 epoch;      /* migration id: (epoch, p) */
    uint32_t                 p;          /* the partition */
    enum mig_out_state       state;      /* see enum mig_out_state */
    struct brim_node_link   *dest;       /* the new owner's link */
    struct brim_store_cursor cursor;     /* where the scan stands */
    int                      scan_done;  /* every key has been batched */
    int                      cancelled;  /* a later commit superseded it */
    int                      completed;  /* COMPLETE came before END's
                                            reply */
    int                      end_sent;   /* STREAM_END went at least once */
    int                      busy;       /* a request is in flight */
    uint32_t                 retries;    /* BEGIN answered RETRY, in a row */
    uint32_t                 errors;     /* error replies in a row */
    uint32_t                 restarts;   /* times the stream began again */
    uint64_t                 count;      /* entries sent since BEGIN */
    uint64_t                 keys_total; /* the partition's keys when queued */
    uint32_t                 dest_slot;  /* its receiver in m->dests */
    uint8_t                  reason;     /* enum brim_move_reason: why P
                                            moved (0 unknown: counted as
                                            arc, as coming in) */
    uint64_t                 not_before; /* loop ms: no request before */
};

/* No source: in_src of a partition not in flight. */
#define MIG_NO_SRC UINT16_MAX

/* A COMPLETE to send to the old owner (its forwarding connection). */
struct mig_cpend {
    uint64_t               epoch; /* the migration id completed */
    uint32_t               p;
    struct brim_node_link *link; /* to the old owner */
};

/* A key written or deleted here while its partition is in flight. */
struct mig_tomb {
    struct mig_tomb *hnext; /* bucket chain */
    struct mig_tomb *pnext; /* same partition */
    uint64_t         hash;  /* the cluster key hash */
    uint32_t         p;     /* its partition */
    uint8_t          key_len;
    char             key[];
};

/*
 * Test hook (BRIM_TEST_ALLOC_FAIL="tomb:N,spare:N,insert:N,send:N" in a node's
 * environment): every Nth allocation at that site fails, through
 * common/alloc.h's brim_alloc_fail_after(), so tests see the failure paths
 * of migration run. Never set in production (the node warns).
 */
enum mig_fail_site {
    MIG_FAIL_TOMB = 0, /* a tombstone */
    MIG_FAIL_SPARE,    /* the spare tombstone */
    MIG_FAIL_INSERT,   /* a streamed entry's item */
    MIG_FAIL_SEND,     /* a stream request's frame */
    MIG_FAIL_SITES
};

/* A receiver of this node's migration out (brim_migrate_streams_out()). */
struct mig_dest {
    char     addr[128];  /* "host:port", copied from the link */
    uint64_t since_ms;   /* loop ms its first partition was queued */
    uint64_t last_ms;    /* loop ms one of its partitions last ended */
    uint32_t partitions; /* queued */
    uint32_t done, dropped;
    uint64_t keys, bytes; /* batched to it */
    uint64_t epoch;       /* the latest migration id's epoch queued to it */
};

/* One node's migration state (node->mig), made on first use. */
struct brim_migrate {
    struct brim_node *node; /* borrowed: the owner */
    /* Receiving side, per partition (P entries each). */
    uint64_t *in_epoch;    /* the migration id's epoch */
    uint8_t  *in_state;    /* enum mig_in_state */
    uint8_t  *in_reason;   /* enum brim_move_reason; NULL until
                                        the first commit with gains */
    uint16_t *in_src;      /* source index in the committed
                                        topology, or MIG_NO_SRC */
    uint32_t *in_touch;    /* loop time / 100 ms of its last
                                        batch or answer */
    uint8_t  *in_probing;  /* a STREAM_QUERY is out */
    uint64_t  in_since_ms; /* loop ms in flight last left 0 */
    uint64_t  in_since_bytes, in_since_keys; /* bytes_in, keys_in
                                                         then */
    /* Tombstones (migrate_state.c). */
    struct mig_tomb **tomb_head; /* per partition */
    struct mig_tomb **tbuckets;  /* by hash */
    uint32_t          ntbuckets;
    struct mig_tomb  *spare_tomb; /* a tombstone of the longest key,
                                        kept so a write's is never lost to
                                        an allocation failure */
    /* COMPLETEs and stream queries (migrate_recv.c). */
    struct mig_cpend  *cpend; /* COMPLETEs waiting for their link */
    uint32_t           ncpend, cap_cpend;
    uint32_t           probes_out; /* queries unanswered */
    uint32_t           probe_next; /* next partition the probe looks at */
    uv_timer_t         probe;      /* every MIG_PROBE_TICK_MS */
    int                probe_armed;
    struct mig_budget  in_budget; /* the inserts' time (MIG_SLICE_NS) */
    struct brim_conn **in_paused; /* links deferred until the next
                                     window, NIN_PAUSED of them */
    uint32_t           nin_paused, cap_in_paused;
    uv_timer_t         in_resume; /* resumes them */
    int                in_resume_armed;
    struct brim_conn **in_turn; /* links deferred until the next turn
                                   (MIG_TURN_NS), oldest first */
    uint32_t           nin_turn, cap_in_turn;
    /* The turn (MIG_TURN_NS; migrate_state.c). */
    uv_check_t  turn_check; /* ends a turn: turn_spent_ns = 0 */
    uv_idle_t   turn_idle;  /* runs turn_fn[] at the next turn */
    int         turn_idle_on;
    uint64_t    turn_spent_ns;         /* migration work in this turn */
    mig_turn_fn turn_fn[MIG_TURN_WHO]; /* waiting, or NULL */
    /* Sending side (migrate_send.c). */
    struct mig_job  **jobs;
    uint32_t          njobs, cap_jobs;
    struct mig_dest   dests[BRIM_MIGRATE_DESTS_MAX]; /* receivers of the
                                        last migration out; ndests in use,
                                        reset when the next one begins */
    uint32_t          ndests;
    uv_timer_t        pump; /* runs the jobs */
    int               pump_armed;
    uint64_t          pump_due_ms;     /* loop ms the armed pump fires */
    uint64_t          pump_due_ns;     /* uv_hrtime() it is due (its lag) */
    struct mig_budget out_budget;      /* the pump's time (MIG_SLICE_NS) */
    uint64_t          lag_ns;          /* MIG_LAG_NS */
    uint64_t          slice_max_ns;    /* MIG_SLICE_NS */
    int               sched_fd;        /* /proc/thread-self/schedstat, or -1 */
    uint64_t          pace_at_ns;      /* uv_hrtime() of the last tick */
    uint64_t          pace_wait_ns;    /* the thread's run-queue wait then */
    int               pace_slow_start; /* doubling, no wait seen yet */
    struct brim_buf   scratch;         /* entries of the batch being built */
    uint32_t          scratch_n;
    uint32_t          now;          /* Unix seconds while scanning */
    size_t            frame_room;   /* while scanning: most entry bytes
                                        one frame to the receiver holds */
    size_t            batch_bytes;  /* while scanning: the batch bound */
    int               scan_nomem;   /* while scanning: packing failed */
    uint8_t           scan_reason;  /* while scanning: the job's reason */
    double            pace_next_ms; /* loop ms before which no batch
                                        goes (--migrate-mb-per-s) */
    int               out_running;  /* a migration out is being logged */
    uint64_t          out_since_ms, out_logged_ms; /* its start, last line */
    uint64_t          out_since_bytes, out_since_keys, out_since_done;
    /* bytes_out, keys_out and partitions
                                        ended when it started */
    uint64_t                  in_logged_ms; /* loop ms of the last line in */
    uint32_t                  fail_every[MIG_FAIL_SITES]; /* test hook; 0 off */
    uint32_t                  fail_count[MIG_FAIL_SITES]; /* allocations seen */
    struct brim_migrate_stats stats;                      /* counters */
};

/* ---- migrate_state.c ---- */

/*
 * The pace's control (DESIGN.md 13, MIG_PACE_TICK_NS): at most once a
 * tick, read the loop thread's wait for a CPU and set both budgets' slice
 * (halved when the wait passed MIG_PACE_WAIT_HIGH of the tick, else grown
 * by a step, within MIG_SLICE_MIN_NS .. the most). NOW_NS is uv_hrtime().
 * Without schedstat (not Linux, or not readable) the slice stays the most.
 */
void mig_pace_tick(struct brim_migrate *m, uint64_t now_ns);

/* True while the current turn of the loop has migration time left
 * (MIG_TURN_NS). */
int mig_turn_open(const struct brim_migrate *m);

/* Count NS of migration work against the current turn. */
void mig_turn_spend(struct brim_migrate *m, uint64_t ns);

/* Run FN(M) once at the next turn of the loop, after it has polled its
 * sockets, as WHO's continuation (one per WHO: a later call replaces an
 * earlier one not yet run). Not while the node stops. */
void mig_turn_defer(struct brim_migrate *m, enum mig_turn_who who,
                    mig_turn_fn fn);

/* The node's migration state, made on first use; NULL when out of
 * memory. */
struct brim_migrate *mig_get(struct brim_node *node);

/* Free M and what it holds (the node has stopped). */
void mig_free(struct brim_migrate *m);

/* True when the committed map gives PARTITION to this node. */
int mig_owns(const struct brim_node *node, uint32_t partition);

/* Loop time in the 100 ms units of in_touch. */
uint32_t mig_touch_now(const struct brim_migrate *m);

/* Test hook: before an allocation at SITE, arm the allocator to fail it
 * when this is the Nth; mig_fail_disarm() right after the attempt. */
void mig_fail_arm(struct brim_migrate *m, enum mig_fail_site site);
void mig_fail_disarm(struct brim_migrate *m, enum mig_fail_site site);

/* Partition P, lost by the source at index SRC (-1: none) of the
 * committed topology, is in flight under id (EPOCH, P). */
void mig_in_start(struct brim_migrate *m, uint32_t p, uint64_t epoch,
                  int32_t src);

/* Partition P completes here: its tombstones go, it counts as done when
 * it was in flight (logs the migration's rate when it was the last). */
void mig_in_finish(struct brim_migrate *m, uint32_t p);

/* P, in flight under EPOCH, completes with what is here: its source
 * holds no copy any more (WHY says how that is known, for the log). */
void mig_in_source_gone(struct brim_migrate *m, uint32_t p, uint64_t epoch,
                        const char *why);

/* Insert entry E of partition P (hash H) unless the key is here or
 * tombstoned, at the cold end, as a batch does; NOW in Unix seconds.
 * Returns 0 (stored), 1 (skipped: here, tombstoned, or beyond this node's
 * limits, counted) or BRIM_ENOMEM (try again later). */
int mig_insert(struct brim_migrate *m, uint32_t p, uint64_t h,
               const struct brim_wire_entry *e, uint32_t now);

/* The tombstone slot of KEY (hash HASH), or NULL when it has none. */
struct mig_tomb **mig_tomb_slot(struct brim_migrate *m, uint64_t hash,
                                const char *key, size_t key_len);

/* Make sure the next mig_tomb_add() cannot fail: a table and a spare
 * tombstone exist. Returns 0 or BRIM_ENOMEM. */
int mig_tomb_reserve(struct brim_migrate *m);

/* Tombstone KEY of partition P (no-op when it has one). Uses the spare
 * tombstone when out of memory; returns 0, or BRIM_ENOMEM when even that
 * is gone. */
int mig_tomb_add(struct brim_migrate *m, uint32_t p, uint64_t hash,
                 const char *key, size_t key_len);

/* Drop every tombstone of partition P. */
void mig_tomb_clear(struct brim_migrate *m, uint32_t p);

/* Append a status reply [STATUS, ID, MSG] to C's output; 0 or
 * BRIM_ENOMEM. */
int mig_reply(struct brim_conn *c, uint64_t id, int status, const char *msg);

/* Resume every link the pace paused (migrate_recv.c), now: the node
 * stops. */
void mig_in_unpause(struct brim_migrate *m);

/* The stream entry of item IT with TTL seconds left (borrows IT). */
void mig_item_entry(const struct brim_item *it, uint32_t ttl,
                    struct brim_wire_entry *e);

/* ---- migrate_send.c ---- */

/* Queue job (EPOCH, P) to DEST. Returns 0 or BRIM_ENOMEM. */
int mig_job_queue(struct brim_migrate *m, uint64_t epoch, uint32_t p,
                  struct brim_node_link *dest);

/* After a commit: jobs whose destination no longer owns their partition
 * are cancelled; the partitions of the others are marked in KEEP. */
void mig_jobs_recheck(struct brim_migrate *m, uint8_t *keep);

/* COMPLETE of (E, P) from the new owner: our copy may go. */
void mig_complete(struct brim_migrate *m, uint64_t e, uint32_t p);

/* True when this node holds partition P: owns it, or streams it out. */
int mig_holds(struct brim_migrate *m, uint32_t p);

/* Run the jobs after DELAY_MS, or sooner if already due. */
void mig_pump_soon(struct brim_migrate *m, uint64_t delay_ms);

/* ---- migrate_recv.c ---- */

/* Queue COMPLETE of (EPOCH, P) for the old owner on LINK. */
void mig_complete_queue(struct brim_migrate *m, uint64_t epoch, uint32_t p,
                        struct brim_node_link *link);

/* Send the COMPLETEs whose link is open. */
void mig_send_completes(struct brim_migrate *m);

/* Start the receiver's probe of idle in-flight partitions. */
void mig_probe_start(struct brim_migrate *m);

/* ---- migrate_read.c ---- */

/* FORWARD_GET or PULL REQ of a key of a partition this node handed over,
 * answered on C from the copy it still holds. Returns 0 or BRIM_ENOMEM. */
int mig_serve_copy(struct brim_migrate *m, struct brim_conn *c,
                   const struct brim_req *req);

#endif /* BRIM_SERVER_NODE_MIGRATE_INT_H */
