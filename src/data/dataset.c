/*
 * dataset.c — the table of dataset kinds and what every kind shares: finding its folder under
 * the data root, opening (probing) it, and loading a split (see dataset.h).
 *
 * A new kind is its reader (a file in data/ with a probe and, for resident kinds, a load) and
 * one entry in `kinds` below.
 */
#define _POSIX_C_SOURCE 200809L
#include "data/dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/log.h"
#include "data/cifar10.h"
#include "data/source.h"
#include "data/imagefolder.h"

static const dbk_dataset_kind kinds[] = {
    {
        .name = "cifar10",
        .description = "CIFAR-10, official binary version: 32x32 RGB, 10 classes, 50,000 training and 10,000 test images",
        .folder = "cifar-10-batches-bin",
        .marker = "data_batch_1.bin",
        .contents = DBK_CIFAR10_DIR_CONTENTS,
        .shape = {3, 32, 32},
        .residency = DBK_DATASET_RESIDENT,
        .probe = dbk_cifar10_probe,
        .load = dbk_cifar10_load_split,
    },
    /* Image folders (data/imagefolder.h): streamed through data/loader.h's decode threads.
     * The shape is the default crop; a recipe's image_size replaces it. */
    {
        .name = "imagenet",
        .description = "ILSVRC2012 (ImageNet) in its folder layout: JPEG photographs of 1,000 classes, 1.28 M training "
                       "and 50,000 validation images, decoded and cropped to 224x224 on host threads",
        .folder = "imagenet",
        .marker = "train",
        .contents = DBK_IMAGEFOLDER_DIR_CONTENTS,
        .shape = {3, 224, 224},
        .residency = DBK_DATASET_STREAMED,
        .probe = dbk_imagefolder_probe,
        .load = dbk_imagefolder_load_split,
        .list = dbk_imagefolder_list_split,
    },
    {
        .name = "imagenette",
        .description = "Imagenette 2 subset (imagenette2-224-mini): real ImageNet photographs of 10 classes, "
                       "224x224 JPEG, 3,000 training and 1,000 validation images, in the ImageNet folder layout",
        .folder = "imagenette2-224-mini",
        .marker = "train",
        .contents = DBK_IMAGEFOLDER_DIR_CONTENTS,
        .shape = {3, 224, 224},
        .residency = DBK_DATASET_STREAMED,
        .probe = dbk_imagefolder_probe,
        .load = dbk_imagefolder_load_split,
        .list = dbk_imagefolder_list_split,
    },
};

int dbk_dataset_kind_count(void) { return (int)(sizeof kinds / sizeof kinds[0]); }
const dbk_dataset_kind *dbk_dataset_kind_at(int i) { return &kinds[i]; }

uint64_t dbk_dataset_fingerprint(uint64_t h, const dbk_dataset *d) {
    const int32_t dims[5] = {d->count, d->channels, d->height, d->width, d->num_classes};
    h = dbk_fnv1a64_update(h, dims, sizeof dims);
    for (int32_t c = 0; d->class_names && c < d->num_classes; c++)
        h = dbk_fnv1a64_update(h, d->class_names[c], strlen(d->class_names[c]) + 1);
    h = dbk_fnv1a64_update(h, d->labels, (size_t)d->count);
    return dbk_fnv1a64_update(h, d->images, (size_t)d->count * (size_t)d->channels * (size_t)d->height * (size_t)d->width);
}

/* Whether dir/name exists as a folder (want_dir) or as anything else. */
static bool has_entry(const char *dir, const char *name, bool want_dir) {
    char path[4400];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path || stat(path, &st) != 0) return false;
    return want_dir == (bool)S_ISDIR(st.st_mode);
}

bool dbk_dataset_is_folder(const char *dir) {
    return has_entry(dir, "data_batch_1.bin", false) || has_entry(dir, "test_batch.bin", false) ||
           (has_entry(dir, "train", true) && has_entry(dir, "val", true));
}

dbk_status dbk_dataset_kind_find(const char *name, const dbk_dataset_kind **out) {
    for (int i = 0; i < dbk_dataset_kind_count(); i++) {
        if (!strcmp(kinds[i].name, name)) {
            *out = &kinds[i];
            return DBK_OK;
        }
    }
    char known[256] = "";
    for (int i = 0; i < dbk_dataset_kind_count(); i++) {
        strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
        strncat(known, kinds[i].name, sizeof known - strlen(known) - 1);
    }
    return dbk_set_error(DBK_ERR_NOT_FOUND, "unknown dataset '%s' (known: %s)", name, known);
}

const char *dbk_dataset_split_name(dbk_dataset_split split) {
    return split == DBK_DATASET_SPLIT_TRAIN ? "training" : "test";
}

size_t dbk_image_shape_bytes(const dbk_image_shape *shape) {
    return (size_t)shape->channels * (size_t)shape->height * (size_t)shape->width;
}

/* ---------------------------------------------------------------------------------- */
/* finding the folder                                                                 */

/* Folders and files on disk or inside a dataset pack (data/source.h). */
static int is_dir(const char *path) {
    uint64_t size;
    return dbk_source_stat(path, &size) == DBK_SOURCE_DIR;
}

/* errno of stat(path), 0 when it succeeds. */
static int stat_error(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? 0 : errno;
}

static int exists(const char *path) {
    uint64_t size;
    return dbk_source_stat(path, &size) != DBK_SOURCE_NONE;
}

/* dir + "/" + name into out, or DBK_ERR_INVALID_ARG when it does not fit. */
static dbk_status join_path(char *out, size_t cap, const char *dir, const char *name) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "path too long: %s/%s", dir, name);
    return DBK_OK;
}

