/*
 * server/node/links.c - node-to-node connections (links.h): one per
 * address, HELLO and AUTH by server/peer.c, a reconnect backoff, and the
 * listeners told when a link opens. A user that finds a link closed asks
 * for it (brim_link_ensure) and goes on when it is told: nothing here
 * decides to stop trying.
 */
#include "server/node/links.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "server/log.h"
#include "server/node/node.h"

static void links_arm(struct brim_node_links *links);

static void
link_connect_cb(struct brim_peer *p, int status)
{
    struct brim_node_link  *l = p->data;
    struct brim_node_links *links = l->set;
    uint32_t                i;

    if (status != 0) {
        /* The close callback follows and sets the backoff. Log the first
         * failure, then one in twenty. */
        if (l->failures++ % 20 == 0) {
            brim_log_warn("link to %s: connect: %s%s%s (%u in a row; "
                          "retrying)",
                          l->addr, brim_strerror(status),
                          p->hs_error[0] != '\0' ? ": " : "", p->hs_error,
                          l->failures);
        }
        return;
    }
    if (l->failures > 0 || l->opens > 0) {
        brim_log_info("link to %s: connected again", l->addr);
    }
    l->failures = 0;
    l->wanted = 0;
    l->heard_ms = uv_now(links->node->loop);
    l->down_since_ms = 0;
    l->gone_warned = 0;
    l->backoff_ms = BRIM_LINK_BACKOFF_MIN_MS;
    l->opens++;
    for (i = 0; i < links->nlisteners; i++) {
        links->on_open[i](links->node, l);
    }
}

static void
link_close_cb(struct brim_peer *p, int status)
{
    struct brim_node_link  *l = p->data;
    struct brim_node_links *links = l->set;

    if (links->stopping) {
        return;
    }
    if (l->failures == 0) {
        brim_log_info("link to %s: closed (%s); reconnecting in %u ms when "
                      "needed",
                      l->addr, brim_strerror(status), l->backoff_ms);
        links->lost++;
    }
    l->retry_at_ms = uv_now(links->node->loop) + l->backoff_ms;
    if (l->down_since_ms == 0) {
        l->down_since_ms = uv_now(links->node->loop);
    }
    l->asked_ms = 0; /* its questions were lost with it */
    l->backoff_ms =
        BRIM_MIN(2 * l->backoff_ms, (uint32_t) BRIM_LINK_BACKOFF_MAX_MS);
    /* Users with calls in flight heard ECLOSED and ask again; a link
     * that was wanted is made again when its backoff ends. */
    links_arm(links);
}

void
brim_links_init(struct brim_node_links *links, struct brim_node *node)
{
    memset(links, 0, sizeof(*links));
    links->node = node;
}

void
brim_links_listen(struct brim_node_links *links, brim_link_open_cb cb)
{
    uint32_t i;

    for (i = 0; i < links->nlisteners; i++) {
        if (links->on_open[i] == cb) {
            return;
        }
    }
    BRIM_ASSERT(links->nlisteners < BRIM_LINK_LISTENERS);
    links->on_open[links->nlisteners++] = cb;
}

struct brim_node_link *
brim_link_get(struct brim_node_links *links, const char *addr)
{
    struct brim_node_link *l;

    for (l = links->list; l != NULL; l = l->next) {
        if (strcmp(l->addr, addr) == 0) {
            return l;
        }
    }
    l = brim_calloc(1, sizeof(*l));
    if (l == NULL) {
        return NULL;
    }
    snprintf(l->addr, sizeof(l->addr), "%s", addr);
    l->set = links;
    l->backoff_ms = BRIM_LINK_BACKOFF_MIN_MS;
    l->heard_ms = uv_now(links->node->loop);
    brim_peer_init(&l->peer, links->node->loop,
                   links->node->cfg.limits.max_frame_bytes, link_connect_cb,
                   link_close_cb, l);
    l->next = links->list;
    links->list = l;
    return l;
}

/* Start connecting L now (its backoff is over). */
static void
link_connect(struct brim_node_link *l)
{
    char errbuf[BRIM_ERRBUF_LEN];

    brim_node_peer_hello(l->set->node, &l->peer);
    if (brim_peer_connect(&l->peer, l->addr, errbuf) != 0) {
        /* A bad address in a topology: try again later all the same,
         * the next epoch may fix it. */
        if (l->failures++ % 20 == 0) {
            brim_log_warn("link to %s: %s", l->addr, errbuf);
        }
        l->retry_at_ms = uv_now(l->set->node->loop) + BRIM_LINK_BACKOFF_MAX_MS;
        links_arm(l->set);
        return;
    }
    uv_unref((uv_handle_t *) &l->peer.tcp);
}

