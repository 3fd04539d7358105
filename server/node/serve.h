/*
 * server/node/serve.h - the data ops a node serves (GET, GAT, SET, ADD,
 * REPLACE, CAS, APPEND, PREPEND, DEL, TOUCH, INCR, DECR, MGET): routed by
 * the node's epoch, run against its store, answered. Loop thread only.
 */
#ifndef BRIM_SERVER_NODE_SERVE_H
#define BRIM_SERVER_NODE_SERVE_H

#include <stdint.h>

#include "proto/wire.h"
#include "server/conn.h"
#include "server/node/node.h"

/*
 * Serve the decoded data op REQ (a keyed op or MGET; borrowed) from C:
 * append its reply to C's output, or defer it (brim_conn_defer()) while
 * the partition's old owner is asked. Returns 0 or BRIM_ENOMEM (the
 * connection cannot go on).
 */
int brim_node_serve_data(struct brim_node *node, struct brim_conn *c,
                         const struct brim_req *req);

/*
 * Append the error reply [STATUS, ID, MSG] to C's output; a local code
 * (AGAIN, SYS, ...) travels as NOMEM. MSG may be NULL. Returns 0 or
 * BRIM_ENOMEM.
 */
int brim_node_reply_error(struct brim_conn *c, uint64_t id, int status,
                          const char *msg);

#endif /* BRIM_SERVER_NODE_SERVE_H */
