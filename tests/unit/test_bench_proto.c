/*
 * tests/unit/test_bench_proto.c - brim-bench's protocol adapters
 * (client/bench/proto_*.c): the exact bytes of requests, replies parsed
 * whole and cut at every byte (a prefix is never taken for a reply), error
 * replies (brim's with request id 0 too), streams out of step, the
 * evictions counters, and the node's limits from HELLO.
 */
#include "tests/support/check_main.h"

#include <stdint.h>
#include <string.h>

#include <msgpack.h>

#include "client/bench/proto.h"
#include "proto/buf.h"
#include "proto/wire.h"

static struct brim_buf out;

static void
setup(void)
{
    brim_buf_init(&out);
}

static void
teardown(void)
{
    brim_buf_destroy(&out);
}

static struct brim_bench_req
req_of(uint8_t kind, uint32_t ttl_s, uint64_t id)
{
    struct brim_bench_req r;

    memset(&r, 0, sizeof(r));
    r.kind = kind;
    r.ttl_s = ttl_s;
    r.id = id;
    return r;
}

/*
 * Parse TEXT (LEN bytes) as the reply to REQ with P: every proper prefix
 * must be incomplete, the whole must be taken entirely. Returns the reply.
 */
static struct brim_bench_rep
parse_whole(const struct brim_bench_proto *p, void *ctx, const char *text,
            size_t len, const struct brim_bench_req *req)
{
    struct brim_bench_rep rep;
    size_t                i;

    for (i = 0; i < len; i++) {
        ck_assert_msg(p->parse(ctx, text, i, req, &rep) == 0,
                      "prefix of %zu bytes taken as a reply", i);
    }
    ck_assert_int_eq(p->parse(ctx, text, len, req, &rep), (long) len);
    return rep;
}

#define PARSE(p, ctx, s, req) parse_whole((p), (ctx), (s), strlen(s), (req))

/* ---- memcached ---- */

START_TEST(proto_mc_requests)
{
    const struct brim_bench_proto *p = &brim_bench_proto_memcached;
    struct brim_bench_req          r;
    static const char              want[] =
        "get k1\r\nset k1 0 2 3\r\nabc\r\nset k2 0 0 0\r\n\r\n"
        "delete k1\r\nstats\r\n";

    r = req_of(BRIM_BENCH_GET, 0, 0);
    ck_assert_int_eq(p->encode(&out, NULL, &r, "k1", 2, NULL, 0), 0);
    r = req_of(BRIM_BENCH_SET, 2, 0);
    ck_assert_int_eq(p->encode(&out, NULL, &r, "k1", 2, "abc", 3), 0);
    r = req_of(BRIM_BENCH_SET, 0, 0);
    ck_assert_int_eq(p->encode(&out, NULL, &r, "k2", 2, "", 0), 0);
    r = req_of(BRIM_BENCH_DEL, 0, 0);
    ck_assert_int_eq(p->encode(&out, NULL, &r, "k1", 2, NULL, 0), 0);
    r = req_of(BRIM_BENCH_STATS, 0, 0);
    ck_assert_int_eq(p->encode(&out, NULL, &r, NULL, 0, NULL, 0), 0);
    ck_assert_uint_eq(out.len, sizeof(want) - 1);
    ck_assert_mem_eq(out.data, want, out.len);
}
END_TEST

START_TEST(proto_mc_replies)
{
    const struct brim_bench_proto *p = &brim_bench_proto_memcached;
    struct brim_bench_req          get, set, del;
    struct brim_bench_rep          rep;

    get = req_of(BRIM_BENCH_GET, 0, 0);
    set = req_of(BRIM_BENCH_SET, 0, 0);
    del = req_of(BRIM_BENCH_DEL, 0, 0);
    rep = PARSE(p, NULL, "VALUE k1 0 5\r\nab\r\nc\r\nEND\r\n", &get);
    ck_assert_int_eq(rep.status, 0);
    ck_assert_uint_eq(rep.value_len, 5);
    ck_assert_mem_eq(rep.value, "ab\r\nc", 5);
    rep = PARSE(p, NULL, "VALUE k1 7 0 123\r\n\r\nEND\r\n", &get);
    ck_assert_int_eq(rep.status, 0);
    ck_assert_uint_eq(rep.value_len, 0);
    rep = PARSE(p, NULL, "END\r\n", &get);
    ck_assert_int_eq(rep.status, BRIM_ENOTFOUND);
    rep = PARSE(p, NULL, "STORED\r\n", &set);
    ck_assert_int_eq(rep.status, 0);
    rep = PARSE(p, NULL, "DELETED\r\n", &del);
    ck_assert_int_eq(rep.status, 0);
    rep = PARSE(p, NULL, "NOT_FOUND\r\n", &del);
    ck_assert_int_eq(rep.status, BRIM_ENOTFOUND);
    rep = PARSE(p, NULL, "SERVER_ERROR out of memory storing object\r\n", &set);
    ck_assert_int_ne(rep.status, 0);
    ck_assert_int_ne(rep.status, BRIM_ENOTFOUND);
    ck_assert_uint_eq(rep.message_len, 41);
}
END_TEST

