/*
 * server/coord/persist.h - brim-coord's state and the one file that holds
 * it, DIR/state: the settings fixed when the cluster was created, the next
 * epoch number, the committed topology and the pending one, if any. The
 * file is versioned and checksummed and written atomically (a temporary
 * file, fsync, rename, fsync of the directory: DESIGN.md section 5); a
 * torn or corrupt file is refused with a one-line reason, never half
 * loaded. Plain blocking POSIX I/O; no libuv, no logging. Also the
 * value of etcd mode's leader key, what leader.c writes and reads.
 *
 * File layout (all integers little-endian; docs/design.md, "Coordinator
 * state file"):
 *   magic "BRIMCRD\0" (8 bytes) | format version u32 | body length u64 |
 *   XXH3-64 of the body, seed 0, u64 | body
 * The body is one msgpack array:
 *   [[cluster_id, seed, partitions, tokens_per_node, eps_ppm, heartbeat_ms,
 *     dead_after_ms, pending_timeout_ms], next_epoch, committed topology,
 *    pending topology or nil(, flush_ms(, [leaver name, ...]))]
 * where flush_ms, the last flush mark (Unix ms, memcached port's
 * flush_all, docs/memcached.md), is there only when not 0 or when the
 * leave list follows (then 0 means none); the leave list, the names of
 * members whose leave was accepted and that no epoch has taken out yet,
 * is there only when not empty. A file without either stays what older
 * coordinators read.
 * with each topology in the encoding of proto/topo.h.
 */
#ifndef BRIM_SERVER_COORD_PERSIST_H
#define BRIM_SERVER_COORD_PERSIST_H

#include <stdint.h>

#include <brim/status.h>

#include "common/ring.h"
#include "proto/buf.h"
#include "proto/topo.h"

/* The state file's format version, and its name and temporary name. */
#define BRIM_PERSIST_VERSION 1
#define BRIM_PERSIST_FILE "state"
#define BRIM_PERSIST_TMP "state.tmp"
/* A file in DIR saying that its state was moved into etcd (brim-coord
 * --import-state): a file-mode brim-coord refuses to start from DIR. */
#define BRIM_PERSIST_MOVED "moved-to-etcd"
/* Bytes of the fixed header before the body. */
#define BRIM_PERSIST_HDR 28
/* Most names in the persisted leave list: a list longer than any
 * cluster (BRIM_NODES_MAX members) is refused as corrupt. */
#define BRIM_PERSIST_LEAVES_MAX BRIM_NODES_MAX
/* Largest state file loaded. Two maps at P = 2^20 and two full member
 * lists take about 5 MiB. */
#define BRIM_PERSIST_MAX_BYTES (64u << 20)

/* The settings fixed when the cluster is created (brim-coord's flags). */
struct brim_coord_settings {
    uint64_t cluster_id;         /* random, never 0 (0 means unknown) */
    uint64_t seed;               /* cluster hash seed */
    uint32_t partitions;         /* P, a power of two, 2^8 .. 2^20 */
    uint32_t tokens_per_node;    /* V, 1 .. BRIM_TOKENS_PER_NODE_MAX */
    uint64_t eps_ppm;            /* cap slack, or BRIM_EPS_NONE */
    uint32_t heartbeat_ms;       /* node heartbeat interval, >= 1 */
    uint32_t dead_after_ms;      /* silence after which a node is dead,
                                       > heartbeat_ms */
    uint32_t pending_timeout_ms; /* a pending epoch not acknowledged by
                                       then is aborted, >= 1 */
};

/*
 * What the coordinator persists. Epoch numbers are never reused: every
 * epoch ever proposed, committed or aborted is below next_epoch. Both
 * topologies carry the settings' cluster id, seed, P, V and eps.
 */
struct brim_coord_state {
    struct brim_coord_settings settings;    /* fixed at creation */
    uint64_t                   next_epoch;  /* the next epoch to propose */
    struct brim_topo           committed;   /* last committed (epoch 0 and
                                               no members: none yet) */
    int                        has_pending; /* 1: PENDING holds a proposal */
    struct brim_topo           pending;     /* proposed, not yet committed
                                               or aborted; zeroed if none */
    uint64_t                   flush_ms;    /* the cluster's last flush
                                               mark, Unix ms; 0: none */
    uint32_t                   nleaves;     /* names in leaves */
    char (*leaves)[BRIM_NAME_MAX + 1];      /* owned (brim_calloc), NUL-
                                            terminated names of members
                                            whose leave was accepted and
                                            not yet taken out by an epoch:
                                            asked again after a restart or
                                            an election (a leave the
                                            operator was told of is not
                                            lost); NULL when none */
};

/*
 * Check SET: V and P as brim_placement_check(), eps at most
 * BRIM_EPS_PPM_MAX or BRIM_EPS_NONE, a non-zero cluster id, heartbeat_ms
 * and pending_timeout_ms at least 1, dead_after_ms above heartbeat_ms.
 * Returns 0 or BRIM_EINVAL with ERRBUF (NULL allowed) naming the setting
 * and its limit (case I04 of shared/cases/inputs.md).
 */
