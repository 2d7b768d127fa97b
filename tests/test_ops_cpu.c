/*
 * test_ops_cpu.c — every forward op of the CPU reference backend against an independent
 * naive reference written here (STYLE.md 3.9 item 2), plus the contract details that the
 * device backends will be held to: overwrite vs accumulate, in-place aliasing, tie
 * breaking, label guards, augmentation geometry and determinism, validation errors.
 * The cases live in one file per op family (test_ops_cpu_conv.c, _eltwise.c, _optim.c,
 * _augment.c; the guarded tensors in _util.c, all declared in test_ops_cpu.h); this file has
 * the contract checks of dbk_backend_run and the op list, and main.
 *
 * Every tensor lives in its own buffer between two guard regions filled with a byte
 * pattern; the tensor itself starts as all-ones bytes (NaN for f32), so an op that reads an
 * output it should overwrite, or writes outside its tensor, is caught (guards_intact).
 *
 * Tolerances (NMSE = sum (ref - got)^2 / sum ref^2, reference computed in double):
 *  - conv, GEMM: 1e-9. fp32 SGEMM sums of up to a few hundred products carry relative
 *    errors ~1e-7, i.e. NMSE ~1e-13; an indexing bug gives NMSE ~1.
 *  - batch norm, softmax: 1e-10 (elementwise fp32 arithmetic on double statistics).
 *  - relu, pool, add, scale, fill, copy, accuracy, argmax: exact.
 *  - SGD, augment: max abs difference 1e-6 against the same formula in double or float;
 *    AdamW: 1e-6 (params) and 1e-7 (moments) against the textbook form in double; without a
 *    gradient: exact (one fp32 multiply).
 *  - gelu fwd/bwd: 1e-12 against the formulas in double (fp32 erff/expf are within a few ulp,
 *    NMSE ~1e-14); channel_sum: 1e-12 against a double sum; bias_add and lookahead: exact
 *    (one fp32 add; the lerp formula written out in fp32); global_avgpool: 1e-14 against a
 *    double mean (forward), exact (backward: one fp32 division).
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


dbk_backend *be;

/* ---------------------------------------------------------------------------------- */
/* validation through dbk_backend_run                                                  */

static int backend_run_should_reject_contract_violations(void) {
    dbk_tensor x = gf(4, 2, 3, 8, 8), w = gf(4, 4, 3, 3, 3), y_bad = gf(4, 2, 4, 7, 8);
    dbk_op_desc conv = {.op = DBK_OP_CONV2D_FWD, .p.conv = {1, 1, 1, 1}};
    conv.src[0] = x; conv.src[1] = w; conv.dst[0] = y_bad;
    DBK_CHECK(dbk_backend_run(be, &conv) == DBK_ERR_INVALID_ARG);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "conv2d_fwd") != NULL, "message '%s'", dbk_last_error());

    dbk_tensor a = gf(2, 3, 5, 1, 1), b = gf(2, 4, 2, 1, 1), c = gf(2, 3, 2, 1, 1);
    dbk_op_desc gemm = {.op = DBK_OP_GEMM, .p.gemm = {false, false, 1.0f, 0.0f}};
    gemm.src[0] = a; gemm.src[1] = b; gemm.dst[0] = c;
    DBK_CHECK(dbk_backend_run(be, &gemm) == DBK_ERR_INVALID_ARG);

    dbk_op_desc add = {.op = DBK_OP_ADD};
    add.src[0] = a; add.src[1] = c; add.dst[0] = a;
    DBK_CHECK(dbk_backend_run(be, &add) == DBK_ERR_INVALID_ARG);

    dbk_tensor logits = gf(2, 3, 4, 1, 1), flabels = gf(1, 3, 1, 1, 1), probs = gf(2, 3, 4, 1, 1), loss = gf(1, 1, 1, 1, 1);
    dbk_op_desc xent = {.op = DBK_OP_SOFTMAX_XENT_FWD};
    xent.src[0] = logits; xent.src[1] = flabels; xent.dst[0] = probs; xent.dst[1] = loss;
    DBK_CHECK(dbk_backend_run(be, &xent) == DBK_ERR_INVALID_ARG);   /* f32 labels */

    /* A tensor that overruns its buffer. */
    dbk_tensor over = x;
    over.offset += 4;
    over.shape[0] = 3;
    dbk_op_desc relu = {.op = DBK_OP_RELU_FWD};
    relu.src[0] = over; relu.dst[0] = over;
    DBK_CHECK(dbk_backend_run(be, &relu) == DBK_ERR_INVALID_ARG);
    int rc = guards_intact();
    free_all();
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* the op list                                                                         */

