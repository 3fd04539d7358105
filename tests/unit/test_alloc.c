/*
 * tests/unit/test_alloc.c - the counting allocator of common/alloc.c: live
 * bytes go up and come back to where they started, and injected failures
 * reach callers as BRIM_ENOMEM with their objects unchanged (the ring's
 * contract) and nothing leaked.
 */
#include "tests/support/check_main.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/map.h"
#include "common/placement.h"
#include "common/ring.h"

#define ONE BRIM_WEIGHT_PPM_ONE

START_TEST(alloc_counts_bytes)
{
    size_t base;
    char  *p, *q, *s;

    base = brim_alloc_bytes();
    p = brim_malloc(100);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_ge(brim_alloc_bytes(), base + 100);
    memset(p, 1, 100);

    q = brim_calloc(10, 1000);
    ck_assert_ptr_nonnull(q);
    ck_assert_uint_ge(brim_alloc_bytes(), base + 100 + 10000);
    ck_assert_int_eq(q[9999], 0);

    p = brim_realloc(p, 5000);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p[99], 1); /* contents kept */
    ck_assert_uint_ge(brim_alloc_bytes(), base + 5000 + 10000);

    s = brim_strndup("hello world", 5);
    ck_assert_str_eq(s, "hello");

    brim_free(q);
    brim_free(p);
    brim_free(s);
    brim_free(NULL);
    ck_assert_uint_eq(brim_alloc_bytes(), base);

    /* realloc from NULL allocates; realloc to 0 keeps a block. */
    p = brim_realloc(NULL, 64);
    ck_assert_ptr_nonnull(p);
    p = brim_realloc(p, 0);
    ck_assert_ptr_nonnull(p);
    brim_free(p);
    ck_assert_uint_eq(brim_alloc_bytes(), base);
}
END_TEST

START_TEST(alloc_calloc_overflow)
{
    size_t base = brim_alloc_bytes();

    ck_assert_ptr_null(brim_calloc(SIZE_MAX / 2, 3));
    ck_assert_uint_eq(brim_alloc_bytes(), base);
}
END_TEST

START_TEST(alloc_fail_injection)
{
    size_t base;
    void  *a, *b, *c;

    base = brim_alloc_bytes();

    /* One-shot: the second call from now fails, the third works. */
    brim_alloc_fail_after(2, 0);
    a = brim_malloc(8);
    b = brim_malloc(8);
    c = brim_malloc(8);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(c);
    brim_free(a);
    brim_free(c);

    /* Sticky: every call from the first failure on. */
    brim_alloc_fail_after(1, 1);
    ck_assert_ptr_null(brim_malloc(8));
    ck_assert_ptr_null(brim_calloc(1, 8));
    ck_assert_ptr_null(brim_strndup("x", 1));
    a = brim_malloc(8);
    ck_assert_ptr_null(a);
    brim_alloc_fail_after(0, 0);

    /* A failed realloc leaves the block to the caller. */
    a = brim_malloc(16);
    ck_assert_ptr_nonnull(a);
    memcpy(a, "0123456789abcde", 16);
    brim_alloc_fail_after(1, 0);
    ck_assert_ptr_null(brim_realloc(a, 4096));
    ck_assert_mem_eq(a, "0123456789abcde", 16);
    brim_free(a);
    ck_assert_uint_eq(brim_alloc_bytes(), base);
}
END_TEST

START_TEST(alloc_ring_bytes_return)
{
    struct brim_ring ring;
    size_t           base;
    char             name[16];
    int              i;

    base = brim_alloc_bytes();
    ck_assert_int_eq(brim_ring_init(&ring, 1, 160, NULL), 0);
    for (i = 0; i < 30; i++) {
        snprintf(name, sizeof(name), "n%d", i);
        ck_assert_int_eq(brim_ring_add_node(&ring, name, ONE, NULL), 0);
    }
    ck_assert_uint_gt(brim_alloc_bytes(), base + 30 * 160 * 8);
    for (i = 0; i < 30; i += 2) {
        snprintf(name, sizeof(name), "n%d", i);
        ck_assert_int_eq(brim_ring_remove_node(&ring, name), 0);
    }
    brim_ring_destroy(&ring);
    ck_assert_uint_eq(brim_alloc_bytes(), base);
}
END_TEST

