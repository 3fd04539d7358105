/*
 * server/node/coordlink.c - a cluster node's side of its coordinator
 * connection (PROTOCOL.md 10.1): connect, HELLO as role node, JOIN with
 * name, address, weight and incarnation, adopt the committed topology the
 * reply carries, then HEARTBEAT with a few stats every interval. A lost
 * connection is retried with backoff and the node joins again under the
 * same incarnation; a DENIED heartbeat means this incarnation is fenced,
 * and the node stops serving and exits non-zero (a restarted process is
 * a new incarnation and joins afresh).
 *
 * SIGTERM on a cluster node is a graceful leave (DESIGN.md section 5):
 * brim_node_coord_leave() sends LEAVE for this node's own name on this
 * connection, waits for a committed epoch without it, then drains: it
 * lingers COORD_LINGER_MS answering MOVED and exits 0 once every partition
 * it streams out is handed over. None of these waits has a clock: a leave
 * asked while the coordinator cannot be reached, or while the coordinator
 * holds it behind a running migration, goes on until it is done, and the
 * drain until each receiver holds its partitions or has been declared
 * dead (issue 10; DESIGN.md 7.6). A second SIGTERM (or SIGQUIT) exits at
 * once. The last member is refused (its keys would be lost): the node
 * logs so and keeps serving.
 */
#include "server/node/coordlink.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/defs.h"
#include "proto/frame.h"
#include "server/log.h"
#include "server/node/change.h"
#include "server/node/epoch.h"
#include "server/node/flush.h"
#include "server/node/lease.h"
#include "server/node/migrate.h"

#define COORD_HEARTBEAT_MS 500    /* default interval */
#define COORD_EARLY_HB_MS 100     /* early heartbeats: at most one per */
#define COORD_BACKOFF_MIN_MS 100  /* first reconnect delay */
#define COORD_BACKOFF_MAX_MS 5000 /* longest reconnect delay */

#define COORD_LINGER_MS 500      /* answer MOVED this long, then exit */
#define COORD_LEAVE_POLL_MS 20   /* how often the leave is checked */
#define COORD_LEAVE_LOG_MS 10000 /* progress of a long leave, logged */
/* How often a node that left, and still streams, fetches the committed
 * map: the coordinator no longer sends it epochs. */
#define COORD_LINGER_FETCH_MS 500
#define COORD_HB_STATS 11 /* stats a HEARTBEAT carries */

static void coord_connect(struct brim_node *node);
static int  leave_removed(struct brim_node *node);
static int  leave_proposed(const struct brim_node *node);
static void leave_begin(struct brim_node *node);
static void leave_send(struct brim_node *node);
static void leave_linger(struct brim_node *node, const char *why);

/* Encode REQ and send it on the coordinator connection; CB gets the reply
 * body. Returns 0 or a BRIM_E* code (the connection is then closed). */
static int
coord_send(struct brim_node *node, struct brim_req *req, brim_peer_reply_cb cb)
{
    struct brim_buf buf;
    int             rc;

    brim_buf_init(&buf);
    req->request_id = ++node->coordlink.next_id;
    req->epoch = node->topo.committed.map.epoch;
    rc = brim_wire_encode_req(&buf, req);
    if (rc == 0) {
        rc = brim_peer_call(&node->coordlink.peer, &buf, cb, node);
    }
    brim_buf_destroy(&buf);
    if (rc != 0) {
        brim_log_warn("coordinator %s: cannot send %s: %s",
                      node->coordlink.addr, brim_op_name(req->op),
                      brim_strerror(rc));
        brim_peer_close(&node->coordlink.peer);
    }
    return rc;
}

/*
 * Put --coordinator's next entry in node->coordlink.addr (a list of one
 * always gives the same). Entries were checked when parsed (main.c).
 */
static void
coord_pick_next(struct brim_node *node)
{
    const char *p = node->cfg.coordinator, *comma;
    uint32_t    i;
    size_t      n;

    for (i = 0; i < node->coordlink.next; i++) {
        comma = strchr(p, ',');
        if (comma == NULL) {
            p = node->cfg.coordinator; /* past the last: wrap */
            node->coordlink.next = 0;
            break;
        }
        p = comma + 1;
    }
    comma = strchr(p, ',');
    n = comma != NULL ? (size_t) (comma - p) : strlen(p);
    n = BRIM_MIN(n, sizeof(node->coordlink.addr) - 1);
    memcpy(node->coordlink.addr, p, n);
    node->coordlink.addr[n] = '\0';
    node->coordlink.next = comma != NULL ? node->coordlink.next + 1 : 0;
}

/*
 * NOTLEADER (PROTOCOL.md 10.5): this coordinator does not lead. Its
 * message names the leader (or is empty when it knows none): connect
 * there next, or to the next entry of --coordinator.
 */
