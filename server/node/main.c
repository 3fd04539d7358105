/*
 * server/node/main.c - brim-node: settings from the command line and an
 * optional config file, then one libuv loop serving the store. With
 * --standalone the node owns every partition; the cluster issue adds
 * --coordinator. SIGTERM or SIGINT stops it cleanly; a second one, or
 * SIGQUIT, exits at once. On a cluster node SIGTERM is a graceful leave
 * first (server/node/coord.c).
 */
#include "server/node/node.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"
#include "common/placement.h"
#include "common/ring.h"
#include "server/log.h"
#include "server/node/coordlink.h"
#include "server/node/dispatch.h"
#include "server/node/epoch.h"
#include "server/node/lease.h"
#include "server/node/links.h"
#include "server/node/migrate.h"
#include "server/random.h"

#define NODE_TICK_MS 100
#define NODE_RECLAIM_BUDGET 20000      /* items looked at per tick */

static const struct option node_longopts[] = {
    {"listen", required_argument, NULL, 'l'},
    {"name", required_argument, NULL, 'n'},
    {"memory-mb", required_argument, NULL, 'm'},
    {"max-value-bytes", required_argument, NULL, 'v'},
    {"max-key-bytes", required_argument, NULL, 'k'},
    {"max-conns", required_argument, NULL, 'c'},
    {"idle-timeout", required_argument, NULL, 'i'},
    {"partitions", required_argument, NULL, 'p'},
    {"seed", required_argument, NULL, 's'},
    {"evict", required_argument, NULL, 'e'},
    {"output-limit-kb", required_argument, NULL, 'o'},
    {"log-level", required_argument, NULL, 'L'},
    {"standalone", no_argument, NULL, 'S'},
    {"coordinator", required_argument, NULL, 'C'},
    {"weight", required_argument, NULL, 'w'},
    {"migrate-mb-per-s", required_argument, NULL, 'M'},
    {"secret-file", required_argument, NULL, 'A'},
    {"client-secret-file", required_argument, NULL, 'B'},
    {"config", required_argument, NULL, 'f'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}
};

static void
node_usage(FILE *out)
{
    fprintf(out,
"usage: brim-node --standalone [options]\n"
"       brim-node --name NAME --coordinator HOST:PORT [--weight W] [options]\n"
"A brim cache node: an in-memory key-value store served over TCP.\n"
"\n"
"  --listen HOST:PORT     address to serve (default 127.0.0.1:11311;\n"
"                         loopback unless told otherwise)\n"
"  --standalone           own every partition, no coordinator\n"
"  --coordinator HOST:PORT  join the cluster of this coordinator (needs\n"
"                         --name; excludes --standalone); --partitions must\n"
"                         match the cluster's\n"
"  --weight W             cluster: this node's share, 0.001 to 1000\n"
"                         (default 1)\n"
"  --name NAME            node name: 1 to 64 of [A-Za-z0-9._:-]; for logs\n"
"                         and stats, and the member name in a cluster\n"
"                         (default standalone)\n"
"  --memory-mb M          memory limit of the data plane in MiB: items,\n"
"                         tables and connection buffers (default 64)\n"
"  --max-value-bytes B    largest value (default 1048576); frames may be\n"
"                         this plus 64 KiB\n"
"  --max-key-bytes B      longest key (default 250)\n"
"  --max-conns C          most open connections (default 1024)\n"
"  --idle-timeout S       close connections silent this many seconds\n"
"                         (default 300; 0 never)\n"
"  --output-limit-kb K    stop reading from a connection whose unsent\n"
"                         replies pass K KiB (default 4096)\n"
"  --migrate-mb-per-s R   cluster: stream partitions to their new owners\n"
"                         at most R MB/s (10^6 bytes) in all, so clients\n"
"                         keep their latency (default 48; 0 no limit)\n"
"  --partitions P         partitions, a power of two 256..1048576\n"
"                         (default 65536)\n"
"  --seed S               cluster seed of the key hash (default 0)\n"
"  --evict sieve|lru      eviction policy (default sieve)\n"
"  --log-level L          error, warn, info or debug (default info)\n"
"  --secret-file FILE     the cluster secret (32 to 4096 bytes, mode 0600,\n"
"                         owned by this user): every link to the\n"
"                         coordinator and other nodes proves it (AUTH),\n"
"                         and cluster and admin ops need it (default:\n"
"                         none, nothing is checked)\n"
"  --client-secret-file FILE  with --secret-file: clients must prove this\n"
"                         secret (or the cluster's) before any op\n"
"  --config FILE          read options from FILE: one \"name value\" per\n"
"                         line, names as the long options without --,\n"
"                         # comments; the command line wins\n"
"  --help                 this text\n");
}

