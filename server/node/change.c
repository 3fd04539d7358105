/*
 * server/node/change.c - an epoch's commit at a cluster node (change.h):
 * the topology swap (epoch.c), then migration's part (migrate.c: what
 * streams out, what comes in), then the drop of what the node no longer
 * holds. A partition lost to a live member stays until it is streamed; a
 * partition lost otherwise is dropped now, so that a later map that gives
 * it back starts it empty rather than with stale values.
 */
#include "server/node/change.h"

#include <inttypes.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "server/log.h"
#include "server/node/epoch.h"
#include "server/node/migrate.h"

int
brim_node_commit(struct brim_node *node, uint64_t epoch)
{
    struct brim_node_topo *t = &node->topo;
    struct brim_topo       old;
    uint8_t               *keep;
    uint32_t               p, dropped = 0, kept = 0;
    size_t                 keys = 0;
    int32_t                old_self;
    uint16_t               self;
    int                    rc;

    /* Taken before the swap: a commit must not fail half done, and the
     * map of which partitions stay is a few bytes per partition of
     * control state (STYLE.md 5: panic on control-plane OOM). */
    keep = brim_calloc(node->cfg.partitions, 1);
    if (keep == NULL) {
        BRIM_PANIC("epoch: out of memory committing an epoch");
    }
    rc = brim_node_topo_commit(node, epoch, &old, &old_self);
    if (rc != 0) {
        brim_free(keep);
        return rc == 1 ? 0 : rc;
    }
    brim_migrate_commit(node, &old, old_self, keep);
    brim_links_forget_gone(&node->links, &t->committed);
    brim_topo_destroy(&old);
    self = t->self >= 0 ? (uint16_t) t->self : BRIM_NODE_NONE;
    for (p = 0; p < t->committed.map.npartitions; p++) {
        if (t->committed.map.owner[p] == self) {
            continue;
        }
        if (keep[p]) {
            kept++;
        } else if (brim_store_partition_items(node->store, p) > 0) {
            keys += brim_store_drop_partition(node->store, p);
            dropped++;
        } else {
            brim_store_drop_partition(node->store, p); /* an empty table */
        }
    }
    brim_free(keep);
    brim_log_info("epoch %" PRIu64 " committed: this node owns %u of %u "
                  "partitions; streaming %u it lost, dropped %u (%zu keys)",
                  epoch, brim_node_owned(node), t->committed.map.npartitions,
                  kept, dropped, keys);
    return 0;
}

int
brim_node_adopt(struct brim_node *node, const msgpack_object *t,
                char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_topo topo;
    int              rc;

    rc = brim_node_topo_decode(node, t, &topo, errbuf);
    if (rc == BRIM_EEXISTS) {
        return 0; /* we already hold this one or newer */
    }
    if (rc != 0) {
        return rc;
    }
    if (node->topo.has_pending
        && node->topo.pending.map.epoch <= topo.map.epoch) {
        brim_topo_destroy(&node->topo.pending);
        node->topo.has_pending = 0;
    }
    if (node->topo.has_pending) {
        brim_topo_destroy(&topo); /* a newer one is pending: wait for it */
        return 0;
    }
    brim_node_topo_set_pending(node, &topo);
    return brim_node_commit(node, topo.map.epoch);
}

void
brim_node_epoch_seen(struct brim_node *node, uint64_t req_epoch)
{
    if (!node->cfg.standalone && req_epoch != 0 && node->topo.has_pending
        && req_epoch == node->topo.pending.map.epoch)
    {
        brim_log_info("a request carries pending epoch %" PRIu64
                      ": committing it",
                      req_epoch);
        brim_node_commit(node, req_epoch);
    }
}