static void
coord_follow(struct brim_node *node, const struct brim_rep *rep)
{
    char addr[BRIM_ADDR_MAX + 1];
    char errbuf[BRIM_ERRBUF_LEN];

    if (rep->message_len > 0 && rep->message_len <= BRIM_ADDR_MAX) {
        memcpy(addr, rep->message, rep->message_len);
        addr[rep->message_len] = '\0';
    } else {
        addr[0] = '\0';
    }
    if (addr[0] != '\0' && brim_addr_check(addr, 1, errbuf) == 0) {
        brim_log_info("coordinator %s does not lead: following the leader "
                      "%s",
                      node->coordlink.addr, addr);
        memcpy(node->coordlink.addr, addr, strlen(addr) + 1);
        node->coordlink.followed = 1;
    } else {
        brim_log_info("coordinator %s does not lead and knows no leader: "
                      "trying the next one",
                      node->coordlink.addr);
    }
    node->coordlink.backoff_ms = COORD_BACKOFF_MIN_MS;
    brim_peer_close(&node->coordlink.peer);
}

/* Decode the reply BODY to OP into *REP, closing the connection when it is
 * malformed. A NOTLEADER reply is handled here (the connection moves to
 * the leader) and returned as BRIM_ENOTLEADER. Returns 0 or a BRIM_E*
 * code. */
static int
coord_parse(struct brim_node *node, uint32_t op, const char *body, size_t len,
            struct brim_rep *rep)
{
    char errbuf[BRIM_ERRBUF_LEN];
    int  rc;

    errbuf[0] = '\0';
    rc = brim_wire_parse_rep(body, len, op, &node->coord_limits, &node->zone,
                             rep, errbuf);
    if (rc != 0) {
        brim_log_warn("coordinator %s: bad %s reply: %s; reconnecting",
                      node->coordlink.addr, brim_op_name(op), errbuf);
        brim_peer_close(&node->coordlink.peer);
        return rc;
    }
    if (rep->status == BRIM_ENOTLEADER) {
        coord_follow(node, rep);
        return BRIM_ENOTLEADER;
    }
    return 0;
}

/* The status text of an error reply, for logs. */
static const char *
coord_why(const struct brim_rep *rep, char *buf, size_t len)
{
    snprintf(buf, len, "%s: %.*s", brim_err_name(rep->status),
             (int) BRIM_MIN(rep->message_len, 200),
             rep->message != NULL ? rep->message : "");
    return buf;
}

/* Exit non-zero once the loop winds down: the node cannot go on. */
/* Exit CODE (1, or BRIM_NODE_EXIT_SECRET) once the loop winds down: the
 * node cannot go on. */
static void
coord_give_up(struct brim_node *node, int code)
{
    node->topo.fenced = 1; /* data ops get RETRY meanwhile */
    node->exit_code = code;
    node->stop(node);
}

static void
coord_map_rep(struct brim_peer *p, int status, const char *body, size_t len,
              void *arg)
{
    struct brim_node *node = arg;
    struct brim_rep   rep;
    char              errbuf[BRIM_ERRBUF_LEN];

    node->coordlink.fetch_out = 0;
    if (status != 0
        || coord_parse(node, BRIM_OP_MAP_FETCH, body, len, &rep) != 0
        || rep.status != 0)
    {
        return;
    }
    if (brim_node_adopt(node, rep.obj, errbuf) != 0) {
        brim_log_warn("coordinator %s: fetched map refused: %s",
                      node->coordlink.addr, errbuf);
    }
}

/* Fetch the committed map when the coordinator knows a newer epoch. */
void
brim_node_coord_fetch(struct brim_node *node)
{
    struct brim_req req;

    if (node->coordlink.peer.state != BRIM_PEER_OPEN || !node->coordlink.joined
        || node->coordlink.fetch_out)
    {
        return; /* one fetch at a time */
    }
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_MAP_FETCH;
    node->coordlink.fetch_out = coord_send(node, &req, coord_map_rep) == 0;
}

static void
coord_heartbeat_rep(struct brim_peer *p, int status, const char *body,
                    size_t len, void *arg)
{
    struct brim_node *node = arg;
    struct brim_rep   rep;
    char              why[BRIM_ERRBUF_LEN];
    uint64_t          sent_ms = node->coordlink.hb_sent_ms;

    node->coordlink.hb_out = 0;
    if (status != 0
        || coord_parse(node, BRIM_OP_HEARTBEAT, body, len, &rep) != 0) {
        return;
    }
    if (rep.status == BRIM_EDENIED && node->coordlink.leave != BRIM_LEAVE_NONE
        && node->coordlink.leave != BRIM_LEAVE_DENIED)
    {
        /* Removed by the epoch that we may not have seen committed yet. */
        leave_linger(node, "the coordinator no longer knows this node");
        return;
    }
    if (rep.status == BRIM_EDENIED && leave_removed(node)) {
        return; /* an admin's leave: draining */
    }
    if (rep.status == BRIM_EDENIED) {
        brim_log_error("coordinator %s fenced this node (incarnation "
                       "%016" PRIx64 "): %s; exiting",
                       node->coordlink.addr, node->incarnation,
                       coord_why(&rep, why, sizeof(why)));
        coord_give_up(node, 1);
        return;
    }
    if (rep.status != 0) {
        brim_log_warn("coordinator %s: heartbeat: %s", node->coordlink.addr,
                      coord_why(&rep, why, sizeof(why)));
        return;
    }
    if (brim_node_term_check(node, rep.term, node->coordlink.addr, why) != 0) {
        /* Acknowledged by a deposed leader (PROTOCOL.md 10.6): no lease
         * from it; the leader is another of the list. */
        brim_log_warn("coordinator %s acknowledged a heartbeat: %s; not "
                      "renewing the lease, trying the next",
                      node->coordlink.addr, why);
        node->coordlink.followed = 0;
        node->coordlink.backoff_ms = COORD_BACKOFF_MIN_MS;
        brim_peer_close(&node->coordlink.peer);
        return;
    }
    if (rep.lease_ms > 0) {
        /* Three heartbeats per lease, so one lost one does not matter. */
        node->coordlink.heartbeat_ms =
            BRIM_MAX(50u, BRIM_MIN(COORD_HEARTBEAT_MS, rep.lease_ms / 3));
        brim_node_lease_heartbeat(node, sent_ms, rep.lease_ms);
        node->coordlink.lease_ms = rep.lease_ms;
    }
    if (rep.flush_ms != 0) {
        /* The cluster's last flush mark: one this node missed (its FLUSH
         * was lost, or it was away) is applied now or when it comes. */
        brim_node_flush_learn(node, rep.flush_ms, 0);
    }
    if (rep.epoch > node->topo.committed.map.epoch
        && !(node->topo.has_pending
             && rep.epoch <= node->topo.pending.map.epoch))
    {
        brim_node_coord_fetch(node);
    }
}