dbk_status dbk_dataset_resolve(const dbk_dataset_kind *kind, const char *data_arg, char *out, size_t cap) {
    /* DAYBREAK_DATA is read here rather than in profile.c: it is a data location, not a
     * tuning knob, and the CLI's --data flag overrides it in the same place. */
    const char *src = data_arg, *from = "--data";
    if (!src || !*src) {
        src = getenv("DAYBREAK_DATA");
        from = "DAYBREAK_DATA";
    }
    if (!src || !*src)
        return dbk_set_error(DBK_ERR_NOT_FOUND, "no data: set DAYBREAK_DATA (or --data) to a folder holding %s/ (%s)",
                             kind->folder, kind->contents);

    char root[DBK_DATASET_PATH_BYTES], inner[DBK_DATASET_PATH_BYTES], probe[DBK_DATASET_PATH_BYTES];
    size_t len = strlen(src);
    if (len >= sizeof root) return dbk_set_error(DBK_ERR_INVALID_ARG, "%s path too long: %s", from, src);
    memcpy(root, src, len + 1);
    while (len > 1 && root[len - 1] == '/') root[--len] = '\0';

    const char *found = NULL;
    DBK_TRY(dbk_source_check(root));
    DBK_TRY(join_path(inner, sizeof inner, root, kind->folder));
    DBK_TRY(join_path(probe, sizeof probe, root, kind->marker));
    if (is_dir(inner))
        found = inner;
    else if (exists(probe))
        found = root;
    else if (!exists(root) && stat_error(root) != ENOENT) /* a symlink loop, a forbidden folder: not "missing" */
        return dbk_set_error(DBK_ERR_IO, "%s (from %s): cannot use it: %s", root, from, strerror(stat_error(root)));
    else if (!exists(root))
        return dbk_set_error(DBK_ERR_NOT_FOUND, "%s (from %s) does not exist; it should be a folder holding %s/ (%s)",
                             root, from, kind->folder, kind->contents);
    else
        return dbk_set_error(DBK_ERR_NOT_FOUND, "%s (from %s) holds neither %s/ nor %s; point it at a folder holding "
                             "%s/ (%s)", root, from, kind->folder, kind->marker, kind->folder, kind->contents);

    size_t flen = strlen(found);
    if (flen >= cap) return dbk_set_error(DBK_ERR_INVALID_ARG, "data path too long (%zu bytes): %s", flen, found);
    memcpy(out, found, flen + 1);
    return DBK_OK;
}

/* ---------------------------------------------------------------------------------- */
/* opening and loading                                                                */

dbk_status dbk_dataset_open_dir(const dbk_dataset_kind *kind, const char *dir, dbk_dataset_info *out) {
    memset(out, 0, sizeof *out);
    size_t len = strlen(dir);
    if (len >= sizeof out->dir) return dbk_set_error(DBK_ERR_INVALID_ARG, "data path too long (%zu bytes): %s", len, dir);
    memcpy(out->dir, dir, len + 1);
    out->kind = kind;
    dbk_status st = kind->probe(dir, out);
    if (st != DBK_OK) {
        dbk_dataset_info_deinit(out);
        return st;
    }
    dbk_log(DBK_LOG_LEVEL_DEBUG, "dataset %s in %s: %dx%dx%d, %d classes, %d training and %d test images", kind->name,
            dir, out->shape.channels, out->shape.height, out->shape.width, out->num_classes,
            out->split_count[DBK_DATASET_SPLIT_TRAIN], out->split_count[DBK_DATASET_SPLIT_TEST]);
    return DBK_OK;
}

dbk_status dbk_dataset_open(const dbk_dataset_kind *kind, const char *data_arg, dbk_dataset_info *out) {
    memset(out, 0, sizeof *out);
    char dir[DBK_DATASET_PATH_BYTES];
    DBK_TRY(dbk_dataset_resolve(kind, data_arg, dir, sizeof dir));
    return dbk_dataset_open_dir(kind, dir, out);
}

bool dbk_dataset_set_image_size(dbk_dataset_info *info, int size) {
    if (info->kind->residency == DBK_DATASET_STREAMED) info->shape.height = info->shape.width = size;
    return info->shape.height == size && info->shape.width == size;
}

void dbk_dataset_info_deinit(dbk_dataset_info *info) {
    if (!info) return;
    dbk_free(info->class_names);
    memset(info, 0, sizeof *info);
}

dbk_status dbk_dataset_load(const dbk_dataset_info *info, dbk_dataset_split split, int32_t limit, dbk_dataset *out) {
    memset(out, 0, sizeof *out);
    const dbk_dataset_kind *kind = info->kind;
    if (!kind->load)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "dataset '%s' cannot be loaded into memory whole; it is streamed "
                             "(decoded by host threads every step)", kind->name);
    DBK_TRY(kind->load(info, split, limit, out));
    /* The session sizes its buffers from the probed shape, so a reader must deliver it. */
    DBK_ASSERT(out->channels == info->shape.channels && out->height == info->shape.height &&
               out->width == info->shape.width && out->num_classes == info->num_classes);
    return DBK_OK;
}

dbk_status dbk_dataset_list(const dbk_dataset_info *info, dbk_dataset_split split, dbk_split_files **out) {
    *out = NULL;
    const dbk_dataset_kind *kind = info->kind;
    if (!kind->list)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "dataset '%s' is held in memory, not streamed: it has no file list",
                             kind->name);
    return kind->list(info->dir, split, out);
}

void dbk_dataset_deinit(dbk_dataset *d) {
    if (!d) return;
    dbk_free(d->images);
    dbk_free(d->labels);
    dbk_free(d->class_names);
    memset(d, 0, sizeof *d);
}
