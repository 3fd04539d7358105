/*
 * server/node/serve.c - the data ops a node serves (PROTOCOL.md 4-5):
 * GET, GAT, SET and the other writes, DEL, TOUCH, INCR/DECR and MGET,
 * each routed by the node's epoch (epoch.h), run against the store, and
 * answered. A key of a partition in flight that is not here yet is first
 * asked of its old owner (migrate.h); the op then continues from the
 * request already decoded, so nothing is decoded, guarded or counted
 * twice.
 */
#include "server/node/serve.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/defs.h"
#include "common/hash.h"
#include "proto/frame.h"
#include "server/log.h"
#include "server/node/coordlink.h"
#include "server/node/epoch.h"
#include "server/node/migrate.h"

static uint32_t
unix_now(void)
{
    return (uint32_t) time(NULL);
}

/*
 * memcached's TTL rule: 0 never expires, up to 30 days is relative, above
 * that an absolute Unix time (one in the past expires at once).
 */
static uint32_t
serve_exptime(uint32_t ttl_s, uint32_t now)
{
    if (ttl_s == 0) {
        return 0;
    }
    if (ttl_s > BRIM_WIRE_TTL_RELATIVE_MAX) {
        return ttl_s <= now ? 1 : ttl_s; /* 1: already in the past */
    }
    return now + ttl_s;
}

/*
 * The time a GAT reads its hit at once it set EXPTIME: NOW, or for an
 * EXPTIME already past (a negative or past absolute TTL) the second before
 * it, so the hit is answered and expires on the next access, as memcached's
 * gat does (its item_touch() returns the item it sets the time of).
 */
static uint32_t
serve_read_time(uint32_t exptime, uint32_t now)
{
    return exptime != 0 && exptime <= now ? exptime - 1 : now;
}

/* The seconds IT has left at NOW, at least 1; 0 when it never expires
 * (PROTOCOL.md 4.2, ttl_left_s). */
static uint32_t
serve_ttl_left(const struct brim_item *it, uint32_t now)
{
    uint32_t exptime = brim_item_exptime(it);

    if (exptime == 0) {
        return 0;
    }
    return exptime > now ? exptime - now : 1;
}

/*
 * MGAT's TTL for one key routed here, run as GAT's is (serve_run()): room
 * for the write's tombstone while its partition is in flight, the touch,
 * the migration's record. Returns 0 (set, or the key is absent), or
 * BRIM_ERETRY for a key in flight and not here yet, or without room for
 * its tombstone: the client asks it with GAT alone, which pulls it first.
 */
static int
serve_mgat_touch(struct brim_node *node, uint64_t h, const char *key,
                 size_t key_len, uint32_t ttl_s, uint32_t now)
{
    uint32_t p = brim_partition_of(h, node->cfg.partitions);
    int      rc;

    if (node->mig != NULL
        && ((brim_store_peek(node->store, h, key, key_len, now) == NULL
             && brim_migrate_unsettled(node, h, key, key_len))
            || brim_migrate_before_write(node, p, h, key, key_len) != 0))
    {
        return BRIM_ERETRY;
    }
    rc = brim_store_touch(node->store, h, key, key_len,
                          serve_exptime(ttl_s, now), now);
    if (node->mig != NULL && rc == 0) {
        brim_migrate_hit(node, p, h, key, key_len, BRIM_MIG_WRITE, rc);
    }
    return 0;
}

/* MGET and MGAT: one entry per key, in order; a hit that would push the
 * frame past the limit is answered TOOBIG for the client to fetch on its
 * own. MGAT sets the TTL of each key that is here first, as GAT does. */
