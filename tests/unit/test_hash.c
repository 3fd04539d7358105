/*
 * tests/unit/test_hash.c - golden vectors and structure of common/hash.c:
 * the key hash, the partition of a key (low bits), a partition's ring
 * position and a node's token positions (DESIGN.md section 3).
 *
 * The expectations are computed here from xxhash.h directly, with the
 * documented byte encodings, and the numbers are also pinned as literals:
 * token and partition positions are shared by every party of a cluster, so
 * a change in them is a protocol change, not a refactoring.
 */
#include "tests/support/check_main.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "common/hash.h"

/*
 * The derived seeds of common/hash.c: XXH3-64 of the tweak (8 bytes, little
 * endian) under the cluster seed. The tweaks are part of the format.
 */
#define REF_PARTITION_TWEAK 0x9e3779b97f4a7c15ull
#define REF_TOKEN_TWEAK 0xc2b2ae3d27d4eb4full

static void
ref_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char) (v & 0xff);
    p[1] = (unsigned char) ((v >> 8) & 0xff);
    p[2] = (unsigned char) ((v >> 16) & 0xff);
    p[3] = (unsigned char) ((v >> 24) & 0xff);
}

static uint64_t
ref_derive(uint64_t seed, uint64_t tweak)
{
    unsigned char b[8];
    int           i;

    for (i = 0; i < 8; i++) {
        b[i] = (unsigned char) ((tweak >> (8 * i)) & 0xff);
    }
    return XXH3_64bits_withSeed(b, sizeof(b), seed);
}

/* le32(len) | name | le32(token) under the token seed. */
static uint64_t
ref_token(uint64_t seed, const char *name, uint32_t token)
{
    unsigned char b[4 + 256 + 4];
    size_t        len;

    len = strlen(name);
    ck_assert_uint_le(len, 256);
    ref_le32(b, (uint32_t) len);
    memcpy(b + 4, name, len);
    ref_le32(b + 4 + len, token);
    return XXH3_64bits_withSeed(b, 8 + len, ref_derive(seed, REF_TOKEN_TWEAK));
}

/* le32(index) under the partition seed. */
static uint64_t
ref_partition_pos(uint64_t seed, uint32_t index)
{
    unsigned char b[4];

    ref_le32(b, index);
    return XXH3_64bits_withSeed(b, sizeof(b),
                                ref_derive(seed, REF_PARTITION_TWEAK));
}

static const uint64_t hash_seeds[] = {0, 1, 0x0123456789abcdefull};

START_TEST(hash_xxh3_golden)
{
    /* Published XXH3-64 vectors: the library itself is the one expected. */
    ck_assert_uint_eq(XXH3_64bits_withSeed("", 0, 0), 0x2d06800538d394c2ull);
    ck_assert_uint_eq(XXH3_64bits("abc", 3), 0x78af5f94892f3950ull);

    /* The key hash is plain XXH3-64 under the cluster seed. */
    ck_assert_uint_eq(brim_hash_key(0, "", 0), 0x2d06800538d394c2ull);
    ck_assert_uint_eq(brim_hash_key(0, "abc", 3), 0x78af5f94892f3950ull);
    ck_assert_uint_eq(brim_hash_key(0, "brim", 4), 0x73e7265ad2657804ull);
    ck_assert_uint_eq(brim_hash_key(1, "brim", 4), 0x770902047bd61330ull);
    ck_assert_uint_eq(brim_hash_key(0x0123456789abcdefull, "brim", 4),
                      0xb1dcbe0f7a9ef82aull);
}
END_TEST

START_TEST(hash_token_golden)
{
    static const struct {
        uint64_t    seed;
        const char *name;
        uint32_t    token;
        uint64_t    pos;
    } v[] = {
        {0, "n1", 0, 0x19d8767512769de9ull},
        {0, "n1", 12, 0x3c3ff135606ad6ceull},
        {0, "n11", 2, 0x8716e96cfc2c3191ull},
        {1, "n1", 0, 0x0a756ca2abe0fab3ull},
        {1, "n1", 12, 0x04f875e05711780full},
        {1, "n11", 2, 0x6fabc3b94ebf5a26ull},
        {0x0123456789abcdefull, "n1", 0, 0x586ff79a659deb59ull},
        {0x0123456789abcdefull, "n1", 12, 0x48c474cfa47d3dfbull},
        {0x0123456789abcdefull, "n11", 2, 0x55537aea6120087aull},
    };
    size_t i;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        ck_assert_uint_eq(ref_token(v[i].seed, v[i].name, v[i].token),
                          v[i].pos);
        ck_assert_uint_eq(brim_hash_token(v[i].seed, v[i].name,
                                          strlen(v[i].name), v[i].token),
                          v[i].pos);
    }
}
END_TEST

