/*
 * test_pack.c — dataset packs (data/pack.h, data/pack_write.h, data/source.h) on real bytes:
 * the first CIFAR-10 records and class names (compressed) and a file named as a JPEG (stored
 * as it is, with its checksum), packed and read back byte for byte through the source layer
 * the CIFAR-10 reader uses; then damaged copies (a flipped byte in the stored entry and in a
 * compressed one, a flipped index byte, a truncated file, another magic or version) and
 * non-regular files, each refused with a one-line error naming the file.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "data/cifar10.h"
#include "data/pack.h"
#include "data/pack_write.h"
#include "data/source.h"
#include "test_util.h"

#define RECORDS 5
#define JPEG_BYTES 3072   /* "img/a.JPEG": the first record's bytes (stored: images are, by name) */

static char src_dir[4200], pack_path[4200];
static unsigned char records[RECORDS * DBK_CIFAR10_RECORD_BYTES];
static void *meta;
static size_t meta_n;

/* tmp/src/{img/a.JPEG, records.bin, sub/batches.meta.txt} from the real data, packed as
 * "cifar/...": the entries lie in that (name) order, a.JPEG first at the header's end. */
static int setup(const char *cifar, const char *tmp) {
    char path[4400];
    snprintf(path, sizeof path, "%s/data_batch_1.bin", cifar);
    FILE *f = fopen(path, "rb");
    DBK_CHECK(f && fread(records, 1, sizeof records, f) == sizeof records);
    fclose(f);
    snprintf(path, sizeof path, "%s/batches.meta.txt", cifar);
    DBK_CHECK_OK(dbk_file_read_all(path, &meta, &meta_n));
    snprintf(src_dir, sizeof src_dir, "%s/src", tmp);
    snprintf(path, sizeof path, "%s/src/sub", tmp);
    DBK_CHECK_OK(dbk_mkdir_p(path));
    snprintf(path, sizeof path, "%s/records.bin", src_dir);
    DBK_CHECK_OK(dbk_file_write_atomic(path, records, sizeof records));
    snprintf(path, sizeof path, "%s/sub/batches.meta.txt", src_dir);
    DBK_CHECK_OK(dbk_file_write_atomic(path, meta, meta_n));
    snprintf(path, sizeof path, "%s/src/img", tmp);
    DBK_CHECK_OK(dbk_mkdir_p(path));
    snprintf(path, sizeof path, "%s/img/a.JPEG", src_dir);
    DBK_CHECK_OK(dbk_file_write_atomic(path, records, JPEG_BYTES));
    snprintf(pack_path, sizeof pack_path, "%s/test.dbkpack", tmp);
    dbk_pack_write_stats stats;
    DBK_CHECK_OK(dbk_pack_write_dir(src_dir, "cifar", pack_path, 3, &stats));
    DBK_CHECK(stats.entries == 3 && stats.stored_entries == 1 &&
              stats.raw_bytes == sizeof records + meta_n + JPEG_BYTES);
    return 0;
}

static int entries_should_read_back_byte_for_byte(void) {
    char path[4400];
    uint64_t size;
    DBK_CHECK(dbk_pack_is_pack(pack_path));
    DBK_CHECK(dbk_source_stat(pack_path, &size) == DBK_SOURCE_DIR);
    snprintf(path, sizeof path, "%s/cifar/sub", pack_path);
    DBK_CHECK(dbk_source_stat(path, &size) == DBK_SOURCE_DIR);
    snprintf(path, sizeof path, "%s/cifar/records.bin", pack_path);
    DBK_CHECK(dbk_source_stat(path, &size) == DBK_SOURCE_FILE && size == sizeof records);
    void *data;
    size_t n;
    DBK_CHECK_OK(dbk_source_read(path, "records", sizeof records, &data, &n));
    DBK_CHECK(n == sizeof records && !memcmp(data, records, n));
    dbk_free(data);
    unsigned char prefix[DBK_CIFAR10_RECORD_BYTES];
    DBK_CHECK_OK(dbk_source_read_prefix(path, "records", sizeof records, prefix, sizeof prefix));
    DBK_CHECK(!memcmp(prefix, records, sizeof prefix));
    /* The limit a reader sets holds for entries as for files. */
    DBK_CHECK(dbk_source_read(path, "records", sizeof records - 1, &data, &n) == DBK_ERR_FORMAT);
    snprintf(path, sizeof path, "%s/cifar/sub/batches.meta.txt", pack_path);
    DBK_CHECK_OK(dbk_source_read(path, "meta", 4096, &data, &n));
    DBK_CHECK(n == meta_n && !memcmp(data, meta, n));
    dbk_class_name names[DBK_CIFAR10_CLASSES];
    DBK_CHECK_OK(dbk_cifar10_parse_meta(data, n, path, names));
    DBK_CHECK(!strcmp(names[0], "airplane") && !strcmp(names[9], "truck"));
    dbk_free(data);
    snprintf(path, sizeof path, "%s/cifar/img/a.JPEG", pack_path);
    DBK_CHECK(dbk_source_stat(path, &size) == DBK_SOURCE_FILE && size == JPEG_BYTES);
    DBK_CHECK_OK(dbk_source_read(path, "image", JPEG_BYTES, &data, &n));
    DBK_CHECK(n == JPEG_BYTES && !memcmp(data, records, n));
    dbk_free(data);
    snprintf(path, sizeof path, "%s/cifar/missing.bin", pack_path);
    DBK_CHECK(dbk_source_stat(path, &size) == DBK_SOURCE_NONE);
    DBK_CHECK(dbk_source_read(path, "x", 10, &data, &n) == DBK_ERR_NOT_FOUND);
    return 0;
}

