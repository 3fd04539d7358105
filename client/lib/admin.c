/*
 * client/lib/admin.c - the operator's calls of <brim/admin.h>: MEMBERS,
 * LEAVE, PLAN and CLUSTER_STATS sent to the coordinator through
 * coordlink.c, and their replies decoded into typed structs. The maps are
 * read by name through one table per struct, so their order does not
 * matter; a name this library does not know is skipped (a newer
 * coordinator may add figures), and a known one of the wrong type makes
 * the reply malformed (BRIM_EBADREPLY), never a guess.
 */
#include <brim/admin.h>

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "client/lib/client_int.h"
#include "common/alloc.h"
#include "common/defs.h"
#include "proto/ops.h"

_Static_assert(BRIM_ADMIN_NAME_MAX == BRIM_NAME_MAX,
               "admin.h's name length is the protocol's");
_Static_assert(BRIM_ADMIN_ADDR_MAX == BRIM_ADDR_MAX,
               "admin.h's address length is the protocol's");

/* How a field of a reply's map is stored. */
enum admin_kind {
    ADMIN_U64 = 1, /* u64 <- positive integer */
    ADMIN_F64,     /* double <- float (or integer) */
    ADMIN_FLAG,    /* int 0/1 <- boolean (or integer) */
    ADMIN_TEXT,    /* char[SIZE] <- str or bin, cut */
    ADMIN_ENUM,    /* int <- str, its index in NAMES */
    ADMIN_WEIGHT   /* uint32_t ppm <- float weight */
};

/* One named field of a reply's map and where it goes in the struct. */
struct admin_field {
    const char        *name;   /* the map's key */
    uint8_t            kind;   /* enum admin_kind */
    uint16_t           size;   /* ADMIN_TEXT: the array's bytes */
    uint32_t           off;    /* offsetof() in the struct */
    const char *const *names;  /* ADMIN_ENUM: value i's name */
    uint8_t            nnames; /* ADMIN_ENUM: entries of NAMES */
};

/* A field KEY of struct TYPE's MEMBER, stored as KIND (or an enum). */
#define ADMIN_F(type, key, member, kind)                                       \
    {                                                                          \
        key, kind, sizeof(((struct type *) 0)->member),                        \
            offsetof(struct type, member), NULL, 0                             \
    }
#define ADMIN_E(type, key, member, names)                                      \
    {                                                                          \
        key, ADMIN_ENUM, 0, offsetof(struct type, member), names,              \
            BRIM_ARRAY_LEN(names)                                              \
    }

/* enum brim_node_state's names, as CLUSTER_STATS spells them. */
static const char *const admin_states[] = {"unknown", "joining", "up",
                                           "leaving", "dead",    "left"};
_Static_assert(BRIM_ARRAY_LEN(admin_states) == BRIM_NODE_LEFT + 1,
               "a name per node state");

/* enum brim_plan_kind's names, as PLAN spells them. */
static const char *const admin_kinds[] = {"", "join", "leave"};

static const struct admin_field admin_node_fields[] = {
    ADMIN_F(brim_cluster_node, "name", name, ADMIN_TEXT),
    ADMIN_F(brim_cluster_node, "addr", addr, ADMIN_TEXT),
    ADMIN_E(brim_cluster_node, "state", state, admin_states),
    ADMIN_F(brim_cluster_node, "weight", weight_ppm, ADMIN_WEIGHT),
    ADMIN_F(brim_cluster_node, "partitions", partitions, ADMIN_U64),
    ADMIN_F(brim_cluster_node, "displaced", displaced, ADMIN_U64),
    ADMIN_F(brim_cluster_node, "cap", cap, ADMIN_U64),
    ADMIN_F(brim_cluster_node, "load", load, ADMIN_F64),
    ADMIN_F(brim_cluster_node, "keys", keys, ADMIN_U64),
    ADMIN_F(brim_cluster_node, "bytes", bytes, ADMIN_U64),
    ADMIN_F(brim_cluster_node, "requests_per_sec", requests_per_sec, ADMIN_U64),
    ADMIN_F(brim_cluster_node, "last_heartbeat_ms_ago", last_heartbeat_ms_ago,
            ADMIN_U64),
    ADMIN_F(brim_cluster_node, "migration_in", migration_in, ADMIN_U64),
    ADMIN_F(brim_cluster_node, "migration_out", migration_out, ADMIN_U64),
};

