/*
 * client/lib/coordlink.h - libbrim's calls to the coordinator that brimctl
 * and the tests use beside <brim.h> (they link brim_static). Not installed
 * and not exported from libbrim.so: the reply is a msgpack object.
 */
#ifndef BRIM_CLIENT_LIB_COORDLINK_H
#define BRIM_CLIENT_LIB_COORDLINK_H

#include <stdint.h>

#include <msgpack.h>

#include <brim.h>

struct brim_topo;                   /* proto/topo.h */

/*
 * Called with the OK reply's object (MEMBERS, PLAN, CLUSTER_STATS: the
 * array or map; LEAVE: NULL, and EPOCH the epoch of the change). OBJ is
 * borrowed for the call only. Returns 0 or an error that becomes the
 * call's status.
 */
typedef int (*brim_coordlink_cb)(const msgpack_object *obj, uint64_t epoch,
                             void *arg);

/*
 * Send OP (BRIM_OP_MEMBERS, PLAN, CLUSTER_STATS, LEAVE, MAP_FETCH...) to
 * the coordinator of C (connected with coord_addr) with NAME (NULL for
 * none), ARG_U32 (LEAVE's force, PLAN's kind) and WEIGHT_PPM, and call CB
 * with the reply. Returns 0, the coordinator's error status (brim_errmsg()
 * holds its message) or a transport error. BRIM_EINVAL when C has no
 * coordinator.
 */
int brim_coordlink_call(struct brim_client *c, uint32_t op, const char *name,
                    uint32_t arg_u32, uint32_t weight_ppm, brim_coordlink_cb cb,
                    void *arg);

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
