/*
 * tests/cluster/client_ops.c - every libbrim call against a real brim-node
 * on a loopback port: round trips (binary-safe), the conditional writes,
 * counters, TTL expiry, MGET/MSET across the MGET key limit and the reply
 * frame limit, FLUSH, STATS, and the failure paths a real node can show
 * (refused connection, a node stopped with SIGSTOP, a node restarted).
 * Each test gets its own node (a checked fixture: the node is a child of
 * the test's process, which stops it, and dies with it at worst).
 */
#include "tests/support/check_main.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <brim.h>

#include "tests/cluster/client_node.h"

static struct client_node node; /* the TCase's node */

static void
node_setup(void)
{
    client_node_start(&node, NULL);
}

static void
node_teardown(void)
{
    client_node_stop(&node);
}

/* A connected client; ADMIN as brim_opts.admin. */
static struct brim_client *
connect_to(const char *addr, int admin, uint32_t request_timeout_ms)
{
    struct brim_client *c;
    struct brim_opts    opts;
    char                err[BRIM_ERRBUF_LEN];
    int                 rc;

    memset(&opts, 0, sizeof(opts));
    opts.server_addr = addr;
    opts.admin = admin;
    opts.request_timeout_ms = request_timeout_ms;
    err[0] = '\0';
    rc = brim_connect(&opts, &c, err);
    ck_assert_msg(rc == 0, "connect %s: %s: %s", addr, brim_err_name(rc), err);
    return c;
}

#define ck_rc(expr, want)                                                      \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        ck_assert_msg(rc_ == (want), "%s: got %s, want %s (%s)", #expr,        \
                      brim_err_name(rc_), brim_err_name(want),                 \
                      brim_errmsg(c));                                         \
    } while (0)

/* Assert that KEY holds exactly WANT (WANT_LEN bytes). */
static void
expect_value(struct brim_client *c, const char *key, const void *want,
             size_t want_len)
{
    void  *val;
    size_t len;

    ck_rc(brim_get(c, key, strlen(key), &val, &len), 0);
    ck_assert_uint_eq(len, want_len);
    if (want_len > 0) {
        ck_assert_mem_eq(val, want, want_len);
    }
    ck_assert_int_eq(((char *) val)[len], '\0');
    brim_free(val);
}

static void
expect_missing(struct brim_client *c, const char *key)
{
    void  *val = NULL;
    size_t len = 7;

    ck_rc(brim_get(c, key, strlen(key), &val, &len), BRIM_ENOTFOUND);
    ck_assert_ptr_null(val); /* out-parameters untouched */
    ck_assert_uint_eq(len, 7);
}

START_TEST(client_roundtrip_binary)
{
    struct brim_client *c;
    unsigned char       bin[256], key[250];
    char               *big;
    void               *val;
    size_t              len, i, max;
    uint64_t            cas, cas2;
    uint32_t            flags;

    c = connect_to(node.addr, 0, 0);
    for (i = 0; i < sizeof(bin); i++) {
        bin[i] = (unsigned char) i; /* NULs and high bytes included */
    }
    for (i = 0; i < sizeof(key); i++) {
        key[i] = (unsigned char) (255 - i);
    }
    cas = 0;
    ck_rc(brim_set(c, key, sizeof(key), bin, sizeof(bin), 0, 0xdeadbeef, &cas),
          0);
    ck_assert_uint_ne(cas, 0);
    ck_rc(brim_get_ex(c, key, sizeof(key), &val, &len, &flags, &cas2), 0);
    ck_assert_uint_eq(len, sizeof(bin));
    ck_assert_mem_eq(val, bin, sizeof(bin));
    ck_assert_uint_eq(flags, 0xdeadbeef);
    ck_assert_uint_eq(cas2, cas);
    brim_free(val);

    /* The empty value, and the largest one the node takes. */
    ck_rc(brim_set(c, "empty", 5, NULL, 0, 0, 0, NULL), 0);
    expect_value(c, "empty", "", 0);
    max = brim_value_max(c);
    ck_assert_uint_eq(max, BRIM_VALUE_MAX);
    big = malloc(max + 1);
    ck_assert_ptr_nonnull(big);
    for (i = 0; i < max + 1; i++) {
        big[i] = (char) (i * 7);
    }
    ck_rc(brim_set(c, "big", 3, big, max, 0, 0, NULL), 0);
    expect_value(c, "big", big, max);
    ck_rc(brim_set(c, "big", 3, big, max + 1, 0, 0, NULL), BRIM_ETOOBIG);
    expect_value(c, "big", big, max); /* unchanged */
    free(big);

    /* Bad keys are refused before anything is sent. */
    ck_rc(brim_set(c, key, 0, "x", 1, 0, 0, NULL), BRIM_EINVAL);
    ck_rc(brim_set(c, NULL, 3, "x", 1, 0, 0, NULL), BRIM_EINVAL);
    ck_rc(brim_get(c, "x", 1, NULL, &len), BRIM_EINVAL);
    big = calloc(1, 251);
    ck_rc(brim_set(c, big, 251, "x", 1, 0, 0, NULL), BRIM_EINVAL);
    free(big);
    ck_rc(brim_ping(c), 0);
    brim_close(c);
}
END_TEST

