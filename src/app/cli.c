/* cli.c — shared command-line helpers for the command files (see cli.h). */
#define _POSIX_C_SOURCE 200809L
#include "app/cli.h"

#include "core/fileio.h"
#include "core/path.h"
#include "core/profile.h"
#include "train/recipe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int dbk_cli_fail(const char *what) {
    fprintf(stderr, "daybreak: error: %s%s%s\n", what ? what : "", what && *what ? ": " : "", dbk_last_error());
    return DBK_EXIT_ERROR;
}

int dbk_cli_usage_error(const char *cmd, const char *fmt, ...) {
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fprintf(stderr, "daybreak: error: %s: %s (see 'daybreak %s --help')\n", cmd, message, cmd);
    return DBK_EXIT_USAGE;
}

int dbk_cli_match(dbk_cli_args *a, const char *name, bool takes_value, const char **value) {
    const char *arg = a->argv[a->i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) return 0;
    if (arg[n] == '\0') {
        if (!takes_value) return 1;
        if (a->i + 1 >= a->argc) return -1;
        *value = a->argv[++a->i];
        return 1;
    }
    if (arg[n] == '=' && takes_value) {
        *value = arg + n + 1;
        return 1;
    }
    return 0;
}

bool dbk_cli_parse_long(const char *s, long min, long max, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > max) return false;
    *out = v;
    return true;
}

bool dbk_cli_parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    if (*s == '-') return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end != '\0') return false;
    *out = v;
    return true;
}

bool dbk_cli_parse_seed(const char *s, uint64_t *out) {
    uint64_t v;
    if (!dbk_cli_parse_u64(s, &v) || v > DBK_CLI_MAX_SEED) return false;
    *out = v;
    return true;
}

bool dbk_cli_parse_double(const char *s, double min, double max, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end != '\0' || !(v >= min && v <= max)) return false;
    *out = v;
    return true;
}

/* A percentage 0..100 with at most two decimals: logs.tsv shows accuracies at two decimals and
 * the target is compared with them in hundredths (dbk_results_hundredths). */
static bool parse_target(const char *s, double *out) {
    const char *dot = strchr(s, '.');
    if (dot && strspn(dot + 1, "0123456789") > 2) return false;
    return dbk_cli_parse_double(s, 0.0, 100.0, out);
}

int dbk_cli_parse_clock(const char *s, dbk_clock_mode *out) {
    if (!strcmp(s, "dawnbench")) *out = DBK_CLOCK_DAWNBENCH;
    else if (!strcmp(s, "mlperf")) *out = DBK_CLOCK_MLPERF;
    else return -1;
    return 0;
}

int dbk_cli_check_output(dbk_output_spec *spec, const char *path) {
    dbk_output_add_input(spec, "the profiles folder DBK_PLATFORMS_DIR", dbk_env_platforms_dir(), true);
    dbk_output_add_input(spec, "the kernel folder DBK_KERNEL_DIR", dbk_env_kernel_dir(), true);
    if (!spec->is_dataset_folder) spec->is_dataset_folder = dbk_dataset_is_folder;
    dbk_status st = dbk_output_check(path, spec);
    if (st == DBK_OK) return DBK_EXIT_OK;
    fprintf(stderr, "daybreak: error: %s\n", dbk_last_error());
    return st == DBK_ERR_INVALID_ARG ? DBK_EXIT_USAGE : DBK_EXIT_ERROR;
}

int dbk_cli_check_run_out(const char *out, const char *data_arg, const char *dataset_dir) {
    if (!data_arg) data_arg = getenv("DAYBREAK_DATA");
    dbk_output_spec spec = {.flag = "--out", .what = "run folder", .kind = DBK_OUTPUT_FOLDER};
    dbk_output_add_input(&spec, "the data folder", data_arg, false);
    dbk_output_add_input(&spec, "the dataset folder", dataset_dir, true);
    return dbk_cli_check_output(&spec, out);
}

int dbk_cli_backend_error(dbk_status st) {
    dbk_cli_fail(NULL);
    return st == DBK_ERR_INVALID_ARG ? DBK_EXIT_USAGE : DBK_EXIT_ERROR;
}

