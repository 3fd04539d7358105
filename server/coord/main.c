/*
 * server/coord/main.c - brim-coord: flags, the state file (created with a
 * fresh cluster id and seed, or loaded), one libuv loop serving
 * PROTOCOL.md section 10.
 */
#include "server/coord/coord.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/file.h>
#include <sys/stat.h>

#include "common/defs.h"
#include "common/hash.h"
#include "common/parse.h"
#include "common/placement.h"
#include "common/ring.h"
#include "server/log.h"
#include "server/options.h"
#include "server/random.h"

#define GIVEN_EPS 1u
#define GIVEN_V 2u
#define GIVEN_P 4u

/* ---- options (one table: the command line, --config and --help) ---- */

#define COORD_OFF(f) offsetof(struct brim_coord_config, f)

/* --eps, --tokens, --partitions: a new cluster's settings, noted as
 * given (a loaded cluster keeps its own and says so). */
static const char *
coord_set_eps(void *cfg, const struct brim_option *o, const char *arg,
              char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_coord_config *c = cfg;

    (void) o;
    c->given |= GIVEN_EPS;
    if (brim_eps_parse(arg, &c->set.eps_ppm, errbuf) == 0) {
        return NULL;
    }
    /* The caller prints "--eps: " before it; not "--eps: eps: ". */
    if (strncmp(errbuf, "eps: ", 5) == 0) {
        memmove(errbuf, errbuf + 5, strlen(errbuf + 5) + 1);
    }
    return errbuf;
}

static const char *
coord_set_setting(void *cfg, const struct brim_option *o, const char *arg,
                  char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_coord_config *c = cfg;

    if (strcmp(o->name, "tokens") == 0) {
        c->given |= GIVEN_V;
        return brim_option_u32(cfg, o, arg, errbuf);
    }
    c->given |= GIVEN_P;
    return brim_option_pow2_u32(cfg, o, arg, errbuf);
}

static const char *
coord_set_addr(void *cfg, const struct brim_option *o, const char *arg,
               char errbuf[BRIM_ERRBUF_LEN])
{
    if (brim_addr_check(arg, 0, errbuf) != 0) {
        return errbuf;
    }
    return brim_option_str(cfg, o, arg, errbuf);
}

