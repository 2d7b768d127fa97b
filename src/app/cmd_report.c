/* cmd_report.c — `daybreak report DIR... [--out DIR]` (bench/report.h). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/cli.h"
#include "bench/report.h"
#include "bench/report_dist.h"
#include "core/alloc.h"

void dbk_help_report(void) {
    printf("usage: daybreak report DIR... [--out DIR] [--price DEVICE=USD_PER_HOUR]... [--energy-price USD]\n\n"
           "Reads result folders (a folder with result.json, or a folder of such folders as written by\n"
           "'daybreak bench') and writes a Markdown report (report.md) with self-contained SVG charts:\n"
           "accuracy against clock time (one curve per run), time and cost to the target per device\n"
           "(bars with the run-to-run spread), and a roofline per device for runs made with --profile;\n"
           "and the same as one web page, report.html (inline charts and styles, no script, nothing\n"
           "fetched). Prints the summary table as 'daybreak bench' does.\n\n"
           "options:\n"
           "  --out DIR           output folder (default: report)\n"
           "  --html              write report.html (the default)\n"
           "  --no-html           report.md and the SVG charts only\n"
           "  --price DEVICE=USD  price per hour of the runs whose device name contains DEVICE\n"
           "                      (ignoring case) or whose profile id is DEVICE, over the runs' own;\n"
           "                      repeatable, the longest match wins (e.g. --price 'V100=3.06')\n"
           "  --energy-price USD  price per kWh for every run's energy cost, over the runs' own\n");
}

/* An existing --out folder receives the report only when it is empty or holds an earlier
 * report (report.md): its charts would replace files of the same names. */
static bool report_folder_ok(const char *dir, char *why, size_t cap) {
    static const char *const run_files[] = {"result.json", "summary.json", "resume.ckpt", "run.lock"};
    char path[4200];
    for (size_t i = 0; i < sizeof run_files / sizeof run_files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, run_files[i]);
        if (access(path, F_OK) == 0) {
            snprintf(why, cap, "holds %s: it is a run's folder, not a report's", run_files[i]);
            return false;
        }
    }
    snprintf(path, sizeof path, "%s/report.md", dir);
    if (access(path, F_OK) == 0) return true;
    DIR *d = opendir(dir);
    bool empty = d != NULL;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = false;
    if (d) closedir(d);
    if (!empty) snprintf(why, cap, "is a folder of other files (no earlier report.md); the charts could replace them");
    return empty;
}

int dbk_cmd_report(dbk_cli_args *a) {
    const char *out = "report";
    const char **dirs = dbk_calloc((size_t)a->argc * 2, sizeof *dirs), **prices = dirs + a->argc;
    if (!dirs) return dbk_cli_fail("report");
    int ndirs = 0, nprices = 0;
    bool html = true;
    double energy_price = 0.0;
    for (a->i = 2; a->i < a->argc; a->i++) {
        const char *v = NULL, *arg = a->argv[a->i];
        int m;
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            dbk_free(dirs);
            dbk_help_report();
            return DBK_EXIT_OK;
        }
        if ((m = dbk_cli_match(a, "--out", true, &v)) != 0) {
            if (m < 0 || !*v) {
                dbk_free(dirs);
                return dbk_cli_usage_error("report", "--out needs a folder name, not an empty one");
            }
            out = v;
        } else if ((m = dbk_cli_match(a, "--price", true, &v)) != 0 ||
                   (m = dbk_cli_match(a, "--energy-price", true, &v)) != 0) {
            const bool energy = !strncmp(arg, "--energy-price", 14);
            if (m < 0 || (energy && !dbk_cli_parse_double(v, 1e-9, 1e3, &energy_price))) {
                dbk_free(dirs);
                return m < 0 ? dbk_cli_usage_error("report", "option '%s' needs a value", arg)
                             : dbk_cli_usage_error("report", "bad --energy-price '%s' (USD per kWh, above 0)", v);
            }
            if (!energy) prices[nprices++] = v;
        } else if (dbk_cli_match(a, "--html", false, NULL) > 0) {
            html = true;
        } else if (dbk_cli_match(a, "--no-html", false, NULL) > 0) {
            html = false;
        } else if (arg[0] == '-' && arg[1] == '-') {
            dbk_free(dirs);
            return dbk_cli_usage_error("report", "unknown option '%s'", arg);
        } else dirs[ndirs++] = arg;
    }
    if (ndirs == 0) {
        dbk_free(dirs);
        return dbk_cli_usage_error("report", "%s", "give at least one result folder");
    }
    dbk_run_set set = {0};
    dbk_run_group *groups = NULL;
    int ngroups = 0, code = DBK_EXIT_OK;
    dbk_status st = DBK_OK;
    for (int i = 0; i < ndirs && st == DBK_OK; i++) st = dbk_run_set_add(&set, dirs[i]);
    /* --out is none of the folders read, nor inside one (a folder of runs holds its runs). */
    dbk_output_input *read = dbk_calloc((size_t)(ndirs + set.count), sizeof *read);
    if (!read) st = DBK_ERR_OUT_OF_HOST_MEMORY;
    if (st == DBK_OK) {
        for (int i = 0; i < ndirs + set.count; i++)
            read[i] = (dbk_output_input){"the result folder", i < ndirs ? dirs[i] : set.runs[i - ndirs].dir, true};
        dbk_output_spec spec = {.flag = "--out", .what = "report", .kind = DBK_OUTPUT_FOLDER,
                                .accept_folder = report_folder_ok, .more_inputs = read, .more_count = ndirs + set.count};
        code = dbk_cli_check_output(&spec, out);
    }
    dbk_free(read);
    if (code != DBK_EXIT_OK) {
        dbk_run_set_deinit(&set);
        dbk_free(dirs);
        return code;
    }
    if (st == DBK_OK && dbk_run_set_apply_prices(&set, prices, nprices, energy_price) != DBK_OK) {
        fprintf(stderr, "daybreak report: %s\n", dbk_last_error());
        dbk_run_set_deinit(&set);
        dbk_free(dirs);
        return DBK_EXIT_USAGE;
    }
    if (st == DBK_OK) st = dbk_run_groups_build(&set, &groups, &ngroups);
    if (st == DBK_OK) st = dbk_report_write(&set, groups, ngroups, out, dirs, ndirs, html);
    if (st == DBK_OK) {
        dbk_runs_print_summary(stdout, &set, groups, ngroups);
        dbk_strbuf dist;
        dbk_strbuf_init(&dist);
        if (dbk_report_distributed(&dist, &set) == DBK_OK) fputs(dbk_strbuf_str(&dist), stdout);
        dbk_strbuf_deinit(&dist);
        printf("\nreport in %s/report.md%s (%d run%s, %d group%s)\n", out, html ? " and report.html" : "", set.count,
               set.count == 1 ? "" : "s", ngroups, ngroups == 1 ? "" : "s");
    } else code = dbk_cli_fail("report");
    dbk_run_groups_destroy(groups, ngroups);
    dbk_run_set_deinit(&set);
    dbk_free(dirs);
    return code;
}
