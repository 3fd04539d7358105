/*
 * server/node/mcport.c - the node's memcached port (mcport.h): its
 * listener on the connection layer's byte-stream mode (server/conn.h, the
 * brim port's bounds and backpressure), the parser's answers
 * (proto/mctext.h) turned into brim ops, and the text commands' replies
 * as memcached 1.6.18 writes them (docs/memcached.md). The meta commands
 * are mcmeta.c's; running an op here or at its owner is mcop.c's.
 */
#include "server/node/mcport.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "server/log.h"
#include "server/node/epoch.h"
#include "server/node/flush.h"
#include "server/node/mcfwd.h"
#include "server/node/mcport_int.h"

/* ---- the get family ---- */

/* memcached's answer to a get it cannot hold the reply of. */
#define GET_OOM "out of memory writing get response"

/* MC's get is over the reply pool (mc_hold()): it fails as a whole. */
static void
get_oom(struct mc_cmd *mc)
{
    if (!mc->oom) {
        mc->oom = 1;
        mc->failed++;
        snprintf(mc->why, sizeof(mc->why), "%s", GET_OOM);
    }
}

/* Append a hit of MC's get for KEY (VALUE line and data); HELD: its
 * value was counted in the pool when it was kept. */
static void
get_put_hit(struct mc_cmd *mc, const char *key, size_t key_len,
            const char *value, size_t len, uint32_t flags, uint64_t cas,
            int held)
{
    int with_cas =
        mc->cmd.kind == BRIM_MCTEXT_GETS || mc->cmd.kind == BRIM_MCTEXT_GATS;

    if (mc->oom || (!held && mc_hold(mc, len + key_len + 64) != 0)) {
        get_oom(mc);
        return;
    }
    (void) brim_mctext_put_value(mc_out(mc), key, key_len, flags, value, len,
                                 with_cas, cas);
}

/* mc_done_fn of the get family: write it now when every key before it
 * was written, else keep it for its turn. */
static void
get_done(struct mc_cmd *mc, uint32_t i, const struct brim_rep *rep)
{
    struct mc_slot *s;

    int gat =
        mc->cmd.kind == BRIM_MCTEXT_GAT || mc->cmd.kind == BRIM_MCTEXT_GATS;

    /* memcached counts a gat's keys as touches, not gets. */
    if (rep->status == 0) {
        *(gat ? &mc->port->st.touch_hits : &mc->port->st.get_hits) += 1;
    } else if (rep->status == BRIM_ENOTFOUND) {
        *(gat ? &mc->port->st.touch_misses : &mc->port->st.get_misses) += 1;
    } else if (mc->failed++ == 0 && rep->message_len > 0) {
        snprintf(mc->why, sizeof(mc->why), "%.*s",
                 (int) BRIM_MIN(rep->message_len, sizeof(mc->why) - 1),
                 rep->message);
    } else if (mc->failed == 1) {
        snprintf(mc->why, sizeof(mc->why), "%s", brim_strerror(rep->status));
    }
    if (mc->slots == NULL) {
        if (rep->status == 0) {
            get_put_hit(mc, mc->req.key, mc->req.key_len, rep->value,
                        rep->value_len, rep->flags, rep->cas, 0);
        }
        return;
    }
    s = &mc->slots[i];
    s->status = rep->status;
    if (rep->status != 0) {
        return;
    }
    if (mc->oom || mc_hold(mc, rep->value_len + 300) != 0) {
        s->status = BRIM_ENOMEM;
        get_oom(mc);
        return;
    }
    s->flags = rep->flags;
    s->cas = rep->cas;
    s->value_len = rep->value_len;
    s->value = brim_malloc(rep->value_len + 1);
    if (s->value == NULL) {
        s->status = BRIM_ENOMEM;
        return;
    }
    memcpy(s->value, rep->value, rep->value_len);
}

/* mc_finish_fn of the get family: the kept keys in order, then END; or,
 * when a key could not be read (its owner did not answer in time), the
 * reason as SERVER_ERROR for the whole get, as a client that sees no
 * answer from memcached at all would fail it. */
static void
get_finish(struct mc_cmd *mc)
{
    const char *key;
    size_t      key_len, pos = 0;
    uint32_t    i = 0;

    if (mc->failed > 0) {
        mc->port->st.server_errors++;
        (void) brim_mctext_put_server_error(
            mc_out(mc), mc->why[0] != '\0' ? mc->why : "get failed");
        mc->failed = 0;
        return;
    }
    for (; mc->slots != NULL && i < mc->nslots
         && brim_mctext_next_key(&mc->cmd, &pos, &key, &key_len);
         i++)
    {
        if (i < mc->first_slot) {
            continue; /* written already */
        }
        if (mc->slots[i].status == 0 && mc->slots[i].value != NULL) {
            get_put_hit(mc, key, key_len, mc->slots[i].value,
                        mc->slots[i].value_len, mc->slots[i].flags,
                        mc->slots[i].cas, 1);
        }
    }
    (void) brim_mctext_put_reply(mc_out(mc), BRIM_MCTEXT_REPLY_END);
}

