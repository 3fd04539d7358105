/*
 * server/node/main.c - brim-node's process: its options (one table for
 * the command line, --config and --help), the node's modules started and
 * stopped in order, signals, and the one libuv loop. With --standalone
 * the node owns every partition; with --coordinator it joins a cluster.
 * SIGTERM or SIGINT (Ctrl-C at a terminal) on a cluster node is a
 * graceful leave first (coordlink.c); on a standalone node either stops
 * it cleanly; a second one, or SIGQUIT, exits at once.
 */
#include "server/node/node.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "common/parse.h"
#include "common/placement.h"
#include "common/ring.h"
#include "server/log.h"
#include "server/node/coordlink.h"
#include "server/node/dispatch.h"
#include "server/node/epoch.h"
#include "server/node/flush.h"
#include "server/node/lease.h"
#include "server/node/links.h"
#include "server/node/mcfwd.h"
#include "server/node/mcport.h"
#include "server/node/metrics.h"
#include "server/node/migrate.h"
#include "server/options.h"
#include "server/prefault.h"
#include "server/random.h"

#define NODE_TICK_MS 10
/* Items the reaper frees or looks at per tick (store.h,
 * brim_store_reclaim): a five-hundredth of the store (every item about
 * every 5 s), at least 100 and at most 1,000. Each look reads an item's
 * header, a cache miss at these sizes, and a client's request waits for
 * the whole tick: 20,000 looks every 100 ms (the most before) held each
 * loop of a 1.3M-key node for several milliseconds ten times a second,
 * which was the client p99 of an idle 3-node cluster (4-9 ms, p50 0.12
 * ms); 1,000 take about 0.3 ms. A fixed 20,000 per tick also scanned a
 * 100,000-key store twice a second and took more cache misses than the
 * requests it served (perf, the memcached port at depth 1). */
#define NODE_RECLAIM_MIN 100
#define NODE_RECLAIM_MAX 1000
#define NODE_RECLAIM_SHARE 500

void
brim_node_config_default(struct brim_node_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->listen, sizeof(cfg->listen), "127.0.0.1:11311");
    snprintf(cfg->name, sizeof(cfg->name), "standalone");
    cfg->memory_mb = 64;
    cfg->buffer_mb = 64;
    cfg->max_conns = 1024;
    cfg->idle_timeout_s = 300;
    cfg->partitions = BRIM_PARTITIONS_DEFAULT;
    cfg->out_high_water = 4u << 20;
    cfg->policy = BRIM_EVICT_SIEVE;
    cfg->log_level = BRIM_LOG_INFO;
    cfg->weight_ppm = 1000000;
    cfg->migrate_mb_per_s = 0; /* no ceiling: the pace adapts */
    cfg->memcached_timeout_ms = 5000;
    cfg->http_max_conns = 64;
    brim_wire_limits_default(&cfg->limits);
}

/* ---- options (one table: the command line, --config and --help) ---- */

#define NODE_OFF(f) offsetof(struct brim_node_config, f)

static const char *
node_set_name(void *cfg, const struct brim_option *o, const char *arg,
              char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_node_config *c = cfg;

    (void) o;
    if (!brim_ring_name_valid(arg, strlen(arg))) {
        brim_errfmt(errbuf,
                    "\"%.64s\" is not a node name: 1 to %d bytes of "
                    "[A-Za-z0-9._:-]",
                    arg, BRIM_NAME_MAX);
        return errbuf;
    }
    snprintf(c->name, sizeof(c->name), "%s", arg);
    c->name_set = 1;
    return NULL;
}

/* --listen (PORT 0: any free port) and --coordinator (a port): an
 * address that cannot be one is a usage error, not a failure to start. */
