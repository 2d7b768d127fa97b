/*
 * path.h — whether two paths name the same file or folder, by device and inode (stat), so
 * that an output given as a different string (a symlink, a hard link, "./x", "dir/../x")
 * is still recognised as an input it would overwrite.
 */
#ifndef DBK_PATH_H
#define DBK_PATH_H

#include <stdbool.h>

/* True when both paths exist and are the same file or folder (symlinks followed). */
bool dbk_path_same_file(const char *a, const char *b);

/* True when the folder holding `file` (its dirname; the file itself need not exist) is the
 * existing folder `dir`. */
bool dbk_path_in_folder(const char *file, const char *dir);

#endif
