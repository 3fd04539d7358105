/*
 * tests/cluster/client_node.c - a real brim-node under test (fork, exec,
 * wait until it accepts, stop by PID) and a scripted fake node on a thread.
 * Every loop is bounded in count and time.
 */
#include "tests/cluster/client_node.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <check.h>

#include "proto/frame.h"

#define NODE_START_TRIES 3  /* ports tried before giving up */
#define NODE_READY_MS 10000 /* wait for accept() at most */
#define NODE_STOP_MS 3000   /* SIGTERM grace before SIGKILL */
#define FAKE_POLL_MS 50     /* the fake checks STOP this often */

int64_t
client_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000};

    nanosleep(&ts, NULL);
}

/* A TCP socket with SO_REUSEADDR (as libuv binds) bound to 127.0.0.1:PORT
 * (0: any); -1 when the socket or the bind fails. */
static int
loopback_socket_bound(int port)
{
    struct sockaddr_in sa;
    int                fd, one;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t) port);
    if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A loopback listening (LISTEN) or plain socket bound to PORT (0: any). */
static int
bind_loopback(int port, int listen_too, int *bound_port)
{
    struct sockaddr_in sa;
    socklen_t          len;
    int                fd;

    fd = loopback_socket_bound(port);
    ck_assert_int_ge(fd, 0);
    if (listen_too) {
        ck_assert_int_eq(listen(fd, 16), 0);
    }
    len = sizeof(sa);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *) &sa, &len), 0);
    *bound_port = ntohs(sa.sin_port);
    return fd;
}

#define FREE_PORT_LO 20000 /* tests/support/ports.py's range */
#define FREE_PORT_HI 32000

/* The first port of the ephemeral range (32768 when unreadable). */
static int
ephemeral_low(void)
{
    FILE *f;
    int   lo = 32768;

    f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f != NULL) {
        if (fscanf(f, "%d", &lo) != 1) {
            lo = 32768;
        }
        fclose(f);
    }
    return lo;
}

/* True when 127.0.0.1:PORT can be bound now (with SO_REUSEADDR, as libuv). */
static int
port_bindable(int port)
{
    int fd;

    fd = loopback_socket_bound(port);
    if (fd < 0) {
        return 0;
    }
    close(fd);
    return 1;
}

int
client_free_port(void)
{
    struct timespec ts;
    int             hi, tries, port;
    unsigned        seed;

    hi = ephemeral_low() < FREE_PORT_HI ? ephemeral_low() : FREE_PORT_HI;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    seed = (unsigned) ts.tv_nsec ^ (unsigned) getpid() << 16;
    for (tries = 0; tries < 500; tries++) {
        port = FREE_PORT_LO
            + (int) (rand_r(&seed) % (unsigned) (hi - FREE_PORT_LO));
        if (port_bindable(port)) {
            return port;
        }
    }
    ck_abort_msg("no free port in %d..%d after 500 tries", FREE_PORT_LO, hi);
    return 0;
}

/* True when something accepts TCP connections on 127.0.0.1:PORT. */
static int
port_accepts(int port)
{
    struct sockaddr_in sa;
    int                fd, ok;

    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return 0;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t) port);
    ok = connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

/* Fork and exec the node on NODE->port. Returns 1 once it accepts. */
static int
node_spawn(struct client_node *node, const char *const *extra)
{
    const char *bin, *argv[32], *log;
    char        listen_arg[40];
    int64_t     t0;
    int         i, n, fd, status;
    pid_t       pid;

    bin = getenv("BRIM_NODE_BIN");
    ck_assert_msg(bin != NULL, "BRIM_NODE_BIN is not set");
    snprintf(listen_arg, sizeof(listen_arg), "127.0.0.1:%d", node->port);
    n = 0;
    argv[n++] = bin;
    argv[n++] = "--standalone";
    argv[n++] = "--listen";
    argv[n++] = listen_arg;
    for (i = 0; extra != NULL && extra[i] != NULL && n < 30; i++) {
        argv[n++] = extra[i];
    }
    argv[n] = NULL;
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* Die with the test process, whatever kills it (a CTest timeout,
         * a failed assert before the teardown). */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        log = getenv("BRIM_TEST_NODE_LOG");
        fd = open(log != NULL ? log : "/dev/null",
                  O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execv(bin, (char *const *) argv);
        _exit(127);
    }
    t0 = client_now_ms();
    while (client_now_ms() - t0 < NODE_READY_MS) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            return 0; /* it exited: the port was taken? */
        }
        if (port_accepts(node->port)) {
            node->pid = pid;
            snprintf(node->addr, sizeof(node->addr), "127.0.0.1:%d",
                     node->port);
            return 1;
        }
        sleep_ms(20);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    ck_abort_msg("brim-node did not accept on port %d within %d ms", node->port,
                 NODE_READY_MS);
    return 0;
}

void
client_node_start(struct client_node *node, const char *const *extra)
{
    int tries;

    memset(node, 0, sizeof(*node));
    for (tries = 0; tries < NODE_START_TRIES; tries++) {
        node->port = client_free_port();
        if (node_spawn(node, extra)) {
            return;
        }
    }
    ck_abort_msg("brim-node exited at start %d times (ports taken?)",
                 NODE_START_TRIES);
}

void
client_node_start_on(struct client_node *node, const char *const *extra)
{
    int tries;

    /* The old socket may linger a moment: try again, bounded. */
    for (tries = 0; tries < 50; tries++) {
        if (node_spawn(node, extra)) {
            return;
        }
        sleep_ms(100);
    }
    ck_abort_msg("brim-node could not restart on port %d", node->port);
}

