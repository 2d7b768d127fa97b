#version 450
/*
 * sparse_select.comp — DBK_OP_SPARSE_SELECT, one kernel of the chain of cl/compress.cl per
 * value of the specialization constant PHASE (the same names and steps, described there):
 * 0 init (per segment), 1 hist (per chunk, one pass of the radix select at pc.shift), 2 pick
 * (per segment), 3 count (per chunk), 4 scan (one invocation), 5 scatter (per chunk).
 * Semantics: op_list.h and src/backends/cpu/compress.c. Magnitudes are the bits of |x|.
 */
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint PHASE = 0;

layout(push_constant) uniform Push {
    int S, C, shift, topk;
    uint thr_bits;
    int cap;
    uint r0, r1, r2, r3, r4, r5;   /* element offsets of bindings 0..5 */
} pc;

layout(binding = 0) readonly buffer BufX { float x[]; };       /* (n) */
layout(binding = 1) readonly buffer BufSeg { int seg[]; };     /* (S,3) {offset, count, k} */
layout(binding = 2) readonly buffer BufCh { int ch[]; };       /* (C,3) {offset, count, segment} */
layout(binding = 3) writeonly buffer BufP { int pairs[]; };    /* (2P) {index, value bits} */
layout(binding = 4) writeonly buffer BufN { int count[]; };    /* (1) */
layout(binding = 5) coherent buffer BufW { int work[]; };      /* (258S + 2C) */

uint chunk_at(int c) { return pc.r5 + uint(2 * pc.S + 2 * c); }
uint hist_at(int s) { return pc.r5 + uint(2 * pc.S + 2 * pc.C + 256 * s); }
uint magnitude(int e) { return floatBitsToUint(x[pc.r0 + uint(e)]) & 0x7fffffffu; }

void main() {
    const int id = int(gl_GlobalInvocationID.x);
    if (PHASE == 0u) {                                   /* init */
        if (id >= pc.S) return;
        work[pc.r5 + uint(2 * id)] = pc.topk != 0 ? 0 : int(pc.thr_bits);
        work[pc.r5 + uint(2 * id + 1)] = pc.topk != 0 ? seg[pc.r1 + uint(3 * id + 2)] : 0x7fffffff;
        for (uint b = 0u; b < 256u; b++) work[hist_at(id) + b] = 0;
    } else if (PHASE == 1u) {                            /* hist */
        if (id >= pc.C) return;
        const int off = ch[pc.r2 + uint(3 * id)], cnt = ch[pc.r2 + uint(3 * id + 1)], s = ch[pc.r2 + uint(3 * id + 2)];
        const uint prefix = uint(work[pc.r5 + uint(2 * s)]);
        for (int i = 0; i < cnt; i++) {
            const uint m = magnitude(off + i);
            if (pc.shift == 24 || (m >> uint(pc.shift + 8)) == (prefix >> uint(pc.shift + 8)))
                atomicAdd(work[hist_at(s) + ((m >> uint(pc.shift)) & 255u)], 1);
        }
    } else if (PHASE == 2u) {                            /* pick */
        if (id >= pc.S) return;
        uint prefix = uint(work[pc.r5 + uint(2 * id)]);
        int rank = work[pc.r5 + uint(2 * id + 1)], above = 0;
        bool found = false;
        for (int b = 255; b >= 0; b--) {
            const int h = work[hist_at(id) + uint(b)];
            if (!found && above + h >= rank) {
                prefix |= uint(b) << uint(pc.shift);
                rank -= above;
                found = true;
            }
            above += h;
            work[hist_at(id) + uint(b)] = 0;
        }
        work[pc.r5 + uint(2 * id)] = int(prefix);
        work[pc.r5 + uint(2 * id + 1)] = rank;
    } else if (PHASE == 3u) {                            /* count */
        if (id >= pc.C) return;
        const int off = ch[pc.r2 + uint(3 * id)], cnt = ch[pc.r2 + uint(3 * id + 1)], s = ch[pc.r2 + uint(3 * id + 2)];
        const uint t = uint(work[pc.r5 + uint(2 * s)]);
        int above = 0, equal = 0;
        for (int i = 0; i < cnt; i++) {
            const uint m = magnitude(off + i);
            above += m > t ? 1 : 0;
            equal += m == t ? 1 : 0;
        }
        work[chunk_at(id)] = above;
        work[chunk_at(id) + 1u] = equal;
    } else if (PHASE == 4u) {                            /* scan */
        if (id != 0) return;
        int total = 0, left = 0, prev = -1;
        for (int c = 0; c < pc.C; c++) {
            const int s = ch[pc.r2 + uint(3 * c + 2)];
            if (s != prev) left = work[pc.r5 + uint(2 * s + 1)];
            prev = s;
            const int above = work[chunk_at(c)], equal = work[chunk_at(c) + 1u];
            const int ties = min(equal, left);
            work[chunk_at(c)] = total;
            work[chunk_at(c) + 1u] = left;
            total += above + ties;
            left -= ties;
        }
        count[pc.r4] = total;
    } else {                                             /* scatter */
        if (id >= pc.C) return;
        const int off = ch[pc.r2 + uint(3 * id)], cnt = ch[pc.r2 + uint(3 * id + 1)], s = ch[pc.r2 + uint(3 * id + 2)];
        const uint t = uint(work[pc.r5 + uint(2 * s)]);
        int next = work[chunk_at(id)], left = work[chunk_at(id) + 1u];
        for (int i = 0; i < cnt; i++) {
            const uint bits = floatBitsToUint(x[pc.r0 + uint(off + i)]), m = bits & 0x7fffffffu;
            if (!(m > t || (m == t && left > 0))) continue;
            if (m == t) left--;
            if (next < pc.cap) {
                pairs[pc.r3 + uint(2 * next)] = off + i;
                pairs[pc.r3 + uint(2 * next + 1)] = int(bits);
            }
            next++;
        }
    }
}
