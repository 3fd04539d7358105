/*
 * client/bench/report.c - brim-bench's output: text for people, and with
 * --json one object on the last line for scripts (docs/bench.md lists its
 * fields). Latencies are kept in ns and shown in microseconds.
 */
#include "client/bench/report.h"

#include <stdlib.h>

#include <jansson.h>

#include "common/defs.h"

int
brim_bench_result_failed(const struct brim_bench_result *r)
{
    return r->failure != NULL || r->pre.errors + r->run.errors > 0
        || r->lost > 0 || r->stale > 0;
}

double
brim_bench_ops_per_sec(const struct brim_bench_result *r)
{
    return r->elapsed_s > 0 ? (double) r->run.ops / r->elapsed_s : 0.0;
}

/* Percent of PART in WHOLE, 0 when WHOLE is 0. */
static double
report_pct(uint64_t part, uint64_t whole)
{
    return whole == 0 ? 0.0 : 100.0 * (double) part / (double) whole;
}

/* Percentile PCT of R's latencies, microseconds. */
static double
report_us(const struct brim_bench_result *r, double pct)
{
    return (double) brim_bench_hist_percentile(r->hist, pct) / 1000.0;
}

/* The "cluster:" line of R: a brim cluster's, or a Redis Cluster's. */
static void
report_cluster_text(FILE *f, const struct brim_bench_result *r)
{
    const struct brim_bench_counts *p = &r->pre, *c = &r->run;
    unsigned long long              first, last, moved, retry, resent;

    first = r->epoch_first;
    last = r->epoch_last;
    moved = p->moved + c->moved;
    retry = p->retry + c->retry;
    resent = p->resent + c->resent;
    if (r->cluster == 2) {
        fprintf(f,
                "cluster: redis cluster, slot map %llu -> %llu, %u masters "
                "(%u seen), moved=%llu ask=%llu refresh=%llu tryagain=%llu "
                "resent=%llu\n",
                first, last, r->nodes_last, r->nodes_seen, moved,
                (unsigned long long) (p->ask + c->ask),
                (unsigned long long) r->refetches, retry, resent);
        return;
    }
    fprintf(f,
            "cluster: epoch %llu -> %llu, %u nodes (%u seen), moved=%llu "
            "retry=%llu refetch=%llu resent=%llu\n",
            first, last, r->nodes_last, r->nodes_seen, moved, retry,
            (unsigned long long) r->refetches, resent);
}

void
brim_bench_report_text(FILE *f, const struct brim_bench_opts *o,
                       const struct brim_bench_result *r)
{
    const struct brim_bench_counts *c = &r->run;

    if (o->preload) {
        fprintf(f, "preload: %llu keys in %.2f s, %llu errors\n",
                (unsigned long long) r->pre.ops, r->preload_s,
                (unsigned long long) r->pre.errors);
    }
    fprintf(f,
            "run: %llu ops in %.2f s: %.0f ops/s (get %.1f%% set "
            "%.1f%% del %.1f%%, hits %.1f%% of gets), %llu errors",
            (unsigned long long) c->ops, r->elapsed_s,
            brim_bench_ops_per_sec(r), report_pct(c->gets, c->ops),
            report_pct(c->sets, c->ops), report_pct(c->dels, c->ops),
            report_pct(c->hits, c->gets), (unsigned long long) c->errors);
    if (o->rate > 0) {
        fprintf(f, ", %llu due but unsent", (unsigned long long) c->unsent);
    }
    fputc('\n', f);
    fprintf(f,
            "latency us: p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  "
            "max %.1f  mean %.1f\n",
            report_us(r, 50), report_us(r, 90), report_us(r, 99),
            report_us(r, 99.9), (double) r->hist->max / 1000.0,
            brim_bench_hist_mean(r->hist) / 1000.0);
    if (r->have_cpu) {
        fprintf(f,
                "server cpu: %.2f s over the run, %.3f us/op (pid "
                "%lld)\n",
                r->server_cpu_s,
                c->ops == 0 ? 0.0 : r->server_cpu_s * 1e6 / (double) c->ops,
                (long long) o->server_pid);
    }
    fprintf(f, "bench cpu: %.2f s over the run\n", r->bench_cpu_s);
    if (r->have_evictions) {
        fprintf(f, "server evictions during the run: %llu\n",
                (unsigned long long) r->evictions);
    }
    if (r->cluster) {
        report_cluster_text(f, r);
    }
    if (o->verify) {
        fprintf(f,
                "verify: %llu reads checked: %llu stale reads and %llu "
                "lost reads, of %llu stale and %llu lost keys; %llu writes "
                "sent as reads (key busy)\n",
                (unsigned long long) r->reads_checked,
                (unsigned long long) r->stale_reads,
                (unsigned long long) r->lost_reads,
                (unsigned long long) r->stale, (unsigned long long) r->lost,
                (unsigned long long) r->writes_demoted);
    }
    /* Every failed run says so, in the order of brim_bench_result_failed():
     * the reason, else the failed requests, else the verdict. */
    if (r->failure != NULL) {
        fprintf(f, "FAILED: %s\n", r->failure);
    } else if (r->pre.errors + c->errors > 0) {
        fprintf(f,
                "FAILED: %llu requests failed (error replies, timeouts "
                "or lost connections; see stderr)\n",
                (unsigned long long) (r->pre.errors + c->errors));
    } else if (brim_bench_result_failed(r)) {
        fprintf(f, "FAILED: --verify found %llu lost and %llu stale keys\n",
                (unsigned long long) r->lost, (unsigned long long) r->stale);
    }
    if (o->verify) {
        fprintf(f, "lost=%llu stale=%llu errors=%llu\n",
                (unsigned long long) r->lost, (unsigned long long) r->stale,
                (unsigned long long) (r->pre.errors + c->errors));
    }
    fflush(f);
}

