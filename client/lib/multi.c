/*
 * client/lib/multi.c - brim_mget() and brim_mset(): many keys in one round
 * trip per node. Keys are grouped by the node they route to and sent as
 * MGET frames of at most the node's key-count limit, all written before
 * the replies are read (route.c pipelines the calls of one node). MGET
 * entries a node could not answer in that reply (TOOBIG: the reply frame
 * was full; MOVED, RETRY) are fetched again one GET each, which follows
 * redirects like any single call, within the same deadline.
 */
#include "client/lib/client_int.h"

#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "proto/ops.h"

/* Result states inside brim_mget() before the final status is known. */
#define MULTI_PENDING 1 /* not answered yet */
#define MULTI_AGAIN 2   /* the MGET entry said: ask again */

/* Bytes of framing per key and per MGET frame, for the size budget. */
#define MULTI_KEY_OVERHEAD 5
#define MULTI_FRAME_OVERHEAD 64

/* One MGET call's keys: ON_REPLY's argument. */
struct multi_part {
    struct brim_mget_result *results; /* the caller's array */
    const size_t            *idx;     /* result index of each key */
    uint32_t                 n;       /* keys in this MGET */
};

/* Copy a hit into R. */
static int
multi_hit(struct brim_mget_result *r, const char *v, size_t vlen,
          uint32_t flags, uint64_t cas)
{
    char *copy;

    copy = brim_malloc(vlen + 1);
    if (copy == NULL) {
        return BRIM_ENOMEM;
    }
    if (vlen > 0) {
        memcpy(copy, v, vlen);
    }
    copy[vlen] = '\0';
    r->val = copy;
    r->val_len = vlen;
    r->flags = flags;
    r->cas = cas;
    return 0;
}

/* ON_REPLY of MGET: one entry per key, in the order they were sent. */
static int
multi_mget_reply(struct brim_call *call, const struct brim_rep *rep)
{
    struct multi_part       *part = call->arg;
    struct brim_mget_result *r;
    const char              *v;
    size_t                   vlen;
    uint32_t                 i, flags;
    uint64_t                 cas;
    int                      rc;

    if (rep->nentries != part->n) {
        return BRIM_EBADREPLY;
    }
    for (i = 0; i < part->n; i++) {
        r = &part->results[part->idx[i]];
        v = NULL;
        vlen = 0;
        flags = 0;
        cas = 0;
        rc = brim_wire_rep_entry(rep, i, &v, &vlen, &flags, &cas);
        switch (rc) {
        case 0:
            r->status = multi_hit(r, v, vlen, flags, cas);
            break;
        case BRIM_ETOOBIG:
        case BRIM_EMOVED:
        case BRIM_ERETRY:
            r->status = MULTI_AGAIN;
            break;
        default:
            r->status = rc; /* NOTFOUND, or the entry's error */
            break;
        }
    }
    return 0;
}

/* ON_REPLY of a follow-up GET: the hit into the result at ARG. */
static int
multi_get_reply(struct brim_call *call, const struct brim_rep *rep)
{
    return multi_hit(call->arg, rep->value, rep->value_len, rep->flags,
                     rep->cas);
}

/*
 * Build the MGET calls for the keys whose result is MULTI_PENDING: per
 * node, in runs of at most the node's max_mget_keys and half its frame.
 * BK and IDX have room for every key; CALLS and PARTS for NKEYS calls.
 * Returns the number of calls.
 */
static size_t
multi_plan(struct brim_client *c, const struct brim_key *keys, size_t nkeys,
           struct brim_mget_result *results, struct brim_pool_node **knode,
           struct brim_bytes *bk, size_t *idx, struct brim_call *calls,
           struct multi_part *parts)
{
    struct brim_pool_node *n;
    struct brim_call      *call;
    size_t                 i, nk, ncalls, bytes, budget;

