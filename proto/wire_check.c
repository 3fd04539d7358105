/*
 * proto/wire_check.c - the allocation-free walk of a frame body that runs
 * before msgpack-c sees it (DESIGN.md section 6), the unpack that follows
 * it, and the limits. msgpack-c 4.0 allocates n * 24 bytes for an array as
 * soon as it reads the count n, so a 5-byte body dd ff ff ff ff asks for
 * 96 GiB; here every count is held against the bytes that remain first.
 * Format: the msgpack specification (github.com/msgpack/msgpack/spec.md).
 */
#include "proto/wire.h"

#include <inttypes.h>

#include "common/defs.h"
#include "proto/topo.h"
#include "proto/wire_int.h"

/* The state of one walk. */
struct check {
    const unsigned char *p;            /* next unread byte */
    const unsigned char *end;          /* one past the body */
    int                  max_depth;    /* deepest container allowed */
    size_t               objects_left; /* objects the body may still hold */
};

static int check_value(struct check *c, int depth);

/* The WIDTH-byte big-endian number at P. */
static uint64_t
check_be(const unsigned char *p, int width)
{
    uint64_t v;
    int      i;

    v = 0;
    for (i = 0; i < width; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

/* Skip N payload bytes. */
static int
check_skip(struct check *c, uint64_t n)
{
    if (n > (uint64_t) (c->end - c->p)) {
        return BRIM_EBADREQ;
    }
    c->p += n;
    return 0;
}

/* A str, bin or ext: a WIDTH-byte length, EXTRA bytes (ext's type), and
 * that many bytes, which must all be present. */
static int
check_blob(struct check *c, int width, int extra)
{
    uint64_t n;

    if ((size_t) (c->end - c->p) < (size_t) width) {
        return BRIM_EBADREQ;
    }
    n = check_be(c->p, width);
    c->p += width;
    return check_skip(c, n + (uint64_t) extra);
}

/*
 * The elements of a container at DEPTH holding N entries of PER objects
 * each (1 for an array, 2 for a map). Each object takes at least one byte,
 * so a count above the bytes left is refused before any element is read:
 * this is the test msgpack-c lacks.
 */
static int
check_container(struct check *c, int depth, uint64_t n, int per)
{
    uint64_t elems, i;
    int      rc;

    if (depth > c->max_depth) {
        return BRIM_EBADREQ;
    }
    elems = n * (uint64_t) per; /* n < 2^32: cannot overflow */
    if (elems > (uint64_t) (c->end - c->p) || elems > c->objects_left) {
        return BRIM_EBADREQ;
    }
    for (i = 0; i < elems; i++) {
        rc = check_value(c, depth + 1);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* An array or map whose count is a WIDTH-byte field. */
static int
check_counted(struct check *c, int depth, int width, int per)
{
    uint64_t n;

    if ((size_t) (c->end - c->p) < (size_t) width) {
        return BRIM_EBADREQ;
    }
    n = check_be(c->p, width);
    c->p += width;
    return check_container(c, depth, n, per);
}

/* The fixed-size types after their type byte: their payload bytes. */
static int
check_fixed(struct check *c, unsigned b)
{
    switch (b) {
    case 0xc0: /* nil */
    case 0xc2: /* false */
    case 0xc3: /* true */
        return 0;
    case 0xcc: /* uint8 */
    case 0xd0: /* int8 */
        return check_skip(c, 1);
    case 0xcd:
    case 0xd1:
        return check_skip(c, 2);
    case 0xca: /* float32 */
    case 0xce:
    case 0xd2:
        return check_skip(c, 4);
    case 0xcb: /* float64 */
    case 0xcf:
    case 0xd3:
        return check_skip(c, 8);
    case 0xd4: /* fixext 1, 2, 4, 8, 16: type + data */
        return check_skip(c, 2);
    case 0xd5:
        return check_skip(c, 3);
    case 0xd6:
        return check_skip(c, 5);
    case 0xd7:
        return check_skip(c, 9);
    case 0xd8:
        return check_skip(c, 17);
    default:
        return BRIM_EBADREQ; /* 0xc1 is never used */
    }
}

/* One object whose containers would sit at DEPTH. */
static int
check_value(struct check *c, int depth)
{
    unsigned b;

    if (c->p == c->end || c->objects_left == 0) {
        return BRIM_EBADREQ;
    }
    c->objects_left--;
    b = *c->p++;
    if (b <= 0x7f || b >= 0xe0) {
        return 0; /* positive and negative fixint */
    }
    if (b <= 0x8f) {
        return check_container(c, depth, b & 0x0f, 2); /* fixmap */
    }
    if (b <= 0x9f) {
        return check_container(c, depth, b & 0x0f, 1); /* fixarray */
    }
    if (b <= 0xbf) {
        return check_skip(c, b & 0x1f); /* fixstr */
    }
    switch (b) {
    case 0xc4: /* bin 8, 16, 32 */
    case 0xd9: /* str 8, 16, 32 */
        return check_blob(c, 1, 0);
    case 0xc5:
    case 0xda:
        return check_blob(c, 2, 0);
    case 0xc6:
    case 0xdb:
        return check_blob(c, 4, 0);
    case 0xc7: /* ext 8, 16, 32 */
        return check_blob(c, 1, 1);
    case 0xc8:
        return check_blob(c, 2, 1);
    case 0xc9:
        return check_blob(c, 4, 1);
    case 0xdc: /* array 16, 32 */
        return check_counted(c, depth, 2, 1);
    case 0xdd:
        return check_counted(c, depth, 4, 1);
    case 0xde: /* map 16, 32 */
        return check_counted(c, depth, 2, 2);
    case 0xdf:
        return check_counted(c, depth, 4, 2);
    default:
        return check_fixed(c, b);
    }
}

int
brim_wire_check_objects(const void *buf, size_t len, int max_depth,
                        size_t max_objects)
{
    struct check c;
    int          rc;

    if (len == 0) {
        return BRIM_EBADREQ;
    }
    c.p = buf;
    c.end = c.p + len;
    c.max_depth = BRIM_MIN(max_depth, BRIM_WIRE_DEPTH_CEILING);
    c.objects_left = max_objects;
    rc = check_value(&c, 1);
    if (rc != 0) {
        return rc;
    }
    return c.p == c.end ? 0 : BRIM_EBADREQ; /* exactly one object */
}

int
brim_wire_check(const void *buf, size_t len, int max_depth)
{
    return brim_wire_check_objects(buf, len, max_depth, SIZE_MAX);
}

int
brim_wire_unpack(const char *body, size_t len, size_t max_objects,
                 msgpack_zone *zone, msgpack_object *obj)
{
    msgpack_unpack_return ur;
    msgpack_object        root;
    size_t                off;
    int                   rc;

    rc = brim_wire_check_objects(body, len, BRIM_WIRE_MAX_DEPTH, max_objects);
    if (rc != 0) {
        return rc; /* msgpack-c never sees this body */
    }
    msgpack_zone_clear(zone);
    off = 0;
    /* msgpack_unpack() (marked obsolete, still exported by 4.0) unpacks
     * into our zone, which is reused from frame to frame: no malloc per
     * frame once the zone's first chunk holds a typical request. */
    ur = msgpack_unpack(body, len, &off, zone, &root);
    /* The check proved one complete object of LEN bytes within msgpack-c's
     * nesting limit, so anything else is msgpack-c failing to allocate
     * (the fuzz target asserts that the two agree). */
    if (ur != MSGPACK_UNPACK_SUCCESS || off != len) {
        return BRIM_ENOMEM;
    }
    *obj = root;
    return 0;
}

void
brim_wire_packer_init(msgpack_packer *pk, struct brim_buf *out)
{
    wire_packer_init(pk, out);
}

void
brim_wire_limits_default(struct brim_wire_limits *lim)
{
    lim->max_key_bytes = BRIM_WIRE_KEY_MAX;
    lim->max_value_bytes = BRIM_WIRE_VALUE_MAX;
    lim->max_frame_bytes = BRIM_WIRE_VALUE_MAX + BRIM_WIRE_FRAME_SLACK;
    lim->max_mget_keys = BRIM_WIRE_MGET_MAX;
    lim->max_members = 0;
    lim->max_batch_entries = 0;
}

int
brim_wire_limits_check(const struct brim_wire_limits *lim,
                       char                           errbuf[BRIM_ERRBUF_LEN])
{
    uint64_t need;

    if (lim->max_key_bytes == 0 || lim->max_key_bytes > BRIM_WIRE_KEY_LIMIT) {
        brim_errfmt(errbuf,
                    "wire: max key is %" PRIu32 " bytes, "
                    "allowed 1 .. %u",
                    lim->max_key_bytes, BRIM_WIRE_KEY_LIMIT);
        return BRIM_EINVAL;
    }
    if (lim->max_value_bytes == 0
        || lim->max_value_bytes > BRIM_WIRE_VALUE_LIMIT) {
        brim_errfmt(errbuf,
                    "wire: max value is %" PRIu32 " bytes, "
                    "allowed 1 .. %u",
                    lim->max_value_bytes, BRIM_WIRE_VALUE_LIMIT);
        return BRIM_EINVAL;
    }
    if (lim->max_mget_keys == 0 || lim->max_mget_keys > BRIM_WIRE_MGET_LIMIT) {
        brim_errfmt(errbuf,
                    "wire: max mget keys is %" PRIu32 ", "
                    "allowed 1 .. %u",
                    lim->max_mget_keys, BRIM_WIRE_MGET_LIMIT);
        return BRIM_EINVAL;
    }
    if (lim->max_members > BRIM_NODES_MAX) {
        brim_errfmt(errbuf,
                    "wire: max members is %" PRIu32 ", "
                    "allowed 0 .. %d",
                    lim->max_members, BRIM_NODES_MAX);
        return BRIM_EINVAL;
    }
    if (lim->max_batch_entries > BRIM_WIRE_BATCH_LIMIT) {
        brim_errfmt(errbuf,
                    "wire: max batch entries is %" PRIu32 ", "
                    "allowed 0 .. %u",
                    lim->max_batch_entries, BRIM_WIRE_BATCH_LIMIT);
        return BRIM_EINVAL;
    }
    /* A SET of the longest key and the largest value must fit a frame. */
    need = (uint64_t) lim->max_value_bytes + lim->max_key_bytes + 1024;
    if (lim->max_frame_bytes < need) {
        brim_errfmt(errbuf,
                    "wire: max frame is %" PRIu32 " bytes, "
                    "min %" PRIu64 " (max value + max key + 1 KiB)",
                    lim->max_frame_bytes, need);
        return BRIM_EINVAL;
    }
    return 0;
}

size_t
brim_wire_req_max_objects(const struct brim_wire_limits *lim)
{
    size_t extra;

    /* array, op, id, epoch, at most 8 arguments, and an MGET's key array
     * or a topology (EPOCH_PROPOSE) ... */
    extra = lim->max_mget_keys;
    if (lim->max_members > 0
        && BRIM_WIRE_TOPO_OBJECTS(lim->max_members) > extra) {
        extra = BRIM_WIRE_TOPO_OBJECTS(lim->max_members);
    }
    /* or a STREAM_BATCH's entries (node connections) */
    if ((size_t) lim->max_batch_entries * BRIM_WIRE_ENTRY_OBJECTS > extra) {
        extra = (size_t) lim->max_batch_entries * BRIM_WIRE_ENTRY_OBJECTS;
    }
    return 16 + extra;
}
