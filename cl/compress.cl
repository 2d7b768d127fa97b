/*
 * compress.cl — the gradient-compression ops of data-parallel training, as the CPU reference
 * (src/backends/cpu/compress.c; contracts in op_list.h):
 *
 * SPARSE_SELECT runs as a chain of kernels over the segment table seg (S,3) {offset, count,
 * k} and the chunk table ch (C,3) {offset, count, segment}, with its state in work (258S +
 * 2C ints: per segment {threshold bits, ties}, per chunk {first pair, ties left}, then S x 256
 * histogram bins):
 *   select_init     per segment: top-k: prefix 0 and k still to find; threshold: the bits of
 *                   V and unlimited ties; histograms zeroed
 *   select_hist     per chunk (top-k, 4 passes, shift 24, 16, 8, 0): counts the magnitudes
 *                   whose higher bits equal the prefix found so far, by their next 8 bits
 *   select_pick     per segment: the bin holding the k-th largest, from the top; adds it to
 *                   the prefix and keeps the rank within it; clears the bins. After the last
 *                   pass the prefix is the k-th largest magnitude t and the rank is the
 *                   number of elements equal to t to take (a radix select).
 *   select_count    per chunk: elements above t and equal to t, into the chunk's two ints
 *   select_scan     one work-item: in chunk order, each chunk's first pair and the ties left
 *                   in its segment at its start; the total into count
 *   select_scatter  per chunk: its pairs, in index order
 * Magnitudes are the bits of |x| (as_uint(x) & 0x7fffffff). Every chunk is walked by one
 * work-item in index order, so the output order and the ties taken are the CPU's.
 *
 * SPARSE_ADD: acc[index] += alpha * value per pair, one work-item per pair (indices distinct
 * within a call); contraction off, so the multiply and the add round as the CPU's do.
 */
#pragma OPENCL FP_CONTRACT OFF

#define SEL_WORK_CHUNK(S, c) (2 * (S) + 2 * (c))
#define SEL_WORK_HIST(S, C, s) (2 * (S) + 2 * (C) + 256 * (s))

__kernel void select_init(__global const int *seg, const uint seg_off, __global int *work, const uint w_off,
                          const int S, const int C, const int topk, const uint thr_bits) {
    const int s = get_global_id(0);
    if (s >= S) return;
    work[w_off + 2 * s] = topk ? 0 : (int)thr_bits;
    work[w_off + 2 * s + 1] = topk ? seg[seg_off + 3 * s + 2] : INT_MAX;
    __global int *h = work + w_off + SEL_WORK_HIST(S, C, s);
    for (int b = 0; b < 256; b++) h[b] = 0;
}

__kernel void select_hist(__global const float *x, const uint x_off, __global const int *ch, const uint ch_off,
                          __global int *work, const uint w_off, const int S, const int C, const int shift) {
    const int c = get_global_id(0);
    if (c >= C) return;
    const int off = ch[ch_off + 3 * c], cnt = ch[ch_off + 3 * c + 1], s = ch[ch_off + 3 * c + 2];
    const uint prefix = (uint)work[w_off + 2 * s];
    volatile __global int *h = work + w_off + SEL_WORK_HIST(S, C, s);
    for (int i = 0; i < cnt; i++) {
        const uint m = as_uint(x[x_off + off + i]) & 0x7fffffffu;
        if (shift == 24 || (m >> (shift + 8)) == (prefix >> (shift + 8))) atomic_inc(&h[(m >> shift) & 255u]);
    }
}

__kernel void select_pick(__global int *work, const uint w_off, const int S, const int C, const int shift) {
    const int s = get_global_id(0);
    if (s >= S) return;
    __global int *h = work + w_off + SEL_WORK_HIST(S, C, s);
    uint prefix = (uint)work[w_off + 2 * s];
    int rank = work[w_off + 2 * s + 1], above = 0, found = 0;
    for (int b = 255; b >= 0; b--) {
        if (!found && above + h[b] >= rank) {
            prefix |= (uint)b << shift;
            rank -= above;
            found = 1;
        }
        above += h[b];
        h[b] = 0;
    }
    work[w_off + 2 * s] = (int)prefix;
    work[w_off + 2 * s + 1] = rank;
}

