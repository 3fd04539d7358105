/*
 * server/coord/main.c - brim-coord: flags, the state file (created with a
 * fresh cluster id and seed, or loaded), one libuv loop serving
 * PROTOCOL.md section 10.
 */
#include "server/coord/coord.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/file.h>

#include "common/defs.h"
#include "common/placement.h"
#include "common/ring.h"
#include "server/log.h"
#include "server/random.h"

#define GIVEN_EPS 1u
#define GIVEN_V 2u
#define GIVEN_P 4u

static const struct option coord_longopts[] = {
    { "listen", required_argument, NULL, 'l' },
    { "data-dir", required_argument, NULL, 'd' },
    { "eps", required_argument, NULL, 'e' },
    { "tokens", required_argument, NULL, 'V' },
    { "partitions", required_argument, NULL, 'P' },
    { "heartbeat-ms", required_argument, NULL, 'b' },
    { "dead-after-ms", required_argument, NULL, 'D' },
    { "pending-timeout-ms", required_argument, NULL, 't' },
    { "join-window-ms", required_argument, NULL, 'j' },
    { "log-level", required_argument, NULL, 'L' },
    { "max-conns", required_argument, NULL, 'c' },
    { "idle-timeout", required_argument, NULL, 'i' },
    { "secret-file", required_argument, NULL, 'A' },
    { "client-secret-file", required_argument, NULL, 'B' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

static void
usage(FILE *f)
{
    fputs("usage: brim-coord --listen HOST:PORT --data-dir DIR [options]\n"
          "  --eps E                 cap slack, decimal or none (0.05)\n"
          "  --tokens V              ring tokens per node (160)\n"
          "  --partitions P          partitions, a power of two (65536)\n"
          "  --heartbeat-ms MS       node heartbeat interval (500)\n"
          "  --dead-after-ms MS      silence before a node is dead (3000)\n"
          "  --pending-timeout-ms MS abort an unacknowledged epoch (5000)\n"
          "  --join-window-ms MS     joins batched into one change (200)\n"
          "  --log-level L           error, warn, info or debug (info)\n"
          "  --max-conns C           open connections at most; more are\n"
          "                          refused BUSY and closed (1024)\n"
          "  --idle-timeout S        close connections silent this many\n"
          "                          seconds, 0 never (300); a SUBSCRIBE\n"
          "                          is answered within half of it\n"
          "  --secret-file FILE      the cluster secret (32 to 4096 bytes,\n"
          "                          mode 0600, owned by this user): nodes\n"
          "                          and admins prove it (AUTH) before\n"
          "                          JOIN, HEARTBEAT, LEAVE or PLAN, and so\n"
          "                          does this coordinator to nodes (none)\n"
          "  --client-secret-file FILE  with --secret-file: every client\n"
          "                          proves this secret (or the cluster's)\n"
          "                          before any op (none)\n"
          "eps, tokens and partitions are fixed when the cluster is created\n"
          "in DIR; later values that differ are ignored with a warning.\n",
          f);
}

static int
parse_u32(const char *what, const char *text, uint32_t *v)
{
    char              *end;
    unsigned long long x;

    x = strtoull(text, &end, 10);
    if (*text == '\0' || *end != '\0' || text[0] == '-' || x > UINT32_MAX) {
        fprintf(stderr, "brim-coord: --%s: \"%s\" is not a number 0 .. "
                "4294967295\n", what, text);
        return -1;
    }
    *v = (uint32_t) x;
    return 0;
}

static int
apply(struct coord_config *cfg, int ch, const char *name, const char *arg)
{
    char err[BRIM_ERRBUF_LEN];
    enum brim_log_level lvl;
    const char *why;

    switch (ch) {
    case 'l':
        snprintf(cfg->listen, sizeof(cfg->listen), "%s", arg);
        return 0;
    case 'd':
        snprintf(cfg->data_dir, sizeof(cfg->data_dir), "%s", arg);
        return 0;
    case 'e':
        cfg->given |= GIVEN_EPS;
        if (brim_eps_parse(arg, &cfg->set.eps_ppm, err) != 0) {
            fprintf(stderr, "brim-coord: --eps: %s\n", err);
            return -1;
        }
        return 0;
    case 'V':
        cfg->given |= GIVEN_V;
        return parse_u32(name, arg, &cfg->set.tokens_per_node);
    case 'P':
        cfg->given |= GIVEN_P;
        return parse_u32(name, arg, &cfg->set.partitions);
    case 'b':
        return parse_u32(name, arg, &cfg->set.heartbeat_ms);
    case 'D':
        return parse_u32(name, arg, &cfg->set.dead_after_ms);
    case 't':
        return parse_u32(name, arg, &cfg->set.pending_timeout_ms);
    case 'j':
        return parse_u32(name, arg, &cfg->join_window_ms);
    case 'c':
        if (parse_u32(name, arg, &cfg->max_conns) != 0) {
            return -1;
        }
        if (cfg->max_conns == 0) {
            fprintf(stderr, "brim-coord: --max-conns: at least 1\n");
            return -1;
        }
        return 0;
    case 'i':
        return parse_u32(name, arg, &cfg->idle_timeout_s);
    case 'A':
    case 'B':
        why = brim_guard_path_set(ch == 'A' ? cfg->secret_file
                                            : cfg->client_secret_file,
                                  sizeof(cfg->secret_file), arg);
        if (why != NULL) {
            fprintf(stderr, "brim-coord: --%s: %s\n", name, why);
            return -1;
        }
        return 0;
    default:                        /* 'L' */
        if (brim_log_level_parse(arg, &lvl) != 0) {
            fprintf(stderr, "brim-coord: --log-level: \"%s\" is not error, "
                    "warn, info or debug\n", arg);
            return -1;
        }
        cfg->log_level = (int) lvl;
        return 0;
    }
}

static int
parse_args(struct coord_config *cfg, int argc, char **argv)
{
    int ch, idx;

    memset(cfg, 0, sizeof(*cfg));
    cfg->set.eps_ppm = 50000;
    cfg->set.tokens_per_node = BRIM_TOKENS_PER_NODE_DEFAULT;
    cfg->set.partitions = 65536;
    cfg->set.heartbeat_ms = 500;
    cfg->set.dead_after_ms = 3000;
    cfg->set.pending_timeout_ms = 5000;
    cfg->join_window_ms = 200;
    cfg->max_conns = 1024;
    cfg->idle_timeout_s = 300;
    cfg->log_level = BRIM_LOG_INFO;
    while ((ch = getopt_long(argc, argv, "h", coord_longopts, &idx)) != -1) {
        if (ch == 'h') {
            usage(stdout);
            exit(0);
        }
        if (ch == '?' || apply(cfg, ch, coord_longopts[idx].name, optarg)) {
            fprintf(stderr, "brim-coord: see brim-coord --help\n");
            return -1;
        }
    }
    if (optind < argc || cfg->listen[0] == '\0' || cfg->data_dir[0] == '\0')
    {
        fprintf(stderr, "brim-coord: --listen and --data-dir are required; "
                "see brim-coord --help\n");
        return -1;
    }
    cfg->set.cluster_id = brim_random_u64() | 1;
    cfg->set.seed = brim_random_u64();
    return 0;
}

/*
 * Hold DIR/lock (flock, exclusive) for the life of the process, so a
 * second brim-coord on the same data dir refuses to start rather than
 * declare the first one's members dead and commit that to the shared
 * state file. Returns 0 or -1 (said why on stderr).
 */
static int
lock_data_dir(const char *dir)
{
    char path[4200];
    int  fd;

    snprintf(path, sizeof(path), "%s/lock", dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "brim-coord: --data-dir %s: cannot open %s: %s\n",
                dir, path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr, "brim-coord: --data-dir %s is in use by another "
                "brim-coord (it holds %s); refusing to start\n", dir, path);
        close(fd);
        return -1;
    }
    return 0;                       /* fd stays open: the lock with it */
}

/* Load DIR/state or create a new cluster. */
static int
load_state(struct coord *co)
{
    struct brim_coord_settings *s = &co->st.settings, *g = &co->cfg.set;
    struct sockaddr_storage     sa;
    char                        err[BRIM_ERRBUF_LEN] = "";
    int                         rc;

    if (brim_coord_settings_check(g, err) != 0) {
        fprintf(stderr, "brim-coord: %s\n", err);
        return -1;
    }
    /* A bad address is refused before a new cluster is written. */
    if (brim_addr_parse(co->cfg.listen, &sa) != 0) {
        fprintf(stderr, "brim-coord: --listen: \"%s\" is not HOST:PORT (an "
                "IP address or localhost)\n", co->cfg.listen);
        return -1;
    }
    if (lock_data_dir(co->cfg.data_dir) != 0) {
        return -1;
    }
    rc = brim_persist_load(co->cfg.data_dir, &co->st, err);
    if (rc == BRIM_ENOTFOUND) {
        if (brim_coord_state_init(&co->st, g, err) != 0
            || coord_save(co) != 0)
        {
            fprintf(stderr, "brim-coord: %s\n", err);
            return -1;
        }
        brim_log_info("new cluster %016" PRIx64 ": P %" PRIu32 ", V %" PRIu32,
                      s->cluster_id, s->partitions, s->tokens_per_node);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "brim-coord: refusing to start: %s\n", err);
        return -1;
    }
    if (((co->cfg.given & GIVEN_EPS) && g->eps_ppm != s->eps_ppm)
        || ((co->cfg.given & GIVEN_V) && g->tokens_per_node
                                             != s->tokens_per_node)
        || ((co->cfg.given & GIVEN_P) && g->partitions != s->partitions))
    {
        brim_log_warn("eps, tokens or partitions differ from the stored "
                      "cluster's; keeping the stored ones");
    }
    /* Timings may change across restarts. */
    s->heartbeat_ms = g->heartbeat_ms;
    s->dead_after_ms = g->dead_after_ms;
    s->pending_timeout_ms = g->pending_timeout_ms;
    if (co->st.has_pending) {
        brim_log_info("aborting epoch %" PRIu64 " left pending",
                      co->st.pending.map.epoch);
        brim_topo_destroy(&co->st.pending);
        co->st.has_pending = 0;
    }
    if (coord_save(co) != 0) {
        return -1;
    }
    brim_log_info("cluster %016" PRIx64 " loaded at epoch %" PRIu64,
                  s->cluster_id, co->st.committed.map.epoch);
    return 0;
}

