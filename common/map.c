/*
 * common/map.c - the partition map of one epoch and the diff of two maps:
 * the migration plan of a membership change, each move labelled arc or cap
 * (DESIGN.md section 4). Placement itself is in placement.c.
 */
#include "common/map.h"

#include <inttypes.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "common/placement.h"

int
brim_map_init(struct brim_map *map, uint32_t npartitions, uint64_t epoch)
{
    uint32_t i;

    memset(map, 0, sizeof(*map));
    map->owner =
        brim_malloc((size_t) BRIM_MAX(npartitions, 1) * sizeof(*map->owner));
    if (map->owner == NULL) {
        return BRIM_ENOMEM;
    }
    for (i = 0; i < npartitions; i++) {
        map->owner[i] = BRIM_NODE_NONE;
    }
    map->npartitions = npartitions;
    map->epoch = epoch;
    return 0;
}

void
brim_map_destroy(struct brim_map *map)
{
    brim_free(map->owner);
    memset(map, 0, sizeof(*map));
}

void
brim_map_positions(uint64_t seed, uint32_t npartitions, uint64_t *pos)
{
    uint32_t i;

    for (i = 0; i < npartitions; i++) {
        pos[i] = brim_hash_partition_pos(seed, i);
    }
}

size_t
brim_map_counts(const struct brim_map *map, const struct brim_ring *ring,
                uint64_t *count)
{
    uint32_t i;
    size_t   unowned = 0;

    for (i = 0; i < ring->nnodes; i++) {
        count[i] = 0;
    }
    for (i = 0; i < map->npartitions; i++) {
        if (map->owner[i] < ring->nnodes) {
            count[map->owner[i]]++;
        } else {
            unowned++;
        }
    }
    return unowned;
}

size_t
brim_map_displaced(const struct brim_map *map, const struct brim_ring *ring,
                   const uint64_t *pos)
{
    uint32_t i;
    size_t   displaced = 0;

    if (ring->ntokens == 0) {
        return 0;
    }
    for (i = 0; i < map->npartitions; i++) {
        if (map->owner[i] != brim_ring_owner(ring, pos[i])) {
            displaced++;
        }
    }
    return displaced;
}

int
brim_map_diff(const struct brim_map *old, const struct brim_ring *old_ring,
              const struct brim_map *new, const struct brim_ring *new_ring,
              const uint64_t *pos, struct brim_move **moves, size_t *nmoves,
              char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_move *out = NULL;
    uint16_t         *trans;
    uint16_t          from, to;
    uint32_t          i;
    size_t            n = 0, k = 0;

    if (old->npartitions != new->npartitions) {
        brim_errfmt(errbuf,
                    "map: cannot diff maps of %" PRIu32 " and %" PRIu32
                    " partitions",
                    old->npartitions, new->npartitions);
        return BRIM_EINVAL;
    }
    trans = brim_malloc(BRIM_MAX(old_ring->nnodes, 1) * sizeof(*trans));
    if (trans == NULL) {
        goto nomem;
    }
    brim_ring_translate(old_ring, new_ring, trans);

    /* Two passes: count, then fill an array of exactly that size. */
    for (i = 0; i < old->npartitions; i++) {
        from = old->owner[i];
        to = from < old_ring->nnodes ? trans[from] : BRIM_NODE_NONE;
        n += to != new->owner[i];
    }
    if (n > 0) {
        out = brim_malloc(n * sizeof(*out));
        if (out == NULL) {
            brim_free(trans);
            goto nomem;
        }
    }
    for (i = 0; i < old->npartitions && k < n; i++) {
        from = old->owner[i];
        to = from < old_ring->nnodes ? trans[from] : BRIM_NODE_NONE;
        if (to == new->owner[i]) {
            continue;
        }
        out[k].partition = i;
        out[k].from = from < old_ring->nnodes ? from : BRIM_NODE_NONE;
        out[k].to = new->owner[i];
        out[k].reason = (uint8_t) brim_move_reason_of(old_ring, from, new_ring,
                                                      new->owner[i], pos[i]);
        k++;
    }
    brim_free(trans);
    *moves = out;
    *nmoves = n;
    return 0;

nomem:
    brim_errfmt(errbuf, "map: out of memory diffing %" PRIu32 " partitions",
                old->npartitions);
    return BRIM_ENOMEM;
}
