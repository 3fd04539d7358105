/*
 * proto/topo.c - one epoch's topology (settings, members, partition map):
 * deep copies, the ring it implies, and its msgpack encoding. The decoder
 * trusts nothing: every type, range, count and order is checked before a
 * byte is kept, as for requests (DESIGN.md section 6). The object it reads
 * must come from a body that brim_wire_check() walked first.
 */
#include "proto/topo.h"

#include <inttypes.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "common/placement.h"
#include "proto/wire_int.h"

/* Elements of the encoded topology array, and of one member. */
#define TOPO_FIELDS_V1 9
#define TOPO_FIELDS 10
#define TOPO_MEMBER_FIELDS 5

int
brim_topo_init(struct brim_topo *topo, uint64_t cluster_id, uint64_t seed,
               uint32_t npartitions, uint32_t tokens_per_node, uint64_t eps_ppm,
               uint64_t epoch)
{
    memset(topo, 0, sizeof(*topo));
    if (brim_map_init(&topo->map, npartitions, epoch) != 0) {
        return BRIM_ENOMEM;
    }
    topo->cluster_id = cluster_id;
    topo->seed = seed;
    topo->tokens_per_node = tokens_per_node;
    topo->eps_ppm = eps_ppm;
    return 0;
}

void
brim_topo_destroy(struct brim_topo *topo)
{
    brim_free(topo->members);
    brim_free(topo->departed);
    brim_map_destroy(&topo->map);
    memset(topo, 0, sizeof(*topo));
}

int
brim_topo_copy(struct brim_topo *dst, const struct brim_topo *src)
{
    const struct brim_map *m = &src->map;

    if (brim_topo_init(dst, src->cluster_id, src->seed, m->npartitions,
                       src->tokens_per_node, src->eps_ppm, m->epoch)
        != 0)
    {
        return BRIM_ENOMEM;
    }
    memcpy(dst->map.owner, m->owner,
           (size_t) m->npartitions * sizeof(*m->owner));
    if (src->nmembers > 0) {
        dst->members =
            brim_malloc((size_t) src->nmembers * sizeof(*dst->members));
        if (dst->members == NULL) {
            brim_topo_destroy(dst);
            return BRIM_ENOMEM;
        }
        memcpy(dst->members, src->members,
               (size_t) src->nmembers * sizeof(*dst->members));
        dst->nmembers = src->nmembers;
    }
    if (src->ndeparted > 0) {
        dst->departed =
            brim_malloc((size_t) src->ndeparted * sizeof(*dst->departed));
        if (dst->departed == NULL) {
            brim_topo_destroy(dst);
            return BRIM_ENOMEM;
        }
        memcpy(dst->departed, src->departed,
               (size_t) src->ndeparted * sizeof(*dst->departed));
        dst->ndeparted = src->ndeparted;
    }
    return 0;
}

int
brim_topo_ring(const struct brim_topo *topo, struct brim_ring *ring,
               int include_dead, char errbuf[BRIM_ERRBUF_LEN])
{
    const struct brim_member *m;
    uint32_t                  i;
    int                       rc;

    rc = brim_ring_init(ring, topo->seed, topo->tokens_per_node, errbuf);
    if (rc != 0) {
        return rc;
    }
    for (i = 0; i < topo->nmembers; i++) {
        m = &topo->members[i];
        if (m->state == BRIM_MEMBER_DEAD && !include_dead) {
            continue;
        }
        rc = brim_ring_add_node(ring, m->name, m->weight_ppm, errbuf);
        if (rc != 0) {
            brim_ring_destroy(ring);
            /* A duplicate name is a malformed topology, like a bad one. */
            return rc == BRIM_ENOMEM ? rc : BRIM_EINVAL;
        }
    }
    return 0;
}

