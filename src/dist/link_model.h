/*
 * link_model.h — a model of the gradient exchange's time on a network link of a stated
 * bandwidth and latency (this machine's "network" is shared memory, so the measured exchange
 * time says little about a cluster). It is the textbook alpha-beta cost of the ring
 * algorithms (Thakur, Rabenseifner and Gropp, "Optimization of collective communication
 * operations in MPICH", IJHPCA 2005), not a measurement:
 *
 *   allreduce of B bytes over N ranks (ring):  2 (N-1) (alpha + B / (N beta))
 *   allgather of payloads p_r (ring):          (N-1) alpha + (sum p_r - min p_r) / beta
 *
 * alpha = latency per message, beta = bandwidth in bytes per second.
 */
#ifndef DBK_LINK_MODEL_H
#define DBK_LINK_MODEL_H

#include <stddef.h>

typedef struct dbk_link {
    double gbps;        /* gigabits per second */
    double latency_us;  /* per message */
} dbk_link;

double dbk_link_allreduce_seconds(const dbk_link *l, int ranks, double bytes);
/* payload[r]: bytes rank r contributes. */
double dbk_link_allgather_seconds(const dbk_link *l, int ranks, const double *payload);

#endif