static const struct admin_field admin_migration_fields[] = {
    ADMIN_F(brim_cluster_migration, "active", active, ADMIN_FLAG),
    ADMIN_F(brim_cluster_migration, "waiting", waiting, ADMIN_TEXT),
    ADMIN_F(brim_cluster_migration, "waiting_ms", waiting_ms, ADMIN_U64),
    ADMIN_F(brim_cluster_migration, "epoch", epoch, ADMIN_U64),
    ADMIN_F(brim_cluster_migration, "partitions_total", partitions_total,
            ADMIN_U64),
    ADMIN_F(brim_cluster_migration, "partitions_done", partitions_done,
            ADMIN_U64),
    ADMIN_F(brim_cluster_migration, "moved_arc", moved_arc, ADMIN_U64),
    ADMIN_F(brim_cluster_migration, "moved_cap", moved_cap, ADMIN_U64),
    ADMIN_F(brim_cluster_migration, "keys_moved", keys_moved, ADMIN_U64),
    ADMIN_F(brim_cluster_migration, "keys_moved_arc", keys_moved_arc,
            ADMIN_U64),
    ADMIN_F(brim_cluster_migration, "keys_moved_cap", keys_moved_cap,
            ADMIN_U64),
    ADMIN_F(brim_cluster_migration, "keys_skipped", keys_skipped, ADMIN_U64),
    ADMIN_F(brim_cluster_migration, "keys_at_commit", keys_at_commit,
            ADMIN_U64),
    ADMIN_F(brim_cluster_migration, "ideal_keys", ideal_keys, ADMIN_F64),
    ADMIN_F(brim_cluster_migration, "churn", churn, ADMIN_F64),
    ADMIN_F(brim_cluster_migration, "partitions_unfinished",
            partitions_unfinished, ADMIN_U64),
    ADMIN_F(brim_cluster_migration, "totals_lost", totals_lost, ADMIN_FLAG),
};

static const struct admin_field admin_auth_fields[] = {
    ADMIN_F(brim_cluster_auth, "required", required, ADMIN_FLAG),
    ADMIN_F(brim_cluster_auth, "auth_ok", auth_ok, ADMIN_U64),
    ADMIN_F(brim_cluster_auth, "auth_failures", auth_failures, ADMIN_U64),
    ADMIN_F(brim_cluster_auth, "auth_rate_limited", auth_rate_limited,
            ADMIN_U64),
    ADMIN_F(brim_cluster_auth, "auth_out_failures", auth_out_failures,
            ADMIN_U64),
};

/* enum brim_coord_mode's names, as CLUSTER_STATS spells them. */
static const char *const admin_modes[] = {"", "file", "etcd"};
_Static_assert(BRIM_ARRAY_LEN(admin_modes) == BRIM_COORD_MODE_ETCD + 1,
               "a name per coordinator mode");

static const struct admin_field admin_coord_fields[] = {
    ADMIN_F(brim_cluster_coord, "name", name, ADMIN_TEXT),
    ADMIN_F(brim_cluster_coord, "addr", addr, ADMIN_TEXT),
    ADMIN_E(brim_cluster_coord, "mode", mode, admin_modes),
    ADMIN_F(brim_cluster_coord, "term", term, ADMIN_U64),
    ADMIN_F(brim_cluster_coord, "leading", leading, ADMIN_FLAG),
};

/* CLUSTER_STATS's top level; "nodes", "migration", "auth" and
 * "coordinator" are read apart (admin_stats_reply()). */
