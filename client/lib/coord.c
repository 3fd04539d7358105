/*
 * client/lib/coord.c - cluster mode (DESIGN.md section 5, PROTOCOL.md 10):
 * the topology fetched from the coordinator with MAP_FETCH, the member
 * table that turns owner[partition] into a pooled connection, and the
 * generic request to the coordinator that brimctl uses (MEMBERS, LEAVE,
 * PLAN, CLUSTER_STATS).
 */
#include "client/lib/client_int.h"
#include "client/lib/coord.h"

#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "proto/ops.h"

/* ON_REPLY of MAP_FETCH: decode the topology into ARG. */
static int
coord_topo_reply(struct brim_call *call, const struct brim_rep *rep)
{
    struct brim_topo *t = call->arg;
    char              err[BRIM_ERRBUF_LEN];
    int               rc;

    if (rep->obj == NULL) {
        return BRIM_EBADREPLY;
    }
    err[0] = '\0';
    rc = brim_topo_decode(rep->obj, t, err);
    if (rc == BRIM_EBADREQ) {
        return BRIM_EBADREPLY;
    }
    return rc;
}

void
brim_coord_free(struct brim_client *c)
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

    members = brim_calloc(t->nmembers > 0 ? t->nmembers : 1,
                          sizeof(*members));
    if (members == NULL) {
        brim_topo_destroy(t);
        return BRIM_ENOMEM;
    }
    for (i = 0; i < t->nmembers; i++) {
        if (t->members[i].addr[0] == '\0'
            || t->members[i].state == BRIM_MEMBER_DEAD)
        {
            continue;
        }
        members[i] = brim_pool_get(c, t->members[i].addr);
        if (members[i] == NULL) {
            brim_free(members);
            brim_topo_destroy(t);
            return BRIM_ENOMEM;
        }
    }
    brim_coord_free(c);
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

int
brim_coord_refresh(struct brim_client *c, int64_t deadline_ms)
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
                            c->coord->addr);
        }
        return rc;
    }
    if (c->cluster_id != 0 && t.cluster_id != c->cluster_id) {
        brim_lib_errmsg(c, "%s: topology of another cluster",
                        c->coord->addr);
        brim_topo_destroy(&t);
        return BRIM_EBADREPLY;
    }
    if (c->members != NULL && t.map.epoch < c->topo.map.epoch) {
        brim_topo_destroy(&t);      /* an older map: keep ours */
        return 0;
    }
    rc = coord_install(c, &t);
    if (rc != 0) {
        brim_lib_errmsg(c, "out of memory for the topology");
    }
    return rc;
}

/* What brim_coord_call() hands its callback. */
struct coord_cb_arg {
    brim_coord_cb cb;
    void         *arg;
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
brim_coord_call(struct brim_client *c, uint32_t op, const char *name,
                uint32_t arg_u32, uint32_t weight_ppm, brim_coord_cb cb,
                void *arg)
{
    struct coord_cb_arg a;
    struct brim_call    call;
    int                 rc;

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
    (void) brim_route_run(c, &call, 1, brim_route_deadline(c));
    rc = call.status;
    brim_route_calls_destroy(&call, 1);
    if (rc == 0) {
        c->errmsg[0] = '\0';
    }
    return rc;
}

const struct brim_topo *
brim_coord_topo(const struct brim_client *c)
{
    return c != NULL && c->coord != NULL && c->members != NULL ? &c->topo
                                                               : NULL;
}

void
brim_coord_counts(const struct brim_client *c, uint64_t *moved,
                  uint64_t *retry, uint64_t *refresh)
{
    *moved = c->nmoved;
    *retry = c->nretry;
    *refresh = c->nrefresh;
}
