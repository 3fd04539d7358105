/*
 * server/coord/http.c - brim-coord's HTTP port (--http-listen, DESIGN.md
 * 11): /metrics in Prometheus's text format and /api/cluster as JSON,
 * both read from the CLUSTER_STATS reply built as for brimctl
 * (brim_coord_stats_frame), so the three agree at the same moment.
 * /api/cluster adds the committed ring's tokens, for a page that draws
 * the ring. JSON through jansson (Debian's libjansson). docs/operations.md
 * lists the metrics and the JSON. A follower on etcd serves only its own
 * process's metrics and answers /api/cluster and / with a 307 to the
 * leader's HTTP port (or a 503 saying why it cannot).
 */
#include "server/coord/coord.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/defs.h"
#include "common/ring.h"
#include "server/http.h"
#include "server/coord/web.h"
#include "server/prom.h"

#define C BRIM_PROM_COUNTER
#define G BRIM_PROM_GAUGE

/* Top-level CLUSTER_STATS names. */
static const struct brim_prom_metric cluster_table[] = {
    {"epoch", "brim_cluster_epoch", NULL, G, 0, "The committed epoch."},
    {"next_epoch", "brim_cluster_next_epoch", NULL, G, 0,
     "The number the next proposal takes."},
    {"pending", "brim_cluster_pending", NULL, G, 0,
     "1 while an epoch is proposed and not yet committed or aborted."},
    {"partitions", "brim_cluster_partitions", NULL, G, 0,
     "P, the cluster's partition count."},
    {"tokens", "brim_cluster_tokens_per_node", NULL, G, 0,
     "V, the ring tokens of a node of weight 1."},
    {"members", "brim_cluster_members_committed", NULL, G, 0,
     "Members of the committed map."},
    {"cap", "brim_cluster_cap_partitions", NULL, G, 0,
     "The cap of a node of weight 1 over the committed members."},
    {"within_cap", "brim_cluster_within_cap", NULL, G, 0,
     "1 when every committed member owns at most its cap."},
    {"max_mean_partitions", "brim_cluster_max_mean_partitions", NULL, G, 0,
     "The most partitions of a member over its weighted mean."},
    {"min_mean_partitions", "brim_cluster_min_mean_partitions", NULL, G, 0,
     "The fewest partitions of a member over its weighted mean."},
    {"max_mean_keys", "brim_cluster_max_mean_keys", NULL, G, 0,
     "The most keys of a member over its weighted mean."},
    {"keys", "brim_cluster_keys", NULL, G, 0,
     "Keys held by the committed members, from their heartbeats."},
    {"bytes", "brim_cluster_bytes", NULL, G, 0,
     "Bytes of items of every member, from their heartbeats."},
    {"displaced", "brim_cluster_displaced_partitions", NULL, G, 0,
     "Partitions whose owner is not their ring owner."},
};

/* CLUSTER_STATS "migration": the last change. */
static const struct brim_prom_metric migration_table[] = {
    {"active", "brim_cluster_migration_active", NULL, G, 0,
     "1 while the last change's partitions still stream."},
    {"waiting_ms", "brim_cluster_migration_waiting_seconds", NULL, G, 0.001,
     "How long a join or leave has waited for the last migration."},
    {"partitions_total", "brim_cluster_migration_partitions", NULL, G, 0,
     "Partitions the last change moved."},
    {"partitions_done", "brim_cluster_migration_partitions_done", NULL, G, 0,
     "Of them, those whose stream completed."},
    {"moved_arc", "brim_cluster_migration_partitions_by_reason",
     "reason=\"arc\"", G, 0,
     "Partitions the last change moved, by reason (arc or cap)."},
    {"moved_cap", "brim_cluster_migration_partitions_by_reason",
     "reason=\"cap\"", G, 0,
     "Partitions the last change moved, by reason (arc or cap)."},
    {"keys_moved_arc", "brim_cluster_migration_keys_moved", "reason=\"arc\"", G,
     0, "Keys migration stored since the last change, by reason (arc or cap)."},
    {"keys_moved_cap", "brim_cluster_migration_keys_moved", "reason=\"cap\"", G,
     0, "Keys migration stored since the last change, by reason (arc or cap)."},
    {"keys_skipped", "brim_cluster_migration_keys_skipped", NULL, G, 0,
     "Entries streamed since the last change that the receiver did not store: "
     "it held a newer write."},
    {"keys_at_commit", "brim_cluster_migration_keys_at_commit", NULL, G, 0,
     "Keys the members held when the last change committed."},
    {"ideal_keys", "brim_cluster_migration_ideal_keys", NULL, G, 0,
     "Keys the last change had to move at least."},
    {"churn", "brim_cluster_migration_churn", NULL, G, 0,
     "Keys the last change moved over its ideal."},
};

