/*
 * client/lib/net.c - libbrim's sockets: "host:port" parsing, a TCP connect
 * bounded by a deadline (non-blocking connect plus poll), and the monotonic
 * clock every timeout is measured on; and a connect that does not wait at
 * all, for the coordinator subscription (coordlink.c). Blocking DNS is the one
 * exception to the deadline (see brim_net_connect()).
 */
#include "client/lib/client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "common/defs.h"

int64_t
brim_net_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
brim_net_sleep_ms(int64_t ms)
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
brim_net_split(const char *addr, char *host, size_t host_size, char port[6],
               char errbuf[BRIM_ERRBUF_LEN])
{
    const char *colon, *h, *p;
    size_t      hlen;
    char       *end;
    long        v;

    if (addr == NULL || addr[0] == '\0') {
        brim_errfmt(errbuf, "brim: no address given (want host:port)");
        return BRIM_EINVAL;
    }
    if (addr[0] == '[') {
        /* "[v6addr]:port": the brackets keep the address's own colons. */
        h = addr + 1;
        colon = strchr(h, ']');
        if (colon == NULL || colon[1] != ':') {
            brim_errfmt(errbuf, "brim: bad address \"%.64s\": want "
                        "[v6addr]:port", addr);
            return BRIM_EINVAL;
        }
        hlen = (size_t) (colon - h);
        p = colon + 2;
    } else {
        colon = strrchr(addr, ':');
        if (colon == NULL || memchr(addr, ':', (size_t) (colon - addr))) {
            brim_errfmt(errbuf, "brim: bad address \"%.64s\": want "
                        "host:port (IPv6 as [addr]:port)", addr);
            return BRIM_EINVAL;
        }
        h = addr;
        hlen = (size_t) (colon - addr);
        p = colon + 1;
    }
    if (hlen == 0 || hlen >= host_size) {
        brim_errfmt(errbuf, "brim: bad address \"%.64s\": host is %zu bytes, "
                    "allowed 1 .. %zu", addr, hlen, host_size - 1);
        return BRIM_EINVAL;
    }
    errno = 0;
    v = strtol(p, &end, 10);
    if (p[0] < '0' || p[0] > '9' || *end != '\0' || errno != 0 || v < 1
        || v > 65535)
    {
        brim_errfmt(errbuf, "brim: bad address \"%.64s\": port \"%.16s\" is "
                    "not 1 .. 65535", addr, p);
        return BRIM_EINVAL;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    snprintf(port, 6, "%ld", v);
    return 0;
}

/* The brim code for a connect() errno. */
static int
net_err(int err)
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
net_so_error(int fd)
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

/*
 * Connect FD to SA, waiting in poll() until DEADLINE_MS. Returns 0 or an
 * errno value (ETIMEDOUT when the deadline passed).
 */
static int
net_connect_one(int fd, const struct sockaddr *sa, socklen_t salen,
                int64_t deadline_ms)
{
    struct pollfd pfd;
    int64_t       wait;
    int           rc;

    if (connect(fd, sa, salen) == 0) {
        return 0;
    }
    if (errno != EINPROGRESS && errno != EINTR) {
        return errno;
    }
    for (;;) {
        wait = deadline_ms - brim_net_now_ms();
        if (wait <= 0) {
            return ETIMEDOUT;
        }
        pfd.fd = fd;
        pfd.events = POLLOUT;
        pfd.revents = 0;
        rc = poll(&pfd, 1, (int) BRIM_MIN(wait, INT32_MAX));
        if (rc < 0 && errno != EINTR) {
            return errno;
        }
        if (rc > 0) {
            break;
        }
    }
    return net_so_error(fd);
}

/* A non-blocking, close-on-exec TCP socket of FAMILY, or -1 (errno). */
static int
net_socket(int family)
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

/* Resolve ADDR into *RES (free it with freeaddrinfo()). Blocking. */
static int
net_resolve(const char *addr, struct addrinfo **res,
            char errbuf[BRIM_ERRBUF_LEN])
{
    struct addrinfo hints;
    char            host[BRIM_LIB_ADDR_MAX], port[6];
    int             rc;

    rc = brim_net_split(addr, host, sizeof(host), port, errbuf);
    if (rc != 0) {
        return rc;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    rc = getaddrinfo(host, port, &hints, res);
    if (rc != 0) {
        brim_errfmt(errbuf, "%s: cannot resolve \"%s\": %s", addr, host,
                    gai_strerror(rc));
        return BRIM_ESYS;
    }
    return 0;
}

/* Report the connect error ERR on ADDR; returns its brim code. */
static int
net_connect_err(const char *addr, int err, char errbuf[BRIM_ERRBUF_LEN])
{
    if (err == ETIMEDOUT) {
        brim_errfmt(errbuf, "%s: connect timed out", addr);
    } else {
        brim_errfmt(errbuf, "%s: connect: %s", addr, strerror(err));
    }
    return net_err(err);
}

/* Set the options of a connected socket FD. */
static void
net_connected(int fd)
{
    int one = 1;

    (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int
brim_net_connect(const char *addr, int64_t deadline_ms, int *fd,
                 char errbuf[BRIM_ERRBUF_LEN])
{
    struct addrinfo *res, *ai;
    int              s, rc, err;

    rc = net_resolve(addr, &res, errbuf);
    if (rc != 0) {
        return rc;
    }
    err = ENOENT;
    s = -1;
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        s = net_socket(ai->ai_family);
        if (s < 0) {
            err = errno;
            continue;
        }
        err = net_connect_one(s, ai->ai_addr, ai->ai_addrlen, deadline_ms);
        if (err == 0) {
            break;
        }
        close(s);
        s = -1;
        if (err == ETIMEDOUT) {
            break;                  /* the deadline is spent */
        }
    }
    freeaddrinfo(res);
    if (s < 0) {
        return net_connect_err(addr, err, errbuf);
    }
    net_connected(s);
    *fd = s;
    return 0;
}

int
brim_net_connect_start(const char *addr, uint32_t attempt, int *fd,
                       char errbuf[BRIM_ERRBUF_LEN])
{
    struct addrinfo *res, *ai;
    uint32_t         n;
    int              s, rc, err;

    rc = net_resolve(addr, &res, errbuf);
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
    s = net_socket(ai->ai_family);
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
        return net_connect_err(addr, err, errbuf);
    }
    *fd = s;
    return 0;
}

int
brim_net_connect_done(int fd)
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
    err = rc < 0 ? errno : net_so_error(fd);
    if (err != 0) {
        return net_err(err);
    }
    net_connected(fd);
    return 0;
}
