/*
 * client/lib/coordlink.c - libbrim's link to the coordinator in cluster
 * mode (DESIGN.md section 5, PROTOCOL.md 10): the topology fetched with
 * MAP_FETCH or pushed to a held SUBSCRIBE, the member table that turns
 * owner[partition] into a pooled connection, and the generic request to
 * the coordinator that brimctl uses (MEMBERS, LEAVE, PLAN, CLUSTER_STATS).
 *
 * The subscription lives on a connection of its own and, libbrim being
 * synchronous (every byte moves inside an API call), it is advanced one
 * non-blocking step at the start of each call: a call never waits for it,
 * and a coordinator that is gone costs a call nothing but a failed
 * connect() now and then (backoff up to BRIM_SUB_BACKOFF_MAX_MS).
 */
#include "client/lib/client_int.h"
#include "client/lib/coordlink.h"

#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "proto/ops.h"

/* Decode the topology of REP (MAP_FETCH or SUBSCRIBE) into T. */
static int
coord_topo_decode(const struct brim_rep *rep, struct brim_topo *t)
{
    int rc;

    if (rep->obj == NULL) {
        memset(t, 0, sizeof(*t));
        return BRIM_EBADREPLY;
    }
    rc = brim_topo_decode(rep->obj, t, NULL);
    return rc == BRIM_EBADREQ ? BRIM_EBADREPLY : rc;
}

/* ON_REPLY of MAP_FETCH: decode the topology into ARG. */
static int
coord_topo_reply(struct brim_call *call, const struct brim_rep *rep)
{
    return coord_topo_decode(rep, call->arg);
}

void
brim_coordlink_free(struct brim_client *c)
{
    brim_topo_destroy(&c->topo);
    memset(&c->topo, 0, sizeof(c->topo));
    brim_free(c->members);
    c->members = NULL;
}

/* Make T (taken over) the routing map of C. */
static int
coord_install(struct brim_client *c, struct brim_topo *t)
{
    struct brim_pool_node **members, *n;
    uint32_t                i;

    members = brim_calloc(t->nmembers > 0 ? t->nmembers : 1, sizeof(*members));
    if (members == NULL) {
        brim_topo_destroy(t);
        return BRIM_ENOMEM;
    }
    for (i = 0; i < t->nmembers; i++) {
        if (t->members[i].addr[0] == '\0'
            || t->members[i].state == BRIM_MEMBER_DEAD) {
            continue;
        }
        members[i] = brim_pool_get(c, t->members[i].addr);
        if (members[i] == NULL) {
            brim_free(members);
            brim_topo_destroy(t);
            return BRIM_ENOMEM;
        }
    }
    brim_coordlink_free(c);
    c->topo = *t;
    c->members = members;
    c->epoch = t->map.epoch;
    c->cluster_id = t->cluster_id;
    /* Connections to nodes that left the map are closed, not kept. */
    for (n = c->nodes; n != NULL; n = n->next) {
        if (n == c->coord) {
            continue;
        }
        for (i = 0; i < t->nmembers && members[i] != n; i++) {
        }
        if (i == t->nmembers) {
            brim_pool_close(n);
        }
    }
    return 0;
}

/*
 * Make T (taken over) C's routing map when it is of C's cluster and its
 * epoch is at least MIN_EPOCH; else drop it. Returns 1 (installed), 0 (an
 * older map: dropped), BRIM_EBADREPLY (another cluster) or BRIM_ENOMEM.
 */
static int
coord_adopt(struct brim_client *c, struct brim_topo *t, uint64_t min_epoch)
{
    int rc;

    if (c->cluster_id != 0 && t->cluster_id != c->cluster_id) {
        brim_lib_errmsg(c, "%s: topology of another cluster",
                        c->coord->link.addr);
        brim_topo_destroy(t);
        return BRIM_EBADREPLY;
    }
    if (t->map.epoch < min_epoch) {
        brim_topo_destroy(t);
        return 0;
    }
    rc = coord_install(c, t);
    if (rc != 0) {
        brim_lib_errmsg(c, "out of memory for the topology");
        return rc;
    }
    return 1;
}

