/*
 * client/net/sock.c - the client side's sockets (sock.h): addresses
 * through common/parse.h, connects bounded by a deadline or not waiting at
 * all, and the monotonic clock. Once libbrim's net.c; brim-bench's own
 * socket code went the same way.
 */
#include "client/net/sock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include "common/defs.h"
#include "common/parse.h"

int64_t
brim_sock_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t
brim_sock_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

void
brim_sock_sleep_ms(int64_t ms)
{
    struct timespec ts;

    if (ms <= 0) {
        return;
    }
    ts.tv_sec = (time_t) (ms / 1000);
    ts.tv_nsec = (long) (ms % 1000) * 1000000;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        /* the remainder is in ts */
    }
}

int
brim_sock_split(const char *addr, const char *prefix, char *host,
                size_t host_size, char port[6], char errbuf[BRIM_ERRBUF_LEN])
{
    char     why[BRIM_ERRBUF_LEN];
    uint16_t p;

    if (brim_addr_split(addr, host, host_size, 1, &p, why) != 0) {
        /* common/parse.c names itself "addr: ..."; the tool's own prefix
         * goes there instead, so its messages stay its own. */
        brim_errfmt(errbuf, "%s%s", prefix,
                    strncmp(why, "addr", 4) == 0 ? why + 4 : why);
        return BRIM_EINVAL;
    }
    snprintf(port, 6, "%u", (unsigned) p);
    return 0;
}

int
brim_sock_lookup(const char *host, const char *port, struct addrinfo **res)
{
    struct addrinfo hints;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV; /* PORT is always a number here */
    return getaddrinfo(host, port, &hints, res);
}

int
brim_sock_resolve(const char *addr, struct addrinfo **res,
                  char errbuf[BRIM_ERRBUF_LEN])
{
    char host[BRIM_SOCK_ADDR_MAX], port[6];
    int  rc;

    rc = brim_sock_split(addr, "brim", host, sizeof(host), port, errbuf);
    if (rc != 0) {
        return rc;
    }
    rc = brim_sock_lookup(host, port, res);
    if (rc != 0) {
        brim_errfmt(errbuf, "%s: cannot resolve \"%s\": %s", addr, host,
                    gai_strerror(rc));
        return BRIM_ESYS;
    }
    return 0;
}

int
brim_sock_err(int err)
{
    switch (err) {
    case ECONNREFUSED:
        return BRIM_ECONNREFUSED;
    case ETIMEDOUT:
        return BRIM_ETIMEDOUT;
    default:
        return BRIM_ESYS;
    }
}

/* The pending error of socket FD (SO_ERROR): 0 or an errno value. */
static int
sock_so_error(int fd)
{
    socklen_t len;
    int       err;

    err = 0;
    len = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        return errno;
    }
    return err;
}

/* A non-blocking, close-on-exec TCP socket of FAMILY, or -1 (errno). */
static int
sock_new(int family)
{
    int fd, fl;

    fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0
        || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
    {
        close(fd);
        return -1;
    }
    return fd;
}

