/*
 * client/bench/workload.h - what brim-bench asks for: the op mix, key
 * choice (uniform, or Zipf by Gray et al. through common/zipf.h), value
 * sizes, the text of keys, and under --verify values that carry their
 * key and write sequence number. Pure: no I/O, one instance per thread.
 */
#ifndef BRIM_CLIENT_BENCH_WORKLOAD_H
#define BRIM_CLIENT_BENCH_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include <brim/status.h>

#include "common/rng.h"
#include "common/zipf.h"

/* The kinds of requests brim-bench sends. */
enum brim_bench_kind {
    BRIM_BENCH_GET = 0,
    BRIM_BENCH_SET,
    BRIM_BENCH_DEL,
    BRIM_BENCH_HELLO, /* brim only: opens every connection */
    BRIM_BENCH_STATS, /* the evictions probe */
    BRIM_BENCH_SLOTS  /* redis-cluster: CLUSTER SLOTS, the slot map */
};

/* Longest key brim-bench makes, bytes (memcached's and brim's limit). */
#define BRIM_BENCH_KEY_MAX 250

/* Most keys in a key space: indices have at most 12 digits. */
#define BRIM_BENCH_KEYS_MAX 1000000000000ull

/* Bytes of the header a --verify value starts with, at most. */
#define BRIM_BENCH_VHDR_MAX 48

/* One operation to send. */
struct brim_bench_op {
    uint64_t key;       /* global key index, 0 .. keys - 1 */
    uint64_t start_ns;  /* intended send time (--rate), or 0 */
    uint32_t value_len; /* SET: value bytes */
    uint32_t ttl_s;     /* SET: TTL, 0 for none */
    uint8_t  kind;      /* enum brim_bench_kind */
};

/*
 * The op mix of one thread. The thread owns the keys OFFSET, OFFSET +
 * STRIDE, ... (local index L is key L * STRIDE + OFFSET), so that the
 * verifier of each thread sees every write to its keys.
 */
struct brim_bench_mix {
    uint64_t         del_below; /* draw < this: DEL (53-bit scale) */
    uint64_t         get_below; /* draw < this: GET, else SET */
    uint64_t         ttl_below; /* a SET has a TTL if draw < this */
    uint64_t         nlocal;    /* keys this thread owns, >= 1 */
    uint64_t         stride;    /* threads */
    uint64_t         offset;    /* this thread's index */
    uint32_t         value_min; /* bytes */
    uint32_t         value_max; /* bytes, >= value_min */
    uint32_t         ttl_min_s; /* short TTLs, seconds */
    uint32_t         ttl_max_s;
    int              use_zipf; /* 0: uniform */
    struct brim_zipf zipf;     /* over nlocal ranks */
};

/* The parameters of a mix (from the command line). */
struct brim_bench_mix_conf {
    uint64_t keys;      /* whole key space */
    uint32_t threads;   /* key owners */
    uint32_t thread;    /* this one, < threads */
    double   get_ratio; /* GETs among GET and SET */
    double   del_ratio; /* DELs among all ops */
    double   ttl_ratio; /* SETs with a short TTL */
    double   zipf_s;    /* 0: uniform */
    uint32_t value_min;
    uint32_t value_max;
    uint32_t ttl_min_s;
    uint32_t ttl_max_s;
};

/*
 * Prepare M from CONF: ratios within [0, 1], CONF->thread < CONF->threads
 * <= CONF->keys. Zipf setup costs O(keys / threads). Returns 0 or
 * BRIM_EINVAL.
 */
int brim_bench_mix_init(struct brim_bench_mix            *m,
                        const struct brim_bench_mix_conf *conf);

/* Draw the next op of M into *OP (start_ns 0). Uses RNG. */
void brim_bench_mix_next(const struct brim_bench_mix *m, struct brim_rng *rng,
                         struct brim_bench_op *op);

/* A value length for a SET under M. */
uint32_t brim_bench_mix_value_len(const struct brim_bench_mix *m,
                                  struct brim_rng             *rng);

/* The local index of global KEY in M, or global of LOCAL. */
uint64_t brim_bench_mix_local(const struct brim_bench_mix *m, uint64_t key);
uint64_t brim_bench_mix_global(const struct brim_bench_mix *m, uint64_t local);

/*
 * The digits key KEYS - 1 needs: the smallest key size that makes every
 * key of KEYS distinct.
 */
uint32_t brim_bench_key_min_size(uint64_t keys);

/*
 * Write the text of KEY (< BRIM_BENCH_KEYS_MAX) into BUF: exactly SIZE
 * bytes (>= the digits of KEY, <= BRIM_BENCH_KEY_MAX), the --key-prefix
 * first when one is set (SIZE counts it), then the decimal index padded
 * with zeros on the left, behind "key:" when SIZE is 16 or more and no
 * prefix is set (so --key-size 16 makes redis-benchmark -r's keys).
 * Returns SIZE.
 */
size_t brim_bench_key_format(char *buf, uint64_t key, uint32_t size);

/*
 * --key-prefix: make every key start with PREFIX (NUL-terminated, copied;
 * "" for none). Call it before any thread starts. Returns 0, or
 * BRIM_EINVAL with the reason in ERRBUF when PREFIX has
 * BRIM_BENCH_KEY_MAX bytes or more (no room left for the index).
 */
int brim_bench_key_prefix_set(const char *prefix, char errbuf[BRIM_ERRBUF_LEN]);

/* The bytes of the --key-prefix (0: none). */
size_t brim_bench_key_prefix_len(void);

/*
 * Write a --verify value of LEN bytes into BUF (room for
 * BRIM_BENCH_VHDR_MAX bytes at least, and LEN): the header
 * "bb:RUN:KEY:SEQ:" in hex, RUN the run's id, then '.' to LEN. If LEN is
 * shorter than the header the value is the header alone. Returns the
 * value's length.
 */
size_t brim_bench_value_build(char *buf, size_t len, uint32_t run, uint64_t key,
                              uint32_t seq);

/*
 * The sequence number in VALUE (LEN bytes, borrowed) written by run RUN
 * for KEY; -1 when the value does not have that form, or belongs to
 * another run or key.
 */
int64_t brim_bench_value_parse(const char *value, size_t len, uint32_t run,
                               uint64_t key);

#endif /* BRIM_CLIENT_BENCH_WORKLOAD_H */
