/*
 * run_report.c — the names of run_report.h's enums.
 */
#include "train/run_report.h"

#include <string.h>

const char *dbk_clock_mode_name(dbk_clock_mode m) { return m == DBK_CLOCK_MLPERF ? "mlperf" : "dawnbench"; }

const char *dbk_precision_name(dbk_precision p) {
    return p == DBK_PRECISION_FP16 ? "fp16" : p == DBK_PRECISION_AUTO ? "auto" : "fp32";
}

bool dbk_precision_parse(const char *s, dbk_precision *out) {
    for (int p = DBK_PRECISION_FP32; p <= DBK_PRECISION_AUTO; p++)
        if (!strcmp(s, dbk_precision_name((dbk_precision)p))) {
            *out = (dbk_precision)p;
            return true;
        }
    return false;
}

const char *dbk_run_status_name(dbk_run_status s) {
    switch (s) {
    case DBK_RUN_RUNNING:     return "running";
    case DBK_RUN_REACHED:     return "reached";
    case DBK_RUN_NOT_REACHED: return "not_reached";
    case DBK_RUN_DIVERGED:    return "diverged";
    case DBK_RUN_FAILED:      return "failed";
    case DBK_RUN_INTERRUPTED: return "interrupted";
    }
    return "unknown";
}
