/*
 * server/node/lease.c - the node's serving lease (DESIGN.md section 7 step
 * 7). A cluster node serves data ops only while its lease is fresh. Every
 * HEARTBEAT the coordinator acknowledges renews it for lease_ms (half of
 * the coordinator's dead-after) from when the heartbeat was sent. While
 * heartbeats go unanswered, a LEASE_CONFIRM round asks the other members
 * of the committed epoch whether any holds a newer epoch (a pending one
 * the asker acknowledged too does not count); a majority of
 * the epoch's members (this node included) saying no renews the lease from
 * when the round was sent. A member confirms only while the coordinator
 * does not answer it either (the coordinator down), so a node cut off
 * alone gets no confirmation. Leases run on the monotonic loop clock, so a
 * node that was paused (SIGSTOP, a stalled VM) finds its lease expired
 * when it runs again and serves nothing until it is renewed. The
 * coordinator declares a node dead only dead-after past its last
 * heartbeat, twice the lease, so a node cut off has stopped serving
 * before anyone serves its partitions (docs/design.md, "Leases").
 */
#include "server/node/lease.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/defs.h"
#include "server/node/links.h"
#include "server/log.h"

/* How often the lease is looked at, ms (and a round's spacing). */
#define LEASE_TICK_MS 100

static void
lease_renew(struct brim_node *node, uint64_t from_ms, uint32_t lease_ms,
            const char *how)
{
    struct brim_node_lease *l = &node->lease;
    uint64_t                until = from_ms + lease_ms;
    int                     was_fresh = brim_node_lease_fresh(node);

    if (lease_ms == 0) {
        return;
    }
    l->length_ms = lease_ms;
    if (until > l->until_ms) {
        l->until_ms = until;
    }
    if (!was_fresh && brim_node_lease_fresh(node)) {
        brim_log_info("lease renewed by %s: serving for %u ms", how, lease_ms);
    }
}

int
brim_node_lease_fresh(const struct brim_node *node)
{
    if (node->cfg.standalone) {
        return 1;
    }
    return uv_now(node->loop) < node->lease.until_ms;
}

void
brim_node_lease_heartbeat(struct brim_node *node, uint64_t sent_ms,
                          uint32_t lease_ms)
{
    node->lease.coord_ok_ms = uv_now(node->loop);
    lease_renew(node, sent_ms, lease_ms, "the coordinator");
}

/* LEASE_CONFIRM's reply from one member: counts toward the round. */
static void
lease_confirm_rep(struct brim_peer *p, int status, const char *body, size_t len,
                  void *arg)
{
    struct brim_node *node = arg;
    struct brim_rep   rep;
    char              errbuf[BRIM_ERRBUF_LEN];

    (void) p;
    if (status != 0
        || brim_wire_parse_rep(body, len, BRIM_OP_LEASE_CONFIRM,
                               &node->cfg.limits, &node->zone, &rep, errbuf)
            != 0)
    {
        return;
    }
    if (rep.status != 0 || rep.request_id != node->lease.round) {
        return; /* a no, or a reply to an older round */
    }
    node->lease.round_ok++;
    /* A majority of the epoch's members, this node among them (counted
     * once per round). */
    if (2 * (node->lease.round_ok + 1) > node->topo.committed.nmembers
        && 2 * node->lease.round_ok <= node->topo.committed.nmembers)
    {
        node->lease.member_renewals++;
        lease_renew(node, node->lease.round_sent_ms, node->lease.length_ms,
                    "a majority of the epoch's members");
    }
}

/* Ask every other live member of the committed epoch to confirm it. */
static void
lease_confirm_round(struct brim_node *node, uint64_t now)
{
    const struct brim_topo *t = &node->topo.committed;
    struct brim_req         req;
    struct brim_buf         buf;
    uint32_t                i;

    node->lease.round++;
    node->lease.round_ok = 0;
    node->lease.round_sent_ms = now;
    node->lease.rounds++;
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_LEASE_CONFIRM;
    req.request_id = node->lease.round;
    req.epoch = t->map.epoch;
    req.arg_epoch = t->map.epoch;
    /* The pending epoch it acknowledged: a member holding the same one
     * may confirm (brim_node_lease_confirm_serve()). */
    req.count = node->topo.has_pending ? node->topo.pending.map.epoch : 0;
    for (i = 0; i < t->nmembers; i++) {
        if ((int32_t) i == node->topo.self
            || t->members[i].state == BRIM_MEMBER_DEAD
            || t->members[i].addr[0] == '\0')
        {
            continue;
        }
        brim_buf_init(&buf);
        if (brim_wire_encode_req(&buf, &req) == 0) {
            (void) brim_links_call(&node->links, t->members[i].addr, &buf,
                                   lease_confirm_rep, node);
        }
        brim_buf_destroy(&buf);
    }
    /* Alone in its epoch: a majority of one. */
    if (t->nmembers == 1 && node->topo.self == 0) {
        lease_renew(node, now, node->lease.length_ms, "being the only member");
    }
}

