/*
 * client/bench/rcluster.h - brim-bench --target redis-cluster, the parts
 * without I/O: a key's hash slot (CRC16 XMODEM of the key, or of its
 * {hash tag}, modulo 16384: redis.io's "Redis cluster specification"),
 * the slot map read from a CLUSTER SLOTS reply, and the MOVED and ASK
 * error replies. "Slot" here is Redis Cluster's own word for its unit of
 * placement (brim's is the partition); it is kept so that the code reads
 * as the Redis documentation does.
 */
#ifndef BRIM_CLIENT_BENCH_RCLUSTER_H
#define BRIM_CLIENT_BENCH_RCLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include <brim/status.h>

/* Hash slots of a Redis Cluster. */
#define BRIM_BENCH_RCLUSTER_SLOTS 16384

/* Masters a slot map holds at most (brim-bench's node table). */
#define BRIM_BENCH_RCLUSTER_MASTERS_MAX 64

/* Longest "host:port" of a master, bytes. */
#define BRIM_BENCH_RCLUSTER_ADDR_MAX 255

/* owner[] of a slot that no master serves. */
#define BRIM_BENCH_RCLUSTER_NONE 0xffff

/* A cluster's slot map, as one CLUSTER SLOTS reply tells it. About 48 KiB:
 * allocate it, do not put it on a stack. */
struct brim_bench_rcluster_map {
    uint16_t owner[BRIM_BENCH_RCLUSTER_SLOTS]; /* index in masters, or
                                                * BRIM_BENCH_RCLUSTER_NONE */
    uint32_t nmasters;                         /* masters[0 .. nmasters) */
    uint32_t nranges;                          /* ranges in the reply */
    char     masters[BRIM_BENCH_RCLUSTER_MASTERS_MAX]
                [BRIM_BENCH_RCLUSTER_ADDR_MAX + 1]; /* "host:port" */
};

/*
 * The CRC16 of LEN bytes at BUF (borrowed; NULL allowed when LEN is 0):
 * CCITT polynomial 0x1021, initial value 0, no reflection, no final XOR
 * (the XMODEM variant Redis Cluster uses). CRC16("123456789") = 0x31C3.
 */
uint16_t brim_bench_rcluster_crc16(const void *buf, size_t len);

/*
 * The hash slot of KEY (LEN bytes, borrowed): 0 .. 16383. When KEY holds
 * a '{' followed later by a '}' with at least one byte between them, only
 * the bytes between the first '{' and the first '}' after it are hashed
 * (the hash tag), so "{user1}.a" and "{user1}.b" share a slot; an empty
 * tag ("{}x") hashes the whole key.
 */
uint32_t brim_bench_rcluster_slot(const char *key, size_t len);

/*
 * Read the CLUSTER SLOTS reply at BUF (LEN bytes, borrowed; the whole
 * value) into *MAP: each entry [first, last, [ip, port, id...], replicas
 * ...] gives slots FIRST .. LAST to the master of its first node array.
 * A master whose IP is empty (a node that does not know its own address)
 * takes DEFAULT_HOST (borrowed). Masters are numbered in order of first
 * appearance. Returns 0; BRIM_ENOTFOUND when the reply is an empty array
 * (no slot assigned: the cluster is not set up); BRIM_EBADREPLY when BUF
 * is not such a reply (ERRBUF, if not NULL, says what is wrong: "entry 3:
 * slot 17000 out of range"); BRIM_ENOSPACE past
 * BRIM_BENCH_RCLUSTER_MASTERS_MAX masters. *MAP is then partly written.
 */
int brim_bench_rcluster_map_parse(const char *buf, size_t len,
                                  const char                     *default_host,
                                  struct brim_bench_rcluster_map *map,
                                  char errbuf[BRIM_ERRBUF_LEN]);

/* What a MOVED or ASK error reply says. Pointers borrow from the reply. */
struct brim_bench_rcluster_redirect {
    int         ask;      /* 1: ASK (this request only), 0: MOVED */
    uint32_t    slot;     /* 0 .. 16383 */
    const char *addr;     /* "host:port" of the node named; the host may
                           * be empty (":port": the node has no address
                           * to give, use the one it was reached on) */
    size_t      addr_len; /* bytes */
};

/*
 * Read the error reply text MSG (LEN bytes, borrowed, without the '-'
 * and the CRLF) as "MOVED <slot> <host>:<port>" or "ASK <slot>
 * <host>:<port>" into *R. Returns 0; BRIM_ENOTFOUND (R untouched) when MSG
 * is another error; BRIM_EBADREPLY when it starts with MOVED or ASK but
 * the rest is not a slot and an address.
 */
int brim_bench_rcluster_redirect_parse(const char *msg, size_t len,
                                       struct brim_bench_rcluster_redirect *r);

/*
 * Does the error reply text MSG (LEN bytes) say that the request may
 * succeed if sent again a little later, unchanged: TRYAGAIN (a multi-key
 * request during a resharding) or CLUSTERDOWN (the cluster cannot serve
 * now)? 1 or 0.
 */
int brim_bench_rcluster_retryable(const char *msg, size_t len);

#endif /* BRIM_CLIENT_BENCH_RCLUSTER_H */
