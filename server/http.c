/*
 * server/http.c - the daemons' HTTP port over libh2o's libuv back end
 * (Debian's libh2o-dev 2.2.5; its libh2o.so is the libuv flavour and
 * links Debian's libuv1). h2o parses HTTP and keeps its own per-request
 * memory; this file owns the listener, the connection cap, the routes and
 * the shutdown. Why h2o and not libmicrohttpd: it runs on the daemon's
 * own loop, so a handler reads the same counters STATS reads at the same
 * moment, with no thread and no snapshot (docs/design.md, "HTTP").
 */
#include "server/http.h"

#include <stdlib.h>
#include <string.h>

#include <h2o.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "server/conn.h"

/* Defaults of struct brim_http_config. */
#define HTTP_MAX_CONNS_DEFAULT 64u
#define HTTP_REQ_TIMEOUT_MS_DEFAULT 5000u
/* Only GETs are served: a request body above this is refused (413). */
#define HTTP_MAX_BODY_BYTES 4096u
/* HTTP/2 connections get this long to end after a shutdown. */
#define HTTP_H2_GRACE_MS 500u

/* A route's h2o handler. */
struct http_handler {
    h2o_handler_t                 super; /* h2o's; must be first */
    struct brim_http             *http;  /* the server */
    const struct brim_http_route *route; /* what it serves */
};

/* One accepted TCP connection; h2o owns it from h2o_accept() on. */
struct http_sock {
    uv_tcp_t          tcp;  /* h2o sets tcp.data to its socket */
    struct brim_http *http; /* the server */
};

struct brim_http {
    uv_tcp_t                      listener;   /* the listening socket */
    h2o_globalconf_t              config;     /* h2o's settings, the routes */
    h2o_context_t                 ctx;        /* h2o on our loop */
    h2o_accept_ctx_t              accept_ctx; /* what h2o_accept() needs */
    struct brim_http_config       cfg;        /* bounds */
    struct brim_http_stats        stats;      /* counters */
    const struct brim_http_route *routes;     /* borrowed */
    void                         *arg;        /* the handlers' */
    int                           ctx_live;   /* ctx initialised, not
                                                 disposed */
    int                           stopping;   /* brim_http_stop() called */
};

/* The reason phrase of a status a route answers. */
static const char *
http_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 307:
        return "Temporary Redirect";
    case 503:
        return "Service Unavailable";
    default:
        return "";
    }
}

static int
http_on_req(h2o_handler_t *self, h2o_req_t *req)
{
    struct http_handler   *hh = (struct http_handler *) self;
    struct brim_buf        body;
    struct brim_http_reply rep;
    int                    rc;

    /* RFC 9112 3.2.1: a GET's target here is origin-form ("/metrics");
     * h2o normalizes "metrics" to "/metrics" all the same, and that is
     * refused, not served (h2o answers absolute-form with 404 itself). */
    if (req->path.len == 0 || req->path.base[0] != '/') {
        h2o_send_error_generic(req, 400, "Bad Request",
                               "the request target must start with '/'\n", 0);
        return 0;
    }
    /* h2o matches a path's prefix; only the path itself is served. */
    if (!h2o_memis(req->path_normalized.base, req->path_normalized.len,
                   hh->route->path, strlen(hh->route->path)))
    {
        return -1; /* h2o answers 404 */
    }
    if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"))
        && !h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")))
    {
        /* RFC 9110 15.5.6: a 405 names the methods the resource has. */
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL,
                       H2O_STRLIT("GET, HEAD"));
        h2o_send_error_generic(req, 405, "Method Not Allowed",
                               "only GET and HEAD\n",
                               H2O_SEND_ERROR_KEEP_HEADERS);
        return 0;
    }
    brim_buf_init(&body);
    memset(&rep, 0, sizeof(rep));
    rep.body = &body;
    rep.ctype = "text/plain; charset=utf-8";
    rep.status = 200;
    rc = hh->route->fn(hh->http->arg, &rep);
    if (rc != 0) {
        brim_buf_destroy(&body);
        h2o_send_error_generic(req, rc == BRIM_ENOMEM ? 503 : 500,
                               rc == BRIM_ENOMEM ? "Service Unavailable"
                                                 : "Internal Server Error",
                               brim_strerror(rc), 0);
        return 0;
    }
    hh->http->stats.requests++;
    req->res.status = rep.status;
    req->res.reason = http_reason(rep.status);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL,
                   rep.ctype, strlen(rep.ctype));
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CACHE_CONTROL, NULL,
                   H2O_STRLIT("no-store"));
    if (rep.location[0] != '\0') {
        /* h2o keeps a pointer: the value must live in the request's pool. */
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_LOCATION, NULL,
                       h2o_strdup(&req->pool, rep.location, SIZE_MAX).base,
                       strlen(rep.location));
    }
    req->res.content_length = body.len;
    h2o_send_inline(req, body.data != NULL ? body.data : "", body.len);
    brim_buf_destroy(&body); /* h2o_send_inline() copied it */
    return 0;
}

