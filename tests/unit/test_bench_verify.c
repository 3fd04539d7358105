/*
 * tests/unit/test_bench_verify.c - the checker behind brim-bench --verify
 * (client/bench/verify.c), fed scripted sequences of sends, replies and
 * reads, with the verdicts and the lost and stale counters asserted. Keys
 * are independent, so each case uses key 0 or 1 of a small checker.
 */
#include "tests/support/check_main.h"

#include <stdint.h>

#include "client/bench/verify.h"

#define NS_PER_S 1000000000ull
/* The TTL slack the bench uses by default. */
#define SLACK_NS NS_PER_S

static struct brim_bench_verify v;

static void
setup(void)
{
    ck_assert_int_eq(brim_bench_verify_init(&v, 4, SLACK_NS), 0);
}

static void
teardown(void)
{
    brim_bench_verify_destroy(&v);
}

/* A SET of KEY sent at NOW and acknowledged; its sequence. */
static uint32_t
set_acked(uint64_t key, uint32_t ttl_s, uint64_t now)
{
    uint32_t seq;

    seq = brim_bench_verify_write_sent(&v, key, 0, ttl_s, now);
    brim_bench_verify_write_done(&v, key, seq, 1);
    return seq;
}

/* A read of KEY sent now that returns SEQ (HIT) or misses, at NOW. */
static enum brim_bench_vres
read_now(uint64_t key, int hit, int64_t seq, uint64_t now)
{
    struct brim_bench_vread r;

    brim_bench_verify_read_sent(&v, key, &r);
    return brim_bench_verify_read_done(&v, key, &r, hit, seq, now);
}

START_TEST(verify_read_of_last_ack_ok)
{
    uint32_t s0, s1;

    s0 = set_acked(0, 0, 0);
    s1 = set_acked(0, 0, 0);
    ck_assert_uint_eq(s0, 0);
    ck_assert_uint_eq(s1, 1);
    ck_assert_int_eq(read_now(0, 1, s1, 0), BRIM_BENCH_VOK);
    ck_assert_uint_eq(v.stale, 0);
    ck_assert_uint_eq(v.lost, 0);
    ck_assert_uint_eq(v.reads_checked, 1);
}
END_TEST

START_TEST(verify_older_value_is_stale)
{
    uint32_t s0;

    /* s1 was sent after s0's ack and was acked: s0 is overwritten. */
    s0 = set_acked(0, 0, 0);
    (void) set_acked(0, 0, 0);
    ck_assert_int_eq(read_now(0, 1, s0, 0), BRIM_BENCH_VSTALE);
    ck_assert_int_eq(read_now(0, 1, s0, 0), BRIM_BENCH_VSTALE);
    /* Distinct keys count once; reads count every time. */
    ck_assert_uint_eq(v.stale, 1);
    ck_assert_uint_eq(v.stale_reads, 2);
    /* Another key's stale read is another key. */
    s0 = set_acked(1, 0, 0);
    (void) set_acked(1, 0, 0);
    ck_assert_int_eq(read_now(1, 1, s0, 0), BRIM_BENCH_VSTALE);
    ck_assert_uint_eq(v.stale, 2);
}
END_TEST

START_TEST(verify_in_flight_write_may_show)
{
    uint32_t s0, s1;

    s0 = set_acked(0, 0, 0);
    s1 = brim_bench_verify_write_sent(&v, 0, 0, 0, 0);
    /* While s1 is out, a read may see either. */
    ck_assert_int_eq(read_now(0, 1, s0, 0), BRIM_BENCH_VOK);
    ck_assert_int_eq(read_now(0, 1, s1, 0), BRIM_BENCH_VOK);
    brim_bench_verify_write_done(&v, 0, s1, 1);
    /* Once s1 is acked, s0 is gone for reads sent afterwards. */
    ck_assert_int_eq(read_now(0, 1, s0, 0), BRIM_BENCH_VSTALE);
    ck_assert_uint_eq(v.stale, 1);
}
END_TEST

START_TEST(verify_concurrent_writes_either_order)
{
    uint32_t s0, s1, s2;

    s0 = set_acked(0, 0, 0);
    /* s1 and s2 overlap: the server may apply them in either order, and
     * replies on two connections may come in either order too. */
    s1 = brim_bench_verify_write_sent(&v, 0, 0, 0, 0);
    s2 = brim_bench_verify_write_sent(&v, 0, 0, 0, 0);
    brim_bench_verify_write_done(&v, 0, s2, 1);
    brim_bench_verify_write_done(&v, 0, s1, 1);
    ck_assert_int_eq(read_now(0, 1, s1, 0), BRIM_BENCH_VOK);
    ck_assert_int_eq(read_now(0, 1, s2, 0), BRIM_BENCH_VOK);
    /* s0 was acked before both were sent. */
    ck_assert_int_eq(read_now(0, 1, s0, 0), BRIM_BENCH_VSTALE);
}
END_TEST

