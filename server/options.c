/*
 * server/options.c - a daemon's options from its table (options.h): the
 * getopt_long array is made from the table, the config file is read line
 * by line against it, and --help is printed from it, wrapped to 79
 * columns.
 */
#include "server/options.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/parse.h"
#include "common/units.h"
#include "server/guard.h"
#include "server/log.h"

#define OPT_HELP_COL 25   /* where help text starts */
#define OPT_WIDTH 79      /* --help line width */
#define OPT_LINE_MAX 4096 /* a config file line */

/* ---- setters ---- */

const char *
brim_option_u32(void *cfg, const struct brim_option *o, const char *arg,
                char errbuf[BRIM_ERRBUF_LEN])
{
    uint32_t v;

    BRIM_ASSERT(o->max <= UINT32_MAX);
    if (brim_parse_u32(arg, (uint32_t) o->min, (uint32_t) o->max, &v) != 0) {
        brim_errfmt(errbuf,
                    "\"%.64s\" is not a whole number from %" PRIu64
                    " to %" PRIu64,
                    arg, o->min, o->max);
        return errbuf;
    }
    *(uint32_t *) brim_option_field(cfg, o) = v;
    return NULL;
}

const char *
brim_option_pow2_u32(void *cfg, const struct brim_option *o, const char *arg,
                     char errbuf[BRIM_ERRBUF_LEN])
{
    uint32_t v;

    BRIM_ASSERT(o->max <= UINT32_MAX);
    /* "7" is a whole number: saying so would mislead, so every refusal
     * names the one rule. */
    if (brim_parse_u32(arg, (uint32_t) o->min, (uint32_t) o->max, &v) != 0
        || (v & (v - 1)) != 0)
    {
        brim_errfmt(errbuf,
                    "%.64s is not a power of two from %" PRIu64 " to %" PRIu64,
                    arg, o->min, o->max);
        return errbuf;
    }
    *(uint32_t *) brim_option_field(cfg, o) = v;
    return NULL;
}

const char *
brim_option_u64(void *cfg, const struct brim_option *o, const char *arg,
                char errbuf[BRIM_ERRBUF_LEN])
{
    uint64_t v;

    if (brim_parse_u64(arg, o->min, o->max, &v) != 0) {
        brim_errfmt(errbuf,
                    "\"%.64s\" is not a whole number from %" PRIu64
                    " to %" PRIu64,
                    arg, o->min, o->max);
        return errbuf;
    }
    *(uint64_t *) brim_option_field(cfg, o) = v;
    return NULL;
}

const char *
brim_option_str(void *cfg, const struct brim_option *o, const char *arg,
                char errbuf[BRIM_ERRBUF_LEN])
{
    size_t n = strlen(arg);

    if (n == 0 || n >= o->max) {
        brim_errfmt(errbuf, "\"%.64s\" is %zu bytes; 1 to %" PRIu64 " allowed",
                    arg, n, o->max - 1);
        return errbuf;
    }
    memcpy(brim_option_field(cfg, o), arg, n + 1);
    return NULL;
}

const char *
brim_option_flag(void *cfg, const struct brim_option *o, const char *arg,
                 char errbuf[BRIM_ERRBUF_LEN])
{
    int *field = brim_option_field(cfg, o);

    /* On the command line a flag has no value; in a config file "NAME",
     * "NAME yes|true|1" or "NAME no|false|0". */
    if (arg == NULL || *arg == '\0' || strcmp(arg, "yes") == 0
        || strcmp(arg, "true") == 0 || strcmp(arg, "1") == 0)
    {
        *field = 1;
    } else if (strcmp(arg, "no") == 0 || strcmp(arg, "false") == 0
               || strcmp(arg, "0") == 0)
    {
        *field = 0;
    } else {
        brim_errfmt(errbuf, "\"%.32s\" is not yes or no", arg);
        return errbuf;
    }
    return NULL;
}

/* ---- --help ---- */