int32_t
brim_topo_find(const struct brim_topo *topo, const char *name)
{
    uint32_t lo = 0, hi = topo->nmembers, mid;
    int      c;

    /* Binary search: members are sorted by name (struct brim_topo). Valid
     * names hold no NUL, so strcmp order is the ring's name order. */
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        c = strcmp(topo->members[mid].name, name);
        if (c == 0) {
            return (int32_t) mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return -1;
}

int32_t
brim_topo_find_source(const struct brim_topo *topo, const char *name)
{
    int32_t  i = brim_topo_find(topo, name);
    uint32_t j;

    if (i >= 0) {
        return topo->members[i].state == BRIM_MEMBER_DEAD ? -1 : i;
    }
    for (j = 0; j < topo->ndeparted; j++) {
        if (strcmp(topo->departed[j].name, name) == 0) {
            return topo->departed[j].state == BRIM_MEMBER_LEAVING
                ? (int32_t) (topo->nmembers + j)
                : -1;
        }
    }
    return -1;
}

const struct brim_member *
brim_topo_source(const struct brim_topo *topo, uint32_t i)
{
    if (i < topo->nmembers) {
        return &topo->members[i];
    }
    if (i - topo->nmembers < topo->ndeparted) {
        return &topo->departed[i - topo->nmembers];
    }
    return NULL;
}

/* ---- encoding ---- */

/* Pack member M as [name, addr, weight_ppm, state, incarnation]. */
static int
topo_pack_member(msgpack_packer *pk, const struct brim_member *m)
{
    int err;

    err = msgpack_pack_array(pk, TOPO_MEMBER_FIELDS);
    err |= wire_pack_text(pk, m->name, strlen(m->name));
    err |= wire_pack_text(pk, m->addr, strlen(m->addr));
    err |= msgpack_pack_uint32(pk, m->weight_ppm);
    err |= msgpack_pack_uint32(pk, m->state);
    err |= msgpack_pack_uint64(pk, m->incarnation);
    return err;
}

/* Pack MAP's owners as a bin of 2 x P little-endian bytes, written
 * straight into OUT (the packer's buffer) without a staging copy. */
static int
topo_pack_owners(msgpack_packer *pk, struct brim_buf *out,
                 const struct brim_map *map)
{
    unsigned char *p;
    size_t         n;
    uint32_t       i;

    n = (size_t) map->npartitions * 2;
    if (msgpack_pack_bin(pk, n) != 0 || brim_buf_reserve(out, n) != 0) {
        return -1;
    }
    p = (unsigned char *) brim_buf_tail(out);
    for (i = 0; i < map->npartitions; i++) {
        p[2 * i] = (unsigned char) (map->owner[i] & 0xff);
        p[2 * i + 1] = (unsigned char) (map->owner[i] >> 8);
    }
    brim_buf_commit(out, n);
    return 0;
}

int
brim_topo_encode(struct brim_buf *out, const struct brim_topo *topo)
{
    msgpack_packer pk;
    size_t         start;
    uint32_t       i;
    int            err;

    start = out->len;
    wire_packer_init(&pk, out);
    err = msgpack_pack_array(
        &pk, topo->ndeparted > 0 ? TOPO_FIELDS : TOPO_FIELDS_V1);
    err |= msgpack_pack_uint32(
        &pk, topo->ndeparted > 0 ? BRIM_TOPO_FORMAT : BRIM_TOPO_FORMAT_V1);
    err |= msgpack_pack_uint64(&pk, topo->cluster_id);
    err |= msgpack_pack_uint64(&pk, topo->seed);
    err |= msgpack_pack_uint64(&pk, topo->map.epoch);
    err |= msgpack_pack_uint32(&pk, topo->map.npartitions);
    err |= msgpack_pack_uint32(&pk, topo->tokens_per_node);
    err |= msgpack_pack_uint64(&pk, topo->eps_ppm);
    err |= msgpack_pack_array(&pk, topo->nmembers);
    for (i = 0; i < topo->nmembers && err == 0; i++) {
        err |= topo_pack_member(&pk, &topo->members[i]);
    }
    if (err != 0 || topo_pack_owners(&pk, out, &topo->map) != 0) {
        brim_buf_truncate(out, start);
        return BRIM_ENOMEM;
    }
    if (topo->ndeparted > 0) {
        err = msgpack_pack_array(&pk, topo->ndeparted);
        for (i = 0; i < topo->ndeparted && err == 0; i++) {
            err |= topo_pack_member(&pk, &topo->departed[i]);
        }
        if (err != 0) {
            brim_buf_truncate(out, start);
            return BRIM_ENOMEM;
        }
    }
    return 0;
}

/* ---- decoding ---- */

/* The settings of the header fields, checked before anything is kept. */
struct topo_head {
    uint64_t cluster_id;      /* random, fixed at creation */
    uint64_t seed;            /* cluster hash seed */
    uint64_t epoch;           /* the map's epoch */
    uint32_t npartitions;     /* P */
    uint32_t tokens_per_node; /* V */
    uint64_t eps_ppm;         /* cap slack, or BRIM_EPS_NONE */
};

/* Read and range-check the scalar fields A[0 .. 7) of an array of
 * NFIELDS into *H: format 1 has 9 fields, format 2 has 10. */
static int
topo_head(const msgpack_object *a, uint32_t nfields, struct topo_head *h,
          char *errbuf)
{
    char     why[BRIM_ERRBUF_LEN];
    uint32_t format;

    if (!wire_get_u32(&a[0], &format)
        || (format != BRIM_TOPO_FORMAT && format != BRIM_TOPO_FORMAT_V1))
    {
        brim_errfmt(errbuf,
                    "topo: unknown format (this code reads "
                    "formats %d and %d)",
                    BRIM_TOPO_FORMAT_V1, BRIM_TOPO_FORMAT);
        return BRIM_EBADREQ;
    }
    if (nfields != (format == BRIM_TOPO_FORMAT ? TOPO_FIELDS : TOPO_FIELDS_V1))
    {
        brim_errfmt(errbuf, "topo: format %" PRIu32 " is an array of %d",
                    format,
                    format == BRIM_TOPO_FORMAT ? TOPO_FIELDS : TOPO_FIELDS_V1);
        return BRIM_EBADREQ;
    }
    if (!wire_get_u64(&a[1], &h->cluster_id) || !wire_get_u64(&a[2], &h->seed)
        || !wire_get_u64(&a[3], &h->epoch)
        || !wire_get_u32(&a[4], &h->npartitions)
        || !wire_get_u32(&a[5], &h->tokens_per_node)
        || !wire_get_u64(&a[6], &h->eps_ppm))
    {
        brim_errfmt(errbuf,
                    "topo: cluster_id, seed, epoch, partitions, "
                    "tokens and eps must be non-negative integers");
        return BRIM_EBADREQ;
    }
    if (brim_placement_check(h->tokens_per_node, h->npartitions, 0, why) != 0) {
        brim_errfmt(errbuf, "topo: %s", why); /* names the setting */
        return BRIM_EBADREQ;
    }
    if (h->eps_ppm > BRIM_EPS_PPM_MAX && h->eps_ppm != BRIM_EPS_NONE) {
        brim_errfmt(errbuf,
                    "topo: eps is %" PRIu64 " ppm, max %llu or "
                    "none",
                    h->eps_ppm, BRIM_EPS_PPM_MAX);
        return BRIM_EBADREQ;
    }
    return 0;
}

/* Bytes P[0 .. N) as the NUL-terminated DST of DST_SIZE bytes: 0, or -1
 * when they hold a NUL or do not fit. */
static int
topo_copy_text(char *dst, size_t dst_size, const char *p, size_t n)
{
    if (n >= dst_size || (n > 0 && memchr(p, '\0', n) != NULL)) {
        return -1;
    }
    memcpy(dst, p, n);
    dst[n] = '\0';
    return 0;
}

/*
 * Member I from O into *M: [name, addr, weight_ppm, state, incarnation].
 * PREV (NULL for the first) is the member before it, whose name must sort
 * strictly before this one. V is the topology's tokens per node.
 */
static int
topo_member(const msgpack_object *o, uint32_t i, const struct brim_member *prev,
            uint32_t v, struct brim_member *m, char *errbuf)
{
    const msgpack_object *f;
    const char           *name, *addr;
    size_t                name_len, addr_len;

    if (o->type != MSGPACK_OBJECT_ARRAY
        || o->via.array.size != TOPO_MEMBER_FIELDS) {
        brim_errfmt(errbuf,
                    "topo: member %" PRIu32 " must be an array of "
                    "%d",
                    i, TOPO_MEMBER_FIELDS);
        return BRIM_EBADREQ;
    }
    f = o->via.array.ptr;
    if (!wire_get_bytes(&f[0], &name, &name_len)
        || !wire_get_bytes(&f[1], &addr, &addr_len)
        || !wire_get_u32(&f[2], &m->weight_ppm)
        || !wire_get_u32(&f[3], &m->state)
        || !wire_get_u64(&f[4], &m->incarnation))
    {
        brim_errfmt(errbuf, "topo: member %" PRIu32 ": wrong field types", i);
        return BRIM_EBADREQ;
    }
    if (!brim_ring_name_valid(name, name_len)) {
        brim_errfmt(errbuf,
                    "topo: member %" PRIu32 ": bad name (%zu bytes; "
                    "1 to %d of [A-Za-z0-9._:-])",
                    i, name_len, BRIM_NAME_MAX);
        return BRIM_EBADREQ;
    }
    /* A valid name fits and holds no NUL; strcmp is then ring order. */
    (void) topo_copy_text(m->name, sizeof(m->name), name, name_len);
    if (prev != NULL && strcmp(prev->name, m->name) >= 0) {
        brim_errfmt(errbuf,
                    "topo: member \"%s\" after \"%s\": names must "
                    "be sorted and unique",
                    m->name, prev->name);
        return BRIM_EBADREQ;
    }
    if (topo_copy_text(m->addr, sizeof(m->addr), addr, addr_len) != 0) {
        brim_errfmt(errbuf,
                    "topo: member \"%s\": address of %zu bytes "
                    "(max %d, no NUL)",
                    m->name, addr_len, BRIM_ADDR_MAX);
        return BRIM_EBADREQ;
    }
    /* The ring's own limits, so a decoded topology always builds a ring. */
    if (m->weight_ppm < BRIM_WEIGHT_PPM_MIN
        || m->weight_ppm > BRIM_WEIGHT_PPM_MAX
        || brim_ring_token_count(v, m->weight_ppm) > BRIM_NODE_TOKENS_MAX)
    {
        brim_errfmt(errbuf,
                    "topo: member \"%s\": weight %" PRIu32 " ppm, "
                    "must be %u to %u and give at most %u tokens",
                    m->name, m->weight_ppm, BRIM_WEIGHT_PPM_MIN,
                    BRIM_WEIGHT_PPM_MAX, BRIM_NODE_TOKENS_MAX);
        return BRIM_EBADREQ;
    }
    if (m->state < BRIM_MEMBER_JOINING || m->state > BRIM_MEMBER_DEAD) {
        brim_errfmt(errbuf, "topo: member \"%s\": unknown state %" PRIu32,
                    m->name, m->state);
        return BRIM_EBADREQ;
    }
    return 0;
}

/* The member array O (WHAT names it in errors) into *OUT and *N
 * (allocated here; TOPO gives V). */
static int
topo_member_list(const msgpack_object *o, const char *what,
                 const struct brim_topo *topo, struct brim_member **out,
                 uint32_t *count, char *errbuf)
{
    uint32_t i, n;
    int      rc;

    if (o->type != MSGPACK_OBJECT_ARRAY) {
        brim_errfmt(errbuf, "topo: %s must be an array", what);
        return BRIM_EBADREQ;
    }
    n = o->via.array.size;
    if (n > BRIM_NODES_MAX) {
        brim_errfmt(errbuf, "topo: %" PRIu32 " %s, max %d", n, what,
                    BRIM_NODES_MAX);
        return BRIM_EBADREQ;
    }
    if (n == 0) {
        return 0;
    }
    *out = brim_malloc((size_t) n * sizeof(**out));
    if (*out == NULL) {
        brim_errfmt(errbuf, "topo: out of memory for %" PRIu32 " %s", n, what);
        return BRIM_ENOMEM;
    }
    for (i = 0; i < n; i++) {
        rc = topo_member(&o->via.array.ptr[i], i, i > 0 ? &(*out)[i - 1] : NULL,
                         topo->tokens_per_node, &(*out)[i], errbuf);
        if (rc != 0) {
            return rc;
        }
        *count = i + 1;
    }
    return 0;
}

/* The departed array O into TOPO->departed: each LEAVING or DEAD, and
 * no name that is also a member's. */
static int
topo_departed(const msgpack_object *o, struct brim_topo *topo, char *errbuf)
{
    const struct brim_member *d;
    uint32_t                  j;
    int                       rc;

    rc = topo_member_list(o, "departed members", topo, &topo->departed,
                          &topo->ndeparted, errbuf);
    for (j = 0; rc == 0 && j < topo->ndeparted; j++) {
        d = &topo->departed[j];
        if (d->state != BRIM_MEMBER_LEAVING && d->state != BRIM_MEMBER_DEAD) {
            brim_errfmt(errbuf,
                        "topo: departed member \"%s\" in state %" PRIu32
                        " (must be LEAVING or DEAD)",
                        d->name, d->state);
            rc = BRIM_EBADREQ;
        } else if (brim_topo_find(topo, d->name) >= 0) {
            brim_errfmt(errbuf,
                        "topo: \"%s\" is both a member and "
                        "departed",
                        d->name);
            rc = BRIM_EBADREQ;
        }
    }
    return rc;
}

/* The owner bin O (2 x P little-endian bytes) into TOPO->map.owner; every
 * entry must name a member or be BRIM_NODE_NONE. */
static int
topo_owners(const msgpack_object *o, struct brim_topo *topo, char *errbuf)
{
    const unsigned char *p;
    const char          *bytes;
    size_t               n;
    uint32_t             i;
    uint16_t             owner;

    if (!wire_get_bytes(o, &bytes, &n)
        || n != (size_t) topo->map.npartitions * 2) {
        brim_errfmt(errbuf,
                    "topo: owner map must be a bin of %" PRIu32
                    " bytes (2 per partition)",
                    topo->map.npartitions * 2);
        return BRIM_EBADREQ;
    }
    p = (const unsigned char *) bytes;
    for (i = 0; i < topo->map.npartitions; i++) {
        owner = (uint16_t) (p[2 * i] | (p[2 * i + 1] << 8));
        if (owner >= topo->nmembers && owner != BRIM_NODE_NONE) {
            brim_errfmt(errbuf,
                        "topo: partition %" PRIu32 " owned by member "
                        "%u of %" PRIu32,
                        i, (unsigned) owner, topo->nmembers);
            return BRIM_EBADREQ;
        }
        topo->map.owner[i] = owner;
    }
    return 0;
}

int
brim_topo_decode(const msgpack_object *obj, struct brim_topo *topo,
                 char errbuf[BRIM_ERRBUF_LEN])
{
    const msgpack_object *a;
    struct topo_head      h;
    int                   rc;

    memset(topo, 0, sizeof(*topo));
    if (obj->type != MSGPACK_OBJECT_ARRAY
        || (obj->via.array.size != TOPO_FIELDS
            && obj->via.array.size != TOPO_FIELDS_V1))
    {
        brim_errfmt(errbuf, "topo: must be an array of %d or %d",
                    TOPO_FIELDS_V1, TOPO_FIELDS);
        return BRIM_EBADREQ;
    }
    a = obj->via.array.ptr;
    rc = topo_head(a, obj->via.array.size, &h, errbuf);
    if (rc != 0) {
        return rc;
    }
    /* P is in range now, so this allocation is at most 2 MiB. */
    if (brim_topo_init(topo, h.cluster_id, h.seed, h.npartitions,
                       h.tokens_per_node, h.eps_ppm, h.epoch)
        != 0)
    {
        brim_errfmt(errbuf, "topo: out of memory for %" PRIu32 " partitions",
                    h.npartitions);
        return BRIM_ENOMEM;
    }
    rc = topo_member_list(&a[7], "members", topo, &topo->members,
                          &topo->nmembers, errbuf);
    if (rc == 0) {
        rc = topo_owners(&a[8], topo, errbuf);
    }
    if (rc == 0 && obj->via.array.size == TOPO_FIELDS) {
        rc = topo_departed(&a[9], topo, errbuf);
    }
    if (rc != 0) {
        brim_topo_destroy(topo);
    }
    return rc;
}