/*
 * Send the keys of MC's get that other nodes own (OWNER[i], NULL for the
 * keys answered already) in one MGET per owner, at most max_mget_keys a
 * frame; KEYS[i] is key I.
 */
static void
get_send_grouped(struct mc_cmd *mc, const char **owner,
                 const struct brim_bytes *keys, uint32_t nkeys)
{
    uint32_t           lim = mc->port->node->cfg.limits.max_mget_keys;
    uint32_t          *idx = brim_malloc(nkeys * sizeof(*idx));
    struct brim_bytes *ks = brim_malloc(nkeys * sizeof(*ks));
    const char        *o;
    uint32_t           i, j, n;

    for (i = 0; i < nkeys; i++) {
        if (owner[i] != NULL && (idx == NULL || ks == NULL)) {
            mc_mget_at(mc, owner[i], &i, &keys[i], 1); /* out of memory */
            owner[i] = NULL;
        }
        if (owner[i] == NULL) {
            continue;
        }
        o = owner[i];
        n = 0;
        for (j = i; j < nkeys; j++) {
            if (owner[j] != NULL && strcmp(owner[j], o) == 0) {
                idx[n] = j;
                ks[n] = keys[j];
                n++;
                owner[j] = NULL;
                if (n == lim) {
                    mc_mget_at(mc, o, idx, ks, n);
                    n = 0;
                }
            }
        }
        if (n > 0) {
            mc_mget_at(mc, o, idx, ks, n);
        }
    }
    brim_free(idx);
    brim_free(ks);
}

static void
cmd_get(struct mc_cmd *mc)
{
    const struct brim_mctext_cmd *cmd = &mc->cmd;
    struct brim_req               req;
    const char                   *key, **owner = NULL;
    struct brim_bytes            *keys = NULL;
    size_t                        key_len, pos = 0;
    uint32_t                      i = 0;
    int gat = cmd->kind == BRIM_MCTEXT_GAT || cmd->kind == BRIM_MCTEXT_GATS;

    memset(&req, 0, sizeof(req));
    req.op = gat ? BRIM_OP_GAT : BRIM_OP_GET;
    req.ttl_s = mc_ttl(cmd->exptime);
    mc->done = get_done;
    mc->finish = get_finish;
    if (!mc->port->node->cfg.standalone && cmd->nkeys > 1) {
        /* Keys of several owners: each answer waits for its turn, and the
         * keys of one owner go in one MGET (gat and gats: one MGAT). */
        mc->slots = brim_calloc(cmd->nkeys, sizeof(*mc->slots));
        mc->nslots = mc->slots != NULL ? cmd->nkeys : 0;
        mc->first_slot = 0;
        if (mc->slots != NULL) {
            owner = brim_calloc(cmd->nkeys, sizeof(*owner));
            keys = brim_calloc(cmd->nkeys, sizeof(*keys));
        }
    }
    while (brim_mctext_next_key(cmd, &pos, &key, &key_len)) {
        *(gat ? &mc->port->st.cmd_touch : &mc->port->st.cmd_get) += 1;
        if (mc->pending > 0 && mc->slots == NULL) {
            /* A key went to another node: the rest wait their turn. */
            mc->slots = brim_calloc(cmd->nkeys, sizeof(*mc->slots));
            if (mc->slots == NULL) {
                break; /* the keys not asked are misses */
            }
            mc->nslots = cmd->nkeys;
            mc->first_slot = i - 1;
        }
        req.key = key;
        req.key_len = key_len;
        mc->req.key = key; /* for a hit written at once */
        mc->req.key_len = key_len;
        if (owner != NULL && keys != NULL) {
            keys[i].ptr = key;
            keys[i].len = key_len;
            (void) mc_get_here(mc, &req, i, &owner[i]);
        } else {
            mc_run(mc, &req, i);
        }
        i++;
    }
    if (owner != NULL && keys != NULL) {
        get_send_grouped(mc, owner, keys, i);
    }
    brim_free(owner);
    brim_free(keys);
    if (mc->pending > 0 && mc->slots == NULL && i > 0) {
        /* Only the last key went elsewhere. */
        mc->slots = brim_calloc(cmd->nkeys, sizeof(*mc->slots));
        mc->nslots = mc->slots != NULL ? cmd->nkeys : 0;
        mc->first_slot = i - 1;
    }
}

