/*
 * server/coord/cmd.c - brim-coord's request handling: HELLO, JOIN,
 * HEARTBEAT, LEAVE, MAP_FETCH, SUBSCRIBE, MEMBERS, PLAN and CLUSTER_STATS
 * (PROTOCOL.md section 10.2).
 */
#include "server/coord/coord.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/map.h"
#include "common/placement.h"
#include "common/ring.h"
#include "proto/frame.h"
#include "server/log.h"

static int
reply_err(struct brim_conn *c, uint64_t id, int status, const char *msg)
{
    return brim_wire_encode_status(brim_conn_out(c), id, status, msg,
                                   strlen(msg));
}

/* An EPOCH reply; FLUSH_MS (0: none) is the cluster's last flush mark. */
static int
reply_epoch(struct brim_conn *c, uint32_t op, uint64_t id, uint64_t epoch,
            uint32_t lease_ms, uint64_t flush_ms)
{
    struct brim_rep rep;

    memset(&rep, 0, sizeof(rep));
    rep.request_id = id;
    rep.epoch = epoch;
    rep.lease_ms = lease_ms;
    rep.flush_ms = flush_ms;
    rep.term = brim_coord_term(c->srv->data); /* PROTOCOL.md 10.6 */
    return brim_wire_encode_rep(brim_conn_out(c), op, &rep);
}

static int
cmd_hello(struct brim_coord *co, struct brim_conn *c,
          struct brim_coord_conn *cc, const struct brim_req *req)
{
    struct brim_rep rep;

    /* A follower knows its cluster only once elected (etcd mode). */
    if (req->hello.cluster_id != 0 && co->state.settings.cluster_id != 0
        && req->hello.cluster_id != co->state.settings.cluster_id)
    {
        return reply_err(c, req->request_id, BRIM_EDENIED,
                         "hello: this coordinator runs another cluster");
    }
    cc->role = req->hello.role;
    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.hello.version = BRIM_WIRE_VERSION;
    rep.hello.role = BRIM_ROLE_COORD;
    rep.hello.cluster_id = co->state.settings.cluster_id;
    rep.hello.name = "coord";
    rep.hello.name_len = 5;
    rep.epoch = co->state.committed.map.epoch;
    brim_wire_limits_default(&rep.limits);
    return brim_wire_encode_rep(brim_conn_out(c), BRIM_OP_HELLO, &rep);
}

/*
 * A node reports epoch EPOCH (its committed one, the stamp of its JOIN or
 * HEARTBEAT): the next proposal goes above it. With one state that only
 * the leader writes it never is at or above next_epoch; a state restored
 * from an older copy, or etcd's data lost, could make it so, and an
 * epoch number must never be handed out twice (DESIGN.md 5 and 12). The
 * raised next_epoch is persisted with the next proposal.
 */
static void
epoch_seen(struct brim_coord *co, uint64_t epoch)
{
    if (epoch >= co->state.next_epoch) {
        brim_log_warn("a node reports epoch %" PRIu64 ", at or above "
                      "next_epoch %" PRIu64 ": proposing above it",
                      epoch, co->state.next_epoch);
        co->state.next_epoch = epoch + 1;
    }
}

static int
cmd_join(struct brim_coord *co, struct brim_conn *c, struct brim_coord_conn *cc,
         const struct brim_req *req)
{
    struct brim_coord_member *mb;
    struct sockaddr_storage   sa;
    struct brim_rep           rep;
    char                      addr[BRIM_ADDR_MAX + 1], msg[256];
    uint32_t                  w = req->weight_ppm;
    uint64_t                  now = uv_now(co->loop);

    memcpy(addr, req->addr, req->addr_len);
    addr[req->addr_len] = '\0';
    epoch_seen(co, req->epoch);
    if (w == 0) {
        w = BRIM_WEIGHT_PPM_ONE;
    }
    if (!brim_ring_name_valid(req->name, req->name_len)
        || brim_addr_parse(addr, &sa) != 0 || w < BRIM_WEIGHT_PPM_MIN
        || w > BRIM_WEIGHT_PPM_MAX)
    {
        return reply_err(c, req->request_id, BRIM_EINVAL,
                         "join: bad name, addr or weight_ppm");
    }
    mb = brim_coord_member_find(co, req->name, req->name_len);
    if (mb != NULL && mb->m.incarnation != req->hello.incarnation) {
        if (mb->conn != NULL && mb->conn != c
            && mb->m.state != BRIM_MEMBER_DEAD) {
            snprintf(msg, sizeof(msg),
                     "join: %s is held by a live member "
                     "(incarnation %" PRIx64 ", its connection is open)",
                     mb->m.name, mb->m.incarnation);
            return reply_err(c, req->request_id, BRIM_EEXISTS, msg);
        }
        /* The old incarnation is gone: fence it, take its place. */
        brim_log_info("member %s: incarnation %" PRIx64 " replaces %" PRIx64,
                      mb->m.name, req->hello.incarnation, mb->m.incarnation);
        brim_peer_close(&mb->peer);
        co->dirty = 1;
    }
    if (mb == NULL && req->arg_epoch > 0
        && req->arg_epoch < co->state.committed.map.epoch)
    {
        /* It was a member of its epoch, and a committed one since has
         * removed it: its leave (which it did not hear of before this
         * coordinator restarted) or its death. Taking it back in would
         * stream it partitions it drops on learning of its leave. */
        snprintf(msg, sizeof(msg),
                 "join: %.*s was a member of epoch %" PRIu64
                 "; committed epoch %" PRIu64 " removed it",
                 (int) req->name_len, req->name, req->arg_epoch,
                 co->state.committed.map.epoch);
        brim_log_info("member %.*s (%s): JOIN refused: a member of epoch "
                      "%" PRIu64 " that epoch %" PRIu64 " removed",
                      (int) req->name_len, req->name, addr, req->arg_epoch,
                      co->state.committed.map.epoch);
        return reply_err(c, req->request_id, BRIM_EDENIED, msg);
    }
    if (mb == NULL) {
        mb = brim_coord_member_new(co, req->name, req->name_len);
        if (mb == NULL) {
            return reply_err(c, req->request_id, BRIM_ENOMEM,
                             "join: no memory");
        }
        mb->m.state = BRIM_MEMBER_JOINING;
        if (co->join_since_ms == 0) {
            co->join_since_ms = now;
        }
        brim_log_info("member %s (%s) joining", mb->m.name, addr);
    }
    if (strcmp(mb->m.addr, addr) != 0 || mb->m.weight_ppm != w) {
        co->dirty = co->dirty || mb->m.state != BRIM_MEMBER_JOINING;
    }
    if (mb->m.state == BRIM_MEMBER_DEAD) {
        mb->m.state = BRIM_MEMBER_UP;
        co->dirty = 1;
    }
    memcpy(mb->m.addr, addr, req->addr_len + 1);
    mb->m.weight_ppm = w;
    mb->m.incarnation = req->hello.incarnation;
    mb->last_hb_ms = now;
    mb->conn = c;
    cc->member = mb;
    /* The committed topology, and the last flush mark: a node that joins
     * after a delayed flush_all honours it too (docs/memcached.md). */
    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.topo = &co->state.committed;
    rep.flush_ms = co->state.flush_ms;
    mb->known_epoch = co->state.committed.map.epoch;
    return brim_wire_encode_rep(brim_conn_out(c), BRIM_OP_JOIN, &rep);
}

