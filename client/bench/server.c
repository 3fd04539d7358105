/*
 * client/bench/server.c - the server's CPU time from /proc/PID/stat
 * (proc(5): utime and stime, fields 14 and 15, in clock ticks), and its
 * evictions counter and limits over a short blocking connection: a struct
 * brim_link (client/net/link.h: HELLO and AUTH for brim) carrying the
 * protocol adapter's request; for redis-cluster the same connection
 * asks CLUSTER SLOTS (rcluster.c reads the reply).
 */
#include "client/bench/server.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client/bench/rcluster.h"
#include "client/net/link.h"
#include "client/net/sock.h"
#include "common/defs.h"
#include "proto/ops.h"

int
brim_bench_server_cpu(int64_t pid, double *cpu_s, char errbuf[BRIM_ERRBUF_LEN])
{
    char               path[64], text[1024];
    const char        *p;
    unsigned long long utime, stime;
    long               tick;
    size_t             n;
    FILE              *f;
    int                field;

    snprintf(path, sizeof(path), "/proc/%lld/stat", (long long) pid);
    f = fopen(path, "r");
    if (f == NULL) {
        brim_errfmt(errbuf, "%s: %s", path, strerror(errno));
        return BRIM_ESYS;
    }
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    /* The command name, field 2, is in parentheses and may hold spaces:
     * count fields from the last ')'. */
    p = strrchr(text, ')');
    for (field = 3; p != NULL && field <= 14; field++) {
        p = strchr(p + 1, ' '); /* the space before field FIELD */
    }
    tick = sysconf(_SC_CLK_TCK);
    if (p == NULL || tick <= 0 || sscanf(p, " %llu %llu", &utime, &stime) != 2)
    {
        brim_errfmt(errbuf, "%s: cannot read utime and stime", path);
        return BRIM_ESYS;
    }
    *cpu_s = (double) (utime + stime) / (double) tick;
    return 0;
}

/*
 * Open L to NODE by DEADLINE_MS: connected and, for a protocol with HELLO,
 * past its handshake (HELLO as a client, AUTH with SECRET). Returns 0, or
 * an error with ERRBUF starting with WHAT and naming NODE.
 */
static int
server_open(struct brim_link *l, const struct brim_bench_node *node,
            const struct brim_bench_proto *proto,
            const struct brim_auth_secret *secret, int64_t deadline_ms,
            const char *what, char *errbuf)
{
    struct brim_link_conf conf;
    int                   fd, err, rc;

    memset(&conf, 0, sizeof(conf));
    conf.hello = proto->has_hello;
    conf.role = BRIM_ROLE_CLIENT;
    conf.name = "brim-bench";
    conf.secret = secret;
    if (brim_link_init(l, node->name, &conf) != 0) {
        brim_errfmt(errbuf, "%s: out of memory", what);
        return BRIM_ENOMEM;
    }
    err = brim_sock_open((const struct sockaddr *) &node->addr, node->addr_len,
                         deadline_ms, &fd);
    if (err != 0) {
        brim_errfmt(errbuf, "%s: connect to %s: %s", what, node->name,
                    strerror(err));
        return brim_sock_err(err);
    }
    rc = brim_link_attach(l, fd);
    if (rc == 0 && proto->has_hello) {
        rc = brim_link_handshake(l, deadline_ms);
    }
    if (rc == BRIM_ETIMEDOUT || rc == BRIM_ENOMEM) {
        brim_errfmt(errbuf, "%s from %s: %s", what, node->name,
                    brim_strerror(rc));
    } else if (rc != 0) {
        /* The link says what went wrong: "ADDR: HELLO: message"... */
        brim_errfmt(errbuf, "%s from %s (%s)", what, l->err, brim_err_name(rc));
    }
    return rc;
}

/*
 * Send ASK on the open L in PROTO (CTX its state) and read its reply into
 * *REP by DEADLINE_MS; REP borrows from L's input. Returns 0, or
 * BRIM_ETIMEDOUT, BRIM_ECLOSED, BRIM_EBADREPLY, BRIM_ENOMEM, BRIM_ESYS.
 */
static int
server_ask(struct brim_link *l, const struct brim_bench_proto *proto, void *ctx,
           struct brim_bench_req *ask, struct brim_bench_rep *rep,
           int64_t deadline_ms)
{
    const char *in;
    size_t      len;
    long        used;
    int         rc;

    ask->id = brim_link_id(l);
    if (proto->encode(brim_link_outbuf(l), ctx, ask, NULL, 0, NULL, 0) != 0) {
        return BRIM_ENOMEM;
    }
    for (;;) {
        in = brim_link_input(l, &len);
        used = len == 0 ? 0 : proto->parse(ctx, in, len, ask, rep);
        if (used > 0) {
            return 0;
        }
        if (used < 0) {
            return BRIM_EBADREPLY;
        }
        rc = brim_link_wait(l, deadline_ms); /* sends ASK, reads more */
        if (rc != 0) {
            return rc;
        }
    }
}

/*
 * One blocking exchange with NODE in PROTO, TIMEOUT_MS at most: HELLO and
 * AUTH first when PROTO has them (the node's limits then into *LIMITS, if
 * not NULL), then ASK unless it is NULL (its reply into *ASK_REP, whose
 * pointers are cleared on return: they borrowed from a buffer freed here).
 * Returns 0; an error reply's status (a refused HELLO, AUTH or ASK) or
 * BRIM_ECONNREFUSED, BRIM_ETIMEDOUT, BRIM_EBADREPLY, BRIM_ECLOSED,
 * BRIM_ENOMEM or BRIM_ESYS; ERRBUF then holds a line that starts with WHAT
 * and names NODE.
 */
