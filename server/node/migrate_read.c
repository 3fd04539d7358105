/*
 * server/node/migrate_read.c - keys during a migration (DESIGN.md 7 step
 * 4, PROTOCOL.md section 11): the tombstones that keep a stream from
 * undoing writes and deletes made at the new owner, the new owner's
 * forwarded reads (FORWARD_GET) and pulls (PULL) of keys not streamed yet,
 * and the old owner's answers to them from the copy it still holds.
 */
#include "server/node/migrate_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "proto/frame.h"
#include "server/log.h"

/* ---- tombstones ---- */

struct mig_tomb **
mig_tomb_slot(struct brim_migrate *m, uint64_t hash, const char *key,
              size_t key_len)
{
    struct mig_tomb **slot;

    if (m->ntbuckets == 0) {
        return NULL;
    }
    slot = &m->tbuckets[(hash >> 32) & (m->ntbuckets - 1)];
    for (; *slot != NULL; slot = &(*slot)->hnext) {
        if ((*slot)->hash == hash && (*slot)->key_len == key_len
            && memcmp((*slot)->key, key, key_len) == 0)
        {
            return slot;
        }
    }
    return NULL;
}

static void
mig_tomb_grow(struct brim_migrate *m)
{
    struct mig_tomb **nb, *t, *next;
    uint32_t          n = m->ntbuckets == 0 ? 64 : m->ntbuckets * 2, i, b;

    nb = brim_calloc(n, sizeof(*nb));
    if (nb == NULL) {
        return;
    }
    for (i = 0; i < m->ntbuckets; i++) {
        for (t = m->tbuckets[i]; t != NULL; t = next) {
            next = t->hnext;
            b = (uint32_t) (t->hash >> 32) & (n - 1);
            t->hnext = nb[b];
            nb[b] = t;
        }
    }
    brim_free(m->tbuckets);
    m->tbuckets = nb;
    m->ntbuckets = n;
}

/* The size of a tombstone of KEY_LEN key bytes. */
static size_t
tomb_size(size_t key_len)
{
    return sizeof(struct mig_tomb) + key_len;
}

int
mig_tomb_reserve(struct brim_migrate *m)
{
    if (m->ntbuckets == 0) {
        mig_tomb_grow(m);
    }
    if (m->spare_tomb == NULL) {
        m->spare_tomb = brim_malloc(tomb_size(255));
    }
    return m->ntbuckets == 0 || m->spare_tomb == NULL ? BRIM_ENOMEM : 0;
}

int
mig_tomb_add(struct brim_migrate *m, uint32_t p, uint64_t hash,
             const char *key, size_t key_len)
{
    struct mig_tomb *t;
    uint32_t         b;

    if (key_len == 0 || key_len > 255
        || mig_tomb_slot(m, hash, key, key_len) != NULL)
    {
        return 0;
    }
    if (m->st.tombstones >= m->ntbuckets) {
        mig_tomb_grow(m);           /* failing only lengthens chains */
    }
    t = m->ntbuckets == 0 ? NULL : brim_malloc(tomb_size(key_len));
    if (t == NULL && m->ntbuckets != 0) {
        /* The spare (brim_migrate_before_write() refills it) makes sure
         * an accepted write always leaves its tombstone. */
        t = m->spare_tomb;
        m->spare_tomb = NULL;
    }
    if (t == NULL) {
        return BRIM_ENOMEM;
    }
    t->hash = hash;
    t->p = p;
    t->key_len = (uint8_t) key_len;
    memcpy(t->key, key, key_len);
    b = (uint32_t) (hash >> 32) & (m->ntbuckets - 1);
    t->hnext = m->tbuckets[b];
    m->tbuckets[b] = t;
    t->pnext = m->tomb_head[p];
    m->tomb_head[p] = t;
    m->st.tombstones++;
    return 0;
}

