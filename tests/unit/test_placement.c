/*
 * tests/unit/test_placement.c - bounded-load placement (common/placement.c):
 * exact integer caps and the parsing of eps and weights, the settings that
 * are refused (I04), the walk that wraps past 2^64 (I03), the same map
 * whatever the order of the members (I05), and properties over seeded
 * random memberships checked against reference implementations of both
 * rules written here, independently, from DESIGN.md section 4.
 *
 * A failing property prints its case seed; BRIM_TEST_SEED=<n> changes the
 * run's base seed and BRIM_TEST_CASE_SEED=<n> replays one case.
 */
#include "tests/support/check_main.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "common/map.h"
#include "common/placement.h"
#include "common/ring.h"
#include "common/rng.h"

#define ONE BRIM_WEIGHT_PPM_ONE
#define NONE16 ((uint16_t) BRIM_NODE_NONE)

/* ---- small helpers ------------------------------------------------------ */

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
add_at_ok(struct brim_ring *ring, const char *name, uint32_t weight_ppm,
          const uint64_t *pos, uint32_t npos)
{
    char errbuf[BRIM_ERRBUF_LEN] = "";
    int  rc;

    rc = brim_ring_add_node_at(ring, name, weight_ppm, pos, npos, errbuf);
    ck_assert_msg(rc == 0, "add_at %s: rc=%s (%s)", name, brim_err_name(rc),
                  errbuf);
}

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

static uint16_t
node_of(const struct brim_ring *ring, const char *name)
{
    int32_t idx;

    idx = brim_ring_find_node(ring, name, strlen(name));
    ck_assert_msg(idx >= 0, "node %s not on the ring", name);
    return (uint16_t) idx;
}

/* ---- reference implementations (DESIGN.md sections 1, 3, 4) ------------- */

/* The seed of the property case running now, for messages from code that
 * does not see the case (0 outside property tests). */
static uint64_t prop_seed_now;

/* cap = ceil((1 + eps) x units x w / W), eps and weights in millionths. */
static uint64_t
ref_cap(uint64_t units, uint64_t eps_ppm, uint64_t w, uint64_t wsum)
{
    unsigned __int128 num, den, q;

    if (eps_ppm == BRIM_EPS_NONE) {
        return UINT64_MAX;
    }
    num = (unsigned __int128) (1000000u + eps_ppm) * units * w;
    den = (unsigned __int128) 1000000u * wsum;
    q = (num + den - 1) / den;
    ck_assert_msg(q <= UINT64_MAX, "case seed %#" PRIx64 ": cap overflow",
                  prop_seed_now);
    return (uint64_t) q;
}

/* A ring sorted here, by position then node name, from the ring's tokens,
 * so that the reference does not lean on the order ring.c keeps. */
struct ref_tok {
    uint64_t    pos;  /* ring position */
    uint32_t    node; /* node index of the ring under test */
    const char *name; /* that node's name */
};

struct ref_ring {
    size_t          n;      /* tokens */
    struct ref_tok *t;      /* sorted by (pos, name) */
    uint32_t        nnodes; /* members */
    uint64_t       *cap;    /* nnodes caps for the units placed */
};

static int
ref_tok_cmp(const void *a, const void *b)
{
    const struct ref_tok *x = a, *y = b;

    if (x->pos != y->pos) {
        return x->pos < y->pos ? -1 : 1;
    }
    return strcmp(x->name, y->name);
}

static void
ref_ring_build(struct ref_ring *rr, const struct brim_ring *ring,
               uint64_t units, uint64_t eps_ppm)
{
    size_t i;

    rr->n = ring->ntokens;
    rr->nnodes = ring->nnodes;
    rr->t = calloc(rr->n + 1, sizeof(*rr->t));
    rr->cap = calloc(rr->nnodes + 1, sizeof(*rr->cap));
    ck_assert(rr->t != NULL && rr->cap != NULL);
    for (i = 0; i < rr->n; i++) {
        rr->t[i].pos = ring->tokens[i].pos;
        rr->t[i].node = ring->tokens[i].node;
        rr->t[i].name = ring->nodes[ring->tokens[i].node].name;
    }
    qsort(rr->t, rr->n, sizeof(*rr->t), ref_tok_cmp);
    for (i = 0; i < rr->nnodes; i++) {
        rr->cap[i] = ref_cap(units, eps_ppm, ring->nodes[i].weight_ppm,
                             ring->weight_sum_ppm);
    }
}

static void
ref_ring_free(struct ref_ring *rr)
{
    free(rr->t);
    free(rr->cap);
}

/* The first token at or after POS (ties: the smallest name, which sorts
 * first), wrapping to token 0 past the last. */
static size_t
ref_successor(const struct ref_ring *rr, uint64_t pos)
{
    size_t lo, hi, mid;

    lo = 0;
    hi = rr->n;
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (rr->t[mid].pos < pos) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo == rr->n ? 0 : lo;
}

static uint32_t
ref_ring_owner(const struct ref_ring *rr, uint64_t pos)
{
    return rr->t[ref_successor(rr, pos)].node;
}

/* Walk clockwise token by token from POS's successor; the first node
 * whose count is below its cap takes the unit. */
static uint32_t
ref_walk(const struct ref_ring *rr, uint64_t pos, uint64_t *count)
{
    size_t   start, k;
    uint32_t node;

    start = ref_successor(rr, pos);
    for (k = 0; k < rr->n; k++) {
        node = rr->t[(start + k) % rr->n].node;
        if (count[node] < rr->cap[node]) {
            count[node]++;
            return node;
        }
    }
    ck_abort_msg("case seed %#" PRIx64 ": reference walk found no room "
                 "at %#" PRIx64,
                 prop_seed_now, pos);
    return 0;
}

static void
ref_replace(const struct brim_ring *ring, uint64_t eps_ppm, const uint64_t *pos,
            size_t n, uint16_t *owner)
{
    struct ref_ring rr;
    uint64_t       *count;
    size_t          i;

    ref_ring_build(&rr, ring, n, eps_ppm);
    count = calloc(ring->nnodes + 1, sizeof(*count));
    ck_assert_ptr_nonnull(count);
    for (i = 0; i < n; i++) {
        owner[i] = (uint16_t) ref_walk(&rr, pos[i], count);
    }
    free(count);
    ref_ring_free(&rr);
}

/* Index in RING of the node called NAME, or NONE16; a linear scan. */
static uint16_t
ref_find(const struct brim_ring *ring, const char *name)
{
    uint32_t i;

    for (i = 0; i < ring->nnodes; i++) {
        if (strcmp(ring->nodes[i].name, name) == 0) {
            return (uint16_t) i;
        }
    }
    return NONE16;
}

/*
 * The rebalance rule, step by step as DESIGN.md section 4 words it.
 * Displaced means owned by a node other than the ring owner on the new
 * ring (the ring the new map belongs to).
 */
static void
ref_rebalance(const struct brim_ring *old_ring, const uint16_t *old_owner,
              const struct brim_ring *new_ring, uint64_t eps_ppm,
              const uint64_t *pos, size_t n, uint16_t *new_owner,
              uint8_t *reason)
{
    struct ref_ring rr;
    uint64_t       *count, excess;
    uint32_t       *ro;
    uint16_t       *trans;
    uint8_t        *settled, *shed, *newcomer;
    uint32_t        j;
    size_t          i;
    int             pass;

    ref_ring_build(&rr, new_ring, n, eps_ppm);
    count = calloc(new_ring->nnodes + 1, sizeof(*count));
    ro = calloc(n + 1, sizeof(*ro));
    trans = calloc(old_ring->nnodes + 1, sizeof(*trans));
    settled = calloc(n + 1, 1);
    shed = calloc(n + 1, 1);
    newcomer = calloc(new_ring->nnodes + 1, 1);
    ck_assert(count != NULL && ro != NULL && trans != NULL && settled != NULL
              && shed != NULL && newcomer != NULL);

    for (j = 0; j < old_ring->nnodes; j++) {
        trans[j] = ref_find(new_ring, old_ring->nodes[j].name);
    }
    for (j = 0; j < new_ring->nnodes; j++) {
        newcomer[j] = ref_find(old_ring, new_ring->nodes[j].name) == NONE16;
    }

    /* 1. Unsettled: old owner gone, or the new ring owner is a newcomer. */
    for (i = 0; i < n; i++) {
        ro[i] = ref_ring_owner(&rr, pos[i]);
        new_owner[i] = NONE16;
        if (old_owner[i] == NONE16 || trans[old_owner[i]] == NONE16
            || newcomer[ro[i]]) {
            continue;
        }
        settled[i] = 1;
        new_owner[i] = trans[old_owner[i]];
        count[new_owner[i]]++;
    }

    /* 2. Over-cap nodes shed: displaced units in reverse index order,
     * then natural ones in reverse index order. */
    for (j = 0; j < new_ring->nnodes; j++) {
        if (count[j] <= rr.cap[j]) {
            continue;
        }
        excess = count[j] - rr.cap[j];
        for (pass = 0; pass < 2 && excess > 0; pass++) {
            for (i = n; i-- > 0 && excess > 0;) {
                if (settled[i] == 0 || new_owner[i] != j
                    || (pass == 0) != (ro[i] != j)) {
                    continue;
                }
                settled[i] = 0;
                shed[i] = 1;
                new_owner[i] = NONE16;
                count[j]--;
                excess--;
            }
        }
        ck_assert_msg(excess == 0,
                      "case seed %#" PRIx64 ": %s cannot "
                      "shed enough",
                      prop_seed_now, new_ring->nodes[j].name);
    }

    /* 3. Unsettled units walk in index order. */
    for (i = 0; i < n; i++) {
        if (settled[i] == 0) {
            new_owner[i] = (uint16_t) ref_walk(&rr, pos[i], count);
        }
    }

    for (i = 0; i < n; i++) {
        if (old_owner[i] != NONE16 && trans[old_owner[i]] == new_owner[i]) {
            reason[i] = BRIM_MOVE_NONE;
        } else if (shed[i] || new_owner[i] != ro[i]) {
            reason[i] = BRIM_MOVE_CAP;
        } else {
            reason[i] = BRIM_MOVE_ARC;
        }
    }

    free(count);
    free(ro);
    free(trans);
    free(settled);
    free(shed);
    free(newcomer);
    ref_ring_free(&rr);
}