/* Build HEARTBEAT's stats map in KV (COORD_HB_STATS pairs) and *MAP. */
static void
coord_stats(struct brim_node *node, msgpack_object_kv *kv, msgpack_object *map)
{
    static const char        *names[COORD_HB_STATS] = {"keys",
                                                       "bytes",
                                                       "partitions",
                                                       "requests_per_sec",
                                                       "mig_in",
                                                       "mig_in_flight",
                                                       "mig_out_pending",
                                                       "mig_in_arc",
                                                       "mig_in_cap",
                                                       "mig_in_unfinished",
                                                       "mig_in_skipped"};
    struct brim_store_stats   ss;
    struct brim_migrate_stats ms;
    uint64_t                  v[COORD_HB_STATS];
    uint32_t                  i;

    brim_store_get_stats(node->store, &ss);
    brim_migrate_get_stats(node, &ms);
    v[0] = ss.items;
    v[1] = ss.item_bytes;
    v[2] = brim_node_owned(node);
    v[3] = (uint64_t) (node->stats.requests_per_sec + 0.5);
    v[4] = ms.keys_in; /* kept: mig_in_arc + mig_in_cap */
    v[5] = ms.partitions_in_flight;
    v[6] = ms.partitions_out_pending;
    v[7] = ms.keys_in_arc;
    v[8] = ms.keys_in_cap;
    v[9] = ms.partitions_in_unfinished;
    v[10] = ms.entries_skipped;
    for (i = 0; i < COORD_HB_STATS; i++) {
        kv[i].key.type = MSGPACK_OBJECT_STR;
        kv[i].key.via.str.ptr = names[i];
        kv[i].key.via.str.size = (uint32_t) strlen(names[i]);
        kv[i].val.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
        kv[i].val.via.u64 = v[i];
    }
    map->type = MSGPACK_OBJECT_MAP;
    map->via.map.size = COORD_HB_STATS;
    map->via.map.ptr = kv;
}

/*
 * How late this heartbeat goes out against the time it was due: a loop
 * that a long callback stalled runs its timers late (a big partition's
 * stream must not do that: issue 13). Kept as the maximum and a count of
 * heartbeats later than a tenth of the lease.
 */
static void
heartbeat_lateness(struct brim_node *node)
{
    struct brim_node_coordlink *cl = &node->coordlink;
    uint64_t                    now = uv_now(node->loop), late;

    if (cl->hb_due_ms == 0 || now <= cl->hb_due_ms) {
        return;
    }
    late = now - cl->hb_due_ms;
    cl->hb_late_max_ms = BRIM_MAX(cl->hb_late_max_ms, late);
    if (cl->lease_ms > 0 && late > cl->lease_ms / 10) {
        cl->hb_late++;
    }
}

static void
coord_timer_cb(uv_timer_t *t)
{
    struct brim_node *node =
        BRIM_CONTAINER_OF(t, struct brim_node, coordlink.timer);
    struct brim_req   req;
    msgpack_object_kv kv[COORD_HB_STATS];
    msgpack_object    map;

    if (node->coordlink.peer.state == BRIM_PEER_IDLE) {
        coord_connect(node); /* the backoff delay is over */
        return;
    }
    if (node->coordlink.peer.state != BRIM_PEER_OPEN || !node->coordlink.joined)
    {
        return;
    }
    if (leave_removed(node)) {
        return; /* left: no more heartbeats */
    }
    heartbeat_lateness(node);
    coord_stats(node, kv, &map);
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_HEARTBEAT;
    req.name = node->cfg.name;
    req.name_len = strlen(node->cfg.name);
    req.hello.incarnation = node->incarnation;
    req.obj = &map;
    if (!node->coordlink.hb_out) {
        /* The lease counts from the oldest unanswered heartbeat. */
        node->coordlink.hb_sent_ms = uv_now(node->loop);
        node->coordlink.asked_ms = node->coordlink.hb_sent_ms;
    }
    if (coord_send(node, &req, coord_heartbeat_rep) == 0) {
        node->coordlink.hb_out = 1;
        node->coordlink.hb_due_ms =
            uv_now(node->loop) + node->coordlink.heartbeat_ms;
        uv_timer_start(&node->coordlink.timer, coord_timer_cb,
                       node->coordlink.heartbeat_ms, 0);
    }
}

