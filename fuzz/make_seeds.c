/*
 * make_seeds.c — writes the seed corpora of the fuzz targets from real files, at run time:
 *   fuzz_seeds OUT_DIR [CIFAR_DIR]
 * OUT_DIR/checkpoint/  two checkpoints written by dbk_checkpoint_save (a small ResNet-like set
 *                      of tensors, and one with no tensors) and two small-checkpoint
 *                      differences written by dbk_ckpt_diff_save (of the first against a base
 *                      with some values changed, and one that changes nothing)
 * OUT_DIR/kcache/      a kernel cache file sealed by dbk_kcache_seal
 * OUT_DIR/cifar10/     the first records of CIFAR_DIR/data_batch_1.bin and batches.meta.txt
 *                      (never committed: made from the dataset on each run)
 * OUT_DIR/pack/        dataset packs written by dbk_pack_write_dir: of the checkpoint folder
 *                      above, of the cifar10 folder (records: zstd after the byte delta, meta:
 *                      zstd), and of OUT_DIR/imagefolder when it exists (tools/fuzz.sh puts
 *                      two real Imagenette JPEGs there in the ImageNet layout: stored entries)
 * The profile corpus is the platforms/ folder itself (tools/fuzz.sh copies its JSON files).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/kcache.h"
#include "data/cifar10.h"
#include "data/pack_write.h"
#include "train/checkpoint.h"
#include "train/ckpt_diff.h"

#define SEED_RECORDS 3

static int fail(void) {
    fprintf(stderr, "fuzz_seeds: %s\n", dbk_last_error());
    return 1;
}

static dbk_status write_in(const char *dir, const char *kind, const char *name, const void *data, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, kind);
    DBK_TRY(dbk_mkdir_p(path));
    snprintf(path, sizeof path, "%s/%s/%s", dir, kind, name);
    return dbk_file_write_atomic(path, data, n);
}

static dbk_status checkpoint_seeds(const char *out) {
    float w[4 * 3 * 3 * 3], mean[4], fc[10 * 4];
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) w[i] = (float)i * 0.01f - 0.5f;
    for (size_t i = 0; i < 4; i++) mean[i] = (float)i;
    for (size_t i = 0; i < sizeof fc / sizeof fc[0]; i++) fc[i] = 1.0f / (float)(i + 1);
    const dbk_ckpt_tensor t[] = {
        {.name = "prep.conv.w", .ndim = 4, .shape = {4, 3, 3, 3}, .data = w},
        {.name = "prep.bn.running_mean", .ndim = 1, .shape = {4}, .data = mean},
        {.name = "fc.w", .ndim = 2, .shape = {10, 4}, .data = fc},
    };
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/checkpoint", out);
    DBK_TRY(dbk_mkdir_p(dir));
    char path[4200];
    snprintf(path, sizeof path, "%s/small.ckpt", dir);
    DBK_TRY(dbk_checkpoint_save(path, "resnet9", "{\"epoch\": 3, \"recipe\": \"quick\"}", t, 3));
    snprintf(path, sizeof path, "%s/empty.ckpt", dir);
    DBK_TRY(dbk_checkpoint_save(path, "", "", NULL, 0));
    /* Differences: the weights and classifier as parameters, the statistics as statistics. */
    enum { P = sizeof w / sizeof w[0] + sizeof fc / sizeof fc[0] };
    float base[P], trained[P];
    memcpy(base, w, sizeof w);
    memcpy(base + sizeof w / sizeof w[0], fc, sizeof fc);
    memcpy(trained, base, sizeof base);
    for (size_t i = 0; i < P; i += 7) trained[i] += 0.5f;
    dbk_ckpt_diff d;
    DBK_TRY(dbk_ckpt_diff_make("resnet9", "{\"recipe\": \"quick\"}", base, mean, trained, mean, P, 4, &d));
    snprintf(path, sizeof path, "%s/small.diff", dir);
    dbk_status st = dbk_ckpt_diff_save(path, &d);
    dbk_ckpt_diff_deinit(&d);
    DBK_TRY(st);
    DBK_TRY(dbk_ckpt_diff_make("", "", base, mean, base, mean, P, 0, &d));
    snprintf(path, sizeof path, "%s/unchanged.diff", dir);
    st = dbk_ckpt_diff_save(path, &d);
    dbk_ckpt_diff_deinit(&d);
    return st;
}

static dbk_status kcache_seed(const char *out) {
    unsigned char file[DBK_KCACHE_HEADER_BYTES + 64];
    for (size_t i = 0; i < 64; i++) file[DBK_KCACHE_HEADER_BYTES + i] = (unsigned char)(i * 7);
    dbk_kcache_seal(file, 0x0123456789abcdefULL, 64);
    return write_in(out, "kcache", "sealed.bin", file, sizeof file);
}

static dbk_status cifar_seeds(const char *out, const char *cifar) {
    char path[4096];
    snprintf(path, sizeof path, "%s/data_batch_1.bin", cifar);
    int fd;
    size_t size;
    const size_t batch_bytes = (size_t)DBK_CIFAR10_BATCH_RECORDS * DBK_CIFAR10_RECORD_BYTES;
    DBK_TRY(dbk_file_open_regular(path, "CIFAR-10 batch", batch_bytes, &fd, &size));
    unsigned char records[SEED_RECORDS * DBK_CIFAR10_RECORD_BYTES];
    dbk_status st = dbk_file_read_exact(fd, path, records, sizeof records);
    close(fd);
    DBK_TRY(st);
    DBK_TRY(write_in(out, "cifar10", "records.bin", records, sizeof records));
    snprintf(path, sizeof path, "%s/batches.meta.txt", cifar);
    void *meta;
    size_t n;
    DBK_TRY(dbk_file_read_all(path, &meta, &n));
    st = write_in(out, "cifar10", "batches.meta.txt", meta, n);
    dbk_free(meta);
    return st;
}

/* A pack of folder OUT_DIR/kind, as OUT_DIR/pack/<kind>.dbkpack. */
static dbk_status pack_seed(const char *out, const char *kind) {
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/pack", out);
    DBK_TRY(dbk_mkdir_p(dir));
    snprintf(dir, sizeof dir, "%s/%s", out, kind);
    snprintf(path, sizeof path, "%s/pack/%s.dbkpack", out, kind);
    dbk_pack_write_stats stats;
    return dbk_pack_write_dir(dir, kind, path, 3, &stats);
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: fuzz_seeds OUT_DIR [CIFAR_DIR]\n");
        return 2;
    }
    if (checkpoint_seeds(argv[1]) != DBK_OK || kcache_seed(argv[1]) != DBK_OK) return fail();
    if (argc == 3 && cifar_seeds(argv[1], argv[2]) != DBK_OK) return fail();
    if (pack_seed(argv[1], "checkpoint") != DBK_OK) return fail();
    if (argc == 3 && pack_seed(argv[1], "cifar10") != DBK_OK) return fail();
    char imagefolder[4096];
    snprintf(imagefolder, sizeof imagefolder, "%s/imagefolder", argv[1]);
    if (access(imagefolder, F_OK) == 0 && pack_seed(argv[1], "imagefolder") != DBK_OK) return fail();
    return 0;
}
