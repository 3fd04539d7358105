/*
 * server/node/coord.c - a cluster node's side of its coordinator
 * connection (PROTOCOL.md 10.1): connect, HELLO as role node, JOIN with
 * name, address, weight and incarnation, adopt the committed topology the
 * reply carries, then HEARTBEAT with a few stats every interval. A lost
 * connection is retried with backoff and the node joins again under the
 * same incarnation; a DENIED heartbeat means this incarnation is fenced,
 * and the node stops serving and exits non-zero (rejoining as a new
 * incarnation is not done yet).
 */
#include "server/node/node.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/defs.h"
#include "proto/frame.h"
#include "server/log.h"

#define COORD_HEARTBEAT_MS 500      /* default interval */
#define COORD_BACKOFF_MIN_MS 100    /* first reconnect delay */
#define COORD_BACKOFF_MAX_MS 5000   /* longest reconnect delay */

static void coord_connect(struct brim_node *node);

/* Encode REQ and send it on the coordinator connection; CB gets the reply
 * body. Returns 0 or a BRIM_E* code (the connection is then closed). */
static int
coord_send(struct brim_node *node, struct brim_req *req,
           brim_peer_reply_cb cb)
{
    struct brim_buf buf;
    int             rc;

    brim_buf_init(&buf);
    req->request_id = ++node->cl.next_id;
    req->epoch = node->cl.committed.map.epoch;
    rc = brim_wire_encode_req(&buf, req);
    if (rc == 0) {
        rc = brim_peer_call(&node->cl.coord, &buf, cb, node);
    }
    brim_buf_destroy(&buf);
    if (rc != 0) {
        brim_log_warn("coordinator %s: cannot send %s: %s",
                      node->cfg.coordinator, brim_op_name(req->op),
                      brim_strerror(rc));
        brim_peer_close(&node->cl.coord);
    }
    return rc;
}

/* Decode the reply BODY to OP into *REP, closing the connection when it is
 * malformed. Returns 0 or a BRIM_E* code. */
