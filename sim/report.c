/*
 * sim/report.c - "brim-sim grid": its flags, and the report of a Model A
 * grid as a table, JSON (jansson) or CSV. Each row is one cell (nodes,
 * keys per node, tokens, eps) under one rule, with the means over seeds of
 * the figures seed-figures.md publishes. The engine is in grid.c.
 */
#include "sim/sim.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/placement.h"
#include "common/ring.h"

/* Limits that keep one run's memory in hand (about 20 bytes a key). */
#define REPORT_KEYS_MAX 50000000ull
#define REPORT_TOKENS_MAX 16000000ull
#define REPORT_SEEDS_MAX 100000u
#define REPORT_THREADS_MAX 64u

/* The published grid of seed-figures.md. */
#define REPORT_DEF_NODES "50,200"
#define REPORT_DEF_KPN "10,100,1000"
#define REPORT_DEF_TOKENS "1,16,160"
#define REPORT_DEF_EPS "0.01,0.05,0.10,0.25,1.0,none"
#define REPORT_DEF_SEEDS 6u

/* One output row: a cell under one rule, means over its seeds. */
struct report_row {
    uint32_t                   nodes;               /* N */
    uint32_t                   kpn;                 /* keys per node */
    uint32_t                   tokens;              /* P */
    const struct brim_sim_eps *eps;                 /* borrowed from the grid */
    uint32_t                   seeds;               /* runs averaged */
    const char                *rule;                /* "replace", "rebalance" */
    uint64_t                   cap;                 /* UINT64_MAX: none */
    double                     busiest;             /* max load / (K/N) */
    double                     displaced;           /* fraction of K */
    double                     churn_add;           /* moved / (K/(N+1)) */
    double                     churn_remove;        /* moved / (K/N) */
    double                     moved_add;           /* keys */
    double                     moved_remove;        /* keys */
    double                     moved_remove_others; /* keys not the leaver's */
    uint32_t                   binding_runs;        /* some key displaced */
    uint32_t                   busiest_exact_runs;  /* binding, max == cap */
    uint32_t                   over_cap_runs; /* a cap broken: must be 0 */
};

static const char report_usage[] =
    "usage: brim-sim grid [FLAGS]\n"
    "\n"
    "Model A (docs/simulation.md; the project's input case seed-figures.md\n"
    "is kept outside this repository): N nodes of P random tokens,\n"
    "K = N x kpn random keys placed in draw order with the replace rule\n"
    "(cap = ceil((1+eps)K/N)); then one node added and, separately, one\n"
    "removed, and the keys that change node counted. Prints per cell the\n"
    "means over seeds. The defaults are the published grid (648 runs).\n"
    "\n"
    "flags:\n"
    "  --nodes LIST          N values (2..4095)          [" REPORT_DEF_NODES
    "]\n"
    "  --keys-per-node LIST  keys per node (1..1000000)  [" REPORT_DEF_KPN "]\n"
    "  --tokens LIST         P, tokens per node (1..10000) [" REPORT_DEF_TOKENS
    "]\n"
    "  --eps LIST            decimals or none  [" REPORT_DEF_EPS "]\n"
    "  --seeds S             runs per cell, seeds 1..S (1..100000) [6]\n"
    "  --rule R              replace | rebalance | both  [replace]\n"
    "                        how churn is measured: re-place every key, or\n"
    "                        brim_place_rebalance() from the N-node map\n"
    "  --format F            table | json | csv  [table]\n"
    "  --threads T           worker threads (1..64)  [online CPUs]\n"
    "  --quiet               no progress lines on stderr\n"
    "  --progress            progress lines even when stderr is no tty\n"
    "A cell may hold at most 50,000,000 keys (N x kpn) and 16,000,000\n"
    "tokens (N x P).\n"
    "  -h, --help            this text\n"
    "\n"
    "Row fields: cap, busiest (max load / (K/N)), displaced (fraction of\n"
    "keys off their ring owner), churn_add (moved / (K/(N+1))),\n"
    "churn_remove (moved / (K/N)), moved_add, moved_remove,\n"
    "moved_remove_others (moved keys that were not on the leaver),\n"
    "binding_runs (runs with a key displaced), busiest_exact_runs (of\n"
    "those, max load == cap), over_cap_runs (a cap broken; always 0).\n"
    "cap, busiest and displaced are of the N-node replace placement.\n";

