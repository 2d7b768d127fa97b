/* models.c — the table of named models (see models.h). */
#include <stdio.h>
#include <string.h>

#include "models/models.h"

static const dbk_model_spec models[] = {
    {"resnet9", "resnet9", {64, 128, 256, 512}, 0.125f, 10,
     "cifar10-fast DAWNBench ResNet9, widths 64-128-256-512 (6.6M parameters)"},
    {"resnet9-half", "resnet9", {32, 64, 128, 256}, 0.125f, 10,
     "ResNet9 at half width, 32-64-128-256"},
    {"resnet9-quarter", "resnet9", {16, 32, 64, 128}, 0.125f, 10,
     "ResNet9 at quarter width, 16-32-64-128"},
};

int dbk_model_count(void) { return (int)(sizeof models / sizeof models[0]); }
const dbk_model_spec *dbk_model_at(int i) { return &models[i]; }

dbk_status dbk_model_find(const char *name, const dbk_model_spec **out) {
    for (int i = 0; i < dbk_model_count(); i++) {
        if (!strcmp(models[i].name, name)) {
            *out = &models[i];
            return DBK_OK;
        }
    }
    char known[256] = "";
    for (int i = 0; i < dbk_model_count(); i++) {
        strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
        strncat(known, models[i].name, sizeof known - strlen(known) - 1);
    }
    return dbk_set_error(DBK_ERR_NOT_FOUND, "unknown model '%s' (known: %s)", name, known);
}

dbk_value dbk_model_forward(dbk_graph *g, const dbk_model_spec *spec, dbk_value x) {
    /* Only one family so far; the spec's family selects the layout function. */
    return dbk_resnet9_forward(g, spec, x);
}
