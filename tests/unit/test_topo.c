/*
 * tests/unit/test_topo.c - proto/topo.c: a topology (settings, members,
 * partition map) survives its msgpack encoding, every malformed variant of
 * it is refused with a reason and nothing kept, the ring it implies is the
 * ring built directly from its members, and copies are independent.
 */
#include "tests/support/check_main.h"

#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/map.h"
#include "common/placement.h"
#include "common/ring.h"
#include "proto/buf.h"
#include "proto/topo.h"
#include "proto/wire.h"

#define P 4096u
#define V 64u
#define SEED 42u

/* The members of the sample topology, in name order. */
static const struct brim_member sample_members[] = {
    {"alpha", "127.0.0.1:7001", 1000000, BRIM_MEMBER_UP, 11},
    {"beta", "127.0.0.1:7002", 2000000, BRIM_MEMBER_UP, 12},
    {"delta", "127.0.0.1:7003", 500000, BRIM_MEMBER_JOINING, 13},
    {"gamma", "[::1]:7004", 1000000, BRIM_MEMBER_LEAVING, UINT64_MAX},
    {"n1", "", 1500000, BRIM_MEMBER_UP, 0},
    {"n11", "host.example:7006", 1000000, BRIM_MEMBER_DEAD, 16},
};
#define NSAMPLE (sizeof(sample_members) / sizeof(sample_members[0]))

/* ---- fixture: a zone and an output buffer ---- */

static msgpack_zone    zone;
static struct brim_buf out;

static void
setup(void)
{
    ck_assert(msgpack_zone_init(&zone, 4096));
    brim_buf_init(&out);
}

static void
teardown(void)
{
    brim_buf_destroy(&out);
    msgpack_zone_destroy(&zone);
}

/*
 * The sample topology: NSAMPLE members, P partitions placed by the replace
 * rule on the members' ring, partition 5 left without an owner.
 */
static void
sample_topo(struct brim_topo *t)
{
    struct brim_ring ring;
    char             errbuf[BRIM_ERRBUF_LEN] = "";
    uint64_t        *pos;
    int              rc;

    rc = brim_topo_init(t, 0x0123456789abcdefull, SEED, P, V, 50000, 7);
    ck_assert_int_eq(rc, 0);
    t->members = brim_malloc(sizeof(sample_members));
    ck_assert_ptr_nonnull(t->members);
    memcpy(t->members, sample_members, sizeof(sample_members));
    t->nmembers = NSAMPLE;

    rc = brim_topo_ring(t, &ring, 1, errbuf);
    ck_assert_msg(rc == 0, "ring: rc=%s (%s)", brim_err_name(rc), errbuf);
    pos = brim_malloc(P * sizeof(*pos));
    ck_assert_ptr_nonnull(pos);
    brim_map_positions(SEED, P, pos);
    rc = brim_place_replace(&ring, t->eps_ppm, pos, P, t->map.owner, errbuf);
    ck_assert_msg(rc == 0, "place: rc=%s (%s)", brim_err_name(rc), errbuf);
    t->map.owner[5] = BRIM_NODE_NONE;
    brim_free(pos);
    brim_ring_destroy(&ring);
}

/* Assert that A and B hold the same topology. */
static void
assert_topo_eq(const struct brim_topo *a, const struct brim_topo *b)
{
    uint32_t i;

    ck_assert_uint_eq(a->cluster_id, b->cluster_id);
    ck_assert_uint_eq(a->seed, b->seed);
    ck_assert_uint_eq(a->tokens_per_node, b->tokens_per_node);
    ck_assert_uint_eq(a->eps_ppm, b->eps_ppm);
    ck_assert_uint_eq(a->map.epoch, b->map.epoch);
    ck_assert_uint_eq(a->map.npartitions, b->map.npartitions);
    ck_assert_mem_eq(a->map.owner, b->map.owner,
                     a->map.npartitions * sizeof(*a->map.owner));
    ck_assert_uint_eq(a->nmembers, b->nmembers);
    for (i = 0; i < a->nmembers; i++) {
        ck_assert_str_eq(a->members[i].name, b->members[i].name);
        ck_assert_str_eq(a->members[i].addr, b->members[i].addr);
        ck_assert_uint_eq(a->members[i].weight_ppm, b->members[i].weight_ppm);
        ck_assert_uint_eq(a->members[i].state, b->members[i].state);
        ck_assert_uint_eq(a->members[i].incarnation, b->members[i].incarnation);
    }
}

