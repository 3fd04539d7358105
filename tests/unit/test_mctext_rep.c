/*
 * tests/unit/test_mctext_rep.c - proto/mctext_rep.c: a golden set of
 * memcached replies, text and meta (return flags in request order, quiet
 * mode), OUT unchanged on BRIM_ENOMEM, and memcached's expiry rule. Apart
 * from test_mctext.c (the parser) to keep each file under 1,500 lines.
 * "checked" means the shape was taken from memcached 1.6.18 (Debian 12)
 * by sending it the same request.
 */
#include "tests/support/check_main.h"

#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "proto/buf.h"
#include "proto/mctext.h"

/* memcached's defaults: key 250, value 1 MiB, line 2048. */
static struct brim_mctext_limits lim;

static void
setup(void)
{
    brim_mctext_limits_default(&lim);
}

/* Parse the NUL-terminated S (its strlen bytes) into *CMD. */
static int
parse_s(const char *s, struct brim_mctext_cmd *cmd)
{
    return brim_mctext_parse(s, strlen(s), &lim, cmd);
}

/* OUT's contents as a NUL-terminated string (no NUL inside expected). */
static const char *
str_of(struct brim_buf *out)
{
    ck_assert_int_eq(brim_buf_append(out, "", 1), 0);
    out->len--;
    return out->data;
}

/* Parse S, then put ITEM as its meta reply; compare with WANT. */
static void
meta_golden(const char *s, const struct brim_mctext_meta_item *item,
            const char *want)
{
    struct brim_mctext_cmd cmd;
    struct brim_buf        out;

    brim_buf_init(&out);
    ck_assert_int_eq(parse_s(s, &cmd), 0);
    ck_assert_int_eq(cmd.err, BRIM_MCTEXT_ERR_NONE);
    ck_assert_int_eq(brim_mctext_put_meta(&out, &cmd, item), 0);
    ck_assert_msg(out.len == strlen(want)
                      && (out.len == 0 || memcmp(out.data, want, out.len) == 0),
                  "%s: got \"%.*s\", want \"%s\"", s, (int) out.len,
                  out.data == NULL ? "" : out.data, want);
    brim_buf_destroy(&out);
}

