/*
 * tests/unit/test_prefault.c - server/prefault.c: the heap it faults in
 * is resident, stays in the process after it returns, and later small
 * allocations land on it (they raise the resident size by almost
 * nothing, where the same allocations on a cold heap raise it by their
 * size); the room it checks against is a real, bounded figure.
 */
#include "tests/support/check_main.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/prefault.h"

#define MIB (1u << 20)

/* The process's resident set in bytes (/proc/self/statm, field 2). */
static size_t
resident_bytes(void)
{
    FILE         *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "%lu %lu", &size, &resident), 2);
    fclose(f);
    return (size_t) resident * (size_t) sysconf(_SC_PAGESIZE);
}

START_TEST(prefault_zero_is_nothing)
{
    size_t done = 123;

    ck_assert_int_eq(brim_prefault_heap(0, &done), 0);
    ck_assert_uint_eq(done, 0);
    ck_assert_int_eq(brim_prefault_heap(0, NULL), 0);
}
END_TEST

START_TEST(prefault_heap_stays_and_is_reused)
{
    enum {
        PREFAULT_MIB = 96,
        BLOCKS = 40000,
        BLOCK = 1024
    };
    size_t before = resident_bytes();
    size_t done = 0, after, grown;
    char **block;
    void  *low[64];

    /* Free blocks low in the heap, of the sizes a daemon frees while it
     * starts (its options, its secret file): malloc may serve any small
     * request from them, so nothing small can be relied on to land
     * above the prefaulted chunks. */
    for (int i = 0; i < 64; i++) {
        low[i] = malloc((size_t) 16 << (i % 12));
        ck_assert_ptr_nonnull(low[i]);
    }
    for (int i = 0; i < 64; i += 2) {
        free(low[i]);
    }

    ck_assert_int_eq(brim_prefault_heap((size_t) PREFAULT_MIB * MIB, &done), 0);
    ck_assert_uint_ge(done, (size_t) PREFAULT_MIB * MIB);
    after = resident_bytes();
    /* Resident after the call returned: freed, yet kept by the heap. */
    ck_assert_msg(after >= before + (size_t) (PREFAULT_MIB - 8) * MIB,
                  "resident %zu MiB before, %zu MiB after prefaulting %d "
                  "MiB",
                  before / MIB, after / MIB, PREFAULT_MIB);
#if defined(__SANITIZE_ADDRESS__)
    /* ASan's allocator keeps freed blocks in quarantine and serves new
     * ones from elsewhere: the reuse below is glibc's behaviour. */
    for (int i = 1; i < 64; i += 2) {
        free(low[i]);
    }
    return;
#endif
    /* About 39 MiB of 1 KiB blocks, each written: on a cold heap the
     * resident size grows by that much; on the prefaulted one it
     * barely moves. */
    block = malloc(BLOCKS * sizeof(*block));
    ck_assert_ptr_nonnull(block);
    for (int i = 0; i < BLOCKS; i++) {
        block[i] = malloc(BLOCK);
        ck_assert_ptr_nonnull(block[i]);
        memset(block[i], 0xa5, BLOCK);
    }
    grown = resident_bytes() - after;
    ck_assert_msg(grown < 4 * MIB,
                  "%d blocks of %d bytes raised the resident size by %zu "
                  "KiB after a prefault",
                  BLOCKS, BLOCK, grown >> 10);
    for (int i = 0; i < BLOCKS; i++) {
        free(block[i]);
    }
    free(block);
    for (int i = 1; i < 64; i += 2) {
        free(low[i]);
    }
}
END_TEST

START_TEST(prefault_room_is_below_total)
{
    FILE         *f = fopen("/proc/meminfo", "r");
    unsigned long total_kb = 0;
    size_t        room = 0;
    char          line[256];

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "MemTotal: %lu kB", &total_kb) == 1) {
            break;
        }
    }
    fclose(f);
    ck_assert_uint_gt(total_kb, 0);
    ck_assert_int_eq(brim_prefault_room(&room), 0);
    ck_assert_uint_gt(room, 0);
    ck_assert_uint_le(room, (size_t) total_kb * 1024);
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s = suite_create("prefault");
    TCase *tc;

    tc = tcase_create("zero_is_nothing");
    tcase_add_test(tc, prefault_zero_is_nothing);
    suite_add_tcase(s, tc);

    tc = tcase_create("heap_stays_and_is_reused");
    tcase_add_test(tc, prefault_heap_stays_and_is_reused);
    suite_add_tcase(s, tc);

    tc = tcase_create("room_is_below_total");
    tcase_add_test(tc, prefault_room_is_below_total);
    suite_add_tcase(s, tc);

    return s;
}
