/*
 * loss_scaler.h — dynamic loss scaling for mixed-precision training (--precision fp16), the
 * host side of the state machine of PyTorch's torch.cuda.amp.GradScaler:
 *   the loss gradient is multiplied by the scale S (DBK_OP_LOSS_SCALE), so small gradients
 *   survive the fp16 copies of the backward pass; before the update the gradients are
 *   divided by S and checked for inf/NaN on the device (DBK_OP_GRAD_UNSCALE);
 *   a step with an inf or NaN gradient is skipped (no update) and S is halved;
 *   after growth_interval clean steps in a row S is doubled.
 * Defaults as GradScaler's: S starts at 2^16, growth interval 2000 steps. Unlike GradScaler
 * S never falls below 1: a gradient that overflows at scale 1 is a diverged run, which the
 * trainer reports as such, not a range problem of fp16.
 */
#ifndef DBK_LOSS_SCALER_H
#define DBK_LOSS_SCALER_H

#include <stdbool.h>

#define DBK_LOSS_SCALE_INIT      65536.0f
#define DBK_LOSS_SCALE_INTERVAL  2000

typedef struct dbk_loss_scaler {
    float scale;             /* S, a power of two */
    int   growth_interval;   /* clean steps before S doubles */
    int   clean_steps;       /* clean steps since S last changed */
    long  skipped_steps;     /* steps skipped for an inf/NaN gradient, in the whole run */
    long  growths;           /* times S doubled */
} dbk_loss_scaler;

void dbk_loss_scaler_init(dbk_loss_scaler *ls, float scale, int growth_interval);

/* Records the outcome of one step (overflow: the device found an inf or NaN gradient) and
 * moves S; returns true when the optimizer update must run (no overflow). */
bool dbk_loss_scaler_step(dbk_loss_scaler *ls, bool overflow);

#endif
