/*
 * client/brimctl/ctl.h - brimctl's command table and shared state. main.c
 * parses the command line against the table (global options anywhere,
 * then each command's own options and arguments) and cmd.c runs the
 * commands over libbrim (cluster.c: nodes, leave, plan and the cluster's
 * stats over <brim/admin.h>; import.c: import and verify; records.c reads
 * their input; progress.c draws progress and catches signals for the
 * commands that run a while; out.c, below them all, prints and turns
 * failures into exit statuses). brimctl uses libbrim's public headers
 * and common/ only.
 * A new command is one row in brim_ctl_cmds[] and one function; a new
 * option is one row in main.c's ctl_opts[] and, unless global, a bit in
 * the commands that accept it.
 */
#ifndef BRIM_CLIENT_BRIMCTL_CTL_H
#define BRIM_CLIENT_BRIMCTL_CTL_H

#include <stdint.h>

#include <jansson.h>

#include <brim.h>

/* Exit statuses (also listed in --help and docs/client.md). */
#define BRIM_CTL_EXIT_OK 0   /* done */
#define BRIM_CTL_EXIT_NO 1   /* the server said no: not found, ... */
#define BRIM_CTL_EXIT_CONN 2 /* could not talk to the server */
/* cluster mode: the key's partition has no node (no nodes in the cluster) */
#define BRIM_CTL_EXIT_NONODES 3
#define BRIM_CTL_EXIT_USAGE 64 /* bad command line (EX_USAGE) */

/* Default node address when neither --server nor BRIM_SERVER says one. */
#define BRIM_CTL_DEFAULT_SERVER "127.0.0.1:11311"

/* Options, as bits of a command's ACCEPTS mask. */
enum brim_ctl_opt {
    BRIM_CTL_OPT_TTL = 1u << 0,       /* --ttl S */
    BRIM_CTL_OPT_FLAGS = 1u << 1,     /* --flags F */
    BRIM_CTL_OPT_JSON = 1u << 2,      /* --json */
    BRIM_CTL_OPT_DELAY = 1u << 3,     /* --delay S */
    BRIM_CTL_OPT_FORCE = 1u << 4,     /* --force */
    BRIM_CTL_OPT_WEIGHT = 1u << 5,    /* --weight W */
    BRIM_CTL_OPT_FORMAT = 1u << 6,    /* --format deb822|jsonl */
    BRIM_CTL_OPT_KEY_FIELD = 1u << 7, /* --key-field NAME */
    BRIM_CTL_OPT_PREFIX = 1u << 8,    /* --prefix STR */
    BRIM_CTL_OPT_PROGRESS = 1u << 9,  /* --progress */
    BRIM_CTL_OPT_LOOP = 1u << 10,     /* --loop */
    BRIM_CTL_OPT_DURATION = 1u << 11, /* --duration S */
    BRIM_CTL_OPT_RATE = 1u << 12,     /* --rate R */
    BRIM_CTL_OPT_WAIT = 1u << 13,     /* --wait */
    BRIM_CTL_OPT_TIMEOUT = 1u << 14,  /* --timeout S */
    BRIM_CTL_OPT_WATCH = 1u << 15     /* --watch [S] */
};

/* Input formats of import and verify (--format). */
enum brim_ctl_format {
    BRIM_CTL_FORMAT_DEB822 = 0, /* Debian control records */
    BRIM_CTL_FORMAT_JSONL       /* {"key": ..., "value": ...} a line */
};

/* Defaults of the options that have one. */
#define BRIM_CTL_DEFAULT_KEY_FIELD "Package" /* --key-field, deb822 */
#define BRIM_CTL_DEFAULT_PREFIX "pkg:"       /* --prefix, deb822 */
#define BRIM_CTL_DEFAULT_RATE 2000           /* --rate, reads/s */
#define BRIM_CTL_DEFAULT_TIMEOUT_S 120       /* leave --timeout */
#define BRIM_CTL_DEFAULT_WATCH_S 1.0         /* stats --watch */