/*
 * FLUSH from a node (its memcached port's flush_all) with the flush mark
 * FLUSH_MS it chose: now plus the delay, Unix ms. The coordinator records
 * the latest mark, persists it before answering (so a restart keeps it),
 * and hands it to every node in JOIN and HEARTBEAT replies; the node that
 * asked sends it to the members itself, at once.
 */
static int
cmd_flush(struct brim_coord *co, struct brim_conn *c,
          const struct brim_req *req)
{
    uint64_t old = co->state.flush_ms;

    if (req->flush_ms == 0) {
        return reply_err(c, req->request_id, BRIM_EINVAL,
                         "flush: the coordinator takes a flush mark "
                         "(flush_ms) only");
    }
    if (req->flush_ms > old) {
        co->state.flush_ms = req->flush_ms;
        if (brim_coord_save(co) != 0) {
            co->state.flush_ms = old;
            return reply_err(c, req->request_id, BRIM_EBUSY,
                             "flush: the coordinator cannot persist it");
        }
        brim_log_info("flush mark %" PRIu64 " (Unix ms) recorded",
                      req->flush_ms);
    }
    return brim_wire_encode_status(brim_conn_out(c), req->request_id, 0, NULL,
                                   0);
}

/* Keep the stats a HEARTBEAT carries (unknown names and types ignored). */
static void
hb_stats(struct brim_coord_member *mb, const msgpack_object *map)
{
    static const struct {
        const char *name;
        size_t      off;
    } fields[] = {
        {"keys", offsetof(struct brim_coord_member, hb_keys)},
        {"bytes", offsetof(struct brim_coord_member, hb_bytes)},
        {"partitions", offsetof(struct brim_coord_member, hb_partitions)},
        {"requests_per_sec", offsetof(struct brim_coord_member, hb_rps)},
        {"mig_in", offsetof(struct brim_coord_member, hb_mig_in)},
        {"mig_in_flight", offsetof(struct brim_coord_member, hb_mig_in_flight)},
        {"mig_out_pending",
         offsetof(struct brim_coord_member, hb_mig_out_pending)},
        {"mig_in_arc", offsetof(struct brim_coord_member, hb_mig_in_arc)},
        {"mig_in_cap", offsetof(struct brim_coord_member, hb_mig_in_cap)},
        {"mig_in_unfinished",
         offsetof(struct brim_coord_member, hb_mig_in_unfinished)},
        {"mig_in_skipped", offsetof(struct brim_coord_member, hb_mig_skipped)},
    };
    const msgpack_object_kv *kv;
    uint32_t                 i, f;

    if (map == NULL || map->type != MSGPACK_OBJECT_MAP) {
        return;
    }
    for (i = 0; i < map->via.map.size; i++) {
        kv = &map->via.map.ptr[i];
        if (kv->key.type != MSGPACK_OBJECT_STR
            || kv->val.type != MSGPACK_OBJECT_POSITIVE_INTEGER)
        {
            continue;
        }
        for (f = 0; f < BRIM_ARRAY_LEN(fields); f++) {
            if (kv->key.via.str.size == strlen(fields[f].name)
                && memcmp(kv->key.via.str.ptr, fields[f].name,
                          kv->key.via.str.size)
                    == 0)
            {
                *(uint64_t *) ((char *) mb + fields[f].off) = kv->val.via.u64;
                if (fields[f].off
                    == offsetof(struct brim_coord_member, hb_mig_in_flight)) {
                    mb->hb_mig_reported = 1;
                }
            }
        }
    }
}

static int
cmd_heartbeat(struct brim_coord *co, struct brim_conn *c,
              struct brim_coord_conn *cc, const struct brim_req *req)
{
    struct brim_coord_member *mb;

