/*
 * client/brimctl/records.c - import's and verify's input (records.h):
 * deb822 paragraphs and JSON lines, read in large pieces into one buffer
 * that a record never leaves while it is in use. Bytes are handed out as
 * they are in the input; only jsonl's strings are decoded (by jansson).
 * The format of a paragraph follows Debian Policy section 5.1.
 */
#include "client/brimctl/records.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "client/brimctl/ctl.h"
#include "common/defs.h"

/* Bytes read from the input at a time, and the buffer's first size. */
#define RECORDS_CHUNK (1u << 20)

int
brim_ctl_reader_open(struct brim_ctl_reader *r, const char *path, int format,
                     const char *field, char errbuf[BRIM_ERRBUF_LEN])
{
    struct stat st;

    memset(r, 0, sizeof(*r));
    r->format = format;
    r->field = field;
    r->field_len = strlen(field);
    if (strcmp(path, "-") == 0) {
        r->f = stdin;
        r->name = "stdin";
    } else {
        r->f = fopen(path, "rb");
        if (r->f == NULL) {
            brim_errfmt(errbuf, "cannot open %s: %s", path, strerror(errno));
            return BRIM_ESYS;
        }
        r->owned = 1;
        r->name = path;
    }
    /* The size, when known, measures progress: bytes read / size. */
    if (fstat(fileno(r->f), &st) == 0 && S_ISREG(st.st_mode)) {
        r->size = (uint64_t) st.st_size;
    }
    r->buf = malloc(RECORDS_CHUNK);
    if (r->buf == NULL) {
        brim_errfmt(errbuf, "out of memory for a %u-byte buffer",
                    RECORDS_CHUNK);
        brim_ctl_reader_close(r);
        return BRIM_ENOMEM;
    }
    r->cap = RECORDS_CHUNK;
    return 0;
}

void
brim_ctl_reader_close(struct brim_ctl_reader *r)
{
    if (r->owned && r->f != NULL) {
        fclose(r->f);
    }
    free(r->buf);
    json_decref(r->json);
    memset(r, 0, sizeof(*r));
}

/*
 * Read more input behind BUF + LEN, first moving the unused bytes to the
 * front (offsets into BUF change: callers start their scan again). Returns
 * 0 (EOF set at the end of the input) or an error with WHY.
 */
static int
reader_fill(struct brim_ctl_reader *r, char why[BRIM_ERRBUF_LEN])
{
    char  *p;
    size_t n, cap;

    if (r->off > 0) {
        memmove(r->buf, r->buf + r->off, r->len - r->off);
        r->len -= r->off;
        r->off = 0;
    }
    if (r->cap - r->len < RECORDS_CHUNK / 2) {
        if (r->cap >= BRIM_CTL_RECORD_MAX) {
            brim_errfmt(why,
                        "line %" PRIu64 ": a record of more than %u "
                        "bytes",
                        r->line + 1, BRIM_CTL_RECORD_MAX);
            return BRIM_ETOOBIG;
        }
        cap = r->cap * 2;
        p = realloc(r->buf, cap);
        if (p == NULL) {
            brim_errfmt(why, "out of memory for a %zu-byte buffer", cap);
            return BRIM_ENOMEM;
        }
        r->buf = p;
        r->cap = cap;
    }
    n = fread(r->buf + r->len, 1, r->cap - r->len, r->f);
    r->len += n;
    r->bytes_read += n;
    if (n == 0) {
        if (ferror(r->f)) {
            brim_errfmt(why, "reading %s: %s", r->name, strerror(errno));
            return BRIM_ESYS;
        }
        r->eof = 1;
    }
    return 0;
}

/*
 * The end of the line at BUF + POS: the offset of its '\n', or LEN for a
 * last line without one; -1 when the line is not all in BUF yet.
 */
static int64_t
reader_eol(const struct brim_ctl_reader *r, size_t pos)
{
    const char *nl;

    nl = memchr(r->buf + pos, '\n', r->len - pos);
    if (nl != NULL) {
        return nl - r->buf;
    }
    return r->eof ? (int64_t) r->len : -1;
}

/* True when bytes [FROM, TO) of the buffer hold only blanks. */
static int
reader_blank(const struct brim_ctl_reader *r, size_t from, size_t to)
{
    for (; from < to; from++) {
        if (r->buf[from] != ' ' && r->buf[from] != '\t' && r->buf[from] != '\r')
        {
            return 0;
        }
    }
    return 1;
}

/* Bytes [P, END) without the blanks at either end, into *P and *END. */
static void
records_trim(const char **p, const char **end)
{
    while (*p < *end && (**p == ' ' || **p == '\t')) {
        (*p)++;
    }
    while (*end > *p
           && ((*end)[-1] == ' ' || (*end)[-1] == '\t' || (*end)[-1] == '\r'))
    {
        (*end)--;
    }
}

