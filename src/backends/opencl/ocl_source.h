/*
 * ocl_source.h — the OpenCL program's source text: every .cl file of cl/ (embedded at build
 * time, or read from DBK_KERNEL_DIR) concatenated in file-name order, as the backend builds
 * it (ocl_program.c) and as tools/bench_gemm.c builds it to time the same machine code.
 *
 * Each file starts with "#pragma OPENCL FP_CONTRACT ON" (OpenCL C's default): a file-scope
 * pragma lasts to the end of the translation unit, so compress.cl's "FP_CONTRACT OFF" once
 * reached every later file and turned gemm_rb's multiply-adds into a multiply and an add.
 * A file's pragmas hold within that file only.
 */
#ifndef DBK_OCL_SOURCE_H
#define DBK_OCL_SOURCE_H

#include "core/fileio.h"
#include "core/status.h"

/* Appends the program source to src (initialised by the caller, which frees it). Errors: a
 * file of DBK_KERNEL_DIR that cannot be read (named), out of memory. */
dbk_status dbk_ocl_source_assemble(dbk_strbuf *src);

#endif
