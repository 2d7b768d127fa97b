/*
 * test_cli.c — the daybreak command line as a user runs it: help, listings, and every error
 * path (unknown recipe, backend, device, bad flags, missing or broken data, an output folder
 * that already holds a result, an output that is an input), and outputs of hostile strings.
 * Each case checks the exit code AND the one-line message.
 *
 * usage: test_cli <path to daybreak>
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/status.h"
#include "core/utf8.h"
#include "train/checkpoint.h"
#include "test_util.h"

static const char *exe;
static char out[65536];

/* Runs `env_prefix exe args` through sh, capturing stdout+stderr; returns the exit code. */
static int run(const char *env_prefix, const char *args) {
    static char cmd[16384 + 4096];
    snprintf(cmd, sizeof cmd, "%s '%s' %s", env_prefix ? env_prefix : "", exe, args);
    return dbk_test_run_command(cmd, out, sizeof out);
}

static int write_file(const char *path, const char *text);

#define EXPECT(code, needle)                                                                 \
    do {                                                                                     \
        DBK_CHECK_MSG(rc == (code), "exit code %d, expected %d; output:\n%s", rc, code, out); \
        DBK_CHECK_MSG(strstr(out, needle) != NULL, "output lacks '%s':\n%s", needle, out);   \
    } while (0)

static int help_should_list_commands_and_exit_0(void) {
    int rc = run(NULL, "--help");
    EXPECT(0, "commands:");
    rc = run(NULL, "train --help");
    EXPECT(0, "--recipe NAME");
    rc = run(NULL, "eval --help");
    EXPECT(0, "--checkpoint FILE");
    rc = run(NULL, "help devices");
    EXPECT(0, "usage: daybreak devices");
    return 0;
}

static int no_command_should_print_usage_and_exit_2(void) {
    int rc = run(NULL, "");
    EXPECT(2, "usage: daybreak <command>");
    rc = run(NULL, "frobnicate");
    EXPECT(2, "unknown command 'frobnicate'");
    return 0;
}

static int devices_should_list_the_cpu_backend(void) {
    int rc = run(NULL, "devices");
    EXPECT(0, "cpu: 1 device");
    DBK_CHECK(strstr(out, "cpu:0") != NULL);
    return 0;
}

static int recipes_should_list_quick_and_resnet9(void) {
    int rc = run(NULL, "recipes");
    EXPECT(0, "quick");
    DBK_CHECK(strstr(out, "cifar10-resnet9") != NULL);
    DBK_CHECK(strstr(out, "target 94.0%") != NULL);
    return 0;
}

static int unknown_recipe_should_fail_with_the_known_names(void) {
    int rc = run(NULL, "train --recipe nope --quiet");
    EXPECT(1, "unknown recipe 'nope' (known: quick, cifar10-resnet9, airbench94, airbench94-muon, cifar10-speedrun, "
              "cifar10-wrn22, cifar10-wrn22-adamw, cifar10-resnet18, cifar10-alexnet, cifar10-darknet, "
              "fish-small-checkpoints, fish-distributed, fish-quick, fish-distributed-quick, imagenette-resnet18, "
              "imagenet-resnet50)");
    return 0;
}

static int unknown_backend_should_fail(void) {
    int rc = run(NULL, "train --backend cuda --quiet");
    EXPECT(1, "unknown backend 'cuda'");
    return 0;
}

static int missing_device_should_fail_with_the_count(void) {
    int rc = run(NULL, "train --backend cpu:3 --quiet");
    EXPECT(1, "cpu device 3 does not exist (1 device found");
    rc = run(NULL, "train --backend cpu --device 7 --quiet");
    EXPECT(1, "cpu device 7 does not exist");
    return 0;
}

