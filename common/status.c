/*
 * common/status.c - texts and names of the codes in <brim/status.h>,
 * the error-buffer formatter, and the assertion failure path.
 */
#include "common/defs.h"

#include <execinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

const char *
brim_strerror(int code)
{
    switch (code) {
    case 0:
        return "ok";
#define STATUS_TEXT(name, value, text)                                         \
    case -(value):                                                             \
        return text;
        BRIM_STATUS_MAP(STATUS_TEXT)
#undef STATUS_TEXT
    default:
        return "unknown error";
    }
}

const char *
brim_err_name(int code)
{
    switch (code) {
    case 0:
        return "OK";
#define STATUS_NAME(name, value, text)                                         \
    case -(value):                                                             \
        return #name;
        BRIM_STATUS_MAP(STATUS_NAME)
#undef STATUS_NAME
    default:
        return "UNKNOWN_CODE";
    }
}

void
brim_errfmt(char *errbuf, const char *fmt, ...)
{
    va_list ap;

    if (errbuf == NULL) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(errbuf, BRIM_ERRBUF_LEN, fmt, ap);
    va_end(ap);
}

void
brim_assert_fail(const char *expr, const char *file, int line)
{
    void *frames[32];
    int   n;

    fprintf(stderr, "assertion failed: %s at %s:%d\n", expr, file, line);
    n = backtrace(frames, (int) BRIM_ARRAY_LEN(frames));
    backtrace_symbols_fd(frames, n, STDERR_FILENO);
    abort();
}
