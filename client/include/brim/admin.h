/*
 * brim/admin.h - libbrim's calls for operators, on a client connected in
 * cluster mode (brim_opts.coord_addr): the coordinator's member list, a
 * node's leave, what a join or a leave would move, and the cluster's
 * statistics, each returned as typed structs (PROTOCOL.md 10.2: MEMBERS,
 * LEAVE, PLAN, CLUSTER_STATS). Installed beside <brim.h>, exported like
 * it; brimctl's nodes, leave, plan and cluster stats are built on it.
 *
 * Memory: brim_members() and brim_cluster_stats() return one allocation
 * each, freed with brim_members_free() and brim_cluster_stats_free();
 * brim_plan() fills the caller's struct. Strings are NUL-terminated
 * arrays inside the structs (a longer one from the coordinator is cut).
 * The structs may grow in a later version of the library (a new soname):
 * zero-initialise the one you pass, and do not copy arrays of them with
 * a size of your own.
 *
 * Errors: every call returns 0 or a negative BRIM_E* code, and
 * brim_errmsg() then says why. Besides those each call lists, any may
 * return BRIM_EINVAL (a NULL argument, or a client not connected to a
 * coordinator: "not connected to a coordinator"), BRIM_EBADREPLY (the
 * coordinator's reply does not have the shape described here; the
 * connection is closed), BRIM_EUNKNOWNOP (a coordinator that does not
 * serve the op), BRIM_ENOMEM and the transport errors of the data calls
 * in <brim.h> (BRIM_ETIMEDOUT within request_timeout_ms, BRIM_ECLOSED,
 * BRIM_ECONNREFUSED, BRIM_ESYS), and BRIM_ENOTLEADER: with several
 * coordinators on etcd, none of those the client knows leads (an election
 * is in progress; brim_errmsg() names those tried). Out-parameters are
 * written only on success.
 *
 * Which coordinator: the one that last answered, else each the client
 * knows in turn (the seeds that are coordinators, then those the nodes
 * name). A follower's NOTLEADER answer sends the call on to the leader it
 * names, which later calls then ask first (PROTOCOL.md 10.5).
 */
#ifndef BRIM_ADMIN_H
#define BRIM_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include <brim.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes in a node's name and in its "host:port", the NUL not counted. */
#define BRIM_ADMIN_NAME_MAX 64
#define BRIM_ADMIN_ADDR_MAX 63

/* Bytes kept of a migration's "waiting" reason, the NUL not counted. */
#define BRIM_ADMIN_TEXT_MAX 255

/* A node's place in the cluster (a member's STATE). */
enum brim_node_state {
    BRIM_NODE_UNKNOWN = 0, /* a state this library does not know */
    BRIM_NODE_JOINING = 1, /* accepted, not yet in a committed map */
    BRIM_NODE_UP = 2,      /* in the committed map, heartbeating */
    BRIM_NODE_LEAVING = 3, /* asked to leave: streams what it held */
    BRIM_NODE_DEAD = 4,    /* missed its heartbeats; removed by
                                     * the next epoch */
    BRIM_NODE_LEFT = 5     /* a departed leaver whose migration is
                                     * over (CLUSTER_STATS' departed[]) */
};

/*
 * The lower-case name of STATE (an enum brim_node_state): "joining",
 * "up", "leaving", "dead", "left"; "unknown" for any other value.
 * Static; never free it.
 */
BRIM_EXTERN const char *brim_node_state_name(int state);

/* ---- members ---- */

/* One member of the cluster, as brim_members() lists it. */
struct brim_member_info {
    char     name[BRIM_ADMIN_NAME_MAX + 1]; /* the node's name */
    char     addr[BRIM_ADMIN_ADDR_MAX + 1]; /* "host:port" clients use */
    int      state;                         /* enum brim_node_state */
    uint32_t weight_ppm;            /* weight in millionths (1000000: 1.0) */
    uint32_t partitions;            /* partitions it owns in the committed
                                     * map */
    uint32_t last_heartbeat_ms_ago; /* milliseconds since the coordinator
                                     * last heard its heartbeat */
};