static int bad_flags_should_be_usage_errors(void) {
    int rc = run(NULL, "train --epochs zero");
    EXPECT(2, "bad --epochs 'zero'");
    rc = run(NULL, "train --batch");
    EXPECT(2, "option '--batch' needs a value");
    rc = run(NULL, "train --target 150");
    EXPECT(2, "bad --target '150'");
    rc = run(NULL, "train --target 90.305");
    EXPECT(2, "bad --target '90.305' (a percentage, 0..100, at most two decimals)");
    rc = run(NULL, "train --frob");
    EXPECT(2, "unknown option '--frob'");
    rc = run(NULL, "eval");
    EXPECT(2, "--checkpoint FILE is required");
    return 0;
}

static int missing_data_should_name_the_variable_and_layout(void) {
    int rc = run("env -u DAYBREAK_DATA", "train --backend cpu --quiet");
    EXPECT(1, "DAYBREAK_DATA");
    DBK_CHECK(strstr(out, "cifar-10-batches-bin") != NULL);
    rc = run("env -u DAYBREAK_DATA", "train --backend cpu --quiet --data /nonexistent/daybreak");
    EXPECT(1, "/nonexistent/daybreak");
    return 0;
}

static int truncated_data_should_name_the_file(void) {
    const char *cifar = dbk_test_cifar_dir();
    if (!cifar) return 0; /* the data tests report the skip; nothing to corrupt here */
    const char *dir = dbk_test_tmpdir("cli_truncated");
    DBK_CHECK(dir != NULL);
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/cifar-10-batches-bin' && for f in data_batch_1.bin data_batch_2.bin data_batch_3.bin "
             "data_batch_4.bin data_batch_5.bin test_batch.bin batches.meta.txt; do ln -s '%s'/$f '%s/cifar-10-batches-bin/'$f; done "
             "&& rm '%s/cifar-10-batches-bin/test_batch.bin' && head -c 1000000 '%s/test_batch.bin' > "
             "'%s/cifar-10-batches-bin/test_batch.bin'",
             dir, cifar, dir, dir, cifar, dir);
    DBK_CHECK(system(cmd) == 0);
    char args[8192];
    snprintf(args, sizeof args, "train --backend cpu --quiet --data '%s' --out '%s/out'", dir, dir);
    int rc = run(NULL, args);
    EXPECT(1, "test_batch.bin");
    DBK_CHECK_MSG(strstr(out, "1000000") != NULL, "message should give the size found:\n%s", out);
    return 0;
}