/* Per node, from CLUSTER_STATS "nodes" (label node="NAME"). */
static const struct brim_prom_metric node_table[] = {
    {"partitions", "brim_cluster_node_partitions", NULL, G, 0,
     "Partitions of the member in the committed map."},
    {"displaced", "brim_cluster_node_displaced_partitions", NULL, G, 0,
     "Of them, those whose ring owner is another member."},
    {"cap", "brim_cluster_node_cap_partitions", NULL, G, 0,
     "The member's cap (0: not in the committed map)."},
    {"load", "brim_cluster_node_load", NULL, G, 0,
     "The member's partitions over its weighted mean."},
    {"weight", "brim_cluster_node_weight", NULL, G, 0, "The member's weight."},
    {"keys", "brim_cluster_node_keys", NULL, G, 0,
     "Keys the member held at its last heartbeat."},
    {"bytes", "brim_cluster_node_bytes", NULL, G, 0,
     "Bytes of items the member held at its last heartbeat."},
    {"requests_per_sec", "brim_cluster_node_requests_per_second", NULL, G, 0,
     "Client requests per second at the member's last heartbeat."},
    {"last_heartbeat_ms_ago", "brim_cluster_node_heartbeat_age_seconds", NULL,
     G, 0.001, "Time since the member's last heartbeat."},
    {"migration_in", "brim_cluster_node_migration_partitions_in", NULL, G, 0,
     "Partitions still streaming in to the member."},
    {"migration_out", "brim_cluster_node_migration_partitions_out", NULL, G, 0,
     "Partitions the member still streams out."},
};

#undef C
#undef G

static const char *const member_states[] = {"joining", "up", "leaving", "dead"};

/* A msgpack string as a NUL-terminated copy into BUF (LEN bytes). */
static const char *
http_str(const msgpack_object *o, char *buf, size_t len)
{
    if (o == NULL || o->type != MSGPACK_OBJECT_STR) {
        snprintf(buf, len, "%s", "");
    } else {
        snprintf(buf, len, "%.*s", (int) o->via.str.size, o->via.str.ptr);
    }
    return buf;
}

/* The fewest keys of a committed member (cap > 0) over its weighted
 * mean, from the same "nodes" rows as max_mean_keys; 0 with no keys. */
static double
http_min_mean_keys(const msgpack_object *nodes, double keys_sum)
{
    const msgpack_object *n;
    double                wsum = 0, v, min = 0;
    uint32_t              i;
    int                   seen = 0;

    for (i = 0; i < nodes->via.array.size; i++) {
        n = &nodes->via.array.ptr[i];
        if (brim_prom_number(brim_prom_find(n, "cap")) > 0) {
            wsum += brim_prom_number(brim_prom_find(n, "weight"));
        }
    }
    for (i = 0; keys_sum > 0 && wsum > 0 && i < nodes->via.array.size; i++) {
        n = &nodes->via.array.ptr[i];
        if (brim_prom_number(brim_prom_find(n, "cap")) <= 0) {
            continue;
        }
        v = brim_prom_number(brim_prom_find(n, "keys"))
            / (keys_sum * brim_prom_number(brim_prom_find(n, "weight")) / wsum);
        min = !seen || v < min ? v : min;
        seen = 1;
    }
    return min;
}

