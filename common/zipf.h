/*
 * common/zipf.h - Zipf-distributed ranks for load generators and the
 * eviction benchmark: rank k in [0, N) drawn with probability proportional
 * to 1/(k+1)^S, by the method of Gray et al., "Quickly Generating
 * Billion-Record Synthetic Databases", SIGMOD 1994 (the one YCSB uses).
 * Setup costs O(N) to sum the zeta constant; each draw is O(1).
 */
#ifndef BRIM_COMMON_ZIPF_H
#define BRIM_COMMON_ZIPF_H

#include <stdint.h>

#include "common/rng.h"

/* A Zipf sampler over N ranks with exponent S (0 < S, S != 1). */
struct brim_zipf {
    uint64_t n;        /* ranks */
    double   s;        /* exponent (theta) */
    double   alpha;    /* 1 / (1 - s) */
    double   zetan;    /* sum of 1/k^s, k = 1..n */
    double   eta;      /* Gray et al.'s eta */
    double   half_pow; /* 1 + 0.5^s */
};

/*
 * Prepare Z for N ranks (N >= 2) and exponent S (0 < S < 1 or S > 1;
 * S = 1 is nudged to 0.9999 since the method divides by 1 - S).
 * Returns 0 or -1 for bad arguments.
 */
int brim_zipf_init(struct brim_zipf *z, uint64_t n, double s);

/* One rank in [0, N); rank 0 is the most popular. Uses RNG. */
uint64_t brim_zipf_next(const struct brim_zipf *z, struct brim_rng *rng);

#endif /* BRIM_COMMON_ZIPF_H */
