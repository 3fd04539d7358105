/*
 * server/guard.c - AUTH's accepting side (server/guard.h, PROTOCOL.md 12).
 * A challenge gets a fresh nonce and our proof; the proof that follows
 * must match the client's MAC over the same nonces and both roles. A
 * wrong, malformed or abandoned proof is one failure of the listener's
 * budget and ends the connection; past the budget, AUTH closes at once
 * without touching a MAC. Ops that need a proof are refused DENIED while
 * the connection stays open, and counted. Refusals are logged at most once
 * a second per listener (a flood must not flood the log).
 */
#include "server/guard.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/defs.h"
#include "proto/auth_file.h"
#include "server/log.h"

#define GUARD_LOG_EVERY_MS 1000u

void
brim_guard_init(struct brim_guard *g, uv_loop_t *loop, uint32_t self_role)
{
    memset(g, 0, sizeof(*g));
    g->loop = loop;
    g->self_role = self_role;
    g->fails_per_s = BRIM_GUARD_FAILS_PER_S;
}

const char *
brim_guard_path_set(char *path, size_t path_len, const char *arg)
{
    if (arg[0] == '\0' || strlen(arg) >= path_len) {
        return "want a file name of 1 to 1023 bytes";
    }
    memcpy(path, arg, strlen(arg) + 1);
    return NULL;
}

int
brim_guard_load(struct brim_guard *g, const char *secret_file,
                const char *client_file, char errbuf[BRIM_ERRBUF_LEN])
{
    char why[BRIM_ERRBUF_LEN];
    int  rc;

    if (client_file[0] != '\0' && secret_file[0] == '\0') {
        brim_errfmt(errbuf,
                    "--client-secret-file needs --secret-file (the "
                    "cluster's own links must be proven first)");
        return BRIM_EINVAL;
    }
    if (secret_file[0] == '\0') {
        return 0;
    }
    /* The reason names the option, as the user typed it: which of the
     * two files is wrong is not in the path. */
    why[0] = '\0';
    rc = brim_auth_file_read(secret_file, &g->keys[0], why);
    if (rc != 0) {
        brim_errfmt(errbuf, "--secret-file: %s", why);
    } else if (client_file[0] != '\0') {
        rc = brim_auth_file_read(client_file, &g->keys[1], why);
        if (rc != 0) {
            brim_errfmt(errbuf, "--client-secret-file: %s", why);
        }
    }
    if (rc != 0) {
        brim_guard_destroy(g);
        return rc;
    }
    g->secret = &g->keys[0];
    g->client_secret = client_file[0] != '\0' ? &g->keys[1] : NULL;
    brim_log_info("auth: cluster secret from %s: cluster links and admin "
                  "ops are proven (AUTH)%s",
                  secret_file,
                  g->client_secret != NULL ? "; clients prove theirs" : "");
    return 0;
}

void
brim_guard_destroy(struct brim_guard *g)
{
    brim_auth_secret_wipe(&g->keys[0]);
    brim_auth_secret_wipe(&g->keys[1]);
    g->secret = g->client_secret = NULL;
}

/* Log one refusal of C (WHAT says which), or count it as skipped: at
 * most one line a second per listener. */
static void
guard_log(struct brim_guard *g, const struct brim_conn *c, const char *what)
{
    uint64_t now = uv_now(g->loop);

    if (g->log_ms != 0 && now - g->log_ms < GUARD_LOG_EVERY_MS) {
        g->log_skipped++;
        return;
    }
    brim_log_warn("%s: %s (%" PRIu64 " more refusals not logged since the "
                  "last line; auth_failures %" PRIu64
                  ", auth_rate_limited %" PRIu64 ")",
                  c->peer, what, g->log_skipped, g->stats.failures,
                  g->stats.rate_limited);
    g->log_ms = now;
    g->log_skipped = 0;
}

/* The budget's window of one second, restarted when it is over. */
static void
guard_window(struct brim_guard *g)
{
    uint64_t now = uv_now(g->loop);

    if (now - g->window_ms >= 1000) {
        g->window_ms = now;
        g->window_fails = 0;
    }
}

