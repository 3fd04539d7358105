/*
 * client/brimctl/out.c - what every brimctl command prints with: keys
 * shown safely, the exit status and message of a libbrim failure, and
 * JSON as JSON, aligned "name value" lines or tables (issue 12: numbers
 * as integers or fixed decimals, byte counts with binary units beside the
 * exact figure). Below cmd.c, cluster.c and import.c; calls only libbrim
 * and common/.
 */
#include "client/brimctl/ctl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <brim.h>

#include "common/parse.h"
#include "common/units.h"

const char *
brim_ctl_show_key(const char *key, size_t len, char out[BRIM_CTL_KEY_SHOWN + 4])
{
    size_t i;

    if (len == 0) {
        return "\"\"";
    }
    for (i = 0; i < len && i < BRIM_CTL_KEY_SHOWN; i++) {
        out[i] = key[i] >= 0x20 && key[i] < 0x7f ? key[i] : '?';
    }
    if (len > BRIM_CTL_KEY_SHOWN) {
        memcpy(&out[i], "...", 3);
        i += 3;
    }
    out[i] = '\0';
    return out;
}

int
brim_ctl_conn_error(int rc)
{
    switch (rc) {
    case BRIM_ETIMEDOUT:
    case BRIM_ECONNREFUSED:
    case BRIM_ECLOSED:
    case BRIM_ESYS:
    case BRIM_EUNKNOWN:
    case BRIM_EBADREPLY:
        return 1;
    default:
        return 0;
    }
}

int
brim_ctl_fail(struct brim_ctl *ctl, const char *what, int rc)
{
    const char *detail;

    detail = brim_errmsg(ctl->client);
    switch (rc) {
    case BRIM_EINVAL:
        /* A key of 0 bytes or over the node's limit: libbrim refuses it
         * before sending (the node would answer INVAL). The command line
         * asked for it, so it is bad usage, not the server saying no. */
        fprintf(stderr, "brimctl: %s: %s\n(see brimctl --help)\n", what,
                detail[0] != '\0' ? detail : brim_strerror(rc));
        return BRIM_CTL_EXIT_USAGE;
    case BRIM_EDENIED: {
        char how[512];

        fprintf(stderr, "brimctl: %s: %s %s (%s)\n%s", what, brim_strerror(rc),
                brim_ctl_auth_text(ctl, how, sizeof(how)), detail,
                brim_ctl_auth_hint(ctl));
        return BRIM_CTL_EXIT_NO;
    }
    case BRIM_ENOTLEADER:
        /* libbrim asked every coordinator it knows and none leads (an
         * election): not a refusal, so exit as unreachable. Its detail
         * names those tried. */
        fprintf(stderr, "brimctl: %s: %s\n", what,
                detail[0] != '\0' ? detail : brim_strerror(rc));
        return BRIM_CTL_EXIT_CONN;
    case BRIM_ENONODES:
        /* libbrim's detail begins with the same words: say them once. */
        if (strncmp(detail, brim_strerror(rc), strlen(brim_strerror(rc))) == 0)
        {
            fprintf(stderr, "brimctl: %s: %s\n", what, detail);
        } else {
            fprintf(stderr, "brimctl: %s: %s (%s)\n", what, brim_strerror(rc),
                    detail);
        }
        return BRIM_CTL_EXIT_NONODES;
    default:
        if (brim_ctl_conn_error(rc)) {
            fprintf(stderr, "brimctl: %s: %s: server %s (%s)\n", what,
                    brim_strerror(rc), brim_ctl_addr(ctl), detail);
            return BRIM_CTL_EXIT_CONN;
        }
        if (detail[0] != '\0') {
            fprintf(stderr, "brimctl: %s: %s (%s)\n", what, brim_strerror(rc),
                    detail);
        } else {
            fprintf(stderr, "brimctl: %s: %s\n", what, brim_strerror(rc));
        }
        return BRIM_CTL_EXIT_NO;
    }
}

int
brim_ctl_need_coord(const struct brim_ctl *ctl, const char *name)
{
    if (ctl->coord != NULL) {
        return 0;
    }
    fprintf(stderr,
            "brimctl: %s: needs --coordinator SEED[,SEED...] (or "
            "$BRIM_COORDINATOR)\n",
            name);
    return BRIM_CTL_EXIT_USAGE;
}

const char *
brim_ctl_addr(const struct brim_ctl *ctl)
{
    return ctl->coord != NULL ? ctl->coord : ctl->server;
}

const char *
brim_ctl_auth_text(const struct brim_ctl *ctl, char *buf, size_t len)
{
    if (ctl->secret_file != NULL) {
        snprintf(buf, len, "as admin with the cluster secret of %s",
                 ctl->secret_file);
    } else if (ctl->client_secret_file != NULL) {
        snprintf(buf, len, "as a client with the clients' secret of %s",
                 ctl->client_secret_file);
    } else {
        snprintf(buf, len, "as %s, with no secret",
                 ctl->admin ? "admin" : "a client");
    }
    return buf;
}

const char *
brim_ctl_auth_hint(const struct brim_ctl *ctl)
{
    if (ctl->secret_file != NULL) {
        return "(--secret-file is the cluster's secret, proven as admin; "
               "for the clients' secret use --client-secret-file)\n";
    }
    if (ctl->client_secret_file != NULL) {
        return "(--client-secret-file must be the nodes' "
               "--client-secret-file; admin commands need the cluster's, "
               "--secret-file)\n";
    }
    return "(the server requires a secret: --secret-file FILE, the "
           "cluster's, for admin commands and any other; "
           "--client-secret-file FILE for data commands on nodes that "
           "have one)\n";
}

