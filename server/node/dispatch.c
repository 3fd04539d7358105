/*
 * server/node/dispatch.c - brim-node's request layer: decode one frame
 * (walked without allocating before msgpack-c sees it), check the
 * connection's HELLO and role and the secret it proved (guard.c), count
 * the request once, and hand it to the module that serves it: data ops
 * to serve.c, epochs to epoch.c and change.c, streams to migrate*.c,
 * lease confirmations to lease.c, STATS to stats.c. Request errors become
 * error replies [status, id, message]; only a broken connection returns
 * an error to conn.c.
 */
#include "server/node/dispatch.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/defs.h"
#include "proto/frame.h"
#include "proto/ops.h"
#include "server/log.h"
#include "server/node/change.h"
#include "server/node/epoch.h"
#include "server/node/flush.h"
#include "server/node/lease.h"
#include "server/node/migrate.h"
#include "server/node/serve.h"
#include "server/node/stats.h"

/* The connection's role after HELLO, kept in c->data; 0 before HELLO. */
#define conn_role(c) ((uint32_t) (uintptr_t) (c)->data)

static int
dispatch_hello(struct brim_node *node, struct brim_conn *c,
               const struct brim_req *req)
{
    struct brim_rep rep;

    if (req->hello.version != BRIM_WIRE_VERSION) {
        return brim_node_reply_error(c, req->request_id, BRIM_EBADREQ,
                                     "hello: unsupported protocol version");
    }
    if (req->hello.cluster_id != 0 && node->cluster_id != 0
        && req->hello.cluster_id != node->cluster_id)
    {
        return brim_node_reply_error(
            c, req->request_id, BRIM_EDENIED,
            "hello: this node belongs to another cluster");
    }
    c->data = (void *) (uintptr_t) req->hello.role;
    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.hello.version = BRIM_WIRE_VERSION;
    rep.hello.role = BRIM_ROLE_NODE;
    rep.hello.cluster_id = node->cluster_id;
    rep.hello.incarnation = node->incarnation;
    rep.epoch = node->topo.committed.map.epoch;
    rep.hello.name = node->cfg.name;
    rep.hello.name_len = strlen(node->cfg.name);
    rep.limits = node->cfg.limits;
    return brim_wire_encode_rep(brim_conn_out(c), BRIM_OP_HELLO, &rep);
}

/*
 * EPOCH_PROPOSE, EPOCH_COMMIT, EPOCH_ABORT (PROTOCOL.md 10.2): only from a
 * connection whose HELLO said role coord, and only in cluster mode.
 */
static int
dispatch_epoch(struct brim_node *node, struct brim_conn *c,
               const struct brim_req *req)
{
    struct brim_rep rep;
    char            errbuf[BRIM_ERRBUF_LEN];
    int             rc = 0;

    if (conn_role(c) != BRIM_ROLE_COORD || node->cfg.standalone) {
        return brim_node_reply_error(
            c, req->request_id, BRIM_EDENIED,
            node->cfg.standalone ? "epoch: a standalone node has no epochs"
                                 : "epoch: needs a coordinator connection");
    }
    errbuf[0] = '\0';
    rc = brim_node_term_check(node, req->term, c->peer, errbuf);
    if (rc != 0) {
        /* A deposed leader's word: refused, so it steps down. */
        brim_log_warn("%s from %s refused: %s", brim_op_name(req->op), c->peer,
                      errbuf);
        return brim_node_reply_error(c, req->request_id, rc, errbuf);
    }
    switch (req->op) {
    case BRIM_OP_EPOCH_PROPOSE:
        rc = brim_node_propose(node, req->obj, errbuf);
        if (rc != 0) {
            brim_log_warn("EPOCH_PROPOSE from %s refused: %s", c->peer, errbuf);
        } else {
            brim_migrate_prepare(node); /* links for the forwards */
        }
        break;
    case BRIM_OP_EPOCH_COMMIT:
        rc = brim_node_commit(node, req->arg_epoch);
        if (rc != 0) {
            snprintf(errbuf, sizeof(errbuf),
                     "epoch: %" PRIu64 " is not "
                     "pending here",
                     req->arg_epoch);
        }
        break;
    default:
        brim_node_abort(node, req->arg_epoch);
        break;
    }
    if (rc != 0) {
        return brim_node_reply_error(c, req->request_id, rc, errbuf);
    }
    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    return brim_wire_encode_rep(brim_conn_out(c), req->op, &rep);
}

