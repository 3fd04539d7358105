/*
 * proto/wire_req.c - requests, [op, request_id, epoch, args...]: typed
 * decoding with every argument checked against its op's signature in
 * BRIM_OP_MAP (proto/ops.h) and the limits, and encoding from the same
 * signature, so the two directions cannot drift apart.
 */
#include "proto/wire.h"

#include <inttypes.h>
#include <string.h>

#include "common/defs.h"
#include "common/ring.h" /* BRIM_NAME_MAX */
#include "proto/frame.h"
#include "proto/topo.h"
#include "proto/wire_int.h"

/* The name of an argument type letter, for messages. */
static const char *
req_arg_name(char t)
{
    switch (t) {
    case 'k':
        return "key";
    case 'v':
        return "value";
    case 't':
        return "ttl_s";
    case 'f':
        return "flags";
    case 'c':
        return "cas";
    case 'd':
        return "delta";
    case 'w':
        return "delay_s";
    case 'K':
        return "keys";
    case 's':
        return "section";
    case 'P':
        return "version";
    case 'C':
        return "cluster_id";
    case 'R':
        return "role";
    case 'I':
        return "incarnation";
    case 'a':
        return "addr";
    case 'W':
        return "weight_ppm";
    case 'E':
        return "epoch";
    case 'F':
        return "force or kind";
    case 'T':
        return "topology";
    case 'M':
        return "stats";
    case 'p':
        return "partition";
    case 'u':
        return "count";
    case 'm':
        return "flush_ms";
    case 'r':
        return "term";
    case 'B':
        return "entries";
    case 'x':
        return "nonce or mac";
    default:
        return "name";
    }
}

/* A key: bytes of 1 .. max_key_bytes. */
static int
req_key(const msgpack_object *o, const struct brim_wire_limits *lim,
        const char **key, size_t *key_len, const char *op, char *errbuf)
{
    const char *p;
    size_t      n;

    if (!wire_get_bytes(o, &p, &n)) {
        brim_errfmt(errbuf, "wire: %s: key must be bin or str", op);
        return BRIM_EBADREQ;
    }
    if (n == 0 || n > lim->max_key_bytes) {
        brim_errfmt(errbuf, "wire: %s: key is %zu bytes, allowed 1 .. %" PRIu32,
                    op, n, lim->max_key_bytes);
        return BRIM_EINVAL;
    }
    *key = p;
    *key_len = n;
    return 0;
}

/* MGET's key list: an array of 1 .. max_mget_keys keys. */
static int
req_keys(struct brim_req *req, const msgpack_object *o,
         const struct brim_wire_limits *lim, char *errbuf)
{
    const char *p;
    size_t      n;
    uint32_t    i;
    int         rc;

    if (o->type != MSGPACK_OBJECT_ARRAY) {
        brim_errfmt(errbuf, "wire: MGET: keys must be an array");
        return BRIM_EBADREQ;
    }
    if (o->via.array.size == 0) {
        brim_errfmt(errbuf, "wire: MGET: no keys");
        return BRIM_EINVAL;
    }
    if (o->via.array.size > lim->max_mget_keys) {
        brim_errfmt(errbuf, "wire: MGET: %" PRIu32 " keys, max %" PRIu32,
                    o->via.array.size, lim->max_mget_keys);
        return BRIM_ETOOBIG;
    }
    for (i = 0; i < o->via.array.size; i++) {
        rc = req_key(&o->via.array.ptr[i], lim, &p, &n, "MGET", errbuf);
        if (rc != 0) {
            return rc;
        }
    }
    req->keys = o->via.array.ptr;
    req->nkeys = o->via.array.size;
    return 0;
}

int
brim_wire_entry_decode(const msgpack_object          *o,
                       const struct brim_wire_limits *lim,
                       struct brim_wire_entry        *e)
{
    const msgpack_object *a;