/*
 * List the cluster's members, in the coordinator's order, the ones that
 * left already excepted. On success *MEMBERS is a new array of
 * *NMEMBERS entries (NULL and 0 when the cluster has no member) that the
 * caller frees with brim_members_free(). Sent again after a lost
 * connection. Returns 0 or an error of the list above.
 */
BRIM_EXTERN int brim_members(struct brim_client       *c,
                             struct brim_member_info **members,
                             size_t                   *nmembers);

/* Free an array of brim_members(). NULL is allowed. */
BRIM_EXTERN void brim_members_free(struct brim_member_info *members);

/* ---- leave ---- */

/*
 * Ask the coordinator to take node NAME (NUL-terminated, 1 ..
 * BRIM_ADMIN_NAME_MAX bytes; borrowed) out of the cluster: a new epoch
 * without it, whose migration streams its partitions to the others; the
 * node then exits. FORCE non-zero lets the last node go too (its keys are
 * then lost). Needs a client connected with opts.admin and, where the
 * cluster has a secret, its secret_file. On success *EPOCH (if not NULL)
 * is the epoch of the change that removes NAME. Not sent again after a
 * lost connection (BRIM_EUNKNOWN). Returns 0, BRIM_ENOTFOUND (no such
 * member), BRIM_EDENIED (the last member without FORCE; not an admin, or
 * no proof of the cluster secret), or an error of the list above.
 */
BRIM_EXTERN int brim_leave(struct brim_client *c, const char *name, int force,
                           uint64_t *epoch);

/* ---- plan ---- */

/* What brim_plan() is asked about. */
enum brim_plan_kind {
    BRIM_PLAN_JOIN = 1, /* a new node joins */
    BRIM_PLAN_LEAVE = 2 /* a member leaves */
};

/* What a join or a leave would move, computed by the coordinator from its
 * committed map without changing anything. Counts are partitions. */
struct brim_plan {
    int      kind;                          /* enum brim_plan_kind */
    char     name[BRIM_ADMIN_NAME_MAX + 1]; /* the node planned for */
    uint64_t partitions_moved; /* partitions whose owner would change */
    uint64_t moved_arc;        /* of them, for an arc: the joiner's
                                     * new arcs, or the leaver's own */
    uint64_t moved_cap;        /* of them, for the cap: shed by a node
                                     * above it, or walked past a full one */
    double   ideal;            /* what an ideal change moves: P/(N+1)
                                     * on a join, the leaver's partitions
                                     * on a leave */
    double   churn;            /* partitions_moved / ideal (0 when
                                     * ideal is 0) */
    uint64_t cap_before;       /* the cap at weight 1 now */
    uint64_t cap_after;        /* the cap at weight 1 after it */
    uint64_t keys_estimate;    /* keys that would move, from their
                                     * owners' last heartbeats */
};

/*
 * Plan a join of node NAME (KIND BRIM_PLAN_JOIN, with WEIGHT_PPM
 * millionths, 1000 .. 10^9; 0 means 1.0) or a leave of member NAME
 * (BRIM_PLAN_LEAVE; WEIGHT_PPM 0) into *PLAN (the caller's memory). NAME
 * is borrowed. Needs an admin as brim_leave() does. Returns 0,
 * BRIM_EEXISTS (a join of a member), BRIM_ENOTFOUND (a leave of a
 * non-member), BRIM_EDENIED (the last member's leave; no admin proof),
 * BRIM_EINVAL (a bad KIND, NAME or WEIGHT_PPM), or an error of the list
 * above.
 */
BRIM_EXTERN int brim_plan(struct brim_client *c, int kind, const char *name,
                          uint32_t weight_ppm, struct brim_plan *plan);

/* ---- cluster statistics ---- */

/* One node's row of brim_cluster_stats(), from its last heartbeat and
 * the committed map. */
