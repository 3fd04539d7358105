/*
 * tests/unit/test_map.c - the partition map of common/map.c: init and
 * destroy, partition positions, counts per node, displaced partitions, and
 * the diff of two maps (what a membership change migrates, with from/to
 * indices of their own rings and the reason each partition moved).
 */
#include "tests/support/check_main.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/hash.h"
#include "common/map.h"
#include "common/placement.h"
#include "common/ring.h"

#define ONE BRIM_WEIGHT_PPM_ONE
#define NONE16 ((uint16_t) BRIM_NODE_NONE)

static void
map_init_ok(struct brim_map *map, uint32_t p, uint64_t epoch)
{
    int rc;

    rc = brim_map_init(map, p, epoch);
    ck_assert_msg(rc == 0, "map_init P=%u: rc=%s", p, brim_err_name(rc));
}

/* A ring of one-token nodes: NAMES[i] at POS[i]. */
static void
ring_of(struct brim_ring *ring, const char *const *names, const uint64_t *pos,
        size_t n)
{
    char   errbuf[BRIM_ERRBUF_LEN] = "";
    size_t i;
    int    rc;

    ck_assert_int_eq(brim_ring_init(ring, 1, 1, NULL), 0);
    for (i = 0; i < n; i++) {
        rc = brim_ring_add_node_at(ring, names[i], ONE, &pos[i], 1, errbuf);
        ck_assert_msg(rc == 0, "add %s: rc=%s (%s)", names[i],
                      brim_err_name(rc), errbuf);
    }
}

START_TEST(map_init_destroy)
{
    struct brim_map map;
    size_t          base;
    uint32_t        i;

    base = brim_alloc_bytes();
    map_init_ok(&map, 1024, 7);
    ck_assert_uint_eq(map.npartitions, 1024);
    ck_assert_uint_eq(map.epoch, 7);
    ck_assert_ptr_nonnull(map.owner);
    for (i = 0; i < 1024; i++) {
        ck_assert_uint_eq(map.owner[i], NONE16);
    }
    ck_assert_uint_gt(brim_alloc_bytes(), base + 1024 * 2 - 1);
    brim_map_destroy(&map);
    ck_assert_uint_eq(brim_alloc_bytes(), base);

    map_init_ok(&map, 1, 0);
    ck_assert_uint_eq(map.owner[0], NONE16);
    brim_map_destroy(&map);

    map_init_ok(&map, BRIM_PARTITIONS_MAX, UINT64_MAX);
    ck_assert_uint_eq(map.owner[BRIM_PARTITIONS_MAX - 1], NONE16);
    brim_map_destroy(&map);
    ck_assert_uint_eq(brim_alloc_bytes(), base);

    memset(&map, 0, sizeof(map));
    brim_map_destroy(&map); /* zeroed: nothing to do */
}
END_TEST

START_TEST(map_positions)
{
    uint64_t pos[4096];
    uint32_t i;

    brim_map_positions(99, 4096, pos);
    for (i = 0; i < 4096; i++) {
        ck_assert_uint_eq(pos[i], brim_hash_partition_pos(99, i));
    }
    brim_map_positions(100, 1, pos);
    ck_assert_uint_eq(pos[0], brim_hash_partition_pos(100, 0));
    ck_assert_uint_eq(pos[1], brim_hash_partition_pos(99, 1)); /* kept */
}
END_TEST

