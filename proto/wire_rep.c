/*
 * proto/wire_rep.c - replies, [status, request_id, ...]: typed decoding for
 * the client (the shape is known from the op of the request it answers,
 * since replies come in request order), encoding for the node, and the
 * incremental builders for replies whose size the node learns as it goes
 * (MGET entries, STATS pairs).
 */
#include "proto/wire.h"

#include <inttypes.h>
#include <string.h>

#include "common/defs.h"
#include "common/ring.h" /* BRIM_NAME_MAX */
#include "proto/frame.h"
#include "proto/topo.h"
#include "proto/wire_int.h"

/* Longest MOVED owner address, "host:port", in bytes. */
#define REP_OWNER_MAX 255

/* A value with its flags and CAS at A[0 .. 2] (GET's reply, an MGET hit). */
static int
rep_item(const msgpack_object *a, const struct brim_wire_limits *lim,
         const char **value, size_t *value_len, uint32_t *flags, uint64_t *cas,
         char *errbuf)
{
    if (!wire_get_bytes(&a[0], value, value_len) || !wire_get_u32(&a[1], flags)
        || !wire_get_u64(&a[2], cas))
    {
        brim_errfmt(errbuf,
                    "wire: reply: an item is [value, flags u32, "
                    "cas u64]");
        return BRIM_EBADREQ;
    }
    if (*value_len > lim->max_value_bytes) {
        brim_errfmt(errbuf, "wire: reply: value is %zu bytes, max %" PRIu32,
                    *value_len, lim->max_value_bytes);
        return BRIM_ETOOBIG;
    }
    return 0;
}

/*
 * The node's committed epoch at A[I] of a data op's reply of N elements
 * (PROTOCOL.md 5), when there: an older node sends none, and what is not
 * an unsigned integer is ignored as a field of a newer peer would be.
 */
static void
rep_node_epoch(struct brim_rep *rep, const msgpack_object *a, uint32_t n,
               uint32_t i)
{
    if (n > i && !wire_get_u64(&a[i], &rep->node_epoch)) {
        rep->node_epoch = 0;
    }
}

/* [status, id, message, details...] with status > 0. */
static int
rep_error(struct brim_rep *rep, const msgpack_object *a, uint32_t n,
          char *errbuf)
{
    if (n < 3 || !wire_get_bytes(&a[2], &rep->message, &rep->message_len)) {
        brim_errfmt(errbuf, "wire: reply: an error is [status, id, message]");
        return BRIM_EBADREQ;
    }
    if (rep->status != BRIM_EMOVED && rep->status != BRIM_ERETRY) {
        /* A data op's error carries the node's epoch (PROTOCOL.md 5). */
        rep_node_epoch(rep, a, n, 3);
        return 0;
    }
    if (rep->status == BRIM_EMOVED) {
        if (n < 5 || !wire_get_u64(&a[3], &rep->epoch)
            || !wire_get_bytes(&a[4], &rep->owner, &rep->owner_len)
            || rep->owner_len > REP_OWNER_MAX)
        {
            brim_errfmt(errbuf,
                        "wire: reply: MOVED is [5, id, message, "
                        "epoch, owner]");
            return BRIM_EBADREQ;
        }
    } else if (rep->status == BRIM_ERETRY && n >= 4) {
        if (!wire_get_u64(&a[3], &rep->epoch)) {
            brim_errfmt(errbuf,
                        "wire: reply: RETRY's epoch is not an "
                        "unsigned integer");
            return BRIM_EBADREQ;
        }
    }
    rep->node_epoch = rep->epoch; /* MOVED and RETRY name the node's */
    return 0;
}

/* One MGET entry: nil, a wire status, or an item. */
static int
rep_entry_check(const msgpack_object *e, const struct brim_wire_limits *lim,
                char *errbuf)
{
    const char *v;
    size_t      vlen;
    uint32_t    flags;
    uint64_t    cas;

    switch (e->type) {
    case MSGPACK_OBJECT_NIL:
        return 0;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (e->via.u64 >= 1 && e->via.u64 <= BRIM_STATUS_WIRE_MAX) {
            return 0;
        }
        break;
    case MSGPACK_OBJECT_ARRAY:
        if (e->via.array.size >= 3) {
            return rep_item(e->via.array.ptr, lim, &v, &vlen, &flags, &cas,
                            errbuf);
        }
        break;
    default:
        break;
    }
    brim_errfmt(errbuf,
                "wire: reply: an MGET entry is nil, a status or "
                "[value, flags, cas]");
    return BRIM_EBADREQ;
}

