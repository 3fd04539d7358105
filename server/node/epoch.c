/*
 * server/node/epoch.c - a node's epochs in cluster mode (PROTOCOL.md 10.4,
 * DESIGN.md 7 steps 1-2): the committed topology it serves by, at most one
 * pending one, and the routing decision of every data op: serve, MOVED or
 * RETRY. A commit hands the partitions the node lost to migrate.c, which
 * streams them to their new owners; the rest are dropped. No I/O here.
 */
#include "server/node/node.h"

#include <inttypes.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "server/log.h"

/* Our index in TOPO: the member with our name and, when the member names
 * one, our incarnation (an older incarnation's entry is not us). */
static int32_t
epoch_self(const struct brim_node *node, const struct brim_topo *topo)
{
    int32_t i = brim_topo_find(topo, node->cfg.name);

    if (i >= 0 && topo->members[i].incarnation != 0
        && topo->members[i].incarnation != node->incarnation)
    {
        return -1;
    }
    return i;
}

uint64_t
brim_node_seed(const struct brim_node *node)
{
    if (node->cfg.standalone || node->cl.committed.map.epoch == 0) {
        return node->cfg.seed;
    }
    return node->cl.committed.seed;
}

uint32_t
brim_node_owned(const struct brim_node *node)
{
    const struct brim_map *m = &node->cl.committed.map;
    uint32_t               p, n = 0;

    if (node->cfg.standalone) {
        return node->cfg.partitions;
    }
    for (p = 0; m->epoch != 0 && node->cl.self >= 0 && p < m->npartitions;
         p++)
    {
        n += m->owner[p] == (uint16_t) node->cl.self;
    }
    return n;
}

/* The newest epoch the node knows: pending, else committed. */
static uint64_t
epoch_known(const struct brim_node *node)
{
    return node->cl.has_pending ? node->cl.pending.map.epoch
                                : node->cl.committed.map.epoch;
}

/*
 * Decode T and check it against the node: same cluster (once one is
 * known), same P as the store, newer than the committed epoch. On success
 * *OUT holds it (the caller owns it).
 */
static int
epoch_decode(struct brim_node *node, const msgpack_object *t,
             struct brim_topo *out, char errbuf[BRIM_ERRBUF_LEN])
{
    int rc;

    rc = brim_topo_decode(t, out, errbuf);
    if (rc != 0) {
        return rc;
    }
    if (node->cluster_id != 0 && out->cluster_id != node->cluster_id) {
        brim_errfmt(errbuf, "epoch: topology of cluster %016" PRIx64
                    ", this node is in cluster %016" PRIx64,
                    out->cluster_id, node->cluster_id);
        rc = BRIM_EDENIED;
    } else if (out->map.npartitions != node->cfg.partitions) {
        brim_errfmt(errbuf, "epoch: topology has %u partitions, this node "
                    "was started with --partitions %u", out->map.npartitions,
                    node->cfg.partitions);
        rc = BRIM_EBADREQ;
    } else if (out->map.epoch == 0
               || out->map.epoch <= node->cl.committed.map.epoch)
    {
        brim_errfmt(errbuf, "epoch: %" PRIu64 " is not newer than the "
                    "committed epoch %" PRIu64, out->map.epoch,
                    node->cl.committed.map.epoch);
        rc = BRIM_EEXISTS;
    } else if (node->cl.committed.map.epoch != 0
               && out->seed != node->cl.committed.seed)
    {
        brim_errfmt(errbuf, "epoch: topology changes the cluster seed");
        rc = BRIM_EBADREQ;
    }
    if (rc != 0) {
        brim_topo_destroy(out);
    }
    return rc;
}

/* Keep TOPO (ownership taken) as the pending topology, replacing any. */
static void
epoch_set_pending(struct brim_node *node, struct brim_topo *topo)
{
    if (node->cl.has_pending) {
        brim_topo_destroy(&node->cl.pending);
    }
    node->cl.pending = *topo;
    node->cl.has_pending = 1;
    node->cl.self_pending = epoch_self(node, topo);
    node->cluster_id = topo->cluster_id;
}

int
brim_node_propose(struct brim_node *node, const msgpack_object *t,
                  char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_topo topo;
    int              rc;

    rc = epoch_decode(node, t, &topo, errbuf);
    if (rc != 0) {
        return rc;
    }
    if (node->cl.has_pending && node->cl.pending.map.epoch > topo.map.epoch) {
        /* A node keeps the highest pending epoch (DESIGN.md 7, step 1). */
        brim_errfmt(errbuf, "epoch: %" PRIu64 " is older than the pending "
                    "epoch %" PRIu64, topo.map.epoch,
                    node->cl.pending.map.epoch);
        brim_topo_destroy(&topo);
        return BRIM_EEXISTS;
    }
    epoch_set_pending(node, &topo);
    brim_log_info("epoch %" PRIu64 " pending (committed %" PRIu64 "): %u "
                  "members, this node %s", topo.map.epoch,
                  node->cl.committed.map.epoch, topo.nmembers,
                  node->cl.self_pending >= 0 ? "a member" : "not a member");
    return 0;
}

