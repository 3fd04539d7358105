/*
 * tests/fuzz/fuzz_wire.c - libFuzzer target for proto/: the input is a byte
 * stream as a socket delivers it, cut into frames by brim_frame_peek(); each
 * body goes through the allocation-free check, the request decoder and the
 * reply decoder of every op. Beyond "no crash, no leak, no sanitizer
 * report" it asserts that (1) whatever the check accepts msgpack-c unpacks
 * whole, (2) every result is one the contract allows, and (3) a decoded
 * message encodes and decodes back to the same fields. Built with libFuzzer
 * under -DBRIM_FUZZ=ON (clang); replay_main.c runs the corpus without it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "proto/buf.h"
#include "proto/frame.h"
#include "proto/ops.h"
#include "proto/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fail the run: an invariant of the contract broke. */
#define FUZZ_CHECK(x)                                                          \
    do {                                                                       \
        if (!(x)) {                                                            \
            fprintf(stderr, "fuzz_wire: %s:%d: %s\n", __FILE__, __LINE__, #x); \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* State of one input: small limits, so that the limit paths are reached. */
struct fuzz {
    struct brim_wire_limits lim;  /* key 16, value 64, frame 2048, mget 8 */
    msgpack_zone            z1;   /* the first decode */
    msgpack_zone            z2;   /* the decode of the re-encoding */
    struct brim_buf         out;  /* encodings */
    struct brim_buf         out2; /* second encodings */
};

static int
same(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* The body of the one frame in B. */
static const char *
fuzz_body_of(const struct brim_buf *b, uint32_t *len)
{
    FUZZ_CHECK(brim_frame_peek(b->data, b->len, UINT32_MAX, len) == 0);
    FUZZ_CHECK(BRIM_FRAME_HDR + (size_t) *len == b->len);
    return b->data + BRIM_FRAME_HDR;
}

/* (1): the check and msgpack-c agree on what is one whole object. */
static void
fuzz_check(struct fuzz *f, const char *body, size_t len)
{
    msgpack_object obj;
    size_t         off;

    if (brim_wire_check(body, len, BRIM_WIRE_MAX_DEPTH) != 0) {
        return;
    }
    msgpack_zone_clear(&f->z1);
    off = 0;
    FUZZ_CHECK(msgpack_unpack(body, len, &off, &f->z1, &obj)
               == MSGPACK_UNPACK_SUCCESS);
    FUZZ_CHECK(off == len);
}

static void
fuzz_req_eq(const struct brim_req *a, const struct brim_req *b)
{
    const char *ka, *kb;
    size_t      la, lb;
    uint32_t    i;

    FUZZ_CHECK(a->op == b->op && a->request_id == b->request_id);
    FUZZ_CHECK(a->epoch == b->epoch && a->ttl_s == b->ttl_s);
    FUZZ_CHECK(a->flags == b->flags && a->cas == b->cas);
    FUZZ_CHECK(a->delta == b->delta && a->delay_s == b->delay_s);
    FUZZ_CHECK(same(a->key, a->key_len, b->key, b->key_len));
    FUZZ_CHECK(same(a->value, a->value_len, b->value, b->value_len));
    FUZZ_CHECK(same(a->section, a->section_len, b->section, b->section_len));
    FUZZ_CHECK(a->hello.version == b->hello.version);
    FUZZ_CHECK(a->hello.role == b->hello.role);
    FUZZ_CHECK(a->hello.cluster_id == b->hello.cluster_id);
    FUZZ_CHECK(a->hello.incarnation == b->hello.incarnation);
    FUZZ_CHECK(same(a->hello.name, a->hello.name_len, b->hello.name,
                    b->hello.name_len));
    FUZZ_CHECK(a->nkeys == b->nkeys);
    for (i = 0; i < a->nkeys; i++) {
        brim_wire_req_key(a, i, &ka, &la);
        brim_wire_req_key(b, i, &kb, &lb);
        FUZZ_CHECK(same(ka, la, kb, lb));
    }
}

/* (2) and (3) for the body read as a request. */
static void
fuzz_req(struct fuzz *f, const char *body, size_t len)
{
    struct brim_req req, again;
    const char     *b2;
    uint32_t        len2;
    int             rc;

    rc = brim_wire_parse_req(body, len, &f->lim, &f->z1, &req, NULL);
    FUZZ_CHECK(rc == 0 || rc == BRIM_EBADREQ || rc == BRIM_EUNKNOWNOP
               || rc == BRIM_ETOOBIG || rc == BRIM_EINVAL);
    if (rc != 0) {
        return;
    }
    f->out.len = 0;
    FUZZ_CHECK(brim_wire_encode_req(&f->out, &req) == 0);
    b2 = fuzz_body_of(&f->out, &len2);
    FUZZ_CHECK(brim_wire_parse_req(b2, len2, &f->lim, &f->z2, &again, NULL)
               == 0);
    fuzz_req_eq(&req, &again);
    /* A canonical encoding is a fixed point. */
    f->out2.len = 0;
    FUZZ_CHECK(brim_wire_encode_req(&f->out2, &again) == 0);
    FUZZ_CHECK(same(f->out.data, f->out.len, f->out2.data, f->out2.len));
}

static void
fuzz_rep_eq(const struct brim_rep *a, const struct brim_rep *b)
{
    const char *va, *vb;
    size_t      la, lb;
    uint32_t    fa, fb, i;
    uint64_t    ca, cb;
    int         ra, rb;

    FUZZ_CHECK(a->status == b->status && a->request_id == b->request_id);
    FUZZ_CHECK(same(a->message, a->message_len, b->message, b->message_len));
    FUZZ_CHECK(same(a->value, a->value_len, b->value, b->value_len));
    FUZZ_CHECK(a->flags == b->flags && a->cas == b->cas);
    FUZZ_CHECK(a->number == b->number && a->epoch == b->epoch);
    FUZZ_CHECK(same(a->owner, a->owner_len, b->owner, b->owner_len));
    FUZZ_CHECK(memcmp(&a->limits, &b->limits, sizeof(a->limits)) == 0);
    FUZZ_CHECK(a->hello.cluster_id == b->hello.cluster_id);
    FUZZ_CHECK(a->nentries == b->nentries);
    for (i = 0; i < a->nentries; i++) {
        ra = brim_wire_rep_entry(a, i, &va, &la, &fa, &ca);
        rb = brim_wire_rep_entry(b, i, &vb, &lb, &fb, &cb);
        FUZZ_CHECK(ra == rb);
        FUZZ_CHECK(ra != 0 || (same(va, la, vb, lb) && fa == fb && ca == cb));
    }
    FUZZ_CHECK((a->stats == NULL) == (b->stats == NULL));
}

/* (2) and (3) for the body read as the reply to OP. */
static void
fuzz_rep(struct fuzz *f, const char *body, size_t len, uint32_t op)
{
    struct brim_rep rep, again;
    const char     *b2;
    uint32_t        len2;
    int             rc;

    rc = brim_wire_parse_rep(body, len, op, &f->lim, &f->z1, &rep, NULL);
    FUZZ_CHECK(rc == 0 || rc == BRIM_EBADREQ || rc == BRIM_ETOOBIG);
    if (rc != 0) {
        return;
    }
    f->out.len = 0;
    FUZZ_CHECK(brim_wire_encode_rep(&f->out, op, &rep) == 0);
    b2 = fuzz_body_of(&f->out, &len2);
    FUZZ_CHECK(brim_wire_parse_rep(b2, len2, op, &f->lim, &f->z2, &again, NULL)
               == 0);
    fuzz_rep_eq(&rep, &again);
}

static void
fuzz_body(struct fuzz *f, const char *body, size_t len)
{
    uint32_t op;

    fuzz_check(f, body, len);
    fuzz_req(f, body, len);
    for (op = 0; op < BRIM_OP_CODE_LIMIT; op++) {
        if (brim_op_info(op) != NULL) {
            fuzz_rep(f, body, len, op);
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz f;
    uint32_t    len;
    size_t      off;
    int         rc;

    /* Every limit set, the ones not named here to 0 (off), as on a
     * client connection: an uninitialised one made the check fail. */
    memset(&f.lim, 0, sizeof(f.lim));
    f.lim.max_key_bytes = 16;
    f.lim.max_value_bytes = 64;
    f.lim.max_frame_bytes = 2048;
    f.lim.max_mget_keys = 8;
    FUZZ_CHECK(brim_wire_limits_check(&f.lim, NULL) == 0);
    FUZZ_CHECK(msgpack_zone_init(&f.z1, 1024));
    FUZZ_CHECK(msgpack_zone_init(&f.z2, 1024));
    brim_buf_init(&f.out);
    brim_buf_init(&f.out2);

    /* Cut the stream into frames as a connection does; a too-big header
     * or an incomplete frame ends it. */
    off = 0;
    for (;;) {
        rc = brim_frame_peek(data + off, size - off, f.lim.max_frame_bytes,
                             &len);
        FUZZ_CHECK(rc == 0 || rc == BRIM_EAGAIN || rc == BRIM_ETOOBIG);
        if (rc != 0) {
            break;
        }
        off += BRIM_FRAME_HDR;
        fuzz_body(&f, (const char *) data + off, len);
        off += len;
    }

    brim_buf_destroy(&f.out2);
    brim_buf_destroy(&f.out);
    msgpack_zone_destroy(&f.z2);
    msgpack_zone_destroy(&f.z1);
    return 0;
}
