/*
 * client/brimctl/main.c - brimctl's command line: global options (they may
 * stand anywhere), the command, its options and arguments, --help at every
 * level; then one connection through libbrim and the command's run().
 * Exit statuses: 0 done, 1 the server said no (not found, not stored...),
 * 2 the server could not be reached or did not answer, 64 bad usage
 * (options, arguments, a key of 0 bytes or over the node's limit).
 */
#include "client/brimctl/ctl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <brim.h>

#include "common/parse.h"
#include "common/units.h"

/* One option: global (BIT 0) or accepted by the commands naming BIT. */
struct ctl_opt {
    const char *name; /* "--ttl" */
    const char *arg;  /* its value's name; NULL: a flag */
    unsigned    bit;  /* enum brim_ctl_opt, 0: global */
    const char *help; /* one line */
};

static const struct ctl_opt ctl_opts[] = {
    {"--server", "HOST:PORT", 0,
     "the node to talk to (default $BRIM_SERVER, else " BRIM_CTL_DEFAULT_SERVER
     ")"},
    {"--coordinator", "SEED[,SEED...]", 0,
     "cluster mode: nodes or coordinators (HOST:PORT), any of which "
     "serves the map (default $BRIM_COORDINATOR); keys go to their owner "
     "nodes; nodes, leave, plan and the cluster's stats ask a coordinator "
     "(a seed, or one the nodes name) and are sent on to the leader a "
     "follower names"},
    {"--timeout-ms", "MS", 0,
     "connect and request timeout in milliseconds (default 1000 / 5000)"},
    {"--secret-file", "FILE", 0,
     "the cluster secret, proven as admin: needed for leave, plan and "
     "flush on a cluster that has one, and serves any command (default "
     "$BRIM_SECRET_FILE)"},
    {"--client-secret-file", "FILE", 0,
     "the clients' secret (brim-node --client-secret-file), proven as a "
     "client: data commands (default $BRIM_CLIENT_SECRET_FILE)"},
    {"--ttl", "S", BRIM_CTL_OPT_TTL,
     "time to live: seconds, 0 none, above 30 days a Unix time"},
    {"--flags", "F", BRIM_CTL_OPT_FLAGS, "32-bit client flags"},
    {"--json", NULL, BRIM_CTL_OPT_JSON, "print JSON"},
    {"--delay", "S", BRIM_CTL_OPT_DELAY, "flush after S seconds"},
    {"--force", NULL, BRIM_CTL_OPT_FORCE,
     "leave: also the last node (the cluster then has none)"},
    {"--weight", "W", BRIM_CTL_OPT_WEIGHT,
     "plan join: the node's weight, 0.001 to 1000 (default 1)"},
    {"--format", "FMT", BRIM_CTL_OPT_FORMAT,
     "import, verify: deb822 (default) or jsonl"},
    {"--key-field", "NAME", BRIM_CTL_OPT_KEY_FIELD,
     "deb822: the field whose text is the key "
     "(default " BRIM_CTL_DEFAULT_KEY_FIELD ")"},
    {"--prefix", "STR", BRIM_CTL_OPT_PREFIX,
     "put STR before every key (default \"" BRIM_CTL_DEFAULT_PREFIX
     "\" for deb822, \"\" for jsonl)"},
    {"--progress", NULL, BRIM_CTL_OPT_PROGRESS,
     "progress on stderr even when it is not a terminal (a line a second)"},
    {"--loop", NULL, BRIM_CTL_OPT_LOOP,
     "verify: read random keys until --duration or SIGINT/SIGTERM"},
    {"--duration", "S", BRIM_CTL_OPT_DURATION,
     "verify --loop: stop after S seconds (default: at a signal)"},
    {"--rate", "R", BRIM_CTL_OPT_RATE,
     "verify --loop: at most R reads a second (default 2000)"},
    {"--wait", NULL, BRIM_CTL_OPT_WAIT,
     "leave: wait until the node is gone and no migration runs"},
    {"--timeout", "S", BRIM_CTL_OPT_TIMEOUT,
     "leave --wait: give up after S seconds, exit 2 (default 120)"},
    {"--watch", "[S]", BRIM_CTL_OPT_WATCH,
     "stats: print again every S seconds (default 1) until SIGINT"},
};

