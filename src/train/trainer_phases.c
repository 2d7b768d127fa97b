/*
 * trainer_phases.c — progressive resizing: the recipe's size phases, checked before the run
 * and entered at their first epochs (see trainer_impl.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "train/trainer_impl.h"

#include <stdio.h>

#include "core/timer.h"

/* Progressive resizing (recipe size phases): only for image folders, one process, and a model
 * whose parameters do not depend on the image size, refused before anything is allocated. */
dbk_status dbk_trainer_check_size_phases(const dbk_train_options *opt, const dbk_dataset_kind *kind) {
    const dbk_recipe *rc = &opt->recipe;
    if (rc->size_phase_count == 0) return DBK_OK;
    if (kind->residency != DBK_DATASET_STREAMED)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "image sizes: dataset %s has fixed images (progressive resizing is "
                             "for image-folder datasets only)", kind->name);
    if (opt->peers)
        return dbk_set_error(DBK_ERR_UNSUPPORTED, "image sizes: progressive resizing with --distributed is not "
                             "supported yet");
    const dbk_model_def *model;
    DBK_TRY(dbk_model_find(rc->model, &model));
    int sizes[DBK_RECIPE_MAX_SIZE_PHASES];
    for (int i = 0; i < rc->size_phase_count; i++) sizes[i] = rc->size_phases[i].size;
    /* Checked before the dataset is read: the classes shape only the last layer, alike at every size. */
    return dbk_model_check_sizes(model, 3, sizes, rc->size_phase_count, 10);
}

/* The image size of the run's first epoch, said on the console; a resumed run starts in the
 * phase of its next epoch. */
dbk_status dbk_trainer_first_size_phase(dbk_trainer_run *r, const dbk_train_options *opt, const dbk_train_report *rep) {
    const dbk_recipe *rc = &opt->recipe;
    const int first_epoch0 = rep->epochs_run, size = dbk_recipe_image_size_at(rc, first_epoch0);
    r->size_phase = dbk_recipe_size_phase_at(rc, first_epoch0);
    if (size > 0 && !dbk_dataset_set_image_size(&r->data, size))
        return dbk_set_error(DBK_ERR_INVALID_ARG, "image size %d: dataset %s has fixed %dx%d images (the size is a "
                             "choice for image-folder datasets only)", size, r->data.kind->name, r->data.shape.height,
                             r->data.shape.width);
    if (r->size_phase >= 0 && !opt->quiet) dbk_trainer_print_size_phase(rc, r->size_phase, first_epoch0, "");
    return DBK_OK;
}

/* Says which size the run trains at from the epoch (0-based) epoch0 on. */
void dbk_trainer_print_size_phase(const dbk_recipe *rc, int phase, int epoch0, const char *how) {
    char schedule[128];
    dbk_recipe_format_size_phases(rc, schedule, sizeof schedule);
    printf("image size %dx%d from epoch %d (phase %d of %d of %s)%s\n", rc->size_phases[phase].size,
           rc->size_phases[phase].size, epoch0 + 1, phase + 1, rc->size_phase_count, schedule, how);
    fflush(stdout);
}

/* At the first epoch of a size phase: the session and the decode threads rebuilt at the
 * phase's size, with the same parameters, statistics and optimizer state. The old session is
 * destroyed (its activations freed) before the new one allocates. On the clock: it is part of
 * the training, except the new session's program builds (its creation and warm-up), which are
 * off the clock like the first session's. Runs at every phase boundary, even one that keeps
 * the size. */
dbk_status dbk_trainer_enter_size_phase(dbk_trainer_run *r, const dbk_train_options *opt, dbk_train_report *rep,
                                        int epoch0, double *clock) {
    const dbk_recipe *rc = &opt->recipe;
    const int phase = dbk_recipe_size_phase_at(rc, epoch0);
    if (phase == r->size_phase) return DBK_OK;
    dbk_energy_clock_start(&r->energy);
    const double t0 = dbk_time_now(), built0 = rep->builds.session_seconds;
    dbk_session_state *state;
    DBK_TRY(dbk_session_state_take(r->session, &state));
    dbk_session_destroy(r->session);
    r->session = NULL;
    dbk_loader_destroy(r->loader);
    dbk_loader_destroy(r->eval_loader);
    r->loader = r->eval_loader = NULL;
    const bool resized = dbk_dataset_set_image_size(&r->data, rc->size_phases[phase].size);
    DBK_ASSERT(resized); /* check_size_phases: an image-folder dataset */
    dbk_status st = dbk_trainer_create_loaders(r, opt, rep, phase);
    const double warmed0 = rep->builds.warmup_seconds;
    dbk_energy_clock_stop(&r->energy);   /* the programs' builds are off the clock, their energy too */
    if (st == DBK_OK) st = dbk_trainer_create_session(r, opt, rep);
    if (st == DBK_OK) st = dbk_trainer_warm_up(r, opt, rep, false); /* the phase's line says it */
    dbk_energy_clock_start(&r->energy);
    if (st == DBK_OK) st = dbk_session_state_put(r->session, state);
    dbk_session_state_destroy(state);
    DBK_TRY(st);
    r->size_phase = phase;
    const double built = rep->builds.session_seconds - built0 + rep->builds.warmup_seconds - warmed0;
    const double seconds = dbk_time_now() - t0 - built;
    dbk_energy_clock_stop(&r->energy);
    *clock += seconds;
    if (!opt->quiet) {
        char how[96];
        snprintf(how, sizeof how, ": rebuilt in %.2f s on the clock, programs built in %.2f s off it", seconds, built);
        dbk_trainer_print_size_phase(rc, phase, epoch0, how);
    }
    return DBK_OK;
}
