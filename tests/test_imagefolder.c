/*
 * test_imagefolder.c — the image-folder reader (data/imagefolder.h, data/image.h) and the
 * decode threads (data/loader.h): on the real Imagenette subset in $DAYBREAK_DATA (counts per
 * class from shared/data/README.md: 300 training and 100 validation images in each of 10
 * classes; n02102040_725.JPEG is one of its 63 single-channel JPEGs), and on damaged files this
 * test plants in its tmp dir, each with its own error.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "data/dataset.h"
#include "data/image.h"
#include "data/imagefolder.h"
#include "data/jpeg_scan.h"
#include "data/loader.h"
#include "test_util.h"

#define GRAY_FILE "train/n02102040/n02102040_725.JPEG"
#define COLOR_FILE "train/n01440764/ILSVRC2012_val_00017699.JPEG"

static char subset_dir[2048];

/* A 1x1 RGB PNG (IHDR, IDAT, IEND), and its IHDR width/height offsets. */
static const unsigned char tiny_png[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
    0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53, 0xde, 0x00, 0x00, 0x00,
    0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00, 0x00, 0x03, 0x01, 0x01, 0x00, 0x18,
    0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
enum { PNG_WIDTH_AT = 16, PNG_HEIGHT_AT = 20 };

static int write_file(const char *dir, const char *name, const void *data, size_t n) {
    char path[8200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    DBK_CHECK_OK(dbk_file_write_atomic(path, data, n));
    return 0;
}

static int read_real(const char *rel, unsigned char **data, size_t *n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", subset_dir, rel);
    DBK_CHECK_OK(dbk_file_read_all(path, (void **)data, n));
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* the real subset                                                                    */

static int subset_should_scan_with_its_counts_per_class(void) {
    dbk_imagefolder_list train, val;
    DBK_CHECK_OK(dbk_imagefolder_scan(subset_dir, DBK_DATASET_SPLIT_TRAIN, &train));
    DBK_CHECK_OK(dbk_imagefolder_scan(subset_dir, DBK_DATASET_SPLIT_TEST, &val));
    DBK_CHECK(train.num_classes == 10 && val.num_classes == 10);
    DBK_CHECK_MSG(train.count == 3000 && val.count == 1000, "%d train, %d val", train.count, val.count);
    for (int c = 0; c < 10; c++) {
        DBK_CHECK_MSG(train.class_counts[c] == 300 && val.class_counts[c] == 100, "class %d: %d, %d", c,
                      train.class_counts[c], val.class_counts[c]);
    }
    /* classes.txt order (sorted wnids): tench first, parachute last; labels follow the folders */
    DBK_CHECK(!strcmp(train.class_names[0], "n01440764") && !strcmp(train.class_names[9], "n03888257"));
    DBK_CHECK(train.labels[0] == 0 && train.labels[2999] == 9 && val.labels[999] == 9);
    DBK_CHECK_MSG(strstr(dbk_imagefolder_path(&train, 300), "/train/n02102040/"), "%s",
                  dbk_imagefolder_path(&train, 300));
    dbk_imagefolder_list_deinit(&train);
    dbk_imagefolder_list_deinit(&val);

    const dbk_dataset_kind *kind;
    DBK_CHECK_OK(dbk_dataset_kind_find("imagenette", &kind));
    DBK_CHECK(kind->residency == DBK_DATASET_STREAMED);
    dbk_dataset_info info;
    DBK_CHECK_OK(dbk_dataset_open_dir(kind, subset_dir, &info));
    DBK_CHECK(info.num_classes == 10 && info.split_count[DBK_DATASET_SPLIT_TRAIN] == 3000 &&
              info.split_count[DBK_DATASET_SPLIT_TEST] == 1000 && info.shape.height == 224);
    dbk_dataset_info_deinit(&info);
    return 0;
}

/* The dataset interface's file list of a streamed split (what train, eval and infer stream
 * through): the scan's images and fingerprint (the one resume.ckpt records); a resident kind has
 * none and says so. */
static int dataset_list_should_give_a_streamed_split_and_refuse_a_resident_one(void) {
    const dbk_dataset_kind *kind;
    DBK_CHECK_OK(dbk_dataset_kind_find("imagenette", &kind));
    dbk_dataset_info info;
    DBK_CHECK_OK(dbk_dataset_open_dir(kind, subset_dir, &info));
    dbk_split_files *files = NULL;
    DBK_CHECK_OK(dbk_dataset_list(&info, DBK_DATASET_SPLIT_TEST, &files));
    dbk_imagefolder_list val;
    DBK_CHECK_OK(dbk_imagefolder_scan(subset_dir, DBK_DATASET_SPLIT_TEST, &val));
    DBK_CHECK_MSG(dbk_split_files_count(files) == 1000, "%d images", dbk_split_files_count(files));
    DBK_CHECK(dbk_split_files_fingerprint(7, files) == dbk_imagefolder_fingerprint(7, &val));
    dbk_imagefolder_list_deinit(&val);
    dbk_split_files_destroy(files);
    dbk_split_files_destroy(NULL);
    dbk_dataset_info_deinit(&info);

    /* CIFAR-10 is held in memory: no file list, and no folder needed to say so */
    DBK_CHECK_OK(dbk_dataset_kind_find("cifar10", &kind));
    dbk_dataset_info resident = {.kind = kind};
    files = (dbk_split_files *)&resident; /* overwritten: NULL on failure */
    DBK_CHECK(dbk_dataset_list(&resident, DBK_DATASET_SPLIT_TRAIN, &files) == DBK_ERR_UNSUPPORTED);
    DBK_CHECK(files == NULL);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "cifar10") && strstr(dbk_last_error(), "not streamed"), "%s",
                  dbk_last_error());
    return 0;
}

static int grayscale_jpeg_should_decode_to_three_equal_channels(void) {
    unsigned char *bytes;
    size_t n;
    if (read_real(GRAY_FILE, &bytes, &n)) return 1;
    DBK_CHECK_MSG(bytes[0] == 0xff && bytes[1] == 0xd8, "not a JPEG");
    dbk_rgb_image img;
    DBK_CHECK_OK(dbk_image_decode(bytes, n, GRAY_FILE, &img));
    DBK_CHECK(img.width == 224 && img.height == 224);
    size_t differ = 0, nonzero = 0;
    for (size_t i = 0; i < (size_t)224 * 224; i++) {
        const uint8_t *p = img.pixels + i * 3;
        differ += p[0] != p[1] || p[1] != p[2];
        nonzero += p[0] != 0;
    }
    DBK_CHECK_MSG(differ == 0 && nonzero > 1000, "%zu pixels with unequal channels, %zu non-zero", differ, nonzero);
    dbk_rgb_image_deinit(&img);
    dbk_free(bytes);

    /* and a colour one is not grey */
    if (read_real(COLOR_FILE, &bytes, &n)) return 1;
    DBK_CHECK_OK(dbk_image_decode(bytes, n, COLOR_FILE, &img));
    differ = 0;
    for (size_t i = 0; i < (size_t)224 * 224; i++) differ += img.pixels[i * 3] != img.pixels[i * 3 + 2];
    DBK_CHECK_MSG(differ > 1000, "colour image decoded grey (%zu)", differ);
    dbk_rgb_image_deinit(&img);
    dbk_free(bytes);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* planted bad files: each refused with its own error, naming the file                 */

static int expect_decode_error(const char *name, const unsigned char *bytes, size_t n, const char *want) {
    dbk_rgb_image img;
    dbk_status st = dbk_image_decode(bytes, n, name, &img);
    DBK_CHECK_MSG(st == DBK_ERR_FORMAT, "%s: %s", name, dbk_status_str(st));
    DBK_CHECK_MSG(strstr(dbk_last_error(), name) && strstr(dbk_last_error(), want), "%s: '%s' lacks '%s'", name,
                  dbk_last_error(), want);
    DBK_CHECK(img.pixels == NULL);
    return 0;
}

/* A JPEG cut short and closed with an end-of-image marker (FF D9) again has one: stb_image
 * decoded it as part grey without an error. Its scans show it (data/jpeg_scan.h): cut at half
 * and at nine tenths, it is refused naming the blocks its data ends after. Every real JPEG of
 * the subset (4,000 files) passes the same check, so the check refuses no good file. */
static int a_cut_jpeg_closed_with_an_end_marker_should_be_refused(void) {
    unsigned char *jpeg;
    size_t n;
    if (read_real(COLOR_FILE, &jpeg, &n)) return 1;
    const size_t cuts[] = {n / 2, n * 9 / 10};
    for (size_t c = 0; c < 2; c++) {
        unsigned char *cut = dbk_malloc(cuts[c] + 2);
        DBK_CHECK(cut != NULL);
        memcpy(cut, jpeg, cuts[c]);
        cut[cuts[c]] = 0xff;
        cut[cuts[c] + 1] = 0xd9;
        int rc = expect_decode_error("cut.JPEG", cut, cuts[c] + 2, "the file was cut short");
        dbk_free(cut);
        if (rc) return 1;
    }
    dbk_free(jpeg);
    int checked = 0;
    for (int split = 0; split < 2; split++) {
        dbk_imagefolder_list l;
        DBK_CHECK_OK(dbk_imagefolder_scan(subset_dir, split ? DBK_DATASET_SPLIT_TEST : DBK_DATASET_SPLIT_TRAIN, &l));
        for (int32_t i = 0; i < l.count; i++, checked++) {
            const char *path = l.paths + l.offsets[i];
            void *data;
            size_t size;
            char why[160] = "";
            DBK_CHECK_OK(dbk_file_read_all(path, &data, &size));
            const bool complete = dbk_jpeg_scan_complete(data, size, why, sizeof why);
            dbk_free(data);
            DBK_CHECK_MSG(complete, "%s: %s", path, why);
        }
        dbk_imagefolder_list_deinit(&l);
    }
    DBK_CHECK_MSG(checked == 4000, "%d files checked", checked);
    return 0;
}

/* A Huffman table that declares more codes of a length than the length holds (2 of length 1,
 * then 4 of length 2, where only 2 remain) is refused, naming the table. (The fuzzer found the
 * scanner tabling such codes past its 512-entry fast table before it checked the count; the
 * check now comes first. This case did not trip the sanitizers without the fix: the fuzz
 * target is the check for that.) */
static int an_overfull_huffman_table_should_be_refused(void) {
    unsigned char *jpeg;
    size_t n;
    if (read_real(COLOR_FILE, &jpeg, &n)) return 1;
    size_t at = 0;
    for (size_t i = 2; i + 21 < n && !at; i++)
        if (jpeg[i] == 0xff && jpeg[i + 1] == 0xc4) at = i + 5; /* marker, length (2), class/id: the 16 counts */
    DBK_CHECK_MSG(at != 0, "no Huffman table in %s", COLOR_FILE);
    int total = 0;
    for (int k = 0; k < 16; k++) total += jpeg[at + k];
    DBK_CHECK(total >= 6 && total - 6 <= 255);
    memset(jpeg + at, 0, 16);
    jpeg[at] = 2;                          /* length 1: codes 0 and 1 */
    jpeg[at + 1] = 4;                      /* length 2: 4 codes from 4 (of 0..3): too many */
    jpeg[at + 15] = (unsigned char)(total - 6); /* the symbol count unchanged */
    char why[160] = "";
    const bool complete = dbk_jpeg_scan_complete(jpeg, n, why, sizeof why);
    dbk_free(jpeg);
    DBK_CHECK_MSG(!complete && strstr(why, "malformed Huffman table"), "complete %d: '%s'", complete, why);
    return 0;
}

static int bad_files_should_each_be_refused_with_their_error(void) {
    unsigned char *jpeg;
    size_t n;
    if (read_real(COLOR_FILE, &jpeg, &n)) return 1;

    /* truncated: the first half of a real JPEG (stb_image alone would decode it as grey) */
    if (expect_decode_error("half.JPEG", jpeg, n / 2, "truncated JPEG")) return 1;

    /* corrupt: the bytes after the start-of-image marker overwritten (the headers are gone) */
    unsigned char *corrupt = dbk_malloc(n);
    DBK_CHECK(corrupt != NULL);
    memcpy(corrupt, jpeg, n);
    for (size_t i = 4; i < 600; i++) corrupt[i] = (unsigned char)(i * 37u);
    if (expect_decode_error("corrupt.JPEG", corrupt, n, "corrupt JPEG")) return 1;
    dbk_free(corrupt);

    /* a Huffman table of more than 256 codes (Debian's stb_image would write past its
     * tables: found by fuzz_image): the real JPEG with its first DHT's 16 counts set to 17 */
    unsigned char *dht = dbk_malloc(n);
    DBK_CHECK(dht != NULL);
    memcpy(dht, jpeg, n);
    size_t at = 0;
    for (size_t i = 2; i + 21 <= n && !at; i++)
        if (dht[i] == 0xff && dht[i + 1] == 0xc4) at = i;
    DBK_CHECK_MSG(at > 0, "%s has no DHT segment", COLOR_FILE);
    for (int k = 0; k < 16; k++) dht[at + 5 + k] = 17;
    if (expect_decode_error("huffman.JPEG", dht, n, "a Huffman table with more than 256 codes")) return 1;
    dbk_free(dht);

    /* a PNG named .JPEG */
    if (expect_decode_error("renamed.JPEG", tiny_png, sizeof tiny_png, "a PNG file named as JPEG")) return 1;
    /* and the same PNG under its own name decodes */
    dbk_rgb_image img;
    DBK_CHECK_OK(dbk_image_decode(tiny_png, sizeof tiny_png, "tiny.png", &img));
    DBK_CHECK(img.width == 1 && img.height == 1);
    dbk_rgb_image_deinit(&img);

    /* a 100000x100000 header: refused from the header, before any decoding */
    unsigned char huge[sizeof tiny_png];
    memcpy(huge, tiny_png, sizeof huge);
    const unsigned char side[4] = {0x00, 0x01, 0x86, 0xa0}; /* 100000 big-endian */
    memcpy(huge + PNG_WIDTH_AT, side, 4);
    memcpy(huge + PNG_HEIGHT_AT, side, 4);
    if (expect_decode_error("huge.png", huge, sizeof huge, "100000x100000 pixels, over the limit")) return 1;

    /* not an image at all, and an empty file */
    if (expect_decode_error("text.JPEG", (const unsigned char *)"hello, world", 12, "not a JPEG or PNG file")) return 1;
    if (expect_decode_error("empty.JPEG", jpeg, 0, "empty file")) return 1;

    /* a FIFO named like an image is refused, not waited on */
    const char *dir = dbk_test_tmpdir("imagefolder_fifo");
    DBK_CHECK(dir != NULL);
    char fifo[4096];
    snprintf(fifo, sizeof fifo, "%s/pipe.JPEG", dir);
    DBK_CHECK(mkfifo(fifo, 0600) == 0);
    DBK_CHECK(dbk_image_load(fifo, &img) == DBK_ERR_IO);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "it is a FIFO, not a regular file"), "%s", dbk_last_error());
    unlink(fifo);
    dbk_free(jpeg);
    return 0;
}

