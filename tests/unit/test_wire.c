/*
 * tests/unit/test_wire.c - proto/wire_*.c and proto/ops.c against
 * proto/PROTOCOL.md: round trips of every op's request and reply, limits,
 * wrong types, the allocation-free check (cases I10 to I12 of
 * shared/cases/inputs.md at the decoder level), nesting depth, and seeded
 * random frames. msgpack_unpack() is wrapped at link time (-Wl,--wrap) so a
 * test can prove msgpack-c never saw a refused body.
 */
#include "tests/support/check_main.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "common/alloc.h"
#include "common/ring.h"
#include "common/rng.h"
#include "proto/buf.h"
#include "proto/frame.h"
#include "proto/ops.h"
#include "proto/topo.h"
#include "proto/wire.h"

/* ---- msgpack_unpack() call counter (linked with --wrap) ---- */

msgpack_unpack_return __real_msgpack_unpack(const char *data, size_t len,
                                            size_t *off, msgpack_zone *zone,
                                            msgpack_object *obj);
msgpack_unpack_return __wrap_msgpack_unpack(const char *data, size_t len,
                                            size_t *off, msgpack_zone *zone,
                                            msgpack_object *obj);

static unsigned long unpack_calls; /* calls into msgpack-c's unpacker */

msgpack_unpack_return
__wrap_msgpack_unpack(const char *data, size_t len, size_t *off,
                      msgpack_zone *zone, msgpack_object *obj)
{
    unpack_calls++;
    return __real_msgpack_unpack(data, len, off, zone, obj);
}

/* ---- fixture: one zone, default limits, an output buffer ---- */

static msgpack_zone            zone;
static struct brim_wire_limits lim;
static struct brim_buf         out;

static void
setup(void)
{
    ck_assert(msgpack_zone_init(&zone, 2048));
    brim_wire_limits_default(&lim);
    lim.max_batch_entries = 16; /* as on a node-to-node connection */
    brim_buf_init(&out);
    unpack_calls = 0;
}

static void
teardown(void)
{
    brim_buf_destroy(&out);
    msgpack_zone_destroy(&zone);
}

/* A literal body: its bytes and length. */
#define BODY(s) (s), (sizeof(s) - 1)

/* The body of the frame at OUT's offset *OFF; advances *OFF past it. */
static const char *
next_body(const struct brim_buf *b, size_t *off, uint32_t *len)
{
    const char *body;
    int         rc;

    rc = brim_frame_peek(b->data + *off, b->len - *off, lim.max_frame_bytes,
                         len);
    ck_assert_msg(rc == 0, "peek rc=%s", brim_err_name(rc));
    body = b->data + *off + BRIM_FRAME_HDR;
    *off += BRIM_FRAME_HDR + *len;
    return body;
}

/* Parse the one frame in OUT as a request. */
static int
parse_out_req(struct brim_req *req)
{
    const char *body;
    uint32_t    len;
    size_t      off;
    char        err[BRIM_ERRBUF_LEN];

    off = 0;
    body = next_body(&out, &off, &len);
    ck_assert_uint_eq(off, out.len);
    return brim_wire_parse_req(body, len, &lim, &zone, req, err);
}

/* Parse the one frame in OUT as the reply to OP. */
static int
parse_out_rep(uint32_t op, struct brim_rep *rep)
{
    const char *body;
    uint32_t    len;
    size_t      off;

    off = 0;
    body = next_body(&out, &off, &len);
    ck_assert_uint_eq(off, out.len);
    return brim_wire_parse_rep(body, len, op, &lim, &zone, rep, NULL);
}

/* True when the byte strings A and B are equal (NULL allowed at length 0). */
static int
same_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* ---- samples ---- */

/* A small array and a small map, standing in for a topology (T) and
 * HEARTBEAT's stats (M) and for the TOPO and OBJECT replies. */
static msgpack_object sample_elems[2] = {
    {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 1},
    {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 300},
};
static msgpack_object sample_arr = {
    .type = MSGPACK_OBJECT_ARRAY,
    .via.array = {2, sample_elems},
};
static msgpack_object_kv sample_kv[1] = {
    {{.type = MSGPACK_OBJECT_STR, .via.str = {4, "keys"}},
     {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 9}},
};
static msgpack_object sample_map = {
    .type = MSGPACK_OBJECT_MAP,
    .via.map = {1, sample_kv},
};
/* Two stream entries (STREAM_BATCH's B). */
static msgpack_object sample_entry_fields[2][5] = {
    {{.type = MSGPACK_OBJECT_BIN, .via.bin = {2, "k1"}},
     {.type = MSGPACK_OBJECT_BIN, .via.bin = {3, "v\0x"}},
     {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 7},
     {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 1ull << 40},
     {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 0}},
    {{.type = MSGPACK_OBJECT_BIN, .via.bin = {2, "k2"}},
     {.type = MSGPACK_OBJECT_BIN, .via.bin = {0, NULL}},
     {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 0},
     {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 9},
     {.type = MSGPACK_OBJECT_POSITIVE_INTEGER, .via.u64 = 3600}},
};
static msgpack_object sample_entries[2] = {
    {.type = MSGPACK_OBJECT_ARRAY, .via.array = {5, sample_entry_fields[0]}},
    {.type = MSGPACK_OBJECT_ARRAY, .via.array = {5, sample_entry_fields[1]}},
};

/* True when the objects A and B (either may be NULL) are equal. */
static int
same_obj(const msgpack_object *a, const msgpack_object *b)
{
    if (a == NULL || b == NULL) {
        return a == b;
    }
    return msgpack_object_equal(*a, *b);
}

/* A request of OP with every argument of its signature set. */
static void
sample_req(uint32_t op, struct brim_req *req)
{
    const struct brim_op_info *info;
    const char                *t;

    info = brim_op_info(op);
    ck_assert_ptr_nonnull(info);
    memset(req, 0, sizeof(*req));
    req->op = op;
    req->request_id = 1000 + op;
    req->epoch = 7;
    for (t = info->sig; *t != '\0'; t++) {
        switch (*t) {
        case 'k':
            req->key = "user:42";
            req->key_len = 7;
            break;
        case 'v':
            req->value = "hello\0world"; /* binary-safe */
            req->value_len = 11;
            break;
        case 't':
            req->ttl_s = 3600;
            break;
        case 'f':
            req->flags = 0xdeadbeefu;
            break;
        case 'c':
            req->cas = 0x0123456789abcdefull;
            break;
        case 'd':
            req->delta = UINT64_MAX - 5;
            break;
        case 'w':
            req->delay_s = 30;
            break;
        case 's':
            req->section = "ops";
            req->section_len = 3;
            break;
        case 'P':
            req->hello.version = BRIM_WIRE_VERSION;
            break;
        case 'C':
            req->hello.cluster_id = 0xfeedface12345678ull;
            break;
        case 'R':
            req->hello.role = BRIM_ROLE_NODE;
            break;
        case 'I':
            req->hello.incarnation = 0xabcdefull;
            break;
        case 'n':
            req->hello.name = "n1";
            req->hello.name_len = 2;
            break;
        case 'N':
            req->name = "node-7";
            req->name_len = 6;
            break;
        case 'a':
            req->addr = "127.0.0.1:7001";
            req->addr_len = 14;
            break;
        case 'W':
            req->weight_ppm = 2000000;
            break;
        case 'E':
            req->arg_epoch = 41;
            break;
        case 'F':
            req->arg_u32 = 1;
            break;
        case 'T':
            req->obj = &sample_arr;
            break;
        case 'M':
            req->obj = &sample_map;
            break;
        case 'p':
            req->partition = 1023;
            break;
        case 'u':
            req->count = 1ull << 33;
            break;
        case 'm':
            req->flush_ms = 1796142702821ull; /* a Unix ms flush mark */
            break;
        case 'r':
            req->term = 1ull << 40; /* an etcd revision */
            break;
        case 'B':
            req->entries = sample_entries;
            req->nentries = 2;
            break;
        case 'x':
            req->auth = "0123456789abcdef0123456789abcde"; /* 32 bytes */
            break;
        default: /* 'K': MGET is tested on its own */
            break;
        }
    }
}

/* Every field of two requests but MGET's keys. */
static void
assert_req_eq(const struct brim_req *a, const struct brim_req *b)
{
    uint32_t i;

    ck_assert_uint_eq(a->op, b->op);
    ck_assert_uint_eq(a->request_id, b->request_id);
    ck_assert_uint_eq(a->epoch, b->epoch);
    ck_assert(same_bytes(a->key, a->key_len, b->key, b->key_len));
    ck_assert(same_bytes(a->value, a->value_len, b->value, b->value_len));
    ck_assert_uint_eq(a->ttl_s, b->ttl_s);
    ck_assert_uint_eq(a->flags, b->flags);
    ck_assert_uint_eq(a->cas, b->cas);
    ck_assert_uint_eq(a->delta, b->delta);
    ck_assert_uint_eq(a->delay_s, b->delay_s);
    ck_assert(
        same_bytes(a->section, a->section_len, b->section, b->section_len));
    ck_assert_uint_eq(a->hello.version, b->hello.version);
    ck_assert_uint_eq(a->hello.role, b->hello.role);
    ck_assert_uint_eq(a->hello.cluster_id, b->hello.cluster_id);
    ck_assert_uint_eq(a->hello.incarnation, b->hello.incarnation);
    ck_assert(same_bytes(a->hello.name, a->hello.name_len, b->hello.name,
                         b->hello.name_len));
    ck_assert(same_bytes(a->name, a->name_len, b->name, b->name_len));
    ck_assert(same_bytes(a->addr, a->addr_len, b->addr, b->addr_len));
    ck_assert_uint_eq(a->weight_ppm, b->weight_ppm);
    ck_assert_uint_eq(a->arg_u32, b->arg_u32);
    ck_assert_uint_eq(a->arg_epoch, b->arg_epoch);
    ck_assert(same_obj(a->obj, b->obj));
    ck_assert_uint_eq(a->partition, b->partition);
    ck_assert_uint_eq(a->count, b->count);
    ck_assert_uint_eq(a->flush_ms, b->flush_ms);
    ck_assert_uint_eq(a->term, b->term);
    ck_assert_uint_eq(a->nentries, b->nentries);
    for (i = 0; i < a->nentries; i++) {
        ck_assert(same_obj(&a->entries[i], &b->entries[i]));
    }
    ck_assert(same_bytes(a->auth, a->auth != NULL ? BRIM_WIRE_AUTH_BYTES : 0,
                         b->auth, b->auth != NULL ? BRIM_WIRE_AUTH_BYTES : 0));
}