/* Encode T into OUT (emptied first) and unpack it: the root object. */
static msgpack_object
encode_unpack(const struct brim_topo *t)
{
    msgpack_object obj;
    int            rc;

    brim_buf_truncate(&out, 0);
    ck_assert_int_eq(brim_topo_encode(&out, t), 0);
    rc = brim_wire_unpack(out.data, out.len, SIZE_MAX, &zone, &obj);
    ck_assert_msg(rc == 0, "unpack: rc=%s", brim_err_name(rc));
    return obj;
}

/* The sample topology, encoded and unpacked, ready to be spoiled. */
static msgpack_object
fresh(void)
{
    struct brim_topo t;
    msgpack_object   obj;

    sample_topo(&t);
    obj = encode_unpack(&t);
    brim_topo_destroy(&t);
    return obj;
}

/* Field K of member J of the unpacked topology ROOT. */
static msgpack_object *
member_field(msgpack_object *root, uint32_t j, uint32_t k)
{
    return &root->via.array.ptr[7].via.array.ptr[j].via.array.ptr[k];
}

/* Point the str object O at the NUL-terminated S (static storage). */
static void
set_str(msgpack_object *o, const char *s)
{
    o->type = MSGPACK_OBJECT_STR;
    o->via.str.ptr = s;
    o->via.str.size = (uint32_t) strlen(s);
}

/* Assert that ROOT is refused as malformed (WHAT says how it was spoilt),
 * with a reason, leaving nothing allocated and the topology zeroed. */
static void
assert_refused(const msgpack_object *root, const char *what)
{
    struct brim_topo t;
    char             errbuf[BRIM_ERRBUF_LEN] = "";
    size_t           before;
    int              rc;

    before = brim_alloc_bytes();
    memset(&t, 0xa5, sizeof(t));
    rc = brim_topo_decode(root, &t, errbuf);
    ck_assert_msg(rc == BRIM_EBADREQ, "%s: rc=%s", what, brim_err_name(rc));
    ck_assert_msg(errbuf[0] != '\0', "%s: no reason given", what);
    ck_assert_ptr_null(t.members);
    ck_assert_ptr_null(t.map.owner);
    ck_assert_uint_eq(t.nmembers, 0);
    ck_assert_uint_eq(brim_alloc_bytes(), before);
}

/* Assert that ROOT, spoilt only within the limits (WHAT), still
 * decodes. */
static void
assert_accepted(const msgpack_object *root, const char *what)
{
    struct brim_topo t;
    char             errbuf[BRIM_ERRBUF_LEN] = "";
    int              rc;

    rc = brim_topo_decode(root, &t, errbuf);
    ck_assert_msg(rc == 0, "%s: rc=%s (%s)", what, brim_err_name(rc), errbuf);
    brim_topo_destroy(&t);
}

/* Assert that the sample with field K set to the integer VALUE is
 * refused. */
static void
refuse_field(uint32_t k, uint64_t value, const char *what)
{
    msgpack_object root;

    root = fresh();
    root.via.array.ptr[k].via.u64 = value;
    assert_refused(&root, what);
}

/* Assert that the sample with field K of member J set to the integer
 * VALUE is refused. */
static void
refuse_member_field(uint32_t j, uint32_t k, uint64_t value, const char *what)
{
    msgpack_object root;

    root = fresh();
    member_field(&root, j, k)->via.u64 = value;
    assert_refused(&root, what);
}

/* Assert that the sample with field K of member J set to the text TEXT
 * (static storage) is refused. */
static void
refuse_member_text(uint32_t j, uint32_t k, const char *text, const char *what)
{
    msgpack_object root;

    root = fresh();
    set_str(member_field(&root, j, k), text);
    assert_refused(&root, what);
}