/* A two-class folder (a, b) with one real JPEG per class and split, for the scan errors. */
static int make_folder(const char *dir, const unsigned char *jpeg, size_t n) {
    const char *sub[] = {"train", "train/a", "train/b", "val", "val/a", "val/b"};
    char path[4096];
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, sub[i]);
        DBK_CHECK_OK(dbk_mkdir_p(path));
    }
    if (write_file(dir, "train/a/1.JPEG", jpeg, n) || write_file(dir, "train/b/1.JPEG", jpeg, n) ||
        write_file(dir, "val/a/1.JPEG", jpeg, n) || write_file(dir, "val/b/1.JPEG", jpeg, n))
        return 1;
    return 0;
}

static int folder_errors_should_name_the_folder(void) {
    unsigned char *jpeg;
    size_t n;
    if (read_real(COLOR_FILE, &jpeg, &n)) return 1;
    const char *dir = dbk_test_tmpdir("imagefolder_scan");
    DBK_CHECK(dir != NULL);
    if (make_folder(dir, jpeg, n)) return 1;
    dbk_imagefolder_list l;
    DBK_CHECK_OK(dbk_imagefolder_scan(dir, DBK_DATASET_SPLIT_TEST, &l));
    DBK_CHECK(l.count == 2 && l.num_classes == 2 && l.labels[1] == 1);
    dbk_imagefolder_list_deinit(&l);

    /* an empty class folder */
    char path[4096];
    snprintf(path, sizeof path, "%s/val/b/1.JPEG", dir);
    DBK_CHECK(unlink(path) == 0);
    DBK_CHECK(dbk_imagefolder_scan(dir, DBK_DATASET_SPLIT_TEST, &l) == DBK_ERR_FORMAT);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "val/b is empty"), "%s", dbk_last_error());
    DBK_CHECK(l.count == 0 && l.paths == NULL);

    /* classes.txt naming a class with no folder, and a folder that is no class */
    if (write_file(dir, "val/b/1.JPEG", jpeg, n)) return 1;
    const char classes[] = "a first class\nc\n";
    if (write_file(dir, "classes.txt", classes, sizeof classes - 1)) return 1;
    DBK_CHECK(dbk_imagefolder_scan(dir, DBK_DATASET_SPLIT_TRAIN, &l) != DBK_OK);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "train/b: a folder that is not one of the 2 classes"), "%s",
                  dbk_last_error());

    /* a damaged image in the folder: the loader's error names it */
    const char fixed[] = "a\nb\n";
    if (write_file(dir, "classes.txt", fixed, sizeof fixed - 1)) return 1;
    if (write_file(dir, "val/b/1.JPEG", jpeg, n / 3)) return 1;
    DBK_CHECK_OK(dbk_imagefolder_scan(dir, DBK_DATASET_SPLIT_TEST, &l));
    dbk_loader *loader;
    const dbk_loader_config lc = {.list = &l, .batch = 2, .height = 32, .width = 32, .resize = 37, .threads = 2};
    DBK_CHECK_OK(dbk_loader_create(&lc, &loader));
    DBK_CHECK_OK(dbk_loader_begin_epoch(loader, 1));
    dbk_loader_batch b;
    dbk_status st = dbk_loader_next(loader, &b);
    dbk_loader_destroy(loader);
    dbk_imagefolder_list_deinit(&l);
    DBK_CHECK(st == DBK_ERR_FORMAT);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "val/b/1.JPEG: truncated JPEG"), "%s", dbk_last_error());
    dbk_free(jpeg);
    return 0;
}