int dbk_cli_resolve_device(const char *backend, long device, dbk_backend_kind *kind, int *index) {
    if (!backend) backend = getenv("DBK_BACKEND");
    if (backend && *backend) {
        dbk_status st = dbk_backend_resolve(backend, (int)device, kind, index);
        return st == DBK_OK ? DBK_EXIT_OK : dbk_cli_backend_error(st);
    }
    dbk_backend_default(kind, index);
    if (device >= 0 && dbk_backend_resolve(dbk_backend_kind_name(*kind), (int)device, kind, index) != DBK_OK)
        return dbk_cli_fail(NULL);
    return DBK_EXIT_OK;
}

int dbk_cli_open_dataset(const char *cmd, const char *dataset, const char *data_arg, long train_subset,
                         long test_subset, dbk_dataset_info *out) {
    memset(out, 0, sizeof *out);
    const dbk_dataset_kind *kind;
    if (dbk_dataset_kind_find(dataset, &kind) != DBK_OK) return dbk_cli_fail(NULL);
    if (dbk_dataset_open(kind, data_arg, out) != DBK_OK) return dbk_cli_fail(NULL);
    const long asked[DBK_DATASET_SPLIT_COUNT] = {train_subset, test_subset};
    const char *flag[DBK_DATASET_SPLIT_COUNT] = {"--train-subset", "--test-subset"};
    for (int sp = 0; sp < DBK_DATASET_SPLIT_COUNT; sp++) {
        if (asked[sp] <= out->split_count[sp]) continue;
        /* One line: the limit is a fact of the data, not of the option's syntax. */
        fprintf(stderr, "daybreak: error: %s: %s %ld is more than the %d %s images of %s (in %s)\n", cmd, flag[sp], asked[sp],
                out->split_count[sp], dbk_dataset_split_name((dbk_dataset_split)sp), kind->name, out->dir);
        dbk_dataset_info_deinit(out);
        return DBK_EXIT_USAGE;
    }
    return DBK_EXIT_OK;
}

void dbk_cli_mask_help(void) {
    printf("\nsparse masks and small checkpoints (docs/sparse-masks.md):\n"
           "  --sparse-mask M     fisher:K (the K of all parameters with the largest empirical Fisher\n"
           "                      information train, the classifier included; K a fraction or percentage,\n"
           "                      e.g. 0.005 or 0.5%%), random:K (as many, at random) or all (default);\n"
           "                      the others stay exactly at their starting values\n"
           "  --mask-samples N    Fisher: single training images summed (default 1024)\n"
           "  --mask-grad G       Fisher: square (default) or absolute gradients\n"
           "  --fix-mask          compute the mask once instead of at the start of every epoch\n"
           "  --mask-warmup E     train every parameter for the first E epochs (default 0)\n"
           "  --mask-split S      --distributed --local-steps: interleave (default: each rank its share of\n"
           "                      the top ranks x K) or same (every rank the same top K)\n"
           "  --checkpoint-diff   also write model.diff: the changed parameters against the base (base.ckpt,\n"
           "                      the run's initial model, or --base), for eval/infer --diff\n"
           "  --base FILE         start from this model.ckpt instead of a fresh initialisation\n");
}

/* The handler's one piece of state: where a graceful stop is recorded (train, bench), NULL
 * when a signal ends the process. A handler takes no context, hence a file-level variable. */
static volatile sig_atomic_t *graceful_stop;

static void on_signal(int sig) {
    if (graceful_stop && !*graceful_stop) {
        *graceful_stop = sig;
        return;
    }
    dbk_file_remove_temps();
    signal(sig, SIG_DFL);
    raise(sig);
}

