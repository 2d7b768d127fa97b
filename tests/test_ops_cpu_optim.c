/*
 * test_ops_cpu_optim.c — the optimizer ops (SGD, AdamW, Muon, lookahead) against
 * hand computation
 * (part of the test_ops_cpu executable: test_ops_cpu.c has the tolerances and main).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
/* For dbk_augment_choices, the documented draw the device kernels reimplement. */
#include "backends/cpu/cpu_internal.h"
#include "core/log.h"
#include "core/rng.h"
#include "test_ops_cpu.h"
#include "test_util.h"


/* ---------------------------------------------------------------------------------- */
/* SGD                                                                                */

/* scheduled: lr holds {lr, momentum}, the momentum changing per step (fastai's cycle) and
 * replacing params.momentum. */
static int sgd_case_check(bool nesterov, bool scheduled) {
    enum { N = 9 };
    const float wd = 5e-3f, lrs[2] = {0.1f, 0.05f}, mus[2] = {0.95f, 0.85f};
    const float mu_param = 0.9f;
    dbk_tensor grad = gf(1, N, 1, 1, 1), lr = gf(1, scheduled ? 2 : 1, 1, 1, 1), param = gf(1, N, 1, 1, 1),
               mom = gf(1, N, 1, 1, 1);
    float *hp = dbk_test_uniform(N, -1.0f, 1.0f, 20), *hv = dbk_test_uniform(N, -0.1f, 0.1f, 21);
    double rp[N], rv[N];
    for (int i = 0; i < N; i++) {
        rp[i] = hp[i];
        rv[i] = hv[i];
    }
    DBK_CHECK_OK(dbk_tensor_write(&param, hp));
    DBK_CHECK_OK(dbk_tensor_write(&mom, hv));
    dbk_op_desc d = {.op = DBK_OP_SGD_MOMENTUM_UPDATE, .p.sgd = {mu_param, wd, nesterov}};
    d.src[0] = grad; d.src[1] = lr; d.dst[0] = param; d.dst[1] = mom;
    for (int step = 0; step < 2; step++) {
        float *hg = dbk_test_uniform(N, -1.0f, 1.0f, 22 + (uint64_t)step);
        const float mu = scheduled ? mus[step] : mu_param, values[2] = {lrs[step], mus[step]};
        DBK_CHECK_OK(dbk_tensor_write(&grad, hg));
        DBK_CHECK_OK(dbk_tensor_write(&lr, values));   /* the host rewrites lr (and momentum) every step */
        DBK_CHECK_OK(dbk_backend_run(be, &d));
        for (int i = 0; i < N; i++) {
            const double g = (double)hg[i] + (double)wd * rp[i];
            rv[i] = (double)mu * rv[i] + g;
            rp[i] -= (double)lrs[step] * (nesterov ? g + (double)mu * rv[i] : rv[i]);
        }
        free(hg);
    }
    float *gp = dbk_test_read(&param), *gv = dbk_test_read(&mom), fp[N], fv[N];
    for (int i = 0; i < N; i++) {
        fp[i] = (float)rp[i];
        fv[i] = (float)rv[i];
    }
    char what[64];
    snprintf(what, sizeof what, "sgd%s%s params", nesterov ? " nesterov" : "", scheduled ? " scheduled momentum" : "");
    int rc = close_abs(what, fp, gp, N, 1e-6);
    snprintf(what, sizeof what, "sgd%s%s momentum", nesterov ? " nesterov" : "", scheduled ? " scheduled momentum" : "");
    rc |= close_abs(what, fv, gv, N, 1e-6);
    rc |= guards_intact();
    free(hp); free(hv); free(gp); free(gv);
    free_all();
    return rc;
}

int sgd_should_match_hand_computation_with_and_without_nesterov(void) {
    return sgd_case_check(false, false) | sgd_case_check(true, false) | sgd_case_check(false, true) |
           sgd_case_check(true, true);
}

/* The step values the trainer writes for AdamW step t (1-based), in double as PyTorch. */
static void adamw_step_values(double lr, double b1, double b2, int t, float out[3]) {
    out[0] = (float)lr;
    out[1] = (float)(lr / (1.0 - pow(b1, t)));
    out[2] = (float)sqrt(1.0 - pow(b2, t));
}