#define CTL_NOPTS (sizeof(ctl_opts) / sizeof(ctl_opts[0]))

/*
 * Parse the decimal TEXT of option NAME into *OUT: MIN .. UINT32_MAX
 * (common/parse.h reads it). 0, or -1 after a message that names the
 * range accepted.
 */
static int
ctl_parse_u32(const char *name, const char *text, uint32_t min, uint32_t *out)
{
    if (brim_parse_u32(text, min, UINT32_MAX, out) != 0) {
        fprintf(stderr,
                "brimctl: %s: \"%s\" is not a number %" PRIu32 " .. %" PRIu32
                "\n",
                name, text, min, UINT32_MAX);
        return -1;
    }
    return 0;
}

/*
 * Parse the decimal TEXT of option NAME into *OUT: a number MIN .. MAX
 * (fractions allowed). 0, or -1 after a message that names the range.
 */
static int
ctl_parse_num(const char *name, const char *text, double min, double max,
              double *out)
{
    if (brim_parse_double(text, min, max, out) != 0) {
        fprintf(stderr, "brimctl: %s: \"%s\" is not a number %g .. %g\n", name,
                text, min, max);
        return -1;
    }
    return 0;
}

/* The int of CTL that the flag (valueless) option BIT sets. */
static int *
ctl_flag(struct brim_ctl *ctl, unsigned bit)
{
    switch (bit) {
    case BRIM_CTL_OPT_FORCE:
        return &ctl->force;
    case BRIM_CTL_OPT_PROGRESS:
        return &ctl->progress;
    case BRIM_CTL_OPT_LOOP:
        return &ctl->loop;
    case BRIM_CTL_OPT_WAIT:
        return &ctl->wait;
    default:
        return &ctl->json;
    }
}

/* Store the value TEXT of option O into CTL; 0 or -1. */
static int
ctl_set_opt(struct brim_ctl *ctl, const struct ctl_opt *o, const char *text)
{
    double w;

    if (strcmp(o->name, "--server") == 0) {
        ctl->server = text;
        ctl->coord = NULL; /* the last of the two given wins */
        return 0;
    }
    if (strcmp(o->name, "--coordinator") == 0) {
        ctl->coord = text;
        return 0;
    }
    if (strcmp(o->name, "--secret-file") == 0) {
        ctl->secret_file = text;
        return 0;
    }
    if (strcmp(o->name, "--client-secret-file") == 0) {
        ctl->client_secret_file = text;
        return 0;
    }
    if (strcmp(o->name, "--timeout-ms") == 0) {
        /* 0 would mean libbrim's defaults: not what was asked for. */
        return ctl_parse_u32(o->name, text, 1, &ctl->timeout_ms);
    }
    if (o->arg == NULL) {
        *ctl_flag(ctl, o->bit) = 1;
        return 0;
    }
    switch (o->bit) {
    case BRIM_CTL_OPT_TTL:
        return ctl_parse_u32(o->name, text, 0, &ctl->ttl_s);
    case BRIM_CTL_OPT_FLAGS:
        return ctl_parse_u32(o->name, text, 0, &ctl->flags);
    case BRIM_CTL_OPT_DELAY:
        return ctl_parse_u32(o->name, text, 0, &ctl->delay_s);
    case BRIM_CTL_OPT_RATE:
        return ctl_parse_u32(o->name, text, 1, &ctl->rate);
    case BRIM_CTL_OPT_WEIGHT:
        if (ctl_parse_num(o->name, text, 0.001, 1000.0, &w) != 0) {
            return -1;
        }
        ctl->weight_ppm = (uint32_t) (w * 1e6 + 0.5);
        return 0;
    case BRIM_CTL_OPT_DURATION:
        return ctl_parse_num(o->name, text, 0.001, 1e7, &ctl->duration_s);
    case BRIM_CTL_OPT_TIMEOUT:
        return ctl_parse_num(o->name, text, 0.001, 1e7, &ctl->timeout_s);
    case BRIM_CTL_OPT_WATCH:
        ctl->watch_s = BRIM_CTL_DEFAULT_WATCH_S;
        return text != NULL
            ? ctl_parse_num(o->name, text, 0.1, 1e7, &ctl->watch_s)
            : 0;
    case BRIM_CTL_OPT_FORMAT:
        ctl->format = strcmp(text, "jsonl") == 0 ? BRIM_CTL_FORMAT_JSONL
                                                 : BRIM_CTL_FORMAT_DEB822;
        if (strcmp(text, "jsonl") != 0 && strcmp(text, "deb822") != 0) {
            fprintf(stderr,
                    "brimctl: --format: \"%s\": want deb822 or "
                    "jsonl\n",
                    text);
            return -1;
        }
        return 0;
    case BRIM_CTL_OPT_KEY_FIELD:
        if (text[0] == '\0' || strpbrk(text, ": \t\n") != NULL) {
            fprintf(stderr,
                    "brimctl: --key-field: \"%s\" is not a field "
                    "name\n",
                    text);
            return -1;
        }
        ctl->key_field = text;
        return 0;
    default: /* BRIM_CTL_OPT_PREFIX */
        ctl->prefix = text;
        return 0;
    }
}