struct brim_cluster_node {
    char     name[BRIM_ADMIN_NAME_MAX + 1]; /* the node's name */
    char     addr[BRIM_ADMIN_ADDR_MAX + 1]; /* its "host:port" */
    int      state;                         /* enum brim_node_state */
    uint32_t weight_ppm;                    /* weight in millionths */
    uint64_t partitions;            /* partitions it owns (committed map) */
    uint64_t displaced;             /* of them, not at their ring owner */
    uint64_t cap;                   /* its own cap, partitions */
    double   load;                  /* partitions over the mean per node */
    uint64_t keys;                  /* keys it holds */
    uint64_t bytes;                 /* bytes its store holds */
    uint64_t requests_per_sec;      /* requests a second it serves */
    uint64_t last_heartbeat_ms_ago; /* ms since its last heartbeat */
    uint64_t migration_in;          /* partitions still coming in */
    uint64_t migration_out;         /* partitions it still has to send */
};

/* The migration of the last membership change. Counts are partitions
 * unless they say keys. */
struct brim_cluster_migration {
    int      active; /* non-zero: a change is pending, or
                                     * streams still run */
    char     waiting[BRIM_ADMIN_TEXT_MAX + 1]; /* why a join or a leave
                                     * waits; "" when none does */
    uint64_t waiting_ms;                       /* how long it has waited, ms */
    uint64_t epoch;                            /* the epoch the change made */
    uint64_t partitions_total;                 /* partitions it moves */
    uint64_t partitions_done;                  /* of them, arrived */
    uint64_t moved_arc;             /* of the total, moved for an arc */
    uint64_t moved_cap;             /* of the total, moved for the cap */
    uint64_t keys_moved;            /* keys migration stored since the
                                     * commit (keys_moved_arc plus
                                     * keys_moved_cap) */
    uint64_t keys_moved_arc;        /* of them, of partitions moved by arc */
    uint64_t keys_moved_cap;        /* of them, of partitions moved by cap */
    uint64_t keys_skipped;          /* entries streamed but not stored:
                                     * the receiver held a newer write or
                                     * delete (not in keys_moved) */
    uint64_t keys_at_commit;        /* keys in the cluster at the commit */
    double   ideal_keys;            /* keys any change must move: the
                                     * leavers' plus the joiners' share of
                                     * the rest */
    double   churn;                 /* keys_moved / ideal_keys (0 when
                                     * ideal_keys is 0) */
    uint64_t partitions_unfinished; /* of partitions_done, completed
                                     * before their stream ended: the
                                     * source died or left first, and
                                     * what it had not sent is lost */
    int      totals_lost;           /* non-zero: the coordinator started
                                     * (or was elected) after this
                                     * epoch's commit, so partitions_total,
                                     * partitions_done, moved_arc,
                                     * moved_cap, keys_at_commit,
                                     * ideal_keys and churn are 0, not
                                     * counts; the senders' own rows
                                     * (brimctl migrations) still are.
                                     * 0 from a coordinator that does not
                                     * send it */
};

/* The coordinator's own AUTH counters (PROTOCOL.md 12.4). */
struct brim_cluster_auth {
    int      required;          /* non-zero: it has a cluster secret */
    uint64_t auth_ok;           /* connections that proved a secret */
    uint64_t auth_failures;     /* failed proofs, ops refused for want
                                     * of one */
    uint64_t auth_rate_limited; /* connections closed at once past the
                                     * failure rate limit */
    uint64_t auth_out_failures; /* its own outgoing handshakes whose
                                     * AUTH failed */
};

/* How the coordinator that answered keeps the cluster's state. */
enum brim_coord_mode {
    BRIM_COORD_MODE_UNKNOWN = 0, /* not said (an older coordinator) */
    BRIM_COORD_MODE_FILE = 1,    /* one coordinator, its --data-dir */
    BRIM_COORD_MODE_ETCD = 2     /* several on etcd, one elected leader
                                  * (--etcd, docs/operations.md) */
};