static void
coord_join_rep(struct brim_peer *p, int status, const char *body, size_t len,
               void *arg)
{
    struct brim_node *node = arg;
    struct brim_rep   rep;
    char              why[256], errbuf[BRIM_ERRBUF_LEN];

    if (status != 0 || coord_parse(node, BRIM_OP_JOIN, body, len, &rep) != 0) {
        return;
    }
    if (rep.status == BRIM_EUNKNOWNOP) {
        /* A brim-node (or anything else) answers there, not brim-coord:
         * heartbeating it forever would help nobody. */
        brim_log_error("%s does not serve JOIN: it is not a brim-coord "
                       "(check --coordinator)",
                       node->coordlink.addr);
        coord_give_up(node, 1);
        return;
    }
    if (rep.status == BRIM_EDENIED && !node->coordlink.accepted) {
        /* JOIN needs a proven cluster secret (PROTOCOL.md 12): this node
         * has none, so it was never accepted: a configuration error. */
        brim_log_error("coordinator %s refused the join of %s: %s; the "
                       "coordinator requires the cluster secret: start this "
                       "node with --secret-file FILE (the coordinator's "
                       "file); exiting with status %d",
                       node->coordlink.addr, node->cfg.name,
                       coord_why(&rep, why, sizeof(why)),
                       BRIM_NODE_EXIT_SECRET);
        coord_give_up(node, BRIM_NODE_EXIT_SECRET);
        return;
    }
    if (rep.status == BRIM_EDENIED && node->topo.self >= 0
        && !node->topo.fenced) {
        /* A member of its own committed map, refused because a later
         * committed epoch removed it (PROTOCOL.md 10.3): what it must
         * hand over is in that epoch, so it lingers, fetching the map,
         * and exits once that is done, as a leaver does. */
        brim_log_warn("coordinator %s refused the join of %s: %s; a later "
                      "epoch removed this node: lingering",
                      node->coordlink.addr, node->cfg.name,
                      coord_why(&rep, why, sizeof(why)));
        node->coordlink.joined = 1;
        leave_linger(node, "the coordinator committed an epoch without it");
        brim_node_coord_fetch(node);
        return;
    }
    if (rep.status == BRIM_EEXISTS || rep.status == BRIM_EINVAL
        || rep.status == BRIM_EDENIED)
    {
        brim_log_error("coordinator %s refused the join of %s: %s",
                       node->coordlink.addr, node->cfg.name,
                       coord_why(&rep, why, sizeof(why)));
        coord_give_up(node, 1);
        return;
    }
    if (rep.status == 0 && brim_node_adopt(node, rep.obj, errbuf) != 0) {
        brim_log_error("coordinator %s: the map in JOIN's reply is refused: "
                       "%s",
                       node->coordlink.addr, errbuf);
        coord_give_up(node, 1);
        return;
    }
    if (rep.status == 0 && rep.flush_ms != 0) {
        /* A joiner honours a flush_all made before it came: a mark past
         * is applied now (to an empty store, or one that missed it), a
         * mark to come waits (docs/memcached.md, "flush_all"). */
        brim_node_flush_learn(node, rep.flush_ms, 0);
    }
    /* OK, or BUSY: queued behind a change in progress; heartbeat either
     * way, and the coordinator proposes the epoch that adds us. */
    brim_log_info("joined via coordinator %s%s (epoch %" PRIu64 ")",
                  node->coordlink.addr, rep.status == 0 ? "" : " (queued)",
                  node->topo.committed.map.epoch);
    node->coordlink.joined = 1;
    node->coordlink.accepted = 1;
    node->coordlink.backoff_ms = COORD_BACKOFF_MIN_MS;
    /* A heartbeat at once: its reply gives the first lease. */
    node->coordlink.hb_due_ms = 0;
    uv_timer_start(&node->coordlink.timer, coord_timer_cb, 0, 0);
}

/* The address we serve on, as the coordinator should give it to others:
 * the --listen address with the port we actually bound. */
static void
coord_self_addr(struct brim_node *node, char *out, size_t len)
{
    const char *colon = strrchr(node->cfg.listen, ':');
    int         host_len = colon != NULL ? (int) (colon - node->cfg.listen) : 0;

    snprintf(out, len, "%.*s:%d", host_len, node->cfg.listen,
             brim_server_port(&node->srv));
}

/* HELLO (and AUTH) done by the peer: ask to join. */
static void
coord_join(struct brim_node *node)
{
    struct brim_req req;
    char            addr[BRIM_ADDR_MAX + 1];

    coord_self_addr(node, addr, sizeof(addr));
    node->coordlink.asked_ms = uv_now(node->loop);
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_JOIN;
    req.name = node->cfg.name;
    req.name_len = strlen(node->cfg.name);
    req.addr = addr;
    req.addr_len = strlen(addr);
    req.weight_ppm = node->cfg.weight_ppm;
    req.hello.incarnation = node->incarnation;
    /* A member of its committed map says so: a coordinator that has
     * committed an epoch without it since (it restarted before this node
     * heard of its leave) refuses it, rather than take it back in. */
    req.arg_epoch = node->topo.self >= 0 ? node->topo.committed.map.epoch : 0;
    coord_send(node, &req, coord_join_rep);
}