    mb = brim_coord_member_find(co, req->name, req->name_len);
    if (mb == NULL || mb->m.incarnation != req->hello.incarnation
        || mb->m.state == BRIM_MEMBER_DEAD)
    {
        return reply_err(c, req->request_id, BRIM_EDENIED,
                         "heartbeat: not a member (or fenced): join again");
    }
    if (mb->conn != NULL && mb->conn != c) {
        /* Only the member's own connection keeps it alive: another
         * node cannot vouch for a silent one. */
        return reply_err(c, req->request_id, BRIM_EDENIED,
                         "heartbeat: this connection is not that member's");
    }
    if (uv_now(co->loop) >= co->ack_until_ms) {
        /* Our etcd lease may have run out: a node's lease is renewed
         * only by a coordinator that surely still leads (DESIGN.md 12). */
        return reply_err(c, req->request_id, BRIM_ERETRY,
                         "heartbeat: this coordinator's etcd lease is not "
                         "fresh; not acknowledged");
    }
    mb->last_hb_ms = uv_now(co->loop);
    mb->hb_epoch = req->epoch;
    epoch_seen(co, req->epoch);
    hb_stats(mb, req->obj);
    if (!mb->hb_heard && co->restarted) {
        /* A restarted or newly elected coordinator counts the keys moved
         * from its first word with each node: the nodes' counters hold
         * every key they ever received (a tester saw "5505 keys moved"
         * for one leave of a 4,000-key cluster). */
        brim_coord_member_rebase(mb);
    }
    mb->hb_heard = 1;
    if (mb->conn == NULL) {
        mb->conn = c;
        cc->member = mb;
    }
    /* The node's lease: half of dead-after (DESIGN.md 7 step 7), so a
     * node cut off has stopped serving well before it is declared dead. */
    return reply_epoch(
        c, BRIM_OP_HEARTBEAT, req->request_id, co->state.committed.map.epoch,
        co->state.settings.dead_after_ms / 2, co->state.flush_ms);
}

static int
cmd_leave(struct brim_coord *co, struct brim_conn *c,
          struct brim_coord_conn *cc, const struct brim_req *req)
{
    struct brim_coord_member *mb, *o;
    char                      msg[256];
    int                       others = 0, together = 0;
    uint32_t                  force = req->arg_u32;

    mb = brim_coord_member_find(co, req->name, req->name_len);
    if (cc->role == BRIM_ROLE_NODE) {
        /* A node may ask only its own leave (SIGTERM), never forced. */
        if (cc->member == NULL || cc->member != mb) {
            return reply_err(c, req->request_id, BRIM_EDENIED,
                             "leave: a node may only ask its own leave");
        }
        force = 0;
    }
    if (mb == NULL) {
        return reply_err(c, req->request_id, BRIM_ENOTFOUND,
                         "leave: no such member");
    }
    if (mb->leaving) {
        /* Asked again (a node whose connection was lost while it left):
         * the same answer as the first time. */
        return reply_epoch(
            c, BRIM_OP_LEAVE, req->request_id,
            co->state.next_epoch + (uint64_t) co->state.has_pending, 0, 0);
    }
    for (o = co->members; o != NULL; o = o->next) {
        if (o == mb || o->removed || o->m.state == BRIM_MEMBER_DEAD) {
            continue;
        }
        others += !o->leaving;
        /* Asked to leave, and not proposed yet: leaving with this one.
         * Only for a node's own leave (systemd stopping every node at
         * once): an operator's leave of the last member not leaving is
         * refused without --force, however close the others' leaves came
         * (a tester's three quick brimctl leaves stopped the cluster and
         * dropped every key). */
        together += cc->role == BRIM_ROLE_NODE && o->leaving
            && !co->state.has_pending
            && brim_topo_find(&co->state.committed, o->m.name) >= 0;
    }
    if (others == 0 && together == 0 && force == 0
        && brim_topo_find(&co->state.committed, mb->m.name) >= 0)
    {
        snprintf(msg, sizeof(msg),
                 "leave refused: %s is the last member of "
                 "the cluster, and its keys would be lost; brimctl leave "
                 "--force %s removes it anyway",
                 mb->m.name, mb->m.name);
        return reply_err(c, req->request_id, BRIM_EDENIED, msg);
    }
    mb->leaving = 1;
    /* Written before the answer: a leave we said yes to is asked again
     * after a restart or an election (brim_coord_resume()), even when no
     * epoch had taken it yet. */
    if (brim_coord_save(co) != 0) {
        mb->leaving = 0;
        return reply_err(c, req->request_id, BRIM_ESYS,
                         "leave: the coordinator could not write its state; "
                         "nothing changed, ask again");
    }
    brim_log_info("member %s leaving%s%s%s", mb->m.name,
                  force != 0 ? " (forced)" : "",
                  cc->role == BRIM_ROLE_NODE ? " (asked by itself)" : "",
                  others == 0 && together > 0
                      ? ": every member is leaving, the cluster stops"
                      : "");
    if (cc->role != BRIM_ROLE_NODE) {
        /* An operator's leave (brimctl leave) is one deliberate change:
         * it starts at the next tick, not a join window later. */
        co->dirty = 1;
    } else if (co->join_since_ms == 0) {
        /* Leaves that nodes ask together are one change, as joins are
         * (systemd or a container runtime stops every node at once): the
         * change starts a join window after the first of them. */
        co->join_since_ms = uv_now(co->loop);
    }
    return reply_epoch(c, BRIM_OP_LEAVE, req->request_id,
                       co->state.next_epoch + (uint64_t) co->state.has_pending,
                       0, 0);
}

/* A member's partitions in the committed map. */
static uint32_t
owned(const struct brim_topo *t, const char *name)
{
    int32_t  idx = brim_topo_find(t, name);
    uint32_t i, n = 0;

    for (i = 0; idx >= 0 && i < t->map.npartitions; i++) {
        n += t->map.owner[i] == (uint16_t) idx;
    }
    return n;
}