/* ---- caps and parsing --------------------------------------------------- */

START_TEST(placement_cap_exact)
{
    uint64_t              n, u, e, sum;
    size_t                k, i;
    static const uint64_t eps[] = {
        0, 1, 10000, 50000, 100000, 250000, 1000000, 333333, BRIM_EPS_PPM_MAX};

    /* The case of the design: float arithmetic would say 12. */
    ck_assert_uint_eq(brim_cap(50, 100000, ONE, 5 * ONE), 11);
    ck_assert_uint_eq(brim_cap(50, 0, ONE, 5 * ONE), 10);
    ck_assert_uint_eq(brim_cap(51, 0, ONE, 5 * ONE), 11);
    ck_assert_uint_eq(brim_cap(1000, 50000, ONE, 3 * ONE), 350);
    ck_assert_uint_eq(brim_cap(65536, 50000, ONE, 3 * ONE), 22938);
    ck_assert_uint_eq(brim_cap(65536, 0, ONE, 65536ull * ONE), 1);
    ck_assert_uint_eq(brim_cap(7, 0, ONE, 7 * ONE), 1);
    ck_assert_uint_eq(brim_cap(8, 0, ONE, 7 * ONE), 2);
    ck_assert_uint_eq(brim_cap(4, 250000, ONE, 2 * ONE), 3);
    ck_assert_uint_eq(brim_cap(0, 100000, ONE, 5 * ONE), 0);
    ck_assert_uint_eq(brim_cap(1, 0, ONE, 4096ull * ONE), 1);
    ck_assert_uint_eq(brim_cap(100, BRIM_EPS_PPM_MAX, ONE, 10 * ONE), 10010);

    /* Weights: 2 and 1 of 100 units; 0.5 of 2.5 with eps 0.2. */
    ck_assert_uint_eq(brim_cap(100, 0, 2 * ONE, 3 * ONE), 67);
    ck_assert_uint_eq(brim_cap(100, 0, ONE, 3 * ONE), 34);
    ck_assert_uint_eq(brim_cap(100, 200000, 500000, 2500000), 24);
    ck_assert_uint_eq(brim_cap(1000, 100000, 1500000, 3000000), 550);
    ck_assert_uint_eq(brim_cap(999, 1, 1000, 1000), 1000);

    /* No cap. */
    ck_assert_uint_eq(brim_cap(50, BRIM_EPS_NONE, ONE, 5 * ONE), UINT64_MAX);
    ck_assert_uint_eq(brim_cap(0, BRIM_EPS_NONE, ONE, ONE), UINT64_MAX);

    /* Products far past 2^64 stay exact in 128 bits. */
    ck_assert_uint_eq(
        brim_cap(UINT64_MAX, 0, BRIM_WEIGHT_PPM_MAX, BRIM_WEIGHT_PPM_MAX),
        UINT64_MAX);
    ck_assert_uint_eq(brim_cap(1ull << 60, 500000, 300000000, 900000000),
                      1ull << 59);
    ck_assert_uint_eq(brim_cap(1ull << 40, BRIM_EPS_PPM_MAX,
                               BRIM_WEIGHT_PPM_MAX, BRIM_WEIGHT_PPM_MAX),
                      1001ull << 40);
    ck_assert_uint_eq(brim_cap((1ull << 62) + 1, 0, BRIM_WEIGHT_PPM_MAX,
                               2ull * BRIM_WEIGHT_PPM_MAX),
                      (1ull << 61) + 1);
    ck_assert_uint_eq(brim_cap(3ull << 61, 0, BRIM_WEIGHT_PPM_MAX,
                               4096ull * BRIM_WEIGHT_PPM_MAX),
                      3ull << 49);

    /* All weights 1: ceil((1+eps) U / N); N x cap >= U (I03). */
    for (k = 0; k < sizeof(eps) / sizeof(eps[0]); k++) {
        e = eps[k];
        for (n = 1; n <= 300; n += (n < 20 ? 1 : 37)) {
            for (u = BRIM_PARTITIONS_MIN; u <= BRIM_PARTITIONS_MAX; u <<= 1) {
                ck_assert_uint_eq(brim_cap(u, e, ONE, n * ONE),
                                  ref_cap(u, e, ONE, n * ONE));
                ck_assert_uint_ge(n * brim_cap(u, e, ONE, n * ONE), u);
            }
            for (u = 0; u < 200; u++) {
                ck_assert_uint_eq(brim_cap(u, e, 1234567, n * 1234567),
                                  ref_cap(u, e, ONE, n * ONE));
            }
        }
    }

    /* Any weights: the caps cover the units. */
    {
        static const uint64_t w[] = {
            1000, ONE, 1234567, 2500000, 999999, BRIM_WEIGHT_PPM_MAX, 7};
        uint64_t wsum = 0;

        for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
            wsum += w[i];
        }
        for (u = 1; u < 70000; u = u * 3 + 1) {
            sum = 0;
            for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
                ck_assert_uint_eq(brim_cap(u, 0, w[i], wsum),
                                  ref_cap(u, 0, w[i], wsum));
                sum += brim_cap(u, 0, w[i], wsum);
            }
            ck_assert_uint_ge(sum, u);
        }
    }
}
END_TEST

START_TEST(placement_ring_caps)
{
    struct brim_ring ring;
    uint64_t         caps[4], p = 1;

    ring_init_ok(&ring, 1, 2);
    add_at_ok(&ring, "a", ONE, &p, 1);
    add_at_ok(&ring, "b", 2 * ONE, &p, 1);
    add_at_ok(&ring, "c", 500000, &p, 1);
    brim_ring_caps(&ring, 100, 0, caps);
    ck_assert_uint_eq(caps[0], 29); /* 100 x 1 / 3.5 = 28.57 */
    ck_assert_uint_eq(caps[1], 58); /* 57.14 */
    ck_assert_uint_eq(caps[2], 15); /* 14.29 */
    brim_ring_caps(&ring, 350, 100000, caps);
    ck_assert_uint_eq(caps[0], 110);
    ck_assert_uint_eq(caps[1], 220);
    ck_assert_uint_eq(caps[2], 55);
    brim_ring_caps(&ring, 350, BRIM_EPS_NONE, caps);
    ck_assert_uint_eq(caps[0], UINT64_MAX);
    ck_assert_uint_eq(caps[2], UINT64_MAX);
    brim_ring_destroy(&ring);
}
END_TEST

