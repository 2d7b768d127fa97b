/*
 * dist_mpi.c — the job's ranks over MPI (see dist.h): init, the collectives with a deadline,
 * abort. Every collective is nonblocking (MPI-3) and polled with MPI_Test until it completes
 * or the timeout passes, so a peer that died or hangs ends this rank with a message instead
 * of a hang; MPI errors are returned (MPI_ERRORS_RETURN), never fatal inside MPI.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/timer.h"
#include "dist/dist_impl.h"

bool dbk_dist_compiled(void) { return true; }

static dbk_status mpi_error(const dbk_dist *d, int code, const char *call, const char *what) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    return dbk_set_error(DBK_ERR_DEVICE, "rank %d: %s (%s, step %ld) failed: %.*s", d ? d->rank : -1, call, what,
                         d ? d->step : 0L, len, text);
}

dbk_status dbk_dist_init(int *argc, char ***argv, dbk_dist **out) {
    *out = NULL;
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) return mpi_error(NULL, rc, "MPI_Init", "starting the job");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    dbk_dist *d = dbk_calloc(1, sizeof *d);
    if (!d) return DBK_ERR_OUT_OF_HOST_MEMORY;
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    MPI_Comm local;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &local) == MPI_SUCCESS) {
        MPI_Comm_rank(local, &d->local_rank);
        MPI_Comm_free(&local);
    }
    d->opt.timeout_seconds = 120.0;
    *out = d;
    return DBK_OK;
}

int dbk_dist_rank(const dbk_dist *d) { return d->rank; }
int dbk_dist_size(const dbk_dist *d) { return d->size; }
int dbk_dist_local_rank(const dbk_dist *d) { return d->local_rank; }

void dbk_dist_abort(dbk_dist *d, int code) {
    (void)d;
    MPI_Abort(MPI_COMM_WORLD, code);
}

void dbk_dist_finalize(dbk_dist *d) {
    if (!d) return;
    dbk_dist_release_exchange(d);
    dbk_free(d);
    MPI_Finalize();
}

/* Polls req until done or the deadline. Spins for the first millisecond (a step's exchange
 * on one host usually completes by then), then sleeps 50 us between tests so a waiting rank
 * leaves the cores to the ranks still computing. */
static dbk_status wait_for(dbk_dist *d, MPI_Request *req, const char *call, const char *what) {
    const double start = dbk_time_now();
    for (;;) {
        int done = 0;
        int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return mpi_error(d, rc, call, what);
        if (done) return DBK_OK;
        const double waited = dbk_time_now() - start;
        if (waited > d->opt.timeout_seconds)
            return dbk_set_error(DBK_ERR_DEVICE, "rank %d: %s (%s, step %ld) did not complete within %.0f s: another "
                                 "rank failed, died or hangs (--dist-timeout sets the limit)", d->rank, call, what,
                                 d->step, d->opt.timeout_seconds);
        if (waited > 1e-3) nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 50000}, NULL);
    }
}

dbk_status dbk_dist_sum_f32(dbk_dist *d, float *v, size_t n, const char *what) {
    DBK_ASSERT(n <= (size_t)2147483647);
    MPI_Request req;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, v, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) return mpi_error(d, rc, "MPI_Iallreduce", what);
    return wait_for(d, &req, "MPI_Iallreduce", what);
}

dbk_status dbk_dist_reduce_f64(dbk_dist *d, double *v, int n, dbk_peers_op op, const char *what) {
    MPI_Request req;
    int rc;
    if (op == DBK_PEERS_BROADCAST) rc = MPI_Ibcast(v, n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &req);
    else rc = MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, op == DBK_PEERS_SUM ? MPI_SUM : MPI_MAX, MPI_COMM_WORLD,
                             &req);
    const char *call = op == DBK_PEERS_BROADCAST ? "MPI_Ibcast" : "MPI_Iallreduce";
    if (rc != MPI_SUCCESS) return mpi_error(d, rc, call, what);
    return wait_for(d, &req, call, what);
}

dbk_status dbk_dist_broadcast(dbk_dist *d, void *data, size_t bytes, const char *what) {
    if (bytes > (size_t)2147483647)
        return dbk_set_error(DBK_ERR_INVALID_ARG, "rank %d: %s: %zu bytes are more than one MPI message holds (2 GiB)",
                             d->rank, what, bytes);
    MPI_Request req;
    int rc = MPI_Ibcast(data, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) return mpi_error(d, rc, "MPI_Ibcast", what);
    return wait_for(d, &req, "MPI_Ibcast", what);
}

dbk_status dbk_dist_allgather(dbk_dist *d, const void *send, int bytes, void *recv, const char *what) {
    MPI_Request req;
    int rc = MPI_Iallgather(send, bytes, MPI_BYTE, recv, bytes, MPI_BYTE, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) return mpi_error(d, rc, "MPI_Iallgather", what);
    return wait_for(d, &req, "MPI_Iallgather", what);
}

dbk_status dbk_dist_allgatherv(dbk_dist *d, const void *send, int bytes, void *recv, const int *counts,
                               const int *displs, const char *what) {
    MPI_Request req;
    int rc = MPI_Iallgatherv(send, bytes, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) return mpi_error(d, rc, "MPI_Iallgatherv", what);
    return wait_for(d, &req, "MPI_Iallgatherv", what);
}
