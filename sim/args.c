/*
 * sim/args.c - what brim-sim's subcommands share: usage errors, flag
 * values (comma lists, eps, formats), the seed of a run, the thread count
 * and the clock. Below every subcommand; calls none of them.
 */
#include "sim/sim.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/parse.h"
#include "common/placement.h"
#include "common/rng.h"

int
brim_sim_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "brim-sim %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(see brim-sim %s --help)\n", cmd);
    return BRIM_SIM_EXIT_USAGE;
}

int
brim_sim_bad_flag(const char *cmd, int opt, char **argv)
{
    const char *arg;

    /* getopt_long() has already stepped past the offending word. */
    arg = optind > 0 ? argv[optind - 1] : "?";
    if (opt == ':') {
        return brim_sim_usage_error(cmd, "flag %s needs a value", arg);
    }
    if (optopt != 0 && strncmp(arg, "--", 2) != 0) {
        return brim_sim_usage_error(cmd, "unknown flag -%c", optopt);
    }
    return brim_sim_usage_error(cmd, "unknown flag %s", arg);
}

int
brim_sim_parse_u32(const char *flag, const char *text, uint32_t min,
                   uint32_t max, uint32_t *out, char errbuf[BRIM_ERRBUF_LEN])
{
    if (brim_parse_u32(text, min, max, out) != 0) {
        brim_errfmt(errbuf,
                    "%s: bad value \"%.40s\": expected an integer "
                    "%" PRIu32 "..%" PRIu32,
                    flag, text, min, max);
        return BRIM_EINVAL;
    }
    return 0;
}

/*
 * Split TEXT at commas into ITEMS (a new array of *N fixed-size strings,
 * free with brim_free()). Empty items and items longer than
 * BRIM_SIM_ITEM_MAX - 1 are refused.
 */
static int
sim_split(const char *flag, const char *text, char (**items)[BRIM_SIM_ITEM_MAX],
          size_t *n, char errbuf[BRIM_ERRBUF_LEN])
{
    char(*it)[BRIM_SIM_ITEM_MAX];
    const char *p, *comma;
    size_t      count, len, i;

    count = 1;
    for (p = text; *p != '\0'; p++) {
        count += *p == ',';
    }
    it = brim_calloc(count, sizeof(*it));
    if (it == NULL) {
        brim_errfmt(errbuf, "%s: out of memory", flag);
        return BRIM_ENOMEM;
    }
    p = text;
    for (i = 0; i < count; i++) {
        comma = strchr(p, ',');
        len = comma != NULL ? (size_t) (comma - p) : strlen(p);
        if (len == 0 || len >= BRIM_SIM_ITEM_MAX) {
            brim_errfmt(errbuf, "%s: bad list \"%.60s\": item %zu is %s", flag,
                        text, i + 1, len == 0 ? "empty" : "too long");
            brim_free(it);
            return BRIM_EINVAL;
        }
        memcpy(it[i], p, len);
        it[i][len] = '\0';
        p += len + 1;
    }
    *items = it;
    *n = count;
    return 0;
}

int
brim_sim_parse_u32_list(const char *flag, const char *text, uint32_t min,
                        uint32_t max, uint32_t **out, size_t *n,
                        char errbuf[BRIM_ERRBUF_LEN])
{
    char(*items)[BRIM_SIM_ITEM_MAX];
    uint32_t *v;
    size_t    count, i, j;
    int       rc;

    rc = sim_split(flag, text, &items, &count, errbuf);
    if (rc != 0) {
        return rc;
    }
    v = brim_calloc(count, sizeof(*v));
    if (v == NULL) {
        brim_free(items);
        brim_errfmt(errbuf, "%s: out of memory", flag);
        return BRIM_ENOMEM;
    }
    for (i = 0; i < count; i++) {
        rc = brim_sim_parse_u32(flag, items[i], min, max, &v[i], errbuf);
        for (j = 0; rc == 0 && j < i; j++) {
            if (v[j] == v[i]) {
                brim_errfmt(errbuf, "%s: value %s is listed twice", flag,
                            items[i]);
                rc = BRIM_EINVAL;
            }
        }
        if (rc != 0) {
            brim_free(items);
            brim_free(v);
            return rc;
        }
    }
    brim_free(items);
    *out = v;
    *n = count;
    return 0;
}

int
brim_sim_parse_eps_list(const char *flag, const char *text,
                        struct brim_sim_eps **out, size_t *n,
                        char errbuf[BRIM_ERRBUF_LEN])
{
    char(*items)[BRIM_SIM_ITEM_MAX];
    char                 why[BRIM_ERRBUF_LEN];
    struct brim_sim_eps *e;
    size_t               count, i, j;
    int                  rc;

    rc = sim_split(flag, text, &items, &count, errbuf);
    if (rc != 0) {
        return rc;
    }
    e = brim_calloc(count, sizeof(*e));
    if (e == NULL) {
        brim_free(items);
        brim_errfmt(errbuf, "%s: out of memory", flag);
        return BRIM_ENOMEM;
    }
    for (i = 0; i < count; i++) {
        rc = brim_eps_parse(items[i], &e[i].ppm, why);
        if (rc != 0) {
            brim_errfmt(errbuf, "%s: bad value \"%s\": %s", flag, items[i],
                        why);
            break;
        }
        memcpy(e[i].text, items[i], sizeof(e[i].text));
        for (j = 0; j < i; j++) {
            if (e[j].ppm == e[i].ppm) {
                brim_errfmt(errbuf, "%s: \"%s\" and \"%s\" are the same eps",
                            flag, e[j].text, e[i].text);
                rc = BRIM_EINVAL;
            }
        }
        if (rc != 0) {
            break;
        }
    }
    brim_free(items);
    if (rc != 0) {
        brim_free(e);
        return rc;
    }
    *out = e;
    *n = count;
    return 0;
}

int
brim_sim_parse_format(const char *text, enum brim_sim_format *fmt,
                      char errbuf[BRIM_ERRBUF_LEN])
{
    if (strcmp(text, "table") == 0) {
        *fmt = BRIM_SIM_FORMAT_TABLE;
    } else if (strcmp(text, "json") == 0) {
        *fmt = BRIM_SIM_FORMAT_JSON;
    } else if (strcmp(text, "csv") == 0) {
        *fmt = BRIM_SIM_FORMAT_CSV;
    } else {
        brim_errfmt(errbuf,
                    "--format: bad value \"%.40s\": expected table, "
                    "json or csv",
                    text);
        return BRIM_EINVAL;
    }
    return 0;
}

uint64_t
brim_sim_seed(uint32_t model, const uint64_t *v, size_t nv)
{
    uint64_t state;
    size_t   i;

    state = model;
    state = brim_splitmix64(&state);
    for (i = 0; i < nv; i++) {
        state ^= v[i];
        state = brim_splitmix64(&state);
    }
    return state;
}

unsigned
brim_sim_default_threads(void)
{
    long n;

    n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) {
        return 1;
    }
    return n > 16 ? 16u : (unsigned) n;
}

double
brim_sim_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}