/* Set KEY of OBJ to V; a NULL V (jansson out of memory) is counted. */
static void
report_set(json_t *obj, const char *key, json_t *v, int *bad)
{
    if (v == NULL || json_object_set_new(obj, key, v) != 0) {
        *bad = 1;
    }
}

/* JSON: the counter FIELD of R summed over both phases. */
#define REPORT_SUM(r, field)                                                   \
    json_integer((json_int_t) ((r)->pre.field + (r)->run.field))

/* redis-cluster's figures of R into J (docs/bench.md names them). */
static void
report_rcluster_json(json_t *j, const struct brim_bench_result *r, int *bad)
{
    report_set(j, "redis_cluster", json_true(), bad);
    report_set(j, "map_first", json_integer((json_int_t) r->epoch_first), bad);
    report_set(j, "map_last", json_integer((json_int_t) r->epoch_last), bad);
    report_set(j, "masters", json_integer(r->nodes_last), bad);
    report_set(j, "masters_seen", json_integer(r->nodes_seen), bad);
    report_set(j, "moved", REPORT_SUM(r, moved), bad);
    report_set(j, "ask", REPORT_SUM(r, ask), bad);
    report_set(j, "refresh", json_integer((json_int_t) r->refetches), bad);
    report_set(j, "tryagain", REPORT_SUM(r, retry), bad);
    report_set(j, "resent", REPORT_SUM(r, resent), bad);
}

