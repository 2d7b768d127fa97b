/* loss_scaler.c — dynamic loss scaling (see loss_scaler.h). */
#include "train/loss_scaler.h"

void dbk_loss_scaler_init(dbk_loss_scaler *ls, float scale, int growth_interval) {
    *ls = (dbk_loss_scaler){.scale = scale, .growth_interval = growth_interval > 0 ? growth_interval : 1};
}

bool dbk_loss_scaler_step(dbk_loss_scaler *ls, bool overflow) {
    if (overflow) {
        ls->skipped_steps++;
        ls->clean_steps = 0;
        if (ls->scale > 1.0f) ls->scale *= 0.5f;
        return false;
    }
    if (++ls->clean_steps >= ls->growth_interval) {
        ls->clean_steps = 0;
        if (ls->scale < 0x1p64f) {   /* far beyond any useful scale; keeps S finite */
            ls->scale *= 2.0f;
            ls->growths++;
        }
    }
    return true;
}
