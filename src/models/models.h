/*
 * models.h — the networks daybreak trains: each a definition (name, description, forward
 * function, its own configuration) in its own file, and a table of them in models.c.
 *
 * A model knows nothing of the data: the input shape comes from the value x the caller lays
 * out (N, C, H, W: the dataset's image shape) and the number of classes is passed to forward
 * (the dataset's), so one model trains on any dataset whose images it can take.
 * Adding a model is one new file that defines `const dbk_model_def dbk_model_<name>` and one
 * line in models.c's table.
 */
#ifndef DBK_MODELS_H
#define DBK_MODELS_H

#include "nn/graph.h"

/* Lays the model out on g for input x (N, C, H, W); returns the logits value (N, classes, 1, 1).
 * config is the definition's own (each forward knows its type). Errors go to the graph
 * (dbk_graph_status), as for every dbk_nn_* layer. */
typedef dbk_value (*dbk_model_forward_fn)(dbk_graph *g, const void *config, dbk_value x, int num_classes);

typedef struct dbk_model_def {
    const char           *name;         /* "resnet9", "resnet9-quarter", ...; stored in checkpoints */
    const char           *description;
    const char           *dataset;      /* the dataset kind it was designed for (data/dataset.h) */
    dbk_model_forward_fn  forward;
    const void           *config;       /* read only by forward */
} dbk_model_def;

/* Looks a model up by name; DBK_ERR_NOT_FOUND lists the known names. */
dbk_status           dbk_model_find(const char *name, const dbk_model_def **out);
int                  dbk_model_count(void);
const dbk_model_def *dbk_model_at(int i);

/* def->forward(g, def->config, x, num_classes). */
dbk_value dbk_model_forward(dbk_graph *g, const dbk_model_def *def, dbk_value x, int num_classes);

/* Whether the model's parameters (their names and shapes) are the same for channels x size x
 * size inputs at every size of sizes[0..n) (progressive resizing trains one set of parameters
 * at several sizes: a ResNet's global average pool takes any size, a flatten before a linear
 * layer does not). Plans only; allocates no device memory. DBK_ERR_INVALID_ARG names the model,
 * the sizes and the first parameter that differs; a size the model cannot take at all gives its
 * layer's error. */
dbk_status dbk_model_check_sizes(const dbk_model_def *def, int channels, const int *sizes, int n, int num_classes);

#endif
