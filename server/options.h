/*
 * server/options.h - both daemons' options from one table each, in the
 * style of nginx's ngx_command_t and twemproxy's conf_commands[]: a row
 * per option names it, its value, the setter that parses the value into
 * a field of the daemon's config struct, its default and its help. The
 * command line (getopt_long), the config file ("name value" lines) and
 * --help are all driven by the table, so they cannot disagree.
 */
#ifndef BRIM_SERVER_OPTIONS_H
#define BRIM_SERVER_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <brim/status.h>

struct brim_option;

/*
 * Parse ARG (borrowed; NULL for a flag given on the command line) for
 * option O into the config struct CFG. Returns NULL when it is taken, or
 * a one-line reason (static, or written into ERRBUF) that the caller
 * prints after "PROG: --NAME: ".
 */
typedef const char *(*brim_option_set_fn)(void                     *cfg,
                                          const struct brim_option *o,
                                          const char               *arg,
                                          char errbuf[BRIM_ERRBUF_LEN]);

/* One option. A table ends with a row whose NAME is NULL. */
struct brim_option {
    const char        *name;   /* long name without "--" */
    const char        *arg;    /* its value in --help ("MS"); NULL: a
                                   flag (yes or no in a config file) */
    brim_option_set_fn set;    /* parses the value into the field */
    size_t             offset; /* the field in the config struct */
    uint64_t           min;    /* numbers: least value */
    uint64_t           max;    /* numbers: most value; strings: the
                                   field's size in bytes */
    const char        *def;    /* the default as --help shows it, or
                                   NULL (none said) */
    const char        *help;   /* what it does; wrapped by --help */
};

/* Setters for plain fields: a uint32_t or uint64_t in [MIN, MAX], a
 * string of at most MAX - 1 bytes, and an int flag (1 when given; "yes",
 * "true", "1", "no", "false", "0" in a file). */
const char *brim_option_u32(void *cfg, const struct brim_option *o,
                            const char *arg, char errbuf[BRIM_ERRBUF_LEN]);
const char *brim_option_u64(void *cfg, const struct brim_option *o,
                            const char *arg, char errbuf[BRIM_ERRBUF_LEN]);
const char *brim_option_str(void *cfg, const struct brim_option *o,
                            const char *arg, char errbuf[BRIM_ERRBUF_LEN]);

/* A uint32_t that is a power of two in [MIN, MAX] (--partitions); the
 * refusal names the value as given and the range. */
const char *brim_option_pow2_u32(void *cfg, const struct brim_option *o,
                                 const char *arg, char errbuf[BRIM_ERRBUF_LEN]);

/* The log level named by ARG ("error", "warn", "info", "debug") into the
 * int field of O (an enum brim_log_level); a message for any other. */
const char *brim_option_log_level(void *cfg, const struct brim_option *o,
                                  const char *arg,
                                  char        errbuf[BRIM_ERRBUF_LEN]);

/* A secret file's path into the char[O->max] field of O, checked by
 * brim_guard_path_set() (server/guard.h). */
const char *brim_option_secret_path(void *cfg, const struct brim_option *o,
                                    const char *arg,
                                    char        errbuf[BRIM_ERRBUF_LEN]);

/* --config FILE on the command line: nothing to set, the file is read
 * before the other options (brim_options_parse). */
const char *brim_option_config(void *cfg, const struct brim_option *o,
                               const char *arg, char errbuf[BRIM_ERRBUF_LEN]);
const char *brim_option_flag(void *cfg, const struct brim_option *o,
                             const char *arg, char errbuf[BRIM_ERRBUF_LEN]);

/* The field of option O in CFG (for setters). */
static inline void *
brim_option_field(void *cfg, const struct brim_option *o)
{
    return (char *) cfg + o->offset;
}

/*
 * Print PROG's usage to OUT: SYNOPSIS (the usage lines, copied as they
 * are), then one entry per option of TABLE with its help wrapped under it
 * and its default, then NOTES (NULL: none).
 */
void brim_options_usage(FILE *out, const struct brim_option *table,
                        const char *synopsis, const char *notes);

/*
 * Apply the options of ARGV (ARGC entries, ARGV[0] the program) to CFG by
 * TABLE. A "--config FILE" in ARGV (when TABLE has a "config" row) is read
 * first, so that the command line wins; "--help" prints the usage (with
 * SYNOPSIS and NOTES) to stdout. Refusals are printed to stderr as "PROG:
 * --NAME: why" (PROG: the daemon's name) with a hint to --help. Returns 0,
 * 1 when --help was printed (exit 0), or -1 on a usage error (exit 2).
 */
int brim_options_parse(const struct brim_option *table, void *cfg, int argc,
                       char **argv, const char *prog, const char *synopsis,
                       const char *notes);

/*
 * Apply the config file PATH ("name value" per line, names as the long
 * options, "#" comments, "=" allowed between) to CFG by TABLE. Returns 0,
 * or -1 after printing "PROG: PATH:LINE: ..." to stderr.
 */
int brim_options_read_file(const struct brim_option *table, void *cfg,
                           const char *path, const char *prog);

#endif /* BRIM_SERVER_OPTIONS_H */
