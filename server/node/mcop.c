/*
 * server/node/mcop.c - one brim op of a memcached command (mcport_int.h):
 * served from the store when this node owns the key, else forwarded
 * (mcfwd.h) with the connection deferred, so that replies keep request
 * order and no later command on the connection overtakes it (DESIGN.md
 * 10). A command that waits keeps a copy of its bytes: the read buffer
 * its fields pointed into is reused meanwhile.
 */
#include "server/node/mcport_int.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "server/node/epoch.h"
#include "server/node/mcfwd.h"
#include "server/node/serve.h"

/* Point P, when it lies in OLD[0 .. LEN), at the same byte of NEW. */
static const char *
op_rebase(const char *p, const char *old, size_t len, const char *new)
{
    if (p == NULL || p < old || p >= old + len) {
        return p;
    }
    return new + (p - old);
}

/* Copy MC's command bytes (the line and its data block) so that its
 * fields outlive the read buffer. */
static int
op_copy_cmd(struct mc_cmd *mc)
{
    struct brim_mctext_cmd *cmd = &mc->cmd;
    const char             *base = mc->raw;
    size_t                  len = mc->raw_len;
    const char             *nb;

    if (mc->copied) {
        return 0;
    }
    if (brim_buf_append(&mc->copy, base, len) != 0) {
        return BRIM_ENOMEM;
    }
    nb = mc->copy.data;
    cmd->key = op_rebase(cmd->key, base, len, nb);
    cmd->keys = op_rebase(cmd->keys, base, len, nb);
    cmd->data = op_rebase(cmd->data, base, len, nb);
    cmd->args = op_rebase(cmd->args, base, len, nb);
    cmd->meta.opaque = op_rebase(cmd->meta.opaque, base, len, nb);
    mc->req.key = op_rebase(mc->req.key, base, len, nb);
    mc->req.value = op_rebase(mc->req.value, base, len, nb);
    mc->raw = nb;
    mc->copied = 1;
    return 0;
}

/* brim_mcfwd_cb: a forwarded op of SLOT's command was answered. */
static void
op_forward_done(void *arg, const struct brim_rep *rep)
{
    struct mc_slot *s = arg;
    struct mc_cmd  *mc = s->mc;

    mc->pending--;
    mc->done(mc, s->i, rep);
    brim_free(s);
    if (mc->pending == 0) {
        mc_end(mc);
    }
}

/* MC has an op at another node: the connection's memory must outlive it
 * (the client may close meanwhile). */
static void
op_went_async(struct mc_cmd *mc)
{
    if (!mc->async) {
        mc->async = 1;
        brim_conn_ref(mc->c);
    }
}

/* Forward REQ (hash H) as op SLOT of MC's command, first to ADDR (NULL:
 * routed), deferring the connection; MC->done hears of a failure now. */
static void
op_forward(struct mc_cmd *mc, const struct brim_req *req, uint64_t h,
           const char *addr, uint32_t slot)
{
    struct brim_node *node = mc->port->node;
    struct brim_rep   rep;
    struct mc_slot   *s;

    s = brim_calloc(1, sizeof(*s));
    if (s == NULL || op_copy_cmd(mc) != 0
        || brim_mcfwd_start(node, req, h, addr, node->cfg.memcached_timeout_ms,
                            op_forward_done, s)
            != 0)
    {
        brim_free(s);
        memset(&rep, 0, sizeof(rep));
        rep.status = BRIM_ENOMEM;
        rep.message = "out of memory forwarding to the key's owner";
        rep.message_len = strlen(rep.message);
        mc->done(mc, slot, &rep);
        return;
    }
    s->mc = mc;
    s->i = slot;
    mc->port->st.forwarded++;
    mc->pending++;
    op_went_async(mc);
}

/*
 * mc_run(), and with OWNER not NULL mc_get_here(): a key another node owns
 * is then left to the caller (0, *OWNER set) instead of sent.
 */
