/*
 * tests/unit/test_ring.c - the token ring of common/ring.c: token counts
 * and positions, ring owner at the boundaries (I02) and on ties (I01), the
 * same ring whatever the order of the adds, settings that are refused, and
 * the shares and name translation the placement and the stats build on.
 */
#include "tests/support/check_main.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/hash.h"
#include "common/ring.h"
#include "common/rng.h"

#define ONE BRIM_WEIGHT_PPM_ONE
#define NONE16 ((uint16_t) BRIM_NODE_NONE)

/* ---- helpers ----------------------------------------------------------- */

static void
ring_init_ok(struct brim_ring *ring, uint64_t seed, uint32_t v)
{
    char errbuf[BRIM_ERRBUF_LEN] = "";
    int  rc;

    rc = brim_ring_init(ring, seed, v, errbuf);
    ck_assert_msg(rc == 0, "init V=%u: rc=%s (%s)", v, brim_err_name(rc),
                  errbuf);
}

static void
add_ok(struct brim_ring *ring, const char *name, uint32_t weight_ppm)
{
    char errbuf[BRIM_ERRBUF_LEN] = "";
    int  rc;

    rc = brim_ring_add_node(ring, name, weight_ppm, errbuf);
    ck_assert_msg(rc == 0, "add %s: rc=%s (%s)", name, brim_err_name(rc),
                  errbuf);
}

static void
add_at_ok(struct brim_ring *ring, const char *name, const uint64_t *pos,
          uint32_t npos)
{
    char errbuf[BRIM_ERRBUF_LEN] = "";
    int  rc;

    rc = brim_ring_add_node_at(ring, name, ONE, pos, npos, errbuf);
    ck_assert_msg(rc == 0, "add_at %s: rc=%s (%s)", name, brim_err_name(rc),
                  errbuf);
}

static const char *
tok_name(const struct brim_ring *ring, size_t i)
{
    return ring->nodes[ring->tokens[i].node].name;
}

/* Case-insensitive substring test for error messages. */
static int
mentions(const char *text, const char *word)
{
    size_t i, j, n, m;

    n = strlen(text);
    m = strlen(word);
    for (i = 0; i + m <= n; i++) {
        for (j = 0; j < m; j++) {
            if (tolower((unsigned char) text[i + j])
                != tolower((unsigned char) word[j])) {
                break;
            }
        }
        if (j == m) {
            return 1;
        }
    }
    return 0;
}

/* The invariants every ring keeps: nodes strictly by name, tokens by
 * (position, node name), counts and weight sum consistent. */
static void
check_ring_sorted(const struct brim_ring *ring)
{
    size_t   i;
    uint64_t wsum, ntok;
    int      c;

    wsum = 0;
    ntok = 0;
    for (i = 0; i < ring->nnodes; i++) {
        ck_assert_uint_eq(strlen(ring->nodes[i].name), ring->nodes[i].name_len);
        if (i > 0) {
            ck_assert_msg(strcmp(ring->nodes[i - 1].name, ring->nodes[i].name)
                              < 0,
                          "nodes %zu \"%s\" and %zu \"%s\" out of order", i - 1,
                          ring->nodes[i - 1].name, i, ring->nodes[i].name);
        }
        wsum += ring->nodes[i].weight_ppm;
        ntok += ring->nodes[i].ntokens;
    }
    ck_assert_uint_eq(wsum, ring->weight_sum_ppm);
    ck_assert_uint_eq(ntok, ring->ntokens);
    for (i = 0; i < ring->ntokens; i++) {
        ck_assert_uint_lt(ring->tokens[i].node, ring->nnodes);
        if (i == 0) {
            continue;
        }
        ck_assert_uint_le(ring->tokens[i - 1].pos, ring->tokens[i].pos);
        if (ring->tokens[i - 1].pos == ring->tokens[i].pos) {
            c = strcmp(tok_name(ring, i - 1), tok_name(ring, i));
            ck_assert_msg(c <= 0, "tie at %#" PRIx64 ": \"%s\" before \"%s\"",
                          ring->tokens[i].pos, tok_name(ring, i - 1),
                          tok_name(ring, i));
        }
    }
}

/* Identical rings: the same nodes under the same indices, same tokens. */
static void
check_ring_equal(const struct brim_ring *a, const struct brim_ring *b)
{
    size_t i;

    ck_assert_uint_eq(a->seed, b->seed);
    ck_assert_uint_eq(a->tokens_per_node, b->tokens_per_node);
    ck_assert_uint_eq(a->nnodes, b->nnodes);
    ck_assert_uint_eq(a->ntokens, b->ntokens);
    ck_assert_uint_eq(a->weight_sum_ppm, b->weight_sum_ppm);
    for (i = 0; i < a->nnodes; i++) {
        ck_assert_str_eq(a->nodes[i].name, b->nodes[i].name);
        ck_assert_uint_eq(a->nodes[i].name_len, b->nodes[i].name_len);
        ck_assert_uint_eq(a->nodes[i].weight_ppm, b->nodes[i].weight_ppm);
        ck_assert_uint_eq(a->nodes[i].ntokens, b->nodes[i].ntokens);
    }
    for (i = 0; i < a->ntokens; i++) {
        ck_assert_msg(a->tokens[i].pos == b->tokens[i].pos
                          && a->tokens[i].node == b->tokens[i].node,
                      "token %zu: (%#" PRIx64 ", %u) vs (%#" PRIx64 ", %u)", i,
                      a->tokens[i].pos, a->tokens[i].node, b->tokens[i].pos,
                      b->tokens[i].node);
    }
}

