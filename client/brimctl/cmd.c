/*
 * client/brimctl/cmd.c - brimctl's commands over libbrim: get, set, del,
 * stats (also --watch), ping, flush, and the cluster's nodes, leave (also
 * --wait), plan; import and verify are in import.c. Each returns an exit
 * status (ctl.h); values travel as raw bytes in both directions, so binary
 * data survives a pipe.
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

#include "client/lib/coordlink.h"
#include "proto/ops.h"
#include "proto/topo.h"

/* Stdin is read in pieces of this many bytes. */
#define CMD_READ_CHUNK (64u << 10)

const char *
brim_ctl_show_key(const char *key, size_t len,
                  char out[BRIM_CTL_KEY_SHOWN + 4])
{
    size_t i;

    if (len == 0) {
        return "\"\"";
    }
    for (i = 0; i < len && i < BRIM_CTL_KEY_SHOWN; i++) {
        out[i] = key[i] >= 0x20 && key[i] < 0x7f ? key[i] : '?';
    }
    if (len > BRIM_CTL_KEY_SHOWN) {
        memcpy(&out[i], "...", 3);
        i += 3;
    }
    out[i] = '\0';
    return out;
}

/* KEY, a C string, for a message (brim_ctl_show_key()). */
static const char *
cmd_show_key(const char *key, char out[BRIM_CTL_KEY_SHOWN + 4])
{
    return brim_ctl_show_key(key, strlen(key), out);
}

int
brim_ctl_conn_error(int rc)
{
    switch (rc) {
    case BRIM_ETIMEDOUT:
    case BRIM_ECONNREFUSED:
    case BRIM_ECLOSED:
    case BRIM_ESYS:
    case BRIM_EUNKNOWN:
    case BRIM_EBADREPLY:
        return 1;
    default:
        return 0;
    }
}

int
brim_ctl_fail(struct brim_ctl *ctl, const char *what, int rc)
{
    const char *detail;

    detail = brim_errmsg(ctl->client);
    switch (rc) {
    case BRIM_EINVAL:
        /* A key of 0 bytes or over the node's limit: libbrim refuses it
         * before sending (the node would answer INVAL). The command line
         * asked for it, so it is bad usage, not the server saying no. */
        fprintf(stderr, "brimctl: %s: %s\n(see brimctl --help)\n", what,
                detail[0] != '\0' ? detail : brim_strerror(rc));
        return BRIM_CTL_EXIT_USAGE;
    case BRIM_ENONODES:
        fprintf(stderr, "brimctl: %s: %s (%s)\n", what, brim_strerror(rc),
                detail);
        return BRIM_CTL_EXIT_NONODES;
    default:
        if (brim_ctl_conn_error(rc)) {
            fprintf(stderr, "brimctl: %s: %s: server %s (%s)\n", what,
                    brim_strerror(rc), brim_ctl_addr(ctl), detail);
            return BRIM_CTL_EXIT_CONN;
        }
        if (detail[0] != '\0') {
            fprintf(stderr, "brimctl: %s: %s (%s)\n", what, brim_strerror(rc),
                    detail);
        } else {
            fprintf(stderr, "brimctl: %s: %s\n", what, brim_strerror(rc));
        }
        return BRIM_CTL_EXIT_NO;
    }
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
    char   *p, *q;
    size_t  n, cap, r;

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
            fprintf(stderr, "brimctl: set: the value on stdin is larger than "
                    "the server's limit of %zu bytes\n", max);
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
            fprintf(stderr, "brimctl: %s: the value is %zu bytes, the "
                    "server's limit is %zu\n", what, len, max);
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
    return rc == 0 ? BRIM_CTL_EXIT_OK : brim_ctl_fail(ctl, "flush", rc);
}

/* ---- stats ---- */