static const struct brim_ctl_cmd *
ctl_find_cmd(const char *name)
{
    const struct brim_ctl_cmd *cmd;

    for (cmd = brim_ctl_cmds; cmd->name != NULL; cmd++) {
        if (strcmp(cmd->name, name) == 0) {
            return cmd;
        }
    }
    return NULL;
}

/* True when ARG reads as a number: an optional sign, then digits and
 * dots, at least one digit ("1", "0.5", "-1"; not "-", "abc", "--json"). */
static int
ctl_looks_numeric(const char *arg)
{
    size_t n;

    arg += arg[0] == '-' || arg[0] == '+';
    n = strspn(arg, "0123456789.");
    return n > 0 && arg[n] == '\0' && strpbrk(arg, "0123456789") != NULL;
}

/* The option named by ARG ("--ttl" or "--ttl=5"), or NULL. */
static const struct ctl_opt *
ctl_find_opt(const char *arg)
{
    size_t i, n;

    n = strcspn(arg, "=");
    for (i = 0; i < CTL_NOPTS; i++) {
        if (strlen(ctl_opts[i].name) == n
            && strncmp(ctl_opts[i].name, arg, n) == 0) {
            return &ctl_opts[i];
        }
    }
    return NULL;
}

/* --help's layout: names from column 2, their text from CTL_HELP_COL,
 * lines at most CTL_HELP_WIDTH columns. */
#define CTL_HELP_COL 23
#define CTL_HELP_WIDTH 79

/* One "  LEFT  TEXT" entry of --help: TEXT wrapped at CTL_HELP_WIDTH and
 * indented to CTL_HELP_COL, on the next line when LEFT is too long. */
static void
ctl_help_line(FILE *f, const char *left, const char *text)
{
    char wrapped[1024];
    int  n;

    n = fprintf(f, "  %s", left);
    if (n + 1 > CTL_HELP_COL) {
        fprintf(f, "\n%*s", CTL_HELP_COL, "");
    } else {
        fprintf(f, "%*s", CTL_HELP_COL - n, "");
    }
    fprintf(f, "%s\n",
            brim_wrap_text(text, CTL_HELP_COL, CTL_HELP_COL, CTL_HELP_WIDTH,
                           wrapped, sizeof(wrapped)));
}

/* Print the options whose bit is in MASK (0: the global ones). */
static void
ctl_print_opts(FILE *f, unsigned mask)
{
    char   left[64];
    size_t i;

    for (i = 0; i < CTL_NOPTS; i++) {
        if ((mask == 0 && ctl_opts[i].bit != 0)
            || (mask != 0 && (ctl_opts[i].bit & mask) == 0))
        {
            continue;
        }
        snprintf(left, sizeof(left), "%s%s%s", ctl_opts[i].name,
                 ctl_opts[i].arg != NULL ? " " : "",
                 ctl_opts[i].arg != NULL ? ctl_opts[i].arg : "");
        ctl_help_line(f, left, ctl_opts[i].help);
    }
}

