/*
 * report_sparse.h — the "Sparse masks and small checkpoints" section of `daybreak report`
 * (docs/sparse-masks.md): per run with a sparse mask or a model.diff, the mask and the share of
 * the model it trains, its computations' time, the final accuracy, the difference file's bytes
 * next to model.ckpt's, and for model averaging the bytes per rank of each average and of the
 * whole run next to the dense model average's and the gradient allreduce's.
 */
#ifndef DBK_REPORT_SPARSE_H
#define DBK_REPORT_SPARSE_H

#include "bench/runs.h"
#include "core/fileio.h"

/* Appends the section in Markdown to sb; nothing when no run of the set has a mask or a
 * difference. Reads each run's result.json again. */
dbk_status dbk_report_sparse(dbk_strbuf *sb, const dbk_run_set *set);

#endif
