/*
 * ckpt_diff.h — small checkpoints (FISH's small_checkpoints.sh): a trained model stored as the
 * parameters that changed against a base model, plus the batch-norm statistics, and the
 * base's hash, so that base + difference gives exactly the trained model and a difference
 * cannot be applied to another base.
 *
 * The model's parameters are indexed in one order: its parameter tensors in declaration
 * order (the order model.ckpt lists them), each row-major, concatenated: P values. Its
 * statistics likewise: S values. A parameter "changed" when its float's bits differ from the
 * base's (so -0.0 against 0.0 is a change, and the round trip is exact).
 *
 * File format "DBKDIFF1", version 1, little-endian, no padding:
 *
 *   offset  bytes  field
 *   0       8      magic "DBKDIFF1" (ASCII, no NUL)
 *   8       4      u32 version = 1
 *   12      4      u32 Lm, the model-name length; then Lm bytes, the model name (UTF-8)
 *   ..      4      u32 Lj, the metadata length; then Lj bytes, a JSON object (may be empty)
 *   ..      8      u64 base hash: FNV-1a-64 of the base's P parameter values then its S
 *                  statistics, each as 4 little-endian bytes (core/fileio.h dbk_fnv1a64)
 *   ..      8      u64 P, the model's parameters
 *   ..      8      u64 S, its batch-norm statistics
 *   ..      8      u64 K, the changed parameters (K <= P)
 *   ..      4K     u32 indices into the P parameters, strictly increasing
 *   ..      4K     f32 their trained values
 *   ..      4S     f32 every statistic's trained value
 *   end     8      u64 FNV-1a-64 checksum of every byte before it
 *
 * Bytes: 60 + Lm + Lj + 8K + 4S. Nothing else: a reader in another language needs only this
 * table.
 */
#ifndef DBK_CKPT_DIFF_H
#define DBK_CKPT_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define DBK_DIFF_MAGIC   "DBKDIFF1"
#define DBK_DIFF_VERSION 1u
#define DBK_DIFF_MAX_BYTES ((size_t)1 << 30)

typedef struct dbk_ckpt_diff {
    char     *model;         /* owned, NUL-terminated */
    char     *meta;          /* owned, NUL-terminated ("" if none) */
    uint64_t  base_hash;
    uint64_t  param_count;   /* P */
    uint64_t  stat_count;    /* S */
    uint64_t  changed;       /* K */
    uint32_t *indices;       /* (K) strictly increasing, < P */
    float    *values;        /* (K) */
    float    *stats;         /* (S) */
} dbk_ckpt_diff;

/* The base hash of P parameters and S statistics (the format's definition). */
uint64_t   dbk_ckpt_diff_hash(const float *params, size_t p, const float *stats, size_t s);
/* The difference of trained (params, stats) against base_params (P values each, S statistics):
 * every index whose bits differ. out owns copies; free with dbk_ckpt_diff_deinit. */
dbk_status dbk_ckpt_diff_make(const char *model, const char *meta, const float *base_params, const float *base_stats,
                              const float *params, const float *stats, size_t p, size_t s, dbk_ckpt_diff *out);
void       dbk_ckpt_diff_deinit(dbk_ckpt_diff *d);                  /* accepts a zeroed diff */
/* The file's bytes for d (the format's size). */
size_t     dbk_ckpt_diff_bytes(const dbk_ckpt_diff *d);
/* Writes d to path atomically (dbk_file_write_atomic). */
dbk_status dbk_ckpt_diff_save(const char *path, const dbk_ckpt_diff *d);
/* Reads and validates path (regular file, at most DBK_DIFF_MAX_BYTES, magic and version
 * first); DBK_ERR_FORMAT naming the file and the problem. */
dbk_status dbk_ckpt_diff_load(const char *path, dbk_ckpt_diff *out);
/* Validates n bytes in memory (every length against n, K <= P, indices increasing and < P,
 * the checksum) and copies them into out; `where` names the source in errors. */
dbk_status dbk_ckpt_diff_parse(const void *data, size_t n, const char *where, dbk_ckpt_diff *out);
/* Applies d to a base of model `model` (params P values, stats S values, both rewritten in
 * place): DBK_ERR_INVALID_ARG when the model, P or S differ from d's, or when the base's hash
 * is not d's ("not the base it was made against"), naming path and base_path. */
dbk_status dbk_ckpt_diff_apply(const dbk_ckpt_diff *d, const char *path, const char *model, const char *base_path,
                               float *params, size_t p, float *stats, size_t s);

#endif