static int existing_result_should_not_be_overwritten(void) {
    const char *dir = dbk_test_tmpdir("cli_existing");
    DBK_CHECK(dir != NULL);
    char path[4200], args[8192];
    snprintf(path, sizeof path, "%s/result.json", dir);
    FILE *f = fopen(path, "w");
    DBK_CHECK(f != NULL);
    fputs("{\"keep\": true}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "train --backend cpu --quiet --out '%s'", dir);
    int rc = run(NULL, args);
    if (dbk_test_cifar_dir() == NULL) return 0; /* without data the data error comes first */
    EXPECT(1, "already exists");
    f = fopen(path, "r");
    DBK_CHECK(f != NULL);
    char buf[64] = "";
    DBK_CHECK(fgets(buf, sizeof buf, f) != NULL);
    fclose(f);
    DBK_CHECK(strcmp(buf, "{\"keep\": true}\n") == 0);
    return 0;
}

/* A batch whose activations cannot fit (ResNet9 at batch 50,000 needs ~177 GiB) is refused
 * before anything is allocated, with the sizes, a batch that fits, exit 1 and no output
 * folder. */
static int a_batch_too_large_for_the_device_should_fail_with_a_hint(void) {
    const char *dir = dbk_test_tmpdir("cli_oom");
    DBK_CHECK(dir != NULL);
    char out_dir[4200], args[8192];
    snprintf(out_dir, sizeof out_dir, "%s/run", dir);
    snprintf(args, sizeof args,
             "train --backend cpu --recipe cifar10-resnet9 --batch 50000 --train-subset 50000 --test-subset 100 "
             "--epochs 1 --quiet --out '%s'",
             out_dir);
    int rc = run(NULL, args);
    if (dbk_test_cifar_dir() == NULL) return 0; /* without data the data error comes first */
    EXPECT(1, "the activations need");
    DBK_CHECK_MSG(strstr(out, "HINT: a batch of about") != NULL, "no batch hint:\n%s", out);
    DBK_CHECK_MSG(access(out_dir, F_OK) != 0, "%s was created by a run that could not start", out_dir);
    return 0;
}

/* The subset flags are checked against the dataset's real split sizes once it is opened: one
 * line naming the flag, the limit and the dataset, exit 2, nothing created. */
static int a_subset_larger_than_the_split_should_be_refused_with_the_limit(void) {
    int rc = run(NULL, "train --train-subset 0");
    EXPECT(2, "bad --train-subset '0'");
    if (dbk_test_cifar_dir() == NULL) return 0; /* without data the data error comes first */
    const char *dir = dbk_test_tmpdir("cli_subset");
    DBK_CHECK(dir != NULL);
    char args[8192];
    snprintf(args, sizeof args, "train --backend cpu --quiet --train-subset 50001 --out '%s/run'", dir);
    rc = run(NULL, args);
    EXPECT(2, "daybreak: error: train: --train-subset 50001 is more than the 50000 training images of cifar10 (in ");
    DBK_CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "not one line:\n%s", out);
    snprintf(args, sizeof args, "%s/run", dir);
    DBK_CHECK_MSG(access(args, F_OK) != 0, "%s was created by a refused run", args);
    rc = run(NULL, "bench --runs 1 --backend cpu --quiet --test-subset 10001");
    EXPECT(2, "daybreak: error: bench: --test-subset 10001 is more than the 10000 test images of cifar10");
    DBK_CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "not one line:\n%s", out);
    return 0;
}

static int missing_checkpoint_should_fail_by_name(void) {
    int rc = run(NULL, "eval --checkpoint /nonexistent/model.ckpt");
    EXPECT(1, "/nonexistent/model.ckpt");
    return 0;
}

static int bench_commands_should_reject_bad_input(void) {
    int rc = run(NULL, "bench --runs 0");
    EXPECT(2, "bad --runs '0' (1..1000)");
    rc = run(NULL, "bench --runs many");
    EXPECT(2, "bad --runs 'many'");
    rc = run(NULL, "bench --recipe quick");
    EXPECT(2, "--runs N is required");
    rc = run(NULL, "bench --runs 2 --clock wallclock");
    EXPECT(2, "bad --clock 'wallclock' (dawnbench or mlperf)");
    rc = run(NULL, "train --clock fast");
    EXPECT(2, "bad --clock 'fast'");
    rc = run(NULL, "infer");
    EXPECT(2, "--checkpoint FILE is required");
    rc = run(NULL, "report");
    EXPECT(2, "give at least one result folder");
    rc = run(NULL, "report --frob x");
    EXPECT(2, "unknown option '--frob'");
    return 0;
}

static int unknown_platform_should_fail_with_the_known_ids(void) {
    int rc = run(NULL, "train --backend cpu --platform nope --quiet");
    EXPECT(1, "nope");
    DBK_CHECK_MSG(strstr(out, "nvidia-v100") != NULL, "the known ids should be listed:\n%s", out);
    rc = run(NULL, "bench --runs 1 --backend cpu --platform nope");
    EXPECT(1, "nope");
    rc = run(NULL, "infer --checkpoint x.ckpt --backend cpu --platform nope");
    EXPECT(1, "nope");
    return 0;
}