/* Print J as indented JSON, or on one line when COMPACT. A NULL J (out
 * of memory) fails. */
int
brim_ctl_print_json(const json_t *j, int compact)
{
    char *out;

    out = j != NULL ? json_dumps(j,
                                 (compact ? JSON_COMPACT : JSON_INDENT(2))
                                     | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY)
                    : NULL;
    if (out == NULL) {
        fprintf(stderr, "brimctl: cannot format JSON\n");
        return BRIM_CTL_EXIT_NO;
    }
    printf("%s\n", out);
    free(out);
    return BRIM_CTL_EXIT_OK;
}

int
brim_ctl_is_bytes(const char *name)
{
    const char *dot = strrchr(name, '.');

    name = dot != NULL ? dot + 1 : name;
    return strstr(name, "bytes") != NULL || strncmp(name, "memory_", 7) == 0
        || strcmp(name, "buffer_limit") == 0;
}

const char *
brim_ctl_value_text(const char *name, const char *text, char *buf, size_t len)
{
    char     human[BRIM_UNITS_TEXT_MAX];
    uint64_t v;

    if (!brim_ctl_is_bytes(name) || brim_parse_u64(text, 0, UINT64_MAX, &v)
        || v < 1024)
    {
        return text;
    }
    snprintf(buf, len, "%s (%s)", text,
             brim_format_bytes(v, human, sizeof(human)));
    return buf;
}

/* The text of NAME's scalar JSON value V into BUF (LEN bytes): reals as
 * integers or fixed decimals, byte counts with their binary units. */
static const char *
out_json_text(const char *name, const json_t *v, char *buf, size_t len)
{
    char num[BRIM_UNITS_TEXT_MAX];

    if (json_is_string(v)) {
        return json_string_value(v);
    }
    if (json_is_integer(v)) {
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(v));
        if (brim_ctl_value_text(name, num, buf, len) == num) {
            snprintf(buf, len, "%s", num);
        }
    } else if (json_is_real(v)) {
        brim_format_decimal(json_real_value(v), buf, len);
    } else if (json_is_true(v) || json_is_false(v)) {
        snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
    } else if (json_is_null(v)) {
        snprintf(buf, len, "-");
    } else if (json_is_array(v) && json_array_size(v) == 0) {
        snprintf(buf, len, "none"); /* not "[]": the text is for people */
    } else {
        char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

        snprintf(buf, len, "%s", d != NULL ? d : "?");
        free(d);
    }
    return buf;
}

/* An array of objects as an aligned table, columns in the first row's
 * order. */
void
brim_ctl_print_table(const json_t *rows, const char *indent)
{
    const json_t *row, *v;
    const char   *k;
    size_t        i, c, ncols, w[32];
    const char   *cols[32];
    char          buf[128];

    row = json_array_get(rows, 0);
    if (!json_is_object(row)) {
        return;
    }
    ncols = 0;
    json_object_foreach((json_t *) row, k, v)
    {
        if (ncols < 32) {
            cols[ncols] = k;
            w[ncols] = strlen(k);
            ncols++;
        }
    }
    json_array_foreach(rows, i, row)
    {
        for (c = 0; c < ncols; c++) {
            v = json_object_get(row, cols[c]);
            if (v != NULL) {
                size_t l = strlen(out_json_text(cols[c], v, buf, sizeof(buf)));

                w[c] = l > w[c] ? l : w[c];
            }
        }
    }
    printf("%s", indent);
    for (c = 0; c < ncols; c++) {
        printf("%-*s%s", c + 1 < ncols ? (int) w[c] : 0, cols[c],
               c + 1 < ncols ? "  " : "\n");
    }
    json_array_foreach(rows, i, row)
    {
        printf("%s", indent);
        for (c = 0; c < ncols; c++) {
            v = json_object_get(row, cols[c]);
            printf("%-*s%s", c + 1 < ncols ? (int) w[c] : 0,
                   v != NULL ? out_json_text(cols[c], v, buf, sizeof(buf))
                             : "-",
                   c + 1 < ncols ? "  " : "\n");
        }
    }
}

/* An object as aligned "name value" lines; nested objects as
 * prefix.name, arrays of objects as tables. */
void
brim_ctl_print_obj(const json_t *obj, const char *prefix)
{
    const json_t *v;
    const char   *k;
    char          name[256], buf[128];
    size_t        w;

    w = 0;
    json_object_foreach((json_t *) obj, k, v)
    {
        size_t l = strlen(prefix) + strlen(k);

        w = l > w ? l : w;
    }
    json_object_foreach((json_t *) obj, k, v)
    {
        snprintf(name, sizeof(name), "%s%s", prefix, k);
        if (json_is_object(v)) {
            snprintf(name, sizeof(name), "%s%s.", prefix, k);
            brim_ctl_print_obj(v, name);
        } else if (json_is_array(v) && json_is_object(json_array_get(v, 0))) {
            printf("%s:\n", name);
            brim_ctl_print_table(v, "  ");
        } else {
            printf("%-*s  %s\n", (int) w, name,
                   out_json_text(k, v, buf, sizeof(buf)));
        }
    }
}
