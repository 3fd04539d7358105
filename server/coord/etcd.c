/*
 * server/coord/etcd.c - etcd v3's JSON gateway over libcurl (see etcd.h).
 * A request is one POST of a JSON object to /v3/<service>/<method>; the
 * answer is one JSON object, or {"error": ...} with an HTTP error status.
 * Base64 is OpenSSL's (EVP_EncodeBlock), already linked for AUTH. One
 * curl easy handle keeps its connection open between calls.
 */
#include "server/coord/etcd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "common/alloc.h"
#include "common/defs.h"

/* Largest gateway answer read: a state of two maps at P = 2^20, base64. */
#define ETCD_REPLY_MAX (16u << 20)

struct brim_etcd {
    CURL    *curl;                     /* one handle, kept alive */
    char    *urls[BRIM_ETCD_URLS_MAX]; /* "http://host:port", no '/' */
    uint32_t nurls;                    /* entries of URLS */
    uint32_t cur;                      /* the URL the next call uses */
    uint32_t timeout_ms;               /* per call */
    char    *reply;                    /* the answer being read */
    size_t   reply_len, reply_cap;     /* its bytes, its room */
};

/* ---- base64 ---- */

/* VALUE (LEN bytes) as a NUL-terminated base64 string (brim_malloc). */
static char *
etcd_b64(const void *value, size_t len)
{
    char *out;

    out = brim_malloc(4 * ((len + 2) / 3) + 1);
    if (out != NULL) {
        EVP_EncodeBlock((unsigned char *) out, value, (int) len);
    }
    return out;
}

/* Decode the base64 text S into *OUT (brim_malloc) and *LEN. Returns 0,
 * BRIM_EBADREPLY or BRIM_ENOMEM. */
static int
etcd_unb64(const char *s, unsigned char **out, size_t *len)
{
    size_t         n = strlen(s), pad = 0;
    unsigned char *buf;
    int            got;

    if (n % 4 != 0) {
        return BRIM_EBADREPLY;
    }
    buf = brim_malloc(n / 4 * 3 + 1);
    if (buf == NULL) {
        return BRIM_ENOMEM;
    }
    got = n == 0 ? 0 : EVP_DecodeBlock(buf, (const unsigned char *) s, (int) n);
    if (got < 0) {
        brim_free(buf);
        return BRIM_EBADREPLY;
    }
    /* EVP_DecodeBlock counts the padding as zero bytes. */
    pad = (n > 0 && s[n - 1] == '=') + (n > 1 && s[n - 2] == '=');
    *out = buf;
    *len = (size_t) got - pad;
    return 0;
}

/* ---- the client ---- */

int
brim_etcd_new(const char *urls, uint32_t timeout_ms, struct brim_etcd **out,
              char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_etcd *e;
    const char       *p = urls, *comma;
    size_t            n;

    e = brim_calloc(1, sizeof(*e));
    if (e == NULL) {
        brim_errfmt(errbuf, "etcd: out of memory");
        return BRIM_ENOMEM;
    }
    e->timeout_ms = BRIM_MAX(timeout_ms, 1u);
    while (*p != '\0') {
        comma = strchr(p, ',');
        n = comma != NULL ? (size_t) (comma - p) : strlen(p);
        while (n > 0 && p[n - 1] == '/') {
            n--; /* "http://h:p/" and "http://h:p" alike */
        }
        if (e->nurls == BRIM_ETCD_URLS_MAX || n <= 7
            || strncmp(p, "http://", 7) != 0) {
            brim_errfmt(errbuf,
                        "etcd: \"%.*s\" is not http://HOST:PORT, or more than "
                        "%d URLs",
                        (int) BRIM_MIN(n, 100), p, BRIM_ETCD_URLS_MAX);
            brim_etcd_free(e);
            return BRIM_EINVAL;
        }
        e->urls[e->nurls] = brim_malloc(n + 1);
        if (e->urls[e->nurls] == NULL) {
            brim_etcd_free(e);
            return BRIM_ENOMEM;
        }
        memcpy(e->urls[e->nurls], p, n);
        e->urls[e->nurls++][n] = '\0';
        p = comma != NULL ? comma + 1 : p + strlen(p);
    }
    if (e->nurls == 0) {
        brim_errfmt(errbuf, "etcd: no URL given");
        brim_etcd_free(e);
        return BRIM_EINVAL;
    }
    e->curl = curl_easy_init();
    if (e->curl == NULL) {
        brim_errfmt(errbuf, "etcd: curl_easy_init failed");
        brim_etcd_free(e);
        return BRIM_ENOMEM;
    }
    *out = e;
    return 0;
}

