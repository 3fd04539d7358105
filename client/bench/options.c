/*
 * client/bench/options.c - brim-bench's command line: "--name VALUE" or
 * "--name=VALUE", each value checked against its range with a message that
 * names the flag and the value (the numbers and addresses themselves are
 * read by common/parse.h). Defaults suit the measurements of
 * docs/performance.md: 50 connections, 100,000 keys of 32 bytes, 100-byte
 * values, GET:SET 9:1, 10 seconds.
 */
#include "client/bench/bench.h"

#include <string.h>

#include "client/net/sock.h"
#include "common/defs.h"
#include "common/parse.h"

/* Largest --value-size accepted, bytes (brim's and memcached's default
 * item limit is 1 MiB; larger values are for servers configured so). */
#define OPTS_VALUE_LIMIT (64u << 20)

/* How a flag takes its value. */
enum opts_kind {
    OPTS_FLAG = 0, /* no value */
    OPTS_VALUE     /* one value */
};

/* One flag of the table below. */
struct opts_flag {
    const char *name; /* without the leading "--" */
    int         kind; /* enum opts_kind */
    int         id;   /* what opts_apply() switches on */
};

enum {
    O_TARGET,
    O_SERVER,
    O_COORD,
    O_CONNS,
    O_PIPELINE,
    O_THREADS,
    O_KEYS,
    O_KEY_SIZE,
    O_KEY_PREFIX,
    O_VALUE_SIZE,
    O_GET,
    O_DEL,
    O_TTL_RATIO,
    O_TTL,
    O_ZIPF,
    O_DURATION,
    O_OPS,
    O_RATE,
    O_JSON,
    O_VERIFY,
    O_NO_PRELOAD,
    O_SEED,
    O_PID,
    O_TIMEOUT,
    O_SLACK,
    O_SECRET,
    O_LATLOG,
    O_QUIET,
    O_HELP
};

static const struct opts_flag opts_flags[] = {
    {"target", OPTS_VALUE, O_TARGET},
    {"server", OPTS_VALUE, O_SERVER},
    {"coordinator", OPTS_VALUE, O_COORD},
    {"connections", OPTS_VALUE, O_CONNS},
    {"pipeline", OPTS_VALUE, O_PIPELINE},
    {"threads", OPTS_VALUE, O_THREADS},
    {"keys", OPTS_VALUE, O_KEYS},
    {"key-size", OPTS_VALUE, O_KEY_SIZE},
    {"key-prefix", OPTS_VALUE, O_KEY_PREFIX},
    {"value-size", OPTS_VALUE, O_VALUE_SIZE},
    {"get-ratio", OPTS_VALUE, O_GET},
    {"del-ratio", OPTS_VALUE, O_DEL},
    {"ttl-ratio", OPTS_VALUE, O_TTL_RATIO},
    {"ttl", OPTS_VALUE, O_TTL},
    {"zipf", OPTS_VALUE, O_ZIPF},
    {"duration", OPTS_VALUE, O_DURATION},
    {"ops", OPTS_VALUE, O_OPS},
    {"rate", OPTS_VALUE, O_RATE},
    {"json", OPTS_FLAG, O_JSON},
    {"verify", OPTS_FLAG, O_VERIFY},
    {"no-preload", OPTS_FLAG, O_NO_PRELOAD},
    {"seed", OPTS_VALUE, O_SEED},
    {"server-pid", OPTS_VALUE, O_PID},
    {"timeout", OPTS_VALUE, O_TIMEOUT},
    {"ttl-slack", OPTS_VALUE, O_SLACK},
    {"secret-file", OPTS_VALUE, O_SECRET},
    {"latency-log", OPTS_VALUE, O_LATLOG},
    {"quiet", OPTS_FLAG, O_QUIET},
    {"help", OPTS_FLAG, O_HELP},
};