static int missing_result_folder_should_fail_by_name(void) {
    int rc = run(NULL, "report /nonexistent/results --out /tmp/never-written");
    EXPECT(1, "result folder /nonexistent/results does not exist");
    const char *dir = dbk_test_tmpdir("cli_empty_results");
    DBK_CHECK(dir != NULL);
    char args[8192];
    snprintf(args, sizeof args, "report '%s' --out '%s/report'", dir, dir);
    rc = run(NULL, args);
    EXPECT(1, "holds no result.json");
    rc = run(NULL, "infer --checkpoint /nonexistent/model.ckpt --backend cpu");
    EXPECT(1, "/nonexistent/model.ckpt");
    return 0;
}

static int platforms_should_list_the_cloud_gpus(void) {
    int rc = run(NULL, "platforms");
    EXPECT(0, "nvidia-k80");
    DBK_CHECK(strstr(out, "USD 3.06/h (AWS p3.2xlarge)") != NULL);
    DBK_CHECK(strstr(out, "intel-arc-a770") != NULL && strstr(out, "amd-mi210") != NULL);
    /* Names whole, never cut mid-word by a column width. */
    DBK_CHECK_MSG(strstr(out, "AMD EPYC (Zen 5), 2 vCPU virtual machine, daybreak CPU reference"), "%s", out);
    return 0;
}

/* `daybreak platforms` must not hide a profile set that cannot be used: a missing
 * DBK_PLATFORMS_DIR, one holding no profile, a profile with a wrong-typed key. Before, each
 * printed the header (or a list) and exited 0. */
static int platforms_should_fail_on_profiles_that_cannot_be_used(void) {
    const char *dir = dbk_test_tmpdir("cli_platforms");
    DBK_CHECK(dir != NULL);
    char env[4400], path[4300];
    snprintf(env, sizeof env, "DBK_PLATFORMS_DIR='%s/missing'", dir);
    int rc = run(env, "platforms");
    EXPECT(1, "cannot open the folder");
    snprintf(env, sizeof env, "DBK_PLATFORMS_DIR='%s'", dir);
    rc = run(env, "platforms");
    EXPECT(1, "holds no *.json profile");
    snprintf(path, sizeof path, "%s/default.json", dir);
    DBK_CHECK(write_file(path, "{\"id\": \"default\", \"opencl\": {\"gemm\": 5}}") == 0);
    rc = run(env, "platforms");
    EXPECT(1, "\"opencl.gemm\" must be a string");
    DBK_CHECK(write_file(path, "{\"id\": \"default\", \"name\": \"fine\", \"peak_fp32_gflops\": 10}") == 0);
    rc = run(env, "platforms");
    EXPECT(0, "fine");
    return 0;
}

/* Writes text to path; returns 0 on success. */
static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fputs(text, f);
    return fclose(f) != 0;
}

static bool file_holds(const char *path, const char *text) {
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return !strcmp(buf, text);
}

/* Outputs never overwrite inputs, however the output path is spelled (the same string, a
 * symlink, a "dir/../" detour): one line naming both, exit 1, the input untouched. */