/* Three AdamW steps against the textbook form in double (Loshchilov & Hutter, Algorithm 2
 * with PyTorch's eps placement): p *= 1 - lr*wd; m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t);
 * p -= lr * m_hat / (sqrt(v_hat) + eps). The first step is also checked by hand: m_hat = g,
 * v_hat = g^2, so p1 = p0 * (1 - lr*wd) - lr * g / (|g| + eps), i.e. a step of lr against
 * the gradient's sign whatever its size. */
int adamw_should_match_hand_computation_over_three_steps(void) {
    enum { N = 6 };
    const double lr = 0.01, b1 = 0.9, b2 = 0.99, eps = 1e-8, wd = 0.05;
    const float p0[N] = {0.5f, -0.25f, 1.0f, 0.0f, -2.0f, 0.125f};
    const float grads[3][N] = {{0.1f, -3.0f, 1e-3f, 0.5f, -0.2f, 2.0f},
                               {0.2f, 1.0f, -1e-3f, 0.5f, 0.3f, -2.0f},
                               {-0.4f, 0.5f, 2e-3f, -0.5f, 0.1f, 1.0f}};
    dbk_tensor g = gf(1, N, 1, 1, 1), st = gf(1, 3, 1, 1, 1), p = gf(1, N, 1, 1, 1), m = gf(1, N, 1, 1, 1),
               v = gf(1, N, 1, 1, 1);
    const float zeros[N] = {0};
    DBK_CHECK_OK(dbk_tensor_write(&p, p0));
    DBK_CHECK_OK(dbk_tensor_write(&m, zeros));
    DBK_CHECK_OK(dbk_tensor_write(&v, zeros));
    dbk_op_desc op = {.op = DBK_OP_ADAMW_UPDATE, .p.adamw = {(float)b1, (float)b2, (float)eps, (float)wd}};
    op.src[0] = g; op.src[1] = st;
    op.dst[0] = p; op.dst[1] = m; op.dst[2] = v;
    double rp[N], rm[N] = {0}, rv[N] = {0};
    for (int i = 0; i < N; i++) rp[i] = p0[i];
    int rc = 0;
    for (int t = 1; t <= 3; t++) {
        float sv[3];
        adamw_step_values(lr, b1, b2, t, sv);
        DBK_CHECK_OK(dbk_tensor_write(&st, sv));
        DBK_CHECK_OK(dbk_tensor_write(&g, grads[t - 1]));
        DBK_CHECK_OK(dbk_backend_run(be, &op));
        float fp[N], fm[N], fv[N];
        for (int i = 0; i < N; i++) {
            const double gi = grads[t - 1][i];
            rp[i] *= 1.0 - lr * wd;
            rm[i] = b1 * rm[i] + (1.0 - b1) * gi;
            rv[i] = b2 * rv[i] + (1.0 - b2) * gi * gi;
            const double mhat = rm[i] / (1.0 - pow(b1, t)), vhat = rv[i] / (1.0 - pow(b2, t));
            rp[i] -= lr * mhat / (sqrt(vhat) + eps);
            fp[i] = (float)rp[i]; fm[i] = (float)rm[i]; fv[i] = (float)rv[i];
            if (t == 1) {
                const double by_hand = (double)p0[i] * (1.0 - lr * wd) - lr * gi / (fabs(gi) + eps);
                DBK_CHECK_MSG(fabs(by_hand - rp[i]) < 1e-12, "step 1 element %d: %.9g by hand, %.9g textbook", i,
                              by_hand, rp[i]);
            }
        }
        float *gp = dbk_test_read(&p), *gm = dbk_test_read(&m), *gv = dbk_test_read(&v);
        char what[48];
        snprintf(what, sizeof what, "adamw step %d params", t);
        rc |= close_abs(what, fp, gp, N, 1e-6);
        snprintf(what, sizeof what, "adamw step %d exp_avg", t);
        rc |= close_abs(what, fm, gm, N, 1e-7);
        snprintf(what, sizeof what, "adamw step %d exp_avg_sq", t);
        rc |= close_abs(what, fv, gv, N, 1e-7);
        free(gp); free(gm); free(gv);
    }
    return rc | guards_intact();
}