/* The ring owner by definition: a linear scan for the first token at or
 * after POS, wrapping to the first token. RING must be sorted. */
static uint32_t
ref_owner(const struct brim_ring *ring, uint64_t pos)
{
    size_t i;

    for (i = 0; i < ring->ntokens; i++) {
        if (ring->tokens[i].pos >= pos) {
            return ring->tokens[i].node;
        }
    }
    return ring->tokens[0].node;
}

static int
u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

    return x < y ? -1 : x > y;
}

/* ---- token counts and positions ---------------------------------------- */

START_TEST(ring_token_count_rounding)
{
    static const struct {
        uint32_t v, w, n;
    } c[] = {
        {160, ONE, 160},
        {1, ONE, 1},
        {10, 1250000, 13}, /* 12.5: halves round up */
        {10, 1150000, 12}, /* 11.5 */
        {10, 1149999, 11}, /* 11.49999 */
        {10, 1140000, 11},
        {3, 500000, 2},   /* 1.5 */
        {7, 2500000, 18}, /* 17.5 */
        {7, 2499999, 17},
        {2, 250000, 1},              /* 0.5 */
        {4, 375000, 2},              /* 1.5 */
        {1, BRIM_WEIGHT_PPM_MIN, 1}, /* 0.001: at least one */
        {1, 499999, 1},
        {160, 3000, 1}, /* 0.48 */
        {160, 1000, 1}, /* 0.16 */
        {160, 3125, 1}, /* 0.5 exactly: 1 */
        {160, 9375, 2}, /* 1.5 exactly: 2 */
        {160, 2000000, 320},
        {160, 333333, 53}, /* 53.33328 */
        {3, 833334, 3},    /* 2.500002 */
        {3, 833333, 2},    /* 2.499999 */
        {BRIM_TOKENS_PER_NODE_MAX, BRIM_WEIGHT_PPM_MAX, 10000000},
        {BRIM_TOKENS_PER_NODE_MAX, ONE, 10000},
        {9999, BRIM_WEIGHT_PPM_MAX, 9999000},
    };
    size_t i;

    for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        ck_assert_msg(brim_ring_token_count(c[i].v, c[i].w) == c[i].n,
                      "V=%u weight=%u ppm: %u tokens, want %u", c[i].v, c[i].w,
                      brim_ring_token_count(c[i].v, c[i].w), c[i].n);
    }
}
END_TEST

START_TEST(ring_token_positions)
{
    static const struct {
        const char *name;
        uint32_t    w;
    } m[] = {
        {"n1", ONE},   {"n11", 1500000},
        {"b", 250000}, {"node-7.example:7000", 2000000},
        {"z", 1000},
    };
    struct brim_ring ring;
    uint64_t         got[64], want[64];
    size_t           i, k, n;
    uint32_t         j, count;
    int32_t          idx;

    ring_init_ok(&ring, 0xfeedull, 20);
    for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        add_ok(&ring, m[i].name, m[i].w);
    }
    check_ring_sorted(&ring);
    ck_assert_uint_eq(ring.nnodes, 5);
    ck_assert_uint_eq(ring.weight_sum_ppm,
                      1000000 + 1500000 + 250000 + 2000000 + 1000);
    /* Each node holds round(V x w) tokens at its hashed positions. */
    for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        idx = brim_ring_find_node(&ring, m[i].name, strlen(m[i].name));
        ck_assert_int_ge(idx, 0);
        count = brim_ring_token_count(20, m[i].w);
        ck_assert_uint_eq(ring.nodes[idx].ntokens, count);
        ck_assert_uint_eq(ring.nodes[idx].weight_ppm, m[i].w);
        n = 0;
        for (k = 0; k < ring.ntokens; k++) {
            if (ring.tokens[k].node == (uint32_t) idx) {
                ck_assert_uint_lt(n, 64);
                got[n++] = ring.tokens[k].pos;
            }
        }
        ck_assert_uint_eq(n, count);
        for (j = 0; j < count; j++) {
            want[j] =
                brim_hash_token(0xfeedull, m[i].name, strlen(m[i].name), j);
        }
        qsort(got, n, sizeof(got[0]), u64_cmp);
        qsort(want, count, sizeof(want[0]), u64_cmp);
        ck_assert_mem_eq(got, want, count * sizeof(got[0]));
    }
    brim_ring_destroy(&ring);
}
END_TEST

/* ---- I02: boundaries ---------------------------------------------------- */