static int an_output_should_never_overwrite_an_input(void) {
    const char *dir = dbk_test_tmpdir("cli_out_on_input");
    DBK_CHECK(dir != NULL);
    char ckpt[4200], args[16384];
    snprintf(ckpt, sizeof ckpt, "%s/m.ckpt", dir);
    DBK_CHECK(write_file(ckpt, "model bytes") == 0);
    snprintf(args, sizeof args, "ln -s m.ckpt '%s/alias.ckpt' && mkdir '%s/sub'", dir, dir);
    DBK_CHECK(system(args) == 0);
    const char *spellings[] = {"m.ckpt", "alias.ckpt", "sub/../m.ckpt"};
    for (int i = 0; i < 3; i++) {
        char outp[4300];
        snprintf(outp, sizeof outp, "%s/%s", dir, spellings[i]);
        snprintf(args, sizeof args, "infer --checkpoint '%s' --out '%s' --backend cpu", ckpt, outp);
        int rc = run(NULL, args);
        EXPECT(1, "is the --checkpoint file");
        DBK_CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "not one line:\n%s", out);
        DBK_CHECK_MSG(file_holds(ckpt, "model bytes"), "%s was changed", ckpt);
    }

    /* report --out on one of its result folders (given, or found inside a folder of runs). */
    char runs[4200], result[4300];
    snprintf(runs, sizeof runs, "%s/runs/run-01", dir);
    snprintf(args, sizeof args, "mkdir -p '%s'", runs);
    DBK_CHECK(system(args) == 0);
    snprintf(result, sizeof result, "%s/result.json", runs);
    const char *minimal = "{\"status\": \"reached\", \"device\": {}, \"recipe\": {}, \"target\": 25, \"epochs\": []}\n";
    DBK_CHECK(write_file(result, minimal) == 0);
    snprintf(args, sizeof args, "report '%s/runs' --out '%s/runs/'", dir, dir);
    int rc = run(NULL, args);
    EXPECT(1, "is the result folder");
    snprintf(args, sizeof args, "report '%s/runs' --out '%s/runs/run-01/.'", dir, dir);
    rc = run(NULL, args);
    EXPECT(1, "is the result folder");
    snprintf(args, sizeof args, "%s/report.md", runs);
    DBK_CHECK_MSG(access(args, F_OK) != 0, "report wrote into its input folder");
    DBK_CHECK(file_holds(result, minimal));

    /* train and bench --out on the data: a copy of CIFAR-10 made of links, so that nothing can
     * land in the shared data even if the check failed. */
    const char *cifar = dbk_test_cifar_dir();
    if (!cifar) return 0; /* without data the data error comes first */
    snprintf(args, sizeof args,
             "mkdir -p '%s/data/cifar-10-batches-bin' && for f in '%s'/*; do ln -s \"$f\" '%s/data/cifar-10-batches-bin/'; "
             "done",
             dir, cifar, dir);
    DBK_CHECK(system(args) == 0);
    const char *outs[] = {"data", "data/cifar-10-batches-bin", "data/cifar-10-batches-bin/../."};
    for (int i = 0; i < 3; i++) {
        char outp[4300];
        snprintf(outp, sizeof outp, "%s/%s", dir, outs[i]);
        for (int bench = 0; bench < 2; bench++) {
            snprintf(args, sizeof args, "%s --backend cpu --quiet --epochs 1 --data '%s/data' --out '%s'",
                     bench ? "bench --runs 1" : "train", dir, outp);
            rc = run(NULL, args);
            EXPECT(1, i == 1 ? "is the dataset folder" : "is the data folder");
            DBK_CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "not one line:\n%s", out);
        }
    }
    snprintf(args, sizeof args, "test -z \"$(find '%s/data' -name 'logs.tsv' -o -name 'result.json' -o -name 'run-01')\"",
             dir);
    DBK_CHECK_MSG(system(args) == 0, "a refused run wrote into the data folder");
    return 0;
}

/* A hostile --author (invalid UTF-8, quotes, markup) and --out (a multi-byte name with an
 * invalid byte) give JSON that parses, a mlperf.log of valid UTF-8, and a report whose
 * Markdown is valid UTF-8, without raw HTML, with tables whose rows keep their cells (a recipe
 * name with a newline, pipes and a <script>; in the distributed and sparse-mask sections
 * too, with a run folder named with a pipe and backticks beside the one of an invalid byte), and
 * whose SVGs are well-formed XML, with a 900-byte device name cut between characters. One
 * 1-epoch, 64-image CPU run: about 6 s. */
