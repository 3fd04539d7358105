/*
 * server/coord/web.c - the live web view's files, looked up by path
 * (web.h). The bytes come from the generated web_index_html.c.
 */
#include "server/coord/web.h"

#include <string.h>

extern const unsigned char brim_web_index_html[];
extern const size_t        brim_web_index_html_len;

const struct brim_web_asset *
brim_web_asset(const char *path)
{
    static struct brim_web_asset index;

    if (strcmp(path, "/") != 0 && strcmp(path, "/index.html") != 0) {
        return NULL;
    }
    index.path = "/";
    index.content_type = "text/html; charset=utf-8";
    index.data = brim_web_index_html;
    index.len = brim_web_index_html_len;
    return &index;
}