static void
ctl_usage(FILE *f)
{
    const struct brim_ctl_cmd *cmd;
    char                       left[64];

    fprintf(
        f,
        "usage: brimctl [--server HOST:PORT | --coordinator SEED[,SEED...]]\n"
        "               [--timeout-ms MS] [--secret-file FILE | "
        "--client-secret-file FILE]\n               COMMAND "
        "[ARGS...]\n\ncommands:\n");
    for (cmd = brim_ctl_cmds; cmd->name != NULL; cmd++) {
        snprintf(left, sizeof(left), "%s %s", cmd->name, cmd->args);
        ctl_help_line(f, left, cmd->summary);
    }
    fprintf(f, "\noptions:\n");
    ctl_print_opts(f, 0);
    ctl_help_line(f, "--help, -h",
                  "this text; after a command, that command's");
    fprintf(f,
            "\ncommand options (brimctl COMMAND --help tells which "
            "apply):\n");
    ctl_print_opts(f, ~0u);
    fprintf(f,
            "\nexit status: 0 done, 1 the server said no (not found, not "
            "stored, a secret\nrefused, ...), 2 the server could not be "
            "reached or did not answer, 3 no nodes\nin the cluster (cluster "
            "mode: the key's partition has no owner), 64 bad usage\n(a key "
            "of 0 bytes or over the node's limit too).\n");
}

static void
ctl_cmd_usage(FILE *f, const struct brim_ctl_cmd *cmd)
{
    fprintf(f, "usage: brimctl [global options] %s %s\n\n%s\n", cmd->name,
            cmd->args, cmd->summary);
    if (cmd->help != NULL) {
        fprintf(f, "%s", cmd->help);
    }
    if (cmd->accepts != 0) {
        fprintf(f, "\noptions:\n");
        ctl_print_opts(f, cmd->accepts);
    }
    fprintf(f, "\nglobal options (see brimctl --help):\n");
    ctl_print_opts(f, 0);
}

/* A usage error: the message, a pointer to --help, BRIM_CTL_EXIT_USAGE. */
static int
ctl_bad_usage(const char *msg, const char *what)
{
    fprintf(stderr, "brimctl: %s%s%s\n(see brimctl --help)\n", msg,
            what != NULL ? ": " : "", what != NULL ? what : "");
    return BRIM_CTL_EXIT_USAGE;
}

/*
 * An unknown command NAME: the usage error, with the command meant when
 * NAME is another tool's word for one of ours (a tester typed `brimctl
 * cluster`, and nothing said that stats and nodes are the cluster's
 * views).
 */
static int
ctl_unknown_cmd(const char *name)
{
    static const struct {
        const char *word, *hint;
    } hints[] = {
        {"cluster",
         "the cluster's views are 'stats' and 'nodes' "
         "(with --coordinator), and 'migrations'"},
        {"status",
         "the cluster's views are 'stats' and 'nodes' "
         "(with --coordinator), and 'migrations'"},
        {"info", "a node's statistics are 'stats'"},
        {"delete", "a key is deleted with 'del'"},
        {"remove", "a node leaves with 'leave NAME'; a key goes with 'del'"},
        {"join",
         "a node joins by starting it with --coordinator; "
         "'plan join NAME' shows what would move"},
    };
    size_t i;

    for (i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
        if (strcmp(name, hints[i].word) == 0) {
            fprintf(stderr,
                    "brimctl: unknown command: %s: %s\n(see brimctl --help)\n",
                    name, hints[i].hint);
            return BRIM_CTL_EXIT_USAGE;
        }
    }
    return ctl_bad_usage("unknown command", name);
}

/*
 * Parse ARGV into CTL and *CMD. Returns -1 to go on, or the exit status
 * (0 after --help).
 */
