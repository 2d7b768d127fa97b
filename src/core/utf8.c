/* utf8.c — validation, replacement of invalid bytes and character-boundary cuts (utf8.h). */
#include "core/utf8.h"

#include <string.h>

int dbk_utf8_char_length(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    if (n == 0) return 0;
    if (s[0] < 0x80) return 1;
    int len;
    unsigned min, cp;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) len = 2, min = 0x80, cp = s[0] & 0x1Fu;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF) len = 3, min = 0x800, cp = s[0] & 0x0Fu;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4) len = 4, min = 0x10000, cp = s[0] & 0x07u;
    else return 0; /* a continuation byte, an overlong lead (C0, C1) or F5..FF */
    if ((size_t)len > n) return 0;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

bool dbk_utf8_valid(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        int len = dbk_utf8_char_length(s + i, n - i);
        if (len == 0) return false;
        i += (size_t)len;
    }
    return true;
}

void dbk_utf8_append_sanitized(dbk_strbuf *sb, const char *s, size_t n) {
    size_t valid_from = 0; /* start of the run of well-formed characters not yet appended */
    for (size_t i = 0; i < n;) {
        int len = dbk_utf8_char_length(s + i, n - i);
        if (len > 0) {
            i += (size_t)len;
            continue;
        }
        dbk_strbuf_appendf(sb, "%.*s%s", (int)(i - valid_from), s + valid_from, DBK_UTF8_REPLACEMENT);
        valid_from = ++i;
    }
    dbk_strbuf_appendf(sb, "%.*s", (int)(n - valid_from), s + valid_from);
}

size_t dbk_utf8_copy(char *dst, size_t cap, const char *src) {
    if (cap == 0) return 0;
    size_t out = 0, n = strlen(src);
    for (size_t i = 0; i < n;) {
        int len = dbk_utf8_char_length(src + i, n - i);
        const char *ch = len ? src + i : DBK_UTF8_REPLACEMENT;
        size_t ch_len = len ? (size_t)len : 3;
        if (out + ch_len + 1 > cap) break;
        memcpy(dst + out, ch, ch_len);
        out += ch_len;
        i += len ? (size_t)len : 1;
    }
    dst[out] = '\0';
    return out;
}

void dbk_utf8_trim_partial(char *s) {
    size_t n = strlen(s), start = n;
    /* Back over at most 3 continuation bytes to the lead byte of the last character. */
    while (start > 0 && n - start < 4 && ((unsigned char)s[start - 1] & 0xC0) == 0x80) start--;
    if (start == 0 || (unsigned char)s[start - 1] < 0xC0) return; /* ends in ASCII or stray continuations */
    start--;
    if (dbk_utf8_char_length(s + start, n - start) == 0) s[start] = '\0';
}