/* Dispose of H's h2o context once no connection is left. h2o's graceful
 * HTTP/2 shutdown leaves its timer armed even with no connection; its
 * timeouts must be empty when disposed. */
static void
http_dispose(struct brim_http *h)
{
    if (!h->ctx_live) {
        return;
    }
    h->ctx_live = 0;
    if (h2o_timeout_is_linked(&h->ctx.http2._graceful_shutdown_timeout)) {
        h2o_timeout_unlink(&h->ctx.http2._graceful_shutdown_timeout);
    }
    h2o_context_dispose(&h->ctx);
}

/* h2o is done with a connection: the last thing that refers to it. */
static void
http_sock_close_cb(uv_handle_t *handle)
{
    struct http_sock *s = BRIM_CONTAINER_OF(handle, struct http_sock, tcp);
    struct brim_http *h = s->http;

    brim_free(s);
    h->stats.conns_current--;
    if (h->stopping && h->stats.conns_current == 0) {
        http_dispose(h);
    }
}

/* A connection refused at once (the cap): never given to h2o. */
static void
http_refused_close_cb(uv_handle_t *handle)
{
    brim_free(BRIM_CONTAINER_OF(handle, struct http_sock, tcp));
}

static void
http_accept_cb(uv_stream_t *listener, int status)
{
    struct brim_http *h =
        BRIM_CONTAINER_OF(listener, struct brim_http, listener);
    struct http_sock *s;
    h2o_socket_t     *sock;

    if (status != 0 || h->stopping) {
        return;
    }
    s = brim_malloc(sizeof(*s));
    if (s == NULL) {
        return; /* the kernel keeps it queued; tried on the next accept */
    }
    s->http = h;
    uv_tcp_init(listener->loop, &s->tcp);
    if (uv_accept(listener, (uv_stream_t *) &s->tcp) != 0) {
        uv_close((uv_handle_t *) &s->tcp, http_refused_close_cb);
        return;
    }
    if (h->stats.conns_current >= h->cfg.max_conns) {
        h->stats.conns_refused++;
        uv_close((uv_handle_t *) &s->tcp, http_refused_close_cb);
        return;
    }
    h->stats.conns_current++;
    h->stats.conns_total++;
    sock = h2o_uv_socket_create((uv_stream_t *) &s->tcp, http_sock_close_cb);
    h2o_accept(&h->accept_ctx, sock);
}

/* A listener that failed to bind: H goes with its handle. */
static void
http_listener_free_cb(uv_handle_t *handle)
{
    brim_free(BRIM_CONTAINER_OF(handle, struct brim_http, listener));
}

