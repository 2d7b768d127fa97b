/*
 * report_html.c — report.html: the report's Markdown (report.c) as one self-contained page
 * (see report.h). Every table, list and paragraph of report.md is rendered from its text, so
 * the page holds every figure of report.md; each chart, an image line `![alt](NAME.svg)` of
 * the Markdown, is the SVG file report.c has just written into the same folder, inlined.
 *
 * The Markdown is daybreak's own, so only what report.c writes is read: "# " headings, pipe
 * tables (a header row, a |---| row, body rows; `\|` is a pipe inside a cell), "- " list items,
 * image lines and paragraphs, with inline `code` (literal, `\|` a pipe as in GitHub's tables),
 * **bold** and backslash escapes. Every character of the text is escaped for HTML, so no string
 * of a result folder (device names, paths) can add markup. The page has inline CSS, no script,
 * and no reference outside itself.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench/report.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"

static const char page_css[] =
    "body{font-family:'DejaVu Sans',Arial,sans-serif;color:#222;margin:0;background:#fafafa}"
    "main{max-width:1400px;margin:0 auto;padding:16px 24px;background:white}"
    "h1{font-size:26px;margin:8px 0 12px}h2{font-size:20px;margin:28px 0 10px;border-bottom:1px solid #ddd}"
    "p,li{font-size:14px;line-height:1.45}code{font-family:'DejaVu Sans Mono',monospace;font-size:12px;"
    "background:#f2f2f2;padding:0 3px}"
    ".table-wrap{overflow-x:auto}table{border-collapse:collapse;font-size:13px;margin:6px 0}"
    "th,td{border:1px solid #ccc;padding:4px 7px;text-align:left;vertical-align:top}"
    "th{background:#eef2f7}tbody tr:nth-child(even){background:#f8f8f8}"
    "figure{margin:12px 0}figure svg{max-width:100%;height:auto}figcaption{font-size:13px;color:#555}";

static void html_char(dbk_strbuf *out, char c) {
    switch (c) {
    case '&': dbk_strbuf_appendf(out, "&amp;"); break;
    case '<': dbk_strbuf_appendf(out, "&lt;"); break;
    case '>': dbk_strbuf_appendf(out, "&gt;"); break;
    case '"': dbk_strbuf_appendf(out, "&quot;"); break;
    case '\'': dbk_strbuf_appendf(out, "&#39;"); break;
    default: dbk_strbuf_appendf(out, "%c", c);
    }
}

/* Inline text of n bytes: code spans, bold, backslash escapes; everything else escaped. */
static void inline_text(dbk_strbuf *out, const char *s, size_t n) {
    bool bold = false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n && ispunct((unsigned char)s[i + 1])) {
            html_char(out, s[++i]);
        } else if (s[i] == '`') {
            const char *close = memchr(s + i + 1, '`', n - i - 1);
            if (!close) {
                html_char(out, '`');
                continue;
            }
            dbk_strbuf_appendf(out, "<code>");
            for (size_t k = i + 1; s + k < close; k++) {
                if (s[k] == '\\' && s + k + 1 < close && s[k + 1] == '|') k++;
                html_char(out, s[k]);
            }
            dbk_strbuf_appendf(out, "</code>");
            i = (size_t)(close - s);
        } else if (s[i] == '*' && i + 1 < n && s[i + 1] == '*') {
            dbk_strbuf_appendf(out, bold ? "</strong>" : "<strong>");
            bold = !bold;
            i++;
        } else html_char(out, s[i]);
    }
    if (bold) dbk_strbuf_appendf(out, "</strong>");
}

/* The cells of a table row "| a | b |": the text between pipes not escaped by a backslash. */
static void table_row(dbk_strbuf *out, const char *line, size_t n, const char *tag) {
    dbk_strbuf_appendf(out, "<tr>");
    size_t start = 1;   /* after the leading pipe */
    for (size_t i = 1; i < n; i++) {
        if (line[i] != '|' || line[i - 1] == '\\') continue;
        size_t a = start, b = i;
        while (a < b && line[a] == ' ') a++;
        while (b > a && line[b - 1] == ' ') b--;
        dbk_strbuf_appendf(out, "<%s>", tag);
        inline_text(out, line + a, b - a);
        dbk_strbuf_appendf(out, "</%s>", tag);
        start = i + 1;
    }
    dbk_strbuf_appendf(out, "</tr>\n");
}

static bool is_separator_row(const char *line, size_t n) {
    if (n < 3 || line[0] != '|') return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("|-: ", line[i])) return false;
    return true;
}

