/*
 * sparse_mask.h — training with a fixed sparse mask (FISH: Sung, Nair and Raffel, "Training
 * Neural Networks with Fixed Sparse Masks", NeurIPS 2021; github.com/varunnair18/FISH,
 * cifar10-fast/fisher.py): which parameters a run updates, as a spec, and the host side of
 * choosing them. docs/sparse-masks.md says what follows the source and what differs.
 *
 * The mask chooses among the *selectable* parameters: every trainable parameter (not in the
 * frozen group) except the classifier's, which always trains (fisher.py's CLASSIFIER_NAME).
 * The classifier is the model's last top-level module: every parameter whose name has the
 * same first component as the last parameter declared ("linear" of "linear.weight"; all of
 * preact-resnet's "classifier.avg.*" and "classifier.max.*").
 *
 * The kept count follows fisher.py: keep = floor(P x K) - C, with P every parameter of the
 * model, K the kept fraction and C the classifier's parameters, so K is the trained share of
 * the whole model. A distributed job of N ranks selects the top N x keep positions and deals
 * them out interleaved by rank of importance (MultiFisherMask: positions r, r + N, r + 2N,
 * ... of the descending order go to rank r), or gives every rank the same top keep
 * (MultiSameFisherMask, the source script's --same_mask).
 *
 * Every parameter outside the mask is left as it is by the optimizer (op_list.h: the update
 * ops' mask slot), momentum and weight decay included; docs/sparse-masks.md says why.
 */
#ifndef DBK_SPARSE_MASK_H
#define DBK_SPARSE_MASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/status.h"
#include "nn/graph.h"

typedef enum dbk_mask_method {
    DBK_MASK_ALL,        /* every parameter trains (no mask; the dense baseline) */
    DBK_MASK_FISHER,     /* the largest empirical Fisher information */
    DBK_MASK_RANDOM,     /* a uniformly random subset of the same size */
} dbk_mask_method;

typedef struct dbk_mask_spec {
    dbk_mask_method method;
    double keep;         /* K: fraction of all parameters trained, classifier included, (0, 1] */
    int    samples;      /* Fisher: single-image batches summed (--mask-samples; 0 = 1024) */
    bool   absolute;     /* Fisher: sum |g| (--mask-grad absolute) instead of g * g */
    bool   fixed;        /* computed once (--fix-mask) instead of at the start of every epoch */
    int    warmup_epochs;/* the first epochs train every parameter (--mask-warmup) */
    bool   same_for_ranks; /* distributed: every rank the same top keep (--mask-split same) */
} dbk_mask_spec;

#define DBK_MASK_DEFAULT_SAMPLES 1024
#define DBK_MASK_MAX_SAMPLES     1000000

/* A spec with method ALL and the defaults (1024 samples, squared gradients, recomputed). */
void       dbk_mask_spec_init(dbk_mask_spec *s);
/* "all", "fisher:K" or "random:K" (K a fraction in (0, 1] or a percentage, e.g. 0.005 or
 * 0.5%) into s's method and keep; DBK_ERR_INVALID_ARG naming what is wrong, s unchanged. */
dbk_status dbk_mask_spec_parse(const char *text, dbk_mask_spec *s);
/* "square" or "absolute" into s->absolute. */
dbk_status dbk_mask_grad_parse(const char *text, dbk_mask_spec *s);
/* "interleave" or "same" into s->same_for_ranks. */
dbk_status dbk_mask_split_parse(const char *text, dbk_mask_spec *s);
/* The method as parsed back: "all", "fisher:0.005", "random:0.1". */
void       dbk_mask_spec_format(const dbk_mask_spec *s, char *out, size_t cap);
const char *dbk_mask_method_name(dbk_mask_method m);          /* "all", "fisher", "random" */

/* A range of the flat parameter buffer (floats). */
typedef struct dbk_mask_range {
    size_t offset, count;
} dbk_mask_range;

/* Where a model's selectable parameters are and how many a mask keeps. */
typedef struct dbk_mask_layout {
    size_t          param_count;      /* P: every parameter of the model */
    size_t          classifier_count; /* C: the classifier's, always trained */
    size_t          frozen_count;     /* in the frozen group: never trained, never selected */
    size_t          selectable_count; /* the rest, in the order of the ranges */
    size_t          keep_count;       /* selected per rank: floor(P K) - C */
    size_t          select_count;     /* selected in all: keep_count x ranks, or keep_count when
                                         every rank has the same mask */
    int             samples;          /* Fisher: images per computation (set by the session: the
                                         spec's, at most the training set) */
    int             range_count;
    dbk_mask_range *ranges;           /* (range_count) selectable ranges, increasing, merged */
    int             classifier_range_count;
    dbk_mask_range *classifier_ranges;/* (classifier_range_count) the classifier's tensors */
    char            classifier[64];   /* the classifier's name prefix, e.g. "linear" */
} dbk_mask_layout;

