/*
 * server/coord/member.c - brim-coord's membership (PROTOCOL.md section
 * 10): requests from nodes, clients and admins, and the one change in
 * flight: compute the next map (replace rule for the first, rebalance
 * after), persist it pending, EPOCH_PROPOSE to every member over the
 * coordinator's own connections, then commit or abort.
 */
#include "server/coord/coord.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/map.h"
#include "common/placement.h"
#include "common/ring.h"
#include "proto/frame.h"
#include "server/log.h"

/* A waiting change is logged this often, ms; a migration without
 * progress for COORD_STALL_MS is reported as stalled. */
#define COORD_WAIT_LOG_MS 10000
#define COORD_STALL_MS 30000

static msgpack_zone rep_zone;

static void change_commit(struct brim_coord *co);
static void change_abort(struct brim_coord *co, const char *why);
static void member_sync(struct brim_coord_member *mb);

/* The state's leave list anew from the members: every one whose leave
 * was accepted and that is still a member. Returns 0 or BRIM_ENOMEM (the
 * list is then as it was). */
static int
leaves_refresh(struct brim_coord *co)
{
    struct brim_coord_member *mb;
    char(*names)[BRIM_NAME_MAX + 1] = NULL;
    uint32_t n = 0;

    for (mb = co->members; mb != NULL; mb = mb->next) {
        n += mb->leaving && !mb->removed;
    }
    if (n > 0) {
        names = brim_calloc(n, sizeof(*names));
        if (names == NULL) {
            return BRIM_ENOMEM;
        }
        n = 0;
        for (mb = co->members; mb != NULL; mb = mb->next) {
            if (mb->leaving && !mb->removed) {
                memcpy(names[n++], mb->m.name, sizeof(names[0]));
            }
        }
    }
    brim_free(co->state.leaves);
    co->state.leaves = names;
    co->state.nleaves = n;
    return 0;
}

int
brim_coord_save(struct brim_coord *co)
{
    char err[BRIM_ERRBUF_LEN];
    int  rc;

    if (leaves_refresh(co) != 0) {
        brim_log_error("persist: out of memory listing the leaves");
        return BRIM_ENOMEM;
    }

    /* The state file is written and fsynced on the loop thread: 2.5 ms
     * median, 3.5 ms worst for a 140 KiB file on this machine's disk
     * (docs/design.md), against 500 ms heartbeats; kept simple. etcd's
     * transaction is bounded the same way (leader.c). */
    rc = co->save(co, err);
    if (rc != 0) {
        brim_log_error("persist: %s", err);
    }
    return rc;
}

/* Mark the committed member NAME leaving again after a restart or an
 * election (once: a name both lists hold is taken the first time); WHY
 * and EPOCH go in the log line. */
static void
leave_again(struct brim_coord *co, const char *name, const char *why,
            uint64_t epoch)
{
    struct brim_coord_member *mb;

    mb = brim_coord_member_find(co, name, strlen(name));
    if (mb != NULL && !mb->leaving
        && brim_topo_find(&co->state.committed, mb->m.name) >= 0)
    {
        brim_log_info("member %s leaving (asked %s %" PRIu64 ")", mb->m.name,
                      why, epoch);
        mb->leaving = 1;
        co->dirty = 1;
    }
}

int
brim_coord_resume(struct brim_coord *co)
{
    struct brim_coord_settings *s = &co->state.settings, *g = &co->cfg.set;
    struct brim_coord_member   *mb;
    struct brim_member         *requeue = NULL;
    uint64_t                    dropped = 0;
    uint32_t                    i, nrequeue = 0;
    int                         rc;

    /* Timings may change across restarts and leaders. */
    s->heartbeat_ms = g->heartbeat_ms;
    s->dead_after_ms = g->dead_after_ms;
    s->pending_timeout_ms = g->pending_timeout_ms;
    if (co->state.has_pending) {
        dropped = co->state.pending.map.epoch;
        brim_log_info("aborting epoch %" PRIu64 " left pending", dropped);
        /* Its leavers asked to go, and were told "leaving": held by name
         * (the pending topo goes) and asked again below. */
        requeue = co->state.pending.departed;
        nrequeue = co->state.pending.ndeparted;
        co->state.pending.departed = NULL;
        co->state.pending.ndeparted = 0;
        brim_topo_destroy(&co->state.pending);
        co->state.has_pending = 0;
    }
    /* A committed map: streams may be running, and which ones is heard
     * from the nodes before any change. */
    co->last_streams = co->state.committed.map.epoch > 0;
    co->restarted = co->last_streams;
    co->totals_lost = co->last_streams;
    /* Nodes back off up to COORD_NODE_BACKOFF_MAX_MS between attempts to
     * reach us: give them that, on top of dead-after, before any is
     * declared dead. */
    co->deaths_after_ms =
        co->restarted ? uv_now(co->loop) + COORD_NODE_BACKOFF_MAX_MS : 0;
    if (co->restarted && co->etcd != NULL) {
        /* Elected: the nodes left the old leader on a lost connection or
         * half a lease of silence and come at once (NOTLEADER, or their
         * backoff of at most half a lease); none is declared dead before
         * dead-after plus a lease from the election (DESIGN.md 12). */
        co->deaths_after_ms =
            uv_now(co->loop) + s->dead_after_ms + s->dead_after_ms / 2;
    }
    /* A pause before the first tick counts as one too. */
    co->last_tick_ms = uv_now(co->loop);
    rc = brim_coord_members_from_state(co);
    for (mb = co->members; rc == 0 && mb != NULL; mb = mb->next) {
        mb->owe_abort = dropped;
    }
    for (i = 0; rc == 0 && i < nrequeue; i++) {
        /* A leave the aborted epoch carried is not dropped with it: the
         * operator (or the node) was told it is leaving. */
        if (requeue[i].state == BRIM_MEMBER_LEAVING) {
            leave_again(co, requeue[i].name, "before epoch", dropped);
        }
    }
    brim_free(requeue);
    for (i = 0; rc == 0 && i < co->state.nleaves; i++) {
        /* Accepted, and no epoch had taken it yet (brimctl leave without
         * --wait returned at once): asked again, not lost. */
        leave_again(co, co->state.leaves[i], "and accepted before epoch",
                    co->state.next_epoch);
    }
    /* The abort and the leaves asked again, written once (a failure here
     * exits or, in etcd mode, steps down: nothing is half done). */
    if (rc == 0 && brim_coord_save(co) != 0) {
        rc = BRIM_ESYS;
    }
    return rc;
}

