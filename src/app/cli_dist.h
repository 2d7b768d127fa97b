/*
 * cli_dist.h — the options of `daybreak train --distributed` (docs/distributed.md) and the
 * start of the job's ranks (src/dist/dist.h).
 */
#ifndef DBK_CLI_DIST_H
#define DBK_CLI_DIST_H

#include "app/cli.h"
#include "dist/dist.h"

typedef struct dbk_cli_dist_args {
    bool        distributed, device_per_rank;
    const char *first_other;      /* the first distributed option seen (an error without --distributed) */
    dbk_dist_options opt;
    bool        links_given;
    bool        local_steps_given;  /* --local-steps (else the recipe's, for FISH recipes) */
} dbk_cli_dist_args;

void dbk_cli_dist_args_init(dbk_cli_dist_args *d);

/* Tries argv[a->i] as a distributed option; true when it was one (*exit_code DBK_EXIT_OK, or
 * DBK_EXIT_USAGE after printing why its value is bad). */
bool dbk_cli_dist_option(dbk_cli_args *a, dbk_cli_dist_args *d, int *exit_code);

/* After parsing: a distributed option without --distributed is a usage error. Returns an
 * exit code. */
int  dbk_cli_dist_check(const dbk_cli_dist_args *d);

/* The recipe's --local-steps when it has one and the command line gave none; then
 * dbk_cli_dist_check again. Returns an exit code. */
int  dbk_cli_dist_recipe_defaults(dbk_cli_dist_args *d, const char *recipe);

/* Starts the job (MPI_Init) and configures it with the run's seed; returns an exit code
 * (DBK_EXIT_ERROR with one line when the build has no MPI or MPI cannot start). */
int  dbk_cli_dist_start(dbk_cli_dist_args *d, uint64_t seed, dbk_dist **out);

/* The help lines of the distributed options. */
void dbk_cli_dist_help(void);

#endif