START_TEST(mctext_golden_replies)
{
    struct brim_mctext_meta_item it;
    struct brim_buf              out;
    unsigned                     r;
    static const char *const     lines[] = {
            "STORED\r\n",  "NOT_STORED\r\n", "EXISTS\r\n", "NOT_FOUND\r\n",
            "DELETED\r\n", "TOUCHED\r\n",    "OK\r\n",     "END\r\n",
            "ERROR\r\n",   "RESET\r\n",      "MN\r\n",     "EN\r\n",
    };

    brim_buf_init(&out);
    for (r = 0; r < BRIM_MCTEXT_REPLY_COUNT; r++) {
        out.len = 0;
        ck_assert_int_eq(brim_mctext_put_reply(&out, r), 0);
        ck_assert_str_eq(str_of(&out), lines[r]);
    }
    ck_assert_int_eq(brim_mctext_put_reply(&out, BRIM_MCTEXT_REPLY_COUNT),
                     BRIM_EINVAL);
    /* A get of two keys, one hit (the shape checked on 1.6.18). */
    out.len = 0;
    ck_assert_int_eq(brim_mctext_put_value(&out, "k", 1, 0, "x", 1, 0, 0), 0);
    ck_assert_int_eq(brim_mctext_put_value(&out, "foo", 3, 4294967295u,
                                           "a\r\nb", 4, 1,
                                           18446744073709551615u),
                     0);
    ck_assert_int_eq(brim_mctext_put_reply(&out, BRIM_MCTEXT_REPLY_END), 0);
    ck_assert_str_eq(str_of(&out),
                     "VALUE k 0 1\r\nx\r\n"
                     "VALUE foo 4294967295 4 18446744073709551615\r\n"
                     "a\r\nb\r\nEND\r\n");
    out.len = 0;
    ck_assert_int_eq(brim_mctext_put_value(&out, "e", 1, 7, NULL, 0, 1, 0), 0);
    ck_assert_str_eq(str_of(&out), "VALUE e 7 0 0\r\n\r\n");
    out.len = 0;
    ck_assert_int_eq(brim_mctext_put_number(&out, 0), 0);
    ck_assert_int_eq(brim_mctext_put_number(&out, UINT64_MAX), 0);
    ck_assert_str_eq(str_of(&out), "0\r\n18446744073709551615\r\n");
    out.len = 0;
    ck_assert_int_eq(brim_mctext_put_version(&out, "1.6.18"), 0);
    ck_assert_int_eq(brim_mctext_put_stat(&out, "pid", "42"), 0);
    ck_assert_int_eq(brim_mctext_put_stat_u64(&out, "curr_items", 7), 0);
    ck_assert_str_eq(str_of(&out),
                     "VERSION 1.6.18\r\nSTAT pid 42\r\n"
                     "STAT curr_items 7\r\n");
    out.len = 0;
    ck_assert_int_eq(brim_mctext_put_client_error(&out, "bad\r\nthing"), 0);
    ck_assert_int_eq(brim_mctext_put_server_error(&out, "out of memory"), 0);
    ck_assert_str_eq(str_of(&out),
                     "CLIENT_ERROR bad  thing\r\n"
                     "SERVER_ERROR out of memory\r\n");
    brim_buf_destroy(&out);

    /* Meta replies: the shapes memcached 1.6.18 wrote for these very
     * requests (checked). */
    memset(&it, 0, sizeof(it));
    it.code = BRIM_MCTEXT_META_HD;
    it.value = "hi";
    it.value_len = 2;
    it.cas = 35;
    it.ttl_s = -1;
    meta_golden("mg mk s v f t c k Oabc q\r\n", &it,
                "VA 2 s2 f0 t-1 c35 kmk Oabc\r\nhi\r\n");
    meta_golden("mg mk\r\n", &it, "HD\r\n");
    meta_golden("mg mk q\r\n", &it, "HD\r\n");
    it.fetched = 1;
    it.win_sent = 1;
    it.stale = 1;
    meta_golden("mg c h l t\r\n", &it, "HD h1 l0 t-1 Z X\r\n");
    it.win_sent = 0;
    it.won = 1;
    it.ttl_s = 30;
    it.value_len = 0;
    it.cas = 79;
    meta_golden("mg nv N30 v t c\r\n", &it, "VA 0 t30 c79 X W\r\n\r\n");
    meta_golden("mg Zm9v b v k\r\n", &it, "VA 0 kZm9v b X W\r\n\r\n");
    /* a stray byte in the base64 is gone once encoded again (checked) */
    meta_golden("mg Zm9v! b k\r\n", &it, "HD kZm9v b X W\r\n");
    memset(&it, 0, sizeof(it));
    it.code = BRIM_MCTEXT_META_EN;
    meta_golden("mg nokey k Oop v\r\n", &it, "EN knokey Oop\r\n");
    meta_golden("mg nokey\r\n", &it, "EN\r\n");
    meta_golden("mg nokey q k\r\n", &it, ""); /* quiet */
    meta_golden("mg bm9rZXk= b k O1\r\n", &it, "EN kbm9rZXk= b O1\r\n");
    /* ms: O k c in request order */
    memset(&it, 0, sizeof(it));
    it.code = BRIM_MCTEXT_META_HD;
    it.cas = 39;
    meta_golden("ms k 2 c k Oab\r\nhi\r\n", &it, "HD c39 kk Oab\r\n");
    meta_golden("ms AAEC 1 b k c\r\nx\r\n", &it, "HD kAAEC b c39\r\n");
    meta_golden("ms k 2 q\r\nhi\r\n", &it, "");
    it.code = BRIM_MCTEXT_META_NS;
    meta_golden("ms k 2 q ME\r\nhi\r\n", &it, "NS\r\n");
    it.code = BRIM_MCTEXT_META_EX;
    it.cas = 0;
    meta_golden("ms k 2 C1 c\r\nhi\r\n", &it, "EX c0\r\n");
    it.code = BRIM_MCTEXT_META_NF;
    meta_golden("ms k 2 C1 O9\r\nhi\r\n", &it, "NF O9\r\n");
    /* md: O k */
    it.code = BRIM_MCTEXT_META_NF;
    meta_golden("md k C1 k O1\r\n", &it, "NF kk O1\r\n");
    it.code = BRIM_MCTEXT_META_EX;
    meta_golden("md k C1 k O1\r\n", &it, "EX kk O1\r\n");
    meta_golden("md k q C99\r\n", &it, "EX\r\n");
    it.code = BRIM_MCTEXT_META_HD;
    meta_golden("md k q\r\n", &it, "");
    meta_golden("md k\r\n", &it, "HD\r\n");
    meta_golden("md AAEC b k\r\n", &it, "HD kAAEC b\r\n");
    /* ma: c t O k on success, O k otherwise */
    memset(&it, 0, sizeof(it));
    it.code = BRIM_MCTEXT_META_HD;
    it.number = 5;
    it.cas = 57;
    it.ttl_s = -1;
    meta_golden("ma nok2 N0 J5 v t c k Oq\r\n", &it,
                "VA 1 t-1 c57 knok2 Oq\r\n5\r\n");
    it.number = 17;
    meta_golden("ma c D5 v\r\n", &it, "VA 2\r\n17\r\n");
    it.ttl_s = 100;
    meta_golden("ma c t\r\n", &it, "HD t100\r\n");
    meta_golden("ma c q v\r\n", &it, "");
    it.code = BRIM_MCTEXT_META_EX;
    meta_golden("ma c C1 O5 k\r\n", &it, "EX O5 kc\r\n");
    it.code = BRIM_MCTEXT_META_NF;
    meta_golden("ma nok q\r\n", &it, "NF\r\n");
}
END_TEST

