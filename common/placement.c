/*
 * common/placement.c - consistent hashing with bounded loads (Mirrokni,
 * Thorup and Zadimoghaddam, SODA 2018): exact integer caps, the fresh
 * "replace" rule and the incremental "rebalance" rule of DESIGN.md
 * section 4. The clockwise walk past full nodes runs on a union-find over
 * token indices: each token points at itself while its node has room and
 * at its successor once the node is full, so a lookup with path compression
 * skips every full token in near-constant amortised time.
 */
#include "common/placement.h"

#include <inttypes.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"

#define PPM_ONE ((uint64_t) 1000000)

/* Unit states inside brim_place_rebalance(). */
#define UNIT_SETTLED 0   /* kept its owner so far */
#define UNIT_UNSETTLED 1 /* owner gone, or in a newcomer's arc */
#define UNIT_SHED 2      /* shed by an over-cap owner */

/*
 * The walk: "next token whose node has room", after the disjoint-set
 * forest with path compression (Tarjan, JACM 1975). Tokens only ever go
 * from having room to full, so links only ever point forward.
 */
struct place_walk {
    const struct brim_ring *ring;      /* borrowed */
    const uint64_t         *cap;       /* per node, borrowed */
    uint64_t               *count;     /* per node, borrowed, updated */
    uint32_t               *parent;    /* ntokens + 1; [ntokens] wraps */
    uint32_t               *tok_start; /* nnodes + 1 offsets in tok_of */
    uint32_t               *tok_of;    /* token indices grouped by node */
};

const char *
brim_move_reason_name(enum brim_move_reason reason)
{
    switch (reason) {
    case BRIM_MOVE_NONE:
        return "none";
    case BRIM_MOVE_ARC:
        return "arc";
    case BRIM_MOVE_CAP:
        return "cap";
    }
    return "unknown";
}

int
brim_ppm_parse(const char *what, const char *text, uint64_t max_ppm,
               uint64_t *ppm, char errbuf[BRIM_ERRBUF_LEN])
{
    const char *p = text;
    uint64_t    whole = 0, frac = 0, value;
    int         digits = 0, fdigits = 0;

    while (*p >= '0' && *p <= '9') {
        if (whole > max_ppm / PPM_ONE) {
            goto too_big;
        }
        whole = whole * 10 + (uint64_t) (*p - '0');
        p++;
        digits++;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (fdigits < 6) {
                frac = frac * 10 + (uint64_t) (*p - '0');
            } else if (*p != '0') {
                brim_errfmt(errbuf,
                            "%s: \"%s\" has more than 6 decimal "
                            "places; millionths cannot hold it exactly",
                            what, text);
                return BRIM_EINVAL;
            }
            fdigits++;
            p++;
        }
    }
    if (*p != '\0' || digits + fdigits == 0) {
        brim_errfmt(errbuf,
                    "%s: \"%s\" is not a plain non-negative decimal "
                    "number (like 0.05)",
                    what, text);
        return BRIM_EINVAL;
    }
    while (fdigits < 6) {
        frac *= 10;
        fdigits++;
    }
    /* WHOLE x 1e6 + FRAC <= MAX_PPM, tested without wrapping past 2^64. */
    if (frac > max_ppm || whole > (max_ppm - frac) / PPM_ONE) {
        goto too_big;
    }
    value = whole * PPM_ONE + frac;
    *ppm = value;
    return 0;

too_big:
    brim_errfmt(errbuf,
                "%s: \"%s\" is too large, the most is %" PRIu64 ".%06" PRIu64,
                what, text, max_ppm / PPM_ONE, max_ppm % PPM_ONE);
    return BRIM_EINVAL;
}

int
brim_eps_parse(const char *text, uint64_t *eps_ppm,
               char errbuf[BRIM_ERRBUF_LEN])
{
    if (strcmp(text, "none") == 0) {
        *eps_ppm = BRIM_EPS_NONE;
        return 0;
    }
    return brim_ppm_parse("eps", text, BRIM_EPS_PPM_MAX, eps_ppm, errbuf);
}

uint64_t
brim_cap(uint64_t units, uint64_t eps_ppm, uint64_t weight_ppm,
         uint64_t weight_sum_ppm)
{
    unsigned __int128 num, den, cap;

    BRIM_ASSERT(weight_sum_ppm > 0);

    if (eps_ppm == BRIM_EPS_NONE) {
        return UINT64_MAX;
    }
    /* (1e6 + eps) x U x w over 1e6 x W, rounded up. Operands stay below
     * 2^31 x 2^64 x 2^30 only in theory; real inputs (eps <= 1000, U <
     * 2^40, w <= 1e9) fit 128 bits with room to spare. */
    num = (unsigned __int128) (PPM_ONE + eps_ppm) * units * weight_ppm;
    den = (unsigned __int128) PPM_ONE * weight_sum_ppm;
    cap = (num + den - 1) / den;
    return cap > UINT64_MAX ? UINT64_MAX : (uint64_t) cap;
}

