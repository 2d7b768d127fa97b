/*
 * cifar10.c — CIFAR-10 binary loader, the "cifar10" kind of data/dataset.h (see cifar10.h).
 *
 * Validation happens before any large allocation: every file of the split is stat'ed and its
 * size checked first (even when only a prefix is loaded, so a damaged batch 5 is reported on
 * the first quick run rather than after an hour of training on a subset), then the class
 * names are read, then records are read one batch file at a time with a single read each
 * and scattered into the label and image arrays. The parsers take buffers (fuzz/ feeds them
 * arbitrary bytes); every file is read through data/source.h (a folder, or a dataset pack
 * standing in for one), which refuses devices and FIFOs.
 */
#define _POSIX_C_SOURCE 200809L
#include "data/cifar10.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "data/source.h"

#define BATCH_BYTES ((long long)DBK_CIFAR10_BATCH_RECORDS * DBK_CIFAR10_RECORD_BYTES)   /* 30,730,000 */
#define META_FILE   "batches.meta.txt"
#define META_MAX_BYTES 4096   /* the official file has 61 bytes */
#define DIR_CONTENTS DBK_CIFAR10_DIR_CONTENTS

static const char *const train_files[] = {
    "data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin",
};
static const char *const test_files[] = {"test_batch.bin"};

/* dir + "/" + name into out, or DBK_ERR_INVALID_ARG when it does not fit. */
static dbk_status join_path(char *out, size_t cap, const char *dir, const char *name) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "path too long: %s/%s", dir, name);
    return DBK_OK;
}

/* The error for a file of the data directory that cannot be stat'ed or opened. */
static dbk_status missing_file(const char *path, const char *dir, int err) {
    if (err == ENOENT)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "%s not found: the CIFAR-10 directory %s should hold %s",
                             path, dir, DIR_CONTENTS);
    return dbk_set_error(DBK_ERR_IO, "cannot open %s: %s", path, strerror(err));
}

/* A batch file exists and is exactly 10,000 records long. */
static dbk_status check_batch_file(const char *dir, const char *name) {
    char path[4096];
    DBK_TRY(join_path(path, sizeof path, dir, name));
    uint64_t bytes;
    dbk_source_kind kind = dbk_source_stat(path, &bytes);
    if (kind == DBK_SOURCE_NONE) return missing_file(path, dir, ENOENT);
    if (kind != DBK_SOURCE_FILE) return dbk_set_error(DBK_ERR_FORMAT, "%s: not a regular file", path);
    long long size = (long long)bytes;
    if (size != BATCH_BYTES) {
        const char *hint = size < BATCH_BYTES ? "truncated?" : "too long; not a CIFAR-10 batch file?";
        return dbk_set_error(DBK_ERR_FORMAT, "%s: %lld bytes, expected %lld (%d records of %d bytes); %s", path, size,
                             BATCH_BYTES, DBK_CIFAR10_BATCH_RECORDS, DBK_CIFAR10_RECORD_BYTES, hint);
    }
    return DBK_OK;
}

dbk_status dbk_cifar10_parse_meta(const char *text, size_t n, const char *where,
                                  dbk_class_name names[DBK_CIFAR10_CLASSES]) {
    int count = 0, line_no = 0;
    const char *line = text;
    while (line < text + n) {
        const char *end = memchr(line, '\n', (size_t)(text + n - line));
        if (!end) end = text + n;
        line_no++;
        const char *a = line, *b = end;
        while (a < b && (*a == ' ' || *a == '\t' || *a == '\r')) a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r')) b--;
        size_t len = (size_t)(b - a);
        if (len > 0) {
            if (len >= sizeof names[0])
                return dbk_set_error(DBK_ERR_FORMAT, "%s: line %d: class name of %zu bytes, at most %zu allowed",
                                     where, line_no, len, sizeof names[0] - 1);
            if (count < DBK_CIFAR10_CLASSES) {
                memcpy(names[count], a, len);
                names[count][len] = '\0';
            }
            count++;
        }
        line = end + 1;
    }
    if (count != DBK_CIFAR10_CLASSES)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: %d class names, expected %d (one per line)", where, count,
                             DBK_CIFAR10_CLASSES);
    return DBK_OK;
}

dbk_status dbk_cifar10_parse_records(const unsigned char *raw, size_t nbytes, const char *where, uint8_t *labels,
                                     uint8_t *images) {
    if (nbytes % DBK_CIFAR10_RECORD_BYTES)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: %zu bytes is not a whole number of %d-byte records", where, nbytes,
                             DBK_CIFAR10_RECORD_BYTES);
    size_t count = nbytes / DBK_CIFAR10_RECORD_BYTES;
    for (size_t r = 0; r < count; r++) {
        const unsigned char *rec = raw + r * DBK_CIFAR10_RECORD_BYTES;
        if (rec[0] >= DBK_CIFAR10_CLASSES)
            return dbk_set_error(DBK_ERR_FORMAT, "%s: record %zu has label %u, expected 0..%d", where, r,
                                 (unsigned)rec[0], DBK_CIFAR10_CLASSES - 1);
        labels[r] = rec[0];
        memcpy(images + r * DBK_CIFAR10_IMAGE_BYTES, rec + 1, DBK_CIFAR10_IMAGE_BYTES);
    }
    return DBK_OK;
}

/* Reads batches.meta.txt (a regular file of at most META_MAX_BYTES). */
static dbk_status read_meta(const char *dir, dbk_class_name names[DBK_CIFAR10_CLASSES]) {
    char path[4096];
    DBK_TRY(join_path(path, sizeof path, dir, META_FILE));
    void *data = NULL;
    size_t n = 0;
    dbk_status st = dbk_source_read(path, "CIFAR-10 class-name file", META_MAX_BYTES, &data, &n);
    if (st == DBK_ERR_NOT_FOUND) return missing_file(path, dir, ENOENT);
    if (st != DBK_OK) return st;
    st = dbk_cifar10_parse_meta(data, n, path, names);
    dbk_free(data);
    return st;
}