void
client_node_stop(struct client_node *node)
{
    int64_t t0;
    int     status;

    if (node->pid <= 0) {
        return;
    }
    kill(node->pid, SIGCONT); /* a test may have stopped it */
    kill(node->pid, SIGTERM);
    t0 = client_now_ms();
    while (client_now_ms() - t0 < NODE_STOP_MS) {
        if (waitpid(node->pid, &status, WNOHANG) == node->pid) {
            node->pid = 0;
            return;
        }
        sleep_ms(10);
    }
    kill(node->pid, SIGKILL);
    waitpid(node->pid, &status, 0);
    node->pid = 0;
}

/* ---- the fake node ---- */

/* Write all of BUF to FD (blocking). */
static void
fake_write(int fd, const struct brim_buf *buf)
{
    size_t  off;
    ssize_t w;

    off = 0;
    while (off < buf->len) {
        w = send(fd, buf->data + off, buf->len - off, MSG_NOSIGNAL);
        if (w <= 0) {
            if (w < 0 && errno == EINTR) {
                continue;
            }
            return;
        }
        off += (size_t) w;
    }
}

/* HELLO's OK reply, as a node gives it. */
static void
fake_hello(const struct brim_req *req, struct brim_buf *out)
{
    struct brim_rep rep;

    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.hello.version = BRIM_WIRE_VERSION;
    rep.hello.role = BRIM_ROLE_NODE;
    rep.hello.cluster_id = 7;
    rep.hello.incarnation = 42;
    rep.hello.name = "fake";
    rep.hello.name_len = 4;
    brim_wire_limits_default(&rep.limits);
    ck_assert_int_eq(brim_wire_encode_rep(out, BRIM_OP_HELLO, &rep), 0);
}

/*
 * Serve connection number CONN on FD until the client closes it, the
 * script says CLOSE, or STOP. A frame it cannot parse closes it too.
 */
static void
fake_serve(struct client_fake *f, int conn, int fd)
{
    struct brim_wire_limits lim;
    struct brim_buf         in, out;
    struct brim_req         req;
    struct pollfd           pfd;
    msgpack_zone            zone;
    uint32_t                len;
    ssize_t                 r;
    int                     act;

    brim_wire_limits_default(&lim);
    brim_buf_init(&in);
    brim_buf_init(&out);
    msgpack_zone_init(&zone, 4096);
    act = CLIENT_FAKE_REPLY;
    while (!f->stop && act != CLIENT_FAKE_CLOSE) {
        pfd.fd = fd;
        pfd.events = POLLIN;
        if (poll(&pfd, 1, FAKE_POLL_MS) <= 0) {
            continue;
        }
        if (brim_buf_reserve(&in, 65536) != 0) {
            break;
        }
        r = recv(fd, brim_buf_tail(&in), 65536, 0);
        if (r <= 0) {
            break;
        }
        brim_buf_commit(&in, (size_t) r);
        while (act != CLIENT_FAKE_CLOSE
               && brim_frame_peek(in.data, in.len, lim.max_frame_bytes, &len)
                   == 0)
        {
            if (brim_wire_parse_req(in.data + BRIM_FRAME_HDR, len, &lim, &zone,
                                    &req, NULL)
                != 0)
            {
                act = CLIENT_FAKE_CLOSE;
                break;
            }
            out.len = 0;
            if (req.op == BRIM_OP_HELLO) {
                act = CLIENT_FAKE_SILENT;
                if (f->answer_hello) {
                    fake_hello(&req, &out);
                    act = CLIENT_FAKE_REPLY;
                }
            } else {
                f->requests++;
                act = f->script(f, conn, &req, &out);
            }
            fake_write(fd, &out);
            brim_buf_consume(&in, BRIM_FRAME_HDR + (size_t) len);
        }
    }
    msgpack_zone_destroy(&zone);
    brim_buf_destroy(&in);
    brim_buf_destroy(&out);
}

static void *
fake_main(void *arg)
{
    struct client_fake *f = arg;
    struct pollfd       pfd;
    int                 fd;

    while (!f->stop) {
        pfd.fd = f->lfd;
        pfd.events = POLLIN;
        if (poll(&pfd, 1, FAKE_POLL_MS) <= 0) {
            continue;
        }
        fd = accept(f->lfd, NULL, NULL);
        if (fd < 0) {
            continue;
        }
        fake_serve(f, f->conns++, fd);
        close(fd);
    }
    return NULL;
}

void
client_fake_start(struct client_fake *f, client_fake_fn script, void *arg)
{
    memset(f, 0, sizeof(*f));
    f->lfd = bind_loopback(0, 1, &f->port);
    snprintf(f->addr, sizeof(f->addr), "127.0.0.1:%d", f->port);
    f->script = script;
    f->arg = arg;
    f->answer_hello = 1;
    ck_assert_int_eq(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

void
client_fake_stop(struct client_fake *f)
{
    f->stop = 1;
    pthread_join(f->thread, NULL);
    close(f->lfd);
}

int
client_fake_ok(const struct brim_req *req, struct brim_buf *out)
{
    struct brim_rep rep;

    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.value = "";
    ck_assert_int_eq(brim_wire_encode_rep(out, req->op, &rep), 0);
    return CLIENT_FAKE_REPLY;
}

int
client_fake_err(const struct brim_req *req, int status, struct brim_buf *out)
{
    struct brim_rep rep;

    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.status = status;
    rep.message = "fake";
    rep.message_len = 4;
    ck_assert_int_eq(brim_wire_encode_rep(out, req->op, &rep), 0);
    return CLIENT_FAKE_REPLY;
}