    memset(e, 0, sizeof(*e));
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 5) {
        return BRIM_EBADREQ;
    }
    a = o->via.array.ptr;
    if (!wire_get_bytes(&a[0], &e->key, &e->key_len)
        || !wire_get_bytes(&a[1], &e->value, &e->value_len)
        || !wire_get_u32(&a[2], &e->flags) || !wire_get_u64(&a[3], &e->cas)
        || !wire_get_u32(&a[4], &e->ttl_s))
    {
        return BRIM_EBADREQ;
    }
    if (e->key_len == 0 || e->key_len > lim->max_key_bytes) {
        return BRIM_EINVAL;
    }
    if (e->value_len > lim->max_value_bytes) {
        return BRIM_ETOOBIG;
    }
    return 0;
}

void
brim_wire_req_entry(const struct brim_req *req, uint32_t i,
                    struct brim_wire_entry *e)
{
    static const struct brim_wire_limits any = {.max_key_bytes = UINT32_MAX,
                                                .max_value_bytes = UINT32_MAX};
    int                                  rc;

    BRIM_ASSERT(req->entries != NULL && i < req->nentries);
    rc = brim_wire_entry_decode(&req->entries[i], &any, e);
    BRIM_ASSERT(rc == 0); /* the decoder checked every entry */
    (void) rc;
}

/* STREAM_BATCH's entries: an array of 0 .. max_batch_entries entries. */
static int
req_entries(struct brim_req *req, const msgpack_object *o,
            const struct brim_wire_limits *lim, const char *op, char *errbuf)
{
    struct brim_wire_entry e;
    uint32_t               i;
    int                    rc;

    if (o->type != MSGPACK_OBJECT_ARRAY) {
        brim_errfmt(errbuf, "wire: %s: entries must be an array", op);
        return BRIM_EBADREQ;
    }
    if (o->via.array.size > lim->max_batch_entries) {
        brim_errfmt(errbuf, "wire: %s: %" PRIu32 " entries, max %" PRIu32, op,
                    o->via.array.size, lim->max_batch_entries);
        return BRIM_ETOOBIG;
    }
    for (i = 0; i < o->via.array.size; i++) {
        rc = brim_wire_entry_decode(&o->via.array.ptr[i], lim, &e);
        if (rc != 0) {
            brim_errfmt(errbuf,
                        "wire: %s: entry %" PRIu32 " is not [key, "
                        "value, flags, cas, ttl] within the limits",
                        op, i);
            return rc;
        }
    }
    req->entries = o->via.array.size > 0 ? o->via.array.ptr : NULL;
    req->nentries = o->via.array.size;
    return 0;
}

/* Bytes of at most MAX (a section or a name) into *P, *N. */
static int
req_short_bytes(const msgpack_object *o, size_t max, const char **p, size_t *n,
                char t, const char *op, char *errbuf)
{
    if (!wire_get_bytes(o, p, n)) {
        brim_errfmt(errbuf, "wire: %s: %s must be str or bin", op,
                    req_arg_name(t));
        return BRIM_EBADREQ;
    }
    if (*n > max) {
        brim_errfmt(errbuf, "wire: %s: %s is %zu bytes, max %zu", op,
                    req_arg_name(t), *n, max);
        return BRIM_EINVAL;
    }
    return 0;
}

/* The integer argument of type T into its field; 0 or -1 (wrong type). */
static int
req_int(struct brim_req *req, char t, const msgpack_object *o)
{
    int ok;

    switch (t) {
    case 't':
        ok = wire_get_u32(o, &req->ttl_s);
        break;
    case 'f':
        ok = wire_get_u32(o, &req->flags);
        break;
    case 'w':
        ok = wire_get_u32(o, &req->delay_s);
        break;
    case 'P':
        ok = wire_get_u32(o, &req->hello.version);
        break;
    case 'R':
        ok = wire_get_u32(o, &req->hello.role);
        break;
    case 'c':
        ok = wire_get_u64(o, &req->cas);
        break;
    case 'd':
        ok = wire_get_u64(o, &req->delta);
        break;
    case 'C':
        ok = wire_get_u64(o, &req->hello.cluster_id);
        break;
    case 'W':
        ok = wire_get_u32(o, &req->weight_ppm);
        break;
    case 'F':
        ok = wire_get_u32(o, &req->arg_u32);
        break;
    case 'E':
        ok = wire_get_u64(o, &req->arg_epoch);
        break;
    case 'p':
        ok = wire_get_u32(o, &req->partition);
        break;
    case 'u':
        ok = wire_get_u64(o, &req->count);
        break;
    case 'm':
        ok = wire_get_u64(o, &req->flush_ms);
        break;
    case 'r':
        ok = wire_get_u64(o, &req->term);
        break;
    default: /* 'I' */
        ok = wire_get_u64(o, &req->hello.incarnation);
        break;
    }
    return ok ? 0 : -1;
}

