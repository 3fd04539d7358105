/*
 * tests/unit/test_store.c - the node's partitioned store (server/node/
 * store.c): every write mode, INCR/DECR, expiry and bounded reclaim, the
 * memory limit with eviction, SIEVE and LRU orders, whole partitions, the
 * chain length of one full partition (DESIGN.md section 3: tables must not
 * index by the partition bits) and injected allocation failures.
 */
#include "tests/support/check_main.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "common/rng.h"
#include "server/node/store.h"

#define T_PARTS 256u      /* P for most tests */
#define T_NOW 1700000000u /* a fixed "now", Unix seconds */
#define T_UNIT 1000u      /* bytes per item for mem_by_items */

static struct brim_store *g_store; /* for the mem_used callbacks */
static size_t             g_base;  /* brim_alloc_bytes() before it */

/* Memory as the thread's allocator counts it, minus what the test process
 * held before the store was made. */
static size_t
mem_by_alloc(void)
{
    return brim_alloc_bytes() - g_base;
}

/* Memory as T_UNIT bytes per item: makes the capacity an exact count of
 * items for the eviction-order tests. */
static size_t
mem_by_items(void)
{
    struct brim_store_stats st;

    brim_store_get_stats(g_store, &st);
    return (size_t) st.items * T_UNIT;
}

/*
 * The stores' key hash: XXH3 with seed 0 (kh()), except that a key
 * "pP-I" of fill_partition() keeps the high 32 bits of that and puts
 * partition P below, so one partition can be filled by construction.
 */
static uint64_t
test_key_hash(const void *key, size_t key_len, void *arg)
{
    char     text[32];
    uint64_t h = brim_hash_key(0, key, key_len);
    unsigned p, i;

    (void) arg;
    if (key_len >= sizeof(text)) {
        return h;
    }
    memcpy(text, key, key_len);
    text[key_len] = '\0';
    if (sscanf(text, "p%u-%u", &p, &i) != 2) {
        return h;
    }
    return (h & ~(uint64_t) UINT32_MAX) | p;
}

static struct brim_store *
mk_store(uint32_t parts, size_t limit, enum brim_evict_policy policy,
         size_t (*mem_used)(void))
{
    struct brim_store_config cfg;

    memset(&cfg, 0, sizeof(cfg));
    cfg.npartitions = parts;
    cfg.mem_limit_bytes = limit;
    cfg.max_item_bytes = 250 + (4u << 20);
    cfg.policy = policy;
    cfg.cas_prefix = 0x123;
    cfg.mem_used = mem_used;
    cfg.key_hash = test_key_hash;
    g_base = brim_alloc_bytes();
    g_store = brim_store_new(&cfg);
    ck_assert_ptr_nonnull(g_store);
    return g_store;
}

static uint64_t
kh(const char *key)
{
    return brim_hash_key(0, key, strlen(key));
}

/* Write KEY = VAL (strings) in MODE; returns the store's code. */
static int
put(struct brim_store *s, enum brim_store_mode mode, const char *key,
    const char *val, uint32_t flags, uint32_t exptime, uint64_t cas_in,
    uint32_t now, uint64_t *cas_out)
{
    return brim_store_set(s, mode, kh(key), key, strlen(key), val, strlen(val),
                          flags, exptime, cas_in, now, cas_out);
}

static int
set(struct brim_store *s, const char *key, const char *val)
{
    return put(s, BRIM_STORE_SET, key, val, 0, 0, 0, T_NOW, NULL);
}

/* Assert KEY holds VAL at NOW; returns the item. */
static const struct brim_item *
expect_val(struct brim_store *s, const char *key, const char *val, uint32_t now)
{
    const struct brim_item *it = NULL;
    int                     rc;

    rc = brim_store_get(s, kh(key), key, strlen(key), now, &it);
    ck_assert_msg(rc == 0, "get %s: rc=%s", key, brim_err_name(rc));
    ck_assert_uint_eq(brim_item_val_len(it), strlen(val));
    ck_assert_mem_eq(brim_item_value(it), val, strlen(val));
    ck_assert_uint_eq(brim_item_key_len(it), strlen(key));
    ck_assert_mem_eq(brim_item_key(it), key, strlen(key));
    return it;
}

static void
expect_absent(struct brim_store *s, const char *key, uint32_t now)
{
    const struct brim_item *it = NULL;
    int                     rc;

    rc = brim_store_get(s, kh(key), key, strlen(key), now, &it);
    ck_assert_msg(rc == BRIM_ENOTFOUND, "get %s: rc=%s, want NOTFOUND", key,
                  brim_err_name(rc));
}

static int
present(struct brim_store *s, const char *key, uint32_t now)
{
    return brim_store_peek(s, kh(key), key, strlen(key), now) != NULL;
}

#define CK_RC(expr, want)                                                      \
    do {                                                                       \
        int ck_rc_ = (expr);                                                   \
        ck_assert_msg(ck_rc_ == (want), "%s: rc=%s, want %s", #expr,           \
                      brim_err_name(ck_rc_), brim_err_name(want));             \
    } while (0)

/* ---- round trip and modes ---- */

START_TEST(store_set_get)
{
    struct brim_store      *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);
    struct brim_store_stats st;
    const struct brim_item *it;
    char                    bin[300], key[251];
    uint64_t                cas1 = 0, cas2 = 0;
    size_t                  i;

    CK_RC(put(s, BRIM_STORE_SET, "alpha", "one", 7, 0, 0, T_NOW, &cas1), 0);
    it = expect_val(s, "alpha", "one", T_NOW);
    ck_assert_uint_eq(brim_item_flags(it), 7);
    ck_assert_uint_eq(brim_item_exptime(it), 0);
    ck_assert_uint_eq(brim_item_cas(it), cas1);
    ck_assert_uint_ne(cas1, 0);
    ck_assert_uint_eq(cas1 >> 40, 0x123); /* the incarnation prefix */

    /* Overwrite: new value and flags, a new CAS value. */
    CK_RC(put(s, BRIM_STORE_SET, "alpha", "two!", 9, 0, 0, T_NOW, &cas2), 0);
    it = expect_val(s, "alpha", "two!", T_NOW);
    ck_assert_uint_eq(brim_item_flags(it), 9);
    ck_assert_uint_ne(cas2, cas1);

    /* Binary-safe keys and values; an empty value. */
    for (i = 0; i < sizeof(bin); i++) {
        bin[i] = (char) (i * 7);
    }
    CK_RC(brim_store_set(s, BRIM_STORE_SET, brim_hash_key(0, bin, 10), bin, 10,
                         bin, sizeof(bin), 0, 0, 0, T_NOW, NULL),
          0);
    CK_RC(brim_store_get(s, brim_hash_key(0, bin, 10), bin, 10, T_NOW, &it), 0);
    ck_assert_uint_eq(brim_item_val_len(it), sizeof(bin));
    ck_assert_mem_eq(brim_item_value(it), bin, sizeof(bin));
    CK_RC(set(s, "empty", ""), 0);
    expect_val(s, "empty", "", T_NOW);

    /* Key length 1..250. */
    memset(key, 'k', sizeof(key));
    CK_RC(brim_store_set(s, BRIM_STORE_SET, brim_hash_key(0, key, 250), key,
                         250, "v", 1, 0, 0, 0, T_NOW, NULL),
          0);
    CK_RC(brim_store_set(s, BRIM_STORE_SET, 1, key, 251, "v", 1, 0, 0, 0, T_NOW,
                         NULL),
          BRIM_EINVAL);
    CK_RC(brim_store_set(s, BRIM_STORE_SET, 1, key, 0, "v", 1, 0, 0, 0, T_NOW,
                         NULL),
          BRIM_EINVAL);

    /* DEL, then a miss. */
    CK_RC(brim_store_del(s, kh("alpha"), "alpha", 5, T_NOW), 0);
    expect_absent(s, "alpha", T_NOW);
    CK_RC(brim_store_del(s, kh("alpha"), "alpha", 5, T_NOW), BRIM_ENOTFOUND);

    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.items, 3); /* bin, empty, kkk... */
    ck_assert_uint_eq(st.sets, 5);
    ck_assert_uint_eq(st.deletes, 1);
    ck_assert_uint_eq(st.hits, 4);
    ck_assert_uint_eq(st.misses, 1);
    ck_assert_uint_gt(st.item_bytes, 0);
    brim_store_free(s);
    ck_assert_uint_eq(brim_alloc_bytes(), g_base);
}
END_TEST

