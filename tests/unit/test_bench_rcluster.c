/*
 * tests/unit/test_bench_rcluster.c - brim-bench's Redis Cluster parts
 * without I/O (client/bench/rcluster.c, resp.c and the redis-cluster
 * adapter of proto_redis.c): CRC16 and hash slots against the values the
 * Redis cluster specification gives, hash tags, CLUSTER SLOTS replies
 * well formed and malformed, MOVED and ASK, and ASKING on the wire.
 */
#include "tests/support/check_main.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/bench/proto.h"
#include "client/bench/rcluster.h"
#include "client/bench/resp.h"
#include "proto/buf.h"

#define SLOT(s) brim_bench_rcluster_slot((s), strlen(s))

START_TEST(rcluster_crc16_known_values)
{
    /* The check value of CRC-16/XMODEM, and the specification's example. */
    ck_assert_uint_eq(brim_bench_rcluster_crc16("123456789", 9), 0x31C3);
    ck_assert_uint_eq(brim_bench_rcluster_crc16("", 0), 0);
    ck_assert_uint_eq(brim_bench_rcluster_crc16(NULL, 0), 0);
    ck_assert_uint_eq(brim_bench_rcluster_crc16("A", 1), 0x58E5);
    ck_assert_uint_eq(SLOT("foo"), 12182);
    ck_assert_uint_eq(SLOT("bar"), 5061);
    ck_assert_uint_eq(SLOT("hello"), 866);
    ck_assert_uint_eq(SLOT("123456789"), 0x31C3 & 16383);
}
END_TEST

START_TEST(rcluster_hash_tags)
{
    /* Only the tag is hashed: all three share "user1000"'s slot. */
    ck_assert_uint_eq(SLOT("{user1000}.following"), SLOT("user1000"));
    ck_assert_uint_eq(SLOT("{user1000}.followers"), SLOT("user1000"));
    ck_assert_uint_eq(SLOT("x{foo}y"), 12182);
    /* The first '{' and the first '}' after it. */
    ck_assert_uint_eq(SLOT("foo{bar}{zap}"), SLOT("bar"));
    ck_assert_uint_eq(SLOT("foo{{bar}}zap"), SLOT("{bar"));
    /* No tag: an empty one, an unclosed one, a '}' before the '{'. */
    ck_assert_uint_eq(SLOT("foo{}{bar}"),
                      brim_bench_rcluster_crc16("foo{}{bar}", 10) & 16383);
    ck_assert_uint_eq(SLOT("{foo"),
                      brim_bench_rcluster_crc16("{foo", 4) & 16383);
    ck_assert_uint_eq(SLOT("}foo{"),
                      brim_bench_rcluster_crc16("}foo{", 5) & 16383);
    ck_assert_uint_eq(brim_bench_rcluster_slot("", 0), 0);
}
END_TEST

static struct brim_bench_rcluster_map *
map_new(void)
{
    struct brim_bench_rcluster_map *m = malloc(sizeof(*m));

    ck_assert_ptr_nonnull(m);
    return m;
}

static int
map_parse(const char *reply, struct brim_bench_rcluster_map *m, char *why)
{
    why[0] = '\0';
    return brim_bench_rcluster_map_parse(reply, strlen(reply), "10.0.0.9", m,
                                         why);
}

/* Three masters, one with a replica, one with an empty IP, Redis 7's
 * fourth node field (the hostname map) on one. */
static const char three[] =
    "*3\r\n"
    "*4\r\n:0\r\n:5460\r\n"
    "*3\r\n$9\r\n127.0.0.1\r\n:33001\r\n$4\r\nid-a\r\n"
    "*3\r\n$9\r\n127.0.0.1\r\n:33004\r\n$4\r\nid-d\r\n"
    "*3\r\n:5461\r\n:10922\r\n"
    "*4\r\n$9\r\n127.0.0.1\r\n:33002\r\n$4\r\nid-b\r\n*0\r\n"
    "*3\r\n:10923\r\n:16383\r\n"
    "*3\r\n$0\r\n\r\n:33003\r\n$4\r\nid-c\r\n";