/* Members by state, and per node its state and the node_table rows. */
static int
http_nodes(struct brim_buf *out, const msgpack_object *nodes)
{
    const msgpack_object *n;
    char                  name[BRIM_NAME_MAX + 1], state[16];
    char                  labels[160];
    uint64_t              count[BRIM_ARRAY_LEN(member_states)];
    uint32_t              i, k, s;
    int                   rc;

    memset(count, 0, sizeof(count));
    for (i = 0; i < nodes->via.array.size; i++) {
        http_str(brim_prom_find(&nodes->via.array.ptr[i], "state"), state,
                 sizeof(state));
        for (s = 0; s < BRIM_ARRAY_LEN(member_states); s++) {
            count[s] += strcmp(state, member_states[s]) == 0;
        }
    }
    rc = brim_prom_family(out, "brim_cluster_members", BRIM_PROM_GAUGE,
                          "Members the coordinator knows, by state.");
    for (s = 0; rc == 0 && s < BRIM_ARRAY_LEN(member_states); s++) {
        rc = brim_prom_u64(
            out, "brim_cluster_members",
            brim_prom_label(labels, sizeof(labels), "state", member_states[s]),
            count[s]);
    }
    if (rc == 0) {
        rc = brim_prom_family(out, "brim_cluster_node_state", BRIM_PROM_GAUGE,
                              "1 for the member's state, 0 for the others.");
    }
    for (i = 0; rc == 0 && i < nodes->via.array.size; i++) {
        n = &nodes->via.array.ptr[i];
        http_str(brim_prom_find(n, "name"), name, sizeof(name));
        http_str(brim_prom_find(n, "state"), state, sizeof(state));
        for (s = 0; rc == 0 && s < BRIM_ARRAY_LEN(member_states); s++) {
            brim_prom_label(labels, sizeof(labels), "node", name);
            snprintf(labels + strlen(labels), sizeof(labels) - strlen(labels),
                     ",state=\"%s\"", member_states[s]);
            rc = brim_prom_u64(out, "brim_cluster_node_state", labels,
                               strcmp(state, member_states[s]) == 0);
        }
    }
    /* One family at a time, every node's sample in it. */
    for (k = 0; rc == 0 && k < BRIM_ARRAY_LEN(node_table); k++) {
        rc = brim_prom_family(out, node_table[k].name, node_table[k].type,
                              node_table[k].help);
        for (i = 0; rc == 0 && i < nodes->via.array.size; i++) {
            n = &nodes->via.array.ptr[i];
            brim_prom_label(
                labels, sizeof(labels), "node",
                http_str(brim_prom_find(n, "name"), name, sizeof(name)));
            rc = brim_prom_f64(
                out, node_table[k].name, labels,
                brim_prom_number(brim_prom_find(n, node_table[k].stat))
                    * (node_table[k].scale != 0 ? node_table[k].scale : 1.0));
        }
    }
    return rc;
}

/* /metrics from the stats map MAP. */
static int
http_metrics_map(struct brim_buf *out, const msgpack_object *map)
{
    const msgpack_object *nodes = brim_prom_find(map, "nodes");
    int                   rc;

    rc =
        brim_prom_table(out, map, cluster_table, BRIM_ARRAY_LEN(cluster_table));
    if (rc == 0 && nodes != NULL && nodes->type == MSGPACK_OBJECT_ARRAY) {
        rc =
            brim_prom_family(out, "brim_cluster_min_mean_keys", BRIM_PROM_GAUGE,
                             "The fewest keys of a member over its weighted "
                             "mean.");
        rc |= brim_prom_f64(
            out, "brim_cluster_min_mean_keys", NULL,
            http_min_mean_keys(nodes,
                               brim_prom_number(brim_prom_find(map, "keys"))));
        if (rc == 0) {
            rc = http_nodes(out, nodes);
        }
    }
    if (rc == 0) {
        rc = brim_prom_table(out, brim_prom_find(map, "migration"),
                             migration_table, BRIM_ARRAY_LEN(migration_table));
    }
    return rc != 0 ? BRIM_ENOMEM : 0;
}

