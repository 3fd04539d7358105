/*
 * sim/main.c - brim-sim's entry point: dispatch to a subcommand. The
 * models live in grid.c, spread.c and place.c (report.c prints grid's),
 * the helpers they share in args.c.
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

/* One subcommand: its name, its entry point and a line for --help. */
struct sim_cmd {
    const char *name;         /* argv[1] */
    int (*run)(int, char **); /* gets argv from the name on */
    const char *summary;      /* one line for the top-level help */
};

static const struct sim_cmd sim_cmds[] = {
    {"grid", brim_sim_cmd_grid,
     "Model A: cap, busiest, displaced and churn over a grid of cells"},
    {"spread", brim_sim_cmd_spread,
     "Model B: how evenly V tokens per node share the ring"},
    {"place", brim_sim_cmd_place,
     "place the keys of a file with the replace rule and print them"},
};

static void
sim_help(FILE *f)
{
    size_t i;

    fprintf(f,
            "usage: brim-sim COMMAND [FLAGS]\n"
            "\n"
            "The brim placement simulator: reproduces the published figures\n"
            "on bounded-load consistent hashing (docs/simulation.md).\n"
            "\n"
            "commands:\n");
    for (i = 0; i < BRIM_ARRAY_LEN(sim_cmds); i++) {
        fprintf(f, "  %-8s %s\n", sim_cmds[i].name, sim_cmds[i].summary);
    }
    fprintf(f,
            "\n"
            "Run 'brim-sim COMMAND --help' for a command's flags.\n"
            "Exit status: 0 ok, 1 failure, 2 usage error.\n");
}

int
main(int argc, char **argv)
{
    size_t i;

    if (argc < 2) {
        sim_help(stderr);
        return BRIM_SIM_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0
        || strcmp(argv[1], "help") == 0)
    {
        sim_help(stdout);
        return BRIM_SIM_EXIT_OK;
    }
    for (i = 0; i < BRIM_ARRAY_LEN(sim_cmds); i++) {
        if (strcmp(argv[1], sim_cmds[i].name) == 0) {
            return sim_cmds[i].run(argc - 1, argv + 1);
        }
    }
    fprintf(stderr,
            "brim-sim: unknown command \"%s\" (commands: grid, "
            "spread, place; see brim-sim --help)\n",
            argv[1]);
    return BRIM_SIM_EXIT_USAGE;
}