static int
cmd_members(struct brim_coord *co, struct brim_conn *c,
            const struct brim_req *req)
{
    struct brim_buf          *out = brim_conn_out(c);
    struct brim_coord_member *mb;
    msgpack_packer            pk;
    size_t                    mark;
    uint32_t                  n = 0;
    int                       err;

    for (mb = co->members; mb != NULL; mb = mb->next) {
        n += !mb->removed;
    }
    if (brim_wire_mget_begin(out, req->request_id, n, &mark) != 0) {
        return BRIM_ENOMEM;
    }
    brim_wire_packer_init(&pk, out);
    err = 0;
    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (mb->removed) {
            continue;
        }
        err |= msgpack_pack_array(&pk, 6);
        err |= msgpack_pack_str_with_body(&pk, mb->m.name, strlen(mb->m.name));
        err |= msgpack_pack_str_with_body(&pk, mb->m.addr, strlen(mb->m.addr));
        err |= msgpack_pack_uint32(
            &pk, mb->leaving ? BRIM_MEMBER_LEAVING : mb->m.state);
        err |= msgpack_pack_uint32(&pk, mb->m.weight_ppm);
        err |=
            msgpack_pack_uint32(&pk, owned(&co->state.committed, mb->m.name));
        err |= msgpack_pack_uint32(
            &pk, (uint32_t) (uv_now(co->loop) - mb->last_hb_ms));
    }
    if (err != 0) {
        brim_frame_abort(out, mark);
        return BRIM_ENOMEM;
    }
    return brim_frame_end(out, mark);
}

/* Member I's share of TOTAL by weight among T's members (WSUM the sum of
 * their weights): TOTAL x w_i / WSUM; 1 when WSUM is 0 (no division by
 * zero in a ratio). */
static double
weighted_share(const struct brim_topo *t, uint32_t i, double total,
               uint64_t wsum)
{
    double share;

    if (wsum == 0) {
        return 1.0;
    }
    share = total * (double) t->members[i].weight_ppm / (double) wsum;
    return share > 0 ? share : 1.0;
}

/* ---- CLUSTER_STATS and PLAN: maps built with a packer ---- */

static int
kv_key(msgpack_packer *pk, const char *name)
{
    return msgpack_pack_str_with_body(pk, name, strlen(name));
}

static int
kv_u64(msgpack_packer *pk, const char *name, uint64_t v)
{
    return kv_key(pk, name) | msgpack_pack_uint64(pk, v);
}

static int
kv_f64(msgpack_packer *pk, const char *name, double v)
{
    return kv_key(pk, name) | msgpack_pack_double(pk, v);
}

static int
kv_str(msgpack_packer *pk, const char *name, const char *v)
{
    return kv_key(pk, name) | msgpack_pack_str_with_body(pk, v, strlen(v));
}

static int
kv_bool(msgpack_packer *pk, const char *name, int v)
{
    return kv_key(pk, name)
        | (v ? msgpack_pack_true(pk) : msgpack_pack_false(pk));
}

/* eps as text: "0.05", "1", "none". */
static void
eps_text(uint64_t eps_ppm, char *buf, size_t len)
{
    size_t n;

    if (eps_ppm == BRIM_EPS_NONE) {
        snprintf(buf, len, "none");
        return;
    }
    snprintf(buf, len, "%" PRIu64 ".%06" PRIu64, eps_ppm / 1000000,
             eps_ppm % 1000000);
    n = strlen(buf);
    while (n > 0 && buf[n - 1] == '0') {
        buf[--n] = '\0';
    }
    if (n > 0 && buf[n - 1] == '.') {
        buf[--n] = '\0';
    }
}

/* The cap at weight 1 of P partitions over T's members; 0 with none. */
static uint64_t
cap_one(const struct brim_topo *t)
{
    uint64_t sum = 0;
    uint32_t i;

    for (i = 0; i < t->nmembers; i++) {
        sum += t->members[i].weight_ppm;
    }
    if (sum == 0) {
        return 0;
    }
    return brim_cap(t->map.npartitions, t->eps_ppm, BRIM_WEIGHT_PPM_ONE, sum);
}

static const char *
state_name(const struct brim_coord_member *mb)
{
    if (mb->leaving) {
        return "leaving";
    }
    switch (mb->m.state) {
    case BRIM_MEMBER_JOINING:
        return "joining";
    case BRIM_MEMBER_UP:
        return "up";
    case BRIM_MEMBER_DEAD:
        return "dead";
    default:
        return "leaving";
    }
}

/* Per member of the committed map T: partitions, displaced, cap. Arrays of
 * T->nmembers entries (caller's). Returns 0 or BRIM_ENOMEM/EINVAL. */
static int
committed_counts(const struct brim_topo *t, uint64_t *count,
                 uint64_t *displaced, uint64_t *caps)
{
    struct brim_ring ring;
    uint64_t        *pos;
    uint32_t         P = t->map.npartitions, i, o;
    char             err[BRIM_ERRBUF_LEN];
    int              rc;

    if (t->nmembers == 0) {
        return 0;
    }
    memset(count, 0, t->nmembers * sizeof(*count));
    memset(displaced, 0, t->nmembers * sizeof(*displaced));
    pos = brim_malloc((size_t) P * sizeof(*pos));
    if (pos == NULL) {
        return BRIM_ENOMEM;
    }
    rc = brim_topo_ring(t, &ring, 1, err);
    if (rc != 0) {
        brim_free(pos);
        return rc;
    }
    brim_map_positions(t->seed, P, pos);
    brim_ring_caps(&ring, P, t->eps_ppm, caps);
    for (i = 0; i < P; i++) {
        o = t->map.owner[i];
        if (o >= t->nmembers) {
            continue;
        }
        count[o]++;
        displaced[o] += brim_ring_owner(&ring, pos[i]) != o;
    }
    brim_ring_destroy(&ring);
    brim_free(pos);
    return 0;
}

/* The last change's migration as the members' heartbeats tell it. */
struct mig_progress {
    int      active;     /* a change pending, a member not yet heard
                               at the committed epoch, or streams open */
    uint64_t in_flight;  /* partitions still coming in, all members */
    uint64_t keys_moved; /* keys kept from migration since the commit */
    uint64_t keys_arc;   /* of them, of partitions moved by a new arc */
    uint64_t keys_cap;   /* of them, of partitions moved by the cap */
    uint64_t skipped;    /* entries received but not kept (older) */
    uint64_t unfinished; /* partitions completed before their stream
                            ended (a source died or left early) */
};