void
brim_ring_caps(const struct brim_ring *ring, uint64_t units, uint64_t eps_ppm,
               uint64_t *caps)
{
    uint32_t i;

    for (i = 0; i < ring->nnodes; i++) {
        caps[i] = brim_cap(units, eps_ppm, ring->nodes[i].weight_ppm,
                           ring->weight_sum_ppm);
    }
}

int
brim_placement_check(uint32_t tokens_per_node, uint32_t partitions,
                     uint32_t nnodes, char errbuf[BRIM_ERRBUF_LEN])
{
    if (tokens_per_node == 0 || tokens_per_node > BRIM_TOKENS_PER_NODE_MAX) {
        brim_errfmt(errbuf,
                    "placement: tokens per node (V) is %" PRIu32
                    ", must be 1 to %d",
                    tokens_per_node, BRIM_TOKENS_PER_NODE_MAX);
        return BRIM_EINVAL;
    }
    if (partitions < BRIM_PARTITIONS_MIN || partitions > BRIM_PARTITIONS_MAX
        || (partitions & (partitions - 1)) != 0)
    {
        brim_errfmt(errbuf,
                    "placement: partitions (P) is %" PRIu32 ", must "
                    "be a power of two from %u to %u",
                    partitions, BRIM_PARTITIONS_MIN, BRIM_PARTITIONS_MAX);
        return BRIM_EINVAL;
    }
    if (nnodes > BRIM_NODES_MAX) {
        brim_errfmt(errbuf, "placement: %" PRIu32 " nodes, the most is %d",
                    nnodes, BRIM_NODES_MAX);
        return BRIM_EINVAL;
    }
    if (partitions < nnodes) {
        brim_errfmt(errbuf,
                    "placement: partitions (P) is %" PRIu32 ", fewer "
                    "than the %" PRIu32 " nodes; P must be at least N",
                    partitions, nnodes);
        return BRIM_EINVAL;
    }
    return 0;
}

static void
walk_destroy(struct place_walk *w)
{
    brim_free(w->parent);
    brim_free(w->tok_start);
    brim_free(w->tok_of);
}

static void
walk_mark_full(struct place_walk *w, uint32_t node)
{
    uint32_t k, t;

    for (k = w->tok_start[node]; k < w->tok_start[node + 1]; k++) {
        t = w->tok_of[k];
        w->parent[t] = t + 1;
    }
}

/*
 * Set up W over RING with per-node CAP and COUNT (borrowed; COUNT holds
 * what each node already has). Nodes already at their cap start full.
 */
static int
walk_init(struct place_walk *w, const struct brim_ring *ring,
          const uint64_t *cap, uint64_t *count)
{
    uint32_t  i, n = ring->nnodes;
    uint32_t *fill;
    size_t    t, ntok = ring->ntokens;

    BRIM_ASSERT(ntok < UINT32_MAX);

    memset(w, 0, sizeof(*w));
    w->ring = ring;
    w->cap = cap;
    w->count = count;
    w->parent = brim_malloc((ntok + 1) * sizeof(*w->parent));
    w->tok_start = brim_calloc((size_t) n + 1, sizeof(*w->tok_start));
    w->tok_of = brim_malloc(BRIM_MAX(ntok, 1) * sizeof(*w->tok_of));
    fill = brim_calloc(BRIM_MAX(n, 1), sizeof(*fill));
    if (w->parent == NULL || w->tok_start == NULL || w->tok_of == NULL
        || fill == NULL)
    {
        brim_free(fill);
        walk_destroy(w);
        return BRIM_ENOMEM;
    }
    /* Group token indices by node (counting sort) for walk_mark_full(). */
    for (t = 0; t < ntok; t++) {
        w->tok_start[ring->tokens[t].node + 1]++;
    }
    for (i = 0; i < n; i++) {
        w->tok_start[i + 1] += w->tok_start[i];
    }
    for (t = 0; t < ntok; t++) {
        i = ring->tokens[t].node;
        w->tok_of[w->tok_start[i] + fill[i]++] = (uint32_t) t;
    }
    brim_free(fill);
    for (t = 0; t <= ntok; t++) {
        w->parent[t] = (uint32_t) t;
    }
    for (i = 0; i < n; i++) {
        if (count[i] >= cap[i]) {
            walk_mark_full(w, i);
        }
    }
    return 0;
}

