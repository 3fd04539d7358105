/*
 * server/log.h - daemon logging: one line per event, to stderr, as
 * "2026-05-01T10:00:00.123Z node:n1[4242] W migrate.c:210 message".
 * Only the daemons log; common/, proto/ and libbrim return codes instead.
 * Debug lines are printed with --log-level debug only.
 * Formatting uses a fixed stack buffer and never allocates.
 */
#ifndef BRIM_SERVER_LOG_H
#define BRIM_SERVER_LOG_H

enum brim_log_level {
    BRIM_LOG_ERROR = 0,
    BRIM_LOG_WARN,
    BRIM_LOG_INFO,
    BRIM_LOG_DEBUG
};

/*
 * Set the process tag (ROLE "node" or "coord", NAME the node name or "")
 * and the most verbose LEVEL printed. ROLE and NAME are copied (each
 * truncated to 63 bytes).
 */
void brim_log_init(const char *role, const char *name,
                   enum brim_log_level level);

/* Parse "error", "warn", "info" or "debug" into *LEVEL. Returns 0 or -1. */
int brim_log_level_parse(const char *text, enum brim_log_level *level);

/* Print one line at LEVEL from FILE:LINE with printf FMT. */
void brim_log_write(enum brim_log_level level, const char *file, int line,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#define brim_log_error(...)                                                    \
    brim_log_write(BRIM_LOG_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define brim_log_warn(...)                                                     \
    brim_log_write(BRIM_LOG_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define brim_log_info(...)                                                     \
    brim_log_write(BRIM_LOG_INFO, __FILE__, __LINE__, __VA_ARGS__)
/* Nonzero when --log-level debug is set (brim_log_init()): a debug line
 * costs one test of it otherwise, so per-partition detail can stay. */
extern int brim_log_debug_on;

#define brim_log_debug(...)                                                    \
    do {                                                                       \
        if (brim_log_debug_on) {                                               \
            brim_log_write(BRIM_LOG_DEBUG, __FILE__, __LINE__, __VA_ARGS__);   \
        }                                                                      \
    } while (0)

#endif /* BRIM_SERVER_LOG_H */