    nk = 0;
    ncalls = 0;
    for (n = c->nodes; n != NULL; n = n->next) {
        call = NULL;
        bytes = 0;
        budget = n->link.limits.max_frame_bytes / 2;
        for (i = 0; i < nkeys; i++) {
            if (results[i].status != MULTI_PENDING || knode[i] != n) {
                continue;
            }
            if (call == NULL || call->nmkeys == n->link.limits.max_mget_keys
                || bytes + keys[i].key_len + MULTI_KEY_OVERHEAD > budget)
            {
                call = &calls[ncalls];
                parts[ncalls] = (struct multi_part){
                    .results = results, .idx = &idx[nk], .n = 0};
                memset(call, 0, sizeof(*call));
                call->req.op = BRIM_OP_MGET;
                call->mkeys = &bk[nk];
                call->target = n;
                call->on_reply = multi_mget_reply;
                call->arg = &parts[ncalls];
                ncalls++;
                bytes = MULTI_FRAME_OVERHEAD;
            }
            bk[nk] =
                (struct brim_bytes){.ptr = keys[i].key, .len = keys[i].key_len};
            idx[nk] = i;
            nk++;
            call->nmkeys++;
            parts[call - calls].n++;
            bytes += keys[i].key_len + MULTI_KEY_OVERHEAD;
        }
    }
    return ncalls;
}

/* The results left MULTI_AGAIN, fetched one GET each. */
static int
multi_again(struct brim_client *c, const struct brim_key *keys, size_t nkeys,
            struct brim_mget_result *results, struct brim_call *calls,
            int64_t deadline_ms)
{
    size_t i, ncalls, *idx;
    int    rc;

    idx = brim_malloc(nkeys * sizeof(*idx));
    if (idx == NULL) {
        return BRIM_ENOMEM;
    }
    ncalls = 0;
    for (i = 0; i < nkeys; i++) {
        if (results[i].status != MULTI_AGAIN) {
            continue;
        }
        memset(&calls[ncalls], 0, sizeof(calls[ncalls]));
        calls[ncalls].req.op = BRIM_OP_GET;
        calls[ncalls].req.key = keys[i].key;
        calls[ncalls].req.key_len = keys[i].key_len;
        calls[ncalls].on_reply = multi_get_reply;
        calls[ncalls].arg = &results[i];
        idx[ncalls++] = i;
    }
    rc = ncalls > 0 ? brim_route_run(c, calls, ncalls, deadline_ms) : 0;
    for (i = 0; i < ncalls; i++) {
        results[idx[i]].status = calls[i].status;
    }
    brim_route_calls_destroy(calls, ncalls);
    brim_free(idx);
    return rc;
}

/* The MGET round over the pending keys; scratch arrays allocated here. */
static int
multi_mget_round(struct brim_client *c, const struct brim_key *keys,
                 size_t nkeys, struct brim_mget_result *results,
                 int64_t deadline_ms)
{
    struct brim_pool_node **knode;
    struct brim_bytes      *bk;
    struct brim_call       *calls;
    struct multi_part      *parts;
    size_t                 *idx, i, j, ncalls;
    int                     rc;

    knode = brim_malloc(nkeys * sizeof(*knode));
    bk = brim_malloc(nkeys * sizeof(*bk));
    idx = brim_malloc(nkeys * sizeof(*idx));
    calls = brim_malloc(nkeys * sizeof(*calls));
    parts = brim_malloc(nkeys * sizeof(*parts));
    rc = BRIM_ENOMEM;
    if (knode == NULL || bk == NULL || idx == NULL || calls == NULL
        || parts == NULL)
    {
        brim_lib_errmsg(c, "mget: out of memory for %zu keys", nkeys);
        goto out;
    }
    for (i = 0; i < nkeys; i++) {
        knode[i] = brim_route_key(c, keys[i].key, keys[i].key_len);
        if (knode[i] == NULL && results[i].status == MULTI_PENDING) {
            results[i].status = BRIM_ENONODES; /* no owner */
            brim_lib_errmsg(c, "no nodes in the cluster");
        }
    }
    ncalls = multi_plan(c, keys, nkeys, results, knode, bk, idx, calls, parts);
    rc = ncalls > 0 ? brim_route_run(c, calls, ncalls, deadline_ms) : 0;
    /* A whole MGET that failed (transport, or an error status for the
     * frame) gives its status to each of its keys. */
    for (i = 0; i < ncalls; i++) {
        for (j = 0; j < parts[i].n; j++) {
            if (results[parts[i].idx[j]].status != MULTI_PENDING) {
                continue;
            }
            if (c->cluster && !calls[i].answered
                && calls[i].status != BRIM_ETIMEDOUT) {
                /* Cluster mode: the node may have left; each key is
                 * asked again through the map. */
                results[parts[i].idx[j]].status = MULTI_AGAIN;
                continue;
            }
            results[parts[i].idx[j]].status =
                calls[i].status != 0 ? calls[i].status : BRIM_EBADREPLY;
        }
    }
    brim_route_calls_destroy(calls, ncalls);
    if (c->cluster && rc != 0 && rc != BRIM_ETIMEDOUT) {
        rc = 0;
    }
    if (rc == 0) {
        rc = multi_again(c, keys, nkeys, results, calls, deadline_ms);
    }
out:
    brim_free(knode);
    brim_free(bk);
    brim_free(idx);
    brim_free(calls);
    brim_free(parts);
    return rc;
}