/* STATS pairs kept for printing: "section.name" and the value. */
struct cmd_stats {
    json_t *nodes;                  /* --json: [{addr, stats}], else NULL */
    json_t *cur;                    /* --json: the current node's stats */
    char  **names;                  /* plain: "name" or "section.name" */
    char  **texts;                  /* plain: the value as text */
    size_t  n, cap;                 /* plain: pairs kept, room */
    int     oom;                    /* an allocation failed */
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
        && strcmp(json_string_value(json_object_get(last, "addr")), addr)
               == 0)
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
    char   **names, **texts;
    size_t   cap, len;

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
    len = strlen(st->name) + (st->section != NULL ? strlen(st->section) : 0)
          + 2;
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

    w = 0;
    for (i = 0; i < cs->n; i++) {
        len = strlen(cs->names[i]);
        w = len > w ? len : w;
    }
    for (i = 0; i < cs->n; i++) {
        printf("%-*s  %s\n", (int) w, cs->names[i], cs->texts[i]);
    }
}

static int cmd_print_json(const json_t *j, int compact);

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
        rc = cmd_print_json(doc, compact);
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

/* ---- cluster commands (the coordinator) ---- */

const char *
brim_ctl_addr(const struct brim_ctl *ctl)
{
    return ctl->coord != NULL ? ctl->coord : ctl->server;
}

/* The msgpack object O as a new JSON value (NULL when out of memory). */
static json_t *
cmd_json_of(const msgpack_object *o)
{
    json_t  *j, *v;
    uint32_t i;
    char     key[256];

    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        return json_null();
    case MSGPACK_OBJECT_BOOLEAN:
        return json_boolean(o->via.boolean);
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (o->via.u64 > (uint64_t) INT64_MAX) {
            /* As node stats: above 2^63-1 (an incarnation) as text. */
            snprintf(key, sizeof(key), "%" PRIu64, o->via.u64);
            return json_string(key);
        }
        return json_integer((json_int_t) o->via.u64);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return json_integer((json_int_t) o->via.i64);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        return json_real(o->via.f64);
    case MSGPACK_OBJECT_STR:
        return json_stringn_nocheck(o->via.str.ptr, o->via.str.size);
    case MSGPACK_OBJECT_BIN:
        return json_stringn_nocheck(o->via.bin.ptr, o->via.bin.size);
    case MSGPACK_OBJECT_ARRAY:
        j = json_array();
        for (i = 0; j != NULL && i < o->via.array.size; i++) {
            v = cmd_json_of(&o->via.array.ptr[i]);
            if (v == NULL || json_array_append_new(j, v) != 0) {
                json_decref(j);
                return NULL;
            }
        }
        return j;
    case MSGPACK_OBJECT_MAP:
        j = json_object();
        for (i = 0; j != NULL && i < o->via.map.size; i++) {
            const msgpack_object *k = &o->via.map.ptr[i].key;

            if (k->type == MSGPACK_OBJECT_STR) {
                snprintf(key, sizeof(key), "%.*s",
                         (int) (k->via.str.size < 255 ? k->via.str.size
                                                      : 255),
                         k->via.str.ptr);
            } else if (k->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
                snprintf(key, sizeof(key), "%" PRIu64, k->via.u64);
            } else {
                snprintf(key, sizeof(key), "?%" PRIu32, i);
            }
            v = cmd_json_of(&o->via.map.ptr[i].val);
            if (v == NULL || json_object_set_new(j, key, v) != 0) {
                json_decref(j);
                return NULL;
            }
        }
        return j;
    default:
        return json_null();
    }
}

/* Callback of brim_coordlink_call(): keep the reply as JSON in *ARG. */
static int
cmd_coord_keep(const msgpack_object *obj, uint64_t epoch, void *arg)
{
    json_t **out = arg;

    *out = obj != NULL ? cmd_json_of(obj) : json_integer((json_int_t) epoch);
    return *out != NULL ? 0 : BRIM_ENOMEM;
}

/* Print J as indented JSON, or on one line when COMPACT. A NULL J (out
 * of memory) fails. */
static int
cmd_print_json(const json_t *j, int compact)
{
    char *out;

    out = j != NULL ? json_dumps(j, (compact ? JSON_COMPACT : JSON_INDENT(2))
                                        | JSON_PRESERVE_ORDER
                                        | JSON_ENCODE_ANY)
                    : NULL;
    if (out == NULL) {
        fprintf(stderr, "brimctl: cannot format JSON\n");
        return BRIM_CTL_EXIT_NO;
    }
    printf("%s\n", out);
    free(out);
    return BRIM_CTL_EXIT_OK;
}

