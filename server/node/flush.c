/*
 * server/node/flush.c - flush marks (flush.h): learning them, applying
 * them to the store when their time comes or when a peer's stamp shows
 * one applied elsewhere, and the stamps themselves. It owns no data:
 * applying a mark is brim_store_flush(). Why marks and stamps rather than
 * ending streams: docs/design.md, "flush_all as one cluster event".
 */
#include "server/node/flush.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/defs.h"
#include "common/parse.h"
#include "server/log.h"
#include "server/node/store.h"

/* BRIM_TEST_FLUSH_CLOCK_LAG_MS: this node's flush clock runs that far
 * behind, and a flush for now waits for it too (test only: a slow clock,
 * or a FLUSH that comes late). */
static uint32_t flush_lag_ms;

uint64_t
brim_node_flush_clock_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u
        - flush_lag_ms;
}

static void flush_timer_cb(uv_timer_t *t);

/* Empty the store for MARK_MS: every item there was stored before it. */
static void
flush_apply(struct brim_node *node, uint64_t mark_ms, const char *why)
{
    struct brim_node_flush *fl = &node->flush;

    brim_store_flush(node->store);
    fl->applied_ms = mark_ms;
    fl->applied++;
    if (fl->pending_lo_ms != 0 && fl->pending_lo_ms <= mark_ms) {
        fl->pending_lo_ms = fl->pending_hi_ms > mark_ms ? fl->pending_hi_ms : 0;
    }
    if (fl->pending_hi_ms <= mark_ms) {
        fl->pending_hi_ms = fl->pending_lo_ms;
    }
    brim_log_info("flush: every item removed (mark %" PRIu64 " Unix ms, %s)",
                  mark_ms, why);
}

/* Run the timer for the earliest pending mark, if any. */
static void
flush_arm(struct brim_node *node)
{
    struct brim_node_flush *fl = &node->flush;
    uint64_t                now = brim_node_flush_clock_ms();

    if (fl->pending_lo_ms == 0) {
        uv_timer_stop(&fl->timer);
        return;
    }
    uv_timer_start(&fl->timer, flush_timer_cb,
                   fl->pending_lo_ms > now ? fl->pending_lo_ms - now : 0, 0);
}

static void
flush_timer_cb(uv_timer_t *t)
{
    struct brim_node *node = t->data;
    uint64_t          mark = node->flush.pending_lo_ms;

    if (mark == 0) {
        return;
    }
    if (mark > brim_node_flush_clock_ms()) {
        flush_arm(node); /* woken early (the clock was set back) */
        return;
    }
    flush_apply(node, mark, "its time came");
    flush_arm(node);
}

void
brim_node_flush_init(struct brim_node *node)
{
    const char *env = getenv("BRIM_TEST_FLUSH_CLOCK_LAG_MS");

    memset(&node->flush, 0, sizeof(node->flush));
    uv_timer_init(node->loop, &node->flush.timer);
    node->flush.timer.data = node;
    if (env != NULL && *env != '\0'
        && brim_parse_u32(env, 0, 3600000, &flush_lag_ms) == 0)
    {
        brim_log_warn("flush: BRIM_TEST_FLUSH_CLOCK_LAG_MS=%u (test only): "
                      "flush marks come that late here",
                      flush_lag_ms);
    }
}

void
brim_node_flush_stop(struct brim_node *node)
{
    uv_close((uv_handle_t *) &node->flush.timer, NULL);
}

void
brim_node_flush_learn(struct brim_node *node, uint64_t mark_ms, int now)
{
    struct brim_node_flush *fl = &node->flush;

    if (mark_ms <= fl->applied_ms) {
        return;
    }
    if ((now && flush_lag_ms == 0) || mark_ms <= brim_node_flush_clock_ms()) {
        flush_apply(node, mark_ms, "its time has come");
    } else if (fl->pending_lo_ms == 0) {
        fl->pending_lo_ms = fl->pending_hi_ms = mark_ms;
        brim_log_info("flush: mark %" PRIu64 " Unix ms pending", mark_ms);
    } else {
        fl->pending_lo_ms = BRIM_MIN(fl->pending_lo_ms, mark_ms);
        fl->pending_hi_ms = BRIM_MAX(fl->pending_hi_ms, mark_ms);
    }
    flush_arm(node);
}

int
brim_node_flush_stamp(struct brim_node *node, uint64_t stamp_ms)
{
    struct brim_node_flush *fl = &node->flush;

    if (stamp_ms > fl->applied_ms) {
        /* A peer has applied it: it happened, whatever our clock says. */
        flush_apply(node, stamp_ms, "a peer applied it");
        fl->stamped++;
        flush_arm(node);
        return 0;
    }
    return stamp_ms < fl->applied_ms;
}

uint64_t
brim_node_flush_applied(const struct brim_node *node)
{
    return node->flush.applied_ms;
}
