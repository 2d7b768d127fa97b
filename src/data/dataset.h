/*
 * dataset.h — the one interface through which everything above src/data/ sees a dataset
 * (DESIGN.md decision 0: nothing above data/ assumes 3x32x32, 10 classes or 50,000/10,000).
 *
 * A dataset *kind* is declared once, in the table of dataset.c: its name (the recipe's
 * `dataset` field), the image shape it delivers, how its folder is found under the data root,
 * how to check and probe that folder, how to load a split into host memory, and how the images
 * reach the device:
 *   resident  the whole split is uploaded once as u8 and DBK_OP_AUGMENT crops, flips and
 *             normalises each batch on the device (CIFAR-10);
 *   streamed  host threads decode and augment every step's batch (ImageNet-style image
 *             folders, data/imagefolder.h and data/loader.h); the device holds one batch
 *             at a time. Such a kind may still have a load, which decodes a whole split into
 *             host memory with its evaluation view (`daybreak infer` holds the validation
 *             split that way; `train` and `eval` stream it through the decode threads).
 * Counts and class names come from an *opened* dataset (dbk_dataset_info), not from the kind:
 * an image folder knows them only after scanning its directory.
 *
 * Layout in memory: a loaded split (dbk_dataset) holds images as u8, planar, (count, C, H, W),
 * i.e. CHW per image, which is what DBK_OP_AUGMENT consumes, and labels as u8 (count), each in
 * [0, num_classes).
 *
 * Ownership: dbk_dataset_open/_open_dir fill a caller-allocated dbk_dataset_info, released
 * with dbk_dataset_info_deinit; dbk_dataset_load fills a caller-allocated dbk_dataset, released
 * with dbk_dataset_deinit. Kinds are static and live for the whole program.
 */
#ifndef DBK_DATASET_H
#define DBK_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define DBK_DATASET_CLASS_NAME_BYTES 32     /* longest class name + 1 */
#define DBK_DATASET_PATH_BYTES       4096

typedef enum dbk_dataset_split {
    DBK_DATASET_SPLIT_TRAIN,
    DBK_DATASET_SPLIT_TEST,     /* the held-out split the target accuracy is measured on */
    DBK_DATASET_SPLIT_COUNT,
} dbk_dataset_split;

/* How a split reaches the device (see the header comment). */
typedef enum dbk_dataset_residency {
    DBK_DATASET_RESIDENT,
    DBK_DATASET_STREAMED,
} dbk_dataset_residency;

/* The shape of one image as the model receives it. */
typedef struct dbk_image_shape {
    int32_t channels, height, width;    /* C, H, W */
} dbk_image_shape;

typedef char dbk_class_name[DBK_DATASET_CLASS_NAME_BYTES];

/* A split loaded into host memory. */
typedef struct dbk_dataset {
    int32_t         count;              /* images */
    int32_t         channels, height, width;
    int32_t         num_classes;
    uint8_t        *images;             /* (count, C, H, W) u8 planar, owned */
    uint8_t        *labels;             /* (count), each in [0, num_classes), owned */
    dbk_class_name *class_names;        /* (num_classes), label order, owned */
} dbk_dataset;

typedef struct dbk_dataset_kind dbk_dataset_kind;

/* A streamed split's listing: its files and labels, nothing decoded yet; what the decode
 * threads of data/loader.h read. Image folders are the streamed layout (data/imagefolder.h
 * defines it); above data/ it is opaque. */
typedef struct dbk_split_files dbk_split_files;

/* An opened dataset: its folder and what the folder holds. */
typedef struct dbk_dataset_info {
    const dbk_dataset_kind *kind;
    char                    dir[DBK_DATASET_PATH_BYTES];   /* the dataset's own folder */
    dbk_image_shape         shape;
    int32_t                 num_classes;
    int32_t                 split_count[DBK_DATASET_SPLIT_COUNT];   /* whole splits, in images */
    dbk_class_name         *class_names;                            /* (num_classes), owned */
} dbk_dataset_info;

/* One table entry. A new kind is a reader file in data/ plus one entry in dataset.c. */
struct dbk_dataset_kind {
    const char           *name;          /* "cifar10": what recipes name */
    const char           *description;
    const char           *folder;        /* its folder under the data root: "cifar-10-batches-bin" */
    const char           *marker;        /* a file that identifies that folder itself: "data_batch_1.bin" */
    const char           *contents;      /* what the folder should hold, for error messages */
    dbk_image_shape       shape;         /* images as delivered (after decoding/resizing, for folders) */
    dbk_dataset_residency residency;
    /* Checks dir quickly (files present, sizes, class list) and fills out's shape,
     * num_classes, split_count and class_names. Same errors as load. */
    dbk_status (*probe)(const char *dir, dbk_dataset_info *out);
    /* Loads the first min(limit, split size) images of a split (limit <= 0: all) into host
     * memory (for image folders, limit images spread over the classes); NULL when a kind
     * cannot be held in memory. */
    dbk_status (*load)(const dbk_dataset_info *info, dbk_dataset_split split, int32_t limit, dbk_dataset *out);
    /* Lists a split of the folder dir for the decode threads (*out: the caller destroys it);
     * NULL for a resident kind. */
    dbk_status (*list)(const char *dir, dbk_dataset_split split, dbk_split_files **out);
};