int
brim_node_adopt(struct brim_node *node, const msgpack_object *t,
                char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_topo topo;
    int              rc;

    rc = epoch_decode(node, t, &topo, errbuf);
    if (rc == BRIM_EEXISTS) {
        return 0;                   /* we already hold this one or newer */
    }
    if (rc != 0) {
        return rc;
    }
    if (node->cl.has_pending && node->cl.pending.map.epoch <= topo.map.epoch) {
        brim_topo_destroy(&node->cl.pending);
        node->cl.has_pending = 0;
    }
    if (node->cl.has_pending) {
        brim_topo_destroy(&topo);   /* a newer one is pending: wait for it */
        return 0;
    }
    epoch_set_pending(node, &topo);
    return brim_node_commit(node, topo.map.epoch);
}

int
brim_node_commit(struct brim_node *node, uint64_t epoch)
{
    struct brim_node_cluster *cl = &node->cl;
    struct brim_topo          old;
    uint8_t                  *keep;
    uint32_t                  p, dropped = 0, kept = 0;
    size_t                    keys = 0;
    int32_t                   old_self;
    uint16_t                  self;

    if (!cl->has_pending || cl->pending.map.epoch != epoch) {
        return epoch != 0 && epoch == cl->committed.map.epoch
                   ? 0 : BRIM_ENOTFOUND;
    }
    old = cl->committed;
    old_self = cl->self;
    cl->committed = cl->pending;
    cl->self = cl->self_pending;
    cl->was_member |= cl->self >= 0;
    memset(&cl->pending, 0, sizeof(cl->pending));
    cl->has_pending = 0;
    cl->self_pending = -1;
    /* Partitions lost to a live member are streamed to it (migrate.c)
     * and dropped once sent; the others are dropped now, so a later map
     * that gives one back starts it empty rather than with stale values. */
    keep = brim_calloc(cl->committed.map.npartitions, 1);
    if (keep != NULL) {
        brim_migrate_commit(node, &old, old_self, keep);
    }
    brim_topo_destroy(&old);
    self = cl->self >= 0 ? (uint16_t) cl->self : BRIM_NODE_NONE;
    for (p = 0; p < cl->committed.map.npartitions; p++) {
        if (cl->committed.map.owner[p] == self) {
            continue;
        }
        if (keep != NULL && keep[p]) {
            kept++;
        } else if (brim_store_partition_items(node->store, p) > 0) {
            keys += brim_store_drop_partition(node->store, p);
            dropped++;
        } else {
            brim_store_drop_partition(node->store, p);  /* an empty table */
        }
    }
    brim_free(keep);
    brim_log_info("epoch %" PRIu64 " committed: this node owns %u of %u "
                  "partitions; streaming %u it lost, dropped %u (%zu keys)",
                  epoch, brim_node_owned(node), cl->committed.map.npartitions,
                  kept, dropped, keys);
    return 0;
}

void
brim_node_abort(struct brim_node *node, uint64_t epoch)
{
    if (node->cl.has_pending && node->cl.pending.map.epoch == epoch) {
        brim_topo_destroy(&node->cl.pending);
        node->cl.has_pending = 0;
        node->cl.self_pending = -1;
        brim_log_info("epoch %" PRIu64 " aborted", epoch);
    }
}

void
brim_node_epoch_seen(struct brim_node *node, uint64_t req_epoch)
{
    if (!node->cfg.standalone && req_epoch != 0 && node->cl.has_pending
        && req_epoch == node->cl.pending.map.epoch)
    {
        brim_log_info("a request carries pending epoch %" PRIu64
                      ": committing it", req_epoch);
        brim_node_commit(node, req_epoch);
    }
}

int
brim_node_route(struct brim_node *node, uint64_t req_epoch,
                uint64_t key_hash, struct brim_rep *rep)
{
    const struct brim_node_cluster *cl = &node->cl;
    const struct brim_topo         *c = &cl->committed;
    uint32_t                        p;
    uint16_t                        owner;

    if (node->cfg.standalone) {
        return 0;
    }
    rep->epoch = c->map.epoch;
    if (cl->fenced || c->map.epoch == 0 || req_epoch > epoch_known(node)) {
        if (req_epoch > epoch_known(node) && !cl->fenced) {
            /* A client knows a newer epoch than we do: ask for it (at
             * most one fetch in flight, see brim_node_coord_fetch). */
            brim_node_coord_fetch(node);
        }
        return BRIM_ERETRY;
    }
    p = brim_partition_of(key_hash, c->map.npartitions);
    owner = c->map.owner[p];
    if (cl->self < 0 || owner != (uint16_t) cl->self) {
        if (owner < c->nmembers) {
            rep->owner = c->members[owner].addr;
            rep->owner_len = strlen(c->members[owner].addr);
        }
        return BRIM_EMOVED;
    }
    if (cl->has_pending
        && (cl->self_pending < 0
            || cl->pending.map.owner[p] != (uint16_t) cl->self_pending))
    {
        return BRIM_ERETRY;         /* handing it over (acknowledged) */
    }
    if (!brim_node_lease_fresh(node)) {
        return BRIM_ERETRY;         /* no lease: it may have been replaced */
    }
    /* Owned now: served, whatever older epoch the request carries (I08). */
    return 0;
}

void
brim_node_cluster_destroy(struct brim_node *node)
{
    brim_topo_destroy(&node->cl.committed);
    brim_topo_destroy(&node->cl.pending);
    node->cl.has_pending = 0;
}
