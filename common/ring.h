/*
 * common/ring.h - the consistent-hash token ring (Karger et al., STOC 1997):
 * every node occupies round(V x weight) tokens on the 64-bit ring, and a
 * position's ring owner is the node of the first token at or after it,
 * wrapping past 2^64 - 1 to the first token. Nodes are kept sorted by name
 * and tokens by (position, node name), so the same membership gives the
 * identical ring, node indices included, whatever the order of the adds
 * (DESIGN.md section 3). Pure: no I/O. Not thread-safe; a reader may share a
 * ring that nobody changes.
 */
#ifndef BRIM_COMMON_RING_H
#define BRIM_COMMON_RING_H

#include <stddef.h>
#include <stdint.h>

#include <brim/status.h>

/* Longest node name in bytes; names use [A-Za-z0-9._:-]. */
#define BRIM_NAME_MAX 64
/* Most nodes on one ring; node indices fit in uint16_t. */
#define BRIM_NODES_MAX 4096
/* "No node": an unset owner in a map or a translation table. */
#define BRIM_NODE_NONE UINT16_MAX
/* Bounds of V, the tokens of a node of weight 1. */
#define BRIM_TOKENS_PER_NODE_MAX 10000
#define BRIM_TOKENS_PER_NODE_DEFAULT 160
/* A node's weight in parts per million of weight 1: 0.001 .. 1000. */
#define BRIM_WEIGHT_PPM_ONE 1000000u
#define BRIM_WEIGHT_PPM_MIN 1000u
#define BRIM_WEIGHT_PPM_MAX 1000000000u

/* One token: a point on the ring and the index of the node that holds it. */
struct brim_token {
    uint64_t pos;  /* ring position, 0 .. 2^64 - 1 */
    uint32_t node; /* index into brim_ring.nodes */
};

/* One member of the ring. */
struct brim_ring_node {
    char    *name;       /* NUL-terminated copy, owned by the ring */
    uint32_t name_len;   /* bytes, 1 .. BRIM_NAME_MAX */
    uint32_t weight_ppm; /* weight in millionths of 1 */
    uint32_t ntokens;    /* tokens this node holds */
};

/*
 * The ring. Read the members directly; change it only through the
 * functions below, which keep both arrays sorted.
 */
struct brim_ring {
    uint64_t               seed;            /* cluster seed for token hashes */
    uint32_t               tokens_per_node; /* V: tokens at weight 1 */
    uint32_t               nnodes;          /* members, sorted by name */
    uint32_t               nodes_cap;       /* allocated entries in nodes */
    struct brim_ring_node *nodes;           /* nnodes entries */
    size_t                 ntokens;         /* entries in tokens */
    size_t                 tokens_cap;      /* allocated entries in tokens */
    struct brim_token     *tokens;          /* by (pos, node name) */
    uint64_t               weight_sum_ppm;  /* sum of members' weights */
};

/*
 * Initialise an empty RING (caller's memory) whose tokens hash under the
 * cluster SEED, with TOKENS_PER_NODE (V, 1 .. BRIM_TOKENS_PER_NODE_MAX)
 * tokens per unit of weight. Returns 0, or BRIM_EINVAL for a V out of range
 * (ERRBUF, if not NULL, names it and the limit; RING is then zeroed and safe
 * to destroy). Release with brim_ring_destroy().
 */
int brim_ring_init(struct brim_ring *ring, uint64_t seed,
                   uint32_t tokens_per_node, char errbuf[BRIM_ERRBUF_LEN]);

/* Free everything RING holds; a zeroed ring is fine. RING may be reused
 * only after another brim_ring_init(). */
void brim_ring_destroy(struct brim_ring *ring);

/*
 * Make DST (uninitialised caller memory) an independent deep copy of SRC.
 * Returns 0 or BRIM_ENOMEM (DST is then zeroed).
 */
int brim_ring_copy(struct brim_ring *dst, const struct brim_ring *src);

/*
 * Tokens a node of WEIGHT_PPM receives on a ring of V tokens per unit:
 * round(V x weight), halves rounded up, in exact integer arithmetic, and
 * at least 1.
 */
uint32_t brim_ring_token_count(uint32_t tokens_per_node, uint32_t weight_ppm);

/* Most tokens one node may hold (round(V x weight) above this is refused). */
#define BRIM_NODE_TOKENS_MAX (1u << 20)

/*
 * Add node NAME (NUL-terminated, 1..BRIM_NAME_MAX bytes of [A-Za-z0-9._:-],
 * copied) with WEIGHT_PPM (BRIM_WEIGHT_PPM_MIN..MAX; its token count must
 * not exceed BRIM_NODE_TOKENS_MAX). Its tokens are
 * brim_hash_token(seed, NAME, j) for j = 0 .. count-1, so a node that
 * leaves and returns under its name gets the same positions. Returns 0,
 * BRIM_EINVAL (bad name or weight, or the ring is full), BRIM_EEXISTS (the
 * name is on the ring) or BRIM_ENOMEM. On error RING is unchanged and ERRBUF
 * (if not NULL) holds the reason. Node indices of nodes named after NAME
 * shift up by one.
 */
int brim_ring_add_node(struct brim_ring *ring, const char *name,
                       uint32_t weight_ppm, char errbuf[BRIM_ERRBUF_LEN]);

/*
 * As brim_ring_add_node(), but the node's NPOS tokens sit at the explicit
 * positions POS (borrowed, copied; NPOS >= 1, duplicates allowed). For the
 * simulator's random rings and for tests that force ties; a live cluster
 * always uses hashed positions.
 */
int brim_ring_add_node_at(struct brim_ring *ring, const char *name,
                          uint32_t weight_ppm, const uint64_t *pos,
                          uint32_t npos, char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Remove node NAME and all its tokens. Returns 0 or BRIM_ENOTFOUND. Node
 * indices above the removed one shift down by one.
 */
int brim_ring_remove_node(struct brim_ring *ring, const char *name);

/*
 * True (1) when NAME (NAME_LEN bytes) is a valid node name: 1 to
 * BRIM_NAME_MAX bytes of [A-Za-z0-9._:-]; else 0. Names travel in logs,
 * stats and the state file, so nothing else is allowed.
 */
int brim_ring_name_valid(const char *name, size_t name_len);

/* The index of node NAME (NAME_LEN bytes) in RING->nodes, or -1. O(log N). */
int32_t brim_ring_find_node(const struct brim_ring *ring, const char *name,
                            size_t name_len);

/*
 * The index in RING->tokens of the first token at or after POS, wrapping
 * past the largest to index 0. Equal positions are ordered by node name, so
 * the smallest name wins a tie. RING must hold at least one token.
 * Binary search, O(log tokens).
 */
size_t brim_ring_successor(const struct brim_ring *ring, uint64_t pos);

/* The ring owner of POS: RING->tokens[brim_ring_successor()].node. */
uint32_t brim_ring_owner(const struct brim_ring *ring, uint64_t pos);

/*
 * The share of the ring each node owns: SHARE[i] (NNODES entries, caller's)
 * is the total length of node i's arcs over 2^64, where a token at p owns
 * (previous token, p]. The shares sum to 1. RING must hold a token.
 */
void brim_ring_shares(const struct brim_ring *ring, double *share);

/*
 * Fill TRANS (FROM->nnodes entries, caller's) with the index in TO of each
 * node of FROM, matched by name, or BRIM_NODE_NONE where TO lacks it.
 */
void brim_ring_translate(const struct brim_ring *from,
                         const struct brim_ring *to, uint16_t *trans);

#endif /* BRIM_COMMON_RING_H */
