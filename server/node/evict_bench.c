/*
 * server/node/evict_bench.c - brim-evict-bench: the hit ratio of the node's
 * store under SIEVE against plain LRU, on the same Zipf-distributed request
 * stream, with the cache holding a fixed fraction of the key space. Each
 * request is a GET, and a miss is followed by a SET (cache-aside), as a
 * read-through cache sees it. Prints figures; asserts nothing.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/hash.h"
#include "common/parse.h"
#include "common/rng.h"
#include "common/zipf.h"
#include "server/node/store.h"

/* Command-line settings. */
struct evict_opts {
    uint64_t keys;           /* key space */
    uint64_t requests;       /* requests after warm-up */
    uint64_t warmup;         /* requests not counted */
    double   zipf;           /* exponent */
    double   cache_fraction; /* cache size / key space, by items */
    uint32_t value_bytes;    /* value size */
    uint64_t seed;           /* workload seed */
};

static struct brim_store *bench_store; /* for bench_mem_used() */

/* The store's item bytes: the cache limit then counts items alone, so
 * both policies hold the same number of equal-sized items. */
static size_t
bench_mem_used(void)
{
    struct brim_store_stats st;

    brim_store_get_stats(bench_store, &st);
    return st.item_bytes;
}

static double
run_policy(const struct evict_opts *o, enum brim_evict_policy policy,
           size_t limit, uint64_t *evictions)
{
    struct brim_store_config cfg;
    struct brim_store_stats  st;
    const struct brim_item  *it;
    struct brim_zipf         z;
    struct brim_rng          rng;
    char                     key[32], *val;
    uint64_t                 i, rank, h, hits = 0, total;
    int                      klen;

    memset(&cfg, 0, sizeof(cfg));
    cfg.npartitions = 1024;
    cfg.mem_limit_bytes = limit;
    cfg.max_item_bytes = 1 << 20;
    cfg.policy = policy;
    cfg.mem_used = bench_mem_used;
    bench_store = brim_store_new(&cfg);
    val = calloc(1, o->value_bytes);
    if (bench_store == NULL || val == NULL
        || brim_zipf_init(&z, o->keys, o->zipf) != 0)
    {
        fprintf(stderr, "brim-evict-bench: setup failed\n");
        exit(1);
    }
    brim_rng_seed(&rng, o->seed); /* the same stream for both policies */
    total = o->warmup + o->requests;
    for (i = 0; i < total; i++) {
        /* Name a rank by a bijective mix of it, so popularity is not
         * ordered by name (or by partition). */
        rank = brim_zipf_next(&z, &rng);
        klen = snprintf(key, sizeof(key), "key:%016" PRIx64,
                        brim_splitmix64(&rank));
        h = brim_hash_key(0, key, (size_t) klen);
        if (brim_store_get(bench_store, h, key, (size_t) klen, 1, &it) == 0) {
            hits += i >= o->warmup;
        } else if (brim_store_set(bench_store, BRIM_STORE_SET, h, key,
                                  (size_t) klen, val, o->value_bytes, 0, 0, 0,
                                  1, NULL)
                   != 0)
        {
            fprintf(stderr, "brim-evict-bench: set failed\n");
            exit(1);
        }
    }
    brim_store_get_stats(bench_store, &st);
    *evictions = st.evictions;
    brim_store_free(bench_store);
    free(val);
    return (double) hits / (double) o->requests;
}

static void
usage(FILE *out)
{
    fprintf(
        out,
        "usage: brim-evict-bench [options]\n"
        "Hit ratio of SIEVE against LRU in brim-node's store on one Zipf\n"
        "request stream (GET, then SET on a miss).\n"
        "  --keys K            key space (default 1000000)\n"
        "  --requests R        measured requests (default 10000000)\n"
        "  --warmup W          requests before measuring (default 2000000)\n"
        "  --zipf S            Zipf exponent (default 0.99)\n"
        "  --cache-fraction F  cache size as a fraction of the key space\n"
        "                      (default 0.10)\n"
        "  --value-bytes B     value size (default 100)\n"
        "  --seed N            workload seed (default 1)\n");
}

