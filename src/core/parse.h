/*
 * parse.h — small parsers of option values shared by modules that read their own specs
 * (gradient compressors, sparse masks).
 */
#ifndef DBK_PARSE_H
#define DBK_PARSE_H

#include <stdbool.h>

/* A fraction in (0, 1], or a percentage of one ("0.01", "1%", "0.5%"): the whole string, no
 * trailing characters. Returns false (out untouched) otherwise. */
bool dbk_parse_fraction(const char *s, double *out);

#endif