/* h2o's settings and the routes, before the context is made. */
static void
http_configure(struct brim_http *h)
{
    h2o_hostconf_t      *host;
    h2o_pathconf_t      *path;
    struct http_handler *hh;
    size_t               i;

    h2o_config_init(&h->config);
    h->config.server_name = h2o_iovec_init(H2O_STRLIT("brim"));
    h->config.max_request_entity_size = HTTP_MAX_BODY_BYTES;
    /* h2o's timeout runs from the start of each request to its end, so a
     * client that trickles its header is closed in time too. */
    h->config.http1.req_timeout = h->cfg.req_timeout_ms;
    h->config.http1.upgrade_to_http2 = 0;
    h->config.http2.idle_timeout = h->cfg.req_timeout_ms;
    h->config.http2.graceful_shutdown_timeout = HTTP_H2_GRACE_MS;
    h->config.http2.max_concurrent_requests_per_connection = 4;
    host = h2o_config_register_host(
        &h->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    for (i = 0; h->routes[i].path != NULL; i++) {
        path = h2o_config_register_path(host, h->routes[i].path, 0);
        hh = (struct http_handler *) h2o_create_handler(path, sizeof(*hh));
        hh->super.on_req = http_on_req;
        hh->http = h;
        hh->route = &h->routes[i];
    }
}

int
brim_http_start(struct brim_http **out, uv_loop_t *loop, const char *addr,
                const struct brim_http_config *cfg,
                const struct brim_http_route *routes, void *arg,
                char errbuf[BRIM_ERRBUF_LEN])
{
    struct sockaddr_storage sa;
    struct brim_http       *h;
    int                     rc;

    *out = NULL;
    if (addr[0] == '\0') {
        return 0; /* no HTTP port */
    }
    if (brim_addr_parse(addr, &sa) != 0) {
        brim_errfmt(errbuf, "http: \"%.64s\" is not HOST:PORT", addr);
        return BRIM_EINVAL;
    }
    h = brim_calloc(1, sizeof(*h));
    if (h == NULL) {
        brim_errfmt(errbuf, "http: out of memory");
        return BRIM_ENOMEM;
    }
    h->cfg = *cfg;
    if (h->cfg.max_conns == 0) {
        h->cfg.max_conns = HTTP_MAX_CONNS_DEFAULT;
    }
    if (h->cfg.req_timeout_ms == 0) {
        h->cfg.req_timeout_ms = HTTP_REQ_TIMEOUT_MS_DEFAULT;
    }
    h->routes = routes;
    h->arg = arg;
    uv_tcp_init(loop, &h->listener);
    rc = uv_tcp_bind(&h->listener, (const struct sockaddr *) &sa, 0);
    if (rc == 0) {
        rc = uv_listen((uv_stream_t *) &h->listener, 128, http_accept_cb);
    }
    if (rc != 0) {
        brim_errfmt(errbuf, "http: cannot listen on %s: %s", addr,
                    uv_strerror(rc));
        uv_close((uv_handle_t *) &h->listener, http_listener_free_cb);
        return BRIM_ESYS;
    }
    http_configure(h);
    h2o_context_init(&h->ctx, loop, &h->config);
    h->ctx_live = 1;
    h->accept_ctx.ctx = &h->ctx;
    h->accept_ctx.hosts = h->config.hosts;
    *out = h;
    return 0;
}

int
brim_http_port(const struct brim_http *h)
{
    struct sockaddr_storage sa;
    int                     len = (int) sizeof(sa);

    if (h == NULL
        || uv_tcp_getsockname(&h->listener, (struct sockaddr *) &sa, &len) != 0)
    {
        return 0;
    }
    if (sa.ss_family == AF_INET6) {
        return ntohs(((struct sockaddr_in6 *) &sa)->sin6_port);
    }
    return ntohs(((struct sockaddr_in *) &sa)->sin_port);
}

void
brim_http_get_stats(const struct brim_http *h, struct brim_http_stats *s)
{
    if (h == NULL) {
        memset(s, 0, sizeof(*s));
        return;
    }
    *s = h->stats;
}

void
brim_http_stop(struct brim_http *h)
{
    if (h == NULL || h->stopping) {
        return;
    }
    h->stopping = 1;
    uv_close((uv_handle_t *) &h->listener, NULL);
    /* HTTP/2 connections get a GOAWAY; HTTP/1 ones end after the
     * response in progress. Those waiting for a request (idle keep-alive
     * ones, a scraper's) would wait for their request timeout: run it
     * now as if it had come, so that the loop can end at once. The
     * context goes with the last connection (http_sock_close_cb). */
    h2o_context_request_shutdown(&h->ctx);
    h2o_timeout_run(h->ctx.loop, &h->ctx.http1.req_timeout,
                    uv_now(h->ctx.loop) + h->ctx.http1.req_timeout.timeout);
    if (h->stats.conns_current == 0) {
        http_dispose(h);
    }
}

void
brim_http_free(struct brim_http *h)
{
    if (h == NULL) {
        return;
    }
    http_dispose(h);
    h2o_config_dispose(&h->config);
    brim_free(h);
}