/* ---- one-key text commands ---- */

/* Count REP's outcome of MC's command in memcached's counters. */
static void
text_count(struct mc_cmd *mc, int status)
{
    struct mc_counters *st = &mc->port->st;
    int                 hit = status == 0;

    switch (mc->cmd.kind) {
    case BRIM_MCTEXT_CAS:
        if (hit) {
            st->cas_hits++;
        } else if (status == BRIM_EEXISTS) {
            st->cas_badval++;
        } else if (status == BRIM_ENOTFOUND) {
            st->cas_misses++;
        }
        break;
    case BRIM_MCTEXT_DELETE:
        *(hit ? &st->delete_hits : &st->delete_misses) += 1;
        break;
    case BRIM_MCTEXT_INCR: /* a non-numeric value is neither (memcached) */
        st->incr_hits += hit;
        st->incr_misses += status == BRIM_ENOTFOUND;
        break;
    case BRIM_MCTEXT_DECR:
        st->decr_hits += hit;
        st->decr_misses += status == BRIM_ENOTFOUND;
        break;
    case BRIM_MCTEXT_TOUCH:
        *(hit ? &st->touch_hits : &st->touch_misses) += 1;
        break;
    default:
        break;
    }
}

/* The fixed reply of a one-key text command's outcome STATUS, or -1 for
 * one that is a SERVER_ERROR or CLIENT_ERROR. */
static int
text_reply_of(enum brim_mctext_kind kind, int status)
{
    switch (status) {
    case 0:
        return kind == BRIM_MCTEXT_DELETE ? BRIM_MCTEXT_REPLY_DELETED
            : kind == BRIM_MCTEXT_TOUCH   ? BRIM_MCTEXT_REPLY_TOUCHED
                                          : BRIM_MCTEXT_REPLY_STORED;
    case BRIM_ENOTFOUND:
        return BRIM_MCTEXT_REPLY_NOT_FOUND;
    case BRIM_ENOTSTORED:
        return BRIM_MCTEXT_REPLY_NOT_STORED;
    case BRIM_EEXISTS:
        return BRIM_MCTEXT_REPLY_EXISTS;
    default:
        return -1;
    }
}

/* mc_done_fn of a one-key text command. */
static void
text_done(struct mc_cmd *mc, uint32_t slot, const struct brim_rep *rep)
{
    struct brim_buf      *out = mc_out(mc);
    enum brim_mctext_kind kind = mc->cmd.kind;
    int                   r = text_reply_of(kind, rep->status);
    int                   failed = r < 0 && !(rep->status == 0);

    (void) slot;
    text_count(mc, rep->status);
    if (mc->cmd.noreply) {
        if (failed) {
            mc->port->st.noreply_failed++;
        }
        return;
    }
    if ((kind == BRIM_MCTEXT_INCR || kind == BRIM_MCTEXT_DECR)
        && rep->status == 0) {
        (void) brim_mctext_put_number(out, rep->number);
    } else if (r >= 0) {
        (void) brim_mctext_put_reply(out, (enum brim_mctext_reply) r);
    } else {
        mc_put_error(mc, rep);
    }
}

/* set add replace append prepend cas delete incr decr touch. */
static void
cmd_keyed(struct mc_cmd *mc)
{
    const struct brim_mctext_cmd *cmd = &mc->cmd;
    struct brim_req              *req = &mc->req;

    memset(req, 0, sizeof(*req));
    req->key = cmd->key;
    req->key_len = cmd->key_len;
    switch (cmd->kind) {
    case BRIM_MCTEXT_DELETE:
        req->op = BRIM_OP_DEL;
        break;
    case BRIM_MCTEXT_INCR:
    case BRIM_MCTEXT_DECR:
        req->op = cmd->kind == BRIM_MCTEXT_INCR ? BRIM_OP_INCR : BRIM_OP_DECR;
        req->delta = cmd->delta;
        break;
    case BRIM_MCTEXT_TOUCH:
        mc->port->st.cmd_touch++;
        req->op = BRIM_OP_TOUCH;
        req->ttl_s = mc_ttl(cmd->exptime);
        break;
    default:
        mc->port->st.cmd_set++;
        req->op = mc_store_op(cmd->kind);
        req->value = cmd->data;
        req->value_len = cmd->data_len;
        req->flags = cmd->flags;
        req->ttl_s = mc_ttl(cmd->exptime);
        req->cas = cmd->cas;
        break;
    }
    mc->done = text_done;
    mc_run(mc, req, 0);
}

/* ---- stats, version, flush_all ---- */

#define STAT(name, v) (void) brim_mctext_put_stat_u64(out, (name), (v))

