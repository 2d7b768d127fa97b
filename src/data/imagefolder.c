/*
 * imagefolder.c — scanning ImageNet-style folders and the dataset-interface entry points of
 * the image-folder kinds (see imagefolder.h). Decoding is data/image.c; the threads that
 * decode are data/loader.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "data/imagefolder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "data/image.h"
#include "data/loader.h"
#include "data/source.h"

#define CLASSES_FILE "classes.txt"

static const char *split_folder(dbk_dataset_split split) { return split == DBK_DATASET_SPLIT_TRAIN ? "train" : "val"; }

int dbk_imagefolder_eval_resize(int crop) { return (crop * 8 + 3) / 7; }

/* ---------------------------------------------------------------------------------- */
/* a growable list of names                                                           */

typedef struct name_list {
    char  **items;
    int32_t count, cap;
} name_list;

static void name_list_deinit(name_list *l) {
    for (int32_t i = 0; i < l->count; i++) dbk_free(l->items[i]);
    dbk_free(l->items);
    memset(l, 0, sizeof *l);
}

static dbk_status name_list_add(name_list *l, const char *name) {
    if (l->count == l->cap) {
        int32_t cap = l->cap ? l->cap * 2 : 64;
        char **items = dbk_malloc((size_t)cap * sizeof *items);
        if (!items) return DBK_ERR_OUT_OF_HOST_MEMORY;
        if (l->count) memcpy(items, l->items, (size_t)l->count * sizeof *items);
        dbk_free(l->items);
        l->items = items;
        l->cap = cap;
    }
    size_t len = strlen(name);
    char *copy = dbk_malloc(len + 1);
    if (!copy) return DBK_ERR_OUT_OF_HOST_MEMORY;
    memcpy(copy, name, len + 1);
    l->items[l->count++] = copy;
    return DBK_OK;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool is_dir(const dbk_source_root *root, const char *path) {
    uint64_t size;
    return dbk_source_root_stat(root, path, &size) == DBK_SOURCE_DIR;
}

typedef struct list_ctx {
    const char *dir;
    bool        want_dirs;
    name_list  *out;
} list_ctx;

/* Keeps folders, or image files, whose names do not start with '.'. */
static dbk_status keep_name(void *arg, const char *name) {
    list_ctx *c = arg;
    if (name[0] == '.' || (!c->want_dirs && !dbk_image_is_image_name(name))) return DBK_OK;
    if (!c->want_dirs && c->out->count >= DBK_IMAGEFOLDER_MAX_IMAGES)
        return dbk_set_error(DBK_ERR_FORMAT, "%s: more than %d images", c->dir, DBK_IMAGEFOLDER_MAX_IMAGES);
    return name_list_add(c->out, name);
}

/* The entries of dir (sorted), folders only when want_dirs, else image files only. */
static dbk_status list_dir(const dbk_source_root *root, const char *dir, bool want_dirs, name_list *out) {
    list_ctx ctx = {.dir = dir, .want_dirs = want_dirs, .out = out};
    dbk_status st = dbk_source_root_list(root, dir, want_dirs, keep_name, &ctx);
    if (st == DBK_OK && out->count > 1) qsort(out->items, (size_t)out->count, sizeof *out->items, compare_names);
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* classes                                                                            */

dbk_status dbk_imagefolder_parse_classes(const char *text, size_t n, const char *where, dbk_class_name **names,
                                         int32_t *count) {
    *names = NULL;
    *count = 0;
    int32_t lines = 0;
    for (size_t i = 0; i < n; i++) lines += text[i] == '\n';
    dbk_class_name *out = dbk_calloc((size_t)lines + 1, sizeof *out);
    if (!out) return DBK_ERR_OUT_OF_HOST_MEMORY;
    int32_t k = 0, line_no = 0;
    const char *line = text;
    while (line < text + n) {
        const char *end = memchr(line, '\n', (size_t)(text + n - line));
        if (!end) end = text + n;
        line_no++;
        const char *a = line;
        while (a < end && (*a == ' ' || *a == '\t' || *a == '\r')) a++;
        const char *b = a;
        while (b < end && *b != ' ' && *b != '\t' && *b != '\r') b++;
        size_t len = (size_t)(b - a);
        dbk_status st = DBK_OK;
        if (len >= sizeof out[0])
            st = dbk_set_error(DBK_ERR_FORMAT, "%s: line %d: class folder name of %zu bytes, at most %zu allowed",
                               where, line_no, len, sizeof out[0] - 1);
        else if (len && (memchr(a, '/', len) || memchr(a, '\0', len) || (len <= 2 && a[0] == '.' && a[len - 1] == '.')))
            st = dbk_set_error(DBK_ERR_FORMAT, "%s: line %d: '%.*s' is not a folder name", where, line_no, (int)len, a);
        for (int32_t j = 0; st == DBK_OK && len && j < k; j++)
            if (strlen(out[j]) == len && !memcmp(out[j], a, len))
                st = dbk_set_error(DBK_ERR_FORMAT, "%s: line %d: class '%.*s' listed twice", where, line_no, (int)len, a);
        if (st == DBK_OK && len && k >= DBK_IMAGEFOLDER_MAX_CLASSES)
            st = dbk_set_error(DBK_ERR_FORMAT, "%s: more than %d classes", where, DBK_IMAGEFOLDER_MAX_CLASSES);
        if (st != DBK_OK) {
            dbk_free(out);
            return st;
        }
        if (len) {
            memcpy(out[k], a, len);
            out[k][len] = '\0';
            k++;
        }
        line = end + 1;
    }
    if (k == 0) {
        dbk_free(out);
        return dbk_set_error(DBK_ERR_FORMAT, "%s: no classes (one class folder name per line)", where);
    }
    *names = out;
    *count = k;
    return DBK_OK;
}

/* The classes: classes.txt when present, else the sorted folders of train/. */
static dbk_status read_classes(const dbk_source_root *root, const char *dir, dbk_class_name **names, int32_t *count) {
    char path[DBK_DATASET_PATH_BYTES];
    snprintf(path, sizeof path, "%s/%s", dir, CLASSES_FILE);
    void *data = NULL;
    size_t n = 0;
    dbk_status st = dbk_source_root_read(root, path, "class list", DBK_IMAGEFOLDER_CLASSES_MAX_BYTES, &data, &n);
    if (st == DBK_OK) {
        st = dbk_imagefolder_parse_classes(data, n, path, names, count);
        dbk_free(data);
        return st;
    }
    if (st != DBK_ERR_NOT_FOUND) return st;

    snprintf(path, sizeof path, "%s/train", dir);
    name_list folders = {0};
    st = list_dir(root, path, true, &folders);
    if (st == DBK_OK && folders.count == 0)
        st = dbk_set_error(DBK_ERR_FORMAT, "%s holds no class folders; expected %s", path, DBK_IMAGEFOLDER_DIR_CONTENTS);
    if (st == DBK_OK && folders.count > DBK_IMAGEFOLDER_MAX_CLASSES)
        st = dbk_set_error(DBK_ERR_FORMAT, "%s: more than %d class folders", path, DBK_IMAGEFOLDER_MAX_CLASSES);
    if (st == DBK_OK && !(*names = dbk_calloc((size_t)folders.count, sizeof **names))) st = DBK_ERR_OUT_OF_HOST_MEMORY;
    for (int32_t i = 0; st == DBK_OK && i < folders.count; i++) {
        if (strlen(folders.items[i]) >= sizeof **names)
            st = dbk_set_error(DBK_ERR_FORMAT, "%s/%s: class folder name longer than %zu bytes", path, folders.items[i],
                               sizeof **names - 1);
        else snprintf((*names)[i], sizeof **names, "%s", folders.items[i]);
    }
    if (st == DBK_OK) *count = folders.count;
    else {
        dbk_free(*names);
        *names = NULL;
    }
    name_list_deinit(&folders);
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* scanning a split                                                                   */

/* Every folder of the split must be a class. */
static dbk_status check_no_stray_folders(const dbk_source_root *root, const char *split_dir,
                                         const dbk_class_name *names, int32_t count) {
    name_list folders = {0};
    dbk_status st = list_dir(root, split_dir, true, &folders);
    for (int32_t i = 0; st == DBK_OK && i < folders.count; i++) {
        bool known = false;
        for (int32_t c = 0; c < count && !known; c++) known = !strcmp(folders.items[i], names[c]);
        if (!known)
            st = dbk_set_error(DBK_ERR_FORMAT, "%s/%s: a folder that is not one of the %d classes%s", split_dir,
                               folders.items[i], count, " (add it to classes.txt or remove it)");
    }
    name_list_deinit(&folders);
    return st;
}

void dbk_imagefolder_list_deinit(dbk_imagefolder_list *l) {
    if (!l) return;
    dbk_free(l->paths);
    dbk_free(l->offsets);
    dbk_free(l->labels);
    dbk_free(l->class_counts);
    dbk_free(l->class_names);
    dbk_source_root_close(l->root);
    memset(l, 0, sizeof *l);
}

/* Appends the images of one class folder to the list's arrays (grown as needed). */
static dbk_status add_class(dbk_imagefolder_list *l, const char *class_dir, int32_t label, size_t *paths_len,
                            size_t *paths_cap, int32_t *cap) {
    name_list files = {0};
    dbk_status st = list_dir(l->root, class_dir, false, &files);
    if (st == DBK_ERR_NOT_FOUND)
        st = dbk_set_error(DBK_ERR_NOT_FOUND, "class folder %s is missing (every class needs a folder in train/ and "
                           "val/)", class_dir);
    if (st == DBK_OK && files.count == 0)
        st = dbk_set_error(DBK_ERR_FORMAT, "class folder %s is empty: no .JPEG, .jpg or .png images", class_dir);
    if (st == DBK_OK && (int64_t)l->count + files.count > DBK_IMAGEFOLDER_MAX_IMAGES)
        st = dbk_set_error(DBK_ERR_FORMAT, "%s: the split holds more than %d images", class_dir,
                           DBK_IMAGEFOLDER_MAX_IMAGES);
    const size_t dir_len = strlen(class_dir);
    for (int32_t i = 0; st == DBK_OK && i < files.count; i++) {
        const size_t need = dir_len + 1 + strlen(files.items[i]) + 1;
        if (*paths_len + need > *paths_cap) {
            size_t ncap = (*paths_cap + need) * 2;
            char *np = dbk_malloc(ncap);
            if (!np) { st = DBK_ERR_OUT_OF_HOST_MEMORY; break; }
            if (*paths_len) memcpy(np, l->paths, *paths_len);
            dbk_free(l->paths);
            l->paths = np;
            *paths_cap = ncap;
        }
        if (l->count == *cap) {
            int32_t ncap = *cap ? *cap * 2 : 1024;
            size_t *no = dbk_malloc((size_t)ncap * sizeof *no);
            int32_t *nl = dbk_malloc((size_t)ncap * sizeof *nl);
            if (!no || !nl) {
                dbk_free(no);
                dbk_free(nl);
                st = DBK_ERR_OUT_OF_HOST_MEMORY;
                break;
            }
            if (l->count) {
                memcpy(no, l->offsets, (size_t)l->count * sizeof *no);
                memcpy(nl, l->labels, (size_t)l->count * sizeof *nl);
            }
            dbk_free(l->offsets);
            dbk_free(l->labels);
            l->offsets = no;
            l->labels = nl;
            *cap = ncap;
        }
        l->offsets[l->count] = *paths_len;
        l->labels[l->count] = label;
        snprintf(l->paths + *paths_len, need, "%s/%s", class_dir, files.items[i]);
        *paths_len += need;
        l->count++;
    }
    if (st == DBK_OK) l->class_counts[label] = files.count;
    name_list_deinit(&files);
    return st;
}

dbk_status dbk_imagefolder_scan(const char *dir, dbk_dataset_split split, dbk_imagefolder_list *out) {
    memset(out, 0, sizeof *out);
    char split_dir[DBK_DATASET_PATH_BYTES], class_dir[DBK_DATASET_PATH_BYTES];
    int n = snprintf(split_dir, sizeof split_dir, "%s/%s", dir, split_folder(split));
    if (n < 0 || (size_t)n >= sizeof split_dir) return dbk_set_error(DBK_ERR_INVALID_ARG, "path too long: %s", dir);
    DBK_TRY(dbk_source_root_open(dir, &out->root));
    dbk_status st = DBK_OK;
    if (!is_dir(out->root, split_dir))
        st = dbk_set_error(DBK_ERR_NOT_FOUND, "%s is not a folder; an image-folder dataset holds %s", split_dir,
                           DBK_IMAGEFOLDER_DIR_CONTENTS);
    if (st == DBK_OK) st = read_classes(out->root, dir, &out->class_names, &out->num_classes);
    if (st == DBK_OK) st = check_no_stray_folders(out->root, split_dir, out->class_names, out->num_classes);
    if (st == DBK_OK && !(out->class_counts = dbk_calloc((size_t)out->num_classes, sizeof *out->class_counts)))
        st = DBK_ERR_OUT_OF_HOST_MEMORY;
    size_t paths_len = 0, paths_cap = 0;
    int32_t cap = 0;
    for (int32_t c = 0; st == DBK_OK && c < out->num_classes; c++) {
        n = snprintf(class_dir, sizeof class_dir, "%s/%s", split_dir, out->class_names[c]);
        if (n < 0 || (size_t)n >= sizeof class_dir)
            st = dbk_set_error(DBK_ERR_INVALID_ARG, "path too long: %s/%s", split_dir, out->class_names[c]);
        else st = add_class(out, class_dir, c, &paths_len, &paths_cap, &cap);
    }
    if (st != DBK_OK) dbk_imagefolder_list_deinit(out);
    return st;
}

dbk_status dbk_imagefolder_list_split(const char *dir, dbk_dataset_split split, dbk_split_files **out) {
    *out = dbk_calloc(1, sizeof **out);
    if (!*out) return DBK_ERR_OUT_OF_HOST_MEMORY;
    const dbk_status st = dbk_imagefolder_scan(dir, split, *out);
    if (st != DBK_OK) {
        dbk_free(*out);
        *out = NULL;
    }
    return st;
}

int32_t dbk_split_files_count(const dbk_split_files *files) { return files->count; }

uint64_t dbk_split_files_fingerprint(uint64_t h, const dbk_split_files *files) {
    return dbk_imagefolder_fingerprint(h, files);
}

void dbk_split_files_destroy(dbk_split_files *files) {
    dbk_imagefolder_list_deinit(files);
    dbk_free(files);
}

dbk_status dbk_imagefolder_load_image(const dbk_imagefolder_list *l, int32_t i, dbk_rgb_image *out) {
    memset(out, 0, sizeof *out);
    const char *path = dbk_imagefolder_path(l, i);
    void *bytes = NULL;
    size_t n = 0;
    DBK_TRY(dbk_source_root_read(l->root, path, "image", DBK_IMAGE_MAX_FILE_BYTES, &bytes, &n));
    dbk_status st = dbk_image_decode(bytes, n, path, out);
    dbk_free(bytes);
    return st;
}

void dbk_imagefolder_subset(int32_t count, int32_t limit, int32_t *idx) {
    for (int32_t i = 0; i < limit; i++) idx[i] = (int32_t)((int64_t)i * count / limit);
}

/* ---------------------------------------------------------------------------------- */
/* the dataset interface                                                              */

dbk_status dbk_imagefolder_probe(const char *dir, dbk_dataset_info *out) {
    dbk_imagefolder_list train, val;
    DBK_TRY(dbk_imagefolder_scan(dir, DBK_DATASET_SPLIT_TRAIN, &train));
    dbk_status st = dbk_imagefolder_scan(dir, DBK_DATASET_SPLIT_TEST, &val);
    if (st != DBK_OK) {
        dbk_imagefolder_list_deinit(&train);
        return st;
    }
    out->shape = out->kind->shape;
    out->num_classes = train.num_classes;
    out->split_count[DBK_DATASET_SPLIT_TRAIN] = train.count;
    out->split_count[DBK_DATASET_SPLIT_TEST] = val.count;
    out->class_names = train.class_names;   /* taken over */
    train.class_names = NULL;
    dbk_imagefolder_list_deinit(&train);
    dbk_imagefolder_list_deinit(&val);
    return DBK_OK;
}

dbk_status dbk_imagefolder_load_split(const dbk_dataset_info *info, dbk_dataset_split split, int32_t limit,
                                      dbk_dataset *out) {
    memset(out, 0, sizeof *out);
    if (info->num_classes > 256)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "%s: %d classes; a split loaded into memory has u8 labels (at most "
                             "256 classes); stream such a dataset's split through the decode threads instead (data/loader.h), "
                             "as `daybreak train`, `eval` and `infer` do", info->dir, info->num_classes);
    dbk_imagefolder_list list;
    DBK_TRY(dbk_imagefolder_scan(info->dir, split, &list));
    const int32_t count = limit > 0 && limit < list.count ? limit : list.count;
    const dbk_image_shape *shape = &info->shape;
    const size_t image_bytes = dbk_image_shape_bytes(shape);
    const dbk_loader_config lc =
        dbk_loader_eval_config(&list, count, count < 64 ? count : 64, shape->height, shape->width, 0);
    dbk_loader *loader = NULL;
    out->images = dbk_malloc((size_t)count * image_bytes);
    out->labels = dbk_malloc((size_t)count);
    out->class_names = dbk_malloc((size_t)info->num_classes * sizeof *out->class_names);
    dbk_status st = out->images && out->labels && out->class_names ? DBK_OK : DBK_ERR_OUT_OF_HOST_MEMORY;
    if (st == DBK_OK) st = dbk_loader_create(&lc, &loader);
    if (st == DBK_OK) st = dbk_loader_begin_epoch(loader, 1);
    int32_t done = 0;
    while (st == DBK_OK) {
        dbk_loader_batch b;
        st = dbk_loader_next(loader, &b);
        if (st != DBK_OK || b.count == 0) break;
        memcpy(out->images + (size_t)done * image_bytes, b.images, (size_t)b.count * image_bytes);
        for (int32_t i = 0; i < b.count; i++) out->labels[done + i] = (uint8_t)b.labels[i];
        done += b.count;
    }
    dbk_loader_destroy(loader);
    dbk_imagefolder_list_deinit(&list);
    if (st == DBK_OK) {
        DBK_ASSERT(done == count);
        memcpy(out->class_names, info->class_names, (size_t)info->num_classes * sizeof *out->class_names);
        out->count = count;
        out->channels = shape->channels;
        out->height = shape->height;
        out->width = shape->width;
        out->num_classes = info->num_classes;
        return DBK_OK;
    }
    dbk_dataset_deinit(out);
    return st;
}

uint64_t dbk_imagefolder_fingerprint(uint64_t h, const dbk_imagefolder_list *list) {
    h = dbk_fnv1a64_update(h, &list->count, sizeof list->count);
    for (int32_t c = 0; c < list->num_classes; c++)
        h = dbk_fnv1a64_update(h, list->class_names[c], strlen(list->class_names[c]) + 1);
    for (int32_t i = 0; i < list->count; i++) {
        const char *path = list->paths + list->offsets[i], *tail = path + strlen(path);
        for (int slashes = 0; tail > path && !(tail[-1] == '/' && ++slashes == 2);) tail--;
        h = dbk_fnv1a64_update(h, &list->labels[i], sizeof list->labels[i]);
        h = dbk_fnv1a64_update(h, tail, strlen(tail) + 1);
    }
    return h;
}