void
brim_node_config_default(struct brim_node_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->listen, sizeof(cfg->listen), "127.0.0.1:11311");
    snprintf(cfg->name, sizeof(cfg->name), "standalone");
    cfg->memory_mb = 64;
    cfg->max_conns = 1024;
    cfg->idle_timeout_s = 300;
    cfg->partitions = BRIM_PARTITIONS_DEFAULT;
    cfg->out_high_water = 4u << 20;
    cfg->policy = BRIM_EVICT_SIEVE;
    cfg->log_level = BRIM_LOG_INFO;
    cfg->weight_ppm = 1000000;
    cfg->migrate_mb_per_s = 48;
    brim_wire_limits_default(&cfg->limits);
}

/* Parse TEXT as a whole number in [MIN, MAX] into *OUT. */
static int
parse_num(const char *name, const char *text, uint64_t min, uint64_t max,
          uint64_t *out)
{
    char               *end;
    unsigned long long  v;

    errno = 0;
    v = strtoull(text, &end, 10);
    if (text[0] == '\0' || text[0] == '-' || *end != '\0' || errno != 0
        || v < min || v > max)
    {
        fprintf(stderr, "brim-node: --%s: \"%s\" is not a whole number from "
                "%" PRIu64 " to %" PRIu64 "\n", name, text, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

/* Apply option SHORT_CODE with ARG (NULL for flags) to CFG. */
static int
node_apply(struct brim_node_config *cfg, int code, const char *name,
           const char *arg)
{
    enum brim_log_level lvl;
    uint64_t            v;
    char                errbuf[BRIM_ERRBUF_LEN];
    const char         *why;

    errbuf[0] = '\0';
    switch (code) {
    case 'l':
        if (strlen(arg) >= sizeof(cfg->listen)) {
            fprintf(stderr, "brim-node: --listen: address too long\n");
            return -1;
        }
        snprintf(cfg->listen, sizeof(cfg->listen), "%s", arg);
        return 0;
    case 'n':
        if (!brim_ring_name_valid(arg, strlen(arg))) {
            fprintf(stderr, "brim-node: --name: \"%.64s\" is not a node "
                    "name: 1 to %d bytes of [A-Za-z0-9._:-]\n", arg,
                    BRIM_NAME_MAX);
            return -1;
        }
        snprintf(cfg->name, sizeof(cfg->name), "%s", arg);
        return 0;
    case 'm':
        if (parse_num(name, arg, 1, 1u << 20, &v) != 0) {
            return -1;
        }
        cfg->memory_mb = (uint32_t) v;
        return 0;
    case 'v':
        if (parse_num(name, arg, 1, BRIM_WIRE_VALUE_LIMIT, &v) != 0) {
            return -1;
        }
        cfg->limits.max_value_bytes = (uint32_t) v;
        cfg->limits.max_frame_bytes = (uint32_t) v + BRIM_WIRE_FRAME_SLACK;
        return 0;
    case 'k':
        if (parse_num(name, arg, 1, 250, &v) != 0) {
            return -1;
        }
        cfg->limits.max_key_bytes = (uint32_t) v;
        return 0;
    case 'c':
        if (parse_num(name, arg, 1, 1000000, &v) != 0) {
            return -1;
        }
        cfg->max_conns = (uint32_t) v;
        return 0;
    case 'M':
        if (parse_num(name, arg, 0, 100000, &v) != 0) {
            return -1;
        }
        cfg->migrate_mb_per_s = (uint32_t) v;
        return 0;
    case 'i':
        if (parse_num(name, arg, 0, 86400 * 365, &v) != 0) {
            return -1;
        }
        cfg->idle_timeout_s = (uint32_t) v;
        return 0;
    case 'o':
        if (parse_num(name, arg, 64, 1u << 20, &v) != 0) {
            return -1;
        }
        cfg->out_high_water = (size_t) v << 10;
        return 0;
    case 'p':
        if (parse_num(name, arg, BRIM_PARTITIONS_MIN, BRIM_PARTITIONS_MAX, &v)
            != 0)
        {
            return -1;
        }
        if ((v & (v - 1)) != 0) {
            fprintf(stderr, "brim-node: --partitions: %" PRIu64 " is not a "
                    "power of two\n", v);
            return -1;
        }
        cfg->partitions = (uint32_t) v;
        return 0;
    case 's':
        if (parse_num(name, arg, 0, UINT64_MAX, &v) != 0) {
            return -1;
        }
        cfg->seed = v;
        return 0;
    case 'e':
        if (strcmp(arg, "sieve") == 0) {
            cfg->policy = BRIM_EVICT_SIEVE;
        } else if (strcmp(arg, "lru") == 0) {
            cfg->policy = BRIM_EVICT_LRU;
        } else {
            fprintf(stderr, "brim-node: --evict: \"%s\" is not sieve or "
                    "lru\n", arg);
            return -1;
        }
        return 0;
    case 'L':
        if (brim_log_level_parse(arg, &lvl) != 0) {
            fprintf(stderr, "brim-node: --log-level: \"%s\" is not error, "
                    "warn, info or debug\n", arg);
            return -1;
        }
        cfg->log_level = (int) lvl;
        return 0;
    case 'C':
        if (arg[0] == '\0' || strlen(arg) >= sizeof(cfg->coordinator)) {
            fprintf(stderr, "brim-node: --coordinator: \"%.64s\" is not "
                    "HOST:PORT\n", arg);
            return -1;
        }
        snprintf(cfg->coordinator, sizeof(cfg->coordinator), "%s", arg);
        return 0;
    case 'w':
        if (brim_ppm_parse("weight", arg, 1000u * 1000000u, &v, errbuf) != 0
            || v < 1000)
        {
            fprintf(stderr, "brim-node: --weight: %s\n", errbuf[0] != '\0'
                    ? errbuf : "below the least weight, 0.001");
            return -1;
        }
        cfg->weight_ppm = (uint32_t) v;
        cfg->weight_set = 1;
        return 0;
    case 'A':
    case 'B':
        why = brim_guard_path_set(code == 'A' ? cfg->secret_file
                                              : cfg->client_secret_file,
                                  sizeof(cfg->secret_file), arg);
        if (why != NULL) {
            fprintf(stderr, "brim-node: --%s: %s\n", name, why);
            return -1;
        }
        return 0;
    case 'S':
        /* A flag: on the command line it has no value; in a config file
         * "standalone", "standalone yes|true|1" or "... no|false|0". */
        if (arg == NULL || *arg == '\0' || strcmp(arg, "yes") == 0
            || strcmp(arg, "true") == 0 || strcmp(arg, "1") == 0)
        {
            cfg->standalone = 1;
        } else if (strcmp(arg, "no") == 0 || strcmp(arg, "false") == 0
                   || strcmp(arg, "0") == 0)
        {
            cfg->standalone = 0;
        } else {
            fprintf(stderr, "brim-node: standalone: \"%s\" is not yes or "
                    "no\n", arg);
            return -1;
        }
        return 0;
    default:
        return -1;
    }
}

/* Apply the options of config file PATH. Returns 0 or -1 (said why). */
static int
node_read_config(struct brim_node_config *cfg, const char *path)
{
    const struct option *o;
    FILE                *f;
    char                 line[512], *name, *val, *end;
    int                  lineno = 0, rc = 0;

    f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "brim-node: --config %s: %s\n", path, strerror(errno));
        return -1;
    }
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        line[strcspn(line, "#\r\n")] = '\0';
        name = line + strspn(line, " \t");
        if (*name == '\0') {
            continue;
        }
        val = name + strcspn(name, " \t=");
        if (*val != '\0') {
            *val++ = '\0';
            val += strspn(val, " \t=");
        }
        end = val + strlen(val);
        while (end > val && (end[-1] == ' ' || end[-1] == '\t')) {
            *--end = '\0';
        }
        for (o = node_longopts; o->name != NULL; o++) {
            if (strcmp(o->name, name) == 0) {
                break;
            }
        }
        if (o->name == NULL || o->val == 'f' || o->val == 'h'
            || (o->has_arg == required_argument && *val == '\0'))
        {
            fprintf(stderr, "brim-node: %s:%d: unknown option or missing "
                    "value \"%s\"\n", path, lineno, name);
            rc = -1;
        } else if (node_apply(cfg, o->val, o->name, val) != 0)
        {
            fprintf(stderr, "brim-node: (in %s:%d)\n", path, lineno);
            rc = -1;
        }
    }
    if (rc == 0 && ferror(f)) {
        fprintf(stderr, "brim-node: --config %s: cannot read it: %s\n", path,
                strerror(errno));
        rc = -1;
    }
    fclose(f);
    return rc;
}