struct brim_coord_member *
brim_coord_member_find(struct brim_coord *co, const char *name, size_t len)
{
    struct brim_coord_member *mb;

    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (!mb->removed && strlen(mb->m.name) == len
            && memcmp(mb->m.name, name, len) == 0)
        {
            return mb;
        }
    }
    return NULL;
}

static void
peer_closed(struct brim_peer *p, int status)
{
    (void) p;
    (void) status; /* tick reconnects while an ack is owed */
}

struct brim_coord_member *
brim_coord_member_new(struct brim_coord *co, const char *name, size_t len)
{
    struct brim_coord_member *mb;

    mb = brim_calloc(1, sizeof(*mb));
    if (mb == NULL) {
        return NULL;
    }
    memcpy(mb->m.name, name, len);
    mb->coord = co;
    brim_peer_init(&mb->peer, co->loop, co->srv.cfg.max_frame_bytes, NULL,
                   peer_closed, mb);
    mb->next = co->members;
    co->members = mb;
    return mb;
}

void
brim_coord_member_rebase(struct brim_coord_member *mb)
{
    mb->mig_in_base = mb->hb_mig_in;
    mb->mig_arc_base = mb->hb_mig_in_arc;
    mb->mig_cap_base = mb->hb_mig_in_cap;
    mb->mig_unfinished_base = mb->hb_mig_in_unfinished;
    mb->mig_skipped_base = mb->hb_mig_skipped;
}

/* Mark MB gone; tick frees it once its peer connection is idle. */
void
brim_coord_member_remove(struct brim_coord_member *mb)
{
    struct brim_coord_conn *cc;

    mb->removed = 1;
    mb->need_ack = 0;
    if (mb->conn != NULL) {
        cc = mb->conn->data;
        cc->member = NULL;
        mb->conn = NULL;
    }
}

static int
in_topo(const struct brim_topo *t, const char *name)
{
    return brim_topo_find(t, name) >= 0;
}

int
brim_coord_members_from_state(struct brim_coord *co)
{
    struct brim_coord_member *mb;
    uint32_t                  i;
    const char               *n;

    for (i = 0; i < co->state.committed.nmembers; i++) {
        n = co->state.committed.members[i].name;
        mb = brim_coord_member_new(co, n, strlen(n));
        if (mb == NULL) {
            return BRIM_ENOMEM;
        }
        mb->m = co->state.committed.members[i];
        mb->m.state = BRIM_MEMBER_UP;
        mb->last_hb_ms = uv_now(co->loop); /* a grace period to rejoin */
    }
    return 0;
}

int
brim_coord_zones_init(void)
{
    return msgpack_zone_init(&rep_zone, MSGPACK_ZONE_CHUNK_SIZE) ? 0
                                                                 : BRIM_ENOMEM;
}

void
brim_coord_members_free(struct brim_coord *co)
{
    struct brim_coord_member *mb, *next;

    for (mb = co->members; mb != NULL; mb = next) {
        next = mb->next;
        brim_peer_destroy(&mb->peer);
        brim_free(mb);
    }
    co->members = NULL;
}

/* ---- replies ---- */

int
brim_coord_reply_topo(struct brim_conn *c, uint32_t op, uint64_t id,
                      const struct brim_topo *t)
{
    struct brim_rep rep;

    memset(&rep, 0, sizeof(rep));
    rep.request_id = id;
    rep.topo = t;
    return brim_wire_encode_rep(brim_conn_out(c), op, &rep);
}

/* ---- coordinator to node ---- */

static int
parse_reply(const char *body, size_t len, uint32_t op, struct brim_rep *rep)
{
    struct brim_wire_limits lim;

    brim_wire_limits_default(&lim);
    return brim_wire_parse_rep(body, len, op, &lim, &rep_zone, rep, NULL);
}

/* True when REP says the node has seen a newer coordinator term than
 * ours (PROTOCOL.md 10.6): this coordinator was deposed, and steps down
 * (in etcd mode; a file-mode coordinator sends no term, so no node
 * answers it STALETERM). */
