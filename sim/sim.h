/*
 * sim/sim.h - brim-sim, the placement simulator: the subcommands (grid,
 * spread, place), the command-line helpers they share, and the Model A
 * engine the grid reports from. The models are those of
 * shared/cases/seed-figures.md; every random draw comes from common/rng.h,
 * so a figure is reproduced by its command line alone. common/ only.
 */
#ifndef BRIM_SIM_SIM_H
#define BRIM_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <brim/status.h>

/* Exit codes: 0 success, 1 a failure while running, 2 a usage error. */
#define BRIM_SIM_EXIT_OK 0
#define BRIM_SIM_EXIT_FAIL 1
#define BRIM_SIM_EXIT_USAGE 2

/* Tags that keep the seed streams of the two models apart. */
#define BRIM_SIM_MODEL_A 0x41u
#define BRIM_SIM_MODEL_B 0x42u

/* Longest item of a comma list (an eps text, a number). */
#define BRIM_SIM_ITEM_MAX 32

/* Node names are "n" and five digits, so name order is numeric order. */
#define BRIM_SIM_NAME_FMT "n%05u"
#define BRIM_SIM_NAME_LEN 16

/* Output formats of grid and spread. */
enum brim_sim_format {
    BRIM_SIM_FORMAT_TABLE = 0, /* aligned text for people */
    BRIM_SIM_FORMAT_JSON = 1,  /* one JSON array of objects */
    BRIM_SIM_FORMAT_CSV = 2    /* a header line, then one row a cell */
};

/* Which placement rules a grid measures churn under (a bit set). */
enum brim_sim_rule {
    BRIM_SIM_RULE_REPLACE = 1,  /* re-place every key from scratch */
    BRIM_SIM_RULE_REBALANCE = 2 /* brim_place_rebalance() from before */
};

/* One eps of a grid: the text as given and its value. */
struct brim_sim_eps {
    char     text[BRIM_SIM_ITEM_MAX]; /* as typed; printed back as is */
    uint64_t ppm;                     /* millionths or BRIM_EPS_NONE */
};

/* A Model A grid: every (nodes, kpn, tokens) cell, all eps, S seeds. */
struct brim_sim_grid {
    uint32_t            *nodes;    /* N values, each 2 .. 4095 */
    size_t               nnodes;   /* entries in nodes */
    uint32_t            *kpn;      /* keys per node values */
    size_t               nkpn;     /* entries in kpn */
    uint32_t            *tokens;   /* P (tokens per node) values */
    size_t               ntokens;  /* entries in tokens */
    struct brim_sim_eps *eps;      /* eps values, in the order given */
    size_t               neps;     /* entries in eps */
    uint32_t             seeds;    /* runs per cell: seeds 1 .. SEEDS */
    unsigned             rules;    /* enum brim_sim_rule bits */
    unsigned             threads;  /* worker threads, >= 1 */
    int                  progress; /* a stderr line per finished cell */
};

/*
 * The outcome of one Model A run (one seed of one cell at one eps). The
 * churn arrays are indexed by rule: 0 replace, 1 rebalance.
 */
struct brim_sim_run {
    uint64_t cap;                    /* cap of the N-node placement */
    uint64_t max_load;               /* busiest node's keys, N nodes */
    uint64_t displaced;              /* keys not on their ring owner */
    uint64_t moved_add[2];           /* keys whose node changed on add */
    uint64_t moved_remove[2];        /* the same on remove */
    uint64_t moved_remove_others[2]; /* of those, not on the leaver before */
    uint8_t  over_cap;               /* some placement broke its cap */
};

/* Per-run index of the two rules in struct brim_sim_run. */
#define BRIM_SIM_RI_REPLACE 0
#define BRIM_SIM_RI_REBALANCE 1

/* ---- main.c: helpers shared by the subcommands ---- */

/*
 * Print "brim-sim CMD: " and the printf FMT message on stderr, then a hint
 * to run CMD --help. Returns BRIM_SIM_EXIT_USAGE for the caller to return.
 */