START_TEST(ring_I02_boundaries)
{
    struct brim_ring ring;
    uint64_t         t1, t2, t3;
    int32_t          n1, n2, n3;

    /* Names chosen so that index order differs from token order. */
    t1 = 1000;
    t2 = 1ull << 40;
    t3 = UINT64_MAX - 1000;
    ring_init_ok(&ring, 1, 1);
    add_at_ok(&ring, "C", &t1, 1);
    add_at_ok(&ring, "A", &t2, 1);
    add_at_ok(&ring, "B", &t3, 1);
    check_ring_sorted(&ring);
    n1 = brim_ring_find_node(&ring, "C", 1);
    n2 = brim_ring_find_node(&ring, "A", 1);
    n3 = brim_ring_find_node(&ring, "B", 1);
    ck_assert_int_eq(n1, 2);
    ck_assert_int_eq(n2, 0);
    ck_assert_int_eq(n3, 1);

    ck_assert_uint_eq(brim_ring_owner(&ring, 0), (uint32_t) n1);
    ck_assert_uint_eq(brim_ring_owner(&ring, t1 - 1), (uint32_t) n1);
    ck_assert_uint_eq(brim_ring_owner(&ring, t1), (uint32_t) n1);
    ck_assert_uint_eq(brim_ring_owner(&ring, t1 + 1), (uint32_t) n2);
    ck_assert_uint_eq(brim_ring_owner(&ring, t2 - 1), (uint32_t) n2);
    ck_assert_uint_eq(brim_ring_owner(&ring, t2), (uint32_t) n2);
    ck_assert_uint_eq(brim_ring_owner(&ring, t2 + 1), (uint32_t) n3);
    ck_assert_uint_eq(brim_ring_owner(&ring, t3), (uint32_t) n3);
    ck_assert_uint_eq(brim_ring_owner(&ring, t3 + 1), (uint32_t) n1);
    ck_assert_uint_eq(brim_ring_owner(&ring, UINT64_MAX), (uint32_t) n1);

    ck_assert_uint_eq(brim_ring_successor(&ring, 0), 0);
    ck_assert_uint_eq(brim_ring_successor(&ring, t1), 0);
    ck_assert_uint_eq(brim_ring_successor(&ring, t1 + 1), 1);
    ck_assert_uint_eq(brim_ring_successor(&ring, t3), 2);
    ck_assert_uint_eq(brim_ring_successor(&ring, t3 + 1), 0);
    ck_assert_uint_eq(brim_ring_successor(&ring, UINT64_MAX), 0);
    brim_ring_destroy(&ring);
}
END_TEST

START_TEST(ring_owner_extremes)
{
    struct brim_ring ring;
    uint64_t         lo = 0, hi = UINT64_MAX, mid = 1ull << 63;

    /* Tokens at 0 and 2^64 - 1 themselves. */
    ring_init_ok(&ring, 1, 1);
    add_at_ok(&ring, "x", &lo, 1);
    add_at_ok(&ring, "y", &hi, 1);
    ck_assert_uint_eq(brim_ring_owner(&ring, 0), 0);
    ck_assert_uint_eq(brim_ring_owner(&ring, 1), 1);
    ck_assert_uint_eq(brim_ring_owner(&ring, mid), 1);
    ck_assert_uint_eq(brim_ring_owner(&ring, UINT64_MAX - 1), 1);
    ck_assert_uint_eq(brim_ring_owner(&ring, UINT64_MAX), 1);
    ck_assert_uint_eq(brim_ring_successor(&ring, UINT64_MAX), 1);
    brim_ring_destroy(&ring);

    /* One token owns every position. */
    ring_init_ok(&ring, 1, 1);
    add_at_ok(&ring, "solo", &mid, 1);
    ck_assert_uint_eq(brim_ring_owner(&ring, 0), 0);
    ck_assert_uint_eq(brim_ring_owner(&ring, mid), 0);
    ck_assert_uint_eq(brim_ring_owner(&ring, mid + 1), 0);
    ck_assert_uint_eq(brim_ring_owner(&ring, UINT64_MAX), 0);
    ck_assert_uint_eq(brim_ring_successor(&ring, mid + 1), 0);
    brim_ring_destroy(&ring);
}
END_TEST

START_TEST(ring_owner_matches_scan)
{
    struct brim_ring ring;
    struct brim_rng  rng;
    uint64_t         p;
    size_t           i, k;
    char             name[16];

    brim_rng_seed(&rng, 31337);
    ring_init_ok(&ring, 99, 40);
    for (i = 0; i < 17; i++) {
        snprintf(name, sizeof(name), "n%zu", i * 7);
        add_ok(&ring, name, (uint32_t) (250000 + 250000 * (i % 5)));
    }
    check_ring_sorted(&ring);
    for (k = 0; k < 20000; k++) {
        switch (k % 4) {
        case 0:
            p = brim_rng_next(&rng);
            break;
        default: /* a token position, or next to one */
            p = ring.tokens[brim_rng_below(&rng, ring.ntokens)].pos + (k % 4)
                - 2;
            break;
        }
        ck_assert_uint_eq(brim_ring_owner(&ring, p), ref_owner(&ring, p));
        i = brim_ring_successor(&ring, p);
        ck_assert_uint_lt(i, ring.ntokens);
        ck_assert(ring.tokens[i].pos >= p || i == 0);
        ck_assert(i == 0 || ring.tokens[i - 1].pos < p);
    }
    brim_ring_destroy(&ring);
}
END_TEST

/* ---- I01: ties ---------------------------------------------------------- */

