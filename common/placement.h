/*
 * common/placement.h - consistent hashing with bounded loads (Mirrokni,
 * Thorup and Zadimoghaddam, "Consistent Hashing with Bounded Loads", SODA
 * 2018): every node i may hold at most cap_i = ceil((1+eps) x U x w_i / W)
 * of the U units placed (W the sum of weights), and a unit whose ring owner
 * is full walks clockwise to the next node with room.
 *
 * Two rules (DESIGN.md section 4), both pure and deterministic over any set
 * of units (keys in brim-sim, partitions in the cluster):
 * - replace: place every unit afresh, in index order;
 * - rebalance: from an old assignment, move only what a membership change
 *   forces (a leaver's units, a newcomer's arcs, and what over-cap nodes
 *   shed), so that the cap holds again.
 * The walk skips full nodes through a "next non-full token" union-find with
 * path compression, so placing U units costs about U log(tokens).
 */
#ifndef BRIM_COMMON_PLACEMENT_H
#define BRIM_COMMON_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include <brim/status.h>

#include "common/ring.h"

/* eps_ppm value meaning "no cap" (the published grid's "none"). */
#define BRIM_EPS_NONE UINT64_MAX
/* Largest eps accepted: 1000 (a cap of 1001 x the mean). */
#define BRIM_EPS_PPM_MAX 1000000000ull

/* Why a unit changed owner in one membership change. */
enum brim_move_reason {
    BRIM_MOVE_NONE = 0, /* same owner (by name) as before */
    BRIM_MOVE_ARC = 1,  /* its owner left, or a newcomer's arc */
    BRIM_MOVE_CAP = 2   /* shed by a full node, or walked past
                                       its ring owner because it was full */
};

/* "none", "arc" or "cap": a static string. */
const char *brim_move_reason_name(enum brim_move_reason reason);

/*
 * Parse TEXT, a plain decimal number ("0.05", "1", "12.5"; no sign, no
 * exponent, at most 6 digits after the point unless the rest are zeros),
 * into millionths: "0.05" gives 50000. Values above MAX_PPM are refused.
 * Returns 0 and writes *PPM, or BRIM_EINVAL with ERRBUF naming the text and
 * the limit (an input that millionths cannot hold exactly is refused, not
 * rounded). WHAT ("eps", "weight") starts the message.
 */
int brim_ppm_parse(const char *what, const char *text, uint64_t max_ppm,
                   uint64_t *ppm, char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Parse eps: a decimal as brim_ppm_parse() (0 .. 1000, "0" allowed) or the
 * word "none" (BRIM_EPS_NONE, no cap). Returns 0 or BRIM_EINVAL.
 */
int brim_eps_parse(const char *text, uint64_t *eps_ppm,
                   char errbuf[BRIM_ERRBUF_LEN]);

/*
 * The cap of a node of WEIGHT_PPM when UNITS units are spread over nodes
 * whose weights sum to WEIGHT_SUM_PPM: ceil((1e6 + EPS_PPM) x UNITS x
 * WEIGHT_PPM / (1e6 x WEIGHT_SUM_PPM)), in exact 128-bit integer arithmetic.
 * With all weights 1 this is ceil((1+eps) x UNITS / N): eps 0.1, 50 units,
 * 5 nodes gives 11. EPS_PPM = BRIM_EPS_NONE gives UINT64_MAX (no cap).
 * WEIGHT_SUM_PPM must be > 0.
 */
uint64_t brim_cap(uint64_t units, uint64_t eps_ppm, uint64_t weight_ppm,
                  uint64_t weight_sum_ppm);

/* CAPS[i] (RING->nnodes entries, caller's) = brim_cap() of node i for
 * UNITS units on RING. RING must have a node. */
void brim_ring_caps(const struct brim_ring *ring, uint64_t units,
                    uint64_t eps_ppm, uint64_t *caps);

/*
 * Check cluster placement settings: V (TOKENS_PER_NODE) in 1..
 * BRIM_TOKENS_PER_NODE_MAX, PARTITIONS a power of two in BRIM_PARTITIONS_MIN
 * ..BRIM_PARTITIONS_MAX and at least NNODES, and NNODES <= BRIM_NODES_MAX.
 * Returns 0 or BRIM_EINVAL with ERRBUF naming the setting and its limit
 * (case I04 of shared/cases/inputs.md).
 */
int brim_placement_check(uint32_t tokens_per_node, uint32_t partitions,
                         uint32_t nnodes, char errbuf[BRIM_ERRBUF_LEN]);

/*
 * The replace rule: place the N units at ring positions POS (borrowed) one
 * at a time in index order; each takes its ring owner if that node holds
 * fewer than its cap, else the node of the next token clockwise with room.
 * Writes OWNER[i] (N entries, caller's), a node index of RING. Never fails
 * for room: sum of caps >= N for any eps >= 0. Returns 0, BRIM_EINVAL (RING
 * has no node) or BRIM_ENOMEM, with ERRBUF (if not NULL) saying which.
 * Cost O(N log tokens + tokens).
 */
int brim_place_replace(const struct brim_ring *ring, uint64_t eps_ppm,
                       const uint64_t *pos, size_t n, uint16_t *owner,
                       char errbuf[BRIM_ERRBUF_LEN]);

/*
 * The rebalance rule (DESIGN.md section 4). OLD_OWNER[i] (N entries,
 * borrowed) is unit i's owner as an index of OLD_RING, or BRIM_NODE_NONE;
 * NEW_RING is the membership after the change (nodes matched by name).
 * 1. A unit whose old owner is gone, or whose new ring owner joined in this
 *    change, is unsettled; every other unit keeps its owner.
 * 2. Every node above its new cap sheds settled units until at its cap: its
 *    displaced ones first, then its natural ones, each in reverse index
 *    order. Shed units become unsettled.
 * 3. Unsettled units, in index order, walk clockwise from their position
 *    and take the first node below its cap.
 * Writes NEW_OWNER[i] (N entries, caller's; indices of NEW_RING) and, when
 * REASON is not NULL, REASON[i] (N entries) as enum brim_move_reason.
 * Returns 0, BRIM_EINVAL (NEW_RING has no node, or an old owner index out of
 * range) or BRIM_ENOMEM, with ERRBUF (if not NULL) saying which.
 */
int brim_place_rebalance(const struct brim_ring *old_ring,
                         const uint16_t         *old_owner,
                         const struct brim_ring *new_ring, uint64_t eps_ppm,
                         const uint64_t *pos, size_t n, uint16_t *new_owner,
                         uint8_t *reason, char errbuf[BRIM_ERRBUF_LEN]);

/*
 * The reason unit at POS moved from OLD_OWNER (an OLD_RING index or
 * BRIM_NODE_NONE) to NEW_OWNER (a NEW_RING index), judged from the two
 * rings alone: BRIM_MOVE_NONE if both name the same node; BRIM_MOVE_ARC if
 * the unit was unsettled (old owner gone, or its new ring owner is a
 * newcomer) and landed on its new ring owner; BRIM_MOVE_CAP otherwise. This
 * agrees with the reasons brim_place_rebalance() writes.
 */
enum brim_move_reason brim_move_reason_of(const struct brim_ring *old_ring,
                                          uint16_t                old_owner,
                                          const struct brim_ring *new_ring,
                                          uint16_t new_owner, uint64_t pos);

#endif /* BRIM_COMMON_PLACEMENT_H */