/*
 * The memory limit must leave room for data: at least four times the
 * partition table a store starts with, and twice the largest item.
 */
static int
node_check_memory(const struct brim_node_config *cfg)
{
    size_t limit = (size_t) cfg->memory_mb << 20;
    size_t table = brim_store_fixed_bytes(cfg->partitions);
    size_t item = (size_t) cfg->limits.max_key_bytes
                  + cfg->limits.max_value_bytes;

    if (limit < 4 * table) {
        fprintf(stderr, "brim-node: --memory-mb %u is too small: the table "
                "of %u partitions alone takes %.1f MiB; give --memory-mb "
                "%zu or more, or fewer --partitions\n", cfg->memory_mb,
                cfg->partitions, (double) table / (1 << 20),
                (4 * table + (1u << 20) - 1) >> 20);
        return -1;
    }
    if (limit < 2 * item) {
        fprintf(stderr, "brim-node: --memory-mb %u is too small for values "
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
        fprintf(stderr, "brim-node: --standalone and --coordinator exclude "
                "each other: a node either owns every partition or follows "
                "a coordinator\n");
        return -1;
    }
    if (!cfg->standalone && cfg->coordinator[0] == '\0') {
        fprintf(stderr, "brim-node: give --standalone, or --name NAME "
                "--coordinator HOST:PORT to join a cluster\n");
        return -1;
    }
    if (cfg->coordinator[0] != '\0' && !name_set) {
        fprintf(stderr, "brim-node: --coordinator needs --name NAME (the "
                "member name, unique in the cluster)\n");
        return -1;
    }
    if (cfg->standalone && cfg->weight_set) {
        fprintf(stderr, "brim-node: --weight is for a cluster member "
                "(--coordinator), not --standalone\n");
        return -1;
    }
    return 0;
}

static int
node_parse_args(struct brim_node_config *cfg, int argc, char **argv)
{
    int i, ch, idx, name_set;

    brim_node_config_default(cfg);
    /* The config file first, so the command line wins. */
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            if (node_read_config(cfg, argv[i + 1]) != 0) {
                return -1;
            }
        } else if (strncmp(argv[i], "--config=", 9) == 0) {
            if (node_read_config(cfg, argv[i] + 9) != 0) {
                return -1;
            }
        }
    }
    while ((ch = getopt_long(argc, argv, "h", node_longopts, &idx)) != -1) {
        if (ch == 'h') {
            node_usage(stdout);
            exit(0);
        }
        if (ch == 'f') {
            continue;
        }
        if (ch == '?' || node_apply(cfg, ch, node_longopts[idx].name,
                                    optarg) != 0)
        {
            fprintf(stderr, "brim-node: see brim-node --help\n");
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "brim-node: unexpected argument \"%s\"; see "
                "brim-node --help\n", argv[optind]);
        return -1;
    }
    name_set = strcmp(cfg->name, "standalone") != 0;
    if (node_check_memory(cfg) != 0) {
        return -1;
    }
    return node_check_mode(cfg, name_set);
}

