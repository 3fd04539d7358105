/*
 * proto/ops.c - the op table generated from BRIM_OP_MAP (proto/ops.h):
 * lookup by opcode and names. Pure data; no I/O.
 */
#include "proto/ops.h"

#include <stddef.h>

/* Every row's SIG spells exactly MAX_ARGS types, and codes fit the table. */
#define OPS_CHECK(name, code, mina, maxa, sig, karg, rep, fl)                  \
    _Static_assert(sizeof(sig) - 1 == (maxa) && (mina) <= (maxa) && (code) > 0 \
                       && (code) < BRIM_OP_CODE_LIMIT && (karg) < (mina),      \
                   "bad BRIM_OP_MAP row " #name);
BRIM_OP_MAP(OPS_CHECK)
#undef OPS_CHECK

#define OPS_RESERVED_CHECK(name, code)                                         \
    _Static_assert((code) > 0 && (code) < BRIM_OP_CODE_LIMIT,                  \
                   "bad BRIM_OP_RESERVED_MAP row " #name);
BRIM_OP_RESERVED_MAP(OPS_RESERVED_CHECK)
#undef OPS_RESERVED_CHECK

/* Rows by opcode; a gap (name NULL) is an unknown or reserved code. */
static const struct brim_op_info ops_table[BRIM_OP_CODE_LIMIT] = {
#define OPS_ROW(n, c, mina, maxa, s, karg, rep, fl)                            \
    [c] = {.name = #n,                                                         \
           .sig = (s),                                                         \
           .code = (c),                                                        \
           .min_args = (mina),                                                 \
           .max_args = (maxa),                                                 \
           .key_arg = (karg),                                                  \
           .reply = (rep),                                                     \
           .flags = (fl)},
    BRIM_OP_MAP(OPS_ROW)
#undef OPS_ROW
};

const struct brim_op_info *
brim_op_info(uint64_t code)
{
    if (code >= BRIM_OP_CODE_LIMIT || ops_table[code].name == NULL) {
        return NULL;
    }
    return &ops_table[code];
}

const char *
brim_op_name(uint64_t code)
{
    const struct brim_op_info *info;

    info = brim_op_info(code);
    if (info != NULL) {
        return info->name;
    }
    switch (code) {
#define OPS_RESERVED_NAME(name, c)                                             \
    case (c):                                                                  \
        return #name;
        BRIM_OP_RESERVED_MAP(OPS_RESERVED_NAME)
#undef OPS_RESERVED_NAME
    default:
        return "UNKNOWN";
    }
}