START_TEST(store_new_rejects_bad_partitions)
{
    struct brim_store_config cfg;

    memset(&cfg, 0, sizeof(cfg));
    cfg.max_item_bytes = 1000;
    cfg.npartitions = 0;
    ck_assert_ptr_null(brim_store_new(&cfg));
    cfg.npartitions = 300;
    ck_assert_ptr_null(brim_store_new(&cfg));
    cfg.npartitions = 1;
    g_store = brim_store_new(&cfg);
    ck_assert_ptr_nonnull(g_store);
    brim_store_free(g_store);
    brim_store_free(NULL);
}
END_TEST

START_TEST(store_mode_add)
{
    struct brim_store *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);

    CK_RC(put(s, BRIM_STORE_ADD, "k", "first", 1, 0, 0, T_NOW, NULL), 0);
    CK_RC(put(s, BRIM_STORE_ADD, "k", "second", 2, 0, 0, T_NOW, NULL),
          BRIM_ENOTSTORED);
    ck_assert_uint_eq(brim_item_flags(expect_val(s, "k", "first", T_NOW)), 1);

    /* An expired item counts as absent. */
    CK_RC(put(s, BRIM_STORE_SET, "e", "old", 0, T_NOW + 5, 0, T_NOW, NULL), 0);
    CK_RC(put(s, BRIM_STORE_ADD, "e", "new", 0, 0, 0, T_NOW + 5, NULL), 0);
    expect_val(s, "e", "new", T_NOW + 5);
    brim_store_free(s);
}
END_TEST

START_TEST(store_mode_replace)
{
    struct brim_store *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);

    CK_RC(put(s, BRIM_STORE_REPLACE, "k", "v", 0, 0, 0, T_NOW, NULL),
          BRIM_ENOTSTORED);
    expect_absent(s, "k", T_NOW);
    CK_RC(set(s, "k", "v1"), 0);
    CK_RC(put(s, BRIM_STORE_REPLACE, "k", "v2", 5, 0, 0, T_NOW, NULL), 0);
    ck_assert_uint_eq(brim_item_flags(expect_val(s, "k", "v2", T_NOW)), 5);
    brim_store_free(s);
}
END_TEST

START_TEST(store_mode_append_prepend)
{
    struct brim_store      *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);
    const struct brim_item *it;
    uint64_t                cas0 = 0, cas1 = 0;

    CK_RC(put(s, BRIM_STORE_APPEND, "k", "x", 0, 0, 0, T_NOW, NULL),
          BRIM_ENOTSTORED);
    CK_RC(put(s, BRIM_STORE_PREPEND, "k", "x", 0, 0, 0, T_NOW, NULL),
          BRIM_ENOTSTORED);
    expect_absent(s, "k", T_NOW);

    CK_RC(put(s, BRIM_STORE_SET, "k", "mid", 77, T_NOW + 100, 0, T_NOW, &cas0),
          0);
    /* Flags and expiry given to APPEND/PREPEND are ignored: kept. */
    CK_RC(put(s, BRIM_STORE_APPEND, "k", "-end", 1, T_NOW + 5, 0, T_NOW, &cas1),
          0);
    ck_assert_uint_ne(cas1, cas0);
    CK_RC(put(s, BRIM_STORE_PREPEND, "k", "start-", 2, 0, 0, T_NOW, NULL), 0);
    it = expect_val(s, "k", "start-mid-end", T_NOW);
    ck_assert_uint_eq(brim_item_flags(it), 77);
    ck_assert_uint_eq(brim_item_exptime(it), T_NOW + 100);
    /* Still alive after the expiry APPEND was given, gone after its own. */
    expect_val(s, "k", "start-mid-end", T_NOW + 99);
    expect_absent(s, "k", T_NOW + 100);

    /* Empty additions are fine. */
    CK_RC(set(s, "e", ""), 0);
    CK_RC(put(s, BRIM_STORE_APPEND, "e", "", 0, 0, 0, T_NOW, NULL), 0);
    CK_RC(put(s, BRIM_STORE_PREPEND, "e", "ab", 0, 0, 0, T_NOW, NULL), 0);
    expect_val(s, "e", "ab", T_NOW);
    brim_store_free(s);
}
END_TEST

START_TEST(store_mode_cas)
{
    struct brim_store *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);
    uint64_t           cas = 0, cas2 = 0, cas3 = 0;

    /* Absent: NOTFOUND. */
    CK_RC(put(s, BRIM_STORE_CAS, "k", "v", 0, 0, 12345, T_NOW, NULL),
          BRIM_ENOTFOUND);
    expect_absent(s, "k", T_NOW);

    CK_RC(put(s, BRIM_STORE_SET, "k", "v1", 0, 0, 0, T_NOW, &cas), 0);
    ck_assert_uint_eq(expect_val(s, "k", "v1", T_NOW)->cas, cas);
    /* Mismatch: EXISTS, value unchanged. */
    CK_RC(put(s, BRIM_STORE_CAS, "k", "bad", 0, 0, cas + 1, T_NOW, NULL),
          BRIM_EEXISTS);
    expect_val(s, "k", "v1", T_NOW);
    /* Match: stored, a new CAS value; the old one no longer matches. */
    CK_RC(put(s, BRIM_STORE_CAS, "k", "v2", 3, 0, cas, T_NOW, &cas2), 0);
    ck_assert_uint_ne(cas2, cas);
    ck_assert_uint_eq(brim_item_flags(expect_val(s, "k", "v2", T_NOW)), 3);
    CK_RC(put(s, BRIM_STORE_CAS, "k", "v3", 0, 0, cas, T_NOW, NULL),
          BRIM_EEXISTS);
    CK_RC(put(s, BRIM_STORE_CAS, "k", "v3", 0, 0, cas2, T_NOW, &cas3), 0);
    expect_val(s, "k", "v3", T_NOW);
    /* Expired: as absent. */
    CK_RC(put(s, BRIM_STORE_SET, "x", "v", 0, T_NOW + 1, 0, T_NOW, &cas), 0);
    CK_RC(put(s, BRIM_STORE_CAS, "x", "w", 0, 0, cas, T_NOW + 1, NULL),
          BRIM_ENOTFOUND);
    brim_store_free(s);
}
END_TEST

/* ---- INCR / DECR ---- */

static int
incr(struct brim_store *s, const char *key, uint64_t delta, int decr,
     uint64_t *result)
{
    return brim_store_incr(s, kh(key), key, strlen(key), delta, decr, T_NOW,
                           result, NULL);
}