START_TEST(map_counts)
{
    static const char *const names[] = {"a", "b", "c"};
    static const uint64_t    tok[] = {10, 20, 30};
    static const uint16_t    own[16] = {
           0, 1, 2, 2, 2, 1, NONE16, 0, 2, 3, 2, 100, 1, 2, 0, NONE16,
    };
    struct brim_ring ring;
    struct brim_map  map;
    uint64_t         count[4];

    ring_of(&ring, names, tok, 3);
    map_init_ok(&map, 16, 1);
    memcpy(map.owner, own, sizeof(own));
    count[0] = count[1] = count[2] = 999;
    count[3] = 12345;
    /* Unowned: NONE twice, and indices 3 and 100 past the ring. */
    ck_assert_uint_eq(brim_map_counts(&map, &ring, count), 4);
    ck_assert_uint_eq(count[0], 3);
    ck_assert_uint_eq(count[1], 3);
    ck_assert_uint_eq(count[2], 6);
    ck_assert_uint_eq(count[3], 12345); /* only nnodes entries */

    memset(map.owner, 0, 16 * sizeof(*map.owner));
    ck_assert_uint_eq(brim_map_counts(&map, &ring, count), 0);
    ck_assert_uint_eq(count[0], 16);
    ck_assert_uint_eq(count[1], 0);
    ck_assert_uint_eq(count[2], 0);
    brim_map_destroy(&map);
    brim_ring_destroy(&ring);
}
END_TEST

START_TEST(map_displaced)
{
    static const char *const names[] = {"a", "b", "c"};
    static const uint64_t    tok[] = {1000, 2000, 3000};
    /* Ring owners: a, a, b, c, a (wrap), c. */
    static const uint64_t pos[6] = {0, 1000, 1001, 2001, 3001, 2999};
    static const uint16_t natural[6] = {0, 0, 1, 2, 0, 2};
    struct brim_ring      ring;
    struct brim_map       map;

    ring_of(&ring, names, tok, 3);
    map_init_ok(&map, 6, 1);
    memcpy(map.owner, natural, sizeof(natural));
    ck_assert_uint_eq(brim_map_displaced(&map, &ring, pos), 0);
    map.owner[1] = 1;
    ck_assert_uint_eq(brim_map_displaced(&map, &ring, pos), 1);
    map.owner[4] = 2;
    map.owner[5] = 0;
    ck_assert_uint_eq(brim_map_displaced(&map, &ring, pos), 3);
    map.owner[1] = 0;
    ck_assert_uint_eq(brim_map_displaced(&map, &ring, pos), 2);
    brim_map_destroy(&map);
    brim_ring_destroy(&ring);
}
END_TEST

struct want_move {
    uint32_t partition, from, to, reason;
};

static void
check_diff(const struct brim_map *mo, const struct brim_ring *ro,
           const struct brim_map *mn, const struct brim_ring *rn,
           const uint64_t *pos, const struct want_move *want, size_t nwant)
{
    struct brim_move *moves;
    char              errbuf[BRIM_ERRBUF_LEN] = "";
    size_t            nmoves, i;
    int               rc;

    moves = (struct brim_move *) (uintptr_t) 1;
    nmoves = 999;
    rc = brim_map_diff(mo, ro, mn, rn, pos, &moves, &nmoves, errbuf);
    ck_assert_msg(rc == 0, "diff: rc=%s (%s)", brim_err_name(rc), errbuf);
    ck_assert_uint_eq(nmoves, nwant);
    if (nwant == 0) {
        ck_assert_ptr_null(moves);
    }
    for (i = 0; i < nwant; i++) {
        ck_assert_msg(
            moves[i].partition == want[i].partition
                && moves[i].from == want[i].from && moves[i].to == want[i].to
                && moves[i].reason == want[i].reason,
            "move %zu: partition %u %u -> %u %s, want %u %u -> %u "
            "%s",
            i, moves[i].partition, moves[i].from, moves[i].to,
            brim_move_reason_name(moves[i].reason), want[i].partition,
            want[i].from, want[i].to, brim_move_reason_name(want[i].reason));
        /* The reason is the one judged from the rings alone. */
        ck_assert_uint_eq(moves[i].reason,
                          brim_move_reason_of(ro, moves[i].from, rn,
                                              moves[i].to,
                                              pos[moves[i].partition]));
    }
    brim_free(moves);
}

