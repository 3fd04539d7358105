/*
 * server/node/epoch.c - a node's epochs in cluster mode (PROTOCOL.md 10.4,
 * DESIGN.md 7 steps 1-2): the committed topology it serves by, at most one
 * pending one, and the routing decision of every data op: serve, MOVED or
 * RETRY. Holding state only: what a commit sets off (streams, drops) is
 * change.c's. No I/O here.
 */
#include "server/node/epoch.h"

#include <inttypes.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "server/log.h"
#include "server/node/lease.h"

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
    if (node->cfg.standalone || node->topo.committed.map.epoch == 0) {
        return node->cfg.seed;
    }
    return node->topo.committed.seed;
}

uint64_t
brim_node_key_hash(const void *key, size_t key_len, void *node)
{
    return brim_hash_key(brim_node_seed(node), key, key_len);
}

uint32_t
brim_node_owned(const struct brim_node *node)
{
    const struct brim_map *m = &node->topo.committed.map;
    uint32_t               p, n = 0;

    if (node->cfg.standalone) {
        return node->cfg.partitions;
    }
    for (p = 0; m->epoch != 0 && node->topo.self >= 0 && p < m->npartitions;
         p++) {
        n += m->owner[p] == (uint16_t) node->topo.self;
    }
    return n;
}

uint64_t
brim_node_epoch_known(const struct brim_node *node)
{
    return node->topo.has_pending ? node->topo.pending.map.epoch
                                  : node->topo.committed.map.epoch;
}

/*
 * Decode T and check it against the node: same cluster (once one is
 * known), same P as the store, newer than the committed epoch. On success
 * *OUT holds it (the caller owns it).
 */
/*
 * The cluster has P partitions and this node another count: a node that
 * was not given --partitions takes the cluster's, while it is still
 * empty and has seen no topology (its store is made again for P); one
 * given --partitions explicitly refuses a cluster of another P. Returns
 * 0, or -1 with ERRBUF saying why.
 */
static int
epoch_take_partitions(struct brim_node *node, uint32_t p,
                      char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_store_config sc = node->store_cfg;
    struct brim_store_stats  ss;
    struct brim_store       *store;

    brim_store_get_stats(node->store, &ss);
    if (node->cfg.partitions_set) {
        brim_errfmt(errbuf,
                    "epoch: the cluster has %u partitions, this node "
                    "was started with --partitions %u (leave it out to take "
                    "the cluster's)",
                    p, node->cfg.partitions);
        return -1;
    }
    if (node->topo.committed.map.epoch != 0 || node->topo.has_pending
        || ss.items != 0 || node->mig != NULL)
    {
        brim_errfmt(errbuf,
                    "epoch: the cluster has %u partitions, this node "
                    "%u, and it holds data already: restart it",
                    p, node->cfg.partitions);
        return -1;
    }
    if (4 * brim_store_fixed_bytes(p) > sc.mem_limit_bytes) {
        brim_errfmt(errbuf,
                    "epoch: the cluster's %u partitions need more "
                    "than this node's --memory-mb %u for their table alone",
                    p, node->cfg.memory_mb);
        return -1;
    }
    sc.npartitions = p;
    store = brim_store_new(&sc);
    if (store == NULL) {
        brim_errfmt(errbuf,
                    "epoch: out of memory making a store of %u "
                    "partitions",
                    p);
        return -1;
    }
    brim_store_free(node->store);
    node->store = store;
    node->store_cfg = sc;
    brim_log_info("the cluster has %u partitions: this node takes them "
                  "(it was not given --partitions)",
                  p);
    node->cfg.partitions = p;
    return 0;
}

int
brim_node_topo_decode(struct brim_node *node, const msgpack_object *t,
                      struct brim_topo *out, char errbuf[BRIM_ERRBUF_LEN])
{
    int rc;

    rc = brim_topo_decode(t, out, errbuf);
    if (rc != 0) {
        return rc;
    }
    if (node->cluster_id != 0 && out->cluster_id != node->cluster_id) {
        brim_errfmt(errbuf,
                    "epoch: topology of cluster %016" PRIx64
                    ", this node is in cluster %016" PRIx64,
                    out->cluster_id, node->cluster_id);
        rc = BRIM_EDENIED;
    } else if (out->map.npartitions != node->cfg.partitions
               && epoch_take_partitions(node, out->map.npartitions, errbuf)
                   != 0)
    {
        rc = BRIM_EBADREQ;
    } else if (out->map.epoch == 0
               || out->map.epoch <= node->topo.committed.map.epoch)
    {
        brim_errfmt(errbuf,
                    "epoch: %" PRIu64 " is not newer than the "
                    "committed epoch %" PRIu64,
                    out->map.epoch, node->topo.committed.map.epoch);
        rc = BRIM_EEXISTS;
    } else if (node->topo.committed.map.epoch != 0
               && out->seed != node->topo.committed.seed)
    {
        brim_errfmt(errbuf, "epoch: topology changes the cluster seed");
        rc = BRIM_EBADREQ;
    }
    if (rc != 0) {
        brim_topo_destroy(out);
    }
    return rc;
}

void
brim_node_topo_set_pending(struct brim_node *node, struct brim_topo *topo)
{
    if (node->topo.has_pending) {
        brim_topo_destroy(&node->topo.pending);
    }
    node->topo.pending = *topo;
    node->topo.has_pending = 1;
    node->topo.self_pending = epoch_self(node, topo);
    node->cluster_id = topo->cluster_id;
}

