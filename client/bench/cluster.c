/*
 * client/bench/cluster.c - brim-bench --coordinator (cluster.h): a short
 * blocking connection per fetch to a node of the map or a seed of the
 * list (a struct brim_link of client/net/link.h: HELLO as a client and
 * AUTH with --secret-file, then MAP_FETCH), brim_topo_decode() on the
 * reply, and the route each load
 * thread reads with one atomic load. With --target redis-cluster the map
 * is a Redis Cluster's slot map instead: CLUSTER SLOTS from the --server
 * (server.c asks, rcluster.c reads), fetched again when a load thread
 * saw a MOVED, a lost connection or a refused reconnect.
 */
#include "client/bench/cluster.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "client/bench/rcluster.h"
#include "client/bench/server.h"
#include "client/net/link.h"
#include "client/net/sock.h"
#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "proto/ops.h"
#include "proto/topo.h"
#include "proto/wire.h"

/* Limit on one fetch, connect included, ms. */
#define CLUSTER_FETCH_MS 3000
/* Spacing of fetches while the coordinator is behind the epoch a node
 * reported, or after a failed fetch, ns. */
#define CLUSTER_SPACING_NS 20000000ull

/* Nodes named by ASK only that a redis-cluster run connects to, at most. */
#define CLUSTER_EXTRA_MAX 8

struct brim_bench_cluster {
    pthread_mutex_t               mu;
    pthread_cond_t                cv;
    pthread_t                     tid;
    int                           started;
    int                           stop;        /* under mu */
    atomic_uint_fast64_t          want;        /* newest epoch reported */
    atomic_uint_fast64_t          refetches;   /* fetches after the first */
    uint64_t                      first_epoch; /* of the first route */
    uint32_t                      failures;    /* failed fetches logged */
    struct brim_bench_shared     *sh;
    const struct brim_bench_opts *o;
    /* redis-cluster: a fetch is asked for, not an epoch (CLUSTER SLOTS
     * has none); one more fetch follows the one in flight when asked. */
    int                             redis;  /* CLUSTER SLOTS, not brim */
    atomic_uint_fast64_t            asked;  /* fetches asked for */
    uint64_t                        served; /* ASKED when the last began */
    struct brim_bench_node          seed;   /* --server, resolved */
    struct brim_bench_rcluster_map *map;    /* a fetch's scratch */
    /* redis-cluster: nodes an ASK named that no map had (a master new
     * to the cluster imports its first slot before CLUSTER SLOTS shows
     * it): connected from the next map on. Under mu. */
    char     extra[CLUSTER_EXTRA_MAX][BRIM_BENCH_ADDR_MAX + 1];
    uint32_t nextra;
};