/* Fill ROW from the SEEDS runs of one cell at eps E under rule RI. */
static void
report_fold(const struct brim_sim_grid *g, const struct brim_sim_run *runs,
            size_t cell, size_t e, int ri, struct report_row *row)
{
    const struct brim_sim_run *r;
    double                     k, s;
    uint32_t                   i;

    s = (double) g->seeds;
    k = (double) row->nodes * row->kpn;
    row->rule = ri == BRIM_SIM_RI_REPLACE ? "replace" : "rebalance";
    row->seeds = g->seeds;
    for (i = 0; i < g->seeds; i++) {
        r = &runs[brim_sim_run_index(g, cell, i, e)];
        row->cap = r->cap;
        row->busiest += (double) r->max_load / row->kpn;
        row->displaced += (double) r->displaced / k;
        row->moved_add += (double) r->moved_add[ri];
        row->moved_remove += (double) r->moved_remove[ri];
        row->moved_remove_others += (double) r->moved_remove_others[ri];
        row->binding_runs += r->displaced > 0;
        row->busiest_exact_runs += r->displaced > 0 && r->max_load == r->cap;
        row->over_cap_runs += r->over_cap;
    }
    row->busiest /= s;
    row->displaced /= s;
    row->moved_add /= s;
    row->moved_remove /= s;
    row->moved_remove_others /= s;
    row->churn_add = row->moved_add / (k / (row->nodes + 1.0));
    row->churn_remove = row->moved_remove / (k / row->nodes);
}

static json_t *
report_json_row(const struct report_row *r)
{
    json_t *o;

    o = json_object();
    if (o == NULL) {
        return NULL;
    }
    json_object_set_new(o, "nodes", json_integer(r->nodes));
    json_object_set_new(o, "keys_per_node", json_integer(r->kpn));
    json_object_set_new(o, "tokens", json_integer(r->tokens));
    json_object_set_new(o, "eps", json_string(r->eps->text));
    json_object_set_new(o, "seeds", json_integer(r->seeds));
    json_object_set_new(o, "rule", json_string(r->rule));
    json_object_set_new(
        o, "cap",
        r->cap == UINT64_MAX ? json_null() : json_integer((json_int_t) r->cap));
    json_object_set_new(o, "busiest", json_real(r->busiest));
    json_object_set_new(o, "displaced", json_real(r->displaced));
    json_object_set_new(o, "churn_add", json_real(r->churn_add));
    json_object_set_new(o, "churn_remove", json_real(r->churn_remove));
    json_object_set_new(o, "moved_add", json_real(r->moved_add));
    json_object_set_new(o, "moved_remove", json_real(r->moved_remove));
    json_object_set_new(o, "moved_remove_others",
                        json_real(r->moved_remove_others));
    json_object_set_new(o, "binding_runs", json_integer(r->binding_runs));
    json_object_set_new(o, "busiest_exact_runs",
                        json_integer(r->busiest_exact_runs));
    json_object_set_new(o, "over_cap_runs", json_integer(r->over_cap_runs));
    return o;
}

static void
report_cap_text(const struct report_row *r, char *buf, size_t len)
{
    if (r->cap == UINT64_MAX) {
        snprintf(buf, len, "none");
    } else {
        snprintf(buf, len, "%" PRIu64, r->cap);
    }
}