void
mig_tomb_clear(struct brim_migrate *m, uint32_t p)
{
    struct mig_tomb *t, *next, **slot;

    for (t = m->tomb_head[p]; t != NULL; t = next) {
        next = t->pnext;
        slot = mig_tomb_slot(m, t->hash, t->key, t->key_len);
        while (slot != NULL && *slot != t) {
            slot = &(*slot)->hnext;     /* same key cannot repeat */
        }
        if (slot != NULL) {
            *slot = t->hnext;
        }
        brim_free(t);
        m->st.tombstones--;
    }
    m->tomb_head[p] = NULL;
}

/* ---- forwarded reads and pulls at the new owner ---- */

/* A client op waiting for the old owner's answer. */
struct mig_fetch {
    struct brim_migrate *m;
    struct brim_conn    *c;         /* deferred; holds a reference */
    uint64_t             request_id;
    uint64_t             hash;
    uint64_t             mig_epoch; /* the migration id asked under */
    uint32_t             p;
    uint32_t             op;        /* FORWARD_GET or PULL */
    uint32_t             client_op; /* the client's op */
    size_t               body_len;
    char                 body[];    /* the client's frame body */
};

int
brim_migrate_unsettled(struct brim_node *node, uint64_t h, const char *key,
                       size_t key_len)
{
    struct brim_migrate *m = node->mig;
    uint32_t             p;

    if (m == NULL || m->redispatch) {
        return 0;
    }
    p = brim_partition_of(h, node->cfg.partitions);
    return m->in_state[p] == IN_FLIGHT && m->in_src[p] != MIG_NO_SRC
           && mig_tomb_slot(m, h, key, key_len) == NULL;
}

/* Partition P completes here with what it has: its source holds no copy
 * any more, so no batch and no answer can bring more. */
static void
fetch_source_gone(struct brim_migrate *m, uint32_t p, uint64_t e)
{
    if (m->in_state[p] == IN_FLIGHT && m->in_epoch[p] == e) {
        brim_log_info("migrate: partition %u: the old owner holds no copy; "
                      "complete with what is here", p);
        mig_in_finish(m, p);
        m->st.partitions_in_done++;
    }
}

/* Answer F's client from the FORWARD_GET reply REP. */
static void
fetch_answer_get(struct mig_fetch *f, const struct brim_rep *rep)
{
    struct brim_rep out;

    memset(&out, 0, sizeof(out));
    out.request_id = f->request_id;
    if (rep->status != 0) {
        (void) mig_reply(f->c, f->request_id, rep->status,
                         rep->status == BRIM_ENOTFOUND ? "not found"
                                                       : brim_strerror(
                                                             rep->status));
        return;
    }
    out.value = rep->value;
    out.value_len = rep->value_len;
    out.flags = rep->flags;
    out.cas = rep->cas;
    (void) brim_wire_encode_rep(brim_conn_out(f->c), BRIM_OP_GET, &out);
}

/*
 * Store the PULL reply REP's entry for F's key as a stream batch would, so
 * the op runs here on what the old owner held. When it cannot be stored
 * for want of memory the op must not run (it would run on a wrong state):
 * returns BRIM_ENOMEM and the client is answered RETRY; else 0.
 */