/*
 * MAP_FETCH at a node (DESIGN.md 12): the committed topology, so that a
 * client needs no coordinator, and after it the coordinators' addresses
 * (for operators' tools). Refused RETRY while the node has no committed
 * epoch or its lease is not fresh: a node cut off may hold an old map, and
 * a client must adopt a map only from a node that may serve by it.
 */
static int
dispatch_map_fetch(struct brim_node *node, struct brim_conn *c,
                   const struct brim_req *req)
{
    struct brim_rep rep;

    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    if (node->cfg.standalone) {
        return brim_node_reply_error(c, req->request_id, BRIM_EUNKNOWNOP,
                                     "map fetch: a standalone node has no "
                                     "topology");
    }
    if (node->topo.committed.map.epoch == 0 || !brim_node_lease_fresh(node)) {
        rep.status = BRIM_ERETRY;
        rep.epoch = node->topo.committed.map.epoch;
        rep.message = rep.epoch == 0 ? "map fetch: no committed epoch yet"
                                     : "map fetch: this node's lease is not "
                                       "fresh";
        rep.message_len = strlen(rep.message);
        return brim_wire_encode_rep(brim_conn_out(c), req->op, &rep);
    }
    rep.topo = &node->topo.committed;
    rep.coords = node->cfg.coordinator;
    rep.coords_len = strlen(node->cfg.coordinator);
    return brim_wire_encode_rep(brim_conn_out(c), req->op, &rep);
}

/* Serve the decoded request REQ on C. Returns 0 or an encoding error. */
static int
dispatch_serve(struct brim_node *node, struct brim_conn *c,
               const struct brim_req *req)
{
    struct brim_rep rep;
    uint32_t        sections;
    char            errbuf[BRIM_ERRBUF_LEN];

    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    if ((brim_op_info(req->op)->flags & BRIM_OPF_DATA) != 0) {
        brim_node_epoch_seen(node, req->epoch);
    }
    switch (req->op) {
    case BRIM_OP_HELLO:
        return dispatch_hello(node, c, req);
    case BRIM_OP_PING:
        break;
    case BRIM_OP_STATS:
        if (brim_node_stats_sections(req->section, req->section_len, &sections,
                                     errbuf)
            != 0)
        {
            return brim_node_reply_error(c, req->request_id, BRIM_EINVAL,
                                         errbuf);
        }
        return brim_node_stats_reply(node, brim_conn_out(c), req->request_id,
                                     sections);
    case BRIM_OP_MGET:
    case BRIM_OP_MGAT:
        return brim_node_serve_data(node, c, req);
    case BRIM_OP_FLUSH:
        /* A node sends it for its memcached port's flush_all (DESIGN.md
         * 10): nodes are trusted as admins are (the cluster secret). */
        if (conn_role(c) != BRIM_ROLE_ADMIN && conn_role(c) != BRIM_ROLE_COORD
            && conn_role(c) != BRIM_ROLE_NODE)
        {
            return brim_node_reply_error(c, req->request_id, BRIM_EDENIED,
                                         "flush: needs an admin connection");
        }
        /* A flush mark (Unix ms) from the node that runs flush_all,
         * applied as it comes when that flush_all had no delay; a FLUSH
         * without one (libbrim's brim_flush()) gets one here: now plus
         * its delay (flush.h). */
        brim_log_info("flush from %s", c->peer);
        brim_node_flush_learn(node,
                              req->flush_ms != 0 ? req->flush_ms
                                                 : brim_node_flush_clock_ms()
                                      + (uint64_t) req->delay_s * 1000,
                              req->delay_s == 0);
        break;
    case BRIM_OP_EPOCH_PROPOSE:
    case BRIM_OP_EPOCH_COMMIT:
    case BRIM_OP_EPOCH_ABORT:
        return dispatch_epoch(node, c, req);
    case BRIM_OP_STREAM_BEGIN:
    case BRIM_OP_STREAM_BATCH:
    case BRIM_OP_STREAM_END:
    case BRIM_OP_COMPLETE:
    case BRIM_OP_FORWARD_GET:
    case BRIM_OP_PULL:
    case BRIM_OP_STREAM_QUERY:
        /* A request stamped with our pending epoch commits it first, as
         * a data op's does (DESIGN.md 7 step 2). */
        brim_node_epoch_seen(node, req->epoch);
        return brim_migrate_serve(node, c, req);
    case BRIM_OP_LEASE_CONFIRM:
        return brim_node_lease_confirm_serve(node, c, req);
    case BRIM_OP_MAP_FETCH:
        return dispatch_map_fetch(node, c, req);
    default:
        if ((brim_op_info(req->op)->flags & BRIM_OPF_KEY) == 0) {
            return brim_node_reply_error(c, req->request_id, BRIM_EUNKNOWNOP,
                                         "not served by a "
                                         "node (send it to the "
                                         "coordinator)");
        }
        return brim_node_serve_data(node, c, req);
    }
    return brim_wire_encode_rep(brim_conn_out(c), req->op, &rep);
}