START_TEST(placement_ppm_parse_accepts)
{
    static const struct {
        const char *text;
        uint64_t    ppm;
    } ok[] = {
        {"0", 0},
        {"0.05", 50000},
        {"1.0", 1000000},
        {"0.10", 100000},
        {"1", 1000000},
        {"12.5", 12500000},
        {"0.000001", 1},
        {"0.1000000", 100000}, /* zeros past the sixth digit */
        {"0.0000010", 1},
        {"0.25", 250000},
        {"1000", 1000000000},
        {"999.999999", 999999999},
    };
    char     errbuf[BRIM_ERRBUF_LEN];
    uint64_t ppm;
    size_t   i;
    int      rc;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        ppm = 12345;
        rc = brim_ppm_parse("weight", ok[i].text, 1000000000, &ppm, errbuf);
        ck_assert_msg(rc == 0, "\"%s\": rc=%s (%s)", ok[i].text,
                      brim_err_name(rc), errbuf);
        ck_assert_msg(ppm == ok[i].ppm,
                      "\"%s\" gave %" PRIu64 ", want %" PRIu64, ok[i].text, ppm,
                      ok[i].ppm);
        ppm = 12345;
        rc = brim_eps_parse(ok[i].text, &ppm, errbuf);
        ck_assert_msg(rc == 0, "eps \"%s\": rc=%s (%s)", ok[i].text,
                      brim_err_name(rc), errbuf);
        ck_assert_uint_eq(ppm, ok[i].ppm);
    }
    ppm = 0;
    ck_assert_int_eq(brim_eps_parse("none", &ppm, NULL), 0);
    ck_assert_uint_eq(ppm, BRIM_EPS_NONE);
    /* The limit itself is accepted. */
    ck_assert_int_eq(brim_ppm_parse("x", "2.5", 2500000, &ppm, NULL), 0);
    ck_assert_uint_eq(ppm, 2500000);
}
END_TEST

START_TEST(placement_ppm_parse_rejects)
{
    static const char *bad[] = {
        "-0.1",
        "1e-3",
        "0.0000001",
        "",
        "abc",
        "0.1.2",
        "+1",
        " 1",
        "1 ",
        "0x10",
        "1,5",
        "-0",
        "1e3",
        "0.00000011",
        "nan",
        "inf",
        "99999999999999999999999",
        "18446744073709551616",
        "18446744073709.551616",
        "1000.000001",
        "1001",
        "none",
    };
    char     errbuf[BRIM_ERRBUF_LEN];
    uint64_t ppm;
    size_t   i;
    int      rc;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ppm = 777;
        errbuf[0] = '\0';
        rc = brim_ppm_parse("weight", bad[i], 1000000000, &ppm, errbuf);
        ck_assert_msg(rc == BRIM_EINVAL, "\"%s\": rc=%s, ppm=%" PRIu64, bad[i],
                      brim_err_name(rc), ppm);
        ck_assert_msg(ppm == 777, "\"%s\": *ppm written on error", bad[i]);
        /* WHAT starts the message, which names the text. */
        ck_assert_msg(strncmp(errbuf, "weight", 6) == 0,
                      "\"%s\": errbuf \"%s\"", bad[i], errbuf);
        ck_assert_msg(bad[i][0] == '\0' || strstr(errbuf, bad[i]) != NULL,
                      "\"%s\": errbuf \"%s\" lacks the text", bad[i], errbuf);
        ck_assert_int_eq(
            brim_ppm_parse("weight", bad[i], 1000000000, &ppm, NULL),
            BRIM_EINVAL);
        if (strcmp(bad[i], "none") == 0) {
            continue;
        }
        errbuf[0] = '\0';
        rc = brim_eps_parse(bad[i], &ppm, errbuf);
        ck_assert_msg(rc == BRIM_EINVAL, "eps \"%s\": rc=%s", bad[i],
                      brim_err_name(rc));
        ck_assert_msg(ppm == 777, "eps \"%s\": *ppm written", bad[i]);
        ck_assert_msg(strncmp(errbuf, "eps", 3) == 0,
                      "eps \"%s\": errbuf \"%s\"", bad[i], errbuf);
    }

    /* Above the caller's limit: the message gives the limit. */
    errbuf[0] = '\0';
    rc = brim_ppm_parse("weight", "3", 2500000, &ppm, errbuf);
    ck_assert_msg(rc == BRIM_EINVAL, "rc=%s", brim_err_name(rc));
    ck_assert_msg(strstr(errbuf, "2.5") != NULL
                      || strstr(errbuf, "2500000") != NULL,
                  "errbuf \"%s\" lacks the limit", errbuf);
    ck_assert_uint_eq(ppm, 777);

    /* With the widest limit, the value must not wrap past 2^64: the most
     * is 18446744073709.551615. */
    rc = brim_ppm_parse("x", "18446744073709.551615", UINT64_MAX, &ppm, NULL);
    ck_assert_msg(rc == 0, "rc=%s", brim_err_name(rc));
    ck_assert_uint_eq(ppm, UINT64_MAX);
    ppm = 777;
    rc = brim_ppm_parse("x", "18446744073709.551616", UINT64_MAX, &ppm, NULL);
    ck_assert_msg(rc == BRIM_EINVAL, "rc=%s, ppm=%" PRIu64, brim_err_name(rc),
                  ppm);
    rc = brim_ppm_parse("x", "18446744073709.999999", UINT64_MAX, &ppm, NULL);
    ck_assert_msg(rc == BRIM_EINVAL, "rc=%s, ppm=%" PRIu64, brim_err_name(rc),
                  ppm);
    ck_assert_uint_eq(ppm, 777);
}
END_TEST

START_TEST(placement_move_reason_name)
{
    ck_assert_str_eq(brim_move_reason_name(BRIM_MOVE_NONE), "none");
    ck_assert_str_eq(brim_move_reason_name(BRIM_MOVE_ARC), "arc");
    ck_assert_str_eq(brim_move_reason_name(BRIM_MOVE_CAP), "cap");
}
END_TEST

/* ---- I04: bad settings -------------------------------------------------- */

static void
check_refused(uint32_t v, uint32_t p, uint32_t n, const char *word,
              const char *limit)
{
    char errbuf[BRIM_ERRBUF_LEN] = "";
    int  rc;

    rc = brim_placement_check(v, p, n, errbuf);
    ck_assert_msg(rc == BRIM_EINVAL, "V=%u P=%u N=%u: rc=%s", v, p, n,
                  brim_err_name(rc));
    ck_assert_msg(mentions(errbuf, word) && strstr(errbuf, limit) != NULL,
                  "V=%u P=%u N=%u: errbuf \"%s\" should name %s and %s", v, p,
                  n, errbuf, word, limit);
    ck_assert_int_eq(brim_placement_check(v, p, n, NULL), BRIM_EINVAL);
}

START_TEST(placement_I04_bad_settings)
{
    struct brim_ring ring;
    char             errbuf[BRIM_ERRBUF_LEN];
    uint64_t         eps, pos[256];
    uint16_t         owner[256];
    uint64_t         caps[3];
    int              rc;
    uint32_t         i;

    /* V = 0 and above its limit. */
    check_refused(0, 65536, 3, "token", "10000");
    check_refused(10001, 65536, 3, "token", "10000");
    /* P not a power of two, or out of range. */
    check_refused(160, 1000, 3, "partition", "power of two");
    check_refused(160, 65535, 3, "partition", "power of two");
    check_refused(160, 0, 0, "partition", "256");
    check_refused(160, 128, 3, "partition", "256");
    check_refused(160, 1u << 21, 3, "partition", "1048576");
    /* P < N. */
    check_refused(160, 256, 257, "node", "256");
    check_refused(160, 1024, 2000, "node", "1024");
    /* Too many nodes for a node index. */
    check_refused(160, 1u << 20, 4097, "node", "4096");

    ck_assert_int_eq(brim_placement_check(160, 65536, 3, NULL), 0);
    ck_assert_int_eq(brim_placement_check(1, 256, 256, NULL), 0);
    ck_assert_int_eq(brim_placement_check(10000, 1u << 20, 4096, NULL), 0);
    ck_assert_int_eq(brim_placement_check(160, 65536, 1, NULL), 0);

    /* V = 0 when the ring is built. */
    errbuf[0] = '\0';
    rc = brim_ring_init(&ring, 1, 0, errbuf);
    ck_assert_msg(rc == BRIM_EINVAL, "rc=%s", brim_err_name(rc));
    ck_assert_msg(mentions(errbuf, "token"), "errbuf \"%s\"", errbuf);
    brim_ring_destroy(&ring);

    /* A weight of 0 when a node joins. */
    ring_init_ok(&ring, 1, 16);
    errbuf[0] = '\0';
    rc = brim_ring_add_node(&ring, "n1", 0, errbuf);
    ck_assert_msg(rc == BRIM_EINVAL, "rc=%s", brim_err_name(rc));
    ck_assert_msg(mentions(errbuf, "weight") && strstr(errbuf, "1000") != NULL,
                  "errbuf \"%s\" should name the weight and its limit", errbuf);
    ck_assert_uint_eq(ring.nnodes, 0);
    errbuf[0] = '\0';
    rc = brim_ppm_parse("weight", "0", BRIM_WEIGHT_PPM_MAX, &eps, errbuf);
    /* "0" parses as a number; the ring refuses it as a weight (above). */
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(eps, 0);

    /* eps < 0. */
    errbuf[0] = '\0';
    rc = brim_eps_parse("-0.1", &eps, errbuf);
    ck_assert_msg(rc == BRIM_EINVAL, "rc=%s", brim_err_name(rc));
    ck_assert_msg(mentions(errbuf, "eps"), "errbuf \"%s\"", errbuf);

    /* eps = 0 is accepted and places every unit within the cap. */
    ck_assert_int_eq(brim_eps_parse("0", &eps, NULL), 0);
    ck_assert_uint_eq(eps, 0);
    ck_assert_int_eq(brim_ring_add_node(&ring, "n1", ONE, NULL), 0);
    ck_assert_int_eq(brim_ring_add_node(&ring, "n2", ONE, NULL), 0);
    ck_assert_int_eq(brim_ring_add_node(&ring, "n3", ONE, NULL), 0);
    for (i = 0; i < 256; i++) {
        pos[i] = brim_hash_partition_pos(1, i);
    }
    rc = brim_place_replace(&ring, eps, pos, 256, owner, errbuf);
    ck_assert_msg(rc == 0, "rc=%s (%s)", brim_err_name(rc), errbuf);
    brim_ring_caps(&ring, 256, 0, caps);
    {
        uint64_t count[3] = {0, 0, 0};

        for (i = 0; i < 256; i++) {
            ck_assert_uint_lt(owner[i], 3);
            count[owner[i]]++;
        }
        for (i = 0; i < 3; i++) {
            ck_assert_uint_eq(caps[i], 86);
            ck_assert_uint_le(count[i], caps[i]);
        }
    }
    brim_ring_destroy(&ring);

    /* A ring without nodes has nowhere to place. */
    ring_init_ok(&ring, 1, 16);
    errbuf[0] = '\0';
    rc = brim_place_replace(&ring, 0, pos, 256, owner, errbuf);
    ck_assert_msg(rc == BRIM_EINVAL, "rc=%s", brim_err_name(rc));
    ck_assert_msg(errbuf[0] != '\0', "no message");
    brim_ring_destroy(&ring);
}
END_TEST

