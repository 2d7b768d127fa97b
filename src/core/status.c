/* status.c — status names and the thread-local error message (see status.h). */
#include "core/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[1024];

const char *dbk_status_str(dbk_status s) {
    switch (s) {
    case DBK_OK:                       return "DBK_OK";
    case DBK_ERR_INVALID_ARG:          return "DBK_ERR_INVALID_ARG";
    case DBK_ERR_OUT_OF_HOST_MEMORY:   return "DBK_ERR_OUT_OF_HOST_MEMORY";
    case DBK_ERR_OUT_OF_DEVICE_MEMORY: return "DBK_ERR_OUT_OF_DEVICE_MEMORY";
    case DBK_ERR_UNSUPPORTED:          return "DBK_ERR_UNSUPPORTED";
    case DBK_ERR_DEVICE:               return "DBK_ERR_DEVICE";
    case DBK_ERR_DEVICE_LOST:          return "DBK_ERR_DEVICE_LOST";
    case DBK_ERR_COMPILE:              return "DBK_ERR_COMPILE";
    case DBK_ERR_IO:                   return "DBK_ERR_IO";
    case DBK_ERR_FORMAT:               return "DBK_ERR_FORMAT";
    case DBK_ERR_NOT_FOUND:            return "DBK_ERR_NOT_FOUND";
    case DBK_ERR_DIVERGED:             return "DBK_ERR_DIVERGED";
    }
    return "DBK_ERR_UNKNOWN";
}

const char *dbk_last_error(void) { return last_error; }

void dbk_clear_error(void) { last_error[0] = '\0'; }

dbk_status dbk_set_error(dbk_status code, const char *fmt, ...) {
    /* Formatted apart first: fmt or an argument may be dbk_last_error() itself, and vsnprintf
     * into the buffer it is reading from is undefined (it garbled messages that way). */
    char message[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    memcpy(last_error, message, sizeof last_error);
    return code;
}

void dbk_assert_fail(const char *file, int line, const char *cond) {
    fprintf(stderr, "%s:%d: assertion '%s' failed\n", file, line, cond);
    fflush(stderr);
    abort();
}