static void
report_table_row(FILE *f, const struct report_row *r, int header)
{
    char cap[24], binding[24], exact[24];

    if (header) {
        fprintf(f,
                "%5s %5s %6s %5s %-9s %7s %7s %9s %9s %9s %10s %10s "
                "%7s %7s\n",
                "nodes", "kpn", "tokens", "eps", "rule", "cap", "busiest",
                "displaced", "churn_add", "churn_rem", "moved_add", "moved_rem",
                "binding", "exact");
    }
    report_cap_text(r, cap, sizeof(cap));
    snprintf(binding, sizeof(binding), "%" PRIu32 "/%" PRIu32, r->binding_runs,
             r->seeds);
    snprintf(exact, sizeof(exact), "%" PRIu32 "/%" PRIu32,
             r->busiest_exact_runs, r->binding_runs);
    fprintf(f,
            "%5" PRIu32 " %5" PRIu32 " %6" PRIu32 " %5s %-9s %7s %7.4f "
            "%8.3f%% %9.3f %9.3f %10.1f %10.1f %7s %7s\n",
            r->nodes, r->kpn, r->tokens, r->eps->text, r->rule, cap, r->busiest,
            100.0 * r->displaced, r->churn_add, r->churn_remove, r->moved_add,
            r->moved_remove, binding, exact);
}

static void
report_csv_row(FILE *f, const struct report_row *r, int header)
{
    char cap[24];

    if (header) {
        fprintf(f,
                "nodes,keys_per_node,tokens,eps,seeds,rule,cap,busiest,"
                "displaced,churn_add,churn_remove,moved_add,moved_remove,"
                "moved_remove_others,binding_runs,busiest_exact_runs,"
                "over_cap_runs\n");
    }
    report_cap_text(r, cap, sizeof(cap));
    fprintf(f,
            "%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",%s,%" PRIu32 ",%s,%s,"
            "%.6f,%.8f,%.6f,%.6f,%.4f,%.4f,%.4f,%" PRIu32 ",%" PRIu32
            ",%" PRIu32 "\n",
            r->nodes, r->kpn, r->tokens, r->eps->text, r->seeds, r->rule, cap,
            r->busiest, r->displaced, r->churn_add, r->churn_remove,
            r->moved_add, r->moved_remove, r->moved_remove_others,
            r->binding_runs, r->busiest_exact_runs, r->over_cap_runs);
}

/* Print every row of G's RUNS in FMT on stdout. Returns an exit code. */
static int
report_print(const struct brim_sim_grid *g, const struct brim_sim_run *runs,
             enum brim_sim_format fmt)
{
    struct report_row row;
    json_t           *arr;
    size_t            cell, ncells, rest, e;
    int               ri, first, rc;

    arr = fmt == BRIM_SIM_FORMAT_JSON ? json_array() : NULL;
    if (fmt == BRIM_SIM_FORMAT_JSON && arr == NULL) {
        fprintf(stderr, "brim-sim grid: out of memory\n");
        return BRIM_SIM_EXIT_FAIL;
    }
    ncells = g->nnodes * g->nkpn * g->ntokens;
    first = 1;
    for (cell = 0; cell < ncells; cell++) {
        for (e = 0; e < g->neps; e++) {
            for (ri = 0; ri < 2; ri++) {
                if ((g->rules & (1u << ri)) == 0) {
                    continue;
                }
                memset(&row, 0, sizeof(row));
                rest = cell / g->ntokens;
                row.nodes = g->nodes[rest / g->nkpn];
                row.kpn = g->kpn[rest % g->nkpn];
                row.tokens = g->tokens[cell % g->ntokens];
                row.eps = &g->eps[e];
                report_fold(g, runs, cell, e, ri, &row);
                if (fmt == BRIM_SIM_FORMAT_JSON) {
                    json_array_append_new(arr, report_json_row(&row));
                } else if (fmt == BRIM_SIM_FORMAT_CSV) {
                    report_csv_row(stdout, &row, first);
                } else {
                    report_table_row(stdout, &row, first);
                }
                first = 0;
            }
        }
    }
    rc = 0;
    if (arr != NULL) {
        rc = json_dumpf(arr, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
        fputc('\n', stdout);
        json_decref(arr);
    }
    if (rc != 0 || fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "brim-sim grid: cannot write the report\n");
        return BRIM_SIM_EXIT_FAIL;
    }
    return BRIM_SIM_EXIT_OK;
}

