/*
 * server/coord/cmd.c - brim-coord's request handling: HELLO, JOIN,
 * HEARTBEAT, LEAVE, MAP_FETCH, SUBSCRIBE, MEMBERS and CLUSTER_STATS
 * (PROTOCOL.md section 10.2).
 */
#include "server/coord/coord.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/ring.h"
#include "proto/frame.h"
#include "server/log.h"

static int
reply_err(struct brim_conn *c, uint64_t id, int status, const char *msg)
{
    return brim_wire_encode_status(brim_conn_out(c), id, status, msg,
                                   strlen(msg));
}

static int
reply_epoch(struct brim_conn *c, uint32_t op, uint64_t id, uint64_t epoch,
            uint32_t lease_ms)
{
    struct brim_rep rep;

    memset(&rep, 0, sizeof(rep));
    rep.request_id = id;
    rep.epoch = epoch;
    rep.lease_ms = lease_ms;
    return brim_wire_encode_rep(brim_conn_out(c), op, &rep);
}

static int
cmd_hello(struct coord *co, struct brim_conn *c, struct coord_conn *cc,
          const struct brim_req *req)
{
    struct brim_rep rep;

    if (req->hello.cluster_id != 0
        && req->hello.cluster_id != co->st.settings.cluster_id)
    {
        return reply_err(c, req->request_id, BRIM_EDENIED,
                         "hello: this coordinator runs another cluster");
    }
    cc->role = req->hello.role;
    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.hello.version = BRIM_WIRE_VERSION;
    rep.hello.role = BRIM_ROLE_COORD;
    rep.hello.cluster_id = co->st.settings.cluster_id;
    rep.hello.name = "coord";
    rep.hello.name_len = 5;
    rep.epoch = co->st.committed.map.epoch;
    brim_wire_limits_default(&rep.limits);
    return brim_wire_encode_rep(brim_conn_out(c), BRIM_OP_HELLO, &rep);
}

static int
cmd_join(struct coord *co, struct brim_conn *c, struct coord_conn *cc,
         const struct brim_req *req)
{
    struct coord_member    *mb;
    struct sockaddr_storage sa;
    char                    addr[BRIM_ADDR_MAX + 1], msg[256];
    uint32_t                w = req->weight_ppm;
    uint64_t                now = uv_now(co->loop);

    memcpy(addr, req->addr, req->addr_len);
    addr[req->addr_len] = '\0';
    if (w == 0) {
        w = BRIM_WEIGHT_PPM_ONE;
    }
    if (!brim_ring_name_valid(req->name, req->name_len)
        || brim_addr_parse(addr, &sa) != 0 || w < BRIM_WEIGHT_PPM_MIN
        || w > BRIM_WEIGHT_PPM_MAX)
    {
        return reply_err(c, req->request_id, BRIM_EINVAL,
                         "join: bad name, addr or weight_ppm");
    }
    mb = coord_member_find(co, req->name, req->name_len);
    if (mb != NULL && mb->m.incarnation != req->hello.incarnation) {
        if (mb->conn != NULL && mb->conn != c
            && mb->m.state != BRIM_MEMBER_DEAD)
        {
            snprintf(msg, sizeof(msg), "join: %s is held by a live member "
                     "(incarnation %" PRIx64 ", its connection is open)",
                     mb->m.name, mb->m.incarnation);
            return reply_err(c, req->request_id, BRIM_EEXISTS, msg);
        }
        /* The old incarnation is gone: fence it, take its place. */
        brim_log_info("member %s: incarnation %" PRIx64 " replaces %" PRIx64,
                      mb->m.name, req->hello.incarnation, mb->m.incarnation);
        brim_peer_close(&mb->peer);
        co->dirty = 1;
    }
    if (mb == NULL) {
        mb = coord_member_new(co, req->name, req->name_len);
        if (mb == NULL) {
            return reply_err(c, req->request_id, BRIM_ENOMEM, "join: no memory");
        }
        mb->m.state = BRIM_MEMBER_JOINING;
        if (co->join_since_ms == 0) {
            co->join_since_ms = now;
        }
        brim_log_info("member %s (%s) joining", mb->m.name, addr);
    }
    if (strcmp(mb->m.addr, addr) != 0 || mb->m.weight_ppm != w) {
        co->dirty = co->dirty || mb->m.state != BRIM_MEMBER_JOINING;
    }
    if (mb->m.state == BRIM_MEMBER_DEAD) {
        mb->m.state = BRIM_MEMBER_UP;
        co->dirty = 1;
    }
    memcpy(mb->m.addr, addr, req->addr_len + 1);
    mb->m.weight_ppm = w;
    mb->m.incarnation = req->hello.incarnation;
    mb->last_hb_ms = now;
    mb->conn = c;
    cc->member = mb;
    return coord_reply_topo(c, BRIM_OP_JOIN, req->request_id,
                            &co->st.committed);
}