static const char *
node_set_addr(void *cfg, const struct brim_option *o, const char *arg,
              char errbuf[BRIM_ERRBUF_LEN])
{
    char        one[BRIM_ADDR_MAX + 1];
    const char *p = arg, *comma;
    size_t      n;

    if (strcmp(o->name, "coordinator") != 0) {
        return brim_addr_check(arg, 0, errbuf) != 0
            ? errbuf
            : brim_option_str(cfg, o, arg, errbuf);
    }
    /* A list of coordinators (etcd mode): each entry a HOST:PORT. */
    do {
        comma = strchr(p, ',');
        n = comma != NULL ? (size_t) (comma - p) : strlen(p);
        if (n > BRIM_ADDR_MAX) {
            brim_errfmt(errbuf, "\"%.40s...\" is longer than an address", p);
            return errbuf;
        }
        memcpy(one, p, n);
        one[n] = '\0';
        if (brim_addr_check(one, 1, errbuf) != 0) {
            return errbuf;
        }
        p = comma + 1;
    } while (comma != NULL);
    return brim_option_str(cfg, o, arg, errbuf);
}

static const char *
node_set_max_value(void *cfg, const struct brim_option *o, const char *arg,
                   char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_node_config *c = cfg;
    const char              *why;

    why = brim_option_u32(cfg, o, arg, errbuf);
    if (why == NULL) {
        c->limits.max_frame_bytes =
            c->limits.max_value_bytes + BRIM_WIRE_FRAME_SLACK;
    }
    return why;
}

static const char *
node_set_output_kb(void *cfg, const struct brim_option *o, const char *arg,
                   char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_node_config *c = cfg;
    uint64_t                 v;

    if (brim_parse_u64(arg, o->min, o->max, &v) != 0) {
        brim_errfmt(errbuf,
                    "\"%.64s\" is not a whole number from %" PRIu64
                    " to %" PRIu64,
                    arg, o->min, o->max);
        return errbuf;
    }
    c->out_high_water = (size_t) v << 10;
    return NULL;
}

static const char *
node_set_partitions(void *cfg, const struct brim_option *o, const char *arg,
                    char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_node_config *c = cfg;

    c->partitions_set = 1;
    return brim_option_pow2_u32(cfg, o, arg, errbuf);
}

static const char *
node_set_evict(void *cfg, const struct brim_option *o, const char *arg,
               char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_node_config *c = cfg;

    (void) o;
    if (strcmp(arg, "sieve") == 0) {
        c->policy = BRIM_EVICT_SIEVE;
    } else if (strcmp(arg, "lru") == 0) {
        c->policy = BRIM_EVICT_LRU;
    } else {
        brim_errfmt(errbuf, "\"%.32s\" is not sieve or lru", arg);
        return errbuf;
    }
    return NULL;
}

static const char *
node_set_weight(void *cfg, const struct brim_option *o, const char *arg,
                char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_node_config *c = cfg;
    uint64_t                 v;

    (void) o;
    if (brim_ppm_parse("weight", arg, 1000u * 1000000u, &v, errbuf) != 0) {
        return errbuf;
    }
    if (v < 1000) {
        brim_errfmt(errbuf, "%.64s is below the least weight, 0.001", arg);
        return errbuf;
    }
    c->weight_ppm = (uint32_t) v;
    c->weight_set = 1;
    return NULL;
}