/* The table of kinds. dbk_dataset_kind_find returns DBK_ERR_NOT_FOUND listing the known names. */
int                     dbk_dataset_kind_count(void);
const dbk_dataset_kind *dbk_dataset_kind_at(int i);
dbk_status              dbk_dataset_kind_find(const char *name, const dbk_dataset_kind **out);

/* Resolves the kind's folder into out (cap bytes). The source is data_arg (the --data flag)
 * if non-empty, else $DAYBREAK_DATA. It may name either a root holding kind->folder or that
 * folder itself (recognised by kind->marker). DBK_ERR_NOT_FOUND with a hint when neither is
 * set, or when the path does not exist or holds no such dataset; DBK_ERR_INVALID_ARG when the
 * result does not fit in cap. */
dbk_status dbk_dataset_resolve(const dbk_dataset_kind *kind, const char *data_arg, char *out, size_t cap);

/* The identity of a loaded split, for a resumed run to check that it trains on the data it
 * started with: FNV-1a-64 (core/fileio.h) over the image shape, class names, labels and every
 * pixel, continuing from h (start with 0). Independent of where the folder lies. */
uint64_t dbk_dataset_fingerprint(uint64_t h, const dbk_dataset *d);

/* Whether dir is a dataset's own folder in any kind's layout: CIFAR-10's batches
 * (data_batch_1.bin or test_batch.bin), or an image folder's train/ and val/ folders. For the
 * output guard (core/output.h): nothing is ever written inside one. Reads nothing but names. */
bool dbk_dataset_is_folder(const char *dir);

/* Resolves (as dbk_dataset_resolve) and probes the dataset: the quick check a command runs
 * before a long job, which also gives the real shape, classes and split sizes. */
dbk_status dbk_dataset_open(const dbk_dataset_kind *kind, const char *data_arg, dbk_dataset_info *out);
/* The same for a folder already resolved (the dataset's own folder). */
dbk_status dbk_dataset_open_dir(const dbk_dataset_kind *kind, const char *dir, dbk_dataset_info *out);
/* Frees the class names and zeroes *info. Accepts a zeroed info. */
void       dbk_dataset_info_deinit(dbk_dataset_info *info);

/* Streamed kinds decode to any size: sets info's shape to size x size (size > 0; a recipe's
 * image_size). Resident kinds keep their fixed shape. Returns whether the shape is now size. */
bool dbk_dataset_set_image_size(dbk_dataset_info *info, int size);

/* "training" or "test", for messages. */
const char *dbk_dataset_split_name(dbk_dataset_split split);

/* Loads a split of an opened dataset into host memory (first min(limit, split size) images,
 * limit <= 0: all). DBK_ERR_UNSUPPORTED for a kind without load; otherwise the kind's errors. On
 * failure *out is zeroed and nothing is held. */
dbk_status dbk_dataset_load(const dbk_dataset_info *info, dbk_dataset_split split, int32_t limit, dbk_dataset *out);

/* Lists a split of an opened streamed dataset (an image folder: scans train/ or val/) for the
 * decode threads (data/loader.h); *out is destroyed with dbk_split_files_destroy. The kind's
 * errors; DBK_ERR_UNSUPPORTED for a resident kind. */
dbk_status dbk_dataset_list(const dbk_dataset_info *info, dbk_dataset_split split, dbk_split_files **out);
/* The images of a listed split. */
int32_t    dbk_split_files_count(const dbk_split_files *files);
/* The identity of a listed split, as dbk_dataset_fingerprint is of a loaded one: FNV-1a-64
 * over its class names, labels and file names (data/imagefolder.h), continuing from h. */
uint64_t   dbk_split_files_fingerprint(uint64_t h, const dbk_split_files *files);
void       dbk_split_files_destroy(dbk_split_files *files);     /* accepts NULL */

/* Bytes of one image, C * H * W. */
size_t dbk_image_shape_bytes(const dbk_image_shape *shape);

/* Frees the arrays and zeroes *d. Accepts a zeroed dataset. */
void dbk_dataset_deinit(dbk_dataset *d);

#endif