/* The text of a scalar JSON value into BUF. */
static const char *
cmd_json_text(const json_t *v, char *buf, size_t len)
{
    if (json_is_string(v)) {
        return json_string_value(v);
    }
    if (json_is_integer(v)) {
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    } else if (json_is_real(v)) {
        snprintf(buf, len, "%.4g", json_real_value(v));
    } else if (json_is_true(v) || json_is_false(v)) {
        snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
    } else if (json_is_null(v)) {
        snprintf(buf, len, "-");
    } else {
        char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

        snprintf(buf, len, "%s", d != NULL ? d : "?");
        free(d);
    }
    return buf;
}

/* An array of objects as an aligned table, columns in the first row's
 * order. */
static void
cmd_print_table(const json_t *rows, const char *indent)
{
    const json_t *row, *v;
    const char   *k;
    size_t        i, c, ncols, w[32];
    const char   *cols[32];
    char          buf[128];

    row = json_array_get(rows, 0);
    if (!json_is_object(row)) {
        return;
    }
    ncols = 0;
    json_object_foreach((json_t *) row, k, v) {
        if (ncols < 32) {
            cols[ncols] = k;
            w[ncols] = strlen(k);
            ncols++;
        }
    }
    json_array_foreach(rows, i, row) {
        for (c = 0; c < ncols; c++) {
            v = json_object_get(row, cols[c]);
            if (v != NULL) {
                size_t l = strlen(cmd_json_text(v, buf, sizeof(buf)));

                w[c] = l > w[c] ? l : w[c];
            }
        }
    }
    printf("%s", indent);
    for (c = 0; c < ncols; c++) {
        printf("%-*s%s", c + 1 < ncols ? (int) w[c] : 0, cols[c],
               c + 1 < ncols ? "  " : "\n");
    }
    json_array_foreach(rows, i, row) {
        printf("%s", indent);
        for (c = 0; c < ncols; c++) {
            v = json_object_get(row, cols[c]);
            printf("%-*s%s", c + 1 < ncols ? (int) w[c] : 0,
                   v != NULL ? cmd_json_text(v, buf, sizeof(buf)) : "-",
                   c + 1 < ncols ? "  " : "\n");
        }
    }
}

/* An object as aligned "name value" lines; nested objects as
 * prefix.name, arrays of objects as tables. */
static void
cmd_print_obj(const json_t *obj, const char *prefix)
{
    const json_t *v;
    const char   *k;
    char          name[256], buf[128];
    size_t        w;

    w = 0;
    json_object_foreach((json_t *) obj, k, v) {
        size_t l = strlen(prefix) + strlen(k);

        w = l > w ? l : w;
    }
    json_object_foreach((json_t *) obj, k, v) {
        snprintf(name, sizeof(name), "%s%s", prefix, k);
        if (json_is_object(v)) {
            snprintf(name, sizeof(name), "%s%s.", prefix, k);
            cmd_print_obj(v, name);
        } else if (json_is_array(v) && json_is_object(json_array_get(v, 0))) {
            printf("%s:\n", name);
            cmd_print_table(v, "  ");
        } else {
            printf("%-*s  %s\n", (int) w, name,
                   cmd_json_text(v, buf, sizeof(buf)));
        }
    }
}

/* A command that needs the coordinator: 0, or usage exit after a message. */
static int
cmd_need_coord(const struct brim_ctl *ctl, const char *name)
{
    if (ctl->coord != NULL) {
        return 0;
    }
    fprintf(stderr, "brimctl: %s: needs --coordinator HOST:PORT (or "
            "$BRIM_COORDINATOR)\n", name);
    return BRIM_CTL_EXIT_USAGE;
}

static const char *
cmd_state_name(json_int_t s)
{
    switch (s) {
    case BRIM_MEMBER_JOINING:
        return "joining";
    case BRIM_MEMBER_UP:
        return "up";
    case BRIM_MEMBER_LEAVING:
        return "leaving";
    case BRIM_MEMBER_DEAD:
        return "dead";
    default:
        return "unknown";
    }
}