void dbk_cli_catch_signals(volatile sig_atomic_t *stop) {
    graceful_stop = stop;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaddset(&sa.sa_mask, sigs[i]);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

const char *dbk_cli_signal_name(int sig) {
    static _Thread_local char other[32];
    if (sig == SIGINT) return "SIGINT";
    if (sig == SIGTERM) return "SIGTERM";
    if (sig == SIGHUP) return "SIGHUP";
    snprintf(other, sizeof other, "signal %d", sig);
    return other;
}

void dbk_cli_utc_stamp(char *out, size_t cap) {
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(out, cap, "%Y%m%d-%H%M%S", &tmv);
}

char *dbk_cli_join(int argc, char **argv) {
    dbk_strbuf joined;
    dbk_strbuf_init(&joined);
    for (int i = 0; i < argc; i++) dbk_strbuf_appendf(&joined, "%s%s", i ? " " : "", argv[i]);
    if (joined.status == DBK_OK && joined.data) return joined.data;   /* the caller owns it now */
    dbk_strbuf_deinit(&joined);
    return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* the options train and bench share                                                   */

void dbk_cli_train_args_init(dbk_cli_train_args *t) {
    memset(t, 0, sizeof *t);
    t->recipe = dbk_recipe_default_name();
    t->clock = DBK_CLOCK_DAWNBENCH;
    t->device = t->epochs = t->batch = -1;
    t->target = -1.0;
    dbk_mask_spec_init(&t->mask);
}

/* The mask options given on the command line (the rest come from the recipe). */
enum { GIVEN_MASK = 1, GIVEN_SAMPLES = 2, GIVEN_WARMUP = 4, GIVEN_SPLIT = 8 };

/* The sparse-mask options (docs/sparse-masks.md); true when argv[a->i] was one. */
static bool mask_option(dbk_cli_args *a, const char *cmd, dbk_cli_train_args *t, int *exit_code) {
    const char *v = NULL, *arg = a->argv[a->i];
    int m = 0;
    long n = 0;
    bool bad = false;
    dbk_status st = DBK_OK;
#define VALUE(name) ((m = dbk_cli_match(a, name, true, &v)) != 0)
    if (VALUE("--sparse-mask")) {
        st = m > 0 ? dbk_mask_spec_parse(v, &t->mask) : DBK_OK;
        t->mask_given |= GIVEN_MASK;
    } else if (VALUE("--mask-grad")) st = m > 0 ? dbk_mask_grad_parse(v, &t->mask) : DBK_OK;
    else if (VALUE("--mask-split")) {
        st = m > 0 ? dbk_mask_split_parse(v, &t->mask) : DBK_OK;
        t->mask_given |= GIVEN_SPLIT;
    } else if (VALUE("--mask-samples")) {
        bad = m > 0 && !dbk_cli_parse_long(v, 1, DBK_MASK_MAX_SAMPLES, &n);
        t->mask.samples = (int)n;
        t->mask_given |= GIVEN_SAMPLES;
    } else if (VALUE("--mask-warmup")) {
        bad = m > 0 && !dbk_cli_parse_long(v, 0, DBK_MAX_EPOCHS, &n);
        t->mask.warmup_epochs = (int)n;
        t->mask_given |= GIVEN_WARMUP;
    } else if (dbk_cli_match(a, "--fix-mask", false, NULL) > 0) t->mask.fixed = true;
    else return false;
#undef VALUE
    if (strncmp(arg, "--sparse-mask", 13) != 0 && !t->mask_option) t->mask_option = arg;
    if (m < 0) *exit_code = dbk_cli_usage_error(cmd, "option '%s' needs a value", arg);
    else if (st != DBK_OK) *exit_code = dbk_cli_usage_error(cmd, "%s", dbk_last_error());
    else if (bad)
        *exit_code = dbk_cli_usage_error(cmd, "bad %.*s '%s' (%s)", (int)strcspn(arg, "="), arg, v,
                                         !strncmp(arg, "--mask-samples", 14) ? "a number of images, 1..1000000"
                                                                              : "a number of epochs, 0..1000");
    return true;
}

bool dbk_cli_train_option(dbk_cli_args *a, const char *cmd, dbk_cli_train_args *t, int *exit_code) {
    const char *v = NULL, *arg = a->argv[a->i];
    int m = 0;
    bool bad = false;
    *exit_code = DBK_EXIT_OK;
    if (mask_option(a, cmd, t, exit_code)) return true;
#define VALUE(name) ((m = dbk_cli_match(a, name, true, &v)) != 0)
#define FLAG(name) (dbk_cli_match(a, name, false, NULL) > 0)
    if (VALUE("--recipe")) t->recipe = v;
    else if (VALUE("--base")) t->base = v;
    else if (FLAG("--checkpoint-diff")) t->checkpoint_diff = true;
    else if (VALUE("--backend")) t->backend = v;
    else if (VALUE("--data")) t->data = v;
    else if (VALUE("--out")) bad = m > 0 && !*(t->out = v);
    else if (VALUE("--platform")) t->platform = v;
    else if (VALUE("--author")) t->author = v;
    else if (VALUE("--author-email")) t->author_email = v;
    else if (VALUE("--clock")) bad = m > 0 && dbk_cli_parse_clock(v, &t->clock) != 0;
    else if (VALUE("--precision")) bad = m > 0 && !dbk_precision_parse(v, &t->precision);
    else if (VALUE("--device")) bad = m > 0 && !dbk_cli_parse_long(v, 0, 1000, &t->device);
    else if (VALUE("--epochs")) bad = m > 0 && !dbk_cli_parse_long(v, 1, DBK_MAX_EPOCHS, &t->epochs);
    else if (VALUE("--batch")) bad = m > 0 && !dbk_cli_parse_long(v, 1, 65536, &t->batch);
    else if (VALUE("--lr")) bad = m > 0 && !dbk_cli_parse_double(v, 1e-9, 1e6, &t->lr);
    else if (VALUE("--target")) bad = m > 0 && !parse_target(v, &t->target);
    else if (VALUE("--price")) bad = m > 0 && !dbk_cli_parse_double(v, 1e-9, 1e6, &t->price);
    else if (VALUE("--energy-price")) bad = m > 0 && !dbk_cli_parse_double(v, 1e-9, 1e3, &t->energy_price);
    else if (VALUE("--train-subset")) bad = m > 0 && !dbk_cli_parse_long(v, 1, DBK_CLI_MAX_SUBSET, &t->train_subset);
    else if (VALUE("--test-subset")) bad = m > 0 && !dbk_cli_parse_long(v, 1, DBK_CLI_MAX_SUBSET, &t->test_subset);
    else if (VALUE("--loader-threads")) bad = m > 0 && !dbk_cli_parse_long(v, 1, 256, &t->loader_threads);
    else if (VALUE("--image-size")) bad = m > 0 && !dbk_cli_parse_long(v, 8, 1024, &t->image_size);
    else if (VALUE("--image-sizes")) {
        dbk_recipe scratch; /* the syntax now, for a usage error; dbk_cli_train_setup applies it */
        if (m > 0 && dbk_recipe_parse_size_phases(v, &scratch) != DBK_OK) {
            *exit_code = dbk_cli_usage_error(cmd, "bad --image-sizes: %s (EPOCH:SIZE,... e.g. 0:128,14:224)",
                                             dbk_last_error());
            return true;
        }
        t->image_sizes = v;
    } else if (VALUE("--loss-scale-interval")) bad = m > 0 && !dbk_cli_parse_long(v, 1, 1000000, &t->loss_scale_interval);
    else if (FLAG("--all-epochs")) t->all_epochs = true;
    else if (FLAG("--quiet")) t->quiet = true;
    else if (FLAG("--profile")) t->profile = true;
    else if (FLAG("--no-progress")) t->no_progress = true;
    else return false;
#undef VALUE
#undef FLAG
    if (m < 0) *exit_code = dbk_cli_usage_error(cmd, "option '%s' needs a value", arg);
    else if (bad) {
        /* The accepted range, for the message. */
        const char *range = "";
        if (!strncmp(arg, "--clock", 7)) range = " (dawnbench or mlperf)";
        else if (!strncmp(arg, "--out", 5)) range = " (a folder name, not an empty one)";
        else if (!strncmp(arg, "--precision", 11)) range = " (fp32, fp16 or auto)";
        else if (!strncmp(arg, "--epochs", 8)) range = " (1..1000)";
        else if (!strncmp(arg, "--lr", 4)) range = " (the schedule's peak learning rate, > 0)";
        else if (!strncmp(arg, "--target", 8)) range = " (a percentage, 0..100, at most two decimals)";
        else if (!strncmp(arg, "--train-subset", 14) || !strncmp(arg, "--test-subset", 13))
            range = " (a number of images, at least 1)";
        else if (!strncmp(arg, "--loader-threads", 16)) range = " (1..256)";
        else if (!strncmp(arg, "--image-size", 12)) range = " (8..1024 pixels)";
        else if (!strncmp(arg, "--loss-scale-interval", 21)) range = " (1..1000000 steps)";
        else if (!strncmp(arg, "--price", 7)) range = " (USD per hour of this device, above 0, e.g. 2.48)";
        else if (!strncmp(arg, "--energy-price", 14)) range = " (USD per kWh, above 0, e.g. 0.30)";
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(arg, "="), arg);
        *exit_code = dbk_cli_usage_error(cmd, "bad %s '%s'%s", name, v, range);
    }
    return true;
}

int dbk_cli_train_setup(const dbk_cli_train_args *t, dbk_train_options *opt) {
    memset(opt, 0, sizeof *opt);
    const dbk_recipe *recipe;
    if (dbk_recipe_find(t->recipe, &recipe) != DBK_OK) return dbk_cli_fail(NULL);
    opt->recipe = *recipe;
    if (t->epochs > 0) dbk_recipe_set_epochs(&opt->recipe, (int)t->epochs);
    if (t->lr > 0.0) dbk_recipe_set_peak_lr(&opt->recipe, (float)t->lr);
    if (t->batch > 0) {
        opt->recipe.batch = (int)t->batch;
        /* a smaller --batch also caps the evaluation batch (airbench's 2000): a device short of
         * memory for the training batch is short of it for the evaluation batch too */
        if (opt->recipe.eval_batch > opt->recipe.batch) opt->recipe.eval_batch = opt->recipe.batch;
    }
    if (t->target >= 0.0) opt->recipe.target = (float)t->target;
    if (t->image_size > 0 && t->image_sizes) {
        fprintf(stderr, "daybreak: error: --image-size and --image-sizes: give one (a fixed size, or phases)\n");
        return DBK_EXIT_USAGE;
    }
    if (t->image_size > 0) { /* a fixed size replaces the recipe's phases */
        opt->recipe.image_size = (int)t->image_size;
        opt->recipe.size_phase_count = 0;
    }
    if (t->image_sizes && dbk_recipe_parse_size_phases(t->image_sizes, &opt->recipe) != DBK_OK)
        return dbk_cli_fail("--image-sizes");
    int rc = dbk_cli_resolve_device(t->backend, t->device, &opt->backend, &opt->device);
    if (rc != DBK_EXIT_OK) return rc;
    opt->all_epochs = t->all_epochs;
    opt->train_limit = (int32_t)t->train_subset;
    opt->test_limit = (int32_t)t->test_subset;
    opt->loader_threads = (int)t->loader_threads;
    opt->progress = !t->no_progress && !t->quiet && isatty(STDOUT_FILENO);
    opt->quiet = t->quiet;
    opt->profile = t->profile;
    opt->clock = t->clock;
    opt->precision = t->precision;
    opt->loss_scale_interval = (int)t->loss_scale_interval;
    opt->platform = t->platform;
    opt->author = t->author;
    opt->author_email = t->author_email;
    /* The recipe's mask (FISH recipes), under the options given. */
    dbk_mask_spec mask = t->mask;
    const dbk_recipe *r = &opt->recipe;
    if (!(t->mask_given & GIVEN_MASK) && r->sparse_mask && dbk_mask_spec_parse(r->sparse_mask, &mask) != DBK_OK)
        return dbk_cli_fail("recipe");
    if (!(t->mask_given & GIVEN_SAMPLES) && r->mask_samples > 0) mask.samples = r->mask_samples;
    if (!(t->mask_given & GIVEN_WARMUP)) mask.warmup_epochs = r->mask_warmup;
    if (!(t->mask_given & GIVEN_SPLIT)) mask.same_for_ranks = r->mask_same;
    if (t->mask_option && mask.method == DBK_MASK_ALL) {
        fprintf(stderr, "daybreak: error: %.*s needs --sparse-mask fisher:K or random:K\n",
                (int)strcspn(t->mask_option, "="), t->mask_option);
        return DBK_EXIT_USAGE;
    }
    opt->mask = mask;
    opt->checkpoint_diff = t->checkpoint_diff;
    opt->base = t->base;
    opt->price_per_hour = t->price;
    opt->energy_price_per_kwh = t->energy_price;
    opt->energy_root = getenv("DBK_ENERGY_ROOT");     /* test hooks: recorded sysfs trees, a stand-in NVML */
    opt->nvml_library = getenv("DBK_NVML_LIBRARY");
    return DBK_EXIT_OK;
}