static void
mig_progress(const struct brim_coord *co, struct mig_progress *mp)
{
    const struct brim_coord_member *mb;
    uint64_t                        epoch = co->state.committed.map.epoch;
    int                             unheard = 0;

    memset(mp, 0, sizeof(*mp));
    mp->active = co->state.has_pending;
    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (mb->removed || brim_topo_find(&co->state.committed, mb->m.name) < 0)
        {
            continue;
        }
        if ((co->restarted && !mb->hb_heard)
            || (mb->hb_mig_reported && mb->hb_epoch < epoch))
        {
            unheard = 1; /* its streams are not counted yet */
        }
        mp->active |= mb->hb_mig_in_flight > 0 || mb->hb_mig_out_pending > 0;
        mp->in_flight += mb->hb_mig_in_flight;
        if (mb->hb_mig_in > mb->mig_in_base) {
            mp->keys_moved += mb->hb_mig_in - mb->mig_in_base;
        }
        if (mb->hb_mig_in_arc > mb->mig_arc_base) {
            mp->keys_arc += mb->hb_mig_in_arc - mb->mig_arc_base;
        }
        if (mb->hb_mig_in_cap > mb->mig_cap_base) {
            mp->keys_cap += mb->hb_mig_in_cap - mb->mig_cap_base;
        }
        if (mb->hb_mig_skipped > mb->mig_skipped_base) {
            mp->skipped += mb->hb_mig_skipped - mb->mig_skipped_base;
        }
        if (mb->hb_mig_in_unfinished > mb->mig_unfinished_base) {
            mp->unfinished +=
                mb->hb_mig_in_unfinished - mb->mig_unfinished_base;
        }
    }
    if (unheard && co->last_streams) {
        mp->active = 1;
        mp->in_flight = UINT64_MAX; /* nothing known done */
    }
}

int
brim_coord_migration_active(const struct brim_coord *co)
{
    struct mig_progress mp;

    mig_progress(co, &mp);
    return mp.active;
}