static int
member_stale_term(struct brim_coord_member *mb, const struct brim_rep *rep)
{
    struct brim_coord *co = mb->coord;
    char               why[BRIM_ERRBUF_LEN];

    if (rep->status != BRIM_ESTALETERM) {
        return 0;
    }
    snprintf(why, sizeof(why), "member %s answered STALETERM: %.*s", mb->m.name,
             (int) BRIM_MIN(rep->message_len, 200u), rep->message);
    brim_log_warn("term %" PRIu64 " fenced: %s", brim_coord_term(co), why);
    if (co->deposed != NULL) {
        co->deposed(co, why);
    }
    return 1;
}

/* The reply to an EPOCH_COMMIT or EPOCH_ABORT: nothing to do unless the
 * node fenced our term. */
static void
notify_reply(struct brim_peer *p, int status, const char *body, size_t len,
             void *arg)
{
    struct brim_rep rep;

    (void) arg;
    if (status == 0 && parse_reply(body, len, BRIM_OP_EPOCH_COMMIT, &rep) == 0)
    {
        (void) member_stale_term(p->data, &rep);
    }
}

static void
propose_reply(struct brim_peer *p, int status, const char *body, size_t len,
              void *arg)
{
    struct brim_coord_member *mb = p->data;
    struct brim_coord        *co = mb->coord;
    struct brim_rep           rep;
    uint64_t                  epoch = (uint64_t) (uintptr_t) arg;

    if (status != 0 || parse_reply(body, len, BRIM_OP_EPOCH_PROPOSE, &rep)) {
        return;
    }
    if (member_stale_term(mb, &rep)) {
        return;
    }
    if (rep.status != 0) {
        brim_log_warn("member %s refused epoch %" PRIu64 ": %s: %.*s",
                      mb->m.name, epoch, brim_err_name(rep.status),
                      (int) rep.message_len, rep.message);
        if ((rep.status == BRIM_EBADREQ || rep.status == BRIM_EDENIED)
            && co->state.has_pending && co->state.pending.map.epoch == epoch)
        {
            /* It cannot take this map (another P, another cluster): a
             * joiner is dropped, and the change is aborted now rather
             * than left pending until the member is declared dead. */
            if (!in_topo(&co->state.committed, mb->m.name)) {
                brim_log_warn("member %s dropped: it refused the map it "
                              "would join with",
                              mb->m.name);
                brim_coord_member_remove(mb);
            }
            change_abort(co, "a member refused the proposed map");
        }
        return;
    }
    if (!co->state.has_pending || co->state.pending.map.epoch != epoch
        || !mb->need_ack)
    {
        return;
    }
    mb->need_ack = 0;
    if (--co->acks_left == 0) {
        change_commit(co);
    }
}

static void
member_call(struct brim_coord_member *mb, struct brim_req *req,
            brim_peer_reply_cb cb, void *arg)
{
    struct brim_buf f;

    brim_buf_init(&f);
    req->term = brim_coord_term(mb->coord); /* sent by the EPOCH_* ops */
    if (brim_wire_encode_req(&f, req) != 0
        || brim_peer_call(&mb->peer, &f, cb, arg) != 0)
    {
        brim_log_warn("member %s: could not send %s", mb->m.name,
                      brim_op_name(req->op));
    }
    brim_buf_destroy(&f);
}

static void
peer_connected(struct brim_peer *p, int status)
{
    struct brim_coord_member *mb = p->data;

    if (status == 0) {
        member_sync(mb);
    } else if (p->hs_failed_op != 0) {
        /* A node that refuses HELLO or AUTH, or fails to prove the
         * secret, gets no epoch: it is never pushed one unproven. */
        brim_log_warn("member %s (%s): %s: %s", mb->m.name, mb->m.addr,
                      brim_op_name(p->hs_failed_op), p->hs_error);
    }
}

/* Our HELLO to nodes, and AUTH with the cluster secret when there is one
 * (server/peer.h does both before the peer is open). */
static void
member_hello(struct brim_coord_member *mb)
{
    struct brim_coord     *co = mb->coord;
    struct brim_peer_hello h;

    memset(&h, 0, sizeof(h));
    h.role = BRIM_ROLE_COORD;
    h.cluster_id = co->state.settings.cluster_id;
    h.epoch = co->state.committed.map.epoch;
    h.name = "coord";
    h.secret = co->guard.secret;
    h.failures = &co->guard.stats.out_failures;
    brim_peer_set_hello(&mb->peer, &h);
}

static void member_notify(struct brim_coord_member *mb, uint32_t op,
                          uint64_t epoch);

/*
 * A joiner outside the committed map that was told an older one (it
 * joined while that change was pending; nemesis seed 5 found it, the
 * cluster's first two epochs): tell it the committed map now, as a
 * PROPOSE and a COMMIT it takes as a non-member, before the change it
 * joins with is proposed. Else it would diff that change against the
 * older map, expect no stream (or one from the wrong node) for the
 * partitions the committed map's owners hand it, and refuse them, and
 * the old owners would drop those partitions.
 */