START_TEST(client_add_replace)
{
    struct brim_client *c;

    c = connect_to(node.addr, 0, 0);
    ck_rc(brim_add(c, "a", 1, "one", 3, 0, 0, NULL), 0);
    ck_rc(brim_add(c, "a", 1, "two", 3, 0, 0, NULL), BRIM_ENOTSTORED);
    expect_value(c, "a", "one", 3);
    ck_rc(brim_replace(c, "r", 1, "one", 3, 0, 0, NULL), BRIM_ENOTSTORED);
    expect_missing(c, "r");
    ck_rc(brim_replace(c, "a", 1, "three", 5, 0, 9, NULL), 0);
    expect_value(c, "a", "three", 5);
    brim_close(c);
}
END_TEST

START_TEST(client_cas)
{
    struct brim_client *c;
    void               *val;
    size_t              len;
    uint64_t            cas, cas2, cas3;

    c = connect_to(node.addr, 0, 0);
    ck_rc(brim_cas(c, "k", 1, "v", 1, 0, 0, 12345, NULL), BRIM_ENOTFOUND);
    ck_rc(brim_set(c, "k", 1, "v1", 2, 0, 0, &cas), 0);
    ck_rc(brim_get_ex(c, "k", 1, &val, &len, NULL, &cas2), 0);
    brim_free(val);
    ck_assert_uint_eq(cas, cas2);
    ck_rc(brim_cas(c, "k", 1, "v2", 2, 0, 0, cas2, &cas3), 0);
    ck_assert_uint_ne(cas3, cas2);
    ck_rc(brim_cas(c, "k", 1, "v3", 2, 0, 0, cas2, NULL), BRIM_EEXISTS);
    expect_value(c, "k", "v2", 2);
    brim_close(c);
}
END_TEST

START_TEST(client_append_prepend)
{
    struct brim_client *c;
    void               *val;
    size_t              len;
    uint32_t            flags;
    uint64_t            cas;

    c = connect_to(node.addr, 0, 0);
    ck_rc(brim_append(c, "ap", 2, "x", 1, NULL), BRIM_ENOTSTORED);
    ck_rc(brim_prepend(c, "ap", 2, "x", 1, NULL), BRIM_ENOTSTORED);
    expect_missing(c, "ap");
    ck_rc(brim_set(c, "ap", 2, "b\0", 2, 0, 77, NULL), 0);
    ck_rc(brim_append(c, "ap", 2, "c", 1, &cas), 0);
    ck_assert_uint_ne(cas, 0);
    ck_rc(brim_prepend(c, "ap", 2, "a", 1, NULL), 0);
    ck_rc(brim_get_ex(c, "ap", 2, &val, &len, &flags, NULL), 0);
    ck_assert_uint_eq(len, 4);
    ck_assert_mem_eq(val, "ab\0c", 4);
    ck_assert_uint_eq(flags, 77); /* kept */
    brim_free(val);
    brim_close(c);
}
END_TEST

