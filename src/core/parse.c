/* parse.c — see parse.h. */
#include "core/parse.h"

#include <stdlib.h>

bool dbk_parse_fraction(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s) return false;
    if (*end == '%') {
        v /= 100.0;
        end++;
    }
    if (*end || !(v > 0.0 && v <= 1.0)) return false;
    *out = v;
    return true;
}