static void
member_catch_up(struct brim_coord_member *mb)
{
    struct brim_coord *co = mb->coord;
    struct brim_req    req;
    uint64_t           e = co->state.committed.map.epoch;

    if (mb->peer.state != BRIM_PEER_OPEN || e == 0 || mb->known_epoch >= e
        || in_topo(&co->state.committed, mb->m.name))
    {
        return;
    }
    brim_log_info("member %s: told epoch %" PRIu64 " (it joined knowing "
                  "epoch %" PRIu64 ")",
                  mb->m.name, e, mb->known_epoch);
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_EPOCH_PROPOSE;
    req.epoch = e;
    req.topo = &co->state.committed;
    member_call(mb, &req, notify_reply, NULL);
    member_notify(mb, BRIM_OP_EPOCH_COMMIT, e);
    mb->known_epoch = e;
}

/* Connect to MB (HELLO and AUTH first), and send the pending proposal if
 * it owes one. */
static void
member_sync(struct brim_coord_member *mb)
{
    struct brim_coord *co = mb->coord;
    struct brim_req    req;
    char               err[BRIM_ERRBUF_LEN];

    if (mb->removed) {
        return;
    }
    if (mb->peer.state == BRIM_PEER_IDLE) {
        mb->peer.on_connect = peer_connected;
        member_hello(mb);
        if (brim_peer_connect(&mb->peer, mb->m.addr, err) != 0) {
            brim_log_warn("member %s: connect %s: %s", mb->m.name, mb->m.addr,
                          err);
        }
        return;
    }
    if (mb->peer.state != BRIM_PEER_OPEN) {
        return;
    }
    memset(&req, 0, sizeof(req));
    req.epoch = co->state.committed.map.epoch;
    if (mb->owe_abort != 0) {
        /* Left pending by the coordinator before us: it was acknowledged
         * perhaps, and the node holds its partitions back until told. */
        req.op = BRIM_OP_EPOCH_ABORT;
        req.arg_epoch = mb->owe_abort;
        mb->owe_abort = 0;
        member_call(mb, &req, notify_reply, NULL);
        req.op = 0;
        req.arg_epoch = 0;
    }
    member_catch_up(mb);
    if (mb->need_ack && co->state.has_pending) {
        req.op = BRIM_OP_EPOCH_PROPOSE;
        req.topo = &co->state.pending;
        member_call(mb, &req, propose_reply,
                    (void *) (uintptr_t) co->state.pending.map.epoch);
    }
}

/* Send EPOCH_COMMIT or EPOCH_ABORT of EPOCH to MB if connected. */
static void
member_notify(struct brim_coord_member *mb, uint32_t op, uint64_t epoch)
{
    struct brim_req req;

    if (mb->peer.state != BRIM_PEER_OPEN) {
        return;
    }
    memset(&req, 0, sizeof(req));
    req.op = op;
    req.epoch = mb->coord->state.committed.map.epoch;
    req.arg_epoch = epoch;
    member_call(mb, &req, notify_reply, NULL);
}

/* ---- changes ---- */

static int
member_active(const struct brim_coord_member *mb)
{
    return !mb->removed && !mb->leaving && mb->m.state != BRIM_MEMBER_DEAD;
}

static int
cmp_member(const void *a, const void *b)
{
    return strcmp(((const struct brim_member *) a)->name,
                  ((const struct brim_member *) b)->name);
}

/* True when the active members are exactly the committed ones. */
static int
same_membership(struct brim_coord *co, uint32_t n, const struct brim_member *m)
{
    const struct brim_topo *t = &co->state.committed;
    uint32_t                i;

    if (n != t->nmembers) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (strcmp(m[i].name, t->members[i].name) != 0
            || strcmp(m[i].addr, t->members[i].addr) != 0
            || m[i].weight_ppm != t->members[i].weight_ppm
            || m[i].incarnation != t->members[i].incarnation)
        {
            return 0;
        }
    }
    return 1;
}

/* NT's map from the committed one; counts of moves in *ARC, *CAP. Pure:
 * changes nothing but NT (PLAN uses it for what-if maps). */
int
brim_coord_place(struct brim_coord *co, struct brim_topo *nt, uint32_t *arc,
                 uint32_t *cap, char *err)
{
    const struct brim_topo *ot = &co->state.committed;
    struct brim_ring        oring, nring;
    uint32_t                P = nt->map.npartitions, i;
    uint64_t               *pos;
    uint8_t                *reason;
    int                     rc;

    *arc = *cap = 0;
    if (nt->nmembers == 0) {
        for (i = 0; i < P; i++) {
            nt->map.owner[i] = BRIM_NODE_NONE;
        }
        return 0;
    }
    pos = brim_malloc((size_t) P * sizeof(*pos));
    reason = brim_malloc(P);
    if (pos == NULL || reason == NULL) {
        brim_free(pos);
        brim_free(reason);
        return BRIM_ENOMEM;
    }
    brim_map_positions(nt->seed, P, pos);
    rc = brim_topo_ring(nt, &nring, 1, err);
    if (rc == 0 && ot->nmembers == 0) {
        rc =
            brim_place_replace(&nring, nt->eps_ppm, pos, P, nt->map.owner, err);
        *arc = P;
    } else if (rc == 0) {
        rc = brim_topo_ring(ot, &oring, 1, err);
        if (rc == 0) {
            rc =
                brim_place_rebalance(&oring, ot->map.owner, &nring, nt->eps_ppm,
                                     pos, P, nt->map.owner, reason, err);
            for (i = 0; rc == 0 && i < P; i++) {
                *arc += reason[i] == BRIM_MOVE_ARC;
                *cap += reason[i] == BRIM_MOVE_CAP;
            }
            brim_ring_destroy(&oring);
        }
    }
    if (rc == 0 || nring.nnodes > 0) {
        brim_ring_destroy(&nring);
    }
    brim_free(pos);
    brim_free(reason);
    return rc;
}