static int
op_run(struct mc_cmd *mc, const struct brim_req *req, uint32_t slot,
       const char **owner)
{
    struct brim_node *node = mc->port->node;
    struct brim_rep   rep;
    uint64_t          h;
    int               rc;

    h = brim_hash_key(brim_node_seed(node), req->key, req->key_len);
    memset(&rep, 0, sizeof(rep));
    rc = brim_node_serve_here(node, req, h, &rep);
    if (rc != BRIM_EMOVED && rc != BRIM_ERETRY && rc != BRIM_EAGAIN) {
        rep.status = rc;
        mc->done(mc, slot, &rep);
        return 1;
    }
    if (rc == BRIM_EMOVED && rep.owner_len > 0 && owner != NULL) {
        *owner = rep.owner;
        return 0;
    }
    op_forward(mc, req, h,
               rc == BRIM_EMOVED && rep.owner_len > 0 ? rep.owner : NULL, slot);
    return 1;
}

void
mc_run(struct mc_cmd *mc, const struct brim_req *req, uint32_t slot)
{
    (void) op_run(mc, req, slot, NULL);
}

int
mc_get_here(struct mc_cmd *mc, const struct brim_req *req, uint32_t slot,
            const char **owner)
{
    return op_run(mc, req, slot, owner);
}

/* The keys of one MGET (or MGAT) sent for a multi-key get, and their
 * slots. */
struct op_mget {
    struct mc_cmd     *mc;   /* the command's connection */
    uint32_t           n;    /* keys */
    uint32_t          *idx;  /* each key's index in the get */
    struct brim_bytes *keys; /* copies, for asking one again */
};

/* True when MC's get is a gat or gats: its keys' TTL is set too. */
static int
op_is_gat(const struct mc_cmd *mc)
{
    return mc->cmd.kind == BRIM_MCTEXT_GAT || mc->cmd.kind == BRIM_MCTEXT_GATS;
}

/* Ask KEY (KEY_LEN bytes) of MC's get again on its own as op SLOT: GET,
 * or GAT for a gat (which pulls a key in flight first). */
static void
op_get_one(struct mc_cmd *mc, const char *key, size_t key_len, uint32_t slot)
{
    struct brim_req req;

    memset(&req, 0, sizeof(req));
    req.op = op_is_gat(mc) ? BRIM_OP_GAT : BRIM_OP_GET;
    req.ttl_s = mc_ttl(mc->cmd.exptime);
    req.key = key;
    req.key_len = key_len;
    mc_run(mc, &req, slot);
}

/* Ask key J of G again on its own (its entry was not an answer). */
static void
op_mget_again(struct op_mget *g, uint32_t j)
{
    op_get_one(g->mc, g->keys[j].ptr, g->keys[j].len, g->idx[j]);
}

/* brim_mcfwd_cb of an MGET: each entry to its slot. */
static void
op_mget_done(void *arg, const struct brim_rep *rep)
{
    struct op_mget *g = arg;
    struct mc_cmd  *mc = g->mc;
    struct brim_rep r;
    uint32_t        j;
    int             whole = rep->status == 0 && rep->nentries == g->n;

    mc->pending--;
    for (j = 0; j < g->n; j++) {
        memset(&r, 0, sizeof(r));
        if (whole) {
            r.status = brim_wire_rep_entry(rep, j, &r.value, &r.value_len,
                                           &r.flags, &r.cas);
        } else {
            r.status = rep->status == 0 ? BRIM_ERETRY : rep->status;
        }
        if (r.status == 0 || r.status == BRIM_ENOTFOUND
            || rep->status == BRIM_ETIMEDOUT)
        {
            r.message = rep->message;
            r.message_len = rep->message_len;
            mc->done(mc, g->idx[j], &r);
        } else {
            op_mget_again(g, j); /* MOVED, RETRY, TOOBIG, a lost link */
        }
    }
    brim_free(g);
    if (mc->pending == 0) {
        mc_end(mc);
    }
}