/* Refuse cells too big for memory; returns 0 or an exit code. */
static int
report_check_sizes(const struct brim_sim_grid *g)
{
    size_t i, j;

    for (i = 0; i < g->nnodes; i++) {
        for (j = 0; j < g->nkpn; j++) {
            if ((uint64_t) g->nodes[i] * g->kpn[j] > REPORT_KEYS_MAX) {
                return brim_sim_usage_error("grid",
                                            "%" PRIu32 " nodes x %" PRIu32
                                            " keys per node is over %llu keys",
                                            g->nodes[i], g->kpn[j],
                                            REPORT_KEYS_MAX);
            }
        }
        for (j = 0; j < g->ntokens; j++) {
            if ((uint64_t) (g->nodes[i] + 1) * g->tokens[j] > REPORT_TOKENS_MAX)
            {
                return brim_sim_usage_error(
                    "grid",
                    "%" PRIu32 " nodes x %" PRIu32
                    " tokens is over %llu tokens on one ring",
                    g->nodes[i], g->tokens[j], REPORT_TOKENS_MAX);
            }
        }
    }
    return 0;
}

/* Parse "replace", "rebalance" or "both" into G->rules. */
static int
report_parse_rule(const char *text, struct brim_sim_grid *g)
{
    if (strcmp(text, "replace") == 0) {
        g->rules = BRIM_SIM_RULE_REPLACE;
    } else if (strcmp(text, "rebalance") == 0) {
        g->rules = BRIM_SIM_RULE_REBALANCE;
    } else if (strcmp(text, "both") == 0) {
        g->rules = BRIM_SIM_RULE_REPLACE | BRIM_SIM_RULE_REBALANCE;
    } else {
        return -1;
    }
    return 0;
}

/* The text of each list flag, defaults first; parsed after getopt. */
struct report_args {
    const char          *nodes;  /* --nodes */
    const char          *kpn;    /* --keys-per-node */
    const char          *tokens; /* --tokens */
    const char          *eps;    /* --eps */
    enum brim_sim_format fmt;    /* --format */
};

