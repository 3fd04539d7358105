/*
 * server/node/cmd.c - brim-node's command layer: decode one request (the
 * frame was walked without allocating before msgpack-c sees it), check the
 * connection's HELLO and role, run the op against the store, and append
 * the reply. Request errors become error replies [status, id, message];
 * only a broken connection returns an error to conn.c.
 */
#include "server/node/node.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/defs.h"
#include "common/hash.h"
#include "proto/frame.h"
#include "server/log.h"

/* The connection's role after HELLO, kept in c->data; 0 before HELLO. */
#define conn_role(c) ((uint32_t) (uintptr_t) (c)->data)

static uint32_t
unix_now(void)
{
    return (uint32_t) time(NULL);
}

/*
 * memcached's TTL rule: 0 never expires, up to 30 days is relative, above
 * that an absolute Unix time (one in the past expires at once).
 */
static uint32_t
cmd_exptime(uint32_t ttl_s, uint32_t now)
{
    if (ttl_s == 0) {
        return 0;
    }
    if (ttl_s > BRIM_WIRE_TTL_RELATIVE_MAX) {
        return ttl_s <= now ? 1 : ttl_s;    /* 1: already in the past */
    }
    return now + ttl_s;
}

static int
cmd_reply_error(struct brim_conn *c, uint64_t id, int status, const char *msg)
{
    if (-status > BRIM_STATUS_WIRE_MAX) {
        status = BRIM_ENOMEM;       /* local codes never travel */
    }
    return brim_wire_encode_status(brim_conn_out(c), id, status, msg,
                                   msg != NULL ? strlen(msg) : 0);
}

static int
cmd_hello(struct brim_node *node, struct brim_conn *c,
          const struct brim_req *req)
{
    struct brim_rep rep;

    if (req->hello.version != BRIM_WIRE_VERSION) {
        return cmd_reply_error(c, req->request_id, BRIM_EBADREQ,
                               "hello: unsupported protocol version");
    }
    if (req->hello.cluster_id != 0 && node->cluster_id != 0
        && req->hello.cluster_id != node->cluster_id)
    {
        return cmd_reply_error(c, req->request_id, BRIM_EDENIED,
                               "hello: this node belongs to another cluster");
    }
    c->data = (void *) (uintptr_t) req->hello.role;
    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.hello.version = BRIM_WIRE_VERSION;
    rep.hello.role = BRIM_ROLE_NODE;
    rep.hello.cluster_id = node->cluster_id;
    rep.hello.incarnation = node->incarnation;
    rep.epoch = node->cl.committed.map.epoch;
    rep.hello.name = node->cfg.name;
    rep.hello.name_len = strlen(node->cfg.name);
    rep.limits = node->cfg.limits;
    return brim_wire_encode_rep(brim_conn_out(c), BRIM_OP_HELLO, &rep);
}

/* MGET: one entry per key, in order; a hit that would push the frame past
 * the limit is answered TOOBIG for the client to fetch on its own. */
static int
cmd_mget(struct brim_node *node, struct brim_conn *c,
         const struct brim_req *req, uint32_t now)
{
    struct brim_buf        *out = brim_conn_out(c);
    const struct brim_item *it;
    const char             *key;
    struct brim_rep         rrep;
    size_t                  key_len, mark;
    uint32_t                i;
    uint64_t                h;
    int                     rc, route;

    rc = brim_wire_mget_begin(out, req->request_id, req->nkeys, &mark);
    for (i = 0; rc == 0 && i < req->nkeys; i++) {
        brim_wire_req_key(req, i, &key, &key_len);
        h = brim_hash_key(brim_node_seed(node), key, key_len);
        route = brim_node_route(node, req->epoch, h, &rrep);
        if (route == 0 && node->mig != NULL) {
            brim_migrate_hit(node, brim_partition_of(h, node->cfg.partitions),
                             h, key, key_len, BRIM_MIG_READ, 0);
        }
        if (route != 0) {
            rc = brim_wire_mget_miss(out, route);   /* MOVED or RETRY */
        } else if (brim_store_get(node->store, h, key, key_len, now, &it)
                   != 0)
        {
            /* A key in flight may be at the old owner: the client GETs
             * it alone, and that GET is forwarded. */
            rc = brim_wire_mget_miss(out, brim_migrate_unsettled(
                                              node, h, key, key_len)
                                              ? BRIM_ERETRY
                                              : BRIM_ENOTFOUND);
        } else if (out->len - mark + it->val_len + 64
                   > node->cfg.limits.max_frame_bytes)
        {
            rc = brim_wire_mget_miss(out, BRIM_ETOOBIG);
        } else {
            rc = brim_wire_mget_hit(out, brim_item_value(it), it->val_len,
                                    it->flags, it->cas);
        }
    }
    if (rc == 0) {
        rc = brim_frame_end(out, mark);
    } else {
        brim_frame_abort(out, mark);
    }
    return rc;
}

