/*
 * client/bench/hist.h - brim-bench's latency histogram: log-linear in the
 * manner of HdrHistogram (Gil Tene), with values below 2^(SUB_BITS + 1)
 * kept exactly and every power-of-two range above cut into 2^SUB_BITS
 * equal parts, so a value is reported within 1/128 (0.8%) of what was
 * recorded over the whole uint64_t range, in a fixed 58 KiB. Debian ships
 * no C HdrHistogram package, hence this small one. Not thread-safe: one
 * histogram per thread, merged at the end.
 */
#ifndef BRIM_CLIENT_BENCH_HIST_H
#define BRIM_CLIENT_BENCH_HIST_H

#include <stdint.h>

#define BRIM_BENCH_HIST_SUB_BITS 7
#define BRIM_BENCH_HIST_SUB (1u << BRIM_BENCH_HIST_SUB_BITS)
/* Shifts 0 .. 63 - SUB_BITS, each with SUB sub-ranges, plus the exact
 * lower half of the first: (64 - SUB_BITS + 1) * SUB counters. */
#define BRIM_BENCH_HIST_LEN                                                    \
    ((64 - BRIM_BENCH_HIST_SUB_BITS + 1) * BRIM_BENCH_HIST_SUB)

/* Recorded values (brim-bench records nanoseconds); zero it to empty it. */
struct brim_bench_hist {
    uint64_t count;                       /* values recorded */
    uint64_t min;                         /* smallest value; 0 when empty */
    uint64_t max;                         /* largest value */
    double   sum;                         /* of all values, for the mean */
    uint64_t counts[BRIM_BENCH_HIST_LEN]; /* per bucket */
};

/* Make H empty. */
void brim_bench_hist_reset(struct brim_bench_hist *h);

/* The bucket of value V, 0 .. BRIM_BENCH_HIST_LEN - 1. */
uint32_t brim_bench_hist_index(uint64_t v);

/* The smallest and the largest value that share bucket IDX. */
uint64_t brim_bench_hist_lowest(uint32_t idx);
uint64_t brim_bench_hist_highest(uint32_t idx);

/* Record value V once. */
void brim_bench_hist_record(struct brim_bench_hist *h, uint64_t v);

/* Add every value recorded in SRC to DST. */
void brim_bench_hist_merge(struct brim_bench_hist       *dst,
                           const struct brim_bench_hist *src);

/*
 * The value at percentile PCT (0 < PCT <= 100): the highest value of the
 * first bucket where the running count reaches PCT/100 * count (rounded,
 * at least 1), capped at the largest value recorded (HdrHistogram's rule,
 * so a percentile never understates). 0 when H is empty.
 */
uint64_t brim_bench_hist_percentile(const struct brim_bench_hist *h,
                                    double                        pct);

/* The mean of the recorded values, 0 when H is empty. */
double brim_bench_hist_mean(const struct brim_bench_hist *h);

#endif /* BRIM_CLIENT_BENCH_HIST_H */