static int
cmd_heartbeat(struct coord *co, struct brim_conn *c, struct coord_conn *cc,
              const struct brim_req *req)
{
    struct coord_member *mb;

    mb = coord_member_find(co, req->name, req->name_len);
    if (mb == NULL || mb->m.incarnation != req->hello.incarnation
        || mb->m.state == BRIM_MEMBER_DEAD)
    {
        return reply_err(c, req->request_id, BRIM_EDENIED,
                         "heartbeat: not a member (or fenced): join again");
    }
    mb->last_hb_ms = uv_now(co->loop);
    if (mb->conn == NULL) {
        mb->conn = c;
        cc->member = mb;
    }
    return reply_epoch(c, BRIM_OP_HEARTBEAT, req->request_id,
                       co->st.committed.map.epoch,
                       co->st.settings.dead_after_ms);
}

static int
cmd_leave(struct coord *co, struct brim_conn *c, const struct brim_req *req)
{
    struct coord_member *mb, *o;
    char                 msg[256];
    int                  others = 0;

    mb = coord_member_find(co, req->name, req->name_len);
    if (mb == NULL || mb->leaving) {
        return reply_err(c, req->request_id, BRIM_ENOTFOUND,
                         "leave: no such member");
    }
    for (o = co->members; o != NULL; o = o->next) {
        others += o != mb && !o->removed && !o->leaving
                  && o->m.state != BRIM_MEMBER_DEAD;
    }
    if (others == 0 && brim_topo_find(&co->st.committed, mb->m.name) >= 0
        && req->arg_u32 == 0)
    {
        snprintf(msg, sizeof(msg), "leave: %s is the last member: its keys "
                 "would be lost (use force)", mb->m.name);
        return reply_err(c, req->request_id, BRIM_EDENIED, msg);
    }
    brim_log_info("member %s leaving%s", mb->m.name,
                  req->arg_u32 != 0 ? " (forced)" : "");
    mb->leaving = 1;
    co->dirty = 1;
    co->retry_at_ms = 0;
    return reply_epoch(c, BRIM_OP_LEAVE, req->request_id,
                       co->st.next_epoch + (uint64_t) co->st.has_pending, 0);
}

/* A member's partitions in the committed map. */
static uint32_t
owned(const struct brim_topo *t, const char *name)
{
    int32_t  idx = brim_topo_find(t, name);
    uint32_t i, n = 0;

    for (i = 0; idx >= 0 && i < t->map.npartitions; i++) {
        n += t->map.owner[i] == (uint16_t) idx;
    }
    return n;
}

static int
cmd_members(struct coord *co, struct brim_conn *c, const struct brim_req *req)
{
    struct brim_buf     *out = brim_conn_out(c);
    struct coord_member *mb;
    msgpack_packer       pk;
    size_t               mark;
    uint32_t             n = 0;
    int                  err;

    for (mb = co->members; mb != NULL; mb = mb->next) {
        n += !mb->removed;
    }
    if (brim_wire_mget_begin(out, req->request_id, n, &mark) != 0) {
        return BRIM_ENOMEM;
    }
    brim_wire_packer_init(&pk, out);
    err = 0;
    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (mb->removed) {
            continue;
        }
        err |= msgpack_pack_array(&pk, 6);
        err |= msgpack_pack_str_with_body(&pk, mb->m.name, strlen(mb->m.name));
        err |= msgpack_pack_str_with_body(&pk, mb->m.addr, strlen(mb->m.addr));
        err |= msgpack_pack_uint32(&pk, mb->leaving ? BRIM_MEMBER_LEAVING
                                                    : mb->m.state);
        err |= msgpack_pack_uint32(&pk, mb->m.weight_ppm);
        err |= msgpack_pack_uint32(&pk, owned(&co->st.committed, mb->m.name));
        err |= msgpack_pack_uint32(&pk,
                                   (uint32_t) (uv_now(co->loop)
                                               - mb->last_hb_ms));
    }
    if (err != 0) {
        brim_frame_abort(out, mark);
        return BRIM_ENOMEM;
    }
    return brim_frame_end(out, mark);
}

