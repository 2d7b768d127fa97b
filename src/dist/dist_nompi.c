/*
 * dist_nompi.c — the build without MPI (CMake did not find it): dbk_dist_init says so, and
 * no dbk_dist ever exists, so the collectives below are never reached.
 */
#include "core/alloc.h"
#include "dist/dist_impl.h"

bool dbk_dist_compiled(void) { return false; }

dbk_status dbk_dist_init(int *argc, char ***argv, dbk_dist **out) {
    (void)argc;
    (void)argv;
    *out = NULL;
    return dbk_set_error(DBK_ERR_UNSUPPORTED, "this daybreak was built without MPI; install libopenmpi-dev "
                         "(tools/install-deps.sh) and configure again to use --distributed");
}

int  dbk_dist_rank(const dbk_dist *d) { return d->rank; }
int  dbk_dist_size(const dbk_dist *d) { return d->size; }
int  dbk_dist_local_rank(const dbk_dist *d) { return d->local_rank; }
void dbk_dist_abort(dbk_dist *d, int code) {
    (void)d;
    (void)code;
}
void dbk_dist_finalize(dbk_dist *d) {
    if (!d) return;
    dbk_dist_release_exchange(d);
    dbk_free(d);
}

static dbk_status no_mpi(void) { return dbk_set_error(DBK_ERR_UNSUPPORTED, "this daybreak was built without MPI"); }

dbk_status dbk_dist_sum_f32(dbk_dist *d, float *v, size_t n, const char *what) {
    (void)d, (void)v, (void)n, (void)what;
    return no_mpi();
}
dbk_status dbk_dist_reduce_f64(dbk_dist *d, double *v, int n, dbk_peers_op op, const char *what) {
    (void)d, (void)v, (void)n, (void)op, (void)what;
    return no_mpi();
}
dbk_status dbk_dist_broadcast(dbk_dist *d, void *data, size_t bytes, const char *what) {
    (void)d, (void)data, (void)bytes, (void)what;
    return no_mpi();
}
dbk_status dbk_dist_allgather(dbk_dist *d, const void *send, int bytes, void *recv, const char *what) {
    (void)d, (void)send, (void)bytes, (void)recv, (void)what;
    return no_mpi();
}
dbk_status dbk_dist_allgatherv(dbk_dist *d, const void *send, int bytes, void *recv, const int *counts,
                               const int *displs, const char *what) {
    (void)d, (void)send, (void)bytes, (void)recv, (void)counts, (void)displs, (void)what;
    return no_mpi();
}
