/*
 * client/lib/route.c - where each call goes and when it is sent again
 * (DESIGN.md sections 5 and 6, PROTOCOL.md 5.1). A call is retried by
 * itself only where the outcome proves the op did not run (MOVED, RETRY,
 * BUSY, a failure before any of its bytes left), or where running it twice
 * is harmless (the IDEMPOTENT ops of proto/ops.h after a lost connection).
 * Everything else ends the call: a non-idempotent op that was sent on a
 * connection that then broke is BRIM_EUNKNOWN, "outcome unknown". All of it
 * runs within one deadline. It calls only pool.c and errmsg.c: the map's
 * keeper (coordlink.c, which runs its own requests through this file) is
 * asked through C->map, struct brim_route_map.
 */
#include "client/lib/client_int.h"

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "proto/ops.h"

struct brim_pool_node *
brim_route_key(struct brim_client *c, const void *key, size_t key_len)
{
    uint32_t p, o;

    if (!c->cluster) {
        return c->home;
    }
    if (c->members == NULL || c->topo.map.npartitions == 0) {
        return NULL;
    }
    p = brim_partition_of(brim_hash_key(c->topo.seed, key, key_len),
                          c->topo.map.npartitions);
    o = c->topo.map.owner[p];
    if (o >= c->topo.nmembers) {
        return NULL; /* BRIM_NODE_NONE: no owner */
    }
    return c->members[o];
}

int64_t
brim_route_deadline(const struct brim_client *c)
{
    return brim_sock_now_ms() + c->request_timeout_ms;
}

int
brim_route_one(struct brim_client *c, struct brim_call *call)
{
    int rc;

    (void) brim_route_run(c, call, 1, brim_route_deadline(c));
    rc = call->status;
    brim_route_calls_destroy(call, 1);
    if (rc == 0) {
        c->errmsg[0] = '\0';
    }
    return rc;
}

void
brim_route_calls_destroy(struct brim_call *calls, size_t ncalls)
{
    size_t i;

    for (i = 0; i < ncalls; i++) {
        brim_free(calls[i].redirect);
        calls[i].redirect = NULL;
    }
}

/* The node CALL goes to next. */
static struct brim_pool_node *
route_node(struct brim_client *c, const struct brim_call *call)
{
    const struct brim_op_info *info;

    if (call->target != NULL) {
        return call->target;
    }
    info = brim_op_info(call->req.op);
    if (info != NULL && (info->flags & BRIM_OPF_KEY) != 0) {
        return brim_route_key(c, call->req.key, call->req.key_len);
    }
    return c->home;
}

/* End CALL with STATUS. */
static void
route_done(struct brim_call *call, int status)
{
    call->state = BRIM_CALL_DONE;
    call->status = status;
}

/*
 * Follow CALL's MOVED answer: send it to the owner it names, unless this
 * call already followed a redirect for that epoch or a newer one (a node
 * that points back and forth would otherwise bounce it until the timeout).
 */
static void
route_moved(struct brim_client *c, struct brim_call *call, uint64_t *want)
{
    struct brim_pool_node     *owner;
    const struct brim_op_info *info;

    c->nmoved++;
    if (call->redirected && call->rep_epoch <= call->moved_epoch) {
        route_done(call, BRIM_EMOVED);
        return;
    }
    info = brim_op_info(call->req.op);
    if (c->cluster && call->rep_epoch > c->epoch && info != NULL
        && (info->flags & BRIM_OPF_KEY) != 0)
    {
        /* A newer epoch: refresh the map, then route by it (the run
         * falls back to REDIRECT if the coordinator lags). */
        call->redirected = 1;
        call->moved_epoch = call->rep_epoch;
        call->target = NULL;
        if (call->rep_epoch > *want) {
            *want = call->rep_epoch;
        }
        return;
    }
    if (call->redirect == NULL || call->redirect[0] == '\0') {
        route_done(call, BRIM_EMOVED);
        return;
    }
    owner = brim_pool_get(c, call->redirect);
    if (owner == NULL) {
        route_done(call, BRIM_ENOMEM);
        return;
    }
    call->redirected = 1;
    call->moved_epoch = call->rep_epoch;
    if (!c->cluster && call->rep_epoch > c->epoch) {
        c->epoch = call->rep_epoch;
    }
    call->target = owner;
}

/*
 * Decide CALL's fate after an exchange that ended with RC. Returns 1 when
 * the call is to be sent again after a pause, else 0.
 */