int
brim_bench_report_json(FILE *f, const struct brim_bench_opts *o,
                       const struct brim_bench_result *r)
{
    const struct brim_bench_counts *c = &r->run;
    json_t                         *j;
    char                           *text;
    double                          per_op;
    int                             bad;

    j = json_object();
    if (j == NULL) {
        return BRIM_ENOMEM;
    }
    bad = 0;
    report_set(j, "target", json_string(o->proto->name), &bad);
    report_set(j, "server", json_string(o->server), &bad);
    report_set(j, "connections", json_integer(o->connections), &bad);
    report_set(j, "pipeline", json_integer(o->pipeline), &bad);
    report_set(j, "threads", json_integer(o->threads), &bad);
    report_set(j, "keys", json_integer((json_int_t) o->keys), &bad);
    report_set(j, "key_size", json_integer(o->key_size), &bad);
    report_set(j, "value_min", json_integer(o->value_min), &bad);
    report_set(j, "value_max", json_integer(o->value_max), &bad);
    report_set(j, "get_ratio", json_real(o->get_ratio), &bad);
    report_set(j, "del_ratio", json_real(o->del_ratio), &bad);
    report_set(j, "zipf", json_real(o->zipf), &bad);
    report_set(j, "rate", json_real(o->rate), &bad);
    report_set(j, "seed", json_integer((json_int_t) o->seed), &bad);
    report_set(j, "duration_s", json_real(r->elapsed_s), &bad);
    report_set(j, "ops", json_integer((json_int_t) c->ops), &bad);
    report_set(j, "gets", json_integer((json_int_t) c->gets), &bad);
    report_set(j, "sets", json_integer((json_int_t) c->sets), &bad);
    report_set(j, "dels", json_integer((json_int_t) c->dels), &bad);
    report_set(j, "hits", json_integer((json_int_t) c->hits), &bad);
    report_set(j, "misses", json_integer((json_int_t) c->misses), &bad);
    report_set(j, "errors",
               json_integer((json_int_t) (r->pre.errors + c->errors)), &bad);
    report_set(j, "unsent", json_integer((json_int_t) c->unsent), &bad);
    report_set(j, "ops_per_sec", json_real(brim_bench_ops_per_sec(r)), &bad);
    report_set(j, "p50_us", json_real(report_us(r, 50)), &bad);
    report_set(j, "p90_us", json_real(report_us(r, 90)), &bad);
    report_set(j, "p99_us", json_real(report_us(r, 99)), &bad);
    report_set(j, "p999_us", json_real(report_us(r, 99.9)), &bad);
    report_set(j, "max_us", json_real((double) r->hist->max / 1000.0), &bad);
    report_set(j, "mean_us", json_real(brim_bench_hist_mean(r->hist) / 1000.0),
               &bad);
    report_set(j, "preload_s", json_real(r->preload_s), &bad);
    report_set(j, "bench_cpu_s", json_real(r->bench_cpu_s), &bad);
    if (r->have_cpu) {
        per_op = c->ops == 0 ? 0.0 : r->server_cpu_s / (double) c->ops;
        report_set(j, "server_cpu_s", json_real(r->server_cpu_s), &bad);
        report_set(j, "server_cpu_s_per_op", json_real(per_op), &bad);
        report_set(j, "server_cpu_us_per_op", json_real(per_op * 1e6), &bad);
    } else {
        report_set(j, "server_cpu_s_per_op", json_null(), &bad);
    }
    if (r->have_evictions) {
        report_set(j, "evictions", json_integer((json_int_t) r->evictions),
                   &bad);
    }
    if (r->cluster == 2) {
        report_rcluster_json(j, r, &bad);
    } else if (r->cluster) {
        report_set(j, "coordinator", json_string(o->coord), &bad);
        report_set(j, "epoch_first", json_integer((json_int_t) r->epoch_first),
                   &bad);
        report_set(j, "epoch_last", json_integer((json_int_t) r->epoch_last),
                   &bad);
        report_set(j, "nodes", json_integer(r->nodes_last), &bad);
        report_set(j, "nodes_seen", json_integer(r->nodes_seen), &bad);
        report_set(j, "moved",
                   json_integer((json_int_t) (r->pre.moved + c->moved)), &bad);
        report_set(j, "retry",
                   json_integer((json_int_t) (r->pre.retry + c->retry)), &bad);
        report_set(j, "refetch", json_integer((json_int_t) r->refetches), &bad);
        report_set(j, "resent",
                   json_integer((json_int_t) (r->pre.resent + c->resent)),
                   &bad);
    }
    if (o->verify) {
        report_set(j, "lost", json_integer((json_int_t) r->lost), &bad);
        report_set(j, "stale", json_integer((json_int_t) r->stale), &bad);
        report_set(j, "lost_reads", json_integer((json_int_t) r->lost_reads),
                   &bad);
        report_set(j, "stale_reads", json_integer((json_int_t) r->stale_reads),
                   &bad);
        report_set(j, "reads_checked",
                   json_integer((json_int_t) r->reads_checked), &bad);
    }
    report_set(j, "ok", json_boolean(!brim_bench_result_failed(r)), &bad);
    text = bad ? NULL : json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (text == NULL) {
        return BRIM_ENOMEM;
    }
    fprintf(f, "%s\n", text);
    fflush(f);
    free(text);
    return 0;
}
