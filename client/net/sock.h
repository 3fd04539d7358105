/*
 * client/net/sock.h - the sockets of brim's client side (libbrim,
 * brim-bench): "host:port" split by common/parse.h and resolved, TCP
 * connects bounded by a deadline (a non-blocking connect() plus poll) or
 * not waiting at all, and the monotonic clock every timeout is measured
 * on. Blocking DNS is the one wait no deadline bounds: getaddrinfo() has
 * no timeout (XXX: give numeric addresses where that matters).
 */
#ifndef BRIM_CLIENT_NET_SOCK_H
#define BRIM_CLIENT_NET_SOCK_H

#include <stddef.h>
#include <stdint.h>

#include <netdb.h>
#include <sys/socket.h>

#include <brim/status.h>

/* Longest "host:port" kept: a host of BRIM_HOST_MAX (common/parse.h),
 * brackets, colon, port, NUL. */
#define BRIM_SOCK_ADDR_MAX 264

/* Milliseconds of CLOCK_MONOTONIC. */
int64_t brim_sock_now_ms(void);

/* Nanoseconds of CLOCK_MONOTONIC, the clock brim-bench times requests
 * with (the same clock as brim_sock_now_ms(), finer). */
uint64_t brim_sock_now_ns(void);

/* Sleep MS milliseconds (0 or less: return at once). */
void brim_sock_sleep_ms(int64_t ms);

/*
 * Split ADDR, "host:port" or "[v6addr]:port", with brim_addr_split()
 * (port 1 .. 65535) into HOST (HOST_SIZE bytes of room, NUL-terminated)
 * and PORT (decimal text). Returns 0, or BRIM_EINVAL with the reason in
 * ERRBUF (NULL allowed), which starts with PREFIX ("brim: bad address
 * ...") where common/parse.c says "addr". HOST and PORT are written only
 * on success.
 */
int brim_sock_split(const char *addr, const char *prefix, char *host,
                    size_t host_size, char port[6],
                    char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Look HOST and PORT (decimal digits; both borrowed) up with getaddrinfo()
 * for a TCP stream, IPv4 or IPv6. Blocking. Returns 0 with *RES (free it
 * with freeaddrinfo()), or getaddrinfo()'s non-zero code (gai_strerror()
 * names it).
 */
int brim_sock_lookup(const char *host, const char *port, struct addrinfo **res);

/*
 * brim_sock_split() (PREFIX "brim") then brim_sock_lookup() of ADDR.
 * Returns 0 with *RES (freeaddrinfo() it), BRIM_EINVAL (a bad address) or
 * BRIM_ESYS (it does not resolve: ERRBUF "ADDR: cannot resolve \"HOST\":
 * reason").
 */
int brim_sock_resolve(const char *addr, struct addrinfo **res,
                      char errbuf[BRIM_ERRBUF_LEN]);

/* The BRIM_E* code of a connect() errno value ERR: BRIM_ECONNREFUSED,
 * BRIM_ETIMEDOUT or BRIM_ESYS. */
int brim_sock_err(int err);

/*
 * Connect a new non-blocking, close-on-exec TCP socket to SA (SA_LEN
 * bytes, borrowed), waiting in poll() until DEADLINE_MS (brim_sock_now_ms()
 * time). On success *FD is the socket, TCP_NODELAY set, and 0 is returned;
 * else an errno value (ETIMEDOUT when the deadline passed) and no socket
 * is left open.
 */
int brim_sock_open(const struct sockaddr *sa, socklen_t sa_len,
                   int64_t deadline_ms, int *fd);

/*
 * Resolve ADDR and connect to each address it gives in turn until one
 * accepts or DEADLINE_MS passes. On success *FD is the socket (as for
 * brim_sock_open()). Returns 0, BRIM_EINVAL, BRIM_ECONNREFUSED,
 * BRIM_ETIMEDOUT or BRIM_ESYS; ERRBUF gets "ADDR: reason" ("ADDR: connect
 * timed out", "ADDR: connect: Connection refused").
 */
int brim_sock_connect(const char *addr, int64_t deadline_ms, int *fd,
                      char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Start a connection to ADDR without waiting for it: resolve ADDR and
 * connect() a non-blocking socket to its address number ATTEMPT modulo
 * their count, so that successive attempts try each address in turn. On
 * success *FD is the socket, connected or still connecting
 * (brim_sock_connect_done() tells). Returns 0, BRIM_EINVAL,
 * BRIM_ECONNREFUSED or BRIM_ESYS; ERRBUF (NULL allowed) gets "ADDR:
 * reason".
 */
int brim_sock_connect_start(const char *addr, uint32_t attempt, int *fd,
                            char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Whether the connection FD of brim_sock_connect_start() is made, without
 * waiting. Returns 0 (connected; TCP_NODELAY set), BRIM_EAGAIN (still
 * under way), or the connect error (BRIM_ECONNREFUSED, BRIM_ETIMEDOUT,
 * BRIM_ESYS).
 */
int brim_sock_connect_done(int fd);

/*
 * Wait until FD is ready for EVENTS (poll(2) flags; POLLHUP and POLLERR
 * count as ready) or DEADLINE_MS passes. Returns 0, BRIM_ETIMEDOUT or
 * BRIM_ESYS.
 */
int brim_sock_wait(int fd, short events, int64_t deadline_ms);

#endif /* BRIM_CLIENT_NET_SOCK_H */