/* Identical rings (the ring's own arrays compared member by member). */
static int
ring_same(const struct brim_ring *a, const struct brim_ring *b)
{
    size_t i;

    if (a->nnodes != b->nnodes || a->ntokens != b->ntokens
        || a->weight_sum_ppm != b->weight_sum_ppm)
    {
        return 0;
    }
    for (i = 0; i < a->nnodes; i++) {
        if (strcmp(a->nodes[i].name, b->nodes[i].name) != 0
            || a->nodes[i].weight_ppm != b->nodes[i].weight_ppm
            || a->nodes[i].ntokens != b->nodes[i].ntokens)
        {
            return 0;
        }
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

START_TEST(alloc_ring_add_enomem)
{
    struct brim_ring ring, snap;
    char             errbuf[BRIM_ERRBUF_LEN];
    size_t           base;
    uint64_t         n, pos[3] = {5, 6, 7};
    int              rc, nomem, sticky;

    base = brim_alloc_bytes();
    /* Fail the n-th allocation of one add, for every n until the add
     * needs no more than n - 1 of them; sticky and one-shot. */
    for (sticky = 0; sticky <= 1; sticky++) {
        ck_assert_int_eq(brim_ring_init(&ring, 1, 50, NULL), 0);
        ck_assert_int_eq(brim_ring_add_node(&ring, "a", ONE, NULL), 0);
        ck_assert_int_eq(brim_ring_add_node(&ring, "c", ONE, NULL), 0);
        ck_assert_int_eq(brim_ring_copy(&snap, &ring), 0);
        nomem = 0;
        for (n = 1; n < 100; n++) {
            errbuf[0] = '\0';
            brim_alloc_fail_after(n, sticky);
            rc = brim_ring_add_node(&ring, "b", 3 * ONE, errbuf);
            brim_alloc_fail_after(0, 0);
            if (rc == 0) {
                break;
            }
            ck_assert_msg(rc == BRIM_ENOMEM, "fail at %" PRIu64 ": rc=%s", n,
                          brim_err_name(rc));
            ck_assert_msg(errbuf[0] != '\0', "no message for ENOMEM");
            ck_assert_msg(ring_same(&ring, &snap),
                          "ring changed by a failed add (fail at %" PRIu64 ")",
                          n);
            nomem++;
        }
        ck_assert_int_eq(rc, 0);
        ck_assert_int_ge(nomem, 1);
        ck_assert_uint_eq(ring.nnodes, 3);
        ck_assert_uint_eq(ring.ntokens, 250);

        /* The same for explicit positions. */
        for (n = 1; n < 100; n++) {
            brim_alloc_fail_after(n, sticky);
            rc = brim_ring_add_node_at(&ring, "d", ONE, pos, 3, NULL);
            brim_alloc_fail_after(0, 0);
            if (rc == 0) {
                break;
            }
            ck_assert_msg(rc == BRIM_ENOMEM, "rc=%s", brim_err_name(rc));
            ck_assert_uint_eq(ring.nnodes, 3);
            ck_assert_uint_eq(ring.ntokens, 250);
        }
        ck_assert_int_eq(rc, 0);
        ck_assert_uint_eq(ring.ntokens, 253);
        brim_ring_destroy(&ring);
        brim_ring_destroy(&snap);
        ck_assert_uint_eq(brim_alloc_bytes(), base);
    }
}
END_TEST

START_TEST(alloc_ring_copy_enomem)
{
    struct brim_ring ring, copy;
    size_t           base;
    uint64_t         n;
    int              rc;

    ck_assert_int_eq(brim_ring_init(&ring, 1, 10, NULL), 0);
    ck_assert_int_eq(brim_ring_add_node(&ring, "a", ONE, NULL), 0);
    ck_assert_int_eq(brim_ring_add_node(&ring, "b", ONE, NULL), 0);
    base = brim_alloc_bytes();
    for (n = 1; n < 100; n++) {
        memset(&copy, 0x5a, sizeof(copy));
        brim_alloc_fail_after(n, 1);
        rc = brim_ring_copy(&copy, &ring);
        brim_alloc_fail_after(0, 0);
        if (rc == 0) {
            break;
        }
        ck_assert_msg(rc == BRIM_ENOMEM, "rc=%s", brim_err_name(rc));
        /* DST is zeroed and nothing is left allocated. */
        ck_assert_uint_eq(copy.nnodes, 0);
        ck_assert_ptr_null(copy.nodes);
        ck_assert_ptr_null(copy.tokens);
        ck_assert_uint_eq(brim_alloc_bytes(), base);
        brim_ring_destroy(&copy);
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_gt(n, 1);
    brim_ring_destroy(&copy);
    brim_ring_destroy(&ring);
}
END_TEST

START_TEST(alloc_placement_enomem)
{
    struct brim_ring ring;
    struct brim_map  map;
    uint64_t         pos[256], n;
    uint16_t         owner[256], old[256];
    size_t           base, i;
    int              rc, nomem;

    ck_assert_int_eq(brim_ring_init(&ring, 1, 10, NULL), 0);
    ck_assert_int_eq(brim_ring_add_node(&ring, "a", ONE, NULL), 0);
    ck_assert_int_eq(brim_ring_add_node(&ring, "b", ONE, NULL), 0);
    for (i = 0; i < 256; i++) {
        pos[i] = (uint64_t) i * 0x0101010101010101ull;
        old[i] = (uint16_t) (i % 2);
    }
    base = brim_alloc_bytes();

    /* Replace and rebalance either work or say ENOMEM, leaking nothing. */
    nomem = 0;
    for (n = 1; n < 50; n++) {
        brim_alloc_fail_after(n, 1);
        rc = brim_place_replace(&ring, 0, pos, 256, owner, NULL);
        brim_alloc_fail_after(0, 0);
        ck_assert_uint_eq(brim_alloc_bytes(), base);
        if (rc == 0) {
            break;
        }
        ck_assert_msg(rc == BRIM_ENOMEM, "rc=%s", brim_err_name(rc));
        nomem++;
    }
    ck_assert_int_eq(rc, 0);
    for (n = 1; n < 50; n++) {
        brim_alloc_fail_after(n, 1);
        rc = brim_place_rebalance(&ring, old, &ring, 0, pos, 256, owner, NULL,
                                  NULL);
        brim_alloc_fail_after(0, 0);
        ck_assert_uint_eq(brim_alloc_bytes(), base);
        if (rc == 0) {
            break;
        }
        ck_assert_msg(rc == BRIM_ENOMEM, "rc=%s", brim_err_name(rc));
        nomem++;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_int_ge(nomem, 1);

    /* A map that cannot get its array is zeroed. */
    memset(&map, 0x5a, sizeof(map));
    brim_alloc_fail_after(1, 0);
    rc = brim_map_init(&map, 1024, 3);
    brim_alloc_fail_after(0, 0);
    ck_assert_msg(rc == BRIM_ENOMEM, "rc=%s", brim_err_name(rc));
    ck_assert_ptr_null(map.owner);
    ck_assert_uint_eq(map.npartitions, 0);
    brim_map_destroy(&map);
    ck_assert_uint_eq(brim_alloc_bytes(), base);
    brim_ring_destroy(&ring);
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s;
    TCase *tc;

    s = suite_create("alloc");

    tc = tcase_create("counts_bytes");
    tcase_add_test(tc, alloc_counts_bytes);
    suite_add_tcase(s, tc);

    tc = tcase_create("calloc_overflow");
    tcase_add_test(tc, alloc_calloc_overflow);
    suite_add_tcase(s, tc);

    tc = tcase_create("fail_injection");
    tcase_add_test(tc, alloc_fail_injection);
    suite_add_tcase(s, tc);

    tc = tcase_create("ring_bytes_return");
    tcase_add_test(tc, alloc_ring_bytes_return);
    suite_add_tcase(s, tc);

    tc = tcase_create("ring_add_enomem");
    tcase_add_test(tc, alloc_ring_add_enomem);
    suite_add_tcase(s, tc);

    tc = tcase_create("ring_copy_enomem");
    tcase_add_test(tc, alloc_ring_copy_enomem);
    suite_add_tcase(s, tc);

    tc = tcase_create("placement_enomem");
    tcase_add_test(tc, alloc_placement_enomem);
    suite_add_tcase(s, tc);

    return s;
}