static int
cmd_nodes(struct brim_ctl *ctl)
{
    json_t *rep, *out, *m, *o;
    size_t  i;
    int     rc;

    rc = cmd_need_coord(ctl, "nodes");
    if (rc != 0) {
        return rc;
    }
    rep = NULL;
    rc = brim_coordlink_call(ctl->client, BRIM_OP_MEMBERS, NULL, 0, 0,
                         cmd_coord_keep, &rep);
    if (rc != 0) {
        json_decref(rep);
        return brim_ctl_fail(ctl, "nodes", rc);
    }
    if (!json_is_array(rep)) {
        fprintf(stderr, "brimctl: nodes: the coordinator's MEMBERS reply "
                "is not an array\n");
        json_decref(rep);
        return BRIM_CTL_EXIT_NO;
    }
    out = json_array();
    json_array_foreach(rep, i, m) {
        /* [name, addr, state, weight_ppm, partitions, heartbeat ago] */
        o = json_object();
        json_object_set(o, "name", json_array_get(m, 0));
        json_object_set(o, "addr", json_array_get(m, 1));
        json_object_set_new(o, "state", json_string(cmd_state_name(
            json_integer_value(json_array_get(m, 2)))));
        json_object_set_new(o, "weight", json_real(
            (double) json_integer_value(json_array_get(m, 3)) / 1e6));
        json_object_set(o, "partitions", json_array_get(m, 4));
        json_object_set(o, "last_heartbeat_ms_ago", json_array_get(m, 5));
        json_array_append_new(out, o);
    }
    json_decref(rep);
    if (ctl->json) {
        rc = cmd_print_json(out, 0);
    } else if (json_array_size(out) == 0) {
        printf("no nodes\n");
    } else {
        cmd_print_table(out, "");
    }
    json_decref(out);
    return rc;
}

/* A CLUSTER_STATS reply as JSON into *REP (NULL on error); 0 or a status. */
static int
cmd_fetch_cluster_stats(struct brim_ctl *ctl, json_t **rep)
{
    int rc;

    *rep = NULL;
    rc = brim_coordlink_call(ctl->client, BRIM_OP_CLUSTER_STATS, NULL, 0, 0,
                         cmd_coord_keep, rep);
    if (rc == 0 && !json_is_object(*rep)) {
        rc = BRIM_EBADREPLY;
    }
    if (rc != 0) {
        json_decref(*rep);
        *rep = NULL;
    }
    return rc;
}

/* Where the leave of one node stands, from CLUSTER_STATS. */
struct cmd_leave_state {
    int         listed;             /* the node is in "nodes" */
    char        state[16];          /* its state ("leaving"), copied */
    int         active;             /* migration.active */
    json_int_t  done;               /* migration.partitions_done */
    json_int_t  total;              /* migration.partitions_total */
    json_int_t  keys;               /* migration.keys_moved */
};

/* Read the leave of NAME out of the CLUSTER_STATS reply REP into *LS. */
static void
cmd_leave_state(const json_t *rep, const char *name,
                struct cmd_leave_state *ls)
{
    const json_t *m, *node;
    size_t        i;

    memset(ls, 0, sizeof(*ls));
    json_array_foreach(json_object_get(rep, "nodes"), i, node) {
        const char *n = json_string_value(json_object_get(node, "name"));

        if (n != NULL && strcmp(n, name) == 0) {
            n = json_string_value(json_object_get(node, "state"));
            snprintf(ls->state, sizeof(ls->state), "%s", n != NULL ? n : "?");
            ls->listed = 1;
        }
    }
    m = json_object_get(rep, "migration");
    ls->active = json_is_true(json_object_get(m, "active"));
    ls->done = json_integer_value(json_object_get(m, "partitions_done"));
    ls->total = json_integer_value(json_object_get(m, "partitions_total"));
    ls->keys = json_integer_value(json_object_get(m, "keys_moved"));
}

/*
 * leave --wait: poll CLUSTER_STATS every 200 ms, drawing the migration's
 * progress, until NAME is no longer listed and no migration runs; exit 2
 * after --timeout seconds. A failed poll is tried again until then.
 */
