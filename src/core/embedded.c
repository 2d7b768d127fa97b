/*
 * embedded.c — lookup in the generated tables of embedded.h.
 */
#include "core/embedded.h"

#include <string.h>

const dbk_embedded_file *dbk_embedded_find(const dbk_embedded_file *table, int count, const char *name) {
    for (int i = 0; i < count; i++)
        if (table[i].name && !strcmp(table[i].name, name)) return &table[i];
    return NULL;
}