int
brim_coord_stats_frame(struct brim_coord *co, struct brim_buf *out,
                       uint64_t request_id)
{
    const struct brim_topo   *t = &co->state.committed;
    struct brim_coord_member *mb;
    msgpack_packer            pk;
    uint64_t                 *count, *disp, *caps, keys_sum = 0;
    uint64_t                  bytes_sum = 0, rps_sum = 0, wsum = 0;
    uint32_t                  N = t->nmembers, nnodes = 0, i, moved;
    double                    lmax = 0, lmin = 0, kmax = 0, l, share;
    int32_t                   idx;
    int                       err = 0, within = 1;
    struct mig_progress       mp;
    size_t                    mark;
    char                      eps[32];
    uint64_t                  P = t->map.npartitions;

    count = brim_calloc(N + 1, sizeof(*count));
    disp = brim_calloc(N + 1, sizeof(*disp));
    caps = brim_calloc(N + 1, sizeof(*caps));
    if (count == NULL || disp == NULL || caps == NULL
        || committed_counts(t, count, disp, caps) != 0)
    {
        brim_free(count);
        brim_free(disp);
        brim_free(caps);
        return BRIM_ENOMEM;
    }
    /* Load is against each member's weighted share, P x w_i / sum(w)
     * (issue 12: a weight-2 node within its cap once showed load 1.58). */
    for (i = 0; i < N; i++) {
        wsum += t->members[i].weight_ppm;
    }
    for (i = 0; i < N; i++) {
        disp[N] += disp[i];
        within &= count[i] <= caps[i];
        l = count[i] / weighted_share(t, i, (double) P, wsum);
        lmax = i == 0 || l > lmax ? l : lmax;
        lmin = i == 0 || l < lmin ? l : lmin;
    }
    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (mb->removed) {
            continue;
        }
        nnodes++;
        if (brim_topo_find(t, mb->m.name) >= 0) {
            keys_sum += mb->hb_keys;
        }
        bytes_sum += mb->hb_bytes;
        rps_sum += mb->hb_rps;
    }
    for (mb = co->members; keys_sum > 0 && mb != NULL; mb = mb->next) {
        idx = mb->removed ? -1 : brim_topo_find(t, mb->m.name);
        if (idx >= 0) {
            share = weighted_share(t, (uint32_t) idx, (double) keys_sum, wsum);
            kmax = BRIM_MAX(kmax, mb->hb_keys / share);
        }
    }
    eps_text(t->eps_ppm, eps, sizeof(eps));
    moved = co->last_arc + co->last_cap;

    if (brim_wire_stats_begin(out, request_id, 21, &mark) != 0) {
        brim_free(count);
        brim_free(disp);
        brim_free(caps);
        return BRIM_ENOMEM;
    }
    brim_wire_packer_init(&pk, out);
    err |= kv_u64(&pk, "epoch", t->map.epoch);
    err |= kv_str(&pk, "eps", eps);
    err |= kv_u64(&pk, "partitions", P);
    err |= kv_u64(&pk, "tokens", co->state.settings.tokens_per_node);
    err |= kv_u64(&pk, "members", N);
    err |= kv_u64(&pk, "pending", (uint64_t) co->state.has_pending);
    err |= kv_u64(&pk, "next_epoch", co->state.next_epoch);
    err |= kv_u64(&pk, "cap", cap_one(t));
    err |= kv_bool(&pk, "within_cap", within);
    err |= kv_f64(&pk, "max_mean_partitions", lmax);
    err |= kv_f64(&pk, "min_mean_partitions", lmin);
    err |= kv_f64(&pk, "max_mean_keys", kmax);
    err |= kv_u64(&pk, "keys", keys_sum);
    err |= kv_u64(&pk, "bytes", bytes_sum);
    err |= kv_u64(&pk, "requests_per_sec", rps_sum);
    err |= kv_u64(&pk, "displaced", disp[N]);
    err |= kv_key(&pk, "nodes");
    err |= msgpack_pack_array(&pk, nnodes);
    for (mb = co->members; mb != NULL; mb = mb->next) {
        if (mb->removed) {
            continue;
        }
        idx = brim_topo_find(t, mb->m.name);
        err |= msgpack_pack_map(&pk, 14);
        err |= kv_str(&pk, "name", mb->m.name);
        err |= kv_str(&pk, "addr", mb->m.addr);
        err |= kv_str(&pk, "state", state_name(mb));
        err |= kv_f64(&pk, "weight", mb->m.weight_ppm / 1e6);
        err |= kv_u64(&pk, "partitions", idx >= 0 ? count[idx] : 0);
        err |= kv_u64(&pk, "displaced", idx >= 0 ? disp[idx] : 0);
        err |= kv_u64(&pk, "cap", idx >= 0 ? caps[idx] : 0);
        err |=
            kv_f64(&pk, "load",
                   idx >= 0 ? count[idx]
                           / weighted_share(t, (uint32_t) idx, (double) P, wsum)
                            : 0.0);
        err |= kv_u64(&pk, "keys", mb->hb_keys);
        err |= kv_u64(&pk, "bytes", mb->hb_bytes);
        err |= kv_u64(&pk, "requests_per_sec", mb->hb_rps);
        err |= kv_u64(&pk, "last_heartbeat_ms_ago",
                      uv_now(co->loop) - mb->last_hb_ms);
        err |= kv_u64(&pk, "migration_in", mb->hb_mig_in_flight);
        err |= kv_u64(&pk, "migration_out", mb->hb_mig_out_pending);
    }
    /* The last change's leavers (and dead): no longer members, a leaver
     * may still stream what it held (brimctl migrations asks it too)
     * until the migration is idle, then it has left; a dead one streams
     * nothing, and its state says so. */
    mig_progress(co, &mp);
    err |= kv_key(&pk, "departed");
    err |= msgpack_pack_array(&pk, t->ndeparted);
    for (i = 0; i < t->ndeparted; i++) {
        err |= msgpack_pack_map(&pk, 3);
        err |= kv_str(&pk, "name", t->departed[i].name);
        err |= kv_str(&pk, "addr", t->departed[i].addr);
        err |= kv_str(&pk, "state",
                      t->departed[i].state != BRIM_MEMBER_LEAVING ? "dead"
                          : mp.active                             ? "leaving"
                                                                  : "left");
    }
    err |= kv_key(&pk, "migration");
    err |= msgpack_pack_map(&pk, 17);
    err |= kv_bool(&pk, "active", mp.active);
    /* Restarted or elected after this epoch's commit: its totals were
     * this process's memory, so partitions_total/done say nothing (a
     * tester read "0/0 done" as done while streams ran). */
    err |= kv_bool(&pk, "totals_lost", co->totals_lost);
    /* Why a join or leave waits ("" when none does), and how long. */
    err |= kv_str(&pk, "waiting", co->wait_why);
    err |= kv_u64(&pk, "waiting_ms",
                  co->wait_why[0] != '\0' ? uv_now(co->loop) - co->wait_since_ms
                                          : 0);
    err |= kv_u64(&pk, "epoch", t->map.epoch);
    err |= kv_u64(&pk, "partitions_total", moved);
    err |= kv_u64(&pk, "partitions_done",
                  mp.active ? moved - BRIM_MIN(moved, mp.in_flight) : moved);
    err |= kv_u64(&pk, "moved_arc", co->last_arc);
    err |= kv_u64(&pk, "moved_cap", co->last_cap);
    err |= kv_u64(&pk, "keys_moved", mp.keys_moved);
    err |= kv_u64(&pk, "partitions_unfinished", mp.unfinished);
    err |= kv_u64(&pk, "keys_moved_arc", mp.keys_arc);
    err |= kv_u64(&pk, "keys_moved_cap", mp.keys_cap);
    err |= kv_u64(&pk, "keys_skipped", mp.skipped);
    err |= kv_u64(&pk, "keys_at_commit", co->last_keys_total);
    err |= kv_f64(&pk, "ideal_keys", co->last_ideal_keys);
    err |= kv_f64(&pk, "churn",
                  co->last_ideal_keys > 0 ? mp.keys_moved / co->last_ideal_keys
                                          : 0.0);
    /* The coordinator's own AUTH counters (PROTOCOL.md 12.4). */
    err |= kv_key(&pk, "auth");
    err |= msgpack_pack_map(&pk, 5);
    err |= kv_bool(&pk, "required", co->guard.secret != NULL);
    err |= kv_u64(&pk, "auth_ok", co->guard.stats.ok);
    err |= kv_u64(&pk, "auth_failures", co->guard.stats.failures);
    err |= kv_u64(&pk, "auth_rate_limited", co->guard.stats.rate_limited);
    err |= kv_u64(&pk, "auth_out_failures", co->guard.stats.out_failures);
    /* The coordinator that answered (issue 15): brimctl names it, and
     * /api/cluster says whether it leads. */
    err |= kv_key(&pk, "coordinator");
    err |= msgpack_pack_map(&pk, 5);
    err |= kv_str(&pk, "name", co->etcd != NULL ? co->cfg.name : "");
    err |= kv_str(&pk, "addr", co->cfg.listen);
    err |= kv_str(&pk, "mode", co->etcd != NULL ? "etcd" : "file");
    err |= kv_u64(&pk, "term", brim_coord_term(co));
    err |= kv_bool(&pk, "leading", co->leading);
    brim_free(count);
    brim_free(disp);
    brim_free(caps);
    if (err != 0) {
        brim_frame_abort(out, mark);
        return BRIM_ENOMEM;
    }
    return brim_frame_end(out, mark);
}