int
brim_coordlink_refresh(struct brim_client *c, int64_t deadline_ms)
{
    struct brim_topo t;
    struct brim_call call;
    int              rc;

    if (c->coord == NULL) {
        return BRIM_EINVAL;
    }
    memset(&t, 0, sizeof(t));
    memset(&call, 0, sizeof(call));
    call.req.op = BRIM_OP_MAP_FETCH;
    call.target = c->coord;
    call.on_reply = coord_topo_reply;
    call.arg = &t;
    c->nrefresh++;
    (void) brim_route_run(c, &call, 1, deadline_ms);
    rc = call.status;
    brim_route_calls_destroy(&call, 1);
    if (rc != 0) {
        brim_topo_destroy(&t);
        if (rc == BRIM_EBADREPLY) {
            brim_lib_errmsg(c, "%s: malformed topology in MAP_FETCH reply",
                            c->coord->link.addr);
        }
        return rc;
    }
    /* An older map than ours is dropped (a lagging coordinator). */
    rc = coord_adopt(c, &t, c->members != NULL ? c->topo.map.epoch : 0);
    return rc < 0 ? rc : 0;
}

/* ---- the subscription ---- */

/* Queue a SUBSCRIBE with C's epoch on the subscription's link at NOW. */
static int
sub_send(struct brim_client *c, int64_t now)
{
    struct brim_sub *s = &c->sub;
    struct brim_req  req;

    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_SUBSCRIBE;
    req.epoch = c->epoch;
    req.arg_epoch = c->epoch;
    s->due_ms = now + BRIM_SUB_HOLD_MS + BRIM_SUB_SLACK_MS;
    return brim_link_queue(&s->conn->link, &req, NULL, 0, NULL);
}

/*
 * Handle REP, a SUBSCRIBE's reply (the link took HELLO's): install a
 * newer map and send the next SUBSCRIBE. Returns 0 or the error that ends
 * the connection (a refusal's status).
 */
static int
sub_reply(struct brim_client *c, const struct brim_rep *rep)
{
    struct brim_sub *s = &c->sub;
    struct brim_topo t;
    int              rc;

    if (rep->status != 0) {
        return rep->status; /* DENIED (another cluster)... */
    }
    rc = coord_topo_decode(rep, &t);
    if (rc == 0) {
        /* Only a newer epoch counts: the same one comes back when the
         * coordinator's hold runs out, or after a MAP_FETCH got it. */
        rc = coord_adopt(c, &t, c->epoch + 1);
        if (rc == 1) {
            s->npushed++;
        }
    } else {
        brim_topo_destroy(&t);
    }
    if (rc < 0) {
        return rc;
    }
    s->backoff_ms = BRIM_SUB_BACKOFF_MIN_MS;
    s->attempts = 0;
    return sub_send(c, s->looked_ms); /* this step's time */
}

/* Read what the subscription's socket holds, handling whole replies. */
static int
sub_read(struct brim_client *c)
{
    struct brim_link      *l = &c->sub.conn->link;
    struct brim_link_reply r;
    int                    rc;

    for (;;) {
        rc = brim_link_read(l);
        if (rc <= 0) {
            break; /* 0: it would block */
        }
        while ((rc = brim_link_take(l, &r)) == 1) {
            rc = sub_reply(c, &r.rep);
            if (rc != 0) {
                return rc;
            }
        }
        if (rc != 0) {
            return rc;
        }
    }
    brim_link_trim(l); /* a large topology's memory */
    return rc;
}

/* One step of the subscription at NOW, from any state but OFF. */
static int
sub_step(struct brim_client *c, int64_t now)
{
    struct brim_sub  *s = &c->sub;
    struct brim_link *l = &s->conn->link;
    int               rc;

    if (s->state == BRIM_SUB_IDLE) {
        /* HELLO states what the client knows now. */
        l->conf.cluster_id = c->cluster_id;
        l->epoch = c->epoch;
        rc = brim_link_connect_start(l, s->attempts++);
        if (rc != 0) {
            return rc;
        }
        s->state = BRIM_SUB_CONNECTING;
        s->due_ms = now + c->connect_timeout_ms;
    }
    if (s->state == BRIM_SUB_CONNECTING) {
        rc = brim_link_connect_done(l); /* queues HELLO */
        if (rc == BRIM_EAGAIN) {
            return now >= s->due_ms ? BRIM_ETIMEDOUT : 0;
        }
        if (rc == 0) {
            /* Pipelined: the coordinator answers in order, HELLO first. */
            rc = sub_send(c, now);
        }
        if (rc != 0) {
            return rc;
        }
        s->state = BRIM_SUB_WAITING;
    }
    /* Replies first: one that arrived while C was idle is not a timeout. */
    rc = sub_read(c);
    if (rc == 0) {
        rc = brim_link_flush(l);
    }
    if (rc == 0 && now >= s->due_ms) {
        rc = BRIM_ETIMEDOUT;
    }
    return rc;
}

