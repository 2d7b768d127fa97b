/*
 * loader.c — decode threads and the ring of staging batches (see loader.h).
 *
 * One mutex guards the shared counters; two condition variables: `work` (threads wait for an
 * image they may start) and `ready` (the consumer waits for a batch to fill, begin_epoch for
 * the threads to go idle). An image is claimed under the lock, decoded without it, and
 * counted done under it again.
 */
#define _POSIX_C_SOURCE 200809L
#include "data/loader.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/image.h"

#define MAX_THREADS 256
#define MAX_RING 64
#define ERROR_BYTES 1024

typedef struct ring_slot {
    uint8_t *images;     /* (batch, 3, H, W) */
    int32_t *labels;     /* (batch) */
    int      done;       /* rows finished */
} ring_slot;

struct dbk_loader {
    dbk_loader_config cfg;
    int32_t          *subset;        /* (count): indices into the list */
    int32_t          *order;         /* (count): this epoch's order over subset */
    int32_t           count;
    int               batches;       /* per epoch */
    int               shards;        /* training: ranks sharing each global batch (1: none) */
    size_t            image_bytes;
    ring_slot        *slots;
    pthread_t        *threads;
    int               nthreads, started;

    pthread_mutex_t   mu;
    pthread_cond_t    work, ready;
    bool              quit;
    int               epoch;
    int64_t           next_item;     /* next row of the epoch to hand out */
    int64_t           items;         /* rows this epoch (batches * batch in training) */
    int               consumed;      /* batches handed back by the consumer */
    bool              holding;       /* the consumer holds batch `consumed` */
    int               busy;          /* images being decoded right now */
    dbk_status        error;
    char              error_text[ERROR_BYTES];
    dbk_loader_stats  stats;
};

static int rows_of(const dbk_loader *l, int b) {
    const int64_t first = (int64_t)b * l->cfg.batch;
    const int64_t left = l->items - first;
    return left < l->cfg.batch ? (int)left : l->cfg.batch;
}

/* A uniform in [0, 1) that depends only on the seed, epoch, image and purpose. */
static float draw(const dbk_loader *l, int32_t image, uint32_t purpose) {
    const uint32_t h = dbk_hash_u32((uint32_t)l->cfg.seed ^ (uint32_t)(l->cfg.seed >> 32), (uint32_t)l->epoch,
                                    (uint32_t)image, purpose);
    return (float)(h >> 8) * (1.0f / 16777216.0f);
}

/* Decodes image `item` of the epoch into its slot row. */
static dbk_status produce(dbk_loader *l, int64_t item) {
    const int b = (int)(item / l->cfg.batch), row = (int)(item % l->cfg.batch);
    ring_slot *slot = &l->slots[b % l->cfg.ring];
    /* this shard's rows of the global batch b */
    const int64_t position = ((int64_t)b * l->shards + (l->shards > 1 ? l->cfg.shard_index : 0)) * l->cfg.batch + row;
    const int32_t image = l->subset[l->order[position]];
    dbk_rgb_image img;
    DBK_TRY(dbk_imagefolder_load_image(l->cfg.list, image, &img));
    dbk_crop_rect rect;
    bool flip = false;
    if (l->cfg.train) {
        float u[DBK_IMAGE_RANDOM_DRAWS];
        for (int i = 0; i < DBK_IMAGE_RANDOM_DRAWS; i++) u[i] = draw(l, image, (uint32_t)i);
        rect = dbk_image_random_rect(img.width, img.height, l->cfg.min_scale, u);
        flip = draw(l, image, DBK_IMAGE_RANDOM_DRAWS) < 0.5f;
    } else {
        rect = dbk_image_center_rect(img.width, img.height, l->cfg.resize, l->cfg.height);
    }
    dbk_image_crop_resize(&img, rect, l->cfg.height, l->cfg.width, flip, slot->images + (size_t)row * l->image_bytes);
    slot->labels[row] = l->cfg.list->labels[image];
    dbk_rgb_image_deinit(&img);
    return DBK_OK;
}

static bool may_start(const dbk_loader *l) {
    if (l->error != DBK_OK || l->next_item >= l->items) return false;
    return (int)(l->next_item / l->cfg.batch) < l->consumed + l->cfg.ring;
}

