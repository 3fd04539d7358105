/*
 * client/lib/coordlink.c - libbrim's keeper of the topology in cluster
 * mode (DESIGN.md sections 5 and 12, PROTOCOL.md 5 and 10): the map
 * fetched with MAP_FETCH from any node or coordinator of the seed list,
 * fetched again from the node whose data reply named a newer epoch, the
 * member table that turns owner[partition] into a pooled connection, and
 * the generic request to a coordinator that brimctl uses (MEMBERS, LEAVE,
 * PLAN, CLUSTER_STATS), sent on to the leader a follower names
 * (NOTLEADER, PROTOCOL.md 10.5).
 *
 * A client holds no coordinator connection once it has a map: nodes serve
 * the committed topology, and every data reply names the node's committed
 * epoch, so a client learns of a change from its own traffic. Only admin
 * calls open a connection to a coordinator (a seed that said so, or one
 * the nodes report).
 */
#include "client/lib/client_int.h"
#include "client/lib/coordlink.h"

#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "proto/ops.h"

/* What the ON_REPLY of MAP_FETCH fills in. */
struct coord_fetch {
    struct brim_topo t;      /* the topology, decoded */
    char            *coords; /* the coordinators the node named, owned */
};

/* ON_REPLY of MAP_FETCH: decode the topology and the coordinators. */
static int
coord_topo_reply(struct brim_call *call, const struct brim_rep *rep)
{
    struct coord_fetch *f = call->arg;
    int                 rc;

    if (rep->obj == NULL) {
        memset(&f->t, 0, sizeof(f->t));
        return BRIM_EBADREPLY;
    }
    rc = brim_topo_decode(rep->obj, &f->t, NULL);
    if (rc != 0) {
        return rc == BRIM_EBADREQ ? BRIM_EBADREPLY : rc;
    }
    if (rep->coords != NULL && rep->coords_len > 0
        && memchr(rep->coords, '\0', rep->coords_len) == NULL)
    {
        f->coords = brim_strndup(rep->coords, rep->coords_len);
    }
    return 0;
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
    /* Connections to nodes that left the map are closed, not kept; so is
     * a seed's that is no member (a coordinator), unless admin calls use
     * it. */
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
 * Make T (taken over) C's routing map when it may be adopted (DESIGN.md
 * 12): of C's cluster, an epoch above 0 and above C's, at least one
 * member UP unless it came from a coordinator (COORD set: the authority
 * on membership, whose map may be empty after the last leave). Else drop
 * it. Returns 1 (installed), 0 (dropped: not newer, or no member up),
 * BRIM_EBADREPLY (another cluster) or BRIM_ENOMEM.
 */
static int
coord_adopt(struct brim_client *c, const char *from, int coord,
            struct brim_topo *t)
{
    uint32_t i;
    int      rc, up;