static const uint64_t tie_a[] = {100, 5000, 1ull << 62};
static const uint64_t tie_b[] = {5000, 200, UINT64_MAX};
static const uint64_t tie_c[] = {5000, 100, 7};

static void
tie_ring(struct brim_ring *ring, const char *order)
{
    ring_init_ok(ring, 5, 3);
    for (; *order != '\0'; order++) {
        switch (*order) {
        case 'A':
            add_at_ok(ring, "A", tie_a, 3);
            break;
        case 'B':
            add_at_ok(ring, "B", tie_b, 3);
            break;
        default:
            add_at_ok(ring, "C", tie_c, 3);
            break;
        }
    }
    check_ring_sorted(ring);
}

START_TEST(ring_I01_ties)
{
    static const struct brim_token want[] = {
        {7, 2},    {100, 0},  {100, 2},        {200, 1},        {5000, 0},
        {5000, 1}, {5000, 2}, {1ull << 62, 0}, {UINT64_MAX, 1},
    };
    static const struct brim_token want_no_a[] = {
        {7, 1}, {100, 1}, {200, 0}, {5000, 0}, {5000, 1}, {UINT64_MAX, 0},
    };
    struct brim_ring abc, cba, bc;
    struct brim_rng  rng;
    uint64_t         probe;
    size_t           i;
    int              d;

    tie_ring(&abc, "ABC");
    tie_ring(&cba, "CBA");
    check_ring_equal(&abc, &cba);
    ck_assert_uint_eq(abc.ntokens, 9);
    for (i = 0; i < 9; i++) {
        ck_assert_uint_eq(abc.tokens[i].pos, want[i].pos);
        ck_assert_uint_eq(abc.tokens[i].node, want[i].node);
    }

    /* The smallest name wins a tie. */
    ck_assert_uint_eq(brim_ring_owner(&abc, 5000), 0);
    ck_assert_uint_eq(brim_ring_successor(&abc, 5000), 4);
    ck_assert_uint_eq(brim_ring_owner(&abc, 100), 0);
    ck_assert_uint_eq(brim_ring_owner(&abc, 8), 0);
    ck_assert_uint_eq(brim_ring_owner(&abc, 101), 1);
    ck_assert_uint_eq(brim_ring_owner(&abc, 0), 2);
    ck_assert_uint_eq(brim_ring_owner(&abc, 201), 0);
    ck_assert_uint_eq(brim_ring_owner(&abc, 5001), 0);
    ck_assert_uint_eq(brim_ring_owner(&abc, (1ull << 62) + 1), 1);

    /* Same owner for every probe, in both rings. */
    brim_rng_seed(&rng, 1);
    for (i = 0; i < 5000; i++) {
        if (i < 9 * 5) {
            d = (int) (i % 5) - 2;
            probe = want[i / 5].pos + (uint64_t) (int64_t) d;
        } else {
            probe = brim_rng_next(&rng) >> (i % 64);
        }
        ck_assert_uint_eq(brim_ring_owner(&abc, probe),
                          brim_ring_owner(&cba, probe));
        ck_assert_uint_eq(brim_ring_successor(&abc, probe),
                          brim_ring_successor(&cba, probe));
        ck_assert_uint_eq(brim_ring_owner(&abc, probe), ref_owner(&abc, probe));
    }

    /* Removing A removes only A's tokens; B and C shift down one index. */
    ck_assert_int_eq(brim_ring_remove_node(&abc, "A"), 0);
    ck_assert_int_eq(brim_ring_remove_node(&cba, "A"), 0);
    check_ring_sorted(&abc);
    check_ring_equal(&abc, &cba);
    ck_assert_uint_eq(abc.nnodes, 2);
    ck_assert_uint_eq(abc.ntokens, 6);
    ck_assert_uint_eq(abc.weight_sum_ppm, 2 * ONE);
    for (i = 0; i < 6; i++) {
        ck_assert_uint_eq(abc.tokens[i].pos, want_no_a[i].pos);
        ck_assert_uint_eq(abc.tokens[i].node, want_no_a[i].node);
    }
    ck_assert_uint_eq(brim_ring_owner(&abc, 5000), 0); /* now B */
    ck_assert_uint_eq(brim_ring_owner(&abc, 100), 1);  /* C */
    ck_assert_uint_eq(brim_ring_owner(&abc, 1ull << 62), 0);
    tie_ring(&bc, "CB");
    check_ring_equal(&abc, &bc);

    brim_ring_destroy(&abc);
    brim_ring_destroy(&cba);
    brim_ring_destroy(&bc);
}
END_TEST

