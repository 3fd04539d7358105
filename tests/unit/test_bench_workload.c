/*
 * tests/unit/test_bench_workload.c - brim-bench's workload
 * (client/bench/workload.c): key text, --verify values and their parsing,
 * the op mix and the split of keys between threads.
 */
#include "tests/support/check_main.h"

#include <stdint.h>
#include <string.h>

#include "client/bench/workload.h"

START_TEST(workload_key_format)
{
    char buf[BRIM_BENCH_KEY_MAX];

    ck_assert_uint_eq(brim_bench_key_format(buf, 12345, 32), 32);
    ck_assert_mem_eq(buf, "key:0000000000000000000000012345", 32);
    ck_assert_uint_eq(brim_bench_key_format(buf, 12345, 16), 16);
    ck_assert_mem_eq(buf, "key:000000012345", 16); /* redis-benchmark -r */
    ck_assert_uint_eq(brim_bench_key_format(buf, 7, 15), 15);
    ck_assert_mem_eq(buf, "000000000000007", 15);
    ck_assert_uint_eq(brim_bench_key_format(buf, 7, 6), 6);
    ck_assert_mem_eq(buf, "000007", 6);
    ck_assert_uint_eq(brim_bench_key_format(buf, 0, 1), 1);
    ck_assert_mem_eq(buf, "0", 1);
    ck_assert_uint_eq(brim_bench_key_min_size(1), 1);
    ck_assert_uint_eq(brim_bench_key_min_size(10), 1);
    ck_assert_uint_eq(brim_bench_key_min_size(11), 2);
    ck_assert_uint_eq(brim_bench_key_min_size(100000), 5);
}
END_TEST

START_TEST(workload_value_round_trip)
{
    char   buf[256 + BRIM_BENCH_VHDR_MAX];
    size_t n;

    n = brim_bench_value_build(buf, 100, 0xdeadbeef, 12345, 77);
    ck_assert_uint_eq(n, 100);
    ck_assert_mem_eq(buf, "bb:deadbeef:3039:4d:", 20);
    ck_assert_int_eq(buf[99], '.');
    ck_assert_int_eq(brim_bench_value_parse(buf, n, 0xdeadbeef, 12345), 77);
    /* Another run, another key, a cut header: not this run's value. */
    ck_assert_int_eq(brim_bench_value_parse(buf, n, 0xdeadbeee, 12345), -1);
    ck_assert_int_eq(brim_bench_value_parse(buf, n, 0xdeadbeef, 12346), -1);
    ck_assert_int_eq(brim_bench_value_parse(buf, 15, 0xdeadbeef, 12345), -1);
    ck_assert_int_eq(brim_bench_value_parse("xyz", 3, 0, 0), -1);
    /* A value shorter than its header is the header alone. */
    n = brim_bench_value_build(buf, 4, UINT32_MAX, UINT64_MAX, UINT32_MAX);
    ck_assert_uint_le(n, BRIM_BENCH_VHDR_MAX);
    ck_assert_int_eq(brim_bench_value_parse(buf, n, UINT32_MAX, UINT64_MAX),
                     (int64_t) UINT32_MAX);
}
END_TEST

START_TEST(workload_mix_ratios)
{
    struct brim_bench_mix_conf c;
    struct brim_bench_mix      m;
    struct brim_bench_op       op;
    struct brim_rng            rng;
    uint64_t                   n[3] = {0, 0, 0}, ttl = 0;
    int                        i;

    memset(&c, 0, sizeof(c));
    c.keys = 1000;
    c.threads = 1;
    c.get_ratio = 0.9;
    c.del_ratio = 0.05;
    c.ttl_ratio = 0.5;
    c.value_min = 10;
    c.value_max = 20;
    c.ttl_min_s = 1;
    c.ttl_max_s = 2;
    ck_assert_int_eq(brim_bench_mix_init(&m, &c), 0);
    brim_rng_seed(&rng, 1);
    for (i = 0; i < 100000; i++) {
        brim_bench_mix_next(&m, &rng, &op);
        ck_assert_uint_lt(op.key, 1000);
        n[op.kind]++;
        if (op.kind == BRIM_BENCH_SET) {
            ck_assert(op.value_len >= 10 && op.value_len <= 20);
            ck_assert(op.ttl_s <= 2);
            ttl += op.ttl_s != 0;
        }
    }
    /* 5% DEL, 85.5% GET, 9.5% SET, half with a TTL; loose bounds. */
    ck_assert(n[BRIM_BENCH_DEL] > 4500 && n[BRIM_BENCH_DEL] < 5500);
    ck_assert(n[BRIM_BENCH_GET] > 84500 && n[BRIM_BENCH_GET] < 86500);
    ck_assert(ttl > n[BRIM_BENCH_SET] * 4 / 10
              && ttl < n[BRIM_BENCH_SET] * 6 / 10);
    c.get_ratio = 1;
    c.del_ratio = 0;
    ck_assert_int_eq(brim_bench_mix_init(&m, &c), 0);
    for (i = 0; i < 10000; i++) {
        brim_bench_mix_next(&m, &rng, &op);
        ck_assert_int_eq(op.kind, BRIM_BENCH_GET);
    }
}
END_TEST

START_TEST(workload_threads_split_keys)
{
    struct brim_bench_mix_conf c;
    struct brim_bench_mix      m;
    struct brim_bench_op       op;
    struct brim_rng            rng;
    uint64_t                   total;
    uint32_t                   t;
    int                        i;

    memset(&c, 0, sizeof(c));
    c.keys = 10;
    c.threads = 3;
    c.zipf_s = 0.99;
    c.get_ratio = 1;
    total = 0;
    brim_rng_seed(&rng, 2);
    for (t = 0; t < 3; t++) {
        c.thread = t;
        ck_assert_int_eq(brim_bench_mix_init(&m, &c), 0);
        total += m.nlocal;
        for (i = 0; i < 1000; i++) {
            brim_bench_mix_next(&m, &rng, &op);
            ck_assert_uint_eq(op.key % 3, t);
            ck_assert_uint_lt(op.key, 10);
            ck_assert_uint_eq(
                brim_bench_mix_global(&m, brim_bench_mix_local(&m, op.key)),
                op.key);
        }
    }
    ck_assert_uint_eq(total, 10);
}
END_TEST

/* Add TC, holding the one test TEST, to S. The names are read from the
 * tcase_create("...") calls by tests/CMakeLists.txt. */
static void
add_case(Suite *s, TCase *tc, const TTest *test)
{
    tcase_add_test(tc, test);
    suite_add_tcase(s, tc);
}

Suite *
brim_test_suite(void)
{
    Suite *s;

    s = suite_create("bench_workload");
    add_case(s, tcase_create("key_format"), workload_key_format);
    add_case(s, tcase_create("value_round_trip"), workload_value_round_trip);
    add_case(s, tcase_create("mix_ratios"), workload_mix_ratios);
    add_case(s, tcase_create("threads_split_keys"),
             workload_threads_split_keys);
    return s;
}