    if (c->cluster_id != 0 && t->cluster_id != c->cluster_id) {
        brim_lib_errmsg(c, "%s: topology of another cluster", from);
        brim_topo_destroy(t);
        return BRIM_EBADREPLY;
    }
    for (i = 0; i < t->nmembers && t->members[i].state != BRIM_MEMBER_UP; i++) {
    }
    up = i < t->nmembers || coord; /* a coordinator may say "empty" */
    if (t->map.epoch == 0 || !up
        || (c->members != NULL && t->map.epoch <= c->topo.map.epoch))
    {
        if (t->map.epoch == 0 || !up) {
            brim_lib_errmsg(c, "%s: its map (epoch %llu) has no member up",
                            from, (unsigned long long) t->map.epoch);
        }
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

/* Take COORDS (owned) as C's list of coordinators. */
static void
coord_set_coords(struct brim_client *c, char *coords)
{
    if (coords == NULL) {
        return;
    }
    brim_free(c->coords);
    c->coords = coords;
}

/*
 * MAP_FETCH at N by DEADLINE_MS, and the map adopted when it may be.
 * Returns 1 (a newer map installed), 0 (answered: nothing newer) or the
 * error (C->errmsg says why).
 */
static int
coord_fetch(struct brim_client *c, struct brim_pool_node *n,
            int64_t deadline_ms)
{
    struct coord_fetch f;
    struct brim_call   call;
    int                rc;

    memset(&f, 0, sizeof(f));
    memset(&call, 0, sizeof(call));
    call.req.op = BRIM_OP_MAP_FETCH;
    call.target = n;
    call.on_reply = coord_topo_reply;
    call.arg = &f;
    (void) brim_route_run(c, &call, 1, deadline_ms);
    rc = call.status;
    brim_route_calls_destroy(&call, 1);
    brim_link_trim(&n->link); /* a large topology's memory */
    if (rc != 0) {
        brim_topo_destroy(&f.t);
        brim_free(f.coords);
        if (rc == BRIM_EBADREPLY) {
            brim_lib_errmsg(c, "%s: malformed topology in MAP_FETCH reply",
                            n->link.addr);
        }
        return rc;
    }
    coord_set_coords(c, f.coords);
    return coord_adopt(c, n->link.addr, n->link.peer.role == BRIM_ROLE_COORD,
                       &f.t);
}

/* The Ith address (0-based) of the comma-separated LIST into BUF (SIZE
 * bytes); 0, or -1 when there is none (or it does not fit). */
static int
coord_list_item(const char *list, uint32_t i, char *buf, size_t size)
{
    const char *p = list, *end;
    size_t      len;

    while (p != NULL && i-- > 0) {
        p = strchr(p, ',');
        p = p != NULL ? p + 1 : NULL;
    }
    if (p == NULL || *p == '\0') {
        return -1;
    }
    end = strchr(p, ',');
    len = end != NULL ? (size_t) (end - p) : strlen(p);
    if (len == 0 || len >= size) {
        return -1;
    }
    memcpy(buf, p, len);
    buf[len] = '\0';
    return 0;
}

/* Add ADDR to C's coordinators unless it is listed. */
static void
coord_note_coord(struct brim_client *c, const char *addr)
{
    char     item[BRIM_SOCK_ADDR_MAX], *list;
    size_t   len;
    uint32_t i;

    for (i = 0; c->coords != NULL
         && coord_list_item(c->coords, i, item, sizeof(item)) == 0;
         i++)
    {
        if (strcmp(item, addr) == 0) {
            return;
        }
    }
    len = (c->coords != NULL ? strlen(c->coords) + 1 : 0) + strlen(addr) + 1;
    list = brim_malloc(len);
    if (list == NULL) {
        return; /* admin calls will not find it: not worth failing for */
    }
    snprintf(list, len, "%s%s%s", c->coords != NULL ? c->coords : "",
             c->coords != NULL ? "," : "", addr);
    coord_set_coords(c, list);
}

/* The deadline of one seed's or member's try: the connect timeout, within
 * DEADLINE_MS. */
static int64_t
coord_try_deadline(const struct brim_client *c, int64_t deadline_ms)
{
    return BRIM_MIN(deadline_ms,
                    brim_sock_now_ms() + 2 * (int64_t) c->connect_timeout_ms);
}

int
brim_coordlink_bootstrap(struct brim_client *c, int64_t deadline_ms)
{
    struct brim_pool_node *n;
    char                   addr[BRIM_SOCK_ADDR_MAX];
    uint32_t               i;
    int                    rc = BRIM_EINVAL;

    for (i = 0; coord_list_item(c->seeds, i, addr, sizeof(addr)) == 0; i++) {
        n = brim_pool_get(c, addr);
        if (n == NULL) {
            brim_lib_errmsg(c, "out of memory");
            return BRIM_ENOMEM;
        }
        rc = brim_pool_ready(c, n, coord_try_deadline(c, deadline_ms));
        if (rc == 0) {
            if (c->cluster_id == 0) {
                c->cluster_id = n->link.peer.cluster_id;
            }
            if (c->home == NULL) {
                c->home = n; /* its limits bound keys and values */
            }
            if (n->link.peer.role == BRIM_ROLE_COORD) {
                coord_note_coord(c, addr);
                if (c->role == BRIM_ROLE_ADMIN && c->coord == NULL) {
                    c->coord = n; /* kept for the admin calls */
                }
            }
            c->nrefresh++;
            rc = coord_fetch(c, n, coord_try_deadline(c, deadline_ms));
            if (rc == 1) {
                return 0;
            }
            if (rc == 0) {
                rc = BRIM_ENONODES; /* errmsg: no member up */
            }
        }
        if (n != c->coord && n != c->home) {
            brim_pool_close(n);
        }
        if (brim_sock_now_ms() >= deadline_ms) {
            break;
        }
    }
    return rc;
}

int
brim_coordlink_refresh(struct brim_client *c, int64_t deadline_ms)
{
    struct brim_pool_node *n, *src;
    char                   addr[BRIM_SOCK_ADDR_MAX];
    uint64_t               want;
    uint32_t               i, k, nm;
    int                    rc = BRIM_ENONODES, got = 0, heard = 0, r;

    if (!c->cluster || c->refreshing) {
        return BRIM_EINVAL;
    }
    c->refreshing = 1;
    c->nrefresh++;
    want = BRIM_MAX(c->epoch_seen, c->epoch + 1);
    c->epoch_tried = c->epoch_seen;
    c->tried_ms = brim_sock_now_ms();
    /* The node that named the newer epoch holds it committed. */
    src = c->epoch_seen > c->epoch ? c->epoch_src : NULL;
    if (src != NULL) {
        r = coord_fetch(c, src, coord_try_deadline(c, deadline_ms));
        got |= r == 1;
        heard |= r >= 0;
        rc = r < 0 ? r : 0;
    }
    /* Then a few members, from a different one each time. */
    nm = c->members != NULL ? c->topo.nmembers : 0;
    for (k = 0; k < BRIM_MIN(nm, BRIM_REFRESH_MEMBERS_MAX) && c->epoch < want
         && brim_sock_now_ms() < deadline_ms;
         k++)
    {
        i = (uint32_t) ((c->nrefresh + k) % nm);
        n = c->members != NULL && i < c->topo.nmembers ? c->members[i] : NULL;
        if (n == NULL || n == src || c->topo.members[i].state != BRIM_MEMBER_UP)
        {
            continue;
        }
        r = coord_fetch(c, n, coord_try_deadline(c, deadline_ms));
        got |= r == 1;
        heard |= r >= 0;
        rc = r < 0 ? r : 0;
    }
    /* The seeds (perhaps a coordinator) only when no member answered:
     * while a member dies, its clients ask the live members, not the
     * coordinator, again and again. */
    for (i = 0; !heard && c->epoch < want && brim_sock_now_ms() < deadline_ms
         && coord_list_item(c->seeds, i, addr, sizeof(addr)) == 0;
         i++)
    {
        n = brim_pool_get(c, addr);
        if (n == NULL) {
            rc = BRIM_ENOMEM;
            break;
        }
        r = coord_fetch(c, n, coord_try_deadline(c, deadline_ms));
        got |= r == 1;
        rc = r < 0 ? r : 0;
        if (n->link.peer.role == BRIM_ROLE_COORD && n != c->coord) {
            brim_pool_close(n); /* clients hold no coordinator connection */
        }
    }
    c->refreshing = 0;
    return got ? 0 : rc;
}

void
brim_coordlink_learn(struct brim_client *c, int on)
{
    if (c != NULL) {
        c->learn = on;
    }
}

uint64_t
brim_coordlink_learned(const struct brim_client *c)
{
    return c != NULL ? c->nlearned : 0;
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

/* NOTLEADER answers naming a leader that one admin call follows at most:
 * two followers that name each other (a stale leader key) cannot bounce
 * it (PROTOCOL.md 10.5). */
#define COORD_LEADER_HOPS 3

/* Coordinators one admin call asked that did not answer it, kept for its
 * message. */
#define COORD_TRIED_MAX 8

/* The coordinators one admin call asked that did not answer it: each
 * said NOTLEADER or could not be asked. */
struct coord_tried {
    struct brim_pool_node *n[COORD_TRIED_MAX];         /* in the order asked */
    int                    notleader[COORD_TRIED_MAX]; /* 1: it said
                                                        * NOTLEADER; 0: refused
                                                        * or closed; -1: no
                                                        * answer in time */
    uint32_t               count;                      /* entries of N */
    uint32_t               nnotleader; /* NOTLEADER answers, also past N */
    uint32_t               hops;       /* leaders followed */
};

/* Non-zero when N is in T. */
static int
coord_tried_has(const struct coord_tried *t, const struct brim_pool_node *n)
{
    uint32_t i;

    for (i = 0; i < t->count && t->n[i] != n; i++) {
    }
    return i < t->count;
}

/* Note in T that N said NOTLEADER (NOTLEADER set) or was unreachable. */
static void
coord_tried_add(struct coord_tried *t, struct brim_pool_node *n, int notleader)
{
    t->nnotleader += notleader == 1;
    if (t->count < COORD_TRIED_MAX && !coord_tried_has(t, n)) {
        t->notleader[t->count] = notleader;
        t->n[t->count++] = n;
    }
}

/* C's message for a call that found no leader: "no coordinator leads (an
 * election is in progress?): tried A, B (unreachable)". */
static void
coord_tried_errmsg(struct brim_client *c, const struct coord_tried *t)
{
    char     list[BRIM_ERRBUF_LEN];
    size_t   len = 0;
    uint32_t i;

    list[0] = '\0';
    for (i = 0; i < t->count && len < sizeof(list); i++) {
        len += (size_t) snprintf(list + len, sizeof(list) - len, "%s%s%s",
                                 i > 0 ? ", " : "", t->n[i]->link.addr,
                                 t->notleader[i] == 1 ? ""
                                     : t->notleader[i] == -1
                                     ? " (no answer in time)"
                                     : " (unreachable)");
    }
    brim_lib_errmsg(c,
                    "no coordinator leads (an election is in progress?): "
                    "tried %s",
                    list);
}

/*
 * One try of brim_coordlink_call()'s request PROTO at N: connected within
 * the connect timeout, answered within request_timeout_ms. Returns its
 * status; on BRIM_ENOTLEADER *LEADER is
 * the leader N names (a new string the caller frees), or NULL when N
 * names none.
 */
static int
coord_call_at(struct brim_client *c, struct brim_pool_node *n,
              const struct brim_call *proto, char **leader)
{
    struct brim_call call = *proto;
    int              rc;

    /* Connected first, within the connect timeout: route.c would try an
     * unreachable node other than C->coord until the call's deadline,
     * and the next coordinator is worth more. */
    rc = brim_pool_ready(c, n, coord_try_deadline(c, brim_route_deadline(c)));
    if (rc != 0) {
        return rc;
    }
    call.target = n;
    (void) brim_route_run(c, &call, 1, brim_route_deadline(c));
    rc = call.status;
    if (rc == BRIM_ENOTLEADER) {
        *leader = call.redirect; /* taken over */
        call.redirect = NULL;
    }
    brim_route_calls_destroy(&call, 1);
    if (rc == 0) {
        c->errmsg[0] = '\0';
    }
    return rc;
}

/* True when RC says N could not be asked at all (try another). */
static int
coord_unreachable(int rc)
{
    return rc == BRIM_ECONNREFUSED || rc == BRIM_ETIMEDOUT || rc == BRIM_ECLOSED
        || rc == BRIM_ESYS;
}

/*
 * Ask N the call CALL, then the leader each NOTLEADER answer names (at
 * most COORD_LEADER_HOPS in the whole call, none asked twice), noting in
 * T each that did not answer. Returns the first status that is neither
 * NOTLEADER nor a transport error, with *AT the coordinator that gave it;
 * else the last NOTLEADER or transport error, *AT untouched. A follower's
 * connection is closed: only the leader's is kept.
 */
static int
coord_ask(struct brim_client *c, struct brim_pool_node *n,
          const struct brim_call *call, struct coord_tried *t,
          struct brim_pool_node **at)
{
    struct brim_pool_node *next;
    char                  *leader;
    int                    rc;

    for (;;) {
        leader = NULL;
        rc = coord_call_at(c, n, call, &leader);
        if (rc != BRIM_ENOTLEADER) {
            if (coord_unreachable(rc)) {
                coord_tried_add(t, n, rc == BRIM_ETIMEDOUT ? -1 : 0);
            } else {
                *at = n;
            }
            return rc;
        }
        coord_tried_add(t, n, 1);
        next = NULL;
        if (leader != NULL && t->hops < COORD_LEADER_HOPS) {
            next = brim_pool_get(c, leader);
            coord_note_coord(c, leader);
        }
        brim_free(leader);
        brim_pool_close(n);
        if (next == NULL || next == n || coord_tried_has(t, next)) {
            return rc;
        }
        t->hops++;
        n = next;
    }
}

/* brim_coordlink_call()'s search for the leader, with CALL's request
 * made (its op and arguments) and its reply handler set. *NONE_KNOWN
 * (when not NULL) is set to 1 when no coordinator was known to ask. */
static int
coord_call(struct brim_client *c, struct brim_call *call, int *none_known)
{
    struct brim_pool_node *n, *at = NULL;
    struct coord_tried     tried;
    char                   addr[BRIM_SOCK_ADDR_MAX];
    int64_t                deadline_ms;
    uint32_t               i;
    int                    rc = BRIM_EINVAL, ready;

    if (c == NULL || !c->cluster) {
        if (c != NULL) {
            brim_lib_errmsg(c, "not connected to a cluster");
        }
        return BRIM_EINVAL;
    }
    c->errmsg[0] = '\0';
    memset(&tried, 0, sizeof(tried));
    if (c->coord != NULL) {
        rc = coord_ask(c, c->coord, call, &tried, &at);
    }
    /* The coordinators the seeds said and the nodes report, in turn; a
     * NOTLEADER answer with no leader named (an election) leads here. */
    for (i = 0; at == NULL && c->coords != NULL
         && coord_list_item(c->coords, i, addr, sizeof(addr)) == 0;
         i++)
    {
        n = brim_pool_get(c, addr);
        if (n == NULL || coord_tried_has(&tried, n)) {
            continue;
        }
        rc = coord_ask(c, n, call, &tried, &at);
    }
    /* Then the seeds that are coordinators: the list above is what the
     * maps said, and a seed given by the user (a standby elected since)
     * may be missing from it. */
    for (i = 0; at == NULL && c->seeds != NULL
         && coord_list_item(c->seeds, i, addr, sizeof(addr)) == 0;
         i++)
    {
        n = brim_pool_get(c, addr);
        if (n == NULL || coord_tried_has(&tried, n)) {
            continue;
        }
        deadline_ms = coord_try_deadline(c, brim_route_deadline(c));
        ready = brim_pool_ready(c, n, deadline_ms);
        if (ready != 0) {
            rc = ready;
            coord_tried_add(&tried, n, ready == BRIM_ETIMEDOUT ? -1 : 0);
            continue;
        }
        if (n->link.peer.role != BRIM_ROLE_COORD) {
            continue; /* a node seed: it serves no admin call */
        }
        coord_note_coord(c, addr);
        rc = coord_ask(c, n, call, &tried, &at);
    }
    if (at != NULL) {
        c->coord = at; /* the leader: later calls go to it first */
        return rc;
    }
    if (tried.nnotleader > 0) {
        coord_tried_errmsg(c, &tried);
        return BRIM_ENOTLEADER;
    }
    if (rc == BRIM_EINVAL) {
        brim_lib_errmsg(c,
                        "no coordinator known: give its address "
                        "among the seeds, or seed with a node");
        if (none_known != NULL) {
            *none_known = 1;
        }
    }
    return rc;
}

/* Fills *call with an admin request for op whose object reply goes to cb
 * through *a (both the caller's, alive until the call returns). */
static void
coord_call_init(struct brim_call *call, struct coord_cb_arg *a, uint32_t op,
                brim_coordlink_cb cb, void *arg)
{
    a->cb = cb;
    a->arg = arg;
    memset(call, 0, sizeof(*call));
    call->req.op = op;
    call->on_reply = coord_obj_reply;
    call->arg = a;
}

int
brim_coordlink_call(struct brim_client *c, uint32_t op, const char *name,
                    uint32_t arg_u32, uint32_t weight_ppm, brim_coordlink_cb cb,
                    void *arg)
{
    struct coord_cb_arg a;
    struct brim_call    call;

    coord_call_init(&call, &a, op, cb, arg);
    call.req.name = name;
    call.req.name_len = name != NULL ? strlen(name) : 0;
    call.req.arg_u32 = arg_u32;
    call.req.weight_ppm = weight_ppm;
    return coord_call(c, &call, NULL);
}

int
brim_coordlink_flush(struct brim_client *c, uint64_t flush_ms, int *none_known)
{
    struct coord_cb_arg a;
    struct brim_call    call;

    coord_call_init(&call, &a, BRIM_OP_FLUSH, NULL, NULL);
    call.req.flush_ms = flush_ms;
    *none_known = 0;
    return coord_call(c, &call, none_known);
}

const struct brim_topo *
brim_coordlink_topo(const struct brim_client *c)
{
    return c != NULL && c->cluster && c->members != NULL ? &c->topo : NULL;
}

void
brim_coordlink_counts(const struct brim_client *c, uint64_t *moved,
                      uint64_t *retry, uint64_t *refresh)
{
    *moved = c->nmoved;
    *retry = c->nretry;
    *refresh = c->nrefresh;
}