int
brim_coordlink_sub_start(struct brim_client *c)
{
    struct brim_sub *s = &c->sub;

    /* No AUTH on this connection (PROTOCOL.md 12.1): a coordinator with a
     * client secret refuses its SUBSCRIBE, and the map then moves on
     * MOVED, RETRY and unreachable nodes alone. */
    s->conn = brim_pool_node_new(c, c->coord->link.addr, 0);
    if (s->conn == NULL) {
        return BRIM_ENOMEM;
    }
    /* Topology replies exceed the data frame limit (PROTOCOL.md 10.1). */
    s->conn->link.conf.frame_min = c->coord->link.conf.frame_min;
    s->state = BRIM_SUB_IDLE;
    s->backoff_ms = BRIM_SUB_BACKOFF_MIN_MS;
    s->retry_at_ms = 0;
    brim_coordlink_sub_poll(c, 1);
    return 0;
}

void
brim_coordlink_sub_poll(struct brim_client *c, int force)
{
    struct brim_sub *s = &c->sub;
    char             keep[BRIM_ERRBUF_LEN];
    int64_t          now;
    int              rc;

    if (s->state == BRIM_SUB_OFF) {
        return;
    }
    now = brim_sock_now_ms();
    if ((force == 0 && now == s->looked_ms)
        || (s->state == BRIM_SUB_IDLE && now < s->retry_at_ms))
    {
        return;
    }
    s->looked_ms = now;
    /* Its failures are not the call's: keep the call's message. */
    memcpy(keep, c->errmsg, sizeof(keep));
    rc = sub_step(c, now);
    memcpy(c->errmsg, keep, sizeof(keep));
    if (rc == 0) {
        return;
    }
    brim_pool_close(s->conn);
    if (rc == BRIM_EUNKNOWNOP || rc == BRIM_EDENIED) {
        /* A coordinator without SUBSCRIBE, or one that wants a proof this
         * client cannot give (PROTOCOL.md 12.3): asking again would only
         * be refused again. MOVED and RETRY still move the map. */
        s->state = BRIM_SUB_OFF;
        return;
    }
    s->state = BRIM_SUB_IDLE;
    s->retry_at_ms = now + s->backoff_ms;
    s->backoff_ms = BRIM_MIN(s->backoff_ms * 2, BRIM_SUB_BACKOFF_MAX_MS);
}

void
brim_coordlink_sub_free(struct brim_client *c)
{
    brim_pool_node_free(c->sub.conn);
    memset(&c->sub, 0, sizeof(c->sub));
}

void
brim_coordlink_subscribe(struct brim_client *c, int on)
{
    if (c == NULL || c->sub.conn == NULL) {
        return;
    }
    brim_pool_close(c->sub.conn);
    c->sub.state = on ? BRIM_SUB_IDLE : BRIM_SUB_OFF;
    c->sub.retry_at_ms = 0;
}

uint64_t
brim_coordlink_pushed(const struct brim_client *c)
{
    return c != NULL ? c->sub.npushed : 0;
}

/* What brim_coordlink_call() hands its callback. */
struct coord_cb_arg {
    brim_coordlink_cb cb;
    void             *arg;
};

static int
coord_obj_reply(struct brim_call *call, const struct brim_rep *rep)
{
    struct coord_cb_arg *a = call->arg;

    if (a->cb == NULL) {
        return 0;
    }
    return a->cb(rep->obj, rep->epoch, a->arg);
}

int
brim_coordlink_call(struct brim_client *c, uint32_t op, const char *name,
                    uint32_t arg_u32, uint32_t weight_ppm, brim_coordlink_cb cb,
                    void *arg)
{
    struct coord_cb_arg a;
    struct brim_call    call;

    if (c == NULL || c->coord == NULL) {
        if (c != NULL) {
            brim_lib_errmsg(c, "not connected to a coordinator");
        }
        return BRIM_EINVAL;
    }
    c->errmsg[0] = '\0';
    a.cb = cb;
    a.arg = arg;
    memset(&call, 0, sizeof(call));
    call.req.op = op;
    call.req.name = name;
    call.req.name_len = name != NULL ? strlen(name) : 0;
    call.req.arg_u32 = arg_u32;
    call.req.weight_ppm = weight_ppm;
    call.target = c->coord;
    call.on_reply = coord_obj_reply;
    call.arg = &a;
    return brim_route_one(c, &call);
}

const struct brim_topo *
brim_coordlink_topo(const struct brim_client *c)
{
    return c != NULL && c->coord != NULL && c->members != NULL ? &c->topo
                                                               : NULL;
}

void
brim_coordlink_counts(const struct brim_client *c, uint64_t *moved,
                      uint64_t *retry, uint64_t *refresh)
{
    *moved = c->nmoved;
    *retry = c->nretry;
    *refresh = c->nrefresh;
}
