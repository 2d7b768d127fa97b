/*
 * bench_imagenet.c — the ImageNet path's two rates side by side: how fast the host decodes
 * (data/loader.h: read, decode, random-resized crop, flip) and how fast a device trains
 * ResNet-18 and ResNet-50 on those batches, with the share of each training step spent
 * waiting for the loader. Real images: the Imagenette subset (imagenette2-224-mini) or any
 * image-folder dataset given with --data, as a folder or a dataset pack (`daybreak pack-data`).
 *
 * usage: bench_imagenet [--data DIR]... [--backend SPEC]... [--model NAME]... [--size N] [--batch N]
 *                       [--steps N] [--threads N] [--decode-batches N] [--decode-only]
 *   --data DIR           an image-folder dataset or a pack of one (default:
 *                        $DAYBREAK_DATA/imagenette2-224-mini); repeatable: one decode line per
 *                        source, measured in turn (a folder and its pack side by side), and
 *                        training fed from the first
 *   --backend SPEC       cpu, opencl[:N], vulkan[:N]; repeatable (default: cpu)
 *   --model NAME         resnet18 or resnet50; repeatable (default: both)
 *   --size N             crop side (default 224)
 *   --batch N            training batch (default 8)
 *   --steps N            timed training steps after one warm-up step (default 2)
 *   --threads N          decode threads (default: the online cores)
 *   --decode-batches N   batches of the decode-only measurement (default 8)
 *   --decode-only        no training lines
 *
 * Output: one "decode" line (images/s in all and per thread, thread-time per image), then per
 * backend and model one line: images/s, ms per step, and the loader wait per step (time the
 * step waited for its batch; 0 when decoding keeps up).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timer.h"
#include "data/dataset.h"
#include "data/imagefolder.h"
#include "data/loader.h"
#include "models/models.h"
#include "train/recipe.h"
#include "train/session.h"

#define MAX_LIST 8

typedef struct bench_args {
    const char *data[MAX_LIST], *backends[MAX_LIST], *models[MAX_LIST];
    int ndata, nbackends, nmodels, size, batch, steps, threads, decode_batches;
    bool decode_only;
} bench_args;

static dbk_status make_loader(const dbk_imagefolder_list *list, const bench_args *a, dbk_loader **out) {
    const dbk_loader_config lc = {.list = list, .batch = a->batch, .height = a->size, .width = a->size, .train = true,
                                  .min_scale = 0.08f, .threads = a->threads, .seed = 1};
    return dbk_loader_create(&lc, out);
}

/* Decoding alone: decode_batches batches as fast as the threads go. */
static dbk_status bench_decode(const dbk_imagefolder_list *list, const bench_args *a, const char *source) {
    dbk_loader *l;
    DBK_TRY(make_loader(list, a, &l));
    dbk_status st = dbk_loader_begin_epoch(l, 1);
    const double t0 = dbk_time_now();
    int images = 0;
    for (int b = 0; st == DBK_OK && b < a->decode_batches; b++) {
        dbk_loader_batch batch;
        st = dbk_loader_next(l, &batch);
        if (st == DBK_OK && batch.count == 0) break;
        images += batch.count;
    }
    const double seconds = dbk_time_now() - t0;
    dbk_loader_stats s;
    dbk_loader_get_stats(l, &s);
    dbk_loader_destroy(l);
    DBK_TRY(st);
    const double per_image = s.decode_seconds / (double)s.images;
    printf("decode   %d threads, %d images at %dx%d: %8.1f img/s in all, %7.1f img/s per thread (%.1f ms thread "
           "time per image)  %s\n", s.threads, images, a->size, a->size, images / seconds, 1.0 / per_image,
           1000.0 * per_image, source);
    return DBK_OK;
}

