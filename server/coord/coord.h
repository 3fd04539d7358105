/*
 * server/coord/coord.h - brim-coord's daemon state: the persisted cluster
 * state (persist.h), the members it knows with their connections, the
 * change in progress (one pending epoch at a time), and the held
 * SUBSCRIBE replies (PROTOCOL.md section 10). Loop thread only.
 */
#ifndef BRIM_SERVER_COORD_COORD_H
#define BRIM_SERVER_COORD_COORD_H

#include <stdint.h>

#include <uv.h>

#include "proto/topo.h"
#include "proto/wire.h"
#include "server/conn.h"
#include "server/coord/persist.h"
#include "server/guard.h"
#include "server/http.h"
#include "server/peer.h"

/* How long a SUBSCRIBE is held before the current map is sent (10.2). */
#define COORD_SUBSCRIBE_HOLD_MS 30000u
/* The coordinator's tick: joins, deaths, timeouts. */
#define COORD_TICK_MS 50u
/* A node backs off at most this long between attempts to reach the
 * coordinator (server/node/coordlink.c): a restarted coordinator declares
 * no node dead before dead-after plus this. */
#define COORD_NODE_BACKOFF_MAX_MS 5000u

/* brim-coord's command line. */
struct brim_coord_config {
    char                       listen[BRIM_ADDR_MAX + 1];
    char                       data_dir[4096];
    struct brim_coord_settings set; /* for a new cluster */
    uint32_t                   join_window_ms;
    uint32_t                   max_conns;         /* --max-conns */
    uint32_t                   idle_timeout_s;    /* --idle-timeout; 0 never */
    int                        log_level;         /* enum brim_log_level */
    unsigned                   given;             /* COORD_GIVEN_* bits */
    char                       secret_file[1024]; /* "": no secret */
    char                       client_secret_file[1024];       /* "": none */
    char                       http_listen[BRIM_ADDR_MAX + 1]; /* "": none */
    uint32_t                   http_max_conns; /* --http-max-conns */
    char                       etcd[1024]; /* --etcd URL,...: "" is file mode */
    char     name[BRIM_NAME_MAX + 1];      /* --name: this coordinator's */
    char     etcd_prefix[128]; /* --etcd-prefix: the cluster's keys */
    uint32_t election_ttl_s;   /* --election-ttl: the leader's lease */
    char     import_dir[4096]; /* --import-state: a file-mode data dir
                                  whose state the first leader moves
                                  into etcd; "" none */
};

struct brim_coord;

/* Where the state of persist.h is kept: the file of --data-dir, or etcd
 * (leader.c). SAVE writes CO->state durably; 0 or a BRIM_E* code with
 * ERRBUF saying why. */
typedef int (*brim_coord_save_fn)(struct brim_coord *co,
                                  char               errbuf[BRIM_ERRBUF_LEN]);

/* One member the coordinator knows. */
struct brim_coord_member {
    struct brim_coord_member *next;       /* coord->members list */
    struct brim_member        m;          /* name, addr, weight, state, inc */
    uint64_t                  last_hb_ms; /* loop time of its last heartbeat */
    struct brim_conn         *conn;       /* its node-to-coord connection */
    struct brim_peer          peer;       /* coord-to-node connection */
    struct brim_coord        *coord;
    int                       need_ack; /* awaited for the pending epoch */
    uint64_t known_epoch; /* the committed epoch it was last told of (JOIN's
                             reply, or member.c's catch-up) */
    uint64_t owe_abort;   /* an epoch a former leader left
                                           pending: EPOCH_ABORT it once
                                           connected; 0 none */
    int      removed;     /* gone: freed once PEER is idle */
    int      leaving;     /* LEAVE asked */
    /* Its last heartbeat's stats (PROTOCOL.md 10.2, DESIGN.md 8). */
    uint64_t hb_keys, hb_bytes, hb_partitions, hb_rps;
    uint64_t hb_epoch;                     /* its committed epoch then */
    int      hb_heard;                     /* a heartbeat came since this
                                           coordinator started */
    int      hb_mig_reported;              /* its heartbeats carry the
                                           mig_* fields (brim-node's do) */
    uint64_t hb_mig_in;                    /* keys kept from migration, ever */
    uint64_t hb_mig_in_flight;             /* partitions coming in */
    uint64_t hb_mig_out_pending;           /* partitions going out */
    uint64_t hb_mig_in_arc, hb_mig_in_cap; /* hb_mig_in by
                                           why the partition moved */
    uint64_t mig_in_base;                  /* hb_mig_in when the last change
                                           committed */
    uint64_t mig_arc_base, mig_cap_base;   /* the same, by why */
    uint64_t hb_mig_in_unfinished;         /* partitions it completed
                                           before their stream ended */
    uint64_t mig_unfinished_base;          /* that at the last commit */
    uint64_t hb_mig_skipped;               /* entries received, not kept:
                                           it held a newer write */
    uint64_t mig_skipped_base;             /* that at the last commit */
};

