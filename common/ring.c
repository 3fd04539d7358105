/*
 * common/ring.c - the token ring: nodes sorted by name, tokens sorted by
 * (position, node name), ring-owner lookup by binary search. Consistent
 * hashing after Karger et al., STOC 1997; the tie and encoding rules are
 * DESIGN.md section 3's. Placement lives in placement.c.
 */
#include "common/ring.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"

int
brim_ring_name_valid(const char *name, size_t len)
{
    size_t i;
    char   ch;

    if (len == 0 || len > BRIM_NAME_MAX) {
        return 0;
    }
    for (i = 0; i < len; i++) {
        ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
              || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == ':'
              || ch == '-'))
        {
            return 0;
        }
    }
    return 1;
}

/* Byte-wise name order, a proper prefix first (strcmp order). */
static int
ring_name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c;

    c = memcmp(a, b, BRIM_MIN(alen, blen));
    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : (alen > blen ? 1 : 0);
}

/* Tokens by position, then node index; node indices are name ranks, so
 * this is the (position, name) order of DESIGN.md section 3. */
static int
ring_token_cmp(const void *pa, const void *pb)
{
    const struct brim_token *a = pa, *b = pb;

    if (a->pos != b->pos) {
        return a->pos < b->pos ? -1 : 1;
    }
    return a->node < b->node ? -1 : (a->node > b->node ? 1 : 0);
}