/* Every scalar field of two replies. */
static void
assert_rep_eq(const struct brim_rep *a, const struct brim_rep *b)
{
    ck_assert_int_eq(a->status, b->status);
    ck_assert_uint_eq(a->request_id, b->request_id);
    ck_assert(
        same_bytes(a->message, a->message_len, b->message, b->message_len));
    ck_assert(same_bytes(a->value, a->value_len, b->value, b->value_len));
    ck_assert_uint_eq(a->flags, b->flags);
    ck_assert_uint_eq(a->cas, b->cas);
    ck_assert_uint_eq(a->number, b->number);
    ck_assert_uint_eq(a->epoch, b->epoch);
    ck_assert_uint_eq(a->flush_ms, b->flush_ms);
    ck_assert(same_bytes(a->owner, a->owner_len, b->owner, b->owner_len));
    ck_assert_uint_eq(a->hello.version, b->hello.version);
    ck_assert_uint_eq(a->hello.role, b->hello.role);
    ck_assert_uint_eq(a->hello.cluster_id, b->hello.cluster_id);
    ck_assert_uint_eq(a->hello.incarnation, b->hello.incarnation);
    ck_assert(same_bytes(a->hello.name, a->hello.name_len, b->hello.name,
                         b->hello.name_len));
    ck_assert_mem_eq(&a->limits, &b->limits, sizeof(a->limits));
    ck_assert_uint_eq(a->nentries, b->nentries);
    ck_assert_uint_eq(a->lease_ms, b->lease_ms);
    ck_assert_uint_eq(a->term, b->term);
    ck_assert(same_obj(a->obj, b->obj));
    ck_assert(same_bytes(a->auth_nonce, a->auth_nonce != NULL ? 32 : 0,
                         b->auth_nonce, b->auth_nonce != NULL ? 32 : 0));
    ck_assert(same_bytes(a->auth_mac, a->auth_mac != NULL ? 32 : 0, b->auth_mac,
                         b->auth_mac != NULL ? 32 : 0));
}

/* Encode OUT's decoded request again: the bytes must be identical. */
static void
assert_reencodes_req(const struct brim_req *req)
{
    struct brim_buf again;

    brim_buf_init(&again);
    ck_assert_int_eq(brim_wire_encode_req(&again, req), 0);
    ck_assert_uint_eq(again.len, out.len);
    ck_assert_mem_eq(again.data, out.data, out.len);
    brim_buf_destroy(&again);
}

/* As assert_reencodes_req() for a reply to OP. */
static void
assert_reencodes_rep(uint32_t op, const struct brim_rep *rep)
{
    struct brim_buf again;

    brim_buf_init(&again);
    ck_assert_int_eq(brim_wire_encode_rep(&again, op, rep), 0);
    ck_assert_uint_eq(again.len, out.len);
    ck_assert_mem_eq(again.data, out.data, out.len);
    brim_buf_destroy(&again);
}

/* ---- round trips ---- */

START_TEST(wire_req_round_trip_every_op)
{
    struct brim_req req, got;
    uint64_t        op;
    int             rc, n;

    n = 0;
    for (op = 0; op < BRIM_OP_CODE_LIMIT; op++) {
        if (brim_op_info(op) == NULL || op == BRIM_OP_MGET
            || op == BRIM_OP_MGAT) {
            continue;
        }
        sample_req((uint32_t) op, &req);
        out.len = 0;
        ck_assert_int_eq(brim_wire_encode_req(&out, &req), 0);
        rc = parse_out_req(&got);
        ck_assert_msg(rc == 0, "%s: rc=%s", brim_op_name(op),
                      brim_err_name(rc));
        assert_req_eq(&req, &got);
        assert_reencodes_req(&got);
        n++;
    }
    ck_assert_int_eq(n, 36); /* every op of BRIM_OP_MAP but MGET */
}
END_TEST

/* Encode REQ alone into OUT, check that its array holds ELEMENTS
 * elements ([op, id, epoch] and the arguments sent), and parse it back
 * into *GOT. */
static void
req_round_trip(const struct brim_req *req, unsigned elements,
               struct brim_req *got)
{
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_req(&out, req), 0);
    ck_assert_uint_eq((unsigned char) out.data[4], 0x90u + elements);
    ck_assert_int_eq(parse_out_req(got), 0);
}

START_TEST(wire_req_optional_args)
{
    struct brim_req req, got;
    const char     *body;
    uint32_t        len;
    size_t          off;

    /* Absent optional arguments are not sent and decode as zero. */
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_STATS;
    req.request_id = 3;
    ck_assert_int_eq(brim_wire_encode_req(&out, &req), 0);
    off = 0;
    body = next_body(&out, &off, &len);
    ck_assert_uint_eq((unsigned char) body[0], 0x93); /* 3 elements */
    ck_assert_int_eq(parse_out_req(&got), 0);
    ck_assert_uint_eq(got.section_len, 0);

    sample_req(BRIM_OP_HELLO, &req);
    req.hello.name_len = 0;
    req_round_trip(&req, 7, &got); /* 3 + 4 */
    assert_req_eq(&req, &got);

    sample_req(BRIM_OP_FLUSH, &req);
    req.delay_s = 0;
    req.flush_ms = 0;
    req_round_trip(&req, 3, &got);
    ck_assert_uint_eq(got.op, BRIM_OP_FLUSH);

    /* A flush mark without a delay: the zero delay_s before it is sent. */
    req.flush_ms = 1796142702821ull;
    req_round_trip(&req, 5, &got); /* 3 + 2 */
    ck_assert_uint_eq(got.delay_s, 0);
    ck_assert_uint_eq(got.flush_ms, 1796142702821ull);

    /* A stream batch without a stamp (a node never flushed, or an older
     * node) is the three arguments it always was. */
    sample_req(BRIM_OP_STREAM_BATCH, &req);
    req.flush_ms = 0;
    req_round_trip(&req, 6, &got); /* 3 + 3 */
    assert_req_eq(&req, &got);

    /* A file-mode coordinator's commit carries no term (PROTOCOL.md
     * 10.6): the epoch alone, as before terms; an etcd leader's has it. */
    sample_req(BRIM_OP_EPOCH_COMMIT, &req);
    req.term = 0;
    req_round_trip(&req, 4, &got); /* 3 + 1 */
    ck_assert_uint_eq(got.term, 0);
    req.term = 7;
    req_round_trip(&req, 5, &got); /* 3 + 2 */
    ck_assert_uint_eq(got.arg_epoch, 41);
    ck_assert_uint_eq(got.term, 7);
}
END_TEST

START_TEST(wire_mget_round_trip)
{
    static const struct brim_bytes keys[] = {
        {"a", 1},
        {"user:1", 6},
        {"\0\1\2", 3},
    };
    struct brim_req got;
    const char     *k;
    size_t          klen;
    uint32_t        i;

    ck_assert_int_eq(brim_wire_encode_mget(&out, 9, 4, keys, 3), 0);
    ck_assert_int_eq(parse_out_req(&got), 0);
    ck_assert_uint_eq(got.op, BRIM_OP_MGET);
    ck_assert_uint_eq(got.request_id, 9);
    ck_assert_uint_eq(got.epoch, 4);
    ck_assert_uint_eq(got.nkeys, 3);
    for (i = 0; i < 3; i++) {
        brim_wire_req_key(&got, i, &k, &klen);
        ck_assert(same_bytes(k, klen, keys[i].ptr, keys[i].len));
    }
    assert_reencodes_req(&got);
    ck_assert_int_eq(brim_wire_encode_mget(&out, 9, 4, keys, 0), BRIM_EINVAL);
    got.keys = NULL;
    ck_assert_int_eq(brim_wire_encode_req(&out, &got), BRIM_EINVAL);

    /* MGAT: the same keys and GAT's ttl_s (0 too: it means "never"). */
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_mgat(&out, 10, 5, keys, 3, 0), 0);
    ck_assert_uint_eq((unsigned char) out.data[4], 0x95);
    ck_assert_int_eq(parse_out_req(&got), 0);
    ck_assert_uint_eq(got.op, BRIM_OP_MGAT);
    ck_assert_uint_eq(got.nkeys, 3);
    ck_assert_uint_eq(got.ttl_s, 0);
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_mgat(&out, 10, 5, keys, 2, 3600), 0);
    ck_assert_int_eq(parse_out_req(&got), 0);
    ck_assert_uint_eq(got.nkeys, 2);
    ck_assert_uint_eq(got.ttl_s, 3600);
    brim_wire_req_key(&got, 1, &k, &klen);
    ck_assert(same_bytes(k, klen, "user:1", 6));
    assert_reencodes_req(&got);
    ck_assert_int_eq(brim_wire_encode_mgat(&out, 9, 4, keys, 0, 1),
                     BRIM_EINVAL);
}
END_TEST

/* An OK reply of SHAPE with every field it carries set. */
static void
sample_rep(int shape, struct brim_rep *rep)
{
    memset(rep, 0, sizeof(*rep));
    rep->request_id = 4242;
    switch (shape) {
    case BRIM_REP_VALUE:
        rep->value = "v\0v";
        rep->value_len = 3;
        rep->flags = 17;
        rep->cas = UINT64_MAX;
        break;
    case BRIM_REP_CAS:
        rep->cas = 99;
        break;
    case BRIM_REP_NUMBER:
        rep->number = 18446744073709551615ull;
        rep->cas = 100;
        break;
    case BRIM_REP_HELLO:
        rep->hello.version = BRIM_WIRE_VERSION;
        rep->hello.role = BRIM_ROLE_NODE;
        rep->hello.cluster_id = 77;
        rep->hello.incarnation = 0x1234567890ull;
        rep->hello.name = "node-1";
        rep->hello.name_len = 6;
        rep->epoch = 12;
        brim_wire_limits_default(&rep->limits);
        break;
    case BRIM_REP_EPOCH:
        rep->epoch = 13;
        rep->lease_ms = 1500;
        break;
    case BRIM_REP_TOPO:
        rep->obj = &sample_arr;
        break;
    case BRIM_REP_OBJECT:
        rep->obj = &sample_map;
        break;
    case BRIM_REP_AUTH:
        rep->auth_nonce = "0123456789abcdef0123456789abcde"; /* 32 bytes */
        rep->auth_mac = "fedcba9876543210fedcba9876543210";  /* 32 bytes */
        break;
    default:
        break;
    }
}