static int
cmd_leave_wait(struct brim_ctl *ctl, const char *name)
{
    struct brim_ctl_progress prog;
    struct cmd_leave_state   ls;
    json_t                  *rep;
    double                   limit, left;
    int                      rc;

    limit = ctl->timeout_s > 0 ? ctl->timeout_s : BRIM_CTL_DEFAULT_TIMEOUT_S;
    brim_ctl_progress_init(&prog, ctl->progress, 1);
    memset(&ls, 0, sizeof(ls));
    ls.listed = 1;                  /* until a poll says otherwise */
    snprintf(ls.state, sizeof(ls.state), "?");
    for (;;) {
        rc = cmd_fetch_cluster_stats(ctl, &rep);
        if (rc == 0) {
            cmd_leave_state(rep, name, &ls);
            json_decref(rep);
        }
        if (rc == 0 && !ls.listed && !ls.active) {
            break;
        }
        brim_ctl_progress_draw(
            &prog, ls.total > 0 ? (double) ls.done / (double) ls.total : -1,
            0, "leave %s: %s, migration %" JSON_INTEGER_FORMAT "/%"
            JSON_INTEGER_FORMAT " partitions, %" JSON_INTEGER_FORMAT
            " keys moved, %.0f s", name,
            ls.listed ? ls.state : "gone", ls.done, ls.total, ls.keys,
            brim_ctl_progress_elapsed(&prog));
        left = limit - brim_ctl_progress_elapsed(&prog);
        if (left <= 0) {
            brim_ctl_progress_clear(&prog);
            fprintf(stderr, "brimctl: leave %s: not done after %g s: %s%s, "
                    "migration %s %" JSON_INTEGER_FORMAT "/%"
                    JSON_INTEGER_FORMAT " partitions%s%s\n", name, limit,
                    ls.listed ? "still listed, state " : "not listed",
                    ls.listed ? ls.state : "",
                    ls.active ? "active" : "idle", ls.done, ls.total,
                    rc != 0 ? "; last poll: " : "",
                    rc != 0 ? brim_strerror(rc) : "");
            return BRIM_CTL_EXIT_CONN;
        }
        brim_ctl_sleep(left < 0.2 ? left : 0.2);
    }
    brim_ctl_progress_draw(&prog, 1, 1, "leave %s: done", name);
    printf("%s: left the cluster in %.1f s (migration %" JSON_INTEGER_FORMAT
           "/%" JSON_INTEGER_FORMAT " partitions, %" JSON_INTEGER_FORMAT
           " keys moved)\n", name, brim_ctl_progress_elapsed(&prog), ls.done,
           ls.total, ls.keys);
    return BRIM_CTL_EXIT_OK;
}

static int
cmd_leave(struct brim_ctl *ctl)
{
    json_t *rep;
    char    what[128];
    int     rc;

    rc = cmd_need_coord(ctl, "leave");
    if (rc != 0) {
        return rc;
    }
    if (!ctl->wait && (ctl->timeout_s > 0 || ctl->progress)) {
        fprintf(stderr, "brimctl: leave: --timeout and --progress are for "
                "--wait\n");
        return BRIM_CTL_EXIT_USAGE;
    }
    rep = NULL;
    snprintf(what, sizeof(what), "leave %.64s", ctl->argv[0]);
    rc = brim_coordlink_call(ctl->client, BRIM_OP_LEAVE, ctl->argv[0],
                         ctl->force ? 1 : 0, 0, cmd_coord_keep, &rep);
    if (rc != 0) {
        json_decref(rep);
        return brim_ctl_fail(ctl, what, rc);
    }
    printf("%s: leaving at epoch %" JSON_INTEGER_FORMAT "\n", ctl->argv[0],
           json_integer_value(rep));
    json_decref(rep);
    if (!ctl->wait) {
        return BRIM_CTL_EXIT_OK;
    }
    fflush(stdout);
    return cmd_leave_wait(ctl, ctl->argv[0]);
}

