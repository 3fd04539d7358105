/*
 * client/brimctl/migrations.c - `brimctl migrations`: the streams of a
 * membership change, per sender and receiver, with bytes and keys sent,
 * rate and ETA, and the coordinator's reason when a change waits (issue
 * 13). The coordinator's CLUSTER_STATS gives the members, their addresses
 * and the change's summary; each member's STATS section "migration" gives
 * its "stream_to:ADDR" maps (server/node/stats.c), asked of the node
 * directly with the same secret and role as the coordinator. The last
 * change's departed nodes are asked too: a leaver is no longer a member
 * while it streams what it held, and it exits once that is done.
 */
#include "client/brimctl/ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <brim.h>
#include <brim/admin.h>

/* The prefix of a stream's section in a node's STATS. */
#define MIG_SECTION "stream_to:"

/* One stream as a node's STATS gives it. */
struct mig_stream {
    char     dest[BRIM_ADMIN_ADDR_MAX + 1];
    uint64_t partitions, done, dropped, keys_sent, bytes_sent, keys_left;
    uint64_t elapsed_ms;
    uint64_t epoch; /* of the latest change that queued partitions to it */
};

/* What one node's STATS callback collects. */
struct mig_node {
    struct mig_stream s[64];
    size_t            n;
};

static int
mig_stats_cb(const struct brim_stat *st, void *arg)
{
    struct mig_node   *mn = arg;
    struct mig_stream *s;
    const char        *dest;
    uint64_t          *field = NULL;

    if (st->section == NULL
        || strncmp(st->section, MIG_SECTION, strlen(MIG_SECTION)) != 0
        || st->kind != BRIM_STAT_U64)
    {
        return 0;
    }
    dest = st->section + strlen(MIG_SECTION);
    if (mn->n == 0 || strcmp(mn->s[mn->n - 1].dest, dest) != 0) {
        if (mn->n == sizeof(mn->s) / sizeof(mn->s[0])) {
            return 0; /* more receivers than a row each: the first 64 */
        }
        s = &mn->s[mn->n++];
        memset(s, 0, sizeof(*s));
        snprintf(s->dest, sizeof(s->dest), "%s", dest);
    }
    s = &mn->s[mn->n - 1];
    if (strcmp(st->name, "partitions") == 0) {
        field = &s->partitions;
    } else if (strcmp(st->name, "done") == 0) {
        field = &s->done;
    } else if (strcmp(st->name, "dropped") == 0) {
        field = &s->dropped;
    } else if (strcmp(st->name, "keys_sent") == 0) {
        field = &s->keys_sent;
    } else if (strcmp(st->name, "bytes_sent") == 0) {
        field = &s->bytes_sent;
    } else if (strcmp(st->name, "keys_left") == 0) {
        field = &s->keys_left;
    } else if (strcmp(st->name, "elapsed_ms") == 0) {
        field = &s->elapsed_ms;
    } else if (strcmp(st->name, "epoch") == 0) {
        field = &s->epoch;
    }
    if (field != NULL) {
        *field = st->u64;
    }
    return 0;
}

/* The member name of ADDR in ST (or of a departed node), or ADDR. */
static const char *
mig_name(const struct brim_cluster_stats *st, const char *addr)
{
    size_t i;

    for (i = 0; i < st->nnodes; i++) {
        if (strcmp(st->nodes[i].addr, addr) == 0) {
            return st->nodes[i].name;
        }
    }
    for (i = 0; i < st->ndeparted; i++) {
        if (strcmp(st->departed[i].addr, addr) == 0) {
            return st->departed[i].name;
        }
    }
    return addr;
}

/* Ask node ADDR for its streams into *MN, connecting as the coordinator
 * connection did. Returns 0 or a libbrim error (ERR says why). */
static int
mig_ask_node(struct brim_ctl *ctl, const char *addr, struct mig_node *mn,
             char err[BRIM_ERRBUF_LEN])
{
    struct brim_opts    opts;
    struct brim_client *c;
    int                 rc;

    memset(&opts, 0, sizeof(opts));
    opts.server_addr = addr;
    opts.connect_timeout_ms = ctl->timeout_ms;
    opts.request_timeout_ms = ctl->timeout_ms;
    opts.admin = ctl->admin;
    opts.secret_file =
        ctl->secret_file != NULL ? ctl->secret_file : ctl->client_secret_file;
    rc = brim_connect(&opts, &c, err);
    if (rc != 0) {
        return rc;
    }
    rc = brim_stats(c, "migration", mig_stats_cb, mn);
    if (rc != 0) {
        snprintf(err, BRIM_ERRBUF_LEN, "%s", brim_errmsg(c));
    }
    brim_close(c);
    return rc;
}

/* True when S is a finished stream of a change before the cluster's last
 * (a node keeps its last streams out until its next change sends it
 * some: after a leave, the other members' rows are those of the join
 * before it). A node older than the epoch field (0) is always shown. */