/* 257 classes (a 1x1 PNG each) open, and loading their validation split into memory (u8 labels;
 * `train`, `eval` and `infer` stream it) is refused with the reason. */
static int more_than_256_classes_should_be_refused_for_loading_into_memory(void) {
    const char *dir = dbk_test_tmpdir("imagefolder_classes");
    DBK_CHECK(dir != NULL);
    char path[4096], rel[64];
    for (int c = 0; c < 257; c++) {
        for (int split = 0; split < 2; split++) {
            snprintf(path, sizeof path, "%s/%s/c%03d", dir, split ? "val" : "train", c);
            DBK_CHECK_OK(dbk_mkdir_p(path));
            snprintf(rel, sizeof rel, "%s/c%03d/1.png", split ? "val" : "train", c);
            if (write_file(dir, rel, tiny_png, sizeof tiny_png)) return 1;
        }
    }
    const dbk_dataset_kind *kind;
    DBK_CHECK_OK(dbk_dataset_kind_find("imagenet", &kind));
    dbk_dataset_info info;
    DBK_CHECK_OK(dbk_dataset_open_dir(kind, dir, &info));
    DBK_CHECK(info.num_classes == 257 && info.split_count[DBK_DATASET_SPLIT_TEST] == 257);
    dbk_dataset d;
    DBK_CHECK(dbk_dataset_load(&info, DBK_DATASET_SPLIT_TEST, 0, &d) == DBK_ERR_UNSUPPORTED);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "257 classes") && strstr(dbk_last_error(), "at most 256"), "%s",
                  dbk_last_error());
    DBK_CHECK(d.images == NULL);
    dbk_dataset_info_deinit(&info);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* the decode threads                                                                 */

