/*
 * client/lib/stats.c - brim_stats(): one STATS request, and a walk over
 * the map it returns that hands each name/value pair to the caller's
 * callback as a struct brim_stat (numbers typed, plus their text). The
 * map's shape is the node's business; anything that is not a scalar or a
 * one-level map of scalars is skipped, never trusted.
 */
#include "client/lib/client_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/units.h"
#include "proto/ops.h"

/* Longest stat and section name handed to the callback (longer: cut). */
#define STATS_NAME_MAX 127

/* The walk's state, STATS's ON_REPLY argument. */
struct stats_walk {
    const char   *node;                        /* reporting node */
    brim_stats_cb cb;                          /* the caller's */
    void         *arg;                         /* for CB */
    int           stop;                        /* CB's non-zero answer */
    char          section[STATS_NAME_MAX + 1]; /* current nested map */
};

/* Copy the str/bin O into NAME, cut to STATS_NAME_MAX; 0 or -1. */
static int
stats_name(const msgpack_object *o, char name[STATS_NAME_MAX + 1])
{
    const char *p;
    size_t      n;

    if (o->type == MSGPACK_OBJECT_STR) {
        p = o->via.str.ptr;
        n = o->via.str.size;
    } else if (o->type == MSGPACK_OBJECT_BIN) {
        p = o->via.bin.ptr;
        n = o->via.bin.size;
    } else {
        return -1;
    }
    n = BRIM_MIN(n, STATS_NAME_MAX);
    memcpy(name, p, n);
    name[n] = '\0';
    return 0;
}

/*
 * Fill ST from the scalar O, with its text in TEXT (TEXT_SIZE bytes; a
 * string value is copied to *OWNED, freed by the caller). Returns 0, 1
 * (not a scalar: skip it) or BRIM_ENOMEM.
 */
static int
stats_value(const msgpack_object *o, struct brim_stat *st, char *text,
            size_t text_size, char **owned)
{
    switch (o->type) {
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        st->kind = BRIM_STAT_U64;
        st->u64 = o->via.u64;
        snprintf(text, text_size, "%" PRIu64, st->u64);
        break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        st->kind = BRIM_STAT_I64;
        st->i64 = o->via.i64;
        snprintf(text, text_size, "%" PRId64, st->i64);
        break;
    case MSGPACK_OBJECT_BOOLEAN:
        st->kind = BRIM_STAT_U64;
        st->u64 = o->via.boolean ? 1 : 0;
        snprintf(text, text_size, "%" PRIu64, st->u64);
        break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        st->kind = BRIM_STAT_F64;
        st->f64 = o->via.f64;
        brim_format_decimal(st->f64, text, text_size); /* no exponent */
        break;
    case MSGPACK_OBJECT_STR:
    case MSGPACK_OBJECT_BIN:
        st->kind = BRIM_STAT_STR;
        st->str_len =
            o->type == MSGPACK_OBJECT_STR ? o->via.str.size : o->via.bin.size;
        *owned = brim_strndup(o->type == MSGPACK_OBJECT_STR ? o->via.str.ptr
                                                            : o->via.bin.ptr,
                              st->str_len);
        if (*owned == NULL) {
            return BRIM_ENOMEM;
        }
        st->str = *owned;
        st->text = *owned;
        return 0;
    case MSGPACK_OBJECT_NIL:
        st->kind = BRIM_STAT_STR;
        st->str = "";
        st->str_len = 0;
        text[0] = '\0';
        break;
    default:
        return 1;
    }
    st->text = text;
    return 0;
}

/* Hand the pair (K, V) to the callback, in section W->section if set. */
static int
stats_pair(struct stats_walk *w, const msgpack_object *k,
           const msgpack_object *v, int nested)
{
    struct brim_stat st;
    char             name[STATS_NAME_MAX + 1], text[64], *owned;
    int              rc;

    if (stats_name(k, name) != 0) {
        return 0; /* a name that is not text: skip */
    }
    memset(&st, 0, sizeof(st));
    st.node = w->node;
    st.section = nested ? w->section : NULL;
    st.name = name;
    owned = NULL;
    rc = stats_value(v, &st, text, sizeof(text), &owned);
    if (rc == 0) {
        w->stop = w->cb(&st, w->arg);
    }
    brim_free(owned);
    return rc < 0 ? rc : 0;
}

/* ON_REPLY of STATS: walk the map, top-level scalars, then each section. */
static int
stats_reply(struct brim_call *call, const struct brim_rep *rep)
{
    struct stats_walk    *w = call->arg;
    const msgpack_object *m, *sub;
    uint32_t              i, j;
    int                   rc, pass;

    m = rep->stats;
    if (m == NULL || m->type != MSGPACK_OBJECT_MAP) {
        return BRIM_EBADREPLY;
    }
    /* Pass 0 gives the scalars, pass 1 the nested maps, so a reader sees
     * the plain figures first whatever order the node used. */
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < m->via.map.size && w->stop == 0; i++) {
            sub = &m->via.map.ptr[i].val;
            if ((sub->type == MSGPACK_OBJECT_MAP) != pass) {
                continue;
            }
            if (pass == 0) {
                rc = stats_pair(w, &m->via.map.ptr[i].key, sub, 0);
                if (rc != 0) {
                    return rc;
                }
                continue;
            }
            if (stats_name(&m->via.map.ptr[i].key, w->section) != 0) {
                continue;
            }
            for (j = 0; j < sub->via.map.size && w->stop == 0; j++) {
                if (sub->via.map.ptr[j].val.type == MSGPACK_OBJECT_MAP) {
                    continue; /* one level only */
                }
                rc = stats_pair(w, &sub->via.map.ptr[j].key,
                                &sub->via.map.ptr[j].val, 1);
                if (rc != 0) {
                    return rc;
                }
            }
        }
    }
    return 0;
}

int
brim_stats(struct brim_client *c, const char *section_filter, brim_stats_cb cb,
           void *arg)
{
    struct stats_walk w;
    struct brim_call  call;
    size_t            slen;
    int               rc;

    if (c == NULL) {
        return BRIM_EINVAL;
    }
    c->errmsg[0] = '\0';
    slen = section_filter != NULL ? strlen(section_filter) : 0;
    if (cb == NULL || slen > BRIM_WIRE_SECTION_MAX) {
        brim_lib_errmsg(c, "stats: %s",
                        cb == NULL ? "no callback" : "section name too long");
        return BRIM_EINVAL;
    }
    memset(&w, 0, sizeof(w));
    /* The standalone node, or in cluster mode the coordinator (its own
     * STATS; brim_cluster_stats() has every node's figures). */
    w.node = c->home->link.addr;
    w.cb = cb;
    w.arg = arg;
    memset(&call, 0, sizeof(call));
    call.req.op = BRIM_OP_STATS;
    call.req.section = section_filter;
    call.req.section_len = slen;
    call.target = c->home;
    call.on_reply = stats_reply;
    call.arg = &w;
    rc = brim_route_one(c, &call);
    if (rc == 0 && w.stop != 0) {
        return w.stop;
    }
    return rc;
}