void
brim_options_usage(FILE *out, const struct brim_option *table,
                   const char *synopsis, const char *notes)
{
    const struct brim_option *o;
    char                      head[96], text[1024], wrapped[2048];
    int                       n;

    fputs(synopsis, out);
    for (o = table; o->name != NULL; o++) {
        n = snprintf(head, sizeof(head), "  --%s%s%s", o->name,
                     o->arg != NULL ? " " : "", o->arg != NULL ? o->arg : "");
        snprintf(text, sizeof(text), "%s%s%s%s", o->help,
                 o->def != NULL ? " (default " : "",
                 o->def != NULL ? o->def : "", o->def != NULL ? ")" : "");
        fputs(head, out);
        if (n + 1 >= OPT_HELP_COL) {
            fprintf(out, "\n%*s", OPT_HELP_COL, "");
        } else {
            fprintf(out, "%*s", OPT_HELP_COL - n, "");
        }
        fprintf(out, "%s\n",
                brim_wrap_text(text, OPT_HELP_COL, OPT_HELP_COL, OPT_WIDTH,
                               wrapped, sizeof(wrapped)));
    }
    fprintf(out, "  --help%*sthis text\n", OPT_HELP_COL - 8, "");
    if (notes != NULL) {
        fputs(notes, out);
    }
}

/* ---- applying a value ---- */

static const struct brim_option *
options_find(const struct brim_option *table, const char *name)
{
    const struct brim_option *o;

    for (o = table; o->name != NULL; o++) {
        if (strcmp(o->name, name) == 0) {
            return o;
        }
    }
    return NULL;
}

int
brim_options_read_file(const struct brim_option *table, void *cfg,
                       const char *path, const char *prog)
{
    const struct brim_option *o;
    FILE                     *f;
    char                      line[OPT_LINE_MAX], *name, *val, *end;
    char                      errbuf[BRIM_ERRBUF_LEN];
    const char               *why;
    int                       lineno = 0, rc = 0;

    f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "%s: --config %s: %s\n", prog, path, strerror(errno));
        return -1;
    }
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        line[strcspn(line, "#\r\n")] = '\0';
        name = line + strspn(line, " \t");
        if (*name == '\0') {
            continue;
        }
        val = name + strcspn(name, " \t=");
        if (*val != '\0') {
            *val++ = '\0';
            val += strspn(val, " \t=");
        }
        end = val + strlen(val);
        while (end > val && (end[-1] == ' ' || end[-1] == '\t')) {
            *--end = '\0';
        }
        o = options_find(table, name);
        if (o == NULL || strcmp(o->name, "config") == 0
            || (o->arg != NULL && *val == '\0'))
        {
            fprintf(stderr,
                    "%s: %s:%d: unknown option or missing value "
                    "\"%s\"\n",
                    prog, path, lineno, name);
            rc = -1;
            break;
        }
        errbuf[0] = '\0';
        why = o->set(cfg, o, val, errbuf);
        if (why != NULL) {
            fprintf(stderr, "%s: %s:%d: %s: %s\n", prog, path, lineno, o->name,
                    why);
            rc = -1;
        }
    }
    if (rc == 0 && ferror(f)) {
        fprintf(stderr, "%s: --config %s: cannot read it: %s\n", prog, path,
                strerror(errno));
        rc = -1;
    }
    fclose(f);
    return rc;
}