static int hostile_strings_should_give_well_formed_outputs(void) {
    if (dbk_test_cifar_dir() == NULL) return 0; /* the data tests report the skip */
    const char *dir = dbk_test_tmpdir("cli_hostile");
    DBK_CHECK(dir != NULL);
    char args[16384];
    snprintf(args, sizeof args,
             "train --backend cpu --quiet --no-progress --batch 32 --train-subset 64 --test-subset 50 --epochs 1 "
             "--target 0 --author \"$(printf 'Zo\\303\\253 \\377\\376 \"<b>&amp;</b>')\" "
             "--out \"%s/$(printf 'run-\\342\\202\\254-\\377')\"",
             dir);
    int rc = run(NULL, args);
    EXPECT(0, "is not a DAWNBench entry");
    char path[4400];
    snprintf(path, sizeof path, "ls -d '%s'/run-* > '%s/name'", dir, dir);
    DBK_CHECK(system(path) == 0);
    char run_dir[4200] = "";
    snprintf(path, sizeof path, "%s/name", dir);
    FILE *f = fopen(path, "r");
    DBK_CHECK(f != NULL);
    DBK_CHECK(fgets(run_dir, sizeof run_dir, f) != NULL);
    fclose(f);
    run_dir[strcspn(run_dir, "\n")] = '\0';

    const char *files[] = {"result.json", "dawnbench.json", "mlperf.log"};
    for (int i = 0; i < 3; i++) {
        void *data;
        size_t n;
        snprintf(path, sizeof path, "%s/%s", run_dir, files[i]);
        DBK_CHECK_OK(dbk_file_read_all(path, &data, &n));
        bool valid = dbk_utf8_valid(data, n);
        cJSON *root = i < 2 ? cJSON_Parse(data) : NULL;
        bool author_kept = i != 1 || (root && strstr(cJSON_GetObjectItemCaseSensitive(root, "author")->valuestring,
                                                     "Zo\xC3\xAB \xEF\xBF\xBD\xEF\xBF\xBD \"<b>&amp;</b>"));
        cJSON_Delete(root);
        dbk_free(data);
        DBK_CHECK_MSG(valid, "%s is not valid UTF-8", path);
        DBK_CHECK_MSG(i == 2 || root != NULL, "%s does not parse", path);
        DBK_CHECK_MSG(author_kept, "%s: the author should keep its valid characters", path);
    }

    /* A device name too long for the chart labels, made of 3-byte characters. */
    snprintf(path, sizeof path, "%s/result.json", run_dir);
    void *data;
    size_t n;
    DBK_CHECK_OK(dbk_file_read_all(path, &data, &n));
    cJSON *root = cJSON_Parse(data);
    dbk_free(data);
    DBK_CHECK(root != NULL);
    char name[1024] = "";
    for (int i = 0; i < 300; i++) strcat(name, "\xE2\x82\xAC");
    cJSON_SetValuestring(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "device"), "name"),
                         name);
    /* A recipe name that would break report.md's tables (a newline, a pipe) and carry raw HTML. */
    cJSON_SetValuestring(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "recipe"), "name"),
                         "quick\n| evil | <script>alert(1)</script> `x");
    /* The same in the distributed and sparse-mask sections: a device, a compressor and a mask
     * with pipes, backticks and markup, printed beside the run folder (whose name has a pipe:
     * the copy below). */
    cJSON *dist = cJSON_AddObjectToObject(root, "distributed"), *mask = cJSON_AddObjectToObject(root, "sparse_mask");
    cJSON_AddNumberToObject(dist, "ranks", 2);
    cJSON_AddStringToObject(dist, "compress", "topk|`<script>`");
    cJSON *devices = cJSON_AddArrayToObject(dist, "devices");
    cJSON_AddItemToArray(devices, cJSON_CreateString("gpu | <script>alert(2)</script>"));
    cJSON_AddItemToArray(devices, cJSON_CreateString("cpu`\n|"));
    cJSON_AddStringToObject(mask, "mask", "fish|<script>alert(3)</script>");
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    DBK_CHECK(text != NULL);
    DBK_CHECK_OK(dbk_file_write_atomic(path, text, strlen(text)));
    snprintf(args, sizeof args, "mkdir -p '%s/run|`x`' && cp '%s' '%s/run|`x`/'", dir, path, dir);
    rc = dbk_test_run_command(args, out, sizeof out);
    DBK_CHECK_MSG(rc == 0, "%s", out);
    cJSON_free(text);

    snprintf(args, sizeof args, "report \"%s\" '%s/run|`x`' --out '%s/report'", run_dir, dir, dir);
    rc = run(NULL, args);
    EXPECT(0, "report in");
    snprintf(args, sizeof args,
             "cd '%s/report' && python3 -c 'import sys, xml.dom.minidom as m\n"
             "for p in sys.argv[1:]:\n"
             "    m.parse(p)\n"
             "    assert b\"\\xef\\xbf\\xbd\" not in open(p, \"rb\").read(), p + \" has U+FFFD: a label was cut inside a "
             "character\"\n"
             "md = open(\"report.md\", \"rb\").read().decode(\"utf-8\")\n"
             "import re\n"
             "assert not re.search(r\"(?<!\\\\)<script\", md), \"raw HTML in report.md\"\n"
             "assert \"<script\" not in open(\"report.html\", encoding=\"utf-8\").read(), \"a script in report.html\"\n"
             "assert \"## Distributed runs\" in md and \"## Sparse masks\" in md, \"a section is missing\"\n"
             "for table in re.findall(r\"(?m)(?:^\\|.*\\n)+\", md):\n"
             "    rows = table.splitlines()\n"
             "    cells = [len(re.findall(r\"(?<!\\\\)\\|\", row)) for row in rows]\n"
             "    assert len(set(cells)) == 1, \"a table row has another number of cells: \" + repr(rows)\n"
             "' *.svg",
             dir);
    rc = dbk_test_run_command(args, out, sizeof out);
    DBK_CHECK_MSG(rc == 0, "the report's files are not well-formed:\n%s", out);
    return 0;
}

