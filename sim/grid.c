/*
 * sim/grid.c - the Model A engine of shared/cases/seed-figures.md: N nodes
 * of P random tokens, K = N x kpn keys at random positions, placed in draw
 * order with the replace rule of common/placement.c (bounded loads,
 * Mirrokni, Thorup and Zadimoghaddam, SODA 2018); then one node added and,
 * separately, one removed, and the keys that change node counted under the
 * replace and/or the rebalance rule. One seed of one cell is one task; the
 * ring, the keys and their ring owners are drawn once per task and reused
 * for every eps. Tasks run on a few pthreads and write disjoint slots, so
 * the figures do not depend on the thread count. No output here.
 */
#include "sim/sim.h"

#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/placement.h"
#include "common/ring.h"
#include "common/rng.h"

/* Everything one task draws and places; owned by one thread. */
struct grid_work {
    uint32_t         n;          /* nodes before the change */
    size_t           k;          /* keys */
    struct brim_ring ring;       /* the N nodes */
    struct brim_ring ring_add;   /* N + 1: node n<N> added */
    struct brim_ring ring_rem;   /* N - 1: one node removed */
    uint32_t         leaver;     /* the removed node's index in ring */
    uint64_t        *pos;        /* K key positions, in draw order */
    uint16_t        *ring_owner; /* K ring owners on ring */
    uint16_t        *owner;      /* K owners of the N-node placement */
    uint16_t        *owner_new;  /* K owners after a change */
    uint16_t        *trans_add;  /* ring index -> ring_add index */
    uint16_t        *trans_rem;  /* ring index -> ring_rem index */
    uint64_t        *load;       /* keys per node, N + 1 entries */
    uint64_t        *caps;       /* caps per node, N + 1 entries */
    uint64_t        *tok;        /* P token positions being drawn */
};

/* The shared state of a grid run: the task queue and the first error. */
struct grid_pool {
    const struct brim_sim_grid *g;          /* borrowed */
    struct brim_sim_run        *runs;       /* results, one slot a run */
    pthread_mutex_t             lock;       /* guards what follows */
    size_t                      next;       /* next task to hand out */
    size_t                      ntasks;     /* cells x seeds */
    uint32_t                   *seeds_done; /* per cell */
    size_t                      cells_done; /* cells with every seed done */
    int                         rc;         /* first error, 0 if none */
    char                        errbuf[BRIM_ERRBUF_LEN]; /* its reason */
    double                      t0; /* start, for progress */
};

size_t
brim_sim_run_index(const struct brim_sim_grid *g, size_t cell, uint32_t s,
                   size_t e)
{
    return (cell * g->seeds + s) * g->neps + e;
}

static void
grid_work_free(struct grid_work *w)
{
    brim_ring_destroy(&w->ring);
    brim_ring_destroy(&w->ring_add);
    brim_ring_destroy(&w->ring_rem);
    brim_free(w->pos);
    brim_free(w->ring_owner);
    brim_free(w->owner);
    brim_free(w->owner_new);
    brim_free(w->trans_add);
    brim_free(w->trans_rem);
    brim_free(w->load);
    brim_free(w->caps);
    brim_free(w->tok);
    memset(w, 0, sizeof(*w));
}

/* Draw P positions and add node number ID with them to RING. */
static int
grid_add_node(struct brim_ring *ring, struct brim_rng *rng, uint64_t *tok,
              uint32_t id, uint32_t p, char errbuf[BRIM_ERRBUF_LEN])
{
    char     name[BRIM_SIM_NAME_LEN];
    uint32_t j;

    for (j = 0; j < p; j++) {
        tok[j] = brim_rng_next(rng);
    }
    snprintf(name, sizeof(name), BRIM_SIM_NAME_FMT, id);
    return brim_ring_add_node_at(ring, name, BRIM_WEIGHT_PPM_ONE, tok, p,
                                 errbuf);
}

/*
 * Draw one run of Model A into W, in the order seed-figures.md fixes: the
 * N x P tokens (node by node), the K keys, the added node's P tokens, then
 * the removed node. W must be zeroed. On error the caller frees W.
 */