void
brim_etcd_free(struct brim_etcd *e)
{
    uint32_t i;

    if (e == NULL) {
        return;
    }
    if (e->curl != NULL) {
        curl_easy_cleanup(e->curl);
    }
    for (i = 0; i < e->nurls; i++) {
        brim_free(e->urls[i]);
    }
    brim_free(e->reply);
    brim_free(e);
}

const char *
brim_etcd_url(const struct brim_etcd *e)
{
    return e->urls[e->cur];
}

/* curl's write callback: append to E->reply, at most ETCD_REPLY_MAX. */
static size_t
etcd_write_cb(char *p, size_t size, size_t n, void *arg)
{
    struct brim_etcd *e = arg;
    size_t            len = size * n, cap;
    char             *grown;

    if (e->reply_len + len + 1 > ETCD_REPLY_MAX) {
        return 0; /* curl fails the transfer */
    }
    if (e->reply_len + len + 1 > e->reply_cap) {
        cap = BRIM_MAX(2 * e->reply_cap, e->reply_len + len + 1);
        grown = brim_realloc(e->reply, cap);
        if (grown == NULL) {
            return 0;
        }
        e->reply = grown;
        e->reply_cap = cap;
    }
    memcpy(e->reply + e->reply_len, p, len);
    e->reply_len += len;
    e->reply[e->reply_len] = '\0';
    return len;
}

/*
 * POST REQ (owned: released here; NULL, a failed json_pack(), is out of
 * memory) to the current URL + PATH and parse the answer into *REP (the
 * caller json_decref()s it; NULL on error). A call that fails to reach
 * etcd moves the next call on to the next URL.
 */
static int
etcd_call(struct brim_etcd *e, const char *path, json_t *req, json_t **rep,
          char *errbuf)
{
    struct curl_slist *hdr;
    json_error_t       jerr;
    char               url[512], *body;
    CURLcode           cc;
    long               code = 0;

    *rep = NULL;
    body = req != NULL ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (body == NULL) {
        brim_errfmt(errbuf, "etcd: out of memory encoding a request");
        return BRIM_ENOMEM;
    }
    snprintf(url, sizeof(url), "%s%s", e->urls[e->cur], path);
    hdr = curl_slist_append(NULL, "Content-Type: application/json");
    e->reply_len = 0;
    curl_easy_setopt(e->curl, CURLOPT_URL, url);
    curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, etcd_write_cb);
    curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
    curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, (long) e->timeout_ms);
    curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, (long) e->timeout_ms);
    curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
    cc = curl_easy_perform(e->curl);
    curl_slist_free_all(hdr);
    free(body); /* jansson's allocation */
    if (cc != CURLE_OK) {
        brim_errfmt(errbuf, "etcd: %s: %s", url, curl_easy_strerror(cc));
        e->cur = (e->cur + 1) % e->nurls;
        return cc == CURLE_OPERATION_TIMEDOUT ? BRIM_ETIMEDOUT
                                              : BRIM_ECONNREFUSED;
    }
    curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &code);
    *rep = json_loadb(e->reply != NULL ? e->reply : "", e->reply_len, 0, &jerr);
    if (*rep == NULL || !json_is_object(*rep) || code != 200) {
        brim_errfmt(errbuf, "etcd: %s: HTTP %ld: %.120s", url, code,
                    e->reply != NULL ? e->reply : "");
        json_decref(*rep);
        *rep = NULL;
        /* A member without quorum answers 503 or the like: try another. */
        e->cur = (e->cur + 1) % e->nurls;
        return code >= 500 ? BRIM_ECONNREFUSED : BRIM_EBADREPLY;
    }
    return 0;
}

