/*
 * proto/ops.h - the one list of brim's wire operations (proto/PROTOCOL.md):
 * opcode, argument counts and types, the shape of the OK reply, and what
 * kind of operation it is. The enum, the op table of proto/ops.c and the
 * decoder and encoders of proto/wire.c are all generated from it, so an op
 * is added in one place (libuv's and twemproxy's X-macro habit).
 */
#ifndef BRIM_PROTO_OPS_H
#define BRIM_PROTO_OPS_H

#include <stdint.h>

/*
 * Flags of an op (the last column of BRIM_OP_MAP).
 *   KEY         carries one key, routed by its partition (KEY_ARG says where)
 *   DATA        a data op: served only by the partition's owner under a fresh
 *               lease; MOVED and RETRY apply
 *   WRITE       may change the store (TTL changes included)
 *   IDEMPOTENT  safe to send again after a lost connection (DESIGN.md 5)
 *   ADMIN       only a connection that said role admin or coord may send it
 *   SECRET      a cluster op: where the receiver has a cluster secret, only a
 *               connection that proved it (AUTH, PROTOCOL.md 12) may send it
 */
#define BRIM_OPF_KEY 0x01u
#define BRIM_OPF_DATA 0x02u
#define BRIM_OPF_WRITE 0x04u
#define BRIM_OPF_IDEMPOTENT 0x08u
#define BRIM_OPF_ADMIN 0x10u
#define BRIM_OPF_SECRET 0x20u

/* Shorthands for the table below only. */
#define BRIM_OPF_RD_ (BRIM_OPF_KEY | BRIM_OPF_DATA | BRIM_OPF_IDEMPOTENT)
#define BRIM_OPF_WR_ (BRIM_OPF_KEY | BRIM_OPF_DATA | BRIM_OPF_WRITE)

/*
 * The shape of an op's OK reply, [0, request_id, ...] (PROTOCOL.md):
 *   EMPTY    nothing more
 *   VALUE    value, flags, cas                       (GET, GAT)
 *   CAS      cas of the stored item                  (SET family)
 *   NUMBER   new value, cas                          (INCR, DECR)
 *   ENTRIES  one entry per key, in request order     (MGET, MGAT)
 *   STATS    a map of name to value                  (STATS)
 *   HELLO    the peer's hello, epoch and limits      (HELLO)
 *   TOPO     a topology, proto/topo.h               (JOIN, MAP_FETCH, ...)
 *   EPOCH    epoch u64, lease_ms u32, [flush, term]  (HEARTBEAT, LEAVE)
 *   OBJECT   one msgpack object (array or map)       (MEMBERS, PLAN, ...)
 *   AUTH     nonce_s, mac_s (CHALLENGE) or nothing   (AUTH)
 */
enum brim_rep_shape {
    BRIM_REP_EMPTY = 0,
    BRIM_REP_VALUE,
    BRIM_REP_CAS,
    BRIM_REP_NUMBER,
    BRIM_REP_ENTRIES,
    BRIM_REP_STATS,
    BRIM_REP_HELLO,
    BRIM_REP_TOPO,
    BRIM_REP_EPOCH,
    BRIM_REP_OBJECT,
    BRIM_REP_AUTH
};

/*
 * XX(NAME, code, min_args, max_args, sig, key_arg, reply, flags)
 *
 * Arguments are the elements after [op, request_id, epoch]. SIG spells their
 * types in order, one letter each (max_args letters; the ones past min_args
 * are optional and are sent only when non-zero or non-empty):
 *   k key bytes 1..max_key      v value bytes 0..max_value
 *   t ttl_s u32                 f client flags u32
 *   c cas u64                   d delta u64
 *   K array of 1..max_mget keys w delay_s u32
 *   s stats section bytes 0..BRIM_WIRE_SECTION_MAX
 *   P protocol version u32      C cluster id u64
 *   R role u32 (enum brim_role) I incarnation u64
 *   n node name bytes 0..BRIM_NAME_MAX
 *   N member name bytes 0..BRIM_NAME_MAX (the receiver checks it further)
 *   a address text 0..BRIM_ADDR_MAX      W weight_ppm u32
 *   E epoch argument u64 (JOIN's optional one: the last committed epoch
 *     that held the joiner, sent only when there is one)
 *                                        F small u32 (force, kind)
 *   T a topology, one msgpack array, borrowed (brim_topo_decode() it)
 *   M a msgpack map, borrowed (HEARTBEAT's stats)
 *   p partition u32 (below the receiver's partition count)
 *   u count u64 (STREAM_END's entries sent; LEASE_CONFIRM's pending
 *     epoch, the one the asker acknowledged)
 *   m flush mark u64, Unix ms (FLUSH's time; a stream's applied flush)
 *   B an array of 0..max_batch_entries stream entries (PROTOCOL.md 11),
 *     each checked (brim_wire_entry_decode()), borrowed
 *   x AUTH's nonce or MAC: bytes of exactly BRIM_WIRE_AUTH_BYTES
 *   r a coordinator's term u64 (etcd mode: its leadership's election key
 *     revision; 0 and not sent in file mode; PROTOCOL.md 10.6)
 * KEY_ARG is the argument index of the routing key, -1 when there is none.
 * Codes are stable: never renumber or reuse one.
 */
