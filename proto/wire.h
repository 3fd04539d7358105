/*
 * proto/wire.h - brim's messages over msgpack-c (proto/PROTOCOL.md): the
 * allocation-free check of a frame body, typed decoding of requests (node
 * side) and replies (client side) with every type and range validated
 * before use, and encoding of both into a struct brim_buf. Pure: no
 * sockets, no libuv, no logging. Not thread-safe per object; distinct
 * buffers and zones may be used from distinct threads.
 *
 * Reading a frame, as a node does (STYLE.md example C):
 *     brim_frame_peek()      header only: whole frame, AGAIN or TOOBIG
 *     brim_wire_parse_req()  brim_wire_check_objects(), then msgpack_unpack()
 *                            into a reused zone, then brim_wire_decode_req()
 * Nothing is unpacked before the body has been walked once without
 * allocating: msgpack-c allocates from a declared element count before it
 * has seen the elements (DESIGN.md section 6).
 */
#ifndef BRIM_PROTO_WIRE_H
#define BRIM_PROTO_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include <brim/status.h>

#include "proto/buf.h"
#include "proto/ops.h"

struct brim_topo; /* proto/topo.h */

/* The protocol version this code speaks, sent in HELLO. */
#define BRIM_WIRE_VERSION 1

/* Deepest nesting of containers a frame may hold (a request needs 2). */
#define BRIM_WIRE_MAX_DEPTH 8
/* Any max_depth above this is treated as this (msgpack-c stops at 32). */
#define BRIM_WIRE_DEPTH_CEILING 16

/* Default limits (struct brim_wire_limits). */
#define BRIM_WIRE_KEY_MAX 250             /* bytes, as memcached */
#define BRIM_WIRE_VALUE_MAX (1u << 20)    /* bytes: 1 MiB */
#define BRIM_WIRE_FRAME_SLACK (64u << 10) /* frame max = value + this */
#define BRIM_WIRE_MGET_MAX 1024           /* keys in one MGET */

/* msgpack objects of a topology of N members (proto/topo.h): its array,
 * 8 fields, the member array and 6 objects per member. */
#define BRIM_WIRE_TOPO_OBJECTS(n) (10u + 6u * (size_t) (n))

/* Hard bounds a configuration must respect (brim_wire_limits_check()). */
#define BRIM_WIRE_KEY_LIMIT 65535u       /* longest configurable key */
#define BRIM_WIRE_VALUE_LIMIT (1u << 30) /* largest configurable value */
#define BRIM_WIRE_MGET_LIMIT 65536u      /* most configurable keys */
#define BRIM_WIRE_BATCH_LIMIT 1024u      /* most entries of a batch */

/* msgpack objects of one stream entry: its array and 5 fields. */
#define BRIM_WIRE_ENTRY_OBJECTS 6u
#define BRIM_WIRE_SECTION_MAX 64 /* STATS section name bytes */
/* Bytes of AUTH's nonces and MACs (proto/auth.h: HMAC-SHA256). */
#define BRIM_WIRE_AUTH_BYTES 32

/* A TTL above this many seconds (30 days) is an absolute Unix time. */
#define BRIM_WIRE_TTL_RELATIVE_MAX 2592000u

/*
 * The limits a decoder enforces. Both ends should agree; HELLO's reply
 * tells a client the node's. Fill with brim_wire_limits_default().
 */
struct brim_wire_limits {
    uint32_t max_key_bytes;     /* 1 .. BRIM_WIRE_KEY_LIMIT */
    uint32_t max_value_bytes;   /* 1 .. BRIM_WIRE_VALUE_LIMIT */
    uint32_t max_frame_bytes;   /* body bytes, header excluded */
    uint32_t max_mget_keys;     /* 1 .. BRIM_WIRE_MGET_LIMIT */
    uint32_t max_members;       /* 0 .. 4096 (BRIM_NODES_MAX): members of a
                                       topology a request may carry
                                       (EPOCH_PROPOSE); 0 by default. Not
                                       sent in HELLO. Raise it, and
                                       max_frame_bytes (PROTOCOL.md 10.1),
                                       on connections from the coordinator */
    uint32_t max_batch_entries; /* 0 .. BRIM_WIRE_BATCH_LIMIT: entries a
                                       STREAM_BATCH may carry; 0 by default
                                       (refused). Not sent in HELLO. Raised
                                       on connections from other nodes */
};

