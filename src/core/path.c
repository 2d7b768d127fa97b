/* path.c — same-file test by device and inode (path.h). */
#define _POSIX_C_SOURCE 200809L
#include "core/path.h"

#include <libgen.h>
#include <stdio.h>
#include <sys/stat.h>

bool dbk_path_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    if (!a || !b || stat(a, &sa) != 0 || stat(b, &sb) != 0) return false;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool dbk_path_in_folder(const char *file, const char *dir) {
    char copy[4096];
    if (!file || snprintf(copy, sizeof copy, "%s", file) >= (int)sizeof copy) return false;
    return dbk_path_same_file(dirname(copy), dir);
}