/* Build OP's OK reply with the builders (MGET, STATS) into OUT. */
static void
build_rep(uint32_t op, int shape)
{
    size_t mark;

    if (shape == BRIM_REP_ENTRIES) {
        ck_assert_int_eq(brim_wire_mget_begin(&out, 4242, 4, &mark), 0);
        ck_assert_int_eq(brim_wire_mget_hit(&out, "val", 3, 5, 6), 0);
        ck_assert_int_eq(brim_wire_mget_miss(&out, BRIM_ENOTFOUND), 0);
        ck_assert_int_eq(brim_wire_mget_miss(&out, BRIM_EMOVED), 0);
        ck_assert_int_eq(brim_wire_mget_hit(&out, NULL, 0, 0, 1), 0);
        ck_assert_int_eq(brim_frame_end(&out, mark), 0);
        return;
    }
    ck_assert_int_eq(brim_wire_stats_begin(&out, 4242, 4, &mark), 0);
    ck_assert_int_eq(brim_wire_stats_u64(&out, "keys", 123), 0);
    ck_assert_int_eq(brim_wire_stats_str(&out, "version", "0.1.0", 5), 0);
    ck_assert_int_eq(brim_wire_stats_f64(&out, "rps", 1.5), 0);
    ck_assert_int_eq(brim_wire_stats_map(&out, "ops", 2), 0);
    ck_assert_int_eq(brim_wire_stats_u64(&out, "get", 10), 0);
    ck_assert_int_eq(brim_wire_stats_u64(&out, "set", 1), 0);
    ck_assert_int_eq(brim_frame_end(&out, mark), 0);
    (void) op;
}

START_TEST(wire_rep_round_trip_every_op)
{
    const struct brim_op_info *info;
    struct brim_rep            rep, got;
    uint64_t                   op;
    int                        rc;

    for (op = 0; op < BRIM_OP_CODE_LIMIT; op++) {
        info = brim_op_info(op);
        if (info == NULL) {
            continue;
        }
        out.len = 0;
        if (info->reply == BRIM_REP_ENTRIES || info->reply == BRIM_REP_STATS) {
            build_rep((uint32_t) op, info->reply);
            memset(&rep, 0, sizeof(rep));
            rep.request_id = 4242;
        } else {
            sample_rep(info->reply, &rep);
            ck_assert_int_eq(brim_wire_encode_rep(&out, (uint32_t) op, &rep),
                             0);
        }
        rc = parse_out_rep((uint32_t) op, &got);
        ck_assert_msg(rc == 0, "%s: rc=%s", info->name, brim_err_name(rc));
        if (info->reply == BRIM_REP_ENTRIES) {
            rep.nentries = 4;
        }
        assert_rep_eq(&rep, &got);
        assert_reencodes_rep((uint32_t) op, &got);
    }
}
END_TEST

START_TEST(wire_rep_mget_entries)
{
    struct brim_rep rep;
    const char     *v;
    size_t          vlen;
    uint32_t        flags;
    uint64_t        cas;

    build_rep(BRIM_OP_MGET, BRIM_REP_ENTRIES);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_MGET, &rep), 0);
    ck_assert_uint_eq(rep.nentries, 4);
    ck_assert_int_eq(brim_wire_rep_entry(&rep, 0, &v, &vlen, &flags, &cas), 0);
    ck_assert(same_bytes(v, vlen, "val", 3));
    ck_assert_uint_eq(flags, 5);
    ck_assert_uint_eq(cas, 6);
    ck_assert_int_eq(brim_wire_rep_entry(&rep, 1, &v, &vlen, &flags, &cas),
                     BRIM_ENOTFOUND);
    ck_assert_int_eq(brim_wire_rep_entry(&rep, 2, &v, &vlen, &flags, &cas),
                     BRIM_EMOVED);
    ck_assert_int_eq(brim_wire_rep_entry(&rep, 3, &v, &vlen, &flags, &cas), 0);
    ck_assert_uint_eq(vlen, 0);
    ck_assert_int_eq(brim_wire_mget_miss(&out, 0), BRIM_EINVAL);
    ck_assert_int_eq(brim_wire_mget_miss(&out, BRIM_ETIMEDOUT), BRIM_EINVAL);
}
END_TEST

START_TEST(wire_rep_stats_map)
{
    struct brim_rep       rep;
    const msgpack_object *m;

    build_rep(BRIM_OP_STATS, BRIM_REP_STATS);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_STATS, &rep), 0);
    m = rep.stats;
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(m->type, MSGPACK_OBJECT_MAP);
    ck_assert_uint_eq(m->via.map.size, 4);
    ck_assert(same_bytes(m->via.map.ptr[0].key.via.str.ptr,
                         m->via.map.ptr[0].key.via.str.size, "keys", 4));
    ck_assert_uint_eq(m->via.map.ptr[0].val.via.u64, 123);
    ck_assert_int_eq(m->via.map.ptr[3].val.type, MSGPACK_OBJECT_MAP);
    ck_assert_uint_eq(m->via.map.ptr[3].val.via.map.ptr[0].val.via.u64, 10);
}
END_TEST

START_TEST(wire_rep_errors)
{
    struct brim_rep rep, got;

    /* MOVED carries the epoch and the owner; RETRY the epoch. */
    memset(&rep, 0, sizeof(rep));
    rep.status = BRIM_EMOVED;
    rep.request_id = 5;
    rep.message = "partition 812 moved";
    rep.message_len = strlen(rep.message);
    rep.epoch = 44;
    rep.owner = "127.0.0.1:7002";
    rep.owner_len = strlen(rep.owner);
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_GET, &rep), 0);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_GET, &got), 0);
    assert_rep_eq(&rep, &got);
    assert_reencodes_rep(BRIM_OP_GET, &got);

    memset(&rep, 0, sizeof(rep));
    rep.status = BRIM_ERETRY;
    rep.request_id = 6;
    rep.epoch = 45;
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_SET, &rep), 0);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_SET, &got), 0);
    assert_rep_eq(&rep, &got);

    /* A plain error: [status, id, message]; NOTFOUND with "". */
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_status(&out, 7, BRIM_ENOTFOUND, NULL, 0),
                     0);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_GET, &got), 0);
    ck_assert_int_eq(got.status, BRIM_ENOTFOUND);
    ck_assert_uint_eq(got.request_id, 7);
    ck_assert_uint_eq(got.message_len, 0);
    out.len = 0;
    ck_assert_int_eq(
        brim_wire_encode_status(&out, 0, BRIM_ETOOBIG, "frame too big", 13), 0);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_PING, &got), 0);
    ck_assert_int_eq(got.status, BRIM_ETOOBIG);
    ck_assert(same_bytes(got.message, got.message_len, "frame too big", 13));
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_status(&out, 8, 0, NULL, 0), 0);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_DEL, &got), 0);
    ck_assert_int_eq(got.status, 0);

    /* Local codes are never sent. */
    ck_assert_int_eq(brim_wire_encode_status(&out, 1, BRIM_EAGAIN, NULL, 0),
                     BRIM_EINVAL);
    ck_assert_int_eq(brim_wire_encode_status(&out, 1, 3, NULL, 0), BRIM_EINVAL);
    rep.status = BRIM_ETIMEDOUT;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_GET, &rep),
                     BRIM_EINVAL);
    rep.status = 0;
    ck_assert_int_eq(brim_wire_encode_rep(&out, 99, &rep), BRIM_EINVAL);
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_STATS, &rep),
                     BRIM_EINVAL); /* no stats object */
}
END_TEST

/* A reply body and how it must decode as the reply to OP. */
struct rep_case {
    const char *body;   /* msgpack bytes */
    size_t      len;    /* bytes */
    uint32_t    op;     /* the request's op */
    int         rc;     /* expected result */
    int         status; /* expected REP.status when rc is 0 */
};

START_TEST(wire_rep_malformed)
{
    static const struct rep_case cases[] = {
        {BODY("\x92\x64\x01"), BRIM_OP_GET, BRIM_EBADREQ, 0}, /* 100 */
        {BODY("\x92\x01\x01"), BRIM_OP_GET, BRIM_EBADREQ, 0}, /* no msg */
        {BODY("\x94\x05\x01\xa0\x03"), BRIM_OP_GET, BRIM_EBADREQ, 0},
        {BODY("\x93\x00\x01\xa1v"), BRIM_OP_GET, BRIM_EBADREQ, 0},
        {BODY("\x93\x4d\x01\xa1x"), BRIM_OP_GET, 0, -77},  /* new */
        {BODY("\x94\x00\x01\x05\x09"), BRIM_OP_SET, 0, 0}, /* extra */
        {BODY("\x93\x00\x01\x91\x00"), BRIM_OP_MGET, BRIM_EBADREQ, 0},
        {BODY("\x93\x00\x01\x91\x80"), BRIM_OP_MGET, BRIM_EBADREQ, 0},
        {BODY("\x93\x00\x01\x91\x91\xa0"), BRIM_OP_MGET, BRIM_EBADREQ, 0},
        {BODY("\x93\x00\x01\x92\xc0\x06"), BRIM_OP_MGET, 0, 0},
        {BODY("\x93\x00\x01\x81\x01\x02"), BRIM_OP_STATS, BRIM_EBADREQ, 0},
        {BODY("\x93\x00\x01\x81\xa1k\x81\xa1j\x81\xa1i\x01"), BRIM_OP_STATS,
         BRIM_EBADREQ, 0}, /* nested too deep */
        {BODY("\x93\x00\x01\x91\x01"), BRIM_OP_STATS, BRIM_EBADREQ, 0},
        {BODY("\x92\x00\xff"), BRIM_OP_PING, BRIM_EBADREQ, 0},
        {BODY("\x91\x00"), BRIM_OP_PING, BRIM_EBADREQ, 0},
        {BODY("\x00"), BRIM_OP_PING, BRIM_EBADREQ, 0},
        {BODY("\x92\x00\x01"), 99, BRIM_EUNKNOWNOP, 0},
        /* HELLO with max_key 0 */
        {BODY("\x9c\x00\x01\x01\x00\x02\x00\x00\xa0\x00\xce\x00\x10\x00\x00"
              "\xce\x00\x11\x00\x00\xcd\x04\x00"),
         BRIM_OP_HELLO, BRIM_EBADREQ, 0},
    };
    struct brim_rep rep;
    size_t          i;
    int             rc;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rc = brim_wire_parse_rep(cases[i].body, cases[i].len, cases[i].op, &lim,
                                 &zone, &rep, NULL);
        ck_assert_msg(rc == cases[i].rc, "case %zu: rc=%s want %s", i,
                      brim_err_name(rc), brim_err_name(cases[i].rc));
        if (rc == 0) {
            ck_assert_int_eq(rep.status, cases[i].status);
        }
    }
    /* A value above the client's limit. */
    lim.max_value_bytes = 2;
    rc = brim_wire_parse_rep(BODY("\x95\x00\x01\xa3xyz\x00\x00"), BRIM_OP_GET,
                             &lim, &zone, &rep, NULL);
    ck_assert_int_eq(rc, BRIM_ETOOBIG);
}
END_TEST

