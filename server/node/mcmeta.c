/*
 * server/node/mcmeta.c - the memcached port's meta commands (mg ms md ma
 * me), each as one brim op (mcop.c), or two where memcached creates an
 * item on a miss (mg N, ma N: an ADD, and when another client's ADD won,
 * the first op again), answered as memcached 1.6.18 answers
 * (brim_mctext_put_meta()). Flags that need per-item state brim does not
 * keep (h l, the stale-while-revalidate family I R, md and ma with C) are
 * answered as memcached answers a flag it does not know; docs/memcached.md
 * lists them.
 */
#include "server/node/mcport_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define HAS(mc, c) (((mc)->cmd.meta.flags & BRIM_MCTEXT_MF(c)) != 0)

/* Flags this port refuses, per command (mg ms md ma). */
#define MG_UNSUPPORTED                                                         \
    (BRIM_MCTEXT_MF('h') | BRIM_MCTEXT_MF('l') | BRIM_MCTEXT_MF('R'))
#define MS_UNSUPPORTED (BRIM_MCTEXT_MF('I'))
#define MD_UNSUPPORTED (BRIM_MCTEXT_MF('I') | BRIM_MCTEXT_MF('C'))
#define MA_UNSUPPORTED (BRIM_MCTEXT_MF('C'))

/* A meta reply's t: REP's TTL left, -1 for none. */
static int64_t
meta_ttl(const struct brim_rep *rep)
{
    return rep->ttl_s != 0 ? (int64_t) rep->ttl_s : -1;
}

/* The t of an item created with exptime EXPTIME (mg N, ma N). */
static int64_t
meta_new_ttl(int32_t exptime)
{
    uint64_t now = (uint64_t) time(NULL), at = 0;

    switch (brim_mctext_expiry(exptime, now, &at)) {
    case BRIM_MCTEXT_EXPIRY_AT:
        return (int64_t) (at - now);
    case BRIM_MCTEXT_EXPIRY_NOW:
        return 1;
    default:
        return -1;
    }
}

static void
meta_put(struct mc_cmd *mc, const struct brim_mctext_meta_item *item)
{
    (void) brim_mctext_put_meta(mc_out(mc), &mc->cmd, item);
}

/* Set MC->req to the op OP on the command's key. */
static struct brim_req *
meta_req(struct mc_cmd *mc, uint32_t op)
{
    struct brim_req *req = &mc->req;

    memset(req, 0, sizeof(*req));
    req->op = op;
    brim_mctext_cmd_key(&mc->cmd, &req->key, &req->key_len);
    return req;
}

/* ---- mg ---- */

static void mg_done(struct mc_cmd *mc, uint32_t slot,
                    const struct brim_rep *rep);

/* The ADD of mg N on a miss was answered. */
static void
mg_vivified(struct mc_cmd *mc, uint32_t slot, const struct brim_rep *rep)
{
    struct brim_mctext_meta_item item;
    struct brim_req             *req;

    if (rep->status == BRIM_ENOTSTORED) {
        /* Another client's item came first: read it. */
        mc->stage = 2;
        req = meta_req(mc, BRIM_OP_GET);
        mc->done = mg_done;
        mc_run(mc, req, slot);
        return;
    }
    if (rep->status != 0) {
        mc_put_error(mc, rep);
        return;
    }
    memset(&item, 0, sizeof(item));
    item.code = BRIM_MCTEXT_META_HD;
    item.value = "";
    item.cas = rep->cas;
    item.ttl_s = meta_new_ttl(mc->cmd.meta.vivify_ttl);
    item.won = 1; /* this client recaches it */
    meta_put(mc, &item);
}

static void
mg_done(struct mc_cmd *mc, uint32_t slot, const struct brim_rep *rep)
{
    struct brim_mctext_meta_item item;
    struct brim_req             *req;

    memset(&item, 0, sizeof(item));
    if (mc->stage == 0) {
        /* memcached counts an mg T hit as a touch, a miss as a get. */
        if (rep->status == 0 && HAS(mc, 'T')) {
            mc->port->st.cmd_touch++;
            mc->port->st.touch_hits++;
        } else {
            mc->port->st.cmd_get++;
            mc->port->st.get_hits += rep->status == 0;
        }
    }
    if (rep->status == 0) {
        item.code = BRIM_MCTEXT_META_HD;
        item.value = rep->value;
        item.value_len = rep->value_len;
        item.cas = rep->cas;
        item.client_flags = rep->flags;
        item.ttl_s = meta_ttl(rep);
        meta_put(mc, &item);
        return;
    }
    if (rep->status != BRIM_ENOTFOUND) {
        mc_put_error(mc, rep);
        return;
    }
    mc->port->st.get_misses += mc->stage == 0;
    if (HAS(mc, 'N') && mc->stage == 0) {
        mc->stage = 1;
        req = meta_req(mc, BRIM_OP_ADD);
        req->value = "";
        req->ttl_s = mc_ttl(mc->cmd.meta.vivify_ttl);
        mc->done = mg_vivified;
        mc_run(mc, req, slot);
        return;
    }
    item.code = BRIM_MCTEXT_META_EN;
    meta_put(mc, &item);
}