/* Argument O of type T of op OP into REQ. */
static int
req_arg(struct brim_req *req, char t, const msgpack_object *o,
        const struct brim_wire_limits *lim, const char *op, char *errbuf)
{
    size_t n;

    switch (t) {
    case 'k':
        return req_key(o, lim, &req->key, &req->key_len, op, errbuf);
    case 'K':
        return req_keys(req, o, lim, errbuf);
    case 'B':
        return req_entries(req, o, lim, op, errbuf);
    case 'x':
        if (!wire_get_bytes(o, &req->auth, &n) || n != BRIM_WIRE_AUTH_BYTES) {
            brim_errfmt(errbuf, "wire: %s: %s must be bin of %d bytes", op,
                        req_arg_name(t), BRIM_WIRE_AUTH_BYTES);
            req->auth = NULL;
            return BRIM_EBADREQ;
        }
        return 0;
    case 'v':
        if (!wire_get_bytes(o, &req->value, &req->value_len)) {
            brim_errfmt(errbuf, "wire: %s: value must be bin or str", op);
            return BRIM_EBADREQ;
        }
        if (req->value_len > lim->max_value_bytes) {
            brim_errfmt(errbuf,
                        "wire: %s: value is %zu bytes, above the "
                        "node's limit %" PRIu32 " (--max-value-bytes)",
                        op, req->value_len, lim->max_value_bytes);
            return BRIM_ETOOBIG;
        }
        return 0;
    case 's':
        return req_short_bytes(o, BRIM_WIRE_SECTION_MAX, &req->section,
                               &req->section_len, t, op, errbuf);
    case 'n':
        return req_short_bytes(o, BRIM_NAME_MAX, &req->hello.name,
                               &req->hello.name_len, t, op, errbuf);
    case 'N':
        return req_short_bytes(o, BRIM_NAME_MAX, &req->name, &req->name_len, t,
                               op, errbuf);
    case 'a':
        return req_short_bytes(o, BRIM_ADDR_MAX, &req->addr, &req->addr_len, t,
                               op, errbuf);
    case 'T':
    case 'M':
        if (o->type != (t == 'T' ? MSGPACK_OBJECT_ARRAY : MSGPACK_OBJECT_MAP)) {
            brim_errfmt(errbuf, "wire: %s: %s must be %s", op, req_arg_name(t),
                        t == 'T' ? "an array" : "a map");
            return BRIM_EBADREQ;
        }
        req->obj = o;
        return 0;
    default:
        break;
    }
    if (req_int(req, t, o) != 0) {
        brim_errfmt(errbuf, "wire: %s: %s must be an unsigned %d-bit integer",
                    op, req_arg_name(t),
                    strchr("tfwPRWFp", t) != NULL ? 32 : 64);
        return BRIM_EBADREQ;
    }
    if (t == 'R'
        && (req->hello.role < BRIM_ROLE_MIN || req->hello.role > BRIM_ROLE_MAX))
    {
        brim_errfmt(errbuf, "wire: %s: role %" PRIu32 " is not 1 .. %d", op,
                    req->hello.role, BRIM_ROLE_MAX);
        return BRIM_EINVAL;
    }
    return 0;
}

