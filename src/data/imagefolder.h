/*
 * imagefolder.h — ImageNet-style image folders, the "imagenet" and "imagenette" kinds of
 * data/dataset.h (streamed: data/loader.h decodes every step's batch on host threads).
 *
 * Layout of a dataset folder:
 *   classes.txt             optional: one class per line, "<folder> [human-readable name]";
 *                           its order is the label order. Without it the class folders of
 *                           train/, sorted by name (byte order), are the classes.
 *   train/<class>/IMG.JPEG  training images (.jpeg/.jpg/.png in any case)
 *   val/<class>/IMG.JPEG    validation images, the split the target is measured on
 * Every class folder must exist in both splits and hold at least one image; a folder of
 * train/ or val/ that is not a class, or a class without images, is an error naming it. Other
 * files in a class folder are ignored; symbolic links to images are followed (each image is
 * then opened as a regular file only, core/fileio.h).
 *
 * The folder may lie inside a dataset pack (data/pack.h, `daybreak pack-data`): a split's
 * list then holds the pack opened once, and its images are read from it (data/source.h).
 *
 * A split's list holds full paths and labels in class order, files sorted by name within a
 * class. Labels are int32: ImageNet has 1,000 classes.
 */
#ifndef DBK_IMAGEFOLDER_H
#define DBK_IMAGEFOLDER_H

#include <stdint.h>

#include "core/status.h"
#include "data/dataset.h"
#include "data/image.h"
#include "data/source.h"

#define DBK_IMAGEFOLDER_DIR_CONTENTS \
    "train/<class>/*.JPEG and val/<class>/*.JPEG (the ImageNet folder layout), optionally classes.txt"
#define DBK_IMAGEFOLDER_MAX_CLASSES 100000
#define DBK_IMAGEFOLDER_MAX_IMAGES  (1 << 26)       /* per split */
#define DBK_IMAGEFOLDER_CLASSES_MAX_BYTES ((size_t)8 << 20)

/* A split's list; it is data/dataset.h's dbk_split_files, the listing of a streamed split. */
typedef struct dbk_split_files {
    int32_t         count;          /* images */
    int32_t         num_classes;
    char           *paths;          /* NUL-terminated full paths, back to back (owned) */
    size_t         *offsets;        /* (count): where image i's path starts in paths (owned) */
    int32_t        *labels;         /* (count), in [0, num_classes) (owned) */
    int32_t        *class_counts;   /* (num_classes): images per class (owned) */
    dbk_class_name *class_names;    /* (num_classes): the class folder names (owned) */
    dbk_source_root *root;          /* where the files are read from: disk or a pack (owned) */
} dbk_imagefolder_list;

/* Parses classes.txt text (n bytes; where names it in errors): the first word of each
 * non-empty line is a class folder. DBK_ERR_FORMAT for a name too long, a '/' in a name, a
 * duplicate, or no classes. *names (num_classes, caller frees with dbk_free) on success. */
dbk_status dbk_imagefolder_parse_classes(const char *text, size_t n, const char *where, dbk_class_name **names,
                                         int32_t *count);

/* Lists a split (train/ or val/) of the dataset folder dir. Errors name the folder or file. */
dbk_status dbk_imagefolder_scan(const char *dir, dbk_dataset_split split, dbk_imagefolder_list *out);
/* The same, allocated: the dataset interface's list (dataset.h dbk_dataset_list). */
dbk_status dbk_imagefolder_list_split(const char *dir, dbk_dataset_split split, dbk_split_files **out);
void       dbk_imagefolder_list_deinit(dbk_imagefolder_list *list);     /* accepts a zeroed list */

/* The identity of a scanned split (data/dataset.h dbk_dataset_fingerprint, for image folders):
 * FNV-1a-64 over the class names and, per image, its label and the last two components of its
 * path (class folder and file name), continuing from h. Independent of where the folder lies. */
uint64_t dbk_imagefolder_fingerprint(uint64_t h, const dbk_imagefolder_list *list);

static inline const char *dbk_imagefolder_path(const dbk_imagefolder_list *l, int32_t i) {
    return l->paths + l->offsets[i];
}

/* Reads and decodes image i of the list (image.h's checks and errors; thread-safe). */
dbk_status dbk_imagefolder_load_image(const dbk_imagefolder_list *l, int32_t i, dbk_rgb_image *out);

/* The first `limit` images of a list when it is cut to a subset: limit images spread evenly
 * over the sorted list (index i * count / limit), so that every class keeps its share.
 * Fills idx (limit entries). */
void dbk_imagefolder_subset(int32_t count, int32_t limit, int32_t *idx);

/* The dataset interface (dataset.h). probe scans both splits. load decodes a split into host
 * memory at info->shape with the evaluation view (short side resized to 8/7 of the crop, then
 * the central crop: torchvision's Resize(256) + CenterCrop(224) at 224), on as many threads as
 * the host has cores; it needs at most 256 classes (dbk_dataset labels are u8). */
dbk_status dbk_imagefolder_probe(const char *dir, dbk_dataset_info *out);
dbk_status dbk_imagefolder_load_split(const dbk_dataset_info *info, dbk_dataset_split split, int32_t limit,
                                      dbk_dataset *out);

/* The short side an evaluation crop of `crop` pixels is taken from: round(crop * 8 / 7). */
int dbk_imagefolder_eval_resize(int crop);

#endif
