/*
 * server/node/dispatch.h - brim-node's request layer: the connection
 * layer's dispatch callback (server/conn.h) for the node's listener.
 * Loop thread only.
 */
#ifndef BRIM_SERVER_NODE_DISPATCH_H
#define BRIM_SERVER_NODE_DISPATCH_H

#include <stddef.h>

#include "server/conn.h"
#include "server/node/node.h"

/*
 * Decode one frame body BODY[0 .. LEN) (borrowed for the call) from C,
 * serve it against the node in C->srv->data, append the reply. Returns
 * 0, or a negative code when the connection must close.
 */
int brim_node_dispatch(struct brim_conn *c, const char *body, size_t len);

#endif /* BRIM_SERVER_NODE_DISPATCH_H */