START_TEST(rcluster_slots_parse)
{
    struct brim_bench_rcluster_map *m = map_new();
    char                            why[BRIM_ERRBUF_LEN];

    ck_assert_int_eq(map_parse(three, m, why), 0);
    ck_assert_uint_eq(m->nmasters, 3);
    ck_assert_uint_eq(m->nranges, 3);
    ck_assert_str_eq(m->masters[0], "127.0.0.1:33001");
    ck_assert_str_eq(m->masters[1], "127.0.0.1:33002");
    ck_assert_str_eq(m->masters[2], "10.0.0.9:33003");
    ck_assert_uint_eq(m->owner[0], 0);
    ck_assert_uint_eq(m->owner[5460], 0);
    ck_assert_uint_eq(m->owner[5461], 1);
    ck_assert_uint_eq(m->owner[12182], 2);
    ck_assert_uint_eq(m->owner[16383], 2);
    /* A hole in the map: slots nobody serves. */
    ck_assert_int_eq(map_parse("*2\r\n"
                               "*3\r\n:0\r\n:99\r\n*2\r\n$1\r\na\r\n:1\r\n"
                               "*3\r\n:200\r\n:200\r\n*2\r\n$1\r\na\r\n:1\r\n",
                               m, why),
                     0);
    ck_assert_uint_eq(m->nmasters, 1);
    ck_assert_str_eq(m->masters[0], "a:1");
    ck_assert_uint_eq(m->owner[99], 0);
    ck_assert_uint_eq(m->owner[100], BRIM_BENCH_RCLUSTER_NONE);
    ck_assert_uint_eq(m->owner[200], 0);
    /* No slot assigned. */
    ck_assert_int_eq(map_parse("*0\r\n", m, why), BRIM_ENOTFOUND);
    free(m);
}
END_TEST

START_TEST(rcluster_slots_malformed)
{
    static const char *const bad[] = {
        "+OK\r\n",                  /* not an array */
        "*1\r\n:0\r\n",             /* entry no array */
        "*1\r\n*2\r\n:0\r\n:1\r\n", /* no master */
        "*1\r\n*3\r\n:0\r\n$1\r\n1\r\n*2\r\n$1\r\na\r\n:1\r\n", /* str slot */
        "*1\r\n*3\r\n:5\r\n:4\r\n*2\r\n$1\r\na\r\n:1\r\n", /* last < first */
        "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\na\r\n:1\r\n", /* past 16383 */
        "*1\r\n*3\r\n:-1\r\n:3\r\n*2\r\n$1\r\na\r\n:1\r\n",    /* negative */
        "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n:0\r\n",     /* port 0 */
        "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n:70000\r\n", /* port big */
        "*1\r\n*3\r\n:0\r\n:1\r\n*1\r\n$1\r\na\r\n",           /* no port */
        "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$-1\r\n:1\r\n",         /* null ip */
        "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n:7\r\n:1\r\n",          /* int ip */
        "*2\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n:1\r\n",     /* cut short */
        "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$5\r\na\r\n:1\r\n",  /* bulk overruns */
        "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n:1\r\nX", /* trailing */
        "*1\r\n*4\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n:1\r\n",  /* replica gone */
        "*1\r\n*3\r\n:0\r\n:1\r\n*3\r\n$1\r\na\r\n:1\r\n",  /* id gone */
        "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\na\r\n:1\n",    /* bare LF */
        "*1\r\n*3\r\n:0\r\n:x\r\n*2\r\n$1\r\na\r\n:1\r\n",  /* bad digits */
        "",
    };
    struct brim_bench_rcluster_map *m = map_new();
    char                            why[BRIM_ERRBUF_LEN];
    size_t                          i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(map_parse(bad[i], m, why) == BRIM_EBADREPLY,
                      "malformed reply %zu taken", i);
        ck_assert_msg(strncmp(why, "CLUSTER SLOTS: ", 15) == 0,
                      "reply %zu: no reason: \"%s\"", i, why);
    }
    /* Every prefix of a good reply is malformed, not a smaller map. */
    for (i = 0; i < sizeof(three) - 1; i++) {
        ck_assert_int_ne(brim_bench_rcluster_map_parse(three, i, "h", m, NULL),
                         0);
    }
    free(m);
}
END_TEST

START_TEST(rcluster_too_many_masters)
{
    struct brim_bench_rcluster_map *m = map_new();
    char                           *reply, *p;
    char                            why[BRIM_ERRBUF_LEN];
    int                             i, n = BRIM_BENCH_RCLUSTER_MASTERS_MAX + 1;

    reply = malloc((size_t) n * 64 + 16);
    ck_assert_ptr_nonnull(reply);
    p = reply + sprintf(reply, "*%d\r\n", n);
    for (i = 0; i < n; i++) {
        p += sprintf(p, "*3\r\n:%d\r\n:%d\r\n*2\r\n$1\r\nh\r\n:%d\r\n", i, i,
                     1000 + i);
    }
    ck_assert_int_eq(
        brim_bench_rcluster_map_parse(reply, strlen(reply), "h", m, why),
        BRIM_ENOSPACE);
    ck_assert_ptr_nonnull(strstr(why, "more than 64 masters"));
    free(reply);
    free(m);
}
END_TEST

static int
redirect(const char *s, struct brim_bench_rcluster_redirect *r)
{
    return brim_bench_rcluster_redirect_parse(s, strlen(s), r);
}

