/*
 * server/node/mcport.h - the node's memcached port (DESIGN.md section 10,
 * docs/memcached.md): a second listener on the node's loop that speaks
 * memcached's text and meta protocols (proto/mctext.h), with the brim
 * listener's connection layer and bounds. A key this node owns is served
 * from its store with no hop; another node's key goes to its owner as the
 * equivalent brim op (mcfwd.h). Loop thread only.
 */
#ifndef BRIM_SERVER_NODE_MCPORT_H
#define BRIM_SERVER_NODE_MCPORT_H

#include <brim/status.h>

#include "server/conn.h"

struct brim_node;
struct brim_node_config;
struct brim_mcport;

/*
 * Check the memcached port's options in CFG (borrowed) before anything
 * opens: a non-loopback --memcached-listen while the brim port requires a
 * client secret needs --memcached-insecure; --memcached-insecure and
 * --memcached-allow-flush need --memcached-listen. Returns 0, or
 * BRIM_EINVAL with ERRBUF saying why (a usage error).
 */
int brim_mcport_check(const struct brim_node_config *cfg,
                      char                           errbuf[BRIM_ERRBUF_LEN]);

/*
 * Open the port on NODE->cfg.memcached_listen (nothing when it is empty)
 * with the brim listener's settings CFG (copied: the same bounds,
 * backpressure and --buffer-mb; frames and AUTH do not apply). Refuses a non-loopback address while the brim port needs a client
 * secret, unless --memcached-insecure. Returns 0, or BRIM_EINVAL,
 * BRIM_ESYS or BRIM_ENOMEM with ERRBUF saying why. NODE->mc is owned by
 * the node until brim_mcport_destroy().
 */
int brim_mcport_start(struct brim_node                *node,
                      const struct brim_server_config *cfg,
                      char                             errbuf[BRIM_ERRBUF_LEN]);

/* The port's TCP port (after binding port 0), or 0 when there is none. */
int brim_mcport_port(const struct brim_node *node);

/*
 * The node is leaving: stop accepting memcached connections; those open
 * are served until brim_mcport_stop(). Idempotent.
 */
void brim_mcport_leave(struct brim_node *node);

/*
 * The node stops: end the memcached connections gracefully first (each
 * stops reading, answers the commands it has read, forwards included,
 * sends the replies and closes; server/conn.h brim_server_drain()), at
 * most the forward timeout (--memcached-timeout-ms) and 500 ms more,
 * then call DONE(NODE). Returns 1 when DONE will be called, 0 (DONE not
 * called) when there is no memcached port or no connection open.
 */
int brim_mcport_drain(struct brim_node *node,
                      void (*done)(struct brim_node *node));

/* 1 while a brim_mcport_drain() runs (its DONE not yet called), else 0. */
int brim_mcport_draining(const struct brim_node *node);

/*
 * The memcached port's server-side latency histogram of command KIND
 * (enum brim_mctext_kind), from the command parsed to its answer whole
 * (forwards included; before earlier replies on the connection are
 * sent), in node.h's buckets. NULL when NODE has no memcached port or
 * KIND names no command. Borrowed: valid while the node runs.
 */
const struct brim_node_lat *brim_mcport_latency(const struct brim_node *node,
                                                uint32_t                kind);

/* Close the listener and every memcached connection (the node stops). */
void brim_mcport_stop(struct brim_node *node);

/* Free the port once the loop has run its close callbacks. */
void brim_mcport_destroy(struct brim_node *node);

#endif /* BRIM_SERVER_NODE_MCPORT_H */
