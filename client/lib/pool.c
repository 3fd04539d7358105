/*
 * client/lib/pool.c - one connection per node, each a struct brim_link
 * (client/net/link.h): opening it with HELLO and AUTH, checking an idle
 * one before reuse, and the exchange that pipelines a batch of calls and
 * takes their replies in order within a deadline. It decides nothing about
 * retries (route.c does); it reports what the wire said, and closes the
 * connection on anything it cannot trust: a timeout (late replies would be
 * taken for the next call's), a reply with the wrong id, a malformed or
 * unsolicited frame.
 */
#include "client/lib/client_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "proto/ops.h"

struct brim_pool_node *
brim_pool_node_new(struct brim_client *c, const char *addr, int secret)
{
    struct brim_link_conf  conf;
    struct brim_pool_node *n;

    n = brim_calloc(1, sizeof(*n));
    if (n == NULL) {
        return NULL;
    }
    memset(&conf, 0, sizeof(conf));
    conf.hello = 1;
    conf.role = c->role;
    conf.secret = secret ? c->secret : NULL;
    conf.next_id = &c->next_id; /* one id sequence for the client */
    /* In cluster mode any node or seed may answer MAP_FETCH with a
     * topology larger than the data frame limit (PROTOCOL.md 10.1). */
    conf.frame_min = c->cluster ? BRIM_TOPO_FRAME_MAX : 0;
    if (brim_link_init(&n->link, addr, &conf) != 0) {
        brim_free(n);
        return NULL;
    }
    return n;
}

void
brim_pool_node_free(struct brim_pool_node *n)
{
    if (n == NULL) {
        return;
    }
    brim_link_destroy(&n->link);
    brim_free(n);
}

struct brim_pool_node *
brim_pool_get(struct brim_client *c, const char *addr)
{
    struct brim_pool_node *n;

    for (n = c->nodes; n != NULL; n = n->next) {
        if (strcmp(n->link.addr, addr) == 0) {
            return n;
        }
    }
    n = brim_pool_node_new(c, addr, 1);
    if (n == NULL) {
        return NULL;
    }
    n->next = c->nodes;
    c->nodes = n;
    return n;
}

void
brim_pool_close(struct brim_pool_node *n)
{
    brim_link_close(&n->link);
}

void
brim_pool_free(struct brim_client *c)
{
    struct brim_pool_node *n, *next;

    for (n = c->nodes; n != NULL; n = next) {
        next = n->next;
        brim_pool_node_free(n);
    }
    c->nodes = NULL;
    c->home = NULL;
}

/* Record in CALL what a non-OK reply REP says (message, MOVED, RETRY,
 * NOTLEADER). */
static int
pool_note_error(struct brim_client *c, struct brim_pool_node *n,
                struct brim_call *call, const struct brim_rep *rep)
{
    brim_lib_errmsg(c, "%s: %s: %.*s", n->link.addr, brim_op_name(call->req.op),
                    (int) BRIM_MIN(rep->message_len, 160),
                    rep->message != NULL ? rep->message : "");
    if (rep->status == BRIM_EMOVED || rep->status == BRIM_ERETRY) {
        call->rep_epoch = rep->epoch;
    }
    if (rep->status == BRIM_EMOVED) {
        brim_free(call->redirect);
        call->redirect = NULL;
        if (rep->owner_len == 0 || rep->owner_len >= BRIM_SOCK_ADDR_MAX
            || memchr(rep->owner, '\0', rep->owner_len) != NULL)
        {
            brim_lib_errmsg(c, "%s: MOVED names a bad owner address",
                            n->link.addr);
            return BRIM_EBADREPLY;
        }
        call->redirect = brim_strndup(rep->owner, rep->owner_len);
        if (call->redirect == NULL) {
            return BRIM_ENOMEM;
        }
    }
    if (rep->status == BRIM_ENOTLEADER) {
        /* The message is the leader's "host:port", empty when the
         * coordinator knows none (PROTOCOL.md 10.5); one that cannot be
         * an address counts as none. */
        brim_free(call->redirect);
        call->redirect = NULL;
        if (rep->message_len > 0 && rep->message_len < BRIM_SOCK_ADDR_MAX
            && memchr(rep->message, '\0', rep->message_len) == NULL)
        {
            call->redirect = brim_strndup(rep->message, rep->message_len);
            if (call->redirect == NULL) {
                return BRIM_ENOMEM;
            }
        }
    }
    return 0;
}

