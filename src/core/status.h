/*
 * status.h — status codes, the thread-local error message, and the assertion macro.
 *
 * Library code never exits: it returns a dbk_status and, on failure, leaves a one-line
 * message in a thread-local buffer (dbk_last_error) that names what failed and why (file,
 * device, size). Only src/app and tools/ turn a status into an exit code.
 * DBK_ASSERT is for programmer errors only; it aborts with file and line.
 */
#ifndef DBK_STATUS_H
#define DBK_STATUS_H

typedef enum dbk_status {
    DBK_OK                        =  0,
    DBK_ERR_INVALID_ARG           = -1,  /* a caller passed an impossible value (shape, flag, name) */
    DBK_ERR_OUT_OF_HOST_MEMORY    = -2,  /* malloc failed */
    DBK_ERR_OUT_OF_DEVICE_MEMORY  = -3,  /* the device refused an allocation */
    DBK_ERR_UNSUPPORTED           = -4,  /* op, dtype or shape not implemented by this backend */
    DBK_ERR_DEVICE                = -5,  /* a driver/API call failed */
    DBK_ERR_DEVICE_LOST           = -6,  /* the device went away */
    DBK_ERR_COMPILE               = -7,  /* kernel or shader build failed */
    DBK_ERR_IO                    = -8,  /* a file could not be opened, read or written */
    DBK_ERR_FORMAT                = -9,  /* a file's contents are malformed (size, header, value range) */
    DBK_ERR_NOT_FOUND             = -10, /* a named thing (file, recipe, backend, device) does not exist */
    DBK_ERR_DIVERGED              = -11, /* training produced NaN or Inf */
} dbk_status;

/* Static name of a status, e.g. "DBK_ERR_FORMAT". */
const char *dbk_status_str(dbk_status s);

/* The message of the last failure on this thread ("" if none). Valid until the next set. */
const char *dbk_last_error(void);

/* Formats the thread's error message (printf-style) and returns `code`, so a failure path
 * reads `return dbk_set_error(DBK_ERR_IO, "cannot open %s: %s", path, strerror(errno));`. */
dbk_status dbk_set_error(dbk_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

void dbk_clear_error(void);

/* Aborts with file, line and the failed condition. Used by DBK_ASSERT only. */
void dbk_assert_fail(const char *file, int line, const char *cond);

#define DBK_TRY(expr)                               \
    do {                                            \
        dbk_status dbk_try_status_ = (expr);        \
        if (dbk_try_status_ != DBK_OK)              \
            return dbk_try_status_;                 \
    } while (0)

#define DBK_ASSERT(cond)                                          \
    do {                                                          \
        if (!(cond))                                              \
            dbk_assert_fail(__FILE__, __LINE__, #cond);           \
    } while (0)

#endif