START_TEST(placement_rebalance_bad_input)
{
    struct brim_ring old_ring, empty;
    uint64_t         pos[4] = {1, 2, 3, 4}, p = 10;
    uint16_t         old[4] = {0, 1, 0, 1}, owner[4];
    char             errbuf[BRIM_ERRBUF_LEN];
    int              rc;

    ring_init_ok(&old_ring, 1, 1);
    add_at_ok(&old_ring, "a", ONE, &p, 1);
    add_at_ok(&old_ring, "b", ONE, &p, 1);
    ring_init_ok(&empty, 1, 1);

    /* No node on the new ring. */
    errbuf[0] = '\0';
    rc = brim_place_rebalance(&old_ring, old, &empty, 0, pos, 4, owner, NULL,
                              errbuf);
    ck_assert_msg(rc == BRIM_EINVAL, "rc=%s", brim_err_name(rc));
    ck_assert_msg(errbuf[0] != '\0', "no message");

    /* An old owner index beyond the old ring. */
    old[2] = 2;
    errbuf[0] = '\0';
    rc = brim_place_rebalance(&old_ring, old, &old_ring, 0, pos, 4, owner, NULL,
                              errbuf);
    ck_assert_msg(rc == BRIM_EINVAL, "rc=%s", brim_err_name(rc));
    ck_assert_msg(errbuf[0] != '\0', "no message");

    brim_ring_destroy(&old_ring);
    brim_ring_destroy(&empty);
}
END_TEST

/* ---- I03: the walk wraps ------------------------------------------------ */

START_TEST(placement_I03_walk_wraps)
{
    struct brim_ring ring;
    uint64_t         tok, pos[4], caps[2], ta, tb;
    uint16_t         owner[4], none[4];
    uint8_t          reason[4];
    char             errbuf[BRIM_ERRBUF_LEN];
    uint16_t         a, b;
    int              rc, i;

    /* One node, one token, eps 0, P = 1: placed, whatever the position. */
    tok = 1000;
    ring_init_ok(&ring, 1, 1);
    add_at_ok(&ring, "solo", ONE, &tok, 1);
    for (i = 0; i < 4; i++) {
        pos[0] = i == 0 ? 0 : i == 1 ? 1000 : i == 2 ? 1001 : UINT64_MAX;
        owner[0] = 77;
        rc = brim_place_replace(&ring, 0, pos, 1, owner, errbuf);
        ck_assert_msg(rc == 0, "rc=%s (%s)", brim_err_name(rc), errbuf);
        ck_assert_uint_eq(owner[0], 0);
        none[0] = NONE16;
        rc = brim_place_rebalance(&ring, none, &ring, 0, pos, 1, owner, reason,
                                  errbuf);
        ck_assert_msg(rc == 0, "rc=%s (%s)", brim_err_name(rc), errbuf);
        ck_assert_uint_eq(owner[0], 0);
        ck_assert_uint_eq(reason[0], BRIM_MOVE_ARC);
    }
    brim_ring_destroy(&ring);

    /* Two nodes, one token each; the highest token is A's. eps 0.25 and
     * P = 4 give cap 3. All four units have A as ring owner: three stay,
     * the fourth walks past A's token, past 2^64, to B's. */
    ta = 1ull << 63;
    tb = 1000;
    ring_init_ok(&ring, 1, 1);
    add_at_ok(&ring, "B", ONE, &tb, 1);
    add_at_ok(&ring, "A", ONE, &ta, 1);
    a = node_of(&ring, "A");
    b = node_of(&ring, "B");
    brim_ring_caps(&ring, 4, 250000, caps);
    ck_assert_uint_eq(caps[0], 3);
    ck_assert_uint_eq(caps[1], 3);
    pos[0] = 2000;
    pos[1] = 3000;
    pos[2] = ta;
    pos[3] = 1001;
    for (i = 0; i < 4; i++) {
        ck_assert_uint_eq(brim_ring_owner(&ring, pos[i]), a);
    }
    rc = brim_place_replace(&ring, 250000, pos, 4, owner, errbuf);
    ck_assert_msg(rc == 0, "rc=%s (%s)", brim_err_name(rc), errbuf);
    ck_assert_uint_eq(owner[0], a);
    ck_assert_uint_eq(owner[1], a);
    ck_assert_uint_eq(owner[2], a);
    ck_assert_uint_eq(owner[3], b);

    /* The same through rebalance from an empty map. */
    for (i = 0; i < 4; i++) {
        none[i] = NONE16;
    }
    rc = brim_place_rebalance(&ring, none, &ring, 250000, pos, 4, owner, reason,
                              errbuf);
    ck_assert_msg(rc == 0, "rc=%s (%s)", brim_err_name(rc), errbuf);
    ck_assert_uint_eq(owner[0], a);
    ck_assert_uint_eq(owner[1], a);
    ck_assert_uint_eq(owner[2], a);
    ck_assert_uint_eq(owner[3], b);
    ck_assert_uint_eq(reason[0], BRIM_MOVE_ARC);
    ck_assert_uint_eq(reason[2], BRIM_MOVE_ARC);
    ck_assert_uint_eq(reason[3], BRIM_MOVE_CAP);

    /* eps 0 with the same units: cap 2, so two walk to B. */
    rc = brim_place_replace(&ring, 0, pos, 4, owner, errbuf);
    ck_assert_msg(rc == 0, "rc=%s (%s)", brim_err_name(rc), errbuf);
    ck_assert_uint_eq(owner[0], a);
    ck_assert_uint_eq(owner[1], a);
    ck_assert_uint_eq(owner[2], b);
    ck_assert_uint_eq(owner[3], b);
    brim_ring_destroy(&ring);
}
END_TEST

/* ---- rebalance on a hand-computed case ---------------------------------- */