START_TEST(ring_order_independent)
{
    static const char *names[] = {
        "n1", "n11", "n2",        "alpha", "beta", "A",
        "a",  "z9",  "node:7000", "m.x",   "k-1",  "q_",
    };
    static const uint32_t weights[] = {
        ONE,     500000, 1500000, 2000000, ONE,     1000,
        3333333, ONE,    250000,  ONE,     1250000, 10000000,
    };
    struct brim_ring first, ring;
    struct brim_rng  rng;
    size_t           order[12], i, j, tmp, round;

    brim_rng_seed(&rng, 2718);
    for (i = 0; i < 12; i++) {
        order[i] = i;
    }
    for (round = 0; round < 100; round++) {
        ring_init_ok(&ring, 0xabcull, 30);
        for (i = 0; i < 12; i++) {
            add_ok(&ring, names[order[i]], weights[order[i]]);
        }
        check_ring_sorted(&ring);
        if (round == 0) {
            first = ring;
        } else {
            check_ring_equal(&first, &ring);
            brim_ring_destroy(&ring);
        }
        for (i = 11; i > 0; i--) { /* Fisher-Yates */
            j = (size_t) brim_rng_below(&rng, i + 1);
            tmp = order[i];
            order[i] = order[j];
            order[j] = tmp;
        }
    }

    /* Adding then removing a node leaves the ring it was added to. */
    ring_init_ok(&ring, 0xabcull, 30);
    for (i = 0; i < 12; i++) {
        add_ok(&ring, names[i], weights[i]);
        if (i == 4) {
            add_ok(&ring, "ghost", 7000000);
        }
    }
    ck_assert_int_eq(brim_ring_remove_node(&ring, "ghost"), 0);
    check_ring_equal(&first, &ring);
    brim_ring_destroy(&ring);
    brim_ring_destroy(&first);
}
END_TEST

/* ---- refused input ------------------------------------------------------ */

START_TEST(ring_duplicate_name)
{
    struct brim_ring ring, snap;
    char             errbuf[BRIM_ERRBUF_LEN];
    uint64_t         p = 42;
    int              rc;

    ring_init_ok(&ring, 3, 10);
    add_ok(&ring, "A", ONE);
    add_ok(&ring, "B", 2000000);
    ck_assert_int_eq(brim_ring_copy(&snap, &ring), 0);

    errbuf[0] = '\0';
    rc = brim_ring_add_node(&ring, "B", ONE, errbuf);
    ck_assert_msg(rc == BRIM_EEXISTS, "rc=%s", brim_err_name(rc));
    ck_assert_msg(strstr(errbuf, "B") != NULL, "errbuf \"%s\"", errbuf);
    check_ring_equal(&snap, &ring);

    errbuf[0] = '\0';
    rc = brim_ring_add_node_at(&ring, "A", ONE, &p, 1, errbuf);
    ck_assert_msg(rc == BRIM_EEXISTS, "rc=%s", brim_err_name(rc));
    ck_assert_msg(strstr(errbuf, "A") != NULL, "errbuf \"%s\"", errbuf);
    check_ring_equal(&snap, &ring);

    /* Not found is its own code; the ring stays. */
    rc = brim_ring_remove_node(&ring, "C");
    ck_assert_msg(rc == BRIM_ENOTFOUND, "rc=%s", brim_err_name(rc));
    check_ring_equal(&snap, &ring);

    /* A node that leaves and returns under its name gets its positions. */
    ck_assert_int_eq(brim_ring_remove_node(&ring, "B"), 0);
    ck_assert_uint_eq(ring.nnodes, 1);
    add_ok(&ring, "B", 2000000);
    check_ring_equal(&snap, &ring);

    brim_ring_destroy(&snap);
    brim_ring_destroy(&ring);
}
END_TEST

START_TEST(ring_bad_names)
{
    static const char *bad[] = {
        "",
        "a b",
        "a/b",
        "tab\there",
        "n\n",
        "caf\xc3\xa9",
        "x\"y",
        "#1",
        "01234567890123456789012345678901234567890123456789012345678901234",
    };
    static const char *good[] = {
        "a",
        "Z",
        "0",
        "node-1.example.com:7000",
        "a_b",
        "...",
        "-",
        ":",
        "0123456789012345678901234567890123456789012345678901234567890123",
    };
    struct brim_ring ring, snap;
    char             errbuf[BRIM_ERRBUF_LEN];
    uint64_t         p = 9;
    size_t           i;
    int              rc;

    ck_assert_uint_eq(strlen(bad[8]), BRIM_NAME_MAX + 1);
    ck_assert_uint_eq(strlen(good[8]), BRIM_NAME_MAX);
    ring_init_ok(&ring, 3, 4);
    add_ok(&ring, "keep", ONE);
    ck_assert_int_eq(brim_ring_copy(&snap, &ring), 0);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        errbuf[0] = '\0';
        rc = brim_ring_add_node(&ring, bad[i], ONE, errbuf);
        ck_assert_msg(rc == BRIM_EINVAL, "name \"%s\": rc=%s", bad[i],
                      brim_err_name(rc));
        ck_assert_msg(mentions(errbuf, "name"),
                      "name \"%s\": errbuf \"%s\" does not name the setting",
                      bad[i], errbuf);
        check_ring_equal(&snap, &ring);
        errbuf[0] = '\0';
        rc = brim_ring_add_node_at(&ring, bad[i], ONE, &p, 1, errbuf);
        ck_assert_msg(rc == BRIM_EINVAL, "name \"%s\": rc=%s", bad[i],
                      brim_err_name(rc));
        ck_assert_msg(errbuf[0] != '\0', "name \"%s\": empty errbuf", bad[i]);
        check_ring_equal(&snap, &ring);
    }
    /* The too-long name's message gives the limit. */
    errbuf[0] = '\0';
    rc = brim_ring_add_node(&ring, bad[8], ONE, NULL);
    ck_assert_int_eq(rc, BRIM_EINVAL);
    rc = brim_ring_add_node(&ring, bad[8], ONE, errbuf);
    ck_assert_int_eq(rc, BRIM_EINVAL);
    ck_assert_msg(strstr(errbuf, "64") != NULL, "errbuf \"%s\"", errbuf);

    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        add_ok(&ring, good[i], ONE);
    }
    ck_assert_uint_eq(ring.nnodes, 1 + sizeof(good) / sizeof(good[0]));
    check_ring_sorted(&ring);
    brim_ring_destroy(&snap);
    brim_ring_destroy(&ring);
}
END_TEST