START_TEST(client_incr_decr)
{
    struct brim_client *c;
    uint64_t            n;

    c = connect_to(node.addr, 0, 0);
    ck_rc(brim_incr(c, "n", 1, 1, &n), BRIM_ENOTFOUND);
    ck_rc(brim_set(c, "n", 1, "10", 2, 0, 0, NULL), 0);
    ck_rc(brim_incr(c, "n", 1, 5, &n), 0);
    ck_assert_uint_eq(n, 15);
    expect_value(c, "n", "15", 2);
    ck_rc(brim_decr(c, "n", 1, 20, &n), 0);
    ck_assert_uint_eq(n, 0);       /* floors at 0 */
    expect_value(c, "n", "0 ", 2); /* padded to the old length, as memcached */
    ck_rc(brim_incr(c, "n", 1, 18446744073709551615u, &n), 0);
    ck_assert_uint_eq(n, 18446744073709551615u);
    ck_rc(brim_set(c, "s", 1, "abc", 3, 0, 0, NULL), 0);
    ck_rc(brim_incr(c, "s", 1, 1, &n), BRIM_ENONUMERIC);
    ck_rc(brim_decr(c, "s", 1, 1, NULL), BRIM_ENONUMERIC);
    expect_value(c, "s", "abc", 3);
    brim_close(c);
}
END_TEST

START_TEST(client_touch_ttl)
{
    struct brim_client *c;
    void               *val;
    size_t              len;

    /* The node counts TTLs in whole seconds of the Unix clock (as
     * memcached does): a TTL of N s ends N-1 to N s after the write. So a
     * key checked before it expires gets 2 s, and the check after waits
     * 3 s. */
    c = connect_to(node.addr, 0, 0);
    ck_rc(brim_set(c, "t1", 2, "x", 1, 2, 0, NULL), 0); /* 2 s */
    ck_rc(brim_set(c, "t2", 2, "y", 1, 0, 0, NULL), 0); /* none */
    ck_rc(brim_set(c, "t3", 2, "z", 1, 0, 0, NULL), 0);
    ck_rc(brim_set(c, "t4", 2, "w", 1, 2, 0, NULL), 0);
    ck_rc(brim_set(c, "t5", 2, "v", 1, 1, 0, NULL), 0); /* 1 s */
    ck_rc(brim_touch(c, "t2", 2, 1), 0);
    ck_rc(brim_touch(c, "nope", 4, 1), BRIM_ENOTFOUND);
    ck_rc(brim_gat(c, "t3", 2, 1, &val, &len, NULL, NULL), 0);
    ck_assert_uint_eq(len, 1);
    ck_assert_mem_eq(val, "z", 1);
    brim_free(val);
    ck_rc(brim_touch(c, "t4", 2, 0), 0); /* no expiry */
    ck_rc(brim_gat(c, "nope", 4, 1, NULL, NULL, NULL, NULL), BRIM_ENOTFOUND);
    expect_value(c, "t1", "x", 1);
    sleep(3); /* every TTL above has passed */
    expect_missing(c, "t1");
    expect_missing(c, "t2");
    expect_missing(c, "t3");
    expect_value(c, "t4", "w", 1);
    expect_missing(c, "t5");
    brim_close(c);
}
END_TEST

START_TEST(client_del)
{
    struct brim_client *c;

    c = connect_to(node.addr, 0, 0);
    ck_rc(brim_set(c, "d", 1, "x", 1, 0, 0, NULL), 0);
    ck_rc(brim_del(c, "d", 1), 0);
    expect_missing(c, "d");
    ck_rc(brim_del(c, "d", 1), BRIM_ENOTFOUND);
    brim_close(c);
}
END_TEST

#define MANY 3000 /* well above one MGET's 1024 keys */