/* A copy of the pack with byte `at` changed (or cut to `at` bytes when truncate). */
static int damaged_copy(const char *out, size_t at, int truncate, unsigned char value) {
    void *data;
    size_t n;
    DBK_CHECK_OK(dbk_file_read_all(pack_path, &data, &n));
    DBK_CHECK(at < n);
    if (!truncate) ((unsigned char *)data)[at] = value;
    DBK_CHECK_OK(dbk_file_write_atomic(out, data, truncate ? at : n));
    dbk_free(data);
    return 0;
}

static size_t file_size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (size_t)st.st_size : 0;
}

/* A copy with a byte of entry data changed at `at`: the index is fine, exactly that entry
 * fails its check, with the pack and the entry named. */
static int damaged_entry_should_be_named(const char *bad, size_t at, const char *entry) {
    dbk_pack *p = NULL;
    DBK_CHECK(!damaged_copy(bad, at, 0, 0x5a));
    DBK_CHECK_OK(dbk_pack_open(bad, &p));
    void *buf = dbk_malloc(sizeof records);
    int bad_entries = 0;
    for (int i = 0; i < dbk_pack_count(p); i++)
        if (dbk_pack_read(p, i, buf, sizeof records) == DBK_ERR_FORMAT) {
            bad_entries++;
            DBK_CHECK_MSG(strstr(dbk_last_error(), bad) && strstr(dbk_last_error(), entry), "%s", dbk_last_error());
        }
    dbk_free(buf);
    dbk_pack_close(p);
    DBK_CHECK(bad_entries == 1);
    return 0;
}

static int damage_should_be_refused_with_the_file_named(void) {
    char bad[4400];
    snprintf(bad, sizeof bad, "%s.bad", pack_path);
    dbk_pack *p = NULL;
    /* The stored entry (its bytes, then its checksum), then the compressed one after it. */
    if (damaged_entry_should_be_named(bad, DBK_PACK_HEADER_BYTES + 20, "cifar/img/a.JPEG")) return 1;
    if (damaged_entry_should_be_named(bad, DBK_PACK_HEADER_BYTES + JPEG_BYTES + 3, "cifar/img/a.JPEG")) return 1;
    if (damaged_entry_should_be_named(bad, DBK_PACK_HEADER_BYTES + JPEG_BYTES + 8 + 20, "cifar/records.bin")) return 1;
    /* A byte of the index (the file's last byte): the index checksum. */
    DBK_CHECK(!damaged_copy(bad, file_size(pack_path) - 1, 0, 0xff));
    DBK_CHECK(dbk_pack_open(bad, &p) == DBK_ERR_FORMAT && strstr(dbk_last_error(), "checksum"));
    /* Truncated, another magic, another version. */
    DBK_CHECK(!damaged_copy(bad, file_size(pack_path) - 7, 1, 0));
    DBK_CHECK(dbk_pack_open(bad, &p) == DBK_ERR_FORMAT && strstr(dbk_last_error(), "truncated"));
    DBK_CHECK(!damaged_copy(bad, 0, 0, 'X'));
    DBK_CHECK(!dbk_pack_is_pack(bad));
    DBK_CHECK(dbk_pack_open(bad, &p) == DBK_ERR_FORMAT && strstr(dbk_last_error(), "magic"));
    DBK_CHECK(!damaged_copy(bad, 8, 0, 3));
    DBK_CHECK(dbk_pack_open(bad, &p) == DBK_ERR_FORMAT && strstr(dbk_last_error(), "version 3"));
    return 0;
}

static int non_regular_files_should_be_refused(void) {
    dbk_pack *p = NULL;
    DBK_CHECK(dbk_pack_open("/dev/zero", &p) == DBK_ERR_IO && strstr(dbk_last_error(), "/dev/zero"));
    DBK_CHECK(!dbk_pack_is_pack("/dev/zero"));
    char fifo[4400];
    snprintf(fifo, sizeof fifo, "%s.fifo", pack_path);
    unlink(fifo);
    DBK_CHECK(mkfifo(fifo, 0600) == 0);
    DBK_CHECK(dbk_pack_open(fifo, &p) == DBK_ERR_IO);   /* refused at once, never blocks */
    unlink(fifo);
    return 0;
}

int main(void) {
    const char *cifar = dbk_test_cifar_dir();
    if (!cifar) return dbk_test_skip_or_fail_in_ci(DBK_TEST_NO_CIFAR);
    const char *tmp = dbk_test_tmpdir("pack");
    if (!tmp || setup(cifar, tmp)) return 1;
    DBK_RUN(entries_should_read_back_byte_for_byte);
    DBK_RUN(damage_should_be_refused_with_the_file_named);
    DBK_RUN(non_regular_files_should_be_refused);
    dbk_free(meta);
    return dbk_test_finish();
}
