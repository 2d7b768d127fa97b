/*
 * augment.c — batch assembly from the device-resident u8 dataset for the CPU reference
 * backend: index lookup, reflect pad + random crop, random or alternating horizontal flip,
 * normalisation and cutout, or a fixed test-time view (DBK_OP_AUGMENT in op_list.h, DESIGN.md
 * decision 4).
 *
 * For batch row i, with {first, seed, epoch, run_seed} = state and row = first + i:
 *   j         = indices[row] (or row itself when there is no index tensor)
 *   label[i]  = labels[j]
 *   out[i]    = images[j] (3,H,W), and in training mode:
 *     1. reflect-pad by `pad` on every side: numpy.pad(mode='reflect'), torch.nn.ReflectionPad2d
 *        (https://pytorch.org/docs/stable/generated/torch.nn.ReflectionPad2d.html): the edge
 *        pixel is not repeated, padded index -1 reads 1, index H reads H-2;
 *     2. crop an H x W window at (crop_y, crop_x) in [0, 2*pad]^2 of the padded image
 *        (torchvision RandomCrop(32, padding=4, padding_mode='reflect'));
 *     3. flip horizontally when params.flip and the row's coin says so, or with
 *        params.flip_alternating when the image's coin for the run XOR (epoch & 1) is 1
 *        (airbench94: a random orientation at epoch 0, every image mirrored on odd epochs);
 *     4. normalise every pixel: v * scale[c] + shift[c] with dbk_augment_affine's scale and
 *        shift, i.e. (v / 255 - mean[c]) / std[c] within an ulp (always, also in evaluation):
 *        a multiply and an add round the same on every device, a division does not;
 *     5. with params.brightness or contrast (cifar10-speedrun's batch_color_jitter): every value
 *        of the image becomes (x + b) * c, one b and c per row (dbk_augment_jitter);
 *     6. cutout: zero a cutout x cutout square with top-left (cut_y, cut_x) in output
 *        coordinates, after normalisation (so it equals the dataset mean).
 * Random choices come from dbk_augment_choices (below): a stateless hash of (seed, row,
 * purpose), so every backend draws the same numbers with no shared RNG state, and the same
 * state always gives the same bytes. The alternating flip's coin is keyed by the dataset
 * index j and run_seed instead (dbk_augment_base_flip), so it follows the image, not the row.
 * In evaluation mode (params.train false) no draws are made: the image is read through the
 * fixed view (view_dy, view_dx, view_flip), (0, 0, false) being the image itself, and
 * normalised.
 *
 * Combined, output pixel (y, x) of channel c reads source pixel
 *   (reflect(y + dy, H), reflect(xs + dx, W)),  xs = flip ? W-1-x : x,
 * with (dy, dx) = (crop_y - pad, crop_x - pad) in training and (view_dy, view_dx) in
 * evaluation.
 *
 * Layout: images u8 (M,3,H,W), labels u8 (M), indices i32 (L), state i32 (4);
 * out x f32 (N,3,H,W), out labels i32 (N).
 *
 * Out-of-range rows (row outside [0, L) or j outside [0, M)) are checked for the whole batch
 * before anything is written and reported as DBK_ERR_INVALID_ARG: the CPU backend sees the
 * data, so it reports the host's bad index instead of reading outside the dataset.
 */
#include "backends/cpu/cpu_internal.h"
#include "core/rng.h"

/* Maps a 32-bit hash to [0, n) by multiply-shift (Lemire): unbiased enough for n << 2^32,
 * and pure 32x32->64 integer arithmetic that OpenCL C and GLSL reproduce exactly. */
static int hash_below(uint32_t h, int n) { return (int)(((uint64_t)h * (uint64_t)n) >> 32); }

void dbk_augment_choices(uint32_t seed, uint32_t row, int pad, int cutout, int H, int W, int *crop_y, int *crop_x,
                         int *flip, int *cut_y, int *cut_x) {
    *crop_y = pad > 0 ? hash_below(dbk_hash_u32(seed, row, 0, 0), 2 * pad + 1) : 0;
    *crop_x = pad > 0 ? hash_below(dbk_hash_u32(seed, row, 1, 0), 2 * pad + 1) : 0;
    *flip = (int)(dbk_hash_u32(seed, row, 2, 0) >> 31);
    *cut_y = cutout > 0 ? hash_below(dbk_hash_u32(seed, row, 3, 0), H - cutout + 1) : 0;
    *cut_x = cutout > 0 ? hash_below(dbk_hash_u32(seed, row, 4, 0), W - cutout + 1) : 0;
}

int dbk_augment_base_flip(uint32_t run_seed, uint32_t j) { return (int)(dbk_hash_u32(run_seed, j, 5, 0) & 1u); }

/* A uniform draw in [0, 1) with 24 bits, exact in fp32 on every backend. */
static float hash_unit(uint32_t h) { return (float)(h >> 8) * 0x1p-24f; }