/* "stats": this node's counters under memcached's names. */
static void
stats_general(struct mc_cmd *mc)
{
    struct brim_mcport       *port = mc->port;
    struct brim_node         *node = port->node;
    struct brim_buf          *out = mc_out(mc);
    const struct mc_counters *st = &port->st;
    struct brim_store_stats   ss;
    uint64_t                  now = (uint64_t) time(NULL);

    brim_store_get_stats(node->store, &ss);
    STAT("pid", (uint64_t) getpid());
    STAT("uptime", now - node->start_unix);
    STAT("time", now);
    (void) brim_mctext_put_stat(out, "version", MC_VERSION);
    STAT("pointer_size", 8 * sizeof(void *));
    STAT("curr_connections", port->srv.stats.conns_current);
    STAT("total_connections", port->srv.stats.conns_total);
    STAT("rejected_connections",
         port->srv.stats.conns_refused + st->conns_refused);
    STAT("cmd_get", st->cmd_get);
    STAT("cmd_set", st->cmd_set);
    STAT("cmd_flush", st->cmd_flush);
    STAT("cmd_touch", st->cmd_touch);
    STAT("get_hits", st->get_hits);
    STAT("get_misses", st->get_misses);
    STAT("get_expired", 0);
    STAT("delete_misses", st->delete_misses);
    STAT("delete_hits", st->delete_hits);
    STAT("incr_misses", st->incr_misses);
    STAT("incr_hits", st->incr_hits);
    STAT("decr_misses", st->decr_misses);
    STAT("decr_hits", st->decr_hits);
    STAT("cas_misses", st->cas_misses);
    STAT("cas_hits", st->cas_hits);
    STAT("cas_badval", st->cas_badval);
    STAT("touch_hits", st->touch_hits);
    STAT("touch_misses", st->touch_misses);
    STAT("bytes_read", port->srv.stats.bytes_in);
    STAT("bytes_written", port->srv.stats.bytes_out);
    STAT("limit_maxbytes", (uint64_t) node->cfg.memory_mb << 20);
    STAT("threads", 1);
    STAT("curr_items", ss.items);
    STAT("bytes", ss.item_bytes);
    STAT("evictions", ss.evictions);
    STAT("reclaimed", ss.expirations);
    STAT("noreply_failed", st->noreply_failed);
    STAT("server_errors", st->server_errors);
    STAT("forwarded", st->forwarded);
}

/* "stats cluster": where this node stands and its forwards. */
static void
stats_cluster(struct mc_cmd *mc)
{
    struct brim_node       *node = mc->port->node;
    struct brim_buf        *out = mc_out(mc);
    const struct brim_topo *t = &node->topo.committed;
    struct brim_mcfwd_stats fs;
    char                    name[48];
    uint32_t                i;

    brim_mcfwd_get_stats(node, &fs);
    (void) brim_mctext_put_stat(
        out, "cluster_mode", node->cfg.standalone ? "standalone" : "cluster");
    (void) brim_mctext_put_stat(out, "cluster_node", node->cfg.name);
    STAT("cluster_epoch", t->map.epoch);
    STAT("cluster_members", t->nmembers);
    STAT("cluster_partitions", node->cfg.partitions);
    STAT("cluster_partitions_owned", brim_node_owned(node));
    for (i = 0; i < t->nmembers; i++) {
        snprintf(name, sizeof(name), "cluster_member_%u", i);
        (void) brim_mctext_put_stat(out, name, t->members[i].addr);
    }
    STAT("forward_sent", fs.sent);
    STAT("forward_moved", fs.moved);
    STAT("forward_retries", fs.retries);
    STAT("forward_timeouts", fs.timeouts);
    STAT("forward_lost_writes", fs.lost);
    STAT("forward_inflight", fs.inflight);
}

#undef STAT

static void
cmd_stats(struct mc_cmd *mc)
{
    const struct brim_mctext_cmd *cmd = &mc->cmd;
    struct brim_buf              *out = mc_out(mc);
    const char                   *a = cmd->args;
    size_t                        n = cmd->args_len;

    while (n > 0 && a[0] == ' ') {
        a++;
        n--;
    }
    while (n > 0 && a[n - 1] == ' ') {
        n--;
    }
    if (n == 0) {
        stats_general(mc);
    } else if (n == 7 && memcmp(a, "cluster", 7) == 0) {
        stats_cluster(mc);
    } else if (n == 5 && memcmp(a, "reset", 5) == 0) {
        memset(&mc->port->st, 0, sizeof(mc->port->st));
        (void) brim_mctext_put_reply(out, BRIM_MCTEXT_REPLY_RESET);
        return;
    } else if (!((n == 5 && memcmp(a, "items", 5) == 0)
                 || (n == 5 && memcmp(a, "slabs", 5) == 0)
                 || (n == 8 && memcmp(a, "settings", 8) == 0)
                 || (n == 5 && memcmp(a, "sizes", 5) == 0)
                 || (n == 5 && memcmp(a, "conns", 5) == 0)))
    {
        (void) brim_mctext_put_reply(out, BRIM_MCTEXT_REPLY_ERROR);
        return;
    }
    (void) brim_mctext_put_reply(out, BRIM_MCTEXT_REPLY_END);
}