/* One training epoch of the first 48 images (3 batches of 16 at 64x64) into out. */
static int train_epoch_bytes(const dbk_imagefolder_list *l, int threads, int epoch, uint8_t *out, int32_t *labels) {
    const dbk_loader_config lc = {.list = l, .count = 48, .batch = 16, .height = 64, .width = 64, .train = true,
                                  .min_scale = 0.35f, .threads = threads, .ring = 2, .seed = 7};
    dbk_loader *loader;
    DBK_CHECK_OK(dbk_loader_create(&lc, &loader));
    DBK_CHECK(dbk_loader_batches(loader) == 3);
    DBK_CHECK_OK(dbk_loader_begin_epoch(loader, epoch));
    const size_t image = (size_t)3 * 64 * 64;
    int rows = 0;
    for (;;) {
        dbk_loader_batch b;
        DBK_CHECK_OK(dbk_loader_next(loader, &b));
        if (!b.count) break;
        DBK_CHECK(b.count == 16);
        memcpy(out + (size_t)rows * image, b.images, (size_t)b.count * image);
        memcpy(labels + rows, b.labels, (size_t)b.count * sizeof *labels);
        rows += b.count;
    }
    dbk_loader_stats stats;
    dbk_loader_get_stats(loader, &stats);
    DBK_CHECK(stats.images == 48 && stats.threads == threads && stats.decode_seconds > 0 && stats.wait_seconds >= 0);
    dbk_loader_destroy(loader);
    DBK_CHECK(rows == 48);
    return 0;
}