/* Per-connection state (brim_conn data). */
struct brim_coord_conn {
    uint32_t                  role;         /* from HELLO, 0 before */
    struct brim_coord_member *member;       /* a node's own member, or NULL */
    uint64_t                  sub_id;       /* held SUBSCRIBE's request id */
    uint64_t                  sub_known;    /* its known epoch */
    uint64_t                  sub_deadline; /* loop ms; 0 = none held */
};

/* etcd mode (--etcd): the election and the state's key (leader.c). */
struct brim_coord_etcd {
    struct brim_etcd *cli;             /* the gateway client */
    char              key_leader[192]; /* PREFIX/leader: "NAME ADDR
                                            HTTP" (persist.h) */
    char              key_state[192];  /* PREFIX/state: persist bytes */
    int64_t           lease;           /* our lease id, 0 none */
    int64_t           lease_ttl_ms;    /* as etcd granted it */
    uint64_t          keepalive_ms;    /* loop ms of the last sent one */
    uint64_t          lease_good_ms;   /* loop ms at the send of the last
                                            keepalive (or grant) that
                                            succeeded */
    int64_t           term;            /* our leader key's create
                                            revision; 0: not leading */
    int64_t           state_mod;       /* the state key's mod revision
                                            as we last wrote or read it */
    uint64_t          logged_ms;       /* last etcd failure logged */
    uint64_t          read_ms;         /* a follower's last state read */
    int64_t           leader_term;     /* a follower's: the leader key's
                                            create revision as last read;
                                            0 none */
    uint64_t          leader_seen_ms;  /* loop ms that key was last read
                                            (0 never) */
    uv_timer_t        timer;           /* campaign and keepalive */
};

struct brim_coord {
    uv_loop_t         *loop;
    char             **argv; /* main's: a deposed leader runs
                                             itself again */
    brim_coord_save_fn save; /* the state's back end */
    void (*deposed)(struct brim_coord *co,
                    const char        *why);  /* a node answered STALETERM:
                                                step down (leader.c; NULL in
                                                file mode, which has no
                                                terms) */
    struct brim_coord_etcd   *etcd;    /* NULL in file mode */
    int                       leading; /* serves membership: always in
                                             file mode */
    char                      leader_addr[BRIM_ADDR_MAX + 1]; /* the leader
                                             NOTLEADER names; "" unknown */
    char                      leader_http[BRIM_ADDR_MAX + 1]; /* its HTTP
                                             port, from the same key; ""
                                             unknown or none */
    uint64_t                  ack_until_ms; /* loop ms: heartbeats are
                                             acknowledged before it only
                                             (within our etcd lease) */
    struct brim_coord_config  cfg;
    struct brim_coord_state   state;
    struct brim_server        srv;
    uv_timer_t                tick;
    uv_signal_t               sig_term, sig_int;
    struct brim_coord_member *members;
    uint64_t                  join_since_ms;    /* first queued join; 0 none */
    uint64_t                  pending_since_ms; /* proposal sent at */
    uint32_t                  acks_left;        /* for the pending epoch */
    uint64_t                  retry_at_ms;      /* no change before this */
    int                       stopping;
    int                       dirty;       /* a change is wanted */
    uint32_t                  pending_arc; /* the pending epoch's moves */
    uint32_t                  pending_cap;
    uint32_t                  last_arc; /* the last commit's moves */
    uint32_t                  last_cap;
    int                       totals_lost;      /* loaded a committed map, none
                                            committed since: last_arc,
                                            last_cap and the key counts
                                            of that change are unknown */
    uint64_t                  last_commit_ms;   /* loop ms of the last commit */
    int                       last_streams;     /* that change may have moved
                                                partitions between members
                                                (set at a restart with a
                                                committed map: unknown) */
    uint64_t                  last_tick_ms;     /* loop ms of the last tick */
    uint64_t                  deaths_after_ms;  /* loop ms: no death declared
                                                before (a restart's grace:
                                                nodes back off up to 5 s) */
    int                       restarted;        /* loaded a committed map: each
                                                member must be heard once
                                                before a change */
    char                      wait_why[256];    /* why a graceful change waits;
                                                "" when none does */
    uint64_t                  wait_since_ms;    /* loop ms it began waiting */
    uint64_t                  wait_logged_ms;   /* loop ms it was last logged */
    uint64_t                  wait_signature;   /* in-flight partitions and
                                                entries received, summed:
                                                changes when streams move */
    uint64_t                  wait_progress_ms; /* loop ms it last changed */
    double                    last_ideal_keys;  /* keys the last change had to
                                                move at least: the leavers'
                                                keys plus the joiners'
                                                share of the rest */
    uint64_t                  last_keys_total;  /* keys held at that commit */
    msgpack_zone              zone;             /* requests */
    struct brim_guard         guard;            /* AUTH on our listener, and
                                                the secrets */
    struct brim_http         *http;             /* the HTTP port, or NULL
                                                (http.c) */
};

