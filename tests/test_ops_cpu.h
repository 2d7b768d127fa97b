/*
 * test_ops_cpu.h — what the files of the test_ops_cpu executable share: the CPU backend under
 * test, guarded tensors and comparisons (test_ops_cpu_util.c), and the cases of each op
 * family's file, which main (test_ops_cpu.c) runs. The tolerances are in test_ops_cpu.c.
 */
#ifndef DBK_TEST_OPS_CPU_H
#define DBK_TEST_OPS_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

extern dbk_backend *be;   /* the CPU backend, created by main */

/* A tensor of its own buffer between two guard regions; the tensor starts as 0xFF bytes (NaN
 * as f32). Released by free_all. */
dbk_tensor gt(dbk_dtype dt, int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3);
dbk_tensor gf(int ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3);   /* gt in f32 */
void       free_all(void);
int        guards_intact(void);   /* 0 when every guard byte of every live tensor is intact */

float *to_float(const double *d, int64_t n);   /* malloc'd copy in float */
int    close_nmse(const char *what, const float *ref, const float *got, int64_t n, double tol);
int    close_abs(const char *what, const float *ref, const float *got, int64_t n, double tol);
int    equal_bytes(const char *what, const void *ref, const void *got, size_t n);

/* test_ops_cpu_conv.c */
int conv2d_should_match_direct_loops_over_shape_list(void);
int conv2d_should_not_grow_workspace_after_prepare(void);
int gemm_should_match_naive_for_all_transposes_and_beta(void);

/* test_ops_cpu_eltwise.c */
int batchnorm_fwd_should_match_direct_formulas(void);
int relu_should_clamp_negatives_and_mask_gradients_in_place(void);
int add_scale_fill_should_match_elementwise_formulas(void);
int copy_should_copy_every_dtype_exactly(void);
int maxpool_should_match_naive_with_first_max_ties(void);
int softmax_xent_should_match_direct_formula_with_and_without_smoothing(void);
int accuracy_should_count_first_max_and_accumulate(void);
int accuracy_should_count_labels_among_the_k_largest_logits(void);
int accuracy_should_never_count_a_row_with_a_non_finite_logit(void);
int gelu_should_match_erf_formulas_in_double_and_run_in_place(void);
int bias_add_and_channel_sum_should_match_naive_loops(void);
int global_avgpool_should_match_plane_means_and_spread_the_gradient(void);
int leaky_relu_should_scale_negatives_by_the_slope(void);
int dropout_should_drop_a_fraction_p_and_scale_the_rest(void);
int bias_ops_should_reject_a_bias_of_the_wrong_length(void);

/* test_ops_cpu_optim.c */
int sgd_should_match_hand_computation_with_and_without_nesterov(void);
int adamw_should_match_hand_computation_over_three_steps(void);
int adamw_should_take_beta1_from_the_step_values(void);
int muon_ops_should_match_hand_computation(void);
int adamw_without_gradient_should_only_decay(void);
int lookahead_should_lerp_toward_params_then_copy_ema_into_params(void);

/* test_ops_cpu_augment.c */
int augment_choices_should_follow_the_documented_draw(void);
int augment_train_should_match_independent_geometry(void);
int augment_eval_should_only_normalise(void);
int augment_jitter_should_shift_and_scale_each_row(void);
int augment_should_be_deterministic_per_seed(void);
int augment_should_reject_out_of_range_rows(void);
int augment_alternating_flip_should_mirror_each_image_once_per_two_epochs(void);
int augment_alternating_flip_should_keep_the_crop_and_cutout_draws(void);
int augment_view_should_match_hand_computed_pixels(void);
int augment_view_should_equal_pad_crop_then_flip(void);
int augment_old_modes_should_keep_their_bytes(void);
int augment_should_reject_bad_flip_and_view_settings(void);

#endif