static int
ctl_parse(int argc, char **argv, struct brim_ctl *ctl,
          const struct brim_ctl_cmd **cmd)
{
    const struct ctl_opt *o;
    const char           *val;
    unsigned              seen;
    int                   i, help, dashdash;

    *cmd = NULL;
    help = 0;
    dashdash = 0;
    seen = 0;
    ctl->argc = 0;
    for (i = 1; i < argc; i++) {
        if (!dashdash && strcmp(argv[i], "--") == 0) {
            dashdash = 1;
            continue;
        }
        if (!dashdash && argv[i][0] == '-' && argv[i][1] != '\0') {
            if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                help = 1;
                continue;
            }
            o = ctl_find_opt(argv[i]);
            if (o == NULL) {
                return ctl_bad_usage("unknown option", argv[i]);
            }
            val = NULL;
            if (strchr(argv[i], '=') != NULL) {
                val = strchr(argv[i], '=') + 1;
                if (o->arg == NULL) {
                    return ctl_bad_usage("option takes no value", o->name);
                }
            } else if (o->arg != NULL && o->arg[0] == '[') {
                /* An optional value ("--watch [S]"): the next argument
                 * when it is a number, signed too, so that "-1" gets the
                 * option's range error rather than "unknown option". */
                if (i + 1 < argc && ctl_looks_numeric(argv[i + 1])) {
                    val = argv[++i];
                }
            } else if (o->arg != NULL) {
                if (i + 1 >= argc) {
                    return ctl_bad_usage("option needs a value", o->name);
                }
                val = argv[++i];
            }
            if (ctl_set_opt(ctl, o, val) != 0) {
                return BRIM_CTL_EXIT_USAGE;
            }
            seen |= o->bit;
            continue;
        }
        if (*cmd == NULL && !help && strcmp(argv[i], "help") == 0) {
            help = 1; /* "brimctl help [COMMAND]", as --help */
            continue;
        }
        if (*cmd == NULL) {
            *cmd = ctl_find_cmd(argv[i]);
            if (*cmd == NULL) {
                return ctl_unknown_cmd(argv[i]);
            }
            continue;
        }
        ctl->argv[ctl->argc++] = argv[i]; /* ARGV has room: argc slots */
    }
    if (help) {
        if (*cmd != NULL) {
            ctl_cmd_usage(stdout, *cmd);
        } else {
            ctl_usage(stdout);
        }
        return BRIM_CTL_EXIT_OK;
    }
    if (*cmd == NULL) {
        ctl_usage(stderr);
        return BRIM_CTL_EXIT_USAGE;
    }
    if ((seen & ~(*cmd)->accepts) != 0) {
        return ctl_bad_usage("an option given does not apply to", (*cmd)->name);
    }
    if (ctl->argc < (*cmd)->min_args || ctl->argc > (*cmd)->max_args) {
        fprintf(stderr,
                "brimctl: %s: wrong number of arguments (%d)\n"
                "usage: brimctl %s %s\n",
                (*cmd)->name, ctl->argc, (*cmd)->name, (*cmd)->args);
        return BRIM_CTL_EXIT_USAGE;
    }
    return -1;
}

/* The environment variable NAME, or NULL when unset or empty. */
static const char *
ctl_env(const char *name)
{
    const char *v = getenv(name);

    return v != NULL && v[0] != '\0' ? v : NULL;
}