static int
coord_parse(struct brim_node *node, uint32_t op, const char *body,
            size_t len, struct brim_rep *rep)
{
    char errbuf[BRIM_ERRBUF_LEN];
    int  rc;

    errbuf[0] = '\0';
    rc = brim_wire_parse_rep(body, len, op, &node->coord_limits, &node->zone,
                             rep, errbuf);
    if (rc != 0) {
        brim_log_warn("coordinator %s: bad %s reply: %s; reconnecting",
                      node->cfg.coordinator, brim_op_name(op), errbuf);
        brim_peer_close(&node->cl.coord);
    }
    return rc;
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
static void
coord_give_up(struct brim_node *node)
{
    node->cl.fenced = 1;            /* data ops get RETRY meanwhile */
    node->exit_code = 1;
    brim_node_stop(node);
}

static void
coord_map_rep(struct brim_peer *p, int status, const char *body, size_t len,
              void *arg)
{
    struct brim_node *node = arg;
    struct brim_rep   rep;
    char              errbuf[BRIM_ERRBUF_LEN];

    if (status != 0 || coord_parse(node, BRIM_OP_MAP_FETCH, body, len, &rep)
        != 0 || rep.status != 0)
    {
        return;
    }
    if (brim_node_adopt(node, rep.obj, errbuf) != 0) {
        brim_log_warn("coordinator %s: fetched map refused: %s",
                      node->cfg.coordinator, errbuf);
    }
}

/* Fetch the committed map when the coordinator knows a newer epoch. */
void
brim_node_coord_fetch(struct brim_node *node)
{
    struct brim_req req;

    if (node->cl.coord.state != BRIM_PEER_OPEN || !node->cl.joined) {
        return;
    }
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_MAP_FETCH;
    coord_send(node, &req, coord_map_rep);
}

static void
coord_heartbeat_rep(struct brim_peer *p, int status, const char *body,
                    size_t len, void *arg)
{
    struct brim_node *node = arg;
    struct brim_rep   rep;
    char              why[256];

    if (status != 0
        || coord_parse(node, BRIM_OP_HEARTBEAT, body, len, &rep) != 0)
    {
        return;
    }
    if (rep.status == BRIM_EDENIED) {
        brim_log_error("coordinator %s fenced this node (incarnation "
                       "%016" PRIx64 "): %s; exiting",
                       node->cfg.coordinator, node->incarnation,
                       coord_why(&rep, why, sizeof(why)));
        coord_give_up(node);
        return;
    }
    if (rep.status != 0) {
        brim_log_warn("coordinator %s: heartbeat: %s", node->cfg.coordinator,
                      coord_why(&rep, why, sizeof(why)));
        return;
    }
    if (rep.lease_ms > 0) {
        /* Three heartbeats per lease, so one lost one does not matter. */
        node->cl.heartbeat_ms = BRIM_MAX(50u, BRIM_MIN(COORD_HEARTBEAT_MS,
                                                      rep.lease_ms / 3));
    }
    if (rep.epoch > node->cl.committed.map.epoch
        && !(node->cl.has_pending && rep.epoch <= node->cl.pending.map.epoch))
    {
        brim_node_coord_fetch(node);
    }
}

/* Build HEARTBEAT's stats map in KV (4 pairs) and *MAP. */
static void
coord_stats(struct brim_node *node, msgpack_object_kv *kv,
            msgpack_object *map)
{
    static const char *names[] = {"keys", "bytes", "partitions",
                                  "requests_per_sec"};
    struct brim_store_stats ss;
    uint64_t                v[4];
    uint32_t                i;

    brim_store_get_stats(node->store, &ss);
    v[0] = ss.items;
    v[1] = ss.item_bytes;
    v[2] = brim_node_owned(node);
    v[3] = (uint64_t) (node->st.requests_per_sec + 0.5);
    for (i = 0; i < 4; i++) {
        kv[i].key.type = MSGPACK_OBJECT_STR;
        kv[i].key.via.str.ptr = names[i];
        kv[i].key.via.str.size = (uint32_t) strlen(names[i]);
        kv[i].val.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
        kv[i].val.via.u64 = v[i];
    }
    map->type = MSGPACK_OBJECT_MAP;
    map->via.map.size = 4;
    map->via.map.ptr = kv;
}

static void
coord_timer_cb(uv_timer_t *t)
{
    struct brim_node *node = BRIM_CONTAINER_OF(t, struct brim_node, cl.timer);
    struct brim_req   req;
    msgpack_object_kv kv[4];
    msgpack_object    map;

    if (node->cl.coord.state == BRIM_PEER_IDLE) {
        coord_connect(node);        /* the backoff delay is over */
        return;
    }
    if (node->cl.coord.state != BRIM_PEER_OPEN || !node->cl.joined) {
        return;
    }
    coord_stats(node, kv, &map);
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_HEARTBEAT;
    req.name = node->cfg.name;
    req.name_len = strlen(node->cfg.name);
    req.hello.incarnation = node->incarnation;
    req.obj = &map;
    if (coord_send(node, &req, coord_heartbeat_rep) == 0) {
        uv_timer_start(&node->cl.timer, coord_timer_cb,
                       node->cl.heartbeat_ms, 0);
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
    if (rep.status == BRIM_EEXISTS || rep.status == BRIM_EINVAL
        || rep.status == BRIM_EDENIED)
    {
        brim_log_error("coordinator %s refused the join of %s: %s",
                       node->cfg.coordinator, node->cfg.name,
                       coord_why(&rep, why, sizeof(why)));
        coord_give_up(node);
        return;
    }
    if (rep.status == 0 && brim_node_adopt(node, rep.obj, errbuf) != 0) {
        brim_log_error("coordinator %s: the map in JOIN's reply is refused: "
                       "%s", node->cfg.coordinator, errbuf);
        coord_give_up(node);
        return;
    }
    /* OK, or BUSY: queued behind a change in progress; heartbeat either
     * way, and the coordinator proposes the epoch that adds us. */
    brim_log_info("joined via coordinator %s%s (epoch %" PRIu64 ")",
                  node->cfg.coordinator, rep.status == 0 ? "" : " (queued)",
                  node->cl.committed.map.epoch);
    node->cl.joined = 1;
    node->cl.backoff_ms = COORD_BACKOFF_MIN_MS;
    uv_timer_start(&node->cl.timer, coord_timer_cb, node->cl.heartbeat_ms, 0);
}

/* The address we serve on, as the coordinator should give it to others:
 * the --listen address with the port we actually bound. */
static void
coord_self_addr(struct brim_node *node, char *out, size_t len)
{
    const char *colon = strrchr(node->cfg.listen, ':');
    int         host_len = colon != NULL
                           ? (int) (colon - node->cfg.listen) : 0;

    snprintf(out, len, "%.*s:%d", host_len, node->cfg.listen,
             brim_server_port(&node->srv));
}

static void
coord_hello_rep(struct brim_peer *p, int status, const char *body,
                size_t len, void *arg)
{
    struct brim_node *node = arg;
    struct brim_rep   rep;
    struct brim_req   req;
    char              why[256], addr[BRIM_ADDR_MAX + 1];

    if (status != 0
        || coord_parse(node, BRIM_OP_HELLO, body, len, &rep) != 0)
    {
        return;
    }
    if (rep.status != 0) {
        brim_log_error("coordinator %s refused HELLO: %s",
                       node->cfg.coordinator,
                       coord_why(&rep, why, sizeof(why)));
        coord_give_up(node);
        return;
    }
    coord_self_addr(node, addr, sizeof(addr));
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_JOIN;
    req.name = node->cfg.name;
    req.name_len = strlen(node->cfg.name);
    req.addr = addr;
    req.addr_len = strlen(addr);
    req.weight_ppm = node->cfg.weight_ppm;
    req.hello.incarnation = node->incarnation;
    coord_send(node, &req, coord_join_rep);
}

static void
coord_connect_cb(struct brim_peer *p, int status)
{
    struct brim_node *node = p->data;
    struct brim_req   req;

    if (status != 0) {
        brim_log_info("coordinator %s: connect: %s", node->cfg.coordinator,
                      brim_strerror(status));
        return;                     /* the close callback retries */
    }
    brim_log_info("connected to coordinator %s", node->cfg.coordinator);
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_HELLO;
    req.hello.version = BRIM_WIRE_VERSION;
    req.hello.cluster_id = node->cluster_id;
    req.hello.role = BRIM_ROLE_NODE;
    req.hello.incarnation = node->incarnation;
    req.hello.name = node->cfg.name;
    req.hello.name_len = strlen(node->cfg.name);
    coord_send(node, &req, coord_hello_rep);
}

static void
coord_close_cb(struct brim_peer *p, int status)
{
    struct brim_node *node = p->data;

    node->cl.joined = 0;
    if (node->stopping) {
        return;
    }
    brim_log_info("coordinator %s: connection closed (%s); retrying in "
                  "%u ms", node->cfg.coordinator, brim_strerror(status),
                  node->cl.backoff_ms);
    uv_timer_start(&node->cl.timer, coord_timer_cb, node->cl.backoff_ms, 0);
    node->cl.backoff_ms = BRIM_MIN(2 * node->cl.backoff_ms,
                                   COORD_BACKOFF_MAX_MS);
}

static void
coord_connect(struct brim_node *node)
{
    char errbuf[BRIM_ERRBUF_LEN];

    if (brim_peer_connect(&node->cl.coord, node->cfg.coordinator, errbuf)
        == BRIM_EINVAL)
    {
        brim_log_error("coordinator: %s", errbuf);
        coord_give_up(node);
    }
}

void
brim_node_coord_start(struct brim_node *node)
{
    brim_peer_init(&node->cl.coord, node->loop,
                   node->coord_limits.max_frame_bytes, coord_connect_cb,
                   coord_close_cb, node);
    uv_timer_init(node->loop, &node->cl.timer);
    node->cl.heartbeat_ms = COORD_HEARTBEAT_MS;
    node->cl.backoff_ms = COORD_BACKOFF_MIN_MS;
    coord_connect(node);
}

void
brim_node_coord_stop(struct brim_node *node)
{
    brim_peer_close(&node->cl.coord);
    uv_close((uv_handle_t *) &node->cl.timer, NULL);
}