START_TEST(placement_rebalance_shed_order)
{
    /* Old ring A@1000, B@2000; C@3000 joins. 9 units, eps 0: cap 3 each.
     * Before: A owns u0 u1 u4 u5 (natural), u2 u3 (displaced: B's arc)
     * and u8; B owns u6 and u7. u7 and u8 fall in C's new arc. */
    static const uint64_t pos[9] = {100, 200,  1100, 1200, 300,
                                    400, 1300, 2500, 2600};
    static const uint16_t old[9] = {0, 0, 0, 0, 0, 0, 1, 1, 0};
    /* A sheds three: its displaced u3 then u2 (reverse index order), then
     * its natural u5. u2 and u3 find room at B; u5 walks past full A and
     * B to C; u7 and u8 take their new ring owner C. */
    static const char *want[9] = {"A", "A", "B", "B", "A", "C", "B", "C", "C"};
    static const uint8_t why[9] = {
        BRIM_MOVE_NONE, BRIM_MOVE_NONE, BRIM_MOVE_CAP,
        BRIM_MOVE_CAP,  BRIM_MOVE_NONE, BRIM_MOVE_CAP,
        BRIM_MOVE_NONE, BRIM_MOVE_ARC,  BRIM_MOVE_ARC,
    };
    struct brim_ring old_ring, new_ring;
    uint64_t         ta = 1000, tb = 2000, tc = 3000;
    uint16_t         owner[9];
    uint8_t          reason[9];
    char             errbuf[BRIM_ERRBUF_LEN];
    int              rc, i;

    ring_init_ok(&old_ring, 1, 1);
    add_at_ok(&old_ring, "A", ONE, &ta, 1);
    add_at_ok(&old_ring, "B", ONE, &tb, 1);
    ring_init_ok(&new_ring, 1, 1);
    add_at_ok(&new_ring, "C", ONE, &tc, 1);
    add_at_ok(&new_ring, "B", ONE, &tb, 1);
    add_at_ok(&new_ring, "A", ONE, &ta, 1);

    rc = brim_place_rebalance(&old_ring, old, &new_ring, 0, pos, 9, owner,
                              reason, errbuf);
    ck_assert_msg(rc == 0, "rc=%s (%s)", brim_err_name(rc), errbuf);
    for (i = 0; i < 9; i++) {
        ck_assert_msg(owner[i] == node_of(&new_ring, want[i])
                          && reason[i] == why[i],
                      "u%d: %s (%s), want %s (%s)", i,
                      owner[i] < 3 ? new_ring.nodes[owner[i]].name : "?",
                      brim_move_reason_name(reason[i]), want[i],
                      brim_move_reason_name(why[i]));
        ck_assert_uint_eq(
            brim_move_reason_of(&old_ring, old[i], &new_ring, owner[i], pos[i]),
            why[i]);
    }
    /* Without REASON the owners are the same. */
    rc = brim_place_rebalance(&old_ring, old, &new_ring, 0, pos, 9, owner, NULL,
                              NULL);
    ck_assert_int_eq(rc, 0);
    for (i = 0; i < 9; i++) {
        ck_assert_uint_eq(owner[i], node_of(&new_ring, want[i]));
    }
    brim_ring_destroy(&old_ring);
    brim_ring_destroy(&new_ring);
}
END_TEST

/* ---- seeded random memberships ------------------------------------------ */

#define PROP_NODES_MAX 24 /* 20 members + 3 joiners + 1 */
#define PROP_UNITS_MAX 3000

static const uint64_t prop_eps[] = {
    0, 10000, 50000, 100000, 250000, 1000000, BRIM_EPS_NONE,
};

enum prop_change {
    PROP_JOIN,
    PROP_LEAVE,
    PROP_JOIN_LEAVE,
    PROP_WEIGHT,
    PROP_NONE,
    PROP_NCHANGES
};

static const char *prop_change_name[] = {
    "join", "leave", "join+leave", "weight", "none",
};

struct prop_member {
    char     name[16];   /* "n<id>" */
    uint32_t weight_ppm; /* weight */
};

/* One random case: two memberships, units and settings. */
struct prop_case {
    uint64_t           seed;       /* the case seed (printed) */
    uint64_t           ring_seed;  /* cluster seed of both rings */
    uint32_t           v;          /* tokens per unit of weight */
    uint64_t           eps_ppm;    /* from prop_eps */
    int                ties;       /* coarse positions, many ties */
    enum prop_change   change;     /* old -> new */
    size_t             nold, nnew; /* members before and after */
    struct prop_member old[PROP_NODES_MAX];
    struct prop_member new[PROP_NODES_MAX];
    size_t           nleft;       /* members that left */
    char             left[4][16]; /* their names */
    size_t           n;           /* units */
    uint64_t        *pos;         /* n unit positions */
    struct brim_ring old_ring;    /* built from old, shuffled */
    struct brim_ring new_ring;    /* built from new, shuffled */
    char             desc[200];   /* one line for failure messages */
};

static uint64_t prop_base_seed = 0x5eed0b1e;

#define PCHECK(pc, cond, fmt, ...)                                             \
    ck_assert_msg((cond), "case seed %#" PRIx64 " (%s): " fmt, (pc)->seed,     \
                  (pc)->desc, __VA_ARGS__)

static uint32_t
prop_weight(struct brim_rng *rng)
{
    switch (brim_rng_below(rng, 4)) {
    case 0:
        return ONE;
    case 1:
        return (uint32_t) (ONE / 2 * (1 + brim_rng_below(rng, 6)));
    default: /* 0.1 .. 4, any millionth */
        return (uint32_t) (100000 + brim_rng_below(rng, 3900001));
    }
}

/* A fresh member whose name is on neither list. */
static void
prop_new_member(struct brim_rng *rng, const struct prop_case *pc,
                struct prop_member *m)
{
    size_t i;
    int    taken;

    do {
        snprintf(m->name, sizeof(m->name), "n%u",
                 (unsigned) brim_rng_below(rng, 200));
        taken = 0;
        for (i = 0; i < pc->nold; i++) {
            taken |= strcmp(pc->old[i].name, m->name) == 0;
        }
        for (i = 0; i < pc->nnew; i++) {
            taken |= strcmp(pc->new[i].name, m->name) == 0;
        }
    } while (taken);
    m->weight_ppm = prop_weight(rng);
}

/* Positions of node NAME's tokens in tie mode: 64 coarse points. */
static uint64_t
prop_tie_pos(uint64_t seed, const char *name, uint32_t j)
{
    return brim_hash_token(seed, name, strlen(name), j) & (63ull << 58);
}

static void
prop_build_ring(struct prop_case *pc, struct brim_rng *rng,
                struct brim_ring *ring, const struct prop_member *m, size_t nm)
{
    size_t   order[PROP_NODES_MAX], i, j, tmp;
    uint64_t tp[4 * 50 + 1];
    uint32_t k, cnt;
    char     errbuf[BRIM_ERRBUF_LEN];
    int      rc;

    ring_init_ok(ring, pc->ring_seed, pc->v);
    for (i = 0; i < nm; i++) {
        order[i] = i;
    }
    for (i = nm; i > 1; i--) {
        j = (size_t) brim_rng_below(rng, i);
        tmp = order[i - 1];
        order[i - 1] = order[j];
        order[j] = tmp;
    }
    for (i = 0; i < nm; i++) {
        const struct prop_member *mm = &m[order[i]];

        errbuf[0] = '\0';
        if (pc->ties) {
            cnt = brim_ring_token_count(pc->v, mm->weight_ppm);
            ck_assert_uint_le(cnt, sizeof(tp) / sizeof(tp[0]));
            for (k = 0; k < cnt; k++) {
                tp[k] = prop_tie_pos(pc->ring_seed, mm->name, k);
            }
            rc = brim_ring_add_node_at(ring, mm->name, mm->weight_ppm, tp, cnt,
                                       errbuf);
        } else {
            rc = brim_ring_add_node(ring, mm->name, mm->weight_ppm, errbuf);
        }
        PCHECK(pc, rc == 0, "add %s: rc=%s (%s)", mm->name, brim_err_name(rc),
               errbuf);
    }
}

