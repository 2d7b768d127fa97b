/*
 * test_bench.c — the benchmark harness as a user runs it:
 *   - the stored example results (tests/data/bench: real short CPU runs, see its README) pass
 *     the checks DAWNBench's own submission tests make (tests/test_submissions.py of
 *     stanford-futuredata/dawn-bench-entries: valid JSON, required fields, version, timestamp
 *     YYYY-MM-DD, TSV columns exactly epoch/hours/top1Accuracy, non-empty) plus the target
 *     being reached where the entry claims it;
 *   - `daybreak report` on them writes a Markdown report with the expected rows and SVG charts
 *     that are well-formed XML with the expected series;
 *   - a short real-data `daybreak train --clock mlperf` writes entries passing the same checks
 *     and puts evaluation on the clock; `daybreak infer` on its checkpoint gives the accuracy
 *     `daybreak eval` gives and a DAWNBench inference entry;
 *   - `daybreak bench` runs distinct recorded seeds and summarises them.
 *
 * usage: test_bench <path to daybreak> <tests/data/bench folder>
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/status.h"
#include "test_util.h"

static const char *exe, *examples;
static char out[65536];

static int run(const char *args) {
    static char cmd[16384 + 4096];
    snprintf(cmd, sizeof cmd, "'%s' %s", exe, args);
    return dbk_test_run_command(cmd, out, sizeof out);
}

static char *read_text(const char *path) {
    void *data;
    size_t n;
    if (dbk_file_read_all(path, &data, &n) != DBK_OK) return NULL;
    return data;
}

static cJSON *read_json(const char *path) {
    char *text = read_text(path);
    if (!text) return NULL;
    cJSON *root = cJSON_Parse(text);
    dbk_free(text);
    return root;
}

static const cJSON *get(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

/* ---------------------------------------------------------------------------------- */
/* A small XML well-formedness checker: prolog, comments, elements with quoted attributes
 * (no duplicates), entity and character references, properly nested tags, one root.      */

static const char *xml_error;

static bool xml_name(const char **p) {
    const char *s = *p;
    if (!(isalpha((unsigned char)*s) || *s == '_' || *s == ':')) return false;
    while (isalnum((unsigned char)*s) || *s == '_' || *s == ':' || *s == '-' || *s == '.') s++;
    *p = s;
    return true;
}

static bool xml_reference(const char **p) { /* at '&' */
    const char *s = *p + 1;
    if (*s == '#') {
        s++;
        if (*s == 'x') s++;
        if (!isxdigit((unsigned char)*s)) return false;
        while (isxdigit((unsigned char)*s)) s++;
    } else {
        static const char *const ents[] = {"amp", "lt", "gt", "quot", "apos"};
        bool ok = false;
        for (int i = 0; i < 5 && !ok; i++)
            if (!strncmp(s, ents[i], strlen(ents[i])) && s[strlen(ents[i])] == ';') {
                s += strlen(ents[i]);
                ok = true;
            }
        if (!ok) return false;
    }
    if (*s != ';') return false;
    *p = s + 1;
    return true;
}