START_TEST(hash_token_structure)
{
    static const char *names[] = {
        "a",
        "n1",
        "n11",
        "node-7.example:7000",
        "B",
        "0123456789012345678901234567890123456789012345678901234567890123",
    };
    size_t   i, s;
    uint32_t j;

    /* Every token of every name hashes the documented bytes. */
    for (s = 0; s < sizeof(hash_seeds) / sizeof(hash_seeds[0]); s++) {
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            for (j = 0; j < 300; j += 7) {
                ck_assert_uint_eq(brim_hash_token(hash_seeds[s], names[i],
                                                  strlen(names[i]), j),
                                  ref_token(hash_seeds[s], names[i], j));
            }
            ck_assert_uint_eq(brim_hash_token(hash_seeds[s], names[i],
                                              strlen(names[i]), UINT32_MAX),
                              ref_token(hash_seeds[s], names[i], UINT32_MAX));
        }
    }
    /* NAME_LEN, not a NUL, ends the name. */
    ck_assert_uint_eq(brim_hash_token(5, "n11", 2, 12), ref_token(5, "n1", 12));
}
END_TEST

START_TEST(hash_partition_pos_golden)
{
    uint64_t s;
    uint32_t i;
    size_t   k;

    ck_assert_uint_eq(brim_hash_partition_pos(0, 0), 0x3d8d1acce58858c9ull);
    ck_assert_uint_eq(brim_hash_partition_pos(0, 65535), 0xf45ad9a03edd711dull);
    ck_assert_uint_eq(brim_hash_partition_pos(1, 0), 0xd92725744e39320aull);
    ck_assert_uint_eq(brim_hash_partition_pos(1, 65535), 0x6ba1e835494c2d74ull);
    ck_assert_uint_eq(brim_hash_partition_pos(0x0123456789abcdefull, 0),
                      0xc8d3ea3908163d02ull);
    ck_assert_uint_eq(brim_hash_partition_pos(0x0123456789abcdefull, 65535),
                      0x9159fc7148fcfbbcull);

    for (k = 0; k < sizeof(hash_seeds) / sizeof(hash_seeds[0]); k++) {
        s = hash_seeds[k];
        for (i = 0; i < 5000; i += 13) {
            unsigned char b[4];

            ck_assert_uint_eq(brim_hash_partition_pos(s, i),
                              ref_partition_pos(s, i));
            /* A second seed: not the key hash of the same four bytes. */
            ref_le32(b, i);
            ck_assert_uint_ne(brim_hash_partition_pos(s, i),
                              brim_hash_key(s, b, 4));
        }
        ck_assert_uint_eq(brim_hash_partition_pos(s, UINT32_MAX),
                          ref_partition_pos(s, UINT32_MAX));
    }
}
END_TEST

static int
u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

    return x < y ? -1 : x > y;
}

START_TEST(hash_token_unambiguous)
{
    uint64_t *h;
    size_t    n, i, len, bits;
    uint32_t  j;
    char      name[4];

    /* The case of the design: "n1" | 12 and "n11" | 2 are the same bytes
     * under a naive name-then-decimal encoding. */
    ck_assert_uint_ne(brim_hash_token(0, "n1", 2, 12),
                      brim_hash_token(0, "n11", 3, 2));
    ck_assert_uint_ne(brim_hash_token(42, "n1", 2, 12),
                      brim_hash_token(42, "n11", 3, 2));
    /* Binary neighbours: "n" | 0x31 .. vs "n1" | ... */
    ck_assert_uint_ne(brim_hash_token(0, "n", 1, 0x31u),
                      brim_hash_token(0, "n1", 2, 0));

    /* Every (name, token) over names of 1..3 bytes from {n, 1} and tokens
     * 0..199 gives its own position. */
    h = malloc(14 * 200 * sizeof(*h));
    ck_assert_ptr_nonnull(h);
    n = 0;
    for (len = 1; len <= 3; len++) {
        for (bits = 0; bits < (1u << len); bits++) {
            for (i = 0; i < len; i++) {
                name[i] = (bits >> i) & 1 ? '1' : 'n';
            }
            name[len] = '\0';
            for (j = 0; j < 200; j++) {
                h[n++] = brim_hash_token(7, name, len, j);
            }
        }
    }
    ck_assert_uint_eq(n, 14 * 200);
    qsort(h, n, sizeof(*h), u64_cmp);
    for (i = 1; i < n; i++) {
        ck_assert_msg(h[i] != h[i - 1], "two tokens share %#llx",
                      (unsigned long long) h[i]);
    }
    free(h);
}
END_TEST