/* GET's and INCR's trailing TTL left (issue 14): sent only when the item
 * expires, read when present, an older five- or four-element reply still
 * whole (TTL 0), and a bad one refused. */
START_TEST(wire_rep_ttl_left)
{
    struct brim_rep rep, got;

    memset(&rep, 0, sizeof(rep));
    rep.request_id = 9;
    rep.value = "abc";
    rep.value_len = 3;
    rep.flags = 7;
    rep.cas = 42;
    rep.ttl_s = 300;
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_GET, &rep), 0);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_GET, &got), 0);
    ck_assert_uint_eq(got.ttl_s, 300);
    ck_assert_uint_eq(got.cas, 42);
    rep.ttl_s = 0; /* never expires: the old shape, byte for byte */
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_GET, &rep), 0);
    ck_assert_uint_eq((uint8_t) out.data[BRIM_FRAME_HDR], 0x95);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_GET, &got), 0);
    ck_assert_uint_eq(got.ttl_s, 0);
    memset(&rep, 0, sizeof(rep));
    rep.number = 11;
    rep.cas = 5;
    rep.ttl_s = 9;
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_INCR, &rep), 0);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_INCR, &got), 0);
    ck_assert_uint_eq(got.number, 11);
    ck_assert_uint_eq(got.ttl_s, 9);
    ck_assert_int_eq(brim_wire_parse_rep(BODY("\x94\x00\x01\x0b\x05"),
                                         BRIM_OP_INCR, &lim, &zone, &got, NULL),
                     0);
    ck_assert_uint_eq(got.ttl_s, 0);
    ck_assert_int_eq(brim_wire_parse_rep(BODY("\x96\x00\x01\xa1v\x00\x00"
                                              "\xa1x"),
                                         BRIM_OP_GET, &lim, &zone, &got, NULL),
                     BRIM_EBADREQ);
}
END_TEST

START_TEST(wire_rep_node_epoch)
{
    struct brim_rep       rep, got;
    msgpack_object        empty;
    const char           *v;
    size_t                vlen, mark;
    uint32_t              flags;
    uint64_t              cas;
    static const uint32_t ops[] = {BRIM_OP_GET,  BRIM_OP_SET,   BRIM_OP_DEL,
                                   BRIM_OP_INCR, BRIM_OP_GAT,   BRIM_OP_TOUCH,
                                   BRIM_OP_CAS,  BRIM_OP_APPEND};
    size_t                i;

    /* Every data op's OK reply ends with the node's epoch. */
    for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        memset(&rep, 0, sizeof(rep));
        rep.request_id = 9;
        rep.value = "abc";
        rep.value_len = 3;
        rep.cas = 42;
        rep.number = 11;
        rep.node_epoch = 77;
        out.len = 0;
        ck_assert_int_eq(brim_wire_encode_rep(&out, ops[i], &rep), 0);
        ck_assert_int_eq(parse_out_rep(ops[i], &got), 0);
        ck_assert_msg(got.node_epoch == 77, "%s: node_epoch %llu",
                      brim_op_name(ops[i]),
                      (unsigned long long) got.node_epoch);
        ck_assert_uint_eq(got.ttl_s, 0); /* the 0 placeholder: never */
    }
    /* GET: [0, id, value, flags, cas, ttl_left 0, epoch]; a reader that
     * predates the epoch reads ttl_left 0, "never expires". */
    memset(&rep, 0, sizeof(rep));
    rep.request_id = 9;
    rep.value = "abc";
    rep.value_len = 3;
    rep.cas = 42;
    rep.node_epoch = 5;
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_GET, &rep), 0);
    ck_assert_uint_eq((uint8_t) out.data[BRIM_FRAME_HDR], 0x97);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_GET, &got), 0);
    ck_assert_uint_eq(got.cas, 42);
    /* An error of a data op carries it too; MOVED's and RETRY's epoch is
     * the node's; a reply of an older node has none. */
    memset(&rep, 0, sizeof(rep));
    rep.status = BRIM_ENOTFOUND;
    rep.request_id = 3;
    rep.node_epoch = 8;
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_GET, &rep), 0);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_GET, &got), 0);
    ck_assert_int_eq(got.status, BRIM_ENOTFOUND);
    ck_assert_uint_eq(got.node_epoch, 8);
    ck_assert_int_eq(brim_wire_parse_rep(BODY("\x95\x05\x01\xa0\x09\xa3"
                                              "a:1"),
                                         BRIM_OP_GET, &lim, &zone, &got, NULL),
                     0);
    ck_assert_uint_eq(got.node_epoch, 9);
    ck_assert_int_eq(brim_wire_parse_rep(BODY("\x95\x00\x01\xa1v\x00\x00"),
                                         BRIM_OP_GET, &lim, &zone, &got, NULL),
                     0);
    ck_assert_uint_eq(got.node_epoch, 0);
    /* What is not an unsigned integer there is ignored, as a newer
     * peer's field would be; other ops never carry one. */
    ck_assert_int_eq(brim_wire_parse_rep(BODY("\x97\x00\x01\xa1v\x00\x00"
                                              "\x00\xa1x"),
                                         BRIM_OP_GET, &lim, &zone, &got, NULL),
                     0);
    ck_assert_uint_eq(got.node_epoch, 0);
    ck_assert_int_eq(brim_wire_parse_rep(BODY("\x93\x00\x01\x07"), BRIM_OP_PING,
                                         &lim, &zone, &got, NULL),
                     0);
    ck_assert_uint_eq(got.node_epoch, 0);
    /* MGET: the builder's epoch after the entries. */
    out.len = 0;
    ck_assert_int_eq(brim_wire_mget_begin_epoch(&out, 4, 2, 12, &mark), 0);
    ck_assert_int_eq(brim_wire_mget_hit(&out, "val", 3, 5, 6), 0);
    ck_assert_int_eq(brim_wire_mget_miss(&out, BRIM_ENOTFOUND), 0);
    ck_assert_int_eq(brim_wire_mget_end(&out, 12, mark), 0);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_MGET, &got), 0);
    ck_assert_uint_eq(got.nentries, 2);
    ck_assert_uint_eq(got.node_epoch, 12);
    ck_assert_int_eq(brim_wire_rep_entry(&got, 0, &v, &vlen, &flags, &cas), 0);
    ck_assert(same_bytes(v, vlen, "val", 3));
    /* A node's MAP_FETCH names its coordinators after the topology. */
    memset(&empty, 0, sizeof(empty));
    empty.type = MSGPACK_OBJECT_ARRAY;
    memset(&rep, 0, sizeof(rep));
    rep.request_id = 6;
    rep.obj = &empty;
    rep.coords = "127.0.0.1:7400,127.0.0.1:7401";
    rep.coords_len = strlen(rep.coords);
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_MAP_FETCH, &rep), 0);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_MAP_FETCH, &got), 0);
    ck_assert(
        same_bytes(got.coords, got.coords_len, rep.coords, rep.coords_len));
    ck_assert_int_eq(brim_wire_parse_rep(BODY("\x93\x00\x01\x90"),
                                         BRIM_OP_MAP_FETCH, &lim, &zone, &got,
                                         NULL),
                     0);
    ck_assert_ptr_null(got.coords);
}
END_TEST

/* ---- limits ---- */

/* Encode a request into OUT (emptied first) and parse it back. */
static int
round_trip(const struct brim_req *req, struct brim_req *got)
{
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_req(&out, req), 0);
    return parse_out_req(got);
}

START_TEST(wire_key_limit)
{
    struct brim_req req, got;
    char            key[BRIM_WIRE_KEY_MAX + 1];

    memset(key, 'k', sizeof(key));
    sample_req(BRIM_OP_GET, &req);
    req.key = key;
    req.key_len = BRIM_WIRE_KEY_MAX;
    ck_assert_int_eq(round_trip(&req, &got), 0);
    ck_assert_uint_eq(got.key_len, 250);
    req.key_len = BRIM_WIRE_KEY_MAX + 1;
    ck_assert_int_eq(round_trip(&req, &got), BRIM_EINVAL);
    ck_assert_uint_eq(got.request_id, req.request_id);
    req.key_len = 0;
    ck_assert_int_eq(round_trip(&req, &got), BRIM_EINVAL);

    /* The limit is the configured one. */
    lim.max_key_bytes = 10;
    req.key_len = 10;
    ck_assert_int_eq(round_trip(&req, &got), 0);
    req.key_len = 11;
    ck_assert_int_eq(round_trip(&req, &got), BRIM_EINVAL);
}
END_TEST

START_TEST(wire_value_limit)
{
    struct brim_req req, got;
    char           *value;
    char            err[BRIM_ERRBUF_LEN];

    value = malloc(BRIM_WIRE_VALUE_MAX + 1);
    ck_assert_ptr_nonnull(value);
    memset(value, 'v', BRIM_WIRE_VALUE_MAX + 1);
    sample_req(BRIM_OP_SET, &req);
    req.value = value;
    req.value_len = BRIM_WIRE_VALUE_MAX;
    ck_assert_int_eq(round_trip(&req, &got), 0);
    ck_assert_uint_eq(got.value_len, BRIM_WIRE_VALUE_MAX);
    ck_assert(got.value > out.data && got.value < out.data + out.len);

    /* One byte over (I10): TOOBIG, and the id survives for the reply. */
    req.value_len = BRIM_WIRE_VALUE_MAX + 1;
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_req(&out, &req), 0);
    ck_assert_uint_le(out.len - 4, lim.max_frame_bytes);
    ck_assert_int_eq(
        brim_wire_parse_req(out.data + 4, out.len - 4, &lim, &zone, &got, err),
        BRIM_ETOOBIG);
    ck_assert_uint_eq(got.request_id, req.request_id);
    ck_assert_str_eq(err,
                     "wire: SET: value is 1048577 bytes, above the node's "
                     "limit 1048576 (--max-value-bytes)");
    free(value);
}
END_TEST

START_TEST(wire_mget_limit)
{
    struct brim_bytes *keys;
    struct brim_req    got;
    uint32_t           i;

    keys = calloc(BRIM_WIRE_MGET_MAX + 1, sizeof(*keys));
    ck_assert_ptr_nonnull(keys);
    for (i = 0; i <= BRIM_WIRE_MGET_MAX; i++) {
        keys[i].ptr = "key";
        keys[i].len = 3;
    }
    ck_assert_int_eq(
        brim_wire_encode_mget(&out, 1, 0, keys, BRIM_WIRE_MGET_MAX), 0);
    ck_assert_int_eq(parse_out_req(&got), 0);
    ck_assert_uint_eq(got.nkeys, BRIM_WIRE_MGET_MAX);
    out.len = 0;
    ck_assert_int_eq(
        brim_wire_encode_mget(&out, 2, 0, keys, BRIM_WIRE_MGET_MAX + 1), 0);
    ck_assert_int_eq(parse_out_req(&got), BRIM_ETOOBIG);
    ck_assert_uint_eq(got.request_id, 2);
    free(keys);
}
END_TEST

