/*
 * report.h — `daybreak report`: a Markdown report and self-contained SVG charts from result
 * folders (bench/runs.h), written into one output folder.
 *
 *   report.md            devices, profiles and where each price comes from; time, epochs, cost
 *                        and energy to the target per group (median, olympic mean, CV, fraction
 *                        reached) and the fixed-schedule accuracy; the energy readings; the
 *                        threshold sweep;
 *                        utilisation; every run with its seed, device, driver, backend,
 *                        recipe and daybreak version; the charts below
 *   accuracy.svg         test accuracy against clock time, one curve per run, one colour per
 *                        group, the targets as dashed lines
 *   time_to_target.svg   median time to the target per group as bars, whiskers from the
 *                        fastest to the slowest converged run, "k/n reached" under each bar
 *   cost_to_target.svg   the same in USD, only for groups whose profile has a price (absent
 *                        when none has)
 *   report.html          (unless --no-html) report.md as one self-contained web page: the same
 *                        tables and text, the charts inline, no script, no external reference
 *   roofline-N.svg       group N's profiled ops (runs made with --profile): achieved GFLOP/s
 *                        against arithmetic intensity (FLOP/byte), log-log, under the roof
 *                        min(peak, bandwidth x intensity) of its profile (absent without
 *                        profiled runs)
 *
 * SVGs are hand-written, well-formed XML with no scripts, fonts or external references; each
 * series element carries class="series" and a data-series attribute naming it.
 */
#ifndef DBK_REPORT_H
#define DBK_REPORT_H

#include "bench/runs.h"

/* Writes the files above into out_dir (created if missing), each atomically, and with html
 * report.html too (report_html.c). sources are the folders the runs came from (listed in the
 * report). */
dbk_status dbk_report_write(const dbk_run_set *set, const dbk_run_group *groups, int ngroups, const char *out_dir,
                            const char *const *sources, int nsources, bool html);

/* report.html at path: the report's Markdown rendered as one self-contained page (inline CSS,
 * the charts of dir inlined as SVG, no script, no reference outside it), every character of the
 * text escaped. The Markdown is report.c's own (the subset it writes: headings, pipe tables,
 * lists, image lines, paragraphs). Written atomically. */
dbk_status dbk_report_html_write(const char *markdown, const char *dir, const char *path);

#endif