/* A decoded request REQ: HELLO first, the guard, then serve it. */
static int
dispatch_checked(struct brim_node *node, struct brim_conn *c,
                 const struct brim_req *req)
{
    int rc;

    if (conn_role(c) == 0 && req->op != BRIM_OP_HELLO
        && req->op != BRIM_OP_PING) {
        return brim_node_reply_error(c, req->request_id, BRIM_EBADREQ,
                                     "send HELLO first");
    }
    /* AUTH, and ops that need a proven secret (PROTOCOL.md 12). */
    rc = brim_guard_request(&node->guard, c, conn_role(c), req);
    if (rc != 0) {
        return rc;
    }
    return dispatch_serve(node, c, req);
}

int
brim_node_dispatch(struct brim_conn *c, const char *body, size_t len)
{
    struct brim_node *node = c->srv->data;
    struct brim_req   req;
    char              errbuf[BRIM_ERRBUF_LEN];
    uint64_t          t1;
    int               rc;

    errbuf[0] = '\0';
    /* Only the coordinator's connections may carry a topology, and only
     * other nodes' a stream batch (PROTOCOL.md 11). */
    rc = brim_wire_parse_req(
        body, len,
        conn_role(c) == BRIM_ROLE_COORD      ? &node->coord_limits
            : conn_role(c) == BRIM_ROLE_NODE ? &node->peer_limits
                                             : &node->cfg.limits,
        &node->zone, &req, errbuf);
    /* Client requests apart from the cluster's own traffic (streams,
     * forwards, proposals, lease confirmations): requests_per_sec is the
     * clients' (issue 12: an idle cluster once showed 52,087 after a
     * join). A frame before HELLO counts as a client's. */
    if (conn_role(c) == BRIM_ROLE_NODE || conn_role(c) == BRIM_ROLE_COORD) {
        node->stats.internal_requests++;
    } else {
        node->stats.requests++;
    }
    if (rc == BRIM_ENOMEM) {
        return rc; /* the connection cannot go on */
    }
    if (rc != 0) {
        node->stats.bad_requests++;
        rc = brim_node_reply_error(c, req.request_id, rc,
                                   errbuf[0] != '\0' ? errbuf
                                                     : brim_strerror(rc));
        return rc == BRIM_ENOMEM ? rc : 0;
    }
    node->stats.ops[req.op]++;
    rc = dispatch_checked(node, c, &req);
    /* The request's latency runs from the frame's start, which conn.c
     * set or the frame before this one moved on; this one's end is the
     * next one's start. */
    t1 = uv_hrtime();
    brim_node_lat_record(&node->stats.lat[req.op], t1 - c->srv->frame_start_ns);
    c->srv->frame_start_ns = t1;
    return rc == BRIM_ENOMEM ? rc : 0;
}