START_TEST(wire_limits_check)
{
    struct brim_wire_limits l;
    char                    err[BRIM_ERRBUF_LEN];

    brim_wire_limits_default(&l);
    ck_assert_uint_eq(l.max_key_bytes, 250);
    ck_assert_uint_eq(l.max_value_bytes, 1u << 20);
    ck_assert_uint_eq(l.max_frame_bytes, (1u << 20) + (64u << 10));
    ck_assert_int_eq(brim_wire_limits_check(&l, err), 0);
    l.max_key_bytes = 0;
    ck_assert_int_eq(brim_wire_limits_check(&l, err), BRIM_EINVAL);
    brim_wire_limits_default(&l);
    l.max_value_bytes = 8u << 20; /* frame not raised with it */
    ck_assert_int_eq(brim_wire_limits_check(&l, err), BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "max frame"));
    l.max_frame_bytes = (8u << 20) + (64u << 10);
    ck_assert_int_eq(brim_wire_limits_check(&l, NULL), 0);
    l.max_mget_keys = 0;
    ck_assert_int_eq(brim_wire_limits_check(&l, NULL), BRIM_EINVAL);
}
END_TEST

/* ---- wrong types and unknown ops ---- */

/* A request body and what its decode must give. */
struct req_case {
    const char *body; /* msgpack bytes */
    size_t      len;  /* bytes */
    int         rc;   /* expected result */
    uint64_t    id;   /* expected REQ.request_id */
};

START_TEST(wire_req_types)
{
    static const struct req_case cases[] = {
        {BODY("\x94\x0a\x05\x00\x01"), BRIM_EBADREQ, 5}, /* key int */
        {BODY("\x93\x63\x06\x00"), BRIM_EUNKNOWNOP, 6},  /* op 99 */
        {BODY("\x93\x24\x07\x00"), BRIM_EUNKNOWNOP, 7},  /* EPOCH_ACK */
        {BODY("\x93\x00\x07\x00"), BRIM_EUNKNOWNOP, 7},  /* op 0 */
        {BODY("\x93\xcf\xff\xff\xff\xff\xff\xff\xff\xff\x08\x00"),
         BRIM_EUNKNOWNOP, 8},
        {BODY("\x93\xff\x09\x00"), BRIM_EBADREQ, 9},      /* op < 0 */
        {BODY("\x93\x02\xff\x00"), BRIM_EBADREQ, 0},      /* id < 0 */
        {BODY("\x93\x02\xa1x\x00"), BRIM_EBADREQ, 0},     /* id str */
        {BODY("\x93\x02\x0a\xff"), BRIM_EBADREQ, 10},     /* epoch < 0 */
        {BODY("\x93\x02\x0a\xc0"), BRIM_EBADREQ, 10},     /* epoch nil */
        {BODY("\x94\x02\x0b\x00\x00"), BRIM_EBADREQ, 11}, /* PING + 1 */
        {BODY("\x93\x0a\x0c\x00"), BRIM_EBADREQ, 12},     /* GET, no key */
        {BODY("\x97\x0d\x0d\x00\xa1k\xa1v\xa1x\x00"), BRIM_EBADREQ, 13},
        {BODY("\x97\x0d\x0e\x00\xa1k\xa1v\x00\xcf\x00\x00\x00\x01\x00\x00"
              "\x00\x00"),
         BRIM_EBADREQ, 14}, /* flags 2^32 */
        {BODY("\x97\x0d\x0e\x00\xa1k\xa1v\x00\xd0\x80"), BRIM_EBADREQ, 14},
        {BODY("\x97\x0d\x0e\x00\xa1k\xa1v\xca\x00\x00\x00\x00\x00"),
         BRIM_EBADREQ, 14}, /* ttl float */
        {BODY("\x97\x0d\x0e\x00\xa1k\x01\x00\x00"), BRIM_EBADREQ, 14},
        {BODY("\x97\x0d\x0e\x00\xc4\x01k\xc4\x00\x00\x00"), 0, 14},
        {BODY("\x97\x01\x0f\x00\x01\x00\x00\x00"), BRIM_EINVAL, 15}, /* 0 */
        {BODY("\x97\x01\x0f\x00\x01\x00\x05\x00"), BRIM_EINVAL, 15}, /* 5 */
        {BODY("\x97\x01\x0f\x00\x01\x00\x04\x00"), 0, 15},
        {BODY("\x94\x0b\x10\x00\xa1k"), BRIM_EBADREQ, 16},
        {BODY("\x94\x0b\x11\x00\x90"), BRIM_EINVAL, 17}, /* no keys */
        {BODY("\x94\x0b\x12\x00\x91\x01"), BRIM_EBADREQ, 18},
        {BODY("\x94\x0b\x13\x00\x91\xa0"), BRIM_EINVAL, 19},
        {BODY("\x95\x15\x14\x00\xa1k\xff"), BRIM_EBADREQ, 20}, /* delta */
        {BODY("\x95\x15\x14\x00\xa1k\x01"), 0, 20},
        {BODY("\x94\x0a\x15\x00\xa1k"), 0, 21},  /* str key */
        {BODY("\x81\x01\x02"), BRIM_EBADREQ, 0}, /* a map */
        {BODY("\x92\x02\x01"), BRIM_EBADREQ, 0}, /* 2 elements */
        {BODY("\x2a"), BRIM_EBADREQ, 0},         /* bare int */
        {BODY("\xcd\x01\x00"), BRIM_EBADREQ, 0},
        {BODY("\xc0"), BRIM_EBADREQ, 0},
        {BODY("\x93\x02\x16\x00"), 0, 22}, /* PING */
    };
    struct brim_req req;
    char            err[BRIM_ERRBUF_LEN];
    size_t          i;
    int             rc;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        err[0] = '\0';
        rc = brim_wire_parse_req(cases[i].body, cases[i].len, &lim, &zone, &req,
                                 err);
        ck_assert_msg(rc == cases[i].rc, "case %zu: rc=%s want %s (%s)", i,
                      brim_err_name(rc), brim_err_name(cases[i].rc), err);
        ck_assert_msg(req.request_id == cases[i].id, "case %zu: id %" PRIu64, i,
                      req.request_id);
        if (rc != 0) {
            ck_assert_msg(strncmp(err, "wire: ", 6) == 0, "case %zu: %s", i,
                          err);
        }
    }
}
END_TEST

START_TEST(wire_long_names)
{
    struct brim_req req, got;
    char            name[BRIM_NAME_MAX + 1];

    memset(name, 'n', sizeof(name));
    sample_req(BRIM_OP_HELLO, &req);
    req.hello.name = name;
    req.hello.name_len = BRIM_NAME_MAX;
    ck_assert_int_eq(round_trip(&req, &got), 0);
    req.hello.name_len = BRIM_NAME_MAX + 1;
    ck_assert_int_eq(round_trip(&req, &got), BRIM_EINVAL);
    sample_req(BRIM_OP_STATS, &req);
    req.section = name;
    req.section_len = BRIM_WIRE_SECTION_MAX + 1;
    ck_assert_int_eq(round_trip(&req, &got), BRIM_EINVAL);
}
END_TEST

/* ---- the allocation-free check ---- */

START_TEST(wire_check_valid_objects)
{
    static const struct {
        const char *body;
        size_t      len;
    } ok[] = {
        {BODY("\xc0")},
        {BODY("\x7f")},
        {BODY("\xe0")},
        {BODY("\xcf\x01\x02\x03\x04\x05\x06\x07\x08")},
        {BODY("\xd3\x80\x00\x00\x00\x00\x00\x00\x00")},
        {BODY("\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00")},
        {BODY("\xca\x3f\x80\x00\x00")},
        {BODY("\xa3"
              "abc")},
        {BODY("\xd9\x03"
              "abc")},
        {BODY("\xda\x00\x03"
              "abc")},
        {BODY("\xdb\x00\x00\x00\x03"
              "abc")},
        {BODY("\xc4\x00")},
        {BODY("\xc5\x00\x01"
              "x")},
        {BODY("\xc6\x00\x00\x00\x01"
              "x")},
        {BODY("\xd4\x01\x02")},
        {BODY("\xd8\x01"
              "0123456789abcdef")},
        {BODY("\xc7\x02\x05"
              "ab")},
        {BODY("\xc8\x00\x01\x05"
              "a")},
        {BODY("\xc9\x00\x00\x00\x00\x05")},
        {BODY("\x90")},
        {BODY("\x80")},
        {BODY("\x82\x01\x02\xa1k\x91\xc3")},
        {BODY("\xdc\x00\x02\xc2\xc3")},
        {BODY("\xdd\x00\x00\x00\x01\x00")},
        {BODY("\xde\x00\x01\x00\x00")},
        {BODY("\xdf\x00\x00\x00\x01\x00\x00")},
    };
    msgpack_object obj;
    size_t         i, off;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        ck_assert_msg(
            brim_wire_check(ok[i].body, ok[i].len, BRIM_WIRE_MAX_DEPTH) == 0,
            "case %zu refused", i);
        /* What the check accepts, msgpack-c unpacks whole. */
        off = 0;
        msgpack_zone_clear(&zone);
        ck_assert_int_eq(
            msgpack_unpack(ok[i].body, ok[i].len, &off, &zone, &obj),
            MSGPACK_UNPACK_SUCCESS);
        ck_assert_uint_eq(off, ok[i].len);
        ck_assert_int_eq(
            brim_wire_unpack(ok[i].body, ok[i].len, SIZE_MAX, &zone, &obj), 0);
    }
}
END_TEST