START_TEST(topo_round_trip)
{
    struct brim_topo t, back, empty;
    msgpack_object   obj;
    struct brim_buf  again;
    char             errbuf[BRIM_ERRBUF_LEN] = "";
    size_t           before;
    int              rc;

    before = brim_alloc_bytes();
    sample_topo(&t);
    obj = encode_unpack(&t);
    rc = brim_topo_decode(&obj, &back, errbuf);
    ck_assert_msg(rc == 0, "decode: rc=%s (%s)", brim_err_name(rc), errbuf);
    assert_topo_eq(&t, &back);
    ck_assert_uint_eq(back.map.owner[5], BRIM_NODE_NONE);

    /* Encoding is deterministic: the decoded copy encodes to the same
     * bytes. */
    brim_buf_init(&again);
    ck_assert_int_eq(brim_topo_encode(&again, &back), 0);
    ck_assert_uint_eq(again.len, out.len);
    ck_assert_mem_eq(again.data, out.data, out.len);
    brim_buf_destroy(&again);
    brim_topo_destroy(&back);

    /* A fresh cluster: no members, every partition unowned, no cap. */
    ck_assert_int_eq(brim_topo_init(&empty, 1, 2, 256, 1, BRIM_EPS_NONE, 0), 0);
    obj = encode_unpack(&empty);
    rc = brim_topo_decode(&obj, &back, errbuf);
    ck_assert_msg(rc == 0, "decode empty: rc=%s (%s)", brim_err_name(rc),
                  errbuf);
    assert_topo_eq(&empty, &back);
    ck_assert_ptr_null(back.members);
    brim_topo_destroy(&back);
    brim_topo_destroy(&empty);
    brim_topo_destroy(&t);
    brim_buf_destroy(&out); /* the fixture's, refilled above */
    ck_assert_uint_eq(brim_alloc_bytes(), before);
}
END_TEST

START_TEST(topo_encode_appends)
{
    struct brim_topo t;
    size_t           len;

    /* The object goes after what OUT holds; a failed encode leaves OUT's
     * length as it was. */
    sample_topo(&t);
    ck_assert_int_eq(brim_buf_append(&out, "xyz", 3), 0);
    ck_assert_int_eq(brim_topo_encode(&out, &t), 0);
    ck_assert_mem_eq(out.data, "xyz", 3);
    ck_assert_int_eq(
        brim_wire_check(out.data + 3, out.len - 3, BRIM_WIRE_MAX_DEPTH), 0);
    len = out.len;
    brim_buf_destroy(&out);
    brim_buf_init(&out);
    brim_alloc_fail_after(1, 1);
    ck_assert_int_eq(brim_topo_encode(&out, &t), BRIM_ENOMEM);
    brim_alloc_fail_after(0, 0);
    ck_assert_uint_eq(out.len, 0);
    ck_assert_int_eq(brim_topo_encode(&out, &t), 0);
    ck_assert_uint_eq(out.len, len - 3);
    brim_topo_destroy(&t);
}
END_TEST

START_TEST(topo_refuses_format)
{
    msgpack_object root;

    refuse_field(0, BRIM_TOPO_FORMAT + 1, "format 3");
    refuse_field(0, 0, "format 0");
    root = fresh();
    root.via.array.size = 8;
    assert_refused(&root, "8 fields");
    root = fresh();
    root.type = MSGPACK_OBJECT_MAP;
    assert_refused(&root, "a map");
    root = fresh();
    root.via.array.ptr[1].type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
    root.via.array.ptr[1].via.i64 = -1;
    assert_refused(&root, "negative cluster id");
    root = fresh();
    set_str(&root.via.array.ptr[3], "7");
    assert_refused(&root, "epoch as a string");
}
END_TEST

START_TEST(topo_refuses_settings)
{
    /* P must be a power of two from 2^8 to 2^20; the owner bin is then
     * still 2 x 4096 bytes, but P is judged first. */
    refuse_field(4, 4095, "P = 4095");
    refuse_field(4, 3000, "P = 3000");
    refuse_field(4, 128, "P = 128");
    refuse_field(4, 1u << 21, "P = 2^21");
    refuse_field(4, (uint64_t) UINT32_MAX + 1 + 4096, "P above 32 bits");
    refuse_field(5, 0, "V = 0");
    refuse_field(5, BRIM_TOKENS_PER_NODE_MAX + 1, "V too large");
    refuse_field(6, BRIM_EPS_PPM_MAX + 1, "eps too large");
}
END_TEST

