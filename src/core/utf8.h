/*
 * utf8.h — every string daybreak writes to JSON, Markdown, SVG or the MLPerf log is valid
 * UTF-8: invalid bytes (a stray continuation byte, an overlong form, a surrogate, a code point
 * above U+10FFFF, a sequence cut short) become U+FFFD, and text cut to fit a buffer is cut
 * between characters, never inside one.
 */
#ifndef DBK_UTF8_H
#define DBK_UTF8_H

#include <stdbool.h>
#include <stddef.h>

#include "core/fileio.h"

#define DBK_UTF8_REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD, 3 bytes */

/* Bytes of the well-formed character that starts at s (1..4; n bytes are readable), or 0 when
 * the bytes there are not one. */
int dbk_utf8_char_length(const char *s, size_t n);

/* Whether the n bytes at s are well-formed UTF-8. */
bool dbk_utf8_valid(const char *s, size_t n);

/* Appends the n bytes at s to sb, each byte that does not start a well-formed character
 * replaced by U+FFFD. */
void dbk_utf8_append_sanitized(dbk_strbuf *sb, const char *s, size_t n);

/* Copies src into dst (cap bytes including the terminator) as dbk_utf8_append_sanitized would,
 * stopping before the first character that does not fit. Returns the bytes written. */
size_t dbk_utf8_copy(char *dst, size_t cap, const char *src);

/* Removes an incomplete character from the end of s (what snprintf leaves when it cuts a
 * multi-byte character to fit its buffer). */
void dbk_utf8_trim_partial(char *s);

#endif
