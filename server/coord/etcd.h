/*
 * server/coord/etcd.h - a small client of etcd v3's JSON gateway (the
 * grpc-gateway that etcd 3.4 serves at /v3/ on its client URLs), through
 * libcurl and jansson: one key read, a put only if a key is absent (the
 * election), a put guarded by two compares (the state), and leases.
 * Keys and values travel base64-encoded and 64-bit integers as JSON
 * strings, as the gateway's proto3 JSON mapping has them
 * (etcd.io/docs/v3.4/dev-guide/api_grpc_gateway/). Every call blocks for
 * at most the timeout given to brim_etcd_new(), on one URL; a failed call
 * moves on to the next URL for the next call. No libuv, no logging.
 */
#ifndef BRIM_SERVER_COORD_ETCD_H
#define BRIM_SERVER_COORD_ETCD_H

#include <stddef.h>
#include <stdint.h>

#include <brim/status.h>

/* Most URLs in one --etcd list. */
#define BRIM_ETCD_URLS_MAX 8

struct brim_etcd; /* opaque */

/* One key as etcd holds it. */
struct brim_etcd_kv {
    unsigned char *value;           /* brim_malloc'd; the caller frees */
    size_t         len;             /* bytes of VALUE */
    int64_t        create_revision; /* revision that created the key */
    int64_t        mod_revision;    /* revision of its last put */
    int64_t        lease;           /* lease id it is held under, or 0 */
};

/*
 * A client of the etcd cluster at URLS, a comma-separated list of
 * http://HOST:PORT (at most BRIM_ETCD_URLS_MAX; copied). TIMEOUT_MS (>= 1)
 * bounds each call, connection included. On success *OUT is a new client;
 * free it with brim_etcd_free(). Returns 0, BRIM_EINVAL (an empty list,
 * too many URLs, one not starting with http://) or BRIM_ENOMEM, with
 * ERRBUF (NULL allowed) saying why.
 */
int brim_etcd_new(const char *urls, uint32_t timeout_ms, struct brim_etcd **out,
                  char errbuf[BRIM_ERRBUF_LEN]);

/* Free E and its connection; NULL is fine. */
void brim_etcd_free(struct brim_etcd *e);

/* The URL the next call goes to (valid until the next call). */
const char *brim_etcd_url(const struct brim_etcd *e);

/*
 * Read KEY (LEN bytes, borrowed) with a linearizable range. Returns 0 and
 * fills *KV (free KV->value with brim_free()), BRIM_ENOTFOUND (no such
 * key; *KV untouched), BRIM_ECONNREFUSED or BRIM_ETIMEDOUT (etcd not
 * reached in time), BRIM_EBADREPLY (not the gateway's answer) or
 * BRIM_ENOMEM. ERRBUF says why.
 */
int brim_etcd_get(struct brim_etcd *e, const char *key, struct brim_etcd_kv *kv,
                  char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Grant a lease of TTL_S seconds. etcd may grant a longer one (it raises
 * a TTL below its floor): *GRANTED_S gets what it granted, *ID the lease.
 * Errors as brim_etcd_get(), without BRIM_ENOTFOUND.
 */
int brim_etcd_lease_grant(struct brim_etcd *e, int64_t ttl_s, int64_t *id,
                          int64_t *granted_s, char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Renew lease ID once (one request of the keepalive stream). Returns 0
 * with *TTL_S the seconds it now has, BRIM_ENOTFOUND when the lease has
 * expired or was revoked, or an error as brim_etcd_get().
 */
int brim_etcd_lease_keepalive(struct brim_etcd *e, int64_t id, int64_t *ttl_s,
                              char errbuf[BRIM_ERRBUF_LEN]);

/* Revoke lease ID (its keys go with it). Errors as brim_etcd_get(). */
int brim_etcd_lease_revoke(struct brim_etcd *e, int64_t id,
                           char errbuf[BRIM_ERRBUF_LEN]);

/*
 * One transaction: if KEY does not exist, put VALUE (LEN bytes, borrowed)
 * under lease LEASE (0: none) and return 0 with *REVISION the revision of
 * that put (the new key's create revision); otherwise return BRIM_EEXISTS
 * and fill *HOLDER with the key as it is (free HOLDER->value). Other
 * errors as brim_etcd_get().
 */
int brim_etcd_put_if_absent(struct brim_etcd *e, const char *key,
                            const void *value, size_t len, int64_t lease,
                            int64_t *revision, struct brim_etcd_kv *holder,
                            char errbuf[BRIM_ERRBUF_LEN]);

/*
 * One transaction: if GUARD's create revision is GUARD_CREATE (the
 * caller still holds the key it created then) and KEY's mod revision is
 * MOD (0: KEY does not exist), put VALUE (LEN bytes, borrowed) at KEY and
 * return 0 with *NEW_MOD its new mod revision. A failed compare returns
 * BRIM_EDENIED and writes nothing. Other errors as brim_etcd_get(); after
 * BRIM_ETIMEDOUT the put may or may not have been applied.
 */
int brim_etcd_put_guarded(struct brim_etcd *e, const char *key,
                          const void *value, size_t len, const char *guard,
                          int64_t guard_create, int64_t mod, int64_t *new_mod,
                          char errbuf[BRIM_ERRBUF_LEN]);

#endif /* BRIM_SERVER_COORD_ETCD_H */
