/*
 * sim/placement_bench.c - brim-placement-bench: what routing and placement
 * cost on this machine, for docs/performance.md. It compares, in one run,
 * key-to-owner lookups through the partition map (one hash, one array
 * index) against a binary search of the token ring (the ketama way), and
 * times computing a partition map with the replace and rebalance rules.
 * It prints figures; nothing here asserts a speed.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/hash.h"
#include "common/parse.h"
#include "common/map.h"
#include "common/placement.h"
#include "common/ring.h"

#define BENCH_REPEATS 7    /* medians over this many runs */
#define BENCH_KEY_BYTES 16 /* "key:%011u" */

/* One benchmark setting, from the command line. */
struct bench_opts {
    uint32_t nodes;      /* N */
    uint32_t tokens;     /* V */
    uint32_t partitions; /* P */
    uint64_t eps_ppm;    /* cap slack */
    uint32_t keys;       /* distinct keys looked up */
    uint32_t rounds;     /* passes over the keys per run */
    uint64_t seed;       /* cluster seed */
};

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : (x > y ? 1 : 0);
}

static double
median(double *v, int n)
{
    qsort(v, (size_t) n, sizeof(*v), cmp_double);
    return v[n / 2];
}

static void
usage(FILE *out)
{
    fprintf(
        out,
        "usage: brim-placement-bench [options]\n"
        "Measures key-to-owner lookups through the partition map against a\n"
        "binary search of the token ring, and the time to compute a map.\n"
        "  --nodes N        nodes (default 200)\n"
        "  --tokens V       tokens per node (default 160)\n"
        "  --partitions P   partitions, a power of two (default 65536)\n"
        "  --eps E          cap slack, decimal (default 0.05)\n"
        "  --keys K         distinct keys looked up (default 1000000)\n"
        "  --rounds R       passes over the keys per run (default 5)\n"
        "  --seed S         cluster seed (default 1)\n"
        "  --help           this text\n"
        "Every figure is the median of %d runs.\n",
        BENCH_REPEATS);
}

static int
parse_u32(const char *flag, const char *text, uint32_t *out)
{
    if (brim_parse_u32(text, 1, UINT32_MAX, out) != 0) {
        fprintf(stderr,
                "brim-placement-bench: %s: \"%s\" is not a whole "
                "number from 1 to %" PRIu32 "\n",
                flag, text, UINT32_MAX);
        return -1;
    }
    return 0;
}

static int
parse_opts(int argc, char **argv, struct bench_opts *o)
{
    static const struct option longopts[] = {
        {"nodes", required_argument, NULL, 'n'},
        {"tokens", required_argument, NULL, 'v'},
        {"partitions", required_argument, NULL, 'p'},
        {"eps", required_argument, NULL, 'e'},
        {"keys", required_argument, NULL, 'k'},
        {"rounds", required_argument, NULL, 'r'},
        {"seed", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    char errbuf[BRIM_ERRBUF_LEN];
    int  ch, rc = 0;

    *o = (struct bench_opts){.nodes = 200,
                             .tokens = 160,
                             .partitions = 65536,
                             .eps_ppm = 50000,
                             .keys = 1000000,
                             .rounds = 5,
                             .seed = 1};
    while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (ch) {
        case 'n':
            rc = parse_u32("--nodes", optarg, &o->nodes);
            break;
        case 'v':
            rc = parse_u32("--tokens", optarg, &o->tokens);
            break;
        case 'p':
            rc = parse_u32("--partitions", optarg, &o->partitions);
            break;
        case 'e':
            rc = brim_eps_parse(optarg, &o->eps_ppm, errbuf);
            if (rc != 0) {
                fprintf(stderr, "brim-placement-bench: --eps: %s\n", errbuf);
            }
            break;
        case 'k':
            rc = parse_u32("--keys", optarg, &o->keys);
            break;
        case 'r':
            rc = parse_u32("--rounds", optarg, &o->rounds);
            break;
        case 's':
            if (brim_parse_u64(optarg, 0, UINT64_MAX, &o->seed) != 0) {
                fprintf(stderr,
                        "brim-placement-bench: --seed: \"%s\" is "
                        "not a whole number\n",
                        optarg);
                return -1;
            }
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            /* getopt_long has said which option; one line more, as the
             * other binaries (not the whole usage). */
            fprintf(stderr, "(brim-placement-bench --help for usage)\n");
            return -1;
        }
        if (rc != 0) {
            return -1;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "brim-placement-bench: unexpected argument \"%s\"\n",
                argv[optind]);
        return -1;
    }
    if (brim_placement_check(o->tokens, o->partitions, o->nodes, errbuf) != 0) {
        fprintf(stderr, "brim-placement-bench: %s\n", errbuf);
        return -1;
    }
    return 0;
}

/* Build RING with nodes "node-0" .. "node-<N-1>", hashed tokens. */
static int
build_ring(struct brim_ring *ring, const struct bench_opts *o, uint32_t n)
{
    char     name[32], errbuf[BRIM_ERRBUF_LEN];
    uint32_t i;

    if (brim_ring_init(ring, o->seed, o->tokens, errbuf) != 0) {
        fprintf(stderr, "brim-placement-bench: %s\n", errbuf);
        return -1;
    }
    for (i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "node-%" PRIu32, i);
        if (brim_ring_add_node(ring, name, BRIM_WEIGHT_PPM_ONE, errbuf) != 0) {
            fprintf(stderr, "brim-placement-bench: %s\n", errbuf);
            return -1;
        }
    }
    return 0;
}

