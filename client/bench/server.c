/*
 * client/bench/server.c - the server's CPU time from /proc/PID/stat
 * (proc(5): utime and stime, fields 14 and 15, in clock ticks) and its
 * evictions counter over a short blocking connection that reuses the
 * protocol adapters.
 */
#include "client/bench/server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>

#include "common/defs.h"
#include "proto/buf.h"

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

int
brim_bench_read_more(int fd, struct brim_buf *in, uint64_t deadline_ns)
{
    ssize_t n;

    if (brim_buf_reserve(in, 64u << 10) != 0) {
        return BRIM_ENOMEM;
    }
    n = read(fd, brim_buf_tail(in), in->cap - in->len);
    if (n > 0) {
        brim_buf_commit(in, (size_t) n);
        return 0;
    }
    if (n == 0) {
        return BRIM_ECLOSED;
    }
    if (errno != EAGAIN && errno != EINTR) {
        return BRIM_ESYS;
    }
    return brim_bench_wait_fd(fd, POLLIN, deadline_ns) != 0 ? BRIM_ETIMEDOUT
                                                           : 0;
}

int
brim_bench_wait_fd(int fd, short events, uint64_t deadline_ns)
{
    struct pollfd pfd;
    uint64_t      now;
    int           rc;

    for (;;) {
        now = brim_bench_now_ns();
        if (now >= deadline_ns) {
            return BRIM_ETIMEDOUT;
        }
        pfd.fd = fd;
        pfd.events = events;
        pfd.revents = 0;
        rc = poll(&pfd, 1, (int) ((deadline_ns - now) / 1000000u) + 1);
        if (rc > 0) {
            return 0;
        }
        if (rc < 0 && errno != EINTR) {
            return BRIM_ESYS;
        }
    }
}

/* Connect to NODE without blocking past DEADLINE_NS; the socket or < 0
 * with ERRBUF starting with WHAT. */
static int
server_connect(const struct brim_bench_node *node, uint64_t deadline_ns,
               const char *what, char *errbuf)
{
    socklen_t len;
    int       fd, err, rc;

    fd = socket(node->addr.ss_family, SOCK_STREAM, 0);
    if (fd < 0) {
        brim_errfmt(errbuf, "socket: %s", strerror(errno));
        return BRIM_ESYS;
    }
    (void) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    err = 0;
    if (connect(fd, (const struct sockaddr *) &node->addr, node->addr_len) != 0)
    {
        err = errno;
        if (err == EINPROGRESS) {
            rc = brim_bench_wait_fd(fd, POLLOUT, deadline_ns);
            len = sizeof(err);
            if (rc != 0) {
                err = ETIMEDOUT;
            } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
                err = errno;
            }
        }
    }
    if (err != 0) {
        close(fd);
        brim_errfmt(errbuf, "%s: connect to %s: %s", what, node->name,
                    strerror(err));
        return err == ECONNREFUSED ? BRIM_ECONNREFUSED
            : err == ETIMEDOUT     ? BRIM_ETIMEDOUT
                                   : BRIM_ESYS;
    }
    return fd;
}

/* Send all of OUT on FD by DEADLINE_NS. */
static int
server_send(int fd, const struct brim_buf *out, uint64_t deadline_ns)
{
    size_t  off;
    ssize_t n;

    off = 0;
    while (off < out->len) {
        n = send(fd, out->data + off, out->len - off, MSG_NOSIGNAL);
        if (n > 0) {
            off += (size_t) n;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            return BRIM_ESYS;
        } else if (brim_bench_wait_fd(fd, POLLOUT, deadline_ns) != 0) {
            return BRIM_ETIMEDOUT;
        }
    }
    return 0;
}

/* Read on FD into IN until PROTO parses the reply to REQ. */
static int
server_reply(int fd, const struct brim_bench_proto *proto, void *ctx,
             struct brim_buf *in, const struct brim_bench_req *req,
             struct brim_bench_rep *rep, uint64_t deadline_ns)
{
    long used;
    int  rc;

    for (;;) {
        used =
            in->len == 0 ? 0 : proto->parse(ctx, in->data, in->len, req, rep);
        if (used > 0) {
            brim_buf_consume(in, (size_t) used);
            return 0;
        }
        if (used < 0) {
            return BRIM_EBADREPLY;
        }
        rc = brim_bench_read_more(fd, in, deadline_ns);
        if (rc != 0) {
            return rc;
        }
    }
}