void
mc_mget_at(struct mc_cmd *mc, const char *owner, const uint32_t *idx,
           const struct brim_bytes *keys, uint32_t n)
{
    struct brim_node *node = mc->port->node;
    struct op_mget   *g;
    size_t            total = 0;
    char             *p;
    uint32_t          j;

    for (j = 0; j < n; j++) {
        total += keys[j].len;
    }
    g = brim_malloc(sizeof(*g) + n * (sizeof(*g->idx) + sizeof(*g->keys))
                    + total);
    if (g == NULL || op_copy_cmd(mc) != 0) {
        brim_free(g);
        for (j = 0; j < n; j++) { /* one by one, then */
            op_get_one(mc, keys[j].ptr, keys[j].len, idx[j]);
        }
        return;
    }
    g->mc = mc;
    g->n = n;
    g->keys = (struct brim_bytes *) (g + 1);
    g->idx = (uint32_t *) (g->keys + n);
    p = (char *) (g->idx + n);
    for (j = 0; j < n; j++) {
        g->idx[j] = idx[j];
        memcpy(p, keys[j].ptr, keys[j].len);
        g->keys[j].ptr = p;
        g->keys[j].len = keys[j].len;
        p += keys[j].len;
    }
    if (brim_mcfwd_start_mget(node, op_is_gat(mc) ? BRIM_OP_MGAT : BRIM_OP_MGET,
                              mc_ttl(mc->cmd.exptime), g->keys, n, owner,
                              node->cfg.memcached_timeout_ms, op_mget_done, g)
        != 0)
    {
        for (j = 0; j < n; j++) {
            op_mget_again(g, j);
        }
        brim_free(g);
        return;
    }
    mc->port->st.forwarded += n;
    mc->pending++;
    op_went_async(mc);
}

void
mc_run_at(struct mc_cmd *mc, const struct brim_req *req, const char *addr,
          uint32_t slot)
{
    op_forward(mc, req, 0, addr, slot);
}

struct brim_buf *
mc_out(struct mc_cmd *mc)
{
    return mc->direct ? brim_conn_out(mc->c) : &mc->out;
}

struct mc_cmd *
mc_cmd_new(struct mc_client *cl)
{
    struct mc_cmd *mc = cl->head == NULL ? &cl->first : NULL;

    if (mc == NULL) {
        mc = brim_malloc(sizeof(*mc));
        if (mc == NULL) {
            return NULL;
        }
    }
    memset(mc, 0, offsetof(struct mc_cmd, cmd));
    mc->port = cl->port;
    mc->c = cl->c;
    mc->cl = cl;
    brim_buf_init(&mc->out);
    brim_buf_init(&mc->copy);
    mc->raw = NULL;
    mc->raw_len = 0;
    mc->copied = 0;
    mc->pending = 0;
    mc->done = NULL;
    mc->finish = NULL;
    mc->stage = 0;
    mc->slots = NULL;
    mc->nslots = 0;
    mc->first_slot = 0;
    mc->failed = 0;
    mc->why[0] = '\0';
    mc->held = 0;
    mc->oom = 0;
    if (cl->tail != NULL) {
        cl->tail->next = mc;
    } else {
        cl->head = mc;
    }
    cl->tail = mc;
    cl->n++;
    mc->direct = cl->head == mc;
    return mc;
}

int
mc_hold(struct mc_cmd *mc, size_t len)
{
    struct brim_mcport *port = mc->port;
    size_t              limit = port->srv.cfg.out_total_limit;

    /* Up to a connection's own output limit a get is always held (as a
     * brim connection passes the pool by one batch); beyond it only
     * while the pool has room, so a slow reader cannot starve others. */
    if (limit != 0 && mc->held + len > port->srv.cfg.out_high_water
        && port->srv.stats.out_bytes + port->get_held + len > limit)
    {
        return -1;
    }
    port->get_held += len;
    mc->held += len;
    return 0;
}

void
mc_cmd_free(struct mc_cmd *mc)
{
    uint32_t i;

    mc->port->get_held -= mc->held;
    mc->held = 0;
    for (i = 0; mc->slots != NULL && i < mc->nslots; i++) {
        brim_free(mc->slots[i].value);
    }
    brim_free(mc->slots);
    brim_buf_destroy(&mc->copy);
    brim_buf_destroy(&mc->out);
    if (mc != &mc->cl->first) {
        brim_free(mc);
    }
}

