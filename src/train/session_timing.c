/*
 * session_timing.c — what training steps cost: per-op timing (see session.h,
 * dbk_session_set_op_timing) and the launches, syncs, host time and bytes of each step
 * (dbk_step_costs).
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/timer.h"
#include "train/session_impl.h"

/* Runs the training step with per-op device timing (dbk_program_run_timed), accumulating
 * each op's time and the wall time of the whole step. */
dbk_status dbk_session_run_timed(dbk_session *s) {
    if (!s->op_seconds) {
        s->op_seconds = dbk_calloc((size_t)s->train.count, sizeof *s->op_seconds);
        if (!s->op_seconds) return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    /* The profiler's waits are not the step's syncs (dbk_step_costs). */
    dbk_backend_count_syncs(s->be, false);
    dbk_status st = dbk_backend_sync(s->be);
    double step_start = dbk_time_now();
    if (st == DBK_OK) st = dbk_program_run_timed(s->train.recorded, s->op_seconds);
    if (st == DBK_OK) st = dbk_backend_sync(s->be);
    dbk_backend_count_syncs(s->be, true);
    DBK_TRY(st);
    s->step_seconds += dbk_time_now() - step_start;
    s->profiled_steps++;
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* step costs                                                                          */

double dbk_session_program_bytes(const dbk_session_program *p) {
    double b = 0.0;
    for (int i = 0; i < p->count; i++) b += dbk_op_bytes(&p->ops[i]);
    return b;
}

void dbk_session_cost_begin(const dbk_session *s, dbk_cost_mark *m) {
    dbk_backend_get_counters(s->be, &m->at);
    m->t = dbk_time_now();
}

void dbk_session_cost_end(dbk_session *s, const dbk_cost_mark *m, double min_bytes) {
    const double t = dbk_time_now();
    dbk_backend_counters now, *sum = &s->cost_sum;
    dbk_backend_get_counters(s->be, &now);
    sum->launches += now.launches - m->at.launches;
    sum->syncs += now.syncs - m->at.syncs;
    sum->device_bytes += now.device_bytes - m->at.device_bytes;
    sum->host_bytes += now.host_bytes - m->at.host_bytes;
    sum->blocked_seconds += now.blocked_seconds - m->at.blocked_seconds;
    s->cost_wall += t - m->t;
    s->cost_min_bytes += min_bytes;
}

void dbk_session_step_costs(const dbk_session *s, dbk_step_costs *out) {
    memset(out, 0, sizeof *out);
    out->steps = s->cost_steps;
    if (!s->cost_steps) return;
    const double n = (double)s->cost_steps, host = s->cost_wall - s->cost_sum.blocked_seconds;
    out->launches = (double)s->cost_sum.launches / n;
    out->syncs = (double)s->cost_sum.syncs / n;
    out->host_seconds = (host > 0 ? host : 0.0) / n;
    out->device_bytes = (double)s->cost_sum.device_bytes / n;
    out->min_bytes = s->cost_min_bytes / n;
    out->host_bytes = (double)s->cost_sum.host_bytes / n;
}

void dbk_session_reset_step_costs(dbk_session *s) {
    memset(&s->cost_sum, 0, sizeof s->cost_sum);
    s->cost_wall = s->cost_min_bytes = 0.0;
    s->cost_steps = 0;
}

/* bytes with a unit: "812 B", "3.4 kB", "1.52 MB", "2.41 GB" */
static void format_bytes(double b, char *out, size_t cap) {
    if (b < 1e3) snprintf(out, cap, "%.0f B", b);
    else if (b < 1e6) snprintf(out, cap, "%.1f kB", b * 1e-3);
    else if (b < 1e9) snprintf(out, cap, "%.2f MB", b * 1e-6);
    else snprintf(out, cap, "%.2f GB", b * 1e-9);
}

void dbk_session_format_step_costs(const dbk_step_costs *c, char *out, size_t cap) {
    char moved[32], least[32], host[32];
    format_bytes(c->device_bytes, moved, sizeof moved);
    format_bytes(c->min_bytes, least, sizeof least);
    format_bytes(c->host_bytes, host, sizeof host);
    snprintf(out, cap, "per step: %.0f launches, %.3g syncs, host %.2f ms, %s moved (%s the tensors', %.1fx), %s to "
                       "and from the host",
             c->launches, c->syncs, 1e3 * c->host_seconds, moved, least,
             c->min_bytes > 0 ? c->device_bytes / c->min_bytes : 0.0, host);
}

void dbk_session_set_op_timing(dbk_session *s, bool on) { s->profiling = on; }

/* Kernels per run of each training op (train.count entries; the update's ops from the update
 * program when the session records it apart); NULL when out of memory. Caller frees. */
static int *op_launches(const dbk_session *s) {
    int *n = dbk_calloc((size_t)s->train.count + 1, sizeof *n);
    if (!n) return NULL;
    const int first = dbk_program_count(s->train.recorded);
    dbk_program_op_launches(s->train.recorded, n);
    if (s->update && first + dbk_program_count(s->update) <= s->train.count)
        dbk_program_op_launches(s->update, n + first);
    return n;
}

void dbk_session_print_op_times(const dbk_session *s, FILE *out) {
    if (!s->profiled_steps || !s->op_seconds) return;
    const dbk_session_program *p = &s->train;
    const double steps = (double)s->profiled_steps;
    double ops_total = 0.0, flops_total = 0.0;
    long total_launches = 0;
    fprintf(out, "\nprofile: %ld training steps, batch %d, on %s (%s)\n", s->profiled_steps, s->cfg.batch,
            dbk_backend_kind_name(dbk_backend_get_kind(s->be)), dbk_backend_get_info(s->be)->name);
    int *launches = op_launches(s);
    /* kind: 28 columns, the longest op name (batchnorm_relu_add_fwd_train) */
    /* GB/s: the op's tensors once (dbk_op_bytes) per its time, against the memory roof */
    fprintf(out, "%-28s %-28s %8s %10s %7s %10s %9s %7s\n", "op", "kind", "launches", "ms/step", "share", "GFLOP",
            "GFLOP/s", "GB/s");
    /* the algorithms other than the ops' plain ones, marked "*", "**", ... in order of first use
     * (one layer's three ops may each run another: conv_by_shape per op); "?" only past four
     * algorithms, more than the backends have */
    const char *marked[4];
    static const char *const marks[5] = {"*", "**", "***", "****", "?"};
    int marked_count = 0;
    double bytes_total = 0.0;
    for (int i = 0; i < p->count; i++) {
        double ms = 1000.0 * s->op_seconds[i] / steps, gflop = dbk_op_flops(&p->ops[i]) * 1e-9;
        const double gb = dbk_op_bytes(&p->ops[i]) * 1e-9;
        bytes_total += gb;
        const char *algo = dbk_backend_op_algorithm(s->be, &p->ops[i]);
        ops_total += s->op_seconds[i];
        flops_total += gflop;
        int seen = 0;
        while (algo && seen < marked_count && strcmp(marked[seen], algo)) seen++;
        if (algo && seen == marked_count && marked_count < 4) marked[marked_count++] = algo;
        fprintf(out, "%-28.28s %-28s %8d %10.3f %6.1f%% %10.4f %9.1f %7.2f%s%s\n", p->ops[i].label ? p->ops[i].label : "",
                dbk_op_name(p->ops[i].op), launches ? launches[i] : 0, ms, 100.0 * s->op_seconds[i] / s->step_seconds,
                gflop, ms > 0 ? gflop / (ms * 1e-3) : 0.0, ms > 0 ? gb / (ms * 1e-3) : 0.0, algo ? " " : "",
                algo ? marks[seen] : "");
        total_launches += launches ? launches[i] : 0;
    }
    dbk_free(launches);
    double step_ms = 1000.0 * s->step_seconds / steps, outside = s->step_seconds - ops_total;
    fprintf(out, "%-28s %-28s %8ld %10.3f %6.1f%% %10.4f %9.1f %7.2f\n", "total", "", total_launches, step_ms, 100.0,
            flops_total, flops_total / (step_ms * 1e-3), bytes_total / (step_ms * 1e-3));
    fprintf(out, "outside ops: %.3f ms/step (%.1f%%)\n", 1000.0 * outside / steps, 100.0 * outside / s->step_seconds);
    dbk_step_costs c;
    char line[256];
    dbk_session_step_costs(s, &c);
    dbk_session_format_step_costs(&c, line, sizeof line);
    fprintf(out, "%s\n", line);
    for (int i = 0; i < marked_count; i++)
        if (!strcmp(marked[i], "direct"))   /* the same multiply-adds, without im2col's col matrix */
            fprintf(out, "%s run as direct: the 3x3 convolution computed from the tensors (no im2col), the same "
                         "multiply-adds\n",
                    marks[i]);
        else
            fprintf(out, "%s run as %s: GFLOP counts the direct convolution's 2*N*K*C*R*S*P*Q, Winograd does %gx fewer "
                     "multiply-adds, so these GFLOP/s can exceed the device's FMA peak\n",
                marks[i], marked[i], dbk_algorithm_multiply_add_saving(marked[i]));
}

static double program_flops(const dbk_session_program *p) {
    double f = 0.0;
    for (int i = 0; i < p->count; i++) f += dbk_op_flops(&p->ops[i]);
    return f;
}

double dbk_session_step_flops(const dbk_session *s) { return program_flops(&s->train); }

double dbk_session_steps_flops(const dbk_session *s, long first, long count) {
    const double full = program_flops(&s->train);
    if (!s->train_late.recorded || s->profiling) return full * (double)count; /* profiling runs the full step */
    const long from = s->train_late_from, end = first + count;
    const long late = end <= from ? 0 : end - (first > from ? first : from);
    return full * (double)(count - late) + program_flops(&s->train_late) * (double)late;
}

int dbk_session_timed_op_count(const dbk_session *s) { return s->train.count; }
long dbk_session_timed_steps(const dbk_session *s) { return s->op_seconds ? s->profiled_steps : 0; }
double dbk_session_timed_step_seconds(const dbk_session *s) {
    return s->profiled_steps ? s->step_seconds / (double)s->profiled_steps : 0.0;
}

void dbk_session_op_times(const dbk_session *s, int i, dbk_op_times *out) {
    const dbk_op_desc *d = &s->train.ops[i];
    memset(out, 0, sizeof *out);
    snprintf(out->label, sizeof out->label, "%s", d->label ? d->label : "");
    snprintf(out->kind, sizeof out->kind, "%s", dbk_op_name(d->op));
    const char *algo = dbk_backend_op_algorithm(s->be, d);
    snprintf(out->algorithm, sizeof out->algorithm, "%s", algo ? algo : "");
    out->flops = dbk_op_flops(d);
    out->bytes = dbk_op_bytes(d);
    out->seconds = s->op_seconds && s->profiled_steps ? s->op_seconds[i] / (double)s->profiled_steps : 0.0;
    int *launches = op_launches(s);
    out->launches = launches ? launches[i] : 0;
    dbk_free(launches);
}

