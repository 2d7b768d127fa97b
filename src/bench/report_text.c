/* report_text.c — escaping for the report's Markdown and SVG (see report_text.h). */
#include "bench/report_text.h"

#include <string.h>

#include "core/utf8.h"

/* Appends s with each character passed to escape (which appends it, escaped or not), invalid
 * UTF-8 bytes replaced by U+FFFD first. */
static void append_escaped(dbk_strbuf *sb, const char *s, void (*escape)(dbk_strbuf *sb, const char *ch, int len)) {
    for (size_t n = strlen(s); *s;) {
        int len = dbk_utf8_char_length(s, n);
        escape(sb, len ? s : DBK_UTF8_REPLACEMENT, len ? len : 3);
        s += len ? len : 1;
        n -= len ? (size_t)len : 1;
    }
}

static void xml_char(dbk_strbuf *sb, const char *ch, int len) {
    switch (*ch) {
    case '&': dbk_strbuf_appendf(sb, "&amp;"); break;
    case '<': dbk_strbuf_appendf(sb, "&lt;"); break;
    case '>': dbk_strbuf_appendf(sb, "&gt;"); break;
    case '"': dbk_strbuf_appendf(sb, "&quot;"); break;
    case '\'': dbk_strbuf_appendf(sb, "&apos;"); break;
    default:
        if ((unsigned char)*ch >= 0x20 || *ch == '\t') dbk_strbuf_appendf(sb, "%.*s", len, ch);
    }
}

static void md_code_char(dbk_strbuf *sb, const char *ch, int len) {
    if (*ch == '|') dbk_strbuf_appendf(sb, "\\|");
    else if (*ch == '`') dbk_strbuf_appendf(sb, "'");
    else if ((unsigned char)*ch >= 0x20 || *ch == '\t') dbk_strbuf_appendf(sb, "%.*s", len, ch);
}

/* report.html's renderer reads the same backslash escapes, so a name shows as it is in both. */
static void md_char(dbk_strbuf *sb, const char *ch, int len) {
    if (*ch == '\\' || *ch == '`' || *ch == '*' || *ch == '<' || *ch == '>' || *ch == '&')
        dbk_strbuf_appendf(sb, "\\%c", *ch);
    else md_code_char(sb, ch, len);
}

void dbk_report_xml_text(dbk_strbuf *sb, const char *s) { append_escaped(sb, s, xml_char); }
void dbk_report_md_code(dbk_strbuf *sb, const char *s) { append_escaped(sb, s, md_code_char); }
void dbk_report_md_cell(dbk_strbuf *sb, const char *s) { append_escaped(sb, s, md_char); }