START_TEST(store_incr_decr)
{
    struct brim_store      *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);
    const struct brim_item *it;
    uint64_t                r = 0, cas = 0;

    CK_RC(incr(s, "n", 1, 0, &r), BRIM_ENOTFOUND);

    CK_RC(put(s, BRIM_STORE_SET, "n", "41", 5, T_NOW + 50, 0, T_NOW, NULL), 0);
    CK_RC(incr(s, "n", 1, 0, &r), 0);
    ck_assert_uint_eq(r, 42);
    it = expect_val(s, "n", "42", T_NOW);
    ck_assert_uint_eq(brim_item_flags(it), 5);            /* kept */
    ck_assert_uint_eq(brim_item_exptime(it), T_NOW + 50); /* kept */

    /* The CAS value changes and is reported. */
    CK_RC(brim_store_incr(s, kh("n"), "n", 1, 0, 0, T_NOW, &r, &cas), 0);
    ck_assert_uint_eq(expect_val(s, "n", "42", T_NOW)->cas, cas);

    /* DECR stops at 0; a shorter result keeps the old length, padded
     * with spaces, as memcached rewrites it in place ("10" -> "9 "). */
    CK_RC(set(s, "d", "10"), 0);
    CK_RC(incr(s, "d", 1, 1, &r), 0);
    ck_assert_uint_eq(r, 9);
    expect_val(s, "d", "9 ", T_NOW);
    CK_RC(incr(s, "d", 100, 1, &r), 0);
    ck_assert_uint_eq(r, 0);
    expect_val(s, "d", "0 ", T_NOW);
    CK_RC(incr(s, "d", UINT64_MAX, 1, &r), 0);
    ck_assert_uint_eq(r, 0);

    /* A long value (past the 64 bytes padded on the stack): the same
     * rule, "100" and 97 spaces decr 1 is "99" and 98. */
    {
        char before[101], after[101];

        memset(before, ' ', 100);
        memcpy(before, "100", 3);
        before[100] = '\0';
        memset(after, ' ', 100);
        memcpy(after, "99", 2);
        after[100] = '\0';
        CK_RC(set(s, "long", before), 0);
        CK_RC(incr(s, "long", 1, 1, &r), 0);
        ck_assert_uint_eq(r, 99);
        expect_val(s, "long", after, T_NOW);
    }

    /* INCR wraps at 2^64. */
    CK_RC(set(s, "w", "18446744073709551615"), 0);
    CK_RC(incr(s, "w", 1, 0, &r), 0);
    ck_assert_uint_eq(r, 0);
    expect_val(s, "w", "0                   ", T_NOW); /* 20 bytes */
    CK_RC(set(s, "w", "18446744073709551610"), 0);
    CK_RC(incr(s, "w", 10, 0, &r), 0);
    ck_assert_uint_eq(r, 4);
    /* Leading zeros are digits. */
    CK_RC(set(s, "z", "0099"), 0);
    CK_RC(incr(s, "z", 1, 0, &r), 0);
    ck_assert_uint_eq(r, 100);
    expect_val(s, "z", "100 ", T_NOW);

    /* Not numeric: unchanged. */
    CK_RC(set(s, "a", "abc"), 0);
    CK_RC(incr(s, "a", 1, 0, &r), BRIM_ENONUMERIC);
    expect_val(s, "a", "abc", T_NOW);
    CK_RC(set(s, "a", ""), 0);
    CK_RC(incr(s, "a", 1, 0, &r), BRIM_ENONUMERIC);
    CK_RC(set(s, "a", "-5"), 0);
    CK_RC(incr(s, "a", 1, 1, &r), BRIM_ENONUMERIC);
    CK_RC(set(s, "a", "12abc"), 0);
    CK_RC(incr(s, "a", 1, 0, &r), BRIM_ENONUMERIC);
    CK_RC(set(s, "a", " "), 0);
    CK_RC(incr(s, "a", 1, 0, &r), BRIM_ENONUMERIC);
    CK_RC(set(s, "a", "+"), 0);
    CK_RC(incr(s, "a", 1, 0, &r), BRIM_ENONUMERIC);
    CK_RC(set(s, "a", "+ 5"), 0);
    CK_RC(incr(s, "a", 1, 0, &r), BRIM_ENONUMERIC);
    /* As memcached reads a counter (strtoull): white space around it, a
     * '+', and a NUL or white space ending the number. */
    CK_RC(set(s, "a", "12 "), 0);
    CK_RC(incr(s, "a", 1, 0, &r), 0);
    ck_assert_uint_eq(r, 13);
    expect_val(s, "a", "13 ", T_NOW);
    CK_RC(set(s, "a", " \t12"), 0);
    CK_RC(incr(s, "a", 1, 0, &r), 0);
    ck_assert_uint_eq(r, 13);
    CK_RC(set(s, "a", "+5"), 0);
    CK_RC(incr(s, "a", 1, 1, &r), 0);
    ck_assert_uint_eq(r, 4);
    CK_RC(set(s, "a", "12 abc"), 0);
    CK_RC(incr(s, "a", 1, 0, &r), 0);
    ck_assert_uint_eq(r, 13);
    CK_RC(brim_store_set(s, BRIM_STORE_SET, kh("a"), "a", 1, "12\0", 3, 0, 0, 0,
                         T_NOW, NULL),
          0);
    CK_RC(incr(s, "a", 1, 0, &r), 0);
    ck_assert_uint_eq(r, 13);
    /* Leading zeros past 20 characters are still digits. */
    CK_RC(set(s, "a", "000000000000000000001"), 0);
    CK_RC(incr(s, "a", 1, 0, &r), 0);
    ck_assert_uint_eq(r, 2);
    expect_val(s, "a", "2                    ", T_NOW); /* 21 bytes */
    /* 2^64 itself: refused. */
    CK_RC(set(s, "a", "18446744073709551616"), 0);
    CK_RC(incr(s, "a", 1, 0, &r), BRIM_ENONUMERIC);
    CK_RC(set(s, "a", "99999999999999999999"), 0);
    CK_RC(incr(s, "a", 1, 1, &r), BRIM_ENONUMERIC);
    /* 20 digits that fit are fine. */
    CK_RC(set(s, "a", "00000000000000000007"), 0);
    CK_RC(incr(s, "a", 1, 0, &r), 0);
    ck_assert_uint_eq(r, 8);
    brim_store_free(s);
}
END_TEST

/* ---- expiry ---- */

START_TEST(store_expiry)
{
    struct brim_store      *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);
    struct brim_store_stats st;

    CK_RC(put(s, BRIM_STORE_SET, "t", "v", 0, T_NOW + 10, 0, T_NOW, NULL), 0);
    expect_val(s, "t", "v", T_NOW);
    expect_val(s, "t", "v", T_NOW + 9);
    ck_assert(present(s, "t", T_NOW + 9));
    /* exptime <= now: never returned, by any read. */
    ck_assert(!present(s, "t", T_NOW + 10));
    CK_RC(brim_store_touch(s, kh("t"), "t", 1, 0, T_NOW + 10), BRIM_ENOTFOUND);
    CK_RC(incr(s, "t", 1, 0, NULL), BRIM_ENOTFOUND);
    expect_absent(s, "t", T_NOW + 10);
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.items, 0); /* reclaimed on the spot */
    ck_assert_uint_ge(st.expirations, 1);

    /* An exptime already in the past is never returned. */
    CK_RC(put(s, BRIM_STORE_SET, "p", "v", 0, T_NOW, 0, T_NOW, NULL), 0);
    expect_absent(s, "p", T_NOW);
    CK_RC(put(s, BRIM_STORE_SET, "p", "v", 0, 1, 0, T_NOW, NULL), 0);
    expect_absent(s, "p", T_NOW);
    CK_RC(brim_store_del(s, kh("p"), "p", 1, T_NOW), BRIM_ENOTFOUND);

    /* TOUCH moves the expiry both ways; 0 removes it. */
    CK_RC(put(s, BRIM_STORE_SET, "u", "v", 0, T_NOW + 10, 0, T_NOW, NULL), 0);
    CK_RC(brim_store_touch(s, kh("u"), "u", 1, T_NOW + 100, T_NOW), 0);
    expect_val(s, "u", "v", T_NOW + 50);
    CK_RC(brim_store_touch(s, kh("u"), "u", 1, 0, T_NOW), 0);
    expect_val(s, "u", "v", UINT32_MAX);
    CK_RC(brim_store_touch(s, kh("u"), "u", 1, T_NOW + 1, T_NOW), 0);
    expect_absent(s, "u", T_NOW + 1);
    brim_store_free(s);
    ck_assert_uint_eq(brim_alloc_bytes(), g_base);
}
END_TEST

START_TEST(store_reclaim_bounded)
{
    struct brim_store      *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);
    struct brim_store_stats st;
    char                    key[32];
    size_t                  maxchain = 0, looked, total = 0;
    uint32_t                i, p, calls;
    const uint32_t          n = 20000, budget = 500;

    /* Odd keys expire at T_NOW + 5, even ones later or never. */
    for (i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "key-%" PRIu32, i);
        CK_RC(put(s, BRIM_STORE_SET, key, "value", 0,
                  i % 2 == 1 ? T_NOW + 5 : (i % 4 == 0 ? 0 : T_NOW + 1000), 0,
                  T_NOW, NULL),
              0);
    }
    for (p = 0; p < T_PARTS; p++) {
        maxchain = BRIM_MAX(maxchain, brim_store_max_chain(s, p));
    }
    /* Before the expiry nothing is reclaimed. */
    for (calls = 0; calls < n / budget + 2; calls++) {
        brim_store_reclaim(s, T_NOW + 4, budget);
    }
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.expirations, 0);
    ck_assert_uint_eq(st.items, n);

    /* After it, each call looks at about BUDGET items (it finishes the
     * chain it is in), and one cycle over every item frees them all. */
    for (calls = 0; calls < n / budget + 2; calls++) {
        looked = brim_store_reclaim(s, T_NOW + 5, budget);
        ck_assert_uint_le(looked, budget + maxchain);
        total += looked;
        brim_store_get_stats(s, &st);
        ck_assert_uint_le(st.expirations, total);
        if (st.expirations == n / 2) {
            break;
        }
    }
    ck_assert_msg(st.expirations == n / 2,
                  "after %" PRIu32 " calls of "
                  "budget %" PRIu32 ": %" PRIu64 " of %" PRIu32 " reclaimed",
                  calls, budget, st.expirations, n / 2);
    ck_assert_uint_gt(calls, 2); /* the work was spread out */
    ck_assert_uint_eq(st.items, n / 2);
    for (i = 0; i < n; i += 2) {
        snprintf(key, sizeof(key), "key-%" PRIu32, i);
        ck_assert(present(s, key, T_NOW + 5));
    }
    /* An empty store: a call ends after one cycle of the partitions. */
    brim_store_flush(s);
    ck_assert_uint_eq(brim_store_reclaim(s, T_NOW, 1000), 0);
    brim_store_free(s);
}
END_TEST