static int
serve_mget(struct brim_node *node, struct brim_conn *c,
           const struct brim_req *req, uint32_t now)
{
    struct brim_buf        *out = brim_conn_out(c);
    const struct brim_item *it;
    const char             *key;
    struct brim_rep         rrep;
    size_t                  key_len, mark;
    uint32_t                i, at;
    uint64_t                h;
    int                     rc, route, newer;

    rc = brim_wire_mget_begin_epoch(out, req->request_id, req->nkeys,
                                    node->topo.committed.map.epoch, &mark);
    for (i = 0; rc == 0 && i < req->nkeys; i++) {
        brim_wire_req_key(req, i, &key, &key_len);
        h = brim_hash_key(brim_node_seed(node), key, key_len);
        route = brim_node_route(node, req->epoch, h, &rrep, &newer);
        if (newer) {
            brim_node_coord_fetch(node);
        }
        at = now;
        if (route == 0 && req->op == BRIM_OP_MGAT) {
            route = serve_mgat_touch(node, h, key, key_len, req->ttl_s, now);
            at = serve_read_time(serve_exptime(req->ttl_s, now), now);
        }
        if (route == 0 && node->mig != NULL) {
            brim_migrate_hit(node, brim_partition_of(h, node->cfg.partitions),
                             h, key, key_len, BRIM_MIG_READ, 0);
        }
        if (route != 0) {
            rc = brim_wire_mget_miss(out, route); /* MOVED or RETRY */
        } else if (brim_store_get(node->store, h, key, key_len, at, &it) != 0) {
            /* A key in flight may be at the old owner: the client GETs
             * it alone, and that GET is forwarded. */
            rc = brim_wire_mget_miss(
                out,
                brim_migrate_unsettled(node, h, key, key_len) ? BRIM_ERETRY
                                                              : BRIM_ENOTFOUND);
        } else if (out->len - mark + brim_item_val_len(it) + 64
                   > node->cfg.limits.max_frame_bytes)
        {
            rc = brim_wire_mget_miss(out, BRIM_ETOOBIG);
        } else {
            rc = brim_wire_mget_hit(out, brim_item_value(it),
                                    brim_item_val_len(it), brim_item_flags(it),
                                    brim_item_cas(it));
        }
    }
    if (rc == 0) {
        rc = brim_wire_mget_end(out, node->topo.committed.map.epoch, mark);
    }
    if (rc != 0) {
        brim_frame_abort(out, mark);
    }
    return rc;
}

static enum brim_store_mode
serve_store_mode(uint32_t op)
{
    switch (op) {
    case BRIM_OP_ADD:
        return BRIM_STORE_ADD;
    case BRIM_OP_REPLACE:
        return BRIM_STORE_REPLACE;
    case BRIM_OP_CAS:
        return BRIM_STORE_CAS;
    case BRIM_OP_APPEND:
        return BRIM_STORE_APPEND;
    case BRIM_OP_PREPEND:
        return BRIM_STORE_PREPEND;
    default:
        return BRIM_STORE_SET;
    }
}

/* Run the keyed data op REQ on the key hashed to H (routed here). */
static int
serve_data_op(struct brim_node *node, const struct brim_req *req,
              struct brim_rep *rep, uint64_t h, uint32_t now)
{
    const struct brim_item *it;
    int                     rc;

    switch (req->op) {
    case BRIM_OP_GET:
    case BRIM_OP_GAT:
        if (req->op == BRIM_OP_GAT) {
            uint32_t exptime = serve_exptime(req->ttl_s, now);

            rc = brim_store_touch(node->store, h, req->key, req->key_len,
                                  exptime, now);
            if (rc != 0) {
                return rc;
            }
            now = serve_read_time(exptime, now);
        }
        rc = brim_store_get(node->store, h, req->key, req->key_len, now, &it);
        if (rc == 0) {
            rep->value = brim_item_value(it);
            rep->value_len = brim_item_val_len(it);
            rep->flags = brim_item_flags(it);
            rep->cas = brim_item_cas(it);
            rep->ttl_s = serve_ttl_left(it, now);
        }
        return rc;
    case BRIM_OP_DEL:
        return brim_store_del(node->store, h, req->key, req->key_len, now);
    case BRIM_OP_TOUCH:
        return brim_store_touch(node->store, h, req->key, req->key_len,
                                serve_exptime(req->ttl_s, now), now);
    case BRIM_OP_INCR:
    case BRIM_OP_DECR:
        rc = brim_store_incr(node->store, h, req->key, req->key_len, req->delta,
                             req->op == BRIM_OP_DECR, now, &rep->number,
                             &rep->cas);
        if (rc == 0) {
            it = brim_store_peek(node->store, h, req->key, req->key_len, now);
            rep->ttl_s = it != NULL ? serve_ttl_left(it, now) : 0;
        }
        return rc;
    default:
        return brim_store_set(
            node->store, serve_store_mode(req->op), h, req->key, req->key_len,
            req->value, req->value_len, req->flags,
            serve_exptime(req->ttl_s, now), req->cas, now, &rep->cas);
    }
}

