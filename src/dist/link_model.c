/*
 * link_model.c — the alpha-beta time of ring collectives (see link_model.h).
 */
#include "dist/link_model.h"

static double bytes_per_second(const dbk_link *l) { return l->gbps * 1e9 / 8.0; }

double dbk_link_allreduce_seconds(const dbk_link *l, int ranks, double bytes) {
    if (ranks < 2) return 0.0;
    const double steps = 2.0 * (ranks - 1);
    return steps * (l->latency_us * 1e-6 + bytes / ranks / bytes_per_second(l));
}

double dbk_link_allgather_seconds(const dbk_link *l, int ranks, const double *payload) {
    if (ranks < 2) return 0.0;
    double sum = 0.0, min = payload[0];
    for (int r = 0; r < ranks; r++) {
        sum += payload[r];
        if (payload[r] < min) min = payload[r];
    }
    return (ranks - 1) * l->latency_us * 1e-6 + (sum - min) / bytes_per_second(l);
}