/*
 * One stream entry, [key, value, flags u32, cas u64, remaining_ttl_s u32]
 * (PROTOCOL.md 11): STREAM_BATCH's entries and PULL's reply. Pointers
 * borrow as in struct brim_req.
 */
struct brim_wire_entry {
    const char *key; /* 1 .. max_key_bytes */
    size_t      key_len;
    const char *value; /* 0 .. max_value_bytes */
    size_t      value_len;
    uint32_t    flags; /* client flags */
    uint64_t    cas;   /* CAS value */
    uint32_t    ttl_s; /* remaining seconds; 0 = no expiry */
};

/* A byte string borrowed from its owner: PTR[0 .. LEN). */
struct brim_bytes {
    const char *ptr; /* may be NULL when LEN is 0 */
    size_t      len; /* bytes */
};

/*
 * The arguments of HELLO, and the fields of its OK reply. NAME is borrowed:
 * from the frame buffer after a decode, from the caller for an encode.
 */
struct brim_hello {
    uint32_t    version;     /* BRIM_WIRE_VERSION */
    uint32_t    role;        /* enum brim_role */
    uint64_t    cluster_id;  /* 0: not known yet (a new client) */
    uint64_t    incarnation; /* sender's process id; 0 for clients */
    const char *name;        /* node or coord name; may be empty */
    size_t      name_len;    /* 0 .. BRIM_NAME_MAX bytes */
};

/*
 * One request, [op, request_id, epoch, args...]. Which fields an op uses is
 * its BRIM_OP_MAP signature; the others are zero. After a decode, every
 * pointer borrows from the frame buffer and KEYS also from the msgpack zone:
 * they stay valid until either is reused or freed, so copy what you keep.
 */
struct brim_req {
    uint32_t                op;          /* enum brim_op */
    uint64_t                request_id;  /* echoed in the reply; 0 = unknown */
    uint64_t                epoch;       /* sender's map epoch; 0 = none */
    const char             *key;         /* k: the key */
    size_t                  key_len;     /* 1 .. max_key_bytes */
    const char             *value;       /* v: the value */
    size_t                  value_len;   /* 0 .. max_value_bytes */
    uint32_t                ttl_s;       /* t: seconds, 0 none, > 30 days abs */
    uint32_t                flags;       /* f: client flags, stored opaque */
    uint64_t                cas;         /* c: expected CAS value */
    uint64_t                delta;       /* d: INCR/DECR amount */
    uint32_t                delay_s;     /* w: FLUSH delay, 0 = now */
    uint64_t                flush_ms;    /* m: a flush mark, Unix ms: FLUSH's
                                          absolute time; on STREAM_BATCH,
                                          FORWARD_GET and PULL the
                                          sender's last applied flush
                                          (PROTOCOL.md 4.2); 0 = none */
    uint64_t                term;        /* r: the sending coordinator's term
                                          (EPOCH_PROPOSE, _COMMIT, _ABORT;
                                          PROTOCOL.md 10.6); 0 = none */
    const msgpack_object   *keys;        /* K: MGET keys (decoded only) */
    uint32_t                nkeys;       /* K: 1 .. max_mget_keys */
    const char             *section;     /* s: STATS section, may be empty */
    size_t                  section_len; /* 0 .. BRIM_WIRE_SECTION_MAX */
    struct brim_hello       hello;       /* P C R I n: HELLO's arguments;
                                          I is also JOIN's and HEARTBEAT's
                                          incarnation */
    const char             *name;        /* N: member name */
    size_t                  name_len;    /* 0 .. BRIM_NAME_MAX */
    const char             *addr;        /* a: member address "host:port" */
    size_t                  addr_len;    /* 0 .. BRIM_ADDR_MAX */
    uint32_t                weight_ppm;  /* W: weight in millionths */
    uint32_t                arg_u32;     /* F: LEAVE's force, PLAN's kind */
    uint64_t                arg_epoch;   /* E: COMMIT/ABORT epoch, SUBSCRIBE's
                                          known epoch, JOIN's member epoch
                                          (0: not sent) */
    const msgpack_object   *obj;         /* T or M: decoded object (an array
                                          for T, a map for M); encoded when
                                          TOPO is NULL */
    const struct brim_topo *topo;        /* T: encode only, borrowed */
    uint32_t                partition;   /* p: a partition number */
    uint64_t                count;       /* u: STREAM_END's entries sent */
    const msgpack_object   *entries;     /* B: decoded entries (see
                                          brim_wire_req_entry()) */
    uint32_t                nentries;    /* B: 0 .. max_batch_entries */
    const char             *entries_raw; /* B, encode only: NENTRIES entries
                                          already packed (brim_wire_entry_
                                          pack()); used when ENTRIES is
                                          NULL */
    size_t                  entries_raw_len; /* bytes */
    const char             *auth;            /* x: AUTH's nonce_c or mac_c,
                                          BRIM_WIRE_AUTH_BYTES bytes */
};