/*
 * Time lookups of every key in KEYS (K keys of BENCH_KEY_BYTES), ROUNDS
 * times, through the map (USE_MAP) or the ring. Returns lookups per second;
 * *SINK absorbs the owners so the compiler keeps the work.
 */
static double
time_lookups(const struct bench_opts *o, const struct brim_ring *ring,
             const struct brim_map *map, const char *keys, int use_map,
             uint64_t *sink)
{
    double   t0, t1;
    uint64_t h, acc = 0;
    uint32_t r, i;

    t0 = now_s();
    for (r = 0; r < o->rounds; r++) {
        for (i = 0; i < o->keys; i++) {
            h = brim_hash_key(o->seed, keys + (size_t) i * BENCH_KEY_BYTES,
                              BENCH_KEY_BYTES);
            if (use_map) {
                acc += map->owner[brim_partition_of(h, map->npartitions)];
            } else {
                acc += brim_ring_owner(ring, h);
            }
        }
    }
    t1 = now_s();
    *sink += acc;
    return (double) o->rounds * o->keys / (t1 - t0);
}

int
main(int argc, char **argv)
{
    struct bench_opts o;
    struct brim_ring  ring, bigger;
    struct brim_map   map;
    char              errbuf[BRIM_ERRBUF_LEN], name[32], *keys;
    uint64_t         *pos, sink = 0;
    uint16_t         *owner;
    double            map_rate[BENCH_REPEATS], ring_rate[BENCH_REPEATS];
    double            t_replace[BENCH_REPEATS], t_rebal[BENCH_REPEATS], t0;
    uint32_t          i;
    int               k;

    if (parse_opts(argc, argv, &o) != 0) {
        return 2;
    }
    keys = brim_malloc((size_t) o.keys * BENCH_KEY_BYTES + 1);
    pos = brim_malloc((size_t) o.partitions * sizeof(*pos));
    owner = brim_malloc((size_t) o.partitions * sizeof(*owner));
    if (keys == NULL || pos == NULL || owner == NULL
        || brim_map_init(&map, o.partitions, 1) != 0
        || build_ring(&ring, &o, o.nodes) != 0
        || build_ring(&bigger, &o, o.nodes) != 0)
    {
        fprintf(stderr, "brim-placement-bench: setup failed\n");
        return 1;
    }
    snprintf(name, sizeof(name), "node-%" PRIu32, o.nodes);
    if (brim_ring_add_node(&bigger, name, BRIM_WEIGHT_PPM_ONE, errbuf) != 0) {
        fprintf(stderr, "brim-placement-bench: %s\n", errbuf);
        return 1;
    }
    for (i = 0; i < o.keys; i++) {
        char tmp[BENCH_KEY_BYTES + 1];

        snprintf(tmp, sizeof(tmp), "key:%011" PRIu32, i);
        memcpy(keys + (size_t) i * BENCH_KEY_BYTES, tmp, BENCH_KEY_BYTES);
    }
    brim_map_positions(o.seed, o.partitions, pos);

    printf("brim-placement-bench: N=%" PRIu32 " V=%" PRIu32 " P=%" PRIu32
           " eps_ppm=%" PRIu64 " keys=%" PRIu32 " rounds=%" PRIu32
           " repeats=%d (medians)\n",
           o.nodes, o.tokens, o.partitions, o.eps_ppm, o.keys, o.rounds,
           BENCH_REPEATS);
    for (k = 0; k < BENCH_REPEATS; k++) {
        t0 = now_s();
        if (brim_place_replace(&ring, o.eps_ppm, pos, o.partitions, map.owner,
                               errbuf)
            != 0)
        {
            fprintf(stderr, "brim-placement-bench: %s\n", errbuf);
            return 1;
        }
        t_replace[k] = now_s() - t0;
        t0 = now_s();
        if (brim_place_rebalance(&ring, map.owner, &bigger, o.eps_ppm, pos,
                                 o.partitions, owner, NULL, errbuf)
            != 0)
        {
            fprintf(stderr, "brim-placement-bench: %s\n", errbuf);
            return 1;
        }
        t_rebal[k] = now_s() - t0;
    }
    /* Interleave the two lookup paths so drift hits both alike. */
    for (k = 0; k < BENCH_REPEATS; k++) {
        map_rate[k] = time_lookups(&o, &ring, &map, keys, 1, &sink);
        ring_rate[k] = time_lookups(&o, &ring, &map, keys, 0, &sink);
    }
    printf("map_lookups_per_sec   %.0f\n", median(map_rate, BENCH_REPEATS));
    printf("ring_lookups_per_sec  %.0f\n", median(ring_rate, BENCH_REPEATS));
    printf("map_over_ring         %.2fx\n",
           median(map_rate, BENCH_REPEATS) / median(ring_rate, BENCH_REPEATS));
    printf("replace_map_ms        %.2f\n",
           1e3 * median(t_replace, BENCH_REPEATS));
    printf("rebalance_join_ms     %.2f\n",
           1e3 * median(t_rebal, BENCH_REPEATS));
    printf("(checksum %" PRIu64 ")\n", sink);

    brim_ring_destroy(&ring);
    brim_ring_destroy(&bigger);
    brim_map_destroy(&map);
    brim_free(keys);
    brim_free(pos);
    brim_free(owner);
    return 0;
}