int brim_sim_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * Report the flag getopt_long() could not take (unknown, or missing its
 * value) for subcommand CMD. OPT is getopt's return ('?' or ':'), ARGV the
 * vector it parsed. Returns BRIM_SIM_EXIT_USAGE.
 */
int brim_sim_bad_flag(const char *cmd, int opt, char **argv);

/*
 * Parse TEXT, a comma list of decimal integers each in MIN..MAX, into a
 * new array *OUT (free with brim_free()) of *N entries. Returns 0, or
 * BRIM_EINVAL with ERRBUF naming FLAG, the bad item and the range, or
 * BRIM_ENOMEM. Duplicates are refused.
 */
int brim_sim_parse_u32_list(const char *flag, const char *text, uint32_t min,
                            uint32_t max, uint32_t **out, size_t *n,
                            char errbuf[BRIM_ERRBUF_LEN]);

/* Parse one decimal integer TEXT in MIN..MAX into *OUT; as above. */
int brim_sim_parse_u32(const char *flag, const char *text, uint32_t min,
                       uint32_t max, uint32_t *out,
                       char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Parse TEXT, a comma list of eps ("0.05", "1.0", "none"), into a new array
 * *OUT (free with brim_free()) of *N entries. Returns 0, BRIM_EINVAL (ERRBUF
 * names FLAG and the item) or BRIM_ENOMEM.
 */
int brim_sim_parse_eps_list(const char *flag, const char *text,
                            struct brim_sim_eps **out, size_t *n,
                            char errbuf[BRIM_ERRBUF_LEN]);

/* Parse "table", "json" or "csv" into *FMT. Returns 0 or BRIM_EINVAL. */
int brim_sim_parse_format(const char *text, enum brim_sim_format *fmt,
                          char errbuf[BRIM_ERRBUF_LEN]);

/*
 * The seed of one run: SplitMix64 folded over MODEL then each of the NV
 * values V in order (state ^= v, then state = splitmix64(state)), so a run
 * depends on its parameters alone, never on the grid around it.
 */
uint64_t brim_sim_seed(uint32_t model, const uint64_t *v, size_t nv);

/* Default worker threads: the online CPUs, 1 .. 16. */
unsigned brim_sim_default_threads(void);

/* Seconds on the monotonic clock, for progress lines. */
double brim_sim_now(void);

/* ---- grid.c: the Model A engine ---- */

/*
 * Run every cell of G: for each (nodes, kpn, tokens) and seed 1 .. seeds,
 * one ring, one key set, one added and one removed node, measured at every
 * eps of G and under G->rules. RUNS (caller's) receives
 * nnodes x nkpn x ntokens x seeds x neps entries, indexed by
 * brim_sim_run_index(). The result does not depend on G->threads. Returns
 * 0, BRIM_ENOMEM or BRIM_EINVAL (a limit of common/ was hit), with ERRBUF
 * saying which.
 */
int brim_sim_grid_run(const struct brim_sim_grid *g, struct brim_sim_run *runs,
                      char errbuf[BRIM_ERRBUF_LEN]);

/* The index in brim_sim_grid_run()'s RUNS of base cell CELL (node, kpn and
 * token indices folded in that order), seed index S (0-based), eps E. */
size_t brim_sim_run_index(const struct brim_sim_grid *g, size_t cell,
                          uint32_t s, size_t e);

/* ---- the subcommands: each takes its own argv (argv[0] = its name) ---- */

/* brim-sim grid: Model A over a grid of cells. Returns an exit code. */
int brim_sim_cmd_grid(int argc, char **argv);

/* brim-sim spread: Model B, token shares per V. Returns an exit code. */
int brim_sim_cmd_spread(int argc, char **argv);

/* brim-sim place: replace placement of a given file. Returns an exit code. */
int brim_sim_cmd_place(int argc, char **argv);

#endif /* BRIM_SIM_SIM_H */