/* MGET's [0, id, [entry...]]. */
static int
rep_entries(struct brim_rep *rep, const msgpack_object *a, uint32_t n,
            const struct brim_wire_limits *lim, char *errbuf)
{
    const msgpack_object *list;
    uint32_t              i;
    int                   rc;

    if (n < 3 || a[2].type != MSGPACK_OBJECT_ARRAY
        || a[2].via.array.size > lim->max_mget_keys)
    {
        brim_errfmt(errbuf,
                    "wire: reply: MGET is [0, id, [entry...]] of at "
                    "most %" PRIu32 " entries",
                    lim->max_mget_keys);
        return BRIM_EBADREQ;
    }
    list = a[2].via.array.ptr;
    for (i = 0; i < a[2].via.array.size; i++) {
        rc = rep_entry_check(&list[i], lim, errbuf);
        if (rc != 0) {
            return rc;
        }
    }
    rep->entries = list;
    rep->nentries = a[2].via.array.size;
    return 0;
}

/* True for a STATS value that is not a map. */
static int
rep_stat_scalar(const msgpack_object *o)
{
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
    case MSGPACK_OBJECT_BOOLEAN:
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
    case MSGPACK_OBJECT_STR:
    case MSGPACK_OBJECT_BIN:
        return 1;
    default:
        return 0;
    }
}

/* A STATS map: byte-string names; scalar values, or (when NEST) maps of
 * scalars one level down. */
static int
rep_stat_map(const msgpack_object *m, int nest)
{
    const msgpack_object_kv *kv;
    const char              *p;
    size_t                   len;
    uint32_t                 i;

    if (m->type != MSGPACK_OBJECT_MAP) {
        return 0;
    }
    for (i = 0; i < m->via.map.size; i++) {
        kv = &m->via.map.ptr[i];
        if (!wire_get_bytes(&kv->key, &p, &len)) {
            return 0;
        }
        if (!rep_stat_scalar(&kv->val) && !(nest && rep_stat_map(&kv->val, 0)))
        {
            return 0;
        }
    }
    return 1;
}

/* HELLO's [0, id, version, cluster_id, role, incarnation, epoch, name,
 * max_key, max_value, max_frame, max_mget]. */
static int
rep_hello(struct brim_rep *rep, const msgpack_object *a, uint32_t n,
          char *errbuf)
{
    struct brim_hello       *h = &rep->hello;
    struct brim_wire_limits *l = &rep->limits;

    if (n < 12 || !wire_get_u32(&a[2], &h->version)
        || !wire_get_u64(&a[3], &h->cluster_id)
        || !wire_get_u32(&a[4], &h->role)
        || !wire_get_u64(&a[5], &h->incarnation)
        || !wire_get_u64(&a[6], &rep->epoch)
        || !wire_get_bytes(&a[7], &h->name, &h->name_len)
        || !wire_get_u32(&a[8], &l->max_key_bytes)
        || !wire_get_u32(&a[9], &l->max_value_bytes)
        || !wire_get_u32(&a[10], &l->max_frame_bytes)
        || !wire_get_u32(&a[11], &l->max_mget_keys))
    {
        brim_errfmt(errbuf, "wire: reply: malformed HELLO reply");
        return BRIM_EBADREQ;
    }
    if (h->role < BRIM_ROLE_MIN || h->role > BRIM_ROLE_MAX
        || h->name_len > BRIM_NAME_MAX)
    {
        brim_errfmt(errbuf,
                    "wire: reply: HELLO role %" PRIu32 " or name of "
                    "%zu bytes out of range",
                    h->role, h->name_len);
        return BRIM_EBADREQ;
    }
    return brim_wire_limits_check(l, errbuf) == 0 ? 0 : BRIM_EBADREQ;
}