START_TEST(wire_check_huge_counts)
{
    static const struct {
        const char *body;
        size_t      len;
    } bad[] = {
        {BODY("\xdd\xff\xff\xff\xff")}, /* I10: array of 2^32 - 1 */
        {BODY("\xc6\xff\xff\xff\xfe")}, /* I10: bin of 4 GiB */
        {BODY("\xdb\xff\xff\xff\xff")},
        {BODY("\xdf\xff\xff\xff\xff")},
        {BODY("\xde\xff\xff")},
        {BODY("\xdc\xff\xff")},
        {BODY("\xc9\xff\xff\xff\xff\x01")},
        {BODY("\x9f")}, /* 15 elements, none there */
        {BODY("\x92\x01")},
        {BODY("\x81\x01")}, /* map needs 2 per entry */
        {BODY("\xdd\x00\x00\x00\x02\x01")},
        {BODY("\xa5"
              "abcd")},
        {BODY("\xd8\x01"
              "0123456789abcde")},
        {BODY("\xcf\x01")},
        {BODY("\xdd\xff\xff")}, /* count field cut short */
        {BODY("\xc7")},
    };
    struct brim_req req;
    size_t          i, before;

    before = brim_alloc_bytes();
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(
            brim_wire_check(bad[i].body, bad[i].len, BRIM_WIRE_MAX_DEPTH)
                == BRIM_EBADREQ,
            "case %zu accepted", i);
        ck_assert_int_eq(brim_wire_parse_req(bad[i].body, bad[i].len, &lim,
                                             &zone, &req, NULL),
                         BRIM_EBADREQ);
        ck_assert_uint_eq(req.request_id, 0);
    }
    /* Nothing was allocated, and msgpack-c never saw any of them. */
    ck_assert_uint_eq(brim_alloc_bytes(), before);
    ck_assert_uint_eq(unpack_calls, 0);
}
END_TEST

START_TEST(wire_check_malformed)
{
    static const struct {
        const char *body;
        size_t      len;
    } bad[] = {
        {BODY("\xc1")},         /* I12: never used */
        {BODY("\x81\xc1\x00")}, /* I12 */
        {BODY("\x91\xc1")},
        {BODY("\x01\x02")},             /* two objects */
        {BODY("\x93\x02\x01\x00\x00")}, /* trailing byte */
        {"", 0},
    };
    struct brim_req req;
    size_t          i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(
            brim_wire_check(bad[i].body, bad[i].len, BRIM_WIRE_MAX_DEPTH)
                == BRIM_EBADREQ,
            "case %zu accepted", i);
        ck_assert_int_eq(brim_wire_parse_req(bad[i].body, bad[i].len, &lim,
                                             &zone, &req, NULL),
                         BRIM_EBADREQ);
    }
    ck_assert_uint_eq(unpack_calls, 0);
    /* I12: a bare integer passes the check, then fails the decoder. */
    ck_assert_int_eq(brim_wire_check(BODY("\x2a"), BRIM_WIRE_MAX_DEPTH), 0);
    ck_assert_int_eq(brim_wire_parse_req(BODY("\x2a"), &lim, &zone, &req, NULL),
                     BRIM_EBADREQ);
    ck_assert_uint_eq(unpack_calls, 1);
}
END_TEST

/* A body of DEPTH nested one-element arrays around a nil. */
static size_t
nested(char *buf, int depth)
{
    int i;

    for (i = 0; i < depth; i++) {
        buf[i] = (char) 0x91;
    }
    buf[depth] = (char) 0xc0;
    return (size_t) depth + 1;
}

START_TEST(wire_check_depth)
{
    struct brim_req req;
    char            buf[64];
    size_t          n;

    n = nested(buf, BRIM_WIRE_MAX_DEPTH);
    ck_assert_int_eq(brim_wire_check(buf, n, BRIM_WIRE_MAX_DEPTH), 0);
    n = nested(buf, BRIM_WIRE_MAX_DEPTH + 1);
    ck_assert_int_eq(brim_wire_check(buf, n, BRIM_WIRE_MAX_DEPTH),
                     BRIM_EBADREQ);
    ck_assert_int_eq(brim_wire_check(buf, n, BRIM_WIRE_MAX_DEPTH + 1), 0);
    ck_assert_int_eq(brim_wire_check(BODY("\x91\xc0"), 0), BRIM_EBADREQ);
    ck_assert_int_eq(brim_wire_check(BODY("\xc0"), 0), 0);
    /* Larger limits stop at the ceiling. */
    n = nested(buf, BRIM_WIRE_DEPTH_CEILING);
    ck_assert_int_eq(brim_wire_check(buf, n, 1000), 0);
    n = nested(buf, BRIM_WIRE_DEPTH_CEILING + 1);
    ck_assert_int_eq(brim_wire_check(buf, n, 1000), BRIM_EBADREQ);
    /* Maps count too. */
    ck_assert_int_eq(brim_wire_check(BODY("\x81\x01\x81\x01\x91\xc0"), 2),
                     BRIM_EBADREQ);
    /* A request with a deep argument never reaches msgpack-c. */
    memcpy(buf, "\x94\x0a\x01\x00", 4);
    n = 4 + nested(buf + 4, BRIM_WIRE_MAX_DEPTH);
    ck_assert_int_eq(brim_wire_parse_req(buf, n, &lim, &zone, &req, NULL),
                     BRIM_EBADREQ);
    ck_assert_uint_eq(unpack_calls, 0);
}
END_TEST

START_TEST(wire_check_object_budget)
{
    struct brim_req req;
    char           *buf;
    size_t          n, budget;

    /* A request may hold an MGET's keys and little more: an array of
     * nils above that is refused before msgpack-c would allocate 24 bytes
     * for each of them. */
    budget = brim_wire_req_max_objects(&lim);
    ck_assert_uint_eq(budget, 16 + BRIM_WIRE_MGET_MAX);
    n = 100000;
    buf = malloc(n + 5);
    ck_assert_ptr_nonnull(buf);
    memcpy(buf, "\xdd\x00\x01\x86\xa0", 5); /* array of 100000 */
    memset(buf + 5, 0xc0, n);
    ck_assert_int_eq(brim_wire_check(buf, n + 5, BRIM_WIRE_MAX_DEPTH), 0);
    ck_assert_int_eq(
        brim_wire_check_objects(buf, n + 5, BRIM_WIRE_MAX_DEPTH, n + 1), 0);
    ck_assert_int_eq(
        brim_wire_check_objects(buf, n + 5, BRIM_WIRE_MAX_DEPTH, n),
        BRIM_EBADREQ);
    ck_assert_int_eq(brim_wire_parse_req(buf, n + 5, &lim, &zone, &req, NULL),
                     BRIM_EBADREQ);
    ck_assert_uint_eq(unpack_calls, 0);
    free(buf);
}
END_TEST

/* ---- I11 at the decoder level ---- */

START_TEST(wire_stream_split_and_joined)
{
    static const uint32_t ops[] = {BRIM_OP_GET, BRIM_OP_SET, BRIM_OP_DEL};
    struct brim_buf       in;
    struct brim_req       req;
    const char           *body;
    uint32_t              len;
    size_t                off, i, whole;
    int                   rc;

    /* Three requests in one buffer come out whole and in order. */
    for (i = 0; i < 3; i++) {
        sample_req(ops[i], &req);
        req.request_id = i + 1;
        ck_assert_int_eq(brim_wire_encode_req(&out, &req), 0);
    }
    off = 0;
    for (i = 0; i < 3; i++) {
        body = next_body(&out, &off, &len);
        ck_assert_int_eq(
            brim_wire_parse_req(body, len, &lim, &zone, &req, NULL), 0);
        ck_assert_uint_eq(req.op, ops[i]);
        ck_assert_uint_eq(req.request_id, i + 1);
    }
    ck_assert_uint_eq(off, out.len);

    /* The first frame fed one byte at a time: AGAIN until it is whole. */
    brim_buf_init(&in);
    whole = BRIM_FRAME_HDR + brim_frame_get_hdr(out.data);
    for (i = 0; i < whole; i++) {
        rc = brim_frame_peek(in.data, in.len, lim.max_frame_bytes, &len);
        ck_assert_msg(rc == BRIM_EAGAIN, "byte %zu: rc=%s", i,
                      brim_err_name(rc));
        ck_assert_int_eq(brim_buf_append(&in, out.data + i, 1), 0);
    }
    ck_assert_int_eq(
        brim_frame_peek(in.data, in.len, lim.max_frame_bytes, &len), 0);
    ck_assert_int_eq(brim_wire_parse_req(in.data + BRIM_FRAME_HDR, len, &lim,
                                         &zone, &req, NULL),
                     0);
    ck_assert_uint_eq(req.op, BRIM_OP_GET);

    /* Split right after the header; then the rest arrives. */
    in.len = 0;
    ck_assert_int_eq(brim_buf_append(&in, out.data, BRIM_FRAME_HDR), 0);
    ck_assert_int_eq(
        brim_frame_peek(in.data, in.len, lim.max_frame_bytes, &len),
        BRIM_EAGAIN);
    ck_assert_int_eq(
        brim_buf_append(&in, out.data + BRIM_FRAME_HDR, whole - BRIM_FRAME_HDR),
        0);
    ck_assert_int_eq(
        brim_frame_peek(in.data, in.len, lim.max_frame_bytes, &len), 0);
    brim_buf_destroy(&in);
}
END_TEST

/* ---- seeded random frames (I12) ---- */

/* A random body into BUF (room for 256 bytes); its length. */
static size_t
random_body(struct brim_rng *rng, char *buf)
{
    static const unsigned char heads[] = {
        0x90, 0x93, 0x94, 0x97, 0x9f, 0xdc, 0xdd, 0x80, 0x81, 0xde, 0xdf,
        0xc4, 0xc5, 0xc6, 0xd9, 0xda, 0xdb, 0xc7, 0xc8, 0xc9, 0xc1, 0xcf,
    };
    struct brim_req req;
    size_t          n, i, k;

    if (brim_rng_below(rng, 2) == 0) {
        /* Noise, often starting like a container or a blob. */
        n = 1 + brim_rng_below(rng, 64);
        for (i = 0; i < n; i++) {
            buf[i] = (char) brim_rng_next(rng);
        }
        if (brim_rng_below(rng, 2) == 0) {
            buf[0] = (char) heads[brim_rng_below(rng, sizeof(heads))];
        }
        return n;
    }
    /* A valid request of a random op, then a few mutations. */
    do {
        req.op = (uint32_t) brim_rng_below(rng, 24);
    } while (brim_op_info(req.op) == NULL || req.op == BRIM_OP_MGET);
    sample_req(req.op, &req);
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_req(&out, &req), 0);
    n = out.len - BRIM_FRAME_HDR;
    memcpy(buf, out.data + BRIM_FRAME_HDR, n);
    k = 1 + brim_rng_below(rng, 3);
    for (i = 0; i < k; i++) {
        switch (brim_rng_below(rng, 3)) {
        case 0:
            buf[brim_rng_below(rng, n)] = (char) brim_rng_next(rng);
            break;
        case 1:
            n = n > 1 ? 1 + brim_rng_below(rng, n - 1) : n; /* truncate */
            break;
        default:
            buf[n++] = (char) brim_rng_next(rng); /* append */
            break;
        }
    }
    return n;
}