START_TEST(map_diff_leave)
{
    /* B leaves A@1000 B@2000 C@3000. Its partitions 1 and 2 land on their
     * new ring owner C (arc); its partition 4 walked on to A (cap).
     * Partition 3 stays on C although C's index changes from 2 to 1. */
    static const char *const      old_names[] = {"A", "B", "C"};
    static const uint64_t         old_tok[] = {1000, 2000, 3000};
    static const char *const      new_names[] = {"A", "C"};
    static const uint64_t         new_tok[] = {1000, 3000};
    static const uint64_t         pos[5] = {500, 1500, 1600, 2500, 1700};
    static const uint16_t         old_own[5] = {0, 1, 1, 2, 1};
    static const uint16_t         new_own[5] = {0, 1, 1, 1, 0};
    static const struct want_move want[] = {
        {1, 1, 1, BRIM_MOVE_ARC},
        {2, 1, 1, BRIM_MOVE_ARC},
        {4, 1, 0, BRIM_MOVE_CAP},
    };
    struct brim_ring ro, rn;
    struct brim_map  mo, mn;

    ring_of(&ro, old_names, old_tok, 3);
    ring_of(&rn, new_names, new_tok, 2);
    map_init_ok(&mo, 5, 1);
    map_init_ok(&mn, 5, 2);
    memcpy(mo.owner, old_own, sizeof(old_own));
    memcpy(mn.owner, new_own, sizeof(new_own));
    check_diff(&mo, &ro, &mn, &rn, pos, want, 3);
    brim_map_destroy(&mo);
    brim_map_destroy(&mn);
    brim_ring_destroy(&ro);
    brim_ring_destroy(&rn);
}
END_TEST

START_TEST(map_diff_join)
{
    /* B joins A@1000 C@3000 at 2000. Partition 1 is in B's new arc and
     * goes to B (arc). Partition 3 is in B's arc too but walked past it
     * to A (cap). Partition 4 stays in C's arc and was shed by C to A
     * (cap). Partition 2 stays on C (index 1, then 2): no move. */
    static const char *const      old_names[] = {"A", "C"};
    static const uint64_t         old_tok[] = {1000, 3000};
    static const char *const      new_names[] = {"C", "B", "A"};
    static const uint64_t         new_tok[] = {3000, 2000, 1000};
    static const uint64_t         pos[5] = {500, 1500, 2500, 1800, 2900};
    static const uint16_t         old_own[5] = {0, 1, 1, 1, 1};
    static const uint16_t         new_own[5] = {0, 1, 2, 0, 0};
    static const struct want_move want[] = {
        {1, 1, 1, BRIM_MOVE_ARC},
        {3, 1, 0, BRIM_MOVE_CAP},
        {4, 1, 0, BRIM_MOVE_CAP},
    };
    struct brim_ring ro, rn;
    struct brim_map  mo, mn;

    ring_of(&ro, old_names, old_tok, 2);
    ring_of(&rn, new_names, new_tok, 3);
    ck_assert_int_eq(brim_ring_find_node(&rn, "B", 1), 1);
    map_init_ok(&mo, 5, 1);
    map_init_ok(&mn, 5, 2);
    memcpy(mo.owner, old_own, sizeof(old_own));
    memcpy(mn.owner, new_own, sizeof(new_own));
    check_diff(&mo, &ro, &mn, &rn, pos, want, 3);

    /* Back again: B leaves; partition 1 goes to C, its new ring owner
     * (arc). 3 and 4 go from A to C although A stays and C is no
     * newcomer: only the cap can move them. */
    {
        static const struct want_move back[] = {
            {1, 1, 1, BRIM_MOVE_ARC},
            {3, 0, 1, BRIM_MOVE_CAP},
            {4, 0, 1, BRIM_MOVE_CAP},
        };

        check_diff(&mn, &rn, &mo, &ro, pos, back, 3);
    }
    brim_map_destroy(&mo);
    brim_map_destroy(&mn);
    brim_ring_destroy(&ro);
    brim_ring_destroy(&rn);
}
END_TEST