START_TEST(ring_bad_weights)
{
    static const uint32_t bad[] = {
        0, 1, BRIM_WEIGHT_PPM_MIN - 1, BRIM_WEIGHT_PPM_MAX + 1, UINT32_MAX,
    };
    struct brim_ring ring, snap;
    char             errbuf[BRIM_ERRBUF_LEN];
    uint64_t         p = 9;
    size_t           i;
    int              rc;

    ring_init_ok(&ring, 3, 4);
    add_ok(&ring, "keep", ONE);
    ck_assert_int_eq(brim_ring_copy(&snap, &ring), 0);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        errbuf[0] = '\0';
        rc = brim_ring_add_node(&ring, "w", bad[i], errbuf);
        ck_assert_msg(rc == BRIM_EINVAL, "weight %u: rc=%s", bad[i],
                      brim_err_name(rc));
        ck_assert_msg(mentions(errbuf, "weight"), "weight %u: errbuf \"%s\"",
                      bad[i], errbuf);
        check_ring_equal(&snap, &ring);
        errbuf[0] = '\0';
        rc = brim_ring_add_node_at(&ring, "w", bad[i], &p, 1, errbuf);
        ck_assert_msg(rc == BRIM_EINVAL, "weight %u: rc=%s", bad[i],
                      brim_err_name(rc));
        ck_assert_msg(mentions(errbuf, "weight"), "weight %u: errbuf \"%s\"",
                      bad[i], errbuf);
        check_ring_equal(&snap, &ring);
    }
    add_ok(&ring, "lo", BRIM_WEIGHT_PPM_MIN);
    add_ok(&ring, "hi", 1000000u);
    ck_assert_uint_eq(ring.nodes[brim_ring_find_node(&ring, "lo", 2)].ntokens,
                      1);
    brim_ring_destroy(&snap);
    brim_ring_destroy(&ring);

    /* The largest weight at the largest V: 10^7 tokens would be 160 MB;
     * check only the count the ring would give. */
    ck_assert_uint_eq(brim_ring_token_count(4, BRIM_WEIGHT_PPM_MAX), 4000);
    ring_init_ok(&ring, 3, 4);
    add_ok(&ring, "big", BRIM_WEIGHT_PPM_MAX);
    ck_assert_uint_eq(ring.ntokens, 4000);
    ck_assert_uint_eq(ring.weight_sum_ppm, BRIM_WEIGHT_PPM_MAX);
    brim_ring_destroy(&ring);

    /* V x weight = 2,000,000 tokens: the ring may refuse so many, but it
     * never gives the node a count other than round(V x weight), which
     * would break the weight ratios the caps assume. */
    ring_init_ok(&ring, 3, BRIM_TOKENS_PER_NODE_MAX);
    add_ok(&ring, "one", ONE);
    errbuf[0] = '\0';
    rc = brim_ring_add_node(&ring, "heavy", 200000000u, errbuf);
    if (rc == 0) {
        ck_assert_uint_eq(ring.ntokens, 10000 + 2000000);
    } else {
        ck_assert_msg(rc == BRIM_EINVAL, "rc=%s", brim_err_name(rc));
        ck_assert_msg(mentions(errbuf, "token"), "errbuf \"%s\"", errbuf);
        ck_assert_uint_eq(ring.nnodes, 1);
        ck_assert_uint_eq(ring.ntokens, 10000);
    }
    brim_ring_destroy(&ring);
}
END_TEST

START_TEST(ring_bad_tokens_per_node)
{
    static const uint32_t bad[] = {
        0,
        BRIM_TOKENS_PER_NODE_MAX + 1,
        UINT32_MAX,
    };
    struct brim_ring ring;
    char             errbuf[BRIM_ERRBUF_LEN];
    size_t           i;
    int              rc;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        errbuf[0] = '\0';
        memset(&ring, 0x5a, sizeof(ring));
        rc = brim_ring_init(&ring, 1, bad[i], errbuf);
        ck_assert_msg(rc == BRIM_EINVAL, "V=%u: rc=%s", bad[i],
                      brim_err_name(rc));
        /* The message names the setting and its limit. */
        ck_assert_msg(mentions(errbuf, "token")
                          && strstr(errbuf, "10000") != NULL,
                      "V=%u: errbuf \"%s\"", bad[i], errbuf);
        ck_assert_uint_eq(ring.nnodes, 0);
        ck_assert_uint_eq(ring.ntokens, 0);
        ck_assert_ptr_null(ring.nodes);
        ck_assert_ptr_null(ring.tokens);
        brim_ring_destroy(&ring); /* zeroed: safe */
        rc = brim_ring_init(&ring, 1, bad[i], NULL);
        ck_assert_int_eq(rc, BRIM_EINVAL);
        brim_ring_destroy(&ring);
    }
    ring_init_ok(&ring, 1, 1);
    ck_assert_uint_eq(ring.tokens_per_node, 1);
    brim_ring_destroy(&ring);
    ring_init_ok(&ring, 1, BRIM_TOKENS_PER_NODE_MAX);
    add_ok(&ring, "a", ONE);
    ck_assert_uint_eq(ring.ntokens, BRIM_TOKENS_PER_NODE_MAX);
    brim_ring_destroy(&ring);

    /* A zeroed ring is fine to destroy. */
    memset(&ring, 0, sizeof(ring));
    brim_ring_destroy(&ring);
}
END_TEST

