/*
 * client/bench/proto.h - brim-bench's protocol adapters: brim frames
 * (proto/), memcached's text protocol and Redis's RESP, behind one table of
 * functions so that the engine, the histogram and the verifier are the same
 * code for all three servers. An adapter encodes requests into a struct
 * brim_buf and parses one reply at a time from bytes; it does no I/O.
 * Replies arrive in request order on a connection for all three.
 */
#ifndef BRIM_CLIENT_BENCH_PROTO_H
#define BRIM_CLIENT_BENCH_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "client/bench/verify.h"
#include "client/bench/workload.h"
#include "proto/buf.h"

struct brim_wire_limits; /* proto/wire.h */

/* One request in flight on a connection, in its FIFO until the reply. */
struct brim_bench_req {
    uint64_t                start_ns;  /* latency origin: send or intended */
    uint64_t                sent_ns;   /* when it was queued: for timeouts */
    uint64_t                key;       /* global key index */
    uint64_t                id;        /* brim: the request id */
    uint64_t                epoch;     /* brim: the map epoch stamped */
    struct brim_bench_vread vread;     /* --verify GET: candidates at send */
    uint32_t                seq;       /* --verify SET, DEL: the write */
    uint32_t                ttl_s;     /* SET: TTL seconds, 0 for none */
    uint32_t                value_len; /* SET: the value's drawn size */
    uint8_t                 kind;      /* enum brim_bench_kind */
    uint8_t                 tries;     /* --coordinator: resends so far */
    uint8_t                 asking;    /* redis-cluster: ASKING goes first
                                        * (an ASK redirect's resend) */
};

/* One parsed reply. Pointers borrow from the parsed bytes. */
struct brim_bench_rep {
    int         status;          /* 0, BRIM_ENOTFOUND, or an error */
    const char *value;           /* GET hit */
    size_t      value_len;       /* bytes */
    const char *message;         /* error reply text, may be NULL */
    size_t      message_len;     /* bytes */
    int64_t     evictions;       /* STATS: the counter, -1 if absent */
    uint64_t    epoch;           /* brim MOVED, RETRY: the node's epoch */
    uint64_t    node_epoch;      /* brim: the committed epoch a data
                                    reply names; 0: none */
    uint32_t    max_key_bytes;   /* HELLO OK: the node's limits; */
    uint32_t    max_value_bytes; /* 0 for a protocol without HELLO */
    const char *addr;            /* redis MOVED, ASK: "host:port" named */
    size_t      addr_len;        /* bytes */
    uint32_t    slot;            /* redis MOVED, ASK: the hash slot */
    uint8_t     ask;             /* redis: 1 ASK, 0 MOVED */
};

/*
 * An adapter. STATUS in a reply is 0 for OK or a hit, BRIM_ENOTFOUND for a
 * miss (GET) or nothing to delete (DEL), and any other BRIM_E* for an error
 * reply, after which the connection goes on. The redis adapters say
 * BRIM_EMOVED for MOVED and ASK (REP's addr, slot and ask tell which) and
 * BRIM_ERETRY for TRYAGAIN and CLUSTERDOWN: the request did not run.
 */
struct brim_bench_proto {
    const char *name;         /* "brim", "memcached", "redis",
                               * "redis-cluster" */
    int         has_hello;    /* connections open with HELLO (and AUTH):
                               * the engine's struct brim_link says them
                               * (client/net/link.h) */
    int         default_port; /* the server's usual port */
    int         slots;        /* routes by CLUSTER SLOTS (redis-cluster):
                               * --server is a seed, cluster.c keeps the
                               * slot map */

    /* Per-connection state in *CTX (may be NULL). 0 or BRIM_ENOMEM. */
    int (*open)(void **ctx);
    void (*close)(void *ctx);

    /*
     * Append REQ (KEY, KEY_LEN bytes; a SET's VALUE, VALUE_LEN bytes; all
     * borrowed) to OUT. Returns 0 or BRIM_ENOMEM (OUT unchanged).
     */
    int (*encode)(struct brim_buf *out, void *ctx,
                  const struct brim_bench_req *req, const char *key,
                  size_t key_len, const char *value, size_t value_len);

    /*
     * Parse the reply to REQ at the start of BUF (LEN bytes). Returns the
     * bytes it took (> 0) with *REP filled, 0 when the reply is not
     * complete yet, or BRIM_EBADREPLY when the bytes cannot be a reply to
     * REQ: the connection is out of step and must close. A brim error
     * reply with request id 0 ("unknown": a frame the node refused from
     * its header, or could not unpack) is REQ's, since replies come in
     * order; the node may close the connection after it.
     */
    long (*parse)(void *ctx, const char *buf, size_t len,
                  const struct brim_bench_req *req, struct brim_bench_rep *rep);

    /*
     * Protocols with HELLO: the node's limits (borrowed for the call),
     * learnt by the connection's handshake, which bound the replies parsed
     * from now on (frame size, value size). NULL for the others.
     */
    void (*set_limits)(void *ctx, const struct brim_wire_limits *lim);
};

extern const struct brim_bench_proto brim_bench_proto_brim;
extern const struct brim_bench_proto brim_bench_proto_memcached;
extern const struct brim_bench_proto brim_bench_proto_redis;
extern const struct brim_bench_proto brim_bench_proto_redis_cluster;

/* The adapter called NAME ("brim", "memcached", "redis",
 * "redis-cluster"), or NULL. */
const struct brim_bench_proto *brim_bench_proto_find(const char *name);

/* Append the decimal digits of V to OUT's tail (room for 20 reserved). */
size_t brim_bench_put_u64(char *out, uint64_t v);

#endif /* BRIM_CLIENT_BENCH_PROTO_H */