/*
 * The key field of the paragraph REC->val into REC->key: the text of the
 * first field line named R->field. Returns 0 or -1 (none, or empty).
 */
static int
deb822_key(const struct brim_ctl_reader *r, struct brim_ctl_rec *rec)
{
    const char *p, *end, *eol, *colon, *v;

    p = rec->val;
    end = rec->val + rec->val_len;
    for (; p < end; p = eol + 1) {
        eol = memchr(p, '\n', (size_t) (end - p));
        eol = eol != NULL ? eol : end;
        if (*p == ' ' || *p == '\t') {
            continue; /* a continuation line */
        }
        colon = memchr(p, ':', (size_t) (eol - p));
        if (colon == NULL || (size_t) (colon - p) != r->field_len
            || strncasecmp(p, r->field, r->field_len) != 0)
        {
            continue;
        }
        v = colon + 1;
        records_trim(&v, &eol);
        if (v == eol) {
            return -1;
        }
        rec->key = v;
        rec->key_len = (size_t) (eol - v);
        return 0;
    }
    return -1;
}

/*
 * The next paragraph: blank lines passed over, then lines up to a blank
 * line or the end. The scan starts again from R->off after a refill,
 * which only happens when a paragraph crosses the end of the buffer.
 */
static int
deb822_next(struct brim_ctl_reader *r, struct brim_ctl_rec *rec,
            char why[BRIM_ERRBUF_LEN])
{
    int64_t  eol;
    size_t   pos;
    uint64_t lines;
    int      rc;

    for (;;) {
        eol = r->off < r->len || !r->eof ? reader_eol(r, r->off) : -2;
        if (eol == -2) {
            return 0; /* the end, between paragraphs */
        }
        if (eol >= 0 && reader_blank(r, r->off, (size_t) eol)) {
            r->off = (size_t) eol + (eol < (int64_t) r->len);
            r->line++;
            continue;
        }
        pos = r->off;
        lines = 0;
        while (eol >= 0 && pos < r->len && !reader_blank(r, pos, (size_t) eol))
        {
            lines++;
            pos = (size_t) eol + (eol < (int64_t) r->len);
            eol = pos < r->len ? reader_eol(r, pos) : (r->eof ? -2 : -1);
        }
        if (eol == -1) { /* the paragraph goes on past LEN */
            rc = reader_fill(r, why);
            if (rc != 0) {
                return rc;
            }
            continue;
        }
        rec->val = r->buf + r->off;
        rec->val_len = pos - r->off;
        rec->line = r->line + 1;
        r->line += lines;
        r->off = pos;
        if (deb822_key(r, rec) != 0) {
            brim_errfmt(why, "no %s field (or an empty one)", r->field);
            return BRIM_CTL_READ_SKIP;
        }
        return 1;
    }
}

/* The next JSON line; blank lines passed over. */
static int
jsonl_next(struct brim_ctl_reader *r, struct brim_ctl_rec *rec,
           char why[BRIM_ERRBUF_LEN])
{
    json_error_t err;
    json_t      *k, *v;
    int64_t      eol;
    size_t       start;
    int          rc;

    for (;;) {
        if (r->off == r->len && r->eof) {
            return 0;
        }
        eol = reader_eol(r, r->off);
        if (eol < 0) {
            rc = reader_fill(r, why);
            if (rc != 0) {
                return rc;
            }
            continue;
        }
        start = r->off;
        r->off = (size_t) eol + (eol < (int64_t) r->len);
        r->line++;
        if (reader_blank(r, start, (size_t) eol)) {
            continue;
        }
        rec->line = r->line;
        json_decref(r->json);
        r->json = json_loadb(r->buf + start, (size_t) eol - start,
                             JSON_ALLOW_NUL, &err);
        if (r->json == NULL) {
            brim_errfmt(why, "bad JSON at column %d: %s", err.column, err.text);
            return BRIM_CTL_READ_SKIP;
        }
        k = json_object_get(r->json, "key");
        v = json_object_get(r->json, "value");
        if (!json_is_string(k) || !json_is_string(v)
            || json_string_length(k) == 0) {
            brim_errfmt(why,
                        "want an object with string fields \"key\" "
                        "(not empty) and \"value\"");
            return BRIM_CTL_READ_SKIP;
        }
        rec->key = json_string_value(k);
        rec->key_len = json_string_length(k);
        rec->val = json_string_value(v);
        rec->val_len = json_string_length(v);
        return 1;
    }
}

int
brim_ctl_reader_next(struct brim_ctl_reader *r, struct brim_ctl_rec *rec,
                     char why[BRIM_ERRBUF_LEN])
{
    memset(rec, 0, sizeof(*rec));
    if (r->format == BRIM_CTL_FORMAT_JSONL) {
        return jsonl_next(r, rec, why);
    }
    return deb822_next(r, rec, why);
}
