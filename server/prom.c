/*
 * server/prom.c - Prometheus's text exposition format (version 0.0.4):
 * families, samples, escaped labels, and the rows of a table read from a
 * stats map. It only formats; which counters exist is the daemons' (the
 * tables of server/node/metrics.c and server/coord/http.c).
 */
#include "server/prom.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <brim/status.h>

#include "proto/frame.h"

const struct brim_prom_metric brim_prom_auth_table[BRIM_PROM_AUTH_ROWS] = {
    {"auth_ok", "brim_auth_ok_total", NULL, BRIM_PROM_COUNTER, 0,
     "Secrets proven (AUTH) on this daemon's listener."},
    {"auth_failures", "brim_auth_failures_total", NULL, BRIM_PROM_COUNTER, 0,
     "Failed proofs of a secret, and ops refused for want of one."},
    {"auth_rate_limited", "brim_auth_rate_limited_total", NULL,
     BRIM_PROM_COUNTER, 0, "AUTH attempts closed unchecked by the rate limit."},
    {"auth_out_failures", "brim_auth_out_failures_total", NULL,
     BRIM_PROM_COUNTER, 0,
     "This daemon's own proofs to others that failed at their peer."},
};

static int
prom_puts(struct brim_buf *out, const char *s)
{
    return brim_buf_append(out, s, strlen(s));
}

int
brim_prom_family(struct brim_buf *out, const char *name,
                 enum brim_prom_type type, const char *help)
{
    static const char *types[] = {"counter", "gauge", "histogram"};
    int                err;

    err = prom_puts(out, "# HELP ");
    err |= prom_puts(out, name);
    err |= prom_puts(out, " ");
    err |= prom_puts(out, help);
    err |= prom_puts(out, "\n# TYPE ");
    err |= prom_puts(out, name);
    err |= prom_puts(out, " ");
    err |= prom_puts(out, types[type]);
    err |= prom_puts(out, "\n");
    return err != 0 ? BRIM_ENOMEM : 0;
}

/* "NAME{LABELS} " */
static int
prom_head(struct brim_buf *out, const char *name, const char *labels)
{
    int err;

    err = prom_puts(out, name);
    if (labels != NULL && labels[0] != '\0') {
        err |= prom_puts(out, "{");
        err |= prom_puts(out, labels);
        err |= prom_puts(out, "}");
    }
    err |= prom_puts(out, " ");
    return err;
}

int
brim_prom_u64(struct brim_buf *out, const char *name, const char *labels,
              uint64_t v)
{
    char num[32];

    snprintf(num, sizeof(num), "%" PRIu64 "\n", v);
    if (prom_head(out, name, labels) != 0 || prom_puts(out, num) != 0) {
        return BRIM_ENOMEM;
    }
    return 0;
}

int
brim_prom_f64(struct brim_buf *out, const char *name, const char *labels,
              double v)
{
    char num[40];

    if (isnan(v)) {
        snprintf(num, sizeof(num), "NaN\n");
    } else if (isinf(v)) {
        snprintf(num, sizeof(num), "%s\n", v > 0 ? "+Inf" : "-Inf");
    } else {
        snprintf(num, sizeof(num), "%.16g\n", v);
    }
    if (prom_head(out, name, labels) != 0 || prom_puts(out, num) != 0) {
        return BRIM_ENOMEM;
    }
    return 0;
}

char *
brim_prom_label(char *labels, size_t len, const char *key, const char *value)
{
    size_t n;

    n = (size_t) snprintf(labels, len, "%s=\"", key);
    for (; n + 4 < len && *value != '\0'; value++) {
        if (*value == '\\' || *value == '"') {
            labels[n++] = '\\';
            labels[n++] = *value;
        } else if (*value == '\n') {
            labels[n++] = '\\';
            labels[n++] = 'n';
        } else {
            labels[n++] = *value;
        }
    }
    if (n + 2 <= len) {
        labels[n++] = '"';
        labels[n] = '\0';
    }
    return labels;
}

const msgpack_object *
brim_prom_find(const msgpack_object *map, const char *name)
{
    const msgpack_object_kv *kv;
    size_t                   len = strlen(name);
    uint32_t                 i;

    if (map == NULL || map->type != MSGPACK_OBJECT_MAP) {
        return NULL;
    }
    for (i = 0; i < map->via.map.size; i++) {
        kv = &map->via.map.ptr[i];
        if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == len
            && memcmp(kv->key.via.str.ptr, name, len) == 0)
        {
            return &kv->val;
        }
    }
    return NULL;
}

double
brim_prom_number(const msgpack_object *obj)
{
    switch (obj->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        return (double) obj->via.u64;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return (double) obj->via.i64;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        return obj->via.f64;
    case MSGPACK_OBJECT_BOOLEAN:
        return obj->via.boolean ? 1.0 : 0.0;
    default:
        return 0.0;
    }
}

int
brim_prom_table(struct brim_buf *out, const msgpack_object *map,
                const struct brim_prom_metric *table, size_t n)
{
    const struct brim_prom_metric *m;
    const msgpack_object          *v;
    const char                    *family = NULL;
    size_t                         i;
    int                            rc;

    for (i = 0; i < n; i++) {
        m = &table[i];
        v = brim_prom_find(map, m->stat);
        if (v == NULL) {
            continue;
        }
        if (family == NULL || strcmp(family, m->name) != 0) {
            rc = brim_prom_family(out, m->name, m->type, m->help);
            if (rc != 0) {
                return rc;
            }
            family = m->name;
        }
        /* Integers print exactly; scaled values and floats as doubles. */
        if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && m->scale == 0) {
            rc = brim_prom_u64(out, m->name, m->labels, v->via.u64);
        } else {
            rc = brim_prom_f64(out, m->name, m->labels,
                               brim_prom_number(v)
                                   * (m->scale != 0 ? m->scale : 1.0));
        }
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* The stats map of the reply frame FRAME[0 .. LEN), unpacked into U. */
static int
prom_unpack(const char *frame, size_t len, msgpack_unpacked *u,
            const msgpack_object **map)
{
    const msgpack_object *o;
    size_t                off = 0;

    if (len < BRIM_FRAME_HDR
        || msgpack_unpack_next(u, frame + BRIM_FRAME_HDR, len - BRIM_FRAME_HDR,
                               &off)
            != MSGPACK_UNPACK_SUCCESS)
    {
        return BRIM_EBADREQ;
    }
    o = &u->data;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3
        || o->via.array.ptr[2].type != MSGPACK_OBJECT_MAP)
    {
        return BRIM_EBADREQ;
    }
    *map = &o->via.array.ptr[2];
    return 0;
}

int
brim_prom_from_reply(struct brim_buf *out, brim_prom_build_fn build,
                     brim_prom_render_fn render, void *arg)
{
    struct brim_buf       frame;
    msgpack_unpacked      u;
    const msgpack_object *map;
    int                   rc;

    brim_buf_init(&frame);
    msgpack_unpacked_init(&u);
    rc = build(arg, &frame);
    if (rc == 0) {
        rc = prom_unpack(frame.data, frame.len, &u, &map);
    }
    if (rc == 0) {
        rc = render(arg, map, out);
    }
    msgpack_unpacked_destroy(&u);
    brim_buf_destroy(&frame);
    return rc != 0 ? BRIM_ENOMEM : 0;
}