/* mc_done_fn of flush_all's FLUSH to one member: count a failure. */
static void
flush_done(struct mc_cmd *mc, uint32_t slot, const struct brim_rep *rep)
{
    (void) slot;
    if (rep->status != 0) {
        mc->stage++;
        brim_log_warn("memcached flush_all: a member did not flush: %.*s",
                      (int) rep->message_len, rep->message);
    }
}

/* mc_finish_fn of flush_all: OK once the coordinator recorded the flush
 * and every member has it. */
static void
flush_finish(struct mc_cmd *mc)
{
    struct brim_buf *out = mc_out(mc);
    char             msg[200];

    if (mc->stage > 0) {
        if (mc->why[0] != '\0') {
            snprintf(msg, sizeof(msg), "flush_all: %s", mc->why);
        } else {
            snprintf(msg, sizeof(msg),
                     "flush_all: %u members of the cluster did not flush "
                     "yet (they will within a heartbeat)",
                     mc->stage);
        }
        mc->port->st.server_errors++;
        if (!mc->cmd.noreply) {
            (void) brim_mctext_put_server_error(out, msg);
        } else {
            mc->port->st.noreply_failed++;
        }
        return;
    }
    if (!mc->cmd.noreply) {
        (void) brim_mctext_put_reply(out, BRIM_MCTEXT_REPLY_OK);
    }
}

/* Every member of the committed map but this node learns the mark in
 * MC->req (FLUSH), and so does this node. */
static void
flush_members(struct mc_cmd *mc)
{
    struct brim_node       *node = mc->port->node;
    const struct brim_topo *t = &node->topo.committed;
    uint32_t                i;

    mc->done = flush_done;
    for (i = 0; !node->cfg.standalone && i < t->nmembers; i++) {
        if ((int32_t) i != node->topo.self) {
            mc_run_at(mc, &mc->req, t->members[i].addr, i);
        }
    }
    brim_log_info("memcached flush_all from %s: mark %" PRIu64 " Unix ms",
                  mc->c->peer, mc->req.flush_ms);
    brim_node_flush_learn(node, mc->req.flush_ms, mc->req.delay_s == 0);
}

/* mc_done_fn of flush_all's FLUSH to the coordinator: recorded (then the
 * members are told), or refused (then nothing flushes). */
static void
flush_recorded(struct mc_cmd *mc, uint32_t slot, const struct brim_rep *rep)
{
    (void) slot;
    if (rep->status != 0) {
        mc->stage++;
        snprintf(mc->why, sizeof(mc->why),
                 "the coordinator did not record it (%.*s); not flushed",
                 (int) BRIM_MIN(rep->message_len, 100), rep->message);
        brim_log_warn("memcached flush_all: %s", mc->why);
        return;
    }
    flush_members(mc);
}

/*
 * flush_all [delay]: refused unless --memcached-allow-flush. The port is
 * one logical cache, so the whole cluster flushes, as one event at an
 * absolute time, its mark: now plus the delay, Unix ms (flush.h). The
 * coordinator records the mark first (it gives it to nodes that join
 * later, and to any member that misses it, in JOIN and HEARTBEAT
 * replies); then every member gets FLUSH with the mark, and this node
 * learns it. The reply waits for them all.
 */
static void
cmd_flush(struct mc_cmd *mc)
{
    struct brim_node *node = mc->port->node;
    uint64_t          at = 0, now = (uint64_t) time(NULL);

    if (!node->cfg.memcached_allow_flush) {
        (void) brim_mctext_put_client_error(mc_out(mc),
                                            "flush_all not allowed");
        return;
    }
    mc->port->st.cmd_flush++;
    memset(&mc->req, 0, sizeof(mc->req));
    mc->req.op = BRIM_OP_FLUSH;
    mc->req.flush_ms = brim_node_flush_clock_ms();
    if (mc->cmd.has_exptime
        && brim_mctext_expiry(mc->cmd.exptime, now, &at)
            == BRIM_MCTEXT_EXPIRY_AT)
    {
        /* Members judge a delayed mark by their clocks, and apply one
         * without a delay as it arrives (dispatch.c). */
        mc->req.delay_s = (uint32_t) (at - now);
        mc->req.flush_ms += (uint64_t) mc->req.delay_s * 1000u;
    }
    mc->finish = flush_finish;
    mc->stage = 0;
    mc->why[0] = '\0';
    if (node->cfg.standalone || node->cfg.coordinator[0] == '\0') {
        flush_members(mc);
        return;
    }
    mc->done = flush_recorded;
    mc_run_at(mc, &mc->req, node->cfg.coordinator, UINT32_MAX);
}

