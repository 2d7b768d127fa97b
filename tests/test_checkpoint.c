/*
 * test_checkpoint.c — the checkpoint format (train/checkpoint.h): round trip, lookup by
 * name, the byte layout promised in the header comment, and rejection of damaged files
 * (bad magic, truncation at every region, a flipped data byte, a corrupted count) without
 * leaks; devices and oversized files refused without reading them; parsing from memory; a
 * failed save leaves nothing behind.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/status.h"
#include "test_util.h"
#include "train/checkpoint.h"

/* Three tensors like a model's: a conv filter, a BN scale and a BN running variance. */
enum { W_N = 8 * 3 * 3 * 3, G_N = 8, V_N = 8 };
static float w_data[W_N], g_data[G_N], v_data[V_N];
static const char *model_name = "resnet9";
static const char *meta = "{\"recipe\": \"cifar10-resnet9\", \"seed\": 1}";

static void make_tensors(dbk_ckpt_tensor t[3]) {
    for (int i = 0; i < W_N; i++) w_data[i] = (float)i * 0.25f - 3.0f;
    for (int i = 0; i < G_N; i++) g_data[i] = 1.0f + (float)i;
    for (int i = 0; i < V_N; i++) v_data[i] = 1.0f / (float)(i + 1);
    v_data[3] = -0.0f;
    v_data[4] = 1e-38f;   /* subnormal-adjacent values survive too */
    t[0] = (dbk_ckpt_tensor){.name = "prep.conv.w", .ndim = 4, .shape = {8, 3, 3, 3}, .data = w_data};
    t[1] = (dbk_ckpt_tensor){.name = "prep.bn.gamma", .ndim = 1, .shape = {8}, .data = g_data};
    t[2] = (dbk_ckpt_tensor){.name = "prep.bn.running_var", .ndim = 1, .shape = {8}, .data = v_data};
}

