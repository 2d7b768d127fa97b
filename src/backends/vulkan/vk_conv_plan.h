/*
 * vk_conv_plan.h — the launches a Vulkan convolution records, from the backend's own chunk
 * rule (plan_of in vk_ops_conv_winograd.c), for tests that need the count at a batch too
 * large to run (tests/test_step_costs.c: a recipe's step at its own batch on lavapipe).
 */
#ifndef DBK_VK_CONV_PLAN_H
#define DBK_VK_CONV_PLAN_H

#include "backend/backend.h"

/* The dispatches the conv op (CONV2D_FWD, _BWD_DATA or _BWD_FILTER, shapes only: its tensors
 * need no buffers) records on be when the profile runs it as Winograd: 3 per chunk of images
 * plus the filter transform (forward, backward-data) or the filter gradient's (backward-
 * filter); 0 for an op that is not Winograd on be. */
int dbk_vk_conv_winograd_dispatches(const dbk_backend *be, const dbk_op_desc *op);

#endif
