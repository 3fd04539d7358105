/*
 * client/brimctl/cmd.c - brimctl's commands over libbrim: get, set, del,
 * stats (also --watch), ping, flush and the command table; the cluster's
 * nodes, leave and plan, and its stats, are in cluster.c, import and
 * verify in import.c, the printers in out.c. Each returns an exit status
 * (ctl.h); values travel as raw bytes in both directions, so binary data
 * survives a pipe.
 */
#include "client/brimctl/ctl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <brim.h>

/* Stdin is read in pieces of this many bytes. */
#define CMD_READ_CHUNK (64u << 10)

/* KEY, a C string, for a message (brim_ctl_show_key()). */
static const char *
cmd_show_key(const char *key, char out[BRIM_CTL_KEY_SHOWN + 4])
{
    return brim_ctl_show_key(key, strlen(key), out);
}

static int
cmd_get(struct brim_ctl *ctl)
{
    const char *key = ctl->argv[0];
    char        shown[BRIM_CTL_KEY_SHOWN + 4], what[BRIM_CTL_KEY_SHOWN + 16];
    void       *val;
    size_t      len;
    int         rc;

    snprintf(what, sizeof(what), "get %s", cmd_show_key(key, shown));
    rc = brim_get(ctl->client, key, strlen(key), &val, &len);
    if (rc == BRIM_ENOTFOUND) {
        fprintf(stderr, "brimctl: %s: not found\n", what);
        return BRIM_CTL_EXIT_NO;
    }
    if (rc != 0) {
        return brim_ctl_fail(ctl, what, rc);
    }
    rc = BRIM_CTL_EXIT_OK;
    if ((len > 0 && fwrite(val, 1, len, stdout) != len) || fflush(stdout) != 0)
    {
        perror("brimctl: get: writing stdout");
        rc = BRIM_CTL_EXIT_NO;
    }
    brim_free(val);
    return rc;
}

/*
 * Read all of stdin into *BUF (malloc'ed) and *LEN, refusing more than MAX
 * bytes. Returns 0, or an exit status after a message.
 */
static int
cmd_read_stdin(size_t max, char **buf, size_t *len)
{
    char  *p, *q;
    size_t n, cap, r;

    p = NULL;
    n = 0;
    cap = 0;
    for (;;) {
        if (cap - n < CMD_READ_CHUNK) {
            cap = cap == 0 ? CMD_READ_CHUNK : cap * 2;
            q = realloc(p, cap);
            if (q == NULL) {
                free(p);
                fprintf(stderr, "brimctl: set: out of memory reading stdin\n");
                return BRIM_CTL_EXIT_NO;
            }
            p = q;
        }
        r = fread(p + n, 1, cap - n, stdin);
        n += r;
        if (n > max) {
            free(p);
            fprintf(stderr,
                    "brimctl: set: the value on stdin is larger than "
                    "the server's limit of %zu bytes\n",
                    max);
            return BRIM_CTL_EXIT_NO;
        }
        if (r == 0) {
            break;
        }
    }
    if (ferror(stdin)) {
        free(p);
        perror("brimctl: set: reading stdin");
        return BRIM_CTL_EXIT_NO;
    }
    *buf = p;
    *len = n;
    return 0;
}

static int
cmd_set(struct brim_ctl *ctl)
{
    const char *key = ctl->argv[0];
    char        shown[BRIM_CTL_KEY_SHOWN + 4], what[BRIM_CTL_KEY_SHOWN + 16];
    char       *val, *owned;
    size_t      len, max;
    int         rc;

    snprintf(what, sizeof(what), "set %s", cmd_show_key(key, shown));
    owned = NULL;
    max = brim_value_max(ctl->client);
    if (strcmp(ctl->argv[1], "-") == 0) {
        rc = cmd_read_stdin(max, &owned, &len);
        if (rc != 0) {
            return rc;
        }
        val = owned;
    } else {
        val = ctl->argv[1];
        len = strlen(val);
        if (len > max) {
            fprintf(stderr,
                    "brimctl: %s: the value is %zu bytes, the "
                    "server's limit is %zu\n",
                    what, len, max);
            return BRIM_CTL_EXIT_NO;
        }
    }
    rc = brim_set(ctl->client, key, strlen(key), val, len, ctl->ttl_s,
                  ctl->flags, NULL);
    free(owned);
    return rc == 0 ? BRIM_CTL_EXIT_OK : brim_ctl_fail(ctl, what, rc);
}