int
brim_mget(struct brim_client *c, const struct brim_key *keys, size_t nkeys,
          struct brim_mget_result *results)
{
    size_t i;
    int    rc;

    if (c == NULL || (nkeys > 0 && (keys == NULL || results == NULL))) {
        return BRIM_EINVAL;
    }
    c->errmsg[0] = '\0';
    for (i = 0; i < nkeys; i++) {
        memset(&results[i], 0, sizeof(results[i]));
        results[i].status =
            brim_lib_check_key(c, keys[i].key, keys[i].key_len) == 0
            ? MULTI_PENDING
            : BRIM_EINVAL;
    }
    if (nkeys == 0) {
        return 0;
    }
    rc = multi_mget_round(c, keys, nkeys, results, brim_route_deadline(c));
    for (i = 0; i < nkeys; i++) {
        if (results[i].status > 0) {
            /* Never left positive: a round that stopped early. */
            results[i].status = rc != 0 ? rc : BRIM_ETIMEDOUT;
        }
    }
    return rc;
}

void
brim_mget_free(struct brim_mget_result *results, size_t nresults)
{
    size_t i;

    if (results == NULL) {
        return;
    }
    for (i = 0; i < nresults; i++) {
        brim_free(results[i].val);
        results[i].val = NULL;
    }
}

/* ON_REPLY of an MSET's SET: the new CAS value into the item at ARG. */
static int
multi_set_reply(struct brim_call *call, const struct brim_rep *rep)
{
    struct brim_item *item = call->arg;

    item->cas = rep->cas;
    return 0;
}

/* 0 when ITEM may be sent, else its error. */
static int
multi_check_item(struct brim_client *c, const struct brim_item *item)
{
    int rc;

    rc = brim_lib_check_key(c, item->key, item->key_len);
    if (rc != 0) {
        return rc;
    }
    if (item->val == NULL && item->val_len != 0) {
        return BRIM_EINVAL;
    }
    return item->val_len > brim_value_max(c) ? BRIM_ETOOBIG : 0;
}

int
brim_mset(struct brim_client *c, struct brim_item *items, size_t nitems)
{
    struct brim_call *calls;
    size_t            i, ncalls;
    int               rc;

    if (c == NULL || (nitems > 0 && items == NULL)) {
        return BRIM_EINVAL;
    }
    c->errmsg[0] = '\0';
    if (nitems == 0) {
        return 0;
    }
    calls = brim_malloc(nitems * sizeof(*calls));
    if (calls == NULL) {
        for (i = 0; i < nitems; i++) {
            items[i].status = BRIM_ENOMEM;
        }
        brim_lib_errmsg(c, "mset: out of memory for %zu items", nitems);
        return BRIM_ENOMEM;
    }
    ncalls = 0;
    for (i = 0; i < nitems; i++) {
        items[i].cas = 0;
        items[i].status = multi_check_item(c, &items[i]);
        if (items[i].status != 0) {
            continue;
        }
        memset(&calls[ncalls], 0, sizeof(calls[ncalls]));
        calls[ncalls].req.op = BRIM_OP_SET;
        calls[ncalls].req.key = items[i].key;
        calls[ncalls].req.key_len = items[i].key_len;
        calls[ncalls].req.value = items[i].val;
        calls[ncalls].req.value_len = items[i].val_len;
        calls[ncalls].req.ttl_s = items[i].ttl_s;
        calls[ncalls].req.flags = items[i].flags;
        calls[ncalls].on_reply = multi_set_reply;
        calls[ncalls].arg = &items[i];
        ncalls++;
    }
    rc = ncalls > 0 ? brim_route_run(c, calls, ncalls, brim_route_deadline(c))
                    : 0;
    for (i = 0; i < ncalls; i++) {
        ((struct brim_item *) calls[i].arg)->status = calls[i].status;
    }
    brim_route_calls_destroy(calls, ncalls);
    brim_free(calls);
    return rc;
}