/* AUTH's [0, id] (a proof accepted) or [0, id, nonce_s, mac_s] (the
 * answer to a challenge), each bin of exactly BRIM_WIRE_AUTH_BYTES. */
static int
rep_auth(struct brim_rep *rep, const msgpack_object *a, uint32_t n,
         char *errbuf)
{
    size_t nonce_len, mac_len;

    if (n < 4) {
        return 0;
    }
    if (!wire_get_bytes(&a[2], &rep->auth_nonce, &nonce_len)
        || !wire_get_bytes(&a[3], &rep->auth_mac, &mac_len)
        || nonce_len != BRIM_WIRE_AUTH_BYTES || mac_len != BRIM_WIRE_AUTH_BYTES)
    {
        rep->auth_nonce = rep->auth_mac = NULL;
        brim_errfmt(errbuf,
                    "wire: reply: AUTH is [0, id, nonce_s, mac_s], "
                    "bin of %d bytes each",
                    BRIM_WIRE_AUTH_BYTES);
        return BRIM_EBADREQ;
    }
    return 0;
}

/* The OK reply of shape SHAPE. */
static int
rep_ok(struct brim_rep *rep, int shape, const msgpack_object *a, uint32_t n,
       const struct brim_wire_limits *lim, char *errbuf)
{
    switch (shape) {
    case BRIM_REP_EMPTY:
        rep_node_epoch(rep, a, n, 2);
        return 0;
    case BRIM_REP_VALUE:
        if (n >= 5) {
            rep_node_epoch(rep, a, n, 6);
            /* A sixth element, the TTL left, came later (issue 14): an
             * older node leaves it out, a receiver that does not know it
             * ignores it. */
            if (n >= 6 && !wire_get_u32(&a[5], &rep->ttl_s)) {
                break;
            }
            return rep_item(&a[2], lim, &rep->value, &rep->value_len,
                            &rep->flags, &rep->cas, errbuf);
        }
        break;
    case BRIM_REP_CAS:
        if (n >= 3 && wire_get_u64(&a[2], &rep->cas)) {
            rep_node_epoch(rep, a, n, 3);
            return 0;
        }
        break;
    case BRIM_REP_NUMBER:
        if (n >= 4 && wire_get_u64(&a[2], &rep->number)
            && wire_get_u64(&a[3], &rep->cas)
            && (n < 5 || wire_get_u32(&a[4], &rep->ttl_s)))
        {
            rep_node_epoch(rep, a, n, 5);
            return 0;
        }
        break;
    case BRIM_REP_ENTRIES:
        rep_node_epoch(rep, a, n, 3);
        return rep_entries(rep, a, n, lim, errbuf);
    case BRIM_REP_STATS:
        if (n >= 3 && rep_stat_map(&a[2], 1)) {
            rep->stats = &a[2];
            return 0;
        }
        break;
    case BRIM_REP_TOPO:
        if (n >= 3 && a[2].type == MSGPACK_OBJECT_ARRAY && n <= 5) {
            uint32_t i;

            rep->obj = &a[2];
            /* After T, each when present: the flush mark (an integer),
             * then a node's coordinators (text, its MAP_FETCH). */
            for (i = 3; i < n; i++) {
                if (rep->coords == NULL && rep->flush_ms == 0 && i == 3
                    && wire_get_u64(&a[i], &rep->flush_ms))
                {
                    continue;
                }
                if (rep->coords == NULL
                    && wire_get_bytes(&a[i], &rep->coords, &rep->coords_len))
                {
                    continue;
                }
                break; /* neither: malformed */
            }
            if (i == n) {
                return 0;
            }
            rep->coords = NULL;
            rep->coords_len = 0;
        }
        break;
    case BRIM_REP_EPOCH:
        if (n >= 3 && wire_get_u64(&a[2], &rep->epoch)
            && (n < 4 || wire_get_u32(&a[3], &rep->lease_ms))
            && (n < 5 || wire_get_u64(&a[4], &rep->flush_ms))
            && (n < 6 || wire_get_u64(&a[5], &rep->term)))
        {
            return 0;
        }
        break;
    case BRIM_REP_OBJECT:
        if (n >= 3
            && (a[2].type == MSGPACK_OBJECT_ARRAY
                || a[2].type == MSGPACK_OBJECT_MAP))
        {
            rep->obj = &a[2];
            return 0;
        }
        break;
    case BRIM_REP_AUTH:
        return rep_auth(rep, a, n, errbuf);
    default:
        return rep_hello(rep, a, n, errbuf);
    }
    brim_errfmt(errbuf, "wire: reply: malformed OK reply (shape %d)", shape);
    return BRIM_EBADREQ;
}