START_TEST(proto_mc_out_of_step)
{
    const struct brim_bench_proto *p = &brim_bench_proto_memcached;
    struct brim_bench_req          get, set;
    struct brim_bench_rep          rep;

    get = req_of(BRIM_BENCH_GET, 0, 0);
    set = req_of(BRIM_BENCH_SET, 0, 0);
    ck_assert_int_eq(p->parse(NULL, "STORED\r\n", 8, &get, &rep),
                     BRIM_EBADREPLY);
    ck_assert_int_eq(p->parse(NULL, "END\r\n", 5, &set, &rep), BRIM_EBADREPLY);
    ck_assert_int_eq(
        p->parse(NULL, "VALUE k 0 1\r\nxyEND\r\n\r\n", 22, &get, &rep),
        BRIM_EBADREPLY);
    ck_assert_int_eq(p->parse(NULL, "STORED\n", 7, &set, &rep), BRIM_EBADREPLY);
}
END_TEST

START_TEST(proto_mc_stats)
{
    const struct brim_bench_proto *p = &brim_bench_proto_memcached;
    struct brim_bench_req          st;
    struct brim_bench_rep          rep;

    st = req_of(BRIM_BENCH_STATS, 0, 0);
    rep = PARSE(p, NULL,
                "STAT pid 1\r\nSTAT evictions 42\r\nSTAT x y\r\n"
                "END\r\n",
                &st);
    ck_assert_int_eq(rep.status, 0);
    ck_assert_int_eq(rep.evictions, 42);
    rep = PARSE(p, NULL, "STAT pid 1\r\nEND\r\n", &st);
    ck_assert_int_eq(rep.evictions, -1);
}
END_TEST

/* ---- redis ---- */

START_TEST(proto_redis_requests)
{
    const struct brim_bench_proto *p = &brim_bench_proto_redis;
    struct brim_bench_req          r;
    static const char              want[] =
        "*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n"
        "*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$3\r\nabc\r\n"
        "*5\r\n$3\r\nSET\r\n$2\r\nk1\r\n$1\r\nx\r\n$2\r\nEX\r\n$2\r\n12\r\n"
        "*2\r\n$3\r\nDEL\r\n$2\r\nk1\r\n"
        "*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n";

    r = req_of(BRIM_BENCH_GET, 0, 0);
    ck_assert_int_eq(p->encode(&out, NULL, &r, "k1", 2, NULL, 0), 0);
    r = req_of(BRIM_BENCH_SET, 0, 0);
    ck_assert_int_eq(p->encode(&out, NULL, &r, "k1", 2, "abc", 3), 0);
    r = req_of(BRIM_BENCH_SET, 12, 0);
    ck_assert_int_eq(p->encode(&out, NULL, &r, "k1", 2, "x", 1), 0);
    r = req_of(BRIM_BENCH_DEL, 0, 0);
    ck_assert_int_eq(p->encode(&out, NULL, &r, "k1", 2, NULL, 0), 0);
    r = req_of(BRIM_BENCH_STATS, 0, 0);
    ck_assert_int_eq(p->encode(&out, NULL, &r, NULL, 0, NULL, 0), 0);
    ck_assert_uint_eq(out.len, sizeof(want) - 1);
    ck_assert_mem_eq(out.data, want, out.len);
}
END_TEST

