/*
 * tests/cluster/mctext_model.c - what proto/mctext.c makes of a byte
 * stream, one line per answer, for tests/cluster/mctext_vs_memcached.py to
 * set beside what a real memcached answers to the same bytes. It parses
 * the file named on the command line as a connection would and prints:
 *   an error's reply line (nothing when noreply silences it),
 *   "CLOSED" where the connection closes (and stops),
 *   "MN" for mn, "?" for a meta command with q (its reply depends on the
 *   cache), "." for any other command that answers, nothing for a text
 *   command with noreply,
 *   "WAIT" when it stops for more bytes (a swallow that runs past the end
 *   counts as that too).
 * Limits are memcached's defaults. Exits 1 when the file cannot be read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/mctext.h"

/* Print the answer CMD; 1 when the connection ends there. */
static int
model_print(const struct brim_mctext_cmd *cmd)
{
    if (cmd->close) {
        printf("CLOSED\n");
        return 1;
    }
    if (cmd->err != BRIM_MCTEXT_ERR_NONE) {
        if (cmd->reply != NULL) {
            printf("%.*s\n", (int) cmd->reply_len - 2, cmd->reply);
        }
        return 0;
    }
    switch (cmd->kind) {
    case BRIM_MCTEXT_QUIT:
        printf("CLOSED\n");
        return 1;
    case BRIM_MCTEXT_MN:
        printf("MN\n");
        return 0;
    case BRIM_MCTEXT_MG:
    case BRIM_MCTEXT_MS:
    case BRIM_MCTEXT_MD:
    case BRIM_MCTEXT_MA:
        printf("%s\n", cmd->noreply ? "?" : ".");
        return 0;
    default:
        if (cmd->noreply == 0) {
            printf(".\n");
        }
        return 0;
    }
}

int
main(int argc, char **argv)
{
    struct brim_mctext_limits lim;
    struct brim_mctext_cmd    cmd;
    static char               buf[8 << 20];
    size_t                    len, off;
    FILE                     *fp;

    if (argc == 2
        && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: mctext_model FILE\n"
               "Prints what proto/mctext.c makes of the bytes of FILE, one "
               "line per answer, for\ntests/cluster/mctext_vs_memcached.py "
               "(CTest) to compare with a real memcached.\nNo environment "
               "variable; no option but --help (-h).\n");
        return 0;
    }
    fp = argc == 2 ? fopen(argv[1], "rb") : NULL;
    if (fp == NULL) {
        fprintf(stderr, "usage: mctext_model FILE\n");
        return 1;
    }
    len = fread(buf, 1, sizeof(buf), fp);
    fclose(fp);
    brim_mctext_limits_default(&lim);
    off = 0;
    while (off < len) {
        if (brim_mctext_parse(buf + off, len - off, &lim, &cmd) != 0) {
            printf("WAIT\n");
            return 0;
        }
        if (model_print(&cmd)) {
            return 0;
        }
        off += cmd.consumed;
        if (cmd.swallow > len - off) {
            printf("WAIT\n");
            return 0;
        }
        off += cmd.swallow;
    }
    return 0;
}