static int
cmd_plan(struct brim_ctl *ctl)
{
    json_t  *rep;
    char     what[128];
    uint32_t kind;
    int      rc;

    rc = cmd_need_coord(ctl, "plan");
    if (rc != 0) {
        return rc;
    }
    if (strcmp(ctl->argv[0], "join") == 0) {
        kind = 1;
    } else if (strcmp(ctl->argv[0], "leave") == 0) {
        kind = 2;
        if (ctl->weight_ppm != 0) {
            fprintf(stderr, "brimctl: plan leave: --weight is for join\n");
            return BRIM_CTL_EXIT_USAGE;
        }
    } else {
        fprintf(stderr, "brimctl: plan: \"%s\": want join or leave\n",
                ctl->argv[0]);
        return BRIM_CTL_EXIT_USAGE;
    }
    rep = NULL;
    snprintf(what, sizeof(what), "plan %s %.64s", ctl->argv[0], ctl->argv[1]);
    rc = brim_coordlink_call(ctl->client, BRIM_OP_PLAN, ctl->argv[1], kind,
                         ctl->weight_ppm, cmd_coord_keep, &rep);
    if (rc != 0) {
        json_decref(rep);
        return brim_ctl_fail(ctl, what, rc);
    }
    if (ctl->json || !json_is_object(rep)) {
        rc = cmd_print_json(rep, 0);
    } else {
        cmd_print_obj(rep, "");
    }
    json_decref(rep);
    return rc;
}

/*
 * The migration map M of CLUSTER_STATS as one line into BUF: state,
 * partitions done/total (by arc and by cap), keys moved, and the churn
 * (keys streamed over the ideal, total keys / N) when the coordinator
 * sends it.
 */
static void
cmd_migration_text(const json_t *m, char *buf, size_t len)
{
    const json_t *churn;
    int           n;

    n = snprintf(buf, len, "%s, partitions %" JSON_INTEGER_FORMAT "/%"
                 JSON_INTEGER_FORMAT " (arc %" JSON_INTEGER_FORMAT ", cap %"
                 JSON_INTEGER_FORMAT "), keys moved %" JSON_INTEGER_FORMAT
                 " (arc %" JSON_INTEGER_FORMAT ", cap %" JSON_INTEGER_FORMAT
                 ")",
                 json_is_true(json_object_get(m, "active")) ? "active"
                                                            : "idle",
                 json_integer_value(json_object_get(m, "partitions_done")),
                 json_integer_value(json_object_get(m, "partitions_total")),
                 json_integer_value(json_object_get(m, "moved_arc")),
                 json_integer_value(json_object_get(m, "moved_cap")),
                 json_integer_value(json_object_get(m, "keys_moved")),
                 json_integer_value(json_object_get(m, "keys_moved_arc")),
                 json_integer_value(json_object_get(m, "keys_moved_cap")));
    churn = json_object_get(m, "churn");
    if (json_is_number(churn) && n > 0 && (size_t) n < len) {
        snprintf(buf + n, len - (size_t) n, ", churn %.2f of ideal",
                 json_number_value(churn));
    }
}

/* One round of the coordinator's CLUSTER_STATS, printed; COMPACT: --json
 * on one line. Returns the exit status. */
