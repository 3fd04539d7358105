/*
 * server/node/metrics.h - brim-node's HTTP port (--http-listen, DESIGN.md
 * 11): /metrics in Prometheus's text format, read from the node's STATS
 * reply and its request latency histogram. Loop thread only.
 */
#ifndef BRIM_SERVER_NODE_METRICS_H
#define BRIM_SERVER_NODE_METRICS_H

#include <brim/status.h>

#include "proto/buf.h"
#include "server/node/node.h"

/*
 * Start NODE's HTTP port on NODE->cfg.http_listen when it is set (else do
 * nothing). Returns 0, or an error of brim_http_start() with ERRBUF
 * saying why.
 */
int brim_node_http_start(struct brim_node *node, char errbuf[BRIM_ERRBUF_LEN]);

/* The port it listens on, or 0 when it has none. */
int brim_node_http_port(const struct brim_node *node);

/* Close the HTTP port (brim_http_stop()); idempotent. */
void brim_node_http_stop(struct brim_node *node);

/* Free it once the loop has ended. */
void brim_node_http_free(struct brim_node *node);

/*
 * Append NODE's metrics in Prometheus's text format (version 0.0.4) to
 * OUT: every STATS figure that has a metric (docs/operations.md, "HTTP
 * and metrics"), the requests by op, and the request latency histogram by
 * op. Returns 0 or BRIM_ENOMEM.
 */
int brim_node_metrics(struct brim_node *node, struct brim_buf *out);

#endif /* BRIM_SERVER_NODE_METRICS_H */