int
brim_wire_decode_rep(const msgpack_object *obj, uint32_t op,
                     const struct brim_wire_limits *lim, struct brim_rep *rep,
                     char errbuf[BRIM_ERRBUF_LEN])
{
    const struct brim_op_info *info;
    const msgpack_object      *a;
    uint64_t                   status;
    uint32_t                   n;
    int                        rc;

    memset(rep, 0, sizeof(*rep));
    info = brim_op_info(op);
    if (info == NULL) {
        brim_errfmt(errbuf, "wire: reply to unknown op %" PRIu32, op);
        return BRIM_EUNKNOWNOP;
    }
    if (obj->type != MSGPACK_OBJECT_ARRAY || obj->via.array.size < 2) {
        brim_errfmt(errbuf,
                    "wire: a reply is an array "
                    "[status, request_id, ...]");
        return BRIM_EBADREQ;
    }
    a = obj->via.array.ptr;
    n = obj->via.array.size;
    if (!wire_get_u64(&a[1], &rep->request_id)) {
        brim_errfmt(errbuf,
                    "wire: reply: request_id must be an unsigned "
                    "integer");
        return BRIM_EBADREQ;
    }
    if (!wire_get_u64(&a[0], &status) || status > BRIM_STATUS_WIRE_MAX) {
        brim_errfmt(errbuf, "wire: reply: status must be 0 .. %d",
                    BRIM_STATUS_WIRE_MAX);
        return BRIM_EBADREQ;
    }
    rep->status = -(int) status;
    if (status != 0) {
        rc = rep_error(rep, a, n, errbuf);
    } else {
        rc = rep_ok(rep, info->reply, a, n, lim, errbuf);
    }
    if ((info->flags & BRIM_OPF_DATA) == 0) {
        rep->node_epoch = 0; /* only data replies carry it */
    }
    return rc;
}

int
brim_wire_parse_rep(const char *body, size_t len, uint32_t op,
                    const struct brim_wire_limits *lim, msgpack_zone *zone,
                    struct brim_rep *rep, char errbuf[BRIM_ERRBUF_LEN])
{
    msgpack_object obj;
    int            rc;

    rc = brim_wire_unpack(body, len, SIZE_MAX, zone, &obj);
    if (rc != 0) {
        memset(rep, 0, sizeof(*rep));
        brim_errfmt(errbuf, "wire: %s",
                    rc == BRIM_ENOMEM ? "out of memory unpacking a reply"
                                      : "malformed msgpack in a reply");
        return rc;
    }
    return brim_wire_decode_rep(&obj, op, lim, rep, errbuf);
}

int
brim_wire_rep_entry(const struct brim_rep *rep, uint32_t i, const char **value,
                    size_t *value_len, uint32_t *flags, uint64_t *cas)
{
    const msgpack_object *e;
    const msgpack_object *a;

    BRIM_ASSERT(rep->entries != NULL && i < rep->nentries);
    e = &rep->entries[i];
    if (e->type == MSGPACK_OBJECT_NIL) {
        return BRIM_ENOTFOUND;
    }
    if (e->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        return -(int) e->via.u64; /* 1 .. 99, checked by the decoder */
    }
    /* An item, [value, flags, cas], checked by the decoder. */
    a = e->via.array.ptr;
    if (!wire_get_bytes(&a[0], value, value_len)) {
        BRIM_NOTREACHED();
    }
    *flags = (uint32_t) a[1].via.u64;
    *cas = a[2].via.u64;
    return 0;
}

/* ---- encoding ---- */

/* True when STATUS is 0 or a wire BRIM_E* code. */
static int
rep_wire_status(int status)
{
    return status <= 0 && status >= -BRIM_STATUS_WIRE_MAX;
}