static const struct brim_option coord_options[] = {
    {"listen", "HOST:PORT", coord_set_addr, COORD_OFF(listen), 0,
     sizeof(((struct brim_coord_config *) 0)->listen), NULL,
     "address to serve nodes and operators on (required)"},
    {"data-dir", "DIR", brim_option_str, COORD_OFF(data_dir), 0,
     sizeof(((struct brim_coord_config *) 0)->data_dir), NULL,
     "where the cluster's state file lives (required without --etcd)"},
    {"eps", "E", coord_set_eps, 0, 0, 0, "0.05",
     "cap slack, a decimal or none"},
    {"tokens", "V", coord_set_setting, COORD_OFF(set.tokens_per_node), 1,
     BRIM_TOKENS_PER_NODE_MAX, "160", "ring tokens per node, 1 to 10000"},
    {"partitions", "P", coord_set_setting, COORD_OFF(set.partitions),
     BRIM_PARTITIONS_MIN, BRIM_PARTITIONS_MAX, "65536",
     "partitions, a power of two 256 to 1048576"},
    {"heartbeat-ms", "MS", brim_option_u32, COORD_OFF(set.heartbeat_ms), 1,
     UINT32_MAX, "500", "node heartbeat interval"},
    {"dead-after-ms", "MS", brim_option_u32, COORD_OFF(set.dead_after_ms), 1,
     UINT32_MAX, "3000", "silence before a node is dead"},
    {"pending-timeout-ms", "MS", brim_option_u32,
     COORD_OFF(set.pending_timeout_ms), 1, UINT32_MAX, "5000",
     "abort an unacknowledged epoch after this"},
    {"join-window-ms", "MS", brim_option_u32, COORD_OFF(join_window_ms), 0,
     UINT32_MAX, "200", "joins batched into one change"},
    {"log-level", "L", brim_option_log_level, COORD_OFF(log_level), 0, 0,
     "info", "error, warn, info or debug"},
    {"max-conns", "C", brim_option_u32, COORD_OFF(max_conns), 1, UINT32_MAX,
     "1024", "open connections at most; more are refused BUSY and closed"},
    {"idle-timeout", "S", brim_option_u32, COORD_OFF(idle_timeout_s), 0,
     UINT32_MAX, "300",
     "close connections silent this many seconds, 0 "
     "never; a SUBSCRIBE is answered within half of it"},
    {"secret-file", "FILE", brim_option_secret_path, COORD_OFF(secret_file), 0,
     sizeof(((struct brim_coord_config *) 0)->secret_file), "none",
     "the cluster secret (32 to 4096 bytes, mode 0600, owned by this "
     "user): nodes and admins prove it (AUTH) before JOIN, HEARTBEAT, "
     "LEAVE or PLAN, and so does this coordinator to nodes"},
    {"client-secret-file", "FILE", brim_option_secret_path,
     COORD_OFF(client_secret_file), 0,
     sizeof(((struct brim_coord_config *) 0)->client_secret_file), "none",
     "with --secret-file: every client proves this secret (or the "
     "cluster's) before any op"},
    {"http-listen", "HOST:PORT", coord_set_addr, COORD_OFF(http_listen), 0,
     sizeof(((struct brim_coord_config *) 0)->http_listen), "none",
     "serve HTTP here: /metrics in Prometheus's text format and "
     "/api/cluster as JSON (docs/operations.md); give a loopback address "
     "unless the network is trusted"},
    {"http-max-conns", "C", brim_option_u32, COORD_OFF(http_max_conns), 1, 4096,
     "64",
     "most open HTTP connections (more are closed at once); each has 5 s "
     "to send a whole request"},
    {"etcd", "URL,...", brim_option_str, COORD_OFF(etcd), 0,
     sizeof(((struct brim_coord_config *) 0)->etcd), "none",
     "keep the state in this etcd cluster (http://HOST:PORT, comma "
     "separated) instead of --data-dir, and lead only when elected "
     "there; needs --name"},
    {"name", "NAME", brim_option_str, COORD_OFF(name), 0,
     sizeof(((struct brim_coord_config *) 0)->name), NULL,
     "with --etcd: this coordinator's name, unique in its cluster"},
    {"etcd-prefix", "KEY", brim_option_str, COORD_OFF(etcd_prefix), 0,
     sizeof(((struct brim_coord_config *) 0)->etcd_prefix), "/brim/default",
     "with --etcd: the cluster's keys are KEY/leader and KEY/state"},
    {"import-state", "DIR", brim_option_str, COORD_OFF(import_dir), 0,
     sizeof(((struct brim_coord_config *) 0)->import_dir), NULL,
     "with --etcd: move the state file of this file-mode --data-dir into "
     "etcd when etcd holds none yet, then mark DIR so that a file-mode "
     "brim-coord refuses it"},
    {"election-ttl", "S", brim_option_u32, COORD_OFF(election_ttl_s), 1, 60,
     "2",
     "with --etcd: the leader's etcd lease in seconds (etcd may grant "
     "more); a standby leads this long after the leader is lost"},
    {"config", "FILE", brim_option_config, 0, 0, 0, NULL,
     "read options from FILE: one \"name value\" per line, names as the "
     "long options without --, # comments; the command line wins"},
    {NULL, NULL, NULL, 0, 0, 0, NULL, NULL}};

static const char coord_synopsis[] =
    "usage: brim-coord --listen HOST:PORT --data-dir DIR [options]\n"
    "       brim-coord --listen HOST:PORT --etcd URL[,URL...] --name NAME "
    "[options]\n"
    "The brim coordinator: membership, epochs and the partition map of one "
    "cluster.\n\n";

