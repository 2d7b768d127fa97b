/*
 * alloc.h — host allocation wrappers.
 *
 * All host memory goes through dbk_malloc/dbk_calloc/dbk_free so tests can count live
 * allocations (dbk_alloc_live) and catch leaks. dbk_malloc returns NULL on failure and sets
 * the error message (DBK_ERR_OUT_OF_HOST_MEMORY names the size).
 */
#ifndef DBK_ALLOC_H
#define DBK_ALLOC_H

#include <stddef.h>

void  *dbk_malloc(size_t nbytes);
void  *dbk_calloc(size_t count, size_t size);
void   dbk_free(void *p);
long   dbk_alloc_live(void);   /* allocations made minus frees, process-wide */

#endif