static void
node_tick_cb(uv_timer_t *t)
{
    struct brim_node *node = BRIM_CONTAINER_OF(t, struct brim_node,
                                               tick_timer);
    uint64_t          now_ms = uv_now(node->loop);

    brim_store_reclaim(node->store, (uint32_t) time(NULL),
                       NODE_RECLAIM_BUDGET);
    if (now_ms - node->stats.last_tick_ms >= 1000) {
        node->stats.requests_per_sec =
            (double) (node->stats.requests - node->stats.last_requests) * 1000.0
            / (double) (now_ms - node->stats.last_tick_ms);
        node->stats.last_requests = node->stats.requests;
        node->stats.last_tick_ms = now_ms;
    }
}

/* Close every handle so that the loop ends (node->stop). */
static void
node_stop(struct brim_node *node)
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
    brim_migrate_stop(node);
    brim_server_close(&node->srv);
    uv_close((uv_handle_t *) &node->tick_timer, NULL);
    uv_close((uv_handle_t *) &node->flush_timer, NULL);
    uv_close((uv_handle_t *) &node->sig_term, NULL);
    uv_close((uv_handle_t *) &node->sig_int, NULL);
    uv_close((uv_handle_t *) &node->sig_quit, NULL);
}

static void
node_signal_cb(uv_signal_t *s, int signum)
{
    struct brim_node *node = s->data;
    int               rc;

    if (signum == SIGQUIT || node->stopping) {
        brim_log_info("signal %d: exiting at once", signum);
        _exit(0);
    }
    if (signum == SIGTERM && !node->cfg.standalone) {
        rc = brim_node_coord_leave(node);
        if (rc > 0) {
            return;             /* leaving: the drain stops the node */
        }
        if (rc < 0) {
            brim_log_info("signal %d again: exiting at once", signum);
            _exit(0);
        }
    }
    brim_log_info("signal %d: closing connections and exiting", signum);
    node_stop(node);
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
    node->coord_limits.max_frame_bytes = BRIM_MAX(
        node->cfg.limits.max_frame_bytes,
        2u * node->cfg.partitions + (64u << 10) + 200u * BRIM_NODES_MAX);
    memset(&cc, 0, sizeof(cc));
    cc.max_frame_bytes = node->cfg.standalone
                         ? node->cfg.limits.max_frame_bytes
                         : node->coord_limits.max_frame_bytes;
    cc.out_high_water = node->cfg.out_high_water;
    cc.out_low_water = node->cfg.out_high_water / 2;
    cc.idle_timeout_ms = node->cfg.idle_timeout_s * 1000;
    cc.max_conns = node->cfg.max_conns;
    cc.guard = &node->guard;
    if (brim_wire_limits_check(&node->cfg.limits, errbuf) != 0
        || brim_server_listen(&node->srv, node->loop, node->cfg.listen, &cc,
                              brim_node_dispatch, NULL, node, errbuf) != 0)
    {
        fprintf(stderr, "brim-node: %s\n", errbuf);
        return -1;
    }
    uv_timer_init(node->loop, &node->tick_timer);
    uv_timer_start(&node->tick_timer, node_tick_cb, NODE_TICK_MS,
                   NODE_TICK_MS);
    uv_timer_init(node->loop, &node->flush_timer);
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

int
main(int argc, char **argv)
{
    static struct brim_node node;
    char                    errbuf[BRIM_ERRBUF_LEN];

    if (node_parse_args(&node.cfg, argc, argv) != 0) {
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    brim_log_init("node", node.cfg.name, (enum brim_log_level)
                  node.cfg.log_level);
    node.loop = uv_default_loop();
    node.incarnation = brim_random_u64();
    /* A cluster member learns its cluster's id from the coordinator. */
    node.cluster_id = node.cfg.standalone ? brim_random_u64() : 0;
    node.topo.self = node.topo.self_pending = -1;
    node.stop = node_stop;
    brim_links_init(&node.links, &node);
    brim_links_listen(&node.links, brim_migrate_link_open);
    node.start_unix = (uint64_t) time(NULL);
    node.stats.last_tick_ms = uv_now(node.loop);
    /* The secret files are read once; their bytes are never logged. */
    brim_guard_init(&node.guard, node.loop, BRIM_ROLE_NODE);
    if (brim_guard_load(&node.guard, node.cfg.secret_file,
                        node.cfg.client_secret_file, errbuf) != 0)
    {
        fprintf(stderr, "brim-node: %s\n", errbuf);
        return 2;
    }
    if (node_start(&node) != 0) {
        return 1;
    }
    brim_log_info("serving on %s (port %d), %s%s, %u partitions, "
                  "memory limit %u MiB, eviction %s", node.cfg.listen,
                  brim_server_port(&node.srv),
                  node.cfg.standalone ? "standalone" : "coordinator ",
                  node.cfg.standalone ? "" : node.cfg.coordinator,
                  node.cfg.partitions,
                  node.cfg.memory_mb,
                  node.cfg.policy == BRIM_EVICT_SIEVE ? "sieve" : "lru");
    uv_run(node.loop, UV_RUN_DEFAULT);
    brim_server_destroy(&node.srv);
    brim_store_free(node.store);
    msgpack_zone_destroy(&node.zone);
    brim_guard_destroy(&node.guard);
    brim_migrate_free(&node);
    brim_links_destroy(&node.links);
    if (!node.cfg.standalone) {
        brim_peer_destroy(&node.coordlink.peer);
        brim_node_topo_destroy(&node);
    }
    uv_loop_close(node.loop);
    brim_log_info("stopped");
    return node.exit_code;
}