static enum brim_store_mode
cmd_store_mode(uint32_t op)
{
    switch (op) {
    case BRIM_OP_ADD:
        return BRIM_STORE_ADD;
    case BRIM_OP_REPLACE:
        return BRIM_STORE_REPLACE;
    case BRIM_OP_CAS:
        return BRIM_STORE_CAS;
    case BRIM_OP_APPEND:
        return BRIM_STORE_APPEND;
    case BRIM_OP_PREPEND:
        return BRIM_STORE_PREPEND;
    default:
        return BRIM_STORE_SET;
    }
}

static void
node_flush_cb(uv_timer_t *t)
{
    struct brim_node *node = BRIM_CONTAINER_OF(t, struct brim_node,
                                               flush_timer);

    brim_store_flush(node->store);
    brim_log_info("flush: every item removed (delayed flush)");
}

/* Run the keyed data op REQ on the key hashed to H (routed here). */
static int
cmd_data_op(struct brim_node *node, const struct brim_req *req,
            struct brim_rep *rep, uint64_t h, uint32_t now)
{
    const struct brim_item *it;
    int                     rc;

    switch (req->op) {
    case BRIM_OP_GET:
    case BRIM_OP_GAT:
        if (req->op == BRIM_OP_GAT) {
            rc = brim_store_touch(node->store, h, req->key, req->key_len,
                                  cmd_exptime(req->ttl_s, now), now);
            if (rc != 0) {
                return rc;
            }
        }
        rc = brim_store_get(node->store, h, req->key, req->key_len, now, &it);
        if (rc == 0) {
            rep->value = brim_item_value(it);
            rep->value_len = it->val_len;
            rep->flags = it->flags;
            rep->cas = it->cas;
        }
        return rc;
    case BRIM_OP_DEL:
        return brim_store_del(node->store, h, req->key, req->key_len, now);
    case BRIM_OP_TOUCH:
        return brim_store_touch(node->store, h, req->key, req->key_len,
                                cmd_exptime(req->ttl_s, now), now);
    case BRIM_OP_INCR:
    case BRIM_OP_DECR:
        return brim_store_incr(node->store, h, req->key, req->key_len,
                               req->delta, req->op == BRIM_OP_DECR, now,
                               &rep->number, &rep->cas);
    default:
        return brim_store_set(node->store, cmd_store_mode(req->op), h,
                              req->key, req->key_len, req->value,
                              req->value_len, req->flags,
                              cmd_exptime(req->ttl_s, now), req->cas, now,
                              &rep->cas);
    }
}

/* cmd_data(): the reply comes later (brim_migrate_fetch() deferred it). */
#define CMD_DEFERRED 1

/*
 * Run one keyed data op from C (frame body BODY[0 .. LEN)); fills REP for
 * the OK reply, or returns the error status for an error reply, or
 * CMD_DEFERRED.
 */
static int
cmd_data(struct brim_node *node, struct brim_conn *c,
         const struct brim_req *req, struct brim_rep *rep, uint32_t now,
         const char *body, size_t len)
{
    uint64_t                h;
    int                     rc;

    h = brim_hash_key(brim_node_seed(node), req->key, req->key_len);
    rc = brim_node_route(node, req->epoch, h, rep);
    if (rc != 0) {
        return rc;                  /* MOVED or RETRY, details in REP */
    }
    if (node->mig != NULL) {
        /* In flight and not here: the old owner is asked first. */
        rc = brim_migrate_fetch(node, c, req, h, body, len);
        if (rc != 0) {
            return rc == 1 ? CMD_DEFERRED : rc;
        }
        /* A write in flight must be able to leave its tombstone. */
        if ((brim_op_info(req->op)->flags & BRIM_OPF_WRITE) != 0) {
            rc = brim_migrate_before_write(
                node, brim_partition_of(h, node->cfg.partitions), h,
                req->key, req->key_len);
            if (rc != 0) {
                return rc;
            }
        }
    }
    rc = cmd_data_op(node, req, rep, h, now);
    if (node->mig != NULL) {
        brim_migrate_hit(node, brim_partition_of(h, node->cfg.partitions), h,
                         req->key, req->key_len,
                         req->op == BRIM_OP_GET || req->op == BRIM_OP_GAT
                         ? BRIM_MIG_READ
                         : req->op == BRIM_OP_DEL ? BRIM_MIG_DELETE
                                                  : BRIM_MIG_WRITE, rc);
        if (req->op == BRIM_OP_GAT && rc == 0) {
            brim_migrate_hit(node, brim_partition_of(h, node->cfg.partitions),
                             h, req->key, req->key_len, BRIM_MIG_WRITE, rc);
        }
    }
    return rc;
}