START_TEST(wire_random_frames)
{
    struct brim_rng rng;
    struct brim_req req;
    struct brim_rep rep;
    uint64_t        seed;
    char            buf[256];
    size_t          n, before;
    uint32_t        op;
    int             i, rc, accepted;

    seed = 20260501;
    brim_rng_seed(&rng, seed);
    /* OUT holds the valid requests that get mutated: grow it first. */
    ck_assert_int_eq(brim_buf_reserve(&out, 4096), 0);
    before = brim_alloc_bytes();
    accepted = 0;
    for (i = 0; i < 1000; i++) {
        n = random_body(&rng, buf);
        rc = brim_wire_parse_req(buf, n, &lim, &zone, &req, NULL);
        ck_assert_msg(rc == 0 || rc == BRIM_EBADREQ || rc == BRIM_EUNKNOWNOP
                          || rc == BRIM_ETOOBIG || rc == BRIM_EINVAL,
                      "seed %" PRIu64 " frame %d: rc=%s", seed, i,
                      brim_err_name(rc));
        accepted += rc == 0;
        op = (uint32_t) brim_rng_below(&rng, 24);
        if (brim_op_info(op) != NULL) {
            rc = brim_wire_parse_rep(buf, n, op, &lim, &zone, &rep, NULL);
            ck_assert_msg(rc == 0 || rc == BRIM_EBADREQ || rc == BRIM_ETOOBIG,
                          "seed %" PRIu64 " frame %d as reply: rc=%s", seed, i,
                          brim_err_name(rc));
        }
    }
    /* The decoders allocate nothing through brim_malloc. */
    ck_assert_uint_eq(brim_alloc_bytes(), before);
    ck_assert_msg(accepted > 0 && accepted < 1000, "accepted %d", accepted);
}
END_TEST

/* ---- allocation failures ---- */

START_TEST(wire_encode_nomem)
{
    struct brim_bytes keys[100];
    struct brim_req   req;
    struct brim_rep   rep;
    size_t            mark;
    uint64_t          n;
    int               rc, ok;
    char              key[50];

    sample_req(BRIM_OP_GET, &req);
    brim_alloc_fail_after(1, 1);
    ck_assert_int_eq(brim_wire_encode_req(&out, &req), BRIM_ENOMEM);
    sample_rep(BRIM_REP_VALUE, &rep);
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_GET, &rep),
                     BRIM_ENOMEM);
    ck_assert_int_eq(brim_wire_mget_begin(&out, 1, 1, &mark), BRIM_ENOMEM);
    ck_assert_int_eq(brim_wire_stats_begin(&out, 1, 1, &mark), BRIM_ENOMEM);
    brim_alloc_fail_after(0, 0);
    ck_assert_uint_eq(out.len, 0);

    /* Failing at any of the growth steps leaves OUT as it was. */
    memset(key, 'k', sizeof(key));
    for (n = 0; n < 100; n++) {
        keys[n].ptr = key;
        keys[n].len = sizeof(key);
    }
    ok = 0;
    for (n = 1; n < 20; n++) {
        brim_buf_destroy(&out);
        ck_assert_int_eq(brim_buf_append(&out, "x", 1), 0);
        brim_alloc_fail_after(n, 1);
        rc = brim_wire_encode_mget(&out, 1, 0, keys, 100);
        brim_alloc_fail_after(0, 0);
        if (rc == 0) {
            ok++;
            continue;
        }
        ck_assert_int_eq(rc, BRIM_ENOMEM);
        ck_assert_uint_eq(out.len, 1);
    }
    ck_assert_int_gt(ok, 0);
}
END_TEST

/* ---- the op table ---- */

START_TEST(wire_op_table)
{
    const struct brim_op_info *info;
    uint64_t                   op;
    int                        n;

    n = 0;
    for (op = 0; op < BRIM_OP_CODE_LIMIT + 10; op++) {
        info = brim_op_info(op);
        if (info == NULL) {
            continue;
        }
        n++;
        ck_assert_uint_eq(info->code, op);
        ck_assert_str_eq(brim_op_name(op), info->name);
        ck_assert_uint_eq(strlen(info->sig), info->max_args);
        /* A key op names its key argument, and only key ops do. */
        if (info->flags & BRIM_OPF_KEY) {
            ck_assert_int_ge(info->key_arg, 0);
            ck_assert_int_eq(info->sig[info->key_arg], 'k');
            ck_assert(info->flags & BRIM_OPF_DATA);
        } else {
            ck_assert_int_eq(info->key_arg, -1);
        }
    }
    ck_assert_int_eq(n, 38);
    ck_assert_str_eq(brim_op_name(BRIM_OP_JOIN), "JOIN");
    ck_assert_str_eq(brim_op_name(BRIM_OP_STREAM_BATCH), "STREAM_BATCH");
    ck_assert_ptr_nonnull(brim_op_info(BRIM_OP_JOIN));
    ck_assert_ptr_nonnull(brim_op_info(BRIM_OP_STREAM_BATCH));
    ck_assert_str_eq(brim_op_name(BRIM_OP_PROGRESS), "PROGRESS");
    ck_assert_ptr_null(brim_op_info(BRIM_OP_PROGRESS));
    ck_assert(!(brim_op_info(BRIM_OP_FORWARD_GET)->flags & BRIM_OPF_DATA));
    ck_assert_str_eq(brim_op_name(BRIM_OP_EPOCH_ACK), "EPOCH_ACK");
    ck_assert_str_eq(brim_op_name(0), "UNKNOWN");
    ck_assert_str_eq(brim_op_name(UINT64_MAX), "UNKNOWN");
    ck_assert(brim_op_info(BRIM_OP_GET)->flags & BRIM_OPF_IDEMPOTENT);
    ck_assert(!(brim_op_info(BRIM_OP_INCR)->flags & BRIM_OPF_IDEMPOTENT));
    ck_assert(brim_op_info(BRIM_OP_FLUSH)->flags & BRIM_OPF_ADMIN);
}
END_TEST

/* ---- membership ops (PROTOCOL.md section 10) ---- */

/* A topology of NM members "m0".. over 256 partitions, owner[p] = p % NM. */
static void
member_topo(struct brim_topo *t, uint32_t nm, uint64_t epoch)
{
    uint32_t i;

    ck_assert_int_eq(brim_topo_init(t, 99, 5, 256, 16, 50000, epoch), 0);
    t->members = brim_calloc(nm, sizeof(*t->members));
    ck_assert_ptr_nonnull(t->members);
    t->nmembers = nm;
    for (i = 0; i < nm; i++) {
        snprintf(t->members[i].name, sizeof(t->members[i].name), "m%04u", i);
        snprintf(t->members[i].addr, sizeof(t->members[i].addr), "127.0.0.1:%u",
                 7000 + i);
        t->members[i].weight_ppm = BRIM_WEIGHT_PPM_ONE;
        t->members[i].state = BRIM_MEMBER_UP;
        t->members[i].incarnation = 1000 + i;
    }
    for (i = 0; i < 256; i++) {
        t->map.owner[i] = (uint16_t) (i % nm);
    }
}

START_TEST(wire_membership_topology)
{
    struct brim_topo t, back;
    struct brim_req  req, got;
    struct brim_rep  rep, grep;
    char             err[BRIM_ERRBUF_LEN] = "";

    /* EPOCH_PROPOSE carries a real topology from a struct brim_topo; the
     * receiver decodes it with brim_topo_decode(). */
    member_topo(&t, 3, 8);
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_EPOCH_PROPOSE;
    req.request_id = 5;
    req.epoch = 7;
    req.topo = &t;
    ck_assert_int_eq(brim_wire_encode_req(&out, &req), 0);
    ck_assert_int_eq(parse_out_req(&got), 0);
    ck_assert_ptr_nonnull(got.obj);
    ck_assert_int_eq(brim_topo_decode(got.obj, &back, err), 0);
    ck_assert_uint_eq(back.map.epoch, 8);
    ck_assert_uint_eq(back.nmembers, 3);
    ck_assert_str_eq(back.members[2].addr, "127.0.0.1:7002");
    ck_assert_mem_eq(back.map.owner, t.map.owner, 256 * 2);
    brim_topo_destroy(&back);
    assert_reencodes_req(&got);

    /* A T argument is required: no topo and no object is EINVAL. */
    req.topo = NULL;
    ck_assert_int_eq(brim_wire_encode_req(&out, &req), BRIM_EINVAL);

    /* JOIN's and MAP_FETCH's reply, TOPO, from a struct brim_topo. */
    memset(&rep, 0, sizeof(rep));
    rep.request_id = 6;
    rep.topo = &t;
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_MAP_FETCH, &rep), 0);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_MAP_FETCH, &grep), 0);
    ck_assert_uint_eq(grep.request_id, 6);
    ck_assert_int_eq(brim_topo_decode(grep.obj, &back, err), 0);
    ck_assert_uint_eq(back.nmembers, 3);
    brim_topo_destroy(&back);
    rep.topo = NULL;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_JOIN, &rep),
                     BRIM_EINVAL);
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_MEMBERS, &rep),
                     BRIM_EINVAL);
    brim_topo_destroy(&t);
}
END_TEST

START_TEST(wire_membership_budget)
{
    struct brim_topo t;
    struct brim_req  req, got;

    /* A topology of 200 members is above the default object budget of a
     * request; a connection from the coordinator raises max_members. */
    member_topo(&t, 200, 3);
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_EPOCH_PROPOSE;
    req.topo = &t;
    ck_assert_int_eq(brim_wire_encode_req(&out, &req), 0);
    lim.max_mget_keys = 16;
    ck_assert_int_eq(parse_out_req(&got), BRIM_EBADREQ);
    lim.max_members = 200;
    ck_assert_uint_eq(brim_wire_req_max_objects(&lim),
                      16 + BRIM_WIRE_TOPO_OBJECTS(200));
    ck_assert_int_eq(parse_out_req(&got), 0);
    ck_assert_int_eq(brim_wire_limits_check(&lim, NULL), 0);
    lim.max_members = BRIM_NODES_MAX + 1;
    ck_assert_int_eq(brim_wire_limits_check(&lim, NULL), BRIM_EINVAL);
    brim_topo_destroy(&t);
}
END_TEST