START_TEST(topo_refuses_names)
{
    static char     long_name[BRIM_NAME_MAX + 2];
    static char     long_addr[BRIM_ADDR_MAX + 2];
    msgpack_object  root, m;
    msgpack_object *members;

    /* Out of order: swap members 1 and 2. */
    root = fresh();
    members = root.via.array.ptr[7].via.array.ptr;
    m = members[1];
    members[1] = members[2];
    members[2] = m;
    assert_refused(&root, "names out of order");

    /* Duplicate: member 2 repeats member 1's name. */
    root = fresh();
    *member_field(&root, 2, 0) = *member_field(&root, 1, 0);
    assert_refused(&root, "duplicate name");

    /* "n1" < "n11": a proper prefix first, so the reverse is refused. */
    refuse_member_text(4, 0, "n2", "n2 before n11");

    refuse_member_text(0, 0, "", "empty name");
    refuse_member_text(0, 0, "al pha", "a space in a name");
    refuse_member_text(0, 0, "a/b", "a slash in a name");
    root = fresh();
    member_field(&root, 0, 0)->via.str.size = 3;
    member_field(&root, 0, 0)->via.str.ptr = "a\0b";
    assert_refused(&root, "a NUL in a name");
    memset(long_name, 'a', BRIM_NAME_MAX + 1);
    long_name[BRIM_NAME_MAX + 1] = '\0';
    refuse_member_text(0, 0, long_name, "a 65-byte name");

    /* Addresses: at most BRIM_ADDR_MAX bytes, no NUL. */
    memset(long_addr, 'h', BRIM_ADDR_MAX + 1);
    long_addr[BRIM_ADDR_MAX + 1] = '\0';
    refuse_member_text(0, 1, long_addr, "a 64-byte address");
    long_addr[BRIM_ADDR_MAX] = '\0';
    root = fresh();
    set_str(member_field(&root, 0, 1), long_addr);
    assert_accepted(&root, "a 63-byte address");
    root = fresh();
    member_field(&root, 0, 1)->via.str.size = 3;
    member_field(&root, 0, 1)->via.str.ptr = "h\0:";
    assert_refused(&root, "a NUL in an address");

    /* A member of the wrong shape. */
    root = fresh();
    root.via.array.ptr[7].via.array.ptr[3].via.array.size = 4;
    assert_refused(&root, "a member of 4 fields");
    root = fresh();
    root.via.array.ptr[7].type = MSGPACK_OBJECT_NIL;
    assert_refused(&root, "members nil");
}
END_TEST

START_TEST(topo_refuses_owners)
{
    msgpack_object  root;
    msgpack_object *bin;
    char           *p;

    root = fresh();
    root.via.array.ptr[8].via.bin.size -= 1;
    assert_refused(&root, "owner bin one byte short");
    root = fresh();
    root.via.array.ptr[8].via.bin.size -= 2;
    assert_refused(&root, "owner bin one entry short");
    root = fresh();
    root.via.array.ptr[8].type = MSGPACK_OBJECT_POSITIVE_INTEGER;
    assert_refused(&root, "owner map an integer");

    /* An index past the members (6 of 6), and one just below NONE. The
     * bin borrows OUT's bytes, which fresh() rewrites each time. */
    root = fresh();
    bin = &root.via.array.ptr[8];
    p = (char *) (uintptr_t) bin->via.bin.ptr;
    p[2 * 100] = (char) NSAMPLE;
    p[2 * 100 + 1] = 0;
    assert_refused(&root, "owner 6 of 6");
    root = fresh();
    bin = &root.via.array.ptr[8];
    p = (char *) (uintptr_t) bin->via.bin.ptr;
    p[2 * (P - 1)] = (char) 0xfe;
    p[2 * (P - 1) + 1] = (char) 0xff;
    assert_refused(&root, "owner 0xfffe");
}
END_TEST