START_TEST(map_diff_first_epoch)
{
    /* From the empty map of epoch 0: every partition moves, from NONE;
     * arc where it sits on its ring owner, cap where it walked on. */
    static const char *const      names[] = {"A", "C"};
    static const uint64_t         tok[] = {1000, 3000};
    static const uint64_t         pos[3] = {500, 2500, 2600};
    static const uint16_t         own[3] = {0, 1, 0};
    static const struct want_move want[] = {
        {0, NONE16, 0, BRIM_MOVE_ARC},
        {1, NONE16, 1, BRIM_MOVE_ARC},
        {2, NONE16, 0, BRIM_MOVE_CAP},
    };
    struct brim_ring empty, rn;
    struct brim_map  mo, mn;

    ck_assert_int_eq(brim_ring_init(&empty, 1, 1, NULL), 0);
    ring_of(&rn, names, tok, 2);
    map_init_ok(&mo, 3, 0);
    map_init_ok(&mn, 3, 1);
    memcpy(mn.owner, own, sizeof(own));
    check_diff(&mo, &empty, &mn, &rn, pos, want, 3);
    /* The same against a ring that holds the nodes: NONE is no owner. */
    check_diff(&mo, &rn, &mn, &rn, pos, want, 3);
    brim_map_destroy(&mo);
    brim_map_destroy(&mn);
    brim_ring_destroy(&empty);
    brim_ring_destroy(&rn);
}
END_TEST

START_TEST(map_diff_nothing_moves)
{
    static const char *const names[] = {"A", "B"};
    static const uint64_t    tok[] = {1000, 2000};
    static const char *const more[] = {"0", "A", "B"};
    static const uint64_t    more_tok[] = {5000, 1000, 2000};
    static const uint64_t    pos[4] = {1, 1500, 2500, 999};
    static const uint16_t    own[4] = {0, 1, 1, 1};
    static const uint16_t    shifted[4] = {1, 2, 2, 2};
    struct brim_ring         ring, ring2;
    struct brim_map          mo, mn;

    ring_of(&ring, names, tok, 2);
    map_init_ok(&mo, 4, 1);
    map_init_ok(&mn, 4, 2);
    memcpy(mo.owner, own, sizeof(own));
    memcpy(mn.owner, own, sizeof(own));
    check_diff(&mo, &ring, &mn, &ring, pos, NULL, 0);

    /* Same owners by name under other indices ("0" sorts first). */
    ring_of(&ring2, more, more_tok, 3);
    memcpy(mn.owner, shifted, sizeof(shifted));
    check_diff(&mo, &ring, &mn, &ring2, pos, NULL, 0);
    brim_map_destroy(&mo);
    brim_map_destroy(&mn);
    brim_ring_destroy(&ring);
    brim_ring_destroy(&ring2);
}
END_TEST

START_TEST(map_diff_bad_size)
{
    static const char *const names[] = {"A"};
    static const uint64_t    tok[] = {1000};
    struct brim_ring         ring;
    struct brim_map          mo, mn;
    struct brim_move        *moves;
    uint64_t                 pos[8] = {0};
    char                     errbuf[BRIM_ERRBUF_LEN] = "";
    size_t                   nmoves;
    int                      rc;

    ring_of(&ring, names, tok, 1);
    map_init_ok(&mo, 4, 1);
    map_init_ok(&mn, 8, 2);
    moves = (struct brim_move *) (uintptr_t) 1;
    nmoves = 999;
    rc = brim_map_diff(&mo, &ring, &mn, &ring, pos, &moves, &nmoves, errbuf);
    ck_assert_msg(rc == BRIM_EINVAL, "rc=%s", brim_err_name(rc));
    ck_assert_msg(errbuf[0] != '\0', "no message");
    /* Out-parameters are written only on success. */
    ck_assert_ptr_eq(moves, (struct brim_move *) (uintptr_t) 1);
    ck_assert_uint_eq(nmoves, 999);
    brim_map_destroy(&mo);
    brim_map_destroy(&mn);
    brim_ring_destroy(&ring);
}
END_TEST

