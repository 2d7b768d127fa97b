/* throughput.c — training images/s of a recipe on a device (see throughput.h). */
#include "bench/throughput.h"

#include "core/timer.h"
#include "models/models.h"
#include "train/session.h"

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
    for (int i = 0; i < warmup && st == DBK_OK; i++) st = dbk_session_train_step(s, i % per_epoch, lr);
    if (st == DBK_OK) st = dbk_backend_sync(be);
    double t0 = dbk_time_now();
    for (int i = 0; i < steps && st == DBK_OK; i++) st = dbk_session_train_step(s, (warmup + i) % per_epoch, lr);
    if (st == DBK_OK) st = dbk_backend_sync(be);
    double dt = dbk_time_now() - t0;
    dbk_session_destroy(s);
    if (st != DBK_OK) return st;
    out->steps = steps;
    out->batch = batch;
    out->seconds_per_step = dt / steps;
    out->images_per_second = (double)steps * batch / dt;
    return DBK_OK;
}