static const char *tmp_path(const char *dir, const char *name) {
    static char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* Saves the standard checkpoint to dir/name and returns its bytes (free with dbk_free). */
static unsigned char *save_standard(const char *dir, const char *name, size_t *n) {
    dbk_ckpt_tensor t[3];
    make_tensors(t);
    const char *path = tmp_path(dir, name);
    if (dbk_checkpoint_save(path, model_name, meta, t, 3) != DBK_OK) return NULL;
    void *data = NULL;
    if (dbk_file_read_all(path, &data, n) != DBK_OK) return NULL;
    return data;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* FNV-1a-64 written out here independently of dbk_fnv1a64, to pin the format. */
static uint64_t fnv(const unsigned char *p, size_t n) {
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* Writes bytes to dir/name and expects loading it to fail with code and a message that
 * names the file and contains `needle`. */
static int expect_load_failure(const char *dir, const char *name, const unsigned char *bytes, size_t n,
                               dbk_status code, const char *needle) {
    const char *path = tmp_path(dir, name);
    char copy[4400];
    snprintf(copy, sizeof copy, "%s", path);
    DBK_CHECK_OK(dbk_file_write_atomic(copy, bytes, n));
    long base = dbk_alloc_live();
    dbk_checkpoint *c = (dbk_checkpoint *)&c;   /* must be reset to NULL */
    dbk_status st = dbk_checkpoint_load(copy, &c);
    DBK_CHECK_MSG(st == code, "%s: got %s (%s), expected %s", name, dbk_status_str(st), dbk_last_error(),
                  dbk_status_str(code));
    DBK_CHECK(c == NULL);
    DBK_CHECK_MSG(strstr(dbk_last_error(), copy) != NULL, "message does not name %s: '%s'", copy, dbk_last_error());
    DBK_CHECK_MSG(strstr(dbk_last_error(), needle) != NULL, "message lacks '%s': '%s'", needle, dbk_last_error());
    DBK_CHECK_MSG(dbk_alloc_live() == base, "%s: %ld allocations leaked", name, dbk_alloc_live() - base);
    return 0;
}

/* ---------------------------------------------------------------------------------- */

static int checkpoint_should_round_trip_tensors_and_strings(void) {
    const char *dir = dbk_test_tmpdir("checkpoint_roundtrip");
    DBK_CHECK(dir);
    long base = dbk_alloc_live();
    dbk_ckpt_tensor t[3];
    make_tensors(t);
    const char *path = tmp_path(dir, "model.ckpt");
    DBK_CHECK_OK(dbk_checkpoint_save(path, model_name, meta, t, 3));

    dbk_checkpoint *c = NULL;
    DBK_CHECK_OK(dbk_checkpoint_load(path, &c));
    DBK_CHECK(strcmp(dbk_checkpoint_model(c), "resnet9") == 0);
    DBK_CHECK(strcmp(dbk_checkpoint_meta(c), meta) == 0);
    DBK_CHECK(dbk_checkpoint_count(c) == 3);
    for (int i = 0; i < 3; i++) {
        const dbk_ckpt_tensor *g = dbk_checkpoint_tensor(c, i);
        DBK_CHECK(strcmp(g->name, t[i].name) == 0);
        DBK_CHECK(g->ndim == t[i].ndim);
        int64_t n = 1;
        for (int d = 0; d < g->ndim; d++) {
            DBK_CHECK(g->shape[d] == t[i].shape[d]);
            n *= g->shape[d];
        }
        DBK_CHECK_MSG(memcmp(g->data, t[i].data, (size_t)n * 4) == 0, "tensor %s data differs", g->name);
    }

    const dbk_ckpt_tensor *f = dbk_checkpoint_find(c, "prep.bn.running_var");
    DBK_CHECK(f && f == dbk_checkpoint_tensor(c, 2));
    DBK_CHECK(f->data[0] == 1.0f && f->data[4] == 1e-38f);
    DBK_CHECK(dbk_checkpoint_find(c, "prep.bn") == NULL);
    DBK_CHECK(dbk_checkpoint_find(c, "nope") == NULL);
    dbk_checkpoint_destroy(c);

    /* No metadata, no tensors, NULL strings: still a valid file. */
    DBK_CHECK_OK(dbk_checkpoint_save(path, NULL, NULL, NULL, 0));
    DBK_CHECK_OK(dbk_checkpoint_load(path, &c));
    DBK_CHECK(dbk_checkpoint_count(c) == 0 && strcmp(dbk_checkpoint_model(c), "") == 0 &&
              strcmp(dbk_checkpoint_meta(c), "") == 0);
    dbk_checkpoint_destroy(c);
    dbk_checkpoint_destroy(NULL);
    DBK_CHECK_MSG(dbk_alloc_live() == base, "%ld allocations leaked", dbk_alloc_live() - base);
    return 0;
}

static int checkpoint_should_follow_the_documented_layout(void) {
    const char *dir = dbk_test_tmpdir("checkpoint_layout");
    DBK_CHECK(dir);
    size_t n = 0;
    unsigned char *b = save_standard(dir, "model.ckpt", &n);
    DBK_CHECK_MSG(b, "%s", dbk_last_error());
    size_t lm = strlen(model_name), lj = strlen(meta);
    size_t expect = 8 + 4 + 4 + 4 + lm + 4 + lj + 8;
    expect += 4 + strlen("prep.conv.w") + 4 + 4 * 8 + 8 + 4 * W_N;
    expect += 4 + strlen("prep.bn.gamma") + 4 + 8 + 8 + 4 * G_N;
    expect += 4 + strlen("prep.bn.running_var") + 4 + 8 + 8 + 4 * V_N;
    int ok = n == expect && memcmp(b, "DBKCKPT1", 8) == 0 && le32(b + 8) == 1 && le32(b + 12) == 3 &&
             le32(b + 16) == lm && memcmp(b + 20, model_name, lm) == 0 && le32(b + 20 + lm) == lj &&
             memcmp(b + 24 + lm, meta, lj) == 0;
    /* first tensor record */
    const unsigned char *p = b + 24 + lm + lj;
    ok = ok && le32(p) == 11 && memcmp(p + 4, "prep.conv.w", 11) == 0 && le32(p + 15) == 4 && le64(p + 19) == 8 &&
         le64(p + 27) == 3 && le64(p + 35) == 3 && le64(p + 43) == 3 && le64(p + 51) == (uint64_t)W_N;
    uint32_t bits;
    memcpy(&bits, &w_data[1], 4);
    ok = ok && le32(p + 59 + 4) == bits;
    ok = ok && le64(b + n - 8) == fnv(b, n - 8);
    dbk_free(b);
    DBK_CHECK_MSG(ok, "file layout differs from checkpoint.h (size %zu, expected %zu)", n, expect);
    return 0;
}

static int checkpoint_load_should_reject_bad_magic(void) {
    const char *dir = dbk_test_tmpdir("checkpoint_magic");
    DBK_CHECK(dir);
    size_t n = 0;
    unsigned char *b = save_standard(dir, "good.ckpt", &n);
    DBK_CHECK(b);
    b[3] ^= 0x20;   /* "DBKcKPT1" */
    int rc = expect_load_failure(dir, "magic.ckpt", b, n, DBK_ERR_FORMAT, "not a daybreak checkpoint");
    const char text[] = "epoch\thours\ttop1Accuracy\n";
    if (!rc) rc = expect_load_failure(dir, "text.ckpt", (const unsigned char *)text, sizeof text - 1, DBK_ERR_FORMAT,
                                      "not a daybreak checkpoint");
    if (!rc) rc = expect_load_failure(dir, "empty.ckpt", b, 0, DBK_ERR_FORMAT, "not a daybreak checkpoint");
    dbk_free(b);
    DBK_CHECK(rc == 0);

    /* A missing file is NOT_FOUND and names the path. */
    dbk_checkpoint *c = NULL;
    DBK_CHECK(dbk_checkpoint_load(tmp_path(dir, "absent.ckpt"), &c) == DBK_ERR_NOT_FOUND && c == NULL);
    DBK_CHECK(strstr(dbk_last_error(), "absent.ckpt"));
    return 0;
}

static int checkpoint_load_should_reject_truncated_files(void) {
    const char *dir = dbk_test_tmpdir("checkpoint_truncated");
    DBK_CHECK(dir);
    size_t n = 0;
    unsigned char *b = save_standard(dir, "good.ckpt", &n);
    DBK_CHECK(b);
    /* Cut inside the header, the metadata, a tensor's shape, its data, and the checksum. */
    size_t lm = strlen(model_name), lj = strlen(meta);
    size_t cuts[] = {14, 24 + lm + lj / 2, 24 + lm + lj + 4 + 11 + 4 + 10, n / 2, n - 20, n - 3, n - 1};
    int rc = 0;
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0] && !rc; i++) {
        char name[64];
        snprintf(name, sizeof name, "cut_%zu.ckpt", cuts[i]);
        /* The structure always needs exactly n - 8 bytes before the checksum, so any cut,
         * even one inside the checksum, leaves it short. */
        const char *needle = "truncated";
        rc = expect_load_failure(dir, name, b, cuts[i], DBK_ERR_FORMAT, needle);
    }
    /* An extra byte at the end is rejected too. */
    unsigned char *longer = malloc(n + 1);
    DBK_CHECK(longer);
    memcpy(longer, b, n);
    longer[n] = 0;
    if (!rc) rc = expect_load_failure(dir, "long.ckpt", longer, n + 1, DBK_ERR_FORMAT, "unexpected bytes");
    free(longer);
    dbk_free(b);
    DBK_CHECK(rc == 0);
    return 0;
}

static int checkpoint_load_should_reject_a_flipped_data_byte(void) {
    const char *dir = dbk_test_tmpdir("checkpoint_flip");
    DBK_CHECK(dir);
    size_t n = 0;
    unsigned char *b = save_standard(dir, "good.ckpt", &n);
    DBK_CHECK(b);
    b[n - 8 - 4 * V_N + 5] ^= 0x01;   /* one bit of the last tensor's data */
    int rc = expect_load_failure(dir, "flip.ckpt", b, n, DBK_ERR_FORMAT, "checksum");
    b[n - 8 - 4 * V_N + 5] ^= 0x01;
    b[n - 2] ^= 0x80;                  /* the stored checksum itself */
    if (!rc) rc = expect_load_failure(dir, "flipsum.ckpt", b, n, DBK_ERR_FORMAT, "checksum");
    b[n - 2] ^= 0x80;
    if (!rc) {   /* restored bytes load again: the failures above were the flips */
        const char *path = tmp_path(dir, "restored.ckpt");
        char copy[4400];
        snprintf(copy, sizeof copy, "%s", path);
        DBK_CHECK_OK(dbk_file_write_atomic(copy, b, n));
        dbk_checkpoint *c = NULL;
        DBK_CHECK_OK(dbk_checkpoint_load(copy, &c));
        dbk_checkpoint_destroy(c);
    }
    dbk_free(b);
    DBK_CHECK(rc == 0);
    return 0;
}

static int checkpoint_load_should_not_trust_corrupted_counts(void) {
    const char *dir = dbk_test_tmpdir("checkpoint_counts");
    DBK_CHECK(dir);
    size_t n = 0;
    unsigned char *b = save_standard(dir, "good.ckpt", &n);
    DBK_CHECK(b);
    size_t lm = strlen(model_name), lj = strlen(meta);
    unsigned char *tensor0 = b + 24 + lm + lj;
    int rc = 0;

    /* tensor count 2^31 - 1: rejected up front, as the file cannot hold that many records */
    unsigned char saved[8];
    memcpy(saved, b + 12, 4);
    const unsigned char many[4] = {0xff, 0xff, 0xff, 0x7f};
    memcpy(b + 12, many, 4);
    rc = expect_load_failure(dir, "count.ckpt", b, n, DBK_ERR_FORMAT, "claims 2147483647 tensors");
    memcpy(b + 12, saved, 4);

    /* metadata length beyond the file */
    if (!rc) {
        memcpy(saved, b + 20 + lm, 4);
        memset(b + 20 + lm, 0xee, 4);
        rc = expect_load_failure(dir, "metalen.ckpt", b, n, DBK_ERR_FORMAT, "truncated");
        memcpy(b + 20 + lm, saved, 4);
    }
    /* a huge first dimension (2^40): the shape alone proves the file too short */
    if (!rc) {
        unsigned char dim[8];
        memcpy(dim, tensor0 + 19, 8);
        const unsigned char big[8] = {0, 0, 0, 0, 0, 1, 0, 0};
        memcpy(tensor0 + 19, big, 8);
        rc = expect_load_failure(dir, "dim.ckpt", b, n, DBK_ERR_FORMAT, "tensor 0");
        memcpy(tensor0 + 19, dim, 8);
    }
    /* element count disagreeing with the shape */
    if (!rc) {
        tensor0[51] ^= 0x01;
        rc = expect_load_failure(dir, "numel.ckpt", b, n, DBK_ERR_FORMAT, "elements");
        tensor0[51] ^= 0x01;
    }
    /* ndim 9 and an unsupported version */
    if (!rc) {
        tensor0[15] = 9;
        rc = expect_load_failure(dir, "ndim.ckpt", b, n, DBK_ERR_FORMAT, "ndim");
        tensor0[15] = 4;
    }
    if (!rc) {
        b[8] = 2;
        rc = expect_load_failure(dir, "version.ckpt", b, n, DBK_ERR_FORMAT, "version 2");
        b[8] = 1;
    }
    dbk_free(b);
    DBK_CHECK(rc == 0);
    return 0;
}

/* Entries of dir other than . and .. */
static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

static int checkpoint_save_should_be_atomic(void) {
    const char *dir = dbk_test_tmpdir("checkpoint_atomic");
    DBK_CHECK(dir);
    char dir_copy[4200];
    snprintf(dir_copy, sizeof dir_copy, "%s", dir);
    dbk_ckpt_tensor t[3];
    make_tensors(t);
    long base = dbk_alloc_live();

    /* Into a directory that does not exist: an IO error naming the path, nothing created. */
    char missing[4400];
    snprintf(missing, sizeof missing, "%s/no_such_dir/model.ckpt", dir_copy);
    DBK_CHECK(dbk_checkpoint_save(missing, model_name, meta, t, 3) == DBK_ERR_IO);
    DBK_CHECK_MSG(strstr(dbk_last_error(), missing), "'%s'", dbk_last_error());
    DBK_CHECK(count_entries(dir_copy) == 0);

    /* Over a path that cannot be replaced (a directory): the temp file written first is gone. */
    char blocked[4400];
    snprintf(blocked, sizeof blocked, "%s/blocked.ckpt", dir_copy);
    DBK_CHECK(mkdir(blocked, 0755) == 0);
    DBK_CHECK(dbk_checkpoint_save(blocked, model_name, meta, t, 3) == DBK_ERR_IO);
    DBK_CHECK_MSG(strstr(dbk_last_error(), blocked), "'%s'", dbk_last_error());
    DBK_CHECK_MSG(count_entries(dir_copy) == 1, "temp file left behind in %s", dir_copy);

    /* A save rejected for bad arguments leaves the previous checkpoint untouched. */
    char path[4400];
    snprintf(path, sizeof path, "%s/model.ckpt", dir_copy);
    DBK_CHECK_OK(dbk_checkpoint_save(path, model_name, meta, t, 3));
    dbk_ckpt_tensor dup[2] = {t[1], t[1]};
    DBK_CHECK(dbk_checkpoint_save(path, "other", NULL, dup, 2) == DBK_ERR_INVALID_ARG);
    DBK_CHECK(strstr(dbk_last_error(), "duplicate"));
    dbk_ckpt_tensor bad = t[0];
    bad.ndim = 5;
    DBK_CHECK(dbk_checkpoint_save(path, "other", NULL, &bad, 1) == DBK_ERR_INVALID_ARG);
    dbk_checkpoint *c = NULL;
    DBK_CHECK_OK(dbk_checkpoint_load(path, &c));
    DBK_CHECK(strcmp(dbk_checkpoint_model(c), model_name) == 0 && dbk_checkpoint_count(c) == 3);
    dbk_checkpoint_destroy(c);
    DBK_CHECK(count_entries(dir_copy) == 2);
    DBK_CHECK(dbk_alloc_live() == base);
    return 0;
}

/* A checkpoint path naming a device once hung, growing memory until killed; an oversized or
 * future-version file is refused from its size or header alone. */
static int checkpoint_load_should_refuse_devices_and_oversized_files(void) {
    const char *dir = dbk_test_tmpdir("checkpoint_devices");
    DBK_CHECK(dir);
    long base = dbk_alloc_live();
    dbk_checkpoint *c = NULL;
    alarm(20);   /* a hang ends the test (SIGALRM) instead of the ctest timeout */
    DBK_CHECK(dbk_checkpoint_load("/dev/zero", &c) == DBK_ERR_IO && c == NULL);
    DBK_CHECK_MSG(!strcmp(dbk_last_error(),
                          "cannot read checkpoint file /dev/zero: it is a character device, not a regular file"),
                  "'%s'", dbk_last_error());

    /* Sparse files: no disk space used, and nothing may read them whole. */
    char path[4400];
    snprintf(path, sizeof path, "%s", tmp_path(dir, "huge.ckpt"));
    DBK_CHECK_OK(dbk_file_write_atomic(path, DBK_CHECKPOINT_MAGIC, 8));
    DBK_CHECK(truncate(path, (off_t)DBK_CHECKPOINT_MAX_BYTES + 1) == 0);
    DBK_CHECK(dbk_checkpoint_load(path, &c) == DBK_ERR_FORMAT && c == NULL);
    DBK_CHECK_MSG(strstr(dbk_last_error(), path) && strstr(dbk_last_error(), "bytes, over the limit of"), "'%s'",
                  dbk_last_error());

    unsigned char head[12];
    memcpy(head, DBK_CHECKPOINT_MAGIC, 8);
    head[8] = 2, head[9] = head[10] = head[11] = 0;   /* version 2 */
    DBK_CHECK_OK(dbk_file_write_atomic(path, head, sizeof head));
    DBK_CHECK(truncate(path, (off_t)DBK_CHECKPOINT_MAX_BYTES / 2) == 0);
    DBK_CHECK(dbk_checkpoint_load(path, &c) == DBK_ERR_FORMAT && c == NULL);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "checkpoint version 2, this build reads version 1"), "'%s'",
                  dbk_last_error());
    alarm(0);
    DBK_CHECK(unlink(path) == 0);
    DBK_CHECK(dbk_alloc_live() == base);
    return 0;
}

