/*
 * server/http.h - the daemons' HTTP port (DESIGN.md 11): libh2o (Debian's
 * libh2o-dev, built on libuv) serving a few GET routes on the daemon's own
 * loop, so a handler reads the daemon's counters with nothing else running
 * meanwhile. HTTP is bounded so that a slow or hostile client cannot delay
 * the data port: a cap on open connections (the rest are closed at once),
 * a request timeout (an idle or slowloris connection is closed when it
 * has not sent a whole request in time), h2o's request-header bound and a
 * small request-body bound. Loop thread only.
 */
#ifndef BRIM_SERVER_HTTP_H
#define BRIM_SERVER_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <brim/status.h>

#include "proto/buf.h"

struct brim_http; /* opaque */

/* The longest Location a route may answer, NUL included. */
#define BRIM_HTTP_LOCATION_MAX 512

/* What a route answers to one GET (or HEAD). */
struct brim_http_reply {
    struct brim_buf *body;   /* an empty buffer, the caller's: the route
                                appends the body with brim_buf_append */
    const char      *ctype;  /* its media type, a static string
                                (text/plain unless the route sets it) */
    int              status; /* 200 unless the route sets another: 307
                                (with LOCATION) or 503 */
    char location[BRIM_HTTP_LOCATION_MAX]; /* the Location header of a
                                              3xx, NUL-terminated; ""
                                              none */
};

/*
 * Fill REP (body, media type, and a status other than 200 when it
 * must) for one GET or HEAD of a route. ARG is brim_http_start()'s.
 * Returns 0, or a negative code, which answers no body of REP's:
 * BRIM_ENOMEM answers 503, anything else 500.
 */
typedef int (*brim_http_route_fn)(void *arg, struct brim_http_reply *rep);

/* One route: requests for exactly PATH (or below it) go to FN. */
struct brim_http_route {
    const char        *path; /* "/metrics"; static */
    brim_http_route_fn fn;   /* fills the reply */
};

/* The HTTP port's bounds. */
struct brim_http_config {
    uint32_t max_conns;      /* open connections; the next is closed at
                                once (0: 64) */
    uint32_t req_timeout_ms; /* a connection gets this long to send each
                                request whole, idle ones included (0:
                                5000) */
};

/* Counters of one HTTP port (STATS http_*, /metrics). */
struct brim_http_stats {
    uint64_t conns_current; /* open now */
    uint64_t conns_total;   /* accepted since start */
    uint64_t conns_refused; /* closed at once: max_conns reached */
    uint64_t requests;      /* requests answered by a route */
};

/*
 * Listen on ADDR ("host:port", as brim_addr_parse()) on LOOP and serve
 * ROUTES (an array ended by a NULL path; borrowed, it must outlive the
 * server) with ARG passed to each handler; CFG is copied. On success *OUT
 * is the new server, or NULL when ADDR is "" (no HTTP port: nothing is
 * started); stop it with brim_http_stop() and free it with
 * brim_http_free() once the loop has run its close callbacks. Returns 0,
 * BRIM_EINVAL (bad address) or BRIM_ESYS (bind or listen failed), with
 * ERRBUF naming the address and the reason, or BRIM_ENOMEM.
 */
int brim_http_start(struct brim_http **out, uv_loop_t *loop, const char *addr,
                    const struct brim_http_config *cfg,
                    const struct brim_http_route *routes, void *arg,
                    char errbuf[BRIM_ERRBUF_LEN]);

/* The port H listens on (after binding port 0), or 0; H may be NULL. */
int brim_http_port(const struct brim_http *h);

/* H's counters (zero when H is NULL). */
void brim_http_get_stats(const struct brim_http *h, struct brim_http_stats *s);

/*
 * Stop H: close the listener and every open connection, so that the loop
 * can end. Idempotent; H may be NULL.
 */
void brim_http_stop(struct brim_http *h);

/* Free H after brim_http_stop() and a uv_run() that closed its handles;
 * NULL is fine. */
void brim_http_free(struct brim_http *h);

#endif /* BRIM_SERVER_HTTP_H */
