/*
 * sim/place.c - "brim-sim place FILE": read a ring (point lines), an eps
 * and keys from FILE, place the keys in file order with the replace rule
 * of common/placement.c and print each key's ring owner and node. A small
 * window onto placement for hand-made cases (shared/cases/inputs.md I03);
 * every line is checked before anything is placed.
 */
#include "sim/sim.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/parse.h"
#include "common/placement.h"
#include "common/ring.h"

/* Bad lines reported before giving up on a file. */
#define PLACE_ERRORS_MAX 20

/* One point line: a token of node NODE at POS. */
struct place_point {
    uint32_t node; /* 0 .. BRIM_NODES_MAX - 1 */
    uint64_t pos;  /* ring position */
};

/* What a file holds once every line is read. */
struct place_input {
    const char         *fname;      /* for messages: FILE or "<stdin>" */
    int                 have_eps;   /* an eps line was seen */
    size_t              eps_line;   /* its line number */
    uint64_t            eps_ppm;    /* millionths or BRIM_EPS_NONE */
    struct place_point *points;     /* in file order */
    size_t              npoints;    /* entries in points */
    size_t              points_cap; /* allocated entries */
    uint64_t           *keys;       /* key positions, in file order */
    size_t              nkeys;      /* entries in keys */
    size_t              keys_cap;   /* allocated entries */
    uint32_t            max_node;   /* largest NODE seen */
    unsigned            errors;     /* bad lines so far */
};

static const char place_usage[] =
    "usage: brim-sim place FILE     (FILE - reads stdin)\n"
    "\n"
    "Place the keys of FILE with the replace rule and print the result.\n"
    "FILE holds one item a line; '#' starts a comment; blank lines are ok:\n"
    "  eps 0.10 | eps none       the cap's eps (exactly one line)\n"
    "  point NODE POSITION       a token of node NODE (0..4095) at POSITION\n"
    "  key POSITION              a key; keys are placed in file order\n"
    "POSITION is a decimal 0..18446744073709551615. The cap is\n"
    "ceil((1+eps) K / N), N = nodes with points, K = keys. Equal token\n"
    "positions go to the smaller NODE.\n"
    "\n"
    "output:\n"
    "  cap C                     (or cap none)\n"
    "  key POSITION RING_OWNER PLACED_NODE   one line a key, in file order\n"
    "  load L0 L1 ...            keys per node id 0 .. largest NODE\n"
    "A bad line prints FILE:LINE: message and exits 2; nothing is placed.\n";