int
brim_node_propose(struct brim_node *node, const msgpack_object *t,
                  char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_topo topo;
    int              rc;

    rc = brim_node_topo_decode(node, t, &topo, errbuf);
    if (rc != 0) {
        return rc;
    }
    if (topo.map.epoch <= node->topo.epoch_seen
        && !(node->topo.has_pending
             && node->topo.pending.map.epoch == topo.map.epoch))
    {
        /* An epoch number is used once (PROTOCOL.md 10.6): one seen
         * aborted or superseded never comes back, whoever sends it. */
        brim_errfmt(errbuf,
                    "epoch: %" PRIu64 " is not above epoch %" PRIu64
                    " this node has seen proposed, committed or aborted",
                    topo.map.epoch, node->topo.epoch_seen);
        brim_topo_destroy(&topo);
        return BRIM_EEXISTS;
    }
    if (node->topo.has_pending && node->topo.pending.map.epoch > topo.map.epoch)
    {
        /* A node keeps the highest pending epoch (DESIGN.md 7, step 1). */
        brim_errfmt(errbuf,
                    "epoch: %" PRIu64 " is older than the pending "
                    "epoch %" PRIu64,
                    topo.map.epoch, node->topo.pending.map.epoch);
        brim_topo_destroy(&topo);
        return BRIM_EEXISTS;
    }
    brim_node_topo_set_pending(node, &topo);
    node->topo.epoch_seen = BRIM_MAX(node->topo.epoch_seen, topo.map.epoch);
    brim_log_info("epoch %" PRIu64 " pending (committed %" PRIu64 "): %u "
                  "members, this node %s",
                  topo.map.epoch, node->topo.committed.map.epoch, topo.nmembers,
                  node->topo.self_pending >= 0 ? "a member" : "not a member");
    return 0;
}

int
brim_node_topo_commit(struct brim_node *node, uint64_t epoch,
                      struct brim_topo *old, int32_t *old_self)
{
    struct brim_node_topo *t = &node->topo;

    if (!t->has_pending || t->pending.map.epoch != epoch) {
        return epoch != 0 && epoch == t->committed.map.epoch ? 1
                                                             : BRIM_ENOTFOUND;
    }
    BRIM_ASSERT(t->pending.map.epoch > t->committed.map.epoch);
    *old = t->committed;
    *old_self = t->self;
    t->committed = t->pending;
    t->self = t->self_pending;
    t->was_member |= t->self >= 0;
    t->epoch_seen = BRIM_MAX(t->epoch_seen, epoch);
    memset(&t->pending, 0, sizeof(t->pending));
    t->has_pending = 0;
    t->self_pending = -1;
    return 0;
}

int
brim_node_term_check(struct brim_node *node, uint64_t term, const char *from,
                     char errbuf[BRIM_ERRBUF_LEN])
{
    if (term < node->topo.term) {
        brim_errfmt(errbuf,
                    "term %" PRIu64 " is older than term %" PRIu64
                    " this node has seen",
                    term, node->topo.term);
        return BRIM_ESTALETERM;
    }
    if (term > node->topo.term) {
        brim_log_info("coordinator %s leads in term %" PRIu64 " (was %" PRIu64
                      ")",
                      from, term, node->topo.term);
        node->topo.term = term;
    }
    return 0;
}

void
brim_node_abort(struct brim_node *node, uint64_t epoch)
{
    /* Aborted, the number is spent even when it was never pending here. */
    node->topo.epoch_seen = BRIM_MAX(node->topo.epoch_seen, epoch);
    if (node->topo.has_pending && node->topo.pending.map.epoch == epoch) {
        brim_topo_destroy(&node->topo.pending);
        node->topo.has_pending = 0;
        node->topo.self_pending = -1;
        brim_log_info("epoch %" PRIu64 " aborted", epoch);
    }
}

int
brim_node_route(struct brim_node *node, uint64_t req_epoch, uint64_t key_hash,
                struct brim_rep *rep, int *newer)
{
    const struct brim_node_topo *t = &node->topo;
    const struct brim_topo      *c = &t->committed;
    uint32_t                     p;
    uint16_t                     owner;

    *newer = 0;
    if (node->cfg.standalone) {
        return 0;
    }
    rep->epoch = c->map.epoch;
    if (t->fenced || c->map.epoch == 0
        || req_epoch > brim_node_epoch_known(node)) {
        /* A client knows a newer epoch than we do: the caller asks the
         * coordinator for it. */
        *newer = req_epoch > brim_node_epoch_known(node) && !t->fenced;
        return BRIM_ERETRY;
    }
    p = brim_partition_of(key_hash, c->map.npartitions);
    owner = c->map.owner[p];
    if (t->self < 0 || owner != (uint16_t) t->self) {
        if (owner < c->nmembers) {
            rep->owner = c->members[owner].addr;
            rep->owner_len = strlen(c->members[owner].addr);
        }
        return BRIM_EMOVED;
    }
    if (t->has_pending
        && (t->self_pending < 0
            || t->pending.map.owner[p] != (uint16_t) t->self_pending))
    {
        return BRIM_ERETRY; /* handing it over (acknowledged) */
    }
    if (!brim_node_lease_fresh(node)) {
        return BRIM_ERETRY; /* no lease: it may have been replaced */
    }
    /* Owned now: served, whatever older epoch the request carries (I08). */
    return 0;
}

void
brim_node_topo_destroy(struct brim_node *node)
{
    brim_topo_destroy(&node->topo.committed);
    brim_topo_destroy(&node->topo.pending);
    node->topo.has_pending = 0;
}