int
main(int argc, char **argv)
{
    const struct brim_ctl_cmd *cmd;
    struct brim_opts           opts;
    struct brim_ctl            ctl;
    char                       err[BRIM_ERRBUF_LEN], what[512];
    int                        rc;

    memset(&ctl, 0, sizeof(ctl));
    ctl.argv = calloc((size_t) argc + 1, sizeof(*ctl.argv));
    if (ctl.argv == NULL) {
        fprintf(stderr, "brimctl: out of memory\n");
        return BRIM_CTL_EXIT_CONN;
    }
    ctl.server = getenv("BRIM_SERVER");
    if (ctl.server == NULL || ctl.server[0] == '\0') {
        ctl.server = BRIM_CTL_DEFAULT_SERVER;
    }
    ctl.coord = getenv("BRIM_COORDINATOR");
    if (ctl.coord != NULL && ctl.coord[0] == '\0') {
        ctl.coord = NULL;
    }
    ctl.secret_file = ctl_env("BRIM_SECRET_FILE");
    ctl.client_secret_file = ctl_env("BRIM_CLIENT_SECRET_FILE");
    rc = ctl_parse(argc, argv, &ctl, &cmd);
    if (rc >= 0) {
        free(ctl.argv);
        return rc;
    }
    /* The empty key is wrong whatever the node's limits: no need to
     * connect to say so. A long key is checked against the node's limit
     * (from HELLO) by libbrim, and brim_ctl_fail() says the same. */
    if (strncmp(cmd->args, "KEY", 3) == 0 && ctl.argv[0][0] == '\0') {
        fprintf(stderr,
                "brimctl: %s \"\": key is 0 bytes, allowed 1 .. %d"
                "\n(see brimctl --help)\n",
                cmd->name, BRIM_KEY_MAX);
        free(ctl.argv);
        return BRIM_CTL_EXIT_USAGE;
    }
    memset(&opts, 0, sizeof(opts));
    if (ctl.coord != NULL) {
        opts.coord_addr = ctl.coord;
    } else {
        opts.server_addr = ctl.server;
    }
    opts.connect_timeout_ms = ctl.timeout_ms;
    opts.request_timeout_ms = ctl.timeout_ms;
    /* The cluster secret is proven as an admin, whatever the command (an
     * admin may run data commands too); the clients' secret as a client
     * (a node checks a client's proof against it, PROTOCOL.md 12). */
    if (cmd->admin && ctl.secret_file == NULL && ctl.client_secret_file != NULL)
    {
        fprintf(stderr,
                "brimctl: %s is an admin command: it needs the cluster "
                "secret (--secret-file FILE); the clients' secret of "
                "--client-secret-file is proven as a client, which may not "
                "run it\n(see brimctl --help)\n",
                cmd->name);
        free(ctl.argv);
        return BRIM_CTL_EXIT_USAGE;
    }
    ctl.admin = cmd->admin || ctl.secret_file != NULL;
    opts.admin = ctl.admin;
    opts.secret_file =
        ctl.secret_file != NULL ? ctl.secret_file : ctl.client_secret_file;
    if (opts.secret_file != NULL && access(opts.secret_file, R_OK) != 0) {
        /* A local file, not the server: say so, as bad usage. */
        fprintf(stderr, "brimctl: %s %s: %s\n",
                ctl.secret_file != NULL
                    ? "the cluster secret's file (--secret-file or "
                      "$BRIM_SECRET_FILE)"
                    : "the clients' secret's file (--client-secret-file "
                      "or $BRIM_CLIENT_SECRET_FILE)",
                opts.secret_file, strerror(errno));
        free(ctl.argv);
        return BRIM_CTL_EXIT_USAGE;
    }
    rc = brim_connect(&opts, &ctl.client, err);
    if (rc != 0) {
        /* ERRBUF names the address and the reason. A bad setting (an
         * address, a secret file) or a refused proof is not a server that
         * cannot be reached. */
        if (rc == BRIM_EINVAL) {
            fprintf(stderr, "brimctl: %s\n", err);
        } else if (rc == BRIM_EDENIED) {
            fprintf(stderr, "brimctl: %s refused this client (%s): %s\n%s",
                    brim_ctl_addr(&ctl),
                    brim_ctl_auth_text(&ctl, what, sizeof(what)), err,
                    brim_ctl_auth_hint(&ctl));
        } else {
            fprintf(stderr, "brimctl: cannot reach %s: %s (%s)\n",
                    brim_ctl_addr(&ctl), brim_strerror(rc), err);
        }
        free(ctl.argv);
        return rc == BRIM_EINVAL ? BRIM_CTL_EXIT_USAGE
            : rc == BRIM_EDENIED ? BRIM_CTL_EXIT_NO /* it said no */
                                 : BRIM_CTL_EXIT_CONN;
    }
    rc = cmd->run(&ctl);
    brim_close(ctl.client);
    free(ctl.argv);
    return rc;
}