static const struct admin_field admin_stats_fields[] = {
    ADMIN_F(brim_cluster_stats, "epoch", epoch, ADMIN_U64),
    ADMIN_F(brim_cluster_stats, "eps", eps, ADMIN_TEXT),
    ADMIN_F(brim_cluster_stats, "partitions", partitions, ADMIN_U64),
    ADMIN_F(brim_cluster_stats, "tokens", tokens, ADMIN_U64),
    ADMIN_F(brim_cluster_stats, "members", members, ADMIN_U64),
    ADMIN_F(brim_cluster_stats, "pending", pending, ADMIN_U64),
    ADMIN_F(brim_cluster_stats, "next_epoch", next_epoch, ADMIN_U64),
    ADMIN_F(brim_cluster_stats, "cap", cap, ADMIN_U64),
    ADMIN_F(brim_cluster_stats, "within_cap", within_cap, ADMIN_FLAG),
    ADMIN_F(brim_cluster_stats, "max_mean_partitions", max_mean_partitions,
            ADMIN_F64),
    ADMIN_F(brim_cluster_stats, "min_mean_partitions", min_mean_partitions,
            ADMIN_F64),
    ADMIN_F(brim_cluster_stats, "max_mean_keys", max_mean_keys, ADMIN_F64),
    ADMIN_F(brim_cluster_stats, "keys", keys, ADMIN_U64),
    ADMIN_F(brim_cluster_stats, "bytes", bytes, ADMIN_U64),
    ADMIN_F(brim_cluster_stats, "requests_per_sec", requests_per_sec,
            ADMIN_U64),
    ADMIN_F(brim_cluster_stats, "displaced", displaced, ADMIN_U64),
};

static const struct admin_field admin_plan_fields[] = {
    ADMIN_E(brim_plan, "kind", kind, admin_kinds),
    ADMIN_F(brim_plan, "name", name, ADMIN_TEXT),
    ADMIN_F(brim_plan, "partitions_moved", partitions_moved, ADMIN_U64),
    ADMIN_F(brim_plan, "moved_arc", moved_arc, ADMIN_U64),
    ADMIN_F(brim_plan, "moved_cap", moved_cap, ADMIN_U64),
    ADMIN_F(brim_plan, "ideal", ideal, ADMIN_F64),
    ADMIN_F(brim_plan, "churn", churn, ADMIN_F64),
    ADMIN_F(brim_plan, "cap_before", cap_before, ADMIN_U64),
    ADMIN_F(brim_plan, "cap_after", cap_after, ADMIN_U64),
    ADMIN_F(brim_plan, "keys_estimate", keys_estimate, ADMIN_U64),
};

const char *
brim_node_state_name(int state)
{
    if (state <= BRIM_NODE_UNKNOWN || state > BRIM_NODE_LEFT) {
        return admin_states[BRIM_NODE_UNKNOWN];
    }
    return admin_states[state];
}

const char *
brim_coord_mode_name(int mode)
{
    if (mode <= BRIM_COORD_MODE_UNKNOWN || mode > BRIM_COORD_MODE_ETCD) {
        return admin_modes[BRIM_COORD_MODE_UNKNOWN];
    }
    return admin_modes[mode];
}

/* The bytes of the str or bin O into *P, *LEN; -1 for another type. */
static int
admin_bytes(const msgpack_object *o, const char **p, size_t *len)
{
    if (o->type == MSGPACK_OBJECT_STR) {
        *p = o->via.str.ptr;
        *len = o->via.str.size;
    } else if (o->type == MSGPACK_OBJECT_BIN) {
        *p = o->via.bin.ptr;
        *len = o->via.bin.size;
    } else {
        return -1;
    }
    return 0;
}

/* Copy the str or bin O into TEXT (SIZE bytes), cut and NUL-ended. */
static int
admin_text(const msgpack_object *o, char *text, size_t size)
{
    const char *p;
    size_t      n;

    if (admin_bytes(o, &p, &n) != 0) {
        return BRIM_EBADREPLY;
    }
    n = BRIM_MIN(n, size - 1);
    if (n > 0) {
        memcpy(text, p, n);
    }
    text[n] = '\0';
    return 0;
}

/* The number O as a double; -1 when O is not a number. */
static int
admin_number(const msgpack_object *o, double *v)
{
    switch (o->type) {
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        *v = o->via.f64;
        return 0;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        *v = (double) o->via.u64;
        return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        *v = (double) o->via.i64;
        return 0;
    default:
        return -1;
    }
}

/* The index of the str O in F->names, or 0 (unknown). */
static int
admin_enum(const struct admin_field *f, const msgpack_object *o, int *out)
{
    const char *p;
    size_t      n;
    uint8_t     i;

    if (admin_bytes(o, &p, &n) != 0) {
        return BRIM_EBADREPLY;
    }
    *out = 0;
    for (i = 1; i < f->nnames; i++) {
        if (strlen(f->names[i]) == n && memcmp(f->names[i], p, n) == 0) {
            *out = i;
        }
    }
    return 0;
}