static int
server_exchange(const struct brim_bench_node  *node,
                const struct brim_bench_proto *proto,
                const struct brim_auth_secret *secret, uint32_t timeout_ms,
                const char *what, struct brim_bench_req *ask,
                struct brim_bench_rep *ask_rep, struct brim_wire_limits *limits,
                char *errbuf)
{
    struct brim_link l;
    int64_t          deadline;
    void            *ctx;
    int              rc;

    deadline = brim_sock_now_ms() + timeout_ms;
    memset(ask_rep, 0, sizeof(*ask_rep));
    ctx = NULL;
    rc = server_open(&l, node, proto, secret, deadline, what, errbuf);
    if (rc == 0 && limits != NULL) {
        *limits = l.limits;
    }
    if (rc == 0 && ask != NULL) {
        rc = proto->open(&ctx);
        if (rc == 0 && proto->set_limits != NULL) {
            proto->set_limits(ctx, &l.limits);
        }
        if (rc == 0) {
            rc = server_ask(&l, proto, ctx, ask, ask_rep, deadline);
        }
        if (rc != 0) {
            brim_errfmt(errbuf, "%s from %s: %s", what, node->name,
                        brim_strerror(rc));
        } else if (ask_rep->status != 0 && ask_rep->status != BRIM_ENOTFOUND) {
            rc = ask_rep->status;
            brim_errfmt(errbuf, "%s from %s: the request refused: %s: %.*s",
                        what, node->name, brim_err_name(rc),
                        (int) BRIM_MIN(ask_rep->message_len, (size_t) 120),
                        ask_rep->message != NULL ? ask_rep->message : "");
        }
    }
    ask_rep->value = ask_rep->message = NULL;
    if (ctx != NULL) {
        proto->close(ctx);
    }
    brim_link_destroy(&l);
    return rc;
}

int
brim_bench_server_evictions(const struct brim_bench_node  *node,
                            const struct brim_bench_proto *proto,
                            const struct brim_auth_secret *secret,
                            uint32_t timeout_ms, uint64_t *evictions,
                            char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_bench_req stats;
    struct brim_bench_rep rep;
    int                   rc;

    memset(&stats, 0, sizeof(stats));
    stats.kind = BRIM_BENCH_STATS;
    rc = server_exchange(node, proto, secret, timeout_ms, "stats", &stats, &rep,
                         NULL, errbuf);
    if (rc != 0) {
        return rc;
    }
    if (rep.status != 0 || rep.evictions < 0) {
        brim_errfmt(errbuf, "stats from %s: no evictions counter", node->name);
        return BRIM_ENOTFOUND;
    }
    *evictions = (uint64_t) rep.evictions;
    return 0;
}

int
brim_bench_server_limits(const struct brim_bench_node  *node,
                         const struct brim_bench_proto *proto,
                         const struct brim_auth_secret *secret,
                         uint32_t timeout_ms, uint32_t *max_key_bytes,
                         uint32_t *max_value_bytes,
                         char      errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_wire_limits lim;
    struct brim_bench_rep   unused;
    int                     rc;

    if (!proto->has_hello) {
        return BRIM_ENOTFOUND;
    }
    rc = server_exchange(node, proto, secret, timeout_ms, "hello", NULL,
                         &unused, &lim, errbuf);
    if (rc != 0) {
        return rc;
    }
    if (lim.max_key_bytes == 0 || lim.max_value_bytes == 0) {
        brim_errfmt(errbuf, "hello from %s: no limits in the reply",
                    node->name);
        return BRIM_EBADREPLY;
    }
    *max_key_bytes = lim.max_key_bytes;
    *max_value_bytes = lim.max_value_bytes;
    return 0;
}

int
brim_bench_server_slots(const struct brim_bench_node *node,
                        const char *default_host, uint32_t timeout_ms,
                        struct brim_bench_rcluster_map *map,
                        char                            errbuf[BRIM_ERRBUF_LEN])
{
    const struct brim_bench_proto *proto = &brim_bench_proto_redis_cluster;
    struct brim_bench_req          req;
    struct brim_bench_rep          rep;
    struct brim_link               l;
    char                           why[BRIM_ERRBUF_LEN];
    int64_t                        deadline;
    int                            rc;

    deadline = brim_sock_now_ms() + timeout_ms;
    memset(&req, 0, sizeof(req));
    req.kind = BRIM_BENCH_SLOTS;
    rc = server_open(&l, node, proto, NULL, deadline, "cluster slots", errbuf);
    if (rc == 0) {
        rc = server_ask(&l, proto, NULL, &req, &rep, deadline);
        if (rc != 0) {
            brim_errfmt(errbuf, "CLUSTER SLOTS from %s: %s", node->name,
                        brim_strerror(rc));
        } else if (rep.status != 0) {
            rc = BRIM_EBADREQ;
            brim_errfmt(errbuf,
                        "%s is not in cluster mode: CLUSTER SLOTS: %.*s "
                        "(--target redis for a single redis-server)",
                        node->name,
                        (int) BRIM_MIN(rep.message_len, (size_t) 120),
                        rep.message != NULL ? rep.message : "");
        } else {
            why[0] = '\0';
            rc = brim_bench_rcluster_map_parse(rep.value, rep.value_len,
                                               default_host, map, why);
            if (rc == BRIM_ENOTFOUND) {
                brim_errfmt(errbuf,
                            "%s: the cluster has no slot assigned yet "
                            "(CLUSTER SLOTS is empty)",
                            node->name);
            } else if (rc != 0) {
                brim_errfmt(errbuf, "%s: %s", node->name, why);
            }
        }
    }
    brim_link_destroy(&l);
    return rc;
}
