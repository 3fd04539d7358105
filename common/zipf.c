/*
 * common/zipf.c - Zipf sampling after Gray et al., SIGMOD 1994 (see zipf.h).
 */
#include "common/zipf.h"

#include <math.h>

int
brim_zipf_init(struct brim_zipf *z, uint64_t n, double s)
{
    double   zeta2;
    uint64_t k;

    if (n < 2 || !(s > 0.0)) {
        return -1;
    }
    if (fabs(s - 1.0) < 1e-9) {
        s = 0.9999;
    }
    z->n = n;
    z->s = s;
    z->zetan = 0.0;
    for (k = 1; k <= n; k++) {
        z->zetan += 1.0 / pow((double) k, s);
    }
    zeta2 = 1.0 + 1.0 / pow(2.0, s);
    z->alpha = 1.0 / (1.0 - s);
    z->eta = (1.0 - pow(2.0 / (double) n, 1.0 - s)) / (1.0 - zeta2 / z->zetan);
    z->half_pow = 1.0 + pow(0.5, s);
    return 0;
}

uint64_t
brim_zipf_next(const struct brim_zipf *z, struct brim_rng *rng)
{
    double   u, uz;
    uint64_t k;

    /* u uniform in [0, 1) from the top 53 bits. */
    u = (double) (brim_rng_next(rng) >> 11) * (1.0 / 9007199254740992.0);
    uz = u * z->zetan;
    if (uz < 1.0) {
        return 0;
    }
    if (uz < z->half_pow) {
        return 1;
    }
    k = (uint64_t) ((double) z->n * pow(z->eta * u - z->eta + 1.0, z->alpha));
    return k >= z->n ? z->n - 1 : k;
}