/* Root of T: the first token at or after T whose node has room, or the
 * wrap sentinel ntokens. Compresses the path it walked. */
static uint32_t
walk_root(struct place_walk *w, uint32_t t)
{
    uint32_t root = t, next;

    while (w->parent[root] != root) {
        root = w->parent[root];
    }
    while (w->parent[t] != root) {
        next = w->parent[t];
        w->parent[t] = root;
        t = next;
    }
    return root;
}

/*
 * Give one unit whose successor token is START to the first node with room
 * clockwise from START, wrapping past 2^64. Some node always has room: the
 * caps sum to at least the unit count (N x cap >= U for eps >= 0).
 */
static uint32_t
walk_take(struct place_walk *w, uint32_t start)
{
    uint32_t root, node;

    root = walk_root(w, start);
    if (root == w->ring->ntokens) {
        root = walk_root(w, 0);
    }
    BRIM_ASSERT(root < w->ring->ntokens); /* caps sum to >= units */
    node = w->ring->tokens[root].node;
    w->count[node]++;
    if (w->count[node] >= w->cap[node]) {
        walk_mark_full(w, node);
    }
    return node;
}

/* Per-node arrays of caps and counts for RING, counts zeroed. */
static int
place_alloc_loads(const struct brim_ring *ring, uint64_t units,
                  uint64_t eps_ppm, uint64_t **cap, uint64_t **count)
{
    *cap = brim_malloc(ring->nnodes * sizeof(**cap));
    *count = brim_calloc(ring->nnodes, sizeof(**count));
    if (*cap == NULL || *count == NULL) {
        brim_free(*cap);
        brim_free(*count);
        *cap = NULL; /* callers free both again on error */
        *count = NULL;
        return BRIM_ENOMEM;
    }
    brim_ring_caps(ring, units, eps_ppm, *cap);
    return 0;
}

int
brim_place_replace(const struct brim_ring *ring, uint64_t eps_ppm,
                   const uint64_t *pos, size_t n, uint16_t *owner,
                   char errbuf[BRIM_ERRBUF_LEN])
{
    struct place_walk w;
    uint64_t         *cap, *count;
    size_t            i;

    if (ring->nnodes == 0 || ring->ntokens == 0) {
        brim_errfmt(errbuf, "placement: no nodes to place %zu units on", n);
        return BRIM_EINVAL;
    }
    if (place_alloc_loads(ring, n, eps_ppm, &cap, &count) != 0) {
        goto nomem;
    }
    if (walk_init(&w, ring, cap, count) != 0) {
        brim_free(cap);
        brim_free(count);
        goto nomem;
    }
    for (i = 0; i < n; i++) {
        owner[i] = (uint16_t) walk_take(
            &w, (uint32_t) brim_ring_successor(ring, pos[i]));
    }
    walk_destroy(&w);
    brim_free(cap);
    brim_free(count);
    return 0;

nomem:
    brim_errfmt(errbuf, "placement: out of memory placing %zu units", n);
    return BRIM_ENOMEM;
}

/*
 * Step 2 of the rebalance rule: every node above its cap sheds settled
 * units, displaced ones first (owner is not the ring owner), each group in
 * reverse index order. One descending pass per group serves every node at
 * once, since a node's shedding does not depend on another's.
 */
static void
rebalance_shed(const struct brim_ring *ring, const uint32_t *succ, size_t n,
               const uint64_t *cap, uint64_t *count, uint16_t *owner,
               uint8_t *state)
{
    size_t   i;
    uint16_t o;
    int      pass;

    for (pass = 0; pass < 2; pass++) {
        for (i = n; i-- > 0;) {
            o = owner[i];
            if (state[i] != UNIT_SETTLED || count[o] <= cap[o]) {
                continue;
            }
            if (pass == 0 && o == ring->tokens[succ[i]].node) {
                continue; /* natural: shed in the second pass */
            }
            owner[i] = BRIM_NODE_NONE;
            state[i] = UNIT_SHED;
            count[o]--;
        }
    }
}