static int loader_should_give_the_same_batches_at_any_thread_count(void) {
    dbk_imagefolder_list l;
    DBK_CHECK_OK(dbk_imagefolder_scan(subset_dir, DBK_DATASET_SPLIT_TRAIN, &l));
    const size_t bytes = (size_t)48 * 3 * 64 * 64;
    uint8_t *a = dbk_malloc(bytes), *b = dbk_malloc(bytes), *c = dbk_malloc(bytes);
    int32_t la[48], lb[48], lc[48];
    DBK_CHECK(a && b && c);
    if (train_epoch_bytes(&l, 1, 1, a, la) || train_epoch_bytes(&l, 3, 1, b, lb) || train_epoch_bytes(&l, 2, 2, c, lc))
        return 1;
    DBK_CHECK_MSG(!memcmp(a, b, bytes) && !memcmp(la, lb, sizeof la), "1 and 3 threads differ");
    DBK_CHECK_MSG(memcmp(a, c, bytes) != 0, "epoch 2 repeats epoch 1's crops");
    /* the 48 images are spread over the classes (dbk_imagefolder_subset), and shuffled */
    int per_class[10] = {0}, in_order = 1;
    for (int i = 0; i < 48; i++) per_class[la[i]]++;
    for (int i = 1; i < 48; i++) in_order &= la[i] >= la[i - 1];
    for (int k = 0; k < 10; k++) DBK_CHECK_MSG(per_class[k] >= 4, "class %d: %d images", k, per_class[k]);
    DBK_CHECK(!in_order);
    dbk_free(a);
    dbk_free(b);
    dbk_free(c);
    dbk_imagefolder_list_deinit(&l);
    return 0;
}

