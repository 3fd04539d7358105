/*
 * server/node/lease.c - the node's serving lease (DESIGN.md section 7 step
 * 7). A cluster node serves data ops only while its lease is fresh. Every
 * HEARTBEAT the coordinator acknowledges renews it for lease_ms (half of
 * the coordinator's dead-after) from when the heartbeat was sent. While
 * heartbeats go unanswered, a LEASE_CONFIRM round asks the other members
 * of the committed epoch whether any holds a newer epoch; a majority of
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
#include "server/node/node.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/defs.h"
#include "server/log.h"

/* How often the lease is looked at, ms (and a round's spacing). */
#define LEASE_TICK_MS 100

static void
lease_renew(struct brim_node *node, uint64_t from_ms, uint32_t lease_ms,
            const char *how)
{
    struct brim_node_cluster *cl = &node->cl;
    uint64_t                  until = from_ms + lease_ms;
    int                       was_fresh = brim_node_lease_fresh(node);

    if (lease_ms == 0) {
        return;
    }
    cl->lease_ms = lease_ms;
    if (until > cl->lease_until_ms) {
        cl->lease_until_ms = until;
    }
    if (!was_fresh && brim_node_lease_fresh(node)) {
        brim_log_info("lease renewed by %s: serving for %u ms", how,
                      lease_ms);
    }
}

int
brim_node_lease_fresh(const struct brim_node *node)
{
    if (node->cfg.standalone) {
        return 1;
    }
    return uv_now(node->loop) < node->cl.lease_until_ms;
}

void
brim_node_lease_heartbeat(struct brim_node *node, uint64_t sent_ms,
                          uint32_t lease_ms)
{
    node->cl.hb_ok_ms = uv_now(node->loop);
    lease_renew(node, sent_ms, lease_ms, "the coordinator");
}

/* LEASE_CONFIRM's reply from one member: counts toward the round. */
static void
lease_confirm_rep(struct brim_peer *p, int status, const char *body,
                  size_t len, void *arg)
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
    if (rep.status != 0 || rep.request_id != node->cl.confirm_round) {
        return;                     /* a no, or a reply to an older round */
    }
    node->cl.confirm_ok++;
    /* A majority of the epoch's members, this node among them (counted
     * once per round). */
    if (2 * (node->cl.confirm_ok + 1) > node->cl.committed.nmembers
        && 2 * node->cl.confirm_ok <= node->cl.committed.nmembers)
    {
        node->cl.lease_member_renewals++;
        lease_renew(node, node->cl.confirm_sent_ms, node->cl.lease_ms,
                    "a majority of the epoch's members");
    }
}

/* Ask every other live member of the committed epoch to confirm it. */
static void
lease_confirm_round(struct brim_node *node, uint64_t now)
{
    const struct brim_topo *t = &node->cl.committed;
    struct brim_req         req;
    struct brim_buf         buf;
    uint32_t                i;

    node->cl.confirm_round++;
    node->cl.confirm_ok = 0;
    node->cl.confirm_sent_ms = now;
    node->cl.lease_rounds++;
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_LEASE_CONFIRM;
    req.request_id = node->cl.confirm_round;
    req.epoch = t->map.epoch;
    req.arg_epoch = t->map.epoch;
    for (i = 0; i < t->nmembers; i++) {
        if ((int32_t) i == node->cl.self
            || t->members[i].state == BRIM_MEMBER_DEAD
            || t->members[i].addr[0] == '\0')
        {
            continue;
        }
        brim_buf_init(&buf);
        if (brim_wire_encode_req(&buf, &req) == 0) {
            (void) brim_migrate_peer_call(node, t->members[i].addr, &buf,
                                          lease_confirm_rep, node);
        }
        brim_buf_destroy(&buf);
    }
    /* Alone in its epoch: a majority of one. */
    if (t->nmembers == 1 && node->cl.self == 0) {
        lease_renew(node, now, node->cl.lease_ms, "being the only member");
    }
}

