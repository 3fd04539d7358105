/*
 * client/bench/proto_brim.c - brim's own protocol for brim-bench: frames
 * of proto/frame.h holding the msgpack messages of proto/wire.h, encoded
 * with brim_wire_encode_req() and matched to their requests by
 * brim_link_parse() (client/net/link.h: the one reply matcher libbrim uses
 * too), which checks every frame before msgpack-c allocates
 * (proto/PROTOCOL.md). A connection's HELLO and AUTH are its link's; the
 * node's limits from that HELLO come in through set_limits. HELLO itself
 * can still be encoded and parsed here, so that the adapter is complete
 * and tested on its own.
 */
#include "client/bench/proto.h"

#include <string.h>

#include <msgpack.h>

#include <brim/status.h>

#include "client/net/link.h"
#include "common/alloc.h"
#include "proto/ops.h"
#include "proto/wire.h"

/* First chunk of the per-connection msgpack zone, bytes. */
#define BRIM_ZONE_CHUNK 4096

/* Per-connection state: the zone replies unpack into, the node's limits. */
struct bench_brim {
    msgpack_zone            zone; /* reused: cleared by each parse */
    struct brim_wire_limits lim;  /* defaults until HELLO's reply */
};

static int
brim_open(void **ctx)
{
    struct bench_brim *b;

    b = brim_malloc(sizeof(*b));
    if (b == NULL) {
        return BRIM_ENOMEM;
    }
    if (!msgpack_zone_init(&b->zone, BRIM_ZONE_CHUNK)) {
        brim_free(b);
        return BRIM_ENOMEM;
    }
    brim_wire_limits_default(&b->lim);
    *ctx = b;
    return 0;
}

static void
brim_close(void *ctx)
{
    struct bench_brim *b = ctx;

    if (b != NULL) {
        msgpack_zone_destroy(&b->zone);
        brim_free(b);
    }
}

/* The opcode brim-bench sends for a request of KIND. */
static uint32_t
brim_op_of(uint8_t kind)
{
    switch (kind) {
    case BRIM_BENCH_GET:
        return BRIM_OP_GET;
    case BRIM_BENCH_SET:
        return BRIM_OP_SET;
    case BRIM_BENCH_DEL:
        return BRIM_OP_DEL;
    case BRIM_BENCH_HELLO:
        return BRIM_OP_HELLO;
    case BRIM_BENCH_STATS:
        return BRIM_OP_STATS;
    default:
        return BRIM_OP_NONE;
    }
}

static int
brim_encode(struct brim_buf *out, void *ctx, const struct brim_bench_req *req,
            const char *key, size_t key_len, const char *value,
            size_t value_len)
{
    static const char name[] = "brim-bench";
    struct brim_req   r;

    (void) ctx;
    memset(&r, 0, sizeof(r));
    r.op = brim_op_of(req->kind);
    r.request_id = req->id;
    r.epoch = req->epoch;
    switch (req->kind) {
    case BRIM_BENCH_SET:
        r.value = value;
        r.value_len = value_len;
        r.ttl_s = req->ttl_s;
        /* fall through */
    case BRIM_BENCH_GET:
    case BRIM_BENCH_DEL:
        r.key = key;
        r.key_len = key_len;
        break;
    case BRIM_BENCH_HELLO:
        r.hello.version = BRIM_WIRE_VERSION;
        r.hello.role = BRIM_ROLE_CLIENT;
        r.hello.name = name;
        r.hello.name_len = sizeof(name) - 1;
        break;
    case BRIM_BENCH_STATS:
        break;
    default:
        return BRIM_EINVAL;
    }
    return brim_wire_encode_req(out, &r) == 0 ? 0 : BRIM_ENOMEM;
}

/* The "evictions" counter at the top level of a STATS map, or -1. */
static int64_t
brim_evictions(const msgpack_object *map)
{
    const msgpack_object_kv *kv;
    uint32_t                 i;

    if (map == NULL || map->type != MSGPACK_OBJECT_MAP) {
        return -1;
    }
    for (i = 0; i < map->via.map.size; i++) {
        kv = &map->via.map.ptr[i];
        if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == 9
            && memcmp(kv->key.via.str.ptr, "evictions", 9) == 0
            && kv->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER
            && kv->val.via.u64 <= INT64_MAX)
        {
            return (int64_t) kv->val.via.u64;
        }
    }
    return -1;
}

static long
brim_parse(void *ctx, const char *buf, size_t len,
           const struct brim_bench_req *req, struct brim_bench_rep *rep)
{
    struct bench_brim *b = ctx;
    struct brim_rep    r;
    long               n;

    memset(rep, 0, sizeof(*rep));
    rep->evictions = -1;
    /* Id 0 in an error reply means "unknown" (PROTOCOL.md section 3):
     * the node refused the frame from its header (TOOBIG) or could not
     * unpack it (NOMEM, BADREQ). The matcher gives it to REQ all the same:
     * the status and message reach the user, and a close that follows is
     * seen as such, not as a reply out of step. */
    n = brim_link_parse(&b->lim, &b->zone, brim_op_of(req->kind), req->id, buf,
                        len, &r, NULL);
    if (n <= 0) {
        return n; /* 0: not whole yet; BRIM_EBADREPLY */
    }
    rep->status = r.status;
    rep->message = r.message;
    rep->message_len = r.message_len;
    rep->epoch = r.epoch;
    rep->node_epoch = r.node_epoch;
    if (r.status == 0) {
        switch (req->kind) {
        case BRIM_BENCH_GET:
            rep->value = r.value;
            rep->value_len = r.value_len;
            break;
        case BRIM_BENCH_HELLO:
            b->lim = r.limits; /* checked by the decoder */
            rep->max_key_bytes = r.limits.max_key_bytes;
            rep->max_value_bytes = r.limits.max_value_bytes;
            break;
        case BRIM_BENCH_STATS:
            rep->evictions = brim_evictions(r.stats);
            break;
        default:
            break;
        }
    }
    return n;
}

static void
brim_set_limits(void *ctx, const struct brim_wire_limits *lim)
{
    struct bench_brim *b = ctx;

    b->lim = *lim;
}

const struct brim_bench_proto brim_bench_proto_brim = {
    .name = "brim",
    .has_hello = 1,
    .default_port = 11311, /* brim-node's --listen default */
    .open = brim_open,
    .close = brim_close,
    .encode = brim_encode,
    .parse = brim_parse,
    .set_limits = brim_set_limits,
};