START_TEST(topo_refuses_state)
{
    refuse_member_field(2, 3, 0, "state 0");
    refuse_member_field(2, 3, BRIM_MEMBER_DEAD + 1, "state 5");
    refuse_member_field(2, 3, (uint64_t) UINT32_MAX + 2, "state above 32 bits");
}
END_TEST

START_TEST(topo_refuses_weight)
{
    msgpack_object root;

    refuse_member_field(1, 2, 0, "weight 0");
    refuse_member_field(1, 2, BRIM_WEIGHT_PPM_MIN - 1, "weight below 0.001");
    refuse_member_field(1, 2, (uint64_t) BRIM_WEIGHT_PPM_MAX + 1,
                        "weight above 1000");
    /* In range, but 10^7 tokens at V = 10000: more than one node may hold. */
    root = fresh();
    root.via.array.ptr[5].via.u64 = BRIM_TOKENS_PER_NODE_MAX;
    member_field(&root, 1, 2)->via.u64 = BRIM_WEIGHT_PPM_MAX;
    assert_refused(&root, "weight of too many tokens");
    root = fresh();
    member_field(&root, 1, 4)->type = MSGPACK_OBJECT_FLOAT64;
    assert_refused(&root, "incarnation a float");
}
END_TEST

/* Assert that rings A and B are identical: nodes, weights, tokens. */
static void
assert_ring_eq(const struct brim_ring *a, const struct brim_ring *b)
{
    uint32_t i;
    size_t   j;

    ck_assert_uint_eq(a->seed, b->seed);
    ck_assert_uint_eq(a->tokens_per_node, b->tokens_per_node);
    ck_assert_uint_eq(a->nnodes, b->nnodes);
    for (i = 0; i < a->nnodes; i++) {
        ck_assert_str_eq(a->nodes[i].name, b->nodes[i].name);
        ck_assert_uint_eq(a->nodes[i].weight_ppm, b->nodes[i].weight_ppm);
        ck_assert_uint_eq(a->nodes[i].ntokens, b->nodes[i].ntokens);
    }
    ck_assert_uint_eq(a->ntokens, b->ntokens);
    for (j = 0; j < a->ntokens; j++) { /* field by field: padding */
        ck_assert_uint_eq(a->tokens[j].pos, b->tokens[j].pos);
        ck_assert_uint_eq(a->tokens[j].node, b->tokens[j].node);
    }
    ck_assert_uint_eq(a->weight_sum_ppm, b->weight_sum_ppm);
}

START_TEST(topo_ring_equals_direct)
{
    struct brim_topo t, bad;
    struct brim_ring from_topo, direct;
    char             errbuf[BRIM_ERRBUF_LEN] = "";
    size_t           i;
    int              rc;

    sample_topo(&t);

    /* Every member, added in reverse order, hashed tokens and weights. */
    ck_assert_int_eq(brim_ring_init(&direct, SEED, V, NULL), 0);
    for (i = NSAMPLE; i-- > 0;) {
        rc = brim_ring_add_node(&direct, sample_members[i].name,
                                sample_members[i].weight_ppm, errbuf);
        ck_assert_msg(rc == 0, "add: rc=%s (%s)", brim_err_name(rc), errbuf);
    }
    ck_assert_int_eq(brim_topo_ring(&t, &from_topo, 1, errbuf), 0);
    assert_ring_eq(&from_topo, &direct);
    for (i = 0; i < NSAMPLE; i++) { /* ring node i is member i */
        ck_assert_str_eq(from_topo.nodes[i].name, t.members[i].name);
    }
    brim_ring_destroy(&from_topo);

    /* Without the dead member n11. */
    ck_assert_int_eq(brim_ring_remove_node(&direct, "n11"), 0);
    ck_assert_int_eq(brim_topo_ring(&t, &from_topo, 0, errbuf), 0);
    ck_assert_uint_eq(from_topo.nnodes, NSAMPLE - 1);
    assert_ring_eq(&from_topo, &direct);
    brim_ring_destroy(&from_topo);
    brim_ring_destroy(&direct);

    /* A member the ring refuses (a duplicate name) fails cleanly. */
    ck_assert_int_eq(brim_topo_copy(&bad, &t), 0);
    memcpy(bad.members[1].name, "alpha", sizeof("alpha"));
    errbuf[0] = '\0';
    rc = brim_topo_ring(&bad, &from_topo, 1, errbuf);
    ck_assert_msg(rc == BRIM_EINVAL, "rc=%s", brim_err_name(rc));
    ck_assert(errbuf[0] != '\0');
    ck_assert_ptr_null(from_topo.nodes);
    brim_topo_destroy(&bad);
    brim_topo_destroy(&t);
}
END_TEST

