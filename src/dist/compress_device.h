/*
 * compress_device.h — the compressors that run on the training device: top-k and threshold
 * selection (op SPARSE_SELECT), random-k's packing of the indices the host draws
 * (SPARSE_GATHER: only the draws, 4 bytes per kept value, go to the device), TernGrad's and
 * QSGD's scales, stochastic rounding and bit packing (QUANT_ENCODE), error feedback (ADD,
 * COPY, SPARSE_ADD or QUANT_ADD) and the decoding and averaging of every rank's payload
 * (FILL, SPARSE_ADD or QUANT_ADD), so that per step only the payload crosses to the host (for
 * MPI) and the received payloads cross back.
 *
 * It works on a packed vector of n floats on the device, cut into the host compressor's
 * segments (dbk_compressor_segments); its payloads are byte for byte those of
 * dbk_compressor_encode (pairs {uint32 index, float value} in index order per segment, or
 * per segment a scale and packed codes), its residual and its decoded mean those of the host
 * path, so the two paths train identically. Every call enqueues ops on the backend; only the
 * reads back wait (a blocking read waits for the ops before it).
 */
#ifndef DBK_COMPRESS_DEVICE_H
#define DBK_COMPRESS_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "dist/compress.h"

typedef struct dbk_device_compressor dbk_device_compressor;

/* Whether the method runs on the device (all but none, which is an allreduce). */
bool       dbk_device_compress_supported(const dbk_compress_spec *spec);
/* Device buffers for host's vector and segments (host must outlive it; random-k draws with
 * it) and for the payloads of `ranks` ranks. DBK_ERR_INVALID_ARG for a method not supported
 * on the device. */
dbk_status dbk_device_compressor_create(dbk_backend *be, dbk_compressor *host, int ranks,
                                        dbk_device_compressor **out);
void       dbk_device_compressor_destroy(dbk_device_compressor *dc);   /* accepts NULL */

/* The packed vector (n f32 on the device): fill it with the gradient before encode; after
 * decode_mean it holds the mean over the ranks. */
dbk_tensor dbk_device_compressor_vector(const dbk_device_compressor *dc);
/* Encodes the vector (plus the residual with error feedback, the residual then updated)
 * into payload (the host compressor's max_payload bytes), random draws from seed (as
 * dbk_compressor_encode); *bytes gets its size. The vector is left holding what was encoded. */
dbk_status dbk_device_compressor_encode(dbk_device_compressor *dc, uint64_t seed, uint8_t *payload, size_t *bytes);
/* vector = the mean of the ranks' payloads (rank r's counts[r] bytes at recv + displs[r]),
 * decoded in rank order. DBK_ERR_FORMAT (nothing decoded) when a payload does not fit. */
dbk_status dbk_device_compressor_decode_mean(dbk_device_compressor *dc, const uint8_t *recv, const int *counts,
                                             const int *displs);
/* The error-feedback residual (n floats) to or from the host (checkpoints). */
dbk_status dbk_device_compressor_read_residual(const dbk_device_compressor *dc, float *out);
dbk_status dbk_device_compressor_write_residual(dbk_device_compressor *dc, const float *in);

#endif