START_TEST(rcluster_moved_ask)
{
    struct brim_bench_rcluster_redirect r;

    ck_assert_int_eq(redirect("MOVED 3999 127.0.0.1:6381", &r), 0);
    ck_assert_int_eq(r.ask, 0);
    ck_assert_uint_eq(r.slot, 3999);
    ck_assert_uint_eq(r.addr_len, 14);
    ck_assert_mem_eq(r.addr, "127.0.0.1:6381", 14);
    ck_assert_int_eq(redirect("ASK 16383 ::1:33002", &r), 0);
    ck_assert_int_eq(r.ask, 1);
    ck_assert_uint_eq(r.slot, 16383);
    ck_assert_mem_eq(r.addr, "::1:33002", r.addr_len);
    ck_assert_int_eq(redirect("MOVED 0 :6379", &r), 0); /* host unknown */
    ck_assert_mem_eq(r.addr, ":6379", r.addr_len);

    /* Other errors are not redirects. */
    ck_assert_int_eq(redirect("ERR unknown command", &r), BRIM_ENOTFOUND);
    ck_assert_int_eq(redirect("MOVEDX 1 a:1", &r), BRIM_ENOTFOUND);
    ck_assert_int_eq(redirect("ASKING", &r), BRIM_ENOTFOUND);
    ck_assert_int_eq(redirect("", &r), BRIM_ENOTFOUND);
    /* Malformed ones break the stream. */
    ck_assert_int_eq(redirect("MOVED 16384 a:1", &r), BRIM_EBADREPLY);
    ck_assert_int_eq(redirect("MOVED -1 a:1", &r), BRIM_EBADREPLY);
    ck_assert_int_eq(redirect("MOVED x a:1", &r), BRIM_EBADREPLY);
    ck_assert_int_eq(redirect("MOVED 12", &r), BRIM_EBADREPLY);
    ck_assert_int_eq(redirect("MOVED 12 ", &r), BRIM_EBADREPLY);
    ck_assert_int_eq(redirect("ASK 12 host", &r), BRIM_EBADREPLY);
    ck_assert_int_eq(redirect("ASK 12 host:", &r), BRIM_EBADREPLY);
    ck_assert_int_eq(redirect("ASK 12 host:12x", &r), BRIM_EBADREPLY);
    ck_assert_int_eq(redirect("ASK 12 a:1 b:2", &r), BRIM_EBADREPLY);

    ck_assert_int_eq(
        brim_bench_rcluster_retryable("TRYAGAIN Multiple keys", 22), 1);
    ck_assert_int_eq(
        brim_bench_rcluster_retryable("CLUSTERDOWN The cluster is down", 31),
        1);
    ck_assert_int_eq(brim_bench_rcluster_retryable("CLUSTERDOWN", 11), 1);
    ck_assert_int_eq(brim_bench_rcluster_retryable("ERR x", 5), 0);
    ck_assert_int_eq(brim_bench_rcluster_retryable("TRYAGAINX", 9), 0);
}
END_TEST

START_TEST(rcluster_resp_skip)
{
    static const char v[] = "*2\r\n*1\r\n$3\r\nabc\r\n:5\r\n";
    char              deep[64];
    size_t            i;

    ck_assert_int_eq(brim_bench_resp_skip(v, sizeof(v) - 1),
                     (long) sizeof(v) - 1);
    for (i = 0; i < sizeof(v) - 1; i++) {
        ck_assert_int_eq(brim_bench_resp_skip(v, i), 0);
    }
    ck_assert_int_eq(brim_bench_resp_skip("$-1\r\n", 5), 5);
    ck_assert_int_eq(brim_bench_resp_skip("*-1\r\n", 5), 5);
    ck_assert_int_eq(brim_bench_resp_skip("$3\r\nabcX\n", 9), BRIM_EBADREPLY);
    ck_assert_int_eq(brim_bench_resp_skip("*-2\r\n", 5), BRIM_EBADREPLY);
    ck_assert_int_eq(brim_bench_resp_skip("?\r\n", 3), BRIM_EBADREPLY);
    /* Nesting is bounded. */
    memset(deep, 0, sizeof(deep));
    for (i = 0; i < BRIM_BENCH_RESP_DEPTH_MAX + 1; i++) {
        memcpy(deep + i * 4, "*1\r\n", 4);
    }
    memcpy(deep + i * 4, ":1\r\n", 4);
    ck_assert_int_eq(brim_bench_resp_skip(deep, strlen(deep)), BRIM_EBADREPLY);
}
END_TEST

/* The redis-cluster adapter: CLUSTER SLOTS and ASKING on the wire, and
 * the cluster's errors told apart. */
