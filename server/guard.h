/*
 * server/guard.h - AUTH's accepting side, shared by brim-node and
 * brim-coord (PROTOCOL.md section 12): it answers AUTH's challenge and
 * checks the proof that follows, decides which ops a connection may send
 * before it has proven a secret, counts refusals and closes connections
 * at once past a budget of failed proofs per listener. The proofs are
 * proto/auth.h's; the per-connection state lives in struct brim_conn
 * (auth). Each daemon's dispatch calls brim_guard_request() once per
 * decoded request. Loop thread only.
 */
#ifndef BRIM_SERVER_GUARD_H
#define BRIM_SERVER_GUARD_H

#include <stdint.h>

#include <uv.h>

#include "proto/auth.h"
#include "proto/wire.h"
#include "server/conn.h"

/* Failed proofs one listener accepts per second; past them, a connection
 * that sends AUTH is closed at once (PROTOCOL.md 12.4). */
#define BRIM_GUARD_FAILS_PER_S 20

/* Where a connection's AUTH stands (struct brim_conn_auth.state). */
enum brim_guard_state {
    BRIM_GUARD_NONE = 0,   /* nothing proven */
    BRIM_GUARD_CHALLENGED, /* challenge answered; proof awaited */
    BRIM_GUARD_PROVEN      /* its HELLO role may be trusted */
};

/* Whose secret a connection proved (struct brim_conn_auth.scope). */
enum brim_guard_scope {
    BRIM_GUARD_CLUSTER = 1, /* the cluster's: every op */
    BRIM_GUARD_CLIENT = 2   /* the clients': no cluster op */
};

/* Counters of one listener's authentication (STATS auth_*). */
struct brim_guard_stats {
    uint64_t ok;           /* connections that proved a secret */
    uint64_t failures;     /* refusals: proofs wrong, malformed or
                                       abandoned, ops sent without one */
    uint64_t rate_limited; /* connections closed at once: the
                                       failed-proof budget was spent */
    uint64_t out_failures; /* our own outgoing handshakes that
                                       failed (server/peer.h counts them
                                       here) */
};

/* The accepting side of one listener, with the daemon's secrets. Caller's
 * memory. */
struct brim_guard {
    uv_loop_t                     *loop;          /* borrowed: the clock */
    struct brim_auth_secret        keys[2];       /* as read: the cluster's,
                                                     the clients' */
    const struct brim_auth_secret *secret;        /* KEYS[0], or NULL */
    const struct brim_auth_secret *client_secret; /* KEYS[1], or NULL */
    uint32_t                       self_role;     /* our role in HELLO's
                                                     reply: NODE or COORD */
    uint32_t                       fails_per_s;   /* the budget */
    uint64_t                       window_ms;     /* this second's start */
    uint32_t                       window_fails;  /* failed proofs in it */
    uint64_t                       log_ms;        /* last refusal logged */
    uint64_t                       log_skipped;   /* refusals not logged */
    struct brim_guard_stats        stats;         /* counters */
};

/*
 * Set G up, without secrets, for a listener of a daemon whose HELLO reply
 * says SELF_ROLE: every op is allowed as before AUTH existed, and AUTH is
 * refused.
 */
void brim_guard_init(struct brim_guard *g, uv_loop_t *loop, uint32_t self_role);

/*
 * Config setter of --secret-file and --client-secret-file: ARG into PATH
 * (PATH_LEN bytes). Returns NULL or a static message (nginx's habit).
 */
const char *brim_guard_path_set(char *path, size_t path_len, const char *arg);

/*
 * Read G's secrets once, at start (proto/auth_file.h's rules): the
 * cluster's from SECRET_FILE and the clients' from CLIENT_FILE, each ""
 * for none; a client secret needs a cluster secret. Logs which are in
 * force, never their bytes. Returns 0, or BRIM_EINVAL or BRIM_ESYS with
 * ERRBUF saying why.
 */
int brim_guard_load(struct brim_guard *g, const char *secret_file,
                    const char *client_file, char errbuf[BRIM_ERRBUF_LEN]);

/* Wipe G's secrets (the daemon is exiting). */
void brim_guard_destroy(struct brim_guard *g);

/*
 * The gate for REQ, decoded on C, whose HELLO said ROLE (0: none yet).
 * HELLO resets C's authentication (a proof holds for the role it was
 * made for) and goes on to the daemon; AUTH is answered here; any other
 * op that C may not send yet is answered DENIED here (PROTOCOL.md 12.3).
 * Returns 0 (the daemon serves REQ), 1 (answered here; C may be closing)
 * or BRIM_ENOMEM.
 */
int brim_guard_request(struct brim_guard *g, struct brim_conn *c, uint32_t role,
                       const struct brim_req *req);

/* C is going away (server/conn.c calls it): a challenge left without its
 * proof counts as a failed proof. */
void brim_guard_closed(struct brim_guard *g, struct brim_conn *c);

/* brim_guard_closed() as a listener's brim_conn_gone_fn (conn.h): set a
 * server's GONE to it and GONE_ARG to the guard. */
void brim_guard_conn_gone(void *guard, struct brim_conn *c);

#endif /* BRIM_SERVER_GUARD_H */