/* The config files named in ARGV, applied first. */
static int
options_config_first(const struct brim_option *table, void *cfg, int argc,
                     char **argv, const char *prog)
{
    int i;

    if (options_find(table, "config") == NULL) {
        return 0;
    }
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            break;
        }
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            if (brim_options_read_file(table, cfg, argv[++i], prog) != 0) {
                return -1;
            }
        } else if (strncmp(argv[i], "--config=", 9) == 0) {
            if (brim_options_read_file(table, cfg, argv[i] + 9, prog) != 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* What getopt_long refused (it returned '?'), said as "PROG: ...": an
 * option given a value it does not take, one missing its value, or one
 * not in TABLE (N entries). ARG is the word refused. */
static void
options_getopt_error(const struct brim_option *table, size_t n, const char *arg,
                     const char *prog)
{
    if (optopt >= 256 && optopt < 256 + (int) n) {
        const struct brim_option *o = &table[optopt - 256];

        if (o->arg == NULL) {
            fprintf(stderr, "%s: --%s takes no value (given \"%s\")\n", prog,
                    o->name, arg);
        } else {
            fprintf(stderr, "%s: --%s needs a value (%s)\n", prog, o->name,
                    o->arg);
        }
    } else if (optopt == 'h') {
        fprintf(stderr, "%s: --help takes no value\n", prog);
    } else if (optopt > 0 && optopt < 256) {
        /* A short option: ARG may be the word before it ("-xy" is
         * refused at its 'x' before getopt moves past it). */
        fprintf(stderr,
                "%s: unknown option \"-%c\" (options are long: "
                "--NAME)\n",
                prog, optopt);
    } else {
        fprintf(stderr, "%s: unknown option \"%s\"\n", prog, arg);
    }
}

int
brim_options_parse(const struct brim_option *table, void *cfg, int argc,
                   char **argv, const char *prog, const char *synopsis,
                   const char *notes)
{
    const struct brim_option *o;
    struct option            *longopts;
    char                      errbuf[BRIM_ERRBUF_LEN];
    const char               *why;
    size_t                    n = 0, i;
    int                       ch, rc = 0;

    for (o = table; o->name != NULL; o++) {
        n++;
    }
    if (options_config_first(table, cfg, argc, argv, prog) != 0) {
        return -1;
    }
    longopts = brim_calloc(n + 2, sizeof(*longopts));
    if (longopts == NULL) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    for (i = 0; i < n; i++) {
        longopts[i].name = table[i].name;
        longopts[i].has_arg =
            table[i].arg != NULL ? required_argument : no_argument;
        longopts[i].val = 256 + (int) i;
    }
    longopts[n].name = "help";
    longopts[n].val = 'h';
    optind = 1;
    opterr = 0; /* said below, as PROG, not as argv[0]'s path */
    while (rc == 0 && (ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
    {
        if (ch == 'h') {
            brim_options_usage(stdout, table, synopsis, notes);
            rc = 1;
            break;
        }
        if (ch < 256 || ch >= 256 + (int) n) {
            options_getopt_error(table, n, argv[optind - 1], prog);
            rc = -1;
            break;
        }
        o = &table[ch - 256];
        if (strcmp(o->name, "config") == 0) {
            continue; /* read first, above */
        }
        errbuf[0] = '\0';
        why = o->set(cfg, o, optarg, errbuf);
        if (why != NULL) {
            fprintf(stderr, "%s: --%s: %s\n", prog, o->name, why);
            rc = -1;
        }
    }
    if (rc == 0 && optind < argc) {
        fprintf(stderr, "%s: unexpected argument \"%s\"\n", prog, argv[optind]);
        rc = -1;
    }
    if (rc < 0) {
        fprintf(stderr, "%s: see %s --help\n", prog, prog);
    }
    brim_free(longopts);
    return rc;
}

const char *
brim_option_log_level(void *cfg, const struct brim_option *o, const char *arg,
                      char errbuf[BRIM_ERRBUF_LEN])
{
    enum brim_log_level lvl;

    if (brim_log_level_parse(arg, &lvl) != 0) {
        brim_errfmt(errbuf, "\"%.32s\" is not error, warn, info or debug", arg);
        return errbuf;
    }
    *(int *) brim_option_field(cfg, o) = (int) lvl;
    return NULL;
}

const char *
brim_option_secret_path(void *cfg, const struct brim_option *o, const char *arg,
                        char errbuf[BRIM_ERRBUF_LEN])
{
    (void) errbuf;
    return brim_guard_path_set(brim_option_field(cfg, o), (size_t) o->max, arg);
}

const char *
brim_option_config(void *cfg, const struct brim_option *o, const char *arg,
                   char errbuf[BRIM_ERRBUF_LEN])
{
    (void) cfg, (void) o, (void) arg, (void) errbuf;
    return NULL;
}