START_TEST(rcluster_adapter)
{
    const struct brim_bench_proto *p = &brim_bench_proto_redis_cluster;
    struct brim_bench_req          r;
    struct brim_bench_rep          rep;
    struct brim_buf                out;
    static const char              want[] =
        "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n"
        "*1\r\n$6\r\nASKING\r\n*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n";
    static const char moved[] = "-MOVED 12182 127.0.0.1:33003\r\n";
    static const char asked[] = "+OK\r\n$2\r\nhi\r\n";
    size_t            i;

    ck_assert_ptr_eq(brim_bench_proto_find("redis-cluster"), p);
    ck_assert_int_eq(p->slots, 1);
    ck_assert_int_eq(brim_bench_proto_redis.slots, 0);
    brim_buf_init(&out);
    memset(&r, 0, sizeof(r));
    r.kind = BRIM_BENCH_SLOTS;
    ck_assert_int_eq(p->encode(&out, NULL, &r, NULL, 0, NULL, 0), 0);
    r.kind = BRIM_BENCH_GET;
    r.asking = 1;
    ck_assert_int_eq(p->encode(&out, NULL, &r, "k1", 2, NULL, 0), 0);
    ck_assert_uint_eq(out.len, sizeof(want) - 1);
    ck_assert_mem_eq(out.data, want, out.len);
    brim_buf_destroy(&out);

    /* ASKING's +OK and the GET's reply are taken as one, never a part. */
    for (i = 0; i < sizeof(asked) - 1; i++) {
        ck_assert_int_eq(p->parse(NULL, asked, i, &r, &rep), 0);
    }
    ck_assert_int_eq(p->parse(NULL, asked, sizeof(asked) - 1, &r, &rep),
                     (long) sizeof(asked) - 1);
    ck_assert_int_eq(rep.status, 0);
    ck_assert_mem_eq(rep.value, "hi", 2);
    ck_assert_int_eq(p->parse(NULL, "$2\r\nhi\r\n", 8, &r, &rep),
                     BRIM_EBADREPLY); /* no ASKING reply first */

    r.asking = 0;
    ck_assert_int_eq(p->parse(NULL, moved, sizeof(moved) - 1, &r, &rep),
                     (long) sizeof(moved) - 1);
    ck_assert_int_eq(rep.status, BRIM_EMOVED);
    ck_assert_int_eq(rep.ask, 0);
    ck_assert_uint_eq(rep.slot, 12182);
    ck_assert_mem_eq(rep.addr, "127.0.0.1:33003", rep.addr_len);
    ck_assert_int_eq(p->parse(NULL, "-ASK 1 h:2\r\n", 12, &r, &rep), 12);
    ck_assert_int_eq(rep.status, BRIM_EMOVED);
    ck_assert_int_eq(rep.ask, 1);
    ck_assert_int_eq(p->parse(NULL, "-TRYAGAIN x\r\n", 13, &r, &rep), 13);
    ck_assert_int_eq(rep.status, BRIM_ERETRY);
    ck_assert_int_eq(p->parse(NULL, "-CLUSTERDOWN x\r\n", 16, &r, &rep), 16);
    ck_assert_int_eq(rep.status, BRIM_ERETRY);
    ck_assert_int_eq(p->parse(NULL, "-ERR x\r\n", 8, &r, &rep), 8);
    ck_assert_int_eq(rep.status, BRIM_EBADREQ);
    ck_assert_int_eq(p->parse(NULL, "-MOVED 1\r\n", 10, &r, &rep),
                     BRIM_EBADREPLY);

    /* CLUSTER SLOTS: the whole array is the value; a GET gets no array. */
    r.kind = BRIM_BENCH_SLOTS;
    ck_assert_int_eq(p->parse(NULL, three, sizeof(three) - 1, &r, &rep),
                     (long) sizeof(three) - 1);
    ck_assert_ptr_eq(rep.value, three);
    ck_assert_uint_eq(rep.value_len, sizeof(three) - 1);
    ck_assert_int_eq(p->parse(NULL, three, 20, &r, &rep), 0);
    r.kind = BRIM_BENCH_GET;
    ck_assert_int_eq(p->parse(NULL, "*0\r\n", 4, &r, &rep), BRIM_EBADREPLY);
}
END_TEST

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

    s = suite_create("bench_rcluster");
    add_case(s, tcase_create("crc16_known_values"),
             rcluster_crc16_known_values);
    add_case(s, tcase_create("hash_tags"), rcluster_hash_tags);
    add_case(s, tcase_create("slots_parse"), rcluster_slots_parse);
    add_case(s, tcase_create("slots_malformed"), rcluster_slots_malformed);
    add_case(s, tcase_create("too_many_masters"), rcluster_too_many_masters);
    add_case(s, tcase_create("moved_ask"), rcluster_moved_ask);
    add_case(s, tcase_create("resp_skip"), rcluster_resp_skip);
    add_case(s, tcase_create("adapter"), rcluster_adapter);
    return s;
}