/*
 * One reply, [status, request_id, ...]. Which fields are set depends on the
 * status and on the op it answers (PROTOCOL.md, "Replies"); the others are
 * zero. Pointers borrow as in struct brim_req.
 */
struct brim_rep {
    int                     status;      /* 0 or BRIM_E*; wire: -status */
    uint64_t                request_id;  /* the request's id; 0 = unknown */
    const char             *message;     /* error text, not NUL-terminated */
    size_t                  message_len; /* bytes; may be 0 */
    const char             *value;       /* VALUE: the value */
    size_t                  value_len;   /* VALUE: bytes */
    uint32_t                flags;       /* VALUE: client flags */
    uint64_t                cas;         /* VALUE, CAS, NUMBER: CAS value */
    uint64_t                number;      /* NUMBER: counter after the op */
    uint32_t                ttl_s;       /* VALUE, NUMBER: seconds the item
                                            has left (at least 1); 0: it
                                            never expires, or an older
                                            node did not say (PROTOCOL.md
                                            4.1) */
    uint64_t                epoch;       /* HELLO, MOVED, RETRY: epoch */
    uint64_t                node_epoch;  /* a data op's reply (OK or
                                            error): the node's committed
                                            epoch, trailing; 0: not sent
                                            (an older node, a standalone
                                            one; PROTOCOL.md 5) */
    const char             *owner;       /* MOVED: owner's "host:port" */
    size_t                  owner_len;   /* MOVED: bytes */
    struct brim_hello       hello;       /* HELLO: the peer's hello */
    struct brim_wire_limits limits;      /* HELLO: the peer's limits */
    const msgpack_object   *entries;     /* ENTRIES (decoded only) */
    uint32_t                nentries;    /* ENTRIES: count */
    const msgpack_object   *stats;       /* STATS: the map (decoded only) */
    uint32_t                lease_ms;    /* EPOCH: HEARTBEAT's lease */
    uint64_t                flush_ms;    /* TOPO, EPOCH: the cluster's last
                                            flush mark, Unix ms (trailing,
                                            sent when not 0) */
    uint64_t                term;        /* EPOCH: the answering
                                            coordinator's term, after the
                                            flush mark (sent as 0 then);
                                            0: not sent (file mode) */
    const msgpack_object   *obj;         /* TOPO (an array: give it to
                                            brim_topo_decode()), OBJECT; on
                                            encode used when TOPO is NULL */
    const struct brim_topo *topo;        /* TOPO: encode only, borrowed */
    const char             *coords;      /* TOPO from a node (MAP_FETCH):
                                            its coordinators, "host:port"
                                            comma-separated, not NUL-
                                            terminated; NULL: not sent */
    size_t                  coords_len;  /* TOPO: bytes of COORDS */
    const char             *auth_nonce;  /* AUTH: nonce_s, BRIM_WIRE_AUTH_
                                            BYTES bytes; NULL: none sent */
    const char             *auth_mac;    /* AUTH: mac_s, as many bytes; set
                                            with AUTH_NONCE or neither */
};

/* ---- limits ---- */

/* Fill LIM with the defaults: 250, 1 MiB, 1 MiB + 64 KiB, 1024. */
void brim_wire_limits_default(struct brim_wire_limits *lim);

/*
 * Check a configured LIM: every field within its hard bound, and
 * max_frame_bytes at least max_value_bytes + max_key_bytes + 1 KiB, so that
 * a SET of the largest key and value fits a frame. Returns 0 or BRIM_EINVAL
 * with the reason in ERRBUF (NULL allowed).
 */
int brim_wire_limits_check(const struct brim_wire_limits *lim,
                           char errbuf[BRIM_ERRBUF_LEN]);

/*
 * The most msgpack objects a request within LIM may hold: its array, the
 * op, id and epoch, its arguments and an MGET key list or a topology of
 * max_members members (BRIM_WIRE_TOPO_OBJECTS()). The bound that
 * brim_wire_parse_req() passes to brim_wire_check_objects().
 */