static int
fetch_apply_pull(struct mig_fetch *f, const struct brim_rep *rep)
{
    struct brim_migrate   *m = f->m;
    struct brim_wire_entry e;
    int                    rc;

    if (rep->status == 0 && rep->obj != NULL
        && brim_wire_entry_decode(rep->obj, &m->node->cfg.limits, &e) == 0
        && brim_hash_key(brim_node_seed(m->node), e.key, e.key_len)
               == f->hash)
    {
        /* Stored, or already here (written since: it wins). A later
         * batch skips the key while it is here, and the op's own write
         * or delete leaves a tombstone (brim_migrate_hit()). */
        rc = mig_insert(m, f->p, f->hash, &e, (uint32_t) time(NULL));
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

/* Answer F's client RETRY with WHY: the op did not run. */
static void
fetch_retry(struct mig_fetch *f, const char *why)
{
    struct brim_rep rep;

    memset(&rep, 0, sizeof(rep));
    rep.status = BRIM_ERETRY;
    rep.request_id = f->request_id;
    rep.epoch = f->m->node->cl.committed.map.epoch;
    rep.message = why;
    rep.message_len = strlen(why);
    (void) brim_wire_encode_rep(brim_conn_out(f->c), f->client_op, &rep);
}

static void
fetch_reply(struct brim_peer *peer, int status, const char *body, size_t len,
            void *arg)
{
    struct mig_fetch    *f = arg;
    struct brim_migrate *m = f->m;
    struct brim_node    *node = m->node;
    struct brim_rep      rep;
    char                 errbuf[BRIM_ERRBUF_LEN];
    const char          *why = "retry: the partition's old owner did not "
                               "answer";
    int                  ok;

    (void) peer;
    ok = status == 0
         && brim_wire_parse_rep(body, len, f->op, &node->cfg.limits,
                                &node->zone, &rep, errbuf) == 0
         && (rep.status == 0 || rep.status == BRIM_ENOTFOUND
             || rep.status == BRIM_ERETRY);
    if (!ok) {
        if (f->op == BRIM_OP_FORWARD_GET) {
            m->st.forward_fails++;
        } else {
            m->st.pull_fails++;
        }
    }
    if (ok && rep.status == BRIM_ERETRY) {
        fetch_source_gone(m, f->p, f->mig_epoch);
    }
    if (brim_conn_closing(f->c) || node->stopping) {
        /* nobody to answer */
    } else if (!ok) {
        fetch_retry(f, why);        /* a failed forward: RETRY, never a miss */
    } else if (f->op == BRIM_OP_FORWARD_GET && rep.status != BRIM_ERETRY) {
        fetch_answer_get(f, &rep);
    } else {
        if (f->op == BRIM_OP_PULL && fetch_apply_pull(f, &rep) != 0) {
            fetch_retry(f, "retry: out of memory storing the key pulled "
                        "from the old owner");
        } else {
            /* Run the op here now, from what is here (no new fetch). */
            m->redispatch = 1;
            (void) brim_node_dispatch(f->c, f->body, f->body_len);
            m->redispatch = 0;
        }
    }
    brim_conn_resume(f->c);
    brim_free(f);
}

int
brim_migrate_fetch(struct brim_node *node, struct brim_conn *c,
                   const struct brim_req *req, uint64_t h, const char *body,
                   size_t len)
{
    struct brim_migrate      *m = node->mig;
    const struct brim_member *src;
    struct mig_fetch         *f;
    struct mig_dest          *d;
    struct brim_req           fr;
    struct brim_buf           buf;
    uint32_t                  p;

    if (req->op == BRIM_OP_SET
        || !brim_migrate_unsettled(node, h, req->key, req->key_len)
        || brim_store_peek(node->store, h, req->key, req->key_len,
                           (uint32_t) time(NULL)) != NULL)
    {
        return 0;
    }
    p = brim_partition_of(h, node->cfg.partitions);
    src = brim_topo_source(&node->cl.committed, m->in_src[p]);
    if (src == NULL || src->addr[0] == '\0') {
        return 0;
    }
    d = mig_dest_get(m, src->addr);
    if (d == NULL) {
        return 0;                   /* out of memory: a miss, as before */
    }
    if (!mig_dest_ensure(d)) {
        return BRIM_ERETRY;         /* connecting, or cannot: ask again */
    }
    f = brim_malloc(sizeof(*f) + len);
    if (f == NULL) {
        return BRIM_ERETRY;
    }
    f->m = m;
    f->c = c;
    f->request_id = req->request_id;
    f->hash = h;
    f->p = p;
    f->mig_epoch = m->in_epoch[p];
    f->op = req->op == BRIM_OP_GET ? BRIM_OP_FORWARD_GET : BRIM_OP_PULL;
    f->client_op = req->op;
    f->body_len = len;
    memcpy(f->body, body, len);
    memset(&fr, 0, sizeof(fr));
    fr.op = f->op;
    fr.request_id = ++d->next_id;
    fr.epoch = node->cl.committed.map.epoch;
    fr.arg_epoch = f->mig_epoch;
    fr.partition = p;
    fr.key = req->key;
    fr.key_len = req->key_len;
    brim_buf_init(&buf);
    if (brim_wire_encode_req(&buf, &fr) != 0
        || brim_peer_call(&d->peer, &buf, fetch_reply, f) != 0)
    {
        brim_buf_destroy(&buf);
        brim_free(f);
        return BRIM_ERETRY;
    }
    brim_buf_destroy(&buf);
    if (f->op == BRIM_OP_FORWARD_GET) {
        m->st.forwards++;
        m->st.reads_in_flight++;
    } else {
        m->st.pulls++;
    }
    brim_conn_defer(c);
    return 1;
}

/*
 * FORWARD_GET or PULL of a key of partition P at its old owner: answered
 * from the copy it still holds (it no longer owns P), never touching the
 * item's recency. RETRY when it holds no copy.
 */
int
mig_serve_copy(struct brim_migrate *m, struct brim_conn *c,
               const struct brim_req *req)
{
    struct brim_node       *node = m->node;
    const struct brim_item *it;
    struct brim_wire_entry  e;
    struct brim_rep         rep;
    uint32_t                now = (uint32_t) time(NULL), ttl = 0;
    uint64_t                h;

    h = brim_hash_key(brim_node_seed(node), req->key, req->key_len);
    if (brim_partition_of(h, node->cfg.partitions) != req->partition) {
        return mig_reply(c, req->request_id, BRIM_EINVAL,
                         "forward: key of another partition");
    }
    if (!mig_holds(m, req->partition)) {
        return mig_reply(c, req->request_id, BRIM_ERETRY,
                         "forward: this node holds no copy of the partition");
    }
    if (req->op == BRIM_OP_FORWARD_GET) {
        m->st.forwards_served++;
    } else {
        m->st.pulls_served++;
    }
    it = brim_store_peek(node->store, h, req->key, req->key_len, now);
    if (it == NULL) {
        return mig_reply(c, req->request_id, BRIM_ENOTFOUND, "not found");
    }
    if (req->op == BRIM_OP_PULL) {
        if (it->exptime != 0) {
            ttl = it->exptime > now ? it->exptime - now : 1;
        }
        mig_item_entry(it, ttl, &e);
        return brim_wire_encode_entry_rep(brim_conn_out(c), req->request_id,
                                          &e);
    }
    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.value = brim_item_value(it);
    rep.value_len = it->val_len;
    rep.flags = it->flags;
    rep.cas = it->cas;
    return brim_wire_encode_rep(brim_conn_out(c), BRIM_OP_FORWARD_GET, &rep);
}

/* ---- asking the source about quiet partitions (STREAM_QUERY) ---- */

/* One STREAM_QUERY waiting for its answer. */
struct mig_probe {
    struct brim_migrate *m;
    struct mig_dest     *d;         /* the source's connection */
    uint64_t             epoch;     /* the migration id asked about */
    uint32_t             p;
};

static void
probe_reply(struct brim_peer *peer, int status, const char *body, size_t len,
            void *arg)
{
    struct mig_probe    *q = arg;
    struct brim_migrate *m = q->m;
    struct brim_rep      rep;
    char                 errbuf[BRIM_ERRBUF_LEN];

    (void) peer;
    BRIM_ASSERT(m->probes_out > 0);
    m->probes_out--;
    m->in_probing[q->p] = 0;
    if (status == 0) {
        q->d->heard_ms = uv_now(m->node->loop);
    }
    if (status == 0 && m->in_state[q->p] == IN_FLIGHT
        && m->in_epoch[q->p] == q->epoch
        && brim_wire_parse_rep(body, len, BRIM_OP_STREAM_QUERY,
                               &m->node->cfg.limits, &m->node->zone, &rep,
                               errbuf) == 0)
    {
        if (rep.status == 0) {
            m->in_touch[q->p] = mig_touch_now(m);  /* queued or streaming */
        } else if (rep.status == BRIM_ERETRY) {
            m->st.probes_source_gone++;
            fetch_source_gone(m, q->p, q->epoch);
        }
    }
    brim_free(q);
}

/* Ask the source of in-flight partition P whether it still streams it. */
static void
probe_send(struct brim_migrate *m, uint32_t p, const struct mig_dest *dd)
{
    struct mig_dest  *d = (struct mig_dest *) dd;
    struct mig_probe *q;
    struct brim_req   req;
    struct brim_buf   buf;
    int               rc;

    q = brim_malloc(sizeof(*q));
    if (q == NULL) {
        return;                     /* asked again at the next tick */
    }
    q->m = m;
    q->d = d;
    q->epoch = m->in_epoch[p];
    q->p = p;
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_STREAM_QUERY;
    req.request_id = ++d->next_id;
    req.epoch = m->node->cl.committed.map.epoch;
    req.arg_epoch = q->epoch;
    req.partition = p;
    brim_buf_init(&buf);
    rc = brim_wire_encode_req(&buf, &req);
    if (rc == 0) {
        rc = brim_peer_call(&d->peer, &buf, probe_reply, q);
    }
    brim_buf_destroy(&buf);
    if (rc != 0) {
        brim_free(q);
        return;
    }
    m->st.probes++;
    m->probes_out++;
    m->in_probing[p] = 1;
}

/*
 * In-flight partition P has heard nothing from its source for IDLE units
 * of 100 ms. Ask the source; when the source is a node that left (it is
 * no member, so nobody will declare it dead) and has not answered for
 * dead-after, it is gone: complete with what is here (DESIGN.md 7.6).
 */
static void
probe_one(struct brim_migrate *m, uint32_t p, uint32_t idle)
{
    const struct brim_topo   *cur = &m->node->cl.committed;
    const struct brim_member *src;
    struct mig_dest          *d;
    uint64_t                  now = uv_now(m->node->loop), dead_ms;

    (void) idle;
    src = m->in_src[p] == MIG_NO_SRC ? NULL
                                     : brim_topo_source(cur, m->in_src[p]);
    if (src == NULL || src->addr[0] == '\0') {
        fetch_source_gone(m, p, m->in_epoch[p]);
        return;
    }
    d = mig_dest_get(m, src->addr);
    if (d == NULL) {
        return;
    }
    dead_ms = m->node->cl.lease_ms != 0 ? 2 * (uint64_t) m->node->cl.lease_ms
                                        : 3000;
    if (m->in_src[p] >= cur->nmembers && now - d->heard_ms >= dead_ms) {
        brim_log_warn("migrate: partition %u: its source %s left the "
                      "cluster and has not answered for %" PRIu64 " ms: it "
                      "is gone; complete with what is here", p, src->name,
                      now - d->heard_ms);
        m->st.probes_source_gone++;
        mig_in_finish(m, p);
        m->st.partitions_in_done++;
        return;
    }
    if (mig_dest_ensure(d)) {
        probe_send(m, p, d);
    }
}

static void
probe_tick_cb(uv_timer_t *t)
{
    struct brim_migrate *m = t->data;
    uint32_t             P = m->node->cfg.partitions, k, p, now, idle;

    if (m->node->stopping || m->st.partitions_in_flight == 0) {
        m->probe_armed = 0;
        return;
    }
    now = mig_touch_now(m);
    for (k = 0; k < BRIM_MIN(P, (uint32_t) MIG_PROBE_SLICE)
                && m->probes_out < MIG_PROBE_OUT;
         k++)
    {
        p = m->probe_next;
        m->probe_next = (m->probe_next + 1) & (P - 1);
        idle = now - m->in_touch[p];
        if (m->in_state[p] == IN_FLIGHT && !m->in_probing[p]
            && idle >= MIG_PROBE_IDLE_MS / 100)
        {
            probe_one(m, p, idle);
        }
    }
    uv_timer_start(&m->probe, probe_tick_cb, MIG_PROBE_TICK_MS, 0);
}

void
mig_probe_start(struct brim_migrate *m)
{
    if (!m->probe_armed) {
        m->probe_armed = 1;
        uv_timer_start(&m->probe, probe_tick_cb, MIG_PROBE_TICK_MS, 0);
    }
}
