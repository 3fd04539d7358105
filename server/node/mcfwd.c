/*
 * server/node/mcfwd.c - the memcached port's forwards (mcfwd.h). Each one
 * owns a copy of its key and value and a timer; a step routes the op (the
 * map may have changed since the last try), serves it here when the key
 * came here, or sends it on the port's link to the owner. MOVED goes to
 * the owner it names, RETRY and a link still being made wait a backoff
 * (2 ms doubling to 50 ms), all within the forward's deadline. A write
 * whose link closed under it is not sent again: it may have been applied
 * (an ADD or INCR twice is not the same op), as libbrim does.
 */
#include "server/node/mcfwd.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "server/log.h"
#include "server/node/coordlink.h"
#include "server/node/epoch.h"
#include "server/node/links.h"
#include "server/node/serve.h"

#define FWD_DELAY_MIN_MS 2
#define FWD_DELAY_MAX_MS 50
#define FWD_MOVED_AT_ONCE 2 /* MOVED hops followed without a wait */

/* One forward in flight. */
struct mcfwd {
    struct brim_node  *node;
    struct brim_req    req;         /* the op; key and value in BYTES */
    uint64_t           h;           /* the key's hash */
    uint64_t           deadline_ms; /* loop ms: answered TIMEDOUT after */
    uint32_t           delay_ms;    /* the next backoff */
    uint32_t           hops;        /* MOVED followed in a row */
    uint32_t           timeout_ms;  /* as given, for the message */
    int                fixed;       /* sent to ADDR only, never routed
                                      (FLUSH to each member) */
    int                in_call;     /* a request is on the link: its
                                       reply callback will come */
    int                abandoned;   /* answered TIMEDOUT while IN_CALL:
                                       freed when the reply comes */
    char               addr[128];   /* where to send next; "": route */
    struct brim_bytes *keys;        /* an MGET's keys (one allocation
                                      with their bytes), or NULL */
    uint32_t           nkeys;       /* entries of KEYS */
    uv_timer_t         timer;       /* the next step */
    brim_mcfwd_cb      cb;          /* told once */
    void              *arg;         /* CB's */
    char               bytes[];     /* key, then value */
};

static void fwd_step(struct mcfwd *f);

static void
fwd_free_cb(uv_handle_t *h)
{
    struct mcfwd *f = h->data;

    brim_free(f->keys);
    brim_free(f);
}

/* Tell F's caller REP, then free F (or, with its request still on the
 * link, once the reply comes: the link's call keeps F as its argument). */
static void
fwd_finish(struct mcfwd *f, struct brim_rep *rep)
{
    f->node->mcfwd_stats.inflight--;
    f->cb(f->arg, rep);
    if (f->in_call) {
        f->abandoned = 1;
        uv_timer_stop(&f->timer);
        return;
    }
    uv_close((uv_handle_t *) &f->timer, fwd_free_cb);
}

/* Finish F with the local STATUS and MSG (borrowed). */
static void
fwd_fail(struct mcfwd *f, int status, const char *msg)
{
    struct brim_rep rep;

    memset(&rep, 0, sizeof(rep));
    rep.status = status;
    rep.message = msg;
    rep.message_len = strlen(msg);
    fwd_finish(f, &rep);
}

static void
fwd_timer_cb(uv_timer_t *t)
{
    fwd_step(t->data);
}

/* Step again after the backoff, or fail once the deadline is near. */
static void
fwd_wait(struct mcfwd *f)
{
    uint64_t now = uv_now(f->node->loop);
    uint64_t left = f->deadline_ms > now ? f->deadline_ms - now : 0;

    f->node->mcfwd_stats.retries++;
    uv_timer_start(&f->timer, fwd_timer_cb, BRIM_MIN(left, f->delay_ms), 0);
    f->delay_ms = BRIM_MIN(2 * f->delay_ms, (uint32_t) FWD_DELAY_MAX_MS);
}