/*
 * The committed members that NT no longer has go to NT->departed (PROTOCOL.md
 * section 9): LEAVING when they asked to leave (they stream what they held
 * to the new owners), DEAD otherwise (their partitions start empty).
 */
static int
list_departed(struct brim_coord *co, struct brim_topo *nt)
{
    const struct brim_topo   *ot = &co->state.committed;
    struct brim_coord_member *mb;
    struct brim_member       *d;
    uint32_t                  i, n = 0;

    for (i = 0; i < ot->nmembers; i++) {
        n += brim_topo_find(nt, ot->members[i].name) < 0;
    }
    if (n == 0) {
        return 0;
    }
    nt->departed = brim_calloc(n, sizeof(*nt->departed));
    if (nt->departed == NULL) {
        return BRIM_ENOMEM;
    }
    for (i = 0; i < ot->nmembers; i++) {
        if (brim_topo_find(nt, ot->members[i].name) >= 0) {
            continue;
        }
        d = &nt->departed[nt->ndeparted++];
        *d = ot->members[i];
        mb = brim_coord_member_find(co, d->name, strlen(d->name));
        d->state = mb != NULL && mb->leaving && mb->m.state != BRIM_MEMBER_DEAD
            ? BRIM_MEMBER_LEAVING
            : BRIM_MEMBER_DEAD;
    }
    return 0;
}

/* Whether MB is a member of the next map: every active member, or, in a
 * change made only for deaths (DEATHS_ONLY: a migration runs, so joins
 * and leaves wait), exactly the committed members that are not dead. */
static int
member_next(struct brim_coord *co, const struct brim_coord_member *mb,
            int deaths_only)
{
    if (!deaths_only) {
        return member_active(mb);
    }
    return !mb->removed && mb->m.state != BRIM_MEMBER_DEAD
        && in_topo(&co->state.committed, mb->m.name);
}

/*
 * Departed members that left in an earlier epoch but may still stream
 * what they held (DEATHS_ONLY: a migration runs) stay listed as LEAVING,
 * so their receivers keep them as the source of partitions in flight
 * rather than completing those empty. Appends to NT->departed.
 */
static int
carry_departed(struct brim_coord *co, struct brim_topo *nt)
{
    const struct brim_topo *ot = &co->state.committed;
    struct brim_member     *d;
    uint32_t                i, j, n;

    n = nt->ndeparted + ot->ndeparted;
    if (ot->ndeparted == 0) {
        return 0;
    }
    d = brim_calloc(n, sizeof(*d));
    if (d == NULL) {
        return BRIM_ENOMEM;
    }
    if (nt->ndeparted > 0) {
        memcpy(d, nt->departed, nt->ndeparted * sizeof(*d));
    }
    n = nt->ndeparted;
    for (i = 0; i < ot->ndeparted; i++) {
        if (ot->departed[i].state != BRIM_MEMBER_LEAVING
            || in_topo(nt, ot->departed[i].name))
        {
            continue;
        }
        for (j = 0; j < n && strcmp(d[j].name, ot->departed[i].name) != 0; j++)
        {
        }
        if (j == n) {
            d[n++] = ot->departed[i];
        }
    }
    brim_free(nt->departed);
    nt->departed = d;
    nt->ndeparted = n;
    return 0;
}

