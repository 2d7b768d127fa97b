/* report.c — Markdown report and hand-written SVG charts (see report.h). */
#define _POSIX_C_SOURCE 200809L
#include "bench/report.h"
#include "bench/report_dist.h"
#include "bench/report_sparse.h"
#include "bench/report_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/utf8.h"
#include "train/results.h"

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                      "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
#define PALETTE_SIZE ((int)(sizeof palette / sizeof palette[0]))

/* ---------------------------------------------------------------------------------- */
/* SVG pieces                                                                          */

/* snprintf for chart labels, cut between characters when the buffer is too small. */
static void label_printf(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void label_printf(char *out, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    dbk_utf8_trim_partial(out);
}

/* Writes the text as valid UTF-8 (every user string went through xml_text or md_cell; this
 * also covers the ones printed as they are, such as profile ids). */
static dbk_status write_utf8(const dbk_strbuf *sb, const char *path) {
    if (sb->status != DBK_OK) return sb->status;
    dbk_strbuf clean;
    dbk_strbuf_init(&clean);
    dbk_utf8_append_sanitized(&clean, dbk_strbuf_str(sb), sb->len);
    dbk_status st = dbk_strbuf_write_file(&clean, path);
    dbk_strbuf_deinit(&clean);
    return st;
}

typedef struct plot {
    double x0, x1, y0, y1;           /* data range */
    bool   logx, logy;
    int    left, top, width, height; /* plot area in pixels */
} plot;

static double tx(const plot *p, double x) {
    double f = p->logx ? (log10(x) - log10(p->x0)) / (log10(p->x1) - log10(p->x0)) : (x - p->x0) / (p->x1 - p->x0);
    return p->left + f * p->width;
}

static double ty(const plot *p, double y) {
    double f = p->logy ? (log10(y) - log10(p->y0)) / (log10(p->y1) - log10(p->y0)) : (y - p->y0) / (p->y1 - p->y0);
    return p->top + p->height - f * p->height;
}

static void svg_begin(dbk_strbuf *sb, int w, int h, const char *title) {
    dbk_strbuf_appendf(sb,
                       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                       "font-family=\"sans-serif\" font-size=\"12\">\n<title>",
                       w, h, w, h);
    dbk_report_xml_text(sb, title);
    dbk_strbuf_appendf(sb, "</title>\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
                           "<text x=\"%d\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">",
                       w, h, w / 2);
    dbk_report_xml_text(sb, title);
    dbk_strbuf_appendf(sb, "</text>\n");
}

static void svg_text(dbk_strbuf *sb, double x, double y, const char *anchor, const char *extra, const char *text) {
    dbk_strbuf_appendf(sb, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s>", x, y, anchor, extra ? " " : "",
                       extra ? extra : "");
    dbk_report_xml_text(sb, text);
    dbk_strbuf_appendf(sb, "</text>\n");
}

/* A "nice" tick step (1, 2 or 5 x 10^k) giving about n ticks over the range. */
static double nice_step(double range, int n) {
    double raw = range / n, mag = pow(10.0, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * mag;
}

static void fmt_tick(char *out, size_t cap, double v) {
    if (fabs(v) >= 1e5 || (fabs(v) < 1e-4 && v != 0.0)) snprintf(out, cap, "%.0e", v);
    else snprintf(out, cap, "%g", v);
}

/* Frame, grid, ticks and axis titles. */
static void svg_axes(dbk_strbuf *sb, const plot *p, const char *xlabel, const char *ylabel) {
    char t[32];
    dbk_strbuf_appendf(sb, "<g class=\"axes\" stroke=\"#999\" fill=\"none\">\n");
    dbk_strbuf_appendf(sb, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", p->left, p->top, p->width,
                       p->height);
    dbk_strbuf_appendf(sb, "</g>\n");
    for (int axis = 0; axis < 2; axis++) {
        bool logaxis = axis ? p->logy : p->logx;
        double lo = axis ? p->y0 : p->x0, hi = axis ? p->y1 : p->x1;
        double v, step = logaxis ? 0.0 : nice_step(hi - lo, axis ? 6 : 8);
        double start = logaxis ? pow(10.0, ceil(log10(lo) - 1e-9)) : ceil(lo / step - 1e-9) * step;
        for (v = start; v <= hi * (1 + 1e-9) + (logaxis ? 0 : 1e-12); v = logaxis ? v * 10.0 : v + step) {
            fmt_tick(t, sizeof t, fabs(v) < step * 1e-9 ? 0.0 : v);
            if (axis) {
                double y = ty(p, v);
                dbk_strbuf_appendf(sb, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n",
                                   p->left, y, p->left + p->width, y);
                svg_text(sb, p->left - 6, y + 4, "end", NULL, t);
            } else {
                double x = tx(p, v);
                dbk_strbuf_appendf(sb, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e5e5e5\"/>\n", x,
                                   p->top, x, p->top + p->height);
                svg_text(sb, x, p->top + p->height + 16, "middle", NULL, t);
            }
        }
    }
    svg_text(sb, p->left + p->width / 2.0, p->top + p->height + 36, "middle", NULL, xlabel);
    char rot[96];
    snprintf(rot, sizeof rot, "transform=\"rotate(-90 %d %d)\"", 16, p->top + p->height / 2);
    svg_text(sb, 16, p->top + p->height / 2.0, "middle", rot, ylabel);
}

static void svg_legend(dbk_strbuf *sb, int x, int y, const char *const *labels, int n) {
    for (int i = 0; i < n; i++) {
        dbk_strbuf_appendf(sb, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", x, y + 18 * i,
                           palette[i % PALETTE_SIZE]);
        svg_text(sb, x + 18, y + 18 * i + 10, "start", NULL, labels[i]);
    }
}

static dbk_status svg_write(dbk_strbuf *sb, const char *dir, const char *name) {
    char path[4200];
    dbk_strbuf_appendf(sb, "</svg>\n");
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return write_utf8(sb, path);
}

/* ---------------------------------------------------------------------------------- */
/* charts                                                                              */

static dbk_status chart_accuracy(const dbk_run_set *set, const dbk_run_group *groups, int ng, const char *dir) {
    double xmax = 0.0, ymin = 100.0;
    for (int i = 0; i < set->count; i++)
        for (int e = 0; e < set->runs[i].epochs; e++) {
            if (set->runs[i].clock[e] > xmax) xmax = set->runs[i].clock[e];
            if (set->runs[i].accuracy[e] < ymin) ymin = set->runs[i].accuracy[e];
        }
    for (int g = 0; g < ng; g++)
        if (groups[g].first->target < ymin) ymin = groups[g].first->target;
    const int legend_h = 18 * ng;
    plot p = {.x0 = 0.0, .x1 = xmax > 0 ? xmax * 1.05 : 1.0, .y0 = floor(ymin / 10.0) * 10.0, .y1 = 100.0,
              .left = 70, .top = 40, .width = 640, .height = 360};
    if (p.y0 >= p.y1) p.y0 = p.y1 - 10.0;
    dbk_strbuf sb;
    dbk_strbuf_init(&sb);
    svg_begin(&sb, 800, 460 + legend_h, "Test accuracy against time on the clock (one curve per run)");
    svg_axes(&sb, &p, "clock time (s)", "test top-1 accuracy (%)");
    for (int g = 0; g < ng; g++) {
        const char *colour = palette[g % PALETTE_SIZE];
        double y = ty(&p, groups[g].first->target);
        dbk_strbuf_appendf(&sb,
                           "<line class=\"target\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
                           "stroke-dasharray=\"6 4\"/>\n",
                           p.left, y, p.left + p.width, y, colour);
        for (int m = 0; m < groups[g].count; m++) {
            const dbk_run *r = &set->runs[groups[g].members[m]];
            char name[512];
            label_printf(name, sizeof name, "%s · %s · seed %llu", r->backend, r->device, (unsigned long long)r->seed);
            dbk_strbuf_appendf(&sb, "<polyline class=\"series\" data-series=\"");
            dbk_report_xml_text(&sb, name);
            dbk_strbuf_appendf(&sb, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", colour);
            for (int e = 0; e < r->epochs; e++)
                dbk_strbuf_appendf(&sb, "%s%.1f,%.1f", e ? " " : "", tx(&p, r->clock[e]), ty(&p, r->accuracy[e]));
            dbk_strbuf_appendf(&sb, "\"/>\n");
            for (int e = 0; e < r->epochs; e++)
                dbk_strbuf_appendf(&sb, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", tx(&p, r->clock[e]),
                                   ty(&p, r->accuracy[e]), colour);
        }
    }
    const char *labels[64];
    char label_buf[64][512];
    int nl = ng < 64 ? ng : 64;
    for (int g = 0; g < nl; g++) {
        char base[400];
        dbk_run_group_label(&groups[g], base, sizeof base);
        label_printf(label_buf[g], sizeof label_buf[g], "%s (%d run%s, clock %s, target %.4g%% dashed)", base,
                 groups[g].count, groups[g].count == 1 ? "" : "s", groups[g].first->clock_mode, groups[g].first->target);
        labels[g] = label_buf[g];
    }
    svg_legend(&sb, p.left, p.top + p.height + 50, labels, nl);
    dbk_status st = svg_write(&sb, dir, "accuracy.svg");
    dbk_strbuf_deinit(&sb);
    return st;
}

/* Bars of a per-group statistic (seconds or USD to the target) with min..max whiskers. */
static dbk_status chart_bars(const dbk_run_set *set, const dbk_run_group *groups, int ng, bool cost, const char *dir,
                             const char *name) {
    double ymax = 0.0;
    int shown = 0;
    for (int g = 0; g < ng; g++) {
        const dbk_stats *s = cost ? &groups[g].cost : &groups[g].seconds;
        if (cost && !groups[g].priced) continue;
        shown++;
        if (isfinite(s->max) && s->max > ymax) ymax = s->max;
        if (isfinite(s->median) && s->median > ymax) ymax = s->median;
    }
    const int bar_w = 70, gap = 50;
    int width = 140 + shown * (bar_w + gap);
    if (width < 640) width = 640;
    plot p = {.x0 = 0, .x1 = 1, .y0 = 0.0, .y1 = ymax > 0 ? ymax * 1.15 : 1.0, .left = 80, .top = 50,
              .width = width - 120, .height = 320};
    dbk_strbuf sb;
    dbk_strbuf_init(&sb);
    svg_begin(&sb, width, 470 + 18 * shown, cost ? "Cost to target (USD)" : "Time to target (seconds on the clock)");
    svg_text(&sb, width / 2.0, 36, "middle", "font-size=\"11\" fill=\"#555\"",
             "bar: median of all runs; whisker: fastest..slowest converged run; dots: each converged run");
    dbk_strbuf_appendf(&sb, "<g class=\"axes\" stroke=\"#999\" fill=\"none\"><rect x=\"%d\" y=\"%d\" width=\"%d\" "
                            "height=\"%d\"/></g>\n",
                       p.left, p.top, p.width, p.height);
    double step = nice_step(p.y1 - p.y0, 6);
    char t[32];
    for (double v = 0.0; v <= p.y1 * (1 + 1e-9); v += step) {
        fmt_tick(t, sizeof t, v);
        dbk_strbuf_appendf(&sb, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", p.left,
                           ty(&p, v), p.left + p.width, ty(&p, v));
        svg_text(&sb, p.left - 6, ty(&p, v) + 4, "end", NULL, t);
    }
    char rot[96];
    snprintf(rot, sizeof rot, "transform=\"rotate(-90 %d %d)\"", 18, p.top + p.height / 2);
    svg_text(&sb, 18, p.top + p.height / 2.0, "middle", rot, cost ? "USD to target" : "seconds to target");

    const char *labels[64];
    char label_buf[64][512];
    int k = 0;
    for (int g = 0; g < ng && k < 64; g++) {
        if (cost && !groups[g].priced) continue;
        const dbk_stats *s = cost ? &groups[g].cost : &groups[g].seconds;
        const char *colour = palette[g % PALETTE_SIZE];
        double x = p.left + gap / 2.0 + k * (bar_w + gap), mid = x + bar_w / 2.0;
        char base[400], text[128];
        dbk_run_group_label(&groups[g], base, sizeof base);
        if (isfinite(s->median)) {
            double y = ty(&p, s->median);
            dbk_strbuf_appendf(&sb, "<rect class=\"series\" data-series=\"");
            dbk_report_xml_text(&sb, base);
            dbk_strbuf_appendf(&sb, "\" x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\"/>\n", x, y,
                               bar_w, p.top + p.height - y, colour);
            if (isfinite(s->min) && isfinite(s->max) && s->converged > 1) {
                double y0 = ty(&p, s->min), y1 = ty(&p, s->max);
                dbk_strbuf_appendf(&sb,
                                   "<path class=\"spread\" d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" "
                                   "stroke=\"black\" stroke-width=\"1.5\" fill=\"none\"/>\n",
                                   mid, y0, y1, mid - 8, y0, mid + 8, mid - 8, y1, mid + 8);
            }
            snprintf(text, sizeof text, cost ? "%.3g" : "%.1f", s->median);
            svg_text(&sb, mid + bar_w / 2.0 + 2, y + 4, "start", NULL, text);
        } else {
            dbk_strbuf_appendf(&sb, "<g class=\"series\" data-series=\"");
            dbk_report_xml_text(&sb, base);
            dbk_strbuf_appendf(&sb, "\">");
            svg_text(&sb, mid, p.top + p.height - 8, "middle", NULL, "not reached");
            dbk_strbuf_appendf(&sb, "</g>\n");
        }
        for (int m = 0; m < groups[g].count; m++) {
            const dbk_run *r = &set->runs[groups[g].members[m]];
            double v = cost ? r->seconds_to_target / 3600.0 * r->price_per_hour : r->seconds_to_target;
            if (!isfinite(v)) continue;
            dbk_strbuf_appendf(&sb, "<circle class=\"run\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"black\" "
                                    "fill-opacity=\"0.6\"/>\n",
                               x + bar_w * (0.25 + 0.5 * (m + 0.5) / groups[g].count), ty(&p, v));
        }
        snprintf(text, sizeof text, "%d/%d reached", s->converged, s->n);
        svg_text(&sb, mid, p.top + p.height + 16, "middle", NULL, text);
        label_printf(label_buf[k], sizeof label_buf[k], "%s (clock %s)", base, groups[g].first->clock_mode);
        labels[k] = label_buf[k];
        k++;
    }
    /* legend colours follow the group index, so draw it entry by entry */
    for (int g = 0, i = 0; g < ng && i < k; g++) {
        if (cost && !groups[g].priced) continue;
        int y = p.top + p.height + 40 + 18 * i;
        dbk_strbuf_appendf(&sb, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>\n", p.left, y,
                           palette[g % PALETTE_SIZE]);
        svg_text(&sb, p.left + 18, y + 10, "start", NULL, labels[i]);
        i++;
    }
    dbk_status st = svg_write(&sb, dir, name);
    dbk_strbuf_deinit(&sb);
    return st;
}

static const char *op_family(const char *op) {
    if (!strncmp(op, "conv2d", 6)) return "convolution";
    if (!strcmp(op, "gemm")) return "gemm";
    if (!strncmp(op, "batchnorm", 9)) return "batch norm";
    return "other";
}

static dbk_status chart_roofline(const dbk_run *r, const dbk_run_group *g, int index, const char *dir, bool *written) {
    *written = false;
    double imin = HUGE_VAL, imax = 0.0, gmin = HUGE_VAL, gmax = 0.0;
    for (int i = 0; i < r->op_count; i++) {
        const dbk_run_op *op = &r->ops[i];
        if (op->flops <= 0 || op->bytes <= 0 || op->seconds <= 0) continue;
        double in = op->flops / op->bytes, gf = op->flops / op->seconds * 1e-9;
        imin = fmin(imin, in);
        imax = fmax(imax, in);
        gmin = fmin(gmin, gf);
        gmax = fmax(gmax, gf);
    }
    if (imax <= 0) return DBK_OK; /* nothing measurable */
    double peak = r->peak_gflops, bw = r->bandwidth_gbs;
    if (peak > 0) gmax = fmax(gmax, peak);
    plot p = {.x0 = pow(10.0, floor(log10(imin))), .x1 = pow(10.0, ceil(log10(imax) + 1e-9)),
              .y0 = pow(10.0, floor(log10(gmin))), .y1 = pow(10.0, ceil(log10(gmax) + 1e-9)), .logx = true,
              .logy = true, .left = 80, .top = 40, .width = 600, .height = 380};
    if (p.x1 <= p.x0) p.x1 = p.x0 * 10.0;
    if (p.y1 <= p.y0) p.y1 = p.y0 * 10.0;
    char title[512], base[400], file[64];
    dbk_run_group_label(g, base, sizeof base);
    label_printf(title, sizeof title, "Roofline: %s (profile %s)", base, r->platform_id);
    dbk_strbuf sb;
    dbk_strbuf_init(&sb);
    svg_begin(&sb, 780, 520, title);
    svg_axes(&sb, &p, "arithmetic intensity (FLOP/byte)", "achieved GFLOP/s");
    if (peak > 0 && bw > 0) {
        /* roof: bandwidth slope up to the ridge point, then flat at peak */
        double ridge = peak / bw, xa = p.x0, xb = fmin(fmax(ridge, p.x0), p.x1);
        dbk_strbuf_appendf(&sb, "<polyline class=\"roof\" fill=\"none\" stroke=\"black\" stroke-width=\"2\" points=\"");
        double ya = fmax(bw * xa, p.y0), yb = fmin(bw * xb, peak);
        dbk_strbuf_appendf(&sb, "%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n", tx(&p, xa), ty(&p, fmin(ya, p.y1)), tx(&p, xb),
                           ty(&p, fmin(yb, p.y1)), tx(&p, p.x1), ty(&p, fmin(peak, p.y1)));
        char t[128];
        snprintf(t, sizeof t, "peak %.0f GFLOP/s, %.1f GB/s (%s)", peak, bw,
                 strncmp(r->bandwidth_source, "measured", 8) ? "estimate" : "measured");
        svg_text(&sb, p.left + p.width - 4, ty(&p, fmin(peak, p.y1)) - 6, "end", NULL, t);
    } else {
        svg_text(&sb, p.left + p.width / 2.0, p.top + 16, "middle", NULL,
                 "no peak or bandwidth in this profile: no roof drawn");
    }
    const char *families[] = {"convolution", "gemm", "batch norm", "other"};
    for (int f = 0; f < 4; f++) {
        dbk_strbuf_appendf(&sb, "<g class=\"series\" data-series=\"%s\" fill=\"%s\">\n", families[f], palette[f]);
        for (int i = 0; i < r->op_count; i++) {
            const dbk_run_op *op = &r->ops[i];
            if (op->flops <= 0 || op->bytes <= 0 || op->seconds <= 0 || strcmp(op_family(op->op), families[f])) continue;
            double in = op->flops / op->bytes, gf = op->flops / op->seconds * 1e-9;
            dbk_strbuf_appendf(&sb, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>", tx(&p, in), ty(&p, gf));
            char tip[160];
            label_printf(tip, sizeof tip, "%s (%s%s%s): %.2f FLOP/byte, %.1f GFLOP/s", op->label, op->op,
                         op->algorithm[0] ? " as " : "", op->algorithm, in, gf);
            dbk_report_xml_text(&sb, tip);
            dbk_strbuf_appendf(&sb, "</title></circle>\n");
        }
        dbk_strbuf_appendf(&sb, "</g>\n");
    }
    svg_legend(&sb, p.left + 10, p.top + 10, families, 4);
    snprintf(file, sizeof file, "roofline-%d.svg", index);
    dbk_status st = svg_write(&sb, dir, file);
    dbk_strbuf_deinit(&sb);
    *written = st == DBK_OK;
    return st;
}

/* ---------------------------------------------------------------------------------- */
/* Markdown                                                                            */

static void md_seconds(dbk_strbuf *sb, double s) {
    if (isfinite(s)) dbk_strbuf_appendf(sb, "%.1f s", s);
    else dbk_strbuf_appendf(sb, "not reached");
}

static void md_seeds(dbk_strbuf *sb, const dbk_run_set *set, const dbk_run_group *g) {
    for (int i = 0; i < g->count; i++)
        dbk_strbuf_appendf(sb, "%s%llu", i ? ", " : "", (unsigned long long)set->runs[g->members[i]].seed);
}

static void md_versions(dbk_strbuf *sb, const dbk_run_set *set, const dbk_run_group *g) {
    const char *seen[16];
    int n = 0;
    for (int i = 0; i < g->count && n < 16; i++) {
        const char *v = set->runs[g->members[i]].version;
        bool dup = false;
        for (int k = 0; k < n; k++) dup = dup || !strcmp(seen[k], v);
        if (!dup) {
            dbk_strbuf_appendf(sb, "%s", n ? ", " : "");
            dbk_report_md_cell(sb, v);
            seen[n++] = v;
        }
    }
}

static void md_group_id(dbk_strbuf *sb, const dbk_run_group *g, int index) {
    dbk_strbuf_appendf(sb, "| %d | ", index + 1);
    dbk_report_md_cell(sb, g->first->device);
    dbk_strbuf_appendf(sb, " | ");
    dbk_report_md_cell(sb, g->first->backend);
    dbk_strbuf_appendf(sb, " | ");
    dbk_report_md_cell(sb, g->first->driver);
    dbk_strbuf_appendf(sb, " | ");
    dbk_report_md_cell(sb, g->first->recipe);
    dbk_strbuf_appendf(sb, " | ");
}

/* What a roofline's reader needs to trust it: where the memory roof comes from, which ops ran an
 * algorithm whose FLOPs are counted as the direct convolution's (so they may sit above the FMA
 * peak), and how much of a step was spent outside the ops. */
static void roofline_notes(dbk_strbuf *sb, const dbk_run_set *set, const dbk_run_group *g) {
    const dbk_run *r = NULL;
    for (int m = 0; m < g->count && !r; m++)
        if (set->runs[g->members[m]].op_count > 0) r = &set->runs[g->members[m]];
    if (!r) return;
    if (r->bandwidth_gbs > 0 && strncmp(r->bandwidth_source, "measured", 8))
        dbk_strbuf_appendf(sb, "- Memory roof %.1f GB/s: an estimate in the device profile, not a measurement "
                               "(`daybreak tune` measures it).\n", r->bandwidth_gbs);
    else if (r->bandwidth_gbs > 0) {
        dbk_strbuf_appendf(sb, "- Memory roof %.1f GB/s: ", r->bandwidth_gbs);
        dbk_report_md_cell(sb, r->bandwidth_source);
        dbk_strbuf_appendf(sb, ".\n");
    }
    const char *algos[4];   /* the algorithms other than the ops' plain ones, and their op counts */
    int counts[4], distinct = 0;
    double ops = 0.0;
    for (int i = 0; i < r->op_count; i++) {
        ops += r->ops[i].seconds;
        if (!r->ops[i].algorithm[0]) continue;
        int j = 0;
        while (j < distinct && strcmp(algos[j], r->ops[i].algorithm)) j++;
        if (j == distinct && distinct < 4) {
            algos[distinct] = r->ops[i].algorithm;
            counts[distinct++] = 0;
        }
        if (j < distinct) counts[j]++;
    }
    for (int j = 0; j < distinct; j++) {
        dbk_strbuf_appendf(sb, "- %d op%s ran as ", counts[j], counts[j] == 1 ? "" : "s");
        dbk_report_md_cell(sb, algos[j]);
        dbk_strbuf_appendf(sb, ": their GFLOP are the direct convolution's (2*N*K*C*R*S*P*Q), and Winograd does %gx "
                               "fewer multiply-adds, so they can sit above the FMA peak.\n",
                           dbk_algorithm_multiply_add_saving(algos[j]));
    }
    if (r->profiled_step_seconds > 0)
        dbk_strbuf_appendf(sb, "- Time outside the ops: %.3f ms of a %.3f ms step (%.1f%%).\n",
                           1e3 * (r->profiled_step_seconds - ops), 1e3 * r->profiled_step_seconds,
                           100.0 * (r->profiled_step_seconds - ops) / r->profiled_step_seconds);
    dbk_strbuf_appendf(sb, "\n");
}

/* airbench's metric per group: the accuracy after the whole schedule and its clock time, over
 * the runs that completed it (a run stopped at its target has none). */
static void md_fixed_schedule(dbk_strbuf *sb, const dbk_run_set *set, const dbk_run_group *groups, int ng) {
    dbk_strbuf_appendf(sb, "\n## Fixed schedule\n\nThe test accuracy after the recipe's whole schedule (a fixed-budget "
                           "recipe's final evaluation) and the clock time at its end, airbench's metric, over the runs "
                           "that completed their schedule (a run stopped at its target has none: `--all-epochs`).\n\n"
                           "| group | device | backend | driver | recipe | completed | mean accuracy | sd | min | max | "
                           "median time | seeds | daybreak |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int g = 0; g < ng; g++) {
        const dbk_run_group *gr = &groups[g];
        const dbk_stats *a = &gr->schedule_accuracy;
        md_group_id(sb, gr, g);
        dbk_strbuf_appendf(sb, "%d of %d | ", a->n, gr->count);
        if (a->n > 0) {
            dbk_strbuf_appendf(sb, "%.2f%% | ", a->mean);
            if (isfinite(a->stddev)) dbk_strbuf_appendf(sb, "%.2f | ", a->stddev);
            else dbk_strbuf_appendf(sb, "n/a | ");
            dbk_strbuf_appendf(sb, "%.2f%% | %.2f%% | ", a->min, a->max);
            md_seconds(sb, gr->schedule_seconds.median);
            dbk_strbuf_appendf(sb, " | ");
        } else dbk_strbuf_appendf(sb, "n/a | n/a | n/a | n/a | n/a | ");
        md_seeds(sb, set, gr);
        dbk_strbuf_appendf(sb, " | ");
        md_versions(sb, set, gr);
        dbk_strbuf_appendf(sb, " |\n");
    }
}

/* A group's median energy to the target: joules, kWh, and USD where a price per kWh is known. */
static void md_energy(dbk_strbuf *sb, const dbk_run_group *g) {
    if (!g->energy_measured) dbk_strbuf_appendf(sb, "not measured | ");
    else if (!isfinite(g->joules.median)) dbk_strbuf_appendf(sb, "not reached | ");
    else {
        dbk_strbuf_appendf(sb, "%.1f J (%.4g kWh", g->joules.median, g->joules.median / DBK_JOULES_PER_KWH);
        if (g->energy_priced && isfinite(g->energy_cost.median))
            dbk_strbuf_appendf(sb, ", USD %.3g", g->energy_cost.median);
        dbk_strbuf_appendf(sb, ") | ");
    }
}

static void md_schedule_accuracy(dbk_strbuf *sb, const dbk_run_group *g) {
    const dbk_stats *a = &g->schedule_accuracy;   /* over the runs that completed their schedule */
    if (a->n > 0) dbk_strbuf_appendf(sb, "%.2f%% (%d run%s) | ", a->median, a->n, a->n == 1 ? "" : "s");
    else dbk_strbuf_appendf(sb, "n/a (no run completed its schedule) | ");
}

/* What each group's energy reading covers, or why there is none; the price per kWh's source. */
static void md_energy_section(dbk_strbuf *sb, const dbk_run_set *set, const dbk_run_group *groups, int ng) {
    dbk_strbuf_appendf(sb, "\n## Energy\n\nJoules the device drew while the clock ran (evaluation off it, as the "
                           "time), read from its own counter or power reading; 1 kWh = 3.6 MJ.\n\n");
    for (int g = 0; g < ng; g++) {
        const dbk_run_group *gr = &groups[g];
        dbk_strbuf_appendf(sb, "- group %d: ", g + 1);
        if (gr->energy_measured) {
            dbk_strbuf_appendf(sb, "%s: ", gr->first->energy_source);
            dbk_report_md_cell(sb, gr->first->energy_note);
            if (gr->energy_priced) {
                dbk_strbuf_appendf(sb, "; USD %.4g per kWh (", gr->first->energy_price_per_kwh);
                dbk_report_md_cell(sb, gr->first->energy_price_source);
                dbk_strbuf_appendf(sb, ")");
            }
        } else {
            dbk_strbuf_appendf(sb, "not measured: ");
            dbk_report_md_cell(sb, dbk_run_group_energy_note(set, gr));
        }
        dbk_strbuf_appendf(sb, "\n");
    }
}

static void write_markdown(dbk_strbuf *sb, const dbk_run_set *set, const dbk_run_group *groups, int ng,
                           const char *const *sources, int nsources, bool any_priced, const bool *roofline) {
    char stamp[32];
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M UTC", &tmv);
    dbk_strbuf_appendf(sb, "# daybreak report\n\nGenerated %s by daybreak %s from %d run%s in ", stamp, DBK_VERSION,
                       set->count, set->count == 1 ? "" : "s");
    for (int i = 0; i < nsources; i++) {
        dbk_strbuf_appendf(sb, "%s`", i ? ", " : "");
        dbk_report_md_code(sb, sources[i]);
        dbk_strbuf_appendf(sb, "`");
    }
    dbk_strbuf_appendf(sb, ". Runs are grouped by backend, device, driver, recipe, clock, target, image counts and profiling "
                           "(--profile slows every step); "
                           "a run that did not reach the target counts as not converged and is never dropped.\n\n");
    bool subset = false;
    for (int i = 0; i < set->count; i++) subset = subset || set->runs[i].subset;
    if (subset)
        dbk_strbuf_appendf(sb, "**Note:** some runs used a subset of the training or test images "
                               "(`--train-subset`/`--test-subset`); they are not comparable to full runs.\n\n");

    dbk_strbuf_appendf(sb, "## Devices\n\n| group | device | backend | driver | recipe | clock | target | train/test "
                           "images | profile | peak FP32 GFLOP/s | bandwidth GB/s | price/h |\n"
                           "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int g = 0; g < ng; g++) {
        const dbk_run *f = groups[g].first;
        md_group_id(sb, &groups[g], g);
        dbk_report_md_cell(sb, f->clock_mode);
        dbk_strbuf_appendf(sb, " | %.2f%% | %d/%d%s | ", f->target, f->train_images, f->test_images,
                           f->subset ? " (subset)" : "");
        dbk_report_md_cell(sb, f->platform_id);
        dbk_strbuf_appendf(sb, " | ");
        if (f->peak_gflops > 0) dbk_strbuf_appendf(sb, "%.0f | ", f->peak_gflops);
        else dbk_strbuf_appendf(sb, "n/a | ");
        if (f->bandwidth_gbs > 0) dbk_strbuf_appendf(sb, "%.0f | ", f->bandwidth_gbs);
        else dbk_strbuf_appendf(sb, "n/a | ");
        if (f->price_per_hour > 0) {
            dbk_strbuf_appendf(sb, "USD %.4g (", f->price_per_hour);
            dbk_report_md_cell(sb, f->price_source);
            if (f->instance[0] && !strncmp(f->price_source, "profile", 7)) {
                dbk_strbuf_appendf(sb, ": ");
                dbk_report_md_cell(sb, f->instance);
            }
            dbk_strbuf_appendf(sb, ") |\n");
        } else dbk_strbuf_appendf(sb, "n/a |\n");
    }

    dbk_strbuf_appendf(sb, "\n## Time to target\n\n| group | device | backend | driver | recipe | runs | reached | "
                           "median time | olympic mean | CV | median epochs | median cost | median energy | "
                           "fixed-schedule accuracy | utilisation | seeds | daybreak |\n"
                           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int g = 0; g < ng; g++) {
        const dbk_run_group *gr = &groups[g];
        md_group_id(sb, gr, g);
        dbk_strbuf_appendf(sb, "%d | %d (%.0f%%) | ", gr->count, gr->seconds.converged, 100.0 * gr->seconds.fraction);
        md_seconds(sb, gr->seconds.median);
        dbk_strbuf_appendf(sb, " | ");
        md_seconds(sb, gr->seconds.olympic_mean);
        if (isfinite(gr->seconds.cv)) dbk_strbuf_appendf(sb, " | %.1f%% | ", 100.0 * gr->seconds.cv);
        else dbk_strbuf_appendf(sb, " | n/a | ");
        if (isfinite(gr->epochs.median)) dbk_strbuf_appendf(sb, "%.1f | ", gr->epochs.median);
        else dbk_strbuf_appendf(sb, "not reached | ");
        if (gr->priced && isfinite(gr->cost.median)) dbk_strbuf_appendf(sb, "USD %.3g | ", gr->cost.median);
        else dbk_strbuf_appendf(sb, "n/a | ");
        md_energy(sb, gr);
        md_schedule_accuracy(sb, gr);
        if (isfinite(gr->utilisation_median))
            dbk_strbuf_appendf(sb, "%.2f%% (%.1f GFLOP/s) | ", 100.0 * gr->utilisation_median,
                               gr->achieved_gflops_median);
        else if (isfinite(gr->achieved_gflops_median))
            dbk_strbuf_appendf(sb, "n/a (%.1f GFLOP/s) | ", gr->achieved_gflops_median);
        else dbk_strbuf_appendf(sb, "n/a | ");
        md_seeds(sb, set, gr);
        dbk_strbuf_appendf(sb, " | ");
        md_versions(sb, set, gr);
        dbk_strbuf_appendf(sb, " |\n");
    }
    dbk_strbuf_appendf(sb, "\nMedian and olympic mean (drop the fastest and the slowest run; plain mean below 3 runs) "
                           "are over all runs, a run that missed the target counting as slower than any other; CV "
                           "(standard deviation / mean) is over the runs that reached it. Utilisation = model FLOPs of "
                           "the training steps / (peak FP32 FLOP/s of the profile x training time). Energy is the "
                           "device's reading over the time on the clock (Energy below); the fixed-schedule accuracy "
                           "is the median test accuracy after the recipe's whole schedule, over the runs that "
                           "completed it (Fixed schedule below).\n");
    md_energy_section(sb, set, groups, ng);

    md_fixed_schedule(sb, set, groups, ng);

    dbk_strbuf_appendf(sb, "\n## Threshold sweep\n\nMedian clock time to the first epoch at or above each test "
                           "accuracy (runs that reached it / runs).\n\n| group | device | backend | driver | recipe | "
                           "thresholds | seeds | daybreak |\n|---|---|---|---|---|---|---|---|\n");
    for (int g = 0; g < ng; g++) {
        const dbk_run_group *gr = &groups[g];
        md_group_id(sb, gr, g);
        for (int t = 0; t < gr->nthresholds; t++) {
            dbk_strbuf_appendf(sb, "%s%.4g%%: ", t ? "; " : "", gr->thresholds[t]);
            md_seconds(sb, gr->threshold_seconds[t].median);
            if (isfinite(gr->threshold_epochs[t].median))
                dbk_strbuf_appendf(sb, ", epoch %.1f", gr->threshold_epochs[t].median);
            dbk_strbuf_appendf(sb, " (%d/%d)", gr->threshold_seconds[t].converged, gr->count);
        }
        dbk_strbuf_appendf(sb, " | ");
        md_seeds(sb, set, gr);
        dbk_strbuf_appendf(sb, " | ");
        md_versions(sb, set, gr);
        dbk_strbuf_appendf(sb, " |\n");
    }

    dbk_strbuf_appendf(sb, "\n## Runs\n\nPrograms (the OpenCL program, Vulkan's pipelines, a warm-up pass running each "
                           "once) are built before the clock starts: `builds` gives their seconds.\n\n| run | device | backend | driver | recipe | seed | clock | status | epochs "
                           "| time to target | energy to target | best accuracy | fixed-schedule accuracy | DAWNBench entry | builds | daybreak |\n"
                           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < set->count; i++) {
        const dbk_run *r = &set->runs[i];
        double best = 0.0;
        for (int e = 0; e < r->epochs; e++) best = fmax(best, r->accuracy[e]);
        dbk_strbuf_appendf(sb, "| `");
        dbk_report_md_code(sb, r->dir);
        dbk_strbuf_appendf(sb, "` ");
        const char *cells[] = {r->device, r->backend, r->driver, r->recipe};
        for (size_t c = 0; c < sizeof cells / sizeof cells[0]; c++) {
            dbk_strbuf_appendf(sb, "| ");
            dbk_report_md_cell(sb, cells[c]);
            dbk_strbuf_appendf(sb, " ");
        }
        dbk_strbuf_appendf(sb, "| %llu | ", (unsigned long long)r->seed);
        dbk_report_md_cell(sb, r->clock_mode);
        dbk_strbuf_appendf(sb, " | ");
        dbk_report_md_cell(sb, r->status);
        dbk_strbuf_appendf(sb, "%s | %d | ", r->subset ? " (subset)" : "", r->epochs);
        md_seconds(sb, r->seconds_to_target);
        if (isfinite(r->joules_to_target)) dbk_strbuf_appendf(sb, " | %.1f J", r->joules_to_target);
        else dbk_strbuf_appendf(sb, " | %s", r->energy_measured ? "not reached" : "not measured");
        dbk_strbuf_appendf(sb, " | %.2f%% | ", best);
        if (isfinite(r->schedule_accuracy)) dbk_strbuf_appendf(sb, "%.2f%% | ", r->schedule_accuracy);
        else dbk_strbuf_appendf(sb, "n/a | ");
        if (r->conforms) dbk_strbuf_appendf(sb, "yes");
        else {
            dbk_strbuf_appendf(sb, "no: ");
            dbk_report_md_cell(sb, r->nonconforming[0] ? r->nonconforming : "the folder has no dawnbench.json");
        }
        dbk_strbuf_appendf(sb, " | ");
        if (isfinite(r->build_seconds)) dbk_strbuf_appendf(sb, "%.1f s | ", r->build_seconds);
        else dbk_strbuf_appendf(sb, "– | ");
        dbk_report_md_cell(sb, r->version);
        dbk_strbuf_appendf(sb, " |\n");
    }

    dbk_strbuf_appendf(sb, "\n## Charts\n\n![Test accuracy against clock time](accuracy.svg)\n\n"
                           "![Time to target](time_to_target.svg)\n\n");
    if (any_priced) dbk_strbuf_appendf(sb, "![Cost to target](cost_to_target.svg)\n\n");
    else dbk_strbuf_appendf(sb, "No cost chart: none of these devices' profiles has a price per hour.\n\n");
    bool any_roof = false;
    for (int g = 0; g < ng; g++)
        if (roofline[g]) {
            dbk_strbuf_appendf(sb, "![Roofline of group %d](roofline-%d.svg)\n\n", g + 1, g + 1);
            roofline_notes(sb, set, &groups[g]);
            any_roof = true;
        }
    if (!any_roof)
        dbk_strbuf_appendf(sb, "No roofline: no run was made with `--profile` (per-op timings are needed).\n");
}

dbk_status dbk_report_write(const dbk_run_set *set, const dbk_run_group *groups, int ngroups, const char *out_dir,
                            const char *const *sources, int nsources, bool html) {
    DBK_TRY(dbk_mkdir_p(out_dir));
    DBK_TRY(chart_accuracy(set, groups, ngroups, out_dir));
    DBK_TRY(chart_bars(set, groups, ngroups, false, out_dir, "time_to_target.svg"));
    bool any_priced = false;
    for (int g = 0; g < ngroups; g++) any_priced = any_priced || groups[g].priced;
    if (any_priced) DBK_TRY(chart_bars(set, groups, ngroups, true, out_dir, "cost_to_target.svg"));
    bool *roof = dbk_calloc((size_t)ngroups, sizeof *roof);
    if (!roof) return DBK_ERR_OUT_OF_HOST_MEMORY;
    dbk_status st = DBK_OK;
    for (int g = 0; g < ngroups && st == DBK_OK; g++)
        for (int m = 0; m < groups[g].count; m++) {
            const dbk_run *r = &set->runs[groups[g].members[m]];
            if (r->op_count == 0) continue;
            st = chart_roofline(r, &groups[g], g + 1, out_dir, &roof[g]);
            break;
        }
    if (st == DBK_OK) {
        dbk_strbuf sb;
        dbk_strbuf_init(&sb);
        write_markdown(&sb, set, groups, ngroups, sources, nsources, any_priced, roof);
        st = dbk_report_distributed(&sb, set);
        if (st == DBK_OK) st = dbk_report_sparse(&sb, set);
        char path[4200];
        snprintf(path, sizeof path, "%s/report.md", out_dir);
        if (st == DBK_OK) st = write_utf8(&sb, path);
        if (st == DBK_OK && html) {
            dbk_strbuf clean;   /* the text as report.md holds it */
            dbk_strbuf_init(&clean);
            dbk_utf8_append_sanitized(&clean, dbk_strbuf_str(&sb), sb.len);
            snprintf(path, sizeof path, "%s/report.html", out_dir);
            st = clean.status != DBK_OK ? clean.status : dbk_report_html_write(dbk_strbuf_str(&clean), out_dir, path);
            dbk_strbuf_deinit(&clean);
        }
        dbk_strbuf_deinit(&sb);
    }
    dbk_free(roof);
    return st;
}