void dbk_augment_jitter(uint32_t seed, uint32_t row, float brightness, float contrast, float *b, float *c) {
    *b = (2.0f * hash_unit(dbk_hash_u32(seed, row, 6, 0)) - 1.0f) * brightness;
    *c = (2.0f * hash_unit(dbk_hash_u32(seed, row, 7, 0)) - 1.0f) * contrast + 1.0f;
}

/* Reflects an index that overshoots [0, n) by at most n-1 (pad and |view shift| < H, W are
 * validated). */
static int64_t reflect(int64_t u, int64_t n) {
    if (u < 0) u = -u;
    if (u >= n) u = 2 * (n - 1) - u;
    return u;
}

dbk_status dbk_cpu_augment(dbk_backend *be, const dbk_op_desc *op) {
    (void)be;
    const dbk_augment_params *p = &op->p.augment;
    const uint8_t *images = dbk_cpu_u8(&op->src[0]);                        /* (M, 3, H, W) */
    const uint8_t *labels = dbk_cpu_u8(&op->src[1]);                        /* (M) */
    const int32_t *indices = op->src[2].ndim ? dbk_cpu_i32(&op->src[2]) : NULL;   /* (L) */
    const int32_t *state = dbk_cpu_i32(&op->src[3]);                /* (4) {first, seed, epoch, run_seed} */
    float *out = dbk_cpu_f32(&op->dst[0]);                                  /* (N, 3, H, W) */
    int32_t *out_labels = dbk_cpu_i32(&op->dst[1]);                         /* (N) */
    const int64_t m = op->src[0].shape[0], H = op->src[0].shape[2], W = op->src[0].shape[3];
    const int64_t n = op->dst[0].shape[0], L = indices ? op->src[2].shape[0] : m;
    const int64_t first = state[0];
    const uint32_t seed = (uint32_t)state[1], epoch_odd = (uint32_t)state[2] & 1u, run_seed = (uint32_t)state[3];

    /* Validate every row first, so a bad batch leaves the outputs untouched. */
    for (int64_t i = 0; i < n; i++) {
        const int64_t row = first + i;
        if (row < 0 || row >= L)
            return dbk_set_error(DBK_ERR_INVALID_ARG, "augment: batch row %lld reads %s %lld, outside [0, %lld)",
                                 (long long)i, indices ? "index" : "image", (long long)row, (long long)L);
        const int64_t j = indices ? indices[row] : row;
        if (j < 0 || j >= m)
            return dbk_set_error(DBK_ERR_INVALID_ARG, "augment: indices[%lld] = %lld is outside the dataset [0, %lld)",
                                 (long long)row, (long long)j, (long long)m);
    }

    float scale[3], shift[3];
    dbk_augment_affine(p, scale, shift);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        const int64_t row = first + i;
        const int64_t j = indices ? indices[row] : row;
        out_labels[i] = labels[j];

        /* Evaluation reads the fixed view; training replaces it with the row's draws. */
        int64_t dy0 = p->view_dy, dx0 = p->view_dx;
        int flip = p->view_flip, cut_y = 0, cut_x = 0, cut = 0;
        float jb = 0.0f, jc = 1.0f;
        const bool jitter = p->train && (p->brightness > 0.0f || p->contrast > 0.0f);
        if (jitter) dbk_augment_jitter(seed, (uint32_t)row, p->brightness, p->contrast, &jb, &jc);
        if (p->train) {
            int crop_y, crop_x;
            dbk_augment_choices(seed, (uint32_t)row, p->pad, p->cutout, (int)H, (int)W, &crop_y, &crop_x, &flip,
                                &cut_y, &cut_x);
            if (p->flip_alternating) flip = dbk_augment_base_flip(run_seed, (uint32_t)j) ^ (int)epoch_odd;
            else flip = flip && p->flip;
            cut = p->cutout;
            dy0 = crop_y - p->pad;
            dx0 = crop_x - p->pad;
        }

        for (int64_t c = 0; c < 3; c++) {
            const uint8_t *src = images + (j * 3 + c) * H * W;   /* (H, W) */
            float *dst = out + (i * 3 + c) * H * W;               /* (H, W) */
            for (int64_t y = 0; y < H; y++) {
                const uint8_t *srow = src + reflect(y + dy0, H) * W;
                for (int64_t x = 0; x < W; x++) {
                    const int64_t xs = flip ? W - 1 - x : x;
                    const float v = (float)srow[reflect(xs + dx0, W)];
                    const float scaled = v * scale[c];   /* two roundings, as every device's */
                    const float o = scaled + shift[c];
                    dst[y * W + x] = jitter ? (o + jb) * jc : o;
                }
            }
            for (int64_t y = cut_y; y < cut_y + cut; y++)
                for (int64_t x = cut_x; x < cut_x + cut; x++) dst[y * W + x] = 0.0f;
        }
    }
    return DBK_OK;
}