static void
prop_case_make(struct prop_case *pc, uint64_t seed)
{
    struct brim_rng rng;
    size_t          i, k, nj, nl, tok;
    int             choice;

    memset(pc, 0, sizeof(*pc));
    pc->seed = seed;
    prop_seed_now = seed;
    brim_rng_seed(&rng, seed);
    pc->ring_seed = brim_rng_next(&rng);
    pc->v = 1 + (uint32_t) brim_rng_below(&rng, 50);
    pc->eps_ppm = prop_eps[brim_rng_below(&rng, 7)];
    pc->ties = brim_rng_below(&rng, 4) == 0;
    pc->change = (enum prop_change) brim_rng_below(&rng, PROP_NCHANGES);

    k = 1 + (size_t) brim_rng_below(&rng, 20);
    for (i = 0; i < k; i++) {
        prop_new_member(&rng, pc, &pc->old[pc->nold]);
        pc->nold++;
    }
    if (pc->nold == 1
        && (pc->change == PROP_LEAVE || pc->change == PROP_JOIN_LEAVE))
    {
        pc->change = PROP_JOIN; /* the last node cannot leave */
    }
    memcpy(pc->new, pc->old, sizeof(pc->old));
    pc->nnew = pc->nold;

    nl = 0;
    if (pc->change == PROP_LEAVE || pc->change == PROP_JOIN_LEAVE) {
        nl = 1 + (size_t) brim_rng_below(&rng, BRIM_MIN(3, pc->nold - 1));
    }
    for (i = 0; i < nl; i++) {
        k = (size_t) brim_rng_below(&rng, pc->nnew);
        memcpy(pc->left[pc->nleft++], pc->new[k].name, 16);
        pc->new[k] = pc->new[--pc->nnew];
    }
    nj = 0;
    if (pc->change == PROP_JOIN || pc->change == PROP_JOIN_LEAVE) {
        nj = 1 + (size_t) brim_rng_below(&rng, 3);
    }
    for (i = 0; i < nj; i++) {
        prop_new_member(&rng, pc, &pc->new[pc->nnew]);
        pc->nnew++;
    }
    if (pc->change == PROP_WEIGHT) {
        nj = 1 + (size_t) brim_rng_below(&rng, BRIM_MIN(2, pc->nnew));
        for (i = 0; i < nj; i++) {
            k = (size_t) brim_rng_below(&rng, pc->nnew);
            pc->new[k].weight_ppm = prop_weight(&rng);
        }
    }

    prop_build_ring(pc, &rng, &pc->old_ring, pc->old, pc->nold);
    prop_build_ring(pc, &rng, &pc->new_ring, pc->new, pc->nnew);

    /* Units: random positions, token positions and their neighbours,
     * the ends of the ring. */
    pc->n = 1
        + (size_t) brim_rng_below(
                &rng, brim_rng_below(&rng, 4) == 0 ? 50 : PROP_UNITS_MAX);
    pc->pos = malloc(pc->n * sizeof(*pc->pos));
    ck_assert_ptr_nonnull(pc->pos);
    for (i = 0; i < pc->n; i++) {
        choice = (int) brim_rng_below(&rng, 10);
        tok = (size_t) brim_rng_below(&rng, pc->new_ring.ntokens);
        switch (choice) {
        case 0:
            pc->pos[i] = pc->new_ring.tokens[tok].pos;
            break;
        case 1:
            pc->pos[i] = pc->new_ring.tokens[tok].pos + 1;
            break;
        case 2:
            pc->pos[i] = pc->new_ring.tokens[tok].pos - 1;
            break;
        case 3:
            pc->pos[i] = brim_rng_below(&rng, 2) ? 0 : UINT64_MAX;
            break;
        case 4:
            pc->pos[i] = (brim_rng_next(&rng) & (63ull << 58))
                + brim_rng_below(&rng, 3) - 1;
            break;
        default:
            pc->pos[i] = brim_rng_next(&rng);
            break;
        }
    }

    snprintf(pc->desc, sizeof(pc->desc),
             "%s, N %zu -> %zu, V %u, eps %s%" PRIu64 " ppm, %zu units%s",
             prop_change_name[pc->change], pc->nold, pc->nnew, pc->v,
             pc->eps_ppm == BRIM_EPS_NONE ? "none " : "",
             pc->eps_ppm == BRIM_EPS_NONE ? 0 : pc->eps_ppm, pc->n,
             pc->ties ? ", forced ties" : "");
}

static void
prop_case_free(struct prop_case *pc)
{
    brim_ring_destroy(&pc->old_ring);
    brim_ring_destroy(&pc->new_ring);
    free(pc->pos);
}

/* The property runner: BRIM_TEST_CASE_SEED replays one case. */
typedef void (*prop_fn)(struct prop_case *pc);

static void
prop_run(prop_fn fn, int cases)
{
    struct prop_case pc;
    const char      *env;
    uint64_t         st;
    int              i;

    env = getenv("BRIM_TEST_CASE_SEED");
    if (env != NULL && env[0] != '\0') {
        prop_case_make(&pc, strtoull(env, NULL, 0));
        fn(&pc);
        prop_case_free(&pc);
        return;
    }
    env = getenv("BRIM_TEST_SEED");
    if (env != NULL && env[0] != '\0') {
        prop_base_seed = strtoull(env, NULL, 0);
    }
    st = prop_base_seed;
    for (i = 0; i < cases; i++) {
        prop_case_make(&pc, brim_splitmix64(&st));
        fn(&pc);
        prop_case_free(&pc);
    }
}

/* Replace on RING with the case's settings; asserts success. */
static void
prop_replace(struct prop_case *pc, const struct brim_ring *ring,
             uint16_t *owner)
{
    char errbuf[BRIM_ERRBUF_LEN] = "";
    int  rc;

    rc = brim_place_replace(ring, pc->eps_ppm, pc->pos, pc->n, owner, errbuf);
    PCHECK(pc, rc == 0, "replace: rc=%s (%s)", brim_err_name(rc), errbuf);
}

static void
prop_rebalance(struct prop_case *pc, const uint16_t *old, uint16_t *owner,
               uint8_t *reason)
{
    char errbuf[BRIM_ERRBUF_LEN] = "";
    int  rc;

    rc = brim_place_rebalance(&pc->old_ring, old, &pc->new_ring, pc->eps_ppm,
                              pc->pos, pc->n, owner, reason, errbuf);
    PCHECK(pc, rc == 0, "rebalance: rc=%s (%s)", brim_err_name(rc), errbuf);
}

/* Every unit owned by a node of RING, and no node above its cap. */
static void
prop_check_caps(struct prop_case *pc, const struct brim_ring *ring,
                const uint16_t *owner, const char *what)
{
    uint64_t count[PROP_NODES_MAX] = {0}, caps[PROP_NODES_MAX];
    size_t   i;

    brim_ring_caps(ring, pc->n, pc->eps_ppm, caps);
    for (i = 0; i < pc->n; i++) {
        PCHECK(pc, owner[i] < ring->nnodes,
               "%s: unit %zu has owner %u of "
               "%u nodes",
               what, i, owner[i], ring->nnodes);
        count[owner[i]]++;
    }
    for (i = 0; i < ring->nnodes; i++) {
        PCHECK(pc,
               caps[i]
                   == ref_cap(pc->n, pc->eps_ppm, ring->nodes[i].weight_ppm,
                              ring->weight_sum_ppm),
               "%s: cap of %s is %" PRIu64, what, ring->nodes[i].name, caps[i]);
        PCHECK(pc, count[i] <= caps[i],
               "%s: %s holds %" PRIu64 " of cap %" PRIu64, what,
               ring->nodes[i].name, count[i], caps[i]);
    }
}

static void
prop_alloc(struct prop_case *pc, uint16_t **a, uint16_t **b, uint16_t **c,
           uint8_t **r1, uint8_t **r2)
{
    *a = malloc(pc->n * sizeof(**a));
    *b = malloc(pc->n * sizeof(**b));
    *c = malloc(pc->n * sizeof(**c));
    *r1 = malloc(pc->n);
    *r2 = malloc(pc->n);
    ck_assert(*a != NULL && *b != NULL && *c != NULL && *r1 != NULL
              && *r2 != NULL);
}

static void
prop_free(uint16_t *a, uint16_t *b, uint16_t *c, uint8_t *r1, uint8_t *r2)
{
    free(a);
    free(b);
    free(c);
    free(r1);
    free(r2);
}

/* replace == the reference walk, within caps, on both rings. */
static void
prop_replace_reference(struct prop_case *pc)
{
    uint16_t *got, *want, *unused;
    uint8_t  *r1, *r2;
    size_t    i;
    int       side;

    prop_alloc(pc, &got, &want, &unused, &r1, &r2);
    for (side = 0; side < 2; side++) {
        const struct brim_ring *ring = side ? &pc->new_ring : &pc->old_ring;

        prop_replace(pc, ring, got);
        ref_replace(ring, pc->eps_ppm, pc->pos, pc->n, want);
        for (i = 0; i < pc->n; i++) {
            PCHECK(pc, got[i] == want[i],
                   "replace unit %zu at %#" PRIx64 ": owner %u, reference %u",
                   i, pc->pos[i], got[i], want[i]);
        }
        prop_check_caps(pc, ring, got, "replace");
    }
    prop_free(got, want, unused, r1, r2);
}

/* rebalance == the reference rule, from a replace map and from a random
 * (even over-cap) old map. */