/*
 * One blocking exchange with NODE in PROTO, TIMEOUT_MS at most: HELLO
 * first when PROTO has one (its reply into *HELLO_REP), then ASK unless it
 * is NULL (its reply into *ASK_REP). The replies' pointers are cleared on
 * return: they borrowed from a buffer freed here. Returns 0; an error
 * reply's status (a refused HELLO or ASK) or BRIM_ECONNREFUSED,
 * BRIM_ETIMEDOUT, BRIM_EBADREPLY, BRIM_ECLOSED, BRIM_ENOMEM or BRIM_ESYS;
 * ERRBUF then holds a line that starts with WHAT and names NODE.
 */
static int
server_exchange(const struct brim_bench_node  *node,
                const struct brim_bench_proto *proto, uint32_t timeout_ms,
                const char *what, const struct brim_bench_req *ask,
                struct brim_bench_rep *hello_rep,
                struct brim_bench_rep *ask_rep, char *errbuf)
{
    struct brim_bench_req  hello;
    struct brim_bench_rep *rep;
    struct brim_buf        in, out;
    uint64_t               deadline;
    void                  *ctx;
    int                    fd, rc;

    deadline = brim_bench_now_ns() + (uint64_t) timeout_ms * 1000000u;
    fd = server_connect(node, deadline, what, errbuf);
    if (fd < 0) {
        return fd;
    }
    ctx = NULL;
    brim_buf_init(&in);
    brim_buf_init(&out);
    memset(&hello, 0, sizeof(hello));
    memset(hello_rep, 0, sizeof(*hello_rep));
    memset(ask_rep, 0, sizeof(*ask_rep));
    hello.kind = BRIM_BENCH_HELLO;
    hello.id = 1;
    rc = proto->open(&ctx);
    if (rc == 0 && proto->has_hello) {
        rc = proto->encode(&out, ctx, &hello, NULL, 0, NULL, 0);
    }
    if (rc == 0 && ask != NULL) {
        rc = proto->encode(&out, ctx, ask, NULL, 0, NULL, 0);
    }
    if (rc == 0) {
        rc = server_send(fd, &out, deadline);
    }
    rep = hello_rep;
    if (rc == 0 && proto->has_hello) {
        rc = server_reply(fd, proto, ctx, &in, &hello, rep, deadline);
    }
    if (rc == 0 && rep->status == 0 && ask != NULL) {
        rep = ask_rep;
        rc = server_reply(fd, proto, ctx, &in, ask, rep, deadline);
    }
    if (rc != 0) {
        brim_errfmt(errbuf, "%s from %s: %s", what, node->name,
                    brim_strerror(rc));
    } else if (rep->status != 0 && rep->status != BRIM_ENOTFOUND) {
        rc = rep->status;
        brim_errfmt(errbuf, "%s from %s: %s refused: %s: %.*s", what,
                    node->name, rep == hello_rep ? "HELLO" : "the request",
                    brim_err_name(rc),
                    (int) BRIM_MIN(rep->message_len, (size_t) 120),
                    rep->message != NULL ? rep->message : "");
    }
    hello_rep->value = hello_rep->message = NULL;
    ask_rep->value = ask_rep->message = NULL;
    if (ctx != NULL) {
        proto->close(ctx);
    }
    brim_buf_destroy(&in);
    brim_buf_destroy(&out);
    close(fd);
    return rc;
}

int
brim_bench_server_evictions(const struct brim_bench_node  *node,
                            const struct brim_bench_proto *proto,
                            uint32_t timeout_ms, uint64_t *evictions,
                            char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_bench_req stats;
    struct brim_bench_rep hello_rep, rep;
    int                   rc;

    memset(&stats, 0, sizeof(stats));
    stats.kind = BRIM_BENCH_STATS;
    stats.id = 2;
    rc = server_exchange(node, proto, timeout_ms, "stats", &stats, &hello_rep,
                         &rep, errbuf);
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
                         uint32_t timeout_ms, uint32_t *max_key_bytes,
                         uint32_t *max_value_bytes,
                         char      errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_bench_rep rep, unused;
    int                   rc;

    if (!proto->has_hello) {
        return BRIM_ENOTFOUND;
    }
    rc = server_exchange(node, proto, timeout_ms, "hello", NULL, &rep, &unused,
                         errbuf);
    if (rc != 0) {
        return rc;
    }
    if (rep.max_key_bytes == 0 || rep.max_value_bytes == 0) {
        brim_errfmt(errbuf, "hello from %s: no limits in the reply",
                    node->name);
        return BRIM_EBADREPLY;
    }
    *max_key_bytes = rep.max_key_bytes;
    *max_value_bytes = rep.max_value_bytes;
    return 0;
}
