/*
 * common/defs.h - small macros every brim module uses: container-of, min and
 * max, and the assertion set (BRIM_ASSERT always on, BRIM_DASSERT in debug
 * builds only). Assertions state proven invariants of our own state; input
 * from the network, a config or a peer is handled with an error code.
 */
#ifndef BRIM_COMMON_DEFS_H
#define BRIM_COMMON_DEFS_H

#include <stddef.h>
#include <stdint.h>

#include <brim/status.h>

#define BRIM_CONTAINER_OF(ptr, type, member)                                   \
    ((type *) (void *) ((char *) (ptr) -offsetof(type, member)))

#define BRIM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define BRIM_MAX(a, b) ((a) > (b) ? (a) : (b))
#define BRIM_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Report a failed assertion EXPR at FILE:LINE on stderr with a backtrace,
 * then abort(). Never returns. common/ never logs, but a broken invariant
 * is not a log line: the process cannot go on.
 */
_Noreturn void brim_assert_fail(const char *expr, const char *file, int line);

#define BRIM_ASSERT(x)                                                         \
    do {                                                                       \
        if (!(x)) {                                                            \
            brim_assert_fail(#x, __FILE__, __LINE__);                          \
        }                                                                      \
    } while (0)

#ifdef BRIM_DEBUG
#define BRIM_DASSERT(x) BRIM_ASSERT(x)
#else
#define BRIM_DASSERT(x) ((void) 0)
#endif

#define BRIM_NOTREACHED() brim_assert_fail("not reached", __FILE__, __LINE__)

/* Stop the process with MSG (a string literal): state it cannot go on
 * without, such as control-plane memory (STYLE.md 5: daemons panic on
 * control-plane OOM, as redis does). */
#define BRIM_PANIC(msg) brim_assert_fail((msg), __FILE__, __LINE__)

/*
 * Write a one-line message into ERRBUF (BRIM_ERRBUF_LEN bytes) with printf
 * FMT; a NULL ERRBUF is allowed and ignored. Messages read
 * "module: what: why", lower case, naming the bad value and its limit.
 */
void brim_errfmt(char *errbuf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* BRIM_COMMON_DEFS_H */