static void
prop_rebalance_reference(struct prop_case *pc)
{
    struct brim_rng rng;
    uint16_t       *old, *got, *want;
    uint8_t        *why, *want_why;
    size_t          i;
    int             round;

    prop_alloc(pc, &old, &got, &want, &why, &want_why);
    brim_rng_seed(&rng, pc->seed ^ 0xa5a5);
    for (round = 0; round < 2; round++) {
        if (round == 0) {
            prop_replace(pc, &pc->old_ring, old);
        } else {
            for (i = 0; i < pc->n; i++) {
                old[i] = brim_rng_below(&rng, 8) == 0
                    ? NONE16
                    : (uint16_t) brim_rng_below(&rng, pc->old_ring.nnodes);
            }
        }
        prop_rebalance(pc, old, got, why);
        ref_rebalance(&pc->old_ring, old, &pc->new_ring, pc->eps_ppm, pc->pos,
                      pc->n, want, want_why);
        for (i = 0; i < pc->n; i++) {
            PCHECK(pc, got[i] == want[i] && why[i] == want_why[i],
                   "rebalance (old map %s) unit %zu at %#" PRIx64 ": %u (%s)"
                   ", reference %u (%s)",
                   round ? "random" : "replace", i, pc->pos[i], got[i],
                   brim_move_reason_name(why[i]), want[i],
                   brim_move_reason_name(want_why[i]));
        }
        prop_check_caps(pc, &pc->new_ring, got, "rebalance");
    }
    prop_free(old, got, want, why, want_why);
}

/* Caps hold under both rules, and a chain of two rebalances. */
static void
prop_caps_hold(struct prop_case *pc)
{
    uint16_t *old, *mid, *got;
    uint8_t  *r1, *r2;

    prop_alloc(pc, &old, &mid, &got, &r1, &r2);
    prop_replace(pc, &pc->old_ring, old);
    prop_check_caps(pc, &pc->old_ring, old, "replace old");
    prop_replace(pc, &pc->new_ring, got);
    prop_check_caps(pc, &pc->new_ring, got, "replace new");
    prop_rebalance(pc, old, mid, r1);
    prop_check_caps(pc, &pc->new_ring, mid, "rebalance");
    /* Back again: new -> new is no change at all. */
    ck_assert_int_eq(brim_place_rebalance(&pc->new_ring, mid, &pc->new_ring,
                                          pc->eps_ppm, pc->pos, pc->n, got, r2,
                                          NULL),
                     0);
    prop_check_caps(pc, &pc->new_ring, got, "rebalance twice");
    PCHECK(pc,
           memcmp(got, mid, pc->n * sizeof(*got)) == 0 && r2[0] == 0
               && memchr(r2, BRIM_MOVE_ARC, pc->n) == NULL
               && memchr(r2, BRIM_MOVE_CAP, pc->n) == NULL,
           "%s", "a rebalance without a change moved units");
    prop_free(old, mid, got, r1, r2);
}

/* On a pure leave exactly the leavers' units move. A change that is no
 * change moves nothing. */
static void
prop_leave_moves_leavers(struct prop_case *pc)
{
    uint16_t *old, *got, *unused;
    uint8_t  *why, *r2;
    size_t    i, k, moved;
    int       left, same;

    if (pc->change != PROP_LEAVE && pc->change != PROP_NONE) {
        return;
    }
    prop_alloc(pc, &old, &got, &unused, &why, &r2);
    prop_replace(pc, &pc->old_ring, old);
    prop_rebalance(pc, old, got, why);
    moved = 0;
    for (i = 0; i < pc->n; i++) {
        left = 0;
        for (k = 0; k < pc->nleft; k++) {
            left |= strcmp(pc->old_ring.nodes[old[i]].name, pc->left[k]) == 0;
        }
        same = strcmp(pc->old_ring.nodes[old[i]].name,
                      pc->new_ring.nodes[got[i]].name)
            == 0;
        PCHECK(pc, left != same, "unit %zu: %s -> %s", i,
               pc->old_ring.nodes[old[i]].name,
               pc->new_ring.nodes[got[i]].name);
        PCHECK(
            pc,
            why[i]
                == (left ? (got[i] == brim_ring_owner(&pc->new_ring, pc->pos[i])
                                ? BRIM_MOVE_ARC
                                : BRIM_MOVE_CAP)
                         : BRIM_MOVE_NONE),
            "unit %zu: reason %s", i, brim_move_reason_name(why[i]));
        moved += left;
    }
    PCHECK(pc, pc->change != PROP_NONE || moved == 0, "%zu moved", moved);
    prop_free(old, got, unused, why, r2);
}

/* Rebalance reasons == brim_move_reason_of() == brim_map_diff(). */
static void
prop_reasons_match_diff(struct prop_case *pc)
{
    struct brim_map   mo, mn;
    struct brim_move *moves;
    uint16_t         *old, *got, *unused;
    uint8_t          *why, *r2;
    size_t            nmoves, i, k;
    char              errbuf[BRIM_ERRBUF_LEN] = "";
    int               rc, same;

    prop_alloc(pc, &old, &got, &unused, &why, &r2);
    prop_replace(pc, &pc->old_ring, old);
    prop_rebalance(pc, old, got, why);

    ck_assert_int_eq(brim_map_init(&mo, (uint32_t) pc->n, 1), 0);
    ck_assert_int_eq(brim_map_init(&mn, (uint32_t) pc->n, 2), 0);
    memcpy(mo.owner, old, pc->n * sizeof(*old));
    memcpy(mn.owner, got, pc->n * sizeof(*got));
    moves = NULL;
    nmoves = 0;
    rc = brim_map_diff(&mo, &pc->old_ring, &mn, &pc->new_ring, pc->pos, &moves,
                       &nmoves, errbuf);
    PCHECK(pc, rc == 0, "diff: rc=%s (%s)", brim_err_name(rc), errbuf);

    k = 0;
    for (i = 0; i < pc->n; i++) {
        same = strcmp(pc->old_ring.nodes[old[i]].name,
                      pc->new_ring.nodes[got[i]].name)
            == 0;
        PCHECK(pc,
               why[i]
                   == brim_move_reason_of(&pc->old_ring, old[i], &pc->new_ring,
                                          got[i], pc->pos[i]),
               "unit %zu: rebalance says %s, move_reason_of %s", i,
               brim_move_reason_name(why[i]),
               brim_move_reason_name(brim_move_reason_of(
                   &pc->old_ring, old[i], &pc->new_ring, got[i], pc->pos[i])));
        PCHECK(pc, same == (why[i] == BRIM_MOVE_NONE), "unit %zu: %s", i,
               brim_move_reason_name(why[i]));
        if (same) {
            continue;
        }
        PCHECK(pc, k < nmoves, "unit %zu moved but the diff has %zu moves", i,
               nmoves);
        PCHECK(pc,
               moves[k].partition == i && moves[k].from == old[i]
                   && moves[k].to == got[i] && moves[k].reason == why[i],
               "move %zu: partition %u %u -> %u (%s), want %zu %u -> %u "
               "(%s)",
               k, moves[k].partition, moves[k].from, moves[k].to,
               brim_move_reason_name(moves[k].reason), i, old[i], got[i],
               brim_move_reason_name(why[i]));
        k++;
    }
    PCHECK(pc, k == nmoves, "%zu moves, the diff has %zu", k, nmoves);
    PCHECK(pc, (nmoves == 0) == (moves == NULL), "moves %p for %zu",
           (void *) moves, nmoves);
    brim_free(moves);
    brim_map_destroy(&mo);
    brim_map_destroy(&mn);
    prop_free(old, got, unused, why, r2);
}

/* With no cap that binds, replace gives every unit its ring owner. */
static void
prop_unbound_ring_owner(struct prop_case *pc)
{
    uint64_t  natural[PROP_NODES_MAX] = {0}, caps[PROP_NODES_MAX];
    uint16_t *got, *u1, *u2;
    uint8_t  *r1, *r2;
    size_t    i;
    int       binds;

    prop_alloc(pc, &got, &u1, &u2, &r1, &r2);
    for (i = 0; i < pc->n; i++) {
        natural[brim_ring_owner(&pc->new_ring, pc->pos[i])]++;
    }
    brim_ring_caps(&pc->new_ring, pc->n, pc->eps_ppm, caps);
    binds = 0;
    for (i = 0; i < pc->new_ring.nnodes; i++) {
        binds |= natural[i] > caps[i];
    }
    prop_replace(pc, &pc->new_ring, got);
    if (binds == 0) {
        for (i = 0; i < pc->n; i++) {
            PCHECK(pc, got[i] == brim_ring_owner(&pc->new_ring, pc->pos[i]),
                   "unit %zu: owner %u, ring owner %u", i, got[i],
                   brim_ring_owner(&pc->new_ring, pc->pos[i]));
        }
    }
    /* eps none never binds. */
    ck_assert_int_eq(brim_place_replace(&pc->new_ring, BRIM_EPS_NONE, pc->pos,
                                        pc->n, got, NULL),
                     0);
    for (i = 0; i < pc->n; i++) {
        PCHECK(pc, got[i] == brim_ring_owner(&pc->new_ring, pc->pos[i]),
               "eps none: unit %zu: owner %u", i, got[i]);
    }
    prop_free(got, u1, u2, r1, r2);
}