static const struct brim_option node_options[] = {
    {"listen", "HOST:PORT", node_set_addr, NODE_OFF(listen), 0,
     sizeof(((struct brim_node_config *) 0)->listen), "127.0.0.1:11311",
     "address to serve (loopback unless told otherwise)"},
    {"standalone", NULL, brim_option_flag, NODE_OFF(standalone), 0, 0, NULL,
     "own every partition, no coordinator"},
    {"coordinator", "HOST:PORT[,...]", node_set_addr, NODE_OFF(coordinator), 0,
     sizeof(((struct brim_node_config *) 0)->coordinator), NULL,
     "join the cluster of this coordinator (needs --name; excludes "
     "--standalone); a --partitions given must match the cluster's. A comma-"
     "separated list names the coordinators of one cluster on etcd: the "
     "node follows NOTLEADER to the leader and tries the next on a lost "
     "connection"},
    {"weight", "W", node_set_weight, 0, 0, 0, "1",
     "cluster: this node's share, 0.001 to 1000"},
    {"name", "NAME", node_set_name, 0, 0, 0, "standalone",
     "node name: 1 to 64 of [A-Za-z0-9._:-]; for logs and stats, and the "
     "member name in a cluster"},
    {"memory-mb", "M", brim_option_u32, NODE_OFF(memory_mb), 1, 1u << 20, "64",
     "memory limit of the data in MiB: items (key, value and header, "
     "at their allocated size) and tables; eviction keeps it (connection "
     "buffers have --buffer-mb)"},
    {"prefault", NULL, brim_option_flag, NODE_OFF(prefault), 0, 0, NULL,
     "fault in --memory-mb of heap before serving or joining (as "
     "memcached's -L preallocates -m): a node that joins then receives "
     "its share without first-touch page faults on its loop; takes "
     "0.4 to 2.5 s per GB where measured, and the RSS is the limit from "
     "the start; refused past the memory available"},
    {"buffer-mb", "M", brim_option_u32, NODE_OFF(buffer_mb), 1, 1u << 20, "64",
     "unsent replies of all connections together, in MiB: above it "
     "a connection that has replies waiting stops reading until half of "
     "it is sent (not counted in --memory-mb)"},
    {"max-value-bytes", "B", node_set_max_value,
     NODE_OFF(limits.max_value_bytes), 1, BRIM_WIRE_VALUE_LIMIT, "1048576",
     "largest value; frames may be this plus 64 KiB"},
    {"max-key-bytes", "B", brim_option_u32, NODE_OFF(limits.max_key_bytes), 1,
     250, "250", "longest key"},
    {"max-conns", "C", brim_option_u32, NODE_OFF(max_conns), 1, 1000000, "1024",
     "most open connections"},
    {"idle-timeout", "S", brim_option_u32, NODE_OFF(idle_timeout_s), 0,
     86400u * 365, "300",
     "close connections silent this many seconds; 0 "
     "never"},
    {"output-limit-kb", "K", node_set_output_kb, 0, 64, 1u << 20, "4096",
     "stop reading from a connection whose unsent replies pass K KiB"},
    {"migrate-mb-per-s", "R", brim_option_u32, NODE_OFF(migrate_mb_per_s), 0,
     100000, "0",
     "cluster: a ceiling on the streams to new owners, R MB/s (10^6 "
     "bytes) in all; 0 none: the pace adapts to the loop and the link"},
    {"partitions", "P", node_set_partitions, NODE_OFF(partitions),
     BRIM_PARTITIONS_MIN, BRIM_PARTITIONS_MAX, "65536",
     "partitions, a power of two 256..1048576; a cluster node not given it "
     "takes its cluster's"},
    {"seed", "S", brim_option_u64, NODE_OFF(seed), 0, UINT64_MAX, "0",
     "standalone: the key hash's seed (a cluster node takes its "
     "cluster's)"},
    {"evict", "sieve|lru", node_set_evict, 0, 0, 0, "sieve", "eviction policy"},
    {"log-level", "L", brim_option_log_level, NODE_OFF(log_level), 0, 0, "info",
     "error, warn, info or debug"},
    {"secret-file", "FILE", brim_option_secret_path, NODE_OFF(secret_file), 0,
     sizeof(((struct brim_node_config *) 0)->secret_file), "none",
     "the cluster secret (32 to 4096 bytes, mode 0600, owned by this "
     "user): every link to the coordinator and other nodes proves it "
     "(AUTH), and cluster and admin ops need it"},
    {"client-secret-file", "FILE", brim_option_secret_path,
     NODE_OFF(client_secret_file), 0,
     sizeof(((struct brim_node_config *) 0)->client_secret_file), "none",
     "with --secret-file: clients must prove this secret (or the "
     "cluster's) before any op"},
    {"memcached-listen", "HOST:PORT", node_set_addr, NODE_OFF(memcached_listen),
     0, sizeof(((struct brim_node_config *) 0)->memcached_listen), "none",
     "also serve memcached's text and meta protocols here, for the whole "
     "cluster (docs/memcached.md); loopback unless --memcached-insecure "
     "when clients need a secret"},
    {"memcached-insecure", NULL, brim_option_flag, NODE_OFF(memcached_insecure),
     0, 0, NULL,
     "allow --memcached-listen on a non-loopback address although the brim "
     "port requires a client secret (memcached's protocol has none)"},
    {"memcached-allow-flush", NULL, brim_option_flag,
     NODE_OFF(memcached_allow_flush), 0, 0, NULL,
     "serve flush_all on the memcached port (it empties the whole cluster)"},
    {"memcached-timeout-ms", "MS", brim_option_u32,
     NODE_OFF(memcached_timeout_ms), 1, 3600000, "5000",
     "memcached port: how long a forwarded op may follow MOVED and RETRY "
     "before it is answered SERVER_ERROR"},
    {"http-listen", "HOST:PORT", node_set_addr, NODE_OFF(http_listen), 0,
     sizeof(((struct brim_node_config *) 0)->http_listen), "none",
     "serve HTTP here: /metrics in Prometheus's text format "
     "(docs/operations.md); give a loopback address unless the network "
     "is trusted"},
    {"http-max-conns", "C", brim_option_u32, NODE_OFF(http_max_conns), 1, 4096,
     "64",
     "most open HTTP connections (more are closed at once); each has 5 s "
     "to send a whole request"},
    {"config", "FILE", brim_option_config, 0, 0, 0, NULL,
     "read options from FILE: one \"name value\" per line, names as the "
     "long options without --, # comments; the command line wins"},
    {NULL, NULL, NULL, 0, 0, 0, NULL, NULL}};

