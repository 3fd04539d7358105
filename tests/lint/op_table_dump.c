/*
 * tests/lint/op_table_dump.c - prints the op table compiled into
 * proto/ops.c, the roles of proto/ops.h and the statuses of <brim/status.h>,
 * one item a line, in the format of tests/support/brimtest.py's
 * table_lines(). lint.py_support compares the two, so the Python tests'
 * table, read from the headers, is the one brim is built with.
 */
#include <stdio.h>
#include <string.h>

#include <brim/status.h>

#include "proto/ops.h"

/* enum brim_role has no X-macro: its names, by value. */
static const char *const dump_roles[] = {
    [BRIM_ROLE_CLIENT] = "CLIENT",
    [BRIM_ROLE_NODE] = "NODE",
    [BRIM_ROLE_COORD] = "COORD",
    [BRIM_ROLE_ADMIN] = "ADMIN",
};

_Static_assert(sizeof(dump_roles) / sizeof(dump_roles[0]) == BRIM_ROLE_MAX + 1,
               "a role is missing from dump_roles");

int
main(int argc, char **argv)
{
    const struct brim_op_info *info;
    const char                *name;
    unsigned                   code;
    int                        role;

    if (argc > 1) {
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
            printf("usage: op_table_dump\n"
                   "Prints the op table compiled into proto/ops.c, the roles "
                   "and the statuses,\none a line, for lint.py_support "
                   "(CTest) to compare with the Python tests'\ntable. No "
                   "environment variable; no option but --help (-h).\n");
            return 0;
        }
        fprintf(stderr,
                "op_table_dump: unexpected argument \"%s\"; see "
                "op_table_dump --help\n",
                argv[1]);
        return 2;
    }
    for (code = 0; code < BRIM_OP_CODE_LIMIT; code++) {
        info = brim_op_info(code);
        if (info != NULL) {
            printf("op %u %s %u %u \"%s\" %d %u 0x%02x\n", code, info->name,
                   info->min_args, info->max_args, info->sig, info->key_arg,
                   info->reply, info->flags);
            continue;
        }
        name = brim_op_name(code);
        if (strcmp(name, "UNKNOWN") != 0) {
            printf("reserved %u %s\n", code, name);
        }
    }
    for (role = BRIM_ROLE_MIN; role <= BRIM_ROLE_MAX; role++) {
        printf("role %d %s\n", role, dump_roles[role]);
    }
    printf("status 0 OK\n");
#define DUMP_STATUS(n, value, text) printf("status %d %s\n", (value), #n);
    BRIM_STATUS_MAP(DUMP_STATUS)
#undef DUMP_STATUS
    return 0;
}