/* Store the value O of field F into the struct at OUT. */
static int
admin_store(const struct admin_field *f, const msgpack_object *o, char *out)
{
    double v;

    switch (f->kind) {
    case ADMIN_U64:
        if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
            return BRIM_EBADREPLY;
        }
        *(uint64_t *) (void *) (out + f->off) = o->via.u64;
        return 0;
    case ADMIN_F64:
        if (admin_number(o, &v) != 0) {
            return BRIM_EBADREPLY;
        }
        *(double *) (void *) (out + f->off) = v;
        return 0;
    case ADMIN_FLAG:
        if (o->type == MSGPACK_OBJECT_BOOLEAN) {
            *(int *) (void *) (out + f->off) = o->via.boolean ? 1 : 0;
            return 0;
        }
        if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
            *(int *) (void *) (out + f->off) = o->via.u64 != 0;
            return 0;
        }
        return BRIM_EBADREPLY;
    case ADMIN_TEXT:
        return admin_text(o, out + f->off, f->size);
    case ADMIN_ENUM:
        return admin_enum(f, o, (int *) (void *) (out + f->off));
    default: /* ADMIN_WEIGHT: 1.0 is 10^6 ppm */
        if (admin_number(o, &v) != 0 || !(v >= 0) || v * 1e6 > UINT32_MAX) {
            return BRIM_EBADREPLY;
        }
        *(uint32_t *) (void *) (out + f->off) = (uint32_t) llround(v * 1e6);
        return 0;
    }
}

/*
 * Decode the map MAP by the NF fields F into the struct at OUT (zeroed
 * by the caller): each key found in F is stored; others are skipped.
 * Returns 0 or BRIM_EBADREPLY (not a map; a field of the wrong type).
 */
static int
admin_decode(const msgpack_object *map, const struct admin_field *f, size_t nf,
             void *out)
{
    const msgpack_object_kv *kv;
    const char              *key;
    size_t                   klen, i, j;
    int                      rc;

    if (map == NULL || map->type != MSGPACK_OBJECT_MAP) {
        return BRIM_EBADREPLY;
    }
    for (i = 0; i < map->via.map.size; i++) {
        kv = &map->via.map.ptr[i];
        if (admin_bytes(&kv->key, &key, &klen) != 0) {
            continue;
        }
        for (j = 0; j < nf; j++) {
            if (strlen(f[j].name) == klen && memcmp(f[j].name, key, klen) == 0)
            {
                rc = admin_store(&f[j], &kv->val, out);
                if (rc != 0) {
                    return rc;
                }
                break;
            }
        }
    }
    return 0;
}

/* The value under KEY in MAP, or NULL. */
static const msgpack_object *
admin_get(const msgpack_object *map, const char *key)
{
    const msgpack_object_kv *kv;
    const char              *p;
    size_t                   n, i;

    for (i = 0; i < map->via.map.size; i++) {
        kv = &map->via.map.ptr[i];
        if (admin_bytes(&kv->key, &p, &n) == 0 && n == strlen(key)
            && memcmp(p, key, n) == 0)
        {
            return &kv->val;
        }
    }
    return NULL;
}

/* 0 when C may make an admin call; else BRIM_EINVAL with the message. */
static int
admin_check(struct brim_client *c, const void *out)
{
    if (c == NULL) {
        return BRIM_EINVAL;
    }
    if (out == NULL) {
        brim_lib_errmsg(c, "no place for the result");
        return BRIM_EINVAL;
    }
    return 0;
}

/* ---- members ---- */

/* What the MEMBERS callback fills. */
struct admin_members {
    struct brim_member_info *list; /* new array, or NULL */
    size_t                   n;    /* its entries */
};

/* The u32 O into *OUT; BRIM_EBADREPLY for another type or above 2^32-1. */
static int
admin_u32(const msgpack_object *o, uint32_t *out)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > UINT32_MAX) {
        return BRIM_EBADREPLY;
    }
    *out = (uint32_t) o->via.u64;
    return 0;
}

/* Member O, [name, addr, state, weight_ppm, partitions, heartbeat ago]
 * (PROTOCOL.md 10.2), into *M. */