/* The body of an error reply: [status, id, message, details...]. */
static int
rep_pack_error(msgpack_packer *pk, const struct brim_rep *rep)
{
    size_t n;
    int    err;

    n = rep->status == BRIM_EMOVED                           ? 5
        : rep->status == BRIM_ERETRY || rep->node_epoch != 0 ? 4
                                                             : 3;
    err = msgpack_pack_array(pk, n);
    err |= msgpack_pack_uint32(pk, (uint32_t) -rep->status);
    err |= msgpack_pack_uint64(pk, rep->request_id);
    err |= wire_pack_text(pk, rep->message, rep->message_len);
    if (n >= 4) {
        /* MOVED's and RETRY's epoch is the node's; any other error of a
         * data op has its NODE_EPOCH there. */
        err |= msgpack_pack_uint64(pk,
                                   rep->status == BRIM_EMOVED
                                           || rep->status == BRIM_ERETRY
                                       ? rep->epoch
                                       : rep->node_epoch);
    }
    if (n == 5) {
        err |= wire_pack_text(pk, rep->owner, rep->owner_len);
    }
    return err;
}

/* HELLO's OK body after [0, id. */
static int
rep_pack_hello(msgpack_packer *pk, const struct brim_rep *rep)
{
    int err;

    err = msgpack_pack_uint32(pk, rep->hello.version);
    err |= msgpack_pack_uint64(pk, rep->hello.cluster_id);
    err |= msgpack_pack_uint32(pk, rep->hello.role);
    err |= msgpack_pack_uint64(pk, rep->hello.incarnation);
    err |= msgpack_pack_uint64(pk, rep->epoch);
    err |= wire_pack_text(pk, rep->hello.name, rep->hello.name_len);
    err |= msgpack_pack_uint32(pk, rep->limits.max_key_bytes);
    err |= msgpack_pack_uint32(pk, rep->limits.max_value_bytes);
    err |= msgpack_pack_uint32(pk, rep->limits.max_frame_bytes);
    err |= msgpack_pack_uint32(pk, rep->limits.max_mget_keys);
    return err;
}

/* MGET's entries, re-encoded from decoded objects. */
static int
rep_pack_entries(msgpack_packer *pk, const struct brim_rep *rep)
{
    uint32_t i;
    int      err;

    err = msgpack_pack_array(pk, rep->nentries);
    for (i = 0; i < rep->nentries && err == 0; i++) {
        err = msgpack_pack_object(pk, rep->entries[i]);
    }
    return err;
}

/* True for the OK shapes of the data ops, which end with the node's epoch
 * when REP->node_epoch is set (PROTOCOL.md 5). */
static int
rep_epoch_shape(int shape)
{
    return shape == BRIM_REP_EMPTY || shape == BRIM_REP_VALUE
        || shape == BRIM_REP_CAS || shape == BRIM_REP_NUMBER
        || shape == BRIM_REP_ENTRIES;
}

/* Elements of REP, an OK reply of SHAPE, [0, id] included. */
static size_t
rep_ok_len(int shape, const struct brim_rep *rep)
{
    static const uint8_t len[] = {
        [BRIM_REP_EMPTY] = 2,  [BRIM_REP_VALUE] = 5,   [BRIM_REP_CAS] = 3,
        [BRIM_REP_NUMBER] = 4, [BRIM_REP_ENTRIES] = 3, [BRIM_REP_STATS] = 3,
        [BRIM_REP_HELLO] = 12, [BRIM_REP_TOPO] = 3,    [BRIM_REP_EPOCH] = 4,
        [BRIM_REP_OBJECT] = 3, [BRIM_REP_AUTH] = 4,
    };

    if (shape == BRIM_REP_AUTH && rep->auth_nonce == NULL) {
        return 2; /* a proof accepted */
    }
    if (shape == BRIM_REP_TOPO) {
        /* The flush mark and a node's coordinators, each when present. */
        return len[shape] + (rep->flush_ms != 0) + (rep->coords != NULL);
    }
    if (rep->node_epoch != 0 && rep_epoch_shape(shape)) {
        /* The TTL left (0: never expires) and then the node's epoch. */
        return len[shape] + 1u
            + (shape == BRIM_REP_VALUE || shape == BRIM_REP_NUMBER);
    }
    if ((shape == BRIM_REP_VALUE || shape == BRIM_REP_NUMBER)
        && rep->ttl_s != 0) {
        return len[shape] + 1u; /* the TTL left, trailing */
    }
    if (shape == BRIM_REP_EPOCH && rep->term != 0) {
        return len[shape] + 2u; /* the flush mark (maybe 0), the term */
    }
    if ((shape == BRIM_REP_TOPO || shape == BRIM_REP_EPOCH)
        && rep->flush_ms != 0) {
        return len[shape] + 1u; /* the flush mark, trailing */
    }
    return len[shape];
}

