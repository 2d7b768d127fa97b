/*
 * loss.c — softmax cross-entropy with label smoothing (forward and backward) and top-1
 * accuracy counting for the CPU reference backend.
 *
 * Semantics: torch.nn.CrossEntropyLoss(label_smoothing=eps, reduction='sum'),
 * https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
 *   target_k = (1 - eps) * [k == label] + eps / K
 *   loss_i   = -sum_k target_k * log softmax(z_i)_k = lse_i - sum_k target_k * z_ik
 *              where lse_i = log sum_k exp(z_ik); the second form needs no log of a
 *              probability, so a row with a tiny probability cannot produce -inf.
 *   dlogits  = grad_scale * (probs - target)
 *
 * Layout: logits, probs, dlogits (N,K) row-major (one sample per row, K classes); labels i32
 * (N); loss_sum and correct are single f32 accumulators that the op ADDS to (ops.h), so a
 * whole epoch accumulates on the device and is read back once.
 *
 * Numerics: the softmax subtracts the row maximum before exp and sums in double (the
 * log-sum-exp trick). The batch loss is summed in double in row order (deterministic,
 * independent of thread count), then added once to the f32 accumulator.
 *
 * Labels outside [0, K): the device cannot report an error mid-step without a read-back, and
 * clamping would train on a wrong class silently. Such a row is therefore left out: it adds
 * nothing to loss_sum, its dlogits row is zero (no gradient), and accuracy counts it as
 * wrong. probs is still the softmax of the row. Data loaders validate labels on the host,
 * so this is a guard against corruption, not a feature.
 *
 * Non-finite logits: accuracy counts a row with any NaN or infinite logit as wrong, so a model
 * whose logits overflow or turn NaN can never score. A NaN or +inf logit also makes the row's
 * loss NaN or infinite, which the trainer and `daybreak eval`/`infer` report as a divergence; a
 * -inf logit alone may leave the loss finite (as in PyTorch), and the row is still wrong.
 */
#include <math.h>

#include "backends/cpu/cpu_internal.h"

static bool label_ok(int32_t label, int64_t k) { return label >= 0 && (int64_t)label < k; }

dbk_status dbk_cpu_softmax_xent_fwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = op->src[0].shape[0], k = op->src[0].shape[1];
    const float *z = dbk_cpu_f32(&op->src[0]);          /* (N, K) logits */
    const int32_t *labels = dbk_cpu_i32(&op->src[1]);   /* (N) */
    float *probs = dbk_cpu_f32(&op->dst[0]);            /* (N, K) */
    float *loss_sum = dbk_cpu_f32(&op->dst[1]);         /* (1) accumulated */
    const double eps = (double)op->p.xent.label_smoothing;

    double total = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const float *zi = z + i * k;
        float *pi = probs + i * k;
        if (k == 0) continue;
        float zmax = zi[0];
        for (int64_t j = 1; j < k; j++)
            if (zi[j] > zmax) zmax = zi[j];
        double sum = 0.0, zsum = 0.0;
        for (int64_t j = 0; j < k; j++) {
            sum += exp((double)zi[j] - (double)zmax);
            zsum += (double)zi[j];
        }
        for (int64_t j = 0; j < k; j++) pi[j] = (float)(exp((double)zi[j] - (double)zmax) / sum);
        if (!label_ok(labels[i], k)) continue;
        const double lse = (double)zmax + log(sum);
        /* sum_k target_k z_k = (1 - eps) z_label + eps/K sum_k z_k */
        total += lse - ((1.0 - eps) * (double)zi[labels[i]] + eps / (double)k * zsum);
    }
    *loss_sum = (float)((double)*loss_sum + total);
    return DBK_OK;
}

dbk_status dbk_cpu_softmax_xent_bwd(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = op->src[0].shape[0], k = op->src[0].shape[1];
    const float *probs = dbk_cpu_f32(&op->src[0]);      /* (N, K) */
    const int32_t *labels = dbk_cpu_i32(&op->src[1]);   /* (N) */
    float *dz = dbk_cpu_f32(&op->dst[0]);               /* (N, K) */
    const float eps = op->p.xent.label_smoothing, scale = op->p.xent.grad_scale;
    const float off = k > 0 ? eps / (float)k : 0.0f;    /* target of every wrong class */

    for (int64_t i = 0; i < n; i++) {
        const float *pi = probs + i * k;
        float *di = dz + i * k;
        const bool ok = label_ok(labels[i], k);
        for (int64_t j = 0; j < k; j++) {
            const float target = j == (int64_t)labels[i] ? 1.0f - eps + off : off;
            di[j] = ok ? scale * (pi[j] - target) : 0.0f;
        }
    }
    return DBK_OK;
}

dbk_status dbk_cpu_accuracy(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const int64_t n = op->src[0].shape[0], k = op->src[0].shape[1];
    const float *z = dbk_cpu_f32(&op->src[0]);          /* (N, K) logits */
    const int32_t *labels = dbk_cpu_i32(&op->src[1]);   /* (N) */
    float *correct = dbk_cpu_f32(&op->dst[0]);          /* (1) accumulated */
    const int64_t top = op->p.accuracy.k > 1 ? op->p.accuracy.k : 1;

    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) {
        if (k == 0 || !label_ok(labels[i], k)) continue;
        const float *zi = z + i * k;
        const int64_t y = labels[i];
        /* A row with a NaN or infinite logit is wrong whatever its rank: NaN compares false
         * with everything, so the rank below would put a NaN label first. */
        bool finite = true;
        for (int64_t j = 0; j < k; j++) finite = finite && isfinite(zi[j]);
        if (!finite) continue;
        /* the label's place when logits are ordered by value, ties by index (op_list.h) */
        int64_t rank = 0;
        for (int64_t j = 0; j < k; j++) rank += zi[j] > zi[y] || (j < y && zi[j] == zi[y]);
        if (rank < top) count++;
    }
    *correct += (float)count;
    return DBK_OK;
}