void
brim_bench_usage(FILE *f)
{
    fputs("usage: brim-bench --target brim|memcached|redis|redis-cluster\n"
          "                  [--server HOST:PORT] [options]\n"
          "A load generator for brim-node, memcached and redis: one engine,\n"
          "mix and histogram for all of them. It loads every key, then runs\n"
          "the mix and prints throughput and latency percentiles.\n"
          "\n"
          "  --target T         brim (frames), memcached (text), redis\n"
          "                     (RESP) or redis-cluster (RESP, routed by\n"
          "                     CLUSTER SLOTS); default brim\n"
          "  --server HOST:PORT default 127.0.0.1 and the target's usual\n"
          "                     port: 11311, 11211 or 6379; redis-cluster:\n"
          "                     any node, the seed of the slot map (each\n"
          "                     key to its slot's master, MOVED and ASK\n"
          "                     followed, C spread over the masters)\n"
          "  --coordinator SEED[,SEED...]\n"
          "                     brim cluster: fetch the map from any of\n"
          "                     these nodes or coordinators (HOST:PORT),\n"
          "                     later from the map's nodes, and route each\n"
          "                     key to its owner (C spread over the nodes,\n"
          "                     >= 1 each)\n"
          "  --secret-file FILE brim: the secret to prove on every connection\n"
          "                     (AUTH after HELLO as a client, PROTOCOL.md\n"
          "                     12): the cluster's client secret where it\n"
          "                     has one, else its cluster secret (as\n"
          "                     libbrim's secret_file)\n"
          "  --connections C    connections in all (default 50); to a\n"
          "                     cluster, C/N rounded up to each of the first\n"
          "                     map's N nodes (8 on 3 nodes: 3 each, 9 in\n"
          "                     all), as many to a node that joins\n"
          "  --pipeline D       requests in flight per connection (1)\n"
          "  --threads T        event loops, C/T connections each (1)\n"
          "  --keys K           key space (default 100000)\n"
          "  --key-size B       key bytes (default 32)\n"
          "  --key-prefix STR   every key starts with STR (counted in\n"
          "                     --key-size; default none)\n"
          "  --value-size B|MIN-MAX\n"
          "                     value bytes, fixed or uniform (default 100)\n"
          "  --get-ratio F      GETs among GETs and SETs (default 0.9)\n"
          "  --del-ratio F      DELs among all ops (default 0; 0.05 with\n"
          "                     --verify)\n"
          "  --ttl-ratio F      SETs with a short TTL (default 0; 0.1 with\n"
          "                     --verify)\n"
          "  --ttl S|MIN-MAX    those TTLs, seconds (default 1-2)\n"
          "  --zipf S           Zipf exponent of key popularity; 0 is\n"
          "                     uniform (default 0)\n"
          "  --duration SECONDS measure this long (default 10 unless --ops)\n"
          "  --ops N            measure N operations\n"
          "  --rate OPS         open loop: OPS requests/s in all, latency\n"
          "                     from each one's intended send time\n"
          "  --no-preload       do not load the key space first\n"
          "  --verify           check every read against the writes and\n"
          "                     print lost=N stale=N errors=N (docs/bench.md)\n"
          "  --server-pid PID   report the server's CPU seconds per op\n"
          "                     from /proc/PID/stat\n"
          "  --timeout MS       a request unanswered this long fails (5000)\n"
          "  --ttl-slack MS     --verify: a TTL this near its end is\n"
          "                     uncertain (default 1000)\n"
          "  --seed N           random seed (default 1)\n"
          "  --latency-log FILE write every measured reply's intended send\n"
          "                     time (CLOCK_REALTIME ns) and latency (ns)\n"
          "                     to FILE, for percentiles over any window\n"
          "                     (docs/bench.md)\n"
          "  --json             end with one line of JSON\n"
          "  --quiet            no progress lines\n"
          "  --help             this text\n"
          "Exit status: 0 ok; 1 errors, stale or lost reads, evictions under\n"
          "--verify, or a failed run; 2 bad usage.\n",
          f);
}

/* VALUE as a whole unsigned number in [MIN, MAX]. */
static int
opts_u64(const char *flag, const char *value, uint64_t min, uint64_t max,
         uint64_t *out, char *errbuf)
{
    if (brim_parse_u64(value, min, max, out) != 0) {
        brim_errfmt(errbuf, "--%s: bad value \"%s\" (want %llu .. %llu)", flag,
                    value, (unsigned long long) min, (unsigned long long) max);
        return BRIM_EINVAL;
    }
    return 0;
}

static int
opts_u32(const char *flag, const char *value, uint32_t min, uint32_t max,
         uint32_t *out, char *errbuf)
{
    uint64_t v;
    int      rc;

    rc = opts_u64(flag, value, min, max, &v, errbuf);
    if (rc == 0) {
        *out = (uint32_t) v;
    }
    return rc;
}

/* VALUE as a finite number in [MIN, MAX]. */
static int
opts_f64(const char *flag, const char *value, double min, double max,
         double *out, char *errbuf)
{
    if (brim_parse_double(value, min, max, out) != 0) {
        brim_errfmt(errbuf, "--%s: bad value \"%s\" (want %g .. %g)", flag,
                    value, min, max);
        return BRIM_EINVAL;
    }
    return 0;
}