static int
cmd_stats(struct brim_coord *co, struct brim_conn *c,
          const struct brim_req *req)
{
    int rc;

    rc = brim_coord_stats_frame(co, brim_conn_out(c), req->request_id);
    if (rc == BRIM_ENOMEM) {
        return reply_err(c, req->request_id, BRIM_ENOMEM,
                         "cluster_stats: no memory");
    }
    return rc;
}

static int
cmp_name(const void *a, const void *b)
{
    return strcmp(((const struct brim_member *) a)->name,
                  ((const struct brim_member *) b)->name);
}

/* PLAN: the next map a join or a leave would give, from the committed one,
 * computed and counted without changing anything (PROTOCOL.md 10.2). */
static int
cmd_plan(struct brim_coord *co, struct brim_conn *c, const struct brim_req *req)
{
    const struct brim_topo   *ot = &co->state.committed;
    struct brim_buf          *out = brim_conn_out(c);
    struct brim_coord_member *mb;
    struct brim_topo          nt;
    struct brim_member       *m;
    msgpack_packer            pk;
    char                      name[BRIM_NAME_MAX + 1], msg[256];
    char                      err[BRIM_ERRBUF_LEN] = "";
    uint32_t                  kind = req->arg_u32, w = req->weight_ppm;
    uint32_t                  P = ot->map.npartitions, N = ot->nmembers;
    uint32_t                  i, arc = 0, cap = 0, moved = 0, own;
    int32_t                   idx = -1;
    double                    ideal, keys = 0.0;
    uint64_t                  cap_before, wsum;
    size_t                    mark;
    int                       rc, e = 0;

    if (kind != 1 && kind != 2) {
        return reply_err(c, req->request_id, BRIM_EINVAL,
                         "plan: kind is 1 (join) or 2 (leave)");
    }
    if (w == 0) {
        w = BRIM_WEIGHT_PPM_ONE;
    }
    if (!brim_ring_name_valid(req->name, req->name_len)
        || (kind == 1 && (w < BRIM_WEIGHT_PPM_MIN || w > BRIM_WEIGHT_PPM_MAX)))
    {
        return reply_err(c, req->request_id, BRIM_EINVAL,
                         "plan: bad name or weight_ppm");
    }
    memcpy(name, req->name, req->name_len);
    name[req->name_len] = '\0';
    idx = brim_topo_find(ot, name);
    if (kind == 1 && idx >= 0) {
        snprintf(msg, sizeof(msg), "plan: %s is already a member", name);
        return reply_err(c, req->request_id, BRIM_EEXISTS, msg);
    }
    if (kind == 2 && idx < 0) {
        snprintf(msg, sizeof(msg), "plan: %s is not a member of epoch %" PRIu64,
                 name, ot->map.epoch);
        return reply_err(c, req->request_id, BRIM_ENOTFOUND, msg);
    }
    if (kind == 2 && N == 1) {
        snprintf(msg, sizeof(msg),
                 "plan: %s is the last member: its keys "
                 "would be lost",
                 name);
        return reply_err(c, req->request_id, BRIM_EDENIED, msg);
    }
    if (brim_topo_init(&nt, ot->cluster_id, ot->seed, P, ot->tokens_per_node,
                       ot->eps_ppm, co->state.next_epoch)
            != 0
        || (nt.members = brim_calloc(N + 1, sizeof(*nt.members))) == NULL)
    {
        brim_topo_destroy(&nt);
        return reply_err(c, req->request_id, BRIM_ENOMEM, "plan: no memory");
    }
    /* The committed members, less the leaver or plus the newcomer,
     * sorted by name as every topology is. */
    for (i = 0; i < N; i++) {
        if (kind != 2 || (int32_t) i != idx) {
            nt.members[nt.nmembers] = ot->members[i];
            nt.members[nt.nmembers++].state = BRIM_MEMBER_UP;
        }
    }
    if (kind == 1) {
        m = &nt.members[nt.nmembers++];
        memset(m, 0, sizeof(*m));
        memcpy(m->name, name, req->name_len + 1);
        m->weight_ppm = w;
        m->state = BRIM_MEMBER_UP;
        qsort(nt.members, nt.nmembers, sizeof(*nt.members), cmp_name);
    }
    rc = brim_coord_place(co, &nt, &arc, &cap, err);
    if (rc != 0) {
        brim_topo_destroy(&nt);
        snprintf(msg, sizeof(msg), "plan: placement failed: %.200s", err);
        return reply_err(c, req->request_id, rc, msg);
    }
    /* Moved partitions, compared by owner name, and the keys they hold by
     * their owners' last heartbeats. */
    for (i = 0; i < P; i++) {
        uint16_t    o = ot->map.owner[i], n = nt.map.owner[i];
        const char *on = o < N ? ot->members[o].name : "";
        const char *nn = n < nt.nmembers ? nt.members[n].name : "";

        if (strcmp(on, nn) == 0) {
            continue;
        }
        moved++;
        if (o < N) {
            mb = brim_coord_member_find(co, on, strlen(on));
            own = owned(ot, on);
            if (mb != NULL && own > 0) {
                keys += (double) mb->hb_keys / own;
            }
        }
    }
    cap_before = cap_one(ot);
    if (kind == 1) {
        /* The newcomer's weighted share: P x w / (sum of weights + w). */
        for (i = 0, wsum = 0; i < N; i++) {
            wsum += ot->members[i].weight_ppm;
        }
        ideal = (double) P * w / (double) (wsum + w);
    } else {
        ideal = (double) owned(ot, name);
    }
    if (brim_wire_stats_begin(out, req->request_id, 10, &mark) != 0) {
        brim_topo_destroy(&nt);
        return BRIM_ENOMEM;
    }
    brim_wire_packer_init(&pk, out);
    e |= kv_str(&pk, "kind", kind == 1 ? "join" : "leave");
    e |= kv_str(&pk, "name", name);
    e |= kv_u64(&pk, "partitions_moved", moved);
    e |= kv_u64(&pk, "moved_arc", arc);
    e |= kv_u64(&pk, "moved_cap", cap);
    e |= kv_f64(&pk, "ideal", ideal);
    e |= kv_f64(&pk, "churn", ideal > 0 ? moved / ideal : 0.0);
    e |= kv_u64(&pk, "cap_before", cap_before);
    e |= kv_u64(&pk, "cap_after", cap_one(&nt));
    e |= kv_u64(&pk, "keys_estimate", (uint64_t) (keys + 0.5));
    brim_topo_destroy(&nt);
    if (e != 0) {
        brim_frame_abort(out, mark);
        return BRIM_ENOMEM;
    }
    return brim_frame_end(out, mark);
}