START_TEST(verify_value_after_delete_is_stale)
{
    uint32_t s0, d1;

    s0 = set_acked(0, 0, 0);
    d1 = brim_bench_verify_write_sent(&v, 0, 1, 0, 0);
    /* While the DEL is out, the old value or a miss are both fine. */
    ck_assert_int_eq(read_now(0, 1, s0, 0), BRIM_BENCH_VOK);
    ck_assert_int_eq(read_now(0, 0, 0, 0), BRIM_BENCH_VOK);
    brim_bench_verify_write_done(&v, 0, d1, 1);
    ck_assert_int_eq(read_now(0, 0, 0, 0), BRIM_BENCH_VOK);
    ck_assert_int_eq(read_now(0, 1, s0, 0), BRIM_BENCH_VSTALE);
    ck_assert_uint_eq(v.stale, 1);
    ck_assert_uint_eq(v.lost, 0);
}
END_TEST

START_TEST(verify_miss_after_set_is_lost)
{
    (void) set_acked(0, 0, 0);
    ck_assert_int_eq(read_now(0, 0, 0, 5 * NS_PER_S), BRIM_BENCH_VLOST);
    ck_assert_int_eq(read_now(0, 0, 0, 6 * NS_PER_S), BRIM_BENCH_VLOST);
    ck_assert_uint_eq(v.lost, 1);
    ck_assert_uint_eq(v.lost_reads, 2);
    ck_assert_uint_eq(v.stale, 0);
}
END_TEST

START_TEST(verify_miss_near_ttl_end_ok)
{
    uint64_t t0 = 100 * NS_PER_S;

    /* TTL 1 s with 1 s of slack: the key may be gone at once. */
    (void) set_acked(0, 1, t0);
    ck_assert_int_eq(read_now(0, 0, 0, t0), BRIM_BENCH_VOK);
    /* TTL 2 s: sure to exist for the first second only. */
    (void) set_acked(1, 2, t0);
    ck_assert_int_eq(read_now(1, 0, 0, t0 + NS_PER_S / 2), BRIM_BENCH_VLOST);
    ck_assert_int_eq(read_now(1, 0, 0, t0 + NS_PER_S), BRIM_BENCH_VOK);
    ck_assert_int_eq(read_now(1, 0, 0, t0 + 3 * NS_PER_S), BRIM_BENCH_VOK);
    ck_assert_uint_eq(v.lost, 1);
}
END_TEST

START_TEST(verify_miss_with_write_out_ok)
{
    struct brim_bench_vread r;
    uint32_t                d;

    (void) set_acked(0, 0, 0);
    /* A DEL sent while the read is out may have run first. */
    brim_bench_verify_read_sent(&v, 0, &r);
    d = brim_bench_verify_write_sent(&v, 0, 1, 0, 0);
    ck_assert_int_eq(brim_bench_verify_read_done(&v, 0, &r, 0, 0, 0),
                     BRIM_BENCH_VOK);
    brim_bench_verify_write_done(&v, 0, d, 1);
    /* A write already out when the read is sent: the same. */
    (void) set_acked(1, 0, 0);
    (void) brim_bench_verify_write_sent(&v, 1, 1, 0, 0);
    ck_assert_int_eq(read_now(1, 0, 0, 0), BRIM_BENCH_VOK);
    ck_assert_uint_eq(v.lost, 0);
}
END_TEST

START_TEST(verify_write_sent_during_read_ok)
{
    struct brim_bench_vread r;
    uint32_t                s;

    (void) set_acked(0, 0, 0);
    brim_bench_verify_read_sent(&v, 0, &r);
    s = brim_bench_verify_write_sent(&v, 0, 0, 0, 0);
    ck_assert_int_eq(brim_bench_verify_read_done(&v, 0, &r, 1, s, 0),
                     BRIM_BENCH_VOK);
}
END_TEST

START_TEST(verify_failed_write_stays_possible)
{
    uint32_t s0, s1;

    s0 = set_acked(0, 0, 0);
    s1 = brim_bench_verify_write_sent(&v, 0, 0, 0, 0);
    brim_bench_verify_write_done(&v, 0, s1, 0); /* timed out */
    /* It may or may not have run: both values and no lost verdict. */
    ck_assert_int_eq(read_now(0, 1, s0, 0), BRIM_BENCH_VOK);
    ck_assert_int_eq(read_now(0, 1, s1, 0), BRIM_BENCH_VOK);
    /* A write sent after the failure and acked overwrites both. */
    (void) set_acked(0, 0, 0);
    ck_assert_int_eq(read_now(0, 1, s1, 0), BRIM_BENCH_VSTALE);
    ck_assert_int_eq(read_now(0, 1, s0, 0), BRIM_BENCH_VSTALE);
    ck_assert_uint_eq(v.stale, 1);
}
END_TEST

