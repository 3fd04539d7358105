/*
 * common/hash.h - every hash brim places by: the key hash and its partition,
 * a partition's ring position, and a node's token positions. All are XXH3-64
 * (xxHash, Collet) under seeds derived from the cluster's 64-bit seed, so
 * every party computes the same numbers (DESIGN.md section 3).
 *
 * The derived seeds are part of the protocol, since every client, node and
 * coordinator must agree on them: for a stream with tweak T, the seed is
 * XXH3-64 of le64(T) under the cluster seed; T is 0x9e3779b97f4a7c15 for
 * partition positions and 0xc2b2ae3d27d4eb4f for tokens. Keys hash under
 * the cluster seed itself. Changing any of this changes every placement.
 */
#ifndef BRIM_COMMON_HASH_H
#define BRIM_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Smallest and largest partition counts P (powers of two). */
#define BRIM_PARTITIONS_MIN (1u << 8)
#define BRIM_PARTITIONS_MAX (1u << 20)
#define BRIM_PARTITIONS_DEFAULT (1u << 16)

/* XXH3-64 of KEY (KEY_LEN bytes, borrowed) under the cluster SEED. */
uint64_t brim_hash_key(uint64_t seed, const void *key, size_t key_len);

/*
 * The partition of a key whose hash is KEY_HASH, for PARTITIONS a power of
 * two: the low bits, KEY_HASH & (PARTITIONS - 1). Tables inside a node must
 * index by other bits (every key of a partition shares these).
 */
static inline uint32_t
brim_partition_of(uint64_t key_hash, uint32_t partitions)
{
    return (uint32_t) (key_hash & (uint64_t) (partitions - 1));
}

/*
 * The ring position of partition INDEX: XXH3-64 of le32(INDEX) under a
 * second seed derived from the cluster SEED, so partitions sit at
 * independent random positions, like the keys of the published experiments.
 */
uint64_t brim_hash_partition_pos(uint64_t seed, uint32_t index);

/*
 * The ring position of token TOKEN of node NAME (NAME_LEN bytes, borrowed):
 * XXH3-64 of le32(NAME_LEN) | NAME | le32(TOKEN) under a seed derived from
 * the cluster SEED. The length prefix makes the encoding unambiguous: node
 * "n1" token 12 and node "n11" token 2 hash different bytes.
 */
uint64_t brim_hash_token(uint64_t seed, const char *name, size_t name_len,
                         uint32_t token);

#endif /* BRIM_COMMON_HASH_H */