static int
admin_member(const msgpack_object *o, struct brim_member_info *m)
{
    const msgpack_object *e;
    uint32_t              state;

    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size < 6) {
        return BRIM_EBADREPLY;
    }
    e = o->via.array.ptr;
    if (admin_text(&e[0], m->name, sizeof(m->name)) != 0
        || admin_text(&e[1], m->addr, sizeof(m->addr)) != 0
        || admin_u32(&e[2], &state) != 0
        || admin_u32(&e[3], &m->weight_ppm) != 0
        || admin_u32(&e[4], &m->partitions) != 0
        || admin_u32(&e[5], &m->last_heartbeat_ms_ago) != 0)
    {
        return BRIM_EBADREPLY;
    }
    m->state = state <= BRIM_NODE_DEAD ? (int) state : BRIM_NODE_UNKNOWN;
    return 0;
}

/* brim_coordlink_call() callback of MEMBERS: the array into ARG. */
static int
admin_members_reply(const msgpack_object *obj, uint64_t epoch, void *arg)
{
    struct admin_members *out = arg;
    uint32_t              i, n;
    int                   rc;

    (void) epoch;
    if (obj == NULL || obj->type != MSGPACK_OBJECT_ARRAY) {
        return BRIM_EBADREPLY;
    }
    n = obj->via.array.size;
    if (n == 0) {
        return 0;
    }
    out->list = brim_calloc(n, sizeof(*out->list));
    if (out->list == NULL) {
        return BRIM_ENOMEM;
    }
    for (i = 0; i < n; i++) {
        rc = admin_member(&obj->via.array.ptr[i], &out->list[i]);
        if (rc != 0) {
            brim_free(out->list);
            out->list = NULL;
            return rc;
        }
    }
    out->n = n;
    return 0;
}

int
brim_members(struct brim_client *c, struct brim_member_info **members,
             size_t *nmembers)
{
    struct admin_members out = {NULL, 0};
    int                  rc;

    rc = admin_check(c, members != NULL && nmembers != NULL ? members : NULL);
    if (rc != 0) {
        return rc;
    }
    rc = brim_coordlink_call(c, BRIM_OP_MEMBERS, NULL, 0, 0,
                             admin_members_reply, &out);
    if (rc != 0) {
        brim_free(out.list);
        return rc;
    }
    *members = out.list;
    *nmembers = out.n;
    return 0;
}

void
brim_members_free(struct brim_member_info *members)
{
    brim_free(members);
}

/* ---- leave and plan ---- */

/* brim_coordlink_call() callback of LEAVE: the change's epoch into ARG. */
static int
admin_leave_reply(const msgpack_object *obj, uint64_t epoch, void *arg)
{
    (void) obj;
    *(uint64_t *) arg = epoch;
    return 0;
}

int
brim_leave(struct brim_client *c, const char *name, int force, uint64_t *epoch)
{
    uint64_t e = 0;
    int      rc;

    rc = admin_check(c, name);
    if (rc != 0) {
        return rc;
    }
    rc = brim_coordlink_call(c, BRIM_OP_LEAVE, name, force ? 1 : 0, 0,
                             admin_leave_reply, &e);
    if (rc == 0 && epoch != NULL) {
        *epoch = e;
    }
    return rc;
}

/* brim_coordlink_call() callback of PLAN: the map into the plan ARG. */
static int
admin_plan_reply(const msgpack_object *obj, uint64_t epoch, void *arg)
{
    (void) epoch;
    return admin_decode(obj, admin_plan_fields,
                        BRIM_ARRAY_LEN(admin_plan_fields), arg);
}

int
brim_plan(struct brim_client *c, int kind, const char *name,
          uint32_t weight_ppm, struct brim_plan *plan)
{
    struct brim_plan p;
    int              rc;

    rc = admin_check(c, name != NULL ? (const void *) plan : NULL);
    if (rc != 0) {
        return rc;
    }
    if ((kind != BRIM_PLAN_JOIN && kind != BRIM_PLAN_LEAVE)
        || (kind == BRIM_PLAN_LEAVE && weight_ppm != 0))
    {
        brim_lib_errmsg(c,
                        "plan: kind %d with weight %u ppm: want a join "
                        "(any weight) or a leave (weight 0)",
                        kind, (unsigned) weight_ppm);
        return BRIM_EINVAL;
    }
    memset(&p, 0, sizeof(p));
    rc = brim_coordlink_call(c, BRIM_OP_PLAN, name, (uint32_t) kind, weight_ppm,
                             admin_plan_reply, &p);
    if (rc == 0) {
        *plan = p;
    }
    return rc;
}