/* What the command line said, and the connection once made. */
struct brim_ctl {
    const char         *server;      /* --server or BRIM_SERVER */
    const char         *coord;       /* --coordinator or BRIM_COORDINATOR:
                                          cluster mode when set */
    const char         *secret_file; /* --secret-file or BRIM_SECRET_FILE:
                                       the cluster secret; NULL: none */
    const char         *client_secret_file; /* --client-secret-file or
                                       BRIM_CLIENT_SECRET_FILE: the
                                       clients' secret; NULL: none */
    int                 admin;              /* connected with role admin */
    int                 force;              /* --force */
    uint32_t            weight_ppm;         /* --weight, millionths; 0: 1.0 */
    uint32_t            timeout_ms;         /* --timeout-ms; 0: libbrim's */
    uint32_t            ttl_s;              /* --ttl */
    uint32_t            flags;              /* --flags */
    uint32_t            delay_s;            /* --delay */
    int                 json;               /* --json */
    int                 format;             /* --format: enum brim_ctl_format */
    const char         *key_field;          /* --key-field, or NULL: default */
    const char         *prefix;             /* --prefix, or NULL: the format's
                                          default ("pkg:" or "") */
    int                 progress;           /* --progress: even without a TTY */
    int                 loop;               /* verify --loop */
    double              duration_s;         /* --duration, 0: until a signal */
    uint32_t            rate;               /* --rate, reads/s; 0: default */
    int                 wait;               /* leave --wait */
    double              timeout_s;          /* --timeout, 0: default */
    double              watch_s;            /* stats --watch period, 0: off */
    int                 argc;               /* the command's arguments */
    char              **argv;               /* borrowed from main's argv */
    struct brim_client *client;             /* connected before run() */
};

/* One command of brimctl. */
struct brim_ctl_cmd {
    const char *name;     /* "get" */
    const char *args;     /* usage of its arguments, "KEY" */
    const char *summary;  /* one line for --help */
    const char *help;     /* more lines for "CMD --help" */
    int         min_args; /* positional arguments */
    int         max_args;
    unsigned    accepts;              /* BRIM_CTL_OPT_* bits */
    int         admin;                /* connects with role admin */
    int (*run)(struct brim_ctl *ctl); /* returns a BRIM_CTL_EXIT_* */
};

/* The commands, ending with a row whose NAME is NULL (cmd.c). */
extern const struct brim_ctl_cmd brim_ctl_cmds[];

/*
 * The exit status and a message on stderr for the libbrim failure RC of
 * WHAT ("get foo"): BRIM_CTL_EXIT_CONN for transport errors (naming the
 * server's address) and for BRIM_ENOTLEADER (no coordinator of the list
 * leads: an election), BRIM_CTL_EXIT_USAGE for BRIM_EINVAL (a key of 0 or
 * over the node's limit; the message names its length and the limit),
 * BRIM_CTL_EXIT_NO for the server's answers.
 */
int brim_ctl_fail(struct brim_ctl *ctl, const char *what, int rc);

/*
 * Non-zero when RC means the server could not be talked to (timed out,
 * refused, closed, a malformed reply, an outcome unknown): what
 * brim_ctl_fail() turns into BRIM_CTL_EXIT_CONN.
 */
int brim_ctl_conn_error(int rc);

/* The address brimctl talks to: the coordinator's or the node's. */
const char *brim_ctl_addr(const struct brim_ctl *ctl);

/* A command NAME that needs the coordinator: 0 when ctl->coord is set,
 * else BRIM_CTL_EXIT_USAGE after saying so on stderr. */
int brim_ctl_need_coord(const struct brim_ctl *ctl, const char *name);

/*
 * What CTL proves and as whom, for a message, into BUF (LEN bytes):
 * "as admin with the cluster secret of FILE", "as a client with the
 * clients' secret of FILE" or "as a client, with no secret". Returns BUF.
 */
const char *brim_ctl_auth_text(const struct brim_ctl *ctl, char *buf,
                               size_t len);

/* A line of advice (ending in a newline) after a refused proof or a
 * refused op for want of one, given what CTL tried; "" when none. */
const char *brim_ctl_auth_hint(const struct brim_ctl *ctl);

/*
 * KEY (LEN bytes, borrowed) for a message, into OUT (room for
 * BRIM_CTL_KEY_SHOWN + 4 bytes): printable bytes as they are, others as
 * '?', cut after BRIM_CTL_KEY_SHOWN bytes with "..."; "\"\"" for the empty
 * key. Returns OUT, or a static string.
 */
#define BRIM_CTL_KEY_SHOWN 64
const char *brim_ctl_show_key(const char *key, size_t len,
                              char out[BRIM_CTL_KEY_SHOWN + 4]);

/* The commands of import.c: exit statuses as for every run(). */
int brim_ctl_import(struct brim_ctl *ctl);
int brim_ctl_verify(struct brim_ctl *ctl);

/* The commands of cluster.c (nodes, leave, plan): exit statuses as for
 * every run(). */
int brim_ctl_nodes(struct brim_ctl *ctl);
int brim_ctl_leave(struct brim_ctl *ctl);
int brim_ctl_plan(struct brim_ctl *ctl);

/* One round of the cluster's stats, printed: --json as the coordinator
 * sends them (COMPACT: on one line), else aligned. Returns the exit
 * status. */
int brim_ctl_cluster_stats(struct brim_ctl *ctl, int compact);

/* migrations: the streams of every node's last migration out, with rate
 * and ETA, and why a change waits (migrations.c). Returns the exit
 * status. */