__kernel void select_count(__global const float *x, const uint x_off, __global const int *ch, const uint ch_off,
                           __global int *work, const uint w_off, const int S, const int C) {
    const int c = get_global_id(0);
    if (c >= C) return;
    const int off = ch[ch_off + 3 * c], cnt = ch[ch_off + 3 * c + 1], s = ch[ch_off + 3 * c + 2];
    const uint t = (uint)work[w_off + 2 * s];
    int above = 0, equal = 0;
    for (int i = 0; i < cnt; i++) {
        const uint m = as_uint(x[x_off + off + i]) & 0x7fffffffu;
        above += m > t;
        equal += m == t;
    }
    work[w_off + SEL_WORK_CHUNK(S, c)] = above;
    work[w_off + SEL_WORK_CHUNK(S, c) + 1] = equal;
}

__kernel void select_scan(__global const int *ch, const uint ch_off, __global int *work, const uint w_off,
                          __global int *count, const uint count_off, const int S, const int C) {
    if (get_global_id(0) != 0) return;
    int total = 0, left = 0, prev = -1;
    for (int c = 0; c < C; c++) {
        const int s = ch[ch_off + 3 * c + 2];
        if (s != prev) left = work[w_off + 2 * s + 1];
        prev = s;
        const int above = work[w_off + SEL_WORK_CHUNK(S, c)], equal = work[w_off + SEL_WORK_CHUNK(S, c) + 1];
        const int ties = equal < left ? equal : left;
        work[w_off + SEL_WORK_CHUNK(S, c)] = total;
        work[w_off + SEL_WORK_CHUNK(S, c) + 1] = left;
        total += above + ties;
        left -= ties;
    }
    count[count_off] = total;
}

__kernel void select_scatter(__global const float *x, const uint x_off, __global const int *ch, const uint ch_off,
                             __global const int *work, const uint w_off, __global int *pairs, const uint p_off,
                             const int cap, const int S, const int C) {
    const int c = get_global_id(0);
    if (c >= C) return;
    const int off = ch[ch_off + 3 * c], cnt = ch[ch_off + 3 * c + 1], s = ch[ch_off + 3 * c + 2];
    const uint t = (uint)work[w_off + 2 * s];
    int out = work[w_off + SEL_WORK_CHUNK(S, c)], left = work[w_off + SEL_WORK_CHUNK(S, c) + 1];
    for (int i = 0; i < cnt; i++) {
        const uint bits = as_uint(x[x_off + off + i]), m = bits & 0x7fffffffu;
        if (!(m > t || (m == t && left > 0))) continue;
        if (m == t) left--;
        if (out < cap) {
            pairs[p_off + 2 * out] = off + i;
            pairs[p_off + 2 * out + 1] = (int)bits;
        }
        out++;
    }
}

__kernel void sparse_add(__global const int *pairs, const uint p_off, __global float *acc, const uint a_off,
                         const float alpha, const int k, const uint n) {
    const int j = get_global_id(0);
    if (j >= k) return;
    const uint i = (uint)pairs[p_off + 2 * j];
    if (i >= n) return;
    const float v = alpha * as_float(pairs[p_off + 2 * j + 1]);
    acc[a_off + i] = acc[a_off + i] + v;
}

/* SPARSE_SCATTER: y[index] = the constant (use_constant != 0) or the pair's value, for every pair
 * j of the payload; an index outside y writes nothing. global (k) */
__kernel void sparse_scatter(__global const int *pairs, const uint p_off, __global float *y, const uint y_off,
                             const int use_constant, const float value, const int k, const uint n) {
    const int j = get_global_id(0);
    if (j >= k) return;
    const uint i = (uint)pairs[p_off + 2 * j];
    if (i >= n) return;
    y[y_off + i] = use_constant ? value : as_float(pairs[p_off + 2 * j + 1]);
}

/* SPARSE_GATHER: pair j = {indices[j], x[indices[j]] * the scale of its segment}, the segment
 * found by a binary search of the first pairs. global (k) */
