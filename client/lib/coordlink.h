/*
 * client/lib/coordlink.h - what the tests read and switch in libbrim's
 * keeper of the topology, beside <brim.h> (they link brim_static): the
 * topology routed with, the counts of MOVED, RETRY, map fetches and of
 * epochs learned from data replies, and that learning on or off. Not installed and not
 * exported from libbrim.so; the operator's calls are <brim/admin.h>.
 */
#ifndef BRIM_CLIENT_LIB_COORDLINK_H
#define BRIM_CLIENT_LIB_COORDLINK_H

#include <stdint.h>

#include <brim.h>

struct brim_topo; /* proto/topo.h */

/* The topology C routes with, or NULL in standalone mode. Borrowed. */
const struct brim_topo *brim_coordlink_topo(const struct brim_client *c);

/* Counters of C: MOVED answers followed, RETRY/BUSY answers, map fetches. */
void brim_coordlink_counts(const struct brim_client *c, uint64_t *moved,
                           uint64_t *retry, uint64_t *refresh);

/*
 * Map fetches C made because a data reply named an epoch newer than its
 * own (PROTOCOL.md 5), not MOVED or RETRY (0 in standalone mode).
 */
uint64_t brim_coordlink_learned(const struct brim_client *c);

/*
 * Stop C following the epochs data replies name (ON 0: the map then
 * moves only on MOVED, RETRY or an unreachable node, as a test of those
 * paths wants) or follow them again (ON 1, the default).
 */
void brim_coordlink_learn(struct brim_client *c, int on);

#endif /* BRIM_CLIENT_LIB_COORDLINK_H */
