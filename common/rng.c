/*
 * common/rng.c - xoshiro256** seeded by SplitMix64, and Lemire's unbiased
 * bounded draw. Algorithms as published (see rng.h); code written for brim.
 */
#include "common/rng.h"

static inline uint64_t
rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t
brim_splitmix64(uint64_t *state)
{
    uint64_t z;

    *state += 0x9e3779b97f4a7c15ull;
    z = *state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void
brim_rng_seed(struct brim_rng *rng, uint64_t seed)
{
    uint64_t st = seed;
    int      i;

    for (i = 0; i < 4; i++) {
        rng->s[i] = brim_splitmix64(&st);
    }
}

uint64_t
brim_rng_next(struct brim_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t  result, t;

    result = rotl64(s[1] * 5, 7) * 9;
    t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

uint64_t
brim_rng_below(struct brim_rng *rng, uint64_t bound)
{
    unsigned __int128 m;
    uint64_t          lo, threshold;

    /* Multiply-shift; reject the few low products that would bias it. */
    m = (unsigned __int128) brim_rng_next(rng) * bound;
    lo = (uint64_t) m;
    if (lo < bound) {
        threshold = (0 - bound) % bound;
        while (lo < threshold) {
            m = (unsigned __int128) brim_rng_next(rng) * bound;
            lo = (uint64_t) m;
        }
    }
    return (uint64_t) (m >> 64);
}