/* Set the options of a connected socket FD. */
static void
sock_connected(int fd)
{
    int one = 1;

    (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int
brim_sock_wait(int fd, short events, int64_t deadline_ms)
{
    struct pollfd pfd;
    int64_t       wait;
    int           rc;

    for (;;) {
        wait = deadline_ms - brim_sock_now_ms();
        if (wait <= 0) {
            return BRIM_ETIMEDOUT;
        }
        pfd.fd = fd;
        pfd.events = events;
        pfd.revents = 0;
        rc = poll(&pfd, 1, (int) BRIM_MIN(wait, INT32_MAX));
        if (rc > 0) {
            return 0;
        }
        if (rc < 0 && errno != EINTR) {
            return BRIM_ESYS;
        }
    }
}

/*
 * Connect FD to SA, waiting in poll() until DEADLINE_MS. Returns 0 or an
 * errno value (ETIMEDOUT when the deadline passed).
 */
static int
sock_connect_fd(int fd, const struct sockaddr *sa, socklen_t sa_len,
                int64_t deadline_ms)
{
    int rc;

    if (connect(fd, sa, sa_len) == 0) {
        return 0;
    }
    if (errno != EINPROGRESS && errno != EINTR) {
        return errno;
    }
    rc = brim_sock_wait(fd, POLLOUT, deadline_ms);
    if (rc != 0) {
        return rc == BRIM_ETIMEDOUT ? ETIMEDOUT : errno;
    }
    return sock_so_error(fd);
}

int
brim_sock_open(const struct sockaddr *sa, socklen_t sa_len, int64_t deadline_ms,
               int *fd)
{
    int s, err;

    s = sock_new(sa->sa_family);
    if (s < 0) {
        return errno;
    }
    err = sock_connect_fd(s, sa, sa_len, deadline_ms);
    if (err != 0) {
        close(s);
        return err;
    }
    sock_connected(s);
    *fd = s;
    return 0;
}

/* Report the connect error ERR on ADDR; returns its brim code. */
static int
sock_connect_err(const char *addr, int err, char errbuf[BRIM_ERRBUF_LEN])
{
    if (err == ETIMEDOUT) {
        brim_errfmt(errbuf, "%s: connect timed out", addr);
    } else {
        brim_errfmt(errbuf, "%s: connect: %s", addr, strerror(err));
    }
    return brim_sock_err(err);
}

int
brim_sock_connect(const char *addr, int64_t deadline_ms, int *fd,
                  char errbuf[BRIM_ERRBUF_LEN])
{
    struct addrinfo *res, *ai;
    int              s, rc, err;

    rc = brim_sock_resolve(addr, &res, errbuf);
    if (rc != 0) {
        return rc;
    }
    err = ENOENT;
    s = -1;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        err = brim_sock_open(ai->ai_addr, ai->ai_addrlen, deadline_ms, &s);
        if (err == 0 || err == ETIMEDOUT) {
            break; /* connected, or the deadline is spent */
        }
        s = -1;
    }
    freeaddrinfo(res);
    if (err != 0) {
        return sock_connect_err(addr, err, errbuf);
    }
    *fd = s;
    return 0;
}

int
brim_sock_connect_start(const char *addr, uint32_t attempt, int *fd,
                        char errbuf[BRIM_ERRBUF_LEN])
{
    struct addrinfo *res, *ai;
    uint32_t         n;
    int              s, rc, err;

    rc = brim_sock_resolve(addr, &res, errbuf);
    if (rc != 0) {
        return rc;
    }
    /* Attempt k takes address k mod count: one that refuses (::1 for a
     * server on 127.0.0.1) does not hide the others. */
    for (n = 0, ai = res; ai != NULL; ai = ai->ai_next) {
        n++;
    }
    for (ai = res, n = attempt % n; n > 0; n--) {
        ai = ai->ai_next;
    }
    err = 0;
    s = sock_new(ai->ai_family);
    if (s < 0) {
        err = errno;
    } else if (connect(s, ai->ai_addr, ai->ai_addrlen) != 0
               && errno != EINPROGRESS && errno != EINTR)
    {
        err = errno;
        close(s);
    }
    freeaddrinfo(res);
    if (err != 0) {
        return sock_connect_err(addr, err, errbuf);
    }
    *fd = s;
    return 0;
}

int
brim_sock_connect_done(int fd)
{
    struct pollfd pfd;
    int           err, rc;

    pfd.fd = fd;
    pfd.events = POLLOUT;
    pfd.revents = 0;
    rc = poll(&pfd, 1, 0);
    if (rc == 0 || (rc < 0 && errno == EINTR)) {
        return BRIM_EAGAIN;
    }
    err = rc < 0 ? errno : sock_so_error(fd);
    if (err != 0) {
        return brim_sock_err(err);
    }
    sock_connected(fd);
    return 0;
}