static const char coord_notes[] =
    "\neps, tokens and partitions are fixed when the cluster is created\n"
    "in DIR; later values that differ are ignored with a warning.\n"
    "Exit status: 0 after a clean stop; 1 when it cannot start; 2 on a "
    "usage error.\n";

/*
 * The values that are wrong together, or name what is not there: a usage
 * error (exit 2) said with the options as typed, before any file is
 * opened or socket bound. Each value alone was checked by its setter.
 */
static int
check_args(const struct brim_coord_config *cfg)
{
    struct stat st;
    const char *why;

    /* A node heartbeating on time must never look dead. */
    if (cfg->set.dead_after_ms <= cfg->set.heartbeat_ms) {
        fprintf(stderr,
                "brim-coord: --dead-after-ms %" PRIu32
                " must be above --heartbeat-ms %" PRIu32 "\n",
                cfg->set.dead_after_ms, cfg->set.heartbeat_ms);
        return -1;
    }
    if (cfg->import_dir[0] != '\0' && cfg->etcd[0] == '\0') {
        fprintf(stderr, "brim-coord: --import-state needs --etcd\n");
        return -1;
    }
    if (cfg->etcd[0] != '\0') {
        if (cfg->import_dir[0] != '\0'
            && (stat(cfg->import_dir, &st) != 0 || !S_ISDIR(st.st_mode)))
        {
            fprintf(stderr, "brim-coord: --import-state %s: not a directory\n",
                    cfg->import_dir);
            return -1;
        }
        if (cfg->data_dir[0] != '\0' || cfg->name[0] == '\0') {
            fprintf(stderr,
                    "brim-coord: --etcd needs --name and excludes "
                    "--data-dir\n");
            return -1;
        }
        if (!brim_ring_name_valid(cfg->name, strlen(cfg->name))) {
            fprintf(stderr,
                    "brim-coord: --name \"%s\": 1 to 64 bytes of "
                    "[A-Za-z0-9._:-]\n",
                    cfg->name);
            return -1;
        }
        return 0;
    }
    why = NULL;
    if (stat(cfg->data_dir, &st) != 0) {
        why = errno == ENOENT ? "the data directory does not exist"
                              : strerror(errno);
    } else if (!S_ISDIR(st.st_mode)) {
        why = "not a directory";
    }
    if (why != NULL) {
        fprintf(stderr, "brim-coord: --data-dir %s: %s\n", cfg->data_dir, why);
        return -1;
    }
    return 0;
}

/* Options into CFG. Returns 0, 1 (--help printed) or -1 (usage error,
 * said why). */
static int
parse_args(struct brim_coord_config *cfg, int argc, char **argv)
{
    int rc;

    memset(cfg, 0, sizeof(*cfg));
    cfg->set.eps_ppm = 50000;
    cfg->set.tokens_per_node = BRIM_TOKENS_PER_NODE_DEFAULT;
    cfg->set.partitions = 65536;
    cfg->set.heartbeat_ms = 500;
    cfg->set.dead_after_ms = 3000;
    cfg->set.pending_timeout_ms = 5000;
    cfg->join_window_ms = 200;
    cfg->max_conns = 1024;
    cfg->http_max_conns = 64;
    cfg->idle_timeout_s = 300;
    cfg->log_level = BRIM_LOG_INFO;
    cfg->election_ttl_s = 2;
    snprintf(cfg->etcd_prefix, sizeof(cfg->etcd_prefix), "/brim/default");
    rc = brim_options_parse(coord_options, cfg, argc, argv, "brim-coord",
                            coord_synopsis, coord_notes);
    if (rc != 0) {
        return rc;
    }
    if (cfg->listen[0] == '\0'
        || (cfg->data_dir[0] == '\0' && cfg->etcd[0] == '\0'))
    {
        fprintf(stderr,
                "brim-coord: --listen and --data-dir (or --etcd) are "
                "required; see brim-coord --help\n");
        return -1;
    }
    if (check_args(cfg) != 0) {
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
        fprintf(stderr, "brim-coord: --data-dir %s: cannot open %s: %s\n", dir,
                path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr,
                "brim-coord: --data-dir %s is in use by another "
                "brim-coord (it holds %s); refusing to start\n",
                dir, path);
        close(fd);
        return -1;
    }
    return 0; /* fd stays open: the lock with it */
}