START_TEST(topo_copy_independent)
{
    struct brim_topo t, c;
    size_t           before;

    before = brim_alloc_bytes();
    sample_topo(&t);
    ck_assert_int_eq(brim_topo_copy(&c, &t), 0);
    assert_topo_eq(&t, &c);
    ck_assert_ptr_ne(c.members, t.members);
    ck_assert_ptr_ne(c.map.owner, t.map.owner);

    /* Changing or freeing the original leaves the copy as it was. */
    t.members[0].state = BRIM_MEMBER_DEAD;
    t.members[0].addr[0] = 'X';
    t.map.owner[0] = BRIM_NODE_NONE;
    t.map.epoch = 99;
    ck_assert_uint_eq(c.members[0].state, BRIM_MEMBER_UP);
    ck_assert_str_eq(c.members[0].addr, "127.0.0.1:7001");
    ck_assert_uint_ne(c.map.owner[0], BRIM_NODE_NONE);
    ck_assert_uint_eq(c.map.epoch, 7);
    brim_topo_destroy(&t);
    ck_assert_str_eq(c.members[NSAMPLE - 1].name, "n11");
    brim_topo_destroy(&c);
    ck_assert_uint_eq(brim_alloc_bytes(), before);

    /* Out of memory: nothing is left allocated. */
    sample_topo(&t);
    before = brim_alloc_bytes();
    brim_alloc_fail_after(2, 0); /* the members, after the map */
    ck_assert_int_eq(brim_topo_copy(&c, &t), BRIM_ENOMEM);
    brim_alloc_fail_after(0, 0);
    ck_assert_ptr_null(c.map.owner);
    ck_assert_uint_eq(brim_alloc_bytes(), before);
    brim_topo_destroy(&t);
}
END_TEST

START_TEST(topo_find)
{
    struct brim_topo t;
    size_t           i;

    sample_topo(&t);
    for (i = 0; i < NSAMPLE; i++) {
        ck_assert_int_eq(brim_topo_find(&t, sample_members[i].name),
                         (int32_t) i);
    }
    ck_assert_int_eq(brim_topo_find(&t, "n"), -1);
    ck_assert_int_eq(brim_topo_find(&t, "n12"), -1);
    ck_assert_int_eq(brim_topo_find(&t, "zeta"), -1);
    ck_assert_int_eq(brim_topo_find(&t, ""), -1);
    brim_topo_destroy(&t);
}
END_TEST

/* The sample with two departed members: "a0" leaving, "zz" dead. */
static void
sample_departed(struct brim_topo *t)
{
    static const struct brim_member gone[] = {
        {"a0", "127.0.0.1:7010", 1000000, BRIM_MEMBER_LEAVING, 21},
        {"zz", "127.0.0.1:7011", 1000000, BRIM_MEMBER_DEAD, 22},
    };

    sample_topo(t);
    t->departed = brim_malloc(sizeof(gone));
    ck_assert_ptr_nonnull(t->departed);
    memcpy(t->departed, gone, sizeof(gone));
    t->ndeparted = 2;
}

