/*
 * icd_report.c — the driver lines of `daybreak devices` (backend/icd.h): which ICD files the
 * OpenCL and Vulkan loaders find, and for each whether its library loads, with the reason.
 */
#include <stdio.h>
#include <string.h>

#include "app/cli.h"
#include "backend/icd.h"
#include "core/alloc.h"

void dbk_cli_print_icd(dbk_backend_kind kind) {
    if (kind != DBK_BACKEND_KIND_OPENCL && kind != DBK_BACKEND_KIND_VULKAN) return;
    dbk_icd_report *r = dbk_malloc(sizeof *r);   /* ~33 KiB: not on the stack */
    if (!r) return;
    dbk_icd_scan(kind == DBK_BACKEND_KIND_OPENCL ? DBK_ICD_OPENCL : DBK_ICD_VULKAN, r);
    printf("  drivers: %d ICD file%s in %s\n", r->count + r->more, r->count + r->more == 1 ? "" : "s", r->searched);
    for (int i = 0; i < r->count; i++) {
        const dbk_icd_file *f = &r->files[i];
        if (f->loads && f->no_instance)
            printf("    %s: %s loads, but gives the loader no vkCreateInstance, so it lists no device%s\n", f->path,
                   f->library,
                   strstr(f->library, "libGLX_nvidia")
                       ? " (NVIDIA's GLX library without a display: an ICD file naming libEGL_nvidia.so.0, "
                         "pointed at by VK_DRIVER_FILES, works; docs/gpu.md)"
                       : "");
        else if (f->loads) printf("    %s: %s loads\n", f->path, f->library);
        else if (f->library[0]) printf("    %s: %s does not load: %s\n", f->path, f->library, f->problem);
        else printf("    %s: unusable: %s\n", f->path, f->problem);
    }
    if (r->more) printf("    (%d more not listed)\n", r->more);
    if (r->count + r->more == 0)
        printf("    none: install the vendor's driver, or point %s at its ICD file (docs/gpu.md)\n",
               kind == DBK_BACKEND_KIND_OPENCL ? "OCL_ICD_VENDORS" : "VK_DRIVER_FILES");
    dbk_free(r);
}
