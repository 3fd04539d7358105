/*
 * client/bench/report.h - the results of one brim-bench run and how they
 * are printed: a few lines of text, then under --verify the line
 * "lost=N stale=N errors=N", then with --json one line of JSON (jansson).
 */
#ifndef BRIM_CLIENT_BENCH_REPORT_H
#define BRIM_CLIENT_BENCH_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "client/bench/bench.h"
#include "client/bench/engine.h"
#include "client/bench/hist.h"

/* Everything a report shows, summed over the threads. */
struct brim_bench_result {
    struct brim_bench_counts      pre;            /* preload */
    struct brim_bench_counts      run;            /* measured */
    const struct brim_bench_hist *hist;           /* measured latency, ns */
    double                        preload_s;      /* preload wall time */
    double                        elapsed_s;      /* measured wall time */
    int                           have_cpu;       /* server_cpu_s is set */
    double                        server_cpu_s;   /* server CPU over the run */
    double                        bench_cpu_s;    /* ours over the run */
    int                           have_evictions; /* evictions is set */
    uint64_t                      evictions;      /* server's, over the run */
    uint64_t                      lost;           /* --verify, keys */
    uint64_t                      stale;          /* --verify, keys */
    uint64_t                      lost_reads;     /* --verify, reads */
    uint64_t                      stale_reads;    /* --verify, reads */
    uint64_t                      reads_checked;  /* --verify */
    uint64_t                      writes_demoted; /* --verify */
    const char                   *failure;        /* why the run failed */
    int                           cluster;        /* 1 --coordinator,
                                                   * 2 redis-cluster */
    uint64_t                      epoch_first;    /* map at the start */
    uint64_t                      epoch_last;     /* map at the end */
    uint32_t                      nodes_seen;     /* members (masters) over
                                                   * the run */
    uint32_t                      nodes_last;     /* in the last map */
    uint64_t                      refetches;      /* map fetches after the
                                                   * first ("refresh") */
};

/*
 * Did the run of R fail? Yes when it could not go on or the server evicted
 * keys under --verify (R->failure says why), any request failed (preload
 * included), or --verify found a lost or stale key. brim-bench then exits
 * 1 and its JSON says "ok": false.
 */
int brim_bench_result_failed(const struct brim_bench_result *r);

/* Measured ops per second of R. */
double brim_bench_ops_per_sec(const struct brim_bench_result *r);

/* The text lines of R's report, on F. */
void brim_bench_report_text(FILE *f, const struct brim_bench_opts *o,
                            const struct brim_bench_result *r);

/* R as one line of JSON on F. Returns 0 or BRIM_ENOMEM. */
int brim_bench_report_json(FILE *f, const struct brim_bench_opts *o,
                           const struct brim_bench_result *r);

#endif /* BRIM_CLIENT_BENCH_REPORT_H */