__kernel void sparse_gather(__global const float *x, const uint x_off, __global const int *indices, const uint i_off,
                            __global const int *scales, const uint s_off, __global int *pairs, const uint p_off,
                            const int k, const int S) {
    const int j = get_global_id(0);
    if (j >= k) return;
    int lo = 0, hi = S - 1;
    while (lo < hi) { /* the last segment whose first pair is <= j */
        const int mid = (lo + hi + 1) / 2;
        if (scales[s_off + 2 * mid] <= j) lo = mid;
        else hi = mid - 1;
    }
    const int i = indices[i_off + j];
    pairs[p_off + 2 * j] = i;
    pairs[p_off + 2 * j + 1] = as_int(x[x_off + i] * as_float(scales[s_off + 2 * lo + 1]));
}

/* QUANT_ENCODE and QUANT_ADD: TernGrad's and QSGD's coding as src/core/quant.h (keep in sync;
 * levels 0 = TernGrad), with dbk_hash_u32 of augment.cl. The payload is written and read as
 * little-endian words; a segment's bytes start anywhere in a word.
 *   quant_partial  per chunk: its max |x| (TernGrad) or its sum of squares in index order
 *   quant_scale    per segment: its chunks' max or sum in order (sqrt for QSGD), into work[C + s]
 *   quant_pack     per payload word: per segment its bytes fall in, the scale's bytes and
 *                  the codes that touch them (a code across two words is computed by both)
 *   quant_add      per element: its code, decoded and added (zero codes add nothing) */
static int quant_code_bits(const int levels) {
    if (levels == 0) return 2;
    int b = 0;
    while ((1 << b) < levels + 1) b++;
    return 1 + b;
}

static uint quant_code(const float x, const float scale, const uint seed_lo, const uint seed_hi, const uint i,
                       const int levels) {
    const float u = (float)(dbk_hash_u32(seed_lo, seed_hi, i, 0x71756e74u) >> 8) * (1.0f / 16777216.0f);
    const float m = fabs(x);
    const uint sign = x < 0.0f ? 1u : 0u;
    if (levels == 0) return scale > 0.0f && u < m / scale ? 1u + sign : 0u;
    if (!(scale > 0.0f)) return sign;
    const float q = m / scale * (float)levels;
    const float t = q + u;
    uint level = (uint)floor(t);
    if (level > (uint)levels) level = (uint)levels;
    return sign | level << 1;
}

__kernel void quant_partial(__global const float *x, const uint x_off, __global const int *ch, const uint ch_off,
                            __global float *work, const uint w_off, const int C, const int levels) {
    const int c = get_global_id(0);
    if (c >= C) return;
    const int off = ch[ch_off + 3 * c], cnt = ch[ch_off + 3 * c + 1];
    float p = 0.0f;
    for (int i = 0; i < cnt; i++) {
        const float v = x[x_off + off + i];
        if (levels == 0) {
            p = fmax(p, fabs(v));
        } else {
            const float sq = v * v;
            p = p + sq;
        }
    }
    work[w_off + c] = p;
}

__kernel void quant_scale(__global const int *ch, const uint ch_off, __global float *work, const uint w_off,
                          const int S, const int C, const int levels) {
    const int s = get_global_id(0);
    if (s >= S) return;
    int lo = 0, hi = C;
    while (lo < hi) { /* the first chunk of segment s */
        const int mid = (lo + hi) / 2;
        if (ch[ch_off + 3 * mid + 2] < s) lo = mid + 1;
        else hi = mid;
    }
    float a = 0.0f;
    for (int c = lo; c < C && ch[ch_off + 3 * c + 2] == s; c++)
        a = levels == 0 ? fmax(a, work[w_off + c]) : a + work[w_off + c];
    work[w_off + C + s] = levels == 0 ? a : sqrt(a);
}

/* Word w of the payload, whose bytes end at `bytes`: per segment the word's bytes fall in,
 * the scale's bytes, then each code that touches the word's code bits, computed once. */
