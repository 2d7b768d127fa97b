/* bytes.c — the bounds-checked byte reader (see bytes.h). */
#include "core/bytes.h"

const unsigned char *dbk_byte_take(dbk_byte_reader *r, size_t n, const char *what) {
    if (n > r->end - r->pos) {
        dbk_set_error(DBK_ERR_FORMAT, "%s: truncated %s: %s needs %zu bytes at offset %zu, %zu left", r->where, r->kind,
                      what, n, r->pos, r->end - r->pos);
        return NULL;
    }
    const unsigned char *p = r->data + r->pos;
    r->pos += n;
    return p;
}