START_TEST(client_mget_mset)
{
    struct brim_client      *c;
    struct brim_item        *items;
    struct brim_key         *keys;
    struct brim_mget_result *res;
    char(*kbuf)[32], (*vbuf)[48];
    size_t i, n;

    c = connect_to(node.addr, 0, 0);
    kbuf = calloc(MANY, sizeof(*kbuf));
    vbuf = calloc(MANY, sizeof(*vbuf));
    items = calloc(MANY, sizeof(*items));
    n = MANY + 3;
    keys = calloc(n, sizeof(*keys));
    res = calloc(n, sizeof(*res));
    for (i = 0; i < MANY; i++) {
        snprintf(kbuf[i], sizeof(kbuf[i]), "mkey:%zu", i);
        snprintf(vbuf[i], sizeof(vbuf[i]), "value of %zu", i * 31);
        items[i].key = kbuf[i];
        items[i].key_len = strlen(kbuf[i]);
        items[i].val = vbuf[i];
        items[i].val_len = strlen(vbuf[i]);
        items[i].flags = (uint32_t) i;
        items[i].status = 99;
        keys[i].key = kbuf[i];
        keys[i].key_len = strlen(kbuf[i]);
    }
    ck_rc(brim_mset(c, items, MANY), 0);
    for (i = 0; i < MANY; i++) {
        ck_assert_msg(items[i].status == 0, "item %zu: %s", i,
                      brim_err_name(items[i].status));
        ck_assert_uint_ne(items[i].cas, 0);
    }
    keys[MANY].key = "missing";
    keys[MANY].key_len = 7;
    keys[MANY + 1].key = ""; /* invalid: empty */
    keys[MANY + 1].key_len = 0;
    keys[MANY + 2] = keys[5]; /* a duplicate */
    ck_rc(brim_mget(c, keys, n, res), 0);
    for (i = 0; i < MANY; i++) {
        ck_assert_msg(res[i].status == 0, "key %zu: %s", i,
                      brim_err_name(res[i].status));
        ck_assert_uint_eq(res[i].val_len, strlen(vbuf[i]));
        ck_assert_mem_eq(res[i].val, vbuf[i], res[i].val_len);
        ck_assert_uint_eq(res[i].flags, (uint32_t) i);
        ck_assert_uint_eq(res[i].cas, items[i].cas);
    }
    ck_assert_int_eq(res[MANY].status, BRIM_ENOTFOUND);
    ck_assert_ptr_null(res[MANY].val);
    ck_assert_int_eq(res[MANY + 1].status, BRIM_EINVAL);
    /* Returned 0, one key refused: brim_errmsg() says why (brim.h). */
    ck_assert_msg(strstr(brim_errmsg(c), "key is 0 bytes") != NULL,
                  "errmsg: \"%s\"", brim_errmsg(c));
    ck_assert_int_eq(res[MANY + 2].status, 0);
    ck_assert_mem_eq(res[MANY + 2].val, vbuf[5], strlen(vbuf[5]));
    brim_mget_free(res, n);
    ck_assert_ptr_null(res[0].val);
    ck_rc(brim_mget(c, keys, 0, res), 0);
    ck_assert_str_eq(brim_errmsg(c), ""); /* succeeded in full */
    ck_rc(brim_mset(c, items, 0), 0);
    free(kbuf);
    free(vbuf);
    free(items);
    free(keys);
    free(res);
    brim_close(c);
}
END_TEST

#define BIG_N 40 /* 40 x 100 KiB: above one reply frame */
#define BIG_LEN (100u << 10)

START_TEST(client_mget_big_values)
{
    struct brim_client     *c;
    struct brim_item        items[BIG_N];
    struct brim_key         keys[BIG_N];
    struct brim_mget_result res[BIG_N];
    char                    kbuf[BIG_N][16], *v;
    size_t                  i;

    c = connect_to(node.addr, 0, 0);
    v = malloc(BIG_LEN * BIG_N);
    ck_assert_ptr_nonnull(v);
    memset(items, 0, sizeof(items));
    for (i = 0; i < BIG_N; i++) {
        snprintf(kbuf[i], sizeof(kbuf[i]), "big:%zu", i);
        memset(v + i * BIG_LEN, (int) ('a' + i % 26), BIG_LEN);
        items[i].key = kbuf[i];
        items[i].key_len = strlen(kbuf[i]);
        items[i].val = v + i * BIG_LEN;
        items[i].val_len = BIG_LEN;
        keys[i].key = kbuf[i];
        keys[i].key_len = strlen(kbuf[i]);
    }
    ck_rc(brim_mset(c, items, BIG_N), 0);
    ck_rc(brim_mget(c, keys, BIG_N, res), 0);
    for (i = 0; i < BIG_N; i++) {
        ck_assert_msg(res[i].status == 0, "key %zu: %s", i,
                      brim_err_name(res[i].status));
        ck_assert_uint_eq(res[i].val_len, BIG_LEN);
        ck_assert_mem_eq(res[i].val, v + i * BIG_LEN, BIG_LEN);
    }
    brim_mget_free(res, BIG_N);
    free(v);
    brim_close(c);
}
END_TEST