/* brim_prom_build_fn: CO's CLUSTER_STATS reply. */
static int
http_build(void *arg, struct brim_buf *frame)
{
    return brim_coord_stats_frame(arg, frame, 0);
}

/* True when CO (a follower) read the leader key within the last lease:
 * a leader named longer ago may have lost its lease since. */
static int
http_leader_fresh(const struct brim_coord *co)
{
    const struct brim_coord_etcd *e = co->etcd;

    return e != NULL && e->leader_seen_ms != 0 && co->leader_addr[0] != '\0'
        && uv_now(co->loop) - e->leader_seen_ms <= (uint64_t) e->lease_ttl_ms;
}

/* This process's place in the election: brim_coord_leader and
 * brim_coord_term. */
static int
http_role(struct brim_buf *out, const struct brim_coord *co)
{
    int64_t term = (int64_t) brim_coord_term(co);
    int     rc;

    if (!co->leading && http_leader_fresh(co)) {
        term = co->etcd->leader_term;
    }
    rc = brim_prom_family(out, "brim_coord_leader", BRIM_PROM_GAUGE,
                          "1 when this coordinator leads (always in file "
                          "mode), 0 when it follows.");
    rc |= brim_prom_u64(out, "brim_coord_leader", NULL, co->leading != 0);
    rc |= brim_prom_family(out, "brim_coord_term", BRIM_PROM_GAUGE,
                           "The term of the leader this coordinator knows "
                           "(its own while it leads): the etcd leader key's "
                           "create revision; 0 for none or in file mode.");
    rc |= brim_prom_u64(out, "brim_coord_term", NULL,
                        term > 0 ? (uint64_t) term : 0);
    return rc;
}

/* brim_prom_render_fn: this coordinator's role, the cluster's metrics
 * (on the leader only: a follower has no member's heartbeat, and its
 * copy of the map is the leader's, not a figure of its own), its
 * listener's AUTH counters, then the HTTP port's. */
static int
http_metrics_render(void *arg, const msgpack_object *map, struct brim_buf *out)
{
    struct brim_coord     *co = arg;
    struct brim_http_stats hs;
    int                    rc;

    rc = http_role(out, co);
    if (rc == 0 && co->leading) {
        rc = http_metrics_map(out, map);
    }
    if (rc == 0) {
        rc = brim_prom_table(out, brim_prom_find(map, "auth"),
                             brim_prom_auth_table, BRIM_PROM_AUTH_ROWS);
    }
    brim_http_get_stats(co->http, &hs);
    if (rc == 0) {
        rc = brim_prom_family(out, "brim_http_connections", BRIM_PROM_GAUGE,
                              "Open connections on the HTTP port.");
        rc |=
            brim_prom_u64(out, "brim_http_connections", NULL, hs.conns_current);
        rc |=
            brim_prom_family(out, "brim_http_requests_total", BRIM_PROM_COUNTER,
                             "HTTP requests answered by a route.");
        rc |= brim_prom_u64(out, "brim_http_requests_total", NULL, hs.requests);
    }
    return rc != 0 ? BRIM_ENOMEM : 0;
}

static int
http_metrics_route(void *arg, struct brim_http_reply *rep)
{
    rep->ctype = BRIM_PROM_CTYPE;
    return brim_prom_from_reply(rep->body, http_build, http_metrics_render,
                                arg);
}