/* Rewrites checkpoint `from` into `to` with every value of tensor `name` set to NaN. */
static int plant_nan(const char *from, const char *to, const char *name) {
    dbk_checkpoint *c = NULL;
    DBK_CHECK_OK(dbk_checkpoint_load(from, &c));
    const int n = dbk_checkpoint_count(c);
    dbk_ckpt_tensor *t = calloc((size_t)n, sizeof *t);
    float *nan_data = NULL;
    bool found = false;
    for (int i = 0; t && i < n; i++) {
        t[i] = *dbk_checkpoint_tensor(c, i);
        if (strcmp(t[i].name, name) != 0) continue;
        int64_t count = 1;
        for (int d = 0; d < t[i].ndim; d++) count *= t[i].shape[d];
        nan_data = malloc((size_t)count * sizeof *nan_data);
        for (int64_t k = 0; nan_data && k < count; k++) nan_data[k] = NAN;
        t[i].data = nan_data;
        found = nan_data != NULL;
    }
    dbk_status st = found ? dbk_checkpoint_save(to, dbk_checkpoint_model(c), dbk_checkpoint_meta(c), t, n) : DBK_ERR_INVALID_ARG;
    free(nan_data);
    free(t);
    dbk_checkpoint_destroy(c);
    DBK_CHECK_MSG(found, "no tensor %s in %s", name, from);
    DBK_CHECK_OK(st);
    return 0;
}

/* A model whose outputs are NaN scores nothing: `eval` and `infer` of a checkpoint with NaN
 * weights (the classifier) or NaN batch-norm running statistics (finite in training, NaN only
 * at evaluation) end with the divergence exit (4) and one line saying why, print no accuracy,
 * and write no inference entry. Before, NaN logits ranked first and both reported 100.00%.
 * (The run's console also says "up to 1 epoch", not "1 epochs".)
 * One 1-epoch, 64-image CPU run to get a real checkpoint: about 3 s. */