#define BRIM_OP_MAP(XX)                                                        \
    XX(HELLO, 1, 4, 5, "PCRIn", -1, BRIM_REP_HELLO, BRIM_OPF_IDEMPOTENT)       \
    XX(PING, 2, 0, 0, "", -1, BRIM_REP_EMPTY, BRIM_OPF_IDEMPOTENT)             \
    XX(STATS, 3, 0, 1, "s", -1, BRIM_REP_STATS, BRIM_OPF_IDEMPOTENT)           \
    XX(GET, 10, 1, 1, "k", 0, BRIM_REP_VALUE, BRIM_OPF_RD_)                    \
    XX(MGET, 11, 1, 1, "K", -1, BRIM_REP_ENTRIES,                              \
       BRIM_OPF_DATA | BRIM_OPF_IDEMPOTENT)                                    \
    XX(GAT, 12, 2, 2, "kt", 0, BRIM_REP_VALUE, BRIM_OPF_RD_ | BRIM_OPF_WRITE)  \
    XX(SET, 13, 4, 4, "kvtf", 0, BRIM_REP_CAS,                                 \
       BRIM_OPF_WR_ | BRIM_OPF_IDEMPOTENT)                                     \
    XX(ADD, 14, 4, 4, "kvtf", 0, BRIM_REP_CAS, BRIM_OPF_WR_)                   \
    XX(REPLACE, 15, 4, 4, "kvtf", 0, BRIM_REP_CAS, BRIM_OPF_WR_)               \
    XX(CAS, 16, 5, 5, "kvtfc", 0, BRIM_REP_CAS, BRIM_OPF_WR_)                  \
    XX(APPEND, 17, 2, 2, "kv", 0, BRIM_REP_CAS, BRIM_OPF_WR_)                  \
    XX(PREPEND, 18, 2, 2, "kv", 0, BRIM_REP_CAS, BRIM_OPF_WR_)                 \
    XX(DEL, 19, 1, 1, "k", 0, BRIM_REP_EMPTY,                                  \
       BRIM_OPF_WR_ | BRIM_OPF_IDEMPOTENT)                                     \
    XX(TOUCH, 20, 2, 2, "kt", 0, BRIM_REP_EMPTY,                               \
       BRIM_OPF_WR_ | BRIM_OPF_IDEMPOTENT)                                     \
    XX(INCR, 21, 2, 2, "kd", 0, BRIM_REP_NUMBER, BRIM_OPF_WR_)                 \
    XX(DECR, 22, 2, 2, "kd", 0, BRIM_REP_NUMBER, BRIM_OPF_WR_)                 \
    XX(FLUSH, 23, 0, 2, "wm", -1, BRIM_REP_EMPTY,                              \
       BRIM_OPF_WRITE | BRIM_OPF_ADMIN | BRIM_OPF_SECRET)                      \
    XX(MGAT, 24, 2, 2, "Kt", -1, BRIM_REP_ENTRIES,                             \
       BRIM_OPF_DATA | BRIM_OPF_WRITE | BRIM_OPF_IDEMPOTENT)                   \
    XX(JOIN, 32, 4, 5, "NaWIE", -1, BRIM_REP_TOPO, BRIM_OPF_SECRET)            \
    XX(LEAVE, 33, 2, 2, "NF", -1, BRIM_REP_EPOCH,                              \
       BRIM_OPF_ADMIN | BRIM_OPF_SECRET)                                       \
    XX(HEARTBEAT, 34, 2, 3, "NIM", -1, BRIM_REP_EPOCH,                         \
       BRIM_OPF_IDEMPOTENT | BRIM_OPF_SECRET)                                  \
    XX(EPOCH_PROPOSE, 35, 1, 2, "Tr", -1, BRIM_REP_EMPTY,                      \
       BRIM_OPF_ADMIN | BRIM_OPF_SECRET)                                       \
    XX(EPOCH_COMMIT, 37, 1, 2, "Er", -1, BRIM_REP_EMPTY,                       \
       BRIM_OPF_ADMIN | BRIM_OPF_IDEMPOTENT | BRIM_OPF_SECRET)                 \
    XX(EPOCH_ABORT, 38, 1, 2, "Er", -1, BRIM_REP_EMPTY,                        \
       BRIM_OPF_ADMIN | BRIM_OPF_IDEMPOTENT | BRIM_OPF_SECRET)                 \
    XX(MAP_FETCH, 39, 0, 0, "", -1, BRIM_REP_TOPO, BRIM_OPF_IDEMPOTENT)        \
    XX(SUBSCRIBE, 40, 1, 1, "E", -1, BRIM_REP_TOPO, BRIM_OPF_IDEMPOTENT)       \
    XX(MEMBERS, 42, 0, 0, "", -1, BRIM_REP_OBJECT, BRIM_OPF_IDEMPOTENT)        \
    XX(PLAN, 43, 2, 3, "FNW", -1, BRIM_REP_OBJECT,                             \
       BRIM_OPF_ADMIN | BRIM_OPF_IDEMPOTENT | BRIM_OPF_SECRET)                 \
    XX(LEASE_CONFIRM, 44, 1, 2, "Eu", -1, BRIM_REP_EPOCH,                      \
       BRIM_OPF_IDEMPOTENT | BRIM_OPF_SECRET)                                  \
    XX(AUTH, 45, 2, 2, "Fx", -1, BRIM_REP_AUTH, 0)                             \
    XX(CLUSTER_STATS, 46, 0, 0, "", -1, BRIM_REP_OBJECT, BRIM_OPF_IDEMPOTENT)  \
    XX(STREAM_BEGIN, 64, 2, 2, "Ep", -1, BRIM_REP_EMPTY, BRIM_OPF_SECRET)      \
    XX(STREAM_BATCH, 65, 3, 4, "EpBm", -1, BRIM_REP_EMPTY, BRIM_OPF_SECRET)    \
    XX(STREAM_END, 66, 3, 3, "Epu", -1, BRIM_REP_EMPTY, BRIM_OPF_SECRET)       \
    XX(COMPLETE, 67, 2, 2, "Ep", -1, BRIM_REP_EMPTY,                           \
       BRIM_OPF_IDEMPOTENT | BRIM_OPF_SECRET)                                  \
    XX(FORWARD_GET, 68, 3, 4, "Epkm", -1, BRIM_REP_VALUE,                      \
       BRIM_OPF_IDEMPOTENT | BRIM_OPF_SECRET)                                  \
    XX(PULL, 69, 3, 4, "Epkm", -1, BRIM_REP_OBJECT,                            \
       BRIM_OPF_IDEMPOTENT | BRIM_OPF_SECRET)                                  \
    XX(STREAM_QUERY, 71, 2, 2, "Ep", -1, BRIM_REP_EMPTY,                       \
       BRIM_OPF_IDEMPOTENT | BRIM_OPF_SECRET)