/* Start a change if the membership differs from the committed map. */
static void
change_start(struct brim_coord *co, int deaths_only)
{
    struct brim_coord_settings *s = &co->state.settings;
    struct brim_coord_member   *mb;
    struct brim_topo            nt;
    uint32_t                    n = 0, arc, cap;
    char                        err[BRIM_ERRBUF_LEN] = "";

    co->dirty = 0;
    if (!deaths_only) {
        co->join_since_ms = 0;
    }
    for (mb = co->members; mb != NULL; mb = mb->next) {
        n += member_next(co, mb, deaths_only);
    }
    if (brim_topo_init(&nt, s->cluster_id, s->seed, s->partitions,
                       s->tokens_per_node, s->eps_ppm, co->state.next_epoch)
            != 0
        || (n > 0
            && (nt.members = brim_calloc(n, sizeof(*nt.members))) == NULL))
    {
        brim_topo_destroy(&nt);
        co->dirty = 1;
        return;
    }
    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (member_next(co, mb, deaths_only)) {
            nt.members[nt.nmembers] = mb->m;
            nt.members[nt.nmembers++].state = BRIM_MEMBER_UP;
        }
    }
    if (n > 1) { /* qsort(NULL, 0) is undefined */
        qsort(nt.members, n, sizeof(*nt.members), cmp_member);
    }
    if (same_membership(co, n, nt.members)) {
        brim_topo_destroy(&nt);
        co->dirty = deaths_only; /* the joins and leaves still wait */
        return;
    }
    if (list_departed(co, &nt) != 0
        || (deaths_only && carry_departed(co, &nt) != 0))
    {
        brim_topo_destroy(&nt);
        co->dirty = 1;
        return;
    }
    if (brim_coord_place(co, &nt, &arc, &cap, err) != 0) {
        brim_log_error("placement failed: %s", err);
        brim_topo_destroy(&nt);
        return;
    }
    co->state.pending = nt;
    co->state.has_pending = 1;
    co->state.next_epoch = nt.map.epoch + 1;
    if (n == 0 && co->state.committed.nmembers > 0) {
        brim_log_info("every member left: the cluster stops without moving "
                      "data (the keys it held are dropped)");
    }
    if (brim_coord_save(co) != 0) {
        brim_topo_destroy(&co->state.pending);
        co->state.has_pending = 0;
        co->retry_at_ms = uv_now(co->loop) + 1000;
        co->dirty = 1;
        return;
    }
    brim_log_info("epoch %" PRIu64 " proposed: %" PRIu32 " members, moved "
                  "arc %" PRIu32 " cap %" PRIu32 "%s",
                  nt.map.epoch, n, arc, cap,
                  deaths_only ? " (deaths only: joins and leaves wait "
                                "for the running migration)"
                              : "");
    if (deaths_only) {
        co->dirty = 1; /* the joins and leaves that wait */
    }
    co->pending_arc = arc;
    co->pending_cap = cap;
    co->acks_left = 0;
    co->pending_since_ms = uv_now(co->loop);
    for (mb = co->members; mb != NULL; mb = mb->next) {
        mb->need_ack = !mb->removed && mb->m.state != BRIM_MEMBER_DEAD
            && (member_active(mb) || in_topo(&co->state.committed, mb->m.name));
        co->acks_left += (uint32_t) mb->need_ack;
    }
    if (co->acks_left == 0) {
        change_commit(co);
        return;
    }
    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (mb->need_ack) {
            member_sync(mb);
        }
    }
}

static void
subscribers_answer(struct brim_coord *co, int all)
{
    struct brim_conn       *c;
    struct brim_coord_conn *cc;
    uint64_t                now = uv_now(co->loop);

    for (c = co->srv.conns; c != NULL; c = c->next) {
        cc = c->data;
        if (cc == NULL || cc->sub_deadline == 0
            || (!all && now < cc->sub_deadline
                && co->state.committed.map.epoch <= cc->sub_known))
        {
            continue;
        }
        cc->sub_deadline = 0;
        brim_coord_reply_topo(c, BRIM_OP_SUBSCRIBE, cc->sub_id,
                              &co->state.committed);
        brim_conn_flush(c);
    }
}

/* Whether any member's last heartbeat reported streams still open. */
static int
streams_open(const struct brim_coord *co)
{
    const struct brim_coord_member *mb;

    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (!mb->removed
            && (mb->hb_mig_in_flight > 0 || mb->hb_mig_out_pending > 0)) {
            return 1;
        }
    }
    return 0;
}

/*
 * At the commit of the change from OLD to the committed topology: what the
 * migration that follows starts from (CLUSTER_STATS "migration"). The keys
 * it must move at least are the leavers' plus the joiners' share of the
 * rest, from the members' last heartbeats. CARRY: the last change's
 * streams still run (a death does not wait for them), so its counts go
 * on rather than restart at 0, and its ideal adds to this one's.
 */
static void
change_baseline(struct brim_coord *co, const struct brim_topo *old, int carry)
{
    const struct brim_topo   *t = &co->state.committed;
    struct brim_coord_member *mb;
    uint64_t                  total = 0, left = 0, wjoined = 0, wall = 0;
    int                       before, after;
    double                    carried = carry ? co->last_ideal_keys : 0;

    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (!carry) {
            brim_coord_member_rebase(mb);
        }
        before = brim_topo_find(old, mb->m.name) >= 0;
        after = brim_topo_find(t, mb->m.name) >= 0;
        if (before) {
            total += mb->hb_keys;
            left += after ? 0 : mb->hb_keys;
        }
        wjoined += after && !before ? mb->m.weight_ppm : 0;
        wall += after ? mb->m.weight_ppm : 0;
    }
    co->last_keys_total = total;
    co->last_streams = old->nmembers > 0; /* the first map moves nothing */
    co->last_ideal_keys = carried + (double) left;
    if (wall > 0) {
        /* The joiners' weighted share of the keys that stayed. */
        co->last_ideal_keys +=
            (double) (total - left) * (double) wjoined / (double) wall;
    }
}

static void
change_commit(struct brim_coord *co)
{
    struct brim_coord_member *mb;
    uint64_t                  epoch = co->state.pending.map.epoch;
    struct brim_topo          old = co->state.committed;
    int                       carry = co->last_streams && streams_open(co);

    co->state.committed = co->state.pending;
    memset(&co->state.pending, 0, sizeof(co->state.pending));
    co->state.has_pending = 0;
    if (brim_coord_save(co) != 0) {
        /* Not durable: undo and abort, as if unacknowledged. */
        co->state.pending = co->state.committed;
        co->state.committed = old;
        co->state.has_pending = 1;
        change_abort(co, "the commit could not be persisted");
        return;
    }
    change_baseline(co, &old, carry);
    co->last_commit_ms = uv_now(co->loop);
    brim_topo_destroy(&old);
    co->last_arc = co->pending_arc;
    co->last_cap = co->pending_cap;
    co->totals_lost = 0;
    brim_log_info("epoch %" PRIu64 " committed: %" PRIu32 " members", epoch,
                  co->state.committed.nmembers);
    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (mb->removed) {
            continue;
        }
        member_notify(mb, BRIM_OP_EPOCH_COMMIT, epoch);
        mb->need_ack = 0;
        if (in_topo(&co->state.committed, mb->m.name)) {
            mb->m.state = BRIM_MEMBER_UP;
        } else if (mb->leaving || mb->m.state == BRIM_MEMBER_DEAD) {
            brim_coord_member_remove(mb);
        } else {
            co->dirty = 1; /* joined while this change was pending */
            member_catch_up(mb);
        }
    }
    subscribers_answer(co, 0);
}