static void
coord_connect_cb(struct brim_peer *p, int status)
{
    struct brim_node *node = p->data;

    if (status != 0 && p->hs_failed_op == BRIM_OP_HELLO
        && -status <= BRIM_STATUS_WIRE_MAX)
    {
        brim_log_error("coordinator %s: %s", node->coordlink.addr, p->hs_error);
        coord_give_up(node, 1); /* another cluster, another version */
        return;
    }
    if (status != 0 && p->hs_failed_op == BRIM_OP_AUTH
        && !node->coordlink.accepted) {
        /* Never accepted by a coordinator: the secret file is wrong (or
         * this address is not our coordinator's), a configuration error
         * to say and stop on (PROTOCOL.md 12.2). */
        brim_log_error("coordinator %s: the cluster secret was refused "
                       "(%s): this node's --secret-file %s is not the "
                       "coordinator's, or %s is not this cluster's "
                       "coordinator; exiting with status %d",
                       node->coordlink.addr, p->hs_error, node->cfg.secret_file,
                       node->coordlink.addr, BRIM_NODE_EXIT_SECRET);
        coord_give_up(node, BRIM_NODE_EXIT_SECRET);
        return;
    }
    if (status != 0 && p->hs_failed_op == BRIM_OP_AUTH) {
        /* Accepted before: retried with backoff. An impostor cannot make
         * us exit, and the real coordinator may come back on this
         * address (auth_out_failures counts the refusals). */
        brim_log_warn("coordinator %s: AUTH failed: %s; retrying (this "
                      "node was accepted before: an impostor, or a "
                      "coordinator whose secret changed)",
                      node->coordlink.addr, p->hs_error);
        return;
    }
    if (status != 0) {
        brim_log_info("coordinator %s: connect: %s%s%s", node->coordlink.addr,
                      brim_strerror(status), p->hs_error[0] != '\0' ? ": " : "",
                      p->hs_error);
        return; /* the close callback retries */
    }
    brim_log_info("connected to coordinator %s%s", node->coordlink.addr,
                  node->guard.secret != NULL ? " (secret proven both ways)"
                                             : "");
    if (node->coordlink.leave == BRIM_LEAVE_NONE && leave_removed(node)) {
        /* An admin's leave committed and this node has not lingered yet
         * (the coordinator went between the commit and the heartbeat
         * that tells it): a JOIN would add it back, and the partitions
         * streamed to it would go when it exits. The connection serves
         * the linger's map fetches. */
        node->coordlink.joined = 1;
        return;
    }
    if (node->coordlink.leave == BRIM_LEAVE_NONE && leave_proposed(node)) {
        /* An admin's leave is pending: this connection may be a new
         * coordinator's, which committed it (the heartbeat below is
         * DENIED, and the node lingers) or aborted it (then LEAVE asks
         * it again, as the operator did). Never a JOIN. */
        brim_log_info("reconnected while the pending epoch %" PRIu64
                      " removes this node: leaving, not joining",
                      node->topo.pending.map.epoch);
        leave_begin(node);
    }
    if (node->coordlink.leave == BRIM_LEAVE_WANTED
        || node->coordlink.leave == BRIM_LEAVE_ASKED
        || node->coordlink.leave == BRIM_LEAVE_WAITING)
    {
        /* Leaving: a JOIN could add this node back once its leave has
         * committed. A heartbeat makes this connection the member's (or
         * is DENIED when it is gone already), then LEAVE again, in that
         * order on the wire: a coordinator that restarted meanwhile has
         * forgotten the leave, and asking twice is harmless. */
        node->coordlink.joined = 1;
        coord_timer_cb(&node->coordlink.timer);
        leave_send(node);
        return;
    }
    coord_join(node);
}

/*
 * The longest reconnect delay: COORD_BACKOFF_MAX_MS, or half the lease
 * once the coordinator has named one, so that a restarted coordinator
 * hears this node well within dead-after (twice the lease).
 */
static uint32_t
coord_backoff_max(const struct brim_node *node)
{
    uint32_t lease = node->lease.length_ms;

    if (lease == 0) {
        return COORD_BACKOFF_MAX_MS;
    }
    return BRIM_MAX(COORD_BACKOFF_MIN_MS,
                    BRIM_MIN(COORD_BACKOFF_MAX_MS, lease / 2));
}

static void
coord_close_cb(struct brim_peer *p, int status)
{
    struct brim_node *node = p->data;
    char              lost[BRIM_ADDR_MAX + 1];

    node->coordlink.joined = 0;
    if (node->stopping) {
        return;
    }
    if (node->coordlink.leave == BRIM_LEAVE_LINGER) {
        /* Out of the map already: only the drain is left. */
        return;
    }
    brim_log_info("coordinator %s: connection closed (%s); retrying in "
                  "%u ms",
                  node->coordlink.addr, brim_strerror(status),
                  node->coordlink.backoff_ms);
    node->coordlink.hb_due_ms = 0; /* no heartbeat is due while down */
    if (!node->coordlink.followed) {
        /* Lost: the next of the list that is not the one just lost. */
        snprintf(lost, sizeof(lost), "%s", node->coordlink.addr);
        coord_pick_next(node);
        if (strcmp(lost, node->coordlink.addr) == 0) {
            coord_pick_next(node);
        }
    }
    node->coordlink.followed = 0;
    uv_timer_start(&node->coordlink.timer, coord_timer_cb,
                   node->coordlink.backoff_ms, 0);
    node->coordlink.backoff_ms =
        BRIM_MIN(2 * node->coordlink.backoff_ms, coord_backoff_max(node));
}