/* The layout of graph g's parameters (a built graph: offsets final) for spec s and a job of
 * `ranks` ranks (1: one process). DBK_ERR_INVALID_ARG when K leaves nothing to select (the
 * classifier alone is more than P K) or when the ranks' masks do not fit the selectable
 * parameters; the message names the counts. */
dbk_status dbk_mask_layout_init(const dbk_graph *g, const dbk_mask_spec *s, int ranks, dbk_mask_layout *out);
void       dbk_mask_layout_deinit(dbk_mask_layout *l);          /* accepts a zeroed layout */
/* Whether parameter info pi belongs to the classifier of layout l. */
bool       dbk_mask_is_classifier(const dbk_mask_layout *l, const dbk_param_info *pi);

/* One selected position: its index in the packed selectable vector and its importance. */
typedef struct dbk_mask_pick {
    int32_t index;
    float   importance;
} dbk_mask_pick;

/* Rank `rank`'s share of the selection picks[0..n) (any order): sorted by importance
 * descending, ties by index ascending (torch.topk's order, made deterministic), positions
 * rank, rank + ranks, ... (interleaved), or all of them when same. Writes the packed indices,
 * increasing, into out (n / ranks + 1 entries at most) and returns their count. picks is
 * reordered. */
size_t dbk_mask_share(dbk_mask_pick *picks, size_t n, int ranks, int rank, bool same, int32_t *out);

/* A random mask (RandomFisherMask, MultiRandomFisherMask): `count` distinct packed indices of
 * [0, selectable) drawn from seed, as picks whose importance is their draw order's inverse, so
 * dbk_mask_share deals them out as the source deals a random top-k. Returns false when out of
 * memory. */
bool dbk_mask_draw_random(size_t selectable, size_t count, uint64_t seed, dbk_mask_pick *out);

/* ---------------------------------------------------------------------------------- */
/* a run's mask (mask_epoch.c)                                                         */

/* What result.json and the console say about a run's mask. */
typedef struct dbk_mask_report {
    bool   on;                  /* a mask was used (method not ALL) */
    char   spec[40];            /* "fisher:0.005" */
    size_t param_count, classifier_count, frozen_count, selectable_count;
    size_t keep_count;          /* selected per rank */
    size_t select_count;        /* selected in all (ranks x keep, or keep with the same mask) */
    int    samples;             /* Fisher: images per computation (at most the training set) */
    int    computations;        /* masks computed: Fisher importance and selection, or random draws */
    double seconds;             /* their time, on the clock (Fisher: single-image passes included) */
    double mask_bytes;          /* distributed Fisher: rank 0's selection broadcast, whole run */
} dbk_mask_report;

struct dbk_session;
struct dbk_peers;

/* At the start of 1-based epoch `epoch` (after dbk_session_begin_epoch: the Fisher samples are
 * rows of its shuffle): warm-up epochs train every parameter; otherwise the mask is computed
 * (Fisher: on the device from the current parameters; random: drawn from the run's seed and the
 * epoch) at every epoch, or with spec->fixed only at the first epoch after the warm-up (later
 * epochs keep it, also across --resume: resume.ckpt holds it). With peers (a distributed job
 * averaging models, --local-steps) every rank computes the same importance, rank 0's selection
 * is broadcast, each rank takes its share and the averaging learns every rank's. Counts go to
 * rep. Nothing with method ALL. */
dbk_status dbk_mask_begin_epoch(struct dbk_session *s, const dbk_mask_spec *spec, const struct dbk_peers *peers,
                                uint64_t seed, int epoch, dbk_mask_report *rep);
/* The report's fixed part (spec, counts) from the session's layout, keeping its computations,
 * seconds and bytes (a resumed run's so far); on stays false without a mask. */
void       dbk_mask_report_init(dbk_mask_report *rep, const dbk_mask_spec *spec, const struct dbk_session *s);
/* One console line saying what the mask trains (nothing without a mask). */
void       dbk_mask_report_print(const dbk_mask_report *rep, const dbk_mask_spec *spec, int ranks, FILE *out);

#endif