/* dbk_checkpoint_parse reads from memory what dbk_checkpoint_load reads from a file. */
static int checkpoint_parse_should_read_a_buffer(void) {
    const char *dir = dbk_test_tmpdir("checkpoint_parse");
    DBK_CHECK(dir);
    size_t n = 0;
    unsigned char *b = save_standard(dir, "good.ckpt", &n);
    DBK_CHECK(b);
    dbk_checkpoint *c = NULL;
    DBK_CHECK_OK(dbk_checkpoint_parse(b, n, "in memory", &c));
    const dbk_ckpt_tensor *w = dbk_checkpoint_find(c, "prep.conv.w");
    DBK_CHECK(dbk_checkpoint_count(c) == 3 && w && w->ndim == 4 && w->data[5] == w_data[5]);
    DBK_CHECK(!strcmp(dbk_checkpoint_model(c), model_name) && !strcmp(dbk_checkpoint_meta(c), meta));
    dbk_checkpoint_destroy(c);
    b[n - 20] ^= 1;
    DBK_CHECK(dbk_checkpoint_parse(b, n, "in memory", &c) == DBK_ERR_FORMAT && c == NULL);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "in memory: checksum mismatch"), "'%s'", dbk_last_error());
    DBK_CHECK(dbk_checkpoint_parse(b, 5, "in memory", &c) == DBK_ERR_FORMAT && c == NULL);
    DBK_CHECK_MSG(strstr(dbk_last_error(), "in memory: not a daybreak checkpoint"), "'%s'", dbk_last_error());
    dbk_free(b);
    return 0;
}

int main(void) {
    DBK_RUN(checkpoint_should_round_trip_tensors_and_strings);
    DBK_RUN(checkpoint_should_follow_the_documented_layout);
    DBK_RUN(checkpoint_load_should_reject_bad_magic);
    DBK_RUN(checkpoint_load_should_reject_truncated_files);
    DBK_RUN(checkpoint_load_should_reject_a_flipped_data_byte);
    DBK_RUN(checkpoint_load_should_not_trust_corrupted_counts);
    DBK_RUN(checkpoint_save_should_be_atomic);
    DBK_RUN(checkpoint_load_should_refuse_devices_and_oversized_files);
    DBK_RUN(checkpoint_parse_should_read_a_buffer);
    return dbk_test_finish();
}