/* ---- memory limit and eviction ---- */

START_TEST(store_mem_limit)
{
    const size_t            limit = 256u << 10;
    struct brim_store      *s;
    struct brim_store_stats st;
    struct brim_rng         rng;
    char                    key[32], *val;
    size_t                  len, worst = 0;
    uint32_t                i;
    int                     rc;

    s = mk_store(T_PARTS, limit, BRIM_EVICT_SIEVE, mem_by_alloc);
    val = malloc(8192);
    ck_assert_ptr_nonnull(val);
    memset(val, 'v', 8192);
    brim_rng_seed(&rng, 7);
    for (i = 0; i < 5000; i++) {
        snprintf(key, sizeof(key), "key-%" PRIu32, i);
        len = 1 + (size_t) brim_rng_below(&rng, 4000);
        rc = brim_store_set(s, BRIM_STORE_SET, kh(key), key, strlen(key), val,
                            len, 0, 0, 0, T_NOW, NULL);
        ck_assert_msg(rc == 0, "set %u: rc=%s", i, brim_err_name(rc));
        worst = mem_by_alloc() > worst ? mem_by_alloc() : worst;
        ck_assert_msg(mem_by_alloc() <= limit,
                      "after set %" PRIu32 " (%zu "
                      "bytes): %zu bytes used, limit %zu",
                      i, len, mem_by_alloc(), limit);
        /* The newest item is always there. */
        ck_assert(present(s, key, T_NOW));
    }
    brim_store_get_stats(s, &st);
    ck_assert_uint_gt(st.evictions, 0);
    ck_assert_uint_eq(st.items + st.evictions, 5000);
    ck_assert_uint_le(st.item_bytes + st.table_bytes, limit);
    /* It was filled, not emptied: at least half the limit in use. */
    ck_assert_uint_ge(worst, limit / 2);
    ck_assert_uint_ge(mem_by_alloc(), limit / 2);
    free(val);
    brim_store_free(s);
}
END_TEST

START_TEST(store_too_big)
{
    const size_t            limit = 64u << 10;
    struct brim_store      *s;
    struct brim_store_stats st, st2;
    char                   *val;
    char                    key[32];
    uint32_t                i;

    s = mk_store(T_PARTS, limit, BRIM_EVICT_SIEVE, mem_by_alloc);
    val = calloc(1, limit + 1);
    ck_assert_ptr_nonnull(val);
    for (i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "small-%" PRIu32, i);
        CK_RC(set(s, key, "v"), 0);
    }
    brim_store_get_stats(s, &st);

    /* Larger than the whole limit: TOOBIG, nothing stored, and the items
     * already there are not evicted for an item that can never fit. */
    CK_RC(brim_store_set(s, BRIM_STORE_SET, kh("big"), "big", 3, val, limit + 1,
                         0, 0, 0, T_NOW, NULL),
          BRIM_ETOOBIG);
    ck_assert(!present(s, "big", T_NOW));
    brim_store_get_stats(s, &st2);
    ck_assert_uint_eq(st2.items, st.items);
    ck_assert_uint_eq(st2.evictions, 0);
    ck_assert_uint_eq(st2.sets, st.sets);

    /* Above max_item_bytes: TOOBIG too, and the old value stays. */
    CK_RC(set(s, "small-0", "old"), 0);
    {
        struct brim_store_config cfg;
        struct brim_store       *s2;

        memset(&cfg, 0, sizeof(cfg));
        cfg.npartitions = T_PARTS;
        cfg.max_item_bytes = 100;
        s2 = brim_store_new(&cfg);
        ck_assert_ptr_nonnull(s2);
        CK_RC(set(s2, "k", "old"), 0);
        CK_RC(brim_store_set(s2, BRIM_STORE_SET, kh("k"), "k", 1, val, 99, 0, 0,
                             0, T_NOW, NULL),
              0);
        CK_RC(brim_store_set(s2, BRIM_STORE_SET, kh("k"), "k", 1, val, 100, 0,
                             0, 0, T_NOW, NULL),
              BRIM_ETOOBIG);
        ck_assert_uint_eq(
            brim_item_val_len(brim_store_peek(s2, kh("k"), "k", 1, T_NOW)), 99);
        /* APPEND past the limit: TOOBIG, unchanged. */
        CK_RC(put(s2, BRIM_STORE_APPEND, "k", "x", 0, 0, 0, T_NOW, NULL),
              BRIM_ETOOBIG);
        ck_assert_uint_eq(
            brim_item_val_len(brim_store_peek(s2, kh("k"), "k", 1, T_NOW)), 99);
        brim_store_free(s2);

        /* max_value_bytes bounds the value alone, APPEND's and PREPEND's
         * results included (the wire checks only the bytes added). */
        cfg.max_item_bytes = 1000;
        cfg.max_value_bytes = 50;
        s2 = brim_store_new(&cfg);
        ck_assert_ptr_nonnull(s2);
        CK_RC(brim_store_set(s2, BRIM_STORE_SET, kh("k"), "k", 1, val, 51, 0, 0,
                             0, T_NOW, NULL),
              BRIM_ETOOBIG);
        CK_RC(brim_store_set(s2, BRIM_STORE_SET, kh("k"), "k", 1, val, 50, 0, 0,
                             0, T_NOW, NULL),
              0);
        CK_RC(put(s2, BRIM_STORE_APPEND, "k", "x", 0, 0, 0, T_NOW, NULL),
              BRIM_ETOOBIG);
        CK_RC(put(s2, BRIM_STORE_PREPEND, "k", "x", 0, 0, 0, T_NOW, NULL),
              BRIM_ETOOBIG);
        ck_assert_uint_eq(
            brim_item_val_len(brim_store_peek(s2, kh("k"), "k", 1, T_NOW)), 50);
        brim_store_free(s2);
    }
    expect_val(s, "small-0", "old", T_NOW);
    free(val);
    brim_store_free(s);
}
END_TEST

/* Fill a store of capacity CAP items (mem_by_items) with PREFIX0..N-1. */
static void
fill(struct brim_store *s, const char *prefix, uint32_t n)
{
    char     key[32];
    uint32_t i;

    for (i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "%s%" PRIu32, prefix, i);
        CK_RC(set(s, key, "v"), 0);
    }
}

static int
present_n(struct brim_store *s, const char *prefix, uint32_t i)
{
    char key[32];

    snprintf(key, sizeof(key), "%s%" PRIu32, prefix, i);
    return present(s, key, T_NOW);
}

START_TEST(store_sieve_keeps_hot)
{
    struct brim_store      *s;
    struct brim_store_stats st;
    const struct brim_item *it;
    uint32_t                i;

    /* Capacity: 10 items (the 11th evicts). */
    s = mk_store(T_PARTS, 10 * T_UNIT, BRIM_EVICT_SIEVE, mem_by_items);
    CK_RC(set(s, "hot", "v"), 0);  /* the oldest item */
    CK_RC(set(s, "cold", "v"), 0); /* as old, never read */
    fill(s, "a", 8);
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.items, 10);
    ck_assert_uint_eq(st.evictions, 0);

    /* Read "hot" once: the next insert evicts the oldest unvisited item,
     * "cold", although "hot" is older (FIFO would drop "hot"). */
    CK_RC(brim_store_get(s, kh("hot"), "hot", 3, T_NOW, &it), 0);
    CK_RC(set(s, "b0", "v"), 0);
    ck_assert(present(s, "hot", T_NOW));
    ck_assert(!present(s, "cold", T_NOW));
    ck_assert(present_n(s, "a", 0));
    /* The hand moved on: one-hit items go in FIFO order. */
    CK_RC(set(s, "b1", "v"), 0);
    ck_assert(!present_n(s, "a", 0));
    ck_assert(present_n(s, "a", 1));
    CK_RC(set(s, "b2", "v"), 0);
    ck_assert(!present_n(s, "a", 1));

    /* A stream of 1,000 one-hit items while "hot" is read every 5 inserts
     * (the hand passes it every ~9 evictions): "hot" survives, and only
     * the newest one-hit items remain. */
    for (i = 0; i < 1000; i++) {
        char key[32];

        snprintf(key, sizeof(key), "c%" PRIu32, i);
        CK_RC(set(s, key, "v"), 0);
        if (i % 5 == 0) {
            CK_RC(brim_store_get(s, kh("hot"), "hot", 3, T_NOW, &it), 0);
        }
    }
    ck_assert(present(s, "hot", T_NOW));
    ck_assert(present_n(s, "c", 999));
    ck_assert(!present_n(s, "c", 0));
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.items, 10);
    ck_assert_uint_eq(st.evictions, 1003); /* cold, a0, a1, c0.. */
    brim_store_free(s);
}
END_TEST