static int
cmd_run(struct brim_coord *co, struct brim_conn *c, struct brim_coord_conn *cc,
        const struct brim_req *req)
{
    const struct brim_op_info *info = brim_op_info(req->op);
    int                        rc;

    if (cc->role == 0 && req->op != BRIM_OP_HELLO && req->op != BRIM_OP_PING) {
        return reply_err(c, req->request_id, BRIM_EDENIED, "HELLO first");
    }
    /* AUTH, and ops that need a proven secret (PROTOCOL.md 12); HELLO
     * forgets an earlier proof. */
    rc = brim_guard_request(&co->guard, c, cc->role, req);
    if (rc != 0) {
        return rc == 1 ? 0 : rc;
    }
    if (req->op == BRIM_OP_HELLO) {
        (void) brim_coord_etcd_follow(co); /* a follower names its cluster */
        return cmd_hello(co, c, cc, req);
    }
    if (req->op == BRIM_OP_PING) {
        return brim_wire_encode_status(brim_conn_out(c), req->request_id, 0,
                                       NULL, 0);
    }
    if (!co->leading && req->op == BRIM_OP_MAP_FETCH
        && brim_coord_etcd_follow(co) == 0)
    {
        /* Any coordinator serves the committed map: as etcd holds it. */
        return brim_coord_reply_topo(c, req->op, req->request_id,
                                     &co->state.committed);
    }
    if (!co->leading) {
        /* etcd mode, not elected: name the leader (PROTOCOL.md 10.5). */
        return reply_err(c, req->request_id, BRIM_ENOTLEADER, co->leader_addr);
    }
    if ((info->flags & BRIM_OPF_ADMIN) && cc->role != BRIM_ROLE_ADMIN
        && cc->role != BRIM_ROLE_COORD
        && !((req->op == BRIM_OP_LEAVE || req->op == BRIM_OP_FLUSH)
             && cc->role == BRIM_ROLE_NODE))
    {
        return reply_err(c, req->request_id, BRIM_EDENIED,
                         "an admin op: HELLO with role admin");
    }
    switch (req->op) {
    case BRIM_OP_JOIN:
        return cmd_join(co, c, cc, req);
    case BRIM_OP_HEARTBEAT:
        return cmd_heartbeat(co, c, cc, req);
    case BRIM_OP_LEAVE:
        return cmd_leave(co, c, cc, req);
    case BRIM_OP_FLUSH:
        return cmd_flush(co, c, req);
    case BRIM_OP_MAP_FETCH:
        return brim_coord_reply_topo(c, req->op, req->request_id,
                                     &co->state.committed);
    case BRIM_OP_SUBSCRIBE:
        if (co->state.committed.map.epoch > req->arg_epoch) {
            return brim_coord_reply_topo(c, req->op, req->request_id,
                                         &co->state.committed);
        }
        cc->sub_id = req->request_id;
        cc->sub_known = req->arg_epoch;
        /* Answered before --idle-timeout could close it as silent. */
        cc->sub_deadline = uv_now(co->loop)
            + (co->cfg.idle_timeout_s != 0
                       && co->cfg.idle_timeout_s * 500u
                           < COORD_SUBSCRIBE_HOLD_MS
                   ? co->cfg.idle_timeout_s * 500u
                   : COORD_SUBSCRIBE_HOLD_MS);
        return 0;
    case BRIM_OP_MEMBERS:
        return cmd_members(co, c, req);
    case BRIM_OP_CLUSTER_STATS:
        return cmd_stats(co, c, req);
    case BRIM_OP_PLAN:
        return cmd_plan(co, c, req);
    default:
        return reply_err(c, req->request_id, BRIM_EUNKNOWNOP,
                         "not served by the coordinator");
    }
}

int
brim_coord_dispatch(struct brim_conn *c, const char *body, size_t len)
{
    struct brim_coord      *co = c->srv->data;
    struct brim_coord_conn *cc = c->data;
    struct brim_wire_limits lim;
    struct brim_req         req;
    char                    err[BRIM_ERRBUF_LEN] = "";
    int                     rc;

    if (cc == NULL) {
        cc = brim_calloc(1, sizeof(*cc));
        if (cc == NULL) {
            return BRIM_ENOMEM;
        }
        c->data = cc;
    }
    brim_wire_limits_default(&lim);
    rc = brim_wire_parse_req(body, len, &lim, &co->zone, &req, err);
    if (rc != 0) {
        rc = reply_err(c, req.request_id, rc, err);
    } else {
        rc = cmd_run(co, c, cc, &req);
    }
    return rc == BRIM_ENOMEM ? rc : 0;
}

void
brim_coord_conn_closed(struct brim_conn *c)
{
    struct brim_coord_conn *cc = c->data;

    if (cc != NULL && cc->member != NULL && cc->member->conn == c) {
        cc->member->conn = NULL;
        brim_coord_member_gone(cc->member);
    }
    brim_free(cc);
    c->data = NULL;
}