/* ---- the connection ---- */

/* Run the command in MC->cmd (parsed, no error). */
static void
mc_exec(struct mc_cmd *mc)
{
    struct brim_buf *out = mc_out(mc);

    switch (mc->cmd.kind) {
    case BRIM_MCTEXT_GET:
    case BRIM_MCTEXT_GETS:
    case BRIM_MCTEXT_GAT:
    case BRIM_MCTEXT_GATS:
        cmd_get(mc);
        return;
    case BRIM_MCTEXT_FLUSH_ALL:
        cmd_flush(mc);
        return;
    case BRIM_MCTEXT_VERSION:
        (void) brim_mctext_put_version(out, MC_VERSION);
        return;
    case BRIM_MCTEXT_VERBOSITY:
        if (!mc->cmd.noreply) {
            (void) brim_mctext_put_reply(out, BRIM_MCTEXT_REPLY_OK);
        }
        return;
    case BRIM_MCTEXT_STATS:
        cmd_stats(mc);
        return;
    case BRIM_MCTEXT_QUIT:
        brim_conn_drain(mc->c);
        return;
    case BRIM_MCTEXT_MN:
        (void) brim_mctext_put_reply(out, BRIM_MCTEXT_REPLY_MN);
        return;
    case BRIM_MCTEXT_MG:
    case BRIM_MCTEXT_MS:
    case BRIM_MCTEXT_MD:
    case BRIM_MCTEXT_MA:
    case BRIM_MCTEXT_ME:
        mc_meta(mc);
        return;
    default:
        cmd_keyed(mc);
        return;
    }
}

/* mc_done_fn of the delete after a too-large set: nothing to answer. */
static void
quiet_done(struct mc_cmd *mc, uint32_t slot, const struct brim_rep *rep)
{
    (void) mc;
    (void) slot;
    (void) rep;
}

/*
 * A storage command refused as too large: memcached also deletes what the
 * key held for a set (and an ms of any mode), so that stale data does not
 * outlive a failed write (docs/memcached.md, "Notes for the node").
 */
static void
mc_too_large(struct mc_cmd *mc)
{
    struct brim_req *req = &mc->req;

    mc->port->st.server_errors++;
    (void) brim_mctext_put_err(mc_out(mc), &mc->cmd);
    if ((mc->cmd.kind != BRIM_MCTEXT_SET && mc->cmd.kind != BRIM_MCTEXT_MS)
        || mc->cmd.key == NULL)
    {
        return;
    }
    memset(req, 0, sizeof(*req));
    req->op = BRIM_OP_DEL;
    brim_mctext_cmd_key(&mc->cmd, &req->key, &req->key_len);
    mc->done = quiet_done;
    mc_run(mc, req, 0);
}

/* The key CMD works on, in *KEY: 1, or 0 for a command of no key or of
 * several (a multi-key get runs alone instead). */
static int
mc_key_of(const struct brim_mctext_cmd *cmd, const char **key, size_t *len)
{
    size_t pos = 0;

    switch (cmd->kind) {
    case BRIM_MCTEXT_GET:
    case BRIM_MCTEXT_GETS:
    case BRIM_MCTEXT_GAT:
    case BRIM_MCTEXT_GATS:
        return cmd->nkeys == 1 && brim_mctext_next_key(cmd, &pos, key, len);
    default:
        if (cmd->key == NULL) {
            return 0;
        }
        brim_mctext_cmd_key(cmd, key, len);
        return 1;
    }
}

/* True for a command that runs with nothing else in flight. */
static int
mc_alone(const struct brim_mctext_cmd *cmd)
{
    switch (cmd->kind) {
    case BRIM_MCTEXT_QUIT:
    case BRIM_MCTEXT_FLUSH_ALL:
        return 1;
    case BRIM_MCTEXT_GET:
    case BRIM_MCTEXT_GETS:
    case BRIM_MCTEXT_GAT:
    case BRIM_MCTEXT_GATS:
        return cmd->nkeys > 1;
    default:
        return cmd->close;
    }
}

/*
 * True when the command CMD just parsed must wait for the commands before
 * it on CL (struct mc_client says when).
 */
