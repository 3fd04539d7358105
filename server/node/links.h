/*
 * server/node/links.h - this node's connections to other nodes, one per
 * peer address: made on first use with HELLO (role node) and, with a
 * cluster secret, AUTH (server/peer.h does both); made again after a
 * backoff when lost, and never given up, since whether a peer is still a
 * member is the committed topology's to say (DESIGN.md 7.6). Migration
 * (streams, COMPLETE, stream queries), forwarded reads and pulls, and
 * lease confirmations all travel on them. Loop thread only; handles are
 * unreferenced so they never keep a stopping node's loop alive.
 */
#ifndef BRIM_SERVER_NODE_LINKS_H
#define BRIM_SERVER_NODE_LINKS_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "proto/buf.h"
#include "server/peer.h"

struct brim_node;
struct brim_node_links;
struct brim_topo;

/* Reconnect delays: the first, doubling up to the last (ms). */
#define BRIM_LINK_BACKOFF_MIN_MS 100
#define BRIM_LINK_BACKOFF_MAX_MS 2000

/* One connection to the node at ADDR. */
struct brim_node_link {
    struct brim_peer        peer;          /* the socket and its calls */
    char                    addr[128];     /* "host:port" of the peer */
    uint64_t                next_id;       /* request ids on it */
    uint64_t                retry_at_ms;   /* loop ms: no connect before */
    uint32_t                backoff_ms;    /* the next reconnect delay */
    uint32_t                failures;      /* connects failed in a row */
    int                     wanted;        /* a user waits for it to open */
    uint64_t                opens;         /* times it opened */
    uint64_t                heard_ms;      /* loop ms it last opened or a
                                            user said it answered */
    uint64_t                down_since_ms; /* loop ms it closed or failed
                                            to open, not open since; 0 */
    int                     gone_warned;   /* a user said once that its node
                                            is gone (reset when it opens) */
    uint64_t                asked_ms;      /* loop ms of the oldest question
                                            a user is waiting on (0 none;
                                            users set and clear it) */
    struct brim_node_links *set;           /* its owner */
    struct brim_node_link  *next;          /* the set's list */
};

/* A link opened (a user that waited may send now). */
typedef void (*brim_link_open_cb)(struct brim_node      *node,
                                  struct brim_node_link *link);

/* Most users told of opened links. */
#define BRIM_LINK_LISTENERS 4

/* Every link of one node. Embedded in struct brim_node. */
struct brim_node_links {
    struct brim_node      *node; /* borrowed: the owner */
    struct brim_node_link *list; /* one per address */
    brim_link_open_cb      on_open[BRIM_LINK_LISTENERS]; /* told of opens */
    uint32_t               nlisteners;
    uv_timer_t             retry;      /* connects links whose backoff is
                                           over and that a user wants */
    int                    retry_init; /* RETRY initialised */
    int                    stopping;   /* no more connects */
    uint64_t               lost;       /* links closed, ever */
};

/* Set LINKS (caller's memory) up for NODE. */
void brim_links_init(struct brim_node_links *links, struct brim_node *node);

/* Tell CB of every link that opens from now on. At most
 * BRIM_LINK_LISTENERS; adding one twice is harmless. */
void brim_links_listen(struct brim_node_links *links, brim_link_open_cb cb);

/* Close every link and the timer (the node is stopping). */
void brim_links_stop(struct brim_node_links *links);

/* Free what LINKS holds, once the loop has run the close callbacks. */
void brim_links_destroy(struct brim_node_links *links);

/* The link to ADDR ("host:port", copied), made on first use; NULL only
 * when out of memory. Valid until brim_links_destroy(). */
struct brim_node_link *brim_link_get(struct brim_node_links *links,
                                     const char             *addr);

/*
 * 1 when LINK is open for requests. Else 0: it starts connecting (at once,
 * or when its backoff is over) and the listeners hear when it opens.
 */
int brim_link_ensure(struct brim_node_link *link);

/*
 * After a commit: a link not open whose address is neither a member of
 * COMMITTED (borrowed) nor one of its departed still leaving stops being
 * made again. A node declared dead was retried every 2 s for as long as
 * the survivors ran (a fresh tester saw 561 tries in 18 minutes). A user
 * that still needs the link asks again (brim_link_ensure()).
 */
void brim_links_forget_gone(struct brim_node_links *links,
                            const struct brim_topo *committed);

/* The largest request body LINK's node accepts (its HELLO), else ours. */
size_t brim_link_max_frame(const struct brim_node_link *link);

/*
 * Send the request frame FRAME (ownership of its bytes taken, as
 * brim_peer_call) on the link to ADDR; CB gets the reply with ARG.
 * Returns 0, BRIM_EAGAIN (not open yet: it is being made; FRAME untouched),
 * BRIM_ECLOSED or BRIM_ENOMEM.
 */
int brim_links_call(struct brim_node_links *links, const char *addr,
                    struct brim_buf *frame, brim_peer_reply_cb cb, void *arg);

/*
 * Set P's handshake (server/peer.h) for a connection this node opens to
 * the coordinator or another node: HELLO as role node with our name,
 * incarnation, cluster id and epoch, and AUTH with the cluster secret
 * when there is one. Call it right before brim_peer_connect(P).
 */
void brim_node_peer_hello(struct brim_node *node, struct brim_peer *p);

#endif /* BRIM_SERVER_NODE_LINKS_H */
