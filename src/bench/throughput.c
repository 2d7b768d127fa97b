/* throughput.c — training images/s of a recipe on a device (see throughput.h). */
#include "bench/throughput.h"

#include "core/timer.h"
#include "models/models.h"

/* Training step i of total, and the recipe's lookahead after it as the trainer runs it (every
 * lookahead_every steps: airbench94's EMA is part of its step's cost). */
static dbk_status one_step(dbk_session *s, const dbk_recipe *recipe, long i, int per_epoch, long total, float lr) {
    DBK_TRY(dbk_session_train_step(s, (int)(i % per_epoch), lr));
    if (!dbk_session_has_lookahead(s) || recipe->lookahead_every <= 0 || (i + 1) % recipe->lookahead_every) return DBK_OK;
    return dbk_session_lookahead(s, i + 1, total);
}

dbk_status dbk_bench_throughput(dbk_backend *be, const dbk_recipe *recipe, int batch, bool fp16, int warmup, int steps,
                                const dbk_dataset *train, const dbk_dataset *test, dbk_throughput *out) {
    const dbk_model_def *model;
    DBK_TRY(dbk_model_find(recipe->model, &model));
    dbk_session_config cfg = {.recipe = recipe, .model = model, .batch = batch, .eval_batch = batch,
                              .input = {train->channels, train->height, train->width},
                              .num_classes = train->num_classes,
                              .train_count = train->count, .test_count = test->count, .fp16 = fp16};
    dbk_session *s;
    const double created0 = dbk_time_now();
    DBK_TRY(dbk_session_create(be, &cfg, &s));
    out->session_seconds = dbk_time_now() - created0;
    dbk_status st = dbk_session_warm_up(s, &out->warmup_seconds);
    if (st == DBK_OK) st = dbk_session_upload_data(s, train, test);
    if (st == DBK_OK) st = dbk_session_init_params(s, 1);
    if (st == DBK_OK) st = dbk_session_init_from_data(s, train);
    if (st == DBK_OK) st = dbk_session_begin_epoch(s, 1, 1);
    const int per_epoch = dbk_session_steps_per_epoch(s);
    /* A mid-schedule learning rate keeps the step representative without diverging. */
    const float lr = 0.1f;
    const long total = (long)warmup + steps;
    for (int i = 0; i < warmup && st == DBK_OK; i++) st = one_step(s, recipe, i, per_epoch, total, lr);
    if (st == DBK_OK) st = dbk_backend_sync(be);
    dbk_session_reset_step_costs(s);   /* the timed steps' costs only */
    const double cpu0 = dbk_process_cpu_seconds();
    double t0 = dbk_time_now();
    for (int i = 0; i < steps && st == DBK_OK; i++) st = one_step(s, recipe, warmup + i, per_epoch, total, lr);
    if (st == DBK_OK) st = dbk_backend_sync(be);
    double dt = dbk_time_now() - t0;
    const double cpu = dbk_process_cpu_seconds() - cpu0;
    dbk_session_step_costs(s, &out->costs);
    dbk_session_destroy(s);
    if (st != DBK_OK) return st;
    out->steps = steps;
    out->batch = batch;
    out->seconds_per_step = dt / steps;
    out->cpu_seconds_per_step = cpu / steps;
    out->images_per_second = (double)steps * batch / dt;
    return DBK_OK;
}
