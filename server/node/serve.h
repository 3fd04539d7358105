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
 * Serve the keyed data op REQ (borrowed; its request_id and epoch unused)
 * on the key hashed to H from this node's store, with no connection and
 * no reply (the memcached port's local path). Returns 0 (REP filled as
 * the op's OK reply; a value borrowed from the store until its next
 * change), the store's error (NOTFOUND, NOTSTORED, EXISTS, TOOBIG,
 * NONUMERIC, NOMEM), BRIM_EMOVED (REP->owner: the committed owner's
 * address, borrowed from the topology), BRIM_ERETRY, or BRIM_EAGAIN: the
 * key's partition is arriving here and the key may still be at its old
 * owner, so only brim_node_serve_data()'s path (which asks it) may answer.
 */
int brim_node_serve_here(struct brim_node *node, const struct brim_req *req,
                         uint64_t h, struct brim_rep *rep);

/*
 * Append the error reply of the data op REQ, [STATUS, id, MSG, epoch],
 * to C's output: the node's committed epoch rides with every data reply
 * (PROTOCOL.md 5). A local code travels as NOMEM; MSG may be NULL.
 * Returns 0 or BRIM_ENOMEM.
 */
int brim_node_reply_data_error(struct brim_node *node, struct brim_conn *c,
                               const struct brim_req *req, int status,
                               const char *msg);

/*
 * Append the error reply [STATUS, ID, MSG] to C's output; a local code
 * (AGAIN, SYS, ...) travels as NOMEM. MSG may be NULL. Returns 0 or
 * BRIM_ENOMEM.
 */
int brim_node_reply_error(struct brim_conn *c, uint64_t id, int status,
                          const char *msg);

#endif /* BRIM_SERVER_NODE_SERVE_H */