/* A 4th step value is the step's beta1 (fastai's cycled momentum): exp_avg = m + (1 - b1) (g - m)
 * with that b1, not params.beta1. */
int adamw_should_take_beta1_from_the_step_values(void) {
    enum { N = 4 };
    const float p0[N] = {1.0f, -0.5f, 0.25f, 2.0f}, m0[N] = {0.1f, -0.2f, 0.3f, 0.0f}, g0[N] = {1.0f, 2.0f, -1.0f, 0.5f};
    const float zeros[N] = {0}, sv[4] = {0.0f, 0.0f, 1.0f, 0.5f}; /* lr 0: only the moments move */
    dbk_tensor g = gf(1, N, 1, 1, 1), st = gf(1, 4, 1, 1, 1), p = gf(1, N, 1, 1, 1), m = gf(1, N, 1, 1, 1),
               v = gf(1, N, 1, 1, 1);
    DBK_CHECK_OK(dbk_tensor_write(&st, sv));
    DBK_CHECK_OK(dbk_tensor_write(&g, g0));
    DBK_CHECK_OK(dbk_tensor_write(&p, p0));
    DBK_CHECK_OK(dbk_tensor_write(&m, m0));
    DBK_CHECK_OK(dbk_tensor_write(&v, zeros));
    dbk_op_desc op = {.op = DBK_OP_ADAMW_UPDATE, .p.adamw = {0.9f, 0.999f, 1e-8f, 0.0f}};
    op.src[0] = g; op.src[1] = st;
    op.dst[0] = p; op.dst[1] = m; op.dst[2] = v;
    DBK_CHECK_OK(dbk_backend_run(be, &op));
    float want[N];
    for (int i = 0; i < N; i++) want[i] = m0[i] + 0.5f * (g0[i] - m0[i]);
    float *gm = dbk_test_read(&m);
    int rc = close_abs("exp_avg with beta1 0.5 from the step values", want, gm, N, 1e-7);
    free(gm);
    return rc | guards_intact();
}

/* Muon's ops by hand: the momentum buffer and nesterov direction, the renormalisation to
 * sqrt(K) (g 1, eps 0) and a skipped one (g 0), speedrun's scaling with a target and eps, and
 * the step with and without decoupled decay. */
