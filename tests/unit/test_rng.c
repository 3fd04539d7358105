/*
 * tests/unit/test_rng.c - common/rng.c against the published algorithms,
 * written again here from the papers: SplitMix64 (Steele, Lea, Flood 2014),
 * xoshiro256** (Blackman, Vigna 2021) and Lemire's bounded draw (2019).
 * brim-sim figures are reproduced from a seed, so the stream is pinned.
 */
#include "tests/support/check_main.h"

#include <stdint.h>

#include "common/rng.h"

static uint64_t
ref_splitmix64(uint64_t *x)
{
    uint64_t z;

    *x += 0x9e3779b97f4a7c15ull;
    z = *x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t
ref_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t
ref_xoshiro(uint64_t s[4])
{
    uint64_t result, t;

    result = ref_rotl(s[1] * 5, 7) * 9;
    t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = ref_rotl(s[3], 45);
    return result;
}

/* Lemire's nearly divisionless draw over the reference stream. */
static uint64_t
ref_below(uint64_t s[4], uint64_t bound)
{
    unsigned __int128 m;
    uint64_t          l, t;

    m = (unsigned __int128) ref_xoshiro(s) * bound;
    l = (uint64_t) m;
    if (l < bound) {
        t = (0 - bound) % bound;
        while (l < t) {
            m = (unsigned __int128) ref_xoshiro(s) * bound;
            l = (uint64_t) m;
        }
    }
    return (uint64_t) (m >> 64);
}

static void
ref_seed(uint64_t s[4], uint64_t seed)
{
    int i;

    for (i = 0; i < 4; i++) {
        s[i] = ref_splitmix64(&seed);
    }
}

START_TEST(rng_splitmix64_golden)
{
    uint64_t a, b;
    int      i;

    /* The reference implementation's first output from state 0. */
    a = 0;
    ck_assert_uint_eq(brim_splitmix64(&a), 0xe220a8397b1dcdafull);
    ck_assert_uint_eq(a, 0x9e3779b97f4a7c15ull);

    a = 0x123456789ull;
    b = a;
    for (i = 0; i < 1000; i++) {
        ck_assert_uint_eq(brim_splitmix64(&a), ref_splitmix64(&b));
        ck_assert_uint_eq(a, b);
    }
}
END_TEST

START_TEST(rng_xoshiro_stream)
{
    static const uint64_t seeds[] = {0, 1, 42, UINT64_MAX};
    struct brim_rng       rng;
    uint64_t              ref[4];
    size_t                k;
    int                   i;

    for (k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
        brim_rng_seed(&rng, seeds[k]);
        ref_seed(ref, seeds[k]);
        for (i = 0; i < 4; i++) {
            ck_assert_uint_eq(rng.s[i], ref[i]);
        }
        ck_assert(rng.s[0] != 0 || rng.s[1] != 0 || rng.s[2] != 0
                  || rng.s[3] != 0);
        for (i = 0; i < 10000; i++) {
            ck_assert_uint_eq(brim_rng_next(&rng), ref_xoshiro(ref));
        }
    }
}
END_TEST

START_TEST(rng_same_seed_same_stream)
{
    struct brim_rng a, b, c;
    int             i, same;

    brim_rng_seed(&a, 777);
    brim_rng_seed(&b, 777);
    brim_rng_seed(&c, 778);
    same = 0;
    for (i = 0; i < 1000; i++) {
        uint64_t x = brim_rng_next(&a);

        ck_assert_uint_eq(x, brim_rng_next(&b));
        same += x == brim_rng_next(&c);
    }
    ck_assert_int_eq(same, 0);
}
END_TEST

START_TEST(rng_below_bounds)
{
    static const uint64_t bounds[] = {
        1, 2, 3, 7, 10, 1000, 1ull << 32, (1ull << 63) + 1, UINT64_MAX,
    };
    struct brim_rng rng;
    uint64_t        ref[4], v;
    size_t          k;
    int             i;

    brim_rng_seed(&rng, 2024);
    ref_seed(ref, 2024);
    for (k = 0; k < sizeof(bounds) / sizeof(bounds[0]); k++) {
        for (i = 0; i < 2000; i++) {
            v = brim_rng_below(&rng, bounds[k]);
            ck_assert_uint_lt(v, bounds[k]);
            /* Same algorithm, same stream: sims reproduce everywhere. */
            ck_assert_uint_eq(v, ref_below(ref, bounds[k]));
        }
    }
}
END_TEST

START_TEST(rng_below_uniform)
{
    struct brim_rng rng;
    unsigned        count[10] = {0};
    int             i;

    brim_rng_seed(&rng, 5);
    for (i = 0; i < 100000; i++) {
        count[brim_rng_below(&rng, 10)]++;
    }
    /* Each bucket expects 10000 with a standard deviation of 95. */
    for (i = 0; i < 10; i++) {
        ck_assert_msg(count[i] > 9500 && count[i] < 10500,
                      "bucket %d holds %u of 100000", i, count[i]);
    }
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s;
    TCase *tc;

    s = suite_create("rng");

    tc = tcase_create("splitmix64_golden");
    tcase_add_test(tc, rng_splitmix64_golden);
    suite_add_tcase(s, tc);

    tc = tcase_create("xoshiro_stream");
    tcase_add_test(tc, rng_xoshiro_stream);
    suite_add_tcase(s, tc);

    tc = tcase_create("same_seed_same_stream");
    tcase_add_test(tc, rng_same_seed_same_stream);
    suite_add_tcase(s, tc);

    tc = tcase_create("below_bounds");
    tcase_add_test(tc, rng_below_bounds);
    suite_add_tcase(s, tc);

    tc = tcase_create("below_uniform");
    tcase_add_test(tc, rng_below_uniform);
    suite_add_tcase(s, tc);

    return s;
}