START_TEST(client_flush)
{
    struct brim_client *c, *admin;

    c = connect_to(node.addr, 0, 0);
    admin = connect_to(node.addr, 1, 0);
    ck_rc(brim_set(c, "f1", 2, "x", 1, 0, 0, NULL), 0);
    ck_rc(brim_set(c, "f2", 2, "y", 1, 0, 0, NULL), 0);
    ck_rc(brim_flush(c, 0), BRIM_EDENIED); /* role client */
    expect_value(c, "f1", "x", 1);
    ck_assert_int_eq(brim_flush(admin, 0), 0);
    expect_missing(c, "f1");
    expect_missing(c, "f2");
    ck_rc(brim_set(c, "f3", 2, "z", 1, 0, 0, NULL), 0); /* usable after */
    expect_value(c, "f3", "z", 1);
    brim_close(admin);
    brim_close(c);
}
END_TEST

/* What client_stats counts. */
struct stats_seen {
    int      n;         /* pairs seen */
    int      have_keys; /* "keys" was one */
    uint64_t keys;      /* its value */
    int      sections;  /* pairs inside a section */
    int      bad;       /* a pair without name or text */
};

static int
stats_cb(const struct brim_stat *st, void *arg)
{
    struct stats_seen *s = arg;

    s->n++;
    if (st->name == NULL || st->text == NULL || st->node == NULL) {
        s->bad++;
    }
    if (st->section != NULL) {
        s->sections++;
    } else if (strcmp(st->name, "keys") == 0 && st->kind == BRIM_STAT_U64) {
        s->have_keys = 1;
        s->keys = st->u64;
    }
    return 0;
}

static int
stats_stop_cb(const struct brim_stat *st, void *arg)
{
    (void) st;
    return ++*(int *) arg == 3 ? 42 : 0;
}

START_TEST(client_stats)
{
    struct brim_client *c;
    struct stats_seen   s;
    int                 calls;

    c = connect_to(node.addr, 0, 0);
    ck_rc(brim_set(c, "s1", 2, "x", 1, 0, 0, NULL), 0);
    ck_rc(brim_set(c, "s2", 2, "x", 1, 0, 0, NULL), 0);
    memset(&s, 0, sizeof(s));
    ck_rc(brim_stats(c, NULL, stats_cb, &s), 0);
    ck_assert_int_gt(s.n, 5);
    ck_assert_int_eq(s.bad, 0);
    ck_assert_int_eq(s.have_keys, 1);
    ck_assert_uint_eq(s.keys, 2);
    calls = 0;
    ck_rc(brim_stats(c, NULL, stats_stop_cb, &calls), 42);
    ck_assert_int_eq(calls, 3);
    ck_rc(brim_stats(c, NULL, NULL, NULL), BRIM_EINVAL);
    ck_rc(brim_ping(c), 0); /* the handle is still fine */
    brim_close(c);
}
END_TEST

START_TEST(client_connect_refused)
{
    struct brim_client *c = NULL;
    struct brim_opts    opts;
    char                addr[32], err[BRIM_ERRBUF_LEN];
    int                 rc;

    snprintf(addr, sizeof(addr), "127.0.0.1:%d", client_free_port());
    memset(&opts, 0, sizeof(opts));
    opts.server_addr = addr;
    rc = brim_connect(&opts, &c, err);
    ck_assert_msg(rc == BRIM_ECONNREFUSED, "got %s", brim_err_name(rc));
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(err, addr) != NULL, "errbuf: %s", err);
    opts.server_addr = "no-port";
    ck_assert_int_eq(brim_connect(&opts, &c, err), BRIM_EINVAL);
    opts.server_addr = "127.0.0.1:70000";
    ck_assert_int_eq(brim_connect(&opts, &c, err), BRIM_EINVAL);
    opts.server_addr = NULL;
    ck_assert_int_eq(brim_connect(&opts, &c, err), BRIM_EINVAL);
    opts.server_addr = node.addr;
    opts.coord_addr = "127.0.0.1:1"; /* both: refused */
    ck_assert_int_eq(brim_connect(&opts, &c, err), BRIM_EINVAL);
    ck_assert_ptr_null(c);
}
END_TEST

START_TEST(client_timeout_silent_listener)
{
    struct brim_client *c = NULL;
    struct brim_opts    opts;
    struct client_fake  f;
    char                err[BRIM_ERRBUF_LEN];
    int64_t             t0, dt;
    int                 rc;

    /* Accepts (the kernel does) and never says a word, not even HELLO. */
    client_fake_start(&f, NULL, NULL);
    f.answer_hello = 0;
    memset(&opts, 0, sizeof(opts));
    opts.server_addr = f.addr;
    opts.connect_timeout_ms = 300;
    t0 = client_now_ms();
    rc = brim_connect(&opts, &c, err);
    dt = client_now_ms() - t0;
    ck_assert_msg(rc == BRIM_ETIMEDOUT, "got %s", brim_err_name(rc));
    ck_assert_msg(dt >= 250 && dt < 1500, "took %" PRId64 " ms", dt);
    ck_assert_msg(strstr(err, f.addr) != NULL, "errbuf: %s", err);
    client_fake_stop(&f);
}
END_TEST