static int
route_settle(struct brim_client *c, struct brim_call *call, int rc,
             uint64_t *want)
{
    const struct brim_op_info *info;

    if (call->answered) {
        if (call->status == BRIM_EMOVED) {
            route_moved(c, call, want);
            return 0;
        }
        if (call->status == BRIM_ERETRY || call->status == BRIM_EBUSY) {
            /* Both prove the op did not run (PROTOCOL.md 5.1); a RETRY
             * from a node at a newer epoch refreshes the map first. */
            c->nretry++;
            info = brim_op_info(call->req.op);
            if (c->cluster && call->status == BRIM_ERETRY
                && call->rep_epoch > c->epoch) {
                if (call->rep_epoch > *want) {
                    *want = call->rep_epoch;
                }
                if (info != NULL && (info->flags & BRIM_OPF_KEY) != 0) {
                    call->target = NULL; /* route by the new map */
                }
            }
            return 1;
        }
        route_done(call, call->status);
        return 0;
    }
    switch (rc) {
    case BRIM_ETIMEDOUT:
    case BRIM_EBADREPLY:
    case BRIM_ENOMEM:
    case 0: /* cannot happen: unanswered means rc */
        route_done(call, rc != 0 ? rc : BRIM_ECLOSED);
        return 0;
    default:
        break;
    }
    info = brim_op_info(call->req.op);
    if (!call->sent
        || (info != NULL && (info->flags & BRIM_OPF_IDEMPOTENT) != 0)) {
        /* Send it again on a new connection: right away the first time
         * (an idle connection the node dropped), with a pause after; in
         * cluster mode the node may have left: look at the map again. */
        if (c->cluster && call->tries > 1 && *want <= c->epoch) {
            *want = c->epoch + 1;
        }
        return call->tries > 1;
    }
    route_done(call, BRIM_EUNKNOWN);
    return 0;
}

/*
 * Gather into BATCH the pending calls of CALLS that go to the same node as
 * the first pending one that may go at NOW_MS (a call whose node was
 * unreachable waits, so the other nodes' calls are not held up behind
 * it). Returns their count and the node in *NODE; with none ready, 0 and
 * in *NEXT_MS the earliest loop time one may go (0: none pending).
 */
static size_t
route_batch(struct brim_client *c, struct brim_call *calls, size_t ncalls,
            struct brim_call **batch, struct brim_pool_node **node,
            int64_t now_ms, int64_t *next_ms)
{
    struct brim_pool_node *n;
    size_t                 i, nb;

    *node = NULL;
    *next_ms = 0;
    nb = 0;
    for (i = 0; i < ncalls; i++) {
        if (calls[i].state != BRIM_CALL_PENDING) {
            continue;
        }
        if (calls[i].wait_until_ms > now_ms) {
            if (*next_ms == 0 || calls[i].wait_until_ms < *next_ms) {
                *next_ms = calls[i].wait_until_ms;
            }
            continue;
        }
        n = route_node(c, &calls[i]);
        if (n == NULL) {
            route_done(&calls[i], BRIM_ENONODES);
            calls[i].answered = 1;
            brim_lib_errmsg(c,
                            "no nodes in the cluster: the key's "
                            "partition has no owner at epoch %llu",
                            (unsigned long long) c->epoch);
            continue;
        }
        if (*node == NULL) {
            *node = n;
        }
        if (n == *node) {
            batch[nb++] = &calls[i];
        }
    }
    return nb;
}

/*
 * Cluster mode: fetch the map when a reply named an epoch WANT newer than
 * ours (or WANT is ours + 1 after a lost node: fetch anyway), then send
 * the calls that were redirected at an epoch the coordinator has not
 * committed yet to the owner their MOVED named.
 */
static void
route_refresh(struct brim_client *c, struct brim_call **batch, size_t nb,
              uint64_t want, int64_t deadline_ms)
{
    char   keep[BRIM_ERRBUF_LEN];
    size_t i;

    if (c->map.refresh == NULL || want <= c->epoch
        || brim_sock_now_ms() >= deadline_ms)
    {
        return;
    }
    memcpy(keep, c->errmsg, sizeof(keep));
    (void) c->map.refresh(c, deadline_ms);
    memcpy(c->errmsg, keep, sizeof(keep));
    for (i = 0; i < nb; i++) {
        if (batch[i]->state == BRIM_CALL_PENDING && batch[i]->target == NULL
            && batch[i]->status == BRIM_EMOVED && batch[i]->rep_epoch > c->epoch
            && batch[i]->redirect != NULL && batch[i]->redirect[0] != '\0')
        {
            batch[i]->target = brim_pool_get(c, batch[i]->redirect);
        }
    }
}

/*
 * Cluster mode: a data reply named an epoch newer than the map's
 * (PROTOCOL.md 5): fetch the map (raise *WANT to it), unless that very
 * epoch was fetched for within BRIM_REFETCH_MS (the node's map may be
 * refused: its lease, no member up). The client learns of a change from
 * its own traffic and needs no subscription.
 */
