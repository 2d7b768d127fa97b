/*
 * session_profile.c — per-op timing of training steps (see session.h, dbk_session_set_profiling).
 */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/timer.h"
#include "train/session_impl.h"

/* Runs the training step with per-op device timing (dbk_program_run_timed), accumulating
 * each op's time and the wall time of the whole step. */
dbk_status dbk_session_run_profiled(dbk_session *s) {
    if (!s->op_seconds) {
        s->op_seconds = dbk_calloc((size_t)s->train.count, sizeof *s->op_seconds);
        if (!s->op_seconds) return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    DBK_TRY(dbk_backend_sync(s->be));
    double step_start = dbk_time_now();
    DBK_TRY(dbk_program_run_timed(s->train.recorded, s->op_seconds));
    DBK_TRY(dbk_backend_sync(s->be));
    s->step_seconds += dbk_time_now() - step_start;
    s->profiled_steps++;
    return DBK_OK;
}

void dbk_session_set_profiling(dbk_session *s, bool on) { s->profiling = on; }

void dbk_session_print_profile(const dbk_session *s, FILE *out) {
    if (!s->profiled_steps || !s->op_seconds) return;
    const dbk_session_program *p = &s->train;
    const double steps = (double)s->profiled_steps;
    double ops_total = 0.0, flops_total = 0.0;
    fprintf(out, "\nprofile: %ld training steps, batch %d, on %s (%s)\n", s->profiled_steps, s->cfg.batch,
            dbk_backend_kind_name(dbk_backend_get_kind(s->be)), dbk_backend_get_info(s->be)->name);
    /* kind: 28 columns, the longest op name (batchnorm_relu_add_fwd_train) */
    fprintf(out, "%-28s %-28s %10s %7s %10s %9s\n", "op", "kind", "ms/step", "share", "GFLOP", "GFLOP/s");
    /* the algorithms other than the ops' plain ones, marked "*", "**", ... in order of first use
     * (one layer's three ops may each run another: conv_by_shape per op); "?" only past four
     * algorithms, more than the backends have */
    const char *marked[4];
    static const char *const marks[5] = {"*", "**", "***", "****", "?"};
    int marked_count = 0;
    for (int i = 0; i < p->count; i++) {
        double ms = 1000.0 * s->op_seconds[i] / steps, gflop = dbk_op_flops(&p->ops[i]) * 1e-9;
        const char *algo = dbk_backend_op_algorithm(s->be, &p->ops[i]);
        ops_total += s->op_seconds[i];
        flops_total += gflop;
        int seen = 0;
        while (algo && seen < marked_count && strcmp(marked[seen], algo)) seen++;
        if (algo && seen == marked_count && marked_count < 4) marked[marked_count++] = algo;
        fprintf(out, "%-28.28s %-28s %10.3f %6.1f%% %10.4f %9.1f%s%s\n", p->ops[i].label ? p->ops[i].label : "",
                dbk_op_name(p->ops[i].op), ms, 100.0 * s->op_seconds[i] / s->step_seconds, gflop,
                ms > 0 ? gflop / (ms * 1e-3) : 0.0, algo ? " " : "", algo ? marks[seen] : "");
    }
    double step_ms = 1000.0 * s->step_seconds / steps, outside = s->step_seconds - ops_total;
    fprintf(out, "%-28s %-28s %10.3f %6.1f%% %10.4f %9.1f\n", "total", "", step_ms, 100.0, flops_total,
            flops_total / (step_ms * 1e-3));
    fprintf(out, "outside ops: %.3f ms/step (%.1f%%)\n", 1000.0 * outside / steps, 100.0 * outside / s->step_seconds);
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

int dbk_session_profile_op_count(const dbk_session *s) { return s->train.count; }
long dbk_session_profiled_steps(const dbk_session *s) { return s->op_seconds ? s->profiled_steps : 0; }
double dbk_session_profiled_step_seconds(const dbk_session *s) {
    return s->profiled_steps ? s->step_seconds / (double)s->profiled_steps : 0.0;
}

void dbk_session_profile_op(const dbk_session *s, int i, dbk_op_profile *out) {
    const dbk_op_desc *d = &s->train.ops[i];
    memset(out, 0, sizeof *out);
    snprintf(out->label, sizeof out->label, "%s", d->label ? d->label : "");
    snprintf(out->kind, sizeof out->kind, "%s", dbk_op_name(d->op));
    const char *algo = dbk_backend_op_algorithm(s->be, d);
    snprintf(out->algorithm, sizeof out->algorithm, "%s", algo ? algo : "");
    out->flops = dbk_op_flops(d);
    out->bytes = dbk_op_bytes(d);
    out->seconds = s->op_seconds && s->profiled_steps ? s->op_seconds[i] / (double)s->profiled_steps : 0.0;
}