/* A failed proof: counted, charged to the budget, C's state forgotten. */
static void
guard_failed(struct brim_guard *g, struct brim_conn *c, const char *what)
{
    guard_window(g);
    g->window_fails++;
    g->stats.failures++;
    OPENSSL_cleanse(&c->auth, sizeof(c->auth));
    guard_log(g, c, what);
}

void
brim_guard_closed(struct brim_guard *g, struct brim_conn *c)
{
    if (c->auth.state == BRIM_GUARD_CHALLENGED) {
        guard_failed(g, c,
                     "auth: closed after the challenge, without a "
                     "proof (a peer with another secret does that)");
    }
}

void
brim_guard_conn_gone(void *guard, struct brim_conn *c)
{
    brim_guard_closed(guard, c);
}

/* The secret a connection of ROLE proves, and its scope; NULL: none. */
static const struct brim_auth_secret *
guard_key(const struct brim_guard *g, uint32_t role,
          enum brim_guard_scope *scope)
{
    if (role == BRIM_ROLE_CLIENT && g->client_secret != NULL) {
        *scope = BRIM_GUARD_CLIENT;
        return g->client_secret;
    }
    *scope = BRIM_GUARD_CLUSTER;
    return g->secret;
}

static int
guard_reply(struct brim_conn *c, uint64_t id, int status, const char *msg)
{
    int rc;

    rc =
        brim_wire_encode_status(brim_conn_out(c), id, status, msg, strlen(msg));
    return rc == 0 ? 1 : rc;
}

/* Refuse the proof of REQ on C: DENIED with its id, then close. */
static int
guard_refuse(struct brim_guard *g, struct brim_conn *c,
             const struct brim_req *req, const char *what)
{
    int rc;

    guard_failed(g, c, what);
    rc = guard_reply(c, req->request_id, BRIM_EDENIED, what);
    brim_conn_drain(c);
    return rc;
}

/* AUTH's challenge: a fresh nonce_s and our proof over both nonces. */
static int
guard_challenge(struct brim_guard *g, struct brim_conn *c, uint32_t role,
                const struct brim_req *req)
{
    const struct brim_auth_secret *key;
    enum brim_guard_scope          scope;
    struct brim_rep                rep;
    uint8_t                        mac[BRIM_AUTH_MAC_BYTES];
    int                            rc;

    if (c->auth.state == BRIM_GUARD_CHALLENGED) {
        /* Each challenge costs a MAC: one left unproven is a failure. */
        guard_failed(g, c, "auth: a second challenge without a proof");
    }
    OPENSSL_cleanse(&c->auth, sizeof(c->auth));
    key = guard_key(g, role, &scope);
    if (key == NULL) {
        return guard_reply(c, req->request_id, BRIM_EDENIED,
                           "auth: no secret is configured here "
                           "(--secret-file)");
    }
    memcpy(c->auth.nonce_c, req->auth, BRIM_AUTH_NONCE_BYTES);
    if (brim_auth_nonce(c->auth.nonce_s) != 0
        || brim_auth_mac(key, BRIM_AUTH_SERVER, c->auth.nonce_c,
                         c->auth.nonce_s, role, g->self_role, mac)
            != 0)
    {
        OPENSSL_cleanse(&c->auth, sizeof(c->auth));
        brim_log_error("auth: libcrypto failed (RAND_bytes or HMAC)");
        return guard_reply(c, req->request_id, BRIM_EBUSY,
                           "auth: cannot make a nonce now");
    }
    c->auth.state = BRIM_GUARD_CHALLENGED;
    c->auth.role = (uint8_t) role;
    c->auth.scope = (uint8_t) scope;
    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.auth_nonce = (const char *) c->auth.nonce_s;
    rep.auth_mac = (const char *) mac;
    rc = brim_wire_encode_rep(brim_conn_out(c), BRIM_OP_AUTH, &rep);
    OPENSSL_cleanse(mac, sizeof(mac));
    return rc == 0 ? 1 : rc;
}