/* The 64-bit integer O holds as the gateway writes one: a JSON string,
 * or absent (0, proto3's default). */
static int64_t
etcd_i64(const json_t *o)
{
    if (json_is_string(o)) {
        return strtoll(json_string_value(o), NULL, 10);
    }
    return json_is_integer(o) ? (int64_t) json_integer_value(o) : 0;
}

/* A JSON string of the decimal V. */
static json_t *
etcd_i64_str(int64_t v)
{
    char s[24];

    snprintf(s, sizeof(s), "%" PRId64, v);
    return json_string(s);
}

/* The base64 string of KEY as a JSON value. */
static json_t *
etcd_b64_json(const void *p, size_t len)
{
    char   *s = etcd_b64(p, len);
    json_t *j;

    if (s == NULL) {
        return NULL;
    }
    j = json_string(s);
    brim_free(s);
    return j;
}

/* The first kv of a range answer R into *KV. */
static int
etcd_kv(const json_t *r, struct brim_etcd_kv *kv, char *errbuf)
{
    const json_t *kvs = json_object_get(r, "kvs"), *k;
    const char   *v;
    int           rc;

    if (!json_is_array(kvs) || json_array_size(kvs) == 0) {
        return BRIM_ENOTFOUND;
    }
    k = json_array_get(kvs, 0);
    v = json_string_value(json_object_get(k, "value"));
    memset(kv, 0, sizeof(*kv));
    rc = etcd_unb64(v != NULL ? v : "", &kv->value, &kv->len);
    if (rc != 0) {
        brim_errfmt(errbuf, "etcd: a value is not base64");
        return rc;
    }
    kv->create_revision = etcd_i64(json_object_get(k, "create_revision"));
    kv->mod_revision = etcd_i64(json_object_get(k, "mod_revision"));
    kv->lease = etcd_i64(json_object_get(k, "lease"));
    return 0;
}

int
brim_etcd_get(struct brim_etcd *e, const char *key, struct brim_etcd_kv *kv,
              char errbuf[BRIM_ERRBUF_LEN])
{
    json_t *rep;
    int     rc;

    rc = etcd_call(e, "/v3/kv/range",
                   json_pack("{s:o*}", "key", etcd_b64_json(key, strlen(key))),
                   &rep, errbuf);
    if (rc == 0) {
        rc = etcd_kv(rep, kv, errbuf);
    }
    json_decref(rep);
    return rc;
}

int
brim_etcd_lease_grant(struct brim_etcd *e, int64_t ttl_s, int64_t *id,
                      int64_t *granted_s, char errbuf[BRIM_ERRBUF_LEN])
{
    json_t *rep;
    int     rc;

    rc = etcd_call(e, "/v3/lease/grant",
                   json_pack("{s:o*}", "TTL", etcd_i64_str(ttl_s)), &rep,
                   errbuf);
    if (rc == 0) {
        *id = etcd_i64(json_object_get(rep, "ID"));
        *granted_s = etcd_i64(json_object_get(rep, "TTL"));
        if (*id == 0 || *granted_s <= 0) {
            brim_errfmt(errbuf, "etcd: lease grant: no lease in the answer");
            rc = BRIM_EBADREPLY;
        }
    }
    json_decref(rep);
    return rc;
}

int
brim_etcd_lease_keepalive(struct brim_etcd *e, int64_t id, int64_t *ttl_s,
                          char errbuf[BRIM_ERRBUF_LEN])
{
    json_t *rep;
    int64_t ttl;
    int     rc;

    /* The keepalive stream, one message long: one answer, in "result". */
    rc = etcd_call(e, "/v3/lease/keepalive",
                   json_pack("{s:o*}", "ID", etcd_i64_str(id)), &rep, errbuf);
    if (rc == 0) {
        ttl = etcd_i64(json_object_get(json_object_get(rep, "result"), "TTL"));
        if (ttl <= 0) {
            brim_errfmt(errbuf, "etcd: lease %" PRId64 " has expired", id);
            rc = BRIM_ENOTFOUND;
        } else {
            *ttl_s = ttl;
        }
    }
    json_decref(rep);
    return rc;
}

