/*
 * test_loader.c — the dataset interface (data/dataset.h: the table of kinds, opening a dataset,
 * loading through it, refusing a kind without load) and the CIFAR-10 loader (data/cifar10.h) on the
 * real files in $DAYBREAK_DATA, with its error reports on damaged copies this test makes in its
 * tmp dir.
 *
 * The expected counts come from shared/data/README.md: 50,000 training images, 5,000 per
 * class; 10,000 test images, 1,000 per class. Record bytes are compared with direct reads
 * of the files, so the label/plane split and the record order are both checked.
 * The cases that need no data run first; the rest exit 77 (skipped) when the data is absent.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/status.h"
#include "data/cifar10.h"
#include "data/dataset.h"
#include "test_util.h"

static char cifar_dir[4096];   /* the real data */
static char data_root[4096];   /* $DAYBREAK_DATA */

static const char *const all_files[] = {
    "data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
    "data_batch_5.bin", "test_batch.bin",   "batches.meta.txt",
};
static const char *const class_names[10] = {"airplane", "automobile", "bird", "cat",  "deer",
                                            "dog",      "frog",       "horse", "ship", "truck"};

/* Reads record `index` (3,073 bytes) of a batch file straight from disk. */
static int read_record(const char *dir, const char *file, int index, unsigned char rec[DBK_CIFAR10_RECORD_BYTES]) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    int ok = fseek(f, (long)index * DBK_CIFAR10_RECORD_BYTES, SEEK_SET) == 0 &&
             fread(rec, 1, DBK_CIFAR10_RECORD_BYTES, f) == DBK_CIFAR10_RECORD_BYTES;
    fclose(f);
    return ok ? 0 : -1;
}

/* Image i of the dataset equals record `index` of `file`, label and all three planes. */
static int check_record(const dbk_dataset *d, int32_t i, const char *file, int index) {
    unsigned char rec[DBK_CIFAR10_RECORD_BYTES];
    DBK_CHECK_MSG(read_record(cifar_dir, file, index, rec) == 0, "cannot read %s record %d", file, index);
    DBK_CHECK_MSG(d->labels[i] == rec[0], "image %d: label %u, file %s record %d has %u", i, d->labels[i], file,
                  index, rec[0]);
    DBK_CHECK_MSG(memcmp(d->images + (size_t)i * DBK_CIFAR10_IMAGE_BYTES, rec + 1, DBK_CIFAR10_IMAGE_BYTES) == 0,
                  "image %d differs from %s record %d", i, file, index);
    return 0;
}

/* A fresh directory holding symlinks to the 7 real files; the caller then replaces some. */
static const char *make_copy_dir(const char *name, char *out, size_t cap) {
    const char *tmp = dbk_test_tmpdir(name);
    if (!tmp) return NULL;
    snprintf(out, cap, "%s", tmp);
    for (size_t i = 0; i < sizeof all_files / sizeof all_files[0]; i++) {
        char src[4400], dst[4400];
        snprintf(src, sizeof src, "%s/%s", cifar_dir, all_files[i]);
        snprintf(dst, sizeof dst, "%s/%s", out, all_files[i]);
        if (symlink(src, dst) != 0) return NULL;
    }
    return out;
}

/* Replaces dir/file (a symlink) with a real file of n bytes. */
static int replace_file(const char *dir, const char *file, const void *data, size_t n) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    unlink(path);
    return dbk_file_write_atomic(path, data, n) == DBK_OK ? 0 : -1;
}

static int remove_file(const char *dir, const char *file) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return unlink(path);
}

/* The load fails with `code`, the message names `file` and contains `needle`, *out is zeroed
 * and nothing leaks. */