static bool xml_well_formed(const char *s) {
    const char *stack[256];
    size_t lens[256];
    int depth = 0, roots = 0;
    xml_error = "";
    if (!strncmp(s, "<?xml", 5)) {
        const char *e = strstr(s, "?>");
        if (!e) return (xml_error = "unterminated prolog", false);
        s = e + 2;
    }
    while (*s) {
        if (*s == '<') {
            if (!strncmp(s, "<!--", 4)) {
                const char *e = strstr(s + 4, "-->");
                if (!e) return (xml_error = "unterminated comment", false);
                s = e + 3;
                continue;
            }
            bool closing = s[1] == '/';
            const char *name = s + (closing ? 2 : 1), *p = name;
            if (!xml_name(&p)) return (xml_error = "bad tag name", false);
            size_t len = (size_t)(p - name);
            if (closing) {
                while (isspace((unsigned char)*p)) p++;
                if (*p != '>') return (xml_error = "bad closing tag", false);
                if (depth == 0 || lens[depth - 1] != len || strncmp(stack[depth - 1], name, len))
                    return (xml_error = "mismatched closing tag", false);
                depth--;
                s = p + 1;
                continue;
            }
            const char *attrs[64];
            size_t alen[64];
            int na = 0;
            for (;;) {
                bool space = isspace((unsigned char)*p);
                while (isspace((unsigned char)*p)) p++;
                if (*p == '>' || (p[0] == '/' && p[1] == '>')) break;
                if (!space) return (xml_error = "attributes need white space between them", false);
                const char *an = p;
                if (!xml_name(&p)) return (xml_error = "bad attribute name", false);
                for (int i = 0; i < na; i++)
                    if (alen[i] == (size_t)(p - an) && !strncmp(attrs[i], an, alen[i]))
                        return (xml_error = "duplicate attribute", false);
                if (na < 64) {
                    attrs[na] = an;
                    alen[na++] = (size_t)(p - an);
                }
                while (isspace((unsigned char)*p)) p++;
                if (*p++ != '=') return (xml_error = "attribute without '='", false);
                while (isspace((unsigned char)*p)) p++;
                char q = *p++;
                if (q != '"' && q != '\'') return (xml_error = "unquoted attribute", false);
                while (*p && *p != q) {
                    if (*p == '<') return (xml_error = "'<' in an attribute value", false);
                    if (*p == '&') {
                        if (!xml_reference(&p)) return (xml_error = "bad reference in an attribute", false);
                    } else p++;
                }
                if (*p++ != q) return (xml_error = "unterminated attribute value", false);
            }
            if (depth == 0) roots++;
            if (roots > 1) return (xml_error = "more than one root element", false);
            if (*p == '/') s = p + 2;
            else {
                if (depth == 256) return (xml_error = "nested too deeply", false);
                stack[depth] = name;
                lens[depth++] = len;
                s = p + 1;
            }
        } else if (*s == '&') {
            if (!xml_reference(&s)) return (xml_error = "bad reference in text", false);
        } else {
            if (depth == 0 && !isspace((unsigned char)*s)) return (xml_error = "text outside the root element", false);
            s++;
        }
    }
    if (depth != 0) return (xml_error = "unclosed element", false);
    if (roots != 1) return (xml_error = "no root element", false);
    return true;
}

static int count(const char *hay, const char *needle) {
    int n = 0;
    size_t len = strlen(needle), at = 0;
    while (hay[at]) {
        if (!strncmp(hay + at, needle, len)) n++;
        at++;
    }
    return n;
}

static int xml_checker_should_reject_broken_documents(void) {
    DBK_CHECK(xml_well_formed("<?xml version=\"1.0\"?>\n<svg a=\"1\"><g><x/></g><!-- c --></svg>\n"));
    DBK_CHECK(xml_well_formed("<a b='&amp;&#38;&#x26;'>x &lt; y</a>"));
    DBK_CHECK(!xml_well_formed("<a><b></a></b>"));
    DBK_CHECK(!xml_well_formed("<a b=1/>"));
    DBK_CHECK(!xml_well_formed("<a>AT&T</a>"));
    DBK_CHECK(!xml_well_formed("<a x=\"1\" x=\"2\"/>"));
    DBK_CHECK(!xml_well_formed("<a/><b/>"));
    DBK_CHECK(!xml_well_formed("<a>"));
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* DAWNBench's submission checks                                                       */

static bool iso_date(const char *s) {
    int y, m, d, n = 0;
    return strlen(s) == 10 && sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &n) == 3 && n == 10 && m >= 1 && m <= 12 &&
           d >= 1 && d <= 31;
}

/* The training entry in dir/dawnbench.json and the log it names. A DAWNBench entry (its
 * "version" v1.0) must pass DAWNBench's checks, threshold included (best top-1 >= 94); any
 * other must say it does not conform and why, and a subset run's log starts with its marker. */
