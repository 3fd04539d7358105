/*
 * client/bench/main.c - brim-bench, the load generator of brim: it sets up
 * a run (address, threads, connections), loads the key space, measures
 * with every thread started at once, reads the server's CPU time and
 * evictions around the measured part, and reports. The engine, protocol
 * adapters, histogram and verifier live in the other files of this
 * directory; docs/bench.md is the user's guide.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/resource.h>

#include "client/bench/bench.h"
#include "client/bench/cluster.h"
#include "client/bench/engine.h"
#include "client/bench/report.h"
#include "client/bench/server.h"
#include "client/net/sock.h"
#include "common/alloc.h"
#include "common/defs.h"
#include "common/rng.h"
#include "proto/auth.h"
#include "proto/auth_file.h"

/* How often the main thread looks at the preload's progress, ns. */
#define MAIN_POLL_NS 100000000L
/* How often it prints it, ns. */
#define MAIN_PROGRESS_NS 1000000000ull
/* Limit on each probe of the server (limits, evictions), ms. */
#define MAIN_STATS_MS 5000
/* Servers whose evictions are counted (a cluster grows past its first
 * map; nodes past this many are not counted). */
#define MAIN_EV_NODES 256

/* Resolve HOST:PORT into NODE. */
static int
main_resolve(struct brim_bench_node *node, const struct brim_bench_opts *o,
             char *errbuf)
{
    struct addrinfo *res;
    int              rc;

    rc = brim_sock_lookup(o->host, o->port, &res);
    if (rc != 0) {
        brim_errfmt(errbuf, "--server %s: %s", o->server, gai_strerror(rc));
        return BRIM_EINVAL;
    }
    memset(node, 0, sizeof(*node));
    memcpy(&node->addr, res->ai_addr, res->ai_addrlen);
    node->addr_len = res->ai_addrlen;
    snprintf(node->name, sizeof(node->name), "%s", o->server);
    freeaddrinfo(res);
    return 0;
}

/* One load thread: preload its keys, wait for the start, measure. */
static void *
main_worker(void *arg)
{
    struct brim_bench_thread *t = arg;

    if (t->o->preload) {
        (void) brim_bench_engine_run(t, BRIM_BENCH_PRELOAD);
    }
    atomic_store(&t->setup_done, 1);
    pthread_barrier_wait(&t->sh->go);
    if (!t->sh->abort && !t->fatal) {
        (void) brim_bench_engine_run(t, BRIM_BENCH_MEASURE);
    }
    return NULL;
}

/* This process's CPU time so far, seconds (every thread). */
static double
main_self_cpu(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        return 0.0;
    }
    return (double) ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6
        + (double) ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* Wait until every thread has loaded its keys, printing the progress. */
static void
main_wait_setup(struct brim_bench_thread *ts, uint32_t n,
                const struct brim_bench_opts *o)
{
    struct timespec nap = {0, MAIN_POLL_NS};
    uint64_t        next, now, done;
    uint32_t        i, ready;

    next = brim_sock_now_ns() + MAIN_PROGRESS_NS;
    for (;;) {
        ready = 0;
        done = 0;
        for (i = 0; i < n; i++) {
            ready += (uint32_t) atomic_load(&ts[i].setup_done);
            done += atomic_load_explicit(&ts[i].progress, memory_order_relaxed);
        }
        if (ready == n) {
            return;
        }
        now = brim_sock_now_ns();
        if (o->preload && !o->quiet && now >= next) {
            fprintf(stderr, "preload: %llu of %llu keys\n",
                    (unsigned long long) done, (unsigned long long) o->keys);
            next = now + MAIN_PROGRESS_NS;
        }
        nanosleep(&nap, NULL);
    }
}

/* Add thread T's figures to R. */
static void
main_merge(struct brim_bench_result *r, struct brim_bench_hist *h,
           const struct brim_bench_thread *t)
{
    const struct brim_bench_counts *src;
    struct brim_bench_counts       *dst;
    int                             p;

    for (p = 0; p < 2; p++) {
        src = &t->cnt[p];
        dst = p == BRIM_BENCH_PRELOAD ? &r->pre : &r->run;
        dst->ops += src->ops;
        dst->gets += src->gets;
        dst->sets += src->sets;
        dst->dels += src->dels;
        dst->hits += src->hits;
        dst->misses += src->misses;
        dst->errors += src->errors;
        dst->unsent += src->unsent;
        dst->moved += src->moved;
        dst->ask += src->ask;
        dst->retry += src->retry;
        dst->resent += src->resent;
    }
    brim_bench_hist_merge(h, &t->hist);
    if (t->o->verify) {
        r->lost += t->ver.lost;
        r->stale += t->ver.stale;
        r->lost_reads += t->ver.lost_reads;
        r->stale_reads += t->ver.stale_reads;
        r->reads_checked += t->ver.reads_checked;
        r->writes_demoted += t->ver.writes_demoted;
    }
    if (t->fatal && r->failure == NULL) {
        r->failure = t->err;
    }
}