/*
 * Handle REP, the reply the link matched to CALL. Returns 0 (CALL is
 * answered), or an error that ends the exchange.
 */
static int
pool_reply(struct brim_client *c, struct brim_pool_node *n,
           struct brim_call *call, const struct brim_rep *rep)
{
    int rc;

    if (rep->request_id == 0) {
        /* The node refused the connection or a frame as a whole, and
         * closes next: the call did not run. */
        (void) pool_note_error(c, n, call, rep);
        call->status = rep->status;
        call->answered = 1;
        return BRIM_ECLOSED;
    }
    call->answered = 1;
    call->status = rep->status;
    if (rep->node_epoch > c->epoch_seen) {
        /* The node has committed a newer epoch (route.c fetches it). */
        c->epoch_seen = rep->node_epoch;
        c->epoch_src = n;
    }
    rc = 0;
    if (rep->status != 0) {
        rc = pool_note_error(c, n, call, rep);
    } else if (call->on_reply != NULL) {
        rc = call->on_reply(call, rep);
        if (rc == BRIM_EBADREPLY) {
            brim_lib_errmsg(c, "%s: reply to %s does not fit the request",
                            n->link.addr, brim_op_name(call->req.op));
            call->answered = 0; /* it gets the exchange's error */
        }
    }
    if (rc == BRIM_EBADREPLY) {
        return rc;
    }
    if (rc != 0) {
        call->status = rc; /* a local failure, e.g. ENOMEM */
    }
    return 0;
}

/* Queue CALLS on N's link; each gets a new request id and C's epoch. */
static int
pool_queue(struct brim_client *c, struct brim_pool_node *n,
           struct brim_call **calls, size_t ncalls)
{
    struct brim_call *call;
    size_t            i;
    int               rc;

    for (i = 0; i < ncalls; i++) {
        call = calls[i];
        call->req.epoch = c->epoch;
        call->start = brim_link_queued(&n->link);
        call->sent = 0;
        call->answered = 0;
        call->tries++;
        rc = brim_link_queue(&n->link, &call->req, call->mkeys, call->nmkeys,
                             call);
        if (rc != 0) {
            brim_lib_errmsg(c, "%s", n->link.err);
            return rc;
        }
    }
    return 0;
}

/*
 * Take the replies to CALLS[*GOT ..] from N's link, waiting for bytes
 * until DEADLINE_MS. Returns 0 once every call is answered, or the error
 * that ends the exchange (C->errmsg says why).
 */