START_TEST(placement_prop_replace_reference)
{
    prop_run(prop_replace_reference, 400);
}
END_TEST

START_TEST(placement_prop_rebalance_reference)
{
    prop_run(prop_rebalance_reference, 400);
}
END_TEST

START_TEST(placement_prop_caps_hold)
{
    prop_run(prop_caps_hold, 400);
}
END_TEST

START_TEST(placement_prop_leave_moves_leavers)
{
    prop_run(prop_leave_moves_leavers, 600);
}
END_TEST

START_TEST(placement_prop_reasons_match_diff)
{
    prop_run(prop_reasons_match_diff, 400);
}
END_TEST

START_TEST(placement_prop_unbound_ring_owner)
{
    prop_run(prop_unbound_ring_owner, 400);
}
END_TEST

/* ---- I05: order independence -------------------------------------------- */

/* The same tokens: positions and node indices (not padding bytes). */
static int
tokens_equal(const struct brim_ring *a, const struct brim_ring *b)
{
    size_t i;

    if (a->ntokens != b->ntokens) {
        return 0;
    }
    for (i = 0; i < a->ntokens; i++) {
        if (a->tokens[i].pos != b->tokens[i].pos
            || a->tokens[i].node != b->tokens[i].node)
        {
            return 0;
        }
    }
    return 1;
}

static void
i05_run(int ties)
{
    static const struct prop_member members[] = {
        {"n1", ONE},    {"n11", 1500000}, {"n2", 500000}, {"alpha", ONE},
        {"b", 2000000}, {"A", 750000},    {"z", ONE},     {"m:7000", 1250000},
        {"x.y", ONE},   {"q-1", 3000000},
    };
    struct prop_case *pc;
    struct brim_ring  first_old, first_new;
    struct brim_rng   rng;
    uint16_t          old[1024], first_owner[1024], got[1024];
    uint16_t          first_got[1024];
    uint8_t           why[1024], first_why[1024];
    size_t            i;
    int               round;

    pc = calloc(1, sizeof(*pc));
    ck_assert_ptr_nonnull(pc);
    pc->seed = 0x105;
    prop_seed_now = pc->seed;
    pc->ring_seed = 0xc1u;
    pc->v = 24;
    pc->eps_ppm = 50000;
    pc->ties = ties;
    pc->n = 1024;
    snprintf(pc->desc, sizeof(pc->desc), "I05%s", ties ? " ties" : "");
    /* Old: every member but "b" and "z"; new: "n2" left, "b" and "z"
     * joined. */
    for (i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
        if (strcmp(members[i].name, "b") != 0
            && strcmp(members[i].name, "z") != 0) {
            pc->old[pc->nold++] = members[i];
        }
        if (strcmp(members[i].name, "n2") != 0) {
            pc->new[pc->nnew++] = members[i];
        }
    }
    pc->pos = malloc(1024 * sizeof(*pc->pos));
    ck_assert_ptr_nonnull(pc->pos);
    brim_map_positions(pc->ring_seed, 1024, pc->pos);
    brim_rng_seed(&rng, 0x1005);

    for (round = 0; round < 100; round++) {
        prop_build_ring(pc, &rng, &pc->old_ring, pc->old, pc->nold);
        prop_build_ring(pc, &rng, &pc->new_ring, pc->new, pc->nnew);
        prop_replace(pc, &pc->old_ring, old);
        prop_rebalance(pc, old, got, why);
        if (round == 0) {
            first_old = pc->old_ring;
            first_new = pc->new_ring;
            memcpy(first_owner, old, sizeof(old));
            memcpy(first_got, got, sizeof(got));
            memcpy(first_why, why, sizeof(why));
            continue;
        }
        PCHECK(pc,
               pc->old_ring.ntokens == first_old.ntokens
                   && pc->new_ring.ntokens == first_new.ntokens,
               "round %d: token counts differ", round);
        for (i = 0; i < first_old.nnodes; i++) {
            PCHECK(pc,
                   strcmp(pc->old_ring.nodes[i].name, first_old.nodes[i].name)
                       == 0,
                   "round %d: node %zu", round, i);
        }
        PCHECK(pc,
               tokens_equal(&pc->old_ring, &first_old)
                   && tokens_equal(&pc->new_ring, &first_new),
               "round %d: token arrays differ", round);
        PCHECK(pc, memcmp(old, first_owner, sizeof(old)) == 0,
               "round %d: replace maps differ", round);
        PCHECK(pc,
               memcmp(got, first_got, sizeof(got)) == 0
                   && memcmp(why, first_why, sizeof(why)) == 0,
               "round %d: rebalance maps differ", round);
        brim_ring_destroy(&pc->old_ring);
        brim_ring_destroy(&pc->new_ring);
    }
    /* The maps are real ones: within caps, "n2"'s units moved. */
    pc->old_ring = first_old;
    pc->new_ring = first_new;
    prop_check_caps(pc, &first_old, first_owner, "I05 replace");
    prop_check_caps(pc, &first_new, first_got, "I05 rebalance");
    for (i = 0; i < 1024; i++) {
        if (strcmp(first_old.nodes[first_owner[i]].name, "n2") == 0) {
            PCHECK(pc, first_why[i] != BRIM_MOVE_NONE, "unit %zu", i);
        }
    }
    prop_case_free(pc);
    free(pc);
}

START_TEST(placement_I05_order_independent)
{
    i05_run(0);
}
END_TEST

START_TEST(placement_I05_order_independent_ties)
{
    i05_run(1);
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s;
    TCase *tc;

    s = suite_create("placement");

    tc = tcase_create("cap_exact");
    tcase_add_test(tc, placement_cap_exact);
    suite_add_tcase(s, tc);

    tc = tcase_create("ring_caps");
    tcase_add_test(tc, placement_ring_caps);
    suite_add_tcase(s, tc);

    tc = tcase_create("ppm_parse_accepts");
    tcase_add_test(tc, placement_ppm_parse_accepts);
    suite_add_tcase(s, tc);

    tc = tcase_create("ppm_parse_rejects");
    tcase_add_test(tc, placement_ppm_parse_rejects);
    suite_add_tcase(s, tc);

    tc = tcase_create("move_reason_name");
    tcase_add_test(tc, placement_move_reason_name);
    suite_add_tcase(s, tc);

    tc = tcase_create("I04_bad_settings");
    tcase_add_test(tc, placement_I04_bad_settings);
    suite_add_tcase(s, tc);

    tc = tcase_create("rebalance_bad_input");
    tcase_add_test(tc, placement_rebalance_bad_input);
    suite_add_tcase(s, tc);

    tc = tcase_create("I03_walk_wraps");
    tcase_add_test(tc, placement_I03_walk_wraps);
    suite_add_tcase(s, tc);

    tc = tcase_create("rebalance_shed_order");
    tcase_add_test(tc, placement_rebalance_shed_order);
    suite_add_tcase(s, tc);

    tc = tcase_create("prop_replace_reference");
    tcase_add_test(tc, placement_prop_replace_reference);
    suite_add_tcase(s, tc);

    tc = tcase_create("prop_rebalance_reference");
    tcase_add_test(tc, placement_prop_rebalance_reference);
    suite_add_tcase(s, tc);

    tc = tcase_create("prop_caps_hold");
    tcase_add_test(tc, placement_prop_caps_hold);
    suite_add_tcase(s, tc);

    tc = tcase_create("prop_leave_moves_leavers");
    tcase_add_test(tc, placement_prop_leave_moves_leavers);
    suite_add_tcase(s, tc);

    tc = tcase_create("prop_reasons_match_diff");
    tcase_add_test(tc, placement_prop_reasons_match_diff);
    suite_add_tcase(s, tc);

    tc = tcase_create("prop_unbound_ring_owner");
    tcase_add_test(tc, placement_prop_unbound_ring_owner);
    suite_add_tcase(s, tc);

    tc = tcase_create("I05_order_independent");
    tcase_add_test(tc, placement_I05_order_independent);
    suite_add_tcase(s, tc);

    tc = tcase_create("I05_order_independent_ties");
    tcase_add_test(tc, placement_I05_order_independent_ties);
    suite_add_tcase(s, tc);

    return s;
}