/*
 * The name of MODE (an enum brim_coord_mode) as CLUSTER_STATS spells it:
 * "file", "etcd"; "" for BRIM_COORD_MODE_UNKNOWN or any other value.
 * Static; never free it.
 */
BRIM_EXTERN const char *brim_coord_mode_name(int mode);

/* The coordinator that answered brim_cluster_stats() (issue 15). */
struct brim_cluster_coord {
    char     name[BRIM_ADMIN_NAME_MAX + 1]; /* its --name in etcd mode;
                                             * "" in file mode */
    char     addr[BRIM_ADMIN_ADDR_MAX + 1]; /* its "host:port" (--listen:
                                             * what NOTLEADER names) */
    int      mode;                          /* enum brim_coord_mode */
    uint64_t term;                          /* etcd mode: the term it
                                             * leads in (its leader key's
                                             * create revision, rising
                                             * with each election); 0 in
                                             * file mode or not leading */
    int      leading;                       /* non-zero: it leads (always
                                             * in file mode) */
};

/* The cluster as the coordinator sees it (DESIGN.md section 8). */
struct brim_cluster_stats {
    uint64_t                      epoch;      /* committed epoch */
    char                          eps[32];    /* eps as decimal text
                                                * ("0.05"), or "none" */
    uint64_t                      partitions; /* P */
    uint64_t                      tokens;     /* tokens of a node of
                                                * weight 1 (V) */
    uint64_t                      members;    /* members of the committed
                                                * map */
    uint64_t                      pending;    /* 1 while a proposed epoch
                                                * awaits its acks, else 0 */
    uint64_t                      next_epoch; /* the next epoch number */
    uint64_t                      cap;        /* the cap at weight 1,
                                                * partitions */
    int                           within_cap; /* non-zero: every node at
                                                * or below its cap */
    double                        max_mean_partitions; /* most partitions
                                                * of a node over the mean */
    double                        min_mean_partitions; /* fewest, over the
                                                * mean */
    double                        max_mean_keys;       /* most keys of a node
                                                * over the mean */
    uint64_t                      keys;                /* keys of the committed
                                                * map's members */
    uint64_t                      bytes;               /* bytes of every node */
    uint64_t                      requests_per_sec;    /* of every node */
    uint64_t                      displaced;   /* partitions not at their
                                                * ring owner */
    struct brim_cluster_node     *nodes;       /* NNODES rows, one per node
                                                * the coordinator knows; in
                                                * the same allocation */
    size_t                        nnodes;      /* rows */
    struct brim_cluster_migration migration;   /* the last change's */
    struct brim_cluster_auth      auth;        /* the coordinator's */
    struct brim_cluster_coord     coordinator; /* the one that answered;
                                                * all 0 from an older
                                                * coordinator */
    struct brim_cluster_node     *departed;    /* NDEPARTED rows, the
                                                * members the last change
                                                * removed (left or dead):
                                                * only name and addr are
                                                * set (a leaver streams
                                                * what it held from
                                                * there); in the same
                                                * allocation; last, so
                                                * that a caller built
                                                * before them reads the
                                                * fields above where
                                                * they were */
    size_t                        ndeparted;   /* rows; 0 from an older
                                                * coordinator */
};

/*
 * Fetch the cluster's statistics (CLUSTER_STATS). On success *STATS is a
 * new struct (its NODES inside the same allocation) that the caller frees
 * with brim_cluster_stats_free(). A figure the coordinator does not send
 * reads 0 (or ""). Sent again after a lost connection. Returns 0 or an
 * error of the list above.
 */
BRIM_EXTERN int brim_cluster_stats(struct brim_client         *c,
                                   struct brim_cluster_stats **stats);

/* Free what brim_cluster_stats() returned. NULL is allowed. */
BRIM_EXTERN void brim_cluster_stats_free(struct brim_cluster_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* BRIM_ADMIN_H */
