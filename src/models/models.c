/* models.c — the table of named models (see models.h). */
#include <stdio.h>
#include <string.h>

#include "models/models.h"

/* Each defined in its own file (resnet9.c, ...). Declared here, next to the table, so that a
 * new model touches only its own file and this one. */
extern const dbk_model_def dbk_model_resnet9, dbk_model_resnet9_half, dbk_model_resnet9_quarter;
extern const dbk_model_def dbk_model_airbench94, dbk_model_airbench94_muon, dbk_model_cifar10_speedrun;
extern const dbk_model_def dbk_model_wrn22, dbk_model_wrn22_fastai, dbk_model_resnet18_cifar, dbk_model_alexnet_cifar, dbk_model_darknet_cifar;
extern const dbk_model_def dbk_model_resnet18, dbk_model_resnet50;

static const dbk_model_def *const models[] = {
    &dbk_model_resnet9,
    &dbk_model_resnet9_half,
    &dbk_model_resnet9_quarter,
    &dbk_model_airbench94,
    &dbk_model_airbench94_muon,
    &dbk_model_cifar10_speedrun,
    &dbk_model_wrn22,
    &dbk_model_wrn22_fastai,
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

/* The planning pass of the model on a batch of one channels x size x size input (evaluation
 * mode: no gradients), into a new graph. */
static dbk_status plan_at(const dbk_model_def *def, int channels, int size, int num_classes, dbk_graph **out) {
    const dbk_graph_config gc = {.training = false, .bn = {.eps = 1e-5f, .momentum = 0.1f}};
    DBK_TRY(dbk_graph_create(&gc, out));
    dbk_value x = dbk_graph_value(*out, false, 1, channels, size, size);
    dbk_model_forward(*out, def, x, num_classes);
    return dbk_graph_status(*out);
}

/* The first parameter of b that differs from a's in name or shape, or -1. */
static int first_difference(const dbk_graph *a, const dbk_graph *b) {
    const int na = dbk_graph_param_info_count(a), nb = dbk_graph_param_info_count(b);
    for (int i = 0; i < nb; i++) {
        if (i >= na) return i;
        const dbk_param_info *pa = dbk_graph_param_info(a, i), *pb = dbk_graph_param_info(b, i);
        if (strcmp(pa->name, pb->name) || pa->ndim != pb->ndim || memcmp(pa->shape, pb->shape, sizeof pa->shape))
            return i;
    }
    return na == nb ? -1 : nb;
}

dbk_status dbk_model_check_sizes(const dbk_model_def *def, int channels, const int *sizes, int n, int num_classes) {
    dbk_graph *first = NULL, *other = NULL;
    dbk_status st = n > 0 ? plan_at(def, channels, sizes[0], num_classes, &first) : DBK_OK;
    for (int k = 1; k < n && st == DBK_OK; k++) {
        dbk_graph_destroy(other);
        other = NULL;
        if ((st = plan_at(def, channels, sizes[k], num_classes, &other)) != DBK_OK) break;
        const int i = first_difference(first, other);
        if (i < 0) continue;
        const dbk_graph *g = i < dbk_graph_param_info_count(other) ? other : first;
        st = dbk_set_error(DBK_ERR_INVALID_ARG, "model %s cannot change image size: its parameters depend on it "
                           "(%s differs between %dx%d and %dx%d); progressive resizing needs a model with global "
                           "pooling, such as resnet18 or resnet50", def->name, dbk_graph_param_info(g, i)->name,
                           sizes[0], sizes[0], sizes[k], sizes[k]);
    }
    dbk_graph_destroy(first);
    dbk_graph_destroy(other);
    return st;
}