static void
links_retry_cb(uv_timer_t *t)
{
    struct brim_node_links *links = t->data;
    struct brim_node_link  *l;
    uint64_t                now = uv_now(links->node->loop);

    for (l = links->list; l != NULL && !links->stopping; l = l->next) {
        if (l->wanted && l->peer.state == BRIM_PEER_IDLE
            && now >= l->retry_at_ms) {
            link_connect(l);
        }
    }
    links_arm(links);
}

/* Arm the retry timer for the earliest wanted link in backoff. */
static void
links_arm(struct brim_node_links *links)
{
    struct brim_node_link *l;
    uint64_t               now, due = UINT64_MAX;

    if (links->stopping) {
        return;
    }
    for (l = links->list; l != NULL; l = l->next) {
        if (l->wanted && l->peer.state == BRIM_PEER_IDLE
            && l->retry_at_ms < due) {
            due = l->retry_at_ms;
        }
    }
    if (!links->retry_init) {
        uv_timer_init(links->node->loop, &links->retry);
        uv_unref((uv_handle_t *) &links->retry);
        links->retry.data = links;
        links->retry_init = 1;
    }
    if (due == UINT64_MAX) {
        uv_timer_stop(&links->retry);
        return;
    }
    now = uv_now(links->node->loop);
    uv_timer_start(&links->retry, links_retry_cb, due > now ? due - now : 0, 0);
}

int
brim_link_ensure(struct brim_node_link *l)
{
    if (l->peer.state == BRIM_PEER_OPEN) {
        return 1;
    }
    if (l->set->stopping) {
        return 0;
    }
    l->wanted = 1;
    if (l->peer.state == BRIM_PEER_IDLE) {
        if (uv_now(l->set->node->loop) >= l->retry_at_ms) {
            link_connect(l);
        } else {
            links_arm(l->set); /* when the backoff ends */
        }
    }
    return 0;
}

/* True when ADDR is a member of T, or a departed one still leaving. */
static int
links_addr_in(const struct brim_topo *t, const char *addr)
{
    uint32_t i;

    for (i = 0; i < t->nmembers; i++) {
        if (strcmp(t->members[i].addr, addr) == 0) {
            return 1;
        }
    }
    for (i = 0; i < t->ndeparted; i++) {
        if (t->departed[i].state != BRIM_MEMBER_DEAD
            && strcmp(t->departed[i].addr, addr) == 0)
        {
            return 1;
        }
    }
    return 0;
}

void
brim_links_forget_gone(struct brim_node_links *links,
                       const struct brim_topo *committed)
{
    struct brim_node_link *l;

    for (l = links->list; l != NULL; l = l->next) {
        if (!l->wanted || l->peer.state == BRIM_PEER_OPEN
            || links_addr_in(committed, l->addr))
        {
            continue;
        }
        brim_log_info("link to %s: no longer a member (epoch %" PRIu64
                      "); not reconnecting unless asked again",
                      l->addr, committed->map.epoch);
        l->wanted = 0;
    }
    links_arm(links);
}

size_t
brim_link_max_frame(const struct brim_node_link *l)
{
    uint32_t v = l->peer.peer_limits.max_frame_bytes;

    return v != 0 ? v : l->set->node->cfg.limits.max_frame_bytes;
}

int
brim_links_call(struct brim_node_links *links, const char *addr,
                struct brim_buf *frame, brim_peer_reply_cb cb, void *arg)
{
    struct brim_node_link *l = brim_link_get(links, addr);

    if (l == NULL) {
        return BRIM_ENOMEM;
    }
    if (!brim_link_ensure(l)) {
        return BRIM_EAGAIN; /* being made: ask again later */
    }
    return brim_peer_call(&l->peer, frame, cb, arg);
}

void
brim_links_stop(struct brim_node_links *links)
{
    struct brim_node_link *l;

    links->stopping = 1;
    for (l = links->list; l != NULL; l = l->next) {
        brim_peer_close(&l->peer);
    }
    if (links->retry_init) {
        uv_close((uv_handle_t *) &links->retry, NULL);
        links->retry_init = 0;
    }
}

void
brim_links_destroy(struct brim_node_links *links)
{
    struct brim_node_link *l, *next;

    for (l = links->list; l != NULL; l = next) {
        next = l->next;
        if (l->peer.state == BRIM_PEER_IDLE) {
            brim_peer_destroy(&l->peer);
        }
        brim_free(l);
    }
    links->list = NULL;
}

void
brim_node_peer_hello(struct brim_node *node, struct brim_peer *p)
{
    struct brim_peer_hello h;

    memset(&h, 0, sizeof(h));
    h.role = BRIM_ROLE_NODE;
    h.cluster_id = node->cluster_id;
    h.incarnation = node->incarnation;
    h.epoch = node->topo.committed.map.epoch;
    h.name = node->cfg.name;
    h.secret = node->guard.secret;
    h.failures = &node->guard.stats.out_failures;
    brim_peer_set_hello(p, &h);
}