START_TEST(verify_failed_set_miss_not_lost)
{
    uint32_t s0;

    s0 = brim_bench_verify_write_sent(&v, 0, 0, 0, 0);
    brim_bench_verify_write_done(&v, 0, s0, 0);
    /* Nothing of this run is known to be stored. */
    ck_assert_int_eq(read_now(0, 0, 0, 0), BRIM_BENCH_VOK);
    (void) set_acked(1, 0, 0);
    s0 = brim_bench_verify_write_sent(&v, 1, 0, 0, 0);
    brim_bench_verify_write_done(&v, 1, s0, 0);
    ck_assert_int_eq(read_now(1, 0, 0, 0), BRIM_BENCH_VOK);
    ck_assert_uint_eq(v.lost, 0);
}
END_TEST

START_TEST(verify_unwritten_key_not_judged)
{
    /* Before any acknowledged write, whatever the server held before the
     * run may be there, or nothing. */
    ck_assert_int_eq(read_now(2, 1, -1, 0), BRIM_BENCH_VOK);
    ck_assert_int_eq(read_now(2, 0, 0, 0), BRIM_BENCH_VOK);
    ck_assert_uint_eq(v.reads_checked, 0);
}
END_TEST

START_TEST(verify_foreign_value_is_stale)
{
    (void) set_acked(0, 0, 0);
    ck_assert_int_eq(read_now(0, 1, -1, 0), BRIM_BENCH_VSTALE);
    ck_assert_uint_eq(v.stale, 1);
}
END_TEST

START_TEST(verify_writable_bound)
{
    uint32_t seq[BRIM_BENCH_VREC_MAX];
    int      i;

    (void) set_acked(0, 0, 0);
    /* One acked record plus VREC_MAX - 1 in flight fill the key. */
    for (i = 0; i < BRIM_BENCH_VREC_MAX - 1; i++) {
        ck_assert(brim_bench_verify_writable(&v, 0));
        seq[i] = brim_bench_verify_write_sent(&v, 0, 0, 0, 0);
    }
    ck_assert(!brim_bench_verify_writable(&v, 0));
    ck_assert(brim_bench_verify_writable(&v, 1));
    for (i = 0; i < BRIM_BENCH_VREC_MAX - 1; i++) {
        brim_bench_verify_write_done(&v, 0, seq[i], 1);
    }
    /* Concurrent writes all stay candidates; one sent after their acks
     * overwrites them all, and the key has room again. */
    (void) set_acked(0, 0, 0);
    ck_assert(brim_bench_verify_writable(&v, 0));
    ck_assert_uint_eq(v.keys[0].nrec, 1);
}
END_TEST

/* Add TC, holding the one test TEST, to S. The names are read from the
 * tcase_create("...") calls by tests/CMakeLists.txt. */
static void
add_case(Suite *s, TCase *tc, const TTest *test)
{
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test);
    suite_add_tcase(s, tc);
}

Suite *
brim_test_suite(void)
{
    Suite *s;

    s = suite_create("bench_verify");
    add_case(s, tcase_create("read_of_last_ack_ok"),
             verify_read_of_last_ack_ok);
    add_case(s, tcase_create("older_value_is_stale"),
             verify_older_value_is_stale);
    add_case(s, tcase_create("in_flight_write_may_show"),
             verify_in_flight_write_may_show);
    add_case(s, tcase_create("concurrent_writes_either_order"),
             verify_concurrent_writes_either_order);
    add_case(s, tcase_create("value_after_delete_is_stale"),
             verify_value_after_delete_is_stale);
    add_case(s, tcase_create("miss_after_set_is_lost"),
             verify_miss_after_set_is_lost);
    add_case(s, tcase_create("miss_near_ttl_end_ok"),
             verify_miss_near_ttl_end_ok);
    add_case(s, tcase_create("miss_with_write_out_ok"),
             verify_miss_with_write_out_ok);
    add_case(s, tcase_create("write_sent_during_read_ok"),
             verify_write_sent_during_read_ok);
    add_case(s, tcase_create("failed_write_stays_possible"),
             verify_failed_write_stays_possible);
    add_case(s, tcase_create("failed_set_miss_not_lost"),
             verify_failed_set_miss_not_lost);
    add_case(s, tcase_create("unwritten_key_not_judged"),
             verify_unwritten_key_not_judged);
    add_case(s, tcase_create("foreign_value_is_stale"),
             verify_foreign_value_is_stale);
    add_case(s, tcase_create("writable_bound"), verify_writable_bound);
    return s;
}