/* ---- shares, translation, copy, lookup ---------------------------------- */

/* Shares by definition: a token at p owns (previous token, p], in exact
 * 128-bit arithmetic; the first token's arc wraps past 2^64. */
static void
ref_shares(const struct brim_ring *ring, double *share)
{
    unsigned __int128 len[64] = {0};
    unsigned __int128 arc;
    size_t            i, n;

    n = ring->ntokens;
    ck_assert_uint_le(ring->nnodes, 64);
    for (i = 0; i < n; i++) {
        if (i == 0) {
            arc = ((unsigned __int128) 1 << 64) - ring->tokens[n - 1].pos
                + ring->tokens[0].pos;
        } else {
            arc = ring->tokens[i].pos - ring->tokens[i - 1].pos;
        }
        len[ring->tokens[i].node] += arc;
    }
    for (i = 0; i < ring->nnodes; i++) {
        share[i] = (double) len[i] / 18446744073709551616.0;
    }
}

START_TEST(ring_shares)
{
    struct brim_ring ring;
    double           share[64], want[64], sum;
    uint64_t         q1 = 1ull << 62, q2 = 1ull << 63, p;
    size_t           i;
    char             name[16];

    /* B owns (2^62, 2^63]; A the rest, across the wrap. */
    ring_init_ok(&ring, 1, 1);
    add_at_ok(&ring, "A", &q1, 1);
    add_at_ok(&ring, "B", &q2, 1);
    brim_ring_shares(&ring, share);
    ck_assert_double_eq(share[0], 0.75);
    ck_assert_double_eq(share[1], 0.25);
    brim_ring_destroy(&ring);

    /* One token owns the whole ring. */
    ring_init_ok(&ring, 1, 1);
    add_at_ok(&ring, "A", &q1, 1);
    brim_ring_shares(&ring, share);
    ck_assert_double_eq(share[0], 1.0);
    brim_ring_destroy(&ring);

    /* Every token on one position: the first in name order owns every
     * position, so its share is 1 and the other's 0. */
    p = 12345;
    ring_init_ok(&ring, 1, 1);
    add_at_ok(&ring, "B", &p, 1);
    add_at_ok(&ring, "A", &p, 1);
    ck_assert_uint_eq(brim_ring_owner(&ring, 0), 0);
    ck_assert_uint_eq(brim_ring_owner(&ring, UINT64_MAX), 0);
    brim_ring_shares(&ring, share);
    ck_assert_msg(share[0] == 1.0 && share[1] == 0.0, "shares %g %g, want 1 0",
                  share[0], share[1]);
    brim_ring_destroy(&ring);

    /* A hashed ring: the definition, and a sum of 1. */
    ring_init_ok(&ring, 77, 50);
    for (i = 0; i < 20; i++) {
        snprintf(name, sizeof(name), "s%zu", i);
        add_ok(&ring, name, (uint32_t) (ONE / 2 + 100000 * i));
    }
    brim_ring_shares(&ring, share);
    ref_shares(&ring, want);
    sum = 0;
    for (i = 0; i < ring.nnodes; i++) {
        ck_assert_double_eq_tol(share[i], want[i], 1e-12);
        ck_assert_double_ge(share[i], 0.0);
        sum += share[i];
    }
    ck_assert_double_eq_tol(sum, 1.0, 1e-9);
    brim_ring_destroy(&ring);
}
END_TEST

START_TEST(ring_translate)
{
    struct brim_ring abc, bcd, empty;
    uint16_t         t[4];

    ring_init_ok(&abc, 1, 3);
    ring_init_ok(&bcd, 1, 3);
    ring_init_ok(&empty, 1, 3);
    add_ok(&abc, "C", ONE);
    add_ok(&abc, "A", ONE);
    add_ok(&abc, "B", ONE);
    add_ok(&bcd, "D", ONE);
    add_ok(&bcd, "B", ONE);
    add_ok(&bcd, "C", 2000000);

    memset(t, 0x77, sizeof(t));
    brim_ring_translate(&abc, &bcd, t);
    ck_assert_uint_eq(t[0], NONE16); /* A */
    ck_assert_uint_eq(t[1], 0);      /* B */
    ck_assert_uint_eq(t[2], 1);      /* C */
    ck_assert_uint_eq(t[3], 0x7777); /* untouched */

    brim_ring_translate(&bcd, &abc, t);
    ck_assert_uint_eq(t[0], 1);      /* B */
    ck_assert_uint_eq(t[1], 2);      /* C */
    ck_assert_uint_eq(t[2], NONE16); /* D */

    brim_ring_translate(&abc, &abc, t);
    ck_assert_uint_eq(t[0], 0);
    ck_assert_uint_eq(t[1], 1);
    ck_assert_uint_eq(t[2], 2);

    brim_ring_translate(&abc, &empty, t);
    ck_assert_uint_eq(t[0], NONE16);
    ck_assert_uint_eq(t[1], NONE16);
    ck_assert_uint_eq(t[2], NONE16);

    brim_ring_destroy(&abc);
    brim_ring_destroy(&bcd);
    brim_ring_destroy(&empty);
}
END_TEST