static int
mc_must_wait(const struct mc_client *cl, const struct brim_mctext_cmd *cmd)
{
    const struct mc_cmd *m;
    const char          *key, *k;
    size_t               key_len, k_len, held = 0;
    int                  keyed;

    if (cl->head == NULL) {
        return 0;
    }
    if (cl->n >= MC_PIPELINE_MAX || mc_alone(cmd)) {
        return 1;
    }
    keyed = mc_key_of(cmd, &key, &key_len);
    for (m = cl->head; m != NULL; m = m->next) {
        held += m->out.len;
        if (m->complete) {
            continue;
        }
        if (mc_alone(&m->cmd)) {
            return 1;
        }
        if (keyed && mc_key_of(&m->cmd, &k, &k_len) && k_len == key_len
            && memcmp(k, key, key_len) == 0)
        {
            return 1; /* an earlier command on this key still runs */
        }
    }
    return held > cl->port->srv.cfg.out_high_water;
}

/* brim_stream_fn of the port's connections: one command per call. */
static int
mc_stream(struct brim_conn *c, const char *data, size_t len, size_t *used)
{
    struct mc_client      *cl = c->data;
    struct brim_mctext_cmd cmd;
    struct mc_cmd         *mc;
    int                    rc;

    if (cl == NULL) {
        cl = brim_calloc(1, sizeof(*cl));
        if (cl == NULL) {
            return BRIM_ENOMEM;
        }
        cl->port = c->srv->data;
        cl->c = c;
        c->data = cl;
    }
    if (cl->swallow > 0) {
        /* The rest of a refused data block. */
        *used = BRIM_MIN(len, cl->swallow);
        cl->swallow -= *used;
        return *used > 0 ? 0 : BRIM_EAGAIN;
    }
    if (len == 0) {
        return BRIM_EAGAIN;
    }
    rc = brim_mctext_parse(data, len, &cl->port->lim, &cmd);
    if (rc == BRIM_EAGAIN) {
        return rc;
    }
    mc = mc_must_wait(cl, &cmd) ? NULL : mc_cmd_new(cl);
    if (mc == NULL) {
        if (cl->head == NULL) {
            return BRIM_ENOMEM; /* nothing to wait for */
        }
        /* Parsed again once an earlier command ends (the parse is pure). */
        if (!cl->held) {
            cl->held = 1;
            brim_conn_defer(c);
        }
        return 0;
    }
    *used = cmd.consumed;
    mc->start_ns = uv_hrtime();
    mc->cmd = cmd;
    mc->raw = data;
    mc->raw_len = cmd.consumed;
    cl->in_stream = 1;
    if (cmd.close) {
        brim_conn_drain(c); /* after the replies before it */
    } else if (cmd.err == BRIM_MCTEXT_ERR_TOO_LARGE) {
        cl->swallow = cmd.swallow;
        mc_too_large(mc);
    } else if (cmd.err != BRIM_MCTEXT_ERR_NONE) {
        cl->swallow = cmd.swallow;
        (void) brim_mctext_put_err(mc_out(mc), &mc->cmd);
    } else {
        mc_exec(mc);
    }
    if (mc->pending == 0) {
        mc_end(mc);
    }
    cl->in_stream = 0;
    return 0;
}

static void
mc_conn_close(struct brim_conn *c)
{
    struct mc_client *cl = c->data;
    struct mc_cmd    *mc, *next;

    if (cl == NULL) {
        return;
    }
    /* Every command has ended (a running one holds a reference). */
    for (mc = cl->head; mc != NULL; mc = next) {
        next = mc->next;
        mc_cmd_free(mc);
    }
    brim_free(cl);
    c->data = NULL;
}

/* True when ADDR's host is a loopback address (127.0.0.0/8, ::1). */
static int
mc_loopback(const char *addr)
{
    struct sockaddr_storage sa;

    if (brim_addr_parse(addr, &sa) != 0) {
        return 0;
    }
    if (sa.ss_family == AF_INET) {
        return (ntohl(((struct sockaddr_in *) &sa)->sin_addr.s_addr) >> 24)
            == 127;
    }
    return memcmp(&((struct sockaddr_in6 *) &sa)->sin6_addr, &in6addr_loopback,
                  sizeof(struct in6_addr))
        == 0;
}

int
brim_mcport_check(const struct brim_node_config *cfg,
                  char                           errbuf[BRIM_ERRBUF_LEN])
{
    if (cfg->memcached_listen[0] == '\0') {
        if (cfg->memcached_insecure || cfg->memcached_allow_flush) {
            brim_errfmt(errbuf, "--memcached-%s needs --memcached-listen",
                        cfg->memcached_insecure ? "insecure" : "allow-flush");
            return BRIM_EINVAL;
        }
        return 0;
    }
    if (cfg->client_secret_file[0] != '\0' && !cfg->memcached_insecure
        && !mc_loopback(cfg->memcached_listen))
    {
        brim_errfmt(errbuf,
                    "--memcached-listen %s: memcached's protocol has no "
                    "authentication, and this node's brim port requires a "
                    "client secret; listen on a loopback address, or give "
                    "--memcached-insecure to expose the data on the network",
                    cfg->memcached_listen);
        return BRIM_EINVAL;
    }
    return 0;
}

