/*
 * loader.h — the decode pipeline of streamed datasets: host threads that read, decode, crop
 * and flip images into a ring of staging batches while the device trains on an earlier one.
 *
 * Work is handed out one image at a time; a thread may start on batch b only while b is
 * fewer than `ring` batches ahead of the batch the consumer holds, so at most ring batches of
 * memory are in use and the consumer gets batches in order. What each image becomes depends
 * only on (seed, epoch, its index), never on which thread decoded it: a run is reproducible
 * at any thread count.
 *
 *   training    every epoch a fresh permutation of the images; each one a random-resized crop
 *               (torchvision RandomResizedCrop: area in [min_scale, 1], ratio in [3/4, 4/3])
 *               resized to height x width and mirrored with probability 1/2; full batches only.
 *               Sharded (data-parallel training, train/peers.h): shard r of N delivers rows
 *               r*batch.. of each global batch of N*batch rows of the permutation, so the N
 *               shards together see what one loader of batch N*batch sees
 *   evaluation  the images in list order, each the short side resized to `resize`, then the
 *               central height x width crop (Resize + CenterCrop); a short last batch
 *
 * Batches are u8 planar (batch, 3, height, width) and int32 labels. The consumer's time spent
 * waiting in dbk_loader_next is measured: it is the time the device would have idled for the
 * host (reported per epoch as the loader wait).
 */
#ifndef DBK_LOADER_H
#define DBK_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "data/imagefolder.h"

typedef struct dbk_loader dbk_loader;

typedef struct dbk_loader_config {
    const dbk_split_files *list;   /* borrowed (dataset.h); must outlive the loader */
    int32_t  count;          /* images used: 0 or >= list->count: all; fewer: dbk_imagefolder_subset */
    int      batch;
    int      height, width;  /* of the crops delivered */
    bool     train;          /* training (shuffled, random crops and flips) or evaluation */
    float    min_scale;      /* training: smallest crop area fraction (0 = torchvision's 0.08) */
    int      resize;         /* evaluation: the short side before the central crop */
    int      threads;        /* decode threads, 0 = the host's online cores */
    int      ring;           /* batches in flight, 0 = 3 */
    uint64_t seed;
    int      shard_count;    /* training: 0 or 1 = one process, else the ranks (N) */
    int      shard_index;    /* training: this rank, 0..shard_count-1 */
} dbk_loader_config;

typedef struct dbk_loader_batch {
    const uint8_t *images;   /* (count, 3, height, width), valid until the next call */
    const int32_t *labels;   /* (count) */
    int            count;    /* rows; 0 once the epoch is exhausted */
} dbk_loader_batch;

typedef struct dbk_loader_stats {
    double  wait_seconds;    /* consumer time blocked in dbk_loader_next this epoch */
    double  decode_seconds;  /* thread time spent reading, decoding and cropping, all threads */
    int64_t images;          /* images delivered this epoch */
    int     threads;
} dbk_loader_stats;

/* The evaluation view of count images of list (0: all), in batches of batch: the short side
 * resized to dbk_imagefolder_eval_resize of the larger crop side, then the central
 * height x width crop; threads 0 = the online cores. */
dbk_loader_config dbk_loader_eval_config(const dbk_split_files *list, int32_t count, int batch, int height,
                                         int width, int threads);

/* The validation split of an opened streamed dataset through decode threads: lists it into
 * *files (dataset.h dbk_dataset_list; the caller destroys it after the loader), takes limit
 * images (<= 0: all; fewer: dbk_imagefolder_subset) in batches of min(batch, images) at info's
 * image shape, with the evaluation view. *count is the number of images. */
dbk_status dbk_loader_open_eval(const dbk_dataset_info *info, int32_t limit, int batch, int threads,
                                dbk_split_files **files, int32_t *count, dbk_loader **out);

/* Starts the threads (idle until dbk_loader_begin_epoch). DBK_ERR_INVALID_ARG for a bad
 * config; the thread-creation error otherwise. */
dbk_status dbk_loader_create(const dbk_loader_config *cfg, dbk_loader **out);
/* Stops the threads (in-flight images are finished and dropped) and frees. Accepts NULL. */
void       dbk_loader_destroy(dbk_loader *l);

/* Starts epoch `epoch` (1, 2, ...): drops whatever is in flight of the previous one, resets
 * the statistics and sets the threads decoding its first batches. */
dbk_status dbk_loader_begin_epoch(dbk_loader *l, int epoch);

/* The epoch's next batch, in order, waiting for it if need be; hands the previous batch's
 * buffers back. The first error any thread met (naming the file) is returned here. */
dbk_status dbk_loader_next(dbk_loader *l, dbk_loader_batch *out);

/* Batches per epoch: count / (batch x shards) in training (drop_last), ceil(count / batch) in
 * evaluation. */
int        dbk_loader_batches(const dbk_loader *l);
void       dbk_loader_get_stats(dbk_loader *l, dbk_loader_stats *out);   /* takes the lock */

#endif
