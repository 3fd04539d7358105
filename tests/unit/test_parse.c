/*
 * tests/unit/test_parse.c - common/parse.c: whole numbers (digits only,
 * ranges, the 2^64 boundary), decimals, "MIN-MAX" ranges, and host:port
 * splitting with IPv6 in brackets.
 */
#include "tests/support/check_main.h"

#include <stdint.h>
#include <string.h>

#include "common/parse.h"

START_TEST(parse_u64_digits_only)
{
    static const char *const bad[] = {"",    "-1",  "+1",  " 1", "1 ", "0x10",
                                      "1e3", "12a", "1.0", "--", NULL};
    uint64_t                 v = 7;
    int                      i;

    ck_assert_int_eq(brim_parse_u64("0", 0, 10, &v), 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(brim_parse_u64("0010", 0, 10, &v), 0);
    ck_assert_uint_eq(v, 10);
    for (i = 0; bad[i] != NULL; i++) {
        v = 7;
        ck_assert_msg(brim_parse_u64(bad[i], 0, UINT64_MAX, &v) == BRIM_EINVAL,
                      "\"%s\" accepted", bad[i]);
        ck_assert_uint_eq(v, 7); /* nothing written on error */
    }
    ck_assert_int_eq(brim_parse_u64(NULL, 0, 1, &v), BRIM_EINVAL);
}
END_TEST

START_TEST(parse_u64_range_and_overflow)
{
    uint64_t v;
    uint32_t w;

    ck_assert_int_eq(brim_parse_u64("18446744073709551615", 0, UINT64_MAX, &v),
                     0);
    ck_assert_uint_eq(v, UINT64_MAX);
    ck_assert_int_eq(brim_parse_u64("18446744073709551616", 0, UINT64_MAX, &v),
                     BRIM_EINVAL);
    ck_assert_int_eq(
        brim_parse_u64("99999999999999999999999", 0, UINT64_MAX, &v),
        BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_u64("4", 5, 9, &v), BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_u64("10", 5, 9, &v), BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_u64("9", 5, 9, &v), 0);
    ck_assert_int_eq(brim_parse_u32("4294967295", 0, UINT32_MAX, &w), 0);
    ck_assert_uint_eq(w, UINT32_MAX);
    ck_assert_int_eq(brim_parse_u32("4294967296", 0, UINT32_MAX, &w),
                     BRIM_EINVAL);
}
END_TEST

START_TEST(parse_double_finite_in_range)
{
    double d = 0;

    ck_assert_int_eq(brim_parse_double("0.25", 0, 1, &d), 0);
    ck_assert(d == 0.25);
    ck_assert_int_eq(brim_parse_double("1e-1", 0, 1, &d), 0);
    ck_assert(d == 0.1);
    ck_assert_int_eq(brim_parse_double("1.5", 0, 1, &d), BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_double("-0.5", 0, 1, &d), BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_double("nan", 0, 1, &d), BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_double("inf", 0, 1e300, &d), BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_double("0.5x", 0, 1, &d), BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_double(" 0.5", 0, 1, &d), BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_double("", 0, 1, &d), BRIM_EINVAL);
}
END_TEST

START_TEST(parse_u64_range_text)
{
    uint64_t a = 0, b = 0;

    ck_assert_int_eq(brim_parse_u64_range("100", 1, 1000, &a, &b), 0);
    ck_assert_uint_eq(a, 100);
    ck_assert_uint_eq(b, 100);
    ck_assert_int_eq(brim_parse_u64_range("10-20", 1, 1000, &a, &b), 0);
    ck_assert_uint_eq(a, 10);
    ck_assert_uint_eq(b, 20);
    ck_assert_int_eq(brim_parse_u64_range("20-10", 1, 1000, &a, &b),
                     BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_u64_range("-10", 1, 1000, &a, &b), BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_u64_range("10-", 1, 1000, &a, &b), BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_u64_range("0-10", 1, 1000, &a, &b),
                     BRIM_EINVAL);
    ck_assert_int_eq(brim_parse_u64_range("1-2-3", 1, 1000, &a, &b),
                     BRIM_EINVAL);
}
END_TEST

START_TEST(addr_split_forms)
{
    char     host[64], err[BRIM_ERRBUF_LEN];
    uint16_t port = 0;

    ck_assert_int_eq(
        brim_addr_split("127.0.0.1:7400", host, sizeof(host), 1, &port, err),
        0);
    ck_assert_str_eq(host, "127.0.0.1");
    ck_assert_uint_eq(port, 7400);
    ck_assert_int_eq(
        brim_addr_split("[::1]:11311", host, sizeof(host), 1, &port, err), 0);
    ck_assert_str_eq(host, "::1");
    ck_assert_uint_eq(port, 11311);
    ck_assert_int_eq(
        brim_addr_split("localhost:0", host, sizeof(host), 0, &port, err), 0);
    ck_assert_uint_eq(port, 0);
    ck_assert_int_eq(
        brim_addr_split("localhost:0", host, sizeof(host), 1, &port, err),
        BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "port \"0\" is not 1 .. 65535"));
    ck_assert_int_eq(
        brim_addr_split("::1:80", host, sizeof(host), 1, &port, err),
        BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "IPv6 as [addr]:port"));
    ck_assert_int_eq(
        brim_addr_split("h:99999", host, sizeof(host), 1, &port, err),
        BRIM_EINVAL);
    ck_assert_int_eq(brim_addr_split("h:", host, sizeof(host), 1, &port, err),
                     BRIM_EINVAL);
    ck_assert_int_eq(brim_addr_split(":80", host, sizeof(host), 1, &port, err),
                     BRIM_EINVAL);
    ck_assert_int_eq(
        brim_addr_split("[::1]80", host, sizeof(host), 1, &port, err),
        BRIM_EINVAL);
    ck_assert_int_eq(
        brim_addr_split("nohost", host, sizeof(host), 1, &port, NULL),
        BRIM_EINVAL);
    /* A host longer than the caller's buffer is refused, not cut. */
    ck_assert_int_eq(brim_addr_split("abcdefgh:1", host, 8, 1, &port, err),
                     BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "host is 8 bytes"));
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s = suite_create("parse");
    TCase *tc;

    tc = tcase_create("u64_digits_only");
    tcase_add_test(tc, parse_u64_digits_only);
    suite_add_tcase(s, tc);

    tc = tcase_create("u64_range_and_overflow");
    tcase_add_test(tc, parse_u64_range_and_overflow);
    suite_add_tcase(s, tc);

    tc = tcase_create("double_finite_in_range");
    tcase_add_test(tc, parse_double_finite_in_range);
    suite_add_tcase(s, tc);

    tc = tcase_create("u64_range_text");
    tcase_add_test(tc, parse_u64_range_text);
    suite_add_tcase(s, tc);

    tc = tcase_create("addr_split_forms");
    tcase_add_test(tc, addr_split_forms);
    suite_add_tcase(s, tc);

    return s;
}
