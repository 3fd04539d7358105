/*
 * client/bench/bench.h - brim-bench's command line: the options of one run
 * and their parser (options.c). Every other part of the bench reads them.
 */
#ifndef BRIM_CLIENT_BENCH_BENCH_H
#define BRIM_CLIENT_BENCH_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include <brim/status.h>

#include "client/bench/proto.h"

/* Longest HOST:PORT accepted, bytes. */
#define BRIM_BENCH_ADDR_MAX 255

/* Depth of the preload's pipelines, at least: loading is not measured. */
#define BRIM_BENCH_PRELOAD_DEPTH 32

/* The options of one run, defaults from brim_bench_opts_parse(). */
struct brim_bench_opts {
    const struct brim_bench_proto *proto;            /* --target */
    char        server[BRIM_BENCH_ADDR_MAX + 1];     /* --server HOST:PORT */
    char        host[BRIM_BENCH_ADDR_MAX + 1];       /* its host part */
    char        port[8];                             /* its port part */
    char        coord[BRIM_BENCH_ADDR_MAX + 1];      /* --coordinator, or "" */
    char        coord_host[BRIM_BENCH_ADDR_MAX + 1]; /* its host part */
    char        coord_port[8];                       /* its port part */
    const char *secret_file; /* --secret-file (borrowed from argv), NULL */
    const char *latency_log; /* --latency-log (borrowed from argv), NULL */
    uint32_t    connections; /* --connections, over all threads */
    uint32_t    pipeline;    /* --pipeline: requests out per conn */
    uint32_t    threads;     /* --threads: event loops */
    uint64_t    keys;        /* --keys: the key space */
    uint32_t    key_size;    /* --key-size, bytes */
    uint32_t    value_min;   /* --value-size, bytes */
    uint32_t    value_max;   /* upper end of a MIN-MAX range */
    double      get_ratio;   /* --get-ratio among GET and SET */
    double      del_ratio;   /* --del-ratio among all ops */
    double      ttl_ratio;   /* --ttl-ratio among SETs */
    uint32_t    ttl_min_s;   /* the short TTLs of --ttl-ratio */
    uint32_t    ttl_max_s;
    double      zipf;       /* --zipf exponent, 0 uniform */
    double      duration_s; /* --duration, 0: none */
    uint64_t    ops;        /* --ops, 0: none */
    double      rate;       /* --rate ops/s, 0: closed loop */
    uint64_t    seed;       /* --seed */
    int64_t     server_pid; /* --server-pid, 0: not given */
    uint32_t    timeout_ms; /* --timeout: a request's limit */
    uint32_t    slack_ms;   /* --ttl-slack: TTL clock margin */
    int         json;       /* --json */
    int         verify;     /* --verify */
    int         preload;    /* 0 with --no-preload */
    int         quiet;      /* --quiet: no progress lines */
};

/*
 * Fill O from ARGV (ARGC entries, ARGV[0] the program). Returns 0; 1 when
 * --help was asked for (usage printed on stdout); BRIM_EINVAL with the
 * reason in ERRBUF for a bad option or value.
 */
int brim_bench_opts_parse(struct brim_bench_opts *o, int argc, char **argv,
                          char errbuf[BRIM_ERRBUF_LEN]);

/* Print the usage text to F. */
void brim_bench_usage(FILE *f);

#endif /* BRIM_CLIENT_BENCH_BENCH_H */
