/*
 * log.h — leveled logging through one settable callback.
 *
 * The level comes from DBK_LOG=debug|info|warn|error (read once by dbk_log_init) and the
 * default sink writes "daybreak: <level>: message" lines to stderr. The callback and level
 * are the only process-wide state besides the thread-local error buffer (STYLE.md).
 */
#ifndef DBK_LOG_H
#define DBK_LOG_H

typedef enum dbk_log_level {
    DBK_LOG_LEVEL_DEBUG,
    DBK_LOG_LEVEL_INFO,
    DBK_LOG_LEVEL_WARN,
    DBK_LOG_LEVEL_ERROR,
    DBK_LOG_LEVEL_NONE,
} dbk_log_level;

typedef void (*dbk_log_fn)(dbk_log_level level, const char *msg, void *user);

void dbk_log_init(void);                              /* reads DBK_LOG */
void dbk_log_set_level(dbk_log_level level);
dbk_log_level dbk_log_get_level(void);
void dbk_log_set_callback(dbk_log_fn fn, void *user); /* NULL restores the stderr sink */
void dbk_log(dbk_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
