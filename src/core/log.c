/* log.c — leveled logging (see log.h). */
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dbk_log_level log_level = DBK_LOG_LEVEL_WARN;
static dbk_log_fn    log_fn;
static void         *log_user;

void dbk_log_init(void) {
    const char *env = getenv("DBK_LOG");
    if (!env) return;
    if (!strcmp(env, "debug")) log_level = DBK_LOG_LEVEL_DEBUG;
    else if (!strcmp(env, "info")) log_level = DBK_LOG_LEVEL_INFO;
    else if (!strcmp(env, "warn")) log_level = DBK_LOG_LEVEL_WARN;
    else if (!strcmp(env, "error")) log_level = DBK_LOG_LEVEL_ERROR;
    else if (!strcmp(env, "none")) log_level = DBK_LOG_LEVEL_NONE;
}

void dbk_log_set_level(dbk_log_level level) { log_level = level; }
dbk_log_level dbk_log_get_level(void) { return log_level; }

void dbk_log_set_callback(dbk_log_fn fn, void *user) {
    log_fn = fn;
    log_user = user;
}

void dbk_log(dbk_log_level level, const char *fmt, ...) {
    static const char *names[] = {"debug", "info", "warn", "error", "none"};
    if (level < log_level) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (log_fn) log_fn(level, msg, log_user);
    else fprintf(stderr, "daybreak: %s: %s\n", names[level], msg);
}