static void
meta_mg(struct mc_cmd *mc)
{
    struct brim_req *req;

    req = meta_req(mc, HAS(mc, 'T') ? BRIM_OP_GAT : BRIM_OP_GET);
    if (HAS(mc, 'T')) {
        req->ttl_s = mc_ttl(mc->cmd.meta.ttl);
    }
    mc->done = mg_done;
    mc_run(mc, req, 0);
}

/* ---- ms, md ---- */

static void
ms_done(struct mc_cmd *mc, uint32_t slot, const struct brim_rep *rep)
{
    struct brim_mctext_meta_item item;

    (void) slot;
    memset(&item, 0, sizeof(item));
    switch (rep->status) {
    case 0:
        item.code = BRIM_MCTEXT_META_HD;
        item.cas = rep->cas;
        break;
    case BRIM_ENOTSTORED:
        item.code = BRIM_MCTEXT_META_NS;
        break;
    case BRIM_EEXISTS:
        item.code = BRIM_MCTEXT_META_EX;
        break;
    case BRIM_ENOTFOUND:
        item.code = BRIM_MCTEXT_META_NF;
        break;
    default:
        mc_put_error(mc, rep);
        return;
    }
    meta_put(mc, &item);
}

static void
meta_ms(struct mc_cmd *mc)
{
    const struct brim_mctext_meta *m = &mc->cmd.meta;
    struct brim_req               *req = meta_req(mc, mc_store_op(m->store));

    mc->port->st.cmd_set++;
    req->value = mc->cmd.data;
    req->value_len = mc->cmd.data_len;
    req->flags = m->client_flags;
    req->ttl_s = mc_ttl(m->ttl);
    req->cas = m->cas;
    mc->done = ms_done;
    mc_run(mc, req, 0);
}

static void
md_done(struct mc_cmd *mc, uint32_t slot, const struct brim_rep *rep)
{
    struct brim_mctext_meta_item item;

    (void) slot;
    if (rep->status != 0 && rep->status != BRIM_ENOTFOUND) {
        mc_put_error(mc, rep);
        return;
    }
    memset(&item, 0, sizeof(item));
    item.code = rep->status == 0 ? BRIM_MCTEXT_META_HD : BRIM_MCTEXT_META_NF;
    *(rep->status == 0 ? &mc->port->st.delete_hits
                       : &mc->port->st.delete_misses) += 1;
    meta_put(mc, &item);
}

/* ---- ma ---- */

static void ma_done(struct mc_cmd *mc, uint32_t slot,
                    const struct brim_rep *rep);

/* INCR or DECR by the command's delta. */
static void
ma_run(struct mc_cmd *mc, uint32_t slot)
{
    struct brim_req *req =
        meta_req(mc, mc->cmd.meta.incr ? BRIM_OP_INCR : BRIM_OP_DECR);

    req->delta = mc->cmd.meta.delta;
    mc->done = ma_done;
    mc_run(mc, req, slot);
}

/* The exptime of the item ma N creates: T's when given (memcached 1.6.18
 * does so: "ma k N30 T50 t" answers t50), else N's. */
static int32_t
ma_vivify_ttl(const struct mc_cmd *mc)
{
    return HAS(mc, 'T') ? mc->cmd.meta.ttl : mc->cmd.meta.vivify_ttl;
}

/* ma's HD (or VA) for the counter MC->number with CAS and the TTL an
 * item of exptime EXPTIME has. */
static void
ma_put_hd(struct mc_cmd *mc, uint64_t cas, int32_t exptime)
{
    struct brim_mctext_meta_item item;

    memset(&item, 0, sizeof(item));
    item.code = BRIM_MCTEXT_META_HD;
    item.number = mc->number;
    item.cas = cas;
    item.ttl_s = meta_new_ttl(exptime);
    meta_put(mc, &item);
}

/* The ADD of ma N on a miss (the initial value J) was answered. */
static void
ma_vivified(struct mc_cmd *mc, uint32_t slot, const struct brim_rep *rep)
{
    if (rep->status == BRIM_ENOTSTORED) {
        mc->stage = 2; /* created meanwhile: apply the delta to it */
        ma_run(mc, slot);
        return;
    }
    if (rep->status != 0) {
        mc_put_error(mc, rep);
        return;
    }
    ma_put_hd(mc, rep->cas, ma_vivify_ttl(mc));
}

/* ma T's TOUCH after the counter changed was answered. */
static void
ma_touched(struct mc_cmd *mc, uint32_t slot, const struct brim_rep *rep)
{
    (void) slot;
    if (rep->status != 0 && rep->status != BRIM_ENOTFOUND) {
        mc_put_error(mc, rep);
        return;
    }
    /* NOTFOUND: deleted (or expired) since; the op itself was applied. */
    ma_put_hd(mc, mc->cas, mc->cmd.meta.ttl);
}