/* "![alt](name.svg)": the SVG file of dir inlined (its XML declaration dropped). */
static dbk_status inline_chart(dbk_strbuf *out, const char *line, size_t n, const char *dir) {
    const char *close_alt = memchr(line, ']', n);
    const char *name = close_alt && close_alt[1] == '(' ? close_alt + 2 : NULL;
    const size_t name_len = name ? (size_t)(line + n - 1 - name) : 0;
    if (!name || name_len == 0 || name_len > 200 || memchr(name, '/', name_len))
        return dbk_set_error(DBK_ERR_FORMAT, "report.html: bad chart line '%.*s'", (int)n, line);
    char path[4400];
    snprintf(path, sizeof path, "%s/%.*s", dir, (int)name_len, name);
    void *svg;
    size_t len;
    DBK_TRY(dbk_file_read_all(path, &svg, &len));
    const char *text = svg, *start = strstr(text, "<svg");
    dbk_strbuf_appendf(out, "<figure>\n%s", start ? start : "");
    dbk_strbuf_appendf(out, "<figcaption>");
    inline_text(out, line + 2, (size_t)(close_alt - line - 2));
    dbk_strbuf_appendf(out, " (%.*s)</figcaption>\n</figure>\n", (int)name_len, name);
    dbk_free(svg);
    return start ? DBK_OK : dbk_set_error(DBK_ERR_FORMAT, "%s holds no <svg> element", path);
}

typedef enum block { BLOCK_NONE, BLOCK_PARAGRAPH, BLOCK_LIST, BLOCK_TABLE } block;

static void close_block(dbk_strbuf *out, block *b) {
    static const char *const closing[] = {"", "</p>\n", "</ul>\n", "</tbody></table></div>\n"};
    dbk_strbuf_appendf(out, "%s", closing[*b]);
    *b = BLOCK_NONE;
}

dbk_status dbk_report_html_write(const char *markdown, const char *dir, const char *path) {
    dbk_strbuf out;
    dbk_strbuf_init(&out);
    dbk_strbuf_appendf(&out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                             "<title>daybreak report</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n",
                       page_css);
    block b = BLOCK_NONE;
    dbk_status st = DBK_OK;
    for (const char *line = markdown; *line && st == DBK_OK;) {
        size_t n = strcspn(line, "\n");
        const char *next = line + n + (line[n] == '\n');
        int level = 0;
        while (level < (int)n && line[level] == '#') level++;
        if (n == 0) close_block(&out, &b);
        else if (level >= 1 && level <= 3 && line[level] == ' ') {
            close_block(&out, &b);
            dbk_strbuf_appendf(&out, "<h%d>", level);
            inline_text(&out, line + level + 1, n - (size_t)level - 1);
            dbk_strbuf_appendf(&out, "</h%d>\n", level);
        } else if (line[0] == '|') {
            if (b != BLOCK_TABLE) { /* a header row, then its |---| row */
                close_block(&out, &b);
                dbk_strbuf_appendf(&out, "<div class=\"table-wrap\"><table>\n<thead>");
                table_row(&out, line, n, "th");
                dbk_strbuf_appendf(&out, "</thead>\n<tbody>\n");
                b = BLOCK_TABLE;
                size_t m = strcspn(next, "\n");
                if (is_separator_row(next, m)) next += m + (next[m] == '\n');
            } else table_row(&out, line, n, "td");
        } else if (line[0] == '-' && line[1] == ' ') {
            if (b != BLOCK_LIST) {
                close_block(&out, &b);
                dbk_strbuf_appendf(&out, "<ul>\n");
                b = BLOCK_LIST;
            }
            dbk_strbuf_appendf(&out, "<li>");
            inline_text(&out, line + 2, n - 2);
            dbk_strbuf_appendf(&out, "</li>\n");
        } else if (line[0] == '!' && line[1] == '[' && line[n - 1] == ')') {
            close_block(&out, &b);
            st = inline_chart(&out, line, n, dir);
        } else {
            if (b != BLOCK_PARAGRAPH) {
                close_block(&out, &b);
                dbk_strbuf_appendf(&out, "<p>");
                b = BLOCK_PARAGRAPH;
            } else dbk_strbuf_appendf(&out, "\n");
            inline_text(&out, line, n);
        }
        line = next;
    }
    close_block(&out, &b);
    dbk_strbuf_appendf(&out, "</main>\n</body>\n</html>\n");
    if (st == DBK_OK) st = dbk_strbuf_write_file(&out, path);
    dbk_strbuf_deinit(&out);
    return st;
}