static void
fwd_reply(struct brim_peer *p, int status, const char *body, size_t len,
          void *arg)
{
    struct mcfwd     *f = arg;
    struct brim_node *node = f->node;
    struct brim_rep   rep;
    char              errbuf[BRIM_ERRBUF_LEN];

    (void) p;
    f->in_call = 0;
    if (f->abandoned) {
        uv_close((uv_handle_t *) &f->timer, fwd_free_cb);
        return; /* answered TIMEDOUT already */
    }
    uv_timer_stop(&f->timer);
    memset(&rep, 0, sizeof(rep));
    if (status == 0
        && brim_wire_parse_rep(body, len, f->req.op, &node->cfg.limits,
                               &node->zone, &rep, errbuf)
            != 0)
    {
        brim_log_warn("memcached forward to %s: bad reply: %s", f->addr,
                      errbuf);
        status = BRIM_EBADREPLY;
    }
    if (status != 0) {
        if ((brim_op_info(f->req.op)->flags & BRIM_OPF_IDEMPOTENT) == 0) {
            char msg[256];

            node->mcfwd_stats.lost++;
            snprintf(msg, sizeof(msg),
                     "the link to %s closed before the write was answered "
                     "(it may have been applied)",
                     f->addr);
            fwd_fail(f, BRIM_ECLOSED, msg);
            return;
        }
        fwd_wait(f); /* a read: ask again */
        return;
    }
    if (rep.epoch > brim_node_epoch_known(node)
        && (rep.status == BRIM_EMOVED || rep.status == BRIM_ERETRY))
    {
        brim_node_coord_fetch(node); /* the owner knows a newer map */
    }
    if (rep.status == BRIM_EMOVED && !f->fixed) {
        node->mcfwd_stats.moved++;
        f->hops++;
        if (rep.owner_len > 0 && rep.owner_len < sizeof(f->addr)) {
            memcpy(f->addr, rep.owner, rep.owner_len);
            f->addr[rep.owner_len] = '\0';
        } else {
            f->addr[0] = '\0';
        }
        if (f->hops <= FWD_MOVED_AT_ONCE && f->addr[0] != '\0') {
            uv_timer_start(&f->timer, fwd_timer_cb, 0, 0);
        } else {
            fwd_wait(f);
        }
        return;
    }
    if (rep.status == BRIM_ERETRY) {
        if (!f->fixed) {
            f->addr[0] = '\0';
        }
        fwd_wait(f);
        return;
    }
    fwd_finish(f, &rep);
}

/* Send F to F->addr on the port's link there, or wait for the link. */
static void
fwd_send(struct mcfwd *f)
{
    struct brim_node      *node = f->node;
    struct brim_node_link *l = brim_link_get(&node->mc_links, f->addr);
    struct brim_buf        buf;
    uint64_t               now;
    uint32_t               vmax;

    if (l == NULL) {
        fwd_fail(f, BRIM_ENOMEM, "out of memory forwarding to the owner");
        return;
    }
    if (!brim_link_ensure(l)) {
        fwd_wait(f); /* being made, or in its backoff */
        return;
    }
    vmax = l->peer.peer_limits.max_value_bytes;
    if (vmax != 0 && f->req.value_len > vmax) {
        struct brim_rep rep;

        memset(&rep, 0, sizeof(rep));
        rep.status = BRIM_ETOOBIG;
        rep.message = "the value is above the owner's max_value_bytes";
        rep.message_len = strlen(rep.message);
        fwd_finish(f, &rep);
        return;
    }
    f->req.request_id = ++l->next_id;
    f->req.epoch = node->topo.committed.map.epoch;
    brim_buf_init(&buf);
    if ((f->nkeys == 0 ? brim_wire_encode_req(&buf, &f->req)
             : f->req.op == BRIM_OP_MGAT
             ? brim_wire_encode_mgat(&buf, f->req.request_id, f->req.epoch,
                                     f->keys, f->nkeys, f->req.ttl_s)
             : brim_wire_encode_mget(&buf, f->req.request_id, f->req.epoch,
                                     f->keys, f->nkeys))
            != 0
        || brim_peer_call(&l->peer, &buf, fwd_reply, f) != 0)
    {
        brim_buf_destroy(&buf);
        fwd_wait(f);
        return;
    }
    brim_buf_destroy(&buf);
    node->mcfwd_stats.sent++;
    /* An owner that never answers (stopped, cut off) must not hold the
     * client past the deadline: the step then finds it passed. */
    f->in_call = 1;
    now = uv_now(node->loop);
    uv_timer_start(&f->timer, fwd_timer_cb,
                   f->deadline_ms > now ? f->deadline_ms - now : 0, 0);
}

/* The address other nodes know this node by (for a key arriving here). */
static const char *
fwd_self_addr(const struct brim_node *node)
{
    const struct brim_topo *t = &node->topo.committed;

    if (node->topo.self >= 0 && (uint32_t) node->topo.self < t->nmembers) {
        return t->members[node->topo.self].addr;
    }
    return node->cfg.listen;
}