START_TEST(client_timeout_stopped_node)
{
    struct brim_client *c;
    void               *val;
    size_t              len;
    int64_t             t0, dt;
    int                 rc;

    c = connect_to(node.addr, 0, 400);
    ck_rc(brim_set(c, "k", 1, "v", 1, 0, 0, NULL), 0);
    ck_assert_int_eq(kill(node.pid, SIGSTOP), 0);
    t0 = client_now_ms();
    rc = brim_get(c, "k", 1, &val, &len);
    dt = client_now_ms() - t0;
    kill(node.pid, SIGCONT);
    ck_assert_msg(rc == BRIM_ETIMEDOUT, "got %s", brim_err_name(rc));
    ck_assert_msg(dt >= 350 && dt < 2000, "took %" PRId64 " ms", dt);
    /* The next call reconnects and works. */
    expect_value(c, "k", "v", 1);
    brim_close(c);
}
END_TEST

START_TEST(client_reconnect_after_restart)
{
    struct brim_client *c;
    uint64_t            n;

    c = connect_to(node.addr, 0, 0);
    ck_rc(brim_set(c, "r", 1, "5", 1, 0, 0, NULL), 0);
    client_node_stop(&node);
    client_node_start_on(&node, NULL);
    /* A new, empty node: the dead connection is noticed before sending,
     * so even a non-idempotent op goes through on a new one. */
    ck_rc(brim_incr(c, "r", 1, 1, &n), BRIM_ENOTFOUND);
    ck_rc(brim_set(c, "r", 1, "5", 1, 0, 0, NULL), 0);
    ck_rc(brim_incr(c, "r", 1, 1, &n), 0);
    ck_assert_uint_eq(n, 6);
    /* With the node gone, calls fail fast and say where. */
    client_node_stop(&node);
    ck_rc(brim_ping(c), BRIM_ECONNREFUSED);
    ck_assert_msg(strstr(brim_errmsg(c), node.addr) != NULL, "errmsg: %s",
                  brim_errmsg(c));
    client_node_start_on(&node, NULL);
    ck_rc(brim_ping(c), 0);
    brim_close(c);
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s;
    TCase *tc;

    s = suite_create("client_ops");

#define CLIENT_CASE(tcase, fn, timeout)                                        \
    tc = (tcase);                                                              \
    tcase_add_checked_fixture(tc, node_setup, node_teardown);                  \
    tcase_set_timeout(tc, timeout);                                            \
    tcase_add_test(tc, fn);                                                    \
    suite_add_tcase(s, tc)

    CLIENT_CASE(tcase_create("roundtrip"), client_roundtrip_binary, 30);
    CLIENT_CASE(tcase_create("add_replace"), client_add_replace, 30);
    CLIENT_CASE(tcase_create("cas"), client_cas, 30);
    CLIENT_CASE(tcase_create("append_prepend"), client_append_prepend, 30);
    CLIENT_CASE(tcase_create("incr_decr"), client_incr_decr, 30);
    CLIENT_CASE(tcase_create("touch_ttl"), client_touch_ttl, 30);
    CLIENT_CASE(tcase_create("del"), client_del, 30);
    CLIENT_CASE(tcase_create("mget_mset"), client_mget_mset, 60);
    CLIENT_CASE(tcase_create("mget_big"), client_mget_big_values, 60);
    CLIENT_CASE(tcase_create("flush"), client_flush, 30);
    CLIENT_CASE(tcase_create("stats"), client_stats, 30);
    CLIENT_CASE(tcase_create("refused"), client_connect_refused, 30);
    CLIENT_CASE(tcase_create("silent_listener"), client_timeout_silent_listener,
                30);
    CLIENT_CASE(tcase_create("stopped_node"), client_timeout_stopped_node, 30);
    CLIENT_CASE(tcase_create("restart"), client_reconnect_after_restart, 60);
#undef CLIENT_CASE
    return s;
}