START_TEST(proto_redis_replies)
{
    const struct brim_bench_proto *p = &brim_bench_proto_redis;
    struct brim_bench_req          get, set, del, st;
    struct brim_bench_rep          rep;

    get = req_of(BRIM_BENCH_GET, 0, 0);
    set = req_of(BRIM_BENCH_SET, 0, 0);
    del = req_of(BRIM_BENCH_DEL, 0, 0);
    st = req_of(BRIM_BENCH_STATS, 0, 0);
    rep = PARSE(p, NULL, "$5\r\nab\r\nc\r\n", &get);
    ck_assert_int_eq(rep.status, 0);
    ck_assert_uint_eq(rep.value_len, 5);
    ck_assert_mem_eq(rep.value, "ab\r\nc", 5);
    rep = PARSE(p, NULL, "$-1\r\n", &get);
    ck_assert_int_eq(rep.status, BRIM_ENOTFOUND);
    rep = PARSE(p, NULL, "+OK\r\n", &set);
    ck_assert_int_eq(rep.status, 0);
    rep = PARSE(p, NULL, ":1\r\n", &del);
    ck_assert_int_eq(rep.status, 0);
    rep = PARSE(p, NULL, ":0\r\n", &del);
    ck_assert_int_eq(rep.status, BRIM_ENOTFOUND);
    rep = PARSE(p, NULL, "-OOM command not allowed\r\n", &set);
    ck_assert_int_ne(rep.status, 0);
    ck_assert_uint_eq(rep.message_len, 23);
    rep = PARSE(p, NULL,
                "$42\r\n# Stats\r\nexpired_keys:3\r\nevicted_keys:"
                "17\r\n\r\n",
                &st);
    ck_assert_int_eq(rep.evictions, 17);
    /* Out of step: a reply of the wrong type for the request. */
    ck_assert_int_eq(p->parse(NULL, "+OK\r\n", 5, &get, &rep), BRIM_EBADREPLY);
    ck_assert_int_eq(p->parse(NULL, "$1\r\nab\r\n", 8, &get, &rep),
                     BRIM_EBADREPLY);
    ck_assert_int_eq(p->parse(NULL, "*1\r\n", 4, &get, &rep), BRIM_EBADREPLY);
}
END_TEST

/* ---- brim ---- */

START_TEST(proto_brim_request_round_trip)
{
    const struct brim_bench_proto *p = &brim_bench_proto_brim;
    struct brim_wire_limits        lim;
    struct brim_bench_req          r;
    struct brim_req                dec;
    msgpack_zone                   zone;
    void                          *ctx;

    ck_assert_int_eq(p->open(&ctx), 0);
    brim_wire_limits_default(&lim);
    ck_assert(msgpack_zone_init(&zone, 1024));
    r = req_of(BRIM_BENCH_SET, 2, 77);
    ck_assert_int_eq(p->encode(&out, ctx, &r, "key", 3, "value", 5), 0);
    ck_assert_int_eq(
        brim_wire_parse_req(out.data + 4, out.len - 4, &lim, &zone, &dec, NULL),
        0);
    ck_assert_uint_eq(dec.op, BRIM_OP_SET);
    ck_assert_uint_eq(dec.request_id, 77);
    ck_assert_uint_eq(dec.ttl_s, 2);
    ck_assert_mem_eq(dec.key, "key", 3);
    ck_assert_mem_eq(dec.value, "value", 5);
    brim_buf_truncate(&out, 0);
    r = req_of(BRIM_BENCH_HELLO, 0, 1);
    ck_assert_int_eq(p->encode(&out, ctx, &r, NULL, 0, NULL, 0), 0);
    ck_assert_int_eq(
        brim_wire_parse_req(out.data + 4, out.len - 4, &lim, &zone, &dec, NULL),
        0);
    ck_assert_uint_eq(dec.op, BRIM_OP_HELLO);
    ck_assert_uint_eq(dec.hello.role, BRIM_ROLE_CLIENT);
    ck_assert_uint_eq(dec.hello.version, BRIM_WIRE_VERSION);
    msgpack_zone_destroy(&zone);
    p->close(ctx);
}
END_TEST

START_TEST(proto_brim_replies)
{
    const struct brim_bench_proto *p = &brim_bench_proto_brim;
    struct brim_bench_req          get;
    struct brim_bench_rep          rep;
    struct brim_rep                r;
    void                          *ctx;

    ck_assert_int_eq(p->open(&ctx), 0);
    get = req_of(BRIM_BENCH_GET, 0, 9);
    memset(&r, 0, sizeof(r));
    r.request_id = 9;
    r.value = "hello";
    r.value_len = 5;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_GET, &r), 0);
    rep = parse_whole(p, ctx, out.data, out.len, &get);
    ck_assert_int_eq(rep.status, 0);
    ck_assert_uint_eq(rep.value_len, 5);
    ck_assert_mem_eq(rep.value, "hello", 5);
    brim_buf_truncate(&out, 0);
    ck_assert_int_eq(brim_wire_encode_status(&out, 9, BRIM_ENOTFOUND, "no", 2),
                     0);
    rep = parse_whole(p, ctx, out.data, out.len, &get);
    ck_assert_int_eq(rep.status, BRIM_ENOTFOUND);
    /* A reply to another request id: out of step. */
    get.id = 10;
    ck_assert_int_eq(p->parse(ctx, out.data, out.len, &get, &rep),
                     BRIM_EBADREPLY);
    p->close(ctx);
}
END_TEST