static void *worker(void *arg) {
    dbk_loader *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->quit && !may_start(l)) pthread_cond_wait(&l->work, &l->mu);
        if (l->quit) break;
        const int64_t item = l->next_item++;
        l->busy++;
        pthread_mutex_unlock(&l->mu);

        const double t0 = dbk_time_now();
        dbk_status st = produce(l, item);
        const double t1 = dbk_time_now();

        pthread_mutex_lock(&l->mu);
        l->busy--;
        l->stats.decode_seconds += t1 - t0;
        if (st != DBK_OK && l->error == DBK_OK) {
            l->error = st;
            snprintf(l->error_text, sizeof l->error_text, "%s", dbk_last_error());
        }
        if (st == DBK_OK) l->slots[(item / l->cfg.batch) % l->cfg.ring].done++;
        pthread_cond_broadcast(&l->ready);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static int online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

dbk_loader_config dbk_loader_eval_config(const dbk_split_files *list, int32_t count, int batch, int height,
                                         int width, int threads) {
    return (dbk_loader_config){.list = list,
                               .count = count,
                               .batch = batch,
                               .height = height,
                               .width = width,
                               .train = false,
                               .resize = dbk_imagefolder_eval_resize(height > width ? height : width),
                               .threads = threads};
}

dbk_status dbk_loader_open_eval(const dbk_dataset_info *info, int32_t limit, int batch, int threads,
                                dbk_split_files **files, int32_t *count, dbk_loader **out) {
    *out = NULL;
    DBK_TRY(dbk_dataset_list(info, DBK_DATASET_SPLIT_TEST, files));
    const int32_t n = dbk_split_files_count(*files);
    *count = limit > 0 && limit < n ? limit : n;
    const dbk_loader_config ec = dbk_loader_eval_config(*files, *count, *count < batch ? *count : batch,
                                                        info->shape.height, info->shape.width, threads);
    return dbk_loader_create(&ec, out);
}

dbk_status dbk_loader_create(const dbk_loader_config *cfg, dbk_loader **out) {
    *out = NULL;
    const int32_t available = cfg->list ? cfg->list->count : 0;
    const int32_t count = cfg->count > 0 && cfg->count < available ? cfg->count : available;
    if (count < 1 || cfg->batch < 1 || cfg->height < 1 || cfg->width < 1)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "loader: %d images, batch %d, crop %dx%d: all must be >= 1", count,
                             cfg->batch, cfg->height, cfg->width);
    const int shards = cfg->train && cfg->shard_count > 1 ? cfg->shard_count : 1;
    if (cfg->train && (cfg->shard_index < 0 || cfg->shard_index >= shards))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "loader: shard %d of %d", cfg->shard_index, shards);
    if (cfg->train && count / shards < cfg->batch)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "batch size %d%s is larger than the training set (%d images)",
                             cfg->batch, shards > 1 ? " per rank" : "", shards > 1 ? count / shards : count);
    if (!cfg->train && cfg->resize < cfg->height && cfg->resize < cfg->width)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "loader: evaluation resize %d is smaller than the crop %dx%d",
                             cfg->resize, cfg->height, cfg->width);
    if (cfg->threads < 0 || cfg->threads > MAX_THREADS || cfg->ring < 0 || cfg->ring > MAX_RING ||
        cfg->min_scale < 0.0f || cfg->min_scale > 1.0f)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "loader: threads %d (0..%d), ring %d (0..%d), min_scale %g (0..1)",
                             cfg->threads, MAX_THREADS, cfg->ring, MAX_RING, (double)cfg->min_scale);
    dbk_loader *l = dbk_calloc(1, sizeof *l);
    if (!l) return DBK_ERR_OUT_OF_HOST_MEMORY;
    l->cfg = *cfg;
    if (!l->cfg.ring) l->cfg.ring = 3;
    if (!l->cfg.threads) l->cfg.threads = online_cores();
    if (l->cfg.min_scale == 0.0f) l->cfg.min_scale = 0.08f;
    l->count = count;
    l->shards = shards;
    l->batches = cfg->train ? count / (cfg->batch * shards) : (count + cfg->batch - 1) / cfg->batch;
    l->image_bytes = (size_t)3 * (size_t)cfg->height * (size_t)cfg->width;
    l->subset = dbk_malloc((size_t)count * sizeof *l->subset);
    l->order = dbk_malloc((size_t)count * sizeof *l->order);
    l->slots = dbk_calloc((size_t)l->cfg.ring, sizeof *l->slots);
    l->threads = dbk_calloc((size_t)l->cfg.threads, sizeof *l->threads);
    bool ok = l->subset && l->order && l->slots && l->threads;
    for (int i = 0; ok && i < l->cfg.ring; i++) {
        l->slots[i].images = dbk_malloc((size_t)cfg->batch * l->image_bytes);
        l->slots[i].labels = dbk_malloc((size_t)cfg->batch * sizeof *l->slots[i].labels);
        ok = l->slots[i].images && l->slots[i].labels;
    }
    if (!ok) {
        dbk_loader_destroy(l);
        return DBK_ERR_OUT_OF_HOST_MEMORY;
    }
    dbk_imagefolder_subset(available, count, l->subset);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->work, NULL);
    pthread_cond_init(&l->ready, NULL);
    l->nthreads = l->cfg.threads;
    for (int i = 0; i < l->nthreads; i++) {
        int e = pthread_create(&l->threads[i], NULL, worker, l);
        if (e) {
            dbk_loader_destroy(l);
            return dbk_set_error(DBK_ERR_IO, "loader: cannot start decode thread %d: %s", i + 1, strerror(e));
        }
        l->started++;
    }
    l->stats.threads = l->nthreads;
    *out = l;
    return DBK_OK;
}