START_TEST(wire_membership_args)
{
    static const struct {
        const char *body;
        size_t      len;
        int         rc;
    } cases[] = {
        /* JOIN "n" "a" 1 2: fine */
        {BODY("\x97\x20\x01\x00\xa1n\xa1"
              "a\x01\x02"),
         0},
        /* JOIN with an addr of 64 bytes */
        {BODY("\x97\x20\x01\x00\xa1n\xd9\x40"
              "0123456789012345678901234567890123456789012345678901234567890123"
              "\x01\x02"),
         BRIM_EINVAL},
        /* JOIN missing its incarnation */
        {BODY("\x96\x20\x01\x00\xa1n\xa1"
              "a\x01"),
         BRIM_EBADREQ},
        /* EPOCH_PROPOSE of a map, not an array */
        {BODY("\x94\x23\x01\x00\x80"), BRIM_EBADREQ},
        /* HEARTBEAT with stats that are not a map */
        {BODY("\x96\x22\x01\x00\xa1n\x02\x90"), BRIM_EBADREQ},
        /* HEARTBEAT without stats */
        {BODY("\x95\x22\x01\x00\xa1n\x02"), 0},
        /* EPOCH_COMMIT with a negative epoch */
        {BODY("\x94\x25\x01\x00\xff"), BRIM_EBADREQ},
        /* PLAN leave, no weight */
        {BODY("\x95\x2b\x01\x00\x02\xa1n"), 0},
    };
    struct brim_req req;
    size_t          i;
    int             rc;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rc = brim_wire_parse_req(cases[i].body, cases[i].len, &lim, &zone, &req,
                                 NULL);
        ck_assert_msg(rc == cases[i].rc, "case %zu: rc=%s", i,
                      brim_err_name(rc));
    }
    /* HEARTBEAT's reply: epoch and lease. */
    {
        struct brim_rep rep, got;

        memset(&rep, 0, sizeof(rep));
        rep.request_id = 9;
        rep.epoch = 4;
        rep.lease_ms = 1500;
        ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_HEARTBEAT, &rep),
                         0);
        ck_assert_int_eq(parse_out_rep(BRIM_OP_HEARTBEAT, &got), 0);
        ck_assert_uint_eq(got.epoch, 4);
        ck_assert_uint_eq(got.lease_ms, 1500);
        ck_assert_uint_eq(got.flush_ms, 0);
        /* With the cluster's flush mark, trailing; then an etcd
         * leader's term after the mark: a zero mark is sent before it,
         * so the term keeps its place. */
        static const struct {
            uint64_t flush_ms, term;
            unsigned elements;
        } tails[] = {{1796142702821ull, 0, 5}, {0, 1ull << 33, 6}};

        for (i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
            rep.flush_ms = tails[i].flush_ms;
            rep.term = tails[i].term;
            out.len = 0;
            ck_assert_int_eq(
                brim_wire_encode_rep(&out, BRIM_OP_HEARTBEAT, &rep), 0);
            ck_assert_uint_eq((unsigned char) out.data[4],
                              0x90u + tails[i].elements);
            ck_assert_int_eq(parse_out_rep(BRIM_OP_HEARTBEAT, &got), 0);
            ck_assert_uint_eq(got.epoch, 4);
            ck_assert_uint_eq(got.lease_ms, 1500);
            ck_assert_uint_eq(got.flush_ms, tails[i].flush_ms);
            ck_assert_uint_eq(got.term, tails[i].term);
        }
        /* And JOIN's: the topology, then the mark. */
        memset(&rep, 0, sizeof(rep));
        rep.request_id = 10;
        rep.obj = &sample_arr;
        rep.flush_ms = 42;
        out.len = 0;
        ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_JOIN, &rep), 0);
        ck_assert_uint_eq((unsigned char) out.data[4], 0x94);
        ck_assert_int_eq(parse_out_rep(BRIM_OP_JOIN, &got), 0);
        ck_assert_ptr_nonnull(got.obj);
        ck_assert_uint_eq(got.flush_ms, 42);
    }
}
END_TEST

/* ---- migration ops (PROTOCOL.md section 11) ---- */

START_TEST(wire_stream_args)
{
    static const struct {
        const char *body;
        size_t      len;
        int         rc;
    } cases[] = {
        /* STREAM_BEGIN e=3 p=5 */
        {BODY("\x95\x40\x01\x00\x03\x05"), 0},
        /* STREAM_BEGIN with a partition above 2^32 */
        {BODY("\x95\x40\x01\x00\x03\xcf\x00\x00\x00\x01\x00\x00"
              "\x00\x00"),
         BRIM_EBADREQ},
        /* STREAM_BATCH of no entries */
        {BODY("\x96\x41\x01\x00\x03\x05\x90"), 0},
        /* STREAM_BATCH of one good entry */
        {BODY("\x96\x41\x01\x00\x03\x05\x91\x95\xa1k\xa1v\x00\x01"
              "\x00"),
         0},
        /* an entry of 4 fields */
        {BODY("\x96\x41\x01\x00\x03\x05\x91\x94\xa1k\xa1v\x00\x01"),
         BRIM_EBADREQ},
        /* an entry with an empty key */
        {BODY("\x96\x41\x01\x00\x03\x05\x91\x95\xa0\xa1v\x00\x01"
              "\x00"),
         BRIM_EINVAL},
        /* entries not an array */
        {BODY("\x96\x41\x01\x00\x03\x05\x80"), BRIM_EBADREQ},
        /* STREAM_END without its count */
        {BODY("\x95\x42\x01\x00\x03\x05"), BRIM_EBADREQ},
        /* FORWARD_GET e p key */
        {BODY("\x96\x44\x01\x00\x03\x05\xa1k"), 0},
        /* PULL with an empty key */
        {BODY("\x96\x45\x01\x00\x03\x05\xa0"), BRIM_EINVAL},
        /* PROGRESS is still reserved */
        {BODY("\x93\x46\x01\x00"), BRIM_EUNKNOWNOP},
    };
    struct brim_req        req;
    struct brim_rep        rep;
    struct brim_wire_entry e, back;
    char                   raw[64];
    size_t                 i;
    int                    rc;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rc = brim_wire_parse_req(cases[i].body, cases[i].len, &lim, &zone, &req,
                                 NULL);
        ck_assert_msg(rc == cases[i].rc, "case %zu: rc=%s", i,
                      brim_err_name(rc));
    }
    /* Over max_batch_entries: TOOBIG. */
    lim.max_batch_entries = 0;
    ck_assert_int_eq(brim_wire_parse_req(cases[3].body, cases[3].len, &lim,
                                         &zone, &req, NULL),
                     BRIM_ETOOBIG);
    lim.max_batch_entries = 16;
    /* A batch from pre-packed entries, as the sender builds it. */
    memset(&e, 0, sizeof(e));
    e.key = "user:1";
    e.key_len = 6;
    e.value = "abc";
    e.value_len = 3;
    e.flags = 5;
    e.cas = 77;
    e.ttl_s = 60;
    ck_assert_int_eq(brim_wire_entry_pack(&out, &e), 0);
    ck_assert_uint_lt(out.len, sizeof(raw));
    memcpy(raw, out.data, out.len);
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_STREAM_BATCH;
    req.request_id = 4;
    req.arg_epoch = 9;
    req.partition = 2;
    req.entries_raw = raw;
    req.entries_raw_len = out.len;
    req.nentries = 1;
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_req(&out, &req), 0);
    ck_assert_int_eq(parse_out_req(&req), 0);
    ck_assert_uint_eq(req.nentries, 1);
    ck_assert_uint_eq(req.partition, 2);
    brim_wire_req_entry(&req, 0, &back);
    ck_assert(same_bytes(back.key, back.key_len, e.key, e.key_len));
    ck_assert(same_bytes(back.value, back.value_len, e.value, e.value_len));
    ck_assert_uint_eq(back.flags, 5);
    ck_assert_uint_eq(back.cas, 77);
    ck_assert_uint_eq(back.ttl_s, 60);
    /* PULL's reply carries one entry. */
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_entry_rep(&out, 11, &e), 0);
    ck_assert_int_eq(parse_out_rep(BRIM_OP_PULL, &rep), 0);
    ck_assert_uint_eq(rep.request_id, 11);
    ck_assert_ptr_nonnull(rep.obj);
    ck_assert_int_eq(brim_wire_entry_decode(rep.obj, &lim, &back), 0);
    ck_assert_uint_eq(back.cas, 77);
    ck_assert_uint_eq(back.ttl_s, 60);
    /* The node-connection budget covers a full batch. */
    lim.max_batch_entries = BRIM_WIRE_BATCH_LIMIT;
    ck_assert_uint_eq(brim_wire_req_max_objects(&lim),
                      16 + BRIM_WIRE_ENTRY_OBJECTS * BRIM_WIRE_BATCH_LIMIT);
    ck_assert_int_eq(brim_wire_limits_check(&lim, NULL), 0);
    lim.max_batch_entries = BRIM_WIRE_BATCH_LIMIT + 1;
    ck_assert_int_eq(brim_wire_limits_check(&lim, NULL), BRIM_EINVAL);
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

    s = suite_create("wire");
    add_case(s, tcase_create("req_round_trip_every_op"),
             wire_req_round_trip_every_op);
    add_case(s, tcase_create("req_optional_args"), wire_req_optional_args);
    add_case(s, tcase_create("membership_topology"), wire_membership_topology);
    add_case(s, tcase_create("membership_budget"), wire_membership_budget);
    add_case(s, tcase_create("membership_args"), wire_membership_args);
    add_case(s, tcase_create("mget_round_trip"), wire_mget_round_trip);
    add_case(s, tcase_create("rep_round_trip_every_op"),
             wire_rep_round_trip_every_op);
    add_case(s, tcase_create("rep_mget_entries"), wire_rep_mget_entries);
    add_case(s, tcase_create("rep_stats_map"), wire_rep_stats_map);
    add_case(s, tcase_create("rep_errors"), wire_rep_errors);
    add_case(s, tcase_create("rep_malformed"), wire_rep_malformed);
    add_case(s, tcase_create("rep_ttl_left"), wire_rep_ttl_left);
    add_case(s, tcase_create("rep_node_epoch"), wire_rep_node_epoch);
    add_case(s, tcase_create("key_limit"), wire_key_limit);
    add_case(s, tcase_create("value_limit"), wire_value_limit);
    add_case(s, tcase_create("mget_limit"), wire_mget_limit);
    add_case(s, tcase_create("limits_check"), wire_limits_check);
    add_case(s, tcase_create("req_types"), wire_req_types);
    add_case(s, tcase_create("long_names"), wire_long_names);
    add_case(s, tcase_create("check_valid_objects"), wire_check_valid_objects);
    add_case(s, tcase_create("check_huge_counts"), wire_check_huge_counts);
    add_case(s, tcase_create("stream_args"), wire_stream_args);
    add_case(s, tcase_create("check_malformed"), wire_check_malformed);
    add_case(s, tcase_create("check_depth"), wire_check_depth);
    add_case(s, tcase_create("check_object_budget"), wire_check_object_budget);
    add_case(s, tcase_create("stream_split_and_joined"),
             wire_stream_split_and_joined);
    add_case(s, tcase_create("random_frames"), wire_random_frames);
    add_case(s, tcase_create("encode_nomem"), wire_encode_nomem);
    add_case(s, tcase_create("op_table"), wire_op_table);
    return s;
}
