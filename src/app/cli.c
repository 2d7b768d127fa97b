/* cli.c — shared command-line helpers for the command files (see cli.h). */
#define _POSIX_C_SOURCE 200809L
#include "app/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int dbk_cli_fail(const char *what) {
    fprintf(stderr, "daybreak: error: %s%s%s\n", what ? what : "", what && *what ? ": " : "", dbk_last_error());
    return DBK_EXIT_ERROR;
}

int dbk_cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "daybreak %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nrun 'daybreak %s --help' for usage\n", cmd);
    return DBK_EXIT_USAGE;
}

int dbk_cli_match(dbk_cli_args *a, const char *name, bool takes_value, const char **value) {
    const char *arg = a->argv[a->i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) return 0;
    if (arg[n] == '\0') {
        if (!takes_value) return 1;
        if (a->i + 1 >= a->argc) return -1;
        *value = a->argv[++a->i];
        return 1;
    }
    if (arg[n] == '=' && takes_value) {
        *value = arg + n + 1;
        return 1;
    }
    return 0;
}

bool dbk_cli_parse_long(const char *s, long min, long max, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > max) return false;
    *out = v;
    return true;
}

bool dbk_cli_parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (*s == '-') return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end != '\0') return false;
    *out = v;
    return true;
}

bool dbk_cli_parse_double(const char *s, double min, double max, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !(v >= min && v <= max)) return false;
    *out = v;
    return true;
}

int dbk_cli_parse_clock(const char *s, dbk_clock_mode *out) {
    if (!strcmp(s, "dawnbench")) *out = DBK_CLOCK_DAWNBENCH;
    else if (!strcmp(s, "mlperf")) *out = DBK_CLOCK_MLPERF;
    else return -1;
    return 0;
}

int dbk_cli_resolve_device(const char *backend, long device, dbk_backend_kind *kind, int *index) {
    if (!backend) backend = getenv("DBK_BACKEND");
    if (backend && *backend) {
        if (dbk_backend_resolve(backend, (int)device, kind, index) != DBK_OK) return dbk_cli_fail(NULL);
        return DBK_EXIT_OK;
    }
    dbk_backend_default(kind, index);
    if (device >= 0 && dbk_backend_resolve(dbk_backend_kind_name(*kind), (int)device, kind, index) != DBK_OK)
        return dbk_cli_fail(NULL);
    return DBK_EXIT_OK;
}

void dbk_cli_utc_stamp(char *out, size_t cap) {
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(out, cap, "%Y%m%d-%H%M%S", &tmv);
}

void dbk_cli_join(int argc, char **argv, char *out, size_t cap) {
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < argc && n + 1 < cap; i++) n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? " " : "", argv[i]);
}
