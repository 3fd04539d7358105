/*
 * server/prom.h - Prometheus's text exposition format (version 0.0.4,
 * prometheus.io/docs/instrumenting/exposition_formats) for both daemons'
 * /metrics: HELP and TYPE lines, samples, and metrics read from a STATS
 * or CLUSTER_STATS reply by a table, so that /metrics and STATS show the
 * same counters read at the same moment (DESIGN.md 11). No I/O.
 */
#ifndef BRIM_SERVER_PROM_H
#define BRIM_SERVER_PROM_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "proto/buf.h"

/* The media type of the text format. */
#define BRIM_PROM_CTYPE "text/plain; version=0.0.4; charset=utf-8"

/* A metric family's type. */
enum brim_prom_type {
    BRIM_PROM_COUNTER = 0, /* only grows; its name ends in _total */
    BRIM_PROM_GAUGE,       /* goes up and down */
    BRIM_PROM_HISTOGRAM    /* _bucket, _sum, _count */
};

/*
 * One sample taken from a stats map: the value under STAT, times SCALE
 * (0 means 1; 0.001 turns ms into seconds), as metric NAME with LABELS
 * ('reason="arc"', or NULL). Rows of one family are next to each other
 * in a table, and the first carries its TYPE and HELP.
 */
struct brim_prom_metric {
    const char         *stat;   /* STATS name */
    const char         *name;   /* brim_..., Prometheus's conventions */
    const char         *labels; /* label pairs, or NULL */
    enum brim_prom_type type;   /* of the family */
    double              scale;  /* unit conversion; 0: none */
    const char         *help;   /* one line, for the family */
};

/*
 * The AUTH counters of a daemon's listener (PROTOCOL.md 12.4), under the
 * same names in a node's STATS and the coordinator's CLUSTER_STATS
 * "auth": BRIM_PROM_AUTH_ROWS rows.
 */
#define BRIM_PROM_AUTH_ROWS 4
extern const struct brim_prom_metric brim_prom_auth_table[BRIM_PROM_AUTH_ROWS];

/*
 * Append "# HELP NAME HELP" and "# TYPE NAME TYPE" to OUT. Returns 0 or
 * BRIM_ENOMEM.
 */
int brim_prom_family(struct brim_buf *out, const char *name,
                     enum brim_prom_type type, const char *help);

/*
 * Append one sample "NAME{LABELS} V" to OUT (LABELS NULL or "": none; it
 * is written as given). The _f64 form writes V with 16 significant digits
 * (NaN and infinities as Prometheus spells them). Returns 0 or
 * BRIM_ENOMEM.
 */
int brim_prom_u64(struct brim_buf *out, const char *name, const char *labels,
                  uint64_t v);
int brim_prom_f64(struct brim_buf *out, const char *name, const char *labels,
                  double v);

/*
 * Write into LABELS (LEN bytes) the label pair KEY="VALUE" with VALUE
 * escaped as the format requires (backslash, double quote, newline);
 * truncated to fit. Returns LABELS.
 */
char *brim_prom_label(char *labels, size_t len, const char *key,
                      const char *value);

/* The value under NAME (NUL-terminated) in the msgpack map MAP, or NULL
 * (also when MAP is not a map). Borrowed from MAP. */
const msgpack_object *brim_prom_find(const msgpack_object *map,
                                     const char           *name);

/* OBJ (an integer, float or boolean) as a double; 0 for anything else. */
double brim_prom_number(const msgpack_object *obj);

/*
 * Append the N rows of TABLE taken from the stats map MAP: a family's
 * HELP and TYPE before its first sample; a row whose stat is missing
 * from MAP is left out. Returns 0 or BRIM_ENOMEM.
 */
int brim_prom_table(struct brim_buf *out, const msgpack_object *map,
                    const struct brim_prom_metric *table, size_t n);

/* Append a stats reply frame (as brim_wire_stats_begin() starts it:
 * header, then [status, id, map]) to FRAME. Returns 0 or BRIM_ENOMEM. */
typedef int (*brim_prom_build_fn)(void *arg, struct brim_buf *frame);

/* Append to OUT what MAP (the reply's stats map, borrowed for the call)
 * shows. Returns 0 or BRIM_ENOMEM. */
typedef int (*brim_prom_render_fn)(void *arg, const msgpack_object *map,
                                   struct brim_buf *out);

/*
 * Build a daemon's stats reply with BUILD, unpack it, and have RENDER
 * write what it shows into OUT (ARG goes to both), so that an HTTP page
 * shows the very reply a client gets. Returns 0 or BRIM_ENOMEM (also for
 * a frame that is not a stats reply: a bug, not input).
 */
int brim_prom_from_reply(struct brim_buf *out, brim_prom_build_fn build,
                         brim_prom_render_fn render, void *arg);

#endif /* BRIM_SERVER_PROM_H */