/* The op and the header fields; *INFO on success. */
static int
req_header(struct brim_req *req, const msgpack_object *a, uint32_t n,
           const struct brim_op_info **info, char *errbuf)
{
    uint64_t op;

    /* The id first, so that every later error can be answered with it. */
    if (!wire_get_u64(&a[1], &req->request_id)) {
        brim_errfmt(errbuf, "wire: request_id must be an unsigned integer");
        return BRIM_EBADREQ;
    }
    if (!wire_get_u64(&a[0], &op)) {
        brim_errfmt(errbuf, "wire: op must be an unsigned integer");
        return BRIM_EBADREQ;
    }
    *info = brim_op_info(op);
    if (*info == NULL) {
        req->op = op <= UINT32_MAX ? (uint32_t) op : BRIM_OP_NONE;
        brim_errfmt(errbuf, "wire: unknown op %" PRIu64 " (%s)", op,
                    brim_op_name(op));
        return BRIM_EUNKNOWNOP;
    }
    req->op = (*info)->code;
    if (!wire_get_u64(&a[2], &req->epoch)) {
        brim_errfmt(errbuf, "wire: %s: epoch must be an unsigned integer",
                    (*info)->name);
        return BRIM_EBADREQ;
    }
    if (n - 3 < (*info)->min_args || n - 3 > (*info)->max_args) {
        brim_errfmt(errbuf, "wire: %s takes %d to %d arguments, got %" PRIu32,
                    (*info)->name, (*info)->min_args, (*info)->max_args, n - 3);
        return BRIM_EBADREQ;
    }
    return 0;
}