static void
lease_tick_cb(uv_timer_t *timer)
{
    struct brim_node         *node = timer->data;
    struct brim_node_cluster *cl = &node->cl;
    uint64_t                  now = uv_now(node->loop);
    uint32_t                  lease = cl->lease_ms;

    if (node->stopping || lease == 0 || cl->self < 0
        || cl->committed.map.epoch == 0)
    {
        return;
    }
    /* Heartbeats renew it long before half the lease is gone; when they
     * do not, ask the members, at most once per heartbeat interval. */
    if (cl->lease_until_ms < now + lease / 2
        && now - cl->confirm_sent_ms >= cl->heartbeat_ms)
    {
        lease_confirm_round(node, now);
    }
    if (cl->lease_until_ms <= now && cl->lease_until_ms > cl->lease_seen_ms) {
        cl->lease_seen_ms = cl->lease_until_ms;
        cl->lease_expiries++;
        brim_log_warn("lease expired (neither the coordinator nor a majority "
                      "of epoch %" PRIu64 "'s members renewed it): data "
                      "ops get RETRY until it is renewed",
                      cl->committed.map.epoch);
    }
}

void
brim_node_lease_start(struct brim_node *node)
{
    uv_timer_init(node->loop, &node->cl.lease_timer);
    node->cl.lease_timer.data = node;
    uv_unref((uv_handle_t *) &node->cl.lease_timer);
    uv_timer_start(&node->cl.lease_timer, lease_tick_cb, LEASE_TICK_MS,
                   LEASE_TICK_MS);
    node->cl.lease_timer_init = 1;
}

void
brim_node_lease_stop(struct brim_node *node)
{
    if (node->cl.lease_timer_init) {
        uv_close((uv_handle_t *) &node->cl.lease_timer, NULL);
        node->cl.lease_timer_init = 0;
    }
}

int
brim_node_lease_confirm_serve(struct brim_node *node, struct brim_conn *c,
                              const struct brim_req *req)
{
    struct brim_rep rep;
    uint64_t        mine = node->cl.committed.map.epoch;
    char            msg[96];

    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    if ((uint32_t) (uintptr_t) c->data != BRIM_ROLE_NODE
        || node->cfg.standalone)
    {
        snprintf(msg, sizeof(msg), "lease_confirm: only a cluster node may "
                 "ask");
        return brim_wire_encode_status(brim_conn_out(c), req->request_id,
                                       BRIM_EDENIED, msg, strlen(msg));
    }
    if (uv_now(node->loop) - node->cl.hb_ok_ms < node->cl.lease_ms / 2) {
        /* The coordinator answered us within half a lease (heartbeats
         * come thrice a lease): the asker's trouble is its own,
         * and the coordinator may be replacing it right now. */
        snprintf(msg, sizeof(msg), "lease_confirm: the coordinator answers "
                 "this node; ask it");
        return brim_wire_encode_status(brim_conn_out(c), req->request_id,
                                       BRIM_EDENIED, msg, strlen(msg));
    }
    if (mine > req->arg_epoch
        || (node->cl.has_pending
            && node->cl.pending.map.epoch > req->arg_epoch))
    {
        /* A newer epoch exists: the asker may have been replaced. */
        snprintf(msg, sizeof(msg), "lease_confirm: epoch %" PRIu64 " is not "
                 "the newest (%" PRIu64 " is known here)", req->arg_epoch,
                 node->cl.has_pending ? node->cl.pending.map.epoch : mine);
        return brim_wire_encode_status(brim_conn_out(c), req->request_id,
                                       BRIM_EEXISTS, msg, strlen(msg));
    }
    rep.epoch = mine;
    rep.lease_ms = node->cl.lease_ms;
    return brim_wire_encode_rep(brim_conn_out(c), BRIM_OP_LEASE_CONFIRM,
                                &rep);
}