/*
 * A follower's answer to PATH ("/api/cluster", "/"): 307 to the same
 * path on the leader's HTTP port, so that the page and the API work
 * from whichever coordinator is asked; 503 when no leader is known or
 * it has no HTTP port, with the reason as {"error": "..."} when AS_JSON,
 * else as text. Returns 0 or BRIM_ENOMEM.
 */
static int
http_follow(struct brim_coord *co, struct brim_http_reply *rep,
            const char *path, int as_json)
{
    char    why[BRIM_HTTP_LOCATION_MAX + 64];
    char   *text = NULL;
    json_t *j;
    int     rc;

    if (http_leader_fresh(co) && co->leader_http[0] != '\0') {
        snprintf(rep->location, sizeof(rep->location), "http://%s%s",
                 co->leader_http, path);
        rep->status = 307;
        rep->ctype = "text/plain; charset=utf-8";
        snprintf(why, sizeof(why), "not the leader: see %s\n", rep->location);
        return brim_buf_append(rep->body, why, strlen(why));
    }
    if (http_leader_fresh(co)) {
        snprintf(why, sizeof(why),
                 "not the leader, and the leader (%s) has no HTTP port "
                 "(--http-listen)",
                 co->leader_addr);
    } else {
        snprintf(why, sizeof(why),
                 "not the leader, and no leader is known: an election is "
                 "under way, or etcd cannot be read");
    }
    rep->status = 503;
    if (!as_json) {
        rep->ctype = "text/plain; charset=utf-8";
        strcat(why, "\n");
        return brim_buf_append(rep->body, why, strlen(why));
    }
    rep->ctype = "application/json";
    j = json_pack("{s:s}", "error", why);
    if (j != NULL) {
        text = json_dumps(j, JSON_COMPACT);
    }
    rc = text != NULL && brim_buf_append(rep->body, text, strlen(text)) == 0
            && brim_buf_append(rep->body, "\n", 1) == 0
        ? 0
        : BRIM_ENOMEM;
    free(text); /* jansson's, from malloc() */
    json_decref(j);
    return rc;
}

/* ---- /api/cluster ---- */

/* msgpack (our own reply: maps with string keys, numbers, strings,
 * booleans) as JSON, each value as brimctl stats --json prints it;
 * NULL when out of memory. */
static json_t *
http_json(const msgpack_object *o)
{
    json_t  *j, *v;
    char     text[24];
    uint32_t i;

    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (o->via.u64 <= (uint64_t) INT64_MAX) {
            return json_integer((json_int_t) o->via.u64);
        }
        snprintf(text, sizeof(text), "%" PRIu64, o->via.u64);
        return json_string(text);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return json_integer((json_int_t) o->via.i64);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        return json_real(o->via.f64);
    case MSGPACK_OBJECT_BOOLEAN:
        return json_boolean(o->via.boolean);
    case MSGPACK_OBJECT_STR:
        return json_stringn(o->via.str.ptr, o->via.str.size);
    case MSGPACK_OBJECT_ARRAY:
        j = json_array();
        for (i = 0; j != NULL && i < o->via.array.size; i++) {
            v = http_json(&o->via.array.ptr[i]);
            if (v == NULL || json_array_append_new(j, v) != 0) {
                json_decref(j);
                j = NULL;
            }
        }
        return j;
    case MSGPACK_OBJECT_MAP:
        j = json_object();
        for (i = 0; j != NULL && i < o->via.map.size; i++) {
            const msgpack_object_kv *kv = &o->via.map.ptr[i];

            v = kv->key.type == MSGPACK_OBJECT_STR ? http_json(&kv->val) : NULL;
            if (v == NULL
                || json_object_setn_new(j, kv->key.via.str.ptr,
                                        kv->key.via.str.size, v)
                    != 0)
            {
                json_decref(j);
                j = NULL;
            }
        }
        return j;
    default:
        return json_null();
    }
}

