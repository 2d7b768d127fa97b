/* models.c — the table of named models (see models.h). */
#include <stdio.h>
#include <string.h>

#include "models/models.h"

/* Each defined in its own file (resnet9.c, ...). Declared here, next to the table, so that a
 * new model touches only its own file and this one. */
extern const dbk_model_def dbk_model_resnet9, dbk_model_resnet9_half, dbk_model_resnet9_quarter;
extern const dbk_model_def dbk_model_airbench94;
extern const dbk_model_def dbk_model_wrn22, dbk_model_resnet18_cifar, dbk_model_alexnet_cifar, dbk_model_darknet_cifar;
extern const dbk_model_def dbk_model_resnet18, dbk_model_resnet50;

static const dbk_model_def *const models[] = {
    &dbk_model_resnet9,
    &dbk_model_resnet9_half,
    &dbk_model_resnet9_quarter,
    &dbk_model_airbench94,
    &dbk_model_wrn22,
    &dbk_model_resnet18_cifar,
    &dbk_model_alexnet_cifar,
    &dbk_model_darknet_cifar,
    &dbk_model_resnet18,
    &dbk_model_resnet50,
};

int dbk_model_count(void) { return (int)(sizeof models / sizeof models[0]); }
const dbk_model_def *dbk_model_at(int i) { return models[i]; }

dbk_status dbk_model_find(const char *name, const dbk_model_def **out) {
    for (int i = 0; i < dbk_model_count(); i++) {
        if (!strcmp(models[i]->name, name)) {
            *out = models[i];
            return DBK_OK;
        }
    }
    char known[256] = "";
    for (int i = 0; i < dbk_model_count(); i++) {
        strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
        strncat(known, models[i]->name, sizeof known - strlen(known) - 1);
    }
    return dbk_set_error(DBK_ERR_NOT_FOUND, "unknown model '%s' (known: %s)", name, known);
}

dbk_value dbk_model_forward(dbk_graph *g, const dbk_model_def *def, dbk_value x, int num_classes) {
    return def->forward(g, def->config, x, num_classes);
}