static int
grid_build(struct grid_work *w, uint32_t n, uint32_t kpn, uint32_t p,
           uint32_t seed, char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_rng rng;
    uint64_t        v[4];
    char            name[BRIM_SIM_NAME_LEN];
    uint32_t        i;
    size_t          j;
    int             rc;

    w->n = n;
    w->k = (size_t) n * kpn;
    v[0] = seed;
    v[1] = n;
    v[2] = kpn;
    v[3] = p;
    brim_rng_seed(&rng, brim_sim_seed(BRIM_SIM_MODEL_A, v, 4));

    w->pos = brim_malloc(w->k * sizeof(*w->pos));
    w->ring_owner = brim_malloc(w->k * sizeof(*w->ring_owner));
    w->owner = brim_malloc(w->k * sizeof(*w->owner));
    w->owner_new = brim_malloc(w->k * sizeof(*w->owner_new));
    w->trans_add = brim_malloc(n * sizeof(*w->trans_add));
    w->trans_rem = brim_malloc(n * sizeof(*w->trans_rem));
    w->load = brim_malloc((n + 1) * sizeof(*w->load));
    w->caps = brim_malloc((n + 1) * sizeof(*w->caps));
    w->tok = brim_malloc(p * sizeof(*w->tok));
    if (w->pos == NULL || w->ring_owner == NULL || w->owner == NULL
        || w->owner_new == NULL || w->trans_add == NULL || w->trans_rem == NULL
        || w->load == NULL || w->caps == NULL || w->tok == NULL)
    {
        brim_errfmt(errbuf, "grid: out of memory for %zu keys", w->k);
        return BRIM_ENOMEM;
    }

    /* Explicit positions make the ring's seed and V irrelevant. */
    rc = brim_ring_init(&w->ring, 0, p, errbuf);
    for (i = 0; rc == 0 && i < n; i++) {
        rc = grid_add_node(&w->ring, &rng, w->tok, i, p, errbuf);
    }
    if (rc != 0) {
        return rc;
    }
    for (j = 0; j < w->k; j++) {
        w->pos[j] = brim_rng_next(&rng);
    }
    if (brim_ring_copy(&w->ring_add, &w->ring) != 0
        || brim_ring_copy(&w->ring_rem, &w->ring) != 0)
    {
        brim_errfmt(errbuf,
                    "grid: out of memory copying a ring of %zu "
                    "tokens",
                    w->ring.ntokens);
        return BRIM_ENOMEM;
    }
    rc = grid_add_node(&w->ring_add, &rng, w->tok, n, p, errbuf);
    if (rc != 0) {
        return rc;
    }
    snprintf(name, sizeof(name), BRIM_SIM_NAME_FMT,
             (uint32_t) brim_rng_below(&rng, n));
    w->leaver = (uint32_t) brim_ring_find_node(&w->ring, name, strlen(name));
    rc = brim_ring_remove_node(&w->ring_rem, name);
    if (rc != 0) {
        brim_errfmt(errbuf, "grid: cannot remove %s: %s", name,
                    brim_strerror(rc));
        return rc;
    }
    brim_ring_translate(&w->ring, &w->ring_add, w->trans_add);
    brim_ring_translate(&w->ring, &w->ring_rem, w->trans_rem);
    for (j = 0; j < w->k; j++) {
        w->ring_owner[j] = (uint16_t) brim_ring_owner(&w->ring, w->pos[j]);
    }
    return 0;
}

/*
 * Count OWNER's keys per node of RING into W->load and return 1 when some
 * node holds more than its cap for EPS_PPM, else 0. *MAX_LOAD (if not
 * NULL) receives the busiest node's load.
 */
static int
grid_check_caps(struct grid_work *w, const struct brim_ring *ring,
                const uint16_t *owner, uint64_t eps_ppm, uint64_t *max_load)
{
    uint64_t top;
    uint32_t i;
    size_t   j;
    int      over;

    memset(w->load, 0, ring->nnodes * sizeof(*w->load));
    for (j = 0; j < w->k; j++) {
        BRIM_ASSERT(owner[j] < ring->nnodes);
        w->load[owner[j]]++;
    }
    brim_ring_caps(ring, w->k, eps_ppm, w->caps);
    top = 0;
    over = 0;
    for (i = 0; i < ring->nnodes; i++) {
        top = BRIM_MAX(top, w->load[i]);
        over |= w->load[i] > w->caps[i];
    }
    if (max_load != NULL) {
        *max_load = top;
    }
    return over;
}