static const char node_synopsis[] =
    "usage: brim-node --standalone [options]\n"
    "       brim-node --name NAME --coordinator HOST:PORT [--weight W] "
    "[options]\n"
    "A brim cache node: an in-memory key-value store served over TCP.\n"
    "\n";

static const char node_notes[] =
    "\nExit status: 0 after a clean stop or a completed leave; 1 when it "
    "cannot\nstart, was fenced, or left without handing every partition "
    "over; 2 on a\nusage error; 3 when the coordinator refused its cluster "
    "secret (or needs one)\nbefore ever accepting it.\n";

/*
 * The memory limit must leave room for data: at least four times the
 * partition table a store starts with, and twice the largest item.
 */
static int
node_check_memory(const struct brim_node_config *cfg)
{
    size_t limit = (size_t) cfg->memory_mb << 20;
    size_t table = brim_store_fixed_bytes(cfg->partitions);
    size_t item =
        (size_t) cfg->limits.max_key_bytes + cfg->limits.max_value_bytes;

    if (limit < 4 * table) {
        fprintf(stderr,
                "brim-node: --memory-mb %u is too small: the table "
                "of %u partitions alone takes %.1f MiB; give --memory-mb "
                "%zu or more, or fewer --partitions\n",
                cfg->memory_mb, cfg->partitions, (double) table / (1 << 20),
                (4 * table + (1u << 20) - 1) >> 20);
        return -1;
    }
    if (limit < 2 * item) {
        fprintf(stderr,
                "brim-node: --memory-mb %u is too small for values "
                "of up to %u bytes (--max-value-bytes): give --memory-mb "
                "%zu or more, or a smaller --max-value-bytes\n",
                cfg->memory_mb, cfg->limits.max_value_bytes,
                (2 * item + (1u << 20) - 1) >> 20);
        return -1;
    }
    return 0;
}

