/*
 * client/bench/log.c - what a load thread reports (engine_int.h): its
 * messages on stderr, at most LOG_MAX a thread and run, and its fatal
 * stop, whose reason main.c prints. It is the bottom of brim-bench's
 * engine: engine.c, conn.c and resend.c report through it, and it calls
 * no other file of client/bench (docs/design.md, "Architecture").
 */
#include "client/bench/engine_int.h"

#include <stdarg.h>
#include <stdio.h>

/* Messages (failures, verify findings) each thread prints at most. */
#define LOG_MAX 10

void
brim_bench_log(struct brim_bench_thread *t, const char *fmt, ...)
{
    char    line[BRIM_ERRBUF_LEN];
    va_list ap;

    if (t->logged >= LOG_MAX) {
        return;
    }
    if (++t->logged == LOG_MAX) {
        fprintf(stderr,
                "brim-bench: thread %u: further messages "
                "suppressed\n",
                t->id);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "brim-bench: %s\n", line);
}

void
brim_bench_log_fatal(struct brim_bench_thread *t, const char *fmt, ...)
{
    va_list ap;

    if (t->fatal) {
        return;
    }
    t->fatal = 1;
    t->stopping = 1;
    va_start(ap, fmt);
    vsnprintf(t->err, sizeof(t->err), fmt, ap);
    va_end(ap);
}