static const char *
serve_error_text(uint32_t op, int status)
{
    switch (status) {
    case BRIM_ENOTSTORED:
        return op == BRIM_OP_ADD ? "not stored: key exists"
                                 : "not stored: key does not exist";
    case BRIM_EEXISTS:
        return "cas mismatch: the item changed since it was read";
    case BRIM_ETOOBIG:
        return "item too big for the node's memory limit or max value";
    case BRIM_ENONUMERIC:
        return "value is not a decimal number that fits 64 bits";
    default:
        return brim_strerror(status);
    }
}

/*
 * TOOBIG, with its real cause (issue 12: "too big for the memory limit
 * or max value" left the user to guess): the value (or APPEND's and
 * PREPEND's result) above --max-value-bytes, or an item the memory limit
 * cannot hold even after evicting.
 */
static int
serve_toobig(struct brim_node *node, struct brim_conn *c,
             const struct brim_req *req, uint64_t h)
{
    const struct brim_item *old;
    char                    msg[256];
    size_t                  len = req->value_len;

    if (req->op == BRIM_OP_APPEND || req->op == BRIM_OP_PREPEND) {
        old =
            brim_store_peek(node->store, h, req->key, req->key_len, unix_now());
        len += old != NULL ? brim_item_val_len(old) : 0;
    }
    if (len > node->cfg.limits.max_value_bytes) {
        snprintf(msg, sizeof(msg),
                 "too big: the value would be %zu bytes, "
                 "above this node's --max-value-bytes %u",
                 len, node->cfg.limits.max_value_bytes);
    } else {
        snprintf(msg, sizeof(msg),
                 "too big: an item of %zu bytes does not "
                 "fit this node's --memory-mb %u (items and tables), even "
                 "after evicting",
                 len + req->key_len, node->cfg.memory_mb);
    }
    return brim_node_reply_data_error(node, c, req, BRIM_ETOOBIG, msg);
}

/*
 * Run the keyed data op REQ on the key hashed to H, routed here: room for
 * a write's tombstone while its partition is in flight, the op, and the
 * migration's record of it (a stream resends what changed). Returns 0,
 * the store's error, or BRIM_EMOVED / BRIM_ERETRY (REP filled).
 */
static int
serve_run(struct brim_node *node, const struct brim_req *req,
          struct brim_rep *rep, uint64_t h)
{
    uint32_t p = brim_partition_of(h, node->cfg.partitions);
    int      rc;

    if (node->mig != NULL
        && (brim_op_info(req->op)->flags & BRIM_OPF_WRITE) != 0) {
        /* A write in flight must be able to leave its tombstone. */
        rc = brim_migrate_before_write(node, p, h, req->key, req->key_len);
        if (rc != 0) {
            return rc;
        }
    }
    rc = serve_data_op(node, req, rep, h, unix_now());
    if (node->mig != NULL) {
        brim_migrate_hit(node, p, h, req->key, req->key_len,
                         req->op == BRIM_OP_GET || req->op == BRIM_OP_GAT
                             ? BRIM_MIG_READ
                             : req->op == BRIM_OP_DEL ? BRIM_MIG_DELETE
                                                      : BRIM_MIG_WRITE,
                         rc);
        if (req->op == BRIM_OP_GAT && rc == 0) {
            brim_migrate_hit(node, p, h, req->key, req->key_len, BRIM_MIG_WRITE,
                             rc);
        }
    }
    return rc;
}