/* Shard `shard` of 2 at batch 8 over the same 48 images: its rows into out at their places in
 * the global batches of 16 (batch b's rows at b*16 + shard*8). */
static int shard_epoch_bytes(const dbk_imagefolder_list *l, int shard, uint8_t *out, int32_t *labels) {
    const dbk_loader_config lc = {.list = l, .count = 48, .batch = 8, .height = 64, .width = 64, .train = true,
                                  .min_scale = 0.35f, .threads = 2, .ring = 2, .seed = 7, .shard_count = 2,
                                  .shard_index = shard};
    dbk_loader *loader;
    DBK_CHECK_OK(dbk_loader_create(&lc, &loader));
    DBK_CHECK(dbk_loader_batches(loader) == 3);
    DBK_CHECK_OK(dbk_loader_begin_epoch(loader, 1));
    const size_t image = (size_t)3 * 64 * 64;
    for (int b = 0;; b++) {
        dbk_loader_batch batch;
        DBK_CHECK_OK(dbk_loader_next(loader, &batch));
        if (!batch.count) break;
        DBK_CHECK(batch.count == 8 && b < 3);
        const int first = b * 16 + shard * 8;
        memcpy(out + (size_t)first * image, batch.images, (size_t)batch.count * image);
        memcpy(labels + first, batch.labels, (size_t)batch.count * sizeof *labels);
    }
    dbk_loader_destroy(loader);
    return 0;
}

/* Data-parallel training: 2 shards at batch 8 deliver together exactly one loader's batches of
 * 16 (the same images in the same places, with the same crops and flips). */
static int shards_should_split_each_global_batch(void) {
    dbk_imagefolder_list l;
    DBK_CHECK_OK(dbk_imagefolder_scan(subset_dir, DBK_DATASET_SPLIT_TRAIN, &l));
    const size_t bytes = (size_t)48 * 3 * 64 * 64;
    uint8_t *whole = dbk_malloc(bytes), *sharded = dbk_calloc(1, bytes);
    int32_t lw[48], ls[48];
    DBK_CHECK(whole && sharded);
    if (train_epoch_bytes(&l, 2, 1, whole, lw) || shard_epoch_bytes(&l, 0, sharded, ls) ||
        shard_epoch_bytes(&l, 1, sharded, ls))
        return 1;
    DBK_CHECK_MSG(!memcmp(whole, sharded, bytes) && !memcmp(lw, ls, sizeof lw),
                  "2 shards at batch 8 differ from one loader at batch 16");
    const dbk_loader_config bad = {.list = &l, .count = 48, .batch = 32, .height = 64, .width = 64, .train = true,
                                   .shard_count = 2};
    dbk_loader *loader;
    DBK_CHECK(dbk_loader_create(&bad, &loader) == DBK_ERR_INVALID_ARG);
    dbk_free(whole);
    dbk_free(sharded);
    dbk_imagefolder_list_deinit(&l);
    return 0;
}