static void
fwd_step(struct mcfwd *f)
{
    struct brim_node *node = f->node;
    struct brim_rep   rep;
    int               rc;

    if (uv_now(node->loop) >= f->deadline_ms) {
        char msg[256];

        node->mcfwd_stats.timeouts++;
        snprintf(msg, sizeof(msg),
                 "no answer from the key's owner%s%s within %u ms (the "
                 "cluster is changing or a node is unreachable)",
                 f->addr[0] != '\0' ? " " : "", f->addr, f->timeout_ms);
        fwd_fail(f, BRIM_ETIMEDOUT, msg);
        return;
    }
    if (f->addr[0] == '\0') {
        memset(&rep, 0, sizeof(rep));
        rc = brim_node_serve_here(node, &f->req, f->h, &rep);
        if (rc == BRIM_ERETRY
            || (rc == BRIM_EMOVED
                && (rep.owner_len == 0 || rep.owner_len >= sizeof(f->addr))))
        {
            fwd_wait(f);
            return;
        }
        if (rc == BRIM_EMOVED) {
            memcpy(f->addr, rep.owner, rep.owner_len);
            f->addr[rep.owner_len] = '\0';
        } else if (rc == BRIM_EAGAIN) {
            /* Arriving here: the brim port asks the old owner. */
            snprintf(f->addr, sizeof(f->addr), "%s", fwd_self_addr(node));
        } else {
            rep.status = rc;
            fwd_finish(f, &rep);
            return;
        }
    }
    fwd_send(f);
}

/* A forward of REQ as brim_mcfwd_start() describes, not started yet. */
static struct mcfwd *
fwd_new(struct brim_node *node, const struct brim_req *req, uint64_t h,
        const char *addr, uint32_t timeout_ms, brim_mcfwd_cb cb, void *arg)
{
    struct mcfwd *f;

    f = brim_malloc(sizeof(*f) + req->key_len + req->value_len);
    if (f == NULL) {
        return NULL;
    }
    memset(f, 0, sizeof(*f));
    f->node = node;
    f->req = *req;
    if (req->key_len > 0) {
        memcpy(f->bytes, req->key, req->key_len);
    }
    if (req->value_len > 0) {
        memcpy(f->bytes + req->key_len, req->value, req->value_len);
    }
    f->req.key = f->bytes;
    f->req.value = f->bytes + req->key_len;
    f->h = h;
    f->fixed = (brim_op_info(req->op)->flags & BRIM_OPF_KEY) == 0;
    f->timeout_ms = timeout_ms;
    f->deadline_ms = uv_now(node->loop) + timeout_ms;
    f->delay_ms = FWD_DELAY_MIN_MS;
    if (addr != NULL) {
        snprintf(f->addr, sizeof(f->addr), "%s", addr);
    }
    f->cb = cb;
    f->arg = arg;
    return f;
}

/* Start F: its first step runs from the loop, never inside the call. */
static void
fwd_go(struct mcfwd *f)
{
    uv_timer_init(f->node->loop, &f->timer);
    uv_unref((uv_handle_t *) &f->timer); /* never keeps a stopping node */
    f->timer.data = f;
    f->node->mcfwd_stats.inflight++;
    uv_timer_start(&f->timer, fwd_timer_cb, 0, 0);
}

int
brim_mcfwd_start(struct brim_node *node, const struct brim_req *req, uint64_t h,
                 const char *addr, uint32_t timeout_ms, brim_mcfwd_cb cb,
                 void *arg)
{
    struct mcfwd *f = fwd_new(node, req, h, addr, timeout_ms, cb, arg);

    if (f == NULL) {
        return BRIM_ENOMEM;
    }
    fwd_go(f);
    return 0;
}

int
brim_mcfwd_start_mget(struct brim_node *node, uint32_t op, uint32_t ttl_s,
                      const struct brim_bytes *keys, uint32_t nkeys,
                      const char *addr, uint32_t timeout_ms, brim_mcfwd_cb cb,
                      void *arg)
{
    struct brim_req    req;
    struct brim_bytes *copy;
    struct mcfwd      *f;
    size_t             total = 0;
    char              *p;
    uint32_t           i;

    for (i = 0; i < nkeys; i++) {
        total += keys[i].len;
    }
    copy = brim_malloc(nkeys * sizeof(*copy) + total);
    if (copy == NULL) {
        return BRIM_ENOMEM;
    }
    p = (char *) (copy + nkeys);
    for (i = 0; i < nkeys; i++) {
        memcpy(p, keys[i].ptr, keys[i].len);
        copy[i].ptr = p;
        copy[i].len = keys[i].len;
        p += keys[i].len;
    }
    memset(&req, 0, sizeof(req));
    req.op = op;
    req.ttl_s = ttl_s;
    f = fwd_new(node, &req, 0, addr, timeout_ms, cb, arg);
    if (f == NULL) {
        brim_free(copy);
        return BRIM_ENOMEM;
    }
    f->keys = copy;
    f->nkeys = nkeys;
    fwd_go(f);
    return 0;
}

void
brim_mcfwd_get_stats(const struct brim_node *node, struct brim_mcfwd_stats *out)
{
    *out = node->mcfwd_stats;
}

void
brim_mcfwd_stop(struct brim_node *node)
{
    brim_links_stop(&node->mc_links);
}

void
brim_mcfwd_destroy(struct brim_node *node)
{
    brim_links_destroy(&node->mc_links);
}
