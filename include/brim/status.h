/*
 * brim/status.h - the one list of brim's status and error codes, shared by
 * common/, proto/, the daemons and libbrim. It sits in the top-level
 * include/ (DESIGN.md section 9), below every layer, and is installed
 * beside <brim.h> as <brim/status.h>. Wire statuses are the small
 * positive numbers (stable, never reused, the same names as in
 * proto/PROTOCOL.md); local codes are 100 and above and never sent.
 * A function returns 0 or the negated code, BRIM_E<NAME> = -value.
 */
#ifndef BRIM_STATUS_H
#define BRIM_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(BRIM_BUILDING_SHARED) && defined(__GNUC__)
#define BRIM_EXTERN __attribute__((visibility("default")))
#else
#define BRIM_EXTERN /* static build or consumer */
#endif

/* Bytes of a one-line error message buffer (errbuf parameters). */
#define BRIM_ERRBUF_LEN 256

/* XX(NAME, value, "text"). Values 1..99 travel on the wire. */
#define BRIM_STATUS_MAP(XX)                                                    \
    XX(NOTFOUND, 1, "not found")                                               \
    XX(BADREQ, 2, "malformed request")                                         \
    XX(UNKNOWNOP, 3, "unknown operation")                                      \
    XX(TOOBIG, 4, "too big")                                                   \
    XX(MOVED, 5, "partition moved to another node")                            \
    XX(RETRY, 6, "retry: partition in transition")                             \
    XX(BUSY, 7, "busy")                                                        \
    XX(EXISTS, 8, "already exists")                                            \
    XX(NOTSTORED, 9, "not stored")                                             \
    XX(NOMEM, 10, "out of memory")                                             \
    XX(INVAL, 11, "invalid argument")                                          \
    XX(NONUMERIC, 12, "value is not a decimal number")                         \
    XX(DENIED, 13, "access denied")                                            \
    XX(NOSPACE, 14, "no room: every node is at its cap")                       \
    XX(NONODES, 15, "no nodes in the cluster")                                 \
    XX(NOTLEADER, 16, "not the leading coordinator")                           \
    XX(STALETERM, 17, "from a coordinator of an older term")                   \
    XX(AGAIN, 100, "try again: incomplete input")                              \
    XX(TIMEDOUT, 101, "timed out")                                             \
    XX(CONNREFUSED, 102, "connection refused")                                 \
    XX(CLOSED, 103, "connection closed")                                       \
    XX(SYS, 104, "system error")                                               \
    XX(UNKNOWN, 105, "outcome unknown")                                        \
    XX(BADREPLY, 106, "malformed reply from the server")

enum brim_status {
    BRIM_OK = 0,
#define BRIM_STATUS_ENUM(name, value, text) BRIM_E##name = -(value),
    BRIM_STATUS_MAP(BRIM_STATUS_ENUM)
#undef BRIM_STATUS_ENUM
};

/* The highest wire status; local codes start above it. */
#define BRIM_STATUS_WIRE_MAX 99

/*
 * A one-line English text for CODE (0 or a negative BRIM_E* value). Unknown
 * codes give "unknown error". The returned string is static; never free it.
 */
BRIM_EXTERN const char *brim_strerror(int code);

/*
 * The symbolic name of CODE without its prefix ("NOTFOUND", "OK"); for an
 * unknown code "UNKNOWN_CODE". The string is static.
 */
BRIM_EXTERN const char *brim_err_name(int code);

#ifdef __cplusplus
}
#endif

#endif /* BRIM_STATUS_H */