static int evaluation_view_should_be_the_centre_crop(void) {
    /* a 224x224 image at Resize(256) + CenterCrop(224) is the central 196x196 window, scaled */
    const dbk_crop_rect r = dbk_image_center_rect(224, 224, 256, 224);
    DBK_CHECK_MSG(fabsf(r.h - 196.0f) < 1e-3f && fabsf(r.w - 196.0f) < 1e-3f && fabsf(r.y - 14.0f) < 1e-3f &&
                      fabsf(r.x - 14.0f) < 1e-3f, "%g %g %g %g", (double)r.y,
                  (double)r.x, (double)r.h, (double)r.w);
    const dbk_crop_rect wide = dbk_image_center_rect(400, 200, 100, 80);
    DBK_CHECK(fabsf(wide.h - 160.0f) < 1e-3f && fabsf(wide.x - 120.0f) < 1e-3f && fabsf(wide.y - 20.0f) < 1e-3f);
    DBK_CHECK(dbk_imagefolder_eval_resize(224) == 256 && dbk_imagefolder_eval_resize(128) == 146);

    /* a crop of the whole image at its own size reproduces it, planar */
    unsigned char *bytes;
    size_t n;
    if (read_real(COLOR_FILE, &bytes, &n)) return 1;
    dbk_rgb_image img;
    DBK_CHECK_OK(dbk_image_decode(bytes, n, COLOR_FILE, &img));
    uint8_t *planar = dbk_malloc((size_t)3 * 224 * 224);
    DBK_CHECK(planar != NULL);
    dbk_image_crop_resize(&img, (dbk_crop_rect){0, 0, 224, 224}, 224, 224, false, planar);
    for (int c = 0; c < 3; c++)
        DBK_CHECK(planar[(size_t)c * 224 * 224 + 5 * 224 + 7] == img.pixels[(5 * 224 + 7) * 3 + c]);
    dbk_image_crop_resize(&img, (dbk_crop_rect){0, 0, 224, 224}, 224, 224, true, planar);
    DBK_CHECK(planar[5 * 224 + 7] == img.pixels[(5 * 224 + 216) * 3]);
    dbk_free(planar);
    dbk_rgb_image_deinit(&img);
    dbk_free(bytes);

    /* random crops stay inside the image and within the area bounds */
    float u[DBK_IMAGE_RANDOM_DRAWS];
    for (int t = 0; t < 200; t++) {
        for (int i = 0; i < DBK_IMAGE_RANDOM_DRAWS; i++) u[i] = (float)((t * 31 + i * 17) % 97) / 97.0f;
        const dbk_crop_rect q = dbk_image_random_rect(300, 200, 0.35f, u);
        DBK_CHECK(q.x >= 0 && q.y >= 0 && q.x + q.w <= 300.0f && q.y + q.h <= 200.0f && q.w >= 1 && q.h >= 1);
    }
    return 0;
}

int main(void) {
    if (!dbk_test_imagenette_dir()) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_IMAGENETTE);
    snprintf(subset_dir, sizeof subset_dir, "%s", dbk_test_imagenette_dir());
    DBK_RUN(subset_should_scan_with_its_counts_per_class);
    DBK_RUN(dataset_list_should_give_a_streamed_split_and_refuse_a_resident_one);
    DBK_RUN(grayscale_jpeg_should_decode_to_three_equal_channels);
    DBK_RUN(bad_files_should_each_be_refused_with_their_error);
    DBK_RUN(a_cut_jpeg_closed_with_an_end_marker_should_be_refused);
    DBK_RUN(an_overfull_huffman_table_should_be_refused);
    DBK_RUN(folder_errors_should_name_the_folder);
    DBK_RUN(more_than_256_classes_should_be_refused_for_loading_into_memory);
    DBK_RUN(loader_should_give_the_same_batches_at_any_thread_count);
    DBK_RUN(shards_should_split_each_global_batch);
    DBK_RUN(evaluation_view_should_be_the_centre_crop);
    return dbk_test_finish();
}