static int
cmd_cluster_stats(struct brim_ctl *ctl, int compact)
{
    json_t     *rep, *m;
    const char *wait;
    char        line[256], waiting[320];
    int         rc;

    rc = cmd_fetch_cluster_stats(ctl, &rep);
    if (rc != 0) {
        return brim_ctl_fail(ctl, "stats", rc);
    }
    if (ctl->json) {
        rc = cmd_print_json(rep, compact);
    } else {
        /* The migration map as one line, in its place in the table. */
        m = json_object_get(rep, "migration");
        wait = json_string_value(json_object_get(m, "waiting"));
        if (json_is_object(m)) {
            cmd_migration_text(m, line, sizeof(line));
            if (wait != NULL && wait[0] != '\0') {
                /* A join or leave held back: say why, and for how long. */
                snprintf(waiting, sizeof(waiting), "%.1f s: %s",
                         json_integer_value(json_object_get(m, "waiting_ms"))
                             / 1000.0, wait);
                json_object_set_new(rep, "change_waiting",
                                    json_string(waiting));
            }
            json_object_set_new(rep, "migration", json_string(line));
        }
        cmd_print_obj(rep, "");
    }
    json_decref(rep);
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
        (void) (ctl->coord != NULL ? cmd_cluster_stats(ctl, 1)
                                   : cmd_node_stats(ctl, 1));
        if (!ctl->json && !tty) {
            printf("\n");
        }
        if (fflush(stdout) != 0 || ferror(stdout)) {
            break;                  /* the reader went away */
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
    return ctl->coord != NULL ? cmd_cluster_stats(ctl, 0)
                              : cmd_node_stats(ctl, 0);
}

const struct brim_ctl_cmd brim_ctl_cmds[] = {
    { "get", "KEY", "write the value under KEY to stdout, raw",
      "A missing key exits 1 with a message on stderr.\n", 1, 1, 0, 0,
      cmd_get },
    { "set", "KEY VALUE", "store VALUE under KEY ('-': read it from stdin)",
      "VALUE '-' reads stdin to its end, binary-safe, up to the server's\n"
      "value limit (1 MiB by default). Put '--' before a VALUE that starts\n"
      "with '-'.\n", 2, 2, BRIM_CTL_OPT_TTL | BRIM_CTL_OPT_FLAGS, 0, cmd_set },
    { "del", "KEY", "delete KEY", "A missing key exits 1.\n", 1, 1, 0, 0,
      cmd_del },
    { "stats", "[SECTION]", "print the node's (or the cluster's) statistics",
      "Aligned name/value lines, nested sections as section.name; with\n"
      "--json one object: {\"nodes\": [{\"addr\": ..., \"stats\": {...}}]}.\n"
      "With --coordinator, the cluster's CLUSTER_STATS; its migration map on\n"
      "one line: idle or active, partitions done/total (arc, cap), keys\n"
      "moved, and \"churn X.XX of ideal\" when the coordinator sends churn.\n"
      "--watch [S]: print again every S seconds (default 1) until SIGINT or\n"
      "SIGTERM (exit 0), clearing the screen first when stdout is a\n"
      "terminal; with --json one compact object a line.\n",
      0, 1, BRIM_CTL_OPT_JSON | BRIM_CTL_OPT_WATCH, 0, cmd_stats },
    { "ping", "", "one round trip to the node", NULL, 0, 0, 0, 0, cmd_ping },
    { "nodes", "", "list the cluster's members (--coordinator)",
      "Name, address, state, weight, partitions and heartbeat age; --json\n"
      "prints an array of objects with those fields.\n", 0, 0,
      BRIM_CTL_OPT_JSON, 0, cmd_nodes },
    { "leave", "NAME", "drain node NAME out of the cluster (--coordinator)",
      "--force is needed for the last node. Exits 1 with the coordinator's\n"
      "message when it refuses (not a member, the last node).\n"
      "--wait: then poll the cluster's stats every 200 ms, drawing the\n"
      "migration's partitions done/total on stderr (a bar on a terminal,\n"
      "else a line a second), until NAME is no longer listed and no\n"
      "migration runs; after --timeout S seconds (default 120) exit 2.\n",
      1, 1, BRIM_CTL_OPT_FORCE | BRIM_CTL_OPT_WAIT | BRIM_CTL_OPT_TIMEOUT
                | BRIM_CTL_OPT_PROGRESS, 1, cmd_leave },
    { "plan", "join|leave NAME", "what a join or leave would move "
      "(--coordinator)",
      "plan join NAME [--weight W], plan leave NAME: the coordinator's\n"
      "estimate, nothing moves.\n", 2, 2,
      BRIM_CTL_OPT_JSON | BRIM_CTL_OPT_WEIGHT, 1, cmd_plan },
    { "flush", "", "drop every item of the node (admin)", NULL, 0, 0,
      BRIM_CTL_OPT_DELAY, 1, cmd_flush },
    { "import", "FILE|-", "store the records of FILE (-: stdin), batched",
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
      1, 1, BRIM_CTL_OPT_FORMAT | BRIM_CTL_OPT_KEY_FIELD
                | BRIM_CTL_OPT_PREFIX | BRIM_CTL_OPT_PROGRESS
                | BRIM_CTL_OPT_TTL | BRIM_CTL_OPT_FLAGS, 0, brim_ctl_import },
    { "verify", "FILE|-", "read FILE's keys back and compare with its "
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
      1, 1, BRIM_CTL_OPT_FORMAT | BRIM_CTL_OPT_KEY_FIELD
                | BRIM_CTL_OPT_PREFIX | BRIM_CTL_OPT_PROGRESS
                | BRIM_CTL_OPT_LOOP | BRIM_CTL_OPT_DURATION
                | BRIM_CTL_OPT_RATE, 0, brim_ctl_verify },
    { NULL, NULL, NULL, NULL, 0, 0, 0, 0, NULL }
};