/*
 * The evictions counter of every server into EV[i] (MAIN_EV_NODES
 * entries; a node not in use, or past them, reads 0): the one server, or
 * every live node of the newest map with --coordinator. A warning names a
 * server whose counter is unreadable; returns 0 or -1 then.
 */
static int
main_evictions(struct brim_bench_shared *sh, uint64_t *ev)
{
    const struct brim_bench_route *route = NULL;
    char                           errbuf[BRIM_ERRBUF_LEN];
    uint32_t                       i, n = 1;

    memset(ev, 0, MAIN_EV_NODES * sizeof(*ev));
    if (sh->cl != NULL) {
        route = atomic_load(&sh->route);
        n = BRIM_MIN(route->nnodes, MAIN_EV_NODES);
    }
    for (i = 0; i < n; i++) {
        if (route != NULL && !route->live[i]) {
            continue;
        }
        if (brim_bench_server_evictions(&sh->nodes[i], sh->o->proto, sh->secret,
                                        MAIN_STATS_MS, &ev[i], errbuf)
            != 0)
        {
            fprintf(stderr, "brim-bench: warning: %s\n", errbuf);
            return -1;
        }
    }
    return 0;
}

/* Evictions during the run: per server, end minus start (a node that
 * joined started at 0; one that left took its count with it). */
static uint64_t
main_evictions_during(const uint64_t *ev0, const uint64_t *ev1)
{
    uint64_t sum = 0;
    uint32_t i;

    for (i = 0; i < MAIN_EV_NODES; i++) {
        sum += ev1[i] >= ev0[i] ? ev1[i] - ev0[i] : ev1[i];
    }
    return sum;
}

/* The server's CPU seconds into *CPU_S, with a warning if unreadable. */
static int
main_server_cpu(const struct brim_bench_opts *o, double *cpu_s)
{
    char errbuf[BRIM_ERRBUF_LEN];

    if (o->server_pid == 0) {
        return -1;
    }
    if (brim_bench_server_cpu(o->server_pid, cpu_s, errbuf) != 0) {
        fprintf(stderr, "brim-bench: warning: --server-pid: %s\n", errbuf);
        return -1;
    }
    return 0;
}

/*
 * --latency-log: write the header line, flushed at once so that a script
 * polling the file knows the measured part has begun; return what turns
 * CLOCK_MONOTONIC into CLOCK_REALTIME nanoseconds (0 without the log).
 */