int
brim_place_rebalance(const struct brim_ring *old_ring,
                     const uint16_t         *old_owner,
                     const struct brim_ring *new_ring, uint64_t eps_ppm,
                     const uint64_t *pos, size_t n, uint16_t *new_owner,
                     uint8_t *reason, char errbuf[BRIM_ERRBUF_LEN])
{
    struct place_walk w;
    uint64_t         *cap = NULL, *count = NULL;
    uint16_t         *trans = NULL, *back = NULL;
    uint32_t         *succ = NULL;
    uint8_t          *state = NULL;
    uint16_t          o, r;
    size_t            i;
    int               rc = BRIM_ENOMEM;

    if (new_ring->nnodes == 0 || new_ring->ntokens == 0) {
        brim_errfmt(errbuf, "placement: no nodes to place %zu units on", n);
        return BRIM_EINVAL;
    }
    for (i = 0; i < n; i++) {
        if (old_owner[i] != BRIM_NODE_NONE && old_owner[i] >= old_ring->nnodes)
        {
            brim_errfmt(errbuf,
                        "placement: unit %zu has old owner %u, but "
                        "the old ring has %" PRIu32 " nodes",
                        i, old_owner[i], old_ring->nnodes);
            return BRIM_EINVAL;
        }
    }
    trans = brim_malloc(BRIM_MAX(old_ring->nnodes, 1) * sizeof(*trans));
    back = brim_malloc(new_ring->nnodes * sizeof(*back));
    succ = brim_malloc(BRIM_MAX(n, 1) * sizeof(*succ));
    state = brim_malloc(BRIM_MAX(n, 1));
    if (trans == NULL || back == NULL || succ == NULL || state == NULL
        || place_alloc_loads(new_ring, n, eps_ppm, &cap, &count) != 0)
    {
        goto done;
    }
    brim_ring_translate(old_ring, new_ring, trans);
    brim_ring_translate(new_ring, old_ring, back); /* NONE: a newcomer */

    /* Step 1: settled units keep their owner; the rest wait. */
    for (i = 0; i < n; i++) {
        succ[i] = (uint32_t) brim_ring_successor(new_ring, pos[i]);
        r = (uint16_t) new_ring->tokens[succ[i]].node;
        o = old_owner[i] == BRIM_NODE_NONE ? BRIM_NODE_NONE
                                           : trans[old_owner[i]];
        if (o == BRIM_NODE_NONE || back[r] == BRIM_NODE_NONE) {
            new_owner[i] = BRIM_NODE_NONE;
            state[i] = UNIT_UNSETTLED;
        } else {
            new_owner[i] = o;
            state[i] = UNIT_SETTLED;
            count[o]++;
        }
    }

    /* Step 2: over-cap nodes shed. Step 3: the waiting units walk. */
    rebalance_shed(new_ring, succ, n, cap, count, new_owner, state);
    if (walk_init(&w, new_ring, cap, count) != 0) {
        goto done;
    }
    for (i = 0; i < n; i++) {
        if (state[i] != UNIT_SETTLED) {
            new_owner[i] = (uint16_t) walk_take(&w, succ[i]);
        }
    }
    walk_destroy(&w);

    if (reason != NULL) {
        for (i = 0; i < n; i++) {
            o = old_owner[i] == BRIM_NODE_NONE ? BRIM_NODE_NONE
                                               : trans[old_owner[i]];
            r = (uint16_t) new_ring->tokens[succ[i]].node;
            if (o == new_owner[i]) {
                reason[i] = BRIM_MOVE_NONE;
            } else if (state[i] == UNIT_UNSETTLED && new_owner[i] == r) {
                reason[i] = BRIM_MOVE_ARC;
            } else {
                reason[i] = BRIM_MOVE_CAP;
            }
        }
    }
    rc = 0;

done:
    if (rc != 0) {
        brim_errfmt(errbuf, "placement: out of memory rebalancing %zu units",
                    n);
    }
    brim_free(trans);
    brim_free(back);
    brim_free(succ);
    brim_free(state);
    brim_free(cap);
    brim_free(count);
    return rc;
}

enum brim_move_reason
brim_move_reason_of(const struct brim_ring *old_ring, uint16_t old_owner,
                    const struct brim_ring *new_ring, uint16_t new_owner,
                    uint64_t pos)
{
    const struct brim_ring_node *nd;
    int32_t                      o = -1;
    uint32_t                     r;
    int                          newcomer;

    if (old_owner != BRIM_NODE_NONE && old_owner < old_ring->nnodes) {
        nd = &old_ring->nodes[old_owner];
        o = brim_ring_find_node(new_ring, nd->name, nd->name_len);
    }
    if (o >= 0 && (uint32_t) o == new_owner) {
        return BRIM_MOVE_NONE;
    }
    r = brim_ring_owner(new_ring, pos);
    nd = &new_ring->nodes[r];
    newcomer = brim_ring_find_node(old_ring, nd->name, nd->name_len) < 0;
    if ((o < 0 || newcomer) && new_owner == r) {
        return BRIM_MOVE_ARC;
    }
    return BRIM_MOVE_CAP;
}