START_TEST(hash_deterministic)
{
    uint32_t i;
    char     key[32];

    for (i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "key:%u", i);
        ck_assert_uint_eq(brim_hash_key(99, key, strlen(key)),
                          brim_hash_key(99, key, strlen(key)));
        ck_assert_uint_eq(brim_hash_token(99, key, strlen(key), i),
                          brim_hash_token(99, key, strlen(key), i));
        ck_assert_uint_eq(brim_hash_partition_pos(99, i),
                          brim_hash_partition_pos(99, i));
        /* The cluster seed matters to all three. */
        ck_assert_uint_ne(brim_hash_key(99, key, strlen(key)),
                          brim_hash_key(100, key, strlen(key)));
        ck_assert_uint_ne(brim_hash_token(99, key, strlen(key), i),
                          brim_hash_token(100, key, strlen(key), i));
        ck_assert_uint_ne(brim_hash_partition_pos(99, i),
                          brim_hash_partition_pos(100, i));
    }
}
END_TEST

START_TEST(hash_partition_low_bits)
{
    static unsigned counts[256];
    uint64_t        h;
    uint32_t        p, i, part;
    char            key[32];
    unsigned        lo, hi;

    ck_assert_uint_eq(brim_partition_of(UINT64_MAX, 256), 255);
    ck_assert_uint_eq(brim_partition_of(0x12345ull, 256), 0x45);
    ck_assert_uint_eq(brim_partition_of(0xabcdef0123456789ull, 1u << 20),
                      0x56789);
    ck_assert_uint_eq(brim_partition_of(0xabcdef0123456789ull, 1), 0);
    ck_assert_uint_eq(brim_partition_of(1ull << 32, 1u << 16), 0);

    for (i = 0; i < 20000; i++) {
        snprintf(key, sizeof(key), "user:%u", i);
        h = brim_hash_key(3, key, strlen(key));
        for (p = BRIM_PARTITIONS_MIN; p <= BRIM_PARTITIONS_MAX; p <<= 1) {
            part = brim_partition_of(h, p);
            ck_assert_uint_eq(part, (uint32_t) (h % p));
            ck_assert_uint_lt(part, p);
        }
        counts[brim_partition_of(h, 256)]++;
    }
    /* The low bits spread keys: 20000 keys over 256 partitions average
     * 78; XXH3 keeps every partition well inside [30, 140]. */
    lo = UINT32_MAX;
    hi = 0;
    for (i = 0; i < 256; i++) {
        lo = counts[i] < lo ? counts[i] : lo;
        hi = counts[i] > hi ? counts[i] : hi;
    }
    ck_assert_uint_ge(lo, 30);
    ck_assert_uint_le(hi, 140);
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s;
    TCase *tc;

    s = suite_create("hash");

    tc = tcase_create("xxh3_golden");
    tcase_add_test(tc, hash_xxh3_golden);
    suite_add_tcase(s, tc);

    tc = tcase_create("token_golden");
    tcase_add_test(tc, hash_token_golden);
    suite_add_tcase(s, tc);

    tc = tcase_create("token_structure");
    tcase_add_test(tc, hash_token_structure);
    suite_add_tcase(s, tc);

    tc = tcase_create("partition_pos_golden");
    tcase_add_test(tc, hash_partition_pos_golden);
    suite_add_tcase(s, tc);

    tc = tcase_create("token_unambiguous");
    tcase_add_test(tc, hash_token_unambiguous);
    suite_add_tcase(s, tc);

    tc = tcase_create("deterministic");
    tcase_add_test(tc, hash_deterministic);
    suite_add_tcase(s, tc);

    tc = tcase_create("partition_low_bits");
    tcase_add_test(tc, hash_partition_low_bits);
    suite_add_tcase(s, tc);

    return s;
}