static int expect_load_failure(const char *dir, dbk_cifar10_split split, int32_t limit, dbk_status code,
                               const char *file, const char *needle) {
    long base = dbk_alloc_live();
    dbk_dataset d;
    memset(&d, 0xab, sizeof d);
    dbk_status st = dbk_cifar10_load(dir, split, limit, &d);
    DBK_CHECK_MSG(st == code, "got %s (%s), expected %s", dbk_status_str(st), dbk_last_error(), dbk_status_str(code));
    char full[4400];
    snprintf(full, sizeof full, "%s/%s", dir, file);
    DBK_CHECK_MSG(strstr(dbk_last_error(), full), "message does not name %s: '%s'", full, dbk_last_error());
    DBK_CHECK_MSG(strstr(dbk_last_error(), needle), "message lacks '%s': '%s'", needle, dbk_last_error());
    DBK_CHECK(d.count == 0 && d.images == NULL && d.labels == NULL && d.class_names == NULL);
    DBK_CHECK_MSG(dbk_alloc_live() == base, "%ld allocations leaked", dbk_alloc_live() - base);
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* the real data                                                                      */

static int cifar10_train_should_load_50000_images_5000_per_class(void) {
    long base = dbk_alloc_live();
    dbk_dataset d;
    DBK_CHECK_OK(dbk_cifar10_load(cifar_dir, DBK_CIFAR10_TRAIN, 0, &d));
    DBK_CHECK(d.count == 50000 && d.channels == 3 && d.height == 32 && d.width == 32 && d.num_classes == 10);
    int counts[10] = {0};
    for (int32_t i = 0; i < d.count; i++) {
        DBK_CHECK(d.labels[i] < 10);
        counts[d.labels[i]]++;
    }
    for (int k = 0; k < 10; k++) DBK_CHECK_MSG(counts[k] == 5000, "class %d has %d images", k, counts[k]);
    for (int k = 0; k < 10; k++)
        DBK_CHECK_MSG(strcmp(d.class_names[k], class_names[k]) == 0, "class %d is '%s'", k, d.class_names[k]);
    /* first record, across a batch boundary, the last record */
    if (check_record(&d, 0, "data_batch_1.bin", 0)) return 1;
    if (check_record(&d, 9999, "data_batch_1.bin", 9999)) return 1;
    if (check_record(&d, 10000, "data_batch_2.bin", 0)) return 1;
    if (check_record(&d, 32345, "data_batch_4.bin", 2345)) return 1;
    if (check_record(&d, 49999, "data_batch_5.bin", 9999)) return 1;
    /* The pixels are not all one value (a loader that skipped the copy would pass a label check). */
    int distinct = 0;
    for (int v = 1; v < DBK_CIFAR10_IMAGE_BYTES; v++) distinct += d.images[v] != d.images[0];
    DBK_CHECK(distinct > 100);
    dbk_dataset_deinit(&d);
    DBK_CHECK(d.images == NULL && d.labels == NULL && d.count == 0);
    dbk_dataset_deinit(&d);   /* twice is harmless */
    DBK_CHECK(dbk_alloc_live() == base);
    return 0;
}

static int cifar10_test_should_load_10000_images_1000_per_class(void) {
    dbk_dataset d;
    DBK_CHECK_OK(dbk_cifar10_load(cifar_dir, DBK_CIFAR10_TEST, 0, &d));
    DBK_CHECK(d.count == 10000);
    int counts[10] = {0};
    for (int32_t i = 0; i < d.count; i++) counts[d.labels[i]]++;
    for (int k = 0; k < 10; k++) DBK_CHECK_MSG(counts[k] == 1000, "class %d has %d images", k, counts[k]);
    DBK_CHECK(strcmp(d.class_names[9], "truck") == 0);
    if (check_record(&d, 0, "test_batch.bin", 0)) return 1;
    if (check_record(&d, 5000, "test_batch.bin", 5000)) return 1;
    if (check_record(&d, 9999, "test_batch.bin", 9999)) return 1;
    dbk_dataset_deinit(&d);
    return 0;
}

static int cifar10_limit_should_load_a_prefix(void) {
    dbk_dataset d;
    DBK_CHECK_OK(dbk_cifar10_load(cifar_dir, DBK_CIFAR10_TRAIN, 10, &d));
    DBK_CHECK(d.count == 10);
    for (int i = 0; i < 10; i++)
        if (check_record(&d, i, "data_batch_1.bin", i)) return 1;
    dbk_dataset_deinit(&d);

    DBK_CHECK_OK(dbk_cifar10_load(cifar_dir, DBK_CIFAR10_TRAIN, 12345, &d));
    DBK_CHECK(d.count == 12345);
    if (check_record(&d, 9999, "data_batch_1.bin", 9999)) return 1;
    if (check_record(&d, 10000, "data_batch_2.bin", 0)) return 1;
    if (check_record(&d, 12344, "data_batch_2.bin", 2344)) return 1;
    dbk_dataset_deinit(&d);

    DBK_CHECK_OK(dbk_cifar10_load(cifar_dir, DBK_CIFAR10_TEST, 20000, &d));   /* more than there is */
    DBK_CHECK(d.count == 10000);
    dbk_dataset_deinit(&d);
    DBK_CHECK_OK(dbk_cifar10_load(cifar_dir, DBK_CIFAR10_TEST, -5, &d));      /* <= 0: all */
    DBK_CHECK(d.count == 10000);
    dbk_dataset_deinit(&d);
    return 0;
}

static int cifar10_check_dir_should_accept_the_real_data(void) {
    DBK_CHECK_OK(dbk_cifar10_check_dir(cifar_dir));
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* damaged copies                                                                     */

static int cifar10_should_reject_a_truncated_batch(void) {
    char dir[4096];
    DBK_CHECK(make_copy_dir("loader_truncated", dir, sizeof dir));
    char path[4400];
    snprintf(path, sizeof path, "%s/data_batch_3.bin", cifar_dir);
    void *bytes = NULL;
    size_t n = 0;
    DBK_CHECK_OK(dbk_file_read_all(path, &bytes, &n));
    int rc = replace_file(dir, "data_batch_3.bin", bytes, n - 1000);
    dbk_free(bytes);
    DBK_CHECK(rc == 0);

    /* Even a 100-image load, which reads only batch 1, checks batch 3's size. */
    if (expect_load_failure(dir, DBK_CIFAR10_TRAIN, 100, DBK_ERR_FORMAT, "data_batch_3.bin",
                            "30729000 bytes, expected 30730000 (10000 records of 3073 bytes); truncated?"))
        return 1;
    if (expect_load_failure(dir, DBK_CIFAR10_TRAIN, 0, DBK_ERR_FORMAT, "data_batch_3.bin", "truncated?")) return 1;
    DBK_CHECK(dbk_cifar10_check_dir(dir) == DBK_ERR_FORMAT);
    DBK_CHECK(strstr(dbk_last_error(), "data_batch_3.bin"));

    /* The test split does not involve batch 3. */
    dbk_dataset d;
    DBK_CHECK_OK(dbk_cifar10_load(dir, DBK_CIFAR10_TEST, 10, &d));
    dbk_dataset_deinit(&d);

    /* A size that is a whole number of records but not 10,000 of them is rejected as well. */
    void *short_batch = calloc(9999, DBK_CIFAR10_RECORD_BYTES);
    DBK_CHECK(short_batch);
    rc = replace_file(dir, "test_batch.bin", short_batch, (size_t)9999 * DBK_CIFAR10_RECORD_BYTES);
    free(short_batch);
    DBK_CHECK(rc == 0);
    return expect_load_failure(dir, DBK_CIFAR10_TEST, 0, DBK_ERR_FORMAT, "test_batch.bin",
                               "30726927 bytes, expected 30730000");
}

static int cifar10_should_reject_an_out_of_range_label(void) {
    char dir[4096];
    DBK_CHECK(make_copy_dir("loader_label", dir, sizeof dir));
    char path[4400];
    snprintf(path, sizeof path, "%s/data_batch_2.bin", cifar_dir);
    void *bytes = NULL;
    size_t n = 0;
    DBK_CHECK_OK(dbk_file_read_all(path, &bytes, &n));
    ((unsigned char *)bytes)[(size_t)777 * DBK_CIFAR10_RECORD_BYTES] = 10;
    int rc = replace_file(dir, "data_batch_2.bin", bytes, n);
    dbk_free(bytes);
    DBK_CHECK(rc == 0);
    if (expect_load_failure(dir, DBK_CIFAR10_TRAIN, 0, DBK_ERR_FORMAT, "data_batch_2.bin", "record 777 has label 10"))
        return 1;
    if (expect_load_failure(dir, DBK_CIFAR10_TRAIN, 10778, DBK_ERR_FORMAT, "data_batch_2.bin", "record 777"))
        return 1;
    /* Records before the bad one load. */
    dbk_dataset d;
    DBK_CHECK_OK(dbk_cifar10_load(dir, DBK_CIFAR10_TRAIN, 10777, &d));
    DBK_CHECK(d.count == 10777);
    dbk_dataset_deinit(&d);
    return 0;
}

static int cifar10_should_report_missing_files(void) {
    char dir[4096];
    DBK_CHECK(make_copy_dir("loader_missing", dir, sizeof dir));
    DBK_CHECK(remove_file(dir, "test_batch.bin") == 0);
    if (expect_load_failure(dir, DBK_CIFAR10_TEST, 0, DBK_ERR_NOT_FOUND, "test_batch.bin", "data_batch_1..5.bin"))
        return 1;
    DBK_CHECK(dbk_cifar10_check_dir(dir) == DBK_ERR_NOT_FOUND);
    DBK_CHECK(strstr(dbk_last_error(), "test_batch.bin"));
    dbk_dataset d;
    DBK_CHECK_OK(dbk_cifar10_load(dir, DBK_CIFAR10_TRAIN, 10, &d));   /* train does not need it */
    dbk_dataset_deinit(&d);

    DBK_CHECK(remove_file(dir, "batches.meta.txt") == 0);
    if (expect_load_failure(dir, DBK_CIFAR10_TRAIN, 10, DBK_ERR_NOT_FOUND, "batches.meta.txt", "not found"))
        return 1;

    /* A meta file with fewer than 10 names. */
    const char seven[] = "airplane\nautomobile\n\nbird\ncat\ndeer\ndog\nfrog\n\n";
    DBK_CHECK(replace_file(dir, "batches.meta.txt", seven, sizeof seven - 1) == 0);
    if (expect_load_failure(dir, DBK_CIFAR10_TRAIN, 10, DBK_ERR_FORMAT, "batches.meta.txt", "7 class names"))
        return 1;

    /* Windows line endings and surrounding blanks are fine. */
    const char crlf[] = "airplane\r\nautomobile\r\nbird\r\ncat\r\ndeer\r\ndog\r\nfrog\r\nhorse\r\nship\r\n truck \r\n";
    DBK_CHECK(replace_file(dir, "batches.meta.txt", crlf, sizeof crlf - 1) == 0);
    DBK_CHECK_OK(dbk_cifar10_load(dir, DBK_CIFAR10_TRAIN, 1, &d));
    DBK_CHECK(strcmp(d.class_names[1], "automobile") == 0 && strcmp(d.class_names[9], "truck") == 0);
    dbk_dataset_deinit(&d);

    char nowhere[4400];
    snprintf(nowhere, sizeof nowhere, "%s/absent", dir);
    DBK_CHECK(dbk_cifar10_check_dir(nowhere) == DBK_ERR_NOT_FOUND);
    DBK_CHECK(strstr(dbk_last_error(), nowhere));
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* data directory resolution                                                          */

static int resolve_should_accept_root_or_inner_dir_and_explain_otherwise(void) {
    const dbk_dataset_kind *cifar10;
    DBK_CHECK_OK(dbk_dataset_kind_find("cifar10", &cifar10));
    char out[4096];
    char expect[4400];
    snprintf(expect, sizeof expect, "%s/cifar-10-batches-bin", data_root);
    const char *saved = getenv("DAYBREAK_DATA");
    char saved_copy[4096];
    snprintf(saved_copy, sizeof saved_copy, "%s", saved ? saved : "");
    int rc = 1;

    /* from the environment: the root */
    DBK_CHECK_OK(dbk_dataset_resolve(cifar10, NULL, out, sizeof out));
    DBK_CHECK_MSG(strcmp(out, expect) == 0, "got '%s'", out);
    /* --data: the root (with a trailing slash), the inner dir, and precedence over the env */
    char arg[4400];
    snprintf(arg, sizeof arg, "%s/", data_root);
    setenv("DAYBREAK_DATA", "/nonexistent/daybreak-data", 1);
    if (dbk_dataset_resolve(cifar10, arg, out, sizeof out) != DBK_OK || strcmp(out, expect) != 0) {
        fprintf(stderr, "  FAIL root with slash: '%s' (%s)\n", out, dbk_last_error());
        goto done;
    }
    if (dbk_dataset_resolve(cifar10, expect, out, sizeof out) != DBK_OK || strcmp(out, expect) != 0) {
        fprintf(stderr, "  FAIL inner dir: '%s' (%s)\n", out, dbk_last_error());
        goto done;
    }
    /* the env pointing nowhere */
    if (dbk_dataset_resolve(cifar10, "", out, sizeof out) != DBK_ERR_NOT_FOUND ||
        !strstr(dbk_last_error(), "/nonexistent/daybreak-data") || !strstr(dbk_last_error(), "DAYBREAK_DATA")) {
        fprintf(stderr, "  FAIL missing env path: '%s'\n", dbk_last_error());
        goto done;
    }
    /* a directory that exists but holds no CIFAR-10 */
    const char *empty = dbk_test_tmpdir("loader_resolve_empty");
    if (!empty || dbk_dataset_resolve(cifar10, empty, out, sizeof out) != DBK_ERR_NOT_FOUND ||
        !strstr(dbk_last_error(), empty) || !strstr(dbk_last_error(), "cifar-10-batches-bin")) {
        fprintf(stderr, "  FAIL empty dir: '%s'\n", dbk_last_error());
        goto done;
    }
    /* neither set */
    unsetenv("DAYBREAK_DATA");
    if (dbk_dataset_resolve(cifar10, NULL, out, sizeof out) != DBK_ERR_NOT_FOUND ||
        strcmp(dbk_last_error(), "no data: set DAYBREAK_DATA (or --data) to a folder holding cifar-10-batches-bin/ "
                                 "(data_batch_1..5.bin, test_batch.bin, batches.meta.txt)") != 0) {
        fprintf(stderr, "  FAIL unset: '%s'\n", dbk_last_error());
        goto done;
    }
    /* too small an output buffer */
    char small[8];
    if (dbk_dataset_resolve(cifar10, data_root, small, sizeof small) != DBK_ERR_INVALID_ARG) {
        fprintf(stderr, "  FAIL small buffer accepted\n");
        goto done;
    }
    rc = 0;
done:
    if (saved_copy[0]) setenv("DAYBREAK_DATA", saved_copy, 1);
    else unsetenv("DAYBREAK_DATA");
    if (rc) dbk_test_failed_checks++;
    return rc;
}

/* ---------------------------------------------------------------------------------- */
/* the dataset interface                                                              */

static int dataset_kinds_should_be_found_by_name_and_unknown_names_listed(void) {
    DBK_CHECK(dbk_dataset_kind_count() >= 1);
    const dbk_dataset_kind *k = NULL;
    DBK_CHECK_OK(dbk_dataset_kind_find("cifar10", &k));
    DBK_CHECK(k == dbk_dataset_kind_at(0) && strcmp(k->name, "cifar10") == 0);
    DBK_CHECK(k->shape.channels == 3 && k->shape.height == 32 && k->shape.width == 32);
    DBK_CHECK(k->residency == DBK_DATASET_RESIDENT && k->probe && k->load);
    for (int i = 0; i < dbk_dataset_kind_count(); i++) {
        const dbk_dataset_kind *ki = dbk_dataset_kind_at(i);
        DBK_CHECK_MSG(ki->name && ki->description && ki->folder && ki->marker && ki->contents && ki->probe,
                      "kind %d is incomplete", i);
        DBK_CHECK_MSG(ki->residency == DBK_DATASET_STREAMED || ki->load, "resident kind %s has no load", ki->name);
    }
    DBK_CHECK(dbk_dataset_kind_find("imagenet-99", &k) == DBK_ERR_NOT_FOUND);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "unknown dataset 'imagenet-99' (known: cifar10") != NULL, "%s",
                  dbk_last_error());
    return 0;
}

/* A kind defined outside the table: a probe that reports made-up counts, streamed residency
 * and no load. */
static dbk_status fake_probe(const char *dir, dbk_dataset_info *out) {
    (void)dir;
    out->class_names = dbk_calloc(2, sizeof *out->class_names);
    if (!out->class_names) return DBK_ERR_OUT_OF_HOST_MEMORY;
    snprintf(out->class_names[0], sizeof out->class_names[0], "tench");
    snprintf(out->class_names[1], sizeof out->class_names[1], "church");
    out->shape = (dbk_image_shape){3, 224, 224};
    out->num_classes = 2;
    out->split_count[DBK_DATASET_SPLIT_TRAIN] = 600;
    out->split_count[DBK_DATASET_SPLIT_TEST] = 200;
    return DBK_OK;
}

static int streamed_dataset_without_load_should_open_but_refuse_to_load(void) {
    const dbk_dataset_kind folder = {
        .name = "folder-test", .description = "test", .folder = "imagenette", .marker = "classes.txt",
        .contents = "train/, val/", .shape = {3, 224, 224}, .residency = DBK_DATASET_STREAMED, .probe = fake_probe,
    };
    dbk_dataset_info info;
    DBK_CHECK_OK(dbk_dataset_open_dir(&folder, "/somewhere/imagenette", &info));
    DBK_CHECK(info.kind == &folder && strcmp(info.dir, "/somewhere/imagenette") == 0);
    DBK_CHECK(info.num_classes == 2 && strcmp(info.class_names[1], "church") == 0);
    DBK_CHECK(info.split_count[DBK_DATASET_SPLIT_TRAIN] == 600 && info.split_count[DBK_DATASET_SPLIT_TEST] == 200);
    DBK_CHECK(dbk_image_shape_bytes(&info.shape) == (size_t)3 * 224 * 224);
    dbk_dataset d;
    dbk_status st = dbk_dataset_load(&info, DBK_DATASET_SPLIT_TRAIN, 10, &d);
    dbk_dataset_info_deinit(&info);
    DBK_CHECK(st == DBK_ERR_UNSUPPORTED);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "dataset 'folder-test' cannot be loaded into memory whole"),
                  "%s", dbk_last_error());
    DBK_CHECK(d.count == 0 && d.images == NULL && d.class_names == NULL);
    DBK_CHECK(info.class_names == NULL && info.kind == NULL);
    return 0;
}