int brim_coord_settings_check(const struct brim_coord_settings *set,
                              char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Initialise ST (caller's memory) as a new cluster: SET (copied), epoch 0
 * committed with no members and every partition unowned, next_epoch 1,
 * nothing pending. Returns 0, BRIM_EINVAL (SET fails
 * brim_coord_settings_check(); ERRBUF says why) or BRIM_ENOMEM; on error
 * ST is zeroed. Release with brim_coord_state_destroy().
 */
int brim_coord_state_init(struct brim_coord_state          *state,
                          const struct brim_coord_settings *set,
                          char errbuf[BRIM_ERRBUF_LEN]);

/* Free what ST holds and zero it; a zeroed state is fine. */
void brim_coord_state_destroy(struct brim_coord_state *state);

/*
 * Encode ST as the state file's bytes (header and body) into OUT
 * (initialised here; the caller brim_buf_destroy()s it on success), after
 * checking that they load back. Both back ends store these bytes: the
 * file, and the etcd key of server/coord/leader.c. Returns 0, BRIM_EINVAL
 * (ST is inconsistent, or the encoding is above BRIM_PERSIST_MAX_BYTES)
 * or BRIM_ENOMEM; on error OUT holds nothing and ERRBUF says why.
 */
int brim_persist_encode(const struct brim_coord_state *state,
                        struct brim_buf *out, char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Decode DATA (LEN bytes, borrowed), as brim_persist_encode() wrote them,
 * into ST (uninitialised): the header, the checksum and the body are
 * checked as brim_persist_load() does. Returns 0 (free ST with
 * brim_coord_state_destroy()), BRIM_EINVAL or BRIM_ENOMEM; on error ST is
 * zeroed and ERRBUF says what is wrong.
 */
int brim_persist_decode(const unsigned char *data, size_t len,
                        struct brim_coord_state *state,
                        char                     errbuf[BRIM_ERRBUF_LEN]);

/*
 * Write ST to DIR/state atomically: encode it, check that the encoding
 * loads back (so a state that could not be reloaded is never written),
 * write DIR/state.tmp (mode 0600), fsync it, rename it over DIR/state and
 * fsync DIR. When this returns 0 the state survives a crash or power loss.
 * On error DIR/state is the previous state, untouched, except when only
 * the final fsync of DIR failed: the new state is then in place but may
 * not survive a power loss. Blocks on the disk for the two fsyncs:
 * brim-coord runs it off its loop thread. Returns 0, BRIM_EINVAL (ST is
 * inconsistent: settings out of range, a topology that differs from the
 * settings or is malformed, an epoch not below next_epoch, a pending epoch
 * not above the committed one; the encoding is above
 * BRIM_PERSIST_MAX_BYTES; or DIR is too long), BRIM_ESYS (an I/O error,
 * with the path and strerror) or BRIM_ENOMEM. ERRBUF (NULL allowed) gets
 * a one-line reason.
 */
int brim_persist_save(const char *dir, const struct brim_coord_state *state,
                      char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Load DIR/state into ST (uninitialised caller memory). DIR/state.tmp, the
 * remains of a save cut short, is ignored. The header is checked first
 * (magic, version, body length against the file's size, checksum), then
 * the body is walked with brim_wire_check() before msgpack-c unpacks it,
 * and every field is validated as brim_persist_save() requires. Returns:
 *   0               ST holds the state; free it with
 *                   brim_coord_state_destroy()
 *   BRIM_ENOTFOUND  there is no DIR/state: a new cluster
 *   BRIM_EINVAL     the file is refused: bad magic, a version this code
 *                   does not read, truncated or torn (the length does not
 *                   match), a checksum mismatch, a malformed or
 *                   inconsistent body, larger than BRIM_PERSIST_MAX_BYTES,
 *                   or not a regular file
 *   BRIM_ESYS       it could not be read (permissions, I/O error)
 *   BRIM_ENOMEM
 * On any error ST is zeroed (safe to destroy) and ERRBUF (NULL allowed)
 * holds one line naming the file and what is wrong.
 */
int brim_persist_load(const char *dir, struct brim_coord_state *state,
                      char errbuf[BRIM_ERRBUF_LEN]);

/*
 * The value of etcd mode's leader key (PREFIX/leader, leader.c): who
 * leads, where nodes reach it, and where its HTTP port is. Written as
 * "NAME ADDR HTTP" (single spaces), or "NAME ADDR" when the leader has
 * no HTTP port: the two-field form of before HTTP, which readers still
 * take. Fields after the third are ignored, for later additions.
 */
struct brim_coord_leader_value {
    char name[BRIM_NAME_MAX + 1]; /* --name */
    char addr[BRIM_ADDR_MAX + 1]; /* --listen, "host:port" */
    char http[BRIM_ADDR_MAX + 1]; /* --http-listen; "" none */
};

/*
 * Write LV's value, NUL-terminated, into OUT (LEN bytes, at least
 * BRIM_COORD_LEADER_VALUE_MAX). Returns its length in bytes (NUL not
 * counted), or BRIM_EINVAL when a field is empty where it must not be
 * (NAME, ADDR), holds a space, or OUT is too small.
 */
#define BRIM_COORD_LEADER_VALUE_MAX (BRIM_NAME_MAX + 2 * BRIM_ADDR_MAX + 3)
int brim_coord_leader_format(const struct brim_coord_leader_value *lv,
                             char *out, size_t len);

/*
 * Parse a leader key's VALUE (LEN bytes, not NUL-terminated; borrowed)
 * into *OUT: "NAME ADDR" or "NAME ADDR HTTP" (OUT->http "" in the first
 * form), more fields ignored. Returns 0, or BRIM_EINVAL (nothing written)
 * for a value without NAME and ADDR or with a field longer than its
 * member holds.
 */
int brim_coord_leader_parse(const void *value, size_t len,
                            struct brim_coord_leader_value *out);

#endif /* BRIM_SERVER_COORD_PERSIST_H */