/* Report a bad line of IN; printf FMT. */
static void place_bad(struct place_input *in, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
place_bad(struct place_input *in, size_t line, const char *fmt, ...)
{
    va_list ap;

    in->errors++;
    if (in->errors > PLACE_ERRORS_MAX) {
        return;
    }
    fprintf(stderr, "%s:%zu: ", in->fname, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Grow *ARR (of ELEM-byte entries) to hold one more; 0 or BRIM_ENOMEM. */
static int
place_grow(void **arr, size_t n, size_t *cap, size_t elem)
{
    void  *p;
    size_t ncap;

    if (n < *cap) {
        return 0;
    }
    ncap = *cap == 0 ? 64 : *cap * 2;
    p = brim_realloc(*arr, ncap * elem);
    if (p == NULL) {
        return BRIM_ENOMEM;
    }
    *arr = p;
    *cap = ncap;
    return 0;
}

/* Handle "eps X" at LINE. */
static void
place_eps(struct place_input *in, size_t line, char **w, int nw)
{
    char why[BRIM_ERRBUF_LEN];

    if (nw != 2) {
        place_bad(in, line, "eps takes one value (a decimal or none), got %d",
                  nw - 1);
    } else if (in->have_eps) {
        place_bad(in, line, "eps given twice (first on line %zu)",
                  in->eps_line);
    } else if (brim_eps_parse(w[1], &in->eps_ppm, why) != 0) {
        place_bad(in, line, "bad eps \"%s\": %s", w[1], why);
    } else {
        in->have_eps = 1;
        in->eps_line = line;
    }
}

/* Handle "point NODE POSITION" at LINE; BRIM_ENOMEM stops the read. */
static int
place_point(struct place_input *in, size_t line, char **w, int nw)
{
    uint64_t node, pos;

    if (nw != 3) {
        place_bad(in, line, "point takes NODE and POSITION, got %d values",
                  nw - 1);
        return 0;
    }
    if (brim_parse_u64(w[1], 0, UINT64_MAX, &node) != 0
        || node >= BRIM_NODES_MAX) {
        place_bad(in, line, "bad node \"%.40s\": expected an integer 0..%d",
                  w[1], BRIM_NODES_MAX - 1);
        return 0;
    }
    if (brim_parse_u64(w[2], 0, UINT64_MAX, &pos) != 0) {
        place_bad(in, line,
                  "bad position \"%.40s\": expected a decimal "
                  "0..%" PRIu64,
                  w[2], UINT64_MAX);
        return 0;
    }
    if (place_grow((void **) &in->points, in->npoints, &in->points_cap,
                   sizeof(*in->points))
        != 0)
    {
        return BRIM_ENOMEM;
    }
    in->points[in->npoints].node = (uint32_t) node;
    in->points[in->npoints].pos = pos;
    in->npoints++;
    in->max_node = BRIM_MAX(in->max_node, (uint32_t) node);
    return 0;
}

/* Handle "key POSITION" at LINE; BRIM_ENOMEM stops the read. */
static int
place_key(struct place_input *in, size_t line, char **w, int nw)
{
    uint64_t pos;

    if (nw != 2) {
        place_bad(in, line, "key takes one POSITION, got %d values", nw - 1);
        return 0;
    }
    if (brim_parse_u64(w[1], 0, UINT64_MAX, &pos) != 0) {
        place_bad(in, line,
                  "bad position \"%.40s\": expected a decimal "
                  "0..%" PRIu64,
                  w[1], UINT64_MAX);
        return 0;
    }
    if (place_grow((void **) &in->keys, in->nkeys, &in->keys_cap,
                   sizeof(*in->keys))
        != 0)
    {
        return BRIM_ENOMEM;
    }
    in->keys[in->nkeys++] = pos;
    return 0;
}

/* Parse one line TEXT (modified in place) numbered LINE. */
static int
place_line(struct place_input *in, size_t line, char *text)
{
    char *w[4], *save, *tok;
    int   nw;

    tok = strchr(text, '#');
    if (tok != NULL) {
        *tok = '\0';
    }
    nw = 0;
    for (tok = strtok_r(text, " \t\r\n", &save); tok != NULL;
         tok = strtok_r(NULL, " \t\r\n", &save))
    {
        if (nw < 4) {
            w[nw] = tok;
        }
        nw++;
    }
    if (nw == 0) {
        return 0;
    }
    nw = BRIM_MIN(nw, 4);
    if (strcmp(w[0], "eps") == 0) {
        place_eps(in, line, w, nw);
        return 0;
    }
    if (strcmp(w[0], "point") == 0) {
        return place_point(in, line, w, nw);
    }
    if (strcmp(w[0], "key") == 0) {
        return place_key(in, line, w, nw);
    }
    place_bad(in, line, "unknown item \"%.40s\" (expected eps, point or key)",
              w[0]);
    return 0;
}

/* Read every line of F into IN. Returns 0 or BRIM_ENOMEM. */
static int
place_read(FILE *f, struct place_input *in)
{
    char   *buf;
    size_t  len, line;
    ssize_t got;
    int     rc;

    buf = NULL;
    len = 0;
    line = 0;
    rc = 0;
    while (rc == 0 && (got = getline(&buf, &len, f)) != -1) {
        line++;
        if (memchr(buf, '\0', (size_t) got) != NULL) {
            place_bad(in, line, "the line holds a NUL byte");
            continue;
        }
        rc = place_line(in, line, buf);
    }
    free(buf); /* getline()'s, not brim_malloc()'s */
    return rc;
}

/*
 * Build RING from IN's points and fill ID (RING->nnodes entries) with each
 * ring index's node number. Names are zero-padded, so ring order (by name)
 * is numeric order and a tie goes to the smaller number.
 */
static int
place_build(const struct place_input *in, struct brim_ring *ring, uint32_t *id,
            char errbuf[BRIM_ERRBUF_LEN])
{
    uint64_t *pos;
    char      name[BRIM_SIM_NAME_LEN];
    uint32_t  node, npos;
    size_t    i;
    int       rc;

    pos = brim_malloc(in->npoints * sizeof(*pos));
    rc = pos == NULL ? BRIM_ENOMEM : brim_ring_init(ring, 0, 1, errbuf);
    for (node = 0; rc == 0 && node <= in->max_node; node++) {
        npos = 0;
        for (i = 0; i < in->npoints; i++) {
            if (in->points[i].node == node) {
                pos[npos++] = in->points[i].pos;
            }
        }
        if (npos == 0) {
            continue;
        }
        snprintf(name, sizeof(name), BRIM_SIM_NAME_FMT, node);
        rc = brim_ring_add_node_at(ring, name, BRIM_WEIGHT_PPM_ONE, pos, npos,
                                   errbuf);
        if (rc == 0) {
            id[brim_ring_find_node(ring, name, strlen(name))] = node;
        }
    }
    if (rc == BRIM_ENOMEM) {
        brim_errfmt(errbuf, "place: out of memory for %zu points", in->npoints);
    }
    brim_free(pos);
    return rc;
}

/* Place IN's keys and print the report; 0 or an error with ERRBUF set. */
static int
place_run(const struct place_input *in, char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_ring ring;
    uint16_t        *owner;
    uint32_t        *id;
    uint64_t        *load, cap;
    size_t           i;
    int              rc;

    memset(&ring, 0, sizeof(ring));
    owner = brim_malloc((in->nkeys + 1) * sizeof(*owner));
    id = brim_calloc((size_t) in->max_node + 1, sizeof(*id));
    load = brim_calloc((size_t) in->max_node + 1, sizeof(*load));
    rc = owner == NULL || id == NULL || load == NULL ? BRIM_ENOMEM : 0;
    if (rc != 0) {
        brim_errfmt(errbuf, "place: out of memory for %zu keys", in->nkeys);
    }
    if (rc == 0) {
        rc = place_build(in, &ring, id, errbuf);
    }
    if (rc == 0) {
        rc = brim_place_replace(&ring, in->eps_ppm, in->keys, in->nkeys, owner,
                                errbuf);
    }
    if (rc == 0) {
        cap = brim_cap(in->nkeys, in->eps_ppm, BRIM_WEIGHT_PPM_ONE,
                       (uint64_t) ring.nnodes * BRIM_WEIGHT_PPM_ONE);
        if (cap == UINT64_MAX) {
            printf("cap none\n");
        } else {
            printf("cap %" PRIu64 "\n", cap);
        }
        for (i = 0; i < in->nkeys; i++) {
            printf("key %" PRIu64 " %" PRIu32 " %" PRIu32 "\n", in->keys[i],
                   id[brim_ring_owner(&ring, in->keys[i])], id[owner[i]]);
            load[id[owner[i]]]++;
        }
        printf("load");
        for (i = 0; i <= in->max_node; i++) {
            printf(" %" PRIu64, load[i]);
        }
        printf("\n");
    }
    brim_ring_destroy(&ring);
    brim_free(owner);
    brim_free(id);
    brim_free(load);
    return rc;
}

/* Release what IN holds. */
static void
place_input_free(struct place_input *in)
{
    brim_free(in->points);
    brim_free(in->keys);
}

int
brim_sim_cmd_place(int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct place_input         in;
    FILE                      *f;
    char                       errbuf[BRIM_ERRBUF_LEN];
    int                        opt, rc;

    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            fputs(place_usage, stdout);
            return BRIM_SIM_EXIT_OK;
        }
        return brim_sim_bad_flag("place", opt, argv);
    }
    if (argc - optind != 1) {
        return brim_sim_usage_error("place",
                                    "expected one FILE (or -), "
                                    "got %d arguments",
                                    argc - optind);
    }

    memset(&in, 0, sizeof(in));
    if (strcmp(argv[optind], "-") == 0) {
        f = stdin;
        in.fname = "<stdin>";
    } else {
        f = fopen(argv[optind], "r");
        in.fname = argv[optind];
        if (f == NULL) {
            fprintf(stderr, "brim-sim place: cannot open \"%s\": %s\n",
                    argv[optind], strerror(errno));
            return BRIM_SIM_EXIT_USAGE;
        }
    }
    rc = place_read(f, &in);
    if (rc == 0 && ferror(f)) {
        fprintf(stderr, "brim-sim place: %s: read error\n", in.fname);
        rc = BRIM_SIM_EXIT_USAGE;
    } else if (rc != 0) {
        fprintf(stderr, "brim-sim place: %s: out of memory\n", in.fname);
        rc = BRIM_SIM_EXIT_FAIL;
    }
    if (f != stdin) {
        fclose(f);
    }
    if (rc != 0) {
        place_input_free(&in);
        return rc;
    }

    if (in.errors == 0 && in.npoints == 0) {
        fprintf(stderr, "%s: no point lines: the ring needs a token\n",
                in.fname);
        in.errors++;
    }
    if (in.errors == 0 && in.have_eps == 0) {
        fprintf(stderr,
                "%s: no eps line (write \"eps 0.10\" or "
                "\"eps none\")\n",
                in.fname);
        in.errors++;
    }
    if (in.errors > PLACE_ERRORS_MAX) {
        fprintf(stderr, "%s: %u bad lines in all\n", in.fname, in.errors);
    }
    if (in.errors != 0) {
        place_input_free(&in);
        return BRIM_SIM_EXIT_USAGE;
    }

    rc = place_run(&in, errbuf);
    if (rc != 0) {
        fprintf(stderr, "brim-sim place: %s\n", errbuf);
    }
    place_input_free(&in);
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
        fprintf(stderr, "brim-sim place: cannot write the output\n");
        rc = BRIM_ESYS;
    }
    return rc == 0 ? BRIM_SIM_EXIT_OK : BRIM_SIM_EXIT_FAIL;
}