int
brim_wire_decode_req(const msgpack_object          *obj,
                     const struct brim_wire_limits *lim, struct brim_req *req,
                     char errbuf[BRIM_ERRBUF_LEN])
{
    const struct brim_op_info *info;
    const msgpack_object      *a;
    uint32_t                   n, i;
    int                        rc;

    memset(req, 0, sizeof(*req));
    if (obj->type != MSGPACK_OBJECT_ARRAY || obj->via.array.size < 3) {
        brim_errfmt(errbuf,
                    "wire: a request is an array "
                    "[op, request_id, epoch, args...]");
        return BRIM_EBADREQ;
    }
    a = obj->via.array.ptr;
    n = obj->via.array.size;
    rc = req_header(req, a, n, &info, errbuf);
    if (rc != 0) {
        return rc;
    }
    for (i = 3; i < n; i++) {
        rc = req_arg(req, info->sig[i - 3], &a[i], lim, info->name, errbuf);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

int
brim_wire_parse_req(const char *body, size_t len,
                    const struct brim_wire_limits *lim, msgpack_zone *zone,
                    struct brim_req *req, char errbuf[BRIM_ERRBUF_LEN])
{
    msgpack_object obj;
    int            rc;

    rc =
        brim_wire_unpack(body, len, brim_wire_req_max_objects(lim), zone, &obj);
    if (rc != 0) {
        memset(req, 0, sizeof(*req));
        brim_errfmt(errbuf, "wire: %s",
                    rc == BRIM_ENOMEM ? "out of memory unpacking a request"
                                      : "malformed msgpack in a request");
        return rc;
    }
    return brim_wire_decode_req(&obj, lim, req, errbuf);
}

void
brim_wire_req_key(const struct brim_req *req, uint32_t i, const char **key,
                  size_t *key_len)
{
    int ok;

    BRIM_ASSERT(req->keys != NULL && i < req->nkeys);
    ok = wire_get_bytes(&req->keys[i], key, key_len);
    BRIM_ASSERT(ok); /* the decoder checked every key */
}

/* True when the optional argument of type T has a value worth sending. */
static int
req_arg_present(const struct brim_req *req, char t)
{
    switch (t) {
    case 's':
        return req->section_len > 0;
    case 'n':
        return req->hello.name_len > 0;
    case 'w':
        return req->delay_s > 0;
    case 'm':
        return req->flush_ms > 0;
    case 'r':
        return req->term > 0;
    case 'W':
        return req->weight_ppm > 0;
    case 'E':
        return req->arg_epoch > 0; /* optional only in JOIN */
    case 'M':
        return req->obj != NULL;
    default:
        return 1; /* only the above are ever optional */
    }
}

/* Pack MGET's key list from decoded objects. */
static int
req_pack_keys(msgpack_packer *pk, const struct brim_req *req)
{
    const char *p;
    size_t      n;
    uint32_t    i;

    if (msgpack_pack_array(pk, req->nkeys) != 0) {
        return -1;
    }
    for (i = 0; i < req->nkeys; i++) {
        if (!wire_get_bytes(&req->keys[i], &p, &n)
            || wire_pack_bytes(pk, p, n) != 0) {
            return -1;
        }
    }
    return 0;
}

int
brim_wire_entry_pack(struct brim_buf *out, const struct brim_wire_entry *e)
{
    msgpack_packer pk;
    int            err;

    wire_packer_init(&pk, out);
    err = msgpack_pack_array(&pk, 5);
    err |= wire_pack_bytes(&pk, e->key, e->key_len);
    err |= wire_pack_bytes(&pk, e->value, e->value_len);
    err |= msgpack_pack_uint32(&pk, e->flags);
    err |= msgpack_pack_uint64(&pk, e->cas);
    err |= msgpack_pack_uint32(&pk, e->ttl_s);
    return err == 0 ? 0 : BRIM_ENOMEM;
}

/* Pack STREAM_BATCH's entries, from packed bytes or decoded objects. */
static int
req_pack_entries(msgpack_packer *pk, const struct brim_req *req)
{
    uint32_t i;

    if (msgpack_pack_array(pk, req->nentries) != 0) {
        return -1;
    }
    if (req->entries == NULL) {
        return req->entries_raw_len == 0 ? 0
            : brim_buf_append(pk->data, req->entries_raw, req->entries_raw_len)
                == 0
            ? 0
            : -1;
    }
    for (i = 0; i < req->nentries; i++) {
        if (msgpack_pack_object(pk, req->entries[i]) != 0) {
            return -1;
        }
    }
    return 0;
}

/* Pack the argument of type T from REQ; 0 or -1. */
static int
req_pack_arg(msgpack_packer *pk, char t, const struct brim_req *req)
{
    switch (t) {
    case 'k':
        return wire_pack_bytes(pk, req->key, req->key_len);
    case 'v':
        return wire_pack_bytes(pk, req->value, req->value_len);
    case 'K':
        return req_pack_keys(pk, req);
    case 's':
        return wire_pack_text(pk, req->section, req->section_len);
    case 'n':
        return wire_pack_text(pk, req->hello.name, req->hello.name_len);
    case 't':
        return msgpack_pack_uint32(pk, req->ttl_s);
    case 'f':
        return msgpack_pack_uint32(pk, req->flags);
    case 'w':
        return msgpack_pack_uint32(pk, req->delay_s);
    case 'P':
        return msgpack_pack_uint32(pk, req->hello.version);
    case 'R':
        return msgpack_pack_uint32(pk, req->hello.role);
    case 'c':
        return msgpack_pack_uint64(pk, req->cas);
    case 'd':
        return msgpack_pack_uint64(pk, req->delta);
    case 'C':
        return msgpack_pack_uint64(pk, req->hello.cluster_id);
    case 'N':
        return wire_pack_text(pk, req->name, req->name_len);
    case 'a':
        return wire_pack_text(pk, req->addr, req->addr_len);
    case 'W':
        return msgpack_pack_uint32(pk, req->weight_ppm);
    case 'F':
        return msgpack_pack_uint32(pk, req->arg_u32);
    case 'E':
        return msgpack_pack_uint64(pk, req->arg_epoch);
    case 'T':
        if (req->topo != NULL) {
            return brim_topo_encode(pk->data, req->topo) == 0 ? 0 : -1;
        }
        return msgpack_pack_object(pk, *req->obj);
    case 'M':
        return msgpack_pack_object(pk, *req->obj);
    case 'p':
        return msgpack_pack_uint32(pk, req->partition);
    case 'u':
        return msgpack_pack_uint64(pk, req->count);
    case 'm':
        return msgpack_pack_uint64(pk, req->flush_ms);
    case 'r':
        return msgpack_pack_uint64(pk, req->term);
    case 'B':
        return req_pack_entries(pk, req);
    case 'x':
        return wire_pack_bytes(pk, req->auth, BRIM_WIRE_AUTH_BYTES);
    default: /* 'I' */
        return msgpack_pack_uint64(pk, req->hello.incarnation);
    }
}

/* Bytes REQ will take, near enough to reserve them in one step. */
static size_t
req_size_hint(const struct brim_req *req)
{
    return 64 + req->key_len + req->value_len + req->section_len
        + req->hello.name_len + req->name_len + req->addr_len
        + (size_t) req->nkeys * 8 + req->entries_raw_len
        + (req->topo != NULL ? 2 * (size_t) req->topo->map.npartitions
                   + 128 * (size_t) req->topo->nmembers
                             : 0);
}

int
brim_wire_encode_req(struct brim_buf *out, const struct brim_req *req)
{
    const struct brim_op_info *info;
    msgpack_packer             pk;
    size_t                     mark;
    int                        i, nargs, err;

    info = brim_op_info(req->op);
    if (info == NULL
        || ((req->op == BRIM_OP_MGET || req->op == BRIM_OP_MGAT)
            && (req->keys == NULL || req->nkeys == 0))
        || (strchr(info->sig, 'T') != NULL && req->topo == NULL
            && req->obj == NULL)
        || (strchr(info->sig, 'B') != NULL && req->entries == NULL
            && req->nentries > 0 && req->entries_raw == NULL)
        || (strchr(info->sig, 'x') != NULL && req->auth == NULL))
    {
        return BRIM_EINVAL;
    }
    /* Optional arguments are trailing: send up to the last present one. */
    nargs = info->min_args;
    for (i = info->min_args; i < info->max_args; i++) {
        if (req_arg_present(req, info->sig[i])) {
            nargs = i + 1;
        }
    }
    if (brim_buf_reserve(out, req_size_hint(req)) != 0
        || brim_frame_begin(out, &mark) != 0)
    {
        return BRIM_ENOMEM;
    }
    wire_packer_init(&pk, out);
    err = msgpack_pack_array(&pk, 3 + (size_t) nargs);
    err |= msgpack_pack_uint32(&pk, req->op);
    err |= msgpack_pack_uint64(&pk, req->request_id);
    err |= msgpack_pack_uint64(&pk, req->epoch);
    for (i = 0; i < nargs && err == 0; i++) {
        err = req_pack_arg(&pk, info->sig[i], req);
    }
    if (err != 0) {
        brim_frame_abort(out, mark);
        return BRIM_ENOMEM;
    }
    return brim_frame_end(out, mark);
}

/* An MGET (OP, no TTL) or an MGAT (OP, TTL_S) of plain KEYS. */
static int
wire_encode_keys(struct brim_buf *out, uint32_t op, uint64_t request_id,
                 uint64_t epoch, const struct brim_bytes *keys, uint32_t nkeys,
                 uint32_t ttl_s)
{
    msgpack_packer pk;
    size_t         mark;
    uint32_t       i;
    int            err;

    if (nkeys == 0) {
        return BRIM_EINVAL;
    }
    if (brim_frame_begin(out, &mark) != 0) {
        return BRIM_ENOMEM;
    }
    wire_packer_init(&pk, out);
    err = msgpack_pack_array(&pk, op == BRIM_OP_MGAT ? 5 : 4);
    err |= msgpack_pack_uint32(&pk, op);
    err |= msgpack_pack_uint64(&pk, request_id);
    err |= msgpack_pack_uint64(&pk, epoch);
    err |= msgpack_pack_array(&pk, nkeys);
    for (i = 0; i < nkeys && err == 0; i++) {
        err = wire_pack_bytes(&pk, keys[i].ptr, keys[i].len);
    }
    if (err == 0 && op == BRIM_OP_MGAT) {
        err = msgpack_pack_uint32(&pk, ttl_s);
    }
    if (err != 0) {
        brim_frame_abort(out, mark);
        return BRIM_ENOMEM;
    }
    return brim_frame_end(out, mark);
}

int
brim_wire_encode_mget(struct brim_buf *out, uint64_t request_id, uint64_t epoch,
                      const struct brim_bytes *keys, uint32_t nkeys)
{
    return wire_encode_keys(out, BRIM_OP_MGET, request_id, epoch, keys, nkeys,
                            0);
}

int
brim_wire_encode_mgat(struct brim_buf *out, uint64_t request_id, uint64_t epoch,
                      const struct brim_bytes *keys, uint32_t nkeys,
                      uint32_t ttl_s)
{
    return wire_encode_keys(out, BRIM_OP_MGAT, request_id, epoch, keys, nkeys,
                            ttl_s);
}
