/*
 * tests/unit/test_units.c - common/units.c: decimals print as integers or
 * fixed decimals (no exponent), byte counts in binary units, and both cut
 * their text to the buffer.
 */
#include "tests/support/check_main.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/units.h"

START_TEST(decimal_no_exponent)
{
    static const struct {
        double      v;
        const char *want;
    } cases[] = {
        {16384.0, "16384"},
        {1.638e4, "16380"},
        {341.3333333, "341.333"},
        {1.576, "1.576"},
        {0.5, "0.5"},
        {0.0004, "0.0004"},
        {0.0, "0"},
        {-2.25, "-2.25"},
        {52087.25, "52087.25"},
        {1e15, "1000000000000000"},
        {1e20, "100000000000000000000"},
        {-0.0000001, "0"},
        {2.0 / 3.0, "0.6667"},
        {0.931641, "0.9316"},
        {0.0123456, "0.01235"},
        {-0.25, "-0.25"},
        {1e-9, "0"},
    };
    char   buf[BRIM_UNITS_TEXT_MAX];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        brim_format_decimal(cases[i].v, buf, sizeof(buf));
        ck_assert_msg(strcmp(buf, cases[i].want) == 0, "%.17g: \"%s\", want %s",
                      cases[i].v, buf, cases[i].want);
        ck_assert_ptr_null(strchr(buf, 'e'));
    }
    ck_assert_str_eq(brim_format_decimal(NAN, buf, sizeof(buf)), "-");
    ck_assert_str_eq(brim_format_decimal(INFINITY, buf, sizeof(buf)), "inf");
    ck_assert_str_eq(brim_format_decimal(-INFINITY, buf, sizeof(buf)), "-inf");
}
END_TEST

START_TEST(bytes_binary_units)
{
    static const struct {
        uint64_t    v;
        const char *want;
    } cases[] = {
        {0, "0 B"},
        {1023, "1023 B"},
        {1024, "1.0 KiB"},
        {1536, "1.5 KiB"},
        {12345678, "11.8 MiB"},
        {(1u << 20) - 1, "1.0 MiB"},
        {64ull << 20, "64.0 MiB"},
        {(uint64_t) 3435973837ull, "3.2 GiB"},
        {3ull << 40, "3.0 TiB"},
        {UINT64_MAX, "16.0 EiB"},
    };
    char   buf[BRIM_UNITS_TEXT_MAX];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        brim_format_bytes(cases[i].v, buf, sizeof(buf));
        ck_assert_msg(strcmp(buf, cases[i].want) == 0, "%llu: \"%s\", want %s",
                      (unsigned long long) cases[i].v, buf, cases[i].want);
    }
}
END_TEST

START_TEST(cut_to_the_buffer)
{
    char buf[4];

    ck_assert_str_eq(brim_format_decimal(341.333, buf, sizeof(buf)), "341");
    ck_assert_str_eq(brim_format_bytes(12345678, buf, sizeof(buf)), "11.");
    ck_assert_str_eq(brim_format_decimal(1e20, buf, 1), "");
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s = suite_create("units");
    TCase *tc;

    tc = tcase_create("decimal_no_exponent");
    tcase_add_test(tc, decimal_no_exponent);
    suite_add_tcase(s, tc);

    tc = tcase_create("bytes_binary_units");
    tcase_add_test(tc, bytes_binary_units);
    suite_add_tcase(s, tc);

    tc = tcase_create("cut_to_the_buffer");
    tcase_add_test(tc, cut_to_the_buffer);
    suite_add_tcase(s, tc);

    return s;
}