START_TEST(store_lru_order)
{
    struct brim_store      *s;
    struct brim_store_stats st;
    const struct brim_item *it;

    s = mk_store(T_PARTS, 10 * T_UNIT, BRIM_EVICT_LRU, mem_by_items);
    fill(s, "a", 10); /* a0 oldest .. a9 newest */
    /* Read a0: now the most recent; a1 is the least recently used. */
    CK_RC(brim_store_get(s, kh("a0"), "a0", 2, T_NOW, &it), 0);
    CK_RC(set(s, "b0", "v"), 0);
    ck_assert(present_n(s, "a", 0));
    ck_assert(!present_n(s, "a", 1));
    ck_assert(present_n(s, "a", 2));
    /* Rewriting a2 in a full store makes room for the new copy while the
     * old one is still held: the least recent item but a2 itself, a3,
     * goes, and the old copy is then freed (one item fewer). */
    CK_RC(set(s, "a2", "w"), 0);
    ck_assert(!present_n(s, "a", 3));
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.items, 9);
    CK_RC(set(s, "b1", "v"), 0);     /* fits: no eviction */
    ck_assert(present_n(s, "a", 4)); /* a peek is not a use */
    /* The write made a2 the most recent, so a4 and a5 go before it. */
    CK_RC(set(s, "b2", "v"), 0);
    ck_assert(!present_n(s, "a", 4));
    CK_RC(set(s, "b3", "v"), 0);
    ck_assert(!present_n(s, "a", 5));
    ck_assert(present_n(s, "a", 2));
    ck_assert(present_n(s, "a", 6));
    ck_assert(present_n(s, "a", 0));
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.items, 10);
    ck_assert_uint_eq(st.evictions, 4); /* a1, a3, a4, a5 */
    brim_store_free(s);
}
END_TEST

/* ---- partitions ---- */

/* Store N items in partition P with constructed hashes (test_key_hash());
 * keys "pP-i". */
static void
fill_partition(struct brim_store *s, uint32_t p, uint32_t n)
{
    char     key[32];
    uint64_t h;
    uint32_t i;

    for (i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "p%" PRIu32 "-%" PRIu32, p, i);
        h = test_key_hash(key, strlen(key), NULL);
        CK_RC(brim_store_set(s, BRIM_STORE_SET, h, key, strlen(key), "v", 1, 0,
                             0, 0, T_NOW, NULL),
              0);
    }
}

START_TEST(store_drop_partition)
{
    struct brim_store      *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);
    struct brim_store_stats st, st0;
    size_t                  base;
    uint32_t                p;

    brim_store_get_stats(s, &st0);
    base = brim_alloc_bytes();
    fill_partition(s, 3, 100);
    fill_partition(s, 5, 200);
    fill_partition(s, 7, 50);
    ck_assert_uint_eq(brim_store_partition_items(s, 3), 100);
    ck_assert_uint_eq(brim_store_partition_items(s, 5), 200);
    ck_assert_uint_eq(brim_store_partition_items(s, 7), 50);
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.partitions_used, 3);

    ck_assert_uint_eq(brim_store_drop_partition(s, 5), 200);
    ck_assert_uint_eq(brim_store_partition_items(s, 5), 0);
    ck_assert_uint_eq(brim_store_partition_items(s, 3), 100);
    ck_assert_uint_eq(brim_store_partition_items(s, 7), 50);
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.items, 150);
    ck_assert_uint_eq(st.dropped_pending, 200); /* freed later */
    ck_assert_uint_eq(st.partitions_used, 2);
    /* Dropping an unused partition (or twice) removes nothing. */
    ck_assert_uint_eq(brim_store_drop_partition(s, 5), 0);
    ck_assert_uint_eq(brim_store_drop_partition(s, 200), 0);
    for (p = 0; p < T_PARTS; p++) {
        if (p != 3 && p != 7) {
            ck_assert_uint_eq(brim_store_partition_items(s, p), 0);
        }
    }
    /* Every remaining item is still readable, by its constructed hash. */
    {
        uint64_t h;
        char     key[32];
        uint32_t i;

        for (i = 0; i < 100; i++) {
            snprintf(key, sizeof(key), "p3-%" PRIu32, i);
            h = test_key_hash(key, strlen(key), NULL);
            ck_assert_ptr_nonnull(
                brim_store_peek(s, h, key, strlen(key), T_NOW));
        }
        for (i = 0; i < 50; i++) {
            snprintf(key, sizeof(key), "p7-%" PRIu32, i);
            h = test_key_hash(key, strlen(key), NULL);
            ck_assert_ptr_nonnull(
                brim_store_peek(s, h, key, strlen(key), T_NOW));
        }
    }
    /* The partition can be used again: its first write frees what was
     * dropped, so only the new items are in it. Then everything is given
     * back, once the reaper has freed it. */
    fill_partition(s, 5, 10);
    ck_assert_uint_eq(brim_store_partition_items(s, 5), 10);
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.dropped_pending, 0);
    ck_assert_uint_eq(st.items, 160);
    ck_assert_uint_eq(brim_store_drop_partition(s, 3), 100);
    ck_assert_uint_eq(brim_store_drop_partition(s, 5), 10);
    ck_assert_uint_eq(brim_store_drop_partition(s, 7), 50);
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.items, 0);
    ck_assert_uint_eq(st.dropped_pending, 160);
    ck_assert_uint_eq(brim_store_reclaim(s, T_NOW, 1000), 160);
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.dropped_pending, 0);
    ck_assert_uint_eq(st.item_bytes, 0);
    ck_assert_uint_eq(st.table_bytes, st0.table_bytes);
    ck_assert_uint_eq(brim_alloc_bytes(), base);
    brim_store_free(s);
}
END_TEST

static int scan_count(const struct brim_item *it, void *arg);

/* Memory for the items and tables of every partition, dropped or not. */
static size_t
mem_by_all_items(void)
{
    struct brim_store_stats st;

    brim_store_get_stats(g_store, &st);
    return (size_t) (st.items + st.dropped_pending) * T_UNIT;
}

/* A 10-item store: partition 5's 6 items (the oldest when
 * DROPPED_OLDEST, else the newest) and partition 3's 4, then 5 dropped
 * and 6 items written to partition 7: the dropped items make the room,
 * no live item is evicted. */
static void
evict_with_dropped(int dropped_oldest)
{
    struct brim_store      *s;
    struct brim_store_stats st;

    s = mk_store(T_PARTS, 10 * T_UNIT, BRIM_EVICT_SIEVE, mem_by_all_items);
    fill_partition(s, dropped_oldest ? 5 : 3, dropped_oldest ? 6 : 4);
    fill_partition(s, dropped_oldest ? 3 : 5, dropped_oldest ? 4 : 6);
    ck_assert_uint_eq(brim_store_drop_partition(s, 5), 6);
    fill_partition(s, 7, 6);
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.dropped_pending, 0);
    ck_assert_uint_eq(st.items, 10);
    ck_assert_uint_eq(st.evictions, 0);
    ck_assert_uint_eq(brim_store_partition_items(s, 3), 4);
    ck_assert_uint_eq(brim_store_partition_items(s, 7), 6);
    brim_store_free(s);
}

/* A dropped partition is gone at once for readers and scans, and its
 * items are freed in the reaper's bounded steps, by a write to it, by
 * eviction (not counted as such) or by a flush. */