START_TEST(topo_departed)
{
    struct brim_topo          t, back, c;
    const struct brim_member *m;
    msgpack_object            obj, root;
    char                      errbuf[BRIM_ERRBUF_LEN] = "";
    uint32_t                  dead_member;
    int                       rc;

    /* Format 2 carries them through encode, decode and copy. */
    sample_departed(&t);
    obj = encode_unpack(&t);
    ck_assert_uint_eq(obj.via.array.size, 10);
    ck_assert_uint_eq(obj.via.array.ptr[0].via.u64, BRIM_TOPO_FORMAT);
    rc = brim_topo_decode(&obj, &back, errbuf);
    ck_assert_msg(rc == 0, "decode: rc=%s (%s)", brim_err_name(rc), errbuf);
    assert_topo_eq(&t, &back);
    ck_assert_uint_eq(back.ndeparted, 2);
    ck_assert_str_eq(back.departed[0].name, "a0");
    ck_assert_uint_eq(back.departed[1].state, BRIM_MEMBER_DEAD);
    ck_assert_int_eq(brim_topo_copy(&c, &back), 0);
    ck_assert_uint_eq(c.ndeparted, 2);
    ck_assert_str_eq(c.departed[1].name, "zz");

    /* Sources: a live member is itself, a leaver is nmembers + j, the
     * dead (member or departed) and the unknown are no source. */
    ck_assert_int_eq(brim_topo_find_source(&c, "alpha"), 0);
    ck_assert_int_eq(brim_topo_find_source(&c, "a0"), (int32_t) NSAMPLE);
    m = brim_topo_source(&c, NSAMPLE);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(m->addr, "127.0.0.1:7010");
    ck_assert_int_eq(brim_topo_find_source(&c, "zz"), -1);
    dead_member = 5; /* "n11" is DEAD */
    ck_assert_int_eq(brim_topo_find_source(&c, "n11"), -1);
    ck_assert_str_eq(c.members[dead_member].name, "n11");
    ck_assert_int_eq(brim_topo_find_source(&c, "nobody"), -1);
    ck_assert_ptr_null(brim_topo_source(&c, NSAMPLE + 2));
    brim_topo_destroy(&c);
    brim_topo_destroy(&back);

    /* A departed member that is UP, or also a member, is refused; so is
     * format 1 with a tenth field and format 2 without one. */
    root = encode_unpack(&t);
    root.via.array.ptr[9].via.array.ptr[0].via.array.ptr[3].via.u64 =
        BRIM_MEMBER_UP;
    assert_refused(&root, "departed member UP");
    root = encode_unpack(&t);
    set_str(&root.via.array.ptr[9].via.array.ptr[0].via.array.ptr[0], "alpha");
    assert_refused(&root, "departed and member");
    root = encode_unpack(&t);
    root.via.array.ptr[0].via.u64 = BRIM_TOPO_FORMAT_V1;
    assert_refused(&root, "format 1 with 10 fields");
    root = encode_unpack(&t);
    root.via.array.size = 9;
    assert_refused(&root, "format 2 with 9 fields");
    brim_topo_destroy(&t);

    /* Without departed members the encoder writes format 1, 9 fields. */
    sample_topo(&t);
    obj = encode_unpack(&t);
    ck_assert_uint_eq(obj.via.array.size, 9);
    ck_assert_uint_eq(obj.via.array.ptr[0].via.u64, BRIM_TOPO_FORMAT_V1);
    brim_topo_destroy(&t);
}
END_TEST

/* Add the TCase TC holding the one test FN, with the fixture. */
static void
add_case(Suite *s, TCase *tc, const TTest *fn)
{
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, fn);
    suite_add_tcase(s, tc);
}

Suite *
brim_test_suite(void)
{
    Suite *s;

    s = suite_create("topo");
    add_case(s, tcase_create("round_trip"), topo_round_trip);
    add_case(s, tcase_create("encode_appends"), topo_encode_appends);
    add_case(s, tcase_create("refuses_format"), topo_refuses_format);
    add_case(s, tcase_create("refuses_settings"), topo_refuses_settings);
    add_case(s, tcase_create("refuses_names"), topo_refuses_names);
    add_case(s, tcase_create("refuses_owners"), topo_refuses_owners);
    add_case(s, tcase_create("refuses_state"), topo_refuses_state);
    add_case(s, tcase_create("refuses_weight"), topo_refuses_weight);
    add_case(s, tcase_create("ring_equals_direct"), topo_ring_equals_direct);
    add_case(s, tcase_create("copy_independent"), topo_copy_independent);
    add_case(s, tcase_create("find"), topo_find);
    add_case(s, tcase_create("departed"), topo_departed);
    return s;
}