static int
cmd_del(struct brim_ctl *ctl)
{
    const char *key = ctl->argv[0];
    char        shown[BRIM_CTL_KEY_SHOWN + 4], what[BRIM_CTL_KEY_SHOWN + 16];
    int         rc;

    snprintf(what, sizeof(what), "del %s", cmd_show_key(key, shown));
    rc = brim_del(ctl->client, key, strlen(key));
    if (rc == BRIM_ENOTFOUND) {
        fprintf(stderr, "brimctl: %s: not found\n", what);
        return BRIM_CTL_EXIT_NO;
    }
    return rc == 0 ? BRIM_CTL_EXIT_OK : brim_ctl_fail(ctl, what, rc);
}

static int
cmd_ping(struct brim_ctl *ctl)
{
    struct timespec t0, t1;
    double          ms;
    int             rc;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = brim_ping(ctl->client);
    if (rc != 0) {
        return brim_ctl_fail(ctl, "ping", rc);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (double) (t1.tv_sec - t0.tv_sec) * 1e3
        + (double) (t1.tv_nsec - t0.tv_nsec) / 1e6;
    /* Cluster mode pings the coordinator (libbrim's home there). */
    printf("pong from %s in %.3f ms\n",
           ctl->coord != NULL ? ctl->coord : ctl->server, ms);
    return BRIM_CTL_EXIT_OK;
}

static int
cmd_flush(struct brim_ctl *ctl)
{
    int rc;

    rc = brim_flush(ctl->client, ctl->delay_s);
    if (rc != 0) {
        return brim_ctl_fail(ctl, "flush", rc);
    }
    /* Say what was dropped: a cluster's whole data is one word away. */
    printf("flushed %s%s",
           ctl->coord != NULL        ? "every node of the cluster"
               : ctl->server != NULL ? ctl->server
                                     : BRIM_CTL_DEFAULT_SERVER,
           ctl->delay_s > 0 ? "" : "\n");
    if (ctl->delay_s > 0) {
        printf(" (items expire in %u s)\n", (unsigned) ctl->delay_s);
    }
    return BRIM_CTL_EXIT_OK;
}

/* ---- stats ---- */

/* STATS pairs kept for printing: "section.name" and the value. */
struct cmd_stats {
    json_t *nodes;  /* --json: [{addr, stats}], else NULL */
    json_t *cur;    /* --json: the current node's stats */
    char  **names;  /* plain: "name" or "section.name" */
    char  **texts;  /* plain: the value as text */
    size_t  n, cap; /* plain: pairs kept, room */
    int     oom;    /* an allocation failed */
};

/* ST's value as a JSON value (NULL when out of memory). */
static json_t *
cmd_stat_json(const struct brim_stat *st)
{
    json_t *s;

    switch (st->kind) {
    case BRIM_STAT_U64:
        if (st->u64 <= (uint64_t) INT64_MAX) {
            return json_integer((json_int_t) st->u64);
        }
        /* jansson's integers are signed 64-bit: a larger one (an
         * incarnation id) goes as its exact decimal string. */
        return json_string(st->text);
    case BRIM_STAT_I64:
        return json_integer((json_int_t) st->i64);
    case BRIM_STAT_F64:
        return json_real(st->f64);
    default:
        s = json_stringn(st->str, st->str_len);
        /* Not UTF-8: say so rather than print invalid JSON. */
        return s != NULL ? s : json_string("(binary)");
    }
}

/* The JSON object for ST's node (a new row of NODES when it changes). */
static json_t *
cmd_stats_node(struct cmd_stats *cs, const char *addr)
{
    json_t *row, *last;
    size_t  n;

    n = json_array_size(cs->nodes);
    last = n > 0 ? json_array_get(cs->nodes, n - 1) : NULL;
    if (last != NULL
        && strcmp(json_string_value(json_object_get(last, "addr")), addr) == 0)
    {
        return cs->cur;
    }
    row = json_pack("{s:s, s:{}}", "addr", addr, "stats");
    if (row == NULL || json_array_append_new(cs->nodes, row) != 0) {
        return NULL;
    }
    cs->cur = json_object_get(row, "stats");
    return cs->cur;
}

static int
cmd_stats_json_cb(struct cmd_stats *cs, const struct brim_stat *st)
{
    json_t *obj, *sect, *v;

    obj = cmd_stats_node(cs, st->node);
    if (obj == NULL) {
        return -1;
    }
    if (st->section != NULL) {
        sect = json_object_get(obj, st->section);
        if (sect == NULL || !json_is_object(sect)) {
            sect = json_object();
            if (sect == NULL || json_object_set_new(obj, st->section, sect)) {
                return -1;
            }
        }
        obj = sect;
    }
    v = cmd_stat_json(st);
    if (v == NULL || json_object_set_new(obj, st->name, v) != 0) {
        return -1;
    }
    return 0;
}

static int
cmd_stats_plain_cb(struct cmd_stats *cs, const struct brim_stat *st)
{
    char **names, **texts;
    size_t cap, len;

    if (cs->n == cs->cap) {
        cap = cs->cap == 0 ? 64 : cs->cap * 2;
        names = realloc(cs->names, cap * sizeof(*names));
        if (names == NULL) {
            return -1;
        }
        cs->names = names;
        texts = realloc(cs->texts, cap * sizeof(*texts));
        if (texts == NULL) {
            return -1;
        }
        cs->texts = texts;
        cs->cap = cap;
    }
    len =
        strlen(st->name) + (st->section != NULL ? strlen(st->section) : 0) + 2;
    cs->names[cs->n] = malloc(len);
    cs->texts[cs->n] = strdup(st->text);
    if (cs->names[cs->n] == NULL || cs->texts[cs->n] == NULL) {
        free(cs->names[cs->n]);
        free(cs->texts[cs->n]);
        return -1;
    }
    snprintf(cs->names[cs->n], len, "%s%s%s",
             st->section != NULL ? st->section : "",
             st->section != NULL ? "." : "", st->name);
    cs->n++;
    return 0;
}

/* brim_stats_cb: keep ST for printing; stop when out of memory. */
static int
cmd_stats_cb(const struct brim_stat *st, void *arg)
{
    struct cmd_stats *cs = arg;

    if ((cs->nodes != NULL ? cmd_stats_json_cb(cs, st)
                           : cmd_stats_plain_cb(cs, st))
        != 0)
    {
        cs->oom = 1;
        return 1;
    }
    return 0;
}

/* Print the kept pairs as aligned "name  value" lines. */
static void
cmd_stats_print(const struct cmd_stats *cs)
{
    size_t i, w, len;
    char   buf[128];

    w = 0;
    for (i = 0; i < cs->n; i++) {
        len = strlen(cs->names[i]);
        w = len > w ? len : w;
    }
    for (i = 0; i < cs->n; i++) {
        printf(
            "%-*s  %s\n", (int) w, cs->names[i],
            brim_ctl_value_text(cs->names[i], cs->texts[i], buf, sizeof(buf)));
    }
}

/* One round of the node's STATS, printed; COMPACT: --json on one line.
 * Returns the exit status. */
static int
cmd_node_stats(struct brim_ctl *ctl, int compact)
{
    struct cmd_stats cs;
    json_t          *doc;
    size_t           i;
    int              rc;

    memset(&cs, 0, sizeof(cs));
    if (ctl->json) {
        cs.nodes = json_array();
        if (cs.nodes == NULL) {
            fprintf(stderr, "brimctl: stats: out of memory\n");
            return BRIM_CTL_EXIT_NO;
        }
    }
    rc = brim_stats(ctl->client, ctl->argc > 0 ? ctl->argv[0] : NULL,
                    cmd_stats_cb, &cs);
    if (cs.oom) {
        fprintf(stderr, "brimctl: stats: out of memory\n");
        rc = BRIM_CTL_EXIT_NO;
    } else if (rc != 0) {
        rc = brim_ctl_fail(ctl, "stats", rc);
    } else if (ctl->json) {
        doc = json_pack("{s:O}", "nodes", cs.nodes);
        rc = brim_ctl_print_json(doc, compact);
        json_decref(doc);
    } else {
        cmd_stats_print(&cs);
    }
    for (i = 0; i < cs.n; i++) {
        free(cs.names[i]);
        free(cs.texts[i]);
    }
    free(cs.names);
    free(cs.texts);
    json_decref(cs.nodes);
    return rc;
}

/*
 * stats --watch: a round every ctl->watch_s seconds until SIGINT or
 * SIGTERM (exit 0). On a terminal the screen is cleared before each
 * table; --json prints one object a line. A failed round is reported and
 * the watch goes on.
 */
static int
cmd_stats_watch(struct brim_ctl *ctl)
{
    struct tm tm;
    time_t    now;
    double    start;
    char      when[32];
    int       tty;

    tty = !ctl->json && isatty(STDOUT_FILENO);
    brim_ctl_catch_signals();
    while (brim_ctl_stopped() == 0) {
        start = brim_ctl_now();
        if (!ctl->json) {
            now = time(NULL);
            localtime_r(&now, &tm);
            strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
            printf("%s%s stats of %s every %g s (Ctrl-C ends)\n\n",
                   tty ? "\033[H\033[2J" : "", when, brim_ctl_addr(ctl),
                   ctl->watch_s);
        }
        (void) (ctl->coord != NULL ? brim_ctl_cluster_stats(ctl, 1)
                                   : cmd_node_stats(ctl, 1));
        if (!ctl->json && !tty) {
            printf("\n");
        }
        if (fflush(stdout) != 0 || ferror(stdout)) {
            break; /* the reader went away */
        }
        brim_ctl_sleep(ctl->watch_s - (brim_ctl_now() - start));
    }
    return BRIM_CTL_EXIT_OK;
}

static int
cmd_stats(struct brim_ctl *ctl)
{
    if (ctl->coord != NULL && ctl->argc > 0) {
        fprintf(stderr, "brimctl: stats: no SECTION with --coordinator\n");
        return BRIM_CTL_EXIT_USAGE;
    }
    if (ctl->watch_s > 0) {
        return cmd_stats_watch(ctl);
    }
    return ctl->coord != NULL ? brim_ctl_cluster_stats(ctl, 0)
                              : cmd_node_stats(ctl, 0);
}

const struct brim_ctl_cmd brim_ctl_cmds[] = {
    {"get", "KEY", "write the value under KEY to stdout, raw",
     "A missing key exits 1 with a message on stderr.\n", 1, 1, 0, 0, cmd_get},
    {"set", "KEY VALUE", "store VALUE under KEY ('-': read it from stdin)",
     "VALUE '-' reads stdin to its end, binary-safe, up to the server's\n"
     "value limit (1 MiB by default). Put '--' before a VALUE that starts\n"
     "with '-'.\n",
     2, 2, BRIM_CTL_OPT_TTL | BRIM_CTL_OPT_FLAGS, 0, cmd_set},
    {"del", "KEY", "delete KEY", "A missing key exits 1.\n", 1, 1, 0, 0,
     cmd_del},
    {"stats", "[SECTION]", "print the node's (or the cluster's) statistics",
     "Aligned name/value lines, nested sections as section.name; with\n"
     "--json one object: {\"nodes\": [{\"addr\": ..., \"stats\": {...}}]}.\n"
     "With --coordinator, the cluster's CLUSTER_STATS, after a line naming\n"
     "the coordinator that answered (\"coordinator: c1 HOST:PORT (etcd\n"
     "leader, term 7)\" or \"coordinator: HOST:PORT (file mode)\"; --json:\n"
     "its map \"coordinator\"); its migration map on one line: idle or\n"
     "active, partitions done/total (arc, cap), keys moved, and \"churn\n"
     "X.XX of ideal\" when the coordinator sends churn.\n"
     "--watch [S]: print again every S seconds (default 1) until SIGINT or\n"
     "SIGTERM (exit 0), clearing the screen first when stdout is a\n"
     "terminal; with --json one compact object a line.\n",
     0, 1, BRIM_CTL_OPT_JSON | BRIM_CTL_OPT_WATCH, 0, cmd_stats},
    {"ping", "", "one round trip to the node", NULL, 0, 0, 0, 0, cmd_ping},
    {"migrations", "", "streams of the last change, rate, ETA (--coordinator)",
     "One row per sender and receiver of each node's last migration out:\n"
     "state (streaming or done), partitions queued, done and dropped, keys\n"
     "and bytes sent, the rate over its time so far (MB/s), keys left and\n"
     "the ETA at that rate (s; \"-\" while nothing was sent), its elapsed\n"
     "time; above it the change's partitions done/total and, when a change\n"
     "waits, the coordinator's reason. Each node is asked directly, with\n"
     "the secret and role given; a node that cannot be asked is named on\n"
     "stderr and the exit status is 2. --json prints one object.\n",
     0, 0, BRIM_CTL_OPT_JSON, 0, brim_ctl_migrations},
    {"nodes", "", "list the cluster's members (--coordinator)",
     "Name, address, state, weight, partitions and heartbeat age, after a\n"
     "line naming the coordinator that answered (the leader), as stats\n"
     "prints it; --json prints an array of objects with those fields.\n",
     0, 0, BRIM_CTL_OPT_JSON, 0, brim_ctl_nodes},
    {"leave", "NAME", "drain node NAME out of the cluster (--coordinator)",
     "--force is needed for the last node. Exits 1 with the coordinator's\n"
     "message when it refuses (not a member, the last node).\n"
     "--wait: then poll the cluster's stats every 200 ms, drawing the\n"
     "migration's partitions done/total on stderr (a bar on a terminal,\n"
     "else a line a second), until NAME is no longer listed and no\n"
     "migration runs; after --timeout S seconds (default 120) exit 2.\n",
     1, 1,
     BRIM_CTL_OPT_FORCE | BRIM_CTL_OPT_WAIT | BRIM_CTL_OPT_TIMEOUT
         | BRIM_CTL_OPT_PROGRESS,
     1, brim_ctl_leave},
    {"plan", "join|leave NAME",
     "what a join or leave would move "
     "(--coordinator)",
     "plan join NAME [--weight W], plan leave NAME: the coordinator's\n"
     "estimate, nothing moves.\n",
     2, 2, BRIM_CTL_OPT_JSON | BRIM_CTL_OPT_WEIGHT, 1, brim_ctl_plan},
    {"flush", "", "drop every item: the node's, every node's (--coordinator)",
     "With --server, that node's items; with --coordinator (or\n"
     "BRIM_COORDINATOR), every member's: the whole cluster's data. Needs\n"
     "the admin role (and the secret where the cluster has one).\n",
     0, 0, BRIM_CTL_OPT_DELAY, 1, cmd_flush},
    {"import", "FILE|-", "store the records of FILE (-: stdin), batched",
     "Each record goes under PREFIX + its key, pipelined in batches.\n"
     "--format deb822 (default): Debian control records (apt-cache\n"
     "dumpavail) separated by blank lines (empty, or only spaces, tabs and\n"
     "CRs). The key is the text of the record's --key-field line (default\n"
     "Package; the name matched ignoring case). The value is the record's\n"
     "lines exactly as in the input, each with its trailing newline, and\n"
     "without the blank lines that separate records (a last line with no\n"
     "newline at the end of the input is stored without one).\n"
     "--format jsonl: one object a line with string fields \"key\" and\n"
     "\"value\"; the value stored is the decoded string.\n"
     "--prefix: default \"pkg:\" for deb822, \"\" for jsonl.\n"
     "A key that repeats: the later record wins, and is counted. Records\n"
     "without a key, bad JSON lines, and keys or values over the node's\n"
     "limits are reported on stderr (FILE:LINE) and skipped; the rest is\n"
     "stored. Progress on stderr when it is a terminal (--progress: also\n"
     "when not, a line a second): records, bytes read of the file's size,\n"
     "records/s and MB/s. The last line on stdout:\n"
     "  imported N records (M bytes) in S s: R records/s, X MB/s;\n"
     "  repeated K, skipped J\n"
     "(M: value bytes stored; MB = 10^6 bytes). Exit 0: all stored; 1: some\n"
     "skipped; 2: the servers could not be reached; 64: bad usage, or FILE\n"
     "cannot be opened. --ttl and --flags apply to every record.\n",
     1, 1,
     BRIM_CTL_OPT_FORMAT | BRIM_CTL_OPT_KEY_FIELD | BRIM_CTL_OPT_PREFIX
         | BRIM_CTL_OPT_PROGRESS | BRIM_CTL_OPT_TTL | BRIM_CTL_OPT_FLAGS,
     0, brim_ctl_import},
    {"verify", "FILE|-",
     "read FILE's keys back and compare with its "
     "records",
     "FILE, --format, --key-field and --prefix as for import. Every\n"
     "distinct key is read once and compared byte for byte with its record\n"
     "(the later one of a repeated key); records import would skip are\n"
     "reported and not checked. Prints \"verified N/N\" (N distinct keys),\n"
     "or \"verified OK/N: X missing, Y different\" with the first 10 bad\n"
     "keys on stderr, and exits 1. Progress as for import.\n"
     "--loop: read random keys of FILE, at most --rate R a second (default\n"
     "2000), for --duration S seconds or until SIGINT/SIGTERM, then print\n"
     "  reads=N ok=N missing=N different=N errors=N\n"
     "and exit 1 if missing, different or errors is not 0. MOVED and RETRY\n"
     "are followed inside libbrim; a read that still fails is an error.\n",
     1, 1,
     BRIM_CTL_OPT_FORMAT | BRIM_CTL_OPT_KEY_FIELD | BRIM_CTL_OPT_PREFIX
         | BRIM_CTL_OPT_PROGRESS | BRIM_CTL_OPT_LOOP | BRIM_CTL_OPT_DURATION
         | BRIM_CTL_OPT_RATE,
     0, brim_ctl_verify},
    {NULL, NULL, NULL, NULL, 0, 0, 0, 0, NULL}};