static int op_list_should_derive_names_slots_and_counts(void) {
    for (int i = 0; i < DBK_OP_COUNT; i++) {
        const dbk_op_info *in = dbk_op_get_info((dbk_op)i);
        DBK_CHECK(in && in->op == (dbk_op)i && in->check && in->flops && in->bytes);
        DBK_CHECK(!strcmp(in->name, dbk_op_name((dbk_op)i)));
        dbk_op back = DBK_OP_COUNT;
        DBK_CHECK_OK(dbk_op_from_name(in->name, &back));
        DBK_CHECK(back == (dbk_op)i);
        DBK_CHECK(dbk_op_nsrc((dbk_op)i) <= DBK_OP_MAX_SRC && dbk_op_ndst((dbk_op)i) <= DBK_OP_MAX_DST);
        DBK_CHECK(dbk_op_ndst((dbk_op)i) >= 1);
        /* the generic launchers pass params as floats and bind src then dst slots */
        if (in->eltwise) DBK_CHECK_MSG(in->param_bytes % sizeof(float) == 0, "%s", in->name);
    }
    dbk_op op;
    DBK_CHECK(dbk_op_from_name("no_such_op", &op) == DBK_ERR_INVALID_ARG);
    DBK_CHECK(strstr(dbk_last_error(), "no_such_op") != NULL);
    DBK_CHECK(dbk_op_nsrc(DBK_OP_AUGMENT) == 4 && dbk_op_ndst(DBK_OP_BATCHNORM_FWD_TRAIN) == 5);
    DBK_CHECK(dbk_op_nsrc(DBK_OP_FILL) == 0 && dbk_op_get_info(DBK_OP_COUNT) == NULL);
    DBK_CHECK(!strcmp(dbk_op_name(DBK_OP_COUNT), "unknown_op"));
    DBK_CHECK(dbk_op_get_info(DBK_OP_RELU_FWD)->param_bytes == 0);
    DBK_CHECK(dbk_op_get_info(DBK_OP_SCALE)->param_bytes == sizeof(dbk_scale_params));
    DBK_CHECK(dbk_op_get_info(DBK_OP_CONV2D_FWD)->param_bytes == sizeof(dbk_conv2d_params));

    /* counts on descriptors (tensors need no buffer) */
    dbk_op_desc conv = {.op = DBK_OP_CONV2D_BWD_FILTER, .p.conv = {2, 2, 1, 1}};
    conv.src[0] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 2, 3, 8, 8);   /* x (N,C,H,W) */
    conv.src[1] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 2, 5, 4, 4);   /* dy (N,K,P,Q) */
    conv.dst[0] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 5, 3, 3, 3);   /* dw (K,C,R,S) */
    const dbk_conv2d_geom g = dbk_conv2d_geom_of(&conv);
    DBK_CHECK(g.x == &conv.src[0] && g.y == &conv.src[1] && g.w == &conv.dst[0]);
    DBK_CHECK(g.N == 2 && g.C == 3 && g.H == 8 && g.W == 8 && g.K == 5 && g.R == 3 && g.S == 3 && g.P == 4 &&
              g.Q == 4 && g.stride_h == 2 && g.pad_w == 1);
    DBK_CHECK_OK(dbk_op_validate(&conv));
    DBK_CHECK(dbk_op_flops(&conv) == 2.0 * (2 * 5 * 4 * 4) * (3 * 3 * 3));
    DBK_CHECK(dbk_op_bytes(&conv) == 4.0 * (2 * 3 * 8 * 8 + 2 * 5 * 4 * 4 + 5 * 3 * 3 * 3));
    conv.op = DBK_OP_CONV2D_BWD_DATA;   /* dy (N,K,P,Q), w (K,C,R,S) -> dx (N,C,H,W) */
    conv.src[0] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 2, 5, 4, 4);
    conv.src[1] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 5, 3, 3, 3);
    conv.dst[0] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 2, 3, 8, 8);
    const dbk_conv2d_geom gd = dbk_conv2d_geom_of(&conv);
    DBK_CHECK(gd.x == &conv.dst[0] && gd.y == &conv.src[0] && gd.w == &conv.src[1] && gd.C == 3 && gd.P == 4);
    DBK_CHECK_OK(dbk_op_validate(&conv));

    /* augment counts the batch it reads (one u8 per output element), not the dataset */
    dbk_op_desc aug = {.op = DBK_OP_AUGMENT};
    aug.src[0] = dbk_tensor_make(NULL, 0, DBK_DTYPE_U8, 4, 1000, 3, 32, 32);
    aug.src[1] = dbk_tensor_make(NULL, 0, DBK_DTYPE_U8, 1, 1000, 1, 1, 1);
    aug.src[3] = dbk_tensor_make(NULL, 0, DBK_DTYPE_I32, 1, 4, 1, 1, 1);
    aug.dst[0] = dbk_tensor_make(NULL, 0, DBK_DTYPE_F32, 4, 8, 3, 32, 32);
    aug.dst[1] = dbk_tensor_make(NULL, 0, DBK_DTYPE_I32, 1, 8, 1, 1, 1);
    DBK_CHECK(dbk_op_bytes(&aug) == 5.0 * (8 * 3 * 32 * 32) + 5.0 * 8);
    return 0;
}

