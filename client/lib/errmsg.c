/*
 * client/lib/errmsg.c - the last-failure message of a libbrim handle:
 * every module writes it with brim_lib_errmsg() (pool.c, route.c,
 * coordlink.c, client.c and the calls above them), the caller reads it
 * with brim_errmsg(). It is the bottom of libbrim's call graph and calls
 * no other file of client/lib, so that reporting an error never makes a
 * lower module depend on a higher one (docs/design.md, "Architecture").
 */
#include "client/lib/client_int.h"

#include <stdarg.h>
#include <stdio.h>

void
brim_lib_errmsg(struct brim_client *c, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
    va_end(ap);
}

const char *
brim_errmsg(const struct brim_client *c)
{
    return c != NULL ? c->errmsg : "no client";
}