START_TEST(mctext_golden_misc)
{
    struct brim_mctext_meta_item it;
    struct brim_mctext_cmd       cmd;
    struct brim_buf              out;

    brim_buf_init(&out);
    ck_assert_int_eq(parse_s("me AAEC b\r\n", &cmd), 0);
    ck_assert_int_eq(brim_mctext_put_me(&out, &cmd,
                                        "exp=-1 la=0 cas=72 "
                                        "fetch=yes cls=1 size=63"),
                     0);
    ck_assert_str_eq(str_of(&out),
                     "ME AAEC exp=-1 la=0 cas=72 fetch=yes cls=1 size=63\r\n");
    out.len = 0;
    ck_assert_int_eq(parse_s("me k\r\n", &cmd), 0);
    ck_assert_int_eq(brim_mctext_put_me(&out, &cmd, "exp=-1"), 0);
    ck_assert_str_eq(str_of(&out), "ME k exp=-1\r\n");
    /* An error answer, and a silenced one. */
    out.len = 0;
    ck_assert_int_eq(parse_s("bogus\r\n", &cmd), 0);
    ck_assert_int_eq(brim_mctext_put_err(&out, &cmd), 0);
    ck_assert_int_eq(parse_s("incr k x noreply\r\n", &cmd), 0);
    ck_assert_int_eq(brim_mctext_put_err(&out, &cmd), 0);
    ck_assert_str_eq(str_of(&out), "ERROR\r\n");
    /* put_meta refuses what is not mg ms md ma. */
    memset(&it, 0, sizeof(it));
    ck_assert_int_eq(parse_s("get k\r\n", &cmd), 0);
    ck_assert_int_eq(brim_mctext_put_meta(&out, &cmd, &it), BRIM_EINVAL);
    ck_assert_int_eq(brim_mctext_meta_quiet(&cmd, BRIM_MCTEXT_META_HD), 0);
    brim_buf_destroy(&out);
}
END_TEST