START_TEST(store_drop_partition_deferred)
{
    struct brim_store       *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);
    struct brim_store_stats  st, st0;
    struct brim_store_cursor cur;
    size_t                   base;
    uint32_t                 i, n = 0;
    char                     key[32];

    brim_store_get_stats(s, &st0);
    base = brim_alloc_bytes();
    fill_partition(s, 5, 200);
    fill_partition(s, 3, 100);
    ck_assert_uint_eq(brim_store_drop_partition(s, 5), 200);
    ck_assert_ptr_null(
        brim_store_peek(s, test_key_hash("p5-0", 4, NULL), "p5-0", 4, T_NOW));
    brim_store_cursor_init(&cur, 5);
    ck_assert_int_eq(brim_store_scan(s, &cur, 64, scan_count, &n), 1);
    ck_assert_uint_eq(n, 0);
    ck_assert_uint_eq(brim_store_drop_partition(s, 5), 0); /* already */
    /* Freed 50 at a time: each call's work is bounded. */
    for (i = 1; i <= 4; i++) {
        ck_assert_uint_eq(brim_store_reclaim(s, T_NOW, 50), 50);
        brim_store_get_stats(s, &st);
        ck_assert_uint_eq(st.dropped_pending, 200 - 50 * i);
        ck_assert_uint_eq(st.items, 100);
    }
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.partitions_used, 1);
    ck_assert_uint_eq(st.reclaimed_scans, 0); /* frees are not looks */
    ck_assert_uint_eq(st.evictions, 0);
    for (i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "p3-%" PRIu32, i);
        ck_assert_ptr_nonnull(brim_store_peek(
            s, test_key_hash(key, strlen(key), NULL), key, strlen(key), T_NOW));
    }
    /* A flush frees a pending drop too. */
    fill_partition(s, 7, 30);
    ck_assert_uint_eq(brim_store_drop_partition(s, 7), 30);
    brim_store_flush(s);
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.items, 0);
    ck_assert_uint_eq(st.dropped_pending, 0);
    ck_assert_uint_eq(st.item_bytes, 0);
    ck_assert_uint_eq(st.partitions_used, 0);
    ck_assert_uint_eq(st.table_bytes, st0.table_bytes);
    ck_assert_uint_eq(brim_alloc_bytes(), base);
    brim_store_free(s);

    /* Under the memory limit, the dropped items go before any live one,
     * whether they are the oldest or the newest (the hand would reach
     * the live ones first). */
    evict_with_dropped(1);
    evict_with_dropped(0);
}
END_TEST

START_TEST(store_flush)
{
    struct brim_store      *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);
    struct brim_store_stats st, st0;
    size_t                  base;
    char                    key[32];
    uint32_t                i;

    brim_store_get_stats(s, &st0);
    base = brim_alloc_bytes();
    for (i = 0; i < 3000; i++) {
        snprintf(key, sizeof(key), "key-%" PRIu32, i);
        CK_RC(set(s, key, "value"), 0);
    }
    brim_store_flush(s);
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.items, 0);
    ck_assert_uint_eq(st.item_bytes, 0);
    ck_assert_uint_eq(st.partitions_used, 0);
    ck_assert_uint_eq(st.table_bytes, st0.table_bytes);
    ck_assert_uint_eq(brim_alloc_bytes(), base);
    expect_absent(s, "key-0", T_NOW);
    /* Usable afterwards, eviction queue included. */
    CK_RC(set(s, "again", "yes"), 0);
    expect_val(s, "again", "yes", T_NOW);
    brim_store_free(s);
}
END_TEST

/* Migration: a streamed item keeps its CAS and expiry, enters at the cold
 * end (evicted first), and never replaces a present key. */
static int
scan_count(const struct brim_item *it, void *arg)
{
    (void) it;
    (*(uint32_t *) arg)++;
    return 0;
}

START_TEST(store_insert_cold)
{
    struct brim_store *s =
        mk_store(T_PARTS, 3 * T_UNIT, BRIM_EVICT_LRU, mem_by_items);
    const struct brim_item  *it;
    struct brim_store_cursor cursor;
    uint32_t                 n = 0, p;

    g_store = s;
    CK_RC(set(s, "hot1", "a"), 0);
    CK_RC(set(s, "hot2", "b"), 0);
    CK_RC(brim_store_insert_cold(s, kh("cold"), "cold", 4, "c", 1, 7,
                                 T_NOW + 50, 0xabcdef, T_NOW),
          0);
    it = expect_val(s, "cold", "c", T_NOW);
    ck_assert_uint_eq(brim_item_cas(it), 0xabcdef);
    ck_assert_uint_eq(brim_item_flags(it), 7);
    ck_assert_uint_eq(brim_item_exptime(it), T_NOW + 50);
    /* Present: the local item wins. */
    CK_RC(brim_store_insert_cold(s, kh("hot1"), "hot1", 4, "z", 1, 0, 0, 1,
                                 T_NOW),
          BRIM_EEXISTS);
    expect_val(s, "hot1", "a", T_NOW);
    /* A new cold item is the first evicted (LRU: the tail). */
    CK_RC(brim_store_insert_cold(s, kh("cold2"), "cold2", 5, "d", 1, 0, 0, 9,
                                 T_NOW),
          0);
    CK_RC(set(s, "hot3", "e"), 0);
    expect_absent(s, "cold2", T_NOW);
    ck_assert(present(s, "hot3", T_NOW));
    /* Scanning a partition visits each of its items once. */
    p = (uint32_t) (kh("hot3") & (T_PARTS - 1));
    brim_store_cursor_init(&cursor, p);
    while (!brim_store_scan(s, &cursor, 1, scan_count, &n)) {
    }
    ck_assert_uint_eq(n, brim_store_partition_items(s, p));
    brim_store_free(s);
}
END_TEST

/* A scan that stops inside a chain: the state of scan_mixed(). */
struct scan_state {
    uint32_t seen[512];  /* times each key index was taken */
    uint32_t calls;      /* callbacks so far */
    uint32_t taken;      /* items taken */
    uint32_t stop_every; /* stop (before or after) this often */
};

/* Takes every item, but every STOP_EVERY-th call alternately stops before
 * the item (not taken) or after it. */
static int
scan_mixed(const struct brim_item *it, void *arg)
{
    struct scan_state *st = arg;
    unsigned           idx;

    st->calls++;
    if (st->calls % st->stop_every == 0 && (st->calls / st->stop_every) % 2) {
        return BRIM_SCAN_STOP_BEFORE;
    }
    ck_assert_int_eq(sscanf(brim_item_key(it), "k%u", &idx), 1);
    ck_assert_uint_lt(idx, 512);
    st->seen[idx]++;
    st->taken++;
    return st->calls % st->stop_every == 0 ? BRIM_SCAN_STOP : BRIM_SCAN_NEXT;
}

/*
 * Issue 10: a migration batch ends before an item that does not fit, so a
 * scan must be able to stop inside a bucket chain and resume at exactly
 * that item, even when items are removed between slices (evictions,
 * expiries): every item that stays is visited exactly once.
 */
START_TEST(store_scan_stops_and_resumes)
{
    struct brim_store       *s = mk_store(1, 0, BRIM_EVICT_SIEVE, NULL);
    struct brim_store_cursor cur;
    struct scan_state        st;
    char                     key[16];
    uint32_t                 i, slices = 0, removed = 0;

    /* One partition, 400 items, a small table: chains of several. */
    for (i = 0; i < 400; i++) {
        snprintf(key, sizeof(key), "k%u", i);
        CK_RC(set(s, key, "v"), 0);
    }
    ck_assert_uint_gt(brim_store_max_chain(s, 0), 1);
    memset(&st, 0, sizeof(st));
    st.stop_every = 3;
    brim_store_cursor_init(&cur, 0);
    while (!brim_store_scan(s, &cur, 2, scan_mixed, &st)) {
        /* Between slices, remove the item the cursor rests on, or one
         * not taken yet, now and then. */
        if (++slices % 5 == 0 && cur.mark != NULL) {
            snprintf(key, sizeof(key), "%.*s", (int) cur.mark->key_len,
                     brim_item_key(cur.mark));
            CK_RC(brim_store_del(s, kh(key), key, strlen(key), T_NOW), 0);
            removed++;
        }
        ck_assert_uint_lt(slices, 10000);
    }
    ck_assert_uint_gt(removed, 0);
    ck_assert_int_eq(cur.linked, 0);
    /* Every item still present was taken once; removed ones at most once. */
    for (i = 0; i < 400; i++) {
        snprintf(key, sizeof(key), "k%u", i);
        if (present(s, key, T_NOW)) {
            ck_assert_msg(st.seen[i] == 1, "k%u seen %u times", i, st.seen[i]);
        } else {
            ck_assert_uint_le(st.seen[i], 1);
        }
    }
    ck_assert_uint_eq(st.taken + removed, 400);
    /* A cursor released mid-scan leaves the store untouched by removals. */
    brim_store_cursor_init(&cur, 0);
    memset(&st, 0, sizeof(st));
    st.stop_every = 2;
    (void) brim_store_scan(s, &cur, 1, scan_mixed, &st);
    brim_store_cursor_release(s, &cur);
    brim_store_flush(s);
    ck_assert_int_eq(cur.linked, 0);
    brim_store_free(s);
}
END_TEST