/*
 * Keys whose node (by name) differs between W->owner and W->owner_new,
 * given TRANS (ring -> new ring). *OTHERS receives those that were not on
 * the node numbered LEAVER before (pass UINT32_MAX on an add).
 */
static uint64_t
grid_count_moved(const struct grid_work *w, const uint16_t *trans,
                 uint32_t leaver, uint64_t *others)
{
    uint64_t moved, oth;
    size_t   j;

    moved = 0;
    oth = 0;
    for (j = 0; j < w->k; j++) {
        if (trans[w->owner[j]] != w->owner_new[j]) {
            moved++;
            oth += w->owner[j] != leaver;
        }
    }
    *others = oth;
    return moved;
}

/* Re-place under rule RI (replace or rebalance) onto NEW_RING. */
static int
grid_change(struct grid_work *w, int ri, const struct brim_ring *new_ring,
            uint64_t eps_ppm, char errbuf[BRIM_ERRBUF_LEN])
{
    if (ri == BRIM_SIM_RI_REPLACE) {
        return brim_place_replace(new_ring, eps_ppm, w->pos, w->k, w->owner_new,
                                  errbuf);
    }
    return brim_place_rebalance(&w->ring, w->owner, new_ring, eps_ppm, w->pos,
                                w->k, w->owner_new, NULL, errbuf);
}

/* Measure W at one eps under RULES into RUN. */
static int
grid_measure(struct grid_work *w, uint64_t eps_ppm, unsigned rules,
             struct brim_sim_run *run, char errbuf[BRIM_ERRBUF_LEN])
{
    uint64_t unused;
    size_t   j;
    int      ri, rc;

    memset(run, 0, sizeof(*run));
    rc = brim_place_replace(&w->ring, eps_ppm, w->pos, w->k, w->owner, errbuf);
    if (rc != 0) {
        return rc;
    }
    run->over_cap |=
        grid_check_caps(w, &w->ring, w->owner, eps_ppm, &run->max_load);
    run->cap = brim_cap(w->k, eps_ppm, BRIM_WEIGHT_PPM_ONE,
                        (uint64_t) w->n * BRIM_WEIGHT_PPM_ONE);
    for (j = 0; j < w->k; j++) {
        run->displaced += w->owner[j] != w->ring_owner[j];
    }

    for (ri = 0; ri < 2; ri++) {
        if ((rules & (1u << ri)) == 0) {
            continue;
        }
        rc = grid_change(w, ri, &w->ring_add, eps_ppm, errbuf);
        if (rc != 0) {
            return rc;
        }
        run->over_cap |=
            grid_check_caps(w, &w->ring_add, w->owner_new, eps_ppm, NULL);
        run->moved_add[ri] =
            grid_count_moved(w, w->trans_add, UINT32_MAX, &unused);
        rc = grid_change(w, ri, &w->ring_rem, eps_ppm, errbuf);
        if (rc != 0) {
            return rc;
        }
        run->over_cap |=
            grid_check_caps(w, &w->ring_rem, w->owner_new, eps_ppm, NULL);
        run->moved_remove[ri] = grid_count_moved(w, w->trans_rem, w->leaver,
                                                 &run->moved_remove_others[ri]);
    }
    return 0;
}