static void
route_learn(struct brim_client *c, uint64_t *want)
{
    if (!c->cluster || !c->learn || c->refreshing || c->epoch_seen <= c->epoch
        || c->epoch_seen <= *want)
    {
        return;
    }
    if (c->epoch_seen == c->epoch_tried
        && brim_sock_now_ms() - c->tried_ms < BRIM_REFETCH_MS)
    {
        return;
    }
    *want = c->epoch_seen;
    c->nlearned++;
}

/* End every pending call: the deadline passed. */
static void
route_expire(struct brim_client *c, struct brim_call *calls, size_t ncalls)
{
    size_t i;

    for (i = 0; i < ncalls; i++) {
        if (calls[i].state == BRIM_CALL_PENDING) {
            /* A call that waited out RETRY answers timed out; one that
             * kept losing its connection reports that. */
            route_done(&calls[i],
                       calls[i].answered || calls[i].status == 0
                           ? BRIM_ETIMEDOUT
                           : calls[i].status);
            calls[i].answered = 0;
            if (c->errmsg[0] == '\0') {
                brim_lib_errmsg(c, "no answer within %u ms",
                                (unsigned) c->request_timeout_ms);
            }
        }
    }
}

int
brim_route_run(struct brim_client *c, struct brim_call *calls, size_t ncalls,
               int64_t deadline_ms)
{
    struct brim_pool_node *node;
    struct brim_call      *one, **batch;
    size_t                 nb, i;
    int64_t                backoff, left, now, next;
    uint64_t               want;
    int                    rc, pause;

    batch = &one;
    if (ncalls > 1) {
        batch = brim_malloc(ncalls * sizeof(*batch));
        if (batch == NULL) {
            for (i = 0; i < ncalls; i++) {
                route_done(&calls[i], BRIM_ENOMEM);
            }
            brim_lib_errmsg(c, "out of memory for %zu calls", ncalls);
            return BRIM_ENOMEM;
        }
    }
    for (i = 0; i < ncalls; i++) {
        calls[i].state = BRIM_CALL_PENDING;
        calls[i].answered = 0;
        calls[i].status = 0;
        calls[i].wait_until_ms = 0;
    }
    backoff = BRIM_BACKOFF_MIN_MS;
    for (;;) {
        now = brim_sock_now_ms();
        nb = route_batch(c, calls, ncalls, batch, &node, now, &next);
        if (nb == 0 && next == 0) {
            break; /* nothing pending */
        }
        if (now >= deadline_ms) {
            route_expire(c, calls, ncalls);
            break;
        }
        if (nb == 0) {
            /* Only calls to unreachable nodes are left: wait for the
             * first of them (or the deadline). */
            brim_sock_sleep_ms(BRIM_MIN(next, deadline_ms) - now);
            continue;
        }
        rc = brim_pool_ready(c, node, deadline_ms);
        if (rc != 0) {
            if (c->cluster && !c->refreshing && node != c->coord
                && rc != BRIM_ETIMEDOUT && rc != BRIM_ENOMEM)
            {
                /* In cluster mode a node that cannot be reached may have
                 * left or died: nothing was sent, so look at the map
                 * again and try until the deadline. */
                route_refresh(c, batch, nb, c->epoch + 1, deadline_ms);
                for (i = 0; i < nb; i++) {
                    batch[i]->status = rc;
                    batch[i]->answered = 0;
                    batch[i]->wait_until_ms = brim_sock_now_ms() + backoff;
                }
                backoff = BRIM_MIN(backoff * 2, BRIM_BACKOFF_MAX_MS);
                continue;
            }
            for (i = 0; i < nb; i++) {
                route_done(batch[i], rc);
                batch[i]->answered = 0;
            }
            continue;
        }
        rc = brim_pool_exchange(c, node, batch, nb, deadline_ms);
        pause = 0;
        want = 0;
        for (i = 0; i < nb; i++) {
            pause |= route_settle(c, batch[i], rc, &want);
        }
        route_learn(c, &want);
        route_refresh(c, batch, nb, want, deadline_ms);
        if (pause) {
            left = deadline_ms - brim_sock_now_ms();
            brim_sock_sleep_ms(BRIM_MIN(backoff, left));
            backoff = BRIM_MIN(backoff * 2, BRIM_BACKOFF_MAX_MS);
        }
    }
    if (batch != &one) {
        brim_free(batch);
    }
    for (i = 0; i < ncalls; i++) {
        if (!calls[i].answered) {
            return calls[i].status;
        }
    }
    return 0;
}