/*
 * DESIGN.md section 3: every key of a partition shares the hash's low bits,
 * so a table indexed by them would put one partition's keys in one chain.
 * Fill one partition with 10,000 items, by real keys and by constructed
 * hashes, and check the longest chain stays short.
 */
START_TEST(store_chain_length)
{
    struct brim_store *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);
    const uint32_t     target = 0x5a, n = 10000;
    char               key[32];
    uint64_t           h, tries;
    uint32_t           found = 0, p;

    /* Real keys through brim_hash_key whose partition is TARGET. */
    for (tries = 0; found < n && tries < (uint64_t) n * T_PARTS * 8; tries++) {
        snprintf(key, sizeof(key), "k%" PRIu64, tries);
        h = brim_hash_key(0, key, strlen(key));
        if (brim_partition_of(h, T_PARTS) != target) {
            continue;
        }
        CK_RC(brim_store_set(s, BRIM_STORE_SET, h, key, strlen(key), "v", 1, 0,
                             0, 0, T_NOW, NULL),
              0);
        found++;
    }
    ck_assert_uint_eq(found, n);
    ck_assert_uint_eq(brim_store_partition_items(s, target), n);
    for (p = 0; p < T_PARTS; p++) {
        if (p != target) {
            ck_assert_uint_eq(brim_store_partition_items(s, p), 0);
        }
    }
    ck_assert_msg(brim_store_max_chain(s, target) <= 12,
                  "longest chain %zu in one full partition",
                  brim_store_max_chain(s, target));

    /* Constructed hashes: random high 32 bits, the partition below. */
    fill_partition(s, 0x21, n);
    ck_assert_uint_eq(brim_store_partition_items(s, 0x21), n);
    ck_assert_msg(brim_store_max_chain(s, 0x21) <= 12,
                  "longest chain %zu in one full partition",
                  brim_store_max_chain(s, 0x21));
    brim_store_free(s);
}
END_TEST

/* ---- injected allocation failures ---- */

START_TEST(store_alloc_fail)
{
    struct brim_store      *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);
    struct brim_store_stats st, st2;
    const struct brim_item *it;
    uint64_t                cas = 0;
    char                    key[32];
    uint32_t                n, i;
    int                     rc;

    CK_RC(put(s, BRIM_STORE_SET, "k", "old", 4, 0, 0, T_NOW, &cas), 0);
    brim_store_get_stats(s, &st);

    /* The next allocation fails: ENOMEM, the old value intact. */
    brim_alloc_fail_after(1, 0);
    rc = set(s, "k", "new");
    brim_alloc_fail_after(0, 0);
    ck_assert_msg(rc == BRIM_ENOMEM, "rc=%s", brim_err_name(rc));
    it = expect_val(s, "k", "old", T_NOW);
    ck_assert_uint_eq(brim_item_flags(it), 4);
    ck_assert_uint_eq(brim_item_cas(it), cas);

    /* The same for APPEND, PREPEND, CAS and INCR. */
    brim_alloc_fail_after(1, 1);
    CK_RC(put(s, BRIM_STORE_APPEND, "k", "x", 0, 0, 0, T_NOW, NULL),
          BRIM_ENOMEM);
    CK_RC(put(s, BRIM_STORE_PREPEND, "k", "x", 0, 0, 0, T_NOW, NULL),
          BRIM_ENOMEM);
    CK_RC(put(s, BRIM_STORE_CAS, "k", "x", 0, 0, cas, T_NOW, NULL),
          BRIM_ENOMEM);
    brim_alloc_fail_after(0, 0);
    CK_RC(set(s, "n", "5"), 0);
    brim_alloc_fail_after(1, 1);
    CK_RC(incr(s, "n", 1, 0, NULL), BRIM_ENOMEM);
    brim_alloc_fail_after(0, 0);
    expect_val(s, "k", "old", T_NOW);
    expect_val(s, "n", "5", T_NOW);
    brim_store_get_stats(s, &st2);
    ck_assert_uint_eq(st2.items, st.items + 1); /* only "n" added */

    /* Fail each allocation in turn while filling a new partition (items
     * and tables): every set either stores or reports ENOMEM, and the
     * store stays consistent. */
    for (n = 1; n <= 4; n++) {
        for (i = 0; i < 40; i++) {
            snprintf(key, sizeof(key), "f%" PRIu32 "-%" PRIu32, n, i);
            brim_alloc_fail_after(n, 0);
            rc = set(s, key, "value");
            brim_alloc_fail_after(0, 0);
            ck_assert_msg(rc == 0 || rc == BRIM_ENOMEM, "rc=%s",
                          brim_err_name(rc));
            ck_assert_int_eq(present(s, key, T_NOW), rc == 0);
        }
    }
    brim_store_get_stats(s, &st);
    ck_assert_uint_ge(st.items, 2);
    brim_store_flush(s);
    brim_store_free(s);
    ck_assert_uint_eq(brim_alloc_bytes(), g_base);
}
END_TEST

/*
 * The item layout (docs/design.md, "The item"): client flags and an
 * expiry take a word only when not 0, a value above 4,095 bytes one for
 * its length; TOUCH gives an item without an expiry word a new
 * allocation in the old one's place, with its CAS value, its place in
 * the eviction order and its SIEVE bit.
 */
static int
scan_stop_each(const struct brim_item *it, void *arg)
{
    (void) it;
    (*(uint32_t *) arg)++;
    return BRIM_SCAN_STOP;
}

