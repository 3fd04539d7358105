/*
 * tests/cluster/client_node.h - helpers of the libbrim process-level tests:
 * start a real brim-node (the binary named by $BRIM_NODE_BIN) on a free
 * loopback port and stop it by PID, and a scripted fake node in a thread
 * for the faults a real node never makes (malformed replies, wrong ids,
 * RETRY, MOVED, silence, closing after a request). Every wait is bounded.
 */
#ifndef BRIM_TESTS_CLUSTER_CLIENT_NODE_H
#define BRIM_TESTS_CLUSTER_CLIENT_NODE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto/buf.h"
#include "proto/wire.h"

/* A running brim-node. */
struct client_node {
    pid_t pid;      /* the child, 0 when not running */
    int   port;     /* its loopback port */
    char  addr[32]; /* "127.0.0.1:PORT" */
};

/*
 * Start brim-node --standalone on a free port (a port bound to 0 and
 * closed, tried again if the node could not take it), with the extra
 * arguments EXTRA (NULL-terminated, may be NULL), and wait until it
 * accepts connections (at most 10 s). Aborts the test on failure.
 */
void client_node_start(struct client_node *node, const char *const *extra);

/* As client_node_start(), on NODE->port (a restart on the same port). */
void client_node_start_on(struct client_node *node, const char *const *extra);

/* SIGTERM, then SIGKILL after 3 s; reaps the child. 0 pid: nothing. */
void client_node_stop(struct client_node *node);

/* A loopback port nothing is bound to now, below the ephemeral range so
 * no outgoing connection takes it before the node binds it, from a random
 * start (tests/support/ports.py's rule, without its reservation files).
 * Aborts the test when none of 500 tries is free. */
int client_free_port(void);

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t client_now_ms(void);

/* ---- the fake node ---- */

/* What the fake does with one request (the script's answer). */
enum client_fake_act {
    CLIENT_FAKE_REPLY = 0, /* send OUT's bytes (the script's reply) */
    CLIENT_FAKE_SILENT,    /* send nothing, keep reading */
    CLIENT_FAKE_CLOSE      /* send OUT's bytes, then close */
};

struct client_fake;

/*
 * The fake's script: answer REQ (decoded; HELLO is answered before the
 * script sees anything) on connection number CONN (0, 1, ...) by appending
 * frames to OUT. Runs on the fake's thread.
 */
typedef int (*client_fake_fn)(struct client_fake *f, int conn,
                              const struct brim_req *req, struct brim_buf *out);

/* A fake node listening on a loopback port, one connection at a time. */
struct client_fake {
    int            lfd;          /* listening socket */
    int            port;         /* its port */
    char           addr[32];     /* "127.0.0.1:PORT" */
    client_fake_fn script;       /* what to answer */
    void          *arg;          /* the script's state */
    int            answer_hello; /* 0: stay silent on HELLO too */
    int            conns;        /* connections accepted so far */
    int            requests;     /* requests seen (HELLO excluded) */
    volatile int   stop;         /* set by client_fake_stop() */
    pthread_t      thread;       /* serves until STOP */
};

/* Listen on a free port and serve with SCRIPT on a new thread. */
void client_fake_start(struct client_fake *f, client_fake_fn script, void *arg);

/* Stop the thread and close the sockets. */
void client_fake_stop(struct client_fake *f);

/* Append the OK reply to REQ with no payload fields set but its shape's
 * zero values (CAS 0, empty value...). Returns 0. */
int client_fake_ok(const struct brim_req *req, struct brim_buf *out);

/* Append the error reply STATUS (wire BRIM_E*) to REQ. Returns 0. */
int client_fake_err(const struct brim_req *req, int status,
                    struct brim_buf *out);

#endif /* BRIM_TESTS_CLUSTER_CLIENT_NODE_H */