/*
 * XX(NAME, code): opcodes reserved but never defined (the design's first
 * sketch named them; PROTOCOL.md sections 10 and 11 define the membership
 * and migration ops above instead). A decoder answers them UNKNOWNOP,
 * like any code it does not know; they are never reused.
 */
#define BRIM_OP_RESERVED_MAP(XX)                                               \
    XX(EPOCH_ACK, 36)                                                          \
    XX(MAP_PUSH, 41)                                                           \
    XX(PROGRESS, 70)

/* Every opcode is below this bound (the op table's length). */
#define BRIM_OP_CODE_LIMIT 128

/* The opcodes. BRIM_OP_NONE (0) is never valid on the wire. */
enum brim_op {
    BRIM_OP_NONE = 0,
#define BRIM_OP_ENUM(name, code, mina, maxa, sig, karg, rep, fl)               \
    BRIM_OP_##name = (code),
    BRIM_OP_MAP(BRIM_OP_ENUM)
#undef BRIM_OP_ENUM
#define BRIM_OP_RESERVED_ENUM(name, code) BRIM_OP_##name = (code),
    BRIM_OP_RESERVED_MAP(BRIM_OP_RESERVED_ENUM)
#undef BRIM_OP_RESERVED_ENUM
};

/* Who a connection says it is in its HELLO (PROTOCOL.md, "HELLO"). */
enum brim_role {
    BRIM_ROLE_CLIENT = 1, /* libbrim, brim-bench */
    BRIM_ROLE_NODE = 2,   /* brim-node, to a peer or the coord */
    BRIM_ROLE_COORD = 3,  /* brim-coord */
    BRIM_ROLE_ADMIN = 4   /* brimctl: may also send admin ops */
};

/* The lowest and highest role values. */
#define BRIM_ROLE_MIN BRIM_ROLE_CLIENT
#define BRIM_ROLE_MAX BRIM_ROLE_ADMIN

/* One row of BRIM_OP_MAP. */
struct brim_op_info {
    const char *name;     /* "GET" */
    const char *sig;      /* argument types, see BRIM_OP_MAP */
    uint8_t     code;     /* enum brim_op */
    uint8_t     min_args; /* required arguments */
    uint8_t     max_args; /* required plus optional arguments */
    int8_t      key_arg;  /* argument index of the key, or -1 */
    uint8_t     reply;    /* enum brim_rep_shape of the OK reply */
    uint8_t     flags;    /* BRIM_OPF_* */
};

/*
 * The row of opcode CODE, or NULL when CODE is not a defined op (unknown or
 * only reserved). The returned row is static; never free it.
 */
const struct brim_op_info *brim_op_info(uint64_t code);

/*
 * The name of opcode CODE ("GET", "JOIN"), reserved ones included, or
 * "UNKNOWN". The string is static.
 */
const char *brim_op_name(uint64_t code);

#endif /* BRIM_PROTO_OPS_H */
