/*
 * client/bench/hist.c - the log-linear latency histogram of hist.h
 * (HdrHistogram's bucket layout, Gil Tene): bucket = shift * SUB + the top
 * SUB_BITS + 1 bits of the value, where shift is how far the value's
 * highest bit lies above SUB_BITS.
 */
#include "client/bench/hist.h"

#include <string.h>

void
brim_bench_hist_reset(struct brim_bench_hist *h)
{
    memset(h, 0, sizeof(*h));
}

uint32_t
brim_bench_hist_index(uint64_t v)
{
    uint32_t msb, shift;

    if (v < 2 * BRIM_BENCH_HIST_SUB) {
        return (uint32_t) v;
    }
    msb = 63 - (uint32_t) __builtin_clzll(v);
    shift = msb - BRIM_BENCH_HIST_SUB_BITS;
    /* v >> shift lies in [SUB, 2 * SUB): the ranges of two shifts meet. */
    return shift * BRIM_BENCH_HIST_SUB + (uint32_t) (v >> shift);
}

uint64_t
brim_bench_hist_lowest(uint32_t idx)
{
    uint32_t shift;

    if (idx < 2 * BRIM_BENCH_HIST_SUB) {
        return idx;
    }
    shift = idx / BRIM_BENCH_HIST_SUB - 1;
    return (uint64_t) (idx - shift * BRIM_BENCH_HIST_SUB) << shift;
}

uint64_t
brim_bench_hist_highest(uint32_t idx)
{
    uint32_t shift;

    if (idx < 2 * BRIM_BENCH_HIST_SUB) {
        return idx;
    }
    shift = idx / BRIM_BENCH_HIST_SUB - 1;
    return brim_bench_hist_lowest(idx) + ((uint64_t) 1 << shift) - 1;
}

void
brim_bench_hist_record(struct brim_bench_hist *h, uint64_t v)
{
    h->counts[brim_bench_hist_index(v)]++;
    if (h->count == 0 || v < h->min) {
        h->min = v;
    }
    if (v > h->max) {
        h->max = v;
    }
    h->count++;
    h->sum += (double) v;
}

void
brim_bench_hist_merge(struct brim_bench_hist       *dst,
                      const struct brim_bench_hist *src)
{
    uint32_t i;

    if (src->count == 0) {
        return;
    }
    for (i = 0; i < BRIM_BENCH_HIST_LEN; i++) {
        dst->counts[i] += src->counts[i];
    }
    if (dst->count == 0 || src->min < dst->min) {
        dst->min = src->min;
    }
    if (src->max > dst->max) {
        dst->max = src->max;
    }
    dst->count += src->count;
    dst->sum += src->sum;
}

uint64_t
brim_bench_hist_percentile(const struct brim_bench_hist *h, double pct)
{
    uint64_t want, seen, v;
    uint32_t i;

    if (h->count == 0) {
        return 0;
    }
    if (pct > 100.0) {
        pct = 100.0;
    }
    /* Rounded to the nearest count, as HdrHistogram does: a ceil() would
     * turn 99.9% of 1000 (999.0000000000001 in binary) into 1000. */
    want = (uint64_t) (pct / 100.0 * (double) h->count + 0.5);
    if (want == 0) {
        want = 1;
    }
    seen = 0;
    for (i = 0; i < BRIM_BENCH_HIST_LEN; i++) {
        seen += h->counts[i];
        if (seen >= want) {
            v = brim_bench_hist_highest(i);
            return v < h->max ? v : h->max;
        }
    }
    return h->max; /* not reached: counts sum to count */
}

double
brim_bench_hist_mean(const struct brim_bench_hist *h)
{
    return h->count == 0 ? 0.0 : h->sum / (double) h->count;
}
