/*
 * common/rng.h - the seeded pseudo-random generator behind every random draw
 * in brim-sim and the property tests: xoshiro256** (Blackman and Vigna,
 * "Scrambled linear pseudorandom number generators", ACM TOMS 2021), seeded
 * through SplitMix64 (Steele, Lea, Flood, OOPSLA 2014). The same seed gives
 * the same stream on every machine, so every figure can be reproduced from
 * its command line. Not for secrets.
 */
#ifndef BRIM_COMMON_RNG_H
#define BRIM_COMMON_RNG_H

#include <stdint.h>

/* Generator state; embed it and seed it with brim_rng_seed(). */
struct brim_rng {
    uint64_t s[4]; /* xoshiro256** state, never all zero */
};

/*
 * Seed RNG from the 64-bit SEED: the four state words are four successive
 * SplitMix64 outputs of SEED, which is never all zero.
 */
void brim_rng_seed(struct brim_rng *rng, uint64_t seed);

/* The next uniform 64-bit value of RNG's stream. */
uint64_t brim_rng_next(struct brim_rng *rng);

/*
 * A uniform integer in [0, BOUND) for BOUND > 0, without modulo bias
 * (Lemire, "Fast random integer generation in an interval", ACM TOMACS 2019).
 */
uint64_t brim_rng_below(struct brim_rng *rng, uint64_t bound);

/* One SplitMix64 step: mixes *STATE forward and returns the output. Useful
 * to derive independent seeds from a tuple of parameters. */
uint64_t brim_splitmix64(uint64_t *state);

#endif /* BRIM_COMMON_RNG_H */
