/*
 * client/lib/coordlink.h - what the tests read and switch in libbrim's
 * link to the coordinator, beside <brim.h> (they link brim_static): the
 * topology routed with, the counts of MOVED, RETRY, map fetches and
 * pushed epochs, and the subscription on or off. Not installed and not
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
 * Epochs pushed to C: the times a SUBSCRIBE reply carried a map newer than
 * C's and it was installed (0 in standalone mode).
 */
uint64_t brim_coordlink_pushed(const struct brim_client *c);

/*
 * Turn C's subscription to pushed epochs off (ON 0: its connection is
 * closed, and the map moves only on MOVED, RETRY or an unreachable node,
 * as a test of those paths wants) or on again (ON 1: a new connection at
 * the next call). Nothing in standalone mode.
 */
void brim_coordlink_subscribe(struct brim_client *c, int on);

#endif /* BRIM_CLIENT_LIB_COORDLINK_H */
