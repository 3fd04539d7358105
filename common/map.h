/*
 * common/map.h - the partition map: owner[P] (node indices of one ring) and
 * the epoch it belongs to, plus the diff of two maps, which is what a
 * membership change migrates: each moved partition with its old and new
 * owner and the reason it moved (arc or cap). Clients carry the map and
 * route a key with one hash and one array index (DESIGN.md sections 1, 4).
 */
#ifndef BRIM_COMMON_MAP_H
#define BRIM_COMMON_MAP_H

#include <stddef.h>
#include <stdint.h>

#include <brim/status.h>

#include "common/ring.h"

/* A partition map for one epoch. */
struct brim_map {
    uint64_t  epoch;       /* membership epoch, 0 = none yet */
    uint32_t  npartitions; /* P, a power of two */
    uint16_t *owner;       /* P node indices of the epoch's ring */
};

/* One partition that changes owner between two maps. */
struct brim_move {
    uint32_t partition; /* partition index */
    uint16_t from;      /* old owner, old ring index or NONE */
    uint16_t to;        /* new owner, new ring index */
    uint8_t  reason;    /* enum brim_move_reason: ARC or CAP */
};

/*
 * Initialise MAP (caller's memory) for NPARTITIONS partitions (any count
 * >= 1; the cluster uses powers of two) at EPOCH, every owner
 * BRIM_NODE_NONE. Returns 0 or BRIM_ENOMEM (MAP is then zeroed). Release
 * with brim_map_destroy().
 */
int brim_map_init(struct brim_map *map, uint32_t npartitions, uint64_t epoch);

/* Free MAP's owner array; a zeroed map is fine. */
void brim_map_destroy(struct brim_map *map);

/*
 * Fill POS (NPARTITIONS entries, caller's) with every partition's ring
 * position, brim_hash_partition_pos(SEED, i).
 */
void brim_map_positions(uint64_t seed, uint32_t npartitions, uint64_t *pos);

/*
 * Count partitions per node: COUNT[j] (RING->nnodes entries, caller's,
 * overwritten) is how many partitions MAP gives node j. Returns the number
 * of partitions with no owner (BRIM_NODE_NONE or an index >= nnodes).
 */
size_t brim_map_counts(const struct brim_map *map, const struct brim_ring *ring,
                       uint64_t *count);

/*
 * Partitions of MAP that are displaced: owned by a node other than their
 * ring owner on RING at positions POS (NPARTITIONS entries, borrowed).
 */
size_t brim_map_displaced(const struct brim_map  *map,
                          const struct brim_ring *ring, const uint64_t *pos);

/*
 * The diff of two maps of the same P: every partition whose owner changes
 * (compared by node name) from OLD (indices of OLD_RING) to NEW (indices of
 * NEW_RING), in partition order, with the reason of
 * brim_move_reason_of(). POS gives the partitions' ring positions.
 * On success *MOVES is a new array of *NMOVES entries that the caller frees
 * with brim_free() (NULL when nothing moves). Returns 0, BRIM_EINVAL (P
 * differs) or BRIM_ENOMEM, with ERRBUF (if not NULL) saying which.
 */
int brim_map_diff(const struct brim_map *old, const struct brim_ring *old_ring,
                  const struct brim_map *new, const struct brim_ring *new_ring,
                  const uint64_t *pos, struct brim_move **moves, size_t *nmoves,
                  char errbuf[BRIM_ERRBUF_LEN]);

#endif /* BRIM_COMMON_MAP_H */
