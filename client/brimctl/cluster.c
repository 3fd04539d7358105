/*
 * client/brimctl/cluster.c - brimctl's cluster commands (--coordinator):
 * nodes, leave (also --wait), plan, and the cluster's stats, over the
 * typed calls of <brim/admin.h>. Their JSON is built here from those
 * structs, every field in the order the coordinator sends it, so that
 * --json prints the figures as sent and the aligned form is the same
 * text the cluster has always shown.
 */
#include "client/brimctl/ctl.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include <brim.h>
#include <brim/admin.h>

/* ---- JSON of the typed structs ---- */

/* V as JSON: an integer, or above 2^63-1 (jansson's integers are signed)
 * its exact decimal text, as node stats print it. */
static json_t *
cluster_u64(uint64_t v)
{
    char text[24];

    if (v <= (uint64_t) INT64_MAX) {
        return json_integer((json_int_t) v);
    }
    snprintf(text, sizeof(text), "%" PRIu64, v);
    return json_string(text);
}

/* A new JSON object; NULL (and *OOM set) when out of memory. */
static json_t *
cluster_obj(int *oom)
{
    json_t *o;

    o = json_object();
    if (o == NULL) {
        *oom = 1;
    }
    return o;
}

/* Set O[KEY] to V (taken over, also when O is NULL); a NULL O or V or a
 * failure sets *OOM. */
static void
cluster_put(json_t *o, const char *key, json_t *v, int *oom)
{
    if (o == NULL) {
        json_decref(v);
        *oom = 1;
    } else if (v == NULL || json_object_set_new(o, key, v) != 0) {
        *oom = 1;
    }
}

/* A weight in millionths as the coordinator sends it: a number, 1.0 for
 * 10^6. */
static json_t *
cluster_weight(uint32_t weight_ppm)
{
    return json_real((double) weight_ppm / 1e6);
}

/* One member of brim_members() as brimctl nodes shows it. */
static json_t *
cluster_member_json(const struct brim_member_info *m, int *oom)
{
    json_t *o;

    o = cluster_obj(oom);
    cluster_put(o, "name", json_string_nocheck(m->name), oom);
    cluster_put(o, "addr", json_string_nocheck(m->addr), oom);
    cluster_put(o, "state", json_string(brim_node_state_name(m->state)), oom);
    cluster_put(o, "weight", cluster_weight(m->weight_ppm), oom);
    cluster_put(o, "partitions", json_integer(m->partitions), oom);
    cluster_put(o, "last_heartbeat_ms_ago",
                json_integer(m->last_heartbeat_ms_ago), oom);
    return o;
}

/* One node row of the cluster's stats. */
static json_t *
cluster_node_json(const struct brim_cluster_node *n, int *oom)
{
    json_t *o;

    o = cluster_obj(oom);
    cluster_put(o, "name", json_string_nocheck(n->name), oom);
    cluster_put(o, "addr", json_string_nocheck(n->addr), oom);
    cluster_put(o, "state", json_string(brim_node_state_name(n->state)), oom);
    cluster_put(o, "weight", cluster_weight(n->weight_ppm), oom);
    cluster_put(o, "partitions", cluster_u64(n->partitions), oom);
    cluster_put(o, "displaced", cluster_u64(n->displaced), oom);
    cluster_put(o, "cap", cluster_u64(n->cap), oom);
    cluster_put(o, "load", json_real(n->load), oom);
    cluster_put(o, "keys", cluster_u64(n->keys), oom);
    cluster_put(o, "bytes", cluster_u64(n->bytes), oom);
    cluster_put(o, "requests_per_sec", cluster_u64(n->requests_per_sec), oom);
    cluster_put(o, "last_heartbeat_ms_ago",
                cluster_u64(n->last_heartbeat_ms_ago), oom);
    cluster_put(o, "migration_in", cluster_u64(n->migration_in), oom);
    cluster_put(o, "migration_out", cluster_u64(n->migration_out), oom);
    return o;
}