/*
 * Move the replies whose turn came to CL's connection: every complete
 * command at the head leaves the FIFO; the first incomplete one becomes
 * the head and writes straight from now on.
 */
static void
op_advance(struct mc_client *cl)
{
    struct brim_buf *out = brim_conn_out(cl->c);
    struct mc_cmd   *mc;

    while ((mc = cl->head) != NULL) {
        if (!mc->direct && mc->out.len > 0) {
            (void) brim_buf_append(out, mc->out.data, mc->out.len);
            mc->out.len = 0;
        }
        mc->direct = 1;
        if (!mc->complete) {
            return;
        }
        cl->head = mc->next;
        if (cl->head == NULL) {
            cl->tail = NULL;
        }
        cl->n--;
        mc_cmd_free(mc);
    }
}

void
mc_end(struct mc_cmd *mc)
{
    struct mc_client *cl = mc->cl;
    struct brim_conn *c = mc->c;
    int               async = mc->async;
    int               held = cl->held;
    int               in_stream = cl->in_stream;

    if (mc->finish != NULL) {
        mc->finish(mc);
    }
    if (mc->cmd.err == BRIM_MCTEXT_ERR_NONE && mc->cmd.kind > BRIM_MCTEXT_NONE
        && mc->cmd.kind < BRIM_MCTEXT_KIND_COUNT)
    {
        /* Its answer is whole (it may still wait for earlier replies). */
        brim_node_lat_record(&mc->port->lat[mc->cmd.kind],
                             uv_hrtime() - mc->start_ns);
    }
    mc->complete = 1;
    if (mc->copied) {
        brim_buf_destroy(&mc->copy); /* its bytes are no longer needed */
        brim_buf_init(&mc->copy);
    }
    if (cl->head == mc) {
        op_advance(cl); /* may free MC */
    }
    if (!in_stream) {
        /* From another node's answer: send what is ready now (in the
         * stream callback the connection layer sends it). */
        cl->held = 0;
        brim_conn_flush(c);
    }
    if (async) {
        brim_conn_unref(c); /* may free C and CL if closed and not held */
    }
    if (held && !in_stream) {
        brim_conn_resume(c); /* reads the commands that waited */
    }
}

uint32_t
mc_store_op(enum brim_mctext_kind kind)
{
    switch (kind) {
    case BRIM_MCTEXT_ADD:
        return BRIM_OP_ADD;
    case BRIM_MCTEXT_REPLACE:
        return BRIM_OP_REPLACE;
    case BRIM_MCTEXT_APPEND:
        return BRIM_OP_APPEND;
    case BRIM_MCTEXT_PREPEND:
        return BRIM_OP_PREPEND;
    case BRIM_MCTEXT_CAS:
        return BRIM_OP_CAS;
    default:
        return BRIM_OP_SET;
    }
}

uint32_t
mc_ttl(int32_t exptime)
{
    if (exptime < 0) {
        return BRIM_WIRE_TTL_RELATIVE_MAX + 1; /* 1970: long past */
    }
    return (uint32_t) exptime;
}

void
mc_put_error(struct mc_cmd *mc, const struct brim_rep *rep)
{
    struct brim_buf *out = mc_out(mc);
    char             msg[300];

    if (rep->status == BRIM_ENONUMERIC) {
        (void) brim_mctext_put_client_error(
            out, "cannot increment or decrement non-numeric value");
        return;
    }
    mc->port->st.server_errors++;
    if (rep->status == BRIM_ETOOBIG) {
        snprintf(msg, sizeof(msg), "object too large for cache");
    } else if (rep->status == BRIM_ENOMEM) {
        snprintf(msg, sizeof(msg), "out of memory storing object");
    } else if (rep->message_len > 0) {
        snprintf(msg, sizeof(msg), "%.*s",
                 (int) BRIM_MIN(rep->message_len, 280), rep->message);
    } else {
        snprintf(msg, sizeof(msg), "%s", brim_strerror(rep->status));
    }
    (void) brim_mctext_put_server_error(out, msg);
}