int muon_ops_should_match_hand_computation(void) {
    enum { N = 4 };
    const float g0[N] = {1.0f, -2.0f, 0.5f, 0.0f}, v0[N] = {0.5f, 0.5f, -1.0f, 2.0f};
    dbk_tensor g = gf(1, N, 1, 1, 1), v = gf(1, N, 1, 1, 1), u = gf(1, N, 1, 1, 1), s = gf(1, 1, 1, 1, 1);
    int rc = 0;
    for (int nesterov = 0; nesterov < 2; nesterov++) {
        DBK_CHECK_OK(dbk_tensor_write(&g, g0));
        DBK_CHECK_OK(dbk_tensor_write(&v, v0));
        dbk_op_desc op = {.op = DBK_OP_MUON_MOMENTUM, .p.muon_momentum = {0.6f, (float)nesterov}};
        op.src[0] = g; op.dst[0] = v; op.dst[1] = u;
        DBK_CHECK_OK(dbk_backend_run(be, &op));
        float wv[N], wu[N];
        for (int i = 0; i < N; i++) {
            wv[i] = 0.6f * v0[i] + g0[i];
            wu[i] = nesterov ? g0[i] + 0.6f * wv[i] : wv[i];
        }
        float *gv = dbk_test_read(&v), *gu = dbk_test_read(&u);
        rc |= close_abs("muon momentum buffer", wv, gv, N, 1e-7) | close_abs("muon direction", wu, gu, N, 1e-7);
        free(gv); free(gu);
    }
    /* ||(3, 4, 0, 0)|| = 5: alpha 2 (sqrt(K) of a K = 4 filter) gives (1.2, 1.6, 0, 0) */
    const float x0[N] = {3.0f, 4.0f, 0.0f, 0.0f};
    const struct { float alpha, eps, g, want0; } runs[] = {
        {2.0f, 0.0f, 1.0f, 1.2f}, {2.0f, 0.0f, 0.0f, 3.0f}, {1.0f, 1e-5f, 0.5f, 0.5f * 3.0f / (5.0f + 1e-5f)}};
    for (int r = 0; r < 3; r++) {
        DBK_CHECK_OK(dbk_tensor_write(&g, x0));
        DBK_CHECK_OK(dbk_tensor_write(&s, &runs[r].g));
        dbk_op_desc op = {.op = DBK_OP_NORM_SCALE, .p.norm_scale = {runs[r].alpha, runs[r].eps}};
        op.src[0] = g; op.src[1] = s; op.dst[0] = g; /* in place */
        DBK_CHECK_OK(dbk_backend_run(be, &op));
        float *gy = dbk_test_read(&g);
        const float want[N] = {runs[r].want0, runs[r].want0 * 4.0f / 3.0f, 0.0f, 0.0f};
        rc |= close_abs("norm scale", want, gy, N, 1e-6);
        free(gy);
    }
    for (int decay = 0; decay < 2; decay++) {
        const float lr = 0.25f, wd = decay ? 0.5f : 0.0f;
        DBK_CHECK_OK(dbk_tensor_write(&g, g0));   /* the update x */
        DBK_CHECK_OK(dbk_tensor_write(&v, v0));   /* the parameters */
        DBK_CHECK_OK(dbk_tensor_write(&s, &lr));
        dbk_op_desc op = {.op = DBK_OP_MUON_UPDATE, .p.muon_update = {wd}};
        op.src[0] = g; op.src[1] = s; op.dst[0] = v;
        DBK_CHECK_OK(dbk_backend_run(be, &op));
        float want[N];
        for (int i = 0; i < N; i++) want[i] = (v0[i] - lr * g0[i]) * (1.0f - lr * wd);
        float *gp = dbk_test_read(&v);
        rc |= decay ? close_abs("muon step with decay", want, gp, N, 1e-7) : equal_bytes("muon step", want, gp, sizeof want);
        free(gp);
    }
    return rc | guards_intact();
}

/* Decoupled weight decay does not go through the gradient: a zero gradient on zero moments
 * scales the parameters by exactly (1 - lr * wd) in fp32 and leaves both moments zero, and
 * with wd = 0 the parameters do not move at all. */
int adamw_without_gradient_should_only_decay(void) {
    enum { N = 5 };
    const float p0[N] = {1.0f, -0.5f, 3.0f, 0.0f, 1e-3f}, zeros[N] = {0};
    dbk_tensor g = gf(1, N, 1, 1, 1), st = gf(1, 3, 1, 1, 1), p = gf(1, N, 1, 1, 1), m = gf(1, N, 1, 1, 1),
               v = gf(1, N, 1, 1, 1);
    int rc = 0;
    for (int with_wd = 0; with_wd < 2; with_wd++) {
        const float wd = with_wd ? 0.1f : 0.0f, lr = 0.5f;
        float sv[3];
        adamw_step_values(lr, 0.9, 0.999, 7, sv);
        DBK_CHECK_OK(dbk_tensor_write(&st, sv));
        DBK_CHECK_OK(dbk_tensor_write(&g, zeros));
        DBK_CHECK_OK(dbk_tensor_write(&p, p0));
        DBK_CHECK_OK(dbk_tensor_write(&m, zeros));
        DBK_CHECK_OK(dbk_tensor_write(&v, zeros));
        dbk_op_desc op = {.op = DBK_OP_ADAMW_UPDATE, .p.adamw = {0.9f, 0.999f, 1e-8f, wd}};
        op.src[0] = g; op.src[1] = st;
        op.dst[0] = p; op.dst[1] = m; op.dst[2] = v;
        DBK_CHECK_OK(dbk_backend_run(be, &op));
        float want[N];
        const float decay = 1.0f - lr * wd;
        for (int i = 0; i < N; i++) want[i] = p0[i] * decay;
        float *gp = dbk_test_read(&p), *gm = dbk_test_read(&m), *gv = dbk_test_read(&v);
        rc |= equal_bytes(with_wd ? "params decayed" : "params unchanged", want, gp, sizeof want);
        rc |= equal_bytes("exp_avg stays zero", zeros, gm, sizeof zeros) | equal_bytes("exp_avg_sq stays zero", zeros, gv, sizeof zeros);
        free(gp); free(gm); free(gv);
    }
    /* the contract: a step block of another length, and betas outside [0, 1), are refused */
    dbk_op_desc bad = {.op = DBK_OP_ADAMW_UPDATE, .p.adamw = {0.9f, 1.0f, 1e-8f, 0.0f}};
    bad.src[0] = g; bad.src[1] = st;
    bad.dst[0] = p; bad.dst[1] = m; bad.dst[2] = v;
    DBK_CHECK(dbk_backend_run(be, &bad) == DBK_ERR_INVALID_ARG && strstr(dbk_last_error(), "beta2"));
    bad.p.adamw.beta2 = 0.999f;
    bad.src[1].shape[0] = 1;
    DBK_CHECK(dbk_backend_run(be, &bad) == DBK_ERR_INVALID_ARG && strstr(dbk_last_error(), "3 element"));
    return rc | guards_intact();
}

