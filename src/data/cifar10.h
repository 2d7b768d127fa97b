/*
 * cifar10.h — loader for the official CIFAR-10 *binary* version.
 *
 * On-disk layout (https://www.cs.toronto.edu/~kriz/cifar.html, "Binary version"): a
 * directory, conventionally cifar-10-batches-bin/, holding
 *   data_batch_1.bin .. data_batch_5.bin   training set, 10,000 records each
 *   test_batch.bin                         test set, 10,000 records
 *   batches.meta.txt                       the 10 class names, one per line, label order
 * Each record is 3,073 bytes: one label byte (0..9), then the 32x32 image as three planes,
 * 1,024 R, 1,024 G, 1,024 B bytes, each row-major. A batch file is exactly 30,730,000 bytes.
 *
 * In memory the images stay u8 and planar, (count, 3, 32, 32), i.e. CHW per image, which is
 * what DBK_OP_AUGMENT consumes (the dataset is uploaded to the device once, as u8). Records
 * keep file order: the training split is batch 1's records, then batch 2's, and so on.
 *
 * Everything above src/data/ reaches this reader through the dataset interface
 * (data/dataset.h, kind "cifar10"); tests call it directly.
 *
 * Ownership: dbk_cifar10_load fills a caller-allocated dbk_dataset whose arrays it owns;
 * release them with dbk_dataset_deinit.
 */
#ifndef DBK_CIFAR10_H
#define DBK_CIFAR10_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "data/dataset.h"

#define DBK_CIFAR10_CLASSES      10
#define DBK_CIFAR10_IMAGE_BYTES  3072                           /* 3 * 32 * 32 */
#define DBK_CIFAR10_RECORD_BYTES (1 + DBK_CIFAR10_IMAGE_BYTES)  /* label + image */
#define DBK_CIFAR10_BATCH_RECORDS 10000
#define DBK_CIFAR10_DIR_CONTENTS "data_batch_1..5.bin, test_batch.bin, batches.meta.txt"   /* for messages */

typedef enum dbk_cifar10_split {
    DBK_CIFAR10_TRAIN,    /* data_batch_1..5.bin, 50,000 images */
    DBK_CIFAR10_TEST,     /* test_batch.bin, 10,000 images */
} dbk_cifar10_split;

/* Loads a split from dir (the directory holding the .bin files). limit <= 0 loads the whole
 * split; otherwise the first min(limit, split size) records (train: batch 1 first). The
 * sizes of all files of the split are checked even with a limit, and every loaded label must
 * be 0..9. Errors: DBK_ERR_NOT_FOUND (a file is missing; names the path and what dir should
 * hold), DBK_ERR_FORMAT (wrong size, bad label, short batches.meta.txt; names the file),
 * DBK_ERR_IO, DBK_ERR_OUT_OF_HOST_MEMORY. On failure *out is zeroed and nothing is held. */
dbk_status dbk_cifar10_load(const char *dir, dbk_cifar10_split split, int32_t limit, dbk_dataset *out);

/* Quick check for the CLI before a long run: all 7 files exist, each .bin has the exact
 * size, and batches.meta.txt has 10 names. Same errors as dbk_cifar10_load. */
dbk_status dbk_cifar10_check_dir(const char *dir);

/* The dataset interface's probe and load for kind "cifar10" (data/dataset.h): the check
 * above plus shape 3x32x32, 10 classes, 50,000/10,000 images and the class names. */
dbk_status dbk_cifar10_probe(const char *dir, dbk_dataset_info *out);
dbk_status dbk_cifar10_load_split(const dbk_dataset_info *info, dbk_dataset_split split, int32_t limit,
                                  dbk_dataset *out);

/* Parsers of the two file kinds, on buffers (the loaders above read the files, fuzz/ feeds
 * them arbitrary bytes); `where` names the source in errors (DBK_ERR_FORMAT). */

/* batches.meta.txt: exactly 10 non-empty lines (surrounding blanks and a '\r' are trimmed). */
dbk_status dbk_cifar10_parse_meta(const char *text, size_t n, const char *where,
                                  dbk_class_name names[DBK_CIFAR10_CLASSES]);

/* nbytes of whole records (label byte 0..9, then 3072 image bytes): labels into labels[r],
 * images into images + r * DBK_CIFAR10_IMAGE_BYTES. */
dbk_status dbk_cifar10_parse_records(const unsigned char *raw, size_t nbytes, const char *where, uint8_t *labels,
                                     uint8_t *images);

#endif