static void
coord_connect(struct brim_node *node)
{
    char errbuf[BRIM_ERRBUF_LEN];

    node->coordlink.asked_ms = uv_now(node->loop);
    brim_node_peer_hello(node, &node->coordlink.peer);
    if (brim_peer_connect(&node->coordlink.peer, node->coordlink.addr, errbuf)
        == BRIM_EINVAL)
    {
        brim_log_error("coordinator: %s", errbuf);
        coord_give_up(node, 1);
    }
}

/*
 * With several coordinators (etcd mode): one that leaves a connect, a
 * handshake, a JOIN or a heartbeat unanswered for half a lease (1 s
 * before the first lease) is given up for the next of the list, even on
 * an open connection: a leader that was paused, or cut off, is replaced
 * at etcd while its connections stay open, and a node that waited on it
 * would never be heard by the new leader (issue 15 item 4).
 */
static void
coord_watch_cb(uv_timer_t *t)
{
    struct brim_node *node =
        BRIM_CONTAINER_OF(t, struct brim_node, coordlink.watch);
    struct brim_node_coordlink *cl = &node->coordlink;
    uint64_t                    now = uv_now(node->loop), limit;

    limit = cl->lease_ms > 0 ? cl->lease_ms / 2 : 1000;
    if (cl->peer.state == BRIM_PEER_IDLE || cl->leave == BRIM_LEAVE_LINGER
        || (cl->peer.state == BRIM_PEER_OPEN && cl->joined && !cl->hb_out)
        || now - cl->asked_ms <= limit)
    {
        return;
    }
    brim_log_warn("coordinator %s has not answered for %" PRIu64 " ms: "
                  "trying the next",
                  cl->addr, now - cl->asked_ms);
    cl->followed = 0;
    cl->backoff_ms = COORD_BACKOFF_MIN_MS;
    brim_peer_close(&cl->peer);
}

/*
 * A migration at this node just ended (node->migration_idle): heartbeat
 * now rather than up to an interval later, so the coordinator sees the
 * change complete (brimctl leave --wait, a join held behind it) as soon as
 * the last receiver has it. At most one early heartbeat per
 * COORD_EARLY_HB_MS: a receiver whose partitions arrive one after another
 * is idle between them.
 */
static void
coord_migration_idle(struct brim_node *node)
{
    struct brim_node_coordlink *cl = &node->coordlink;
    uint64_t                    now = uv_now(node->loop), at = now;

    if (cl->peer.state != BRIM_PEER_OPEN || !cl->joined || node->stopping) {
        return;
    }
    if (cl->hb_early_ms != 0 && now - cl->hb_early_ms < COORD_EARLY_HB_MS) {
        at = cl->hb_early_ms + COORD_EARLY_HB_MS; /* the earliest allowed */
    }
    if (cl->hb_due_ms != 0 && cl->hb_due_ms <= at) {
        return; /* the next one goes out soon enough */
    }
    cl->hb_early_ms = at;
    cl->hb_early++;
    cl->hb_due_ms = at; /* not late: it goes out before it was due */
    uv_timer_start(&cl->timer, coord_timer_cb, at - now, 0);
}

void
brim_node_coord_start(struct brim_node *node)
{
    brim_peer_init(&node->coordlink.peer, node->loop,
                   node->coord_limits.max_frame_bytes, coord_connect_cb,
                   coord_close_cb, node);
    uv_timer_init(node->loop, &node->coordlink.timer);
    node->coordlink.heartbeat_ms = COORD_HEARTBEAT_MS;
    node->coordlink.backoff_ms = COORD_BACKOFF_MIN_MS;
    node->migration_idle = coord_migration_idle;
    coord_pick_next(node);
    coord_connect(node);
    if (strchr(node->cfg.coordinator, ',') != NULL) {
        uv_timer_init(node->loop, &node->coordlink.watch);
        uv_timer_start(&node->coordlink.watch, coord_watch_cb, 100, 100);
        node->coordlink.watch_init = 1;
    }
}

void
brim_node_coord_stop(struct brim_node *node)
{
    node->migration_idle = NULL;
    brim_peer_close(&node->coordlink.peer);
    uv_close((uv_handle_t *) &node->coordlink.timer, NULL);
    if (node->coordlink.watch_init) {
        uv_close((uv_handle_t *) &node->coordlink.watch, NULL);
        node->coordlink.watch_init = 0;
    }
    if (node->coordlink.leave_timer_init) {
        uv_close((uv_handle_t *) &node->coordlink.leave_timer, NULL);
        node->coordlink.leave_timer_init = 0;
    }
}

/* ---- graceful leave (SIGTERM) ---- */

static void
leave_stop(struct brim_node *node, int code)
{
    node->exit_code = code;
    node->stop(node);
}