/* VALUE as N or MIN-MAX, each in [MIN, MAX]. */
static int
opts_range(const char *flag, const char *value, uint32_t min, uint32_t max,
           uint32_t *lo, uint32_t *hi, char *errbuf)
{
    char        first[32];
    const char *dash;
    uint64_t    a, b;
    uint32_t    x, y;
    size_t      n;

    if (brim_parse_u64_range(value, min, max, &a, &b) == 0) {
        *lo = (uint32_t) a;
        *hi = (uint32_t) b;
        return 0;
    }
    /* Refused: say which part is wrong. */
    dash = strchr(value, '-');
    n = dash != NULL ? (size_t) (dash - value) : 0;
    if (dash == NULL) {
        return opts_u32(flag, value, min, max, &x, errbuf);
    }
    if (n > 0 && n < sizeof(first)) {
        memcpy(first, value, n);
        first[n] = '\0';
        if (opts_u32(flag, first, min, max, &x, errbuf) != 0
            || opts_u32(flag, dash + 1, min, max, &y, errbuf) != 0)
        {
            return BRIM_EINVAL;
        }
        if (x > y) {
            brim_errfmt(errbuf, "--%s: range \"%s\" runs backwards", flag,
                        value);
            return BRIM_EINVAL;
        }
    }
    brim_errfmt(errbuf, "--%s: bad range \"%s\" (want N or MIN-MAX)", flag,
                value);
    return BRIM_EINVAL;
}

/*
 * VALUE, the HOST:PORT of option --FLAG, into ADDR (as given), HOST and
 * PORT (each BRIM_BENCH_ADDR_MAX + 1 and 8 bytes; "[::1]:6379" gives host
 * "::1"). A bad port is a bad value, anything else a bad address.
 */
static int
opts_addr(const char *flag, const char *value, char *addr, char *host,
          char *port, char *errbuf)
{
    const char *colon;
    uint32_t    p;
    char        digits[6];

    colon = strrchr(value, ':');
    if (colon == NULL || colon == value || strlen(value) > BRIM_BENCH_ADDR_MAX)
    {
        brim_errfmt(errbuf, "--%s: bad address \"%s\" (want HOST:PORT)", flag,
                    value);
        return BRIM_EINVAL;
    }
    if (opts_u32(flag, colon + 1, 1, 65535, &p, errbuf) != 0) {
        return BRIM_EINVAL;
    }
    if (brim_sock_split(value, "", host, BRIM_BENCH_ADDR_MAX + 1, digits, NULL)
        != 0)
    {
        brim_errfmt(errbuf, "--%s: bad address \"%s\" (want HOST:PORT)", flag,
                    value);
        return BRIM_EINVAL;
    }
    snprintf(addr, BRIM_BENCH_ADDR_MAX + 1, "%s", value);
    snprintf(port, 8, "%s", digits);
    return 0;
}

/* --coordinator SEED[,SEED...]: nodes or coordinators, each HOST:PORT;
 * the list in O->coord, the first's host and port in O->coord_host and
 * O->coord_port. */
static int
opts_seeds(const char *value, struct brim_bench_opts *o, char *errbuf)
{
    char        one[BRIM_BENCH_ADDR_MAX + 1], host[BRIM_BENCH_ADDR_MAX + 1];
    char        scratch[BRIM_BENCH_ADDR_MAX + 1], port[8];
    const char *p, *end;
    size_t      len;
    int         first = 1;

    if (strlen(value) > BRIM_BENCH_ADDR_MAX) {
        brim_errfmt(errbuf, "--coordinator: the list is %zu bytes, max %d",
                    strlen(value), BRIM_BENCH_ADDR_MAX);
        return BRIM_EINVAL;
    }
    for (p = value;; p = end + 1) {
        end = strchr(p, ',');
        len = end != NULL ? (size_t) (end - p) : strlen(p);
        snprintf(one, sizeof(one), "%.*s", (int) len, p);
        if (opts_addr("coordinator", one, scratch, host, port, errbuf) != 0) {
            return BRIM_EINVAL;
        }
        if (first) {
            memcpy(o->coord_host, host, sizeof(o->coord_host));
            memcpy(o->coord_port, port, sizeof(o->coord_port));
            first = 0;
        }
        if (end == NULL) {
            break;
        }
    }
    snprintf(o->coord, sizeof(o->coord), "%s", value);
    return 0;
}

