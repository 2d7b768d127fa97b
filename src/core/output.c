/* output.c — the guarded choice of an output path (see output.h). */
#define _XOPEN_SOURCE 700
#include "core/output.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/path.h"

void dbk_output_add_input(dbk_output_spec *spec, const char *what, const char *path, bool contains) {
    DBK_ASSERT(spec->input_count < DBK_OUTPUT_MAX_INPUTS);
    if (!path || !*path) return;
    spec->inputs[spec->input_count++] = (dbk_output_input){.what = what, .path = path, .contains = contains};
}

static const dbk_output_input *input_at(const dbk_output_spec *spec, int i) {
    return i < spec->input_count ? &spec->inputs[i] : &spec->more_inputs[i - spec->input_count];
}

/* dirname of path into out, without touching path ("x" -> ".", "/x" -> "/"). */
static void parent_of(const char *path, char *out, size_t cap) {
    snprintf(out, cap, "%s", path);
    size_t n = strlen(out);
    while (n > 1 && out[n - 1] == '/') out[--n] = '\0';   /* "dir/" names dir */
    char *slash = strrchr(out, '/');
    if (!slash) snprintf(out, cap, ".");
    else if (slash == out) out[1] = '\0';
    else *slash = '\0';
}

/* The folder whose place decides where the output lands: a file's folder (which must exist), or
 * for a folder the folder itself or the nearest existing one above it (mkdir -p creates the
 * rest). Resolved with realpath into real. */
static dbk_status existing_anchor(const char *path, const dbk_output_spec *spec, char *real) {
    char dir[PATH_MAX];
    if (spec->kind == DBK_OUTPUT_FILE) {
        parent_of(path, dir, sizeof dir);
        struct stat st;
        if (stat(dir, &st) != 0)
            return dbk_set_error(DBK_ERR_IO, "%s %s: cannot write into %s: %s", spec->flag, path, dir,
                                 errno == ENOENT ? "the folder does not exist" : strerror(errno));
        if (!S_ISDIR(st.st_mode))
            return dbk_set_error(DBK_ERR_IO, "%s %s: %s is %s, not a folder", spec->flag, path, dir,
                                 dbk_file_kind_name(st.st_mode));
    } else {
        snprintf(dir, sizeof dir, "%s", path);
        struct stat st;
        while (stat(dir, &st) != 0) {
            if (errno != ENOENT)
                return dbk_set_error(DBK_ERR_IO, "%s %s: cannot use %s: %s", spec->flag, path, dir, strerror(errno));
            char up[PATH_MAX];
            parent_of(dir, up, sizeof up);
            if (!strcmp(up, dir)) break;
            snprintf(dir, sizeof dir, "%s", up);
        }
        if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
            return dbk_set_error(DBK_ERR_IO, "%s %s: %s is %s, not a folder", spec->flag, path, dir,
                                 dbk_file_kind_name(st.st_mode));
    }
    if (!realpath(dir, real))
        return dbk_set_error(DBK_ERR_IO, "%s %s: cannot resolve %s: %s", spec->flag, path, dir, strerror(errno));
    if (access(real, W_OK) != 0)
        return dbk_set_error(DBK_ERR_IO, "%s %s: cannot write into %s: %s", spec->flag, path, real, strerror(errno));
    return DBK_OK;
}

/* The anchor and every folder above it: none may be a dataset folder or an input whose
 * contents are inputs. */
static dbk_status check_ancestors(const char *path, const dbk_output_spec *spec, const char *real) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", real);
    for (;;) {
        for (int i = 0; i < spec->input_count + spec->more_count; i++) {
            const dbk_output_input *in = input_at(spec, i);
            if (in->contains && dbk_path_same_file(dir, in->path))
                return dbk_set_error(DBK_ERR_IO, "%s %s lies inside %s %s; an output must not go among the inputs, "
                                     "choose another %s", spec->flag, path, in->what, in->path, spec->flag);
        }
        if (spec->is_dataset_folder && spec->is_dataset_folder(dir))
            return dbk_set_error(DBK_ERR_IO, "%s %s lies inside the dataset folder %s; an output must not go among a "
                                 "dataset's files, choose another %s", spec->flag, path, dir, spec->flag);
        if (!strcmp(dir, "/")) return DBK_OK;
        char up[PATH_MAX];
        parent_of(dir, up, sizeof up);
        snprintf(dir, sizeof dir, "%s", up);
    }
}

dbk_status dbk_output_check(const char *path, const dbk_output_spec *spec) {
    if (!path || !*path)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s \"\": an empty name; give the %s a %s name", spec->flag, spec->what,
                             spec->kind == DBK_OUTPUT_FILE ? "file" : "folder");
    if (strlen(path) >= PATH_MAX - 64)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "%s: a path of %zu bytes is too long", spec->flag, strlen(path));
    struct stat st;
    const bool exists = stat(path, &st) == 0;
    if (!exists && errno != ENOENT)
        return dbk_set_error(DBK_ERR_IO, "%s %s: cannot use it: %s", spec->flag, path, strerror(errno));
    const bool want_dir = spec->kind == DBK_OUTPUT_FOLDER;
    if (exists && (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)))
        return dbk_set_error(DBK_ERR_IO, "%s %s is %s, not %s; choose another %s", spec->flag, path,
                             dbk_file_kind_name(st.st_mode), want_dir ? "a folder" : "a regular file", spec->flag);
    for (int i = 0; i < spec->input_count + spec->more_count; i++) {
        const dbk_output_input *in = input_at(spec, i);
        if (dbk_path_same_file(path, in->path))
            return dbk_set_error(DBK_ERR_IO, "%s %s is %s %s; an output must not overwrite an input, choose another %s",
                                 spec->flag, path, in->what, in->path, spec->flag);
    }
    char real[PATH_MAX];
    DBK_TRY(existing_anchor(path, spec, real));
    DBK_TRY(check_ancestors(path, spec, real));
    if (exists && !want_dir && !(spec->is_earlier_output && spec->is_earlier_output(path)))
        return dbk_set_error(DBK_ERR_IO, "%s %s exists and is not a %s that daybreak wrote; it is not replaced: remove "
                             "it or choose another %s", spec->flag, path, spec->what, spec->flag);
    char why[512] = "";
    if (exists && want_dir && spec->accept_folder && !spec->accept_folder(path, why, sizeof why))
        return dbk_set_error(DBK_ERR_IO, "%s %s %s; choose another %s", spec->flag, path, why, spec->flag);
    return DBK_OK;
}