static int non_finite_outputs_should_end_eval_and_infer_as_diverged(void) {
    if (dbk_test_cifar_dir() == NULL) return 0; /* the data tests report the skip */
    const char *dir = dbk_test_tmpdir("cli_nan_eval");
    DBK_CHECK(dir != NULL);
    char args[16384], ckpt[4200], bad[4200], entry[4200];
    snprintf(args, sizeof args, "train --backend cpu --no-progress --batch 32 --train-subset 64 "
             "--test-subset 50 --epochs 1 --target 0 --out '%s/run'", dir);
    int rc = run(NULL, args);
    EXPECT(0, "results in");
    /* one epoch is "1 epoch" (it was "up to 1 epochs") */
    DBK_CHECK_MSG(strstr(out, "up to 1 epoch,") && !strstr(out, "1 epochs"), "%s", out);
    snprintf(ckpt, sizeof ckpt, "%s/run/model.ckpt", dir);
    const char *tensors[] = {"linear.weight", "layer3.bn.running_var"};
    for (int i = 0; i < 2; i++) {
        snprintf(bad, sizeof bad, "%s/nan-%d.ckpt", dir, i);
        DBK_CHECK(plant_nan(ckpt, bad, tensors[i]) == 0);
        snprintf(args, sizeof args, "eval --backend cpu --checkpoint '%s' --test-subset 50", bad);
        rc = run(NULL, args);
        EXPECT(4, "daybreak: error: ");
        DBK_CHECK_MSG(strstr(out, "not finite") && !strstr(out, "accuracy "), "%s: eval output:\n%s", tensors[i], out);
        DBK_CHECK_MSG(strchr(out, '\n') == out + strlen(out) - 1, "not one line:\n%s", out);
        snprintf(entry, sizeof entry, "%s/nan-%d.json", dir, i);
        snprintf(args, sizeof args, "infer --backend cpu --checkpoint '%s' --test-subset 20 --out '%s'", bad, entry);
        rc = run(NULL, args);
        EXPECT(4, "not finite");
        DBK_CHECK_MSG(!strstr(out, "accuracy "), "%s: infer output:\n%s", tensors[i], out);
        DBK_CHECK_MSG(access(entry, F_OK) != 0, "infer wrote %s for a model with NaN outputs", entry);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_cli <daybreak executable>\n");
        return 2;
    }
    exe = argv[1];
    /* Cases that need the data return early without it (their data error comes first). */
    if (!dbk_test_cifar_dir()) dbk_test_note_missing("the cases that need CIFAR-10", DBK_TEST_NO_CIFAR);
    DBK_RUN(help_should_list_commands_and_exit_0);
    DBK_RUN(no_command_should_print_usage_and_exit_2);
    DBK_RUN(devices_should_list_the_cpu_backend);
    DBK_RUN(recipes_should_list_quick_and_resnet9);
    DBK_RUN(unknown_recipe_should_fail_with_the_known_names);
    DBK_RUN(unknown_backend_should_fail);
    DBK_RUN(missing_device_should_fail_with_the_count);
    DBK_RUN(bad_flags_should_be_usage_errors);
    DBK_RUN(missing_data_should_name_the_variable_and_layout);
    DBK_RUN(truncated_data_should_name_the_file);
    DBK_RUN(existing_result_should_not_be_overwritten);
    DBK_RUN(a_subset_larger_than_the_split_should_be_refused_with_the_limit);
    DBK_RUN(missing_checkpoint_should_fail_by_name);
    DBK_RUN(a_batch_too_large_for_the_device_should_fail_with_a_hint);
    DBK_RUN(bench_commands_should_reject_bad_input);
    DBK_RUN(unknown_platform_should_fail_with_the_known_ids);
    DBK_RUN(missing_result_folder_should_fail_by_name);
    DBK_RUN(platforms_should_list_the_cloud_gpus);
    DBK_RUN(platforms_should_fail_on_profiles_that_cannot_be_used);
    DBK_RUN(an_output_should_never_overwrite_an_input);
    DBK_RUN(hostile_strings_should_give_well_formed_outputs);
    DBK_RUN(non_finite_outputs_should_end_eval_and_infer_as_diverged);
    return dbk_test_finish();
}
