/*
 * bytes.h — little-endian integers in byte buffers, and a bounds-checked reader over a file's
 * bytes: what the binary formats (checkpoints and their differences, packed datasets, the
 * kernel cache) share, so that each is written and read the same way whatever the host's byte
 * order, and a truncated or hostile file is refused naming what was missing.
 */
#ifndef DBK_BYTES_H
#define DBK_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/status.h"

static inline void dbk_put_le32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline void dbk_put_le64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* The same at a write cursor: each returns the cursor past what it wrote. */
static inline unsigned char *dbk_append_le32(unsigned char *p, uint32_t v) {
    dbk_put_le32(p, v);
    return p + 4;
}

static inline unsigned char *dbk_append_le64(unsigned char *p, uint64_t v) {
    dbk_put_le64(p, v);
    return p + 8;
}

static inline unsigned char *dbk_append_bytes(unsigned char *p, const void *src, size_t n) {
    if (n) memcpy(p, src, n);
    return p + n;
}

static inline uint32_t dbk_get_le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t dbk_get_le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The bytes of a file being parsed: `where` names it in errors, `kind` says what it is
 * ("checkpoint"); pos advances from the start towards end (which may stop short of a trailer). */
typedef struct dbk_byte_reader {
    const char          *where;
    const char          *kind;
    const unsigned char *data;
    size_t               pos, end;
} dbk_byte_reader;

/* Advances over n bytes, returning where they start, or NULL after setting a DBK_ERR_FORMAT
 * error: "<where>: truncated <kind>: <what> needs N bytes at offset O, L left". */
const unsigned char *dbk_byte_take(dbk_byte_reader *r, size_t n, const char *what);

/* dbk_byte_take into var, returning DBK_ERR_FORMAT from the calling function on a truncation. */
#define DBK_TAKE(var, r, n, what)                                            \
    do {                                                                     \
        if (!((var) = dbk_byte_take((r), (n), (what)))) return DBK_ERR_FORMAT; \
    } while (0)

#endif
