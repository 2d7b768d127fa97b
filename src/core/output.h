/*
 * output.h — the one guarded way to choose where daybreak writes an output a user named.
 *
 * Every command's output option (train and bench --out folders, infer --out, pack-data --out,
 * report --out, tune --out, and any option added later) is checked with dbk_output_check
 * BEFORE any work is done, and the file is then written through core/fileio.h
 * (dbk_file_write_atomic, or dbk_atomic_file for a file written piece by piece), which never
 * leaves a half-written target or a temp file, signals included. Commands in src/app call it
 * through dbk_cli_check_output (app/cli.h), which adds the dataset recognition of
 * data/dataset.h and prints the one-line refusal.
 *
 * What is refused, each with one line naming the path and the reason:
 *  - an empty path;
 *  - an existing target of the wrong kind: for a file, anything but a regular file (a device
 *    such as /dev/null, a FIFO, a folder); for a folder, anything but a folder;
 *  - any input of the command (the data folder, the dataset's folder, a checkpoint, a profile,
 *    the result folders a report reads), the same file or folder however spelled (symlinks,
 *    "dir/../x"; by device and inode), and for inputs marked `contains`, anything inside them;
 *  - anything inside a dataset folder, any dataset's (recognised by spec->is_dataset_folder on
 *    the output's folder and each folder above it), not only the one the command reads;
 *  - another program's or another run's file: an existing file is replaced only when
 *    spec->is_earlier_output recognises it as one this output option wrote before (an earlier
 *    inference entry, pack, profile); an existing folder is used only when spec->accept_folder
 *    says so (a report folder, a fresh run folder);
 *  - a folder that does not exist (for a file) or cannot be written into.
 */
#ifndef DBK_OUTPUT_H
#define DBK_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define DBK_OUTPUT_MAX_INPUTS 16

typedef enum dbk_output_kind { DBK_OUTPUT_FILE, DBK_OUTPUT_FOLDER } dbk_output_kind;

/* One input of the command: the output must not be it (and, with contains, not inside it). A
 * NULL or empty path is skipped. */
typedef struct dbk_output_input {
    const char *what;       /* for the message: "the --checkpoint file", "the dataset folder" */
    const char *path;
    bool        contains;   /* a folder whose contents are inputs too (a dataset, a result folder) */
} dbk_output_input;

typedef struct dbk_output_spec {
    const char     *flag;            /* the option, for messages: "--out" */
    const char     *what;            /* what is written: "DAWNBench inference entry", "dataset pack" */
    dbk_output_kind kind;
    dbk_output_input inputs[DBK_OUTPUT_MAX_INPUTS];
    int             input_count;
    /* More inputs, for a command that reads many (report: every run folder); may be NULL. */
    const dbk_output_input *more_inputs;
    int             more_count;
    /* FILE: whether an existing regular file is an earlier output of this option (so it may be
     * replaced); NULL: an existing file is always refused. */
    bool (*is_earlier_output)(const char *path);
    /* FOLDER: whether an existing folder may receive the output; fills why (a reason for the
     * refusal, why_cap bytes) when not. NULL: any folder. */
    bool (*accept_folder)(const char *dir, char *why, size_t why_cap);
    /* Whether dir is a dataset's folder (data/dataset.h knows their layouts); NULL: none is. */
    bool (*is_dataset_folder)(const char *dir);
} dbk_output_spec;

/* Checks path as the output spec describes, before any work. DBK_OK when it may be written
 * (its folder, or for a FOLDER the nearest existing folder above it, exists and is writable);
 * otherwise DBK_ERR_INVALID_ARG for an empty path and DBK_ERR_IO for a refusal, with a
 * one-line message naming the path and the reason. Creates and changes nothing. */
dbk_status dbk_output_check(const char *path, const dbk_output_spec *spec);

/* Adds an input to spec (ignored past DBK_OUTPUT_MAX_INPUTS, which is a programming error). */
void dbk_output_add_input(dbk_output_spec *spec, const char *what, const char *path, bool contains);

#endif
