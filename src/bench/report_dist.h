/*
 * report_dist.h — the "Distributed runs" section of `daybreak report` (docs/distributed.md):
 * per distributed run its ranks and devices, compression, bytes per step (and the ratio to
 * the dense gradient), time per step split into compute and exchange, the modelled time per
 * step on each stated link (a model, labelled so), and the scaling efficiency against a
 * one-process run of the same recipe and training images in the same report, when there is one.
 */
#ifndef DBK_REPORT_DIST_H
#define DBK_REPORT_DIST_H

#include "bench/runs.h"
#include "core/fileio.h"

/* Appends the section in Markdown to sb; nothing when the set has no distributed run. Reads
 * each run's result.json again (DBK_ERR_FORMAT naming a malformed one). */
dbk_status dbk_report_distributed(dbk_strbuf *sb, const dbk_run_set *set);

#endif