static uint64_t
main_latlog_begin(struct brim_bench_shared *sh)
{
    struct timespec ts;
    uint64_t        rt;

    if (sh->latlog == NULL) {
        return 0;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    rt = (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
    fprintf(sh->latlog,
            "# brim-bench latency log: measuring from %" PRIu64
            " (CLOCK_REALTIME ns); then one line per measured reply: its "
            "intended send time (ns) and its latency (ns)\n",
            rt);
    fflush(sh->latlog);
    return rt - sh->start_ns;
}

/* --latency-log: every thread's replies (in each thread's order), then a
 * last line with the counts; closes the file. */
static void
main_latlog_end(struct brim_bench_shared *sh, struct brim_bench_thread *ts,
                uint64_t rt_off)
{
    uint64_t i, n, dropped;
    uint32_t k;

    if (sh->latlog == NULL) {
        return;
    }
    n = dropped = 0;
    for (k = 0; k < sh->o->threads; k++) {
        for (i = 0; i < ts[k].nlat; i++) {
            fprintf(sh->latlog, "%" PRIu64 " %" PRIu64 "\n",
                    ts[k].lat[i].start_ns + rt_off, ts[k].lat[i].lat_ns);
        }
        n += ts[k].nlat;
        dropped += ts[k].lat_dropped;
    }
    fprintf(sh->latlog, "# end: %" PRIu64 " replies, %" PRIu64 " dropped\n", n,
            dropped);
    if (fclose(sh->latlog) != 0) {
        fprintf(stderr, "brim-bench: --latency-log: write failed\n");
    }
    sh->latlog = NULL;
}

static void
main_stop_cb(int sig)
{
    (void) sig;
    brim_bench_request_stop();
}

/* SIGINT and SIGTERM end the measured part early, reported as usual (a
 * script can end a run when the change it measures is over); a second one
 * kills (SA_RESETHAND). */
static void
main_catch_stop(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = main_stop_cb;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Run the threads from start to end and fill R (all but evictions). */
static void
main_run(struct brim_bench_shared *sh, struct brim_bench_thread *ts,
         struct brim_bench_result *r, struct brim_bench_hist *h)
{
    const struct brim_bench_opts *o = sh->o;
    double                        cpu0, cpu1, self0;
    uint64_t                      t0, end, rt_off;
    uint32_t                      i, started;
    int                           have0;

    t0 = brim_sock_now_ns();
    started = 0;
    for (i = 0; i < o->threads; i++) {
        if (pthread_create(&ts[i].tid, NULL, main_worker, &ts[i]) != 0) {
            fprintf(stderr, "brim-bench: cannot start thread %u\n", i);
            exit(1);
        }
        started++;
    }
    main_wait_setup(ts, started, o);
    r->preload_s = (double) (brim_sock_now_ns() - t0) / 1e9;
    for (i = 0; i < o->threads; i++) {
        if (ts[i].fatal) {
            sh->abort = 1;
        }
    }
    cpu0 = cpu1 = 0;
    have0 = main_server_cpu(o, &cpu0) == 0;
    self0 = main_self_cpu();
    sh->start_ns = brim_sock_now_ns();
    rt_off = main_latlog_begin(sh);
    pthread_barrier_wait(&sh->go);
    for (i = 0; i < o->threads; i++) {
        pthread_join(ts[i].tid, NULL);
    }
    end = sh->start_ns;
    for (i = 0; i < o->threads; i++) {
        end = BRIM_MAX(end, ts[i].last_reply_ns);
    }
    r->elapsed_s = (double) (end - sh->start_ns) / 1e9;
    r->bench_cpu_s = main_self_cpu() - self0;
    r->have_cpu = have0 && main_server_cpu(o, &cpu1) == 0;
    r->server_cpu_s = cpu1 - cpu0;
    r->hist = h;
    for (i = 0; i < o->threads; i++) {
        main_merge(r, h, &ts[i]);
    }
    main_latlog_end(sh, ts, rt_off);
}

/*
 * Refuse a run the node cannot take: learn its limits from a HELLO (brim
 * only; memcached and redis have no such exchange) and compare them with
 * --key-size and the largest --value-size. Without this check every SET
 * of an oversized value fails, and a frame above the node's
 * max_frame_bytes makes it close the connection. Returns 0 to go on, or
 * the exit status after a message: 2 for options the node refuses, 1 when
 * the node could not be asked.
 */
static int
main_check_limits(const struct brim_bench_shared *sh,
                  const struct brim_bench_node   *node)
{
    const struct brim_bench_opts *o = sh->o;
    char                          errbuf[BRIM_ERRBUF_LEN];
    uint32_t                      max_key, max_value;
    int                           rc;

    rc = brim_bench_server_limits(node, o->proto, sh->secret, MAIN_STATS_MS,
                                  &max_key, &max_value, errbuf);
    if (rc == BRIM_ENOTFOUND) {
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "brim-bench: %s\n", errbuf);
        return 1;
    }
    if (o->value_max > max_value) {
        if (o->value_min == o->value_max) {
            fprintf(stderr,
                    "brim-bench: --value-size %u is above the "
                    "node's max_value_bytes %u (%s)\n",
                    o->value_max, max_value, o->server);
        } else {
            fprintf(stderr,
                    "brim-bench: --value-size %u-%u: MAX %u is "
                    "above the node's max_value_bytes %u (%s)\n",
                    o->value_min, o->value_max, o->value_max, max_value,
                    o->server);
        }
        fprintf(stderr,
                "(give --value-size %u or less, or start the node "
                "with a larger --max-value-bytes)\n",
                max_value);
        return 2;
    }
    if (o->key_size > max_key) {
        fprintf(stderr,
                "brim-bench: --key-size %u is above the node's "
                "max_key_bytes %u (%s)\n(give --key-size %u or less)\n",
                o->key_size, max_key, o->server, max_key);
        return 2;
    }
    return 0;
}

/* Destroy the first N threads of TS (set up or not) and free TS. */
static void
main_free_threads(struct brim_bench_thread *ts, uint32_t n)
{
    uint32_t i;

    for (i = 0; i < n; i++) {
        brim_bench_thread_destroy(&ts[i]);
    }
    brim_free(ts);
}

/* --secret-file's secret; main_secret_wipe() clears it at exit. */
static struct brim_auth_secret main_secret;

static void
main_secret_wipe(void)
{
    brim_auth_secret_wipe(&main_secret);
}

/*
 * --secret-file: read the secret (PROTOCOL.md 12.1: a regular file of the
 * effective user, mode 0600 or stricter, 32 to 4096 bytes) and point
 * SH->secret at it, to be proven on every brim connection. Returns 0
 * (none given: SH->secret stays NULL), or 2 after a message: a bad file
 * is bad usage.
 */
static int
main_secret_load(struct brim_bench_shared *sh)
{
    char err[BRIM_ERRBUF_LEN];

    if (sh->o->secret_file == NULL) {
        return 0;
    }
    if (brim_auth_file_read(sh->o->secret_file, &main_secret, err) != 0) {
        fprintf(stderr, "brim-bench: --secret-file: %s\n", err);
        return 2;
    }
    (void) atexit(main_secret_wipe);
    sh->secret = &main_secret;
    return 0;
}

/* --coordinator: stop the refresher, free the maps and the nodes. */
static void
main_cluster_close(struct brim_bench_shared *sh)
{
    if (sh->cl == NULL) {
        return;
    }
    brim_bench_cluster_close(sh);
    brim_free(sh->nodes);
    sh->nodes = NULL;
}

int
main(int argc, char **argv)
{
    static struct brim_bench_hist hist;
    struct brim_bench_opts        o;
    struct brim_bench_shared      sh;
    struct brim_bench_node        node;
    struct brim_bench_result      r;
    struct brim_bench_thread     *ts;
    struct brim_bench_route      *route;
    char                          errbuf[BRIM_ERRBUF_LEN];
    char                          why[BRIM_ERRBUF_LEN];
    uint64_t                      ev0[MAIN_EV_NODES], ev1[MAIN_EV_NODES];
    uint64_t                      seed;
    uint32_t                      i, nconns;
    int                           rc, have_ev0, status;

    rc = brim_bench_opts_parse(&o, argc, argv, errbuf);
    if (rc == 1) {
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "brim-bench: %s\n(brim-bench --help for usage)\n",
                errbuf);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    main_catch_stop();
    memset(&sh, 0, sizeof(sh));
    sh.o = &o;
    atomic_init(&sh.route, NULL);
    status = main_secret_load(&sh);
    if (status != 0) {
        return status;
    }
    if (o.coord[0] != '\0' || o.proto->slots) {
        /* A cluster: the map says where every key goes. */
        sh.nodes = brim_calloc(BRIM_BENCH_NODES_MAX, sizeof(*sh.nodes));
        sh.nnodes = BRIM_BENCH_NODES_MAX;
        if (sh.nodes == NULL || brim_bench_cluster_open(&sh, &o, errbuf) != 0) {
            fprintf(stderr, "brim-bench: %s\n",
                    sh.nodes == NULL ? "out of memory" : errbuf);
            brim_bench_cluster_close(&sh);
            brim_free(sh.nodes);
            return 1;
        }
        route = atomic_load(&sh.route);
        for (i = 0; !route->live[i]; i++) {
        }
        node = sh.nodes[i];
        if (!o.proto->slots) {
            snprintf(o.server, sizeof(o.server), "%s", node.name);
        }
    } else {
        if (main_resolve(&node, &o, errbuf) != 0) {
            fprintf(stderr, "brim-bench: %s\n", errbuf);
            return 2;
        }
        sh.nodes = &node;
        sh.nnodes = 1;
    }
    status = main_check_limits(&sh, &node);
    if (status != 0) {
        main_cluster_close(&sh);
        return status;
    }
    /* Values of an earlier run left in the server must not pass for
     * this run's: each run stamps its own id into its values. */
    seed = brim_sock_now_ns() ^ ((uint64_t) getpid() << 32);
    sh.run_id = (uint32_t) brim_splitmix64(&seed);

    if (o.latency_log != NULL) {
        sh.latlog = fopen(o.latency_log, "w");
        if (sh.latlog == NULL) {
            fprintf(stderr, "brim-bench: --latency-log %s: %s\n", o.latency_log,
                    strerror(errno));
            main_cluster_close(&sh);
            return 2;
        }
    }
    have_ev0 = o.verify && main_evictions(&sh, ev0) == 0;
    ts = brim_calloc(o.threads, sizeof(*ts));
    if (ts == NULL) {
        fprintf(stderr, "brim-bench: out of memory\n");
        return 1;
    }
    for (i = 0; i < o.threads; i++) {
        nconns = o.connections / o.threads + (i < o.connections % o.threads);
        if (sh.cl != NULL) {
            /* Spread over the nodes of the first map, one each at least. */
            route = atomic_load(&sh.route);
            nconns = BRIM_MAX(1u, (nconns + route->nlive - 1) / route->nlive);
        }
        sh.per_node = nconns;
        if (brim_bench_thread_init(&ts[i], &sh, i, nconns, errbuf) != 0) {
            fprintf(stderr, "brim-bench: %s\n", errbuf);
            /* Thread I holds what it set up before it failed. */
            main_free_threads(ts, i + 1);
            main_cluster_close(&sh);
            return 1;
        }
    }
    if (pthread_barrier_init(&sh.go, NULL, o.threads + 1) != 0) {
        fprintf(stderr, "brim-bench: pthread_barrier_init failed\n");
        main_free_threads(ts, o.threads);
        return 1;
    }
    if (!o.quiet && o.proto->slots) {
        route = atomic_load(&sh.route);
        fprintf(stderr,
                "brim-bench: redis cluster at %s, %u masters, %u "
                "connections per master per thread x pipeline %u, %u "
                "thread(s), %llu keys\n",
                o.server, route->nlive, sh.per_node, o.pipeline, o.threads,
                (unsigned long long) o.keys);
    } else if (!o.quiet && sh.cl != NULL) {
        route = atomic_load(&sh.route);
        fprintf(stderr,
                "brim-bench: brim cluster at %s, epoch %llu, %u nodes, %u "
                "connections per node per thread x pipeline %u, %u "
                "thread(s), %llu keys\n",
                o.coord, (unsigned long long) route->epoch, route->nlive,
                sh.per_node, o.pipeline, o.threads,
                (unsigned long long) o.keys);
    } else if (!o.quiet) {
        fprintf(stderr,
                "brim-bench: %s at %s, %u connections x pipeline "
                "%u, %u thread(s), %llu keys\n",
                o.proto->name, o.server, o.connections, o.pipeline, o.threads,
                (unsigned long long) o.keys);
    }

    memset(&r, 0, sizeof(r));
    brim_bench_hist_reset(&hist);
    if (sh.cl != NULL && brim_bench_cluster_start(&sh) != 0) {
        fprintf(stderr, "brim-bench: cannot start the map refresher\n");
        main_free_threads(ts, o.threads);
        main_cluster_close(&sh);
        return 1;
    }
    main_run(&sh, ts, &r, &hist);
    if (sh.cl != NULL) {
        route = atomic_load(&sh.route);
        r.cluster = o.proto->slots ? 2 : 1;
        r.epoch_first = brim_bench_cluster_first_epoch(&sh);
        r.epoch_last = route->epoch;
        r.nodes_seen = route->nnodes;
        r.nodes_last = route->nlive;
        r.refetches = brim_bench_cluster_refetches(&sh);
    }

    if (have_ev0 && main_evictions(&sh, ev1) == 0) {
        r.have_evictions = 1;
        r.evictions = main_evictions_during(ev0, ev1);
        if (r.evictions > 0 && r.failure == NULL) {
            /* An evicted key reads as lost: the run cannot judge. */
            snprintf(why, sizeof(why),
                     "the server evicted %llu keys during "
                     "the run, so lost reads cannot be judged; give it "
                     "more memory or use fewer keys",
                     (unsigned long long) r.evictions);
            r.failure = why;
        }
    }
    brim_bench_report_text(stdout, &o, &r);
    if (o.json && brim_bench_report_json(stdout, &o, &r) != 0) {
        fprintf(stderr, "brim-bench: out of memory writing JSON\n");
    }
    /* The same rule as the JSON's "ok": they cannot disagree. */
    status = brim_bench_result_failed(&r);
    pthread_barrier_destroy(&sh.go);
    main_free_threads(ts, o.threads);
    main_cluster_close(&sh);
    return status ? 1 : 0;
}