/* Apply flag ID with VALUE (NULL for a plain flag) to O. */
static int
opts_apply(struct brim_bench_opts *o, int id, const char *value, int *set,
           char *errbuf)
{
    uint64_t v;

    switch (id) {
    case O_TARGET:
        o->proto = brim_bench_proto_find(value);
        if (o->proto == NULL) {
            brim_errfmt(errbuf,
                        "--target: unknown target \"%s\" (want "
                        "brim, memcached, redis or redis-cluster)",
                        value);
            return BRIM_EINVAL;
        }
        return 0;
    case O_SERVER:
        set[O_SERVER] = 1;
        return opts_addr("server", value, o->server, o->host, o->port, errbuf);
    case O_COORD:
        set[O_COORD] = 1;
        return opts_seeds(value, o, errbuf);
    case O_SECRET:
        o->secret_file = value; /* read by main(): brim_auth_file_read */
        return 0;
    case O_LATLOG:
        o->latency_log = value; /* opened by main() */
        return 0;
    case O_CONNS:
        return opts_u32("connections", value, 1, 65536, &o->connections,
                        errbuf);
    case O_PIPELINE:
        return opts_u32("pipeline", value, 1, 4096, &o->pipeline, errbuf);
    case O_THREADS:
        return opts_u32("threads", value, 1, 256, &o->threads, errbuf);
    case O_KEYS:
        return opts_u64("keys", value, 1, BRIM_BENCH_KEYS_MAX, &o->keys,
                        errbuf);
    case O_KEY_SIZE:
        return opts_u32("key-size", value, 1, BRIM_BENCH_KEY_MAX, &o->key_size,
                        errbuf);
    case O_KEY_PREFIX:
        return brim_bench_key_prefix_set(value, errbuf);
    case O_VALUE_SIZE:
        return opts_range("value-size", value, 0, OPTS_VALUE_LIMIT,
                          &o->value_min, &o->value_max, errbuf);
    case O_GET:
        return opts_f64("get-ratio", value, 0, 1, &o->get_ratio, errbuf);
    case O_DEL:
        set[O_DEL] = 1;
        return opts_f64("del-ratio", value, 0, 1, &o->del_ratio, errbuf);
    case O_TTL_RATIO:
        set[O_TTL_RATIO] = 1;
        return opts_f64("ttl-ratio", value, 0, 1, &o->ttl_ratio, errbuf);
    case O_TTL:
        return opts_range("ttl", value, 1, 2592000, &o->ttl_min_s,
                          &o->ttl_max_s, errbuf);
    case O_ZIPF:
        return opts_f64("zipf", value, 0, 10, &o->zipf, errbuf);
    case O_DURATION:
        set[O_DURATION] = 1;
        return opts_f64("duration", value, 0.001, 86400 * 7, &o->duration_s,
                        errbuf);
    case O_OPS:
        return opts_u64("ops", value, 1, UINT64_MAX / 2, &o->ops, errbuf);
    case O_RATE:
        return opts_f64("rate", value, 1, 1e9, &o->rate, errbuf);
    case O_SEED:
        return opts_u64("seed", value, 0, UINT64_MAX, &o->seed, errbuf);
    case O_PID:
        if (opts_u64("server-pid", value, 1, INT32_MAX, &v, errbuf) != 0) {
            return BRIM_EINVAL;
        }
        o->server_pid = (int64_t) v;
        return 0;
    case O_TIMEOUT:
        return opts_u32("timeout", value, 1, 3600000, &o->timeout_ms, errbuf);
    case O_SLACK:
        return opts_u32("ttl-slack", value, 0, 3600000, &o->slack_ms, errbuf);
    case O_JSON:
        o->json = 1;
        return 0;
    case O_VERIFY:
        o->verify = 1;
        return 0;
    case O_NO_PRELOAD:
        o->preload = 0;
        return 0;
    case O_QUIET:
        o->quiet = 1;
        return 0;
    default:
        return 0;
    }
}