/* ---- cluster statistics ---- */

/* One allocation: the stats, then their node rows, then the departed. */
struct admin_stats {
    struct brim_cluster_stats stats;  /* what the caller gets */
    struct brim_cluster_node  rows[]; /* stats.nodes, then stats.departed */
};

/* brim_coordlink_call() callback of CLUSTER_STATS: a new struct admin_stats
 * into *ARG. */
static int
admin_stats_reply(const msgpack_object *obj, uint64_t epoch, void *arg)
{
    struct admin_stats  **out = arg;
    struct admin_stats   *s;
    const msgpack_object *nodes, *gone, *m;
    uint32_t              i, n, ng;
    int                   rc;

    (void) epoch;
    if (obj == NULL || obj->type != MSGPACK_OBJECT_MAP) {
        return BRIM_EBADREPLY;
    }
    nodes = admin_get(obj, "nodes");
    gone = admin_get(obj, "departed"); /* absent from older coordinators */
    if ((nodes != NULL && nodes->type != MSGPACK_OBJECT_ARRAY)
        || (gone != NULL && gone->type != MSGPACK_OBJECT_ARRAY))
    {
        return BRIM_EBADREPLY;
    }
    n = nodes != NULL ? nodes->via.array.size : 0;
    ng = gone != NULL ? gone->via.array.size : 0;
    s = brim_calloc(1, sizeof(*s) + ((size_t) n + ng) * sizeof(s->rows[0]));
    if (s == NULL) {
        return BRIM_ENOMEM;
    }
    s->stats.nodes = n > 0 ? s->rows : NULL;
    s->stats.nnodes = n;
    s->stats.departed = ng > 0 ? s->rows + n : NULL;
    s->stats.ndeparted = ng;
    rc = admin_decode(obj, admin_stats_fields,
                      BRIM_ARRAY_LEN(admin_stats_fields), &s->stats);
    for (i = 0; rc == 0 && i < n; i++) {
        rc = admin_decode(&nodes->via.array.ptr[i], admin_node_fields,
                          BRIM_ARRAY_LEN(admin_node_fields), &s->rows[i]);
    }
    for (i = 0; rc == 0 && i < ng; i++) {
        rc = admin_decode(&gone->via.array.ptr[i], admin_node_fields,
                          BRIM_ARRAY_LEN(admin_node_fields), &s->rows[n + i]);
    }
    m = admin_get(obj, "migration");
    if (rc == 0 && m != NULL) {
        rc = admin_decode(m, admin_migration_fields,
                          BRIM_ARRAY_LEN(admin_migration_fields),
                          &s->stats.migration);
    }
    m = admin_get(obj, "auth");
    if (rc == 0 && m != NULL) {
        rc = admin_decode(m, admin_auth_fields,
                          BRIM_ARRAY_LEN(admin_auth_fields), &s->stats.auth);
    }
    m = admin_get(obj, "coordinator");
    if (rc == 0 && m != NULL) {
        rc = admin_decode(m, admin_coord_fields,
                          BRIM_ARRAY_LEN(admin_coord_fields),
                          &s->stats.coordinator);
    }
    if (rc != 0) {
        brim_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

int
brim_cluster_stats(struct brim_client *c, struct brim_cluster_stats **stats)
{
    struct admin_stats *s = NULL;
    int                 rc;

    rc = admin_check(c, stats);
    if (rc != 0) {
        return rc;
    }
    rc = brim_coordlink_call(c, BRIM_OP_CLUSTER_STATS, NULL, 0, 0,
                             admin_stats_reply, &s);
    if (rc != 0) {
        brim_free(s);
        return rc;
    }
    *stats = &s->stats;
    return 0;
}

void
brim_cluster_stats_free(struct brim_cluster_stats *stats)
{
    brim_free(stats); /* the first member of admin_stats */
}