START_TEST(store_item_words)
{
    struct brim_store       *s = mk_store(T_PARTS, 0, BRIM_EVICT_SIEVE, NULL);
    const struct brim_item  *it;
    struct brim_store_cursor cur;
    struct brim_store_stats  st;
    static char              big[70000];
    uint64_t                 cas, cas2;
    uint32_t                 seen = 0, i;
    char                     key[32];

    /* No words: the header, the key and the value, nothing else. */
    CK_RC(put(s, BRIM_STORE_SET, "w", "value", 0, 0, 0, T_NOW, &cas), 0);
    it = expect_val(s, "w", "value", T_NOW);
    ck_assert_uint_eq(it->bits & BRIM_ITEM_WORDS, 0);
    ck_assert_ptr_eq(brim_item_key(it), it->data);
    ck_assert_uint_eq(brim_item_alloc_bytes(1, 5, 0, 0), BRIM_ITEM_HDR + 6);
    ck_assert_uint_eq(brim_item_alloc_bytes(1, 5, 7, 9), BRIM_ITEM_HDR + 14);
    ck_assert_uint_eq(brim_item_alloc_bytes(1, 4095, 0, 0),
                      BRIM_ITEM_HDR + 4096);
    ck_assert_uint_eq(brim_item_alloc_bytes(1, 4096, 0, 0),
                      BRIM_ITEM_HDR + 4 + 4097);
    /* The tag is the key hash's top 4 bits. */
    ck_assert_uint_eq(it->len_tag >> 12, BRIM_ITEM_TAG(kh("w")));

    /* TOUCH adds the expiry word: same value, flags and CAS value. */
    CK_RC(brim_store_touch(s, kh("w"), "w", 1, T_NOW + 10, T_NOW), 0);
    it = expect_val(s, "w", "value", T_NOW + 9);
    ck_assert_uint_eq(brim_item_exptime(it), T_NOW + 10);
    ck_assert_uint_eq(brim_item_flags(it), 0);
    ck_assert_uint_eq(brim_item_cas(it), cas);
    ck_assert(!present(s, "w", T_NOW + 10));

    /* At 4,095 bytes the length is in the header, at 4,096 in a word. */
    CK_RC(brim_store_set(s, BRIM_STORE_SET, kh("b1"), "b1", 2, big, 4095, 0, 0,
                         0, T_NOW, NULL),
          0);
    CK_RC(brim_store_get(s, kh("b1"), "b1", 2, T_NOW, &it), 0);
    ck_assert_uint_eq(it->bits & BRIM_ITEM_LONG, 0);
    ck_assert_uint_eq(brim_item_val_len(it), 4095);
    CK_RC(brim_store_set(s, BRIM_STORE_SET, kh("b1"), "b1", 2, big, 4096, 0, 0,
                         0, T_NOW, NULL),
          0);
    CK_RC(brim_store_get(s, kh("b1"), "b1", 2, T_NOW, &it), 0);
    ck_assert_uint_eq(it->bits & BRIM_ITEM_LONG, BRIM_ITEM_LONG);
    ck_assert_uint_eq(brim_item_val_len(it), 4096);
    ck_assert_mem_eq(brim_item_value(it), big, 4096);

    /* Flags and expiry together; a long value keeps its length word. */
    for (i = 0; i < sizeof(big); i++) {
        big[i] = (char) ('a' + i % 26);
    }
    CK_RC(brim_store_set(s, BRIM_STORE_SET, kh("big"), "big", 3, big,
                         sizeof(big), 7, T_NOW + 50, 0, T_NOW, NULL),
          0);
    CK_RC(brim_store_get(s, kh("big"), "big", 3, T_NOW, &it), 0);
    ck_assert_uint_eq(it->bits & BRIM_ITEM_WORDS, BRIM_ITEM_WORDS);
    ck_assert_uint_eq(brim_item_val_len(it), sizeof(big));
    ck_assert_mem_eq(brim_item_value(it), big, sizeof(big));
    ck_assert_mem_eq(brim_item_key(it), "big", 3);
    ck_assert_uint_eq(brim_item_flags(it), 7);
    ck_assert_uint_eq(brim_item_exptime(it), T_NOW + 50);
    CK_RC(brim_store_set(s, BRIM_STORE_APPEND, kh("big"), "big", 3, "xyz", 3, 0,
                         0, 0, T_NOW, &cas2),
          0);
    CK_RC(brim_store_get(s, kh("big"), "big", 3, T_NOW, &it), 0);
    ck_assert_uint_eq(brim_item_val_len(it), sizeof(big) + 3);
    ck_assert_mem_eq(brim_item_value(it) + sizeof(big), "xyz", 3);
    ck_assert_uint_eq(brim_item_flags(it), 7);            /* kept */
    ck_assert_uint_eq(brim_item_exptime(it), T_NOW + 50); /* kept */

    /* A scan stopped at an item follows it into its new allocation:
     * every item of the partition is visited exactly once. */
    fill_partition(s, 9, 20);
    brim_store_cursor_init(&cur, 9);
    while (brim_store_scan(s, &cur, 1, scan_stop_each, &seen) == 0) {
        if (cur.mark != NULL) {
            memcpy(key, brim_item_key(cur.mark), cur.mark->key_len);
            key[cur.mark->key_len] = '\0';
            CK_RC(brim_store_touch(s, test_key_hash(key, strlen(key), NULL),
                                   key, strlen(key), T_NOW + 99, T_NOW),
                  0);
            ck_assert_uint_eq(brim_item_exptime(cur.mark), T_NOW + 99);
        }
    }
    ck_assert_uint_eq(seen, 20);
    brim_store_get_stats(s, &st);
    ck_assert_uint_eq(st.items, 23);
    brim_store_free(s);
    ck_assert_uint_eq(brim_alloc_bytes(), g_base);
}
END_TEST

/* TOUCH's new allocation keeps the item's place in the eviction order
 * (LRU) and its visited bit (SIEVE). */
START_TEST(store_touch_keeps_order)
{
    struct brim_store      *s;
    const struct brim_item *it;

    /* Room for 3 items and the few bytes a TOUCH adds: the 4th evicts. */
    s = mk_store(T_PARTS, 3 * T_UNIT + T_UNIT / 2, BRIM_EVICT_LRU,
                 mem_by_items);
    fill(s, "a", 3); /* a0 oldest */
    CK_RC(brim_store_touch(s, kh("a0"), "a0", 2, T_NOW + 100, T_NOW), 0);
    CK_RC(set(s, "b0", "v"), 0);
    ck_assert(!present_n(s, "a", 0)); /* still the oldest */
    ck_assert(present_n(s, "a", 1));
    brim_store_free(s);

    s = mk_store(T_PARTS, 3 * T_UNIT + T_UNIT / 2, BRIM_EVICT_SIEVE,
                 mem_by_items);
    fill(s, "a", 3);
    CK_RC(brim_store_get(s, kh("a0"), "a0", 2, T_NOW, &it), 0);
    CK_RC(brim_store_touch(s, kh("a0"), "a0", 2, T_NOW + 100, T_NOW), 0);
    CK_RC(set(s, "b0", "v"), 0);
    ck_assert(present_n(s, "a", 0)); /* visited: spared */
    ck_assert(!present_n(s, "a", 1));
    brim_store_free(s);
    ck_assert_uint_eq(brim_alloc_bytes(), g_base);
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s;
    TCase *tc;

    s = suite_create("store");

    tc = tcase_create("set_get");
    tcase_add_test(tc, store_set_get);
    suite_add_tcase(s, tc);

    tc = tcase_create("new_rejects_bad_partitions");
    tcase_add_test(tc, store_new_rejects_bad_partitions);
    suite_add_tcase(s, tc);

    tc = tcase_create("mode_add");
    tcase_add_test(tc, store_mode_add);
    suite_add_tcase(s, tc);

    tc = tcase_create("mode_replace");
    tcase_add_test(tc, store_mode_replace);
    suite_add_tcase(s, tc);

    tc = tcase_create("mode_append_prepend");
    tcase_add_test(tc, store_mode_append_prepend);
    suite_add_tcase(s, tc);

    tc = tcase_create("mode_cas");
    tcase_add_test(tc, store_mode_cas);
    suite_add_tcase(s, tc);

    tc = tcase_create("incr_decr");
    tcase_add_test(tc, store_incr_decr);
    suite_add_tcase(s, tc);

    tc = tcase_create("expiry");
    tcase_add_test(tc, store_expiry);
    suite_add_tcase(s, tc);

    tc = tcase_create("reclaim_bounded");
    tcase_add_test(tc, store_reclaim_bounded);
    suite_add_tcase(s, tc);

    tc = tcase_create("mem_limit");
    tcase_add_test(tc, store_mem_limit);
    suite_add_tcase(s, tc);

    tc = tcase_create("too_big");
    tcase_add_test(tc, store_too_big);
    suite_add_tcase(s, tc);

    tc = tcase_create("sieve_keeps_hot");
    tcase_add_test(tc, store_sieve_keeps_hot);
    suite_add_tcase(s, tc);

    tc = tcase_create("lru_order");
    tcase_add_test(tc, store_lru_order);
    suite_add_tcase(s, tc);

    tc = tcase_create("drop_partition");
    tcase_add_test(tc, store_drop_partition);
    suite_add_tcase(s, tc);

    tc = tcase_create("drop_partition_deferred");
    tcase_add_test(tc, store_drop_partition_deferred);
    suite_add_tcase(s, tc);

    tc = tcase_create("flush");
    tcase_add_test(tc, store_flush);
    suite_add_tcase(s, tc);

    tc = tcase_create("insert_cold");
    tcase_add_test(tc, store_insert_cold);
    suite_add_tcase(s, tc);

    tc = tcase_create("scan_stops_and_resumes");
    tcase_add_test(tc, store_scan_stops_and_resumes);
    suite_add_tcase(s, tc);

    tc = tcase_create("chain_length");
    tcase_add_test(tc, store_chain_length);
    suite_add_tcase(s, tc);

    tc = tcase_create("item_words");
    tcase_add_test(tc, store_item_words);
    suite_add_tcase(s, tc);

    tc = tcase_create("touch_keeps_order");
    tcase_add_test(tc, store_touch_keeps_order);
    suite_add_tcase(s, tc);

    tc = tcase_create("alloc_fail");
    tcase_add_test(tc, store_alloc_fail);
    suite_add_tcase(s, tc);

    return s;
}