/* The node's epoch, trailing, when REP has one. */
static int
rep_pack_node_epoch(msgpack_packer *pk, const struct brim_rep *rep)
{
    return rep->node_epoch != 0 ? msgpack_pack_uint64(pk, rep->node_epoch) : 0;
}

/* VALUE's and NUMBER's tail: the TTL left when the item expires or an
 * epoch follows (0 then means "never expires"), then the epoch. */
static int
rep_pack_ttl_epoch(msgpack_packer *pk, const struct brim_rep *rep)
{
    int err = 0;

    if (rep->ttl_s != 0 || rep->node_epoch != 0) {
        err = msgpack_pack_uint32(pk, rep->ttl_s);
    }
    return err | rep_pack_node_epoch(pk, rep);
}

/* The body of an OK reply of SHAPE. */
static int
rep_pack_ok(msgpack_packer *pk, int shape, const struct brim_rep *rep)
{
    int err;

    err = msgpack_pack_array(pk, rep_ok_len(shape, rep));
    err |= msgpack_pack_uint32(pk, 0);
    err |= msgpack_pack_uint64(pk, rep->request_id);
    switch (shape) {
    case BRIM_REP_EMPTY:
        return err | rep_pack_node_epoch(pk, rep);
    case BRIM_REP_VALUE:
        err |= wire_pack_bytes(pk, rep->value, rep->value_len);
        err |= msgpack_pack_uint32(pk, rep->flags);
        err |= msgpack_pack_uint64(pk, rep->cas);
        return err | rep_pack_ttl_epoch(pk, rep);
    case BRIM_REP_CAS:
        err |= msgpack_pack_uint64(pk, rep->cas);
        return err | rep_pack_node_epoch(pk, rep);
    case BRIM_REP_NUMBER:
        err |= msgpack_pack_uint64(pk, rep->number);
        err |= msgpack_pack_uint64(pk, rep->cas);
        return err | rep_pack_ttl_epoch(pk, rep);
    case BRIM_REP_ENTRIES:
        err |= rep_pack_entries(pk, rep);
        return err | rep_pack_node_epoch(pk, rep);
    case BRIM_REP_STATS:
        return err | msgpack_pack_object(pk, *rep->stats);
    case BRIM_REP_TOPO:
        if (rep->topo != NULL) {
            err |= brim_topo_encode(pk->data, rep->topo) == 0 ? 0 : -1;
        } else {
            err |= msgpack_pack_object(pk, *rep->obj);
        }
        /* Trailing, each when present: the flush mark, then a node's
         * coordinators (PROTOCOL.md 10.1). */
        if (rep->flush_ms != 0) {
            err |= msgpack_pack_uint64(pk, rep->flush_ms);
        }
        if (rep->coords != NULL) {
            err |= wire_pack_text(pk, rep->coords, rep->coords_len);
        }
        return err;
    case BRIM_REP_EPOCH:
        err |= msgpack_pack_uint64(pk, rep->epoch);
        err |= msgpack_pack_uint32(pk, rep->lease_ms);
        if (rep->flush_ms != 0 || rep->term != 0) {
            err |= msgpack_pack_uint64(pk, rep->flush_ms);
        }
        return err | (rep->term != 0 ? msgpack_pack_uint64(pk, rep->term) : 0);
    case BRIM_REP_OBJECT:
        return err | msgpack_pack_object(pk, *rep->obj);
    case BRIM_REP_AUTH:
        if (rep->auth_nonce != NULL) {
            err |= wire_pack_bytes(pk, rep->auth_nonce, BRIM_WIRE_AUTH_BYTES);
            err |= wire_pack_bytes(pk, rep->auth_mac, BRIM_WIRE_AUTH_BYTES);
        }
        return err;
    default:
        return err | rep_pack_hello(pk, rep);
    }
}

