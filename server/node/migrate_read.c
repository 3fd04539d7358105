/*
 * server/node/migrate_read.c - keys during a migration (DESIGN.md 7 step
 * 4, PROTOCOL.md section 11): at the new owner, the forwarded reads
 * (FORWARD_GET) and pulls (PULL) of keys not streamed yet; at the old
 * owner, their answers from the copy it still holds. A forwarded op keeps
 * the request it was decoded into (a copy) and continues it when the
 * answer comes: it is never decoded, guarded or counted twice.
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
#include "server/log.h"
#include "server/node/flush.h"
#include "server/node/epoch.h"

/* ---- forwarded reads and pulls at the new owner ---- */

/* A client op waiting for the old owner's answer. */
struct mig_fetch {
    struct brim_migrate *m;
    struct brim_conn    *c;    /* deferred; holds a reference */
    brim_mig_continue_fn cont; /* runs the op once its key is here */
    struct brim_req      req;  /* the client's request; its key and
                                       value point into BYTES */
    uint64_t             request_id;
    uint64_t             hash;
    uint64_t             mig_epoch; /* the migration id asked under */
    uint64_t             flush_ms;  /* our applied flush mark then */
    uint32_t             p;
    uint32_t             op;        /* FORWARD_GET or PULL */
    uint32_t             client_op; /* the client's op */
    char                 bytes[];   /* the request's key, then value */
};

int
brim_migrate_unsettled(struct brim_node *node, uint64_t h, const char *key,
                       size_t key_len)
{
    struct brim_migrate *m = node->mig;
    uint32_t             p;

    if (m == NULL) {
        return 0;
    }
    p = brim_partition_of(h, node->cfg.partitions);
    return m->in_state[p] == IN_FLIGHT && m->in_src[p] != MIG_NO_SRC
        && mig_tomb_slot(m, h, key, key_len) == NULL;
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
                         rep->status == BRIM_ENOTFOUND
                             ? "not found"
                             : brim_strerror(rep->status));
        return;
    }
    out.value = rep->value;
    out.value_len = rep->value_len;
    out.flags = rep->flags;
    out.cas = rep->cas;
    out.node_epoch = f->m->node->topo.committed.map.epoch;
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
        && brim_hash_key(brim_node_seed(m->node), e.key, e.key_len) == f->hash)
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
    rep.epoch = f->m->node->topo.committed.map.epoch;
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
    int                  ok;

    (void) peer;
    ok = status == 0
        && brim_wire_parse_rep(body, len, f->op, &node->cfg.limits, &node->zone,
                               &rep, errbuf)
            == 0
        && (rep.status == 0 || rep.status == BRIM_ENOTFOUND
            || rep.status == BRIM_ERETRY);
    if (!ok) {
        if (f->op == BRIM_OP_FORWARD_GET) {
            m->stats.forward_fails++;
        } else {
            m->stats.pull_fails++;
        }
    }
    if (ok && rep.status == 0 && brim_node_flush_applied(node) != f->flush_ms) {
        /* A flush was applied here while the old owner answered: what it
         * sent is older than the flush, so it is a miss (flush.h). */
        node->flush.dropped++;
        rep.status = BRIM_ENOTFOUND;
        rep.obj = NULL;
    }
    if (ok && rep.status == BRIM_ERETRY) {
        mig_in_source_gone(m, f->p, f->mig_epoch,
                           "the old owner holds no "
                           "copy");
    }
    if (brim_conn_closing(f->c) || node->stopping) {
        /* nobody to answer */
    } else if (!ok) {
        /* A forward that fails gives RETRY, never NOTFOUND. */
        fetch_retry(f, "retry: the partition's old owner did not answer");
    } else if (f->op == BRIM_OP_FORWARD_GET && rep.status != BRIM_ERETRY) {
        fetch_answer_get(f, &rep);
    } else if (f->op == BRIM_OP_PULL && fetch_apply_pull(f, &rep) != 0) {
        fetch_retry(f,
                    "retry: out of memory storing the key pulled from "
                    "the old owner");
    } else {
        /* The key is settled here now (stored, or complete without it):
         * the op runs on what is here, from the request already decoded. */
        f->cont(node, f->c, &f->req, f->hash);
    }
    brim_conn_resume(f->c);
    brim_free(f);
}

/* Copy the keyed data op REQ into F, its key and value into F->bytes. */
static void
fetch_keep_req(struct mig_fetch *f, const struct brim_req *req)
{
    memset(&f->req, 0, sizeof(f->req));
    f->req.op = req->op;
    f->req.request_id = req->request_id;
    f->req.epoch = req->epoch;
    f->req.ttl_s = req->ttl_s;
    f->req.flags = req->flags;
    f->req.cas = req->cas;
    f->req.delta = req->delta;
    memcpy(f->bytes, req->key, req->key_len);
    f->req.key = f->bytes;
    f->req.key_len = req->key_len;
    if (req->value_len > 0) {
        memcpy(f->bytes + req->key_len, req->value, req->value_len);
    }
    f->req.value = f->bytes + req->key_len;
    f->req.value_len = req->value_len;
}