/* Training steps of one model on one backend, fed by the loader. */
static dbk_status bench_train(const dbk_imagefolder_list *list, const bench_args *a, const char *spec,
                              const char *model_name) {
    dbk_backend_kind kind;
    int index;
    DBK_TRY(dbk_backend_resolve(spec, -1, &kind, &index));
    const dbk_recipe *recipe;
    const dbk_model_def *model;
    DBK_TRY(dbk_recipe_find("imagenet-resnet50", &recipe));
    DBK_TRY(dbk_model_find(model_name, &model));
    dbk_backend *be;
    DBK_TRY(dbk_backend_create(kind, index, &be));
    const dbk_session_config cfg = {.recipe = recipe, .model = model, .input = {3, a->size, a->size},
                                    .num_classes = list->num_classes, .batch = a->batch, .eval_batch = a->batch,
                                    .train_count = a->batch * (a->steps + 1), .streamed = true,
                                    .test_count = a->batch};
    dbk_session *s = NULL;
    dbk_loader *l = NULL;
    dbk_status st = dbk_session_create(be, &cfg, &s);
    if (st == DBK_OK) st = dbk_session_init_params(s, 1);
    if (st == DBK_OK) st = make_loader(list, a, &l);
    if (st == DBK_OK) st = dbk_loader_begin_epoch(l, 1);
    if (st == DBK_OK) st = dbk_session_begin_epoch(s, 1, 1);
    double t0 = 0, wait0 = 0;
    for (int step = 0; st == DBK_OK && step <= a->steps; step++) {
        if (step == 1) { /* after the warm-up step (kernel builds, first-touch allocations) */
            st = dbk_backend_sync(be);
            dbk_loader_stats ls;
            dbk_loader_get_stats(l, &ls);
            wait0 = ls.wait_seconds;
            t0 = dbk_time_now();
        }
        dbk_loader_batch b;
        if (st == DBK_OK) st = dbk_loader_next(l, &b);
        if (st == DBK_OK) st = dbk_session_upload_batch(s, b.images, b.labels);
        if (st == DBK_OK) st = dbk_session_train_step(s, step, 0.01f);
    }
    if (st == DBK_OK) st = dbk_backend_sync(be);
    if (st == DBK_OK) {
        const double seconds = dbk_time_now() - t0;
        dbk_loader_stats ls;
        dbk_loader_get_stats(l, &ls);
        const double wait = (ls.wait_seconds - wait0) / a->steps, step_s = seconds / a->steps;
        printf("train    %-8s %-28.28s %-9s batch %3d %4dx%-4d %8.2f img/s %9.1f ms/step  loader wait %7.1f ms/step "
               "(%4.1f%%)\n", spec, dbk_backend_get_info(be)->name, model_name, a->batch, a->size, a->size,
               a->batch / step_s, 1000.0 * step_s, 1000.0 * wait, 100.0 * wait / step_s);
    }
    dbk_loader_destroy(l);
    dbk_session_destroy(s);
    dbk_backend_destroy(be);
    return st;
}

static int usage(const char *msg) {
    fprintf(stderr, "bench_imagenet: %s\nusage: bench_imagenet [--data DIR] [--backend SPEC]... [--model NAME]... "
            "[--size N] [--batch N] [--steps N] [--threads N] [--decode-batches N] [--decode-only]\n", msg);
    return 2;
}

int main(int argc, char **argv) {
    bench_args a = {.size = 224, .batch = 8, .steps = 2, .decode_batches = 8};
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(opt, "--decode-only")) {
            a.decode_only = true;
            continue;
        }
        if (!v) return usage("an option without its value");
        i++;
        int *num = !strcmp(opt, "--size") ? &a.size : !strcmp(opt, "--batch") ? &a.batch
                 : !strcmp(opt, "--steps") ? &a.steps : !strcmp(opt, "--threads") ? &a.threads
                 : !strcmp(opt, "--decode-batches") ? &a.decode_batches : NULL;
        if (num) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < (num == &a.threads ? 0 : 1) || n > 100000) return usage("a bad number");
            *num = (int)n;
        } else if (!strcmp(opt, "--data") && a.ndata < MAX_LIST) {
            a.data[a.ndata++] = v;
        } else if (!strcmp(opt, "--backend") && a.nbackends < MAX_LIST) {
            a.backends[a.nbackends++] = v;
        } else if (!strcmp(opt, "--model") && a.nmodels < MAX_LIST) {
            a.models[a.nmodels++] = v;
        } else {
            return usage("an unknown option");
        }
    }
    if (!a.nbackends) a.backends[a.nbackends++] = "cpu";
    if (!a.nmodels) {
        a.models[a.nmodels++] = "resnet18";
        a.models[a.nmodels++] = "resnet50";
    }
    if (!a.ndata) a.data[a.ndata++] = NULL;
    const dbk_dataset_kind *kind;
    char dir[DBK_DATASET_PATH_BYTES];
    dbk_imagefolder_list lists[MAX_LIST] = {{0}};
    int rc = 0;
    for (int d = 0; d < a.ndata && !rc; d++) {
        if (dbk_dataset_kind_find("imagenette", &kind) != DBK_OK ||
            dbk_dataset_resolve(kind, a.data[d], dir, sizeof dir) != DBK_OK ||
            dbk_imagefolder_scan(dir, DBK_DATASET_SPLIT_TRAIN, &lists[d]) != DBK_OK) {
            fprintf(stderr, "bench_imagenet: %s\n", dbk_last_error());
            rc = 1;
        } else if (bench_decode(&lists[d], &a, dir) != DBK_OK) {
            fprintf(stderr, "bench_imagenet: decode: %s\n", dbk_last_error());
            rc = 1;
        }
        fflush(stdout);
    }
    const dbk_imagefolder_list *list = &lists[0];
    for (int b = 0; !rc && !a.decode_only && b < a.nbackends; b++) {
        for (int m = 0; m < a.nmodels; m++) {
            if (bench_train(list, &a, a.backends[b], a.models[m]) == DBK_OK) continue;
            printf("train    %-8s %-9s error: %s\n", a.backends[b], a.models[m], dbk_last_error());
            rc = 1;
        }
        fflush(stdout);
    }
    for (int d = 0; d < a.ndata; d++) dbk_imagefolder_list_deinit(&lists[d]);
    return rc;
}
