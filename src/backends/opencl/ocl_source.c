/*
 * ocl_source.c — the OpenCL program's source text (ocl_source.h).
 */
#include "backends/opencl/ocl_source.h"

#include <stdio.h>

#include "core/alloc.h"
#include "core/embedded.h"
#include "core/profile.h"

extern const dbk_embedded_file dbk_ocl_kernels[];
extern const int               dbk_ocl_kernels_count;

dbk_status dbk_ocl_source_assemble(dbk_strbuf *src) {
    const char *dir = dbk_env_kernel_dir();
    /* Every embedded .cl file of cl/ (in the build's sorted order, which keeps the cache key
     * stable); with DBK_KERNEL_DIR the files of those names are read from there instead. */
    for (int i = 0; i < dbk_ocl_kernels_count; i++) {
        const dbk_embedded_file *f = &dbk_ocl_kernels[i];
        dbk_strbuf_appendf(src, "/* ---- %s ---- */\n#pragma OPENCL FP_CONTRACT ON\n", f->name);
        if (dir) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, f->name);
            void *data;
            size_t n;
            dbk_status st = dbk_file_read_all(path, &data, &n);
            if (st != DBK_OK) {
                /* dbk_last_error() is the buffer dbk_set_error writes: copy it first. */
                char cause[512];
                snprintf(cause, sizeof cause, "%s", dbk_last_error());
                return dbk_set_error(st, "DBK_KERNEL_DIR=%s: cannot read %s: %s", dir, f->name, cause);
            }
            dbk_strbuf_appendf(src, "%s\n", (const char *)data);
            dbk_free(data);
        } else {
            dbk_strbuf_appendf(src, "%s\n", (const char *)f->data);
        }
    }
    return src->status;
}
