/*
 * client/brimctl/ctl.h - brimctl's command table and shared state. main.c
 * parses the command line against the table (global options anywhere,
 * then each command's own options and arguments) and cmd.c runs the
 * commands over libbrim. A new command (issue 4: nodes, leave, plan) is one
 * row in brim_ctl_cmds[] and one function; a new option (--coordinator)
 * is one row in main.c's ctl_opts[] and, unless global, a bit in the
 * commands that accept it.
 */
#ifndef BRIM_CLIENT_BRIMCTL_CTL_H
#define BRIM_CLIENT_BRIMCTL_CTL_H

#include <stdint.h>

#include <brim.h>

/* Exit statuses (also listed in --help and docs/client.md). */
#define BRIM_CTL_EXIT_OK 0          /* done */
#define BRIM_CTL_EXIT_NO 1          /* the server said no: not found, ... */
#define BRIM_CTL_EXIT_CONN 2        /* could not talk to the server */
#define BRIM_CTL_EXIT_NONODES 3     /* cluster mode: the key's partition
                                     * has no node (no nodes in the cluster) */
#define BRIM_CTL_EXIT_USAGE 64      /* bad command line (EX_USAGE) */

/* Default node address when neither --server nor BRIM_SERVER says one. */
#define BRIM_CTL_DEFAULT_SERVER "127.0.0.1:11311"

/* Options, as bits of a command's ACCEPTS mask. */
enum brim_ctl_opt {
    BRIM_CTL_OPT_TTL = 1u << 0,     /* --ttl S */
    BRIM_CTL_OPT_FLAGS = 1u << 1,   /* --flags F */
    BRIM_CTL_OPT_JSON = 1u << 2,    /* --json */
    BRIM_CTL_OPT_DELAY = 1u << 3,   /* --delay S */
    BRIM_CTL_OPT_FORCE = 1u << 4,   /* --force */
    BRIM_CTL_OPT_WEIGHT = 1u << 5   /* --weight W */
};

/* What the command line said, and the connection once made. */
struct brim_ctl {
    const char         *server;        /* --server or BRIM_SERVER */
    const char         *coord;         /* --coordinator or BRIM_COORDINATOR:
                                          cluster mode when set */
    int                 force;         /* --force */
    uint32_t            weight_ppm;    /* --weight, millionths; 0: 1.0 */
    uint32_t            timeout_ms;    /* --timeout-ms; 0: libbrim's */
    uint32_t            ttl_s;         /* --ttl */
    uint32_t            flags;         /* --flags */
    uint32_t            delay_s;       /* --delay */
    int                 json;          /* --json */
    int                 argc;          /* the command's arguments */
    char              **argv;          /* borrowed from main's argv */
    struct brim_client *client;        /* connected before run() */
};

/* One command of brimctl. */
struct brim_ctl_cmd {
    const char *name;                   /* "get" */
    const char *args;                   /* usage of its arguments, "KEY" */
    const char *summary;                /* one line for --help */
    const char *help;                   /* more lines for "CMD --help" */
    int         min_args;               /* positional arguments */
    int         max_args;
    unsigned    accepts;                /* BRIM_CTL_OPT_* bits */
    int         admin;                  /* connects with role admin */
    int         (*run)(struct brim_ctl *ctl); /* returns a BRIM_CTL_EXIT_* */
};

/* The commands, ending with a row whose NAME is NULL (cmd.c). */
extern const struct brim_ctl_cmd brim_ctl_cmds[];

/*
 * The exit status and a message on stderr for the libbrim failure RC of
 * WHAT ("get foo"): BRIM_CTL_EXIT_CONN for transport errors (naming the
 * server's address), BRIM_CTL_EXIT_USAGE for BRIM_EINVAL (a key of 0 or
 * over the node's limit; the message names its length and the limit),
 * BRIM_CTL_EXIT_NO for the server's answers.
 */
int brim_ctl_fail(struct brim_ctl *ctl, const char *what, int rc);

/* The address brimctl talks to: the coordinator's or the node's. */
const char *brim_ctl_addr(const struct brim_ctl *ctl);

#endif /* BRIM_CLIENT_BRIMCTL_CTL_H */
