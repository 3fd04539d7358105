/*
 * tests/unit/test_status.c - the status list of <brim/status.h> and its
 * texts: brim_strerror(), brim_err_name() and brim_errfmt() (common/
 * status.c). Wire codes are small positive values, local ones 100 and up.
 */
#include "tests/support/check_main.h"

#include <string.h>

#include <brim/status.h>

#include "common/defs.h"

/* Every code of the list with its value, name and text, from the X-macro. */
struct status_entry {
    int         code;  /* BRIM_E<NAME>, negative */
    int         value; /* the positive value in the list */
    const char *name;  /* "NOTFOUND" */
    const char *text;  /* "not found" */
};

static const struct status_entry status_table[] = {
#define STATUS_ENTRY(n, v, t) {BRIM_E##n, (v), #n, (t)},
    BRIM_STATUS_MAP(STATUS_ENTRY)
#undef STATUS_ENTRY
};

START_TEST(status_known_codes)
{
    ck_assert_str_eq(brim_strerror(0), "ok");
    ck_assert_str_eq(brim_err_name(0), "OK");
    ck_assert_str_eq(brim_strerror(BRIM_ENOTFOUND), "not found");
    ck_assert_str_eq(brim_err_name(BRIM_ENOTFOUND), "NOTFOUND");
    ck_assert_str_eq(brim_err_name(BRIM_EEXISTS), "EXISTS");
    ck_assert_str_eq(brim_strerror(BRIM_EEXISTS), "already exists");
    ck_assert_str_eq(brim_err_name(BRIM_ENOMEM), "NOMEM");
    ck_assert_str_eq(brim_strerror(BRIM_ENOMEM), "out of memory");
    ck_assert_str_eq(brim_err_name(BRIM_EINVAL), "INVAL");
    ck_assert_str_eq(brim_err_name(BRIM_EAGAIN), "AGAIN");
    ck_assert_str_eq(brim_strerror(BRIM_ETIMEDOUT), "timed out");
    ck_assert_str_eq(brim_err_name(BRIM_EUNKNOWN), "UNKNOWN");
    ck_assert_int_eq(BRIM_ENOTFOUND, -1);
    ck_assert_int_eq(BRIM_EMOVED, -5);
    ck_assert_int_eq(BRIM_EAGAIN, -100);
}
END_TEST

START_TEST(status_unknown_code)
{
    /* Positive values are wire statuses, never return codes. */
    ck_assert_str_eq(brim_strerror(-9999), "unknown error");
    ck_assert_str_eq(brim_err_name(-9999), "UNKNOWN_CODE");
    ck_assert_str_eq(brim_strerror(1), "unknown error");
    ck_assert_str_eq(brim_err_name(1), "UNKNOWN_CODE");
    ck_assert_str_eq(brim_err_name(-18), "UNKNOWN_CODE"); /* past STALETERM */
    ck_assert_str_eq(brim_err_name(-99), "UNKNOWN_CODE");
    ck_assert_str_eq(brim_err_name(INT32_MIN), "UNKNOWN_CODE");
}
END_TEST

START_TEST(status_table_consistent)
{
    size_t i, j;

    for (i = 0; i < BRIM_ARRAY_LEN(status_table); i++) {
        const struct status_entry *e = &status_table[i];

        ck_assert_int_eq(e->code, -e->value);
        ck_assert_int_gt(e->value, 0);
        ck_assert_str_eq(brim_err_name(e->code), e->name);
        ck_assert_str_eq(brim_strerror(e->code), e->text);
        /* Wire values stay below the local range and vice versa. */
        ck_assert_msg(e->value <= BRIM_STATUS_WIRE_MAX || e->value >= 100,
                      "%s=%d in the gap between wire and local codes", e->name,
                      e->value);
        for (j = i + 1; j < BRIM_ARRAY_LEN(status_table); j++) {
            ck_assert_msg(status_table[j].value != e->value,
                          "%s and %s share value %d", e->name,
                          status_table[j].name, e->value);
            ck_assert_str_ne(status_table[j].name, e->name);
        }
    }
}
END_TEST

START_TEST(status_errfmt)
{
    char buf[BRIM_ERRBUF_LEN + 16];
    char big[600];

    brim_errfmt(NULL, "ignored %d", 1); /* NULL is allowed */

    brim_errfmt(buf, "ring: node \"%s\": %d tokens", "n1", 160);
    ck_assert_str_eq(buf, "ring: node \"n1\": 160 tokens");

    /* Long messages are cut to BRIM_ERRBUF_LEN bytes, NUL included. */
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memset(buf, 'Z', sizeof(buf));
    brim_errfmt(buf, "%s", big);
    ck_assert_uint_eq(strlen(buf), BRIM_ERRBUF_LEN - 1);
    ck_assert_int_eq(buf[BRIM_ERRBUF_LEN], 'Z');
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s;
    TCase *tc;

    s = suite_create("status");

    tc = tcase_create("known_codes");
    tcase_add_test(tc, status_known_codes);
    suite_add_tcase(s, tc);

    tc = tcase_create("unknown_code");
    tcase_add_test(tc, status_unknown_code);
    suite_add_tcase(s, tc);

    tc = tcase_create("table_consistent");
    tcase_add_test(tc, status_table_consistent);
    suite_add_tcase(s, tc);

    tc = tcase_create("errfmt");
    tcase_add_test(tc, status_errfmt);
    suite_add_tcase(s, tc);

    return s;
}