static int
mig_stale(const struct brim_cluster_stats *st, const struct mig_stream *s)
{
    return s->epoch != 0 && s->epoch < st->migration.epoch
        && s->done + s->dropped >= s->partitions;
}

/* One stream's row: names, counts, the rate over its elapsed time and the
 * ETA at that rate (null while nothing was sent). NULL when out of memory. */
static json_t *
mig_row(const struct brim_cluster_stats *st, const struct brim_cluster_node *n,
        const struct mig_stream *s)
{
    double  secs = (double) s->elapsed_ms / 1e3;
    double  rate = secs > 0 ? (double) s->bytes_sent / secs : 0;
    double  keys_rate = secs > 0 ? (double) s->keys_sent / secs : 0;
    int     streaming = s->done + s->dropped < s->partitions;
    json_t *eta;

    eta = !streaming        ? json_real(0)
        : keys_rate > 0     ? json_real((double) s->keys_left / keys_rate)
        : s->keys_left == 0 ? json_real(0)
                            : json_null();
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:I, "
                     "s:o, s:f, s:I, s:s, s:s}",
                     "source", n->name, "destination", mig_name(st, s->dest),
                     "state", streaming ? "streaming" : "done", "partitions",
                     (json_int_t) s->partitions, "done", (json_int_t) s->done,
                     "dropped", (json_int_t) s->dropped, "keys_sent",
                     (json_int_t) s->keys_sent, "bytes_sent",
                     (json_int_t) s->bytes_sent, "mb_per_s", rate / 1e6,
                     "keys_left", (json_int_t) s->keys_left, "eta_s", eta,
                     "elapsed_s", secs, "epoch", (json_int_t) s->epoch,
                     "source_addr", n->addr, "destination_addr", s->dest);
}

/* The rows' own sum (doc "rows"): the senders' counts as asked just now,
 * where the summary is the coordinator's, from the nodes' last heartbeats
 * (up to one heartbeat behind). NULL when out of memory. */
static json_t *
mig_rows_total(const json_t *streams)
{
    const json_t *e;
    size_t        i;
    json_int_t    parts = 0, done = 0, left = 0;

    json_array_foreach(streams, i, e)
    {
        parts += json_integer_value(json_object_get(e, "partitions"));
        done += json_integer_value(json_object_get(e, "done"))
            + json_integer_value(json_object_get(e, "dropped"));
        left += json_integer_value(json_object_get(e, "keys_left"));
    }
    return json_pack("{s:I, s:I, s:I}", "partitions", parts, "done", done,
                     "keys_left", left);
}

/* Print DOC as text: the change, the wait, the streams, the failures. */
static void
mig_print(const json_t *doc)
{
    const json_t *streams = json_object_get(doc, "streams");
    const json_t *errs = json_object_get(doc, "errors");
    const json_t *e;
    const char   *waiting;
    size_t        i;

    json_int_t unfinished =
        json_integer_value(json_object_get(doc, "partitions_unfinished"));

    printf("epoch %lld: %s",
           (long long) json_integer_value(json_object_get(doc, "epoch")),
           json_is_true(json_object_get(doc, "active")) ? "migration active"
                                                        : "idle");
    if (json_is_true(json_object_get(doc, "totals_lost"))) {
        /* A tester read "0/0 done" here as done while streams ran. */
        printf(", partitions moved unknown (this coordinator started after "
               "the commit; the rows below are the senders' own)");
    } else {
        printf(", partitions %lld/%lld done",
               (long long) json_integer_value(
                   json_object_get(doc, "partitions_done")),
               (long long) json_integer_value(
                   json_object_get(doc, "partitions_total")));
    }
    if (unfinished > 0) {
        /* Ended before their stream did: the source died or left first,
         * and what it had not sent is lost (a cache's loss, counted). */
        printf(" (%lld unfinished: their source died or left first)",
               (long long) unfinished);
    }
    printf("\n");
    waiting = json_string_value(json_object_get(doc, "waiting"));
    if (waiting != NULL && waiting[0] != '\0') {
        printf("a change waits (%.1f s): %s\n",
               (double) json_integer_value(json_object_get(doc, "waiting_ms"))
                   / 1e3,
               waiting);
    }
    json_array_foreach(streams, i, e)
    {
        json_object_del((json_t *) e, "source_addr"); /* --json has them */
        json_object_del((json_t *) e, "destination_addr");
    }
    if (json_array_size(streams) == 0) {
        printf("no stream: no node has streamed partitions of epoch %lld "
               "out (after a leave, the leaver's rows go when it exits)\n",
               (long long) json_integer_value(json_object_get(doc, "epoch")));
    } else {
        const json_t *rows = json_object_get(doc, "rows");

        brim_ctl_print_table(streams, "");
        printf(
            "rows: partitions %lld/%lld done, %lld keys left, as the "
            "senders count them now (the summary above the table is the "
            "coordinator's, from the nodes' last heartbeats, and can "
            "trail them)\n",
            (long long) json_integer_value(json_object_get(rows, "done")),
            (long long) json_integer_value(json_object_get(rows, "partitions")),
            (long long) json_integer_value(json_object_get(rows, "keys_left")));
    }
    json_array_foreach(errs, i, e)
    {
        if (json_is_true(json_object_get(e, "departed"))) {
            printf("departed %s not asked (%s): it exits once its streams "
                   "end; if it was killed instead, the partitions it had not "
                   "sent show as unfinished above once its receivers know\n",
                   json_string_value(json_object_get(e, "node")),
                   json_string_value(json_object_get(e, "error")));
            continue;
        }
        fprintf(stderr, "brimctl: migrations: %s: %s\n",
                json_string_value(json_object_get(e, "node")),
                json_string_value(json_object_get(e, "error")));
    }
}