int
main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"keys", required_argument, NULL, 'k'},
        {"requests", required_argument, NULL, 'r'},
        {"warmup", required_argument, NULL, 'w'},
        {"zipf", required_argument, NULL, 'z'},
        {"cache-fraction", required_argument, NULL, 'c'},
        {"value-bytes", required_argument, NULL, 'v'},
        {"seed", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct evict_opts o = {.keys = 1000000,
                           .requests = 10000000,
                           .warmup = 2000000,
                           .zipf = 0.99,
                           .cache_fraction = 0.10,
                           .value_bytes = 100,
                           .seed = 1};
    uint64_t          ev_sieve, ev_lru;
    double            sieve, lru;
    size_t            item, limit;
    int               ch, rc;

    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        rc = 0;
        switch (ch) {
        case 'k':
            rc = brim_parse_u64(optarg, 0, UINT64_MAX, &o.keys);
            break;
        case 'r':
            rc = brim_parse_u64(optarg, 0, UINT64_MAX, &o.requests);
            break;
        case 'w':
            rc = brim_parse_u64(optarg, 0, UINT64_MAX, &o.warmup);
            break;
        case 'z':
            rc = brim_parse_double(optarg, 0, 100, &o.zipf);
            break;
        case 'c':
            rc = brim_parse_double(optarg, 0, 1, &o.cache_fraction);
            break;
        case 'v':
            rc = brim_parse_u32(optarg, 0, 1u << 20, &o.value_bytes);
            break;
        case 's':
            rc = brim_parse_u64(optarg, 0, UINT64_MAX, &o.seed);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            /* getopt_long has said which option; one line more, as the
             * other binaries (not the whole usage). */
            fprintf(stderr, "(brim-evict-bench --help for usage)\n");
            return 2;
        }
        if (rc != 0) {
            fprintf(stderr, "brim-evict-bench: bad value \"%s\"\n", optarg);
            return 2;
        }
    }
    if (o.keys < 2 || o.requests == 0 || o.zipf <= 0.0
        || o.cache_fraction <= 0.0 || o.cache_fraction >= 1.0)
    {
        fprintf(stderr,
                "brim-evict-bench: need --keys >= 2, --requests > 0,"
                " --zipf > 0 and 0 < --cache-fraction < 1\n");
        return 2;
    }
    /* Size the limit in items: the allocated size of one item of the
     * longest key, times the cache's share of the key space. */
    item = brim_item_alloc_bytes(24, o.value_bytes, 0, 0);
    item = (item + 8 + 15) & ~(size_t) 15; /* glibc chunk rounding */
    limit = (size_t) ((double) o.keys * o.cache_fraction) * item;

    sieve = run_policy(&o, BRIM_EVICT_SIEVE, limit, &ev_sieve);
    lru = run_policy(&o, BRIM_EVICT_LRU, limit, &ev_lru);
    printf(
        "brim-evict-bench: keys=%" PRIu64 " zipf=%.2f cache=%.0f%% of keys"
        " requests=%" PRIu64 " (after %" PRIu64 " warm-up) seed=%" PRIu64 "\n",
        o.keys, o.zipf, 100.0 * o.cache_fraction, o.requests, o.warmup, o.seed);
    printf("policy  hit_ratio  miss_ratio  evictions\n");
    printf("sieve   %.4f     %.4f      %" PRIu64 "\n", sieve, 1.0 - sieve,
           ev_sieve);
    printf("lru     %.4f     %.4f      %" PRIu64 "\n", lru, 1.0 - lru, ev_lru);
    printf("sieve misses %.1f%% fewer than lru\n",
           100.0 * ((1.0 - lru) - (1.0 - sieve)) / (1.0 - lru));
    return 0;
}