/*
 * The committed ring: {"tokens_per_node": V, "nodes": [{"name", "tokens":
 * [positions as fractions of 2^64, ascending]}]}; NULL when out of memory.
 */
static json_t *
http_ring(const struct brim_topo *t)
{
    struct brim_ring ring;
    json_t          *o, *nodes, *n, *toks;
    size_t           i, k;
    int              bad = 0;

    o = json_object();
    nodes = json_array();
    if (o == NULL || nodes == NULL) {
        json_decref(o);
        json_decref(nodes);
        return NULL;
    }
    bad |= json_object_set_new(o, "tokens_per_node",
                               json_integer(t->tokens_per_node));
    if (t->nmembers > 0 && brim_topo_ring(t, &ring, 1, NULL) == 0) {
        for (i = 0; !bad && i < ring.nnodes; i++) {
            n = json_object();
            toks = json_array();
            bad |= n == NULL || toks == NULL;
            for (k = 0; !bad && k < ring.ntokens; k++) {
                if (ring.tokens[k].node == i) {
                    bad |= json_array_append_new(
                        toks,
                        json_real((double) ring.tokens[k].pos
                                  / 18446744073709551616.0));
                }
            }
            bad |=
                json_object_set_new(n, "name", json_string(ring.nodes[i].name));
            bad |= json_object_set_new(n, "tokens", toks);
            bad |= json_array_append_new(nodes, n);
        }
        brim_ring_destroy(&ring);
    }
    bad |= json_object_set_new(o, "nodes", nodes);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* brim_prom_render_fn: the reply as JSON, plus the ring. */
static int
http_api_render(void *arg, const msgpack_object *map, struct brim_buf *out)
{
    struct brim_coord *co = arg;
    json_t            *j, *ring;
    char              *text = NULL;
    int                rc = BRIM_ENOMEM;

    j = http_json(map);
    ring = http_ring(&co->state.committed);
    if (j != NULL && ring != NULL) {
        /* jansson takes RING over, also when it fails. */
        rc = json_object_set_new(j, "ring", ring) == 0 ? 0 : BRIM_ENOMEM;
        ring = NULL;
        if (rc == 0) {
            text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));
        }
        rc = BRIM_ENOMEM;
    }
    if (text != NULL && brim_buf_append(out, text, strlen(text)) == 0
        && brim_buf_append(out, "\n", 1) == 0)
    {
        rc = 0;
    }
    free(text); /* jansson's, from malloc() */
    json_decref(ring);
    json_decref(j);
    return rc;
}

static int
http_api_route(void *arg, struct brim_http_reply *rep)
{
    struct brim_coord *co = arg;

    if (!co->leading) {
        return http_follow(co, rep, "/api/cluster", 1);
    }
    rep->ctype = "application/json";
    return brim_prom_from_reply(rep->body, http_build, http_api_render, arg);
}

/* The live web view (web.h): the page, built into the binary. A
 * follower sends the browser to the leader's page, whose fetches of
 * /api/cluster are then to its own origin (no CORS). */
static int
http_web_route(void *arg, struct brim_http_reply *rep)
{
    struct brim_coord           *co = arg;
    const struct brim_web_asset *a = brim_web_asset("/");

    if (!co->leading) {
        return http_follow(co, rep, "/", 0);
    }
    rep->ctype = a->content_type;
    return brim_buf_append(rep->body, (const char *) a->data, a->len);
}

static const struct brim_http_route coord_routes[] = {
    {"/metrics", http_metrics_route},
    {"/api/cluster", http_api_route},
    {"/", http_web_route},
    {NULL, NULL}};

int
brim_coord_http_start(struct brim_coord *co, char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_http_config cfg = {.max_conns = co->cfg.http_max_conns};

    return brim_http_start(&co->http, co->loop, co->cfg.http_listen, &cfg,
                           coord_routes, co, errbuf);
}