__kernel void quant_pack(__global const float *x, const uint x_off, __global const int *seg, const uint seg_off,
                         __global const float *work, const uint w_off, __global uint *payload, const uint p_off,
                         const int S, const int C, const int levels, const uint seed_lo, const uint seed_hi,
                         const uint words) {
    const uint w = get_global_id(0);
    if (w >= words) return;
    const uint bits = (uint)quant_code_bits(levels);
    const uint last = (uint)seg[seg_off + 3 * (S - 1) + 1];
    const uint bytes = (uint)seg[seg_off + 3 * (S - 1) + 2] + 4 + (last * bits + 7) / 8;
    uint b = 4 * w;
    if (b >= bytes) return;
    const uint end = min(b + 4, bytes);
    int lo = 0, hi = S - 1;
    while (lo < hi) { /* the last segment starting at or before byte b */
        const int mid = (lo + hi + 1) / 2;
        if ((uint)seg[seg_off + 3 * mid + 2] <= b) lo = mid;
        else hi = mid - 1;
    }
    uint word = 0;
    for (int s = lo; b < end; s++) {
        const uint off = (uint)seg[seg_off + 3 * s], count = (uint)seg[seg_off + 3 * s + 1];
        const uint start = (uint)seg[seg_off + 3 * s + 2];
        const uint stop = min(end, s + 1 < S ? (uint)seg[seg_off + 3 * (s + 1) + 2] : bytes);
        const float scale = work[w_off + C + s];
        for (; b < stop && b < start + 4; b++)
            word |= (as_uint(scale) >> (8 * (b - start)) & 0xffu) << (8 * (b - 4 * w));
        if (b < stop) { /* code bits [bit0, bit1) of the segment, at bit 8 (b - 4w) of the word */
            const uint bit0 = (b - start - 4) * 8, bit1 = (stop - start - 4) * 8;
            const uint e_end = min((bit1 - 1) / bits + 1, count);
            for (uint e = bit0 / bits; e < e_end; e++) {
                const uint code = quant_code(x[x_off + off + e], scale, seed_lo, seed_hi, off + e, levels);
                const int rel = (int)(e * bits) - (int)bit0 + 8 * (int)(b - 4 * w);
                word |= rel >= 0 ? code << rel : code >> -rel;
            }
            b = stop;
        }
    }
    payload[p_off + w] = word;
}

/* The bits at bit position `bit` of the payload's words. */
static uint quant_bits(__global const uint *payload, const uint p_off, const uint bit, const uint bits) {
    const uint wi = bit >> 5, sh = bit & 31u;
    uint v = payload[p_off + wi] >> sh;
    if (sh + bits > 32u) v |= payload[p_off + wi + 1] << (32u - sh);
    return bits == 32u ? v : v & ((1u << bits) - 1u);
}

__kernel void quant_add(__global const uint *payload, const uint p_off, __global const int *seg, const uint seg_off,
                        __global float *acc, const uint a_off, const int S, const uint n, const int levels,
                        const float alpha) {
    const uint i = get_global_id(0);
    if (i >= n) return;
    int lo = 0, hi = S - 1;
    while (lo < hi) { /* the last segment starting at or before element i */
        const int mid = (lo + hi + 1) / 2;
        if ((uint)seg[seg_off + 3 * mid] <= i) lo = mid;
        else hi = mid - 1;
    }
    const uint start = (uint)seg[seg_off + 3 * lo + 2], bits = (uint)quant_code_bits(levels);
    const float scale = as_float(quant_bits(payload, p_off, 8 * start, 32u));
    const uint code = quant_bits(payload, p_off, 8 * (start + 4) + (i - (uint)seg[seg_off + 3 * lo]) * bits, bits);
    float v;
    if (levels == 0) {
        if (code != 1u && code != 2u) return;
        v = code == 1u ? scale : -scale;
    } else {
        const uint level = code >> 1;
        if (level == 0u || level > (uint)levels) return;
        const float m = scale * (float)level / (float)levels;
        v = code & 1u ? -m : m;
    }
    const float add = alpha * v;
    acc[a_off + i] = acc[a_off + i] + add;
}