int brim_ctl_migrations(struct brim_ctl *ctl);

struct brim_cluster_stats;

/*
 * The streams of every live member of ST (the coordinator's view), asked
 * of each node directly with ctl's secret and role: a new JSON array of
 * one object per sender and receiver (the rows of `brimctl migrations`),
 * the caller's to free. A node that cannot be asked adds {"node", "error"}
 * to ERRS (borrowed) and is skipped. NULL when out of memory.
 */
json_t *brim_ctl_streams_json(struct brim_ctl                 *ctl,
                              const struct brim_cluster_stats *st,
                              json_t                          *errs);

/* ---- out.c: printing ---- */

/* Non-zero when the statistic NAME ("store.bytes", "memory_used") counts
 * bytes: its name holds "bytes" or starts with "memory_", or it is
 * buffer_limit (the part after the last '.' is what counts). */
int brim_ctl_is_bytes(const char *name);

/*
 * The text to print for the statistic NAME whose value is TEXT: when NAME
 * counts bytes (brim_ctl_is_bytes()) and TEXT is a whole number of 1024
 * or more, "TEXT (11.8 MiB)" written into BUF (LEN bytes, cut to fit);
 * otherwise TEXT itself. Both borrowed; returns BUF or TEXT.
 */
const char *brim_ctl_value_text(const char *name, const char *text, char *buf,
                                size_t len);

/*
 * Print J (borrowed) as indented JSON, or on one line when COMPACT. A
 * NULL J (out of memory) prints a message instead. Returns
 * BRIM_CTL_EXIT_OK, or BRIM_CTL_EXIT_NO when J cannot be formatted.
 */
int brim_ctl_print_json(const json_t *j, int compact);

/* Print the array of objects ROWS as an aligned table, columns in the
 * first row's order, each line after INDENT; numbers as integers or fixed
 * decimals, byte counts with their units (brim_ctl_value_text()). */
void brim_ctl_print_table(const json_t *rows, const char *indent);

/* Print the object OBJ as aligned "name value" lines: nested objects as
 * PREFIX + name., arrays of objects as tables, values as in
 * brim_ctl_print_table(). */
void brim_ctl_print_obj(const json_t *obj, const char *prefix);

/* ---- progress.c: what commands that run a while share ---- */

/* How progress is shown (brim_ctl_progress_init()). */
enum brim_ctl_progress_mode {
    BRIM_CTL_PROGRESS_OFF = 0, /* not at all */
    BRIM_CTL_PROGRESS_BAR,     /* one line redrawn, at most 10x/s */
    BRIM_CTL_PROGRESS_LINES    /* a new line each second (no TTY) */
};

/* Progress on stderr of one long command. */
struct brim_ctl_progress {
    int    mode;    /* enum brim_ctl_progress_mode */
    double start_s; /* brim_ctl_now() at init */
    double next_s;  /* no drawing before this */
    int    drawn;   /* BAR: a line is on the screen */
};

/*
 * Prepare P: a bar when stderr is a terminal; else a line a second when
 * FORCE (--progress) or LINES_WITHOUT_TTY is set; else nothing.
 */
void brim_ctl_progress_init(struct brim_ctl_progress *p, int force,
                            int lines_without_tty);

/* Non-zero when brim_ctl_progress_draw() would draw now (cheap). */
int brim_ctl_progress_due(const struct brim_ctl_progress *p);

/*
 * Draw "[#####.....]  45%  TEXT" (FRAC in [0, 1]; a negative FRAC draws
 * no bar) with TEXT from printf FMT, when due: a bar at most every 0.1 s,
 * a line at most every second. FINAL draws whatever the time and ends the
 * bar's line.
 */
void brim_ctl_progress_draw(struct brim_ctl_progress *p, double frac, int final,
                            const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Take a bar off the screen before another message goes to stderr; it is
 * drawn again at the next brim_ctl_progress_draw().
 */
void brim_ctl_progress_clear(struct brim_ctl_progress *p);

/* Seconds since P began. */
double brim_ctl_progress_elapsed(const struct brim_ctl_progress *p);

/* A monotonic clock, in seconds. */
double brim_ctl_now(void);

/*
 * Catch SIGINT and SIGTERM from now on: the first sets the flag that
 * brim_ctl_stopped() reads (and interrupts brim_ctl_sleep()); the process
 * is not ended by them. SIGPIPE is ignored too (stdout may be a pipe).
 */
void brim_ctl_catch_signals(void);

/* The signal caught since brim_ctl_catch_signals(), or 0. */
int brim_ctl_stopped(void);

/* Sleep SECONDS (> 0), or less when a caught signal arrives. */
void brim_ctl_sleep(double seconds);

#endif /* BRIM_CLIENT_BRIMCTL_CTL_H */