static void
change_abort(struct brim_coord *co, const char *why)
{
    struct brim_coord_member *mb;
    uint64_t                  epoch = co->state.pending.map.epoch;

    brim_topo_destroy(&co->state.pending);
    co->state.has_pending = 0;
    (void) brim_coord_save(co);
    brim_log_warn("epoch %" PRIu64 " aborted: %s", epoch, why);
    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (mb->need_ack || in_topo(&co->state.committed, mb->m.name)
            || member_active(mb))
        {
            member_notify(mb, BRIM_OP_EPOCH_ABORT, epoch);
        }
        mb->need_ack = 0;
    }
    co->dirty = 1;
    co->retry_at_ms = uv_now(co->loop) + co->cfg.join_window_ms;
}

/*
 * A join or a leave waits until the last change's migration is over, so a
 * partition is never handed on while its stream still runs (a node that
 * leaves right after joining would otherwise take keys it has not
 * received yet). What runs is what the nodes report in their heartbeats;
 * a coordinator that has just started has not heard them yet and waits
 * for every committed member's first heartbeat at the committed epoch. A
 * death does not wait (brim_coord_tick()): its partitions need live owners now.
 */
int
brim_coord_change_must_wait(struct brim_coord *co, char *why, size_t len)
{
    const struct brim_topo   *t = &co->state.committed;
    struct brim_coord_member *mb;
    uint64_t                  in = 0, out = 0, sig = 0;
    uint32_t                  busy = 0;
    size_t                    n;
    int                       unheard = 0;
    char                      detail[256];

    why[0] = '\0';
    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (mb->removed || mb->m.state == BRIM_MEMBER_DEAD
            || !in_topo(t, mb->m.name)) {
            continue;
        }
        /* A heartbeat without the mig_* fields (not a brim-node's)
         * cannot tell; one is needed all the same. */
        if (co->last_streams
            && ((co->restarted && !mb->hb_heard)
                || (mb->hb_mig_reported && mb->hb_epoch < t->map.epoch)))
        {
            if (unheard++ == 0) {
                snprintf(why, len,
                         "waiting to hear from %s at epoch %" PRIu64
                         " (it may be streaming)",
                         mb->m.name, t->map.epoch);
            }
            continue;
        }
        in += mb->hb_mig_in_flight;
        out += mb->hb_mig_out_pending;
        sig += mb->hb_mig_in_flight + mb->hb_mig_in + mb->hb_mig_skipped;
        if (mb->hb_mig_in_flight > 0 || mb->hb_mig_out_pending > 0) {
            n = strlen(why);
            if (busy++ < 4 && n + 80 < len) {
                snprintf(why + n, len - n,
                         "%s%s %" PRIu64 " in, %" PRIu64 " out",
                         busy == 1 ? "" : "; ", mb->m.name,
                         mb->hb_mig_in_flight, mb->hb_mig_out_pending);
            }
        }
    }
    if (unheard > 0) {
        return 1;
    }
    if (busy == 0) {
        return 0;
    }
    /* Prefix the totals: "migration running: 129 partitions in flight
     * (node4 129 in, 0 out; ...)". */
    snprintf(detail, sizeof(detail), "%s", why);
    snprintf(why, len,
             "migration running: %" PRIu64 " partitions coming "
             "in, %" PRIu64 " going out (%s)",
             in, out, detail);
    if (sig != co->wait_signature) {
        co->wait_signature = sig;
        co->wait_progress_ms = uv_now(co->loop);
    }
    return 1;
}

void
brim_coord_member_gone(struct brim_coord_member *mb)
{
    struct brim_coord *co = mb->coord;
    int                waited;

    if (co->stopping || mb->removed
        || in_topo(&co->state.committed, mb->m.name)) {
        return; /* members: dead-after decides */
    }
    waited = co->state.has_pending && mb->need_ack;
    brim_log_warn("member %s: its connection closed before it joined a "
                  "committed map: dropped",
                  mb->m.name);
    brim_coord_member_remove(mb);
    co->dirty = 1;
    if (waited) {
        change_abort(co, "a joining member went away");
    }
}

/* True when a committed member has been declared dead. */
static int
committed_member_dead(struct brim_coord *co)
{
    const struct brim_topo   *t = &co->state.committed;
    struct brim_coord_member *mb;
    uint32_t                  i;

    for (i = 0; i < t->nmembers; i++) {
        mb = brim_coord_member_find(co, t->members[i].name,
                                    strlen(t->members[i].name));
        if (mb == NULL || mb->m.state == BRIM_MEMBER_DEAD) {
            return 1;
        }
    }
    return 0;
}