/* Resolve "HOST:PORT" (ADDR) into NODE. */
static int
cluster_resolve(struct brim_bench_node *node, const char *addr,
                char errbuf[BRIM_ERRBUF_LEN])
{
    struct addrinfo *res;
    char             host[BRIM_BENCH_ADDR_MAX + 1], port[6];
    int              rc;

    if (brim_sock_split(addr, "", host, sizeof(host), port, NULL) != 0) {
        brim_errfmt(errbuf, "member address \"%s\": want HOST:PORT", addr);
        return BRIM_EINVAL;
    }
    rc = brim_sock_lookup(host, port, &res);
    if (rc != 0) {
        brim_errfmt(errbuf, "%s: %s", addr, gai_strerror(rc));
        return BRIM_EINVAL;
    }
    memset(node, 0, sizeof(*node));
    memcpy(&node->addr, res->ai_addr, res->ai_addrlen);
    node->addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/*
 * Fetch the committed topology from ADDR (a node or a coordinator) into
 * TOPO (uninitialised): HELLO as a client (and AUTH with SECRET, if not
 * NULL), then MAP_FETCH, within CLUSTER_FETCH_MS. A node refuses it
 * (RETRY) without a committed epoch or a fresh lease.
 */
static int
cluster_fetch_at(const char *addr, const struct brim_auth_secret *secret,
                 struct brim_topo *topo, char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_link_conf  conf;
    struct brim_link_reply r;
    struct brim_link       l;
    struct brim_req        req;
    int64_t                deadline;
    char                   why[BRIM_ERRBUF_LEN];
    int                    rc;

    memset(topo, 0, sizeof(*topo));
    memset(&conf, 0, sizeof(conf));
    conf.hello = 1;
    conf.role = BRIM_ROLE_CLIENT;
    conf.name = "brim-bench";
    conf.secret = secret;
    /* Topology replies exceed the data frame limit (PROTOCOL.md 10.1). */
    conf.frame_min =
        2u * BRIM_PARTITIONS_MAX + (64u << 10) + 200u * BRIM_NODES_MAX;
    if (brim_link_init(&l, addr, &conf) != 0) {
        brim_errfmt(errbuf, "out of memory");
        return BRIM_ENOMEM;
    }
    deadline = brim_sock_now_ms() + CLUSTER_FETCH_MS;
    rc = brim_link_open(&l, deadline);
    if (rc == 0) {
        memset(&req, 0, sizeof(req));
        req.op = BRIM_OP_MAP_FETCH;
        rc = brim_link_call(&l, &req, deadline, &r);
    }
    if (rc == BRIM_ETIMEDOUT) {
        brim_errfmt(errbuf, "seed %s: no reply in time", addr);
    } else if (rc != 0) {
        brim_errfmt(errbuf, "seed %s (%s)", l.err, brim_err_name(rc));
    } else if (r.rep.status != 0) {
        rc = r.rep.status;
        brim_errfmt(errbuf, "seed %s refused MAP_FETCH: %s: %.*s", addr,
                    brim_err_name(rc), (int) r.rep.message_len,
                    r.rep.message != NULL ? r.rep.message : "");
    } else {
        why[0] = '\0';
        rc = r.rep.obj == NULL ? BRIM_EBADREPLY
                               : brim_topo_decode(r.rep.obj, topo, why);
        if (rc != 0) {
            brim_errfmt(errbuf, "seed %s: bad topology: %s", addr, why);
            rc = rc == BRIM_ENOMEM ? rc : BRIM_EBADREPLY;
        }
    }
    brim_link_destroy(&l);
    return rc;
}

/*
 * Fetch the topology into TOPO from the live nodes of SH's route (those
 * that named a newer epoch hold it committed), then from each seed of
 * O->coord (nodes or coordinators, comma-separated), and keep the first
 * one of SH's cluster (once known) with an epoch above 0 and above the
 * route's. Returns 0, or the last error (ERRBUF says why).
 */
static int
cluster_fetch(struct brim_bench_shared *sh, const struct brim_bench_opts *o,
              struct brim_topo *topo, char errbuf[BRIM_ERRBUF_LEN])
{
    const struct brim_bench_route *cur = atomic_load(&sh->route);
    const char                    *p, *end;
    char                           addr[BRIM_BENCH_ADDR_MAX + 1];
    uint32_t                       i, n;
    size_t                         len;
    int                            rc = BRIM_ENOTFOUND;

    n = cur != NULL ? cur->nnodes : 0;
    brim_errfmt(errbuf, "no seed answered");
    for (i = 0, p = o->coord; i < n || p != NULL; i++) {
        if (i < n) {
            if (!cur->live[i]) {
                continue;
            }
            snprintf(addr, sizeof(addr), "%s", sh->nodes[i].name);
        } else {
            end = strchr(p, ',');
            len = end != NULL ? (size_t) (end - p) : strlen(p);
            snprintf(addr, sizeof(addr), "%.*s", (int) len, p);
            p = end != NULL ? end + 1 : NULL;
        }
        rc = cluster_fetch_at(addr, sh->secret, topo, errbuf);
        if (rc != 0) {
            continue;
        }
        if ((cur != NULL && topo->cluster_id != cur->cluster_id)
            || topo->map.epoch == 0
            || (cur != NULL && topo->map.epoch <= cur->epoch))
        {
            /* Another cluster, none yet, or not newer: never adopted. */
            brim_errfmt(errbuf, "seed %s: its map (epoch %llu) is not newer",
                        addr, (unsigned long long) topo->map.epoch);
            brim_topo_destroy(topo);
            rc = BRIM_ENOTFOUND;
            continue;
        }
        return 0;
    }
    return rc;
}

/*
 * The index in SH->nodes of the node at ADDR ("host:port"): a known one
 * keeps its index, a new one takes slot *NN (resolved; *NN grows).
 * UINT32_MAX when the table is full (its keys go elsewhere and come back
 * MOVED) or ADDR does not resolve (ERRBUF says why).
 */
static uint32_t
cluster_node_index(struct brim_bench_shared *sh, uint32_t *nn, const char *addr,
                   char errbuf[BRIM_ERRBUF_LEN])
{
    uint32_t j;

    for (j = 0; j < *nn && strcmp(sh->nodes[j].name, addr) != 0; j++) {
    }
    if (j < *nn) {
        return j;
    }
    if (*nn == BRIM_BENCH_NODES_MAX
        || cluster_resolve(&sh->nodes[j], addr, errbuf) != 0)
    {
        return UINT32_MAX;
    }
    snprintf(sh->nodes[j].name, sizeof(sh->nodes[j].name), "%s", addr);
    (*nn)++;
    return j;
}

/*
 * Publish TOPO's routing in SH (unless SH's route is as new): known
 * members keep their node index, new ones get the next free slot. Only
 * the opener and then the refresher thread call this.
 */
static int
cluster_install(struct brim_bench_shared *sh, const struct brim_topo *topo,
                char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_bench_route  *cur, *r;
    const struct brim_member *m;
    uint32_t                 *midx, i, j, nn, first, own;

    cur = atomic_load(&sh->route);
    if (cur != NULL && topo->map.epoch <= cur->epoch) {
        return 0;
    }
    r = brim_calloc(1, sizeof(*r));
    midx = brim_calloc(topo->nmembers > 0 ? topo->nmembers : 1, sizeof(*midx));
    if (r != NULL) {
        r->owner = brim_calloc(topo->map.npartitions, sizeof(*r->owner));
    }
    if (r == NULL || midx == NULL || r->owner == NULL) {
        if (r != NULL) {
            brim_free(r->owner);
        }
        brim_free(r);
        brim_free(midx);
        brim_errfmt(errbuf, "out of memory for the map");
        return BRIM_ENOMEM;
    }
    nn = cur != NULL ? cur->nnodes : 0;
    first = UINT32_MAX;
    for (i = 0; i < topo->nmembers; i++) {
        m = &topo->members[i];
        midx[i] = UINT32_MAX;
        if (m->addr[0] == '\0' || m->state == BRIM_MEMBER_DEAD) {
            continue;
        }
        j = cluster_node_index(sh, &nn, m->addr, errbuf);
        if (j == UINT32_MAX) {
            continue;
        }
        midx[i] = j;
        r->live[j] = 1;
        r->nlive++;
        first = first == UINT32_MAX ? j : first;
    }
    if (first == UINT32_MAX) {
        brim_free(r->owner);
        brim_free(r);
        brim_free(midx);
        brim_errfmt(errbuf, "the map of epoch %llu has no live member",
                    (unsigned long long) topo->map.epoch);
        return BRIM_ENOTFOUND;
    }
    for (i = 0; i < topo->map.npartitions; i++) {
        own = topo->map.owner[i];
        r->owner[i] = own < topo->nmembers && midx[own] != UINT32_MAX
            ? midx[own]
            : first; /* no owner: that node answers MOVED or RETRY */
    }
    brim_free(midx);
    r->epoch = topo->map.epoch;
    r->cluster_id = topo->cluster_id;
    r->seed = topo->seed;
    r->partitions = topo->map.npartitions;
    r->nnodes = nn;
    r->older = cur;
    atomic_store_explicit(&sh->route, r, memory_order_release);
    return 0;
}

/* A new route of PARTITIONS owners, or NULL (out of memory). */
static struct brim_bench_route *
cluster_route_new(uint32_t partitions)
{
    struct brim_bench_route *r;

    r = brim_calloc(1, sizeof(*r));
    if (r != NULL) {
        r->owner = brim_calloc(partitions, sizeof(*r->owner));
        if (r->owner == NULL) {
            brim_free(r);
            return NULL;
        }
        r->partitions = partitions;
    }
    return r;
}

static void
cluster_route_free(struct brim_bench_route *r)
{
    if (r != NULL) {
        brim_free(r->owner);
        brim_free(r);
    }
}

/* redis-cluster: the nodes ASK named into R as live (connected, serving
 * no slot by the map); *NN grows by the new ones. */
static void
cluster_add_extra(struct brim_bench_shared *sh, struct brim_bench_route *r,
                  uint32_t *nn)
{
    struct brim_bench_cluster *cl = sh->cl;
    char     extra[CLUSTER_EXTRA_MAX][BRIM_BENCH_ADDR_MAX + 1];
    char     why[BRIM_ERRBUF_LEN];
    uint32_t i, j, n;

    pthread_mutex_lock(&cl->mu);
    n = cl->nextra;
    memcpy(extra, cl->extra, n * sizeof(extra[0]));
    pthread_mutex_unlock(&cl->mu);
    for (i = 0; i < n; i++) {
        j = cluster_node_index(sh, nn, extra[i], why);
        if (j != UINT32_MAX) {
            r->live[j] = 1;
        }
    }
}

/*
 * redis-cluster: publish MAP (a CLUSTER SLOTS reply) in SH as the next
 * route, unless it routes every slot as the current one does. Masters keep
 * their node index from map to map; a slot no master serves goes to the
 * first master (it answers MOVED or CLUSTERDOWN). Only the opener and
 * then the refresher thread call this.
 */
static int
cluster_install_slots(struct brim_bench_shared             *sh,
                      const struct brim_bench_rcluster_map *map,
                      char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_bench_route *cur, *r;
    uint32_t                 midx[BRIM_BENCH_RCLUSTER_MASTERS_MAX];
    uint32_t                 i, nn, first;
    uint16_t                 own;

    cur = atomic_load(&sh->route);
    r = cluster_route_new(BRIM_BENCH_RCLUSTER_SLOTS);
    if (r == NULL) {
        brim_errfmt(errbuf, "out of memory for the slot map");
        return BRIM_ENOMEM;
    }
    nn = cur != NULL ? cur->nnodes : 0;
    first = UINT32_MAX;
    for (i = 0; i < map->nmasters; i++) {
        midx[i] = cluster_node_index(sh, &nn, map->masters[i], errbuf);
        if (midx[i] != UINT32_MAX) {
            r->live[midx[i]] = 1;
            r->nlive++;
            first = first == UINT32_MAX ? midx[i] : first;
        }
    }
    if (first == UINT32_MAX) {
        cluster_route_free(r);
        return BRIM_ENOTFOUND; /* ERRBUF: why the masters did not resolve */
    }
    cluster_add_extra(sh, r, &nn);
    for (i = 0; i < BRIM_BENCH_RCLUSTER_SLOTS; i++) {
        own = map->owner[i];
        r->owner[i] =
            own < map->nmasters && midx[own] != UINT32_MAX ? midx[own] : first;
    }
    if (cur != NULL && cur->nnodes == nn
        && memcmp(cur->live, r->live, sizeof(r->live)) == 0
        && memcmp(cur->owner, r->owner,
                  BRIM_BENCH_RCLUSTER_SLOTS * sizeof(*r->owner))
            == 0)
    {
        cluster_route_free(r); /* nothing moved */
        return 0;
    }
    r->slots = 1;
    r->epoch = cur != NULL ? cur->epoch + 1 : 1;
    r->nnodes = nn;
    r->older = cur;
    atomic_store_explicit(&sh->route, r, memory_order_release);
    return 0;
}

/*
 * redis-cluster: CLUSTER SLOTS from the --server, or when it cannot be
 * asked (not when it refuses: that is no cluster), from the masters of
 * the current route in turn; then publish the map. Returns 0 or a BRIM_E*
 * with ERRBUF set.
 */
static int
cluster_refresh_slots(struct brim_bench_cluster *cl,
                      char                       errbuf[BRIM_ERRBUF_LEN])
{
    const struct brim_bench_route *r;
    char                           why[BRIM_ERRBUF_LEN];
    uint32_t                       i;
    int                            rc;

    rc = brim_bench_server_slots(&cl->seed, cl->o->host, CLUSTER_FETCH_MS,
                                 cl->map, errbuf);
    r = atomic_load(&cl->sh->route);
    for (i = 0; rc != 0 && rc != BRIM_EBADREQ && r != NULL && i < r->nnodes;
         i++) {
        if (r->live[i]) {
            rc = brim_bench_server_slots(&cl->sh->nodes[i], cl->o->host,
                                         CLUSTER_FETCH_MS, cl->map, why);
        }
    }
    return rc == 0 ? cluster_install_slots(cl->sh, cl->map, errbuf) : rc;
}

/* redis-cluster: resolve the seed --server and read the first map. */
static int
cluster_open_slots(struct brim_bench_cluster *cl, char errbuf[BRIM_ERRBUF_LEN])
{
    cl->redis = 1;
    cl->map = brim_malloc(sizeof(*cl->map));
    if (cl->map == NULL) {
        brim_errfmt(errbuf, "out of memory for the slot map");
        return BRIM_ENOMEM;
    }
    if (cluster_resolve(&cl->seed, cl->o->server, errbuf) != 0) {
        return BRIM_EINVAL;
    }
    snprintf(cl->seed.name, sizeof(cl->seed.name), "%s", cl->o->server);
    return cluster_refresh_slots(cl, errbuf);
}

int
brim_bench_cluster_open(struct brim_bench_shared     *sh,
                        const struct brim_bench_opts *o,
                        char                          errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_bench_cluster *cl;
    struct brim_topo           topo;
    int                        rc;

    cl = brim_calloc(1, sizeof(*cl));
    if (cl == NULL) {
        brim_errfmt(errbuf, "out of memory");
        return BRIM_ENOMEM;
    }
    pthread_mutex_init(&cl->mu, NULL);
    pthread_cond_init(&cl->cv, NULL);
    atomic_init(&cl->want, 0);
    atomic_init(&cl->refetches, 0);
    atomic_init(&cl->asked, 0);
    cl->sh = sh;
    cl->o = o;
    sh->cl = cl;
    if (o->proto->slots) {
        rc = cluster_open_slots(cl, errbuf);
        if (rc == 0) {
            cl->first_epoch = atomic_load(&sh->route)->epoch;
        }
        return rc;
    }
    rc = cluster_fetch(sh, o, &topo, errbuf);
    if (rc != 0) {
        return rc;
    }
    rc = cluster_install(sh, &topo, errbuf);
    brim_topo_destroy(&topo);
    if (rc == 0) {
        cl->first_epoch = atomic_load(&sh->route)->epoch;
    }
    return rc;
}

/* Spacing of redis-cluster fetches, ns: a storm of MOVED replies during a
 * resharding asks for one map per this much time at most. */
#define CLUSTER_SLOTS_SPACING_NS 10000000ull

/* Is a fetch due at NOW (not before NEXT_OK)? */
static int
cluster_due(struct brim_bench_cluster *cl, uint64_t now, uint64_t next_ok)
{
    if (now < next_ok) {
        return 0;
    }
    if (cl->redis) {
        return atomic_load(&cl->asked) != cl->served;
    }
    return atomic_load(&cl->want) > atomic_load(&cl->sh->route)->epoch;
}

/* One fetch, and the map published if it is new. */
static int
cluster_fetch_once(struct brim_bench_cluster *cl, char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_topo topo;
    int              rc;

    if (cl->redis) {
        /* What is asked for from now on needs a fetch after this one. */
        cl->served = atomic_load(&cl->asked);
        return cluster_refresh_slots(cl, errbuf);
    }
    rc = cluster_fetch(cl->sh, cl->o, &topo, errbuf);
    if (rc == 0) {
        rc = cluster_install(cl->sh, &topo, errbuf);
        brim_topo_destroy(&topo);
    }
    return rc;
}

/* The refresher: fetch when a newer epoch was reported (redis-cluster:
 * when a fetch was asked for), one at a time. */
static void *
cluster_main(void *arg)
{
    struct brim_bench_cluster *cl = arg;
    struct brim_bench_shared  *sh = cl->sh;
    struct timespec            ts;
    char                       errbuf[BRIM_ERRBUF_LEN];
    uint64_t                   next_ok, want;
    uint32_t                   behind = 0;
    int                        rc;

    next_ok = 0;
    for (;;) {
        pthread_mutex_lock(&cl->mu);
        while (!cl->stop && !cluster_due(cl, brim_sock_now_ns(), next_ok)) {
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 10000000; /* 10 ms: a bound, not a poll rate */
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            (void) pthread_cond_timedwait(&cl->cv, &cl->mu, &ts);
        }
        if (cl->stop) {
            pthread_mutex_unlock(&cl->mu);
            return NULL;
        }
        pthread_mutex_unlock(&cl->mu);
        want = atomic_load(&cl->want);
        atomic_fetch_add(&cl->refetches, 1);
        errbuf[0] = '\0';
        rc = cluster_fetch_once(cl, errbuf);
        if (rc != 0 && cl->failures++ < 5) {
            fprintf(stderr, "brim-bench: map refresh: %s\n", errbuf);
        }
        if (cl->redis) {
            next_ok = brim_sock_now_ns() + CLUSTER_SLOTS_SPACING_NS;
        } else if (atomic_load(&sh->route)->epoch < want) {
            /* Still behind what a node reported (or what a lost
             * connection hopes for): the coordinator may not have
             * committed it yet; ask again a little later, each time
             * later, up to 320 ms apart. */
            behind = behind < 4 ? behind + 1 : behind;
            next_ok = brim_sock_now_ns() + (CLUSTER_SPACING_NS << behind);
        } else {
            behind = 0;
            next_ok = 0;
        }
    }
}

int
brim_bench_cluster_start(struct brim_bench_shared *sh)
{
    struct brim_bench_cluster *cl = sh->cl;

    if (pthread_create(&cl->tid, NULL, cluster_main, cl) != 0) {
        return BRIM_ESYS;
    }
    cl->started = 1;
    return 0;
}

void
brim_bench_cluster_want(struct brim_bench_shared *sh, uint64_t epoch)
{
    struct brim_bench_cluster *cl = sh->cl;
    uint_fast64_t              cur;

    if (cl->redis) {
        /* Any epoch past the map's: a MOVED, a lost connection. */
        if (epoch > atomic_load(&sh->route)->epoch) {
            atomic_fetch_add(&cl->asked, 1);
            pthread_mutex_lock(&cl->mu);
            pthread_cond_signal(&cl->cv);
            pthread_mutex_unlock(&cl->mu);
        }
        return;
    }
    cur = atomic_load_explicit(&cl->want, memory_order_relaxed);
    while (epoch > cur) {
        if (atomic_compare_exchange_weak(&cl->want, &cur, epoch)) {
            pthread_mutex_lock(&cl->mu);
            pthread_cond_signal(&cl->cv);
            pthread_mutex_unlock(&cl->mu);
            return;
        }
    }
}

void
brim_bench_cluster_want_node(struct brim_bench_shared *sh, const char *addr)
{
    struct brim_bench_cluster *cl = sh->cl;
    uint32_t                   i;

    pthread_mutex_lock(&cl->mu);
    for (i = 0; i < cl->nextra && strcmp(cl->extra[i], addr) != 0; i++) {
    }
    if (i == cl->nextra && i < CLUSTER_EXTRA_MAX) {
        snprintf(cl->extra[i], sizeof(cl->extra[i]), "%s", addr);
        cl->nextra++;
    }
    pthread_mutex_unlock(&cl->mu);
    brim_bench_cluster_want(sh, atomic_load(&sh->route)->epoch + 1);
}

uint64_t
brim_bench_cluster_refetches(const struct brim_bench_shared *sh)
{
    return sh->cl != NULL ? atomic_load(&sh->cl->refetches) : 0;
}

uint64_t
brim_bench_cluster_first_epoch(const struct brim_bench_shared *sh)
{
    return sh->cl != NULL ? sh->cl->first_epoch : 0;
}

void
brim_bench_cluster_close(struct brim_bench_shared *sh)
{
    struct brim_bench_cluster *cl = sh->cl;
    struct brim_bench_route   *r, *older;

    if (cl != NULL && cl->started) {
        pthread_mutex_lock(&cl->mu);
        cl->stop = 1;
        pthread_cond_signal(&cl->cv);
        pthread_mutex_unlock(&cl->mu);
        pthread_join(cl->tid, NULL);
    }
    for (r = atomic_load(&sh->route); r != NULL; r = older) {
        older = r->older;
        brim_free(r->owner);
        brim_free(r);
    }
    atomic_store(&sh->route, NULL);
    if (cl != NULL) {
        brim_free(cl->map);
        pthread_cond_destroy(&cl->cv);
        pthread_mutex_destroy(&cl->mu);
        brim_free(cl);
    }
    sh->cl = NULL;
}