static const char *
cmd_error_text(uint32_t op, int status)
{
    switch (status) {
    case BRIM_ENOTSTORED:
        return op == BRIM_OP_ADD ? "not stored: key exists"
                                 : "not stored: key does not exist";
    case BRIM_EEXISTS:
        return "cas mismatch: the item changed since it was read";
    case BRIM_ETOOBIG:
        return "item too big for the node's memory limit or max value";
    case BRIM_ENONUMERIC:
        return "value is not a decimal number that fits 64 bits";
    default:
        return brim_strerror(status);
    }
}

/*
 * EPOCH_PROPOSE, EPOCH_COMMIT, EPOCH_ABORT (PROTOCOL.md 10.2): only from a
 * connection whose HELLO said role coord, and only in cluster mode.
 */
static int
cmd_epoch(struct brim_node *node, struct brim_conn *c,
          const struct brim_req *req)
{
    struct brim_rep rep;
    char            errbuf[BRIM_ERRBUF_LEN];
    int             rc = 0;

    if (conn_role(c) != BRIM_ROLE_COORD || node->cfg.standalone) {
        return cmd_reply_error(c, req->request_id, BRIM_EDENIED,
                               node->cfg.standalone
                               ? "epoch: a standalone node has no epochs"
                               : "epoch: needs a coordinator connection");
    }
    errbuf[0] = '\0';
    switch (req->op) {
    case BRIM_OP_EPOCH_PROPOSE:
        rc = brim_node_propose(node, req->obj, errbuf);
        if (rc != 0) {
            brim_log_warn("EPOCH_PROPOSE from %s refused: %s", c->peer,
                          errbuf);
        }
        break;
    case BRIM_OP_EPOCH_COMMIT:
        rc = brim_node_commit(node, req->arg_epoch);
        if (rc != 0) {
            snprintf(errbuf, sizeof(errbuf), "epoch: %" PRIu64 " is not "
                     "pending here", req->arg_epoch);
        }
        break;
    default:
        brim_node_abort(node, req->arg_epoch);
        break;
    }
    if (rc != 0) {
        return cmd_reply_error(c, req->request_id, rc, errbuf);
    }
    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    return brim_wire_encode_rep(brim_conn_out(c), req->op, &rep);
}

/* Serve the decoded request REQ (from frame body BODY[0 .. LEN)) on C.
 * Returns 0 or an encoding error. */