/* Parse ARGV into G and A; returns 0, -1 for --help, or an exit code. */
static int
report_parse_flags(int argc, char **argv, struct brim_sim_grid *g,
                   struct report_args *a)
{
    static const struct option longopts[] = {
        {"nodes", required_argument, NULL, 'n'},
        {"keys-per-node", required_argument, NULL, 'k'},
        {"tokens", required_argument, NULL, 't'},
        {"eps", required_argument, NULL, 'e'},
        {"seeds", required_argument, NULL, 's'},
        {"rule", required_argument, NULL, 'r'},
        {"format", required_argument, NULL, 'f'},
        {"threads", required_argument, NULL, 'j'},
        {"quiet", no_argument, NULL, 'q'},
        {"progress", no_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    char errbuf[BRIM_ERRBUF_LEN];
    int  opt;

    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        errbuf[0] = '\0';
        switch (opt) {
        case 'n':
            a->nodes = optarg;
            break;
        case 'k':
            a->kpn = optarg;
            break;
        case 't':
            a->tokens = optarg;
            break;
        case 'e':
            a->eps = optarg;
            break;
        case 's':
            if (brim_sim_parse_u32("--seeds", optarg, 1, REPORT_SEEDS_MAX,
                                   &g->seeds, errbuf)
                != 0)
            {
                return brim_sim_usage_error("grid", "%s", errbuf);
            }
            break;
        case 'r':
            if (report_parse_rule(optarg, g) != 0) {
                return brim_sim_usage_error(
                    "grid",
                    "--rule: bad value "
                    "\"%.40s\": expected replace, rebalance or both",
                    optarg);
            }
            break;
        case 'f':
            if (brim_sim_parse_format(optarg, &a->fmt, errbuf) != 0) {
                return brim_sim_usage_error("grid", "%s", errbuf);
            }
            break;
        case 'j':
            if (brim_sim_parse_u32("--threads", optarg, 1, REPORT_THREADS_MAX,
                                   &g->threads, errbuf)
                != 0)
            {
                return brim_sim_usage_error("grid", "%s", errbuf);
            }
            break;
        case 'q':
            g->progress = 0;
            break;
        case 'p':
            g->progress = 1;
            break;
        case 'h':
            return -1;
        default:
            return brim_sim_bad_flag("grid", opt, argv);
        }
    }
    if (optind < argc) {
        return brim_sim_usage_error("grid", "unexpected argument \"%s\"",
                                    argv[optind]);
    }
    return 0;
}

/* Parse the list flags of A into G; returns 0 or an exit code. */
static int
report_parse_lists(const struct report_args *a, struct brim_sim_grid *g)
{
    char errbuf[BRIM_ERRBUF_LEN];
    int  rc;

    rc = brim_sim_parse_u32_list("--nodes", a->nodes, 2, BRIM_NODES_MAX - 1,
                                 &g->nodes, &g->nnodes, errbuf);
    if (rc == 0) {
        rc = brim_sim_parse_u32_list("--keys-per-node", a->kpn, 1, 1000000,
                                     &g->kpn, &g->nkpn, errbuf);
    }
    if (rc == 0) {
        rc = brim_sim_parse_u32_list("--tokens", a->tokens, 1,
                                     BRIM_TOKENS_PER_NODE_MAX, &g->tokens,
                                     &g->ntokens, errbuf);
    }
    if (rc == 0) {
        rc =
            brim_sim_parse_eps_list("--eps", a->eps, &g->eps, &g->neps, errbuf);
    }
    if (rc == BRIM_ENOMEM) {
        fprintf(stderr, "brim-sim grid: %s\n", errbuf);
        return BRIM_SIM_EXIT_FAIL;
    }
    if (rc != 0) {
        return brim_sim_usage_error("grid", "%s", errbuf);
    }
    return report_check_sizes(g);
}

int
brim_sim_cmd_grid(int argc, char **argv)
{
    struct brim_sim_grid g;
    struct report_args   a;
    struct brim_sim_run *runs;
    char                 errbuf[BRIM_ERRBUF_LEN];
    size_t               nruns;
    double               t0;
    int                  rc;

    memset(&g, 0, sizeof(g));
    g.seeds = REPORT_DEF_SEEDS;
    g.rules = BRIM_SIM_RULE_REPLACE;
    g.threads = brim_sim_default_threads();
    g.progress = isatty(STDERR_FILENO);
    a.nodes = REPORT_DEF_NODES;
    a.kpn = REPORT_DEF_KPN;
    a.tokens = REPORT_DEF_TOKENS;
    a.eps = REPORT_DEF_EPS;
    a.fmt = BRIM_SIM_FORMAT_TABLE;
    runs = NULL;

    rc = report_parse_flags(argc, argv, &g, &a);
    if (rc == -1) {
        fputs(report_usage, stdout);
        return BRIM_SIM_EXIT_OK;
    }
    if (rc == 0) {
        rc = report_parse_lists(&a, &g);
    }
    if (rc != 0) {
        goto done;
    }

    nruns = g.nnodes * g.nkpn * g.ntokens * g.seeds * g.neps;
    runs = brim_calloc(nruns, sizeof(*runs));
    if (runs == NULL) {
        fprintf(stderr, "brim-sim grid: out of memory for %zu runs\n", nruns);
        rc = BRIM_SIM_EXIT_FAIL;
        goto done;
    }
    t0 = brim_sim_now();
    if (brim_sim_grid_run(&g, runs, errbuf) != 0) {
        fprintf(stderr, "brim-sim grid: %s\n", errbuf);
        rc = BRIM_SIM_EXIT_FAIL;
        goto done;
    }
    if (g.progress) {
        fprintf(stderr, "brim-sim grid: %zu runs in %.2f s on %u threads\n",
                nruns, brim_sim_now() - t0, g.threads);
    }
    rc = report_print(&g, runs, a.fmt);

done:
    brim_free(runs);
    brim_free(g.nodes);
    brim_free(g.kpn);
    brim_free(g.tokens);
    brim_free(g.eps);
    return rc;
}
