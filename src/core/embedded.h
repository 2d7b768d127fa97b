/*
 * embedded.h — files built into the binary by tools/embed.cmake: OpenCL C sources, SPIR-V
 * modules and hardware profiles. Each table is generated at build time under build/gen/.
 * `data` has `size` bytes followed by one NUL byte (so text files are C strings).
 */
#ifndef DBK_EMBEDDED_H
#define DBK_EMBEDDED_H

#include <stddef.h>

typedef struct dbk_embedded_file {
    const char          *name;   /* file name without folder, e.g. "gemm_tiled.cl" */
    const unsigned char *data;
    size_t               size;
} dbk_embedded_file;

/* The entry named `name` in a table, or NULL. */
const dbk_embedded_file *dbk_embedded_find(const dbk_embedded_file *table, int count, const char *name);

/* platforms/<id>.json (always built in). */
extern const dbk_embedded_file dbk_platform_files[];
extern const int               dbk_platform_files_count;

#endif