static int cifar10_should_open_with_its_shape_classes_and_counts(void) {
    const dbk_dataset_kind *k;
    DBK_CHECK_OK(dbk_dataset_kind_find("cifar10", &k));
    dbk_dataset_info info;
    DBK_CHECK_OK(dbk_dataset_open(k, data_root, &info));
    DBK_CHECK_MSG(strcmp(info.dir, cifar_dir) == 0, "dir '%s'", info.dir);
    DBK_CHECK(info.shape.channels == 3 && info.shape.height == 32 && info.shape.width == 32);
    DBK_CHECK(info.num_classes == 10 && strcmp(info.class_names[0], "airplane") == 0 &&
              strcmp(info.class_names[9], "truck") == 0);
    DBK_CHECK(info.split_count[DBK_DATASET_SPLIT_TRAIN] == 50000 && info.split_count[DBK_DATASET_SPLIT_TEST] == 10000);

    dbk_dataset d;
    DBK_CHECK_OK(dbk_dataset_load(&info, DBK_DATASET_SPLIT_TEST, 25, &d));
    DBK_CHECK(d.count == 25 && d.channels == 3 && d.height == 32 && d.width == 32 && d.num_classes == 10);
    DBK_CHECK(strcmp(d.class_names[3], "cat") == 0);
    if (check_record(&d, 24, "test_batch.bin", 24)) return 1;
    dbk_dataset_deinit(&d);
    dbk_dataset_info_deinit(&info);

    /* a folder that is not CIFAR-10: the reader's own error, naming what it should hold */
    const char *empty = dbk_test_tmpdir("loader_open_empty");
    DBK_CHECK(empty != NULL);
    DBK_CHECK(dbk_dataset_open_dir(k, empty, &info) == DBK_ERR_NOT_FOUND);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "data_batch_1.bin") != NULL, "%s", dbk_last_error());
    DBK_CHECK(info.class_names == NULL);
    return 0;
}

