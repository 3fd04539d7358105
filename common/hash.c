/*
 * common/hash.c - XXH3-64 hashing of keys, partition positions and tokens.
 * The three uses hash under three different seeds derived from the cluster
 * seed, so a key, a partition index and a token never share a hash stream.
 */
#include "common/hash.h"

#include <string.h>

#include <xxhash.h>

#include "common/defs.h"

/* Seed offsets for the derived streams (arbitrary odd constants). */
#define HASH_PARTITION_TWEAK 0x9e3779b97f4a7c15ull
#define HASH_TOKEN_TWEAK 0xc2b2ae3d27d4eb4full

/* Token input: le32 length, the name (at most this long), le32 index. */
#define HASH_TOKEN_NAME_MAX 255

static void
put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char) v;
    p[1] = (unsigned char) (v >> 8);
    p[2] = (unsigned char) (v >> 16);
    p[3] = (unsigned char) (v >> 24);
}

/* A seed for one derived stream: XXH3 of the tweak under the cluster seed,
 * so nearby cluster seeds still give unrelated derived seeds. */
static uint64_t
hash_derive_seed(uint64_t seed, uint64_t tweak)
{
    unsigned char b[8];
    int           i;

    for (i = 0; i < 8; i++) {
        b[i] = (unsigned char) (tweak >> (8 * i));
    }
    return XXH3_64bits_withSeed(b, sizeof(b), seed);
}

uint64_t
brim_hash_key(uint64_t seed, const void *key, size_t key_len)
{
    return XXH3_64bits_withSeed(key, key_len, seed);
}

uint64_t
brim_hash_partition_pos(uint64_t seed, uint32_t index)
{
    unsigned char b[4];

    put_le32(b, index);
    return XXH3_64bits_withSeed(b, sizeof(b),
                                hash_derive_seed(seed, HASH_PARTITION_TWEAK));
}

uint64_t
brim_hash_token(uint64_t seed, const char *name, size_t name_len,
                uint32_t token)
{
    unsigned char b[4 + HASH_TOKEN_NAME_MAX + 4];

    BRIM_ASSERT(name_len <= HASH_TOKEN_NAME_MAX); /* ring checks names */

    put_le32(b, (uint32_t) name_len);
    memcpy(b + 4, name, name_len);
    put_le32(b + 4 + name_len, token);
    return XXH3_64bits_withSeed(b, 8 + name_len,
                                hash_derive_seed(seed, HASH_TOKEN_TWEAK));
}