/* The last change's migration. */
static json_t *
cluster_migration_json(const struct brim_cluster_migration *m, int *oom)
{
    json_t *o;

    o = cluster_obj(oom);
    cluster_put(o, "active", json_boolean(m->active), oom);
    cluster_put(o, "waiting", json_string_nocheck(m->waiting), oom);
    cluster_put(o, "waiting_ms", cluster_u64(m->waiting_ms), oom);
    cluster_put(o, "epoch", cluster_u64(m->epoch), oom);
    cluster_put(o, "partitions_total", cluster_u64(m->partitions_total), oom);
    cluster_put(o, "partitions_done", cluster_u64(m->partitions_done), oom);
    cluster_put(o, "moved_arc", cluster_u64(m->moved_arc), oom);
    cluster_put(o, "moved_cap", cluster_u64(m->moved_cap), oom);
    cluster_put(o, "keys_moved", cluster_u64(m->keys_moved), oom);
    cluster_put(o, "keys_moved_arc", cluster_u64(m->keys_moved_arc), oom);
    cluster_put(o, "keys_moved_cap", cluster_u64(m->keys_moved_cap), oom);
    cluster_put(o, "keys_skipped", cluster_u64(m->keys_skipped), oom);
    cluster_put(o, "partitions_unfinished",
                cluster_u64(m->partitions_unfinished), oom);
    cluster_put(o, "keys_at_commit", cluster_u64(m->keys_at_commit), oom);
    cluster_put(o, "ideal_keys", json_real(m->ideal_keys), oom);
    cluster_put(o, "churn", json_real(m->churn), oom);
    cluster_put(o, "totals_lost", json_boolean(m->totals_lost), oom);
    return o;
}

/* The coordinator's AUTH counters. */
static json_t *
cluster_auth_json(const struct brim_cluster_auth *a, int *oom)
{
    json_t *o;

    o = cluster_obj(oom);
    cluster_put(o, "required", json_boolean(a->required), oom);
    cluster_put(o, "auth_ok", cluster_u64(a->auth_ok), oom);
    cluster_put(o, "auth_failures", cluster_u64(a->auth_failures), oom);
    cluster_put(o, "auth_rate_limited", cluster_u64(a->auth_rate_limited), oom);
    cluster_put(o, "auth_out_failures", cluster_u64(a->auth_out_failures), oom);
    return o;
}

/* The coordinator that answered. */
static json_t *
cluster_coord_json(const struct brim_cluster_coord *k, int *oom)
{
    json_t *o;

    o = cluster_obj(oom);
    cluster_put(o, "name", json_string_nocheck(k->name), oom);
    cluster_put(o, "addr", json_string_nocheck(k->addr), oom);
    cluster_put(o, "mode", json_string(brim_coord_mode_name(k->mode)), oom);
    cluster_put(o, "term", cluster_u64(k->term), oom);
    cluster_put(o, "leading", json_boolean(k->leading), oom);
    return o;
}

/*
 * The coordinator K as one line into BUF (LEN bytes): "c1 127.0.0.1:7401
 * (etcd leader, term 7)", "127.0.0.1:7400 (file mode)"; "" when it did
 * not say (an older coordinator).
 */
static void
cluster_coord_text(const struct brim_cluster_coord *k, char *buf, size_t len)
{
    if (k->mode == BRIM_COORD_MODE_UNKNOWN) {
        buf[0] = '\0';
    } else if (k->mode == BRIM_COORD_MODE_FILE) {
        snprintf(buf, len, "%s (file mode)", k->addr);
    } else if (k->leading) {
        snprintf(buf, len, "%s %s (etcd leader, term %" PRIu64 ")", k->name,
                 k->addr, k->term);
    } else {
        snprintf(buf, len, "%s %s (etcd, not leading)", k->name, k->addr);
    }
}