int main(void) {
    DBK_RUN(dataset_kinds_should_be_found_by_name_and_unknown_names_listed);
    DBK_RUN(streamed_dataset_without_load_should_open_but_refuse_to_load);
    const char *dir = dbk_test_cifar_dir();
    if (!dir) {
        if (dbk_test_failed_checks) return dbk_test_finish();
        return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    }
    snprintf(cifar_dir, sizeof cifar_dir, "%s", dir);
    snprintf(data_root, sizeof data_root, "%s", getenv("DAYBREAK_DATA"));
    size_t len = strlen(data_root);
    while (len > 1 && data_root[len - 1] == '/') data_root[--len] = '\0';

    DBK_RUN(cifar10_train_should_load_50000_images_5000_per_class);
    DBK_RUN(cifar10_test_should_load_10000_images_1000_per_class);
    DBK_RUN(cifar10_limit_should_load_a_prefix);
    DBK_RUN(cifar10_check_dir_should_accept_the_real_data);
    DBK_RUN(cifar10_should_reject_a_truncated_batch);
    DBK_RUN(cifar10_should_reject_an_out_of_range_label);
    DBK_RUN(cifar10_should_report_missing_files);
    DBK_RUN(resolve_should_accept_root_or_inner_dir_and_explain_otherwise);
    DBK_RUN(cifar10_should_open_with_its_shape_classes_and_counts);
    return dbk_test_finish();
}
