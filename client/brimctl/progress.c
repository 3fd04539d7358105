/*
 * client/brimctl/progress.c - what brimctl's long commands (import,
 * verify, leave --wait, stats --watch) share: a progress bar on stderr
 * (redrawn in place on a terminal, a plain line a second otherwise), a
 * monotonic clock, and SIGINT/SIGTERM caught into a flag so that a loop
 * can stop cleanly and print its summary.
 */
#include "client/brimctl/ctl.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Cells of the bar between its brackets. */
#define PROGRESS_CELLS 30

/* Seconds between two drawings: a bar (10x/s at most), a line. */
#define PROGRESS_BAR_S 0.1
#define PROGRESS_LINE_S 1.0

/* The signal caught, or 0; written only by ctl_on_signal(). */
static volatile sig_atomic_t ctl_signal;

double
brim_ctl_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

void
brim_ctl_progress_init(struct brim_ctl_progress *p, int force,
                       int lines_without_tty)
{
    memset(p, 0, sizeof(*p));
    p->start_s = brim_ctl_now();
    if (isatty(STDERR_FILENO)) {
        p->mode = BRIM_CTL_PROGRESS_BAR;
    } else if (force || lines_without_tty) {
        p->mode = BRIM_CTL_PROGRESS_LINES;
        /* The first line after a second: a short run prints none. */
        p->next_s = p->start_s + PROGRESS_LINE_S;
    }
}

int
brim_ctl_progress_due(const struct brim_ctl_progress *p)
{
    return p->mode != BRIM_CTL_PROGRESS_OFF && brim_ctl_now() >= p->next_s;
}

double
brim_ctl_progress_elapsed(const struct brim_ctl_progress *p)
{
    return brim_ctl_now() - p->start_s;
}

void
brim_ctl_progress_draw(struct brim_ctl_progress *p, double frac, int final,
                       const char *fmt, ...)
{
    va_list ap;
    char    bar[PROGRESS_CELLS + 16];
    double  now;
    int     i, full;

    if (p->mode == BRIM_CTL_PROGRESS_OFF) {
        return;
    }
    now = brim_ctl_now();
    if (!final && now < p->next_s) {
        return;
    }
    p->next_s = now
        + (p->mode == BRIM_CTL_PROGRESS_BAR ? PROGRESS_BAR_S : PROGRESS_LINE_S);
    bar[0] = '\0';
    if (frac >= 0) {
        frac = frac > 1 ? 1 : frac;
        full = (int) (frac * PROGRESS_CELLS); /* FRAC >= 0: floor */
        bar[0] = '[';
        for (i = 0; i < PROGRESS_CELLS; i++) {
            bar[i + 1] = i < full ? '#' : '.';
        }
        snprintf(bar + PROGRESS_CELLS + 1, sizeof(bar) - PROGRESS_CELLS - 1,
                 "] %3d%%  ", (int) (frac * 100));
    }
    /* "\r...\033[K": back to the start of the line, then clear what the
     * previous, longer drawing left. */
    fprintf(stderr, "%s%s", p->mode == BRIM_CTL_PROGRESS_BAR ? "\r" : "", bar);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (p->mode == BRIM_CTL_PROGRESS_BAR) {
        fputs("\033[K", stderr);
        p->drawn = !final;
        if (final) {
            fputc('\n', stderr);
        }
    } else {
        fputc('\n', stderr);
    }
    fflush(stderr);
}

void
brim_ctl_progress_clear(struct brim_ctl_progress *p)
{
    if (p->mode == BRIM_CTL_PROGRESS_BAR && p->drawn) {
        fputs("\r\033[K", stderr);
        p->drawn = 0;
        p->next_s = 0; /* redraw at the next chance */
    }
}

/* SIGINT, SIGTERM: remember the first; the loops look at the flag. */
static void
ctl_on_signal(int sig)
{
    if (ctl_signal == 0) {
        ctl_signal = sig;
    }
}

void
brim_ctl_catch_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = ctl_on_signal;
    sigemptyset(&sa.sa_mask);
    /* No SA_RESTART: a sleep or poll in progress returns early. */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

int
brim_ctl_stopped(void)
{
    return (int) ctl_signal;
}

void
brim_ctl_sleep(double seconds)
{
    struct timespec ts;

    if (!(seconds > 0) || ctl_signal != 0) {
        return;
    }
    ts.tv_sec = (time_t) seconds;
    ts.tv_nsec = (long) ((seconds - (double) ts.tv_sec) * 1e9);
    /* EINTR: a signal came; the caller looks at brim_ctl_stopped(). */
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && ctl_signal == 0) {
    }
}
