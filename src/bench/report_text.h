/*
 * report_text.h — strings from result files (run folders, device and recipe names, masks,
 * exchanges) written safely into the report's Markdown and SVG: every section of the report
 * goes through these, since a result.json is input the report does not trust.
 */
#ifndef DBK_REPORT_TEXT_H
#define DBK_REPORT_TEXT_H

#include "core/fileio.h"

/* XML text: the five special characters as entities, control characters other than tab
 * dropped, invalid UTF-8 bytes replaced by U+FFFD. */
void dbk_report_xml_text(dbk_strbuf *sb, const char *s);

/* Inside a Markdown code span (`...`): pipes escaped (tables split on them even there), a
 * backtick (which would end the span) written as an apostrophe, control characters dropped. */
void dbk_report_md_code(dbk_strbuf *sb, const char *s);

/* A Markdown table cell outside a code span: also backslashes, backticks, asterisks and <, >, &
 * escaped with a backslash, so no escape, span, emphasis or raw HTML starts there. */
void dbk_report_md_cell(dbk_strbuf *sb, const char *s);

#endif