int
brim_wire_encode_rep(struct brim_buf *out, uint32_t op,
                     const struct brim_rep *rep)
{
    const struct brim_op_info *info;
    msgpack_packer             pk;
    size_t                     mark;
    int                        err;

    info = brim_op_info(op);
    if (info == NULL || !rep_wire_status(rep->status)
        || (rep->status == 0 && info->reply == BRIM_REP_STATS
            && rep->stats == NULL)
        || (rep->status == 0 && info->reply == BRIM_REP_ENTRIES
            && rep->entries == NULL && rep->nentries > 0)
        || (rep->status == 0 && info->reply == BRIM_REP_TOPO
            && rep->topo == NULL && rep->obj == NULL)
        || (rep->status == 0 && info->reply == BRIM_REP_OBJECT
            && rep->obj == NULL)
        || (rep->status == 0 && info->reply == BRIM_REP_AUTH
            && (rep->auth_nonce == NULL) != (rep->auth_mac == NULL)))
    {
        return BRIM_EINVAL;
    }
    if (brim_buf_reserve(
            out,
            64 + rep->value_len + rep->message_len + rep->coords_len
                + (rep->topo != NULL ? 2 * (size_t) rep->topo->map.npartitions
                           + 128 * (size_t) rep->topo->nmembers
                                     : 0))
            != 0
        || brim_frame_begin(out, &mark) != 0)
    {
        return BRIM_ENOMEM;
    }
    wire_packer_init(&pk, out);
    err = rep->status != 0 ? rep_pack_error(&pk, rep)
                           : rep_pack_ok(&pk, info->reply, rep);
    if (err != 0) {
        brim_frame_abort(out, mark);
        return BRIM_ENOMEM;
    }
    return brim_frame_end(out, mark);
}

int
brim_wire_encode_status(struct brim_buf *out, uint64_t request_id, int status,
                        const char *message, size_t message_len)
{
    struct brim_rep rep;

    if (!rep_wire_status(status)) {
        return BRIM_EINVAL;
    }
    memset(&rep, 0, sizeof(rep));
    rep.status = status;
    rep.request_id = request_id;
    rep.message = message;
    rep.message_len = message == NULL ? 0 : message_len;
    /* PING's OK shape is [0, id]; an error is [status, id, message]. */
    return brim_wire_encode_rep(out, BRIM_OP_PING, &rep);
}

/* Start a frame [0, ID, <container of N>] (or, with EPOCH set, [0, ID,
 * <container of N>, EPOCH], the epoch to come after the container) whose
 * container is an array (MAP 0) or a map (MAP 1). */
static int
rep_begin(struct brim_buf *out, uint64_t id, uint32_t n, int map,
          uint64_t epoch, size_t *mark)
{
    msgpack_packer pk;
    size_t         start;
    int            err;

    if (brim_frame_begin(out, &start) != 0) {
        return BRIM_ENOMEM;
    }
    wire_packer_init(&pk, out);
    err = msgpack_pack_array(&pk, epoch != 0 ? 4 : 3);
    err |= msgpack_pack_uint32(&pk, 0);
    err |= msgpack_pack_uint64(&pk, id);
    err |= map ? msgpack_pack_map(&pk, n) : msgpack_pack_array(&pk, n);
    if (err != 0) {
        brim_frame_abort(out, start);
        return BRIM_ENOMEM;
    }
    *mark = start;
    return 0;
}

int
brim_wire_mget_begin(struct brim_buf *out, uint64_t request_id,
                     uint32_t nentries, size_t *mark)
{
    return rep_begin(out, request_id, nentries, 0, 0, mark);
}

int
brim_wire_mget_begin_epoch(struct brim_buf *out, uint64_t request_id,
                           uint32_t nentries, uint64_t epoch, size_t *mark)
{
    return rep_begin(out, request_id, nentries, 0, epoch, mark);
}