static void
tick_cb(uv_timer_t *t)
{
    coord_tick(t->data);
}

static void
signal_cb(uv_signal_t *sig, int signum)
{
    struct coord        *co = sig->data;
    struct coord_member *mb;

    brim_log_info("signal %d: exiting", signum);
    if (co->stopping) {
        _exit(0);
    }
    co->stopping = 1;
    for (mb = co->members; mb != NULL; mb = mb->next) {
        brim_peer_close(&mb->peer);
    }
    brim_server_close(&co->srv);
    uv_close((uv_handle_t *) &co->tick, NULL);
    uv_close((uv_handle_t *) &co->sig_term, NULL);
    uv_close((uv_handle_t *) &co->sig_int, NULL);
}

int
main(int argc, char **argv)
{
    static struct coord       co;
    struct brim_server_config sc;
    char                      err[BRIM_ERRBUF_LEN];

    if (parse_args(&co.cfg, argc, argv) != 0) {
        return 2;
    }
    brim_log_init("coord", "coord", (enum brim_log_level) co.cfg.log_level);
    co.loop = uv_default_loop();
    /* The secret files are read once; their bytes are never logged. */
    brim_guard_init(&co.guard, co.loop, BRIM_ROLE_COORD);
    if (brim_guard_load(&co.guard, co.cfg.secret_file,
                        co.cfg.client_secret_file, err) != 0)
    {
        fprintf(stderr, "brim-coord: %s\n", err);
        return 2;
    }
    if (load_state(&co) != 0) {
        return 1;
    }
    if (!msgpack_zone_init(&co.zone, MSGPACK_ZONE_CHUNK_SIZE)
        || coord_zones_init() != 0)
    {
        fprintf(stderr, "brim-coord: out of memory\n");
        return 1;
    }
    memset(&sc, 0, sizeof(sc));
    sc.max_frame_bytes = 2 * (size_t) co.st.settings.partitions
                         + (64u << 10) + 200u * BRIM_NODES_MAX;
    sc.out_high_water = 8u << 20;
    sc.out_low_water = 1u << 20;
    sc.max_conns = co.cfg.max_conns;
    sc.idle_timeout_ms = co.cfg.idle_timeout_s * 1000u;
    sc.guard = &co.guard;
    if (brim_server_listen(&co.srv, co.loop, co.cfg.listen, &sc,
                           coord_dispatch, coord_conn_closed, &co, err) != 0)
    {
        fprintf(stderr, "brim-coord: %s\n", err);
        return 1;
    }
    /* Restarted with a committed map: streams may be running, and which
     * ones is heard from the nodes before any change. */
    co.last_streams = co.st.committed.map.epoch > 0;
    co.restarted = co.last_streams;
    if (coord_members_from_state(&co) != 0) {
        fprintf(stderr, "brim-coord: out of memory\n");
        return 1;
    }
    uv_timer_init(co.loop, &co.tick);
    co.tick.data = &co;
    uv_timer_start(&co.tick, tick_cb, COORD_TICK_MS, COORD_TICK_MS);
    uv_signal_init(co.loop, &co.sig_term);
    uv_signal_init(co.loop, &co.sig_int);
    co.sig_term.data = co.sig_int.data = &co;
    uv_signal_start(&co.sig_term, signal_cb, SIGTERM);
    uv_signal_start(&co.sig_int, signal_cb, SIGINT);
    brim_log_info("listening on %s", co.cfg.listen);
    uv_run(co.loop, UV_RUN_DEFAULT);
    brim_server_destroy(&co.srv);
    coord_members_free(&co);
    brim_coord_state_destroy(&co.st);
    msgpack_zone_destroy(&co.zone);
    brim_guard_destroy(&co.guard);
    return 0;
}