static int
pool_replies(struct brim_client *c, struct brim_pool_node *n,
             struct brim_call **calls, size_t ncalls, size_t *got,
             int64_t deadline_ms)
{
    struct brim_link_reply r;
    int                    rc;

    while (*got < ncalls) {
        rc = brim_link_take(&n->link, &r);
        if (rc == 1) {
            BRIM_ASSERT(r.tag == calls[*got]); /* the link's FIFO order */
            rc = pool_reply(c, n, calls[*got], &r.rep);
            if (calls[*got]->answered) {
                (*got)++;
            }
            if (rc != 0) {
                return rc;
            }
            continue;
        }
        if (rc < 0) {
            brim_lib_errmsg(c, "%s", n->link.err);
            return rc;
        }
        rc = brim_link_wait(&n->link, deadline_ms);
        if (rc == BRIM_ETIMEDOUT) {
            brim_lib_errmsg(c, "%s: no reply to %s within the timeout",
                            n->link.addr, brim_op_name(calls[*got]->req.op));
        } else if (rc == BRIM_ECLOSED) {
            brim_lib_errmsg(c, "%s: connection closed by the node",
                            n->link.addr);
        } else if (rc != 0) {
            brim_lib_errmsg(c, "%s", n->link.err);
        }
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

int
brim_pool_exchange(struct brim_client *c, struct brim_pool_node *n,
                   struct brim_call **calls, size_t ncalls, int64_t deadline_ms)
{
    size_t got, left, i;
    int    rc;

    BRIM_ASSERT(n->link.state == BRIM_LINK_READY
                && brim_link_inflight(&n->link) == 0);

    got = 0;
    rc = pool_queue(c, n, calls, ncalls);
    if (rc == 0) {
        rc = brim_link_flush(&n->link); /* usually all of it leaves */
        if (rc != 0) {
            brim_lib_errmsg(c, "%s", n->link.err);
        }
    }
    if (rc == 0) {
        rc = pool_replies(c, n, calls, ncalls, &got, deadline_ms);
    }
    for (i = 0; i < ncalls; i++) {
        calls[i]->sent = brim_link_sent(&n->link) > calls[i]->start;
        if (!calls[i]->answered) {
            calls[i]->status = rc;
        }
    }
    /* Bytes the node sent after the last reply are unasked. */
    (void) brim_link_input(&n->link, &left);
    if (rc != 0 || left != 0) {
        brim_link_close(&n->link); /* nothing more may be trusted on it */
    }
    if (got == ncalls && rc == BRIM_ECLOSED) {
        rc = 0; /* all answered, then the node closed */
    }
    brim_link_trim(&n->link); /* a large MSET's memory goes back */
    return rc;
}

/* The timeout that ends a connection attempt, for a message: the
 * call's (BY_REQUEST) or the attempt's own. */
static const char *
pool_timeout_name(const struct brim_client *c, int by_request, char *buf,
                  size_t len)
{
    snprintf(buf, len, "%s timeout %" PRIu32 " ms",
             by_request ? "request" : "connect",
             by_request ? c->request_timeout_ms : c->connect_timeout_ms);
    return buf;
}

int
brim_pool_ready(struct brim_client *c, struct brim_pool_node *n,
                int64_t deadline_ms)
{
    char    tmo[48];
    int64_t dl;
    int     rc, by_request;

    if (brim_link_idle_ok(&n->link)) {
        return 0;
    }
    brim_link_close(&n->link);
    /* The attempt ends at the sooner of its own timeout and the call's
     * deadline; a message names the one that applied. */
    dl = brim_sock_now_ms() + c->connect_timeout_ms;
    by_request = deadline_ms < dl;
    dl = BRIM_MIN(dl, deadline_ms);
    /* HELLO states what the client knows now (the coordinator's cluster
     * id, once it has one; the epoch of its map). */
    n->link.conf.cluster_id = c->cluster_id;
    n->link.epoch = c->epoch;
    rc = brim_link_connect(&n->link, dl);
    if (rc != 0) {
        if (rc == BRIM_ETIMEDOUT) {
            brim_lib_errmsg(c, "%s (%s)", n->link.err,
                            pool_timeout_name(c, by_request, tmo, sizeof(tmo)));
        } else {
            brim_lib_errmsg(c, "%s", n->link.err);
        }
        return rc;
    }
    rc = brim_link_handshake(&n->link, dl); /* PROTOCOL.md 3, 12.2 */
    if (rc == BRIM_ETIMEDOUT) {
        brim_lib_errmsg(c, "%s: connected, but no HELLO reply in time (%s)",
                        n->link.addr,
                        pool_timeout_name(c, by_request, tmo, sizeof(tmo)));
    } else if (rc != 0) {
        brim_lib_errmsg(c, "%s", n->link.err);
    }
    return rc;
}