int
brim_migrate_fetch(struct brim_node *node, struct brim_conn *c,
                   const struct brim_req *req, uint64_t h,
                   brim_mig_continue_fn cont)
{
    struct brim_migrate      *m = node->mig;
    const struct brim_member *src;
    struct mig_fetch         *f;
    struct brim_node_link    *l;
    struct brim_req           fr;
    struct brim_buf           buf;
    uint32_t                  p;

    if (req->op == BRIM_OP_SET
        || !brim_migrate_unsettled(node, h, req->key, req->key_len)
        || brim_store_peek(node->store, h, req->key, req->key_len,
                           (uint32_t) time(NULL))
            != NULL)
    {
        return 0;
    }
    p = brim_partition_of(h, node->cfg.partitions);
    src = brim_topo_source(&node->topo.committed, m->in_src[p]);
    if (src == NULL || src->addr[0] == '\0') {
        return 0;
    }
    l = brim_link_get(&node->links, src->addr);
    if (l == NULL || !brim_link_ensure(l)) {
        return BRIM_ERETRY; /* no memory, or being made: again */
    }
    f = brim_malloc(sizeof(*f) + req->key_len + req->value_len);
    if (f == NULL) {
        return BRIM_ERETRY;
    }
    f->m = m;
    f->c = c;
    f->cont = cont;
    f->request_id = req->request_id;
    f->hash = h;
    f->p = p;
    f->mig_epoch = m->in_epoch[p];
    f->flush_ms = brim_node_flush_applied(node);
    f->op = req->op == BRIM_OP_GET ? BRIM_OP_FORWARD_GET : BRIM_OP_PULL;
    f->client_op = req->op;
    fetch_keep_req(f, req);
    memset(&fr, 0, sizeof(fr));
    fr.op = f->op;
    fr.request_id = ++l->next_id;
    fr.epoch = node->topo.committed.map.epoch;
    fr.arg_epoch = f->mig_epoch;
    fr.partition = p;
    fr.key = req->key;
    fr.key_len = req->key_len;
    fr.flush_ms = f->flush_ms; /* the old owner flushes first if behind */
    brim_buf_init(&buf);
    if (brim_wire_encode_req(&buf, &fr) != 0
        || brim_peer_call(&l->peer, &buf, fetch_reply, f) != 0)
    {
        brim_buf_destroy(&buf);
        brim_free(f);
        return BRIM_ERETRY;
    }
    brim_buf_destroy(&buf);
    if (f->op == BRIM_OP_FORWARD_GET) {
        m->stats.forwards++;
        m->stats.reads_in_flight++;
    } else {
        m->stats.pulls++;
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
    uint32_t                now = (uint32_t) time(NULL), ttl = 0, exptime;
    uint64_t                h;

    h = brim_hash_key(brim_node_seed(node), req->key, req->key_len);
    if (brim_partition_of(h, node->cfg.partitions) != req->partition) {
        return mig_reply(c, req->request_id, BRIM_EINVAL,
                         "forward: key of another partition");
    }
    /* The asker applied a flush we have not: it happened, so our copy
     * goes first and the answer is never older than it (flush.h). */
    (void) brim_node_flush_stamp(node, req->flush_ms);
    if (!mig_holds(m, req->partition)) {
        return mig_reply(c, req->request_id, BRIM_ERETRY,
                         "forward: this node holds no copy of the partition");
    }
    if (req->op == BRIM_OP_FORWARD_GET) {
        m->stats.forwards_served++;
    } else {
        m->stats.pulls_served++;
    }
    it = brim_store_peek(node->store, h, req->key, req->key_len, now);
    if (it == NULL) {
        return mig_reply(c, req->request_id, BRIM_ENOTFOUND, "not found");
    }
    if (req->op == BRIM_OP_PULL) {
        exptime = brim_item_exptime(it);
        if (exptime != 0) {
            ttl = exptime > now ? exptime - now : 1;
        }
        mig_item_entry(it, ttl, &e);
        return brim_wire_encode_entry_rep(brim_conn_out(c), req->request_id,
                                          &e);
    }
    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.value = brim_item_value(it);
    rep.value_len = brim_item_val_len(it);
    rep.flags = brim_item_flags(it);
    rep.cas = brim_item_cas(it);
    return brim_wire_encode_rep(brim_conn_out(c), BRIM_OP_FORWARD_GET, &rep);
}