size_t brim_wire_req_max_objects(const struct brim_wire_limits *lim);

/* Point PK's output at the end of OUT (to build an OBJECT reply after
 * brim_wire_mget_begin() or brim_wire_stats_begin()). */
void brim_wire_packer_init(msgpack_packer *pk, struct brim_buf *out);

/* ---- the allocation-free check ---- */

/*
 * Walk BUF[0 .. LEN) (borrowed) as one msgpack object without allocating
 * and without calling msgpack-c: every declared count must fit in the bytes
 * that remain (each element needs at least one byte; str, bin and ext
 * lengths are exact), the object must fill LEN exactly (no trailing bytes),
 * containers may nest at most MAX_DEPTH deep (the outermost container is
 * depth 1; values above BRIM_WIRE_DEPTH_CEILING are treated as it), and
 * the reserved byte 0xc1 never appears. Time is O(LEN).
 * Returns 0 or BRIM_EBADREQ (LEN 0 included).
 */
int brim_wire_check(const void *buf, size_t len, int max_depth);

/*
 * As brim_wire_check(), and the body may hold at most MAX_OBJECTS msgpack
 * objects in all (containers and their elements, map keys included). This
 * bounds what msgpack-c allocates afterwards: about 24 bytes per object.
 */
int brim_wire_check_objects(const void *buf, size_t len, int max_depth,
                            size_t max_objects);

/*
 * Check BODY[0 .. LEN) with brim_wire_check_objects(BRIM_WIRE_MAX_DEPTH,
 * MAX_OBJECTS), then unpack it into ZONE (caller's, from msgpack_zone_init
 * with MSGPACK_ZONE_CHUNK_SIZE, kept per connection and reused; cleared
 * first, so objects from an earlier call become invalid) and store
 * the root in *OBJ. The objects live in ZONE and their str and bin bytes in
 * BODY: both must outlive every use of *OBJ. ZONE's memory comes from
 * msgpack-c's malloc, not brim_malloc (XXX: uncounted, bounded by the
 * objects check). Returns 0, BRIM_EBADREQ (check failed: msgpack-c was not
 * called) or BRIM_ENOMEM.
 */
int brim_wire_unpack(const char *body, size_t len, size_t max_objects,
                     msgpack_zone *zone, msgpack_object *obj);

/* ---- requests ---- */

/*
 * Decode the unpacked request OBJ into *REQ, validating every field against
 * the op's signature and LIM. REQ borrows from OBJ's zone and frame (see
 * struct brim_req). Returns:
 *   0                success
 *   BRIM_EBADREQ     not an array of at least 3, a field of the wrong type or
 *                    out of its range, a wrong argument count
 *   BRIM_EUNKNOWNOP  the opcode is not a defined op (reserved ones included)
 *   BRIM_EINVAL      a key of 0 or more than max_key_bytes bytes, an empty
 *                    MGET, a role outside enum brim_role, a long name
 *   BRIM_ETOOBIG     a value above max_value_bytes, an MGET above
 *                    max_mget_keys
 * Unlike other brim functions, *REQ is written on error too: its
 * request_id (0 if it could not be read) and op, so that the error reply can
 * carry them; the other fields are then unspecified. ERRBUF (NULL allowed)
 * gets a one-line reason for the reply's message.
 */
int brim_wire_decode_req(const msgpack_object          *obj,
                         const struct brim_wire_limits *lim,
                         struct brim_req *req, char errbuf[BRIM_ERRBUF_LEN]);

/*
 * brim_wire_unpack() with brim_wire_req_max_objects(LIM), then
 * brim_wire_decode_req(). BODY is the frame body (LEN bytes, after the
 * header); REQ borrows from BODY and ZONE. Returns what those return; on
 * BRIM_EBADREQ from the check REQ->request_id is 0. Used by the node and by
 * the fuzz target.
 */