static void
lease_tick_cb(uv_timer_t *timer)
{
    struct brim_node       *node = timer->data;
    struct brim_node_lease *l = &node->lease;
    uint64_t                now = uv_now(node->loop);
    uint32_t                lease = l->length_ms;

    if (node->stopping || lease == 0 || node->topo.self < 0
        || node->topo.committed.map.epoch == 0)
    {
        return;
    }
    /* Heartbeats renew it long before half the lease is gone; when they
     * do not, ask the members, at most once per heartbeat interval. */
    if (l->until_ms < now + lease / 2
        && now - l->round_sent_ms >= node->coordlink.heartbeat_ms)
    {
        lease_confirm_round(node, now);
    }
    /* A lease only grows; an expiry is counted once. */
    BRIM_ASSERT(l->seen_ms <= l->until_ms);
    if (l->until_ms <= now && l->until_ms > l->seen_ms) {
        l->seen_ms = l->until_ms;
        l->expiries++;
        brim_log_warn("lease expired (neither the coordinator nor a majority "
                      "of epoch %" PRIu64 "'s members renewed it): data "
                      "ops get RETRY until it is renewed",
                      node->topo.committed.map.epoch);
    }
}

void
brim_node_lease_start(struct brim_node *node)
{
    uv_timer_init(node->loop, &node->lease.timer);
    node->lease.timer.data = node;
    uv_unref((uv_handle_t *) &node->lease.timer);
    uv_timer_start(&node->lease.timer, lease_tick_cb, LEASE_TICK_MS,
                   LEASE_TICK_MS);
    node->lease.timer_init = 1;
}

void
brim_node_lease_stop(struct brim_node *node)
{
    if (node->lease.timer_init) {
        uv_close((uv_handle_t *) &node->lease.timer, NULL);
        node->lease.timer_init = 0;
    }
}

int
brim_node_lease_confirm_serve(struct brim_node *node, struct brim_conn *c,
                              const struct brim_req *req)
{
    struct brim_rep rep;
    uint64_t        mine = node->topo.committed.map.epoch;
    char            msg[96];

    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    if ((uint32_t) (uintptr_t) c->data != BRIM_ROLE_NODE
        || node->cfg.standalone) {
        snprintf(msg, sizeof(msg),
                 "lease_confirm: only a cluster node may "
                 "ask");
        return brim_wire_encode_status(brim_conn_out(c), req->request_id,
                                       BRIM_EDENIED, msg, strlen(msg));
    }
    if (uv_now(node->loop) - node->lease.coord_ok_ms
        < node->lease.length_ms / 2) {
        /* The coordinator answered us within half a lease (heartbeats
         * come thrice a lease): the asker's trouble is its own,
         * and the coordinator may be replacing it right now. */
        snprintf(msg, sizeof(msg),
                 "lease_confirm: the coordinator answers "
                 "this node; ask it");
        return brim_wire_encode_status(brim_conn_out(c), req->request_id,
                                       BRIM_EDENIED, msg, strlen(msg));
    }
    if (mine > req->arg_epoch
        || (node->topo.has_pending
            && node->topo.pending.map.epoch > req->arg_epoch
            && node->topo.pending.map.epoch > req->count))
    {
        /* A newer epoch exists: the asker may have been replaced. A
         * pending one the asker holds too does not count: it acknowledged
         * it, so it serves only the partitions it keeps in it (DESIGN.md
         * 7.1), and wherever that epoch commits no other node serves
         * those; a member that did commit it refuses above. Else a coordinator that died with a change pending left every
         * member's lease to run out (a fresh tester found it). */
        snprintf(msg, sizeof(msg),
                 "lease_confirm: epoch %" PRIu64 " is not "
                 "the newest (%" PRIu64 " is known here)",
                 req->arg_epoch,
                 node->topo.has_pending ? node->topo.pending.map.epoch : mine);
        return brim_wire_encode_status(brim_conn_out(c), req->request_id,
                                       BRIM_EEXISTS, msg, strlen(msg));
    }
    rep.epoch = mine;
    rep.lease_ms = node->lease.length_ms;
    return brim_wire_encode_rep(brim_conn_out(c), BRIM_OP_LEASE_CONFIRM, &rep);
}