/* Standalone, or a cluster member: exactly one, with what each needs. */
static int
node_check_mode(const struct brim_node_config *cfg, int name_set)
{
    if (cfg->standalone && cfg->coordinator[0] != '\0') {
        fprintf(stderr,
                "brim-node: --standalone and --coordinator exclude "
                "each other: a node either owns every partition or follows "
                "a coordinator\n");
        return -1;
    }
    if (!cfg->standalone && cfg->coordinator[0] == '\0') {
        fprintf(stderr,
                "brim-node: give --standalone, or --name NAME "
                "--coordinator HOST:PORT to join a cluster\n");
        return -1;
    }
    if (cfg->coordinator[0] != '\0' && !name_set) {
        fprintf(stderr,
                "brim-node: --coordinator needs --name NAME (the "
                "member name, unique in the cluster)\n");
        return -1;
    }
    if (cfg->standalone && cfg->weight_set) {
        fprintf(stderr,
                "brim-node: --weight is for a cluster member "
                "(--coordinator), not --standalone\n");
        return -1;
    }
    return 0;
}

/* Options into CFG. Returns 0, 1 (--help printed) or -1 (usage error,
 * said why). */
static int
node_parse_args(struct brim_node_config *cfg, int argc, char **argv)
{
    char errbuf[BRIM_ERRBUF_LEN];
    int  rc;

    brim_node_config_default(cfg);
    rc = brim_options_parse(node_options, cfg, argc, argv, "brim-node",
                            node_synopsis, node_notes);
    if (rc != 0) {
        return rc;
    }
    if (node_check_memory(cfg) != 0) {
        return -1;
    }
    if (brim_mcport_check(cfg, errbuf) != 0) {
        fprintf(stderr, "brim-node: %s\n", errbuf);
        return -1;
    }
    return node_check_mode(cfg, cfg->name_set);
}

static void
node_tick_cb(uv_timer_t *t)
{
    struct brim_node *node = BRIM_CONTAINER_OF(t, struct brim_node, tick_timer);
    uint64_t          now_ms = uv_now(node->loop);
    struct brim_store_stats st;
    size_t                  budget;

    brim_store_get_stats(node->store, &st);
    if (brim_migrate_streaming(node)) {
        /* The least while partitions stream: the CPU is the stream's and
         * the clients' (a sender's frees of what it handed over took a
         * tenth of the machine's CPU in a join, perf). */
        budget = NODE_RECLAIM_MIN;
    } else if (st.dropped_pending > 0) {
        budget = NODE_RECLAIM_MAX; /* give a handover's memory back */
    } else {
        budget =
            BRIM_MAX(NODE_RECLAIM_MIN,
                     BRIM_MIN(NODE_RECLAIM_MAX, st.items / NODE_RECLAIM_SHARE));
    }
    brim_store_reclaim(node->store, (uint32_t) time(NULL), budget);
    if (now_ms - node->stats.last_tick_ms >= 1000) {
        node->stats.requests_per_sec =
            (double) (node->stats.requests - node->stats.last_requests) * 1000.0
            / (double) (now_ms - node->stats.last_tick_ms);
        node->stats.last_requests = node->stats.requests;
        node->stats.last_tick_ms = now_ms;
    }
}

/* Close every handle so that the loop ends. */
static void
node_stop_now(struct brim_node *node)
{
    if (node->stopping) {
        return;
    }
    node->stopping = 1;
    if (!node->cfg.standalone) {
        brim_node_coord_stop(node);
        brim_node_lease_stop(node);
    }
    brim_links_stop(&node->links);
    brim_mcfwd_stop(node);
    brim_migrate_stop(node);
    brim_mcport_stop(node);
    brim_node_http_stop(node);
    brim_server_close(&node->srv);
    brim_migrate_release_links(node);
    uv_close((uv_handle_t *) &node->tick_timer, NULL);
    brim_node_flush_stop(node);
    uv_close((uv_handle_t *) &node->sig_term, NULL);
    uv_close((uv_handle_t *) &node->sig_int, NULL);
    uv_close((uv_handle_t *) &node->sig_quit, NULL);
}