static void
leave_timer_need(struct brim_node *node)
{
    if (!node->coordlink.leave_timer_init) {
        uv_timer_init(node->loop, &node->coordlink.leave_timer);
        node->coordlink.leave_timer.data = node;
        node->coordlink.leave_timer_init = 1;
    }
}

static void leave_timer_cb(uv_timer_t *t);

/*
 * Take the partitions dropped so far as the leave's base, once: a leave
 * says it lost keys (and exits 1) only for streams dropped since it
 * began, not for one an earlier change dropped when its receiver died
 * (a fresh tester saw a clean leave exit 1 for six partitions dropped by
 * an earlier join).
 */
static void
leave_dropped_base(struct brim_node *node)
{
    struct brim_migrate_stats ms;

    if (!node->coordlink.leave_dropped_set) {
        brim_migrate_get_stats(node, &ms);
        node->coordlink.leave_dropped0 = ms.partitions_out_dropped;
        node->coordlink.leave_dropped_set = 1;
    }
}

static void
leave_linger(struct brim_node *node, const char *why)
{
    if (node->coordlink.leave == BRIM_LEAVE_LINGER) {
        return;
    }
    leave_dropped_base(node);
    brim_log_info("left the cluster (%s); answering MOVED for %u ms, then "
                  "exiting once every partition is handed over",
                  why, COORD_LINGER_MS);
    node->coordlink.leave = BRIM_LEAVE_LINGER;
    node->coordlink.linger_until = uv_now(node->loop) + COORD_LINGER_MS;
    node->coordlink.leave_logged_ms = uv_now(node->loop);
    leave_timer_need(node);
    uv_timer_start(&node->coordlink.leave_timer, leave_timer_cb,
                   COORD_LEAVE_POLL_MS, COORD_LEAVE_POLL_MS);
}

static void
leave_timer_cb(uv_timer_t *t)
{
    struct brim_node         *node = t->data;
    struct brim_migrate_stats ms;
    uint64_t                  now = uv_now(node->loop);
    char                      why[64];
    int                       log_now;

    if (node->stopping) {
        return;
    }
    log_now = now - node->coordlink.leave_logged_ms >= COORD_LEAVE_LOG_MS;
    if (log_now) {
        node->coordlink.leave_logged_ms = now;
    }
    if (node->coordlink.leave == BRIM_LEAVE_LINGER) {
        /* DESIGN.md section 7 step 5: a leaving node exits only after its
         * last partition has been handed over. A receiver that dies ends
         * its streams (the next epoch says so), so this always ends. */
        brim_migrate_get_stats(node, &ms);
        if (node->topo.self >= 0) {
            /* Told it is gone (a DENIED heartbeat) before it committed
             * the epoch without it: what it must stream is in that epoch,
             * so it is fetched, and no exit comes before it. */
            if (now - node->coordlink.linger_fetch_ms >= COORD_LINGER_FETCH_MS)
            {
                node->coordlink.linger_fetch_ms = now;
                brim_node_coord_fetch(node);
            }
            if (log_now) {
                brim_log_info("leave: waiting for the committed map "
                              "without this node");
            }
            return;
        }
        if (now >= node->coordlink.linger_until
            && ms.partitions_out_pending == 0) {
            /* Exit 1 when a partition of this leave could not be handed
             * over (its new owner was declared dead): a supervisor can
             * tell a leave that lost keys from one that did not. */
            uint64_t dropped =
                ms.partitions_out_dropped - node->coordlink.leave_dropped0;

            if (dropped > 0) {
                brim_log_warn("leave: %" PRIu64 " partitions could not be "
                              "handed over (their new owners died); their "
                              "keys are lost",
                              dropped);
            }
            leave_stop(node, dropped > 0 ? 1 : 0);
        } else if (log_now) {
            brim_log_info("leave: %u partitions still streaming to their "
                          "new owners",
                          ms.partitions_out_pending);
        }
        if (ms.partitions_out_pending > 0
            && now - node->coordlink.linger_fetch_ms >= COORD_LINGER_FETCH_MS)
        {
            /* The coordinator forgot this node when the epoch without it
             * committed, so it sends it no later epoch; yet a later one
             * may declare one of its receivers dead, and only that epoch
             * ends the streams to it (their retries would hold the
             * stream's slots, and this node, forever). Ask for it. */
            node->coordlink.linger_fetch_ms = now;
            brim_node_coord_fetch(node);
        }
        return;
    }
    if (node->coordlink.leave != BRIM_LEAVE_NONE
        && node->coordlink.leave != BRIM_LEAVE_DENIED
        && node->topo.committed.map.epoch > 0
        && brim_topo_find(&node->topo.committed, node->cfg.name) < 0)
    {
        snprintf(why, sizeof(why), "epoch %" PRIu64 " committed without it",
                 node->topo.committed.map.epoch);
        leave_linger(node, why);
        return;
    }
    if (log_now && node->coordlink.leave == BRIM_LEAVE_WANTED) {
        /* Nothing bounds the wait (a leave waits as long as it must);
         * the person who asked for it should know how to end it. */
        brim_log_warn("leave: cannot reach the coordinator %s for %" PRIu64
                      " s; still serving and retrying (a second SIGINT or "
                      "SIGTERM exits at once: this node's keys are then "
                      "lost)",
                      node->coordlink.addr,
                      (now - node->coordlink.leave_since_ms) / 1000);
    } else if (log_now) {
        brim_log_info("leave: waiting for an epoch without this node for "
                      "%" PRIu64 " s; still serving",
                      (now - node->coordlink.leave_since_ms) / 1000);
    }
}