/*
 * A change is wanted: start it, unless a migration runs. Then a death
 * still makes an epoch at once, of the deaths alone; joins and leaves
 * wait, and why is logged (at once, then every COORD_WAIT_LOG_MS) and
 * shown in CLUSTER_STATS.
 */
static void
change_maybe_start(struct brim_coord *co, uint64_t now)
{
    char why[256];

    if (!brim_coord_change_must_wait(co, why, sizeof(why))) {
        if (co->wait_why[0] != '\0') {
            brim_log_info("change: the migration is over after %" PRIu64
                          " ms; going on",
                          now - co->wait_since_ms);
        }
        co->wait_why[0] = '\0';
        change_start(co, 0);
        return;
    }
    if (co->wait_why[0] == '\0') {
        co->wait_since_ms = now;
        co->wait_logged_ms = now;
        co->wait_progress_ms = now;
        brim_log_info("change waits: %s", why);
    } else if (now - co->wait_logged_ms >= COORD_WAIT_LOG_MS) {
        co->wait_logged_ms = now;
        if (now - co->wait_progress_ms >= COORD_STALL_MS) {
            brim_log_warn("change waits %" PRIu64 " s: the migration has "
                          "made no progress for %" PRIu64 " s: %s",
                          (now - co->wait_since_ms) / 1000,
                          (now - co->wait_progress_ms) / 1000, why);
        } else {
            brim_log_info("change waits %" PRIu64 " s: %s",
                          (now - co->wait_since_ms) / 1000, why);
        }
    }
    snprintf(co->wait_why, sizeof(co->wait_why), "%s", why);
    if (committed_member_dead(co)) {
        change_start(co, 1);
    }
}

/*
 * DESIGN.md 13: a coordinator that was itself paused (SIGSTOP, a stalled
 * VM, a long fsync) does not count its own pause against the nodes. When
 * the loop clock jumped by more than half of dead-after since the last
 * tick, every member's heartbeat clock and the pending epoch's timeout
 * start again from now: the nodes are heard again before any is declared
 * dead (once, the whole cluster was declared dead in one millisecond).
 */
static void
coord_tick_gap(struct brim_coord *co, uint64_t now)
{
    struct brim_coord_member *mb;
    uint64_t                  gap = now - co->last_tick_ms;

    if (gap > co->state.settings.dead_after_ms / 2) {
        brim_log_warn("this coordinator did not run for %" PRIu64 " ms "
                      "(paused?): hearing the nodes again before any is "
                      "declared dead",
                      gap);
        for (mb = co->members; mb != NULL; mb = mb->next) {
            mb->last_hb_ms = now;
        }
        co->pending_since_ms = now;
    }
    co->last_tick_ms = now;
}

void
brim_coord_tick(struct brim_coord *co)
{
    struct brim_coord_member        **pp, *mb;
    char                              why[256];
    uint64_t                          now = uv_now(co->loop);
    const struct brim_coord_settings *s = &co->state.settings;

    if (!co->leading) {
        return; /* a follower: no members, no changes */
    }
    coord_tick_gap(co, now);
    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (!mb->removed && mb->m.state != BRIM_MEMBER_DEAD
            && now - mb->last_hb_ms > s->dead_after_ms
            && now >= co->deaths_after_ms)
        {
            brim_log_warn("member %s: no heartbeat for %" PRIu64 " ms: dead",
                          mb->m.name, now - mb->last_hb_ms);
            mb->m.state = BRIM_MEMBER_DEAD;
            co->dirty = 1;
            co->retry_at_ms = 0;
            if (co->state.has_pending && mb->need_ack) {
                change_abort(co, "a member died");
                co->retry_at_ms = 0;
            }
            if (!in_topo(&co->state.committed, mb->m.name)) {
                brim_coord_member_remove(mb);
            }
        }
        if ((mb->need_ack || mb->owe_abort != 0)
            && mb->peer.state == BRIM_PEER_IDLE) {
            member_sync(mb);
        }
    }
    if (co->state.has_pending
        && now - co->pending_since_ms >= s->pending_timeout_ms)
    {
        change_abort(co, "not acknowledged within pending-timeout-ms");
    }
    if (!co->state.has_pending && now >= co->retry_at_ms
        && (co->dirty
            || (co->join_since_ms != 0
                && now - co->join_since_ms >= co->cfg.join_window_ms)))
    {
        change_maybe_start(co, now);
    } else if (!co->state.has_pending && co->wait_why[0] != '\0'
               && !brim_coord_change_must_wait(co, why, sizeof(why)))
    {
        co->wait_why[0] = '\0'; /* nothing waits any more */
    }
    subscribers_answer(co, 0);
    /* Free removed members once their connection to us is idle. */
    for (pp = &co->members; (mb = *pp) != NULL;) {
        if (mb->removed && mb->peer.state == BRIM_PEER_OPEN
            && mb->peer.ncalls == 0) {
            brim_peer_close(&mb->peer);
        }
        if (mb->removed && mb->peer.state == BRIM_PEER_IDLE) {
            *pp = mb->next;
            brim_peer_destroy(&mb->peer);
            brim_free(mb);
            continue;
        }
        pp = &mb->next;
    }
}