int
brim_wire_mget_end(struct brim_buf *out, uint64_t epoch, size_t mark)
{
    msgpack_packer pk;

    if (epoch != 0) {
        wire_packer_init(&pk, out);
        if (msgpack_pack_uint64(&pk, epoch) != 0) {
            return BRIM_ENOMEM;
        }
    }
    return brim_frame_end(out, mark);
}

int
brim_wire_mget_hit(struct brim_buf *out, const void *value, size_t value_len,
                   uint32_t flags, uint64_t cas)
{
    msgpack_packer pk;
    int            err;

    if (brim_buf_reserve(out, value_len + 24) != 0) {
        return BRIM_ENOMEM;
    }
    wire_packer_init(&pk, out);
    err = msgpack_pack_array(&pk, 3);
    err |= wire_pack_bytes(&pk, value, value_len);
    err |= msgpack_pack_uint32(&pk, flags);
    err |= msgpack_pack_uint64(&pk, cas);
    return err == 0 ? 0 : BRIM_ENOMEM;
}

int
brim_wire_mget_miss(struct brim_buf *out, int status)
{
    msgpack_packer pk;
    int            err;

    if (status == 0 || !rep_wire_status(status)) {
        return BRIM_EINVAL;
    }
    wire_packer_init(&pk, out);
    if (status == BRIM_ENOTFOUND) {
        err = msgpack_pack_nil(&pk);
    } else {
        err = msgpack_pack_uint32(&pk, (uint32_t) -status);
    }
    return err == 0 ? 0 : BRIM_ENOMEM;
}

int
brim_wire_stats_begin(struct brim_buf *out, uint64_t request_id,
                      uint32_t npairs, size_t *mark)
{
    return rep_begin(out, request_id, npairs, 1, 0, mark);
}

/* A stats pair's name. */
static int
rep_pack_name(msgpack_packer *pk, const char *name)
{
    return wire_pack_text(pk, name, strlen(name));
}

int
brim_wire_stats_u64(struct brim_buf *out, const char *name, uint64_t v)
{
    msgpack_packer pk;

    wire_packer_init(&pk, out);
    if (rep_pack_name(&pk, name) != 0 || msgpack_pack_uint64(&pk, v) != 0) {
        return BRIM_ENOMEM;
    }
    return 0;
}

int
brim_wire_stats_f64(struct brim_buf *out, const char *name, double v)
{
    msgpack_packer pk;

    wire_packer_init(&pk, out);
    if (rep_pack_name(&pk, name) != 0 || msgpack_pack_double(&pk, v) != 0) {
        return BRIM_ENOMEM;
    }
    return 0;
}

int
brim_wire_stats_str(struct brim_buf *out, const char *name, const char *s,
                    size_t len)
{
    msgpack_packer pk;

    wire_packer_init(&pk, out);
    if (rep_pack_name(&pk, name) != 0 || wire_pack_text(&pk, s, len) != 0) {
        return BRIM_ENOMEM;
    }
    return 0;
}

int
brim_wire_stats_map(struct brim_buf *out, const char *name, uint32_t npairs)
{
    msgpack_packer pk;

    wire_packer_init(&pk, out);
    if (rep_pack_name(&pk, name) != 0 || msgpack_pack_map(&pk, npairs) != 0) {
        return BRIM_ENOMEM;
    }
    return 0;
}

int
brim_wire_encode_entry_rep(struct brim_buf *out, uint64_t request_id,
                           const struct brim_wire_entry *e)
{
    msgpack_packer pk;
    size_t         mark;
    int            err;

    if (brim_frame_begin(out, &mark) != 0) {
        return BRIM_ENOMEM;
    }
    wire_packer_init(&pk, out);
    err = msgpack_pack_array(&pk, 3);
    err |= msgpack_pack_uint32(&pk, 0);
    err |= msgpack_pack_uint64(&pk, request_id);
    if (err != 0 || brim_wire_entry_pack(out, e) != 0) {
        brim_frame_abort(out, mark);
        return BRIM_ENOMEM;
    }
    return brim_frame_end(out, mark);
}