/* The file back end of brim_coord_save_fn (persist.c). */
static int
file_save(struct brim_coord *co, char errbuf[BRIM_ERRBUF_LEN])
{
    return brim_persist_save(co->cfg.data_dir, &co->state, errbuf);
}

/* Settings and address that are refused before anything is written. */
static int
check_start(struct brim_coord *co)
{
    struct sockaddr_storage sa;
    char                    err[BRIM_ERRBUF_LEN] = "";

    if (brim_coord_settings_check(&co->cfg.set, err) != 0) {
        fprintf(stderr, "brim-coord: %s\n", err);
        return -1;
    }
    /* A bad address is refused before a new cluster is written. */
    if (brim_addr_parse(co->cfg.listen, &sa) != 0) {
        fprintf(stderr,
                "brim-coord: --listen: \"%s\" is not HOST:PORT (an "
                "IP address or localhost)\n",
                co->cfg.listen);
        return -1;
    }
    return 0;
}

/* Load DIR/state or create a new cluster. */
static int
load_state(struct brim_coord *co)
{
    struct brim_coord_settings *s = &co->state.settings, *g = &co->cfg.set;
    char                        err[BRIM_ERRBUF_LEN] = "";
    char                        moved[4200];
    int                         rc;

    co->save = file_save;
    co->leading = 1;
    co->ack_until_ms = UINT64_MAX;
    if (lock_data_dir(co->cfg.data_dir) != 0) {
        return -1;
    }
    snprintf(moved, sizeof(moved), "%s/%s", co->cfg.data_dir,
             BRIM_PERSIST_MOVED);
    if (access(moved, F_OK) == 0) {
        fprintf(stderr,
                "brim-coord: refusing to start: the state of %s was moved "
                "into etcd (%s says where); run brim-coord with --etcd\n",
                co->cfg.data_dir, moved);
        return -1;
    }
    rc = brim_persist_load(co->cfg.data_dir, &co->state, err);
    if (rc == BRIM_ENOTFOUND) {
        /* Not written here: brim_coord_resume() writes it once both
         * listeners are open, so a start that fails (a port in use) leaves
         * no cluster whose P, V and eps a corrected start would have to
         * keep (a tester's find). */
        if (brim_coord_state_init(&co->state, g, err) != 0) {
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
        || ((co->cfg.given & GIVEN_V)
            && g->tokens_per_node != s->tokens_per_node)
        || ((co->cfg.given & GIVEN_P) && g->partitions != s->partitions))
    {
        brim_log_warn("eps, tokens or partitions differ from the stored "
                      "cluster's; keeping the stored ones");
    }
    brim_log_info("cluster %016" PRIx64 " loaded at epoch %" PRIu64,
                  s->cluster_id, co->state.committed.map.epoch);
    return 0;
}

static void
tick_cb(uv_timer_t *t)
{
    brim_coord_tick(t->data);
}

static void
signal_cb(uv_signal_t *sig, int signum)
{
    struct brim_coord        *co = sig->data;
    struct brim_coord_member *mb;

    brim_log_info("signal %d: exiting", signum);
    if (co->stopping) {
        _exit(0);
    }
    co->stopping = 1;
    brim_coord_etcd_stop(co);
    for (mb = co->members; mb != NULL; mb = mb->next) {
        brim_peer_close(&mb->peer);
    }
    brim_server_close(&co->srv);
    brim_http_stop(co->http);
    uv_close((uv_handle_t *) &co->tick, NULL);
    uv_close((uv_handle_t *) &co->sig_term, NULL);
    uv_close((uv_handle_t *) &co->sig_int, NULL);
}

int
main(int argc, char **argv)
{
    static struct brim_coord  co;
    struct brim_server_config sc;
    char                      err[BRIM_ERRBUF_LEN];

    switch (parse_args(&co.cfg, argc, argv)) {
    case 0:
        break;
    case 1:
        return 0; /* --help */
    default:
        return 2; /* a usage error, said why */
    }
    /* A peer that closes while we write (an HTTP client that sent two
     * requests and left, a node that answered BUSY and closed) is an
     * EPIPE to handle, not a signal that ends the process without a
     * line in its log (a fresh tester's find; brim-node ignores it too). */
    signal(SIGPIPE, SIG_IGN);
    brim_log_init("coord", "coord", (enum brim_log_level) co.cfg.log_level);
    co.loop = uv_default_loop();
    /* The secret files are read once; their bytes are never logged. */
    brim_guard_init(&co.guard, co.loop, BRIM_ROLE_COORD);
    if (brim_guard_load(&co.guard, co.cfg.secret_file,
                        co.cfg.client_secret_file, err)
        != 0)
    {
        fprintf(stderr, "brim-coord: %s\n", err);
        return 2;
    }
    co.argv = argv;
    if (check_start(&co) != 0
        || (co.cfg.etcd[0] == '\0' && load_state(&co) != 0)) {
        return 1;
    }
    if (!msgpack_zone_init(&co.zone, MSGPACK_ZONE_CHUNK_SIZE)
        || brim_coord_zones_init() != 0)
    {
        fprintf(stderr, "brim-coord: out of memory\n");
        return 1;
    }
    memset(&sc, 0, sizeof(sc));
    /* A follower knows its cluster's P only once elected: it takes the
     * largest. */
    sc.max_frame_bytes = 2
            * (size_t) (co.leading ? co.state.settings.partitions
                                   : BRIM_PARTITIONS_MAX)
        + (64u << 10) + 200u * BRIM_NODES_MAX;
    sc.out_high_water = 8u << 20;
    sc.out_low_water = 1u << 20;
    sc.max_conns = co.cfg.max_conns;
    sc.idle_timeout_ms = co.cfg.idle_timeout_s * 1000u;
    sc.gone = brim_guard_conn_gone;
    sc.gone_arg = &co.guard;
    if (brim_server_listen(&co.srv, co.loop, co.cfg.listen, &sc,
                           brim_coord_dispatch, brim_coord_conn_closed, &co,
                           err)
        != 0)
    {
        fprintf(stderr, "brim-coord: %s\n", err);
        return 1;
    }
    /* Both listeners before anything is written (brim_coord_resume). */
    if (brim_coord_http_start(&co, err) != 0) {
        fprintf(stderr, "brim-coord: %s\n", err);
        return 1;
    }
    if (co.leading && brim_coord_resume(&co) != 0) {
        fprintf(stderr,
                "brim-coord: cannot start: the state could not be "
                "saved\n");
        return 1;
    }
    if (co.cfg.etcd[0] != '\0') {
        int erc = brim_coord_etcd_start(&co, err);

        if (erc != 0) {
            /* A --etcd that does not parse is bad usage (exit 2). */
            fprintf(stderr, "brim-coord: %s\n", err);
            return erc == BRIM_EINVAL ? 2 : 1;
        }
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
    if (co.http != NULL) {
        /* deploy/brim-cluster reads this line for the URL. */
        brim_log_info(
            "HTTP on http://%.*s:%d/api/cluster",
            (int) (strrchr(co.cfg.http_listen, ':') - co.cfg.http_listen),
            co.cfg.http_listen, brim_http_port(co.http));
    }
    uv_run(co.loop, UV_RUN_DEFAULT);
    brim_http_free(co.http);
    brim_server_destroy(&co.srv);
    brim_coord_etcd_free(&co);
    brim_coord_members_free(&co);
    brim_coord_state_destroy(&co.state);
    msgpack_zone_destroy(&co.zone);
    brim_guard_destroy(&co.guard);
    return 0;
}