START_TEST(ring_copy_find)
{
    struct brim_ring ring, copy;
    size_t           i;

    ring_init_ok(&ring, 8, 16);
    add_ok(&ring, "n11", ONE);
    add_ok(&ring, "n1", 1500000);
    add_ok(&ring, "m", ONE);
    ck_assert_int_eq(brim_ring_copy(&copy, &ring), 0);
    check_ring_equal(&ring, &copy);
    ck_assert_ptr_ne(copy.nodes, ring.nodes);
    ck_assert_ptr_ne(copy.tokens, ring.tokens);
    for (i = 0; i < ring.nnodes; i++) {
        ck_assert_ptr_ne(copy.nodes[i].name, ring.nodes[i].name);
    }

    ck_assert_int_eq(brim_ring_find_node(&ring, "m", 1), 0);
    ck_assert_int_eq(brim_ring_find_node(&ring, "n1", 2), 1);
    ck_assert_int_eq(brim_ring_find_node(&ring, "n11", 3), 2);
    /* NAME_LEN bounds the name: a prefix of a longer string. */
    ck_assert_int_eq(brim_ring_find_node(&ring, "n11", 2), 1);
    ck_assert_int_eq(brim_ring_find_node(&ring, "mx", 1), 0);
    ck_assert_int_eq(brim_ring_find_node(&ring, "n", 1), -1);
    ck_assert_int_eq(brim_ring_find_node(&ring, "n111", 4), -1);
    ck_assert_int_eq(brim_ring_find_node(&ring, "", 0), -1);

    /* The copy is independent of the original. */
    ck_assert_int_eq(brim_ring_remove_node(&ring, "n1"), 0);
    brim_ring_destroy(&ring);
    ck_assert_int_eq(brim_ring_find_node(&copy, "n1", 2), 1);
    check_ring_sorted(&copy);
    ck_assert_uint_eq(copy.ntokens, 16 + 24 + 16);

    /* Remove everything: an empty ring. */
    ck_assert_int_eq(brim_ring_remove_node(&copy, "m"), 0);
    ck_assert_int_eq(brim_ring_remove_node(&copy, "n11"), 0);
    ck_assert_int_eq(brim_ring_remove_node(&copy, "n1"), 0);
    ck_assert_uint_eq(copy.nnodes, 0);
    ck_assert_uint_eq(copy.ntokens, 0);
    ck_assert_uint_eq(copy.weight_sum_ppm, 0);
    add_ok(&copy, "again", ONE);
    ck_assert_uint_eq(copy.ntokens, 16);
    brim_ring_destroy(&copy);
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s;
    TCase *tc;

    s = suite_create("ring");

    tc = tcase_create("token_count_rounding");
    tcase_add_test(tc, ring_token_count_rounding);
    suite_add_tcase(s, tc);

    tc = tcase_create("token_positions");
    tcase_add_test(tc, ring_token_positions);
    suite_add_tcase(s, tc);

    tc = tcase_create("I02_boundaries");
    tcase_add_test(tc, ring_I02_boundaries);
    suite_add_tcase(s, tc);

    tc = tcase_create("owner_extremes");
    tcase_add_test(tc, ring_owner_extremes);
    suite_add_tcase(s, tc);

    tc = tcase_create("owner_matches_scan");
    tcase_add_test(tc, ring_owner_matches_scan);
    suite_add_tcase(s, tc);

    tc = tcase_create("I01_ties");
    tcase_add_test(tc, ring_I01_ties);
    suite_add_tcase(s, tc);

    tc = tcase_create("order_independent");
    tcase_add_test(tc, ring_order_independent);
    suite_add_tcase(s, tc);

    tc = tcase_create("duplicate_name");
    tcase_add_test(tc, ring_duplicate_name);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad_names");
    tcase_add_test(tc, ring_bad_names);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad_weights");
    tcase_add_test(tc, ring_bad_weights);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad_tokens_per_node");
    tcase_add_test(tc, ring_bad_tokens_per_node);
    suite_add_tcase(s, tc);

    tc = tcase_create("shares");
    tcase_add_test(tc, ring_shares);
    suite_add_tcase(s, tc);

    tc = tcase_create("translate");
    tcase_add_test(tc, ring_translate);
    suite_add_tcase(s, tc);

    tc = tcase_create("copy_find");
    tcase_add_test(tc, ring_copy_find);
    suite_add_tcase(s, tc);

    return s;
}