START_TEST(mctext_encode_nomem)
{
    struct brim_mctext_meta_item it;
    struct brim_mctext_cmd       cmd;
    struct brim_buf              out;
    static char                  big[4096];

    brim_buf_init(&out);
    ck_assert_int_eq(brim_buf_append(&out, "abc", 3), 0);
    memset(big, 'v', sizeof(big) - 1);
    memset(&it, 0, sizeof(it));
    it.value = big;
    it.value_len = sizeof(big);
    ck_assert_int_eq(parse_s("mg k v k\r\n", &cmd), 0);
    brim_alloc_fail_after(1, 1);
    ck_assert_int_eq(
        brim_mctext_put_value(&out, "k", 1, 0, big, sizeof(big), 1, 5),
        BRIM_ENOMEM);
    ck_assert_int_eq(brim_mctext_put_meta(&out, &cmd, &it), BRIM_ENOMEM);
    ck_assert_int_eq(brim_mctext_put_client_error(&out, big), BRIM_ENOMEM);
    brim_alloc_fail_after(0, 0);
    ck_assert_uint_eq(out.len, 3);
    ck_assert_mem_eq(out.data, "abc", 3);
    brim_buf_destroy(&out);
}
END_TEST

START_TEST(mctext_expiry)
{
    uint64_t at, now;

    now = 1700000000;
    at = 7;
    ck_assert_int_eq(brim_mctext_expiry(0, now, &at), BRIM_MCTEXT_EXPIRY_NEVER);
    ck_assert_uint_eq(at, 7); /* untouched */
    ck_assert_int_eq(brim_mctext_expiry(-1, now, &at), BRIM_MCTEXT_EXPIRY_NOW);
    ck_assert_int_eq(brim_mctext_expiry(INT32_MIN, now, &at),
                     BRIM_MCTEXT_EXPIRY_NOW);
    ck_assert_int_eq(brim_mctext_expiry(1, now, &at), BRIM_MCTEXT_EXPIRY_AT);
    ck_assert_uint_eq(at, now + 1);
    ck_assert_int_eq(brim_mctext_expiry(2592000, now, &at),
                     BRIM_MCTEXT_EXPIRY_AT);
    ck_assert_uint_eq(at, now + 2592000);
    /* Above 30 days: an absolute Unix time. */
    ck_assert_int_eq(brim_mctext_expiry(2592001, now, &at),
                     BRIM_MCTEXT_EXPIRY_NOW);
    ck_assert_int_eq(brim_mctext_expiry((int64_t) now, now, &at),
                     BRIM_MCTEXT_EXPIRY_NOW);
    ck_assert_int_eq(brim_mctext_expiry((int64_t) now + 1, now, &at),
                     BRIM_MCTEXT_EXPIRY_AT);
    ck_assert_uint_eq(at, now + 1);
    ck_assert_int_eq(brim_mctext_expiry(INT32_MAX, now, &at),
                     BRIM_MCTEXT_EXPIRY_AT);
    ck_assert_uint_eq(at, INT32_MAX);
}
END_TEST

/* Add TC, holding the one test FN, with the fixture, to S. The names are
 * read from the tcase_create("...") calls by tests/CMakeLists.txt. */
static void
add_case(Suite *s, TCase *tc, const TTest *fn)
{
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, fn);
    suite_add_tcase(s, tc);
}

Suite *
brim_test_suite(void)
{
    Suite *s;

    s = suite_create("mctext_rep");
    add_case(s, tcase_create("golden_replies"), mctext_golden_replies);
    add_case(s, tcase_create("golden_misc"), mctext_golden_misc);
    add_case(s, tcase_create("encode_nomem"), mctext_encode_nomem);
    add_case(s, tcase_create("expiry"), mctext_expiry);
    return s;
}
