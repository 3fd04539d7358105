/*
 * proto/topo.h - the cluster's topology of one epoch as it travels and as
 * the coordinator persists it: the settings fixed at cluster creation
 * (cluster id, seed, P, V, eps), the members in ring order (name, address,
 * weight, state, incarnation) and the partition map owner[P]. Coordinator,
 * nodes and clients all rebuild the identical ring and check the map from
 * it (DESIGN.md sections 3 to 5). Pure: no sockets, no libuv.
 *
 * Encoding (one msgpack array, PROTOCOL.md "Topology"):
 *   [format=1, cluster_id u64, seed u64, epoch u64, partitions u32,
 *    tokens_per_node u32, eps_ppm u64 (BRIM_EPS_NONE for none),
 *    [[name str, addr str, weight_ppm u32, state u32, incarnation u64]...],
 *    owner bin (2 x partitions bytes, little-endian member indices)
 *    (format 2 only:) departed [[member]...]]
 */
#ifndef BRIM_PROTO_TOPO_H
#define BRIM_PROTO_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include <brim/status.h>

#include "common/map.h"
#include "common/placement.h" /* BRIM_EPS_NONE */
#include "common/ring.h"
#include "proto/buf.h"

/* The topology encoding's format numbers: 2 adds the departed members;
 * a decoder reads both, an encoder writes 1 when none departed. */
#define BRIM_TOPO_FORMAT 2
#define BRIM_TOPO_FORMAT_V1 1
/* Longest member address "host:port" in bytes. */
#define BRIM_ADDR_MAX 63

/* A member's state in the coordinator's view. */
enum brim_member_state {
    BRIM_MEMBER_JOINING = 1, /* accepted, not yet in a committed map */
    BRIM_MEMBER_UP = 2,      /* in the committed map, heartbeating */
    BRIM_MEMBER_LEAVING = 3, /* draining: owns nothing in the next map */
    BRIM_MEMBER_DEAD = 4     /* missed heartbeats; removed next epoch */
};

/* One member of a topology. */
struct brim_member {
    char     name[BRIM_NAME_MAX + 1]; /* NUL-terminated node name */
    char     addr[BRIM_ADDR_MAX + 1]; /* NUL-terminated "host:port" */
    uint32_t weight_ppm;              /* weight in millionths */
    uint32_t state;                   /* enum brim_member_state */
    uint64_t incarnation;             /* the member process's random id */
};

/* A topology: settings, members sorted by name, and the map. */
struct brim_topo {
    uint64_t            cluster_id;      /* random, fixed at creation */
    uint64_t            seed;            /* cluster hash seed */
    uint32_t            tokens_per_node; /* V */
    uint64_t            eps_ppm;         /* cap slack, or BRIM_EPS_NONE */
    uint32_t            nmembers;        /* entries in members */
    struct brim_member *members;         /* sorted by name (ring order);
                                            brim_malloc, owned */
    struct brim_map     map;             /* epoch, P, owner[P] */
    uint32_t            ndeparted;       /* entries in departed */
    struct brim_member *departed;        /* members of the previous epoch
                                            that left it (state LEAVING)
                                            or died (DEAD) in this one:
                                            not on the ring, own nothing,
                                            listed so new owners know
                                            where their partitions come
                                            from; sorted by name, no name
                                            also in members; brim_malloc,
                                            owned */
};

/*
 * Initialise TOPO (caller's memory) with the settings and an empty
 * membership and a map of NPARTITIONS partitions, all unowned, at EPOCH.
 * Returns 0 or BRIM_ENOMEM (TOPO zeroed). Release with brim_topo_destroy().
 */
int brim_topo_init(struct brim_topo *topo, uint64_t cluster_id, uint64_t seed,
                   uint32_t npartitions, uint32_t tokens_per_node,
                   uint64_t eps_ppm, uint64_t epoch);

/* Free what TOPO holds; a zeroed topo is fine. */
void brim_topo_destroy(struct brim_topo *topo);

/* Make DST (uninitialised) a deep copy of SRC. Returns 0 or BRIM_ENOMEM. */
int brim_topo_copy(struct brim_topo *dst, const struct brim_topo *src);

/*
 * Build RING (uninitialised caller memory) from TOPO's members, hashed
 * tokens and weights. Members in state DEAD are left out only if
 * INCLUDE_DEAD is 0. Ring node i is member i when no member is left out;
 * otherwise match indices by name. Returns 0, BRIM_EINVAL (a member the
 * ring refuses, a duplicate name included; ERRBUF says which) or
 * BRIM_ENOMEM. On error RING is zeroed.
 */
int brim_topo_ring(const struct brim_topo *topo, struct brim_ring *ring,
                   int include_dead, char errbuf[BRIM_ERRBUF_LEN]);

/* The index of member NAME (NUL-terminated) in TOPO, or -1. Binary
 * search: TOPO's members must be sorted by name. */
int32_t brim_topo_find(const struct brim_topo *topo, const char *name);

/*
 * The source index of NAME in TOPO for a partition's migration: its member
 * index when it is a member not DEAD; nmembers + j when it is departed
 * entry j in state LEAVING (it still streams what it held); -1 otherwise
 * (unknown or dead: no live source). Read the entry with
 * brim_topo_source().
 */
int32_t brim_topo_find_source(const struct brim_topo *topo, const char *name);

/* The member or departed entry at source index I (see
 * brim_topo_find_source), borrowed from TOPO, or NULL when out of range. */
const struct brim_member *brim_topo_source(const struct brim_topo *topo,
                                           uint32_t                i);

/*
 * Append TOPO, encoded as above, to OUT as one msgpack object (not a
 * frame). Returns 0 or BRIM_ENOMEM (OUT unchanged).
 */
int brim_topo_encode(struct brim_buf *out, const struct brim_topo *topo);

/*
 * Decode the msgpack object OBJ into TOPO (uninitialised caller memory;
 * everything copied). Validates every field: format, P a power of two in
 * range, V in range, names valid and strictly increasing, addresses
 * NUL-free and short, weights in range, states known, the owner bin
 * exactly 2 x P bytes with every entry a member index or BRIM_NODE_NONE.
 * Returns 0, BRIM_EBADREQ (malformed; ERRBUF says what) or BRIM_ENOMEM;
 * on error TOPO is zeroed (safe to destroy). Every member's weight also
 * gives at most BRIM_NODE_TOKENS_MAX tokens, so a decoded topology always
 * builds its ring.
 */
int brim_topo_decode(const msgpack_object *obj, struct brim_topo *topo,
                     char errbuf[BRIM_ERRBUF_LEN]);

#endif /* BRIM_PROTO_TOPO_H */
