/*
 * kcache.h — the file format of the compiled-kernel cache (OpenCL program binaries, see
 * backends/opencl/ocl_program.c). Kept apart from the backend so that the parser needs no
 * driver and can be fuzzed (fuzz/fuzz_kcache.c).
 *
 * Format 2. All integers little-endian:
 *   offset  bytes  field
 *   0       8      magic "DBKCLBIN"
 *   8       4      u32 format = 2
 *   12      4      u32 0 (reserved)
 *   16      8      u64 key: FNV-1a-64 of the cache format, source text, build options, device
 *                  name and version, driver version, platform name and version
 *   24      8      u64 L, the driver binary's length
 *   32      8      u64 binary hash: FNV-1a-64 of the key's 8 bytes, then the L binary bytes
 *   40      8      u64 file checksum: FNV-1a-64 of bytes 0..39, then the L binary bytes
 *   48      L      the driver binary (clGetProgramInfo CL_PROGRAM_BINARIES)
 *
 * A driver may crash (not fail) on a damaged binary, so nothing reaches it unless every field
 * matches: the key ties the binary to this device, driver, source and options; the binary
 * hash, recorded when the driver produced the binary, ties its content to that key, so a
 * binary altered after writing is refused even when the file checksum was recomputed.
 */
#ifndef DBK_KCACHE_H
#define DBK_KCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define DBK_KCACHE_MAGIC        "DBKCLBIN"
#define DBK_KCACHE_FORMAT       2u
#define DBK_KCACHE_HEADER_BYTES 48
/* Largest cache file read (PoCL's binary of all of cl/ is a few MB). */
#define DBK_KCACHE_MAX_BYTES    ((size_t)256 << 20)

/* Fills the header of a file of DBK_KCACHE_HEADER_BYTES + n bytes whose binary already sits at
 * file + DBK_KCACHE_HEADER_BYTES. */
void dbk_kcache_seal(unsigned char *file, uint64_t key, size_t n);

/* Checks a whole cache file against the key. NULL when it may be handed to the driver, with
 * *binary and *n set; otherwise a short static reason ("key mismatch", "binary hash mismatch"). */
const char *dbk_kcache_check(const unsigned char *file, size_t size, uint64_t key, const unsigned char **binary,
                             size_t *n);

/* The header check of a dbk_file_spec (magic and format, the first DBK_KCACHE_HEAD_BYTES,
 * before the rest is read). */
#define DBK_KCACHE_HEAD_BYTES 12
dbk_status dbk_kcache_check_head(const char *path, const unsigned char *head, size_t n, size_t file_size);

/* The two hashes of the header, for writers and for tests that forge files. */
uint64_t dbk_kcache_binary_hash(uint64_t key, const unsigned char *binary, size_t n);
uint64_t dbk_kcache_file_checksum(const unsigned char *file, size_t size);   /* size >= header */

#endif
