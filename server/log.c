/*
 * server/log.c - the daemons' line logger (see log.h). Each line is built
 * in a stack buffer and written with one write(2), so lines from one
 * process never interleave mid-line.
 */
#include "server/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 1024

static char                log_role[64] = "brim";
static char                log_name[64];
static enum brim_log_level log_level = BRIM_LOG_INFO;

int brim_log_debug_on;

void
brim_log_init(const char *role, const char *name, enum brim_log_level level)
{
    snprintf(log_role, sizeof(log_role), "%s", role);
    snprintf(log_name, sizeof(log_name), "%s", name != NULL ? name : "");
    log_level = level;
    brim_log_debug_on = level >= BRIM_LOG_DEBUG;
}

int
brim_log_level_parse(const char *text, enum brim_log_level *level)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    int                i;

    for (i = 0; i < 4; i++) {
        if (strcmp(text, names[i]) == 0) {
            *level = (enum brim_log_level) i;
            return 0;
        }
    }
    return -1;
}

void
brim_log_write(enum brim_log_level level, const char *file, int line,
               const char *fmt, ...)
{
    static const char letters[] = "EWID";
    char              buf[LOG_LINE_MAX];
    const char       *base;
    struct timeval    tv;
    struct tm         tm;
    va_list           ap;
    size_t            n;
    int               k;

    if (level > log_level) {
        return;
    }
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    base = strrchr(file, '/');
    base = base != NULL ? base + 1 : file;
    n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    k = snprintf(buf + n, sizeof(buf) - n, ".%03dZ %s%s%s[%d] %c %s:%d ",
                 (int) (tv.tv_usec / 1000), log_role,
                 log_name[0] != '\0' ? ":" : "", log_name, (int) getpid(),
                 letters[level], base, line);
    if (k > 0) {
        n += (size_t) k;
    }
    if (n < sizeof(buf) - 1) {
        va_start(ap, fmt);
        k = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
        va_end(ap);
        if (k > 0) {
            n += (size_t) k;
        }
    }
    if (n > sizeof(buf) - 2) {
        n = sizeof(buf) - 2;
    }
    buf[n++] = '\n';
    (void) !write(STDERR_FILENO, buf, n);
}