static void
ma_done(struct mc_cmd *mc, uint32_t slot, const struct brim_rep *rep)
{
    struct brim_mctext_meta_item item;
    struct brim_req             *req;
    struct mc_counters          *st = &mc->port->st;
    char                         num[24];
    int                          n;

    memset(&item, 0, sizeof(item));
    if (rep->status == 0 && HAS(mc, 'T')) {
        /* The new TTL, as memcached's ma T sets it on success: a TOUCH
         * right after the op (not atomic with it: a write between the
         * two keeps this TTL). TOUCH leaves the CAS value. */
        *(mc->cmd.meta.incr ? &st->incr_hits : &st->decr_hits) += 1;
        mc->number = rep->number;
        mc->cas = rep->cas;
        req = meta_req(mc, BRIM_OP_TOUCH);
        req->ttl_s = mc_ttl(mc->cmd.meta.ttl);
        mc->done = ma_touched;
        mc_run(mc, req, slot);
        return;
    }
    if (rep->status == 0) {
        *(mc->cmd.meta.incr ? &st->incr_hits : &st->decr_hits) += 1;
        item.code = BRIM_MCTEXT_META_HD;
        item.number = rep->number;
        item.cas = rep->cas;
        item.ttl_s = meta_ttl(rep);
        meta_put(mc, &item);
        return;
    }
    if (rep->status != BRIM_ENOTFOUND) {
        mc_put_error(mc, rep);
        return;
    }
    *(mc->cmd.meta.incr ? &st->incr_misses : &st->decr_misses) += 1;
    if (HAS(mc, 'N') && mc->stage == 0) {
        /* memcached stores J (default 0) and does not apply the delta. */
        mc->stage = 1;
        mc->number = mc->cmd.meta.initial;
        n = snprintf(num, sizeof(num), "%" PRIu64, mc->number);
        req = meta_req(mc, BRIM_OP_ADD);
        req->value = num; /* copied by a forward, used at once here */
        req->value_len = (size_t) n;
        req->ttl_s = mc_ttl(ma_vivify_ttl(mc));
        mc->done = ma_vivified;
        mc_run(mc, req, slot);
        return;
    }
    item.code = BRIM_MCTEXT_META_NF;
    meta_put(mc, &item);
}

/* ---- me ---- */

static void
me_done(struct mc_cmd *mc, uint32_t slot, const struct brim_rep *rep)
{
    char text[160];

    (void) slot;
    if (rep->status == BRIM_ENOTFOUND) {
        (void) brim_mctext_put_reply(mc_out(mc), BRIM_MCTEXT_REPLY_EN);
        return;
    }
    if (rep->status != 0) {
        mc_put_error(mc, rep);
        return;
    }
    /* memcached's fields; brim keeps no last access or fetched mark. */
    snprintf(text, sizeof(text),
             "exp=%" PRId64 " la=0 cas=%" PRIu64 " fetch=no cls=1 size=%zu",
             meta_ttl(rep), rep->cas, rep->value_len);
    (void) brim_mctext_put_me(mc_out(mc), &mc->cmd, text);
}

void
mc_meta(struct mc_cmd *mc)
{
    enum brim_mctext_kind kind = mc->cmd.kind;
    uint64_t              refused = kind == BRIM_MCTEXT_MG ? MG_UNSUPPORTED
                     : kind == BRIM_MCTEXT_MS              ? MS_UNSUPPORTED
                     : kind == BRIM_MCTEXT_MD              ? MD_UNSUPPORTED
                     : kind == BRIM_MCTEXT_MA              ? MA_UNSUPPORTED
                                                           : 0;
    const char           *line;
    size_t                len;

    if ((mc->cmd.meta.flags & refused) != 0) {
        line = brim_mctext_err_reply(kind == BRIM_MCTEXT_MG
                                             || kind == BRIM_MCTEXT_MS
                                         ? BRIM_MCTEXT_ERR_META_FLAG
                                         : BRIM_MCTEXT_ERR_META_BAD,
                                     &len);
        (void) brim_buf_append(mc_out(mc), line, len);
        return;
    }
    mc->stage = 0;
    switch (kind) {
    case BRIM_MCTEXT_MG:
        meta_mg(mc);
        return;
    case BRIM_MCTEXT_MS:
        meta_ms(mc);
        return;
    case BRIM_MCTEXT_MD:
        mc->done = md_done;
        mc_run(mc, meta_req(mc, BRIM_OP_DEL), 0);
        return;
    case BRIM_MCTEXT_MA:
        ma_run(mc, 0);
        return;
    default:
        mc->done = me_done;
        mc_run(mc, meta_req(mc, BRIM_OP_GET), 0);
        return;
    }
}