/* AUTH's proof: the client's MAC over the challenge's nonces. */
static int
guard_proof(struct brim_guard *g, struct brim_conn *c, uint32_t role,
            const struct brim_req *req)
{
    const struct brim_auth_secret *key;
    enum brim_guard_scope          scope;
    char                           msg[128];

    if (c->auth.state != BRIM_GUARD_CHALLENGED || c->auth.role != role) {
        return guard_refuse(g, c, req, "auth: a proof without a challenge");
    }
    key = guard_key(g, role, &scope);
    if (key == NULL
        || brim_auth_verify(key, BRIM_AUTH_CLIENT, c->auth.nonce_c,
                            c->auth.nonce_s, role, g->self_role, req->auth,
                            BRIM_AUTH_MAC_BYTES)
            != 0)
    {
        snprintf(msg, sizeof(msg), "auth: proof refused: not the %s secret",
                 scope == BRIM_GUARD_CLIENT ? "client" : "cluster");
        return guard_refuse(g, c, req, msg);
    }
    OPENSSL_cleanse(c->auth.nonce_c, sizeof(c->auth.nonce_c));
    OPENSSL_cleanse(c->auth.nonce_s, sizeof(c->auth.nonce_s));
    c->auth.state = BRIM_GUARD_PROVEN;
    g->stats.ok++;
    brim_log_debug("%s: authenticated (role %u, %s secret)", c->peer,
                   (unsigned) role,
                   scope == BRIM_GUARD_CLIENT ? "client" : "cluster");
    return guard_reply(c, req->request_id, 0, "");
}

/* AUTH REQ on C: the budget first, then the step. */
static int
guard_auth(struct brim_guard *g, struct brim_conn *c, uint32_t role,
           const struct brim_req *req)
{
    guard_window(g);
    if (g->window_fails >= g->fails_per_s) {
        /* Spent: no MAC is computed or checked until the next second. */
        g->stats.rate_limited++;
        OPENSSL_cleanse(&c->auth, sizeof(c->auth));
        guard_log(g, c,
                  "auth: failed-proof budget of this listener spent: "
                  "closed at once");
        brim_conn_fail(c, BRIM_EDENIED,
                       "auth: too many failed proofs "
                       "here; try again later");
        return 1;
    }
    if (role == 0) {
        return guard_reply(c, req->request_id, BRIM_EBADREQ,
                           "send HELLO first");
    }
    switch (req->arg_u32) {
    case BRIM_AUTH_CHALLENGE:
        return guard_challenge(g, c, role, req);
    case BRIM_AUTH_PROOF:
        return guard_proof(g, c, role, req);
    default:
        return guard_reply(c, req->request_id, BRIM_EBADREQ,
                           "auth: step is 1 (challenge) or 2 (proof)");
    }
}

int
brim_guard_request(struct brim_guard *g, struct brim_conn *c, uint32_t role,
                   const struct brim_req *req)
{
    const struct brim_op_info *info = brim_op_info(req->op);
    const char                *msg;
    char                       what[320];
    int                        proven;

    switch (req->op) {
    case BRIM_OP_HELLO:
        if (c->auth.state == BRIM_GUARD_CHALLENGED) {
            guard_failed(g, c, "auth: HELLO again before the proof");
        }
        OPENSSL_cleanse(&c->auth, sizeof(c->auth));
        return 0;
    case BRIM_OP_AUTH:
        return guard_auth(g, c, role, req);
    case BRIM_OP_PING:
        return 0;
    default:
        break;
    }
    if (g->secret == NULL) {
        return 0; /* no secret: as before AUTH existed */
    }
    proven = c->auth.state == BRIM_GUARD_PROVEN;
    if ((info->flags & BRIM_OPF_SECRET) != 0
        && !(proven && c->auth.scope == BRIM_GUARD_CLUSTER))
    {
        msg = "needs a connection that proved the cluster secret (AUTH "
              "after HELLO; --secret-file)";
    } else if (g->client_secret != NULL && !proven) {
        msg = "this server requires AUTH first: a client proves the "
              "clients' secret, an admin the cluster's (the files this "
              "node was given with --client-secret-file and --secret-file; "
              "each client tool's option is in its --help)";
    } else {
        return 0;
    }
    g->stats.failures++;
    snprintf(what, sizeof(what), "%s refused: %s", info->name, msg);
    guard_log(g, c, what);
    return guard_reply(c, req->request_id, BRIM_EDENIED, msg);
}