/* The cluster's stats as one JSON object, or NULL when out of memory. */
static json_t *
cluster_stats_json(const struct brim_cluster_stats *st)
{
    json_t *o, *nodes, *gone;
    size_t  i;
    int     oom = 0;

    o = json_object();
    nodes = json_array();
    if (o == NULL || nodes == NULL) {
        json_decref(o);
        json_decref(nodes);
        return NULL;
    }
    cluster_put(o, "epoch", cluster_u64(st->epoch), &oom);
    cluster_put(o, "eps", json_string_nocheck(st->eps), &oom);
    cluster_put(o, "partitions", cluster_u64(st->partitions), &oom);
    cluster_put(o, "tokens", cluster_u64(st->tokens), &oom);
    cluster_put(o, "members", cluster_u64(st->members), &oom);
    cluster_put(o, "pending", cluster_u64(st->pending), &oom);
    cluster_put(o, "next_epoch", cluster_u64(st->next_epoch), &oom);
    cluster_put(o, "cap", cluster_u64(st->cap), &oom);
    cluster_put(o, "within_cap", json_boolean(st->within_cap), &oom);
    cluster_put(o, "max_mean_partitions", json_real(st->max_mean_partitions),
                &oom);
    cluster_put(o, "min_mean_partitions", json_real(st->min_mean_partitions),
                &oom);
    cluster_put(o, "max_mean_keys", json_real(st->max_mean_keys), &oom);
    cluster_put(o, "keys", cluster_u64(st->keys), &oom);
    cluster_put(o, "bytes", cluster_u64(st->bytes), &oom);
    cluster_put(o, "requests_per_sec", cluster_u64(st->requests_per_sec), &oom);
    cluster_put(o, "displaced", cluster_u64(st->displaced), &oom);
    for (i = 0; i < st->nnodes; i++) {
        if (json_array_append_new(nodes, cluster_node_json(&st->nodes[i], &oom))
            != 0) {
            oom = 1;
        }
    }
    cluster_put(o, "nodes", nodes, &oom);
    gone = json_array();
    for (i = 0; gone != NULL && i < st->ndeparted; i++) {
        if (json_array_append_new(
                gone,
                json_pack("{s:s, s:s, s:s}", "name", st->departed[i].name,
                          "addr", st->departed[i].addr, "state",
                          brim_node_state_name(st->departed[i].state)))
            != 0)
        {
            oom = 1;
        }
    }
    cluster_put(o, "departed", gone, &oom);
    cluster_put(o, "migration", cluster_migration_json(&st->migration, &oom),
                &oom);
    cluster_put(o, "auth", cluster_auth_json(&st->auth, &oom), &oom);
    if (st->coordinator.mode != BRIM_COORD_MODE_UNKNOWN) {
        cluster_put(o, "coordinator",
                    cluster_coord_json(&st->coordinator, &oom), &oom);
    }
    if (oom) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* PLAN's answer as one JSON object, or NULL when out of memory. */
static json_t *
cluster_plan_json(const struct brim_plan *p)
{
    json_t *o;
    int     oom = 0;

    o = json_object();
    if (o == NULL) {
        return NULL;
    }
    cluster_put(o, "kind",
                json_string(p->kind == BRIM_PLAN_JOIN        ? "join"
                                : p->kind == BRIM_PLAN_LEAVE ? "leave"
                                                             : ""),
                &oom);
    cluster_put(o, "name", json_string_nocheck(p->name), &oom);
    cluster_put(o, "partitions_moved", cluster_u64(p->partitions_moved), &oom);
    cluster_put(o, "moved_arc", cluster_u64(p->moved_arc), &oom);
    cluster_put(o, "moved_cap", cluster_u64(p->moved_cap), &oom);
    cluster_put(o, "ideal", json_real(p->ideal), &oom);
    cluster_put(o, "churn", json_real(p->churn), &oom);
    cluster_put(o, "cap_before", cluster_u64(p->cap_before), &oom);
    cluster_put(o, "cap_after", cluster_u64(p->cap_after), &oom);
    cluster_put(o, "keys_estimate", cluster_u64(p->keys_estimate), &oom);
    if (oom) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---- nodes ---- */

/*
 * nodes' first line, "coordinator: ...", from the cluster's stats (the
 * coordinator that answered: the leader, as MEMBERS is only answered by
 * it). Nothing when it does not say; a failed call is named on stderr
 * and does not change the exit status (the member list was printed).
 */
static void
cluster_nodes_coord(struct brim_ctl *ctl)
{
    struct brim_cluster_stats *st;
    char                       line[256];
    int                        rc;

    rc = brim_cluster_stats(ctl->client, &st);
    if (rc != 0) {
        fprintf(stderr,
                "brimctl: nodes: could not ask which coordinator leads: "
                "%s (%s)\n",
                brim_strerror(rc), brim_errmsg(ctl->client));
        return;
    }
    cluster_coord_text(&st->coordinator, line, sizeof(line));
    brim_cluster_stats_free(st);
    if (line[0] != '\0') {
        printf("coordinator: %s\n", line);
    }
}

int
brim_ctl_nodes(struct brim_ctl *ctl)
{
    struct brim_member_info *m;
    json_t                  *out;
    size_t                   i, n;
    int                      rc, oom = 0;

    rc = brim_ctl_need_coord(ctl, "nodes");
    if (rc != 0) {
        return rc;
    }
    rc = brim_members(ctl->client, &m, &n);
    if (rc != 0) {
        return brim_ctl_fail(ctl, "nodes", rc);
    }
    out = json_array();
    for (i = 0; out != NULL && i < n; i++) {
        if (json_array_append_new(out, cluster_member_json(&m[i], &oom)) != 0) {
            oom = 1;
        }
    }
    brim_members_free(m);
    if (out == NULL || oom) {
        json_decref(out);
        fprintf(stderr, "brimctl: nodes: out of memory\n");
        return BRIM_CTL_EXIT_NO;
    }
    rc = BRIM_CTL_EXIT_OK;
    if (ctl->json) {
        rc = brim_ctl_print_json(out, 0); /* the array, as it always was */
    } else {
        cluster_nodes_coord(ctl);
        if (json_array_size(out) == 0) {
            printf("no nodes\n");
        } else {
            brim_ctl_print_table(out, "");
        }
    }
    json_decref(out);
    return rc;
}

/* ---- leave ---- */

/* Where the leave of one node stands, from the cluster's stats. */
struct cluster_leave_state {
    int      listed;      /* the node is among the nodes */
    char     state[16];   /* its state ("leaving") */
    int      active;      /* migration.active */
    uint64_t done;        /* migration.partitions_done */
    uint64_t total;       /* migration.partitions_total */
    uint64_t keys;        /* migration.keys_moved */
    uint64_t unfinished;  /* migration.partitions_unfinished */
    int      totals_lost; /* migration.totals_lost: keys counts only
                           * since the coordinator started */
    uint64_t epoch;       /* migration.epoch: the change it counts */
    int      departed;    /* the node is among the departed: the last
                           * change removed it (or a death during its
                           * leave kept it there, still streaming) */
    char     coord[BRIM_ADMIN_ADDR_MAX + 24]; /* who answered, and term */
};

/* Read the leave of NAME out of ST into *LS. */
static void
cluster_leave_state(const struct brim_cluster_stats *st, const char *name,
                    struct cluster_leave_state *ls)
{
    size_t i;

    memset(ls, 0, sizeof(*ls));
    for (i = 0; i < st->nnodes; i++) {
        if (strcmp(st->nodes[i].name, name) == 0) {
            snprintf(ls->state, sizeof(ls->state), "%s",
                     brim_node_state_name(st->nodes[i].state));
            ls->listed = 1;
        }
    }
    for (i = 0; i < st->ndeparted; i++) {
        ls->departed |= strcmp(st->departed[i].name, name) == 0;
    }
    ls->active = st->migration.active;
    ls->done = st->migration.partitions_done;
    ls->total = st->migration.partitions_total;
    ls->keys = st->migration.keys_moved;
    ls->unfinished = st->migration.partitions_unfinished;
    ls->totals_lost = st->migration.totals_lost;
    ls->epoch = st->migration.epoch;
    snprintf(ls->coord, sizeof(ls->coord), "%s %" PRIu64, st->coordinator.addr,
             st->coordinator.term);
}

/* LS's migration in words, into BUF (LEN bytes): "migration 12/256
 * partitions", or, when the coordinator that answers did not commit the
 * change (it restarted or took over during it, so it has no count of
 * partitions), what it knows. */
static const char *
cluster_leave_migration(const struct cluster_leave_state *ls, char *buf,
                        size_t len)
{
    if (ls->coord[0] == '\0') {
        snprintf(buf, len, "migration not known yet");
    } else if (ls->total > 0) {
        snprintf(buf, len, "migration %" PRIu64 "/%" PRIu64 " partitions",
                 ls->done, ls->total);
    } else if (!ls->totals_lost) {
        /* The last member's leave with --force: its partitions go to
         * no one. */
        snprintf(buf, len, "no partition to move");
    } else {
        snprintf(buf, len,
                 "migration %s (its partitions are not known to a "
                 "coordinator that restarted or took over after the commit)",
                 ls->active ? "active" : "idle");
    }
    return buf;
}

/* LS's keys moved in words, into BUF: "N keys moved", or, from a
 * coordinator that started after the commit, what that N counts (a
 * tester read 0 keys moved for a leaver that handed over 30,310). */
static const char *
cluster_leave_keys(const struct cluster_leave_state *ls, char *buf, size_t len)
{
    snprintf(buf, len, "%" PRIu64 " keys moved%s", ls->keys,
             ls->totals_lost ? " since the coordinator started (those "
                               "streamed before it are not counted)"
                             : "");
    return buf;
}

/*
 * leave --wait: poll the cluster's stats every 200 ms, drawing the
 * migration's progress, until NAME is no longer listed and no migration
 * runs; exit 2 after --timeout seconds. A failed poll is tried again
 * until then.
 */
static int
cluster_leave_wait(struct brim_ctl *ctl, const char *name)
{
    struct brim_ctl_progress   prog;
    struct cluster_leave_state ls, gone;
    struct brim_cluster_stats *st;
    double                     limit, left;
    uint64_t                   epoch;
    char                       was[sizeof(ls.coord)], mig[128], keys[128];
    int                        rc, took_over = 0, have_gone = 0;

    limit = ctl->timeout_s > 0 ? ctl->timeout_s : BRIM_CTL_DEFAULT_TIMEOUT_S;
    brim_ctl_progress_init(&prog, ctl->progress, 1);
    memset(&ls, 0, sizeof(ls));
    ls.listed = 1; /* until a poll says otherwise */
    snprintf(ls.state, sizeof(ls.state), "?");
    for (;;) {
        rc = brim_cluster_stats(ctl->client, &st);
        if (rc == 0) {
            snprintf(was, sizeof(was), "%s", ls.coord);
            cluster_leave_state(st, name, &ls);
            brim_cluster_stats_free(st);
            if (was[0] != '\0' && strcmp(was, ls.coord) != 0) {
                took_over = 1; /* another coordinator, or a new term */
            }
        }
        if (rc == 0 && !ls.listed) {
            /* The figures of the change that removed NAME: the first
             * epoch it is gone from. A later change (a join queued
             * behind the leave) commits only once that migration is
             * over, and its figures are not the leave's (a tester saw
             * the next join's partitions and keys printed). */
            if (!have_gone || ls.epoch == gone.epoch || ls.departed) {
                gone = ls; /* a death's epoch during the leave keeps
                            * it departed, and counts its streams on */
                have_gone = 1;
            }
            if (!ls.active || ls.epoch > gone.epoch) {
                break;
            }
        }
        if (rc != 0) {
            took_over = 1; /* perhaps: the next answer tells */
        } else if (took_over && ls.listed && strcmp(ls.state, "up") == 0) {
            /* A coordinator took over and knows NAME as an ordinary
             * member: the leave was accepted but not yet proposed when
             * the old one went, so it was not kept. The operator asked
             * for it: ask again. */
            took_over = 0;
            rc = brim_leave(ctl->client, name, ctl->force, &epoch);
            brim_ctl_progress_clear(&prog);
            if (rc != 0) {
                return brim_ctl_fail(ctl, "leave (asked again)", rc);
            }
            fprintf(stderr,
                    "brimctl: leave %s: the coordinator that took over did "
                    "not have this leave; asked again (epoch %" PRIu64 ")\n",
                    name, epoch);
        }
        brim_ctl_progress_draw(
            &prog, ls.total > 0 ? (double) ls.done / (double) ls.total : -1, 0,
            "leave %s: %s, %s, %s, %.0f s%s%s", name,
            ls.listed ? ls.state : "gone",
            cluster_leave_migration(&ls, mig, sizeof(mig)),
            cluster_leave_keys(&ls, keys, sizeof(keys)),
            brim_ctl_progress_elapsed(&prog),
            rc != 0 ? "; this poll failed: " : "",
            rc != 0 ? brim_strerror(rc) : "");
        left = limit - brim_ctl_progress_elapsed(&prog);
        if (left <= 0) {
            brim_ctl_progress_clear(&prog);
            fprintf(stderr,
                    "brimctl: leave %s: not done after %g s: %s%s, "
                    "%s %s%s%s\n",
                    name, limit,
                    ls.listed ? "still listed, state " : "not listed",
                    ls.listed ? ls.state : "",
                    ls.total > 0 ? (ls.active ? "active" : "idle") : "",
                    cluster_leave_migration(&ls, mig, sizeof(mig)),
                    rc != 0 ? "; last poll: " : "",
                    rc != 0 ? brim_strerror(rc) : "");
            return BRIM_CTL_EXIT_CONN;
        }
        brim_ctl_sleep(left < 0.2 ? left : 0.2);
    }
    ls = gone;
    if (ls.unfinished > 0) {
        /* Not a hand-over: the node stopped (killed, cut off) first. */
        brim_ctl_progress_clear(&prog);
        fprintf(stderr,
                "brimctl: leave %s: %" PRIu64 " of %" PRIu64
                " partitions ended before their stream did (the node "
                "stopped before handing them over): the keys it had not "
                "sent are lost\n",
                name, ls.unfinished, ls.total);
        return BRIM_CTL_EXIT_NO;
    }
    brim_ctl_progress_draw(&prog, 1, 1, "leave %s: done", name);
    if (ls.active) {
        /* The last figures read of the leave's epoch were taken while
         * it ran; the next change began before a poll saw it end. */
        printf("%s: left the cluster in %.1f s (a later change, epoch "
               "after %" PRIu64 ", began before this leave's last figures "
               "were read: at the last read, %s, %s)\n",
               name, brim_ctl_progress_elapsed(&prog), ls.epoch,
               cluster_leave_migration(&ls, mig, sizeof(mig)),
               cluster_leave_keys(&ls, keys, sizeof(keys)));
        return BRIM_CTL_EXIT_OK;
    }
    printf("%s: left the cluster in %.1f s (%s, %s)\n", name,
           brim_ctl_progress_elapsed(&prog),
           cluster_leave_migration(&ls, mig, sizeof(mig)),
           cluster_leave_keys(&ls, keys, sizeof(keys)));
    return BRIM_CTL_EXIT_OK;
}

/*
 * True (and the coordinator's words printed) when RC is its refusal to
 * leave, or plan the leave of, the last member: not an access problem,
 * though it comes as DENIED, so no hint about secrets (a tester saw
 * `plan leave` of the last node blamed on the secret).
 */
static int
cluster_last_member(const struct brim_ctl *ctl, int rc)
{
    if (rc != BRIM_EDENIED
        || strstr(brim_errmsg(ctl->client), "last member") == NULL)
    {
        return 0;
    }
    fprintf(stderr, "brimctl: %s\n", brim_errmsg(ctl->client));
    return 1;
}

int
brim_ctl_leave(struct brim_ctl *ctl)
{
    uint64_t epoch;
    char     what[128];
    int      rc;

    rc = brim_ctl_need_coord(ctl, "leave");
    if (rc != 0) {
        return rc;
    }
    if (!ctl->wait && (ctl->timeout_s > 0 || ctl->progress)) {
        fprintf(stderr,
                "brimctl: leave: --timeout and --progress are for "
                "--wait\n");
        return BRIM_CTL_EXIT_USAGE;
    }
    snprintf(what, sizeof(what), "leave %.64s", ctl->argv[0]);
    rc = brim_leave(ctl->client, ctl->argv[0], ctl->force, &epoch);
    if (cluster_last_member(ctl, rc)) {
        return BRIM_CTL_EXIT_NO; /* its message names --force */
    }
    if (rc != 0) {
        return brim_ctl_fail(ctl, what, rc);
    }
    printf("%s: leaving at epoch %" PRIu64 "\n", ctl->argv[0], epoch);
    if (!ctl->wait) {
        return BRIM_CTL_EXIT_OK;
    }
    fflush(stdout);
    return cluster_leave_wait(ctl, ctl->argv[0]);
}

/* ---- plan ---- */

int
brim_ctl_plan(struct brim_ctl *ctl)
{
    struct brim_plan plan;
    json_t          *rep;
    char             what[128];
    int              kind, rc;

    rc = brim_ctl_need_coord(ctl, "plan");
    if (rc != 0) {
        return rc;
    }
    if (strcmp(ctl->argv[0], "join") == 0) {
        kind = BRIM_PLAN_JOIN;
    } else if (strcmp(ctl->argv[0], "leave") == 0) {
        kind = BRIM_PLAN_LEAVE;
        if (ctl->weight_ppm != 0) {
            fprintf(stderr, "brimctl: plan leave: --weight is for join\n");
            return BRIM_CTL_EXIT_USAGE;
        }
    } else {
        fprintf(stderr, "brimctl: plan: \"%s\": want join or leave\n",
                ctl->argv[0]);
        return BRIM_CTL_EXIT_USAGE;
    }
    snprintf(what, sizeof(what), "plan %s %.64s", ctl->argv[0], ctl->argv[1]);
    rc = brim_plan(ctl->client, kind, ctl->argv[1], ctl->weight_ppm, &plan);
    if (cluster_last_member(ctl, rc)) {
        return BRIM_CTL_EXIT_NO;
    }
    if (rc != 0) {
        return brim_ctl_fail(ctl, what, rc);
    }
    rep = cluster_plan_json(&plan);
    if (ctl->json || rep == NULL) {
        rc = brim_ctl_print_json(rep, 0);
    } else {
        brim_ctl_print_obj(rep, "");
    }
    json_decref(rep);
    return rc;
}

/* ---- stats ---- */

/*
 * The migration M as one line into BUF: state, partitions done/total (by
 * arc and by cap), keys moved, and the churn (keys streamed over the
 * ideal: what the change had to move at least); then the partitions that
 * ended unfinished, if any.
 */
static void
cluster_migration_text(const struct brim_cluster_migration *m, char *buf,
                       size_t len)
{
    if (m->totals_lost) {
        /* The coordinator started after the commit: its totals were the
         * old process's; the keys it heard from the nodes are counted. */
        snprintf(buf, len,
                 "%s, partitions moved unknown (this coordinator started "
                 "after epoch %" PRIu64 "'s commit; brimctl migrations "
                 "asks the senders), keys moved since it started %" PRIu64,
                 m->active ? "active" : "idle", m->epoch, m->keys_moved);
        return;
    }
    snprintf(buf, len,
             "%s, partitions %" PRIu64 "/%" PRIu64 " (arc %" PRIu64
             ", cap %" PRIu64 "), keys moved %" PRIu64 " (arc %" PRIu64
             ", cap %" PRIu64 "), churn %.2f of ideal",
             m->active ? "active" : "idle", m->partitions_done,
             m->partitions_total, m->moved_arc, m->moved_cap, m->keys_moved,
             m->keys_moved_arc, m->keys_moved_cap, m->churn);
    if (m->keys_skipped > 0 && strlen(buf) < len) {
        /* Streamed, but the receiver held a newer write: not counted. */
        snprintf(buf + strlen(buf), len - strlen(buf),
                 "; %" PRIu64 " streamed keys skipped (newer here)",
                 m->keys_skipped);
    }
    if (m->partitions_unfinished > 0 && strlen(buf) < len) {
        /* Ended before their stream did: what was not sent is lost. */
        snprintf(buf + strlen(buf), len - strlen(buf),
                 "; %" PRIu64 " partitions unfinished (their source died "
                 "or left first: the keys it had not sent are lost)",
                 m->partitions_unfinished);
    }
}

int
brim_ctl_cluster_stats(struct brim_ctl *ctl, int compact)
{
    struct brim_cluster_stats *st;
    json_t                    *rep;
    char                       line[512], waiting[320], coord[256];
    int                        rc;

    rc = brim_cluster_stats(ctl->client, &st);
    if (rc != 0) {
        return brim_ctl_fail(ctl, "stats", rc);
    }
    cluster_coord_text(&st->coordinator, coord, sizeof(coord));
    rep = cluster_stats_json(st);
    if (rep != NULL && st->migration.active) {
        /* The streams in flight, from the nodes themselves (issue 13):
         * asked only while a migration runs, so an idle cluster's stats
         * cost one request. */
        json_t *errs = json_array(), *streams = NULL;

        if (errs != NULL) {
            streams = brim_ctl_streams_json(ctl, st, errs);
        }
        if (streams != NULL && !ctl->json) {
            size_t  i;
            json_t *row;

            json_array_foreach(streams, i, row)
            { /* the table has the names; --json keeps both */
                json_object_del(row, "source_addr");
                json_object_del(row, "destination_addr");
            }
        }
        if (streams != NULL) {
            json_object_set_new(rep, "streams", streams);
        }
        if (json_array_size(errs) > 0) {
            json_object_set(rep, "streams_unreachable", errs);
        }
        json_decref(errs);
    }
    if (rep != NULL && !ctl->json) {
        /* The migration as one line, in its place in the table, and a
         * join or leave held back: why, and for how long. */
        cluster_migration_text(&st->migration, line, sizeof(line));
        if (st->migration.waiting[0] != '\0') {
            snprintf(waiting, sizeof(waiting), "%.1f s: %s",
                     (double) st->migration.waiting_ms / 1000.0,
                     st->migration.waiting);
            json_object_set_new(rep, "change_waiting", json_string(waiting));
        }
        json_object_set_new(rep, "migration", json_string(line));
        json_object_del(rep, "coordinator"); /* the first line instead */
    }
    brim_cluster_stats_free(st);
    if (ctl->json || rep == NULL) {
        rc = brim_ctl_print_json(rep, compact);
    } else {
        if (coord[0] != '\0') {
            printf("coordinator: %s\n", coord); /* as nodes prints it */
        }
        brim_ctl_print_obj(rep, "");
    }
    json_decref(rep);
    return rc;
}