json_t *
brim_ctl_streams_json(struct brim_ctl *ctl, const struct brim_cluster_stats *st,
                      json_t *errs)
{
    struct mig_node                *mn;
    const struct brim_cluster_node *n;
    json_t                         *streams;
    char                            err[BRIM_ERRBUF_LEN];
    size_t                          i, k;
    int                             rc, oom, gone;

    mn = malloc(sizeof(*mn));
    streams = json_array();
    oom = mn == NULL || streams == NULL;
    for (i = 0; !oom && i < st->nnodes + st->ndeparted; i++) {
        gone = i >= st->nnodes;
        n = gone ? &st->departed[i - st->nnodes] : &st->nodes[i];
        if (n->state == BRIM_NODE_DEAD || n->state == BRIM_NODE_LEFT) {
            continue; /* dead, or a leaver done: it sends nothing */
        }
        mn->n = 0;
        err[0] = '\0';
        rc = mig_ask_node(ctl, n->addr, mn, err);
        if (rc != 0 && gone) {
            /* It exits once its streams end: not an error, but said (a
             * killed leaver looks the same, and the summary's unfinished
             * count tells them apart once its receivers know). */
            oom |=
                json_array_append_new(
                    errs,
                    json_pack("{s:s, s:s, s:b}", "node", n->name, "error",
                              err[0] ? err : brim_strerror(rc), "departed", 1))
                != 0;
            continue;
        }
        if (rc != 0) {
            oom |= json_array_append_new(
                       errs,
                       json_pack("{s:s, s:s}", "node", n->name, "error",
                                 err[0] ? err : brim_strerror(rc)))
                != 0;
            continue;
        }
        for (k = 0; !oom && k < mn->n; k++) {
            if (mig_stale(st, &mn->s[k])) {
                continue;
            }
            oom |=
                json_array_append_new(streams, mig_row(st, n, &mn->s[k])) != 0;
        }
    }
    free(mn);
    if (oom) {
        json_decref(streams);
        return NULL;
    }
    return streams;
}

int
brim_ctl_migrations(struct brim_ctl *ctl)
{
    struct brim_cluster_stats *st;
    json_t                    *doc = NULL, *streams, *errs, *e;
    size_t                     i;
    int                        rc;

    rc = brim_ctl_need_coord(ctl, "migrations");
    if (rc != 0) {
        return rc;
    }
    rc = brim_cluster_stats(ctl->client, &st);
    if (rc != 0) {
        return brim_ctl_fail(ctl, "migrations", rc);
    }
    errs = json_array();
    streams = errs != NULL ? brim_ctl_streams_json(ctl, st, errs) : NULL;
    if (streams != NULL) {
        doc = json_pack(
            "{s:I, s:b, s:b, s:I, s:I, s:I, s:s, s:I, s:o, s:o, s:O}", "epoch",
            (json_int_t) st->migration.epoch, "active", st->migration.active,
            "totals_lost", st->migration.totals_lost, "partitions_done",
            (json_int_t) st->migration.partitions_done, "partitions_total",
            (json_int_t) st->migration.partitions_total,
            "partitions_unfinished",
            (json_int_t) st->migration.partitions_unfinished, "waiting",
            st->migration.waiting, "waiting_ms",
            (json_int_t) st->migration.waiting_ms, "rows",
            mig_rows_total(streams), "streams", streams, "errors", errs);
    }
    brim_cluster_stats_free(st);
    if (doc == NULL) {
        json_decref(errs);
        fprintf(stderr, "brimctl: migrations: out of memory\n");
        return BRIM_CTL_EXIT_NO;
    }
    rc = BRIM_CTL_EXIT_OK;
    if (ctl->json) {
        rc = brim_ctl_print_json(doc, 0);
    } else {
        mig_print(doc);
    }
    json_array_foreach(errs, i, e)
    {
        if (!json_is_true(json_object_get(e, "departed"))
            && rc == BRIM_CTL_EXIT_OK) {
            rc = BRIM_CTL_EXIT_CONN; /* a member could not be asked */
        }
    }
    json_decref(errs);
    json_decref(doc);
    return rc;
}