/* Index of the first node whose name is >= NAME (insertion point). */
static uint32_t
ring_lower_bound_node(const struct brim_ring *ring, const char *name,
                      size_t len)
{
    uint32_t lo = 0, hi = ring->nnodes, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (ring_name_cmp(ring->nodes[mid].name, ring->nodes[mid].name_len,
                          name, len)
            < 0)
        {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

int
brim_ring_init(struct brim_ring *ring, uint64_t seed, uint32_t tokens_per_node,
               char errbuf[BRIM_ERRBUF_LEN])
{
    memset(ring, 0, sizeof(*ring));
    if (tokens_per_node == 0 || tokens_per_node > BRIM_TOKENS_PER_NODE_MAX) {
        brim_errfmt(errbuf,
                    "ring: tokens per node (V) is %" PRIu32 ", must be 1 to %d",
                    tokens_per_node, BRIM_TOKENS_PER_NODE_MAX);
        return BRIM_EINVAL;
    }
    ring->seed = seed;
    ring->tokens_per_node = tokens_per_node;
    return 0;
}

void
brim_ring_destroy(struct brim_ring *ring)
{
    uint32_t i;

    if (ring->nodes != NULL) {
        for (i = 0; i < ring->nnodes; i++) {
            brim_free(ring->nodes[i].name);
        }
    }
    brim_free(ring->nodes);
    brim_free(ring->tokens);
    memset(ring, 0, sizeof(*ring));
}

int
brim_ring_copy(struct brim_ring *dst, const struct brim_ring *src)
{
    uint32_t i;

    *dst = *src;
    dst->nodes = NULL;
    dst->tokens = NULL;
    dst->nnodes = 0;
    dst->nodes_cap = src->nnodes;
    dst->tokens_cap = src->ntokens;
    dst->nodes = brim_calloc(BRIM_MAX(src->nnodes, 1), sizeof(*dst->nodes));
    dst->tokens = brim_malloc(BRIM_MAX(src->ntokens, 1) * sizeof(*dst->tokens));
    if (dst->nodes == NULL || dst->tokens == NULL) {
        goto fail;
    }
    for (i = 0; i < src->nnodes; i++) {
        dst->nodes[i] = src->nodes[i];
        dst->nodes[i].name =
            brim_strndup(src->nodes[i].name, src->nodes[i].name_len);
        if (dst->nodes[i].name == NULL) {
            goto fail;
        }
        dst->nnodes = i + 1;
    }
    if (src->ntokens > 0) {
        memcpy(dst->tokens, src->tokens, src->ntokens * sizeof(*dst->tokens));
    }
    return 0;

fail:
    brim_ring_destroy(dst);
    return BRIM_ENOMEM;
}

uint32_t
brim_ring_token_count(uint32_t tokens_per_node, uint32_t weight_ppm)
{
    uint64_t n;

    /* round(V x w) with halves up: (V x w_ppm + 500000) / 1e6. */
    n = ((uint64_t) tokens_per_node * weight_ppm + BRIM_WEIGHT_PPM_ONE / 2)
        / BRIM_WEIGHT_PPM_ONE;
    if (n == 0) {
        n = 1;
    }
    /* At most 10^4 x 10^3 = 10^7 for in-range arguments. No clamp here:
     * ring_add() refuses a count above BRIM_NODE_TOKENS_MAX, where a
     * clamp would silently break the weight ratios. */
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t) n;
}

/*
 * Merge sorted FRESH (N entries) into sorted TOKENS (M entries, with room
 * for M + N), from the back so nothing is overwritten before it is read.
 */
static void
ring_merge(struct brim_token *tokens, size_t m, const struct brim_token *fresh,
           size_t n)
{
    size_t out = m + n;

    while (n > 0) {
        if (m > 0 && ring_token_cmp(&tokens[m - 1], &fresh[n - 1]) > 0) {
            tokens[--out] = tokens[--m];
        } else {
            tokens[--out] = fresh[--n];
        }
    }
}

/* Room for NNODES nodes and NTOKENS tokens; only capacities change. */
static int
ring_reserve(struct brim_ring *ring, uint32_t nnodes, size_t ntokens)
{
    struct brim_ring_node *nodes;
    struct brim_token     *tokens;
    size_t                 cap;

    if (nnodes > ring->nodes_cap) {
        cap = BRIM_MAX((size_t) nnodes, (size_t) ring->nodes_cap * 2);
        nodes = brim_realloc(ring->nodes, cap * sizeof(*nodes));
        if (nodes == NULL) {
            return BRIM_ENOMEM;
        }
        ring->nodes = nodes;
        ring->nodes_cap = (uint32_t) cap;
    }
    if (ntokens > ring->tokens_cap) {
        cap = BRIM_MAX(ntokens, ring->tokens_cap * 2);
        tokens = brim_realloc(ring->tokens, cap * sizeof(*tokens));
        if (tokens == NULL) {
            return BRIM_ENOMEM;
        }
        ring->tokens = tokens;
        ring->tokens_cap = cap;
    }
    return 0;
}

/*
 * The shared body of both adds. POS, when not NULL, gives NTOK explicit
 * positions; otherwise the NTOK tokens are hashed from the name.
 */
static int
ring_add(struct brim_ring *ring, const char *name, uint32_t weight_ppm,
         const uint64_t *pos, uint32_t ntok, char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_token *fresh;
    char              *copy;
    size_t             name_len, i;
    uint32_t           idx;

    BRIM_ASSERT(ring != NULL && name != NULL);

    name_len = strlen(name);
    if (!brim_ring_name_valid(name, name_len)) {
        brim_errfmt(errbuf,
                    "ring: bad node name \"%.64s\": %zu bytes, must "
                    "be 1 to %d of [A-Za-z0-9._:-]",
                    name, name_len, BRIM_NAME_MAX);
        return BRIM_EINVAL;
    }
    if (weight_ppm < BRIM_WEIGHT_PPM_MIN || weight_ppm > BRIM_WEIGHT_PPM_MAX) {
        brim_errfmt(errbuf,
                    "ring: node \"%s\": weight %" PRIu32 " ppm out of "
                    "range, must be %u to %u ppm (0.001 to 1000)",
                    name, weight_ppm, BRIM_WEIGHT_PPM_MIN, BRIM_WEIGHT_PPM_MAX);
        return BRIM_EINVAL;
    }
    if (ntok == 0 || ntok > BRIM_NODE_TOKENS_MAX) {
        brim_errfmt(errbuf,
                    "ring: node \"%s\": %" PRIu32 " tokens, must be "
                    "1 to %u",
                    name, ntok, BRIM_NODE_TOKENS_MAX);
        return BRIM_EINVAL;
    }
    if (ring->nnodes >= BRIM_NODES_MAX) {
        brim_errfmt(errbuf,
                    "ring: cannot add \"%s\": the ring holds %d "
                    "nodes, the most allowed",
                    name, BRIM_NODES_MAX);
        return BRIM_EINVAL;
    }
    if (brim_ring_find_node(ring, name, name_len) >= 0) {
        brim_errfmt(errbuf, "ring: node \"%s\" is already on the ring", name);
        return BRIM_EEXISTS;
    }

    /* Everything that can fail happens before RING changes. */
    copy = brim_strndup(name, name_len);
    fresh = brim_malloc((size_t) ntok * sizeof(*fresh));
    if (copy == NULL || fresh == NULL
        || ring_reserve(ring, ring->nnodes + 1, ring->ntokens + ntok) != 0)
    {
        brim_free(copy);
        brim_free(fresh);
        brim_errfmt(errbuf,
                    "ring: out of memory adding \"%s\" (%" PRIu32 " tokens)",
                    name, ntok);
        return BRIM_ENOMEM;
    }

    /* Commit: nothing below can fail. Node indices are name ranks, so the
     * nodes after the insertion point, and their tokens, shift up. */
    idx = ring_lower_bound_node(ring, name, name_len);
    memmove(&ring->nodes[idx + 1], &ring->nodes[idx],
            (ring->nnodes - idx) * sizeof(*ring->nodes));
    ring->nodes[idx] = (struct brim_ring_node){.name = copy,
                                               .name_len = (uint32_t) name_len,
                                               .weight_ppm = weight_ppm,
                                               .ntokens = ntok};
    ring->nnodes++;
    for (i = 0; i < ring->ntokens; i++) {
        if (ring->tokens[i].node >= idx) {
            ring->tokens[i].node++;
        }
    }
    for (i = 0; i < ntok; i++) {
        fresh[i].pos = pos != NULL
            ? pos[i]
            : brim_hash_token(ring->seed, copy, name_len, (uint32_t) i);
        fresh[i].node = idx;
    }
    ring->weight_sum_ppm += weight_ppm;
    /* Renumbering kept the old tokens sorted: sort the new ones and merge,
     * O(tokens + ntok log ntok) instead of a full sort per add. */
    qsort(fresh, ntok, sizeof(*fresh), ring_token_cmp);
    ring_merge(ring->tokens, ring->ntokens, fresh, ntok);
    ring->ntokens += ntok;
    brim_free(fresh);
    return 0;
}

int
brim_ring_add_node(struct brim_ring *ring, const char *name,
                   uint32_t weight_ppm, char errbuf[BRIM_ERRBUF_LEN])
{
    return ring_add(ring, name, weight_ppm, NULL,
                    brim_ring_token_count(ring->tokens_per_node, weight_ppm),
                    errbuf);
}

int
brim_ring_add_node_at(struct brim_ring *ring, const char *name,
                      uint32_t weight_ppm, const uint64_t *pos, uint32_t npos,
                      char errbuf[BRIM_ERRBUF_LEN])
{
    BRIM_ASSERT(pos != NULL || npos == 0);
    return ring_add(ring, name, weight_ppm, pos, npos, errbuf);
}

int
brim_ring_remove_node(struct brim_ring *ring, const char *name)
{
    int32_t  found;
    uint32_t idx;
    size_t   i, kept;

    found = brim_ring_find_node(ring, name, strlen(name));
    if (found < 0) {
        return BRIM_ENOTFOUND;
    }
    idx = (uint32_t) found;

    /* Drop the node's tokens and renumber the ones above it; the relative
     * order of the rest is unchanged, so no sort is needed. */
    kept = 0;
    for (i = 0; i < ring->ntokens; i++) {
        if (ring->tokens[i].node == idx) {
            continue;
        }
        ring->tokens[kept] = ring->tokens[i];
        if (ring->tokens[kept].node > idx) {
            ring->tokens[kept].node--;
        }
        kept++;
    }
    ring->ntokens = kept;
    ring->weight_sum_ppm -= ring->nodes[idx].weight_ppm;
    brim_free(ring->nodes[idx].name);
    memmove(&ring->nodes[idx], &ring->nodes[idx + 1],
            (ring->nnodes - idx - 1) * sizeof(*ring->nodes));
    ring->nnodes--;
    return 0;
}

int32_t
brim_ring_find_node(const struct brim_ring *ring, const char *name,
                    size_t name_len)
{
    uint32_t idx;

    idx = ring_lower_bound_node(ring, name, name_len);
    if (idx < ring->nnodes
        && ring_name_cmp(ring->nodes[idx].name, ring->nodes[idx].name_len, name,
                         name_len)
            == 0)
    {
        return (int32_t) idx;
    }
    return -1;
}

size_t
brim_ring_successor(const struct brim_ring *ring, uint64_t pos)
{
    size_t lo = 0, hi = ring->ntokens, mid;

    BRIM_ASSERT(ring->ntokens > 0);

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (ring->tokens[mid].pos < pos) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo == ring->ntokens ? 0 : lo; /* past the last token: wrap */
}

uint32_t
brim_ring_owner(const struct brim_ring *ring, uint64_t pos)
{
    return ring->tokens[brim_ring_successor(ring, pos)].node;
}

void
brim_ring_shares(const struct brim_ring *ring, double *share)
{
    size_t   i;
    uint64_t arc;

    BRIM_ASSERT(ring->ntokens > 0);

    for (i = 0; i < ring->nnodes; i++) {
        share[i] = 0.0;
    }
    if (ring->tokens[0].pos == ring->tokens[ring->ntokens - 1].pos) {
        /* One position holds every token: its first token owns it all. */
        share[ring->tokens[0].node] = 1.0;
        return;
    }
    /* Token i owns (pos[i-1], pos[i]]; token 0's arc wraps from the last
     * token, and unsigned subtraction is exactly that length mod 2^64. */
    for (i = 0; i < ring->ntokens; i++) {
        arc = ring->tokens[i].pos
            - ring->tokens[i == 0 ? ring->ntokens - 1 : i - 1].pos;
        share[ring->tokens[i].node] += (double) arc;
    }
    for (i = 0; i < ring->nnodes; i++) {
        share[i] /= 18446744073709551616.0; /* 2^64 */
    }
}

void
brim_ring_translate(const struct brim_ring *from, const struct brim_ring *to,
                    uint16_t *trans)
{
    uint32_t i;
    int32_t  j;

    for (i = 0; i < from->nnodes; i++) {
        j = brim_ring_find_node(to, from->nodes[i].name,
                                from->nodes[i].name_len);
        trans[i] = j < 0 ? BRIM_NODE_NONE : (uint16_t) j;
    }
}