int
brim_mcport_start(struct brim_node *node, const struct brim_server_config *cfg,
                  char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_mcport       *port;
    struct brim_server_config cc = *cfg;

    if (node->cfg.memcached_listen[0] == '\0') {
        return 0;
    }
    if (brim_mcport_check(&node->cfg, errbuf) != 0) {
        return BRIM_EINVAL;
    }
    port = brim_calloc(1, sizeof(*port));
    if (port == NULL) {
        brim_errfmt(errbuf, "memcached port: out of memory");
        return BRIM_ENOMEM;
    }
    port->node = node;
    brim_mctext_limits_default(&port->lim);
    port->lim.max_key_bytes = node->cfg.limits.max_key_bytes;
    port->lim.max_value_bytes = node->cfg.limits.max_value_bytes;
    cc.gone = NULL; /* no AUTH on this port */
    cc.gone_arg = NULL;
    cc.stream = mc_stream;
    cc.refuse_line = "ERROR Too many open connections\r\n"; /* memcached's */
    if (brim_server_listen(&port->srv, node->loop, node->cfg.memcached_listen,
                           &cc, NULL, mc_conn_close, port, errbuf)
        != 0)
    {
        char why[BRIM_ERRBUF_LEN];

        snprintf(why, sizeof(why), "%s", errbuf);
        brim_errfmt(errbuf, "--memcached-listen: %s", why);
        brim_free(port);
        return BRIM_ESYS;
    }
    node->mc = port;
    return 0;
}

const struct brim_node_lat *
brim_mcport_latency(const struct brim_node *node, uint32_t kind)
{
    if (node->mc == NULL || kind == BRIM_MCTEXT_NONE
        || kind >= BRIM_MCTEXT_KIND_COUNT)
    {
        return NULL;
    }
    return &node->mc->lat[kind];
}

int
brim_mcport_port(const struct brim_node *node)
{
    return node->mc != NULL ? brim_server_port(&node->mc->srv) : 0;
}

void
brim_mcport_leave(struct brim_node *node)
{
    if (node->mc == NULL || node->mc->leaving) {
        return;
    }
    node->mc->leaving = 1;
    brim_server_stop_accepting(&node->mc->srv);
    brim_log_info("memcached port: no longer accepting (leaving); %" PRIu64
                  " connections served until the node stops",
                  node->mc->srv.stats.conns_current);
}

/* brim_mcport_drain()'s timer: done once every connection ended. */
static void
mc_drain_cb(uv_timer_t *t)
{
    struct brim_mcport *port = t->data;
    void (*done)(struct brim_node * node) = port->drain_done;

    if (port->srv.stats.conns_current > 0
        && uv_now(port->node->loop) < port->drain_until)
    {
        return;
    }
    if (port->srv.stats.conns_current > 0) {
        brim_log_warn("memcached port: %" PRIu64 " connections still open "
                      "after the drain's bound; closing them",
                      port->srv.stats.conns_current);
    }
    uv_timer_stop(t);
    uv_close((uv_handle_t *) t, NULL);
    port->drain_done = NULL;
    done(port->node);
}

int
brim_mcport_drain(struct brim_node *node, void (*done)(struct brim_node *node))
{
    struct brim_mcport *port = node->mc;

    if (port == NULL || port->drain_done != NULL
        || port->srv.stats.conns_current == 0)
    {
        return 0;
    }
    brim_log_info("memcached port: answering what %" PRIu64
                  " connections hold, then closing them",
                  port->srv.stats.conns_current);
    port->leaving = 1;
    port->drain_done = done;
    port->drain_until =
        uv_now(node->loop) + node->cfg.memcached_timeout_ms + 500;
    brim_server_drain(&port->srv);
    uv_timer_init(node->loop, &port->drain_timer);
    port->drain_timer.data = port;
    uv_timer_start(&port->drain_timer, mc_drain_cb, 10, 10);
    return 1;
}

int
brim_mcport_draining(const struct brim_node *node)
{
    return node->mc != NULL && node->mc->drain_done != NULL;
}

void
brim_mcport_stop(struct brim_node *node)
{
    if (node->mc != NULL) {
        brim_server_close(&node->mc->srv);
    }
}

void
brim_mcport_destroy(struct brim_node *node)
{
    if (node->mc != NULL) {
        brim_server_destroy(&node->mc->srv);
        brim_free(node->mc);
        node->mc = NULL;
    }
}