static int
cmd_serve(struct brim_node *node, struct brim_conn *c,
          const struct brim_req *req, const char *body, size_t len)
{
    struct brim_rep rep;
    uint32_t        now = unix_now(), sections;
    int             rc;

    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    if ((brim_op_info(req->op)->flags & BRIM_OPF_DATA) != 0) {
        brim_node_epoch_seen(node, req->epoch);
    }
    switch (req->op) {
    case BRIM_OP_HELLO:
        return cmd_hello(node, c, req);
    case BRIM_OP_PING:
        break;
    case BRIM_OP_STATS:
        if (brim_node_stats_sections(req->section, req->section_len,
                                     &sections) != 0)
        {
            return cmd_reply_error(c, req->request_id, BRIM_EINVAL,
                                   "stats: unknown section; known: node, "
                                   "store, conns, ops (empty: all)");
        }
        return brim_node_stats_reply(node, brim_conn_out(c), req->request_id,
                                     sections);
    case BRIM_OP_MGET:
        return cmd_mget(node, c, req, now);
    case BRIM_OP_FLUSH:
        if (conn_role(c) != BRIM_ROLE_ADMIN && conn_role(c) != BRIM_ROLE_COORD)
        {
            return cmd_reply_error(c, req->request_id, BRIM_EDENIED,
                                   "flush: needs an admin connection");
        }
        if (req->delay_s == 0) {
            brim_store_flush(node->store);
            brim_log_info("flush: every item removed (from %s)", c->peer);
        } else {
            uv_timer_start(&node->flush_timer, node_flush_cb,
                           (uint64_t) req->delay_s * 1000, 0);
        }
        break;
    case BRIM_OP_EPOCH_PROPOSE:
    case BRIM_OP_EPOCH_COMMIT:
    case BRIM_OP_EPOCH_ABORT:
        return cmd_epoch(node, c, req);
    case BRIM_OP_STREAM_BEGIN:
    case BRIM_OP_STREAM_BATCH:
    case BRIM_OP_STREAM_END:
    case BRIM_OP_COMPLETE:
    case BRIM_OP_FORWARD_GET:
    case BRIM_OP_PULL:
    case BRIM_OP_STREAM_QUERY:
        return brim_migrate_serve(node, c, req);
    case BRIM_OP_LEASE_CONFIRM:
        return brim_node_lease_confirm_serve(node, c, req);
    default:
        if ((brim_op_info(req->op)->flags & BRIM_OPF_KEY) == 0) {
            return cmd_reply_error(c, req->request_id, BRIM_EUNKNOWNOP,
                                   "not served by a node (send it to the "
                                   "coordinator)");
        }
        rc = cmd_data(node, c, req, &rep, now, body, len);
        if (rc == CMD_DEFERRED) {
            return 0;
        }
        if (rc == BRIM_EMOVED || rc == BRIM_ERETRY) {
            rep.status = rc;
            rep.message = brim_strerror(rc);
            rep.message_len = strlen(rep.message);
            break;
        }
        if (rc != 0) {
            return cmd_reply_error(c, req->request_id, rc,
                                   cmd_error_text(req->op, rc));
        }
        break;
    }
    return brim_wire_encode_rep(brim_conn_out(c), req->op, &rep);
}

int
brim_node_dispatch(struct brim_conn *c, const char *body, size_t len)
{
    struct brim_node *node = c->srv->data;
    struct brim_req   req;
    char              errbuf[BRIM_ERRBUF_LEN];
    int               rc;

    errbuf[0] = '\0';
    /* Only the coordinator's connections may carry a topology, and only
     * other nodes' a stream batch (PROTOCOL.md 11). */
    rc = brim_wire_parse_req(body, len, conn_role(c) == BRIM_ROLE_COORD
                                        ? &node->coord_limits
                                        : conn_role(c) == BRIM_ROLE_NODE
                                        ? &node->peer_limits
                                        : &node->cfg.limits,
                             &node->zone, &req, errbuf);
    node->st.requests++;
    if (rc == BRIM_ENOMEM) {
        return rc;                  /* the connection cannot go on */
    }
    if (rc != 0) {
        node->st.bad_requests++;
        rc = cmd_reply_error(c, req.request_id, rc,
                             errbuf[0] != '\0' ? errbuf : brim_strerror(rc));
        return rc == BRIM_ENOMEM ? rc : 0;
    }
    node->st.ops[req.op]++;
    if (conn_role(c) == 0 && req.op != BRIM_OP_HELLO && req.op != BRIM_OP_PING)
    {
        rc = cmd_reply_error(c, req.request_id, BRIM_EBADREQ,
                             "send HELLO first");
        return rc == BRIM_ENOMEM ? rc : 0;
    }
    /* AUTH, and ops that need a proven secret (PROTOCOL.md 12). */
    rc = brim_guard_request(&node->guard, c, conn_role(c), &req);
    if (rc != 0) {
        return rc == BRIM_ENOMEM ? rc : 0;
    }
    rc = cmd_serve(node, c, &req, body, len);
    return rc == BRIM_ENOMEM ? rc : 0;
}

void
brim_node_peer_hello(struct brim_node *node, struct brim_peer *p)
{
    struct brim_peer_hello h;

    memset(&h, 0, sizeof(h));
    h.role = BRIM_ROLE_NODE;
    h.cluster_id = node->cluster_id;
    h.incarnation = node->incarnation;
    h.epoch = node->cl.committed.map.epoch;
    h.name = node->cfg.name;
    h.secret = node->guard.secret;
    h.failures = &node->guard.st.out_failures;
    brim_peer_set_hello(p, &h);
}