static int
cmd_stats(struct coord *co, struct brim_conn *c, const struct brim_req *req)
{
    struct brim_buf *out = brim_conn_out(c);
    const struct brim_coord_settings *s = &co->st.settings;
    size_t           mark;
    int              err;

    if (brim_wire_stats_begin(out, req->request_id, 7, &mark) != 0) {
        return BRIM_ENOMEM;
    }
    err = brim_wire_stats_u64(out, "epoch", co->st.committed.map.epoch);
    err |= brim_wire_stats_f64(out, "eps", s->eps_ppm == BRIM_EPS_NONE
                                               ? -1.0
                                               : (double) s->eps_ppm / 1e6);
    err |= brim_wire_stats_u64(out, "partitions", s->partitions);
    err |= brim_wire_stats_u64(out, "tokens", s->tokens_per_node);
    err |= brim_wire_stats_u64(out, "members", co->st.committed.nmembers);
    err |= brim_wire_stats_u64(out, "pending", (uint64_t) co->st.has_pending);
    err |= brim_wire_stats_u64(out, "next_epoch", co->st.next_epoch);
    if (err != 0) {
        brim_frame_abort(out, mark);
        return BRIM_ENOMEM;
    }
    return brim_frame_end(out, mark);
}

static int
cmd_run(struct coord *co, struct brim_conn *c, struct coord_conn *cc,
        const struct brim_req *req)
{
    const struct brim_op_info *info = brim_op_info(req->op);

    if (req->op == BRIM_OP_HELLO) {
        return cmd_hello(co, c, cc, req);
    }
    if (req->op == BRIM_OP_PING) {
        return brim_wire_encode_status(brim_conn_out(c), req->request_id, 0,
                                       NULL, 0);
    }
    if (cc->role == 0) {
        return reply_err(c, req->request_id, BRIM_EDENIED, "HELLO first");
    }
    if ((info->flags & BRIM_OPF_ADMIN) && cc->role != BRIM_ROLE_ADMIN
        && cc->role != BRIM_ROLE_COORD)
    {
        return reply_err(c, req->request_id, BRIM_EDENIED,
                         "an admin op: HELLO with role admin");
    }
    switch (req->op) {
    case BRIM_OP_JOIN:
        return cmd_join(co, c, cc, req);
    case BRIM_OP_HEARTBEAT:
        return cmd_heartbeat(co, c, cc, req);
    case BRIM_OP_LEAVE:
        return cmd_leave(co, c, req);
    case BRIM_OP_MAP_FETCH:
        return coord_reply_topo(c, req->op, req->request_id,
                                &co->st.committed);
    case BRIM_OP_SUBSCRIBE:
        if (co->st.committed.map.epoch > req->arg_epoch) {
            return coord_reply_topo(c, req->op, req->request_id,
                                    &co->st.committed);
        }
        cc->sub_id = req->request_id;
        cc->sub_known = req->arg_epoch;
        cc->sub_deadline = uv_now(co->loop) + COORD_SUBSCRIBE_HOLD_MS;
        return 0;
    case BRIM_OP_MEMBERS:
        return cmd_members(co, c, req);
    case BRIM_OP_CLUSTER_STATS:
        return cmd_stats(co, c, req);
    default:
        return reply_err(c, req->request_id, BRIM_EUNKNOWNOP,
                         "not served by the coordinator");
    }
}

int
coord_dispatch(struct brim_conn *c, const char *body, size_t len)
{
    struct coord           *co = c->srv->data;
    struct coord_conn      *cc = c->data;
    struct brim_wire_limits lim;
    struct brim_req         req;
    char                    err[BRIM_ERRBUF_LEN] = "";
    int                     rc;

    if (cc == NULL) {
        cc = brim_calloc(1, sizeof(*cc));
        if (cc == NULL) {
            return BRIM_ENOMEM;
        }
        c->data = cc;
    }
    brim_wire_limits_default(&lim);
    rc = brim_wire_parse_req(body, len, &lim, &co->zone, &req, err);
    if (rc != 0) {
        rc = reply_err(c, req.request_id, rc, err);
    } else {
        rc = cmd_run(co, c, cc, &req);
    }
    return rc == BRIM_ENOMEM ? rc : 0;
}

void
coord_conn_closed(struct brim_conn *c)
{
    struct coord_conn *cc = c->data;

    if (cc != NULL && cc->member != NULL && cc->member->conn == c) {
        cc->member->conn = NULL;
    }
    brim_free(cc);
    c->data = NULL;
}
