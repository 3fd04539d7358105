/*
 * tests/unit/test_bench_hist.c - brim-bench's log-linear histogram
 * (client/bench/hist.c): bucket layout, relative error, percentiles by
 * HdrHistogram's rule, merging.
 */
#include "tests/support/check_main.h"

#include <stdint.h>

#include "client/bench/hist.h"

static struct brim_bench_hist h, h2;

static void
setup(void)
{
    brim_bench_hist_reset(&h);
    brim_bench_hist_reset(&h2);
}

START_TEST(hist_small_values_exact)
{
    uint64_t v;

    for (v = 0; v < 2 * BRIM_BENCH_HIST_SUB; v++) {
        ck_assert_uint_eq(brim_bench_hist_index(v), v);
        ck_assert_uint_eq(brim_bench_hist_lowest((uint32_t) v), v);
        ck_assert_uint_eq(brim_bench_hist_highest((uint32_t) v), v);
    }
}
END_TEST

START_TEST(hist_buckets_tile_the_range)
{
    uint32_t i;

    /* Every bucket starts right after the previous one ends, up to the
     * top of uint64_t. */
    for (i = 1; i < BRIM_BENCH_HIST_LEN; i++) {
        ck_assert_uint_eq(brim_bench_hist_lowest(i),
                          brim_bench_hist_highest(i - 1) + 1);
        ck_assert_uint_eq(brim_bench_hist_index(brim_bench_hist_lowest(i)), i);
        ck_assert_uint_eq(brim_bench_hist_index(brim_bench_hist_highest(i)), i);
    }
    ck_assert_uint_eq(brim_bench_hist_highest(BRIM_BENCH_HIST_LEN - 1),
                      UINT64_MAX);
    ck_assert_uint_eq(brim_bench_hist_index(UINT64_MAX),
                      BRIM_BENCH_HIST_LEN - 1);
}
END_TEST

START_TEST(hist_relative_error_bound)
{
    uint64_t v, lo, hi;
    uint32_t i;

    for (v = 1; v < ((uint64_t) 1 << 62); v = v * 3 + 1) {
        i = brim_bench_hist_index(v);
        lo = brim_bench_hist_lowest(i);
        hi = brim_bench_hist_highest(i);
        ck_assert(lo <= v && v <= hi);
        /* Width at most 1/128 of the bucket's start. */
        ck_assert_uint_le(hi - lo, lo / BRIM_BENCH_HIST_SUB);
    }
}
END_TEST

START_TEST(hist_percentiles)
{
    uint64_t v;

    for (v = 1; v <= 1000; v++) {
        brim_bench_hist_record(&h, v * 1000);
    }
    ck_assert_uint_eq(h.count, 1000);
    ck_assert_uint_eq(h.min, 1000);
    ck_assert_uint_eq(h.max, 1000000);
    /* The 500th value is 500000: its bucket's highest value is within
     * 1/128 above it. */
    v = brim_bench_hist_percentile(&h, 50);
    ck_assert_uint_ge(v, 500000);
    ck_assert_uint_le(v, 500000 + 500000 / 128);
    v = brim_bench_hist_percentile(&h, 99.9);
    ck_assert_uint_ge(v, 999000);
    ck_assert_uint_le(v, 999000 + 999000 / 128);
    /* The top is capped at the largest value recorded. */
    ck_assert_uint_eq(brim_bench_hist_percentile(&h, 100), 1000000);
    ck_assert(brim_bench_hist_mean(&h) > 500499.0
              && brim_bench_hist_mean(&h) < 500501.0);
}
END_TEST

START_TEST(hist_empty)
{
    ck_assert_uint_eq(brim_bench_hist_percentile(&h, 99), 0);
    ck_assert(brim_bench_hist_mean(&h) == 0.0);
}
END_TEST

START_TEST(hist_merge_adds)
{
    brim_bench_hist_record(&h, 10);
    brim_bench_hist_record(&h2, 5);
    brim_bench_hist_record(&h2, 100000);
    brim_bench_hist_merge(&h, &h2);
    ck_assert_uint_eq(h.count, 3);
    ck_assert_uint_eq(h.min, 5);
    ck_assert_uint_eq(h.max, 100000);
    ck_assert_uint_eq(brim_bench_hist_percentile(&h, 33), 5);
    ck_assert_uint_eq(brim_bench_hist_percentile(&h, 50), 10);
}
END_TEST

/* Add TC, holding the one test TEST, to S. The names are read from the
 * tcase_create("...") calls by tests/CMakeLists.txt. */
static void
add_case(Suite *s, TCase *tc, const TTest *test)
{
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test);
    suite_add_tcase(s, tc);
}

Suite *
brim_test_suite(void)
{
    Suite *s;

    s = suite_create("bench_hist");
    add_case(s, tcase_create("small_values_exact"), hist_small_values_exact);
    add_case(s, tcase_create("buckets_tile_the_range"),
             hist_buckets_tile_the_range);
    add_case(s, tcase_create("relative_error_bound"),
             hist_relative_error_bound);
    add_case(s, tcase_create("percentiles"), hist_percentiles);
    add_case(s, tcase_create("empty"), hist_empty);
    add_case(s, tcase_create("merge_adds"), hist_merge_adds);
    return s;
}
