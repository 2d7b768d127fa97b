/* cmd_report.c — `daybreak report DIR... [--out DIR]` (bench/report.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

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
            if (m < 0) {
                dbk_free(dirs);
                return dbk_cli_usage_error("report", "option '%s' needs a value", arg);
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
    for (int i = 0; i < ndirs && code == DBK_EXIT_OK; i++)
        code = dbk_cli_refuse_output_on_input("--out", out, "the result folder", dirs[i]);
    for (int i = 0; i < ndirs && st == DBK_OK && code == DBK_EXIT_OK; i++) st = dbk_run_set_add(&set, dirs[i]);
    /* A folder of runs may hold --out among its run folders. */
    for (int i = 0; i < set.count && st == DBK_OK && code == DBK_EXIT_OK; i++)
        code = dbk_cli_refuse_output_on_input("--out", out, "the result folder", set.runs[i].dir);
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