int main(void) {
    if (dbk_backend_create(DBK_BACKEND_KIND_CPU, 0, &be) != DBK_OK) {
        fprintf(stderr, "cannot create the CPU backend: %s\n", dbk_last_error());
        return 1;
    }
    /* Each case releases its tensors; a failed DBK_CHECK returns early, so clean up after too. */
#define RUN(fn)       \
    do {              \
        DBK_RUN(fn);  \
        free_all();   \
    } while (0)
    RUN(conv2d_should_match_direct_loops_over_shape_list);
    RUN(conv2d_should_not_grow_workspace_after_prepare);
    RUN(gemm_should_match_naive_for_all_transposes_and_beta);
    RUN(batchnorm_fwd_should_match_direct_formulas);
    RUN(relu_should_clamp_negatives_and_mask_gradients_in_place);
    RUN(add_scale_fill_should_match_elementwise_formulas);
    RUN(copy_should_copy_every_dtype_exactly);
    RUN(maxpool_should_match_naive_with_first_max_ties);
    RUN(softmax_xent_should_match_direct_formula_with_and_without_smoothing);
    RUN(accuracy_should_count_first_max_and_accumulate);
    RUN(accuracy_should_count_labels_among_the_k_largest_logits);
    RUN(accuracy_should_never_count_a_row_with_a_non_finite_logit);
    RUN(sgd_should_match_hand_computation_with_and_without_nesterov);
    RUN(adamw_should_match_hand_computation_over_three_steps);
    RUN(adamw_should_take_beta1_from_the_step_values);
    RUN(muon_ops_should_match_hand_computation);
    RUN(adamw_without_gradient_should_only_decay);
    RUN(augment_choices_should_follow_the_documented_draw);
    RUN(augment_train_should_match_independent_geometry);
    RUN(augment_eval_should_only_normalise);
    RUN(augment_jitter_should_shift_and_scale_each_row);
    RUN(augment_should_be_deterministic_per_seed);
    RUN(augment_should_reject_out_of_range_rows);
    RUN(augment_alternating_flip_should_mirror_each_image_once_per_two_epochs);
    RUN(augment_alternating_flip_should_keep_the_crop_and_cutout_draws);
    RUN(augment_view_should_match_hand_computed_pixels);
    RUN(augment_view_should_equal_pad_crop_then_flip);
    RUN(augment_old_modes_should_keep_their_bytes);
    RUN(augment_should_reject_bad_flip_and_view_settings);
    RUN(backend_run_should_reject_contract_violations);
    RUN(op_list_should_derive_names_slots_and_counts);
    RUN(gelu_should_match_erf_formulas_in_double_and_run_in_place);
    RUN(bias_add_and_channel_sum_should_match_naive_loops);
    RUN(global_avgpool_should_match_plane_means_and_spread_the_gradient);
    RUN(leaky_relu_should_scale_negatives_by_the_slope);
    RUN(dropout_should_drop_a_fraction_p_and_scale_the_rest);
    RUN(lookahead_should_lerp_toward_params_then_copy_ema_into_params);
    RUN(bias_ops_should_reject_a_bias_of_the_wrong_length);
    dbk_backend_destroy(be);
    return dbk_test_finish();
}