/* node->stop: the memcached port's clients get what they asked for
 * first (bounded), then every handle closes. */
static void
node_stop(struct brim_node *node)
{
    if (node->stopping || brim_mcport_draining(node)) {
        return;
    }
    if (brim_mcport_drain(node, node_stop_now)) {
        return;
    }
    node_stop_now(node);
}

static void
node_signal_cb(uv_signal_t *s, int signum)
{
    struct brim_node *node = s->data;
    int               rc;

    if (signum == SIGQUIT || node->stopping || brim_mcport_draining(node)) {
        brim_log_info("signal %d: exiting at once", signum);
        _exit(0);
    }
    /* Ctrl-C is what a person at a terminal has: it leaves as SIGTERM
     * does, so that the node's keys are handed over (issue 12). */
    if ((signum == SIGTERM || signum == SIGINT) && !node->cfg.standalone) {
        rc = brim_node_coord_leave(node);
        if (rc > 0) {
            brim_mcport_leave(node); /* its open connections go on */
            return;                  /* leaving: the drain stops the node */
        }
        if (rc < 0) {
            brim_log_info("signal %d again: exiting at once, without "
                          "handing over what is left",
                          signum);
            _exit(0);
        }
    }
    brim_log_info("signal %d: closing connections and exiting", signum);
    node_stop(node);
}

/* What --prefault leaves to the rest of the machine, at least. */
#define NODE_PREFAULT_SPARE ((size_t) 256 << 20)

/* --prefault: the heap faulted in before the node listens or joins, so
 * its first gigabytes do not fault on the loop (server/prefault.h).
 * Returns 0, or -1 when the machine has not the memory (said why): a
 * prefault past it would wake the OOM killer, for this or another
 * process. */
static int
node_prefault(const struct brim_node *node)
{
    size_t   bytes = (size_t) node->cfg.memory_mb << 20;
    size_t   done = 0, room = 0;
    uint64_t t0;
    double   s;
    int      rc;

    if (brim_prefault_room(&room) == 0 && bytes + NODE_PREFAULT_SPARE > room) {
        fprintf(stderr,
                "brim-node: --prefault: --memory-mb %u needs %zu MiB plus "
                "%zu MiB left to the rest of the machine, and %zu MiB are "
                "available (MemAvailable, or the memory cgroup's room); "
                "give a smaller --memory-mb or start without --prefault\n",
                node->cfg.memory_mb, bytes >> 20, NODE_PREFAULT_SPARE >> 20,
                room >> 20);
        return -1;
    }
    brim_log_info("--prefault: faulting in %zu MiB of heap before serving "
                  "(a signal now ends the node at once)",
                  bytes >> 20);
    t0 = uv_hrtime();
    rc = brim_prefault_heap(bytes, &done);
    s = (double) (uv_hrtime() - t0) / 1e9;
    if (rc != 0) {
        brim_log_warn("--prefault: malloc refused after %zu of %zu MiB "
                      "(%.2f s); serving with the rest of the heap cold",
                      done >> 20, bytes >> 20, s);
        return 0;
    }
    brim_log_info("--prefault: %zu MiB of heap faulted in (%.2f s, "
                  "%.0f MB/s)",
                  done >> 20, s, s > 0 ? (double) done / 1e6 / s : 0.0);
    return 0;
}

