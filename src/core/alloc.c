/* alloc.c — host allocation wrappers (see alloc.h). */
#include "core/alloc.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "core/status.h"

static atomic_long live_allocations;

void *dbk_malloc(size_t nbytes) {
    void *p = malloc(nbytes ? nbytes : 1);
    if (!p) {
        dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory allocating %zu bytes", nbytes);
        return NULL;
    }
    atomic_fetch_add(&live_allocations, 1);
    return p;
}

void *dbk_calloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) {
        dbk_set_error(DBK_ERR_OUT_OF_HOST_MEMORY, "out of host memory allocating %zu x %zu bytes",
                      count, size);
        return NULL;
    }
    atomic_fetch_add(&live_allocations, 1);
    return p;
}

void dbk_free(void *p) {
    if (!p) return;
    atomic_fetch_sub(&live_allocations, 1);
    free(p);
}

long dbk_alloc_live(void) { return atomic_load(&live_allocations); }