START_TEST(map_diff_of_rebalance)
{
    /* End to end on hashed tokens: a join's diff lists exactly the
     * partitions rebalance moved, with its reasons. */
    struct brim_ring  ro, rn;
    struct brim_map   mo, mn;
    struct brim_move *moves;
    uint64_t          pos[4096];
    uint8_t           why[4096];
    size_t            nmoves, i, k, arcs, caps;
    char              errbuf[BRIM_ERRBUF_LEN] = "";
    int               rc;

    ck_assert_int_eq(brim_ring_init(&ro, 42, 32, NULL), 0);
    ck_assert_int_eq(brim_ring_add_node(&ro, "n1", ONE, NULL), 0);
    ck_assert_int_eq(brim_ring_add_node(&ro, "n2", ONE, NULL), 0);
    ck_assert_int_eq(brim_ring_add_node(&ro, "n3", ONE, NULL), 0);
    ck_assert_int_eq(brim_ring_copy(&rn, &ro), 0);
    ck_assert_int_eq(brim_ring_add_node(&rn, "n0", ONE, NULL), 0);
    brim_map_positions(42, 4096, pos);
    map_init_ok(&mo, 4096, 1);
    map_init_ok(&mn, 4096, 2);
    rc = brim_place_replace(&ro, 50000, pos, 4096, mo.owner, errbuf);
    ck_assert_msg(rc == 0, "rc=%s (%s)", brim_err_name(rc), errbuf);
    rc = brim_place_rebalance(&ro, mo.owner, &rn, 50000, pos, 4096, mn.owner,
                              why, errbuf);
    ck_assert_msg(rc == 0, "rc=%s (%s)", brim_err_name(rc), errbuf);
    rc = brim_map_diff(&mo, &ro, &mn, &rn, pos, &moves, &nmoves, errbuf);
    ck_assert_msg(rc == 0, "rc=%s (%s)", brim_err_name(rc), errbuf);
    ck_assert_uint_gt(nmoves, 0);
    k = 0;
    arcs = caps = 0;
    for (i = 0; i < 4096; i++) {
        if (why[i] == BRIM_MOVE_NONE) {
            continue;
        }
        ck_assert_uint_lt(k, nmoves);
        ck_assert_uint_eq(moves[k].partition, i);
        ck_assert_uint_eq(moves[k].reason, why[i]);
        ck_assert_uint_eq(moves[k].to, mn.owner[i]);
        ck_assert_uint_eq(moves[k].from, mo.owner[i]);
        /* Only the newcomer n0 (index 0 of the new ring) gains by arc. */
        if (why[i] == BRIM_MOVE_ARC) {
            ck_assert_uint_eq(moves[k].to, 0);
            arcs++;
        } else {
            caps++;
        }
        k++;
    }
    ck_assert_uint_eq(k, nmoves);
    ck_assert_uint_gt(arcs, 0);
    ck_assert_uint_eq(arcs + caps, nmoves);
    brim_free(moves);
    brim_map_destroy(&mo);
    brim_map_destroy(&mn);
    brim_ring_destroy(&ro);
    brim_ring_destroy(&rn);
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s;
    TCase *tc;

    s = suite_create("map");

    tc = tcase_create("init_destroy");
    tcase_add_test(tc, map_init_destroy);
    suite_add_tcase(s, tc);

    tc = tcase_create("positions");
    tcase_add_test(tc, map_positions);
    suite_add_tcase(s, tc);

    tc = tcase_create("counts");
    tcase_add_test(tc, map_counts);
    suite_add_tcase(s, tc);

    tc = tcase_create("displaced");
    tcase_add_test(tc, map_displaced);
    suite_add_tcase(s, tc);

    tc = tcase_create("diff_leave");
    tcase_add_test(tc, map_diff_leave);
    suite_add_tcase(s, tc);

    tc = tcase_create("diff_join");
    tcase_add_test(tc, map_diff_join);
    suite_add_tcase(s, tc);

    tc = tcase_create("diff_first_epoch");
    tcase_add_test(tc, map_diff_first_epoch);
    suite_add_tcase(s, tc);

    tc = tcase_create("diff_nothing_moves");
    tcase_add_test(tc, map_diff_nothing_moves);
    suite_add_tcase(s, tc);

    tc = tcase_create("diff_bad_size");
    tcase_add_test(tc, map_diff_bad_size);
    suite_add_tcase(s, tc);

    tc = tcase_create("diff_of_rebalance");
    tcase_add_test(tc, map_diff_of_rebalance);
    suite_add_tcase(s, tc);

    return s;
}