static float lerp_ref(float e, float p, float decay) {
    const float w = 1.0f - decay;
    return fabsf(w) < 0.5f ? e + w * (p - e) : p - (p - e) * (1.0f - w);
}

int lookahead_should_lerp_toward_params_then_copy_ema_into_params(void) {
    enum { N = 37 };
    static const float decays[] = {0.77378094f, 0.3f, 0.5f, 1.0f, 0.0f};
    dbk_tensor decay = gf(1, 1, 1, 1, 1), ema = gf(1, N, 1, 1, 1), par = gf(2, 1, N, 1, 1);
    dbk_op_desc d = {.op = DBK_OP_LOOKAHEAD};
    d.src[0] = decay; d.dst[0] = ema; d.dst[1] = par;
    int rc = 0;
    for (size_t k = 0; k < sizeof decays / sizeof decays[0]; k++) {
        float *he = dbk_test_uniform(N, -1.0f, 1.0f, 105 + k), *hp = dbk_test_uniform(N, -1.0f, 1.0f, 110 + k);
        float want[N];
        for (int i = 0; i < N; i++) want[i] = lerp_ref(he[i], hp[i], decays[k]);
        /* decay 1 keeps the EMA exactly (the final sync), decay 0 takes the params exactly */
        if (decays[k] == 1.0f) DBK_CHECK(memcmp(want, he, sizeof want) == 0);
        if (decays[k] == 0.0f) DBK_CHECK(memcmp(want, hp, sizeof want) == 0);
        DBK_CHECK_OK(dbk_tensor_write(&ema, he));
        DBK_CHECK_OK(dbk_tensor_write(&par, hp));
        DBK_CHECK_OK(dbk_tensor_write(&decay, &decays[k]));   /* the host rewrites decay each run */
        DBK_CHECK_OK(dbk_backend_run(be, &d));
        float *ge = dbk_test_read(&ema), *gp = dbk_test_read(&par);
        rc |= equal_bytes("lookahead ema", want, ge, sizeof want) | equal_bytes("lookahead params", want, gp, sizeof want);
        free(he); free(hp); free(ge); free(gp);
    }
    rc |= guards_intact();

    /* validation: decay a single f32, ema and params of one element count */
    dbk_tensor two = gf(1, 2, 1, 1, 1), idecay = gt(DBK_DTYPE_I32, 1, 1, 1, 1, 1), short_par = gf(1, N - 1, 1, 1, 1);
    dbk_op_desc bad = d;
    bad.src[0] = two;
    DBK_CHECK(dbk_backend_run(be, &bad) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "decay") != NULL, "message '%s'", dbk_last_error());
    bad.src[0] = idecay;
    DBK_CHECK(dbk_backend_run(be, &bad) == DBK_ERR_INVALID_ARG);
    bad = d;
    bad.dst[1] = short_par;
    DBK_CHECK(dbk_backend_run(be, &bad) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "element count") != NULL, "message '%s'", dbk_last_error());
    free_all();
    return rc;
}