/* cmd.c */
/*
 * Append CO's CLUSTER_STATS reply frame for REQUEST_ID to OUT (the map of
 * PROTOCOL.md 10.3, docs/operations.md): what the op answers, and what
 * /metrics and /api/cluster read (http.c). Returns 0 or BRIM_ENOMEM (OUT
 * is unchanged).
 */
int brim_coord_stats_frame(struct brim_coord *co, struct brim_buf *out,
                           uint64_t request_id);

/* http.c */
/*
 * Start CO's HTTP port (/metrics, /api/cluster) on CO->cfg.http_listen
 * when it is set (else do nothing). Stop it with brim_http_stop(CO->http)
 * and free it with brim_http_free() after the loop. Returns 0, or an
 * error of brim_http_start() with ERRBUF saying why.
 */
int brim_coord_http_start(struct brim_coord *co, char errbuf[BRIM_ERRBUF_LEN]);
/* leader.c (etcd mode): start the election; stop (revoke our lease, so
 * a standby leads at once). */
int  brim_coord_etcd_start(struct brim_coord *co, char *err);
void brim_coord_etcd_stop(struct brim_coord *co);
/* Free what etcd mode holds, once the loop has ended; nothing in file
 * mode. */
void brim_coord_etcd_free(struct brim_coord *co);
/* A follower's copy of the state in CO->state, read from etcd again
 * when older than 100 ms (MAP_FETCH and HELLO are served from it).
 * Returns 0 when CO->state holds one, else BRIM_ENOTFOUND or the error
 * of the read. */
int brim_coord_etcd_follow(struct brim_coord *co);
/* The etcd back end of brim_coord_save_fn: one transaction guarded by
 * our leadership and the state's mod revision; a failed compare makes
 * this coordinator step down (it runs itself again, as a follower). */
int brim_coord_etcd_save(struct brim_coord *co, char errbuf[BRIM_ERRBUF_LEN]);

/* The term CO leads in, carried in its EPOCH_PROPOSE, _COMMIT and
 * _ABORT and its HEARTBEAT replies (PROTOCOL.md 10.6): its etcd leader
 * key's create revision, 0 in file mode or while not leading. */
static inline uint64_t
brim_coord_term(const struct brim_coord *co)
{
    return co->etcd != NULL && co->leading && co->etcd->term > 0
        ? (uint64_t) co->etcd->term
        : 0;
}

/* member.c: what a coordinator does once it holds the state, at a start
 * or an election: take this process's timings, abort a pending epoch (to
 * the nodes too, once connected), save, and make the members of the
 * committed map, heard again before any is declared dead. */
int brim_coord_resume(struct brim_coord *co);

/* member.c */
int  brim_coord_dispatch(struct brim_conn *c, const char *body, size_t len);
void brim_coord_conn_closed(struct brim_conn *c);
void brim_coord_tick(struct brim_coord *co);
int  brim_coord_members_from_state(struct brim_coord *co);
int  brim_coord_save(struct brim_coord *co);
void brim_coord_members_free(struct brim_coord *co);
int  brim_coord_zones_init(void);
struct brim_coord_member *brim_coord_member_find(struct brim_coord *co,
                                                 const char *name, size_t len);
struct brim_coord_member *brim_coord_member_new(struct brim_coord *co,
                                                const char *name, size_t len);
void brim_coord_member_remove(struct brim_coord_member *mb);

/* Count MB's keys moved from now on: its heartbeat's migration counters
 * (keys received in all, by arc, by cap, left unfinished) become the base
 * that CLUSTER_STATS subtracts. At a commit (a new change) and at a
 * restarted or elected coordinator's first heartbeat from MB. */
void brim_coord_member_rebase(struct brim_coord_member *mb);

/* MB's own connection closed: a member not yet in the committed map (a
 * joiner that gave up, e.g. on a map of another P) is dropped, and a
 * change waiting for its acknowledgement is aborted at once. */
void brim_coord_member_gone(struct brim_coord_member *mb);
int brim_coord_place(struct brim_coord *co, struct brim_topo *nt, uint32_t *arc,
                     uint32_t *cap, char *err);
int brim_coord_reply_topo(struct brim_conn *c, uint32_t op, uint64_t id,
                          const struct brim_topo *t);

/* cmd.c: true while the last change's migration runs, as the members'
 * heartbeats tell it (or a change is pending). */
int brim_coord_migration_active(const struct brim_coord *co);

/*
 * member.c: true when a join or a graceful leave must wait now, because
 * a migration may be running: a committed member has not been heard at
 * the committed epoch since this coordinator started (it may stream),
 * or one reports partitions in flight or still to stream. WHY (LEN
 * bytes) gets the reason. No clock ends the wait (issue 10): a stalled
 * migration is reported, and ends when its streams do or a node dies.
 */
int brim_coord_change_must_wait(struct brim_coord *co, char *why, size_t len);

#endif /* BRIM_SERVER_COORD_COORD_H */