/* Reads the first nbytes of a batch file (already size-checked). */
static dbk_status read_prefix(const char *dir, const char *name, unsigned char *buf, size_t nbytes) {
    char path[4096];
    DBK_TRY(join_path(path, sizeof path, dir, name));
    dbk_status st = dbk_source_read_prefix(path, "CIFAR-10 batch", (size_t)BATCH_BYTES, buf, nbytes);
    if (st == DBK_ERR_NOT_FOUND) return missing_file(path, dir, ENOENT);
    return st;
}

/* ---------------------------------------------------------------------------------- */

dbk_status dbk_cifar10_load(const char *dir, dbk_cifar10_split split, int32_t limit, dbk_dataset *out) {
    memset(out, 0, sizeof *out);
    const char *const *files;
    int nfiles;
    switch (split) {
    case DBK_CIFAR10_TRAIN: files = train_files; nfiles = 5; break;
    case DBK_CIFAR10_TEST:  files = test_files;  nfiles = 1; break;
    default: return dbk_set_error(DBK_ERR_INVALID_ARG, "CIFAR-10 has no split %d (an internal error)", (int)split);
    }

    for (int f = 0; f < nfiles; f++) DBK_TRY(check_batch_file(dir, files[f]));
    dbk_class_name names[DBK_CIFAR10_CLASSES];
    DBK_TRY(read_meta(dir, names));

    int32_t total = nfiles * DBK_CIFAR10_BATCH_RECORDS;
    int32_t count = limit > 0 && limit < total ? limit : total;
    int32_t per_read = count < DBK_CIFAR10_BATCH_RECORDS ? count : DBK_CIFAR10_BATCH_RECORDS;
    uint8_t *images = dbk_malloc((size_t)count * DBK_CIFAR10_IMAGE_BYTES);
    uint8_t *labels = dbk_malloc((size_t)count);
    unsigned char *raw = dbk_malloc((size_t)per_read * DBK_CIFAR10_RECORD_BYTES);
    dbk_class_name *class_names = dbk_malloc(sizeof names);
    dbk_status st = DBK_ERR_OUT_OF_HOST_MEMORY;
    if (!images || !labels || !raw || !class_names) goto fail;

    int32_t loaded = 0;
    for (int f = 0; loaded < count; f++) {
        int32_t n = count - loaded < DBK_CIFAR10_BATCH_RECORDS ? count - loaded : DBK_CIFAR10_BATCH_RECORDS;
        st = read_prefix(dir, files[f], raw, (size_t)n * DBK_CIFAR10_RECORD_BYTES);
        if (st != DBK_OK) goto fail;
        char where[4200];
        snprintf(where, sizeof where, "%s/%s", dir, files[f]);
        st = dbk_cifar10_parse_records(raw, (size_t)n * DBK_CIFAR10_RECORD_BYTES, where, labels + loaded,
                                       images + (size_t)loaded * DBK_CIFAR10_IMAGE_BYTES);
        if (st != DBK_OK) goto fail;
        loaded += n;
    }
    dbk_free(raw);

    out->count = count;
    out->channels = 3;
    out->height = 32;
    out->width = 32;
    out->num_classes = DBK_CIFAR10_CLASSES;
    out->images = images;
    out->labels = labels;
    memcpy(class_names, names, sizeof names);
    out->class_names = class_names;
    return DBK_OK;

fail:
    dbk_free(images);
    dbk_free(labels);
    dbk_free(raw);
    dbk_free(class_names);
    return st;
}

/* dbk_cifar10_check_dir, keeping the class names it read. */
static dbk_status check_dir(const char *dir, dbk_class_name names[DBK_CIFAR10_CLASSES]) {
    uint64_t size;
    if (dbk_source_stat(dir, &size) != DBK_SOURCE_DIR)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "%s is not a directory; it should hold %s", dir, DIR_CONTENTS);
    for (int f = 0; f < 5; f++) DBK_TRY(check_batch_file(dir, train_files[f]));
    DBK_TRY(check_batch_file(dir, test_files[0]));
    return read_meta(dir, names);
}

dbk_status dbk_cifar10_check_dir(const char *dir) {
    dbk_class_name names[DBK_CIFAR10_CLASSES];
    return check_dir(dir, names);
}

/* ---------------------------------------------------------------------------------- */
/* the dataset interface                                                              */

dbk_status dbk_cifar10_probe(const char *dir, dbk_dataset_info *out) {
    dbk_class_name names[DBK_CIFAR10_CLASSES];
    DBK_TRY(check_dir(dir, names));
    out->class_names = dbk_malloc(sizeof names);
    if (!out->class_names) return DBK_ERR_OUT_OF_HOST_MEMORY;
    memcpy(out->class_names, names, sizeof names);
    out->shape = (dbk_image_shape){3, 32, 32};
    out->num_classes = DBK_CIFAR10_CLASSES;
    out->split_count[DBK_DATASET_SPLIT_TRAIN] = 5 * DBK_CIFAR10_BATCH_RECORDS;
    out->split_count[DBK_DATASET_SPLIT_TEST] = DBK_CIFAR10_BATCH_RECORDS;
    return DBK_OK;
}

dbk_status dbk_cifar10_load_split(const dbk_dataset_info *info, dbk_dataset_split split, int32_t limit,
                                  dbk_dataset *out) {
    return dbk_cifar10_load(info->dir, split == DBK_DATASET_SPLIT_TRAIN ? DBK_CIFAR10_TRAIN : DBK_CIFAR10_TEST,
                            limit, out);
}