/* Run task T of POOL: one seed of one cell, every eps. */
static int
grid_task(struct grid_pool *pool, size_t t, char errbuf[BRIM_ERRBUF_LEN])
{
    const struct brim_sim_grid *g = pool->g;
    struct grid_work            w;
    size_t                      cell, rest, e;
    uint32_t                    s, n, kpn, p;
    int                         rc;

    cell = t / g->seeds;
    s = (uint32_t) (t % g->seeds);
    p = g->tokens[cell % g->ntokens];
    rest = cell / g->ntokens;
    kpn = g->kpn[rest % g->nkpn];
    n = g->nodes[rest / g->nkpn];

    memset(&w, 0, sizeof(w));
    rc = grid_build(&w, n, kpn, p, s + 1, errbuf);
    for (e = 0; rc == 0 && e < g->neps; e++) {
        rc = grid_measure(&w, g->eps[e].ppm, g->rules,
                          &pool->runs[brim_sim_run_index(g, cell, s, e)],
                          errbuf);
    }
    grid_work_free(&w);
    return rc;
}

/* Under POOL->lock: note task T done and print progress if wanted. */
static void
grid_note_done(struct grid_pool *pool, size_t t)
{
    const struct brim_sim_grid *g = pool->g;
    size_t                      cell, ncells, rest;

    cell = t / g->seeds;
    if (++pool->seeds_done[cell] < g->seeds) {
        return;
    }
    pool->cells_done++;
    if (g->progress == 0) {
        return;
    }
    ncells = pool->ntasks / g->seeds;
    rest = cell / g->ntokens;
    fprintf(stderr,
            "brim-sim grid: [%zu/%zu] nodes %" PRIu32 ", %" PRIu32
            " keys/node, %" PRIu32 " tokens: done (%.1f s)\n",
            pool->cells_done, ncells, g->nodes[rest / g->nkpn],
            g->kpn[rest % g->nkpn], g->tokens[cell % g->ntokens],
            brim_sim_now() - pool->t0);
}

static void *
grid_worker(void *arg)
{
    struct grid_pool *pool = arg;
    char              errbuf[BRIM_ERRBUF_LEN];
    size_t            t;
    int               rc;

    for (;;) {
        pthread_mutex_lock(&pool->lock);
        if (pool->rc != 0 || pool->next == pool->ntasks) {
            pthread_mutex_unlock(&pool->lock);
            return NULL;
        }
        t = pool->next++;
        pthread_mutex_unlock(&pool->lock);

        errbuf[0] = '\0';
        rc = grid_task(pool, t, errbuf);

        pthread_mutex_lock(&pool->lock);
        if (rc != 0 && pool->rc == 0) {
            pool->rc = rc;
            memcpy(pool->errbuf, errbuf, sizeof(errbuf));
        } else if (rc == 0) {
            grid_note_done(pool, t);
        }
        pthread_mutex_unlock(&pool->lock);
    }
}

int
brim_sim_grid_run(const struct brim_sim_grid *g, struct brim_sim_run *runs,
                  char errbuf[BRIM_ERRBUF_LEN])
{
    struct grid_pool pool;
    pthread_t       *tid;
    size_t           ncells;
    unsigned         i, started;

    memset(&pool, 0, sizeof(pool));
    ncells = g->nnodes * g->nkpn * g->ntokens;
    pool.g = g;
    pool.runs = runs;
    pool.ntasks = ncells * g->seeds;
    pool.t0 = brim_sim_now();
    pool.seeds_done = brim_calloc(ncells, sizeof(*pool.seeds_done));
    tid = brim_calloc(g->threads, sizeof(*tid));
    if (pool.seeds_done == NULL || tid == NULL) {
        brim_free(pool.seeds_done);
        brim_free(tid);
        brim_errfmt(errbuf, "grid: out of memory");
        return BRIM_ENOMEM;
    }
    pthread_mutex_init(&pool.lock, NULL);

    /* The calling thread works too; a thread that fails to start is
     * simply one worker fewer. */
    started = 0;
    for (i = 1; i < g->threads; i++) {
        if (pthread_create(&tid[started], NULL, grid_worker, &pool) == 0) {
            started++;
        }
    }
    grid_worker(&pool);
    for (i = 0; i < started; i++) {
        pthread_join(tid[i], NULL);
    }

    pthread_mutex_destroy(&pool.lock);
    brim_free(pool.seeds_done);
    brim_free(tid);
    if (pool.rc != 0) {
        brim_errfmt(errbuf, "%s", pool.errbuf);
    }
    return pool.rc;
}