static int check_dawnbench_train_entry(const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/dawnbench.json", dir);
    cJSON *e = read_json(path);
    DBK_CHECK_MSG(e != NULL, "%s is missing or not valid JSON", path);
    const char *required[] = {"author", "authorEmail", "framework", "model", "hardware", "timestamp"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        DBK_CHECK_MSG(cJSON_IsString(get(e, required[i])), "%s: %s is a required field", path, required[i]);
    const bool conforming = get(e, "version") != NULL;
    if (conforming) {
        DBK_CHECK_MSG(!strcmp(get(e, "version")->valuestring, "v1.0"), "%s: version must be v1.0", path);
        DBK_CHECK_MSG(get(e, "conforms") == NULL, "%s: an entry with a version conforms", path);
    } else {
        const cJSON *reasons = get(e, "nonconforming_reasons");
        DBK_CHECK_MSG(cJSON_IsFalse(get(e, "conforms")) && cJSON_GetArraySize(reasons) > 0 &&
                          cJSON_IsString(cJSON_GetArrayItem(reasons, 0)),
                      "%s: without a version the entry must say conforms false and why", path);
    }
    DBK_CHECK_MSG(iso_date(get(e, "timestamp")->valuestring), "%s: timestamp must be YYYY-MM-DD", path);
    DBK_CHECK_MSG(get(e, "costPerHour") == NULL || cJSON_IsNumber(get(e, "costPerHour")),
                  "%s: costPerHour is a price or absent", path);
    DBK_CHECK(cJSON_IsString(get(e, "logFilename")) && cJSON_IsObject(get(e, "misc")));

    snprintf(path, sizeof path, "%s/%s", dir, get(e, "logFilename")->valuestring);
    char *tsv_data = read_text(path);
    DBK_CHECK_MSG(tsv_data != NULL, "the TSV file %s does not exist", path);
    char *tsv = tsv_data;
    if (cJSON_IsTrue(get(get(e, "misc"), "subset"))) {
        DBK_CHECK_MSG(!conforming, "%s: a subset run is labelled a DAWNBench entry", path);
        tsv = dbk_test_skip_subset_marker(tsv_data);
        DBK_CHECK_MSG(tsv != NULL, "%s: a subset run's log must start with the marker line", path);
    }
    const char *header = "epoch\thours\ttop1Accuracy\n";
    int ok = !strncmp(tsv, header, strlen(header));
    int rows = 0, hit_epoch = 0;
    double hit_hours = 0.0, best = 0.0;
    const cJSON *misc = get(e, "misc");
    double target = get(misc, "target")->valuedouble;
    for (char *line = tsv + strlen(header); ok && *line;) {
        char *nl = strchr(line, '\n');
        int epoch, used = 0;
        double h, a;
        ok = nl && sscanf(line, "%d\t%lf\t%lf%n", &epoch, &h, &a, &used) == 3 && line + used == nl && epoch == rows + 1;
        if (!ok) break;
        rows++;
        best = fmax(best, a);
        if (!hit_epoch && a >= target) {
            hit_epoch = epoch;
            hit_hours = h;
        }
        line = nl + 1;
    }
    dbk_free(tsv_data);
    DBK_CHECK_MSG(!conforming || best >= 94.0, "%s: best %.2f%% is below DAWNBench's 94%%, yet a v1.0 entry", path,
                  best);
    DBK_CHECK_MSG(ok, "%s: header must be exactly epoch\\thours\\ttop1Accuracy and rows epoch\\thours\\taccuracy",
                  path);
    DBK_CHECK_MSG(rows > 0, "%s: the TSV file must not be empty", path);
    /* the target reached where claimed */
    if (cJSON_IsTrue(get(misc, "targetReached"))) {
        DBK_CHECK_MSG(hit_epoch == get(misc, "epochsToTarget")->valueint, "%s: target %.2f first reached in epoch %d",
                      path, target, hit_epoch);
        DBK_CHECK(fabs(hit_hours - get(misc, "hoursToTarget")->valuedouble) < 1e-7);
    } else {
        DBK_CHECK_MSG(hit_epoch == 0, "%s reaches the target the entry says was not reached", path);
        DBK_CHECK(cJSON_IsNull(get(misc, "hoursToTarget")));
    }
    if (cJSON_IsNumber(get(e, "costPerHour")) && hit_epoch)
        DBK_CHECK(fabs(get(misc, "costToTarget")->valuedouble - hit_hours * get(e, "costPerHour")->valuedouble) < 1e-9);
    cJSON_Delete(e);
    return 0;
}

static const char *const example_runs[] = {"cpu-dawnbench/run-01", "cpu-dawnbench/run-02", "cpu-dawnbench/run-03",
                                           "cpu-mlperf/run-01", "cpu-mlperf/run-02"};
#define EXAMPLE_RUNS 5

static int stored_entries_should_pass_dawnbench_checks(void) {
    for (int i = 0; i < EXAMPLE_RUNS; i++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", examples, example_runs[i]);
        if (check_dawnbench_train_entry(dir)) return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* the report from stored results                                                      */

static char report_dir[4200];

static int check_svg(const char *name, const char *series_tag, int series) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", report_dir, name);
    char *svg = read_text(path);
    DBK_CHECK_MSG(svg != NULL, "%s was not written", path);
    bool ok = xml_well_formed(svg);
    DBK_CHECK_MSG(ok, "%s is not well-formed XML: %s", path, xml_error);
    DBK_CHECK(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"") != NULL);
    int n = count(svg, series_tag);
    dbk_free(svg);
    DBK_CHECK_MSG(n == series, "%s: %d series '%s', expected %d", path, n, series_tag, series);
    return 0;
}

static int report_should_have_the_expected_rows_and_charts(void) {
    const char *d = dbk_test_tmpdir("bench_report");
    DBK_CHECK(d != NULL);
    snprintf(report_dir, sizeof report_dir, "%s/report", d);
    char args[16384];
    snprintf(args, sizeof args, "report '%s/cpu-dawnbench' '%s/cpu-mlperf' --out '%s'", examples, examples, report_dir);
    int rc = run(args);
    DBK_CHECK_MSG(rc == 0, "daybreak report exited %d:\n%s", rc, out);
    DBK_CHECK_MSG(strstr(out, "reached the target: 3 of 3") != NULL, "summary missing:\n%s", out);

    char path[4400];
    snprintf(path, sizeof path, "%s/report.md", report_dir);
    char *md = read_text(path);
    DBK_CHECK(md != NULL);
    const char *expect[] = {
        "# daybreak report",
        "## Devices",
        "| 1 | AMD EPYC | cpu | ",
        "| quick | dawnbench | 25.00% | 2560/1000 (subset) | cpu-epyc-zen5-2vcpu | 333 | 40 | n/a |",
        "| quick | mlperf | 25.00% | 2560/1000 (subset) | example-rented-cpu | 333 | 40 | USD 0.1 (profile "
        "example-rented-cpu: example 2 vCPU) |",
        "## Time to target",
        "| quick | 3 | 3 (100%) | ",
        "| 0, 1, 2 | 0.1.0 |",
        "| 10, 11 | 0.1.0 |",
        /* median cost, energy and fixed-schedule accuracy: these results predate both */
        "| n/a | not measured | n/a (no run completed its schedule) | ",
        "| USD 0.00278 | not measured | n/a (no run completed its schedule) | ",
        "## Energy",
        "- group 1: not measured: not recorded (a result from before energy was measured)",
        "## Fixed schedule",
        "| quick | 0 of 3 | n/a | n/a |", /* results written before fixed_schedule existed */
        "## Threshold sweep",
        "25%: ",
        "90%: not reached (0/3)",
        "## Runs",
        "cpu-dawnbench/run-01` | AMD EPYC | cpu |",
        "cpu-mlperf/run-02` | AMD EPYC | cpu |",
        "| reached (subset) |",
        "| 103.2 s | not measured | 33.60% | n/a | no: trained on 2560 of the 50000 training images (--train-subset); ",
        "![Test accuracy against clock time](accuracy.svg)",
        "![Cost to target](cost_to_target.svg)",
        "![Roofline of group 1](roofline-1.svg)",
        /* the roofline's notes: the memory roof of a hand-written profile is an estimate, and the
         * time outside the ops of the profiled steps */
        "- Memory roof 40.0 GB/s: an estimate in the device profile, not a measurement",
        "- Time outside the ops: ",
    };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        DBK_CHECK_MSG(strstr(md, expect[i]) != NULL, "report.md lacks '%s':\n%s", expect[i], md);
    DBK_CHECK_MSG(count(md, "\n| `") == EXAMPLE_RUNS, "report.md should list %d runs", EXAMPLE_RUNS);
    dbk_free(md);

    if (check_svg("accuracy.svg", "<polyline class=\"series\"", EXAMPLE_RUNS)) return 1;
    if (check_svg("accuracy.svg", " (subset) (", 2)) return 1; /* each group's legend marks its subset runs */
    if (check_svg("accuracy.svg", "<line class=\"target\"", 2)) return 1;
    if (check_svg("time_to_target.svg", "class=\"series\"", 2)) return 1;
    if (check_svg("cost_to_target.svg", "class=\"series\"", 1)) return 1; /* only the priced group */
    if (check_svg("roofline-1.svg", "<g class=\"series\"", 4)) return 1;   /* conv, gemm, batch norm, other */
    if (check_svg("roofline-1.svg", "<polyline class=\"roof\"", 1)) return 1;
    if (check_svg("roofline-1.svg", "40.0 GB/s (estimate)", 1)) return 1;
    snprintf(path, sizeof path, "%s/roofline-2.svg", report_dir);
    FILE *f = fopen(path, "r");
    DBK_CHECK_MSG(f == NULL, "group 2 has no profiled run, yet %s exists", path);
    return 0;
}

/* A report's --price overrides the runs' prices for the devices it names, and the report says
 * so; one that names no run's device, or is malformed, is refused with one line. */
static int report_prices_should_name_their_source(void) {
    char args[16384], path[4400];
    snprintf(args, sizeof args, "report '%s/cpu-dawnbench' '%s/cpu-mlperf' --out '%s-priced' --no-html --price 'epyc=0.5' "
             "--price example-rented-cpu=2 --energy-price 0.3", examples, examples, report_dir);
    int rc = run(args);
    DBK_CHECK_MSG(rc == 0, "daybreak report exited %d:\n%s", rc, out);
    snprintf(path, sizeof path, "%s-priced/report.md", report_dir);
    char *md = read_text(path);
    DBK_CHECK(md != NULL);
    /* group 1 by device name, group 2 by its profile id (the longer, exact match) */
    int ok = strstr(md, "| USD 0.5 (--price 'epyc=0.5' of this report) |") &&
             strstr(md, "| USD 2 (--price 'example-rented-cpu=2' of this report) |") &&
             strstr(md, "| USD 0.0143 | not measured |");   /* 103.1 s at USD 0.5/h */
    dbk_free(md);
    DBK_CHECK_MSG(ok, "%s: the prices of the report's --price and their sources", path);
    snprintf(path, sizeof path, "%s-priced/report.html", report_dir);
    DBK_CHECK_MSG(access(path, F_OK) != 0, "--no-html wrote %s", path);
    const char *bad[][2] = {{"--price 'A100=3'", "--price 'A100=3': no run's device or profile matches 'A100'"},
                            {"--price 'EPYC'", "--price 'EPYC': give DEVICE=USD_PER_HOUR"},
                            {"--price 'EPYC=-1'", "--price 'EPYC=-1': give DEVICE=USD_PER_HOUR"},
                            {"--energy-price 0", "bad --energy-price '0'"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "report '%s/cpu-dawnbench' --out '%s-bad' %s", examples, report_dir, bad[i][0]);
        rc = run(args);
        DBK_CHECK_MSG(rc == 2 && strstr(out, bad[i][1]), "%s: exit %d, expected 2 and '%s':\n%s", bad[i][0], rc, bad[i][1],
                      out);
        snprintf(path, sizeof path, "%s-bad/report.md", report_dir);
        DBK_CHECK_MSG(access(path, F_OK) != 0, "%s: a refused report wrote %s", bad[i][0], path);
    }
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* real short runs                                                                     */

static char train_dir[4200];

static int mlperf_train_should_put_evaluation_on_the_clock(void) {
    const char *d = dbk_test_tmpdir("bench_train");
    DBK_CHECK(d != NULL);
    snprintf(train_dir, sizeof train_dir, "%s/run", d);
    char args[8192];
    snprintf(args, sizeof args,
             "train --recipe quick --backend cpu --train-subset 2560 --test-subset 500 --epochs 1 --target 0 "
             "--clock mlperf --seed 3 --no-progress --quiet --author tester --author-email t@example.org --out '%s'",
             train_dir);
    int rc = run(args);
    DBK_CHECK_MSG(rc == 0, "daybreak train exited %d:\n%s", rc, out);
    if (check_dawnbench_train_entry(train_dir)) return 1;
    char path[4400];
    snprintf(path, sizeof path, "%s/result.json", train_dir);
    cJSON *r = read_json(path);
    DBK_CHECK(r != NULL);
    const cJSON *e = cJSON_GetArrayItem(get(r, "epochs"), 0);
    double clock = get(e, "clock_seconds")->valuedouble, sum = get(r, "preprocess_seconds")->valuedouble +
                                                                  get(e, "epoch_seconds")->valuedouble +
                                                                  get(e, "eval_seconds")->valuedouble;
    int ok = !strcmp(get(r, "clock")->valuestring, "mlperf") && fabs(clock - sum) < 1e-6 &&
             get(get(r, "flops"), "per_step")->valuedouble > 1e9 && get(get(r, "flops"), "achieved_gflops")->valuedouble > 0 &&
             cJSON_IsString(get(get(r, "platform"), "id"));
    cJSON_Delete(r);
    DBK_CHECK_MSG(ok, "result.json: clock must be mlperf and clock_seconds %.6f = preprocess + epoch + eval = %.6f",
                  clock, sum);
    snprintf(path, sizeof path, "%s/dawnbench.json", train_dir);
    r = read_json(path);
    DBK_CHECK(r != NULL);
    ok = !strcmp(get(r, "author")->valuestring, "tester") && !strcmp(get(r, "authorEmail")->valuestring, "t@example.org");
    cJSON_Delete(r);
    DBK_CHECK(ok);
    return 0;
}

static int infer_should_match_eval_and_write_the_entry(void) {
    char args[8192], expect[64];
    snprintf(args, sizeof args, "eval --checkpoint '%s/model.ckpt' --backend cpu --test-subset 200", train_dir);
    int rc = run(args);
    DBK_CHECK_MSG(rc == 0, "daybreak eval exited %d:\n%s", rc, out);
    const char *p = strstr(out, "test accuracy ");
    DBK_CHECK(p != NULL);
    double acc = atof(p + strlen("test accuracy "));
    snprintf(args, sizeof args, "infer --checkpoint '%s/model.ckpt' --backend cpu --test-subset 200", train_dir);
    rc = run(args);
    printf("%s", out);
    DBK_CHECK_MSG(rc == 0, "daybreak infer exited %d:\n%s", rc, out);
    snprintf(expect, sizeof expect, "top-1 accuracy %.2f%%", acc);
    DBK_CHECK_MSG(strstr(out, expect) != NULL, "expected '%s' (as eval):\n%s", expect, out);
    char path[4400];
    snprintf(path, sizeof path, "%s/dawnbench_inference.json", train_dir);
    cJSON *e = read_json(path);
    DBK_CHECK_MSG(e != NULL, "%s missing or not JSON", path);
    const char *required[] = {"author", "authorEmail", "framework", "model", "hardware", "timestamp"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        DBK_CHECK_MSG(cJSON_IsString(get(e, required[i])), "%s: %s is a required field", path, required[i]);
    /* 200 test images of a smoke-sized model: not a DAWNBench entry, and the console says why. */
    DBK_CHECK_MSG(strstr(out, "dawnbench_inference.json is not a DAWNBench entry: classified 200 of the 10000 test "
                              "images") != NULL, "infer should say why its entry does not conform:\n%s", out);
    int ok = !get(e, "version") && cJSON_IsFalse(get(e, "conforms")) &&
             cJSON_GetArraySize(get(e, "nonconforming_reasons")) == 2 && iso_date(get(e, "timestamp")->valuestring) &&
             cJSON_IsNumber(get(e, "latency")) && get(e, "latency")->valuedouble > 0 &&
             fabs(get(e, "top1Accuracy")->valuedouble - acc) < 0.006 &&
             (cJSON_IsNull(get(e, "cost")) || cJSON_IsNumber(get(e, "cost"))) &&
             get(get(e, "misc"), "images")->valueint == 200 && get(get(e, "misc"), "batch")->valueint == 1;
    cJSON_Delete(e);
    DBK_CHECK_MSG(ok, "bad inference entry %s", path);
    return 0;
}

static int bench_should_run_distinct_recorded_seeds(void) {
    const char *d = dbk_test_tmpdir("bench_runs");
    DBK_CHECK(d != NULL);
    char args[8192], path[4400];
    snprintf(args, sizeof args,
             "bench --runs 2 --seed0 7 --backend cpu --train-subset 512 --test-subset 256 --epochs 1 --target 0 "
             "--quiet --no-progress --out '%s/b'",
             d);
    int rc = run(args);
    DBK_CHECK_MSG(rc == 0, "daybreak bench exited %d:\n%s", rc, out);
    DBK_CHECK_MSG(strstr(out, "reached the target: 2 of 2 (100%)") != NULL, "summary missing:\n%s", out);
    /* --target 0 is reached in the last (only) epoch: the whole schedule ran, so both metrics */
    DBK_CHECK_MSG(strstr(out, "fixed schedule:     accuracy mean ") && strstr(out, "over 2 of 2 runs"),
                  "no fixed-schedule summary:\n%s", out);
    for (int i = 1; i <= 2; i++) {
        snprintf(path, sizeof path, "%s/b/run-%02d/result.json", d, i);
        cJSON *r = read_json(path);
        DBK_CHECK_MSG(r != NULL, "%s missing", path);
        int seed = get(r, "seed")->valueint;
        cJSON_Delete(r);
        DBK_CHECK_MSG(seed == 6 + i, "%s: seed %d, expected %d", path, seed, 6 + i);
    }
    snprintf(path, sizeof path, "%s/b/summary.json", d);
    cJSON *s = read_json(path);
    DBK_CHECK_MSG(s != NULL, "%s missing", path);
    const cJSON *g = cJSON_GetArrayItem(get(s, "groups"), 0);
    int ok = cJSON_GetArraySize(get(s, "groups")) == 1 && cJSON_GetArraySize(get(g, "seeds")) == 2 &&
             cJSON_IsTrue(get(g, "subset")) &&
             get(get(g, "seconds_to_target"), "fraction_converged")->valuedouble == 1.0 &&
             cJSON_IsNumber(get(get(g, "seconds_to_target"), "median")) &&
             get(get(g, "fixed_schedule"), "runs_completed")->valueint == 2 &&
             cJSON_IsNumber(get(get(get(g, "fixed_schedule"), "accuracy"), "mean")) &&
             cJSON_IsNumber(get(cJSON_GetArrayItem(get(s, "runs"), 0), "fixed_schedule_accuracy"));
    cJSON_Delete(s);
    DBK_CHECK_MSG(ok, "bad %s", path);
    rc = run(args);
    DBK_CHECK_MSG(rc == 1 && strstr(out, "already holds a benchmark"), "a second bench into the same folder: %d\n%s",
                  rc, out);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_bench <daybreak executable> <tests/data/bench folder>\n");
        return 2;
    }
    exe = argv[1];
    examples = argv[2];
    DBK_RUN(xml_checker_should_reject_broken_documents);
    DBK_RUN(stored_entries_should_pass_dawnbench_checks);
    DBK_RUN(report_should_have_the_expected_rows_and_charts);
    DBK_RUN(report_prices_should_name_their_source);
    if (!dbk_test_cifar_dir()) {
        dbk_test_note_missing("the real-data runs", DBK_TEST_NO_CIFAR);
        return dbk_test_finish();
    }
    DBK_RUN(mlperf_train_should_put_evaluation_on_the_clock);
    if (!dbk_test_failed_checks) DBK_RUN(infer_should_match_eval_and_write_the_entry);
    DBK_RUN(bench_should_run_distinct_recorded_seeds);
    return dbk_test_finish();
}