int
brim_etcd_lease_revoke(struct brim_etcd *e, int64_t id,
                       char errbuf[BRIM_ERRBUF_LEN])
{
    json_t *rep;
    int     rc;

    rc = etcd_call(e, "/v3/lease/revoke",
                   json_pack("{s:o*}", "ID", etcd_i64_str(id)), &rep, errbuf);
    json_decref(rep);
    return rc;
}

/* Run transaction TXN (owned, as etcd_call()'s REQ): 0 with *REP the answer when it
 * succeeded, BRIM_EDENIED (with *REP) when a compare failed. */
static int
etcd_txn(struct brim_etcd *e, json_t *txn, json_t **rep, char *errbuf)
{
    int rc;

    rc = etcd_call(e, "/v3/kv/txn", txn, rep, errbuf);
    if (rc != 0) {
        return rc;
    }
    /* proto3 leaves a false "succeeded" out. */
    return json_is_true(json_object_get(*rep, "succeeded")) ? 0 : BRIM_EDENIED;
}

int
brim_etcd_put_if_absent(struct brim_etcd *e, const char *key, const void *value,
                        size_t len, int64_t lease, int64_t *revision,
                        struct brim_etcd_kv *holder,
                        char                 errbuf[BRIM_ERRBUF_LEN])
{
    json_t *txn, *rep = NULL, *r;
    int     rc;

    txn = json_pack(
        "{s:[{s:o*,s:s,s:s}],s:[{s:{s:o*,s:o*,s:o*}}],s:[{s:{s:o*}}]}",
        "compare", "key", etcd_b64_json(key, strlen(key)), "target", "CREATE",
        "create_revision", "0", "success", "request_put", "key",
        etcd_b64_json(key, strlen(key)), "value", etcd_b64_json(value, len),
        "lease", etcd_i64_str(lease), "failure", "request_range", "key",
        etcd_b64_json(key, strlen(key)));
    rc = etcd_txn(e, txn, &rep, errbuf);
    if (rc == 0) {
        *revision = etcd_i64(
            json_object_get(json_object_get(rep, "header"), "revision"));
    } else if (rc == BRIM_EDENIED) {
        r = json_object_get(
            json_array_get(json_object_get(rep, "responses"), 0),
            "response_range");
        rc = etcd_kv(r, holder, errbuf);
        /* Gone between the compare and the range: it cannot be, the
         * transaction is atomic; but a holder must be named. */
        rc = rc == 0               ? BRIM_EEXISTS
            : rc == BRIM_ENOTFOUND ? BRIM_EBADREPLY
                                   : rc;
    }
    json_decref(rep);
    return rc;
}

int
brim_etcd_put_guarded(struct brim_etcd *e, const char *key, const void *value,
                      size_t len, const char *guard, int64_t guard_create,
                      int64_t mod, int64_t *new_mod,
                      char errbuf[BRIM_ERRBUF_LEN])
{
    json_t *txn, *rep = NULL;
    int     rc;

    txn = json_pack(
        "{s:[{s:o*,s:s,s:o*},{s:o*,s:s,s:o*}],"
        "s:[{s:{s:o*,s:o*}}]}",
        "compare", "key", etcd_b64_json(guard, strlen(guard)), "target",
        "CREATE", "create_revision", etcd_i64_str(guard_create), "key",
        etcd_b64_json(key, strlen(key)), "target", "MOD", "mod_revision",
        etcd_i64_str(mod), "success", "request_put", "key",
        etcd_b64_json(key, strlen(key)), "value", etcd_b64_json(value, len));
    rc = etcd_txn(e, txn, &rep, errbuf);
    if (rc == 0) {
        *new_mod = etcd_i64(
            json_object_get(json_object_get(rep, "header"), "revision"));
    } else if (rc == BRIM_EDENIED) {
        brim_errfmt(errbuf,
                    "etcd: the guarded write of %s failed its compare: "
                    "leadership (create revision %" PRId64
                    ") or the state (mod revision %" PRId64 ") changed",
                    key, guard_create, mod);
    }
    json_decref(rep);
    return rc;
}