int
brim_node_serve_here(struct brim_node *node, const struct brim_req *req,
                     uint64_t h, struct brim_rep *rep)
{
    int rc, newer;

    rc = brim_node_route(node, 0, h, rep, &newer);
    if (rc != 0) {
        return rc;
    }
    if (req->op != BRIM_OP_SET
        && brim_migrate_unsettled(node, h, req->key, req->key_len))
    {
        return BRIM_EAGAIN; /* the old owner may hold it: serve_keyed's */
    }
    return serve_run(node, req, rep, h);
}

static void serve_continue(struct brim_node *node, struct brim_conn *c,
                           const struct brim_req *req, uint64_t h);

/*
 * Route and run the keyed data op REQ from C on the key hashed to H, and
 * append its reply. FETCHED: the old owner was asked already (the key is
 * settled here), so it is not asked again. Returns 0, or BRIM_ENOMEM.
 */
static int
serve_keyed(struct brim_node *node, struct brim_conn *c,
            const struct brim_req *req, uint64_t h, int fetched)
{
    struct brim_rep rep;
    int             rc, newer;

    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    /* Every data reply names the committed epoch, so that a client learns
     * of a change from its own traffic (DESIGN.md 12). */
    rep.node_epoch = node->topo.committed.map.epoch;
    rc = brim_node_route(node, req->epoch, h, &rep, &newer);
    if (newer) {
        brim_node_coord_fetch(node); /* a client knows a newer epoch */
    }
    if (rc == 0 && node->mig != NULL && !fetched) {
        /* In flight and not here: the old owner is asked first. */
        rc = brim_migrate_fetch(node, c, req, h, serve_continue);
        if (rc == 1) {
            return 0; /* the reply comes with its answer */
        }
    }
    if (rc == 0) {
        rc = serve_run(node, req, &rep, h);
    }
    if (rc == BRIM_EMOVED || rc == BRIM_ERETRY) {
        rep.status = rc;
        rep.message = brim_strerror(rc);
        rep.message_len = strlen(rep.message);
        return brim_wire_encode_rep(brim_conn_out(c), req->op, &rep);
    }
    if (rc == BRIM_ETOOBIG) {
        return serve_toobig(node, c, req, h);
    }
    if (rc != 0) {
        return brim_node_reply_data_error(node, c, req, rc,
                                          serve_error_text(req->op, rc));
    }
    return brim_wire_encode_rep(brim_conn_out(c), req->op, &rep);
}

/* brim_mig_continue_fn: the old owner answered; run the op here. */
static void
serve_continue(struct brim_node *node, struct brim_conn *c,
               const struct brim_req *req, uint64_t h)
{
    (void) serve_keyed(node, c, req, h, 1);
}

int
brim_node_reply_error(struct brim_conn *c, uint64_t id, int status,
                      const char *msg)
{
    if (-status > BRIM_STATUS_WIRE_MAX) {
        status = BRIM_ENOMEM; /* local codes never travel */
    }
    return brim_wire_encode_status(brim_conn_out(c), id, status, msg,
                                   msg != NULL ? strlen(msg) : 0);
}

int
brim_node_reply_data_error(struct brim_node *node, struct brim_conn *c,
                           const struct brim_req *req, int status,
                           const char *msg)
{
    struct brim_rep rep;

    if (-status > BRIM_STATUS_WIRE_MAX) {
        status = BRIM_ENOMEM; /* local codes never travel */
    }
    memset(&rep, 0, sizeof(rep));
    rep.status = status;
    rep.request_id = req->request_id;
    rep.message = msg;
    rep.message_len = msg != NULL ? strlen(msg) : 0;
    rep.epoch = node->topo.committed.map.epoch;
    rep.node_epoch = rep.epoch;
    return brim_wire_encode_rep(brim_conn_out(c), req->op, &rep);
}

int
brim_node_serve_data(struct brim_node *node, struct brim_conn *c,
                     const struct brim_req *req)
{
    uint64_t h;

    if (req->op == BRIM_OP_MGET || req->op == BRIM_OP_MGAT) {
        return serve_mget(node, c, req, unix_now());
    }
    BRIM_ASSERT((brim_op_info(req->op)->flags & BRIM_OPF_KEY) != 0);
    h = brim_hash_key(brim_node_seed(node), req->key, req->key_len);
    return serve_keyed(node, c, req, h, 0);
}