static void
coord_leave_rep(struct brim_peer *p, int status, const char *body, size_t len,
                void *arg)
{
    struct brim_node *node = arg;
    struct brim_rep   rep;
    char              why[256];

    if (node->coordlink.leave != BRIM_LEAVE_ASKED) {
        return;
    }
    if (status != 0 || coord_parse(node, BRIM_OP_LEAVE, body, len, &rep) != 0) {
        /* The connection went: LEAVE again on the next one. */
        node->coordlink.leave = BRIM_LEAVE_WANTED;
        return;
    }
    if (rep.status == 0) {
        brim_log_info("leave accepted by coordinator %s (epoch %" PRIu64
                      "); draining",
                      node->coordlink.addr, rep.epoch);
        node->coordlink.leave = BRIM_LEAVE_WAITING;
        return;
    }
    if (rep.status == BRIM_EDENIED) {
        /* The coordinator's reason says why (the last member). */
        brim_log_warn("coordinator %s: %s; still serving (a second SIGINT "
                      "or SIGTERM exits at once, and the keys are lost)",
                      node->coordlink.addr, coord_why(&rep, why, sizeof(why)));
        node->coordlink.leave = BRIM_LEAVE_DENIED;
        return;
    }
    /* NOTFOUND (not a member, or already leaving) and the rest. */
    brim_log_info("leave: %s; exiting", coord_why(&rep, why, sizeof(why)));
    leave_stop(node, 0);
}

/* Send LEAVE for this node on the open coordinator connection. */
static void
leave_send(struct brim_node *node)
{
    struct brim_req req;

    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_LEAVE;
    req.name = node->cfg.name;
    req.name_len = strlen(node->cfg.name);
    req.arg_u32 = 0;
    if (coord_send(node, &req, coord_leave_rep) == 0) {
        node->coordlink.leave = BRIM_LEAVE_ASKED;
    }
}

/* True (and the linger started) when this node was in a committed map and
 * the committed map now leaves it out: an admin's LEAVE (brimctl leave)
 * removed it, so it drains and exits 0 as after SIGTERM. */
static int
leave_removed(struct brim_node *node)
{
    char why[80];

    if (node->topo.committed.map.epoch == 0) {
        return 0;
    }
    if (brim_topo_find(&node->topo.committed, node->cfg.name) >= 0) {
        return 0;
    }
    if (!node->topo.was_member || node->topo.fenced) {
        return 0;
    }
    if (node->coordlink.leave == BRIM_LEAVE_LINGER) {
        return 1;
    }
    snprintf(why, sizeof(why), "epoch %" PRIu64 " committed without it",
             node->topo.committed.map.epoch);
    leave_linger(node, why);
    return 1;
}

/* True when this node is a committed member and its pending epoch leaves
 * it out: an admin's LEAVE (brimctl leave) was proposed. */
static int
leave_proposed(const struct brim_node *node)
{
    return node->topo.has_pending && node->topo.self_pending < 0
        && node->topo.self >= 0 && !node->topo.fenced;
}

/* The leave state a SIGTERM starts: WANTED, the drain's timer running. */
static void
leave_begin(struct brim_node *node)
{
    leave_timer_need(node);
    leave_dropped_base(node);
    node->coordlink.leave_since_ms = uv_now(node->loop);
    node->coordlink.leave_logged_ms = node->coordlink.leave_since_ms;
    node->coordlink.leave = BRIM_LEAVE_WANTED;
    uv_timer_start(&node->coordlink.leave_timer, leave_timer_cb,
                   COORD_LEAVE_POLL_MS, COORD_LEAVE_POLL_MS);
}

/* SIGTERM: leave and drain. Returns 1 when a leave was started (or one is
 * in progress and this signal should be ignored), 0 when the caller should
 * simply stop, -1 when it should exit at once (a second SIGTERM). */
int
brim_node_coord_leave(struct brim_node *node)
{
    if (node->coordlink.leave != BRIM_LEAVE_NONE
        && node->coordlink.leave_signalled) {
        return -1;
    }
    if (node->coordlink.leave != BRIM_LEAVE_NONE) {
        /* An operator's leave this node began itself on a reconnect: the
         * first signal joins it; only a second exits at once. */
        node->coordlink.leave_signalled = 1;
        return 1;
    }
    if (node->topo.fenced) {
        return 0;
    }
    if (!node->topo.was_member && !node->coordlink.joined) {
        brim_log_info("leave: this node never joined a cluster: stopping");
        return 0;
    }
    leave_begin(node);
    node->coordlink.leave_signalled = 1;
    if (node->coordlink.peer.state == BRIM_PEER_OPEN && node->coordlink.joined)
    {
        leave_send(node);
        brim_log_info("leaving: asked coordinator %s to remove this node",
                      node->coordlink.addr);
    } else {
        brim_log_warn("leave: coordinator %s cannot be reached now: still "
                      "serving, and asking again until it answers (SIGTERM "
                      "again to exit at once, losing this node's keys)",
                      node->coordlink.addr);
    }
    return 1;
}