static int
node_start(struct brim_node *node)
{
    struct brim_store_config  sc;
    struct brim_server_config cc;
    char                      errbuf[BRIM_ERRBUF_LEN];

    memset(&sc, 0, sizeof(sc));
    sc.npartitions = node->cfg.partitions;
    sc.mem_limit_bytes = (size_t) node->cfg.memory_mb << 20;
    sc.max_item_bytes = (size_t) node->cfg.limits.max_key_bytes
        + node->cfg.limits.max_value_bytes;
    sc.max_value_bytes = node->cfg.limits.max_value_bytes;
    sc.policy = node->cfg.policy;
    sc.cas_prefix = node->incarnation & 0xffffff;
    /* --memory-mb bounds the data: items and tables, not connection
     * buffers, which have --buffer-mb (issue 12: reply buffers once
     * evicted stored values). */
    sc.data_only = 1;
    sc.key_hash = brim_node_key_hash;
    sc.key_hash_arg = node;
    node->store_cfg = sc;
    node->store = brim_store_new(&sc);
    if (node->store == NULL) {
        fprintf(stderr, "brim-node: out of memory creating the store\n");
        return -1;
    }
    msgpack_zone_init(&node->zone, 4096);

    /* Connections from the coordinator carry topologies (PROTOCOL.md
     * 10.1): their frames may pass the data limit, and only they may hold
     * a member list. The listener's frame bound is the larger one. */
    node->peer_limits = node->cfg.limits;
    node->peer_limits.max_batch_entries = BRIM_WIRE_BATCH_LIMIT;
    node->coord_limits = node->cfg.limits;
    node->coord_limits.max_members = BRIM_NODES_MAX;
    /* A node not given --partitions may take a cluster's larger P: its
     * topologies' frames are bounded by the largest P. */
    node->coord_limits.max_frame_bytes =
        BRIM_MAX(node->cfg.limits.max_frame_bytes,
                 2u
                         * (node->cfg.partitions_set || node->cfg.standalone
                                ? node->cfg.partitions
                                : BRIM_PARTITIONS_MAX)
                     + (64u << 10) + 200u * BRIM_NODES_MAX);
    memset(&cc, 0, sizeof(cc));
    cc.max_frame_bytes = node->cfg.standalone
        ? node->cfg.limits.max_frame_bytes
        : node->coord_limits.max_frame_bytes;
    cc.out_high_water = node->cfg.out_high_water;
    cc.out_low_water = node->cfg.out_high_water / 2;
    cc.idle_timeout_ms = node->cfg.idle_timeout_s * 1000;
    cc.max_conns = node->cfg.max_conns;
    cc.out_total_limit = (size_t) node->cfg.buffer_mb << 20;
    cc.gone = brim_guard_conn_gone;
    cc.gone_arg = &node->guard;
    if (brim_wire_limits_check(&node->cfg.limits, errbuf) != 0
        || brim_server_listen(&node->srv, node->loop, node->cfg.listen, &cc,
                              brim_node_dispatch, NULL, node, errbuf)
            != 0)
    {
        fprintf(stderr, "brim-node: %s\n", errbuf);
        return -1;
    }
    if (brim_mcport_start(node, &cc, errbuf) != 0
        || brim_node_http_start(node, errbuf) != 0)
    {
        fprintf(stderr, "brim-node: %s\n", errbuf);
        return -1;
    }
    uv_timer_init(node->loop, &node->tick_timer);
    uv_timer_start(&node->tick_timer, node_tick_cb, NODE_TICK_MS, NODE_TICK_MS);
    brim_node_flush_init(node);
    uv_signal_init(node->loop, &node->sig_term);
    uv_signal_init(node->loop, &node->sig_int);
    uv_signal_init(node->loop, &node->sig_quit);
    node->sig_term.data = node->sig_int.data = node->sig_quit.data = node;
    uv_signal_start(&node->sig_term, node_signal_cb, SIGTERM);
    uv_signal_start(&node->sig_int, node_signal_cb, SIGINT);
    uv_signal_start(&node->sig_quit, node_signal_cb, SIGQUIT);
    if (!node->cfg.standalone) {
        brim_node_coord_start(node);
        brim_node_lease_start(node);
    }
    return 0;
}

/* True (and said on stderr) when two of CFG's listening addresses are the
 * same HOST:PORT, a port other than 0: the second bind would fail with a
 * bare "address already in use". */