/*
 * An error reply with request id 0 ("unknown": brim-node's answer to a
 * frame above its max_frame_bytes, before it closes) answers the oldest
 * request, with the node's status and message; an OK reply with id 0
 * stays out of step.
 */
START_TEST(proto_brim_unknown_id)
{
    const struct brim_bench_proto *p = &brim_bench_proto_brim;
    static const char              msg[] = "frame above max_frame_bytes";
    struct brim_bench_req          set;
    struct brim_bench_rep          rep;
    struct brim_rep                r;
    void                          *ctx;

    ck_assert_int_eq(p->open(&ctx), 0);
    set = req_of(BRIM_BENCH_SET, 0, 5);
    ck_assert_int_eq(
        brim_wire_encode_status(&out, 0, BRIM_ETOOBIG, msg, sizeof(msg) - 1),
        0);
    rep = parse_whole(p, ctx, out.data, out.len, &set);
    ck_assert_int_eq(rep.status, BRIM_ETOOBIG);
    ck_assert_uint_eq(rep.message_len, sizeof(msg) - 1);
    ck_assert_mem_eq(rep.message, msg, sizeof(msg) - 1);
    brim_buf_truncate(&out, 0);
    memset(&r, 0, sizeof(r));
    r.request_id = 0;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_SET, &r), 0);
    ck_assert_int_eq(p->parse(ctx, out.data, out.len, &set, &rep),
                     BRIM_EBADREPLY);
    p->close(ctx);
}
END_TEST

/* HELLO's OK reply hands the node's key and value limits to the caller
 * (brim-bench refuses options above them); other replies carry none. */
START_TEST(proto_brim_hello_limits)
{
    const struct brim_bench_proto *p = &brim_bench_proto_brim;
    struct brim_bench_req          hello, get;
    struct brim_bench_rep          rep;
    struct brim_rep                r;
    void                          *ctx;

    ck_assert_int_eq(p->open(&ctx), 0);
    hello = req_of(BRIM_BENCH_HELLO, 0, 1);
    memset(&r, 0, sizeof(r));
    r.request_id = 1;
    r.hello.version = BRIM_WIRE_VERSION;
    r.hello.role = BRIM_ROLE_NODE;
    r.hello.name = "n1";
    r.hello.name_len = 2;
    brim_wire_limits_default(&r.limits);
    r.limits.max_key_bytes = 16;
    r.limits.max_value_bytes = 4096;
    r.limits.max_frame_bytes = 4096 + 16 + 1024;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_HELLO, &r), 0);
    rep = parse_whole(p, ctx, out.data, out.len, &hello);
    ck_assert_int_eq(rep.status, 0);
    ck_assert_uint_eq(rep.max_key_bytes, 16);
    ck_assert_uint_eq(rep.max_value_bytes, 4096);
    brim_buf_truncate(&out, 0);
    get = req_of(BRIM_BENCH_GET, 0, 2);
    ck_assert_int_eq(brim_wire_encode_status(&out, 2, BRIM_ENOTFOUND, "", 0),
                     0);
    rep = parse_whole(p, ctx, out.data, out.len, &get);
    ck_assert_uint_eq(rep.max_key_bytes, 0);
    ck_assert_uint_eq(rep.max_value_bytes, 0);
    p->close(ctx);
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

    s = suite_create("bench_proto");
    add_case(s, tcase_create("mc_requests"), proto_mc_requests);
    add_case(s, tcase_create("mc_replies"), proto_mc_replies);
    add_case(s, tcase_create("mc_out_of_step"), proto_mc_out_of_step);
    add_case(s, tcase_create("mc_stats"), proto_mc_stats);
    add_case(s, tcase_create("redis_requests"), proto_redis_requests);
    add_case(s, tcase_create("redis_replies"), proto_redis_replies);
    add_case(s, tcase_create("brim_request_round_trip"),
             proto_brim_request_round_trip);
    add_case(s, tcase_create("brim_replies"), proto_brim_replies);
    add_case(s, tcase_create("brim_unknown_id"), proto_brim_unknown_id);
    add_case(s, tcase_create("brim_hello_limits"), proto_brim_hello_limits);
    return s;
}