/* Defaults that depend on other flags, then checks across flags. */
static int
opts_finish(struct brim_bench_opts *o, const int *set, char *errbuf)
{
    uint32_t need;

    if (set[O_COORD] && set[O_SERVER]) {
        brim_errfmt(errbuf, "--coordinator and --server: give one of them");
        return BRIM_EINVAL;
    }
    if (set[O_COORD] && o->proto->slots) {
        brim_errfmt(errbuf,
                    "--coordinator is brim's; --target redis-cluster "
                    "takes --server, any node of the cluster");
        return BRIM_EINVAL;
    }
    if (set[O_COORD] && strcmp(o->proto->name, "brim") != 0) {
        brim_errfmt(errbuf,
                    "--coordinator needs --target brim (%s has no "
                    "cluster)",
                    o->proto->name);
        return BRIM_EINVAL;
    }
    if (o->secret_file != NULL && !o->proto->has_hello) {
        brim_errfmt(errbuf,
                    "--secret-file needs --target brim (%s has no "
                    "AUTH)",
                    o->proto->name);
        return BRIM_EINVAL;
    }
    if (!set[O_SERVER]) {
        snprintf(o->host, sizeof(o->host), "127.0.0.1");
        snprintf(o->port, sizeof(o->port), "%d", o->proto->default_port);
        snprintf(o->server, sizeof(o->server), "127.0.0.1:%d",
                 o->proto->default_port);
    }
    if (o->verify) {
        if (!set[O_DEL]) {
            o->del_ratio = 0.05;
        }
        if (!set[O_TTL_RATIO]) {
            o->ttl_ratio = 0.1;
        }
    }
    if (!set[O_DURATION] && o->ops == 0) {
        o->duration_s = 10;
    }
    if (o->connections < o->threads) {
        brim_errfmt(errbuf, "--connections %u: fewer than --threads %u",
                    o->connections, o->threads);
        return BRIM_EINVAL;
    }
    if (o->keys < o->threads) {
        brim_errfmt(errbuf, "--keys %llu: fewer than --threads %u",
                    (unsigned long long) o->keys, o->threads);
        return BRIM_EINVAL;
    }
    need = brim_bench_key_min_size(o->keys);
    if (o->key_size < need + brim_bench_key_prefix_len()) {
        brim_errfmt(errbuf,
                    "--key-size %u: %llu keys need keys of at least %zu "
                    "bytes (%u for the number, %zu for --key-prefix)",
                    o->key_size, (unsigned long long) o->keys,
                    (size_t) need + brim_bench_key_prefix_len(), need,
                    brim_bench_key_prefix_len());
        return BRIM_EINVAL;
    }
    return 0;
}

int
brim_bench_opts_parse(struct brim_bench_opts *o, int argc, char **argv,
                      char errbuf[BRIM_ERRBUF_LEN])
{
    const struct opts_flag *f;
    const char             *arg, *eq, *value;
    size_t                  i, nlen;
    int                     k, set[O_HELP + 1];

    memset(o, 0, sizeof(*o));
    memset(set, 0, sizeof(set));
    (void) brim_bench_key_prefix_set("", NULL);
    o->proto = &brim_bench_proto_brim;
    o->connections = 50;
    o->pipeline = 1;
    o->threads = 1;
    o->keys = 100000;
    o->key_size = 32;
    o->value_min = o->value_max = 100;
    o->get_ratio = 0.9;
    o->ttl_min_s = 1;
    o->ttl_max_s = 2;
    o->seed = 1;
    o->timeout_ms = 5000;
    o->slack_ms = 1000;
    o->preload = 1;

    for (k = 1; k < argc; k++) {
        arg = argv[k];
        if (strcmp(arg, "-h") == 0) { /* as every other binary */
            brim_bench_usage(stdout);
            return 1;
        }
        if (strncmp(arg, "--", 2) != 0) {
            /* Every option is long: "-x" is an unknown option, "x" an
             * argument brim-bench does not take. */
            brim_errfmt(errbuf,
                        arg[0] == '-' && arg[1] != '\0'
                            ? "unknown option \"%s\" (options are long: --NAME)"
                            : "unexpected argument \"%s\"",
                        arg);
            return BRIM_EINVAL;
        }
        arg += 2;
        eq = strchr(arg, '=');
        nlen = eq != NULL ? (size_t) (eq - arg) : strlen(arg);
        f = NULL;
        for (i = 0; i < BRIM_ARRAY_LEN(opts_flags); i++) {
            if (strlen(opts_flags[i].name) == nlen
                && strncmp(opts_flags[i].name, arg, nlen) == 0)
            {
                f = &opts_flags[i];
                break;
            }
        }
        if (f == NULL) {
            brim_errfmt(errbuf, "unknown option \"%s\"", argv[k]);
            return BRIM_EINVAL;
        }
        if (f->id == O_HELP) {
            brim_bench_usage(stdout);
            return 1;
        }
        value = NULL;
        if (f->kind == OPTS_VALUE) {
            if (eq != NULL) {
                value = eq + 1;
            } else if (k + 1 < argc) {
                value = argv[++k];
            } else {
                brim_errfmt(errbuf, "--%s needs a value", f->name);
                return BRIM_EINVAL;
            }
        } else if (eq != NULL) {
            brim_errfmt(errbuf, "--%s takes no value", f->name);
            return BRIM_EINVAL;
        }
        if (opts_apply(o, f->id, value, set, errbuf) != 0) {
            return BRIM_EINVAL;
        }
    }
    return opts_finish(o, set, errbuf);
}