static int
node_addrs_clash(const struct brim_node_config *cfg)
{
    const char *opt[3] = {"--listen", "--memcached-listen", "--http-listen"};
    const char *val[3] = {cfg->listen, cfg->memcached_listen, cfg->http_listen};
    const char *port;
    int         i, j;

    for (i = 0; i < 3; i++) {
        port = strrchr(val[i], ':');
        if (val[i][0] == '\0' || (port != NULL && strcmp(port, ":0") == 0)) {
            continue;
        }
        for (j = i + 1; j < 3; j++) {
            if (strcmp(val[i], val[j]) == 0) {
                fprintf(stderr,
                        "brim-node: %s and %s are both %s: each needs a "
                        "port of its own\n",
                        opt[i], opt[j], val[i]);
                return 1;
            }
        }
    }
    return 0;
}

int
main(int argc, char **argv)
{
    static struct brim_node node;
    char                    errbuf[BRIM_ERRBUF_LEN];

    switch (node_parse_args(&node.cfg, argc, argv)) {
    case 0:
        break;
    case 1:
        return 0; /* --help */
    default:
        return 2; /* a usage error, said why */
    }
    if (node_addrs_clash(&node.cfg)) {
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    brim_log_init("node", node.cfg.name,
                  (enum brim_log_level) node.cfg.log_level);
    node.loop = uv_default_loop();
    node.incarnation = brim_random_u64();
    /* A cluster member learns its cluster's id from the coordinator. */
    node.cluster_id = node.cfg.standalone ? brim_random_u64() : 0;
    node.topo.self = node.topo.self_pending = -1;
    node.stop = node_stop;
    brim_links_init(&node.links, &node);
    brim_links_listen(&node.links, brim_migrate_link_open);
    brim_links_init(&node.mc_links, &node);
    node.start_unix = (uint64_t) time(NULL);
    node.stats.last_tick_ms = uv_now(node.loop);
    /* The secret files are read once; their bytes are never logged. */
    brim_guard_init(&node.guard, node.loop, BRIM_ROLE_NODE);
    if (brim_guard_load(&node.guard, node.cfg.secret_file,
                        node.cfg.client_secret_file, errbuf)
        != 0)
    {
        fprintf(stderr, "brim-node: %s\n", errbuf);
        return 2;
    }
    if (node.cfg.prefault && node_prefault(&node) != 0) {
        return 2;
    }
    if (node_start(&node) != 0) {
        return 1;
    }
    brim_log_info("serving on %s (port %d), %s%s, %u partitions, "
                  "memory limit %u MiB, eviction %s",
                  node.cfg.listen, brim_server_port(&node.srv),
                  node.cfg.standalone ? "standalone" : "coordinator ",
                  node.cfg.standalone ? "" : node.cfg.coordinator,
                  node.cfg.partitions, node.cfg.memory_mb,
                  node.cfg.policy == BRIM_EVICT_SIEVE ? "sieve" : "lru");
    if (node.mc != NULL) {
        brim_log_info("memcached port on %s (port %d)",
                      node.cfg.memcached_listen, brim_mcport_port(&node));
    }
    if (node.http != NULL) {
        /* deploy/brim-cluster reads this line for the URL. */
        brim_log_info(
            "HTTP on http://%.*s:%d/metrics",
            (int) (strrchr(node.cfg.http_listen, ':') - node.cfg.http_listen),
            node.cfg.http_listen, brim_node_http_port(&node));
    }
    uv_run(node.loop, UV_RUN_DEFAULT);
    brim_node_http_free(&node);
    brim_server_destroy(&node.srv);
    brim_store_free(node.store);
    msgpack_zone_destroy(&node.zone);
    brim_guard_destroy(&node.guard);
    brim_migrate_free(&node);
    brim_links_destroy(&node.links);
    brim_mcfwd_destroy(&node);
    brim_mcport_destroy(&node);
    if (!node.cfg.standalone) {
        brim_peer_destroy(&node.coordlink.peer);
        brim_node_topo_destroy(&node);
    }
    uv_loop_close(node.loop);
    brim_log_info("stopped");
    return node.exit_code;
}