void dbk_loader_destroy(dbk_loader *l) {
    if (!l) return;
    if (l->started || l->nthreads) {
        pthread_mutex_lock(&l->mu);
        l->quit = true;
        pthread_cond_broadcast(&l->work);
        pthread_mutex_unlock(&l->mu);
        for (int i = 0; i < l->started; i++) pthread_join(l->threads[i], NULL);
        pthread_cond_destroy(&l->work);
        pthread_cond_destroy(&l->ready);
        pthread_mutex_destroy(&l->mu);
    }
    for (int i = 0; l->slots && i < l->cfg.ring; i++) {
        dbk_free(l->slots[i].images);
        dbk_free(l->slots[i].labels);
    }
    dbk_free(l->slots);
    dbk_free(l->threads);
    dbk_free(l->subset);
    dbk_free(l->order);
    dbk_free(l);
}

dbk_status dbk_loader_begin_epoch(dbk_loader *l, int epoch) {
    pthread_mutex_lock(&l->mu);
    l->items = 0; /* nothing more is handed out */
    while (l->busy > 0) pthread_cond_wait(&l->ready, &l->mu);
    l->epoch = epoch;
    for (int32_t i = 0; i < l->count; i++) l->order[i] = i;
    if (l->cfg.train) {
        dbk_rng rng;
        dbk_rng_init(&rng, l->cfg.seed ^ ((uint64_t)(uint32_t)epoch * 0x9e3779b97f4a7c15ULL) ^ 0x10adeULL);
        dbk_rng_permutation(&rng, l->order, l->count);
    }
    for (int i = 0; i < l->cfg.ring; i++) l->slots[i].done = 0;
    l->items = l->cfg.train ? (int64_t)l->batches * l->cfg.batch : l->count;
    l->next_item = 0;
    l->consumed = 0;
    l->holding = false;
    l->error = DBK_OK;
    l->error_text[0] = '\0';
    const int threads = l->stats.threads;
    memset(&l->stats, 0, sizeof l->stats);
    l->stats.threads = threads;
    pthread_cond_broadcast(&l->work);
    pthread_mutex_unlock(&l->mu);
    return DBK_OK;
}

dbk_status dbk_loader_next(dbk_loader *l, dbk_loader_batch *out) {
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&l->mu);
    if (l->holding) { /* hand the previous batch's slot back */
        l->slots[l->consumed % l->cfg.ring].done = 0;
        l->consumed++;
        l->holding = false;
        pthread_cond_broadcast(&l->work);
    }
    if (l->consumed >= l->batches) {
        pthread_mutex_unlock(&l->mu);
        return DBK_OK;
    }
    ring_slot *slot = &l->slots[l->consumed % l->cfg.ring];
    const int rows = rows_of(l, l->consumed);
    const double t0 = dbk_time_now();
    while (l->error == DBK_OK && slot->done < rows) pthread_cond_wait(&l->ready, &l->mu);
    l->stats.wait_seconds += dbk_time_now() - t0;
    if (l->error != DBK_OK) {
        dbk_status st = l->error;
        char text[ERROR_BYTES];
        snprintf(text, sizeof text, "%s", l->error_text);
        pthread_mutex_unlock(&l->mu);
        return dbk_set_error(st, "%s", text);
    }
    l->holding = true;
    l->stats.images += rows;
    out->images = slot->images;
    out->labels = slot->labels;
    out->count = rows;
    pthread_mutex_unlock(&l->mu);
    return DBK_OK;
}

int dbk_loader_batches(const dbk_loader *l) { return l->batches; }

void dbk_loader_get_stats(dbk_loader *l, dbk_loader_stats *out) {
    pthread_mutex_lock(&l->mu);
    *out = l->stats;
    pthread_mutex_unlock(&l->mu);
}