int brim_wire_parse_req(const char *body, size_t len,
                        const struct brim_wire_limits *lim, msgpack_zone *zone,
                        struct brim_req *req, char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Key I (< REQ->nkeys) of a decoded MGET, as *KEY (borrowed from the frame)
 * and *KEY_LEN. Its type and length were checked by the decoder.
 */
void brim_wire_req_key(const struct brim_req *req, uint32_t i, const char **key,
                       size_t *key_len);

/*
 * Append REQ as one frame to OUT. Sends REQ->op's arguments from the fields
 * its signature names; an optional argument is sent when its field is
 * non-zero or non-empty. An MGET sends REQ->keys (decoded objects; see
 * brim_wire_encode_mget() for plain arrays). Encoders do not apply limits:
 * the receiver does. Returns 0, BRIM_EINVAL (op not defined, or an MGET
 * without keys) or BRIM_ENOMEM; on error OUT is unchanged.
 */
int brim_wire_encode_req(struct brim_buf *out, const struct brim_req *req);

/*
 * Append an MGET of the NKEYS (>= 1) keys KEYS (borrowed) as one frame to
 * OUT. Returns 0, BRIM_EINVAL (NKEYS 0) or BRIM_ENOMEM; on error OUT is
 * unchanged.
 */
int brim_wire_encode_mget(struct brim_buf *out, uint64_t request_id,
                          uint64_t epoch, const struct brim_bytes *keys,
                          uint32_t nkeys);

/*
 * As brim_wire_encode_mget(), an MGAT: the same keys, and TTL_S (as GAT's
 * ttl_s) for every key that is there.
 */
int brim_wire_encode_mgat(struct brim_buf *out, uint64_t request_id,
                          uint64_t epoch, const struct brim_bytes *keys,
                          uint32_t nkeys, uint32_t ttl_s);

/* ---- stream entries ---- */

/*
 * Decode the stream entry O into *E, checked against LIM: an array of
 * exactly 5 elements, key bytes of 1 .. max_key_bytes, value bytes of at
 * most max_value_bytes, flags u32, cas u64, ttl u32. Returns 0,
 * BRIM_EBADREQ (shape or type), BRIM_EINVAL (key length) or BRIM_ETOOBIG.
 */
int brim_wire_entry_decode(const msgpack_object          *o,
                           const struct brim_wire_limits *lim,
                           struct brim_wire_entry        *e);

/* Entry I (< REQ->nentries) of a decoded STREAM_BATCH (checked). */
void brim_wire_req_entry(const struct brim_req *req, uint32_t i,
                         struct brim_wire_entry *e);

/* Append E as one msgpack array (not a frame) to OUT: 0 or BRIM_ENOMEM
 * (OUT may then hold part of it: truncate it back). */
int brim_wire_entry_pack(struct brim_buf *out, const struct brim_wire_entry *e);

/*
 * Append PULL's OK reply [0, REQUEST_ID, entry] as one frame to OUT.
 * Returns 0 or BRIM_ENOMEM (OUT unchanged).
 */
int brim_wire_encode_entry_rep(struct brim_buf *out, uint64_t request_id,
                               const struct brim_wire_entry *e);

/* ---- replies ---- */

/*
 * Decode the unpacked reply OBJ to a request of opcode OP into *REP. Any
 * status of 0 .. BRIM_STATUS_WIRE_MAX is a well-formed reply (REP->status is
 * its negation; ones this code does not know are kept as they are); an
 * error reply must carry a str message, MOVED an epoch and an owner, RETRY
 * may carry an epoch. Elements after the known ones are ignored, so a newer
 * peer may add fields. Returns 0, BRIM_EBADREQ (malformed: close the
 * connection), BRIM_EUNKNOWNOP (OP is not defined) or BRIM_ETOOBIG (a value
 * above LIM->max_value_bytes). On error only REP->request_id (0 if
 * unreadable) is meaningful; ERRBUF (NULL allowed) gets the reason.
 */
int brim_wire_decode_rep(const msgpack_object *obj, uint32_t op,
                         const struct brim_wire_limits *lim,
                         struct brim_rep *rep, char errbuf[BRIM_ERRBUF_LEN]);

/*
 * brim_wire_unpack() (no objects bound beyond the body's length), then
 * brim_wire_decode_rep(). REP borrows from BODY and ZONE.
 */
int brim_wire_parse_rep(const char *body, size_t len, uint32_t op,
                        const struct brim_wire_limits *lim, msgpack_zone *zone,
                        struct brim_rep *rep, char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Entry I (< REP->nentries) of a decoded MGET reply. Returns 0 for a hit,
 * with *VALUE (borrowed), *VALUE_LEN, *FLAGS and *CAS written;
 * BRIM_ENOTFOUND for a miss; or the entry's error status (BRIM_EMOVED,
 * BRIM_ERETRY, BRIM_ETOOBIG: did not fit this reply, ask again; ...).
 * Types were checked by the decoder.
 */
int brim_wire_rep_entry(const struct brim_rep *rep, uint32_t i,
                        const char **value, size_t *value_len, uint32_t *flags,
                        uint64_t *cas);

/*
 * Append REP, the reply to a request of opcode OP, as one frame to OUT. A
 * REP->status other than 0 sends [status, id, message] plus MOVED's epoch
 * and owner or RETRY's epoch; 0 sends OP's reply shape from REP's fields
 * (ENTRIES and STATS from decoded objects; a node builds those with the
 * brim_wire_mget_* and brim_wire_stats_* calls). Returns 0, BRIM_EINVAL (OP
 * not defined, a status outside -BRIM_STATUS_WIRE_MAX .. 0, missing
 * objects) or BRIM_ENOMEM; on error OUT is unchanged.
 */
int brim_wire_encode_rep(struct brim_buf *out, uint32_t op,
                         const struct brim_rep *rep);

/*
 * Append the reply [status, REQUEST_ID, message] (or [0, REQUEST_ID] when
 * STATUS is 0) as one frame to OUT. STATUS is 0 or a wire BRIM_E* code;
 * MESSAGE (MESSAGE_LEN bytes, borrowed) may be NULL for "". MOVED and RETRY
 * get epoch 0 and an empty owner: send real ones with
 * brim_wire_encode_rep(). This is also the error frame a connection sends
 * before closing on a bad frame. Returns 0,
 * BRIM_EINVAL (status not a wire code) or BRIM_ENOMEM (OUT unchanged).
 */
int brim_wire_encode_status(struct brim_buf *out, uint64_t request_id,
                            int status, const char *message,
                            size_t message_len);

/*
 * Start an MGET reply to REQUEST_ID with NENTRIES entries at the end of
 * OUT; *MARK is the frame's start. Append exactly NENTRIES entries with
 * brim_wire_mget_hit() and brim_wire_mget_miss(), then brim_frame_end(OUT,
 * *MARK). OUT->len - *MARK is the frame so far, for keeping a reply under
 * the peer's max_frame_bytes. On any error call brim_frame_abort(OUT,
 * *MARK). Each returns 0 or BRIM_ENOMEM.
 */
int brim_wire_mget_begin(struct brim_buf *out, uint64_t request_id,
                         uint32_t nentries, size_t *mark);

/*
 * As brim_wire_mget_begin(), for a reply that ends with the node's
 * committed EPOCH (0: none, the reply is [0, id, entries] as above): end
 * it with brim_wire_mget_end(OUT, EPOCH, *MARK), which appends EPOCH and
 * closes the frame. Each returns 0 or BRIM_ENOMEM.
 */
int brim_wire_mget_begin_epoch(struct brim_buf *out, uint64_t request_id,
                               uint32_t nentries, uint64_t epoch, size_t *mark);
int brim_wire_mget_end(struct brim_buf *out, uint64_t epoch, size_t mark);
/* An MGET hit: VALUE (VALUE_LEN bytes, copied), FLAGS, CAS. */
int brim_wire_mget_hit(struct brim_buf *out, const void *value,
                       size_t value_len, uint32_t flags, uint64_t cas);

/*
 * An MGET entry without a value: STATUS BRIM_ENOTFOUND sends nil, any
 * other wire code its number (BRIM_EMOVED, BRIM_ERETRY, BRIM_ETOOBIG).
 */
int brim_wire_mget_miss(struct brim_buf *out, int status);

/*
 * Start a STATS reply to REQUEST_ID holding a map of NPAIRS pairs at the
 * end of OUT; *MARK is the frame's start. Append exactly NPAIRS pairs with
 * the brim_wire_stats_* calls below, then brim_frame_end(OUT, *MARK); on
 * error brim_frame_abort(). NAME arguments are NUL-terminated and copied.
 * brim_wire_stats_map() opens a nested map whose NPAIRS pairs come next
 * (one level only; their values must be scalars). Each returns 0 or
 * BRIM_ENOMEM.
 */
int brim_wire_stats_begin(struct brim_buf *out, uint64_t request_id,
                          uint32_t npairs, size_t *mark);
int brim_wire_stats_u64(struct brim_buf *out, const char *name, uint64_t v);
int brim_wire_stats_f64(struct brim_buf *out, const char *name, double v);
int brim_wire_stats_str(struct brim_buf *out, const char *name, const char *s,
                        size_t len);
int brim_wire_stats_map(struct brim_buf *out, const char *name,
                        uint32_t npairs);

#endif /* BRIM_PROTO_WIRE_H */
